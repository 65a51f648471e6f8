// The shape of the backward pass (what ccv_nnc_symbolic_graph_backward
// emits, the lookups) and bad input: an error message, never a crash, and a
// graph left as it was.
#include <gtest/gtest.h>

#include <string>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

bool message_has(const char* needle) { return std::string(ccv_nnc_error_message()).find(needle) != std::string::npos; }

std::vector<int> io(ccv_nnc_symbolic_graph_t* g, ccv_nnc_graph_exec_symbol_t e, bool outputs) {
  const int *in = nullptr, *out = nullptr;
  int ni = 0, no = 0;
  ccv_nnc_graph_exec_symbol_io(g, e, &in, &ni, &out, &no);
  return outputs ? std::vector<int>(out, out + no) : std::vector<int>(in, in + ni);
}

struct Graph {
  ccv_nnc_symbolic_graph_t* g = ccv_nnc_symbolic_graph_new();
  ~Graph() { ccv_nnc_symbolic_graph_free(g); }
  void backward(std::vector<ccv_nnc_tensor_symbol_t> f, std::vector<ccv_nnc_tensor_symbol_t> wrt) {
    ccv_nnc_graph_exec_symbol_autogen(g, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ccv_nnc_symbolic_graph_backward(g, f.data(), static_cast<int>(f.size()), wrt.data(), static_cast<int>(wrt.size()),
                                    ccv_nnc_symbolic_graph_sources(g), ccv_nnc_symbolic_graph_source_size(g),
                                    ccv_nnc_symbolic_graph_destinations(g), ccv_nnc_symbolic_graph_destination_size(g));
  }
};

TEST(AutodiffApi, SeedOfAScalarIsOnesOtherwiseTheCallers) {
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {3}, "x");
  ccv_nnc_cmd_t sum = cmd(CCV_NNC_REDUCE_SUM_FORWARD);
  sum.info.reduce.count = 1;
  const ccv_nnc_tensor_symbol_t y = apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {x});
  const ccv_nnc_tensor_symbol_t f = apply(s.g, sum, {y});
  s.backward({f}, {x});
  const ccv_nnc_tensor_symbol_t df = ccv_nnc_tensor_symbol_for_backward(s.g, f);
  ASSERT_GE(df.d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(s.g, df) & CCV_NNC_TENSOR_SYMBOL_INIT_ONES, CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(s.g, y).d, CCV_NNC_NO_TENSOR_SYMBOL);  // neither f nor wrt

  Graph v;
  const ccv_nnc_tensor_symbol_t a = sym(v.g, {3}, "a");
  const ccv_nnc_tensor_symbol_t b = apply(v.g, cmd(CCV_NNC_TANH_FORWARD), {a});
  v.backward({b}, {a});
  const ccv_nnc_tensor_symbol_t db = ccv_nnc_tensor_symbol_for_backward(v.g, b);
  ASSERT_GE(db.d, 0);
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(v.g, db) & CCV_NNC_TENSOR_SYMBOL_INIT_ONES, 0);
  // The gradient's writer is TANH_BACKWARD reading only g and y (libnnc's bitmask), after the forward exec.
  const ccv_nnc_tensor_symbol_t da = ccv_nnc_tensor_symbol_for_backward(v.g, a);
  const ccv_nnc_graph_exec_symbol_t e = ccv_nnc_graph_exec_symbol_for_backward(v.g, da);
  ASSERT_GE(e.d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(v.g, e).cmd, static_cast<uint32_t>(CCV_NNC_TANH_BACKWARD));
  EXPECT_EQ(io(v.g, e, false), (std::vector<int>{db.d, CCV_NNC_NO_TENSOR_SYMBOL, b.d}));
  EXPECT_EQ(io(v.g, e, true), (std::vector<int>{da.d}));
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_for_backward(v.g, db).d, CCV_NNC_NO_GRAPH_EXEC_SYMBOL);  // the caller writes it
}

TEST(AutodiffApi, BackendOfTheForwardIsKept) {
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {3}, "x");
  ccv_nnc_cmd_t tanh_ref = cmd(CCV_NNC_TANH_FORWARD);
  tanh_ref.backend = CCV_NNC_BACKEND_CPU_REF;
  const ccv_nnc_tensor_symbol_t y = apply(s.g, tanh_ref, {x});
  s.backward({y}, {x});
  const ccv_nnc_graph_exec_symbol_t e = ccv_nnc_graph_exec_symbol_for_backward(s.g, ccv_nnc_tensor_symbol_for_backward(s.g, x));
  ASSERT_GE(e.d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(s.g, e).backend, static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF));
}

