// Level 4: the dynamic graph. Values against double-precision references
// written here, gradients against central finite differences of those
// references, memory against the trace's own counts over a training loop.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dynamic/dynamic.hpp"
#include "symbolic/graph.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "symbolic_test_util.hpp"

using namespace symtest;

namespace {

using V = ccv_nnc_tensor_variable_t;
#define VL(...) std::vector<V>{__VA_ARGS__}.data(), static_cast<int>(std::vector<V>{__VA_ARGS__}.size())

ccv_nnc_tensor_param_t f32(int a, int b = 0) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = a;
  p.dim[1] = b;
  return p;
}
const ccv_nnc_tensor_param_t kAuto{};

ccv_nnc_cmd_t gemm_wt() {  // x W^T (+ b)
  ccv_nnc_cmd_t c = plain(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = 1;
  c.info.blas.a[1] = 1;
  c.info.blas.transpose_b[0] = 0;
  c.info.blas.transpose_b[1] = 1;
  return c;
}
ccv_nnc_cmd_t reduce_all() {
  ccv_nnc_cmd_t c = plain(CCV_NNC_REDUCE_SUM_FORWARD);
  c.info.reduce.axis[0] = 0;
  c.info.reduce.axis[1] = 1;
  c.info.reduce.count = 2;
  return c;
}
ccv_nnc_cmd_t sgd(float rate) {
  ccv_nnc_cmd_t c = plain(CCV_NNC_SGD_FORWARD);
  c.info.sgd.rate = rate;
  c.info.sgd.scale = 1;
  return c;
}

int exec(ccv_nnc_dynamic_graph_t* g, ccv_nnc_cmd_t cmd, std::vector<V> in, std::vector<V> out) {
  return ccv_nnc_dynamic_graph_exec(g, cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), 0,
                                    nullptr);
}

float* data(ccv_nnc_dynamic_graph_t* g, V v) { return ccv_nnc_tensor_from_variable(g, v)->data.f32; }

// loss = sum((tanh(x W1^T + b1) W2^T)^2) in double.
double mlp_loss(const std::vector<double>& x, const std::vector<double>& w1, const std::vector<double>& b1, const std::vector<double>& w2, int n,
                int i, int h) {
  double loss = 0;
  for (int r = 0; r < n; r++) {
    double y = 0;
    for (int k = 0; k < h; k++) {
      double a = b1[static_cast<size_t>(k)];
      for (int c = 0; c < i; c++) a += x[static_cast<size_t>(r * i + c)] * w1[static_cast<size_t>(k * i + c)];
      y += std::tanh(a) * w2[static_cast<size_t>(k)];
    }
    loss += y * y;
  }
  return loss;
}

TEST(DynamicGraph, MlpValueAndGradientsAgainstFiniteDifferences) {
  constexpr int n = 4, i = 3, h = 5;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n, i));
  const V w1 = ccv_nnc_tensor_variable_new(g, f32(h, i));
  const V b1 = ccv_nnc_tensor_variable_new(g, f32(h));
  const V w2 = ccv_nnc_tensor_variable_new(g, f32(1, h));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<double> X(n * i), W1(h * i), B1(h), W2(h);
  for (int k = 0; k < n * i; k++) X[static_cast<size_t>(k)] = data(g, x)[k] = u(rng);
  for (int k = 0; k < h * i; k++) W1[static_cast<size_t>(k)] = data(g, w1)[k] = u(rng);
  for (int k = 0; k < h; k++) B1[static_cast<size_t>(k)] = data(g, b1)[k] = u(rng);
  for (int k = 0; k < h; k++) W2[static_cast<size_t>(k)] = data(g, w2)[k] = u(rng);
  const V a = ccv_nnc_tensor_variable_new(g), t = ccv_nnc_tensor_variable_new(g), y = ccv_nnc_tensor_variable_new(g);
  const V sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, gemm_wt(), {x, w1, b1}, {a}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_TANH_FORWARD), {a}, {t}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, gemm_wt(), {t, w2}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {y, y}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
  const double L = mlp_loss(X, W1, B1, W2, n, i, h);
  EXPECT_NEAR(data(g, loss)[0], L, 1e-5 * (1 + L));
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 5);
  // x is a constant: the gradients go to the parameters only.
  const V dw1 = ccv_nnc_tensor_variable_new(g), db1 = ccv_nnc_tensor_variable_new(g), dw2 = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(w1, b1, w2), VL(dw1, db1, dw2), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  auto check = [&](std::vector<double>& p, V grad, const char* name) {
    for (size_t k = 0; k < p.size(); k++) {
      const double keep = p[k], eps = 1e-5;
      p[k] = keep + eps;
      const double up = mlp_loss(X, W1, B1, W2, n, i, h);
      p[k] = keep - eps;
      const double down = mlp_loss(X, W1, B1, W2, n, i, h);
      p[k] = keep;
      const double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(data(g, grad)[k], fd, 1e-4 * (1 + std::fabs(fd))) << name << "[" << k << "]";
    }
  };
  check(W1, dw1, "dW1");
  check(B1, db1, "db1");
  check(W2, dw2, "dW2");
  // A second backward adds to gradients that hold values.
  const float before = data(g, dw2)[1];
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(w2), VL(dw2), nullptr);
  EXPECT_NEAR(data(g, dw2)[1], 2 * before, 1e-5 * (1 + std::fabs(before)));
  // The backward pass left nothing in the trace.
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 5);
  // Freeing the results prunes the trace down to the named leaves.
  for (V v : {a, t, y, sq, loss}) ccv_nnc_tensor_variable_free(g, v);
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);
  ccv_nnc_dynamic_graph_free(g);
}

// A variable written again keeps what the trace needs of its old value:
// y = x * x; x = y * x (x rebinds); loss = sum(x) = sum(x0^3); d/dx0 = 3 x0^2.
TEST(DynamicGraph, RewrittenVariableKeepsTracedValue) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x0 = ccv_nnc_tensor_variable_new(g, f32(3));
  const V x = ccv_nnc_tensor_variable_new(g, f32(3));
  const float v[3] = {0.5f, -1.5f, 2.f};
  for (int k = 0; k < 3; k++) data(g, x0)[k] = v[k];
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {x0, x0}, {x}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {x, x0}, {x}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_cmd_t r = plain(CCV_NNC_REDUCE_SUM_FORWARD);
  r.info.reduce.axis[0] = 0;
  r.info.reduce.count = 1;
  const V loss = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, r, {x}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
  const V d = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(x0), VL(d), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  for (int k = 0; k < 3; k++) {
    EXPECT_NEAR(data(g, x)[k], v[k] * v[k] * v[k], 1e-6);
    EXPECT_NEAR(data(g, d)[k], 3 * v[k] * v[k], 1e-5);
  }
  ccv_nnc_dynamic_graph_free(g);
}

