// transpose_f32_avx512 (see transpose_avx512.hpp).
// GCC 12 warns inside its own shuffle intrinsics (their undefined first
// operand) when they are inlined into transpose16.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "cmd/common/transpose_avx512.hpp"

#include <immintrin.h>

#include <algorithm>

namespace nnc {

namespace {

// In-register transpose of 16 vectors (rows) of 16 floats.
void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; j++) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

}  // namespace

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

}  // namespace nnc
