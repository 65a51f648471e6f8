// The reduction / normalisation loops without extra instruction-set flags,
// and the choice of table by what this CPU runs (see loops.hpp).
#define NNC_LOOPS_SUFFIX generic
#include "cmd/reduce/loops_impl.hpp"
#include "core/parallel.hpp"

namespace nnc::red {

const Loops<float>& loops_f32() {
  static const Loops<float>& t = cpu_features().avx512f                       ? loops_f32_avx512()
                                 : cpu_features().avx2 && cpu_features().fma3 ? loops_f32_avx2()
                                                                              : loops_f32_generic();
  return t;
}

const Loops<double>& loops_f64() {
  static const Loops<double>& t = cpu_features().avx512f                       ? loops_f64_avx512()
                                  : cpu_features().avx2 && cpu_features().fma3 ? loops_f64_avx2()
                                                                               : loops_f64_generic();
  return t;
}

}  // namespace nnc::red
