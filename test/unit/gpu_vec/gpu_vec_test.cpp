// The vector launches of the GPU_REF element-wise kernels (gpu_vec.hpp):
// which plans the element-wise backends make for the common cases (measured
// here, through make_plan), which of them go vector, and a replay of the
// kernels' walk on random plans and addresses: every element written exactly
// once, at the plan's offsets, every vector access aligned to its size and
// inside its operand, a row / column vector never crossing a row.
#include "cmd/common/gpu_vec.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using namespace nnc::gpu;

// The plan of y (packed, shape ydim) and inputs of shapes xdims broadcast to
// it (packed), as the backends build it (cuda/ewgpu.cpp plan_of).
EwPlan plan_for(const std::vector<int>& ydim, const std::vector<std::vector<int>>& xdims) {
  int64_t st[kPlanOperands][kPlanDims] = {};
  const int64_t* sp[kPlanOperands];
  const int ynd = static_cast<int>(ydim.size());
  packed_strides(ydim.data(), ynd, st[0]);
  sp[0] = st[0];
  for (size_t k = 0; k < xdims.size(); k++) {
    int64_t xs[kPlanDims];
    const int xnd = static_cast<int>(xdims[k].size());
    packed_strides(xdims[k].data(), xnd, xs);
    EXPECT_TRUE(broadcast_strides(xdims[k].data(), xs, xnd, ydim.data(), ynd, st[1 + k]));
    sp[1 + k] = st[1 + k];
  }
  EwPlan p;
  EXPECT_TRUE(make_plan(p, ydim.data(), ynd, 1 + static_cast<int>(xdims.size()), sp));
  return p;
}

// Replays a vector launch (the loops of ew_vec_kernel): checks every element
// is visited once, at the plan's offsets, and each vector access is aligned
// and inside its operand (sizes: elements each operand holds).
void replay(const EwPlan& p, const EwVec& v, const uint64_t* addr, const int* es, const std::vector<int64_t>& sizes) {
  ASSERT_GT(v.width, 0);
  ASSERT_LT(v.head, v.width);
  ASSERT_GE(v.vectors, 1);
  ASSERT_LT(v.count - v.tail_start(), v.width);
  ASSERT_GE(v.count, v.tail_start());
  ASSERT_EQ(v.count, p.count);
  std::vector<int> seen(static_cast<size_t>(p.count), 0);
  auto check_element = [&](int64_t i) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, p.count);
    seen[static_cast<size_t>(i)]++;
    for (int k = 0; k < p.operands; k++) {
      if (addr[k] == 0) continue;
      ASSERT_EQ(v.offset(k, i), plan_offset(p, k, i)) << "operand " << k << " element " << i;
      ASSERT_LT(v.offset(k, i), sizes[k]);
    }
  };
  for (int64_t t = 0; t < v.scalars(); t++) check_element(v.scalar_index(t));
  for (int64_t j = 0; j < v.vectors; j++) {
    const int64_t i = v.head + j * v.width;
    for (int k = 0; k < p.operands; k++) {
      if (addr[k] == 0) continue;
      const int64_t o = v.offset(k, i);
      if (v.mode[k] == kVecPacked || v.mode[k] == kVecRow) {
        const uint64_t bytes = static_cast<uint64_t>(v.width) * es[k];
        ASSERT_EQ((addr[k] + o * es[k]) % bytes, 0u) << "operand " << k << " vector " << j;
        ASSERT_LE(o + v.width, sizes[k]);
        for (int e = 0; e < v.width; e++) ASSERT_EQ(plan_offset(p, k, i + e), o + e);
      } else {
        for (int e = 0; e < v.width; e++) ASSERT_EQ(plan_offset(p, k, i + e), o);  // one value for the vector
      }
    }
    for (int e = 0; e < v.width; e++) {
      seen[static_cast<size_t>(i + e)]++;
    }
  }
  for (int64_t i = 0; i < p.count; i++) ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << "element " << i;
  ASSERT_GE(v.launch.blocks, 1);
  ASSERT_EQ(v.launch.threads, 256);
}

constexpr uint64_t kBase = 0x7f0000000000ull;  // a 256-byte aligned address

TEST(GpuVec, PlansOfTheCommonCases) {
  // Packed binary: one dimension, unit strides.
  EwPlan p = plan_for({64, 33, 7}, {{64, 33, 7}, {64, 33, 7}});
  EXPECT_EQ(p.nd, 1);
  // x * s with a 1-element s: one dimension, s's stride 0.
  p = plan_for({64, 33, 7}, {{64, 33, 7}, {1}});
  EXPECT_EQ(p.nd, 1);
  EXPECT_EQ(p.stride[2][0], 0);
  // x[N, C] + b[C] (a bias): two dimensions, b (0, 1).
  p = plan_for({50, 96}, {{50, 96}, {96}});
  ASSERT_EQ(p.nd, 2);
  EXPECT_EQ(p.stride[2][0], 0);
  EXPECT_EQ(p.stride[2][1], 1);
  // x[N, H, W, C] + b[C] (NHWC bias): the leading three merge, so two.
  p = plan_for({4, 5, 6, 32}, {{4, 5, 6, 32}, {32}});
  EXPECT_EQ(p.nd, 2);
  // x[N, C] * s[N, 1]: two dimensions, s (1, 0).
  p = plan_for({50, 96}, {{50, 96}, {50, 1}});
  ASSERT_EQ(p.nd, 2);
  EXPECT_EQ(p.stride[2][0], 1);
  EXPECT_EQ(p.stride[2][1], 0);
  // NCHW channel scale x[N, C, H, W] * s[C, 1, 1]: three dimensions (scalar path).
  p = plan_for({4, 8, 5, 5}, {{4, 8, 5, 5}, {8, 1, 1}});
  EXPECT_EQ(p.nd, 3);
}

