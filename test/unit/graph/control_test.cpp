// Loops, branches, multi-view tensors, the tape, static schedules and cancel.
// Loop results are checked against closed forms; multi-view bindings round
// by round through what the commands saw; schedules against serial runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "core/gpu_stream.hpp"
#include "graph/graph.hpp"
#include "graph/schedule.hpp"

using namespace cmdtest;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

// --- custom commands ------------------------------------------------------------
// Each reads its parameters from blas.a[] and records what it saw in a Log
// passed through cmd.data.
struct Seen {
  std::vector<const void*> in, out;  // data pointers of the tensors it ran on
};
struct Log {
  std::vector<Seen> calls;
};

void record(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
            int output_size) {
  if (!cmd.data) return;
  Seen s;
  for (int i = 0; i < input_size; i++) s.in.push_back(inputs[i] ? inputs[i]->data.ptr : nullptr);
  for (int i = 0; i < output_size; i++) s.out.push_back(outputs[i] ? outputs[i]->data.ptr : nullptr);
  static_cast<Log*>(cmd.data)->calls.push_back(s);
}

// y[i] = a0 * x[i] + a1 (fp32, element by element).
int affine_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
                ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  record(cmd, inputs, input_size, outputs, output_size);
  const size_t n = ccv_nnc_tensor_count(inputs[0]->info);
  for (size_t i = 0; i < n; i++) outputs[0]->data.f32[i] = cmd.info.blas.a[0] * inputs[0]->data.f32[i] + cmd.info.blas.a[1];
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_affine = {affine_exec, nullptr};
ccv_nnc_cmd_t affine(float a, float b, Log* log = nullptr) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = a;
  p.blas.a[1] = b;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_affine, p, 0);
  c.data = log;
  return c;
}

// acc (fp64) += counter (64S) * a0.
int count_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
               ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  record(cmd, inputs, input_size, outputs, output_size);
  outputs[0]->data.f64[0] = inputs[0]->data.f64[0] + cmd.info.blas.a[0] * static_cast<double>(inputs[1]->data.i64[0]);
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_count = {count_exec, nullptr};
ccv_nnc_cmd_t count_into(float a = 1) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = a;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_count, p, 0);
}

// Records what it sees; cancels a graph when blas.a[0] != 0.
ccv_nnc_graph_t* g_to_cancel = nullptr;
int probe_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
               ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  record(cmd, inputs, input_size, outputs, output_size);
  if (cmd.info.blas.a[0] != 0 && g_to_cancel) ccv_nnc_graph_cancel(g_to_cancel);
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_probe = {probe_exec, nullptr};
ccv_nnc_cmd_t probe(Log* log, bool cancel = false) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = cancel ? 1.f : 0.f;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_probe, p, 0);
  c.data = log;
  return c;
}

ccv_nnc_cmd_t noop() { return command(CCV_NNC_NOOP); }

void fill(const T& t, double v) {
  for (size_t i = 0; i < t.count(); i++) t.set(i, v);
}

ccv_nnc_graph_exec_t add(ccv_nnc_graph_t* g, const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in,
                         std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_graph_exec_new(g, cmd, ccv_nnc_no_hint, in.data(), static_cast<int>(in.size()), out.data(),
                                static_cast<int>(out.size()));
}

// Loop expressions.
int below(ccv_nnc_tensor_t* const* inputs, const int, const void* data) {  // counter < *(int64_t*)data
  return inputs[0]->data.i64[0] < *static_cast<const int64_t*>(data);
}
int value_below(ccv_nnc_tensor_t* const* inputs, const int, const void* data) {  // x[0] < *(float*)data
  return inputs[0]->data.f32[0] < *static_cast<const float*>(data);
}
int parity(ccv_nnc_tensor_t* const* inputs, const int, const void*) { return static_cast<int>(inputs[0]->data.i64[0] % 2); }

ccv_nnc_tensor_multiview_t multiview(std::vector<ccv_nnc_tensor_t*> data, int kind, int repeat, const ccv_nnc_graph_t* g) {
  ccv_nnc_tensor_multiview_t mv;
  ccv_nnc_tensor_multiview(data.data(), static_cast<uint8_t>(kind), static_cast<uint16_t>(repeat), g, &mv);
  return mv;
}
ccv_nnc_tensor_t* as_tensor(ccv_nnc_tensor_multiview_t& mv) { return reinterpret_cast<ccv_nnc_tensor_t*>(&mv); }

class ControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
    g = ccv_nnc_graph_new();
    ASSERT_NE(g, nullptr);
  }
  void TearDown() override { ccv_nnc_graph_free(g); }
  ccv_nnc_graph_t* g = nullptr;
};

