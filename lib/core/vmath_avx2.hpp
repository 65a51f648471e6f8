// nnc::vmath::Avx2: the vector type of core/vmath.hpp for AVX2 + FMA, eight
// floats per register, masks as all-ones lanes. Include only from files
// compiled with -mavx2 -mfma (lib/cmd/**/*_avx2.cpp), and call their code only
// after nnc::cpu_features() reports avx2 and fma3.
//
//   using V = nnc::vmath::Avx2;
//   V::store(y, nnc::vmath::tanh<V>(V::load(x)));
#pragma once

#include <immintrin.h>

#include "core/vmath.hpp"

namespace nnc::vmath {

struct Avx2 {
  using R = __m256;
  using M = __m256;
  static constexpr int N = 8;
  // Lanes [0, n) set, for tails of n < 8 elements.
  static __m256i tail_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  // The first n lanes from p, the rest `fill`; nothing past p + n is read.
  static R load_tail(const float* p, int n, float fill = 0.0f) {
    const __m256i m = tail_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store_tail(float* p, R v, int n) { _mm256_maskstore_ps(p, tail_mask(n), v); }
  // A store past the caches to a 32-byte aligned p; nnc::store_fence() (core/parallel.hpp)
  // orders such stores before later ones.
  static void stream(float* p, R v) { _mm256_stream_ps(p, v); }
  static R set1(float v) { return _mm256_set1_ps(v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R abs(R a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static R round(R x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M isnan(R a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static R select(M m, R a, R b) { return _mm256_blendv_ps(b, a, m); }
  static R opaque(R v) { return v; }  // AVX2 has no zero-masking loads to avoid (see Avx512::opaque)
  static R copysign(R mag, R sign) {
    const R s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sign));
  }
  static R pow2n(R n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // p 2^n for whole n in [-150, 128]: two factors, so that overflow gives inf and
  // underflow rounds once to a subnormal or 0.
  static R scalef(R p, R n) {
    const R n1 = round(mul(n, set1(0.5f)));
    return mul(mul(p, pow2n(n1)), pow2n(sub(n, n1)));
  }
  // scalef for p in [0.5, 2) (exp's reduced value). When every lane's n is in
  // [-125, 126], each p 2^n is a normal float: n goes straight into p's
  // exponent field (3 instructions where scalef takes 11, a quarter of exp on
  // AVX2). A lane outside (exp of x below -86 or above 88) takes scalef for the
  // whole register; the branch is taken alike for most registers of a tensor.
  static R scale_unit(R p, R n) {
    const R out = _mm256_or_ps(lt(n, set1(-125.0f)), gt(n, set1(126.0f)));
    if (__builtin_expect(!_mm256_testz_ps(out, out), 0)) return scalef(p, n);
    return _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)));
  }
  // p 2^-k for p in [0.5, 2) and whole k in [0, 152] given also as kb = 1.5 * 2^23 + k
  // (the float whose low mantissa bits hold k): k goes straight out of p's exponent
  // field (2 instructions) when every lane's k <= 125 (the result normal); else, and
  // for a NaN kb (NaN out), scalef.
  static R scale_down(R p, R k, R kb) {
    const R out = _mm256_cmp_ps(kb, set1(12582912.0f + 125.0f), _CMP_NLE_UQ);
    if (__builtin_expect(!_mm256_testz_ps(out, out), 0)) return scalef(p, sub(set1(0.0f), k));
    return _mm256_castsi256_ps(
        _mm256_sub_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(kb), 23)));
  }
  // 1 / x to about 2^-22 relative: the 12-bit estimate and one Newton step.
  static R recip(R x) {
    const R r = _mm256_rcp_ps(x);
    return _mm256_fmadd_ps(r, _mm256_fnmadd_ps(r, x, _mm256_set1_ps(1.0f)), r);
  }
  static R exponent(R x) {
    const __m256i b = _mm256_castps_si256(x);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(126)));
  }
  static R mantissa(R x) {
    const __m256i b = _mm256_castps_si256(x);
    return _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));
  }
};

}  // namespace nnc::vmath
