// CONVOLUTION_TRANSPOSE against a reference written here (fp64, the gather
// form: each output pixel collects the input pixels whose window reaches it),
// finite differences, CPU_REF, and libnnc's contract.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "unit/common/conv_case.hpp"

extern "C" {
ccv_nnc_cmd_t nnc_test_convt_forward(void);
int nnc_test_convt_example(float y[25], int dims[4]);
}

using namespace cmdtest;

namespace {

class ConvTranspose : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;
constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;

// N, H, W, C in; N, OH, OW, K out; weights C, KH, KW, K/G (NHWC) or C, K/G, KH, KW.
using Case = nnc_test_conv::ConvCase<true>;

// Element access by meaning (n, h, w, c) whatever the format.
double img_get(const T& t, const Case& c, int n, int h, int w, int ch) {
  return c.format == NHWC ? T::decode(t.at({n, h, w, ch}), t.datatype()) : T::decode(t.at({n, ch, h, w}), t.datatype());
}
double w_get(const T& t, const Case& c, int ci, int kh, int kw, int kk) {
  return c.format == NHWC ? T::decode(t.at({ci, kh, kw, kk}), t.datatype())
                          : T::decode(t.at({ci, kk, kh, kw}), t.datatype());
}

// Gather form: y[n, oh, ow, k] = b[k] + sum over kh, kw of the input pixel h
// with h * SH + kh * DH - PT = oh (if it exists), channels of k's group.
std::vector<double> reference(const Case& c, const T& x, const T& w, const T* b) {
  const int OH = c.OH(), OW = c.OW(), Kg = c.K / c.G, Cg = c.C / c.G;
  std::vector<double> y(static_cast<size_t>(c.N) * OH * OW * c.K);
  for (int n = 0; n < c.N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++)
        for (int k = 0; k < c.K; k++) {
          double s = b ? b->get(k) : 0;
          const int grp = k / Kg;
          for (int kh = 0; kh < c.KH; kh++) {
            const int th = oh + c.PT - kh * c.DH;
            if (th < 0 || th % c.SH) continue;
            const int h = th / c.SH;
            if (h >= c.H) continue;
            for (int kw = 0; kw < c.KW; kw++) {
              const int tw = ow + c.PL - kw * c.DW;
              if (tw < 0 || tw % c.SW) continue;
              const int ww = tw / c.SW;
              if (ww >= c.W) continue;
              for (int ci = grp * Cg; ci < (grp + 1) * Cg; ci++)
                s += img_get(x, c, n, h, ww, ci) * w_get(w, c, ci, kh, kw, k % Kg);
            }
          }
          y[((static_cast<size_t>(n) * OH + oh) * OW + ow) * c.K + k] = s;
        }
  return y;
}

const Case kCases[] = {
    {.N = 2, .H = 3, .W = 4, .C = 3, .K = 5, .KH = 3, .KW = 2},
    {.N = 1, .H = 4, .W = 3, .C = 4, .K = 6, .KH = 3, .KW = 3, .SH = 2, .SW = 3, .PT = 1, .PB = 1, .PL = 1, .PR = 2, .G = 2, .OP = 1},
    {.N = 2, .H = 3, .W = 3, .C = 2, .K = 3, .KH = 2, .KW = 3, .SH = 2, .SW = 1, .DH = 2, .DW = 3, .format = NCHW},
    {.N = 1, .H = 5, .W = 4, .C = 6, .K = 3, .KH = 3, .KW = 3, .SH = 3, .SW = 2, .PT = 2, .PB = 1, .G = 3, .OP = 1, .format = NCHW, .bias = false},
    {.N = 2, .H = 3, .W = 5, .C = 4, .K = 6, .KH = 2, .KW = 2, .SH = 2, .SW = 2},                  // tiles the output
    {.N = 1, .H = 3, .W = 3, .C = 2, .K = 2, .KH = 2, .KW = 2, .SH = 1, .SW = 1, .DH = 3, .DW = 3, .OP = 2},  // output_padding past the stride
};

TEST_F(ConvTranspose, ForwardMatchesReference) {
  uint32_t seed = 1800;
  for (const Case& c : kCases)
    for (uint32_t backend : {REF, OPT})
      for (int dt : {CCV_32F, CCV_64F}) {
        if (backend == OPT && dt == CCV_64F) continue;
        std::mt19937 rng(seed++);
        T x(dt, c.x_shape(), c.format), w(dt, c.w_shape(), c.format), b(dt, {c.K}), y(dt, c.y_shape(), c.format);
        fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
        std::vector<ccv_nnc_tensor_t*> in = {x, w};
        if (c.bias) in.push_back(b);
        ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, backend), c.hint(), in, {y}), CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        const std::vector<double> want = reference(c, x, w, c.bias ? &b : nullptr);
        const double tol = dt == CCV_32F ? 2e-5 : 1e-12;
        for (int n = 0; n < c.N; n++)
          for (int oh = 0; oh < c.OH(); oh++)
            for (int ow = 0; ow < c.OW(); ow++)
              for (int k = 0; k < c.K; k++) {
                const double v = want[((static_cast<size_t>(n) * c.OH() + oh) * c.OW() + ow) * c.K + k];
                ASSERT_NEAR(img_get(y, c, n, oh, ow, k), v, tol * std::max(1.0, std::fabs(v)))
                    << "case " << (&c - kCases) << " backend " << backend << " at " << n << "," << oh << "," << ow << "," << k;
              }
      }
}

