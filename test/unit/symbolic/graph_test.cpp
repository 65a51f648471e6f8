// Level 3: symbolic graphs compiled and run against direct computation.
// Values are checked against double-precision references written here;
// memory facts (in place, concatenation in place, reuse) against the arena.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cmd_test_util.hpp"
#include "symbolic_test_util.hpp"
#include "graph/graph.hpp"

using namespace cmdtest;
using namespace symtest;

namespace {

ccv_nnc_cmd_t gemm(bool transpose_w) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  if (transpose_w) {
    p.blas.transpose_b[0] = 0;
    p.blas.transpose_b[1] = 1;
  }
  p.blas.a[0] = 1;
  p.blas.a[1] = 1;
  return ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, p, 0);
}

// Owns a symbolic graph and what it compiles to.
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
  bool compile(std::vector<ccv_nnc_tensor_symbol_t> outputs, std::vector<ccv_nnc_tensor_bind_t> binds = {}) {
    ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds.data(), static_cast<int>(binds.size()),
                                   outputs.data(), static_cast<int>(outputs.size()), nullptr, 0, nullptr, 0, &g, &ta, &ea);
    return g && ta && ea;
  }
  ccv_nnc_tensor_t* t(ccv_nnc_tensor_symbol_t s) const { return ccv_nnc_tensor_from_symbol(ta, s); }
  int run() { return ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr); }
};

void fill(ccv_nnc_tensor_t* t, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  const int n = ccv_nnc_tensor_count(t->info);
  for (int i = 0; i < n; i++) t->data.f32[i] = d(rng);
}

// y[i][j] = sum_k x[i][k] w[j][k] + b[j]
std::vector<double> dense(const std::vector<double>& x, const float* w, const float* b, int rows, int in, int out) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < out; j++) {
      double s = b[j];
      for (int k = 0; k < in; k++) s += x[static_cast<size_t>(i * in + k)] * w[j * in + k];
      y[static_cast<size_t>(i * out + j)] = s;
    }
  return y;
}

// x -> dense -> relu -> dense -> softmax, shapes inferred for everything after x.
struct Mlp {
  Compiled c;
  ccv_nnc_tensor_symbol_t x, w1, b1, h, r, w2, b2, y, p;
  ccv_nnc_graph_exec_symbol_t fc1, relu, fc2, softmax;
  static constexpr int kRows = 7, kIn = 5, kHidden = 9, kOut = 4;
  Mlp() {
    x = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {kRows, kIn}), "x");
    w1 = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {kHidden, kIn}), "w1");
    b1 = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {kHidden}), "b1");
    w2 = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {kOut, kHidden}), "w2");
    b2 = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {kOut}), "b2");
    h = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "h");
    r = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "r");
    y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
    p = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "p");
    const ccv_nnc_tensor_symbol_t i1[] = {x, w1, b1}, o1[] = {h};
    fc1 = ccv_nnc_graph_exec_symbol_new(c.sg, gemm(true), i1, 3, o1, 1, "fc1");
    relu = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_RELU_FORWARD), &h, 1, &r, 1, "relu");
    const ccv_nnc_tensor_symbol_t i2[] = {r, w2, b2};
    fc2 = ccv_nnc_graph_exec_symbol_new(c.sg, gemm(true), i2, 3, &y, 1, "fc2");
    softmax = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_SOFTMAX_FORWARD), &y, 1, &p, 1, "softmax");
  }
  std::vector<double> reference() const {
    std::vector<double> xv(static_cast<size_t>(kRows * kIn));
    const ccv_nnc_tensor_t* xt = c.t(x);
    for (size_t i = 0; i < xv.size(); i++) xv[i] = xt->data.f32[i];
    std::vector<double> hv = dense(xv, c.t(w1)->data.f32, c.t(b1)->data.f32, kRows, kIn, kHidden);
    for (double& v : hv) v = v > 0 ? v : 0;
    std::vector<double> yv = dense(hv, c.t(w2)->data.f32, c.t(b2)->data.f32, kRows, kHidden, kOut);
    for (int i = 0; i < kRows; i++) {
      double m = -1e300, s = 0;
      for (int j = 0; j < kOut; j++) m = std::max(m, yv[static_cast<size_t>(i * kOut + j)]);
      for (int j = 0; j < kOut; j++) s += std::exp(yv[static_cast<size_t>(i * kOut + j)] - m);
      for (int j = 0; j < kOut; j++) yv[static_cast<size_t>(i * kOut + j)] = std::exp(yv[static_cast<size_t>(i * kOut + j)] - m) / s;
    }
    return yv;
  }
};

double max_abs_diff(const ccv_nnc_tensor_t* t, const std::vector<double>& ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size(); i++) m = std::max(m, std::fabs(t->data.f32[i] - ref[i]));
  return m;
}

TEST(SymbolicGraph, ShapesAreInferredAsExecsAreMade) {
  Mlp m;
  const ccv_nnc_tensor_param_t hp = ccv_nnc_tensor_symbol_params(m.c.sg, m.h);
  EXPECT_EQ(hp.dim[0], Mlp::kRows);
  EXPECT_EQ(hp.dim[1], Mlp::kHidden);
  EXPECT_EQ(hp.dim[2], 0);
  EXPECT_EQ(hp.datatype, CCV_32F);
  const ccv_nnc_tensor_param_t pp = ccv_nnc_tensor_symbol_params(m.c.sg, m.p);
  EXPECT_EQ(pp.dim[0], Mlp::kRows);
  EXPECT_EQ(pp.dim[1], Mlp::kOut);
  EXPECT_STREQ(ccv_nnc_tensor_symbol_name(m.c.sg, m.h), "h");
  EXPECT_STREQ(ccv_nnc_graph_exec_symbol_name(m.c.sg, m.fc2), "fc2");
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(m.c.sg, m.softmax).cmd, CCV_NNC_SOFTMAX_FORWARD);
}

