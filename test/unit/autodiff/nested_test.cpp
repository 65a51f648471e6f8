// Level 3.5: the backward pass through nested control flow — a while loop in
// a while loop's body, a case..of in a while loop's body, a while loop in a
// case..of branch — against central finite differences of the same compiled
// graph (fp64); and the refusals for what stays unsupported.
//
// The backward of the outer construct recomputes its round (or branch) from
// what it taped, the inner construct included (a copy of it), and
// differentiates the inner construct inside the backward body with the same
// code, so these also check the copy: a wrong copy gives a wrong gradient.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autodiff_test_util.hpp"

using namespace adtest;

namespace {

using TS = ccv_nnc_tensor_symbol_t;
using ES = ccv_nnc_graph_exec_symbol_t;

// In `owner` (a graph or a loop body): v <- tanh(v U^T + add) for `limit` + 1
// rounds (breakpoint at the end), or `limit` rounds with a NOOP breakpoint
// first; v starts from v0 (a symbol of owner or above). Returns owner's
// symbol for the last v.
TS inner_loop(ccv_nnc_symbolic_graph_t* root, ccv_nnc_symbolic_graph_t* owner, TS u, TS add, TS v0, const int64_t* limit,
              bool noop_first, int n, ES* loop = nullptr) {
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const TS out = sym(owner, {1, n}, "v_out");
  const ES l = ccv_nnc_symbolic_graph_while(owner, CCV_NNC_GRAPH_FORWARD, body, "inner");
  EXPECT_GE(l.d, 0) << ccv_nnc_error_message();
  if (loop) *loop = l;
  const TS v = sym(body, {1, n}, "v");
  ccv_nnc_tensor_symbol_hookup(v0.graph == root ? root : owner, body, v0, v);
  ES noop{};
  if (noop_first) noop = exec(body, cmd(CCV_NNC_NOOP), {}, {});
  const TS a = sym(body, {1, n}, "va"), s = sym(body, {1, n}, "vs"), vn = sym(body, {1, n}, "v_next");
  const ES mm = exec(body, gemm_wt(), {v, u}, {a});
  exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {a, add}, {s});
  const ES act = exec(body, cmd(CCV_NNC_TANH_FORWARD), {s}, {vn});
  if (noop_first) ccv_nnc_graph_exec_symbol_concat(body, noop, mm);
  ccv_nnc_tensor_symbol_hookup(owner, body, out, vn);
  ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t carry{vn, v};
  ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
  const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
  ccv_nnc_symbolic_graph_set_while_expr(body, count_below, limit, &count, 1, noop_first ? &noop : &act, 1);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the inner loop";
  return out;
}

// Outer loop, 3 rounds: h <- tanh(h W^T + inner), where inner is the inner
// loop above run from v0 = x with add = h (so it reads the outer round's
// carried value, the root's U and x two levels up) for 3 (or 2, NOOP first)
// rounds.
TS while_in_while(ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in, bool inner_noop_first, const int64_t* inner_rounds = nullptr) {
  static const int64_t outer_limit = 2, default_inner = 2;
  const int64_t& inner_limit = inner_rounds ? *inner_rounds : default_inner;
  constexpr int n = 3;
  const TS w = in[0], u = in[1], x = in[2], h0 = in[3];
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const TS hout = sym(g, {1, n}, "h_out");
  EXPECT_GE(ccv_nnc_symbolic_graph_while(g, CCV_NNC_GRAPH_FORWARD, body, "outer").d, 0) << ccv_nnc_error_message();
  const TS h = sym(body, {1, n}, "h");
  ccv_nnc_tensor_symbol_hookup(g, body, h0, h);
  const TS v = inner_loop(g, body, u, h, x, &inner_limit, inner_noop_first, n);
  const TS b = sym(body, {1, n}, "b"), c = sym(body, {1, n}, "c"), hn = sym(body, {1, n}, "h_next");
  exec(body, gemm_wt(), {h, w}, {b});
  exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {b, v}, {c});
  const ES act = exec(body, cmd(CCV_NNC_TANH_FORWARD), {c}, {hn});
  ccv_nnc_tensor_symbol_hookup(g, body, hout, hn);
  ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t carry{hn, h};
  ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
  const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
  ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &outer_limit, &count, 1, &act, 1);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the outer loop";
  // x also outside the loop: its gradient sums both paths.
  const TS y = apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {hout, x});
  return apply(g, reduce_all(2), {y});
}

