// CONVOLUTION against a reference written here in double, finite differences
// in fp64, CPU_REF against CPU_OPT, shapes and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "convolution_easy.h"

using namespace cmdtest;

namespace {

class Conv : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

// One problem, described the way a test states it.
struct Case {
  int N, H, W, C, K, KH, KW;
  int SH = 1, SW = 1, PT = 0, PB = 0, PL = 0, PR = 0, DH = 1, DW = 1, G = 1;
  int format = NHWC;
  bool bias = true;
  bool batched = true;
  int OH() const { return (H + PT + PB - ((KH - 1) * DH + 1)) / SH + 1; }
  int OW() const { return (W + PL + PR - ((KW - 1) * DW + 1)) / SW + 1; }
  std::vector<int> img(int n, int h, int w, int c) const {
    std::vector<int> d = format == NHWC ? std::vector<int>{n, h, w, c} : std::vector<int>{n, c, h, w};
    if (!batched) d.erase(d.begin());
    return d;
  }
  std::vector<int> x_shape() const { return img(N, H, W, C); }
  std::vector<int> y_shape() const { return img(N, OH(), OW(), K); }
  std::vector<int> w_shape() const {
    return format == NHWC ? std::vector<int>{K, KH, KW, C / G} : std::vector<int>{K, C / G, KH, KW};
  }
  // Row-major linear indices of the logical elements.
  size_t xi(int n, int h, int w, int c, int HH, int WW, int CC) const {
    if (format == NHWC) return ((static_cast<size_t>(n) * HH + h) * WW + w) * CC + c;
    return ((static_cast<size_t>(n) * CC + c) * HH + h) * WW + w;
  }
  size_t wi(int k, int kh, int kw, int c) const {
    const int Cg = C / G;
    if (format == NHWC) return ((static_cast<size_t>(k) * KH + kh) * KW + kw) * Cg + c;
    return ((static_cast<size_t>(k) * Cg + c) * KH + kh) * KW + kw;
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
    p.size.dim[0] = KH, p.size.dim[1] = KW, p.size.dim[2] = C;
    p.convolution.count = K;
    p.convolution.groups = G;
    p.convolution.dilation[0] = DH, p.convolution.dilation[1] = DW;
    ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
    c.backend = backend;
    return c;
  }
};

// y in double straight from the definition.
std::vector<double> reference(const Case& c, const T& x, const T& w, const T* b) {
  const int OH = c.OH(), OW = c.OW(), Cg = c.C / c.G, Kg = c.K / c.G;
  std::vector<double> y(static_cast<size_t>(c.N) * OH * OW * c.K);
  for (int n = 0; n < c.N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++)
        for (int k = 0; k < c.K; k++) {
          double s = b ? b->get(static_cast<size_t>(k)) : 0;
          for (int kh = 0; kh < c.KH; kh++)
            for (int kw = 0; kw < c.KW; kw++) {
              const int ih = oh * c.SH - c.PT + kh * c.DH, iw = ow * c.SW - c.PL + kw * c.DW;
              if (ih < 0 || iw < 0 || ih >= c.H || iw >= c.W) continue;
              for (int ci = 0; ci < Cg; ci++)
                s += x.get(c.xi(n, ih, iw, (k / Kg) * Cg + ci, c.H, c.W, c.C)) * w.get(c.wi(k, kh, kw, ci));
            }
          y[c.xi(n, oh, ow, k, OH, OW, c.K)] = s;
        }
  return y;
}

T make(int dt, const std::vector<int>& shape, int format, bool view) {
  return view ? T::view(dt, shape, format) : T(dt, shape, format);
}

void check_forward(const Case& c, int dt, bool views, uint32_t backend, double tol, std::mt19937& rng,
                   bool no_hint = false) {
  T x = make(dt, c.x_shape(), c.format, views), w = make(dt, c.w_shape(), c.format, views);
  T b = make(dt, {c.K}, c.format, views), y = make(dt, c.y_shape(), c.format, views);
  if (dt == CCV_16F || dt == CCV_16BF) {
    fill_random(x, rng), fill_random(w, rng), fill_random(b, rng);
  } else {
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
  }
  std::vector<ccv_nnc_tensor_t*> in = {x, w};
  if (c.bias) in.push_back(b);
  const ccv_nnc_hint_t h = no_hint ? ccv_nnc_no_hint : c.hint();
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend), h, in, {y}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  const std::vector<double> want = reference(c, x, w, c.bias ? &b : nullptr);
  double worst = 0;
  for (size_t i = 0; i < want.size(); i++)
    worst = std::max(worst, std::fabs(y.get(i) - want[i]) / std::max(1.0, std::fabs(want[i])));
  EXPECT_LE(worst, tol) << "N" << c.N << " " << c.H << "x" << c.W << " C" << c.C << " K" << c.K << " " << c.KH << "x"
                        << c.KW << " G" << c.G;
  EXPECT_TRUE(y.guard_intact());
}

std::vector<Case> forward_cases() {
  std::vector<Case> cs;
  for (int format : {NHWC, NCHW}) {
    Case a{2, 7, 6, 3, 4, 3, 3};
    a.PT = a.PB = a.PL = a.PR = 1;
    a.format = format;
    cs.push_back(a);
    Case s{1, 9, 8, 4, 6, 3, 2};
    s.SH = 2, s.SW = 3, s.PT = 2, s.PB = 0, s.PL = 0, s.PR = 1, s.G = 2, s.format = format, s.bias = false;
    cs.push_back(s);
    Case d{2, 8, 9, 2, 3, 3, 3};
    d.DH = 2, d.DW = 3, d.PT = 1, d.PB = 2, d.PL = 2, d.PR = 1, d.format = format;
    cs.push_back(d);
    Case u{1, 5, 5, 6, 6, 1, 1};
    u.G = 3, u.batched = false, u.format = format;
    cs.push_back(u);
    Case big{1, 4, 4, 2, 3, 5, 5};  // padding larger than the image
    big.PT = big.PB = big.PL = big.PR = 4, big.format = format;
    cs.push_back(big);
  }
  return cs;
}

