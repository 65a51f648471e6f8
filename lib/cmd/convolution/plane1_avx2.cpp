// plane1.hpp's kernel on AVX2 + FMA (8 lanes, blocks of 4 filters).
#include "cmd/convolution/plane1_impl.hpp"

namespace nnc::conv {

void plane1_avx2(const Plane1Args& a) { plane1(a); }

}  // namespace nnc::conv