TEST(SymbolicGraph, AutogenOrdersByDataAndFindsTheEnds) {
  Mlp m;
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0) << last_error();
  ASSERT_EQ(ccv_nnc_symbolic_graph_source_size(m.c.sg), 1);
  EXPECT_EQ(ccv_nnc_symbolic_graph_sources(m.c.sg)[0].d, m.fc1.d);
  ASSERT_EQ(ccv_nnc_symbolic_graph_destination_size(m.c.sg), 1);
  EXPECT_EQ(ccv_nnc_symbolic_graph_destinations(m.c.sg)[0].d, m.softmax.d);
  const int* tos = nullptr;
  int to_size = 0;
  ccv_nnc_graph_exec_symbol_to(m.c.sg, m.fc1, &tos, &to_size);
  ASSERT_EQ(to_size, 1);
  EXPECT_EQ(tos[0], m.relu.d);
  // Freeing the middle keeps the order it stood for.
  ccv_nnc_graph_exec_symbol_free(m.c.sg, m.relu);
  ccv_nnc_graph_exec_symbol_to(m.c.sg, m.fc1, &tos, &to_size);
  ASSERT_EQ(to_size, 1);
  EXPECT_EQ(tos[0], m.fc2.d);
  EXPECT_EQ(ccv_nnc_symbolic_graph_active_symbol_count(m.c.sg, CCV_NNC_SYMBOL_GRAPH_EXEC), 3);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(m.c.sg), 4);
}

TEST(SymbolicGraph, CompiledMlpMatchesADoubleReferenceAndReusesMemory) {
  Mlp m;
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  ASSERT_TRUE(m.c.compile({m.p})) << last_error();
  std::mt19937 rng(11);
  for (auto s : {m.x, m.w1, m.b1, m.w2, m.b2}) fill(m.c.t(s), rng);
  ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_LT(max_abs_diff(m.c.t(m.p), m.reference()), 1e-6);
  // Inputs keep their values across runs: change x only and run again.
  fill(m.c.t(m.x), rng);
  ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_LT(max_abs_diff(m.c.t(m.p), m.reference()), 1e-6);
  // RELU and SOFTMAX may run in place, and the planner takes those offers:
  // r sits where h was, p where y was.
  EXPECT_EQ(m.c.t(m.r)->data.u8, m.c.t(m.h)->data.u8);
  EXPECT_EQ(m.c.t(m.p)->data.u8, m.c.t(m.y)->data.u8);
  // The arena holds less than every tensor side by side.
  uint64_t all = 0;
  for (auto s : {m.x, m.w1, m.b1, m.w2, m.b2, m.h, m.r, m.y, m.p})
    all += static_cast<uint64_t>(ccv_nnc_tensor_count(m.c.t(s)->info)) * 4;
  EXPECT_LT(ccv_nnc_tensor_arena_size(m.c.ta), all);
  // One source and one destination: the first and last execs.
  EXPECT_EQ(ccv_nnc_graph_exec_source(m.c.ea).d, ccv_nnc_graph_exec_from_symbol(m.c.ea, m.fc1).d);
  EXPECT_EQ(ccv_nnc_graph_exec_destination(m.c.ea).d, ccv_nnc_graph_exec_from_symbol(m.c.ea, m.softmax).d);
  EXPECT_EQ(ccv_nnc_graph_exec_count(m.c.g), 4);
}

TEST(SymbolicGraph, BoundTensorsAreUsedAndCanBeRebound) {
  Mlp m;
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  std::mt19937 rng(12);
  ccv_nnc_tensor_t* w1 = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {Mlp::kHidden, Mlp::kIn}), 0);
  ccv_nnc_tensor_t* w1b = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {Mlp::kHidden, Mlp::kIn}), 0);
  ccv_nnc_tensor_t* wrong = ccv_nnc_tensor_new(nullptr, param(CCV_32F, {Mlp::kIn, Mlp::kHidden + 1}), 0);
  fill(w1, rng);
  fill(w1b, rng);
  ASSERT_TRUE(m.c.compile({m.p}, {{m.w1, w1}})) << last_error();
  EXPECT_EQ(m.c.t(m.w1)->data.f32, w1->data.f32);
  for (auto s : {m.x, m.b1, m.w2, m.b2}) fill(m.c.t(s), rng);
  ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_LT(max_abs_diff(m.c.t(m.p), m.reference()), 1e-6);
  const std::vector<double> first = m.reference();
  ccv_nnc_tensor_bind_symbol(m.c.ta, m.w1, w1b);
  EXPECT_EQ(m.c.t(m.w1)->data.f32, w1b->data.f32);
  ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_LT(max_abs_diff(m.c.t(m.p), m.reference()), 1e-6);
  EXPECT_GT(max_abs_diff(m.c.t(m.p), first), 1e-4);  // the new weights were used
  // A tensor of another shape is refused and changes nothing.
  ccv_nnc_tensor_bind_symbol(m.c.ta, m.w1, wrong);
  EXPECT_NE(last_error().find("ccv_nnc_tensor_bind_symbol"), std::string::npos) << last_error();
  EXPECT_EQ(m.c.t(m.w1)->data.f32, w1b->data.f32);
  ccv_nnc_tensor_arena_clear_bindings(m.c.ta);
  EXPECT_EQ(m.c.t(m.w1)->data.f32, w1->data.f32);
  // Compile-time binding of the wrong shape is refused, with nothing returned.
  Mlp m2;
  EXPECT_FALSE(m2.c.compile({m2.p}, {{m2.w1, wrong}}));
  EXPECT_EQ(m2.c.g, nullptr);
  EXPECT_NE(last_error().find("tensor_binds[0]"), std::string::npos) << last_error();
  ccv_nnc_tensor_free(w1);
  ccv_nnc_tensor_free(w1b);
  ccv_nnc_tensor_free(wrong);
}

