// EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP, MIN and MAX, forward and
// backward, on CPU_REF and CPU_OPT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/cmd_ew/math_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

class EwMathTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t clamp_cmd(uint32_t id, float lo, float hi, uint32_t backend = 0) {
  ccv_nnc_cmd_t c = command(id, backend);
  c.info.clamp.min = lo;
  c.info.clamp.max = hi;
  return c;
}

// One command under test: its forward id, input count, value range of the
// inputs, and the double reference of the forward.
struct Case {
  const char* name;
  uint32_t forward;
  int inputs;
  double lo, hi;  // input range; `signed_range` flips a random sign onto |x| in [lo, hi]
  bool signed_range;
  std::function<double(const std::vector<double>&)> f;
};

const float kClampLo = -0.5f, kClampHi = 0.25f;

std::vector<Case> cases() {
  return {
      {"EWPROD2", CCV_NNC_EWPROD_FORWARD, 2, -2, 2, false, [](const auto& x) { return x[0] * x[1]; }},
      {"EWPROD3", CCV_NNC_EWPROD_FORWARD, 3, -2, 2, false, [](const auto& x) { return x[0] * x[1] * x[2]; }},
      {"EWDIV", CCV_NNC_EWDIV_FORWARD, 2, 0.5, 2, true, [](const auto& x) { return x[0] / x[1]; }},
      {"EWEXP", CCV_NNC_EWEXP_FORWARD, 1, -5, 5, false, [](const auto& x) { return std::exp(x[0]); }},
      {"EWLOG", CCV_NNC_EWLOG_FORWARD, 1, 0.01, 10, false, [](const auto& x) { return std::log(x[0]); }},
      {"EWSQRT", CCV_NNC_EWSQRT_FORWARD, 1, 0.01, 10, false, [](const auto& x) { return std::sqrt(x[0]); }},
      {"CLAMP", CCV_NNC_CLAMP_FORWARD, 1, -1, 1, false,
       [](const auto& x) { return std::min(std::max(x[0], double(kClampLo)), double(kClampHi)); }},
      {"MIN", CCV_NNC_MIN_FORWARD, 2, -1, 1, false, [](const auto& x) { return std::min(x[0], x[1]); }},
      {"MAX", CCV_NNC_MAX_FORWARD, 2, -1, 1, false, [](const auto& x) { return std::max(x[0], x[1]); }},
  };
}

ccv_nnc_cmd_t cmd_of(const Case& c, uint32_t id, uint32_t backend) {
  if (c.forward == CCV_NNC_CLAMP_FORWARD) return clamp_cmd(id, kClampLo, kClampHi, backend);
  return command(id, backend);
}

void fill_case(const Case& c, const T& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(c.lo, c.hi);
  std::bernoulli_distribution s(0.5);
  for (size_t i = 0; i < t.count(); i++) {
    double v = d(rng);
    if (c.signed_range && s(rng)) v = -v;
    t.set(i, v);
  }
}

std::vector<ccv_nnc_tensor_t*> ptrs(const std::vector<std::unique_ptr<T>>& ts) {
  std::vector<ccv_nnc_tensor_t*> p;
  for (const auto& t : ts) p.push_back(t ? t->get() : nullptr);
  return p;
}

