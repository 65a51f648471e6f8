// MASKED_FILL against a select written here, finite differences, and
// libnnc's contract from its description file.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_masked_fill_example(float y[4]);

using namespace cmdtest;

namespace {

class MaskedFill : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t fill_cmd(uint32_t id, float eq, float fill) {
  ccv_nnc_cmd_t c = command(id);
  c.info.blas.a[0] = eq;
  c.info.blas.a[1] = fill;
  return c;
}

// Row-major index into the mask that x's element `lin` broadcasts from (aligned at the last axis).
size_t mask_index(size_t lin, const std::vector<int>& xd, const std::vector<int>& md) {
  std::vector<int> idx(xd.size());
  for (int i = static_cast<int>(xd.size()) - 1; i >= 0; i--) idx[i] = static_cast<int>(lin % xd[i]), lin /= xd[i];
  size_t k = 0;
  const size_t off = xd.size() - md.size();
  for (size_t d = 0; d < md.size(); d++) k = k * md[d] + (md[d] == 1 ? 0 : idx[off + d]);
  return k;
}

struct FillCase {
  std::vector<int> x, mask;
};
const FillCase kCases[] = {{{2, 3, 4, 4}, {1, 1, 4, 4}}, {{2, 3, 4, 4}, {4, 4}}, {{5, 6}, {5, 6}}, {{5, 6}, {1}},
                           {{3, 4, 5}, {3, 1, 5}}};

TEST_F(MaskedFill, ForwardSelectsTheFill) {
  std::mt19937 rng(701);
  int round = 0;
  for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_32S})
    for (int mt : {CCV_32S, CCV_32F, CCV_8U})
      for (const FillCase& c : kCases) {
        const bool view = ++round % 2 == 0;
        T x = view ? T::view(dt, c.x) : T(dt, c.x), y = view ? T(dt, c.x) : T::view(dt, c.x);
        T m = view ? T::view(mt, c.mask) : T(mt, c.mask);
        fill_random(x, rng);
        for (size_t i = 0; i < m.count(); i++) m.set(i, std::uniform_int_distribution<int>(0, 2)(rng));
        ASSERT_EQ(run(fill_cmd(CCV_NNC_MASKED_FILL_FORWARD, 1, -5), {x, m}, {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t i = 0; i < x.count(); i++) {
          const bool hit = m.get(mask_index(i, c.x, c.mask)) == 1;
          ASSERT_EQ(y.get(i), hit ? -5.0 : x.get(i)) << i;
        }
        EXPECT_TRUE(y.guard_intact());
      }
}

TEST_F(MaskedFill, BackwardMatchesFiniteDifferencesAndZeroesTheFilled) {
  std::mt19937 rng(702);
  for (const FillCase& c : kCases) {
    T x(CCV_64F, c.x), m(CCV_32S, c.mask);
    fill_uniform(x, rng);
    for (size_t i = 0; i < m.count(); i++) m.set(i, std::uniform_int_distribution<int>(0, 1)(rng));
    // y is linear in x; the mask is not differentiated.
    expect_gradients_match(fill_cmd(CCV_NNC_MASKED_FILL_FORWARD, 0, 3), fill_cmd(CCV_NNC_MASKED_FILL_BACKWARD, 0, 3),
                           ccv_nnc_no_hint, {&x, &m}, {c.x}, {true, false}, rng);
  }
  T g(CCV_32F, {2, 3}), m(CCV_32F, {3}), dx(CCV_32F, {2, 3}), dm(CCV_32F, {3});
  for (size_t i = 0; i < 6; i++) g.set(i, static_cast<double>(i) + 1);
  m.set(0, 0), m.set(1, 7), m.set(2, 0);
  dm.set(1, 5);
  ASSERT_EQ(run(fill_cmd(CCV_NNC_MASKED_FILL_BACKWARD, 7, 0), {g, nullptr, m}, {dx, dm}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  const double want[6] = {1, 0, 3, 4, 0, 6};
  for (int i = 0; i < 6; i++) EXPECT_EQ(dx.get(i), want[i]) << i;
  for (int i = 0; i < 3; i++) EXPECT_EQ(dm.get(i), 0) << i;
}

// libnnc's description file: tensor_auto, bitmasks, no in-place pair.
TEST_F(MaskedFill, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  ccv_nnc_tensor_param_t in[3] = {param(CCV_16F, {2, 3, 4}), param(CCV_32S, {1, 3, 4})}, out[2];
  ccv_nnc_hint_tensor_auto(fill_cmd(CCV_NNC_MASKED_FILL_FORWARD, 0, 0), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 4, 0}));
  EXPECT_EQ(out[0].datatype, CCV_16F);
  in[0] = param(CCV_32F, {2, 3, 4});
  in[1] = param(CCV_32F, {2, 3, 4});
  in[2] = param(CCV_32S, {1, 3, 4});
  ccv_nnc_hint_tensor_auto(fill_cmd(CCV_NNC_MASKED_FILL_BACKWARD, 0, 0), in, 3, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 4, 0}));
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = fill_cmd(CCV_NNC_MASKED_FILL_FORWARD, 0, 0), b = fill_cmd(CCV_NNC_MASKED_FILL_BACKWARD, 0, 0);
  EXPECT_TRUE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 3, 7, 1, 1));  // exactly two inputs
  EXPECT_FALSE(bm(f, 2, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 0));
  EXPECT_TRUE(bm(b, 3, 5, 1, 1));
  EXPECT_TRUE(bm(b, 3, 7, 2, 3));
  EXPECT_FALSE(bm(b, 3, 5, 2, 2));
  EXPECT_FALSE(bm(b, 3, 3, 1, 1));
  EXPECT_FALSE(bm(b, 3, 6, 1, 1));
  for (const ccv_nnc_cmd_t& c : {f, b})
    for (int i = 0; i < 3; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 3, 0, 1));
    }
  float y[4];
  ASSERT_EQ(nnc_test_masked_fill_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[4] = {1, -9, 3, -9};
  for (int i = 0; i < 4; i++) EXPECT_EQ(y[i], want[i]) << i;
}

TEST_F(MaskedFill, BadInputFailsWithAMessage) {
  T x(CCV_32F, {3, 4}), y(CCV_32F, {3, 4}), m(CCV_32S, {3, 4}), m2(CCV_32S, {2, 4}), m3(CCV_32S, {1, 3, 4});
  T yd(CCV_64F, {3, 4}), y2(CCV_32F, {4, 3}), gi(CCV_32S, {3, 4});
  const ccv_nnc_cmd_t f = fill_cmd(CCV_NNC_MASKED_FILL_FORWARD, 0, 1);
  EXPECT_EQ(run(f, {x, m}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, m2}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("does not broadcast")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, m3}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, m}, {yd}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, m}, {y2}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, m}, {nullptr}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t b = fill_cmd(CCV_NNC_MASKED_FILL_BACKWARD, 0, 1);
  EXPECT_EQ(run(b, {y, x, m}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, x, nullptr}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, x}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {gi, x, m}, {gi}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32S")) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, x, m}, {x, m2}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
