// Static schedules over several GPU streams, on the pretend GPU (fakegpu.hpp),
// whose streams run queued work late and in a random order that honours only
// each stream's order and the waits between streams. A schedule that misses a
// wait therefore gives wrong numbers here; the tests compare every run with
// the graph run serially and with a double-precision closed form, over many
// orders, and check that the harness does catch a schedule without its waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fakegpu.hpp"
#include "graph/graph.hpp"
#include "graph/schedule.hpp"
#include "unit/common/wide_graph.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

const bool g_installed = nnc_fakegpu::install(2);

std::string last_error() { return ccv_nnc_error_message(); }

ccv_nnc_tensor_param_t param(int memory, int device, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = memory | (device << 8);
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

struct Free {
  void operator()(ccv_nnc_tensor_t* t) const { ccv_nnc_tensor_free(t); }
};
using T = std::unique_ptr<ccv_nnc_tensor_t, Free>;
T gpu(int device, std::vector<int> dims) { return T(ccv_nnc_tensor_new(nullptr, param(CCV_TENSOR_GPU_MEMORY, device, dims), 0)); }
T cpu(std::vector<int> dims) { return T(ccv_nnc_tensor_new(nullptr, param(CCV_TENSOR_CPU_MEMORY, 0, dims), 0)); }

using nnc_test_wide::cmd;
using nnc_test_wide::kBranches;
using nnc_test_wide::node;

int transfer(ccv_nnc_tensor_t* from, ccv_nnc_tensor_t* to, ccv_nnc_stream_context_t* stream = nullptr) {
  return ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &from, 1, &to, 1, stream);
}

constexpr int kRows = 33, kCols = 17, kOut = 9;

// The wide graph of unit/common/wide_graph.hpp, with host copies of its
// inputs and output.
struct Wide {
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  T x = gpu(0, {kRows, kCols}), W, y;
  std::vector<T> t;
  T host_x = cpu({kRows, kCols}), host_W = cpu({kCols, kOut}), host_y = cpu({kRows, kOut});
  ccv_nnc_graph_exec_t gemm;

  explicit Wide(int device = 0) : W(gpu(device, {kCols, kOut})), y(gpu(device, {kRows, kOut})) {
    gemm = nnc_test_wide::build(g, x.get(), W.get(), y.get(), device, [this](std::vector<int> dims, int d) {
      t.push_back(gpu(d, dims));
      return t.back().get();
    });
  }
  ~Wide() { ccv_nnc_graph_free(g); }

  // A new input (so stale intermediates give wrong numbers) and W.
  void inputs(std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1, 1);
    for (int i = 0; i < kRows * kCols; i++) host_x->data.f32[i] = d(rng);
    for (int i = 0; i < kCols * kOut; i++) host_W->data.f32[i] = d(rng);
    ASSERT_EQ(transfer(host_x.get(), x.get()), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(transfer(host_W.get(), W.get()), CCV_NNC_EXEC_SUCCESS) << last_error();
  }
  std::vector<float> output() {
    EXPECT_EQ(transfer(y.get(), host_y.get()), CCV_NNC_EXEC_SUCCESS) << last_error();
    return std::vector<float>(host_y->data.f32, host_y->data.f32 + kRows * kOut);
  }
  // The closed form in double.
  std::vector<double> expected() const {
    std::vector<double> r(kRows * kOut, 0);
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kOut; j++)
        for (int k = 0; k < kCols; k++) {
          const double xv = host_x->data.f32[i * kCols + k];
          double w = 0;
          for (int b = 0; b < kBranches; b++) w += std::exp((0.5 + 0.1 * b) * xv) - xv;
          r[static_cast<size_t>(i * kOut + j)] += w * host_W->data.f32[k * kOut + j];
        }
    return r;
  }
};

int gpu_stream_type(int device) {
  int type = CCV_STREAM_CONTEXT_GPU;
  CCV_STREAM_SET_DEVICE_ID(type, device);
  return type;
}