// c = [exp(a) | b * 2] written in place through two aliases of c (no copy),
// then d = c + c.
TEST(SymbolicGraph, ConcatenationWrittenInPlaceThroughAliases) {
  Compiled c;
  const int rows = 4, ca = 3, cb = 5;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {rows, ca}), "a");
  const auto b = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {rows, cb}), "b");
  const auto cat = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {rows, ca + cb}), "cat");
  const int ofs_left[CCV_NNC_MAX_DIM_ALLOC] = {0, 0}, ofs_right[CCV_NNC_MAX_DIM_ALLOC] = {0, ca};
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {ca + cb, 1};
  const auto left = ccv_nnc_tensor_symbol_alias_new(c.sg, cat, ofs_left, stride, param(CCV_32F, {rows, ca}), "left");
  const auto right = ccv_nnc_tensor_symbol_alias_new(c.sg, cat, ofs_right, stride, param(CCV_32F, {rows, cb}), "right");
  ASSERT_GE(right.d, 0) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_symbol_alias_to(c.sg, right).d, cat.d);
  const auto d = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "d");
  const auto e1 = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &left, 1, "exp");
  ccv_nnc_cmd_t scale = plain(CCV_NNC_SCALAR_MUL_FORWARD);
  scale.info.blas.a[0] = 2;
  const auto e2 = ccv_nnc_graph_exec_symbol_new(c.sg, scale, &b, 1, &right, 1, "scale");
  ASSERT_GE(e2.d, 0) << last_error();
  const ccv_nnc_tensor_symbol_t two[] = {cat, cat};
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWSUM_FORWARD), two, 2, &d, 1, "sum");
  // A third writer overlapping the left part breaks SSA.
  const int ofs_mid[CCV_NNC_MAX_DIM_ALLOC] = {0, 2};
  const auto mid = ccv_nnc_tensor_symbol_alias_new(c.sg, cat, ofs_mid, stride, param(CCV_32F, {rows, 2}), "mid");
  const auto bad = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &mid, 1, "overlap");
  EXPECT_LT(bad.d, 0);
  EXPECT_EQ(bad.graph, nullptr);
  EXPECT_NE(last_error().find("\"mid\""), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("\"exp\""), std::string::npos) << last_error();
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  EXPECT_EQ(ccv_nnc_symbolic_graph_source_size(c.sg), 2);  // exp and scale
  ASSERT_TRUE(c.compile({d})) << last_error();
  std::mt19937 rng(13);
  fill(c.t(a), rng);
  fill(c.t(b), rng);
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  const ccv_nnc_tensor_t* dt = c.t(d);
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < ca + cb; j++) {
      const double v = j < ca ? std::exp(double(c.t(a)->data.f32[i * ca + j])) : 2.0 * c.t(b)->data.f32[i * cb + j - ca];
      EXPECT_NEAR(dt->data.f32[i * (ca + cb) + j], 2 * v, 1e-5 * std::fabs(2 * v) + 1e-6) << i << "," << j;
    }
  // The parts are views into cat: no copy node, and their data sits inside cat's.
  EXPECT_EQ(c.t(left)->data.u8, c.t(cat)->data.u8);
  EXPECT_EQ(c.t(right)->data.u8, c.t(cat)->data.u8 + ca * 4);
  // exp, scale, sum, and a NOOP joining the two sources.
  EXPECT_EQ(ccv_nnc_graph_exec_count(c.g), 4);
  EXPECT_NE(ccv_nnc_graph_exec_from_symbol(c.ea, e1).graph, nullptr);
}

TEST(SymbolicGraph, InitialisedSymbolsAndReshapes) {
  Compiled c;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 6}), "a");
  const auto z = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 6}), "ones");
  ASSERT_EQ(ccv_nnc_tensor_symbol_set_flags(c.sg, z, CCV_NNC_TENSOR_SYMBOL_INIT_ONES), 0);
  EXPECT_EQ(ccv_nnc_tensor_symbol_flags(c.sg, z), CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
  const auto s = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "s");
  const ccv_nnc_tensor_symbol_t in[] = {a, z};
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWSUM_FORWARD), in, 2, &s, 1, "sum");
  // A reshape of s (stride all zero, another rank) read by the next exec.
  const auto s3 = ccv_nnc_tensor_symbol_alias_new(c.sg, s, ccv_nnc_no_ofs, ccv_nnc_no_ofs, param(CCV_32F, {3, 4}), "s3");
  ASSERT_GE(s3.d, 0) << last_error();
  const auto e = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "e");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &s3, 1, &e, 1, "exp");
  EXPECT_EQ(ccv_nnc_tensor_symbol_params(c.sg, e).dim[0], 3);
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  ASSERT_TRUE(c.compile({e})) << last_error();
  std::mt19937 rng(14);
  fill(c.t(a), rng);
  c.t(z)->data.f32[0] = 7;  // overwritten by the initialiser on every run
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int i = 0; i < 12; i++) EXPECT_NEAR(c.t(e)->data.f32[i], std::exp(c.t(a)->data.f32[i] + 1.0), 1e-5);
  EXPECT_EQ(c.t(z)->data.f32[0], 1.f);
  EXPECT_EQ(c.t(s3)->data.u8, c.t(s)->data.u8);
  EXPECT_EQ(c.t(s3)->info.dim[1], 4);
}

