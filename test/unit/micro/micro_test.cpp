// Micro ops (ccv_nnc_micro_*): a convolution written as reindex + multiply +
// sum against CONVOLUTION_FORWARD's CPU_REF, element-wise ops and reductions
// against closed forms, the backward pass against central finite
// differences, and bad input (malformed expressions, unknown variables,
// shape mismatches) answered with NULL / a message and no leak.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

using cmdtest::T;

namespace {

using Io = ccv_nnc_micro_io_t;

std::string last_error() {
  const char* m = ccv_nnc_error_message();
  return m ? m : "";
}

void fill(const T& t, std::mt19937& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  for (size_t i = 0; i < t.count(); i++) t.set(i, u(rng));
}

ccv_nnc_micro_scalar_t i32(int v) {
  ccv_nnc_micro_scalar_t s{};
  s.type = CCV_32S;
  s.i32 = v;
  return s;
}

void forward(ccv_nnc_micro_combine_t* c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_micro_scalar_t> p,
             std::vector<ccv_nnc_tensor_t*> out) {
  ccv_nnc_micro_combine_interpret(c, CCV_NNC_CUSTOM_FORWARD, in.data(), static_cast<int>(in.size()), p.data(),
                                  static_cast<int>(p.size()), out.data(), static_cast<int>(out.size()));
}

void backward(ccv_nnc_micro_combine_t* c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_micro_scalar_t> p,
              std::vector<ccv_nnc_tensor_t*> out) {
  ccv_nnc_micro_combine_interpret(c, CCV_NNC_CUSTOM_BACKWARD, in.data(), static_cast<int>(in.size()), p.data(),
                                  static_cast<int>(p.size()), out.data(), static_cast<int>(out.size()));
}

// A 2-d convolution, NHWC, written in micro ops:
//   x [N, H, W, C], w [K, kh, kw, C], b [K]  ->  y [N, oh, ow, K]
// with stride $s and padding $p (the zero padding comes from reading outside x).
struct MicroConv {
  Io x, w, b, y;
  ccv_nnc_micro_combine_t* combine = nullptr;

  explicit MicroConv(bool with_grads) {
    x = ccv_nnc_micro_input(4);
    w = ccv_nnc_micro_input(4);
    b = ccv_nnc_micro_input(1);
    const char* shape[] = {"dA0", "(dA1 + 2 * $p - dB1) / $s + 1", "(dA2 + 2*$p - dB2) / $s + 1", "dB1", "dB2", "dA3",
                           "dB0"};
    Io ss[] = {x, w};
    const char* xi[] = {"i0", "i1 * $s + i3 - $p", "i2*$s+i4-$p", "i5"};
    Io xr = ccv_nnc_micro_reindex(shape, 7, ss, 2, xi, 4, x);
    const char* wi[] = {"i6", "i3", "i4", "i5"};
    Io wr = ccv_nnc_micro_reindex(shape, 7, ss, 2, wi, 4, w);
    Io prod = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MUL, xr, wr);
    const int axes[] = {3, 4, 5};
    Io sum = ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_SUM, axes, 3, prod);
    const char* yshape[] = {"dA0", "dA1", "dA2", "dA6"};
    const char* yi[] = {"i0", "i1", "i2", "0", "0", "0", "i3"};
    Io s4 = ccv_nnc_micro_reindex(yshape, 4, &sum, 1, yi, 7, sum);
    const char* bshape[] = {"dA0", "dA1", "dA2", "dA3"};
    const char* bi[] = {"i3"};
    Io br = ccv_nnc_micro_reindex(bshape, 4, &s4, 1, bi, 1, b);
    y = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, s4, br);
    EXPECT_NE(y, nullptr) << last_error();
    Io inputs[] = {x, w, b};
    const char* params[] = {"$s", "p"};  // with or without the '$'
    if (with_grads) {
      Io ingrads[] = {ccv_nnc_micro_grad(y), x, w};
      Io outgrads[] = {ccv_nnc_micro_grad(x), ccv_nnc_micro_grad(w), ccv_nnc_micro_grad(b)};
      combine = ccv_nnc_micro_combine_new(inputs, 3, params, 2, &y, 1, ingrads, 3, outgrads, 3);
    } else {
      combine = ccv_nnc_micro_combine_new(inputs, 3, params, 2, &y, 1, nullptr, 0, nullptr, 0);
    }
    EXPECT_NE(combine, nullptr) << last_error();
  }
  ~MicroConv() { ccv_nnc_micro_combine_free(combine); }
};

struct ConvCase {
  int n, h, w, c, k, kh, kw, stride, pad;
  bool view;
};

class MicroConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(MicroConvTest, MatchesConvolutionCpuRef) {
  const ConvCase cc = GetParam();
  std::mt19937 rng(1234 + cc.h * 7 + cc.stride);
  const int oh = (cc.h + 2 * cc.pad - cc.kh) / cc.stride + 1;
  const int ow = (cc.w + 2 * cc.pad - cc.kw) / cc.stride + 1;
  T x = cc.view ? T::view(CCV_32F, {cc.n, cc.h, cc.w, cc.c}) : T(CCV_32F, {cc.n, cc.h, cc.w, cc.c});
  T w(CCV_32F, {cc.k, cc.kh, cc.kw, cc.c});
  T b(CCV_32F, {cc.k});
  T ref(CCV_32F, {cc.n, oh, ow, cc.k});
  T got = cc.view ? T::view(CCV_32F, {cc.n, oh, ow, cc.k}) : T(CCV_32F, {cc.n, oh, ow, cc.k});
  fill(x, rng);
  fill(w, rng);
  fill(b, rng);