// x <- 0.5 x + 1 for n rounds, ping-ponging between two tensors through
// multi-views: no copy, bindings alternate, result = 2 + (x0 - 2) 0.5^n.
TEST_F(ControlTest, WhileHalvingThroughMultiviewsMovesNoData) {
  for (int64_t n : {0, 1, 2, 7, 20}) {
    ccv_nnc_graph_t* outer = ccv_nnc_graph_new();
    ccv_nnc_graph_t* body = ccv_nnc_graph_new();
    T x0(CCV_32F, {3}), x1(CCV_32F, {3});
    const float start[3] = {5.f, -3.f, 2.f};
    for (int i = 0; i < 3; i++) x0.set(i, start[i]);
    ccv_nnc_tensor_multiview_t in = multiview({x0, x1}, CCV_NNC_MULTIVIEW_K0N, 2, body);
    ccv_nnc_tensor_multiview_t out = multiview({x1, x0}, CCV_NNC_MULTIVIEW_K0N, 2, body);
    Log log;
    const auto bp = add(body, noop(), {}, {});
    const auto step = add(body, affine(0.5f, 1.f, &log), {as_tensor(in)}, {as_tensor(out)});
    ASSERT_EQ(ccv_nnc_graph_exec_concat(body, bp, step), 0);
    ccv_nnc_graph_add_carry_over(body, as_tensor(out), as_tensor(in));
    ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
    ccv_nnc_tensor_t* expr_in[] = {&counter};
    ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
    const auto loop = ccv_nnc_graph_while(outer, CCV_NNC_GRAPH_FORWARD, body);
    ASSERT_FALSE(CCV_NO_GRAPH_EXEC(loop)) << last_error();
    EXPECT_EQ(ccv_nnc_graph_from_while_exec(outer, loop), body);
    ASSERT_EQ(ccv_nnc_graph_run(outer, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(log.calls.size(), static_cast<size_t>(n));
    for (int64_t k = 0; k < n; k++) {  // round k reads x_{k%2} and writes the other
      const Seen& s = log.calls[static_cast<size_t>(k)];
      EXPECT_EQ(s.in[0], (k % 2 ? x1 : x0).get()->data.ptr) << "round " << k;
      EXPECT_EQ(s.out[0], (k % 2 ? x0 : x1).get()->data.ptr) << "round " << k;
    }
    EXPECT_EQ(body->carry_copies, 0u);
    const T& result = n % 2 ? x1 : x0;
    for (int i = 0; i < 3; i++) {
      const double expect = 2.0 + (start[i] - 2.0) * std::pow(0.5, static_cast<double>(n));
      EXPECT_NEAR(result.get()->data.f32[i], expect, 1e-5 * (1 + std::fabs(expect))) << "n " << n << " i " << i;
    }
    EXPECT_EQ(counter.data.i64[0], n);  // the counter where the loop stopped
    ccv_nnc_tensor_multiview_free(in);
    ccv_nnc_tensor_multiview_free(out);
    ccv_nnc_graph_free(outer);
  }
}

// The same loop over plain tensors: the carry copies y into x before every
// round after the first, the last (whose evaluation ends the loop) included.
TEST_F(ControlTest, WhileCarryOverPlainTensorsCopies) {
  const int64_t n = 6;
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T x(CCV_32F, {2}), y(CCV_32F, {2});
  x.set(0, 10.f), x.set(1, 0.f);
  const auto bp = add(body, noop(), {}, {});
  const auto step = add(body, affine(0.5f, 1.f), {x}, {y});
  ccv_nnc_graph_exec_concat(body, bp, step);
  ccv_nnc_graph_add_carry_over(body, y, x);
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(body->carry_copies, static_cast<uint64_t>(n));
  for (int i = 0; i < 2; i++) {
    const double start = i == 0 ? 10.0 : 0.0;
    EXPECT_NEAR(y.get()->data.f32[i], 2.0 + (start - 2.0) * std::pow(0.5, 6.0), 1e-5);
  }
  // A carried pair of different shapes is refused.
  T z(CCV_32F, {3});
  ccv_nnc_error_clear();
  ccv_nnc_graph_add_carry_over(body, z, x);
  EXPECT_NE(last_error().find("cannot be carried"), std::string::npos) << last_error();
}

// A plain 3-d tensor (whose spare dim[4] holds the dense-matrix step) and a
// strided view of the same shape carry into each other: shapes compare up to
// the first 0, not over the whole dim array.
TEST_F(ControlTest, CarryOverBetweenAPlainTensorAndAViewOfTheSameShape) {
  const int64_t n = 3;
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T x(CCV_32F, {2, 3, 4});
  T y = T::view(CCV_32F, {2, 3, 4});
  ASSERT_NE(x.get()->info.dim[4], 0) << "the plain 3-d tensor should keep its matrix step in dim[4]";
  ASSERT_EQ(y.get()->info.dim[4], 0);
  std::vector<float> start(24);
  for (size_t i = 0; i < 24; i++) x.set(i, start[i] = 0.25f * static_cast<float>(i) - 2.f);
  const auto bp = add(body, noop(), {}, {});
  const auto step = add(body, command(CCV_NNC_EWSUM_FORWARD), {x, x}, {y});  // y = 2x
  ccv_nnc_graph_exec_concat(body, bp, step);
  ccv_nnc_error_clear();
  ccv_nnc_graph_add_carry_over(body, y, x);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(body->carry_copies, static_cast<uint64_t>(n));
  // Rounds 0 .. n-1 each double; the copy before round n brings y back into x too.
  for (size_t i = 0; i < 24; i++) {
    EXPECT_EQ(y.get(i), start[i] * 8.0) << i;
    EXPECT_EQ(x.get(i), start[i] * 8.0) << i;
  }
}

// acc += k over rounds k = 0 .. n-1 (the counter read by a node): n(n-1)/2.
// Then the same with an early break on the accumulated value.
TEST_F(ControlTest, CounterDrivenAccumulationAndEarlyBreak) {
  const int64_t n = 11;
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T acc(CCV_64F, {1});
  acc.set(0, 0.0);
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  const auto bp = add(body, noop(), {}, {});
  const auto step = add(body, count_into(), {acc, &counter}, {acc});
  ccv_nnc_graph_exec_concat(body, bp, step);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(acc.get()->data.f64[0], static_cast<double>(n * (n - 1) / 2));
  // Running again starts the counter at 0 again.
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(acc.get()->data.f64[0], static_cast<double>(n * (n - 1)));

  // Early break: x doubles each round; the expression, evaluated after the
  // doubling (the breakpoint is the doubling node), stops once x >= 100.
  ccv_nnc_graph_t* g2 = ccv_nnc_graph_new();
  ccv_nnc_graph_t* body2 = ccv_nnc_graph_new();
  T x(CCV_32F, {1});
  x.set(0, 1.f);
  const auto dbl = add(body2, affine(2.f, 0.f), {x}, {x});
  const float limit = 100.f;
  ccv_nnc_tensor_t* xin[] = {x};
  ccv_nnc_graph_set_while_expr(body2, value_below, &limit, xin, 1, &dbl, 1);
  const auto loop2 = ccv_nnc_graph_while(g2, CCV_NNC_GRAPH_FORWARD, body2);
  ccv_nnc_tensor_tape_t* tape = ccv_nnc_tensor_tape_new();
  ASSERT_EQ(ccv_nnc_graph_run(g2, 0, nullptr, 0, nullptr, 0, tape, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(x.get()->data.f32[0], 128.f);
  // 7 doublings: rounds 0..6, the last one ending the loop.
  EXPECT_EQ(ccv_nnc_tensor_tape_numbering(tape, g2, loop2), 6u) << last_error();
  ccv_nnc_tensor_tape_free(tape);
  ccv_nnc_graph_free(g2);
}

// Nested loops: an inner loop of m rounds inside an outer loop of n rounds;
// the inner node adds 1 + the outer counter each time. A nested multi-view
// (outer entries are inner multi-views) binds t[o % 2][i % 2] in round (o, i).
TEST_F(ControlTest, NestedLoopsAndNestedMultiviews) {
  const int64_t n = 3, m = 4;
  ccv_nnc_graph_t* outer = ccv_nnc_graph_new();
  ccv_nnc_graph_t* inner = ccv_nnc_graph_new();
  T acc(CCV_64F, {1});
  acc.set(0, 0.0);
  T t00(CCV_32F, {1}), t01(CCV_32F, {1}), t10(CCV_32F, {1}), t11(CCV_32F, {1});
  ccv_nnc_tensor_multiview_t mv0 = multiview({t00, t01}, CCV_NNC_MULTIVIEW_K0N, 2, inner);
  ccv_nnc_tensor_multiview_t mv1 = multiview({t10, t11}, CCV_NNC_MULTIVIEW_K0N, 2, inner);
  ccv_nnc_tensor_multiview_t top = multiview({as_tensor(mv0), as_tensor(mv1)}, CCV_NNC_MULTIVIEW_K0N, 2, outer);
  EXPECT_EQ(mv0.p, &top);
  ccv_nnc_tensor_t outer_count = ccv_nnc_tensor_for_while_count(outer);
  ccv_nnc_tensor_t inner_count = ccv_nnc_tensor_for_while_count(inner);
  Log log;
  const auto ibp = add(inner, noop(), {}, {});
  const auto iacc = add(inner, count_into(), {acc, &outer_count}, {acc});
  const auto iprobe = add(inner, probe(&log), {as_tensor(top)}, {});
  ccv_nnc_graph_exec_concat(inner, ibp, iacc);
  ccv_nnc_graph_exec_concat(inner, ibp, iprobe);
  ccv_nnc_tensor_t* iin[] = {&inner_count};
  ccv_nnc_graph_set_while_expr(inner, below, &m, iin, 1, &ibp, 1);
  const auto obp = add(outer, noop(), {}, {});
  const auto oloop = ccv_nnc_graph_while(outer, CCV_NNC_GRAPH_FORWARD, inner);
  ccv_nnc_graph_exec_concat(outer, obp, oloop);
  ccv_nnc_tensor_t* oin[] = {&outer_count};
  ccv_nnc_graph_set_while_expr(outer, below, &n, oin, 1, &obp, 1);
  const auto loop = ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, outer);
  ccv_nnc_tensor_tape_t* tape = ccv_nnc_tensor_tape_new();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, tape, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  // sum over o < n, i < m of o = m n (n - 1) / 2.
  EXPECT_DOUBLE_EQ(acc.get()->data.f64[0], static_cast<double>(m * n * (n - 1) / 2));
  ASSERT_EQ(log.calls.size(), static_cast<size_t>(n * m));
  const T* grid[2][2] = {{&t00, &t01}, {&t10, &t11}};
  for (int64_t o = 0; o < n; o++)
    for (int64_t i = 0; i < m; i++)
      EXPECT_EQ(log.calls[static_cast<size_t>(o * m + i)].in[0], grid[o % 2][i % 2]->get()->data.ptr) << o << "," << i;
  // The tape: the outer loop ran n rounds; the inner loop m rounds in each outer round.
  uint64_t number = 0;
  ASSERT_TRUE(nnc::graph::tape_number(tape, g, loop.d, {}, &number));
  EXPECT_EQ(number, static_cast<uint64_t>(n));
  for (int64_t o = 0; o < n; o++) {
    ASSERT_TRUE(nnc::graph::tape_number(tape, outer, oloop.d, {o}, &number)) << o;
    EXPECT_EQ(number, static_cast<uint64_t>(m));
  }
  EXPECT_FALSE(nnc::graph::tape_number(tape, outer, oloop.d, {n}, &number));
  ccv_nnc_tensor_tape_free(tape);
  ccv_nnc_tensor_multiview_free(top);
  ccv_nnc_tensor_multiview_free(mv0);
  ccv_nnc_tensor_multiview_free(mv1);
}

// K1N multi-views: round 0 sees the first entry, then the rest repeat.
TEST_F(ControlTest, MultiviewK1NSelectsLikeTheHeaderSays) {
  const int64_t n = 7;
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T a(CCV_32F, {1}), b(CCV_32F, {1}), c(CCV_32F, {1}), d(CCV_32F, {1});
  ccv_nnc_tensor_multiview_t mv = multiview({a, b, c, d}, CCV_NNC_MULTIVIEW_K1N, 3, body);
  T follower(CCV_32F, {1});
  void* own = follower.get()->data.ptr;
  ccv_nnc_tensor_synchronize_to_multiview(&mv, follower);
  Log log, flog;
  const auto bp = add(body, noop(), {}, {});
  const auto p = add(body, probe(&log), {as_tensor(mv)}, {});
  const auto pf = add(body, probe(&flog), {follower}, {});
  ccv_nnc_graph_exec_concat(body, bp, p);
  ccv_nnc_graph_exec_concat(body, bp, pf);
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  const T* expect[] = {&a, &b, &c, &d, &b, &c, &d};
  ASSERT_EQ(log.calls.size(), 7u);
  for (int k = 0; k < 7; k++) {
    EXPECT_EQ(log.calls[static_cast<size_t>(k)].in[0], expect[k]->get()->data.ptr) << "round " << k;
    EXPECT_EQ(flog.calls[static_cast<size_t>(k)].in[0], expect[k]->get()->data.ptr) << "follower, round " << k;
  }
  follower.get()->data.ptr = own;  // give the follower its memory back before it is freed
  ccv_nnc_tensor_multiview_free(mv);
}

// case..of: each branch, and none (negative index or no such branch), with
// a plain output (falls back to a copy of input 0... here the designated
// input) and a PHI multi-view output (points at the default, no copy).
TEST_F(ControlTest, CaseOfRunsOneBranchOrFallsBack) {
  T sel(CCV_32F, {1}), x(CCV_32F, {2}), y(CCV_32F, {2}), result(CCV_32F, {2}), after(CCV_32F, {2});
  x.set(0, 3.f), x.set(1, -1.f);
  ccv_nnc_tensor_t* phi_data[] = {x, result};
  ccv_nnc_tensor_multiview_t phi;
  ccv_nnc_tensor_multiview(phi_data, CCV_NNC_MULTIVIEW_K0N, 2, reinterpret_cast<const ccv_nnc_graph_t*>(CCV_NNC_MULTIVIEW_PHI), &phi);
  // Inputs: x (designated default of output 0), sel (drives the choice through input 1).
  const auto node = ccv_nnc_graph_case_of_new(g, CCV_NNC_GRAPH_FORWARD, std::vector<ccv_nnc_tensor_t*>{x, sel}.data(), 2,
                                              std::vector<ccv_nnc_tensor_t*>{y, as_tensor(phi)}.data(), 2);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(node)) << last_error();
  ccv_nnc_graph_set_case_of_expr(
      g, node, [](ccv_nnc_tensor_t* const* in, const int, const void*) { return static_cast<int>(in[1]->data.f32[0]); },
      nullptr, 1);  // offset 1: sel = -1 picks branch 0
  for (int b = 0; b < 3; b++) {
    if (b == 1) continue;  // branch 1 left unset: picking it runs none
    ccv_nnc_graph_t* branch = ccv_nnc_graph_new();
    const float scale = b == 0 ? 10.f : 100.f;
    add(branch, affine(scale, 0.f), {x}, {y});
    add(branch, affine(scale, 1.f), {x}, {result});
    ccv_nnc_graph_set_case_of(g, node, branch, b);
  }
  const auto tail = add(g, affine(1.f, 0.5f), {as_tensor(phi)}, {after});
  ccv_nnc_graph_exec_concat(g, node, tail);
  ccv_nnc_tensor_tape_t* tape = ccv_nnc_tensor_tape_new();
  for (float s : {-1.f, 1.f, 0.f, -5.f, 7.f}) {
    const int index = static_cast<int>(s) + 1;
    const bool none = index != 0 && index != 2;
    const float scale = index == 0 ? 10.f : 100.f;
    sel.set(0, s);
    y.set(0, 0.f), y.set(1, 0.f);
    result.set(0, 0.f), result.set(1, 0.f);
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, tape, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (int i = 0; i < 2; i++) {
      const float xi = x.get()->data.f32[i];
      EXPECT_EQ(y.get()->data.f32[i], none ? xi : scale * xi) << "sel " << s;
      EXPECT_EQ(after.get()->data.f32[i], (none ? xi : scale * xi + 1.f) + 0.5f) << "sel " << s;
    }
    EXPECT_EQ(phi.it, none ? x.get() : result.get());
    EXPECT_EQ(ccv_nnc_tensor_tape_numbering(tape, g, node), none ? UINT64_MAX : static_cast<uint64_t>(index));
  }
  ccv_nnc_tensor_tape_free(tape);
  ccv_nnc_tensor_multiview_free(phi);
}

// case..of inside a loop: the branch follows the counter's parity; the tape
// keeps each round's choice and the flagged output of each round.
TEST_F(ControlTest, CaseOfInWhileAndTapeKeepsRounds) {
  const int64_t n = 5;
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T x(CCV_32F, {1});
  x.set(0, 1.f);
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  const auto bp = add(body, noop(), {}, {});
  const auto cs = ccv_nnc_graph_case_of_new(body, CCV_NNC_GRAPH_FORWARD, std::vector<ccv_nnc_tensor_t*>{&counter}.data(), 1, nullptr, 0);
  ccv_nnc_graph_set_case_of_expr(body, cs, parity, nullptr, 0);
  ccv_nnc_graph_t* even = ccv_nnc_graph_new();
  ccv_nnc_graph_t* odd = ccv_nnc_graph_new();
  const auto e = add(even, affine(2.f, 0.f), {x}, {x});  // even rounds double
  add(odd, affine(1.f, 3.f), {x}, {x});                   // odd rounds add 3
  const int flags[] = {1};
  ccv_nnc_graph_exec_set_io_flags(even, e, nullptr, 0, flags, 1);
  ccv_nnc_graph_set_case_of(body, cs, even, 0);
  ccv_nnc_graph_set_case_of(body, cs, odd, 1);
  ccv_nnc_graph_exec_concat(body, bp, cs);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  ccv_nnc_tensor_tape_t* tape = ccv_nnc_tensor_tape_new();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, tape, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  double expect = 1;
  for (int64_t k = 0; k < n; k++) {
    uint64_t branch = 99;
    ASSERT_TRUE(nnc::graph::tape_number(tape, body, cs.d, {k}, &branch)) << k;
    EXPECT_EQ(branch, static_cast<uint64_t>(k % 2));
    expect = k % 2 ? expect + 3 : expect * 2;
    const std::vector<uint8_t>* kept = nnc::graph::tape_kept(tape, x, {k});
    if (k % 2) {
      EXPECT_EQ(kept, nullptr) << "odd rounds do not flag x";
    } else {
      ASSERT_NE(kept, nullptr) << k;
      float v;
      std::memcpy(&v, kept->data(), sizeof(v));
      EXPECT_EQ(v, static_cast<float>(expect)) << "round " << k;
    }
  }
  EXPECT_EQ(x.get()->data.f32[0], static_cast<float>(expect));
  ccv_nnc_tensor_tape_free(tape);
}

// A diamond and a wide graph of EWSUMs on 1..4 streams give the serial values;
// the placement keeps chains on one stream and joins by waits.
TEST_F(ControlTest, StaticSchedulesMatchSerialRuns) {
  std::mt19937 rng(7);
  constexpr int kChains = 6, kLength = 5;
  T x(CCV_32F, {9, 13});
  fill_random(x, rng);
  std::vector<T> t;
  for (int i = 0; i < kChains * (kLength + 1) + 1; i++) t.emplace_back(CCV_32F, std::vector<int>{9, 13});
  const ccv_nnc_cmd_t sum = command(CCV_NNC_EWSUM_FORWARD);
  std::vector<ccv_nnc_graph_exec_t> tails;
  for (int c = 0; c < kChains; c++) {
    ccv_nnc_graph_exec_t prev{};
    for (int k = 0; k < kLength; k++) {
      T& in = k == 0 ? x : t[static_cast<size_t>(c * (kLength + 1) + k - 1)];
      const auto e = add(g, sum, {in, x}, {t[static_cast<size_t>(c * (kLength + 1) + k)]});
      if (k) ccv_nnc_graph_exec_concat(g, prev, e);
      prev = e;
    }
    tails.push_back(prev);
  }
  std::vector<ccv_nnc_tensor_t*> ends;
  for (int c = 0; c < kChains; c++) ends.push_back(t[static_cast<size_t>(c * (kLength + 1) + kLength - 1)]);
  T& total = t.back();
  const auto join = add(g, sum, ends, {total});
  for (const auto& e : tails) ccv_nnc_graph_exec_concat(g, e, join);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  std::vector<float> serial(total.get()->data.f32, total.get()->data.f32 + 9 * 13);
  for (size_t i = 0; i < serial.size(); i++)  // each chain ends at (kLength + 1) x; six chains
    EXPECT_NEAR(serial[i], kChains * (kLength + 1) * x.get()->data.f32[i], 1e-4);
  for (int streams : {1, 2, 3, 4}) {
    ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, streams, nullptr, 0, nullptr, 0);
    ASSERT_NE(s, nullptr) << last_error();
    EXPECT_EQ(s->s.stream_count, std::min(streams, kChains));
    // Every chain stays on one stream.
    for (size_t p = 0; p < s->s.order.size(); p++)
      for (int w : g->nodes[static_cast<size_t>(s->s.order[p])].outgoing)
        if (w != join.d) {
          const auto it = std::find(s->s.order.begin(), s->s.order.end(), w);
          EXPECT_EQ(s->s.stream_of[p], s->s.stream_of[static_cast<size_t>(it - s->s.order.begin())]);
        }
    for (int rep = 0; rep < 3; rep++) {
      fill(total, 0);
      ASSERT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
      for (size_t i = 0; i < serial.size(); i++) ASSERT_EQ(total.get()->data.f32[i], serial[i]) << streams << " streams";
    }
    // Asynchronously on a caller stream.
    ccv_nnc_stream_context_t* caller = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
    fill(total, 0);
    ASSERT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, caller), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_stream_context_wait(caller);
    for (size_t i = 0; i < serial.size(); i++) ASSERT_EQ(total.get()->data.f32[i], serial[i]);
    ccv_nnc_stream_context_free(caller);
    ccv_nnc_graph_static_schedule_free(s);
  }
  // The default schedule is what ccv_nnc_graph_run uses.
  ccv_nnc_graph_set_default_static_schedule(g, CCV_STREAM_CONTEXT_CPU, 2);
  EXPECT_NE(ccv_nnc_graph_default_stream(g), nullptr);
  fill(total, 0);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (size_t i = 0; i < serial.size(); i++) ASSERT_EQ(total.get()->data.f32[i], serial[i]);
  // A schedule made before a change is refused after it.
  ccv_nnc_graph_static_schedule_t* stale = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 2, nullptr, 0, nullptr, 0);
  ccv_nnc_graph_exec_disjoin(g, tails[0], join);
  EXPECT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, stale, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("changed"), std::string::npos) << last_error();
  ccv_nnc_graph_static_schedule_free(stale);
}

