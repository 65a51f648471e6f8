// gpu_flash.hpp on the CPU: the flash attention kernels' geometry (every
// query row and every key covered by exactly one work item, the
// shared-memory layouts disjoint and within the 48 KiB a launch gets without
// an opt-in, the register columns cover the head), the eligibility rules and
// NNC_GPU_ATTN_FLASH, and the kernels' tiled algorithm (online softmax over
// key tiles; the FlashAttention-2 backward from lse and delta = dO . O, dk /
// dv per key tile over the query tiles, dq per query tile over the key tiles)
// replayed over host buffers with the header's own functions against
// SCALED_DOT_PRODUCT_ATTENTION on CPU_REF (double): o, lse, dq, dk, dv on odd
// shapes, causal (also Sq > Sk: rows without keys), masks with -inf entries,
// fewer kv heads, 3-d operands and views, with the geometry's tiles and with
// other tile sizes (the result must not depend on the tiling).
#include "cmd/common/gpu_flash.hpp"
#include "cmd/common/gpu_flash_mma.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/attention/attention.hpp"

using namespace cmdtest;
namespace g = nnc::gpu;

namespace {

class GpuFlash : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                   BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;
constexpr float kInf = std::numeric_limits<float>::infinity();

struct HostLd {
  float operator()(const void* p, int64_t o) const { return static_cast<const float*>(p)[o]; }
};

// ---- geometry ----

TEST_F(GpuFlash, GeometryFitsAndIsDisjointForEveryHeadSize) {
  int checked = 0;
  for (int D = 1; D <= g::kFlashMaxHead; D++)
    for (int Dv = 1; Dv <= g::kFlashMaxHead; Dv++) {
      g::FlashGeom x;
      ASSERT_TRUE(g::flash_geometry(D, Dv, g::kFlashShmemLimit, &x)) << D << "/" << Dv;
      // Every column of both heads has a thread: kFlashTpr threads times nc columns.
      ASSERT_GE(x.nc * g::kFlashTpr, std::max(D, Dv));
      ASSERT_TRUE(x.nc == 4 || x.nc == 8 || x.nc == 16 || x.nc == 32);
      // Two rows per group for heads up to 64, one above.
      ASSERT_EQ(x.rows, g::kFlashGroups * (std::max(D, Dv) <= 64 ? 2 : 1)) << D << "/" << Dv;
      ASSERT_EQ(x.rows, g::kFlashGroups * g::flash_rpt(x.nc));
      ASSERT_EQ(x.ks % 2, 1);
      ASSERT_EQ(x.vs % 2, 1);
      ASSERT_GE(x.ks, D);
      ASSERT_GE(x.vs, Dv);
      ASSERT_GE(x.fwd_tile, 4);
      ASSERT_GE(x.dq_tile, 4);
      ASSERT_GE(x.kv_q_tile, 4);
      // The regions, in order, each as big as its tile needs, the total within the limit.
      const std::vector<std::pair<int, int>> fwd = {{x.fwd_q, x.rows * x.ks},
                                                    {x.fwd_k, x.fwd_tile * x.ks},
                                                    {x.fwd_v, x.fwd_tile * x.vs},
                                                    {x.fwd_p, x.rows * x.fwd_ps}};
      const std::vector<std::pair<int, int>> dq = {
          {x.dq_q, x.rows * x.ks},    {x.dq_do, x.rows * x.vs},   {x.dq_l, x.rows},          {x.dq_dl, x.rows},
          {x.dq_k, x.dq_tile * x.ks}, {x.dq_v, x.dq_tile * x.vs}, {x.dq_s, x.rows * x.dq_ps}};
      const std::vector<std::pair<int, int>> kv = {{x.kv_k, g::kFlashKeys * x.ks},  {x.kv_v, g::kFlashKeys * x.vs},
                                                   {x.kv_q, x.kv_q_tile * x.ks},    {x.kv_do, x.kv_q_tile * x.vs},
                                                   {x.kv_l, x.kv_q_tile},           {x.kv_dl, x.kv_q_tile},
                                                   {x.kv_p, x.kv_q_tile * x.kv_ps}, {x.kv_s, x.kv_q_tile * x.kv_ps}};
      for (const auto& [regions, total] :
           {std::make_pair(fwd, x.fwd_floats), std::make_pair(dq, x.dq_floats), std::make_pair(kv, x.kv_floats)}) {
        int at = 0;
        for (const auto& [off, n] : regions) {
          ASSERT_EQ(off, at) << D << "/" << Dv;
          at += n;
        }
        ASSERT_EQ(at, total);
        ASSERT_LE(static_cast<int64_t>(total) * 4, g::kFlashShmemLimit) << D << "/" << Dv;
      }
      // The score tiles' strides leave room for the tile.
      ASSERT_GE(x.fwd_ps, x.fwd_tile);
      ASSERT_GE(x.dq_ps, x.dq_tile);
      ASSERT_GE(x.kv_ps, g::kFlashKeys);
      // The largest tile that fits: doubling it would not.
      if (x.fwd_tile < 64)
        ASSERT_GT(int64_t{g::flash_fwd_floats(D, Dv, 2 * x.fwd_tile, x.rows)} * 4, g::kFlashShmemLimit);
      if (x.dq_tile < 64) ASSERT_GT(int64_t{g::flash_dq_floats(D, Dv, 2 * x.dq_tile, x.rows)} * 4, g::kFlashShmemLimit);
      if (x.kv_q_tile < 64) ASSERT_GT(int64_t{g::flash_kv_floats(D, Dv, 2 * x.kv_q_tile)} * 4, g::kFlashShmemLimit);
      checked++;
    }
  EXPECT_EQ(checked, 256 * 256);
  // Small heads get the largest tiles.
  g::FlashGeom x;
  ASSERT_TRUE(g::flash_geometry(64, 64, g::kFlashShmemLimit, &x));
  EXPECT_EQ(x.fwd_tile, 32);
  EXPECT_EQ(x.nc, 8);
  EXPECT_EQ(x.rows, 32);
  ASSERT_TRUE(g::flash_geometry(24, 16, g::kFlashShmemLimit, &x));
  EXPECT_EQ(x.fwd_tile, 64);
  ASSERT_TRUE(g::flash_geometry(128, 128, g::kFlashShmemLimit, &x));
  EXPECT_EQ(x.rows, 16);
  EXPECT_EQ(x.nc, 16);
  // Out of range, or a limit nothing fits in.
  EXPECT_FALSE(g::flash_geometry(0, 4, g::kFlashShmemLimit, &x));
  EXPECT_FALSE(g::flash_geometry(4, 257, g::kFlashShmemLimit, &x));
  EXPECT_FALSE(g::flash_geometry(257, 4, g::kFlashShmemLimit, &x));
  EXPECT_FALSE(g::flash_geometry(256, 256, 16 << 10, &x));
}

g::AttnShape shape(int B, int Sq, int Sk, int H, int Hk, bool causal) {
  g::AttnShape s;
  s.B = B, s.Sq = Sq, s.Sk = Sk, s.H = H, s.Hk = Hk, s.causal = causal;
  return s;
}

TEST_F(GpuFlash, WorkItemsCoverEveryRowAndKeyOnce) {
  for (const g::AttnShape& s :
       {shape(1, 1, 1, 1, 1, false), shape(2, 37, 130, 3, 1, true), shape(3, 16, 16, 2, 2, false),
        shape(2, 33, 17, 4, 2, true), shape(1, 130, 37, 1, 1, true), shape(2, 15, 1, 6, 3, false)})
    for (const int R : {g::kFlashGroups, 2 * g::kFlashGroups}) {  // the geometry's row tiles
      SCOPED_TRACE(testing::Message() << "B" << s.B << " Sq" << s.Sq << " Sk" << s.Sk << " H" << s.H << "/" << s.Hk
                                      << " rows " << R);
      std::vector<int> rows(static_cast<size_t>(s.B) * s.H * s.Sq, 0), keys(static_cast<size_t>(s.B) * s.Hk * s.Sk, 0);
      const int64_t nr = g::flash_row_tiles(s, R), nk = g::flash_key_tiles(s);
      ASSERT_EQ(nr, int64_t{s.B} * s.H * ((s.Sq + R - 1) / R));
      ASSERT_EQ(nk, int64_t{s.B} * s.Hk * ((s.Sk + g::kFlashKeys - 1) / g::kFlashKeys));
      for (int64_t w = 0; w < nr; w++) {
        int b, h, i0;
        g::flash_row_tile(s, R, w, &b, &h, &i0);
        ASSERT_TRUE(b >= 0 && b < s.B && h >= 0 && h < s.H && i0 >= 0 && i0 < s.Sq && i0 % R == 0);
        // The tile's key range is the union of its rows' ranges.
        int most = 0;
        for (int i = i0; i < std::min(i0 + R, s.Sq); i++) {
          rows[(static_cast<size_t>(b) * s.H + h) * s.Sq + i]++;
          most = std::max(most, g::attn_key_end(s, i));
        }
        EXPECT_EQ(g::flash_tile_key_end(s, i0, R), most);
      }
      for (int64_t w = 0; w < nk; w++) {
        int b, hk, j0;
        g::flash_key_tile(s, w, &b, &hk, &j0);
        ASSERT_TRUE(b >= 0 && b < s.B && hk >= 0 && hk < s.Hk && j0 >= 0 && j0 < s.Sk && j0 % g::kFlashKeys == 0);
        // Every row that sees a key of the tile lies in [query_begin(j0), Sq).
        const int ib = g::flash_tile_query_begin(s, j0);
        for (int j = j0; j < std::min(j0 + g::kFlashKeys, s.Sk); j++) {
          keys[(static_cast<size_t>(b) * s.Hk + hk) * s.Sk + j]++;
          for (int i = 0; i < s.Sq; i++)
            if (g::flash_visible(s, i, j)) ASSERT_GE(i, ib) << "key " << j;
        }
      }
      EXPECT_EQ(std::count(rows.begin(), rows.end(), 1), static_cast<std::ptrdiff_t>(rows.size()));
      EXPECT_EQ(std::count(keys.begin(), keys.end(), 1), static_cast<std::ptrdiff_t>(keys.size()));
      // Causal: the query tiles of a (b, h) come longest rows first.
      if (s.Sq > R) {
        int b, h, first, second;
        g::flash_row_tile(s, R, 0, &b, &h, &first);
        g::flash_row_tile(s, R, 1, &b, &h, &second);
        EXPECT_GT(first, second);
      }
    }
  EXPECT_EQ(g::flash_grid(0), 1);
  EXPECT_EQ(g::flash_grid(77), 77);
  EXPECT_EQ(g::flash_grid(int64_t{1} << 40), g::kFlashMaxGrid);
}

TEST_F(GpuFlash, OnlineSoftmaxSteps) {
  const float ninf = -kInf;
  EXPECT_EQ(g::flash_alpha(ninf, ninf), 0.f);  // nothing accumulated yet
  EXPECT_EQ(g::flash_alpha(ninf, 2.f), 0.f);
  EXPECT_FLOAT_EQ(g::flash_alpha(1.f, 3.f), std::exp(-2.f));
  EXPECT_EQ(g::flash_alpha(3.f, 3.f), 1.f);
  EXPECT_EQ(g::flash_prob(ninf, 1.f), 0.f);
  EXPECT_EQ(g::flash_prob(ninf, ninf), 0.f);
  EXPECT_FLOAT_EQ(g::flash_prob(0.5f, 1.f), std::exp(-0.5f));
  EXPECT_EQ(g::flash_out_scale(0.f), 0.f);
  EXPECT_FLOAT_EQ(g::flash_out_scale(4.f), 0.25f);
  EXPECT_FLOAT_EQ(g::flash_ds(0.5f, 2.f, 0.5f, 0.25f), 0.5f * 1.5f * 0.25f);
}

// ---- eligibility ----

TEST_F(GpuFlash, PlanAndMode) {
  g::AttnPlan a;
  a.datatype = CCV_32F;
  a.s = shape(2, 5, 7, 4, 2, false);
  a.s.D = 64, a.s.Dv = 64;
  g::FlashGeom x;
  std::string why;
  EXPECT_TRUE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why)) << why;
  EXPECT_EQ(x.D, 64);
  a.datatype = CCV_16F;
  EXPECT_TRUE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why)) << why;
  a.datatype = CCV_16BF;
  EXPECT_TRUE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why)) << why;
  a.s.D = 256, a.s.Dv = 256;
  EXPECT_TRUE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why)) << why;
  EXPECT_FALSE(g::flash_plan(a, 8 << 10, &x, &why));
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  a.s.D = 257;
  EXPECT_FALSE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why));
  EXPECT_NE(why.find("256"), std::string::npos) << why;
  a.s.D = 64, a.s.Dv = 300;
  EXPECT_FALSE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why));
  a.s.Dv = 64;
  a.fused = true;
  EXPECT_FALSE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why));
  EXPECT_NE(why.find("fused"), std::string::npos) << why;
  a.fused = false;
  a.datatype = CCV_64F;
  EXPECT_FALSE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why));
  EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
  a.datatype = CCV_32F;
  a.s.Hk = 3;
  EXPECT_FALSE(g::flash_plan(a, g::kFlashShmemLimit, &x, &why));
  EXPECT_EQ(g::flash_mode(nullptr), g::FlashMode::kAuto);
  EXPECT_EQ(g::flash_mode(""), g::FlashMode::kAuto);
  EXPECT_EQ(g::flash_mode("auto"), g::FlashMode::kAuto);
  EXPECT_EQ(g::flash_mode("0"), g::FlashMode::kOff);
  EXPECT_EQ(g::flash_mode("1"), g::FlashMode::kForce);
  EXPECT_TRUE(g::flash_mma_allowed(nullptr));
  EXPECT_TRUE(g::flash_mma_allowed("1"));
  EXPECT_FALSE(g::flash_mma_allowed("0"));
}

