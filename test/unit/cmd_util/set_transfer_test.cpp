// SET and DATA_TRANSFER on both CPU backends, and the C easy macros.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "unit/cmd_util/util_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;
const int kAllTypes[] = {CCV_8U, CCV_32S, CCV_64S, CCV_32F, CCV_64F, CCV_16F, CCV_16BF};
const std::vector<std::vector<int>> kShapes = {{1}, {7}, {1023}, {1025}, {3, 5, 7, 11}};

class UtilTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

TEST_F(UtilTest, SetFillsEveryTypeOnBothBackends) {
  // value -> what each type must hold.
  struct Case {
    float value;
    double f32, f16, bf16, i32, u8;
  };
  const Case cases[] = {
      {2.5f, 2.5, 2.5, 2.5, 2, 2},             // integers: ties to even
      {-3.7f, -3.7f, -3.69921875, -3.703125, -4, 0},  // 8U saturates at 0
      {300.25f, 300.25, 300.25, 300, 300, 255},
      {1e10f, 1e10, INFINITY, 9999220736.0, 2147483647, 255},
  };
  for (uint32_t id : {CCV_NNC_SET_FORWARD, CCV_NNC_SET_BACKWARD})
    for (uint32_t backend : {kRef, kOpt})
      for (const Case& c : cases)
        for (const auto& shape : kShapes) {
          for (int dt : kAllTypes) {
            T y = T::view(dt, shape);
            ASSERT_EQ(run(command(id, backend, c.value), {}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
            double want = 0;
            switch (dt) {
              case CCV_32F: want = c.f32; break;
              case CCV_64F: want = c.value; break;
              case CCV_16F: want = c.f16; break;
              case CCV_16BF: want = c.bf16; break;
              case CCV_32S: want = c.i32; break;
              case CCV_64S: want = std::nearbyint(static_cast<double>(c.value)); break;
              case CCV_8U: want = c.u8; break;
            }
            for (size_t i = 0; i < y.count(); i++) ASSERT_EQ(y.get(i), want) << "dt=" << dt << " v=" << c.value;
            EXPECT_TRUE(y.guard_intact());
          }
        }
}

TEST_F(UtilTest, SetNaNAndLargeTensors) {
  T h(CCV_16F, {9}), i(CCV_32S, {3});
  ASSERT_EQ(run(command(CCV_NNC_SET_FORWARD, kOpt, NAN), {}, {h, i}), CCV_NNC_EXEC_SUCCESS);
  for (size_t k = 0; k < 9; k++) EXPECT_TRUE(std::isnan(h.get(k)));
  for (size_t k = 0; k < 3; k++) EXPECT_EQ(i.get(k), 0);  // NaN has no integer value: 0
  // Large enough for the pool; also a large view.
  T big(CCV_32F, {3, 1000, 701}), v = T::view(CCV_32F, {300, 1001});
  ASSERT_EQ(run(command(CCV_NNC_SET_FORWARD, kOpt, -0.5f), {}, {big, v}), CCV_NNC_EXEC_SUCCESS);
  for (size_t k = 0; k < big.count(); k++) ASSERT_EQ(big.get(k), -0.5);
  for (size_t k = 0; k < v.count(); k++) ASSERT_EQ(v.get(k), -0.5);
  EXPECT_TRUE(v.guard_intact());
  // Zero fill of a packed tensor.
  ASSERT_EQ(run(command(CCV_NNC_SET_FORWARD, kOpt, 0), {}, {big}), CCV_NNC_EXEC_SUCCESS);
  for (size_t k = 0; k < big.count(); k++) ASSERT_EQ(big.bits(k), 0u);
}

TEST_F(UtilTest, SetDescription) {
  uint64_t in = 0, out = 1;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(command(CCV_NNC_SET_FORWARD), 0, 1, &in, 1, &out, 1), 1);
  out = 0;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(command(CCV_NNC_SET_FORWARD), 0, 1, &in, 1, &out, 1), 0);
  // libnnc: every output as a run from the first; none at all passes too.
  out = 0b011;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(command(CCV_NNC_SET_BACKWARD), 0, 2, &in, 1, &out, 1), 1);
  out = 0b101;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(command(CCV_NNC_SET_FORWARD), 0, 3, &in, 1, &out, 1), 0);
  out = 0;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(command(CCV_NNC_SET_FORWARD), 0, 0, &in, 1, &out, 1), 1);
  EXPECT_EQ(run(command(CCV_NNC_SET_FORWARD, 0, 1), {}, {}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("at least one output")) << ccv_nnc_error_message();
}

