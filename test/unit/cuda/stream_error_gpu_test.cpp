// Bad input that a GPU_REF kernel finds on the device, on a GPU stream
// context (cuda/stream.cpp: the stream's device error log; cuda/ewgpu.hpp:
// DeviceFlag): INDEX_SELECT with a row index outside the rows and
// SOFTMAX_CROSSENTROPY with a label outside the classes return at once (the
// work is only queued); ccv_nnc_stream_context_wait then sets the message,
// naming the command and the position as the synchronous call does; the next
// call on the stream returns the failure without running; the one after runs
// and gives CPU_REF's result. Clean calls, more of them than the log has
// slots, report nothing. Runs under tools/gpu-emu as well (one stream, no
// events: the emulated stream being synchronous changes nothing here, since
// the log is read back by the wait, as on a GPU).
//
// Tolerances: INDEX_SELECT copies rows (exact); SOFTMAX_CROSSENTROPY in float
// against CPU_REF over 7 classes: a few ulps of values of order 1-10, so
// rtol 1e-5, atol 1e-6.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"

namespace {

using namespace nnc_gpu_test;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
std::string last_error() { return ccv_nnc_error_message(); }

ccv_nnc_tensor_param_t param(std::vector<int> dim, int datatype = CCV_32F) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dim.size(); i++) p.dim[i] = dim[i];
  return p;
}

