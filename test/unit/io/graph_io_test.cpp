// Symbolic graphs in SQLite: a small convolutional network with aliases,
// flags, hints, explicit edges, freed symbols and bound weights is written,
// read back, compared symbol by symbol, and both graphs are compiled and run
// on the same input to the same bytes. Corrupt and foreign files are refused.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "symbolic/graph.hpp"

using namespace iotest;

namespace {

using TS = ccv_nnc_tensor_symbol_t;
using ES = ccv_nnc_graph_exec_symbol_t;

std::string message() { return ccv_nnc_error_message(); }

ccv_nnc_tensor_param_t f32(std::vector<int> dims) { return params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, std::move(dims)); }

ccv_nnc_cmd_t command(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

ccv_nnc_hint_t window_hint(int stride, int border) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = h.stride.dim[1] = stride;
  h.border.begin[0] = h.border.begin[1] = border;
  h.border.end[0] = h.border.end[1] = border;
  return h;
}

// The reference network's shape at a small size, plus the parts the format must keep.
struct Net {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  TS x, w1, b1, c1, r1, p1, flat, wd, bd, y, ycol, z, prob;
  std::vector<ccv_nnc_tensor_t*> weights;
  std::vector<ccv_nnc_tensor_bind_t> binds;
  Net() {
    x = ccv_nnc_tensor_symbol_new(sg, f32({2, 12, 12, 1}), "x");
    w1 = ccv_nnc_tensor_symbol_new(sg, f32({4, 5, 5, 1}), "w1");
    b1 = ccv_nnc_tensor_symbol_new(sg, f32({4}), "b1");
    const TS junk = ccv_nnc_tensor_symbol_new(sg, f32({3}), "freed");
    c1 = ccv_nnc_tensor_symbol_new(sg, f32({2, 12, 12, 4}), "c1");
    r1 = ccv_nnc_tensor_symbol_new(sg, f32({2, 12, 12, 4}), "r1");
    p1 = ccv_nnc_tensor_symbol_new(sg, f32({2, 6, 6, 4}), "p1");
    flat = ccv_nnc_tensor_symbol_alias_new(sg, p1, ccv_nnc_no_ofs, nullptr, f32({2, 144}), "flat");
    wd = ccv_nnc_tensor_symbol_new(sg, f32({3, 144}), "wd");
    bd = ccv_nnc_tensor_symbol_new(sg, f32({3}), "bd");
    y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");
    prob = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "prob");
    z = ccv_nnc_tensor_symbol_new(sg, f32({2, 1}), "z");
    ccv_nnc_tensor_symbol_set_flags(sg, z, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);

    ccv_nnc_cmd_t conv = command(CCV_NNC_CONVOLUTION_FORWARD);
    conv.info.size.dim[0] = conv.info.size.dim[1] = 5;
    conv.info.size.dim[2] = 1;
    conv.info.convolution.count = 4;
    conv.info.convolution.groups = 1;
    const TS ci[] = {x, w1, b1};
    const ES e_conv = ccv_nnc_graph_exec_symbol_new(sg, conv, ci, 3, &c1, 1, "conv1");
    ccv_nnc_graph_exec_symbol_set_hint(sg, e_conv, window_hint(1, 2));
    ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_RELU_FORWARD), &c1, 1, &r1, 1, "relu1");
    // An exec that is freed again, between live ones.
    const TS junk_out = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "freed_out");
    const ES e_junk =
        ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_RELU_FORWARD), &x, 1, &junk_out, 1, "freed_exec");
    ccv_nnc_graph_exec_symbol_free(sg, e_junk);
    ccv_nnc_tensor_symbol_free(sg, junk_out);
    ccv_nnc_tensor_symbol_free(sg, junk);
    ccv_nnc_cmd_t pool = command(CCV_NNC_MAX_POOL_FORWARD);
    pool.info.size.dim[0] = pool.info.size.dim[1] = 2;
    pool.info.size.dim[2] = 1;
    const ES e_pool = ccv_nnc_graph_exec_symbol_new(sg, pool, &r1, 1, &p1, 1, "pool1");
    ccv_nnc_graph_exec_symbol_set_hint(sg, e_pool, window_hint(2, 0));
    ccv_nnc_cmd_t gemm = command(CCV_NNC_GEMM_FORWARD);
    gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
    gemm.info.blas.transpose_b[1] = 1;
    const TS gi[] = {flat, wd, bd};
    const ES e_gemm = ccv_nnc_graph_exec_symbol_new(sg, gemm, gi, 3, &y, 1, "dense");
    ccv_nnc_graph_exec_symbol_set_flags(sg, e_gemm, CCV_NNC_GRAPH_EXEC_DISABLE_OPT);
    const ES e_soft = ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_SOFTMAX_FORWARD), &y, 1, &prob, 1, "softmax");
    // A strided alias: the second column of y.
    const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 1};
    const int stride[CCV_NNC_MAX_DIM_ALLOC] = {3, 1};
    ycol = ccv_nnc_tensor_symbol_alias_new(sg, y, ofs, stride, f32({2, 1}), "ycol");
    const TS si[] = {ycol, ycol};
    const ES e_sum = ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_EWSUM_FORWARD), si, 2, &z, 1, "twice");
    ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    // An edge no data dependency implies.
    ccv_nnc_graph_exec_symbol_concat(sg, e_soft, e_sum);
    ccv_nnc_symbolic_graph_set_destinations(sg, &e_sum, 1);

    std::mt19937_64 rng(21);
    for (TS s : {w1, b1, wd, bd}) {
      ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, ccv_nnc_tensor_symbol_params(sg, s), 0);
      std::uniform_real_distribution<float> d(-0.5f, 0.5f);
      for (size_t i = 0; i < count_of(t->info); i++) t->data.f32[i] = d(rng);
      weights.push_back(t);
      binds.push_back({s, t});
    }
  }
  ~Net() {
    for (ccv_nnc_tensor_t* t : weights) ccv_nnc_tensor_free(t);
    ccv_nnc_symbolic_graph_free(sg);
  }
};

