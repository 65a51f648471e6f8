// Second order (beyond libnnc): ccv_nnc_symbolic_graph_backward on a graph
// that already holds a backward pass differentiates the backward commands.
// Each check takes the gradient of s = sum_i <d_i, V_i> (d_i the first
// gradient, V_i a random direction) with respect to the same inputs, which
// is the Hessian-vector product H V, and compares it in fp64 with the
// central difference (d(x + h V) - d(x - h V)) / 2h of the first gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autodiff_test_util.hpp"

namespace {

using adtest::apply;
using adtest::at;
using adtest::Build;
using adtest::count;
using adtest::Input;
using adtest::param;
using adtest::Program;
using adtest::sym;

ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0) {
  ccv_nnc_cmd_t c = adtest::cmd(id);
  c.info.blas.a[0] = p;
  c.info.blas.a[1] = q;
  return c;
}

ccv_nnc_cmd_t gemm(bool ta, bool tb) {
  ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = c.info.blas.a[1] = 1;
  if (ta) c.info.blas.transpose_a[0] = 0, c.info.blas.transpose_a[1] = 1;
  if (tb) c.info.blas.transpose_b[0] = 0, c.info.blas.transpose_b[1] = 1;
  return c;
}

ccv_nnc_cmd_t reduce(uint32_t id, std::vector<int> axes) {
  ccv_nnc_cmd_t c = adtest::cmd(id);
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  c.info.reduce.count = static_cast<int>(axes.size());
  return c;
}

int ndim(ccv_nnc_symbolic_graph_t* g, ccv_nnc_tensor_symbol_t s) {
  const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(g, s);
  int n = 0;
  while (n < CCV_NNC_MAX_DIM_ALLOC && p.dim[n]) n++;
  return n;
}

// The sum of every element, as a 1-element 1-d symbol.
ccv_nnc_tensor_symbol_t total(ccv_nnc_symbolic_graph_t* g, ccv_nnc_tensor_symbol_t x) {
  std::vector<int> axes;
  for (int i = 0; i < ndim(g, x); i++) axes.push_back(i);
  const ccv_nnc_tensor_symbol_t r = apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, axes), {x});
  if (axes.size() == 1) return r;
  int zeros[CCV_NNC_MAX_DIM_ALLOC] = {};
  return ccv_nnc_tensor_symbol_alias_new(g, r, zeros, zeros, param({1}), nullptr);
}

void backward(ccv_nnc_symbolic_graph_t* g, ccv_nnc_tensor_symbol_t f, const std::vector<ccv_nnc_tensor_symbol_t>& wrt) {
  ccv_nnc_symbolic_graph_backward(g, &f, 1, wrt.data(), static_cast<int>(wrt.size()), ccv_nnc_symbolic_graph_sources(g),
                                  ccv_nnc_symbolic_graph_source_size(g), ccv_nnc_symbolic_graph_destinations(g),
                                  ccv_nnc_symbolic_graph_destination_size(g));
}

