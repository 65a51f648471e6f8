// GPU_CUDNN against CPU_REF on random inputs with fixed seeds: convolution
// forward and backward (every output subset, groups, dilation, stride,
// padding, both formats, 3-d, views), max / average pooling forward and
// backward, softmax forward and backward, batch norm forward (training, with
// the running statistics, and inference) and backward, layer norm forward and
// backward; fp32 without TF32; the refusals.
// Every test names the backend (GPU_CUDNN) so that no other GPU backend can
// stand in for it, and skips, saying so, without a GPU.
//
// Tolerances. CPU_REF sums in double and rounds once; cuDNN sums in fp32 in an
// order of its own, and its Winograd / FFT algorithms transform the operands
// first. For a reduction of n terms of magnitude <= 1 (inputs in [-1, 1)),
// fp32 rounding of the sum stays below about n * 2^-24 * (sum of |terms|) in
// the worst case and near sqrt(n) * 2^-24 * sqrt(n) in practice; the
// transform algorithms' error is about 1e-5 of the sum of |terms|, which is
// at most n. So |gpu - cpu| <= 1e-5 * n + 1e-4 * |cpu| accepts any fp32
// algorithm, while a wrong index, layout, pad or group makes errors of the
// order of the values themselves (>= 0.1 for these sizes). TF32 (10-bit
// mantissa) is caught by its own exact test below, not by these tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "unit/common/conv_case.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

ccv_nnc_tensor_param_t cpu_param(std::vector<int> dims, int format = NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

// A tensor on the CPU and its GPU copy, or, for views, a padded parent on each
// side (both filled alike, guard included) with the same view into each: the
// CPU view runs CPU_REF, the GPU view GPU_CUDNN, and comparing the parents
// checks the view's elements and that nothing outside it was written.
struct Both {
  Owned cpu, gpu;  // the tensors, or the parents of views
  ccv_nnc_tensor_view_t* cv = nullptr;
  ccv_nnc_tensor_view_t* gv = nullptr;
  float atol = 1e-6f;  // set by the caller (see the tolerances above)
  Both(std::vector<int> dims, int format, bool view, std::mt19937& rng, float lo = -1, float hi = 1) {
    std::vector<int> big = dims;
    if (view)
      for (int& d : big) d += 2;
    cpu = Owned(cpu_param(big, format));
    fill(cpu, rng, lo, hi);
    gpu = to_gpu(cpu);
    if (view) {
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
      for (size_t i = 0; i < dims.size(); i++) ofs[i] = 1;
      cv = ccv_nnc_tensor_view_new(cpu, cpu_param(dims, format), ofs, nullptr);
      gv = ccv_nnc_tensor_view_new(gpu, on_gpu(cpu_param(dims, format)), ofs, nullptr);
      EXPECT_TRUE(cv && gv) << ccv_nnc_error_message();
    }
  }
  ~Both() {
    if (cv) ccv_nnc_tensor_view_free(cv);
    if (gv) ccv_nnc_tensor_view_free(gv);
  }
  Both(const Both&) = delete;
  Both& operator=(const Both&) = delete;
  ccv_nnc_tensor_t* c() const { return cv ? reinterpret_cast<ccv_nnc_tensor_t*>(cv) : cpu.t; }
  ccv_nnc_tensor_t* g() const { return gv ? reinterpret_cast<ccv_nnc_tensor_t*>(gv) : gpu.t; }
  // The GPU result (whole parent) against the CPU one, with the tolerance above.
  void expect_same(const char* what) const { expect_close(gpu, cpu, 1e-4f, atol, what); }
};

// |gpu - cpu| allowed for a reduction of n terms of magnitude <= 1.
float conv_atol(size_t n) { return static_cast<float>(1e-5 * static_cast<double>(n) + 1e-6); }

ccv_nnc_hint_t make_hint(int sh, int sw, int pt, int pb, int pl, int pr) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = sh, h.stride.dim[1] = sw;
  h.border.begin[0] = pt, h.border.end[0] = pb, h.border.begin[1] = pl, h.border.end[1] = pr;
  return h;
}

ccv_nnc_cmd_t with_backend(ccv_nnc_cmd_t c, uint32_t backend) {
  c.backend = backend;
  return c;
}

// ---- convolution ----

// The convolution's geometry (test/unit/common/conv_case.hpp); these tests
// give size.dim[2] the filter's channels per group (C / G) and name cases
// their own way.
struct ConvCase : nnc_test_conv::ConvCase<false> {
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend) const {
    ccv_nnc_cmd_t c = nnc_test_conv::ConvCase<false>::cmd(id, backend);
    c.info.size.dim[2] = C / G;
    return c;
  }
  std::string name() const {
    return std::string(format == NHWC ? "NHWC" : "NCHW") + " N" + std::to_string(N) + " " + std::to_string(H) + "x" +
           std::to_string(W) + "x" + std::to_string(C) + " K" + std::to_string(K) + " " + std::to_string(KH) + "x" +
           std::to_string(KW) + " s" + std::to_string(SH) + "," + std::to_string(SW) + " p" + std::to_string(PT) + "," +
           std::to_string(PB) + "/" + std::to_string(PL) + "," + std::to_string(PR) + " d" + std::to_string(DH) + "," +
           std::to_string(DW) + " g" + std::to_string(G) + (views ? " views" : "") + (batched ? "" : " 3-d");
  }
};

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cs;
  for (int f : {NHWC, NCHW}) {
    for (const auto& k : nnc_test_conv::odd_conv_cases(f)) cs.push_back(ConvCase{k});
    ConvCase d{2, 6, 6, 3, 4, 3, 3};  // unequal pads (1 / 0) that keep cuDNN's extent, stride 2
    d.SH = d.SW = 2, d.PT = d.PL = 1, d.format = f;
    cs.push_back(d);
    ConvCase r1{8, 28, 28, 1, 32, 5, 5};  // the reference network's two layers
    r1.PT = r1.PB = r1.PL = r1.PR = 2, r1.format = f;
    cs.push_back(r1);
    ConvCase r2{8, 14, 14, 32, 64, 5, 5};
    r2.PT = r2.PB = r2.PL = r2.PR = 2, r2.format = f;
    cs.push_back(r2);
    ConvCase p1{4, 13, 13, 64, 48, 1, 1};  // 1x1
    p1.format = f;
    cs.push_back(p1);
    ConvCase dw{2, 15, 17, 16, 16, 3, 3};  // depthwise, dilation 2
    dw.G = 16, dw.DH = dw.DW = 2, dw.PT = dw.PB = dw.PL = dw.PR = 2, dw.format = f;
    cs.push_back(dw);
  }
  return cs;
}

