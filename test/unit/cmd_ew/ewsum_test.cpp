// EWSUM_FORWARD / EWSUM_BACKWARD on both CPU backends.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "unit/cmd_ew/ewsum_easy.h"
#include "cmd_test_util.hpp"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class EwsumTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

const std::vector<std::vector<int>> kShapes = {{1}, {7}, {1023}, {1025}, {3, 5, 7, 11}};

std::vector<ccv_nnc_tensor_t*> ptrs(const std::vector<T>& ts) {
  std::vector<ccv_nnc_tensor_t*> p;
  for (const T& t : ts) p.push_back(t.get());
  return p;
}

// Sum in double of element i over the inputs.
double sum_at(const std::vector<T>& xs, size_t i) {
  double s = 0;
  for (const T& x : xs) s += x.get(i);
  return s;
}

TEST_F(EwsumTest, Fp32MatchesDoubleReferenceOnBothBackends) {
  std::mt19937 rng(1234);
  for (const auto& shape : kShapes)
    for (int n : {1, 2, 3, 5}) {
      std::vector<T> xs;
      for (int k = 0; k < n; k++) {
        xs.emplace_back(CCV_32F, shape);
        fill_uniform(xs.back(), rng, -10, 10);
      }
      for (uint32_t backend : {kRef, kOpt}) {
        T y(CCV_32F, shape);
        ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, backend), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t i = 0; i < y.count(); i++) {
          const double want = sum_at(xs, i);
          if (backend == kRef || n <= 2)  // one rounding of the exact sum
            ASSERT_EQ(y.get(i), static_cast<float>(want)) << "n=" << n << " i=" << i << " backend=" << backend;
          else  // float accumulation: n-1 roundings
            ASSERT_NEAR(y.get(i), want, 1e-5 * n * 10) << "n=" << n << " i=" << i;
        }
      }
    }
}

TEST_F(EwsumTest, Fp64AndHalfTypesAndIntegersOnRef) {
  std::mt19937 rng(7);
  for (int dt : {CCV_64F, CCV_16F, CCV_16BF, CCV_32S, CCV_64S})
    for (const auto& shape : kShapes) {
      std::vector<T> xs;
      for (int k = 0; k < 3; k++) {
        xs.emplace_back(dt, shape);
        fill_random(xs.back(), rng);  // multiples of 1/64 in [-8, 8]: sums of three are exact in every type
      }
      for (uint32_t backend : {kRef, 0u}) {
        T y(dt, shape);
        ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, backend), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t i = 0; i < y.count(); i++) ASSERT_EQ(y.get(i), sum_at(xs, i)) << "dt=" << dt << " i=" << i;
      }
    }
}

TEST_F(EwsumTest, HalfSumRoundsOnceToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
  T a(CCV_16F, {2}), b(CCV_16F, {2}), y(CCV_16F, {2});
  a.set(0, 1.0);
  b.set(0, std::ldexp(1.0, -11));
  a.set(1, 1.0 + std::ldexp(1.0, -10));
  b.set(1, std::ldexp(1.0, -11));  // 1 + 3 * 2^-11: halfway, rounds up to the even 1 + 2^-9
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kRef), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(1), 1.0 + std::ldexp(1.0, -9));
}

TEST_F(EwsumTest, IntegersWrapAround) {
  T a(CCV_32S, {2}), b(CCV_32S, {2}), y(CCV_32S, {2});
  a.set(0, std::numeric_limits<int32_t>::max());
  b.set(0, 1);
  a.set(1, -5);
  b.set(1, 3);
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(y.get(0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(y.get(1), -2);
  T c(CCV_64S, {1}), d(CCV_64S, {1}), z(CCV_64S, {1});
  const int64_t big = (int64_t{1} << 60) + 1;  // not exact in double: the sum must not go through one
  std::memcpy(c.at(0), &big, 8);
  std::memcpy(d.at(0), &big, 8);
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD), {c, d}, {z}), CCV_NNC_EXEC_SUCCESS);
  int64_t got;
  std::memcpy(&got, z.at(0), 8);
  EXPECT_EQ(got, 2 * big);
}