struct Read {
  ccv_nnc_symbolic_graph_t* sg = nullptr;
  ccv_nnc_tensor_bind_t* binds = nullptr;
  int bind_size = 0;
  ~Read() {
    for (int i = 0; i < bind_size; i++) ccv_nnc_tensor_free(const_cast<ccv_nnc_tensor_t*>(binds[i].tensor));
    ccfree(binds);
    ccv_nnc_symbolic_graph_free(sg);
  }
};

// Compile with binds, fill x, run; the bytes of the outputs.
std::vector<float> run(ccv_nnc_symbolic_graph_t* sg, const ccv_nnc_tensor_bind_t* binds, int bind_size, TS x,
                       std::vector<TS> outputs) {
  x.graph = sg;  // the same indices in either graph
  for (TS& s : outputs) s.graph = sg;
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds, bind_size, outputs.data(),
                                 static_cast<int>(outputs.size()), ccv_nnc_symbolic_graph_sources(sg),
                                 ccv_nnc_symbolic_graph_source_size(sg), ccv_nnc_symbolic_graph_destinations(sg),
                                 ccv_nnc_symbolic_graph_destination_size(sg), &g, &ta, &ea);
  std::vector<float> out;
  EXPECT_TRUE(g && ta && ea) << message();
  if (g && ta && ea) {
    ccv_nnc_tensor_t* xt = ccv_nnc_tensor_from_symbol(ta, x);
    std::mt19937 rng(22);
    std::uniform_real_distribution<float> d(0.f, 1.f);
    for (size_t i = 0; i < count_of(xt->info); i++) xt->data.f32[i] = d(rng);
    EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << message();
    for (TS s : outputs) {
      ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, s);
      out.insert(out.end(), t->data.f32, t->data.f32 + count_of(t->info));
    }
  }
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  return out;
}