// A training loop that frees its temporaries holds flat memory: the trace
// is empty after each step and the heap does not grow.
TEST(DynamicGraph, TrainingLoopHoldsFlatMemory) {
  constexpr int n = 8, i = 4;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n, i));
  const V target = ccv_nnc_tensor_constant_new(g, f32(n, 1));
  const V w = ccv_nnc_tensor_variable_new(g, f32(1, i));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const float truth[i] = {0.5f, -1.f, 0.25f, 2.f};
  for (int r = 0; r < n; r++) {
    double s = 0;
    for (int c = 0; c < i; c++) s += truth[c] * (data(g, x)[r * i + c] = u(rng));
    data(g, target)[r] = static_cast<float>(s);
  }
  for (int c = 0; c < i; c++) data(g, w)[c] = 0;
  ccv_nnc_cmd_t neg = plain(CCV_NNC_ADD_FORWARD);
  neg.info.blas.a[0] = 1;
  neg.info.blas.a[1] = -1;
  ASSERT_EQ(ccv_nnc_minimizer_saved_aux_size(sgd(0.02f)), 1);  // SGD's momentum
  V momentum = ccv_nnc_tensor_variable_new(g);
  // The heap's high-water mark over steps 100..399 and over 700..999 (the
  // trace is compacted every few hundred steps, so the heap saw-tooths).
  size_t early_peak = 0, late_peak = 0;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 1000; step++) {
    const V y = ccv_nnc_tensor_variable_new(g), e = ccv_nnc_tensor_variable_new(g), sq = ccv_nnc_tensor_variable_new(g),
            loss = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, gemm_wt(), {x, w}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, neg, {y, target}, {e}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {e, e}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 4) << step;  // traced
    if (step == 0) first_loss = data(g, loss)[0];
    last_loss = data(g, loss)[0];
    ccv_nnc_dynamic_graph_minimize(g, sgd(0.02f), VL(loss), nullptr, VL(w), &momentum, 0, nullptr);
    ASSERT_STREQ(last_error().c_str(), "") << step;
    for (V v : {y, e, sq, loss}) ccv_nnc_tensor_variable_free(g, v);
    ASSERT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0) << step;
    const size_t heap = mallinfo2().uordblks;
    if (step >= 100 && step < 400) early_peak = std::max(early_peak, heap);
    if (step >= 700) late_peak = std::max(late_peak, heap);
    // The trace table (dead entries included) is compacted once mostly dead: bounded.
    ASSERT_LT(g->trace->tensors.size(), 600u) << step;
  }
  // A leak of one trace entry per step (about 800 bytes) would add 600 KB; allow the allocator 5 %.
  EXPECT_LE(late_peak, early_peak + early_peak / 20) << "the heap's peak grew from " << early_peak << " to " << late_peak << " bytes";
  EXPECT_LT(last_loss, 1e-6f * (1 + first_loss)) << first_loss;
  for (int c = 0; c < i; c++) EXPECT_NEAR(data(g, w)[c], truth[c], 1e-3);
  ccv_nnc_dynamic_graph_free(g);
}

TEST(DynamicGraph, NoGradLeavesNoTrace) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V a = ccv_nnc_tensor_variable_new(g, f32(2));
  data(g, a)[0] = 1, data(g, a)[1] = 2;
  EXPECT_EQ(ccv_nnc_dynamic_graph_set_no_grad(g, 1), 0);
  EXPECT_EQ(ccv_nnc_dynamic_graph_set_no_grad(g, 1), -1);
  const V b = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b}), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_TENSOR), 0);
  EXPECT_NEAR(data(g, b)[1], std::exp(2.0), 1e-5);
  const V d = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(b), nullptr, VL(a), VL(d), nullptr);
  EXPECT_NE(last_error().find("not computed by a traced command"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_dynamic_graph_set_no_grad(g, 0), 0);
  // Constant inputs leave no trace either.
  const V c = ccv_nnc_tensor_constant_new(g, f32(2));
  data(g, c)[0] = 3, data(g, c)[1] = 4;
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {c}, {b}), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);
  ccv_nnc_dynamic_graph_free(g);
}

// Aliases as inputs: the gradient reaches only the part they view.
TEST(DynamicGraph, AliasInputGradient) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_variable_new(g, f32(4, 2));
  for (int k = 0; k < 8; k++) data(g, x)[k] = static_cast<float>(k) * 0.25f - 1;
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {2, 1};
  const V mid = ccv_nnc_tensor_variable_alias_new(g, x, ofs, stride, f32(2, 2));
  ASSERT_NE(mid, nullptr) << last_error();
  const V sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {mid, mid}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
  double expected = 0;
  for (int k = 2; k < 6; k++) expected += std::pow(k * 0.25 - 1, 2);
  EXPECT_NEAR(data(g, loss)[0], expected, 1e-6);
  const V dx = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(x), VL(dx), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  for (int k = 0; k < 8; k++) EXPECT_NEAR(data(g, dx)[k], k >= 2 && k < 6 ? 2 * (k * 0.25 - 1) : 0.0, 1e-6) << k;
  int got[CCV_NNC_MAX_DIM_ALLOC];
  EXPECT_EQ(ccv_nnc_tensor_variable_alias_params(g, mid, got, nullptr), 0);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(ccv_nnc_tensor_variable_alias_params(g, x, got, nullptr), -1);
  // Freeing the base leaves the alias its storage, even once the base's shell
  // is reused by a new variable.
  ccv_nnc_tensor_variable_free(g, x);
  const V fresh = ccv_nnc_tensor_variable_new(g, f32(4, 2));
  for (int k = 0; k < 8; k++) data(g, fresh)[k] = 100;
  for (int k = 0; k < 4; k++) EXPECT_EQ(data(g, mid)[k], static_cast<float>(k + 2) * 0.25f - 1) << k;
  ccv_nnc_dynamic_graph_free(g);
}

