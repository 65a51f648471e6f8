// DATATYPE_CONVERSION on both CPU backends: exact widening, correctly rounded
// narrowing (ties to even, overflow to infinity, subnormals, NaN stays NaN),
// with expectations derived here from the formats' definitions.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;
const int kFloatTypes[] = {CCV_32F, CCV_64F, CCV_16F, CCV_16BF};

class ConvertTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

bool half_is_nan(uint64_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool bf16_is_nan(uint64_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

// Inputs around every rounding boundary of a 16-bit format: for each pair of
// neighbours (lo, hi) of the same sign, the midpoint and the values just
// either side of it, with the bits the conversion must give.
struct Probe {
  double value;
  uint16_t want;
};
template <class Decode>
std::vector<Probe> probes(uint16_t last_finite, uint16_t step_bits, Decode decode, double beyond, double nudge_rel) {
  std::vector<Probe> out;
  for (uint32_t sign : {0u, 0x8000u})
    for (uint32_t h = 0; h < last_finite + 1u; h += step_bits) {
      const double lo = decode(static_cast<uint16_t>(h));
      const double hi = h == last_finite ? beyond : decode(static_cast<uint16_t>(h + 1));  // h + 1 is infinity
      const double mid = (lo + hi) / 2;
      const double nudge = std::max(mid * nudge_rel, std::ldexp(1.0, -140));
      const uint16_t even = static_cast<uint16_t>((h & 1) ? h + 1 : h);
      const double s = sign ? -1 : 1;
      out.push_back({s * mid, static_cast<uint16_t>(sign | even)});
      out.push_back({s * (mid - nudge), static_cast<uint16_t>(sign | h)});
      out.push_back({s * (mid + nudge), static_cast<uint16_t>(sign | (h + 1))});
      out.push_back({s * lo, static_cast<uint16_t>(sign | h)});
    }
  return out;
}

// Convert `values` (written as `from`) to `to` on a backend, packed or through views.
std::vector<uint64_t> convert(const std::vector<double>& values, int from, int to, uint32_t backend, bool views) {
  const int n = static_cast<int>(values.size());
  T x = views ? T::view(from, {n}) : T(from, {n});
  T y = views ? T::view(to, {n}) : T(to, {n});
  for (int i = 0; i < n; i++) T::encode(x.at(static_cast<size_t>(i)), from, values[i]);
  EXPECT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  std::vector<uint64_t> out(n);
  for (int i = 0; i < n; i++) out[i] = y.bits(static_cast<size_t>(i));
  EXPECT_TRUE(y.guard_intact());
  return out;
}

TEST_F(ConvertTest, EveryHalfRoundTripsExactly) {
  for (int mid : {CCV_32F, CCV_64F})
    for (uint32_t backend : {kRef, kOpt})
      for (bool views : {false, true}) {
        T h = views ? T::view(CCV_16F, {256, 256}) : T(CCV_16F, {256, 256});
        T f(mid, {256, 256}), back = views ? T::view(CCV_16F, {256, 256}) : T(CCV_16F, {256, 256});
        for (uint32_t i = 0; i < 65536; i++) {
          const uint16_t b = static_cast<uint16_t>(i);
          std::memcpy(h.at(i), &b, 2);
        }
        ASSERT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, backend), {h}, {f}), CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_BACKWARD, backend), {f}, {back}), CCV_NNC_EXEC_SUCCESS);
        for (uint32_t i = 0; i < 65536; i++) {
          const double want = half_value(static_cast<uint16_t>(i));
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(f.get(i))) << std::hex << i;
            ASSERT_TRUE(half_is_nan(back.bits(i))) << std::hex << i;
            ASSERT_EQ(back.bits(i) & 0x8000, i & 0x8000) << std::hex << i;
          } else {
            ASSERT_EQ(f.get(i), want) << std::hex << i;
            ASSERT_EQ(std::signbit(f.get(i)), std::signbit(want)) << std::hex << i;
            ASSERT_EQ(back.bits(i), i) << std::hex << i;
          }
        }
      }
}

TEST_F(ConvertTest, FloatAndDoubleToHalfRoundToNearestEven) {
  // Neighbouring halves differ by at least 2^-24; a float one ulp from a
  // midpoint is at most 2^-13 of it away relatively, so nudge by 2^-20.
  const auto ps = probes(0x7bff, 1, half_value, 65536.0, std::ldexp(1.0, -20));
  std::vector<double> values;
  for (const Probe& p : ps) values.push_back(p.value);
  for (int from : {CCV_32F, CCV_64F})
    for (uint32_t backend : {kRef, kOpt})
      for (bool views : {false, true}) {
        SCOPED_TRACE(testing::Message() << "from " << from << " backend " << backend << " views " << views);
        const auto got = convert(values, from, CCV_16F, backend, views);
        for (size_t i = 0; i < ps.size(); i++)
          ASSERT_EQ(got[i], ps[i].want) << std::hexfloat << ps[i].value << std::hex << " want 0x" << ps[i].want;
      }
}