TEST_F(Conv, ForwardMatchesDefinitionRef) {
  std::mt19937 rng(1);
  for (const Case& c : forward_cases()) {
    check_forward(c, CCV_64F, false, CCV_NNC_BACKEND_CPU_REF, 1e-12, rng);
    check_forward(c, CCV_32F, true, CCV_NNC_BACKEND_CPU_REF, 1e-5, rng);
  }
}

TEST_F(Conv, ForwardHalfAndBfloatRef) {
  std::mt19937 rng(2);
  Case c{1, 5, 4, 3, 2, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  // Sums of products of multiples of 1/64 in [-8, 8]: rounded once on store.
  check_forward(c, CCV_16F, false, CCV_NNC_BACKEND_CPU_REF, 1e-3, rng);
  check_forward(c, CCV_16BF, false, CCV_NNC_BACKEND_CPU_REF, 8e-3, rng);
}

TEST_F(Conv, ForwardDerivesHintWithDilation) {
  std::mt19937 rng(3);
  Case c{1, 9, 9, 2, 3, 3, 3};
  c.DH = c.DW = 2, c.PT = c.PL = 2, c.PB = c.PR = 2;  // "same" output for a dilated 3x3
  ASSERT_EQ(c.OH(), 9);
  check_forward(c, CCV_64F, false, CCV_NNC_BACKEND_CPU_REF, 1e-12, rng, /*no_hint=*/true);
  Case s{1, 8, 8, 2, 2, 3, 3};
  s.SH = s.SW = 2, s.PT = s.PL = 0, s.PB = s.PR = 1;  // 8 -> 4 with stride 2
  ASSERT_EQ(s.OH(), 4);
  check_forward(s, CCV_64F, false, CCV_NNC_BACKEND_CPU_REF, 1e-12, rng, /*no_hint=*/true);
}

TEST_F(Conv, BackwardDerivesHintWithDilation) {
  std::mt19937 rng(9);
  Case c{2, 9, 8, 3, 4, 3, 3};
  c.DH = c.DW = 2, c.PT = c.PL = c.PB = c.PR = 2;
  for (uint32_t backend :
       {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT)}) {
    T x(CCV_32F, c.x_shape()), w(CCV_32F, c.w_shape()), g(CCV_32F, c.y_shape());
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
    T dx(CCV_32F, c.x_shape()), dw(CCV_32F, c.w_shape()), dx2(CCV_32F, c.x_shape()), dw2(CCV_32F, c.w_shape());
    const ccv_nnc_cmd_t bk = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend);
    ASSERT_EQ(run_hint(bk, c.hint(), {g, x, w}, {dx, dw}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(bk, {g, x, w}, {dx2, dw2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(dx2, dx), 0);
    EXPECT_EQ(max_rel_diff(dw2, dw), 0);
  }
}

TEST_F(Conv, WeightsInTheirOwnFormat) {
  // NHWC data with NCHW (K, C, KH, KW) weights gives the same result, and the
  // same gradients (dw in the weights' format), as the same weights stored
  // NHWC: on CPU_REF in fp64 and on CPU_OPT in fp32.
  std::mt19937 rng(4);
  Case c{2, 5, 6, 3, 18, 3, 2};
  c.PT = c.PL = 1;
  for (int dt : {CCV_64F, CCV_32F}) {
    const uint32_t backend = dt == CCV_64F ? CCV_NNC_BACKEND_CPU_REF : CCV_NNC_BACKEND_CPU_OPT;
    T x(dt, c.x_shape(), NHWC), w(dt, c.w_shape(), NHWC), wc(dt, {c.K, 3, 3, 2}, NCHW), g(dt, c.y_shape(), NHWC);
    T y(dt, c.y_shape(), NHWC), y2(dt, c.y_shape(), NHWC);
    T dx(dt, c.x_shape(), NHWC), dx2(dt, c.x_shape(), NHWC), dw(dt, c.w_shape(), NHWC), dwc(dt, {c.K, 3, 3, 2}, NCHW);
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
    auto nchw = [&](int k, int kh, int kw, int ci) { return ((static_cast<size_t>(k) * 3 + ci) * 3 + kh) * 2 + kw; };
    auto nhwc = [&](int k, int kh, int kw, int ci) { return ((static_cast<size_t>(k) * 3 + kh) * 2 + kw) * 3 + ci; };
    for (int k = 0; k < c.K; k++)
      for (int kh = 0; kh < 3; kh++)
        for (int kw = 0; kw < 2; kw++)
          for (int ci = 0; ci < 3; ci++) wc.set(nchw(k, kh, kw, ci), w.get(nhwc(k, kh, kw, ci)));
    const double tol = dt == CCV_64F ? 1e-14 : 1e-6;
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend), c.hint(), {x, w}, {y}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend), c.hint(), {x, wc}, {y2}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    EXPECT_LE(max_rel_diff(y2, y), tol);
    T dw2(dt, c.w_shape(), NHWC);
    const ccv_nnc_cmd_t bk = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend);
    ASSERT_EQ(run_hint(bk, c.hint(), {g, x, w}, {dx, dw}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run_hint(bk, c.hint(), {g, x, wc}, {dx2, dwc}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_LE(max_rel_diff(dx2, dx), tol);
    for (int k = 0; k < c.K; k++)
      for (int kh = 0; kh < 3; kh++)
        for (int kw = 0; kw < 2; kw++)
          for (int ci = 0; ci < 3; ci++) dw2.set(nhwc(k, kh, kw, ci), dwc.get(nchw(k, kh, kw, ci)));
    EXPECT_LE(max_rel_diff(dw2, dw), tol);
  }
}

std::vector<Case> gradient_cases() {
  std::vector<Case> cs;
  for (int format : {NHWC, NCHW}) {
    Case a{2, 5, 4, 2, 3, 3, 3};
    a.PT = a.PB = a.PL = a.PR = 1, a.format = format;
    cs.push_back(a);
    Case s{1, 7, 6, 4, 2, 3, 2};
    s.SH = 2, s.SW = 2, s.PT = 1, s.PR = 1, s.DH = 2, s.G = 2, s.format = format;
    cs.push_back(s);
  }
  return cs;
}

TEST_F(Conv, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(5);
  for (const Case& c : gradient_cases())
    for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), 0u}) {
      T x(CCV_64F, c.x_shape(), c.format), w(CCV_64F, c.w_shape(), c.format), b(CCV_64F, {c.K}, c.format);
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
      expect_gradients_match(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend), c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend),
                             c.hint(), {&x, &w, &b}, {c.y_shape()}, {true, true, true}, rng, 1e-6, 1e-6, c.format);
    }
}

