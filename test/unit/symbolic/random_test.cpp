// Random graphs of element-wise commands, compiled and run, against the same
// commands run one by one on tensors of their own (no sharing, no in place):
// the compiled graph's memory reuse, in-place rewrites, ordering and
// concatenations written in place through aliases must not change a single
// value, serially or on two streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "symbolic_test_util.hpp"

using namespace cmdtest;
using namespace symtest;

namespace {

struct Op {
  uint32_t cmd;
  int arity;
};

// Commands that are total on any finite input (so NaN never hides a difference).
const Op kOps[] = {{CCV_NNC_EWSUM_FORWARD, 2},      {CCV_NNC_EWPROD_FORWARD, 2}, {CCV_NNC_SIGMOID_FORWARD, 1},
                   {CCV_NNC_TANH_FORWARD, 1},       {CCV_NNC_RELU_FORWARD, 1},   {CCV_NNC_SCALAR_MUL_FORWARD, 1},
                   {CCV_NNC_EWSUM_FORWARD, 3},      {CCV_NNC_MAX_FORWARD, 2},    {CCV_NNC_MIN_FORWARD, 2},
                   {CCV_NNC_SOFTMAX_FORWARD, 1},    {CCV_NNC_SWISH_FORWARD, 1},  {CCV_NNC_GELU_FORWARD, 1},
                   {CCV_NNC_LEAKY_RELU_FORWARD, 1}, {CCV_NNC_CLAMP_FORWARD, 1},  {CCV_NNC_DATA_TRANSFER_FORWARD, 1},
                   {CCV_NNC_ADD_FORWARD, 2},        {CCV_NNC_MUL_FORWARD, 2}};

struct Node {
  ccv_nnc_cmd_t cmd;
  std::vector<int> in;  // value indices
  int out;              // value index
  // The output is a half of a concatenation written in place: an alias of
  // the [rows, 2 cols] base `pair` (left half when `half` is 0).
  int pair = -1, half = 0;
};

void run_random_graph(unsigned seed, bool streams) {
  std::mt19937 rng(seed);
  const int rows = 3 + static_cast<int>(rng() % 5), cols = 1 + static_cast<int>(rng() % 9);
  const int inputs = 2 + static_cast<int>(rng() % 3);
  const int nodes = 6 + static_cast<int>(rng() % 30);
  // The program: values 0..inputs-1 are inputs, each node makes one more.
  std::vector<Node> program;
  int pairs = 0;
  for (int n = 0; n < nodes; n++) {
    const Op op = kOps[rng() % (sizeof(kOps) / sizeof(kOps[0]))];
    Node node;
    node.cmd = plain(op.cmd);
    if (op.cmd == CCV_NNC_SCALAR_MUL_FORWARD) node.cmd.info.blas.a[0] = 0.5f + static_cast<float>(rng() % 4) * 0.25f;
    if (op.cmd == CCV_NNC_ADD_FORWARD) node.cmd.info.blas.a[0] = 1, node.cmd.info.blas.a[1] = -0.5f;
    if (op.cmd == CCV_NNC_MUL_FORWARD) node.cmd.info.blas.a[0] = 0.75f;
    if (op.cmd == CCV_NNC_LEAKY_RELU_FORWARD) node.cmd.info.leaky_relu.negative_slope = 0.125f;
    if (op.cmd == CCV_NNC_CLAMP_FORWARD) node.cmd.info.clamp.min = -1, node.cmd.info.clamp.max = 1;
    const int available = inputs + n;
    // Mostly recent values, so that old ones die and their memory is reused.
    for (int a = 0; a < op.arity; a++) {
      const int back = static_cast<int>(rng() % std::min(available, 4));
      node.in.push_back(rng() % 5 == 0 ? static_cast<int>(rng() % available) : available - 1 - back);
    }
    node.out = available;
    // Now and then two nodes write the halves of one base through aliases.
    if (n + 1 < nodes && rng() % 6 == 0) {
      node.pair = pairs;
      node.half = 0;
      program.push_back(node);
      Node other = node;
      other.out = available + 1;
      other.half = 1;
      other.in[0] = available;  // reads the left half it sits beside
      program.push_back(other);
      pairs++;
      n++;
      continue;
    }
    program.push_back(node);
  }
  const int values = inputs + nodes;
  // Outputs: the last value and a few random others.
  std::vector<int> outputs{values - 1};
  for (int k = 0; k < 2; k++) outputs.push_back(inputs + static_cast<int>(rng() % nodes));

  // Reference: every value its own tensor, commands one by one.
  std::vector<ccv_nnc_tensor_t*> ref(static_cast<size_t>(values));
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  for (int v = 0; v < values; v++) ref[static_cast<size_t>(v)] = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {rows, cols}), 0);
  for (int v = 0; v < inputs; v++)
    for (int i = 0; i < rows * cols; i++) ref[static_cast<size_t>(v)]->data.f32[i] = d(rng);
  for (const Node& n : program) {
    std::vector<ccv_nnc_tensor_t*> in;
    for (int v : n.in) in.push_back(ref[static_cast<size_t>(v)]);
    ASSERT_EQ(run(n.cmd, in, {ref[static_cast<size_t>(n.out)]}), CCV_NNC_EXEC_SUCCESS) << last_error();
  }

  // The same program as a symbolic graph.
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  std::vector<ccv_nnc_tensor_symbol_t> sym;
  for (int v = 0; v < values; v++)
    sym.push_back(ccv_nnc_tensor_symbol_new(sg, v < inputs ? param(CCV_32F, {rows, cols}) : ccv_nnc_tensor_auto, nullptr));
  for (int k = 0; k < pairs; k++) {
    const auto base = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {rows, 2 * cols}), nullptr);
    const int stride[CCV_NNC_MAX_DIM_ALLOC] = {2 * cols, 1};
    for (const Node& n : program)
      if (n.pair == k) {
        const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, n.half * cols};
        sym[static_cast<size_t>(n.out)] = ccv_nnc_tensor_symbol_alias_new(sg, base, ofs, stride, param(CCV_32F, {rows, cols}), nullptr);
        ASSERT_GE(sym[static_cast<size_t>(n.out)].d, 0) << last_error();
      }
  }
  for (const Node& n : program) {
    std::vector<ccv_nnc_tensor_symbol_t> in;
    for (int v : n.in) in.push_back(sym[static_cast<size_t>(v)]);
    ASSERT_GE(ccv_nnc_graph_exec_symbol_new(sg, n.cmd, in.data(), static_cast<int>(in.size()), &sym[static_cast<size_t>(n.out)], 1,
                                            nullptr).d,
              0)
        << last_error();
  }
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  std::vector<ccv_nnc_tensor_symbol_t> outs;
  for (int v : outputs) outs.push_back(sym[static_cast<size_t>(v)]);
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, outs.data(), static_cast<int>(outs.size()), nullptr,
                                 0, nullptr, 0, &g, &ta, &ea);
  ASSERT_NE(g, nullptr) << last_error();
  for (int v = 0; v < inputs; v++) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, sym[static_cast<size_t>(v)]);
    if (!t) continue;  // an input no node reads has no tensor
    std::memcpy(t->data.f32, ref[static_cast<size_t>(v)]->data.f32, sizeof(float) * static_cast<size_t>(rows * cols));
  }
  if (streams) ccv_nnc_graph_set_default_static_schedule(g, CCV_STREAM_CONTEXT_CPU, 2);
  for (int round = 0; round < 2; round++) {  // twice: inputs must survive a run
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (int v : outputs) {
      const ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, sym[static_cast<size_t>(v)]);
      // Halves of a concatenation are strided views: row stride 2 cols.
      const int row_stride = CCV_IS_TENSOR_VIEW(t) ? reinterpret_cast<const ccv_nnc_tensor_view_t*>(t)->stride[0] : cols;
      // Within rounding: a strided half may run on CPU_REF where the packed
      // reference ran CPU_OPT (they agree to a few ulp, not always to the bit).
      // Products can overflow: an infinity or NaN must come out as it did.
      for (int i = 0; i < rows * cols; i++) {
        const float want = ref[static_cast<size_t>(v)]->data.f32[i];
        const float got = t->data.f32[(i / cols) * row_stride + i % cols];
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << "seed " << seed << " value " << v << " element " << i << " round " << round;
        } else if (std::isinf(want)) {
          ASSERT_EQ(got, want) << "seed " << seed << " value " << v << " element " << i << " round " << round;
        } else {
          ASSERT_NEAR(got, want, 1e-5f * std::max(1.f, std::fabs(want)))
              << "seed " << seed << " value " << v << " element " << i << " round " << round;
        }
      }
    }
  }
  // The arena is no larger than every value side by side.
  EXPECT_LE(ccv_nnc_tensor_arena_size(ta), static_cast<uint64_t>(values + 2 * pairs) * rows * cols * 4 + 64 * (values + pairs));
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  ccv_nnc_symbolic_graph_free(sg);
  for (ccv_nnc_tensor_t* t : ref) ccv_nnc_tensor_free(t);
}

