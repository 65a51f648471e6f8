// The softmax family's fp32 row loops for AVX-512F (compiled with the
// AVX-512 flags; used only after the CPU check). Tails use lane masks.
//
// GCC 12's AVX-512 headers trip its own (un)initialised-variable warnings
// when their intrinsics are inlined (GCC PR 105593); they are false alarms.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cmd/softmax/softmax.hpp"

namespace nnc::softmax {

namespace avx512 {

struct V {
  using R = __m512;
  static constexpr int N = 16;
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R load_tail(const float* p, int n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(n), p);
  }
  static void store_tail(float* p, R v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  // With a NaN in either, the second operand comes back (NaN stays).
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static R round(R x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R pow2n(R n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static R zero_below(R e, R x, R lo) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), e); }
  static float hsum(R v) { return _mm512_reduce_add_ps(v); }
  static float hmax(R v) { return _mm512_reduce_max_ps(v); }
};

#include "cmd/softmax/simd_rows_body.hpp"

}  // namespace avx512

const RowKernels kRowKernelsAvx512 = {"avx512",
                                      avx512::row_exp,
                                      avx512::row_max,
                                      avx512::row_exp_sum,
                                      avx512::row_scale,
                                      avx512::row_softmax_backward,
                                      avx512::row_crossentropy_backward};

}  // namespace nnc::softmax
