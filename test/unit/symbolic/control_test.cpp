// Level 3.5: symbolic while loops and case..of, compiled into the concrete
// graph's loops and branches. Values against closed forms and double
// precision references; "no data moves between rounds" against the
// compiled loop itself (no copy nodes, no carried copies, multi-views).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "symbolic_test_util.hpp"

using namespace symtest;

namespace {

using TS = ccv_nnc_tensor_symbol_t;
using ES = ccv_nnc_graph_exec_symbol_t;
using MAP = ccv_nnc_tensor_symbol_map_t;

// Array arguments (the C easy macros build compound literals C++ lacks).
#define SL(...) std::vector<TS>{__VA_ARGS__}.data(), static_cast<int>(std::vector<TS>{__VA_ARGS__}.size())
#define EL(...) std::vector<ES>{__VA_ARGS__}.data(), static_cast<int>(std::vector<ES>{__VA_ARGS__}.size())
#define ML(...) std::vector<MAP>{__VA_ARGS__}.data(), static_cast<int>(std::vector<MAP>{__VA_ARGS__}.size())

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

ccv_nnc_cmd_t scalar_mul(float a) {
  ccv_nnc_cmd_t c = plain(CCV_NNC_SCALAR_MUL_FORWARD);
  c.info.blas.a[0] = a;
  return c;
}
ccv_nnc_cmd_t gemm_wt() {  // h W^T
  ccv_nnc_cmd_t c = plain(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = 1;
  c.info.blas.a[1] = 1;
  c.info.blas.transpose_b[0] = 0;
  c.info.blas.transpose_b[1] = 1;
  return c;
}

struct Compiled {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ~Compiled() {
    ccv_nnc_graph_free(g);
    ccv_nnc_tensor_arena_free(ta);
    ccv_nnc_graph_exec_arena_free(ea);
    ccv_nnc_symbolic_graph_free(sg);
  }
  bool compile(std::vector<TS> outputs = {}) {
    ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, outputs.data(), static_cast<int>(outputs.size()),
                                   nullptr, 0, nullptr, 0, &g, &ta, &ea);
    return g && ta && ea;
  }
  ccv_nnc_tensor_t* t(TS s) const { return ccv_nnc_tensor_from_symbol(ta, s); }
  int run() { return ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr); }
};

// Stops when the round counter reaches the limit in data.
int count_below(ccv_nnc_tensor_t* const* inputs, int input_size, const void* data) {
  EXPECT_EQ(input_size, 1);
  return inputs[0]->data.i64[0] < *static_cast<const int64_t*>(data);
}

