// Level 5: models. Outputs against the command-level computation with the
// same parameters, gradients (through one plain SGD step of fit) against
// central finite differences of a double-precision loss, composition,
// parameter access and bad input.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "test_util.hpp"

using nnc_test::cpu_param;
using nnc_test::Tensor;

namespace {

ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p = nnc_test::no_params();
  if (id == CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD) p.label_smoothing.trim1 = 1;  // as CMD_SOFTMAX_CROSSENTROPY_FORWARD()
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

ccv_nnc_cmd_t sgd(float rate, float scale, float momentum) {
  ccv_nnc_cmd_param_t p = nnc_test::no_params();
  p.sgd.rate = rate, p.sgd.scale = scale, p.sgd.momentum = momentum;
  return ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, p, 0);
}

ccv_nnc_hint_t hint(int stride, int border) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = h.stride.dim[1] = stride;
  h.border.begin[0] = h.border.begin[1] = h.border.end[0] = h.border.end[1] = border;
  return h;
}

struct Dim {
  int d[CCV_NNC_MAX_DIM_ALLOC] = {0};
  Dim(int a, int b) { d[0] = a, d[1] = b; }
};

// conv(3 filters 3x3 pad 1) -> relu -> max-pool 2x2 -> flatten -> dense(4)
ccv_cnnp_model_t* small_net(int filters = 3, int classes = 4) {
  Dim k3(3, 3), k2(2, 2);
  ccv_cnnp_model_t* layers[] = {
      ccv_cnnp_convolution(1, filters, k3.d, nullptr, 0, hint(1, 1), 0, 1, "conv"),
      ccv_cnnp_relu(nullptr),
      ccv_cnnp_max_pool(k2.d, hint(2, 0), nullptr),
      ccv_cnnp_flatten(nullptr),
      ccv_cnnp_dense(classes, 0, 0, 1, "fc"),
  };
  return ccv_cnnp_sequential_new(layers, 5, 1, "net");
}

std::vector<double> to_vec(ccv_nnc_tensor_t* t) {
  const size_t n = ccv_nnc_tensor_count(t->info);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; i++) v[i] = t->info.datatype == CCV_64F ? t->data.f64[i] : t->data.f32[i];
  return v;
}

// The reference forward pass in double, NCHW, for small_net.
struct RefNet {
  int N, C, H, W, K, classes;
  std::vector<double> cw, cb, fw, fb;
  std::vector<double> logits(const std::vector<double>& x) const {
    const int OH = H / 2, OW = W / 2;
    std::vector<double> pooled(static_cast<size_t>(N) * K * OH * OW);
    for (int n = 0; n < N; n++)
      for (int k = 0; k < K; k++) {
        std::vector<double> y(static_cast<size_t>(H) * W);
        for (int i = 0; i < H; i++)
          for (int j = 0; j < W; j++) {
            double s = cb[static_cast<size_t>(k)];
            for (int c = 0; c < C; c++)
              for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                  const int ii = i + a - 1, jj = j + b - 1;
                  if (ii < 0 || jj < 0 || ii >= H || jj >= W) continue;
                  s += x[((static_cast<size_t>(n) * C + c) * H + ii) * W + jj] * cw[((static_cast<size_t>(k) * C + c) * 3 + a) * 3 + b];
                }
            y[static_cast<size_t>(i) * W + j] = std::max(s, 0.0);
          }
        for (int i = 0; i < OH; i++)
          for (int j = 0; j < OW; j++) {
            double m = -1e300;
            for (int a = 0; a < 2; a++)
              for (int b = 0; b < 2; b++) m = std::max(m, y[static_cast<size_t>(2 * i + a) * W + 2 * j + b]);
            pooled[((static_cast<size_t>(n) * K + k) * OH + i) * OW + j] = m;
          }
      }
    const int F = K * OH * OW;
    std::vector<double> out(static_cast<size_t>(N) * classes);
    for (int n = 0; n < N; n++)
      for (int o = 0; o < classes; o++) {
        double s = fb[static_cast<size_t>(o)];
        for (int f = 0; f < F; f++) s += pooled[static_cast<size_t>(n) * F + f] * fw[static_cast<size_t>(o) * F + f];
        out[static_cast<size_t>(n) * classes + o] = s;
      }
    return out;
  }
  double loss(const std::vector<double>& x, const std::vector<int>& labels) const {
    auto z = logits(x);
    double total = 0;
    for (int n = 0; n < N; n++) {
      double m = -1e300, s = 0;
      for (int o = 0; o < classes; o++) m = std::max(m, z[static_cast<size_t>(n) * classes + o]);
      for (int o = 0; o < classes; o++) s += std::exp(z[static_cast<size_t>(n) * classes + o] - m);
      total += std::log(s) + m - z[static_cast<size_t>(n) * classes + labels[static_cast<size_t>(n)]];
    }
    return total;
  }
};

class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override { ccv_nnc_init(); }
};

