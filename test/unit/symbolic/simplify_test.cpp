// ccv_nnc_symbolic_graph_simplify: each pass removes or fuses what it should
// (counted on the graph before and after) and the compiled values stay those
// of the graph before (against double references).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "symbolic_test_util.hpp"

using namespace cmdtest;
using namespace symtest;

namespace {

int live_execs(const ccv_nnc_symbolic_graph_t* sg) {
  return ccv_nnc_symbolic_graph_active_symbol_count(sg, CCV_NNC_SYMBOL_GRAPH_EXEC);
}

// Compiles, fills the named inputs from rng, runs, and hands back the output values.
std::vector<float> run_graph(ccv_nnc_symbolic_graph_t* sg, std::vector<ccv_nnc_tensor_symbol_t> inputs,
                             ccv_nnc_tensor_symbol_t output, unsigned seed) {
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, &output, 1, nullptr, 0, nullptr, 0, &g, &ta, &ea);
  EXPECT_NE(g, nullptr) << last_error();
  if (!g) return {};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (auto s : inputs) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, s);
    for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) t->data.f32[i] = d(rng);
  }
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  const ccv_nnc_tensor_t* y = ccv_nnc_tensor_from_symbol(ta, output);
  std::vector<float> v(y->data.f32, y->data.f32 + ccv_nnc_tensor_count(y->info));
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  return v;
}

// y = exp(a) + exp(a) + log(b) (the second exp a duplicate), with a dead
// branch (sqrt(b)) nobody reads and an identity transfer. Inputs in (-1, 1):
// log gives NaN for the negative half, and NaN must come out where it did.
struct Redundant {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_tensor_symbol_t a, b, e1, e2, l, copy, dead, y;
  Redundant() {
    a = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {3, 5}), "a");
    b = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {3, 5}), "b");
    e1 = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "e1");
    e2 = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "e2");
    l = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "l");
    copy = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {3, 5}), "copy");
    dead = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "dead");
    y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &e1, 1, "exp1");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &e2, 1, "exp2");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWLOG_FORWARD), &b, 1, &l, 1, "log");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_DATA_TRANSFER_FORWARD), &l, 1, &copy, 1, "transfer");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWSQRT_FORWARD), &b, 1, &dead, 1, "sqrt");
    const ccv_nnc_tensor_symbol_t in[] = {e1, e2, copy};
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWSUM_FORWARD), in, 3, &y, 1, "sum");
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0) << last_error();
  }
  ~Redundant() { ccv_nnc_symbolic_graph_free(sg); }
};

TEST(Simplify, EachPassRemovesWhatItShouldAndValuesStay) {
  Redundant before;
  const std::vector<float> want = run_graph(before.sg, {before.a, before.b}, before.y, 21);
  Redundant r;
  ASSERT_EQ(live_execs(r.sg), 6);
  // Pruning alone: the dead sqrt goes (y does not need it).
  int passes[] = {CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(r.sg, passes, 1, nullptr, 0, &r.y, 1, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(r.sg), 5) << last_error();
  EXPECT_EQ(ccv_nnc_symbolic_graph_active_symbol_count(r.sg, CCV_NNC_SYMBOL_TENSOR), 7);  // "dead" freed
  // CSE, then pruning: the second exp goes.
  int cse[] = {CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION, CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(r.sg, cse, 2, nullptr, 0, &r.y, 1, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(r.sg), 4) << last_error();
  const int* in = nullptr;
  int in_size = 0;
  ccv_nnc_graph_exec_symbol_io(r.sg, ccv_nnc_symbolic_graph_destinations(r.sg)[0], &in, &in_size, nullptr, nullptr);
  ASSERT_EQ(in_size, 3);
  EXPECT_EQ(in[0], r.e1.d);
  EXPECT_EQ(in[1], r.e1.d);  // read twice now
  // The identity transfer goes; the sum reads log's output directly.
  int dt[] = {CCV_NNC_SIMPLIFY_DATA_TRANSFER_OPT};
  ccv_nnc_symbolic_graph_simplify(r.sg, dt, 1, nullptr, 0, &r.y, 1, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(r.sg), 3) << last_error();
  ccv_nnc_graph_exec_symbol_io(r.sg, ccv_nnc_symbolic_graph_destinations(r.sg)[0], &in, &in_size, nullptr, nullptr);
  EXPECT_EQ(in[2], r.l.d);
  EXPECT_EQ(ccv_nnc_symbolic_graph_source_size(r.sg), 2);  // exp1 and log
  const std::vector<float> got = run_graph(r.sg, {r.a, r.b}, r.y, 21);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << i;
    }
  }
}

