// RANDOM_UNIFORM, RANDOM_NORMAL and DROPOUT: reproducibility under a seed
// (both backends, packed and views, threaded sizes, streams), distribution
// moments and Kolmogorov-Smirnov statistics with fixed seeds, dropout's keep
// rate, scaling and mask, its backward against the mask and against central
// differences, descriptions, bad input, and the CMD_* macros from GNU C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/cmd_rand/rand_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class RandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t random_cmd(uint32_t id, float a0, float a1, uint32_t backend) {
  ccv_nnc_cmd_t c = command(id, backend, a0);
  c.info.blas.a[1] = a1;
  return c;
}

ccv_nnc_cmd_t dropout_cmd(uint32_t id, float p, int entirety, uint32_t backend) {
  ccv_nnc_cmd_t c = command(id, backend);
  c.info.dropout.p = p;
  c.info.dropout.entirety = entirety;
  return c;
}

// Fill `t` with the command after seeding the default generator.
void fill_seeded(const ccv_nnc_cmd_t& cmd, const T& t, uint32_t seed) {
  ccv_nnc_stream_context_set_seed(nullptr, seed);
  ASSERT_EQ(run(cmd, {}, {t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
}

bool same_values(const T& a, const T& b) {
  if (a.count() != b.count()) return false;
  for (size_t i = 0; i < a.count(); i++)
    if (a.bits(i) != b.bits(i)) return false;
  return true;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Kolmogorov-Smirnov statistic of the values of t against cdf.
template <class F>
double ks_statistic(const T& t, F cdf) {
  std::vector<double> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = t.get(i);
  std::sort(v.begin(), v.end());
  const double n = double(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); i++) {
    const double f = cdf(v[i]);
    d = std::max({d, f - double(i) / n, double(i + 1) / n - f});
  }
  return d;
}

void moments(const T& t, double& mean, double& var) {
  double s = 0, s2 = 0;
  for (size_t i = 0; i < t.count(); i++) s += t.get(i);
  mean = s / double(t.count());
  for (size_t i = 0; i < t.count(); i++) s2 += (t.get(i) - mean) * (t.get(i) - mean);
  var = s2 / double(t.count() - 1);
}

TEST_F(RandTest, SameSeedSameValuesOnEveryBackendSizeAndLayout) {
  for (uint32_t id : {CCV_NNC_RANDOM_UNIFORM_FORWARD, CCV_NNC_RANDOM_NORMAL_FORWARD})
    for (int dt : {CCV_32F, CCV_64F})
      for (int n : {1, 2, 7, 1001, 100003}) {
        T ref(dt, {n}), opt(dt, {n}), again(dt, {n});
        fill_seeded(random_cmd(id, 0.5f, 2, kRef), ref, 99);
        fill_seeded(random_cmd(id, 0.5f, 2, kOpt), opt, 99);
        fill_seeded(random_cmd(id, 0.5f, 2, kOpt), again, 99);
        EXPECT_TRUE(same_values(ref, opt)) << id << " dt " << dt << " n " << n;
        EXPECT_TRUE(same_values(opt, again)) << id << " dt " << dt << " n " << n;
      }
  // A view gets the values of a packed tensor of its shape (row-major order),
  // and OPT (which hands views to the element loop) agrees.
  for (int dt : {CCV_32F, CCV_64F}) {
    T packed(dt, {5, 6, 7});
    T view = T::view(dt, {5, 6, 7});
    fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, -1, 1, kOpt), packed, 5);
    fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, -1, 1, kOpt), view, 5);
    EXPECT_TRUE(same_values(packed, view));
    EXPECT_TRUE(view.guard_intact());
  }
}