// The tensor-core forward's buckets, shared memory and eligibility.
TEST(GpuFlashMma, TensorCoreForwardPlan) {
  EXPECT_EQ(g::flash_mma_bucket(1, 1), 32);
  EXPECT_EQ(g::flash_mma_bucket(32, 8), 32);
  EXPECT_EQ(g::flash_mma_bucket(8, 33), 64);
  EXPECT_EQ(g::flash_mma_bucket(65, 64), 128);
  EXPECT_EQ(g::flash_mma_bucket(128, 128), 128);
  EXPECT_EQ(g::flash_mma_bucket(129, 1), 0);
  for (int b : {32, 64, 128}) {
    EXPECT_EQ(g::flash_mma_stride(b) % 2, 0) << "paired 16-bit loads need 4-byte aligned rows";
    // k and v tiles of kFlashMmaKeys rows (q, kFlashMmaRows rows, is staged in k's).
    EXPECT_EQ(g::flash_mma_shmem_bytes(b), int64_t{2} * g::kFlashMmaKeys * (b + 8) * 2);
    EXPECT_LE(g::flash_mma_shmem_bytes(b), g::kFlashShmemLimit);
  }
  EXPECT_LE(g::kFlashMmaRows, g::kFlashMmaKeys);
  EXPECT_EQ(g::kFlashMmaRows, 16 * g::kFlashMmaThreads / 32) << "a warp serves 16 rows";
  g::AttnPlan a;
  a.s.D = 100, a.s.Dv = 72, a.datatype = CCV_16F;
  int bucket = 0;
  std::string why;
  EXPECT_TRUE(g::flash_mma_forward_plan(a, true, &bucket, &why)) << why;
  EXPECT_EQ(bucket, 128);
  a.datatype = CCV_16BF;
  EXPECT_TRUE(g::flash_mma_forward_plan(a, true, &bucket, &why)) << why;
  EXPECT_FALSE(g::flash_mma_forward_plan(a, false, &bucket, &why));
  EXPECT_NE(why.find("NNC_GPU_ATTN_MMA=0"), std::string::npos) << why;
  a.datatype = CCV_32F;
  EXPECT_FALSE(g::flash_mma_forward_plan(a, true, &bucket, &why));
  EXPECT_NE(why.find("16F or 16BF"), std::string::npos) << why;
  a.datatype = CCV_16F, a.s.Dv = 129;
  EXPECT_FALSE(g::flash_mma_forward_plan(a, true, &bucket, &why));
  EXPECT_NE(why.find("128"), std::string::npos) << why;
  a.s.Dv = 64, a.fused = true;
  EXPECT_FALSE(g::flash_mma_forward_plan(a, true, &bucket, &why));
}

