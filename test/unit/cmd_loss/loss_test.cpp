// The loss family through the C API: CATEGORICAL_CROSSENTROPY,
// BINARY_CROSSENTROPY, SIGMOID_BINARY_CROSSENTROPY, MSE and SMOOTH_L1 -
// values against double references written here, gradients of every
// differentiable input against central differences, extreme inputs
// (probabilities 0 and 1, logits +-1e4), views and half types, CPU_OPT
// against CPU_REF, bad input, shapes and bitmasks, and the easy macros from C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "loss_easy.h"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using cmdtest::T;
using Dims = std::vector<int>;

class Loss : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_t c = cmdtest::command(id);
  c.info.label_smoothing.trim0 = 0;
  c.info.label_smoothing.trim1 = 1;
  return c;
}
ccv_nnc_cmd_t ce(uint32_t id, float trim0, float trim1) {
  ccv_nnc_cmd_t c = cmdtest::command(id);
  c.info.label_smoothing.trim0 = trim0;
  c.info.label_smoothing.trim1 = trim1;
  return c;
}
ccv_nnc_cmd_t bce(uint32_t id, float w) {
  ccv_nnc_cmd_t c = cmdtest::command(id);
  c.info.binary_crossentropy.pos_weight = w;
  return c;
}
ccv_nnc_cmd_t mse(uint32_t id, int op) {
  ccv_nnc_cmd_t c = cmdtest::command(id);
  c.info.mse.reduce_op = op;
  return c;
}
ccv_nnc_cmd_t sl1(uint32_t id, float beta) {
  ccv_nnc_cmd_t c = cmdtest::command(id);
  c.info.smooth_l1.beta = beta;
  return c;
}

std::vector<double> values(const T& t) {
  std::vector<double> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = t.get(i);
  return v;
}

void expect_values(const T& t, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(t.count(), want.size()) << what;
  for (size_t i = 0; i < want.size(); i++) {
    ASSERT_TRUE(std::isfinite(t.get(i))) << what << " element " << i << " is " << t.get(i);
    EXPECT_NEAR(t.get(i), want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " element " << i;
  }
}

void fill(const T& t, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (size_t i = 0; i < t.count(); i++) t.set(i, d(rng));
}

// Per-row reduction of f(a_j, b_j) (the reference for every elementwise loss).
std::vector<double> per_row(const std::vector<double>& a, const std::vector<double>& b, int cols,
                            const std::function<double(double, double)>& f) {
  std::vector<double> out(a.size() / cols, 0.0);
  for (size_t i = 0; i < a.size(); i++) out[i / cols] += f(a[i], b[i]);
  return out;
}

T make(int dt, const Dims& d, bool view) { return view ? T::view(dt, d) : T(dt, d); }

const int kRows = 5, kCols = 7;

// ---------------------------------------------------------------------------
// Forward values

TEST_F(Loss, CategoricalForward) {
  std::mt19937 rng(1);
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true})
      for (int kind : {0, 1, 2})  // 32S indices, float indices, dense probabilities
        for (const auto& trim : {std::pair<float, float>{0, 1}, std::pair<float, float>{0.05f, 0.9f}}) {
          SCOPED_TRACE(::testing::Message() << "dt " << dt << " view " << view << " kind " << kind);
          T p = make(dt, {kRows, kCols}, view);
          fill(p, rng, 0.01, 1);
          T lab = kind == 2 ? make(dt, {kRows, kCols}, view) : make(kind == 0 ? CCV_32S : dt, {kRows, 1}, view);
          std::vector<double> t(kRows * kCols);
          for (int r = 0; r < kRows; r++) {
            const int k = (r * 3 + 1) % kCols;
            for (int j = 0; j < kCols; j++) {
              const double v = kind == 2 ? (j == k ? 0.7 : (j == 0 ? 0.3 : 0.0)) : (j == k);
              if (kind == 2) lab.set(r * kCols + j, v);
              t[r * kCols + j] = trim.first + (static_cast<double>(trim.second) - trim.first) * v;
            }
            if (kind != 2) lab.set(r, k);
          }
          T loss = make(dt, {kRows, 1}, view);
          ASSERT_EQ(
              cmdtest::run(ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, trim.first, trim.second), {p, lab}, {loss}),
              CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          expect_values(loss, per_row(values(p), t, kCols, [](double pj, double tj) { return -tj * std::log(pj); }),
                        dt == CCV_32F ? 1e-6 : 1e-13, "loss");
          EXPECT_TRUE(loss.guard_intact());
        }
}

TEST_F(Loss, BinaryForward) {
  std::mt19937 rng(2);
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true})
      for (float w : {1.0f, 2.5f}) {
        T x = make(dt, {kRows, kCols}, view), y = make(dt, {kRows, kCols}, view), loss = make(dt, {kRows, 1}, view);
        fill(x, rng, 0.02, 0.98);
        fill(y, rng, 0, 1);
        ASSERT_EQ(cmdtest::run(bce(CCV_NNC_BINARY_CROSSENTROPY_FORWARD, w), {x, y}, {loss}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        expect_values(loss,
                      per_row(values(x), values(y), kCols,
                              [w](double a, double b) { return -(w * b * std::log(a) + (1 - b) * std::log(1 - a)); }),
                      dt == CCV_32F ? 1e-6 : 1e-13, "loss");
      }
}

TEST_F(Loss, SigmoidBinaryForward) {
  std::mt19937 rng(3);
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true})
      for (float w : {1.0f, 0.3f}) {
        T z = make(dt, {kRows, kCols}, view), y = make(dt, {kRows, kCols}, view);
        T loss = make(dt, {kRows, 1}, view), s = make(dt, {kRows, kCols}, view);
        fill(z, rng, -6, 6);
        fill(y, rng, 0, 1);
        ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, w), {z, y}, {loss, s}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        const double tol = dt == CCV_32F ? 1e-6 : 1e-12;
        expect_values(loss,
                      per_row(values(z), values(y), kCols,
                              [w](double a, double b) {
                                const double sg = 1 / (1 + std::exp(-a));
                                return -(w * b * std::log(sg) + (1 - b) * std::log(1 - sg));
                              }),
                      tol, "loss");
        std::vector<double> sig = values(z);
        for (double& v : sig) v = 1 / (1 + std::exp(-v));
        expect_values(s, sig, tol, "sigmoid");
        // Either output alone.
        T loss2(dt, {kRows, 1}), s2(dt, {kRows, kCols});
        ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, w), {z, y}, {loss2}),
                  CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, w), {z, y}, {nullptr, s2}),
                  CCV_NNC_EXEC_SUCCESS);
        EXPECT_EQ(cmdtest::max_rel_diff(loss2, loss), 0);
        EXPECT_EQ(cmdtest::max_rel_diff(s2, s), 0);
      }
}