TEST_F(EwsumTest, RefAndOptAgreeOnStridedViewsNhwcAndNchw) {
  std::mt19937 rng(99);
  for (int dt : {CCV_32F, CCV_64F})
    for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
      for (const auto& shape : kShapes)
        for (int n : {2, 4}) {
          std::vector<T> xs;
          for (int k = 0; k < n; k++) {
            // Mix views and packed tensors.
            xs.push_back(k % 2 ? T(dt, shape, format) : T::view(dt, shape, format));
            fill_uniform(xs.back(), rng);
          }
          T yr = T::view(dt, shape, format);
          T yo = T::view(dt, shape, format, 5);
          ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kRef), ptrs(xs), {yr}), CCV_NNC_EXEC_SUCCESS);
          ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), ptrs(xs), {yo}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          for (size_t i = 0; i < yr.count(); i++) {
            const double want = sum_at(xs, i);
            ASSERT_NEAR(yr.get(i), want, 1e-6) << i;
            ASSERT_NEAR(yo.get(i), yr.get(i), 1e-6) << i;
            if (n == 2) {
              ASSERT_EQ(yo.get(i), yr.get(i)) << i;
            }
          }
          EXPECT_TRUE(yr.guard_intact());
          EXPECT_TRUE(yo.guard_intact());
        }
}

TEST_F(EwsumTest, LargeSumsUseThePoolAndAgree) {
  std::mt19937 rng(5);
  const int n = (1 << 20) + 3;
  std::vector<T> xs;
  for (int k = 0; k < 3; k++) {
    xs.emplace_back(CCV_32F, std::vector<int>{n});
    fill_uniform(xs.back(), rng);
  }
  T yr(CCV_32F, {n}), yo(CCV_32F, {n}), y2(CCV_32F, {n});
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kRef), ptrs(xs), {yr}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), ptrs(xs), {yo}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), {xs[0], xs[1]}, {y2}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < static_cast<size_t>(n); i++) {
    ASSERT_NEAR(yo.get(i), yr.get(i), 1e-6) << i;
    ASSERT_EQ(y2.get(i), static_cast<float>(xs[0].get(i) + xs[1].get(i))) << i;
  }
  // A large strided view (rows of a wider tensor) goes through the threaded row walk.
  T vx = T::view(CCV_32F, {513, 1021}), vy = T::view(CCV_32F, {513, 1021}), vr(CCV_32F, {513, 1021});
  fill_uniform(vx, rng);
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), {vx, vx}, {vy}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < vy.count(); i++) ASSERT_EQ(vy.get(i), 2 * vx.get(i)) << i;
  EXPECT_TRUE(vy.guard_intact());
}

TEST_F(EwsumTest, InPlaceOnEitherInput) {
  std::mt19937 rng(11);
  for (uint32_t backend : {kRef, kOpt})
    for (int size : {7, 1025, 200000}) {
      T a(CCV_32F, {size}), b(CCV_32F, {size}), c(CCV_32F, {size});
      fill_uniform(a, rng);
      fill_uniform(b, rng);
      fill_uniform(c, rng);
      std::vector<double> want(size);
      for (int i = 0; i < size; i++) want[i] = static_cast<float>(a.get(i) + b.get(i));
      // Output is the second input.
      ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, backend), {a, b}, {b}), CCV_NNC_EXEC_SUCCESS);
      for (int i = 0; i < size; i++) ASSERT_EQ(b.get(i), want[i]) << i;
      // Output is the first input, with a third.
      for (int i = 0; i < size; i++) want[i] = a.get(i) + b.get(i) + c.get(i);
      ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, backend), {a, b, c}, {a}), CCV_NNC_EXEC_SUCCESS);
      for (int i = 0; i < size; i++) ASSERT_NEAR(a.get(i), want[i], 1e-5) << i;
    }
  EXPECT_EQ(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_EWSUM_FORWARD), 1, 3, 0, 1), 1);
}

TEST_F(EwsumTest, ManyInputsFallBackCorrectly) {
  // More inputs than one optimised pass takes.
  std::vector<T> xs;
  for (int k = 0; k < 40; k++) {
    xs.emplace_back(CCV_32F, std::vector<int>{33});
    for (size_t i = 0; i < 33; i++) xs.back().set(i, k + i * 0.5);
  }
  T y(CCV_32F, {33});
  ASSERT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), ptrs(xs), {y}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 33; i++) EXPECT_EQ(y.get(i), 780 + 40 * (i * 0.5)) << i;
}

