// cudnn_graph_plan (the numbers GPU_CUDNN's graph-API path hands cuDNN's
// backend descriptors, cuda/cudnn_graph.cpp) on the CPU. Each operation is
// replayed by the graph API's documented meaning: 4-d tensors in (n, c, h, w)
// order with int64 element strides over the tensors' own memory (views
// included), a filter {G*K, C, R, S} whose strides say KCRS or KRSC, groups
// inferred from x's channels over the filter's, pre = post padding, strides
// and dilations; forward y = x (*) w, backward data dx = dy (*)^T w, backward
// filter dw = x (*)^T dy. The loop must reproduce what CPU_REF computes for
// the NNC call, with the descriptors chosen exactly as cudnn.cpp's hooks
// choose them (convolution and transposed convolution, forward and backward).
// A wrong filter stride, role, pad or group count reads other elements and
// fails. Then the small rules: byte alignment, the numerical-note filter, the
// cache key, the run-time switch, the consistency check.
#include "cmd/common/cudnn_graph_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/common/cudnn_plan.hpp"
#include "cudnn_replay.hpp"

using namespace cmdtest;
using cudnn_replay::make;
using cudnn_replay::NCHW;
using cudnn_replay::NHWC;
namespace cp = nnc::cudnn_plan;
namespace gp = nnc::cudnn_graph_plan;

namespace {

class CudnnGraphPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// The graph API's cross-correlation over g: for every output position of the
// y side and every tap of its filter that lands inside the x side,
// visit(x offset, w offset, y offset) in elements from each tensor's start.
template <class Visit>
void graph_taps(const gp::GraphConv& g, Visit&& visit) {
  const int64_t Cg = g.w.dim[1], G = g.x.dim[1] / Cg, Kg = g.w.dim[0] / G;
  for (int64_t n = 0; n < g.y.dim[0]; n++)
    for (int64_t k = 0; k < g.y.dim[1]; k++)
      for (int64_t oh = 0; oh < g.y.dim[2]; oh++)
        for (int64_t ow = 0; ow < g.y.dim[3]; ow++)
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < g.w.dim[2]; r++)
              for (int64_t s = 0; s < g.w.dim[3]; s++) {
                const int64_t h = oh * g.stride[0] - g.pad[0] + r * g.dilation[0];
                const int64_t w = ow * g.stride[1] - g.pad[1] + s * g.dilation[1];
                if (h < 0 || w < 0 || h >= g.x.dim[2] || w >= g.x.dim[3]) continue;
                const int64_t xc = (k / Kg) * Cg + c;
                visit(n * g.x.stride[0] + xc * g.x.stride[1] + h * g.x.stride[2] + w * g.x.stride[3],
                      k * g.w.stride[0] + c * g.w.stride[1] + r * g.w.stride[2] + s * g.w.stride[3],
                      n * g.y.stride[0] + k * g.y.stride[1] + oh * g.y.stride[2] + ow * g.y.stride[3]);
              }
}

int64_t span(const gp::GraphTensor& t) {
  int64_t last = 0;
  for (int i = 0; i < 4; i++) last += (t.dim[i] - 1) * t.stride[i];
  return last + 1;
}

// The largest |sum - out| over every element the descriptor t addresses.
double worst(const std::vector<double>& sum, const gp::GraphTensor& t, const float* out) {
  double w = 0;
  for (int64_t a = 0; a < t.dim[0]; a++)
    for (int64_t b = 0; b < t.dim[1]; b++)
      for (int64_t c = 0; c < t.dim[2]; c++)
        for (int64_t d = 0; d < t.dim[3]; d++) {
          const int64_t o = a * t.stride[0] + b * t.stride[1] + c * t.stride[2] + d * t.stride[3];
          w = std::max(w, std::fabs(sum[static_cast<size_t>(o)] - out[o]));
        }
  return w;
}

