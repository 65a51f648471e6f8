// CPU streams: order, asynchrony, signals between streams, many concurrent
// commands, callbacks, errors reported on wait, workspace, seeds and hooks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

// A custom command that appends its tag (blas.a[0]) to a shared log after an
// optional sleep (blas.a[1] milliseconds), and writes the tag to output 0.
std::mutex g_log_mutex;
std::vector<int> g_log;

int log_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
             ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  if (cmd.info.blas.a[1] > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(cmd.info.blas.a[1])));
  float v = cmd.info.blas.a[0];
  if (input_size > 0 && inputs[0]) v += inputs[0]->data.f32[0];
  if (output_size > 0 && outputs[0]) outputs[0]->data.f32[0] = v;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log.push_back(static_cast<int>(cmd.info.blas.a[0]));
  return cmd.info.blas.a[2] != 0 ? CCV_NNC_EXEC_INVALID : CCV_NNC_EXEC_SUCCESS;
}

ccv_nnc_cmd_vtab_t g_log_isa = {log_exec, nullptr};

ccv_nnc_cmd_t log_cmd(int tag, int sleep_ms = 0, bool fail = false) {
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = static_cast<float>(tag);
  p.blas.a[1] = static_cast<float>(sleep_ms);
  p.blas.a[2] = fail ? 1.f : 0.f;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_log_isa, p, 0);
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log.clear();
  }
  std::vector<int> log() {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    return g_log;
  }
};

TEST_F(StreamTest, CommandsRunInOrderAndAsynchronously) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ccv_nnc_stream_context_type(s), CCV_STREAM_CONTEXT_CPU);
  Tensor t(cpu_param(CCV_32F, {1}));
  ccv_nnc_tensor_t* out[] = {t.t};
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(1, 100), ccv_nnc_no_hint, 0, nullptr, 0, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  for (int i = 2; i <= 20; i++) ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(i), ccv_nnc_no_hint, 0, nullptr, 0, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  const double queued = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(queued, 0.09);  // queuing did not wait for the 100 ms command
  ccv_nnc_stream_context_wait(s);
  std::vector<int> expect;
  for (int i = 1; i <= 20; i++) expect.push_back(i);
  EXPECT_EQ(log(), expect);
  EXPECT_EQ(t.f32()[0], 20.f);
  ccv_nnc_stream_context_free(s);
}

TEST_F(StreamTest, SignalOrdersWorkAcrossStreams) {
  ccv_nnc_stream_context_t* a = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_context_t* b = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_TRUE(a && b && sig);
  EXPECT_EQ(ccv_nnc_stream_signal_type(sig), CCV_STREAM_CONTEXT_CPU);
  Tensor x(cpu_param(CCV_32F, {1})), y(cpu_param(CCV_32F, {1}));
  x.f32()[0] = 0;
  ccv_nnc_tensor_t* xs[] = {x.t};
  ccv_nnc_tensor_t* ys[] = {y.t};
  // a: slow x = 10; emit. b: wait; y = x + 1. Without the signal b would read x = 0.
  ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(10, 150), ccv_nnc_no_hint, 0, nullptr, 0, xs, 1, a), 0);
  ccv_nnc_stream_context_emit_signal(a, sig);
  EXPECT_EQ(ccv_nnc_stream_signal_get_emitter(sig), a);
  ccv_nnc_stream_context_wait_signal(b, sig);
  ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(1), ccv_nnc_no_hint, 0, xs, 1, ys, 1, b), 0);
  ccv_nnc_stream_context_wait(b);
  EXPECT_EQ(y.f32()[0], 11.f);
  EXPECT_EQ(log(), (std::vector<int>{10, 1}));
  // The stream-owned signal works the same way, and can be reused.
  for (int round = 0; round < 3; round++) {
    ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(20 + round, 30), ccv_nnc_no_hint, 0, nullptr, 0, xs, 1, b), 0);
    ccv_nnc_stream_signal_t* owned = ccv_nnc_stream_context_emit_signal_new(b);
    ASSERT_NE(owned, nullptr);
    ccv_nnc_stream_context_wait_signal(a, owned);
    ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(1), ccv_nnc_no_hint, 0, xs, 1, ys, 1, a), 0);
    ccv_nnc_stream_context_wait(a);
    EXPECT_EQ(y.f32()[0], static_cast<float>(20 + round + 1));
  }
  ccv_nnc_stream_context_free(a);
  ccv_nnc_stream_context_free(b);
  ccv_nnc_stream_signal_free(sig);
}

