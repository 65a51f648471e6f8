// sgemm_avx512 (see sgemm.hpp): B is packed, A is read in place.
//
// The kernel computes an MR x NR tile of C (MR = 6 rows, NV vectors of 16
// columns: 4, or 1 / 2 for products at most 16 / 32 wide) with MR · NV
// accumulators. A's elements are broadcast straight from
// the caller's memory, whatever its strides: a transposed A needs no packing,
// and a row-major A's MR rows stream through L1 while the packed B panel comes
// from L2. Rows past the edge of A read the last valid row again and are never
// stored, so A needs no padding either. B is packed per block of kKc rows and
// kNc columns into panels of NR columns (zero past the edge), contiguous per
// row, from either layout (a transposed B goes through 16 x 16 register
// transposes).
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
#include "cmd/common/transpose_avx512.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {

constexpr int kMr = 6;
constexpr int kLanes = 16;
constexpr int kNv = 4;
constexpr int kKc = 512;
constexpr int kNc = 512;  // a multiple of the panel widths

__mmask16 lane_mask(int valid) {
  if (valid >= 16) return 0xffff;
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1u);
}

// One panel of B(p0 + p, jq + j) for a B with adjacent columns (bcs = 1),
// zero past column `cols`.
void pack_rows(const Sgemm& g, int p0, int kc, int jq, int cols, int nv, float* dst) {
  const int nr = 16 * nv;
  for (int p = 0; p < kc; p++) {
    const float* src = g.b + (p0 + p) * g.brs + jq;
    for (int z = 0; z < nv; z++) {
      const __mmask16 m = lane_mask(cols - 16 * z);
      _mm512_store_ps(dst + p * nr + 16 * z, _mm512_maskz_loadu_ps(m, src + 16 * z));
    }
  }
}

// The same for a B with adjacent rows (brs = 1, B(p, j) = b[j · bcs + p]):
// a transpose.
void pack_cols(const Sgemm& g, int p0, int kc, int jq, int cols, int nv, float* dst) {
  const int nr = 16 * nv;
  if (cols < nr) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(kc) * nr);
  transpose_f32_avx512(g.b + static_cast<int64_t>(jq) * g.bcs + p0, g.bcs, cols, kc, dst, nr);
}

// C tile (mr <= kMr rows, nr <= 16 · NV columns) = (add ? C : 0) + A panel · B
// panel (16 · NV columns a row). A(r, p) is a[off[r] + p · pa].
template <int NV>
void tile(int kc, const float* a, const int64_t* off, int64_t pa, const float* bp, float* c, int64_t ldc, int mr,
          int nr, bool add) {
  __m512 acc[kMr][NV];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; r++)
#pragma GCC unroll 4
    for (int z = 0; z < NV; z++) acc[r][z] = _mm512_setzero_ps();
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3], o4 = off[4], o5 = off[5];
  for (int p = 0; p < kc; p++) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int z = 0; z < NV; z++) b[z] = _mm512_load_ps(bp + 16 * z);
    const __m512 a0 = _mm512_set1_ps(a[o0]), a1 = _mm512_set1_ps(a[o1]), a2 = _mm512_set1_ps(a[o2]);
#pragma GCC unroll 4
    for (int z = 0; z < NV; z++) {
      acc[0][z] = _mm512_fmadd_ps(a0, b[z], acc[0][z]);
      acc[1][z] = _mm512_fmadd_ps(a1, b[z], acc[1][z]);
      acc[2][z] = _mm512_fmadd_ps(a2, b[z], acc[2][z]);
    }
    const __m512 a3 = _mm512_set1_ps(a[o3]), a4 = _mm512_set1_ps(a[o4]), a5 = _mm512_set1_ps(a[o5]);
#pragma GCC unroll 4
    for (int z = 0; z < NV; z++) {
      acc[3][z] = _mm512_fmadd_ps(a3, b[z], acc[3][z]);
      acc[4][z] = _mm512_fmadd_ps(a4, b[z], acc[4][z]);
      acc[5][z] = _mm512_fmadd_ps(a5, b[z], acc[5][z]);
    }
    a += pa;
    bp += 16 * NV;
  }
  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int z = 0; z < NV; z++) mask[z] = lane_mask(nr - 16 * z);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; r++) {
    if (r >= mr) break;
    float* row = c + r * ldc;
#pragma GCC unroll 4
    for (int z = 0; z < NV; z++) {
      __m512 v = acc[r][z];
      if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[z], row + 16 * z));
      _mm512_mask_storeu_ps(row + 16 * z, mask[z], v);
    }
  }
}
static_assert(kMr == 6, "tile() names its six rows");

// Panels of 64 columns, or of 16 / 32 for products at most that wide.
int panel_vectors(int n) { return n <= 16 ? 1 : n <= 32 ? 2 : kNv; }

// Threads split C by whole widest panels (64 columns) whatever the width
// the product uses.
int split_width(int) { return kLanes * kNv; }

#include "cmd/common/sgemm_driver.hpp"

}  // namespace

int64_t sgemm_packed_floats(int k, int n) {
  const int nr = 16 * panel_vectors(n);
  return static_cast<int64_t>((n + nr - 1) / nr) * nr * k;
}

void sgemm_pack_avx512(const Sgemm& g, float* packed) { pack_whole(g, packed); }

void sgemm_packed_avx512(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                         int64_t ldc) {
  packed_product(m, n, k, a, lda, packed, c, ldc);
}

void sgemm_avx512(const Sgemm& g) {
  if (!run(g, true)) throw std::bad_alloc();
}

bool sgemm_avx512_serial(const Sgemm& g) { return run(g, false); }

}  // namespace nnc::gemm
