// SOFTMAX and SOFTMAX_CROSSENTROPY through the C API on CPU_REF and CPU_OPT:
// values against a double reference written here, gradients against central
// differences, CPU_OPT against CPU_REF on odd shapes and views, the vector
// exp's accuracy on every instruction set this CPU has, extreme logits, bad
// input, shapes and bitmasks, and the easy macros from C.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cmd/softmax/softmax.hpp"
#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "softmax_easy.h"

namespace {

using cmdtest::T;
using Dims = std::vector<int>;

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class Softmax : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

bool same_params(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  return a.type == b.type && a.format == b.format && a.datatype == b.datatype &&
         std::memcmp(a.dim, b.dim, sizeof(a.dim)) == 0;
}

ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = 0, float trim0 = 0, float trim1 = 1) {
  ccv_nnc_cmd_t c = cmdtest::command(id, backend);
  c.info.label_smoothing.trim0 = trim0;
  c.info.label_smoothing.trim1 = trim1;
  return c;
}

// ---------------------------------------------------------------------------
// The reference, in double, on row-major values.

std::vector<double> values(const T& t) {
  std::vector<double> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = t.get(i);
  return v;
}

std::vector<double> ref_softmax(const std::vector<double>& x, int cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / cols; r++) {
    const double* xr = &x[r * cols];
    double m = xr[0];
    for (int j = 1; j < cols; j++) m = std::max(m, xr[j]);
    double s = 0;
    for (int j = 0; j < cols; j++) s += std::exp(xr[j] - m);
    for (int j = 0; j < cols; j++) y[r * cols + j] = std::exp(xr[j] - m) / s;
  }
  return y;
}

// Targets from indices or dense rows, smoothed.
std::vector<double> ref_targets(const std::vector<double>& labels, size_t rows, int cols, double trim0, double trim1) {
  std::vector<double> t(rows * cols);
  const bool dense = labels.size() == rows * cols && cols > 1;
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < cols; j++)
      t[r * cols + j] =
          dense ? trim0 + (trim1 - trim0) * labels[r * cols + j] : (static_cast<int>(labels[r]) == j ? trim1 : trim0);
  return t;
}

// -sum t log softmax, with log softmax = x - m - log sum exp(x - m).
std::vector<double> ref_ce(const std::vector<double>& x, const std::vector<double>& t, int cols) {
  std::vector<double> loss(x.size() / cols);
  for (size_t r = 0; r < loss.size(); r++) {
    const double* xr = &x[r * cols];
    double m = xr[0];
    for (int j = 1; j < cols; j++) m = std::max(m, xr[j]);
    double s = 0;
    for (int j = 0; j < cols; j++) s += std::exp(xr[j] - m);
    double l = 0;
    for (int j = 0; j < cols; j++) l -= t[r * cols + j] * (xr[j] - m - std::log(s));
    loss[r] = l;
  }
  return loss;
}

void expect_values(const T& t, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(t.count(), want.size()) << what;
  for (size_t i = 0; i < want.size(); i++) {
    ASSERT_TRUE(std::isfinite(t.get(i))) << what << " element " << i;
    EXPECT_NEAR(t.get(i), want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " element " << i;
  }
}

T make(int dt, const Dims& d, bool view = false, int format = CCV_TENSOR_FORMAT_NHWC) {
  return view ? T::view(dt, d, format) : T(dt, d, format);
}

// Random class indices stored in `t` (any type).
void fill_labels(const T& t, int classes, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, classes - 1);
  for (size_t i = 0; i < t.count(); i++) t.set(i, d(rng));
}
// Random probability rows (or one-hot rows when one_hot).
void fill_dense(const T& t, int cols, bool one_hot, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.05, 1);
  std::uniform_int_distribution<int> k(0, cols - 1);
  for (size_t r = 0; r < t.count() / cols; r++) {
    if (one_hot) {
      const int hot = k(rng);
      for (int j = 0; j < cols; j++) t.set(r * cols + j, j == hot ? 1 : 0);
      continue;
    }
    std::vector<double> p(cols);
    double s = 0;
    for (double& v : p) s += v = u(rng);
    for (int j = 0; j < cols; j++) t.set(r * cols + j, p[j] / s);
  }
}

// ---------------------------------------------------------------------------
// SOFTMAX

