// ccv_nnc_symbolic_graph_minimize: each minimiser's step through the graph
// against its closed form, and an MLP trained on a separable task.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

bool message_has(const char* needle) { return std::string(ccv_nnc_error_message()).find(needle) != std::string::npos; }

ccv_nnc_cmd_t reduce_all(uint32_t id, int axes) {
  ccv_nnc_cmd_t c = cmd(id);
  c.info.reduce.count = axes;
  for (int i = 0; i < axes; i++) c.info.reduce.axis[i] = i;
  return c;
}

// One step of `minimizer` on loss = sum(w * x): the gradient is x. Returns
// the updated parameter and state, checked against `expect` (a, g, state) ->
// (b, new state).
using Step = std::function<void(const std::vector<double>& a, const std::vector<double>& g, std::vector<std::vector<double>>& s,
                                std::vector<double>& b)>;

void check_step(const ccv_nnc_cmd_t& minimizer, const Step& expect, const char* what) {
  SCOPED_TRACE(what);
  const int n = 7;
  Program p;
  const ccv_nnc_tensor_symbol_t w = sym(p.sg, {n}, "w"), x = sym(p.sg, {n}, "x");
  const ccv_nnc_tensor_symbol_t loss = apply(p.sg, reduce_all(CCV_NNC_REDUCE_SUM_FORWARD, 1), {apply(p.sg, cmd(CCV_NNC_EWPROD_FORWARD), {w, x})});
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const int aux = ccv_nnc_minimizer_saved_aux_size(minimizer);
  ASSERT_GE(aux, 1);
  ccv_nnc_tensor_symbol_t grads[2] = {}, updated = {};
  std::vector<ccv_nnc_tensor_symbol_map_t> saved(static_cast<size_t>(aux));
  ccv_nnc_graph_exec_symbol_t update = {};
  ccv_nnc_symbolic_graph_minimize(p.sg, minimizer, &loss, 1, &w, 1, &x, 1, ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg), grads, &updated, saved.data(), &update);
  ASSERT_GE(update.d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(p.sg, update).cmd, minimizer.cmd);
  EXPECT_EQ(grads[0].d, ccv_nnc_tensor_symbol_for_backward(p.sg, w).d);
  EXPECT_EQ(grads[1].d, ccv_nnc_tensor_symbol_for_backward(p.sg, x).d);
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1, 1), pos(0.01, 0.5);
  std::vector<double> a(n), g(n);
  std::vector<std::vector<double>> s(static_cast<size_t>(aux), std::vector<double>(n));
  ccv_nnc_tensor_t* wt = p.tensor(param({n}));
  ccv_nnc_tensor_t* xt = p.tensor(param({n}));
  std::vector<ccv_nnc_tensor_bind_t> binds{{w, wt}, {x, xt}};
  std::vector<ccv_nnc_tensor_symbol_t> outputs{updated, grads[0]};
  for (int i = 0; i < n; i++) wt->data.f64[i] = a[i] = u(rng), xt->data.f64[i] = g[i] = u(rng);
  for (int k = 0; k < aux; k++) {
    ccv_nnc_tensor_t* t = p.tensor(param({n}));
    for (int i = 0; i < n; i++) t->data.f64[i] = s[k][i] = k == 0 ? u(rng) : pos(rng);  // squares are positive
    binds.push_back({saved[static_cast<size_t>(k)].source, t});
    outputs.push_back(saved[static_cast<size_t>(k)].destination);
  }
  ASSERT_TRUE(p.compile(binds, outputs)) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  std::vector<double> b(n);
  expect(a, g, s, b);
  for (int i = 0; i < n; i++) {
    EXPECT_NEAR(p.of(grads[0])->data.f64[i], g[i], 1e-15) << "gradient " << i;
    EXPECT_NEAR(p.of(updated)->data.f64[i], b[i], 1e-12) << "parameter " << i;
    for (int k = 0; k < aux; k++)
      EXPECT_NEAR(p.of(saved[static_cast<size_t>(k)].destination)->data.f64[i], s[k][i], 1e-12) << "state " << k << " element " << i;
  }
}

