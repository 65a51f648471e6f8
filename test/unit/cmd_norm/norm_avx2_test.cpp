// The channels-inner (NHWC) batch-norm loops of the AVX2 path
// (cmd/norm/norm_avx2.hpp), registered as test_norm_avx2 and, with
// NNC_NO_AVX512=1, test_norm_avx2_avx2, so that an AVX-512 machine runs them
// too: training forward and backward on CPU_OPT against CPU_REF for channel
// counts on each side of the loops' limits (a multiple of 8 or not; up to 24,
// 32, beyond 32 in groups of 32 with a partial last group; the register sums'
// largest K and one past it), small and streamed (at least 8 MiB) outputs,
// row counts that leave a partial block, and views of x and g.
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

}  // namespace