TEST_F(Softmax, ForwardMatchesReference) {
  std::mt19937 rng(1);
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F})
      for (bool view : {false, true})
        for (const Dims& d : {Dims{9}, Dims{3, 7}, Dims{2, 3, 17}, Dims{5, 1}}) {
          if (backend == kOpt && dt == CCV_64F) continue;
          SCOPED_TRACE(::testing::Message() << "backend " << backend << " dt " << dt << " view " << view << " nd "
                                            << d.size() << " last " << d.back());
          T x = make(dt, d, view), y = make(dt, d, view);
          cmdtest::fill_uniform(x, rng, -5, 5);
          ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          expect_values(y, ref_softmax(values(x), d.back()), dt == CCV_32F ? 2e-6 : 1e-14, "y");
          EXPECT_TRUE(y.guard_intact());
        }
}

TEST_F(Softmax, HalfTypesOnRef) {
  std::mt19937 rng(2);
  for (int dt : {CCV_16F, CCV_16BF}) {
    T x(dt, {4, 6}), y(dt, {4, 6});
    cmdtest::fill_random(x, rng);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    expect_values(y, ref_softmax(values(x), 6), dt == CCV_16F ? 1e-3 : 8e-3, "y");
    // Cross-entropy with 32S labels next to half logits (CPU_REF).
    T lab(CCV_32S, {4}), loss(dt, {4, 1}), s(dt, {4, 6}), dx(dt, {4, 6});
    fill_labels(lab, 6, rng);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD), {x, lab}, {loss, s}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const double tol = dt == CCV_16F ? 2e-3 : 1e-2;
    expect_values(loss, ref_ce(values(x), ref_targets(values(lab), 4, 6, 0, 1), 6), tol, "loss");
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD), {nullptr, nullptr, x, lab, loss, s}, {dx}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    std::vector<double> want = values(s);
    for (int r = 0; r < 4; r++) want[r * 6 + static_cast<int>(lab.get(r))] -= 1;
    expect_values(dx, want, tol, "d logits");
  }
}

TEST_F(Softmax, InPlace) {
  std::mt19937 rng(3);
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {6, 19});
    cmdtest::fill_uniform(x, rng, -3, 3);
    const std::vector<double> want = ref_softmax(values(x), 19);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD, backend), {x}, {x}), CCV_NNC_EXEC_SUCCESS);
    expect_values(x, want, 2e-6, "in place");
  }
}

TEST_F(Softmax, ExtremeLogits) {
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {3, 4}), y(CCV_32F, {3, 4});
    const double v[12] = {1e4, -1e4, 0, 1e4, -1e4, -1e4, -1e4, -1e4, 1e4, 1e4 - 1, -3e4, 88};
    for (int i = 0; i < 12; i++) x.set(i, v[i]);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    expect_values(y, ref_softmax(values(x), 4), 2e-6, "y");
  }
}

TEST_F(Softmax, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(4);
  for (const Dims& d : {Dims{7}, Dims{3, 5}, Dims{2, 2, 3}}) {
    T x(CCV_64F, d);
    cmdtest::fill_uniform(x, rng, -2, 2);
    cmdtest::expect_gradients_match(cmd(CCV_NNC_SOFTMAX_FORWARD), cmd(CCV_NNC_SOFTMAX_BACKWARD), ccv_nnc_no_hint, {&x},
                                    {d}, {true}, rng);
  }
}

TEST_F(Softmax, OptAgreesWithRef) {
  std::mt19937 rng(5);
  for (bool view : {false, true})
    for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
      for (const Dims& d : {Dims{1}, Dims{37, 1}, Dims{5, 7}, Dims{3, 16}, Dims{4, 33}, Dims{2, 3, 1000},
                            Dims{129, 257}, Dims{3001, 13}}) {
        SCOPED_TRACE(::testing::Message() << "view " << view << " format " << format << " rows x " << d.back());
        T x = make(CCV_32F, d, view, format), g = make(CCV_32F, d, view, format), y = make(CCV_32F, d, false, format);
        cmdtest::fill_uniform(x, rng, -10, 10);
        cmdtest::fill_uniform(g, rng);
        cmdtest::expect_backends_agree(cmd(CCV_NNC_SOFTMAX_FORWARD), ccv_nnc_no_hint, {x}, {d}, CCV_32F, kOpt, 2e-6,
                                       format);
        ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
        cmdtest::expect_backends_agree(cmd(CCV_NNC_SOFTMAX_BACKWARD), ccv_nnc_no_hint, {g, nullptr, y}, {d}, CCV_32F,
                                       kOpt, 2e-6, format);
      }
}

// ---------------------------------------------------------------------------
// The vector loops on every instruction set this CPU has.

std::vector<const nnc::softmax::RowKernels*> all_kernels() {
  std::vector<const nnc::softmax::RowKernels*> k = {nnc::softmax::row_kernels_scalar()};
  if (auto* a = nnc::softmax::row_kernels_avx2()) k.push_back(a);
  if (auto* a = nnc::softmax::row_kernels_avx512()) k.push_back(a);
  return k;
}