TEST_F(Conv, BackwardOutputsAreOptional) {
  std::mt19937 rng(6);
  Case c{2, 5, 5, 3, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  T x(CCV_64F, c.x_shape()), w(CCV_64F, c.w_shape()), g(CCV_64F, c.y_shape());
  fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
  T dx(CCV_64F, c.x_shape()), dw(CCV_64F, c.w_shape()), db(CCV_64F, {c.K});
  T dx2(CCV_64F, c.x_shape()), dw2(CCV_64F, c.w_shape()), db2(CCV_64F, {c.K});
  const ccv_nnc_cmd_t back = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_REF);
  ASSERT_EQ(run_hint(back, c.hint(), {g, x, w, nullptr, nullptr}, {dx, dw, db}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(back, c.hint(), {g, x, w}, {dx2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(back, c.hint(), {g, x, w}, {nullptr, dw2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run_hint(back, c.hint(), {g, x, w}, {nullptr, nullptr, db2}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(max_rel_diff(dx2, dx), 0);
  EXPECT_EQ(max_rel_diff(dw2, dw), 0);
  EXPECT_EQ(max_rel_diff(db2, db), 0);
  // libnnc's weights-only pattern |g|x| -> |-|dw|dbias| (what a first layer
  // gets when its input needs no gradient): the window comes from dw. REF
  // and OPT, with and without dbias, 2 or 3 input slots.
  for (int backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    const int dt = backend == CCV_NNC_BACKEND_CPU_REF ? CCV_64F : CCV_32F;  // OPT runs fp32
    const double tol = dt == CCV_64F ? 1e-12 : 1e-5;
    const ccv_nnc_cmd_t b = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend);
    T gx(dt, c.y_shape()), xx(dt, c.x_shape());
    for (size_t i = 0; i < g.count(); i++) gx.set(i, g.get(i));
    for (size_t i = 0; i < x.count(); i++) xx.set(i, x.get(i));
    T dw3(dt, c.w_shape()), db3(dt, {c.K}), dw4(dt, c.w_shape());
    ASSERT_EQ(run_hint(b, c.hint(), {gx, xx}, {nullptr, dw3, db3}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run_hint(b, c.hint(), {gx, xx, nullptr}, {nullptr, dw4}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_LT(max_rel_diff(dw3, dw), tol) << backend;
    EXPECT_LT(max_rel_diff(dw4, dw), tol) << backend;
    EXPECT_LT(max_rel_diff(db3, db), tol) << backend;
  }
  // dbias is the sum of g over n, oh, ow.
  for (int k = 0; k < c.K; k++) {
    double s = 0;
    for (size_t i = static_cast<size_t>(k); i < g.count(); i += static_cast<size_t>(c.K)) s += g.get(i);
    EXPECT_NEAR(db.get(static_cast<size_t>(k)), s, 1e-12);
  }
}

// CPU_OPT against CPU_REF: every algorithm (block widths and instruction
// sets; ones this CPU lacks fall back to the default), odd sizes, views,
// both formats, groups, strides, dilation, padding beyond the window.
std::vector<Case> opt_cases() {
  std::vector<Case> cs = forward_cases();
  for (int format : {NHWC, NCHW}) {
    Case wide{2, 11, 13, 5, 37, 3, 3};  // K not a multiple of any block; strips with tails
    wide.PT = wide.PB = wide.PL = wide.PR = 1, wide.format = format;
    cs.push_back(wide);
    Case many{1, 6, 30, 24, 70, 1, 1};  // 1x1 over a long row
    many.format = format;
    cs.push_back(many);
    Case s5{3, 9, 9, 1, 19, 5, 5};  // one input channel, 5x5
    s5.PT = s5.PB = s5.PL = s5.PR = 2, s5.format = format;
    cs.push_back(s5);
    Case s3{2, 7, 23, 1, 12, 3, 3};  // one input channel, 3x3, rows cut into several strips
    s3.PT = s3.PL = 1, s3.PB = 0, s3.PR = 2, s3.format = format;
    cs.push_back(s3);
    Case st{1, 12, 11, 6, 9, 3, 4};  // stride 2 x 3, dilation, groups
    st.SH = 2, st.SW = 3, st.DH = 2, st.G = 3, st.PT = 1, st.PB = 2, st.PL = 3, st.PR = 0, st.format = format;
    cs.push_back(st);
  }
  Case crop{1, 7, 6, 32, 8, 3, 3};  // padding beyond the dilated window: dx's padded g starts cropped
  crop.DH = crop.DW = 2, crop.PT = 5, crop.PB = 1, crop.PL = 5, crop.PR = 2;
  cs.push_back(crop);
  // Winograd's shapes (stride 1, 3x3 or 5x5, at least 16 channels each way):
  // odd extents that cut the last tiles, channels not a multiple of 16,
  // asymmetric padding, and padding past the window (dx's padded g cropped).
  // The default takes Winograd from 768 output pixels (N x OH x OW), so the
  // small ones run it through algorithm 6 and wd3 / wd5 through the default.
  for (int format : {NHWC, NCHW}) {
    Case wd3{4, 15, 14, 17, 20, 3, 3};
    wd3.PT = wd3.PL = 1, wd3.PB = 1, wd3.PR = 1, wd3.format = format;
    cs.push_back(wd3);
    Case wd5{2, 21, 19, 16, 18, 5, 5};
    wd5.PT = wd5.PB = wd5.PL = wd5.PR = 2, wd5.format = format;
    cs.push_back(wd5);
    Case w3{2, 13, 11, 17, 20, 3, 3};
    w3.PT = w3.PL = 1, w3.PB = 2, w3.PR = 0, w3.format = format;
    cs.push_back(w3);
    Case w5{1, 9, 10, 16, 33, 5, 5};
    w5.PT = w5.PB = w5.PL = w5.PR = 2, w5.format = format;
    cs.push_back(w5);
  }
  Case wcrop{1, 6, 7, 24, 18, 3, 3};
  wcrop.PT = 3, wcrop.PB = 0, wcrop.PL = 0, wcrop.PR = 3;
  cs.push_back(wcrop);
  Case threaded{2, 15, 16, 16, 33, 3, 3};  // above the size that goes to the pool (2^20 multiply-adds)
  threaded.PT = threaded.PB = threaded.PL = threaded.PR = 1;
  cs.push_back(threaded);
  return cs;
}

// max |a - ref| over max(1, max |ref|): the error relative to the largest value.
double max_diff_of_largest(const T& a, const T& ref) {
  double d = 0, m = 1;
  for (size_t i = 0; i < a.count() && i < ref.count(); i++)
    d = std::max(d, std::fabs(a.get(i) - ref.get(i))), m = std::max(m, std::fabs(ref.get(i)));
  return std::isnan(d) ? INFINITY : d / m;
}

TEST_F(Conv, OptMatchesRef) {
  std::mt19937 rng(7);
  for (const Case& c : opt_cases())
    for (bool views : {false, true}) {
      T x = make(CCV_32F, c.x_shape(), c.format, views), w = make(CCV_32F, c.w_shape(), c.format, views);
      T b = make(CCV_32F, {c.K}, c.format, views), g = make(CCV_32F, c.y_shape(), c.format, views);
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
      std::vector<ccv_nnc_tensor_t*> in = {x, w};
      if (c.bias) in.push_back(b);
      T y(CCV_32F, c.y_shape(), c.format), dx(CCV_32F, c.x_shape(), c.format), dw(CCV_32F, c.w_shape(), c.format),
          db(CCV_32F, {c.K}, c.format);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), in, {y}), 0);
      ASSERT_EQ(
          run_hint(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {g, x, w}, {dx, dw, db}), 0);
      // -1 (what ccv_nnc_cmd leaves) and 7 (past the table) are the default:
      // the same bits as algorithm 0.
      std::vector<T> by_default;
      for (int algorithm : {0, 1, 2, 3, 4, 5, 6, -1, 7}) {
        SCOPED_TRACE(testing::Message() << "algorithm " << algorithm << (views ? " views " : " ") << c.N << "x" << c.H
                                        << "x" << c.W << "x" << c.C << " K" << c.K << " " << c.KH << "x" << c.KW << " G"
                                        << c.G << (c.format == NHWC ? " NHWC" : " NCHW"));
        ccv_nnc_cmd_t f = c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
        ccv_nnc_cmd_t bk = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_OPT);
        f.algorithm = bk.algorithm = algorithm;
        T y2(CCV_32F, c.y_shape(), c.format), dx2(CCV_32F, c.x_shape(), c.format), dw2(CCV_32F, c.w_shape(), c.format),
            db2(CCV_32F, {c.K}, c.format);
        // Not what the last algorithm left in memory the allocator hands out again.
        std::mt19937 junk(static_cast<unsigned>(algorithm + 2));
        fill_uniform(y2, junk);
        ASSERT_EQ(run_hint(f, c.hint(), in, {y2}), 0) << ccv_nnc_error_message();
        // Winograd's transforms round more (relative error ~1e-5 of the
        // terms' magnitude instead of ~1e-7); it may run for algorithms 0 and 6.
        const bool winograd = (algorithm <= 0 || algorithm >= 6) && c.SH == 1 && c.SW == 1 && c.DH == 1 &&
                              c.DW == 1 && c.G == 1 && c.KH == c.KW && (c.KH == 3 || c.KH == 5);
        EXPECT_LE(max_rel_diff(y2, y), winograd ? 1e-4 : 1e-5);
        ASSERT_EQ(run_hint(bk, c.hint(), {g, x, w}, {dx2, dw2, db2}), 0) << ccv_nnc_error_message();
        EXPECT_LE(max_rel_diff(dx2, dx), 1e-4);
        // dw sums N x OH x OW products per element; Winograd's error in it
        // scales with the largest such sum (up to ~40 here), so compare
        // against that, not element by element.
        EXPECT_LE(winograd ? max_diff_of_largest(dw2, dw) : max_rel_diff(dw2, dw), 1e-4);
        EXPECT_LE(max_rel_diff(db2, db), 1e-4);
        // Each output alone.
        T dx3(CCV_32F, c.x_shape(), c.format), dw3(CCV_32F, c.w_shape(), c.format), db3(CCV_32F, {c.K}, c.format);
        ASSERT_EQ(run_hint(bk, c.hint(), {g, x, w}, {dx3}), 0) << ccv_nnc_error_message();
        ASSERT_EQ(run_hint(bk, c.hint(), {g, x, w}, {nullptr, dw3}), 0) << ccv_nnc_error_message();
        ASSERT_EQ(run_hint(bk, c.hint(), {g, nullptr, w}, {nullptr, nullptr, db3}), 0) << ccv_nnc_error_message();
        EXPECT_EQ(max_rel_diff(dx3, dx2), 0);
        EXPECT_EQ(max_rel_diff(dw3, dw2), 0);
        EXPECT_LE(max_rel_diff(db3, db), 1e-4);
        if (algorithm == 0) {
          by_default.push_back(std::move(y2)), by_default.push_back(std::move(dx2));
          by_default.push_back(std::move(dw2));
        } else if (algorithm == -1 || algorithm == 7) {
          EXPECT_EQ(max_rel_diff(y2, by_default[0]), 0);
          EXPECT_EQ(max_rel_diff(dx2, by_default[1]), 0);
          EXPECT_EQ(max_rel_diff(dw2, by_default[2]), 0);
        }
      }
    }
}

// One input channel into NCHW output planes, stride 1 (a first layer): the
// direct algorithms write the planes directly, vectorised along the pixels
// (plane1.hpp; blocks of 4 filters x 8 lanes on AVX2, 8 x 16 on AVX-512;
// algorithm 0 the widest set, 1 AVX-512 where the CPU has it, 4 AVX2).
// Against CPU_REF and the double reference: widths that are no multiple of
// the vectors, 1 x 1 images, padding past the window, asymmetric padding,
// dilation, filter counts that leave partial blocks, batch 1 and 7, unbatched
// input, inputs and outputs as strided views (outputs then go row by row),
// problems large enough for the thread pool; the test_cmd_convolution_avx2
// variant runs the AVX2 kernel. Also K = 1 in NHWC, whose output plane is
// the same memory, with a strided (view) NHWC input.
TEST_F(Conv, OptOneChannelPlanes) {
  std::mt19937 rng(11);
  auto pad = [](Case c, int t, int b, int l, int r) {
    c.PT = t, c.PB = b, c.PL = l, c.PR = r;
    return c;
  };
  std::vector<Case> cs = {
      pad({8, 28, 28, 1, 32, 5, 5}, 2, 2, 2, 2),  // the reference network's first layer, 8 images
      pad({7, 28, 28, 1, 32, 5, 5}, 2, 2, 2, 2),  // batch 7: threaded (4.4M multiply-adds)
      pad({1, 13, 17, 1, 5, 5, 5}, 2, 2, 2, 2),   // odd widths, K = 5: one filter past a block of 4
      pad({7, 9, 37, 1, 13, 3, 3}, 1, 1, 1, 1),   // 37 wide: 2 x 16 + 5, 4 x 8 + 5
      pad({1, 1, 1, 1, 3, 5, 5}, 2, 2, 2, 2),     // 1 x 1 image: only the centre tap sees it
      pad({1, 1, 1, 1, 9, 1, 1}, 0, 0, 0, 0),     // 1 x 1 everything
      pad({2, 6, 5, 1, 17, 3, 3}, 4, 3, 5, 4),    // padding past the window on every side
      pad({1, 11, 19, 1, 8, 5, 3}, 0, 3, 1, 0),   // asymmetric window and padding
      pad({2, 15, 14, 1, 11, 3, 3}, 2, 2, 3, 1),  // dilated below
      pad({1, 40, 67, 1, 33, 7, 7}, 3, 3, 3, 3),  // 7 x 7, long rows (several runs), K = 33
      pad({1, 30, 2, 1, 4, 2, 2}, 0, 1, 0, 1),    // 2 wide, even window
      pad({3, 4, 3, 1, 16, 1, 1}, 0, 0, 0, 0),    // 1 x 1 window: 12-pixel planes
  };
  cs[8].DH = 2, cs[8].DW = 3;
  Case unbatched = pad({1, 10, 12, 1, 6, 3, 3}, 1, 1, 1, 1);
  unbatched.batched = false;
  cs.push_back(unbatched);
  for (Case& c : cs) c.format = NCHW;
  Case k1 = pad({3, 9, 11, 1, 1, 3, 3}, 1, 1, 1, 1);  // NHWC, K = 1
  cs.push_back(k1);
  Case nobias = pad({2, 8, 21, 1, 10, 5, 5}, 2, 2, 2, 2);
  nobias.bias = false, nobias.format = NCHW;
  cs.push_back(nobias);
  for (const Case& c : cs)
    for (int views = 0; views < 4; views++) {  // bit 0: x a view, bit 1: y a view
      SCOPED_TRACE(testing::Message() << "views " << views << " N" << c.N << " " << c.H << "x" << c.W << " K" << c.K
                                      << " " << c.KH << "x" << c.KW << " pad " << c.PT << c.PB << c.PL << c.PR
                                      << " dil " << c.DH << "x" << c.DW << (c.format == NHWC ? " NHWC" : " NCHW"));
      T x = make(CCV_32F, c.x_shape(), c.format, views & 1), w(CCV_32F, c.w_shape(), c.format);
      T b(CCV_32F, {c.K}, c.format);
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
      std::vector<ccv_nnc_tensor_t*> in = {x, w};
      if (c.bias) in.push_back(b);
      T ref(CCV_32F, c.y_shape(), c.format), y = make(CCV_32F, c.y_shape(), c.format, views & 2);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), in, {ref}), 0);
      const std::vector<double> want = reference(c, x, w, c.bias ? &b : nullptr);
      // 0: the widest set; 1: AVX-512 where the CPU has it; 4: AVX2.
      for (int algorithm : {0, 1, 4}) {
        SCOPED_TRACE(testing::Message() << "algorithm " << algorithm);
        ccv_nnc_cmd_t f = c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
        f.algorithm = algorithm;
        ASSERT_EQ(run_hint(f, c.hint(), in, {y}), 0) << ccv_nnc_error_message();
        EXPECT_LE(max_rel_diff(y, ref), 1e-5);
        if (views & 2) EXPECT_TRUE(y.guard_intact());
        double worst = 0;
        for (size_t i = 0; i < want.size(); i++)
          worst = std::max(worst, std::fabs(y.get(i) - want[i]) / std::max(1.0, std::fabs(want[i])));
        EXPECT_LE(worst, 1e-5);
        fill_uniform(y, rng);  // no stale result carried to the next algorithm
      }
    }
}

// Outputs of 8 MiB or more go out with streaming stores on AVX-512 (whole
// 16-channel blocks, aligned rows): same values as CPU_REF, every algorithm.
TEST_F(Conv, OptLargeOutputs) {
  std::mt19937 rng(9);
  Case c{2, 64, 65, 1, 272, 3, 3};  // 2 x 64 x 65 x 272 floats = 9 MB; K leaves a partial block
  c.PT = c.PB = c.PL = c.PR = 1;
  T x = make(CCV_32F, c.x_shape(), c.format, false), w = make(CCV_32F, c.w_shape(), c.format, false);
  T b = make(CCV_32F, {c.K}, c.format, false);
  fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
  T y(CCV_32F, c.y_shape(), c.format);
  ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {x, w, b}, {y}), 0);
  for (int algorithm = 0; algorithm < 7; algorithm++) {
    SCOPED_TRACE(testing::Message() << "algorithm " << algorithm);
    ccv_nnc_cmd_t f = c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
    f.algorithm = algorithm;
    T y2(CCV_32F, c.y_shape(), c.format);
    ASSERT_EQ(run_hint(f, c.hint(), {x, w, b}, {y2}), 0) << ccv_nnc_error_message();
    EXPECT_LE(max_rel_diff(y2, y), algorithm == 6 ? 1e-4 : 1e-5);
  }
}