// What each operation computes, replayed: the output side's sums.
std::vector<double> forward(const gp::GraphConv& g, const float* x, const float* w) {
  std::vector<double> y(static_cast<size_t>(span(g.y)), 0.0);
  graph_taps(g, [&](int64_t xo, int64_t wo, int64_t yo) { y[yo] += static_cast<double>(x[xo]) * w[wo]; });
  return y;
}
std::vector<double> backward_data(const gp::GraphConv& g, const float* w, const float* dy) {
  std::vector<double> dx(static_cast<size_t>(span(g.x)), 0.0);
  graph_taps(g, [&](int64_t xo, int64_t wo, int64_t yo) { dx[xo] += static_cast<double>(w[wo]) * dy[yo]; });
  return dx;
}
std::vector<double> backward_filter(const gp::GraphConv& g, const float* x, const float* dy) {
  std::vector<double> dw(static_cast<size_t>(span(g.w)), 0.0);
  graph_taps(g, [&](int64_t xo, int64_t wo, int64_t yo) { dw[wo] += static_cast<double>(x[xo]) * dy[yo]; });
  return dw;
}

using Case = nnc_test_conv::ConvCase<false>;
using CaseT = nnc_test_conv::ConvCase<true>;

std::vector<Case> conv_cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    for (const auto& k : nnc_test_conv::odd_conv_cases(f)) cs.push_back(k);
    Case d{2, 9, 8, 5, 3, 3, 3};  // views (strided rows), stride 2
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.views = true, d.format = f;
    cs.push_back(d);
    Case e{2, 6, 6, 3, 4, 3, 3};  // unequal pads that keep the extent
    e.SH = e.SW = 2, e.PT = e.PL = 1, e.format = f;
    cs.push_back(e);
    Case r{2, 14, 14, 8, 6, 5, 5};  // 5x5, pad 2 (the reference network's shape, smaller)
    r.PT = r.PB = r.PL = r.PR = 2, r.format = f;
    cs.push_back(r);
  }
  return cs;
}

std::string label(int format, int n, int h, int w, int g, bool views) {
  return std::string(format == NHWC ? "NHWC" : "NCHW") + " N" + std::to_string(n) + " " + std::to_string(h) + "x" +
         std::to_string(w) + " G" + std::to_string(g) + (views ? " views" : "");
}

// The filter's strides, stated: KRSC for NHWC weights, KCRS for NCHW.
TEST_F(CudnnGraphPlan, FilterStrides) {
  cp::Filter f;
  f.dim[0] = 7, f.dim[1] = 3, f.dim[2] = 5, f.dim[3] = 2;
  f.nhwc = true;
  gp::GraphTensor t = gp::filter(f);
  EXPECT_EQ(std::vector<int64_t>(t.dim, t.dim + 4), (std::vector<int64_t>{7, 3, 5, 2}));
  EXPECT_EQ(std::vector<int64_t>(t.stride, t.stride + 4), (std::vector<int64_t>{30, 1, 6, 3}));
  f.nhwc = false;
  t = gp::filter(f);
  EXPECT_EQ(std::vector<int64_t>(t.stride, t.stride + 4), (std::vector<int64_t>{30, 10, 2, 1}));
}

TEST_F(CudnnGraphPlan, ConvolutionForwardMeansWhatCpuRefComputes) {
  std::mt19937 rng(41);
  for (const Case& c : conv_cases()) {
    SCOPED_TRACE(label(c.format, c.N, c.H, c.W, c.G, c.views));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T y = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    fill_uniform(x, rng), fill_uniform(w, rng);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), {x, w}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::Conv p;
    std::string why;
    ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, y, &p, &why)) << why;
    // As cudnn.cpp's conv_forward hook: the plan's x and y.
    const gp::GraphConv g = gp::make(gp::Op::kForward, p, p.x, p.y);
    EXPECT_EQ(g.op, gp::Op::kForward);
    EXPECT_EQ(g.datatype, CCV_32F);
    ASSERT_TRUE(gp::consistent(g, p.groups, &why)) << why;
    EXPECT_LE(worst(forward(g, x.get()->data.f32, w.get()->data.f32), g.y, y.get()->data.f32), 1e-4);
  }
}