TEST_F(EwMathTest, ForwardMatchesDoubleReference) {
  std::mt19937 rng(7);
  for (const Case& c : cases())
    for (int dt : {CCV_32F, CCV_64F})
      for (const std::vector<int>& shape : {std::vector<int>{1}, {7}, {3, 5, 7, 11}})
        for (uint32_t backend : {kRef, kOpt})
          for (bool view : {false, true}) {
            std::vector<std::unique_ptr<T>> xs;
            for (int i = 0; i < c.inputs; i++) {
              xs.push_back(std::make_unique<T>(view ? T::view(dt, shape) : T(dt, shape)));
              fill_case(c, *xs.back(), rng);
            }
            T y = view ? T::view(dt, shape) : T(dt, shape);
            ASSERT_EQ(run(cmd_of(c, c.forward, backend), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS)
                << c.name << ": " << ccv_nnc_error_message();
            const double tol = dt == CCV_32F ? 3e-7 : 1e-15;
            for (size_t i = 0; i < y.count(); i++) {
              std::vector<double> v;
              for (const auto& x : xs) v.push_back(x->get(i));
              const double want = c.f(v);
              ASSERT_NEAR(y.get(i), want, tol * std::max(1.0, std::fabs(want)))
                  << c.name << " " << (dt == CCV_32F ? "32F" : "64F") << " backend " << backend << " i=" << i;
            }
            EXPECT_TRUE(y.guard_intact()) << c.name;
          }
}

TEST_F(EwMathTest, HalfAndBfloat16OnReference) {
  std::mt19937 rng(8);
  for (const Case& c : cases())
    for (int dt : {CCV_16F, CCV_16BF}) {
      std::vector<std::unique_ptr<T>> xs;
      for (int i = 0; i < c.inputs; i++) {
        xs.push_back(std::make_unique<T>(dt, std::vector<int>{5, 9}));
        // Values exact in the type: multiples of 1/8 in (0, 2], some negated.
        std::uniform_int_distribution<int> d(1, 16);
        for (size_t k = 0; k < xs.back()->count(); k++) {
          double v = d(rng) / 8.0;
          if (c.forward == CCV_NNC_EWPROD_FORWARD || c.forward == CCV_NNC_MIN_FORWARD ||
              c.forward == CCV_NNC_MAX_FORWARD || c.forward == CCV_NNC_CLAMP_FORWARD || c.signed_range)
            v = (k % 3 == 0) ? -v : v;
          if (c.forward == CCV_NNC_EWEXP_FORWARD) v -= 1;
          xs.back()->set(k, v);
        }
      }
      T y(dt, {5, 9});
      ASSERT_EQ(run(cmd_of(c, c.forward, kRef), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      const double tol = dt == CCV_16F ? 1.0 / 1024 : 1.0 / 128;  // half an ulp at most, relative
      for (size_t i = 0; i < y.count(); i++) {
        std::vector<double> v;
        for (const auto& x : xs) v.push_back(x->get(i));
        const double want = c.f(v);
        ASSERT_NEAR(y.get(i), want, tol * std::max(std::fabs(want), 1e-3)) << c.name << " i=" << i;
      }
    }
}

TEST_F(EwMathTest, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(9);
  for (const Case& c : cases())
    for (uint32_t backend : {kRef, kOpt}) {
      std::vector<std::unique_ptr<T>> xs;
      std::vector<T*> raw;
      for (int i = 0; i < c.inputs; i++) {
        xs.push_back(std::make_unique<T>(CCV_64F, std::vector<int>{2, 3}));
        fill_case(c, *xs.back(), rng);
        raw.push_back(xs.back().get());
      }
      SCOPED_TRACE(c.name);
      expect_gradients_match(cmd_of(c, c.forward, backend), cmd_of(c, c.forward | 1, backend), ccv_nnc_no_hint, raw,
                             {{2, 3}}, std::vector<bool>(c.inputs, true), rng, 1e-6, 1e-6);
    }
}

TEST_F(EwMathTest, ReciprocalWithNullNumerator) {
  std::mt19937 rng(10);
  for (uint32_t backend : {kRef, kOpt}) {
    T b(CCV_64F, {3, 4});
    fill_case(cases()[2], b, rng);
    T y(CCV_64F, {3, 4});
    ASSERT_EQ(run(command(CCV_NNC_EWDIV_FORWARD, backend), {nullptr, b}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (size_t i = 0; i < y.count(); i++) EXPECT_DOUBLE_EQ(y.get(i), 1 / b.get(i));
    // The gradient of 1 / b needs no a.
    std::vector<T*> in = {nullptr, &b};
    expect_gradients_match(command(CCV_NNC_EWDIV_FORWARD, backend), command(CCV_NNC_EWDIV_BACKWARD, backend),
                           ccv_nnc_no_hint, in, {{3, 4}}, {false, true}, rng);
  }
  float bf[5] = {1, 2, 4, -0.5f, 8}, yf[5] = {};
  ASSERT_EQ(ew_math_easy_reciprocal(bf, yf, 5), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int i = 0; i < 5; i++) EXPECT_EQ(yf[i], 1 / bf[i]);
}

TEST_F(EwMathTest, EasyMacrosMakeTheCommands) {
  ccv_nnc_cmd_t c[16];
  ew_math_easy_commands(-1.5f, NAN, c);
  const uint32_t ids[8] = {CCV_NNC_EWPROD_FORWARD, CCV_NNC_EWDIV_FORWARD, CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWLOG_FORWARD,
                           CCV_NNC_EWSQRT_FORWARD, CCV_NNC_CLAMP_FORWARD, CCV_NNC_MIN_FORWARD,   CCV_NNC_MAX_FORWARD};
  for (int i = 0; i < 8; i++) {
    EXPECT_EQ(c[2 * i].cmd, ids[i]);
    EXPECT_EQ(c[2 * i + 1].cmd, ids[i] | 1);
  }
  EXPECT_EQ(c[10].info.clamp.min, -1.5f);
  EXPECT_TRUE(std::isnan(c[11].info.clamp.max));
  // The macro-built CLAMP runs with one bound.
  T x(CCV_32F, {4}), y(CCV_32F, {4});
  const double v[4] = {-3, -1.5, 0, 7};
  for (int i = 0; i < 4; i++) x.set(i, v[i]);
  ASSERT_EQ(run(c[10], {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(y.get(0), -1.5);
  EXPECT_EQ(y.get(1), -1.5);
  EXPECT_EQ(y.get(2), 0);
  EXPECT_EQ(y.get(3), 7);
}

TEST_F(EwMathTest, ClampBoundsAndNaN) {
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F}) {
      const double in[6] = {-2, -0.5, 0, 0.25, 3, kNaN};
      T x(dt, {6}), y(dt, {6}), g(dt, {6}), dx(dt, {6});
      for (int i = 0; i < 6; i++) x.set(i, in[i]), g.set(i, 1);
      struct B {
        float lo, hi;
        double want[6], grad[6];
      };
      const B bs[] = {
          {-0.5f, 0.25f, {-0.5, -0.5, 0, 0.25, 0.25, kNaN}, {0, 0, 1, 0, 0, 0}},
          {NAN, 0.25f, {-2, -0.5, 0, 0.25, 0.25, kNaN}, {1, 1, 1, 0, 0, 0}},
          {-0.5f, NAN, {-0.5, -0.5, 0, 0.25, 3, kNaN}, {0, 0, 1, 1, 1, 0}},
          {NAN, NAN, {-2, -0.5, 0, 0.25, 3, kNaN}, {1, 1, 1, 1, 1, 1}},
      };
      for (const B& b : bs) {
        ASSERT_EQ(run(clamp_cmd(CCV_NNC_CLAMP_FORWARD, b.lo, b.hi, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(run(clamp_cmd(CCV_NNC_CLAMP_BACKWARD, b.lo, b.hi, backend), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (int i = 0; i < 6; i++) {
          if (std::isnan(b.want[i]))
            EXPECT_TRUE(std::isnan(y.get(i)));
          else
            EXPECT_EQ(y.get(i), b.want[i]) << "lo=" << b.lo << " hi=" << b.hi << " i=" << i << " backend " << backend;
          EXPECT_EQ(dx.get(i), b.grad[i]) << "lo=" << b.lo << " hi=" << b.hi << " i=" << i << " backend " << backend;
        }
      }
      // x need not be given to the backward.
      ASSERT_EQ(run(clamp_cmd(CCV_NNC_CLAMP_BACKWARD, -0.5f, 0.25f, backend), {g, nullptr, y}, {dx}),
                CCV_NNC_EXEC_SUCCESS);
    }
}

TEST_F(EwMathTest, MinMaxTiesAndNaN) {
  for (uint32_t backend : {kRef, kOpt}) {
    const double a[5] = {1, 2, 3, kNaN, 5};
    const double b[5] = {2, 2, 1, 4, kNaN};
    T ta(CCV_32F, {5}), tb(CCV_32F, {5}), y(CCV_32F, {5}), g(CCV_32F, {5}), da(CCV_32F, {5}), db(CCV_32F, {5});
    for (int i = 0; i < 5; i++) ta.set(i, a[i]), tb.set(i, b[i]), g.set(i, 4);
    ASSERT_EQ(run(command(CCV_NNC_MIN_FORWARD, backend), {ta, tb}, {y}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(y.get(0), 1);
    EXPECT_EQ(y.get(1), 2);
    EXPECT_EQ(y.get(2), 1);
    EXPECT_TRUE(std::isnan(y.get(3)));
    EXPECT_TRUE(std::isnan(y.get(4)));
    ASSERT_EQ(run(command(CCV_NNC_MIN_BACKWARD, backend), {g, ta, tb, y}, {da, db}), CCV_NNC_EXEC_SUCCESS);
    const double want_da[5] = {4, 2, 0, 4, 0}, want_db[5] = {0, 2, 4, 0, 4};
    for (int i = 0; i < 5; i++) {
      EXPECT_EQ(da.get(i), want_da[i]) << i;
      EXPECT_EQ(db.get(i), want_db[i]) << i;
    }
    ASSERT_EQ(run(command(CCV_NNC_MAX_FORWARD, backend), {ta, tb}, {y}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(y.get(0), 2);
    EXPECT_EQ(y.get(2), 3);
    EXPECT_TRUE(std::isnan(y.get(3)));
    EXPECT_TRUE(std::isnan(y.get(4)));
    // y may be left off; only db asked for.
    ASSERT_EQ(run(command(CCV_NNC_MAX_BACKWARD, backend), {g, ta, tb}, {nullptr, db}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const double want_max_db[5] = {4, 2, 0, 0, 4};
    for (int i = 0; i < 5; i++) EXPECT_EQ(db.get(i), want_max_db[i]) << i;
  }
}

TEST_F(EwMathTest, ProductGradientWithZeros) {
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_64F, {4}), b(CCV_64F, {4}), c(CCV_64F, {4}), g(CCV_64F, {4});
    const double av[4] = {0, 2, 0, -1}, bv[4] = {3, 0, 0, 2}, cv[4] = {5, 7, 1, 0.5};
    for (int i = 0; i < 4; i++) a.set(i, av[i]), b.set(i, bv[i]), c.set(i, cv[i]), g.set(i, 1);
    T da(CCV_64F, {4}), db(CCV_64F, {4}), dc(CCV_64F, {4});
    ASSERT_EQ(run(command(CCV_NNC_EWPROD_BACKWARD, backend), {g, a, b, c}, {da, db, dc}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (int i = 0; i < 4; i++) {
      EXPECT_EQ(da.get(i), bv[i] * cv[i]);
      EXPECT_EQ(db.get(i), av[i] * cv[i]);
      EXPECT_EQ(dc.get(i), av[i] * bv[i]);
    }
    T da2(CCV_64F, {4}), db2(CCV_64F, {4});
    ASSERT_EQ(run(command(CCV_NNC_EWPROD_BACKWARD, backend), {g, a, b}, {da2, db2}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < 4; i++) {
      EXPECT_EQ(da2.get(i), bv[i]);
      EXPECT_EQ(db2.get(i), av[i]);
    }
  }
}

// CPU_OPT against CPU_REF: odd sizes, views, NCHW, the threaded size.
TEST_F(EwMathTest, OptMatchesRef) {
  std::mt19937 rng(11);
  // The last shape (39k elements) runs on the pool; it is checked packed and in fp32 only, to keep the suite short.
  const std::vector<std::vector<int>> shapes = {{1023}, {3, 5, 7, 11}, {2, 3, 67, 97}};
  for (const Case& c : cases())
    for (int dt : {CCV_32F, CCV_64F})
      for (const auto& shape : shapes)
        for (int variant = 0; variant < 3; variant++) {
          if (shape.size() == 4 && shape[3] == 97 && (variant > 0 || dt == CCV_64F)) continue;
          // 0 packed NHWC, 1 views, 2 packed NCHW
          const bool view = variant == 1 && shape.size() > 1;
          const int format = variant == 2 ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
          std::vector<std::unique_ptr<T>> xs;
          for (int i = 0; i < c.inputs; i++) {
            xs.push_back(std::make_unique<T>(view ? T::view(dt, shape, format) : T(dt, shape, format)));
            fill_case(c, *xs.back(), rng);
          }
          SCOPED_TRACE(c.name);
          const double tol = dt == CCV_32F ? 3e-7 : 1e-15;
          expect_backends_agree(cmd_of(c, c.forward, kOpt), ccv_nnc_no_hint, ptrs(xs), {shape}, dt, kOpt, tol, format);
          // Backward: |g|x..|y| -> |dx..|.
          T y(dt, shape, format), g(dt, shape, format);
          fill_uniform(g, rng);
          ASSERT_EQ(run(cmd_of(c, c.forward, kRef), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS);
          std::vector<ccv_nnc_tensor_t*> in = {g.get()};
          for (const auto& x : xs) in.push_back(x->get());
          in.push_back(y.get());
          expect_backends_agree(cmd_of(c, c.forward | 1, kOpt), ccv_nnc_no_hint, in,
                                std::vector<std::vector<int>>(c.inputs, shape), dt, kOpt, tol * 4, format);
        }
}

TEST_F(EwMathTest, InPlace) {
  std::mt19937 rng(12);
  for (const Case& c : cases())
    for (uint32_t backend : {kRef, kOpt})
      for (int into = 0; into < c.inputs; into++) {
        std::vector<std::unique_ptr<T>> xs;
        for (int i = 0; i < c.inputs; i++) {
          xs.push_back(std::make_unique<T>(CCV_32F, std::vector<int>{37, 5}));
          fill_case(c, *xs.back(), rng);
        }
        T want(CCV_32F, {37, 5});
        ASSERT_EQ(run(cmd_of(c, c.forward, kRef), ptrs(xs), {want}), CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(run(cmd_of(c, c.forward, backend), ptrs(xs), {xs[into]->get()}), CCV_NNC_EXEC_SUCCESS)
            << c.name << ": " << ccv_nnc_error_message();
        EXPECT_LE(max_rel_diff(*xs[into], want), 3e-7) << c.name << " into input " << into << " backend " << backend;
      }
  // Unary backward in place: dx into g.
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {100}), y(CCV_32F, {100}), g(CCV_32F, {100});
    fill_uniform(x, rng, -2, 2);
    fill_uniform(g, rng);
    ASSERT_EQ(run(command(CCV_NNC_EWEXP_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    std::vector<double> want(100);
    for (int i = 0; i < 100; i++) want[i] = static_cast<float>(g.get(i) * y.get(i));
    ASSERT_EQ(run(command(CCV_NNC_EWEXP_BACKWARD, backend), {g, x, y}, {g}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < 100; i++) EXPECT_NEAR(g.get(i), want[i], 1e-7 * std::fabs(want[i]));
  }
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_EWPROD_FORWARD), 1, 2, 0, 1));
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_EWLOG_BACKWARD), 0, 3, 0, 1));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_EWDIV_BACKWARD), 0, 4, 0, 2));
}

// Three-input EWPROD written into its last input (the optimised path hands it to the reference loop).
TEST_F(EwMathTest, ProductOfThreeIntoLastInput) {
  std::mt19937 rng(13);
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_32F, {50}), b(CCV_32F, {50}), c(CCV_32F, {50});
    fill_uniform(a, rng), fill_uniform(b, rng), fill_uniform(c, rng);
    std::vector<double> want(50);
    for (int i = 0; i < 50; i++) want[i] = a.get(i) * b.get(i) * c.get(i);
    ASSERT_EQ(run(command(CCV_NNC_EWPROD_FORWARD, backend), {a, b, c}, {c}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < 50; i++) EXPECT_NEAR(c.get(i), want[i], 2e-7);
  }
}

// EWPROD of outputs beyond 8 MiB (the non-temporal-store loop), fp32 and fp64, into an unaligned view.
TEST_F(EwMathTest, LargeProductWithStreamingStores) {
  for (int dt : {CCV_32F, CCV_64F}) {
    const int n = (dt == CCV_32F ? 1 << 21 : 1 << 20) + 7;
    T a(dt, {n}), b(dt, {n});
    T y = T::view(dt, {n}, CCV_TENSOR_FORMAT_NHWC, 2);  // 1-d: contiguous, off a 32-byte boundary
    // Multiples of 1/64 in [-8, 8] through raw pointers (millions of elements): products are exact.
    auto check = [&](auto* ap, auto* bp, const auto* yp) {
      for (int i = 0; i < n; i++) ap[i] = ((i * 37 % 1025) - 512) / 64.0f, bp[i] = ((i * 91 % 1023) - 511) / 64.0f;
      ASSERT_EQ(run(command(CCV_NNC_EWPROD_FORWARD, kOpt), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (int i = 0; i < n; i++)
        if (yp[i] != ap[i] * bp[i]) {
          ADD_FAILURE() << "element " << i << ": " << yp[i] << " != " << ap[i] * bp[i];
          break;
        }
    };
    if (dt == CCV_32F)
      check(a.get()->data.f32, b.get()->data.f32, y.get()->data.f32);
    else
      check(a.get()->data.f64, b.get()->data.f64, y.get()->data.f64);
    EXPECT_TRUE(y.guard_intact());
  }
}

// The vector exp / log of the fp32 optimised path at the edges of their range.
TEST_F(EwMathTest, ExpLogSpecialValues) {
  const float inf = INFINITY;
  const std::vector<float> ex = {-inf, -200, -103, -88, -1e-40f, 0, 1e-30f, 1, 88.5f, 88.8f, 89, 200, inf, NAN};
  const std::vector<float> lx = {-1, -0.0f, 0, 1e-45f, 1e-40f, 1e-30f, 0.999999f, 1, 1.000001f, 3e38f, inf, NAN};
  for (bool log : {false, true}) {
    const std::vector<float>& v = log ? lx : ex;
    const int n = static_cast<int>(v.size());
    for (uint32_t backend : {kRef, kOpt}) {
      T x(CCV_32F, {n}), y(CCV_32F, {n});
      for (int i = 0; i < n; i++) x.set(i, v[i]);
      ASSERT_EQ(run(command(log ? CCV_NNC_EWLOG_FORWARD : CCV_NNC_EWEXP_FORWARD, backend), {x}, {y}),
                CCV_NNC_EXEC_SUCCESS);
      for (int i = 0; i < n; i++) {
        const double want = log ? std::log(static_cast<double>(v[i])) : std::exp(static_cast<double>(v[i]));
        const double got = y.get(i);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << (log ? "log " : "exp ") << v[i];
        } else if (std::isinf(static_cast<float>(want))) {
          EXPECT_EQ(got, static_cast<float>(want)) << (log ? "log " : "exp ") << v[i];
        } else {
          EXPECT_NEAR(got, want, 2.5e-7 * std::fabs(want) + 1.5e-45)
              << (log ? "log " : "exp ") << v[i] << " backend " << backend;
        }
      }
    }
  }
}

TEST_F(EwMathTest, ShapesAndBitmasks) {
  ccv_nnc_tensor_param_t in[2] = {param(CCV_32F, {3, 4}), param(CCV_32F, {3, 4})}, out[2];
  std::memset(out, 0, sizeof(out));
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_EWDIV_FORWARD), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].dim[0], 3);
  EXPECT_EQ(out[0].dim[1], 4);
  // EWDIV with a NULL a takes b's shape.
  ccv_nnc_tensor_param_t in2[2];
  std::memset(in2, 0, sizeof(in2));
  in2[1] = param(CCV_32F, {5});
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_EWDIV_FORWARD), in2, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].dim[0], 5);
  // Backward needs: EWEXP reads g and y; EWLOG g and x; EWDIV's db needs y.
  const uint64_t gy = 0b101, gx = 0b011, one = 1, two = 2, three = 3, gb = 0b101, gby = 0b1101;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWEXP_BACKWARD), 3, 1, &gy, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWEXP_BACKWARD), 3, 1, &gx, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWLOG_BACKWARD), 3, 1, &gx, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_BACKWARD), 4, 2, &gb, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_BACKWARD), 4, 2, &gb, 1, &two, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_BACKWARD), 4, 2, &gby, 1, &three, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_FORWARD), 2, 1, &two, 1, &one, 1));  // a NULL
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MIN_FORWARD), 2, 1, &two, 1, &one, 1));
  // libnnc's patterns: EWPROD's backward wants g, every x_i, y and every
  // gradient (the kernels read less); EWDIV's da alone wants y left out
  // (bit 3 clear); MIN / MAX want g, a, b and both gradients.
  const uint64_t g_x2 = 0b101, all4 = 0b1111, gab = 0b111;
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWPROD_BACKWARD), 4, 2, &g_x2, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWPROD_BACKWARD), 4, 2, &all4, 1, &three, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWPROD_BACKWARD), 4, 2, &all4, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_BACKWARD), 4, 2, &gby, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWDIV_BACKWARD), 4, 2, &gby, 1, &two, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MIN_BACKWARD), 4, 2, &gab, 1, &three, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MAX_BACKWARD), 4, 2, &gab, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_EWSQRT_BACKWARD), 3, 1, &gy, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_CLAMP_BACKWARD), 3, 1, &all4, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_CLAMP_BACKWARD), 3, 1, &gy, 1, &three, 1));
  // Shapes: a forward output takes input 0's parameters, a gradient g's.
  ccv_nnc_tensor_param_t mixed[2] = {param(CCV_32F, {3, 4}, CCV_TENSOR_FORMAT_NCHW), param(CCV_32F, {3, 4})};
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_MAX_FORWARD), mixed, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].format, CCV_TENSOR_FORMAT_NCHW);
  ccv_nnc_tensor_param_t bin[4] = {param(CCV_32F, {2, 5}), param(CCV_32F, {2, 5}, CCV_TENSOR_FORMAT_NCHW),
                                   param(CCV_32F, {2, 5}, CCV_TENSOR_FORMAT_NCHW), param(CCV_32F, {2, 5})};
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_MIN_BACKWARD), bin, 4, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(out[0].format == CCV_TENSOR_FORMAT_NHWC && out[1].format == CCV_TENSOR_FORMAT_NHWC);
  EXPECT_TRUE(out[1].dim[0] == 2 && out[1].dim[1] == 5 && out[1].dim[2] == 0);
  // In place: forwards any pair; backwards any pair except EWPROD's and EWDIV's.
  for (uint32_t id : {CCV_NNC_EWPROD_FORWARD, CCV_NNC_EWDIV_FORWARD, CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWLOG_FORWARD,
                      CCV_NNC_EWSQRT_FORWARD, CCV_NNC_CLAMP_FORWARD, CCV_NNC_MIN_FORWARD, CCV_NNC_MAX_FORWARD}) {
    EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(id), 1, 2, 0, 1)) << id;
    const bool pairs = id != CCV_NNC_EWPROD_FORWARD && id != CCV_NNC_EWDIV_FORWARD;
    EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(id | 1), 2, 4, 0, 2), pairs) << id;
    EXPECT_TRUE(ccv_nnc_cmd_attr(command(id | 1), CCV_NNC_CMD_ATTR_NULL_IS_ONES)) << id;
    EXPECT_EQ(ccv_nnc_cmd_attr(command(id), CCV_NNC_CMD_ATTR_NULL_IS_ONES), id == CCV_NNC_EWDIV_FORWARD) << id;
  }
}

