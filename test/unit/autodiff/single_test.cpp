// Gradients of one command (or a short chain) through
// ccv_nnc_symbolic_graph_backward, against central finite differences in fp64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

using Syms = std::vector<ccv_nnc_tensor_symbol_t>;

ccv_nnc_cmd_t blas(uint32_t id, float a0, float a1 = 0) {
  ccv_nnc_cmd_t c = cmd(id);
  c.info.blas.a[0] = a0;
  c.info.blas.a[1] = a1;
  return c;
}

ccv_nnc_cmd_t reduce(uint32_t id, std::vector<int> axes) {
  ccv_nnc_cmd_t c = cmd(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

ccv_nnc_cmd_t windowed(uint32_t id, int rows, int cols, int channels, int count = 0) {
  ccv_nnc_cmd_t c = cmd(id);
  c.info.size.dim[0] = rows;
  c.info.size.dim[1] = cols;
  c.info.size.dim[2] = channels;
  c.info.convolution.count = count;
  c.info.convolution.groups = 1;
  return c;
}

// A unary element-wise command on one [3, 4] input.
void unary(uint32_t id, Input in = {{3, 4}}) {
  check_gradients({in}, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(id), {x[0]}); }, id);
}

TEST(AutodiffSingle, GemmWithBias) {
  check_gradients({{{4, 5}}, {{3, 5}}, {{3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, gemm_wt(), {x[0], x[1], x[2]}); }, 1);
}

TEST(AutodiffSingle, GemmNoBiasPlainAndOnlyWeights) {
  ccv_nnc_cmd_t c = cmd(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = 1;
  c.info.blas.a[1] = 1;
  check_gradients({{{2, 3}}, {{3, 4}}}, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, c, {x[0], x[1]}); }, 2);
  // Only the weights: the data's gradient is left out of the backward exec.
  Input data{{2, 3}};
  data.wrt = false;
  check_gradients({data, {{3, 4}}}, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, c, {x[0], x[1]}); }, 3);
}

TEST(AutodiffSingle, AddAndMulBroadcasting) {
  check_gradients({{{3, 4}}, {{1, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, blas(CCV_NNC_ADD_FORWARD, 0.5f, -2), {x[0], x[1]}); }, 4);
  check_gradients({{{3, 1}}, {{2, 3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, blas(CCV_NNC_MUL_FORWARD, 1.5f), {x[0], x[1]}); }, 5);
  check_gradients({{{4}}}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, blas(CCV_NNC_SCALAR_MUL_FORWARD, -3), {x[0]}); }, 6);
}

TEST(AutodiffSingle, ElementWise) {
  check_gradients({{{3, 4}}, {{3, 4}}, {{3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWSUM_FORWARD), {x[0], x[1], x[2]}); }, 7);
  check_gradients({{{3, 4}}, {{3, 4}}, {{3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {x[0], x[1], x[2]}); }, 8);
  Input den{{3, 4}};
  den.lo = 0.5, den.hi = 2;
  check_gradients({{{3, 4}}, den},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWDIV_FORWARD), {x[0], x[1]}); }, 9);
  unary(CCV_NNC_EWEXP_FORWARD);
  Input pos{{3, 4}};
  pos.lo = 0.5, pos.hi = 2;
  unary(CCV_NNC_EWLOG_FORWARD, pos);
  unary(CCV_NNC_EWSQRT_FORWARD, pos);
}

TEST(AutodiffSingle, Activations) {
  Input kinked{{3, 4}};
  kinked.away = 0.05;
  unary(CCV_NNC_RELU_FORWARD, kinked);
  unary(CCV_NNC_SIGMOID_FORWARD);
  unary(CCV_NNC_TANH_FORWARD);
  unary(CCV_NNC_SOFTMAX_FORWARD);
  unary(CCV_NNC_SWISH_FORWARD);
  unary(CCV_NNC_GELU_FORWARD);
}

TEST(AutodiffSingle, Reductions) {
  check_gradients({{{3, 4, 2}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {1}), {x[0]}); }, 10);
  check_gradients({{{3, 4, 2}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, reduce(CCV_NNC_REDUCE_MEAN_FORWARD, {0, 2}), {x[0]}); }, 11);
  // A scalar f: the seed gradient is ones, nothing to write.
  check_gradients({{{3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {0, 1}), {x[0]}); }, 12);
}