TEST_F(CudnnGraphPlan, ConvolutionBackwardMeansWhatCpuRefComputes) {
  std::mt19937 rng(43);
  for (const Case& c : conv_cases()) {
    SCOPED_TRACE(label(c.format, c.N, c.H, c.W, c.G, c.views));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T g = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    T dx = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), dw(CCV_32F, c.w_shape(), c.format);
    fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(g, rng);
    const std::vector<ccv_nnc_tensor_t*> in = {g, x, w}, out = {dx, dw, nullptr};
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), c.hint(), in, out), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::ConvBackward p;
    std::string why;
    ASSERT_TRUE(cp::conv_backward(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD), c.hint(), in.data(), 3, out.data(), 3, &p, &why))
        << why;
    ASSERT_TRUE(p.dx && p.dw);
    // As cudnn.cpp's conv_backward hooks: dw from (conv.x, conv.y), dx from (dx_desc, conv.y).
    const gp::GraphConv f = gp::make(gp::Op::kBackwardFilter, p.conv, p.conv.x, p.conv.y);
    ASSERT_TRUE(gp::consistent(f, p.conv.groups, &why)) << why;
    EXPECT_LE(worst(backward_filter(f, x.get()->data.f32, g.get()->data.f32), f.w, dw.get()->data.f32), 1e-3);
    const gp::GraphConv d = gp::make(gp::Op::kBackwardData, p.conv, p.dx_desc, p.conv.y);
    ASSERT_TRUE(gp::consistent(d, p.conv.groups, &why)) << why;
    EXPECT_LE(worst(backward_data(d, w.get()->data.f32, g.get()->data.f32), d.x, dx.get()->data.f32), 1e-4);
  }
}

std::vector<CaseT> convt_cases() {
  std::vector<CaseT> cs;
  for (int f : {NHWC, NCHW}) {
    CaseT a{2, 5, 7, 3, 4, 3, 3};  // odd sizes, pad 1
    a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    CaseT b{2, 4, 3, 6, 4, 2, 2};  // the U-Net up-sampler: 2x2, stride 2, groups 2
    b.SH = b.SW = 2, b.G = 2, b.format = f;
    cs.push_back(b);
    CaseT c{1, 5, 4, 4, 8, 3, 2};  // unbatched, groups 4, stride 2x3, dilation 2x1, output_padding 1
    c.batched = false, c.G = 4, c.SH = 2, c.SW = 3, c.DH = 2, c.OP = 1, c.format = f;
    c.PT = c.PB = 1;
    cs.push_back(c);
    CaseT d{2, 4, 5, 5, 3, 3, 3};  // views, stride 2, pad 1, output_padding 1
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.OP = 1, d.views = true, d.format = f;
    cs.push_back(d);
  }
  return cs;
}

