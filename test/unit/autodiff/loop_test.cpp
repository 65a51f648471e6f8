// Level 3.5: the backward pass through symbolic while loops. Gradients of
// loops against central finite differences of the same compiled graph (fp64),
// with the breakpoints ending the body (every round counts) and guarding
// only the expression (libnnc's NOOP-first loops: the last round stops at
// the breakpoint); what the tape keeps; refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autodiff_test_util.hpp"
#include "graph/graph.hpp"
#include "symbolic/loop_tape.hpp"

using namespace adtest;

namespace {

using TS = ccv_nnc_tensor_symbol_t;
using ES = ccv_nnc_graph_exec_symbol_t;

struct Rnn {
  ccv_nnc_symbolic_graph_t* body = nullptr;
  ES loop{};
  TS out{};
};

// h <- tanh(h W^T + x) for rounds; hout = the last h. With `noop_first`, the
// breakpoint is a NOOP before everything (libnnc's style: the expression is
// checked first, `limit` rounds run); otherwise it is the tanh (limit + 1
// rounds run, the last one checked at its end).
Rnn rnn(ccv_nnc_symbolic_graph_t* g, TS w, TS x, TS h0, const int64_t* limit, bool noop_first, int n) {
  Rnn r;
  r.body = ccv_nnc_symbolic_graph_new();
  r.out = sym(g, {1, n}, "h_out");
  r.loop = ccv_nnc_symbolic_graph_while(g, CCV_NNC_GRAPH_FORWARD, r.body, "rnn");
  EXPECT_GE(r.loop.d, 0) << ccv_nnc_error_message();
  const TS h = sym(r.body, {1, n}, "h");
  ccv_nnc_tensor_symbol_hookup(g, r.body, h0, h);
  ES noop{};
  if (noop_first) noop = exec(r.body, cmd(CCV_NNC_NOOP), {}, {});
  const TS a = sym(r.body, {1, n}, "a"), s = sym(r.body, {1, n}, "s"), hn = sym(r.body, {1, n}, "h_next");
  const ES mm = exec(r.body, gemm_wt(), {h, w}, {a});
  exec(r.body, cmd(CCV_NNC_EWSUM_FORWARD), {a, x}, {s});
  const ES act = exec(r.body, cmd(CCV_NNC_TANH_FORWARD), {s}, {hn});
  if (noop_first) ccv_nnc_graph_exec_symbol_concat(r.body, noop, mm);
  ccv_nnc_tensor_symbol_hookup(g, r.body, r.out, hn);
  ccv_nnc_graph_exec_symbol_autogen(r.body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t carry{hn, h};
  ccv_nnc_symbolic_graph_set_carry_overs(r.body, &carry, 1);
  const TS count = ccv_nnc_tensor_symbol_for_while_count(r.body);
  ccv_nnc_symbolic_graph_set_while_expr(r.body, count_below, limit, &count, 1, noop_first ? &noop : &act, 1);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the loop";
  return r;
}

TEST(AutodiffWhile, RecurrenceEveryRoundCounts) {
  static const int64_t limit = 4;  // 5 rounds
  constexpr int n = 5;
  check_gradients({{{n, n}}, {{1, n}}, {{1, n}}},
                  [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                    const Rnn r = rnn(g, in[0], in[1], in[2], &limit, false, n);
                    return apply(g, reduce_all(2), {r.out});
                  },
                  3, 1e-6, 1e-5, "tanh RNN, 5 rounds, breakpoint at the end");
}

TEST(AutodiffWhile, RecurrenceNoopFirstAndVectorSeed) {
  static const int64_t limit = 5;  // 5 rounds, the sixth stops at the NOOP
  constexpr int n = 4;
  for (int noop = 0; noop < 2; noop++)
  check_gradients({{{n, n}}, {{1, n}}, {{1, n}}},
                  [noop](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                    const Rnn r = rnn(g, in[0], in[1], in[2], &limit, noop, n);
                    ccv_nnc_cmd_t twice = cmd(CCV_NNC_SCALAR_MUL_FORWARD);
                    twice.info.blas.a[0] = 2;
                    // f is a vector: the check seeds it with random weights.
                    return apply(g, twice, {r.out});
                  },
                  5, 1e-6, 1e-5, noop ? "tanh RNN, NOOP breakpoint first, vector f" : "tanh RNN, vector f");
}

TEST(AutodiffWhile, OnlyTheInitialStateOrOnlyTheWeights) {
  static const int64_t limit = 3;
  constexpr int n = 3;
  for (int which = 0; which < 2; which++) {
    std::vector<Input> inputs{{{n, n}}, {{1, n}}, {{1, n}}};
    inputs[0].wrt = which == 0;
    inputs[1].wrt = false;
    inputs[2].wrt = which == 1;
    check_gradients(inputs,
                    [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                      const Rnn r = rnn(g, in[0], in[1], in[2], &limit, false, n);
                      return apply(g, reduce_all(2), {r.out});
                    },
                    7 + which, 1e-6, 1e-5, which == 0 ? "W only" : "h0 only");
  }
}

// The loop's result also feeds the rest of the graph, beside a value
// computed from the same inputs outside the loop.
TEST(AutodiffWhile, LoopInsideALargerGraph) {
  static const int64_t limit = 6;  // 7 rounds
  constexpr int n = 3;
  check_gradients({{{n, n}}, {{1, n}}, {{1, n}}},
                  [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                    const TS x2 = apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {in[1], in[1]});
                    const Rnn r = rnn(g, in[0], x2, in[2], &limit, false, n);
                    const TS y = apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {r.out, in[1]});
                    const TS z = apply(g, gemm_wt(), {y, in[0]});
                    return apply(g, reduce_all(2), {z});
                  },
                  11, 1e-6, 1e-5, "x squared into the loop, its result times x through W");
}