TEST(SymbolicGraph, MistakesAreReportedNotFatal) {
  Compiled c;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {3}), "a");
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {3}), "y");
  const auto e1 = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &y, 1, "first");
  ASSERT_GE(e1.d, 0);
  // A second writer of y.
  const auto e2 = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWLOG_FORWARD), &a, 1, &y, 1, "second");
  EXPECT_LT(e2.d, 0);
  EXPECT_NE(last_error().find("SSA"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("\"first\""), std::string::npos) << last_error();
  // A symbol of another graph, and a freed one.
  Compiled other;
  const auto foreign = ccv_nnc_tensor_symbol_new(other.sg, param(CCV_32F, {3}), "foreign");
  const auto z = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {3}), "z");
  EXPECT_LT(ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &foreign, 1, &z, 1, "x").d, 0);
  EXPECT_NE(last_error().find("another graph"), std::string::npos) << last_error();
  const auto gone = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {3}), "gone");
  ccv_nnc_tensor_symbol_free(c.sg, gone);
  EXPECT_LT(ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &gone, 1, &z, 1, "x").d, 0);
  EXPECT_NE(last_error().find("freed"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_tensor_symbol_params(c.sg, gone).dim[0], 0);
  // An input without a shape.
  const auto shapeless = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "shapeless");
  EXPECT_LT(ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &shapeless, 1, &z, 1, "x").d, 0);
  EXPECT_NE(last_error().find("no shape"), std::string::npos) << last_error();
  // An alias outside its base, an alias of an alias.
  const int far[CCV_NNC_MAX_DIM_ALLOC] = {2};
  EXPECT_LT(ccv_nnc_tensor_symbol_alias_new(c.sg, a, far, ccv_nnc_no_ofs, param(CCV_32F, {2}), "far").d, 0);
  EXPECT_NE(last_error().find("outside"), std::string::npos) << last_error();
  const auto part = ccv_nnc_tensor_symbol_alias_new(c.sg, a, ccv_nnc_no_ofs, ccv_nnc_no_ofs, param(CCV_32F, {2}), "part");
  ASSERT_GE(part.d, 0) << last_error();
  EXPECT_LT(ccv_nnc_tensor_symbol_alias_new(c.sg, part, ccv_nnc_no_ofs, ccv_nnc_no_ofs, param(CCV_32F, {1}), "pp").d, 0);
  // A cycle through explicit edges.
  const auto w = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "w");
  const auto e3 = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &y, 1, &w, 1, "third");
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_concat(c.sg, e1, e3), 0);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_concat(c.sg, e3, e1), -1);
  EXPECT_NE(last_error().find("cycle"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_disjoin(c.sg, e3, e1), -1);
  // A destination the sources do not reach.
  const auto lone = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &z, 1, "lone");
  ASSERT_GE(lone.d, 0) << last_error();
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(c.sg, ccv_nnc_default_compile_params, nullptr, 0, nullptr, 0, &e1, 1, &lone, 1, &g, &ta, &ea);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(ta, nullptr);
  EXPECT_NE(last_error().find("not reachable"), std::string::npos) << last_error();
  // NULL everywhere.
  EXPECT_LT(ccv_nnc_tensor_symbol_new(nullptr, param(CCV_32F, {3}), "n").d, 0);
  ccv_nnc_symbolic_graph_compile(nullptr, ccv_nnc_default_compile_params, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, &g,
                                 &ta, &ea);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(ccv_nnc_tensor_from_symbol(nullptr, a), nullptr);
}

TEST(SymbolicGraph, AShapeTheKernelRefusesFailsTheRunWithTheNodeNamed) {
  Compiled c;
  const auto x = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {4, 3}), "x");
  const auto w = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 5}), "w");  // needs 2x3
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {4, 2}), "y");
  const ccv_nnc_tensor_symbol_t in[] = {x, w};
  ccv_nnc_graph_exec_symbol_new(c.sg, gemm(true), in, 2, &y, 1, "fc");
  ASSERT_TRUE(c.compile({y})) << last_error();
  EXPECT_EQ(c.run(), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("GEMM"), std::string::npos) << last_error();
}

TEST(SymbolicGraph, DotNamesEveryExecAndTensor) {
  Mlp m;
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_ALL_EXECS), 0);
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  ccv_nnc_symbolic_graph_dot(m.c.sg, CCV_NNC_LONG_DOT_GRAPH, f);
  std::fclose(f);
  const std::string dot(buf, size);
  std::free(buf);
  for (const char* s : {"fc1", "relu", "softmax", "w2", "node0 -> node1", "7x9"})
    EXPECT_NE(dot.find(s), std::string::npos) << s << "\n" << dot;
}

TEST(SymbolicGraph, CompileFreeCompileLeavesNothingBehind) {
  // Under the sanitizer build a leak here fails the run.
  for (int round = 0; round < 3; round++) {
    Mlp m;
    ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
    ASSERT_TRUE(m.c.compile({m.p, m.h})) << last_error();
    ccv_nnc_tensor_arena_buffer_free(m.c.ta);
    EXPECT_EQ(ccv_nnc_tensor_arena_size(m.c.ta), 0u);
    EXPECT_EQ(m.c.t(m.h)->data.u8, nullptr);
    // Running without the memory is an error with a message, not a stray write.
    EXPECT_EQ(m.c.run(), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(last_error().find("no data"), std::string::npos) << last_error();
  }
}

}  // namespace

