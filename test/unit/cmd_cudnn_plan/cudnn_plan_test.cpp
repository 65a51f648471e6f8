// cudnn_plan (the GPU_CUDNN backends' descriptor numbers) on the CPU. Each
// plan is checked by what it means to cuDNN: a loop here follows cuDNN's
// documented definition of the operation (NCHW-ordered dims and element
// strides, a KCRS filter stored KCRS or KRSC, symmetric padding, dilation,
// groups, pooling modes) over the plan's numbers and the tensors' own memory,
// and must reproduce what CPU_REF computes for the NNC call. A wrong dim or
// stride order, filter layout, pad or group count makes it read other
// elements and fail. The refusals (what cuDNN cannot express) are checked too.
#include "cmd/common/cudnn_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "core/error.hpp"
#include "cudnn_replay.hpp"

using namespace cmdtest;
using namespace cudnn_replay;
namespace cp = nnc::cudnn_plan;

namespace {

class CudnnPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

using Case = nnc_test_conv::ConvCase<false>;

std::vector<Case> conv_cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    for (const Case& k : nnc_test_conv::odd_conv_cases(f)) cs.push_back(k);
    Case d{2, 9, 8, 5, 3, 3, 3};  // views of x and y (strided rows), stride 2
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.views = true, d.format = f;
    cs.push_back(d);
    Case e{2, 6, 6, 3, 4, 3, 3};  // unequal pads that keep cuDNN's extent: begin 1, end 0, stride 2
    e.SH = e.SW = 2, e.PT = e.PL = 1, e.format = f;
    cs.push_back(e);
    Case r{2, 28, 28, 1, 32, 5, 5};  // the reference network's first layer
    r.PT = r.PB = r.PL = r.PR = 2, r.format = f;
    cs.push_back(r);
  }
  return cs;
}

TEST_F(CudnnPlan, ConvolutionForwardMeansWhatCpuRefComputes) {
  std::mt19937 rng(19);
  for (const Case& c : conv_cases()) {
    SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " N" << c.N << " " << c.H << "x" << c.W
                                    << " C" << c.C << " K" << c.K << " G" << c.G << (c.views ? " views" : ""));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T b(CCV_32F, {c.K}), y = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng);
    std::vector<ccv_nnc_tensor_t*> in = {x, w};
    if (c.bias) in.push_back(b);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), in, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::Conv p;
    std::string why;
    ASSERT_TRUE(
        cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, c.bias ? b.get() : nullptr, y, &p, &why))
        << why;
    // The numbers themselves, where the test can state them.
    EXPECT_EQ(p.x.dim[0], c.N);
    EXPECT_EQ(p.x.dim[1], c.C);
    EXPECT_EQ(p.x.dim[2], c.H);
    EXPECT_EQ(p.x.dim[3], c.W);
    EXPECT_EQ(p.w.dim[0], c.K);
    EXPECT_EQ(p.w.dim[1], c.C / c.G);
    EXPECT_EQ(p.w.dim[2], c.KH);
    EXPECT_EQ(p.w.dim[3], c.KW);
    EXPECT_EQ(p.w.nhwc, c.format == NHWC);
    EXPECT_EQ(p.groups, c.G);
    EXPECT_EQ(p.has_bias, c.bias);
    if (!c.views && c.format == NHWC) {
      EXPECT_EQ(p.x.stride[1], 1);
      EXPECT_EQ(p.x.stride[3], c.C);
    }
    if (!c.views && c.format == NCHW) {
      EXPECT_EQ(p.x.stride[3], 1);
      EXPECT_EQ(p.x.stride[2], c.W);
    }
    // cuDNN checks y against its own extent formula.
    ASSERT_EQ(p.y.dim[2], cudnn_out(c.H, p.pad[0], c.KH, p.dilation[0], p.stride[0]));
    ASSERT_EQ(p.y.dim[3], cudnn_out(c.W, p.pad[1], c.KW, p.dilation[1], p.stride[1]));
    // cuDNN's cross-correlation over the plan, then the bias.
    std::vector<double> e(static_cast<size_t>(p.y.dim[0]) * p.y.dim[1] * p.y.dim[2] * p.y.dim[3], 0.0);
    auto E = [&](int n, int k, int oh, int ow) -> double& {
      return e[((static_cast<size_t>(n) * p.y.dim[1] + k) * p.y.dim[2] + oh) * p.y.dim[3] + ow];
    };
    for_each_tap(p, [&](int n, int k, int oh, int ow, int ch, int ci, int r, int q, int h, int ww) {
      E(n, k, oh, ow) += static_cast<double>(at(x, p.x, n, ch, h, ww)) * wat(w, p.w, k, ci, r, q);
    });
    double worst = 0;
    for (int n = 0; n < p.y.dim[0]; n++)
      for (int k = 0; k < p.y.dim[1]; k++)
        for (int oh = 0; oh < p.y.dim[2]; oh++)
          for (int ow = 0; ow < p.y.dim[3]; ow++) {
            const double s = (p.has_bias ? b.get()->data.f32[k * p.bias.stride[1]] : 0) + E(n, k, oh, ow);
            worst = std::max(worst, std::fabs(s - at(y, p.y, n, k, oh, ow)));
          }
    EXPECT_LE(worst, 1e-4);
  }
}