TEST_F(Loss, MseForward) {
  std::mt19937 rng(4);
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true})
      for (int op : {CCV_NNC_MSE_REDUCE_MEAN, CCV_NNC_MSE_REDUCE_SUM}) {
        T a = make(dt, {2, 3, kCols}, view), b = make(dt, {2, 3, kCols}, view), loss = make(dt, {2, 3, 1}, view);
        fill(a, rng, -3, 3);
        fill(b, rng, -3, 3);
        ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_FORWARD, op), {a, b}, {loss}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        const double k = op == CCV_NNC_MSE_REDUCE_MEAN ? kCols : 1;
        expect_values(loss,
                      per_row(values(a), values(b), kCols, [k](double x, double y) { return (x - y) * (x - y) / k; }),
                      dt == CCV_32F ? 1e-6 : 1e-13, "loss");
      }
}

TEST_F(Loss, SmoothL1Forward) {
  std::mt19937 rng(5);
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true})
      for (float beta : {1.0f, 0.25f, 0.0f}) {
        T a = make(dt, {kRows, kCols}, view), b = make(dt, {kRows, kCols}, view), loss = make(dt, {kRows, 1}, view);
        fill(a, rng, -2, 2);
        fill(b, rng, -2, 2);
        ASSERT_EQ(cmdtest::run(sl1(CCV_NNC_SMOOTH_L1_FORWARD, beta), {a, b}, {loss}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        expect_values(loss,
                      per_row(values(a), values(b), kCols,
                              [beta](double x, double y) {
                                const double d = std::fabs(x - y);
                                if (beta == 0) return d;
                                return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
                              }),
                      dt == CCV_32F ? 1e-6 : 1e-13, "loss");
      }
}

TEST_F(Loss, HalfTypes) {
  std::mt19937 rng(6);
  for (int dt : {CCV_16F, CCV_16BF}) {
    T a(dt, {3, 4}), b(dt, {3, 4}), loss(dt, {3, 1});
    cmdtest::fill_random(a, rng);
    cmdtest::fill_random(b, rng);
    ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_FORWARD, CCV_NNC_MSE_REDUCE_SUM), {a, b}, {loss}), CCV_NNC_EXEC_SUCCESS);
    expect_values(loss, per_row(values(a), values(b), 4, [](double x, double y) { return (x - y) * (x - y); }),
                  dt == CCV_16F ? 1e-3 : 8e-3, "mse");
    T z(dt, {3, 4}), y(dt, {3, 4}), l2(dt, {3, 1});
    cmdtest::fill_random(z, rng);
    for (size_t i = 0; i < y.count(); i++) y.set(i, i % 2);
    ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 1), {z, y}, {l2}), CCV_NNC_EXEC_SUCCESS);
    expect_values(l2,
                  per_row(values(z), values(y), 4,
                          [](double a_, double b_) {
                            return b_ * std::log1p(std::exp(-a_)) + (1 - b_) * std::log1p(std::exp(a_));
                          }),
                  dt == CCV_16F ? 2e-3 : 1e-2, "sigmoid bce");
  }
}

// ---------------------------------------------------------------------------
// Extreme inputs: finite and right.

TEST_F(Loss, ExtremeProbabilitiesAndLogits) {
  // p = 0 for the labelled class: the log is clamped at -100; p = 1: 0.
  T p(CCV_32F, {2, 2}), lab(CCV_32S, {2}), loss(CCV_32F, {2, 1}), dp(CCV_32F, {2, 2});
  p.set(0, 0), p.set(1, 1), p.set(2, 0), p.set(3, 1);
  lab.set(0, 0), lab.set(1, 1);
  ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD), {p, lab}, {loss}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(loss.get(0), 100.0);
  EXPECT_EQ(loss.get(1), 0.0);
  ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD), {nullptr, p, lab, loss}, {dp}),
            CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 4; i++) EXPECT_TRUE(std::isfinite(dp.get(i))) << i;
  EXPECT_NEAR(dp.get(0), -1e12, 1e6);
  EXPECT_EQ(dp.get(3), -1.0);

  // Binary: x in {0, 1} against y in {0, 1}.
  T x(CCV_32F, {1, 4}), y(CCV_32F, {1, 4}), l1(CCV_32F, {1, 1}), dx(CCV_32F, {1, 4}), dy(CCV_32F, {1, 4});
  const double xv[4] = {0, 1, 0, 1}, yv[4] = {0, 1, 1, 0};
  for (int i = 0; i < 4; i++) x.set(i, xv[i]), y.set(i, yv[i]);
  ASSERT_EQ(cmdtest::run(bce(CCV_NNC_BINARY_CROSSENTROPY_FORWARD, 1), {x, y}, {l1}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(l1.get(0), 200.0);
  ASSERT_EQ(cmdtest::run(bce(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, 1), {nullptr, x, y, l1}, {dx, dy}),
            CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 4; i++) EXPECT_TRUE(std::isfinite(dx.get(i)) && std::isfinite(dy.get(i))) << i;

  // Sigmoid: logits +-1e4 and +-100 against both targets.
  T z(CCV_32F, {1, 6}), t(CCV_32F, {1, 6}), l2(CCV_32F, {1, 1}), s(CCV_32F, {1, 6}), dz(CCV_32F, {1, 6});
  const double zv[6] = {1e4, -1e4, 1e4, -1e4, 100, -100}, tv[6] = {1, 0, 0, 1, 1, 1};
  for (int i = 0; i < 6; i++) z.set(i, zv[i]), t.set(i, tv[i]);
  ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 1), {z, t}, {l2, s}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NEAR(l2.get(0), 2e4 + 100, 1e-2);
  ASSERT_EQ(cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 1), {nullptr, nullptr, z, t, l2, s}, {dz}),
            CCV_NNC_EXEC_SUCCESS);
  const double want[6] = {0, 0, 1, -1, 0, -1};
  for (int i = 0; i < 6; i++) EXPECT_NEAR(dz.get(i), want[i], 1e-6) << i;
  // From the saved sigmoid alone (no logits) the same.
  ASSERT_EQ(
      cmdtest::run(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 1), {nullptr, nullptr, nullptr, t, l2, s}, {dz}),
      CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 6; i++) EXPECT_NEAR(dz.get(i), want[i], 1e-6) << i;
}

