// The GPU_REF kernels' index arithmetic against naive row-major walks: the
// element-wise plan (dropping size-1 dimensions, merging contiguous ones,
// broadcast strides, 64-bit offsets) and the reduction plan (which input
// elements each output sums, each exactly once), on random shapes, views and
// broadcasts with a fixed seed.
#include "cmd/common/gpu_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace {

using namespace nnc::gpu;

// Row-major walk of dim[0..nd) giving the offset of every element for the given strides.
std::vector<int64_t> naive_offsets(const std::vector<int>& dim, const std::vector<int64_t>& stride) {
  std::vector<int64_t> out;
  const int nd = static_cast<int>(dim.size());
  std::vector<int> idx(dim.size(), 0);
  if (nd == 0) return out;
  for (;;) {
    int64_t o = 0;
    for (int i = 0; i < nd; i++) o += idx[i] * stride[i];
    out.push_back(o);
    int d = nd - 1;
    while (d >= 0 && ++idx[d] == dim[d]) idx[d--] = 0;
    if (d < 0) return out;
  }
}

// Strides of a view of `dim` inside a parent with each dimension padded by pad[i].
std::vector<int64_t> view_strides(const std::vector<int>& dim, const std::vector<int>& pad) {
  std::vector<int64_t> s(dim.size());
  int64_t m = 1;
  for (int i = static_cast<int>(dim.size()) - 1; i >= 0; i--) {
    s[i] = m;
    m *= dim[i] + pad[i];
  }
  return s;
}

TEST(GpuPlan, PackedOperandsMergeIntoOneDimension) {
  const int dim[] = {3, 1, 5, 7};
  int64_t s[4];
  packed_strides(dim, 4, s);
  const int64_t* st[] = {s, s, s};
  EwPlan p;
  ASSERT_TRUE(make_plan(p, dim, 4, 3, st));
  EXPECT_EQ(p.nd, 1);
  EXPECT_EQ(p.count, 105);
  EXPECT_EQ(p.dim[0], 105);
  for (int k = 0; k < 3; k++) EXPECT_EQ(p.stride[k][0], 1);
}

TEST(GpuPlan, RowPitchViewKeepsTwoDimensions) {
  const int dim[] = {4, 6, 5};
  const int64_t packed[] = {30, 5, 1}, view[] = {60, 10, 1};  // rows of 5 in a pitch of 10
  const int64_t* st[] = {packed, view};
  EwPlan p;
  ASSERT_TRUE(make_plan(p, dim, 3, 2, st));
  EXPECT_EQ(p.nd, 2);
  EXPECT_EQ(p.dim[0], 24);
  EXPECT_EQ(p.dim[1], 5);
  EXPECT_EQ(p.stride[1][0], 10);
}

TEST(GpuPlan, BroadcastStrides) {
  const int y[] = {2, 3, 4};
  int64_t out[3];
  const int a[] = {3, 1};
  const int64_t as[] = {1, 1};
  ASSERT_TRUE(broadcast_strides(a, as, 2, y, 3, out));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  const int bad[] = {5, 4};
  const int64_t bs[] = {4, 1};
  EXPECT_FALSE(broadcast_strides(bad, bs, 2, y, 3, out));
  const int longer[] = {1, 1, 3, 4};  // leading 1s beyond y's rank are fine
  const int64_t ls[] = {12, 12, 4, 1};
  ASSERT_TRUE(broadcast_strides(longer, ls, 4, y, 3, out));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 4);
  EXPECT_EQ(out[2], 1);
  const int longer_bad[] = {2, 1, 3, 4};
  EXPECT_FALSE(broadcast_strides(longer_bad, ls, 4, y, 3, out));
  EwPlan p;
  EXPECT_FALSE(make_plan(p, y, 3, kPlanOperands + 1, nullptr));
}

// Random shapes (with 1s), random views, random broadcasts: every operand's
// offsets from the plan equal the naive walk's, element by element.
TEST(GpuPlan, RandomViewsAndBroadcastsMatchNaiveWalk) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 400; trial++) {
    const int nd = 1 + static_cast<int>(rng() % 6);
    std::vector<int> dim(nd);
    for (int& d : dim) d = (rng() % 3 == 0) ? 1 : 1 + static_cast<int>(rng() % 7);
    const int operands = 1 + static_cast<int>(rng() % 4);
    std::vector<std::vector<int64_t>> strides(operands);
    for (int k = 0; k < operands; k++) {
      std::vector<int> pad(nd);
      for (int& q : pad) q = rng() % 3 == 0 ? static_cast<int>(rng() % 4) : 0;
      // An operand with fewer dimensions, some of them 1: broadcast.
      const int xnd = k == 0 ? nd : 1 + static_cast<int>(rng() % nd);
      std::vector<int> xdim(dim.end() - xnd, dim.end());
      for (int& d : xdim)
        if (k > 0 && rng() % 3 == 0) d = 1;
      std::vector<int> xpad(pad.end() - xnd, pad.end());
      const std::vector<int64_t> xs = view_strides(xdim, xpad);
      strides[k].resize(nd);
      ASSERT_TRUE(broadcast_strides(xdim.data(), xs.data(), xnd, dim.data(), nd, strides[k].data()));
    }
    std::vector<const int64_t*> sp;
    for (auto& s : strides) sp.push_back(s.data());
    EwPlan p;
    ASSERT_TRUE(make_plan(p, dim.data(), nd, operands, sp.data()));
    for (int k = 0; k < operands; k++) {
      const std::vector<int64_t> want = naive_offsets(dim, strides[k]);
      ASSERT_EQ(static_cast<int64_t>(want.size()), p.count);
      int64_t off[kPlanOperands];
      for (int64_t i = 0; i < p.count; i++) {
        ASSERT_EQ(plan_offset(p, k, i), want[i]) << "trial " << trial << " operand " << k << " element " << i;
        plan_offsets(p, operands, i, off);
        ASSERT_EQ(off[k], want[i]) << "trial " << trial << " operand " << k << " element " << i;
      }
    }
  }
}