// f = build(inputs) when that is one element, else sum(y * y * R) for a
// random R (so the gradient reaching the command's backward depends on x).
void check_hvp(const std::vector<Input>& inputs, const Build& build, unsigned seed, const char* what, double tol = 1e-6,
               double h = 1e-5) {
  SCOPED_TRACE(std::string("Hessian-vector check ") + what + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  Program p;
  std::vector<ccv_nnc_tensor_symbol_t> xs, wrt;
  for (size_t i = 0; i < inputs.size(); i++) xs.push_back(sym(p.sg, inputs[i].dims, ("x" + std::to_string(i)).c_str()));
  const ccv_nnc_tensor_symbol_t y = build(p.sg, xs);
  ASSERT_GE(y.d, 0) << ccv_nnc_error_message();
  const ccv_nnc_tensor_param_t yp = ccv_nnc_tensor_symbol_params(p.sg, y);
  ccv_nnc_tensor_symbol_t f = y, rs = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
  if (count(yp) > 1) {
    rs = ccv_nnc_tensor_symbol_new(p.sg, yp, "R");
    f = total(p.sg, apply(p.sg, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {y, y, rs}));
  }
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].wrt) wrt.push_back(xs[i]);
  backward(p.sg, f, wrt);
  ASSERT_STREQ(ccv_nnc_error_message(), "") << "first backward";
  std::vector<ccv_nnc_tensor_symbol_t> d, vs, terms;
  for (const auto& w : wrt) {
    d.push_back(ccv_nnc_tensor_symbol_for_backward(p.sg, w));
    ASSERT_GE(d.back().d, 0) << ccv_nnc_error_message();
    vs.push_back(ccv_nnc_tensor_symbol_new(p.sg, ccv_nnc_tensor_symbol_params(p.sg, w), "V"));
    terms.push_back(total(p.sg, apply(p.sg, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {d.back(), vs.back()})));
  }
  const ccv_nnc_tensor_symbol_t s = terms.size() == 1 ? terms[0] : apply(p.sg, adtest::cmd(CCV_NNC_EWSUM_FORWARD), terms);
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  backward(p.sg, s, wrt);
  ASSERT_STREQ(ccv_nnc_error_message(), "") << "second backward";
  std::vector<ccv_nnc_tensor_symbol_t> hv;
  for (const auto& w : wrt) {
    hv.push_back(ccv_nnc_tensor_symbol_for_backward(p.sg, w));
    ASSERT_GE(hv.back().d, 0) << ccv_nnc_error_message();
  }
  std::vector<ccv_nnc_tensor_bind_t> binds;
  std::vector<ccv_nnc_tensor_t*> xt, vt;
  for (size_t i = 0; i < inputs.size(); i++) {
    ccv_nnc_tensor_t* t = p.tensor(param(inputs[i].dims));
    std::uniform_real_distribution<double> u(inputs[i].lo, inputs[i].hi);
    for (size_t k = 0; k < count(t->info); k++) {
      double v = u(rng);
      if (inputs[i].away > 0 && std::fabs(v) < inputs[i].away) v = v < 0 ? v - inputs[i].away : v + inputs[i].away;
      t->data.f64[k] = v;
    }
    xt.push_back(t);
    binds.push_back({xs[i], t});
  }
  if (rs.d >= 0) {
    ccv_nnc_tensor_t* t = p.tensor(yp);
    for (size_t k = 0; k < count(yp); k++) t->data.f64[k] = unit(rng);
    binds.push_back({rs, t});
  }
  for (const auto& v : vs) {
    ccv_nnc_tensor_t* t = p.tensor(ccv_nnc_tensor_symbol_params(p.sg, v));
    for (size_t k = 0; k < count(t->info); k++) t->data.f64[k] = unit(rng);
    vt.push_back(t);
    binds.push_back({v, t});
  }
  std::vector<ccv_nnc_tensor_symbol_t> outputs = d;
  outputs.insert(outputs.end(), hv.begin(), hv.end());
  ASSERT_TRUE(p.compile(binds, outputs)) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  auto read = [&](const std::vector<ccv_nnc_tensor_symbol_t>& list) {
    std::vector<std::vector<double>> r;
    for (const auto& s : list) {
      ccv_nnc_tensor_t* t = p.of(s);
      std::vector<double> v(t ? count(t->info) : 0);
      for (size_t k = 0; k < v.size(); k++) v[k] = at(t, k);
      r.push_back(v);
    }
    return r;
  };
  const auto analytic = read(hv);
  // Move every wrt input along its V at once.
  auto shift = [&](double by) {
    for (size_t i = 0, w = 0; i < inputs.size(); i++) {
      if (!inputs[i].wrt) continue;
      for (size_t k = 0; k < count(xt[i]->info); k++) xt[i]->data.f64[k] += by * vt[w]->data.f64[k];
      w++;
    }
  };
  shift(h);
  EXPECT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const auto plus = read(d);
  shift(-2 * h);
  EXPECT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const auto minus = read(d);
  shift(h);
  double largest = 0;
  for (size_t w = 0; w < wrt.size(); w++) {
    ASSERT_EQ(analytic[w].size(), plus[w].size());
    for (size_t k = 0; k < analytic[w].size(); k++) {
      const double numeric = (plus[w][k] - minus[w][k]) / (2 * h);
      largest = std::max(largest, std::fabs(numeric));
      EXPECT_NEAR(analytic[w][k], numeric, tol * std::max(1.0, std::fabs(numeric))) << "wrt " << w << " element " << k;
    }
  }
  EXPECT_GT(largest, 1e-3) << "the check saw no curvature";
}