TEST(GpuVec, WhichCasesGoVector) {
  const uint64_t a3[] = {kBase, kBase + 4096, kBase + 8192};
  for (int es : {2, 4}) {
    const int w = 16 / es;
    // Packed, aligned: no head, tail count % w.
    EwPlan p = plan_for({1000, 7}, {{1000, 7}, {1000, 7}});
    EwVec v = choose_ew_vec(p, a3, es);
    EXPECT_EQ(v.width, w);
    EXPECT_EQ(v.head, 0);
    EXPECT_EQ(v.vectors, 7000 / w);
    EXPECT_EQ(v.scalars(), 7000 % w);
    // Scalar broadcast.
    p = plan_for({1000, 7}, {{1000, 7}, {1}});
    v = choose_ew_vec(p, a3, es);
    EXPECT_EQ(v.width, w);
    EXPECT_EQ(v.mode[2], kVecScalar);
    // Bias: C a multiple of the width goes vector, else not.
    p = plan_for({50, 96}, {{50, 96}, {96}});
    v = choose_ew_vec(p, a3, es);
    EXPECT_EQ(v.width, w);
    EXPECT_EQ(v.mode[2], kVecRow);
    EXPECT_EQ(v.inner, 96);
    p = plan_for({50, 98}, {{50, 98}, {98}});
    EXPECT_EQ(choose_ew_vec(p, a3, es).width, 0) << "98 is no multiple of 4 or 8";
    // Column broadcast.
    p = plan_for({50, 96}, {{50, 96}, {50, 1}});
    v = choose_ew_vec(p, a3, es);
    EXPECT_EQ(v.width, w);
    EXPECT_EQ(v.mode[2], kVecCol);
    // NCHW channel scale: three dimensions, scalar path.
    p = plan_for({4, 8, 5, 8}, {{4, 8, 5, 8}, {8, 1, 1}});
    EXPECT_EQ(choose_ew_vec(p, a3, es).width, 0);
    // Fewer elements than a vector.
    p = plan_for({w - 1}, {{w - 1}});
    EXPECT_EQ(choose_ew_vec(p, a3, es).width, 0);
    p = plan_for({w}, {{w}});
    EXPECT_EQ(choose_ew_vec(p, a3, es).width, w);
  }
}

TEST(GpuVec, Alignment) {
  EwPlan p = plan_for({4097}, {{4097}, {4097}});
  // All three misaligned by one float alike: a head of 3 floats.
  const uint64_t same[] = {kBase + 4, kBase + 4096 + 4, kBase + 8192 + 4};
  EwVec v = choose_ew_vec(p, same, 4);
  EXPECT_EQ(v.width, 4);
  EXPECT_EQ(v.head, 3);
  EXPECT_EQ(v.vectors, (4097 - 3) / 4);
  // One operand off by a different amount: scalar path.
  const uint64_t mixed[] = {kBase, kBase + 4096 + 4, kBase + 8192};
  EXPECT_EQ(choose_ew_vec(p, mixed, 4).width, 0);
  // Off by 8 bytes: same misalignment in 8-byte halves of... 16F: 4 elements.
  const uint64_t by8[] = {kBase + 8, kBase + 4096 + 8, kBase + 8192 + 8};
  v = choose_ew_vec(p, by8, 2);
  EXPECT_EQ(v.width, 8);
  EXPECT_EQ(v.head, 4);
  // Not aligned to the element size at all.
  const uint64_t odd[] = {kBase + 1, kBase + 4096 + 1, kBase + 8192 + 1};
  EXPECT_EQ(choose_ew_vec(p, odd, 4).width, 0);
  // A broadcast scalar's address does not matter.
  p = plan_for({4097}, {{4097}, {1}});
  const uint64_t sc[] = {kBase, kBase + 4096, kBase + 8192 + 6};
  EXPECT_EQ(choose_ew_vec(p, sc, 2).width, 8);
  // A NULL input (read as 1) neither.
  const uint64_t null_in[] = {kBase, 0, kBase + 8192};
  p = plan_for({4097}, {{4097}, {4097}});
  v = choose_ew_vec(p, null_in, 4);
  EXPECT_EQ(v.width, 4);
  EXPECT_EQ(v.mode[1], kVecScalar);
  // The output NULL, or strided: no.
  const uint64_t null_out[] = {0, kBase, kBase + 8192};
  EXPECT_EQ(choose_ew_vec(p, null_out, 4).width, 0);
  // Two dimensions (bias) take no head: any misalignment is the scalar path.
  p = plan_for({50, 96}, {{50, 96}, {96}});
  EXPECT_EQ(choose_ew_vec(p, same, 4).width, 0);
  // Mixed element sizes (DATATYPE_CONVERSION 32F -> 16F): width 4, the 16F
  // side aligned to 8 bytes suffices.
  p = plan_for({4097}, {{4097}});
  const uint64_t cv[] = {kBase + 8, kBase + 4096};
  const int sizes[] = {2, 4};
  v = choose_ew_vec(p, cv, sizes);
  EXPECT_EQ(v.width, 4);
  EXPECT_EQ(v.head, 0);
  const uint64_t cv2[] = {kBase + 4, kBase + 4096};
  EXPECT_EQ(choose_ew_vec(p, cv2, sizes).width, 0);  // the 16F side 2 elements off, the 32F side 0
  // Bad element sizes: no.
  EXPECT_EQ(choose_ew_vec(p, cv, 3).width, 0);
}

