// The GPU_REF norm plans (cmd/common/gpu_norm.hpp) on the CPU: for random
// RMSNORM axis sets and GROUP_NORM group axes / groups / reduce axes (fixed
// seed), the groups plan visits every x element exactly once and reads, for
// each, the statistics entry and the scale entry the CPU_REF kernels use
// (row-major over the kept axes with the group axis counting groups; over
// the normalised axes or the channels); the params plan gives every element
// to its own scale entry. Plus small_strides on [C]-like small tensors.
#include "cmd/common/gpu_norm.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using namespace nnc::gpu;

std::vector<int> coords(int64_t i, const std::vector<int>& dim) {
  std::vector<int> c(dim.size());
  for (int d = static_cast<int>(dim.size()) - 1; d >= 0; d--) {
    c[d] = static_cast<int>(i % dim[d]);
    i /= dim[d];
  }
  return c;
}

// A packed small tensor of the non-1 extents of want, as [e0, e1, ...] (so its
// strides must be mapped), its strides over want's axes.
std::vector<int64_t> small_of(const std::vector<int>& want) {
  std::vector<int> sd;
  for (int w : want)
    if (w != 1) sd.push_back(w);
  if (sd.empty()) sd.push_back(1);
  std::vector<int64_t> ss(sd.size());
  int64_t m = 1;
  for (int i = static_cast<int>(sd.size()) - 1; i >= 0; i--) ss[i] = m, m *= sd[i];
  std::vector<int64_t> out(want.size());
  EXPECT_TRUE(small_strides(sd.data(), ss.data(), static_cast<int>(sd.size()), want.data(),
                            static_cast<int>(want.size()), out.data()));
  return out;
}

// Checks a plan over full (split) dims against the expected statistics / scale
// index of every x element (x packed over xdim).
void check(const NormPlan& p, const std::vector<int>& xdim, int64_t nx, const std::vector<int64_t>& want_stat,
           const std::vector<int64_t>& want_param) {
  std::vector<int> seen(static_cast<size_t>(nx), 0);
  for (int64_t o = 0; o < p.groups.outer.count; o++) {
    int64_t base[kPlanOperands];
    plan_offsets(p.groups.outer, 1 + kNormOperands, o, base);
    ASSERT_EQ(p.groups.inner.count, p.group_size);
    for (int64_t r = 0; r < p.groups.inner.count; r++) {
      int64_t off[kPlanOperands];
      plan_offsets(p.groups.inner, kNormOperands, r, off);
      const int64_t x = base[1 + kNormX] + off[kNormX];
      ASSERT_GE(x, 0);
      ASSERT_LT(x, nx);
      seen[x]++;
      ASSERT_EQ(base[1 + kNormMean] + off[kNormMean], want_stat[x]) << "element " << x;
      ASSERT_EQ(base[1 + kNormInv] + off[kNormInv], want_stat[x]);
      ASSERT_EQ(base[1 + kNormScale] + off[kNormScale], want_param[x]);
      ASSERT_EQ(base[1 + kNormY] + off[kNormY], x);
    }
  }
  for (int64_t i = 0; i < nx; i++) ASSERT_EQ(seen[i], 1) << "element " << i;
  std::fill(seen.begin(), seen.end(), 0);
  for (int64_t o = 0; o < p.params.outer.count; o++) {
    int64_t base[kPlanOperands];
    plan_offsets(p.params.outer, 1 + kNormOperands, o, base);
    for (int64_t r = 0; r < p.params.inner.count; r++) {
      int64_t off[kPlanOperands];
      plan_offsets(p.params.inner, kNormOperands, r, off);
      const int64_t x = base[1 + kNormX] + off[kNormX];
      seen[x]++;
      ASSERT_EQ(base[1 + kNormScale], want_param[x]) << "element " << x;  // one scale entry per outer
      ASSERT_EQ(base[1 + kNormBias], want_param[x]);
    }
  }
  for (int64_t i = 0; i < nx; i++) ASSERT_EQ(seen[i], 1) << "element " << i;
  (void)xdim;
}