TEST_F(CudnnPlan, ConvolutionBackwardMeansWhatCpuRefComputes) {
  std::mt19937 rng(23);
  for (const Case& c : conv_cases()) {
    // Every output subset libnnc's bitmask allows (dx, dw, dbias in any combination with one of dx / dw, or dbias
    // alone).
    for (int mask = 1; mask < 8; mask++) {
      SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " N" << c.N << " " << c.H << "x" << c.W
                                      << " G" << c.G << " outputs mask " << mask);
      const bool want_dx = mask & 1, want_dw = mask & 2, want_db = mask & 4;
      T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
      T g = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
      T dx = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), dw(CCV_32F, c.w_shape(), c.format), db(CCV_32F, {c.K});
      fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
      std::vector<ccv_nnc_tensor_t*> in = {g, want_dw ? x.get() : nullptr, want_dx ? w.get() : nullptr};
      if (!want_dx && !want_dw) in = {g, nullptr, nullptr};
      const std::vector<ccv_nnc_tensor_t*> out = {want_dx ? dx.get() : nullptr, want_dw ? dw.get() : nullptr,
                                                  want_db ? db.get() : nullptr};
      ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), c.hint(), in, out), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      cp::ConvBackward p;
      std::string why;
      ASSERT_TRUE(
          cp::conv_backward(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), c.hint(), in.data(), 3, out.data(), 3, &p, &why))
          << why;
      EXPECT_EQ(p.dx, want_dx);
      EXPECT_EQ(p.dw, want_dw);
      EXPECT_EQ(p.dbias, want_db);
      EXPECT_EQ(p.bias_only, !want_dx && !want_dw);
      const cp::Tensor4& gd = p.conv.y;
      if (want_db) expect_bias_gradient(g, gd, db, p.conv.bias);
      if (p.bias_only) continue;
      const cp::Conv& q = p.conv;
      const int Cg = q.w.dim[1];
      std::vector<double> edx(static_cast<size_t>(c.N) * c.C * c.H * c.W, 0.0),
          edw(static_cast<size_t>(c.K) * Cg * c.KH * c.KW, 0.0);
      for_each_tap(q, [&](int n, int k, int oh, int ow, int cc, int ci, int r, int s, int h, int ww) {
        const double gv = at(g, gd, n, k, oh, ow);
        if (want_dx) edx[((static_cast<size_t>(n) * c.C + cc) * c.H + h) * c.W + ww] += gv * wat(w, q.w, k, ci, r, s);
        if (want_dw) edw[((static_cast<size_t>(k) * Cg + ci) * c.KH + r) * c.KW + s] += gv * at(x, q.x, n, cc, h, ww);
      });
      double worst = 0;
      if (want_dx)
        for (int n = 0; n < c.N; n++)
          for (int cc = 0; cc < c.C; cc++)
            for (int h = 0; h < c.H; h++)
              for (int ww = 0; ww < c.W; ww++)
                worst = std::max(worst, std::fabs(edx[((static_cast<size_t>(n) * c.C + cc) * c.H + h) * c.W + ww] -
                                                  at(dx, p.dx_desc, n, cc, h, ww)));
      if (want_dw)
        for (int k = 0; k < c.K; k++)
          for (int ci = 0; ci < Cg; ci++)
            for (int r = 0; r < c.KH; r++)
              for (int s = 0; s < c.KW; s++)
                worst = std::max(worst, std::fabs(edw[((static_cast<size_t>(k) * Cg + ci) * c.KH + r) * c.KW + s] -
                                                  wat(dw, q.w, k, ci, r, s)));
      EXPECT_LE(worst, 1e-3);
    }
  }
}

TEST_F(CudnnPlan, ConvolutionRefusals) {
  Case c{2, 5, 5, 3, 4, 3, 3};
  T x(CCV_32F, c.img(2, 5, 5, 3), NHWC), w(CCV_32F, c.w_shape(), NHWC);
  std::string why;
  cp::Conv p;
  {
    // end padding only: NNC's extent 4 x 4, cuDNN's (one pad both sides) 5 x 5 or (none) 3 x 3.
    Case a = c;
    a.PB = a.PR = 1;
    T y(CCV_32F, a.img(2, a.OH(), a.OW(), 4), NHWC);
    EXPECT_FALSE(cp::conv_forward(a.cmd(CCV_NNC_CONVOLUTION_FORWARD), a.hint(), x, w, nullptr, y, &p, &why));
    EXPECT_NE(why.find("pads both sides alike"), std::string::npos) << why;
    EXPECT_TRUE(cp::conv_forward_tensors(x, w, nullptr, y, nullptr));  // the hint-free check cannot see it
  }
  T y(CCV_32F, c.img(2, 3, 3, 4), NHWC);
  {
    T wn(CCV_32F, {4, 3, 3, 3}, NCHW);  // NCHW weights beside NHWC data
    EXPECT_FALSE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), ccv_nnc_no_hint, x, wn, nullptr, y, &p, &why));
    EXPECT_NE(why.find("weights in x's format"), std::string::npos) << why;
    EXPECT_FALSE(cp::conv_forward_tensors(x, wn, nullptr, y, nullptr));
  }
  {
    T wv = T::view(CCV_32F, c.w_shape(), NHWC);  // a filter has no strides
    EXPECT_FALSE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), ccv_nnc_no_hint, x, wv, nullptr, y, &p, &why));
    EXPECT_NE(why.find("packed"), std::string::npos) << why;
    const std::vector<ccv_nnc_tensor_t*> in = {y, x, w}, out = {nullptr, wv.get(), nullptr};
    cp::ConvBackward pb;
    EXPECT_FALSE(cp::conv_backward(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), ccv_nnc_no_hint, in.data(), 3, out.data(), 3,
                                   &pb, &why));
    EXPECT_FALSE(cp::conv_backward_tensors(in.data(), 3, out.data(), 3, nullptr));
  }
  {
    // 64F: not a cuDNN storage type here (16F / 16BF: half_plan_test.cpp).
    T xh(CCV_64F, c.img(2, 5, 5, 3), NHWC), wh(CCV_64F, c.w_shape(), NHWC), yh(CCV_64F, c.img(2, 3, 3, 4), NHWC);
    EXPECT_FALSE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), ccv_nnc_no_hint, xh, wh, nullptr, yh, &p, &why));
    EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
  }
  // Bad shapes are errors (as on CPU_REF), not refusals.
  T ybad(CCV_32F, c.img(2, 4, 3, 4), NHWC);
  EXPECT_THROW(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, ybad, &p, &why),
               nnc::Error);
  Case grp = c;
  grp.G = 2;  // 3 channels in 2 groups
  EXPECT_THROW(cp::conv_forward(grp.cmd(CCV_NNC_CONVOLUTION_FORWARD), ccv_nnc_no_hint, x, w, nullptr, y, &p, &why),
               nnc::Error);
}