// The gradients of f = sum(h_rounds) against a double-precision reference of
// the recurrence and its adjoint.
void against_reference(const int64_t* limit_ptr, int rounds, int n, bool check_tape, bool noop_first = false, double scale = 1) {
  const int64_t& limit = *limit_ptr;
  (void)limit;
  Program p;
  const TS w = sym(p.sg, {n, n}, "W"), x = sym(p.sg, {1, n}, "x"), h0 = sym(p.sg, {1, n}, "h0");
  const Rnn r = rnn(p.sg, w, x, h0, limit_ptr, noop_first, n);
  TS y = r.out;
  if (scale != 1) {
    ccv_nnc_cmd_t times = cmd(CCV_NNC_SCALAR_MUL_FORWARD);
    times.info.blas.a[0] = static_cast<float>(scale);
    y = apply(p.sg, times, {r.out});
  }
  const TS f = apply(p.sg, reduce_all(2), {y});
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const TS wrt[] = {w, x, h0};
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, wrt, 3, ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg));
  ASSERT_STREQ(ccv_nnc_error_message(), "");
  const TS dw = ccv_nnc_tensor_symbol_for_backward(p.sg, w), dx = ccv_nnc_tensor_symbol_for_backward(p.sg, x),
           dh0 = ccv_nnc_tensor_symbol_for_backward(p.sg, h0);
  ASSERT_TRUE(dw.d >= 0 && dx.d >= 0 && dh0.d >= 0) << ccv_nnc_error_message();
  ASSERT_TRUE(p.compile({}, {f, dw, dx, dh0})) << ccv_nnc_error_message();
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < n * n; i++) p.of(w)->data.f64[i] = u(rng);
  for (int i = 0; i < n; i++) p.of(x)->data.f64[i] = u(rng), p.of(h0)->data.f64[i] = u(rng);
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // The gradient against a double-precision reference of the recurrence and its adjoint.
  std::vector<double> W(n * n), X(n);
  for (int i = 0; i < n * n; i++) W[i] = p.of(w)->data.f64[i];
  for (int i = 0; i < n; i++) X[i] = p.of(x)->data.f64[i];
  std::vector<std::vector<double>> H{std::vector<double>(p.of(h0)->data.f64, p.of(h0)->data.f64 + n)};
  for (int t = 0; t < rounds; t++) {
    std::vector<double> next(n);
    for (int i = 0; i < n; i++) {
      double acc = X[i];
      for (int k = 0; k < n; k++) acc += W[i * n + k] * H.back()[k];
      next[i] = std::tanh(acc);
    }
    H.push_back(next);
  }
  std::vector<double> g(n, scale), gW(n * n, 0), gX(n, 0);
  for (int t = rounds; t >= 1; t--) {
    std::vector<double> gs(n), gh(n, 0);
    for (int i = 0; i < n; i++) gs[i] = g[i] * (1 - H[t][i] * H[t][i]);
    for (int i = 0; i < n; i++) {
      gX[i] += gs[i];
      for (int k = 0; k < n; k++) {
        gW[i * n + k] += gs[i] * H[t - 1][k];
        gh[k] += gs[i] * W[i * n + k];
      }
    }
    g = gh;
  }
  for (int i = 0; i < n * n; i++) EXPECT_NEAR(p.of(dw)->data.f64[i], gW[i], 1e-12) << "dW " << i;
  for (int i = 0; i < n; i++) {
    EXPECT_NEAR(p.of(dx)->data.f64[i], gX[i], 1e-12) << "dx " << i;
    EXPECT_NEAR(p.of(dh0)->data.f64[i], g[i], 1e-12) << "dh0 " << i;
  }
  if (!check_tape) return;
  // The compiled graph owns one tape: 20 rounds of one value, h (n doubles).
  ASSERT_EQ(p.g->owned.size(), 1u);
  const auto* tape = static_cast<const nnc::symbolic::LoopTape*>(p.g->owned[0].get());
  EXPECT_EQ(tape->values, 1u);
  EXPECT_EQ(tape->recorded, 20u);
  for (size_t r = 0; r < tape->recorded; r++) {
    ASSERT_EQ(tape->rounds[r].size(), 1u);
    EXPECT_EQ(tape->rounds[r][0].size(), n * sizeof(double));
  }
  // A second run gives the same gradients (the tape starts over).
  const double first = p.of(dw)->data.f64[7];
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(p.of(dw)->data.f64[7], first);
  EXPECT_EQ(tape->recorded, 20u);
}

