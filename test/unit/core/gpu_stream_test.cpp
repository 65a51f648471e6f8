// GPU stream contexts without a GPU: the core's side of CCV_STREAM_CONTEXT_GPU
// (which hook is called when, the signal bookkeeping between GPU and CPU
// streams, host work waiting for the device, the error paths), run against a
// host-only imitation of the CUDA module's hooks (core/gpu_stream.hpp). The
// imitation logs every call; the tests check the order of the log.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

std::mutex g_mutex;
std::vector<std::string> g_log;
int g_next_id = 0;
std::atomic<int> g_live_streams{0}, g_live_events{0};

void note(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log.push_back(s);
}
std::vector<std::string> log_copy() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_log;
}
int position(const std::vector<std::string>& log, const std::string& entry) {
  auto it = std::find(log.begin(), log.end(), entry);
  return it == log.end() ? -1 : static_cast<int>(it - log.begin());
}
int count(const std::vector<std::string>& log, const std::string& prefix) {
  return static_cast<int>(std::count_if(log.begin(), log.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }));
}

std::string label(char c, int id) {
  std::string r(1, c);
  r += std::to_string(id);
  return r;
}

struct MockStream {
  std::string name;
  int device;
  bool fault = false;  // the next wait reports an asynchronous failure
  std::vector<char> workspace;
};
struct MockEvent {
  std::string name;
};

void* mock_stream_new(int device) {
  if (device == 7) nnc::fail(CCV_NNC_EXEC_INVALID, "mock: there is no GPU %d", device);
  auto* s = new MockStream;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    s->name = label('S', g_next_id++);
  }
  s->device = device;
  g_live_streams++;
  note("new " + s->name + " on " + std::to_string(device));
  return s;
}
void mock_stream_free(void* p) {
  auto* s = static_cast<MockStream*>(p);
  note("free " + s->name);
  g_live_streams--;
  delete s;
}
void mock_stream_wait(void* p) {
  auto* s = static_cast<MockStream*>(p);
  note("wait " + s->name);
  if (s->fault) {
    s->fault = false;
    nnc::fail(CCV_NNC_EXEC_INVALID, "mock: a kernel on %s faulted", s->name.c_str());
  }
}
void* mock_workspace(void* p, size_t bytes) {
  auto* s = static_cast<MockStream*>(p);
  note("workspace " + s->name + " " + std::to_string(bytes));
  if (s->workspace.size() < bytes) s->workspace.resize(bytes);
  return s->workspace.data();
}
void mock_drain(void* p) { note("drain " + static_cast<MockStream*>(p)->name); }
void* mock_event_new(int device) {
  auto* e = new MockEvent;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    e->name = label('E', g_next_id++);
  }
  g_live_events++;
  note("event " + e->name + " on " + std::to_string(device));
  return e;
}
void mock_event_free(void* p) {
  auto* e = static_cast<MockEvent*>(p);
  note("event free " + e->name);
  g_live_events--;
  delete e;
}
void mock_event_record(void* e, void* s) {
  note("record " + static_cast<MockEvent*>(e)->name + " on " + static_cast<MockStream*>(s)->name);
}
void mock_stream_wait_event(void* s, void* e) {
  note(static_cast<MockStream*>(s)->name + " waits for " + static_cast<MockEvent*>(e)->name);
}
void mock_event_sync(void* e) { note("host waits for " + static_cast<MockEvent*>(e)->name); }

const nnc::GpuStreamHooks kMock = {mock_stream_new, mock_stream_free, mock_stream_wait, mock_workspace, mock_drain,
                                   mock_event_new,  mock_event_free,  mock_event_record, mock_stream_wait_event,
                                   mock_event_sync, nullptr};

std::string name_of(ccv_nnc_stream_context_t* s) { return static_cast<MockStream*>(nnc::gpu_stream_of(s))->name; }

// A custom command that logs that it ran, and on which stream.
int host_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int,
              ccv_nnc_tensor_t* const* outputs, const int, ccv_nnc_stream_context_t* const stream) {
  note("exec " + std::to_string(static_cast<int>(cmd.info.blas.a[0])) + (stream ? " on a stream" : " alone"));
  if (outputs[0]) outputs[0]->data.f32[0] = inputs[0]->data.f32[0] * 2 + 1;
  return cmd.info.blas.a[1] != 0 ? CCV_NNC_EXEC_INVALID : CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_host_isa = {host_exec, nullptr};
ccv_nnc_cmd_t host_cmd(int tag, bool fail = false) {
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = static_cast<float>(tag);
  p.blas.a[1] = fail ? 1.f : 0.f;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_host_isa, p, 0);
}