TEST_F(ConvertTest, HalfSpecialValues) {
  const std::vector<double> values = {INFINITY, -INFINITY, NAN, -NAN, 0.0, -0.0, 1e-30, -1e-30, FLT_MAX, -1e6,
                                      65504, 65519.99, 65520, std::ldexp(1.0, -24), std::ldexp(1.0, -25),
                                      std::ldexp(3.0, -25), std::ldexp(1.0, -14), std::ldexp(1023.0, -24)};
  const uint16_t want[] = {0x7c00, 0xfc00, 0, 0, 0x0000, 0x8000, 0x0000, 0x8000, 0x7c00, 0xfc00,
                           0x7bff, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002, 0x0400, 0x03ff};
  for (int from : {CCV_32F, CCV_64F})
    for (uint32_t backend : {kRef, kOpt}) {
      // Repeat the list so the vector loop sees every value too.
      std::vector<double> many;
      for (int r = 0; r < 4; r++) many.insert(many.end(), values.begin(), values.end());
      const auto got = convert(many, from, CCV_16F, backend, false);
      for (size_t i = 0; i < many.size(); i++) {
        const size_t k = i % values.size();
        if (std::isnan(values[k]))
          ASSERT_TRUE(half_is_nan(got[i])) << k;
        else
          ASSERT_EQ(got[i], want[k]) << "value " << values[k] << " backend " << backend;
      }
    }
}

TEST_F(ConvertTest, DoubleRoundsOnceNotThroughFloat) {
  // Rounding 1 + 2^-11 + 2^-40 to float first gives 1 + 2^-11, a tie that
  // would then go down to 1; rounding once goes up.
  const std::vector<double> values = {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 1 + std::ldexp(1.0, -11),
                                      1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)};
  for (uint32_t backend : {kRef, kOpt}) {
    const auto h = convert(values, CCV_64F, CCV_16F, backend, false);
    EXPECT_EQ(h[0], 0x3c01u);
    EXPECT_EQ(h[1], 0x3c00u);
    const auto b = convert(values, CCV_64F, CCV_16BF, backend, false);
    EXPECT_EQ(b[2], 0x3f81u);  // bf16: 1 + 2^-8 + tiny rounds up to 1 + 2^-7
    EXPECT_EQ(b[1], 0x3f80u);
  }
}

TEST_F(ConvertTest, FloatToBf16RoundsToNearestEven) {
  // Every 7th bf16 pair (all exponents), midpoints exact in float.
  const auto ps = probes(0x7f7f, 7, bf16_value, std::ldexp(1.0, 128), std::ldexp(1.0, -16));
  std::vector<double> values;
  for (const Probe& p : ps) values.push_back(p.value);
  for (int from : {CCV_32F, CCV_64F})
    for (uint32_t backend : {kRef, kOpt}) {
      const auto got = convert(values, from, CCV_16BF, backend, backend == kOpt);
      for (size_t i = 0; i < ps.size(); i++)
        ASSERT_EQ(got[i], ps[i].want) << std::hexfloat << ps[i].value << " from " << from;
    }
  const auto special = convert({NAN, FLT_MAX, -INFINITY, 0.0}, CCV_32F, CCV_16BF, kOpt, false);
  EXPECT_TRUE(bf16_is_nan(special[0]));
  EXPECT_EQ(special[1], 0x7f80u);  // rounds past the largest bf16
  EXPECT_EQ(special[2], 0xff80u);
  EXPECT_EQ(special[3], 0u);
}

TEST_F(ConvertTest, WideningIsExactAndNarrowingMatchesTheCompiler) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> d(-1e3, 1e3);
  std::vector<double> values(1025);
  for (double& v : values) v = d(rng);
  values[0] = std::ldexp(1.0, -1074);  // a double subnormal: 0 in float
  for (uint32_t backend : {kRef, kOpt}) {
    const auto f = convert(values, CCV_64F, CCV_32F, backend, false);
    for (size_t i = 0; i < values.size(); i++) {
      const float want = static_cast<float>(values[i]);
      uint32_t wb;
      std::memcpy(&wb, &want, 4);
      ASSERT_EQ(f[i], wb) << i;
    }
    std::vector<double> floats(values.size());
    for (size_t i = 0; i < values.size(); i++) floats[i] = static_cast<float>(values[i]);
    const auto w = convert(floats, CCV_32F, CCV_64F, backend, true);
    for (size_t i = 0; i < values.size(); i++) {
      double got;
      std::memcpy(&got, &w[i], 8);
      ASSERT_EQ(got, floats[i]) << i;
    }
  }
}