TEST(AutodiffWhile, AgainstAReferenceForFewRounds) {
  static const int64_t limits[] = {0, 1, 2, 3, 4, 5};  // NOOP-first with limit 0 runs no round: see NoRoundGivesZeros
  for (int k = 0; k < 6; k++) {
    SCOPED_TRACE(k + 1);
    against_reference(&limits[k], k + 1, 3, false);
    if (k > 0) against_reference(&limits[k], k, 3, false, true);
    if (k > 0) against_reference(&limits[k], k, 3, false, true, 2);
    if (k > 0) against_reference(&limits[k], k, 4, false, true, 2);
    against_reference(&limits[k], k + 1, 3, false, false, 2);
  }
}

// 20 rounds: the tape holds the carried-in value of each round and nothing
// else (the rest of a round is recomputed from it).
TEST(AutodiffWhile, TapeKeepsOnlyTheRoundsInputs) {
  static const int64_t limit = 19;
  against_reference(&limit, 20, 6, true);
}

TEST(AutodiffWhile, RefusedWithAMessage) {
  static const int64_t limit = 3;
  constexpr int n = 3;
  {  // a random command in the body
    Program p;
    const TS w = sym(p.sg, {n, n}, "W"), h0 = sym(p.sg, {1, n}, "h0"), out = sym(p.sg, {1, n}, "out");
    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(p.sg, CCV_NNC_GRAPH_FORWARD, body, "noisy");
    const TS h = sym(body, {1, n}, "h"), a = sym(body, {1, n}, "a"), hn = sym(body, {1, n}, "hn"), mask = sym(body, {1, n}, "mask");
    ccv_nnc_tensor_symbol_hookup(p.sg, body, h0, h);
    exec(body, gemm_wt(), {h, w}, {a});
    ccv_nnc_cmd_t drop = cmd(CCV_NNC_DROPOUT_FORWARD);
    drop.info.dropout.p = 0.5f;
    const ES last = exec(body, drop, {a}, {hn, mask});
    ccv_nnc_tensor_symbol_hookup(p.sg, body, out, hn);
    ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const ccv_nnc_tensor_symbol_map_t carry{hn, h};
    ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
    const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
    ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, &count, 1, &last, 1);
    const TS f = apply(p.sg, reduce_all(2), {out});
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const int execs_before = ccv_nnc_graph_exec_symbol_count(p.sg);
    const int body_execs_before = ccv_nnc_graph_exec_symbol_count(body);
    ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, &w, 1, nullptr, 0, nullptr, 0);
    const std::string e = ccv_nnc_error_message();
    EXPECT_NE(e.find("draws random numbers"), std::string::npos) << e;
    EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(p.sg, w).d, CCV_NNC_NO_TENSOR_SYMBOL);
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), execs_before) << "rolled back";
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(body), body_execs_before) << "the body untouched";
  }
}