TEST(AutodiffSingle, Transpose) {
  ccv_nnc_cmd_t c = cmd(CCV_NNC_TRANSPOSE_FORWARD);
  c.info.transpose.axis[0] = 0;
  c.info.transpose.axis[1] = 2;
  check_gradients({{{2, 3, 4}}}, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, c, {x[0]}); }, 13);
}

TEST(AutodiffSingle, Convolution) {
  // NHWC [1, 5, 5, 2] * 3 filters of 3x3x2 + bias, stride 1, no padding -> [1, 3, 3, 3].
  check_gradients({{{1, 5, 5, 2}}, {{3, 3, 3, 2}}, {{3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    return apply(g, windowed(CCV_NNC_CONVOLUTION_FORWARD, 3, 3, 2, 3), {x[0], x[1], x[2]});
                  },
                  14);
}

TEST(AutodiffSingle, Pools) {
  for (uint32_t id : {CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_AVERAGE_POOL_FORWARD})
    check_gradients({{{1, 4, 4, 2}}},
                    [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                      ccv_nnc_tensor_symbol_t y = sym(g, {1, 2, 2, 2});
                      exec(g, windowed(id, 2, 2, 2), {x[0]}, {y});
                      return y;
                    },
                    15);
}

TEST(AutodiffSingle, Losses) {
  Input labels{{4}};
  labels.wrt = false;
  labels.values = {2, 0, 1, 2};
  check_gradients({{{4, 3}}, labels},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
                    c.info.label_smoothing.trim1 = 1;
                    ccv_nnc_tensor_symbol_t loss = sym(g, {4});
                    ccv_nnc_tensor_symbol_t softmax = sym(g, {4, 3});
                    exec(g, c, {x[0], x[1]}, {loss, softmax});
                    return loss;
                  },
                  16, 1e-6, 1e-5, "softmax crossentropy");
  check_gradients({{{4, 3}}, {{4, 3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_MSE_FORWARD);
                    c.info.mse.reduce_op = CCV_NNC_MSE_REDUCE_MEAN;
                    return apply(g, c, {x[0], x[1]});
                  },
                  17, 1e-6, 1e-5, "mse");
  Input targets{{4, 3}};
  targets.wrt = false;
  targets.lo = 0, targets.hi = 1;
  check_gradients({{{4, 3}}, targets},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD);
                    c.info.binary_crossentropy.pos_weight = 1;
                    // libnnc's backward needs the saved sigmoid: both outputs.
                    ccv_nnc_tensor_symbol_t loss = sym(g, {4, 1}), sigmoid = sym(g, {4, 3});
                    exec(g, c, {x[0], x[1]}, {loss, sigmoid});
                    return loss;
                  },
                  18, 1e-6, 1e-5, "sigmoid binary crossentropy");
  // Categorical crossentropy of a softmax, and the softmax output of
  // SOFTMAX_CROSSENTROPY used further: the loss gradient must not read as ones.
  check_gradients({{{4, 3}}, labels},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_tensor_symbol_t p = apply(g, cmd(CCV_NNC_SOFTMAX_FORWARD), {x[0]});
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD);
                    c.info.label_smoothing.trim1 = 1;
                    ccv_nnc_tensor_symbol_t loss = sym(g, {4});
                    exec(g, c, {p, x[1]}, {loss});
                    return loss;
                  },
                  19, 1e-6, 1e-5, "categorical crossentropy");
  check_gradients({{{4, 3}}, labels},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
                    c.info.label_smoothing.trim1 = 1;
                    ccv_nnc_tensor_symbol_t loss = sym(g, {4});
                    ccv_nnc_tensor_symbol_t softmax = sym(g, {4, 3});
                    exec(g, c, {x[0], x[1]}, {loss, softmax});
                    return apply(g, cmd(CCV_NNC_TANH_FORWARD), {softmax});
                  },
                  20, 1e-6, 1e-5, "softmax output only");
}