// ---- pooling ----

struct PoolCase {
  int N, H, W, C, KH, KW, SH, SW, PT, PB, PL, PR;
  int format;
  bool views = false, batched = true;
  int OH() const { return (H + PT + PB - KH) / SH + 1; }
  int OW() const { return (W + PL + PR - KW) / SW + 1; }
  std::vector<int> img(int n, int h, int w, int c) const {
    std::vector<int> d = format == NHWC ? std::vector<int>{n, h, w, c} : std::vector<int>{n, c, h, w};
    if (!batched) d.erase(d.begin());
    return d;
  }
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t h = {};
    h.stride.dim[0] = SH, h.stride.dim[1] = SW;
    h.border.begin[0] = PT, h.border.end[0] = PB, h.border.begin[1] = PL, h.border.end[1] = PR;
    return h;
  }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    c.info.size.dim[0] = KH, c.info.size.dim[1] = KW, c.info.size.dim[2] = 1;
    return c;
  }
};

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> cs;
  for (int f : {NHWC, NCHW}) {
    cs.push_back({2, 8, 8, 3, 2, 2, 2, 2, 0, 0, 0, 0, f});                // the reference network's
    cs.push_back({2, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, f});                // padded, overlapping
    cs.push_back({1, 6, 5, 4, 3, 2, 1, 2, 1, 1, 0, 0, f, true});          // views, odd
    cs.push_back({1, 6, 6, 2, 3, 3, 2, 2, 1, 0, 1, 0, f, false, false});  // unequal pads keeping the extent, 3-d
  }
  return cs;
}

TEST_F(CudnnPlan, PoolingMeansWhatCpuRefComputes) {
  std::mt19937 rng(29);
  for (const PoolCase& c : pool_cases())
    for (bool max : {true, false}) {
      SCOPED_TRACE(testing::Message() << (max ? "MAX " : "AVERAGE ") << (c.format == NHWC ? "NHWC" : "NCHW") << " "
                                      << c.H << "x" << c.W << " window " << c.KH << "x" << c.KW << " pads " << c.PT
                                      << "," << c.PB);
      const uint32_t fw = max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD;
      const uint32_t bw = max ? CCV_NNC_MAX_POOL_BACKWARD : CCV_NNC_AVERAGE_POOL_BACKWARD;
      T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views),
        y = make(c.img(c.N, c.OH(), c.OW(), c.C), c.format, c.views);
      T g = make(c.img(c.N, c.OH(), c.OW(), c.C), c.format, c.views),
        dx = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views);
      fill_uniform(x, rng), fill_uniform(g, rng);  // continuous values: no ties
      ASSERT_EQ(run_hint(c.cmd(fw), c.hint(), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run_hint(c.cmd(bw), c.hint(), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      cp::Pool p, pb;
      std::string why;
      ASSERT_TRUE(cp::pool(c.cmd(fw), c.hint(), x, y, &p, &why)) << why;
      ASSERT_TRUE(cp::pool(c.cmd(bw), c.hint(), dx, g, &pb, &why)) << why;
      EXPECT_EQ(p.mode, max ? cp::PoolMode::kMax : cp::PoolMode::kAverageExcludePadding);
      ASSERT_EQ(p.y.dim[2], (c.H + 2 * p.pad[0] - p.window[0]) / p.stride[0] + 1);
      ASSERT_EQ(p.y.dim[3], (c.W + 2 * p.pad[1] - p.window[1]) / p.stride[1] + 1);
      std::vector<double> edx(static_cast<size_t>(c.N) * c.C * c.H * c.W, 0.0);
      double worst = 0;
      for (int n = 0; n < p.y.dim[0]; n++)
        for (int ch = 0; ch < p.y.dim[1]; ch++)
          for (int oh = 0; oh < p.y.dim[2]; oh++)
            for (int ow = 0; ow < p.y.dim[3]; ow++) {
              // cuDNN: padding never wins a max and never counts in EXCLUDE_PADDING's divisor.
              double best = -INFINITY, sum = 0;
              int count = 0, bh = -1, bwi = -1;
              for (int r = 0; r < p.window[0]; r++)
                for (int s = 0; s < p.window[1]; s++) {
                  const int h = oh * p.stride[0] - p.pad[0] + r, w = ow * p.stride[1] - p.pad[1] + s;
                  if (h < 0 || w < 0 || h >= p.x.dim[2] || w >= p.x.dim[3]) continue;
                  const double v = at(x, p.x, n, ch, h, w);
                  sum += v, count++;
                  if (v > best) best = v, bh = h, bwi = w;
                }
              const double want = max ? best : sum / count;
              worst = std::max(worst, std::fabs(want - at(y, p.y, n, ch, oh, ow)));
              const double gv = at(g, pb.y, n, ch, oh, ow);
              if (max) {
                edx[((static_cast<size_t>(n) * c.C + ch) * c.H + bh) * c.W + bwi] += gv;
              } else {
                for (int r = 0; r < p.window[0]; r++)
                  for (int s = 0; s < p.window[1]; s++) {
                    const int h = oh * p.stride[0] - p.pad[0] + r, w = ow * p.stride[1] - p.pad[1] + s;
                    if (h < 0 || w < 0 || h >= p.x.dim[2] || w >= p.x.dim[3]) continue;
                    edx[((static_cast<size_t>(n) * c.C + ch) * c.H + h) * c.W + w] += gv / count;
                  }
              }
            }
      for (int n = 0; n < c.N; n++)
        for (int ch = 0; ch < c.C; ch++)
          for (int h = 0; h < c.H; h++)
            for (int w = 0; w < c.W; w++)
              worst = std::max(worst, std::fabs(edx[((static_cast<size_t>(n) * c.C + ch) * c.H + h) * c.W + w] -
                                                at(dx, pb.x, n, ch, h, w)));
      EXPECT_LE(worst, 1e-5);
      // MAX_POOL_BACKWARD's scratch y is laid out like g: extent() covers every element g's descriptor addresses.
      const size_t ext = cp::extent(pb.y);
      size_t need = 0;
      for (int n = 0; n < pb.y.dim[0]; n++)
        for (int ch = 0; ch < pb.y.dim[1]; ch++)
          for (int h = 0; h < pb.y.dim[2]; h++)
            for (int w = 0; w < pb.y.dim[3]; w++)
              need = std::max(need, static_cast<size_t>(&at(g, pb.y, n, ch, h, w) - g.get()->data.f32) + 1);
      EXPECT_EQ(ext, need);
      EXPECT_EQ(cp::same_strides(x, dx), true);  // one layout on both sides here
      EXPECT_TRUE(cp::same_desc(pb.y, pb.y));
    }
}

// GPU_CUDNN stages strided views into packed copies (cuDNN 9.19 refused
// views in every legacy convolution algorithm) in the filter's layout: a
// packed tensor of either format is used as it is, and a view's packed copy
// has exactly the descriptor of the same tensor made packed. (Staging packed
// NHWC tensors as NCHW made every NHWC convolution unsupported on the GPU.)
TEST_F(CudnnPlan, ViewsStageIntoTheirOwnLayout) {
  for (const Case& c : conv_cases()) {
    SCOPED_TRACE(testing::Message() << (c.format == NHWC ? "NHWC" : "NCHW") << " N" << c.N << " " << c.H << "x" << c.W
                                    << " C" << c.C << (c.views ? " views" : ""));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T y = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    T xp = make(c.img(c.N, c.H, c.W, c.C), c.format, false), yp = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, false);
    cp::Conv p, q;
    std::string why;
    ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, y, &p, &why)) << why;
    ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), xp, w, nullptr, yp, &q, &why)) << why;
    const bool nhwc = p.w.nhwc;
    EXPECT_EQ(nhwc, c.format == NHWC);
    EXPECT_TRUE(cp::is_packed(q.x, nhwc));
    EXPECT_TRUE(cp::is_packed(q.y, nhwc));
    EXPECT_FALSE(cp::is_packed(q.x, !nhwc) && c.C > 1 && c.H * c.W > 1);
    EXPECT_EQ(cp::is_packed(p.x, nhwc), !c.views);
    EXPECT_EQ(cp::is_packed(p.y, nhwc), !c.views);
    EXPECT_TRUE(cp::same_desc(cp::packed_as(p.x, nhwc), q.x));
    EXPECT_TRUE(cp::same_desc(cp::packed_as(p.y, nhwc), q.y));
    EXPECT_EQ(cp::extent(cp::packed_as(p.x, nhwc)), static_cast<size_t>(c.N) * c.H * c.W * c.C);
  }
  // Extents of 1 (a one-channel image, a batch of one): any stride there is packed.
  cp::Tensor4 t;
  t.dim[0] = 1, t.dim[1] = 1, t.dim[2] = 5, t.dim[3] = 7;
  t.stride[0] = 999, t.stride[1] = 3, t.stride[2] = 7, t.stride[3] = 1;
  EXPECT_TRUE(cp::is_packed(t, false));
  EXPECT_TRUE(cp::is_packed(t, true));
  t.stride[2] = 8;  // rows 8 apart: a view
  EXPECT_FALSE(cp::is_packed(t, false));
  EXPECT_EQ(cp::packed_as(t, false).stride[2], 7);
}

