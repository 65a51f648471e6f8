// GPU_CUDNN CONVOLUTION_TRANSPOSE against CPU_REF on random inputs with fixed
// seeds: forward (with and without bias) and backward (every output subset
// libnnc's bitmask allows), NHWC and NCHW, 3-d and 4-d, groups, dilation,
// stride and padding from the hint, output_padding, views of x / y / g / dx
// (whole parents compared, so nothing outside a view is written), fp32,
// fp16 and bf16, autotune (cuDNN's Find), a GPU stream context, the refusals. Every
// call names GPU_CUDNN so no other backend can stand in. Skips without a GPU.
//
// Tolerances. CPU_REF sums in double and rounds once. cuDNN sums in fp32 in
// its own order, and its Winograd / FFT algorithms transform the operands
// first (error about 1e-5 of the sum of |terms|). Each output sums n products
// of inputs in [-1, 1): n = C/groups * KH * KW / stride^2 at most for y,
// Kg * KH * KW for dx, N * H * W for dw and N * OH * OW for dbias. fp32:
// |gpu - cpu| <= 1e-5 n + 1e-4 |cpu| (the convolution tests' bound, cudnn_test.cpp),
// FMA math (no TF32). fp16: the inputs are the same fp16 values on both sides,
// products are exact in fp32, the sum is fp32 (cuDNN's PSEUDO_HALF compute)
// and both round the result to fp16 once: one fp16 ulp, 2^-10 |cpu|, plus the
// algorithms' fp32 error: 2e-3 |cpu| + 1e-4 n + 1e-3. A wrong layout, pad,
// group or role makes errors of the order of the values (>= 0.1 here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "gpu_pair.hpp"
#include "unit/common/conv_case.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

using Case = nnc_test_conv::ConvCase<true>;

std::string name(const Case& c, int dt) {
  char b[256];
  std::snprintf(b, sizeof(b), "%s%s N%d %dx%d C%d K%d w%dx%d s%dx%d p%d,%d/%d,%d d%dx%d g%d op%d%s%s %s",
                c.format == NHWC ? "NHWC" : "NCHW", c.batched ? "" : " 3-d", c.N, c.H, c.W, c.C, c.K, c.KH, c.KW, c.SH,
                c.SW, c.PT, c.PB, c.PL, c.PR, c.DH, c.DW, c.G, c.OP, c.views ? " views" : "", c.bias ? "" : " no bias",
                dt == CCV_16F    ? "16F"
                : dt == CCV_16BF ? "16BF"
                                 : "32F");
  return b;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    Case a{2, 5, 7, 3, 4, 3, 3};  // odd sizes, pad 1
    a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    Case u{2, 6, 5, 16, 8, 2, 2};  // the U-Net up-sampler: 2x2, stride 2
    u.SH = u.SW = 2, u.format = f;
    cs.push_back(u);
    Case b{2, 4, 3, 6, 4, 2, 2};  // groups 2, stride 2
    b.SH = b.SW = 2, b.G = 2, b.format = f;
    cs.push_back(b);
    Case c{1, 5, 4, 4, 8, 3, 2};  // 3-d, groups 4, stride 2x3, dilation 2x1, output_padding 1, pad 1, no bias
    c.batched = false, c.G = 4, c.bias = false, c.SH = 2, c.SW = 3, c.DH = 2, c.OP = 1, c.format = f;
    c.PT = c.PB = 1;
    cs.push_back(c);
    Case d{2, 4, 5, 5, 3, 3, 3};  // views, stride 2, pad 1, output_padding 1
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.OP = 1, d.views = true, d.format = f;
    cs.push_back(d);
    Case e{2, 3, 4, 3, 2, 3, 3};  // unequal pads that still map (begin 2, end 1, stride 2)
    e.SH = e.SW = 2, e.PT = e.PL = 2, e.PB = e.PR = 1, e.format = f;
    cs.push_back(e);
    Case r{2, 16, 16, 64, 32, 2, 2};  // a U-Net decoder layer's size (tensor-core shapes)
    r.SH = r.SW = 2, r.format = f;
    cs.push_back(r);
  }
  return cs;
}

