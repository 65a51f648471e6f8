// The small-product sgemm's driver (sgemm.hpp, sgemm_small_*), written once
// and included by sgemm_small_avx2.cpp and sgemm_small_avx512.cpp *inside
// their own anonymous namespace* after they define the kernels:
//
//   rows_adjacent<M>(g, j0, j1)     C[:, j0, j1) for B's rows adjacent
//   columns_adjacent<M>(g, j0, j1)  the same for B's columns adjacent and
//                                   A's rows adjacent
//   row_block(M), dot_block(M)      the columns each kernel takes at a time
//
// Products of 1 to kMaxRows rows; threads take ranges of C's columns.

constexpr int kMaxRows = 5;

template <int M>
void run(const Sgemm& g, bool by_rows) {
  // Column ranges per thread: whole blocks, and enough work per range to be
  // worth a thread.
  const int block = by_rows ? row_block(M) : dot_block(M);
  const int blocks = (g.n + block - 1) / block;
  const int64_t work = int64_t{M} * g.n * g.k;
  const size_t grain =
      static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 17) / std::max<int64_t>(1, work / blocks)));
  parallel_for(static_cast<size_t>(blocks), grain, [&](size_t b0, size_t b1) {
    const int j0 = static_cast<int>(b0) * block, j1 = std::min(g.n, static_cast<int>(b1) * block);
    if (by_rows)
      rows_adjacent<M>(g, j0, j1);
    else
      columns_adjacent<M>(g, j0, j1);
  });
}

// The body of sgemm_small_*: false, doing nothing, for shapes and strides
// the kernels do not take.
bool small_product(const Sgemm& g) {
  if (g.m < 1 || g.m > kMaxRows) return false;
  bool by_rows;
  if (g.bcs == 1)
    by_rows = true;
  else if (g.brs == 1 && g.acs == 1)
    by_rows = false;
  else
    return false;
  if (g.n == 0) return true;
  if (g.k == 0) {  // C = beta C
    for (int i = 0; i < g.m; i++)
      for (int j = 0; j < g.n; j++) g.c[i * g.ldc + j] = g.beta != 0 ? g.beta * g.c[i * g.ldc + j] : 0.0f;
    return true;
  }
  switch (g.m) {
    case 1: run<1>(g, by_rows); break;
    case 2: run<2>(g, by_rows); break;
    case 3: run<3>(g, by_rows); break;
    case 4: run<4>(g, by_rows); break;
    default: run<5>(g, by_rows); break;
  }
  return true;
}