TEST_F(Softmax, VectorExpIsAccurate) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; i++) x.push_back(static_cast<float>(-87.0 + 175.0 * i / 200000.0));
  x.push_back(0.0f);
  x.push_back(-1e-7f);
  x.push_back(1e-7f);
  std::vector<float> y(x.size());
  for (const auto* k : all_kernels()) {
    SCOPED_TRACE(k->name);
    k->exp(x.data(), y.data(), x.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); i++) {
      const double want = std::exp(static_cast<double>(x[i]));
      // ulps of the float nearest to want
      const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
      worst = std::max(worst, std::fabs(y[i] - want) / ulp);
    }
    EXPECT_LE(worst, 2.0) << "max error in ulp (measured 0.91 for the vector loops, 0.5 for libm)";
    const float edge[5] = {-1e4f, -88.0f, -87.5f, 0.0f, -INFINITY};
    float out[5];
    k->exp(edge, out, 5);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_GE(out[2], 0.0f);
    EXPECT_LT(out[2], 2 * FLT_MIN);
    EXPECT_EQ(out[3], 1.0f);
    EXPECT_EQ(out[4], 0.0f);
  }
}

TEST_F(Softmax, RowLoopsAgreeAcrossInstructionSets) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-5, 5);
  for (int n : {1, 3, 8, 9, 15, 16, 17, 31, 33, 100}) {
    std::vector<float> x(n), g(n), gs(n), lab(n), y0(n), y1(n);
    for (int i = 0; i < n; i++) x[i] = u(rng), g[i] = u(rng), gs[i] = u(rng), lab[i] = u(rng);
    const auto* s = nnc::softmax::row_kernels_scalar();
    for (const auto* k : all_kernels()) {
      SCOPED_TRACE(::testing::Message() << k->name << " n " << n);
      EXPECT_EQ(k->max(x.data(), n), s->max(x.data(), n));
      const float m = s->max(x.data(), n);
      const float s0 = s->exp_sum(x.data(), m, y0.data(), n);
      const float s1 = k->exp_sum(x.data(), m, y1.data(), n);
      EXPECT_NEAR(s1, s0, 1e-5 * s0);
      EXPECT_NEAR(k->exp_sum(x.data(), m, nullptr, n), s0, 1e-5 * s0);
      for (int i = 0; i < n; i++) EXPECT_NEAR(y1[i], y0[i], 1e-6 * std::max(1.0f, y0[i]));
      s->softmax_backward(g.data(), y0.data(), y0.data(), n);
      k->softmax_backward(g.data(), y1.data(), y1.data(), n);
      for (int i = 0; i < n; i++) EXPECT_NEAR(y1[i], y0[i], 1e-4 * std::max(1.0f, std::fabs(y0[i])));
      for (const float* gsp : {static_cast<const float*>(nullptr), static_cast<const float*>(gs.data())})
        for (const float* lp : {static_cast<const float*>(nullptr), static_cast<const float*>(lab.data())}) {
          s->crossentropy_backward(x.data(), gsp, lp, y0.data(), n, 0.7f, 0.2f, -1.3f);
          k->crossentropy_backward(x.data(), gsp, lp, y1.data(), n, 0.7f, 0.2f, -1.3f);
          for (int i = 0; i < n; i++) EXPECT_NEAR(y1[i], y0[i], 1e-4 * std::max(1.0f, std::fabs(y0[i])));
        }
      std::vector<float> a(x), b(x);
      s->scale(a.data(), 0.37f, n);
      k->scale(b.data(), 0.37f, n);
      for (int i = 0; i < n; i++) EXPECT_EQ(a[i], b[i]);
    }
  }
}

// ---------------------------------------------------------------------------
// SOFTMAX_CROSSENTROPY

struct CeCase {
  int label_dt;  // CCV_32S, CCV_32F, CCV_64F
  bool dense;
  bool one_hot;
  Dims label_dims;  // empty: logits' rows as [rows]
};

