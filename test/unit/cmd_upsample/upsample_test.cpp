// UPSAMPLE against a reference written here (fp64), closed forms of the
// coordinate rules, finite differences, CPU_REF, and libnnc's contract.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" {
ccv_nnc_cmd_t nnc_test_upsample_forward(void);
int nnc_test_upsample_example(float y[16]);
}

using namespace cmdtest;

namespace {

class Upsample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW, CHWN = CCV_TENSOR_FORMAT_CHWN;
constexpr int NEAREST = CCV_NNC_UPSAMPLE_NEAREST, BILINEAR = CCV_NNC_UPSAMPLE_BILINEAR;
constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;

ccv_nnc_cmd_t up(uint32_t id, int type, int align, uint32_t backend = 0, float ws = 2, float hs = 2) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.upsample.type = type;
  p.upsample.width_scale = ws;
  p.upsample.height_scale = hs;
  p.upsample.align_corners = align;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

// The spatial axes by format and rank, as libnnc's tensor_auto lays them out.
int h_axis(size_t nd, int format) {
  if (nd == 2) return 0;
  if (nd == 3) return format == NHWC ? 0 : 1;
  return format == NCHW ? 2 : 1;
}

// Source coordinate of output position d (PyTorch's half-pixel rule, or
// corners aligned) and the two taps with weights.
void taps(int type, int align, int d, int in, int out, int* i0, int* i1, double* l) {
  if (type == NEAREST) {
    const double s =
        align ? (out > 1 ? std::round(d * double(in - 1) / (out - 1)) : 0) : std::floor((d + 0.5) * in / out);
    *i0 = *i1 = std::min(static_cast<int>(s), in - 1);
    *l = 0;
    return;
  }
  double s = align ? (out > 1 ? d * double(in - 1) / (out - 1) : 0) : (d + 0.5) * double(in) / out - 0.5;
  if (s < 0) s = 0;
  *i0 = std::min(static_cast<int>(s), in - 1);
  *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
  *l = *i1 == *i0 ? 0 : s - *i0;
}

// The reference forward, element by element in row-major order.
std::vector<double> reference(const T& x, const std::vector<int>& xd, const std::vector<int>& yd, int format, int type,
                              int align) {
  const int h = h_axis(xd.size(), format);
  size_t count = 1;
  for (int d : yd) count *= static_cast<size_t>(d);
  std::vector<double> y(count);
  std::vector<int> idx(yd.size());
  auto x_at = [&](std::vector<int> i) {
    size_t lin = 0;
    for (size_t d = 0; d < xd.size(); d++) lin = lin * xd[d] + i[d];
    return x.get(lin);
  };
  for (size_t lin = 0; lin < count; lin++) {
    size_t rem = lin;
    for (int i = static_cast<int>(yd.size()) - 1; i >= 0; i--) idx[i] = static_cast<int>(rem % yd[i]), rem /= yd[i];
    int a0, a1, b0, b1;
    double la, lb;
    taps(type, align, idx[h], xd[h], yd[h], &a0, &a1, &la);
    taps(type, align, idx[h + 1], xd[h + 1], yd[h + 1], &b0, &b1, &lb);
    auto v = [&](int r, int c) {
      std::vector<int> i = idx;
      i[h] = r, i[h + 1] = c;
      return x_at(i);
    };
    y[lin] = type == NEAREST ? v(a0, b0)
                             : (1 - la) * ((1 - lb) * v(a0, b0) + lb * v(a0, b1)) +
                                   la * ((1 - lb) * v(a1, b0) + lb * v(a1, b1));
  }
  return y;
}

struct UpCase {
  std::vector<int> x, y;
  int format;
};
const UpCase kCases[] = {
    {{2, 3, 4, 5}, {2, 6, 8, 5}, NHWC},  {{2, 3, 4, 5}, {2, 3, 7, 9}, NCHW}, {{4, 5, 3}, {8, 10, 3}, NHWC},
    {{3, 4, 5}, {3, 6, 7}, NCHW},        {{4, 5}, {9, 3}, NHWC},             // up in H, down in W
    {{2, 8, 8, 3}, {2, 3, 5, 3}, NHWC},  // down
    {{1, 1, 1, 2}, {1, 3, 4, 2}, NHWC},  // from one pixel
    {{3, 4, 5, 2}, {3, 8, 10, 2}, CHWN},
    {{2, 3, 4, 5}, {2, 3, 8, 10}, NCHW},  // exactly 2x, one channel a row (CPU_OPT's 2x loops)
    {{1, 1, 3, 1}, {1, 1, 6, 2}, NCHW},
    {{2, 3, 4, 5}, {2, 7, 8, 5}, NHWC},  // 2x across, not down: CPU_OPT's nearest 2x over channels
};

TEST_F(Upsample, ForwardMatchesReference) {
  std::mt19937 rng(401);
  int round = 0;
  for (uint32_t backend : {0u, REF, OPT})
    for (int dt : {CCV_32F, CCV_64F})
      for (const UpCase& c : kCases)
        for (int type : {NEAREST, BILINEAR})
          for (int align : {0, 1}) {
            const bool view = ++round % 3 == 0;
            T x = view ? T::view(dt, c.x, c.format) : T(dt, c.x, c.format);
            T y = view ? T::view(dt, c.y, c.format) : T(dt, c.y, c.format);
            fill_uniform(x, rng, -2, 2);
            ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, type, align, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
                << ccv_nnc_error_message();
            const std::vector<double> want = reference(x, c.x, c.y, c.format, type, align);
            const double tol = dt == CCV_32F ? 1e-6 : 1e-14;
            for (size_t i = 0; i < y.count(); i++)
              ASSERT_NEAR(y.get(i), want[i], tol) << "type " << type << " align " << align << " element " << i;
            EXPECT_TRUE(y.guard_intact());
          }
}

TEST_F(Upsample, CoordinateRulesInClosedForm) {
  // libnnc's header: for 0..1 without align_corners the output samples sit at
  // -0.25, 0.25, 0.75, 1.25 (clamped to the edge), with it at 0, 1/3, 2/3, 1.
  for (uint32_t backend : {REF, OPT}) {
    T x(CCV_64F, {1, 2}), y(CCV_64F, {1, 4});
    x.set(0, 0), x.set(1, 1);
    ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, BILINEAR, 0, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    const double half[4] = {0, 0.25, 0.75, 1};
    for (int i = 0; i < 4; i++) EXPECT_DOUBLE_EQ(y.get(i), half[i]) << i;
    ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, BILINEAR, 1, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < 4; i++) EXPECT_NEAR(y.get(i), i / 3.0, 1e-15) << i;
    ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, NEAREST, 0, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
    const double nearest[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) EXPECT_EQ(y.get(i), nearest[i]) << i;
  }
  float y[16];
  ASSERT_EQ(nnc_test_upsample_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const double axis[4] = {0, 0.25, 0.75, 1};
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++) EXPECT_NEAR(y[r * 4 + c], 2 * axis[r] + axis[c], 1e-6) << r << c;
}