void expect_same_graph(const ccv_nnc_symbolic_graph_t* a, const ccv_nnc_symbolic_graph_t* b) {
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (size_t d = 0; d < a->tensors.size(); d++) {
    const auto& s = a->tensors[d];
    const auto& t = b->tensors[d];
    SCOPED_TRACE("tensor symbol " + std::to_string(d) + " " + s.name);
    EXPECT_EQ(s.name, t.name);
    EXPECT_EQ(s.flags, t.flags);
    if (CCV_NNC_TENSOR_SYMBOL_IS_DEAD(s.flags)) continue;  // a placeholder keeps the index, nothing else
    EXPECT_EQ(s.alias_of, t.alias_of);
    EXPECT_EQ(std::memcmp(&s.info, &t.info, sizeof(s.info)), 0);
    EXPECT_EQ(std::memcmp(s.ofs, t.ofs, sizeof(s.ofs)), 0);
    EXPECT_EQ(std::memcmp(s.stride, t.stride, sizeof(s.stride)), 0);
    EXPECT_EQ(s.aliases, t.aliases);
    EXPECT_EQ(s.writers, t.writers);
    EXPECT_EQ(s.outer, t.outer);
  }
  ASSERT_EQ(a->execs.size(), b->execs.size());
  for (size_t e = 0; e < a->execs.size(); e++) {
    const auto& x = a->execs[e];
    const auto& y = b->execs[e];
    SCOPED_TRACE("exec symbol " + std::to_string(e) + " " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.flags, y.flags);
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
    EXPECT_EQ(x.cmd.cmd, y.cmd.cmd);
    EXPECT_EQ(x.cmd.backend, y.cmd.backend);
    EXPECT_EQ(x.cmd.algorithm, y.cmd.algorithm);
    EXPECT_EQ(std::memcmp(&x.cmd.info, &y.cmd.info, sizeof(x.cmd.info)), 0);
    EXPECT_EQ(std::memcmp(&x.hint, &y.hint, sizeof(x.hint)), 0);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.outgoing, y.outgoing);
    ASSERT_EQ(x.subs.size(), y.subs.size());
    for (size_t i = 0; i < x.subs.size(); i++) {
      ASSERT_TRUE(x.subs[i] && y.subs[i]);
      EXPECT_EQ(y.subs[i]->parent, b);
      auto sorted = [](std::vector<std::pair<int, int>> v) {  // a set: the order of hookups is not kept
        std::sort(v.begin(), v.end());
        return v;
      };
      EXPECT_EQ(sorted(x.subs[i]->stand_ins), sorted(y.subs[i]->stand_ins));
      EXPECT_EQ(x.subs[i]->carry_overs, y.subs[i]->carry_overs);
      expect_same_graph(x.subs[i], y.subs[i]);
    }
  }
  auto ids = [](const std::vector<ccv_nnc_graph_exec_symbol_t>& v) {
    std::vector<int> out;
    for (const auto& s : v) out.push_back(s.d);
    return out;
  };
  EXPECT_EQ(ids(a->sources), ids(b->sources));
  EXPECT_EQ(ids(a->destinations), ids(b->destinations));
}

TEST(GraphIo, RoundTripKeepsEverySymbolAndRunsTheSame) {
  TempPath file;
  Net net;
  ccv_nnc_symbolic_graph_write(net.sg, net.binds.data(), static_cast<int>(net.binds.size()), file.c_str());
  ASSERT_EQ(message(), "");
  Read r;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r.sg, &r.binds, &r.bind_size);
  ASSERT_TRUE(r.sg) << message();
  expect_same_graph(net.sg, r.sg);
  ASSERT_EQ(r.bind_size, static_cast<int>(net.binds.size()));
  for (int i = 0; i < r.bind_size; i++) {
    EXPECT_EQ(r.binds[i].symbol.d, net.binds[i].symbol.d);
    EXPECT_EQ(r.binds[i].symbol.graph, r.sg);
    const ccv_nnc_tensor_t* t = r.binds[i].tensor;
    ASSERT_EQ(count_of(t->info), count_of(net.weights[i]->info));
    EXPECT_EQ(std::memcmp(t->data.u8, net.weights[i]->data.u8, count_of(t->info) * 4), 0);
  }
  const std::vector<float> want =
      run(net.sg, net.binds.data(), static_cast<int>(net.binds.size()), net.x, {net.prob, net.z});
  const std::vector<float> got = run(r.sg, r.binds, r.bind_size, net.x, {net.prob, net.z});
  ASSERT_EQ(want.size(), 2u * 3 + 2);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  // The outputs are the network's: rows of prob sum to 1, z is twice y's second column.
  EXPECT_NEAR(want[0] + want[1] + want[2], 1.0, 1e-6);

  // Read without binds; write again over the same file with fewer binds.
  Read r2;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r2.sg, nullptr, nullptr);
  ASSERT_TRUE(r2.sg) << message();
  ccv_nnc_symbolic_graph_write(net.sg, net.binds.data(), 1, file.c_str());
  ASSERT_EQ(message(), "");
  Read r3;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r3.sg, &r3.binds, &r3.bind_size);
  ASSERT_TRUE(r3.sg) << message();
  EXPECT_EQ(r3.bind_size, 1);
  Db db(file.str());
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM tensors", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1) << "binds of the earlier graph were left in the file";
  sqlite3_finalize(s);
}

TEST(GraphIo, EmptyGraph) {
  TempPath file;
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_write(sg, nullptr, 0, file.c_str());
  ASSERT_EQ(message(), "");
  Read r;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r.sg, &r.binds, &r.bind_size);
  ASSERT_TRUE(r.sg) << message();
  EXPECT_EQ(ccv_nnc_tensor_symbol_count(r.sg), 0);
  EXPECT_EQ(ccv_nnc_graph_exec_symbol_count(r.sg), 0);
  EXPECT_EQ(r.bind_size, 0);
  EXPECT_EQ(r.binds, nullptr);
  ccv_nnc_symbolic_graph_free(sg);
}

