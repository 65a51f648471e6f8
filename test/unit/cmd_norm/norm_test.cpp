// BATCH_NORM and LAYER_NORM against references written here, finite
// differences in fp64, and CPU_REF.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "norm_easy.h"

using namespace cmdtest;

namespace {

class Norm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

ccv_nnc_cmd_t bnorm(uint32_t id, std::vector<int> axes, float eps, int is_test, float momentum, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.bnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) p.bnorm.axis[i] = axes[i];
  p.bnorm.epsilon = eps;
  p.bnorm.is_test = is_test;
  p.bnorm.momentum = momentum;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

ccv_nnc_cmd_t lnorm(uint32_t id, std::vector<int> axes, float eps, int affine, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.lnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) p.lnorm.axis[i] = axes[i];
  p.lnorm.epsilon = eps;
  p.lnorm.elementwise_affine = affine;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

// Independent statistics: for each element its group (kept axes, row-major) and
// position inside the group (reduced axes, row-major); mean and biased variance per group.
struct Stats {
  std::vector<size_t> group, inside;
  std::vector<double> mean, var;
  size_t groups = 1, size = 1;
};

Stats stats_of(const T& x, const std::vector<int>& dims, const std::vector<int>& axes) {
  Stats s;
  std::vector<bool> red(dims.size(), false);
  for (int a : axes) red[a] = true;
  for (size_t i = 0; i < dims.size(); i++) (red[i] ? s.size : s.groups) *= dims[i];
  s.mean.assign(s.groups, 0), s.var.assign(s.groups, 0);
  std::vector<int> idx(dims.size());
  for (size_t lin = 0; lin < x.count(); lin++) {
    size_t rem = lin;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; i--)
      idx[i] = static_cast<int>(rem % dims[i]), rem /= dims[i];
    size_t g = 0, in = 0;
    for (size_t i = 0; i < dims.size(); i++) (red[i] ? in : g) = (red[i] ? in : g) * dims[i] + idx[i];
    s.group.push_back(g), s.inside.push_back(in);
    s.mean[g] += x.get(lin);
  }
  for (double& m : s.mean) m /= static_cast<double>(s.size);
  for (size_t lin = 0; lin < x.count(); lin++) {
    const double d = x.get(lin) - s.mean[s.group[lin]];
    s.var[s.group[lin]] += d * d;
  }
  for (double& v : s.var) v /= static_cast<double>(s.size);
  return s;
}

std::vector<int> channel_shape(std::vector<int> dims, const std::vector<int>& axes) {
  for (int a : axes) dims[a] = 1;
  return dims;
}
std::vector<int> normalised_shape(std::vector<int> dims, const std::vector<int>& axes) {
  std::vector<bool> red(dims.size(), false);
  for (int a : axes) red[a] = true;
  for (size_t i = 0; i < dims.size(); i++)
    if (!red[i]) dims[i] = 1;
  return dims;
}

struct BnCase {
  std::vector<int> dims, axes;
  int format;
};
const BnCase kBnCases[] = {
    {{4, 3, 5, 6}, {0, 1, 2}, NHWC}, {{4, 6, 3, 5}, {0, 2, 3}, NCHW}, {{7, 5}, {0}, NHWC}, {{3, 4, 5}, {0, 2}, NHWC}};

TEST_F(Norm, BatchNormTrainingForwardMatchesReference) {
  std::mt19937 rng(1);
  for (uint32_t backend : {0u, uint32_t(CCV_NNC_BACKEND_CPU_REF), uint32_t(CCV_NNC_BACKEND_CPU_OPT)})
    for (int dt : {CCV_32F, CCV_64F})
      for (const BnCase& c : kBnCases)
        for (bool view : {false, true}) {
          const std::vector<int> cs = channel_shape(c.dims, c.axes);
          T x = view ? T::view(dt, c.dims, c.format) : T(dt, c.dims, c.format);
          T y = view ? T::view(dt, c.dims, c.format) : T(dt, c.dims, c.format);
          T scale(dt, cs, c.format), bias(dt, cs, c.format), rm(dt, cs, c.format), rv(dt, cs, c.format);
          T sm = T::view(dt, cs, c.format), si(dt, cs, c.format);
          fill_uniform(x, rng, -3, 5);
          fill_uniform(scale, rng, 0.5, 2), fill_uniform(bias, rng), fill_uniform(rm, rng), fill_uniform(rv, rng, 1, 2);
          std::vector<double> rm0(rm.count()), rv0(rv.count());
          for (size_t k = 0; k < rm.count(); k++) rm0[k] = rm.get(k), rv0[k] = rv.get(k);
          // The running statistics are updated in place, as libnnc's graphs do.
          ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 1e-3f, 0, 0.75f, backend), {x, scale, bias, rm, rv},
                        {y, rm, rv, sm, si}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          const Stats s = stats_of(x, c.dims, c.axes);
          const double tol = dt == CCV_32F ? 2e-5 : 1e-12;
          for (size_t k = 0; k < s.groups; k++) {
            EXPECT_NEAR(sm.get(k), s.mean[k], tol);
            EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k] + double(1e-3f)), tol * 10);
            EXPECT_NEAR(rm.get(k), rm0[k] * 0.75 + s.mean[k] * 0.25, tol);
            EXPECT_NEAR(rv.get(k), rv0[k] * 0.75 + s.var[k] * 0.25, tol * 10);
          }
          for (size_t i = 0; i < x.count(); i++) {
            const size_t k = s.group[i];
            const double want =
                (x.get(i) - s.mean[k]) / std::sqrt(s.var[k] + double(1e-3f)) * scale.get(k) + bias.get(k);
            ASSERT_NEAR(y.get(i), want, tol * 10) << "element " << i;
          }
          EXPECT_TRUE(y.guard_intact());
          EXPECT_TRUE(sm.guard_intact());
        }
}

