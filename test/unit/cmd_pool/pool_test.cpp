// MAX_POOL and AVERAGE_POOL against references written here in double,
// finite differences in fp64, the tie rule, CPU_REF against CPU_OPT, shapes
// and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "pool_easy.h"

using namespace cmdtest;

namespace {

class Pool : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

struct Case {
  int N, H, W, C, KH, KW;
  int SH = 1, SW = 1, PT = 0, PB = 0, PL = 0, PR = 0;
  int format = NHWC;
  bool batched = true;
  int OH() const { return (H + PT + PB - KH) / SH + 1; }
  int OW() const { return (W + PL + PR - KW) / SW + 1; }
  std::vector<int> img(int n, int h, int w, int c) const {
    std::vector<int> d = format == NHWC ? std::vector<int>{n, h, w, c} : std::vector<int>{n, c, h, w};
    if (!batched) d.erase(d.begin());
    return d;
  }
  std::vector<int> x_shape() const { return img(N, H, W, C); }
  std::vector<int> y_shape() const { return img(N, OH(), OW(), C); }
  size_t idx(int n, int h, int w, int c, int HH, int WW) const {
    if (format == NHWC) return ((static_cast<size_t>(n) * HH + h) * WW + w) * C + c;
    return ((static_cast<size_t>(n) * C + c) * HH + h) * WW + w;
  }
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t h = {};
    h.stride.dim[0] = SH, h.stride.dim[1] = SW;
    h.border.begin[0] = PT, h.border.end[0] = PB, h.border.begin[1] = PL, h.border.end[1] = PR;
    return h;
  }
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = 0) const {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.size.dim[0] = KH, p.size.dim[1] = KW, p.size.dim[2] = 1;
    ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
    c.backend = backend;
    return c;
  }
};

// Forward in double; `arg` gets each output's chosen input index (max) or -1.
std::vector<double> reference(const Case& c, const T& x, bool max, std::vector<size_t>* arg = nullptr) {
  const int OH = c.OH(), OW = c.OW();
  std::vector<double> y(static_cast<size_t>(c.N) * OH * OW * c.C);
  if (arg) arg->assign(y.size(), 0);
  for (int n = 0; n < c.N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++)
        for (int ch = 0; ch < c.C; ch++) {
          double best = -INFINITY, sum = 0;
          size_t where = 0;
          int count = 0;
          for (int kh = 0; kh < c.KH; kh++)
            for (int kw = 0; kw < c.KW; kw++) {
              const int h = oh * c.SH - c.PT + kh, w = ow * c.SW - c.PL + kw;
              if (h < 0 || w < 0 || h >= c.H || w >= c.W) continue;
              const size_t i = c.idx(n, h, w, ch, c.H, c.W);
              const double v = x.get(i);
              if (count == 0 || v > best) best = v, where = i;
              sum += v, count++;
            }
          const size_t o = c.idx(n, oh, ow, ch, OH, OW);
          y[o] = max ? best : sum / count;
          if (arg) (*arg)[o] = where;
        }
  return y;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int format : {NHWC, NCHW}) {
    Case a{2, 8, 8, 3, 2, 2};
    a.SH = a.SW = 2, a.format = format;
    cs.push_back(a);
    Case b{1, 7, 9, 5, 3, 3};
    b.SH = 2, b.SW = 2, b.PT = b.PB = b.PL = b.PR = 1, b.format = format;
    cs.push_back(b);
    Case o{2, 6, 5, 4, 3, 2};  // overlapping windows, uneven padding
    o.PT = 2, o.PB = 0, o.PL = 0, o.PR = 1, o.format = format;
    cs.push_back(o);
    Case u{1, 5, 7, 17, 2, 3};
    u.SH = 1, u.SW = 3, u.batched = false, u.format = format;
    cs.push_back(u);
  }
  return cs;
}