// CCV_NNC_CMD_ATTR_NULL_IS_ONES: a NULL g reads as ones, on both backends.
TEST_F(EwMathTest, NullGradientReadsAsOnes) {
  std::mt19937 rng(81);
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_32F, {7, 9}), b(CCV_32F, {7, 9}), y(CCV_32F, {7, 9}), ones(CCV_32F, {7, 9});
    fill_uniform(a, rng, 0.5, 2), fill_uniform(b, rng, 0.5, 2);
    for (size_t i = 0; i < ones.count(); i++) ones.set(i, 1);
    for (uint32_t fwd : {CCV_NNC_EWPROD_FORWARD, CCV_NNC_EWDIV_FORWARD, CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWLOG_FORWARD,
                         CCV_NNC_EWSQRT_FORWARD, CCV_NNC_CLAMP_FORWARD, CCV_NNC_MIN_FORWARD, CCV_NNC_MAX_FORWARD}) {
      ccv_nnc_cmd_t f = command(fwd, backend);
      f.info.clamp.min = 0.75f, f.info.clamp.max = 1.5f;
      const bool two = fwd == CCV_NNC_EWPROD_FORWARD || fwd == CCV_NNC_EWDIV_FORWARD || fwd == CCV_NNC_MIN_FORWARD ||
                       fwd == CCV_NNC_MAX_FORWARD;
      std::vector<ccv_nnc_tensor_t*> in = two ? std::vector<ccv_nnc_tensor_t*>{a, b} : std::vector<ccv_nnc_tensor_t*>{a};
      ASSERT_EQ(run(f, in, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ccv_nnc_cmd_t bk = f;
      bk.cmd = fwd | 1;
      T d0(CCV_32F, {7, 9}), d1(CCV_32F, {7, 9}), e0(CCV_32F, {7, 9}), e1(CCV_32F, {7, 9});
      std::vector<ccv_nnc_tensor_t*> with = {ones}, without = {nullptr};
      for (ccv_nnc_tensor_t* t : in) with.push_back(t), without.push_back(t);
      with.push_back(y), without.push_back(y);
      std::vector<ccv_nnc_tensor_t*> o0 = {d0}, o1 = {d1};
      if (two) o0.push_back(e0), o1.push_back(e1);
      ASSERT_EQ(run(bk, with, o0), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(bk, without, o1), CCV_NNC_EXEC_SUCCESS) << fwd << ": " << ccv_nnc_error_message();
      EXPECT_EQ(max_rel_diff(d1, d0), 0) << fwd;
      if (two) EXPECT_EQ(max_rel_diff(e1, e0), 0) << fwd;
    }
  }
}

