// splitmix64 (Steele, Lea and Flood), the library's one small generator:
// parameter initialisation, the dataframe's shuffles and image jitter, and
// the output function of the random commands' counters. Reproducible from
// run to run and from one standard library to another.
#pragma once

#include <cstdint>

namespace nnc {

// The output function: a 64-bit mix with full avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The generator: a Weyl sequence through mix64.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9e3779b97f4a7c15ull); }
  // In [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

}  // namespace nnc
