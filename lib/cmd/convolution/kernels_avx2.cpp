// The AVX2 + FMA micro-kernel table (8 lanes; nz = 1, 2).
#include "cmd/convolution/kernels_impl.hpp"

namespace nnc::conv {

const Kernels* kernels_avx2() {
  static const Kernels k = make_table();
  return &k;
}

}  // namespace nnc::conv