TEST_F(UtilTest, TransferCopiesPairsOfEveryTypeThroughViews) {
  std::mt19937 rng(21);
  for (uint32_t id : {CCV_NNC_DATA_TRANSFER_FORWARD, CCV_NNC_DATA_TRANSFER_BACKWARD})
    for (uint32_t backend : {kRef, kOpt})
      for (const auto& shape : kShapes)
        for (int dt : kAllTypes) {
          T a(dt, shape), b = T::view(dt, shape, CCV_TENSOR_FORMAT_NCHW);
          fill_random(a, rng);
          fill_random(b, rng);
          T ya = T::view(dt, shape, CCV_TENSOR_FORMAT_NCHW), yb(dt, shape), yc = T::view(dt, shape);
          // Two pairs plus a skipped (NULL) third.
          ASSERT_EQ(run(command(id, backend), {a, b, b}, {ya, yb, nullptr}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          ASSERT_EQ(run(command(id, backend), {b}, {yc}), CCV_NNC_EXEC_SUCCESS);
          for (size_t i = 0; i < a.count(); i++) {
            ASSERT_EQ(ya.bits(i), a.bits(i));
            ASSERT_EQ(yb.bits(i), b.bits(i));
            ASSERT_EQ(yc.bits(i), b.bits(i));
          }
          EXPECT_TRUE(ya.guard_intact());
          EXPECT_TRUE(yc.guard_intact());
        }
}

TEST_F(UtilTest, TransferLargeReshapeAndInPlace) {
  std::mt19937 rng(4);
  T a(CCV_32F, {1000, 1025}), b(CCV_32F, {1025, 1000}), v = T::view(CCV_32F, {999, 1024}), w = T::view(CCV_32F, {999, 1024});
  fill_uniform(a, rng);
  fill_uniform(v, rng);
  // Same element count, both packed: a reshaping copy.
  ASSERT_EQ(run(command(CCV_NNC_DATA_TRANSFER_FORWARD, kOpt), {a}, {b}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < a.count(); i++) ASSERT_EQ(b.bits(i), a.bits(i));
  ASSERT_EQ(run(command(CCV_NNC_DATA_TRANSFER_FORWARD, kOpt), {v}, {w}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < v.count(); i++) ASSERT_EQ(w.bits(i), v.bits(i));
  EXPECT_TRUE(w.guard_intact());
  // Onto itself: nothing changes.
  for (uint32_t backend : {kRef, kOpt}) {
    ASSERT_EQ(run(command(CCV_NNC_DATA_TRANSFER_FORWARD, backend), {a}, {a}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run(command(CCV_NNC_DATA_TRANSFER_FORWARD, backend), {v}, {v}), CCV_NNC_EXEC_SUCCESS);
  }
  for (size_t i = 0; i < a.count(); i++) ASSERT_EQ(b.bits(i), a.bits(i));
  for (size_t i = 0; i < v.count(); i++) ASSERT_EQ(w.bits(i), v.bits(i));
  // The kernels take a copy onto itself, but libnnc declares no in-place pair.
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_DATA_TRANSFER_FORWARD), 1, 2, 1, 2), 0);
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_DATA_TRANSFER_FORWARD), 0, 2, 1, 2), 0);
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_SET_FORWARD), 0, 1, 0, 1), 0);
}