ccv_nnc_tensor_symbol_t un(ccv_nnc_symbolic_graph_t* g, uint32_t id, ccv_nnc_tensor_symbol_t x) { return apply(g, adtest::cmd(id), {x}); }

// f(x) = sum tanh(W x)^2, x a vector.
ccv_nnc_tensor_symbol_t tanh_square(ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
  const ccv_nnc_tensor_symbol_t t = un(g, CCV_NNC_TANH_FORWARD, apply(g, gemm(false, true), {v[0], v[1]}));
  return total(g, apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {t, t}));
}

TEST(AutodiffSecondOrder, TanhSquareHessianVectorInX) {
  std::vector<Input> in{{{5}}, {{4, 5}}};
  in[1].wrt = false;
  for (unsigned seed : {1u, 2u, 3u}) check_hvp(in, tanh_square, seed, "sum tanh(Wx)^2 in x");
}

TEST(AutodiffSecondOrder, TanhSquareHessianVectorInXAndW) {
  check_hvp({{{5}}, {{4, 5}}}, tanh_square, 4, "sum tanh(Wx)^2 in x and W");
}

// A 2-layer MLP's squared-error loss: sum (W2 act(W1 x + b1) + b2 - T)^2.
Build mlp(uint32_t act) {
  return [act](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
    const ccv_nnc_tensor_symbol_t h = un(g, act, apply(g, gemm(false, true), {v[0], v[1], v[2]}));
    const ccv_nnc_tensor_symbol_t o = apply(g, gemm(false, true), {h, v[3], v[4]});
    const ccv_nnc_tensor_symbol_t e = apply(g, blas(CCV_NNC_ADD_FORWARD, 1, -1), {o, v[5]});
    return total(g, apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {e, e}));
  };
}

TEST(AutodiffSecondOrder, MlpLossHessianVector) {
  std::vector<Input> in{{{3, 4}}, {{5, 4}}, {{5}}, {{2, 5}}, {{2}}, {{3, 2}}};
  in[5].wrt = false;
  check_hvp(in, mlp(CCV_NNC_TANH_FORWARD), 11, "tanh MLP, every parameter and x");
  check_hvp(in, mlp(CCV_NNC_SIGMOID_FORWARD), 12, "sigmoid MLP");
  in[0].wrt = false;
  check_hvp(in, mlp(CCV_NNC_TANH_FORWARD), 13, "tanh MLP, parameters only");
  std::vector<Input> relu = in;
  relu[0].away = 0.2;
  check_hvp(relu, mlp(CCV_NNC_RELU_FORWARD), 14, "relu MLP, parameters only");
}

// Each family: the second derivative of sum(op(x)^2 R).
TEST(AutodiffSecondOrder, Gemm) {
  check_hvp({{{3, 4}}, {{5, 4}}, {{5}}}, [](auto g, auto v) { return apply(g, gemm(false, true), {v[0], v[1], v[2]}); }, 21,
            "GEMM a w^T + bias");
  check_hvp({{{4, 3}}, {{4, 5}}}, [](auto g, auto v) { return apply(g, gemm(true, false), {v[0], v[1]}); }, 22, "GEMM a^T w");
  check_hvp({{{2, 3, 4}}, {{2, 4, 2}}, {{2, 1, 2}}},
            [](auto g, auto v) { return apply(g, gemm(false, false), {v[0], v[1], v[2]}); }, 23, "batched GEMM");
}