TEST_F(CudnnPlan, BackwardAlgorithmNumbers) {
  EXPECT_EQ(cp::backward_data_algorithm(-1), -1);
  EXPECT_EQ(cp::backward_filter_algorithm(-1), -1);
  for (int d = -1; d < 8; d++)
    for (int f = -1; f < 8; f++) {
      const int packed = cp::pack_backward_algorithms(d, f);
      EXPECT_GE(packed, 0);
      EXPECT_EQ(cp::backward_data_algorithm(packed), d) << d << ", " << f;
      EXPECT_EQ(cp::backward_filter_algorithm(packed), f) << d << ", " << f;
    }
  EXPECT_EQ(cp::pack_backward_algorithms(-1, -1), 0);  // nothing chosen: the heuristics for both
}

TEST_F(CudnnPlan, LayoutComparisons) {
  T a(CCV_32F, {2, 5, 6, 3}), b(CCV_32F, {2, 5, 6, 3}), c(CCV_32F, {2, 5, 6, 3}, NCHW);
  T v = T::view(CCV_32F, {2, 5, 6, 3});
  EXPECT_TRUE(cp::same_strides(a, b));
  EXPECT_FALSE(cp::same_strides(a, v));  // same shape, strided rows
  T d(CCV_32F, {2, 5, 3, 6});
  EXPECT_FALSE(cp::same_strides(a, d));
  cp::Tensor4 t;
  t.dim[0] = 2, t.dim[1] = 3, t.dim[2] = 5, t.dim[3] = 6;
  t.stride[0] = 90, t.stride[1] = 1, t.stride[2] = 18, t.stride[3] = 3;  // packed NHWC
  EXPECT_EQ(cp::extent(t), 180u);
  t.stride[0] = 200;  // batch stride with a gap
  EXPECT_EQ(cp::extent(t), 200u + 2 + 4 * 18 + 5 * 3 + 1);
  cp::Tensor4 u = t;
  EXPECT_TRUE(cp::same_desc(t, u));
  u.stride[2] = 19;
  EXPECT_FALSE(cp::same_desc(t, u));
}

TEST_F(CudnnPlan, PoolingRefusals) {
  PoolCase c{1, 5, 5, 2, 3, 3, 1, 1, 0, 2, 0, 0, NHWC};  // end padding only: extent 5 here, 3 or 7 in cuDNN
  T x(CCV_32F, c.img(1, 5, 5, 2), NHWC), y(CCV_32F, c.img(1, c.OH(), c.OW(), 2), NHWC);
  cp::Pool p;
  std::string why;
  EXPECT_FALSE(cp::pool(c.cmd(CCV_NNC_MAX_POOL_FORWARD), c.hint(), x, y, &p, &why));
  EXPECT_NE(why.find("pads both sides alike"), std::string::npos) << why;
  T xi(CCV_32S, c.img(1, 5, 5, 2), NHWC);
  EXPECT_FALSE(cp::pool_tensors(xi, y, &why));
  T ybad(CCV_32F, c.img(1, 4, 5, 2), NHWC);
  EXPECT_THROW(cp::pool(c.cmd(CCV_NNC_MAX_POOL_FORWARD), c.hint(), x, ybad, &p, &why), nnc::Error);
}

