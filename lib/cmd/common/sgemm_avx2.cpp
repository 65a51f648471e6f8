// sgemm_avx2 (see sgemm.hpp): the blocked scheme of sgemm_avx512.cpp for
// CPUs with AVX2 and FMA only. B is packed, A is read in place.
//
// The kernel computes a 6 x 16 tile of C (6 rows, NV = 2 vectors of 8
// columns; NV = 1 for products at most 8 wide): 12 accumulators, two vectors
// of B and one broadcast of A take 15 of the 16 ymm registers. A's elements
// are broadcast straight from the caller's memory, whatever its strides;
// rows past the edge of A read the last valid row again and are never stored.
// B is packed per block of kKc rows and kNc columns into panels of 8 · NV
// columns (zero past the edge), contiguous per row, from either layout (a
// transposed B goes through 8 x 8 register transposes).
//
// The packing, blocking and threading are sgemm_driver.hpp's.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "cmd/common/sgemm.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {

constexpr int kMr = 6;
constexpr int kLanes = 8;
constexpr int kNv = 2;
// A's 6 x kKc floats (12 KiB) stay in L1 while B's panels stream past;
// kKc = 512 halves C's traffic of kKc = 256 (2048^3 on one AMD EPYC core:
// 97 -> 104 GFLOP/s), and 1024 gained only ~3% more there at the price of
// an L1 that 32 KiB cores lack.
constexpr int kKc = 512;
constexpr int kNc = 1024;  // a multiple of the panel widths