// ---------------------------------------------------------------------------
// Gradients against central differences (fp64).

TEST_F(Loss, CategoricalGradients) {
  std::mt19937 rng(7);
  for (bool dense : {false, true})
    for (const auto& trim : {std::pair<float, float>{0, 1}, std::pair<float, float>{0.1f, 0.8f}}) {
      SCOPED_TRACE(::testing::Message() << "dense " << dense << " trim0 " << trim.first);
      T p(CCV_64F, {3, 4});
      fill(p, rng, 0.1, 1);
      T lab = dense ? T(CCV_64F, {3, 4}) : T(CCV_32S, {3});
      if (dense)
        fill(lab, rng, 0, 1);
      else
        for (int r = 0; r < 3; r++) lab.set(r, (r + 2) % 4);
      cmdtest::expect_gradients_match(ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, trim.first, trim.second),
                                      ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, trim.first, trim.second),
                                      ccv_nnc_no_hint, {&p, &lab}, {{3, 1}}, {true, dense}, rng);
    }
}

TEST_F(Loss, BinaryGradients) {
  std::mt19937 rng(8);
  for (float w : {1.0f, 3.0f}) {
    T x(CCV_64F, {3, 4}), y(CCV_64F, {3, 4});
    fill(x, rng, 0.05, 0.95);
    fill(y, rng, 0, 1);
    cmdtest::expect_gradients_match(bce(CCV_NNC_BINARY_CROSSENTROPY_FORWARD, w),
                                    bce(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, w), ccv_nnc_no_hint, {&x, &y}, {{3, 1}},
                                    {true, true}, rng);
  }
}

TEST_F(Loss, SigmoidBinaryGradients) {
  std::mt19937 rng(9);
  for (float w : {1.0f, 0.4f}) {
    T z(CCV_64F, {3, 4}), y(CCV_64F, {3, 4});
    fill(z, rng, -4, 4);
    fill(y, rng, 0, 1);
    cmdtest::expect_gradients_match(bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, w),
                                    bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, w), ccv_nnc_no_hint, {&z, &y},
                                    {{3, 1}, {3, 4}}, {true, true}, rng);
  }
}

TEST_F(Loss, MseGradients) {
  std::mt19937 rng(10);
  for (int op : {CCV_NNC_MSE_REDUCE_MEAN, CCV_NNC_MSE_REDUCE_SUM}) {
    T a(CCV_64F, {2, 2, 3}), b(CCV_64F, {2, 2, 3});
    fill(a, rng, -2, 2);
    fill(b, rng, -2, 2);
    cmdtest::expect_gradients_match(mse(CCV_NNC_MSE_FORWARD, op), mse(CCV_NNC_MSE_BACKWARD, op), ccv_nnc_no_hint,
                                    {&a, &b}, {{2, 2, 1}}, {true, true}, rng);
  }
}

TEST_F(Loss, SmoothL1Gradients) {
  std::mt19937 rng(11);
  for (float beta : {1.0f, 0.3f, 0.0f}) {
    T a(CCV_64F, {3, 5}), b(CCV_64F, {3, 5});
    fill(a, rng, -2, 2);
    fill(b, rng, -2, 2);
    // Keep |a - b| away from beta and 0 where the loss has a kink.
    for (size_t i = 0; i < a.count(); i++) {
      const double d = std::fabs(a.get(i) - b.get(i));
      if (std::fabs(d - beta) < 1e-3 || d < 1e-3) a.set(i, b.get(i) + beta + 0.5);
    }
    cmdtest::expect_gradients_match(sl1(CCV_NNC_SMOOTH_L1_FORWARD, beta), sl1(CCV_NNC_SMOOTH_L1_BACKWARD, beta),
                                    ccv_nnc_no_hint, {&a, &b}, {{3, 1}}, {true, true}, rng);
  }
}

TEST_F(Loss, BackwardWithoutGradientReadsOnes) {
  std::mt19937 rng(12);
  T a(CCV_32F, {4, 3}), b(CCV_32F, {4, 3}), ones(CCV_32F, {4, 1}), d1(CCV_32F, {4, 3}), d2(CCV_32F, {4, 3});
  fill(a, rng, -1, 1);
  fill(b, rng, -1, 1);
  for (int i = 0; i < 4; i++) ones.set(i, 1);
  ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_BACKWARD, 0), {ones, a, b, nullptr}, {d1}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_BACKWARD, 0), {nullptr, a, b, nullptr}, {d2}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(cmdtest::max_rel_diff(d1, d2), 0);
  // The forward output left off the input list.
  ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_BACKWARD, 0), {nullptr, a, b}, {d2}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(cmdtest::max_rel_diff(d1, d2), 0);
  // Only db asked for.
  ASSERT_EQ(cmdtest::run(mse(CCV_NNC_MSE_BACKWARD, 0), {nullptr, a, b, nullptr}, {nullptr, d2}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < d1.count(); i++) EXPECT_EQ(d2.get(i), -d1.get(i));
}

