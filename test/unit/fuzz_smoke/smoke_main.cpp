// A short fuzz run without libFuzzer, for every build (GCC, and the
// sanitizer preset above all): the seeds of a corpus directory, then random
// mutations of them (bit flips, byte changes, insertions, deletions,
// truncations, splices of two seeds) from a fixed seed, fed to the target's
// LLVMFuzzerTestOneInput for a few seconds. The target aborts on a wrong
// answer; ASan and UBSan catch the rest. The long coverage-guided runs use
// libFuzzer proper (tools/fuzz, NNC_FUZZ=ON with clang).
//
// Usage: smoke_<target> SECONDS DIR...
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target, as in libFuzzer.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

void load(const std::string& path, std::vector<std::vector<uint8_t>>& seeds) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR* d = opendir(path.c_str());
    if (!d) return;
    std::vector<std::string> names;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());  // the same order on every machine
    for (auto& n : names) load(path + "/" + n, seeds);
    return;
  }
  std::ifstream f(path, std::ios::binary);
  seeds.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SECONDS DIR...\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  ccv_nnc_init();
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 2; i < argc; i++) load(argv[i], seeds);
  if (seeds.empty()) {
    std::fprintf(stderr, "%s: no seeds found\n", argv[0]);
    return 1;
  }
  for (auto& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());
  std::mt19937_64 rng(20261125);
  const auto start = std::chrono::steady_clock::now();
  long runs = 0;
  std::vector<uint8_t> x;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    x = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; e++) {
      const size_t n = x.size();
      switch (rng() % 6) {
        case 0:  // flip a bit
          if (n) x[rng() % n] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:  // set a byte to an edge value
          if (n) {
            static const uint8_t edge[] = {0, 1, 0x7f, 0x80, 0xff};
            x[rng() % n] = edge[rng() % 5];
          }
          break;
        case 2:  // insert bytes
          x.insert(x.begin() + static_cast<long>(n ? rng() % n : 0), 1 + rng() % 16, static_cast<uint8_t>(rng()));
          break;
        case 3:  // delete a run
          if (n) {
            const size_t at = rng() % n, len = std::min<size_t>(n - at, 1 + rng() % 64);
            x.erase(x.begin() + static_cast<long>(at), x.begin() + static_cast<long>(at + len));
          }
          break;
        case 4:  // truncate
          if (n) x.resize(rng() % n);
          break;
        default: {  // splice in a piece of another seed
          const auto& o = seeds[rng() % seeds.size()];
          if (!o.empty() && n) {
            const size_t from = rng() % o.size(), len = std::min<size_t>(o.size() - from, 1 + rng() % 256), at = rng() % n;
            for (size_t k = 0; k < len && at + k < x.size(); k++) x[at + k] = o[from + k];
          }
        }
      }
    }
    LLVMFuzzerTestOneInput(x.data(), x.size());
    runs++;
  }
  std::printf("%s: %zu seeds, %ld mutated inputs in %.0f s, no failure\n", argv[0], seeds.size(), runs, seconds);
  return 0;
}
