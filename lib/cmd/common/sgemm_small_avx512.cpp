// Products of 1 to 5 rows (sgemm.hpp, sgemm_small_avx512): a batch-1 or
// small-batch fully connected layer, memory-bound on B. B is read once, in
// place, with no packing; each vector of B loaded serves every row of A.
//
// Two loops, by B's layout:
// - rows of B adjacent (bcs = 1, B as stored for y = x · w): blocks of 64
//   columns of C, one FMA per row of A for each vector of B, k outer;
// - columns of B adjacent (brs = 1, B = wᵀ for y = x · wᵀ, the usual fully
//   connected layer): four columns of C at a time, each a dot product along k
//   of a row of A with a row of w, vectors of 16 along k, a horizontal sum at
//   the end.
// The threading and the entry checks are sgemm_small_driver.hpp's.
// GCC 12's AVX-512 intrinsics (shuffles and permutes with an undefined
// pass-through) trip -Wmaybe-uninitialized falsely.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "cmd/common/sgemm.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {

constexpr int kLanes = 16;

__mmask16 tail(int valid) {
  return valid >= kLanes ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << valid) - 1u);
}

// The sum of v's lanes (by halves: 256-bit, 128-bit, then within 128).
float lane_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xb1));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4e));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xb1));
  return _mm512_cvtss_f32(v);
}

// C[:, j0, j1) for B's rows adjacent: up to four vectors of columns at a time.
template <int M>
void rows_adjacent(const Sgemm& g, int j0, int j1) {
  for (int j = j0; j < j1; j += 4 * kLanes) {
    const int width = std::min(4 * kLanes, j1 - j);
    const int vecs = (width + kLanes - 1) / kLanes;
    __m512 acc[M][4];
    for (int i = 0; i < M; i++)
      for (int v = 0; v < 4; v++) acc[i][v] = _mm512_setzero_ps();
    __mmask16 mask[4];
    for (int v = 0; v < 4; v++) mask[v] = v < vecs ? tail(width - v * kLanes) : 0;
    if (vecs == 4 && mask[3] == 0xffff) {
      for (int p = 0; p < g.k; p++) {
        const float* bp = g.b + p * g.brs + j;
        const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16), b2 = _mm512_loadu_ps(bp + 32),
                     b3 = _mm512_loadu_ps(bp + 48);
        for (int i = 0; i < M; i++) {
          const __m512 a = _mm512_set1_ps(g.a[i * g.ars + p * g.acs]);
          acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
          acc[i][2] = _mm512_fmadd_ps(a, b2, acc[i][2]);
          acc[i][3] = _mm512_fmadd_ps(a, b3, acc[i][3]);
        }
      }
    } else {
      for (int p = 0; p < g.k; p++) {
        const float* bp = g.b + p * g.brs + j;
        __m512 bv[4];
        for (int v = 0; v < 4; v++) bv[v] = _mm512_maskz_loadu_ps(mask[v], bp + v * kLanes);
        for (int i = 0; i < M; i++) {
          const __m512 a = _mm512_set1_ps(g.a[i * g.ars + p * g.acs]);
          for (int v = 0; v < 4; v++) acc[i][v] = _mm512_fmadd_ps(a, bv[v], acc[i][v]);
        }
      }
    }
    for (int i = 0; i < M; i++)
      for (int v = 0; v < vecs; v++) {
        float* cp = g.c + i * g.ldc + j + v * kLanes;
        __m512 r = acc[i][v];
        if (g.beta != 0) r = _mm512_fmadd_ps(_mm512_set1_ps(g.beta), _mm512_maskz_loadu_ps(mask[v], cp), r);
        _mm512_mask_storeu_ps(cp, mask[v], r);
      }
  }
}

// C[:, j0, j1) for B's columns adjacent (B(p, j) = b[p + j * bcs]) and A's
// rows adjacent: dot products along k, four columns of C at a time.
template <int M>
void columns_adjacent(const Sgemm& g, int j0, int j1) {
  const int kfull = g.k / kLanes * kLanes;
  const __mmask16 ktail = tail(g.k - kfull);
  for (int j = j0; j < j1; j += 4) {
    const int cols = std::min(4, j1 - j);
    const float* w[4];
    for (int q = 0; q < 4; q++) w[q] = g.b + static_cast<int64_t>(j + std::min(q, cols - 1)) * g.bcs;
    __m512 acc[M][4];
    for (int i = 0; i < M; i++)
      for (int q = 0; q < 4; q++) acc[i][q] = _mm512_setzero_ps();
    for (int p = 0; p < kfull; p += kLanes) {
      const __m512 w0 = _mm512_loadu_ps(w[0] + p), w1 = _mm512_loadu_ps(w[1] + p), w2 = _mm512_loadu_ps(w[2] + p),
                   w3 = _mm512_loadu_ps(w[3] + p);
      for (int i = 0; i < M; i++) {
        const __m512 a = _mm512_loadu_ps(g.a + i * g.ars + p);
        acc[i][0] = _mm512_fmadd_ps(a, w0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(a, w1, acc[i][1]);
        acc[i][2] = _mm512_fmadd_ps(a, w2, acc[i][2]);
        acc[i][3] = _mm512_fmadd_ps(a, w3, acc[i][3]);
      }
    }
    if (kfull < g.k) {
      __m512 wv[4];
      for (int q = 0; q < 4; q++) wv[q] = _mm512_maskz_loadu_ps(ktail, w[q] + kfull);
      for (int i = 0; i < M; i++) {
        const __m512 a = _mm512_maskz_loadu_ps(ktail, g.a + i * g.ars + kfull);
        for (int q = 0; q < 4; q++) acc[i][q] = _mm512_fmadd_ps(a, wv[q], acc[i][q]);
      }
    }
    for (int i = 0; i < M; i++)
      for (int q = 0; q < cols; q++) {
        float* cp = g.c + i * g.ldc + j + q;
        const float r = lane_sum(acc[i][q]);
        *cp = g.beta != 0 ? g.beta * *cp + r : r;
      }
  }
}

constexpr int row_block(int) { return 4 * kLanes; }
constexpr int dot_block(int) { return 4; }

#include "cmd/common/sgemm_small_driver.hpp"

}  // namespace

bool sgemm_small_avx512(const Sgemm& g) { return small_product(g); }

}  // namespace nnc::gemm
