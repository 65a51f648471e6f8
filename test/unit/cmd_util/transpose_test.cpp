// TRANSPOSE forward and backward against an index swap written here, CPU_OPT
// against CPU_REF on odd shapes and views for every element size, and bad input.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

using namespace cmdtest;

extern "C" {
ccv_nnc_cmd_t nnc_test_transpose_forward_0_2(void);
ccv_nnc_cmd_t nnc_test_transpose_backward_1_0(void);
int nnc_test_transpose_example(float out[6]);
}

namespace {

class Transpose : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t transpose_cmd(uint32_t id, int a, int b, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.transpose.axis[0] = a;
  p.transpose.axis[1] = b;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

std::vector<int> swapped(std::vector<int> d, int a, int b) {
  std::swap(d[a], d[b]);
  return d;
}

// Linear index into x of output element `lin` of y = transpose(x, a, b).
size_t source_of(size_t lin, const std::vector<int>& ydims, int a, int b) {
  std::vector<int> idx(ydims.size());
  for (int i = static_cast<int>(ydims.size()) - 1; i >= 0; i--)
    idx[i] = static_cast<int>(lin % ydims[i]), lin /= ydims[i];
  std::swap(idx[a], idx[b]);
  const std::vector<int> xdims = swapped(ydims, a, b);
  size_t s = 0;
  for (size_t i = 0; i < xdims.size(); i++) s = s * xdims[i] + idx[i];
  return s;
}

TEST_F(Transpose, ForwardAndBackwardSwapTheIndices) {
  std::mt19937 rng(1);
  struct Case {
    std::vector<int> dims;
    int a, b;
  };
  const Case cases[] = {{{3, 5}, 0, 1},       {{3, 5}, 1, 0},        {{2, 3, 4}, 0, 2}, {{2, 3, 4}, 1, 2},
                        {{2, 3, 4, 5}, 1, 3}, {{2, 3, 4, 5}, 0, 1},  {{2, 3, 4}, 1, 1}, {{1, 7, 1, 9}, 1, 3},
                        {{37, 45}, 0, 1},     {{3, 33, 2, 35}, 1, 3}};
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_8U, CCV_32S})
      for (const Case& c : cases)
        for (bool view : {false, true}) {
          const std::vector<int> yd = swapped(c.dims, c.a, c.b);
          T x = view ? T::view(dt, c.dims) : T(dt, c.dims);
          T y = view ? T::view(dt, yd) : T(dt, yd);
          fill_random(x, rng);
          ASSERT_EQ(run(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, c.a, c.b, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          for (size_t i = 0; i < y.count(); i++) ASSERT_EQ(y.bits(i), x.bits(source_of(i, yd, c.a, c.b))) << i;
          EXPECT_TRUE(y.guard_intact());
          // Backward takes g of y's shape back to x's.
          T dx = view ? T::view(dt, c.dims) : T(dt, c.dims);
          ASSERT_EQ(run(transpose_cmd(CCV_NNC_TRANSPOSE_BACKWARD, c.a, c.b, backend), {y, x, y}, {dx}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          for (size_t i = 0; i < x.count(); i++) ASSERT_EQ(dx.bits(i), x.bits(i));
          EXPECT_TRUE(dx.guard_intact());
        }
}

TEST_F(Transpose, OptAgreesWithRefOnLargeShapes) {
  std::mt19937 rng(2);
  for (const std::vector<int>& dims :
       {std::vector<int>{64, 3136}, std::vector<int>{13, 129, 67}, std::vector<int>{4, 19, 23, 37}})
    for (int a = 0; a < static_cast<int>(dims.size()); a++)
      for (int b = a + 1; b < static_cast<int>(dims.size()); b++) {
        T x(CCV_32F, dims);
        fill_uniform(x, rng);
        expect_backends_agree(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, a, b), ccv_nnc_no_hint, {x},
                              {swapped(dims, a, b)}, CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 0);
      }
}

TEST_F(Transpose, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  T x(CCV_64F, {2, 3, 4});
  fill_uniform(x, rng);
  expect_gradients_match(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, 0, 2),
                         transpose_cmd(CCV_NNC_TRANSPOSE_BACKWARD, 0, 2), ccv_nnc_no_hint, {&x}, {{4, 3, 2}}, {true},
                         rng);
}

TEST_F(Transpose, ShapeInferenceAndBadInput) {
  ccv_nnc_tensor_param_t in = param(CCV_32F, {2, 3, 4}), out;
  ccv_nnc_hint_tensor_auto(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, 0, 2), &in, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(out.dim[0], 4);
  EXPECT_EQ(out.dim[2], 2);
  T x(CCV_32F, {2, 3, 4}), y(CCV_32F, {4, 3, 2}), bad(CCV_32F, {3, 2, 4}), y64(CCV_64F, {4, 3, 2});
  const ccv_nnc_cmd_t t = transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, 0, 2);
  EXPECT_EQ(run(t, {x}, {bad}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("4x3x2")) << ccv_nnc_error_message();
  EXPECT_EQ(run(t, {x}, {y64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(t, {x, x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(t, {x}, {y, y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(t, {nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, 0, 3), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(transpose_cmd(CCV_NNC_TRANSPOSE_FORWARD, -1, 0), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(transpose_cmd(CCV_NNC_TRANSPOSE_BACKWARD, 0, 2), {y}, {bad}), CCV_NNC_EXEC_INVALID);
}

// libnnc's TRANSPOSE takes several pairs in one call (its bitmask is
// DATA_TRANSFER's): each output is its own input transposed, on both backends,
// forward and backward.
TEST_F(Transpose, SeveralPairsInOneCall) {
  std::mt19937 rng(6);
  for (uint32_t backend : {static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF), static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT)})
    for (uint32_t id : {CCV_NNC_TRANSPOSE_FORWARD, CCV_NNC_TRANSPOSE_BACKWARD}) {
      T x1(CCV_32F, {2, 3, 4}), x2(CCV_64F, {5, 1, 7}), y1(CCV_32F, {4, 3, 2}), y2(CCV_64F, {7, 1, 5});
      fill_random(x1, rng), fill_random(x2, rng);
      ASSERT_EQ(run(transpose_cmd(id, 0, 2, backend), {x1, x2}, {y1, y2}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (size_t i = 0; i < y1.count(); i++) ASSERT_EQ(y1.get(i), x1.get(source_of(i, {4, 3, 2}, 0, 2))) << i;
      for (size_t i = 0; i < y2.count(); i++) ASSERT_EQ(y2.get(i), x2.get(source_of(i, {7, 1, 5}, 0, 2))) << i;
      // One pair's bad shape fails the call and names the pair's tensors.
      T bad(CCV_64F, {5, 1, 7});
      EXPECT_EQ(run(transpose_cmd(id, 0, 2, backend), {x1, x2}, {y1, bad}), CCV_NNC_EXEC_INVALID);
      EXPECT_TRUE(message_has("7x1x5")) << ccv_nnc_error_message();
    }
}

TEST_F(Transpose, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_transpose_forward_0_2();
  EXPECT_EQ(f.cmd, CCV_NNC_TRANSPOSE_FORWARD);
  EXPECT_EQ(f.info.transpose.axis[0], 0);
  EXPECT_EQ(f.info.transpose.axis[1], 2);
  EXPECT_EQ(nnc_test_transpose_backward_1_0().cmd, CCV_NNC_TRANSPOSE_BACKWARD);
  float out[6];
  ASSERT_EQ(nnc_test_transpose_example(out), CCV_NNC_EXEC_SUCCESS);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; i++) EXPECT_EQ(out[i], want[i]);
}

}  // namespace