TEST(AutodiffSingle, MoreElementWise) {
  Input kinked{{3, 4}};
  kinked.away = 0.05;
  check_gradients({kinked},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_LEAKY_RELU_FORWARD);
                    c.info.leaky_relu.negative_slope = 0.125f;
                    return apply(g, c, {x[0]});
                  },
                  21, 1e-6, 1e-5, "leaky relu");
  // CLAMP inside (-0.5, 0.5) and beyond it: inputs kept off both bounds.
  Input off{{3, 4}};
  off.values = {-0.9, -0.3, 0.1, 0.45, 0.7, -0.6};
  check_gradients({off},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_CLAMP_FORWARD);
                    c.info.clamp.min = -0.5f;
                    c.info.clamp.max = 0.5f;
                    return apply(g, c, {x[0]});
                  },
                  22, 1e-6, 1e-5, "clamp");
  for (uint32_t id : {CCV_NNC_MIN_FORWARD, CCV_NNC_MAX_FORWARD})
    check_gradients({{{3, 4}}, {{3, 4}}}, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(id), {x[0], x[1]}); },
                    23, 1e-6, 1e-5, "min / max");
  // Only one operand a wrt: libnnc's MIN / MAX backward bitmask asks for both
  // gradients, so the other one is computed and thrown away.
  Input constant{{3, 4}};
  constant.wrt = false;
  check_gradients({{{3, 4}}, constant},
                  [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_MAX_FORWARD), {x[0], x[1]}); }, 23,
                  1e-6, 1e-5, "max of one wrt");
  check_gradients({{{3, 4}}}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x[0]}); },
                  24, 1e-6, 1e-5, "copy");
  // One symbol twice in one exec: x + x, x * x * x.
  check_gradients({{{3, 4}}}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWSUM_FORWARD), {x[0], x[0]}); },
                  25, 1e-6, 1e-5, "x + x");
  check_gradients({{{3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {x[0], x[0], x[0]}); }, 26,
                  1e-6, 1e-5, "x^3");
}

