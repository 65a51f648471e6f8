// ADD, MUL and SCALAR_MUL (broadcasting), forward and backward, on CPU_REF
// and CPU_OPT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/cmd_blas/elementwise_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class BlasElementwiseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0, uint32_t backend = 0) {
  ccv_nnc_cmd_t c = command(id, backend, p);
  c.info.blas.a[1] = q;
  return c;
}

// The broadcast shape, written independently of the library: right-aligned, equal or 1.
std::vector<int> bshape(const std::vector<int>& a, const std::vector<int>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int> out(n);
  for (size_t k = 0; k < n; k++) {
    const int x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[n - 1 - k] = std::max(x, y);
  }
  return out;
}

// Linear index in `small` (broadcast to `full`) of the element that full's linear index i reads.
size_t source(size_t i, const std::vector<int>& full, const std::vector<int>& small) {
  std::vector<int> idx(full.size());
  for (size_t d = full.size(); d-- > 0;) {
    idx[d] = static_cast<int>(i % full[d]);
    i /= full[d];
  }
  size_t s = 0;
  const size_t off = full.size() - small.size();
  for (size_t d = 0; d < small.size(); d++) s = s * small[d] + (small[d] == 1 ? 0 : idx[d + off]);
  return s;
}

struct Pair {
  std::vector<int> a, b;
};
const std::vector<Pair> kPairs = {
    {{4, 5}, {4, 5}},          {{4, 5}, {5}},          {{5}, {4, 5}}, {{4, 5}, {4, 1}},
    {{3, 1}, {1, 4}},          {{2, 3, 4}, {1, 3, 1}}, {{1}, {2, 3}}, {{2, 3, 4, 5}, {3, 1, 5}},
    {{2, 1, 4, 1}, {3, 1, 6}},
};