void autogen(ccv_nnc_symbolic_graph_t* g) {
  ccv_nnc_graph_exec_symbol_autogen(g, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
}

// The concrete body of the only while node of a compiled graph.
ccv_nnc_graph_s* body_of(ccv_nnc_graph_t* g) {
  for (auto& n : g->nodes)
    if (n.kind == ccv_nnc_graph_s::Kind::While) return n.subs[0];
  return nullptr;
}

int copy_nodes(const ccv_nnc_graph_s* g) {
  int n = 0;
  for (const auto& node : g->nodes)
    n += node.cmd.cmd == CCV_NNC_DATA_TRANSFER_FORWARD || node.cmd.cmd == CCV_NNC_FORMAT_TRANSFORM_FORWARD;
  return n;
}

// z = y * x in a loop, y carried from z: after the loop z = y0 * x^(rounds).
TEST(SymbolicWhile, CarriedProductAgainstClosedForm) {
  Compiled c;
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_graph_exec_symbol_t loop = ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "loop");
  ASSERT_GE(loop.d, 0) << last_error();
  const TS x = ccv_nnc_tensor_symbol_new(c.sg, f32(3), "x");
  const TS y = ccv_nnc_tensor_symbol_new(body, f32(3), "y");
  const TS z = ccv_nnc_tensor_symbol_new(body, f32(3), "z");
  const ccv_nnc_graph_exec_symbol_t prod =
      ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWPROD_FORWARD), SL(y, x), SL(z), "prod");
  ASSERT_GE(prod.d, 0) << last_error();
  autogen(body);
  ccv_nnc_symbolic_graph_set_carry_overs(body, ML(MAP{z, y}));
  static const int64_t limit = 4;  // rounds 0..4 compute z: five products
  ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, SL(ccv_nnc_tensor_symbol_for_while_count(body)),
                                        EL(prod));
  EXPECT_EQ(ccv_nnc_symbolic_graph_from_while_symbol(c.sg, loop), body);
  // The loop reads x through a stand-in hooked up to the root's symbol.
  const TS x_in = ccv_nnc_tensor_symbol_resolve(body, x);
  ASSERT_GE(x_in.d, 0);
  EXPECT_EQ(x_in.graph, body);
  EXPECT_EQ(ccv_nnc_tensor_symbol_resolve(c.sg, x_in).d, x.d);
  const int* in;
  int in_size;
  const int* out;
  int out_size;
  ccv_nnc_graph_exec_symbol_io(c.sg, loop, &in, &in_size, &out, &out_size);
  ASSERT_EQ(in_size, 1);
  EXPECT_EQ(in[0], x.d);
  EXPECT_EQ(out_size, 0);
  autogen(c.sg);
  ASSERT_TRUE(c.compile()) << last_error();
  const float xv[3] = {0.5f, -1.25f, 1.1f}, yv[3] = {2.f, 0.75f, -3.f};
  for (int trial = 0; trial < 2; trial++) {  // the first round's value is the caller's each run
    for (int i = 0; i < 3; i++) {
      c.t(x)->data.f32[i] = xv[i];
      c.t(y)->data.f32[i] = yv[i];
    }
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (int i = 0; i < 3; i++) EXPECT_NEAR(c.t(z)->data.f32[i], yv[i] * std::pow(xv[i], 5.0), 1e-5 * (1 + std::fabs(yv[i])));
    EXPECT_EQ(ccv_nnc_tensor_from_symbol(c.ta, ccv_nnc_tensor_symbol_for_while_count(body))->data.i64[0], 4);
  }
  ccv_nnc_graph_s* b = body_of(c.g);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(copy_nodes(b), 0);
  EXPECT_TRUE(b->carry_overs.empty());  // carried through multi-views, not copies
  EXPECT_EQ(b->carry_copies, 0u);
  // z is rebound round by round over more than one buffer.
  const ccv_nnc_tensor_t* zin = b->nodes[0].outputs[0];
  EXPECT_TRUE(CCV_IS_TENSOR_MULTIVIEW(zin));
}