TEST(AutodiffApi, SharedValueGetsOneSumAndUnneededGradientsAreLeftOut) {
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {2, 3}, "x"), w = sym(s.g, {4, 3}, "w");
  ccv_nnc_cmd_t gemm = cmd(CCV_NNC_GEMM_FORWARD);
  gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
  gemm.info.blas.transpose_b[0] = 0;
  gemm.info.blas.transpose_b[1] = 1;
  const ccv_nnc_tensor_symbol_t y = apply(s.g, gemm, {x, w});                      // x read here
  const ccv_nnc_tensor_symbol_t z = apply(s.g, cmd(CCV_NNC_EWEXP_FORWARD), {x});  // and here
  ccv_nnc_cmd_t sum = cmd(CCV_NNC_REDUCE_SUM_FORWARD);
  sum.info.reduce.count = 2;
  sum.info.reduce.axis[1] = 1;
  const ccv_nnc_tensor_symbol_t f = apply(s.g, cmd(CCV_NNC_EWSUM_FORWARD), {apply(s.g, sum, {y}), apply(s.g, sum, {z})});
  s.backward({f}, {x});
  const ccv_nnc_tensor_symbol_t dx = ccv_nnc_tensor_symbol_for_backward(s.g, x);
  const ccv_nnc_graph_exec_symbol_t e = ccv_nnc_graph_exec_symbol_for_backward(s.g, dx);
  ASSERT_GE(e.d, 0);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(s.g, e).cmd, static_cast<uint32_t>(CCV_NNC_EWSUM_FORWARD));
  EXPECT_EQ(io(s.g, e, false).size(), 2u);
  // w is no wrt: GEMM_BACKWARD computes dx only (dw, db slots empty).
  for (int d : io(s.g, e, false)) {
    const ccv_nnc_graph_exec_symbol_t p = ccv_nnc_graph_exec_symbol_for_backward(s.g, {d, s.g});
    const uint32_t c = ccv_nnc_graph_exec_symbol_cmd(s.g, p).cmd;
    if (c != CCV_NNC_GEMM_BACKWARD) continue;
    const std::vector<int> out = io(s.g, p, true);
    ASSERT_GE(out.size(), 2u);
    EXPECT_EQ(out[0], d);
    EXPECT_EQ(out[1], CCV_NNC_NO_TENSOR_SYMBOL);
  }
}

// A value read by many execs (a weight at every step of an unrolled loop):
// its partial gradients are added as they arrive, each EWSUM of two, so no
// more than a running sum and one new part are alive; values against finite
// differences.
TEST(AutodiffApi, ManyReadersAccumulateAsTheyArrive) {
  auto build = [](ccv_nnc_symbolic_graph_t* g, const std::vector<ccv_nnc_tensor_symbol_t>& v) {
    ccv_nnc_tensor_symbol_t h = v[1];
    for (int step = 0; step < 5; step++) {
      ccv_nnc_cmd_t mul = cmd(CCV_NNC_MUL_FORWARD);
      mul.info.blas.a[0] = 1;
      h = apply(g, cmd(CCV_NNC_TANH_FORWARD), {apply(g, mul, {h, v[0]})});
    }
    ccv_nnc_cmd_t sum = cmd(CCV_NNC_REDUCE_SUM_FORWARD);
    sum.info.reduce.count = 1;
    return apply(g, sum, {h});
  };
  check_gradients({{{4}}, {{4}}}, build, 5, 1e-6, 1e-5, "w read 5 times");
  Graph s;
  const ccv_nnc_tensor_symbol_t w = sym(s.g, {4}, "w"), h0 = sym(s.g, {4}, "h0");
  const ccv_nnc_tensor_symbol_t f = build(s.g, {w, h0});
  const int before = ccv_nnc_graph_exec_symbol_count(s.g);
  s.backward({f}, {w});
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  int sums = 0;
  for (int e = before; e < ccv_nnc_graph_exec_symbol_count(s.g); e++)
    if (ccv_nnc_graph_exec_symbol_cmd(s.g, {e, s.g}).cmd == CCV_NNC_EWSUM_FORWARD) {
      sums++;
      EXPECT_EQ(io(s.g, {e, s.g}, false).size(), 2u);
    }
  EXPECT_EQ(sums, 4);
}