TEST_F(Norm, BatchNormInferenceUsesTheRunningStatistics) {
  std::mt19937 rng(2);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (const BnCase& c : kBnCases) {
      const std::vector<int> cs = channel_shape(c.dims, c.axes);
      T x(CCV_32F, c.dims, c.format), y(CCV_32F, c.dims, c.format);
      T scale(CCV_32F, cs), bias(CCV_32F, cs), rm(CCV_32F, cs), rv(CCV_32F, cs);
      fill_uniform(x, rng), fill_uniform(scale, rng), fill_uniform(bias, rng), fill_uniform(rm, rng);
      fill_uniform(rv, rng, 0.5, 2);
      ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 1e-5f, 1, 0.9f, backend), {x, scale, bias, rm, rv}, {y}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const Stats s = stats_of(x, c.dims, c.axes);
      for (size_t i = 0; i < x.count(); i++) {
        const size_t k = s.group[i];
        const double want = (x.get(i) - rm.get(k)) / std::sqrt(rv.get(k) + double(1e-5f)) * scale.get(k) + bias.get(k);
        ASSERT_NEAR(y.get(i), want, 1e-5 * std::max(1.0, std::fabs(want)));
      }
    }
}

TEST_F(Norm, BatchNormBackwardMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  const BnCase cases[] = {{{3, 2, 2, 3}, {0, 1, 2}, NHWC}, {{2, 3, 2, 2}, {0, 2, 3}, NCHW}};
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (const BnCase& c : cases)
      for (int is_test : {0, 1}) {
        const std::vector<int> cs = channel_shape(c.dims, c.axes);
        T x(CCV_64F, c.dims, c.format), scale(CCV_64F, cs, c.format), bias(CCV_64F, cs, c.format),
            rm(CCV_64F, cs, c.format), rv(CCV_64F, cs, c.format);
        fill_uniform(x, rng, -2, 2), fill_uniform(scale, rng, 0.5, 2), fill_uniform(bias, rng), fill_uniform(rm, rng);
        fill_uniform(rv, rng, 0.5, 2);
        expect_gradients_match_some(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 1e-3f, is_test, 0.9f, backend),
                                    bnorm(CCV_NNC_BATCH_NORM_BACKWARD, c.axes, 1e-3f, is_test, 0.9f, backend),
                                    ccv_nnc_no_hint, {&x, &scale, &bias, &rm, &rv}, {c.dims, cs, cs, cs, cs},
                                    {true, false, false, false, false}, {true, true, true, false, false}, rng, 1e-6,
                                    1e-6, c.format);
        // libnnc's five outputs: the running mean and var get gradients too
        // (zero in training, where y does not read them).
        expect_gradients_match_some(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 1e-3f, is_test, 0.9f, backend),
                                    bnorm(CCV_NNC_BATCH_NORM_BACKWARD, c.axes, 1e-3f, is_test, 0.9f, backend),
                                    ccv_nnc_no_hint, {&x, &scale, &bias, &rm, &rv}, {c.dims, cs, cs, cs, cs},
                                    {true, false, false, false, false}, {true, true, true, true, true}, rng, 1e-6,
                                    1e-6, c.format);
      }
}

