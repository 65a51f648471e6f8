// plane1.hpp's kernel on AVX-512 (16 lanes, blocks of 8 filters).
#define NNC_PLANE1_AVX512 1
#include "cmd/convolution/plane1_impl.hpp"

namespace nnc::conv {

void plane1_avx512(const Plane1Args& a) { plane1(a); }

}  // namespace nnc::conv