// Runs `run` for several random inputs and stream orders; counts outputs that
// differ from the serial run of the same graph, and checks the serial run
// against the closed form.
template <class Run>
int mismatches(Wide& w, Run run, int rounds = 12) {
  std::mt19937 rng(7);
  int bad = 0;
  for (int r = 0; r < rounds; r++) {
    w.inputs(rng);
    nnc_fakegpu::set_stream_order_seed(1000 + r);
    EXPECT_EQ(ccv_nnc_graph_run(w.g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    const std::vector<float> serial = w.output();
    const std::vector<double> exact = w.expected();
    for (size_t i = 0; i < exact.size(); i++) EXPECT_NEAR(serial[i], exact[i], 1e-4 * (1 + std::fabs(exact[i])));
    w.inputs(rng);  // new inputs again: the scheduled run must not see the serial run's intermediates
    w.inputs(rng);
    const std::vector<double> exact2 = w.expected();
    EXPECT_EQ(run(), CCV_NNC_EXEC_SUCCESS) << last_error();
    const std::vector<float> got = w.output();
    for (size_t i = 0; i < exact2.size(); i++)
      if (!(std::fabs(got[i] - exact2[i]) <= 1e-4 * (1 + std::fabs(exact2[i])))) {
        bad++;
        break;
      }
  }
  return bad;
}

TEST(GpuSchedule, TheHarnessRunsQueuedWorkOutOfOrderWithoutWaits) {
  ASSERT_TRUE(g_installed);
  // x on stream A, then a copy of it on stream B with no wait: in some orders
  // the copy runs first and sees the old value.
  ccv_nnc_stream_context_t* a = ccv_nnc_stream_context_new(gpu_stream_type(0));
  ccv_nnc_stream_context_t* b = ccv_nnc_stream_context_new(gpu_stream_type(0));
  ASSERT_NE(a, nullptr) << last_error();
  ASSERT_NE(b, nullptr) << last_error();
  T x = gpu(0, {4}), y = gpu(0, {4}), host = cpu({4});
  int stale = 0, waited_stale = 0;
  for (int round = 0; round < 40; round++) {
    nnc_fakegpu::set_stream_order_seed(static_cast<uint32_t>(round));
    for (bool wait : {false, true}) {
      for (int i = 0; i < 4; i++) host->data.f32[i] = 0;
      ASSERT_EQ(transfer(host.get(), x.get()), 0);
      ASSERT_EQ(transfer(host.get(), y.get()), 0);
      ccv_nnc_tensor_t* xs = x.get();
      ccv_nnc_tensor_t* ys = y.get();
      ccv_nnc_cmd_t set = cmd(CCV_NNC_SET_FORWARD, static_cast<float>(round + 1));
      ASSERT_EQ(ccv_nnc_cmd_exec(set, ccv_nnc_no_hint, 0, nullptr, 0, &xs, 1, a), 0) << last_error();
      if (wait) {
        ccv_nnc_stream_signal_t* s = ccv_nnc_stream_context_emit_signal_new(a);
        ccv_nnc_stream_context_wait_signal(b, s);
      }
      ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &xs, 1, &ys, 1, b), 0) << last_error();
      ccv_nnc_stream_context_wait(b);
      ccv_nnc_stream_context_wait(a);
      ASSERT_EQ(transfer(y.get(), host.get()), 0);
      const bool old = host->data.f32[2] != static_cast<float>(round + 1);
      (wait ? waited_stale : stale) += old;
    }
  }
  EXPECT_GT(stale, 3) << "the pretend streams never ran the copy before the write";
  EXPECT_LT(stale, 37) << "the pretend streams always ran the copy first";
  EXPECT_EQ(waited_stale, 0);
  ccv_nnc_stream_context_free(a);
  ccv_nnc_stream_context_free(b);
}