namespace {

// Eight branches x -> scale -> exp -> sum of each row, added up: each
// branch's temporaries die at its reduction, and later branches take their
// memory. Every pair of tensors that share bytes must be ordered in the
// compiled graph (all nodes touching the earlier before the later's writer),
// so that the graph also runs right on several streams.
TEST(SymbolicGraph, SharedMemoryIsOrderedSoStreamsCannotRace) {
  Compiled c;
  constexpr int kBranches = 8;
  const auto x = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {64, 64}), "x");
  std::vector<ccv_nnc_tensor_symbol_t> logs;
  std::vector<std::vector<ccv_nnc_tensor_symbol_t>> temps(kBranches);
  for (int b = 0; b < kBranches; b++) {
    const auto s = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, nullptr);
    const auto e = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, nullptr);
    const auto l = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, nullptr);
    ccv_nnc_cmd_t scale = plain(CCV_NNC_SCALAR_MUL_FORWARD);
    scale.info.blas.a[0] = 0.125f * static_cast<float>(b + 1);
    ccv_nnc_graph_exec_symbol_new(c.sg, scale, &x, 1, &s, 1, nullptr);
    ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &s, 1, &e, 1, nullptr);
    ccv_nnc_cmd_t reduce = plain(CCV_NNC_REDUCE_SUM_FORWARD);
    reduce.info.reduce.axis[0] = 1;
    reduce.info.reduce.count = 1;
    ccv_nnc_graph_exec_symbol_new(c.sg, reduce, &e, 1, &l, 1, nullptr);
    temps[static_cast<size_t>(b)] = {s, e};
    logs.push_back(l);
  }
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWSUM_FORWARD), logs.data(), kBranches, &y, 1, "sum");
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  ASSERT_TRUE(c.compile({y})) << last_error();
  // Which symbols share bytes (by their tensors' data ranges).
  struct Sym {
    ccv_nnc_tensor_symbol_t s;
    int writer = -1;             // concrete node
    std::vector<int> touching;   // concrete nodes
  };
  std::vector<Sym> syms;
  const int n_exec = ccv_nnc_graph_exec_symbol_count(c.sg);
  for (int d = 0; d < ccv_nnc_tensor_symbol_count(c.sg); d++) {
    Sym sym;
    sym.s = {d, c.sg};
    for (int e = 0; e < n_exec; e++) {
      const int *in, *out;
      int ni, no;
      ccv_nnc_graph_exec_symbol_io(c.sg, {e, c.sg}, &in, &ni, &out, &no);
      const int node = ccv_nnc_graph_exec_from_symbol(c.ea, {e, c.sg}).d;
      for (int i = 0; i < ni; i++)
        if (in[i] == d) sym.touching.push_back(node);
      for (int i = 0; i < no; i++)
        if (out[i] == d) {
          sym.touching.push_back(node);
          sym.writer = node;
        }
    }
    syms.push_back(sym);
  }
  // Reachability in the compiled graph (read through lib/graph/graph.hpp).
  const ccv_nnc_graph_t* g = c.g;
  auto reaches = [&](int from, int to) {
    std::vector<char> seen(g->nodes.size(), 0);
    std::vector<int> stack{from};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (n == to) return true;
      for (int t : g->nodes[static_cast<size_t>(n)].outgoing)
        if (!seen[static_cast<size_t>(t)]) {
          seen[static_cast<size_t>(t)] = 1;
          stack.push_back(t);
        }
    }
    return false;
  };
  int shared = 0;
  for (size_t i = 0; i < syms.size(); i++)
    for (size_t j = 0; j < syms.size(); j++) {
      if (i == j || syms[i].writer < 0 || syms[j].writer < 0) continue;
      const ccv_nnc_tensor_t* a = c.t(syms[i].s);
      const ccv_nnc_tensor_t* b = c.t(syms[j].s);
      const unsigned char* a0 = a->data.u8;
      const unsigned char* b0 = b->data.u8;
      const size_t abytes = ccv_nnc_tensor_count(a->info) * 4, bbytes = ccv_nnc_tensor_count(b->info) * 4;
      if (!(a0 < b0 + bbytes && b0 < a0 + abytes)) continue;
      // i written first (nodes are numbered in the compiled order): everything
      // touching i must precede j's writer (unless j took i's place in that very node).
      if (syms[i].writer >= syms[j].writer) continue;
      shared++;
      for (int n : syms[i].touching) {
        if (n != syms[j].writer) {
          EXPECT_TRUE(reaches(n, syms[j].writer)) << "symbols " << i << " and " << j;
        }
      }
    }
  EXPECT_GT(shared, 0);  // the branches did share memory
  // And the values are right when the graph runs on two streams.
  std::mt19937 rng(15);
  fill(c.t(x), rng);
  ccv_nnc_graph_set_default_static_schedule(c.g, CCV_STREAM_CONTEXT_CPU, 2);
  for (int round = 0; round < 5; round++) {
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    for (int r = 0; r < 64; r++) {
      double want = 0;
      for (int b = 0; b < kBranches; b++)
        for (int k = 0; k < 64; k++) want += std::exp(0.125 * (b + 1) * c.t(x)->data.f32[r * 64 + k]);
      EXPECT_NEAR(c.t(y)->data.f32[r], want, 1e-5 * want) << r;
    }
  }
}

}  // namespace