TEST_F(Softmax, CrossEntropyForwardMatchesReference) {
  std::mt19937 rng(7);
  const int rows = 6, cols = 11;
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F})
      for (bool view : {false, true})
        for (const auto& trim : {std::pair<float, float>{0, 1}, std::pair<float, float>{0.01f, 0.9f}})
          for (const CeCase& c : {CeCase{CCV_32S, false, false, {rows}}, CeCase{CCV_32S, false, false, {rows, 1}},
                                  CeCase{dt, false, false, {rows}}, CeCase{dt, true, true, {rows, cols}},
                                  CeCase{dt, true, false, {rows, cols}}}) {
            if (backend == kOpt && dt == CCV_64F) continue;
            SCOPED_TRACE(::testing::Message() << "backend " << backend << " dt " << dt << " view " << view << " trim0 "
                                              << trim.first << " label dt " << c.label_dt << " dense " << c.dense);
            T x = make(dt, {rows, cols}, view), lab = make(c.label_dt, c.label_dims, view);
            T loss = make(dt, {rows, 1}, view), s = make(dt, {rows, cols}, view);
            cmdtest::fill_uniform(x, rng, -6, 6);
            if (c.dense)
              fill_dense(lab, cols, c.one_hot, rng);
            else
              fill_labels(lab, cols, rng);
            ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend, trim.first, trim.second),
                                   {x, lab}, {loss, s}),
                      CCV_NNC_EXEC_SUCCESS)
                << ccv_nnc_error_message();
            const double tol = dt == CCV_32F ? 3e-6 : 1e-13;
            expect_values(loss, ref_ce(values(x), ref_targets(values(lab), rows, cols, trim.first, trim.second), cols),
                          tol, "loss");
            expect_values(s, ref_softmax(values(x), cols), tol, "softmax");
            EXPECT_TRUE(loss.guard_intact() && s.guard_intact() && lab.guard_intact());
            // Loss alone and softmax alone.
            T loss2 = make(dt, {rows}), s2 = make(dt, {rows, cols});
            ccv_nnc_cmd_t f = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend, trim.first, trim.second);
            ASSERT_EQ(cmdtest::run(f, {x, lab}, {loss2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
            ASSERT_EQ(cmdtest::run(f, {x, lab}, {nullptr, s2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
            EXPECT_EQ(cmdtest::max_rel_diff(loss2, loss), 0);
            EXPECT_EQ(cmdtest::max_rel_diff(s2, s), 0);
          }
}

TEST_F(Softmax, CrossEntropyExtremeLogits) {
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {3, 3}), lab(CCV_32S, {3}), loss(CCV_32F, {3, 1}), s(CCV_32F, {3, 3}), dx(CCV_32F, {3, 3});
    const double v[9] = {1e4, -1e4, 0, 1e4, -1e4, 0, -1e4, -1e4, -1e4};
    for (int i = 0; i < 9; i++) x.set(i, v[i]);
    lab.set(0, 0), lab.set(1, 1), lab.set(2, 2);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend), {x, lab}, {loss, s}),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(loss.get(0), 0.0);
    EXPECT_EQ(loss.get(1), 2e4);
    EXPECT_NEAR(loss.get(2), std::log(3.0), 1e-6);
    ASSERT_EQ(
        cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, backend), {nullptr, nullptr, x, lab, loss, s}, {dx}),
        CCV_NNC_EXEC_SUCCESS);
    const double want[9] = {0, 0, 0, 1, -1, 0, 1.0 / 3, 1.0 / 3, -2.0 / 3};
    for (int i = 0; i < 9; i++) EXPECT_NEAR(dx.get(i), want[i], 1e-6) << i;
  }
}

TEST_F(Softmax, CrossEntropyBackwardMatchesFiniteDifferences) {
  std::mt19937 rng(8);
  const int rows = 3, cols = 5;
  for (const auto& trim : {std::pair<float, float>{0, 1}, std::pair<float, float>{0.05f, 0.8f}})
    for (int kind = 0; kind < 3; kind++) {
      SCOPED_TRACE(::testing::Message() << "kind " << kind << " trim0 " << trim.first);
      T x(CCV_64F, {rows, cols});
      cmdtest::fill_uniform(x, rng, -3, 3);
      T lab = kind == 0 ? T(CCV_64F, {rows}) : T(CCV_64F, {rows, cols});
      if (kind == 0)
        fill_labels(lab, cols, rng);
      else
        fill_dense(lab, cols, kind == 1, rng);
      cmdtest::expect_gradients_match(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 0, trim.first, trim.second),
                                      cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 0, trim.first, trim.second),
                                      ccv_nnc_no_hint, {&x, &lab}, {{rows, 1}, {rows, cols}}, {true, false}, rng);
    }
}