void check_forward(const Case& c, bool max, int dt, bool views, uint32_t backend, double tol, std::mt19937& rng) {
  T x = views ? T::view(dt, c.x_shape(), c.format) : T(dt, c.x_shape(), c.format);
  T y = views ? T::view(dt, c.y_shape(), c.format) : T(dt, c.y_shape(), c.format);
  if (dt == CCV_16F || dt == CCV_16BF)
    fill_random(x, rng);
  else
    fill_uniform(x, rng);
  const uint32_t id = max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD;
  ASSERT_EQ(run_hint(c.cmd(id, backend), c.hint(), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const std::vector<double> want = reference(c, x, max);
  double worst = 0;
  for (size_t i = 0; i < want.size(); i++)
    worst = std::max(worst, std::fabs(y.get(i) - want[i]) / std::max(1.0, std::fabs(want[i])));
  EXPECT_LE(worst, tol) << (max ? "max" : "average") << " " << c.H << "x" << c.W << " window " << c.KH << "x" << c.KW;
  EXPECT_TRUE(y.guard_intact());
}

TEST_F(Pool, ForwardMatchesDefinition) {
  std::mt19937 rng(1);
  for (const Case& c : cases())
    for (bool max : {true, false})
      for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), 0u}) {
        check_forward(c, max, CCV_64F, false, backend, 1e-15, rng);
        check_forward(c, max, CCV_32F, true, backend, 1e-6, rng);
      }
}

TEST_F(Pool, ForwardHalfAndBfloatRef) {
  std::mt19937 rng(2);
  Case c{1, 6, 6, 3, 3, 3};
  c.SH = c.SW = 2, c.PT = c.PL = 1;
  for (bool max : {true, false}) {
    check_forward(c, max, CCV_16F, false, CCV_NNC_BACKEND_CPU_REF, 1e-3, rng);
    check_forward(c, max, CCV_16BF, false, CCV_NNC_BACKEND_CPU_REF, 8e-3, rng);
  }
}

TEST_F(Pool, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  for (const Case& c : cases()) {
    if (c.C > 8) continue;  // keep the O(n) forward runs small
    for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), 0u}) {
      T x(CCV_64F, c.x_shape(), c.format);
      fill_uniform(x, rng);  // distinct values: no ties within eps
      expect_gradients_match(c.cmd(CCV_NNC_MAX_POOL_FORWARD, backend), c.cmd(CCV_NNC_MAX_POOL_BACKWARD, backend),
                             c.hint(), {&x}, {c.y_shape()}, {true}, rng, 1e-7, 1e-6, c.format);
      expect_gradients_match(c.cmd(CCV_NNC_AVERAGE_POOL_FORWARD, backend),
                             c.cmd(CCV_NNC_AVERAGE_POOL_BACKWARD, backend), c.hint(), {&x}, {c.y_shape()}, {true},
                             rng, 1e-6, 1e-6, c.format);
    }
  }
}

// Ties: the first maximum in row-major window order takes the whole gradient;
// overlapping windows add. Checked on integer-valued inputs with many ties.
TEST_F(Pool, MaxBackwardTiesGoToTheFirstMaximum) {
  std::mt19937 rng(4);
  for (const Case& c : cases())
    for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), 0u}) {
      T x(CCV_32F, c.x_shape(), c.format), y(CCV_32F, c.y_shape(), c.format), g(CCV_32F, c.y_shape(), c.format);
      T dx(CCV_32F, c.x_shape(), c.format);
      std::uniform_int_distribution<int> d(0, 2);
      for (size_t i = 0; i < x.count(); i++) x.set(i, d(rng));
      fill_random(g, rng);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_FORWARD, backend), c.hint(), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_BACKWARD, backend), c.hint(), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      std::vector<size_t> arg;
      reference(c, x, true, &arg);
      std::vector<double> want(x.count(), 0.0);
      for (size_t o = 0; o < arg.size(); o++) want[arg[o]] += g.get(o);
      for (size_t i = 0; i < want.size(); i++) ASSERT_EQ(dx.get(i), want[i]) << "element " << i;
    }
}