TEST(AutodiffApi, BadInput) {
  Graph s, other;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {3}, "x"), unused = sym(s.g, {3}, "unused");
  const ccv_nnc_tensor_symbol_t y = apply(s.g, cmd(CCV_NNC_SIGMOID_FORWARD), {x});
  const ccv_nnc_tensor_symbol_t foreign = sym(other.g, {3}, "foreign");
  const ccv_nnc_tensor_symbol_t label = sym(s.g, {3}, "label", CCV_32S);
  ccv_nnc_graph_exec_symbol_autogen(s.g, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const int execs = ccv_nnc_graph_exec_symbol_count(s.g), tensors = ccv_nnc_tensor_symbol_count(s.g);
  auto expect_refused = [&](std::vector<ccv_nnc_tensor_symbol_t> f, std::vector<ccv_nnc_tensor_symbol_t> wrt, const char* needle) {
    ccv_nnc_symbolic_graph_backward(s.g, f.data(), static_cast<int>(f.size()), wrt.data(), static_cast<int>(wrt.size()), nullptr, 0,
                                    nullptr, 0);
    EXPECT_TRUE(message_has(needle)) << ccv_nnc_error_message();
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(s.g), execs);
    EXPECT_EQ(ccv_nnc_tensor_symbol_count(s.g), tensors);
  };
  expect_refused({y}, {unused}, "is not reachable from the f symbols");
  expect_refused({y}, {x, unused}, "wrt_symbols[1]");
  expect_refused({foreign}, {x}, "another graph");
  expect_refused({y}, {foreign}, "another graph");
  expect_refused({}, {x}, "no f symbols");
  expect_refused({y}, {}, "no wrt symbols");
  ccv_nnc_symbolic_graph_backward(nullptr, &y, 1, &x, 1, nullptr, 0, nullptr, 0);
  EXPECT_TRUE(message_has("NULL"));
  ccv_nnc_tensor_symbol_free(s.g, unused);
  expect_refused({y}, {unused}, "was freed");
  // Integer symbols have no gradient.
  expect_refused({label}, {x}, "floating-point");
  // Nothing was recorded by the refused calls.
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(s.g, x).d, CCV_NNC_NO_TENSOR_SYMBOL);
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(s.g, foreign).d, CCV_NNC_NO_TENSOR_SYMBOL);
  EXPECT_TRUE(message_has("another graph"));
}

TEST(AutodiffApi, CommandWithoutBackwardIsNamed) {
  // An optimiser step used as a forward command: libnnc gives it no backward.
  Graph s;
  const ccv_nnc_tensor_symbol_t g = sym(s.g, {3}, "g"), a = sym(s.g, {3}, "a"), m = sym(s.g, {3}, "m");
  const ccv_nnc_tensor_symbol_t b = sym(s.g, {3}, "b"), n = sym(s.g, {3}, "n");
  ccv_nnc_cmd_t sgd = cmd(CCV_NNC_SGD_FORWARD);
  sgd.info.sgd.rate = 0.1f;
  sgd.info.sgd.scale = 1;
  exec(s.g, sgd, {g, a, m}, {b, n});
  const ccv_nnc_tensor_symbol_t f = apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {b});
  const int execs = ccv_nnc_graph_exec_symbol_count(s.g), tensors = ccv_nnc_tensor_symbol_count(s.g);
  s.backward({f}, {a});
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(s.g), execs);
  EXPECT_EQ(ccv_nnc_tensor_symbol_count(s.g), tensors);
  // The graph still compiles and runs as it did (no edge to a dropped exec left behind).
  ccv_nnc_graph_t* cg = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(s.g, ccv_nnc_default_compile_params, nullptr, 0, &f, 1, ccv_nnc_symbolic_graph_sources(s.g),
                                 ccv_nnc_symbolic_graph_source_size(s.g), ccv_nnc_symbolic_graph_destinations(s.g),
                                 ccv_nnc_symbolic_graph_destination_size(s.g), &cg, &ta, &ea);
  EXPECT_TRUE(cg && ta && ea) << ccv_nnc_error_message();
  ccv_nnc_graph_free(cg);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  s.backward({f}, {a});
  EXPECT_TRUE(message_has("SGD_FORWARD")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("no backward")) << ccv_nnc_error_message();
}