// The key splits: enough blocks, never more splits than tiles or the cap;
// the runs of an item cover its keys in whole tiles, disjoint and in order.
TEST(GpuFlashMma, KeySplitsCoverTheKeysOnce) {
  EXPECT_EQ(g::flash_mma_splits(1000, 64), 1);  // enough items already
  EXPECT_EQ(g::flash_mma_splits(8, 1), 1);      // one tile: nothing to split
  EXPECT_EQ(g::flash_mma_splits(8, 64), g::kFlashMmaMaxSplits);
  EXPECT_EQ(g::flash_mma_splits(8, 3), 3);
  EXPECT_EQ(g::flash_mma_splits(100, 64), 2);  // 200 blocks: a third would make a second wave
  EXPECT_EQ(g::flash_mma_splits(132, 64), 2);
  EXPECT_EQ(g::flash_mma_splits(133, 64), 1);  // over half the blocks already: one wave unsplit
  EXPECT_EQ(g::flash_mma_splits(32, 64), 8);   // decoding B1 H32: 256 blocks, not 288 (one wave of two an SM)
  // Never more blocks than kFlashMmaSplitBlocks once split.
  for (int64_t items = 1; items <= 300; items++) {
    const int sp = g::flash_mma_splits(items, 1000);
    if (sp > 1) {
      EXPECT_LE(items * sp, g::kFlashMmaSplitBlocks) << items;
    }
    EXPECT_GE(sp, 1);
  }
  for (int kend : {0, 1, 63, 64, 65, 130, 257, 1000})
    for (int splits : {1, 2, 3, 5, 16}) {
      int next = 0;
      for (int sp = 0; sp < splits; sp++) {
        int j0, j1;
        g::flash_mma_split_keys(kend, splits, sp, &j0, &j1);
        ASSERT_LE(j0, j1);
        if (j0 == j1) continue;
        EXPECT_EQ(j0, next) << "kend " << kend << " splits " << splits << " run " << sp;
        EXPECT_EQ(j0 % g::kFlashMmaKeys, 0);
        next = j1;
      }
      EXPECT_EQ(next, kend) << "kend " << kend << " splits " << splits;
    }
  g::AttnShape s;
  s.B = 1, s.Sq = 1, s.Sk = 4096, s.H = 8, s.Hk = 8;  // decoding: 8 items of 64 tiles
  EXPECT_EQ(g::flash_mma_splits_for(s, nullptr), g::kFlashMmaMaxSplits);  // 264 / 8 = 33: the cap, 32
  EXPECT_EQ(g::flash_mma_splits_for(s, "3"), 3);
  s.Sq = 512, s.Sk = 512;  // 64 items of 64 rows, 32 of 128: split 4 and 8
  EXPECT_EQ(g::flash_mma_splits_for(s, nullptr, g::kFlashMmaRows), 4);
  EXPECT_EQ(g::flash_mma_splits_for(s, nullptr, g::kFlashMmaWideRows), 8);
  s.Sq = 1, s.Sk = 4096;
  EXPECT_EQ(g::flash_mma_splits_for(s, "0"), 1);
  EXPECT_EQ(g::flash_mma_splits_for(s, "99"), g::kFlashMmaMaxSplits);
  EXPECT_EQ(g::flash_mma_split_floats(s, 1), 0);
  EXPECT_EQ(g::flash_mma_split_floats(s, 4), int64_t{1} * 8 * 1 * 4 * (s.Dv + 2));
}

