// GPU_REF RMSNORM and GROUP_NORM (cuda/more_gpu.cpp) against CPU_REF on random
// inputs (fixed seeds): several axis sets, NCHW and NHWC group norms, groups of
// one channel and of all channels, scale given as [C] or in x's rank, the
// affine and plain forms, NULL saved statistics, views inside larger parents
// (whole parents compared), every backward output alone, and refusals. Skips
// without a GPU.
//
// Tolerances: both sides sum in double and round once, so y and the saved
// statistics agree to about one float ulp: rtol 1e-5, atol 1e-6. The
// backwards read each side's own saved statistics (one ulp apart, 6e-8
// relative), which moves xhat by ~1e-7 per element; dx sums <= 210 such
// terms into means (relative 1e-6 and an absolute ~1e-7), dscale / dbias sum
// <= 70 terms of size <= 4: atol 3e-5 covers 70 * 4 * 1e-7; rtol 1e-4. A
// wrong group, channel or statistic is off by O(0.1).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t rms(bool backward, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_RMSNORM_BACKWARD : CCV_NNC_RMSNORM_FORWARD);
  c.info.rmsnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.rmsnorm.axis[i] = axes[i];
  c.info.rmsnorm.epsilon = 1e-5f;
  return c;
}

std::vector<int> with_ones(std::vector<int> d, const std::vector<int>& axes, bool keep_axes) {
  std::vector<bool> in(d.size(), false);
  for (int a : axes) in[static_cast<size_t>(a)] = true;
  for (size_t i = 0; i < d.size(); i++)
    if (in[i] != keep_axes) d[i] = 1;
  return d;
}

TEST(GpuRefNorm2, RmsNormForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1001);
  struct Case {
    std::vector<int> dim, axes;
    bool view, flat_scale;
  };
  const Case cases[] = {{{4, 7, 33}, {2}, true, true},
                        {{3, 5, 9}, {1, 2}, true, false},
                        {{6, 300}, {1}, false, true},  // a row longer than a block
                        {{5, 4, 3}, {0}, false, false},
                        {{2, 3, 4, 5}, {1, 3}, true, false}};
  for (const Case& k : cases) {
    const std::string what = "RMSNORM nd " + std::to_string(k.dim.size()) + " axes " + std::to_string(k.axes.size());
    std::vector<int> sdim = with_ones(k.dim, k.axes, true);
    if (k.flat_scale) {
      std::vector<int> f;
      for (int d : sdim)
        if (d != 1) f.push_back(d);
      sdim = f;
    }
    const std::vector<int> stats = with_ones(k.dim, k.axes, false);
    auto x = both({k.dim, k.view}, rng, -2, 2), scale = both({sdim}, rng, 0.5f, 1.5f), y = both({k.dim, k.view}, rng),
         inv = both({stats}, rng);
    run_both(rms(false, k.axes), {x.get(), scale.get()}, {y.get(), inv.get()}, what);
    y->expect_close(1e-5f, 1e-6f, what + " y");
    inv->expect_close(1e-5f, 1e-6f, what + " saved_inv_std");
    // Without scale and saved statistics.
    auto y2 = both({k.dim}, rng);
    run_both(rms(false, k.axes), {x.get(), nullptr}, {y2.get(), nullptr}, what + " plain");
    y2->expect_close(1e-5f, 1e-6f, what + " plain");
    auto g = both({k.dim, !k.view}, rng), dx = both({k.dim, k.view}, rng), ds = both({sdim}, rng),
         dx2 = both({k.dim}, rng), ds2 = both({sdim}, rng);
    run_both(rms(true, k.axes), {g.get(), nullptr, x.get(), scale.get(), y.get(), inv.get()}, {dx.get(), ds.get()},
             what + " backward");
    dx->expect_close(1e-4f, 3e-5f, what + " dx");
    ds->expect_close(1e-4f, 3e-5f, what + " dscale");
    run_both(rms(true, k.axes), {g.get(), nullptr, x.get(), nullptr, y.get(), inv.get()}, {dx2.get(), nullptr},
             what + " dx alone, no scale");
    dx2->expect_close(1e-4f, 3e-5f, what + " dx alone");
    run_both(rms(true, k.axes), {g.get(), nullptr, x.get(), scale.get(), y.get(), inv.get()}, {nullptr, ds2.get()},
             what + " dscale alone");
    ds2->expect_close(1e-4f, 3e-5f, what + " dscale alone");
  }
}

ccv_nnc_cmd_t gnorm(bool backward, int ga, int groups, const std::vector<int>& red, int affine) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_GROUP_NORM_BACKWARD : CCV_NNC_GROUP_NORM_FORWARD);
  c.info.gnorm.group_axis = ga;
  c.info.gnorm.groups = groups;
  c.info.gnorm.reduce_count = static_cast<int>(red.size());
  for (size_t i = 0; i < red.size(); i++) c.info.gnorm.reduce_axis[i] = red[i];
  c.info.gnorm.epsilon = 1e-5f;
  c.info.gnorm.elementwise_affine = affine;
  return c;
}