// d = (a + b) + (a + c) as a diamond on two streams: the two middle nodes go
// to different streams and the join waits for the one not on its own.
TEST_F(ControlTest, DiamondOnTwoStreamsMatchesDoubleSums) {
  std::mt19937 rng(3);
  T a(CCV_64F, {31, 3}), b(CCV_64F, {31, 3}), c(CCV_64F, {31, 3}), x(CCV_64F, {31, 3}), y(CCV_64F, {31, 3}),
      d(CCV_64F, {31, 3});
  fill_random(a, rng), fill_random(b, rng), fill_random(c, rng);
  const ccv_nnc_cmd_t sum = command(CCV_NNC_EWSUM_FORWARD);
  const auto src = add(g, noop(), {}, {});
  const auto n1 = add(g, sum, {a, b}, {x});
  const auto n2 = add(g, sum, {a, c}, {y});
  const auto n3 = add(g, sum, {x, y}, {d});
  ccv_nnc_graph_exec_concat(g, src, n1);
  ccv_nnc_graph_exec_concat(g, src, n2);
  ccv_nnc_graph_exec_concat(g, n1, n3);
  ccv_nnc_graph_exec_concat(g, n2, n3);
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 2, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  ASSERT_EQ(s->s.stream_count, 2);
  const auto pos = [&](int node) { return std::find(s->s.order.begin(), s->s.order.end(), node) - s->s.order.begin(); };
  EXPECT_NE(s->s.stream_of[static_cast<size_t>(pos(n1.d))], s->s.stream_of[static_cast<size_t>(pos(n2.d))]);
  EXPECT_EQ(s->s.waits[static_cast<size_t>(pos(n3.d))].size(), 1u);
  for (int rep = 0; rep < 5; rep++) {
    for (size_t i = 0; i < d.count(); i++) d.set(i, 0);
    ASSERT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (size_t i = 0; i < d.count(); i++) ASSERT_DOUBLE_EQ(d.get(i), (a.get(i) + b.get(i)) + (a.get(i) + c.get(i)));
  }
  ccv_nnc_graph_static_schedule_free(s);
}