// The documented generator, written again here: the kernel's one seed is the
// next draw of the stream's generator, and element values are functions of
// (seed, index) only, so a threaded CPU_OPT run must equal this serial loop.
uint64_t splitmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TEST_F(RandTest, ValuesAreTheCounterGeneratorOfSeedAndIndex) {
  const int n = 100003;
  ccv_nnc_stream_context_set_seed(nullptr, 42);
  const uint32_t seed = ccv_nnc_stream_context_genrand_uint32(nullptr);
  const uint64_t key = splitmix(0x6a09e667f3bcc909ull ^ seed);
  auto word64 = [&](uint64_t k) { return splitmix(key + (k + 1) * 0x9e3779b97f4a7c15ull); };
  auto word32 = [&](uint64_t i) { return uint32_t(i & 1 ? word64(i >> 1) >> 32 : word64(i >> 1)); };
  T f(CCV_32F, {n}), d(CCV_64F, {n}), x(CCV_32F, {n}), y(CCV_32F, {n}), m(CCV_8U, {n});
  fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, -1, 3, kOpt), f, 42);
  fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, -1, 3, kOpt), d, 42);
  for (size_t i = 0; i < x.count(); i++) x.set(i, 1);
  ccv_nnc_stream_context_set_seed(nullptr, 42);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.25f, 0, kOpt), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS);
  const uint64_t t = uint64_t(std::nearbyint(double(0.25f) * 4294967296.0));
  int bad_f = 0, bad_d = 0, bad_m = 0;
  for (int i = 0; i < n; i++) {
    const double uf = double(word32(i) >> 8) * 0x1p-24, ud = double(word64(i) >> 11) * 0x1p-53;
    bad_f += f.get(i) != double(float(std::fma(4.0, uf, -1.0)));
    bad_d += d.get(i) != std::fma(4.0, ud, -1.0);
    bad_m += m.get(i) != (word32(i) >= t ? 1 : 0);
  }
  EXPECT_EQ(bad_f, 0);
  EXPECT_EQ(bad_d, 0);
  EXPECT_EQ(bad_m, 0);
}

TEST_F(RandTest, ConsecutiveCallsAndSeedsDiffer) {
  T a(CCV_32F, {64}), b(CCV_32F, {64}), c(CCV_32F, {64});
  ccv_nnc_stream_context_set_seed(nullptr, 1);
  const ccv_nnc_cmd_t cmd = random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, 0, 1, 0);
  ASSERT_EQ(run(cmd, {}, {a}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(cmd, {}, {b}), CCV_NNC_EXEC_SUCCESS);
  fill_seeded(cmd, c, 2);
  int same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < 64; i++) same_ab += a.get(i) == b.get(i), same_ac += a.get(i) == c.get(i);
  EXPECT_LT(same_ab, 3);
  EXPECT_LT(same_ac, 3);
}

TEST_F(RandTest, StreamsCarryTheirOwnSeed) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  T a(CCV_32F, {300}), b(CCV_32F, {300});
  const ccv_nnc_cmd_t cmd = random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 1, 0, 0);
  for (T* t : {&a, &b}) {
    ccv_nnc_stream_context_set_seed(s, 1234);
    ccv_nnc_tensor_t* out = t->get();
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, nullptr, 0, &out, 1, s), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_stream_context_wait(s);
  }
  EXPECT_TRUE(same_values(a, b));
  ccv_nnc_stream_context_free(s);
}

TEST_F(RandTest, UniformRangeMomentsAndKolmogorovSmirnov) {
  const int n = 20000;
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F}) {
      T t(dt, {n});
      fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, -2, 3, backend), t, 2024);
      double lo = INFINITY, hi = -INFINITY;
      for (size_t i = 0; i < t.count(); i++) lo = std::min(lo, t.get(i)), hi = std::max(hi, t.get(i));
      EXPECT_GE(lo, -2);
      EXPECT_LT(hi, 3);
      double mean, var;
      moments(t, mean, var);
      EXPECT_NEAR(mean, 0.5, 4 * std::sqrt(25.0 / 12 / n));
      EXPECT_NEAR(var, 25.0 / 12, 0.05);
      // 1.63 / sqrt(n): the 1% critical value.
      EXPECT_LT(ks_statistic(t, [](double x) { return std::clamp((x + 2) / 5, 0.0, 1.0); }), 1.63 / std::sqrt(n));
    }
}