void conv_forward_case(const ConvCase& c, std::mt19937& rng) {
  SCOPED_TRACE(c.name());
  Both x(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng), w(c.w_shape(), c.format, false, rng);
  Both b({c.K}, c.format, false, rng), y(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views, rng);
  y.atol = conv_atol(static_cast<size_t>(c.C / c.G) * c.KH * c.KW + 1);
  std::vector<ccv_nnc_tensor_t*> ci = {x.c(), w.c()}, gi = {x.g(), w.g()};
  if (c.bias) ci.push_back(b.c()), gi.push_back(b.g());
  ASSERT_EQ(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), 0, ci.data(),
                             static_cast<int>(ci.size()), std::vector<ccv_nnc_tensor_t*>{y.c()}.data(), 1, nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_tensor_t* go = y.g();
  ASSERT_EQ(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), 0, gi.data(),
                             static_cast<int>(gi.size()), &go, 1, nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  y.expect_same("CONVOLUTION_FORWARD y");
}

TEST(Cudnn, ConvolutionForwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1901);
  for (const ConvCase& c : conv_cases()) conv_forward_case(c, rng);
}

TEST(Cudnn, ConvolutionForwardOnViews) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1902);
  for (int f : {NHWC, NCHW}) {
    ConvCase c{2, 9, 8, 5, 3, 3, 3};
    c.SH = c.SW = 2, c.PT = c.PB = c.PL = c.PR = 1, c.views = true, c.format = f;
    conv_forward_case(c, rng);
  }
}

// Every output subset libnnc's bitmask allows: dx / dw / dbias in any
// combination (dbias alone reads g only; dx alone needs no x; dw alone no w).
void conv_backward_case(const ConvCase& c, int mask, std::mt19937& rng) {
  SCOPED_TRACE(c.name() + " outputs " + ((mask & 1) ? "dx " : "") + ((mask & 2) ? "dw " : "") +
               ((mask & 4) ? "dbias" : ""));
  const bool want_dx = mask & 1, want_dw = mask & 2, want_db = mask & 4;
  Both x(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng), w(c.w_shape(), c.format, false, rng);
  Both g(c.img(c.N, c.OH(), c.OW(), c.K), c.format, c.views, rng);
  Both dx(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng), dw(c.w_shape(), c.format, false, rng),
      db({c.K}, c.format, false, rng);
  dx.atol = conv_atol(static_cast<size_t>(c.K / c.G) * c.KH * c.KW);
  dw.atol = conv_atol(static_cast<size_t>(c.N) * c.OH() * c.OW());
  db.atol = dw.atol;
  auto slots = [&](bool gpu) {
    auto pick = [&](const Both& t, bool on) -> ccv_nnc_tensor_t* { return on ? (gpu ? t.g() : t.c()) : nullptr; };
    std::vector<ccv_nnc_tensor_t*> in = {pick(g, true), pick(x, want_dw), pick(w, want_dx)};
    std::vector<ccv_nnc_tensor_t*> out = {pick(dx, want_dx), pick(dw, want_dw), pick(db, want_db)};
    return std::make_pair(in, out);
  };
  auto [ci, co] = slots(false);
  auto [gi, go] = slots(true);
  ASSERT_EQ(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), 0, ci.data(), 3,
                             co.data(), 3, nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ASSERT_EQ(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), 0, gi.data(), 3,
                             go.data(), 3, nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  // Outputs not asked for keep their initial (equal) contents on both sides.
  dx.expect_same("dx");
  dw.expect_same("dw");
  db.expect_same("dbias");
}

TEST(Cudnn, ConvolutionBackwardEveryOutputSubset) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1903);
  const std::vector<ConvCase> cs = conv_cases();
  for (size_t i = 0; i < cs.size(); i++)
    for (int mask = 1; mask < 8; mask++) {
      // The large reference layers with all three outputs only (they are the training path).
      if (cs[i].C * cs[i].K >= 32 * 64 && mask != 7) continue;
      conv_backward_case(cs[i], mask, rng);
    }
  for (int f : {NHWC, NCHW}) {
    ConvCase v{2, 9, 8, 5, 3, 3, 3};
    v.SH = v.SW = 2, v.PT = v.PB = v.PL = v.PR = 1, v.views = true, v.format = f;
    for (int mask : {1, 2, 7}) conv_backward_case(v, mask, rng);
  }
}