// Nodes whose kernel holds the whole machine (OpenBLAS GEMM) share stream 0;
// independent light nodes beside them get their own stream.
TEST_F(ControlTest, ExclusiveKernelsShareOneStream) {
  std::mt19937 rng(5);
  T a(CCV_32F, {8, 8}), w(CCV_32F, {8, 8}), y1(CCV_32F, {8, 8}), y2(CCV_32F, {8, 8}), s1(CCV_32F, {8, 8}), s2(CCV_32F, {8, 8});
  fill_random(a, rng), fill_random(w, rng);
  const ccv_nnc_cmd_t gemm = command(CCV_NNC_GEMM_FORWARD);
  const auto g1 = add(g, gemm, {a, w}, {y1});
  const auto g2 = add(g, gemm, {a, w}, {y2});
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 2, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  EXPECT_EQ(s->s.stream_count, 1) << "two GEMMs never overlap";
  ccv_nnc_graph_static_schedule_free(s);
  const auto e1 = add(g, command(CCV_NNC_EWSUM_FORWARD), {a, a}, {s1});
  const auto e2 = add(g, command(CCV_NNC_EWSUM_FORWARD), {a, a}, {s2});
  s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 2, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  EXPECT_EQ(s->s.stream_count, 2);
  const auto stream = [&](int node) {
    return s->s.stream_of[static_cast<size_t>(std::find(s->s.order.begin(), s->s.order.end(), node) - s->s.order.begin())];
  };
  EXPECT_EQ(stream(g1.d), 0);
  EXPECT_EQ(stream(g2.d), 0);
  EXPECT_EQ(stream(e1.d), 1) << "light work beside the GEMMs";
  EXPECT_EQ(stream(e2.d), 1);
  ASSERT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) {
      double ref = 0;
      for (int k = 0; k < 8; k++) ref += a.get(static_cast<size_t>(i * 8 + k)) * w.get(static_cast<size_t>(j * 8 + k));
      const double got = y2.get(static_cast<size_t>(i * 8 + j));
      // With no transpose parameters GEMM is y = a . w (w is k x n); ref above is a . w^T.
      double expect = 0;
      for (int k = 0; k < 8; k++) expect += a.get(static_cast<size_t>(i * 8 + k)) * w.get(static_cast<size_t>(k * 8 + j));
      EXPECT_NEAR(got, expect, 1e-4 * (1 + std::fabs(expect))) << i << "," << j;
      if (std::fabs(expect - ref) > 1e-2) {
        EXPECT_GT(std::fabs(got - ref), 1e-3) << "a . w^T instead of a . w at " << i << "," << j;
      }
      EXPECT_EQ(y1.get(static_cast<size_t>(i * 8 + j)), got);
      EXPECT_EQ(s1.get(static_cast<size_t>(i * 8 + j)), 2 * a.get(static_cast<size_t>(i * 8 + j)));
    }
  ccv_nnc_graph_static_schedule_free(s);
}

