// SCALED_DOT_PRODUCT_ATTENTION against softmax(scale q kᵀ + mask) v computed
// here in fp64, finite differences, CPU_REF, and libnnc's contract.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" {
ccv_nnc_cmd_t nnc_test_sdpa_forward(void);
int nnc_test_sdpa_example(float o[4]);
}

using namespace cmdtest;

namespace {

class Attention : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;
constexpr uint32_t FWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, BWD = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD;

struct Case {
  int B, Sq, Sk, H, Hk, D, Dv;
  bool causal = false;
  std::vector<int> mask;  // empty: none; else the mask's shape (broadcast)
  bool three_d = false;   // q, k, v as [B, S, D] (H = Hk = 1)
  int Nout = 0;           // > 0: the fused projection with w [Nout, H * Dv]
  bool bias = false;
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(D)); }
  std::vector<int> q() const { return three_d ? std::vector<int>{B, Sq, D} : std::vector<int>{B, Sq, H, D}; }
  std::vector<int> k() const { return three_d ? std::vector<int>{B, Sk, D} : std::vector<int>{B, Sk, Hk, D}; }
  std::vector<int> v() const { return three_d ? std::vector<int>{B, Sk, Dv} : std::vector<int>{B, Sk, Hk, Dv}; }
  std::vector<int> o() const { return three_d ? std::vector<int>{B, Sq, Dv} : std::vector<int>{B, Sq, H, Dv}; }
  std::vector<int> lse() const { return three_d ? std::vector<int>{Sq, B} : std::vector<int>{B, H, Sq}; }
  std::vector<int> y() const { return {B, Sq, Nout}; }
  std::vector<int> w() const { return {Nout, H * Dv}; }
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = 0) const {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
    p.scaled_dot_product_attention.scale = scale();
    p.scaled_dot_product_attention.is_causal = causal;
    ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
    c.backend = backend;
    return c;
  }
};

// Element (b, s, h, d) of a [B, S, H, D] or [B, S, D] tensor.
double at4(const T& t, bool three_d, int b, int s, int h, int d) {
  return three_d ? T::decode(t.at({b, s, d}), t.datatype()) : T::decode(t.at({b, s, h, d}), t.datatype());
}

// Mask value at (b, h, i, j): right-aligned broadcast against [B, H, Sq, Sk] (3-d: [B, Sq, Sk]).
double mask_at(const Case& c, const T& m, int b, int h, int i, int j) {
  const std::vector<int> full = c.three_d ? std::vector<int>{b, i, j} : std::vector<int>{b, h, i, j};
  std::vector<int> idx;
  for (size_t a = 0; a < c.mask.size(); a++) {
    const int fi = static_cast<int>(full.size() - c.mask.size() + a);
    idx.push_back(c.mask[a] == 1 ? 0 : full[fi]);
  }
  int64_t off = 0;
  for (size_t a = 0; a < idx.size(); a++) off += idx[a] * m.strides()[a];
  return T::decode(m.get()->data.u8 + off * esize(m.datatype()), m.datatype());
}

struct Ref {
  std::vector<double> o;    // [B][Sq][H][Dv]
  std::vector<double> lse;  // [B][H][Sq]
  std::vector<double> y;    // [B][Sq][Nout]
};