  ccv_nnc_cmd_param_t p{};
  p.size.dim[0] = cc.kh;
  p.size.dim[1] = cc.kw;
  p.size.dim[2] = cc.c;
  p.convolution.count = cc.k;
  p.convolution.groups = 1;
  ccv_nnc_cmd_t conv = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_FORWARD, nullptr, p, 0);
  conv.backend = CCV_NNC_BACKEND_CPU_REF;
  ccv_nnc_hint_t hint{};
  hint.stride.dim[0] = hint.stride.dim[1] = cc.stride;
  hint.border.begin[0] = hint.border.begin[1] = cc.pad;
  hint.border.end[0] = hint.border.end[1] = cc.pad;
  ccv_nnc_tensor_t* in[] = {x, w, b};
  ccv_nnc_tensor_t* out[] = {ref};
  ASSERT_EQ(ccv_nnc_cmd_exec(conv, hint, 0, in, 3, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();

  MicroConv m(false);
  ASSERT_NE(m.combine, nullptr);
  ccv_nnc_error_clear();
  forward(m.combine, {x, w, b}, {i32(cc.stride), i32(cc.pad)}, {got});
  ASSERT_EQ(last_error(), "");
  double worst = 0;
  for (size_t i = 0; i < ref.count(); i++) worst = std::max(worst, std::fabs(ref.get(i) - got.get(i)));
  EXPECT_LT(worst, 2e-5) << "largest difference from CONVOLUTION_FORWARD CPU_REF";
}

INSTANTIATE_TEST_SUITE_P(Shapes, MicroConvTest,
                         ::testing::Values(ConvCase{2, 7, 6, 3, 4, 3, 3, 2, 1, false},
                                           ConvCase{1, 5, 5, 2, 3, 3, 3, 1, 1, true},
                                           ConvCase{3, 6, 9, 5, 2, 2, 3, 1, 0, false},
                                           ConvCase{1, 8, 7, 1, 5, 5, 5, 3, 2, true}));

// Element-wise ops against their closed forms, several outputs at once.
TEST(Micro, ElementwiseClosedForm) {
  std::mt19937 rng(7);
  const int R = 5, C = 7;
  T a(CCV_32F, {R, C}), b(CCV_64F, {R, C}), d = T::view(CCV_32F, {R, C});
  fill(a, rng, -2, 2);
  fill(b, rng, -2, 2);
  fill(d, rng, 0.5, 3);
  b.set(3, a.get(3));  // one exact tie for equal_to / max / min
  Io ia = ccv_nnc_micro_input(2), ib = ccv_nnc_micro_input(2), id = ccv_nnc_micro_input(2);
  // y1 = max(exp(-a), b) * (a - b) / d + log(d);  y2 = min(a, b);  y3 = (a == b) + 2 * (a < b)
  Io e = ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_NEG, ia));
  Io mx = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MAX, e, ib);
  Io diff = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MINUS, ia, ib);
  Io q = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_DIV, ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MUL, mx, diff),
                              id);
  Io y1 = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, q, ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_LOG, id));
  Io y2 = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MIN, ia, ib);
  Io eq = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_EQUAL_TO, ia, ib);
  Io lt = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_LESS_THAN, ia, ib);
  Io y3 = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, eq,
                               ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, lt, lt));
  Io inputs[] = {ia, ib, id};
  Io outputs[] = {y1, y2, y3};
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(inputs, 3, nullptr, 0, outputs, 3, nullptr, 0, nullptr, 0);
  ASSERT_NE(c, nullptr) << last_error();
  T o1(CCV_64F, {R, C}), o2(CCV_32F, {R, C}), o3(CCV_32S, {R, C});
  forward(c, {a, b, d}, {}, {o1, o2, o3});
  for (int i = 0; i < R * C; i++) {
    const double av = a.get(i), bv = b.get(i), dv = d.get(i);
    const double want = std::max(std::exp(-av), bv) * (av - bv) / dv + std::log(dv);
    EXPECT_NEAR(o1.get(i), want, 1e-6 * (1 + std::fabs(want))) << i;
    EXPECT_EQ(o2.get(i), static_cast<float>(std::min(av, bv))) << i;
    EXPECT_EQ(o3.get(i), (av == bv ? 1 : 0) + (av < bv ? 2 : 0)) << i;
  }
  EXPECT_EQ(o3.get(3), 1);
  ccv_nnc_micro_combine_free(c);
}

