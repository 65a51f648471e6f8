// Products of 1 to 5 rows on AVX2 + FMA (sgemm.hpp, sgemm_small_avx2): the
// scheme of sgemm_small_avx512.cpp with vectors of 8 and blocks sized for 16
// ymm registers. A batch-1 or small-batch fully connected layer is
// memory-bound on B, so B is read once, in place, with no packing; each
// vector of B loaded serves every row of A.
//
// - rows of B adjacent (bcs = 1): blocks of V vectors of C's columns
//   (M · V accumulators, V = 4 for up to 2 rows, 3 for 3, 2 for 4 and 5),
//   one FMA per row of A for each vector of B, k outer;
// - columns of B adjacent (brs = 1, B = wᵀ) with A's rows adjacent: Q columns
//   of C at a time (M · Q accumulators: Q = 8, 4, 4, 3, 2 for M = 1..5), each
//   a dot product along k of a row of A with a row of w, a horizontal sum at
//   the end.
// The threading and the entry checks are sgemm_small_driver.hpp's.
#include <immintrin.h>

#include <algorithm>

#include "cmd/common/sgemm.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {

constexpr int kLanes = 8;

__m256i lane_mask(int valid) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float lane_sum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

constexpr int row_vectors(int m) { return m <= 2 ? 4 : m == 3 ? 3 : 2; }
constexpr int dot_columns(int m) { return m == 1 ? 8 : m <= 3 ? 4 : m == 4 ? 3 : 2; }

// C[:, j0, j1) for B's rows adjacent, V vectors of columns at a time.
template <int M>
void rows_adjacent(const Sgemm& g, int j0, int j1) {
  constexpr int V = row_vectors(M);
  for (int j = j0; j < j1; j += V * kLanes) {
    const int width = std::min(V * kLanes, j1 - j);
    __m256 acc[M][V];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++)
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) acc[i][v] = _mm256_setzero_ps();
    if (width == V * kLanes) {
      for (int p = 0; p < g.k; p++) {
        const float* bp = g.b + p * g.brs + j;
        // B's rows are far apart: the hardware prefetcher alone left this
        // loop at ~47 GB/s from L3, asking 8 rows ahead gives ~60.
        const float* ahead = g.b + std::min(p + 8, g.k - 1) * g.brs + j;
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + V * kLanes - 1), _MM_HINT_T0);
        __m256 bv[V];
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) bv[v] = _mm256_loadu_ps(bp + v * kLanes);
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) {
          const __m256 a = _mm256_broadcast_ss(g.a + i * g.ars + p * g.acs);
#pragma GCC unroll 4
          for (int v = 0; v < V; v++) acc[i][v] = _mm256_fmadd_ps(a, bv[v], acc[i][v]);
        }
      }
    } else {
      __m256i mask[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) mask[v] = lane_mask(width - v * kLanes);
      for (int p = 0; p < g.k; p++) {
        const float* bp = g.b + p * g.brs + j;
        __m256 bv[V];
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) bv[v] = _mm256_maskload_ps(bp + v * kLanes, mask[v]);
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) {
          const __m256 a = _mm256_broadcast_ss(g.a + i * g.ars + p * g.acs);
#pragma GCC unroll 4
          for (int v = 0; v < V; v++) acc[i][v] = _mm256_fmadd_ps(a, bv[v], acc[i][v]);
        }
      }
    }
    for (int v = 0; v < V; v++) {
      if (v * kLanes >= width) break;
      const __m256i mask = lane_mask(width - v * kLanes);
      for (int i = 0; i < M; i++) {
        float* cp = g.c + i * g.ldc + j + v * kLanes;
        __m256 r = acc[i][v];
        if (g.beta != 0) r = _mm256_fmadd_ps(_mm256_set1_ps(g.beta), _mm256_maskload_ps(cp, mask), r);
        _mm256_maskstore_ps(cp, mask, r);
      }
    }
  }
}

// C[:, j0, j1) for B's columns adjacent (B(p, j) = b[p + j * bcs]) and A's
// rows adjacent: dot products along k, Q columns of C at a time.
template <int M>
void columns_adjacent(const Sgemm& g, int j0, int j1) {
  constexpr int Q = dot_columns(M);
  const int kfull = g.k / kLanes * kLanes;
  const __m256i ktail = lane_mask(g.k - kfull);
  for (int j = j0; j < j1; j += Q) {
    const int cols = std::min(Q, j1 - j);
    const float* w[Q];
    for (int q = 0; q < Q; q++) w[q] = g.b + static_cast<int64_t>(j + std::min(q, cols - 1)) * g.bcs;
    __m256 acc[M][Q];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++)
#pragma GCC unroll 8
      for (int q = 0; q < Q; q++) acc[i][q] = _mm256_setzero_ps();
    for (int p = 0; p < kfull; p += kLanes) {
      __m256 a[M];
#pragma GCC unroll 8
      for (int i = 0; i < M; i++) a[i] = _mm256_loadu_ps(g.a + i * g.ars + p);
#pragma GCC unroll 8
      for (int q = 0; q < Q; q++) {
        const __m256 wq = _mm256_loadu_ps(w[q] + p);
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) acc[i][q] = _mm256_fmadd_ps(a[i], wq, acc[i][q]);
      }
    }
    if (kfull < g.k) {
      for (int q = 0; q < Q; q++) {
        const __m256 wq = _mm256_maskload_ps(w[q] + kfull, ktail);
        for (int i = 0; i < M; i++)
          acc[i][q] = _mm256_fmadd_ps(_mm256_maskload_ps(g.a + i * g.ars + kfull, ktail), wq, acc[i][q]);
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

constexpr int row_block(int m) { return row_vectors(m) * kLanes; }
constexpr int dot_block(int m) { return dot_columns(m); }

#include "cmd/common/sgemm_small_driver.hpp"

}  // namespace

bool sgemm_small_avx2(const Sgemm& g) { return small_product(g); }

}  // namespace nnc::gemm
