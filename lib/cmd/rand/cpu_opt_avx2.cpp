// AVX2 loops of the random family for packed fp32 (compiled with -mavx2 -mfma
// -mf16c; called only after the CPU check). Four 64-bit counter words at a
// time: splitmix64's multiplies done as three 32x32->64 multiplies each, and
// the values finished exactly as rand.hpp's scalar functions do (the fma in
// double, then one rounding to float), so the results are bit for bit those
// of CPU_REF.
#include <immintrin.h>

#include "cmd/rand/rand.hpp"

namespace nnc::rand {

namespace {

inline __m256i mul64(__m256i a, uint64_t c) {
  const __m256i clo = _mm256_set1_epi64x(static_cast<int64_t>(c & 0xffffffffu));
  const __m256i chi = _mm256_set1_epi64x(static_cast<int64_t>(c >> 32));
  const __m256i lo = _mm256_mul_epu32(a, clo);
  const __m256i t1 = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), clo);
  const __m256i t2 = _mm256_mul_epu32(a, chi);
  return _mm256_add_epi64(lo, _mm256_slli_epi64(_mm256_add_epi64(t1, t2), 32));
}

inline __m256i mix64(__m256i z) {
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xbf58476d1ce4e5b9ull);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94d049bb133111ebull);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// Counter states key + (k + 1) * golden for k = k0 .. k0 + 3.
inline __m256i first_states(uint64_t key, size_t k0) {
  const uint64_t s = key + (k0 + 1) * kGolden;
  return _mm256_set_epi64x(static_cast<int64_t>(s + 3 * kGolden), static_cast<int64_t>(s + 2 * kGolden),
                           static_cast<int64_t>(s + kGolden), static_cast<int64_t>(s));
}

// Eight floats from the eight 32-bit halves of four words (element order).
inline __m256 uniform8(__m256i w, __m256d range, __m256d lb) {
  const __m256i x = _mm256_srli_epi32(w, 8);
  const __m256d scale = _mm256_set1_pd(0x1p-24);
  const __m256d d0 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), scale);
  const __m256d d1 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)), scale);
  const __m128 f0 = _mm256_cvtpd_ps(_mm256_fmadd_pd(range, d0, lb));
  const __m128 f1 = _mm256_cvtpd_ps(_mm256_fmadd_pd(range, d1, lb));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(f0), f1, 1);
}

}  // namespace

size_t uniform_f32_avx2(float* y, size_t k0, size_t k1, uint64_t key, double lb, double range) {
  const __m256d vr = _mm256_set1_pd(range), vl = _mm256_set1_pd(lb);
  const __m256i step = _mm256_set1_epi64x(static_cast<int64_t>(4 * kGolden));
  __m256i s = first_states(key, k0);
  size_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    _mm256_storeu_ps(y + 2 * k, uniform8(mix64(s), vr, vl));
    s = _mm256_add_epi64(s, step);
  }
  return k;
}

size_t dropout_f32_avx2(const float* x, float* y, unsigned char* mask, size_t k0, size_t k1, uint64_t key,
                        uint64_t threshold, double scale) {
  // threshold < 2^32 here (p = 1 is handled by the caller): keep when w >= t,
  // compared as signed after flipping the top bit.
  const __m256i bias = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i tm1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(threshold) ^ 0x80000000u));
  const bool all = threshold == 0;
  const __m256d vs = _mm256_set1_pd(scale);
  const __m256i step = _mm256_set1_epi64x(static_cast<int64_t>(4 * kGolden));
  __m256i s = first_states(key, k0);
  size_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    const __m256i w = _mm256_xor_si256(mix64(s), bias);
    s = _mm256_add_epi64(s, step);
    // w >= t  <=>  !(t > w)
    const __m256i drop = all ? _mm256_setzero_si256() : _mm256_cmpgt_epi32(tm1, w);
    const size_t i = 2 * k;
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m128 f0 = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xv)), vs));
    const __m128 f1 = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)), vs));
    const __m256 scaled = _mm256_insertf128_ps(_mm256_castps128_ps256(f0), f1, 1);
    _mm256_storeu_ps(y + i, _mm256_andnot_ps(_mm256_castsi256_ps(drop), scaled));
    const unsigned bits = ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(drop)));
    for (int j = 0; j < 8; j++) mask[i + j] = (bits >> j) & 1;
  }
  return k;
}

}  // namespace nnc::rand