TEST_F(BlasElementwiseTest, ForwardMatchesDoubleReference) {
  std::mt19937 rng(21);
  for (const Pair& pr : kPairs)
    for (int dt : {CCV_32F, CCV_64F})
      for (uint32_t backend : {kRef, kOpt})
        for (bool mul : {false, true}) {
          const std::vector<int> ys = bshape(pr.a, pr.b);
          T a(dt, pr.a), b(dt, pr.b), y(dt, ys);
          fill_uniform(a, rng, -2, 2), fill_uniform(b, rng, -2, 2);
          const float p = 0.75f, q = -1.5f;
          const ccv_nnc_cmd_t c =
              mul ? blas(CCV_NNC_MUL_FORWARD, p, 0, backend) : blas(CCV_NNC_ADD_FORWARD, p, q, backend);
          ASSERT_EQ(run(c, {a, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          for (size_t i = 0; i < y.count(); i++) {
            const double av = a.get(source(i, ys, pr.a)), bv = b.get(source(i, ys, pr.b));
            const double want = mul ? p * av * bv : p * av + q * bv;
            ASSERT_NEAR(y.get(i), want, (dt == CCV_32F ? 4e-7 : 1e-15) * std::max(1.0, std::fabs(want)))
                << (mul ? "MUL " : "ADD ") << "i=" << i << " backend " << backend;
          }
        }
}

TEST_F(BlasElementwiseTest, ScalarMulAndHalfTypes) {
  std::mt19937 rng(22);
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_32F, {3, 7}), y(CCV_32F, {3, 7});
    fill_uniform(x, rng);
    ASSERT_EQ(run(blas(CCV_NNC_SCALAR_MUL_FORWARD, -2.5f, 0, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < y.count(); i++) EXPECT_EQ(y.get(i), static_cast<float>(-2.5 * x.get(i)));
  }
  for (int dt : {CCV_16F, CCV_16BF}) {
    T a(dt, {4, 6}), b(dt, {6}), y(dt, {4, 6});
    fill_random(a, rng), fill_random(b, rng);
    ASSERT_EQ(run(blas(CCV_NNC_ADD_FORWARD, 1, 1), {a, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (size_t i = 0; i < y.count(); i++) {
      const double want = a.get(i) + b.get(i % 6);
      EXPECT_NEAR(y.get(i), want, (dt == CCV_16F ? 1.0 / 1024 : 1.0 / 128) * std::max(1.0, std::fabs(want)));
    }
  }
}

TEST_F(BlasElementwiseTest, GradientsMatchFiniteDifferences) {
  std::mt19937 rng(23);
  for (const Pair& pr : kPairs)
    for (uint32_t backend : {kRef, kOpt})
      for (bool mul : {false, true}) {
        T a(CCV_64F, pr.a), b(CCV_64F, pr.b);
        fill_uniform(a, rng), fill_uniform(b, rng);
        const ccv_nnc_cmd_t f =
            mul ? blas(CCV_NNC_MUL_FORWARD, 0.75f, 0, backend) : blas(CCV_NNC_ADD_FORWARD, 0.75f, -1.5f, backend);
        ccv_nnc_cmd_t g = f;
        g.cmd = f.cmd | 1;
        SCOPED_TRACE(mul ? "MUL" : "ADD");
        expect_gradients_match(f, g, ccv_nnc_no_hint, {&a, &b}, {bshape(pr.a, pr.b)}, {true, true}, rng);
      }
  for (uint32_t backend : {kRef, kOpt}) {
    T x(CCV_64F, {3, 4});
    fill_uniform(x, rng);
    expect_gradients_match(blas(CCV_NNC_SCALAR_MUL_FORWARD, 1.25f, 0, backend),
                           blas(CCV_NNC_SCALAR_MUL_BACKWARD, 1.25f, 0, backend), ccv_nnc_no_hint, {&x}, {{3, 4}},
                           {true}, rng);
  }
}

// CPU_OPT against CPU_REF on the broadcasts that matter (bias rows, per-channel
// NCHW / NHWC vectors, scalars), odd sizes, views, threaded sizes; forward and backward.
TEST_F(BlasElementwiseTest, OptMatchesRef) {
  std::mt19937 rng(24);
  struct Shape {
    std::vector<int> a, b;
    int format;
  };
  const std::vector<Shape> shapes = {
      {{64, 313}, {313}, CCV_TENSOR_FORMAT_NHWC},                // bias
      {{40, 1001}, {1001}, CCV_TENSOR_FORMAT_NHWC},              // bias, threaded
      {{3, 16, 29, 31}, {1, 16, 1, 1}, CCV_TENSOR_FORMAT_NCHW},  // per channel, NCHW, threaded
      {{3, 29, 31, 16}, {16}, CCV_TENSOR_FORMAT_NHWC},           // per channel, NHWC, threaded
      {{2, 5, 7, 16}, {16}, CCV_TENSOR_FORMAT_NHWC},             // per channel, NHWC, one thread and views
      {{40003}, {1}, CCV_TENSOR_FORMAT_NHWC},                    // scalar, threaded
      {{2, 20001}, {1, 20001}, CCV_TENSOR_FORMAT_NHWC},          // summed over the outer dimension, threaded
      {{5, 1, 7}, {1, 6, 1}, CCV_TENSOR_FORMAT_NHWC},            // both broadcast
      {{7, 9}, {7, 9}, CCV_TENSOR_FORMAT_NCHW},                  // no broadcast
  };
  for (const Shape& s : shapes)
    for (int dt : {CCV_32F, CCV_64F})
      for (bool view : {false, true})
        for (uint32_t id : {CCV_NNC_ADD_FORWARD, CCV_NNC_MUL_FORWARD}) {
          size_t count = 1;
          for (int d : s.a) count *= static_cast<size_t>(d);
          // Views and fp64 on the small shapes only: the threaded ones are checked packed in fp32.
          if ((view && (s.a.size() < 2 || count > 20000)) || (dt == CCV_64F && count > 20000)) continue;
          const std::vector<int> ys = bshape(s.a, s.b);
          T a = view ? T::view(dt, s.a, s.format) : T(dt, s.a, s.format);
          T b = view ? T::view(dt, s.b, s.format) : T(dt, s.b, s.format);
          fill_uniform(a, rng), fill_uniform(b, rng);
          const ccv_nnc_cmd_t f = blas(id, 0.75f, -1.5f, kOpt);
          const double tol = dt == CCV_32F ? 1e-6 : 1e-14;
          SCOPED_TRACE(id == CCV_NNC_ADD_FORWARD ? "ADD" : "MUL");
          expect_backends_agree(f, ccv_nnc_no_hint, {a, b}, {ys}, dt, kOpt, tol, s.format);
          T g = view ? T::view(dt, ys, s.format) : T(dt, ys, s.format);
          fill_uniform(g, rng);
          ccv_nnc_cmd_t back = f;
          back.cmd = id | 1;
          // Sums of up to ~4000 float terms: 1e-5 relative to the largest.
          expect_backends_agree(back, ccv_nnc_no_hint, {g, a, b}, {s.a, s.b}, dt, kOpt, dt == CCV_32F ? 2e-5 : 1e-12,
                                s.format);
          // One gradient at a time, a and b left off where not needed.
          if (id == CCV_NNC_ADD_FORWARD)
            expect_backends_agree(back, ccv_nnc_no_hint, {g}, {{}, s.b}, dt, kOpt, 2e-5, s.format);
        }
}

// Outputs beyond 8 MiB take the non-temporal-store loops: every operand mode,
// an output that starts off a 32-byte boundary, and an odd tail.
TEST_F(BlasElementwiseTest, LargeOutputsWithStreamingStores) {
  const int n = (1 << 21) + 13;
  T a(CCV_32F, {n}), b(CCV_32F, {n}), s(CCV_32F, {1});
  // Multiples of 1/64 in [-8, 8] (filled through the raw pointers: 2M elements): sums and products are exact in float.
  float* ap = a.get()->data.f32;
  float* bp = b.get()->data.f32;
  for (int i = 0; i < n; i++)
    ap[i] = static_cast<float>((i * 37 % 1025) - 512) / 64, bp[i] = static_cast<float>((i * 91 % 1023) - 511) / 64;
  s.get()->data.f32[0] = 0.375f;
  // A 1-d view one element in: y's data is 4 bytes past an aligned address; its elements are contiguous.
  T y = T::view(CCV_32F, {n}, CCV_TENSOR_FORMAT_NHWC, 2);
  const float* yp = y.get()->data.f32;
  struct Run {
    std::vector<ccv_nnc_tensor_t*> in;
    bool mul;
  };
  for (const Run& r : {Run{{a, b}, false}, Run{{a, s}, false}, Run{{s, b}, true}, Run{{a, b}, true}}) {
    const ccv_nnc_cmd_t c = r.mul ? blas(CCV_NNC_MUL_FORWARD, 1, 0, kOpt) : blas(CCV_NNC_ADD_FORWARD, 1, 1, kOpt);
    ASSERT_EQ(run(c, r.in, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    const bool sa = r.in[0] == s.get(), sb = r.in[1] == s.get();
    for (int i = 0; i < n; i++) {
      const float av = sa ? 0.375f : ap[i], bv = sb ? 0.375f : bp[i];
      const float want = r.mul ? av * bv : av + bv;
      if (yp[i] != want) {
        ADD_FAILURE() << (r.mul ? "MUL" : "ADD") << " element " << i << ": " << yp[i] << " != " << want;
        break;
      }
    }
  }
  EXPECT_TRUE(y.guard_intact());
  // With scales, in place: a = 0.5 a - 2 a = -1.5 a (exact here).
  std::vector<float> want(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) want[i] = -1.5f * ap[i];
  ASSERT_EQ(run(blas(CCV_NNC_ADD_FORWARD, 0.5f, -2, kOpt), {a, a}, {a}), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < n; i++)
    if (ap[i] != want[i]) {
      ADD_FAILURE() << "in-place ADD element " << i;
      break;
    }
}

// Gradients written through strided views (partial sums then a strided store).
TEST_F(BlasElementwiseTest, BackwardIntoViews) {
  std::mt19937 rng(25);
  for (uint32_t backend : {kRef, kOpt}) {
    T g(CCV_32F, {6, 5, 4}), a(CCV_32F, {6, 5, 4}), b(CCV_32F, {5, 1});
    fill_random(g, rng), fill_random(a, rng), fill_random(b, rng);
    T da = T::view(CCV_32F, {6, 5, 4}), db = T::view(CCV_32F, {5, 1});
    ASSERT_EQ(run(blas(CCV_NNC_MUL_BACKWARD, 2, 0, backend), {g, a, b}, {da, db}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 5; j++)
        for (int k = 0; k < 4; k++) {
          const size_t l = (i * 5 + j) * 4 + k;
          ASSERT_EQ(da.get(l), 2 * g.get(l) * b.get(j));
        }
    for (int j = 0; j < 5; j++) {
      double s = 0;
      for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++) s += g.get((i * 5 + j) * 4 + k) * a.get((i * 5 + j) * 4 + k);
      EXPECT_NEAR(db.get(j), 2 * s, 1e-5 * std::max(1.0, std::fabs(s)));
    }
    EXPECT_TRUE(da.guard_intact());
    EXPECT_TRUE(db.guard_intact());
  }
}

TEST_F(BlasElementwiseTest, InPlaceAndEasyMacros) {
  std::mt19937 rng(26);
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_32F, {9, 33}), b(CCV_32F, {33});
    fill_uniform(a, rng), fill_uniform(b, rng);
    std::vector<double> want(a.count());
    for (size_t i = 0; i < a.count(); i++) want[i] = static_cast<float>(a.get(i) + b.get(i % 33));
    ASSERT_EQ(run(blas(CCV_NNC_ADD_FORWARD, 1, 1, backend), {a, b}, {a}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < a.count(); i++) ASSERT_EQ(a.get(i), want[i]);
  }
  // libnnc: the output shares memory with the input at its own position only
  // (y with a, never with b alone); the backwards have no pairs.
  for (uint32_t id : {CCV_NNC_ADD_FORWARD, CCV_NNC_MUL_FORWARD}) {
    EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(id), 0, 2, 0, 1));
    EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(command(id), 1, 2, 0, 1));
  }
  EXPECT_TRUE(ccv_nnc_cmd_allow_inplace(command(CCV_NNC_SCALAR_MUL_FORWARD), 0, 1, 0, 1));
  for (uint32_t id : {CCV_NNC_ADD_BACKWARD, CCV_NNC_MUL_BACKWARD, CCV_NNC_SCALAR_MUL_BACKWARD})
    for (int i = 0; i < 3; i++) EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(command(id), i, 4, 0, 2)) << id << " " << i;
  for (uint32_t id : {CCV_NNC_ADD_FORWARD, CCV_NNC_MUL_FORWARD, CCV_NNC_SCALAR_MUL_FORWARD}) {
    EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(command(id), 0, 2, 0, 1));
    EXPECT_FALSE(ccv_nnc_cmd_attr(command(id), CCV_NNC_CMD_ATTR_NULL_IS_ONES));
    EXPECT_TRUE(ccv_nnc_cmd_attr(command(id | 1), CCV_NNC_CMD_ATTR_NULL_IS_ONES));
  }
  ccv_nnc_cmd_t c[6];
  blas_easy_commands(0.5f, 2, c);
  EXPECT_EQ(c[0].cmd, static_cast<uint32_t>(CCV_NNC_ADD_FORWARD));
  EXPECT_EQ(c[0].info.blas.a[0], 0.5f);
  EXPECT_EQ(c[1].info.blas.a[1], 2.0f);
  EXPECT_EQ(c[3].cmd, static_cast<uint32_t>(CCV_NNC_MUL_BACKWARD));
  EXPECT_EQ(c[4].cmd, static_cast<uint32_t>(CCV_NNC_SCALAR_MUL_FORWARD));
  EXPECT_EQ(c[5].info.blas.a[0], 0.5f);
  float x[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {10, 20, 30}, y[6];
  ASSERT_EQ(blas_easy_bias_add(x, bias, y, 2, 3), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[6] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; i++) EXPECT_EQ(y[i], want[i]);
}

TEST_F(BlasElementwiseTest, ShapesAndBitmasks) {
  ccv_nnc_tensor_param_t in[2] = {param(CCV_32F, {3, 1}), param(CCV_32F, {2, 1, 4})}, out[2];
  std::memset(out, 0, sizeof(out));
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_ADD_FORWARD), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].dim[0], 2);
  EXPECT_EQ(out[0].dim[1], 3);
  EXPECT_EQ(out[0].dim[2], 4);
  EXPECT_EQ(out[0].dim[3], 0);
  ccv_nnc_tensor_param_t bin[3] = {param(CCV_32F, {2, 3, 4}), param(CCV_32F, {3, 1}), param(CCV_32F, {4})};
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_MUL_BACKWARD), bin, 3, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(out[0].dim[0], 3);
  EXPECT_EQ(out[0].dim[1], 1);
  EXPECT_EQ(out[1].dim[0], 4);
  const uint64_t g = 1, ga = 0b011, gb = 0b101, one = 1, two = 2, three = 3;
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_BACKWARD), 4, 2, &g, 1, &three, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_BACKWARD), 4, 2, &gb, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_BACKWARD), 4, 2, &gb, 1, &two, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_BACKWARD), 4, 2, &ga, 1, &two, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_SCALAR_MUL_BACKWARD), 3, 1, &g, 1, &one, 1));
  // libnnc's exact patterns: MUL's both-gradients case reads g, a and b; no
  // output bits beyond those named; forward needs every input.
  const uint64_t gab = 0b111, four = 4, none = 0, ab = 3, a_only = 1;
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_BACKWARD), 4, 2, &ga, 1, &three, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_BACKWARD), 4, 2, &gab, 1, &three, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_BACKWARD), 4, 3, &g, 1, &four, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_BACKWARD), 4, 2, &none, 1, &one, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_BACKWARD), 4, 2, &g, 1, &two, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_FORWARD), 2, 1, &ab, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_ADD_FORWARD), 2, 1, &a_only, 1, &one, 1));
  EXPECT_FALSE(ccv_nnc_cmd_bitmask(command(CCV_NNC_MUL_FORWARD), 2, 1, &ab, 1, &three, 1));
  EXPECT_TRUE(ccv_nnc_cmd_bitmask(command(CCV_NNC_SCALAR_MUL_FORWARD), 1, 1, &a_only, 1, &one, 1));
  // y takes a's type and format (libnnc), whichever operand has more dimensions.
  ccv_nnc_tensor_param_t mixed[2] = {param(CCV_16F, {3}), param(CCV_32F, {2, 3})};
  mixed[1].format = CCV_TENSOR_FORMAT_NCHW;
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_ADD_FORWARD), mixed, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(out[0].datatype, CCV_16F);
  EXPECT_EQ(out[0].format, CCV_TENSOR_FORMAT_NHWC);
  EXPECT_TRUE(out[0].dim[0] == 2 && out[0].dim[1] == 3 && out[0].dim[2] == 0);
}