// Memoisation: a repeated call on the same bytes hands back its outputs; a
// changed input, a random command or a full cache runs the command.
TEST(DynamicGraph, Memoization) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  ccv_nnc_dynamic_graph_set_memoization(g, 1 << 20);
  const V a = ccv_nnc_tensor_variable_new(g, f32(64));
  for (int k = 0; k < 64; k++) data(g, a)[k] = 0.01f * static_cast<float>(k) - 0.3f;
  uint64_t hits = 0, misses = 0;
  const V b1 = ccv_nnc_tensor_variable_new(g), b2 = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b1}), CCV_NNC_EXEC_SUCCESS) << last_error();
  // The caller's writes into a cached output do not reach the cache.
  float* p1 = data(g, b1);
  const float first = p1[5];
  p1[5] = 1e6f;
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_dynamic_graph_memoization_stats(g, &hits, &misses);
  EXPECT_EQ(hits, 1u);
  EXPECT_EQ(misses, 1u);
  for (int k = 0; k < 64; k++) EXPECT_NEAR(data(g, b2)[k], std::exp(0.01 * k - 0.3), 1e-6) << k;
  EXPECT_EQ(first, data(g, b2)[5]);
  // A changed input misses.
  data(g, a)[3] += 1;
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_dynamic_graph_memoization_stats(g, &hits, &misses);
  EXPECT_EQ(hits, 1u);
  EXPECT_EQ(misses, 2u);
  EXPECT_NEAR(data(g, b2)[3], std::exp(0.03 - 0.3 + 1), 1e-5);
  // Random commands always run.
  ccv_nnc_cmd_t rnd = plain(CCV_NNC_RANDOM_UNIFORM_FORWARD);
  rnd.info.blas.a[0] = 0, rnd.info.blas.a[1] = 1;
  const V r1 = ccv_nnc_tensor_variable_new(g, f32(16)), r2 = ccv_nnc_tensor_variable_new(g, f32(16));
  ASSERT_EQ(exec(g, rnd, {}, {r1}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, rnd, {}, {r2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_NE(std::memcmp(data(g, r1), data(g, r2), 16 * sizeof(float)), 0);
  ccv_nnc_dynamic_graph_memoization_stats(g, &hits, &misses);
  EXPECT_EQ(hits + misses, 3u);
  // Gradients through a memoised call are the same.
  const V s1 = ccv_nnc_tensor_variable_new(g), s2 = ccv_nnc_tensor_variable_new(g), d = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_cmd_t r = plain(CCV_NNC_REDUCE_SUM_FORWARD);
  r.info.reduce.axis[0] = 0;
  r.info.reduce.count = 1;
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b1}), CCV_NNC_EXEC_SUCCESS) << last_error();  // a hit
  ASSERT_EQ(exec(g, r, {b1}, {s1}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_dynamic_graph_backward(g, VL(s1), nullptr, VL(a), VL(d), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  for (int k = 0; k < 64; k++) EXPECT_NEAR(data(g, d)[k], std::exp(static_cast<double>(data(g, a)[k])), 1e-5) << k;
  (void)s2;
  // A cache smaller than an output keeps nothing; 0 turns it off.
  ccv_nnc_dynamic_graph_set_memoization(g, 16);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b1}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  uint64_t hits2 = 0;
  ccv_nnc_dynamic_graph_memoization_stats(g, &hits2, nullptr);
  EXPECT_EQ(hits2, hits + 1);  // only the hit above, before the cache shrank
  ccv_nnc_dynamic_graph_set_memoization(g, 0);
  ccv_nnc_dynamic_graph_memoization_stats(g, &hits, &misses);
  EXPECT_EQ(hits + misses, 0u);
  ccv_nnc_dynamic_graph_free(g);
}

// The deferred mode: the same program gives the same values; intermediates
// freed before the values are read never get storage of their own; the
// recording exports as a symbolic graph that compiles and runs.
void chain(ccv_nnc_dynamic_graph_t* g, V x, std::vector<V>& steps, int n) {
  ccv_nnc_cmd_t half = plain(CCV_NNC_SCALAR_MUL_FORWARD);
  half.info.blas.a[0] = 0.5f;
  V prev = x;
  for (int k = 0; k < n; k++) {
    const V y = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, k % 2 ? half : plain(CCV_NNC_EWEXP_FORWARD), {prev}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
    steps.push_back(y);
    prev = y;
  }
}

TEST(DynamicGraph, DeferredModeMatchesImmediateWithLessMemory) {
  constexpr int n = 1 << 18, len = 8;
  uint64_t peak[2] = {0, 0};
  std::vector<float> result[2];
  for (int deferred = 0; deferred < 2; deferred++) {
    ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
    const V x = ccv_nnc_tensor_constant_new(g, f32(n));
    for (int k = 0; k < n; k++) data(g, x)[k] = 0.25f * std::sin(0.001f * static_cast<float>(k));
    ccv_nnc_dynamic_graph_memory_stats(g, nullptr, nullptr, 1);
    if (deferred) EXPECT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
    std::vector<V> steps;
    chain(g, x, steps, len);
    // Scope-end frees: the intermediates go before the result is read.
    for (int k = 0; k < len - 1; k++) ccv_nnc_tensor_variable_free(g, steps[static_cast<size_t>(k)]);
    const float* out = data(g, steps.back());  // runs the recording in the deferred mode
    ASSERT_NE(out, nullptr) << last_error();
    result[deferred].assign(out, out + n);
    ccv_nnc_dynamic_graph_memory_stats(g, nullptr, &peak[deferred], 0);
    ccv_nnc_dynamic_graph_free(g);
  }
  for (int k = 0; k < n; k += 997) {
    double v = 0.25 * std::sin(0.001 * k);
    for (int s = 0; s < len; s++) v = s % 2 ? 0.5 * v : std::exp(v);
    EXPECT_NEAR(result[0][static_cast<size_t>(k)], v, 1e-5 * (1 + std::fabs(v))) << k;
    EXPECT_EQ(result[1][static_cast<size_t>(k)], result[0][static_cast<size_t>(k)]) << k;
  }
  // Immediate: every intermediate held until the frees (x's included: 9 tensors
  // of 1 MiB); deferred: the chain runs in place in the arena beside the result.
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(float);
  std::printf("peak tensor storage over an %d-step chain of 1 MiB tensors: immediate %.2f MiB, deferred %.2f MiB\n", len,
              static_cast<double>(peak[0]) / bytes, static_cast<double>(peak[1]) / bytes);
  EXPECT_GE(peak[0], 8 * bytes);
  EXPECT_LE(peak[1], 3 * bytes);
}

TEST(DynamicGraph, DeferredExport) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V a = ccv_nnc_tensor_variable_new(g, f32(5)), b = ccv_nnc_tensor_variable_new(g, f32(5));
  const V unused = ccv_nnc_tensor_variable_new(g, f32(5));
  for (int k = 0; k < 5; k++) data(g, a)[k] = 0.1f * static_cast<float>(k), data(g, b)[k] = 1 - 0.2f * static_cast<float>(k), data(g, unused)[k] = 0;
  ccv_nnc_dynamic_graph_set_deferred(g, 1);
  const V p = ccv_nnc_tensor_variable_new(g), q = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {a, b}, {p}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {p}, {q}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_symbolic_graph_t* sg = nullptr;
  ccv_nnc_tensor_symbol_t in[3], out[1];
  // A needed value missing, then an input that feeds nothing: refused.
  EXPECT_EQ(ccv_nnc_dynamic_graph_export(g, VL(a), VL(q), &sg, in, out), -1);
  EXPECT_NE(last_error().find("not among the inputs"), std::string::npos) << last_error();
  EXPECT_EQ(sg, nullptr);
  EXPECT_EQ(ccv_nnc_dynamic_graph_export(g, VL(a, b, unused), VL(q), &sg, in, out), -1);
  EXPECT_NE(last_error().find("feeds none"), std::string::npos) << last_error();
  ASSERT_EQ(ccv_nnc_dynamic_graph_export(g, VL(a, b), VL(q), &sg, in, out), 0) << last_error();
  ASSERT_NE(sg, nullptr);
  // The exported graph compiles and runs on new inputs.
  ccv_nnc_graph_t* cg = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, out, 1, nullptr, 0, nullptr, 0, &cg, &ta, &ea);
  ASSERT_NE(cg, nullptr) << last_error();
  for (int k = 0; k < 5; k++) {
    ccv_nnc_tensor_from_symbol(ta, in[0])->data.f32[k] = 0.5f;
    ccv_nnc_tensor_from_symbol(ta, in[1])->data.f32[k] = static_cast<float>(k);
  }
  ASSERT_EQ(ccv_nnc_graph_run(cg, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int k = 0; k < 5; k++) EXPECT_NEAR(ccv_nnc_tensor_from_symbol(ta, out[0])->data.f32[k], std::exp(0.5 * k), 1e-5) << k;
  ccv_nnc_graph_free(cg);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  ccv_nnc_symbolic_graph_free(sg);
  // The recording is still there: reading q runs it on the variables.
  for (int k = 0; k < 5; k++) EXPECT_NEAR(data(g, q)[k], std::exp(0.1 * k * (1 - 0.2 * k)), 1e-6) << k;
  // The recording that ran stays for a later backward (p was freed: it is computed again): dq/da = exp(a b) b.
  ccv_nnc_tensor_variable_free(g, p);
  const V d = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(q), nullptr, VL(a), VL(d), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  for (int k = 0; k < 5; k++) {
    const double bk = 1 - 0.2 * k;
    EXPECT_NEAR(data(g, d)[k], std::exp(0.1 * k * bk) * bk, 1e-5) << k;
  }
  // After the deferred mode the recording is gone: q is not differentiable in immediate mode.
  EXPECT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 0), 0);
  ccv_nnc_dynamic_graph_backward(g, VL(q), nullptr, VL(a), VL(d), nullptr);
  EXPECT_NE(last_error().find("not computed by a traced command"), std::string::npos) << last_error();
  ccv_nnc_dynamic_graph_free(g);
}

