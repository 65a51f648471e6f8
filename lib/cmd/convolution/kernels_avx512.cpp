// The AVX-512 micro-kernel table (16 lanes; nz = 1, 2, 4).
#define NNC_CONV_AVX512 1
#include "cmd/convolution/kernels_impl.hpp"

namespace nnc::conv {

const Kernels* kernels_avx512() {
  static const Kernels k = make_table();
  return &k;
}

}  // namespace nnc::conv