TEST_F(EwMathTest, BadInputIsAnErrorWithAMessage) {
  T a(CCV_32F, {3, 4}), b(CCV_32F, {3, 4}), y(CCV_32F, {3, 4}), wrong(CCV_32F, {4, 3}), d64(CCV_64F, {3, 4}),
      i32(CCV_32S, {3, 4}), row(CCV_32F, {4});
  struct Bad {
    uint32_t cmd;
    std::vector<ccv_nnc_tensor_t*> in, out;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {CCV_NNC_EWDIV_FORWARD, {a}, {y}, "takes inputs |a|b|"},
      {CCV_NNC_EWDIV_FORWARD, {a, nullptr}, {y}, "input 1 is NULL"},
      {CCV_NNC_EWEXP_FORWARD, {a, b}, {y}, "takes inputs |x|"},
      {CCV_NNC_EWEXP_FORWARD, {a}, {y, b}, "one output"},
      {CCV_NNC_EWEXP_FORWARD, {a}, {nullptr}, "NULL"},
      {CCV_NNC_EWPROD_FORWARD, {}, {y}, "n >= 1"},
      {CCV_NNC_EWPROD_FORWARD, {a, wrong}, {y}, "must match"},
      {CCV_NNC_MIN_FORWARD, {a, row}, {y}, "does not broadcast"},
      {CCV_NNC_MAX_FORWARD, {a, d64}, {y}, "one data type"},
      {CCV_NNC_EWLOG_FORWARD, {i32}, {i32}, "32S"},
      {CCV_NNC_EWEXP_BACKWARD, {a, b}, {y}, "y (input 2) is missing"},
      {CCV_NNC_EWEXP_BACKWARD, {a, b, nullptr}, {y}, "y (input 2) is NULL"},
      {CCV_NNC_EWLOG_BACKWARD, {a, nullptr, b}, {y}, "x (input 1) is NULL"},
      {CCV_NNC_EWDIV_BACKWARD, {a, nullptr, b}, {nullptr, y}, "y (input 3) is missing"},
      {CCV_NNC_MIN_BACKWARD, {a, b, nullptr, y}, {y, nullptr}, "b (input 2) is NULL"},
      {CCV_NNC_MIN_BACKWARD, {a, b, a, y}, {nullptr, nullptr}, "every output is NULL"},
      {CCV_NNC_MIN_BACKWARD, {a, b, a, y}, {wrong}, "must match"},
      {CCV_NNC_EWSQRT_BACKWARD, {a, b, y, y}, {y}, "got 4 inputs"},
      {CCV_NNC_EWSQRT_BACKWARD, {a, b, y}, {y, y}, "got 2 outputs"},
      {CCV_NNC_EWPROD_BACKWARD, {a, b, nullptr, y}, {y, nullptr}, "x_i (input 2) is NULL"},
      {CCV_NNC_CLAMP_BACKWARD, {a, b, d64}, {y}, "one data type"},
  };
  for (const Bad& t : bad)
    for (uint32_t backend : {0u, kRef, kOpt}) {
      EXPECT_EQ(run(command(t.cmd, backend), t.in, t.out), CCV_NNC_EXEC_INVALID) << t.needle;
      EXPECT_TRUE(message_has(t.needle)) << "wanted \"" << t.needle << "\", got: " << ccv_nnc_error_message();
    }
}

}  // namespace
