// ADD, MUL and SCALAR_MUL, forward and backward, on CPU_REF and CPU_OPT:
// values against a double reference that broadcasts by itself (right-aligned
// dimensions, each equal or 1), finite-difference gradients of broadcast
// operands in fp64, CPU_OPT against CPU_REF on odd sizes, views, both formats,
// the bias / per-channel / scalar cases and the threaded size, in-place use,
// shape inference, bitmasks, bad input, and the CMD_* macros from C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/cmd_blas/broadcast_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class BroadcastTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

enum Op { kAdd, kMul, kScalar };
const char* name(Op op) { return op == kAdd ? "ADD" : op == kMul ? "MUL" : "SCALAR_MUL"; }
constexpr double kP = 0.75, kQ = -2.5;

ccv_nnc_cmd_t cmd_of(Op op, bool backward, uint32_t backend = 0, float p = kP, float q = kQ) {
  const uint32_t id = op == kAdd ? CCV_NNC_ADD_FORWARD : op == kMul ? CCV_NNC_MUL_FORWARD : CCV_NNC_SCALAR_MUL_FORWARD;
  ccv_nnc_cmd_t c = command(id | (backward ? 1u : 0u), backend, p);
  c.info.blas.a[1] = q;
  return c;
}

using Shape = std::vector<int>;

// The broadcast of two shapes computed here, independently of the library.
Shape broadcast(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t k = 0; k < n; k++) {
    const int x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[n - 1 - k] = std::max(x, y);
  }
  return out;
}

// Linear index into `x` (row-major) of the element that output element `i`
// (row-major over `out`) reads.
size_t source(const Shape& out, const Shape& x, size_t i) {
  size_t src = 0, mul = 1;
  for (size_t k = 0; k < out.size(); k++) {
    const size_t d = out.size() - 1 - k;
    const size_t idx = i % static_cast<size_t>(out[d]);
    i /= static_cast<size_t>(out[d]);
    if (k < x.size()) {
      const int xd = x[x.size() - 1 - k];
      if (xd != 1) src += idx * mul;
      mul *= static_cast<size_t>(xd);
    }
  }
  return src;
}

T make(int dt, const Shape& shape, bool view, int format = CCV_TENSOR_FORMAT_NHWC) {
  return view ? T::view(dt, shape, format) : T(dt, shape, format);
}

size_t count(const Shape& s) {
  size_t n = 1;
  for (int d : s) n *= static_cast<size_t>(d);
  return n;
}

double rel(double got, double want) { return std::fabs(got - want) / std::max(1.0, std::fabs(want)); }

struct Pair {
  Shape a, b;
};
// Equal shapes, a bias row, either side broadcast, per-channel NCHW (1xCx1x1
// and Cx1x1) and NHWC (C), a scalar on either side, both sides broadcast.
const std::vector<Pair> kPairs = {
    {{5, 7}, {5, 7}},       {{5, 7}, {7}},          {{7}, {5, 7}},       {{4, 6, 3, 5}, {1, 6, 1, 1}},
    {{4, 6, 3, 5}, {6, 1, 1}}, {{4, 3, 5, 6}, {6}}, {{2, 3}, {1}},       {{1}, {2, 3}},
    {{3, 1, 5}, {4, 1}},    {{1, 4, 1}, {3, 1, 5}}, {{2, 1, 3}, {2, 4, 3}},
};