TEST(AutodiffNested, WhileInWhile) {
  for (int noop = 0; noop < 2; noop++)
    check_gradients({{{3, 3}}, {{3, 3}}, {{1, 3}}, {{1, 3}}},
                    [noop](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) { return while_in_while(g, in, noop); }, 41 + noop,
                    1e-6, 1e-5, noop ? "3 outer rounds, inner NOOP first (2 rounds)" : "3 outer rounds of a 3-round inner loop");
}

// An inner NOOP-first loop of one round: its backward's stopping round is
// its second, and the hand-outs there carry the only round's gradients.
TEST(AutodiffNested, InnerLoopOfOneRound) {
  static const int64_t one = 1;
  check_gradients({{{3, 3}}, {{3, 3}}, {{1, 3}}, {{1, 3}}},
                  [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) { return while_in_while(g, in, true, &one); }, 45,
                  1e-6, 1e-5, "inner loop of one round");
}

// Only some inputs: the inner loop's weights only, the initial state only.
TEST(AutodiffNested, WhileInWhileSomeInputs) {
  for (int which = 0; which < 2; which++) {
    std::vector<Input> inputs{{{3, 3}}, {{3, 3}}, {{1, 3}}, {{1, 3}}};
    inputs[0].wrt = inputs[2].wrt = false;
    inputs[1].wrt = which == 0;
    inputs[3].wrt = which == 1;
    check_gradients(inputs, [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) { return while_in_while(g, in, false); },
                    43 + which, 1e-6, 1e-5, which == 0 ? "U only" : "h0 only");
  }
}

