// transpose_f32_avx512 (see transpose_avx512.hpp).
// GCC 12 warns inside its own shuffle intrinsics (their undefined first
// operand) when they are inlined into transpose16.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "cmd/util/transpose_avx512.hpp"

#include <algorithm>

namespace nnc::util {

void transpose_f32_avx512(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys) {
  for (int i0 = 0; i0 < rows; i0 += 16) {
    const int ni = std::min(16, rows - i0);
    const __mmask16 mi = static_cast<__mmask16>(ni == 16 ? 0xffffu : (1u << ni) - 1u);
    for (int j0 = 0; j0 < cols; j0 += 16) {
      const int nj = std::min(16, cols - j0);
      const __mmask16 mj = static_cast<__mmask16>(nj == 16 ? 0xffffu : (1u << nj) - 1u);
      __m512 r[16];
      for (int i = 0; i < 16; i++)
        r[i] = i < ni ? _mm512_maskz_loadu_ps(mj, x + (i0 + i) * xs + j0) : _mm512_setzero_ps();
      transpose16(r);
      for (int j = 0; j < nj; j++) _mm512_mask_storeu_ps(y + (j0 + j) * ys + i0, mi, r[j]);
    }
  }
}

}  // namespace nnc::util
