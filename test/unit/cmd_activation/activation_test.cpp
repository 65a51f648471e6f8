// The activation family through ccv_nnc_cmd_exec: values against double
// references written here, backward against central differences, CPU_OPT
// against CPU_REF (odd sizes, views, NCHW, the threaded size, in place),
// half types, special values, bad input and the easy macros from C.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "activation_easy.h"

namespace {

using cmdtest::T;

struct Case {
  const char* name;
  uint32_t forward;
  float slope;  // leaky_relu.negative_slope
  int tanh;     // gelu.tanh
  double (*f)(double x, double a);
  double rtol32;  // relative bound of CPU_OPT fp32 against the double value
};

double sig(double x) { return 1 / (1 + std::exp(-x)); }

const Case kCases[] = {
    {"relu", CCV_NNC_RELU_FORWARD, 0, 0, [](double x, double) { return x > 0 ? x : 0.0; }, 0},
    {"leaky_relu", CCV_NNC_LEAKY_RELU_FORWARD, 0.1f, 0, [](double x, double a) { return x > 0 ? x : a * x; }, 1e-7},
    {"leaky_relu_negative", CCV_NNC_LEAKY_RELU_FORWARD, -0.3f, 0, [](double x, double a) { return x > 0 ? x : a * x; },
     1e-7},
    {"sigmoid", CCV_NNC_SIGMOID_FORWARD, 0, 0, [](double x, double) { return sig(x); }, 4e-7},
    {"tanh", CCV_NNC_TANH_FORWARD, 0, 0, [](double x, double) { return std::tanh(x); }, 4e-7},
    {"gelu", CCV_NNC_GELU_FORWARD, 0, 0, [](double x, double) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
     8e-7},
    // The tanh form's argument grows like x^3: its float rounding alone is
    // worth |2u| ulp of the result in the negative tail (as in any fp32 code).
    {"gelu_tanh", CCV_NNC_GELU_FORWARD, 0, 1,
     [](double x, double) {
       // 0.5 x (1 + tanh u) = x / (1 + exp(-2u)): no cancellation in the reference either.
       return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
     },
     3e-5},
    {"swish", CCV_NNC_SWISH_FORWARD, 0, 0, [](double x, double) { return x * sig(x); }, 6e-7},
};

ccv_nnc_cmd_t make(const Case& c, bool backward, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  if (c.forward == CCV_NNC_LEAKY_RELU_FORWARD) p.leaky_relu.negative_slope = c.slope;
  if (c.forward == CCV_NNC_GELU_FORWARD) p.gelu.tanh = c.tanh;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(c.forward + (backward ? 1 : 0), nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

class ActivationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
  std::mt19937 rng{20261122};
};

TEST_F(ActivationTest, ForwardMatchesDoubleReference) {
  for (const Case& c : kCases) {
    for (int dt : {CCV_64F, CCV_32F}) {
      for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
        if (backend == CCV_NNC_BACKEND_CPU_OPT && dt != CCV_32F) continue;
        T x(dt, {5, 37}), y(dt, {5, 37});
        cmdtest::fill_uniform(x, rng, -9, 9);
        const double fixed[] = {0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 4.0, -4.0, 12.0, -12.0, 30.0, -30.0};
        for (size_t i = 0; i < std::size(fixed); i++) x.set(i, fixed[i]);
        ASSERT_EQ(cmdtest::run(make(c, false, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        // fp64: x / sqrt 2 rounds differently here and in the kernel (2 z^2 eps relative in the tail);
        // fp32: results below the smallest subnormal are 0.
        const double rtol = dt == CCV_64F ? 1e-11 : c.rtol32;
        const double atol = dt == CCV_64F ? 1e-300 : 1e-45;
        for (size_t i = 0; i < x.count(); i++) {
          const double want = c.f(x.get(i), c.slope);
          EXPECT_NEAR(y.get(i), want, rtol * std::fabs(want) + atol)
              << c.name << " " << ccv_nnc_cmd_backend_name(backend) << " x = " << x.get(i);
        }
      }
    }
  }
}

TEST_F(ActivationTest, BackwardMatchesFiniteDifferences) {
  for (const Case& c : kCases) {
    T x(CCV_64F, {3, 5});
    cmdtest::fill_uniform(x, rng, -4, 4);
    // Keep the kinks of RELU / LEAKY_RELU out of the differences' reach.
    for (size_t i = 0; i < x.count(); i++)
      if (std::fabs(x.get(i)) < 0.05) x.set(i, 0.5);
    SCOPED_TRACE(c.name);
    cmdtest::expect_gradients_match(make(c, false), make(c, true), ccv_nnc_no_hint, {&x}, {{3, 5}}, {true}, rng);
  }
}

// Backward from x alone, from y alone, and with the list cut after x, on
// both backends: the same dx as from |g|x|y|.
TEST_F(ActivationTest, BackwardFromEitherForwardTensor) {
  for (const Case& c : kCases) {
    for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
      SCOPED_TRACE(std::string(c.name) + " " + ccv_nnc_cmd_backend_name(backend));
      T x(CCV_32F, {4, 9}), y(CCV_32F, {4, 9}), g(CCV_32F, {4, 9}), full(CCV_32F, {4, 9}), dx(CCV_32F, {4, 9});
      cmdtest::fill_uniform(x, rng, -5, 5);
      cmdtest::fill_uniform(g, rng, -1, 1);
      ASSERT_EQ(cmdtest::run(make(c, false), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(cmdtest::run(make(c, true, CCV_NNC_BACKEND_CPU_REF), {g, x, y}, {full}), CCV_NNC_EXEC_SUCCESS);
      const bool y_only_ok = c.forward == CCV_NNC_RELU_FORWARD || c.forward == CCV_NNC_SIGMOID_FORWARD ||
                             c.forward == CCV_NNC_TANH_FORWARD ||
                             (c.forward == CCV_NNC_LEAKY_RELU_FORWARD && c.slope > 0);
      // SIGMOID / TANH from x alone run on CPU_REF whatever is asked (CPU_OPT declines them): leave the choice open.
      const bool from_x_opt_declines = c.forward == CCV_NNC_SIGMOID_FORWARD || c.forward == CCV_NNC_TANH_FORWARD;
      const uint32_t bx = from_x_opt_declines ? 0 : backend;
      ASSERT_EQ(cmdtest::run(make(c, true, bx), {g, x, nullptr}, {dx}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      EXPECT_LE(cmdtest::max_rel_diff(dx, full), 2e-6);
      ASSERT_EQ(cmdtest::run(make(c, true, bx), {g, x}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      EXPECT_LE(cmdtest::max_rel_diff(dx, full), 2e-6);
      const int code = cmdtest::run(make(c, true, backend), {g, nullptr, y}, {dx});
      if (y_only_ok) {
        ASSERT_EQ(code, CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        EXPECT_LE(cmdtest::max_rel_diff(dx, full), 2e-6);
      } else {
        EXPECT_EQ(code, CCV_NNC_EXEC_INVALID);
        EXPECT_TRUE(cmdtest::message_has("x (input 1) is NULL")) << ccv_nnc_error_message();
      }
    }
  }
}

// CPU_OPT against CPU_REF, forward and backward, with every tensor packed or
// a strided view (outputs too), in NHWC and NCHW, on sizes that exercise the
// vector tails and the threaded path.
TEST_F(ActivationTest, OptMatchesRef) {
  // {6, 1} and {5, 1, 1}: as views, columns whose last stride is 1 but whose walk strides by the row.
  const std::vector<std::vector<int>> shapes = {{1},    {7},         {33},         {3, 37, 5}, {6, 1}, {5, 1, 1},
                                                {2, 3, 4, 17}, {300, 301}, {2, 270001}, {3, 70001}};
  for (const Case& c : kCases) {
    for (const auto& shape : shapes) {
      for (int view = 0; view < 2; view++) {
        for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW}) {
          if (shape.size() == 2 && shape[0] == 300 && (view || format == CCV_TENSOR_FORMAT_NCHW)) continue;
          // Runs long enough for the streamed stores (packed: one run split over the pool at unaligned
          // chunk starts; the view: unaligned rows), for one op of each loop shape (x -> y; g, y -> dx;
          // g, x, y -> dx).
          const bool huge = shape.size() == 2 && shape[1] > 60000;
          if (huge && (format == CCV_TENSOR_FORMAT_NCHW || (view != (shape[0] == 3)) ||
                       (c.forward != CCV_NNC_RELU_FORWARD && c.forward != CCV_NNC_GELU_FORWARD &&
                        c.forward != CCV_NNC_SWISH_FORWARD) ||
                       c.tanh))
            continue;
          SCOPED_TRACE(std::string(c.name) + (view ? " view" : " packed") + " " + std::to_string(shape.back()));
          auto make_t = [&] { return view ? T::view(CCV_32F, shape, format) : T(CCV_32F, shape, format); };
          T x = make_t(), g = make_t(), y_ref = make_t(), y_opt = make_t(), dx_ref = make_t(), dx_opt = make_t();
          cmdtest::fill_uniform(x, rng, -10, 10);
          cmdtest::fill_uniform(g, rng, -2, 2);
          ASSERT_EQ(cmdtest::run(make(c, false, CCV_NNC_BACKEND_CPU_REF), {x}, {y_ref}), CCV_NNC_EXEC_SUCCESS);
          ASSERT_EQ(cmdtest::run(make(c, false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y_opt}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          EXPECT_LE(cmdtest::max_rel_diff(y_opt, y_ref), 2e-6);
          ASSERT_EQ(cmdtest::run(make(c, true, CCV_NNC_BACKEND_CPU_REF), {g, x, y_ref}, {dx_ref}),
                    CCV_NNC_EXEC_SUCCESS);
          ASSERT_EQ(cmdtest::run(make(c, true, CCV_NNC_BACKEND_CPU_OPT), {g, x, y_ref}, {dx_opt}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          EXPECT_LE(cmdtest::max_rel_diff(dx_opt, dx_ref), 1e-5);
          EXPECT_TRUE(y_opt.guard_intact());
          EXPECT_TRUE(dx_opt.guard_intact());
        }
      }
    }
  }
}

// The outputs may be the inputs themselves: y = x forward, dx = g backward.
TEST_F(ActivationTest, InPlace) {
  for (const Case& c : kCases) {
    for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
      SCOPED_TRACE(std::string(c.name) + " " + ccv_nnc_cmd_backend_name(backend));
      T x(CCV_32F, {3, 41}), y(CCV_32F, {3, 41}), g(CCV_32F, {3, 41}), dx(CCV_32F, {3, 41}), a(CCV_32F, {3, 41});
      cmdtest::fill_uniform(x, rng, -6, 6);
      cmdtest::fill_uniform(g, rng, -1, 1);
      ASSERT_EQ(cmdtest::run(make(c, false, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(cmdtest::run(make(c, true, backend), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS);
      for (size_t i = 0; i < x.count(); i++) a.set(i, x.get(i));
      ASSERT_EQ(cmdtest::run(make(c, false, backend), {a}, {a}), CCV_NNC_EXEC_SUCCESS);
      EXPECT_EQ(cmdtest::max_rel_diff(a, y), 0);
      ASSERT_EQ(cmdtest::run(make(c, true, backend), {g, x, y}, {g}), CCV_NNC_EXEC_SUCCESS);
      EXPECT_EQ(cmdtest::max_rel_diff(g, dx), 0);
      EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(make(c, false), 0, 1, 0, 1));
      EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(make(c, true), 0, 3, 0, 1));
    }
  }
}

// 16F and 16BF (CPU_REF) against the double value of their own inputs.
TEST_F(ActivationTest, HalfTypes) {
  for (const Case& c : kCases) {
    for (int dt : {CCV_16F, CCV_16BF}) {
      T x(dt, {6, 11}), y(dt, {6, 11}), g(dt, {6, 11}), dx(dt, {6, 11});
      cmdtest::fill_random(x, rng);
      for (size_t i = 0; i < g.count(); i++) g.set(i, 1);
      ASSERT_EQ(cmdtest::run(make(c, false), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      const double tol = dt == CCV_16F ? 1e-3 : 8e-3;
      for (size_t i = 0; i < x.count(); i++) {
        const double want = c.f(x.get(i), c.slope);
        EXPECT_NEAR(y.get(i), want, tol * std::fabs(want) + 1e-7) << c.name << " x = " << x.get(i);
      }
      ASSERT_EQ(cmdtest::run(make(c, true), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    }
  }
}

TEST_F(ActivationTest, SpecialValues) {
  const float vals[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, 1e-40f, -1e-40f, 100.0f, -100.0f};
  const int n = static_cast<int>(std::size(vals));
  for (const Case& c : kCases) {
    T x(CCV_32F, {n}), y_ref(CCV_32F, {n}), y_opt(CCV_32F, {n}), g(CCV_32F, {n}), d_ref(CCV_32F, {n}),
        d_opt(CCV_32F, {n});
    for (int i = 0; i < n; i++) x.set(i, vals[i]), g.set(i, 0.5);
    ASSERT_EQ(cmdtest::run(make(c, false, CCV_NNC_BACKEND_CPU_REF), {x}, {y_ref}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(cmdtest::run(make(c, false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y_opt}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < n; i++) {
      const double a = y_opt.get(i), b = y_ref.get(i);
      EXPECT_EQ(std::isnan(a), std::isnan(b)) << c.name << " " << vals[i];
      // Equal infinities pass; SWISH(-100) = -100 sigmoid(-100) carries the
      // subnormal sigmoid's absolute error, times 100.
      if (!std::isnan(b) && a != b) {
        EXPECT_NEAR(a, b, 1e-6 * std::fabs(b) + 1e-42) << c.name << " " << vals[i];
      }
    }
    EXPECT_TRUE(std::isnan(y_opt.get(0))) << c.name << ": NaN in, NaN out";
    ASSERT_EQ(cmdtest::run(make(c, true, CCV_NNC_BACKEND_CPU_REF), {g, x, y_ref}, {d_ref}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(cmdtest::run(make(c, true, CCV_NNC_BACKEND_CPU_OPT), {g, x, y_ref}, {d_opt}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(std::isnan(d_opt.get(i)), std::isnan(d_ref.get(i))) << c.name << " backward at " << vals[i];
      if (!std::isnan(d_ref.get(i)) && d_opt.get(i) != d_ref.get(i)) {
        EXPECT_NEAR(d_opt.get(i), d_ref.get(i), 1e-6 * std::max(1.0, std::fabs(d_ref.get(i))))
            << c.name << " backward at " << vals[i];
      }
    }
  }
  // Spot values.
  T x(CCV_32F, {3}), y(CCV_32F, {3});
  x.set(0, INFINITY), x.set(1, -INFINITY), x.set(2, 0);
  ASSERT_EQ(cmdtest::run(make(kCases[3], false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(1), 0.0);
  EXPECT_EQ(y.get(2), 0.5);
  ASSERT_EQ(cmdtest::run(make(kCases[4], false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(1), -1.0);
  EXPECT_EQ(y.get(2), 0.0);
  ASSERT_EQ(cmdtest::run(make(kCases[5], false, CCV_NNC_BACKEND_CPU_OPT), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(y.get(0), INFINITY);
  EXPECT_EQ(y.get(2), 0.0);
}

TEST_F(ActivationTest, ShapesBitmaskAndInplaceQueries) {
  for (const Case& c : kCases) {
    ccv_nnc_tensor_param_t in[3] = {cmdtest::param(CCV_32F, {2, 3, 5}), cmdtest::param(CCV_32F, {2, 3, 5}),
                                    cmdtest::param(CCV_32F, {2, 3, 5})};
    ccv_nnc_tensor_param_t out;
    std::memset(&out, 0, sizeof(out));
    ccv_nnc_hint_tensor_auto(make(c, false), in, 1, ccv_nnc_no_hint, &out, 1);
    EXPECT_EQ(out.dim[0], 2);
    EXPECT_EQ(out.dim[1], 3);
    EXPECT_EQ(out.dim[2], 5);
    EXPECT_EQ(out.dim[3], 0);
    std::memset(&out, 0, sizeof(out));
    ccv_nnc_hint_tensor_auto(make(c, true), in, 3, ccv_nnc_no_hint, &out, 1);
    EXPECT_EQ(out.dim[2], 5);
    // libnnc's patterns: RELU, LEAKY_RELU, SIGMOID, TANH backward read g and
    // y; GELU and SWISH g and x.
    const uint64_t one = 1, three = 3, g_x_y = 7, g_x = 3, g_y = 5, x_y = 6;
    EXPECT_TRUE(ccv_nnc_cmd_bitmask(make(c, false), 1, 1, &one, 1, &one, 1));
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(make(c, false), 1, 1, &one, 1, nullptr, 0));
    EXPECT_TRUE(ccv_nnc_cmd_bitmask(make(c, true), 3, 1, &g_x_y, 1, &one, 1));
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(make(c, true), 3, 1, &x_y, 1, &one, 1)) << c.name << ": g is required";
    const bool reads_y = c.forward == CCV_NNC_RELU_FORWARD || c.forward == CCV_NNC_SIGMOID_FORWARD ||
                         c.forward == CCV_NNC_TANH_FORWARD || c.forward == CCV_NNC_LEAKY_RELU_FORWARD;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(make(c, true), 3, 1, &g_y, 1, &one, 1), reads_y) << c.name;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(make(c, true), 3, 1, &g_x, 1, &one, 1), !reads_y) << c.name;
    const bool sig_tanh = c.forward == CCV_NNC_SIGMOID_FORWARD || c.forward == CCV_NNC_TANH_FORWARD;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(make(c, true), 3, 2, &g_x_y, 1, &three, 1), sig_tanh) << c.name;
    // In place: output 0 over input 0 only, forward and backward.
    EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(make(c, false), 0, 1, 0, 1));
    EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(make(c, true), 0, 3, 0, 1));
    EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(make(c, true), 1, 3, 0, 1)) << c.name;
    EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(make(c, true), 2, 3, 0, 1)) << c.name;
    EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(make(c, false), 0, 1, 0, 1));
    EXPECT_EQ(ccv_nnc_cmd_attr(make(c, true), CCV_NNC_CMD_ATTR_NULL_IS_ONES), sig_tanh) << c.name;
    // SIGMOID's and TANH's dx takes y's parameters (libnnc), the others g's.
    ccv_nnc_tensor_param_t bin[3] = {cmdtest::param(CCV_32F, {2, 3, 5}), cmdtest::param(CCV_32F, {2, 3, 5}),
                                     cmdtest::param(CCV_32F, {2, 3, 5}, CCV_TENSOR_FORMAT_NCHW)};
    ccv_nnc_hint_tensor_auto(make(c, true), bin, 3, ccv_nnc_no_hint, &out, 1);
    EXPECT_EQ(out.format, sig_tanh ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC) << c.name;
  }
}

// libnnc's slots |g|0|y| for RELU and LEAKY_RELU (slope >= 0), |g|x| for GELU
// and SWISH, and SIGMOID / TANH with a NULL g read as ones, on both backends,
// against the closed-form derivative.
TEST_F(ActivationTest, LibnncBackwardSlots) {
  std::mt19937 rng(14);
  for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT)})
    for (float slope : {0.f, 0.2f}) {
      T x(CCV_32F, {37}), y(CCV_32F, {37}), g(CCV_32F, {37}), dx(CCV_32F, {37});
      cmdtest::fill_uniform(x, rng, -2, 2), cmdtest::fill_uniform(g, rng);
      ccv_nnc_cmd_t f = make(kCases[1], false), b = make(kCases[1], true);
      f.info.leaky_relu.negative_slope = b.info.leaky_relu.negative_slope = slope;
      b.backend = backend;
      ASSERT_EQ(cmdtest::run(f, {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(cmdtest::run(b, {g, nullptr, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t i = 0; i < 37; i++) EXPECT_EQ(dx.get(i), x.get(i) > 0 ? g.get(i) : float(slope * g.get(i))) << i;
    }
  for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT)})
    for (const Case& c : {kCases[3], kCases[4]}) {
      T x(CCV_32F, {41}), y(CCV_32F, {41}), dx(CCV_32F, {41});
      cmdtest::fill_uniform(x, rng, -3, 3);
      ASSERT_EQ(cmdtest::run(make(c, false), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_cmd_t b = make(c, true);
      b.backend = backend;
      ASSERT_EQ(cmdtest::run(b, {nullptr, nullptr, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t i = 0; i < 41; i++) {
        const double yv = y.get(i);
        const double want = c.forward == CCV_NNC_SIGMOID_FORWARD ? yv * (1 - yv) : (1 - yv) * (1 + yv);
        EXPECT_NEAR(dx.get(i), want, 1e-6) << c.name << " " << i;
      }
    }
}

TEST_F(ActivationTest, BadInputIsAnErrorWithAMessage) {
  const Case& relu = kCases[0];
  const Case& gelu = kCases[5];
  T x(CCV_32F, {4, 5}), y(CCV_32F, {4, 5}), g(CCV_32F, {4, 5}), dx(CCV_32F, {4, 5});
  T wrong(CCV_32F, {5, 4}), x64(CCV_64F, {4, 5}), xi(CCV_32S, {4, 5});
  struct Bad {
    ccv_nnc_cmd_t cmd;
    std::vector<ccv_nnc_tensor_t*> in, out;
    const char* message;
  };
  const Bad bad[] = {
      {make(relu, false), {x, x}, {y}, "takes one input"},
      {make(relu, false), {x}, {y, y}, "takes one output"},
      {make(relu, false), {nullptr}, {y}, "x (input 0) is NULL"},
      {make(relu, false), {x}, {nullptr}, "y (output 0) is NULL"},
      {make(relu, false), {x}, {wrong}, "5x4"},
      {make(gelu, false), {x}, {x64}, "64F"},
      {make(gelu, false), {xi}, {xi}, "32S"},
      {make(relu, true), {g}, {dx}, "takes inputs |g|x|y|"},
      {make(relu, true), {g, x, y, y}, {dx}, "takes inputs |g|x|y|"},
      {make(relu, true), {g, x, y}, {dx, dx}, "takes one output"},
      {make(relu, true), {nullptr, x, y}, {dx}, "g (input 0) is NULL"},
      {make(relu, true), {g, nullptr, nullptr}, {dx}, "both x (input 1) and y (input 2) are NULL"},
      {make(gelu, true), {g, nullptr, y}, {dx}, "x (input 1) is NULL"},
      {make(kCases[2], true), {g, nullptr, y}, {dx}, "negative_slope >= 0"},
      {make(gelu, true), {g, wrong, y}, {dx}, "5x4"},
      {make(gelu, true), {g, x, y}, {wrong}, "5x4"},
      {make(gelu, true), {g, x64, y}, {dx}, "64F"},
      {make(relu, true), {g, x, y}, {nullptr}, "dx (output 0) is NULL"},
  };
  for (const Bad& b : bad) {
    for (uint32_t backend :
         {0u, static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF)}) {
      ccv_nnc_cmd_t cmd = b.cmd;
      cmd.backend = backend;
      const int code = cmdtest::run(cmd, b.in, b.out);
      EXPECT_NE(code, CCV_NNC_EXEC_SUCCESS) << b.message;
      EXPECT_TRUE(cmdtest::message_has(b.message))
          << "expected \"" << b.message << "\" in: " << ccv_nnc_error_message();
    }
  }
}

TEST_F(ActivationTest, EasyMacrosFromC) {
  ccv_nnc_cmd_t cmds[7];
  nnc_test_activation_cmds(cmds);
  EXPECT_EQ(cmds[0].cmd, static_cast<uint32_t>(CCV_NNC_RELU_FORWARD));
  EXPECT_EQ(cmds[1].cmd, static_cast<uint32_t>(CCV_NNC_LEAKY_RELU_BACKWARD));
  EXPECT_FLOAT_EQ(cmds[1].info.leaky_relu.negative_slope, 0.25f);
  EXPECT_EQ(cmds[2].cmd, static_cast<uint32_t>(CCV_NNC_GELU_FORWARD));
  EXPECT_EQ(cmds[2].info.gelu.tanh, 1);
  EXPECT_EQ(cmds[3].cmd, static_cast<uint32_t>(CCV_NNC_GELU_BACKWARD));
  EXPECT_EQ(cmds[3].info.gelu.tanh, 0);
  EXPECT_EQ(cmds[4].cmd, static_cast<uint32_t>(CCV_NNC_SIGMOID_BACKWARD));
  EXPECT_EQ(cmds[5].cmd, static_cast<uint32_t>(CCV_NNC_TANH_FORWARD));
  EXPECT_EQ(cmds[6].cmd, static_cast<uint32_t>(CCV_NNC_SWISH_BACKWARD));
  float out[8];
  ASSERT_EQ(nnc_test_activation_relu_example(out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[8] = {0, 0, 0, 1.5f, 0, 0, 0, 1};
  for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], want[i]) << i;
}

// A stream: the command runs on it and the result is there after the wait.
TEST_F(ActivationTest, OnAStream) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  T x(CCV_32F, {1000}), y(CCV_32F, {1000});
  cmdtest::fill_uniform(x, rng, -3, 3);
  std::vector<ccv_nnc_tensor_t*> in = {x}, out = {y};
  ASSERT_EQ(ccv_nnc_cmd_exec(make(kCases[6], false), ccv_nnc_no_hint, 0, in.data(), 1, out.data(), 1, s),
            CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_wait(s);
  for (size_t i = 0; i < x.count(); i++)
    EXPECT_NEAR(y.get(i), kCases[6].f(x.get(i), 0), 3e-5 * std::fabs(kCases[6].f(x.get(i), 0)) + 1e-30);
  ccv_nnc_stream_context_free(s);
}

}  // namespace