// Reductions (keeping reduced axes as size 1) and select against direct loops.
TEST(Micro, ReduceAndSelectClosedForm) {
  std::mt19937 rng(11);
  const int A = 3, B = 4, D = 5;
  T x(CCV_64F, {A, B, D});
  fill(x, rng, 0.2, 2);
  T idx(CCV_32S, {A, 2, D});
  for (int i = 0; i < A * 2 * D; i++) idx.set(i, (i * 7 + 3) % B);
  Io ix = ccv_nnc_micro_input(3), ii = ccv_nnc_micro_input(3);
  const int ax02[] = {0, 2}, ax1[] = {1};
  std::vector<Io> outs;
  for (uint8_t op = CCV_NNC_MICRO_REDUCE_OP_MAX; op <= CCV_NNC_MICRO_REDUCE_OP_PROD; op++)
    outs.push_back(ccv_nnc_micro_reduce(op, ax02, 2, ix));
  outs.push_back(ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_SUM, ax1, 1, ix));
  outs.push_back(ccv_nnc_micro_select(1, ix, ii));
  Io inputs[] = {ix, ii};
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(inputs, 2, nullptr, 0, outs.data(),
                                                         static_cast<int>(outs.size()), nullptr, 0, nullptr, 0);
  ASSERT_NE(c, nullptr) << last_error();
  std::vector<T> r;
  for (int k = 0; k < 7; k++) r.emplace_back(CCV_64F, std::vector<int>{1, B, 1});
  r.emplace_back(CCV_64F, std::vector<int>{A, D});  // size-1 axis left out
  r.emplace_back(CCV_64F, std::vector<int>{A, 2, D});
  std::vector<ccv_nnc_tensor_t*> rp;
  for (auto& t : r) rp.push_back(t);
  ccv_nnc_error_clear();
  forward(c, {x, idx}, {}, rp);
  ASSERT_EQ(last_error(), "");
  auto at = [&](int i, int j, int k) { return x.get((i * B + j) * D + k); };
  for (int j = 0; j < B; j++) {
    double mx = -1e300, mn = 1e300, sum = 0, prod = 1;
    int amx = 0, amn = 0;
    for (int i = 0; i < A; i++)
      for (int k = 0; k < D; k++) {
        const double v = at(i, j, k);
        if (v > mx) mx = v, amx = i * D + k;
        if (v < mn) mn = v, amn = i * D + k;
        sum += v;
        prod *= v;
      }
    EXPECT_EQ(r[0].get(j), mx);
    EXPECT_EQ(r[1].get(j), mn);
    EXPECT_EQ(r[2].get(j), amx);
    EXPECT_EQ(r[3].get(j), amn);
    EXPECT_NEAR(r[4].get(j), sum / (A * D), 1e-12);
    EXPECT_NEAR(r[5].get(j), sum, 1e-12);
    EXPECT_NEAR(r[6].get(j), prod, 1e-12 * std::fabs(prod));
  }
  for (int i = 0; i < A; i++)
    for (int k = 0; k < D; k++) {
      double s = 0;
      for (int j = 0; j < B; j++) s += at(i, j, k);
      EXPECT_NEAR(r[7].get(i * D + k), s, 1e-12);
      for (int j = 0; j < 2; j++)
        EXPECT_EQ(r[8].get((i * 2 + j) * D + k), at(i, static_cast<int>(idx.get((i * 2 + j) * D + k)), k));
    }
  ccv_nnc_micro_combine_free(c);
}

// Broadcast and transpose from the header's own examples, with a parameter
// offset that reads outside x (zeros).
TEST(Micro, ReindexBroadcastTransposeShift) {
  const int W = 3, H = 4;
  T x(CCV_32F, {W, H});
  for (int i = 0; i < W * H; i++) x.set(i, i + 1);
  Io ix = ccv_nnc_micro_input(2);
  const char* bs[] = {"dA0", "dA1", "dA1"};
  const char* bi[] = {"i0", "i1", "0"};
  Io bc = ccv_nnc_micro_reindex(bs, 3, &ix, 1, bi, 2, ix);
  const char* ts[] = {"dA1", "dA0"};
  const char* ti[] = {"i1 - $o", "i0"};
  Io tr = ccv_nnc_micro_reindex(ts, 2, &ix, 1, ti, 2, ix);
  Io outs[] = {bc, tr};
  const char* params[] = {"o"};
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(&ix, 1, params, 1, outs, 2, nullptr, 0, nullptr, 0);
  ASSERT_NE(c, nullptr) << last_error();
  T yb(CCV_32F, {W, H, H}), yt(CCV_32F, {H, W});
  ccv_nnc_micro_scalar_t o{};
  o.type = CCV_32F;
  o.f32 = 1;  // a whole float is accepted
  forward(c, {x}, {o}, {yb, yt});
  for (int i = 0; i < W; i++)
    for (int j = 0; j < H; j++) {
      for (int k = 0; k < H; k++) EXPECT_EQ(yb.get((i * H + j) * H + k), x.get(i * H + j));
      EXPECT_EQ(yt.get(j * W + i), i >= 1 ? x.get((i - 1) * H + j) : 0.0) << i << "," << j;
    }
  o.f32 = 0.5f;  // not an integer
  ccv_nnc_error_clear();
  forward(c, {x}, {o}, {yb, yt});
  EXPECT_NE(last_error().find("integers"), std::string::npos) << last_error();
  ccv_nnc_micro_combine_free(c);
}