// CCV_NNC_CMD_ATTR_NULL_IS_ONES: a NULL g reads as ones of the shape every
// other tensor broadcasts to; the same results as with a tensor of ones.
TEST_F(BlasElementwiseTest, NullGradientReadsAsOnes) {
  std::mt19937 rng(40);
  for (uint32_t backend : {kRef, kOpt}) {
    T a(CCV_32F, {3, 4}), b(CCV_32F, {4}), ones(CCV_32F, {3, 4});
    fill_uniform(a, rng), fill_uniform(b, rng);
    for (size_t i = 0; i < ones.count(); i++) ones.set(i, 1);
    for (uint32_t id : {CCV_NNC_ADD_BACKWARD, CCV_NNC_MUL_BACKWARD}) {
      T da0(CCV_32F, {3, 4}), db0(CCV_32F, {4}), da1(CCV_32F, {3, 4}), db1(CCV_32F, {4});
      ASSERT_EQ(run(blas(id, 0.5f, 2, backend), {ones, a, b}, {da0, db0}), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(run(blas(id, 0.5f, 2, backend), {nullptr, a, b}, {da1, db1}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      EXPECT_EQ(max_rel_diff(da1, da0), 0) << id;
      EXPECT_EQ(max_rel_diff(db1, db0), 0) << id;
    }
    // ADD: da = p, db = q * 3 (summed over the 3 rows b was broadcast along).
    T da(CCV_32F, {3, 4}), db(CCV_32F, {4});
    ASSERT_EQ(run(blas(CCV_NNC_ADD_BACKWARD, 0.5f, 2, backend), {nullptr}, {da, db}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (size_t i = 0; i < 12; i++) EXPECT_EQ(da.get(i), 0.5);
    for (size_t i = 0; i < 4; i++) EXPECT_EQ(db.get(i), 6);
    T dx(CCV_32F, {5});
    ASSERT_EQ(run(blas(CCV_NNC_SCALAR_MUL_BACKWARD, 3, 0, backend), {nullptr}, {dx}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < 5; i++) EXPECT_EQ(dx.get(i), 3);
  }
}

TEST_F(BlasElementwiseTest, BadInputIsAnErrorWithAMessage) {
  T a(CCV_32F, {3, 4}), b4(CCV_32F, {4}), b3(CCV_32F, {3}), y(CCV_32F, {3, 4}), y43(CCV_32F, {4, 3}), d64(CCV_64F, {4}),
      i32(CCV_32S, {3, 4}), big(CCV_32F, {2, 3, 4});
  struct Bad {
    uint32_t cmd;
    std::vector<ccv_nnc_tensor_t*> in, out;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {CCV_NNC_ADD_FORWARD, {a, b3}, {y}, "do not broadcast"},
      {CCV_NNC_ADD_FORWARD, {a, b4}, {y43}, "broadcast to 3x4 but y is 4x3"},
      {CCV_NNC_ADD_FORWARD, {a}, {y}, "takes inputs |a|b|"},
      {CCV_NNC_ADD_FORWARD, {a, nullptr}, {y}, "input 1 is NULL"},
      {CCV_NNC_MUL_FORWARD, {a, d64}, {y}, "one data type"},
      {CCV_NNC_MUL_FORWARD, {i32, i32}, {i32}, "32S"},
      {CCV_NNC_MUL_FORWARD, {a, b4}, {y, y}, "one output"},
      {CCV_NNC_SCALAR_MUL_FORWARD, {a}, {y43}, "must match"},
      {CCV_NNC_SCALAR_MUL_FORWARD, {a, a}, {y}, "takes inputs |x|"},
      {CCV_NNC_ADD_BACKWARD, {nullptr, a, b3}, {y, b3}, "g (input 0) is NULL (read as ones)"},
      {CCV_NNC_ADD_BACKWARD, {y, a, b4}, {y, b3}, "does not broadcast to g"},
      {CCV_NNC_ADD_BACKWARD, {y, a, b4}, {y, big}, "does not broadcast to g"},
      {CCV_NNC_ADD_BACKWARD, {y, a, b4}, {nullptr, y}, "they must match"},
      {CCV_NNC_ADD_BACKWARD, {y}, {nullptr, nullptr}, "every output is NULL"},
      {CCV_NNC_MUL_BACKWARD, {y, a, nullptr}, {y, nullptr}, "da needs b (input 2), which is NULL"},
      {CCV_NNC_MUL_BACKWARD, {y, nullptr, b4}, {nullptr, b4}, "db needs a (input 1), which is NULL"},
      {CCV_NNC_MUL_BACKWARD, {y}, {y}, "da needs b (input 2), which is missing"},
      {CCV_NNC_MUL_BACKWARD, {y, a, b4, y, y}, {y}, "got 5 inputs"},
      {CCV_NNC_SCALAR_MUL_BACKWARD, {y, a, y}, {y, y}, "got 2 outputs"},
      {CCV_NNC_SCALAR_MUL_BACKWARD, {y}, {y43}, "must match"},
  };
  for (const Bad& t : bad)
    for (uint32_t backend : {0u, kRef, kOpt}) {
      EXPECT_EQ(run(blas(t.cmd, 1, 1, backend), t.in, t.out), CCV_NNC_EXEC_INVALID) << t.needle;
      EXPECT_TRUE(message_has(t.needle)) << "wanted \"" << t.needle << "\", got: " << ccv_nnc_error_message();
    }
}

}  // namespace
