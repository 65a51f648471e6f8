// The row kernels' choice (gpu::choose_norm_rows / choose_norm_cols,
// cmd/common/gpu_norm.hpp) on the CPU: which calls the LAYER_NORM / RMSNORM
// row kernels take (the last axis packed in every row operand, scale / bias
// the same for every row) and which go the general way (another axis, a
// strided row, a scale that varies by row, rows too long, 64F); the vector
// test (every row operand's rows 16-byte aligned; one row: its stride never
// counts); the geometry (a warp a row up to 128 chunks, else a block of
// 128..512 threads, <= 4 chunks a thread, covering the row); and the column
// kernels' slices covering every row exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cmd/common/gpu_norm.hpp"

namespace {

using namespace nnc::gpu;

// x [rows, cols] (row stride xs), y like x (stride ys), scale / bias per
// column (stride along rows sr: 0 normally), statistics per row; base
// addresses as given.
NormRows choose(int rows, int cols, int64_t xs, int64_t ys, int64_t sr, int es, uintptr_t xa = 0, uintptr_t ya = 0,
                bool scale = true) {
  const int dim[2] = {rows, cols};
  const int64_t sx[2] = {xs, 1}, sy[2] = {ys, 1}, ss[2] = {sr, 1}, sm[2] = {1, 0};
  const int64_t* sp[kNormOperands] = {sx, sy, nullptr, nullptr, scale ? ss : nullptr, scale ? ss : nullptr, sm, sm};
  bool present[kNormOperands] = {true, true, false, false, scale, scale, true, true};
  uintptr_t addr[kNormOperands] = {xa, ya, 0, 0, 0, 0, 4, 4};
  NormPlan p;
  EXPECT_TRUE(make_norm_plan(p, dim, 2, sp, 2u, sr ? 3u : 2u));
  return choose_norm_rows(p, present, addr, es);
}

TEST(GpuNormRows, PackedRowsTakeTheRowKernels) {
  for (int es : {4, 2})
    for (int cols : {1, 7, 31, 32, 33, 100, 257, 1024, 1031, 4100, 8192}) {
      const NormRows r = choose(37, cols, cols, cols, 0, es);
      ASSERT_TRUE(r.fast) << cols;
      const int v = 16 / es;
      const int64_t chunks = (cols + v - 1) / v;
      EXPECT_EQ(r.rows, 37);
      EXPECT_EQ(r.cols, cols);
      EXPECT_EQ(r.vec_width, v);
      EXPECT_EQ(r.vector, cols % v == 0) << cols;  // rows cols apart: aligned when whole chunks
      EXPECT_GE(static_cast<int64_t>(r.threads_per_row) * r.chunks, chunks) << cols;
      EXPECT_TRUE(r.chunks == 1 || r.chunks == 2 || r.chunks == 4);
      if (r.chunks > 1) EXPECT_LT(static_cast<int64_t>(r.threads_per_row) * (r.chunks / 2), chunks) << "too many";
      if (chunks <= 128) {
        EXPECT_EQ(r.threads_per_row, 32) << cols;
        EXPECT_EQ(r.rows_per_block, kNormRowWarps);
        EXPECT_EQ(r.blocks, (37 + kNormRowWarps - 1) / kNormRowWarps);
      } else {
        EXPECT_GE(r.threads_per_row, 128) << cols;
        EXPECT_LE(r.threads_per_row, kNormRowMaxThreads) << cols;
        EXPECT_EQ(r.rows_per_block, 1);
        EXPECT_EQ(r.blocks, 37);
      }
    }
}

TEST(GpuNormRows, AlignmentDecidesTheVectorLoads) {
  // One row: aligned start, any length (the tail goes element by element).
  EXPECT_TRUE(choose(1, 7, 7, 7, 0, 4).vector);
  EXPECT_TRUE(choose(1, 7, 7, 7, 0, 2).vector);
  // A start one element in (a view): declined, and for y alone too.
  EXPECT_FALSE(choose(1, 8, 8, 8, 0, 4, 4).vector);
  EXPECT_FALSE(choose(3, 8, 8, 8, 0, 4, 0, 4).vector);
  EXPECT_TRUE(choose(3, 8, 8, 8, 0, 4, 16, 32).vector);
  // Rows 10 apart (a window of a wider tensor): 40 bytes, not a multiple of 16.
  EXPECT_FALSE(choose(3, 8, 10, 8, 0, 4).vector);
  EXPECT_TRUE(choose(3, 8, 12, 8, 0, 4).vector);   // 48 bytes: still aligned
  EXPECT_TRUE(choose(3, 8, 16, 8, 0, 2).vector);   // halves: 32 bytes
  EXPECT_FALSE(choose(3, 8, 12, 8, 0, 2).vector);  // 24 bytes
  EXPECT_TRUE(choose(3, 8, 12, 8, 0, 4).fast);
}

TEST(GpuNormRows, OtherLayoutsGoTheGeneralWay) {
  EXPECT_FALSE(choose(37, 8192 + 1, 8193, 8193, 0, 4).fast);  // past 512 x 4 chunks of 32F
  EXPECT_TRUE(choose(3, 16384, 16384, 16384, 0, 2).fast);     // 16F: 512 x 4 chunks of 8
  EXPECT_FALSE(choose(3, 16385, 16385, 16385, 0, 2).fast);
  EXPECT_FALSE(choose(3, 8, 8, 8, 0, 8).fast);  // 64F
  EXPECT_FALSE(choose(3, 8, 8, 8, 8, 4).fast);  // scale varies by row
  // The normalised axis not the innermost: x [8, 3] over axis 0.
  {
    const int dim[2] = {8, 3};
    const int64_t sx[2] = {3, 1}, sm[2] = {0, 1};
    const int64_t* sp[kNormOperands] = {sx, sx, nullptr, nullptr, nullptr, nullptr, sm, sm};
    bool present[kNormOperands] = {true, true, false, false, false, false, true, true};
    uintptr_t addr[kNormOperands] = {};
    NormPlan p;
    ASSERT_TRUE(make_norm_plan(p, dim, 2, sp, 1u, 1u));
    EXPECT_FALSE(choose_norm_rows(p, present, addr, 4).fast);
  }
  // Two normalised axes of a view whose rows are not packed: [3, 4, 5] over
  // axes 1, 2 with x strides (42, 7, 1).
  {
    const int dim[3] = {3, 4, 5};
    const int64_t sx[3] = {42, 7, 1}, sy[3] = {20, 5, 1}, sm[3] = {1, 0, 0};
    const int64_t* sp[kNormOperands] = {sx, sy, nullptr, nullptr, nullptr, nullptr, sm, sm};
    bool present[kNormOperands] = {true, true, false, false, false, false, true, true};
    uintptr_t addr[kNormOperands] = {};
    NormPlan p;
    ASSERT_TRUE(make_norm_plan(p, dim, 3, sp, 6u, 6u));
    EXPECT_FALSE(choose_norm_rows(p, present, addr, 4).fast);
    // Packed, the two axes merge into one row of 20: the row kernels.
    const int64_t* sq[kNormOperands] = {sy, sy, nullptr, nullptr, nullptr, nullptr, sm, sm};
    ASSERT_TRUE(make_norm_plan(p, dim, 3, sq, 6u, 6u));
    const NormRows r = choose_norm_rows(p, present, addr, 4);
    EXPECT_TRUE(r.fast);
    EXPECT_EQ(r.cols, 20);
    EXPECT_EQ(r.rows, 3);
  }
}

TEST(GpuNormRows, ColumnSlicesCoverEveryRowOnce) {
  for (int64_t rows : {1, 3, 31, 32, 33, 37, 1000, 8192, 4096, 100000})
    for (int64_t cols : {1, 33, 1024, 4096}) {
      const NormCols c = choose_norm_cols(rows, cols);
      EXPECT_EQ(c.strips, (cols + kNormColWidth - 1) / kNormColWidth);
      ASSERT_GE(c.splits, 1);
      EXPECT_LE(c.splits, kMaxBlocks);
      EXPECT_GE(c.rows_per_split * c.splits, rows) << rows << " " << cols;
      EXPECT_LT(c.rows_per_split * (c.splits - 1), rows) << "an empty slice";
    }
  EXPECT_EQ(choose_norm_cols(0, 5).splits, 0);
}

}  // namespace