// The direct definition: full score rows, softmax, weighted sum.
Ref reference(const Case& c, const T& q, const T& k, const T& v, const T* mask, const T* w, const T* bias) {
  Ref r;
  r.o.assign(static_cast<size_t>(c.B) * c.Sq * c.H * c.Dv, 0.0);
  r.lse.assign(static_cast<size_t>(c.B) * c.H * c.Sq, 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  for (int b = 0; b < c.B; b++)
    for (int h = 0; h < c.H; h++)
      for (int i = 0; i < c.Sq; i++) {
        const int hk = h / (c.H / c.Hk);
        std::vector<double> s(c.Sk);
        double mx = -inf;
        for (int j = 0; j < c.Sk; j++) {
          double dot = 0;
          for (int d = 0; d < c.D; d++) dot += at4(q, c.three_d, b, i, h, d) * at4(k, c.three_d, b, j, hk, d);
          s[j] = dot * static_cast<double>(c.scale()) + (mask ? mask_at(c, *mask, b, h, i, j) : 0.0);
          if (c.causal && j > i + c.Sk - c.Sq) s[j] = -inf;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < c.Sk; j++) sum += mx == -inf ? 0 : std::exp(s[j] - mx);
        r.lse[(static_cast<size_t>(b) * c.H + h) * c.Sq + i] = mx == -inf ? -inf : mx + std::log(sum);
        for (int j = 0; j < c.Sk && mx != -inf; j++) {
          const double pj = std::exp(s[j] - mx) / sum;
          for (int d = 0; d < c.Dv; d++)
            r.o[((static_cast<size_t>(b) * c.Sq + i) * c.H + h) * c.Dv + d] += pj * at4(v, c.three_d, b, j, hk, d);
        }
      }
  if (c.Nout) {
    const int HDv = c.H * c.Dv;
    r.y.assign(static_cast<size_t>(c.B) * c.Sq * c.Nout, 0.0);
    for (size_t row = 0; row < static_cast<size_t>(c.B) * c.Sq; row++)
      for (int n = 0; n < c.Nout; n++) {
        double s = bias ? bias->get(n) : 0;
        for (int x = 0; x < HDv; x++) s += r.o[row * HDv + x] * T::decode(w->at({n, x}), w->datatype());
        r.y[row * c.Nout + n] = s;
      }
  }
  return r;
}

// Inputs of a case, filled at random (mask values in [-2, 2], a few -inf).
struct Inputs {
  T q, k, v, mask, w, bias;
  Inputs(const Case& c, int dt, std::mt19937& rng, bool view = false)
      : q(make(dt, c.q(), view)), k(make(dt, c.k(), view)), v(make(dt, c.v(), view)),
        mask(make(dt, c.mask.empty() ? std::vector<int>{1} : c.mask, view)),
        w(make(dt, c.Nout ? c.w() : std::vector<int>{1}, view)), bias(make(dt, {std::max(c.Nout, 1)}, view)) {
    if (dt == CCV_16F || dt == CCV_16BF) {  // values exact in the type
      for (const T* t : {&q, &k, &v, &mask, &w, &bias}) fill_random(*t, rng);
    } else {
      fill_uniform(q, rng, -2, 2), fill_uniform(k, rng, -2, 2), fill_uniform(v, rng);
      fill_uniform(mask, rng, -2, 2), fill_uniform(w, rng), fill_uniform(bias, rng);
    }
    for (size_t i = 3; i < mask.count(); i += 7) mask.set(i, -std::numeric_limits<double>::infinity());
  }
  static T make(int dt, const std::vector<int>& d, bool view) { return view ? T::view(dt, d, CCV_TENSOR_FORMAT_NHWC, 2) : T(dt, d); }
  std::vector<ccv_nnc_tensor_t*> list(const Case& c) const {
    std::vector<ccv_nnc_tensor_t*> l = {q, k, v, c.mask.empty() ? nullptr : mask.get()};
    if (c.Nout) l.push_back(w), l.push_back(c.bias ? bias.get() : nullptr);
    return l;
  }
};

const Case kCases[] = {
    {.B = 2, .Sq = 5, .Sk = 7, .H = 3, .Hk = 3, .D = 4, .Dv = 6},
    {.B = 1, .Sq = 9, .Sk = 9, .H = 2, .Hk = 2, .D = 5, .Dv = 3, .causal = true},
    {.B = 2, .Sq = 4, .Sk = 11, .H = 4, .Hk = 2, .D = 3, .Dv = 5, .causal = true, .mask = {2, 1, 4, 11}},  // grouped kv
    {.B = 2, .Sq = 7, .Sk = 3, .H = 2, .Hk = 1, .D = 6, .Dv = 2, .causal = true},  // first rows see nothing
    {.B = 3, .Sq = 6, .Sk = 5, .H = 1, .Hk = 1, .D = 7, .Dv = 4, .mask = {6, 5}, .three_d = true},
    {.B = 2, .Sq = 3, .Sk = 4, .H = 2, .Hk = 2, .D = 3, .Dv = 4, .mask = {2, 1, 1, 4}, .Nout = 5, .bias = true},
    {.B = 2, .Sq = 5, .Sk = 5, .H = 1, .Hk = 1, .D = 4, .Dv = 3, .causal = true, .three_d = true, .Nout = 3},
};

void expect_forward(const Case& c, uint32_t backend, int dt, const Inputs& in, double tol, const char* what) {
  const Ref r = reference(c, in.q, in.k, in.v, c.mask.empty() ? nullptr : &in.mask, c.Nout ? &in.w : nullptr,
                          c.bias ? &in.bias : nullptr);
  T o(dt, c.o()), lse(CCV_32F, c.lse()), y(dt, c.Nout ? c.y() : std::vector<int>{1});
  std::vector<ccv_nnc_tensor_t*> out = c.Nout ? std::vector<ccv_nnc_tensor_t*>{y, lse, o} : std::vector<ccv_nnc_tensor_t*>{o, lse};
  ASSERT_EQ(run(c.cmd(FWD, backend), in.list(c), out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int b = 0; b < c.B; b++)
    for (int i = 0; i < c.Sq; i++)
      for (int h = 0; h < c.H; h++) {
        const double l = r.lse[(static_cast<size_t>(b) * c.H + h) * c.Sq + i];
        const double got = c.three_d ? lse.get(static_cast<size_t>(i) * c.B + b) : lse.get((static_cast<size_t>(b) * c.H + h) * c.Sq + i);
        if (std::isinf(l))
          EXPECT_TRUE(std::isinf(got) && got < 0) << what << " lse " << b << "," << h << "," << i;
        else
          EXPECT_NEAR(got, l, 1e-5 * std::max(1.0, std::fabs(l))) << what << " lse " << b << "," << h << "," << i;
        for (int d = 0; d < c.Dv; d++) {
          const double want = r.o[((static_cast<size_t>(b) * c.Sq + i) * c.H + h) * c.Dv + d];
          EXPECT_NEAR(at4(o, c.three_d, b, i, h, d), want, tol * std::max(1.0, std::fabs(want)))
              << what << " o at " << b << "," << i << "," << h << "," << d;
        }
      }
  for (size_t e = 0; e < r.y.size(); e++)
    EXPECT_NEAR(y.get(e), r.y[e], tol * std::max(1.0, std::fabs(r.y[e]))) << what << " y " << e;
}

TEST_F(Attention, ForwardMatchesDirectSoftmaxInDouble) {
  uint32_t seed = 1900;
  for (const Case& c : kCases)
    for (uint32_t backend : {REF, OPT})
      for (int dt : {CCV_32F, CCV_64F}) {
        if (backend == OPT && dt == CCV_64F) continue;
        std::mt19937 rng(seed++);
        const Inputs in(c, dt, rng);
        SCOPED_TRACE(testing::Message() << "case " << (&c - kCases) << " backend " << backend << " dt " << dt);
        expect_forward(c, backend, dt, in, dt == CCV_64F ? 1e-12 : 2e-5, "");
      }
}

TEST_F(Attention, HalfPrecisionOnTheReferenceBackend) {
  uint32_t seed = 1990;
  for (int dt : {CCV_16F, CCV_16BF})
    for (const Case& c : {kCases[2], kCases[5]}) {
      std::mt19937 rng(seed++);
      const Inputs in(c, dt, rng);
      SCOPED_TRACE(testing::Message() << "dt " << dt);
      expect_forward(c, REF, dt, in, dt == CCV_16F ? 2e-3 : 1.6e-2, "");
    }
}

TEST_F(Attention, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_sdpa_forward();
  EXPECT_EQ(f.cmd, FWD);
  EXPECT_EQ(f.info.scaled_dot_product_attention.scale, 0.5f);
  EXPECT_EQ(f.info.scaled_dot_product_attention.is_causal, 1);
  float o[4];
  ASSERT_EQ(nnc_test_sdpa_example(o), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // Row 0 sees key 0 only; row 1 weighs scores 0 and 1: e / (1 + e) on key 1.
  const double p1 = std::exp(1.0) / (1 + std::exp(1.0));
  EXPECT_NEAR(o[0], 1, 1e-6);
  EXPECT_NEAR(o[1], 2, 1e-6);
  EXPECT_NEAR(o[2], 1 + 2 * p1, 1e-6);
  EXPECT_NEAR(o[3], 2 + 2 * p1, 1e-6);
}

// Backward inputs in libnnc's 12 slots.
std::vector<ccv_nnc_tensor_t*> backward_inputs(const Case& c, const Inputs& in, ccv_nnc_tensor_t* g, ccv_nnc_tensor_t* o,
                                               ccv_nnc_tensor_t* lse, ccv_nnc_tensor_t* y) {
  std::vector<ccv_nnc_tensor_t*> l = {g, nullptr, nullptr, in.q, in.k, in.v, c.mask.empty() ? nullptr : in.mask.get()};
  l.push_back(c.Nout ? in.w.get() : nullptr);
  l.push_back(c.Nout && c.bias ? in.bias.get() : nullptr);
  l.push_back(c.Nout ? y : o);
  l.push_back(lse);
  l.push_back(c.Nout ? o : nullptr);
  return l;
}

// L = <r, output 0>; dL/dx from the backward against central differences.
TEST_F(Attention, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(1950);
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << "case " << (&c - kCases));
    Inputs in(c, CCV_64F, rng);
    const std::vector<int> out0 = c.Nout ? c.y() : c.o();
    T r(CCV_64F, out0), o(CCV_64F, c.o()), lse(CCV_32F, c.lse()), y(CCV_64F, c.Nout ? c.y() : std::vector<int>{1});
    fill_uniform(r, rng);
    std::vector<ccv_nnc_tensor_t*> fo = c.Nout ? std::vector<ccv_nnc_tensor_t*>{y, lse, o} : std::vector<ccv_nnc_tensor_t*>{o, lse};
    auto loss = [&]() {
      EXPECT_EQ(run(c.cmd(FWD, REF), in.list(c), fo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      const T& out = c.Nout ? y : o;
      double l = 0;
      for (size_t e = 0; e < out.count(); e++) l += out.get(e) * r.get(e);
      return l;
    };
    loss();
    T dq(CCV_64F, c.q()), dk(CCV_64F, c.k()), dv(CCV_64F, c.v()), dw(CCV_64F, c.Nout ? c.w() : std::vector<int>{1}),
        db(CCV_64F, {std::max(c.Nout, 1)});
    std::vector<ccv_nnc_tensor_t*> bo = {dq, dk, dv, nullptr, c.Nout ? dw.get() : nullptr, c.bias ? db.get() : nullptr};
    ASSERT_EQ(run(c.cmd(BWD, REF), backward_inputs(c, in, r, o, lse, y), bo), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    std::vector<std::pair<T*, T*>> pairs = {{&in.q, &dq}, {&in.k, &dk}, {&in.v, &dv}};
    if (c.Nout) pairs.push_back({&in.w, &dw});
    if (c.bias) pairs.push_back({&in.bias, &db});
    for (auto [x, dx] : pairs)
      for (size_t e = 0; e < x->count(); e++) {
        const double v0 = x->get(e), eps = 1e-6;
        x->set(e, v0 + eps);
        const double up = loss();
        x->set(e, v0 - eps);
        const double down = loss();
        x->set(e, v0);
        const double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(dx->get(e), numeric, 1e-6 * std::max(1.0, std::fabs(numeric))) << "element " << e;
      }
  }
}

TEST_F(Attention, OptAgreesWithRefOnViewsAndThreadedSizes) {
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({.B = 2, .Sq = 131, .Sk = 150, .H = 3, .Hk = 3, .D = 32, .Dv = 24, .causal = true, .mask = {131, 150}});
  cases.push_back({.B = 1, .Sq = 200, .Sk = 77, .H = 4, .Hk = 2, .D = 16, .Dv = 16, .Nout = 40, .bias = true});
  uint32_t seed = 1960;
  for (const Case& c : cases)
    for (int view : {0, 1}) {
      SCOPED_TRACE(testing::Message() << "case " << c.B << "x" << c.Sq << "x" << c.Sk << "x" << c.H << " view " << view);
      std::mt19937 rng(seed++);
      const int dt = CCV_32F;
      const Inputs in(c, dt, rng, view);
      const std::vector<int> out0 = c.Nout ? c.y() : c.o();
      T ro(dt, c.o()), rl(CCV_32F, c.lse()), ry(dt, c.Nout ? c.y() : std::vector<int>{1});
      T oo = Inputs::make(dt, c.o(), view), ol = Inputs::make(CCV_32F, c.lse(), view),
        oy = Inputs::make(dt, c.Nout ? c.y() : std::vector<int>{1}, view);
      auto outs = [&](T& o, T& l, T& y) {
        return c.Nout ? std::vector<ccv_nnc_tensor_t*>{y, l, o} : std::vector<ccv_nnc_tensor_t*>{o, l};
      };
      ASSERT_EQ(run(c.cmd(FWD, REF), in.list(c), outs(ro, rl, ry)), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(c.cmd(FWD, OPT), in.list(c), outs(oo, ol, oy)), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      EXPECT_LE(max_rel_diff(oo, ro), 1e-5);
      for (size_t e = 0; e < rl.count(); e++) {
        if (std::isinf(rl.get(e))) EXPECT_EQ(ol.get(e), rl.get(e)) << "lse " << e;
        else EXPECT_NEAR(ol.get(e), rl.get(e), 1e-5 * std::max(1.0, std::fabs(rl.get(e)))) << "lse " << e;
      }
      if (c.Nout) EXPECT_LE(max_rel_diff(oy, ry), 1e-5);
      EXPECT_TRUE(oo.guard_intact() && ol.guard_intact() && oy.guard_intact());
      // Backward: OPT with the saved o / lse against REF.
      T g = Inputs::make(dt, out0, view);
      fill_uniform(g, rng);
      T rdq(dt, c.q()), rdk(dt, c.k()), rdv(dt, c.v()), rdw(dt, c.Nout ? c.w() : std::vector<int>{1}), rdb(dt, {std::max(c.Nout, 1)});
      T odq = Inputs::make(dt, c.q(), view), odk = Inputs::make(dt, c.k(), view), odv = Inputs::make(dt, c.v(), view),
        odw = Inputs::make(dt, c.Nout ? c.w() : std::vector<int>{1}, view), odb = Inputs::make(dt, {std::max(c.Nout, 1)}, view);
      auto bouts = [&](T& dq, T& dk, T& dv, T& dw, T& db) {
        return std::vector<ccv_nnc_tensor_t*>{dq, dk, dv, nullptr, c.Nout ? dw.get() : nullptr, c.bias ? db.get() : nullptr};
      };
      ASSERT_EQ(run(c.cmd(BWD, REF), backward_inputs(c, in, g, ro, rl, ry), bouts(rdq, rdk, rdv, rdw, rdb)), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      ASSERT_EQ(run(c.cmd(BWD, OPT), backward_inputs(c, in, g, oo, ol, oy), bouts(odq, odk, odv, odw, odb)), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      EXPECT_LE(max_rel_diff(odq, rdq), 1e-4);
      EXPECT_LE(max_rel_diff(odk, rdk), 1e-4);
      EXPECT_LE(max_rel_diff(odv, rdv), 1e-4);
      if (c.Nout) EXPECT_LE(max_rel_diff(odw, rdw), 1e-4);
      if (c.bias) EXPECT_LE(max_rel_diff(odb, rdb), 1e-4);
      EXPECT_TRUE(odq.guard_intact() && odk.guard_intact() && odv.guard_intact());
      // Without the saved statistics, OPT recomputes them.
      std::vector<ccv_nnc_tensor_t*> bin = backward_inputs(c, in, g, oo, nullptr, oy);
      T odq2(dt, c.q());
      std::vector<ccv_nnc_tensor_t*> bo2 = {odq2, nullptr, nullptr};
      ASSERT_EQ(run(c.cmd(BWD, OPT), bin, bo2), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      EXPECT_LE(max_rel_diff(odq2, rdq), 1e-4);
      // Fused, as autodiff calls it: without qkv and bias (o recomputed, dbias a sum of g).
      if (c.Nout) {
        std::vector<ccv_nnc_tensor_t*> bin3 = backward_inputs(c, in, g, oo, ol, oy);
        bin3[8] = bin3[11] = nullptr;
        T dq3(dt, c.q()), dk3(dt, c.k()), dv3(dt, c.v()), dw3(dt, c.w()), db3(dt, {c.Nout});
        for (uint32_t backend : {REF, OPT}) {
          ASSERT_EQ(run(c.cmd(BWD, backend), bin3, {dq3, dk3, dv3, nullptr, dw3, db3}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          EXPECT_LE(max_rel_diff(dq3, rdq), 1e-4) << backend;
          EXPECT_LE(max_rel_diff(dk3, rdk), 1e-4) << backend;
          EXPECT_LE(max_rel_diff(dw3, rdw), 1e-4) << backend;
          if (c.bias) EXPECT_LE(max_rel_diff(db3, rdb), 1e-4) << backend;
        }
      }
    }
}

TEST_F(Attention, OutputMayBeTheQuery) {
  const Case c = {.B = 2, .Sq = 70, .Sk = 70, .H = 2, .Hk = 2, .D = 8, .Dv = 8, .causal = true};
  for (uint32_t backend : {REF, OPT}) {
    std::mt19937 rng(1970);
    Inputs in(c, CCV_32F, rng);
    T want(CCV_32F, c.o());
    ASSERT_EQ(run(c.cmd(FWD, backend), in.list(c), {want, nullptr}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(c.cmd(FWD, backend), in.list(c), {in.q, nullptr}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(in.q, want), 0) << backend;
  }
}

// libnnc's description file: tensor_auto (o like q with v's last extent;
// lse [B, H, Sq] / [Sq, B] in 32F; the fused y [B, Sq, H * Dv] and qkv),
// bitmasks, in-place only output 0 on q.
TEST_F(Attention, LibnncContract) {
  const Case c = kCases[0];
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  const ccv_nnc_cmd_t f = c.cmd(FWD);
  {
    ccv_nnc_tensor_param_t in[3] = {param(CCV_64F, c.q()), param(CCV_64F, c.k()), param(CCV_64F, c.v())}, out[2];
    ccv_nnc_hint_tensor_auto(f, in, 3, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 5, 3, 6}));
    EXPECT_EQ(out[0].datatype, CCV_64F);
    EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 3, 5, 0}));
    EXPECT_EQ(out[1].datatype, CCV_32F);
  }
  {
    ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, {2, 5, 4}), param(CCV_32F, {2, 7, 4}), param(CCV_32F, {2, 7, 6})}, out[2];
    ccv_nnc_hint_tensor_auto(f, in, 3, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 5, 6, 0}));
    EXPECT_EQ(dims(out[1]), (std::vector<int>{5, 2, 0, 0}));
  }
  {
    ccv_nnc_tensor_param_t in[6] = {param(CCV_32F, c.q()), param(CCV_32F, c.k()), param(CCV_32F, c.v()),
                                    param(CCV_32F, {}), param(CCV_32F, {18, 18}), param(CCV_32F, {18})},
                           out[3];
    ccv_nnc_hint_tensor_auto(f, in, 6, ccv_nnc_no_hint, out, 3);
    EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 5, 18, 0}));
    EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 3, 5, 0}));
    EXPECT_EQ(dims(out[2]), (std::vector<int>{2, 5, 3, 6}));
  }
  {
    std::vector<ccv_nnc_tensor_param_t> in(12, param(CCV_32F, {}));
    in[3] = param(CCV_32F, c.q()), in[4] = param(CCV_32F, c.k()), in[5] = param(CCV_32F, c.v());
    ccv_nnc_tensor_param_t out[3];
    ccv_nnc_hint_tensor_auto(c.cmd(BWD), in.data(), 12, ccv_nnc_no_hint, out, 3);
    EXPECT_EQ(dims(out[0]), dims(in[3]));
    EXPECT_EQ(dims(out[1]), dims(in[4]));
    EXPECT_EQ(dims(out[2]), dims(in[5]));
  }
  auto bm = [](uint32_t id, int ni, int no, uint64_t in, uint64_t out) {
    return ccv_nnc_cmd_bitmask(ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0), ni, no, &in, 1, &out, 1);
  };
  EXPECT_TRUE(bm(FWD, 3, 2, 7, 3));
  EXPECT_TRUE(bm(FWD, 4, 2, 15, 3));     // with a mask
  EXPECT_FALSE(bm(FWD, 3, 1, 7, 1));     // lse is part of libnnc's pattern
  EXPECT_FALSE(bm(FWD, 3, 2, 3, 3));     // no v
  EXPECT_TRUE(bm(FWD, 6, 3, 55, 7));     // fused, bias, no mask
  EXPECT_TRUE(bm(FWD, 6, 3, 63, 7));
  EXPECT_TRUE(bm(FWD, 5, 3, 23, 7));     // fused, no bias
  EXPECT_FALSE(bm(FWD, 6, 3, 55, 3));    // fused needs qkv out
  EXPECT_FALSE(bm(FWD, 6, 2, 39, 3));    // bias without w
  EXPECT_TRUE(bm(BWD, 12, 6, 1593, 7));
  EXPECT_TRUE(bm(BWD, 12, 6, 1593 | 64, 7));
  EXPECT_FALSE(bm(BWD, 12, 6, 1593 & ~1024u, 7));  // no lse
  EXPECT_FALSE(bm(BWD, 12, 6, 1593 & ~512u, 7));   // no o
  EXPECT_TRUE(bm(BWD, 12, 6, 3769, 23));
  EXPECT_TRUE(bm(BWD, 12, 6, 4025, 55));
  EXPECT_FALSE(bm(BWD, 12, 6, 1593 & ~8u, 7));  // no q
  EXPECT_TRUE(bm(BWD, 12, 6, 1593 | 128, 55));   // libnnc's third rule ignores w and the outputs past 2
  EXPECT_FALSE(bm(BWD, 12, 6, 1593 | 2048, 7));  // ours: qkv without w is refused (see attention.cpp)
  EXPECT_FALSE(bm(BWD, 12, 6, 1593, 3));
  const ccv_nnc_cmd_t fc = ccv_nnc_cmd(FWD, nullptr, ccv_nnc_cmd_auto, 0);
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(fc, 0, 3, 0, 2));
  for (int i = 0; i < 6; i++)
    for (int o = 0; o < 3; o++) {
      if (i == 0 && o == 0) continue;
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(fc, i, 6, o, 3)) << i << "," << o;
    }
  EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(fc, 0, 3, 0, 2));
  const ccv_nnc_cmd_t bc = ccv_nnc_cmd(BWD, nullptr, ccv_nnc_cmd_auto, 0);
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(bc, 3, 12, 0, 3));
}

