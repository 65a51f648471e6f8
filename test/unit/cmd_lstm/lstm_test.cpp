// LSTM against an unrolled loop of matrix-vector products and activations
// written here in fp64 (from the packed order documented in lstm.hpp, which
// is torch.nn.LSTM's _flat_weights order), central finite differences for
// every input, CPU_OPT against CPU_REF (threaded sizes, views, batch first,
// the AVX2 loops through the _avx2 registration), libnnc's conventions from
// its description file, dropout recorded in the reserve, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" {
ccv_nnc_cmd_t nnc_test_lstm_forward(void);
int nnc_test_lstm_example(double y[12], double hy[2], double cy[2]);
}

using namespace cmdtest;

namespace {

class Lstm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;

struct Cfg {
  int steps = 4, batch = 3, feat = 5, hidden = 6, proj = 0, layers = 1;
  bool bidir = false, bias = true, batch_first = false, h0 = true, c0 = true;
  float dropout = 0;
  int is_test = 0;
  std::vector<int> len;  // empty: every sequence full length
  int dirs() const { return bidir ? 2 : 1; }
  int P() const { return proj ? proj : hidden; }
  int in(int l) const { return l == 0 ? feat : dirs() * P(); }
  size_t weights() const {
    size_t n = 0;
    for (int l = 0; l < layers; l++)
      n += static_cast<size_t>(dirs()) *
           (4 * hidden * in(l) + 4 * hidden * P() + (bias ? 8 * hidden : 0) + (proj ? P() * hidden : 0));
    return n;
  }
  std::vector<int> xshape() const {
    return batch_first ? std::vector<int>{batch, steps, feat} : std::vector<int>{steps, batch, feat};
  }
  std::vector<int> yshape() const {
    const int o = dirs() * P();
    return batch_first ? std::vector<int>{batch, steps, o} : std::vector<int>{steps, batch, o};
  }
  std::vector<int> hshape() const { return {layers * dirs(), batch, P()}; }
  std::vector<int> cshape() const { return {layers * dirs(), batch, hidden}; }
};

ccv_nnc_cmd_t lstm_cmd(const Cfg& c, bool backward, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.rnn.hidden_size = c.hidden;
  p.rnn.proj_size = c.proj;
  p.rnn.num_layers = c.layers;
  p.rnn.bias = c.bias;
  p.rnn.batch_first = c.batch_first;
  p.rnn.bidirectional = c.bidir;
  p.rnn.dropout = c.dropout;
  p.rnn.is_test = c.is_test;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(backward ? CCV_NNC_LSTM_BACKWARD : CCV_NNC_LSTM_FORWARD, nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

ccv_nnc_tensor_param_t reserve_param(const Cfg& c, int datatype) {
  ccv_nnc_tensor_param_t in[5] = {param(datatype, c.xshape()), param(CCV_32S, {c.batch}), param(datatype, c.hshape()),
                                  param(datatype, c.cshape()), param(datatype, {static_cast<int>(c.weights())})};
  ccv_nnc_tensor_param_t out[4];
  std::memset(out, 0, sizeof(out));
  ccv_nnc_hint_tensor_auto(lstm_cmd(c, false), in, 5, ccv_nnc_no_hint, out, 4);
  return out[3];
}

std::vector<int> dims_of(const ccv_nnc_tensor_param_t& p) {
  std::vector<int> d;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && p.dim[i]; i++) d.push_back(p.dim[i]);
  return d;
}

// The reserve's size in elements, from the layout lstm.hpp documents.
size_t reserve_count(const Cfg& c) {
  const size_t TB = size_t(c.steps) * c.batch, H = c.hidden, P = c.P(), O = size_t(c.dirs()) * P;
  const size_t cell = TB * 4 * H + (TB + c.batch) * H + (TB + c.batch) * P + (c.proj ? TB * H : 0);
  return c.layers * c.dirs() * cell + (c.layers - 1) * TB * O * (c.dropout > 0 && c.layers > 1 ? 2 : 1);
}

// ---- The reference: matrix-vector products per step, fp64. ----

struct Ref {
  std::vector<double> y, hy, cy;
};
double sig(double v) { return 1 / (1 + std::exp(-v)); }

// x, h0, c0 in their tensors' row-major order; w packed; factors[l] the
// dropout factors after layer l, time-major [T, B, D·P] (empty: none).
Ref reference(const Cfg& c, const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& h0,
              const std::vector<double>& c0, const std::vector<std::vector<double>>& factors = {}) {
  const int T = c.steps, B = c.batch, H = c.hidden, P = c.P(), D = c.dirs();
  // Layer input as seq[t][b] vectors.
  std::vector<std::vector<std::vector<double>>> seq(T, std::vector<std::vector<double>>(B));
  for (int t = 0; t < T; t++)
    for (int b = 0; b < B; b++)
      for (int f = 0; f < c.feat; f++)
        seq[t][b].push_back(c.batch_first ? x[(static_cast<size_t>(b) * T + t) * c.feat + f]
                                          : x[(static_cast<size_t>(t) * B + b) * c.feat + f]);
  Ref r;
  r.hy.assign(static_cast<size_t>(c.layers) * D * B * P, 0);
  r.cy.assign(static_cast<size_t>(c.layers) * D * B * H, 0);
  size_t off = 0;
  auto take = [&](size_t n) {
    std::vector<double> v(w.begin() + static_cast<long>(off), w.begin() + static_cast<long>(off + n));
    off += n;
    return v;
  };
  for (int l = 0; l < c.layers; l++) {
    const int I = c.in(l);
    std::vector<std::vector<std::vector<double>>> out(
        T, std::vector<std::vector<double>>(B, std::vector<double>(D * P, 0)));
    for (int d = 0; d < D; d++) {
      const std::vector<double> Wih = take(4 * H * I), Whh = take(4 * H * P);
      std::vector<double> bih(4 * H, 0), bhh(4 * H, 0), Whr;
      if (c.bias) bih = take(4 * H), bhh = take(4 * H);
      if (c.proj) Whr = take(static_cast<size_t>(P) * H);
      const int k = l * D + d;
      for (int b = 0; b < B; b++) {
        const int len = c.len.empty() ? T : c.len[b];
        std::vector<double> h(P), cc(H);
        for (int j = 0; j < P; j++) h[j] = c.h0 ? h0[(static_cast<size_t>(k) * B + b) * P + j] : 0;
        for (int j = 0; j < H; j++) cc[j] = c.c0 ? c0[(static_cast<size_t>(k) * B + b) * H + j] : 0;
        for (int s = 0; s < len; s++) {
          const int t = d == 0 ? s : len - 1 - s;  // the reverse direction starts at the sequence's own end
          std::vector<double> a(4 * H);
          for (int q = 0; q < 4 * H; q++) {
            double v = bih[q] + bhh[q];
            for (int f = 0; f < I; f++) v += Wih[static_cast<size_t>(q) * I + f] * seq[t][b][f];
            for (int f = 0; f < P; f++) v += Whh[static_cast<size_t>(q) * P + f] * h[f];
            a[q] = v;
          }
          std::vector<double> m(H);
          for (int j = 0; j < H; j++) {
            cc[j] = sig(a[H + j]) * cc[j] + sig(a[j]) * std::tanh(a[2 * H + j]);
            m[j] = sig(a[3 * H + j]) * std::tanh(cc[j]);
          }
          if (c.proj) {
            for (int q = 0; q < P; q++) {
              h[q] = 0;
              for (int j = 0; j < H; j++) h[q] += Whr[static_cast<size_t>(q) * H + j] * m[j];
            }
          } else {
            h = m;
          }
          for (int j = 0; j < P; j++) out[t][b][d * P + j] = h[j];
        }
        for (int j = 0; j < P; j++) r.hy[(static_cast<size_t>(k) * B + b) * P + j] = h[j];
        for (int j = 0; j < H; j++) r.cy[(static_cast<size_t>(k) * B + b) * H + j] = cc[j];
      }
    }
    if (l + 1 < c.layers && static_cast<size_t>(l) < factors.size() && !factors[l].empty())
      for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
          for (int j = 0; j < D * P; j++) out[t][b][j] *= factors[l][(static_cast<size_t>(t) * B + b) * D * P + j];
    seq = out;
  }
  const int O = D * P;
  r.y.assign(static_cast<size_t>(T) * B * O, 0);
  for (int t = 0; t < T; t++)
    for (int b = 0; b < B; b++)
      for (int j = 0; j < O; j++)
        r.y[(c.batch_first ? static_cast<size_t>(b) * T + t : static_cast<size_t>(t) * B + b) * O + j] = seq[t][b][j];
  return r;
}

std::vector<double> values(const T& t) {
  std::vector<double> v(t.count());
  for (size_t i = 0; i < v.size(); i++) v[i] = t.get(i);
  return v;
}

// The forward's tensors for one configuration, filled at random.
struct Fixture {
  Cfg c;
  int dt;
  std::unique_ptr<T> x, xs, h0, c0, w, y, hy, cy, r;
  Fixture(const Cfg& cfg, int datatype, std::mt19937& rng, bool views = false) : c(cfg), dt(datatype) {
    auto make = [&](std::vector<int> s) { return std::make_unique<T>(views ? T::view(dt, s) : T(dt, s)); };
    x = make(c.xshape());
    fill_uniform(*x, rng);
    if (!c.len.empty()) {
      xs = std::make_unique<T>(CCV_32S, std::vector<int>{c.batch});
      for (int b = 0; b < c.batch; b++) xs->set(b, c.len[b]);
    }
    if (c.h0) h0 = make(c.hshape()), fill_uniform(*h0, rng);
    if (c.c0) c0 = make(c.cshape()), fill_uniform(*c0, rng);
    w = std::make_unique<T>(dt, std::vector<int>{static_cast<int>(c.weights())});
    fill_uniform(*w, rng, -0.6, 0.6);
    y = make(c.yshape());
    hy = make(c.hshape());
    cy = make(c.cshape());
    r = std::make_unique<T>(dt, dims_of(reserve_param(c, dt)));
  }
  static ccv_nnc_tensor_t* p(const std::unique_ptr<T>& t) { return t ? t->get() : nullptr; }
  std::vector<ccv_nnc_tensor_t*> in() const { return {p(x), p(xs), p(h0), p(c0), p(w)}; }
  std::vector<ccv_nnc_tensor_t*> out() const { return {p(y), p(hy), p(cy), p(r)}; }
  int forward(uint32_t backend) const { return run(lstm_cmd(c, false, backend), in(), out()); }
  Ref ref(const std::vector<std::vector<double>>& factors = {}) const {
    return reference(c, values(*x), values(*w), h0 ? values(*h0) : std::vector<double>{},
                     c0 ? values(*c0) : std::vector<double>{}, factors);
  }
};

double max_diff(const T& t, const std::vector<double>& ref) {
  double worst = 0;
  EXPECT_EQ(t.count(), ref.size());
  for (size_t i = 0; i < t.count() && i < ref.size(); i++) worst = std::max(worst, std::fabs(t.get(i) - ref[i]));
  return worst;
}

void expect_forward(const Cfg& c, uint32_t backend, int dt, double tol, bool views = false) {
  std::mt19937 rng(7);
  Fixture f(c, dt, rng, views);
  ASSERT_EQ(f.forward(backend), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const Ref r = f.ref();
  EXPECT_LE(max_diff(*f.y, r.y), tol) << "y";
  EXPECT_LE(max_diff(*f.hy, r.hy), tol) << "hy";
  EXPECT_LE(max_diff(*f.cy, r.cy), tol) << "cy";
  if (views) {
    EXPECT_TRUE(f.y->guard_intact() && f.hy->guard_intact() && f.cy->guard_intact());
  }
}

std::vector<Cfg> shapes() {
  std::vector<Cfg> v;
  Cfg c;
  v.push_back(c);  // one layer, one direction
  c.layers = 2;
  v.push_back(c);
  c.layers = 1, c.bidir = true;
  v.push_back(c);
  c.layers = 3, c.batch_first = true, c.h0 = false;
  v.push_back(c);
  c = Cfg{};
  c.layers = 2, c.bidir = true, c.proj = 4, c.bias = false, c.c0 = false, c.steps = 5, c.batch = 2, c.feat = 7,
  c.hidden = 5;
  v.push_back(c);
  c = Cfg{};
  c.batch_first = true, c.steps = 1, c.batch = 1, c.feat = 1, c.hidden = 1;
  v.push_back(c);
  c = Cfg{};
  c.layers = 2, c.bidir = true, c.len = {4, 1, 3};  // ragged: sequences end early
  v.push_back(c);
  c.proj = 3, c.batch_first = true, c.len = {2, 4, 0};
  v.push_back(c);
  return v;
}

TEST_F(Lstm, ForwardMatchesUnrolledReference) {
  int k = 0;
  for (const Cfg& c : shapes()) {
    SCOPED_TRACE(testing::Message() << "shape " << k++);
    for (uint32_t backend : {REF, OPT}) {
      SCOPED_TRACE(ccv_nnc_cmd_backend_name(backend));
      expect_forward(c, backend, CCV_64F, 1e-12);
      expect_forward(c, backend, CCV_32F, 2e-5);
    }
  }
}

TEST_F(Lstm, ForwardReadsAndWritesViews) {
  for (const Cfg& c : shapes())
    for (uint32_t backend : {REF, OPT}) expect_forward(c, backend, CCV_64F, 1e-12, true);
}

TEST_F(Lstm, TwoDimensionalInputIsOneSequence) {
  std::mt19937 rng(3);
  Cfg c;
  c.batch = 1, c.layers = 2;
  T x2(CCV_64F, {c.steps, c.feat}), x3(CCV_64F, {c.steps, 1, c.feat});
  fill_uniform(x2, rng);
  for (size_t i = 0; i < x2.count(); i++) x3.set(i, x2.get(i));
  T w(CCV_64F, {static_cast<int>(c.weights())});
  fill_uniform(w, rng);
  ccv_nnc_tensor_param_t yp;
  const ccv_nnc_tensor_param_t in[5] = {x2.get()->info, {}, {}, {}, w.get()->info};
  ccv_nnc_hint_tensor_auto(lstm_cmd(c, false), in, 5, ccv_nnc_no_hint, &yp, 1);
  EXPECT_EQ(dims_of(yp), (std::vector<int>{c.steps, 1, c.hidden}));  // libnnc: y is 3-d even for a 2-d x
  for (uint32_t backend : {REF, OPT}) {
    T y2(CCV_64F, {c.steps, 1, c.hidden}), y3(CCV_64F, {c.steps, 1, c.hidden});
    ASSERT_EQ(run(lstm_cmd(c, false, backend), {x2, nullptr, nullptr, nullptr, w}, {y2}), 0) << ccv_nnc_error_message();
    ASSERT_EQ(run(lstm_cmd(c, false, backend), {x3, nullptr, nullptr, nullptr, w}, {y3}), 0) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(y2, y3), 0);
    c.h0 = c.c0 = false;
    EXPECT_LE(max_diff(y3, reference(c, values(x2), values(w), {}, {}).y), 1e-12);
  }
}

// Central differences of L = <gy, y> + <ghy, hy> + <gcy, cy> for every element
// of x, h0, c0 and w, against the backward given the forward's reserve.
void expect_gradients(const Cfg& c, uint32_t backend, double tol = 1e-6) {
  std::mt19937 rng(11);
  Fixture f(c, CCV_64F, rng);
  T gy(CCV_64F, c.yshape()), ghy(CCV_64F, c.hshape()), gcy(CCV_64F, c.cshape());
  fill_uniform(gy, rng), fill_uniform(ghy, rng), fill_uniform(gcy, rng);
  const bool drop = c.dropout > 0;
  auto loss = [&]() {
    if (drop) ccv_nnc_stream_context_set_seed(nullptr, 1234);  // the same dropout masks every time
    EXPECT_EQ(f.forward(backend), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    double l = 0;
    for (size_t i = 0; i < gy.count(); i++) l += gy.get(i) * f.y->get(i);
    for (size_t i = 0; i < ghy.count(); i++) l += ghy.get(i) * f.hy->get(i);
    for (size_t i = 0; i < gcy.count(); i++) l += gcy.get(i) * f.cy->get(i);
    return l;
  };
  loss();
  T dx(CCV_64F, c.xshape()), dw(CCV_64F, {static_cast<int>(c.weights())});
  std::unique_ptr<T> dh0, dc0;
  if (c.h0) dh0 = std::make_unique<T>(CCV_64F, c.hshape());
  if (c.c0) dc0 = std::make_unique<T>(CCV_64F, c.cshape());
  std::vector<ccv_nnc_tensor_t*> bin = {gy, ghy, gcy, nullptr};
  for (ccv_nnc_tensor_t* t : f.in()) bin.push_back(t);
  for (ccv_nnc_tensor_t* t : f.out()) bin.push_back(t);
  ASSERT_EQ(run(lstm_cmd(c, true, backend), bin, {dx, nullptr, Fixture::p(dh0), Fixture::p(dc0), dw}), 0)
      << ccv_nnc_error_message();
  const double eps = 1e-6;
  auto check = [&](T& in, const T& grad, const char* what) {
    for (size_t k = 0; k < in.count(); k++) {
      const double v = in.get(k);
      in.set(k, v + eps);
      const double up = loss();
      in.set(k, v - eps);
      const double down = loss();
      in.set(k, v);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad.get(k), numeric, tol * std::max(1.0, std::fabs(numeric))) << what << " element " << k;
    }
  };
  check(*f.x, dx, "x");
  if (dh0) check(*f.h0, *dh0, "h0");
  if (dc0) check(*f.c0, *dc0, "c0");
  check(*f.w, dw, "w");
}

std::vector<Cfg> small_shapes() {
  std::vector<Cfg> v;
  Cfg c;
  c.steps = 3, c.batch = 2, c.feat = 3, c.hidden = 3;
  v.push_back(c);
  Cfg d = c;
  d.layers = 2, d.bidir = true, d.batch_first = true;
  v.push_back(d);
  d = c;
  d.layers = 2, d.bidir = true, d.proj = 2, d.bias = false, d.h0 = false;
  v.push_back(d);
  d = c;
  d.layers = 2, d.bidir = true, d.len = {3, 1};
  v.push_back(d);
  d = c;
  d.layers = 3, d.dropout = 0.4f;  // masks recorded in the reserve and reused by the backward
  v.push_back(d);
  return v;
}

TEST_F(Lstm, BackwardMatchesFiniteDifferences) {
  int k = 0;
  for (const Cfg& c : small_shapes()) {
    SCOPED_TRACE(testing::Message() << "shape " << k++);
    for (uint32_t backend : {REF, OPT}) {
      SCOPED_TRACE(ccv_nnc_cmd_backend_name(backend));
      expect_gradients(c, backend);
    }
  }
}

// Each backward pattern of libnnc's bitmask gives the same values: dw alone,
// the input gradients alone, NULL dhy / dcy read as zeros.
TEST_F(Lstm, BackwardPartialOutputs) {
  std::mt19937 rng(5);
  Cfg c;
  c.layers = 2, c.bidir = true;
  for (uint32_t backend : {REF, OPT}) {
    Fixture f(c, CCV_64F, rng);
    ASSERT_EQ(f.forward(backend), 0);
    T gy(CCV_64F, c.yshape());
    fill_uniform(gy, rng);
    auto bin = [&](bool with_x) {
      std::vector<ccv_nnc_tensor_t*> v = {gy, nullptr, nullptr, nullptr};
      for (ccv_nnc_tensor_t* t : f.in()) v.push_back(t);
      for (ccv_nnc_tensor_t* t : f.out()) v.push_back(t);
      if (!with_x) v[4] = nullptr;  // libnnc's first pattern: the sizes come from dx
      return v;
    };
    T dx1(CCV_64F, c.xshape()), dh1(CCV_64F, c.hshape()), dc1(CCV_64F, c.cshape()), dw1(CCV_64F, {int(c.weights())});
    T dx2(CCV_64F, c.xshape()), dh2(CCV_64F, c.hshape()), dc2(CCV_64F, c.cshape()), dw2(CCV_64F, {int(c.weights())});
    ASSERT_EQ(run(lstm_cmd(c, true, backend), bin(true), {dx1, nullptr, dh1, dc1, dw1}), 0) << ccv_nnc_error_message();
    ASSERT_EQ(run(lstm_cmd(c, true, backend), bin(false), {dx2, nullptr, dh2, dc2}), 0) << ccv_nnc_error_message();
    ASSERT_EQ(run(lstm_cmd(c, true, backend), bin(true), {nullptr, nullptr, nullptr, nullptr, dw2}), 0);
    EXPECT_EQ(max_rel_diff(dx1, dx2), 0);
    EXPECT_EQ(max_rel_diff(dh1, dh2), 0);
    EXPECT_EQ(max_rel_diff(dc1, dc2), 0);
    EXPECT_EQ(max_rel_diff(dw1, dw2), 0);
  }
}

// ---- CPU_OPT against CPU_REF ----

void expect_opt_matches_ref(const Cfg& c, int dt, double tol, bool views) {
  std::mt19937 rng(21);
  Fixture f(c, dt, rng, views);
  // Forward: everything but r on both; r compared too (the layout is shared).
  Fixture g(c, dt, rng, views);
  auto copy = [](const std::unique_ptr<T>& a, const std::unique_ptr<T>& b) {
    if (a)
      for (size_t i = 0; i < a->count(); i++) b->set(i, a->get(i));
  };
  copy(f.x, g.x), copy(f.h0, g.h0), copy(f.c0, g.c0), copy(f.w, g.w);
  ccv_nnc_stream_context_set_seed(nullptr, 99);
  ASSERT_EQ(f.forward(REF), 0) << ccv_nnc_error_message();
  ccv_nnc_stream_context_set_seed(nullptr, 99);
  ASSERT_EQ(g.forward(OPT), 0) << ccv_nnc_error_message();
  EXPECT_LE(max_rel_diff(*g.y, *f.y), tol) << "y";
  EXPECT_LE(max_rel_diff(*g.hy, *f.hy), tol) << "hy";
  EXPECT_LE(max_rel_diff(*g.cy, *f.cy), tol) << "cy";
  {  // the reserve's elements (its last row is padding)
    const size_t n = reserve_count(c);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
      worst = std::max(worst, std::fabs(g.r->get(i) - f.r->get(i)) / std::max(1.0, std::fabs(f.r->get(i))));
    EXPECT_LE(worst, tol) << "r";
  }
  // Backward from REF's reserve on both.
  auto make = [&](std::vector<int> s) { return std::make_unique<T>(views ? T::view(dt, s) : T(dt, s)); };
  auto gy = make(c.yshape()), ghy = make(c.hshape()), gcy = make(c.cshape());
  fill_uniform(*gy, rng), fill_uniform(*ghy, rng), fill_uniform(*gcy, rng);
  std::vector<ccv_nnc_tensor_t*> bin = {gy->get(), ghy->get(), gcy->get(), nullptr};
  for (ccv_nnc_tensor_t* t : f.in()) bin.push_back(t);
  for (ccv_nnc_tensor_t* t : f.out()) bin.push_back(t);
  std::unique_ptr<T> d[2][4];
  for (int k = 0; k < 2; k++) {
    d[k][0] = make(c.xshape()), d[k][1] = make(c.hshape()), d[k][2] = make(c.cshape());
    d[k][3] = std::make_unique<T>(dt, std::vector<int>{int(c.weights())});
    ASSERT_EQ(run(lstm_cmd(c, true, k ? OPT : REF), bin,
                  {d[k][0]->get(), nullptr, d[k][1]->get(), d[k][2]->get(), d[k][3]->get()}),
              0)
        << ccv_nnc_error_message();
  }
  const char* names[] = {"dx", "dhx", "dcx", "dw"};
  for (int i = 0; i < 4; i++) EXPECT_LE(max_rel_diff(*d[1][i], *d[0][i]), tol) << names[i];
  if (views) {
    for (int i = 0; i < 3; i++) EXPECT_TRUE(d[1][i]->guard_intact()) << names[i];
  }
}

TEST_F(Lstm, OptMatchesRefThreaded) {
  Cfg c;
  c.steps = 6, c.batch = 37, c.feat = 33, c.hidden = 130, c.layers = 2,
  c.bidir = true;  // the batch splits over threads
  expect_opt_matches_ref(c, CCV_32F, 2e-4, false);
  expect_opt_matches_ref(c, CCV_64F, 1e-10, false);
  c.proj = 17, c.len.assign(37, 6);
  for (int b = 0; b < 37; b += 3) c.len[b] = b % 7;
  c.dropout = 0.25f;
  expect_opt_matches_ref(c, CCV_32F, 2e-4, false);
}

TEST_F(Lstm, OptMatchesRefOnViews) {
  for (const Cfg& c : shapes()) {
    expect_opt_matches_ref(c, CCV_64F, 1e-10, true);
    expect_opt_matches_ref(c, CCV_32F, 1e-4, true);
  }
}

// ---- Dropout ----

TEST_F(Lstm, DropoutIsRecordedAndReproducible) {
  Cfg c;
  c.steps = 8, c.batch = 16, c.feat = 5, c.hidden = 16, c.layers = 3, c.bidir = true, c.dropout = 0.3f;
  for (uint32_t backend : {REF, OPT}) {
    std::mt19937 rng(4);
    Fixture f(c, CCV_64F, rng);
    ccv_nnc_stream_context_set_seed(nullptr, 77);
    ASSERT_EQ(f.forward(backend), 0) << ccv_nnc_error_message();
    // The factors' region: after the cell blocks and the layer inputs (lstm.hpp).
    const size_t TB = size_t(c.steps) * c.batch, O = size_t(c.dirs()) * c.P(), H = c.hidden, P = c.P();
    const size_t cell = TB * 4 * H + (TB + c.batch) * H + (TB + c.batch) * P;
    const size_t base = c.layers * c.dirs() * cell + (c.layers - 1) * TB * O;
    std::vector<std::vector<double>> factors(c.layers - 1);
    size_t dropped = 0, total = 0;
    for (int l = 0; l + 1 < c.layers; l++)
      for (size_t e = 0; e < TB * O; e++) {
        const double v = f.r->get(base + l * TB * O + e);
        EXPECT_TRUE(v == 0 || std::fabs(v - 1 / (1 - 0.3)) < 1e-7) << v;
        factors[l].push_back(v);
        dropped += v == 0, total++;
      }
    EXPECT_NEAR(double(dropped) / total, 0.3, 0.05);
    const Ref r = f.ref(factors);
    EXPECT_LE(max_diff(*f.y, r.y), 1e-12);
    EXPECT_LE(max_diff(*f.hy, r.hy), 1e-12);
    // Same seed, same masks; another seed, others.
    T y1(CCV_64F, c.yshape());
    for (size_t i = 0; i < y1.count(); i++) y1.set(i, f.y->get(i));
    ccv_nnc_stream_context_set_seed(nullptr, 77);
    ASSERT_EQ(f.forward(backend), 0);
    EXPECT_EQ(max_rel_diff(*f.y, y1), 0);
    ccv_nnc_stream_context_set_seed(nullptr, 78);
    ASSERT_EQ(f.forward(backend), 0);
    EXPECT_GT(max_rel_diff(*f.y, y1), 0);
    // is_test: no dropout.
    Cfg t = c;
    t.is_test = 1;
    Fixture g(t, CCV_64F, rng);
    for (size_t i = 0; i < g.w->count(); i++) g.w->set(i, f.w->get(i));
    for (size_t i = 0; i < g.x->count(); i++) g.x->set(i, f.x->get(i));
    for (size_t i = 0; i < g.h0->count(); i++) g.h0->set(i, f.h0->get(i));
    for (size_t i = 0; i < g.c0->count(); i++) g.c0->set(i, f.c0->get(i));
    ASSERT_EQ(g.forward(backend), 0);
    EXPECT_LE(max_diff(*g.y, g.ref().y), 1e-12);
  }
}

// ---- libnnc's conventions (its description file) ----

TEST_F(Lstm, TensorAutoShapes) {
  for (Cfg c : shapes()) {
    for (int bf = 0; bf < 2; bf++) {
      c.batch_first = bf;
      ccv_nnc_tensor_param_t in[5] = {param(CCV_32F, c.xshape()), param(CCV_32S, {c.batch}), param(CCV_32F, c.hshape()),
                                      param(CCV_32F, c.cshape()), param(CCV_32F, {int(c.weights())})};
      ccv_nnc_tensor_param_t out[4];
      std::memset(out, 0, sizeof(out));
      ccv_nnc_hint_tensor_auto(lstm_cmd(c, false), in, 5, ccv_nnc_no_hint, out, 4);
      EXPECT_EQ(dims_of(out[0]), c.yshape());
      EXPECT_EQ(out[0].datatype, CCV_32F);
      EXPECT_EQ(dims_of(out[1]), c.hshape());  // hy takes hx's parameters
      EXPECT_EQ(dims_of(out[2]), c.cshape());  // cy takes cx's
      // r: rows of hidden_size holding the aux's size (elements, see lstm.hpp).
      const size_t n = reserve_count(c), H = c.hidden;
      EXPECT_EQ(dims_of(out[3]), (std::vector<int>{int((n + H - 1) / H), int(H)}));
      ccv_nnc_cmd_t cmd = lstm_cmd(c, false);
      cmd.backend = OPT;
      using Size = size_t (*)(const ccv_nnc_cmd_t, const int, const int, const int, const int);
      Size size = reinterpret_cast<Size>(ccv_nnc_cmd_aux(cmd));
      ASSERT_NE(size, nullptr);
      EXPECT_EQ(size(cmd, CCV_32F, c.feat, c.batch, c.steps), n);
      // Without hx / cx, hy and cy take their empty parameters (libnnc's rule).
      in[2] = in[3] = ccv_nnc_tensor_param_t{};
      ccv_nnc_hint_tensor_auto(lstm_cmd(c, false), in, 5, ccv_nnc_no_hint, out, 4);
      EXPECT_EQ(out[1].dim[0], 0);
      // Backward: the forward inputs' shapes (dx like x, ..., dw like w).
      ccv_nnc_tensor_param_t bin[13];
      std::memset(bin, 0, sizeof(bin));
      bin[4] = param(CCV_32F, c.xshape()), bin[6] = param(CCV_32F, c.hshape()), bin[7] = param(CCV_32F, c.cshape());
      bin[8] = param(CCV_32F, {int(c.weights())});
      ccv_nnc_tensor_param_t bout[5];
      ccv_nnc_hint_tensor_auto(lstm_cmd(c, true), bin, 13, ccv_nnc_no_hint, bout, 5);
      EXPECT_EQ(dims_of(bout[0]), c.xshape());
      EXPECT_EQ(dims_of(bout[2]), c.hshape());
      EXPECT_EQ(dims_of(bout[3]), c.cshape());
      EXPECT_EQ(dims_of(bout[4]), std::vector<int>{int(c.weights())});
    }
  }
}

TEST_F(Lstm, WeightCountIsTorchs) {
  // torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=7): sum of its parameters' sizes.
  Cfg c;
  c.feat = 10, c.hidden = 20, c.layers = 2, c.bidir = true, c.proj = 7;
  const size_t layer0 = 80 * 10 + 80 * 7 + 80 + 80 + 7 * 20, layer1 = 80 * 14 + 80 * 7 + 80 + 80 + 7 * 20;
  EXPECT_EQ(c.weights(), 2 * (layer0 + layer1));
  std::mt19937 rng(1);
  Fixture f(c, CCV_32F, rng);
  EXPECT_EQ(f.forward(REF), 0) << ccv_nnc_error_message();
  T w(CCV_32F, {int(c.weights() + 1)});
  EXPECT_EQ(run(lstm_cmd(c, false), {f.x->get(), nullptr, nullptr, nullptr, w}, {f.y->get()}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("w has")) << ccv_nnc_error_message();
}

TEST_F(Lstm, Bitmasks) {
  const ccv_nnc_cmd_t fwd = lstm_cmd(Cfg{}, false), bwd = lstm_cmd(Cfg{}, true);
  auto f = [&](uint64_t in, uint64_t out, int isz = 5) { return ccv_nnc_cmd_bitmask(fwd, isz, 4, &in, 1, &out, 1); };
  EXPECT_TRUE(f(0x13, 0x9));   // x, xs, w -> y, r
  EXPECT_TRUE(f(0x1f, 0xf));   // everything
  EXPECT_FALSE(f(0x11, 0x9));  // no xs
  EXPECT_FALSE(f(0x03, 0x9));  // no w
  EXPECT_FALSE(f(0x13, 0x1));  // no r
  EXPECT_FALSE(f(0x13, 0x8));  // no y
  EXPECT_FALSE(f(0x13, 0x9, 4));
  auto b = [&](uint64_t in, uint64_t out) { return ccv_nnc_cmd_bitmask(bwd, 13, 5, &in, 1, &out, 1); };
  const uint64_t base = 1u | 1u << 6 | 1u << 8 | 1u << 9 | 1u << 12;  // dy, hx, w, y, r
  EXPECT_TRUE(b(base, 0xd));                                          // dx, dhx, dcx
  EXPECT_TRUE(b(base, 0xf));                                          // and dxs
  EXPECT_TRUE(b(base, 0x1d));                                         // libnnc's first pattern does not look at dw
  EXPECT_TRUE(b(base | 1u << 4, 0x1d));                               // with x: dx, dhx, dcx, dw
  EXPECT_TRUE(b(base | 1u << 4, 0x10));                               // dw alone
  EXPECT_FALSE(b(base | 1u << 4, 0x5));                               // no dcx
  EXPECT_FALSE(b(base & ~(1ull << 12), 0xd));                         // no reserve
  EXPECT_FALSE(b(base & ~1ull, 0xd));                                 // no dy
  EXPECT_FALSE(b(base & ~(1ull << 6), 0xd));                          // no hx
  EXPECT_TRUE(b(0x1fff, 0x1f));
}

TEST_F(Lstm, NoInPlace) {
  for (int back = 0; back < 2; back++) {
    const ccv_nnc_cmd_t cmd = lstm_cmd(Cfg{}, back);
    const int is = back ? 13 : 5, os = back ? 5 : 4;
    for (int i = 0; i < is; i++)
      for (int o = 0; o < os; o++) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(cmd, i, is, o, os));
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(cmd, i, is, o, os));
      }
  }
}