namespace {

TEST(SymbolicGraph, EditingExecsDuplicatingGraphsAndHooks) {
  Compiled c;
  // Hooks see every symbol made after they are installed.
  struct Log {
    int tensors = 0, aliases = 0, execs = 0;
  } log;
  ccv_nnc_tensor_symbol_new_hook_f previous = nullptr;
  EXPECT_EQ(ccv_nnc_tensor_symbol_new_hook(
                c.sg, [](void* ctx, const ccv_nnc_tensor_symbol_t, const ccv_nnc_tensor_param_t, const char* const) { static_cast<Log*>(ctx)->tensors++; },
                &log, &previous),
            nullptr);
  EXPECT_EQ(previous, nullptr);
  ccv_nnc_tensor_symbol_alias_new_hook(
      c.sg,
      [](void* ctx, const ccv_nnc_tensor_symbol_t, const ccv_nnc_tensor_symbol_t, const int*, const int*, const ccv_nnc_tensor_param_t,
         const char* const) { static_cast<Log*>(ctx)->aliases++; },
      &log, nullptr);
  ccv_nnc_graph_exec_symbol_new_hook(
      c.sg,
      [](void* ctx, const ccv_nnc_graph_exec_symbol_t, const ccv_nnc_cmd_t, const ccv_nnc_tensor_symbol_t* const, const int,
         const ccv_nnc_tensor_symbol_t* const, const int, const char* const) { static_cast<Log*>(ctx)->execs++; },
      &log, nullptr);
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 3}), "a");
  const auto b = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 3}), "b");
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
  const auto half = ccv_nnc_tensor_symbol_alias_new(c.sg, a, ccv_nnc_no_ofs, ccv_nnc_no_ofs, param(CCV_32F, {3}), "half");
  const auto e = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &y, 1, "exp");
  EXPECT_EQ(log.tensors, 3);
  EXPECT_EQ(log.aliases, 1);
  EXPECT_EQ(log.execs, 1);
  EXPECT_GE(half.d, 0);
  // Read b instead of a; then the shape of a fresh output from tensor_auto.
  ccv_nnc_graph_exec_symbol_replace_io(c.sg, e, a, b);
  const int* in = nullptr;
  int ni = 0;
  ccv_nnc_graph_exec_symbol_io(c.sg, e, &in, &ni, nullptr, nullptr);
  ASSERT_EQ(ni, 1);
  EXPECT_EQ(in[0], b.d);
  const auto z = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "z");
  ccv_nnc_graph_exec_symbol_set_io(c.sg, e, &b, 1, &z, 1);
  EXPECT_EQ(ccv_nnc_tensor_symbol_params(c.sg, z).dim[0], 0);
  ccv_nnc_symbolic_graph_tensor_auto(c.sg, nullptr, 0, nullptr, 0);
  EXPECT_EQ(ccv_nnc_tensor_symbol_params(c.sg, z).dim[1], 3) << last_error();
  // y has no writer now, so another exec may write it; z has one.
  EXPECT_GE(ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWLOG_FORWARD), &b, 1, &y, 1, "log").d, 0) << last_error();
  ccv_nnc_graph_exec_symbol_set_io(c.sg, e, &b, 1, &y, 1);
  EXPECT_NE(last_error().find("SSA"), std::string::npos) << last_error();
  // A duplicate with its commands rewritten: the same indices, another graph.
  ccv_nnc_symbolic_graph_t* dup = ccv_nnc_symbolic_graph_dup(c.sg, [](const ccv_nnc_graph_exec_symbol_t, const ccv_nnc_cmd_t cmd) {
    ccv_nnc_cmd_t c2 = cmd;
    if (cmd.cmd == CCV_NNC_EWEXP_FORWARD) c2.cmd = CCV_NNC_EWSQRT_FORWARD;
    return c2;
  });
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(dup, {e.d, dup}).cmd, CCV_NNC_EWSQRT_FORWARD);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_cmd(c.sg, e).cmd, CCV_NNC_EWEXP_FORWARD);
  EXPECT_EQ(ccv_nnc_tensor_symbol_count(dup), ccv_nnc_tensor_symbol_count(c.sg));
  EXPECT_STREQ(ccv_nnc_tensor_symbol_name(dup, {z.d, dup}), "z");
  EXPECT_EQ(log.tensors, 4);  // the duplicate made no calls into the hooks
  ccv_nnc_tensor_symbol_pair_with(dup, {z.d, dup}, z);
  ccv_nnc_symbolic_graph_free(dup);
  // Not supported yet, and said so.
  ccv_nnc_symbolic_graph_memory_reduction(c.sg, nullptr, 0, nullptr, 0);
  EXPECT_NE(last_error().find("not supported yet"), std::string::npos) << last_error();
}

}  // namespace

