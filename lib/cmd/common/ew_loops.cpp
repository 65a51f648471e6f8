// The ew loops without extra instruction-set flags, and the choice of table
// by what this CPU runs (see loops.hpp).
#define NNC_EW_LOOPS_SUFFIX generic
#include "cmd/common/ew_loops_impl.hpp"
#include "core/parallel.hpp"

namespace nnc::ew {

namespace {

// loops_avx2.cpp is compiled with AVX2, FMA and F16C: the compiler may use any.
bool has_avx2() { return cpu_features().avx2; }

}  // namespace

template <>
const Loops<float>& loops<float>() {
  static const Loops<float>& t = has_avx2() ? loops_f32_avx2() : loops_f32_generic();
  return t;
}

template <>
const Loops<double>& loops<double>() {
  static const Loops<double>& t = has_avx2() ? loops_f64_avx2() : loops_f64_generic();
  return t;
}

}  // namespace nnc::ew