// ---- Bad input ----

TEST_F(Lstm, BadInputGivesCodeAndMessage) {
  std::mt19937 rng(2);
  Cfg c;
  c.layers = 2;
  Fixture f(c, CCV_32F, rng);
  auto in = f.in();
  auto out = f.out();
  auto expect_bad = [&](std::vector<ccv_nnc_tensor_t*> i, std::vector<ccv_nnc_tensor_t*> o, const char* msg, Cfg cc) {
    for (uint32_t backend : {REF, OPT, 0u}) {
      EXPECT_EQ(run(lstm_cmd(cc, false, backend), i, o), CCV_NNC_EXEC_INVALID) << msg;
      EXPECT_TRUE(message_has(msg)) << ccv_nnc_error_message();
    }
  };
  T h_bad(CCV_32F, {2, c.batch, c.hidden + 1}), w64(CCV_64F, {int(c.weights())}), xi(CCV_32S, c.xshape());
  T xs(CCV_32S, {c.batch}), xsf(CCV_32F, {c.batch}), y_bad(CCV_32F, {c.steps, c.batch, c.hidden + 2});
  for (int b = 0; b < c.batch; b++) xs.set(b, b == 1 ? c.steps + 1 : 1);
  auto with = [](std::vector<ccv_nnc_tensor_t*> v, size_t k, ccv_nnc_tensor_t* t) {
    v[k] = t;
    return v;
  };
  expect_bad(with(in, 2, h_bad), out, "hx is", c);
  expect_bad(with(in, 4, w64), out, "w is 64F", c);
  expect_bad(with(in, 0, xi), out, "x is 32S", c);
  expect_bad(with(in, 1, xs), out, "is not a sequence length", c);
  expect_bad(with(in, 1, xsf), out, "xs (sequence lengths) is 32F", c);
  expect_bad(in, with(out, 0, y_bad), "y is", c);
  expect_bad(with(in, 4, nullptr), out, "w (the packed weights) is required", c);
  expect_bad(in, {nullptr, nullptr, nullptr, out[3]}, "y (output 0) is required", c);
  expect_bad({in[0], in[1], in[2], in[3]}, out, "takes inputs", c);
  Cfg p = c;
  p.proj = c.hidden;
  expect_bad(in, out, "proj_size", p);
  p = c, p.dropout = 1;
  expect_bad(in, out, "dropout", p);
  p = c, p.hidden = 0;
  expect_bad(in, out, "hidden_size", p);
  T r_small(CCV_32F, {3});
  expect_bad(in, with(out, 3, r_small), "r has", c);
  // The backward without its reserve.
  std::vector<ccv_nnc_tensor_t*> bin = {f.y->get(), nullptr, nullptr, nullptr};
  for (ccv_nnc_tensor_t* t : in) bin.push_back(t);
  for (ccv_nnc_tensor_t* t : out) bin.push_back(t);
  bin[12] = nullptr;
  EXPECT_EQ(run(lstm_cmd(c, true), bin, {f.x->get()}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("reserve")) << ccv_nnc_error_message();
  bin[12] = f.r->get();
  T dw_bad(CCV_32F, {5});
  EXPECT_EQ(run(lstm_cmd(c, true), bin, {nullptr, nullptr, nullptr, nullptr, dw_bad}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dw has")) << ccv_nnc_error_message();
  bin[4] = nullptr;  // without x: dw cannot be had, and dx gives the sizes
  T dw(CCV_32F, {int(c.weights())});
  EXPECT_EQ(run(lstm_cmd(c, true), bin, {nullptr, nullptr, nullptr, nullptr, dw}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("x (input 4) or dx (output 0) is required")) << ccv_nnc_error_message();
  EXPECT_EQ(run(lstm_cmd(c, true), bin, {f.x->get(), nullptr, nullptr, nullptr, dw}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dw (output 4) needs x")) << ccv_nnc_error_message();
  // Auto shapes of a bad x: an error, not a crash.
  ccv_nnc_tensor_param_t pin[5] = {param(CCV_32F, {2, 3, 4, 5}), {}, {}, {}, {}}, pout[4];
  ccv_nnc_hint_tensor_auto(lstm_cmd(c, false), pin, 5, ccv_nnc_no_hint, pout, 4);
  EXPECT_TRUE(message_has("LSTM_FORWARD")) << ccv_nnc_error_message();
}

// ---- From C, through CMD_LSTM_FORWARD ----

TEST_F(Lstm, EasyMacrosFromC) {
  const ccv_nnc_cmd_t c = nnc_test_lstm_forward();
  EXPECT_EQ(c.cmd, CCV_NNC_LSTM_FORWARD);
  EXPECT_EQ(c.info.rnn.hidden_size, 2);
  EXPECT_EQ(c.info.rnn.proj_size, 0);
  EXPECT_EQ(c.info.rnn.num_layers, 1);
  EXPECT_EQ(c.info.rnn.bias, 1);
  EXPECT_EQ(c.info.rnn.batch_first, 0);
  EXPECT_EQ(c.info.rnn.bidirectional, 1);
  EXPECT_FLOAT_EQ(c.info.rnn.dropout, 0.f);
  double y[12], hy[2], cy[2];
  ASSERT_EQ(nnc_test_lstm_example(y, hy, cy), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // The C program's inputs: x = 0.1 (t + 1) for 3 steps, one feature, batch 1,
  // hidden 1, one direction, every weight 0.5, no h0 / c0.
  Cfg cfg;
  cfg.steps = 3, cfg.batch = 1, cfg.feat = 1, cfg.hidden = 1, cfg.h0 = cfg.c0 = false;
  const Ref r = reference(cfg, {0.1, 0.2, 0.3}, std::vector<double>(cfg.weights(), 0.5), {}, {});
  for (int t = 0; t < 3; t++) EXPECT_NEAR(y[t], r.y[t], 1e-12);
  EXPECT_NEAR(hy[0], r.hy[0], 1e-12);
  EXPECT_NEAR(cy[0], r.cy[0], 1e-12);
}

}  // namespace
