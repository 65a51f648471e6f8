// Gradients of random compositions of differentiable commands against fp64
// finite differences. Values are picked with replacement, so shared
// sub-expressions get several partial gradients (summed); concatenations are
// written in place through aliases and read back through overlapping and
// strided aliases and reshapes; ADD / MUL broadcast reduced values.
#include <gtest/gtest.h>

#include <random>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

using Syms = std::vector<ccv_nnc_tensor_symbol_t>;

ccv_nnc_cmd_t with_a(uint32_t id, float a0, float a1 = 0) {
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

ccv_nnc_tensor_symbol_t alias(ccv_nnc_symbolic_graph_t* g, ccv_nnc_tensor_symbol_t base, std::vector<int> ofs,
                              std::vector<int> stride, std::vector<int> dims) {
  int o[CCV_NNC_MAX_DIM_ALLOC] = {}, s[CCV_NNC_MAX_DIM_ALLOC] = {};
  for (size_t i = 0; i < ofs.size(); i++) o[i] = ofs[i];
  for (size_t i = 0; i < stride.size(); i++) s[i] = stride[i];
  const ccv_nnc_tensor_symbol_t a = ccv_nnc_tensor_symbol_alias_new(g, base, o, s, param(dims), nullptr);
  EXPECT_GE(a.d, 0) << ccv_nnc_error_message();
  return a;
}

// Builds one random program over [rows, cols] values.
class RandomProgram {
 public:
  RandomProgram(unsigned seed, int rows, int cols) : rng_(seed), r_(rows), c_(cols) {}

  ccv_nnc_tensor_symbol_t build(ccv_nnc_symbolic_graph_t* g, const Syms& inputs) {
    g_ = g;
    for (const auto& x : inputs) values_.push_back({x, 0, true});
    const int nodes = 4 + static_cast<int>(rng_() % 9);
    for (int n = 0; n < nodes; n++) step();
    Syms leaves;
    for (const Value& v : values_)
      if (v.uses == 0) leaves.push_back(v.s);
    ccv_nnc_tensor_symbol_t f = leaves.size() == 1 ? leaves[0] : apply(g, cmd(CCV_NNC_EWSUM_FORWARD), leaves);
    if (rng_() % 2) f = apply(g, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {0, 1}), {f});  // a scalar f: seed of ones
    return f;
  }

 private:
  struct Value {
    ccv_nnc_tensor_symbol_t s;
    int uses;
    bool base;  // a base symbol (not an alias), so it can be reshaped
  };
  std::mt19937 rng_;
  int r_, c_;
  ccv_nnc_symbolic_graph_t* g_ = nullptr;
  std::vector<Value> values_;

  ccv_nnc_tensor_symbol_t pick(bool base_only = false) {
    for (;;) {
      Value& v = values_[rng_() % values_.size()];
      if (base_only && !v.base) continue;
      v.uses++;
      return v.s;
    }
  }
  void push(ccv_nnc_tensor_symbol_t s, bool base = true) { values_.push_back({s, 0, base}); }
  ccv_nnc_tensor_symbol_t one(uint32_t id, ccv_nnc_tensor_symbol_t x) { return apply(g_, cmd(id), {x}); }
  // exp(tanh(x)): positive and bounded, for denominators, logs and roots.
  ccv_nnc_tensor_symbol_t positive(ccv_nnc_tensor_symbol_t x) { return one(CCV_NNC_EWEXP_FORWARD, one(CCV_NNC_TANH_FORWARD, x)); }

  void step() {
    switch (rng_() % 10) {
      case 0: {  // unary
        static const uint32_t ops[] = {CCV_NNC_TANH_FORWARD, CCV_NNC_SIGMOID_FORWARD, CCV_NNC_SOFTMAX_FORWARD,
                                       CCV_NNC_SWISH_FORWARD, CCV_NNC_DATA_TRANSFER_FORWARD, CCV_NNC_SCALAR_MUL_FORWARD};
        const uint32_t id = ops[rng_() % 6];
        push(apply(g_, id == CCV_NNC_SCALAR_MUL_FORWARD ? with_a(id, -0.75f) : cmd(id), {pick()}));
        break;
      }
      case 1: {  // binary element-wise
        const int k = static_cast<int>(rng_() % 4);
        const ccv_nnc_tensor_symbol_t a = pick(), b = pick();
        const ccv_nnc_cmd_t c = k == 0   ? cmd(CCV_NNC_EWSUM_FORWARD)
                                : k == 1 ? cmd(CCV_NNC_EWPROD_FORWARD)
                                : k == 2 ? with_a(CCV_NNC_ADD_FORWARD, 0.5f, -1.25f)
                                         : with_a(CCV_NNC_MUL_FORWARD, 0.75f);
        push(apply(g_, c, {a, b}));
        break;
      }
      case 2: {  // a / positive(b)
        const ccv_nnc_tensor_symbol_t a = pick(), b = pick();
        push(apply(g_, cmd(CCV_NNC_EWDIV_FORWARD), {a, positive(b)}));
        break;
      }
      case 3:  // log or sqrt of a positive value
        push(one(rng_() % 2 ? CCV_NNC_EWLOG_FORWARD : CCV_NNC_EWSQRT_FORWARD, positive(pick())));
        break;
      case 4: {  // broadcasting: u (+ or *) reduce(v) along one axis
        const ccv_nnc_tensor_symbol_t u = pick(), v = pick();
        const int axis = static_cast<int>(rng_() % 2);
        const ccv_nnc_tensor_symbol_t w =
            apply(g_, reduce(rng_() % 2 ? CCV_NNC_REDUCE_SUM_FORWARD : CCV_NNC_REDUCE_MEAN_FORWARD, {axis}), {v});
        push(apply(g_, rng_() % 2 ? with_a(CCV_NNC_ADD_FORWARD, 1, 0.5f) : with_a(CCV_NNC_MUL_FORWARD, 1), {u, w}));
        break;
      }
      case 5: {  // a concatenation [rows, 2 cols] written in place, read through its halves and an overlapping middle
        const ccv_nnc_tensor_symbol_t base = sym(g_, {r_, 2 * c_});
        const ccv_nnc_tensor_symbol_t left = alias(g_, base, {0, 0}, {2 * c_, 1}, {r_, c_});
        const ccv_nnc_tensor_symbol_t right = alias(g_, base, {0, c_}, {2 * c_, 1}, {r_, c_});
        exec(g_, cmd(CCV_NNC_TANH_FORWARD), {pick()}, {left});
        exec(g_, cmd(CCV_NNC_SIGMOID_FORWARD), {pick()}, {right});
        push(left, false);
        push(right, false);
        if (rng_() % 2) push(alias(g_, base, {0, c_ / 2}, {2 * c_, 1}, {r_, c_}), false);
        if (rng_() % 2) {  // the whole base, reduced per row, scales a value
          const ccv_nnc_tensor_symbol_t s = apply(g_, reduce(CCV_NNC_REDUCE_MEAN_FORWARD, {1}), {base});
          push(apply(g_, with_a(CCV_NNC_MUL_FORWARD, 1), {pick(), s}));
        }
        break;
      }
      case 6: {  // a reshape to [cols, rows], transposed back
        const ccv_nnc_tensor_symbol_t v = pick(true);
        const ccv_nnc_tensor_symbol_t reshaped = alias(g_, v, {0, 0}, {}, {c_, r_});
        ccv_nnc_cmd_t t = cmd(CCV_NNC_TRANSPOSE_FORWARD);
        t.info.transpose.axis[0] = 0;
        t.info.transpose.axis[1] = 1;
        push(apply(g_, t, {reshaped}));
        break;
      }
      case 7: {  // a strided slice of the last cols - 1 columns, summed per row, scales a value
        if (c_ < 2) break;
        const ccv_nnc_tensor_symbol_t v = pick(true);
        const ccv_nnc_tensor_symbol_t slice = alias(g_, v, {0, 1}, {c_, 1}, {r_, c_ - 1});
        const ccv_nnc_tensor_symbol_t s = apply(g_, reduce(CCV_NNC_REDUCE_SUM_FORWARD, {1}), {slice});
        push(apply(g_, with_a(CCV_NNC_MUL_FORWARD, 0.5f), {pick(), s}));
        break;
      }
      case 8: {  // (a^T b) [cols, cols], then c (a^T b) [rows, cols]
        ccv_nnc_cmd_t at_b = with_a(CCV_NNC_GEMM_FORWARD, 0.5f, 1);
        at_b.info.blas.transpose_a[0] = 0;
        at_b.info.blas.transpose_a[1] = 1;
        const ccv_nnc_tensor_symbol_t a = pick(), b = pick();
        const ccv_nnc_tensor_symbol_t m = apply(g_, at_b, {a, b});
        push(apply(g_, with_a(CCV_NNC_GEMM_FORWARD, 1, 1), {pick(), m}));
        break;
      }
      default: {  // RELU: no value of these fixed seeds lies within the step of its kink
        push(one(CCV_NNC_RELU_FORWARD, pick()));
        break;
      }
    }
  }
};