TEST(AutodiffMinimize, EachMinimizerAgainstItsClosedForm) {
  // SGD: grad = scale g + decay a; n = momentum m + (1 - dampening) grad;
  // b = a - rate (nesterov ? grad + momentum n : n).
  for (int nesterov = 0; nesterov < 2; nesterov++) {
    ccv_nnc_cmd_t c = cmd(CCV_NNC_SGD_FORWARD);
    c.info.sgd = {};
    c.info.sgd.nesterov = nesterov, c.info.sgd.rate = 0.25f, c.info.sgd.scale = 0.5f, c.info.sgd.decay = 0.125f;
    c.info.sgd.momentum = 0.75f, c.info.sgd.dampening = 0.25f;
    check_step(c,
               [&](const auto& a, const auto& g, auto& s, auto& b) {
                 for (size_t i = 0; i < a.size(); i++) {
                   const double grad = 0.5 * g[i] + 0.125 * a[i];
                   const double n = 0.75 * s[0][i] + 0.75 * grad;
                   b[i] = a[i] - 0.25 * (nesterov ? grad + 0.75 * n : n);
                   s[0][i] = n;
                 }
               },
               nesterov ? "sgd nesterov" : "sgd");
  }
  // ADAM / ADAMW at step 3 (bias correction), with and without amsgrad.
  for (uint32_t id : {CCV_NNC_ADAM_FORWARD, CCV_NNC_ADAMW_FORWARD})
    for (int amsgrad = 0; amsgrad < 2; amsgrad++) {
      ccv_nnc_cmd_t c = cmd(id);
      c.info.adam.step = 3, c.info.adam.rate = 0.125f, c.info.adam.scale = 1, c.info.adam.beta1 = 0.875f;
      c.info.adam.beta2 = 0.96875f, c.info.adam.decay = 0.0625f, c.info.adam.epsilon = 0.001953125f, c.info.adam.amsgrad = amsgrad;
      const bool w = id == CCV_NNC_ADAMW_FORWARD;
      check_step(c,
                 [&](const auto& a, const auto& g, auto& s, auto& b) {
                   const double b1 = 0.875, b2 = 0.96875, rate = 0.125, decay = 0.0625, eps = 0.001953125;
                   for (size_t i = 0; i < a.size(); i++) {
                     const double grad = w ? g[i] : g[i] + decay * a[i];
                     const double a1 = w ? a[i] * (1 - rate * decay) : a[i];
                     const double m = b1 * s[0][i] + (1 - b1) * grad;
                     const double v = b2 * s[1][i] + (1 - b2) * grad * grad;
                     double vd = v;
                     if (amsgrad) vd = s[2][i] = std::max(s[2][i], v);
                     b[i] = a1 - rate / (1 - std::pow(b1, 3)) * m / (std::sqrt(vd) / std::sqrt(1 - std::pow(b2, 3)) + eps);
                     s[0][i] = m, s[1][i] = v;
                   }
                 },
                 w ? (amsgrad ? "adamw amsgrad" : "adamw") : (amsgrad ? "adam amsgrad" : "adam"));
    }
  {  // RMSPROP: u = alpha v + (1 - alpha) grad^2; n = momentum m + grad / (sqrt(u) + eps); b = a - rate n.
    ccv_nnc_cmd_t c = cmd(CCV_NNC_RMSPROP_FORWARD);
    c.info.rmsprop.rate = 0.0625f, c.info.rmsprop.scale = 1, c.info.rmsprop.decay = 0.25f, c.info.rmsprop.alpha = 0.9375f;
    c.info.rmsprop.momentum = 0.5f, c.info.rmsprop.epsilon = 0.0078125f;
    check_step(c,
               [&](const auto& a, const auto& g, auto& s, auto& b) {
                 for (size_t i = 0; i < a.size(); i++) {
                   const double grad = g[i] + 0.25 * a[i];
                   const double v = 0.9375 * s[1][i] + 0.0625 * grad * grad;
                   const double m = 0.5 * s[0][i] + grad / (std::sqrt(v) + 0.0078125);
                   b[i] = a[i] - 0.0625 * m;
                   s[0][i] = m, s[1][i] = v;
                 }
               },
               "rmsprop");
  }
  {  // LAMB: r = (m / bc1) / (sqrt(v / bc2) + eps) + decay a; b = a - rate |a| / |r| r.
    ccv_nnc_cmd_t c = cmd(CCV_NNC_LAMB_FORWARD);
    c.info.lamb.step = 2, c.info.lamb.rate = 0.125f, c.info.lamb.scale = 1, c.info.lamb.beta1 = 0.875f;
    c.info.lamb.beta2 = 0.96875f, c.info.lamb.decay = 0.0625f, c.info.lamb.epsilon = 0.001953125f;
    check_step(c,
               [&](const auto& a, const auto& g, auto& s, auto& b) {
                 const double b1 = 0.875, b2 = 0.96875;
                 std::vector<double> r(a.size());
                 double na = 0, nr = 0;
                 for (size_t i = 0; i < a.size(); i++) {
                   const double m = b1 * s[0][i] + (1 - b1) * g[i];
                   const double v = b2 * s[1][i] + (1 - b2) * g[i] * g[i];
                   r[i] = (m / (1 - b1 * b1)) / (std::sqrt(v / (1 - b2 * b2)) + 0.001953125) + 0.0625 * a[i];
                   s[0][i] = m, s[1][i] = v;
                   na += a[i] * a[i], nr += r[i] * r[i];
                 }
                 const double trust = std::sqrt(na) / std::sqrt(nr);
                 for (size_t i = 0; i < a.size(); i++) b[i] = a[i] - 0.125 * trust * r[i];
               },
               "lamb");
  }
}