TEST_F(BroadcastTest, ForwardMatchesDoubleReference) {
  std::mt19937 rng(21);
  for (Op op : {kAdd, kMul})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_16BF})
      for (uint32_t backend : {kRef, kOpt}) {
        const bool half = dt == CCV_16F || dt == CCV_16BF;
        if (half && backend == kOpt) continue;
        for (const Pair& pr : kPairs)
          for (bool view : {false, true}) {
            const Shape ys = broadcast(pr.a, pr.b);
            T a = make(dt, pr.a, view), b = make(dt, pr.b, view), y = make(dt, ys, view);
            if (half)
              fill_random(a, rng), fill_random(b, rng);
            else
              fill_uniform(a, rng, -4, 4), fill_uniform(b, rng, -4, 4);
            // Exact in 16F / 16BF: p, q powers of two there.
            const float p = half ? 0.5f : kP, q = half ? -2.0f : kQ;
            ASSERT_EQ(run(cmd_of(op, false, backend, p, q), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS)
                << name(op) << ": " << ccv_nnc_error_message();
            const double tol = dt == CCV_64F ? 1e-15 : dt == CCV_32F ? 3e-7 : dt == CCV_16F ? 1e-3 : 8e-3;
            for (size_t i = 0; i < y.count(); i++) {
              const double av = a.get(source(ys, pr.a, i)), bv = b.get(source(ys, pr.b, i));
              const double want = op == kAdd ? p * av + q * bv : p * av * bv;
              ASSERT_LE(rel(y.get(i), want), tol) << name(op) << " dt " << dt << " backend " << backend << " view "
                                                  << view << " pair " << (&pr - kPairs.data()) << " i " << i;
            }
            EXPECT_TRUE(y.guard_intact());
          }
      }
  // SCALAR_MUL: y = a x on any shape.
  for (int dt : {CCV_32F, CCV_64F, CCV_16F})
    for (uint32_t backend : {kRef, kOpt})
      for (bool view : {false, true}) {
        if (dt == CCV_16F && backend == kOpt) continue;
        T x = make(dt, {3, 5, 7}, view), y = make(dt, {3, 5, 7}, view);
        fill_random(x, rng);
        ASSERT_EQ(run(cmd_of(kScalar, false, backend, -4), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        for (size_t i = 0; i < y.count(); i++) ASSERT_EQ(y.get(i), -4 * x.get(i)) << i;
        EXPECT_TRUE(y.guard_intact());
      }
}

// The backward of a broadcast operand sums over the dimensions it was
// broadcast along; checked by central differences for every pair.
TEST_F(BroadcastTest, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(22);
  const std::vector<Pair> pairs = {{{3, 4}, {3, 4}}, {{3, 4}, {4}},         {{4}, {3, 4}},
                                   {{2, 3, 2, 2}, {1, 3, 1, 1}}, {{2, 3}, {1}}, {{3, 1, 2}, {4, 1}}};
  for (Op op : {kAdd, kMul})
    for (uint32_t backend : {kRef, kOpt})
      for (const Pair& pr : pairs) {
        T a(CCV_64F, pr.a), b(CCV_64F, pr.b);
        fill_uniform(a, rng), fill_uniform(b, rng);
        SCOPED_TRACE(std::string(name(op)) + " backend " + std::to_string(backend) + " pair " +
                     std::to_string(&pr - pairs.data()));
        expect_gradients_match(cmd_of(op, false, backend), cmd_of(op, true, backend), ccv_nnc_no_hint, {&a, &b},
                               {broadcast(pr.a, pr.b)}, {true, true}, rng);
      }
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_64F, {2, 3, 5});
    fill_uniform(x, rng);
    expect_gradients_match(cmd_of(kScalar, false, backend, 1.25), cmd_of(kScalar, true, backend, 1.25),
                           ccv_nnc_no_hint, {&x}, {{2, 3, 5}}, {true}, rng);
  }
}

