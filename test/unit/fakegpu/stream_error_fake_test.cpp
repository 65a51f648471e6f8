// A kernel failing on a pretend GPU stream (fakegpu.hpp: queued work runs when
// the host waits) is reported as every failure of a stream is
// (core/stream_errors.hpp): by the wait's message, then returned once by the
// next call queued on the stream, which does not run; the call after runs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

ccv_nnc_tensor_param_t param(bool on_gpu, std::vector<int> dims, int datatype = CCV_32F) {
  ccv_nnc_tensor_param_t p{};
  p.type = on_gpu ? static_cast<int>(CCV_TENSOR_GPU_MEMORY) : static_cast<int>(CCV_TENSOR_CPU_MEMORY);
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

int run(uint32_t id, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
        ccv_nnc_stream_context_t* s = nullptr) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd_exec(ccv_nnc_cmd(id, nullptr, p, 0), ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()),
                          out.data(), static_cast<int>(out.size()), s);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(FakeGpuStreamError, AKernelFailingOnAGpuStreamIsReportedByTheWaitThenHeldForTheNextCall) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(-1, 1);
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, param(false, {13, 5}), 0);
  ccv_nnc_tensor_t* good = ccv_nnc_tensor_new(nullptr, param(false, {6}, CCV_32S), 0);
  ccv_nnc_tensor_t* bad = ccv_nnc_tensor_new(nullptr, param(false, {6}, CCV_32S), 0);
  ccv_nnc_tensor_t* y_ref = ccv_nnc_tensor_new(nullptr, param(false, {6, 5}), 0);
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, param(false, {6, 5}), 0);
  for (int i = 0; i < 65; i++) x->data.f32[i] = u(rng);
  for (int i = 0; i < 6; i++) good->data.i32[i] = bad->data.i32[i] = (i * 7 + 3) % 13;
  bad->data.i32[3] = 13;  // rows are 0..12
  ASSERT_EQ(run(CCV_NNC_INDEX_SELECT_FORWARD, {x, good}, {y_ref}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ccv_nnc_tensor_t* gx = ccv_nnc_tensor_new(nullptr, param(true, {13, 5}), 0);
  ccv_nnc_tensor_t* ggood = ccv_nnc_tensor_new(nullptr, param(true, {6}, CCV_32S), 0);
  ccv_nnc_tensor_t* gbad = ccv_nnc_tensor_new(nullptr, param(true, {6}, CCV_32S), 0);
  ccv_nnc_tensor_t* gy = ccv_nnc_tensor_new(nullptr, param(true, {6, 5}), 0);
  ASSERT_EQ(run(CCV_NNC_DATA_TRANSFER_FORWARD, {x, good, bad}, {gx, ggood, gbad}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(run(CCV_NNC_INDEX_SELECT_FORWARD, {gx, gbad}, {gy}, s), CCV_NNC_EXEC_SUCCESS);  // queued
  ccv_nnc_error_clear();
  ccv_nnc_stream_context_wait(s);
  const std::string reported = ccv_nnc_error_message();
  EXPECT_TRUE(has(reported, "indices[3] is 13, outside the 13 rows")) << reported;
  ccv_nnc_error_clear();
  EXPECT_EQ(run(CCV_NNC_INDEX_SELECT_FORWARD, {gx, ggood}, {gy}, s), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(has(ccv_nnc_error_message(), reported)) << ccv_nnc_error_message();
  ccv_nnc_error_clear();
  EXPECT_EQ(run(CCV_NNC_INDEX_SELECT_FORWARD, {gx, ggood}, {gy}, s), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  EXPECT_STREQ(ccv_nnc_error_message(), "");
  ASSERT_EQ(run(CCV_NNC_DATA_TRANSFER_FORWARD, {gy}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int i = 0; i < 30; i++) EXPECT_EQ(y->data.f32[i], y_ref->data.f32[i]) << i;
  ccv_nnc_stream_context_free(s);
  for (ccv_nnc_tensor_t* t : {x, good, bad, y_ref, y, gx, ggood, gbad, gy}) ccv_nnc_tensor_free(t);
}

}  // namespace