TEST_F(EwsumTest, BackwardPassesGradientThrough) {
  std::mt19937 rng(3);
  EXPECT_EQ(ccv_nnc_cmd_attr(command(CCV_NNC_EWSUM_BACKWARD), CCV_NNC_CMD_ATTR_PASSTHROUGH), 1);
  EXPECT_EQ(ccv_nnc_cmd_attr(command(CCV_NNC_EWSUM_BACKWARD), CCV_NNC_CMD_ATTR_NULL_IS_ONES), 1);
  EXPECT_EQ(ccv_nnc_cmd_attr(command(CCV_NNC_EWSUM_FORWARD), CCV_NNC_CMD_ATTR_PASSTHROUGH), 0);
  for (uint32_t backend : {kRef, kOpt})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F}) {
      T g = T::view(dt, {3, 5, 7, 11}, CCV_TENSOR_FORMAT_NCHW);
      fill_random(g, rng);
      T x1(dt, {3, 5, 7, 11}, CCV_TENSOR_FORMAT_NCHW), x2(dt, {3, 5, 7, 11}, CCV_TENSOR_FORMAT_NCHW);
      T d1(dt, {3, 5, 7, 11}, CCV_TENSOR_FORMAT_NCHW), d3 = T::view(dt, {3, 5, 7, 11}, CCV_TENSOR_FORMAT_NCHW);
      // |g|x1|x2|x3|y| -> |d1|-|d3|
      ASSERT_EQ(run(command(CCV_NNC_EWSUM_BACKWARD, backend), {g, x1, x2, nullptr, nullptr}, {d1, nullptr, d3}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (size_t i = 0; i < g.count(); i++) {
        ASSERT_EQ(d1.get(i), g.get(i)) << i;
        ASSERT_EQ(d3.get(i), g.get(i)) << i;
      }
      EXPECT_TRUE(d3.guard_intact());
      // No gradient: it reads as ones.
      ASSERT_EQ(run(command(CCV_NNC_EWSUM_BACKWARD, backend), {nullptr}, {d1, d3}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (size_t i = 0; i < g.count(); i++) {
        ASSERT_EQ(d1.get(i), 1.0) << i;
        ASSERT_EQ(d3.get(i), 1.0) << i;
      }
      EXPECT_TRUE(d3.guard_intact());
    }
}

TEST_F(EwsumTest, BitmasksAndShapes) {
  const ccv_nnc_cmd_t fwd = command(CCV_NNC_EWSUM_FORWARD);
  const ccv_nnc_cmd_t back = command(CCV_NNC_EWSUM_BACKWARD);
  uint64_t in = 0x7, out = 0x1;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(fwd, 3, 1, &in, 1, &out, 1), 1);
  in = 0x5;  // input 1 missing
  EXPECT_EQ(ccv_nnc_cmd_bitmask(fwd, 3, 1, &in, 1, &out, 1), 0);
  in = 0x7;  // libnnc: inputs as a run from the first, all of them
  EXPECT_EQ(ccv_nnc_cmd_bitmask(fwd, 2, 1, &in, 1, &out, 1), 0);
  out = 0x3;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(fwd, 3, 1, &in, 1, &out, 1), 0);
  // Backward (libnnc): g, the forward tensors unneeded, every gradient.
  in = 0x1;
  out = 0x3;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(back, 4, 2, &in, 1, &out, 1), 1);
  out = 0x2;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(back, 4, 2, &in, 1, &out, 1), 0);
  in = 0x0;  // exec takes a NULL g as ones, but the pattern wants it (libnnc's)
  out = 0x3;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(back, 4, 2, &in, 1, &out, 1), 0);
  EXPECT_TRUE(ccv_nnc_cmd_attr(back, CCV_NNC_CMD_ATTR_PASSTHROUGH | CCV_NNC_CMD_ATTR_NULL_IS_ONES));
  // In place: any pair, forward and backward (libnnc's arbitrary rule).
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(fwd, 2, 3, 0, 1));
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(back, 3, 4, 1, 2));
  // Backward shapes come from g.
  ccv_nnc_tensor_param_t bins[3] = {param(CCV_32F, {5, 2}), param(CCV_32F, {5, 2}), param(CCV_32F, {5, 2})};
  ccv_nnc_tensor_param_t bouts[2];
  std::memset(bouts, 0, sizeof(bouts));
  ccv_nnc_hint_tensor_auto(back, bins, 3, ccv_nnc_no_hint, bouts, 2);
  EXPECT_TRUE(bouts[1].dim[0] == 5 && bouts[1].dim[1] == 2 && bouts[1].dim[2] == 0);

  ccv_nnc_tensor_param_t ins[2] = {param(CCV_32F, {2, 3, 4}, CCV_TENSOR_FORMAT_NCHW), param(CCV_32F, {2, 3, 4})};
  ccv_nnc_tensor_param_t outs[1];
  std::memset(outs, 0, sizeof(outs));
  ccv_nnc_hint_tensor_auto(fwd, ins, 2, ccv_nnc_no_hint, outs, 1);
  EXPECT_EQ(outs[0].dim[0], 2);
  EXPECT_EQ(outs[0].dim[2], 4);
  EXPECT_EQ(outs[0].dim[3], 0);
  EXPECT_EQ(outs[0].datatype, CCV_32F);
  EXPECT_EQ(outs[0].format, CCV_TENSOR_FORMAT_NCHW);
}