TEST_F(Softmax, CrossEntropyOptAgreesWithRef) {
  std::mt19937 rng(9);
  for (bool view : {false, true})
    for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
      for (const Dims& d :
           {Dims{1, 1}, Dims{7}, Dims{64, 10}, Dims{5, 17}, Dims{3, 4, 33}, Dims{130, 1000}, Dims{4001, 10}})
        for (bool dense : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "view " << view << " format " << format << " cols " << d.back() << " dense " << dense);
          const int cols = d.back();
          Dims ld = d;
          if (!dense) ld.back() = 1;
          T x = make(CCV_32F, d, view, format), lab = make(dense ? CCV_32F : CCV_32S, ld, view, format);
          cmdtest::fill_uniform(x, rng, -20, 20);
          if (dense)
            fill_dense(lab, cols, false, rng);
          else
            fill_labels(lab, cols, rng);
          Dims per_row = d;
          per_row.back() = 1;
          const ccv_nnc_cmd_t f = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 0, 0.02f, 0.95f);
          cmdtest::expect_backends_agree(f, ccv_nnc_no_hint, {x, lab}, {per_row, d}, CCV_32F, kOpt, 1e-5, format);
          T loss = make(CCV_32F, per_row, false, format), s = make(CCV_32F, d, view, format);
          T g = make(CCV_32F, per_row, view, format), gs = make(CCV_32F, d, view, format);
          cmdtest::fill_uniform(g, rng);
          cmdtest::fill_uniform(gs, rng);
          ASSERT_EQ(cmdtest::run(f, {x, lab}, {loss, s}), CCV_NNC_EXEC_SUCCESS);
          const ccv_nnc_cmd_t b = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 0, 0.02f, 0.95f);
          cmdtest::expect_backends_agree(b, ccv_nnc_no_hint, {g, gs, x, lab, loss, s}, {d}, CCV_32F, kOpt, 1e-5,
                                         format);
          cmdtest::expect_backends_agree(b, ccv_nnc_no_hint, {nullptr, nullptr, nullptr, lab, nullptr, s}, {d}, CCV_32F,
                                         kOpt, 1e-5, format);
        }
}

TEST_F(Softmax, CrossEntropyBackwardInPlaceOnSoftmax) {
  std::mt19937 rng(10);
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {4, 9}), lab(CCV_32S, {4}), s(CCV_32F, {4, 9}), want(CCV_32F, {4, 9});
    cmdtest::fill_uniform(x, rng, -4, 4);
    fill_labels(lab, 9, rng);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend), {x, lab}, {nullptr, s}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, backend), {nullptr, nullptr, x, lab, nullptr, s},
                           {want}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(
        cmdtest::run(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, backend), {nullptr, nullptr, x, lab, nullptr, s}, {s}),
        CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(cmdtest::max_rel_diff(s, want), 0);
  }
}

// ---------------------------------------------------------------------------
// Bad input, shapes, bitmasks

void expect_invalid(const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                    const char* needle) {
  EXPECT_EQ(cmdtest::run(c, in, out), CCV_NNC_EXEC_INVALID) << "expected a failure mentioning " << needle;
  EXPECT_TRUE(cmdtest::message_has(needle)) << ccv_nnc_error_message();
}

