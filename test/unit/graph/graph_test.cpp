// The concrete graph's essentials: graphs against direct execution, run
// order, sources and destinations, streams, topsort, DOT, and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "graph/graph.hpp"

using namespace cmdtest;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

ccv_nnc_cmd_t ewsum() { return command(CCV_NNC_EWSUM_FORWARD); }

// A custom command that records its tag (blas.a[0]) in run order.
std::vector<int> g_trace;
int trace_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
               ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  g_trace.push_back(static_cast<int>(cmd.info.blas.a[0]));
  return cmd.info.blas.a[1] != 0 ? CCV_NNC_EXEC_INVALID : CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_trace_isa = {trace_exec, nullptr};
ccv_nnc_cmd_t tag(int t, bool fail = false) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = static_cast<float>(t);
  p.blas.a[1] = fail ? 1.f : 0.f;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_trace_isa, p, 0);
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
    g_trace.clear();
    g = ccv_nnc_graph_new();
    ASSERT_NE(g, nullptr);
  }
  void TearDown() override { ccv_nnc_graph_free(g); }
  ccv_nnc_graph_exec_t add(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
    return ccv_nnc_graph_exec_new(g, cmd, ccv_nnc_no_hint, in.data(), static_cast<int>(in.size()), out.data(),
                                  static_cast<int>(out.size()));
  }
  ccv_nnc_graph_t* g = nullptr;
};

// d = (a + b) + (a + c), as a diamond of EWSUM nodes, against the same sums in double.
TEST_F(GraphTest, DiamondMatchesDirectSums) {
  std::mt19937 rng(1);
  T a(CCV_32F, {17, 5}), b(CCV_32F, {17, 5}), c(CCV_32F, {17, 5});
  T x(CCV_32F, {17, 5}), y(CCV_32F, {17, 5}), d(CCV_32F, {17, 5});
  fill_random(a, rng), fill_random(b, rng), fill_random(c, rng);
  const auto n1 = add(ewsum(), {a, b}, {x});
  const auto n2 = add(ewsum(), {a, c}, {y});
  const auto n3 = add(ewsum(), {x, y}, {d});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n1, n3), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n2, n3), 0);
  EXPECT_EQ(ccv_nnc_graph_exec_count(g), 3);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (size_t i = 0; i < d.count(); i++) EXPECT_EQ(d.get(i), 2 * a.get(i) + b.get(i) + c.get(i)) << i;
  // Runs again with new inputs (the cached order stays right).
  fill_random(b, rng);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < d.count(); i++) EXPECT_EQ(d.get(i), 2 * a.get(i) + b.get(i) + c.get(i)) << i;
}

TEST_F(GraphTest, EdgesDecideTheOrderNotCreation) {
  const auto n0 = add(tag(0), {}, {});
  const auto n1 = add(tag(1), {}, {});
  const auto n2 = add(tag(2), {}, {});
  const auto n3 = add(tag(3), {}, {});
  // 3 -> 1 -> 0 -> 2
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n3, n1), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n1, n0), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n2), 0);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{3, 1, 0, 2}));
  // Disjoin 1 -> 0: now 0 -> 2 and 3 -> 1 are independent; the order starts at the sources 0 and 3.
  ASSERT_EQ(ccv_nnc_graph_exec_disjoin(g, n1, n0), 0);
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  ASSERT_EQ(g_trace.size(), 4u);
  auto pos = [&](int t) { return std::find(g_trace.begin(), g_trace.end(), t) - g_trace.begin(); };
  EXPECT_LT(pos(0), pos(2));
  EXPECT_LT(pos(3), pos(1));
  EXPECT_EQ(ccv_nnc_graph_exec_disjoin(g, n1, n0), -1);  // no such edge any more
  EXPECT_NE(last_error().find("no edge"), std::string::npos);
}