// Outputs written through views leave the rest of their parents alone, and
// the default backend picks CPU_OPT for fp32.
TEST_F(Conv, OptWritesViews) {
  std::mt19937 rng(8);
  for (int format : {NHWC, NCHW}) {
    Case c{2, 7, 9, 6, 10, 3, 3};
    c.PT = c.PB = c.PL = c.PR = 1, c.format = format;
    T x(CCV_32F, c.x_shape(), format), w(CCV_32F, c.w_shape(), format), b(CCV_32F, {c.K}, format);
    T y = T::view(CCV_32F, c.y_shape(), format), g(CCV_32F, c.y_shape(), format);
    T dx = T::view(CCV_32F, c.x_shape(), format), dw = T::view(CCV_32F, c.w_shape(), format);
    T db = T::view(CCV_32F, {c.K}, format);
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_OPT), c.hint(), {x, w, b}, {y}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_OPT), c.hint(), {g, x, w}, {dx, dw, db}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    EXPECT_TRUE(y.guard_intact());
    EXPECT_TRUE(dx.guard_intact());
    EXPECT_TRUE(dw.guard_intact());
    EXPECT_TRUE(db.guard_intact());
    const std::vector<double> want = reference(c, x, w, &b);
    double worst = 0;
    for (size_t i = 0; i < want.size(); i++) worst = std::max(worst, std::fabs(y.get(i) - want[i]));
    EXPECT_LE(worst, 1e-5);
  }
}