TEST_F(Attention, BadInputFailsWithAMessage) {
  const Case c = kCases[0];
  std::mt19937 rng(1980);
  Inputs in(c, CCV_32F, rng);
  T o(CCV_32F, c.o()), lse(CCV_32F, c.lse());
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, in.v}, {o, lse}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  T k_bad(CCV_32F, {c.B, c.Sk, c.Hk, c.D + 1});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, k_bad, in.v}, {o, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("head sizes")) << ccv_nnc_error_message();
  T v_bad(CCV_32F, {c.B, c.Sk + 1, c.Hk, c.Dv});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, v_bad}, {o, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("sequence")) << ccv_nnc_error_message();
  T o_bad(CCV_32F, {c.B, c.Sq, c.H, c.Dv + 1});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, in.v}, {o_bad, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("expected")) << ccv_nnc_error_message();
  T k64(CCV_64F, c.k());
  EXPECT_EQ(run(c.cmd(FWD), {in.q, k64, in.v}, {o, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("share one type")) << ccv_nnc_error_message();
  T mask_bad(CCV_32F, {3, c.Sk});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, in.v, mask_bad}, {o, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("broadcast")) << ccv_nnc_error_message();
  T w_bad(CCV_32F, {4, c.H * c.Dv + 1}), y(CCV_32F, {c.B, c.Sq, 4});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, in.v, nullptr, w_bad}, {y, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("unify-head")) << ccv_nnc_error_message();
  EXPECT_NE(run(c.cmd(FWD), {in.q, nullptr, in.v}, {o, lse}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(message_has("required")) << ccv_nnc_error_message();
  T lse_bad(CCV_32F, {c.B, c.Sq, c.H});
  EXPECT_EQ(run(c.cmd(FWD), {in.q, in.k, in.v}, {o, lse_bad}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("lse")) << ccv_nnc_error_message();
  T q5(CCV_32F, {1, 2, 3, 4, 5});
  EXPECT_EQ(run(c.cmd(FWD), {q5, in.k, in.v}, {o, lse}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("4-d")) << ccv_nnc_error_message();
  // Backward: a gradient of the wrong shape, every output NULL.
  T dq(CCV_32F, c.q()), dk_bad(CCV_32F, {c.B, c.Sk, c.Hk, c.D + 1});
  std::vector<ccv_nnc_tensor_t*> bin = {o, nullptr, nullptr, in.q, in.k, in.v, nullptr, nullptr, nullptr, o, lse};
  EXPECT_EQ(run(c.cmd(BWD), bin, {dq, dk_bad, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dk")) << ccv_nnc_error_message();
  EXPECT_EQ(run(c.cmd(BWD), bin, {nullptr, nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("NULL")) << ccv_nnc_error_message();
}

}  // namespace
