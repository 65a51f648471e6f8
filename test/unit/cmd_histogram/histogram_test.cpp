// HISTOGRAM: each mode against a linear scan over its edges (the edges as
// the command's description defines them), the statistics in fp64, libnnc's
// contract from its description file, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_histogram_example(int even[7], int logs[6], int bins[5], float stats[4]);

using namespace cmdtest;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

class Histogram : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t hist(int type, int bins = 0, float mn = 0, float mx = 0, float rate = 0) {
  ccv_nnc_cmd_t c = command(CCV_NNC_HISTOGRAM_FORWARD, CCV_NNC_BACKEND_CPU_REF);
  c.info.histogram.type = type, c.info.histogram.bins = bins;
  c.info.histogram.min = mn, c.info.histogram.max = mx, c.info.histogram.rate = rate;
  return c;
}

// libnnc's count of magnitude bins, as its description file computes it.
int log_range(float mn, float mx, float rate) {
  const float log_base = 1.0 / logf(rate);
  return static_cast<int>(ceilf(logf(mx / mn) * log_base));
}

// Counts over [lo_i, hi_i) intervals (+inf counted where hi_i is +inf): a value lands in every interval holding it
// (the intervals partition the line, so that is exactly one); the last entry NaN.
std::vector<int> scan(const std::vector<double>& x, const std::vector<std::pair<double, double>>& intervals) {
  std::vector<int> h(intervals.size() + 1, 0);
  for (double v : x) {
    if (std::isnan(v)) {
      h.back()++;
      continue;
    }
    int hits = 0;
    for (size_t i = 0; i < intervals.size(); i++)
      if (intervals[i].first <= v && (v < intervals[i].second || (v == kInf && intervals[i].second == kInf))) h[i]++, hits++;
    EXPECT_EQ(hits, 1) << v;
  }
  return h;
}


std::vector<std::pair<double, double>> even_intervals(int bins, double lo, double hi) {
  std::vector<std::pair<double, double>> iv{{-kInf, lo}};
  const double w = (hi - lo) / bins;
  for (int i = 0; i < bins; i++) iv.push_back({lo + i * w, i == bins - 1 ? hi : lo + (i + 1) * w});
  iv.push_back({hi, kInf});
  return iv;
}

std::vector<std::pair<double, double>> log_intervals(int u, double lo, double rate) {
  std::vector<std::pair<double, double>> pos;
  for (int k = 0; k < u; k++) pos.push_back({lo * std::pow(rate, k), k == u - 1 ? kInf : lo * std::pow(rate, k + 1)});
  std::vector<std::pair<double, double>> iv;
  // Negative magnitudes, most negative first: -x in [a, b) means x in (-b, -a].
  // Shift the closed end by the next double so [lo, hi) intervals still fit.
  for (int k = u - 1; k >= 0; k--)
    iv.push_back({std::nextafter(-pos[k].second, kInf), std::nextafter(-pos[k].first, kInf)});
  iv.front().first = -kInf;
  iv.push_back({std::nextafter(-lo, kInf), lo});
  for (auto& p : pos) iv.push_back(p);
  iv.back().second = kInf;
  return iv;
}

std::vector<double> values(const T& t) {
  std::vector<double> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = t.get(i);
  return v;
}

void expect_counts(const T& h, const std::vector<int>& want, const char* what) {
  ASSERT_EQ(h.count(), want.size()) << what;
  for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(h.get(i), want[i]) << what << " entry " << i;
}

void expect_stats(const T& s, const std::vector<double>& x, double tol) {
  double mn = NAN, mx = NAN, sum = 0, sq = 0;
  for (double v : x)
    if (!std::isnan(v)) mn = std::isnan(mn) ? v : std::min(mn, v), mx = std::isnan(mx) ? v : std::max(mx, v), sum += v, sq += v * v;
  EXPECT_EQ(s.get(0), mn);
  EXPECT_EQ(s.get(1), mx);
  auto near = [&](double got, double want) {
    if (std::isfinite(want))
      EXPECT_NEAR(got, want, tol * std::max(1.0, std::fabs(want)));
    else
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << got << " vs " << want;
  };
  near(s.get(2), sum);
  near(s.get(3), sq);
}

// Random values (multiples of 1/64, so many sit exactly on edges) plus the
// edges themselves, infinities and NaNs.
void fill_with_edges(const T& x, std::mt19937& rng, const std::vector<double>& specials) {
  fill_random(x, rng);
  std::uniform_int_distribution<size_t> at(0, x.count() - 1);
  for (double v : specials) x.set(at(rng), v);
}

