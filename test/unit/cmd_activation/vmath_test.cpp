// core/vmath.hpp through every loop table this CPU runs (scalar, AVX2,
// AVX-512): exp, log, tanh, sigmoid, erf and the normal CDF against double
// over the whole float range (a regular sample of bit patterns of both
// signs), the extremes, NaN and +-inf. Errors are in units in the last place
// of the correctly rounded result (subnormal results: in the subnormal step).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cmd/activation/activation.hpp"

namespace {

using nnc::activation::Loops;

std::vector<const Loops*> tables() {
  std::vector<const Loops*> t = {&nnc::activation::kLoopsScalar};
  if (const Loops* l = nnc::activation::loops_avx2_if_supported()) t.push_back(l);
  if (const Loops* l = nnc::activation::loops_avx512_if_supported()) t.push_back(l);
  return t;
}

double ref(int fn, double x) {
  switch (fn) {
    case nnc::activation::kExp:
      return std::exp(x);
    case nnc::activation::kLog:
      return std::log(x);
    case nnc::activation::kTanhFn:
      return std::tanh(x);
    case nnc::activation::kSigmoidFn:
      return 1 / (1 + std::exp(-x));
    case nnc::activation::kErf:
      return std::erf(x);
    default:
      return 0.5 * std::erfc(-x / std::sqrt(2.0));
  }
}
const char* kNames[] = {"exp", "log", "tanh", "sigmoid", "erf", "ncdf"};

// |got - want| in units of the spacing of floats at want.
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const float w = static_cast<float>(want);
  if (std::isinf(w)) return got == w ? 0 : INFINITY;
  if (std::isnan(got) || std::isinf(got)) return INFINITY;
  const float a = std::fabs(w);
  const double step = a >= FLT_MAX ? std::ldexp(1.0, 104) : static_cast<double>(std::nextafter(a, INFINITY)) - a;
  return std::fabs(static_cast<double>(got) - want) / step;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Inputs: every 8191st bit pattern of the positive finite floats, both signs,
// plus the edges of each function's interesting range.
std::vector<float> sample() {
  std::vector<float> x;
  for (uint32_t b = 0; b < 0x7f800000u; b += 8191) {
    x.push_back(from_bits(b));
    x.push_back(-from_bits(b));
  }
  for (float v :
       {0.0f,  -0.0f,   1e-45f,  FLT_MIN,  FLT_MAX, -FLT_MAX, 0.5f,  0.625f, 0.70710678f, 1.0f,  88.72f, 88.7228f,
        89.0f, -87.33f, -87.34f, -103.97f, -104.0f, 9.0f,     9.02f, 3.9f,   3.92f,       10.0f, -13.5f, -14.0f})
    x.push_back(v), x.push_back(-v);
  return x;
}

TEST(VmathTest, AccurateOverTheWholeRange) {
  const std::vector<float> x = sample();
  std::vector<float> y(x.size());
  // Bounds in ulp (the measured maxima are printed).
  const double bound[] = {1, 1, 2, 2, 1.5, 4};
  for (const Loops* t : tables()) {
    for (int fn = 0; fn < nnc::activation::kMathCount; fn++) {
      t->math[fn](x.data(), y.data(), x.size());
      double worst = 0;
      float at = 0;
      for (size_t i = 0; i < x.size(); i++) {
        const double e = ulp_error(y[i], ref(fn, x[i]));
        if (e > worst) worst = e, at = x[i];
      }
      std::printf("  %-7s %-8s max error %.3f ulp (at x = %.9g)\n", t->name, kNames[fn], worst, at);
      EXPECT_LE(worst, bound[fn]) << t->name << " " << kNames[fn] << " at x = " << at;
    }
  }
}

TEST(VmathTest, DenseNearTheBranchPoints) {
  // Every float in small windows around the places where the algorithms switch.
  std::vector<float> x;
  for (float c : {0.5f, 0.625f, 1.0f, 0.70710678f, 1.41421356f, 88.0f, -87.3f, 3.0f})
    for (float s : {c, -c}) {
      float v = s;
      for (int i = 0; i < 2000; i++) v = std::nextafter(v, -INFINITY);
      for (int i = 0; i < 4000; i++) x.push_back(v), v = std::nextafter(v, INFINITY);
    }
  std::vector<float> y(x.size());
  const double bound[] = {1, 1, 2, 2, 1.5, 4};
  for (const Loops* t : tables())
    for (int fn = 0; fn < nnc::activation::kMathCount; fn++) {
      t->math[fn](x.data(), y.data(), x.size());
      for (size_t i = 0; i < x.size(); i++) {
        const double e = ulp_error(y[i], ref(fn, x[i]));
        if (e > bound[fn]) {
          ADD_FAILURE() << t->name << " " << kNames[fn] << "(" << x[i] << ") = " << y[i] << ", " << e << " ulp";
          break;
        }
      }
    }
}

TEST(VmathTest, SpecialValues) {
  const float inf = INFINITY, nan = NAN;
  const float x[] = {nan, inf, -inf, 0.0f, -0.0f};
  // Expected per function for each x above (NaN compared as NaN).
  const float want[][5] = {{nan, inf, 0.0f, 1.0f, 1.0f},     // exp
                           {nan, inf, nan, -inf, -inf},      // log
                           {nan, 1.0f, -1.0f, 0.0f, -0.0f},  // tanh
                           {nan, 1.0f, 0.0f, 0.5f, 0.5f},    // sigmoid
                           {nan, 1.0f, -1.0f, 0.0f, -0.0f},  // erf
                           {nan, 1.0f, 0.0f, 0.5f, 0.5f}};   // ncdf
  for (const Loops* t : tables())
    for (int fn = 0; fn < nnc::activation::kMathCount; fn++) {
      float y[5];
      t->math[fn](x, y, 5);
      for (int i = 0; i < 5; i++) {
        if (std::isnan(want[fn][i]))
          EXPECT_TRUE(std::isnan(y[i])) << t->name << " " << kNames[fn] << "(" << x[i] << ") = " << y[i];
        else
          EXPECT_EQ(y[i], want[fn][i]) << t->name << " " << kNames[fn] << "(" << x[i] << ")";
      }
      // A NaN among normal values stays in its lane only.
      float xs[19], ys[19];
      for (int i = 0; i < 19; i++) xs[i] = 0.25f * static_cast<float>(i + 1);
      xs[11] = nan;
      t->math[fn](xs, ys, 19);
      for (int i = 0; i < 19; i++)
        EXPECT_EQ(std::isnan(ys[i]), i == 11) << t->name << " " << kNames[fn] << " lane " << i;
    }
}

TEST(VmathTest, TailsDoNotTouchMemoryPastTheEnd) {
  for (const Loops* t : tables())
    for (size_t n = 0; n <= 40; n++) {
      std::vector<float> x(n + 16, 7.0f), y(n + 16, -3.0f);
      for (size_t i = 0; i < n; i++) x[i] = 0.1f * static_cast<float>(i);
      t->math[nnc::activation::kExp](x.data(), y.data(), n);
      for (size_t i = 0; i < n; i++) EXPECT_NEAR(y[i], std::exp(0.1 * i), 1e-6 * std::exp(0.1 * i));
      for (size_t i = n; i < n + 16; i++) EXPECT_EQ(y[i], -3.0f) << t->name << " n = " << n;
    }
}

// GELU's CPU_OPT loops use their own cheaper Phi (vmath::gelu_fast,
// ncdf_fast, npdf_fast), held to a relative bound instead of ulp: through
// every loop table, forward y = x Phi(x) and the backward's Phi(x) + x phi(x)
// (from x and the loops' own y, and from x alone) against double, over the
// whole float range (every 8191st bit pattern of both signs), a dense grid
// over [-15, 7] (where the tail, the zero of the derivative at -0.75 and
// the subnormal results are) and the special values.
//   forward:  |y - exact| <= 6e-7 |exact| + 30 subnormal steps (4.2e-44)
//   backward: |d - exact| <= 1e-6 (Phi + |x| phi) + 4.2e-44, the two
//             terms' own size (d itself crosses 0 at x = -0.75).
TEST(VmathTest, GeluFastBound) {
  std::vector<float> x = sample();
  for (double v = -15; v <= 7; v += 1.0 / 4099) x.push_back(static_cast<float>(v));
  for (float c : {-0.7518f, -13.1f, -14.5f, 0.0f})
    for (float v = c, i = 0; i < 3000; i++) x.push_back(v), v = std::nextafter(v, -INFINITY);
  const size_t n = x.size();
  std::vector<float> y(n), d(n), d_x(n), g(n, 1.0f);
  constexpr double kFwd = 6e-7, kBwd = 1e-6, kFloor = 30 * 0x1p-149;
  for (const Loops* t : tables()) {
    t->forward[nnc::activation::kGelu](x.data(), y.data(), n, 0);
    t->backward_xy[nnc::activation::kGelu](g.data(), x.data(), y.data(), d.data(), n, 0);
    t->backward[nnc::activation::kGelu](g.data(), x.data(), d_x.data(), n, 0);
    double worst_f = 0, worst_b = 0, worst_bx = 0;
    float at_f = 0, at_b = 0, at_bx = 0;
    for (size_t i = 0; i < n; i++) {
      const double v = x[i];
      if (std::isnan(v) || std::isinf(v)) continue;
      const double phi = 0.5 * std::erfc(-v / std::sqrt(2.0));
      const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
      const double fe = std::fabs(y[i] - v * phi) / (kFwd * std::fabs(v * phi) + kFloor);
      if (!(fe <= worst_f)) worst_f = fe, at_f = x[i];
      const double scale = kBwd * (phi + std::fabs(v) * pdf) + kFloor;
      const double be = std::fabs(d[i] - (phi + v * pdf)) / scale;
      if (!(be <= worst_b)) worst_b = be, at_b = x[i];
      const double bxe = std::fabs(d_x[i] - (phi + v * pdf)) / scale;
      if (!(bxe <= worst_bx)) worst_bx = bxe, at_bx = x[i];
    }
    std::printf("  %-7s gelu_fast: forward %.3f, backward from x, y %.3f, from x %.3f of the bound\n", t->name,
                worst_f, worst_b, worst_bx);
    EXPECT_LE(worst_f, 1.0) << t->name << " forward at x = " << at_f;
    EXPECT_LE(worst_b, 1.0) << t->name << " backward (x, y) at x = " << at_b;
    EXPECT_LE(worst_bx, 1.0) << t->name << " backward (x) at x = " << at_bx;
    // Special values: as x Phi(x) and Phi(x) + x phi(x) in double.
    const float inf = INFINITY;
    const float xs[] = {NAN, inf, -inf, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, 1e-45f, -1e-45f};
    float ys[9], ds[9], gs[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    t->forward[nnc::activation::kGelu](xs, ys, 9, 0);
    t->backward_xy[nnc::activation::kGelu](gs, xs, ys, ds, 9, 0);
    EXPECT_TRUE(std::isnan(ys[0]) && std::isnan(ds[0])) << t->name;
    EXPECT_EQ(ys[1], inf) << t->name;
    EXPECT_TRUE(std::isnan(ys[2])) << t->name << ": -inf * Phi(-inf) = -inf * 0";
    EXPECT_TRUE(ys[3] == 0 && !std::signbit(ys[3]) && ys[4] == 0 && std::signbit(ys[4])) << t->name;
    EXPECT_EQ(ys[5], FLT_MAX) << t->name;
    EXPECT_TRUE(ys[6] == 0 && std::signbit(ys[6])) << t->name;
    EXPECT_TRUE(std::isnan(ds[1]) && std::isnan(ds[2])) << t->name << ": +-inf * phi(+-inf) = inf * 0";
    EXPECT_EQ(ds[3], 0.5f) << t->name;
    EXPECT_EQ(ds[4], 0.5f) << t->name;
    EXPECT_EQ(ds[5], 1.0f) << t->name;
    EXPECT_EQ(ds[6], 0.0f) << t->name;
    EXPECT_EQ(ds[7], 0.5f) << t->name;
  }
}

// SWISH's forward loop uses vmath::sigmoid_fast (exp_neg's shorter
// polynomial): x sigmoid(x) through every loop table against double over
// the whole float range and a dense grid over [-110, 30] (the exp's scaling
// branch edges and the subnormal results included):
//   |y - exact| <= 4e-7 |exact| + (|x| + 4) subnormal steps
// (where sigmoid(x) is subnormal, its own half step times x is inherent).
TEST(VmathTest, SwishFastBound) {
  std::vector<float> x = sample();
  for (double v = -110; v <= 30; v += 1.0 / 1021) x.push_back(static_cast<float>(v));
  const size_t n = x.size();
  std::vector<float> y(n);
  for (const Loops* t : tables()) {
    t->forward[nnc::activation::kSwish](x.data(), y.data(), n, 0);
    double worst = 0;
    float at = 0;
    for (size_t i = 0; i < n; i++) {
      const double v = x[i];
      if (std::isnan(v) || std::isinf(v)) continue;
      const double want = v / (1 + std::exp(-v));
      const double e = std::fabs(y[i] - want) / (4e-7 * std::fabs(want) + (std::fabs(v) + 4) * 0x1p-149);
      if (!(e <= worst)) worst = e, at = x[i];
    }
    std::printf("  %-7s swish forward: %.3f of the bound\n", t->name, worst);
    EXPECT_LE(worst, 1.0) << t->name << " at x = " << at;
  }
}

}  // namespace