TEST(Simplify, AnOutputAskedForKeepsItsWriter) {
  Redundant r;
  // e2 is asked for: CSE must not move its readers, pruning must keep exp2.
  const ccv_nnc_tensor_symbol_t outs[] = {r.y, r.e2};
  int passes[] = {CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION, CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(r.sg, passes, 2, nullptr, 0, outs, 2, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(r.sg), 5);  // only sqrt went
  // An exec flagged DISABLE_OPT is left alone even when nothing needs it.
  Redundant k;
  for (int e = 0; e < ccv_nnc_graph_exec_symbol_count(k.sg); e++) {
    const ccv_nnc_graph_exec_symbol_t s = {e, k.sg};
    if (std::string(ccv_nnc_graph_exec_symbol_name(k.sg, s)) == "sqrt")
      ccv_nnc_graph_exec_symbol_set_flags(k.sg, s, CCV_NNC_GRAPH_EXEC_DISABLE_OPT);
  }
  int prune[] = {CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(k.sg, prune, 1, nullptr, 0, &k.y, 1, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(k.sg), 6);
  // A pass that does not exist is refused.
  int bogus[] = {77};
  ccv_nnc_symbolic_graph_simplify(k.sg, bogus, 1, nullptr, 0, &k.y, 1, nullptr, 0, nullptr, 0);
  EXPECT_NE(last_error().find("not a pass"), std::string::npos) << last_error();
}

TEST(Simplify, SoftmaxThenCrossentropyFuseAndGiveTheSameLoss) {
  auto build = [](ccv_nnc_symbolic_graph_t* sg, ccv_nnc_tensor_symbol_t* x, ccv_nnc_tensor_symbol_t* label,
                  ccv_nnc_tensor_symbol_t* loss) {
    *x = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {6, 10}), "x");
    *label = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {6, 10}), "label");
    const auto p = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "p");
    *loss = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "loss");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_SOFTMAX_FORWARD), x, 1, &p, 1, "softmax");
    ccv_nnc_cmd_t ce = plain(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD);
    ce.info.label_smoothing.trim0 = 0;
    ce.info.label_smoothing.trim1 = 1;
    const ccv_nnc_tensor_symbol_t in[] = {p, *label};
    ccv_nnc_graph_exec_symbol_new(sg, ce, in, 2, loss, 1, "ce");
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  };
  ccv_nnc_symbolic_graph_t* plain_sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_tensor_symbol_t x, label, loss;
  build(plain_sg, &x, &label, &loss);
  const std::vector<float> want = run_graph(plain_sg, {x, label}, loss, 31);
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  build(sg, &x, &label, &loss);
  int passes[] = {CCV_NNC_SIMPLIFY_OPS_FUSION};
  ccv_nnc_symbolic_graph_simplify(sg, passes, 1, nullptr, 0, &loss, 1, nullptr, 0, nullptr, 0);
  ASSERT_EQ(live_execs(sg), 1) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(sg, ccv_nnc_symbolic_graph_sources(sg)[0]).cmd, CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  const std::vector<float> got = run_graph(sg, {x, label}, loss, 31);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-5 * (std::fabs(want[i]) + 1)) << i;
  ccv_nnc_symbolic_graph_free(plain_sg);
  ccv_nnc_symbolic_graph_free(sg);
}