// bf16 (8-bit significand, one ulp 2^-7 relative): the fp16 argument with
// its ulp, 2^-7 |cpu| per rounding (two with a bias), and the fp32 part.
float atol_for(int dt, size_t n) {
  return dt == CCV_16F ? 1e-3f + 1e-4f * n : dt == CCV_16BF ? 8e-3f + 1e-4f * n : 1e-6f + 1e-5f * n;
}
float rtol_for(int dt) { return dt == CCV_16F ? 2e-3f : dt == CCV_16BF ? 1.6e-2f : 1e-4f; }

void run_pair(const Case& c, uint32_t id, const std::vector<Both*>& in, const std::vector<Both*>& out,
              ccv_nnc_stream_context_t* stream = nullptr) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  ASSERT_EQ(exec(c.cmd(id, CCV_NNC_BACKEND_CPU_REF), c.hint(), ci, co), CCV_NNC_EXEC_SUCCESS)
      << "CPU_REF: " << ccv_nnc_error_message();
  ASSERT_EQ(exec(c.cmd(id, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), gi, go, stream), CCV_NNC_EXEC_SUCCESS)
      << "GPU_CUDNN: " << ccv_nnc_error_message();
  if (stream) ccv_nnc_stream_context_wait(stream);
}

void forward_case(const Case& c, int dt, std::mt19937& rng, ccv_nnc_stream_context_t* stream = nullptr) {
  SCOPED_TRACE(name(c, dt));
  BothPtr x = both({c.img(c.N, c.H, c.W, c.C), c.views, dt, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr b = both({{c.K}, false, dt, c.format}, rng);
  BothPtr y = both({c.img(c.N, c.OH(), c.OW(), c.K), c.views, dt, c.format}, rng);
  std::vector<Both*> in = {x.get(), w.get()};
  if (c.bias) in.push_back(b.get());
  run_pair(c, CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, in, {y.get()}, stream);
  const size_t n = static_cast<size_t>(c.C / c.G) * c.KH * c.KW + 1;
  y->expect_close(rtol_for(dt), atol_for(dt, n), "y");
}

TEST(ConvTransposeGpu, ForwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1951);
  for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
    for (const Case& c : cases()) forward_case(c, dt, rng);
}

void backward_case(const Case& c, int dt, int outputs, std::mt19937& rng) {
  SCOPED_TRACE(name(c, dt) + " outputs " + ((outputs & 1) ? "dx " : "") + ((outputs & 2) ? "dw " : "") +
               ((outputs & 4) ? "dbias" : ""));
  const bool want_dx = outputs & 1, want_dw = outputs & 2, want_db = outputs & 4;
  BothPtr x = both({c.img(c.N, c.H, c.W, c.C), c.views, dt, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr g = both({c.img(c.N, c.OH(), c.OW(), c.K), c.views, dt, c.format}, rng);
  BothPtr dx = both({c.img(c.N, c.H, c.W, c.C), c.views, dt, c.format}, rng);
  BothPtr dw = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr db = both({{c.K}, false, dt, c.format}, rng);
  // libnnc's patterns: g, x, w -> dx, dw; g, x -> dw; g, w -> dx; dbias with any of them, or alone with g.
  run_pair(c, CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD,
           {g.get(), want_dw ? x.get() : nullptr, want_dx ? w.get() : nullptr},
           {want_dx ? dx.get() : nullptr, want_dw ? dw.get() : nullptr, want_db ? db.get() : nullptr});
  // Outputs not asked keep their equal initial contents on both sides.
  dx->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.K / c.G) * c.KH * c.KW), "dx");
  dw->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.N) * c.H * c.W), "dw");
  db->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.N) * c.OH() * c.OW()), "dbias");
}

TEST(ConvTransposeGpu, BackwardEveryOutputSubset) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1952);
  for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
    for (const Case& c : cases())
      for (int outputs = 1; outputs < 8; outputs++) {
        if (dt != CCV_32F && outputs != 7 && outputs != 4) continue;  // 16-bit: all three, and dbias alone
        backward_case(c, dt, outputs, rng);
      }
}