TEST(AutodiffSecondOrder, AddMulScalarMul) {
  check_hvp({{{3, 4}}, {{4}}}, [](auto g, auto v) { return apply(g, blas(CCV_NNC_ADD_FORWARD, 0.7f, -1.3f), {v[0], v[1]}); }, 31,
            "ADD broadcast");
  check_hvp({{{3, 4}}, {{3, 1}}}, [](auto g, auto v) { return apply(g, blas(CCV_NNC_MUL_FORWARD, 1.5f), {v[0], v[1]}); }, 32,
            "MUL broadcast");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return apply(g, blas(CCV_NNC_SCALAR_MUL_FORWARD, -2.5f), {v[0]}); }, 33,
            "SCALAR_MUL");
}

TEST(AutodiffSecondOrder, ElementWise) {
  check_hvp({{{3, 4}}, {{3, 4}}, {{3, 4}}},
            [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_EWSUM_FORWARD), {v[0], v[1], v[2]}); }, 41, "EWSUM");
  check_hvp({{{3, 4}}, {{3, 4}}}, [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {v[0], v[1]}); }, 42,
            "EWPROD of 2");
  check_hvp({{{3, 4}}, {{3, 4}}, {{3, 4}}},
            [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {v[0], v[1], v[2]}); }, 43, "EWPROD of 3");
  std::vector<Input> div{{{3, 4}}, {{3, 4}}};
  div[1].lo = 0.5, div[1].hi = 2;
  check_hvp(div, [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_EWDIV_FORWARD), {v[0], v[1]}); }, 44, "EWDIV");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return un(g, CCV_NNC_EWEXP_FORWARD, v[0]); }, 45, "EWEXP");
  std::vector<Input> pos{{{3, 4}}};
  pos[0].lo = 0.5, pos[0].hi = 2;
  check_hvp(pos, [](auto g, auto v) { return un(g, CCV_NNC_EWLOG_FORWARD, v[0]); }, 46, "EWLOG");
  // sqrt(x)^2 is linear: the fourth root squared curves.
  check_hvp(pos, [](auto g, auto v) { return un(g, CCV_NNC_EWSQRT_FORWARD, un(g, CCV_NNC_EWSQRT_FORWARD, v[0])); }, 47,
            "EWSQRT");
}

TEST(AutodiffSecondOrder, Activations) {
  std::vector<Input> kinked{{{3, 4}}};
  kinked[0].away = 0.2;
  check_hvp(kinked, [](auto g, auto v) { return un(g, CCV_NNC_RELU_FORWARD, v[0]); }, 51, "RELU");
  check_hvp(kinked,
            [](auto g, auto v) {
              ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_LEAKY_RELU_FORWARD);
              c.info.leaky_relu.negative_slope = 0.3f;
              return apply(g, c, {v[0]});
            },
            55, "LEAKY_RELU");
  std::vector<Input> wide{{{3, 4}}};
  wide[0].lo = -2, wide[0].hi = 2;
  check_hvp(wide,
            [](auto g, auto v) {
              ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_CLAMP_FORWARD);
              c.info.clamp.min = -1, c.info.clamp.max = 1;
              return apply(g, c, {v[0]});
            },
            56, "CLAMP");
  // Random a and b: a tie (or a step of h crossing one) is all but impossible.
  check_hvp({{{3, 4}}, {{3, 4}}}, [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_MAX_FORWARD), {v[0], v[1]}); }, 57,
            "MAX");
  check_hvp({{{3, 4}}, {{3, 4}}}, [](auto g, auto v) { return apply(g, adtest::cmd(CCV_NNC_MIN_FORWARD), {v[0], v[1]}); }, 58,
            "MIN");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return un(g, CCV_NNC_SIGMOID_FORWARD, v[0]); }, 52, "SIGMOID");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return un(g, CCV_NNC_TANH_FORWARD, v[0]); }, 53, "TANH");
  check_hvp({{{3, 5}}}, [](auto g, auto v) { return un(g, CCV_NNC_SOFTMAX_FORWARD, v[0]); }, 54, "SOFTMAX");
}