TEST_F(GraphTest, SourcesAndDestinationsSelectASubgraph) {
  // Chain 0 -> 1 -> 2 -> 3 -> 4.
  std::vector<ccv_nnc_graph_exec_t> n;
  for (int i = 0; i < 5; i++) n.push_back(add(tag(i), {}, {}));
  for (int i = 0; i < 4; i++) ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n[i], n[i + 1]), 0);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, &n[1], 1, &n[3], 1, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{1, 2, 3}));
  // Defaults set on the graph.
  ccv_nnc_graph_set_sources(g, &n[2], 1);
  ccv_nnc_graph_set_destinations(g, &n[4], 1);
  EXPECT_EQ(ccv_nnc_graph_source_size(g), 1);
  EXPECT_EQ(ccv_nnc_graph_sources(g)[0].d, 2);
  EXPECT_EQ(ccv_nnc_graph_destinations(g)[0].d, 4);
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{2, 3, 4}));
}

// Changing the default sources or destinations after a default run replaces
// the cached default order and plan.
TEST_F(GraphTest, NewDefaultsReplaceTheCachedDefaultPlan) {
  std::vector<ccv_nnc_graph_exec_t> n;
  for (int i = 0; i < 4; i++) n.push_back(add(tag(i), {}, {}));
  for (int i = 0; i < 3; i++) ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n[i], n[i + 1]), 0);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2, 3}));
  ccv_nnc_graph_set_sources(g, &n[1], 1);
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{1, 2, 3}));
  ccv_nnc_graph_set_destinations(g, &n[2], 1);
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{1, 2}));
  // A run given only sources takes the default destinations, and follows them too.
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, &n[0], 1, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2}));
  ccv_nnc_graph_set_destinations(g, &n[3], 1);
  g_trace.clear();
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, &n[0], 1, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2, 3}));
}

