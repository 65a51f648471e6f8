// CMUL against std::complex, finite differences in fp64, and libnnc's
// contract from its description file.
#include <gtest/gtest.h>

#include <complex>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_cmul_example(float c[4]);

using namespace cmdtest;

namespace {

class Cmul : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// Row-major index into `part` (aligned at the last axes) of the full shape's element `lin`.
size_t part_index(size_t lin, const std::vector<int>& full, const std::vector<int>& part) {
  std::vector<int> idx(full.size());
  for (int i = static_cast<int>(full.size()) - 1; i >= 0; i--) idx[i] = static_cast<int>(lin % full[i]), lin /= full[i];
  size_t k = 0;
  const size_t off = full.size() - part.size();
  for (size_t d = 0; d < part.size(); d++) k = k * part[d] + (part[d] == 1 ? 0 : idx[off + d]);
  return k;
}

struct CmulCase {
  std::vector<int> a, b, c;
};
const CmulCase kCases[] = {{{3, 4}, {3, 4}, {3, 4}},
                           {{2, 5, 3, 6}, {1, 5, 1, 6}, {2, 5, 3, 6}},  // rotary: [B, T, H, D] x [1, T, 1, D]
                           {{5, 1, 4}, {3, 4}, {5, 3, 4}},
                           {{2}, {4, 2}, {4, 2}}};

TEST_F(Cmul, ForwardMatchesStdComplex) {
  std::mt19937 rng(801);
  int round = 0;
  for (int dt : {CCV_32F, CCV_64F, CCV_16F})
    for (const CmulCase& c : kCases) {
      const bool view = ++round % 2 == 0;
      T a = view ? T::view(dt, c.a) : T(dt, c.a), b = view ? T(dt, c.b) : T::view(dt, c.b);
      T y = view ? T::view(dt, c.c) : T(dt, c.c);
      fill_random(a, rng), fill_random(b, rng);
      ASSERT_EQ(run(command(CCV_NNC_CMUL_FORWARD), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t i = 0; i < y.count(); i += 2) {
        const size_t ia = part_index(i, c.c, c.a), ib = part_index(i, c.c, c.b);
        const std::complex<double> p =
            std::complex<double>(a.get(ia), a.get(ia + 1)) * std::complex<double>(b.get(ib), b.get(ib + 1));
        const double tol = dt == CCV_16F ? 0.05 : 1e-5;
        ASSERT_NEAR(y.get(i), p.real(), tol) << i;
        ASSERT_NEAR(y.get(i + 1), p.imag(), tol) << i;
      }
      EXPECT_TRUE(y.guard_intact());
    }
  // c may be a (libnnc allows input 0 in place of output 0).
  T a(CCV_64F, {3, 4}), b(CCV_64F, {3, 4}), y(CCV_64F, {3, 4});
  fill_uniform(a, rng), fill_uniform(b, rng);
  ASSERT_EQ(run(command(CCV_NNC_CMUL_FORWARD), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(command(CCV_NNC_CMUL_FORWARD), {a, b}, {a}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < y.count(); i++) EXPECT_EQ(a.get(i), y.get(i));
}

TEST_F(Cmul, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(802);
  for (const CmulCase& c : kCases) {
    T a(CCV_64F, c.a), b(CCV_64F, c.b);
    fill_uniform(a, rng), fill_uniform(b, rng);
    expect_gradients_match(command(CCV_NNC_CMUL_FORWARD), command(CCV_NNC_CMUL_BACKWARD), ccv_nnc_no_hint, {&a, &b},
                           {c.c}, {true, true}, rng);
    expect_gradients_match(command(CCV_NNC_CMUL_FORWARD), command(CCV_NNC_CMUL_BACKWARD), ccv_nnc_no_hint, {&a, &b},
                           {c.c}, {false, true}, rng);
    expect_gradients_match(command(CCV_NNC_CMUL_FORWARD), command(CCV_NNC_CMUL_BACKWARD), ccv_nnc_no_hint, {&a, &b},
                           {c.c}, {true, false}, rng);
  }
}

TEST_F(Cmul, NullGradientReadsAsOnes) {
  std::mt19937 rng(803);
  T a(CCV_64F, {2, 4}), b(CCV_64F, {4}), ones(CCV_64F, {2, 4}), da1(CCV_64F, {2, 4}), db1(CCV_64F, {4});
  T da2(CCV_64F, {2, 4}), db2(CCV_64F, {4});
  fill_uniform(a, rng), fill_uniform(b, rng);
  for (size_t i = 0; i < ones.count(); i++) ones.set(i, 1);
  ASSERT_EQ(run(command(CCV_NNC_CMUL_BACKWARD), {ones, a, b}, {da1, db1}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(command(CCV_NNC_CMUL_BACKWARD), {nullptr, a, b}, {da2, db2}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(max_rel_diff(da1, da2), 0);
  EXPECT_EQ(max_rel_diff(db1, db2), 0);
  EXPECT_TRUE(ccv_nnc_cmd_attr(command(CCV_NNC_CMUL_BACKWARD), CCV_NNC_CMD_ATTR_NULL_IS_ONES));
}

// libnnc's description file: broadcast tensor_auto, the backward from the
// inputs, bitmasks, input 0 in place of output 0.
TEST_F(Cmul, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, {3, 4}), param(CCV_32F, {2, 1, 4})}, out[2];
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_CMUL_FORWARD), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 4, 0, 0}));  // libnnc's rule: aligned at the last axes
  in[0] = param(CCV_32F, {2, 5, 3, 4});
  in[1] = param(CCV_32F, {5, 1, 4});
  in[2] = param(CCV_64F, {3, 4});
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_CMUL_BACKWARD), in, 3, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{5, 1, 4, 0, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{3, 4, 0, 0, 0}));
  EXPECT_EQ(out[1].datatype, CCV_64F);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = command(CCV_NNC_CMUL_FORWARD), b = command(CCV_NNC_CMUL_BACKWARD);
  EXPECT_TRUE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 2, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 0));
  EXPECT_TRUE(bm(b, 3, 7, 2, 3));
  EXPECT_TRUE(bm(b, 3, 5, 2, 1));
  EXPECT_TRUE(bm(b, 3, 3, 2, 2));
  EXPECT_FALSE(bm(b, 3, 3, 2, 1));  // da needs b
  EXPECT_FALSE(bm(b, 3, 5, 2, 2));  // db needs a
  EXPECT_FALSE(bm(b, 3, 5, 2, 3));
  EXPECT_FALSE(bm(b, 3, 6, 2, 3));
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(ccv_nnc_cmd_allow_inplace(f, i, 2, 0, 1), i == 0) << i;
    EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(f, i, 2, 0, 1));
  }
  float y[4];
  ASSERT_EQ(nnc_test_cmul_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // (1 + 2i)(2 - i) = 4 + 3i; (3 - i)(i) = 1 + 3i.
  const float want[4] = {4, 3, 1, 3};
  for (int i = 0; i < 4; i++) EXPECT_EQ(y[i], want[i]) << i;
}