// Backward with only what each reads: ADD and SCALAR_MUL g alone (the
// gradients' shapes from the outputs), MUL g and the other operand.
TEST_F(BroadcastTest, BackwardWithMinimalInputs) {
  std::mt19937 rng(23);
  for (uint32_t backend : {kRef, kOpt}) {
    T g(CCV_32F, {6, 5}), a(CCV_32F, {6, 5}), b(CCV_32F, {5});
    fill_uniform(g, rng), fill_uniform(a, rng), fill_uniform(b, rng);
    T da(CCV_32F, {6, 5}), db(CCV_32F, {5});
    ASSERT_EQ(run(cmd_of(kAdd, true, backend), {g}, {da, db}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < 30; i++) ASSERT_NEAR(da.get(i), kP * g.get(i), 1e-6);
    for (size_t c = 0; c < 5; c++) {
      double s = 0;
      for (size_t r = 0; r < 6; r++) s += g.get(r * 5 + c);
      ASSERT_NEAR(db.get(c), kQ * s, 1e-5);
    }
    // db only, from g and a (b NULL).
    T db2(CCV_32F, {5});
    ASSERT_EQ(run(cmd_of(kMul, true, backend), {g, a, nullptr}, {nullptr, db2}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (size_t c = 0; c < 5; c++) {
      double s = 0;
      for (size_t r = 0; r < 6; r++) s += g.get(r * 5 + c) * a.get(r * 5 + c);
      ASSERT_NEAR(db2.get(c), kP * s, 1e-5);
    }
    // da only, from g and b (a NULL): da = p g b with b broadcast.
    T da2(CCV_32F, {6, 5});
    ASSERT_EQ(run(cmd_of(kMul, true, backend), {g, nullptr, b}, {da2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < 30; i++) ASSERT_NEAR(da2.get(i), kP * g.get(i) * b.get(i % 5), 1e-6);
    T dx(CCV_32F, {6, 5});
    ASSERT_EQ(run(cmd_of(kScalar, true, backend, 3), {g}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < 30; i++) ASSERT_EQ(dx.get(i), static_cast<float>(3 * g.get(i)));
  }
  const uint64_t g_only = 1, both = 3, da_only = 1, db_only = 2, g_b = 5, g_a = 3;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(cmd_of(kAdd, true), 4, 2, &g_only, 1, &both, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(cmd_of(kScalar, true), 3, 1, &g_only, 1, &da_only, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(cmd_of(kMul, true), 4, 2, &g_only, 1, &both, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(cmd_of(kMul, true), 4, 2, &g_b, 1, &da_only, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(cmd_of(kMul, true), 4, 2, &g_b, 1, &db_only, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(cmd_of(kMul, true), 4, 2, &g_a, 1, &db_only, 1));
}

// CPU_OPT against CPU_REF, forward and backward: the bias, per-channel and
// scalar broadcasts in both formats, odd sizes, views, and the threaded size.
TEST_F(BroadcastTest, OptMatchesRef) {
  std::mt19937 rng(24);
  struct Case {
    Shape a, b;
    int format;
    bool view;
  };
  const int nhwc = CCV_TENSOR_FORMAT_NHWC, nchw = CCV_TENSOR_FORMAT_NCHW;
  const std::vector<Case> cases = {
      {{64, 313}, {313}, nhwc, false},           {{3, 37}, {37}, nhwc, true},
      {{4, 13, 5, 7}, {1, 13, 1, 1}, nchw, false}, {{4, 13, 5, 7}, {13, 1, 1}, nchw, true},
      {{4, 5, 7, 13}, {13}, nhwc, false},        {{4, 5, 7, 13}, {1, 1, 1, 13}, nhwc, true},
      {{5, 9}, {1}, nhwc, false},                {{1}, {5, 9}, nhwc, true},
      {{3, 1, 5}, {4, 1}, nhwc, false},          {{3, 1, 5}, {4, 1}, nhwc, true},
      {{17, 29}, {17, 29}, nchw, true},          {{16, 33, 9, 9}, {1, 33, 1, 1}, nchw, false},
      {{16, 9, 9, 33}, {33}, nhwc, false},
      // Threaded sizes (fp32 only, to keep the suite short).
      {{181, 191}, {191}, nhwc, false},          {{181, 191}, {181, 1}, nhwc, false},
      {{40000}, {1}, nhwc, false},               {{2, 181, 101}, {181, 1}, nhwc, true},
  };
  for (Op op : {kAdd, kMul})
    for (int dt : {CCV_32F, CCV_64F})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(name(op)) + " case " + std::to_string(&c - cases.data()) + " dt " + std::to_string(dt));
        const Shape ys = broadcast(c.a, c.b);
        if (dt == CCV_64F && count(ys) > 20000) continue;
        T a = make(dt, c.a, c.view, c.format), b = make(dt, c.b, c.view, c.format);
        fill_uniform(a, rng), fill_uniform(b, rng);
        std::vector<T> y;
        for (uint32_t backend : {kRef, kOpt}) {
          y.push_back(make(dt, ys, c.view, c.format));
          ASSERT_EQ(run(cmd_of(op, false, backend), {a, b}, {y.back()}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
        }
        EXPECT_LE(max_rel_diff(y[1], y[0]), dt == CCV_32F ? 3e-7 : 1e-15);
        EXPECT_TRUE(y[1].guard_intact());
        T g = make(dt, ys, c.view, c.format);
        fill_uniform(g, rng);
        std::vector<T> da, db;
        for (uint32_t backend : {kRef, kOpt}) {
          da.push_back(make(dt, c.a, c.view, c.format));
          db.push_back(make(dt, c.b, c.view, c.format));
          ASSERT_EQ(run(cmd_of(op, true, backend), {g, a, b, y[0]}, {da.back(), db.back()}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
        }
        // Sums of up to ~1300 fp32 terms in a different order (CPU_REF sums in double).
        const double tol = dt == CCV_32F ? 1e-4 : 1e-12;
        EXPECT_LE(max_rel_diff(da[1], da[0]), tol) << "da";
        EXPECT_LE(max_rel_diff(db[1], db[0]), tol) << "db";
        EXPECT_TRUE(da[1].guard_intact() && db[1].guard_intact());
      }
  for (int dt : {CCV_32F, CCV_64F})
    for (bool view : {false, true}) {
      if (dt == CCV_64F && !view) continue;
      T x = make(dt, {181, 191}, view), g = make(dt, {181, 191}, view);
      fill_uniform(x, rng), fill_uniform(g, rng);
      std::vector<T> y, dx;
      for (uint32_t backend : {kRef, kOpt}) {
        y.push_back(make(dt, {181, 191}, view));
        dx.push_back(make(dt, {181, 191}, view));
        ASSERT_EQ(run(cmd_of(kScalar, false, backend, 0.3f), {x}, {y.back()}), CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(run(cmd_of(kScalar, true, backend, 0.3f), {g, x, y.back()}, {dx.back()}), CCV_NNC_EXEC_SUCCESS);
      }
      EXPECT_LE(max_rel_diff(y[1], y[0]), dt == CCV_32F ? 1e-7 : 1e-16);
      EXPECT_LE(max_rel_diff(dx[1], dx[0]), dt == CCV_32F ? 1e-7 : 1e-16);
      EXPECT_TRUE(y[1].guard_intact() && dx[1].guard_intact());
    }
}

// The kernels run with y over the full-shaped input (a bias added in place)
// and SCALAR_MUL_BACKWARD's dx over g; libnnc's allow_inplace names only y
// over a (the input at y's position), and no backward pair.
TEST_F(BroadcastTest, InPlace) {
  std::mt19937 rng(25);
  for (Op op : {kAdd, kMul})
    for (uint32_t backend : {kRef, kOpt})
      for (int which : {0, 1}) {
        const Shape full = {9, 300}, bias = {300};
        T a(CCV_32F, which == 0 ? full : bias), b(CCV_32F, which == 0 ? bias : full), y(CCV_32F, full);
        fill_uniform(a, rng), fill_uniform(b, rng);
        ASSERT_EQ(run(cmd_of(op, false, backend), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS);
        EXPECT_EQ(ccv_nnc_cmd_allow_inplace(cmd_of(op, false), which, 2, 0, 1), which == 0);
        T& target = which == 0 ? a : b;
        ASSERT_EQ(run(cmd_of(op, false, backend), {a, b}, {target}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        EXPECT_EQ(max_rel_diff(target, y), 0) << name(op) << " into input " << which;
      }
  for (uint32_t backend : {kRef, kOpt}) {
    T g(CCV_32F, {7, 11}), dx(CCV_32F, {7, 11});
    fill_uniform(g, rng);
    ASSERT_EQ(run(cmd_of(kScalar, true, backend, 2.5f), {g}, {dx}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(cmd_of(kScalar, true), 0, 3, 0, 1));
    ASSERT_EQ(run(cmd_of(kScalar, true, backend, 2.5f), {g}, {g}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(max_rel_diff(g, dx), 0);
    T x(CCV_32F, {7, 11}), y(CCV_32F, {7, 11});
    fill_uniform(x, rng);
    ASSERT_EQ(run(cmd_of(kScalar, false, backend, -1.5f), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run(cmd_of(kScalar, false, backend, -1.5f), {x}, {x}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(max_rel_diff(x, y), 0);
  }
  // MUL backward writing da over a and db over b: each gradient reads the other operand.
  for (uint32_t backend : {kRef, kOpt}) {
    T g(CCV_32F, {5, 6}), a(CCV_32F, {5, 6}), b(CCV_32F, {5, 6}), da(CCV_32F, {5, 6}), db(CCV_32F, {5, 6});
    fill_uniform(g, rng), fill_uniform(a, rng), fill_uniform(b, rng);
    ASSERT_EQ(run(cmd_of(kMul, true, backend), {g, a, b}, {da, db}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run(cmd_of(kMul, true, backend), {g, a, b}, {a, b}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_LE(max_rel_diff(a, da), 1e-7) << backend;
    EXPECT_LE(max_rel_diff(b, db), 1e-7) << backend;
  }
}

TEST_F(BroadcastTest, ShapeInference) {
  ccv_nnc_tensor_param_t in[4] = {param(CCV_32F, {4, 1, 5}, CCV_TENSOR_FORMAT_NCHW), param(CCV_32F, {3, 1})};
  ccv_nnc_tensor_param_t out[2];
  for (Op op : {kAdd, kMul}) {
    ccv_nnc_hint_tensor_auto(cmd_of(op, false), in, 2, ccv_nnc_no_hint, out, 1);
    EXPECT_EQ(out[0].dim[0], 4);
    EXPECT_EQ(out[0].dim[1], 3);
    EXPECT_EQ(out[0].dim[2], 5);
    EXPECT_EQ(out[0].dim[3], 0);
    EXPECT_EQ(out[0].datatype, CCV_32F);
  }
  // The larger rank's parameters: b's format when b has more dimensions.
  ccv_nnc_tensor_param_t in3[2] = {param(CCV_32F, {1, 64, 1, 1}), param(CCV_32F, {2, 64, 3, 3}, CCV_TENSOR_FORMAT_NCHW)};
  ccv_nnc_hint_tensor_auto(cmd_of(kAdd, false), in3, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].dim[0], 2);
  EXPECT_EQ(out[0].dim[1], 64);
  EXPECT_EQ(out[0].dim[3], 3);
  ccv_nnc_hint_tensor_auto(cmd_of(kScalar, false), in, 1, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].dim[1], 1);
  EXPECT_EQ(out[0].format, CCV_TENSOR_FORMAT_NCHW);
  // Backward: da / db take a's / b's shapes.
  ccv_nnc_tensor_param_t bin[4] = {param(CCV_32F, {4, 3, 5}), in[0], in[1], param(CCV_32F, {4, 3, 5})};
  ccv_nnc_hint_tensor_auto(cmd_of(kMul, true), bin, 4, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(out[0].dim[1], 1);
  EXPECT_EQ(out[1].dim[0], 3);
  EXPECT_EQ(out[1].dim[2], 0);
}

TEST_F(BroadcastTest, BadInputIsAnErrorWithAMessage) {
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_32F, {4, 6}), b(CCV_32F, {6}), y(CCV_32F, {4, 6}), c5(CCV_32F, {5}), y46(CCV_32F, {4, 5});
    T d64(CCV_64F, {6}), y64(CCV_64F, {4, 6}), i32(CCV_32S, {4, 6}), g(CCV_32F, {4, 6}), t(CCV_32F, {6, 4});
    for (Op op : {kAdd, kMul}) {
      // Shapes that do not broadcast, and an output of the wrong shape.
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, c5}, {y}), CCV_NNC_EXEC_INVALID);
      EXPECT_TRUE(message_has("4x6") || message_has("4, 6")) << ccv_nnc_error_message();
      EXPECT_TRUE(message_has("broadcast")) << ccv_nnc_error_message();
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, b}, {y46}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, t}, {y}), CCV_NNC_EXEC_INVALID);
      // Data types.
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, d64}, {y}), CCV_NNC_EXEC_INVALID);
      EXPECT_TRUE(message_has("64F")) << ccv_nnc_error_message();
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, b}, {y64}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {i32, i32}, {i32}), CCV_NNC_EXEC_INVALID);
      // Counts and NULLs.
      EXPECT_EQ(run(cmd_of(op, false, backend), {a}, {y}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, b, b}, {y}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, b}, {nullptr}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, false, backend), {a, b}, {y, y}), CCV_NNC_EXEC_INVALID);
      // Backward: gradients that do not reduce from g, disagree with a / b, wrong types.
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b}, {y, c5}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b}, {y, a}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b}, {y, d64}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b}, {nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b}, {y, b, b}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b, y, y}, {y, b}), CCV_NNC_EXEC_INVALID);
      EXPECT_EQ(run(cmd_of(op, true, backend), {g, a, b, y46}, {y, b}), CCV_NNC_EXEC_INVALID);
    }
    // MUL backward: da needs b, db needs a.
    EXPECT_EQ(run(cmd_of(kMul, true, backend), {g, a}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_TRUE(message_has("b")) << ccv_nnc_error_message();
    EXPECT_EQ(run(cmd_of(kMul, true, backend), {g, nullptr, b}, {nullptr, b}), CCV_NNC_EXEC_INVALID);
    // SCALAR_MUL: shapes must match exactly.
    EXPECT_EQ(run(cmd_of(kScalar, false, backend), {a}, {t}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(cmd_of(kScalar, false, backend), {a, a}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(cmd_of(kScalar, true, backend), {g}, {t}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(cmd_of(kScalar, true, backend), {g}, {y, y}), CCV_NNC_EXEC_INVALID);
  }
}

TEST_F(BroadcastTest, EasyMacrosFromC) {
  ccv_nnc_cmd_t c[6];
  blas_broadcast_easy_commands(0.5f, -3.0f, c);
  EXPECT_EQ(c[0].cmd, static_cast<uint32_t>(CCV_NNC_ADD_FORWARD));
  EXPECT_EQ(c[1].cmd, static_cast<uint32_t>(CCV_NNC_ADD_BACKWARD));
  EXPECT_EQ(c[2].cmd, static_cast<uint32_t>(CCV_NNC_MUL_FORWARD));
  EXPECT_EQ(c[3].cmd, static_cast<uint32_t>(CCV_NNC_MUL_BACKWARD));
  EXPECT_EQ(c[4].cmd, static_cast<uint32_t>(CCV_NNC_SCALAR_MUL_FORWARD));
  EXPECT_EQ(c[5].cmd, static_cast<uint32_t>(CCV_NNC_SCALAR_MUL_BACKWARD));
  EXPECT_EQ(c[0].info.blas.a[0], 0.5f);
  EXPECT_EQ(c[0].info.blas.a[1], -3.0f);
  EXPECT_EQ(c[2].info.blas.a[0], 0.5f);
  // The C-built commands run: ADD(0.5, -3) of a row over a matrix.
  T a(CCV_32F, {2, 3}), b(CCV_32F, {3}), y(CCV_32F, {2, 3});
  for (size_t i = 0; i < 6; i++) a.set(i, static_cast<double>(i));
  for (size_t i = 0; i < 3; i++) b.set(i, 1 + static_cast<double>(i));
  ASSERT_EQ(run(c[0], {a, b}, {y}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 6; i++) EXPECT_EQ(y.get(i), 0.5 * static_cast<double>(i) - 3 * (1 + static_cast<double>(i % 3)));
  const float x[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {10, 20, 30};
  float out[6] = {};
  ASSERT_EQ(blas_broadcast_easy_bias(x, bias, out, 2, 3), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(out[0], 11);
  EXPECT_EQ(out[4], 25);
  EXPECT_EQ(out[5], 36);
}

}  // namespace