// A failing node on one stream ends the run with its message; nobody waits forever.
TEST_F(ControlTest, ScheduledFailureAndCancel) {
  T a(CCV_32F, {4}), b(CCV_32F, {5}), c(CCV_32F, {4});
  const ccv_nnc_cmd_t sum = command(CCV_NNC_EWSUM_FORWARD);
  Log before, after, beside;
  const auto p0 = add(g, probe(&before), {}, {});
  const auto bad = add(g, sum, {a, b}, {c});  // shapes disagree
  const auto p1 = add(g, probe(&after), {}, {});
  const auto side = add(g, probe(&beside), {}, {});
  ccv_nnc_graph_exec_concat(g, p0, bad);
  ccv_nnc_graph_exec_concat(g, bad, p1);
  ccv_nnc_graph_exec_concat(g, p0, side);
  ccv_nnc_graph_exec_concat(g, side, p1);
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 2, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("node 1 (CCV_NNC_EWSUM_FORWARD)"), std::string::npos) << last_error();
  EXPECT_EQ(before.calls.size(), 1u);
  EXPECT_EQ(after.calls.size(), 0u) << "a node after the failing one ran";
  EXPECT_LE(beside.calls.size(), 1u);  // independent of the failure: may or may not have run, once at most
  // The same graph without a schedule: the run stops at the failing node.
  before.calls.clear(), after.calls.clear(), beside.calls.clear();
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(before.calls.size(), 1u);
  EXPECT_EQ(after.calls.size(), 0u) << "a node after the failing one ran";
  ccv_nnc_graph_static_schedule_free(s);

  // Cancel from inside the run: nodes after the cancelling one do not run.
  ccv_nnc_graph_t* h = ccv_nnc_graph_new();
  Log log;
  ccv_nnc_graph_exec_t prev{};
  for (int i = 0; i < 5; i++) {
    const auto e = add(h, probe(&log, i == 2), {}, {});
    if (i) ccv_nnc_graph_exec_concat(h, prev, e);
    prev = e;
  }
  g_to_cancel = h;
  EXPECT_EQ(ccv_nnc_graph_run(h, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("cancelled"), std::string::npos) << last_error();
  EXPECT_EQ(log.calls.size(), 3u);
  g_to_cancel = nullptr;
  log.calls.clear();
  EXPECT_EQ(ccv_nnc_graph_run(h, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(log.calls.size(), 5u);
  ccv_nnc_graph_free(h);
}

// A node's cached kernel follows its tensors: a multi-view whose entries
// differ in shape re-validates the node, and a bad entry is caught.
TEST_F(ControlTest, PlansRevalidateWhenTensorsChange) {
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T a(CCV_32F, {4}), b(CCV_32F, {6}), ya(CCV_32F, {4}), yb(CCV_32F, {6}), bad(CCV_32F, {5});
  fill(a, 1), fill(b, 2);
  ccv_nnc_tensor_multiview_t in = multiview({a, b, a}, CCV_NNC_MULTIVIEW_K0N, 3, body);
  ccv_nnc_tensor_multiview_t out = multiview({ya, yb, bad}, CCV_NNC_MULTIVIEW_K0N, 3, body);
  const int64_t n = 3;
  const auto bp = add(body, noop(), {}, {});
  const auto s = add(body, command(CCV_NNC_EWSUM_FORWARD), {as_tensor(in), as_tensor(in)}, {as_tensor(out)});
  ccv_nnc_graph_exec_concat(body, bp, s);
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  ASSERT_FALSE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body))) << last_error();
  // Rounds 0 and 1 run (4 and 6 elements); round 2 pairs a [4] with bad [5].
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("node 1"), std::string::npos) << last_error();
  for (int i = 0; i < 4; i++) EXPECT_EQ(ya.get()->data.f32[i], 2.f);
  for (int i = 0; i < 6; i++) EXPECT_EQ(yb.get()->data.f32[i], 4.f);
  ccv_nnc_tensor_multiview_free(in);
  ccv_nnc_tensor_multiview_free(out);
}