TEST(GpuSchedule, SeveralGpuStreamsGiveTheSerialResults) {
  ASSERT_TRUE(g_installed);
  Wide w;
  for (int streams : {1, 2, 4, 8}) {
    ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, gpu_stream_type(0), streams, nullptr, 0, nullptr, 0);
    ASSERT_NE(s, nullptr) << last_error();
    EXPECT_EQ(s->s.stream_count, std::min(streams, kBranches));
    int waits = 0;
    for (const auto& v : s->s.waits) waits += static_cast<int>(v.size());
    EXPECT_EQ(waits > 0, streams > 1);
    const size_t queued = nnc_fakegpu::kernels_queued();
    EXPECT_EQ(mismatches(w, [&] { return ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, nullptr); }), 0)
        << streams << " streams";
    // The work really went through the streams (queued, run later).
    EXPECT_GE(nnc_fakegpu::kernels_queued() - queued, static_cast<size_t>(12 * 24));
    ccv_nnc_graph_static_schedule_free(s);
  }
}

TEST(GpuSchedule, WithoutItsWaitsTheScheduleGoesWrongHere) {
  // The sabotage the test above must catch: the same placement on four
  // streams with every wait dropped.
  ASSERT_TRUE(g_installed);
  Wide w;
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, gpu_stream_type(0), 4, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  for (auto& v : s->s.waits) v.clear();
  EXPECT_GT(mismatches(w, [&] { return ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, nullptr); }), 2);
  ccv_nnc_graph_static_schedule_free(s);
}

TEST(GpuSchedule, OnACallerGpuStreamItStartsAfterAndEndsBeforeTheCallersWork) {
  ASSERT_TRUE(g_installed);
  Wide w;
  ccv_nnc_graph_set_default_static_schedule(w.g, gpu_stream_type(0), 4);
  ccv_nnc_stream_context_t* caller = ccv_nnc_stream_context_new(gpu_stream_type(0));
  ASSERT_NE(caller, nullptr) << last_error();
  T staged = gpu(0, {kRows, kCols}), out = gpu(0, {kRows, kOut});
  std::mt19937 rng(11);
  int bad = 0;
  for (int r = 0; r < 12; r++) {
    nnc_fakegpu::set_stream_order_seed(500 + r);
    w.inputs(rng);
    // The input reaches x through the caller's stream (a copy queued there
    // before the run), and the output leaves y through it after the run.
    ASSERT_EQ(transfer(w.x.get(), staged.get()), 0);
    w.inputs(rng);  // x now holds other numbers; `staged` the ones to use
    ccv_nnc_tensor_t* from = staged.get();
    ccv_nnc_tensor_t* to = w.x.get();
    ASSERT_EQ(transfer(from, w.host_x.get()), 0);  // the closed form's x
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &from, 1, &to, 1, caller), 0);
    ASSERT_EQ(ccv_nnc_graph_run(w.g, 0, nullptr, 0, nullptr, 0, nullptr, caller), CCV_NNC_EXEC_SUCCESS) << last_error();
    ccv_nnc_tensor_t* y = w.y.get();
    ccv_nnc_tensor_t* o = out.get();
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, 0, &y, 1, &o, 1, caller), 0);
    ccv_nnc_stream_context_wait(caller);
    const std::vector<double> exact = w.expected();
    ASSERT_EQ(transfer(out.get(), w.host_y.get()), 0);
    for (size_t i = 0; i < exact.size(); i++)
      if (!(std::fabs(w.host_y->data.f32[i] - exact[i]) <= 1e-4 * (1 + std::fabs(exact[i])))) {
        bad++;
        break;
      }
  }
  EXPECT_EQ(bad, 0);
  // The schedule's first stream is the caller's device's; another device's is refused.
  ccv_nnc_stream_context_t* other = ccv_nnc_stream_context_new(gpu_stream_type(1));
  EXPECT_EQ(ccv_nnc_graph_run(w.g, 0, nullptr, 0, nullptr, 0, nullptr, other), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("device 1"), std::string::npos) << last_error();
  ccv_nnc_stream_context_free(other);
  ccv_nnc_stream_context_free(caller);
}

