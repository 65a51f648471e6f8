// Winograd F(4x4, 3x3) and F(2x2, 5x5) on AVX-512 (see winograd.hpp): the
// runs of winograd_body.hpp with 16 channels per vector, partial vectors
// through the mask registers, and the AVX-512 packed GEMM of sgemm.hpp.
#include "cmd/convolution/winograd.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <new>

#include "cmd/common/sgemm.hpp"
#include "core/parallel.hpp"

namespace nnc::conv {

namespace {

struct Simd {
  using R = __m512;
  using Mask = __mmask16;
  static constexpr int N = 16;
  static Mask mask(int valid) {
    return valid >= N ? static_cast<Mask>(0xffff) : static_cast<Mask>((1u << valid) - 1u);
  }
  static R load(Mask k, const float* p) { return _mm512_maskz_loadu_ps(k, p); }
  static void store(float* p, Mask k, R v) { _mm512_mask_storeu_ps(p, k, v); }
  static R load_aligned(Mask k, const float* p) { return _mm512_maskz_load_ps(k, p); }
  static R loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R fmsub(R a, R b, R c) { return _mm512_fmsub_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static void sgemm_pack(const gemm::Sgemm& g, float* packed) { gemm::sgemm_pack_avx512(g, packed); }
  static void sgemm_packed(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                           int64_t ldc) {
    gemm::sgemm_packed_avx512(m, n, k, a, lda, packed, c, ldc);
  }
  static bool sgemm_serial(const gemm::Sgemm& g) { return gemm::sgemm_avx512_serial(g); }
};

#include "cmd/convolution/winograd_body.hpp"

}  // namespace

size_t winograd_scratch_floats(const WinogradRun& r) { return scratch_floats(r); }
void winograd_avx512(const WinogradRun& r, float* scratch) { forward(r, scratch); }
size_t winograd_gradient_scratch_floats(const WinogradGradRun& r) { return gradient_scratch_floats(r); }
void winograd_gradient_avx512(const WinogradGradRun& r, float* scratch) { gradient(r, scratch); }

}  // namespace nnc::conv