TEST_F(StreamTest, ManyStreamsManyCommands) {
  constexpr int kStreams = 6, kCommands = 400;
  std::vector<ccv_nnc_stream_context_t*> streams;
  std::vector<std::unique_ptr<Tensor>> outs;
  for (int s = 0; s < kStreams; s++) {
    streams.push_back(ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU));
    outs.push_back(std::make_unique<Tensor>(cpu_param(CCV_32F, {1})));
    outs.back()->f32()[0] = 0;
  }
  // Each stream accumulates 1..kCommands into its own tensor: out = out + tag.
  for (int i = 1; i <= kCommands; i++)
    for (int s = 0; s < kStreams; s++) {
      ccv_nnc_tensor_t* io[] = {outs[static_cast<size_t>(s)]->t};
      ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(i), ccv_nnc_no_hint, 0, io, 1, io, 1, streams[static_cast<size_t>(s)]), 0);
    }
  for (auto* s : streams) ccv_nnc_stream_context_wait(s);
  for (int s = 0; s < kStreams; s++) EXPECT_EQ(outs[static_cast<size_t>(s)]->f32()[0], kCommands * (kCommands + 1) / 2.f);
  EXPECT_EQ(log().size(), static_cast<size_t>(kStreams * kCommands));
  for (auto* s : streams) ccv_nnc_stream_context_free(s);
}

TEST_F(StreamTest, FailureIsReportedOnWait) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  Tensor t(cpu_param(CCV_32F, {1}));
  ccv_nnc_tensor_t* out[] = {t.t};
  ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(1, 0, true), ccv_nnc_no_hint, 0, nullptr, 0, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(2), ccv_nnc_no_hint, 0, nullptr, 0, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_NE(last_error().find("custom exec function returned -1"), std::string::npos) << last_error();
  EXPECT_EQ(log(), (std::vector<int>{1, 2}));  // later work still ran
  // The error is reported once.
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  // Argument errors are found before queuing and returned at once.
  EXPECT_EQ(ccv_nnc_cmd_exec(log_cmd(3), ccv_nnc_no_hint, 0, nullptr, 1, out, 1, s), CCV_NNC_EXEC_INVALID);
  ccv_nnc_stream_context_free(s);
}

void bump(void* context) { static_cast<std::atomic<int>*>(context)->fetch_add(1); }

void on_destroy(const ccv_nnc_stream_context_t*, void* context) { static_cast<std::atomic<int>*>(context)->fetch_add(100); }

TEST_F(StreamTest, CallbacksAndDestructorHooks) {
  std::atomic<int> count{0};
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  for (int i = 0; i < 5; i++) ccv_nnc_stream_context_add_callback(s, bump, &count);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(count.load(), 5);
  const int keep = ccv_nnc_stream_context_add_destructor_hook(s, on_destroy, &count);
  const int drop = ccv_nnc_stream_context_add_destructor_hook(s, on_destroy, &count);
  EXPECT_NE(keep, drop);
  ccv_nnc_stream_context_remove_destructor_hook(s, drop);
  ccv_nnc_stream_context_remove_destructor_hook(s, 12345);  // unknown id: message, no crash
  EXPECT_NE(last_error().find("no hook"), std::string::npos);
  ccv_nnc_stream_context_free(s);
  EXPECT_EQ(count.load(), 105);
}

TEST_F(StreamTest, WorkspaceIsReusedAndDrained) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  void* a = ccv_nnc_stream_context_get_workspace(s, 1000, CCV_TENSOR_CPU_MEMORY);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 1000);
  void* b = ccv_nnc_stream_context_get_workspace(s, 500, CCV_TENSOR_CPU_MEMORY);
  EXPECT_EQ(a, b);
  void* c = ccv_nnc_stream_context_get_workspace(s, 1 << 20, CCV_TENSOR_CPU_MEMORY);
  ASSERT_NE(c, nullptr);
  std::memset(c, 2, 1 << 20);
  ccv_nnc_stream_context_drain(s);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(s, 10, CCV_TENSOR_GPU_MEMORY), nullptr);
  ccv_nnc_stream_context_free(s);
}

TEST_F(StreamTest, SeedsMakeRandomNumbersReproducible) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_context_set_seed(s, 7);
  std::vector<uint32_t> first;
  for (int i = 0; i < 8; i++) first.push_back(ccv_nnc_stream_context_genrand_uint32(s));
  ccv_nnc_stream_context_set_seed(s, 7);
  for (int i = 0; i < 8; i++) EXPECT_EQ(ccv_nnc_stream_context_genrand_uint32(s), first[static_cast<size_t>(i)]);
  ccv_nnc_stream_context_set_seed(s, 8);
  EXPECT_NE(ccv_nnc_stream_context_genrand_uint32(s), first[0]);
  ccv_nnc_stream_context_set_seed(nullptr, 7);
  EXPECT_EQ(ccv_nnc_stream_context_genrand_uint32(nullptr), first[0]);  // the same generator and seed
  ccv_nnc_stream_context_free(s);
}