// ---- softmax ----

TEST_F(CudnnPlan, SoftmaxRows) {
  std::mt19937 rng(31);
  struct S {
    std::vector<int> shape;
    bool view;
  };
  for (const S& s : {S{{7}, false}, S{{5, 11}, false}, S{{3, 4, 9}, false}, S{{6, 13}, true}, S{{1, 1, 17}, false}}) {
    T x = make(s.shape, NHWC, s.view), y = make(s.shape, NHWC, s.view);
    fill_uniform(x, rng, -4, 4);
    ASSERT_EQ(run(command(CCV_NNC_SOFTMAX_FORWARD, CCV_NNC_BACKEND_CPU_REF), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::Tensor4 dx, dy;
    std::string why;
    ASSERT_TRUE(cp::softmax_rows(x, &dx, &why)) << why;
    ASSERT_TRUE(cp::softmax_rows(y, &dy, &why)) << why;
    EXPECT_EQ(dx.dim[1], s.shape.back());
    EXPECT_EQ(dx.dim[2], 1);
    EXPECT_EQ(dx.dim[3], 1);
    // cuDNN's INSTANCE softmax over (c, h, w) of each n, through the plan.
    double worst = 0;
    for (int r = 0; r < dx.dim[0]; r++) {
      double m = -INFINITY, z = 0;
      for (int k = 0; k < dx.dim[1]; k++) m = std::max(m, static_cast<double>(at(x, dx, r, k, 0, 0)));
      for (int k = 0; k < dx.dim[1]; k++) z += std::exp(at(x, dx, r, k, 0, 0) - m);
      for (int k = 0; k < dx.dim[1]; k++)
        worst = std::max(worst, std::fabs(std::exp(at(x, dx, r, k, 0, 0) - m) / z - at(y, dy, r, k, 0, 0)));
    }
    EXPECT_LE(worst, 1e-6) << s.shape.size() << "-d" << (s.view ? " view" : "");
  }
  // A 3-d view whose two batch dimensions cannot fold into one row stride.
  T v = T::view(CCV_32F, {3, 4, 5}, NHWC);
  cp::Tensor4 d;
  std::string why;
  EXPECT_FALSE(cp::softmax_rows(v, &d, &why));
  EXPECT_NE(why.find("fold"), std::string::npos) << why;
  T h(CCV_64F, {4, 5});
  EXPECT_FALSE(cp::softmax_rows(h, &d, &why));
  EXPECT_NE(why.find("32F, 16F or 16BF"), std::string::npos) << why;
}

// ---- batch norm ----

struct BnCase {
  std::vector<int> shape;
  std::vector<int> axes;
  int format = NHWC;
  bool views = false;
  std::vector<int> kept() const {  // per-channel shape: the kept extents
    std::vector<int> k;
    for (size_t i = 0; i < shape.size(); i++)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) k.push_back(shape[i]);
    if (k.empty()) k.push_back(1);
    return k;
  }
  ccv_nnc_cmd_t cmd(uint32_t id, bool test = false) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    for (size_t i = 0; i < axes.size(); i++) c.info.bnorm.axis[i] = axes[i];
    c.info.bnorm.count = static_cast<int>(axes.size());
    c.info.bnorm.epsilon = 1e-3f;
    c.info.bnorm.momentum = 0.75f;
    c.info.bnorm.is_test = test;
    return c;
  }
};

std::vector<BnCase> bn_cases() {
  return {{{2, 5, 7, 3}, {0, 1, 2}},
          {{2, 3, 5, 7}, {0, 2, 3}, NCHW},
          {{6, 4}, {0}},
          {{4, 5, 6}, {0, 1}},
          {{3, 2, 4}, {0}},
          {{2, 5, 7, 3}, {0, 1, 2}, NHWC, true},
          {{2, 3, 5, 7}, {0, 2, 3}, NCHW, true}};
}