// h <- tanh(W h + x) five times, with W, x and h0 of the root graph, the
// result handed back to the root (hooked up) and read there.
TEST(SymbolicWhile, RecurrenceAgainstDoubleReference) {
  constexpr int n = 7;
  Compiled c;
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const TS w = ccv_nnc_tensor_symbol_new(c.sg, f32(n, n), "W");
  const TS x = ccv_nnc_tensor_symbol_new(c.sg, f32(1, n), "x");
  const TS h0 = ccv_nnc_tensor_symbol_new(c.sg, f32(1, n), "h0");
  const TS hout = ccv_nnc_tensor_symbol_new(c.sg, f32(1, n), "h_out");
  const TS doubled = ccv_nnc_tensor_symbol_new(c.sg, kAuto, "doubled");
  const ccv_nnc_graph_exec_symbol_t loop = ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "rnn");
  ASSERT_GE(loop.d, 0) << last_error();
  const TS h = ccv_nnc_tensor_symbol_new(body, f32(1, n), "h");
  ccv_nnc_tensor_symbol_hookup(c.sg, body, h0, h);
  const TS a = ccv_nnc_tensor_symbol_new(body, kAuto, "a");
  const TS s = ccv_nnc_tensor_symbol_new(body, kAuto, "s");
  const TS hn = ccv_nnc_tensor_symbol_new(body, f32(1, n), "h_next");
  ccv_nnc_graph_exec_symbol_new(body, gemm_wt(), SL(h, w), SL(a), "Wh");
  ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWSUM_FORWARD), SL(a, x), SL(s), "+x");
  const ccv_nnc_graph_exec_symbol_t act =
      ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_TANH_FORWARD), SL(s), SL(hn), "tanh");
  ASSERT_GE(act.d, 0) << last_error();
  ccv_nnc_tensor_symbol_hookup(c.sg, body, hout, hn);
  autogen(body);
  ccv_nnc_symbolic_graph_set_carry_overs(body, ML(MAP{hn, h}));
  static const int64_t limit = 4;
  ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, SL(ccv_nnc_tensor_symbol_for_while_count(body)),
                                        EL(act));
  ccv_nnc_graph_exec_symbol_new(c.sg, scalar_mul(2), SL(hout), SL(doubled), "x2");
  ASSERT_STREQ(last_error().c_str(), "") << "no call above failed";
  autogen(c.sg);
  // The loop reads W, x and h0 and writes h_out.
  const int* in;
  int in_size;
  const int* out;
  int out_size;
  ccv_nnc_graph_exec_symbol_io(c.sg, loop, &in, &in_size, &out, &out_size);
  EXPECT_EQ(in_size, 3);
  ASSERT_EQ(out_size, 1);
  EXPECT_EQ(out[0], hout.d);
  ASSERT_TRUE(c.compile({doubled})) << last_error();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  std::vector<double> W(n * n), X(n), H(n);
  for (int i = 0; i < n * n; i++) W[static_cast<size_t>(i)] = c.t(w)->data.f32[i] = u(rng);
  for (int i = 0; i < n; i++) {
    X[static_cast<size_t>(i)] = c.t(x)->data.f32[i] = u(rng);
    H[static_cast<size_t>(i)] = c.t(h0)->data.f32[i] = u(rng);
  }
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int r = 0; r < 5; r++) {
    std::vector<double> next(n);
    for (int i = 0; i < n; i++) {
      double acc = X[static_cast<size_t>(i)];
      for (int k = 0; k < n; k++) acc += W[static_cast<size_t>(i * n + k)] * H[static_cast<size_t>(k)];
      next[static_cast<size_t>(i)] = std::tanh(acc);
    }
    H = next;
  }
  for (int i = 0; i < n; i++) {
    EXPECT_NEAR(c.t(hout)->data.f32[i], H[static_cast<size_t>(i)], 1e-5) << i;
    EXPECT_NEAR(c.t(doubled)->data.f32[i], 2 * H[static_cast<size_t>(i)], 2e-5) << i;
  }
  // h0 is the caller's and survives the run (round 0 reads it, later rounds other buffers).
  EXPECT_EQ(c.t(h0)->data.f32[0], static_cast<float>(static_cast<double>(c.t(h0)->data.f32[0])));
  ccv_nnc_graph_s* b = body_of(c.g);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(copy_nodes(b), 0);
  EXPECT_EQ(b->carry_copies, 0u);
  // Running again from the same h0 gives the same result.
  const float first = c.t(doubled)->data.f32[3];
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(c.t(doubled)->data.f32[3], first);
  // Exec symbols of the body map to nodes of the concrete body.
  const ccv_nnc_graph_exec_t node = ccv_nnc_graph_exec_from_symbol(c.ea, act);
  EXPECT_EQ(node.graph, b);
}

// Newton's iteration for sqrt(a), stopped by the values themselves: the
// expression reads a body symbol; a body constant (h = 0.5) is the caller's
// to fill and keeps its value across runs.
int not_converged(ccv_nnc_tensor_t* const* inputs, int input_size, const void*) {
  EXPECT_EQ(input_size, 2);
  const float x = inputs[0]->data.f32[0], a = inputs[1]->data.f32[0];
  return std::fabs(x * x - a) > 1e-5f * a;
}