TEST_F(Loss, OptAgreesWithRef) {
  std::mt19937 rng(13);
  const uint32_t opt = CCV_NNC_BACKEND_CPU_OPT;
  for (bool view : {false, true})
    for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
      for (const Dims& d : {Dims{1}, Dims{9}, Dims{5, 1}, Dims{4, 7}, Dims{3, 5, 33}, Dims{3001, 13}}) {
        SCOPED_TRACE(::testing::Message() << "view " << view << " format " << format << " cols " << d.back());
        T a = view ? T::view(CCV_32F, d, format) : T(CCV_32F, d, format);
        T b = view ? T::view(CCV_32F, d, format) : T(CCV_32F, d, format);
        Dims per_row = d;
        per_row.back() = 1;
        T g = view ? T::view(CCV_32F, per_row, format) : T(CCV_32F, per_row, format);
        fill(a, rng, -3, 3);
        fill(b, rng, -3, 3);
        fill(g, rng, -1, 1);
        const ccv_nnc_cmd_t cmds[4][2] = {
            {mse(CCV_NNC_MSE_FORWARD, CCV_NNC_MSE_REDUCE_MEAN), mse(CCV_NNC_MSE_BACKWARD, CCV_NNC_MSE_REDUCE_MEAN)},
            {mse(CCV_NNC_MSE_FORWARD, CCV_NNC_MSE_REDUCE_SUM), mse(CCV_NNC_MSE_BACKWARD, CCV_NNC_MSE_REDUCE_SUM)},
            {sl1(CCV_NNC_SMOOTH_L1_FORWARD, 1.0f), sl1(CCV_NNC_SMOOTH_L1_BACKWARD, 1.0f)},
            {sl1(CCV_NNC_SMOOTH_L1_FORWARD, 0.0f), sl1(CCV_NNC_SMOOTH_L1_BACKWARD, 0.0f)}};
        for (const auto& c : cmds) {
          cmdtest::expect_backends_agree(c[0], ccv_nnc_no_hint, {a, b}, {per_row}, CCV_32F, opt, 1e-5, format);
          cmdtest::expect_backends_agree(c[1], ccv_nnc_no_hint, {g, a, b, nullptr}, {d, d}, CCV_32F, opt, 1e-5, format);
          cmdtest::expect_backends_agree(c[1], ccv_nnc_no_hint, {nullptr, a, b}, {d}, CCV_32F, opt, 1e-5, format);
          cmdtest::expect_backends_agree(c[1], ccv_nnc_no_hint, {g, a, b}, {{}, d}, CCV_32F, opt, 1e-5, format);
        }
      }
}