TEST_F(Upsample, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(402);
  const UpCase cases[] = {{{1, 3, 2, 2}, {1, 5, 4, 2}, NHWC}, {{1, 2, 3, 2}, {1, 2, 6, 3}, NCHW},
                          {{4, 5}, {3, 7}, NHWC}, {{1, 2, 3, 2}, {1, 2, 6, 4}, NCHW}};
  for (uint32_t backend : {REF, OPT})
    for (const UpCase& c : cases)
      for (int type : {NEAREST, BILINEAR})
        for (int align : {0, 1}) {
          T x(CCV_64F, c.x, c.format);
          fill_uniform(x, rng);
          expect_gradients_match(up(CCV_NNC_UPSAMPLE_FORWARD, type, align, backend),
                                 up(CCV_NNC_UPSAMPLE_BACKWARD, type, align, backend), ccv_nnc_no_hint, {&x}, {c.y},
                                 {true}, rng, 1e-6, 1e-7, c.format);
        }
}

TEST_F(Upsample, OptAgreesWithRefOnOddViewsAndThreadedShapes) {
  const UpCase cases[] = {
      {{2, 5, 7, 3}, {2, 11, 13, 3}, NHWC},   {{2, 3, 5, 7}, {2, 3, 10, 15}, NCHW},
      {{2, 33, 35, 64}, {2, 66, 70, 64}, NHWC}, {{2, 16, 37, 41}, {2, 16, 74, 82}, NCHW},  // threaded
      {{1, 40, 40, 17}, {1, 17, 23, 17}, NHWC}, {{1, 17, 40, 40}, {1, 17, 23, 29}, NCHW},  // down
  };
  uint32_t seed = 410;
  for (const UpCase& c : cases)
    for (int dt : {CCV_32F, CCV_64F})
      for (int type : {NEAREST, BILINEAR})
        for (int align : {0, 1})
          for (int view : {0, 1}) {
            size_t n = 1;
            for (int d : c.y) n *= static_cast<size_t>(d);
            // The threaded sizes once per rule, in fp32 (CPU_REF is slow there).
            if (n > 100000 && (dt == CCV_64F || view != (type + align) % 2)) continue;
            std::mt19937 rng(seed++);
            T x = view ? T::view(dt, c.x, c.format, 1) : T(dt, c.x, c.format);
            T g = view ? T::view(dt, c.y, c.format, 1) : T(dt, c.y, c.format);
            fill_uniform(x, rng), fill_uniform(g, rng);
            const double tol = dt == CCV_32F ? 1e-5 : 1e-12;
            expect_backends_agree(up(CCV_NNC_UPSAMPLE_FORWARD, type, align), ccv_nnc_no_hint, {x}, {c.y}, dt, OPT, tol,
                                  c.format);
            expect_backends_agree(up(CCV_NNC_UPSAMPLE_BACKWARD, type, align), ccv_nnc_no_hint, {g, x}, {c.x}, dt, OPT,
                                  tol, c.format);
            // And into views of the outputs, whose guards stay intact.
            T yv = T::view(dt, c.y, c.format, 2), dxv = T::view(dt, c.x, c.format, 2);
            T yr(dt, c.y, c.format), dxr(dt, c.x, c.format);
            ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, type, align, OPT), {x}, {yv}), CCV_NNC_EXEC_SUCCESS);
            ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, type, align, REF), {x}, {yr}), CCV_NNC_EXEC_SUCCESS);
            ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_BACKWARD, type, align, OPT), {g}, {dxv}), CCV_NNC_EXEC_SUCCESS);
            ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_BACKWARD, type, align, REF), {g}, {dxr}), CCV_NNC_EXEC_SUCCESS);
            EXPECT_LE(max_rel_diff(yv, yr), tol);
            EXPECT_LE(max_rel_diff(dxv, dxr), tol);
            EXPECT_TRUE(yv.guard_intact());
            EXPECT_TRUE(dxv.guard_intact());
          }
}