ccv_nnc_cmd_t gemm_wt() {  // h W^T
  ccv_nnc_cmd_t c = command(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = c.info.blas.a[1] = 1;
  c.info.blas.transpose_b[1] = 1;
  return c;
}

int count_below(ccv_nnc_tensor_t* const* inputs, int input_size, const void* data) {
  return input_size == 1 && inputs[0]->data.i64[0] < *static_cast<const int64_t*>(data);
}

// h <- tanh(h W^T + x) five times in a while loop: h0 hooked up into the body,
// the result hooked up out of it and doubled in the root; W and x reached
// through stand-ins the body made itself.
struct Rnn {
  static constexpr int n = 7;
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  TS w, x, h0, hout, doubled;
  ES loop, act;
  Rnn() {
    w = ccv_nnc_tensor_symbol_new(sg, f32({n, n}), "W");
    x = ccv_nnc_tensor_symbol_new(sg, f32({1, n}), "x");
    h0 = ccv_nnc_tensor_symbol_new(sg, f32({1, n}), "h0");
    hout = ccv_nnc_tensor_symbol_new(sg, f32({1, n}), "h_out");
    doubled = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "doubled");
    loop = ccv_nnc_symbolic_graph_while(sg, CCV_NNC_GRAPH_FORWARD, body, "rnn");
    const TS h = ccv_nnc_tensor_symbol_new(body, f32({1, n}), "h");
    ccv_nnc_tensor_symbol_hookup(sg, body, h0, h);
    const TS a = ccv_nnc_tensor_symbol_new(body, ccv_nnc_tensor_auto, "a");
    const TS s = ccv_nnc_tensor_symbol_new(body, ccv_nnc_tensor_auto, "s");
    const TS hn = ccv_nnc_tensor_symbol_new(body, f32({1, n}), "h_next");
    const TS gi[] = {h, w}, si[] = {a, x};
    ccv_nnc_graph_exec_symbol_new(body, gemm_wt(), gi, 2, &a, 1, "Wh");
    ccv_nnc_graph_exec_symbol_new(body, command(CCV_NNC_EWSUM_FORWARD), si, 2, &s, 1, "+x");
    act = ccv_nnc_graph_exec_symbol_new(body, command(CCV_NNC_TANH_FORWARD), &s, 1, &hn, 1, "tanh");
    ccv_nnc_tensor_symbol_hookup(sg, body, hout, hn);
    ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    const ccv_nnc_tensor_symbol_map_t carry = {hn, h};
    ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
    set_expr(body, act.d);
    ccv_nnc_cmd_t x2 = command(CCV_NNC_SCALAR_MUL_FORWARD);
    x2.info.blas.a[0] = 2;
    ccv_nnc_graph_exec_symbol_new(sg, x2, &hout, 1, &doubled, 1, "x2");
    ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  }
  ~Rnn() { ccv_nnc_symbolic_graph_free(sg); }
  // The expression is a C callback: not in the file, set again after reading.
  static void set_expr(ccv_nnc_symbolic_graph_t* body, int breakpoint) {
    static const int64_t limit = 4;
    const TS counter = ccv_nnc_tensor_symbol_for_while_count(body);
    const ES bp = {breakpoint, body};
    ccv_nnc_symbolic_graph_set_while_expr(body, count_below, &limit, &counter, 1, &bp, 1);
  }
};

// Compile for `doubled`, fill W, x and h0 the same way, run; doubled's values.
std::vector<float> run_rnn(ccv_nnc_symbolic_graph_t* sg, const Rnn& r) {
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  const TS out = {r.doubled.d, sg};
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, &out, 1, nullptr, 0, nullptr, 0, &g,
                                 &ta, &ea);
  std::vector<float> values;
  EXPECT_TRUE(g && ta && ea) << message();
  if (g && ta && ea) {
    std::mt19937 rng(25);
    std::uniform_real_distribution<float> u(-0.6f, 0.6f);
    for (TS s : {r.w, r.x, r.h0}) {
      ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, {s.d, sg});
      for (size_t i = 0; i < count_of(t->info); i++) t->data.f32[i] = u(rng);
    }
    EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << message();
    const ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, out);
    values.assign(t->data.f32, t->data.f32 + count_of(t->info));
  }
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  return values;
}