TEST_F(CudnnGraphPlan, TransposedConvolutionMeansWhatCpuRefComputes) {
  std::mt19937 rng(47);
  for (const CaseT& c : convt_cases()) {
    SCOPED_TRACE(label(c.format, c.N, c.H, c.W, c.G, c.views));
    T x = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), w(CCV_32F, c.w_shape(), c.format);
    T y = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    fill_uniform(x, rng), fill_uniform(w, rng);
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), {x, w}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::ConvTranspose p;
    std::string why;
    ASSERT_TRUE(
        cp::conv_transpose_forward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD), c.hint(), x, w, nullptr, y, &p, &why))
        << why;
    // As cudnn.cpp's convt_forward hook: a data gradient into NNC's y (conv.x) from dy = NNC's x (conv.y).
    const gp::GraphConv fg = gp::make(gp::Op::kBackwardData, p.conv, p.conv.x, p.conv.y);
    ASSERT_TRUE(gp::consistent(fg, p.conv.groups, &why)) << why;
    EXPECT_LE(worst(backward_data(fg, w.get()->data.f32, x.get()->data.f32), fg.x, y.get()->data.f32), 1e-4);

    // The backward: dx as a forward of g (conv.x) into dx_desc, dw as a filter gradient from (g, NNC's x).
    T g = make(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views);
    T dx = make(c.img(c.N, c.H, c.W, c.C), c.format, c.views), dw(CCV_32F, c.w_shape(), c.format);
    fill_uniform(g, rng);
    const std::vector<ccv_nnc_tensor_t*> in = {g, x, w}, out = {dx, dw, nullptr};
    ASSERT_EQ(run_hint(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD), c.hint(), in, out), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    cp::ConvTranspose b;
    ASSERT_TRUE(cp::conv_transpose_backward(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD), c.hint(), in.data(), 3,
                                            out.data(), 3, &b, &why))
        << why;
    const gp::GraphConv bd = gp::make(gp::Op::kForward, b.conv, b.conv.x, b.dx_desc);
    ASSERT_TRUE(gp::consistent(bd, b.conv.groups, &why)) << why;
    EXPECT_LE(worst(forward(bd, g.get()->data.f32, w.get()->data.f32), bd.y, dx.get()->data.f32), 1e-4);
    const gp::GraphConv bf = gp::make(gp::Op::kBackwardFilter, b.conv, b.conv.x, b.conv.y);
    ASSERT_TRUE(gp::consistent(bf, b.conv.groups, &why)) << why;
    EXPECT_LE(worst(backward_filter(bf, g.get()->data.f32, x.get()->data.f32), bf.w, dw.get()->data.f32), 1e-3);
  }
}

TEST_F(CudnnGraphPlan, HalfTypesKeepTheirDatatype) {
  Case c{2, 5, 5, 3, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  for (int dt : {CCV_16F, CCV_16BF}) {
    T x(dt, c.img(2, 5, 5, 3), NHWC), w(dt, c.w_shape(), NHWC), y(dt, c.img(2, c.OH(), c.OW(), 4), NHWC);
    cp::Conv p;
    std::string why;
    ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, y, &p, &why)) << why;
    const gp::GraphConv g = gp::make(gp::Op::kForward, p, p.x, p.y);
    EXPECT_EQ(g.datatype, dt);
    EXPECT_TRUE(gp::consistent(g, p.groups, &why)) << why;
  }
}

TEST_F(CudnnGraphPlan, InconsistentDescriptorsAreRefused) {
  Case c{2, 7, 9, 4, 6, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1, c.G = 2;
  T x(CCV_32F, c.img(2, 7, 9, 4), NHWC), w(CCV_32F, c.w_shape(), NHWC), y(CCV_32F, c.img(2, c.OH(), c.OW(), 6), NHWC);
  cp::Conv p;
  std::string why;
  ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, y, &p, &why)) << why;
  gp::GraphConv g = gp::make(gp::Op::kForward, p, p.x, p.y);
  ASSERT_TRUE(gp::consistent(g, 2, &why)) << why;
  EXPECT_FALSE(gp::consistent(g, 1, &why));  // the channels say 2 groups
  EXPECT_NE(why.find("groups"), std::string::npos) << why;
  gp::GraphConv h = g;
  h.y.dim[2] += 1;  // an extent the pads do not give
  EXPECT_FALSE(gp::consistent(h, 2, &why));
  EXPECT_NE(why.find("extent"), std::string::npos) << why;
  h = g;
  h.w.dim[1] = 3;  // 4 channels over 3 per group
  EXPECT_FALSE(gp::consistent(h, 2, &why));
  h = g;
  h.y.dim[1] = 5;
  EXPECT_FALSE(gp::consistent(h, 2, &why));
  h = g;
  h.stride[0] = 0;
  EXPECT_FALSE(gp::consistent(h, 2, &why));
}