TEST_F(CudnnPlan, BatchNormMeansWhatCpuRefComputes) {
  std::mt19937 rng(37);
  for (const BnCase& c : bn_cases()) {
    SCOPED_TRACE(testing::Message() << c.shape.size() << "-d, " << c.axes.size() << " axes"
                                    << (c.views ? ", views" : ""));
    T x = make(c.shape, c.format, c.views), y = make(c.shape, c.format, c.views);
    T scale(CCV_32F, c.kept()), bias(CCV_32F, c.kept()), mean(CCV_32F, c.kept()), var(CCV_32F, c.kept());
    T om(CCV_32F, c.kept()), ov(CCV_32F, c.kept()), sm(CCV_32F, c.kept()), si(CCV_32F, c.kept());
    fill_uniform(x, rng, -2, 3), fill_uniform(scale, rng), fill_uniform(bias, rng), fill_uniform(mean, rng),
        fill_uniform(var, rng, 0.5, 2);
    const std::vector<ccv_nnc_tensor_t*> in = {x, scale, bias, mean, var}, out = {y, om, ov, sm, si};
    ASSERT_EQ(run(c.cmd(CCV_NNC_BATCH_NORM_FORWARD), in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    cp::BatchNorm p;
    std::string why;
    ASSERT_TRUE(cp::batch_norm_forward(c.cmd(CCV_NNC_BATCH_NORM_FORWARD), in.data(), 5, out.data(), 5, &p, &why))
        << why;
    ASSERT_EQ(p.channels, static_cast<int>(ccv_nnc_tensor_count(scale.get()->info)));
    ASSERT_EQ(p.param.dim[1], p.channels);
    ASSERT_EQ(static_cast<long long>(p.x.dim[0]) * p.x.dim[2] * p.x.dim[3], p.per_channel);
    if (!c.views && c.format == NHWC &&
        c.shape.size() == 4) {  // packed NHWC images: {N*H*W, C, 1, 1}, strides {C, 1, 1, 1}
      EXPECT_EQ(p.x.dim[0], c.shape[0] * c.shape[1] * c.shape[2]);
      EXPECT_EQ(p.x.stride[0], c.shape[3]);
      EXPECT_EQ(p.x.stride[1], 1);
    }
    // cuDNN SPATIAL: statistics over (n, h, w) per c, through the plan.
    double worst = 0;
    std::vector<double> m(p.channels), vb(p.channels);
    for (int ch = 0; ch < p.channels; ch++) {
      double s1 = 0, s2 = 0;
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) s1 += at(x, p.x, n, ch, h, w);
      m[ch] = s1 / static_cast<double>(p.per_channel);
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) s2 += std::pow(at(x, p.x, n, ch, h, w) - m[ch], 2);
      vb[ch] = s2 / static_cast<double>(p.per_channel);
      const double inv = 1 / std::sqrt(vb[ch] + p.epsilon);
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) {
            const double want =
                (at(x, p.x, n, ch, h, w) - m[ch]) * inv * scale.get()->data.f32[ch] + bias.get()->data.f32[ch];
            worst = std::max(worst, std::fabs(want - at(y, p.x, n, ch, h, w)));
          }
      worst = std::max(worst, std::fabs(m[ch] - sm.get()->data.f32[ch]));
      worst = std::max(worst, std::fabs(inv - si.get()->data.f32[ch]) / inv);
      // The backend's running update with the plan's factors from cuDNN's
      // batch mean and unbiased variance (its running variance's estimator).
      const double unbiased = vb[ch] * p.per_channel / (p.per_channel - 1);
      const double want_var = p.keep * var.get()->data.f32[ch] + p.take_var * unbiased;
      const double want_mean = p.keep * mean.get()->data.f32[ch] + p.take_mean * m[ch];
      worst = std::max(worst, std::fabs(want_var - ov.get()->data.f32[ch]));
      worst = std::max(worst, std::fabs(want_mean - om.get()->data.f32[ch]));
    }
    EXPECT_LE(worst, 1e-5);
    // Backward (training): cuDNN's gradients over the plan against CPU_REF.
    T g = make(c.shape, c.format, c.views), dx = make(c.shape, c.format, c.views);
    T dscale(CCV_32F, c.kept()), dbias(CCV_32F, c.kept());
    fill_uniform(g, rng);
    const std::vector<ccv_nnc_tensor_t*> bin = {g,    nullptr, nullptr, nullptr, nullptr, x,  scale, bias,
                                                mean, var,     y,       om,      ov,      sm, si};
    const std::vector<ccv_nnc_tensor_t*> bout = {dx, dscale, dbias};
    ASSERT_EQ(run(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD), bin, bout), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    cp::BatchNorm pb;
    ASSERT_TRUE(cp::batch_norm_backward(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD), bin.data(), 15, bout.data(), 3, &pb, &why))
        << why;
    worst = 0;
    for (int ch = 0; ch < pb.channels; ch++) {
      const double inv = si.get()->data.f32[ch], mu = sm.get()->data.f32[ch], M = static_cast<double>(pb.per_channel);
      double sg = 0, sgx = 0;
      for (int n = 0; n < pb.x.dim[0]; n++)
        for (int h = 0; h < pb.x.dim[2]; h++)
          for (int w = 0; w < pb.x.dim[3]; w++) {
            const double xhat = (at(x, pb.x, n, ch, h, w) - mu) * inv;
            sg += at(g, pb.x, n, ch, h, w);
            sgx += at(g, pb.x, n, ch, h, w) * xhat;
          }
      worst = std::max(worst, std::fabs(sg - dbias.get()->data.f32[ch]));
      worst = std::max(worst, std::fabs(sgx - dscale.get()->data.f32[ch]));
      for (int n = 0; n < pb.x.dim[0]; n++)
        for (int h = 0; h < pb.x.dim[2]; h++)
          for (int w = 0; w < pb.x.dim[3]; w++) {
            const double xhat = (at(x, pb.x, n, ch, h, w) - mu) * inv;
            const double want = scale.get()->data.f32[ch] * inv * (at(g, pb.x, n, ch, h, w) - sg / M - xhat * sgx / M);
            worst = std::max(worst, std::fabs(want - at(dx, pb.x, n, ch, h, w)));
          }
    }
    EXPECT_LE(worst, 1e-4);
  }
}