// A 2-16-2 MLP (fp32) on 64 points labelled by the side of a line with a
// margin, trained full-batch for a fixed number of steps, the parameters and
// optimiser state bound in place (each symbol and its update on one tensor).
double train(const ccv_nnc_cmd_t& minimizer, int steps) {
  const int n = 64, hidden = 16;
  Program p;
  auto f32 = [&](std::vector<int> dims, const char* name) { return sym(p.sg, dims, name, CCV_32F); };
  const ccv_nnc_tensor_symbol_t x = f32({n, 2}, "x"), label = f32({n}, "label");
  const ccv_nnc_tensor_symbol_t w1 = f32({hidden, 2}, "w1"), b1 = f32({hidden}, "b1");
  const ccv_nnc_tensor_symbol_t w2 = f32({2, hidden}, "w2"), b2 = f32({2}, "b2");
  ccv_nnc_cmd_t gemm = cmd(CCV_NNC_GEMM_FORWARD);
  gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
  gemm.info.blas.transpose_b[0] = 0;
  gemm.info.blas.transpose_b[1] = 1;
  const ccv_nnc_tensor_symbol_t h = apply(p.sg, cmd(CCV_NNC_TANH_FORWARD), {apply(p.sg, gemm, {x, w1, b1}, CCV_32F)}, CCV_32F);
  const ccv_nnc_tensor_symbol_t logits = apply(p.sg, gemm, {h, w2, b2}, CCV_32F);
  ccv_nnc_cmd_t xent = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  xent.info.label_smoothing.trim1 = 1;
  const ccv_nnc_tensor_symbol_t rows = f32({n}, "loss rows"), softmax = f32({n, 2}, "softmax");
  exec(p.sg, xent, {logits, label}, {rows, softmax});
  const ccv_nnc_tensor_symbol_t loss = apply(p.sg, reduce_all(CCV_NNC_REDUCE_MEAN_FORWARD, 1), {rows}, CCV_32F);
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_t params[4] = {w1, b1, w2, b2};
  const int aux = ccv_nnc_minimizer_saved_aux_size(minimizer);
  ccv_nnc_tensor_symbol_t updated[4];
  std::vector<ccv_nnc_tensor_symbol_map_t> saved(static_cast<size_t>(4 * aux));
  ccv_nnc_graph_exec_symbol_t updates[4];
  ccv_nnc_symbolic_graph_minimize(p.sg, minimizer, &loss, 1, params, 4, nullptr, 0, ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg), nullptr, updated, saved.data(), updates);
  EXPECT_GE(updates[3].d, 0) << ccv_nnc_error_message();
  std::mt19937 rng(2024);
  std::normal_distribution<float> normal(0, 1);
  std::vector<ccv_nnc_tensor_bind_t> binds;
  ccv_nnc_tensor_t* xt = p.tensor(param({n, 2}, CCV_32F));
  ccv_nnc_tensor_t* lt = p.tensor(param({n}, CCV_32F));
  for (int i = 0; i < n; i++) {
    float a, b;
    do {
      a = normal(rng), b = normal(rng);
    } while (std::fabs(a - 0.5f * b) < 0.2f);  // a margin around the line a = b / 2
    xt->data.f32[2 * i] = a, xt->data.f32[2 * i + 1] = b;
    lt->data.f32[i] = a > 0.5f * b ? 1 : 0;
  }
  binds.push_back({x, xt});
  binds.push_back({label, lt});
  for (int k = 0; k < 4; k++) {
    ccv_nnc_tensor_t* t = p.tensor(ccv_nnc_tensor_symbol_params(p.sg, params[k]));
    const int count = static_cast<int>(adtest::count(t->info));
    for (int i = 0; i < count; i++) t->data.f32[i] = k % 2 ? 0.f : 0.5f * normal(rng);
    binds.push_back({params[k], t});
    binds.push_back({updated[k], t});
  }
  for (const auto& s : saved) {
    ccv_nnc_tensor_t* t = p.tensor(ccv_nnc_tensor_symbol_params(p.sg, s.source));
    std::memset(t->data.u8, 0, adtest::count(t->info) * sizeof(float));
    binds.push_back({s.source, t});
    binds.push_back({s.destination, t});
  }
  EXPECT_TRUE(p.compile(binds, {loss})) << ccv_nnc_error_message();
  if (!p.g) return INFINITY;
  double first = 0, last = 0;
  for (int s = 0; s < steps; s++) {
    if (minimizer.cmd == CCV_NNC_ADAM_FORWARD) {  // the step count drives Adam's bias correction
      ccv_nnc_cmd_t c = minimizer;
      c.info.adam.step = s + 1;
      for (const auto& u : updates) ccv_nnc_graph_exec_set(p.g, ccv_nnc_graph_exec_from_symbol(p.ea, u), c);
    }
    EXPECT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    last = p.of(loss)->data.f32[0];
    if (s == 0) first = last;
  }
  EXPECT_GT(first, 0.3) << "the untrained network should not already fit";
  return last;
}