// Run a training forward and backward on `backend`; returns y, saved stats, dx, dscale, dbias as doubles.
std::vector<std::vector<double>> bn_round(const BnCase& c, uint32_t backend, bool view, int dt, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<int> cs = channel_shape(c.dims, c.axes);
  T x = view ? T::view(dt, c.dims, c.format, 1) : T(dt, c.dims, c.format);
  T g = view ? T::view(dt, c.dims, c.format, 1) : T(dt, c.dims, c.format);
  T y = view ? T::view(dt, c.dims, c.format, 2) : T(dt, c.dims, c.format);
  T dx = view ? T::view(dt, c.dims, c.format, 2) : T(dt, c.dims, c.format);
  T scale(dt, cs), bias(dt, cs), rm(dt, cs), rv(dt, cs), sm(dt, cs), si(dt, cs), ds(dt, cs), db(dt, cs);
  fill_uniform(x, rng, -1, 3), fill_uniform(g, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
  fill_uniform(rm, rng), fill_uniform(rv, rng, 1, 2);
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 1e-5f, 0, 0.9f, backend), {x, scale, bias, rm, rv},
                {y, rm, rv, sm, si}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_BACKWARD, c.axes, 1e-5f, 0, 0.9f, backend),
                {g, nullptr, nullptr, nullptr, nullptr, x, scale, bias, rm, rv, y, rm, rv, sm, si}, {dx, ds, db}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<std::vector<double>> out;
  for (const T* t : {&y, &rm, &rv, &sm, &si, &dx, &ds, &db}) {
    out.emplace_back();
    for (size_t i = 0; i < t->count(); i++) out.back().push_back(t->get(i));
  }
  return out;
}

void expect_close(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); j++)
    for (size_t i = 0; i < a[j].size(); i++)
      ASSERT_NEAR(a[j][i], b[j][i], tol * std::max(1.0, std::fabs(b[j][i]))) << "tensor " << j << " element " << i;
}

TEST_F(Norm, BatchNormOptAgreesWithRefOnOddAndLargeShapes) {
  const BnCase cases[] = {{{5, 7, 9, 13}, {0, 1, 2}, NHWC},
                          {{3, 17, 11, 10}, {0, 2, 3}, NCHW},
                          {{8, 20, 20, 37}, {0, 1, 2}, NHWC},
                          {{6, 37, 20, 21}, {0, 2, 3}, NCHW},
                          {{3, 2, 40, 41}, {0, 2, 3}, NCHW},
                          {{1000, 3}, {0}, NHWC},
                          // Channels inner, K a multiple of 16: sums in registers (AVX-512); with
                          // 8 MiB of output (nnc::kStreamBytes) it is streamed, with the
                          // channels' coefficients in registers up to K = 64.
                          {{2, 16, 16, 48}, {0, 1, 2}, NHWC},
                          {{4, 64, 64, 128}, {0, 1, 2}, NHWC},
                          {{2, 128, 128, 64}, {0, 1, 2}, NHWC}};
  uint32_t seed = 10;
  for (const BnCase& c : cases)
    for (int dt : {CCV_32F, CCV_64F}) {
      // The streaming case exists for fp32's paths; fp64 is covered by the others.
      size_t elements = 1;
      for (int d : c.dims) elements *= static_cast<size_t>(d);
      if (dt == CCV_64F && elements >= (size_t{1} << 21)) continue;
      expect_close(bn_round(c, CCV_NNC_BACKEND_CPU_OPT, false, dt, seed),
                   bn_round(c, CCV_NNC_BACKEND_CPU_REF, false, dt, seed), dt == CCV_32F ? 5e-4 : 1e-10);
      // Views (x and g; OPT packs them in its workspace) against REF on packed tensors.
      expect_close(bn_round(c, CCV_NNC_BACKEND_CPU_OPT, true, dt, seed),
                   bn_round(c, CCV_NNC_BACKEND_CPU_REF, false, dt, seed), dt == CCV_32F ? 5e-4 : 1e-10);
      seed++;
    }
}

TEST_F(Norm, BatchNormLargeMeanSmallVarianceKeepsItsDigits) {
  std::mt19937 rng(4);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (const BnCase& c : {BnCase{{16, 9, 9, 8}, {0, 1, 2}, NHWC}, BnCase{{16, 8, 9, 9}, {0, 2, 3}, NCHW}}) {
      const std::vector<int> cs = channel_shape(c.dims, c.axes);
      T x(CCV_32F, c.dims, c.format), y(CCV_32F, c.dims, c.format), scale(CCV_32F, cs), bias(CCV_32F, cs);
      T sm(CCV_32F, cs), si(CCV_32F, cs);
      for (size_t i = 0; i < x.count(); i++) x.set(i, 10000 + std::uniform_real_distribution<double>(-1e-2, 1e-2)(rng));
      for (size_t k = 0; k < scale.count(); k++) scale.set(k, 1), bias.set(k, 0);
      ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, c.axes, 0, 0, 0.9f, backend), {x, scale, bias, nullptr, nullptr},
                    {y, nullptr, nullptr, sm, si}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const Stats s = stats_of(x, c.dims, c.axes);  // x as stored (fp32), statistics in double
      for (size_t k = 0; k < s.groups; k++)
        EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k]), 1e-4 / std::sqrt(s.var[k])) << "channel " << k;
      double worst = 0;
      for (size_t i = 0; i < x.count(); i++) {
        const size_t k = s.group[i];
        worst = std::max(worst, std::fabs(y.get(i) - (x.get(i) - s.mean[k]) / std::sqrt(s.var[k])));
      }
      EXPECT_LT(worst, 1e-3);  // y is O(1): centring on the mean keeps the cancellation exact
    }
}