// A loop whose body is another loop and a copy of its result (once refused):
// 4 outer rounds of 4 inner rounds of tanh, so out = tanh applied 16 times to x0; the gradient
// against the chain rule in double (test/unit/autodiff/nested_test.cpp has
// the finite-difference checks of nested loops and branches).
TEST(AutodiffWhile, ALoopInsideALoop) {
  static const int64_t limit = 3;
  constexpr int n = 3;
  {
    Program p;
    const TS x0 = sym(p.sg, {1, n}, "x0"), out = sym(p.sg, {1, n}, "out");
    ccv_nnc_symbolic_graph_t* outer = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(p.sg, CCV_NNC_GRAPH_FORWARD, outer, "outer");
    const TS y = sym(outer, {1, n}, "y");
    ccv_nnc_tensor_symbol_hookup(p.sg, outer, x0, y);
    ccv_nnc_symbolic_graph_t* inner = ccv_nnc_symbolic_graph_new();
    ccv_nnc_symbolic_graph_while(outer, CCV_NNC_GRAPH_FORWARD, inner, "inner");
    const TS v = sym(inner, {1, n}, "v"), vn = sym(inner, {1, n}, "vn"), yo = sym(outer, {1, n}, "y_out");
    ccv_nnc_tensor_symbol_hookup(outer, inner, y, v);
    const ES t = exec(inner, cmd(CCV_NNC_TANH_FORWARD), {v}, {vn});
    ccv_nnc_tensor_symbol_hookup(outer, inner, yo, vn);
    const ccv_nnc_tensor_symbol_map_t ic{vn, v};
    ccv_nnc_symbolic_graph_set_carry_overs(inner, &ic, 1);
    const TS icount = ccv_nnc_tensor_symbol_for_while_count(inner);
    ccv_nnc_symbolic_graph_set_while_expr(inner, count_below, &limit, &icount, 1, &t, 1);
    // The inner loop's carried result copied (compile hands none further out).
    const TS yc = sym(outer, {1, n}, "y_copy");
    const ES copy = exec(outer, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {yo}, {yc});
    ccv_nnc_graph_exec_symbol_autogen(outer, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ccv_nnc_tensor_symbol_hookup(p.sg, outer, out, yc);
    const ccv_nnc_tensor_symbol_map_t oc{yc, y};
    ccv_nnc_symbolic_graph_set_carry_overs(outer, &oc, 1);
    const TS ocount = ccv_nnc_tensor_symbol_for_while_count(outer);
    ccv_nnc_symbolic_graph_set_while_expr(outer, count_below, &limit, &ocount, 1, &copy, 1);
    const TS f = apply(p.sg, reduce_all(2), {out});
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, &x0, 1, nullptr, 0, nullptr, 0);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    const TS dx0 = ccv_nnc_tensor_symbol_for_backward(p.sg, x0);
    ASSERT_GE(dx0.d, 0);
    ASSERT_TRUE(p.compile({}, {f, dx0})) << ccv_nnc_error_message();
    const double start[n] = {0.9, -0.4, 0.25};
    for (int i = 0; i < n; i++) p.of(x0)->data.f64[i] = start[i];
    ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    double sum = 0;
    for (int i = 0; i < n; i++) {
      double v = start[i], d = 1;
      for (int k = 0; k < 16; k++) {
        v = std::tanh(v);
        d *= 1 - v * v;
      }
      sum += v;
      EXPECT_NEAR(p.of(dx0)->data.f64[i], d, 1e-12) << i;
    }
    EXPECT_NEAR(p.of(f)->data.f64[0], sum, 1e-12);
  }
}

}  // namespace
namespace {

// The forward loop alone (lib/graph's run): with the breakpoint first, the
// stopping round runs only the NOOP, so a carried result handed out must be
// the previous round's. Reading h after h_next is written keeps both alive,
// so the body is unrolled and the stopping round's slot is a stale one.
TEST(AutodiffWhile, CarriedResultAfterAStoppedRound) {
  constexpr int n = 3;
  for (int64_t limit = 1; limit <= 5; limit++) {
    SCOPED_TRACE(limit);
    Program p;
    const TS w = sym(p.sg, {n, n}, "W"), x = sym(p.sg, {1, n}, "x"), h0 = sym(p.sg, {1, n}, "h0");
    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
    const TS hout = sym(p.sg, {1, n}, "h_out"), sout = sym(p.sg, {1, n}, "sum_out");
    ccv_nnc_symbolic_graph_while(p.sg, CCV_NNC_GRAPH_FORWARD, body, "rnn");
    const TS h = sym(body, {1, n}, "h"), a = sym(body, {1, n}, "a"), s = sym(body, {1, n}, "s"), hn = sym(body, {1, n}, "hn"),
             both = sym(body, {1, n}, "hn + h");
    ccv_nnc_tensor_symbol_hookup(p.sg, body, h0, h);
    const ES noop = exec(body, cmd(CCV_NNC_NOOP), {}, {});
    const ES mm = exec(body, gemm_wt(), {h, w}, {a});
    exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {a, x}, {s});
    exec(body, cmd(CCV_NNC_TANH_FORWARD), {s}, {hn});
    exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {hn, h}, {both});
    ccv_nnc_graph_exec_symbol_concat(body, noop, mm);
    ccv_nnc_tensor_symbol_hookup(p.sg, body, hout, hn);
    ccv_nnc_tensor_symbol_hookup(p.sg, body, sout, both);
    ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const ccv_nnc_tensor_symbol_map_t carry{hn, h};
    ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
    const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
    ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, &count, 1, &noop, 1);
    ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ASSERT_TRUE(p.compile({}, {hout, sout})) << ccv_nnc_error_message();
    std::mt19937 rng(static_cast<unsigned>(limit));
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> W(n * n), X(n), H(n), prev(n);
    for (int i = 0; i < n * n; i++) W[i] = p.of(w)->data.f64[i] = u(rng);
    for (int i = 0; i < n; i++) X[i] = p.of(x)->data.f64[i] = u(rng), H[i] = p.of(h0)->data.f64[i] = u(rng);
    for (int run = 0; run < 2; run++) {
      ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      std::vector<double> hr = H;
      for (int64_t t = 0; t < limit; t++) {
        prev = hr;
        std::vector<double> next(n);
        for (int i = 0; i < n; i++) {
          double acc = X[i];
          for (int k = 0; k < n; k++) acc += W[i * n + k] * hr[k];
          next[i] = std::tanh(acc);
        }
        hr = next;
      }
      for (int i = 0; i < n; i++) {
        EXPECT_NEAR(p.of(hout)->data.f64[i], hr[i], 1e-12) << "h_out " << i << " run " << run;
        EXPECT_NEAR(p.of(sout)->data.f64[i], hr[i] + prev[i], 1e-12) << "sum_out " << i << " run " << run;
      }
    }
  }
}