// ccv_nnc_cmd_autotune (cuDNN's Find) picks algorithms; the tuned command still matches CPU_REF.
TEST(ConvTransposeGpu, Autotune) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1955);
  for (const Case& c : cases()) {
    if (!(c.SH == 2 && c.KH == 2 && c.C >= 16)) continue;  // the U-Net shapes
    SCOPED_TRACE(name(c, CCV_32F));
    BothPtr x = both({c.img(c.N, c.H, c.W, c.C), false, CCV_32F, c.format}, rng);
    BothPtr w = both({c.w_shape(), false, CCV_32F, c.format}, rng);
    BothPtr b = both({{c.K}, false, CCV_32F, c.format}, rng);
    BothPtr y = both({c.img(c.N, c.OH(), c.OW(), c.K), false, CCV_32F, c.format}, rng);
    BothPtr dx = both({c.img(c.N, c.H, c.W, c.C), false, CCV_32F, c.format}, rng);
    BothPtr dw = both({c.w_shape(), false, CCV_32F, c.format}, rng);
    BothPtr db = both({{c.K}, false, CCV_32F, c.format}, rng);
    std::vector<ccv_nnc_tensor_t*> fi = {x->gpu(), w->gpu(), b->gpu()}, fo = {y->gpu()};
    const ccv_nnc_cmd_t f =
        ccv_nnc_cmd_autotune(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), 0, c.hint(), 0,
                             fi.data(), 3, fo.data(), 1, nullptr);
    EXPECT_EQ(f.backend, CCV_NNC_BACKEND_GPU_CUDNN);
    ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(),
                   {x->cpu(), w->cpu(), b->cpu()}, {y->cpu()}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(exec(f, c.hint(), fi, fo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    y->expect_close(1e-4f, atol_for(CCV_32F, static_cast<size_t>(c.C) * 4 + 1), "tuned y");
    std::vector<ccv_nnc_tensor_t*> bi = {y->gpu(), x->gpu(), w->gpu()}, bo = {dx->gpu(), dw->gpu(), db->gpu()};
    const ccv_nnc_cmd_t bw =
        ccv_nnc_cmd_autotune(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN), 0, c.hint(), 0,
                             bi.data(), 3, bo.data(), 3, nullptr);
    ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(),
                   {y->cpu(), x->cpu(), w->cpu()}, {dx->cpu(), dw->cpu(), db->cpu()}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(exec(bw, c.hint(), bi, bo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    dx->expect_close(1e-4f, atol_for(CCV_32F, static_cast<size_t>(c.K) * 4), "tuned dx");
    dw->expect_close(1e-4f, atol_for(CCV_32F, static_cast<size_t>(c.N) * c.H * c.W), "tuned dw");
    db->expect_close(1e-4f, atol_for(CCV_32F, static_cast<size_t>(c.N) * c.OH() * c.OW()), "tuned dbias");
  }
}

TEST(ConvTransposeGpu, OnAStream) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1953);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  for (const Case& c : cases())
    if (c.SH == 2 && c.KH == 2) forward_case(c, CCV_32F, rng, s);
  ccv_nnc_stream_context_free(s);
}

TEST(ConvTransposeGpu, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1954);
  Case c{2, 5, 5, 3, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  BothPtr x = both({c.img(2, 5, 5, 3), false, CCV_32F, NHWC}, rng), w = both({c.w_shape(), false, CCV_32F, NHWC}, rng);
  BothPtr y = both({c.img(2, c.OH(), c.OW(), 4), false, CCV_32F, NHWC}, rng);
  const ccv_nnc_cmd_t fwd = c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN);
  // A wrong output shape: the family's error and message.
  BothPtr ybad = both({c.img(2, 6, 5, 4), false, CCV_32F, NHWC}, rng);
  EXPECT_EQ(exec(fwd, c.hint(), {x->gpu(), w->gpu()}, {ybad->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("output"), std::string::npos) << ccv_nnc_error_message();
  // Padding cuDNN cannot express (2 at the start, none at the end, stride 1): refused with the reason.
  Case a = c;
  a.PT = a.PL = 2, a.PB = a.PR = 0;
  BothPtr ya = both({a.img(2, a.OH(), a.OW(), 4), false, CCV_32F, NHWC}, rng);
  EXPECT_NE(exec(a.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), a.hint(),
                 {x->gpu(), w->gpu()}, {ya->gpu()}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("pads both sides alike"), std::string::npos)
      << ccv_nnc_error_message();
  // Mixed types: 16F x with 32F w is not taken (and is an error on every backend).
  BothPtr xh = both({c.img(2, 5, 5, 3), false, CCV_16F, NHWC}, rng);
  EXPECT_NE(exec(fwd, c.hint(), {xh->gpu(), w->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  // Weights in the other format than x.
  BothPtr wn = both({{3, 4, 3, 3}, false, CCV_32F, NCHW}, rng);
  EXPECT_NE(exec(fwd, c.hint(), {x->gpu(), wn->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
}

}  // namespace