TEST(GraphIo, WhileLoopRoundTripRunsTheSame) {
  TempPath file;
  Rnn rnn;
  ASSERT_EQ(message(), "");
  ccv_nnc_symbolic_graph_write(rnn.sg, nullptr, 0, file.c_str());
  ASSERT_EQ(message(), "");
  Read r;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r.sg, &r.binds, &r.bind_size);
  ASSERT_TRUE(r.sg) << message();
  expect_same_graph(rnn.sg, r.sg);
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_from_while_symbol(r.sg, {rnn.loop.d, r.sg});
  ASSERT_TRUE(body) << message();
  // Without its expression the loop does not compile, and says why.
  {
    ccv_nnc_graph_t* g = nullptr;
    ccv_nnc_tensor_arena_t* ta = nullptr;
    ccv_nnc_graph_exec_arena_t* ea = nullptr;
    const TS out = {rnn.doubled.d, r.sg};
    ccv_nnc_symbolic_graph_compile(r.sg, ccv_nnc_default_compile_params, nullptr, 0, &out, 1, nullptr, 0, nullptr, 0,
                                   &g, &ta, &ea);
    EXPECT_EQ(g, nullptr);
    EXPECT_NE(message().find("has no expression"), std::string::npos) << message();
  }
  Rnn::set_expr(body, rnn.act.d);
  ASSERT_EQ(message(), "");
  // The expression's input is the counter alone: the loop's inputs and outputs are the original's.
  const int *in0, *out0, *in1, *out1;
  int in0_size, out0_size, in1_size, out1_size;
  ccv_nnc_graph_exec_symbol_io(rnn.sg, rnn.loop, &in0, &in0_size, &out0, &out0_size);
  ccv_nnc_graph_exec_symbol_io(r.sg, {rnn.loop.d, r.sg}, &in1, &in1_size, &out1, &out1_size);
  EXPECT_EQ(std::vector<int>(in0, in0 + in0_size), std::vector<int>(in1, in1 + in1_size));
  EXPECT_EQ(std::vector<int>(out0, out0 + out0_size), std::vector<int>(out1, out1 + out1_size));
  const std::vector<float> want = run_rnn(rnn.sg, rnn);
  const std::vector<float> got = run_rnn(r.sg, rnn);
  ASSERT_EQ(want.size(), static_cast<size_t>(Rnn::n));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  for (float v : want) EXPECT_LE(std::fabs(v), 2.f);  // twice a tanh
}

// y = case x[0] of > 0: 2x | in (-1, 0]: exp(x) | otherwise: x itself (the bypass); z = 3y.
int branch_of(ccv_nnc_tensor_t* const* inputs, int input_size, const void*) {
  if (input_size != 1) return -1;
  const float v = inputs[0]->data.f32[0];
  return v > 0 ? 0 : v > -1 ? 1 : -1;
}

struct CaseOf {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  TS x, y, z;
  ES cs;
  CaseOf() {
    x = ccv_nnc_tensor_symbol_new(sg, f32({4}), "x");
    y = ccv_nnc_tensor_symbol_new(sg, f32({4}), "y");
    z = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "z");
    const ccv_nnc_tensor_symbol_map_t bypass = {x, y};
    cs = ccv_nnc_symbolic_graph_case_of_new(sg, CCV_NNC_GRAPH_FORWARD, &x, 1, &bypass, 1, "case");
    ccv_nnc_symbolic_graph_set_case_of_expr(sg, cs, branch_of, nullptr);
    ccv_nnc_cmd_t twice = command(CCV_NNC_SCALAR_MUL_FORWARD);
    twice.info.blas.a[0] = 2;
    ccv_nnc_cmd_t thrice = twice;
    thrice.info.blas.a[0] = 3;
    for (int b = 0; b < 2; b++) {
      ccv_nnc_symbolic_graph_t* branch = ccv_nnc_symbolic_graph_new();
      const TS yb = ccv_nnc_tensor_symbol_new(branch, f32({4}), b ? "y1" : "y0");
      const ccv_nnc_tensor_symbol_map_t out = {yb, y};
      ccv_nnc_symbolic_graph_set_case_of(sg, cs, branch, b, &out, 1);
      ccv_nnc_graph_exec_symbol_new(branch, b ? command(CCV_NNC_EWEXP_FORWARD) : twice, &x, 1, &yb, 1,
                                    b ? "exp" : "2x");
      ccv_nnc_graph_exec_symbol_autogen(branch, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    }
    ccv_nnc_graph_exec_symbol_new(sg, thrice, &y, 1, &z, 1, "3y");
    ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  }
  ~CaseOf() { ccv_nnc_symbolic_graph_free(sg); }
};

