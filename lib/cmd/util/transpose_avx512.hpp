// fp32 matrix transposes on AVX-512 by 16 x 16 register tiles.
//
// transpose16 is inline for other *_avx512.cpp files (compiled for AVX-512);
// transpose_f32_avx512 may be called from anywhere once
// nnc::cpu_features().avx512f is known to be true:
//
//   // y (cols x rows, rows ys apart) = transpose of x (rows x cols, rows xs apart)
//   nnc::util::transpose_f32_avx512(x, xs, rows, cols, y, ys);
#pragma once

#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace nnc::util {

// y[j * ys + i] = x[i * xs + j] for i < rows, j < cols.
void transpose_f32_avx512(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys);

#if defined(__AVX512F__)
// In-register transpose of 16 vectors (rows) of 16 floats.
inline void transpose16(__m512 r[16]) {
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
#endif

}  // namespace nnc::util
