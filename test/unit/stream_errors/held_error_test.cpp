// How a stream reports the failures of its work (core/stream.cpp): the wait
// sets the thread's message, the next call queued on the stream returns the
// failure's code (without running), once; ccv_nnc_stream_context_error takes
// it instead. On CPU streams (a command failing on the worker) and on GPU
// stream contexts, whose kernels' bad-input flags are read back when the host
// waits (here an imitation of the CUDA module's hooks with a real
// DeviceErrorLog over host ints, as cuda/stream.cpp keeps one over device ints).
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "cmd/common/gpu_flags.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream_errors.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A custom command: y[0] = x[0] * 2 + 1, counting its runs; fails when asked.
int g_runs = 0;
int host_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int,
              ccv_nnc_tensor_t* const* outputs, const int, ccv_nnc_stream_context_t* const) {
  g_runs++;
  if (cmd.info.blas.a[0] != 0) {
    ccv_nnc_error_clear();
    return CCV_NNC_EXEC_INVALID;
  }
  outputs[0]->data.f32[0] = inputs[0]->data.f32[0] * 2 + 1;
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_isa = {host_exec, nullptr};
ccv_nnc_cmd_t host_cmd(bool fail) {
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = fail ? 1.f : 0.f;
  return ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_isa, p, 0);
}

class HeldError : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
    g_runs = 0;
    x->data.f32[0] = 3;
    y->data.f32[0] = -1;
  }
  int run(ccv_nnc_stream_context_t* s, bool fail = false) {
    ccv_nnc_tensor_t* in = x;
    ccv_nnc_tensor_t* out = y;
    return ccv_nnc_cmd_exec(host_cmd(fail), ccv_nnc_no_hint, 0, &in, 1, &out, 1, s);
  }
  Tensor x{cpu_param(CCV_32F, {1})};
  Tensor y{cpu_param(CCV_32F, {1})};
};

TEST_F(HeldError, CpuStreamFailureIsReportedByTheWaitThenReturnedOnceByTheNextCall) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(run(s, true), CCV_NNC_EXEC_SUCCESS);  // queued: its failure is not known yet
  ccv_nnc_stream_context_wait(s);
  const std::string reported = last_error();
  EXPECT_TRUE(has(reported, "custom exec function returned -1")) << reported;
  EXPECT_EQ(g_runs, 1);
  // The next call returns it, with the same words, and does not run.
  ccv_nnc_error_clear();
  EXPECT_EQ(run(s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), reported)) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(g_runs, 1);
  EXPECT_EQ(y->data.f32[0], -1.f);
  // The one after runs, and a wait with nothing failed reports nothing.
  ccv_nnc_error_clear();
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(g_runs, 2);
  EXPECT_EQ(y->data.f32[0], 7.f);
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_free(s);
}

TEST_F(HeldError, SeveralFailuresBetweenWaitsReportTheFirstAndCountTheOthers) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  run(s, true);
  run(s, false);
  run(s, true);
  run(s, true);
  ccv_nnc_stream_context_wait(s);
  EXPECT_TRUE(has(last_error(), "(and 2 further errors on this stream)")) << last_error();
  EXPECT_EQ(g_runs, 4);
  EXPECT_EQ(y->data.f32[0], 7.f);  // the good one ran between them
  ccv_nnc_stream_context_free(s);
}

TEST_F(HeldError, StreamContextErrorTakesTheHeldFailureSoTheNextCallRuns) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);
  run(s, true);
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);  // nothing held before a wait reports it
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), "custom exec function returned -1")) << last_error();
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);  // taken
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(y->data.f32[0], 7.f);
  // NULL: refused with a message.
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_stream_context_error(nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), "NULL")) << last_error();
  ccv_nnc_stream_context_free(s);
}

TEST_F(HeldError, GraphRunOnTheStreamReturnsTheHeldFailureThenRuns) {
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  Tensor a(cpu_param(CCV_32F, {3})), b(cpu_param(CCV_32F, {3})), c(cpu_param(CCV_32F, {3}));
  for (int i = 0; i < 3; i++) {
    a->data.f32[i] = 0.5f * i - 1;
    b->data.f32[i] = 2.f + i;
    c->data.f32[i] = 99;
  }
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  ccv_nnc_tensor_t* ins[2] = {a, b};
  ccv_nnc_tensor_t* outs[1] = {c};
  const ccv_nnc_graph_exec_t node = ccv_nnc_graph_exec_new(g, ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, no_params(), 0), ccv_nnc_no_hint, ins, 2, outs, 1);
  ASSERT_GE(node.d, 0);
  run(s, true);
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), "custom exec function returned -1")) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(c->data.f32[1], 99.f);  // did not run
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  for (int i = 0; i < 3; i++) EXPECT_EQ(c->data.f32[i], a->data.f32[i] + b->data.f32[i]) << i;
  ccv_nnc_graph_free(g);
  ccv_nnc_stream_context_free(s);
}