// Lanes [0, valid) set, for maskload / maskstore.
__m256i lane_mask(int valid) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// dst row i (i < 8, rows ds apart) = column i of the 8 x 8 block at src
// (rows ss apart).
void transpose8(const float* src, int64_t ss, float* dst, int64_t ds) {
  const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss), r2 = _mm256_loadu_ps(src + 2 * ss),
               r3 = _mm256_loadu_ps(src + 3 * ss), r4 = _mm256_loadu_ps(src + 4 * ss),
               r5 = _mm256_loadu_ps(src + 5 * ss), r6 = _mm256_loadu_ps(src + 6 * ss),
               r7 = _mm256_loadu_ps(src + 7 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
               t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
               t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  // s0: columns 0 (low half) and 4 (high half) of rows 0..3; s4 the same of rows 4..7.
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee),
               s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee),
               s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee),
               s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_store_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_store_ps(dst + ds, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_store_ps(dst + 2 * ds, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_store_ps(dst + 3 * ds, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_store_ps(dst + 4 * ds, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_store_ps(dst + 5 * ds, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_store_ps(dst + 6 * ds, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_store_ps(dst + 7 * ds, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// One panel of B(p0 + p, jq + j) for a B with adjacent columns (bcs = 1),
// zero past column `cols`.
void pack_rows(const Sgemm& g, int p0, int kc, int jq, int cols, int nv, float* dst) {
  const int nr = 8 * nv;
  if (cols == nr) {
    for (int p = 0; p < kc; p++) {
      const float* src = g.b + (p0 + p) * g.brs + jq;
      for (int z = 0; z < nv; z++) _mm256_store_ps(dst + p * nr + 8 * z, _mm256_loadu_ps(src + 8 * z));
    }
  } else {
    __m256i mask[kNv];
    for (int z = 0; z < nv; z++) mask[z] = lane_mask(cols - 8 * z);
    for (int p = 0; p < kc; p++) {
      const float* src = g.b + (p0 + p) * g.brs + jq;
      for (int z = 0; z < nv; z++) _mm256_store_ps(dst + p * nr + 8 * z, _mm256_maskload_ps(src + 8 * z, mask[z]));
    }
  }
}

// The same for a B with adjacent rows (brs = 1, B(p, j) = b[j · bcs + p]):
// a transpose, by 8 x 8 blocks where 8 columns and 8 rows are there.
void pack_cols(const Sgemm& g, int p0, int kc, int jq, int cols, int nv, float* dst) {
  const int nr = 8 * nv;
  const float* src = g.b + static_cast<int64_t>(jq) * g.bcs + p0;
  const int kfull = kc / 8 * 8;
  for (int z = 0; z < nv; z++) {
    const int valid = std::min(8, cols - 8 * z);
    float* d = dst + 8 * z;
    const float* s = src + static_cast<int64_t>(8 * z) * g.bcs;
    if (valid == 8) {
      for (int p = 0; p < kfull; p += 8) transpose8(s + p, g.bcs, d + p * nr, nr);
      for (int p = kfull; p < kc; p++)
        for (int j = 0; j < 8; j++) d[p * nr + j] = s[j * g.bcs + p];
    } else {
      for (int p = 0; p < kc; p++)
        for (int j = 0; j < 8; j++) d[p * nr + j] = j < valid ? s[j * g.bcs + p] : 0.0f;
    }
  }
}

// C tile (mr <= kMr rows, nr <= 8 · NV columns) = (add ? C : 0) + A panel · B
// panel (8 · NV columns a row). A(r, p) is a[off[r] + p · pa].
template <int NV>
void tile(int kc, const float* a, const int64_t* off, int64_t pa, const float* bp, float* c, int64_t ldc, int mr,
          int nr, bool add) {
  __m256 acc[kMr][NV];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; r++)
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[r][z] = _mm256_setzero_ps();
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3], o4 = off[4], o5 = off[5];
#pragma GCC unroll 4
  for (int p = 0; p < kc; p++) {
    __m256 b[NV];
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) b[z] = _mm256_load_ps(bp + 8 * z);
    __m256 x = _mm256_broadcast_ss(a + o0);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[0][z] = _mm256_fmadd_ps(x, b[z], acc[0][z]);
    x = _mm256_broadcast_ss(a + o1);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[1][z] = _mm256_fmadd_ps(x, b[z], acc[1][z]);
    x = _mm256_broadcast_ss(a + o2);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[2][z] = _mm256_fmadd_ps(x, b[z], acc[2][z]);
    x = _mm256_broadcast_ss(a + o3);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[3][z] = _mm256_fmadd_ps(x, b[z], acc[3][z]);
    x = _mm256_broadcast_ss(a + o4);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[4][z] = _mm256_fmadd_ps(x, b[z], acc[4][z]);
    x = _mm256_broadcast_ss(a + o5);
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) acc[5][z] = _mm256_fmadd_ps(x, b[z], acc[5][z]);
    a += pa;
    bp += 8 * NV;
  }
  if (nr == 8 * NV) {
#pragma GCC unroll 8
    for (int r = 0; r < kMr; r++) {
      if (r >= mr) break;
      float* row = c + r * ldc;
#pragma GCC unroll 2
      for (int z = 0; z < NV; z++) {
        __m256 v = acc[r][z];
        if (add) v = _mm256_add_ps(v, _mm256_loadu_ps(row + 8 * z));
        _mm256_storeu_ps(row + 8 * z, v);
      }
    }
    return;
  }
  __m256i mask[NV];
#pragma GCC unroll 2
  for (int z = 0; z < NV; z++) mask[z] = lane_mask(nr - 8 * z);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; r++) {
    if (r >= mr) break;
    float* row = c + r * ldc;
#pragma GCC unroll 2
    for (int z = 0; z < NV; z++) {
      __m256 v = acc[r][z];
      if (add) v = _mm256_add_ps(v, _mm256_maskload_ps(row + 8 * z, mask[z]));
      _mm256_maskstore_ps(row + 8 * z, mask[z], v);
    }
  }
}
static_assert(kMr == 6, "tile() names its six rows");

// Panels of 16 columns, or of 8 for products at most that wide.
int panel_vectors(int n) { return n <= 8 ? 1 : kNv; }

// Threads split C by whole panels of the width the product uses.
int split_width(int n) { return kLanes * panel_vectors(n); }

#include "cmd/common/sgemm_driver.hpp"

}  // namespace

void sgemm_pack_avx2(const Sgemm& g, float* packed) { pack_whole(g, packed); }

void sgemm_packed_avx2(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc) {
  packed_product(m, n, k, a, lda, packed, c, ldc);
}

void sgemm_avx2(const Sgemm& g) {
  if (!run(g, true)) throw std::bad_alloc();
}

bool sgemm_avx2_serial(const Sgemm& g) { return run(g, false); }

}  // namespace nnc::gemm