TEST_F(Norm, BatchNormSortedDataAndLayerNormLargeMean) {
  // Sorted channels: the first rows (a sample a one-pass method might shift by) are far below the mean.
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    const std::vector<int> dims = {4000, 3};
    T x(CCV_32F, dims), y(CCV_32F, dims), scale(CCV_32F, {3}), bias(CCV_32F, {3}), sm(CCV_32F, {3}), si(CCV_32F, {3});
    for (size_t i = 0; i < x.count(); i++) x.set(i, 1000 + 0.01 * static_cast<double>(i / 3) / 4000.0 + (i % 3));
    for (int k = 0; k < 3; k++) scale.set(k, 1), bias.set(k, 0);
    ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 0, 0, 0.9f, backend), {x, scale, bias, nullptr, nullptr},
                  {y, nullptr, nullptr, sm, si}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const Stats s = stats_of(x, dims, {0});
    for (size_t k = 0; k < 3; k++)
      EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k]), 1e-3 / std::sqrt(s.var[k])) << "channel " << k;
    for (size_t i = 0; i < x.count(); i++)
      ASSERT_NEAR(y.get(i), (x.get(i) - s.mean[s.group[i]]) / std::sqrt(s.var[s.group[i]]), 2e-3) << i;
  }
  std::mt19937 rng(9);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    const std::vector<int> dims = {5, 300};
    T x(CCV_32F, dims), y(CCV_32F, dims), sm(CCV_32F, {5, 1}), si(CCV_32F, {5, 1});
    for (size_t i = 0; i < x.count(); i++) x.set(i, -20000 + std::uniform_real_distribution<double>(-0.02, 0.02)(rng));
    ASSERT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 0, 0, backend), {x}, {y, sm, si}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const Stats s = stats_of(x, dims, {1});
    for (size_t i = 0; i < x.count(); i++)
      ASSERT_NEAR(y.get(i), (x.get(i) - s.mean[s.group[i]]) / std::sqrt(s.var[s.group[i]]), 1e-3) << i;
  }
}

TEST_F(Norm, LayerNormForwardMatchesReference) {
  std::mt19937 rng(5);
  struct Case {
    std::vector<int> dims, axes;
  };
  for (uint32_t backend : {0u, uint32_t(CCV_NNC_BACKEND_CPU_REF), uint32_t(CCV_NNC_BACKEND_CPU_OPT)})
    for (int dt : {CCV_32F, CCV_64F})
      for (const Case& c : {Case{{4, 5, 7}, {2}}, Case{{3, 4, 5}, {1, 2}}, Case{{6, 9}, {1}}, Case{{6, 9}, {0, 1}},
                            Case{{4, 5, 6}, {0}}})
        for (int affine : {0, 1}) {
          if (backend == CCV_NNC_BACKEND_CPU_OPT && c.axes[0] == 0 && c.axes.size() == 1) continue;  // REF's case
          const std::vector<int> ss = normalised_shape(c.dims, c.axes), ms = channel_shape(c.dims, c.axes);
          // Odd rounds use views of x and y.
          const bool view = (c.dims.size() + affine + dt) % 2 == 1;
          T x = view ? T::view(dt, c.dims) : T(dt, c.dims), y = view ? T::view(dt, c.dims) : T(dt, c.dims);
          T scale(dt, ss), bias(dt, ss), sm(dt, ms), si = T::view(dt, ms);
          fill_uniform(x, rng, -2, 4), fill_uniform(scale, rng), fill_uniform(bias, rng);
          std::vector<ccv_nnc_tensor_t*> in = {x};
          if (affine) in = {x, scale, bias};
          ASSERT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_FORWARD, c.axes, 1e-4f, affine, backend), in, {y, sm, si}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          const Stats s = stats_of(x, c.dims, c.axes);
          const double tol = dt == CCV_32F ? 1e-5 : 1e-12;
          for (size_t k = 0; k < s.groups; k++) {
            EXPECT_NEAR(sm.get(k), s.mean[k], tol);
            EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k] + double(1e-4f)), tol * 10);
          }
          for (size_t i = 0; i < x.count(); i++) {
            const size_t k = s.group[i], j = s.inside[i];
            double want = (x.get(i) - s.mean[k]) / std::sqrt(s.var[k] + double(1e-4f));
            if (affine) want = want * scale.get(j) + bias.get(j);
            ASSERT_NEAR(y.get(i), want, tol * 10 * std::max(1.0, std::fabs(want)));
          }
          EXPECT_TRUE(si.guard_intact());
        }
}