// The tensor-core forward's work items cover every (b, query head, query row)
// exactly once, each block's pairs from one kv head's group, and each item's
// key end is the largest its rows need.
TEST(GpuFlashMma, WorkItemsCoverEveryRowOnce) {
  struct S {
    int B, Sq, Sk, H, Hk, causal;
  };
  for (const S c : {S{2, 1, 70, 8, 2, 0}, S{1, 37, 53, 4, 2, 1}, S{3, 130, 75, 2, 1, 1}, S{1, 64, 64, 3, 3, 0},
                    S{2, 5, 9, 12, 3, 1}}) {
    g::AttnShape s;
    s.B = c.B, s.Sq = c.Sq, s.Sk = c.Sk, s.H = c.H, s.Hk = c.Hk, s.causal = c.causal;
    const int G = c.H / c.Hk;
    for (const int rows : {g::kFlashMmaRows, g::kFlashMmaWideRows}) {
      std::vector<int> seen(static_cast<size_t>(c.B) * c.H * c.Sq, 0);
      const int64_t items = g::flash_mma_items(s, rows);
      EXPECT_EQ(items, static_cast<int64_t>(c.B) * c.Hk * ((G * c.Sq + rows - 1) / rows));
      for (int64_t w = 0; w < items; w++) {
        int b, hk, v0;
        g::flash_mma_item(s, w, &b, &hk, &v0, rows);
        ASSERT_TRUE(b >= 0 && b < c.B && hk >= 0 && hk < c.Hk && v0 % rows == 0);
        int need = 0;
        for (int r = 0; r < rows; r++) {
          int i, h;
          if (!g::flash_mma_pair(s, hk, v0 + r, &i, &h)) continue;
          ASSERT_TRUE(i >= 0 && i < c.Sq && h / G == hk && g::attn_kv_head(s, h) == hk);
          seen[(static_cast<size_t>(b) * c.H + h) * c.Sq + i]++;
          need = std::max(need, g::attn_key_end(s, i));
        }
        EXPECT_EQ(g::flash_mma_key_end(s, v0, rows), need);
        // A warp's keys (the kernel skips the tiles past them): the most any
        // of its 16 or 32 pairs needs, 0 for a warp without pairs.
        const int wr = rows / 4;
        for (int warp = 0; warp < 4; warp++) {
          int wneed = 0;
          for (int r = 0; r < wr; r++) {
            int i, h;
            if (g::flash_mma_pair(s, hk, v0 + wr * warp + r, &i, &h)) wneed = std::max(wneed, g::attn_key_end(s, i));
          }
          EXPECT_EQ(g::flash_mma_key_end(s, v0 + wr * warp, wr), wneed);
        }
      }
      for (size_t x = 0; x < seen.size(); x++) ASSERT_EQ(seen[x], 1) << "row " << x << " rows " << rows;
    }
  }
}