// The probability losses' CPU_OPT (vector row loops, scalar tails) against
// CPU_REF: rows of 1 to 33 (every tail length of both vector widths is not
// needed; 1, 7, 9, 13, 16 and 33 cut AVX2 and AVX-512 vectors differently),
// views, both label kinds, smoothing, pos_weight, every optional input and
// output, and inputs at the clamps: probabilities 0 and 1, targets exactly 0
// and 1, logits out to +-40.
TEST_F(Loss, OptAgreesWithRefProbabilityLosses) {
  std::mt19937 rng(17);
  const uint32_t opt = CCV_NNC_BACKEND_CPU_OPT;
  for (bool view : {false, true})
    for (const Dims& d : {Dims{9}, Dims{5, 1}, Dims{4, 7}, Dims{3, 16}, Dims{3, 5, 33}, Dims{2001, 13}}) {
      SCOPED_TRACE(::testing::Message() << "view " << view << " shape " << d.size() << "-d, cols " << d.back());
      auto make_t = [&](const Dims& dims) { return view ? T::view(CCV_32F, dims) : T(CCV_32F, dims); };
      Dims per_row = d;
      per_row.back() = 1;
      T x = make_t(d), y = make_t(d), z = make_t(d), gs = make_t(d), g = make_t(per_row);
      fill(x, rng, 0.001, 0.999);
      fill(y, rng, 0, 1);
      fill(z, rng, -40, 40);
      fill(gs, rng, -1, 1);
      fill(g, rng, -1, 1);
      // Every fifth probability at 0 or 1, every seventh target exactly 0 or 1.
      for (size_t i = 0; i < x.count(); i += 5) x.set(i, (i / 5) % 2);
      for (size_t i = 3; i < y.count(); i += 7) y.set(i, (i / 7) % 2);
      for (float w : {1.0f, 2.5f}) {
        SCOPED_TRACE(::testing::Message() << "pos_weight " << w);
        const ccv_nnc_cmd_t bf = bce(CCV_NNC_BINARY_CROSSENTROPY_FORWARD, w);
        const ccv_nnc_cmd_t bb = bce(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, w);
        cmdtest::expect_backends_agree(bf, ccv_nnc_no_hint, {x, y}, {per_row}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(bb, ccv_nnc_no_hint, {g, x, y, nullptr}, {d, d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(bb, ccv_nnc_no_hint, {nullptr, x, y}, {d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(bb, ccv_nnc_no_hint, {g, x, y}, {{}, d}, CCV_32F, opt, 1e-5);
        const ccv_nnc_cmd_t sf = bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, w);
        const ccv_nnc_cmd_t sb = bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, w);
        cmdtest::expect_backends_agree(sf, ccv_nnc_no_hint, {z, y}, {per_row, d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(sf, ccv_nnc_no_hint, {z, y}, {per_row}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(sf, ccv_nnc_no_hint, {z, y}, {{}, d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(sb, ccv_nnc_no_hint, {g, gs, z, y}, {d, d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(sb, ccv_nnc_no_hint, {nullptr, nullptr, z, y}, {d}, CCV_32F, opt, 1e-5);
        cmdtest::expect_backends_agree(sb, ccv_nnc_no_hint, {g, nullptr, z, y}, {{}, d}, CCV_32F, opt, 1e-5);
        // From the saved sigmoid, without the logits.
        T s(CCV_32F, d);
        T loss(CCV_32F, per_row);
        ASSERT_EQ(cmdtest::run(sf, {z, y}, {loss, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        cmdtest::expect_backends_agree(sb, ccv_nnc_no_hint, {g, gs, nullptr, y, loss, s}, {d}, CCV_32F, opt, 1e-5);
      }
      // Categorical: class indices (32S and float), dense label rows.
      T p = make_t(d);
      fill(p, rng, 0.001, 1);
      for (size_t i = 0; i < p.count(); i += 6) p.set(i, 0);
      Dims index_dims(d.begin(), d.end() - 1);
      if (index_dims.empty()) index_dims = {1};
      T idx(CCV_32S, index_dims), fidx(CCV_32F, index_dims), dense = make_t(d);
      for (size_t i = 0; i < idx.count(); i++) idx.set(i, (i * 5 + 2) % d.back()), fidx.set(i, (i * 3) % d.back());
      fill(dense, rng, 0, 1);
      for (const auto& trim : {std::pair<float, float>{0, 1}, std::pair<float, float>{0.05f, 0.9f}})
        for (int kind : {0, 1, 2}) {
          SCOPED_TRACE(::testing::Message() << "labels " << kind << " trim0 " << trim.first);
          T& lab = kind == 0 ? idx : kind == 1 ? fidx : dense;
          const ccv_nnc_cmd_t cf = ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, trim.first, trim.second);
          const ccv_nnc_cmd_t cb = ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, trim.first, trim.second);
          cmdtest::expect_backends_agree(cf, ccv_nnc_no_hint, {p, lab}, {per_row}, CCV_32F, opt, 1e-5);
          cmdtest::expect_backends_agree(cb, ccv_nnc_no_hint, {g, p, lab}, {d}, CCV_32F, opt, 1e-5);
          cmdtest::expect_backends_agree(cb, ccv_nnc_no_hint, {nullptr, p, lab}, {d}, CCV_32F, opt, 1e-5);
          if (kind == 2) cmdtest::expect_backends_agree(cb, ccv_nnc_no_hint, {g, p, lab}, {d, d}, CCV_32F, opt, 1e-5);
        }
    }
}

// Values the comparison above cannot see (its error is relative to at least
// 1): softplus of large negative logits keeps its relative accuracy (the
// loss of a well fitted logit is e^-|z|, not 0), and a zero weight keeps a
// term out of the sum even where its log is NaN, as on CPU_REF.
TEST_F(Loss, OptProbabilityEdgeCases) {
  const double zs[] = {-20, -30, 17, 25, -88};
  T z(CCV_32F, {5, 1}), y(CCV_32F, {5, 1}), loss(CCV_32F, {5, 1});
  for (int i = 0; i < 5; i++) z.set(i, zs[i]), y.set(i, zs[i] > 0 ? 1 : 0);
  ccv_nnc_cmd_t sf = bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 1);
  sf.backend = CCV_NNC_BACKEND_CPU_OPT;
  ASSERT_EQ(cmdtest::run(sf, {z, y}, {loss}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int i = 0; i < 5; i++) {
    const double want = std::log1p(std::exp(-std::fabs(zs[i])));  // the target agrees with the logit's sign
    EXPECT_NEAR(loss.get(i), want, 1e-6 * want) << "z = " << zs[i];
  }
  // x outside [0, 1] with a zero weight on its log: CPU_REF leaves the term out.
  T x(CCV_32F, {1, 3}), t(CCV_32F, {1, 3}), p(CCV_32F, {1, 3}), dense(CCV_32F, {1, 3});
  const double xv[3] = {-0.25, 0.5, 1.5}, tv[3] = {0, 0.5, 1};
  for (int i = 0; i < 3; i++) x.set(i, xv[i]), t.set(i, tv[i]), p.set(i, xv[i]), dense.set(i, tv[i]);
  cmdtest::expect_backends_agree(bce(CCV_NNC_BINARY_CROSSENTROPY_FORWARD, 1), ccv_nnc_no_hint, {x, t}, {{1, 1}},
                                 CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 1e-6);
  cmdtest::expect_backends_agree(cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD), ccv_nnc_no_hint, {p, dense}, {{1, 1}},
                                 CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 1e-6);
}

// ---------------------------------------------------------------------------
// Bad input, shapes, bitmasks.

void expect_invalid(const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                    const char* needle) {
  EXPECT_EQ(cmdtest::run(c, in, out), CCV_NNC_EXEC_INVALID) << "expected a failure mentioning " << needle;
  EXPECT_TRUE(cmdtest::message_has(needle)) << ccv_nnc_error_message();
}

TEST_F(Loss, BadInput) {
  T x(CCV_32F, {4, 5}), y(CCV_32F, {4, 5}), x64(CCV_64F, {4, 5}), ybad(CCV_32F, {4, 6}), loss(CCV_32F, {4, 1});
  T lab(CCV_32S, {4}), labf(CCV_32F, {4, 1}), lossbad(CCV_32F, {3, 1}), dx(CCV_32F, {4, 5}), xi(CCV_32S, {4, 5});
  for (size_t i = 0; i < x.count(); i++) x.set(i, 0.1 + 0.01 * i), y.set(i, 0.5);
  for (int i = 0; i < 4; i++) lab.set(i, i), labf.set(i, i);
  const ccv_nnc_cmd_t cf = cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD),
                      cb = cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD);
  expect_invalid(cf, {x}, {loss}, "|p|labels|");
  expect_invalid(cf, {x, lab}, {loss, loss}, "one output");
  expect_invalid(cf, {x, ybad}, {loss}, "labels are");
  expect_invalid(cf, {x, lab}, {lossbad}, "one entry per row");
  expect_invalid(cf, {xi, lab}, {loss}, "32S");
  lab.set(1, 5);
  expect_invalid(cf, {x, lab}, {loss}, "outside [0, 5)");
  expect_invalid(cb, {nullptr, x, lab, nullptr}, {dx}, "outside [0, 5)");
  lab.set(1, 1);
  labf.set(3, 2.5);
  expect_invalid(cf, {x, labf}, {loss}, "not a whole class index");
  labf.set(3, -1);
  expect_invalid(cf, {x, labf}, {loss}, "outside [0, 5)");
  expect_invalid(cb, {nullptr, x, lab, nullptr}, {dx, dx}, "class-index labels");
  expect_invalid(cb, {nullptr, nullptr, lab, nullptr}, {dx}, "input 1");

  for (uint32_t id : {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD,
                      CCV_NNC_MSE_FORWARD, CCV_NNC_SMOOTH_L1_FORWARD}) {
    SCOPED_TRACE(ccv_nnc_cmd_name(id));
    const ccv_nnc_cmd_t f = cmd(id);
    expect_invalid(f, {x, ybad}, {loss}, "4x6");
    expect_invalid(f, {x, x64}, {loss}, "64F");
    expect_invalid(f, {x, y}, {lossbad}, "one entry per row");
    expect_invalid(f, {x, y, y}, {loss}, "inputs");
    expect_invalid(f, {x, nullptr}, {loss}, "NULL");
  }
  const ccv_nnc_cmd_t mb = cmd(CCV_NNC_MSE_BACKWARD);
  expect_invalid(mb, {nullptr, x}, {dx}, "|g|a|b|loss|");
  expect_invalid(mb, {nullptr, x, y, loss, loss}, {dx}, "|g|a|b|loss|");
  expect_invalid(mb, {nullptr, nullptr, y, nullptr}, {dx}, "input 1");
  expect_invalid(mb, {nullptr, x, y, nullptr}, {nullptr, nullptr}, "every output is NULL");
  expect_invalid(mb, {nullptr, x, y, nullptr}, {ybad}, "4x6");
  const ccv_nnc_cmd_t sb = cmd(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD);
  expect_invalid(sb, {nullptr, nullptr, nullptr, y, nullptr, nullptr}, {dx}, "needs one");
  expect_invalid(sb, {nullptr, nullptr, nullptr, y, nullptr, x}, {dx, dx}, "needs the logits");
  expect_invalid(sb, {nullptr, nullptr, x, y, nullptr, x64}, {dx}, "sigmoid is 64F");
}

bool same_params(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  return a.type == b.type && a.format == b.format && a.datatype == b.datatype &&
         std::memcmp(a.dim, b.dim, sizeof(a.dim)) == 0;
}

// libnnc's contract of each loss (its description file's tensor_auto, bitmask
// and in-place rules), pinned one rule at a time.
TEST_F(Loss, ShapesAndBitmasks) {
  ccv_nnc_tensor_param_t out[2];
  auto loss_shape = [&](uint32_t id, Dims x, ccv_nnc_tensor_param_t label) {
    ccv_nnc_tensor_param_t in[2] = {cmdtest::param(CCV_64F, x), label};
    std::memset(out, 0, sizeof(out));
    ccv_nnc_hint_tensor_auto(cmd(id), in, 2, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(out[0].datatype, CCV_64F) << ccv_nnc_cmd_name(id);  // the input's type, not the labels'
    return Dims(out[0].dim, out[0].dim + ccv_nnc_tensor_nd(out[0].dim));
  };
  // The loss takes the second input's shape with the channel set to 1.
  for (uint32_t id : {CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, CCV_NNC_BINARY_CROSSENTROPY_FORWARD,
                      CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_MSE_FORWARD, CCV_NNC_SMOOTH_L1_FORWARD})
    EXPECT_EQ(loss_shape(id, {8, 10}, cmdtest::param(CCV_64F, {8, 10})), (Dims{8, 1})) << ccv_nnc_cmd_name(id);
  EXPECT_EQ(loss_shape(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, {8, 10}, cmdtest::param(CCV_32S, {8})), (Dims{8}));
  EXPECT_EQ(loss_shape(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, {8, 10}, cmdtest::param(CCV_32S, {8, 1})),
            (Dims{8, 1}));
  EXPECT_EQ(loss_shape(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, {4, 8, 10}, cmdtest::param(CCV_32S, {4, 8})),
            (Dims{4, 8}));
  // A 1-d target: MSE sets its channel to 1 as well, the others keep it.
  EXPECT_EQ(loss_shape(CCV_NNC_MSE_FORWARD, {6}, cmdtest::param(CCV_64F, {6})), (Dims{1}));
  EXPECT_EQ(loss_shape(CCV_NNC_SMOOTH_L1_FORWARD, {6}, cmdtest::param(CCV_64F, {6})), (Dims{6}));
  // NCHW: the channel is dimension 1.
  {
    ccv_nnc_tensor_param_t in[2] = {cmdtest::param(CCV_32F, {2, 3, 4, 5}, CCV_TENSOR_FORMAT_NCHW),
                                    cmdtest::param(CCV_32F, {2, 3, 4, 5}, CCV_TENSOR_FORMAT_NCHW)};
    ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_MSE_FORWARD), in, 2, ccv_nnc_no_hint, out, 1);
    EXPECT_EQ(Dims(out[0].dim, out[0].dim + 4), (Dims{2, 1, 4, 5}));
  }
  ccv_nnc_tensor_param_t in[2] = {cmdtest::param(CCV_32F, {8, 10}), cmdtest::param(CCV_32F, {8, 10})};
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD), in, 2, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(same_params(out[1], in[0]));
  // Backward: |g|forward inputs|forward outputs| -> gradients of the inputs.
  const ccv_nnc_tensor_param_t a = cmdtest::param(CCV_32F, {8, 10}), b = cmdtest::param(CCV_16F, {8, 10}),
                               lab = cmdtest::param(CCV_32S, {8});
  for (uint32_t id : {CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, CCV_NNC_BINARY_CROSSENTROPY_BACKWARD,
                      CCV_NNC_MSE_BACKWARD, CCV_NNC_SMOOTH_L1_BACKWARD}) {
    ccv_nnc_tensor_param_t bin[4] = {cmdtest::param(CCV_32F, {8, 1}), a, id == CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD ? lab : b,
                                     cmdtest::param(CCV_32F, {8, 1})};
    ccv_nnc_hint_tensor_auto(cmd(id), bin, 4, ccv_nnc_no_hint, out, 2);
    EXPECT_TRUE(same_params(out[0], bin[1])) << ccv_nnc_cmd_name(id);
    EXPECT_TRUE(same_params(out[1], bin[2])) << ccv_nnc_cmd_name(id);
  }
  // SIGMOID_BINARY_CROSSENTROPY: dz like the saved sigmoid (input 5), dy like y (input 3).
  ccv_nnc_tensor_param_t sin[6] = {{}, {}, cmdtest::param(CCV_64F, {1}), b, {}, a};
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD), sin, 6, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(same_params(out[0], a));
  EXPECT_TRUE(same_params(out[1], b));

  auto bm = [](uint32_t id, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(cmd(id), ni, no, &inputs, 1, &outputs, 1);
  };
  for (uint32_t id : {CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, CCV_NNC_BINARY_CROSSENTROPY_FORWARD,
                      CCV_NNC_MSE_FORWARD, CCV_NNC_SMOOTH_L1_FORWARD}) {
    EXPECT_TRUE(bm(id, 2, 0b11, 1, 1)) << ccv_nnc_cmd_name(id);
    EXPECT_FALSE(bm(id, 2, 0b01, 1, 1)) << ccv_nnc_cmd_name(id);
    EXPECT_FALSE(bm(id, 2, 0b11, 1, 0)) << ccv_nnc_cmd_name(id);
  }
  // The sigmoid output is required, the loss optional.
  EXPECT_TRUE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b11));
  EXPECT_TRUE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b10));
  EXPECT_FALSE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b01));
  // Backward needs per loss: CATEGORICAL and MSE g, x, y; BINARY x, y; SMOOTH_L1 x, y and the loss.
  EXPECT_TRUE(bm(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, 4, 0b0111, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, 4, 0b0110, 1, 1));
  EXPECT_TRUE(bm(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, 4, 0b0111, 2, 0b11));
  EXPECT_FALSE(bm(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, 4, 0b0111, 2, 0b10));
  EXPECT_TRUE(bm(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, 4, 0b0110, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, 4, 0b0011, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, 4, 0b0110, 2, 0b10));
  EXPECT_TRUE(bm(CCV_NNC_MSE_BACKWARD, 4, 0b0111, 2, 0b10));
  EXPECT_TRUE(bm(CCV_NNC_MSE_BACKWARD, 4, 0b1111, 2, 0b11));
  EXPECT_FALSE(bm(CCV_NNC_MSE_BACKWARD, 4, 0b0110, 2, 0b01));
  EXPECT_FALSE(bm(CCV_NNC_MSE_BACKWARD, 4, 0b0111, 2, 0b00));
  EXPECT_TRUE(bm(CCV_NNC_SMOOTH_L1_BACKWARD, 4, 0b1110, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_SMOOTH_L1_BACKWARD, 4, 0b0111, 1, 1));
  // |g|g_sigmoid|z|y|loss|sigmoid|: y and the sigmoid.
  EXPECT_TRUE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 6, 0b101000, 1, 1));
  EXPECT_TRUE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 6, 0b101000, 2, 0b11));
  EXPECT_FALSE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 6, 0b001100, 2, 0b11));
  EXPECT_FALSE(bm(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 6, 0b100100, 1, 1));

  auto allow = [](uint32_t id, int i, int ni, int o, int no) { return ccv_nnc_cmd_allow_inplace(cmd(id), i, ni, o, no); };
  EXPECT_TRUE(allow(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 0, 2, 1, 2));
  EXPECT_FALSE(allow(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 0, 2, 0, 2));
  for (int i = 0; i < 6; i++)
    EXPECT_EQ(allow(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, i, 6, 0, 2), i == 1 || i == 2 || i == 5) << i;
  for (uint32_t id : {CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD,
                      CCV_NNC_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, CCV_NNC_MSE_FORWARD,
                      CCV_NNC_MSE_BACKWARD, CCV_NNC_SMOOTH_L1_FORWARD, CCV_NNC_SMOOTH_L1_BACKWARD,
                      CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD}) {
    EXPECT_EQ(ccv_nnc_cmd_attr(cmd(id), CCV_NNC_CMD_ATTR_NULL_IS_ONES), (id & 1) ? 1 : 0) << ccv_nnc_cmd_name(id);
    for (int i = 0; i < 6; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(cmd(id), i, 6, 0, 2)) << ccv_nnc_cmd_name(id);
      if (id != CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD && id != CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD)
        EXPECT_FALSE(allow(id, i, 6, 0, 2)) << ccv_nnc_cmd_name(id);
    }
  }
}