TEST_F(Softmax, BadInput) {
  T x(CCV_32F, {4, 5}), y(CCV_32F, {4, 5}), y64(CCV_64F, {4, 5}), ybad(CCV_32F, {4, 6}), xi(CCV_32S, {4, 5});
  T lab(CCV_32S, {4}), labf(CCV_32F, {4}), loss(CCV_32F, {4, 1}), s(CCV_32F, {4, 5}), dx(CCV_32F, {4, 5});
  T lab3(CCV_32S, {3}), dense64(CCV_64F, {4, 5}), loss_bad(CCV_32F, {5});
  for (int i = 0; i < 4; i++) lab.set(i, i), labf.set(i, i);
  for (size_t i = 0; i < x.count(); i++) x.set(i, 0.1 * i);
  const ccv_nnc_cmd_t sf = cmd(CCV_NNC_SOFTMAX_FORWARD), sb = cmd(CCV_NNC_SOFTMAX_BACKWARD);
  expect_invalid(sf, {x, x}, {y}, "one input");
  expect_invalid(sf, {x}, {y, y}, "one output");
  expect_invalid(sf, {x}, {ybad}, "4x6");
  expect_invalid(sf, {x}, {y64}, "64F");
  expect_invalid(sf, {xi}, {y}, "32S");
  expect_invalid(sb, {x, x}, {dx}, "|g|x|y|");
  expect_invalid(sb, {x, x, nullptr}, {dx}, "input 2");
  for (uint32_t backend : {kRef, kOpt}) {
    const ccv_nnc_cmd_t f = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend);
    const ccv_nnc_cmd_t b = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, backend);
    expect_invalid(f, {x}, {loss, s}, "|logits|labels|");
    expect_invalid(f, {x, lab}, {loss, s, s}, "|loss|softmax|");
    expect_invalid(f, {x, lab3}, {loss, s}, "labels are");
    expect_invalid(f, {x, dense64}, {loss, s}, "dense labels are 64F");
    expect_invalid(f, {x, lab}, {loss_bad, s}, "one entry per row");
    expect_invalid(f, {x, lab}, {nullptr, nullptr}, "both outputs");
    expect_invalid(b, {nullptr, nullptr, x, lab, loss}, {dx}, "inputs");
    expect_invalid(b, {nullptr, nullptr, x, lab, loss, nullptr}, {dx}, "softmax");
    expect_invalid(b, {nullptr, nullptr, x, lab, loss, s}, {dx, dx}, "labels is not supported");
    // Label values.
    lab.set(2, 5);
    expect_invalid(f, {x, lab}, {loss, s}, "outside [0, 5)");
    expect_invalid(b, {nullptr, nullptr, x, lab, loss, s}, {dx}, "outside [0, 5)");
    lab.set(2, -1);
    expect_invalid(f, {x, lab}, {loss, s}, "class -1");
    lab.set(2, 2);
    labf.set(1, 1.5);
    expect_invalid(f, {x, labf}, {loss, s}, "not a whole class index");
    labf.set(1, NAN);
    expect_invalid(f, {x, labf}, {loss, s}, "not a whole class index");
    labf.set(1, 1e10);
    expect_invalid(f, {x, labf}, {loss, s}, "outside [0, 5)");
    labf.set(1, 1);
    EXPECT_EQ(cmdtest::run(f, {x, labf}, {loss, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    // A bad label deep in a batch large enough for the threaded path.
    T bx(CCV_32F, {5000, 10}), blab(CCV_32S, {5000}), bloss(CCV_32F, {5000, 1}), bs(CCV_32F, {5000, 10});
    for (size_t i = 0; i < bx.count(); i++) bx.set(i, 0.001 * i);
    for (int i = 0; i < 5000; i++) blab.set(i, i % 10);
    blab.set(4321, 10);
    expect_invalid(f, {bx, blab}, {bloss, bs}, "label 4321 is class 10");
    expect_invalid(b, {nullptr, nullptr, bx, blab, bloss, bs}, {bs}, "label 4321 is class 10");
  }
}

// libnnc's contract of each command (its description file's tensor_auto,
// bitmask and in-place rules), pinned one rule at a time.
TEST_F(Softmax, ShapesAndBitmasks) {
  ccv_nnc_tensor_param_t out[2];
  auto ce_loss_shape = [&](Dims x, ccv_nnc_tensor_param_t label) {
    ccv_nnc_tensor_param_t in[2] = {cmdtest::param(CCV_32F, x), label};
    std::memset(out, 0, sizeof(out));
    ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD), in, 2, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(out[0].datatype, CCV_32F);  // the logits' type, whatever the labels'
    EXPECT_TRUE(ccv_nnc_tensor_count(out[1]) == ccv_nnc_tensor_count(in[0]) && out[1].dim[1] == in[0].dim[1]);
    return Dims(out[0].dim, out[0].dim + ccv_nnc_tensor_nd(out[0].dim));
  };
  // The loss takes the labels' shape with the channel set to 1.
  EXPECT_EQ(ce_loss_shape({8, 10}, cmdtest::param(CCV_32S, {8})), (Dims{8}));
  EXPECT_EQ(ce_loss_shape({8, 10}, cmdtest::param(CCV_32S, {8, 1})), (Dims{8, 1}));
  EXPECT_EQ(ce_loss_shape({8, 10}, cmdtest::param(CCV_32F, {8, 10})), (Dims{8, 1}));
  // Class indices over several batch dimensions keep their shape.
  EXPECT_EQ(ce_loss_shape({8, 3, 10}, cmdtest::param(CCV_32S, {8, 3})), (Dims{8, 3}));
  EXPECT_EQ(ce_loss_shape({8, 3, 10}, cmdtest::param(CCV_32F, {8, 3, 10})), (Dims{8, 3, 1}));
  ccv_nnc_tensor_param_t x = cmdtest::param(CCV_32F, {8, 10});
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SOFTMAX_FORWARD), &x, 1, ccv_nnc_no_hint, out, 1);
  EXPECT_TRUE(same_params(out[0], x));
  // SOFTMAX_BACKWARD: dx from the gradient (input 0).
  ccv_nnc_tensor_param_t sb[3] = {cmdtest::param(CCV_64F, {4, 5}), cmdtest::param(CCV_32F, {2, 2}), x};
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SOFTMAX_BACKWARD), sb, 3, ccv_nnc_no_hint, out, 1);
  EXPECT_TRUE(same_params(out[0], sb[0]));
  // SOFTMAX_CROSSENTROPY_BACKWARD: d logits from the softmax (input 5), d labels from the labels (input 3).
  ccv_nnc_tensor_param_t bin[6] = {cmdtest::param(CCV_32F, {8}), {}, {}, cmdtest::param(CCV_32S, {8}), {},
                                   cmdtest::param(CCV_32F, {8, 10})};
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD), bin, 6, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(same_params(out[0], bin[5]));
  EXPECT_TRUE(same_params(out[1], bin[3]));

  auto bm = [](uint32_t id, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(cmd(id), ni, no, &inputs, 1, &outputs, 1);
  };
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_FORWARD, 1, 1, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_FORWARD, 1, 0, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_FORWARD, 1, 1, 2, 0b11));
  // |g|x|y| -> |dx|: g and y; x is never needed.
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_BACKWARD, 3, 0b101, 1, 1));
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_BACKWARD, 3, 0b111, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_BACKWARD, 3, 0b011, 1, 1));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_BACKWARD, 3, 0b100, 1, 1));
  // |logits|labels| -> |loss|softmax|: the softmax is required, the loss optional.
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b11));
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b10));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 2, 0b11, 2, 0b01));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 2, 0b01, 2, 0b11));
  // |g|g_softmax|logits|labels|loss|softmax| -> |d logits|d labels|: labels and softmax.
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 6, 0b101001, 2, 0b01));
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 6, 0b101000, 2, 0b01));
  EXPECT_TRUE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 6, 0b101001, 2, 0b11));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 6, 0b001001, 2, 0b01));
  EXPECT_FALSE(bm(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 6, 0b101001, 2, 0b10));

  auto allow = [](uint32_t id, int i, int ni, int o, int no) { return ccv_nnc_cmd_allow_inplace(cmd(id), i, ni, o, no); };
  EXPECT_TRUE(allow(CCV_NNC_SOFTMAX_FORWARD, 0, 1, 0, 1));
  EXPECT_TRUE(allow(CCV_NNC_SOFTMAX_BACKWARD, 0, 3, 0, 1));
  EXPECT_FALSE(allow(CCV_NNC_SOFTMAX_BACKWARD, 2, 3, 0, 1));
  EXPECT_TRUE(allow(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 0, 2, 1, 2));
  EXPECT_FALSE(allow(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, 0, 2, 0, 2));
  for (int i = 0; i < 6; i++)
    EXPECT_EQ(allow(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, i, 6, 0, 2), i == 1 || i == 2 || i == 5) << i;
  EXPECT_FALSE(allow(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, 3, 6, 1, 2));
  for (uint32_t id : {CCV_NNC_SOFTMAX_FORWARD, CCV_NNC_SOFTMAX_BACKWARD, CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD,
                      CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD}) {
    EXPECT_EQ(ccv_nnc_cmd_attr(cmd(id), CCV_NNC_CMD_ATTR_NULL_IS_ONES), (id & 1) ? 1 : 0) << ccv_nnc_cmd_name(id);
    for (int i = 0; i < 6; i++)
      for (int o = 0; o < 2; o++) EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(cmd(id), i, 6, o, 2));
  }
}