TEST(GpuVec, ViewStridesDecline) {
  // y[10, 64] a view with row stride 72 (a wider parent): two dimensions that
  // are no packed pair; scalar path.
  int64_t ys[] = {72, 1}, xs[] = {64, 1};
  const int64_t* sp[] = {ys, xs};
  const int dim[] = {10, 64};
  EwPlan p;
  ASSERT_TRUE(make_plan(p, dim, 2, 2, sp));
  ASSERT_EQ(p.nd, 2);
  const uint64_t a[] = {kBase, kBase + 4096};
  EXPECT_EQ(choose_ew_vec(p, a, 4).width, 0);
  // A step-2 view: stride 2 in one dimension.
  int64_t ys2[] = {2}, xs2[] = {1};
  const int64_t* sp2[] = {ys2, xs2};
  const int dim2[] = {100};
  ASSERT_TRUE(make_plan(p, dim2, 1, 2, sp2));
  EXPECT_EQ(choose_ew_vec(p, a, 4).width, 0);
}

TEST(GpuVec, EnvSwitch) {
  EXPECT_TRUE(ew_vec_allowed(nullptr));
  EXPECT_TRUE(ew_vec_allowed("1"));
  EXPECT_TRUE(ew_vec_allowed(""));
  EXPECT_FALSE(ew_vec_allowed("0"));
}

// Random packed / broadcast plans and addresses: whenever the vector path is
// taken, the replay holds; and it is taken whenever it should be.
TEST(GpuVec, RandomReplay) {
  std::mt19937 rng(19);
  int taken = 0, taken_head = 0, taken_2d = 0;
  for (int it = 0; it < 3000; it++) {
    const int es = 1 << (rng() % 4);  // 1, 2, 4, 8
    const int w = 16 / es;
    const bool two = rng() % 2;
    std::vector<int> ydim;
    if (two)
      ydim = {1 + static_cast<int>(rng() % 9), w * (1 + static_cast<int>(rng() % 6)) + (rng() % 4 == 0 ? 1 : 0)};
    else
      ydim = {1 + static_cast<int>(rng() % 300)};
    const int n = 1 + static_cast<int>(rng() % 3);
    std::vector<std::vector<int>> xd;
    for (int k = 0; k < n; k++) {
      const int r = static_cast<int>(rng() % 4);
      if (r == 0 || (!two && r > 1))
        xd.push_back(ydim);
      else if (r == 1)
        xd.push_back({1});
      else if (r == 2)
        xd.push_back({ydim[1]});
      else
        xd.push_back({ydim[0], 1});
    }
    const EwPlan p = plan_for(ydim, xd);
    // Addresses: a common misalignment, sometimes one operand off.
    const uint64_t mis = (rng() % w) * es;
    uint64_t addr[kPlanOperands] = {};
    std::vector<int64_t> sizes(kPlanOperands, 0);
    int64_t total = 1;
    for (int d : ydim) total *= d;
    sizes[0] = total;
    addr[0] = kBase + mis;
    for (int k = 0; k < n; k++) {
      addr[1 + k] = kBase + static_cast<uint64_t>(k + 1) * 65536 + mis;
      if (rng() % 8 == 0) addr[1 + k] += es * (1 + rng() % (w > 1 ? w - 1 : 1));
      if (rng() % 10 == 0) addr[1 + k] = 0;
      int64_t c = 1;
      for (int d : xd[k]) c *= d;
      sizes[1 + k] = c;
    }
    const EwVec v = choose_ew_vec(p, addr, es);
    if (!v.width) continue;
    taken++;
    taken_head += v.head > 0;
    taken_2d += p.nd == 2;
    replay(p, v, addr, std::vector<int>(kPlanOperands, es).data(), sizes);
    if (HasFatalFailure()) return;
  }
  // The cases all occur.
  EXPECT_GT(taken, 500);
  EXPECT_GT(taken_head, 100);
  EXPECT_GT(taken_2d, 100);
}

}  // namespace