TEST_F(Conv, ShapeInference) {
  Case c{8, 28, 27, 3, 16, 5, 5};
  c.SH = 2, c.SW = 2, c.PT = c.PB = c.PL = c.PR = 2, c.DW = 2;
  for (int format : {NHWC, NCHW}) {
    c.format = format;
    ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, c.x_shape(), format), param(CCV_32F, c.w_shape(), format),
                                    param(CCV_32F, {16}, format)};
    ccv_nnc_tensor_param_t out[1];
    ccv_nnc_hint_tensor_auto(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), in, 3, c.hint(), out, 1);
    const std::vector<int> want = c.y_shape();
    for (size_t i = 0; i < 4; i++) EXPECT_EQ(out[0].dim[i], want[i]);
    EXPECT_EQ(out[0].dim[4], 0);
    EXPECT_EQ(out[0].format, format);
    ccv_nnc_tensor_param_t bin[3] = {param(CCV_32F, c.y_shape(), format), in[0], in[1]};
    ccv_nnc_tensor_param_t bout[3];
    ccv_nnc_hint_tensor_auto(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), bin, 3, c.hint(), bout, 3);
    for (int i = 0; i < 4; i++) EXPECT_EQ(bout[0].dim[i], in[0].dim[i]);
    for (int i = 0; i < 4; i++) EXPECT_EQ(bout[1].dim[i], in[1].dim[i]);
    EXPECT_EQ(bout[2].dim[0], 16);
    EXPECT_EQ(bout[2].dim[1], 0);
  }
  // Forward tensor_auto takes the filters' count from the weights (libnnc's rule).
  {
    ccv_nnc_cmd_t other = c.cmd(CCV_NNC_CONVOLUTION_FORWARD);
    other.info.convolution.count = 3;
    ccv_nnc_tensor_param_t in[2] = {param(CCV_32F, {8, 28, 27, 3}), param(CCV_32F, {16, 5, 5, 3})};
    ccv_nnc_tensor_param_t out[1];
    ccv_nnc_hint_tensor_auto(other, in, 2, c.hint(), out, 1);
    EXPECT_EQ(out[0].dim[3], 16);
  }
  // libnnc's bitmasks. Forward: |x|w| with two inputs, |x|w|bias| with three; y.
  auto bm = [&](uint32_t id, int ni, uint64_t in, int no, uint64_t out) {
    return ccv_nnc_cmd_bitmask(c.cmd(id), ni, no, &in, 1, &out, 1);
  };
  const uint32_t F = CCV_NNC_CONVOLUTION_FORWARD, B = CCV_NNC_CONVOLUTION_BACKWARD;
  EXPECT_TRUE(bm(F, 2, 0b11, 1, 1));
  EXPECT_TRUE(bm(F, 3, 0b111, 1, 1));
  EXPECT_FALSE(bm(F, 3, 0b011, 1, 1));
  EXPECT_FALSE(bm(F, 3, 0b001, 1, 1));
  EXPECT_FALSE(bm(F, 2, 0b11, 2, 0b11));
  // Backward |g|x|w|bias|y| -> |dx|dw|dbias|: g, x, w for dx + dw; g, x for dw;
  // g, w for dx; dbias beside any of them; bias and y never needed.
  EXPECT_TRUE(bm(B, 5, 0b00111, 3, 0b111));
  EXPECT_TRUE(bm(B, 5, 0b11111, 3, 0b011));
  EXPECT_TRUE(bm(B, 5, 0b00011, 3, 0b110));
  EXPECT_TRUE(bm(B, 5, 0b00011, 3, 0b010));
  EXPECT_TRUE(bm(B, 5, 0b00101, 3, 0b101));
  EXPECT_TRUE(bm(B, 5, 0b00101, 3, 0b001));
  EXPECT_FALSE(bm(B, 5, 0b00011, 3, 0b001));  // dx needs w
  EXPECT_FALSE(bm(B, 5, 0b00101, 3, 0b010));  // dw needs x
  EXPECT_FALSE(bm(B, 5, 0b00001, 3, 0b100));  // dbias alone is not a libnnc pattern
  EXPECT_FALSE(bm(B, 5, 0b00110, 3, 0b011));  // g is always needed
  EXPECT_FALSE(bm(B, 5, 0b00111, 3, 0b000));
  // No in-place pairs.
  for (uint32_t id : {F, B})
    for (int i = 0; i < 5; i++)
      for (int o = 0; o < 3; o++) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c.cmd(id), i, 5, o, 3));
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c.cmd(id), i, 5, o, 3));
      }
}