// The in-place pairs libnnc allows compute what separate tensors do, on both backends.
TEST_F(Softmax, InPlacePairsGiveTheSameValues) {
  std::mt19937 rng(71);
  const int rows = 5, cols = 37;
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {rows, cols}), lab(CCV_32S, {rows}), gs(CCV_32F, {rows, cols}), g(CCV_32F, {rows});
    cmdtest::fill_uniform(x, rng, -3, 3);
    cmdtest::fill_uniform(gs, rng, -1, 1);
    cmdtest::fill_uniform(g, rng, 0.5, 2);
    for (int r = 0; r < rows; r++) lab.set(r, (r * 7) % cols);
    const ccv_nnc_cmd_t f = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, backend, 0.05f, 0.9f);
    const ccv_nnc_cmd_t b = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, backend, 0.05f, 0.9f);
    T loss(CCV_32F, {rows}), s(CCV_32F, {rows, cols}), dz(CCV_32F, {rows, cols});
    ASSERT_EQ(cmdtest::run(f, {x, lab}, {loss, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(cmdtest::run(b, {g, gs, x, lab, loss, s}, {dz}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    // Forward: the softmax over the logits.
    T x2(CCV_32F, {rows, cols}), loss2(CCV_32F, {rows});
    for (size_t i = 0; i < x.count(); i++) x2.set(i, x.get(i));
    ASSERT_EQ(cmdtest::run(f, {x2, lab}, {loss2, x2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < s.count(); i++) ASSERT_EQ(x2.get(i), s.get(i)) << i;
    for (int r = 0; r < rows; r++) ASSERT_EQ(loss2.get(r), loss.get(r)) << r;
    // Backward: d logits over g_softmax, the logits and the softmax.
    for (int slot : {1, 2, 5}) {
      T over(CCV_32F, {rows, cols});
      const T& from = slot == 1 ? gs : slot == 2 ? x : s;
      for (size_t i = 0; i < over.count(); i++) over.set(i, from.get(i));
      std::vector<ccv_nnc_tensor_t*> in = {g, gs, x, lab, loss, s};
      in[slot] = over;
      ASSERT_EQ(cmdtest::run(b, in, {over}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t i = 0; i < dz.count(); i++) ASSERT_EQ(over.get(i), dz.get(i)) << "slot " << slot << " at " << i;
    }
    // SOFTMAX: y over x, dx over g.
    T y(CCV_32F, {rows, cols}), dx(CCV_32F, {rows, cols});
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_BACKWARD, backend), {gs, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS);
    T x3(CCV_32F, {rows, cols}), g3(CCV_32F, {rows, cols});
    for (size_t i = 0; i < x.count(); i++) x3.set(i, x.get(i)), g3.set(i, gs.get(i));
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_FORWARD, backend), {x3}, {x3}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(cmdtest::run(cmd(CCV_NNC_SOFTMAX_BACKWARD, backend), {g3, nullptr, y}, {g3}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < y.count(); i++) {
      ASSERT_EQ(x3.get(i), y.get(i)) << i;
      ASSERT_EQ(g3.get(i), dx.get(i)) << i;
    }
  }
}

TEST_F(Softmax, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_softmax_ce_forward_smoothed();
  EXPECT_EQ(f.cmd, static_cast<uint32_t>(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  EXPECT_FLOAT_EQ(f.info.label_smoothing.trim0, 0.1f);
  EXPECT_FLOAT_EQ(f.info.label_smoothing.trim1, 0.9f);
  const ccv_nnc_cmd_t d = nnc_test_softmax_ce_backward_default();
  EXPECT_EQ(d.cmd, static_cast<uint32_t>(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD));
  EXPECT_FLOAT_EQ(d.info.label_smoothing.trim0, 0.0f);
  EXPECT_FLOAT_EQ(d.info.label_smoothing.trim1, 1.0f);
  float out[6];
  ASSERT_EQ(nnc_test_softmax_example(out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // Row [0, ln 2, ln 5] (index label 2) -> softmax [1/8, 2/8, 5/8], loss -ln(5/8).
  EXPECT_NEAR(out[0], 0.125, 1e-6);
  EXPECT_NEAR(out[1], 0.25, 1e-6);
  EXPECT_NEAR(out[2], 0.625, 1e-6);
  EXPECT_NEAR(out[3], -std::log(0.625), 1e-6);
  // d logits = softmax - onehot(2).
  EXPECT_NEAR(out[4], 0.125, 1e-6);
  EXPECT_NEAR(out[5], -0.375, 1e-6);
}

}  // namespace

namespace {

// SOFTMAX_BACKWARD carries NULL_IS_ONES: a NULL g computes what a tensor of
// ones does (dx = y * (1 - sum y), about 0), on both backends; and with a
// softmax of a row whose sum is off by rounding the two still agree exactly.
TEST_F(Softmax, BackwardNullGradientReadsAsOnes) {
  std::mt19937 rng(73);
  for (uint32_t backend : {kRef, kOpt})
    for (int cols : {1, 7, 33}) {
      const int rows = 3;
      T y(CCV_32F, {rows, cols}), ones(CCV_32F, {rows, cols}), dx(CCV_32F, {rows, cols}), dx1(CCV_32F, {rows, cols});
      // y need not be a softmax: the kernel's algebra holds for any y, and a
      // y that does not sum to 1 makes the expected dx nonzero.
      cmdtest::fill_uniform(y, rng, 0, 1);
      for (size_t i = 0; i < ones.count(); i++) ones.set(i, 1);
      const ccv_nnc_cmd_t b = cmd(CCV_NNC_SOFTMAX_BACKWARD, backend);
      ASSERT_EQ(cmdtest::run(b, {nullptr, nullptr, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(cmdtest::run(b, {ones, nullptr, y}, {dx1}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < cols; j++) s += y.get(r * cols + j);
        for (int j = 0; j < cols; j++) {
          const size_t i = r * cols + j;
          EXPECT_EQ(dx.get(i), dx1.get(i)) << backend << " " << i;
          EXPECT_NEAR(dx.get(i), y.get(i) * (1 - s), 1e-5 * (1 + std::fabs(s))) << backend << " " << i;
        }
      }
      // Without g, y is still required.
      EXPECT_EQ(cmdtest::run(b, {nullptr, nullptr, nullptr}, {dx}), CCV_NNC_EXEC_INVALID);
      EXPECT_TRUE(cmdtest::message_has("y (input 2) is NULL")) << ccv_nnc_error_message();
    }
}

}  // namespace
