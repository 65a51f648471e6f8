// PAD against an index map written here, finite differences in fp64, and
// libnnc's contract from its description file.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" {
ccv_nnc_cmd_t nnc_test_pad_forward(void);
int nnc_test_pad_example(float y[7]);
}

using namespace cmdtest;

namespace {

class Pad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t pad(uint32_t id, int type, std::vector<int> begin, std::vector<int> end) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.pad.type = type;
  for (size_t i = 0; i < begin.size(); i++) p.size.dim[i] = begin[i];
  for (size_t i = 0; i < end.size(); i++) p.pad.end[i] = end[i];
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// The input index padded position i reads (-1: zero), by walking the mirror
// or clamping, independently of the library's formula.
int source(int type, int i, int begin, int n) {
  int j = i - begin;
  if (j >= 0 && j < n) return j;
  if (type == CCV_NNC_PAD_ZERO) return -1;
  if (type == CCV_NNC_PAD_REPLICATE || n == 1) return std::min(std::max(j, 0), n - 1);
  while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;
  return j;
}

std::vector<int> padded(const std::vector<int>& dims, const std::vector<int>& b, const std::vector<int>& e) {
  std::vector<int> r = dims;
  for (size_t i = 0; i < r.size(); i++) r[i] += b[i] + e[i];
  return r;
}

// Row-major linear index of x read by y's element `lin` (-1: zero).
long source_linear(int type, size_t lin, const std::vector<int>& xd, const std::vector<int>& yd,
                   const std::vector<int>& b) {
  std::vector<int> idx(yd.size());
  for (int i = static_cast<int>(yd.size()) - 1; i >= 0; i--) idx[i] = static_cast<int>(lin % yd[i]), lin /= yd[i];
  long k = 0;
  for (size_t d = 0; d < yd.size(); d++) {
    const int j = source(type, idx[d], b[d], xd[d]);
    if (j < 0) return -1;
    k = k * xd[d] + j;
  }
  return k;
}

struct PadCase {
  std::vector<int> dims, begin, end;
};
const PadCase kCases[] = {
    {{5}, {2}, {3}},
    {{3, 4}, {1, 2}, {2, 0}},
    {{2, 3, 4, 5}, {0, 1, 2, 3}, {1, 0, 3, 2}},  // pads longer than the axis: mirror images repeat
    {{1, 4}, {2, 1}, {1, 3}},                    // an axis of extent 1
    {{3, 3}, {7, 0}, {0, 8}},
};
constexpr int kTypes[] = {CCV_NNC_PAD_ZERO, CCV_NNC_PAD_REPLICATE, CCV_NNC_PAD_REFLECT};

TEST_F(Pad, ForwardMatchesIndexMap) {
  std::mt19937 rng(301);
  int round = 0;
  for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_32S, CCV_8U, CCV_64S})
    for (const PadCase& c : kCases)
      for (int type : kTypes) {
        const std::vector<int> yd = padded(c.dims, c.begin, c.end);
        const bool view = ++round % 2 == 0;
        T x = view ? T::view(dt, c.dims) : T(dt, c.dims), y = view ? T(dt, yd) : T::view(dt, yd);
        fill_random(x, rng);
        ASSERT_EQ(run(pad(CCV_NNC_PAD_FORWARD, type, c.begin, c.end), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t i = 0; i < y.count(); i++) {
          const long k = source_linear(type, i, c.dims, yd, c.begin);
          ASSERT_EQ(y.get(i), k < 0 ? 0.0 : x.get(static_cast<size_t>(k))) << "type " << type << " element " << i;
        }
        EXPECT_TRUE(y.guard_intact());
      }
}

TEST_F(Pad, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(302);
  const PadCase cases[] = {{{4}, {2}, {3}}, {{3, 2}, {1, 2}, {2, 1}}, {{2, 3, 3}, {1, 3, 0}, {0, 1, 4}}};
  for (const PadCase& c : cases)
    for (int type : kTypes) {
      T x(CCV_64F, c.dims);
      fill_uniform(x, rng);
      expect_gradients_match(pad(CCV_NNC_PAD_FORWARD, type, c.begin, c.end),
                             pad(CCV_NNC_PAD_BACKWARD, type, c.begin, c.end),
                             ccv_nnc_no_hint, {&x}, {padded(c.dims, c.begin, c.end)}, {true}, rng);
    }
}