class AutodiffRandom : public ::testing::TestWithParam<unsigned> {};

TEST_P(AutodiffRandom, MatchesFiniteDifferences) {
  const unsigned seed = GetParam();
  std::mt19937 shape(seed * 7919u + 1);
  const int rows = 2 + static_cast<int>(shape() % 3), cols = 2 + static_cast<int>(shape() % 4);
  const int n = 2 + static_cast<int>(shape() % 3);
  std::vector<Input> inputs(static_cast<size_t>(n), Input({rows, cols}));
  for (Input& in : inputs) in.away = 0.05;  // RELU's kink at 0 stays outside the finite-difference step
  RandomProgram program(seed, rows, cols);
  check_gradients(inputs, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return program.build(g, x); }, seed, 1e-5, 1e-6,
                  "random");
}

INSTANTIATE_TEST_SUITE_P(Seeds, AutodiffRandom, ::testing::Range(1u, 61u));

// The same training graphs through every simplification pass first.
class AutodiffRandomSimplified : public ::testing::TestWithParam<unsigned> {};

TEST_P(AutodiffRandomSimplified, MatchesFiniteDifferences) {
  const unsigned seed = GetParam();
  std::mt19937 shape(seed * 7919u + 1);
  const int rows = 2 + static_cast<int>(shape() % 3), cols = 2 + static_cast<int>(shape() % 4);
  const int n = 2 + static_cast<int>(shape() % 3);
  std::vector<Input> inputs(static_cast<size_t>(n), Input({rows, cols}));
  for (Input& in : inputs) in.away = 0.05;
  RandomProgram program(seed, rows, cols);
  check_gradients(inputs, [&](ccv_nnc_symbolic_graph_t* g, const Syms& x) { return program.build(g, x); }, seed, 1e-5, 1e-6,
                  "random simplified", true);
}

INSTANTIATE_TEST_SUITE_P(Seeds, AutodiffRandomSimplified, ::testing::Range(1u, 31u));

}  // namespace
