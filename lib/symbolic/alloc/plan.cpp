// The planner's entry: validation, sub-graphs planned first (recursively,
// each appearing to its parent as one buffer-sized tensor), loops unrolled
// as needed, then the chosen planner(s) on the blocks.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <exception>
#include <new>

namespace nnc::alloc {

const char* planner_name(Planner p) {
  switch (p) {
    case Planner::best: return "best";
    case Planner::nnc: return "nnc";
    case Planner::greedy: return "greedy";
    case Planner::nnc_interference: return "nnc-oc";
    case Planner::fit: return "fit";
  }
  return "?";
}

namespace {

using detail::Blocks;
using detail::Layout;

std::uint64_t max_alignment(const Problem& p) {
  std::uint64_t a = 1;
  for (const TensorSpec& t : p.tensors)
    if (!t.external && t.alignment > 0) a = std::max(a, static_cast<std::uint64_t>(t.alignment));
  for (const SubGraph& s : p.subgraphs)
    for (const Problem& c : s.cases) a = std::max(a, max_alignment(c));
  return a;
}

Plan assemble(const Blocks& bs, const Layout& lay, Planner which, std::size_t n) {
  Plan plan;
  plan.planner = which;
  std::uint64_t granule = 1;
  for (const detail::Block& b : bs.blocks) granule = std::max(granule, b.align);
  plan.buffers = lay.buffers;
  std::uint64_t at = 0;
  for (std::uint64_t size : plan.buffers) {
    at = detail::align_up(at, granule);
    plan.buffer_base.push_back(at);
    at += size;
  }
  plan.arena = at;
  plan.placements.assign(n, Placement{});
  for (std::size_t t = 0; t < n; t++) {
    const std::size_t b = bs.block_of[t];
    if (b == kNone) continue;
    plan.placements[t] = {lay.buffer[b], lay.offset[b] + bs.offset_in_block[t]};
  }
  plan.inplace_taken = bs.inplace_taken;
  plan.lower_bound = detail::bound_of(bs);
  plan.external_bytes = bs.external_bytes;
  return plan;
}

Result<Plan> plan_flat(const Problem& q, Planner which, const std::vector<std::vector<std::size_t>>& forced) {
  auto built = detail::build_blocks(q, forced);
  if (!built) return Result<Plan>::failure(built.error());
  const Blocks& bs = built.value();
  const std::size_t n = q.tensors.size();
  auto nnc = [&] {
    return assemble(bs, detail::plan_nnc(bs, detail::NncSelection::size_first), Planner::nnc, n);
  };
  if (which == Planner::nnc_interference)
    return assemble(bs, detail::plan_nnc(bs, detail::NncSelection::interference_first), Planner::nnc_interference, n);
  if (which == Planner::nnc) return nnc();
  if (which == Planner::greedy) return assemble(bs, detail::plan_greedy(bs), Planner::greedy, n);
  if (which == Planner::fit) return assemble(bs, detail::plan_fit(bs, nullptr), Planner::fit, n);
  // The default: NNC, and fit seeded with NNC's offsets (fit is never worse
  // than greedy by size, so greedy need not run).
  const Layout nl = detail::plan_nnc(bs, detail::NncSelection::size_first);
  Plan a = assemble(bs, nl, Planner::nnc, n);
  Plan b = assemble(bs, detail::plan_fit(bs, &nl), Planner::fit, n);
  return b.arena < a.arena ? b : a;
}

Result<Plan> plan_impl(const Problem& p, Planner which) {
  if (std::string e = detail::validate(p); !e.empty()) return Result<Plan>::failure(e);
  const std::size_t n = p.tensors.size();
  Problem q;
  q.tensors = p.tensors;
  q.partial_order = p.partial_order;
  q.steps = p.steps;
  q.edges = p.edges;
  q.total_steps = p.total_steps;
  q.inplace = p.inplace;
  q.carried = p.carried;
  std::vector<std::vector<Plan>> subplans;
  for (std::size_t k = 0; k < p.subgraphs.size(); k++) {
    const SubGraph& sg = p.subgraphs[k];
    const std::string who = "sub-graph " + std::to_string(k);
    if (p.partial_order && (sg.step < 0 || static_cast<std::size_t>(sg.step) >= p.steps))
      return Result<Plan>::failure(who + ": step " + std::to_string(sg.step) + " out of range");
    std::vector<Plan> cases;
    std::uint64_t size = 0;
    for (std::size_t c = 0; c < sg.cases.size(); c++) {
      auto r = plan_impl(sg.cases[c], which);
      if (!r) return Result<Plan>::failure(who + " case " + std::to_string(c) + ": " + r.error());
      // case..of: only one case runs, so all of them share one buffer.
      size = std::max(size, r.value().arena);
      cases.push_back(std::move(r).value());
    }
    TensorSpec t;
    t.size = static_cast<std::int64_t>(size);
    std::uint64_t align = 1;
    for (const Problem& c : sg.cases) align = std::max(align, max_alignment(c));
    t.alignment = static_cast<std::int64_t>(align);
    if (p.partial_order) {
      t.writes = {static_cast<std::size_t>(sg.step)};
    } else {
      t.first = t.last = sg.step;
    }
    q.tensors.push_back(std::move(t));
    subplans.push_back(std::move(cases));
  }

  if (q.carried.empty()) {
    auto r = plan_flat(q, which, {});
    if (r) r.value().subplans = std::move(subplans);
    return r;
  }
  auto u = detail::unroll_loop(q);
  if (!u) return Result<Plan>::failure(u.error());
  const detail::Unrolled& un = u.value();
  auto r = plan_flat(un.problem, which, un.classes);
  if (!r) return r;
  const Plan& flat = r.value();
  const std::size_t m = q.tensors.size();
  Plan plan;
  plan.planner = flat.planner;
  plan.buffers = flat.buffers;
  plan.buffer_base = flat.buffer_base;
  plan.arena = flat.arena;
  plan.lower_bound = flat.lower_bound;
  plan.external_bytes = flat.external_bytes / un.unroll;
  plan.unroll = un.unroll;
  for (unsigned j = 0; j < un.unroll; j++)
    plan.iterations.emplace_back(flat.placements.begin() + static_cast<std::ptrdiff_t>(j * m),
                                 flat.placements.begin() + static_cast<std::ptrdiff_t>((j + 1) * m));
  plan.placements = plan.iterations[0];
  // A candidate counts as taken only if every copy took it.
  plan.inplace_taken.assign(p.inplace.size(), true);
  for (unsigned j = 0; j < un.unroll; j++)
    for (std::size_t c = 0; c < p.inplace.size(); c++)
      if (!flat.inplace_taken[j * p.inplace.size() + c]) plan.inplace_taken[c] = false;
  plan.subplans = std::move(subplans);
  (void)n;
  return plan;
}

}  // namespace

Result<Plan> plan(const Problem& problem, Planner which) {
  try {
    auto r = plan_impl(problem, which);
#ifndef NDEBUG
    // Debug builds prove every plan before handing it out.
    if (r) {
      if (std::string v = check(problem, r.value()); !v.empty())
        return Result<Plan>::failure("planner produced an invalid plan: " + v);
    }
#endif
    return r;
  } catch (const std::bad_alloc&) {
    return Result<Plan>::failure("out of memory while planning");
  } catch (const std::exception& e) {
    return Result<Plan>::failure(std::string("planning failed: ") + e.what());
  }
}

}  // namespace nnc::alloc
