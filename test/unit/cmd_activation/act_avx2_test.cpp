// The activation loops' exp on the AVX2 path (registered as test_act_avx2 and,
// with NNC_NO_AVX512=1, test_act_avx2_avx2, so that an AVX-512 machine runs
// the AVX2 loops too): exp scales its reduced value by an exponent add where
// every lane of a register stays normal and by the two-factor scalef where a
// lane does not. CPU_OPT against CPU_REF, relative to each value (down to a
// few hundred subnormal steps), on registers that take one branch, the other,
// or both across the tensor; odd lengths, tails, streamed runs and views.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"

namespace {

using cmdtest::T;

struct Op {
  const char* name;
  uint32_t forward;
  int tanh;
};
const Op kOps[] = {{"sigmoid", CCV_NNC_SIGMOID_FORWARD, 0},
                   {"tanh", CCV_NNC_TANH_FORWARD, 0},
                   {"gelu", CCV_NNC_GELU_FORWARD, 0},
                   {"gelu_tanh", CCV_NNC_GELU_FORWARD, 1},
                   {"swish", CCV_NNC_SWISH_FORWARD, 0}};

ccv_nnc_cmd_t make(const Op& op, bool backward, uint32_t backend) {
  ccv_nnc_cmd_param_t p{};
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.gelu.tanh = op.tanh;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(op.forward + (backward ? 1 : 0), nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

// Worst |a - b| / (rtol |b| + atol) over two tensors: at most 1 passes. atol is
// a few subnormal steps, so tiny results are compared by their own size.
double worst(const T& a, const T& b, double rtol, double atol, size_t* at) {
  double w = 0;
  for (size_t i = 0; i < a.count(); i++) {
    const double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::fabs(x - y) / (rtol * std::fabs(y) + atol);
    if (!(d <= w)) w = d, *at = i;
  }
  return w;
}

// x: `pattern` 0 keeps every value where exp's argument stays normal (|x| <=
// 8), 1 puts one far value (|x| in [87, 110], exp's argument leaving the
// normal range for some op) in every 13th element, so that some registers mix
// both kinds and others do not, 2 walks x densely over the edge of the
// exponent add's range (-89 .. -85 and 85 .. 89) and beyond.
void fill(const T& x, std::mt19937& rng, int pattern) {
  std::uniform_real_distribution<double> small(-8, 8), far(87, 110);
  for (size_t i = 0; i < x.count(); i++) {
    double v = small(rng);
    if (pattern == 1 && i % 13 == 5) v = (i % 2 ? 1 : -1) * far(rng);
    if (pattern == 2) {
      const double t = static_cast<double>(i % 512) / 511.0;
      v = (i / 512 % 2 ? 1 : -1) * (85 + 4 * t) + (i % 97 == 0 ? (i % 2 ? 40 : -40) : 0);
    }
    x.set(i, v);
  }
}

class ActAvx2Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
  std::mt19937 rng{20261125};
};

TEST_F(ActAvx2Test, ExpBranchesMatchRef) {
  const std::vector<std::vector<int>> shapes = {{1}, {7}, {8}, {9}, {17}, {3, 37}, {1031}, {2, 65547}};
  for (const Op& op : kOps) {
    for (const auto& shape : shapes) {
      for (int view = 0; view < 2; view++) {
        if (view && shape.size() == 1) continue;
        for (int pattern = 0; pattern < 3; pattern++) {
          SCOPED_TRACE(std::string(op.name) + (view ? " view " : " packed ") + std::to_string(shape.back()) +
                       " pattern " + std::to_string(pattern));
          auto make_t = [&] { return view ? T::view(CCV_32F, shape) : T(CCV_32F, shape); };
          T x = make_t(), g = make_t(), y_ref = make_t(), y_opt = make_t(), dx_ref = make_t(), dx_opt = make_t();
          fill(x, rng, pattern);
          cmdtest::fill_uniform(g, rng, -2, 2);
          ASSERT_EQ(cmdtest::run(make(op, false, CCV_NNC_BACKEND_CPU_REF), {x}, {y_ref}), CCV_NNC_EXEC_SUCCESS);
          ASSERT_EQ(cmdtest::run(make(op, false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y_opt}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          size_t at = 0;
          // The GELU tanh form's cubic argument costs up to |2u| ulp in the negative tail (activation_test.cpp).
          const double rtol = op.tanh ? 3e-5 : 2e-6;
          // SWISH and GELU multiply a subnormal sigmoid / Phi by x (up to 110): |x| subnormal steps of
          // absolute error, inherent in fp32 (SigmoidTailAgainstDouble checks exp's tail in steps).
          double w = worst(y_opt, y_ref, rtol, 4e-43, &at);
          EXPECT_LE(w, 1.0) << "forward x = " << x.get(at) << " opt " << y_opt.get(at) << " ref " << y_ref.get(at);
          ASSERT_EQ(cmdtest::run(make(op, true, CCV_NNC_BACKEND_CPU_REF), {g, x, y_ref}, {dx_ref}),
                    CCV_NNC_EXEC_SUCCESS);
          ASSERT_EQ(cmdtest::run(make(op, true, CCV_NNC_BACKEND_CPU_OPT), {g, x, y_ref}, {dx_opt}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          // Near the zero of GELU's derivative (x = -0.75) dx is a difference of O(1) terms: an
          // absolute floor of the terms' rounding, relative beyond.
          w = worst(dx_opt, dx_ref, op.tanh ? 3e-5 : 1e-5, 1e-6, &at);
          EXPECT_LE(w, 1.0) << "backward x = " << x.get(at) << " opt " << dx_opt.get(at) << " ref "
                            << dx_ref.get(at);
          EXPECT_TRUE(y_opt.guard_intact());
          EXPECT_TRUE(dx_opt.guard_intact());
        }
      }
    }
  }
}

// exp's result itself at the edge: SIGMOID of x <= 0 is e^x / (1 + e^x), so
// its value is e^x to the last bits where e^x is tiny. Against double, in
// units of the result (normal) or of the subnormal step.
TEST_F(ActAvx2Test, SigmoidTailAgainstDouble) {
  T x(CCV_32F, {4099}), y(CCV_32F, {4099});
  for (size_t i = 0; i < x.count(); i++) x.set(i, -80.0 - 25.0 * static_cast<double>(i) / 4098.0);
  ASSERT_EQ(cmdtest::run(make(kOps[0], false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < x.count(); i++) {
    const double want = 1 / (1 + std::exp(-x.get(i)));
    const double step = std::max(std::fabs(want) * 0x1p-23, 0x1p-149);
    EXPECT_LE(std::fabs(y.get(i) - want), 2.5 * step) << "x = " << x.get(i);
  }
}

}  // namespace