TEST_F(Cmul, BadInputFailsWithAMessage) {
  T a(CCV_32F, {3, 4}), b(CCV_32F, {3, 4}), y(CCV_32F, {3, 4}), odd(CCV_32F, {3, 3}), b2(CCV_32F, {2, 4});
  T bd(CCV_64F, {3, 4}), b1(CCV_32F, {3, 1}), y2(CCV_32F, {2, 3, 4}), ai(CCV_32S, {3, 4});
  const ccv_nnc_cmd_t f = command(CCV_NNC_CMUL_FORWARD);
  EXPECT_EQ(run(f, {a, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {odd, odd}, {odd}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("even")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a, b2}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, b1}, {y}), CCV_NNC_EXEC_INVALID);  // the pairs' axis does not broadcast
  EXPECT_TRUE(message_has("same last axis")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a, bd}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, b}, {y2}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {ai, ai}, {ai}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, b}, {nullptr}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t bw = command(CCV_NNC_CMUL_BACKWARD);
  T da(CCV_32F, {3, 4}), db(CCV_32F, {3, 4});
  EXPECT_EQ(run(bw, {y, a, b}, {da, db}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(bw, {y, a, nullptr}, {da}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("da needs b")) << ccv_nnc_error_message();
  EXPECT_EQ(run(bw, {y, nullptr, b}, {nullptr, db}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {y, a, b}, {nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {y2, a, b}, {da}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {y, a, b}, {b2}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {y, a}, {da}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