// The forward's block size: 128 rows only on the cp.async path, without a
// mask, at heads up to 64 by default (for prefill: more than 64 pairs a kv
// head), or where NNC_GPU_ATTN_FWD_ROWS asks; the key steps and shared
// memory of each kernel.
TEST(GpuFlashMma, ForwardBlockRows) {
  g::AttnShape s;
  s.B = 8, s.Sq = 512, s.Sk = 512, s.H = 8, s.Hk = 8, s.D = 64, s.Dv = 64;
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, nullptr), g::kFlashMmaWideRows);
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, "64"), g::kFlashMmaRows);
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, "junk"), g::kFlashMmaWideRows);
  EXPECT_EQ(g::flash_mma_fwd_rows(s, false, "128"), g::kFlashMmaRows);  // the plain loads: 64 rows only
  s.D = s.Dv = 128;
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, nullptr), g::kFlashMmaRows);  // the 128 bucket: 64 unless asked
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, "128"), g::kFlashMmaWideRows);
  s.has_mask = true;
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, "128"), g::kFlashMmaRows);  // a mask: 64 rows
  s.has_mask = false, s.D = s.Dv = 64, s.Sq = 1, s.H = 32, s.Hk = 8;       // decoding, 4 query heads a kv head
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, nullptr), g::kFlashMmaRows);
  s.Sq = 17;  // 68 pairs a kv head
  EXPECT_EQ(g::flash_mma_fwd_rows(s, true, nullptr), g::kFlashMmaWideRows);
  for (int b : {32, 64, 128}) {
    EXPECT_EQ(g::flash_mma_fwd_keys(b, g::kFlashMmaRows), g::kFlashMmaKeys);
    const int wk = g::flash_mma_fwd_keys(b, g::kFlashMmaWideRows);
    EXPECT_EQ(wk, b == 128 ? 16 : 64);
    EXPECT_EQ(g::kFlashMmaKeys % wk, 0) << "split runs are whole steps";
    EXPECT_TRUE(g::flash_mma_q_in_regs(b, g::kFlashMmaRows));
    EXPECT_FALSE(g::flash_mma_q_in_regs(b, g::kFlashMmaWideRows));
    const int64_t ld = b + 8;
    EXPECT_EQ(g::flash_mma_fwd_shmem_bytes(b, g::kFlashMmaRows, false), g::flash_mma_shmem_bytes(b));
    EXPECT_EQ(g::flash_mma_fwd_shmem_bytes(b, g::kFlashMmaRows, true), g::flash_mma_async_shmem_bytes(b));
    // Two buffers of wk-key k and v tiles and q's own 128-row tile.
    const int64_t wide = g::flash_mma_fwd_shmem_bytes(b, g::kFlashMmaWideRows, true);
    EXPECT_EQ(wide, 2 * (4 * wk * ld + 128 * ld));
    EXPECT_LE(2 * (wide + 1024), int64_t{228} << 10) << "two blocks an SM";
    // q staged in the second buffer (64 rows) fits it.
    EXPECT_LE(g::kFlashMmaRows * ld, 2 * g::kFlashMmaKeys * ld);
    // NNC_GPU_ATTN_FWD_KEYS=32: 32-key steps for 64-row blocks at the 128 bucket only.
    EXPECT_EQ(g::flash_mma_fwd_narrow(b, g::kFlashMmaRows, "32"), b == 128);
    EXPECT_FALSE(g::flash_mma_fwd_narrow(b, g::kFlashMmaWideRows, "32"));
    EXPECT_FALSE(g::flash_mma_fwd_narrow(b, g::kFlashMmaRows, nullptr));
    EXPECT_FALSE(g::flash_mma_fwd_narrow(b, g::kFlashMmaRows, "64"));
    const int nk = g::flash_mma_fwd_keys(b, g::kFlashMmaRows, b == 128);
    EXPECT_EQ(nk, b == 128 ? 32 : 64);
    EXPECT_GE(2 * nk, g::kFlashMmaRows) << "q staged in the second buffer's k and v";
    EXPECT_EQ(g::flash_mma_fwd_shmem_bytes(b, g::kFlashMmaRows, true, b == 128), 2 * 4 * nk * ld);
    EXPECT_LE(3 * (g::flash_mma_fwd_shmem_bytes(b, g::kFlashMmaRows, true, b == 128) + 1024), int64_t{228} << 10)
        << "three blocks an SM";
  }
}