TEST_F(Pad, BackwardGathersTheEdgesCopies) {
  // x = a b, replicate by 2 in front and 1 behind: y = a a a b b; g = 1 2 3 4 5.
  T g(CCV_32F, {5}), dx = T::view(CCV_32F, {2});
  for (int i = 0; i < 5; i++) g.set(i, i + 1);
  ASSERT_EQ(run(pad(CCV_NNC_PAD_BACKWARD, CCV_NNC_PAD_REPLICATE, {2}, {1}), {g}, {dx}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(dx.get(0), 6);
  EXPECT_EQ(dx.get(1), 9);
  EXPECT_TRUE(dx.guard_intact());
  // Reflect: x = a b c, pad 2 / 2: y = c b a b c b a; dx = (3 + 7, 2 + 4 + 6, 1 + 5).
  T g7(CCV_32F, {7}), dx3(CCV_32F, {3}), x3(CCV_32F, {3});
  for (int i = 0; i < 7; i++) g7.set(i, i + 1);
  ASSERT_EQ(run(pad(CCV_NNC_PAD_BACKWARD, CCV_NNC_PAD_REFLECT, {2}, {2}), {g7, x3}, {dx3}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(dx3.get(0), 10);
  EXPECT_EQ(dx3.get(1), 12);
  EXPECT_EQ(dx3.get(2), 6);
  // Zero: dx is g's middle.
  ASSERT_EQ(run(pad(CCV_NNC_PAD_BACKWARD, CCV_NNC_PAD_ZERO, {2}, {2}), {g7}, {dx3}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(dx3.get(0), 3);
  EXPECT_EQ(dx3.get(2), 5);
}

// libnnc's description file: tensor_auto, bitmask, no in-place pair.
TEST_F(Pad, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, {2, 3, 4, 5}, CCV_TENSOR_FORMAT_NCHW), param(CCV_64F, {6, 7})}, out[1];
  const ccv_nnc_cmd_t f = pad(CCV_NNC_PAD_FORWARD, CCV_NNC_PAD_ZERO, {0, 1, 2, 3}, {4, 3, 2, 1});
  ccv_nnc_hint_tensor_auto(f, in, 1, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{6, 7, 8, 9, 0}));
  EXPECT_EQ(out[0].format, CCV_TENSOR_FORMAT_NCHW);
  // The backward's dx is input 1's parameters (x), whatever g is.
  const ccv_nnc_cmd_t b = pad(CCV_NNC_PAD_BACKWARD, CCV_NNC_PAD_ZERO, {0, 1, 2, 3}, {4, 3, 2, 1});
  ccv_nnc_hint_tensor_auto(b, in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{6, 7, 0, 0, 0}));
  EXPECT_EQ(out[0].datatype, CCV_64F);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  for (const ccv_nnc_cmd_t& c : {f, b}) {
    EXPECT_TRUE(bm(c, 1, 1, 1, 1));
    EXPECT_TRUE(bm(c, 2, 3, 1, 1));
    EXPECT_TRUE(bm(c, 3, 5, 1, 1));
    EXPECT_FALSE(bm(c, 2, 2, 1, 1));
    EXPECT_FALSE(bm(c, 1, 1, 1, 0));
    EXPECT_FALSE(bm(c, 1, 1, 2, 3));
    for (int i = 0; i < 3; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 3, 0, 1));
    }
  }
}

TEST_F(Pad, BadInputFailsWithAMessage) {
  T x(CCV_32F, {3, 4}), y(CCV_32F, {5, 7}), y2(CCV_32F, {5, 8}), yd(CCV_64F, {5, 7}), y3(CCV_32F, {5, 7, 1});
  T xi(CCV_32S, {3, 4}), yi(CCV_32S, {5, 7});
  const ccv_nnc_cmd_t f = pad(CCV_NNC_PAD_FORWARD, CCV_NNC_PAD_REFLECT, {1, 2}, {1, 1});
  EXPECT_EQ(run(f, {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {y2}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("must be 5x7")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {yd}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("64F")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {y3}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(pad(CCV_NNC_PAD_FORWARD, CCV_NNC_PAD_ZERO, {-1, 2}, {3, 1}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("negative")) << ccv_nnc_error_message();
  EXPECT_EQ(run(pad(CCV_NNC_PAD_FORWARD, 7, {1, 2}, {1, 1}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("pad.type")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {y, y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {xi}, {yi}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();  // the forward copies any type
  const ccv_nnc_cmd_t b = pad(CCV_NNC_PAD_BACKWARD, CCV_NNC_PAD_REFLECT, {1, 2}, {1, 1});
  EXPECT_EQ(run(b, {y, x}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y2, x}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {yi}, {xi}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32S")) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {nullptr, x}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, x}, {nullptr}), CCV_NNC_EXEC_INVALID);
}

TEST_F(Pad, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_pad_forward();
  EXPECT_EQ(f.cmd, CCV_NNC_PAD_FORWARD);
  EXPECT_EQ(f.info.pad.type, CCV_NNC_PAD_REPLICATE);
  EXPECT_EQ(f.info.size.dim[0], 1);
  EXPECT_EQ(f.info.size.dim[1], 2);
  EXPECT_EQ(f.info.pad.end[0], 3);
  EXPECT_EQ(f.info.pad.end[1], 4);
  float y[7];
  ASSERT_EQ(nnc_test_pad_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[7] = {3, 2, 1, 2, 3, 2, 1};
  for (int i = 0; i < 7; i++) EXPECT_EQ(y[i], want[i]) << i;
}

}  // namespace