TEST(GpuPlan, OffsetsPastTwoToThe31) {
  // 3 x 2^31 elements as a view with a pitch: offsets need 64 bits.
  const int dim[] = {3, 1 << 30, 2};
  const int64_t s[] = {(int64_t{1} << 32) + 16, 4, 2};
  const int64_t* st[] = {s};
  EwPlan p;
  ASSERT_TRUE(make_plan(p, dim, 3, 1, st));
  EXPECT_EQ(p.count, int64_t{3} << 31);
  const int64_t last = p.count - 1;
  EXPECT_EQ(plan_offset(p, 0, last), 2 * s[0] + ((int64_t{1} << 30) - 1) * 4 + 2);
}

// Reductions: for each output o and inner r, input element outer[1 + k](o) +
// inner[k](r) belongs to output o (naive), and every input element is visited once.
TEST(GpuPlan, ReducePlanVisitsEveryInputOnceForItsOutput) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 300; trial++) {
    const int nd = 1 + static_cast<int>(rng() % 5);
    std::vector<int> full(nd);
    for (int& d : full) d = 1 + static_cast<int>(rng() % 6);
    // Output: right-aligned, possibly fewer dimensions, some set to 1.
    const int ond = 1 + static_cast<int>(rng() % nd);
    std::vector<int> odim(full.end() - ond, full.end());
    for (int& d : odim)
      if (rng() % 2) d = 1;
    std::vector<int> opad(ond);
    for (int& q : opad) q = static_cast<int>(rng() % 2);
    const std::vector<int64_t> os = view_strides(odim, opad);
    // Two inputs: a view of the full shape, and a broadcast one.
    std::vector<int> pad(nd);
    for (int& q : pad) q = static_cast<int>(rng() % 3);
    const std::vector<int64_t> in0 = view_strides(full, pad);
    std::vector<int> bdim = full;
    for (int& d : bdim)
      if (rng() % 3 == 0) d = 1;
    std::vector<int64_t> in1(nd);
    const std::vector<int64_t> bs = view_strides(bdim, std::vector<int>(nd, 0));
    ASSERT_TRUE(broadcast_strides(bdim.data(), bs.data(), nd, full.data(), nd, in1.data()));
    const int64_t* ins[] = {in0.data(), in1.data()};
    ReducePlan rp;
    ASSERT_TRUE(make_reduce_plan(rp, full.data(), nd, odim.data(), os.data(), ond, 2, ins));
    // Naive: the output offset of each input-0 element, and input-1 offsets.
    std::vector<int64_t> full_os(nd);
    ASSERT_TRUE(broadcast_strides(odim.data(), os.data(), ond, full.data(), nd, full_os.data()));
    const std::vector<int64_t> out_of = naive_offsets(full, full_os);
    const std::vector<int64_t> at0 = naive_offsets(full, in0), at1 = naive_offsets(full, in1);
    std::map<int64_t, std::pair<int64_t, int64_t>> owner;  // input-0 offset -> (output offset, input-1 offset)
    for (size_t e = 0; e < at0.size(); e++) owner[at0[e]] = {out_of[e], at1[e]};
    ASSERT_EQ(rp.outer.count * rp.inner.count, static_cast<int64_t>(at0.size())) << "trial " << trial;
    std::map<int64_t, int> seen;
    for (int64_t o = 0; o < rp.outer.count; o++) {
      int64_t oo[3];
      plan_offsets(rp.outer, 3, o, oo);
      for (int64_t r = 0; r < rp.inner.count; r++) {
        const int64_t e0 = oo[1] + plan_offset(rp.inner, 0, r), e1 = oo[2] + plan_offset(rp.inner, 1, r);
        auto it = owner.find(e0);
        ASSERT_NE(it, owner.end()) << "trial " << trial;
        ASSERT_EQ(it->second.first, oo[0]) << "trial " << trial << " output " << o;
        ASSERT_EQ(it->second.second, e1) << "trial " << trial << " output " << o;
        seen[e0]++;
      }
    }
    for (auto& [k, c] : seen) ASSERT_EQ(c, 1) << "trial " << trial;
    ASSERT_EQ(seen.size(), owner.size());
    // The launch covers every output: blocks within the cap, a block per
    // output only when there is something to share.
    const ReduceLaunch l = choose_reduce(rp);
    EXPECT_GE(l.blocks, 1);
    EXPECT_LE(l.blocks, kMaxBlocks);
    EXPECT_TRUE(l.threads >= 32 && l.threads <= 256 && (l.threads & (l.threads - 1)) == 0);
    if (rp.inner.count == 1) {
      EXPECT_FALSE(l.block_per_output);
    }
  }
}