TEST_F(ConvTranspose, HalfPrecisionOnTheReferenceBackend) {
  std::mt19937 rng(1820);
  for (int dt : {CCV_16F, CCV_16BF})
    for (const Case& c : {kCases[1], kCases[2]}) {
      T x(dt, c.x_shape(), c.format), w(dt, c.w_shape(), c.format), b(dt, {c.K}), y(dt, c.y_shape(), c.format);
      fill_random(x, rng), fill_random(w, rng), fill_random(b, rng);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, REF), c.hint(), {x, w, b}, {y}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const std::vector<double> want = reference(c, x, w, &b);
      const double tol = dt == CCV_16F ? 1e-3 : 8e-3;
      for (int n = 0; n < c.N; n++)
        for (int oh = 0; oh < c.OH(); oh++)
          for (int ow = 0; ow < c.OW(); ow++)
            for (int k = 0; k < c.K; k++) {
              const double v = want[((static_cast<size_t>(n) * c.OH() + oh) * c.OW() + ow) * c.K + k];
              ASSERT_NEAR(img_get(y, c, n, oh, ow, k), v, tol * std::max(1.0, std::fabs(v))) << dt;
            }
    }
}

TEST_F(ConvTranspose, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_convt_forward();
  EXPECT_EQ(f.cmd, CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD);
  EXPECT_EQ(f.info.convolution_transpose.count, 3);
  EXPECT_EQ(f.info.convolution_transpose.groups, 1);
  EXPECT_EQ(f.info.convolution_transpose.output_padding, 1);
  EXPECT_EQ(f.info.size.dim[0], 2);
  EXPECT_EQ(f.info.size.dim[2], 4);
  float y[25];
  int dims[4];
  ASSERT_EQ(nnc_test_convt_example(y, dims), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // (2 - 1) * 2 + 3 - 1 - 1 + 1 = 4; output row r gathers input rows {0}, {0, 1}, {1}, {1}.
  EXPECT_EQ(dims[0], 1); EXPECT_EQ(dims[1], 4); EXPECT_EQ(dims[2], 4); EXPECT_EQ(dims[3], 1);
  const std::vector<std::vector<int>> from = {{0}, {0, 1}, {1}, {1}};
  const double x[2][2] = {{1, 2}, {3, 4}};
  for (int r = 0; r < 4; r++)
    for (int q = 0; q < 4; q++) {
      double s = 0.5;
      for (int h : from[r])
        for (int w : from[q]) s += x[h][w];
      EXPECT_EQ(y[r * 4 + q], s) << r << "," << q;
    }
}

TEST_F(ConvTranspose, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(1801);
  for (uint32_t backend : {REF}) {
    for (const Case& c : kCases) {
      T x(CCV_64F, c.x_shape(), c.format), w(CCV_64F, c.w_shape(), c.format), b(CCV_64F, {c.K});
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
      std::vector<T*> in = {&x, &w};
      std::vector<bool> diff = {true, true};
      if (c.bias) in.push_back(&b), diff.push_back(true);
      expect_gradients_match(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, backend),
                             c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, backend), c.hint(), in, {c.y_shape()}, diff,
                             rng, 1e-6, 1e-7, c.format);
    }
  }
}

// The weights' own format tag picks their layout; bias, dx, dw land in views.
T make(int dt, const std::vector<int>& d, int format, bool view) {
  return view ? T::view(dt, d, format, 2) : T(dt, d, format);
}