// ---- the tiled algorithm against CPU_REF ----

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  Case(int b, int sq, int sk, int h, int hk, int d, int dv) : B(b), Sq(sq), Sk(sk), H(h), Hk(hk), D(d), Dv(dv) {}
  bool causal = false, four_d = true, views = false;
  std::vector<int> mask;
  std::vector<int> shape(int S, int h, int d) const {
    return four_d ? std::vector<int>{B, S, h, d} : std::vector<int>{B, S, d};
  }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    c.info.scaled_dot_product_attention.scale = 1.2f / std::sqrt(static_cast<float>(D));
    c.info.scaled_dot_product_attention.is_causal = causal;
    return c;
  }
};

T make(const std::vector<int>& s, bool view) { return view ? T::view(CCV_32F, s) : T(CCV_32F, s); }
const float* f32(const nnc::attn::View4& v) { return reinterpret_cast<const float*>(v.data); }

// The forward as the kernel runs it: work items of `rows` rows, key
// tiles of `tile` keys up to the item's key end, the online softmax per row.
void replay_forward(const g::AttnPlan& a, const nnc::attn::Problem& p, int rows, int tile, std::vector<float>* O,
                    std::vector<float>* lse) {
  const g::AttnShape& s = a.s;
  const HostLd ld;
  O->assign(static_cast<size_t>(s.B) * s.Sq * s.H * s.Dv, std::nanf(""));
  lse->assign(static_cast<size_t>(s.B) * s.H * s.Sq, std::nanf(""));
  std::vector<float> qrow(s.D), acc(s.Dv), pt(tile);
  for (int64_t w = 0; w < g::flash_row_tiles(s, rows); w++) {
    int b, h, i0;
    g::flash_row_tile(s, rows, w, &b, &h, &i0);
    const int kend = g::flash_tile_key_end(s, i0, rows), hk = g::attn_kv_head(s, h);
    for (int i = i0; i < std::min(i0 + rows, s.Sq); i++) {
      for (int d = 0; d < s.D; d++) qrow[d] = ld(p.q.data, g::attn_off(s.q, b, i, h, d));
      const int rend = g::attn_key_end(s, i);
      float m = g::attn_neg_inf(), l = 0;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int j0 = 0; j0 < kend; j0 += tile) {
        float tmax = g::attn_neg_inf();
        for (int jj = 0; jj < tile; jj++) {
          const int j = j0 + jj;
          pt[jj] = j < rend ? g::attn_score(s, qrow.data(), ld, p.k.data, p.mask.data, b, h, i, j) : g::attn_neg_inf();
          tmax = std::max(tmax, pt[jj]);
        }
        const float m2 = std::max(m, tmax), alpha = g::flash_alpha(m, m2);
        float sum = 0;
        for (int jj = 0; jj < tile; jj++) sum += (pt[jj] = g::flash_prob(pt[jj], m2));
        l = l * alpha + sum;
        m = m2;
        for (int d = 0; d < s.Dv; d++) {
          float x = acc[d] * alpha;
          for (int jj = 0; jj < tile && j0 + jj < s.Sk; jj++)
            x += pt[jj] * ld(p.v.data, g::attn_off(s.v, b, j0 + jj, hk, d));
          acc[d] = x;
        }
      }
      const float inv = g::flash_out_scale(l);
      for (int d = 0; d < s.Dv; d++) (*O)[((static_cast<size_t>(b) * s.Sq + i) * s.H + h) * s.Dv + d] = acc[d] * inv;
      (*lse)[(static_cast<size_t>(b) * s.H + h) * s.Sq + i] = g::attn_lse(m, l);
    }
  }
}

// p and ds of (row i, key j) as flash_pds computes them.
void pds(const g::AttnShape& s, const nnc::attn::Problem& p, const float* qrow, const float* dOrow, float lse,
         float delta, int b, int h, int i, int j, float* pp, float* ds) {
  const HostLd ld;
  *pp = *ds = 0;
  if (!g::flash_visible(s, i, j)) return;
  const float pr = g::attn_prob(g::attn_score(s, qrow, ld, p.k.data, p.mask.data, b, h, i, j), lse);
  if (pr == 0.f) return;
  const int hk = g::attn_kv_head(s, h);
  float dp = 0;
  for (int d = 0; d < s.Dv; d++) dp += dOrow[d] * ld(p.v.data, g::attn_off(s.v, b, j, hk, d));
  *pp = pr;
  *ds = g::flash_ds(pr, dp, delta, s.scale);
}

