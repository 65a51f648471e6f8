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
// Threads split C into column ranges of whole panels (each packs only its
// own part of B), or into row ranges when there are fewer panels than threads.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "cmd/blas/sgemm.hpp"
#include "cmd/util/transpose_avx512.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {

constexpr int kMr = 6;
constexpr int kNv = 4;
constexpr int kNr = 16 * kNv;
constexpr int kKc = 512;
constexpr int kNc = 512;  // a multiple of the panel widths

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// The calling thread's B block (kKc x kNc floats, 64-byte aligned), kept
// between calls so that a GEMM allocates nothing after the first; NULL when
// out of memory (pool threads cannot throw: the caller reports it).
float* b_block() {
  thread_local std::unique_ptr<float, FreeDeleter> block(
      static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kKc * kNc)));
  return block.get();  // NULL if it could not be allocated
}

__mmask16 lane_mask(int valid) {
  if (valid >= 16) return 0xffff;
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1u);
}

// Pack B rows [p0, p0 + kc) and columns [j0, j0 + nc) into panels of
// nr = 16 · nv columns: panel q holds B(p0 + p, j0 + q · nr + j) at
// out[q · kc · nr + p · nr + j].
void pack_b(const Sgemm& g, int p0, int kc, int j0, int nc, int nv, float* out) {
  const int nr = 16 * nv;
  const int panels = (nc + nr - 1) / nr;
  for (int q = 0; q < panels; q++) {
    float* dst = out + static_cast<int64_t>(q) * kc * nr;
    const int jq = j0 + q * nr;
    const int cols = std::min(nr, j0 + nc - jq);
    if (g.bcs == 1) {
      for (int p = 0; p < kc; p++) {
        const float* src = g.b + (p0 + p) * g.brs + jq;
        for (int z = 0; z < nv; z++) {
          const __mmask16 m = lane_mask(cols - 16 * z);
          _mm512_store_ps(dst + p * nr + 16 * z, _mm512_maskz_loadu_ps(m, src + 16 * z));
        }
      }
    } else if (g.brs == 1) {
      // B(p, j) = b[j · bcs + p]: columns of B are contiguous; a transpose.
      // Lanes past B's last column are never stored to C; zeros there keep
      // an earlier call's values (denormals, NaN) out of the arithmetic.
      if (cols < nr) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(kc) * nr);
      util::transpose_f32_avx512(g.b + static_cast<int64_t>(jq) * g.bcs + p0, g.bcs, cols, kc, dst, nr);
    } else {
      for (int p = 0; p < kc; p++)
        for (int j = 0; j < nr; j++)
          dst[p * nr + j] = j < cols ? g.b[(p0 + p) * g.brs + static_cast<int64_t>(jq + j) * g.bcs] : 0.0f;
    }
  }
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
static_assert(kNc % (16 * kNv) == 0, "blocks of whole panels");

// Panels of 64 columns, or of 16 / 32 for products at most that wide.
int panel_vectors(int n) { return n <= 16 ? 1 : n <= 32 ? 2 : kNv; }

// C rows [ir, ir + mr) x columns [0, nc) (+)= A rows · packed B (kc rows of
// panels of 16 · nv columns); A(r, p) is a[r · ars + p · acs].
void row_panel(int kc, const float* a, int64_t ars, int64_t acs, int mr, const float* bp, int nv, int nc, float* c,
               int64_t ldc, bool add) {
  const int nr = 16 * nv;
  int64_t off[kMr];
  for (int r = 0; r < kMr; r++) off[r] = static_cast<int64_t>(std::min(r, mr - 1)) * ars;
  for (int jr = 0; jr < nc; jr += nr) {
    const float* b = bp + static_cast<int64_t>(jr) * kc;
    const int cols = std::min(nr, nc - jr);
    if (nv == kNv)
      tile<kNv>(kc, a, off, acs, b, c + jr, ldc, mr, cols, add);
    else if (nv == 2)
      tile<2>(kc, a, off, acs, b, c + jr, ldc, mr, cols, add);
    else
      tile<1>(kc, a, off, acs, b, c + jr, ldc, mr, cols, add);
  }
}