// libnnc takes the window from the weights: a backward whose size.dim lists
// the extents in another order (CMD_CONVOLUTION_BACKWARD(1, 4, 2, 3, 5) beside
// 4x5x3x2 weights, as programs written for libnnc pass it) runs, and gives
// what the well-formed command gives; so does the forward.
TEST_F(Conv, WindowComesFromTheWeights) {
  std::mt19937 rng(17);
  Case c{2, 9, 8, 2, 4, 5, 3};
  c.PT = 2, c.PB = 2, c.PL = 1, c.PR = 1;
  ASSERT_EQ(c.w_shape(), (std::vector<int>{4, 5, 3, 2}));
  for (uint32_t backend :
       {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT)}) {
    T x(CCV_32F, c.x_shape()), w(CCV_32F, c.w_shape()), b(CCV_32F, {4}), g(CCV_32F, c.y_shape());
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
    ccv_nnc_cmd_t odd_b = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend);
    odd_b.info.size.dim[0] = 2, odd_b.info.size.dim[1] = 3, odd_b.info.size.dim[2] = 5;
    ccv_nnc_cmd_t odd_f = c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend);
    odd_f.info.size = odd_b.info.size;
    T dx(CCV_32F, c.x_shape()), dw(CCV_32F, c.w_shape()), db(CCV_32F, {4});
    T dx2(CCV_32F, c.x_shape()), dw2(CCV_32F, c.w_shape()), db2(CCV_32F, {4}), y(CCV_32F, c.y_shape()),
        y2(CCV_32F, c.y_shape());
    const ccv_nnc_cmd_t good_b = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, backend);
    ASSERT_EQ(run_hint(good_b, c.hint(), {g, x, w}, {dx, dw, db}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run_hint(odd_b, c.hint(), {g, x, w}, {dx2, dw2, db2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(dx2, dx), 0);
    EXPECT_EQ(max_rel_diff(dw2, dw), 0);
    EXPECT_EQ(max_rel_diff(db2, db), 0);
    // Without a hint the derivation uses the weights' 5x3 window too.
    fill_uniform(dx2, rng), fill_uniform(dw2, rng);
    ASSERT_EQ(run(odd_b, {g, x, w}, {dx2, dw2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(dx2, dx), 0);
    EXPECT_EQ(max_rel_diff(dw2, dw), 0);
    // libnnc's |g|-|w| -> |dx| pattern: x may be absent when dw is not asked for.
    fill_uniform(dx2, rng);
    ASSERT_EQ(run_hint(odd_b, c.hint(), {g, nullptr, w}, {dx2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(dx2, dx), 0);
    EXPECT_EQ(run_hint(odd_b, c.hint(), {g, nullptr, w}, {dx2, dw2}), CCV_NNC_EXEC_INVALID);
    // The backward does not read the filters' count either.
    ccv_nnc_cmd_t no_count = odd_b;
    no_count.info.convolution.count = 0;
    ASSERT_EQ(run_hint(no_count, c.hint(), {g, x, w}, {dx2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(dx2, dx), 0);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, backend), c.hint(), {x, w, b}, {y}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run_hint(odd_f, c.hint(), {x, w, b}, {y2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(y2, y), 0);
    const std::vector<double> want = reference(c, x, w, &b);
    for (size_t i = 0; i < want.size(); i++) ASSERT_NEAR(y2.get(i), want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  }
}

TEST_F(Conv, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_conv_forward();
  EXPECT_EQ(f.cmd, static_cast<uint32_t>(CCV_NNC_CONVOLUTION_FORWARD));
  EXPECT_EQ(f.info.convolution.groups, 2);
  EXPECT_EQ(f.info.convolution.count, 6);
  EXPECT_EQ(f.info.size.dim[0], 3);
  EXPECT_EQ(f.info.size.dim[1], 5);
  EXPECT_EQ(f.info.size.dim[2], 4);
  EXPECT_EQ(nnc_test_conv_backward().cmd, static_cast<uint32_t>(CCV_NNC_CONVOLUTION_BACKWARD));
  float y[4];
  ASSERT_EQ(nnc_test_conv_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(y[0], 1 + 2 + 4 + 5 + 0.5f);
  EXPECT_EQ(y[1], 2 + 3 + 5 + 6 + 0.5f);
  EXPECT_EQ(y[2], 4 + 5 + 7 + 8 + 0.5f);
  EXPECT_EQ(y[3], 5 + 6 + 8 + 9 + 0.5f);
}

TEST_F(Conv, BadInput) {
  Case c{1, 6, 6, 4, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  T x(CCV_32F, c.x_shape()), w(CCV_32F, c.w_shape()), b(CCV_32F, {4}), y(CCV_32F, c.y_shape());
  T xd(CCV_64F, c.x_shape()), y5(CCV_32F, {1, 5, 5, 4}), w2(CCV_32F, {4, 3, 3, 3}), b5(CCV_32F, {5});
  T flat(CCV_32F, {36, 4}), g(CCV_32F, c.y_shape()), dx(CCV_32F, c.x_shape()), dxw(CCV_32F, {1, 6, 5, 4});
  const ccv_nnc_cmd_t f = c.cmd(CCV_NNC_CONVOLUTION_FORWARD), bk = c.cmd(CCV_NNC_CONVOLUTION_BACKWARD);
  const ccv_nnc_hint_t h = c.hint();
  EXPECT_EQ(run_hint(f, h, {x, w, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run_hint(f, h, {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("inputs"));
  EXPECT_EQ(run_hint(f, h, {x, w, b}, {y, y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(f, h, {x, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(f, h, {xd, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("64F"));
  EXPECT_EQ(run_hint(f, h, {x, w, b}, {y5}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("1x5x5x4"));
  EXPECT_EQ(run_hint(f, h, {x, w2, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("channels"));
  EXPECT_EQ(run_hint(f, h, {x, w, b5}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("bias"));
  EXPECT_EQ(run_hint(f, h, {flat, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  ccv_nnc_cmd_t wrong = f;
  wrong.info.convolution.count = 5;
  EXPECT_EQ(run_hint(wrong, h, {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("count"));
  // A y that does not fit the weights' window fails whatever size.dim says.
  EXPECT_EQ(run_hint(f, h, {x, w, b}, {y5}), CCV_NNC_EXEC_INVALID);
  // The backward's g is checked against the weights' window as well.
  EXPECT_EQ(run_hint(bk, h, {y5, x, w}, {dx}), CCV_NNC_EXEC_INVALID);
  wrong = f;
  wrong.info.convolution.groups = 3;
  EXPECT_EQ(run_hint(wrong, h, {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("groups"));
  wrong = f;
  wrong.info.convolution.dilation[0] = -1;
  EXPECT_EQ(run_hint(wrong, h, {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  // Impossible hints: negative values, a window larger than the padded image, a stride that gives another size.
  ccv_nnc_hint_t bad = h;
  bad.border.begin[0] = -1;
  EXPECT_EQ(run_hint(f, bad, {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  bad = h;
  bad.stride.dim[0] = 2;
  EXPECT_EQ(run_hint(f, bad, {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  T tiny(CCV_32F, {1, 2, 2, 4}), ty(CCV_32F, {1, 1, 1, 4});
  ccv_nnc_hint_t unpadded = {};
  unpadded.stride.dim[0] = unpadded.stride.dim[1] = 1;
  EXPECT_EQ(run_hint(f, unpadded, {tiny, w, b}, {ty}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("does not fit"));
  // No hint can map 6x6 to 1x5x5 ... but a 3x3 window maps 6 to 5 only with one pad: derived.
  EXPECT_EQ(run(f, {x, w, b}, {y5}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  T y9(CCV_32F, {1, 9, 9, 4});
  EXPECT_EQ(run(f, {x, w, b}, {y9}), CCV_NNC_EXEC_INVALID);
  // Backward.
  EXPECT_EQ(run_hint(bk, h, {g, x, w}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run_hint(bk, h, {g, x}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(bk, h, {g, x, w}, {nullptr, nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(bk, h, {g, x, w}, {dxw}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dx"));
  EXPECT_EQ(run_hint(bk, h, {g, x, w}, {dx, w2}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(bk, h, {g, x, w}, {dx, nullptr, b5}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(bk, h, {y5, x, w}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run_hint(bk, h, {g, x, w, b, y, y}, {dx}), CCV_NNC_EXEC_INVALID);
  // A CHWN tensor has no backend.
  T chwn(CCV_32F, {4, 6, 6, 1}, CCV_TENSOR_FORMAT_CHWN);
  EXPECT_NE(run_hint(f, h, {chwn, w, b}, {y}), CCV_NNC_EXEC_SUCCESS);
}

}  // namespace