TEST(GpuNorm, RmsNormPlans) {
  std::mt19937 rng(901);
  for (int t = 0; t < 50; t++) {
    const int nd = 1 + static_cast<int>(rng() % 4);
    std::vector<int> dim(nd);
    for (int& d : dim) d = 1 + static_cast<int>(rng() % 5);
    unsigned mask = 0;
    while (!mask) mask = static_cast<unsigned>(rng()) & ((1u << nd) - 1);
    std::vector<int> stat_want(nd), scale_want(nd);
    for (int i = 0; i < nd; i++) {
      stat_want[i] = (mask >> i) & 1u ? 1 : dim[i];
      scale_want[i] = (mask >> i) & 1u ? dim[i] : 1;
    }
    std::vector<int64_t> xs(nd);
    int64_t nx = 1;
    for (int i = nd - 1; i >= 0; i--) xs[i] = nx, nx *= dim[i];
    const std::vector<int64_t> ss = small_of(stat_want), cs = small_of(scale_want);
    const int64_t* st[kNormOperands] = {xs.data(), xs.data(), nullptr,   nullptr,
                                        cs.data(), cs.data(), ss.data(), ss.data()};
    NormPlan p;
    ASSERT_TRUE(make_norm_plan(p, dim.data(), nd, st, mask, mask));
    std::vector<int64_t> want_stat(nx), want_param(nx);
    for (int64_t i = 0; i < nx; i++) {
      const std::vector<int> c = coords(i, dim);
      int64_t k = 0, q = 0;
      for (int d = 0; d < nd; d++) {
        if ((mask >> d) & 1u)
          q = q * dim[d] + c[d];
        else
          k = k * dim[d] + c[d];
      }
      want_stat[i] = k;
      want_param[i] = q;
    }
    check(p, dim, nx, want_stat, want_param);
  }
}

TEST(GpuNorm, GroupNormPlans) {
  std::mt19937 rng(907);
  for (int t = 0; t < 50; t++) {
    const int nd = 2 + static_cast<int>(rng() % 3);
    std::vector<int> dim(nd);
    for (int& d : dim) d = 1 + static_cast<int>(rng() % 4);
    const int ga = static_cast<int>(rng() % nd);
    const int groups = 1 + static_cast<int>(rng() % 3);
    dim[ga] = groups * (1 + static_cast<int>(rng() % 3));
    const int per = dim[ga] / groups;
    unsigned red = static_cast<unsigned>(rng()) & ((1u << nd) - 1) & ~(1u << ga);
    std::vector<int> stat_want(nd), chan_want(nd);
    for (int i = 0; i < nd; i++) {
      stat_want[i] = i == ga ? groups : (red >> i) & 1u ? 1 : dim[i];
      chan_want[i] = i == ga ? dim[i] : 1;
    }
    std::vector<int64_t> xs(nd);
    int64_t nx = 1;
    for (int i = nd - 1; i >= 0; i--) xs[i] = nx, nx *= dim[i];
    const std::vector<int64_t> ss = small_of(stat_want), cs = small_of(chan_want);
    std::vector<int> full(nd + 1);
    split_dims(dim.data(), nd, ga, groups, full.data());
    std::vector<int64_t> fx(nd + 1), fs(nd + 1), fc(nd + 1);
    split_strides(xs.data(), nd, ga, per, false, fx.data());
    split_strides(ss.data(), nd, ga, per, true, fs.data());
    split_strides(cs.data(), nd, ga, per, false, fc.data());
    unsigned norm = 1u << (ga + 1), param = (1u << ga) | (1u << (ga + 1));
    for (int i = 0; i < nd; i++)
      if ((red >> i) & 1u) norm |= 1u << (i > ga ? i + 1 : i);
    const int64_t* st[kNormOperands] = {fx.data(), fx.data(), nullptr,   nullptr,
                                        fc.data(), fc.data(), fs.data(), fs.data()};
    NormPlan p;
    ASSERT_TRUE(make_norm_plan(p, full.data(), nd + 1, st, norm, param));
    std::vector<int64_t> want_stat(nx), want_param(nx);
    for (int64_t i = 0; i < nx; i++) {
      const std::vector<int> c = coords(i, dim);
      int64_t k = 0;
      for (int d = 0; d < nd; d++) {  // CPU_REF's stat_of
        if (d == ga)
          k = k * groups + c[d] / per;
        else if (!((red >> d) & 1u))
          k = k * dim[d] + c[d];
      }
      want_stat[i] = k;
      want_param[i] = c[ga];
    }
    check(p, dim, nx, want_stat, want_param);
  }
}

TEST(GpuNorm, SmallStrides) {
  const int want[] = {1, 6, 1, 1}, sdim[] = {6}, sdim4[] = {1, 6, 1, 1}, bad[] = {5};
  const int64_t s1[] = {1}, s4[] = {6, 1, 1, 1};
  int64_t out[4];
  ASSERT_TRUE(small_strides(sdim, s1, 1, want, 4, out));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  ASSERT_TRUE(small_strides(sdim4, s4, 4, want, 4, out));
  EXPECT_EQ(out[1], 1);
  EXPECT_FALSE(small_strides(bad, s1, 1, want, 4, out));
}

}  // namespace