// Compile for z and y, run on three inputs (one per branch and the bypass); the values.
std::vector<float> run_case_of(ccv_nnc_symbolic_graph_t* sg, const CaseOf& c) {
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  const TS outs[] = {{c.z.d, sg}, {c.y.d, sg}};
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, nullptr, 0, outs, 2, nullptr, 0, nullptr, 0, &g,
                                 &ta, &ea);
  std::vector<float> values;
  EXPECT_TRUE(g && ta && ea) << message();
  if (g && ta && ea) {
    const float cases[3][4] = {{0.5f, -2.f, 3.f, 0.f}, {-0.5f, 1.f, 0.25f, -3.f}, {-1.5f, 2.f, -0.5f, 7.f}};
    for (const auto& v : cases) {
      std::memcpy(ccv_nnc_tensor_from_symbol(ta, {c.x.d, sg})->data.f32, v, sizeof(v));
      EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << message();
      for (const TS& s : outs) {
        const float* p = ccv_nnc_tensor_from_symbol(ta, s)->data.f32;
        values.insert(values.end(), p, p + 4);
      }
    }
  }
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  return values;
}

TEST(GraphIo, CaseOfRoundTripRunsTheSame) {
  TempPath file;
  CaseOf c;
  ASSERT_EQ(message(), "");
  ccv_nnc_symbolic_graph_write(c.sg, nullptr, 0, file.c_str());
  ASSERT_EQ(message(), "");
  Read r;
  ccv_nnc_symbolic_graph_read(file.c_str(), &r.sg, &r.binds, &r.bind_size);
  ASSERT_TRUE(r.sg) << message();
  expect_same_graph(c.sg, r.sg);
  const auto& x = c.sg->execs[static_cast<size_t>(c.cs.d)];
  const auto& y = r.sg->execs[static_cast<size_t>(c.cs.d)];
  EXPECT_EQ(x.declared_inputs, y.declared_inputs);
  EXPECT_EQ(x.declared_outputs, y.declared_outputs);
  EXPECT_EQ(x.expr_inputs, y.expr_inputs);
  EXPECT_EQ(c.sg->tensors[static_cast<size_t>(c.y.d)].bypass, r.sg->tensors[static_cast<size_t>(c.y.d)].bypass);
  // Without its expression the case..of does not compile, and says why.
  {
    ccv_nnc_graph_t* g = nullptr;
    ccv_nnc_tensor_arena_t* ta = nullptr;
    ccv_nnc_graph_exec_arena_t* ea = nullptr;
    const TS out = {c.z.d, r.sg};
    ccv_nnc_symbolic_graph_compile(r.sg, ccv_nnc_default_compile_params, nullptr, 0, &out, 1, nullptr, 0, nullptr, 0,
                                   &g, &ta, &ea);
    EXPECT_EQ(g, nullptr);
    EXPECT_NE(message().find("has no expression"), std::string::npos) << message();
  }
  ccv_nnc_symbolic_graph_set_case_of_expr(r.sg, {c.cs.d, r.sg}, branch_of, nullptr);
  ASSERT_EQ(message(), "");
  const std::vector<float> want = run_case_of(c.sg, c);
  const std::vector<float> got = run_case_of(r.sg, c);
  ASSERT_EQ(want.size(), 3u * 8);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  // The three cases took the three paths: 2x, exp(x), x.
  EXPECT_FLOAT_EQ(want[4], 1.f);                 // y[0] = 2 * 0.5
  EXPECT_NEAR(want[12], std::exp(-0.5f), 1e-6);  // y[0] = exp(-0.5)
  EXPECT_FLOAT_EQ(want[20], -1.5f);              // y[0] = x[0], the bypass
  EXPECT_FLOAT_EQ(want[16], 3 * want[20]);       // z = 3y
}

TEST(GraphIo, ASubGraphAloneIsRefusedWithAMessage) {
  TempPath file;
  Rnn rnn;
  ccv_nnc_symbolic_graph_write(rnn.body, nullptr, 0, file.c_str());
  EXPECT_NE(message().find("sub-graph of a while or case..of"), std::string::npos) << message();
}

TEST(GraphIo, BadArguments) {
  TempPath file;
  Net net;
  ccv_nnc_symbolic_graph_write(nullptr, nullptr, 0, file.c_str());
  EXPECT_NE(message().find("graph is NULL"), std::string::npos) << message();
  ccv_nnc_symbolic_graph_write(net.sg, nullptr, 0, nullptr);
  EXPECT_NE(message().find("file name is NULL"), std::string::npos) << message();
  ccv_nnc_symbolic_graph_write(net.sg, nullptr, 2, file.c_str());
  EXPECT_NE(message().find("bad binds"), std::string::npos) << message();
  ccv_nnc_tensor_bind_t foreign = {{0, nullptr}, net.weights[0]};
  ccv_nnc_symbolic_graph_write(net.sg, &foreign, 1, file.c_str());
  EXPECT_NE(message().find("not a tensor symbol of this graph"), std::string::npos) << message();
  ccv_nnc_symbolic_graph_t* g = reinterpret_cast<ccv_nnc_symbolic_graph_t*>(0x1);
  ccv_nnc_symbolic_graph_read(file.c_str(), nullptr, nullptr, nullptr);
  EXPECT_NE(message().find("graph_ref is NULL"), std::string::npos) << message();
  ccv_nnc_symbolic_graph_read(nullptr, &g, nullptr, nullptr);
  EXPECT_NE(message().find("file name is NULL"), std::string::npos) << message();
  ccv_nnc_symbolic_graph_read((file.str() + ".missing").c_str(), &g, nullptr, nullptr);
  EXPECT_NE(message().find("unable to open"), std::string::npos) << message();
  EXPECT_EQ(g, reinterpret_cast<ccv_nnc_symbolic_graph_t*>(0x1));
}