// The tape: traced calls whose outputs are freed never reach the trace; a
// kept chain longer than the tape (256 calls) crosses into the trace midway
// and still differentiates; intermediates freed along the chain are kept
// for the backward.
TEST(DynamicGraph, TapeLeavesNothingAndChainsAcrossIt) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V a = ccv_nnc_tensor_variable_new(g, f32(3));
  for (int k = 0; k < 3; k++) data(g, a)[k] = 0.5f + 0.25f * static_cast<float>(k);
  for (int k = 0; k < 100; k++) {
    const V c = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {c}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_tensor_variable_free(g, c);
  }
  EXPECT_EQ(g->trace->execs.size(), 0u);  // not even dead entries: nothing went in
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);
  // y <- tanh(2 y), 300 times: each backward step reads the forward value it made.
  ccv_nnc_cmd_t twice = plain(CCV_NNC_SCALAR_MUL_FORWARD);
  twice.info.blas.a[0] = 2;
  constexpr int len = 300;
  V y = a;
  std::vector<V> kept;
  for (int k = 0; k < len; k++) {
    const V doubled = ccv_nnc_tensor_variable_new(g), next = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, twice, {y}, {doubled}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, plain(CCV_NNC_TANH_FORWARD), {doubled}, {next}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_tensor_variable_free(g, doubled);
    if (y != a && k % 3) ccv_nnc_tensor_variable_free(g, y);  // most of the chain freed as it goes
    else if (y != a) kept.push_back(y);
    y = next;
  }
  EXPECT_GT(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);  // the tape went into the trace
  for (V v : kept) ccv_nnc_tensor_variable_free(g, v);  // in the trace now: still read by the chain
  const V da = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(y), nullptr, VL(a), VL(da), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  for (int k = 0; k < 3; k++) {
    double v = 0.5 + 0.25 * k, d = 1;
    for (int s = 0; s < len; s++) {
      v = std::tanh(2 * v);
      d *= 2 * (1 - v * v);
    }
    EXPECT_NEAR(data(g, y)[k], v, 1e-5) << k;
    EXPECT_NEAR(data(g, da)[k], d, 1e-5 * (1 + std::fabs(d))) << k;
  }
  const V t = y;
  // Everything freed: the trace empties.
  ccv_nnc_tensor_variable_free(g, t);
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);
  ccv_nnc_dynamic_graph_free(g);
}

// The deferred mode with backward: the MLP's gradients (recorded, then
// differentiated and planned with the forward when read) against central
// finite differences; a second backward adds; a given seed scales.
TEST(DynamicGraph, DeferredBackwardAgainstFiniteDifferences) {
  constexpr int n = 5, i = 3, h = 4;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n, i));
  const V w1 = ccv_nnc_tensor_variable_new(g, f32(h, i));
  const V b1 = ccv_nnc_tensor_variable_new(g, f32(h));
  const V w2 = ccv_nnc_tensor_variable_new(g, f32(1, h));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<double> X(n * i), W1(h * i), B1(h), W2(h);
  for (int k = 0; k < n * i; k++) X[static_cast<size_t>(k)] = data(g, x)[k] = u(rng);
  for (int k = 0; k < h * i; k++) W1[static_cast<size_t>(k)] = data(g, w1)[k] = u(rng);
  for (int k = 0; k < h; k++) B1[static_cast<size_t>(k)] = data(g, b1)[k] = u(rng);
  for (int k = 0; k < h; k++) W2[static_cast<size_t>(k)] = data(g, w2)[k] = u(rng);
  ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
  const V a = ccv_nnc_tensor_variable_new(g), t = ccv_nnc_tensor_variable_new(g), y = ccv_nnc_tensor_variable_new(g);
  const V sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, gemm_wt(), {x, w1, b1}, {a}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_TANH_FORWARD), {a}, {t}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, gemm_wt(), {t, w2}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {y, y}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
  // Scope-end frees before anything runs: the backward still reads what it needs.
  for (V v : {a, t, sq}) ccv_nnc_tensor_variable_free(g, v);
  const V dw1 = ccv_nnc_tensor_variable_new(g), db1 = ccv_nnc_tensor_variable_new(g), dw2 = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(w1, b1, w2), VL(dw1, db1, dw2), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  EXPECT_EQ(ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC), 0);  // recorded, not traced
  // Mistakes are found when the backward is recorded, not when it runs.
  const V stray = ccv_nnc_tensor_variable_new(g, f32(1, h)), dstray = ccv_nnc_tensor_variable_new(g);
  data(g, stray)[0] = 0;
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(stray), VL(dstray), nullptr);
  EXPECT_NE(last_error().find("no path to the f variables"), std::string::npos) << last_error();
  ccv_nnc_dynamic_graph_backward(g, VL(w1), nullptr, VL(w2), VL(dstray), nullptr);
  EXPECT_NE(last_error().find("not computed by a call recorded in the deferred mode"), std::string::npos) << last_error();
  const double L = mlp_loss(X, W1, B1, W2, n, i, h);
  EXPECT_NEAR(data(g, loss)[0], L, 1e-5 * (1 + L));  // runs forward and backward as one planned graph
  auto check = [&](std::vector<double>& p, V grad, double scale, const char* name) {
    const float* got = data(g, grad);
    for (size_t k = 0; k < p.size(); k++) {
      const double keep = p[k], eps = 1e-5;
      p[k] = keep + eps;
      const double up = mlp_loss(X, W1, B1, W2, n, i, h);
      p[k] = keep - eps;
      const double down = mlp_loss(X, W1, B1, W2, n, i, h);
      p[k] = keep;
      const double fd = scale * (up - down) / (2 * eps);
      EXPECT_NEAR(got[k], fd, 1e-4 * (1 + std::fabs(fd))) << name << "[" << k << "]";
    }
  };
  check(W1, dw1, 1, "dW1");
  check(B1, db1, 1, "db1");
  check(W2, dw2, 1, "dW2");
  // Again on the same values, with a seed of 3 given, added to dw2's 1x: 4x.
  const V y2 = ccv_nnc_tensor_variable_new(g), sq2 = ccv_nnc_tensor_variable_new(g), loss2 = ccv_nnc_tensor_variable_new(g);
  const V seed = ccv_nnc_tensor_variable_new(g, f32(1, 1));
  const V a2 = ccv_nnc_tensor_variable_new(g), t2 = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, gemm_wt(), {x, w1, b1}, {a2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_TANH_FORWARD), {a2}, {t2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, gemm_wt(), {t2, w2}, {y2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {y2, y2}, {sq2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, reduce_all(), {sq2}, {loss2}), CCV_NNC_EXEC_SUCCESS) << last_error();
  data(g, seed)[0] = 3;  // a read in the deferred mode runs what is recorded so far
  const V seeds[1] = {seed};
  ccv_nnc_dynamic_graph_backward(g, VL(loss2), seeds, VL(w2), VL(dw2), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  check(W2, dw2, 4, "dW2 after a second backward with seed 3");
  ccv_nnc_dynamic_graph_free(g);
}

// A deferred training loop that reads its loss every step (each read runs the
// last step's backward and update with this step's forward): the recording
// and the storage held stay flat, and the loop converges.
TEST(DynamicGraph, DeferredTrainingLoopHoldsFlatMemory) {
  constexpr int n = 8, i = 4;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n, i)), target = ccv_nnc_tensor_constant_new(g, f32(n, 1));
  const V w = ccv_nnc_tensor_variable_new(g, f32(1, i));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const float truth[i] = {-0.5f, 1.5f, 0.75f, -2.f};
  for (int r = 0; r < n; r++) {
    double sum = 0;
    for (int c = 0; c < i; c++) sum += truth[c] * (data(g, x)[r * i + c] = u(rng));
    data(g, target)[r] = static_cast<float>(sum);
  }
  for (int c = 0; c < i; c++) data(g, w)[c] = 0;
  ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
  ccv_nnc_cmd_t minus = plain(CCV_NNC_ADD_FORWARD);
  minus.info.blas.a[0] = 1;
  minus.info.blas.a[1] = -1;
  V momentum = ccv_nnc_tensor_variable_new(g);
  uint64_t held_early = 0, held_late = 0;
  size_t most_records = 0;
  float first = 0, last = 0;
  for (int step = 0; step < 400; step++) {
    const V y = ccv_nnc_tensor_variable_new(g), e = ccv_nnc_tensor_variable_new(g), sq = ccv_nnc_tensor_variable_new(g),
            loss = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, gemm_wt(), {x, w}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, minus, {y, target}, {e}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {e, e}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
    last = data(g, loss)[0];
    if (step == 0) first = last;
    ccv_nnc_dynamic_graph_minimize(g, sgd(0.04f), VL(loss), nullptr, VL(w), &momentum, 0, nullptr);
    ASSERT_STREQ(last_error().c_str(), "") << step;
    for (V v : {y, e, sq, loss}) ccv_nnc_tensor_variable_free(g, v);
    most_records = std::max(most_records, g->records.size());
    uint64_t held = 0;
    ccv_nnc_dynamic_graph_memory_stats(g, &held, nullptr, 0);
    if (step == 50) held_early = held;
    if (step == 399) held_late = held;
  }
  EXPECT_LE(most_records, 12u);  // one step's forward, backward and update at most
  EXPECT_EQ(held_late, held_early);
  EXPECT_LT(last, 1e-6f * (1 + first)) << first;
  for (int c = 0; c < i; c++) EXPECT_NEAR(data(g, w)[c], truth[c], 1e-3);
  ccv_nnc_dynamic_graph_free(g);
}