// Runs with explicit sources and destinations keep their plans (several
// ranges at once) and drop them when the graph changes: new nodes and edges,
// a node's command, a node's tensors.
TEST_F(GraphTest, ExplicitRangePlansAreCachedAndFollowChanges) {
  T a(CCV_32F, {3}), b(CCV_32F, {3}), c(CCV_32F, {3}), x(CCV_32F, {3}), y(CCV_32F, {3});
  for (size_t i = 0; i < 3; i++) a.set(i, 1.0 + i), b.set(i, 10.0 * (i + 1)), c.set(i, -7.0 + i);
  std::vector<ccv_nnc_graph_exec_t> n;
  n.push_back(add(tag(0), {}, {}));
  n.push_back(add(ewsum(), {a, b}, {x}));  // x = a + b
  n.push_back(add(tag(2), {}, {}));
  n.push_back(add(ewsum(), {x, x}, {y}));  // y = 2x
  for (int i = 0; i < 3; i++) ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n[i], n[i + 1]), 0);
  auto run_range = [&](int from, int to) {
    g_trace.clear();
    return ccv_nnc_graph_run(g, 0, &n[from], 1, &n[to], 1, nullptr, nullptr);
  };
  for (int round = 0; round < 3; round++) {
    ASSERT_EQ(run_range(0, 3), 0) << last_error();
    EXPECT_EQ(g_trace, (std::vector<int>{0, 2}));
    for (size_t i = 0; i < 3; i++) EXPECT_EQ(y.get(i), 2 * (a.get(i) + b.get(i)));
    ASSERT_EQ(run_range(2, 2), 0);
    EXPECT_EQ(g_trace, (std::vector<int>{2}));
    ASSERT_EQ(run_range(0, 2), 0);
    EXPECT_EQ(g_trace, (std::vector<int>{0, 2}));
    EXPECT_EQ(g->range_plans.size(), 3u);
  }
  // The node's tensors change: x = a + c.
  ccv_nnc_tensor_t* in[] = {a, c};
  ccv_nnc_tensor_t* out[] = {x};
  ccv_nnc_graph_exec_set_io(g, n[1], in, 2, out, 1);
  EXPECT_TRUE(g->range_plans.empty());
  ASSERT_EQ(run_range(0, 3), 0) << last_error();
  for (size_t i = 0; i < 3; i++) EXPECT_EQ(y.get(i), 2 * (a.get(i) + c.get(i)));
  // The node's command changes: a custom tag instead of the sum.
  ccv_nnc_graph_exec_set(g, n[1], tag(1));
  ASSERT_EQ(run_range(0, 3), 0) << last_error();
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2}));
  // A new node after the old end, and an edge to it.
  const auto n4 = add(tag(4), {}, {});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n[3], n4), 0);
  n.push_back(n4);
  ASSERT_EQ(run_range(0, 3), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(run_range(0, 4), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1, 2, 4}));
  // Removing an edge cuts the range: nothing both follows 0 and leads to 4.
  ASSERT_EQ(ccv_nnc_graph_exec_disjoin(g, n[1], n[2]), 0);
  ASSERT_EQ(run_range(0, 4), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{}));
  ASSERT_EQ(run_range(0, 1), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1}));
  // More ranges than the cache keeps still run right.
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n[1], n[2]), 0);
  for (int round = 0; round < 2; round++)
    for (int from = 0; from < 5; from++)
      for (int to = from; to < 5; to++) {
        ASSERT_EQ(run_range(from, to), 0);
        std::vector<int> expect;
        for (int k = from; k <= to; k++)
          if (k != 3) expect.push_back(k);
        EXPECT_EQ(g_trace, expect) << from << ".." << to;
      }
  // Bad ranges are refused every time, cached or not.
  ccv_nnc_graph_exec_t foreign{0, nullptr};
  for (int round = 0; round < 2; round++) {
    EXPECT_EQ(ccv_nnc_graph_run(g, 0, &foreign, 1, &n[1], 1, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(ccv_nnc_graph_run(g, 0, &n[0], -1, &n[1], 1, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 1, &n[1], 1, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  }
}

TEST_F(GraphTest, AFailingNodeStopsTheRunAndIsNamed) {
  const auto n0 = add(tag(0), {}, {});
  const auto n1 = add(tag(1, true), {}, {});
  const auto n2 = add(tag(2), {}, {});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n1, n2), 0);
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(g_trace, (std::vector<int>{0, 1}));
  EXPECT_NE(last_error().find("node 1 (CCV_NNC_CUSTOM_FORWARD) failed"), std::string::npos) << last_error();
  // A node with a shape mismatch fails with the command's own message.
  T a(CCV_32F, {3}), b(CCV_32F, {4}), c(CCV_32F, {3});
  ccv_nnc_graph_exec_set(g, n1, ewsum());
  ccv_nnc_tensor_t* in[] = {a, b};
  ccv_nnc_tensor_t* out[] = {c};
  ccv_nnc_graph_exec_set_io(g, n1, in, 2, out, 1);
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("EWSUM"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_cmd(g, n1).cmd, static_cast<uint32_t>(CCV_NNC_EWSUM_FORWARD));
}

TEST_F(GraphTest, CyclesAndForeignNodesAreRefused) {
  const auto n0 = add(tag(0), {}, {});
  const auto n1 = add(tag(1), {}, {});
  const auto n2 = add(tag(2), {}, {});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n1, n2), 0);
  EXPECT_EQ(ccv_nnc_graph_exec_concat(g, n2, n0), -1);
  EXPECT_NE(last_error().find("cycle"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_concat(g, n1, n1), -1);
  EXPECT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);  // an existing edge again: fine, not doubled
  ccv_nnc_graph_t* other = ccv_nnc_graph_new();
  const auto foreign = ccv_nnc_graph_exec_new(other, tag(9), ccv_nnc_no_hint, nullptr, 0, nullptr, 0);
  EXPECT_EQ(ccv_nnc_graph_exec_concat(g, n0, foreign), -1);
  EXPECT_NE(last_error().find("another graph"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, &foreign, 1, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  ccv_nnc_graph_exec_t stale = n0;
  stale.d = 77;
  ccv_nnc_graph_exec_set_hint(g, stale, ccv_nnc_no_hint);
  EXPECT_NE(last_error().find("does not exist"), std::string::npos);
  ccv_nnc_graph_free(other);
  // Wrong tensor counts.
  const auto bad = ccv_nnc_graph_exec_new(g, tag(3), ccv_nnc_no_hint, nullptr, 2, nullptr, 0);
  EXPECT_TRUE(CCV_NO_GRAPH_EXEC(bad));
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  EXPECT_EQ(ccv_nnc_graph_exec_count(g), 3);
  EXPECT_EQ(ccv_nnc_graph_run(nullptr, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  ccv_nnc_graph_free(nullptr);
}

TEST_F(GraphTest, TopsortRenumbersAndKeepsResults) {
  const auto n0 = add(tag(0), {}, {});
  const auto n1 = add(tag(1), {}, {});
  const auto n2 = add(tag(2), {}, {});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n2, n0), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);
  int cvt[3] = {-1, -1, -1};
  ccv_nnc_graph_topsort(g, cvt, 3);
  EXPECT_EQ(cvt[2], 0);
  EXPECT_EQ(cvt[0], 1);
  EXPECT_EQ(cvt[1], 2);
  ccv_nnc_graph_exec_t first = {0, g};
  EXPECT_EQ(static_cast<int>(ccv_nnc_graph_exec_cmd(g, first).info.blas.a[0]), 2);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  EXPECT_EQ(g_trace, (std::vector<int>{2, 0, 1}));
}

TEST_F(GraphTest, RunOnAStreamMatchesTheSerialRun) {
  std::mt19937 rng(2);
  // A wide graph: 8 chains of 4 sums each, joined at the end.
  std::vector<std::unique_ptr<T>> keep;
  std::vector<ccv_nnc_graph_exec_t> tails;
  T x(CCV_32F, {64});
  fill_random(x, rng);
  for (int c = 0; c < 8; c++) {
    ccv_nnc_tensor_t* prev = x;
    ccv_nnc_graph_exec_t last{};
    for (int k = 0; k < 4; k++) {
      keep.push_back(std::make_unique<T>(CCV_32F, std::vector<int>{64}));
      const auto n = add(ewsum(), {prev, x}, {keep.back()->get()});
      if (k) {
        ASSERT_EQ(ccv_nnc_graph_exec_concat(g, last, n), 0);
      }
      last = n;
      prev = keep.back()->get();
    }
    tails.push_back(last);
  }
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), 0) << last_error();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  // Each chain's last tensor is 5x.
  for (int c = 0; c < 8; c++) {
    const T& last = *keep[static_cast<size_t>(c * 4 + 3)];
    for (size_t i = 0; i < 64; i++) EXPECT_EQ(last.get(i), 5 * x.get(i));
  }
}