TEST_F(Norm, LayerNormBackwardMatchesFiniteDifferences) {
  std::mt19937 rng(6);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (int affine : {0, 1}) {
      const std::vector<int> dims = {3, 2, 5}, axes = {2};
      const std::vector<int> ss = normalised_shape(dims, axes), ms = channel_shape(dims, axes);
      T x(CCV_64F, dims), scale(CCV_64F, ss), bias(CCV_64F, ss);
      fill_uniform(x, rng, -2, 2), fill_uniform(scale, rng, 0.5, 2), fill_uniform(bias, rng);
      std::vector<T*> in = {&x};
      std::vector<bool> diff = {true};
      if (affine) in = {&x, &scale, &bias}, diff = {true, true, true};
      expect_gradients_match_some(lnorm(CCV_NNC_LAYER_NORM_FORWARD, axes, 1e-3f, affine, backend),
                                  lnorm(CCV_NNC_LAYER_NORM_BACKWARD, axes, 1e-3f, affine, backend), ccv_nnc_no_hint, in,
                                  {dims, ms, ms}, {true, false, false}, diff, rng);
    }
  // Two normalised axes, on the reference backend.
  const std::vector<int> dims = {2, 3, 4}, axes = {1, 2};
  T x(CCV_64F, dims), scale(CCV_64F, normalised_shape(dims, axes)), bias(CCV_64F, normalised_shape(dims, axes));
  fill_uniform(x, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
  expect_gradients_match_some(lnorm(CCV_NNC_LAYER_NORM_FORWARD, axes, 1e-3f, 1),
                              lnorm(CCV_NNC_LAYER_NORM_BACKWARD, axes, 1e-3f, 1), ccv_nnc_no_hint, {&x, &scale, &bias},
                              {dims, channel_shape(dims, axes), channel_shape(dims, axes)}, {true, false, false},
                              {true, true, true}, rng);
}

TEST_F(Norm, LayerNormOptAgreesWithRef) {
  for (int dt : {CCV_32F, CCV_64F})
    for (const std::vector<int>& dims :
         {std::vector<int>{7, 13, 77}, std::vector<int>{64, 3, 768}, std::vector<int>{5, 1001}})
      for (int affine : {0, 1}) {
        std::mt19937 rng(7);
        const std::vector<int> axes = {static_cast<int>(dims.size()) - 1};
        const std::vector<int> ss = normalised_shape(dims, axes), ms = channel_shape(dims, axes);
        // With scale and bias, x and g are views (OPT packs them in its workspace).
        T x = affine ? T::view(dt, dims, NHWC, 1) : T(dt, dims), g = affine ? T::view(dt, dims, NHWC, 1) : T(dt, dims);
        T scale(dt, ss), bias(dt, ss);
        fill_uniform(x, rng, -1, 3), fill_uniform(g, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
        std::vector<ccv_nnc_tensor_t*> in = {x};
        if (affine) in = {x, scale, bias};
        const double tol = dt == CCV_32F ? 2e-4 : 1e-10;
        expect_backends_agree(lnorm(CCV_NNC_LAYER_NORM_FORWARD, axes, 1e-5f, affine), ccv_nnc_no_hint, in,
                              {dims, ms, ms}, dt, CCV_NNC_BACKEND_CPU_OPT, tol);
        T y(dt, dims), sm(dt, ms), si(dt, ms);
        ASSERT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_FORWARD, axes, 1e-5f, affine), in, {y, sm, si}), CCV_NNC_EXEC_SUCCESS);
        std::vector<ccv_nnc_tensor_t*> bin = {g, nullptr, nullptr, x};
        if (affine) bin.insert(bin.end(), {scale.get(), bias.get()});
        bin.insert(bin.end(), {y.get(), sm.get(), si.get()});
        std::vector<std::vector<int>> outs = {dims};
        if (affine) outs = {dims, ss, ss};
        expect_backends_agree(lnorm(CCV_NNC_LAYER_NORM_BACKWARD, axes, 1e-5f, affine), ccv_nnc_no_hint, bin, outs, dt,
                              CCV_NNC_BACKEND_CPU_OPT, tol);
      }
}

TEST_F(Norm, HalfPrecisionOnTheReferenceBackend) {
  std::mt19937 rng(8);
  for (int dt : {CCV_16F, CCV_16BF}) {
    T x(dt, {6, 4}), y(dt, {6, 4}), scale(dt, {4}), bias(dt, {4});
    fill_random(x, rng);
    for (int k = 0; k < 4; k++) scale.set(k, 1), bias.set(k, 0);
    ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 1e-3f, 0, 0.9f), {x, scale, bias, nullptr, nullptr}, {y}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const Stats s = stats_of(x, {6, 4}, {0});
    for (size_t i = 0; i < x.count(); i++) {
      const double want = (x.get(i) - s.mean[s.group[i]]) / std::sqrt(s.var[s.group[i]] + double(1e-3f));
      EXPECT_NEAR(y.get(i), want, dt == CCV_16F ? 4e-3 : 3e-2);
    }
  }
}