int gpu_type(int device) {
  int type = CCV_STREAM_CONTEXT_GPU;
  CCV_STREAM_SET_DEVICE_ID(type, device);
  return type;
}

class GpuStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    saved_ = nnc::gpu_stream_hooks();  // the CUDA module's, in a CUDA build
    nnc::set_gpu_stream_hooks(&kMock);
    ccv_nnc_error_clear();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_log.clear();
  }
  void TearDown() override {
    nnc::set_gpu_stream_hooks(saved_);
    EXPECT_EQ(g_live_streams.load(), 0);
    EXPECT_EQ(g_live_events.load(), 0);
  }
  const nnc::GpuStreamHooks* saved_ = nullptr;
};

TEST_F(GpuStreamTest, WithoutTheCudaModuleGpuStreamsAndSignalsAreRefused) {
  nnc::set_gpu_stream_hooks(nullptr);
  EXPECT_EQ(ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU), nullptr);
  EXPECT_NE(last_error().find("CUDA module"), std::string::npos) << last_error();
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_GPU), nullptr);
  EXPECT_NE(last_error().find("CUDA module"), std::string::npos) << last_error();
  EXPECT_TRUE(log_copy().empty());
}

TEST_F(GpuStreamTest, GpuMemoryCallsWithoutAGpuAreRefusedOrDoNothing) {
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) > 0) GTEST_SKIP() << "a GPU is present: test_cuda checks these";
  ccv_nnc_gpu_memory_stats_t s;
  std::memset(&s, 0x5a, sizeof(s));
  const ccv_nnc_gpu_memory_stats_t before = s;
  EXPECT_EQ(ccv_nnc_gpu_memory_stats(0, &s), -1);
  EXPECT_NE(last_error(), "");
  EXPECT_EQ(std::memcmp(&s, &before, sizeof(s)), 0);  // untouched
  EXPECT_EQ(ccv_nnc_gpu_memory_stats(0, nullptr), -1);
  EXPECT_NE(last_error().find("NULL"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_gpu_memory_release_cached(-1), 0u);
}

TEST_F(GpuStreamTest, StreamIsMadeOnItsDeviceAndReleasedAfterItsWork) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(3));
  ASSERT_NE(s, nullptr) << last_error();
  EXPECT_EQ(ccv_nnc_stream_context_type(s), gpu_type(3));
  EXPECT_EQ(nnc::gpu_stream_device(s), 3);
  EXPECT_TRUE(nnc::is_gpu_stream(s));
  const std::string n = name_of(s);
  EXPECT_EQ(log_copy().front(), "new " + n + " on 3");
  static std::atomic<int> destroyed{0};
  destroyed = 0;
  ccv_nnc_stream_context_add_destructor_hook(
      s, [](const ccv_nnc_stream_context_t*, void*) {
        note("destructor hook");
        destroyed++;
      }, nullptr);
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  EXPECT_EQ(destroyed.load(), 1);
  const auto log = log_copy();
  // free: the stream's work first, then the hooks, then the device stream.
  const int wait = static_cast<int>(std::find(log.rbegin(), log.rend(), "wait " + n).base() - log.begin()) - 1;
  EXPECT_LT(wait, position(log, "destructor hook"));
  EXPECT_LT(position(log, "destructor hook"), position(log, "free " + n));
  // A CPU stream context has no device stream.
  ccv_nnc_stream_context_t* c = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  EXPECT_FALSE(nnc::is_gpu_stream(c));
  EXPECT_EQ(nnc::gpu_stream_of(c), nullptr);
  EXPECT_EQ(nnc::gpu_stream_device(c), -1);
  ccv_nnc_stream_context_free(c);
}

TEST_F(GpuStreamTest, AFailedDeviceStreamIsReportedWithItsMessage) {
  EXPECT_EQ(ccv_nnc_stream_context_new(gpu_type(7)), nullptr);
  EXPECT_NE(last_error().find("mock: there is no GPU 7"), std::string::npos) << last_error();
}