TEST(SymbolicWhile, StopsOnItsValues) {
  Compiled c;
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const TS a = ccv_nnc_tensor_symbol_new(c.sg, f32(1), "a");
  const TS x0 = ccv_nnc_tensor_symbol_new(c.sg, f32(1), "x0");
  ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "newton");
  const TS x = ccv_nnc_tensor_symbol_new(body, f32(1), "x");
  ccv_nnc_tensor_symbol_hookup(c.sg, body, x0, x);
  const TS h = ccv_nnc_tensor_symbol_new(body, f32(1), "half");
  const TS q = ccv_nnc_tensor_symbol_new(body, kAuto, "a/x");
  const TS sum = ccv_nnc_tensor_symbol_new(body, kAuto, "x+a/x");
  const TS xn = ccv_nnc_tensor_symbol_new(body, kAuto, "x_next");
  ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWDIV_FORWARD), SL(a, x), SL(q), "div");
  ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWSUM_FORWARD), SL(x, q), SL(sum), "sum");
  const ES last = ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWPROD_FORWARD), SL(sum, h), SL(xn), "half");
  ASSERT_GE(last.d, 0) << last_error();
  autogen(body);
  ccv_nnc_symbolic_graph_set_carry_overs(body, ML(MAP{xn, x}));
  ccv_nnc_symbolic_graph_set_while_expr(body, not_converged, nullptr, SL(xn, a), EL(last));
  autogen(c.sg);
  ASSERT_TRUE(c.compile({xn})) << last_error();
  c.t(h)->data.f32[0] = 0.5f;
  for (const float av : {2.f, 10.f, 0.25f}) {
    c.t(a)->data.f32[0] = av;
    c.t(x0)->data.f32[0] = 1.f;
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    EXPECT_NEAR(c.t(xn)->data.f32[0], std::sqrt(av), 1e-5 * std::sqrt(av)) << av;
    const int64_t rounds = ccv_nnc_tensor_from_symbol(c.ta, ccv_nnc_tensor_symbol_for_while_count(body))->data.i64[0];
    EXPECT_GT(rounds, 0);
    EXPECT_LT(rounds, 10);  // quadratic convergence from 1
    EXPECT_EQ(c.t(h)->data.f32[0], 0.5f);
    EXPECT_EQ(c.t(x0)->data.f32[0], 1.f);  // the first round's value is not overwritten
  }
}

// y = case x[0] of > 0: 2x | in (-1, 0]: exp(x) | otherwise: x itself (the bypass).
int branch_of(ccv_nnc_tensor_t* const* inputs, int input_size, const void*) {
  EXPECT_EQ(input_size, 1);
  const float v = inputs[0]->data.f32[0];
  return v > 0 ? 0 : v > -1 ? 1 : -1;
}

TEST(SymbolicCaseOf, BranchesAndBypassAgainstClosedForm) {
  Compiled c;
  const TS x = ccv_nnc_tensor_symbol_new(c.sg, f32(4), "x");
  const TS y = ccv_nnc_tensor_symbol_new(c.sg, f32(4), "y");
  const TS z = ccv_nnc_tensor_symbol_new(c.sg, kAuto, "z");
  const ccv_nnc_graph_exec_symbol_t cs =
      ccv_nnc_symbolic_graph_case_of_new(c.sg, CCV_NNC_GRAPH_FORWARD, SL(x), ML(MAP{x, y}), "case");
  ASSERT_GE(cs.d, 0) << last_error();
  ccv_nnc_symbolic_graph_set_case_of_expr(c.sg, cs, branch_of, nullptr);
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  const TS y0 = ccv_nnc_tensor_symbol_new(b0, f32(4), "y0");
  ccv_nnc_graph_exec_symbol_new(b0, scalar_mul(2), SL(x), SL(y0), "2x");
  ccv_nnc_symbolic_graph_t* b1 = ccv_nnc_symbolic_graph_new();
  const TS y1 = ccv_nnc_tensor_symbol_new(b1, f32(4), "y1");
  ccv_nnc_graph_exec_symbol_new(b1, plain(CCV_NNC_EWEXP_FORWARD), SL(x), SL(y1), "exp");
  // Branches may name the root's x before they are attached? No: attach first, then name it.
  EXPECT_NE(last_error(), "");  // b0 / b1 were not attached yet: naming x there was refused
  ccv_nnc_symbolic_graph_set_case_of(c.sg, cs, b0, 0, ML(MAP{y0, y}));
  ccv_nnc_symbolic_graph_set_case_of(c.sg, cs, b1, 1, ML(MAP{y1, y}));
  ccv_nnc_graph_exec_symbol_new(b0, scalar_mul(2), SL(x), SL(y0), "2x");
  ccv_nnc_graph_exec_symbol_new(b1, plain(CCV_NNC_EWEXP_FORWARD), SL(x), SL(y1), "exp");
  ccv_nnc_graph_exec_symbol_new(c.sg, scalar_mul(3), SL(y), SL(z), "3y");
  autogen(b0);
  autogen(b1);
  autogen(c.sg);
  ASSERT_TRUE(c.compile({z, y})) << last_error();
  const float cases[3][4] = {{0.5f, -2.f, 3.f, 0.f}, {-0.5f, 1.f, 0.25f, -3.f}, {-1.5f, 2.f, -0.5f, 7.f}};
  for (const auto& v : cases) {
    for (int i = 0; i < 4; i++) c.t(x)->data.f32[i] = v[i];
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (int i = 0; i < 4; i++) {
      const double yv = v[0] > 0 ? 2.0 * v[i] : v[0] > -1 ? std::exp(static_cast<double>(v[i])) : v[i];
      EXPECT_NEAR(c.t(z)->data.f32[i], 3 * yv, 1e-5 * (1 + std::fabs(yv))) << v[0] << " " << i;
      EXPECT_NEAR(c.t(y)->data.f32[i], yv, 1e-5 * (1 + std::fabs(yv)));
    }
  }
}