TEST_F(UtilTest, TransferRejectsBadInput) {
  T a(CCV_32F, {2, 3}), b(CCV_32F, {2, 4}), c(CCV_64F, {2, 3}), d(CCV_32F, {3, 2});
  T v = T::view(CCV_32F, {3, 2});
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_DATA_TRANSFER_FORWARD);
  EXPECT_EQ(run(cmd, {a}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2x3") && message_has("2x4")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {a}, {c}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32F") && message_has("64F")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {a}, {v}), CCV_NNC_EXEC_INVALID);  // reshape into a strided view
  EXPECT_TRUE(message_has("packed")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {a}, {d, d}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2 outputs but only 1 inputs")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {nullptr}, {a}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("input 0 is NULL")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {a}, {}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("at least one output")) << ccv_nnc_error_message();
  // Shapes.
  ccv_nnc_tensor_param_t ins[2] = {param(CCV_16F, {4, 5}), param(CCV_8U, {7})};
  ccv_nnc_tensor_param_t outs[2];
  std::memset(outs, 0, sizeof(outs));
  ccv_nnc_hint_tensor_auto(cmd, ins, 2, ccv_nnc_no_hint, outs, 2);
  EXPECT_EQ(outs[0].datatype, CCV_16F);
  EXPECT_EQ(outs[0].dim[1], 5);
  EXPECT_EQ(outs[1].datatype, CCV_8U);
  EXPECT_EQ(outs[1].dim[0], 7);
  uint64_t in = 0x1, out = 0x3;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(cmd, 2, 2, &in, 1, &out, 1), 0);  // output 1 without input 1
  in = 0x3;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(cmd, 2, 2, &in, 1, &out, 1), 1);
  // libnnc's pairs: forward, equal runs covering both lists; backward, the
  // outputs a run covering their list, no longer than the inputs'.
  for (uint32_t id : {CCV_NNC_DATA_TRANSFER_FORWARD, CCV_NNC_FORMAT_TRANSFORM_FORWARD,
                      CCV_NNC_DATATYPE_CONVERSION_FORWARD, CCV_NNC_TRANSPOSE_FORWARD}) {
    in = 0x1, out = 0x1;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(command(id), 2, 2, &in, 1, &out, 1), 0) << id;  // a pair left out
    in = 0x2, out = 0x2;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(command(id), 2, 2, &in, 1, &out, 1), 0) << id;
    in = 0x3, out = 0x3;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(command(id), 2, 2, &in, 1, &out, 1), 1) << id;
    in = 0x7, out = 0x1;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(command(id | 1), 3, 1, &in, 1, &out, 1), 1) << id;
    in = 0x1, out = 0x3;
    EXPECT_EQ(ccv_nnc_cmd_bitmask(command(id | 1), 3, 2, &in, 1, &out, 1), 0) << id;
    EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(id), 0, 1, 0, 1), 0) << id;
  }
  // TRANSPOSE's shapes: output i is input i with the axes swapped.
  ccv_nnc_cmd_t tr = command(CCV_NNC_TRANSPOSE_FORWARD);
  tr.info.transpose.axis[0] = 0, tr.info.transpose.axis[1] = 2;
  ccv_nnc_tensor_param_t tin[2] = {param(CCV_32F, {2, 3, 4}), param(CCV_16F, {5, 6, 7})}, tout[2];
  std::memset(tout, 0, sizeof(tout));
  ccv_nnc_hint_tensor_auto(tr, tin, 2, ccv_nnc_no_hint, tout, 2);
  EXPECT_TRUE(tout[0].dim[0] == 4 && tout[0].dim[1] == 3 && tout[0].dim[2] == 2);
  EXPECT_TRUE(tout[1].datatype == CCV_16F && tout[1].dim[0] == 7 && tout[1].dim[1] == 6 && tout[1].dim[2] == 5);
}

TEST_F(UtilTest, EasyMacrosFromC) {
  const ccv_nnc_cmd_t set = util_easy_set(0.25f);
  EXPECT_EQ(set.cmd, static_cast<uint32_t>(CCV_NNC_SET_FORWARD));
  EXPECT_EQ(set.info.blas.a[0], 0.25f);
  EXPECT_EQ(util_easy_set_backward(3.f).cmd, static_cast<uint32_t>(CCV_NNC_SET_BACKWARD));
  EXPECT_EQ(util_easy_set_backward(3.f).info.blas.a[0], 3.f);
  EXPECT_EQ(util_easy_transfer().cmd, static_cast<uint32_t>(CCV_NNC_DATA_TRANSFER_FORWARD));
  EXPECT_EQ(util_easy_format().cmd, static_cast<uint32_t>(CCV_NNC_FORMAT_TRANSFORM_FORWARD));
  EXPECT_EQ(util_easy_convert().cmd, static_cast<uint32_t>(CCV_NNC_DATATYPE_CONVERSION_FORWARD));
  unsigned short h = 0;
  ASSERT_EQ(util_easy_pipeline(-2.75f, &h), 0) << ccv_nnc_error_message();
  EXPECT_EQ(half_value(h), -2.75);
}

}  // namespace