TEST_F(CudnnPlan, BatchNormRefusals) {
  cp::BatchNorm p;
  std::string why;
  auto fwd = [&](const BnCase& c, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y, ccv_nnc_tensor_t* scale,
                 bool test = false) {
    T b(CCV_32F, c.kept()), m(CCV_32F, c.kept()), v(CCV_32F, c.kept());
    const std::vector<ccv_nnc_tensor_t*> in = {x, scale, b, m, v}, out = {y, nullptr, nullptr, nullptr, nullptr};
    return cp::batch_norm_forward(c.cmd(CCV_NNC_BATCH_NORM_FORWARD, test), in.data(), 5, out.data(), 5, &p, &why);
  };
  {
    BnCase c{{3, 4, 5}, {1}};  // kept axes 0 and 2 are not adjacent
    T x(CCV_32F, c.shape), y(CCV_32F, c.shape), s(CCV_32F, {3, 1, 5});
    EXPECT_FALSE(fwd(c, x, y, s));
    EXPECT_NE(why.find("adjacent"), std::string::npos) << why;
  }
  {
    BnCase c{{2, 5, 7, 3}, {0, 1, 2}};
    T x = T::view(CCV_32F, c.shape), y(CCV_32F, c.shape), s(CCV_32F, c.kept());
    EXPECT_FALSE(fwd(c, x, y, s));  // x a view, y packed
    EXPECT_NE(why.find("laid out"), std::string::npos) << why;
    T x2(CCV_32F, c.shape);
    T sv = T::view(CCV_32F, {3, 1});  // 3 channels, 4 elements apart
    EXPECT_FALSE(fwd(c, x2, y, sv));  // a per-channel view
    EXPECT_NE(why.find("packed"), std::string::npos) << why;
    EXPECT_TRUE(fwd(c, x2, y, s));
  }
  {
    BnCase c{{1, 1, 1, 3}, {0, 1, 2}};  // one element per statistic
    T x(CCV_32F, c.shape), y(CCV_32F, c.shape), s(CCV_32F, c.kept());
    EXPECT_FALSE(fwd(c, x, y, s));
    EXPECT_TRUE(fwd(c, x, y, s, true));  // inference is fine
  }
  {
    BnCase c{{2, 5, 7, 3}, {0, 1, 2}};
    T g(CCV_32F, c.shape), x(CCV_32F, c.shape), dx(CCV_32F, c.shape), s(CCV_32F, c.kept()), sm(CCV_32F, c.kept()),
        si(CCV_32F, c.kept()), m(CCV_32F, c.kept()), v(CCV_32F, c.kept()), dm(CCV_32F, c.kept());
    const std::vector<ccv_nnc_tensor_t*> in = {g, nullptr, nullptr, nullptr, nullptr, x,  s, nullptr,
                                               m, v,       nullptr, nullptr, nullptr, sm, si};
    const std::vector<ccv_nnc_tensor_t*> out = {dx, nullptr, nullptr};
    EXPECT_TRUE(cp::batch_norm_backward(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD), in.data(), 15, out.data(), 3, &p, &why))
        << why;
    EXPECT_FALSE(
        cp::batch_norm_backward(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD, true), in.data(), 15, out.data(), 3, &p, &why));
    EXPECT_NE(why.find("inference"), std::string::npos) << why;
    const std::vector<ccv_nnc_tensor_t*> out2 = {dx, nullptr, nullptr, dm};
    EXPECT_FALSE(cp::batch_norm_backward(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD), in.data(), 15, out2.data(), 4, &p, &why));
    EXPECT_NE(why.find("dmean"), std::string::npos) << why;
  }
}

// ---- layer norm ----

struct LnCase {
  std::vector<int> shape;
  std::vector<int> axes;
  bool affine = true, views = false;
  std::vector<int> normalised() const {  // scale's shape: x's with the kept axes of extent 1
    std::vector<int> d = shape;
    for (size_t i = 0; i < d.size(); i++)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) d[i] = 1;
    return d;
  }
  std::vector<int> stats() const {  // x's with the normalised axes of extent 1
    std::vector<int> d = shape;
    for (int a : axes) d[static_cast<size_t>(a)] = 1;
    return d;
  }
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
    for (size_t i = 0; i < axes.size(); i++) c.info.lnorm.axis[i] = axes[i];
    c.info.lnorm.count = static_cast<int>(axes.size());
    c.info.lnorm.epsilon = 1e-4f;
    c.info.lnorm.elementwise_affine = affine;
    return c;
  }
};