TEST_F(RandTest, NormalMomentsAndKolmogorovSmirnov) {
  const int n = 20001;  // odd: the last Box-Muller pair is half used
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F}) {
      T t(dt, {n});
      // CMD_RANDOM_NORMAL_FORWARD(std, mean): a[0] = std = 2, a[1] = mean = 1.
      fill_seeded(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 2, 1, backend), t, 77);
      double mean, var;
      moments(t, mean, var);
      EXPECT_NEAR(mean, 1, 4 * 2 / std::sqrt(n));
      EXPECT_NEAR(var, 4, 4 * 4 * std::sqrt(2.0 / n));
      EXPECT_LT(ks_statistic(t, [](double x) { return normal_cdf((x - 1) / 2); }), 1.63 / std::sqrt(n));
      // Odd and even elements (cosine and sine halves) are each normal.
      T half(CCV_64F, {n / 2});
      for (int i = 0; i < n / 2; i++) half.set(i, t.get(2 * i + 1));
      EXPECT_LT(ks_statistic(half, [](double x) { return normal_cdf((x - 1) / 2); }), 1.63 / std::sqrt(n / 2));
    }
}

TEST_F(RandTest, HalfAndBfloatOnRef) {
  for (int dt : {CCV_16F, CCV_16BF}) {
    T u(dt, {999}), z(dt, {999});
    fill_seeded(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, 1, 2, 0), u, 3);
    fill_seeded(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 1, 0, 0), z, 3);
    double mean, var;
    moments(u, mean, var);
    EXPECT_NEAR(mean, 1.5, 0.05);
    moments(z, mean, var);
    EXPECT_NEAR(mean, 0, 0.15);
    EXPECT_NEAR(var, 1, 0.2);
    for (size_t i = 0; i < u.count(); i++) EXPECT_TRUE(u.get(i) >= 1 && u.get(i) <= 2);
  }
}

TEST_F(RandTest, DropoutKeepRateScaleAndMask) {
  const int n = 40000;
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F})
      for (float p : {0.f, 0.1f, 0.5f, 0.9f, 1.f}) {
        T x(dt, {n}), y(dt, {n}), mask(CCV_8U, {n});
        std::mt19937 rng(11);
        fill_uniform(x, rng, 0.5, 1.5);
        ccv_nnc_stream_context_set_seed(nullptr, 8);
        ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, p, 0, backend), {x}, {y, mask}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        size_t kept = 0;
        for (size_t i = 0; i < x.count(); i++) {
          const bool k = mask.get(i) == 1;
          ASSERT_TRUE(k || mask.get(i) == 0);
          kept += k;
          const double want = k ? x.get(i) / (1 - double(p)) : 0;
          ASSERT_NEAR(y.get(i), want, (dt == CCV_32F ? 1e-6 : 1e-15) * std::fabs(want)) << i;
        }
        const double rate = double(kept) / n, sd = std::sqrt(double(p) * (1 - p) / n);
        EXPECT_NEAR(rate, 1 - p, 4 * sd + 1e-12) << "p " << p;
      }
}