std::vector<unsigned char> graph_blob(const std::string& path) {
  Db db(path);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT data FROM graphs", -1, &s, nullptr);
  std::vector<unsigned char> out;
  if (sqlite3_step(s) == SQLITE_ROW) {
    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(s, 0));
    out.assign(p, p + sqlite3_column_bytes(s, 0));
  }
  sqlite3_finalize(s);
  return out;
}
// Store a blob, with a matching checksum when `fix_checksum`.
void put_graph_blob(const std::string& path, const std::vector<unsigned char>& blob, bool fix_checksum) {
  Db db(path);
  db.exec("PRAGMA synchronous=OFF");
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, fix_checksum ? "UPDATE graphs SET data = ?1, checksum = ?2" : "UPDATE graphs SET data = ?1",
                     -1, &s, nullptr);
  sqlite3_bind_blob(s, 1, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
  if (fix_checksum) sqlite3_bind_int64(s, 2, static_cast<sqlite3_int64>(XXH3_64bits(blob.data(), blob.size())));
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
}

void expect_read_fails(const std::string& path, const std::string& needle) {
  ccv_nnc_symbolic_graph_t* g = nullptr;
  ccv_nnc_tensor_bind_t* binds = nullptr;
  int n = -7;
  ccv_nnc_symbolic_graph_read(path.c_str(), &g, &binds, &n);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(binds, nullptr);
  EXPECT_EQ(n, -7);
  EXPECT_NE(message().find(needle), std::string::npos) << message();
}

TEST(GraphIo, CorruptFilesAreRefused) {
  TempPath file;
  Net net;
  ccv_nnc_symbolic_graph_write(net.sg, net.binds.data(), static_cast<int>(net.binds.size()), file.c_str());
  ASSERT_EQ(message(), "");
  const std::vector<unsigned char> clean = graph_blob(file.str());
  ASSERT_GT(clean.size(), 100u);

  std::vector<unsigned char> flipped = clean;
  flipped[clean.size() / 2] ^= 0x10;
  put_graph_blob(file.str(), flipped, false);
  expect_read_fails(file.str(), "checksum mismatch");

  std::vector<unsigned char> cut(clean.begin(), clean.begin() + static_cast<long>(clean.size() - 9));
  put_graph_blob(file.str(), cut, true);
  expect_read_fails(file.str(), "the graph is corrupt");

  std::vector<unsigned char> huge = clean;
  const int32_t many = 1 << 30;
  std::memcpy(huge.data() + 4, &many, 4);
  put_graph_blob(file.str(), huge, true);
  expect_read_fails(file.str(), "claimed");

  std::vector<unsigned char> magic = clean;
  magic[0] = 'X';
  put_graph_blob(file.str(), magic, true);
  expect_read_fails(file.str(), "NNCG");

  put_graph_blob(file.str(), clean, true);
  {
    Db db(file.str());
    ASSERT_EQ(db.exec("UPDATE graphs SET schema = 9"), SQLITE_OK);
  }
  expect_read_fails(file.str(), "schema 9");
  {
    Db db(file.str());
    ASSERT_EQ(db.exec("UPDATE graphs SET schema = 1; UPDATE tensors SET data = NULL WHERE name = 'graph.bind.2'"),
              SQLITE_OK);
  }
  expect_read_fails(file.str(), "graph.bind.2");
  {
    Db db(file.str());
    ASSERT_EQ(db.exec("DROP TABLE graphs"), SQLITE_OK);
  }
  expect_read_fails(file.str(), "holds no NNC graph");
  {
    std::ofstream f(file.str(), std::ios::binary | std::ios::trunc);
    f << "this is not a database, but it is long enough to have a header of sorts..........................";
  }
  expect_read_fails(file.str(), "not a database");
}