namespace {

TEST(SymbolicGraph, ReinitTakesNewShapesAndCommandsWithoutRecompiling) {
  Compiled c;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {6, 4}), "a");
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
  const auto e = ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &y, 1, "f");
  // An alias (a's first row) read by a second exec: its header must survive reinit in place.
  const auto row = ccv_nnc_tensor_symbol_alias_new(c.sg, a, ccv_nnc_no_ofs, ccv_nnc_no_ofs, param(CCV_32F, {1, 4}), "row");
  const auto w = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "w");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWSQRT_FORWARD), &row, 1, &w, 1, "g");
  ASSERT_TRUE(c.compile({y, w})) << last_error();
  std::mt19937 rng(16);
  fill(c.t(a), rng);
  // Smaller shapes fit the memory compiled for them.
  ASSERT_EQ(ccv_nnc_tensor_symbol_set(c.sg, a, param(CCV_32F, {3, 4})), 0);
  ASSERT_EQ(ccv_nnc_tensor_symbol_set(c.sg, y, param(CCV_32F, {3, 4})), 0);
  ASSERT_EQ(ccv_nnc_tensor_arena_reinit(c.ta, c.sg), 0) << last_error();
  EXPECT_EQ(c.t(y)->info.dim[0], 3);
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int i = 0; i < 12; i++) EXPECT_NEAR(c.t(y)->data.f32[i], std::exp(double(c.t(a)->data.f32[i])), 1e-6);
  for (int i = 0; i < 4; i++) {
    const double v = std::sqrt(double(c.t(a)->data.f32[i]));
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(c.t(w)->data.f32[i])) << i;
    } else {
      EXPECT_NEAR(c.t(w)->data.f32[i], v, 1e-6) << i;
    }
  }
  // Another command, the same tensors.
  ccv_nnc_graph_exec_symbol_set(c.sg, e, plain(CCV_NNC_EWLOG_FORWARD));
  ccv_nnc_graph_exec_reinit(c.ea, c.g, c.sg);
  for (int i = 0; i < 12; i++) c.t(a)->data.f32[i] = 0.5f + 0.25f * static_cast<float>(i);
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int i = 0; i < 12; i++) EXPECT_NEAR(c.t(y)->data.f32[i], std::log(0.5 + 0.25 * i), 1e-6);
  // A larger shape does not fit: refused, nothing changed.
  ASSERT_EQ(ccv_nnc_tensor_symbol_set(c.sg, a, param(CCV_32F, {8, 4})), 0);
  EXPECT_EQ(ccv_nnc_tensor_arena_reinit(c.ta, c.sg), -1);
  EXPECT_NE(last_error().find("compile again"), std::string::npos) << last_error();
  EXPECT_EQ(c.t(a)->info.dim[0], 3);
}

}  // namespace

namespace {

// Compiling part of a graph: only the execs between the given sources and
// destinations become nodes; the rest are left out (no node, no memory).
TEST(SymbolicGraph, CompilingASubRangeLeavesTheRestOut) {
  Mlp m;
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  // fc1 .. relu only: r is the output; fc2 and softmax are not compiled.
  ccv_nnc_symbolic_graph_compile(m.c.sg, ccv_nnc_default_compile_params, nullptr, 0, &m.r, 1, &m.fc1, 1, &m.relu, 1, &m.c.g,
                                 &m.c.ta, &m.c.ea);
  ASSERT_NE(m.c.g, nullptr) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_count(m.c.g), 2);
  EXPECT_EQ(ccv_nnc_graph_exec_from_symbol(m.c.ea, m.fc2).graph, nullptr);
  EXPECT_EQ(m.c.t(m.p), nullptr);
  EXPECT_EQ(m.c.t(m.w2), nullptr);
  std::mt19937 rng(17);
  for (auto s : {m.x, m.w1, m.b1}) fill(m.c.t(s), rng);
  ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int i = 0; i < Mlp::kRows; i++)
    for (int j = 0; j < Mlp::kHidden; j++) {
      double s = m.c.t(m.b1)->data.f32[j];
      for (int k = 0; k < Mlp::kIn; k++) s += double(m.c.t(m.x)->data.f32[i * Mlp::kIn + k]) * m.c.t(m.w1)->data.f32[j * Mlp::kIn + k];
      EXPECT_NEAR(m.c.t(m.r)->data.f32[i * Mlp::kHidden + j], s > 0 ? s : 0, 1e-5) << i << "," << j;
    }
  // A freed source is refused by name.
  Mlp m2;
  ccv_nnc_graph_exec_symbol_free(m2.c.sg, m2.fc1);
  ccv_nnc_symbolic_graph_compile(m2.c.sg, ccv_nnc_default_compile_params, nullptr, 0, nullptr, 0, &m2.fc1, 1, nullptr, 0, &m2.c.g,
                                 &m2.c.ta, &m2.c.ea);
  EXPECT_EQ(m2.c.g, nullptr);
  EXPECT_NE(last_error().find("freed"), std::string::npos) << last_error();
}

}  // namespace

namespace {

// A custom allocator gives the arena its memory, at whatever alignment, and takes it back.
struct Counting {
  int allocs = 0, frees = 0;
  size_t bytes = 0;
  void* last = nullptr;
};

TEST(SymbolicGraph, ACustomAllocatorGivesAndTakesTheArena) {
  Counting count;
  static const ccv_nnc_symbolic_graph_compile_allocator_vtab_t vtab = {
      [](const int type, const int pinned, const size_t size, void* const arg) -> void* {
        auto* c = static_cast<Counting*>(arg);
        EXPECT_EQ(type, CCV_TENSOR_CPU_MEMORY);
        EXPECT_EQ(pinned, 0);
        c->allocs++;
        c->bytes = size;
        // Deliberately 8 bytes off a 64-byte boundary.
        unsigned char* p = static_cast<unsigned char*>(std::aligned_alloc(64, size + 64));
        c->last = p + 8;
        return c->last;
      },
      [](void* const ptr, void* const arg) {
        auto* c = static_cast<Counting*>(arg);
        EXPECT_EQ(ptr, c->last);
        c->frees++;
        std::free(static_cast<unsigned char*>(ptr) - 8);
      }};
  ccv_nnc_symbolic_graph_compile_param_t params = ccv_nnc_default_compile_params;
  params.allocator.isa = &vtab;
  params.allocator.context.alloc = &count;
  params.allocator.context.free = &count;
  {
    Mlp m;
    ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(m.c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
    ccv_nnc_symbolic_graph_compile(m.c.sg, params, nullptr, 0, &m.p, 1, nullptr, 0, nullptr, 0, &m.c.g, &m.c.ta, &m.c.ea);
    ASSERT_NE(m.c.g, nullptr) << last_error();
    EXPECT_EQ(count.allocs, 1);
    EXPECT_GE(count.bytes, ccv_nnc_tensor_arena_size(m.c.ta));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.c.t(m.x)->data.u8) % 64, 0u);  // tensors still start on cache lines
    std::mt19937 rng(18);
    for (auto s : {m.x, m.w1, m.b1, m.w2, m.b2}) fill(m.c.t(s), rng);
    ASSERT_EQ(m.c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    EXPECT_LT(max_abs_diff(m.c.t(m.p), m.reference()), 1e-6);
    EXPECT_EQ(count.frees, 0);
  }
  EXPECT_EQ(count.frees, 1);  // the arena's free gave it back
}

}  // namespace

