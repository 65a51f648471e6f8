// The channels-inner batch-norm loops for AVX2 + FMA (norm_avx2.hpp).
#include <immintrin.h>

#include "cmd/norm/norm_avx2.hpp"
#include "core/vmath_avx2.hpp"

namespace nnc::norm::avx2 {

namespace {

using V = vmath::Avx2;
// 16 registers of 8 floats: the sums keep up to 4 registers of channels (two
// accumulators and a centre each), the stream loops a row's coefficients up
// to 32 channels (affine: 12 registers; axpbypc: 16 at 32 channels, so 24
// channels at most).
constexpr int kMaxVectors = 4;
constexpr size_t kAffineRegK = 32;
constexpr size_t kAxpbypcRegK = 24;

}  // namespace

#include "cmd/norm/norm_body.hpp"

void row_ln_forward_stream(const float* x, float* y, size_t n, float c, float r, float inv, const float* s,
                           const float* b) {
  const __m256 cv = _mm256_set1_ps(c), rv = _mm256_set1_ps(r), iv = _mm256_set1_ps(inv), one = _mm256_set1_ps(1.0f),
               zero = _mm256_setzero_ps();
  for (size_t i = 0; i < n; i += 8) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), cv), rv), iv);
    _mm256_stream_ps(y + i, _mm256_fmadd_ps(t, s ? _mm256_loadu_ps(s + i) : one, b ? _mm256_loadu_ps(b + i) : zero));
  }
}

void row_ln_dx_stream(const float* g, const float* x, float* dx, size_t n, float mean, float inv, const float* s,
                      float mh, float mhx) {
  const __m256 mv = _mm256_set1_ps(mean), iv = _mm256_set1_ps(inv), hv = _mm256_set1_ps(mh),
               hxv = _mm256_set1_ps(mhx);
  for (size_t i = 0; i < n; i += 8) {
    __m256 gs = _mm256_loadu_ps(g + i);
    if (s) gs = _mm256_mul_ps(gs, _mm256_loadu_ps(s + i));
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    _mm256_stream_ps(dx + i, _mm256_mul_ps(iv, _mm256_fnmadd_ps(xh, hxv, _mm256_sub_ps(gs, hv))));
  }
}

}  // namespace nnc::norm::avx2