TEST_F(CudnnGraphPlan, ByteAlignment) {
  EXPECT_EQ(gp::byte_alignment(0), 16);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001000u), 16);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001010u), 16);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001008u), 8);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001004u), 4);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001002u), 2);
  EXPECT_EQ(gp::byte_alignment(0x7f0000001001u), 1);
  EXPECT_EQ(gp::byte_alignment(0x7f000000100cu), 4);
}

TEST_F(CudnnGraphPlan, NumericalNotes) {
  // fp32 is fp32: no tensor cores, no down-conversion, unless TF32 is allowed.
  EXPECT_TRUE(gp::engine_allowed(CCV_32F, false, false, false, false));
  EXPECT_FALSE(gp::engine_allowed(CCV_32F, false, true, false, false));
  EXPECT_FALSE(gp::engine_allowed(CCV_32F, false, false, true, false));
  EXPECT_TRUE(gp::engine_allowed(CCV_32F, true, true, true, false));
  // 16-bit data may use tensor cores (fp32 accumulation).
  for (int dt : {CCV_16F, CCV_16BF}) {
    EXPECT_TRUE(gp::engine_allowed(dt, false, true, false, false));
    EXPECT_TRUE(gp::engine_allowed(dt, false, true, true, false));
    EXPECT_FALSE(gp::engine_allowed(dt, false, true, false, true));  // never a reduced-precision reduction
    EXPECT_FALSE(gp::engine_allowed(dt, true, false, false, true));
  }
  EXPECT_FALSE(gp::engine_allowed(CCV_32F, true, false, false, true));
}

TEST_F(CudnnGraphPlan, KeyTellsPlansApart) {
  Case c{2, 7, 9, 3, 5, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  T x(CCV_32F, c.img(2, 7, 9, 3), NHWC), w(CCV_32F, c.w_shape(), NHWC), y(CCV_32F, c.img(2, c.OH(), c.OW(), 5), NHWC);
  cp::Conv p;
  std::string why;
  ASSERT_TRUE(cp::conv_forward(c.cmd(CCV_NNC_CONVOLUTION_FORWARD), c.hint(), x, w, nullptr, y, &p, &why)) << why;
  const gp::GraphConv g = gp::make(gp::Op::kForward, p, p.x, p.y);
  const int64_t a16[3] = {16, 16, 16}, a4[3] = {16, 4, 16};
  const std::vector<int64_t> k = gp::key(g, 0, false, a16);
  EXPECT_EQ(k, gp::key(g, 0, false, a16));
  EXPECT_NE(k, gp::key(g, 1, false, a16));  // device
  EXPECT_NE(k, gp::key(g, 0, true, a16));   // TF32 rule
  EXPECT_NE(k, gp::key(g, 0, false, a4));   // alignment
  gp::GraphConv h = g;
  h.op = gp::Op::kBackwardData;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
  h = g;
  h.datatype = CCV_16F;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
  h = g;
  h.x.stride[0] += 1;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
  h = g;
  h.w.stride[1] = 9;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
  h = g;
  h.pad[1] = 0;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
  h = g;
  h.dilation[0] = 2;
  EXPECT_NE(k, gp::key(h, 0, false, a16));
}

TEST_F(CudnnGraphPlan, Switch) {
  EXPECT_EQ(gp::mode_from(nullptr), gp::Mode::kOff);
  EXPECT_EQ(gp::mode_from(""), gp::Mode::kOff);
  EXPECT_EQ(gp::mode_from("0"), gp::Mode::kOff);
  EXPECT_EQ(gp::mode_from("1"), gp::Mode::kFirst);
  EXPECT_EQ(gp::mode_from("2"), gp::Mode::kOnly);
  EXPECT_EQ(gp::mode_from("yes"), gp::Mode::kOff);
  EXPECT_EQ(gp::mode_from("12"), gp::Mode::kOff);
}

}  // namespace