TEST_F(GraphTest, DotNamesNodesEdgesAndShapes) {
  T a(CCV_32F, {2, 3}), b(CCV_32F, {2, 3});
  const auto n0 = add(ewsum(), {a, a}, {b});
  const auto n1 = add(tag(1), {}, {});
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, n0, n1), 0);
  char* buffer = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buffer, &size);
  ccv_nnc_graph_dot(g, CCV_NNC_LONG_DOT_GRAPH, f);
  std::fclose(f);
  const std::string out(buffer, size);
  free(buffer);
  EXPECT_NE(out.find("digraph"), std::string::npos);
  EXPECT_NE(out.find("CCV_NNC_EWSUM_FORWARD"), std::string::npos);
  EXPECT_NE(out.find("CCV_NNC_CUSTOM_FORWARD"), std::string::npos);
  EXPECT_NE(out.find("node0 -> node1"), std::string::npos);
  EXPECT_NE(out.find("32F 2x3"), std::string::npos) << out;
}

TEST_F(GraphTest, AutotuneKeepsAWorkingBackend) {
  std::mt19937 rng(3);
  T a(CCV_32F, {9, 7}), w(CCV_32F, {7, 4}), y(CCV_32F, {9, 4});
  fill_uniform(a, rng), fill_uniform(w, rng);
  ccv_nnc_cmd_t gemm = command(CCV_NNC_GEMM_FORWARD);
  gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
  const auto n = add(gemm, {a, w}, {y});
  ccv_nnc_graph_autotune(g, 0, 0, nullptr, 0, nullptr, 0);
  EXPECT_NE(ccv_nnc_graph_exec_cmd(g, n).backend, 0u);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0);
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < 4; j++) {
      double ref = 0;
      for (int k = 0; k < 7; k++) ref += a.get(static_cast<size_t>(i * 7 + k)) * w.get(static_cast<size_t>(k * 4 + j));
      EXPECT_NEAR(y.get(static_cast<size_t>(i * 4 + j)), ref, 1e-5);
    }
}

}  // namespace