TEST_F(GpuStreamTest, HostCommandWaitsForTheDeviceWorkThenRunsOnTheCallingThread) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(0));
  ASSERT_NE(s, nullptr);
  const std::string n = name_of(s);
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  a->data.f32[0] = 3;
  b->data.f32[0] = 0;
  ASSERT_EQ(ccv_nnc_cmd_exec(host_cmd(11), ccv_nnc_no_hint, 0, &a, 1, &b, 1, s), 0) << last_error();
  // Ran already: the host work is not queued behind a worker.
  EXPECT_EQ(b->data.f32[0], 7.f);
  auto log = log_copy();
  ASSERT_GE(position(log, "exec 11 on a stream"), 0);
  EXPECT_EQ(position(log, "wait " + n), position(log, "exec 11 on a stream") - 1);
  // A CPU kernel too (EWSUM's CPU backends).
  ccv_nnc_tensor_t* ins[2] = {a, b};
  ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  const int waits = count(log_copy(), "wait ");
  ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, no_params(), 0), ccv_nnc_no_hint, 0, ins, 2, &c, 1, s), 0)
      << last_error();
  EXPECT_EQ(c->data.f32[0], 10.f);
  EXPECT_EQ(count(log_copy(), "wait "), waits + 1);
  // A failing host command returns its error at once.
  EXPECT_EQ(ccv_nnc_cmd_exec(host_cmd(12, true), ccv_nnc_no_hint, 0, &a, 1, &b, 1, s), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("custom exec function returned"), std::string::npos) << last_error();
  ccv_nnc_stream_context_free(s);
  ccv_nnc_tensor_free(a);
  ccv_nnc_tensor_free(b);
  ccv_nnc_tensor_free(c);
}

TEST_F(GpuStreamTest, CallbackRunsAfterTheDeviceWork) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(0));
  ASSERT_NE(s, nullptr);
  static int ran = 0;
  ran = 0;
  ccv_nnc_stream_context_add_callback(s, [](void*) {
    note("callback");
    ran++;
  }, nullptr);
  EXPECT_EQ(ran, 1);
  const auto log = log_copy();
  EXPECT_EQ(position(log, "wait " + name_of(s)), position(log, "callback") - 1);
  ccv_nnc_stream_context_free(s);
}

TEST_F(GpuStreamTest, AnAsynchronousFailureIsReportedByTheNextWaitOnly) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(0));
  ASSERT_NE(s, nullptr);
  static_cast<MockStream*>(nnc::gpu_stream_of(s))->fault = true;
  ccv_nnc_stream_context_wait(s);
  EXPECT_NE(last_error().find("faulted"), std::string::npos) << last_error();
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  // A fault met by host work (a callback's wait) is kept for the next wait too.
  static_cast<MockStream*>(nnc::gpu_stream_of(s))->fault = true;
  ccv_nnc_stream_context_add_callback(s, [](void*) { note("callback"); }, nullptr);
  EXPECT_EQ(position(log_copy(), "callback"), -1);  // not run: its wait failed
  ccv_nnc_stream_context_wait(s);
  EXPECT_NE(last_error().find("faulted"), std::string::npos) << last_error();
  ccv_nnc_stream_context_free(s);
}

