// The channels-inner (NHWC) batch-norm loops of the AVX2 path
// (cmd/norm/norm_avx2.hpp), registered as test_norm_avx2 and, with
// NNC_NO_AVX512=1, test_norm_avx2_avx2, so that an AVX-512 machine runs them
// too: training forward and backward on CPU_OPT against CPU_REF for channel
// counts on each side of the loops' limits (a multiple of 8 or not; register
// sums and coefficients up to 24 and 32 channels, the plain sums beyond),
// small and streamed (at least 8 MiB) outputs, and views of x and g. And layer
// norm's streamed output loops (8 MiB and more, rows a multiple of 8 floats).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"

namespace {

using cmdtest::T;

ccv_nnc_cmd_t bnorm(uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.bnorm.count = 3;
  p.bnorm.axis[0] = 0, p.bnorm.axis[1] = 1, p.bnorm.axis[2] = 2;
  p.bnorm.epsilon = 1e-5f;
  p.bnorm.momentum = 0.9f;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

// One training step (forward, then backward with all three gradients) on
// N x H x W x C; returns y, running mean / var, saved mean / inv_std, dx,
// dscale, dbias as doubles.
std::vector<std::vector<double>> step(const std::vector<int>& dims, uint32_t backend, bool view, uint32_t seed) {
  std::mt19937 rng(seed);
  const int C = dims[3];
  auto big = [&] { return view ? T::view(CCV_32F, dims) : T(CCV_32F, dims); };
  T x = big(), g = big(), y(CCV_32F, dims), dx(CCV_32F, dims);
  T scale(CCV_32F, {C}), bias(CCV_32F, {C}), rm(CCV_32F, {C}), rv(CCV_32F, {C}), sm(CCV_32F, {C}),
      si(CCV_32F, {C}), ds(CCV_32F, {C}), db(CCV_32F, {C});
  // A mean well away from 0 per channel, so that the shifted sums matter.
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < x.count(); i++) x.set(i, 3.0 + 0.5 * static_cast<double>(i % C) + u(rng));
  cmdtest::fill_uniform(g, rng, -1, 1);
  cmdtest::fill_uniform(scale, rng, 0.5, 1.5);
  cmdtest::fill_uniform(bias, rng, -1, 1);
  for (int k = 0; k < C; k++) rm.set(k, 0), rv.set(k, 1);
  EXPECT_EQ(cmdtest::run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, backend), {x, scale, bias, rm, rv}, {y, rm, rv, sm, si}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(cmdtest::run(bnorm(CCV_NNC_BATCH_NORM_BACKWARD, backend),
                         {g, nullptr, nullptr, nullptr, nullptr, x, scale, bias, rm, rv, y, rm, rv, sm, si},
                         {dx, ds, db}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<std::vector<double>> out;
  for (const T* t : {&y, &rm, &rv, &sm, &si, &dx, &ds, &db}) {
    std::vector<double> v(t->count());
    for (size_t i = 0; i < v.size(); i++) v[i] = t->get(i);
    out.push_back(std::move(v));
  }
  return out;
}

class NormAvx2Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

TEST_F(NormAvx2Test, ChannelsInnerBatchNormMatchesRef) {
  const std::vector<std::vector<int>> shapes = {
      {3, 5, 7, 8},   {2, 9, 5, 24},    {3, 7, 5, 32},     {2, 11, 6, 40},    {2, 5, 7, 72}, {2, 3, 5, 12},
      {2, 9, 7, 512}, {2, 3, 7, 520},   {1, 1, 1, 16},     {2, 70, 73, 64},
      // Outputs of 8 MiB and more: streamed, coefficients in registers (24, 32) or read per row (40, 136).
      {2, 181, 181, 32}, {4, 123, 179, 24}, {3, 131, 131, 40}, {2, 64, 128, 136}};
  const char* names[] = {"y", "running mean", "running var", "saved mean", "saved inv_std", "dx", "dscale", "dbias"};
  uint32_t seed = 1;
  for (const auto& dims : shapes)
    for (bool view : {false, true}) {
      const size_t n = static_cast<size_t>(dims[0]) * dims[1] * dims[2] * dims[3];
      if (view && n > (size_t{1} << 21)) continue;  // one large view is enough
      if (view && dims[3] == 512) continue;
      SCOPED_TRACE("NHWC " + std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) +
                   "x" + std::to_string(dims[3]) + (view ? " view" : ""));
      const auto opt = step(dims, CCV_NNC_BACKEND_CPU_OPT, view, seed);
      const auto ref = step(dims, CCV_NNC_BACKEND_CPU_REF, false, seed);
      seed++;
      for (size_t o = 0; o < opt.size(); o++) {
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < opt[o].size(); i++) {
          const double d = std::fabs(opt[o][i] - ref[o][i]) / std::max(1.0, std::fabs(ref[o][i]));
          if (!(d <= worst)) worst = d, at = i;
        }
        // fp32 sums over up to 4 x 10^6 elements in a different order than CPU_REF's.
        EXPECT_LE(worst, 2e-4) << names[o] << " at " << at << ": " << opt[o][at] << " vs " << ref[o][at];
      }
    }
}

ccv_nnc_cmd_t lnorm(uint32_t id, int affine) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.lnorm.count = 1;
  p.lnorm.axis[0] = 2;
  p.lnorm.epsilon = 1e-5f;
  p.lnorm.elementwise_affine = affine;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

TEST_F(NormAvx2Test, StreamedLayerNormMatchesRef) {
  // 8.5 MB rows of 520 (streamed), one of 525 floats (not a multiple of 8: the plain loops).
  for (const std::vector<int>& dims : {std::vector<int>{64, 64, 520}, std::vector<int>{4, 1001, 525}})
    for (int affine : {0, 1}) {
      SCOPED_TRACE(std::to_string(dims[2]) + (affine ? " affine" : ""));
      std::mt19937 rng(11);
      const std::vector<int> ss = {1, 1, dims[2]}, ms = {dims[0], dims[1], 1};
      T x(CCV_32F, dims), g(CCV_32F, dims), scale(CCV_32F, ss), bias(CCV_32F, ss);
      cmdtest::fill_uniform(x, rng, -1, 3), cmdtest::fill_uniform(g, rng);
      cmdtest::fill_uniform(scale, rng), cmdtest::fill_uniform(bias, rng);
      std::vector<ccv_nnc_tensor_t*> in = {x};
      if (affine) in = {x, scale, bias};
      cmdtest::expect_backends_agree(lnorm(CCV_NNC_LAYER_NORM_FORWARD, affine), ccv_nnc_no_hint, in, {dims, ms, ms},
                                     CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 2e-4);
      T y(CCV_32F, dims), sm(CCV_32F, ms), si(CCV_32F, ms);
      ASSERT_EQ(cmdtest::run(lnorm(CCV_NNC_LAYER_NORM_FORWARD, affine), in, {y, sm, si}), CCV_NNC_EXEC_SUCCESS);
      std::vector<ccv_nnc_tensor_t*> bin = {g, nullptr, nullptr, x};
      if (affine) bin.insert(bin.end(), {scale.get(), bias.get()});
      bin.insert(bin.end(), {y.get(), sm.get(), si.get()});
      std::vector<std::vector<int>> outs = {dims};
      if (affine) outs = {dims, ss, ss};
      cmdtest::expect_backends_agree(lnorm(CCV_NNC_LAYER_NORM_BACKWARD, affine), ccv_nnc_no_hint, bin, outs,
                                     CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 2e-4);
    }
}

}  // namespace