// Disabled: for dw and dbias alone libnnc's bitmask leaves w out
// (|g|x|-|bias| -> |-|dw|dbias|), which the backward pass follows; our
// CONVOLUTION_BACKWARD kernel still asks for w.
TEST(AutodiffSingle, ConvolutionWeightsOnly) {
  Input data{{1, 5, 5, 2}};
  data.wrt = false;
  check_gradients({data, {{3, 3, 3, 2}}, {{3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    return apply(g, windowed(CCV_NNC_CONVOLUTION_FORWARD, 3, 3, 2, 3), {x[0], x[1], x[2]});
                  },
                  33);
}

TEST(AutodiffSingle, StridedPaddedConvolutionAndPool) {
  // [1, 7, 7, 2] * 3 filters 3x3x2, stride 2, padding 1 -> [1, 4, 4, 3]; then a padded 3x3 max pool, stride 1.
  check_gradients({{{1, 7, 7, 2}}, {{3, 3, 3, 2}}, {{3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_hint_t hint;
                    std::memset(&hint, 0, sizeof(hint));
                    hint.stride.dim[0] = hint.stride.dim[1] = 2;
                    hint.border.begin[0] = hint.border.begin[1] = hint.border.end[0] = hint.border.end[1] = 1;
                    ccv_nnc_tensor_symbol_t y = sym(g, {1, 4, 4, 3});
                    ccv_nnc_graph_exec_symbol_set_hint(g, exec(g, windowed(CCV_NNC_CONVOLUTION_FORWARD, 3, 3, 2, 3), {x[0], x[1], x[2]}, {y}), hint);
                    hint.stride.dim[0] = hint.stride.dim[1] = 1;
                    ccv_nnc_tensor_symbol_t z = sym(g, {1, 4, 4, 3});
                    ccv_nnc_graph_exec_symbol_set_hint(g, exec(g, windowed(CCV_NNC_MAX_POOL_FORWARD, 3, 3, 3), {y}, {z}), hint);
                    return z;
                  },
                  27, 1e-6, 1e-5, "strided conv, padded pool");
}

TEST(AutodiffSingle, Normalisation) {
  // Layer norm over the last axis with scale and bias; saved statistics as outputs.
  check_gradients({{{3, 5}}, {{1, 5}}, {{1, 5}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_LAYER_NORM_FORWARD);
                    c.info.lnorm.count = 1;
                    c.info.lnorm.axis[0] = 1;
                    c.info.lnorm.epsilon = 1e-5f;
                    c.info.lnorm.elementwise_affine = 1;
                    ccv_nnc_tensor_symbol_t y = sym(g, {3, 5}), m = sym(g, {3, 1}), s = sym(g, {3, 1});
                    exec(g, c, {x[0], x[1], x[2]}, {y, m, s});
                    return y;
                  },
                  28, 1e-6, 1e-5, "layer norm");
}

// libnnc's BATCH_NORM_BACKWARD has 5 outputs (one gradient slot per forward
// input, the last two empty here), which is what the backward pass emits.
TEST(AutodiffSingle, BatchNorm) {
  // Batch norm in training over the batch axis: running statistics are constants.
  Input mean{{1, 4}}, var{{1, 4}};
  mean.wrt = var.wrt = false;
  var.lo = 0.5, var.hi = 1;
  check_gradients({{{5, 4}}, {{1, 4}}, {{1, 4}}, mean, var},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_BATCH_NORM_FORWARD);
                    c.info.bnorm.count = 1;
                    c.info.bnorm.axis[0] = 0;
                    c.info.bnorm.epsilon = 1e-5f;
                    c.info.bnorm.momentum = 0.9f;
                    ccv_nnc_tensor_symbol_t y = sym(g, {5, 4});
                    ccv_nnc_tensor_symbol_t rm = sym(g, {1, 4}), rv = sym(g, {1, 4}), sm = sym(g, {1, 4}), si = sym(g, {1, 4});
                    exec(g, c, {x[0], x[1], x[2], x[3], x[4]}, {y, rm, rv, sm, si});
                    return apply(g, cmd(CCV_NNC_TANH_FORWARD), {y});
                  },
                  29, 1e-6, 1e-5, "batch norm");
}

TEST(AutodiffSingle, MoreLosses) {
  Input prob{{4, 3}}, target{{4, 3}};
  prob.lo = 0.1, prob.hi = 0.9;
  target.wrt = false;
  target.lo = 0, target.hi = 1;
  check_gradients({prob, target},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_BINARY_CROSSENTROPY_FORWARD);
                    c.info.binary_crossentropy.pos_weight = 1;
                    return apply(g, c, {x[0], x[1]});
                  },
                  30, 1e-6, 1e-5, "binary crossentropy");
  // Smooth L1 with differences on both sides of beta (none near it).
  Input a{{2, 3}}, b{{2, 3}};
  a.values = {0.0, 0.5, -2.0, 1.2, 0.05, -0.4};
  b.values = {0.1, -1.0, 0.0, 0.1, 0.0, 0.3};
  check_gradients({a, b},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_cmd_t c = cmd(CCV_NNC_SMOOTH_L1_FORWARD);
                    c.info.smooth_l1.beta = 0.5f;
                    return apply(g, c, {x[0], x[1]});
                  },
                  31, 1e-6, 1e-5, "smooth l1");
}

