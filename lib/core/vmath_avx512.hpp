// nnc::vmath::Avx512: the vector type of core/vmath.hpp for AVX-512 (F, with
// DQ/BW/VL available to the file), sixteen floats per register, masks as
// __mmask16. Include only from files compiled with the AVX-512 flags
// (lib/cmd/**/*_avx512.cpp) and call their code only after
// nnc::cpu_features() reports avx512.
//
//   using V = nnc::vmath::Avx512;
//   V::store(y, nnc::vmath::erf<V>(V::load(x)));
#pragma once

// GCC 12 reads _mm512_undefined_ps() inside its own intrinsics as an
// uninitialised use once they are inlined into our loops.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "core/vmath.hpp"

namespace nnc::vmath {

struct Avx512 {
  using R = __m512;
  using M = __mmask16;
  static constexpr int N = 16;
  static __mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  // The first n lanes from p, the rest `fill`; nothing past p + n is read.
  static R load_tail(const float* p, int n, float fill = 0.0f) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tail_mask(n), p);
  }
  static void store_tail(float* p, R v, int n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
  // A store past the caches to a 64-byte aligned p; nnc::store_fence() (core/parallel.hpp)
  // orders such stores before later ones.
  static void stream(float* p, R v) { _mm512_stream_ps(p, v); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R abs(R a) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
  }
  static R round(R x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M isnan(R a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static R select(M m, R a, R b) { return _mm512_mask_blend_ps(m, b, a); }
  // v, kept in a register as it is: the compiler can no longer fold the load
  // that produced v into a zero-masking load under a later select(m, v, 0).
  // Such masked loads ran ReLU backward's memory-bound loop about 1.5 times
  // slower than a plain load and a blend on AMD Zen 5 (bench-act).
  static R opaque(R v) {
    __asm__("" : "+v"(v));
    return v;
  }
  static R copysign(R mag, R sign) {
    const __m512i s = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(s, _mm512_castps_si512(mag), _mm512_castps_si512(sign), 0xac));
  }
  static R pow2n(R n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  // p 2^n for whole n (any range: overflow gives inf, underflow rounds once to a subnormal or 0).
  static R scalef(R p, R n) { return _mm512_scalef_ps(p, n); }
  static R scale_unit(R p, R n) { return scalef(p, n); }
  static R scale_down(R p, R k, R) { return scalef(p, sub(set1(0.0f), k)); }
  // 1 / x to about 2^-27 relative: the 14-bit estimate and one Newton step.
  static R recip(R x) {
    const R r = _mm512_rcp14_ps(x);
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(r, x, _mm512_set1_ps(1.0f)), r);
  }
  static R exponent(R x) {
    const __m512i b = _mm512_castps_si512(x);
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(b, 23), _mm512_set1_epi32(126)));
  }
  static R mantissa(R x) {
    const __m512i b = _mm512_castps_si512(x);
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_and_si512(b, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x3f000000)));
  }
};

}  // namespace nnc::vmath