TEST_F(Norm, InPlaceOutputsAndStreams) {
  // y may be x itself (both commands allow it), and a stream's workspace serves the optimised kernels.
  std::mt19937 rng(10);
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(stream, nullptr);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    const std::vector<int> dims = {6, 5, 4, 7};
    T x(CCV_32F, dims, NCHW), y(CCV_32F, dims, NCHW), scale(CCV_32F, {5}), bias(CCV_32F, {5});
    fill_uniform(x, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
    const ccv_nnc_cmd_t f = bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0, 2, 3}, 1e-5f, 0, 0.9f, backend);
    ccv_nnc_tensor_t* in[] = {x, scale, bias, nullptr, nullptr};
    ccv_nnc_tensor_t* out[] = {y};
    ASSERT_EQ(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, in, 5, out, 1, stream), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_stream_context_wait(stream);
    ccv_nnc_tensor_t* self[] = {x};
    ASSERT_EQ(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, in, 5, self, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < x.count(); i++) ASSERT_NEAR(x.get(i), y.get(i), 1e-6);
    T z(CCV_32F, {9, 31}), w(CCV_32F, {9, 31});
    fill_uniform(z, rng);
    const ccv_nnc_cmd_t l = lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 1e-5f, 0, backend);
    ASSERT_EQ(run(l, {z}, {w}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run(l, {z}, {z}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < z.count(); i++) ASSERT_NEAR(z.get(i), w.get(i), 1e-6);
  }
  ccv_nnc_stream_context_free(stream);
}

TEST_F(Norm, ShapeInference) {
  ccv_nnc_tensor_param_t in[5] = {param(CCV_32F, {8, 6, 5, 5}, NCHW)}, out[5];
  ccv_nnc_hint_tensor_auto(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0, 2, 3}, 1e-5f, 0, 0.9f), in, 1, ccv_nnc_no_hint, out,
                           5);
  EXPECT_EQ(out[0].dim[1], 6);
  EXPECT_EQ(out[3].dim[0], 1);
  EXPECT_EQ(out[3].dim[1], 6);
  EXPECT_EQ(out[3].dim[2], 1);
  ccv_nnc_hint_tensor_auto(lnorm(CCV_NNC_LAYER_NORM_FORWARD, {3}, 1e-5f, 1), in, 1, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(out[1].dim[2], 5);
  EXPECT_EQ(out[1].dim[3], 1);
}