TEST_F(GpuStreamTest, WorkspaceInDeviceMemoryComesFromTheGpuStreamOnly) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(0));
  ASSERT_NE(s, nullptr);
  void* w = ccv_nnc_stream_context_get_workspace(s, 1000, CCV_TENSOR_GPU_MEMORY);
  EXPECT_EQ(w, static_cast<MockStream*>(nnc::gpu_stream_of(s))->workspace.data());
  EXPECT_GE(position(log_copy(), "workspace " + name_of(s) + " 1000"), 0);
  // Host scratch memory of a GPU stream is its own, in host memory.
  void* h = ccv_nnc_stream_context_get_workspace(s, 64, CCV_TENSOR_CPU_MEMORY);
  ASSERT_NE(h, nullptr);
  std::memset(h, 0, 64);
  ccv_nnc_stream_context_drain(s);
  EXPECT_GE(position(log_copy(), "drain " + name_of(s)), 0);
  ccv_nnc_stream_context_t* c = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(c, 10, CCV_TENSOR_GPU_MEMORY), nullptr);
  EXPECT_NE(last_error().find("CPU stream context"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(nullptr, 10, CCV_TENSOR_GPU_MEMORY), nullptr);
  EXPECT_NE(last_error().find("NULL"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(s, 10, 0x77), nullptr);
  EXPECT_NE(last_error().find("neither"), std::string::npos) << last_error();
  ccv_nnc_stream_context_free(c);
  ccv_nnc_stream_context_free(s);
}

TEST_F(GpuStreamTest, SignalBetweenGpuStreamsIsAnEventWaitedForOnTheDevice) {
  ccv_nnc_stream_context_t* a = ccv_nnc_stream_context_new(gpu_type(0));
  ccv_nnc_stream_context_t* b = ccv_nnc_stream_context_new(gpu_type(1));
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(gpu_type(0));
  ASSERT_TRUE(a && b && sig);
  g_log.clear();
  ccv_nnc_stream_context_emit_signal(a, sig);
  EXPECT_EQ(ccv_nnc_stream_signal_get_emitter(sig), a);
  ccv_nnc_stream_context_wait_signal(b, sig);
  auto log = log_copy();
  ASSERT_EQ(log.size(), 3u);
  const std::string e = log[0].substr(6, log[0].find(" on ") - 6);  // "event E.. on 0"
  EXPECT_EQ(log[0], "event " + e + " on 0");  // on the emitter's device
  EXPECT_EQ(log[1], "record " + e + " on " + name_of(a));
  EXPECT_EQ(log[2], name_of(b) + " waits for " + e);
  // Emitted again with nothing holding the event: the same event is recorded again.
  ccv_nnc_stream_context_emit_signal(a, sig);
  EXPECT_EQ(log_copy().back(), "record " + e + " on " + name_of(a));
  EXPECT_EQ(count(log_copy(), "event E"), 1);
  EXPECT_EQ(count(log_copy(), "host waits"), 0);  // no host blocked
  // emit_signal_new on a GPU stream: a GPU signal of the stream's own.
  ccv_nnc_stream_signal_t* own = ccv_nnc_stream_context_emit_signal_new(b);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(ccv_nnc_stream_signal_type(own), gpu_type(1));
  ccv_nnc_stream_context_wait_signal(a, own);
  EXPECT_EQ(log_copy().back().rfind(name_of(a) + " waits for E", 0), 0u);
  ccv_nnc_stream_signal_free(sig);
  ccv_nnc_stream_context_free(a);
  ccv_nnc_stream_context_free(b);
}

TEST_F(GpuStreamTest, CpuStreamWaitsForTheEventOfTheEmitItSaw) {
  ccv_nnc_stream_context_t* g = ccv_nnc_stream_context_new(gpu_type(0));
  ccv_nnc_stream_context_t* c = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_TRUE(g && c && sig);
  // Hold the CPU stream's worker so that its wait task runs after a second emit.
  static std::atomic<bool> release{false};
  release = false;
  ccv_nnc_stream_context_add_callback(c, [](void*) { while (!release.load()) std::this_thread::yield(); }, nullptr);
  ccv_nnc_stream_context_emit_signal(g, sig);
  std::string first = log_copy().back();  // "record E.. on S.."
  first = first.substr(7, first.find(" on ") - 7);
  ccv_nnc_stream_context_wait_signal(c, sig);
  ccv_nnc_stream_context_emit_signal(g, sig);  // the first event is held by the pending wait: a new one
  std::string second = log_copy().back();
  second = second.substr(7, second.find(" on ") - 7);
  EXPECT_NE(first, second);
  release = true;
  ccv_nnc_stream_context_wait(c);
  auto log = log_copy();
  EXPECT_GE(position(log, "host waits for " + first), 0);
  EXPECT_EQ(position(log, "host waits for " + second), -1);
  // The first event is released once the wait is done; the second with the signal.
  EXPECT_GE(position(log, "event free " + first), 0);
  EXPECT_EQ(g_live_events.load(), 1);
  // The NULL stream (the caller) waits for the latest emit on the host.
  ccv_nnc_stream_context_wait_signal(nullptr, sig);
  EXPECT_EQ(log_copy().back(), "host waits for " + second);
  ccv_nnc_stream_signal_free(sig);
  EXPECT_EQ(g_live_events.load(), 0);
  ccv_nnc_stream_context_free(c);
  ccv_nnc_stream_context_free(g);
}

TEST_F(GpuStreamTest, GpuStreamWaitingForACpuSignalHoldsTheCallerUntilItIsReached) {
  ccv_nnc_stream_context_t* g = ccv_nnc_stream_context_new(gpu_type(0));
  ccv_nnc_stream_context_t* c = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(gpu_type(0));
  ASSERT_TRUE(g && c && sig);
  static std::atomic<bool> done{false};
  done = false;
  ccv_nnc_stream_context_add_callback(c, [](void*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  }, nullptr);
  ccv_nnc_stream_context_emit_signal(c, sig);
  ccv_nnc_stream_context_wait_signal(g, sig);
  EXPECT_TRUE(done.load());  // the caller was held until the CPU stream reached the signal
  EXPECT_EQ(count(log_copy(), "event"), 0);  // no device event for a CPU emit
  // After a CPU emit, a GPU emit, and a CPU emit again, waits follow the latest.
  ccv_nnc_stream_context_emit_signal(g, sig);
  ccv_nnc_stream_context_wait_signal(c, sig);
  ccv_nnc_stream_context_wait(c);
  EXPECT_EQ(count(log_copy(), "host waits for"), 1);
  ccv_nnc_stream_context_emit_signal(c, sig);
  ccv_nnc_stream_context_wait_signal(g, sig);
  EXPECT_EQ(count(log_copy(), name_of(g) + " waits for"), 0);
  ccv_nnc_stream_context_wait(c);
  ccv_nnc_stream_signal_free(sig);
  ccv_nnc_stream_context_free(c);
  ccv_nnc_stream_context_free(g);
}

TEST_F(GpuStreamTest, GraphRunOnAGpuStreamGivesTheValuesOfARunWithout) {
  // a -> x = 2a + 1 -> y = x + a (EWSUM) -> z = 2y + 1: host nodes, each after the stream's device work.
  std::mt19937 rng(19);
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  ccv_nnc_tensor_t* z = ccv_nnc_tensor_new(nullptr, cpu_param(CCV_32F, {1}), 0);
  fill_uniform(a->data.f32, 1, rng);
  ccv_nnc_graph_t* graph = ccv_nnc_graph_new();
  ccv_nnc_tensor_t* ax[2] = {x, a};
  const ccv_nnc_graph_exec_t n1 = ccv_nnc_graph_exec_new(graph, host_cmd(1), ccv_nnc_no_hint, &a, 1, &x, 1);
  const ccv_nnc_graph_exec_t n2 =
      ccv_nnc_graph_exec_new(graph, ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, no_params(), 0), ccv_nnc_no_hint, ax, 2, &y, 1);
  const ccv_nnc_graph_exec_t n3 = ccv_nnc_graph_exec_new(graph, host_cmd(3), ccv_nnc_no_hint, &y, 1, &z, 1);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(graph, n1, n2), 0);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(graph, n2, n3), 0);
  ASSERT_EQ(ccv_nnc_graph_run(graph, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), 0) << last_error();
  const float expected = z->data.f32[0];
  EXPECT_FLOAT_EQ(expected, 2 * ((2 * a->data.f32[0] + 1) + a->data.f32[0]) + 1);
  z->data.f32[0] = -1;
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(gpu_type(0));
  ASSERT_NE(s, nullptr);
  g_log.clear();
  ASSERT_EQ(ccv_nnc_graph_run(graph, 0, nullptr, 0, nullptr, 0, nullptr, s), 0) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(z->data.f32[0], expected);
  const auto log = log_copy();
  EXPECT_EQ(count(log, "wait "), 4);  // before each of the three host nodes, and the wait
  EXPECT_EQ(position(log, "wait " + name_of(s)) + 1, position(log, "exec 1 on a stream"));
  // With a default static schedule too (run after the stream's work, synchronously).
  ccv_nnc_graph_set_default_static_schedule(graph, CCV_STREAM_CONTEXT_CPU, 2);
  z->data.f32[0] = -1;
  ASSERT_EQ(ccv_nnc_graph_run(graph, 0, nullptr, 0, nullptr, 0, nullptr, s), 0) << last_error();
  EXPECT_EQ(z->data.f32[0], expected);
  ccv_nnc_stream_context_free(s);
  ccv_nnc_graph_free(graph);
  ccv_nnc_tensor_free(a);
  ccv_nnc_tensor_free(x);
  ccv_nnc_tensor_free(y);
  ccv_nnc_tensor_free(z);
}

}  // namespace