// Backward against central finite differences, through every op with a gradient.
TEST(Micro, GradientMatchesFiniteDifferences) {
  std::mt19937 rng(99);
  const int R = 3, C = 4;
  T a(CCV_64F, {R, C}), b(CCV_64F, {C, R}), idx(CCV_32S, {C, 1});
  fill(a, rng, 0.1, 1.5);
  fill(b, rng, 0.1, 1.5);
  for (int i = 0; i < C; i++) idx.set(i, (i * 2 + 1) % R);
  Io ia = ccv_nnc_micro_input(2), ib = ccv_nnc_micro_input(2), ii = ccv_nnc_micro_input(2);
  const char* ts[] = {"dA1", "dA0"};
  const char* ti[] = {"i1", "i0"};
  Io at = ccv_nnc_micro_reindex(ts, 2, &ia, 1, ti, 2, ia);  // [C, R]
  Io u = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MUL, at, ib);
  Io l = ccv_nnc_micro_unary(
      CCV_NNC_MICRO_UNARY_OP_LOG,
      ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, u),
                           ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, ib)));
  Io m = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MAX, l, at);
  Io dv = ccv_nnc_micro_binary(
      CCV_NNC_MICRO_BINARY_OP_DIV, m,
      ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MINUS, ib, ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_NEG, at)));
  Io mn = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_MIN, dv, u);
  Io s = ccv_nnc_micro_select(1, mn, ii);  // [C, 1]
  const int ax0[] = {0}, ax01[] = {0, 1}, ax1[] = {1};
  Io r1 = ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_PROD, ax0, 1, m);   // [1, R]
  Io r2 = ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_MEAN, ax01, 2, l);  // [1, 1]
  Io r3 = ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_MAX, ax1, 1, mn);   // [C, 1]
  // A padded shift: reads outside a give zeros; its gradient drops them.
  const char* ps[] = {"dA0 + 2", "dA1"};
  const char* pi[] = {"i0 - 1", "i1"};
  Io sh = ccv_nnc_micro_reindex(ps, 2, &ia, 1, pi, 2, ia);  // [R + 2, C]
  Io r4 = ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, sh);
  Io inputs[] = {ia, ib, ii};
  Io outputs[] = {s, r1, r2, r3, r4};
  Io ingrads[] = {ccv_nnc_micro_grad(s),
                  ccv_nnc_micro_grad(r1),
                  ccv_nnc_micro_grad(r2),
                  ccv_nnc_micro_grad(r3),
                  ccv_nnc_micro_grad(r4),
                  ia,
                  ib,
                  ii};
  Io outgrads[] = {ccv_nnc_micro_grad(ia), ccv_nnc_micro_grad(ib), ccv_nnc_micro_grad(ii)};
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(inputs, 3, nullptr, 0, outputs, 5, ingrads, 8, outgrads, 3);
  ASSERT_NE(c, nullptr) << last_error();
  std::vector<std::vector<int>> oshape = {{C, 1}, {1, R}, {1, 1}, {C, 1}, {R + 2, C}};
  std::vector<T> g, y;
  for (auto& sh2 : oshape) {
    g.emplace_back(CCV_64F, sh2);
    y.emplace_back(CCV_64F, sh2);
    fill(g.back(), rng);
  }
  auto loss = [&]() {
    forward(c, {a, b, idx}, {}, {y[0], y[1], y[2], y[3], y[4]});
    double L = 0;
    for (size_t k = 0; k < y.size(); k++)
      for (size_t i = 0; i < y[k].count(); i++) L += y[k].get(i) * g[k].get(i);
    return L;
  };
  T da(CCV_64F, {R, C}), db(CCV_64F, {C, R}), di(CCV_64F, {C, 1});
  fill(di, rng);  // must be overwritten with zeros: index gets no gradient
  ccv_nnc_error_clear();
  backward(c, {g[0], g[1], g[2], g[3], g[4], a, b, idx}, {}, {da, db, di});
  ASSERT_EQ(last_error(), "");
  for (int i = 0; i < C; i++) EXPECT_EQ(di.get(i), 0.0);
  const double h = 1e-6;
  for (T* p : {&a, &b}) {
    const T& dp = p == &a ? da : db;
    for (size_t i = 0; i < p->count(); i++) {
      const double v = p->get(i);
      p->set(i, v + h);
      const double lp = loss();
      p->set(i, v - h);
      const double lm = loss();
      p->set(i, v);
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(dp.get(i), fd, 1e-6 * (1 + std::fabs(fd))) << (p == &a ? "a" : "b") << "[" << i << "]";
    }
  }
  ccv_nnc_micro_combine_free(c);
}

// The convolution's backward (reindex gradients are scatter-adds) against finite differences.
TEST(Micro, ConvolutionGradientMatchesFiniteDifferences) {
  std::mt19937 rng(5);
  const int N = 1, H = 5, W = 4, Cc = 2, K = 3, S = 2, P = 1;
  const int oh = (H + 2 * P - 3) / S + 1, ow = (W + 2 * P - 3) / S + 1;
  T x(CCV_64F, {N, H, W, Cc}), w(CCV_64F, {K, 3, 3, Cc}), b(CCV_64F, {K});
  T y(CCV_64F, {N, oh, ow, K}), g(CCV_64F, {N, oh, ow, K});
  fill(x, rng);
  fill(w, rng);
  fill(b, rng);
  fill(g, rng);
  MicroConv m(true);
  ASSERT_NE(m.combine, nullptr);
  const std::vector<ccv_nnc_micro_scalar_t> ps = {i32(S), i32(P)};
  T dx(CCV_64F, {N, H, W, Cc}), dw(CCV_64F, {K, 3, 3, Cc}), db(CCV_64F, {K});
  ccv_nnc_error_clear();
  backward(m.combine, {g, x, w}, ps, {dx, dw, db});
  ASSERT_EQ(last_error(), "");
  auto loss = [&]() {
    forward(m.combine, {x, w, b}, ps, {y});
    double L = 0;
    for (size_t i = 0; i < y.count(); i++) L += y.get(i) * g.get(i);
    return L;
  };
  const double h = 1e-6;
  for (const auto& [p, dp] : {std::pair<T*, T*>{&x, &dx}, {&w, &dw}, {&b, &db}})
    for (size_t i = 0; i < p->count(); i++) {
      const double v = p->get(i);
      p->set(i, v + h);
      const double lp = loss();
      p->set(i, v - h);
      const double lm = loss();
      p->set(i, v);
      EXPECT_NEAR(dp->get(i), (lp - lm) / (2 * h), 1e-7) << i;
    }
}