// --- a GPU stream context over imitation hooks ---------------------------------

// The module's side, on the host: a DeviceErrorLog over a host int array
// standing for the device's, read back by the wait (cuda/stream.cpp does the
// same with cudaMemcpyAsync after cudaStreamSynchronize).
constexpr int kSlots = 4;
struct MockStream {
  std::mutex mutex;
  nnc::DeviceErrorLog log{kSlots};
  int device[kSlots] = {};
  nnc::StreamErrors found;
  int waits = 0;
  void read_back(nnc::DeviceErrorLog::Span span) {
    std::vector<int> values;
    for (int i = 0; i < span.count; i++) values.push_back(device[(span.first + i) % kSlots]);
    for (int i = 0; i < span.count; i++) device[(span.first + i) % kSlots] = 0;
    log.drain(span, values.data(), found, nnc::describe_gpu_flag);
  }
};
void* m_new(int) { return new MockStream; }
void m_free(void* p) { delete static_cast<MockStream*>(p); }
void m_wait(void* p) {
  auto* m = static_cast<MockStream*>(p);
  std::lock_guard<std::mutex> lock(m->mutex);
  m->waits++;
  m->read_back(m->log.in_use());
}
std::vector<char> g_ws(64);
void* m_workspace(void*, size_t) { return g_ws.data(); }
void m_drain(void*) {}
void* m_event_new(int) { return new int(0); }
void m_event_free(void* e) { delete static_cast<int*>(e); }
void m_event_record(void*, void*) {}
void m_stream_wait_event(void*, void*) {}
void m_event_sync(void*) {}
void m_take_errors(void* p, nnc::StreamErrors& out) {
  auto* m = static_cast<MockStream*>(p);
  std::lock_guard<std::mutex> lock(m->mutex);
  out.merge(m->found);
}
const nnc::GpuStreamHooks kMock = {m_new,        m_free,         m_wait, m_workspace, m_drain, m_event_new, m_event_free,
                                   m_event_record, m_stream_wait_event, m_event_sync, m_take_errors};

// A kernel call on the stream that flagged `value` in its slot (0: clean),
// as DeviceFlag + the kernel do; a full log is read back first (error_slot).
void device_call(ccv_nnc_stream_context_t* s, const char* what, int value) {
  auto* m = static_cast<MockStream*>(nnc::gpu_stream_of(s));
  std::lock_guard<std::mutex> lock(m->mutex);
  int slot = m->log.reserve(what);
  if (slot < 0) {
    m->read_back(m->log.in_use());
    slot = m->log.reserve(what);
  }
  m->device[slot] = value;
}

class HeldGpuError : public HeldError {
 protected:
  void SetUp() override {
    HeldError::SetUp();
    saved_ = nnc::gpu_stream_hooks();
    nnc::set_gpu_stream_hooks(&kMock);
    s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
    ASSERT_NE(s, nullptr) << last_error();
  }
  void TearDown() override {
    ccv_nnc_stream_context_free(s);
    nnc::set_gpu_stream_hooks(saved_);
  }
  const nnc::GpuStreamHooks* saved_ = nullptr;
  ccv_nnc_stream_context_t* s = nullptr;
};

TEST_F(HeldGpuError, BadIndexFoundOnTheDeviceIsReportedByTheWaitAndReturnedByTheNextCall) {
  device_call(s, "CCV_NNC_INDEX_SELECT_FORWARD", 6);
  ccv_nnc_stream_context_wait(s);
  const std::string reported = last_error();
  EXPECT_EQ(reported, "CCV_NNC_INDEX_SELECT_FORWARD on a GPU stream: row index out of range: indices[5] is outside the rows");
  ccv_nnc_error_clear();
  EXPECT_EQ(run(s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), reported)) << last_error();
  EXPECT_EQ(g_runs, 0);
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(y->data.f32[0], 7.f);
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
}

TEST_F(HeldGpuError, CleanCallsReportNothing) {
  for (int i = 0; i < 3 * kSlots; i++) device_call(s, "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD", 0);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);
}

TEST_F(HeldGpuError, TwoBadCallsReportTheFirstAndCountTheSecondEvenPastAFullLog) {
  device_call(s, "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD", 3);
  for (int i = 0; i < 2 * kSlots; i++) device_call(s, "CCV_NNC_INDEX_SELECT_FORWARD", 0);  // the log fills and is read back
  device_call(s, "CCV_NNC_INDEX_SELECT_BACKWARD", 2);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(),
            "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD on a GPU stream: label out of range: the label of row 2 is not a class "
            "index in [0, classes) (and 1 further error on this stream)");
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
}