TEST_F(ConvTranspose, OptAgreesWithRefOnOddViewsAndThreadedShapes) {
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  // Threaded sizes: a U-Net decoder step (2x2, stride 2) and a 3x3 / stride-2 one with padding.
  cases.push_back({.N = 2, .H = 16, .W = 16, .C = 64, .K = 32, .KH = 2, .KW = 2, .SH = 2, .SW = 2});
  cases.push_back({.N = 1, .H = 13, .W = 11, .C = 48, .K = 40, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .PT = 1, .PB = 1, .PL = 1, .PR = 1, .OP = 1, .format = NCHW});
  cases.push_back({.N = 1, .H = 17, .W = 19, .C = 32, .K = 24, .KH = 3, .KW = 3, .PT = 1, .PB = 1, .PL = 1, .PR = 1});
  uint32_t seed = 1810;
  for (const Case& c : cases)
    for (int view : {0, 1}) {
      std::mt19937 rng(seed++);
      const int dt = CCV_32F;
      T x = make(dt, c.x_shape(), c.format, view), w = make(dt, c.w_shape(), c.format, view),
        b = make(dt, {c.K}, NHWC, view);
      T g = make(dt, c.y_shape(), c.format, view);
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
      std::vector<ccv_nnc_tensor_t*> in = {x, w};
      if (c.bias) in.push_back(b);
      const double tol = 1e-4;
      expect_backends_agree(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, 0), c.hint(), in, {c.y_shape()}, dt, OPT, tol,
                            c.format);
      // Outputs into views too (the tiled path refuses them and takes the general one).
      T yv = T::view(dt, c.y_shape(), c.format, 2), yr(dt, c.y_shape(), c.format);
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, OPT), c.hint(), in, {yv}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, REF), c.hint(), in, {yr}), CCV_NNC_EXEC_SUCCESS);
      EXPECT_LE(max_rel_diff(yv, yr), tol);
      EXPECT_TRUE(yv.guard_intact());
      // Backward: dx, dw, dbias all together, then each pattern libnnc allows.
      for (int pattern = 0; pattern < 3; pattern++) {
        T dxr(dt, c.x_shape(), c.format), dwr(dt, c.w_shape(), c.format), dbr(dt, {c.K});
        T dxo = make(dt, c.x_shape(), c.format, view), dwo = make(dt, c.w_shape(), c.format, view),
          dbo = make(dt, {c.K}, NHWC, view);
        std::vector<ccv_nnc_tensor_t*> bin = {g, x, w};
        std::vector<ccv_nnc_tensor_t*> ro = {dxr, dwr, dbr}, oo = {dxo, dwo, dbo};
        if (pattern == 1) bin[2] = nullptr, ro[0] = oo[0] = nullptr;  // g, x -> dw, dbias
        if (pattern == 2) bin[1] = nullptr, ro[1] = oo[1] = nullptr;  // g, w -> dx, dbias
        ccv_nnc_cmd_t bw = c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, REF);
        ASSERT_EQ(run_hint(bw, c.hint(), bin, ro), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        bw.backend = OPT;
        ASSERT_EQ(run_hint(bw, c.hint(), bin, oo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        if (ro[0]) {
          EXPECT_LE(max_rel_diff(dxo, dxr), tol) << "dx, case " << c.C << "x" << c.K << " pattern " << pattern;
        }
        if (ro[1]) {
          EXPECT_LE(max_rel_diff(dwo, dwr), 1e-3) << "dw, case " << c.C << "x" << c.K << " pattern " << pattern;
        }
        EXPECT_LE(max_rel_diff(dbo, dbr), 1e-4) << "dbias";
        EXPECT_TRUE(dxo.guard_intact() && dwo.guard_intact() && dbo.guard_intact());
      }
    }
}