TEST(AutodiffSingle, AliasesAsWrtAndF) {
  // wrt is a column slice of a bigger input; f is a reshape alias of a result.
  check_gradients({{{3, 4}}},
                  [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_tensor_symbol_t y = apply(g, cmd(CCV_NNC_SIGMOID_FORWARD), {x[0]});
                    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
                    return ccv_nnc_tensor_symbol_alias_new(g, y, ofs, stride, param({2, 6}), "reshaped f");
                  },
                  32, 1e-6, 1e-5, "f an alias");
  Program p;
  ccv_nnc_tensor_symbol_t x = sym(p.sg, {3, 4}, "x");
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 1}, stride[CCV_NNC_MAX_DIM_ALLOC] = {4, 1};
  ccv_nnc_tensor_symbol_t part = ccv_nnc_tensor_symbol_alias_new(p.sg, x, ofs, stride, param({3, 2}), "part");
  ccv_nnc_tensor_symbol_t y = apply(p.sg, cmd(CCV_NNC_EWEXP_FORWARD), {part});
  ccv_nnc_cmd_t sum = cmd(CCV_NNC_REDUCE_SUM_FORWARD);
  sum.info.reduce.count = 2;
  sum.info.reduce.axis[1] = 1;
  ccv_nnc_tensor_symbol_t f = apply(p.sg, sum, {y});
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_tensor_symbol_t wrt[2] = {part, x};
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, wrt, 2, nullptr, 0, nullptr, 0);
  ccv_nnc_tensor_symbol_t dpart = ccv_nnc_tensor_symbol_for_backward(p.sg, part), dx = ccv_nnc_tensor_symbol_for_backward(p.sg, x);
  ASSERT_GE(dpart.d, 0) << ccv_nnc_error_message();
  ASSERT_GE(dx.d, 0) << ccv_nnc_error_message();
  ccv_nnc_tensor_t* xt = p.tensor(param({3, 4}));
  for (int i = 0; i < 12; i++) xt->data.f64[i] = 0.1 * i - 0.5;
  ASSERT_TRUE(p.compile({{x, xt}}, {dpart, dx})) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // d/dx of sum(exp(x[:, 1:3])): exp where the slice reads, 0 elsewhere (the zero-initialised rest).
  ccv_nnc_tensor_t* gx = p.of(dx);
  ccv_nnc_tensor_t* gp = p.of(dpart);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) {
      const double want = c == 1 || c == 2 ? std::exp(xt->data.f64[r * 4 + c]) : 0;
      EXPECT_NEAR(at(gx, static_cast<size_t>(r * 4 + c)), want, 1e-14) << r << "," << c;
      if (c == 1 || c == 2) {
        EXPECT_NEAR(at(gp, static_cast<size_t>(r * 2 + c - 1)), want, 1e-14) << r << "," << c;
      }
    }
}

// Each input alone as the wrt: the backward exec then passes only the slots
// libnnc's bitmask asks for that one gradient, and the kernel must take it.
void each_alone(std::vector<Input> inputs, const Build& build, unsigned seed, const char* what) {
  for (size_t k = 0; k < inputs.size(); k++) {
    if (!inputs[k].wrt) continue;
    std::vector<Input> one = inputs;
    for (size_t j = 0; j < one.size(); j++) one[j].wrt = j == k;
    check_gradients(one, build, seed + static_cast<unsigned>(k), 1e-6, 1e-5, (std::string(what) + " input " + std::to_string(k)).c_str());
  }
}

TEST(AutodiffSingle, EachInputAlone) {
  each_alone({{{4, 5}}, {{3, 5}}, {{3}}}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, gemm_wt(), {x[0], x[1], x[2]}); },
             40, "gemm");
  each_alone({{{3, 4}}, {{1, 4}}},
             [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, blas(CCV_NNC_ADD_FORWARD, 0.5f, -2), {x[0], x[1]}); }, 42, "add");
  each_alone({{{3, 1}}, {{3, 4}}},
             [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, blas(CCV_NNC_MUL_FORWARD, 1.5f), {x[0], x[1]}); }, 44, "mul");
  each_alone({{{3, 4}}, {{3, 4}}, {{3, 4}}},
             [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {x[0], x[1], x[2]}); }, 46, "ewprod");
  Input den{{3, 4}};
  den.lo = 0.5, den.hi = 2;
  each_alone({{{3, 4}}, den}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_EWDIV_FORWARD), {x[0], x[1]}); },
             49, "ewdiv");
  each_alone({{{3, 4}}, {{3, 4}}}, [](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return apply(g, cmd(CCV_NNC_MIN_FORWARD), {x[0], x[1]}); },
             51, "min");
  each_alone({{{4, 3}}, {{4, 3}}},
             [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
               ccv_nnc_cmd_t c = cmd(CCV_NNC_MSE_FORWARD);
               c.info.mse.reduce_op = CCV_NNC_MSE_REDUCE_SUM;
               return apply(g, c, {x[0], x[1]});
             },
             53, "mse");
  each_alone({{{3, 5}}, {{1, 5}}, {{1, 5}}},
             [](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
               ccv_nnc_cmd_t c = cmd(CCV_NNC_LAYER_NORM_FORWARD);
               c.info.lnorm.count = 1;
               c.info.lnorm.axis[0] = 1;
               c.info.lnorm.epsilon = 1e-5f;
               c.info.lnorm.elementwise_affine = 1;
               ccv_nnc_tensor_symbol_t y = sym(g, {3, 5}), m = sym(g, {3, 1}), s = sym(g, {3, 1});
               exec(g, c, {x[0], x[1], x[2]}, {y, m, s});
               return y;
             },
             55, "layer norm");
}