TEST(AutodiffMinimize, MlpTrainsWithSgd) {
  ccv_nnc_cmd_t sgd = cmd(CCV_NNC_SGD_FORWARD);
  sgd.info.sgd.rate = 0.5f, sgd.info.sgd.scale = 1, sgd.info.sgd.momentum = 0.9f;
  EXPECT_LT(train(sgd, 150), 0.05);
}

TEST(AutodiffMinimize, MlpTrainsWithAdam) {
  ccv_nnc_cmd_t adam = cmd(CCV_NNC_ADAM_FORWARD);
  adam.info.adam.rate = 0.05f, adam.info.adam.scale = 1, adam.info.adam.beta1 = 0.9f, adam.info.adam.beta2 = 0.999f;
  adam.info.adam.epsilon = 1e-8f, adam.info.adam.step = 1;
  EXPECT_LT(train(adam, 150), 0.05);
}

// A small CNN (fp32): 6x6 images holding a bright horizontal or vertical bar
// at a random place over noise; conv 3x3 (4 filters, padding 1) -> RELU ->
// 2x2 max pool -> a reshape to rows -> dense -> softmax crossentropy. The
// reshape is an alias, so its gradient reaches the pool through the alias.
TEST(AutodiffMinimize, SmallCnnTrainsWithSgd) {
  const int n = 32, side = 6, filters = 4, pooled = 3;
  Program p;
  auto f32 = [&](std::vector<int> dims, const char* name) { return sym(p.sg, dims, name, CCV_32F); };
  const ccv_nnc_tensor_symbol_t x = f32({n, side, side, 1}, "x"), label = f32({n}, "label");
  const ccv_nnc_tensor_symbol_t k = f32({filters, 3, 3, 1}, "k"), kb = f32({filters}, "kb");
  const ccv_nnc_tensor_symbol_t w = f32({2, pooled * pooled * filters}, "w"), b = f32({2}, "b");
  ccv_nnc_cmd_t conv = cmd(CCV_NNC_CONVOLUTION_FORWARD);
  conv.info.size.dim[0] = conv.info.size.dim[1] = 3;
  conv.info.size.dim[2] = 1;
  conv.info.convolution.count = filters;
  conv.info.convolution.groups = 1;
  ccv_nnc_hint_t pad;
  std::memset(&pad, 0, sizeof(pad));
  pad.stride.dim[0] = pad.stride.dim[1] = 1;
  pad.border.begin[0] = pad.border.begin[1] = pad.border.end[0] = pad.border.end[1] = 1;
  const ccv_nnc_tensor_symbol_t c = f32({n, side, side, filters}, "conv");
  ccv_nnc_graph_exec_symbol_set_hint(p.sg, exec(p.sg, conv, {x, k, kb}, {c}), pad);
  const ccv_nnc_tensor_symbol_t r = apply(p.sg, cmd(CCV_NNC_RELU_FORWARD), {c}, CCV_32F);
  ccv_nnc_cmd_t pool = cmd(CCV_NNC_MAX_POOL_FORWARD);
  pool.info.size.dim[0] = pool.info.size.dim[1] = 2;
  pool.info.size.dim[2] = filters;
  const ccv_nnc_tensor_symbol_t m = f32({n, pooled, pooled, filters}, "pool");
  exec(p.sg, pool, {r}, {m});
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  const ccv_nnc_tensor_symbol_t rows = ccv_nnc_tensor_symbol_alias_new(p.sg, m, ofs, stride, param({n, pooled * pooled * filters}, CCV_32F), "rows");
  ccv_nnc_cmd_t gemm = cmd(CCV_NNC_GEMM_FORWARD);
  gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
  gemm.info.blas.transpose_b[0] = 0;
  gemm.info.blas.transpose_b[1] = 1;
  const ccv_nnc_tensor_symbol_t logits = apply(p.sg, gemm, {rows, w, b}, CCV_32F);
  ccv_nnc_cmd_t xent = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  xent.info.label_smoothing.trim1 = 1;
  const ccv_nnc_tensor_symbol_t per_row = f32({n}, "loss rows"), softmax = f32({n, 2}, "softmax");
  exec(p.sg, xent, {logits, label}, {per_row, softmax});
  const ccv_nnc_tensor_symbol_t loss = apply(p.sg, reduce_all(CCV_NNC_REDUCE_MEAN_FORWARD, 1), {per_row}, CCV_32F);
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_cmd_t sgd = cmd(CCV_NNC_SGD_FORWARD);
  sgd.info.sgd.rate = 0.1f, sgd.info.sgd.scale = 1, sgd.info.sgd.momentum = 0.9f;
  const ccv_nnc_tensor_symbol_t params[4] = {k, kb, w, b};
  ccv_nnc_tensor_symbol_t updated[4];
  ccv_nnc_tensor_symbol_map_t saved[4];
  ccv_nnc_graph_exec_symbol_t updates[4];
  // x's gradient too (an input of minimize; the first layer's weights-only
  // pattern |g|x|-| is AutodiffSingle.ConvolutionWeightsOnly's).
  ccv_nnc_symbolic_graph_minimize(p.sg, sgd, &loss, 1, params, 4, &x, 1, ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg), nullptr, updated, saved, updates);
  ASSERT_GE(updates[0].d, 0) << ccv_nnc_error_message();
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0, 1);
  ccv_nnc_tensor_t* xt = p.tensor(param({n, side, side, 1}, CCV_32F));
  ccv_nnc_tensor_t* lt = p.tensor(param({n}, CCV_32F));
  for (int i = 0; i < n; i++) {
    const int horizontal = static_cast<int>(rng() % 2), at_line = static_cast<int>(rng() % side);
    for (int y = 0; y < side; y++)
      for (int z = 0; z < side; z++)
        xt->data.f32[(i * side + y) * side + z] = 0.2f * normal(rng) + ((horizontal ? y : z) == at_line ? 1.f : 0.f);
    lt->data.f32[i] = static_cast<float>(horizontal);
  }
  std::vector<ccv_nnc_tensor_bind_t> binds{{x, xt}, {label, lt}};
  for (int q = 0; q < 4; q++) {
    ccv_nnc_tensor_t* t = p.tensor(ccv_nnc_tensor_symbol_params(p.sg, params[q]));
    ccv_nnc_tensor_t* s = p.tensor(ccv_nnc_tensor_symbol_params(p.sg, params[q]));
    const size_t count = adtest::count(t->info);
    for (size_t i = 0; i < count; i++) t->data.f32[i] = q % 2 ? 0.f : 0.3f * normal(rng), s->data.f32[i] = 0;
    binds.push_back({params[q], t});
    binds.push_back({updated[q], t});
    binds.push_back({saved[q].source, s});
    binds.push_back({saved[q].destination, s});
  }
  ASSERT_TRUE(p.compile(binds, {loss})) << ccv_nnc_error_message();
  double first = 0, last = 0;
  for (int step = 0; step < 100; step++) {
    ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    last = p.of(loss)->data.f32[0];
    if (step == 0) first = last;
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, 0.05);
}