// Gradients of the same loop (h read after h_next: an unrolled body) through
// its handed-out values.
TEST(AutodiffWhile, UnrolledBodyNoopFirst) {
  static const int64_t limit = 4;
  constexpr int n = 3;
  check_gradients({{{n, n}}, {{1, n}}, {{1, n}}},
                  [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                    ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
                    const TS hout = sym(g, {1, n}, "h_out"), sout = sym(g, {1, n}, "sum_out");
                    ccv_nnc_symbolic_graph_while(g, CCV_NNC_GRAPH_FORWARD, body, "rnn");
                    const TS h = sym(body, {1, n}, "h"), a = sym(body, {1, n}, "a"), s = sym(body, {1, n}, "s"),
                             hn = sym(body, {1, n}, "hn"), both = sym(body, {1, n}, "hn * h");
                    ccv_nnc_tensor_symbol_hookup(g, body, in[2], h);
                    const ES noop = exec(body, cmd(CCV_NNC_NOOP), {}, {});
                    const ES mm = exec(body, gemm_wt(), {h, in[0]}, {a});
                    exec(body, cmd(CCV_NNC_EWSUM_FORWARD), {a, in[1]}, {s});
                    exec(body, cmd(CCV_NNC_TANH_FORWARD), {s}, {hn});
                    exec(body, cmd(CCV_NNC_EWPROD_FORWARD), {hn, h}, {both});
                    ccv_nnc_graph_exec_symbol_concat(body, noop, mm);
                    ccv_nnc_tensor_symbol_hookup(g, body, hout, hn);
                    ccv_nnc_tensor_symbol_hookup(g, body, sout, both);
                    ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0,
                                                      CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
                    const ccv_nnc_tensor_symbol_map_t carry{hn, h};
                    ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
                    const TS count = ccv_nnc_tensor_symbol_for_while_count(body);
                    ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, &count, 1, &noop, 1);
                    const TS y = apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {hout, sout});
                    return apply(g, reduce_all(2), {y});
                  },
                  13, 1e-6, 1e-5, "h_out * (h_n * h_{n-1})");
}

}  // namespace