// One graph record (a body nested in it included) from `at`; returns where it ends.
size_t walk_record(const std::vector<unsigned char>& blob, size_t at, std::vector<std::pair<size_t, size_t>>& out) {
  auto i32 = [&](size_t p) {
    int32_t v;
    std::memcpy(&v, blob.data() + p, 4);
    return v;
  };
  at += 4;  // magic
  const int tensors = i32(at), execs = i32(at + 4);
  at += 8;
  for (int t = 0; t < tensors; t++) {
    at += 8;
    out.emplace_back(at, at + 16 + 4 * 12 * 3);  // params, dims, ofs, strides
    at += 16 + 4 * 12 * 3;
    at += 4 + static_cast<size_t>(i32(at));      // name
    at += 4 + 8 * static_cast<size_t>(i32(at));  // copies
    at += 4;                                     // outer
  }
  for (int e = 0; e < execs; e++) {
    at += 4;
    at += 4 + static_cast<size_t>(i32(at));  // name
    at += 12;
    const size_t info = static_cast<size_t>(i32(at));
    at += 4;
    out.emplace_back(at, at + info + 4 * 12 * 3);  // command parameters and hint
    at += info + 4 * 12 * 3;
    for (int list = 0; list < 3; list++) at += 4 + 4 * static_cast<size_t>(i32(at));
    at += 4 + 8 * static_cast<size_t>(i32(at));
    const int kind = i32(at);
    at += 4;
    if (kind == 1) {
      at = walk_record(blob, at, out);
      at += 4 + 8 * static_cast<size_t>(i32(at));  // carried pairs
    } else if (kind == 2) {
      at += 4 + 4 * static_cast<size_t>(i32(at));  // expression inputs
      at += 4 + 8 * static_cast<size_t>(i32(at));  // (bypass, output) pairs
      const int branches = i32(at);
      at += 4;
      for (int b = 0; b < branches; b++) {
        const int present = i32(at);
        at += 4;
        if (present) at = walk_record(blob, at, out);
      }
    }
  }
  for (int list = 0; list < 2; list++) at += 4 + 4 * static_cast<size_t>(i32(at));  // sources, destinations
  return at;
}

// Byte ranges of a clean record holding shapes, window sizes and hints: the
// numbers core's shape inference (hint_auto in lib/core/cmd.cpp) multiplies
// in int, which overflows for huge values (signed overflow, which UBSan
// aborts on). Sanitizer builds keep their damage out of these ranges until
// that is fixed; release builds damage everything.
std::vector<std::pair<size_t, size_t>> shape_ranges(const std::vector<unsigned char>& blob) {
  std::vector<std::pair<size_t, size_t>> out;
  walk_record(blob, 0, out);
  return out;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Random damage to the record, with the checksum made to match: the reader's
// own checks (and the graph API's) must hold, whatever the bytes say.
TEST(GraphIo, DamagedRecordsNeverCrash) {
  for (int which = 0; which < 3; which++) {
    TempPath file;
    Net net;
    Rnn rnn;
    CaseOf case_of;
    if (which == 0)
      ccv_nnc_symbolic_graph_write(net.sg, net.binds.data(), static_cast<int>(net.binds.size()), file.c_str());
    else
      ccv_nnc_symbolic_graph_write(which == 1 ? rnn.sg : case_of.sg, nullptr, 0, file.c_str());
    ASSERT_EQ(message(), "");
    const std::vector<unsigned char> clean = graph_blob(file.str());
    std::vector<std::pair<size_t, size_t>> avoid;
    if (kSanitized) avoid = shape_ranges(clean);
    auto avoided = [&](size_t at) {
      for (const auto& [a, b] : avoid)
        if (at >= a && at < b) return true;
      return false;
    };
    std::mt19937_64 rng(23 + which);
    int refused = 0, read_back = 0;
    for (int trial = 0; trial < 300; trial++) {
      std::vector<unsigned char> blob = clean;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; f++) {
        const size_t at = rng() % blob.size();
        if (avoided(at)) continue;
        // Small integers make indices and counts plausible: more paths reached.
        blob[at] = rng() % 2 ? static_cast<unsigned char>(rng()) : static_cast<unsigned char>(rng() % 16);
      }
      if (trial % 7 == 0) blob.resize(rng() % blob.size());
      put_graph_blob(file.str(), blob, true);
      Read r;
      ccv_nnc_symbolic_graph_read(file.c_str(), &r.sg, &r.binds, &r.bind_size);
      if (r.sg) {
        read_back++;
      } else {
        EXPECT_FALSE(message().empty());
        refused++;
      }
    }
    EXPECT_GT(refused, 0);
    std::printf("[ damaged %s ] %d refused, %d read back\n",
                which == 0   ? "graphs"
                : which == 1 ? "loops"
                             : "branches",
                refused, read_back);
  }
}

}  // namespace