TEST_F(ModelTest, EvaluateMatchesDoubleReference) {
  const int N = 3, C = 2, H = 6, W = 5;
  ccv_cnnp_model_t* net = small_net();
  auto xp = cpu_param(CCV_32F, {N, C, H, W}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_compile(net, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ASSERT_STREQ(ccv_nnc_error_message(), "") << ccv_nnc_error_message();
  ASSERT_EQ(ccv_cnnp_model_parameter_count(net), 4);
  ccv_nnc_tensor_param_t outp;
  ccv_cnnp_model_tensor_auto(net, &outp, 1);
  EXPECT_EQ(outp.dim[0], N);
  EXPECT_EQ(outp.dim[1], 4);
  Tensor x(xp), y(cpu_param(CCV_32F, {N, 4}));
  std::mt19937 rng(7);
  nnc_test::fill_uniform(x.f32(), ccv_nnc_tensor_count(xp), rng);
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* ys[] = {y};
  ccv_cnnp_model_evaluate(net, ep, xs, 1, ys, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // The parameters, copied out by name.
  RefNet ref{N, C, H, W, 3, 4, {}, {}, {}, {}};
  std::vector<double>* dst[] = {&ref.cw, &ref.cb, &ref.fw, &ref.fb};
  const char* names[] = {"conv.weight", "conv.bias", "fc.weight", "fc.bias"};
  for (int i = 0; i < 4; i++) {
    ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(net, ALL_PARAMETERS, i);
    EXPECT_STREQ(ccv_cnnp_model_parameter_name(net, p), names[i]);
    Tensor t(ccv_cnnp_model_parameter_tensor_params(net, p));
    ccv_cnnp_model_parameter_copy(net, p, t);
    *dst[i] = to_vec(t);
  }
  EXPECT_EQ(ref.cw.size(), 3u * 2 * 3 * 3);
  EXPECT_EQ(ref.fw.size(), 4u * 18);
  // Default initialisation: uniform in +-1/sqrt(fan_in), not all equal.
  const double bound = 1 / std::sqrt(18.0);
  for (double v : ref.cw) EXPECT_LE(std::fabs(v), bound);
  EXPECT_NE(ref.cw[0], ref.cw[1]);
  auto want = ref.logits(to_vec(x));
  auto got = to_vec(y);
  for (size_t i = 0; i < want.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  ccv_cnnp_model_free(net);
}

TEST_F(ModelTest, FitStepIsTheFiniteDifferenceGradient) {
  // In fp64 (the reference backends), one SGD step with rate 1 and no
  // momentum moves each parameter by minus its gradient of the summed loss.
  const int N = 3, C = 2, H = 6, W = 5;
  ccv_cnnp_model_t* net = small_net();
  auto xp = cpu_param(CCV_64F, {N, C, H, W}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_compile(net, &xp, 1, sgd(1, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor x(xp), labels(cpu_param(CCV_64F, {N})), logits(cpu_param(CCV_64F, {N, 4}));
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < ccv_nnc_tensor_count(xp); i++) x->data.f64[i] = u(rng);
  std::vector<int> lab = {2, 0, 3};
  for (int n = 0; n < N; n++) labels->data.f64[n] = lab[static_cast<size_t>(n)];
  RefNet ref{N, C, H, W, 3, 4, {}, {}, {}, {}};
  std::vector<double>* dst[] = {&ref.cw, &ref.cb, &ref.fw, &ref.fb};
  for (int i = 0; i < 4; i++) {
    ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(net, ALL_PARAMETERS, i);
    Tensor t(ccv_cnnp_model_parameter_tensor_params(net, p));
    ccv_cnnp_model_parameter_copy(net, p, t);
    *dst[i] = to_vec(t);
  }
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* fs[] = {labels};
  ccv_nnc_tensor_t* os[] = {logits};
  ccv_cnnp_model_fit(net, xs, 1, fs, 1, os, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // The outputs fit hands back are the logits before the step.
  auto want_logits = ref.logits(to_vec(x));
  auto got_logits = to_vec(logits);
  for (size_t i = 0; i < want_logits.size(); i++) EXPECT_NEAR(got_logits[i], want_logits[i], 1e-10);
  const auto xv = to_vec(x);
  for (int i = 0; i < 4; i++) {
    ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(net, ALL_PARAMETERS, i);
    Tensor t(ccv_cnnp_model_parameter_tensor_params(net, p));
    ccv_cnnp_model_parameter_copy(net, p, t);
    auto after = to_vec(t);
    std::vector<double>& v = *dst[i];
    for (size_t e = 0; e < v.size(); e++) {
      const double keep = v[e], h = 1e-6;
      v[e] = keep + h;
      const double lp = ref.loss(xv, lab);
      v[e] = keep - h;
      const double lm = ref.loss(xv, lab);
      v[e] = keep;
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(keep - after[e], fd, 1e-6 + 1e-5 * std::fabs(fd)) << "parameter " << i << " element " << e;
    }
  }
  ccv_cnnp_model_free(net);
}

TEST_F(ModelTest, MomentumAndShorterBatchShareParameters) {
  // Two fits with momentum 0.9 and scale 1/N, the second on a shorter batch,
  // against the same updates computed with the commands on the gradients
  // that a third model (rate 1, no momentum) exposes.
  const int C = 1, H = 4, W = 4;
  auto make = [&] { return small_net(2, 3); };
  ccv_cnnp_model_t* a = make();
  ccv_cnnp_model_t* probe = make();
  auto xp = cpu_param(CCV_64F, {4, C, H, W}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_compile(a, &xp, 1, sgd(0.5f, 0.25f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_compile(probe, &xp, 1, sgd(1, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_set_parameters(probe, ccv_cnnp_model_parameters(probe, ALL_PARAMETERS, ALL_PARAMETERS), a,
                                ccv_cnnp_model_parameters(a, ALL_PARAMETERS, ALL_PARAMETERS));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  const int np = ccv_cnnp_model_parameter_count(a);
  ASSERT_EQ(np, 4);
  auto params_of = [&](ccv_cnnp_model_t* m) {
    std::vector<std::vector<double>> r;
    for (int i = 0; i < np; i++) {
      ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(m, ALL_PARAMETERS, i);
      Tensor t(ccv_cnnp_model_parameter_tensor_params(m, p));
      ccv_cnnp_model_parameter_copy(m, p, t);
      r.push_back(to_vec(t));
    }
    return r;
  };
  std::vector<std::vector<double>> mom(static_cast<size_t>(np));
  auto w = params_of(a);
  for (auto& v : mom) v.clear();
  for (int step = 0; step < 2; step++) {
    const int n = step == 0 ? 4 : 3;
    auto p = cpu_param(CCV_64F, {n, C, H, W}, CCV_TENSOR_FORMAT_NCHW);
    Tensor x(p), l(cpu_param(CCV_64F, {n}));
    for (size_t i = 0; i < ccv_nnc_tensor_count(p); i++) x->data.f64[i] = u(rng);
    for (int i = 0; i < n; i++) l->data.f64[i] = (i + step) % 3;
    ccv_nnc_tensor_t* xs[] = {x};
    ccv_nnc_tensor_t* fs[] = {l};
    // The probe starts from a's current parameters; its step is minus the gradient.
    ccv_cnnp_model_set_parameters(probe, ccv_cnnp_model_parameters(probe, ALL_PARAMETERS, ALL_PARAMETERS), a,
                                  ccv_cnnp_model_parameters(a, ALL_PARAMETERS, ALL_PARAMETERS));
    ccv_cnnp_model_fit(probe, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
    ccv_cnnp_model_fit(a, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    auto moved = params_of(probe);
    auto got = params_of(a);
    for (int i = 0; i < np; i++) {
      auto& m = mom[static_cast<size_t>(i)];
      m.resize(w[static_cast<size_t>(i)].size(), 0.0);
      for (size_t e = 0; e < m.size(); e++) {
        const double g = w[static_cast<size_t>(i)][e] - moved[static_cast<size_t>(i)][e];
        m[e] = double(0.9f) * m[e] + 0.25 * g;
        w[static_cast<size_t>(i)][e] -= 0.5 * m[e];
        EXPECT_NEAR(got[static_cast<size_t>(i)][e], w[static_cast<size_t>(i)][e], 1e-7) << "step " << step << " parameter " << i;
      }
    }
  }
  ccv_cnnp_model_free(a);
  ccv_cnnp_model_free(probe);
}

TEST_F(ModelTest, FunctionalSharesAModelAppliedTwice) {
  // y = dense(relu(dense(x))) + dense(x) with the same `shared` dense twice.
  ccv_cnnp_model_io_t in = ccv_cnnp_input();
  ccv_cnnp_model_t* shared = ccv_cnnp_dense(5, 0, 0, 1, "shared");
  ccv_cnnp_model_io_t h = ccv_cnnp_model_apply(shared, &in, 1);
  ccv_cnnp_model_t* relu = ccv_cnnp_relu(nullptr);
  ccv_cnnp_model_io_t r = ccv_cnnp_model_apply(relu, &h, 1);
  ccv_cnnp_model_t* head = ccv_cnnp_dense(5, 1, 0, 1, "head");
  ccv_cnnp_model_io_t a = ccv_cnnp_model_apply(head, &r, 1);
  ccv_cnnp_model_io_t sum_in[] = {a, h};
  ccv_cnnp_model_t* add = ccv_cnnp_add(1, 1, nullptr);
  ccv_cnnp_model_io_t y = ccv_cnnp_model_apply(add, sum_in, 2);
  ccv_cnnp_model_t* net = ccv_cnnp_model_new(&in, 1, &y, 1, 1, "f");
  ASSERT_NE(net, nullptr) << ccv_nnc_error_message();
  auto xp = cpu_param(CCV_32F, {2, 5});
  ccv_cnnp_model_compile(net, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_NOOP));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  EXPECT_EQ(ccv_cnnp_model_parameter_count(net), 3);  // shared weight and bias, head weight
  // Weights only: two (shared and head); biases: one.
  auto count = [&](int sel) {
    int n = 0;
    for (int i = 0;; i++) {
      ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(net, sel, i);
      ccv_nnc_tensor_param_t tp = ccv_cnnp_model_parameter_tensor_params(net, p);
      if (tp.dim[0] == 0) break;
      n++;
    }
    return n;
  };
  EXPECT_EQ(count(CCV_CNNP_PARAMETER_SELECT_WEIGHT), 2);
  EXPECT_EQ(count(CCV_CNNP_PARAMETER_SELECT_BIAS), 1);
  Tensor x(xp), out(xp);
  std::mt19937 rng(3);
  nnc_test::fill_uniform(x.f32(), 10, rng);
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* os[] = {out};
  ccv_cnnp_model_evaluate(net, ep, xs, 1, os, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  auto get = [&](int sel, int i) {
    ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(net, sel, i);
    Tensor t(ccv_cnnp_model_parameter_tensor_params(net, p));
    ccv_cnnp_model_parameter_copy(net, p, t);
    return to_vec(t);
  };
  auto w1 = get(CCV_CNNP_PARAMETER_SELECT_WEIGHT, 0), b1 = get(CCV_CNNP_PARAMETER_SELECT_BIAS, 0), w2 = get(CCV_CNNP_PARAMETER_SELECT_WEIGHT, 1);
  auto xv = to_vec(x);
  for (int n = 0; n < 2; n++) {
    double hv[5], rv[5];
    for (int o = 0; o < 5; o++) {
      hv[o] = b1[static_cast<size_t>(o)];
      for (int i = 0; i < 5; i++) hv[o] += xv[static_cast<size_t>(n * 5 + i)] * w1[static_cast<size_t>(o * 5 + i)];
      rv[o] = std::max(hv[o], 0.0);
    }
    for (int o = 0; o < 5; o++) {
      double s = hv[o];
      for (int i = 0; i < 5; i++) s += rv[i] * w2[static_cast<size_t>(o * 5 + i)];
      EXPECT_NEAR(out.f32()[n * 5 + o], s, 1e-5);
    }
  }
  ccv_cnnp_model_free(net);
}

TEST_F(ModelTest, CopyGivesTheSameComputation) {
  ccv_cnnp_model_t* a = small_net();
  ccv_cnnp_model_t* b = ccv_cnnp_model_copy(a, 1);
  ASSERT_NE(b, nullptr);
  auto xp = cpu_param(CCV_32F, {2, 1, 4, 6}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_compile(a, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_compile(b, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_set_parameters(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, ALL_PARAMETERS), a,
                                ccv_cnnp_model_parameters(a, ALL_PARAMETERS, ALL_PARAMETERS));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor x(xp), ya(cpu_param(CCV_32F, {2, 4})), yb(cpu_param(CCV_32F, {2, 4}));
  std::mt19937 rng(9);
  nnc_test::fill_uniform(x.f32(), ccv_nnc_tensor_count(xp), rng);
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* oa[] = {ya};
  ccv_nnc_tensor_t* ob[] = {yb};
  ccv_cnnp_model_evaluate(a, ep, xs, 1, oa, 1, nullptr, nullptr);
  ccv_cnnp_model_evaluate(b, ep, xs, 1, ob, 1, nullptr, nullptr);
  for (int i = 0; i < 8; i++) EXPECT_EQ(ya.f32()[i], yb.f32()[i]);
  EXPECT_NE(ya.f32()[0], 0.f);
  ccv_cnnp_model_free(a);
  ccv_cnnp_model_free(b);
}

TEST_F(ModelTest, CheckpointResumesTrainingExactly) {
  const std::string fn = ::testing::TempDir() + "nnc_model_ckpt.sqlite3";
  std::remove(fn.c_str());
  auto xp = cpu_param(CCV_32F, {4, 1, 4, 4}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_t* a = small_net(2, 3);
  ccv_cnnp_model_compile(a, &xp, 1, sgd(0.1f, 0.25f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  Tensor x(xp), l(cpu_param(CCV_32F, {4}));
  std::mt19937 rng(21);
  auto batch = [&] {
    nnc_test::fill_uniform(x.f32(), ccv_nnc_tensor_count(xp), rng);
    for (int i = 0; i < 4; i++) l.f32()[i] = static_cast<float>(rng() % 3);
  };
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* fs[] = {l};
  for (int s = 0; s < 3; s++) {
    batch();
    ccv_cnnp_model_fit(a, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
  }
  ccv_cnnp_model_write_to_file(a, fn.c_str(), nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // A fresh model (other initial values) reads the checkpoint: parameters and momenta.
  ccv_cnnp_model_t* b = small_net(2, 3);
  ccv_cnnp_model_compile(b, &xp, 1, sgd(0.1f, 0.25f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  batch();
  ccv_cnnp_model_fit(b, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);  // creates b's momenta (then overwritten)
  ccv_cnnp_model_read_from_file(fn.c_str(), nullptr, b);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  auto same = [&](const char* when) {
  for (int i = 0; i < 4; i++) {
    Tensor ta(ccv_cnnp_model_parameter_tensor_params(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, i)));
    Tensor tb(ccv_cnnp_model_parameter_tensor_params(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i)));
    ccv_cnnp_model_parameter_copy(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, i), ta);
    ccv_cnnp_model_parameter_copy(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i), tb);
    ASSERT_EQ(0, std::memcmp(ta->data.u8, tb->data.u8, ccv_nnc_tensor_data_size_without_padding(ta->info))) << "parameter " << i << " " << when;
  }
  };
  same("after the read");
  for (int s = 0; s < 2; s++) {
    batch();
    ccv_cnnp_model_fit(a, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
    ccv_cnnp_model_fit(b, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
    same("after a step");
  }
  // A model of another shape is refused and left as it was.
  ccv_cnnp_model_t* c = small_net(3, 3);
  ccv_cnnp_model_compile(c, &xp, 1, sgd(0.1f, 0.25f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  Tensor before(ccv_cnnp_model_parameter_tensor_params(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, 2)));
  ccv_cnnp_model_parameter_copy(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, 2), before);
  ccv_cnnp_model_read_from_file(fn.c_str(), nullptr, c);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  Tensor after(before->info);
  ccv_cnnp_model_parameter_copy(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, 2), after);
  EXPECT_EQ(0, std::memcmp(before->data.u8, after->data.u8, ccv_nnc_tensor_data_size_without_padding(before->info)));
  // A file that is not there.
  ccv_cnnp_model_read_from_file((fn + ".missing").c_str(), nullptr, b);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  ccv_cnnp_model_free(a);
  ccv_cnnp_model_free(b);
  ccv_cnnp_model_free(c);
  std::remove(fn.c_str());
}

TEST_F(ModelTest, EvaluateBackwardApplyIsFit) {
  // fit = evaluate(requires_grad) + backward(d loss / d logits) + apply_gradients.
  const int N = 4;
  auto xp = cpu_param(CCV_64F, {N, 2, 4, 6}, CCV_TENSOR_FORMAT_NCHW);
  ccv_cnnp_model_t* a = small_net(3, 5);
  ccv_cnnp_model_t* b = small_net(3, 5);
  ccv_cnnp_model_compile(a, &xp, 1, sgd(0.3f, 0.5f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_compile(b, &xp, 1, sgd(0.3f, 0.5f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_set_parameters(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, ALL_PARAMETERS), a,
                                ccv_cnnp_model_parameters(a, ALL_PARAMETERS, ALL_PARAMETERS));
  Tensor x(xp), l(cpu_param(CCV_64F, {N})), z(cpu_param(CCV_64F, {N, 5})), dz(cpu_param(CCV_64F, {N, 5})), dx(xp);
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1, 1);
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* fs[] = {l};
  ccv_nnc_tensor_t* zs[] = {z};
  ccv_nnc_tensor_t* dzs[] = {dz};
  ccv_nnc_tensor_t* dxs[] = {dx};
  for (int step = 0; step < 3; step++) {
    for (size_t i = 0; i < ccv_nnc_tensor_count(xp); i++) x->data.f64[i] = u(rng);
    for (int i = 0; i < N; i++) l->data.f64[i] = (i * 3 + step) % 5;
    ccv_cnnp_model_fit(a, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
    ccv_cnnp_evaluate_param_t ep{};
    ep.requires_grad = 1;
    ccv_cnnp_model_evaluate(b, ep, xs, 1, zs, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    // d (sum of losses) / d logits = softmax - onehot.
    for (int n = 0; n < N; n++) {
      double m = -1e300, sum = 0;
      for (int k = 0; k < 5; k++) m = std::max(m, z->data.f64[n * 5 + k]);
      for (int k = 0; k < 5; k++) sum += std::exp(z->data.f64[n * 5 + k] - m);
      for (int k = 0; k < 5; k++)
        dz->data.f64[n * 5 + k] = std::exp(z->data.f64[n * 5 + k] - m) / sum - (k == static_cast<int>(l->data.f64[n]) ? 1 : 0);
    }
    ccv_cnnp_model_backward(b, dzs, 1, dxs, 1, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_cnnp_model_apply_gradients(b, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    for (int i = 0; i < 4; i++) {
      Tensor ta(ccv_cnnp_model_parameter_tensor_params(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, i)));
      Tensor tb(ta->info);
      ccv_cnnp_model_parameter_copy(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, i), ta);
      ccv_cnnp_model_parameter_copy(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i), tb);
      for (size_t e = 0; e < ccv_nnc_tensor_count(ta->info); e++)
        ASSERT_NEAR(ta->data.f64[e], tb->data.f64[e], 1e-12) << "step " << step << " parameter " << i;
    }
  }
  // The input gradient against central finite differences of <dz, net(x)>,
  // through a third model holding b's parameters (evaluate only).
  ccv_cnnp_model_t* c = small_net(3, 5);
  ccv_cnnp_model_compile(c, &xp, 1, sgd(0.3f, 0.5f, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_evaluate(b, ccv_cnnp_evaluate_param_t{1, 0, 0}, xs, 1, zs, 1, nullptr, nullptr);
  ccv_cnnp_model_backward(b, dzs, 1, dxs, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_set_parameters(c, ccv_cnnp_model_parameters(c, ALL_PARAMETERS, ALL_PARAMETERS), b,
                                ccv_cnnp_model_parameters(b, ALL_PARAMETERS, ALL_PARAMETERS));
  ccv_cnnp_evaluate_param_t test{};
  test.is_test = 1;
  Tensor zz(z->info);
  ccv_nnc_tensor_t* zzs[] = {zz};
  auto objective = [&] {
    ccv_cnnp_model_evaluate(c, test, xs, 1, zzs, 1, nullptr, nullptr);
    double s = 0;
    for (int e = 0; e < N * 5; e++) s += zz->data.f64[e] * dz->data.f64[e];
    return s;
  };
  for (size_t i = 0; i < ccv_nnc_tensor_count(xp); i += 7) {
    const double keep = x->data.f64[i], h = 1e-6;
    x->data.f64[i] = keep + h;
    const double p = objective();
    x->data.f64[i] = keep - h;
    const double q = objective();
    x->data.f64[i] = keep;
    EXPECT_NEAR(dx->data.f64[i], (p - q) / (2 * h), 1e-6) << i;
  }
  // Clipping the summed gradients to a total 2-norm (PyTorch's clip_grad_norm_), and NaN detection.
  ccv_cnnp_model_io_t all = ccv_cnnp_model_parameters(b, ALL_PARAMETERS, ALL_PARAMETERS);
  EXPECT_EQ(ccv_cnnp_model_parameter_gradients_isnan(b, all, nullptr), 0);
  ccv_cnnp_model_parameters_clip_grad_norm(b, all, 2, 0.01f, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  {
    // After clipping, rate-1 plain SGD moves the parameters by exactly the clipped gradient: norm 0.01.
    std::vector<std::vector<double>> before;
    for (int i = 0; i < 4; i++) {
      Tensor t(ccv_cnnp_model_parameter_tensor_params(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i)));
      ccv_cnnp_model_parameter_copy(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i), t);
      before.push_back(to_vec(t));
    }
    ccv_cnnp_model_set_minimizer(b, sgd(1, 1, 0), 1, nullptr, 0);
    ccv_cnnp_model_apply_gradients(b, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    double sq = 0;
    for (int i = 0; i < 4; i++) {
      Tensor t(ccv_cnnp_model_parameter_tensor_params(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i)));
      ccv_cnnp_model_parameter_copy(b, ccv_cnnp_model_parameters(b, ALL_PARAMETERS, i), t);
      auto after = to_vec(t);
      for (size_t e = 0; e < after.size(); e++) sq += (after[e] - before[static_cast<size_t>(i)][e]) * (after[e] - before[static_cast<size_t>(i)][e]);
    }
    EXPECT_NEAR(std::sqrt(sq), 0.01, 1e-6);
  }
  // Backward without a forward, and apply without gradients, are refused.
  ccv_cnnp_model_backward(b, dzs, 1, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("requires_grad"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_apply_gradients(c, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("no gradients"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_free(a);
  ccv_cnnp_model_free(b);
  ccv_cnnp_model_free(c);
}

TEST_F(ModelTest, DynamicGraphEvaluateIsTracedForBackward) {
  // y = x W^T + b through ccv_nnc_dynamic_graph_evaluate, then the dynamic
  // graph's backward with dy: dx = dy W, and the model's own gradients
  // applied by plain SGD (rate 1): W -= dy^T x, b -= sum of dy over rows.
  const int N = 3, I = 4, O = 2;
  ccv_cnnp_model_t* dense = ccv_cnnp_dense(O, 0, 0, 1, "d");
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  auto xp = cpu_param(CCV_64F, {N, I});
  ccv_nnc_tensor_variable_t x = ccv_nnc_tensor_variable_new_impl(g, xp);
  ccv_nnc_tensor_variable_t y = ccv_nnc_tensor_variable_new_impl(g, ccv_nnc_tensor_auto);
  ccv_nnc_tensor_variable_t dy = ccv_nnc_tensor_variable_new_impl(g, cpu_param(CCV_64F, {N, O}));
  ccv_nnc_tensor_variable_t dx = ccv_nnc_tensor_variable_new_impl(g, ccv_nnc_tensor_auto);
  ccv_nnc_tensor_t* xt = ccv_nnc_tensor_from_variable(g, x);
  ccv_nnc_tensor_t* dyt = ccv_nnc_tensor_from_variable(g, dy);
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < N * I; i++) xt->data.f64[i] = u(rng);
  for (int i = 0; i < N * O; i++) dyt->data.f64[i] = u(rng);
  ccv_nnc_dynamic_graph_evaluate(g, dense, 0, &x, 1, &y, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor w(cpu_param(CCV_64F, {O, I})), b(cpu_param(CCV_64F, {O}));
  ccv_cnnp_model_parameter_copy(dense, ccv_cnnp_model_parameters(dense, ALL_PARAMETERS, 0), w);
  ccv_cnnp_model_parameter_copy(dense, ccv_cnnp_model_parameters(dense, ALL_PARAMETERS, 1), b);
  ccv_nnc_tensor_t* yt = ccv_nnc_tensor_from_variable(g, y);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++) {
      double s = b->data.f64[o];
      for (int i = 0; i < I; i++) s += xt->data.f64[n * I + i] * w->data.f64[o * I + i];
      EXPECT_NEAR(yt->data.f64[n * O + o], s, 1e-12);
    }
  ccv_nnc_dynamic_graph_backward(g, &y, 1, &dy, &x, 1, &dx, 1, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_nnc_tensor_t* dxt = ccv_nnc_tensor_from_variable(g, dx);
  for (int n = 0; n < N; n++)
    for (int i = 0; i < I; i++) {
      double s = 0;
      for (int o = 0; o < O; o++) s += dyt->data.f64[n * O + o] * w->data.f64[o * I + i];
      EXPECT_NEAR(dxt->data.f64[n * I + i], s, 1e-12);
    }
  ccv_cnnp_model_set_minimizer(dense, sgd(1, 1, 0), 0, nullptr, 0);
  ccv_cnnp_model_apply_gradients(dense, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor w2(w->info), b2(b->info);
  ccv_cnnp_model_parameter_copy(dense, ccv_cnnp_model_parameters(dense, ALL_PARAMETERS, 0), w2);
  ccv_cnnp_model_parameter_copy(dense, ccv_cnnp_model_parameters(dense, ALL_PARAMETERS, 1), b2);
  for (int o = 0; o < O; o++) {
    double gb = 0;
    for (int n = 0; n < N; n++) gb += dyt->data.f64[n * O + o];
    EXPECT_NEAR(b2->data.f64[o], b->data.f64[o] - gb, 1e-12);
    for (int i = 0; i < I; i++) {
      double gw = 0;
      for (int n = 0; n < N; n++) gw += dyt->data.f64[n * O + o] * xt->data.f64[n * I + i];
      EXPECT_NEAR(w2->data.f64[o * I + i], w->data.f64[o * I + i] - gw, 1e-12);
    }
  }
  ccv_nnc_dynamic_graph_evaluate(g, nullptr, 0, &x, 1, &y, 1, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("model is NULL"), std::string::npos);
  ccv_nnc_dynamic_graph_free(g);
  ccv_cnnp_model_free(dense);
}

struct Notified {
  int count = 0;
  int tag = 0;
};

ccv_cnnp_model_t* make_dense_for(const ccv_nnc_tensor_param_t* inputs, const int input_size, void* context) {
  // The dynamic model sizes itself from its input: as many outputs as input features.
  *static_cast<int*>(context) += 1;
  return ccv_cnnp_dense(inputs[0].dim[input_size > 0 ? 1 : 0], 1, 0, 1, "made");
}

TEST_F(ModelTest, NotifyDynamicDotAndParameterMaps) {
  // Notifications reach every model inside.
  ccv_cnnp_model_t* d1 = ccv_cnnp_dense(3, 0, 0, 1, "d1");
  ccv_cnnp_model_t* d2 = ccv_cnnp_dense(3, 0, 0, 1, "d2");
  Notified n1, n2;
  auto hook = [](const ccv_cnnp_model_t*, const int tag, void* payload, void* context) {
    static_cast<Notified*>(context)->count++;
    static_cast<Notified*>(context)->tag = tag + *static_cast<int*>(payload);
  };
  ccv_cnnp_model_notify_hook(d1, hook, &n1);
  ccv_cnnp_model_notify_hook(d2, hook, &n2);
  int made = 0;
  ccv_cnnp_model_t* dyn = ccv_cnnp_dynamic_new(make_dense_for, &made, "dyn");
  ccv_cnnp_model_t* layers[] = {d1, d2, dyn};
  ccv_cnnp_model_t* net = ccv_cnnp_sequential_new(layers, 3, 1, "net");
  int payload = 100;
  ccv_cnnp_model_notify(net, 7, &payload);
  EXPECT_EQ(n1.count, 1);
  EXPECT_EQ(n2.count, 1);
  EXPECT_EQ(n2.tag, 107);
  auto xp = cpu_param(CCV_32F, {2, 5});
  ccv_cnnp_model_compile(net, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_NOOP));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  EXPECT_EQ(made, 1);
  ccv_nnc_tensor_param_t out;
  ccv_cnnp_model_tensor_auto(net, &out, 1);
  EXPECT_EQ(out.dim[1], 3);  // the dynamic dense took 3 features from d2
  EXPECT_EQ(ccv_cnnp_model_parameter_count(net), 5);  // d1 w, b; d2 w, b; made w
  // Filters and first: by name.
  auto is_bias = [](const ccv_cnnp_model_t*, const char* name, void*) { return std::strstr(name, ".bias") ? 1 : 0; };
  ccv_array_t* biases = ccv_cnnp_model_parameters_filter(net, is_bias, nullptr);
  ASSERT_NE(biases, nullptr);
  EXPECT_EQ(biases->rnum, 2);
  ccv_array_free(biases);
  auto is_made = [](const ccv_cnnp_model_t*, const char* name, void*) { return std::strncmp(name, "made", 4) == 0 ? 1 : 0; };
  ccv_cnnp_model_io_t first = ccv_cnnp_model_parameter_first(net, is_made, nullptr);
  ASSERT_NE(first, nullptr);
  EXPECT_STREQ(ccv_cnnp_model_parameter_name(net, first), "made.weight");
  EXPECT_EQ(ccv_cnnp_model_parameter_first_uninit(net), nullptr);
  // parameters_map: scale every parameter by 2 in place; zip_map: add another model's.
  Tensor before(ccv_cnnp_model_parameter_tensor_params(net, first));
  ccv_cnnp_model_parameter_copy(net, first, before);
  ccv_nnc_cmd_param_t sp = nnc_test::no_params();
  sp.blas.a[0] = 2;
  ccv_cnnp_model_parameters_map(net, ccv_cnnp_model_parameters(net, ALL_PARAMETERS, ALL_PARAMETERS),
                                ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, sp, 0), ccv_nnc_no_hint, 0, nullptr, 0, nullptr, 0, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor after(before->info);
  ccv_cnnp_model_parameter_copy(net, first, after);
  for (int i = 0; i < 9; i++) EXPECT_EQ(after.f32()[i], 2 * before.f32()[i]);
  ccv_nnc_cmd_param_t ap = nnc_test::no_params();
  ap.blas.a[0] = 1, ap.blas.a[1] = -1;  // to - from
  ccv_cnnp_model_parameters_zip_map(net, first, ccv_nnc_cmd(CCV_NNC_ADD_FORWARD, nullptr, ap, 0), ccv_nnc_no_hint, 0, nullptr, 0, nullptr, 0,
                                    nullptr, net, first);
  ccv_cnnp_model_parameter_copy(net, first, after);
  for (int i = 0; i < 9; i++) EXPECT_EQ(after.f32()[i], 0.f);
  // DOT of the compiled graph names the layers' parameters.
  Tensor x(xp), y(cpu_param(CCV_32F, {2, 3}));
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* ys[] = {y};
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_cnnp_model_evaluate(net, ep, xs, 1, ys, 1, nullptr, nullptr);
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ccv_cnnp_model_dot(net, CCV_NNC_LONG_DOT_GRAPH, &f, 1);
  std::fclose(f);
  EXPECT_NE(std::string(buf, len).find("d2.weight"), std::string::npos);
  std::free(buf);
  // More devices than there are GPUs is refused with a message.
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) < 2) {
    ccv_cnnp_model_set_data_parallel(net, 2);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("2 devices asked for"), std::string::npos)
        << ccv_nnc_error_message();
  }
  // Across processes: a pointer that is no communicator is refused; NULL
  // (back to one process) is fine; without one there is no averaging time.
  int not_a_comm = 0;
  ccv_cnnp_model_set_comm(net, reinterpret_cast<ccv_nnc_comm_t*>(&not_a_comm), 0);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("not a live communicator"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_set_comm(net, nullptr, 0);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  double allreduce = -1, waited = -1;
  ccv_cnnp_model_comm_time(net, &allreduce, &waited);
  EXPECT_EQ(allreduce, 0);
  EXPECT_EQ(waited, 0);
  ccv_cnnp_model_set_comm(nullptr, nullptr, 0);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("ccv_cnnp_model_set_comm"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_set_memory_reduction(net, 1);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("not supported"), std::string::npos);
  EXPECT_GT(ccv_cnnp_model_memory_size(net), 0u);
  ccv_cnnp_model_free(net);
}

TEST_F(ModelTest, OutputsThatAreViewsParametersOrInputs) {
  // outputs: {x + w, w, flatten(permute(x)), x}: a parameter, a view of a view
  // and an input as outputs each get a copy the caller's tensor is bound to.
  ccv_cnnp_model_io_t x = ccv_cnnp_input();
  ccv_cnnp_model_t* param = ccv_cnnp_parameter(cpu_param(CCV_32F, {2, 3, 4}), 1, 1, "w");
  ccv_cnnp_model_io_t w = ccv_cnnp_model_apply(param, nullptr, 0);
  ccv_cnnp_model_io_t xw[] = {x, w};
  ccv_cnnp_model_io_t sum = ccv_cnnp_model_apply(ccv_cnnp_add(1, 1, nullptr), xw, 2);
  int perm[CCV_NNC_MAX_DIM_ALLOC] = {0};
  perm[0] = 0, perm[1] = 2, perm[2] = 1;
  ccv_cnnp_model_io_t p = ccv_cnnp_model_apply(ccv_cnnp_permute(perm, nullptr), &x, 1);
  ccv_cnnp_model_io_t flat = ccv_cnnp_model_apply(ccv_cnnp_flatten(nullptr), &p, 1);
  ccv_cnnp_model_io_t outs[] = {sum, w, flat, x};
  ccv_cnnp_model_t* net = ccv_cnnp_model_new(&x, 1, outs, 4, 1, "views");
  ASSERT_NE(net, nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_cnnp_model_output_size(net), 4);
  auto xp = cpu_param(CCV_32F, {2, 3, 4});
  ccv_cnnp_model_compile(net, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_NOOP));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor xt(xp), o0(xp), o1(xp), o2(cpu_param(CCV_32F, {2, 12})), o3(xp), wt(xp);
  for (int i = 0; i < 24; i++) xt.f32()[i] = static_cast<float>(i) * 0.5f - 3;
  for (int i = 0; i < 24; i++) o1.f32()[i] = 1234;
  ccv_nnc_tensor_t* xs[] = {xt};
  ccv_nnc_tensor_t* os[] = {o0, o1, o2, o3};
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_cnnp_model_evaluate(net, ep, xs, 1, os, 4, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_parameter_copy(net, ccv_cnnp_model_parameters(net, ALL_PARAMETERS, 0), wt);
  for (int i = 0; i < 24; i++) {
    EXPECT_EQ(o1.f32()[i], wt.f32()[i]);
    EXPECT_EQ(o0.f32()[i], xt.f32()[i] + wt.f32()[i]);
    EXPECT_EQ(o3.f32()[i], xt.f32()[i]);
  }
  EXPECT_NE(wt.f32()[0], 0.f);
  for (int n = 0; n < 2; n++)
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 3; b++) EXPECT_EQ(o2.f32()[n * 12 + a * 3 + b], xt.f32()[n * 12 + b * 4 + a]);
  ccv_cnnp_model_free(net);
}

TEST_F(ModelTest, AbsorbKeepsParametersUnderANewStructure) {
  // A: reshape [2, 2, 3] -> [2, 6], dense(4). B: the same for 5 rows. After
  // A absorbs B (compiled for [5, 2, 3]), A computes B's structure with A's
  // trained weights and momenta.
  auto make = [](int rows) {
    int dim[CCV_NNC_MAX_DIM_ALLOC] = {0};
    dim[0] = rows, dim[1] = 6;
    ccv_cnnp_model_t* layers[] = {ccv_cnnp_reshape(0, dim, nullptr, nullptr, nullptr), ccv_cnnp_dense(4, 0, 0, 1, "fc")};
    return ccv_cnnp_sequential_new(layers, 2, 1, "net");
  };
  ccv_cnnp_model_t* a = make(2);
  auto ap = cpu_param(CCV_32F, {2, 2, 3});
  ccv_cnnp_model_compile(a, &ap, 1, sgd(0.1f, 1, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  Tensor x2(ap), l2(cpu_param(CCV_32F, {2}));
  std::mt19937 rng(8);
  nnc_test::fill_uniform(x2.f32(), 12, rng);
  l2.f32()[0] = 1, l2.f32()[1] = 3;
  ccv_nnc_tensor_t* xs[] = {x2};
  ccv_nnc_tensor_t* ls[] = {l2};
  ccv_cnnp_model_fit(a, xs, 1, ls, 1, nullptr, 0, nullptr, nullptr);
  Tensor w(cpu_param(CCV_32F, {4, 6})), b(cpu_param(CCV_32F, {4}));
  ccv_cnnp_model_parameter_copy(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, 0), w);
  ccv_cnnp_model_parameter_copy(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, 1), b);
  auto bp = cpu_param(CCV_32F, {5, 2, 3});
  ccv_cnnp_model_absorb(a, make(5), &bp, 1);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  Tensor x5(bp), y5(cpu_param(CCV_32F, {5, 4}));
  nnc_test::fill_uniform(x5.f32(), 30, rng);
  ccv_nnc_tensor_t* x5s[] = {x5};
  ccv_nnc_tensor_t* y5s[] = {y5};
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_cnnp_model_evaluate(a, ep, x5s, 1, y5s, 1, nullptr, nullptr);
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  for (int n = 0; n < 5; n++)
    for (int o = 0; o < 4; o++) {
      double s = b.f32()[o];
      for (int i = 0; i < 6; i++) s += x5.f32()[n * 6 + i] * w.f32()[o * 6 + i];
      EXPECT_NEAR(y5.f32()[n * 4 + o], s, 1e-5);
    }
  EXPECT_STREQ(ccv_cnnp_model_parameter_name(a, ccv_cnnp_model_parameters(a, ALL_PARAMETERS, 0)), "fc.weight");
  // Parameters of another shape are refused (and the absorbed model freed).
  ccv_cnnp_model_t* other = ccv_cnnp_sequential_new(std::array<ccv_cnnp_model_t*, 1>{ccv_cnnp_dense(3, 0, 0, 1, "fc")}.data(), 1, 1, "o");
  auto op = cpu_param(CCV_32F, {5, 6});
  ccv_cnnp_model_absorb(a, other, &op, 1);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("parameter 0"), std::string::npos) << ccv_nnc_error_message();
  // a still works as before.
  ccv_cnnp_model_evaluate(a, ep, x5s, 1, y5s, 1, nullptr, nullptr);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  ccv_cnnp_model_free(a);
}

TEST_F(ModelTest, GradientCheckpointingRecomputesAndSavesMemory) {
  // dense -> relu -> 4 blocks of [dense -> relu -> dense -> relu], each
  // checkpointed -> dense, fp64: a fit step with checkpointing gives the
  // parameters a step without gives, and the training arena is smaller (one
  // block's activations are recomputed at a time).
  const int N = 64, W = 96;
  auto make = [&](int checkpointed) {
    ccv_cnnp_model_t* layers[7];
    layers[0] = ccv_cnnp_dense(W, 0, 0, 1, nullptr);
    layers[1] = ccv_cnnp_relu(nullptr);
    for (int k = 0; k < 4; k++) {
      ccv_cnnp_model_t* inner_layers[4] = {ccv_cnnp_dense(W, 0, 0, 1, nullptr), ccv_cnnp_relu(nullptr), ccv_cnnp_dense(W, 0, 0, 1, nullptr),
                                           ccv_cnnp_relu(nullptr)};
      layers[2 + k] = ccv_cnnp_sequential_new(inner_layers, 4, 1, nullptr);
      ccv_cnnp_model_set_gradient_checkpointing(layers[2 + k], checkpointed);
    }
    layers[6] = ccv_cnnp_dense(5, 0, 0, 1, nullptr);
    return ccv_cnnp_sequential_new(layers, 7, 1, "deep");
  };
  auto xp = cpu_param(CCV_64F, {N, 7});
  ccv_cnnp_model_t* plain = make(0);
  ccv_cnnp_model_t* ckpt = make(1);
  ccv_cnnp_model_compile(plain, &xp, 1, sgd(0.05f, 1.f / N, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ccv_cnnp_model_compile(ckpt, &xp, 1, sgd(0.05f, 1.f / N, 0.9f), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  EXPECT_EQ(ccv_cnnp_model_gradient_checkpointing(ckpt), 0);  // the outer model's own flag
  ccv_cnnp_model_set_parameters(ckpt, ccv_cnnp_model_parameters(ckpt, ALL_PARAMETERS, ALL_PARAMETERS), plain,
                                ccv_cnnp_model_parameters(plain, ALL_PARAMETERS, ALL_PARAMETERS));
  Tensor x(xp), l(cpu_param(CCV_64F, {N}));
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(-1, 1);
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* ls[] = {l};
  for (int step = 0; step < 2; step++) {
    for (int i = 0; i < N * 7; i++) x->data.f64[i] = u(rng);
    for (int i = 0; i < N; i++) l->data.f64[i] = (i * 7 + step) % 5;
    ccv_cnnp_model_fit(plain, xs, 1, ls, 1, nullptr, 0, nullptr, nullptr);
    ccv_cnnp_model_fit(ckpt, xs, 1, ls, 1, nullptr, 0, nullptr, nullptr);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
  }
  const int np = ccv_cnnp_model_parameter_count(plain);
  ASSERT_EQ(np, 20);
  for (int i = 0; i < np; i++) {
    Tensor a(ccv_cnnp_model_parameter_tensor_params(plain, ccv_cnnp_model_parameters(plain, ALL_PARAMETERS, i)));
    Tensor b(a->info);
    ccv_cnnp_model_parameter_copy(plain, ccv_cnnp_model_parameters(plain, ALL_PARAMETERS, i), a);
    ccv_cnnp_model_parameter_copy(ckpt, ccv_cnnp_model_parameters(ckpt, ALL_PARAMETERS, i), b);
    for (size_t e = 0; e < ccv_nnc_tensor_count(a->info); e++) ASSERT_NEAR(a->data.f64[e], b->data.f64[e], 1e-12) << i;
  }
  // The checkpointed graph recomputes the inner forward: its arena is smaller.
  const uint64_t plain_bytes = ccv_cnnp_model_memory_size(plain), ckpt_bytes = ccv_cnnp_model_memory_size(ckpt);
  EXPECT_LT(ckpt_bytes, plain_bytes) << "checkpointed " << ckpt_bytes << " plain " << plain_bytes;
  ccv_cnnp_model_free(plain);
  ccv_cnnp_model_free(ckpt);
}

TEST_F(ModelTest, BadInputIsRefusedWithMessages) {
  ccv_cnnp_model_t* net = small_net();
  Tensor x(cpu_param(CCV_32F, {2, 1, 4, 4}, CCV_TENSOR_FORMAT_NCHW)), l(cpu_param(CCV_32F, {2}));
  ccv_nnc_tensor_t* xs[] = {x};
  ccv_nnc_tensor_t* fs[] = {l};
  ccv_cnnp_model_fit(net, xs, 1, fs, 1, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("not compiled"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_compile(net, nullptr, 0, sgd(0.1f, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("shapes of its inputs"), std::string::npos) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_cnnp_model_parameter_count(net), 0);
  auto xp = x->info;
  ccv_cnnp_model_compile(net, &xp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  // A parameter index that does not exist.
  EXPECT_EQ(ccv_cnnp_model_parameter_name(net, ccv_cnnp_model_parameters(net, ALL_PARAMETERS, 9)), nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("index 9"), std::string::npos) << ccv_nnc_error_message();
  // Wrong input count, wrong input type, no fits with a loss.
  ccv_cnnp_model_fit(net, xs, 2, fs, 1, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("given 2"), std::string::npos) << ccv_nnc_error_message();
  Tensor xd(cpu_param(CCV_64F, {2, 1, 4, 4}, CCV_TENSOR_FORMAT_NCHW));
  ccv_nnc_tensor_t* xds[] = {xd};
  ccv_cnnp_model_fit(net, xds, 1, fs, 1, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("data type"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_fit(net, xs, 1, nullptr, 0, nullptr, 0, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("targets"), std::string::npos) << ccv_nnc_error_message();
  // Shapes that do not fit between layers: add of [2, 3] and [2, 5].
  ccv_cnnp_model_io_t in = ccv_cnnp_input();
  ccv_cnnp_model_t* d3 = ccv_cnnp_dense(3, 0, 0, 1, nullptr);
  ccv_cnnp_model_io_t a = ccv_cnnp_model_apply(d3, &in, 1);
  ccv_cnnp_model_io_t both[] = {a, in};
  ccv_cnnp_model_io_t s = ccv_cnnp_model_apply(ccv_cnnp_add(1, 1, nullptr), both, 2);
  ccv_cnnp_model_t* bad = ccv_cnnp_model_new(&in, 1, &s, 1, 1, nullptr);
  auto bp = cpu_param(CCV_32F, {2, 5});
  // Compiling learns the parameters; the first run finds the shapes do not broadcast.
  ccv_cnnp_model_compile(bad, &bp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_NOOP));
  EXPECT_EQ(ccv_cnnp_model_parameter_count(bad), 2);
  Tensor bx(bp), by(bp), by3(cpu_param(CCV_32F, {2, 3}));
  ccv_nnc_tensor_t* bxs[] = {bx};
  ccv_nnc_tensor_t* bys[] = {by};
  ccv_cnnp_evaluate_param_t ep{};
  ep.is_test = 1;
  ccv_cnnp_model_evaluate(bad, ep, bxs, 1, bys, 1, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("output 0"), std::string::npos) << ccv_nnc_error_message();
  bys[0] = by3;
  ccv_cnnp_model_evaluate(bad, ep, bxs, 1, bys, 1, nullptr, nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("ADD"), std::string::npos) << ccv_nnc_error_message();
  // A convolution given a 2-d input.
  ccv_cnnp_model_t* c = small_net();
  ccv_cnnp_model_compile(c, &bp, 1, sgd(0.1f, 1, 0), cmd(CCV_NNC_NOOP));
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("takes an image"), std::string::npos) << ccv_nnc_error_message();
  ccv_cnnp_model_free(c);
  ccv_cnnp_model_free(bad);
  ccv_cnnp_model_free(net);
}

}  // namespace