TEST(SymbolicRandom, CompiledGraphsGiveTheValuesOfCommandsRunOneByOne) {
  for (unsigned seed = 1; seed <= 60; seed++) {
    run_random_graph(seed, false);
    if (HasFatalFailure()) return;
  }
}

TEST(SymbolicRandom, AndOnTwoStreams) {
  for (unsigned seed = 101; seed <= 130; seed++) {
    run_random_graph(seed, true);
    if (HasFatalFailure()) return;
  }
}

// Zero-initialised accumulators (as autodiff makes for gradients through
// aliases): now and then a node writes the left half of a base flagged
// INIT_ZEROS and the next adds its two halves, the right one never written.
// Compile sets such a base just before its first use, where its bytes may
// have been another value's: the right half must read zero on every run,
// serially and on two streams.
void run_random_zero_halves(unsigned seed, bool streams) {
  std::mt19937 rng(seed);
  const int rows = 2 + static_cast<int>(rng() % 4), cols = 1 + static_cast<int>(rng() % 7);
  const int inputs = 2, nodes = 8 + static_cast<int>(rng() % 24);
  struct Step {
    ccv_nnc_cmd_t cmd;
    std::vector<int> in;
    int out;
    int zero = -1;  // out is the left half of zero base `zero`
  };
  std::vector<Step> program;
  int values = inputs, zeros = 0;
  std::vector<std::pair<int, int>> halves;  // per zero base: (left value, right value)
  for (int n = 0; n < nodes; n++) {
    const Op op = kOps[rng() % (sizeof(kOps) / sizeof(kOps[0]))];
    Step st;
    st.cmd = plain(op.cmd);
    if (op.cmd == CCV_NNC_SCALAR_MUL_FORWARD) st.cmd.info.blas.a[0] = 0.75f;
    if (op.cmd == CCV_NNC_ADD_FORWARD) st.cmd.info.blas.a[0] = 1, st.cmd.info.blas.a[1] = -0.5f;
    if (op.cmd == CCV_NNC_MUL_FORWARD) st.cmd.info.blas.a[0] = 0.75f;
    if (op.cmd == CCV_NNC_LEAKY_RELU_FORWARD) st.cmd.info.leaky_relu.negative_slope = 0.125f;
    if (op.cmd == CCV_NNC_CLAMP_FORWARD) st.cmd.info.clamp.min = -1, st.cmd.info.clamp.max = 1;
    for (int a = 0; a < op.arity; a++) st.in.push_back(values - 1 - static_cast<int>(rng() % std::min(values, 3)));
    st.out = values++;
    if (rng() % 3 == 0) {  // into the left half of a zero base, then left + right
      st.zero = zeros++;
      halves.emplace_back(st.out, values++);
      program.push_back(st);
      Step sum;
      sum.cmd = plain(CCV_NNC_EWSUM_FORWARD);
      sum.in = {halves.back().first, halves.back().second};
      sum.out = values++;
      program.push_back(sum);
      continue;
    }
    program.push_back(st);
  }
  std::vector<ccv_nnc_tensor_t*> ref(static_cast<size_t>(values));
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  for (int v = 0; v < values; v++) {
    ref[static_cast<size_t>(v)] = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {rows, cols}), 0);
    for (int i = 0; i < rows * cols; i++) ref[static_cast<size_t>(v)]->data.f32[i] = v < inputs ? d(rng) : 0.f;  // right halves: 0
  }
  for (const Step& st : program) {
    std::vector<ccv_nnc_tensor_t*> in;
    for (int v : st.in) in.push_back(ref[static_cast<size_t>(v)]);
    ASSERT_EQ(run(st.cmd, in, {ref[static_cast<size_t>(st.out)]}), CCV_NNC_EXEC_SUCCESS) << last_error();
  }
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  std::vector<ccv_nnc_tensor_symbol_t> sym(static_cast<size_t>(values), {CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {2 * cols, 1};
  for (const auto& [left, right] : halves) {
    const auto base = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {rows, 2 * cols}), nullptr);
    ASSERT_EQ(ccv_nnc_tensor_symbol_set_flags(sg, base, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS), 0);
    const int lo[CCV_NNC_MAX_DIM_ALLOC] = {0, 0}, ro[CCV_NNC_MAX_DIM_ALLOC] = {0, cols};
    sym[static_cast<size_t>(left)] = ccv_nnc_tensor_symbol_alias_new(sg, base, lo, stride, param(CCV_32F, {rows, cols}), nullptr);
    sym[static_cast<size_t>(right)] = ccv_nnc_tensor_symbol_alias_new(sg, base, ro, stride, param(CCV_32F, {rows, cols}), nullptr);
  }
  for (int v = 0; v < values; v++)
    if (sym[static_cast<size_t>(v)].d == CCV_NNC_NO_TENSOR_SYMBOL)
      sym[static_cast<size_t>(v)] = ccv_nnc_tensor_symbol_new(sg, v < inputs ? param(CCV_32F, {rows, cols}) : ccv_nnc_tensor_auto, nullptr);
  for (const Step& st : program) {
    std::vector<ccv_nnc_tensor_symbol_t> in;
    for (int v : st.in) in.push_back(sym[static_cast<size_t>(v)]);
    ASSERT_GE(ccv_nnc_graph_exec_symbol_new(sg, st.cmd, in.data(), static_cast<int>(in.size()), &sym[static_cast<size_t>(st.out)], 1,
                                            nullptr).d,
              0)
        << last_error();
  }
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  const ccv_nnc_tensor_symbol_t out = sym[static_cast<size_t>(program.back().out)];
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, &out, 1, nullptr, 0, nullptr, 0, &g, &ta, &ea);
  ASSERT_NE(g, nullptr) << last_error();
  for (int v = 0; v < inputs; v++) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, sym[static_cast<size_t>(v)]);
    if (t) std::memcpy(t->data.f32, ref[static_cast<size_t>(v)]->data.f32, sizeof(float) * static_cast<size_t>(rows * cols));
  }
  if (streams) ccv_nnc_graph_set_default_static_schedule(g, CCV_STREAM_CONTEXT_CPU, 2);
  for (int round = 0; round < 2; round++) {
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    const ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, out);
    const int row_stride = CCV_IS_TENSOR_VIEW(t) ? reinterpret_cast<const ccv_nnc_tensor_view_t*>(t)->stride[0] : cols;
    for (int i = 0; i < rows * cols; i++) {
      const float want = ref[static_cast<size_t>(program.back().out)]->data.f32[i];
      const float got = t->data.f32[(i / cols) * row_stride + i % cols];
      ASSERT_NEAR(got, want, 1e-5f * std::max(1.f, std::fabs(want))) << "seed " << seed << " element " << i << " round " << round;
    }
  }
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  ccv_nnc_symbolic_graph_free(sg);
  for (ccv_nnc_tensor_t* t : ref) ccv_nnc_tensor_free(t);
}

TEST(SymbolicRandom, ZeroInitialisedHalvesSeriallyAndOnTwoStreams) {
  for (unsigned seed = 201; seed <= 260; seed++) {
    run_random_zero_halves(seed, seed % 2 == 0);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
