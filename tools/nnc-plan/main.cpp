// nnc-plan FILE [--offsets] [--align N]
//
// Plans a lifetime list (one tensor per line: "id bytes first_step
// last_step", live from first_step to last_step inclusive; '#' starts a
// comment line) with the NNC planner, greedy by size and the better of the
// two, and prints per planner the arena, the lower bound, their ratio and
// the independent checker's verdict. Exit status: 0 when every plan checks,
// 1 when one does not, 2 on bad usage or input.
#include "symbolic/alloc/planner.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: nnc-plan FILE [--offsets] [--align N]\n"
               "  FILE       lifetime list, one tensor per line: id bytes first_step last_step\n"
               "             (inclusive steps; lines starting with # are comments; - reads stdin)\n"
               "  --offsets  also print each tensor's offset under every planner\n"
               "  --align N  align every tensor to N bytes (a power of two; default 1)\n");
}

std::string ratio(std::uint64_t arena, std::uint64_t bound) {
  char buf[64];
  if (bound == 0) return arena == 0 ? "1.000x" : "infx";
  std::snprintf(buf, sizeof buf, "%.3fx", static_cast<double>(arena) / static_cast<double>(bound));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nnc::alloc;
  std::string file;
  bool offsets = false;
  std::int64_t align = 1;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--offsets") {
      offsets = true;
    } else if (a == "--align" && i + 1 < argc) {
      char* end = nullptr;
      align = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || align <= 0 || (align & (align - 1)) != 0) {
        std::fprintf(stderr, "nnc-plan: --align needs a power of two\n");
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (file.empty() && (a == "-" || a.rfind("--", 0) != 0)) {
      file = a;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (file.empty()) {
    usage(stderr);
    return 2;
  }
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "nnc-plan: cannot open %s\n", file.c_str());
      return 2;
    }
    text << in.rdbuf();
  }
  auto parsed = parse_lifetimes(text.str());
  if (!parsed) {
    std::fprintf(stderr, "nnc-plan: %s:%s\n", file.c_str(), parsed.error().c_str());
    return 2;
  }
  LifetimeList list = std::move(parsed).value();
  for (TensorSpec& t : list.problem.tensors) t.alignment = align;

  std::printf("tensors %zu, no reuse %llu bytes\n", list.problem.tensors.size(),
              static_cast<unsigned long long>(no_reuse_bytes(list.problem)));
  int status = 0;
  const Planner planners[] = {Planner::nnc, Planner::greedy, Planner::best};
  std::vector<Plan> plans;
  for (Planner which : planners) {
    auto r = plan(list.problem, which);
    if (!r) {
      std::fprintf(stderr, "nnc-plan: %s: %s\n", planner_name(which), r.error().c_str());
      return 2;
    }
    const Plan& p = r.value();
    const std::string verdict = check(list.problem, p);
    if (!verdict.empty()) status = 1;
    std::printf("%-6s arena %llu bytes, lower bound %llu bytes, ratio %s, check %s", planner_name(which),
                static_cast<unsigned long long>(p.arena), static_cast<unsigned long long>(p.lower_bound),
                ratio(p.arena, p.lower_bound).c_str(), verdict.empty() ? "ok" : ("FAILED: " + verdict).c_str());
    if (which == Planner::best) std::printf(" (%s)", planner_name(p.planner));
    std::printf("\n");
    plans.push_back(std::move(r).value());
  }
  if (offsets) {
    std::printf("# id bytes first_step last_step nnc greedy best\n");
    for (std::size_t i = 0; i < list.ids.size(); i++) {
      const TensorSpec& t = list.problem.tensors[i];
      std::printf("%lld %lld %lld %lld", static_cast<long long>(list.ids[i]), static_cast<long long>(t.size),
                  static_cast<long long>(t.first), static_cast<long long>(t.last));
      for (const Plan& p : plans) std::printf(" %llu", static_cast<unsigned long long>(p.arena_offset(i)));
      std::printf("\n");
    }
  }
  return status;
}