TEST(GpuRefNorm2, GroupNormForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1009);
  struct Case {
    std::vector<int> dim;
    int ga, groups;
    std::vector<int> red;
    int format;
    bool view, flat_scale;
  };
  const Case cases[] = {
      {{2, 6, 5, 7}, 1, 3, {2, 3}, CCV_TENSOR_FORMAT_NCHW, true, false},
      {{2, 5, 7, 6}, 3, 2, {1, 2}, CCV_TENSOR_FORMAT_NHWC, true, true},
      {{3, 8, 9}, 1, 8, {2}, CCV_TENSOR_FORMAT_NCHW, false, true},   // a group per channel
      {{3, 8, 9}, 1, 1, {2}, CCV_TENSOR_FORMAT_NCHW, false, false},  // one group of every channel
      {{4, 6, 5}, 1, 2, {}, CCV_TENSOR_FORMAT_NCHW, true, true},     // no reduce axis: over the group alone
  };
  for (const Case& k : cases)
    for (int affine : {1, 0}) {
      const std::string what = "GROUP_NORM nd " + std::to_string(k.dim.size()) + " axis " + std::to_string(k.ga) +
                               " groups " + std::to_string(k.groups) + (affine ? " affine" : " plain");
      std::vector<int> cdim(k.dim.size(), 1), stats = k.dim;
      cdim[k.ga] = k.dim[k.ga];
      if (k.flat_scale) cdim = {k.dim[k.ga]};
      stats[k.ga] = k.groups;
      for (int a : k.red) stats[a] = 1;
      auto x = both({k.dim, k.view, CCV_32F, k.format}, rng, -2, 2), y = both({k.dim, k.view, CCV_32F, k.format}, rng);
      auto scale = both({cdim}, rng, 0.5f, 1.5f), bias = both({cdim}, rng), mean = both({stats}, rng),
           inv = both({stats}, rng);
      if (affine)
        run_both(gnorm(false, k.ga, k.groups, k.red, 1), {x.get(), scale.get(), bias.get()},
                 {y.get(), mean.get(), inv.get()}, what);
      else
        run_both(gnorm(false, k.ga, k.groups, k.red, 0), {x.get()}, {y.get(), mean.get(), inv.get()}, what);
      y->expect_close(1e-5f, 1e-6f, what + " y");
      mean->expect_close(1e-5f, 1e-6f, what + " saved_mean");
      inv->expect_close(1e-5f, 1e-6f, what + " saved_inv_std");
      auto g = both({k.dim, !k.view, CCV_32F, k.format}, rng), dx = both({k.dim, k.view, CCV_32F, k.format}, rng);
      if (affine) {
        auto ds = both({cdim}, rng), db = both({cdim}, rng), db2 = both({cdim}, rng);
        run_both(gnorm(true, k.ga, k.groups, k.red, 1),
                 {g.get(), nullptr, nullptr, x.get(), scale.get(), bias.get(), y.get(), mean.get(), inv.get()},
                 {dx.get(), ds.get(), db.get()}, what + " backward");
        ds->expect_close(1e-4f, 3e-5f, what + " dscale");
        db->expect_close(1e-4f, 3e-5f, what + " dbias");
        run_both(gnorm(true, k.ga, k.groups, k.red, 1),
                 {g.get(), nullptr, nullptr, x.get(), scale.get(), bias.get(), y.get(), mean.get(), inv.get()},
                 {nullptr, nullptr, db2.get()}, what + " dbias alone");
        db2->expect_close(1e-4f, 3e-5f, what + " dbias alone");
      } else {
        run_both(gnorm(true, k.ga, k.groups, k.red, 0),
                 {g.get(), nullptr, nullptr, x.get(), y.get(), mean.get(), inv.get()}, {dx.get()}, what + " backward");
      }
      dx->expect_close(1e-4f, 3e-5f, what + " dx");
    }
}

TEST(GpuRefNorm2, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1013);
  // 64F: GPU_REF computes in float and says so (16F / 16BF are taken:
  // half_gpu_test.cpp).
  auto x = both({{4, 8}, false, CCV_64F}, rng), y = both({{4, 8}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t c = rms(false, {1});
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // Groups that do not divide the channels: the family's check.
  auto xf = both({{2, 6, 5}}, rng), yf = both({{2, 6, 5}}, rng);
  ccv_nnc_cmd_t gn = gnorm(false, 1, 4, {2}, 0);
  gn.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(gn, ccv_nnc_no_hint, {xf->gpu()}, {yf->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A scale of the wrong extent.
  auto s = both({{5}}, rng);
  ccv_nnc_cmd_t r = rms(false, {1});
  r.backend = CCV_NNC_BACKEND_GPU_REF;
  auto x2 = both({{4, 8}}, rng), y2 = both({{4, 8}}, rng);
  EXPECT_NE(exec(r, ccv_nnc_no_hint, {x2->gpu(), s->gpu()}, {y2->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