// fp32 is fp32: with 1 + 2^-15 in every input (TF32 keeps 10 mantissa bits
// and rounds it to 1) and weights 1, a 1x1 convolution over 64 channels is
// exactly 64 + 2^-9 in fp32 and 64 under TF32. The shape is one that
// tensor-core algorithms take.
TEST(Cudnn, ConvolutionIsNotTf32) {
  NNC_REQUIRE_GPU();
  ConvCase c{8, 16, 16, 64, 64, 1, 1};
  for (int f : {NHWC, NCHW}) {
    c.format = f;
    c.bias = false;
    Owned x(cpu_param(c.img(8, 16, 16, 64), f)), w(cpu_param(c.w_shape(), f)),
        y(on_gpu(cpu_param(c.img(8, 16, 16, 64), f)));
    const float v = 1.0f + std::ldexp(1.0f, -15);
    for (size_t i = 0; i < ccv_nnc_tensor_count(x->info); i++) x->data.f32[i] = v;
    for (size_t i = 0; i < ccv_nnc_tensor_count(w->info); i++) w->data.f32[i] = 1;
    Owned gx = to_gpu(x), gw = to_gpu(w);
    ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {gx, gw}, {y}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    Owned back = to_cpu(y);
    const double want = 64.0 + std::ldexp(1.0, -9);
    size_t bad = 0;
    for (size_t i = 0; i < ccv_nnc_tensor_count(back->info); i++)
      if (std::fabs(back->data.f32[i] - want) > std::ldexp(1.0, -12)) bad++;
    EXPECT_EQ(bad, 0u) << (f == NHWC ? "NHWC" : "NCHW") << ": " << bad
                       << " outputs lost the low bits (TF32?); first is " << back->data.f32[0] << ", want " << want;
  }
}

// ccv_nnc_cmd_autotune picks algorithms with cuDNN's Find; the tuned commands
// compute what CPU_REF does.
TEST(Cudnn, ConvolutionAutotune) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1911);
  ConvCase c{8, 14, 14, 32, 64, 5, 5};
  c.PT = c.PB = c.PL = c.PR = 2;
  Both x(c.img(8, 14, 14, 32), NHWC, false, rng), w(c.w_shape(), NHWC, false, rng), b({64}, NHWC, false, rng);
  Both y(c.img(8, 14, 14, 64), NHWC, false, rng), g(c.img(8, 14, 14, 64), NHWC, false, rng);
  Both dx(c.img(8, 14, 14, 32), NHWC, false, rng), dw(c.w_shape(), NHWC, false, rng), db({64}, NHWC, false, rng);
  y.atol = conv_atol(32 * 25 + 1);
  dx.atol = conv_atol(64 * 25);
  dw.atol = db.atol = conv_atol(8 * 14 * 14);
  std::vector<ccv_nnc_tensor_t*> fi = {x.g(), w.g(), b.g()}, fo = {y.g()};
  const ccv_nnc_cmd_t f = ccv_nnc_cmd_autotune(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), 0,
                                               c.hint(), 0, fi.data(), 3, fo.data(), 1, nullptr);
  EXPECT_EQ(f.backend, CCV_NNC_BACKEND_GPU_CUDNN);
  std::vector<ccv_nnc_tensor_t*> bi = {g.g(), x.g(), w.g()}, bo = {dx.g(), dw.g(), db.g()};
  const ccv_nnc_cmd_t bk = ccv_nnc_cmd_autotune(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN), 0,
                                                c.hint(), 0, bi.data(), 3, bo.data(), 3, nullptr);
  EXPECT_EQ(bk.backend, CCV_NNC_BACKEND_GPU_CUDNN);
  std::printf("autotune picked forward algorithm %d, backward %d\n", f.algorithm, bk.algorithm);
  ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {x.c(), w.c(), b.c()}, {y.c()}),
            CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(exec(f, c.hint(), fi, fo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  y.expect_same("tuned forward");
  ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {g.c(), x.c(), w.c()},
                 {dx.c(), dw.c(), db.c()}),
            CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(exec(bk, c.hint(), bi, bo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  dx.expect_same("tuned dx");
  dw.expect_same("tuned dw");
  db.expect_same("tuned dbias");
}

// On a GPU stream context: queued on the stream, there after the wait.
TEST(Cudnn, ConvolutionOnAStream) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1904);
  ConvCase c{4, 12, 12, 8, 16, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  Both x(c.img(4, 12, 12, 8), NHWC, false, rng), w(c.w_shape(), NHWC, false, rng), b({16}, NHWC, false, rng);
  Both y(c.img(4, 12, 12, 16), NHWC, false, rng);
  y.atol = conv_atol(8 * 9 + 1);
  ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {x.c(), w.c(), b.c()}, {y.c()}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(
      exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g(), w.g(), b.g()}, {y.g()}, s),
      CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  y.expect_same("y on a stream");
}

TEST(Cudnn, ConvolutionRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1905);
  ConvCase c{2, 5, 5, 3, 4, 3, 3};
  Both x(c.img(2, 5, 5, 3), NHWC, false, rng), w(c.w_shape(), NHWC, false, rng);
  {
    // End padding only: 4x4 here, no symmetric pad gives that in cuDNN.
    ConvCase a = c;
    a.PB = a.PR = 1;
    Both y(a.img(2, a.OH(), a.OW(), 4), NHWC, false, rng);
    EXPECT_EQ(exec(a.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), a.hint(), {x.g(), w.g()}, {y.g()}),
              CCV_NNC_EXEC_NO_KERNEL);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("pads both sides alike"), std::string::npos)
        << ccv_nnc_error_message();
  }
  Both y(c.img(2, 3, 3, 4), NHWC, false, rng);
  {
    // NCHW weights beside NHWC data: not taken by GPU_CUDNN.
    Both wn({4, 3, 3, 3}, NCHW, false, rng);
    EXPECT_NE(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g(), wn.g()}, {y.g()}),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
  {
    // A wrong output shape: an error with a message, no crash.
    Both ybad(c.img(2, 4, 3, 4), NHWC, false, rng);
    EXPECT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g(), w.g()}, {ybad.g()}),
              CCV_NNC_EXEC_INVALID);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
  // And the device still works afterwards.
  ASSERT_EQ(exec(c.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g(), w.g()}, {y.g()}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
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
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend) const {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.size.dim[0] = KH, p.size.dim[1] = KW, p.size.dim[2] = 1;
    return with_backend(ccv_nnc_cmd(id, nullptr, p, 0), backend);
  }
  ccv_nnc_hint_t hint() const { return make_hint(SH, SW, PT, PB, PL, PR); }
};