TEST_F(ConvertTest, RefAndOptAgreeForEveryPairOnViewsAndLargeSizes) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> bits16(0, 0xffff);
  const std::vector<std::vector<int>> shapes = {{1}, {7}, {1023}, {1025}, {3, 5, 7, 11}, {300, 301}};
  for (int from : kFloatTypes)
    for (int to : kFloatTypes)
      for (const auto& shape : shapes)
        for (int views = 0; views < 4; views++) {
          if (shape.size() == 2 && views) continue;  // the large one packed only
          SCOPED_TRACE(testing::Message() << from << " -> " << to << " views " << views << " size " << shape[0]);
          T x = views & 1 ? T::view(from, shape, CCV_TENSOR_FORMAT_NCHW) : T(from, shape, CCV_TENSOR_FORMAT_NCHW);
          for (size_t i = 0; i < x.count(); i++) {
            if (from == CCV_32F || from == CCV_64F) {
              T::encode(x.at(i), from, std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), bits16(rng) % 60 - 30));
            } else {
              uint16_t b = static_cast<uint16_t>(bits16(rng));
              const bool nan = from == CCV_16F ? half_is_nan(b) : bf16_is_nan(b);
              if (nan) b = 0x3c00;  // finite values only; NaN has its own tests
              std::memcpy(x.at(i), &b, 2);
            }
          }
          T r = views & 2 ? T::view(to, shape) : T(to, shape);
          T o = views & 2 ? T::view(to, shape, CCV_TENSOR_FORMAT_NHWC, 2) : T(to, shape);
          ASSERT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, kRef), {x}, {r}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          ASSERT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, kOpt), {x}, {o}), CCV_NNC_EXEC_SUCCESS);
          for (size_t i = 0; i < x.count(); i++) {
            ASSERT_EQ(o.bits(i), r.bits(i)) << i;
            const double in = x.get(i), out = r.get(i);
            // Values move by at most half a unit of the narrower type (relative 2^-8 for bf16, 2^-11 for half)
            // unless they overflow half's range.
            if (std::isinf(in)) {
              ASSERT_EQ(out, in);
              continue;
            }
            if (to == CCV_16F && std::fabs(in) >= 65520) continue;
            ASSERT_LE(std::fabs(out - in), std::fabs(in) * std::ldexp(1.0, to == CCV_16BF ? -8 : -11) + std::ldexp(1.0, -25))
                << in << " -> " << out;
          }
          EXPECT_TRUE(r.guard_intact());
          EXPECT_TRUE(o.guard_intact());
        }
}

TEST_F(ConvertTest, IntegersCopyToThemselvesOnly) {
  T a(CCV_32S, {5}), b(CCV_32S, {5}), f(CCV_32F, {5});
  for (size_t i = 0; i < 5; i++) a.set(i, static_cast<double>(i) * 1000 - 2000);
  ASSERT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, kOpt), {a}, {b}), CCV_NNC_EXEC_SUCCESS);
  for (size_t i = 0; i < 5; i++) EXPECT_EQ(b.get(i), a.get(i));
  EXPECT_EQ(run(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {a}, {f}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("cannot convert 32S to 32F")) << ccv_nnc_error_message();
}

TEST_F(ConvertTest, RejectsBadInputAndInfersShapes) {
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  T a(CCV_32F, {4, 5}), b(CCV_16F, {5, 4});
  EXPECT_EQ(run(cmd, {a}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("4x5") && message_has("5x4")) << ccv_nnc_error_message();
  EXPECT_EQ(run(cmd, {a}, {b, b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2 outputs but only 1 inputs")) << ccv_nnc_error_message();
  ccv_nnc_tensor_param_t in[2] = {param(CCV_32F, {4, 5}), param(CCV_64F, {3})};
  // libnnc's rule: output i is input i; the caller's outputs are not read
  // (the target type is the output tensor's own, given at execution).
  ccv_nnc_tensor_param_t out[2];
  std::memset(out, 0x5a, sizeof(out));
  ccv_nnc_hint_tensor_auto(cmd, in, 2, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(out[0].datatype, CCV_32F);
  EXPECT_EQ(out[0].dim[0], 4);
  EXPECT_EQ(out[0].dim[1], 5);
  EXPECT_EQ(out[0].dim[2], 0);
  EXPECT_EQ(out[1].datatype, CCV_64F);
  EXPECT_EQ(out[1].dim[0], 3);
}

}  // namespace