// The backward as the kernels run it. lse: (b, h, i) at the plan's layout of
// p.lse; O: CPU_REF's o at the plan's a.o; dO: g at a.g.
void replay_backward(const g::AttnPlan& a, const nnc::attn::Problem& p, int rows, int q_tile, std::vector<float>* dq,
                     std::vector<float>* dk, std::vector<float>* dv) {
  // (dq sums over the keys one by one in key order, whatever the key tile.)
  const g::AttnShape& s = a.s;
  const HostLd ld;
  const size_t nrows = static_cast<size_t>(s.B) * s.H * s.Sq;
  std::vector<float> Q(nrows * s.D), DO(nrows * s.Dv), L(nrows), DL(nrows);
  for (int b = 0; b < s.B; b++)
    for (int h = 0; h < s.H; h++)
      for (int i = 0; i < s.Sq; i++) {
        const size_t r = (static_cast<size_t>(b) * s.H + h) * s.Sq + i;
        float delta = 0;
        for (int d = 0; d < s.D; d++) Q[r * s.D + d] = ld(p.q.data, g::attn_off(s.q, b, i, h, d));
        for (int d = 0; d < s.Dv; d++) {
          DO[r * s.Dv + d] = ld(p.g.data, g::attn_off(a.g, b, i, h, d));
          delta += DO[r * s.Dv + d] * ld(p.o.data, g::attn_off(a.o, b, i, h, d));
        }
        L[r] = ld(p.lse.data, g::attn_lse_off(s, b, h, i));
        DL[r] = delta;
      }
  dq->assign(static_cast<size_t>(s.B) * s.Sq * s.H * s.D, std::nanf(""));
  dk->assign(static_cast<size_t>(s.B) * s.Sk * s.Hk * s.D, std::nanf(""));
  dv->assign(static_cast<size_t>(s.B) * s.Sk * s.Hk * s.Dv, std::nanf(""));
  std::vector<float> acc(std::max(s.D, s.Dv)), acc2(std::max(s.D, s.Dv));
  for (int64_t w = 0; w < g::flash_row_tiles(s, rows); w++) {
    int b, h, i0;
    g::flash_row_tile(s, rows, w, &b, &h, &i0);
    const int kend = g::flash_tile_key_end(s, i0, rows), hk = g::attn_kv_head(s, h);
    for (int i = i0; i < std::min(i0 + rows, s.Sq); i++) {
      const size_t r = (static_cast<size_t>(b) * s.H + h) * s.Sq + i;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int j = 0; j < kend; j++) {
        float pp, ds;
        pds(s, p, &Q[r * s.D], &DO[r * s.Dv], L[r], DL[r], b, h, i, j, &pp, &ds);
        for (int d = 0; d < s.D; d++) acc[d] += ds * (j < s.Sk ? ld(p.k.data, g::attn_off(s.k, b, j, hk, d)) : 0.f);
      }
      for (int d = 0; d < s.D; d++) (*dq)[((static_cast<size_t>(b) * s.Sq + i) * s.H + h) * s.D + d] = acc[d];
    }
  }
  const int G = s.H / s.Hk;
  for (int64_t w = 0; w < g::flash_key_tiles(s); w++) {
    int b, hk, j0;
    g::flash_key_tile(s, w, &b, &hk, &j0);
    const int ib = g::flash_tile_query_begin(s, j0);
    for (int j = j0; j < std::min(j0 + g::kFlashKeys, s.Sk); j++) {
      std::fill(acc.begin(), acc.end(), 0.f);    // dk
      std::fill(acc2.begin(), acc2.end(), 0.f);  // dv
      for (int h = hk * G; h < (hk + 1) * G; h++)
        for (int qi0 = ib; qi0 < s.Sq; qi0 += q_tile)
          for (int i = qi0; i < std::min(qi0 + q_tile, s.Sq); i++) {
            const size_t r = (static_cast<size_t>(b) * s.H + h) * s.Sq + i;
            float pp, ds;
            pds(s, p, &Q[r * s.D], &DO[r * s.Dv], L[r], DL[r], b, h, i, j, &pp, &ds);
            for (int d = 0; d < s.D; d++) acc[d] += ds * Q[r * s.D + d];
            for (int d = 0; d < s.Dv; d++) acc2[d] += pp * DO[r * s.Dv + d];
          }
      for (int d = 0; d < s.D; d++) (*dk)[((static_cast<size_t>(b) * s.Sk + j) * s.Hk + hk) * s.D + d] = acc[d];
      for (int d = 0; d < s.Dv; d++) (*dv)[((static_cast<size_t>(b) * s.Sk + j) * s.Hk + hk) * s.Dv + d] = acc2[d];
    }
  }
}

// got (packed [B, S, H, D] floats) against CPU_REF's tensor want (a view or
// not): |got - want| <= tol (1 + |want|), -inf equal.
void expect_near_v(const std::vector<float>& got, const T& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.count()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double a = got[i], b = want.get(i);
    const bool ok = (std::isinf(b) && a == b) || std::fabs(a - b) <= tol * (1 + std::fabs(b));
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " element " << i << ": " << a << " vs CPU_REF " << b;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size();
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  cs.push_back(Case(2, 37, 53, 4, 2, 24, 24));  // odd lengths over several tiles, grouped kv heads
  Case c{2, 37, 130, 2, 1, 24, 16};             // causal, Sq < Sk
  c.causal = true;
  cs.push_back(c);
  Case d{1, 40, 23, 3, 3, 7, 9};  // causal with Sq > Sk (rows 0..16 see no key), mask [Sq, Sk]
  d.causal = true, d.mask = {40, 23};
  cs.push_back(d);
  Case e{2, 1, 37, 4, 1, 1, 3};  // one query row, D = 1, mask [B, H, 1, Sk], views
  e.mask = {2, 4, 1, 37}, e.views = true;
  cs.push_back(e);
  Case f{3, 19, 19, 1, 1, 96, 64};  // 3-d, mask [Sk], causal square
  f.four_d = false, f.mask = {19}, f.causal = true;
  cs.push_back(f);
  Case h{1, 17, 33, 2, 2, 128, 128};  // the largest head the kernels are tuned for, mask [1, H, Sq, Sk]
  h.mask = {1, 2, 17, 33};
  cs.push_back(h);
  return cs;
}