// GELU (exact and tanh forms), SWISH: f'' written with forward commands.
TEST(AutodiffSecondOrder, GeluSwish) {
  std::vector<Input> wide{{{3, 5}}};
  wide[0].lo = -2.5, wide[0].hi = 2.5;
  for (int tanh_form = 0; tanh_form < 2; tanh_form++)
    check_hvp(wide,
              [tanh_form](auto g, auto v) {
                ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_GELU_FORWARD);
                c.info.gelu.tanh = tanh_form;
                return apply(g, c, {v[0]});
              },
              71 + tanh_form, tanh_form ? "GELU, tanh form" : "GELU");
  check_hvp(wide, [](auto g, auto v) { return un(g, CCV_NNC_SWISH_FORWARD, v[0]); }, 73, "SWISH");
  // Inside a larger graph: x W^T through GELU and SWISH, every input.
  check_hvp({{{2, 3}}, {{4, 3}}},
            [](auto g, auto v) {
              ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_GELU_FORWARD);
              c.info.gelu.tanh = 1;
              return un(g, CCV_NNC_SWISH_FORWARD, apply(g, c, {apply(g, gemm(false, true), {v[0], v[1]})}));
            },
            74, "SWISH(GELU(x W^T))");
}

// SOFTMAX_CROSSENTROPY: class-index labels and dense labels, with and without
// label smoothing; with dense labels its softmax output is also read by the
// rest of the graph (a gradient arrives through both outputs, so the
// backward reads g and g_softmax).
ccv_nnc_cmd_t crossentropy(float trim0, float trim1) {
  ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  c.info.label_smoothing.trim0 = trim0;
  c.info.label_smoothing.trim1 = trim1;
  return c;
}

TEST(AutodiffSecondOrder, SoftmaxCrossentropy) {
  for (int smooth = 0; smooth < 2; smooth++) {
    const float t0 = smooth ? 0.05f : 0, t1 = smooth ? 0.8f : 1;
    // Index labels (a constant the test makes; not a wrt).
    check_hvp({{{3, 4}}},
              [t0, t1](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
                const ccv_nnc_tensor_symbol_t label = sym(g, {3, 1}, "label");
                ccv_nnc_tensor_symbol_set_flags(g, label, CCV_NNC_TENSOR_SYMBOL_INIT_ONES);  // class 1 for every row
                const ccv_nnc_tensor_symbol_t loss = sym(g, {3, 1}, "loss");
                adtest::exec(g, crossentropy(t0, t1), {v[0], label}, {loss, sym(g, {3, 4}, "softmax")});
                return loss;  // f = sum(loss^2 R): the loss's gradient g depends on x
              },
              91 + smooth, smooth ? "index labels, smoothed" : "index labels");
    // 1-d index labels: the loss (and g) 1-d too, the per-row terms [3, 1].
    check_hvp({{{3, 4}}},
              [t0, t1](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
                const ccv_nnc_tensor_symbol_t label = sym(g, {3}, "label");
                ccv_nnc_tensor_symbol_set_flags(g, label, CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
                const ccv_nnc_tensor_symbol_t loss = sym(g, {3}, "loss");
                adtest::exec(g, crossentropy(t0, t1), {v[0], label}, {loss, sym(g, {3, 4}, "softmax")});
                return loss;
              },
              95 + smooth, smooth ? "1-d index labels, smoothed" : "1-d index labels");
    // Dense labels (not a wrt: the command gives no labels gradient); the
    // softmax output read on.
    std::vector<Input> dense{{{3, 4}}, {{3, 4}}};
    dense[1].wrt = false;
    dense[1].lo = 0;
    check_hvp(dense,
              [t0, t1](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
                const ccv_nnc_tensor_symbol_t loss = sym(g, {3, 1}, "loss"), sm = sym(g, {3, 4}, "softmax");
                adtest::exec(g, crossentropy(t0, t1), {v[0], v[1]}, {loss, sm});
                const ccv_nnc_tensor_symbol_t sq = apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {sm, sm, v[1]});
                return apply(g, adtest::cmd(CCV_NNC_EWSUM_FORWARD), {total(g, loss), total(g, sq)});
              },
              93 + smooth, smooth ? "dense labels, smoothed, softmax read on" : "dense labels, softmax read on");
  }
}