// DOT draws sub-graphs as clusters and names multi-view tensors; autotune
// leaves loop and branch nodes alone.
TEST_F(ControlTest, DotAndAutotuneWithSubgraphs) {
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T x0(CCV_32F, {2}), x1(CCV_32F, {2});
  ccv_nnc_tensor_multiview_t in = multiview({x0, x1}, CCV_NNC_MULTIVIEW_K1N, 1, body);
  const auto bp = add(body, noop(), {}, {});
  const auto step = add(body, affine(1, 1), {as_tensor(in)}, {x1});
  ccv_nnc_graph_exec_concat(body, bp, step);
  const int64_t n = 3;
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  const auto loop = ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body);
  ccv_nnc_graph_exec_set_io(g, loop, std::vector<ccv_nnc_tensor_t*>{x0}.data(), 1, std::vector<ccv_nnc_tensor_t*>{x1}.data(), 1);
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  ccv_nnc_graph_dot(g, CCV_NNC_LONG_DOT_GRAPH, f);
  std::fclose(f);
  const std::string dot(buf, size);
  std::free(buf);
  EXPECT_NE(dot.find("subgraph cluster0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("while node 0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("multiview 1+1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0b0_node0 -> n0b0_node1"), std::string::npos) << dot;
  ccv_nnc_error_clear();
  ccv_nnc_graph_autotune(g, 0, 0, nullptr, 0, nullptr, 0);
  EXPECT_EQ(last_error(), "");
  x0.set(0, 1.f), x0.set(1, 2.f);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  // Round 0 reads x0, rounds 1 and 2 read x1 (K1N, repeat 1): x1 = x0 + 3.
  EXPECT_EQ(x1.get()->data.f32[0], 4.f);
  EXPECT_EQ(x1.get()->data.f32[1], 5.f);
  ccv_nnc_tensor_multiview_free(in);
}