TEST_F(Pool, MaxNanWins) {
  for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), 0u}) {
    Case c{1, 2, 2, 1, 2, 2};
    T x(CCV_32F, c.x_shape()), y(CCV_32F, c.y_shape()), g(CCV_32F, c.y_shape()), dx(CCV_32F, c.x_shape());
    x.set(0, 1), x.set(1, NAN), x.set(2, 5), x.set(3, NAN);
    g.set(0, 3);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_FORWARD, backend), c.hint(), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_TRUE(std::isnan(y.get(0)));
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_BACKWARD, backend), c.hint(), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(dx.get(0), 0);
    EXPECT_EQ(dx.get(1), 3);
    EXPECT_EQ(dx.get(2), 0);
    EXPECT_EQ(dx.get(3), 0);
  }
}

TEST_F(Pool, AverageExcludesPadding) {
  Case c{1, 2, 2, 1, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  T x(CCV_32F, c.x_shape()), y(CCV_32F, c.y_shape());
  for (int i = 0; i < 4; i++) x.set(i, i + 1);
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_AVERAGE_POOL_FORWARD), c.hint(), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 4; i++) EXPECT_EQ(y.get(i), 2.5);  // every window holds all four elements
}

TEST_F(Pool, ShapesAndMacros) {
  Case c{4, 28, 27, 32, 2, 2};
  c.SH = c.SW = 2;
  for (int format : {NHWC, NCHW}) {
    c.format = format;
    ccv_nnc_tensor_param_t in = param(CCV_32F, c.x_shape(), format), out;
    ccv_nnc_hint_tensor_auto(c.cmd(CCV_NNC_MAX_POOL_FORWARD), &in, 1, c.hint(), &out, 1);
    const std::vector<int> want = c.y_shape();
    for (int i = 0; i < 4; i++) EXPECT_EQ(out.dim[i], want[i]);
    // libnnc's backward rule: dx grows from g through the window, (g - 1) * stride
    // - padding + window, whatever x is: 14 -> 28 rows, 13 -> 26 columns (x has 27).
    ccv_nnc_tensor_param_t bin[3] = {out, in, out}, bout;
    for (uint32_t id : {CCV_NNC_MAX_POOL_BACKWARD, CCV_NNC_AVERAGE_POOL_BACKWARD}) {
      ccv_nnc_hint_tensor_auto(c.cmd(id), bin, 3, c.hint(), &bout, 1);
      EXPECT_EQ(bout.dim[4], 0);
      EXPECT_EQ(std::vector<int>(bout.dim, bout.dim + 4), c.img(4, 28, 26, 32));
      EXPECT_EQ(bout.format, format);
    }
    Case p = c;
    p.PT = 1, p.PB = 0, p.PL = 1, p.PR = 1, p.SH = 3, p.SW = 1, p.KH = 3, p.KW = 2;
    ccv_nnc_tensor_param_t g = param(CCV_32F, p.img(4, 5, 7, 32), format);
    ccv_nnc_hint_tensor_auto(p.cmd(CCV_NNC_MAX_POOL_BACKWARD), &g, 1, p.hint(), &bout, 1);
    EXPECT_EQ(std::vector<int>(bout.dim, bout.dim + 4), p.img(4, 4 * 3 - 1 + 3, 6 * 1 - 2 + 2, 32));
  }
  // libnnc's bitmasks: the forward x; MAX_POOL's backward |g|x|y|, AVERAGE_POOL's g.
  auto bm = [&](uint32_t id, int ni, uint64_t in, uint64_t out) {
    return ccv_nnc_cmd_bitmask(c.cmd(id), ni, 1, &in, 1, &out, 1);
  };
  for (uint32_t id : {CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_AVERAGE_POOL_FORWARD}) {
    EXPECT_TRUE(bm(id, 1, 1, 1));
    EXPECT_FALSE(bm(id, 1, 0, 1));
    EXPECT_FALSE(bm(id, 1, 1, 0));
  }
  EXPECT_TRUE(bm(CCV_NNC_MAX_POOL_BACKWARD, 3, 0b111, 1));
  EXPECT_FALSE(bm(CCV_NNC_MAX_POOL_BACKWARD, 3, 0b011, 1));
  EXPECT_FALSE(bm(CCV_NNC_MAX_POOL_BACKWARD, 3, 0b101, 1));
  EXPECT_TRUE(bm(CCV_NNC_AVERAGE_POOL_BACKWARD, 3, 0b001, 1));
  EXPECT_TRUE(bm(CCV_NNC_AVERAGE_POOL_BACKWARD, 1, 0b1, 1));
  EXPECT_FALSE(bm(CCV_NNC_AVERAGE_POOL_BACKWARD, 3, 0b110, 1));
  for (uint32_t id : {CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_MAX_POOL_BACKWARD, CCV_NNC_AVERAGE_POOL_FORWARD,
                      CCV_NNC_AVERAGE_POOL_BACKWARD})
    for (int i = 0; i < 3; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c.cmd(id), i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c.cmd(id), i, 3, 0, 1));
    }
  EXPECT_EQ(nnc_test_max_pool_forward().cmd, static_cast<uint32_t>(CCV_NNC_MAX_POOL_FORWARD));
  EXPECT_EQ(nnc_test_max_pool_forward().info.size.dim[0], 3);
  EXPECT_EQ(nnc_test_max_pool_forward().info.size.dim[1], 2);
  EXPECT_EQ(nnc_test_max_pool_backward().cmd, static_cast<uint32_t>(CCV_NNC_MAX_POOL_BACKWARD));
  EXPECT_EQ(nnc_test_avg_pool_forward().cmd, static_cast<uint32_t>(CCV_NNC_AVERAGE_POOL_FORWARD));
  EXPECT_EQ(nnc_test_avg_pool_backward().cmd, static_cast<uint32_t>(CCV_NNC_AVERAGE_POOL_BACKWARD));
  EXPECT_EQ(nnc_test_avg_pool_backward().info.size.dim[1], 3);
  float y[4];
  ASSERT_EQ(nnc_test_max_pool_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(y[0], 5);
  EXPECT_EQ(y[1], 7);
  EXPECT_EQ(y[2], 13);
  EXPECT_EQ(y[3], 15);
}