// libnnc's contract (the description file's tensor_auto, bitmask and in-place
// rules), pinned one rule at a time, and the slot layout of the backward run
// with every forward tensor in its place.
TEST_F(Norm, LibnncContract) {
  const ccv_nnc_tensor_param_t x = param(CCV_32F, {8, 6, 5, 5}, NCHW);
  ccv_nnc_tensor_param_t in[15] = {}, out[5];
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  // BATCH_NORM: statistics (and dscale / dbias) are x with the axes of extent 1.
  in[0] = x;
  ccv_nnc_hint_tensor_auto(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0, 2, 3}, 1e-5f, 0, 0.9f), in, 5, ccv_nnc_no_hint, out, 5);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  for (int i = 1; i < 5; i++) EXPECT_EQ(dims(out[i]), (std::vector<int>{1, 6, 1, 1, 0})) << i;
  in[0] = param(CCV_64F, {8, 6, 5, 5}, NCHW);  // the backward's shapes come from g (input 0)
  in[5] = param(CCV_32F, {2, 2}, NCHW);
  ccv_nnc_hint_tensor_auto(bnorm(CCV_NNC_BATCH_NORM_BACKWARD, {0, 2, 3}, 1e-5f, 0, 0.9f), in, 15, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(out[0].datatype, CCV_64F);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{1, 6, 1, 1, 0}));
  EXPECT_EQ(dims(out[2]), (std::vector<int>{1, 6, 1, 1, 0}));
  // LAYER_NORM over {1, 2, 3}: the saved statistics are [8, 1, 1, 1]; the
  // backward's dscale / dbias get the same shape from libnnc's rule.
  in[0] = x;
  ccv_nnc_hint_tensor_auto(lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1, 2, 3}, 1e-5f, 1), in, 3, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{8, 1, 1, 1, 0}));
  EXPECT_EQ(dims(out[2]), (std::vector<int>{8, 1, 1, 1, 0}));
  ccv_nnc_hint_tensor_auto(lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1, 2, 3}, 1e-5f, 1), in, 9, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{8, 1, 1, 1, 0}));

  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  for (int is_test : {0, 1}) {
    const ccv_nnc_cmd_t bf = bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 1e-5f, is_test, 0.9f);
    EXPECT_TRUE(bm(bf, 5, 31, 1, 1));
    EXPECT_TRUE(bm(bf, 5, 31, 5, 31));
    EXPECT_FALSE(bm(bf, 5, 7, 1, 1));
    EXPECT_FALSE(bm(bf, 5, 31, 5, 7));
    EXPECT_FALSE(bm(bf, 5, 31, 5, 0b11001));
    const ccv_nnc_cmd_t bb = bnorm(CCV_NNC_BATCH_NORM_BACKWARD, {0}, 1e-5f, is_test, 0.9f);
    const uint64_t need = 1u | (1u << 5) | (1u << 6) | (1u << 13) | (1u << 14);
    EXPECT_TRUE(bm(bb, 15, need, 3, 7));
    EXPECT_TRUE(bm(bb, 15, 0x7fff, 3, 7));
    EXPECT_FALSE(bm(bb, 15, need, 3, 3));
    for (int i : {0, 5, 6, 13, 14}) EXPECT_FALSE(bm(bb, 15, need & ~(1ull << i), 3, 7)) << i;
  }
  const ccv_nnc_cmd_t la = lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 1e-5f, 1), lp = lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 1e-5f, 0);
  EXPECT_TRUE(bm(la, 3, 7, 3, 7));
  EXPECT_TRUE(bm(la, 3, 7, 3, 1));
  EXPECT_FALSE(bm(la, 3, 1, 3, 7));
  EXPECT_FALSE(bm(la, 3, 7, 3, 3));
  EXPECT_TRUE(bm(lp, 1, 1, 3, 7));
  EXPECT_TRUE(bm(lp, 1, 1, 1, 1));
  EXPECT_FALSE(bm(lp, 3, 7, 3, 7));
  const ccv_nnc_cmd_t lba = lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1}, 1e-5f, 1),
                      lbp = lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1}, 1e-5f, 0);
  const uint64_t affine_need = 1u | (1u << 3) | (1u << 4) | (1u << 7) | (1u << 8);
  for (uint64_t o : {7u, 5u, 3u, 1u}) EXPECT_TRUE(bm(lba, 9, affine_need, 3, o)) << o;
  EXPECT_FALSE(bm(lba, 9, affine_need, 3, 6));
  for (int i : {0, 3, 4, 7, 8}) EXPECT_FALSE(bm(lba, 9, affine_need & ~(1ull << i), 3, 7)) << i;
  const uint64_t plain_need = 1u | (1u << 3) | (1u << 5) | (1u << 6);
  EXPECT_TRUE(bm(lbp, 7, plain_need, 1, 1));
  for (int i : {0, 3, 5, 6}) EXPECT_FALSE(bm(lbp, 7, plain_need & ~(1ull << i), 1, 1)) << i;

  // In place: BATCH_NORM_FORWARD enforces the running statistics' pairs and allows nothing.
  const ccv_nnc_cmd_t bf = bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 1e-5f, 0, 0.9f);
  for (int i = 0; i < 5; i++)
    for (int o = 0; o < 5; o++) {
      EXPECT_EQ(ccv_nnc_cmd_enforce_inplace(bf, i, 5, o, 5), (i == 3 && o == 1) || (i == 4 && o == 2)) << i << o;
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(bf, i, 5, o, 5)) << i << o;
      for (const ccv_nnc_cmd_t& c : {bnorm(CCV_NNC_BATCH_NORM_BACKWARD, {0}, 1e-5f, 0, 0.9f), la,
                                     lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1}, 1e-5f, 1)}) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 15, o, 5));
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 15, o, 5));
      }
    }

  // The backward run in libnnc's slots, with the forward's outputs (the
  // running statistics updated in place) where they belong; its dx matches a
  // double reference: dx = inv_std * scale * (g - mean(g) - xhat * mean(g * xhat)).
  T tx(CCV_64F, {6, 3}), ts(CCV_64F, {3}), tb(CCV_64F, {3}), tm(CCV_64F, {3}), tv(CCV_64F, {3}), ty(CCV_64F, {6, 3});
  T sm(CCV_64F, {3}), si(CCV_64F, {3}), tg(CCV_64F, {6, 3}), dx(CCV_64F, {6, 3}), dsc(CCV_64F, {3}), dbi(CCV_64F, {3});
  std::mt19937 rng(23);
  fill_uniform(tx, rng), fill_uniform(ts, rng), fill_uniform(tb, rng), fill_uniform(tg, rng);
  for (int c = 0; c < 3; c++) tm.set(c, 0), tv.set(c, 1);
  ASSERT_EQ(run(bf, {tx, ts, tb, tm, tv}, {ty, tm, tv, sm, si}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_BACKWARD, {0}, 1e-5f, 0, 0.9f),
                {tg, nullptr, nullptr, nullptr, nullptr, tx, ts, tb, tm, tv, ty, tm, tv, sm, si}, {dx, dsc, dbi}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int c = 0; c < 3; c++) {
    double m = 0, v = 0, mg = 0, mgx = 0;
    for (int n = 0; n < 6; n++) m += tx.get(n * 3 + c) / 6;
    for (int n = 0; n < 6; n++) v += (tx.get(n * 3 + c) - m) * (tx.get(n * 3 + c) - m) / 6;
    const double inv = 1 / std::sqrt(v + 1e-5);
    for (int n = 0; n < 6; n++) {
      mg += tg.get(n * 3 + c) / 6;
      mgx += tg.get(n * 3 + c) * (tx.get(n * 3 + c) - m) * inv / 6;
    }
    EXPECT_NEAR(sm.get(c), m, 1e-12);
    EXPECT_NEAR(tm.get(c), (1 - static_cast<double>(0.9f)) * m, 1e-12);  // the running mean, in place
    for (int n = 0; n < 6; n++) {
      const double xhat = (tx.get(n * 3 + c) - m) * inv;
      EXPECT_NEAR(dx.get(n * 3 + c), inv * ts.get(c) * (tg.get(n * 3 + c) - mg - xhat * mgx), 1e-9);
    }
    EXPECT_NEAR(dsc.get(c), 6 * mgx, 1e-9);
    EXPECT_NEAR(dbi.get(c), 6 * mg, 1e-9);
  }
}