TEST_F(RandTest, DropoutSameOnBothBackendsViewsAndThreadedSizes) {
  for (int dt : {CCV_32F, CCV_64F})
    for (int n : {1, 3, 1001, 100001}) {
      T x(dt, {n}), y0(dt, {n}), y1(dt, {n}), m0(CCV_8U, {n}), m1(CCV_8U, {n});
      std::mt19937 rng(n);
      fill_uniform(x, rng);
      ccv_nnc_stream_context_set_seed(nullptr, 21);
      ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.3f, 0, kRef), {x}, {y0, m0}), CCV_NNC_EXEC_SUCCESS);
      ccv_nnc_stream_context_set_seed(nullptr, 21);
      ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.3f, 0, kOpt), {x}, {y1, m1}), CCV_NNC_EXEC_SUCCESS);
      EXPECT_TRUE(same_values(y0, y1) && same_values(m0, m1)) << dt << " " << n;
    }
  // Views of x, y and mask: the same values as packed tensors.
  T x(CCV_32F, {4, 5, 6}), y(CCV_32F, {4, 5, 6}), m(CCV_8U, {4, 5, 6});
  T xv = T::view(CCV_32F, {4, 5, 6}), yv = T::view(CCV_32F, {4, 5, 6}), mv = T::view(CCV_8U, {4, 5, 6});
  std::mt19937 rng(3);
  fill_uniform(x, rng);
  for (size_t i = 0; i < x.count(); i++) xv.set(i, x.get(i));
  ccv_nnc_stream_context_set_seed(nullptr, 4);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0, kOpt), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_set_seed(nullptr, 4);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0, kOpt), {xv}, {yv, mv}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(same_values(y, yv) && same_values(m, mv));
  EXPECT_TRUE(yv.guard_intact() && mv.guard_intact());
  // In place: y is x.
  ccv_nnc_stream_context_set_seed(nullptr, 4);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0, kOpt), {x}, {x, m}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(same_values(x, y));
}

TEST_F(RandTest, DropoutEntiretyDropsAllOrNothing) {
  int kept_calls = 0;
  const int calls = 400;
  ccv_nnc_stream_context_set_seed(nullptr, 9);
  for (int c = 0; c < calls; c++) {
    T x(CCV_32F, {33}), y(CCV_32F, {33}), m(CCV_8U, {1});
    for (size_t i = 0; i < 33; i++) x.set(i, 1 + double(i));
    ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.25f, 1, c % 2 ? kOpt : kRef), {x}, {y, m}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const bool keep = m.get(0) == 1;
    kept_calls += keep;
    for (size_t i = 0; i < 33; i++) ASSERT_NEAR(y.get(i), keep ? x.get(i) / 0.75 : 0, 1e-5);
    // Backward with the one-element mask.
    T g(CCV_32F, {33}), dx(CCV_32F, {33});
    for (size_t i = 0; i < 33; i++) g.set(i, 0.5 * double(i));
    ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.25f, 1, c % 2 ? kRef : kOpt), {g, nullptr, nullptr, nullptr, m}, {dx}),
              CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < 33; i++) ASSERT_NEAR(dx.get(i), keep ? g.get(i) / 0.75 : 0, 1e-6);
  }
  EXPECT_NEAR(double(kept_calls) / calls, 0.75, 4 * std::sqrt(0.75 * 0.25 / calls));
}

TEST_F(RandTest, DropoutBackwardIsMaskTimesGradientTimesScale) {
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F})
      for (bool view : {false, true}) {
        const std::vector<int> dims = {3, 50, 7};
        T g = view ? T::view(dt, dims) : T(dt, dims), dx = view ? T::view(dt, dims) : T(dt, dims);
        T m = view ? T::view(CCV_8U, dims) : T(CCV_8U, dims);
        std::mt19937 rng(5);
        for (size_t i = 0; i < g.count(); i++) g.set(i, double(int(rng() % 64) - 32) / 16), m.set(i, rng() % 2);
        ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.5f, 0, backend), {g, nullptr, nullptr, nullptr, m}, {dx}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t i = 0; i < g.count(); i++) ASSERT_EQ(dx.get(i), m.get(i) ? 2 * g.get(i) : 0) << i;
        EXPECT_TRUE(dx.guard_intact());
      }
}

