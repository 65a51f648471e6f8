// AVX2 inner loop of EWSUM over packed fp32 (compiled with -mavx2 -mfma
// -mf16c; called only after the CPU check). No FMA: the sum is formed left to
// right exactly as the scalar loop forms it.
#include <immintrin.h>

#include "cmd/ew/ew.hpp"

namespace nnc::ew {

void sum_f32_avx2(float* y, const float* const* x, int n, size_t count) {
  size_t i = 0;
  if (n == 2) {
    const float* a = x[0];
    const float* b = x[1];
    for (; i + 32 <= count; i += 32) {
      const __m256 s0 = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
      const __m256 s1 = _mm256_add_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
      const __m256 s2 = _mm256_add_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
      const __m256 s3 = _mm256_add_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
      _mm256_storeu_ps(y + i, s0);
      _mm256_storeu_ps(y + i + 8, s1);
      _mm256_storeu_ps(y + i + 16, s2);
      _mm256_storeu_ps(y + i + 24, s3);
    }
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < count; i++) y[i] = a[i] + b[i];
    return;
  }
  for (; i + 16 <= count; i += 16) {
    __m256 s0 = _mm256_loadu_ps(x[0] + i);
    __m256 s1 = _mm256_loadu_ps(x[0] + i + 8);
    for (int k = 1; k < n; k++) {
      s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x[k] + i));
      s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x[k] + i + 8));
    }
    _mm256_storeu_ps(y + i, s0);
    _mm256_storeu_ps(y + i + 8, s1);
  }
  for (; i < count; i++) {
    float s = x[0][i];
    for (int k = 1; k < n; k++) s += x[k][i];
    y[i] = s;
  }
}

}  // namespace nnc::ew