// A case..of inside a loop, and a loop inside that loop: y is halved when
// its first element is above 4 (else it passes through), then multiplied by
// x three times by the inner loop; the outer loop carries the result.
int above_4(ccv_nnc_tensor_t* const* inputs, int, const void*) { return inputs[0]->data.f32[0] > 4 ? 0 : -1; }

TEST(SymbolicWhile, NestedCaseOfAndLoop) {
  Compiled c;
  const TS x = ccv_nnc_tensor_symbol_new(c.sg, f32(2), "x");
  ccv_nnc_symbolic_graph_t* outer = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, outer, "outer");
  const TS y = ccv_nnc_tensor_symbol_new(outer, f32(2), "y");
  const TS y2 = ccv_nnc_tensor_symbol_new(outer, f32(2), "y2");
  const TS z = ccv_nnc_tensor_symbol_new(outer, f32(2), "z");
  const ES cs = ccv_nnc_symbolic_graph_case_of_new(outer, CCV_NNC_GRAPH_FORWARD, SL(y), ML(MAP{y, y2}), "halve?");
  ASSERT_GE(cs.d, 0) << last_error();
  ccv_nnc_symbolic_graph_set_case_of_expr(outer, cs, above_4, nullptr);
  ccv_nnc_symbolic_graph_t* half = ccv_nnc_symbolic_graph_new();
  const TS h = ccv_nnc_tensor_symbol_new(half, f32(2), "h");
  ccv_nnc_symbolic_graph_set_case_of(outer, cs, half, 0, ML(MAP{h, y2}));
  ccv_nnc_graph_exec_symbol_new(half, scalar_mul(0.5f), SL(y), SL(h), "0.5y");
  autogen(half);
  // The inner loop: v carried from w = v * x, starting from y2, three products.
  ccv_nnc_symbolic_graph_t* inner = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_while(outer, CCV_NNC_GRAPH_FORWARD, inner, "inner");
  const TS v = ccv_nnc_tensor_symbol_new(inner, f32(2), "v");
  ccv_nnc_tensor_symbol_hookup(outer, inner, y2, v);
  const TS w = ccv_nnc_tensor_symbol_new(inner, f32(2), "w");
  const ES mul = ccv_nnc_graph_exec_symbol_new(inner, plain(CCV_NNC_EWPROD_FORWARD), SL(v, x), SL(w), "v*x");
  ASSERT_GE(mul.d, 0) << last_error();
  autogen(inner);
  ccv_nnc_symbolic_graph_set_carry_overs(inner, ML(MAP{w, v}));
  static const int64_t inner_limit = 2, outer_limit = 2;
  ccv_nnc_symbolic_graph_set_while_expr(inner, count_below, &inner_limit, SL(ccv_nnc_tensor_symbol_for_while_count(inner)), EL(mul));
  // The inner result, copied (scaled by 1) into z, which the outer loop carries.
  const TS w_out = ccv_nnc_tensor_symbol_new(outer, f32(2), "w_out");
  ccv_nnc_tensor_symbol_hookup(outer, inner, w_out, w);
  const ES last = ccv_nnc_graph_exec_symbol_new(outer, scalar_mul(1), SL(w_out), SL(z), "z");
  ASSERT_GE(last.d, 0) << last_error();
  autogen(outer);
  ccv_nnc_symbolic_graph_set_carry_overs(outer, ML(MAP{z, y}));
  ccv_nnc_symbolic_graph_set_while_expr(outer, count_below, &outer_limit, SL(ccv_nnc_tensor_symbol_for_while_count(outer)), EL(last));
  autogen(c.sg);
  // DOT shows the sub-graphs as clusters beside the nodes that run them.
  {
    char* text = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    ccv_nnc_symbolic_graph_dot(c.sg, CCV_NNC_LONG_DOT_GRAPH, f);
    std::fclose(f);
    const std::string dot(text, size);
    std::free(text);
    EXPECT_NE(dot.find("subgraph cluster0_0_ {"), std::string::npos) << dot;  // the outer body
    EXPECT_NE(dot.find("label=\"branch 0\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("v*x"), std::string::npos) << dot;  // a node of the inner body
    EXPECT_NE(dot.find("case..of"), std::string::npos) << dot;
  }
  ASSERT_TRUE(c.compile({z})) << last_error();
  const float xv[2] = {1.5f, -0.5f}, yv[2] = {1.f, 2.f};
  for (int trial = 0; trial < 2; trial++) {
    for (int i = 0; i < 2; i++) c.t(x)->data.f32[i] = xv[i];
    for (int i = 0; i < 2; i++) c.t(y)->data.f32[i] = yv[i];
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    double Y[2] = {yv[0], yv[1]}, Z[2] = {0, 0};
    for (int r = 0; r <= outer_limit; r++) {
      const bool halve = Y[0] > 4;
      for (int i = 0; i < 2; i++) {
        const double y2v = halve ? 0.5 * Y[i] : Y[i];
        Z[i] = y2v * std::pow(static_cast<double>(xv[i]), 3.0);
      }
      Y[0] = Z[0], Y[1] = Z[1];
    }
    for (int i = 0; i < 2; i++) EXPECT_NEAR(c.t(z)->data.f32[i], Z[i], 1e-5 * (1 + std::fabs(Z[i]))) << trial << " " << i;
  }
}

// ccv_nnc_tensor_symbol_alias_set moves an alias (checked like a new one);
// _set_copy / _copy record counterparts on other devices.
TEST(SymbolicGraphSymbols, AliasSetAndCopies) {
  Compiled c;
  const TS base = ccv_nnc_tensor_symbol_new(c.sg, f32(4, 4), "base");
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {4, 1};
  const TS top = ccv_nnc_tensor_symbol_alias_new(c.sg, base, ofs, stride, f32(2, 4), "top");
  ofs[0] = 2;
  const TS bottom = ccv_nnc_tensor_symbol_alias_new(c.sg, base, ofs, stride, f32(2, 4), "bottom");
  ofs[0] = 0;
  const TS row = ccv_nnc_tensor_symbol_alias_new(c.sg, base, ofs, stride, f32(1, 4), "row");
  const TS src = ccv_nnc_tensor_symbol_new(c.sg, f32(2, 4), "src");
  const TS out = ccv_nnc_tensor_symbol_new(c.sg, kAuto, "out");
  ccv_nnc_graph_exec_symbol_new(c.sg, scalar_mul(1), SL(src), SL(top), "top = src");
  ccv_nnc_graph_exec_symbol_new(c.sg, scalar_mul(2), SL(src), SL(bottom), "bottom = 2 src");
  ccv_nnc_graph_exec_symbol_new(c.sg, scalar_mul(1), SL(row), SL(out), "out = row");
  // Moving bottom onto top's rows breaks SSA: refused, nothing changed.
  ofs[0] = 1;
  EXPECT_EQ(ccv_nnc_tensor_symbol_alias_set(c.sg, bottom, ofs, stride), -1);
  EXPECT_NE(last_error().find("SSA"), std::string::npos) << last_error();
  int got_ofs[CCV_NNC_MAX_DIM_ALLOC], got_stride[CCV_NNC_MAX_DIM_ALLOC];
  ASSERT_EQ(ccv_nnc_tensor_symbol_alias_params(c.sg, bottom, got_ofs, got_stride), 0);
  EXPECT_EQ(got_ofs[0], 2);
  // Outside the base, or not an alias.
  ofs[0] = 3;
  EXPECT_EQ(ccv_nnc_tensor_symbol_alias_set(c.sg, bottom, ofs, stride), -1);
  EXPECT_NE(last_error().find("outside"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_symbol_alias_set(c.sg, base, ofs, stride), -1);
  // The reader's row moves to the last row: the compiled graph reads there.
  EXPECT_EQ(ccv_nnc_tensor_symbol_alias_set(c.sg, row, ofs, stride), 0) << last_error();
  autogen(c.sg);
  ASSERT_TRUE(c.compile({out})) << last_error();
  for (int i = 0; i < 8; i++) c.t(src)->data.f32[i] = static_cast<float>(i + 1);
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int j = 0; j < 4; j++) EXPECT_EQ(c.t(out)->data.f32[j], 2.f * static_cast<float>(4 + j + 1)) << j;
  // Copies.
  EXPECT_EQ(ccv_nnc_tensor_symbol_copy(c.sg, src, 1).d, CCV_NNC_NO_TENSOR_SYMBOL);
  ccv_nnc_tensor_symbol_set_copy(c.sg, src, 1, out);
  EXPECT_EQ(ccv_nnc_tensor_symbol_copy(c.sg, src, 1).d, out.d);
  EXPECT_EQ(ccv_nnc_tensor_symbol_copy(c.sg, src, 2).d, CCV_NNC_NO_TENSOR_SYMBOL);
  ccv_nnc_tensor_symbol_set_copy(c.sg, src, 1, TS{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
  EXPECT_EQ(ccv_nnc_tensor_symbol_copy(c.sg, src, 1).d, CCV_NNC_NO_TENSOR_SYMBOL);
  const ES e0{0, c.sg}, e1{1, c.sg};
  ccv_nnc_graph_exec_symbol_set_copy(c.sg, e0, 3, e1);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_copy(c.sg, e0, 3).d, 1);
  ccv_nnc_graph_exec_symbol_set_copy(c.sg, e0, 3, ES{7, c.sg});
  EXPECT_NE(last_error().find("does not exist"), std::string::npos) << last_error();
}

// One arena holds one kind of memory: CPU and GPU symbols together are
// refused with a message (bind one side); GPU symbols without CUDA, too.
// (Symbols on several GPUs get an arena per device: test_fakegpu.)
TEST(SymbolicGraphSymbols, ArenaHoldsOneKindOfMemory) {
  ccv_nnc_tensor_param_t gpu = f32(4);
  gpu.type = CCV_TENSOR_GPU_MEMORY;
  {
    Compiled c;
    const TS a = ccv_nnc_tensor_symbol_new(c.sg, f32(4), "a");
    const TS b = ccv_nnc_tensor_symbol_new(c.sg, gpu, "b");
    const TS y = ccv_nnc_tensor_symbol_new(c.sg, f32(4), "y");
    const TS z = ccv_nnc_tensor_symbol_new(c.sg, gpu, "z");
    ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(a), SL(y), "cpu");
    ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(b), SL(z), "gpu");
    autogen(c.sg);
    EXPECT_FALSE(c.compile({y, z}));
    EXPECT_NE(last_error().find("one arena holds one kind of memory"), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("\"a\""), std::string::npos) << last_error();  // names the symbols
    EXPECT_NE(last_error().find("\"b\""), std::string::npos) << last_error();
  }
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0) {
    Compiled c;
    const TS b = ccv_nnc_tensor_symbol_new(c.sg, gpu, "b");
    const TS z = ccv_nnc_tensor_symbol_new(c.sg, gpu, "z");
    ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(b), SL(z), "gpu");
    autogen(c.sg);
    EXPECT_FALSE(c.compile({z}));
    EXPECT_NE(last_error().find("GPU"), std::string::npos) << last_error();
  }
}