TEST_F(CudnnPlan, LayerNormMeansWhatCpuRefComputes) {
  std::mt19937 rng(41);
  for (const LnCase& c : std::vector<LnCase>{{{3, 5, 16}, {2}},
                                             {{2, 3, 4, 5}, {1, 2, 3}},
                                             {{4, 6, 8}, {1, 2}},
                                             {{6, 10}, {1}, true, true},
                                             {{5, 7}, {1}, false},
                                             {{2, 3, 4, 5}, {2, 3}}}) {
    SCOPED_TRACE(testing::Message() << c.shape.size() << "-d, " << c.axes.size() << " axes"
                                    << (c.affine ? "" : ", no affine") << (c.views ? ", views" : ""));
    T x = make(c.shape, NHWC, c.views), y = make(c.shape, NHWC, c.views);
    T scale(CCV_32F, c.normalised()), bias(CCV_32F, c.normalised()), sm(CCV_32F, c.stats()), si(CCV_32F, c.stats());
    fill_uniform(x, rng, -2, 3), fill_uniform(scale, rng), fill_uniform(bias, rng);
    std::vector<ccv_nnc_tensor_t*> in = {x};
    if (c.affine) in.push_back(scale), in.push_back(bias);
    const std::vector<ccv_nnc_tensor_t*> out = {y, sm, si};
    ASSERT_EQ(run(c.cmd(CCV_NNC_LAYER_NORM_FORWARD), in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    cp::LayerNorm p;
    std::string why;
    ASSERT_TRUE(cp::layer_norm_forward(c.cmd(CCV_NNC_LAYER_NORM_FORWARD), in.data(), static_cast<int>(in.size()),
                                       out.data(), 3, &p, &why))
        << why;
    ASSERT_EQ(p.rows, static_cast<int>(ccv_nnc_tensor_count(sm.get()->info)));
    ASSERT_EQ(p.features, static_cast<long long>(ccv_nnc_tensor_count(scale.get()->info)));
    if (!c.views && c.axes.size() == 1 &&
        c.axes[0] == static_cast<int>(c.shape.size()) - 1) {  // rows x features: {1, R, F, 1}
      EXPECT_EQ(p.x.dim[1], p.rows);
      EXPECT_EQ(p.x.dim[2], c.shape.back());
      EXPECT_EQ(p.x.stride[2], 1);
      EXPECT_EQ(p.x.stride[1], c.shape.back());
    }
    auto feat = [&](const T& t, int n, int h, int w) { return at(t, p.feature, n, 0, h, w); };
    double worst = 0;
    std::vector<double> mu(p.rows), inv(p.rows);
    for (int r = 0; r < p.rows; r++) {
      double s1 = 0, s2 = 0;
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) s1 += at(x, p.x, n, r, h, w);
      mu[r] = s1 / static_cast<double>(p.features);
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) s2 += std::pow(at(x, p.x, n, r, h, w) - mu[r], 2);
      inv[r] = 1 / std::sqrt(s2 / static_cast<double>(p.features) + p.epsilon);
      worst = std::max(worst, std::fabs(mu[r] - at(sm, p.row_param, 0, r, 0, 0)));
      worst = std::max(worst, std::fabs(inv[r] - at(si, p.row_param, 0, r, 0, 0)) / inv[r]);
      for (int n = 0; n < p.x.dim[0]; n++)
        for (int h = 0; h < p.x.dim[2]; h++)
          for (int w = 0; w < p.x.dim[3]; w++) {
            double want = (at(x, p.x, n, r, h, w) - mu[r]) * inv[r];
            if (c.affine) want = want * feat(scale, n, h, w) + feat(bias, n, h, w);
            worst = std::max(worst, std::fabs(want - at(y, p.x, n, r, h, w)));
          }
    }
    EXPECT_LE(worst, 1e-5);
    // Backward.
    T g = make(c.shape, NHWC, c.views), dx = make(c.shape, NHWC, c.views);
    T dscale(CCV_32F, c.normalised()), dbias(CCV_32F, c.normalised());
    fill_uniform(g, rng);
    std::vector<ccv_nnc_tensor_t*> bin = {g, nullptr, nullptr, x};
    if (c.affine) bin.push_back(scale), bin.push_back(bias);
    bin.push_back(y), bin.push_back(sm), bin.push_back(si);
    std::vector<ccv_nnc_tensor_t*> bout = {dx};
    if (c.affine) bout.push_back(dscale), bout.push_back(dbias);
    ASSERT_EQ(run(c.cmd(CCV_NNC_LAYER_NORM_BACKWARD), bin, bout), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    cp::LayerNorm pb;
    ASSERT_TRUE(cp::layer_norm_backward(c.cmd(CCV_NNC_LAYER_NORM_BACKWARD), bin.data(), static_cast<int>(bin.size()),
                                        bout.data(), static_cast<int>(bout.size()), &pb, &why))
        << why;
    worst = 0;
    std::vector<double> ds(static_cast<size_t>(pb.features), 0.0), db(static_cast<size_t>(pb.features), 0.0);
    for (int r = 0; r < pb.rows; r++) {
      const double m0 = at(sm, pb.row_param, 0, r, 0, 0), iv = at(si, pb.row_param, 0, r, 0, 0);
      double sh = 0, shx = 0;
      auto hval = [&](int n, int h, int w) {
        return at(g, pb.x, n, r, h, w) * (c.affine ? feat(scale, n, h, w) : 1.0);
      };
      for (int n = 0; n < pb.x.dim[0]; n++)
        for (int h = 0; h < pb.x.dim[2]; h++)
          for (int w = 0; w < pb.x.dim[3]; w++) {
            const double xhat = (at(x, pb.x, n, r, h, w) - m0) * iv;
            sh += hval(n, h, w), shx += hval(n, h, w) * xhat;
            const size_t f = static_cast<size_t>(&at(scale, pb.feature, n, 0, h, w) - scale.get()->data.f32);
            ds[f] += at(g, pb.x, n, r, h, w) * xhat, db[f] += at(g, pb.x, n, r, h, w);
          }
      const double F = static_cast<double>(pb.features);
      for (int n = 0; n < pb.x.dim[0]; n++)
        for (int h = 0; h < pb.x.dim[2]; h++)
          for (int w = 0; w < pb.x.dim[3]; w++) {
            const double xhat = (at(x, pb.x, n, r, h, w) - m0) * iv;
            const double want = iv * (hval(n, h, w) - sh / F - xhat * shx / F);
            worst = std::max(worst, std::fabs(want - at(dx, pb.x, n, r, h, w)));
          }
    }
    if (c.affine)
      for (size_t f = 0; f < ds.size(); f++) {
        worst = std::max(worst, std::fabs(ds[f] - dscale.get()->data.f32[f]));
        worst = std::max(worst, std::fabs(db[f] - dbias.get()->data.f32[f]));
      }
    EXPECT_LE(worst, 1e-4);
  }
}

TEST_F(CudnnPlan, LayerNormRefusals) {
  cp::LayerNorm p;
  std::string why;
  LnCase c{{3, 7, 4}, {1}};  // normalised over the middle axis: the kept axes 0 and 2 are not adjacent
  T x(CCV_32F, c.shape), y(CCV_32F, c.shape), s(CCV_32F, c.normalised()), b(CCV_32F, c.normalised());
  const std::vector<ccv_nnc_tensor_t*> in = {x, s, b}, out = {y};
  EXPECT_FALSE(cp::layer_norm_forward(c.cmd(CCV_NNC_LAYER_NORM_FORWARD), in.data(), 3, out.data(), 1, &p, &why));
  EXPECT_NE(why.find("adjacent"), std::string::npos) << why;
  LnCase d{{3, 4, 7}, {2}};
  T x2(CCV_32F, d.shape), yv = T::view(CCV_32F, d.shape), s2(CCV_32F, d.normalised()), b2(CCV_32F, d.normalised());
  const std::vector<ccv_nnc_tensor_t*> in2 = {x2, s2, b2}, out2 = {yv};
  EXPECT_FALSE(cp::layer_norm_forward(d.cmd(CCV_NNC_LAYER_NORM_FORWARD), in2.data(), 3, out2.data(), 1, &p, &why));
  EXPECT_NE(why.find("laid out"), std::string::npos) << why;
  // Views whose kept axes (the rows) are not evenly nested: c is one dimension.
  LnCase e{{2, 3, 4, 5}, {2, 3}};
  T xv = T::view(CCV_32F, e.shape), yv2 = T::view(CCV_32F, e.shape);
  const std::vector<ccv_nnc_tensor_t*> in3 = {xv}, out3 = {yv2};
  e.affine = false;
  EXPECT_FALSE(cp::layer_norm_forward(e.cmd(CCV_NNC_LAYER_NORM_FORWARD), in3.data(), 1, out3.data(), 1, &p, &why));
  EXPECT_NE(why.find("fold"), std::string::npos) << why;
}

}  // namespace