TEST(AutodiffApi, SubGraphsAndBackwardsAreRefused) {
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {3}, "x"), y = sym(s.g, {3}, "y");
  exec(s.g, cmd(CCV_NNC_GRAPH_FORWARD), {x}, {y});
  const ccv_nnc_tensor_symbol_t f = apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {y});
  s.backward({f}, {x});
  EXPECT_TRUE(message_has("not supported yet")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("exec symbol 0")) << ccv_nnc_error_message();

  // A real while loop whose body writes the enclosing graph's y from x, with
  // no expression yet (loop_test.cpp differentiates loops that have one).
  Graph w;
  const ccv_nnc_tensor_symbol_t wx = sym(w.g, {3}, "x"), wy = sym(w.g, {3}, "y");
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_graph_exec_symbol_t loop = ccv_nnc_symbolic_graph_while(w.g, CCV_NNC_GRAPH_FORWARD, body, "loop");
  ASSERT_GE(loop.d, 0) << ccv_nnc_error_message();
  exec(body, cmd(CCV_NNC_TANH_FORWARD), {wx}, {wy});
  const ccv_nnc_tensor_symbol_t wf = apply(w.g, cmd(CCV_NNC_TANH_FORWARD), {wy});
  const int before = ccv_nnc_graph_exec_symbol_count(w.g);
  w.backward({wf}, {wx});
  EXPECT_TRUE(message_has("has no expression")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("\"loop\"")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(w.g, wx).d, CCV_NNC_NO_TENSOR_SYMBOL);
  // TANH_BACKWARD of the last exec was made before the loop was met: dropped again.
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(w.g), before);

  // Second order: the gradient of a gradient crosses backward commands; one
  // without a second-order rule is named (second_order_test.cpp checks values).
  Graph t;
  const ccv_nnc_tensor_symbol_t a = sym(t.g, {3}, "a");
  const ccv_nnc_tensor_symbol_t b = apply(t.g, cmd(CCV_NNC_TANH_FORWARD), {a});
  t.backward({b}, {a});
  const ccv_nnc_tensor_symbol_t da = ccv_nnc_tensor_symbol_for_backward(t.g, a);
  ASSERT_GE(da.d, 0);
  t.backward({da}, {a});
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  EXPECT_GE(ccv_nnc_tensor_symbol_for_backward(t.g, a).d, 0);
  Graph m;
  const ccv_nnc_tensor_symbol_t ma = sym(m.g, {3}, "a"), mb = sym(m.g, {3}, "b");
  ccv_nnc_cmd_t largest = cmd(CCV_NNC_REDUCE_MAX_FORWARD);
  largest.info.reduce.axis[0] = 0;
  largest.info.reduce.count = 1;
  const ccv_nnc_tensor_symbol_t mc = apply(m.g, largest, {apply(m.g, cmd(CCV_NNC_EWPROD_FORWARD), {ma, mb})});
  m.backward({mc}, {ma});
  const ccv_nnc_tensor_symbol_t dma = ccv_nnc_tensor_symbol_for_backward(m.g, ma);
  ASSERT_GE(dma.d, 0) << ccv_nnc_error_message();
  m.backward({dma}, {ma});
  EXPECT_TRUE(message_has("REDUCE_MAX_BACKWARD")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("without a second-order rule")) << ccv_nnc_error_message();
}

TEST(AutodiffApi, MinimizerSavedAuxSize) {
  ccv_nnc_cmd_t c = cmd(CCV_NNC_SGD_FORWARD);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(c), 1);
  c = cmd(CCV_NNC_ADAM_FORWARD);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(c), 2);
  c.info.adam.amsgrad = 1;
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(c), 3);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(cmd(CCV_NNC_ADAMW_FORWARD)), 2);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(cmd(CCV_NNC_RMSPROP_FORWARD)), 2);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(cmd(CCV_NNC_LAMB_FORWARD)), 2);
  EXPECT_EQ(ccv_nnc_minimizer_saved_aux_size(cmd(CCV_NNC_RELU_FORWARD)), -1);
  EXPECT_TRUE(message_has("not a minimizer")) << ccv_nnc_error_message();
}