ccv_nnc_cmd_t cmd_of(uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_param_t p{};
  if (id == CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD) p.label_smoothing.trim1 = 1;  // no smoothing
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

ccv_nnc_stream_context_t* gpu_stream() {
  int type = CCV_STREAM_CONTEXT_GPU;
  CCV_STREAM_SET_DEVICE_ID(type, 0);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(type);
  EXPECT_NE(s, nullptr) << last_error();
  return s;
}

// A GPU tensor whose every element is `v` (a result that did not run stays so).
Owned gpu_filled(ccv_nnc_tensor_param_t p, float v) {
  Owned c(p);
  for (size_t i = 0; i < ccv_nnc_tensor_count(p); i++) c->data.f32[i] = v;
  return to_gpu(c);
}

void expect_all(const ccv_nnc_tensor_t* gpu, float v, const char* what) {
  Owned back = to_cpu(gpu);
  size_t bad = 0;
  for (size_t i = 0; i < ccv_nnc_tensor_count(back->info); i++) bad += back->data.f32[i] != v;
  EXPECT_EQ(bad, 0u) << what << ": the call was to leave its output alone";
}

// INDEX_SELECT: x (37 x 13), picks of 11 rows.
struct IndexCase {
  Owned x, ind_good, ind_bad, y_ref;
  Owned gx, gind_good, gind_bad;
  explicit IndexCase(std::mt19937& rng) : x(param({37, 13})), ind_good(param({11}, CCV_32S)), ind_bad(param({11}, CCV_32S)), y_ref(param({11, 13})) {
    fill(x, rng);
    std::uniform_int_distribution<int> d(0, 36);
    for (int i = 0; i < 11; i++) ind_good->data.i32[i] = ind_bad->data.i32[i] = d(rng);
    ind_bad->data.i32[4] = 37;  // rows are 0..36
    ccv_nnc_tensor_t* in[2] = {x, ind_good};
    ccv_nnc_tensor_t* out[1] = {y_ref};
    EXPECT_EQ(ccv_nnc_cmd_exec(cmd_of(CCV_NNC_INDEX_SELECT_FORWARD, CCV_NNC_BACKEND_CPU_REF), ccv_nnc_no_hint, 0, in, 2,
                               out, 1, nullptr),
              CCV_NNC_EXEC_SUCCESS)
        << last_error();
    gx = to_gpu(x);
    gind_good = to_gpu(ind_good);
    gind_bad = to_gpu(ind_bad);
  }
  int run(bool bad, ccv_nnc_tensor_t* gy, ccv_nnc_stream_context_t* s) const {
    return exec(cmd_of(CCV_NNC_INDEX_SELECT_FORWARD, CCV_NNC_BACKEND_GPU_REF), ccv_nnc_no_hint,
                {gx, bad ? gind_bad.t : gind_good.t}, {gy}, s);
  }
};

// SOFTMAX_CROSSENTROPY: logits 9 x 7, 32S labels; outputs loss (9) and softmax.
struct LossCase {
  Owned z, lab_good, lab_bad, loss_ref, sm_ref;
  Owned gz, glab_good, glab_bad;
  explicit LossCase(std::mt19937& rng)
      : z(param({9, 7})), lab_good(param({9}, CCV_32S)), lab_bad(param({9}, CCV_32S)), loss_ref(param({9})),
        sm_ref(param({9, 7})) {
    fill(z, rng, -3, 3);
    std::uniform_int_distribution<int> d(0, 6);
    for (int i = 0; i < 9; i++) lab_good->data.i32[i] = lab_bad->data.i32[i] = d(rng);
    lab_bad->data.i32[6] = 7;  // classes are 0..6
    ccv_nnc_tensor_t* in[2] = {z, lab_good};
    ccv_nnc_tensor_t* out[2] = {loss_ref, sm_ref};
    EXPECT_EQ(ccv_nnc_cmd_exec(cmd_of(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, CCV_NNC_BACKEND_CPU_REF), ccv_nnc_no_hint, 0,
                               in, 2, out, 2, nullptr),
              CCV_NNC_EXEC_SUCCESS)
        << last_error();
    gz = to_gpu(z);
    glab_good = to_gpu(lab_good);
    glab_bad = to_gpu(lab_bad);
  }
  int run(bool bad, ccv_nnc_tensor_t* gloss, ccv_nnc_tensor_t* gsm, ccv_nnc_stream_context_t* s) const {
    return exec(cmd_of(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, CCV_NNC_BACKEND_GPU_REF), ccv_nnc_no_hint,
                {gz, bad ? glab_bad.t : glab_good.t}, {gloss, gsm}, s);
  }
};

TEST(GpuStreamError, IndexOutsideTheRowsIsReportedByTheWaitThenByTheNextCallOnce) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(811);
  IndexCase k(rng);
  Owned gy = gpu_filled(param({11, 13}), 0);
  // The synchronous call's words, for comparison.
  ccv_nnc_error_clear();
  ASSERT_EQ(k.run(true, gy, nullptr), CCV_NNC_EXEC_INVALID);
  const std::string sync = last_error();
  ASSERT_TRUE(has(sync, "CCV_NNC_INDEX_SELECT_FORWARD: indices[4] is outside the rows")) << sync;
  ccv_nnc_stream_context_t* s = gpu_stream();
  ASSERT_NE(s, nullptr);
  ccv_nnc_error_clear();
  EXPECT_EQ(k.run(true, gy, s), CCV_NNC_EXEC_SUCCESS) << last_error();  // queued; found on the device
  ccv_nnc_stream_context_wait(s);
  const std::string reported = last_error();
  EXPECT_TRUE(has(reported, "CCV_NNC_INDEX_SELECT_FORWARD on a GPU stream: row index out of range: "
                            "indices[4] is outside the rows"))
      << reported;
  EXPECT_FALSE(has(reported, "further")) << reported;
  // The next call returns it and does not run.
  Owned gy2 = gpu_filled(param({11, 13}), 1234);
  ccv_nnc_error_clear();
  EXPECT_EQ(k.run(false, gy2, s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), reported)) << last_error();
  ccv_nnc_stream_context_wait(s);
  expect_all(gy2, 1234, "the call after the wait");
  // The one after runs and gives CPU_REF's rows.
  ccv_nnc_error_clear();
  EXPECT_EQ(k.run(false, gy2, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  expect_close(gy2, k.y_ref, 0, 0, "INDEX_SELECT on the stream");
  ccv_nnc_stream_context_free(s);
}

TEST(GpuStreamError, LabelOutsideTheClassesIsReportedByTheWaitThenByTheNextCallOnce) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(823);
  LossCase k(rng);
  Owned gloss = gpu_filled(param({9}), 0), gsm = gpu_filled(param({9, 7}), 0);
  ccv_nnc_error_clear();
  ASSERT_EQ(k.run(true, gloss, gsm, nullptr), CCV_NNC_EXEC_INVALID);
  ASSERT_TRUE(has(last_error(), "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD: the label of row 6 is not a class index"))
      << last_error();
  ccv_nnc_stream_context_t* s = gpu_stream();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(k.run(true, gloss, gsm, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  const std::string reported = last_error();
  EXPECT_TRUE(has(reported, "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD on a GPU stream: label out of range: the label of "
                            "row 6 is not a class index in [0, classes)"))
      << reported;
  Owned gloss2 = gpu_filled(param({9}), 1234), gsm2 = gpu_filled(param({9, 7}), 1234);
  ccv_nnc_error_clear();
  EXPECT_EQ(k.run(false, gloss2, gsm2, s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), reported)) << last_error();
  ccv_nnc_stream_context_wait(s);
  expect_all(gloss2, 1234, "the call after the wait (loss)");
  expect_all(gsm2, 1234, "the call after the wait (softmax)");
  ccv_nnc_error_clear();
  EXPECT_EQ(k.run(false, gloss2, gsm2, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  expect_close(gloss2, k.loss_ref, 1e-5f, 1e-6f, "SOFTMAX_CROSSENTROPY loss on the stream");
  expect_close(gsm2, k.sm_ref, 1e-5f, 1e-6f, "SOFTMAX_CROSSENTROPY softmax on the stream");
  ccv_nnc_stream_context_free(s);
}

TEST(GpuStreamError, CleanCallsNeverReportAnErrorEvenPastTheLogsSlots) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(829);
  IndexCase ki(rng);
  LossCase kl(rng);
  Owned gy = gpu_filled(param({11, 13}), 0), gloss = gpu_filled(param({9}), 0), gsm = gpu_filled(param({9, 7}), 0);
  ccv_nnc_stream_context_t* s = gpu_stream();
  ASSERT_NE(s, nullptr);
  // 2 x 150 flagged calls: more than the log's 256 slots between two waits.
  for (int i = 0; i < 150; i++) {
    ASSERT_EQ(ki.run(false, gy, s), CCV_NNC_EXEC_SUCCESS) << last_error();
    ASSERT_EQ(kl.run(false, gloss, gsm, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  }
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);
  expect_close(gy, ki.y_ref, 0, 0, "INDEX_SELECT");
  expect_close(gloss, kl.loss_ref, 1e-5f, 1e-6f, "loss");
  ccv_nnc_stream_context_free(s);
}

TEST(GpuStreamError, TwoBadCallsReportTheFirstAndCountTheSecondAcrossAFullLog) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(839);
  IndexCase ki(rng);
  LossCase kl(rng);
  Owned gy = gpu_filled(param({11, 13}), 0), gloss = gpu_filled(param({9}), 0), gsm = gpu_filled(param({9, 7}), 0);
  ccv_nnc_stream_context_t* s = gpu_stream();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kl.run(true, gloss, gsm, s), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 300; i++) ASSERT_EQ(ki.run(false, gy, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  EXPECT_EQ(ki.run(true, gy, s), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  const std::string reported = last_error();
  EXPECT_TRUE(has(reported, "CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD on a GPU stream: label out of range: the label of "
                            "row 6"))
      << reported;
  EXPECT_TRUE(has(reported, "(and 1 further error on this stream)")) << reported;
  EXPECT_FALSE(has(reported, "INDEX_SELECT")) << reported;
  // ccv_nnc_stream_context_error takes it: the next call runs.
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(last_error(), reported);
  EXPECT_EQ(ccv_nnc_stream_context_error(s), CCV_NNC_EXEC_SUCCESS);
  Owned gy2 = gpu_filled(param({11, 13}), 1234);
  EXPECT_EQ(ki.run(false, gy2, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  expect_close(gy2, ki.y_ref, 0, 0, "INDEX_SELECT after the taken error");
  ccv_nnc_stream_context_free(s);
}

TEST(GpuStreamError, AGpuKernelOnACpuStreamReportsItsBadInputAtTheWait) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(853);
  IndexCase k(rng);
  Owned gy = gpu_filled(param({11, 13}), 0);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(k.run(true, gy, s), CCV_NNC_EXEC_SUCCESS);  // queued on the CPU stream's worker
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  EXPECT_TRUE(has(last_error(), "CCV_NNC_INDEX_SELECT_FORWARD: indices[4] is outside the rows")) << last_error();
  EXPECT_EQ(k.run(false, gy, s), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(k.run(false, gy, s), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(s);
  expect_close(gy, k.y_ref, 0, 0, "INDEX_SELECT on a CPU stream");
  ccv_nnc_stream_context_free(s);
}

}  // namespace

// A graph of three independent INDEX_SELECTs, each with a bad row, on a
// static schedule over 3 GPU streams (three chains: one a stream), run behind
// a caller's GPU stream. The caller waits only for its own stream, so what
// the kernels on the graph's other streams found must reach the caller's log:
// the wait reports the first and counts the other two, and the next call on
// the caller returns it once.
TEST(GpuStreamError, AGraphBehindACallerReportsItsOtherStreamsFindingsAtTheCallersWait) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(829);
  IndexCase k(rng);
  Owned gy[3] = {gpu_filled(param({11, 13}), 7), gpu_filled(param({11, 13}), 7), gpu_filled(param({11, 13}), 7)};
  ccv_nnc_graph_t* graph = ccv_nnc_graph_new();
  for (int i = 0; i < 3; i++) {
    ccv_nnc_tensor_t* in[2] = {k.gx, k.gind_bad};
    ccv_nnc_tensor_t* out[1] = {gy[i]};
    const ccv_nnc_graph_exec_t e =
        ccv_nnc_graph_exec_new(graph, cmd_of(CCV_NNC_INDEX_SELECT_FORWARD, CCV_NNC_BACKEND_GPU_REF), ccv_nnc_no_hint, in, 2, out, 1);
    ASSERT_GE(e.d, 0) << last_error();
  }
  ccv_nnc_graph_static_schedule_t* sched = ccv_nnc_graph_static_schedule_new(graph, CCV_STREAM_CONTEXT_GPU, 3, nullptr, 0, nullptr, 0);
  ASSERT_NE(sched, nullptr) << last_error();
  ccv_nnc_stream_context_t* caller = gpu_stream();
  ASSERT_NE(caller, nullptr);
  ccv_nnc_error_clear();
  ASSERT_EQ(ccv_nnc_graph_run_with_schedule(graph, 0, sched, nullptr, caller), CCV_NNC_EXEC_SUCCESS) << last_error();
  ccv_nnc_stream_context_wait(caller);
  const std::string reported = last_error();
  EXPECT_TRUE(has(reported, "CCV_NNC_INDEX_SELECT_FORWARD on a GPU stream: row index out of range: indices[4] is outside the rows"))
      << reported;
  EXPECT_TRUE(has(reported, "(and 2 further errors on this stream)")) << reported;
  ccv_nnc_error_clear();
  EXPECT_EQ(ccv_nnc_graph_run_with_schedule(graph, 0, sched, nullptr, caller), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(last_error(), "row index out of range")) << last_error();
  ccv_nnc_stream_context_wait(caller);
  ccv_nnc_graph_static_schedule_free(sched);
  ccv_nnc_graph_free(graph);
  ccv_nnc_stream_context_free(caller);
}
