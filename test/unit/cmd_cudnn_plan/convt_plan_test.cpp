// cudnn_plan's CONVOLUTION_TRANSPOSE plans on the CPU, as cudnn_plan_test.cpp
// does for the convolution: loops here follow cuDNN's documented definitions
// of cudnnConvolutionBackwardData (NNC's forward), cudnnConvolutionForward
// (NNC's dx) and cudnnConvolutionBackwardFilter (NNC's dw) — NCHW-ordered
// dims and element strides, a KCRS filter stored KCRS or KRSC, one pad on
// both sides, dilation, groups — over the plan's numbers and the tensors' own
// memory, and must reproduce CPU_REF's CONVOLUTION_TRANSPOSE. A wrong role
// (x for y), filter order, pad or group count reads other elements and fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/common/cudnn_plan.hpp"
#include "core/error.hpp"
#include "cudnn_replay.hpp"

using namespace cmdtest;
using namespace cudnn_replay;
namespace cp = nnc::cudnn_plan;

namespace {

class CudnnPlanConvT : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// x: N, H, W, C; y: N, OH, OW, K; w: C, KH, KW, K/G (NHWC) or C, K/G, KH, KW (NCHW).
using Case = nnc_test_conv::ConvCase<true>;

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    Case a{2, 5, 7, 3, 4, 3, 3};  // odd sizes, pad 1
    a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    Case b{2, 4, 3, 6, 4, 2, 2};  // the U-Net up-sampler: 2x2, stride 2, groups 2
    b.SH = b.SW = 2, b.G = 2, b.format = f;
    cs.push_back(b);
    Case c{1, 5, 4, 4, 8, 3, 2};  // unbatched, groups 4, stride 2x3, dilation 2x1, output_padding 1, no bias
    c.batched = false, c.G = 4, c.bias = false, c.SH = 2, c.SW = 3, c.DH = 2, c.OP = 1, c.format = f;
    c.PT = c.PB = 1;
    cs.push_back(c);
    Case d{2, 4, 5, 5, 3, 3, 3};  // views, stride 2, pad 1, output_padding 1 (PyTorch's usual doubling)
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.OP = 1, d.views = true, d.format = f;
    cs.push_back(d);
    Case e{2, 3, 4, 3, 2, 3, 3};  // unequal pads that still map: begin 2, end 1 (with stride 2)
    e.SH = e.SW = 2, e.PT = e.PL = 2, e.PB = e.PR = 1, e.format = f;
    cs.push_back(e);
  }
  return cs;
}

// NNC's x and y through the plan: conv.y describes x, conv.x describes y (or g).
TEST_F(CudnnPlanConvT, ForwardIsCudnnBackwardData) {
  std::mt19937 rng(31);
  for (const Case& c : cases()) {
    SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " N" << c.N << " " << c.H << "x" << c.W
                                    << " C" << c.C << " K" << c.K << " G" << c.G << " OP" << c.OP
                                    << (c.views ? " views" : ""));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T b(CCV_32F, {c.K}), y = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
    std::vector<ccv_nnc_tensor_t*> in = {x, w};
    if (c.bias) in.push_back(b);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), in, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::ConvTranspose p;
    std::string why;
    ASSERT_TRUE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, w,
                                           c.bias ? b.get() : nullptr, y, &p, &why))
        << why;
    const cp::Conv& q = p.conv;
    EXPECT_EQ(q.datatype, CCV_32F);
    EXPECT_EQ(q.w.dim[0], c.C);
    EXPECT_EQ(q.w.dim[1], c.K / c.G);
    EXPECT_EQ(q.w.dim[2], c.KH);
    EXPECT_EQ(q.w.dim[3], c.KW);
    EXPECT_EQ(q.w.nhwc, c.format == NHWC);
    EXPECT_EQ(q.groups, c.G);
    EXPECT_EQ(q.has_bias, c.bias);
    EXPECT_EQ(q.x.dim[1], c.K);
    EXPECT_EQ(q.y.dim[1], c.C);
    // cuDNN checks dy (NNC's x) against its forward extent of dx (NNC's y).
    ASSERT_EQ(q.y.dim[2], cudnn_out(q.x.dim[2], q.pad[0], q.w.dim[2], q.dilation[0], q.stride[0]));
    ASSERT_EQ(q.y.dim[3], cudnn_out(q.x.dim[3], q.pad[1], q.w.dim[3], q.dilation[1], q.stride[1]));
    // cudnnConvolutionBackwardData: dx[n, c, ih, iw] = sum over the filters f of c's group and the taps where
    // oh * stride - pad + r * dilation = ih of w[f, c mod Cg, r, s] * dy[n, f, oh, ow]; then cudnnAddTensor's bias.
    std::vector<double> e(static_cast<size_t>(q.x.dim[0]) * q.x.dim[1] * q.x.dim[2] * q.x.dim[3], 0.0);
    auto E = [&](int n, int ch, int h, int ww) -> double& {
      return e[((static_cast<size_t>(n) * q.x.dim[1] + ch) * q.x.dim[2] + h) * q.x.dim[3] + ww];
    };
    for_each_tap(q, [&](int n, int f, int oh, int ow, int ch, int ci, int r, int s, int ih, int iw) {
      E(n, ch, ih, iw) += static_cast<double>(at(x, q.y, n, f, oh, ow)) * wat(w, q.w, f, ci, r, s);
    });
    double worst = 0;
    for (int n = 0; n < q.x.dim[0]; n++)
      for (int k = 0; k < q.x.dim[1]; k++)
        for (int h = 0; h < q.x.dim[2]; h++)
          for (int ww = 0; ww < q.x.dim[3]; ww++) {
            const double want = E(n, k, h, ww) + (q.has_bias ? b.get()->data.f32[k * q.bias.stride[1]] : 0.0);
            worst = std::max(worst, std::fabs(want - at(y, q.x, n, k, h, ww)));
          }
    EXPECT_LE(worst, 1e-4);
  }
}

