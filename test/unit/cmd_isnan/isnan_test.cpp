// REDUCE_ISNAN against a scan written here, and libnnc's contract from its
// description file.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_isnan_example(int y[2]);

using namespace cmdtest;

namespace {

class ReduceIsnan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t isnan_cmd(uint32_t id, std::vector<int> axes) {
  ccv_nnc_cmd_t c = command(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

TEST_F(ReduceIsnan, FlagsGroupsHoldingANaN) {
  std::mt19937 rng(601);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::vector<int> dims, axes;
  };
  int round = 0;
  for (const Case& c : {Case{{4, 5}, {1}}, Case{{4, 5}, {0}}, Case{{3, 4, 5}, {0, 2}}, Case{{3, 4, 5}, {0, 1, 2}},
                        Case{{2, 3, 4, 2}, {1, 3}}})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F})
      for (int ot : {CCV_32F, CCV_32S, CCV_8U}) {
        std::vector<int> yd = c.dims;
        for (int a : c.axes) yd[a] = 1;
        const bool view = ++round % 2 == 0;
        T x = view ? T::view(dt, c.dims) : T(dt, c.dims), y = view ? T(ot, yd) : T::view(ot, yd);
        fill_random(x, rng);
        // A NaN in a few places, infinities elsewhere (not NaN).
        std::uniform_int_distribution<size_t> pick(0, x.count() - 1);
        for (int k = 0; k < 3; k++) x.set(pick(rng), nan);
        for (int k = 0; k < 3; k++) {
          const size_t i = pick(rng);
          if (!std::isnan(x.get(i))) x.set(i, -inf);
        }
        ASSERT_EQ(run(isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, c.axes), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        std::vector<double> want(y.count(), 0);
        std::vector<int> idx(c.dims.size());
        for (size_t lin = 0; lin < x.count(); lin++) {
          size_t rem = lin, k = 0;
          for (int i = static_cast<int>(c.dims.size()) - 1; i >= 0; i--)
            idx[i] = static_cast<int>(rem % c.dims[i]), rem /= c.dims[i];
          for (size_t i = 0; i < c.dims.size(); i++) k = k * yd[i] + (yd[i] == 1 ? 0 : idx[i]);
          if (std::isnan(x.get(lin))) want[k] = 1;
        }
        for (size_t k = 0; k < y.count(); k++) ASSERT_EQ(y.get(k), want[k]) << k;
        EXPECT_TRUE(y.guard_intact());
      }
}

TEST_F(ReduceIsnan, BackwardIsZero) {
  T g(CCV_32F, {2, 1}), x(CCV_32F, {2, 3}), dx(CCV_32F, {2, 3});
  for (size_t i = 0; i < dx.count(); i++) dx.set(i, 7);
  ASSERT_EQ(run(isnan_cmd(CCV_NNC_REDUCE_ISNAN_BACKWARD, {1}), {g, x}, {dx}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  for (size_t i = 0; i < dx.count(); i++) EXPECT_EQ(dx.get(i), 0);
  EXPECT_EQ(run(isnan_cmd(CCV_NNC_REDUCE_ISNAN_BACKWARD, {1}), {g, x}, {nullptr}), CCV_NNC_EXEC_INVALID);
}

// libnnc's description file: the forward's tensor_auto and bitmask, the backward's shape from the gradient.
TEST_F(ReduceIsnan, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  ccv_nnc_tensor_param_t in[2] = {param(CCV_16F, {3, 4, 5}), param(CCV_32F, {3, 4, 5})}, out;
  ccv_nnc_hint_tensor_auto(isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, {0, 2}), in, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(dims(out), (std::vector<int>{1, 4, 1, 0}));
  EXPECT_EQ(out.datatype, CCV_16F);
  in[0] = param(CCV_32F, {1, 4, 1});
  ccv_nnc_hint_tensor_auto(isnan_cmd(CCV_NNC_REDUCE_ISNAN_BACKWARD, {0, 2}), in, 2, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(dims(out), (std::vector<int>{1, 4, 1, 0}));
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, {1});
  EXPECT_TRUE(bm(f, 1, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 1, 1, 1, 0));
  for (int i = 0; i < 2; i++) {
    EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(f, i, 1, 0, 1));
    EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(f, i, 1, 0, 1));
  }
  int y[2];
  ASSERT_EQ(nnc_test_isnan_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 1);
}

TEST_F(ReduceIsnan, BadInputFailsWithAMessage) {
  T x(CCV_32F, {4, 5}), y(CCV_32F, {4, 1}), y2(CCV_32F, {1, 5}), xi(CCV_32S, {4, 5});
  const ccv_nnc_cmd_t f = isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, {1});
  EXPECT_EQ(run(f, {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {y2}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("must be 4x1")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {xi}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32S")) << ccv_nnc_error_message();
  EXPECT_EQ(run(isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, {2}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(isnan_cmd(CCV_NNC_REDUCE_ISNAN_FORWARD, {}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, x}, {y}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
