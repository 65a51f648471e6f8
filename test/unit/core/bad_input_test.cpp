// Every Level 0-1 entry point given NULLs, negative sizes or nonsense: an
// error code, NULL or an untouched output, and a message; never a crash.
#include <gtest/gtest.h>

#include <string>

#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
  }
};

TEST_F(BadInput, TensorFunctions) {
  EXPECT_EQ(ccv_nnc_tensor_format_new(nullptr), nullptr);
  EXPECT_NE(last_error(), "");
  ccv_nnc_error_clear();
  ccv_nnc_tensor_zero(nullptr);
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  EXPECT_EQ(ccv_nnc_tensor_resize(nullptr, cpu_param(CCV_32F, {2})), nullptr);
  EXPECT_EQ(ccv_nnc_tensor_pin_memory(nullptr), -1);
  EXPECT_EQ(ccv_nnc_tensor_new_from_file(cpu_param(CCV_32F, {2}), nullptr, 0, 0), nullptr);
  EXPECT_EQ(ccv_nnc_tensor_new_from_file(cpu_param(CCV_32F, {2}), "/dev/null", -5, 0), nullptr);
  EXPECT_NE(last_error().find("negative"), std::string::npos);
  // Freeing a tensor as a view is refused.
  Tensor t(cpu_param(CCV_32F, {2}));
  ccv_nnc_tensor_view_free(reinterpret_cast<ccv_nnc_tensor_view_t*>(t.t));
  EXPECT_NE(last_error().find("not a view"), std::string::npos);
  // A tensor with no data cannot be printed.
  ccv_nnc_tensor_t header = ccv_nnc_tensor(nullptr, cpu_param(CCV_32F, {2}), 0);
  EXPECT_EQ(ccv_nnc_tensor_format_new(&header), nullptr);
  EXPECT_NE(last_error().find("no data"), std::string::npos);
}

TEST_F(BadInput, CommandFunctions) {
  ccv_nnc_tensor_param_t out = cpu_param(CCV_32F, {7});
  const ccv_nnc_tensor_param_t before = out;
  const ccv_nnc_cmd_t ewsum = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, no_params(), 0);
  ccv_nnc_hint_tensor_auto(ewsum, nullptr, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_NE(last_error().find("inputs is NULL"), std::string::npos);
  EXPECT_EQ(std::memcmp(&out, &before, sizeof(out)), 0);  // untouched
  ccv_nnc_hint_tensor_auto(ewsum, &before, -1, ccv_nnc_no_hint, &out, 1);
  EXPECT_NE(last_error().find("negative"), std::string::npos);
  ccv_nnc_cmd_t unknown = ewsum;
  unknown.cmd = 0x2468ace0;
  ccv_nnc_hint_tensor_auto(unknown, &before, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_NE(last_error().find("unknown command"), std::string::npos);
  EXPECT_EQ(std::memcmp(&out, &before, sizeof(out)), 0);
  // Autotune with bad arguments hands the command back unchanged.
  ccv_nnc_error_clear();
  const ccv_nnc_cmd_t tuned = ccv_nnc_cmd_autotune(ewsum, 0, ccv_nnc_no_hint, 0, nullptr, 2, nullptr, 1, nullptr);
  EXPECT_EQ(std::memcmp(&tuned, &ewsum, sizeof(tuned)), 0);
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  EXPECT_EQ(ccv_nnc_cmd_bitmask(ewsum, -1, 1, nullptr, 0, nullptr, 0), 0);
  EXPECT_EQ(ccv_nnc_cmd_aux(unknown), nullptr);
  EXPECT_EQ(ccv_nnc_cmd_ok(unknown.cmd, CCV_NNC_BACKEND_CPU_REF), 0);
  EXPECT_EQ(ccv_nnc_cmd_ok(CCV_NNC_EWSUM_FORWARD, 0x1234), 0);
  EXPECT_EQ(ccv_nnc_cmd_find_backend(unknown, CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F),
            static_cast<uint32_t>(CCV_NNC_NO_BACKEND));
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(ewsum, -1, 2, 0, 1), 0);
  EXPECT_EQ(ccv_nnc_cmd_enforce_inplace(ewsum, 5, 2, 0, 1), 0);
  // An explicit backend that does not exist, or does not implement the command.
  Tensor a(cpu_param(CCV_32F, {3})), b(cpu_param(CCV_32F, {3}));
  ccv_nnc_tensor_t* in[] = {a.t, a.t};
  ccv_nnc_tensor_t* o[] = {b.t};
  ccv_nnc_cmd_t forced = ewsum;
  forced.backend = 0x77777777;
  EXPECT_EQ(ccv_nnc_cmd_exec(forced, ccv_nnc_no_hint, 0, in, 2, o, 1, nullptr), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(last_error().find("unknown backend"), std::string::npos);
  forced.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  EXPECT_EQ(ccv_nnc_cmd_exec(forced, ccv_nnc_no_hint, 0, in, 2, o, 1, nullptr), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(last_error().find("GPU_CUDNN"), std::string::npos);
  // Tensors of a type the command does not take: refused, and the type is named.
  Tensor i8(cpu_param(CCV_8U, {3}));
  ccv_nnc_tensor_t* bytes[] = {i8.t, i8.t};
  ccv_nnc_tensor_t* bo[] = {i8.t};
  const int rc = ccv_nnc_cmd_exec(ewsum, ccv_nnc_no_hint, 0, bytes, 2, bo, 1, nullptr);
  EXPECT_TRUE(rc == CCV_NNC_EXEC_NO_KERNEL || rc == CCV_NNC_EXEC_INVALID) << rc;
  EXPECT_NE(last_error().find("8U"), std::string::npos) << last_error();
}

TEST_F(BadInput, CcvCoreFunctions) {
  EXPECT_EQ(ccv_dense_matrix_new(-3, 4, CCV_32F | CCV_C1, nullptr, 0), nullptr);
  EXPECT_NE(last_error().find("positive"), std::string::npos);
  EXPECT_EQ(ccv_dense_matrix_new(3, 4, CCV_QX | CCV_C1, nullptr, 0), nullptr);
  ccv_dense_matrix_t m = ccv_dense_matrix(3, 4, CCV_32F | CCV_C1, nullptr, 0);
  EXPECT_EQ(m.data.ptr, nullptr);
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  ccv_array_push(nullptr, &m);
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
  EXPECT_EQ(ccv_array_group(nullptr, nullptr, nullptr, nullptr), -1);
  ccv_array_resize(nullptr, 3);
  ccv_array_t* a = ccv_array_new(4, 1, 0);
  ccv_array_resize(a, -1);
  EXPECT_NE(last_error().find("negative"), std::string::npos);
  EXPECT_EQ(a->rnum, 0);
  ccv_array_free(a);
  ccv_make_matrix_immutable(nullptr);
  ccv_make_matrix_mutable(nullptr);
  ccv_matrix_free(nullptr);
}

}  // namespace