TEST(SymbolicWhile, MistakesAreReported) {
  // A body that writes what is carried into it.
  {
    Compiled c;
    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "loop");
    const TS a = ccv_nnc_tensor_symbol_new(body, f32(2), "a");
    const TS b = ccv_nnc_tensor_symbol_new(body, f32(2), "b");
    const TS k = ccv_nnc_tensor_symbol_new(body, f32(2), "k");
    const ccv_nnc_graph_exec_symbol_t e1 =
        ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWPROD_FORWARD), SL(k, k), SL(a), "e1");
    ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWPROD_FORWARD), SL(a, k), SL(b), "e2");
    autogen(body);
    ccv_nnc_symbolic_graph_set_carry_overs(body, ML(MAP{b, a}));
    static const int64_t limit = 2;
    ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, SL(ccv_nnc_tensor_symbol_for_while_count(body)),
                                          EL(e1));
    autogen(c.sg);
    EXPECT_FALSE(c.compile());
    EXPECT_NE(last_error().find("which the body also writes"), std::string::npos) << last_error();
  }
  // No expression.
  {
    Compiled c;
    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "loop");
    const TS a = ccv_nnc_tensor_symbol_new(body, f32(2), "a");
    const TS b = ccv_nnc_tensor_symbol_new(body, f32(2), "b");
    ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWEXP_FORWARD), SL(a), SL(b), "e");
    autogen(c.sg);
    EXPECT_FALSE(c.compile());
    EXPECT_NE(last_error().find("has no expression"), std::string::npos) << last_error();
  }
  // Symbols and graphs used where they do not belong.
  {
    Compiled c;
    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_t* stranger = ccv_nnc_symbolic_graph_new();
    const TS s = ccv_nnc_tensor_symbol_new(stranger, f32(2), "s");
    ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "loop");
    const TS a = ccv_nnc_tensor_symbol_new(body, f32(2), "a");
    // A symbol of an unrelated graph in the body.
    const ccv_nnc_graph_exec_symbol_t bad =
        ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWEXP_FORWARD), SL(s), SL(a), "bad");
    EXPECT_LT(bad.d, 0);
    EXPECT_NE(last_error().find("another graph"), std::string::npos) << last_error();
    // The body's symbol in the root: not visible there.
    const TS r = ccv_nnc_tensor_symbol_new(c.sg, f32(2), "r");
    const ccv_nnc_graph_exec_symbol_t bad2 =
        ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(a), SL(r), "bad2");
    EXPECT_LT(bad2.d, 0);
    // Attaching the body twice, or a graph to itself.
    EXPECT_LT(ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_GRAPH_FORWARD, body, "again").d, 0);
    EXPECT_NE(last_error().find("already belongs"), std::string::npos) << last_error();
    EXPECT_LT(ccv_nnc_symbolic_graph_while(body, CCV_NNC_GRAPH_FORWARD, c.sg, "cycle").d, 0);
    // A wrong command, the counter outside a loop, freeing a body directly.
    ccv_nnc_symbolic_graph_t* other = ccv_nnc_symbolic_graph_new();
    EXPECT_LT(ccv_nnc_symbolic_graph_while(c.sg, CCV_NNC_EWSUM_FORWARD, other, "cmd").d, 0);
    EXPECT_EQ(ccv_nnc_tensor_symbol_for_while_count(other).d, CCV_NNC_NO_TENSOR_SYMBOL);
    EXPECT_NE(last_error().find("not the body of a while loop"), std::string::npos) << last_error();
    ccv_nnc_symbolic_graph_free(body);
    EXPECT_NE(last_error().find("free the graph that owns it"), std::string::npos) << last_error();
    // Compiling a body on its own.
    ccv_nnc_graph_t* g = nullptr;
    ccv_nnc_tensor_arena_t* ta = nullptr;
    ccv_nnc_graph_exec_arena_t* ea = nullptr;
    ccv_nnc_symbolic_graph_compile(body, ccv_nnc_default_compile_params, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, &g, &ta, &ea);
    EXPECT_EQ(g, nullptr);
    EXPECT_NE(last_error().find("compile the graph that owns it"), std::string::npos) << last_error();
    // A second writer of a root symbol: the loop writes it already.
    const TS out = ccv_nnc_tensor_symbol_new(c.sg, f32(2), "out");
    ccv_nnc_graph_exec_symbol_new(body, plain(CCV_NNC_EWEXP_FORWARD), SL(a), SL(out), "writes out");
    EXPECT_STREQ(last_error().c_str(), "");
    const ccv_nnc_graph_exec_symbol_t second =
        ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(r), SL(out), "second");
    EXPECT_LT(second.d, 0);
    EXPECT_NE(last_error().find("SSA"), std::string::npos) << last_error();
    // Not supported yet, and said so.
    EXPECT_EQ(ccv_nnc_symbolic_graph_dup(c.sg, nullptr), nullptr);
    EXPECT_NE(last_error().find("not supported yet"), std::string::npos) << last_error();
    int passes[] = {CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
    ccv_nnc_symbolic_graph_simplify(body, passes, 1, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0);
    EXPECT_NE(last_error().find("simplify the graph that owns it"), std::string::npos) << last_error();
    // Freeing the loop's exec symbol frees its body (the sanitizer build checks) and its writes.
    ccv_nnc_graph_exec_symbol_free(c.sg, ES{0, c.sg});
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), SL(r), SL(out), "now the only writer").d >= 0, true)
        << last_error();
    ccv_nnc_symbolic_graph_free(other);
    ccv_nnc_symbolic_graph_free(stranger);
  }
}

}  // namespace