TEST_F(ControlTest, BadInputIsRefusedWithAMessage) {
  // A multi-view with zero repeat: a message, and a run that fails cleanly.
  ccv_nnc_graph_t* body = ccv_nnc_graph_new();
  T a(CCV_32F, {1}), y(CCV_32F, {1});
  ccv_nnc_tensor_t* data[] = {a.get()};
  ccv_nnc_tensor_multiview_t mv;
  ccv_nnc_error_clear();
  ccv_nnc_tensor_multiview(data, CCV_NNC_MULTIVIEW_K0N, 0, body, &mv);
  EXPECT_NE(last_error().find("repeat"), std::string::npos) << last_error();
  ccv_nnc_tensor_multiview(data, 7, 1, body, &mv);
  EXPECT_NE(last_error().find("kind"), std::string::npos) << last_error();
  ccv_nnc_tensor_multiview(data, CCV_NNC_MULTIVIEW_K0N, 0, body, &mv);
  const auto bp = add(body, noop(), {}, {});
  add(body, affine(1, 0), {reinterpret_cast<ccv_nnc_tensor_t*>(&mv)}, {y});
  const auto loop = ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body);
  // No expression yet.
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("no expression"), std::string::npos) << last_error();
  const int64_t n = 2;
  ccv_nnc_tensor_t counter = ccv_nnc_tensor_for_while_count(body);
  ccv_nnc_tensor_t* expr_in[] = {&counter};
  ccv_nnc_graph_set_while_expr(body, below, &n, expr_in, 1, &bp, 1);
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("points at nothing"), std::string::npos) << last_error();
  ccv_nnc_tensor_multiview_free(mv);
  // A sub-graph cannot run alone, belong to two nodes, or contain its parent.
  EXPECT_EQ(ccv_nnc_graph_run(body, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("sub-graph"), std::string::npos) << last_error();
  EXPECT_TRUE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_GRAPH_FORWARD, body)));
  EXPECT_NE(last_error().find("already belongs"), std::string::npos) << last_error();
  EXPECT_TRUE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(body, CCV_NNC_GRAPH_FORWARD, g)));
  ccv_nnc_graph_t* spare = ccv_nnc_graph_new();
  EXPECT_TRUE(CCV_NO_GRAPH_EXEC(ccv_nnc_graph_while(g, CCV_NNC_EWSUM_FORWARD, spare)));
  EXPECT_NE(last_error().find("CCV_NNC_GRAPH_FORWARD"), std::string::npos) << last_error();
  // case..of calls on a node that is not one; a branch set twice; no expression.
  ccv_nnc_graph_set_case_of_expr(g, loop, parity, nullptr, 0);
  EXPECT_NE(last_error().find("not a case..of"), std::string::npos) << last_error();
  const auto cs = ccv_nnc_graph_case_of_new(g, CCV_NNC_GRAPH_FORWARD, nullptr, 0, nullptr, 0);
  ccv_nnc_graph_t* b0 = ccv_nnc_graph_new();
  ccv_nnc_graph_set_case_of(g, cs, b0, 0);
  ccv_nnc_graph_t* b1 = ccv_nnc_graph_new();
  ccv_nnc_graph_set_case_of(g, cs, b1, 0);
  EXPECT_NE(last_error().find("already has a branch"), std::string::npos) << last_error();
  ccv_nnc_graph_free(b1);
  ccv_nnc_graph_set_case_of(g, cs, spare, -1);
  EXPECT_NE(last_error().find("out of range"), std::string::npos) << last_error();
  ccv_nnc_graph_free(spare);
  EXPECT_EQ(ccv_nnc_graph_from_while_exec(g, cs), nullptr);
  // Schedules: a bad stream count, GPU streams.
  EXPECT_EQ(ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, 0, nullptr, 0, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("max_stream_count"), std::string::npos) << last_error();
  if (!nnc::gpu_stream_hooks()) {  // a build without the CUDA module
    EXPECT_EQ(ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_GPU, 2, nullptr, 0, nullptr, 0), nullptr);
    EXPECT_NE(last_error().find("CUDA module"), std::string::npos) << last_error();
  }
  EXPECT_EQ(ccv_nnc_graph_static_schedule_new(g, 0x3, 2, nullptr, 0, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("neither"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_graph_run_with_schedule(g, 0, nullptr, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  // Flags of the wrong length; tape calls with NULLs.
  const int f[] = {1, 1};
  ccv_nnc_graph_exec_set_io_flags(body, bp, f, 2, nullptr, 0);
  EXPECT_NE(last_error().find("2 input flags for 0 inputs"), std::string::npos) << last_error();
  ccv_nnc_tensor_tape_io(nullptr, g, nullptr, nullptr, 0, nullptr, nullptr, 0);
  EXPECT_NE(last_error().find("NULL"), std::string::npos) << last_error();
  ccv_nnc_tensor_tape_t* tape = ccv_nnc_tensor_tape_new();
  EXPECT_EQ(ccv_nnc_tensor_tape_numbering(tape, g, loop), 0u);
  EXPECT_NE(last_error().find("nothing recorded"), std::string::npos) << last_error();
  ccv_nnc_tensor_tape_free(tape);
}

}  // namespace