TEST_F(CudnnPlanConvT, BackwardIsCudnnForwardAndBackwardFilter) {
  std::mt19937 rng(37);
  for (const Case& c : cases()) {
    for (int mask = 1; mask < 8; mask++) {
      SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " N" << c.N << " " << c.H << "x" << c.W
                                      << " G" << c.G << " OP" << c.OP << " outputs mask " << mask);
      const bool want_dx = mask & 1, want_dw = mask & 2, want_db = mask & 4;
      T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
      T g = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
      T dx = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), dw(CCV_32F, c.w_shape(), c.format), db(CCV_32F, {c.K});
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
      std::vector<ccv_nnc_tensor_t*> in = {g, want_dw ? x.get() : nullptr, want_dx ? w.get() : nullptr};
      const std::vector<ccv_nnc_tensor_t*> out = {want_dx ? dx.get() : nullptr, want_dw ? dw.get() : nullptr,
                                                  want_db ? db.get() : nullptr};
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD), c.hint(), in, out), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      cp::ConvTranspose p;
      std::string why;
      ASSERT_TRUE(cp::conv_transpose_backward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD), c.hint(), in.data(), 3,
                                              out.data(), 3, &p, &why))
          << why;
      EXPECT_EQ(p.dx, want_dx);
      EXPECT_EQ(p.dw, want_dw);
      EXPECT_EQ(p.dbias, want_db);
      EXPECT_EQ(p.bias_only, !want_dx && !want_dw);
      const cp::Tensor4& gd = p.conv.x;  // g: the convolution's input
      if (want_db) expect_bias_gradient(g, gd, db, p.conv.bias);
      if (p.bias_only) continue;
      const cp::Conv& q = p.conv;
      const int Cg = q.w.dim[1];
      const int F = q.w.dim[0];  // filters: NNC's C
      ASSERT_EQ(q.y.dim[1], F);  // the taps below run over q.y's channels
      // cudnnConvolutionForward (x = g, y = dx) and cudnnConvolutionBackwardFilter (x = g, dy = NNC's x).
      std::vector<double> edx(static_cast<size_t>(q.y.dim[0]) * F * q.y.dim[2] * q.y.dim[3], 0.0),
          edw(static_cast<size_t>(F) * Cg * q.w.dim[2] * q.w.dim[3], 0.0);
      for_each_tap(q, [&](int n, int f, int oh, int ow, int ch, int ci, int r, int s, int ih, int iw) {
        const double gv = at(g, q.x, n, ch, ih, iw);
        if (want_dx)
          edx[((static_cast<size_t>(n) * F + f) * q.y.dim[2] + oh) * q.y.dim[3] + ow] += gv * wat(w, q.w, f, ci, r, s);
        if (want_dw)
          edw[((static_cast<size_t>(f) * Cg + ci) * q.w.dim[2] + r) * q.w.dim[3] + s] += gv * at(x, q.y, n, f, oh, ow);
      });
      double worst = 0;
      if (want_dx)
        for (int n = 0; n < q.y.dim[0]; n++)
          for (int f = 0; f < F; f++)
            for (int h = 0; h < q.y.dim[2]; h++)
              for (int ww = 0; ww < q.y.dim[3]; ww++)
                worst = std::max(worst,
                                 std::fabs(edx[((static_cast<size_t>(n) * F + f) * q.y.dim[2] + h) * q.y.dim[3] + ww] -
                                           at(dx, p.dx_desc, n, f, h, ww)));
      if (want_dw)
        for (int f = 0; f < F; f++)
          for (int ci = 0; ci < Cg; ci++)
            for (int r = 0; r < q.w.dim[2]; r++)
              for (int s = 0; s < q.w.dim[3]; s++)
                worst = std::max(worst,
                                 std::fabs(edw[((static_cast<size_t>(f) * Cg + ci) * q.w.dim[2] + r) * q.w.dim[3] + s] -
                                           wat(dw, q.w, f, ci, r, s)));
      EXPECT_LE(worst, 1e-3);
    }
  }
}

