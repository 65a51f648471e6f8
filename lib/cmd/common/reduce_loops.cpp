// The reduction / normalisation loops without extra instruction-set flags,
// and the choice of table by what this CPU runs (see loops.hpp).
#define NNC_LOOPS_SUFFIX generic
#include "cmd/common/reduce_loops_impl.hpp"
#include "core/parallel.hpp"

namespace nnc::red {

namespace {

// loops_avx2.cpp is compiled with AVX2, FMA and F16C: the compiler may use
// any of them, so every one must be there (cpu_features().avx512 likewise).
bool has_avx512() { return cpu_features().avx512; }
bool has_avx2() { return cpu_features().avx2; }

}  // namespace

const Loops<float>& loops_f32() {
  static const Loops<float>& t = has_avx512() ? loops_f32_avx512()
                                 : has_avx2() ? loops_f32_avx2()
                                              : loops_f32_generic();
  return t;
}

const Loops<double>& loops_f64() {
  static const Loops<double>& t = has_avx512() ? loops_f64_avx512()
                                  : has_avx2() ? loops_f64_avx2()
                                               : loops_f64_generic();
  return t;
}

}  // namespace nnc::red