TEST_F(Norm, BadInputFailsWithAMessage) {
  T x(CCV_32F, {4, 3}), y(CCV_32F, {4, 3}), c(CCV_32F, {3}), c4(CCV_32F, {4}), c64(CCV_64F, {3}), y5(CCV_32F, {5, 3});
  const ccv_nnc_cmd_t f = bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 1e-5f, 0, 0.9f);
  EXPECT_EQ(run(f, {x, c, c, c, c}, {y, c, c, c, c}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, c4, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("scale")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, c64, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c, c, c, c}, {y5}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c, c, c, c}, {y, c, c, c, c, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, nullptr, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c, c, nullptr, c}, {y, c}), CCV_NNC_EXEC_INVALID);  // update without a running mean
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, 1e-5f, 1, 0.9f), {x, c, c, nullptr, nullptr}, {y}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {2}, 1e-5f, 0, 0.9f), {x, c, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, -1.f, 0, 0.9f), {x, c, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bnorm(CCV_NNC_BATCH_NORM_FORWARD, {0}, NAN, 0, 0.9f), {x, c, c, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t b = bnorm(CCV_NNC_BATCH_NORM_BACKWARD, {0}, 1e-5f, 0, 0.9f);
  T dx(CCV_32F, {4, 3});
  EXPECT_EQ(run(b, {y, nullptr, nullptr, nullptr, nullptr, x, c, c, c, c, y, c, c, nullptr, c}, {dx}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, x, c}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, nullptr, nullptr, nullptr, nullptr, x, c, c, c, c, y, c, c, c, c}, {nullptr, nullptr}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y5, nullptr, nullptr, nullptr, nullptr, x, c, c, c, c, y, c, c, c, c}, {dx}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t l = lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 1e-5f, 1);
  EXPECT_EQ(run(l, {x, c, c}, {y, c4, c4}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(l, {x, c4, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(l, {x, c, c}, {y, c, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_FORWARD, {1}, 1e-5f, 0), {x, c, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1}, 1e-5f, 1), {y, nullptr, nullptr, x, c, c, y, c4}, {dx}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(lnorm(CCV_NNC_LAYER_NORM_BACKWARD, {1}, 1e-5f, 0), {y, nullptr, nullptr, x, y, c4, c4}, {dx, c}),
            CCV_NNC_EXEC_INVALID);
}

TEST_F(Norm, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_bnorm_forward();
  EXPECT_EQ(f.cmd, CCV_NNC_BATCH_NORM_FORWARD);
  EXPECT_EQ(f.info.bnorm.count, 3);
  EXPECT_EQ(f.info.bnorm.axis[2], 2);
  EXPECT_FLOAT_EQ(f.info.bnorm.momentum, 0.9f);
  EXPECT_EQ(nnc_test_bnorm_backward().info.bnorm.is_test, 1);
  EXPECT_EQ(nnc_test_lnorm_forward().info.lnorm.elementwise_affine, 1);
  EXPECT_EQ(nnc_test_lnorm_forward().info.lnorm.count, 2);
  float y[8];
  ASSERT_EQ(nnc_test_lnorm_example(y), CCV_NNC_EXEC_SUCCESS);
  // Row 0 is 0 1 4 9: mean 3.5, variance 12.25 (std 3.5).
  EXPECT_NEAR(y[0], -1.0, 1e-6);
  EXPECT_NEAR(y[3], 11.0 / 7.0, 1e-6);
}

}  // namespace