TEST(AutodiffSecondOrder, ReduceTransposeTransfer) {
  // The square after a linear command is what curves; its backward is still
  // differentiated in g.
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {1}), {v[0]}); }, 61,
            "REDUCE_SUM");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return apply(g, reduce(CCV_NNC_REDUCE_MEAN_FORWARD, {0}), {v[0]}); }, 62,
            "REDUCE_MEAN");
  check_hvp({{{3, 4}}},
            [](auto g, auto v) {
              ccv_nnc_cmd_t c = adtest::cmd(CCV_NNC_TRANSPOSE_FORWARD);
              c.info.transpose.axis[0] = 0, c.info.transpose.axis[1] = 1;
              return apply(g, c, {v[0]});
            },
            63, "TRANSPOSE");
  check_hvp({{{3, 4}}}, [](auto g, auto v) { return un(g, CCV_NNC_DATA_TRANSFER_FORWARD, v[0]); }, 64, "DATA_TRANSFER");
}

// The first gradient assembled from overlapping and disjoint column views of
// x (zero-initialised bases, gradients placed into views, EWSUM of layers):
// the second pass goes back through that assembly.
TEST(AutodiffSecondOrder, ThroughViewsOfTheInput) {
  check_hvp({{{3, 4}}},
            [](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
              auto cols = [&](int c0, int c) {
                int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, c0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {4, 1};
                return ccv_nnc_tensor_symbol_alias_new(g, v[0], ofs, stride, param({3, c}), nullptr);
              };
              const ccv_nnc_tensor_symbol_t a = un(g, CCV_NNC_TANH_FORWARD, cols(0, 2));
              const ccv_nnc_tensor_symbol_t b = un(g, CCV_NNC_SIGMOID_FORWARD, cols(1, 2));
              const ccv_nnc_tensor_symbol_t c = un(g, CCV_NNC_EWEXP_FORWARD, cols(2, 2));
              return apply(g, adtest::cmd(CCV_NNC_EWPROD_FORWARD),
                           {apply(g, adtest::cmd(CCV_NNC_EWSUM_FORWARD), {a, b}), c});
            },
            81, "overlapping views");
}

// The second backward of a backward with no rule is refused by name, and the
// graph keeps the first pass (it still compiles and gives the first gradient).
TEST(AutodiffSecondOrder, BackwardWithoutRuleRefused) {
  Program p;
  const ccv_nnc_tensor_symbol_t x = sym(p.sg, {3, 4}, "x");
  const ccv_nnc_tensor_symbol_t y = apply(p.sg, reduce(CCV_NNC_REDUCE_MAX_FORWARD, {1}), {x});
  const ccv_nnc_tensor_symbol_t f = total(p.sg, apply(p.sg, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {y, y}));
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  backward(p.sg, f, {x});
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  const ccv_nnc_tensor_symbol_t dx = ccv_nnc_tensor_symbol_for_backward(p.sg, x);
  ASSERT_GE(dx.d, 0);
  const ccv_nnc_tensor_symbol_t s = total(p.sg, apply(p.sg, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {dx, dx}));
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const int tensors = ccv_nnc_tensor_symbol_count(p.sg), execs = ccv_nnc_graph_exec_symbol_count(p.sg);
  backward(p.sg, s, {x});
  const std::string message = ccv_nnc_error_message();
  EXPECT_NE(message.find("REDUCE_MAX_BACKWARD"), std::string::npos) << message;
  EXPECT_NE(message.find("second-order"), std::string::npos) << message;
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(p.sg, x).d, CCV_NNC_NO_TENSOR_SYMBOL);
  EXPECT_EQ(ccv_nnc_tensor_symbol_count(p.sg), tensors);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), execs);
  ccv_nnc_tensor_t* xt = p.tensor(param({3, 4}));
  for (int k = 0; k < 12; k++) xt->data.f64[k] = (k - 6) * 0.1;
  ASSERT_TRUE(p.compile({{x, xt}}, {dx, s})) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int k = 0; k < 12; k++)  // each row's largest is its last column: 2 max there, 0 elsewhere
    EXPECT_NEAR(at(p.of(dx), k), k % 4 == 3 ? 2 * (k - 6) * 0.1 : 0.0, 1e-12) << k;
}