// One thread's part: rows [m0, m1) and columns [n0, n1) of C. False when out
// of memory for the B block.
bool part(const Sgemm& g, int m0, int m1, int n0, int n1) {
  float* const bp = b_block();
  if (!bp) return false;
  const int nv = panel_vectors(g.n);
  for (int jc = n0; jc < n1; jc += kNc) {
    const int nc = std::min(kNc, n1 - jc);
    for (int pc = 0; pc < g.k; pc += kKc) {
      const int kc = std::min(kKc, g.k - pc);
      pack_b(g, pc, kc, jc, nc, nv, bp);
      for (int ir = m0; ir < m1; ir += kMr)
        row_panel(kc, g.a + ir * g.ars + pc * g.acs, g.ars, g.acs, std::min(kMr, m1 - ir), bp, nv, nc,
                  g.c + ir * g.ldc + jc, g.ldc, pc > 0 || g.beta != 0.0f);
    }
  }
  return true;
}

// False when out of memory (C is then incomplete).
bool run(const Sgemm& g, bool may_thread) {
  if (g.m <= 0 || g.n <= 0) return true;
  if (g.k <= 0) {
    for (int i = 0; i < g.m; i++)
      for (int j = 0; j < g.n; j++) g.c[i * g.ldc + j] = g.beta == 0.0f ? 0.0f : g.beta * g.c[i * g.ldc + j];
    return true;
  }
  if (g.beta != 0.0f && g.beta != 1.0f) {
    for (int i = 0; i < g.m; i++)
      for (int j = 0; j < g.n; j++) g.c[i * g.ldc + j] *= g.beta;
    Sgemm h = g;
    h.beta = 1.0f;
    return run(h, may_thread);
  }
  // Threads only when each gets at least ~1 MFLOP.
  const double flops = 2.0 * g.m * g.n * static_cast<double>(g.k);
  const int threads =
      may_thread ? static_cast<int>(std::min<double>(static_cast<double>(thread_count()), std::max(1.0, flops / 1e6)))
                 : 1;
  const int panels = (g.n + kNr - 1) / kNr;
  const int row_panels = (g.m + kMr - 1) / kMr;
  if (threads <= 1) return part(g, 0, g.m, 0, g.n);
  std::atomic<bool> ok{true};
  if (panels >= threads) {
    parallel_for(threads, 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; t++) {
        const int p0 = static_cast<int>(panels * t / threads), p1 = static_cast<int>(panels * (t + 1) / threads);
        if (!part(g, 0, g.m, p0 * kNr, std::min(g.n, p1 * kNr))) ok = false;
      }
    });
  } else {
    const int parts = std::min(threads, row_panels);
    parallel_for(parts, 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; t++) {
        const int r0 = static_cast<int>(row_panels * t / parts), r1 = static_cast<int>(row_panels * (t + 1) / parts);
        if (!part(g, r0 * kMr, std::min(g.m, r1 * kMr), 0, g.n)) ok = false;
      }
    });
  }
  return ok;
}

}  // namespace

int64_t sgemm_packed_floats(int k, int n) {
  const int nr = 16 * panel_vectors(n);
  return static_cast<int64_t>((n + nr - 1) / nr) * nr * k;
}

void sgemm_pack_avx512(const Sgemm& g, float* packed) { pack_b(g, 0, g.k, 0, g.n, panel_vectors(g.n), packed); }

void sgemm_packed_avx512(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c,
                         int64_t ldc) {
  for (int ir = 0; ir < m; ir += kMr)
    row_panel(k, a + ir * lda, lda, 1, std::min(kMr, m - ir), packed, panel_vectors(n), n, c + ir * ldc, ldc, false);
}

void sgemm_avx512(const Sgemm& g) {
  if (!run(g, true)) throw std::bad_alloc();
}

bool sgemm_avx512_serial(const Sgemm& g) { return run(g, false); }

}  // namespace nnc::gemm