TEST_F(GpuFlash, TiledAlgorithmMatchesCpuRef) {
  std::mt19937 rng(2024);
  int checked = 0;
  for (const Case& c : cases()) {
    T q = make(c.shape(c.Sq, c.H, c.D), c.views), k = make(c.shape(c.Sk, c.Hk, c.D), c.views),
      v = make(c.shape(c.Sk, c.Hk, c.Dv), c.views);
    fill_uniform(q, rng), fill_uniform(k, rng), fill_uniform(v, rng);
    std::unique_ptr<T> mask;
    if (!c.mask.empty()) {
      mask = std::make_unique<T>(CCV_32F, c.mask);
      fill_uniform(*mask, rng);
      for (size_t i = 0; i < mask->count(); i += 5) mask->set(i, -kInf);
    }
    T o = make(c.shape(c.Sq, c.H, c.Dv), c.views);
    T lse = c.four_d ? T(CCV_32F, {c.B, c.H, c.Sq}) : T(CCV_32F, {c.Sq, c.B});
    std::vector<ccv_nnc_tensor_t*> in = {q, k, v, mask ? mask->get() : nullptr};
    std::vector<ccv_nnc_tensor_t*> out = {o, lse};
    ASSERT_EQ(run(c.cmd(FWD), in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    const nnc::attn::Problem pf = nnc::attn::problem(c.cmd(FWD), in.data(), static_cast<int>(in.size()), out.data(),
                                                     static_cast<int>(out.size()), false, "test");
    g::AttnPlan a;
    std::string why;
    ASSERT_TRUE(g::attn_plan(pf, &a, &why)) << why;
    g::FlashGeom geo;
    ASSERT_TRUE(g::flash_plan(a, g::kFlashShmemLimit, &geo, &why)) << why;
    // The backward's inputs: g, and CPU_REF's o and lse.
    T gr = make(c.shape(c.Sq, c.H, c.Dv), c.views);
    fill_uniform(gr, rng);
    T dq = make(c.shape(c.Sq, c.H, c.D), false), dk = make(c.shape(c.Sk, c.Hk, c.D), false),
      dv = make(c.shape(c.Sk, c.Hk, c.Dv), false);
    std::vector<ccv_nnc_tensor_t*> bin = {gr,      nullptr, nullptr, q,  k, v, mask ? mask->get() : nullptr,
                                          nullptr, nullptr, o,       lse};
    std::vector<ccv_nnc_tensor_t*> bout = {dq, dk, dv};
    ASSERT_EQ(run(c.cmd(BWD), bin, bout), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    const nnc::attn::Problem pb = nnc::attn::problem(c.cmd(BWD), bin.data(), static_cast<int>(bin.size()), bout.data(),
                                                     static_cast<int>(bout.size()), true, "test");
    g::AttnPlan ab;
    ASSERT_TRUE(g::attn_plan(pb, &ab, &why)) << why;
    for (const int tile : {geo.fwd_tile, 4, 5, 1}) {
      SCOPED_TRACE(testing::Message() << "B" << c.B << " Sq" << c.Sq << " Sk" << c.Sk << " H" << c.H << "/" << c.Hk
                                      << " D" << c.D << "/" << c.Dv << (c.causal ? " causal" : "") << " mask nd "
                                      << c.mask.size() << " tile " << tile);
      std::vector<float> O, L;
      replay_forward(a, pf, geo.rows, tile, &O, &L);
      // CPU_REF's o is a view (or not) of [B, Sq, H, Dv]: compare through a packed copy of it.
      T op = make(c.shape(c.Sq, c.H, c.Dv), false);
      for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.Sq; i++)
          for (int h = 0; h < c.H; h++)
            for (int d = 0; d < c.Dv; d++)
              op.set(((static_cast<size_t>(b) * c.Sq + i) * c.H + h) * c.Dv + d,
                     f32(pf.o)[g::attn_off(a.o, b, i, h, d)]);
      expect_near_v(O, op, 2e-5, "o");
      T lp(CCV_32F, {c.B, c.H, c.Sq});
      for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++)
          for (int i = 0; i < c.Sq; i++)
            lp.set((static_cast<size_t>(b) * c.H + h) * c.Sq + i, f32(pf.lse)[g::attn_lse_off(a.s, b, h, i)]);
      expect_near_v(L, lp, 2e-5, "lse");
      std::vector<float> DQ, DK, DV;
      replay_backward(ab, pb, geo.rows, tile, &DQ, &DK, &DV);
      expect_near_v(DQ, dq, 1e-4, "dq");
      expect_near_v(DK, dk, 1e-4, "dk");
      expect_near_v(DV, dv, 1e-4, "dv");
      checked++;
    }
  }
  EXPECT_EQ(checked, 24);
}

}  // namespace