TEST_F(Pool, DerivesHint) {
  // 8x8 -> 4x4 with a 2x2 window: stride 2 without ccv_nnc_hint.
  Case c{1, 8, 8, 3, 2, 2};
  c.SH = c.SW = 2;
  T x(CCV_32F, c.x_shape()), y(CCV_32F, c.y_shape()), y2(CCV_32F, c.y_shape()), dx(CCV_32F, c.x_shape()),
      dx2(CCV_32F, c.x_shape());
  std::mt19937 rng(5);
  fill_uniform(x, rng);
  ASSERT_EQ(run(c.cmd(CCV_NNC_MAX_POOL_FORWARD), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_FORWARD), c.hint(), {x}, {y2}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(max_rel_diff(y, y2), 0);
  ASSERT_EQ(run(c.cmd(CCV_NNC_MAX_POOL_BACKWARD), {y, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_MAX_POOL_BACKWARD), c.hint(), {y, x, y}, {dx2}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(max_rel_diff(dx, dx2), 0);
  ASSERT_EQ(run(c.cmd(CCV_NNC_AVERAGE_POOL_BACKWARD), {y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_AVERAGE_POOL_BACKWARD), c.hint(), {y}, {dx2}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(max_rel_diff(dx, dx2), 0);
}

// CPU_OPT against CPU_REF, fp32: channel counts around the vector width (the
// channels-inner NHWC path and its tail), NCHW planes including the 2x2
// stride-2 vector case (rows of 16+ and odd extents with bottom padding),
// strided views as inputs, overlapping windows, 3-d tensors.
TEST_F(Pool, OptMatchesRef) {
  std::mt19937 rng(6);
  std::vector<Case> cs = cases();
  for (int format : {NHWC, NCHW}) {
    Case a{2, 34, 37, 19, 2, 2};
    a.SH = a.SW = 2, a.PB = a.PR = 1, a.format = format;
    cs.push_back(a);
    Case b{3, 32, 40, 8, 2, 2};
    b.SH = b.SW = 2, b.format = format;
    cs.push_back(b);
    Case t{2, 28, 28, 5, 2, 2};  // windows tile the image: dx stored, not added
    t.SH = t.SW = 2, t.format = format;
    cs.push_back(t);
    Case o{2, 9, 11, 70, 3, 3};
    o.SH = o.SW = 2, o.PT = o.PL = 1, o.PB = o.PR = 2, o.format = format;
    cs.push_back(o);
    Case u{1, 13, 12, 33, 3, 2};
    u.SH = 1, u.SW = 1, u.PT = 1, u.batched = false, u.format = format;
    cs.push_back(u);
    Case w{3, 6, 10, 37, 2, 2};  // tiling 2x2 with whole vectors of 8 and 16 channels and a tail
    w.SH = w.SW = 2, w.format = format;
    cs.push_back(w);
    Case v{2, 7, 6, 21, 2, 2};  // 2x2 windows overlapping (stride 1), clipped by padding
    v.PB = v.PR = 1, v.format = format;
    cs.push_back(v);
  }
  const uint32_t opt = CCV_NNC_BACKEND_CPU_OPT;
  for (const Case& c : cs)
    for (bool views : {false, true}) {
      T x = views ? T::view(CCV_32F, c.x_shape(), c.format) : T(CCV_32F, c.x_shape(), c.format);
      T g = views ? T::view(CCV_32F, c.y_shape(), c.format) : T(CCV_32F, c.y_shape(), c.format);
      // Integer values in a small range: many ties in every window.
      std::uniform_int_distribution<int> d(-3, 3);
      for (size_t i = 0; i < x.count(); i++) x.set(i, d(rng));
      fill_uniform(g, rng);
      expect_backends_agree(c.cmd(CCV_NNC_MAX_POOL_FORWARD), c.hint(), {x}, {c.y_shape()}, CCV_32F, opt, 0, c.format);
      expect_backends_agree(c.cmd(CCV_NNC_AVERAGE_POOL_FORWARD), c.hint(), {x}, {c.y_shape()}, CCV_32F, opt, 1e-6,
                            c.format);
      expect_backends_agree(c.cmd(CCV_NNC_MAX_POOL_BACKWARD), c.hint(), {g, x, nullptr}, {c.x_shape()}, CCV_32F, opt,
                            1e-6, c.format);  // overlapping windows add in fp32 (REF: in double)
      expect_backends_agree(c.cmd(CCV_NNC_AVERAGE_POOL_BACKWARD), c.hint(), {g}, {c.x_shape()}, CCV_32F, opt, 1e-6,
                            c.format);
    }
}

// NaN in the 2x2 stride-2 vector case and the channels-inner path (whole
// vectors, a channel tail, and windows other than 2x2): the first NaN of the
// window wins and takes the gradient.
TEST_F(Pool, OptNanRule) {
  std::vector<Case> cs;
  for (int format : {NHWC, NCHW}) {
    Case a{1, 2, 32, 16, 2, 2};
    a.SH = a.SW = 2, a.format = format;
    cs.push_back(a);
    Case b{2, 4, 6, 19, 2, 2};
    b.SH = b.SW = 2, b.format = format;
    cs.push_back(b);
    Case o{1, 5, 7, 19, 3, 3};
    o.SH = o.SW = 2, o.PT = o.PB = o.PL = o.PR = 1, o.format = format;
    cs.push_back(o);
  }
  for (const Case& c : cs) {
    const int format = c.format;
    T x(CCV_32F, c.x_shape(), format), g(CCV_32F, c.y_shape(), format);
    std::mt19937 rng(7);
    fill_uniform(x, rng);
    fill_uniform(g, rng);
    for (size_t i = 0; i < x.count(); i += 7) x.set(i, NAN);
    const uint32_t opt = CCV_NNC_BACKEND_CPU_OPT;
    expect_backends_agree(c.cmd(CCV_NNC_MAX_POOL_FORWARD), c.hint(), {x}, {c.y_shape()}, CCV_32F, opt, 0, format);
    // Overlapping windows add in fp32 (REF: in double).
    const double tol = c.KH > c.SH || c.KW > c.SW ? 1e-6 : 0;
    expect_backends_agree(c.cmd(CCV_NNC_MAX_POOL_BACKWARD), c.hint(), {g, x}, {c.x_shape()}, CCV_32F, opt, tol, format);
  }
}

TEST_F(Pool, BadInput) {
  Case c{1, 6, 6, 2, 2, 2};
  c.SH = c.SW = 2;
  T x(CCV_32F, c.x_shape()), y(CCV_32F, c.y_shape()), y4(CCV_32F, {1, 4, 4, 2}), yd(CCV_64F, c.y_shape());
  T flat(CCV_32F, {36, 2}), dx(CCV_32F, c.x_shape()), xn(CCV_32F, {1, 2, 6, 6}, NCHW), i32(CCV_32S, c.x_shape());
  const ccv_nnc_hint_t h = c.hint();
  const ccv_nnc_cmd_t mf = c.cmd(CCV_NNC_MAX_POOL_FORWARD), mb = c.cmd(CCV_NNC_MAX_POOL_BACKWARD);
  const ccv_nnc_cmd_t af = c.cmd(CCV_NNC_AVERAGE_POOL_FORWARD), ab = c.cmd(CCV_NNC_AVERAGE_POOL_BACKWARD);
  EXPECT_EQ(run_hint(mf, h, {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(run_hint(mf, h, {x, x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(mf, h, {x}, {y, y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(mf, h, {x}, {y4}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("1x4x4x2"));
  EXPECT_EQ(run_hint(af, h, {x}, {yd}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(af, h, {flat}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(af, h, {xn}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(mf, h, {i32}, {y}), CCV_NNC_EXEC_INVALID);
  ccv_nnc_hint_t bad = h;
  bad.border.begin[0] = 2;  // padding as large as the window
  EXPECT_EQ(run_hint(mf, bad, {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("smaller than"));
  bad = h;
  bad.stride.dim[1] = -2;
  EXPECT_EQ(run_hint(mf, bad, {x}, {y}), CCV_NNC_EXEC_INVALID);
  ccv_nnc_cmd_t zero = mf;
  zero.info.size.dim[0] = 0;
  EXPECT_EQ(run_hint(zero, h, {x}, {y}), CCV_NNC_EXEC_INVALID);
  T big(CCV_32F, {1, 8, 8, 2});
  EXPECT_EQ(run_hint(mf, h, {x}, {big}), CCV_NNC_EXEC_INVALID);
  // Backward: max needs x; shapes must agree.
  EXPECT_EQ(run_hint(mb, h, {y, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(run_hint(mb, h, {y}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("inputs"));
  EXPECT_EQ(run_hint(mb, h, {y, nullptr, y}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(mb, h, {y, x, y4}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(mb, h, {y, x, y}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(ab, h, {y}, {dx}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(run_hint(ab, h, {y4}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(ab, h, {y}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(ab, h, {y, big}, {dx}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
