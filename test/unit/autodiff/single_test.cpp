// Gradients of one command (or a short chain) through
// ccv_nnc_symbolic_graph_backward, against central finite differences in fp64.
#include <gtest/gtest.h>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

using Syms = std::vector<ccv_nnc_tensor_symbol_t>;

ccv_nnc_cmd_t gemm_wt() {  // y = x w^T (+ b)
  ccv_nnc_cmd_t c = cmd(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = 1;
  c.info.blas.a[1] = 1;
  c.info.blas.transpose_b[0] = 0;
  c.info.blas.transpose_b[1] = 1;
  return c;
}

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

}  // namespace