TEST(AutodiffApi, SplitGradientsAreWrittenInPlace) {
  // x [2, 6] read as two [2, 3] column blocks: each block's backward writes
  // straight into its place in x's zero-initialised gradient (no copies).
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {2, 6}, "x");
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {6, 1};
  const ccv_nnc_tensor_symbol_t left = ccv_nnc_tensor_symbol_alias_new(s.g, x, ofs, stride, param({2, 3}), "left");
  ofs[1] = 3;
  const ccv_nnc_tensor_symbol_t right = ccv_nnc_tensor_symbol_alias_new(s.g, x, ofs, stride, param({2, 3}), "right");
  const ccv_nnc_tensor_symbol_t f =
      apply(s.g, cmd(CCV_NNC_EWPROD_FORWARD), {apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {left}), apply(s.g, cmd(CCV_NNC_SIGMOID_FORWARD), {right})});
  s.backward({f}, {x});
  const ccv_nnc_tensor_symbol_t dx = ccv_nnc_tensor_symbol_for_backward(s.g, x);
  ASSERT_GE(dx.d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(s.g, dx) & CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
  int copies = 0, writers = 0;
  for (int e = 0; e < ccv_nnc_graph_exec_symbol_count(s.g); e++) {
    const ccv_nnc_cmd_t c = ccv_nnc_graph_exec_symbol_cmd(s.g, {e, s.g});
    copies += c.cmd == CCV_NNC_DATA_TRANSFER_FORWARD;
    for (int d : io(s.g, {e, s.g}, true)) {
      ccv_nnc_tensor_symbol_t o = {d, s.g};
      if (d >= 0 && ccv_nnc_tensor_symbol_alias_to(s.g, o).d == dx.d) writers++;
    }
  }
  EXPECT_EQ(copies, 0);
  EXPECT_EQ(writers, 2);  // TANH_BACKWARD and SIGMOID_BACKWARD, each into its block
}

TEST(AutodiffApi, HooksSeeEverySymbolAndExecMade) {
  struct Seen {
    int tensors = 0, aliases = 0, execs = 0;
    size_t elements = 0;
  } seen;
  Graph s;
  const ccv_nnc_tensor_symbol_t x = sym(s.g, {2, 6}, "x");
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 3}, stride[CCV_NNC_MAX_DIM_ALLOC] = {6, 1};
  const ccv_nnc_tensor_symbol_t right = ccv_nnc_tensor_symbol_alias_new(s.g, x, ofs, stride, param({2, 3}), "right");
  const ccv_nnc_tensor_symbol_t y = apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {x});
  const ccv_nnc_tensor_symbol_t f = apply(s.g, cmd(CCV_NNC_EWSUM_FORWARD), {apply(s.g, cmd(CCV_NNC_SIGMOID_FORWARD), {right}), apply(s.g, cmd(CCV_NNC_TANH_FORWARD), {right})});
  (void)y;
  const int tensors = ccv_nnc_tensor_symbol_count(s.g), execs = ccv_nnc_graph_exec_symbol_count(s.g);
  ccv_nnc_tensor_symbol_new_hook(
      s.g, [](void* c, const ccv_nnc_tensor_symbol_t, const ccv_nnc_tensor_param_t info, const char*) {
        static_cast<Seen*>(c)->tensors++;
        static_cast<Seen*>(c)->elements += count(info);  // the parameters must be readable
      },
      &seen, nullptr);
  ccv_nnc_tensor_symbol_alias_new_hook(
      s.g, [](void* c, const ccv_nnc_tensor_symbol_t, const ccv_nnc_tensor_symbol_t, const int*, const int*, const ccv_nnc_tensor_param_t info,
              const char*) {
        static_cast<Seen*>(c)->aliases++;
        static_cast<Seen*>(c)->elements += count(info);
      },
      &seen, nullptr);
  ccv_nnc_graph_exec_symbol_new_hook(
      s.g, [](void* c, const ccv_nnc_graph_exec_symbol_t, const ccv_nnc_cmd_t, const ccv_nnc_tensor_symbol_t*, const int,
              const ccv_nnc_tensor_symbol_t*, const int, const char*) { static_cast<Seen*>(c)->execs++; },
      &seen, nullptr);
  s.backward({f}, {x});
  ASSERT_GE(ccv_nnc_tensor_symbol_for_backward(s.g, x).d, 0) << ccv_nnc_error_message();
  EXPECT_EQ(seen.tensors + seen.aliases, ccv_nnc_tensor_symbol_count(s.g) - tensors);
  EXPECT_EQ(seen.execs, ccv_nnc_graph_exec_symbol_count(s.g) - execs);
  EXPECT_GT(seen.aliases, 0);
  EXPECT_GT(seen.elements, 0u);
}

}  // namespace