// With the seed fixed before every forward run the mask is fixed, and the
// backward must be the derivative of sum_i r_i * y_i.
TEST_F(RandTest, DropoutBackwardMatchesFiniteDifferences) {
  const int n = 24;
  const float p = 0.4f;
  T x(CCV_64F, {n}), y(CCV_64F, {n}), m(CCV_8U, {n}), r(CCV_64F, {n}), dx(CCV_64F, {n});
  std::mt19937 rng(12);
  fill_uniform(x, rng);
  fill_uniform(r, rng);
  auto loss = [&] {
    ccv_nnc_stream_context_set_seed(nullptr, 31);
    EXPECT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, p, 0, kRef), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS);
    double l = 0;
    for (int i = 0; i < n; i++) l += r.get(i) * y.get(i);
    return l;
  };
  loss();
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, p, 0, kOpt), {r, nullptr, x, y, m}, {dx}), CCV_NNC_EXEC_SUCCESS);
  const double h = 1e-5;
  for (int i = 0; i < n; i++) {
    const double x0 = x.get(i);
    x.set(i, x0 + h);
    const double lp = loss();
    x.set(i, x0 - h);
    const double lm = loss();
    x.set(i, x0);
    EXPECT_NEAR(dx.get(i), (lp - lm) / (2 * h), 1e-8) << i;
  }
}

TEST_F(RandTest, RandomBackwardGivesZeroGradients) {
  T g(CCV_32F, {5}), dx(CCV_32F, {5});
  for (size_t i = 0; i < 5; i++) g.set(i, 1), dx.set(i, 7);
  ASSERT_EQ(run(random_cmd(CCV_NNC_RANDOM_UNIFORM_BACKWARD, 0, 1, 0), {g}, {dx}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 5; i++) EXPECT_EQ(dx.get(i), 0);
  for (size_t i = 0; i < 5; i++) dx.set(i, 7);
  ASSERT_EQ(run(random_cmd(CCV_NNC_RANDOM_NORMAL_BACKWARD, 1, 0, 0), {g}, {dx}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 5; i++) EXPECT_EQ(dx.get(i), 0);
}

TEST_F(RandTest, DescriptionsAndShapes) {
  const ccv_nnc_cmd_t d = dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0, 0);
  ccv_nnc_tensor_param_t in = param(CCV_32F, {2, 3, 4}), out[2];
  std::memset(out, 0, sizeof(out));
  ccv_nnc_hint_tensor_auto(d, &in, 1, ccv_nnc_no_hint, out, 2);
  // libnnc's shapes: y is x; the mask is reserved space in x's type,
  // [128 / element size, ceil(d0 / 128) * d1 * ...].
  EXPECT_EQ(out[0].datatype, CCV_32F);
  EXPECT_TRUE(out[0].dim[0] == 2 && out[0].dim[1] == 3 && out[0].dim[2] == 4 && out[0].dim[3] == 0);
  EXPECT_EQ(out[1].datatype, CCV_32F);
  EXPECT_TRUE(out[1].dim[0] == 32 && out[1].dim[1] == 12 && out[1].dim[2] == 0);
  ccv_nnc_tensor_param_t in2 = param(CCV_16F, {300, 5}), in3 = param(CCV_64F, {7});
  ccv_nnc_hint_tensor_auto(d, &in2, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(out[1].datatype == CCV_16F && out[1].dim[0] == 64 && out[1].dim[1] == 15 && out[1].dim[2] == 0);
  ccv_nnc_hint_tensor_auto(d, &in3, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(out[1].datatype == CCV_64F && out[1].dim[0] == 16 && out[1].dim[1] == 1 && out[1].dim[2] == 0);
  const ccv_nnc_cmd_t e = dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 1, 0);
  ccv_nnc_hint_tensor_auto(e, &in, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_TRUE(out[1].datatype == CCV_32F && out[1].dim[0] == 1 && out[1].dim[1] == 0);
  // Forward: x in, y and mask out, all present.
  const uint64_t x1 = 1, both = 3, y_only = 1;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(d, 1, 2, &x1, 1, &both, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(d, 1, 2, &x1, 1, &y_only, 1));
  // Backward, libnnc's |g|g_mask|x|y|mask|: needs g (0) and the mask (4) only.
  const ccv_nnc_cmd_t b = dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.5f, 0, 0);
  const uint64_t g_mask = 1 | 16, all = 31, g_only = 1, old_slot = 1 | 8, dx = 1;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(b, 5, 1, &g_mask, 1, &dx, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(b, 5, 1, &all, 1, &dx, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(b, 5, 1, &g_only, 1, &dx, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(b, 5, 1, &old_slot, 1, &dx, 1));
  // In place: forward y on x only; the backward has no pair (as libnnc).
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(d, 0, 1, 0, 2));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(d, 0, 1, 1, 2));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(b, 0, 5, 0, 1));
  // Random forward and backward: the one output, whatever the inputs.
  const uint64_t none = 0, one = 1, two = 3;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, 0, 1, 0), 0, 1, &none, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(random_cmd(CCV_NNC_RANDOM_NORMAL_BACKWARD, 1, 0, 0), 1, 1, &one, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(random_cmd(CCV_NNC_RANDOM_NORMAL_BACKWARD, 1, 0, 0), 1, 2, &one, 1, &two, 1));
}