// A custom command y = x^2 whose backward (CCV_NNC_CUSTOM_BACKWARD, same
// vtab) reads x: custom commands get every slot of libnnc's layout.
int square(const ccv_nnc_cmd_t c, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
           ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  if (c.cmd == CCV_NNC_CUSTOM_FORWARD) {
    if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return CCV_NNC_EXEC_INVALID;
    for (size_t i = 0; i < count(inputs[0]->info); i++) outputs[0]->data.f64[i] = inputs[0]->data.f64[i] * inputs[0]->data.f64[i];
    return CCV_NNC_EXEC_SUCCESS;
  }
  // |g|x|y| -> |dx|
  if (input_size < 3 || output_size < 1 || !inputs[0] || !inputs[1] || !inputs[2] || !outputs[0]) return CCV_NNC_EXEC_INVALID;
  for (size_t i = 0; i < count(inputs[1]->info); i++) outputs[0]->data.f64[i] = 2 * inputs[1]->data.f64[i] * inputs[0]->data.f64[i];
  return CCV_NNC_EXEC_SUCCESS;
}

TEST(AutodiffSingle, CustomCommand) {
  static ccv_nnc_cmd_vtab_t vtab = {square, nullptr};
  ccv_nnc_cmd_param_t params;
  std::memset(&params, 0, sizeof(params));
  const ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &vtab, params, 0);
  check_gradients({{{3, 4}}},
                  [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) {
                    ccv_nnc_tensor_symbol_t y = sym(g, {3, 4});
                    exec(g, c, {x[0]}, {y});
                    return apply(g, cmd(CCV_NNC_TANH_FORWARD), {y});
                  },
                  60, 1e-6, 1e-5, "custom");
}


// A dense block written in place: each layer reads every channel before its
// own (a prefix view of the block) and writes its channels into the block,
// and f reads the whole block. The gradient of each channel slice is read out
// of the larger prefixes' partial gradients as views (no zero-initialised
// copies of the block); checked against finite differences, and the
// backward pass holds no DATA_TRANSFER.
TEST(AutodiffSingle, DenseBlockPrefixesInPlace) {
  auto build = [](ccv_nnc_symbolic_graph_t* g, const Syms& v) {
    const ccv_nnc_tensor_symbol_t block = sym(g, {3, 6}, "block");
    auto cols = [&](int c0, int c) {
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, c0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {6, 1};
      return ccv_nnc_tensor_symbol_alias_new(g, block, ofs, stride, param({3, c}), nullptr);
    };
    exec(g, cmd(CCV_NNC_TANH_FORWARD), {v[0]}, {cols(0, 2)});
    exec(g, cmd(CCV_NNC_TANH_FORWARD), {apply(g, gemm_wt(), {cols(0, 2), v[1]})}, {cols(2, 2)});
    exec(g, cmd(CCV_NNC_SIGMOID_FORWARD), {apply(g, gemm_wt(), {cols(0, 4), v[2]})}, {cols(4, 2)});
    return apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {0, 1}), {apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {block, block})});
  };
  check_gradients({{{3, 2}}, {{2, 2}}, {{2, 4}}}, build, 71, 1e-6, 1e-5, "dense block");
  Program p;
  const Syms xs{sym(p.sg, {3, 2}), sym(p.sg, {2, 2}), sym(p.sg, {2, 4})};
  const ccv_nnc_tensor_symbol_t f = build(p.sg, xs);
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const int before = ccv_nnc_graph_exec_symbol_count(p.sg);
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, xs.data(), 3, ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  for (int e = before; e < ccv_nnc_graph_exec_symbol_count(p.sg); e++)
    EXPECT_NE(ccv_nnc_graph_exec_symbol_cmd(p.sg, {e, p.sg}).cmd, static_cast<uint32_t>(CCV_NNC_DATA_TRANSFER_FORWARD)) << e;
}

}  // namespace