TEST_F(Upsample, HalfPrecisionOnTheReferenceBackend) {
  std::mt19937 rng(403);
  for (int dt : {CCV_16F, CCV_16BF}) {
    const UpCase c = kCases[0];
    T x(dt, c.x, c.format), y(dt, c.y, c.format);
    fill_random(x, rng);
    ASSERT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, BILINEAR, 0), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const std::vector<double> want = reference(x, c.x, c.y, c.format, BILINEAR, 0);
    for (size_t i = 0; i < y.count(); i++)
      EXPECT_NEAR(y.get(i), want[i], (dt == CCV_16F ? 1e-3 : 8e-3) * std::max(1.0, std::fabs(want[i]))) << i;
  }
}

// libnnc's description file: tensor_auto per rank and format, the backward's
// shape from the gradient, bitmasks, no in-place pair.
TEST_F(Upsample, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  const ccv_nnc_cmd_t f = up(CCV_NNC_UPSAMPLE_FORWARD, BILINEAR, 0, 0, 2.0f, 1.5f);
  struct Rule {
    std::vector<int> in;
    int format;
    std::vector<int> out;
  };
  const Rule rules[] = {{{2, 5, 7, 3}, NHWC, {2, 8, 14, 3, 0}}, {{2, 3, 5, 7}, NCHW, {2, 3, 8, 14, 0}},
                        {{5, 7, 3}, NHWC, {8, 14, 3, 0, 0}},    {{3, 5, 7}, NCHW, {3, 8, 14, 0, 0}},
                        {{3, 5, 7}, CHWN, {3, 8, 14, 0, 0}},    {{3, 5, 7, 2}, CHWN, {3, 8, 14, 2, 0}},
                        {{5, 7}, NHWC, {8, 14, 0, 0, 0}},       {{5}, NHWC, {5, 0, 0, 0, 0}}};
  for (const Rule& r : rules) {
    ccv_nnc_tensor_param_t in = param(CCV_32F, r.in, r.format), out;
    ccv_nnc_hint_tensor_auto(f, &in, 1, ccv_nnc_no_hint, &out, 1);
    EXPECT_EQ(dims(out), r.out) << r.format << " " << r.in.size();
  }
  ccv_nnc_tensor_param_t bin[3] = {param(CCV_64F, {2, 10, 14, 3}), param(CCV_32F, {2, 5, 7, 3}),
                                   param(CCV_32F, {2, 10, 14, 3})},
                         out;
  ccv_nnc_hint_tensor_auto(up(CCV_NNC_UPSAMPLE_BACKWARD, BILINEAR, 0), bin, 3, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(dims(out), (std::vector<int>{2, 10, 14, 3, 0}));  // the gradient's, by libnnc's rule
  EXPECT_EQ(out.datatype, CCV_64F);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t b = up(CCV_NNC_UPSAMPLE_BACKWARD, BILINEAR, 0);
  EXPECT_TRUE(bm(f, 1, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 1, 1, 1, 0));
  EXPECT_TRUE(bm(b, 1, 1, 1, 1));
  EXPECT_TRUE(bm(b, 3, 7, 1, 1));
  EXPECT_TRUE(bm(b, 3, 5, 1, 1));
  EXPECT_FALSE(bm(b, 3, 6, 1, 1));
  EXPECT_FALSE(bm(b, 3, 7, 2, 3));
  for (const ccv_nnc_cmd_t& c : {f, b})
    for (int i = 0; i < 3; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 3, 0, 1));
    }
  const ccv_nnc_cmd_t e = nnc_test_upsample_forward();
  EXPECT_EQ(e.cmd, CCV_NNC_UPSAMPLE_FORWARD);
  EXPECT_EQ(e.info.upsample.type, BILINEAR);
  EXPECT_FLOAT_EQ(e.info.upsample.width_scale, 2);
  EXPECT_FLOAT_EQ(e.info.upsample.height_scale, 1.5f);
  EXPECT_EQ(e.info.upsample.align_corners, 1);
}

