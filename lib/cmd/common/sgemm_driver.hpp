// The blocked sgemm's driver (see sgemm.hpp), written once and included by
// each ISA file (sgemm_avx2.cpp, sgemm_avx512.cpp) *inside its own anonymous
// namespace* after it defines what differs per instruction set:
//
//   kMr, kLanes, kNv, kKc, kNc   tile rows, floats per vector, vectors per
//                                widest panel, B block rows and columns
//   tile<NV>(kc, a, off, pa, bp, c, ldc, mr, nr, add)
//                                the register kernel: C tile (mr <= kMr rows,
//                                nr <= kLanes · NV columns) = (add ? C : 0)
//                                + A panel · B panel; A(r, p) is
//                                a[off[r] + p · pa]
//   panel_vectors(n)             vectors per panel for a product n wide
//   split_width(n)               the column granule threads split C by
//   pack_rows(g, p0, kc, jq, cols, nv, dst)   one panel of a B with adjacent
//   pack_cols(g, p0, kc, jq, cols, nv, dst)   columns (bcs = 1) / adjacent
//                                rows (brs = 1), zero past column `cols`
//
// B is packed per block of kKc rows and kNc columns into panels of
// kLanes · nv columns, contiguous per row; A is read in place. Threads split
// C into column ranges of whole panels (each packs only its own part of B),
// or into row ranges when there are fewer panels than threads.

constexpr int kNr = kLanes * kNv;
static_assert(kNc % kNr == 0, "blocks of whole panels");

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// The calling thread's B block (kKc x kNc floats, 64-byte aligned), kept
// between calls so that a GEMM allocates nothing after the first; NULL when
// out of memory (pool threads cannot throw: the caller reports it).
float* b_block() {
  thread_local std::unique_ptr<float, FreeDeleter> block(
      static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kKc * kNc)));
  return block.get();
}

// Pack B rows [p0, p0 + kc) and columns [j0, j0 + nc) into panels of
// nr = kLanes · nv columns: panel q holds B(p0 + p, j0 + q · nr + j) at
// out[q · kc · nr + p · nr + j]. Lanes past B's last column are never stored
// to C; zeros there keep an earlier call's values (denormals, NaN) out of
// the arithmetic.
void pack_b(const Sgemm& g, int p0, int kc, int j0, int nc, int nv, float* out) {
  const int nr = kLanes * nv;
  const int panels = (nc + nr - 1) / nr;
  for (int q = 0; q < panels; q++) {
    float* dst = out + static_cast<int64_t>(q) * kc * nr;
    const int jq = j0 + q * nr;
    const int cols = std::min(nr, j0 + nc - jq);
    if (g.bcs == 1) {
      pack_rows(g, p0, kc, jq, cols, nv, dst);
    } else if (g.brs == 1) {
      pack_cols(g, p0, kc, jq, cols, nv, dst);
    } else {
      for (int p = 0; p < kc; p++)
        for (int j = 0; j < nr; j++)
          dst[p * nr + j] = j < cols ? g.b[(p0 + p) * g.brs + static_cast<int64_t>(jq + j) * g.bcs] : 0.0f;
    }
  }
}

// C rows [ir, ir + mr) x columns [0, nc) (+)= A rows · packed B (kc rows of
// panels of kLanes · nv columns); A(r, p) is a[r · ars + p · acs].
void row_panel(int kc, const float* a, int64_t ars, int64_t acs, int mr, const float* bp, int nv, int nc, float* c,
               int64_t ldc, bool add) {
  const int nr = kLanes * nv;
  int64_t off[kMr];
  for (int r = 0; r < kMr; r++) off[r] = static_cast<int64_t>(std::min(r, mr - 1)) * ars;
  for (int jr = 0; jr < nc; jr += nr) {
    const float* b = bp + static_cast<int64_t>(jr) * kc;
    const int cols = std::min(nr, nc - jr);
    if (nv == kNv)
      tile<kNv>(kc, a, off, acs, b, c + jr, ldc, mr, cols, add);
    else if (kNv > 2 && nv == 2)
      tile<(kNv > 2 ? 2 : 1)>(kc, a, off, acs, b, c + jr, ldc, mr, cols, add);
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
  if (threads <= 1) return part(g, 0, g.m, 0, g.n);
  const int nr = split_width(g.n);
  const int panels = (g.n + nr - 1) / nr;
  const int row_panels = (g.m + kMr - 1) / kMr;
  std::atomic<bool> ok{true};
  if (panels >= threads) {
    parallel_for(threads, 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; t++) {
        const int p0 = static_cast<int>(panels * t / threads), p1 = static_cast<int>(panels * (t + 1) / threads);
        if (!part(g, 0, g.m, p0 * nr, std::min(g.n, p1 * nr))) ok = false;
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

// B packed whole (k x n) for sgemm_pack_*, and C = A · B from it for a
// row-major A (rows lda apart), on the calling thread.
void pack_whole(const Sgemm& g, float* packed) { pack_b(g, 0, g.k, 0, g.n, panel_vectors(g.n), packed); }

void packed_product(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc) {
  for (int ir = 0; ir < m; ir += kMr)
    row_panel(k, a + ir * lda, lda, 1, std::min(kMr, m - ir), packed, panel_vectors(n), n, c + ir * ldc, ldc, false);
}