TEST(AutodiffMinimize, BadInput) {
  Program p;
  const ccv_nnc_tensor_symbol_t w = sym(p.sg, {3}, "w");
  const ccv_nnc_tensor_symbol_t loss = apply(p.sg, reduce_all(CCV_NNC_REDUCE_SUM_FORWARD, 1), {w});
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_tensor_symbol_t updated = {-7, nullptr};
  ccv_nnc_tensor_symbol_map_t saved = {};
  ccv_nnc_graph_exec_symbol_t e = {-7, nullptr};
  const int execs = ccv_nnc_graph_exec_symbol_count(p.sg);
  ccv_nnc_symbolic_graph_minimize(p.sg, cmd(CCV_NNC_RELU_FORWARD), &loss, 1, &w, 1, nullptr, 0, nullptr, 0, nullptr, 0, nullptr,
                                  &updated, &saved, &e);
  EXPECT_TRUE(message_has("RELU_FORWARD")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("not a minimizer")) << ccv_nnc_error_message();
  ccv_nnc_symbolic_graph_minimize(p.sg, cmd(CCV_NNC_SGD_FORWARD), &loss, 1, &w, 1, nullptr, 0, nullptr, 0, nullptr, 0, nullptr,
                                  nullptr, &saved, &e);
  EXPECT_TRUE(message_has("required")) << ccv_nnc_error_message();
  EXPECT_EQ(updated.d, -7);  // untouched on failure
  EXPECT_EQ(e.d, -7);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), execs);
}

}  // namespace
