// The fixed costs around a command, as behaviour: the last-error message
// starts empty at every exported call, ccv_nnc_cmd reports an unknown id
// inside the guard, the stream workspace is not handed out from under a
// running kernel, and ccv_nnc_set_memory_efficient releases scratch memory.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/stream.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

// A custom command that fails (blas.a[0] != 0) without setting any message,
// or blocks until g_release is set (blas.a[1] != 0).
std::atomic<bool> g_release{false};
std::atomic<bool> g_started{false};
int quiet_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
               ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  if (cmd.info.blas.a[1] != 0) {
    g_started = true;
    while (!g_release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cmd.info.blas.a[0] != 0 ? CCV_NNC_EXEC_INVALID : CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_quiet = {quiet_exec, nullptr};
ccv_nnc_cmd_t quiet(bool fail, bool block = false) {
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = fail ? 1.f : 0.f;
  p.blas.a[1] = block ? 1.f : 0.f;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_quiet, p, 0);
}

class DispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
  }
  void TearDown() override { ccv_nnc_set_memory_efficient(0); }
};

// A failure without a message of its own after a failure with one: the
// second reports itself, never the first's text.
TEST_F(DispatchTest, AFailureWithoutAMessageDoesNotRepeatAnOlderOne) {
  Tensor a(cpu_param(CCV_32F, {3}));
  ccv_nnc_tensor_t* in[] = {a.t};
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(false), ccv_nnc_no_hint, 0, nullptr, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  const std::string first = last_error();
  ASSERT_NE(first.find("input array is NULL"), std::string::npos) << first;
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(true), ccv_nnc_no_hint, 0, in, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(last_error().find("input array"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("custom exec function returned"), std::string::npos) << last_error();
  // The same on a stream: the failure reported by wait is the stream's own.
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(false), ccv_nnc_no_hint, 0, nullptr, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(true), ccv_nnc_no_hint, 0, in, 1, in, 1, s), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STREQ(ccv_nnc_error_message(), "") << "a successful call starts with no message";
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error().find("input array"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("custom exec function returned"), std::string::npos) << last_error();
  ccv_nnc_stream_context_free(s);
  // A successful call after a failed one leaves no message behind.
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(false), ccv_nnc_no_hint, 0, nullptr, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(ccv_nnc_cmd_exec(quiet(false), ccv_nnc_no_hint, 0, in, 1, in, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
}

TEST_F(DispatchTest, UnknownCommandIdIsReportedByCcvNncCmd) {
  const ccv_nnc_cmd_t c = ccv_nnc_cmd(0x12345678u, nullptr, no_params(), 0);
  EXPECT_EQ(c.cmd, static_cast<uint32_t>(CCV_NNC_NOOP));
  EXPECT_NE(last_error().find("unknown command id 0x12345678"), std::string::npos) << last_error();
  // A known id: no message (the call starts clean like every other).
  const ccv_nnc_cmd_t ok = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  EXPECT_EQ(ok.cmd, static_cast<uint32_t>(CCV_NNC_EWSUM_FORWARD));
  EXPECT_EQ(ok.algorithm, -1);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
}

// While a kernel runs on a stream, another thread may not take (and so
// reallocate) the stream's workspace; once the stream is idle it may.
TEST_F(DispatchTest, WorkspaceOfABusyStreamIsRefusedToOtherThreads) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  void* small = ccv_nnc_stream_context_get_workspace(s, 64, CCV_TENSOR_CPU_MEMORY);
  ASSERT_NE(small, nullptr) << last_error();
  g_release = false;
  g_started = false;
  ASSERT_EQ(ccv_nnc_cmd_exec(quiet(false, true), ccv_nnc_no_hint, 0, nullptr, 0, nullptr, 0, s), CCV_NNC_EXEC_SUCCESS);
  while (!g_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(s, 1 << 20, CCV_TENSOR_CPU_MEMORY), nullptr);
  EXPECT_NE(last_error().find("queued or running"), std::string::npos) << last_error();
  g_release = true;
  ccv_nnc_stream_context_wait(s);
  void* big = ccv_nnc_stream_context_get_workspace(s, 1 << 20, CCV_TENSOR_CPU_MEMORY);
  ASSERT_NE(big, nullptr) << last_error();
  std::memset(big, 3, 1 << 20);
  // The stream's own work may always ask for it.
  std::atomic<void*> from_inside{nullptr};
  struct Ctx {
    ccv_nnc_stream_context_t* s;
    std::atomic<void*>* out;
  } ctx{s, &from_inside};
  ccv_nnc_stream_context_add_callback(
      s,
      [](void* p) {
        auto* c = static_cast<Ctx*>(p);
        c->out->store(ccv_nnc_stream_context_get_workspace(c->s, 4 << 20, CCV_TENSOR_CPU_MEMORY));
      },
      &ctx);
  ccv_nnc_stream_context_wait(s);
  EXPECT_NE(from_inside.load(), nullptr);
  ccv_nnc_stream_context_free(s);
}

// Memory-efficient mode: a thread's scratch buffer does not outlive the call
// that used it; off (the default), it is kept for the next command.
TEST_F(DispatchTest, MemoryEfficientModeReleasesScratchMemoryAfterEachCall) {
  Tensor a(cpu_param(CCV_32F, {4})), b(cpu_param(CCV_32F, {4}));
  for (int i = 0; i < 4; i++) a.f32()[i] = static_cast<float>(i);
  ccv_nnc_tensor_t* in[] = {a.t, a.t};
  ccv_nnc_tensor_t* out[] = {b.t};
  const ccv_nnc_cmd_t sum = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  ASSERT_NE(ccv_nnc_stream_context_get_workspace(nullptr, 1 << 20, CCV_TENSOR_CPU_MEMORY), nullptr);
  EXPECT_GE(nnc::thread_workspace_size(), size_t{1} << 20);
  ASSERT_EQ(ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
  EXPECT_GE(nnc::thread_workspace_size(), size_t{1} << 20) << "kept while the mode is off";
  ccv_nnc_set_memory_efficient(1);
  ASSERT_EQ(ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(nnc::thread_workspace_size(), 0u);
  for (int i = 0; i < 4; i++) EXPECT_EQ(b.f32()[i], 2.f * i);
  // A failing call releases it too.
  ASSERT_NE(ccv_nnc_stream_context_get_workspace(nullptr, 1 << 20, CCV_TENSOR_CPU_MEMORY), nullptr);
  EXPECT_EQ(ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, nullptr, 2, out, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(nnc::thread_workspace_size(), 0u);
  // A stream's workspace is released after each of its tasks.
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  std::atomic<size_t> seen{1};
  ccv_nnc_stream_context_add_callback(
      s,
      [](void* p) {
        // The worker's own thread buffer: not the stream's, so kept.
        if (!ccv_nnc_stream_context_get_workspace(nullptr, 1 << 16, CCV_TENSOR_CPU_MEMORY)) return;
        static_cast<std::atomic<size_t>*>(p)->store(nnc::thread_workspace_size());
      },
      &seen);
  ccv_nnc_stream_context_wait(s);
  EXPECT_GE(seen.load(), size_t{1} << 16);
  ASSERT_NE(ccv_nnc_stream_context_get_workspace(s, 1 << 20, CCV_TENSOR_CPU_MEMORY), nullptr);
  ASSERT_EQ(ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, in, 2, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_set_memory_efficient(0);
  ccv_nnc_stream_context_free(s);
  ccv_nnc_set_memory_efficient(0);
}

}  // namespace