// libnnc's description file: tensor_auto (channels from the weights' C axis,
// extents (in - 1) * stride + dilated window - borders + output_padding), the
// convolution's bitmasks, backward shapes from the inputs, no in-place pair.
TEST_F(ConvTranspose, LibnncContract) {
  const Case c = kCases[1];
  for (int format : {NHWC, NCHW}) {
    Case f = c;
    f.format = format;
    ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, f.x_shape(), format), param(CCV_32F, f.w_shape(), format),
                                    param(CCV_32F, {f.K})};
    ccv_nnc_tensor_param_t out;
    ccv_nnc_hint_tensor_auto(f.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, 0), in, 3, f.hint(), &out, 1);
    const std::vector<int> want = f.y_shape();
    for (int i = 0; i < 4; i++) EXPECT_EQ(out.dim[i], want[i]) << i;
    EXPECT_EQ(out.dim[4], 0);
    EXPECT_EQ(out.format, format);
    // 3-d inputs keep their rank.
    ccv_nnc_tensor_param_t x3 = param(CCV_32F, {c.H, c.W, c.C});
    ccv_nnc_tensor_param_t in3[2] = {x3, param(CCV_32F, c.w_shape())};
    ccv_nnc_hint_tensor_auto(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, 0), in3, 2, c.hint(), &out, 1);
    EXPECT_EQ(out.dim[0], c.OH()); EXPECT_EQ(out.dim[1], c.OW()); EXPECT_EQ(out.dim[2], c.K); EXPECT_EQ(out.dim[3], 0);
    // Backward: dx like x, dw like w, dbias like bias.
    ccv_nnc_tensor_param_t bin[4] = {param(CCV_32F, f.y_shape(), format), in[0], in[1], in[2]};
    ccv_nnc_tensor_param_t bout[3];
    ccv_nnc_hint_tensor_auto(f.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, 0), bin, 4, f.hint(), bout, 3);
    for (int i = 0; i < 3; i++)
      for (int d = 0; d < 4; d++) EXPECT_EQ(bout[i].dim[d], bin[i + 1].dim[d]) << i << "," << d;
  }
  auto bm = [](uint32_t id, int ni, int no, uint64_t in, uint64_t out) {
    return ccv_nnc_cmd_bitmask(ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0), ni, no, &in, 1, &out, 1);
  };
  const uint32_t F = CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, B = CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD;
  EXPECT_TRUE(bm(F, 3, 1, 7, 1));
  EXPECT_TRUE(bm(F, 2, 1, 3, 1));
  EXPECT_FALSE(bm(F, 3, 1, 3, 1));  // three inputs, bias missing
  EXPECT_FALSE(bm(F, 2, 1, 1, 1));
  EXPECT_FALSE(bm(F, 2, 1, 3, 0));
  EXPECT_TRUE(bm(B, 3, 3, 7, 7));
  EXPECT_TRUE(bm(B, 3, 3, 7, 3));
  EXPECT_TRUE(bm(B, 3, 3, 3, 6));
  EXPECT_TRUE(bm(B, 3, 3, 3, 2));
  EXPECT_TRUE(bm(B, 3, 3, 5, 5));
  EXPECT_TRUE(bm(B, 3, 3, 5, 1));
  EXPECT_FALSE(bm(B, 3, 3, 3, 7));  // dx without w
  EXPECT_FALSE(bm(B, 3, 3, 5, 7));  // dw without x
  EXPECT_FALSE(bm(B, 3, 3, 6, 2));  // no g
  for (uint32_t id : {F, B})
    for (int i = 0; i < 3; i++) {
      const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0);
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(cmd, i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(cmd, i, 3, 0, 1));
    }
}

TEST_F(ConvTranspose, BadInputFailsWithAMessage) {
  const Case c = kCases[0];
  T x(CCV_32F, c.x_shape()), w(CCV_32F, c.w_shape()), b(CCV_32F, {c.K}), y(CCV_32F, c.y_shape());
  const ccv_nnc_cmd_t f = c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, 0);
  for (uint32_t backend : {REF, OPT}) {
    ccv_nnc_cmd_t fb = f;
    fb.backend = backend;
    EXPECT_EQ(run_hint(fb, c.hint(), {x, w, b}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  }
  T y_bad(CCV_32F, {c.N, c.OH() + 1, c.OW(), c.K});
  EXPECT_EQ(run_hint(f, c.hint(), {x, w, b}, {y_bad}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("give")) << ccv_nnc_error_message();
  T w_bad(CCV_32F, {c.C + 1, c.KH, c.KW, c.K});
  EXPECT_EQ(run_hint(f, c.hint(), {x, w_bad, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("input channels")) << ccv_nnc_error_message();
  ccv_nnc_cmd_t f2 = f;
  f2.info.convolution_transpose.count = c.K + 1;
  EXPECT_EQ(run_hint(f2, c.hint(), {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("count")) << ccv_nnc_error_message();
  T x64(CCV_64F, c.x_shape());
  EXPECT_EQ(run_hint(f, c.hint(), {x64, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("share one type")) << ccv_nnc_error_message();
  EXPECT_NE(run_hint(f, c.hint(), {x, nullptr, b}, {y}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_TRUE(message_has("required")) << ccv_nnc_error_message();
  EXPECT_NE(run_hint(f, c.hint(), {x, w, b}, {nullptr}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_cmd_t f3 = f;
  f3.info.convolution_transpose.output_padding = 1;  // stride 1: no room for it
  EXPECT_EQ(run_hint(f3, c.hint(), {x, w, b}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("output_padding")) << ccv_nnc_error_message();
  T b_bad(CCV_32F, {c.K + 2});
  EXPECT_EQ(run_hint(f, c.hint(), {x, w, b_bad}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("bias")) << ccv_nnc_error_message();
  const ccv_nnc_cmd_t bw = c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, 0);
  T dx(CCV_32F, c.x_shape()), dw_bad(CCV_32F, {c.C, c.KH, c.KW, c.K + 1});
  EXPECT_EQ(run_hint(bw, c.hint(), {y, x, w}, {dx, dw_bad}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("dw")) << ccv_nnc_error_message();
  EXPECT_EQ(run_hint(bw, c.hint(), {y, x, w}, {nullptr, nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("NULL")) << ccv_nnc_error_message();
}

}  // namespace