// A random command's output freed before a read, differentiated after it:
// the backward sees the values the forward drew (not a second draw).
TEST(DynamicGraph, DeferredBackwardKeepsRandomDraws) {
  constexpr int n = 1000;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n)), w = ccv_nnc_tensor_variable_new(g, f32(n));
  for (int k = 0; k < n; k++) data(g, x)[k] = 1 + 0.001f * static_cast<float>(k), data(g, w)[k] = 1;
  ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
  ccv_nnc_cmd_t drop = plain(CCV_NNC_DROPOUT_FORWARD);
  drop.info.dropout.p = 0.5f;
  const V xw = ccv_nnc_tensor_variable_new(g), y = ccv_nnc_tensor_variable_new(g), mask = ccv_nnc_tensor_variable_new(g);
  const V loss = ccv_nnc_tensor_variable_new(g);
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {x, w}, {xw}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ASSERT_EQ(exec(g, drop, {xw}, {y, mask}), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_cmd_t all = plain(CCV_NNC_REDUCE_SUM_FORWARD);
  all.info.reduce.axis[0] = 0;
  all.info.reduce.count = 1;
  ASSERT_EQ(exec(g, all, {y}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (V v : {xw, y, mask}) ccv_nnc_tensor_variable_free(g, v);
  const float l = data(g, loss)[0];  // runs the forward; y is not held by any variable
  const V dw = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(w), VL(dw), nullptr);
  ASSERT_STREQ(last_error().c_str(), "");
  // d loss / d w_k = x_k * (kept_k ? 2 : 0) and w_k = 1: with the draw the forward used, sum_k dw_k = loss.
  double sum = 0;
  int kept = 0;
  for (int k = 0; k < n; k++) {
    const float d = data(g, dw)[k];
    sum += d;
    kept += d != 0 ? 1 : 0;
    if (d != 0) EXPECT_NEAR(d, 2 * (1 + 0.001 * k), 1e-5) << k;
  }
  EXPECT_GT(kept, n / 4);
  EXPECT_LT(kept, 3 * n / 4);
  EXPECT_NEAR(sum, l, 1e-3 * std::fabs(l));
  ccv_nnc_dynamic_graph_free(g);
}

// The same training program (exec, minimize with SGD and momentum, frees,
// reads) in immediate mode, in deferred mode reading the loss every step
// (each step one planned graph), and in deferred mode reading only at the end
// (all steps one planned graph): the same parameters.
void mlp_training(int mode, int steps, std::vector<float>* params, std::vector<float>* losses) {
  constexpr int n = 6, i = 5, h = 7;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  const V x = ccv_nnc_tensor_constant_new(g, f32(n, i));
  const V target = ccv_nnc_tensor_constant_new(g, f32(n, 1));
  const V w1 = ccv_nnc_tensor_variable_new(g, f32(h, i)), b1 = ccv_nnc_tensor_variable_new(g, f32(h));
  const V w2 = ccv_nnc_tensor_variable_new(g, f32(1, h)), b2 = ccv_nnc_tensor_variable_new(g, f32(1));
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (V v : {x, target, w1, b1, w2, b2}) {
    const ccv_nnc_tensor_t* tv = ccv_nnc_tensor_from_variable(g, v);
    for (int k = 0; k < ccv_nnc_tensor_count(tv->info); k++) tv->data.f32[k] = u(rng);
  }
  std::vector<const void*> where;  // parameters are updated in place in both modes
  for (V v : {w1, b1, w2, b2}) where.push_back(ccv_nnc_tensor_from_variable(g, v)->data.u8);
  if (mode > 0) ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
  ccv_nnc_cmd_t minus = plain(CCV_NNC_ADD_FORWARD);
  minus.info.blas.a[0] = 1;
  minus.info.blas.a[1] = -1;
  ccv_nnc_cmd_t opt = sgd(0.05f);
  opt.info.sgd.momentum = 0.9f;
  opt.info.sgd.dampening = 0;
  std::vector<V> momenta, norms;
  for (int k = 0; k < 4; k++) momenta.push_back(ccv_nnc_tensor_variable_new(g));
  for (int step = 0; step < steps; step++) {
    const V a = ccv_nnc_tensor_variable_new(g), t = ccv_nnc_tensor_variable_new(g), y = ccv_nnc_tensor_variable_new(g);
    const V e = ccv_nnc_tensor_variable_new(g), sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, gemm_wt(), {x, w1, b1}, {a}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, plain(CCV_NNC_TANH_FORWARD), {a}, {t}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, gemm_wt(), {t, w2, b2}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, minus, {y, target}, {e}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {e, e}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, reduce_all(), {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
    if (mode < 2) losses->push_back(data(g, loss)[0]);
    // A value read from w2 before its update (read after it in the deferred mode): the update waits for it.
    const V w1sq = ccv_nnc_tensor_variable_new(g);
    norms.push_back(ccv_nnc_tensor_variable_new(g));
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {w2, w2}, {w1sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, reduce_all(), {w1sq}, {norms.back()}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_tensor_variable_free(g, w1sq);
    ccv_nnc_dynamic_graph_minimize(g, opt, VL(loss), nullptr, VL(w1, b1, w2, b2), momenta.data(), 0, nullptr);
    ASSERT_STREQ(last_error().c_str(), "") << step;
    for (V v : {a, t, y, e, sq, loss}) ccv_nnc_tensor_variable_free(g, v);
  }
  for (V v : norms) params->push_back(data(g, v)[0]);
  size_t in_place = 0;
  for (V v : {w1, b1, w2, b2}) {
    const ccv_nnc_tensor_t* tv = ccv_nnc_tensor_from_variable(g, v);
    EXPECT_EQ(static_cast<const void*>(tv->data.u8), where[in_place++]) << mode;
    params->insert(params->end(), tv->data.f32, tv->data.f32 + ccv_nnc_tensor_count(tv->info));
  }
  ccv_nnc_dynamic_graph_free(g);
}

TEST(DynamicGraph, DeferredTrainingMatchesImmediate) {
  constexpr int steps = 5;
  std::vector<float> params[3], losses[3];
  for (int mode = 0; mode < 3; mode++) {
    mlp_training(mode, steps, &params[mode], &losses[mode]);
    if (HasFatalFailure()) return;
  }
  // Training moved the loss, and the parameters away from where they started.
  ASSERT_EQ(losses[0].size(), static_cast<size_t>(steps));
  EXPECT_LT(losses[0].back(), 0.9f * losses[0].front());
  ASSERT_EQ(losses[1], losses[0]);
  std::vector<float> start;
  mlp_training(0, 0, &start, &losses[2]);
  size_t moved = 0;
  for (size_t k = 0; k < start.size(); k++) moved += std::fabs(start[k] - params[0][k]) > 1e-3f ? 1 : 0;  // (then the norms of w2)
  EXPECT_GT(moved, start.size() / 2);
  for (int mode = 1; mode < 3; mode++) {
    ASSERT_EQ(params[mode].size(), params[0].size());
    size_t bitwise = 0;
    for (size_t k = 0; k < params[0].size(); k++) {
      EXPECT_NEAR(params[mode][k], params[0][k], 1e-6 * (1 + std::fabs(params[0][k]))) << mode << " " << k;
      bitwise += params[mode][k] == params[0][k] ? 1 : 0;
    }
    std::printf("deferred mode %d: %zu of %zu parameters and norms bitwise equal to immediate mode's\n", mode, bitwise, params[0].size());
  }
}

// Writing through aliases: a variable with no value yet written in parts (a
// concatenation in place, strided views; zeros where no part is written), the
// same in immediate and deferred mode; an alias made of a value not yet
// computed, read; what the deferred mode refuses.
TEST(DynamicGraph, DeferredAliasWrites) {
  constexpr int R = 4, C = 6;
  std::vector<float> got[2], view_got[2];
  for (int deferred = 0; deferred < 2; deferred++) {
    ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
    const V a = ccv_nnc_tensor_variable_new(g, f32(R, 2)), b = ccv_nnc_tensor_variable_new(g, f32(R, 3));
    for (int k = 0; k < R * 2; k++) data(g, a)[k] = 0.1f * static_cast<float>(k) - 0.3f;
    for (int k = 0; k < R * 3; k++) data(g, b)[k] = 1.f - 0.15f * static_cast<float>(k);
    if (deferred) ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
    const V cat = ccv_nnc_tensor_variable_new(g, f32(R, C));
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {C, 1};
    const V left = ccv_nnc_tensor_variable_alias_new(g, cat, ofs, stride, f32(R, 2));
    ofs[1] = 2;
    const V right = ccv_nnc_tensor_variable_alias_new(g, cat, ofs, stride, f32(R, 3));  // column 5 is left unwritten
    ASSERT_NE(right, nullptr) << last_error();
    ccv_nnc_cmd_t half = plain(CCV_NNC_SCALAR_MUL_FORWARD);
    half.info.blas.a[0] = 0.5f;
    // Traced writes into part of a variable are refused, in both modes.
    EXPECT_NE(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {left}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_NE(last_error().find("writing into part of a variable is not traced"), std::string::npos) << last_error();
    ccv_nnc_dynamic_graph_set_no_grad(g, 1);
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {left}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(exec(g, half, {b}, {right}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_dynamic_graph_set_no_grad(g, 0);
    // An alias of cat made now (in the deferred mode, of a value not computed yet): column 2 read through it.
    int vofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 2}, vstride[CCV_NNC_MAX_DIM_ALLOC] = {C, 1};
    const V col = ccv_nnc_tensor_variable_alias_new(g, cat, vofs, vstride, f32(R, 1));
    ASSERT_NE(col, nullptr) << last_error();
    const V sq = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(exec(g, plain(CCV_NNC_EWPROD_FORWARD), {col, col}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    const ccv_nnc_tensor_t* ct = ccv_nnc_tensor_from_variable(g, cat);
    ASSERT_NE(ct, nullptr) << last_error();
    got[deferred].assign(ct->data.f32, ct->data.f32 + R * C);
    const ccv_nnc_tensor_t* qt = ccv_nnc_tensor_from_variable(g, sq);
    ASSERT_NE(qt, nullptr) << last_error();
    view_got[deferred].assign(qt->data.f32, qt->data.f32 + R);
    if (deferred) {
      // cat holds a value now: further writes through its aliases are refused in the deferred mode.
      ccv_nnc_dynamic_graph_set_no_grad(g, 1);
      EXPECT_NE(exec(g, half, {b}, {right}), CCV_NNC_EXEC_SUCCESS);
      EXPECT_NE(last_error().find("holds a value"), std::string::npos) << last_error();
      ccv_nnc_dynamic_graph_set_no_grad(g, 0);
      EXPECT_EQ(data(g, cat)[2], got[deferred][2]);  // and cat is as it was
    }
    ccv_nnc_dynamic_graph_free(g);
  }
  for (int r = 0; r < R; r++)
    for (int k = 0; k < C; k++) {
      const double expected = k < 2 ? std::exp(0.1 * (r * 2 + k) - 0.3) : k < 5 ? 0.5 * (1 - 0.15 * (r * 3 + k - 2)) : 0.0;
      EXPECT_NEAR(got[0][static_cast<size_t>(r * C + k)], expected, 1e-6 * (1 + std::fabs(expected))) << r << " " << k;
      EXPECT_EQ(got[1][static_cast<size_t>(r * C + k)], got[0][static_cast<size_t>(r * C + k)]) << r << " " << k;
    }
  for (int r = 0; r < R; r++) {
    const double v = 0.5 * (1 - 0.15 * (r * 3));
    EXPECT_NEAR(view_got[0][static_cast<size_t>(r)], v * v, 1e-6) << r;
    EXPECT_EQ(view_got[1][static_cast<size_t>(r)], view_got[0][static_cast<size_t>(r)]) << r;
  }
}

// Calls queued on a CPU stream: their tensors outlive the variables freed
// before the stream ran them.
TEST(DynamicGraph, StreamKeepsTensorsAlive) {
  constexpr int n = 1 << 16;
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  V a = ccv_nnc_tensor_variable_new(g, f32(n));
  for (int k = 0; k < n; k++) data(g, a)[k] = 1e-5f * static_cast<float>(k);
  const V b = ccv_nnc_tensor_variable_new(g), c = ccv_nnc_tensor_variable_new(g);
  std::vector<V> in{a}, mid{b};
  ASSERT_EQ(ccv_nnc_dynamic_graph_exec(g, plain(CCV_NNC_EWEXP_FORWARD), ccv_nnc_no_hint, 0, in.data(), 1, mid.data(), 1, 0, stream),
            CCV_NNC_EXEC_SUCCESS)
      << last_error();
  ccv_nnc_tensor_variable_free(g, a);  // before the stream has necessarily run
  std::vector<V> out{c};
  ASSERT_EQ(ccv_nnc_dynamic_graph_exec(g, plain(CCV_NNC_EWEXP_FORWARD), ccv_nnc_no_hint, 0, mid.data(), 1, out.data(), 1, 0, stream),
            CCV_NNC_EXEC_SUCCESS)
      << last_error();
  ccv_nnc_tensor_variable_free(g, b);
  ccv_nnc_stream_context_wait(stream);
  for (int k = 0; k < n; k += 101) {
    const double want = std::exp(std::exp(static_cast<double>(1e-5f * static_cast<float>(k))));
    EXPECT_NEAR(data(g, c)[k], want, 2e-6 * want) << k;
  }
  ccv_nnc_stream_context_free(stream);
  ccv_nnc_dynamic_graph_free(g);
}

// A small CNN (convolution with bias, RELU, max pool, a reshape alias, a
// dense layer, a sum of squares) run on the dynamic graph and compiled as a
// symbolic graph: the loss and the gradients agree.
ccv_nnc_tensor_param_t f32n(std::vector<int> d) {
  ccv_nnc_tensor_param_t p = f32(1);
  for (size_t i = 0; i < d.size(); i++) p.dim[i] = d[i];
  return p;
}

TEST(DynamicGraph, SmallCnnMatchesSymbolicPath) {
  constexpr int N = 2, H = 6, W = 6, C = 2, K = 4, O = 3;
  ccv_nnc_cmd_t conv = plain(CCV_NNC_CONVOLUTION_FORWARD);
  conv.info.size.dim[0] = conv.info.size.dim[1] = 3;
  conv.info.size.dim[2] = C;
  conv.info.convolution.count = K;
  conv.info.convolution.groups = 1;
  ccv_nnc_hint_t pad{};
  pad.stride.dim[0] = pad.stride.dim[1] = 1;
  pad.border.begin[0] = pad.border.begin[1] = pad.border.end[0] = pad.border.end[1] = 1;
  ccv_nnc_cmd_t pool = plain(CCV_NNC_MAX_POOL_FORWARD);
  pool.info.size.dim[0] = pool.info.size.dim[1] = 2;
  pool.info.size.dim[2] = K;
  ccv_nnc_hint_t pool_hint{};
  pool_hint.stride.dim[0] = pool_hint.stride.dim[1] = 2;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> X(N * H * W * C), KW(K * 3 * 3 * C), KB(K), DW(O * 36), DB(O);
  for (auto* v : {&X, &KW, &KB, &DW, &DB})
    for (float& f : *v) f = u(rng);
  // Dynamic, in immediate mode, then deferred (the forward and the backward one planned graph).
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, st[CCV_NNC_MAX_DIM_ALLOC] = {};
  std::vector<float> dyn_loss(2), dyn_grads[2][3];
  for (int deferred = 0; deferred < 2; deferred++) {
    ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
    const V x = ccv_nnc_tensor_constant_new(g, f32n({N, H, W, C}));
    const V kw = ccv_nnc_tensor_variable_new(g, f32n({K, 3, 3, C})), kb = ccv_nnc_tensor_variable_new(g, f32n({K}));
    const V dw = ccv_nnc_tensor_variable_new(g, f32n({O, 36})), db = ccv_nnc_tensor_variable_new(g, f32n({O}));
    std::memcpy(data(g, x), X.data(), X.size() * 4), std::memcpy(data(g, kw), KW.data(), KW.size() * 4);
    std::memcpy(data(g, kb), KB.data(), KB.size() * 4), std::memcpy(data(g, dw), DW.data(), DW.size() * 4);
    std::memcpy(data(g, db), DB.data(), DB.size() * 4);
    if (deferred) ASSERT_EQ(ccv_nnc_dynamic_graph_set_deferred(g, 1), 0);
    const V c1 = ccv_nnc_tensor_variable_new(g), r1 = ccv_nnc_tensor_variable_new(g), p1 = ccv_nnc_tensor_variable_new(g);
    auto dexec = [&](ccv_nnc_cmd_t cmd, ccv_nnc_hint_t hint, std::vector<V> in, std::vector<V> out) {
      return ccv_nnc_dynamic_graph_exec(g, cmd, hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), 0,
                                        nullptr);
    };
    ASSERT_EQ(dexec(conv, pad, {x, kw, kb}, {c1}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(dexec(plain(CCV_NNC_RELU_FORWARD), ccv_nnc_no_hint, {c1}, {r1}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(dexec(pool, pool_hint, {r1}, {p1}), CCV_NNC_EXEC_SUCCESS) << last_error();
    const V flat = ccv_nnc_tensor_variable_alias_new(g, p1, ofs, st, f32n({N, 36}));  // in the deferred mode, of a value not made yet
    ASSERT_NE(flat, nullptr) << last_error();
    const V y = ccv_nnc_tensor_variable_new(g), sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
    ASSERT_EQ(dexec(gemm_wt(), ccv_nnc_no_hint, {flat, dw, db}, {y}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(dexec(plain(CCV_NNC_EWPROD_FORWARD), ccv_nnc_no_hint, {y, y}, {sq}), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(dexec(reduce_all(), ccv_nnc_no_hint, {sq}, {loss}), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (V v : {c1, r1, sq}) ccv_nnc_tensor_variable_free(g, v);
    const V gkw = ccv_nnc_tensor_variable_new(g), gkb = ccv_nnc_tensor_variable_new(g), gdw = ccv_nnc_tensor_variable_new(g);
    ccv_nnc_dynamic_graph_backward(g, VL(loss), nullptr, VL(kw, kb, dw), VL(gkw, gkb, gdw), nullptr);
    ASSERT_STREQ(last_error().c_str(), "");
    dyn_loss[static_cast<size_t>(deferred)] = data(g, loss)[0];
    const V dyn[3] = {gkw, gkb, gdw};
    for (int i = 0; i < 3; i++) {
      const ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_variable(g, dyn[i]);
      ASSERT_NE(t, nullptr) << last_error();
      dyn_grads[deferred][i].assign(t->data.f32, t->data.f32 + ccv_nnc_tensor_count(t->info));
    }
    // The alias reads the pooled value the run made.
    const ccv_nnc_tensor_t* ft = ccv_nnc_tensor_from_variable(g, flat);
    ASSERT_NE(ft, nullptr) << last_error();
    const ccv_nnc_tensor_t* pt = ccv_nnc_tensor_from_variable(g, p1);
    EXPECT_EQ(ft->data.f32, pt->data.f32);
    ccv_nnc_dynamic_graph_free(g);
  }
  // Symbolic.
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  using TS = ccv_nnc_tensor_symbol_t;
  auto sym = [&](ccv_nnc_tensor_param_t p) { return ccv_nnc_tensor_symbol_new(sg, p, nullptr); };
  const TS sx = sym(f32n({N, H, W, C})), skw = sym(f32n({K, 3, 3, C})), skb = sym(f32n({K})), sdw = sym(f32n({O, 36})), sdb = sym(f32n({O}));
  const TS sc = sym(f32n({N, H, W, K})), sr = sym(kAuto), sp = sym(f32n({N, 3, 3, K})), sy = sym(kAuto), ssq = sym(kAuto), sl = sym(kAuto);
  const TS sflat = ccv_nnc_tensor_symbol_alias_new(sg, sp, ofs, st, f32n({N, 36}), nullptr);
  auto sexec = [&](ccv_nnc_cmd_t cmd, ccv_nnc_hint_t hint, std::vector<TS> in, std::vector<TS> out) {
    const ccv_nnc_graph_exec_symbol_t e =
        ccv_nnc_graph_exec_symbol_new(sg, cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr);
    ccv_nnc_graph_exec_symbol_set_hint(sg, e, hint);
  };
  sexec(conv, pad, {sx, skw, skb}, {sc});
  sexec(plain(CCV_NNC_RELU_FORWARD), ccv_nnc_no_hint, {sc}, {sr});
  sexec(pool, pool_hint, {sr}, {sp});
  sexec(gemm_wt(), ccv_nnc_no_hint, {sflat, sdw, sdb}, {sy});
  sexec(plain(CCV_NNC_EWPROD_FORWARD), ccv_nnc_no_hint, {sy, sy}, {ssq});
  sexec(reduce_all(), ccv_nnc_no_hint, {ssq}, {sl});
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const std::vector<TS> wrt{skw, skb, sdw};
  ccv_nnc_symbolic_graph_backward(sg, &sl, 1, wrt.data(), 3, ccv_nnc_symbolic_graph_sources(sg), ccv_nnc_symbolic_graph_source_size(sg),
                                  ccv_nnc_symbolic_graph_destinations(sg), ccv_nnc_symbolic_graph_destination_size(sg));
  ASSERT_STREQ(last_error().c_str(), "");
  std::vector<TS> grads;
  for (const TS& w : wrt) grads.push_back(ccv_nnc_tensor_symbol_for_backward(sg, w));
  grads.push_back(sl);
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_graph_t* cg = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, grads.data(), static_cast<int>(grads.size()), nullptr, 0,
                                 nullptr, 0, &cg, &ta, &ea);
  ASSERT_NE(cg, nullptr) << last_error();
  std::memcpy(ccv_nnc_tensor_from_symbol(ta, sx)->data.f32, X.data(), X.size() * 4);
  std::memcpy(ccv_nnc_tensor_from_symbol(ta, skw)->data.f32, KW.data(), KW.size() * 4);
  std::memcpy(ccv_nnc_tensor_from_symbol(ta, skb)->data.f32, KB.data(), KB.size() * 4);
  std::memcpy(ccv_nnc_tensor_from_symbol(ta, sdw)->data.f32, DW.data(), DW.size() * 4);
  std::memcpy(ccv_nnc_tensor_from_symbol(ta, sdb)->data.f32, DB.data(), DB.size() * 4);
  ASSERT_EQ(ccv_nnc_graph_run(cg, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  const int counts[3] = {K * 9 * C, K, O * 36};
  for (int deferred = 0; deferred < 2; deferred++) {
    const float sym_loss = ccv_nnc_tensor_from_symbol(ta, sl)->data.f32[0];
    EXPECT_NEAR(dyn_loss[static_cast<size_t>(deferred)], sym_loss, 1e-5 * (1 + std::fabs(sym_loss))) << deferred;
    for (int i = 0; i < 3; i++) {
      const std::vector<float>& a = dyn_grads[deferred][i];
      ASSERT_EQ(a.size(), static_cast<size_t>(counts[i]));
      const float* b = ccv_nnc_tensor_from_symbol(ta, grads[static_cast<size_t>(i)])->data.f32;
      double largest = 1;
      for (int k = 0; k < counts[i]; k++) largest = std::max(largest, std::fabs(static_cast<double>(b[k])));
      for (int k = 0; k < counts[i]; k++) EXPECT_NEAR(a[static_cast<size_t>(k)], b[k], 1e-5 * largest) << deferred << " " << i << " " << k;
    }
  }
  ccv_nnc_graph_free(cg);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  ccv_nnc_symbolic_graph_free(sg);
}

int destroyed = 0;
void count_destroyed(ccv_nnc_dynamic_graph_t*, const ccv_nnc_tensor_t* t, void* context) {
  destroyed += t ? *static_cast<int*>(context) : 0;
}

TEST(DynamicGraph, MistakesAreReported) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  ccv_nnc_dynamic_graph_t* other = ccv_nnc_dynamic_graph_new();
  const V a = ccv_nnc_tensor_variable_new(g, f32(2));
  data(g, a)[0] = 1, data(g, a)[1] = 2;
  const V foreign = ccv_nnc_tensor_variable_new(other, f32(2));
  const V b = ccv_nnc_tensor_variable_new(g);
  EXPECT_NE(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {foreign}, {b}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(last_error().find("another dynamic graph"), std::string::npos) << last_error();
  const V empty = ccv_nnc_tensor_variable_new(g);
  EXPECT_NE(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {empty}, {b}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(last_error().find("has no value yet"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_from_variable(g, empty), nullptr);
  EXPECT_NE(last_error().find("no shape"), std::string::npos) << last_error();
  const V k = ccv_nnc_tensor_constant_new(g, f32(2));
  EXPECT_NE(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {k}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(last_error().find("constant"), std::string::npos) << last_error();
  const V wrong = ccv_nnc_tensor_variable_new(g, f32(3));
  EXPECT_NE(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {wrong}), CCV_NNC_EXEC_SUCCESS);
  // Backward without a path, and of a freed variable.
  ASSERT_EQ(exec(g, plain(CCV_NNC_EWEXP_FORWARD), {a}, {b}), CCV_NNC_EXEC_SUCCESS) << last_error();
  const V lone = ccv_nnc_tensor_variable_new(g, f32(2));
  data(g, lone)[0] = 0;
  const V d = ccv_nnc_tensor_variable_new(g);
  ccv_nnc_dynamic_graph_backward(g, VL(b), nullptr, VL(lone), VL(d), nullptr);
  EXPECT_NE(last_error().find("no path"), std::string::npos) << last_error();
  int weight = 7;
  destroyed = 0;
  ccv_nnc_tensor_variable_destructor_hook(g, b, count_destroyed, &weight);
  ccv_nnc_tensor_variable_free(g, b);
  EXPECT_EQ(destroyed, 7);
  ccv_nnc_dynamic_graph_backward(g, VL(b), nullptr, VL(a), VL(d), nullptr);
  EXPECT_NE(last_error().find("was freed"), std::string::npos) << last_error();
  ccv_nnc_tensor_variable_free(g, b);
  EXPECT_NE(last_error().find("was freed"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_variable_alias_new(g, a, nullptr, nullptr, f32(5)), nullptr);
  EXPECT_NE(last_error().find("outside"), std::string::npos) << last_error();
  ccv_nnc_dynamic_graph_set_max_concurrency(g, 0);
  EXPECT_NE(last_error(), "");
  ccv_nnc_dynamic_graph_free(other);
  ccv_nnc_dynamic_graph_free(g);
}

}  // namespace