namespace {

// Branch on a[0]: above 0.5 branch 0, below -0.5 branch 1, else none (y
// falls back to a).
int pick(ccv_nnc_tensor_t* const* inputs, int, const void*) {
  const double v = inputs[0]->data.f64[0];
  return v > 0.5 ? 0 : v < -0.5 ? 1 : -1;
}

// y = case a of a * w | tanh(w * w) + a | a; f = sum(y * y * w).
TS case_of_program(ccv_nnc_symbolic_graph_t* g, TS a, TS w, std::vector<int> dims = {4}) {
  const TS y = sym(g, dims, "y");
  const ccv_nnc_tensor_symbol_map_t out{a, y};
  const ES c = ccv_nnc_symbolic_graph_case_of_new(g, CCV_NNC_GRAPH_FORWARD, &a, 1, &out, 1, "case..of");
  EXPECT_GE(c.d, 0) << ccv_nnc_error_message();
  ccv_nnc_symbolic_graph_set_case_of_expr(g, c, pick, nullptr);
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  const TS y0 = sym(b0, dims, "y0");
  const ccv_nnc_tensor_symbol_map_t m0{y0, y};
  ccv_nnc_symbolic_graph_set_case_of(g, c, b0, 0, &m0, 1);
  exec(b0, cmd(CCV_NNC_EWPROD_FORWARD), {a, w}, {y0});
  ccv_nnc_graph_exec_symbol_autogen(b0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_symbolic_graph_t* b1 = ccv_nnc_symbolic_graph_new();
  const TS y1 = sym(b1, dims, "y1"), ww = sym(b1, dims, "ww"), t = sym(b1, dims, "t");
  const ccv_nnc_tensor_symbol_map_t m1{y1, y};
  ccv_nnc_symbolic_graph_set_case_of(g, c, b1, 1, &m1, 1);
  exec(b1, cmd(CCV_NNC_EWPROD_FORWARD), {w, w}, {ww});
  exec(b1, cmd(CCV_NNC_TANH_FORWARD), {ww}, {t});
  exec(b1, cmd(CCV_NNC_EWSUM_FORWARD), {t, a}, {y1});
  ccv_nnc_graph_exec_symbol_autogen(b1, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const TS yy = apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {y, y, w});
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "building the case..of";
  return apply(g, reduce_all(static_cast<int>(dims.size())), {yy});
}

TEST(AutodiffCaseOf, EachPathAgainstFiniteDifferences) {
  const std::vector<std::vector<double>> selectors{{0.9, 0.3, -0.2, 0.7}, {-0.8, 0.4, 0.1, -0.6}, {0.2, -0.3, 0.6, 0.5}};
  const char* names[] = {"branch 0: a * w", "branch 1: tanh(w * w) + a", "no branch: a"};
  for (size_t k = 0; k < selectors.size(); k++) {
    std::vector<Input> inputs{{{4}}, {{4}}};
    inputs[0].values = selectors[k];
    check_gradients(inputs, [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) { return case_of_program(g, in[0], in[1]); },
                    21 + static_cast<unsigned>(k), 1e-6, 1e-5, names[k]);
  }
}

// A loop whose result feeds a case..of: both backward passes in one graph.
TEST(AutodiffCaseOf, AfterALoop) {
  static const int64_t limit = 2;
  constexpr int n = 4;
  for (double sel : {1.8, -1.8, 0.0}) {
    std::vector<Input> inputs{{{n, n}}, {{1, n}}, {{1, n}}, {{1, n}}};
    inputs[3].values = {sel, 0.5, -0.5, 0.25};  // a[0] = h[0] + sel picks the branch (|h| < 1)
    inputs[3].wrt = false;
    check_gradients(inputs,
                    [](ccv_nnc_symbolic_graph_t* g, const std::vector<TS>& in) {
                      const Rnn r = rnn(g, in[0], in[1], in[2], &limit, false, n);
                      const TS a = apply(g, cmd(CCV_NNC_EWSUM_FORWARD), {r.out, in[3]});
                      return case_of_program(g, a, apply(g, cmd(CCV_NNC_EWPROD_FORWARD), {in[3], in[1]}), {1, n});
                    },
                    31, 1e-6, 1e-5, "RNN then case..of");
  }
}

}  // namespace

namespace {

TEST(AutodiffCaseOf, RefusedWithAMessage) {
  Program p;
  const TS a = sym(p.sg, {4}, "a"), y = sym(p.sg, {4}, "y");
  const ccv_nnc_tensor_symbol_map_t out{a, y};
  const ES c = ccv_nnc_symbolic_graph_case_of_new(p.sg, CCV_NNC_GRAPH_FORWARD, &a, 1, &out, 1, "noisy");
  ccv_nnc_symbolic_graph_t* b0 = ccv_nnc_symbolic_graph_new();
  const TS y0 = sym(b0, {4}, "y0"), mask = sym(b0, {4}, "mask");
  const ccv_nnc_tensor_symbol_map_t m0{y0, y};
  ccv_nnc_symbolic_graph_set_case_of(p.sg, c, b0, 0, &m0, 1);
  ccv_nnc_cmd_t drop = cmd(CCV_NNC_DROPOUT_FORWARD);
  drop.info.dropout.p = 0.5f;
  exec(b0, drop, {a}, {y0, mask});
  ccv_nnc_graph_exec_symbol_autogen(b0, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS | CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const TS f = apply(p.sg, reduce_all(1), {y});
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const int before = ccv_nnc_graph_exec_symbol_count(p.sg);
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, &a, 1, nullptr, 0, nullptr, 0);
  std::string e = ccv_nnc_error_message();
  EXPECT_NE(e.find("has no expression"), std::string::npos) << e;
  ccv_nnc_symbolic_graph_set_case_of_expr(p.sg, c, pick, nullptr);
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, &a, 1, nullptr, 0, nullptr, 0);
  e = ccv_nnc_error_message();
  EXPECT_NE(e.find("draws random numbers"), std::string::npos) << e;
  EXPECT_NE(e.find("\"noisy\""), std::string::npos) << e;
  EXPECT_EQ(ccv_nnc_tensor_symbol_for_backward(p.sg, a).d, CCV_NNC_NO_TENSOR_SYMBOL);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(p.sg), before) << "rolled back";
}

}  // namespace