// Three levels: 2 rounds of h <- tanh(h W^T + m_out), where m_out is 2 rounds
// of m <- tanh(m U^T + v_out) from h, and v_out the 3-round inner loop from x
// with add = m (reads the middle round's carried value, the outer round's
// through it, and the root's U and x three levels up).
TS three_levels(ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
  static const int64_t limit = 1, inner_limit = 2;
  constexpr int n = 3;
  const TS w = in[0], u = in[1], x = in[2], h0 = in[3];
  ccv_nnc_symbolic_graph_t* outer = ccv_nnc_symbolic_graph_new();
  const TS hout = sym(g, {1, n}, "h_out");
  ccv_nnc_symbolic_graph_while(g, CCV_NNC_GRAPH_FORWARD, outer, "outer");
  const TS h = sym(outer, {1, n}, "h");
  ccv_nnc_tensor_symbol_hookup(g, outer, h0, h);
  ccv_nnc_symbolic_graph_t* middle = ccv_nnc_symbolic_graph_new();
  const TS mout = sym(outer, {1, n}, "m_out");
  ccv_nnc_symbolic_graph_while(outer, CCV_NNC_GRAPH_FORWARD, middle, "middle");
  const TS m = sym(middle, {1, n}, "m");
  ccv_nnc_tensor_symbol_hookup(outer, middle, h, m);
  const TS v = inner_loop(g, middle, u, m, x, &inner_limit, false, n);
  const TS ma = sym(middle, {1, n}, "ma"), ms = sym(middle, {1, n}, "ms"), mn = sym(middle, {1, n}, "m_next");
  exec(middle, gemm_wt(), {m, u}, {ma});
  exec(middle, cmd(CCV_NNC_EWSUM_FORWARD), {ma, v}, {ms});
  const ES mact = exec(middle, cmd(CCV_NNC_TANH_FORWARD), {ms}, {mn});
  ccv_nnc_tensor_symbol_hookup(outer, middle, mout, mn);
  ccv_nnc_graph_exec_symbol_autogen(middle, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t mc{mn, m};
  ccv_nnc_symbolic_graph_set_carry_overs(middle, &mc, 1);
  const TS mcount = ccv_nnc_tensor_symbol_for_while_count(middle);
  ccv_nnc_symbolic_graph_set_while_expr(middle, count_below, &limit, &mcount, 1, &mact, 1);
  const TS b = sym(outer, {1, n}, "b"), c = sym(outer, {1, n}, "c"), hn = sym(outer, {1, n}, "h_next");
  exec(outer, gemm_wt(), {h, w}, {b});
  exec(outer, cmd(CCV_NNC_EWSUM_FORWARD), {b, mout}, {c});
  const ES act = exec(outer, cmd(CCV_NNC_TANH_FORWARD), {c}, {hn});
  ccv_nnc_tensor_symbol_hookup(g, outer, hout, hn);
  ccv_nnc_graph_exec_symbol_autogen(outer, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t oc{hn, h};
  ccv_nnc_symbolic_graph_set_carry_overs(outer, &oc, 1);
  const TS count = ccv_nnc_tensor_symbol_for_while_count(outer);
  ccv_nnc_symbolic_graph_set_while_expr(outer, count_below, &limit, &count, 1, &act, 1);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building three levels";
  return apply(g, reduce_all(2), {hout});
}

TEST(AutodiffNested, ThreeLevels) {
  check_gradients({{{3, 3}}, {{3, 3}}, {{1, 3}}, {{1, 3}}}, three_levels, 47, 1e-6, 1e-5, "while in while in while");
}

// c > 0: branch 0, else branch 1.
int by_sign(ccv_nnc_tensor_t* const* inputs, int, const void*) { return inputs[0]->data.f64[0] > 0 ? 0 : 1; }

// Outer loop, 4 rounds: a = h W^T + x; h <- case c of tanh(a * x) | sigmoid(a)
// with c <- -c carried beside h (c0 = 1: tanh, sigmoid, tanh, sigmoid).
TS case_in_while(ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
  static const int64_t limit = 3;
  constexpr int n = 4;
  const TS w = in[0], x = in[1], h0 = in[2], c0 = in[3];
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  const TS hout = sym(g, {1, n}, "h_out");
  EXPECT_GE(ccv_nnc_symbolic_graph_while(g, CCV_NNC_GRAPH_FORWARD, body, "outer").d, 0) << ccv_nnc_error_message();
  const TS h = sym(body, {1, n}, "h"), c = sym(body, {1}, "c");
  ccv_nnc_tensor_symbol_hookup(g, body, h0, h);
  ccv_nnc_tensor_symbol_hookup(g, body, c0, c);
  const TS b = sym(body, {1, n}, "b"), a = sym(body, {1, n}, "a"), cn = sym(body, {1}, "c_next"), y = sym(body, {1, n}, "y");
  exec(body, gemm_wt(), {h, w}, {b});
  exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {b, x}, {a});
  ccv_nnc_cmd_t negate = cmd(CCV_NNC_SCALAR_MUL_FORWARD);
  negate.info.blas.a[0] = -1;
  const ES flip = exec(body, negate, {c}, {cn});
  const ccv_nnc_tensor_symbol_map_t out{a, y};
  const ES pick = ccv_nnc_symbolic_graph_case_of_new(body, CCV_NNC_GRAPH_FORWARD, &c, 1, &out, 1, "tanh or sigmoid");
  EXPECT_GE(pick.d, 0) << ccv_nnc_error_message();
  ccv_nnc_symbolic_graph_set_case_of_expr(body, pick, by_sign, nullptr);
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  const TS ax = sym(b0, {1, n}, "ax"), y0 = sym(b0, {1, n}, "y0");
  const ccv_nnc_tensor_symbol_map_t m0{y0, y};
  ccv_nnc_symbolic_graph_set_case_of(body, pick, b0, 0, &m0, 1);
  exec(b0, cmd(CCV_NNC_EWPROD_FORWARD), {a, x}, {ax});  // x: a symbol of the root, two levels up
  exec(b0, cmd(CCV_NNC_TANH_FORWARD), {ax}, {y0});
  ccv_nnc_graph_exec_symbol_autogen(b0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_t* b1 = ccv_nnc_symbolic_graph_new();
  const TS y1 = sym(b1, {1, n}, "y1");
  const ccv_nnc_tensor_symbol_map_t m1{y1, y};
  ccv_nnc_symbolic_graph_set_case_of(body, pick, b1, 1, &m1, 1);
  exec(b1, cmd(CCV_NNC_SIGMOID_FORWARD), {a}, {y1});
  ccv_nnc_graph_exec_symbol_autogen(b1, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_graph_exec_symbol_concat(body, flip, pick);  // the breakpoint ends the round: everything before it
  ccv_nnc_tensor_symbol_hookup(g, body, hout, y);
  ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t carries[2] = {{y, h}, {cn, c}};
  ccv_nnc_symbolic_graph_set_carry_overs(body, carries, 2);
  const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
  ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, &count, 1, &pick, 1);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the loop";
  return apply(g, reduce_all(2), {hout});
}

TEST(AutodiffNested, CaseOfInWhile) {
  for (double c0 : {1.0, -1.0}) {  // tanh first, or sigmoid first
    std::vector<Input> inputs{{{4, 4}}, {{1, 4}}, {{1, 4}}, {{1}}};
    inputs[3].values = {c0};
    inputs[3].wrt = false;
    check_gradients(inputs, case_in_while, c0 > 0 ? 51 : 52, 1e-6, 1e-5,
                    c0 > 0 ? "4 rounds: tanh, sigmoid, tanh, sigmoid" : "4 rounds: sigmoid, tanh, sigmoid, tanh");
  }
}

// y = case s of (loop: 3 rounds of v <- tanh(v U^T + x) from v0 = x) | tanh(x U^T); f = sum(y * x).
TS while_in_case(ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
  static const int64_t limit = 2;
  constexpr int n = 3;
  const TS u = in[0], x = in[1], s = in[2];
  const TS y = sym(g, {1, n}, "y");
  const ccv_nnc_tensor_symbol_map_t out{x, y};
  const ES pick = ccv_nnc_symbolic_graph_case_of_new(g, CCV_NNC_GRAPH_FORWARD, &s, 1, &out, 1, "loop or not");
  ccv_nnc_symbolic_graph_set_case_of_expr(g, pick, by_sign, nullptr);
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_set_case_of(g, pick, b0, 0, nullptr, 0);
  const TS v = inner_loop(g, b0, u, x, x, &limit, false, n);
  const TS y0 = sym(b0, {1, n}, "y0");  // a copy: compile hands no inner loop's carried result further out
  exec(b0, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {v}, {y0});
  ccv_nnc_tensor_symbol_hookup(g, b0, y, y0);
  ccv_nnc_graph_exec_symbol_autogen(b0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_t* b1 = ccv_nnc_symbolic_graph_new();
  const TS p = sym(b1, {1, n}, "p"), y1 = sym(b1, {1, n}, "y1");
  const ccv_nnc_tensor_symbol_map_t m1{y1, y};
  ccv_nnc_symbolic_graph_set_case_of(g, pick, b1, 1, &m1, 1);
  exec(b1, gemm_wt(), {x, u}, {p});
  exec(b1, cmd(CCV_NNC_TANH_FORWARD), {p}, {y1});
  ccv_nnc_graph_exec_symbol_autogen(b1, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the case..of";
  return apply(g, reduce_all(2), {apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {y, x})});
}

TEST(AutodiffNested, WhileInCaseOf) {
  for (double sel : {1.0, -1.0}) {
    std::vector<Input> inputs{{{3, 3}}, {{1, 3}}, {{1}}};
    inputs[2].values = {sel};
    inputs[2].wrt = false;
    check_gradients(inputs, while_in_case, sel > 0 ? 61 : 62, 1e-6, 1e-5, sel > 0 ? "the branch with the loop" : "the other branch");
  }
}

// A case..of in a case..of branch: y = case s of (case r of tanh(x w) |
// sigmoid(x w)) | x w, f = sum(y * y * w); every path.
TS case_in_case(ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
  constexpr int n = 4;
  const TS x = in[0], w = in[1], s = in[2], r = in[3];
  const TS y = sym(g, {n}, "y");
  const ccv_nnc_tensor_symbol_map_t fall{x, y};
  const ES outer = ccv_nnc_symbolic_graph_case_of_new(g, CCV_NNC_GRAPH_FORWARD, &s, 1, &fall, 1, "outer");
  ccv_nnc_symbolic_graph_set_case_of_expr(g, outer, by_sign, nullptr);
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_set_case_of(g, outer, b0, 0, nullptr, 0);
  const TS xw = sym(b0, {n}, "xw"), z = sym(b0, {n}, "z"), y0 = sym(b0, {n}, "y0");
  exec(b0, cmd(CCV_NNC_EWPROD_FORWARD), {x, w}, {xw});
  const ccv_nnc_tensor_symbol_map_t inner_fall{xw, z};
  const TS rl = sym(b0, {1}, "r");  // the expression reads symbols of its own graph: r's stand-in
  ccv_nnc_tensor_symbol_hookup(g, b0, r, rl);
  const ES inner = ccv_nnc_symbolic_graph_case_of_new(b0, CCV_NNC_GRAPH_FORWARD, &rl, 1, &inner_fall, 1, "inner");
  ccv_nnc_symbolic_graph_set_case_of_expr(b0, inner, by_sign, nullptr);
  ccv_nnc_symbolic_graph_t* c0 = ccv_nnc_symbolic_graph_new();
  const TS z0 = sym(c0, {n}, "z0");
  const ccv_nnc_tensor_symbol_map_t m0{z0, z};
  ccv_nnc_symbolic_graph_set_case_of(b0, inner, c0, 0, &m0, 1);
  exec(c0, cmd(CCV_NNC_TANH_FORWARD), {xw}, {z0});
  ccv_nnc_graph_exec_symbol_autogen(c0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_t* c1 = ccv_nnc_symbolic_graph_new();
  const TS z1 = sym(c1, {n}, "z1");
  const ccv_nnc_tensor_symbol_map_t m1{z1, z};
  ccv_nnc_symbolic_graph_set_case_of(b0, inner, c1, 1, &m1, 1);
  exec(c1, cmd(CCV_NNC_SIGMOID_FORWARD), {xw}, {z1});
  ccv_nnc_graph_exec_symbol_autogen(c1, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  exec(b0, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {z}, {y0});  // a copy: the inner result handed out
  ccv_nnc_tensor_symbol_hookup(g, b0, y, y0);
  ccv_nnc_graph_exec_symbol_autogen(b0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_t* b1 = ccv_nnc_symbolic_graph_new();
  const TS y1 = sym(b1, {n}, "y1");
  const ccv_nnc_tensor_symbol_map_t mb{y1, y};
  ccv_nnc_symbolic_graph_set_case_of(g, outer, b1, 1, &mb, 1);
  exec(b1, cmd(CCV_NNC_EWPROD_FORWARD), {x, w}, {y1});
  ccv_nnc_graph_exec_symbol_autogen(b1, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the case..of";
  return apply(g, reduce_all(1), {apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {y, y, w})});
}

TEST(AutodiffNested, CaseOfInCaseOf) {
  const double picks[3][2] = {{1, 1}, {1, -1}, {-1, 1}};
  const char* names[] = {"outer 0, inner 0: tanh(x w)", "outer 0, inner 1: sigmoid(x w)", "outer 1: x w"};
  for (int k = 0; k < 3; k++) {
    std::vector<Input> inputs{{{4}}, {{4}}, {{1}}, {{1}}};
    inputs[2].values = {picks[k][0]};
    inputs[3].values = {picks[k][1]};
    inputs[2].wrt = inputs[3].wrt = false;
    check_gradients(inputs, case_in_case, 71 + static_cast<unsigned>(k), 1e-6, 1e-5, names[k]);
  }
}

// What stays refused, with a message, the graph and the loops' bodies left as
// they were: an inner loop whose carried value has no initial value from the
// enclosing graph (the recompute cannot know it), and an inner loop that
// draws random numbers (the recompute would draw others).
TEST(AutodiffNested, RefusedWithAMessage) {
  static const int64_t limit = 2;
  constexpr int n = 3;
  for (int which = 0; which < 2; which++) {
    Program p;
    const TS x0 = sym(p.sg, {1, n}, "x0"), out = sym(p.sg, {1, n}, "out");
    ccv_nnc_symbolic_graph_t* outer = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(p.sg, CCV_NNC_GRAPH_FORWARD, outer, "outer");
    const TS y = sym(outer, {1, n}, "y"), yo = sym(outer, {1, n}, "y_out");
    ccv_nnc_tensor_symbol_hookup(p.sg, outer, x0, y);
    ccv_nnc_symbolic_graph_t* inner = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(outer, CCV_NNC_GRAPH_FORWARD, inner, "inner");
    const TS v = sym(inner, {1, n}, "v"), s = sym(inner, {1, n}, "s"), vn = sym(inner, {1, n}, "vn");
    if (which == 1) ccv_nnc_tensor_symbol_hookup(outer, inner, y, v);
    exec(inner, cmd(CCV_NNC_EWSUM_FORWARD), {v, y}, {s});
    ES last;
    if (which == 0) {  // v carried, never hooked up: its first round reads whatever its tensor holds
      last = exec(inner, cmd(CCV_NNC_TANH_FORWARD), {s}, {vn});
    } else {
      ccv_nnc_cmd_t drop = cmd(CCV_NNC_DROPOUT_FORWARD);
      drop.info.dropout.p = 0.5f;
      last = exec(inner, drop, {s}, {vn, sym(inner, {1, n}, "mask")});
    }
    ccv_nnc_graph_exec_symbol_autogen(inner, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const TS yc = sym(outer, {1, n}, "y_copy");
    ccv_nnc_tensor_symbol_hookup(outer, inner, yo, vn);
    const ccv_nnc_tensor_symbol_map_t ic{vn, v};
    ccv_nnc_symbolic_graph_set_carry_overs(inner, &ic, 1);
    const TS icount = ccv_nnc_tensor_symbol_for_while_count(inner);
    ccv_nnc_symbolic_graph_set_while_expr(inner, count_below, &limit, &icount, 1, &last, 1);
    const ES copy = exec(outer, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {yo}, {yc});
    ccv_nnc_graph_exec_symbol_autogen(outer, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ccv_nnc_tensor_symbol_hookup(p.sg, outer, out, yc);
    const ccv_nnc_tensor_symbol_map_t oc{yc, y};
    ccv_nnc_symbolic_graph_set_carry_overs(outer, &oc, 1);
    const TS ocount = ccv_nnc_tensor_symbol_for_while_count(outer);
    ccv_nnc_symbolic_graph_set_while_expr(outer, count_below, &limit, &ocount, 1, &copy, 1);
    const TS f = apply(p.sg, reduce_all(2), {out});
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ASSERT_STREQ(ccv_nnc_error_message(), "") << "building";
    const int execs = ccv_nnc_graph_exec_symbol_count(p.sg), outer_execs = ccv_nnc_graph_exec_symbol_count(outer),
              inner_execs = ccv_nnc_graph_exec_symbol_count(inner);
    ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, &x0, 1, nullptr, 0, nullptr, 0);
    const std::string e = ccv_nnc_error_message();
    if (which == 0) {
      EXPECT_NE(e.find("a carried value with no initial value from the enclosing graph"), std::string::npos) << e;
      EXPECT_NE(e.find("\"v\""), std::string::npos) << e;
    } else {
      EXPECT_NE(e.find("draws random numbers"), std::string::npos) << e;
      EXPECT_NE(e.find("DROPOUT"), std::string::npos) << e;
    }
    EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(p.sg, x0).d, CCV_NNC_NO_TENSOR_SYMBOL);
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), execs) << "rolled back";
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(outer), outer_execs) << "the outer body untouched";
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(inner), inner_execs) << "the inner body untouched";
  }
}

}  // namespace