// Malformed expressions and unknown variables: NULL and a message naming the problem.
TEST(Micro, BadExpressions) {
  Io x = ccv_nnc_micro_input(2);
  ASSERT_NE(x, nullptr);
  struct Bad {
    const char* shape0;
    const char* index0;
    const char* expect;
  } cases[] = {
      {"dA0", "(i0 + 1", "unbalanced parentheses"},
      {"dA0", "i0 + 1)", "unbalanced parentheses"},
      {"(dA0 * (2 + $k)", "i0", "unbalanced parentheses"},
      {"dA0", "i2", "unknown variable i2"},
      {"dA0", "dB0", "unknown variable dB0"},
      {"dA0", "dA5", "unknown variable dA5"},
      {"dA0", "k0", "unknown variable"},
      {"i0", "i0", "not allowed here"},
      {"dA0", "", "empty expression"},
      {"dA0", "i0 +", "ends where a value was expected"},
      {"dA0", "i0 $", "unexpected character"},
      {"dA0", "$", "parameter name"},
      {"dA0", "i0 # 2", "unexpected character '#'"},
      {"dA0", "da0", "capital letter"},
      {"dA0", "99999999999", "too large"},
  };
  for (const Bad& bad : cases) {
    const char* shape[] = {bad.shape0, "dA1"};
    const char* index[] = {bad.index0, "i1"};
    ccv_nnc_error_clear();
    Io r = ccv_nnc_micro_reindex(shape, 2, &x, 1, index, 2, x);
    EXPECT_EQ(r, nullptr) << bad.shape0 << " / " << bad.index0;
    EXPECT_NE(last_error().find(bad.expect), std::string::npos) << "got: " << last_error();
  }
  std::string deep(200, '(');
  deep += "1" + std::string(200, ')');
  const char* shape[] = {"dA0", "dA1"};
  const char* index[] = {deep.c_str(), "i1"};
  EXPECT_EQ(ccv_nnc_micro_reindex(shape, 2, &x, 1, index, 2, x), nullptr);
  EXPECT_NE(last_error().find("nested too deeply"), std::string::npos) << last_error();
  // Counts and NULLs.
  const char* ok[] = {"i0", "i1"};
  EXPECT_EQ(ccv_nnc_micro_reindex(shape, 2, &x, 1, ok, 1, x), nullptr);
  EXPECT_NE(last_error().find("reindex_count"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_micro_reindex(shape, 2, &x, 1, ok, 2, nullptr), nullptr);
  EXPECT_NE(last_error().find("x is NULL"), std::string::npos) << last_error();
  const char* withnull[] = {"i0", nullptr};
  EXPECT_EQ(ccv_nnc_micro_reindex(shape, 2, &x, 1, withnull, 2, x), nullptr);
  EXPECT_NE(last_error().find("NULL"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_micro_input(0), nullptr);
  EXPECT_EQ(ccv_nnc_micro_unary(17, x), nullptr);
  EXPECT_NE(last_error().find("unknown op"), std::string::npos) << last_error();
  const int bad_axis[] = {2};
  EXPECT_EQ(ccv_nnc_micro_reduce(CCV_NNC_MICRO_REDUCE_OP_SUM, bad_axis, 1, x), nullptr);
  EXPECT_NE(last_error().find("axis[0] is 2"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_micro_select(3, x, x), nullptr);
  Io gx = ccv_nnc_micro_grad(x);
  EXPECT_EQ(ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_EXP, gx), nullptr);
  EXPECT_NE(last_error().find("gradient io"), std::string::npos) << last_error();
  // x is held by gx now: freeing it alone is refused; freeing gx frees both.
  ccv_nnc_error_clear();
  ccv_nnc_micro_io_free(x);
  EXPECT_NE(last_error().find("held by"), std::string::npos) << last_error();
  ccv_nnc_micro_io_free(gx);
  ccv_nnc_micro_io_free(nullptr);
}

// Shape mismatches, at build time (number of axes) and run time (sizes).
TEST(Micro, ShapeMismatch) {
  Io a = ccv_nnc_micro_input(2), b = ccv_nnc_micro_input(3);
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, a, b), nullptr);
  EXPECT_NE(last_error().find("shape mismatch"), std::string::npos) << last_error();
  ccv_nnc_micro_io_free(b);
  Io c = ccv_nnc_micro_input(2);
  Io y = ccv_nnc_micro_binary(CCV_NNC_MICRO_BINARY_OP_PLUS, a, c);
  Io inputs[] = {a, c};
  ccv_nnc_micro_combine_t* comb = ccv_nnc_micro_combine_new(inputs, 2, nullptr, 0, &y, 1, nullptr, 0, nullptr, 0);
  ASSERT_NE(comb, nullptr) << last_error();
  T ta(CCV_32F, {2, 3}), tc(CCV_32F, {3, 2}), ty(CCV_32F, {2, 3}), t3(CCV_32F, {2, 3, 1, 2});
  for (int i = 0; i < 6; i++) ta.set(i, i), tc.set(i, i), ty.set(i, -7);
  forward(comb, {ta, tc}, {}, {ty});
  EXPECT_NE(last_error().find("shape mismatch"), std::string::npos) << last_error();
  for (int i = 0; i < 6; i++) EXPECT_EQ(ty.get(i), -7) << "output touched on failure";
  // Right sizes into a wrongly shaped output.
  forward(comb, {ta, ta}, {}, {t3});
  EXPECT_NE(last_error().find("shape mismatch"), std::string::npos) << last_error();
  // An input with the wrong number of axes.
  forward(comb, {ta, t3}, {}, {ty});
  EXPECT_NE(last_error().find("dimensions"), std::string::npos) << last_error();
  ccv_nnc_micro_combine_free(comb);
}