TEST_F(StreamTest, BadArgumentsAreRefused) {
  EXPECT_EQ(ccv_nnc_stream_context_new(0), nullptr);
  EXPECT_NE(last_error().find("neither"), std::string::npos);
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0) {
    // No GPU (or a build without CUDA): a GPU stream is refused with a message.
    EXPECT_EQ(ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU), nullptr);
    EXPECT_NE(last_error().find("CUDA"), std::string::npos) << last_error();
  } else {
    // With a GPU (the CUDA build on a GPU machine) the same call makes one;
    // a device past the last is refused.
    ccv_nnc_stream_context_t* g = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
    EXPECT_NE(g, nullptr) << last_error();
    ccv_nnc_stream_context_free(g);
    int past = CCV_STREAM_CONTEXT_GPU;
    CCV_STREAM_SET_DEVICE_ID(past, ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU));
    EXPECT_EQ(ccv_nnc_stream_context_new(past), nullptr);
    EXPECT_FALSE(last_error().empty());
  }
  EXPECT_EQ(ccv_nnc_stream_signal_new(0), nullptr);
  ccv_nnc_stream_context_wait(nullptr);  // no-op
  ccv_nnc_stream_context_free(nullptr);
  ccv_nnc_stream_signal_free(nullptr);
  ccv_nnc_stream_context_add_callback(nullptr, bump, nullptr);
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  ccv_nnc_stream_context_emit_signal(nullptr, nullptr);
  EXPECT_NE(last_error().find("signal is NULL"), std::string::npos);
  EXPECT_EQ(ccv_nnc_device_count(CCV_STREAM_CONTEXT_CPU), 1);
  EXPECT_GE(ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), 0);  // 0 without CUDA or a GPU
  EXPECT_EQ(ccv_nnc_device_remap(CCV_STREAM_CONTEXT_GPU, 0, 1), -1);
}

ccv_nnc_stream_context_t* g_neighbor = nullptr;
ccv_nnc_stream_context_t* discover(const int device_id, void* context) {
  *static_cast<int*>(context) = device_id;
  return g_neighbor;
}

TEST_F(StreamTest, NeighborDiscoveryCallsTheCallersFunction) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  EXPECT_EQ(ccv_nnc_stream_context_find_neighbor(s, 1), nullptr);
  int asked = -1;
  g_neighbor = s;
  ccv_nnc_stream_context_set_neighbor_discovery(s, discover, &asked);
  EXPECT_EQ(ccv_nnc_stream_context_find_neighbor(s, 3), s);
  EXPECT_EQ(asked, 3);
  ccv_nnc_stream_context_free(s);
}

}  // namespace

namespace {

// Real kernels on streams: c = a·b on stream 1, then d = c·b on stream 2
// after a signal, compared with the same products run directly.
TEST_F(StreamTest, GemmChainAcrossStreamsMatchesDirectExecution) {
  std::mt19937 rng(11);
  Tensor a(cpu_param(CCV_32F, {37, 29})), b(cpu_param(CCV_32F, {29, 29}));
  Tensor c(cpu_param(CCV_32F, {37, 29})), d(cpu_param(CCV_32F, {37, 29}));
  Tensor c_ref(cpu_param(CCV_32F, {37, 29})), d_ref(cpu_param(CCV_32F, {37, 29}));
  fill_uniform(a.f32(), 37 * 29, rng);
  fill_uniform(b.f32(), 29 * 29, rng);
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = p.blas.a[1] = 1;
  const ccv_nnc_cmd_t gemm = ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, p, 0);
  ccv_nnc_tensor_t* ab[] = {a.t, b.t};
  ccv_nnc_tensor_t* cb[] = {c.t, b.t};
  ccv_nnc_tensor_t* crb[] = {c_ref.t, b.t};
  ccv_nnc_tensor_t* co[] = {c.t};
  ccv_nnc_tensor_t* dout[] = {d.t};
  ccv_nnc_tensor_t* cro[] = {c_ref.t};
  ccv_nnc_tensor_t* dro[] = {d_ref.t};
  ASSERT_EQ(ccv_nnc_cmd_exec(gemm, ccv_nnc_no_hint, 0, ab, 2, cro, 1, nullptr), 0) << last_error();
  ASSERT_EQ(ccv_nnc_cmd_exec(gemm, ccv_nnc_no_hint, 0, crb, 2, dro, 1, nullptr), 0) << last_error();
  ccv_nnc_stream_context_t* s1 = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_context_t* s2 = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  for (int round = 0; round < 20; round++) {
    ccv_nnc_tensor_zero(c);
    ccv_nnc_tensor_zero(d);
    // A slow custom command first, so that without the signal s2 would read c too early.
    ASSERT_EQ(ccv_nnc_cmd_exec(log_cmd(round, round % 4 == 0 ? 20 : 0), ccv_nnc_no_hint, 0, nullptr, 0, nullptr, 0, s1), 0);
    ASSERT_EQ(ccv_nnc_cmd_exec(gemm, ccv_nnc_no_hint, 0, ab, 2, co, 1, s1), 0) << last_error();
    ccv_nnc_stream_signal_t* done = ccv_nnc_stream_context_emit_signal_new(s1);
    ccv_nnc_stream_context_wait_signal(s2, done);
    ASSERT_EQ(ccv_nnc_cmd_exec(gemm, ccv_nnc_no_hint, 0, cb, 2, dout, 1, s2), 0) << last_error();
    ccv_nnc_stream_context_wait(s2);
    EXPECT_EQ(ccv_nnc_tensor_eq(d, d_ref), 0) << "round " << round << ": " << last_error();
  }
  ccv_nnc_stream_context_wait(s1);
  EXPECT_EQ(ccv_nnc_tensor_eq(c, c_ref), 0) << last_error();
  ccv_nnc_stream_context_free(s1);
  ccv_nnc_stream_context_free(s2);
}

}  // namespace