TEST(GpuSchedule, NodesOnAnotherDeviceGetThatDevicesStreams) {
  ASSERT_TRUE(g_installed);
  Wide w(1);  // the GEMM on GPU 1, behind a transfer from GPU 0
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, gpu_stream_type(0), 3, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  std::set<int> devices;
  for (int type : s->s.stream_types) devices.insert(CCV_STREAM_GET_DEVICE_ID(type));
  EXPECT_EQ(devices, (std::set<int>{0, 1}));
  // Each node is on a stream of its tensors' device (the transfer on its source's).
  for (size_t p = 0; p < s->s.order.size(); p++) {
    const auto& n = w.g->nodes[static_cast<size_t>(s->s.order[p])];
    const int dev = CCV_TENSOR_GET_DEVICE_ID(n.inputs[0]->info.type);
    EXPECT_EQ(CCV_STREAM_GET_DEVICE_ID(s->s.stream_types[static_cast<size_t>(s->s.stream_of[p])]), dev);
  }
  EXPECT_EQ(mismatches(w, [&] { return ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, nullptr); }), 0);
  ccv_nnc_graph_static_schedule_free(s);
}

// A host node in the middle: y leaves for the host, a custom command doubles
// it there, and it comes back for one more GPU node.
int doubles(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int,
            ccv_nnc_tensor_t* const* outputs, const int, ccv_nnc_stream_context_t* const) {
  for (int i = 0; i < kRows * kOut; i++) outputs[0]->data.f32[i] = 2 * inputs[0]->data.f32[i];
  return CCV_NNC_EXEC_SUCCESS;
}

TEST(GpuSchedule, HostNodesWaitForTheDeviceWorkBeforeThem) {
  ASSERT_TRUE(g_installed);
  Wide w;
  T on_host = cpu({kRows, kOut}), doubled = cpu({kRows, kOut}), back = gpu(0, {kRows, kOut}), z = gpu(0, {kRows, kOut});
  const ccv_nnc_graph_exec_t gemm = w.gemm;
  static ccv_nnc_cmd_vtab_t isa = {doubles, nullptr};
  const auto out = node(w.g, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {w.y.get()}, {on_host.get()});
  const auto host = node(w.g, ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &isa, ccv_nnc_cmd_auto, 0), {on_host.get()}, {doubled.get()});
  const auto in = node(w.g, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {doubled.get()}, {back.get()});
  const auto add = node(w.g, cmd(CCV_NNC_ADD_FORWARD, 1, 1), {back.get(), w.y.get()}, {z.get()});
  ccv_nnc_graph_exec_concat(w.g, gemm, out);
  ccv_nnc_graph_exec_concat(w.g, out, host);
  ccv_nnc_graph_exec_concat(w.g, host, in);
  ccv_nnc_graph_exec_concat(w.g, in, add);
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, gpu_stream_type(0), 4, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  std::mt19937 rng(3);
  for (int r = 0; r < 8; r++) {
    nnc_fakegpu::set_stream_order_seed(77 + r);
    w.inputs(rng);
    ASSERT_EQ(ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
    const std::vector<double> exact = w.expected();
    ASSERT_EQ(transfer(z.get(), w.host_y.get()), 0);
    for (size_t i = 0; i < exact.size(); i++) ASSERT_NEAR(w.host_y->data.f32[i], 3 * exact[i], 3e-4 * (1 + std::fabs(exact[i]))) << r;
  }
  ccv_nnc_graph_static_schedule_free(s);
}

TEST(GpuSchedule, AFailingNodeStopsTheRunWithItsMessage) {
  ASSERT_TRUE(g_installed);
  Wide w;
  // A node whose shapes do not agree, on a branch of its own.
  T bad_in = gpu(0, {5, 3}), bad_out = gpu(0, {4, 3});
  const auto bad = node(w.g, cmd(CCV_NNC_EWEXP_FORWARD), {bad_in.get()}, {bad_out.get()});
  (void)bad;
  ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(w.g, gpu_stream_type(0), 3, nullptr, 0, nullptr, 0);
  ASSERT_NE(s, nullptr) << last_error();
  std::mt19937 rng(5);
  w.inputs(rng);
  EXPECT_NE(ccv_nnc_graph_run_with_schedule(w.g, 0, s, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(last_error().find("EWEXP"), std::string::npos) << last_error();
  ccv_nnc_graph_static_schedule_free(s);
}

}  // namespace