// A libnnc program's dropout: the mask made from ccv_nnc_hint_tensor_auto
// (reserved space in x's type, not 8U), the backward's mask in the fifth slot
// (|g|g_mask|x|y|mask|), on both backends, fp32 / fp64 / fp16, odd first
// dimensions (past 128 too); the two backends give the same bits.
TEST_F(RandTest, DropoutWithLibnncMaskAndSlots) {
  for (int dt : {CCV_32F, CCV_64F, CCV_16F})
    for (const std::vector<int>& dims : {std::vector<int>{5}, std::vector<int>{130, 3}, std::vector<int>{2, 7, 9}}) {
      ccv_nnc_tensor_param_t in = param(dt, dims), out[2];
      std::memset(out, 0, sizeof(out));
      ccv_nnc_hint_tensor_auto(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.4f, 0, 0), &in, 1, ccv_nnc_no_hint, out, 2);
      std::vector<int> mdims;
      for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && out[1].dim[i]; i++) mdims.push_back(out[1].dim[i]);
      T x(dt, dims), g(dt, dims);
      std::mt19937 rng(dims[0]);
      for (size_t i = 0; i < x.count(); i++) x.set(i, double(int(rng() % 64) - 32) / 16 + 0.03125), g.set(i, double(i % 7) - 3);
      std::vector<double> ys[2], dxs[2];
      for (int which = 0; which < 2; which++) {
        const uint32_t backend = which ? kOpt : kRef;
        T y(dt, dims), dx(dt, dims), m(CCV_GET_DATA_TYPE(out[1].datatype), mdims);
        ccv_nnc_stream_context_set_seed(nullptr, 77);
        ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.4f, 0, backend), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.4f, 0, backend), {g, nullptr, nullptr, nullptr, m}, {dx}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        // dx is g scaled where y kept x (x has no zeros), 0 elsewhere.
        const double tol = dt == CCV_16F ? 2e-3 : 1e-6;
        for (size_t i = 0; i < x.count(); i++) {
          const bool kept = y.get(i) != 0;
          ASSERT_NEAR(y.get(i), kept ? x.get(i) / 0.6 : 0, tol * 4) << i;
          ASSERT_NEAR(dx.get(i), kept ? g.get(i) / 0.6 : 0, tol * 4) << i;
          ys[which].push_back(y.get(i)), dxs[which].push_back(dx.get(i));
        }
      }
      EXPECT_EQ(ys[0], ys[1]);
      EXPECT_EQ(dxs[0], dxs[1]);
    }
  // libnnc's entirety mask: [1] in x's type.
  T x(CCV_32F, {9}), y(CCV_32F, {9}), g(CCV_32F, {9}), dx(CCV_32F, {9}), m(CCV_32F, {1});
  for (size_t i = 0; i < 9; i++) x.set(i, 1), g.set(i, 2);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 1, 0), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.5f, 1, 0), {g, nullptr, x, y, m}, {dx}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 9; i++) EXPECT_EQ(dx.get(i), y.get(i) * 2);
}