// What the new rules refuse, by name, leaving the graph as it was: GELU's
// backward given its optional y with a gradient wanted for y, and the
// crossentropy's backward with respect to dense labels.
TEST(AutodiffSecondOrder, GeluWithYAndDenseLabelsRefused) {
  for (int which = 0; which < 2; which++) {
    Program p;
    const ccv_nnc_tensor_symbol_t x = sym(p.sg, {3, 4}, "x"), v = sym(p.sg, {3, 4}, "v");
    ccv_nnc_tensor_symbol_t dx;
    if (which == 0) {  // dx = GELU_BACKWARD(1, x, gelu(x)), built by hand
      const ccv_nnc_tensor_symbol_t y = un(p.sg, CCV_NNC_GELU_FORWARD, x);
      dx = sym(p.sg, {3, 4}, "dx");
      adtest::exec(p.sg, adtest::cmd(CCV_NNC_GELU_BACKWARD), {v, x, y}, {dx});
    } else {  // the first backward of a crossentropy with dense labels v, in x only
      const ccv_nnc_tensor_symbol_t loss = sym(p.sg, {3, 1}, "loss");
      adtest::exec(p.sg, adtest::cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD), {x, v}, {loss, sym(p.sg, {3, 4}, "softmax")});
      const ccv_nnc_tensor_symbol_t f = total(p.sg, loss);
      ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
      backward(p.sg, f, {x});
      ASSERT_STREQ(ccv_nnc_error_message(), "");
      dx = ccv_nnc_tensor_symbol_for_backward(p.sg, x);
    }
    const ccv_nnc_tensor_symbol_t s = total(p.sg, apply(p.sg, adtest::cmd(CCV_NNC_EWPROD_FORWARD), {dx, dx}));
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const int tensors = ccv_nnc_tensor_symbol_count(p.sg), execs = ccv_nnc_graph_exec_symbol_count(p.sg);
    backward(p.sg, s, which == 0 ? std::vector<ccv_nnc_tensor_symbol_t>{x} : std::vector<ccv_nnc_tensor_symbol_t>{x, v});
    const std::string message = ccv_nnc_error_message();
    EXPECT_NE(message.find(which == 0 ? "GELU_BACKWARD" : "SOFTMAX_CROSSENTROPY_BACKWARD"), std::string::npos) << message;
    EXPECT_NE(message.find(which == 0 ? "optional forward output y" : "dense labels"), std::string::npos) << message;
    EXPECT_EQ(ccv_nnc_tensor_symbol_count(p.sg), tensors);
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), execs);
  }
}

// A backward-of-backward that is itself differentiated (third order): the
// second gradient's rules are forward and backward commands again.
TEST(AutodiffSecondOrder, ThirdOrderTanh) {
  Program p;
  const ccv_nnc_tensor_symbol_t x = sym(p.sg, {4}, "x");
  const ccv_nnc_tensor_symbol_t f = total(p.sg, un(p.sg, CCV_NNC_TANH_FORWARD, x));
  std::vector<ccv_nnc_tensor_symbol_t> d{f};
  for (int order = 1; order <= 3; order++) {
    const ccv_nnc_tensor_symbol_t s = order == 1 ? f : total(p.sg, d.back());
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    backward(p.sg, s, {x});
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "order " << order;
    d.push_back(ccv_nnc_tensor_symbol_for_backward(p.sg, x));
    ASSERT_GE(d.back().d, 0);
  }
  ccv_nnc_tensor_t* xt = p.tensor(param({4}));
  const double xs[] = {-1.2, -0.3, 0.4, 0.9};
  for (int k = 0; k < 4; k++) xt->data.f64[k] = xs[k];
  ASSERT_TRUE(p.compile({{x, xt}}, {d[1], d[2], d[3]})) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int k = 0; k < 4; k++) {
    const double t = std::tanh(xs[k]), s = 1 - t * t;
    EXPECT_NEAR(at(p.of(d[1]), k), s, 1e-12);
    EXPECT_NEAR(at(p.of(d[2]), k), -2 * t * s, 1e-12);
    EXPECT_NEAR(at(p.of(d[3]), k), -2 * s * s + 4 * t * t * s, 1e-12);
  }
}

}  // namespace