TEST_F(EwsumTest, RejectsBadInputWithMessages) {
  T a(CCV_32F, {2, 3}), b(CCV_32F, {2, 4}), c(CCV_64F, {2, 3}), y(CCV_32F, {2, 3}), bc(CCV_32F, {1, 3});
  T y2(CCV_32F, {2, 3}), u(CCV_8U, {2, 3}), h(CCV_16F, {2, 3}), hy(CCV_16F, {2, 3});
  const ccv_nnc_cmd_t fwd = command(CCV_NNC_EWSUM_FORWARD);

  EXPECT_EQ(run(fwd, {a, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2x4")) << ccv_nnc_error_message();
  EXPECT_TRUE(message_has("2x3")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {a, bc}, {y}), CCV_NNC_EXEC_INVALID);  // no broadcasting
  EXPECT_TRUE(message_has("broadcast")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {a, c}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("64F")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("at least one input")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {a, a}, {y, y2}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("exactly one output")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {a, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("input 1 is NULL")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {a}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("output is NULL")) << ccv_nnc_error_message();

  EXPECT_EQ(run(fwd, {u, u}, {u}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("8U")) << ccv_nnc_error_message();

  // The optimised backend has no 16F loop; asked for by name it says so.
  EXPECT_EQ(run(command(CCV_NNC_EWSUM_FORWARD, kOpt), {h, h}, {hy}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_TRUE(message_has("CPU_OPT")) << ccv_nnc_error_message();

  const ccv_nnc_cmd_t back = command(CCV_NNC_EWSUM_BACKWARD);
  EXPECT_EQ(run(back, {a}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2x4")) << ccv_nnc_error_message();
  EXPECT_EQ(run(back, {a}, {c}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("64F")) << ccv_nnc_error_message();
  EXPECT_EQ(run(back, {a}, {}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("at least one output")) << ccv_nnc_error_message();
}

TEST_F(EwsumTest, EasyMacrosFromC) {
  const float a[5] = {1, 2, 3, 4, 5}, b[5] = {0.5f, 0.25f, -3, 8, 1e-3f}, c[5] = {-1, 0, 0, 1, 2};
  float y[5] = {};
  ASSERT_EQ(ewsum_easy_sum3(a, b, c, y, 5), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int i = 0; i < 5; i++) EXPECT_EQ(y[i], static_cast<float>(static_cast<double>(a[i]) + b[i] + c[i])) << i;
  float d1[5] = {}, d2[5] = {};
  ASSERT_EQ(ewsum_easy_backward(b, d1, d2, 5), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(d1[i], b[i]);
    EXPECT_EQ(d2[i], b[i]);
  }
  ASSERT_EQ(ewsum_easy_backward(nullptr, d1, d2, 5), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(d1[i], 1.f);
    EXPECT_EQ(d2[i], 1.f);
  }
}

}  // namespace