TEST_F(HeldGpuError, HostWorkOnTheStreamReadsTheLogButTheNextWaitReportsIt) {
  device_call(s, "CCV_NNC_INDEX_SELECT_FORWARD", 1);
  // A host command waits for the device (and reads the log) first; it runs,
  // and the bad input is kept for the wait rather than lost.
  EXPECT_EQ(run(s), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(g_runs, 1);
  auto* m = static_cast<MockStream*>(nnc::gpu_stream_of(s));
  EXPECT_EQ(m->log.in_use().count, 0);  // read back already
  ccv_nnc_stream_context_wait(s);
  EXPECT_TRUE(has(last_error(), "indices[0] is outside the rows")) << last_error();
  EXPECT_EQ(run(s), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(g_runs, 1);
}

// A custom command standing for a device kernel that flags blas.a[0] in its
// stream's log (a synchronous call has no log: it fails at once).
int flag_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
              ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const stream) {
  g_runs++;
  const int value = static_cast<int>(cmd.info.blas.a[0]);
  if (!nnc::gpu_stream_of(stream)) return value ? CCV_NNC_EXEC_INVALID : CCV_NNC_EXEC_SUCCESS;
  device_call(stream, "CCV_NNC_INDEX_SELECT_FORWARD", value);
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_flag_isa = {flag_exec, nullptr};

TEST_F(HeldGpuError, AScheduledGraphRunWithoutAStreamReportsBadInputOfItsOwnStreams) {
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = 0;
  ccv_nnc_tensor_t* in = x;
  ccv_nnc_tensor_t* out = y;
  const ccv_nnc_graph_exec_t a = ccv_nnc_graph_exec_new(g, ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_flag_isa, p, 0), ccv_nnc_no_hint, &in, 1, &out, 1);
  p.blas.a[0] = 8;
  const ccv_nnc_graph_exec_t b = ccv_nnc_graph_exec_new(g, ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_flag_isa, p, 0), ccv_nnc_no_hint, &in, 1, &out, 1);
  ASSERT_GE(a.d, 0);
  ASSERT_GE(b.d, 0);
  ccv_nnc_graph_set_sources(g, &a, 1);
  ccv_nnc_graph_set_destinations(g, &b, 1);
  ASSERT_EQ(ccv_nnc_graph_exec_concat(g, a, b), 0);
  ccv_nnc_graph_set_default_static_schedule(g, CCV_STREAM_CONTEXT_GPU, 2);
  ccv_nnc_error_clear();
  // Without a stream the run waits for its own GPU streams: it reports what they found.
  EXPECT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), "indices[7] is outside the rows")) << last_error();
  EXPECT_EQ(g_runs, 2);
  // Reported once: a clean run after it reports nothing.
  ccv_nnc_graph_free(g);
  ccv_nnc_graph_t* g2 = ccv_nnc_graph_new();
  p.blas.a[0] = 0;
  const ccv_nnc_graph_exec_t c = ccv_nnc_graph_exec_new(g2, ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_flag_isa, p, 0), ccv_nnc_no_hint, &in, 1, &out, 1);
  ASSERT_GE(c.d, 0);
  ccv_nnc_graph_set_default_static_schedule(g2, CCV_STREAM_CONTEXT_GPU, 2);
  EXPECT_EQ(ccv_nnc_graph_run(g2, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << last_error();
  // On the caller's GPU stream, the first stream is the caller's: reported by its wait.
  p.blas.a[0] = 3;
  ccv_nnc_graph_t* g3 = ccv_nnc_graph_new();
  const ccv_nnc_graph_exec_t d = ccv_nnc_graph_exec_new(g3, ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_flag_isa, p, 0), ccv_nnc_no_hint, &in, 1, &out, 1);
  ASSERT_GE(d.d, 0);
  ccv_nnc_graph_set_default_static_schedule(g3, CCV_STREAM_CONTEXT_GPU, 1);
  EXPECT_EQ(ccv_nnc_graph_run(g3, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_TRUE(has(last_error(), "indices[2] is outside the rows")) << last_error();
  EXPECT_EQ(ccv_nnc_graph_run(g3, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_INVALID);
  ccv_nnc_graph_free(g2);
  ccv_nnc_graph_free(g3);
}

TEST_F(HeldGpuError, AFreedStreamWithUnreportedBadInputLeaksNothing) {
  device_call(s, "CCV_NNC_INDEX_SELECT_FORWARD", 1);
  // TearDown frees it with the failure unreported: no crash, no leak (ASan).
}

}  // namespace