namespace {

// An alias flagged INIT_ONES is set before the first exec, beside a part of
// the same base that an exec writes.
TEST(SymbolicGraph, AnInitialisedAliasBesideAWrittenOne) {
  Compiled c;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 2}), "a");
  const auto base = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, 4}), "base");
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {4, 1}, left_ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 0}, right_ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 2};
  const auto left = ccv_nnc_tensor_symbol_alias_new(c.sg, base, left_ofs, stride, param(CCV_32F, {2, 2}), "left");
  const auto right = ccv_nnc_tensor_symbol_alias_new(c.sg, base, right_ofs, stride, param(CCV_32F, {2, 2}), "right");
  ASSERT_EQ(ccv_nnc_tensor_symbol_set_flags(c.sg, left, CCV_NNC_TENSOR_SYMBOL_INIT_ONES), 0);
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &right, 1, "exp a");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &base, 1, &y, 1, "exp base");
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  ASSERT_TRUE(c.compile({y})) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_count(c.g), 3);  // SET, exp a, exp base
  for (int i = 0; i < 4; i++) c.t(a)->data.f32[i] = 0.25f * static_cast<float>(i);
  ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 4; k++) {
      const double want = k < 2 ? std::exp(1.0) : std::exp(std::exp(0.25 * (r * 2 + k - 2)));
      EXPECT_NEAR(c.t(y)->data.f32[r * 4 + k], want, 1e-5 * want) << r << "," << k;
    }
}

}  // namespace

namespace {

// A base flagged INIT_ZEROS that an exec writes (part of) is set just before
// the first exec touching it, not before the whole run: it may take the bytes
// of a tensor that died before (autodiff's zero-initialised accumulators of
// aliases' gradients lived through the whole run before, 95.0 MB of the LSTM
// training graph's arena at batch 32 instead of 79.0). The right row of acc
// is never written, so it reads zero only if the SET runs after t1's last
// read, every run.
TEST(SymbolicGraph, AWrittenInitialisedBaseIsSetAtItsFirstUse) {
  constexpr int n = 1024;
  Compiled c;
  const auto a = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, n}), "a");
  const auto t1 = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "t1");
  const auto t2 = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "t2");
  const auto acc = ccv_nnc_tensor_symbol_new(c.sg, param(CCV_32F, {2, n}), "acc");
  ASSERT_EQ(ccv_nnc_tensor_symbol_set_flags(c.sg, acc, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS), 0);
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {n, 1}, ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 0};
  const auto row0 = ccv_nnc_tensor_symbol_alias_new(c.sg, acc, ofs, stride, param(CCV_32F, {1, n}), "row0");
  const auto y = ccv_nnc_tensor_symbol_new(c.sg, ccv_nnc_tensor_auto, "y");
  ccv_nnc_cmd_t reduce = plain(CCV_NNC_REDUCE_SUM_FORWARD);
  reduce.info.reduce.axis[0] = 0;
  reduce.info.reduce.count = 1;
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWEXP_FORWARD), &a, 1, &t1, 1, "exp a");
  ccv_nnc_graph_exec_symbol_new(c.sg, reduce, &t1, 1, &t2, 1, "sum rows");
  ccv_nnc_graph_exec_symbol_new(c.sg, plain(CCV_NNC_EWLOG_FORWARD), &t2, 1, &row0, 1, "log into row 0");
  ccv_nnc_graph_exec_symbol_new(c.sg, reduce, &acc, 1, &y, 1, "sum acc");
  ASSERT_EQ(ccv_nnc_graph_exec_symbol_autogen(c.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS), 0);
  ASSERT_TRUE(c.compile({y})) << last_error();
  EXPECT_EQ(ccv_nnc_graph_exec_count(c.g), 5);  // 4 execs and the SET
  // a (2n) beside at most 3n live at once; acc from the start would need 8n.
  EXPECT_LE(ccv_nnc_tensor_arena_size(c.ta), static_cast<uint64_t>(5 * n * 4 + 64 * 5));
  // acc took t1's bytes (t1's last read is before acc's first use).
  EXPECT_EQ(c.t(acc)->data.u8, c.t(t1)->data.u8);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int run = 0; run < 2; run++) {
    for (int i = 0; i < 2 * n; i++) c.t(a)->data.f32[i] = u(rng);
    ASSERT_EQ(c.run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    double worst = 0;
    for (int j = 0; j < n; j++) {
      const double want = std::log(std::exp(static_cast<double>(c.t(a)->data.f32[j])) + std::exp(static_cast<double>(c.t(a)->data.f32[n + j])));
      worst = std::max(worst, std::fabs(c.t(y)->data.f32[j] - want));
    }
    EXPECT_LT(worst, 1e-5) << "run " << run;
  }
}

}  // namespace