// Combine and interpret misuse: messages, nothing taken on failure, outputs untouched.
TEST(Micro, BadCombineAndInterpret) {
  Io x = ccv_nnc_micro_input(1), other = ccv_nnc_micro_input(1);
  const char* s[] = {"dA0 / $n"};
  const char* i[] = {"i0 * $n"};
  Io r = ccv_nnc_micro_reindex(s, 1, &x, 1, i, 1, x);
  ASSERT_NE(r, nullptr) << last_error();
  // $n not declared.
  EXPECT_EQ(ccv_nnc_micro_combine_new(&x, 1, nullptr, 0, &r, 1, nullptr, 0, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("$n"), std::string::npos) << last_error();
  // An input of the graph missing from inputs.
  const char* n[] = {"n"};
  EXPECT_EQ(ccv_nnc_micro_combine_new(&other, 1, n, 1, &r, 1, nullptr, 0, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("not among the combine's inputs"), std::string::npos) << last_error();
  // An outgrad that is not a gradient; a parameter named twice.
  EXPECT_EQ(ccv_nnc_micro_combine_new(&x, 1, n, 1, &r, 1, nullptr, 0, &x, 1), nullptr);
  const char* twice[] = {"n", "$n"};
  EXPECT_EQ(ccv_nnc_micro_combine_new(&x, 1, twice, 2, &r, 1, nullptr, 0, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("named twice"), std::string::npos) << last_error();
  ccv_nnc_micro_io_free(other);
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(&x, 1, n, 1, &r, 1, nullptr, 0, nullptr, 0);
  ASSERT_NE(c, nullptr) << last_error();
  T tx(CCV_32F, {6}), ty(CCV_32F, {3});
  for (int k = 0; k < 6; k++) tx.set(k, k + 1);
  ty.set(0, 42);
  ty.set(1, 42);
  ty.set(2, 42);
  forward(c, {tx}, {i32(2)}, {ty});
  EXPECT_EQ(ty.get(0), 1);
  EXPECT_EQ(ty.get(1), 3);
  EXPECT_EQ(ty.get(2), 5);
  ty.set(0, 42);
  forward(c, {tx}, {i32(0)}, {ty});  // dA0 / 0
  EXPECT_NE(last_error().find("divides by zero"), std::string::npos) << last_error();
  EXPECT_EQ(ty.get(0), 42);
  forward(c, {tx}, {}, {ty});
  EXPECT_NE(last_error().find("parameter_size"), std::string::npos) << last_error();
  forward(c, {tx, tx}, {i32(2)}, {ty});
  EXPECT_NE(last_error().find("input_size"), std::string::npos) << last_error();
  forward(c, {nullptr}, {i32(2)}, {ty});
  EXPECT_NE(last_error().find("NULL"), std::string::npos) << last_error();
  ccv_nnc_micro_scalar_t bad_type{};
  bad_type.type = 12345;
  forward(c, {tx}, {bad_type}, {ty});
  EXPECT_NE(last_error().find("type"), std::string::npos) << last_error();
  ccv_nnc_micro_combine_interpret(c, CCV_NNC_GEMM_FORWARD, nullptr, 0, nullptr, 0, nullptr, 0);
  EXPECT_NE(last_error().find("CCV_NNC_CUSTOM_FORWARD"), std::string::npos) << last_error();
  ccv_nnc_micro_combine_interpret(nullptr, CCV_NNC_CUSTOM_FORWARD, nullptr, 0, nullptr, 0, nullptr, 0);
  EXPECT_NE(last_error().find("combine is NULL"), std::string::npos) << last_error();
  // Backward with no outgrads declared.
  backward(c, {tx}, {i32(2)}, {ty});
  EXPECT_NE(last_error().find("input_size"), std::string::npos) << last_error();
  // Code generation is not implemented: NULL and a message.
  ccv_nnc_micro_combine_free(c);
  ccv_nnc_micro_combine_free(nullptr);
}

// Backward that lacks a value its rules need, and select with an index out of range.
TEST(Micro, BadBackwardAndSelect) {
  Io x = ccv_nnc_micro_input(2), ix = ccv_nnc_micro_input(2);
  Io l = ccv_nnc_micro_unary(CCV_NNC_MICRO_UNARY_OP_LOG, x);
  Io s = ccv_nnc_micro_select(0, l, ix);
  Io inputs[] = {x, ix};
  Io ingrads[] = {ccv_nnc_micro_grad(s), ix};  // x's value is not given, but log needs it
  Io gx = ccv_nnc_micro_grad(x);
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(inputs, 2, nullptr, 0, &s, 1, ingrads, 2, &gx, 1);
  ASSERT_NE(c, nullptr) << last_error();
  T tx(CCV_32F, {3, 2}), ti(CCV_32F, {1, 2}), ty(CCV_32F, {1, 2}), tg(CCV_32F, {1, 2}), tdx(CCV_32F, {3, 2});
  for (int k = 0; k < 6; k++) tx.set(k, k + 1);
  ti.set(0, 2);
  ti.set(1, 3);  // out of range for axis 0 of size 3
  forward(c, {tx, ti}, {}, {ty});
  EXPECT_NE(last_error().find("index value 3"), std::string::npos) << last_error();
  ti.set(1, 0.5);
  forward(c, {tx, ti}, {}, {ty});
  EXPECT_NE(last_error().find("whole number"), std::string::npos) << last_error();
  ti.set(1, 1);
  forward(c, {tx, ti}, {}, {ty});
  EXPECT_NEAR(ty.get(0), std::log(5.0), 1e-6);
  EXPECT_NEAR(ty.get(1), std::log(4.0), 1e-6);
  tg.set(0, 1);
  tg.set(1, 1);
  tdx.set(0, 42);
  backward(c, {tg, ti}, {}, {tdx});
  EXPECT_NE(last_error().find("needs the value"), std::string::npos) << last_error();
  EXPECT_EQ(tdx.get(0), 42);
  ccv_nnc_micro_combine_free(c);
}

// Limits: a step larger than the interpreter allows, and C for a combine with no forward outputs.
TEST(Micro, LimitsAndBackwardOnlyCombine) {
  Io x = ccv_nnc_micro_input(1);
  const char* s[] = {"$n", "$n", "$n"};
  const char* i[] = {"i0 + i1 + i2"};
  Io r = ccv_nnc_micro_reindex(s, 3, &x, 1, i, 1, x);
  const char* n[] = {"n"};
  Io gx = ccv_nnc_micro_grad(x), gr = ccv_nnc_micro_grad(r);
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(&x, 1, n, 1, nullptr, 0, &gr, 1, &gx, 1);
  ASSERT_NE(c, nullptr) << last_error();
  T tx(CCV_32F, {4}), tg(CCV_32F, {2, 2, 2}), tdx(CCV_32F, {4});
  for (int k = 0; k < 8; k++) tg.set(k, k + 1);
  backward(c, {tg}, {i32(2)}, {tdx});
  ASSERT_EQ(last_error(), "");
  // dx[j] adds g over every (i0, i1, i2) of the 2x2x2 output with i0 + i1 + i2 == j.
  for (int j = 0; j < 4; j++) {
    double want = 0;
    for (int k = 0; k < 8; k++)
      if ((k >> 2) + ((k >> 1) & 1) + (k & 1) == j) want += k + 1;
    EXPECT_EQ(tdx.get(j), want) << j;
  }
  tdx.set(0, 42);
  backward(c, {tg}, {i32(100000)}, {tdx});
  EXPECT_NE(last_error().find("2^28"), std::string::npos) << last_error();
  EXPECT_EQ(tdx.get(0), 42);
  // $n = 3 makes r 3x3x3, which the 2x2x2 gradient given does not fit.
  backward(c, {tg}, {i32(3)}, {tdx});
  EXPECT_NE(last_error().find("shape mismatch"), std::string::npos) << last_error();
  EXPECT_EQ(tdx.get(0), 42);
  EXPECT_EQ(ccv_nnc_micro_combine_c(c), nullptr);
  EXPECT_NE(last_error().find("no outputs"), std::string::npos) << last_error();
  ccv_nnc_micro_combine_free(c);
}

// ccv_nnc_micro_combine_c: the generated C, compiled with the system's C
// compiler and loaded, computes what the interpreter computes.
class Generated {
 public:
  using Fn = int (*)(const double* const*, const int* const*, const long long*, double**, int (*)[12]);
  explicit Generated(const char* code) {
    char dir[] = "/tmp/nnc_micro_XXXXXX";
    if (!mkdtemp(dir)) return;
    dir_ = dir;
    {
      std::ofstream f(dir_ + "/k.c");
      f << code;
    }
    const std::string cmd = "cc -std=c99 -O1 -Wall -Werror -Wno-unused-label -Wno-unused-variable -shared -fPIC -o " +
                            dir_ + "/k.so " + dir_ + "/k.c -lm 2> " + dir_ + "/cc.log";
    compiled_ = std::system(cmd.c_str()) == 0;
    if (!compiled_) {
      std::ifstream log(dir_ + "/cc.log");
      log_.assign(std::istreambuf_iterator<char>(log), {});
      return;
    }
    so_ = dlopen((dir_ + "/k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (so_) fn_ = reinterpret_cast<Fn>(dlsym(so_, "ccv_nnc_micro_forward"));
  }
  ~Generated() {
    if (so_) dlclose(so_);
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  bool have_cc() const { return std::system("cc --version > /dev/null 2>&1") == 0; }
  bool compiled() const { return compiled_; }
  const std::string& log() const { return log_; }
  Fn fn() const { return fn_; }

 private:
  std::string dir_, log_;
  bool compiled_ = false;
  void* so_ = nullptr;
  Fn fn_ = nullptr;
};

// Run generated code on tensors (any datatype) and compare with the interpreter's outputs.
void expect_generated_matches(ccv_nnc_micro_combine_t* c, const std::vector<const T*>& in,
                              const std::vector<long long>& params, const std::vector<const T*>& interp,
                              bool expect_refuse) {
  char* code = ccv_nnc_micro_combine_c(c);
  ASSERT_NE(code, nullptr) << last_error();
  Generated g(code);
  if (!g.have_cc()) {
    std::free(code);
    GTEST_SKIP() << "no C compiler (cc) to build the generated code";
  }
  ASSERT_TRUE(g.compiled()) << g.log() << "\n" << code;
  std::free(code);
  ASSERT_NE(g.fn(), nullptr);
  std::vector<std::vector<double>> vals;
  std::vector<std::vector<int>> dims;
  for (const T* t : in) {
    vals.emplace_back();
    for (size_t i = 0; i < t->count(); i++) vals.back().push_back(t->get(i));
    dims.emplace_back();
    for (int a = 0; a < t->nd(); a++) dims.back().push_back(t->get()->info.dim[a]);
  }
  std::vector<const double*> vp;
  std::vector<const int*> dp;
  for (size_t k = 0; k < in.size(); k++) vp.push_back(vals[k].data()), dp.push_back(dims[k].data());
  std::vector<double*> outs(interp.size(), nullptr);
  std::vector<std::array<int, 12>> od(interp.size());
  ASSERT_EQ(g.fn()(vp.data(), dp.data(), params.data(), outs.data(), reinterpret_cast<int (*)[12]>(od.data())), 0);
  for (size_t k = 0; k < interp.size(); k++) {
    size_t n = 1;
    for (int a = 0; a < 12 && od[k][a]; a++) n *= od[k][a];
    EXPECT_EQ(n, interp[k]->count()) << "output " << k;
    for (size_t i = 0; i < std::min(n, interp[k]->count()); i++)
      EXPECT_NEAR(outs[k][i], interp[k]->get(i), 1e-12 * (1 + std::fabs(interp[k]->get(i))))
          << "output " << k << " [" << i << "]";
    std::free(outs[k]);
  }
  // A second input one row longer: where that breaks a shape rule the
  // generated code refuses it (negative, nothing allocated).
  if (in.size() >= 2) {
    std::vector<int> bad = dims[1];
    bad[0] += 1;
    dp[1] = bad.data();
    std::vector<double> big(vals[1].size() * 4 + 64, 0.0);
    vp[1] = big.data();
    std::vector<double*> none(interp.size(), nullptr);
    const int rc = g.fn()(vp.data(), dp.data(), params.data(), none.data(), reinterpret_cast<int (*)[12]>(od.data()));
    if (expect_refuse) {
      EXPECT_LT(rc, 0);
    }
    for (double* p : none) {
      if (rc != 0) {
        EXPECT_EQ(p, nullptr);
      }
      std::free(p);
    }
  }
}

TEST(Micro, GeneratedCMatchesInterpreterConvolution) {
  std::mt19937 rng(21);
  T x(CCV_64F, {2, 6, 5, 3}), w(CCV_64F, {4, 3, 3, 3}), b(CCV_64F, {4});
  fill(x, rng);
  fill(w, rng);
  fill(b, rng);
  const int oh = (6 + 2 - 3) / 2 + 1, ow = (5 + 2 - 3) / 2 + 1;
  T y(CCV_64F, {2, oh, ow, 4});
  MicroConv m(false);
  ASSERT_NE(m.combine, nullptr);
  forward(m.combine, {x, w, b}, {i32(2), i32(1)}, {y});
  ASSERT_EQ(last_error(), "");
  expect_generated_matches(m.combine, {&x, &w, &b}, {2, 1}, {&y}, false);
}

TEST(Micro, GeneratedCMatchesInterpreterEveryOp) {
  std::mt19937 rng(23);
  const int A = 3, B = 4, D = 5;
  T x(CCV_64F, {A, B, D}), z(CCV_64F, {A, B, D});
  fill(x, rng, 0.2, 2);
  fill(z, rng, 0.2, 2);
  z.set(7, x.get(7));
  T idx(CCV_64F, {A, 2, D});
  for (int i = 0; i < A * 2 * D; i++) idx.set(i, (i * 5 + 1) % B);
  Io ix = ccv_nnc_micro_input(3), iz = ccv_nnc_micro_input(3), ii = ccv_nnc_micro_input(3);
  std::vector<Io> outs;
  const int ax02[] = {0, 2};
  for (uint8_t op = CCV_NNC_MICRO_REDUCE_OP_MAX; op <= CCV_NNC_MICRO_REDUCE_OP_PROD; op++)
    outs.push_back(ccv_nnc_micro_reduce(op, ax02, 2, ix));
  for (uint32_t op = CCV_NNC_MICRO_BINARY_OP_PLUS; op <= CCV_NNC_MICRO_BINARY_OP_LESS_THAN; op++)
    outs.push_back(ccv_nnc_micro_binary(op, ix, iz));
  for (uint32_t op = CCV_NNC_MICRO_UNARY_OP_NEG; op <= CCV_NNC_MICRO_UNARY_OP_EXP; op++)
    outs.push_back(ccv_nnc_micro_unary(op, iz));
  outs.push_back(ccv_nnc_micro_select(1, ix, ii));
  const char* ts[] = {"dA2", "dA1 * 2 / $k", "dA0 - -1"};
  const char* ti[] = {"(i2 - 1)", "i1 - $k", "-(-i0)"};
  outs.push_back(ccv_nnc_micro_reindex(ts, 3, &ix, 1, ti, 3, ix));
  Io inputs[] = {ix, iz, ii};
  const char* params[] = {"k"};
  ccv_nnc_micro_combine_t* c = ccv_nnc_micro_combine_new(inputs, 3, params, 1, outs.data(),
                                                         static_cast<int>(outs.size()), nullptr, 0, nullptr, 0);
  ASSERT_NE(c, nullptr) << last_error();
  std::vector<T> r;
  for (int k = 0; k < 7; k++) r.emplace_back(CCV_64F, std::vector<int>{1, B, 1});
  for (int k = 0; k < 11; k++) r.emplace_back(CCV_64F, std::vector<int>{A, B, D});
  r.emplace_back(CCV_64F, std::vector<int>{A, 2, D});
  r.emplace_back(CCV_64F, std::vector<int>{D, B * 2 / 2, A + 1});
  std::vector<ccv_nnc_tensor_t*> rp;
  std::vector<const T*> rc;
  for (auto& t : r) rp.push_back(t), rc.push_back(&t);
  forward(c, {x, z, idx}, {i32(2)}, rp);
  ASSERT_EQ(last_error(), "");
  expect_generated_matches(c, {&x, &z, &idx}, {2}, rc, true);
  ccv_nnc_micro_combine_free(c);
}

}  // namespace
