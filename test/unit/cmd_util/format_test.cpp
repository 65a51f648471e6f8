// FORMAT_TRANSFORM between NHWC, NCHW and CHWN on both CPU backends, checked
// against index arithmetic written out here.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;
constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW, CHWN = CCV_TENSOR_FORMAT_CHWN;

class FormatTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// A 4-d image of N, C, H, W in a format.
std::vector<int> dims4(int format, int n, int c, int h, int w) {
  switch (format) {
    case NHWC: return {n, h, w, c};
    case NCHW: return {n, c, h, w};
    default: return {c, h, w, n};
  }
}
std::array<int, 4> index4(int format, int n, int c, int h, int w) {
  switch (format) {
    case NHWC: return {n, h, w, c};
    case NCHW: return {n, c, h, w};
    default: return {c, h, w, n};
  }
}

// A value that identifies (n, c, h, w), exact in every type used (mod 256 for 8U, mod 2048 for 16F).
double code(int dt, int n, int c, int h, int w) {
  const long v = ((n * 131L + c) * 67 + h) * 71 + w;
  if (dt == CCV_8U) return v % 251;
  if (dt == CCV_16F) return v % 2039;
  return static_cast<double>(v % 16777213);
}

void check_4d(int dt, int from, int to, int n, int c, int h, int w, bool in_view, bool out_view, uint32_t backend) {
  SCOPED_TRACE(testing::Message() << "dt=" << dt << " " << from << "->" << to << " " << n << "x" << c << "x" << h << "x" << w
                                  << " views " << in_view << out_view << " backend " << backend);
  T x = in_view ? T::view(dt, dims4(from, n, c, h, w), from) : T(dt, dims4(from, n, c, h, w), from);
  T y = out_view ? T::view(dt, dims4(to, n, c, h, w), to, 2) : T(dt, dims4(to, n, c, h, w), to);
  for (int a = 0; a < n; a++)
    for (int b = 0; b < c; b++)
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          const auto idx = index4(from, a, b, i, j);
          T::encode(x.at({idx[0], idx[1], idx[2], idx[3]}), dt, code(dt, a, b, i, j));
        }
  ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (int a = 0; a < n; a++)
    for (int b = 0; b < c; b++)
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          const auto idx = index4(to, a, b, i, j);
          ASSERT_EQ(T::decode(y.at({idx[0], idx[1], idx[2], idx[3]}), dt), code(dt, a, b, i, j))
              << a << "," << b << "," << i << "," << j;
        }
  EXPECT_TRUE(y.guard_intact());
}

TEST_F(FormatTest, FourDimensionalBetweenAllFormats) {
  const std::array<int, 4> shapes[] = {{3, 5, 7, 11}, {1, 1, 1, 1}, {2, 3, 1, 1025}, {1, 7, 1, 1}};
  for (uint32_t backend : {kRef, kOpt})
    for (int from : {NHWC, NCHW, CHWN})
      for (int to : {NHWC, NCHW, CHWN})
        for (const auto& s : shapes)
          for (int dt : {CCV_32F, CCV_16F})
            for (int views = 0; views < 4; views++)
              check_4d(dt, from, to, s[0], s[1], s[2], s[3], views & 1, views & 2, backend);
}

TEST_F(FormatTest, ElementSizesAndLargeTiledTransposes) {
  for (int dt : {CCV_8U, CCV_64F, CCV_32S})
    for (uint32_t backend : {kRef, kOpt}) {
      check_4d(dt, NHWC, NCHW, 2, 33, 5, 37, false, false, backend);
      check_4d(dt, NCHW, CHWN, 2, 33, 5, 37, true, false, backend);
    }
  // Big enough for the pool (and tiles with ragged edges).
  check_4d(CCV_32F, NHWC, NCHW, 4, 67, 33, 35, false, false, kOpt);
  check_4d(CCV_32F, NCHW, NHWC, 4, 67, 33, 35, true, true, kOpt);
  check_4d(CCV_32F, NHWC, CHWN, 3, 64, 40, 40, false, false, kOpt);
}