TEST(GpuPlan, ReducePlanRefusesShapesThatDoNotReduce) {
  const int full[] = {4, 5};
  const int out[] = {3, 1};
  const int64_t os[] = {1, 1}, fs[] = {5, 1};
  const int64_t* ins[] = {fs};
  ReducePlan rp;
  EXPECT_FALSE(make_reduce_plan(rp, full, 2, out, os, 2, 1, ins));
  EXPECT_FALSE(make_reduce_plan(rp, full, 2, out, os, 2, kPlanOperands, ins));
}

TEST(GpuPlan, LaunchGeometry) {
  EXPECT_EQ(choose_ew(0).blocks, 0);
  EXPECT_EQ(choose_ew(1).blocks, 1);
  EXPECT_EQ(choose_ew(257).blocks, 2);
  EXPECT_EQ(choose_ew(int64_t{1} << 40).blocks, int64_t{1} << 20);
  // A long row per output (softmax-like sums) takes a block each; many short
  // columns (a bias gradient over a batch) a thread each.
  ReducePlan rows;
  const int full[] = {64, 4096};
  const int out[] = {64, 1};
  int64_t fs[2], os[2] = {1, 1};
  packed_strides(full, 2, fs);
  const int64_t* ins[] = {fs};
  ASSERT_TRUE(make_reduce_plan(rows, full, 2, out, os, 2, 1, ins));
  EXPECT_TRUE(choose_reduce(rows).block_per_output);
  EXPECT_EQ(choose_reduce(rows).threads, 256);
  ReducePlan cols;
  const int full2[] = {128, 8192};
  const int out2[] = {1, 8192};
  int64_t fs2[2], os2[2] = {8192, 1};
  packed_strides(full2, 2, fs2);
  const int64_t* ins2[] = {fs2};
  ASSERT_TRUE(make_reduce_plan(cols, full2, 2, out2, os2, 2, 1, ins2));
  EXPECT_FALSE(choose_reduce(cols).block_per_output);
  EXPECT_EQ(choose_reduce(cols).blocks, 32);
  // Sliced: the same columns summed in 4 runs of 32 rows (2^17 threads would
  // want 16 runs; runs of at least 32). Rows are never sliced (outputs not
  // neighbours in the input), nor short sums, nor outputs enough to fill the GPU.
  const ReduceLaunch sc = choose_reduce_sliced(cols);
  EXPECT_EQ(sc.slices, 4);
  EXPECT_EQ(sc.threads, 256);
  EXPECT_EQ(sc.blocks, 8192 * 4 / 256);
  EXPECT_EQ(reduce_scratch_elements(sc, cols), 4 * 8192);
  EXPECT_EQ(choose_reduce_sliced(rows).slices, 1);
  EXPECT_TRUE(choose_reduce_sliced(rows).block_per_output);
  EXPECT_EQ(reduce_scratch_elements(choose_reduce_sliced(rows), rows), 0);
  ReducePlan tall;  // a bias gradient of a tall g: 100,000 x 256 -> 256
  const int full3[] = {100000, 256};
  const int out3[] = {1, 256};
  int64_t fs3[2], os3[2] = {256, 1};
  packed_strides(full3, 2, fs3);
  const int64_t* ins3[] = {fs3};
  ASSERT_TRUE(make_reduce_plan(tall, full3, 2, out3, os3, 2, 1, ins3));
  EXPECT_EQ(choose_reduce_sliced(tall).slices, 512);  // ceil(2^17 / 256)
  const int full4[] = {96, 70};
  const int out4[] = {1, 70};
  int64_t fs4[2], os4[2] = {70, 1};
  packed_strides(full4, 2, fs4);
  const int64_t* ins4[] = {fs4};
  ReducePlan shortcols;
  ASSERT_TRUE(make_reduce_plan(shortcols, full4, 2, out4, os4, 2, 1, ins4));
  EXPECT_EQ(choose_reduce_sliced(shortcols).slices, 1) << "96 rows: too short to slice";
  // The runs cover the inner elements once, in order, none empty.
  for (int64_t n : {128, 129, 1000, 4097})
    for (int64_t k : {2, 3, 31, 32}) {
      EXPECT_EQ(reduce_slice_begin(n, k, 0), 0);
      EXPECT_EQ(reduce_slice_begin(n, k, k), n);
      for (int64_t j = 0; j < k; j++) {
        const int64_t len = reduce_slice_begin(n, k, j + 1) - reduce_slice_begin(n, k, j);
        EXPECT_TRUE(len == n / k || len == n / k + 1) << n << " in " << k << ", run " << j;
      }
    }
}

}  // namespace