TEST_F(Histogram, EvenMatchesScan) {
  std::mt19937 rng(11);
  for (int dt : {CCV_32F, CCV_64F, CCV_16F})
    for (bool view : {false, true}) {
      const std::vector<int> shape{5, 7, 9};
      T x = view ? T::view(dt, shape) : T(dt, shape);
      const int bins = 12;
      const double lo = -3, hi = 5;  // width 2/3: edges not all representable
      fill_with_edges(x, rng, {-3, 5, 1, -1, 4.5, kInf, -kInf, NAN, NAN, 0});
      T h(CCV_32S, {bins + 3}), s(dt, {4});
      ASSERT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, bins, lo, hi), {x}, {h, s}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const auto xv = values(x);
      expect_counts(h, scan(xv, even_intervals(bins, lo, hi)), "even");
      if (dt != CCV_16F) expect_stats(s, xv, dt == CCV_32F ? 1e-6 : 1e-12);
      // Without stats, and again (counts are overwritten, not added).
      ASSERT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, bins, lo, hi), {x}, {h}), CCV_NNC_EXEC_SUCCESS);
      expect_counts(h, scan(xv, even_intervals(bins, lo, hi)), "even again");
    }
}

TEST_F(Histogram, LogarithmicMatchesScan) {
  std::mt19937 rng(12);
  struct Mode {
    float mn, mx, rate;
  };
  // 0.25 .. 64 by 2: edges exact, values exactly on them; libnnc's default mode.
  for (const Mode m : {Mode{0.25f, 64, 2}, Mode{1e-12f, 1e20f, 1.1f}, Mode{0.5f, 3, 1.5f}})
    for (int dt : {CCV_32F, CCV_64F}) {
      T x = T::view(dt, {6, 50});
      std::uniform_real_distribution<double> e(-30, 25), sign(-1, 1);
      for (size_t i = 0; i < x.count(); i++)
        x.set(i, (sign(rng) < 0 ? -1 : 1) * std::pow(10.0, m.rate == 2 ? e(rng) / 10 : e(rng)));
      fill_with_edges(x, rng, {0.25, -0.25, 0.5, -2, 64, 128, -64, 0.125, 0, kInf, -kInf, NAN});
      const int u = log_range(m.mn, m.mx, m.rate);
      T h(CCV_32S, {2 * u + 2});
      ASSERT_EQ(run(hist(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, m.mn, m.mx, m.rate), {x}, {h}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      expect_counts(h, scan(values(x), log_intervals(u, m.mn, m.rate)), "logarithmic");
    }
}

TEST_F(Histogram, BinsMatchScan) {
  std::mt19937 rng(13);
  for (int dt : {CCV_32F, CCV_64F}) {
    T x(dt, {301});
    const std::vector<double> ev{-4, -1.5, 0, 0, 2, 3, 7.25};  // a repeated edge makes an empty bin
    T edges = T::view(CCV_64F, {static_cast<int>(ev.size())});
    for (size_t i = 0; i < ev.size(); i++) edges.set(i, ev[i]);
    fill_with_edges(x, rng, {-4, -1.5, 0, 0, 2, 3, 7.25, kInf, -kInf, NAN});
    T h(CCV_32S, {static_cast<int>(ev.size()) + 2}), s(dt, {4});
    ASSERT_EQ(run(hist(CCV_NNC_HISTOGRAM_BINS), {x, edges}, {h, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    std::vector<std::pair<double, double>> iv{{-kInf, ev[0]}};
    for (size_t i = 1; i < ev.size(); i++) iv.push_back({ev[i - 1], ev[i]});
    iv.push_back({ev.back(), kInf});
    const auto xv = values(x);
    expect_counts(h, scan(xv, iv), "bins");
    expect_stats(s, xv, dt == CCV_32F ? 1e-6 : 1e-12);
  }
}

// libnnc's description file: h is 32S with bins + 3, 2U + 2 or n + 2 entries,
// stats x's type [4]; the forward takes x with or without edges and h with or
// without stats; the backward takes nothing.
TEST_F(Histogram, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 3); };
  ccv_nnc_tensor_param_t in[2] = {param(CCV_16F, {4, 5, 6}), param(CCV_32F, {2, 3})}, out[2];
  ccv_nnc_hint_tensor_auto(hist(CCV_NNC_HISTOGRAM_EVEN, 10, -1, 1), in, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{13, 0, 0}));
  EXPECT_EQ(out[0].datatype, CCV_32S);
  EXPECT_EQ(dims(out[1]), (std::vector<int>{4, 0, 0}));
  EXPECT_EQ(out[1].datatype, CCV_16F);
  ccv_nnc_hint_tensor_auto(hist(CCV_NNC_HISTOGRAM_BINS), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 0, 0}));
  ccv_nnc_hint_tensor_auto(hist(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 1e-12f, 1e20f, 1.1f), in, 1, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2 * log_range(1e-12f, 1e20f, 1.1f) + 2, 0, 0}));
  EXPECT_EQ(out[0].dim[0], 1550);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 1);
  EXPECT_TRUE(bm(f, 1, 1, 1, 1));
  EXPECT_TRUE(bm(f, 2, 3, 2, 3));
  EXPECT_TRUE(bm(f, 2, 1, 2, 3));
  EXPECT_FALSE(bm(f, 1, 0, 1, 1));
  EXPECT_FALSE(bm(f, 1, 1, 2, 2));
  EXPECT_FALSE(bm(f, 1, 1, 1, 0));
  ccv_nnc_cmd_t b = f;
  b.cmd = CCV_NNC_HISTOGRAM_BACKWARD;
  for (uint64_t i = 0; i < 8; i++)
    for (uint64_t o = 0; o < 4; o++) EXPECT_FALSE(bm(b, 3, i, 2, o)) << i << " " << o;
  int even[7], logs[6], bins[5];
  float stats[4];
  ASSERT_EQ(nnc_test_histogram_example(even, logs, bins, stats), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // x = {-1, 0, 0.5, 1, 2.5, 4, 7, 9}.
  const int we[7] = {1, 2, 1, 1, 0, 3, 0}, wl[6] = {0, 1, 2, 1, 4, 0}, wb[5] = {1, 2, 2, 3, 0};
  for (int i = 0; i < 7; i++) EXPECT_EQ(even[i], we[i]) << i;
  for (int i = 0; i < 6; i++) EXPECT_EQ(logs[i], wl[i]) << i;
  for (int i = 0; i < 5; i++) EXPECT_EQ(bins[i], wb[i]) << i;
  const float ws[4] = {-1, 9, 23, 154.5f};
  for (int i = 0; i < 4; i++) EXPECT_EQ(stats[i], ws[i]) << i;
}