TEST_F(FormatTest, ThreeTwoAndFiveDimensional) {
  std::mt19937 rng(8);
  for (uint32_t backend : {kRef, kOpt}) {
    // 3-d: H, W, C <-> C, H, W.
    T x(CCV_32F, {4, 6, 5}, NHWC), y(CCV_32F, {5, 4, 6}, NCHW), z(CCV_32F, {4, 6, 5}, NHWC);
    fill_random(x, rng);
    ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    for (int h = 0; h < 4; h++)
      for (int w = 0; w < 6; w++)
        for (int c = 0; c < 5; c++)
          ASSERT_EQ(T::decode(y.at({c, h, w}), CCV_32F), T::decode(x.at({h, w, c}), CCV_32F));
    // Backward takes the gradient back to the input's format.
    ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_BACKWARD, backend), {y, x, y}, {z}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (size_t i = 0; i < x.count(); i++) ASSERT_EQ(z.bits(i), x.bits(i));
    // 2-d: N, C in both: a plain copy.
    T a(CCV_32F, {3, 9}, NHWC), b(CCV_32F, {3, 9}, NCHW);
    fill_random(a, rng);
    ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_FORWARD, backend), {a}, {b}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < a.count(); i++) ASSERT_EQ(b.bits(i), a.bits(i));
    // 5-d: N, D1, D2, D3, C <-> N, C, D1, D2, D3.
    T p(CCV_32F, {2, 3, 4, 5, 6}, NHWC), q(CCV_32F, {2, 6, 3, 4, 5}, NCHW);
    fill_random(p, rng);
    ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_FORWARD, backend), {p}, {q}), CCV_NNC_EXEC_SUCCESS);
    for (int n = 0; n < 2; n++)
      for (int d1 = 0; d1 < 3; d1++)
        for (int d2 = 0; d2 < 4; d2++)
          for (int d3 = 0; d3 < 5; d3++)
            for (int c = 0; c < 6; c++)
              ASSERT_EQ(T::decode(q.at({n, c, d1, d2, d3}), CCV_32F), T::decode(p.at({n, d1, d2, d3, c}), CCV_32F));
  }
}

TEST_F(FormatTest, SameFormatIsAStridedCopy) {
  std::mt19937 rng(2);
  for (uint32_t backend : {kRef, kOpt}) {
    T x = T::view(CCV_64F, {3, 5, 7, 11}, NCHW), y = T::view(CCV_64F, {3, 5, 7, 11}, NCHW, 4);
    fill_uniform(x, rng);
    ASSERT_EQ(run(command(CCV_NNC_FORMAT_TRANSFORM_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < x.count(); i++) ASSERT_EQ(y.bits(i), x.bits(i));
    EXPECT_TRUE(y.guard_intact());
  }
}

// libnnc's rule (forward from inputs): output i is input i, whatever the
// caller's output parameters held (libnnc programs pass them uninitialised);
// the target format is the output tensor's own, given at execution.
TEST_F(FormatTest, TensorAutoIsTheInput) {
  for (uint32_t id : {CCV_NNC_FORMAT_TRANSFORM_FORWARD, CCV_NNC_FORMAT_TRANSFORM_BACKWARD}) {
    const ccv_nnc_cmd_t cmd = command(id);
    ccv_nnc_tensor_param_t in[2] = {param(CCV_16F, {2, 3, 4, 5}, NHWC), param(CCV_32F, {3, 4, 5}, NCHW)};
    ccv_nnc_tensor_param_t out[2];
    std::memset(out, 0x5a, sizeof(out));  // stack garbage
    ccv_nnc_hint_tensor_auto(cmd, in, 2, ccv_nnc_no_hint, out, 2);
    EXPECT_EQ(out[0].format, NHWC);
    EXPECT_EQ(out[0].datatype, CCV_16F);
    EXPECT_EQ(std::vector<int>(out[0].dim, out[0].dim + 5), (std::vector<int>{2, 3, 4, 5, 0}));
    EXPECT_EQ(out[1].format, NCHW);
    EXPECT_EQ(std::vector<int>(out[1].dim, out[1].dim + 4), (std::vector<int>{3, 4, 5, 0}));
  }
}

TEST_F(FormatTest, RejectsBadInput) {
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_FORMAT_TRANSFORM_FORWARD);
  T x(CCV_32F, {2, 3, 4, 5}, NHWC), wrong(CCV_32F, {2, 3, 4, 5}, NCHW), h(CCV_16F, {2, 5, 3, 4}, NCHW);
  T x3(CCV_32F, {3, 4, 5}, NHWC), c3(CCV_32F, {5, 3, 4}, CHWN), y3(CCV_32F, {2, 5, 3, 4, 1}, NCHW);
  EXPECT_EQ(run(cmd, {x}, {wrong}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2x5x3x4") && message_has("2x3x4x5")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {x}, {h}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("16F")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {x3}, {c3}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("CHWN needs 4-d")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {x}, {y3}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("same rank")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("only 0 inputs")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(cmd, 0, 1, 0, 1), 0);
}

}  // namespace