TEST_F(RandTest, RejectsBadInputWithMessages) {
  T y(CCV_32F, {8}), i32(CCV_32S, {8}), x(CCV_32F, {8}), m(CCV_8U, {8}), m9(CCV_8U, {7}), mf(CCV_32F, {1});
  T y64(CCV_64F, {8}), big(CCV_32F, {9});
  EXPECT_EQ(run(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, 2, 1, 0), {}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("RANDOM_UNIFORM")) << ccv_nnc_error_message();
  EXPECT_EQ(run(random_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, 0, INFINITY, 0), {}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, -1, 0, 0), {}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("std")) << ccv_nnc_error_message();
  EXPECT_NE(run(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 1, 0, 0), {}, {i32}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 1, 0, 0), {}, {}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(random_cmd(CCV_NNC_RANDOM_NORMAL_FORWARD, 1, 0, 0), {}, {y, y}), CCV_NNC_EXEC_SUCCESS);
  const ccv_nnc_cmd_t d = dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 0, 0);
  EXPECT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 1.5f, 0, 0), {x}, {y, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dropout.p")) << ccv_nnc_error_message();
  EXPECT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, NAN, 0, 0), {x}, {y, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(run(d, {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(d, {x}, {y, nullptr}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(d, {x}, {y, mf}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(d, {x}, {y, m9}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(message_has("one byte per element")) << ccv_nnc_error_message();
  EXPECT_NE(run(d, {x}, {y64, m}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(d, {x}, {big, m}), CCV_NNC_EXEC_SUCCESS);
  // With entirety an 8U mask of x's shape serves (its first byte is the record).
  EXPECT_EQ(run(dropout_cmd(CCV_NNC_DROPOUT_FORWARD, 0.5f, 1, 0), {x}, {y, m}), CCV_NNC_EXEC_SUCCESS);
  const ccv_nnc_cmd_t b = dropout_cmd(CCV_NNC_DROPOUT_BACKWARD, 0.5f, 0, 0);
  EXPECT_NE(run(b, {x, nullptr, nullptr, nullptr, nullptr}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(message_has("mask (input 4)")) << ccv_nnc_error_message();
  EXPECT_NE(run(b, {x, m}, {y}), CCV_NNC_EXEC_SUCCESS);
  // The old four-slot layout |g|x|y|mask| is not libnnc's.
  EXPECT_EQ(run(b, {x, nullptr, nullptr, m}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("|g|g_mask|x|y|mask|")) << ccv_nnc_error_message();
  EXPECT_NE(run(b, {x, nullptr, nullptr, nullptr, m9}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(b, {x, nullptr, nullptr, nullptr, m}, {y64}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(run(b, {x, nullptr, nullptr, nullptr, m}, {}), CCV_NNC_EXEC_SUCCESS);
}

TEST_F(RandTest, EasyMacrosFromC) {
  const int n = 1000;
  std::vector<float> u(n), z(n), x(n, 1.f), y(n), dx(n);
  std::vector<unsigned char> mask(n);
  ccv_nnc_stream_context_set_seed(nullptr, 17);
  ASSERT_EQ(rand_easy_all(u.data(), z.data(), x.data(), y.data(), mask.data(), dx.data(), n), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  double su = 0, sz = 0;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    EXPECT_TRUE(u[i] >= -1 && u[i] <= 1);
    su += u[i], sz += z[i];
    kept += mask[i];
    EXPECT_EQ(y[i], mask[i] ? 2.f : 0.f);
    EXPECT_EQ(dx[i], mask[i] ? 2.f : 0.f);  // g = x = 1
  }
  EXPECT_NEAR(su / n, 0, 0.1);
  EXPECT_NEAR(sz / n, 3, 0.2);  // CMD_RANDOM_NORMAL_FORWARD(1, 3): std 1, mean 3
  EXPECT_NEAR(double(kept) / n, 0.5, 0.07);
}

}  // namespace