TEST(Cudnn, PoolingMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1906);
  std::vector<PoolCase> cs;
  for (int f : {NHWC, NCHW}) {
    cs.push_back({64, 28, 28, 32, 2, 2, 2, 2, 0, 0, 0, 0, f});            // the reference network's
    cs.push_back({2, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, f});                // padded, overlapping
    cs.push_back({1, 6, 5, 4, 3, 2, 1, 2, 1, 1, 0, 0, f, true});          // views, odd
    cs.push_back({1, 6, 6, 3, 3, 3, 2, 2, 1, 0, 1, 0, f, false, false});  // unequal pads keeping the extent, 3-d
  }
  for (const PoolCase& c : cs)
    for (bool max : {true, false}) {
      SCOPED_TRACE(std::string(max ? "MAX " : "AVERAGE ") + (c.format == NHWC ? "NHWC " : "NCHW ") +
                   std::to_string(c.H) + "x" + std::to_string(c.W) + " window " + std::to_string(c.KH) + "x" +
                   std::to_string(c.KW) + " pad " + std::to_string(c.PT) + "," + std::to_string(c.PB) +
                   (c.views ? " views" : ""));
      const uint32_t fw = max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD;
      const uint32_t bw = max ? CCV_NNC_MAX_POOL_BACKWARD : CCV_NNC_AVERAGE_POOL_BACKWARD;
      // Continuous random values: no ties, so the maximum is unique and the
      // backward's tie rule does not matter (NNC gives a tie to the first
      // element; which one cuDNN picks is not documented).
      Both x(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng),
          y(c.img(c.N, c.OH(), c.OW(), c.C), c.format, c.views, rng);
      Both g(c.img(c.N, c.OH(), c.OW(), c.C), c.format, c.views, rng),
          dx(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng);
      y.atol = conv_atol(static_cast<size_t>(c.KH) * c.KW);
      dx.atol = y.atol;
      ASSERT_EQ(exec(c.cmd(fw, CCV_NNC_BACKEND_CPU_REF), c.hint(), {x.c()}, {y.c()}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      ASSERT_EQ(exec(c.cmd(fw, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g()}, {y.g()}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      y.expect_same("pooling forward");
      ASSERT_EQ(exec(c.cmd(bw, CCV_NNC_BACKEND_CPU_REF), c.hint(), {g.c(), x.c(), y.c()}, {dx.c()}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      ASSERT_EQ(exec(c.cmd(bw, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {g.g(), x.g(), y.g()}, {dx.g()}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      dx.expect_same("pooling backward |g|x|y|");
      // Without y (MAX pools x into scratch) and, for AVERAGE, with g alone.
      Both dx2(c.img(c.N, c.H, c.W, c.C), c.format, c.views, rng);
      dx2.atol = dx.atol;
      ASSERT_EQ(exec(c.cmd(bw, CCV_NNC_BACKEND_CPU_REF), c.hint(), {g.c(), x.c(), nullptr}, {dx2.c()}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const std::vector<ccv_nnc_tensor_t*> in =
          max ? std::vector<ccv_nnc_tensor_t*>{g.g(), x.g(), nullptr} : std::vector<ccv_nnc_tensor_t*>{g.g()};
      ASSERT_EQ(exec(c.cmd(bw, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), in, {dx2.g()}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      dx2.expect_same(max ? "MAX_POOL_BACKWARD without y" : "AVERAGE_POOL_BACKWARD with g alone");
    }
}

TEST(Cudnn, PoolingRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1907);
  PoolCase c{1, 5, 5, 2, 3, 3, 1, 1, 0, 2, 0, 0, NHWC};  // end padding only
  Both x(c.img(1, 5, 5, 2), NHWC, false, rng), y(c.img(1, c.OH(), c.OW(), 2), NHWC, false, rng);
  EXPECT_EQ(exec(c.cmd(CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x.g()}, {y.g()}),
            CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("pads both sides alike"), std::string::npos)
      << ccv_nnc_error_message();
  Both ybad(c.img(1, 2, 2, 2), NHWC, false, rng);
  EXPECT_EQ(exec(c.cmd(CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), make_hint(1, 1, 0, 0, 0, 0), {x.g()},
                 {ybad.g()}),
            CCV_NNC_EXEC_INVALID);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// What GPU_CUDNN took but cannot run (the hint, known only at exec, pads one
// side only) it refuses at run time (core/declined.hpp): chosen
// automatically, the call runs on GPU_REF and gives CPU_REF's results, the
// first time and the next (the convolution's algorithm cache remembers the
// refusal).
TEST(Cudnn, RefusedAtRunTimeRunsOnGpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1906);
  ConvCase a{2, 5, 5, 3, 4, 3, 3};
  a.PB = a.PR = 1;  // end padding only
  Both x(a.img(2, 5, 5, 3), NHWC, false, rng), w(a.w_shape(), NHWC, false, rng);
  for (int round = 0; round < 2; round++) {
    Both y(a.img(2, a.OH(), a.OW(), 4), NHWC, false, rng);
    ASSERT_EQ(exec(a.cmd(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), a.hint(), {x.c(), w.c()}, {y.c()}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(exec(a.cmd(CCV_NNC_CONVOLUTION_FORWARD, 0), a.hint(), {x.g(), w.g()}, {y.g()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    EXPECT_STREQ(ccv_nnc_error_message(), "");
    y.atol = 1e-5f;
    y.expect_same(round ? "end-padded convolution, again" : "end-padded convolution");
  }
  // Pooling with end padding only, likewise.
  PoolCase c{1, 5, 5, 2, 3, 3, 1, 1, 0, 2, 0, 0, NHWC};
  Both px(c.img(1, 5, 5, 2), NHWC, false, rng), py(c.img(1, c.OH(), c.OW(), 2), NHWC, false, rng);
  ASSERT_EQ(exec(c.cmd(CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(), {px.c()}, {py.c()}),
            CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(exec(c.cmd(CCV_NNC_MAX_POOL_FORWARD, 0), c.hint(), {px.g()}, {py.g()}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  py.atol = 0;
  py.expect_same("end-padded max pooling");
}

// ---- softmax ----

TEST(Cudnn, SoftmaxMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1908);
  struct S {
    std::vector<int> shape;
    bool view;
  };
  for (const S& s :
       {S{{7}, false}, S{{64, 10}, false}, S{{3, 5, 33}, false}, S{{6, 13}, true}, S{{1000, 1001}, false}}) {
    SCOPED_TRACE(std::to_string(s.shape.size()) + "-d, last " + std::to_string(s.shape.back()) +
                 (s.view ? ", view" : ""));
    Both x(s.shape, NHWC, s.view, rng, -8, 8), y(s.shape, NHWC, s.view, rng), g(s.shape, NHWC, s.view, rng),
        dx(s.shape, NHWC, s.view, rng);
    // y: exp / sum of one row, a few ulp. dx = y (g - <g, y>): the dot of n
    // terms with sum |y| = 1 is off by at most about n 2^-24.
    y.atol = 1e-6f;
    dx.atol = static_cast<float>(1e-7 * s.shape.back() + 1e-6);
    const ccv_nnc_cmd_t f = ccv_nnc_cmd(CCV_NNC_SOFTMAX_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
    const ccv_nnc_cmd_t b = ccv_nnc_cmd(CCV_NNC_SOFTMAX_BACKWARD, nullptr, ccv_nnc_cmd_auto, 0);
    ASSERT_EQ(exec(with_backend(f, CCV_NNC_BACKEND_CPU_REF), ccv_nnc_no_hint, {x.c()}, {y.c()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(exec(with_backend(f, CCV_NNC_BACKEND_GPU_CUDNN), ccv_nnc_no_hint, {x.g()}, {y.g()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    y.expect_same("SOFTMAX_FORWARD");
    ASSERT_EQ(exec(with_backend(b, CCV_NNC_BACKEND_CPU_REF), ccv_nnc_no_hint, {g.c(), x.c(), y.c()}, {dx.c()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(exec(with_backend(b, CCV_NNC_BACKEND_GPU_CUDNN), ccv_nnc_no_hint, {g.g(), x.g(), y.g()}, {dx.g()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    dx.expect_same("SOFTMAX_BACKWARD");
  }
  // In place (y is x), as libnnc allows.
  Both x({9, 31}, NHWC, false, rng, -8, 8), y({9, 31}, NHWC, false, rng);
  const ccv_nnc_cmd_t f = ccv_nnc_cmd(CCV_NNC_SOFTMAX_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  ASSERT_EQ(exec(with_backend(f, CCV_NNC_BACKEND_CPU_REF), ccv_nnc_no_hint, {x.c()}, {y.c()}), CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(exec(with_backend(f, CCV_NNC_BACKEND_GPU_CUDNN), ccv_nnc_no_hint, {x.g()}, {x.g()}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  expect_close(x.gpu, y.cpu, 1e-4f, 1e-6f, "SOFTMAX_FORWARD in place");
}

// ---- batch norm ----

struct BnCase {
  std::vector<int> shape;
  std::vector<int> axes;
  int format;
  bool views = false;
  std::vector<int> kept() const {
    std::vector<int> k;
    for (size_t i = 0; i < shape.size(); i++)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) k.push_back(shape[i]);
    return k;
  }
  size_t per_channel() const {
    size_t m = 1;
    for (int a : axes) m *= static_cast<size_t>(shape[static_cast<size_t>(a)]);
    return m;
  }
  ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend, bool test) const {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    for (size_t i = 0; i < axes.size(); i++) p.bnorm.axis[i] = axes[i];
    p.bnorm.count = static_cast<int>(axes.size());
    p.bnorm.epsilon = 1e-5f;
    p.bnorm.momentum = 0.9f;
    p.bnorm.is_test = test;
    return with_backend(ccv_nnc_cmd(id, nullptr, p, 0), backend);
  }
};

// Statistics and y: sums of M fp32 terms (mean, variance) then a few
// operations per element; y is of order 1..4, so 1e-4 absolute and relative
// holds any summation order for M up to a few thousand. dscale and dbias are
// sums of M terms of magnitude <= a few: the reduction bound above.
TEST(Cudnn, BatchNormMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1909);
  const std::vector<BnCase> cs = {{{8, 14, 14, 32}, {0, 1, 2}, NHWC},
                                  {{4, 16, 7, 9}, {0, 2, 3}, NCHW},
                                  {{64, 33}, {0}, NHWC},
                                  {{3, 5, 6, 7}, {0, 1, 2}, NHWC, true}};
  for (const BnCase& c : cs) {
    SCOPED_TRACE(std::to_string(c.shape.size()) + "-d " + (c.format == NHWC ? "NHWC" : "NCHW") +
                 (c.views ? " views" : ""));
    for (bool test : {false, true}) {
      Both x(c.shape, c.format, c.views, rng, -2, 3), y(c.shape, c.format, c.views, rng);
      Both scale(c.kept(), c.format, false, rng), bias(c.kept(), c.format, false, rng),
          mean(c.kept(), c.format, false, rng);
      Both var(c.kept(), c.format, false, rng, 0.5f, 2.f), sm(c.kept(), c.format, false, rng),
          si(c.kept(), c.format, false, rng);
      y.atol = 1e-4f;
      mean.atol = var.atol = sm.atol = si.atol = 1e-5f;
      // Training updates the running statistics in place (outputs 1, 2 are inputs 3, 4), as libnnc's graphs do.
      auto fw = [&](bool gpu) {
        auto t = [&](const Both& b) { return gpu ? b.g() : b.c(); };
        std::vector<ccv_nnc_tensor_t*> in = {t(x), t(scale), t(bias), t(mean), t(var)};
        std::vector<ccv_nnc_tensor_t*> out = {t(y), test ? nullptr : t(mean), test ? nullptr : t(var),
                                              test ? nullptr : t(sm), test ? nullptr : t(si)};
        return ccv_nnc_cmd_exec(
            c.cmd(CCV_NNC_BATCH_NORM_FORWARD, gpu ? CCV_NNC_BACKEND_GPU_CUDNN : CCV_NNC_BACKEND_CPU_REF, test),
            ccv_nnc_no_hint, 0, in.data(), 5, out.data(), 5, nullptr);
      };
      ASSERT_EQ(fw(false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(fw(true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      y.expect_same(test ? "BATCH_NORM_FORWARD inference y" : "BATCH_NORM_FORWARD y");
      if (test) continue;
      mean.expect_same("running mean");
      var.expect_same("running var");
      sm.expect_same("saved_mean");
      si.expect_same("saved_inv_std");
      // Backward from the saved statistics (the CPU's, copied to the GPU, so both sides start alike).
      Owned smg = to_gpu(sm.cpu), sig = to_gpu(si.cpu);
      for (int mask : {7, 1, 6}) {
        SCOPED_TRACE("outputs " + std::to_string(mask));
        Both g(c.shape, c.format, c.views, rng), dx(c.shape, c.format, c.views, rng);
        Both dscale(c.kept(), c.format, false, rng), dbias(c.kept(), c.format, false, rng);
        dx.atol = 1e-4f;
        dscale.atol = dbias.atol = conv_atol(c.per_channel() * 4);
        auto bw = [&](bool gpu) {
          auto t = [&](const Both& b, bool on = true) -> ccv_nnc_tensor_t* {
            return on ? (gpu ? b.g() : b.c()) : nullptr;
          };
          std::vector<ccv_nnc_tensor_t*> in = {t(g),
                                               nullptr,
                                               nullptr,
                                               nullptr,
                                               nullptr,
                                               t(x),
                                               t(scale),
                                               t(bias),
                                               t(mean),
                                               t(var),
                                               t(y),
                                               nullptr,
                                               nullptr,
                                               gpu ? smg.t : sm.cpu.t,
                                               gpu ? sig.t : si.cpu.t};
          std::vector<ccv_nnc_tensor_t*> out = {t(dx, mask & 1), t(dscale, mask & 2), t(dbias, mask & 4)};
          return ccv_nnc_cmd_exec(
              c.cmd(CCV_NNC_BATCH_NORM_BACKWARD, gpu ? CCV_NNC_BACKEND_GPU_CUDNN : CCV_NNC_BACKEND_CPU_REF, false),
              ccv_nnc_no_hint, 0, in.data(), 15, out.data(), 3, nullptr);
        };
        ASSERT_EQ(bw(false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        ASSERT_EQ(bw(true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        dx.expect_same("dx");
        dscale.expect_same("dscale");
        dbias.expect_same("dbias");
      }
    }
  }
}

TEST(Cudnn, BatchNormRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1910);
  BnCase c{{2, 5, 7, 3}, {0, 1, 2}, NHWC};
  Both x(c.shape, NHWC, false, rng), y(c.shape, NHWC, false, rng), s(c.kept(), NHWC, false, rng),
      b(c.kept(), NHWC, false, rng);
  Both m(c.kept(), NHWC, false, rng), v(c.kept(), NHWC, false, rng, 0.5f, 2.f);
  // The inference backward: not cuDNN's (GPU_CUDNN declines it).
  Both g(c.shape, NHWC, false, rng), dx(c.shape, NHWC, false, rng);
  std::vector<ccv_nnc_tensor_t*> in = {g.g(), nullptr, nullptr, nullptr, nullptr, x.g(),   s.g(),  b.g(),
                                       m.g(), v.g(),   y.g(),   nullptr, nullptr, nullptr, nullptr};
  std::vector<ccv_nnc_tensor_t*> out = {dx.g()};
  EXPECT_NE(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_BATCH_NORM_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN, true), ccv_nnc_no_hint, 0,
                             in.data(), 15, out.data(), 1, nullptr),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A wrong scale shape: an error with a message.
  Both sbad({4}, NHWC, false, rng);
  std::vector<ccv_nnc_tensor_t*> fin = {x.g(), sbad.g(), b.g(), m.g(), v.g()}, fout = {y.g()};
  EXPECT_EQ(ccv_nnc_cmd_exec(c.cmd(CCV_NNC_BATCH_NORM_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN, false), ccv_nnc_no_hint, 0,
                             fin.data(), 5, fout.data(), 1, nullptr),
            CCV_NNC_EXEC_INVALID);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// ---- layer norm ----

// Same tolerance argument as batch norm: statistics over F elements per row,
// dscale / dbias sums over the rows. The GPU side runs on the default
// backends: GPU_CUDNN declines the calls GPU_REF's row kernels take (the
// normalised axes innermost, each row contiguous: several times faster
// there), so the axes {0, 2} case runs on GPU_CUDNN and the rest on GPU_REF;
// each case checks that GPU_CUDNN, named, takes exactly the calls it should.
TEST(Cudnn, LayerNormMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1912);
  struct L {
    std::vector<int> shape;
    std::vector<int> axes;
    bool affine, views;
  };
  for (const L& c : {L{{4, 37, 256}, {2}, true, false}, L{{2, 3, 8, 9}, {1, 2, 3}, true, false},
                     L{{16, 100}, {1}, true, true}, L{{6, 65}, {1}, false, false}, L{{6, 10, 7}, {0, 2}, true, false}}) {
    bool row_kernels = true;  // the normalised axes are the trailing ones
    for (size_t i = 0; i < c.axes.size(); i++)
      row_kernels = row_kernels && c.axes[i] == static_cast<int>(c.shape.size() - c.axes.size() + i);
    SCOPED_TRACE(std::to_string(c.shape.size()) + "-d, " + std::to_string(c.axes.size()) + " axes" +
                 (c.affine ? "" : ", no affine") + (c.views ? ", views" : ""));
    std::vector<int> fshape = c.shape, sshape = c.shape;
    size_t rows = 1, feats = 1;
    for (size_t i = 0; i < c.shape.size(); i++) {
      if (std::find(c.axes.begin(), c.axes.end(), static_cast<int>(i)) == c.axes.end())
        fshape[i] = 1, rows *= static_cast<size_t>(c.shape[i]);
      else
        sshape[i] = 1, feats *= static_cast<size_t>(c.shape[i]);
    }
    ccv_nnc_cmd_param_t prm;
    std::memset(&prm, 0, sizeof(prm));
    for (size_t i = 0; i < c.axes.size(); i++) prm.lnorm.axis[i] = c.axes[i];
    prm.lnorm.count = static_cast<int>(c.axes.size());
    prm.lnorm.epsilon = 1e-5f;
    prm.lnorm.elementwise_affine = c.affine;
    const ccv_nnc_cmd_t fwd = ccv_nnc_cmd(CCV_NNC_LAYER_NORM_FORWARD, nullptr, prm, 0);
    const ccv_nnc_cmd_t bwd = ccv_nnc_cmd(CCV_NNC_LAYER_NORM_BACKWARD, nullptr, prm, 0);
    Both x(c.shape, NHWC, c.views, rng, -2, 3), y(c.shape, NHWC, c.views, rng);
    Both scale(fshape, NHWC, false, rng), bias(fshape, NHWC, false, rng), sm(sshape, NHWC, false, rng),
        si(sshape, NHWC, false, rng);
    y.atol = 1e-4f;
    sm.atol = si.atol = 1e-5f;
    auto side = [&](bool gpu) {
      auto t = [&](const Both& b) { return gpu ? b.g() : b.c(); };
      std::vector<ccv_nnc_tensor_t*> in = {t(x)};
      if (c.affine) in.push_back(t(scale)), in.push_back(t(bias));
      std::vector<ccv_nnc_tensor_t*> out = {t(y), t(sm), t(si)};
      return exec(with_backend(fwd, gpu ? 0u : static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF)), ccv_nnc_no_hint, in, out);
    };
    ASSERT_EQ(side(false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    {  // GPU_CUDNN named: it declines exactly the row kernels' calls.
      std::vector<ccv_nnc_tensor_t*> in = {x.g()};
      if (c.affine) in.push_back(scale.g()), in.push_back(bias.g());
      const int r = exec(with_backend(fwd, CCV_NNC_BACKEND_GPU_CUDNN), ccv_nnc_no_hint, in, {y.g(), sm.g(), si.g()});
      if (row_kernels) {
        EXPECT_NE(r, CCV_NNC_EXEC_SUCCESS) << "GPU_CUDNN took a call GPU_REF's row kernels take";
        EXPECT_STRNE(ccv_nnc_error_message(), "");
      } else {
        EXPECT_EQ(r, CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      }
    }
    ASSERT_EQ(side(true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    y.expect_same("LAYER_NORM_FORWARD y");
    sm.expect_same("saved_mean");
    si.expect_same("saved_inv_std");
    Owned smg = to_gpu(sm.cpu), sig = to_gpu(si.cpu);
    for (int mask : {7, 1, 6, 2}) {
      if (!c.affine && mask != 1) continue;
      SCOPED_TRACE("outputs " + std::to_string(mask));
      Both g(c.shape, NHWC, c.views, rng), dx(c.shape, NHWC, c.views, rng);
      Both dscale(fshape, NHWC, false, rng), dbias(fshape, NHWC, false, rng);
      dx.atol = 1e-4f;
      dscale.atol = dbias.atol = conv_atol(rows * 4);
      auto back = [&](bool gpu) {
        auto t = [&](const Both& b, bool on = true) -> ccv_nnc_tensor_t* {
          return on ? (gpu ? b.g() : b.c()) : nullptr;
        };
        std::vector<ccv_nnc_tensor_t*> in = {t(g), nullptr, nullptr, t(x)};
        if (c.affine) in.push_back(t(scale)), in.push_back(t(bias));
        in.push_back(t(y)), in.push_back(gpu ? smg.t : sm.cpu.t), in.push_back(gpu ? sig.t : si.cpu.t);
        std::vector<ccv_nnc_tensor_t*> out = {t(dx, mask & 1)};
        if (c.affine) out.push_back(t(dscale, mask & 2)), out.push_back(t(dbias, mask & 4));
        return exec(with_backend(bwd, gpu ? 0u : static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF)), ccv_nnc_no_hint, in, out);
      };
      ASSERT_EQ(back(false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(back(true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      dx.expect_same("dx");
      dscale.expect_same("dscale");
      dbias.expect_same("dbias");
    }
  }
}

// ---- the reference network's convolution stack ----

// conv 5x5 (1 -> 32, pad 2) + bias -> ReLU -> max pool 2x2 -> conv 5x5 (32 ->
// 64, pad 2) + bias -> ReLU -> max pool 2x2, forward and backward, every GPU
// command on its default backend (GPU_CUDNN for the convolutions and pools)
// against the same chain on CPU_REF; batch 16, NHWC. Ties after ReLU (a
// window of zeros) send the pool's gradient to different zeros on the two
// sides, but ReLU's backward zeroes it there, so only the chain's ends are
// compared: the pooled output and the gradients of the weights and biases.
// The chain's rounding adds up over a few reductions: rtol 1e-3.
TEST(Cudnn, ReferenceConvolutionStack) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1913);
  const int N = 16;
  ConvCase c1{N, 28, 28, 1, 32, 5, 5}, c2{N, 14, 14, 32, 64, 5, 5};
  c1.PT = c1.PB = c1.PL = c1.PR = 2;
  c2.PT = c2.PB = c2.PL = c2.PR = 2;
  PoolCase p1{N, 28, 28, 32, 2, 2, 2, 2, 0, 0, 0, 0, NHWC}, p2{N, 14, 14, 64, 2, 2, 2, 2, 0, 0, 0, 0, NHWC};
  Both x({N, 28, 28, 1}, NHWC, false, rng), w1(c1.w_shape(), NHWC, false, rng, -0.2f, 0.2f),
      b1({32}, NHWC, false, rng, -0.1f, 0.1f);
  Both w2(c2.w_shape(), NHWC, false, rng, -0.035f, 0.035f), b2({64}, NHWC, false, rng, -0.1f, 0.1f);
  Both a1({N, 28, 28, 32}, NHWC, false, rng), r1({N, 28, 28, 32}, NHWC, false, rng),
      q1({N, 14, 14, 32}, NHWC, false, rng);
  Both a2({N, 14, 14, 64}, NHWC, false, rng), r2({N, 14, 14, 64}, NHWC, false, rng),
      q2({N, 7, 7, 64}, NHWC, false, rng);
  Both g({N, 7, 7, 64}, NHWC, false, rng);
  Both dr2({N, 14, 14, 64}, NHWC, false, rng), da2({N, 14, 14, 64}, NHWC, false, rng),
      dq1({N, 14, 14, 32}, NHWC, false, rng);
  Both dw2(c2.w_shape(), NHWC, false, rng), db2({64}, NHWC, false, rng);
  Both dr1({N, 28, 28, 32}, NHWC, false, rng), da1({N, 28, 28, 32}, NHWC, false, rng);
  Both dw1(c1.w_shape(), NHWC, false, rng), db1({32}, NHWC, false, rng);
  const ccv_nnc_cmd_t relu = ccv_nnc_cmd(CCV_NNC_RELU_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  const ccv_nnc_cmd_t relu_back = ccv_nnc_cmd(CCV_NNC_RELU_BACKWARD, nullptr, ccv_nnc_cmd_auto, 0);
  for (bool gpu : {false, true}) {
    SCOPED_TRACE(gpu ? "GPU" : "CPU_REF");
    const uint32_t be = gpu ? 0u : static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF);  // GPU: the registry's choice
    auto t = [&](const Both& b) { return gpu ? b.g() : b.c(); };
    auto run = [&](ccv_nnc_cmd_t cmd, ccv_nnc_hint_t h, std::vector<ccv_nnc_tensor_t*> in,
                   std::vector<ccv_nnc_tensor_t*> out) {
      cmd.backend = be;
      ASSERT_EQ(exec(cmd, h, in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    };
    run(c1.cmd(CCV_NNC_CONVOLUTION_FORWARD, be), c1.hint(), {t(x), t(w1), t(b1)}, {t(a1)});
    run(relu, ccv_nnc_no_hint, {t(a1)}, {t(r1)});
    run(p1.cmd(CCV_NNC_MAX_POOL_FORWARD, be), p1.hint(), {t(r1)}, {t(q1)});
    run(c2.cmd(CCV_NNC_CONVOLUTION_FORWARD, be), c2.hint(), {t(q1), t(w2), t(b2)}, {t(a2)});
    run(relu, ccv_nnc_no_hint, {t(a2)}, {t(r2)});
    run(p2.cmd(CCV_NNC_MAX_POOL_FORWARD, be), p2.hint(), {t(r2)}, {t(q2)});
    run(p2.cmd(CCV_NNC_MAX_POOL_BACKWARD, be), p2.hint(), {t(g), t(r2), t(q2)}, {t(dr2)});
    run(relu_back, ccv_nnc_no_hint, {t(dr2), t(a2), t(r2)}, {t(da2)});
    run(c2.cmd(CCV_NNC_CONVOLUTION_BACKWARD, be), c2.hint(), {t(da2), t(q1), t(w2)}, {t(dq1), t(dw2), t(db2)});
    run(p1.cmd(CCV_NNC_MAX_POOL_BACKWARD, be), p1.hint(), {t(dq1), t(r1), t(q1)}, {t(dr1)});
    run(relu_back, ccv_nnc_no_hint, {t(dr1), t(a1), t(r1)}, {t(da1)});
    run(c1.cmd(CCV_NNC_CONVOLUTION_BACKWARD, be), c1.hint(), {t(da1), t(x), nullptr}, {nullptr, t(dw1), t(db1)});
  }
  q2.atol = 1e-4f;
  expect_close(q2.gpu, q2.cpu, 1e-3f, q2.atol, "pooled output");
  expect_close(dw2.gpu, dw2.cpu, 1e-3f, conv_atol(N * 14 * 14), "dw2");
  expect_close(db2.gpu, db2.cpu, 1e-3f, conv_atol(N * 14 * 14), "db2");
  expect_close(dw1.gpu, dw1.cpu, 1e-3f, conv_atol(N * 28 * 28), "dw1");
  expect_close(db1.gpu, db1.cpu, 1e-3f, conv_atol(N * 28 * 28), "db1");
}

}  // namespace