TEST_F(Histogram, BadInputFailsWithAMessage) {
  T x(CCV_32F, {10}), h(CCV_32S, {7}), hf(CCV_32F, {7}), h6(CCV_32S, {6}), s(CCV_32F, {4}), s64(CCV_64F, {4});
  T s3(CCV_32F, {3}), xi(CCV_32S, {10}), edges(CCV_32F, {5}), h7(CCV_32S, {7});
  for (size_t i = 0; i < x.count(); i++) x.set(i, i);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {h, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {h6}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("must be [7]")) << ccv_nnc_error_message();
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {hf}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {h, s64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {h, s3}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {xi}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 4, 0), {x}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("min < max")) << ccv_nnc_error_message();
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 0, 0, 4), {x}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, NAN, 4), {x}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 0, 4, 2), {x}, {h6}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 1, 4, 1), {x}, {h6}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("rate > 1")) << ccv_nnc_error_message();
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_LOGARITHMIC, 0, 1, 4, 2), {x}, {h6}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(run(hist(7), {x}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("histogram.type")) << ccv_nnc_error_message();
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_BINS), {x}, {h7}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("edges")) << ccv_nnc_error_message();
  for (int i = 0; i < 5; i++) edges.set(i, i == 3 ? -1 : i);
  for (size_t i = 0; i < h7.count(); i++) h7.set(i, 42);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_BINS), {x, edges}, {h7}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("ascend")) << ccv_nnc_error_message();
  for (size_t i = 0; i < h7.count(); i++) EXPECT_EQ(h7.get(i), 42) << "h written on a refused call";
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {nullptr}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4), {x}, {nullptr}), CCV_NNC_EXEC_INVALID);
  ccv_nnc_cmd_t b = hist(CCV_NNC_HISTOGRAM_EVEN, 4, 0, 4);
  b.cmd = CCV_NNC_HISTOGRAM_BACKWARD;
  EXPECT_EQ(run(b, {h}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("no gradient")) << ccv_nnc_error_message();
}

}  // namespace
