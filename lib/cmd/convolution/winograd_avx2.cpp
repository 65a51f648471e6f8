// Winograd F(4x4, 3x3) and F(2x2, 5x5) on AVX2 + FMA (see winograd.hpp): the
// runs of winograd_body.hpp with 8 channels per vector and the AVX2 packed
// GEMM of sgemm.hpp. A partial vector of channels goes through VMASKMOV, whole
// ones through plain loads and stores.
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
  using R = __m256;
  // VMASKMOV never touches the lanes left out; `full` skips it for whole vectors.
  struct Mask {
    __m256i m;
    bool full;
  };
  static constexpr int N = 8;
  static Mask mask(int valid) {
    return {_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), valid >= N};
  }
  static R load(const Mask& k, const float* p) { return k.full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, k.m); }
  static void store(float* p, const Mask& k, R v) {
    if (k.full)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, k.m, v);
  }
  // VMASKMOV has no aligned form.
  static R load_aligned(const Mask& k, const float* p) { return load(k, p); }
  static R loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float v) { return _mm256_set1_ps(v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R fmsub(R a, R b, R c) { return _mm256_fmsub_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static void sgemm_pack(const gemm::Sgemm& g, float* packed) { gemm::sgemm_pack_avx2(g, packed); }
  static void sgemm_packed(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                           int64_t ldc) {
    gemm::sgemm_packed_avx2(m, n, k, a, lda, packed, c, ldc);
  }
  static bool sgemm_serial(const gemm::Sgemm& g) { return gemm::sgemm_avx2_serial(g); }
};

#include "cmd/convolution/winograd_body.hpp"

}  // namespace

size_t winograd_scratch_floats_avx2(const WinogradRun& r) { return scratch_floats(r); }
void winograd_avx2(const WinogradRun& r, float* scratch) { forward(r, scratch); }
size_t winograd_gradient_scratch_floats_avx2(const WinogradGradRun& r) { return gradient_scratch_floats(r); }
void winograd_gradient_avx2(const WinogradGradRun& r, float* scratch) { gradient(r, scratch); }

}  // namespace nnc::conv