// SIGMOID_BINARY_CROSSENTROPY's in-place pairs compute what separate tensors do, on both backends.
TEST_F(Loss, SigmoidInPlacePairsGiveTheSameValues) {
  std::mt19937 rng(5);
  const int rows = 6, cols = 37;
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    ccv_nnc_cmd_t f = bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, 1.5f);
    ccv_nnc_cmd_t b = bce(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD, 1.5f);
    f.backend = b.backend = backend;
    T z(CCV_32F, {rows, cols}), y(CCV_32F, {rows, cols}), g(CCV_32F, {rows, 1}), gs(CCV_32F, {rows, cols});
    fill(z, rng, -4, 4);
    fill(y, rng, 0, 1);
    fill(g, rng, 0.5, 2);
    fill(gs, rng, -1, 1);
    T loss(CCV_32F, {rows, 1}), s(CCV_32F, {rows, cols}), dz(CCV_32F, {rows, cols});
    ASSERT_EQ(cmdtest::run(f, {z, y}, {loss, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(cmdtest::run(b, {g, gs, nullptr, y, loss, s}, {dz}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    T z2(CCV_32F, {rows, cols}), loss2(CCV_32F, {rows, 1});
    for (size_t i = 0; i < z.count(); i++) z2.set(i, z.get(i));
    ASSERT_EQ(cmdtest::run(f, {z2, y}, {loss2, z2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < s.count(); i++) ASSERT_EQ(z2.get(i), s.get(i)) << i;
    for (int r = 0; r < rows; r++) ASSERT_EQ(loss2.get(r), loss.get(r)) << r;
    for (int slot : {1, 5}) {
      T over(CCV_32F, {rows, cols});
      const T& from = slot == 1 ? gs : s;
      for (size_t i = 0; i < over.count(); i++) over.set(i, from.get(i));
      std::vector<ccv_nnc_tensor_t*> in = {g, gs, nullptr, y, loss, s};
      in[slot] = over;
      ASSERT_EQ(cmdtest::run(b, in, {over}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t i = 0; i < dz.count(); i++) ASSERT_EQ(over.get(i), dz.get(i)) << "slot " << slot << " at " << i;
    }
    // dz over the logits, from the logits: the same values as from them kept apart.
    T dz_z(CCV_32F, {rows, cols}), z3(CCV_32F, {rows, cols});
    ASSERT_EQ(cmdtest::run(b, {g, gs, z, y, loss, s}, {dz_z}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < z.count(); i++) z3.set(i, z.get(i));
    ASSERT_EQ(cmdtest::run(b, {g, gs, z3, y, loss, s}, {z3}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < dz.count(); i++) ASSERT_EQ(z3.get(i), dz_z.get(i)) << i;
  }
}

// CATEGORICAL_CROSSENTROPY on CPU_OPT keeps its class indices in the stream's
// or thread's workspace: calls that reuse it (other sizes, another stream)
// still give the reference's values.
TEST_F(Loss, CategoricalIndicesInWorkspace) {
  std::mt19937 rng(9);
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(stream, nullptr);
  for (int rows : {3, 700, 5}) {
    const int cols = 11;
    T p(CCV_32F, {rows, cols}), lab(CCV_32S, {rows}), g(CCV_32F, {rows});
    fill(p, rng, 0.01, 1);
    fill(g, rng, 0.5, 2);
    for (int r = 0; r < rows; r++) lab.set(r, (r * 5 + rows) % cols);
    T loss_ref(CCV_32F, {rows}), dp_ref(CCV_32F, {rows, cols});
    ccv_nnc_cmd_t f = ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, 0.02f, 0.8f);
    ccv_nnc_cmd_t b = ce(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD, 0.02f, 0.8f);
    f.backend = b.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(cmdtest::run(f, {p, lab}, {loss_ref}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(cmdtest::run(b, {g, p, lab}, {dp_ref}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    f.backend = b.backend = CCV_NNC_BACKEND_CPU_OPT;
    for (ccv_nnc_stream_context_t* s : {static_cast<ccv_nnc_stream_context_t*>(nullptr), stream}) {
      T loss(CCV_32F, {rows}), dp(CCV_32F, {rows, cols});
      ccv_nnc_tensor_t* fin[2] = {p, lab};
      ccv_nnc_tensor_t* fout[1] = {loss};
      ccv_nnc_tensor_t* bin[3] = {g, p, lab};
      ccv_nnc_tensor_t* bout[1] = {dp};
      ASSERT_EQ(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 2, fout, 1, s), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 3, bout, 1, s), CCV_NNC_EXEC_SUCCESS);
      if (s) ccv_nnc_stream_context_wait(s);
      for (int r = 0; r < rows; r++) EXPECT_NEAR(loss.get(r), loss_ref.get(r), 1e-5 * std::fabs(loss_ref.get(r)));
      for (size_t i = 0; i < dp.count(); i++) EXPECT_NEAR(dp.get(i), dp_ref.get(i), 1e-5 * std::fabs(dp_ref.get(i)));
    }
  }
  ccv_nnc_stream_context_free(stream);
}

TEST_F(Loss, EasyMacrosFromC) {
  nnc_test_loss_cmds_t c;
  nnc_test_loss_cmds(&c);
  EXPECT_EQ(c.mse_sum.cmd, static_cast<uint32_t>(CCV_NNC_MSE_FORWARD));
  EXPECT_EQ(c.mse_sum.info.mse.reduce_op, CCV_NNC_MSE_REDUCE_SUM);
  EXPECT_EQ(c.mse_mean_backward.info.mse.reduce_op, CCV_NNC_MSE_REDUCE_MEAN);
  EXPECT_FLOAT_EQ(c.smooth_l1.info.smooth_l1.beta, 0.5f);
  EXPECT_FLOAT_EQ(c.bce_default.info.binary_crossentropy.pos_weight, 1.0f);
  EXPECT_FLOAT_EQ(c.bce_weighted.info.binary_crossentropy.pos_weight, 2.0f);
  EXPECT_FLOAT_EQ(c.sigmoid_bce.info.binary_crossentropy.pos_weight, 1.0f);
  EXPECT_FLOAT_EQ(c.categorical_default.info.label_smoothing.trim1, 1.0f);
  EXPECT_FLOAT_EQ(c.categorical_smoothed.info.label_smoothing.trim0, 0.1f);
  float loss = 0;
  ASSERT_EQ(nnc_test_loss_example(&loss), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_NEAR(loss, (1.0 + 4.0) / 2, 1e-6);
}

}  // namespace