TEST(Simplify, UselessWorkAddingZeroOrMultiplyingByOne) {
  auto build = [](ccv_nnc_symbolic_graph_t* sg, ccv_nnc_tensor_symbol_t* a, ccv_nnc_tensor_symbol_t* y) {
    *a = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "a");
    const auto zero = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "zero");
    const auto one = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "one");
    ccv_nnc_tensor_symbol_set_flags(sg, zero, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    ccv_nnc_tensor_symbol_set_flags(sg, one, CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
    const auto s = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "s");
    const auto m = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "m");
    const auto k = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "k");
    *y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");
    const ccv_nnc_tensor_symbol_t sum_in[] = {*a, zero}, prod_in[] = {one, s};
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWSUM_FORWARD), sum_in, 2, &s, 1, "plus zero");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWPROD_FORWARD), prod_in, 2, &m, 1, "times one");
    ccv_nnc_cmd_t scale = plain(CCV_NNC_SCALAR_MUL_FORWARD);
    scale.info.blas.a[0] = 1;
    ccv_nnc_graph_exec_symbol_new(sg, scale, &m, 1, &k, 1, "scale by one");
    ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWEXP_FORWARD), &k, 1, y, 1, "exp");
    EXPECT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  };
  ccv_nnc_symbolic_graph_t* ref = ccv_nnc_symbolic_graph_new();
  ccv_nnc_tensor_symbol_t a, y;
  build(ref, &a, &y);
  const std::vector<float> want = run_graph(ref, {a}, y, 41);
  for (size_t i = 0; i < want.size(); i++) EXPECT_GT(want[i], 0.f);
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  build(sg, &a, &y);
  int passes[] = {CCV_NNC_SIMPLIFY_USELESS_WORK, CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(sg, passes, 2, nullptr, 0, &y, 1, nullptr, 0, nullptr, 0);
  ASSERT_EQ(live_execs(sg), 1) << last_error();  // exp(a)
  const int* in = nullptr;
  int n = 0;
  ccv_nnc_graph_exec_symbol_io(sg, ccv_nnc_symbolic_graph_sources(sg)[0], &in, &n, nullptr, nullptr);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(in[0], a.d);
  const std::vector<float> got = run_graph(sg, {a}, y, 41);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], want[i]) << i;
  ccv_nnc_symbolic_graph_free(ref);
  ccv_nnc_symbolic_graph_free(sg);
}

TEST(Simplify, ConstantFoldingTurnsUniformResultsIntoConstants) {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  const auto z = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "zero");
  const auto o = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "one");
  const auto a = ccv_nnc_tensor_symbol_new(sg, param(CCV_32F, {4, 4}), "a");
  ccv_nnc_tensor_symbol_set_flags(sg, z, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
  ccv_nnc_tensor_symbol_set_flags(sg, o, CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
  const auto e = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "exp0");   // exp(0) = 1: folds
  const auto s = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "two");    // 1 + 1 = 2: runs
  const auto y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");      // a * 2: runs
  ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWEXP_FORWARD), &z, 1, &e, 1, "exp");
  const ccv_nnc_tensor_symbol_t sum_in[] = {e, o}, prod_in[] = {a, s};
  ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWSUM_FORWARD), sum_in, 2, &s, 1, "sum");
  ccv_nnc_graph_exec_symbol_new(sg, plain(CCV_NNC_EWPROD_FORWARD), prod_in, 2, &y, 1, "prod");
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  int passes[] = {CCV_NNC_SIMPLIFY_CONSTANT_FOLDING};
  ccv_nnc_symbolic_graph_simplify(sg, passes, 1, nullptr, 0, &y, 1, nullptr, 0, nullptr, 0);
  EXPECT_EQ(live_execs(sg), 2) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(sg, e), CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(sg, s), 0);
  const std::vector<float> got = run_graph(sg, {a}, y, 51);
  std::mt19937 rng(51);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  ASSERT_EQ(got.size(), 16u);
  for (size_t i = 0; i < got.size(); i++) EXPECT_FLOAT_EQ(got[i], 2 * d(rng)) << i;
  ccv_nnc_symbolic_graph_free(sg);
}

TEST(SymbolicGraph, FormatVisitsInOrderAndReachabilityIsReported) {
  Redundant r;
  struct Seen {
    std::vector<int> nodes;
    std::vector<int> incoming_counts;
  } seen;
  ccv_nnc_symbolic_graph_format(
      r.sg, nullptr, 0, nullptr, 0,
      [](const ccv_nnc_symbolic_graph_t*, const int node, const char* const, const ccv_nnc_cmd_t, const int, const int* const,
         const int incoming_size, const int* const, const int, const int* const, const int, const int* const, const int,
         void* const context) {
        auto* s = static_cast<Seen*>(context);
        s->nodes.push_back(node);
        s->incoming_counts.push_back(incoming_size);
      },
      &seen);
  ASSERT_EQ(seen.nodes.size(), 6u) << last_error();
  EXPECT_EQ(seen.nodes.back(), 5);            // the sum comes last
  EXPECT_EQ(seen.incoming_counts.back(), 3);  // after exp1, exp2, transfer
  const ccv_nnc_graph_exec_symbol_t sources[] = {{0, r.sg}, {4, r.sg}};  // exp1 (reaches sum), sqrt (reaches nothing)
  const ccv_nnc_graph_exec_symbol_t dest[] = {{5, r.sg}};
  uint64_t bits = ~uint64_t{0};
  ccv_nnc_symbolic_graph_sources_to_destinations(r.sg, sources, 2, dest, 1, &bits);
  EXPECT_EQ(bits, uint64_t{1});
}

}  // namespace