TEST_F(CudnnPlanConvT, HalfPlansAndRefusals) {
  Case c{2, 5, 5, 3, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  std::string why;
  cp::ConvTranspose p;
  {
    // 16F: the same numbers, datatype 16F.
    T x(CCV_16F, c.img(2, 5, 5, 3), NHWC), w(CCV_16F, c.w_shape(), NHWC), y(CCV_16F, c.img(2, c.OH(), c.OW(), 4), NHWC);
    ASSERT_TRUE(
        cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, w, nullptr, y, &p, &why))
        << why;
    EXPECT_EQ(p.conv.datatype, CCV_16F);
    EXPECT_EQ(p.conv.pad[0], 1);
    // 16BF likewise, with the 32F plan's numbers.
    T xb(CCV_16BF, c.img(2, 5, 5, 3), NHWC), wb(CCV_16BF, c.w_shape(), NHWC),
        yb(CCV_16BF, c.img(2, c.OH(), c.OW(), 4), NHWC);
    T xf(CCV_32F, c.img(2, 5, 5, 3), NHWC), wf(CCV_32F, c.w_shape(), NHWC),
        yf(CCV_32F, c.img(2, c.OH(), c.OW(), 4), NHWC);
    cp::ConvTranspose pb, pf;
    ASSERT_TRUE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), xb, wb, nullptr, yb,
                                           &pb, &why))
        << why;
    ASSERT_TRUE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), xf, wf, nullptr, yf,
                                           &pf, &why))
        << why;
    EXPECT_EQ(pb.conv.datatype, CCV_16BF);
    for (int i = 0; i < 4; i++) {
      EXPECT_EQ(pb.conv.x.dim[i], pf.conv.x.dim[i]);
      EXPECT_EQ(pb.conv.x.stride[i], pf.conv.x.stride[i]);
      EXPECT_EQ(pb.conv.y.dim[i], pf.conv.y.dim[i]);
      EXPECT_EQ(pb.conv.y.stride[i], pf.conv.y.stride[i]);
      EXPECT_EQ(pb.conv.w.dim[i], pf.conv.w.dim[i]);
    }
    EXPECT_EQ(pb.conv.pad[0], pf.conv.pad[0]);
    EXPECT_EQ(pb.conv.pad[1], pf.conv.pad[1]);
    // 16F x with 32F w: a refusal (CPU_REF would throw; the family's check comes first here).
    T w32(CCV_32F, c.w_shape(), NHWC);
    EXPECT_FALSE(cp::conv_transpose_forward_tensors(x, w32, nullptr, y, &why));
    EXPECT_NE(why.find("one type"), std::string::npos) << why;
  }
  T x(CCV_32F, c.img(2, 5, 5, 3), NHWC), w(CCV_32F, c.w_shape(), NHWC);
  {
    // 64F: refused (cuDNN's double convolutions are not wired).
    T xd(CCV_64F, c.img(2, 5, 5, 3), NHWC), wd(CCV_64F, c.w_shape(), NHWC), yd(CCV_64F, c.img(2, 5, 5, 4), NHWC);
    EXPECT_FALSE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), xd, wd, nullptr, yd,
                                            &p, &why));
    EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
  }
  {
    // Padding at the start only (2, 0) with stride 1: NNC's y is 5 - 2 = 3 rows short of cuDNN's reading.
    Case a = c;
    a.PT = a.PL = 2, a.PB = a.PR = 0;
    T y(CCV_32F, a.img(2, a.OH(), a.OW(), 4), NHWC);
    EXPECT_FALSE(
        cp::conv_transpose_forward(a.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), a.hint(), x, w, nullptr, y, &p, &why));
    EXPECT_NE(why.find("pads both sides alike"), std::string::npos) << why;
    EXPECT_TRUE(cp::conv_transpose_forward_tensors(x, w, nullptr, y, nullptr));
  }
  T y(CCV_32F, c.img(2, 5, 5, 4), NHWC);
  {
    T wn(CCV_32F, {3, 4, 3, 3}, NCHW);  // NCHW weights beside NHWC data
    EXPECT_FALSE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, wn, nullptr, y,
                                            &p, &why));
    EXPECT_NE(why.find("weights in x's format"), std::string::npos) << why;
  }
  {
    T wv = T::view(CCV_32F, c.w_shape(), NHWC);
    EXPECT_FALSE(cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, wv, nullptr, y,
                                            &p, &why));
    EXPECT_NE(why.find("packed"), std::string::npos) << why;
    const std::vector<ccv_nnc_tensor_t*> in = {y, x, w}, out = {nullptr, wv.get(), nullptr};
    EXPECT_FALSE(cp::conv_transpose_backward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD), c.hint(), in.data(), 3,
                                             out.data(), 3, &p, &why));
    EXPECT_FALSE(cp::conv_transpose_backward_tensors(in.data(), 3, out.data(), 3, nullptr));
  }
  // Bad shapes are errors, as on CPU_REF.
  T ybad(CCV_32F, c.img(2, 6, 5, 4), NHWC);
  EXPECT_THROW(
      cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, w, nullptr, ybad, &p, &why),
      nnc::Error);
  Case grp = c;
  grp.G = 2;  // 3 input channels in 2 groups
  EXPECT_THROW(
      cp::conv_transpose_forward(grp.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, w, nullptr, y, &p, &why),
      nnc::Error);
}

}  // namespace