TEST_F(Upsample, BadInputFailsWithAMessage) {
  T x(CCV_32F, {2, 4, 5, 3}), y(CCV_32F, {2, 8, 10, 3}), yc(CCV_32F, {2, 8, 10, 4}), yd(CCV_64F, {2, 8, 10, 3});
  T yn(CCV_32F, {2, 8, 10, 3}, NCHW), y3(CCV_32F, {8, 10, 3});
  T x5(CCV_32F, {1, 2, 4, 5, 3}), y5(CCV_32F, {1, 2, 8, 10, 3});
  T x1(CCV_32F, {4}), y1(CCV_32F, {8}), xi(CCV_32S, {2, 4, 5, 3}), yi(CCV_32S, {2, 8, 10, 3});
  const ccv_nnc_cmd_t f = up(CCV_NNC_UPSAMPLE_FORWARD, BILINEAR, 0);
  EXPECT_EQ(run(f, {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {yc}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("spatial")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {yd}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {yn}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("NCHW")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {y3}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x5}, {y5}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2-d to 4-d")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x1}, {y1}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {xi}, {yi}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(up(CCV_NNC_UPSAMPLE_FORWARD, 5, 0), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("upsample.type")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, x}, {y}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t b = up(CCV_NNC_UPSAMPLE_BACKWARD, NEAREST, 0);
  EXPECT_EQ(run(b, {y, x, y}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {yc}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {nullptr, x}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y}, {x, x}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
