// GPU_CUDNN in 16F and 16BF against CPU_REF on the same rounded inputs
// (random fp32 values with fixed seeds, rounded to the 16-bit type once on the
// CPU and copied to the GPU, so both sides read identical values):
// convolution forward (with and without bias) and backward (dx, dw, dbias in
// the subsets libnnc allows), NHWC and NCHW, odd shapes (3x7x9x5 images, 3x3
// kernels, padding, stride 2), groups, dilation, 3-d, views; max and average
// pooling forward and backward; softmax forward and backward; batch norm
// forward (training with the running statistics, and inference) and
// backward; fp32 accumulation; autotune; a small 16-bit CNN on the default
// backends; the refusals. Every call names
// GPU_CUDNN so that no other backend stands in. Skips without a GPU; left out
// of the CPU emulation (tools/gpu-emu: "Cudnn.*", cuDNN is not emulated).
//
// Tolerances. eps is one unit in the last place relative to the value: 2^-10
// for fp16 (11-bit significand), 2^-7 for bf16 (8 bits); rounding to nearest
// is within eps / 2 (2^-11, 2^-8). CPU_REF sums in double and rounds once.
// cuDNN computes in fp32 (the 16-bit configurations' fp32 compute type; tensor
// cores accumulate in fp32): products of two 16-bit values are exact in fp32,
// so its pre-rounding result differs from the exact one by the fp32 sum's
// error, about 2^-24 per term (1e-5 n covers any order and the transform
// algorithms), and rounding that to 16 bits lands within one ulp of CPU_REF's
// rounding of the exact value (both round once; they differ only where the
// two sit on either side of a rounding boundary): eps |cpu|. With a bias,
// cuDNN rounds the convolution to 16 bits before adding the bias (a second
// rounding, eps / 2 of |conv| <= 4 sqrt(n) / 2 for n terms of uniform
// [-1, 1) products, whose standard deviation is sqrt(n) / 3: a 12-sigma
// bound), hence for convolutions
//   |gpu - cpu| <= 2 eps |cpu| + eps (1 + 2 sqrt(n)) + 1e-5 n.
// A wrong layout, pad, group, role or type makes errors of the order of the
// values (0.1 and above here), far outside. Pooling's max is exact (the same
// input element on both sides: the inputs are made distinct in every window,
// so the gradient goes to the same place); the average and the softmax round
// once from fp32 (eps |cpu| + 1e-5). Batch norm: statistics in fp32 over the
// same 16-bit x, y and the gradients rounded once (eps |cpu| + 1e-4), the
// parameter gradients sums of M terms (eps |cpu| + 4e-5 M). Half accumulation
// (fp16 / bf16 partial sums) fails HalfConvolutionAccumulatesInFp32 exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "gpu_pair.hpp"
#include "half_util.hpp"
#include "unit/common/conv_case.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

using Case = nnc_test_conv::ConvCase<false>;

double eps_of(int dt) { return dt == CCV_16F ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7); }
float conv_rtol(int dt) { return static_cast<float>(2 * eps_of(dt)); }
float conv_atol(int dt, size_t n) {
  return static_cast<float>(eps_of(dt) * (1 + 2 * std::sqrt(static_cast<double>(n))) + 1e-5 * static_cast<double>(n));
}

// The convolution command as these tests state it (size.dim[2]: channels per group, as libnnc's callers do).
ccv_nnc_cmd_t conv_cmd(const Case& c, uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_t cmd = c.cmd(id, backend);
  cmd.info.size.dim[2] = c.C / c.G;
  return cmd;
}

std::string name(const Case& c, int dt) {
  char b[256];
  std::snprintf(b, sizeof(b), "%s%s N%d %dx%d C%d K%d w%dx%d s%dx%d p%d,%d/%d,%d d%dx%d g%d%s%s %s",
                c.format == NHWC ? "NHWC" : "NCHW", c.batched ? "" : " 3-d", c.N, c.H, c.W, c.C, c.K, c.KH, c.KW, c.SH,
                c.SW, c.PT, c.PB, c.PL, c.PR, c.DH, c.DW, c.G, c.views ? " views" : "", c.bias ? "" : " no bias",
                tname(dt).c_str());
  return b;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    Case a{3, 7, 9, 5, 4, 3, 3};  // the brief's odd image: 3x7x9x5, 3x3, pad 1, stride 2
    a.SH = a.SW = 2, a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    Case b{3, 7, 9, 6, 4, 3, 3};  // groups 2, pad 1, stride 1
    b.G = 2, b.PT = b.PB = b.PL = b.PR = 1, b.format = f;
    cs.push_back(b);
    Case c{1, 6, 5, 4, 8, 3, 3};  // 3-d, groups 4, dilation 2x1, no bias
    c.batched = false, c.G = 4, c.DH = 2, c.PT = c.PB = 2, c.PL = c.PR = 1, c.bias = false, c.format = f;
    cs.push_back(c);
    Case d{2, 9, 8, 5, 3, 3, 3};  // views of x and y / g and dx, stride 2
    d.SH = d.SW = 2, d.PT = d.PB = d.PL = d.PR = 1, d.views = true, d.format = f;
    cs.push_back(d);
    Case e{4, 16, 16, 32, 64, 3, 3};  // tensor-core sizes (channels multiples of 8)
    e.PT = e.PB = e.PL = e.PR = 1, e.format = f;
    cs.push_back(e);
  }
  return cs;
}

// Runs cmd on CPU_REF over the CPU sides and on GPU_CUDNN over the GPU sides.
void run_pair(ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t& hint, const std::vector<Both*>& in,
              const std::vector<Both*>& out) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  cmd.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(cmd, hint, ci, co), CCV_NNC_EXEC_SUCCESS) << "CPU_REF: " << ccv_nnc_error_message();
  cmd.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  ASSERT_EQ(exec(cmd, hint, gi, go), CCV_NNC_EXEC_SUCCESS) << "GPU_CUDNN: " << ccv_nnc_error_message();
}

TEST(Cudnn, HalfConvolutionForwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2101);
  for (int dt : kHalves)
    for (const Case& c : cases()) {
      SCOPED_TRACE(name(c, dt));
      BothPtr x = both({c.x_shape(), c.views, dt, c.format}, rng);
      BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
      BothPtr b = both({{c.K}, false, dt, c.format}, rng);
      BothPtr y = both({c.y_shape(), c.views, dt, c.format}, rng);
      std::vector<Both*> in = {x.get(), w.get()};
      if (c.bias) in.push_back(b.get());
      run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, 0), c.hint(), in, {y.get()});
      y->expect_close(conv_rtol(dt), conv_atol(dt, static_cast<size_t>(c.C / c.G) * c.KH * c.KW + 1), "y");
    }
}

TEST(Cudnn, HalfConvolutionBackwardMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2102);
  for (int dt : kHalves)
    for (const Case& c : cases())
      for (int mask : {7, 1, 2, 4, 3}) {
        SCOPED_TRACE(name(c, dt) + " outputs " + ((mask & 1) ? "dx " : "") + ((mask & 2) ? "dw " : "") +
                     ((mask & 4) ? "dbias" : ""));
        const bool want_dx = mask & 1, want_dw = mask & 2, want_db = mask & 4;
        BothPtr x = both({c.x_shape(), c.views, dt, c.format}, rng);
        BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
        BothPtr g = both({c.y_shape(), c.views, dt, c.format}, rng);
        BothPtr dx = both({c.x_shape(), c.views, dt, c.format}, rng);
        BothPtr dw = both({c.w_shape(), false, dt, c.format}, rng);
        BothPtr db = both({{c.K}, false, dt, c.format}, rng);
        run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_BACKWARD, 0), c.hint(),
                 {g.get(), want_dw ? x.get() : nullptr, want_dx ? w.get() : nullptr},
                 {want_dx ? dx.get() : nullptr, want_dw ? dw.get() : nullptr, want_db ? db.get() : nullptr});
        // Outputs not asked for keep their equal initial contents on both sides.
        dx->expect_close(conv_rtol(dt), conv_atol(dt, static_cast<size_t>(c.K / c.G) * c.KH * c.KW), "dx");
        dw->expect_close(conv_rtol(dt), conv_atol(dt, static_cast<size_t>(c.N) * c.OH() * c.OW()), "dw");
        db->expect_close(conv_rtol(dt), conv_atol(dt, static_cast<size_t>(c.N) * c.OH() * c.OW()), "dbias");
      }
}

// fp32 accumulation: a 1x1 convolution over 4096 channels of ones is 4096,
// exact in both 16-bit types; fp16 partial sums stop at 2048 (2048 + 1 rounds
// back to 2048), bf16 ones at 256. Likewise dw over 4096 positions.
TEST(Cudnn, HalfConvolutionAccumulatesInFp32) {
  NNC_REQUIRE_GPU();
  for (int dt : kHalves)
    for (int f : {NHWC, NCHW}) {
      SCOPED_TRACE(tname(dt) + (f == NHWC ? " NHWC" : " NCHW"));
      Case c{1, 2, 3, 4096, 8, 1, 1};
      c.format = f, c.bias = false;
      std::mt19937 rng(2103);
      BothPtr x = both({c.x_shape(), false, dt, f}, rng, 1, 1), w = both({c.w_shape(), false, dt, f}, rng, 1, 1);
      BothPtr y = both({c.y_shape(), false, dt, f}, rng);
      run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, 0), c.hint(), {x.get(), w.get()}, {y.get()});
      y->expect_close(0, 0, "4096 ones");
      Case d{64, 8, 8, 8, 8, 1, 1};  // dw: sums over N * H * W = 4096 positions
      d.format = f, d.bias = false;
      BothPtr xd = both({d.x_shape(), false, dt, f}, rng, 1, 1), g = both({d.y_shape(), false, dt, f}, rng, 1, 1);
      BothPtr dw = both({d.w_shape(), false, dt, f}, rng);
      run_pair(conv_cmd(d, CCV_NNC_CONVOLUTION_BACKWARD, 0), d.hint(), {g.get(), xd.get(), nullptr},
               {nullptr, dw.get(), nullptr});
      dw->expect_close(0, 0, "dw of 4096 ones");
    }
}

// ccv_nnc_cmd_autotune (cuDNN's Find over 16-bit data) picks algorithms; the
// tuned commands still match CPU_REF.
TEST(Cudnn, HalfConvolutionAutotune) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2104);
  for (int dt : kHalves) {
    Case c{4, 14, 14, 32, 64, 3, 3};
    c.PT = c.PB = c.PL = c.PR = 1;
    SCOPED_TRACE(name(c, dt));
    BothPtr x = both({c.x_shape(), false, dt, c.format}, rng), w = both({c.w_shape(), false, dt, c.format}, rng);
    BothPtr b = both({{c.K}, false, dt, c.format}, rng), y = both({c.y_shape(), false, dt, c.format}, rng);
    BothPtr g = both({c.y_shape(), false, dt, c.format}, rng), dx = both({c.x_shape(), false, dt, c.format}, rng);
    BothPtr dw = both({c.w_shape(), false, dt, c.format}, rng), db = both({{c.K}, false, dt, c.format}, rng);
    std::vector<ccv_nnc_tensor_t*> fi = {x->gpu(), w->gpu(), b->gpu()}, fo = {y->gpu()};
    const ccv_nnc_cmd_t f = ccv_nnc_cmd_autotune(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), 0,
                                                 c.hint(), 0, fi.data(), 3, fo.data(), 1, nullptr);
    EXPECT_EQ(f.backend, CCV_NNC_BACKEND_GPU_CUDNN);
    ASSERT_EQ(exec(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(),
                   {x->cpu(), w->cpu(), b->cpu()}, {y->cpu()}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(exec(f, c.hint(), fi, fo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    y->expect_close(conv_rtol(dt), conv_atol(dt, 32 * 9 + 1), "tuned y");
    std::vector<ccv_nnc_tensor_t*> bi = {g->gpu(), x->gpu(), w->gpu()}, bo = {dx->gpu(), dw->gpu(), db->gpu()};
    const ccv_nnc_cmd_t bk = ccv_nnc_cmd_autotune(conv_cmd(c, CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN),
                                                  0, c.hint(), 0, bi.data(), 3, bo.data(), 3, nullptr);
    EXPECT_EQ(bk.backend, CCV_NNC_BACKEND_GPU_CUDNN);
    ASSERT_EQ(exec(conv_cmd(c, CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_REF), c.hint(),
                   {g->cpu(), x->cpu(), w->cpu()}, {dx->cpu(), dw->cpu(), db->cpu()}),
              CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(exec(bk, c.hint(), bi, bo), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    dx->expect_close(conv_rtol(dt), conv_atol(dt, 64 * 9), "tuned dx");
    dw->expect_close(conv_rtol(dt), conv_atol(dt, 4 * 14 * 14), "tuned dw");
    db->expect_close(conv_rtol(dt), conv_atol(dt, 4 * 14 * 14), "tuned dbias");
  }
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
  ccv_nnc_cmd_t cmd(uint32_t id) const {
    ccv_nnc_cmd_t c = make_cmd(id);
    c.info.size.dim[0] = KH, c.info.size.dim[1] = KW, c.info.size.dim[2] = 1;
    return c;
  }
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t h;
    std::memset(&h, 0, sizeof(h));
    h.stride.dim[0] = SH, h.stride.dim[1] = SW;
    h.border.begin[0] = PT, h.border.end[0] = PB, h.border.begin[1] = PL, h.border.end[1] = PR;
    return h;
  }
};

// x's parent (format f, dims pd, batched or not) filled with values distinct
// within any window of up to 3x3: ((h W + w) 37 mod 97) over the parent's rows
// h and columns w (positions of one window differ by less than 97 in h W + w
// while W < 40, and 37 is invertible mod 97), plus 97 for every other image or
// channel, less 96, over 64: integers of at most 8 bits over a power of two,
// exact in fp16 and bf16. So the maximum of a window is one element on both sides.
void fill_distinct(Both& x, int f, const std::vector<int>& pd, bool batched) {
  ccv_nnc_tensor_param_t p = x.cpu_parent()->info;
  p.datatype = CCV_32F;
  Owned v(p);
  const std::vector<int> d4 = batched ? pd : std::vector<int>{1, pd[0], pd[1], pd[2]};
  const int N = d4[0], H = f == NHWC ? d4[1] : d4[2], W = f == NHWC ? d4[2] : d4[3], C = f == NHWC ? d4[3] : d4[1];
  ASSERT_LT(W, 40);
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int h = 0; h < H; h++)
        for (int w = 0; w < W; w++) {
          const size_t i = f == NHWC ? ((static_cast<size_t>(n) * H + h) * W + w) * C + c
                                     : ((static_cast<size_t>(n) * C + c) * H + h) * W + w;
          v->data.f32[i] = static_cast<float>(((h * W + w) * 37 % 97) + 97 * ((n + c) % 2) - 96) / 64.0f;
        }
  ccv_nnc_cmd_t conv = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  conv.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(conv, ccv_nnc_no_hint, {v.t}, {x.cpu_parent()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  x.upload();
}

TEST(Cudnn, HalfPoolingMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2105);
  std::vector<PoolCase> cs;
  for (int f : {NHWC, NCHW}) {
    cs.push_back({3, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, f});                // padded, overlapping, odd
    cs.push_back({4, 14, 14, 16, 2, 2, 2, 2, 0, 0, 0, 0, f});             // 2x2 / 2
    cs.push_back({2, 6, 5, 4, 3, 2, 1, 2, 1, 1, 0, 0, f, true});          // views
    cs.push_back({1, 6, 6, 3, 3, 3, 2, 2, 1, 0, 1, 0, f, false, false});  // unequal pads keeping the extent, 3-d
  }
  for (int dt : kHalves)
    for (const PoolCase& c : cs)
      for (bool max : {true, false}) {
        SCOPED_TRACE(tname(dt) + (max ? " MAX " : " AVERAGE ") + (c.format == NHWC ? "NHWC " : "NCHW ") +
                     std::to_string(c.H) + "x" + std::to_string(c.W) + " window " + std::to_string(c.KH) + "x" +
                     std::to_string(c.KW) + (c.views ? " views" : "") + (c.batched ? "" : " 3-d"));
        const uint32_t fw = max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD;
        const uint32_t bw = max ? CCV_NNC_MAX_POOL_BACKWARD : CCV_NNC_AVERAGE_POOL_BACKWARD;
        const std::vector<int> xs = c.img(c.N, c.H, c.W, c.C), ys = c.img(c.N, c.OH(), c.OW(), c.C);
        BothPtr x = both({xs, c.views, dt, c.format}, rng), y = both({ys, c.views, dt, c.format}, rng);
        BothPtr g = both({ys, c.views, dt, c.format}, rng), dx = both({xs, c.views, dt, c.format}, rng);
        std::vector<int> pd = xs;
        if (c.views)
          for (int& v : pd) v += 2;
        fill_distinct(*x, c.format, pd, c.batched);
        // max: the same element (exact); average: fp32 sum of <= 9 terms, rounded once.
        const float rtol = max ? 0.f : static_cast<float>(eps_of(dt)), atol = max ? 0.f : 1e-5f;
        run_pair(c.cmd(fw), c.hint(), {x.get()}, {y.get()});
        y->expect_close(rtol, atol, "pooling forward");
        run_pair(c.cmd(bw), c.hint(), {g.get(), x.get(), y.get()}, {dx.get()});
        // max backward: g routed to the one maximum; where windows overlap an
        // element sums up to k = ceil(KH / SH) ceil(KW / SW) values of g.
        // cuDNN may add them in the 16-bit type (seen on an H200: fp16 2 ulps
        // from CPU_REF's single rounding), each of the k - 1 additions
        // rounding a partial sum of at most k |g| <= k: eps / 2 (k - 1) k more.
        // A gradient routed to the wrong element errs by a whole g (~0.5).
        const int k = ((c.KH + c.SH - 1) / c.SH) * ((c.KW + c.SW - 1) / c.SW);
        const float bwd_atol = max ? static_cast<float>(eps_of(dt) / 2 * (k - 1) * k) + 1e-5f : 1e-5f;
        dx->expect_close(static_cast<float>(eps_of(dt)), bwd_atol, "pooling backward |g|x|y|");
        // Without y (the max pools x again into scratch); the average from g alone.
        BothPtr dx2 = both({xs, c.views, dt, c.format}, rng);
        if (max)
          run_pair(c.cmd(bw), c.hint(), {g.get(), x.get(), nullptr}, {dx2.get()});
        else
          run_pair(c.cmd(bw), c.hint(), {g.get()}, {dx2.get()});
        dx2->expect_close(static_cast<float>(eps_of(dt)), bwd_atol, max ? "MAX backward without y" : "AVERAGE from g");
      }
}

// ---- softmax ----

TEST(Cudnn, HalfSoftmaxMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2106);
  struct S {
    std::vector<int> shape;
    bool view;
  };
  for (int dt : kHalves)
    for (const S& s :
         {S{{7}, false}, S{{64, 10}, false}, S{{3, 5, 33}, false}, S{{6, 13}, true}, S{{97, 1001}, false}}) {
      SCOPED_TRACE(tname(dt) + " " + std::to_string(s.shape.size()) + "-d, last " + std::to_string(s.shape.back()) +
                   (s.view ? ", view" : ""));
      BothPtr x = both({s.shape, s.view, dt}, rng, -8, 8), y = both({s.shape, s.view, dt}, rng);
      // The backward's y: any values in (0, 1) (dx = y (g - <g, y>) for any y), the same on both sides.
      BothPtr yb = both({s.shape, s.view, dt}, rng, 0, 1), g = both({s.shape, s.view, dt}, rng),
              dx = both({s.shape, s.view, dt}, rng);
      run_pair(make_cmd(CCV_NNC_SOFTMAX_FORWARD), ccv_nnc_no_hint, {x.get()}, {y.get()});
      y->expect_close(static_cast<float>(eps_of(dt)), 1e-5f, "SOFTMAX_FORWARD");
      run_pair(make_cmd(CCV_NNC_SOFTMAX_BACKWARD), ccv_nnc_no_hint, {g.get(), nullptr, yb.get()}, {dx.get()});
      dx->expect_close(static_cast<float>(eps_of(dt)), static_cast<float>(1e-6 * s.shape.back() + 1e-5),
                       "SOFTMAX_BACKWARD");
    }
  // In place (y is x), as libnnc allows.
  for (int dt : kHalves) {
    SCOPED_TRACE(tname(dt) + " in place");
    BothPtr x = both({{9, 31}, false, dt}, rng, -8, 8), y = both({{9, 31}, false, dt}, rng);
    ccv_nnc_cmd_t f = make_cmd(CCV_NNC_SOFTMAX_FORWARD);
    f.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(exec(f, ccv_nnc_no_hint, {x->cpu()}, {y->cpu()}), CCV_NNC_EXEC_SUCCESS);
    f.backend = CCV_NNC_BACKEND_GPU_CUDNN;
    ASSERT_EQ(exec(f, ccv_nnc_no_hint, {x->gpu()}, {x->gpu()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    Owned back = to_cpu(x->gpu()), got = as_f32(back), want = as_f32(y->cpu());
    size_t bad = 0;
    for (size_t i = 0; i < ccv_nnc_tensor_count(want->info); i++)
      if (!(std::fabs(got->data.f32[i] - want->data.f32[i]) <= 1e-5 + eps_of(dt) * std::fabs(want->data.f32[i]))) bad++;
    EXPECT_EQ(bad, 0u) << "in place";
  }
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
  ccv_nnc_cmd_t cmd(uint32_t id, bool test) const {
    ccv_nnc_cmd_t c = make_cmd(id);
    for (size_t i = 0; i < axes.size(); i++) c.info.bnorm.axis[i] = axes[i];
    c.info.bnorm.count = static_cast<int>(axes.size());
    c.info.bnorm.epsilon = 1e-5f;
    c.info.bnorm.momentum = 0.9f;
    c.info.bnorm.is_test = test;
    return c;
  }
};

TEST(Cudnn, HalfBatchNormMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2107);
  const std::vector<BnCase> cs = {{{3, 7, 9, 5}, {0, 1, 2}, NHWC},
                                  {{3, 5, 7, 9}, {0, 2, 3}, NCHW},
                                  {{8, 14, 14, 32}, {0, 1, 2}, NHWC},
                                  {{64, 33}, {0}, NHWC},
                                  {{3, 5, 6, 7}, {0, 1, 2}, NHWC, true}};
  for (int dt : kHalves)
    for (const BnCase& c : cs) {
      SCOPED_TRACE(tname(dt) + " " + std::to_string(c.shape.size()) + "-d " + (c.format == NHWC ? "NHWC" : "NCHW") +
                   (c.views ? " views" : ""));
      const float eps = static_cast<float>(eps_of(dt));
      for (bool test : {false, true}) {
        SCOPED_TRACE(test ? "inference" : "training");
        BothPtr x = both({c.shape, c.views, dt, c.format}, rng, -2, 3), y = both({c.shape, c.views, dt, c.format}, rng);
        BothPtr scale = both({c.kept(), false, dt, c.format}, rng), bias = both({c.kept(), false, dt, c.format}, rng);
        BothPtr mean = both({c.kept(), false, dt, c.format}, rng);
        BothPtr var = both({c.kept(), false, dt, c.format}, rng, 0.5f, 2.f);
        BothPtr sm = both({c.kept(), false, dt, c.format}, rng), si = both({c.kept(), false, dt, c.format}, rng);
        // Training updates the running statistics in place (outputs 1, 2 are inputs 3, 4), as libnnc's graphs do.
        run_pair(c.cmd(CCV_NNC_BATCH_NORM_FORWARD, test), ccv_nnc_no_hint,
                 {x.get(), scale.get(), bias.get(), mean.get(), var.get()},
                 {y.get(), test ? nullptr : mean.get(), test ? nullptr : var.get(), test ? nullptr : sm.get(),
                  test ? nullptr : si.get()});
        y->expect_close(eps, 1e-4f, "y");
        if (test) continue;
        mean->expect_close(eps, 1e-5f, "running mean");
        var->expect_close(eps, 1e-5f, "running var");
        sm->expect_close(eps, 1e-5f, "saved_mean");
        si->expect_close(eps, 1e-5f, "saved_inv_std");
        // Backward from the CPU's saved statistics on both sides.
        Owned smg = to_gpu(sm->cpu()), sig = to_gpu(si->cpu());
        for (int mask : {7, 1, 6}) {
          SCOPED_TRACE("outputs " + std::to_string(mask));
          BothPtr g = both({c.shape, c.views, dt, c.format}, rng), dx = both({c.shape, c.views, dt, c.format}, rng);
          BothPtr dscale = both({c.kept(), false, dt, c.format}, rng),
                  dbias = both({c.kept(), false, dt, c.format}, rng);
          auto side = [&](bool gpu) {
            auto t = [&](const BothPtr& b, bool on = true) -> ccv_nnc_tensor_t* {
              return on ? (gpu ? b->gpu() : b->cpu()) : nullptr;
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
                                                 gpu ? smg.t : sm->cpu(),
                                                 gpu ? sig.t : si->cpu()};
            std::vector<ccv_nnc_tensor_t*> out = {t(dx, mask & 1), t(dscale, mask & 2), t(dbias, mask & 4)};
            ccv_nnc_cmd_t cmd = c.cmd(CCV_NNC_BATCH_NORM_BACKWARD, false);
            cmd.backend = gpu ? CCV_NNC_BACKEND_GPU_CUDNN : CCV_NNC_BACKEND_CPU_REF;
            return exec(cmd, ccv_nnc_no_hint, in, out);
          };
          ASSERT_EQ(side(false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          ASSERT_EQ(side(true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          dx->expect_close(eps, 1e-4f, "dx");
          const float sum_atol = static_cast<float>(4e-5 * static_cast<double>(c.per_channel()));
          dscale->expect_close(eps, sum_atol, "dscale");
          dbias->expect_close(eps, sum_atol, "dbias");
        }
      }
    }
}

// ---- a small 16-bit CNN on the default GPU backends ----

// conv 3x3 (8 -> 16, pad 1) + bias -> batch norm (training) -> ReLU -> max
// pool 2x2 / 2 on 15x13 images, every GPU command on the registry's choice
// (GPU_CUDNN for all but ReLU), against the same chain on CPU_REF. Error
// budget: the convolution's (above, a1 = eps (1 + 2 sqrt(n)) with n = 73,
// about 18 eps) scaled by batch norm's inv_std (about 3 / sqrt(n), the
// convolution's spread being sqrt(n) / 3) and |scale| <= 1 is about 6 eps,
// its 2 eps |conv| part at most 2 eps x 4 (|conv - mean| inv_std <= 4, the
// 12-sigma bound) = 8 eps; batch norm's own rounding eps |out|; ReLU and the
// max are exact (ties after ReLU are zeros on both sides). So eps |cpu| + 16 eps.
TEST(Cudnn, HalfSmallCnnOnDefaultBackends) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2109);
  for (int dt : kHalves)
    for (int f : {NHWC, NCHW}) {
      SCOPED_TRACE(tname(dt) + (f == NHWC ? " NHWC" : " NCHW"));
      Case c{4, 15, 13, 8, 16, 3, 3};
      c.PT = c.PB = c.PL = c.PR = 1, c.format = f;
      const std::vector<int> ys = c.y_shape();
      const std::vector<int> ps = c.img(4, 7, 6, 16);
      BothPtr x = both({c.x_shape(), false, dt, f}, rng), w = both({c.w_shape(), false, dt, f}, rng);
      BothPtr b = both({{16}, false, dt, f}, rng), y = both({ys, false, dt, f}, rng);
      BothPtr scale = both({{16}, false, dt, f}, rng), bias = both({{16}, false, dt, f}, rng);
      BothPtr mean = both({{16}, false, dt, f}, rng), var = both({{16}, false, dt, f}, rng, 0.5f, 2.f);
      BothPtr z = both({ys, false, dt, f}, rng), r = both({ys, false, dt, f}, rng), q = both({ps, false, dt, f}, rng);
      ccv_nnc_cmd_t bn = make_cmd(CCV_NNC_BATCH_NORM_FORWARD);
      bn.info.bnorm.count = 3;
      const int axes[3] = {0, f == NHWC ? 1 : 2, f == NHWC ? 2 : 3};
      for (int i = 0; i < 3; i++) bn.info.bnorm.axis[i] = axes[i];
      bn.info.bnorm.epsilon = 1e-5f;
      bn.info.bnorm.momentum = 0.9f;
      PoolCase pc{4, 15, 13, 16, 2, 2, 2, 2, 0, 0, 0, 0, f};
      for (bool gpu : {false, true}) {
        SCOPED_TRACE(gpu ? "GPU" : "CPU_REF");
        const uint32_t be = gpu ? 0u : static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF);
        auto t = [&](const BothPtr& p) { return gpu ? p->gpu() : p->cpu(); };
        auto run = [&](ccv_nnc_cmd_t cmd, ccv_nnc_hint_t h, std::vector<ccv_nnc_tensor_t*> in,
                       std::vector<ccv_nnc_tensor_t*> out) {
          cmd.backend = be;
          ASSERT_EQ(exec(cmd, h, in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        };
        run(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, be), c.hint(), {t(x), t(w), t(b)}, {t(y)});
        run(bn, ccv_nnc_no_hint, {t(y), t(scale), t(bias), t(mean), t(var)}, {t(z)});
        run(make_cmd(CCV_NNC_RELU_FORWARD), ccv_nnc_no_hint, {t(z)}, {t(r)});
        run(pc.cmd(CCV_NNC_MAX_POOL_FORWARD), pc.hint(), {t(r)}, {t(q)});
      }
      const float eps = static_cast<float>(eps_of(dt));
      y->expect_close(conv_rtol(dt), conv_atol(dt, 8 * 9 + 1), "conv");
      q->expect_close(eps, 16 * eps, "pooled output");
    }
}

// ---- refusals, and the 16-bit calls GPU_CUDNN leaves to GPU_REF ----

TEST(Cudnn, HalfRefusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2108);
  Case c{2, 5, 5, 3, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  BothPtr xh = both({c.x_shape(), false, CCV_16F, NHWC}, rng), wb = both({c.w_shape(), false, CCV_16BF, NHWC}, rng);
  BothPtr wh = both({c.w_shape(), false, CCV_16F, NHWC}, rng), yh = both({c.y_shape(), false, CCV_16F, NHWC}, rng);
  BothPtr y32 = both({c.y_shape(), false, CCV_32F, NHWC}, rng);
  const ccv_nnc_cmd_t fwd = conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN);
  // 16F x with 16BF w, or with a 32F y: an error with a message, no crash.
  EXPECT_NE(exec(fwd, c.hint(), {xh->gpu(), wb->gpu()}, {yh->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  EXPECT_NE(exec(fwd, c.hint(), {xh->gpu(), wh->gpu()}, {y32->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // Softmax with 16F x and 16BF y.
  BothPtr sx = both({{4, 9}, false, CCV_16F}, rng), sy = both({{4, 9}, false, CCV_16BF}, rng);
  ccv_nnc_cmd_t sm = make_cmd(CCV_NNC_SOFTMAX_FORWARD);
  sm.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  EXPECT_NE(exec(sm, ccv_nnc_no_hint, {sx->gpu()}, {sy->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // And the device still works afterwards.
  EXPECT_EQ(exec(fwd, c.hint(), {xh->gpu(), wh->gpu()}, {yh->gpu()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // 16-bit LAYER_NORM: GPU_CUDNN declines it; the default choice (GPU_REF) runs it and matches CPU_REF.
  for (int dt : kHalves) {
    SCOPED_TRACE(tname(dt) + " LAYER_NORM");
    ccv_nnc_cmd_t ln = make_cmd(CCV_NNC_LAYER_NORM_FORWARD);
    ln.info.lnorm.axis[0] = 1;
    ln.info.lnorm.count = 1;
    ln.info.lnorm.epsilon = 1e-5f;
    ln.info.lnorm.elementwise_affine = 1;
    BothPtr x = both({{6, 37}, false, dt}, rng, -2, 3), y = both({{6, 37}, false, dt}, rng);
    BothPtr s = both({{1, 37}, false, dt}, rng), b = both({{1, 37}, false, dt}, rng);
    ln.backend = CCV_NNC_BACKEND_GPU_CUDNN;
    EXPECT_EQ(exec(ln, ccv_nnc_no_hint, {x->gpu(), s->gpu(), b->gpu()}, {y->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
    ln.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(exec(ln, ccv_nnc_no_hint, {x->cpu(), s->cpu(), b->cpu()}, {y->cpu()}), CCV_NNC_EXEC_SUCCESS);
    ln.backend = 0;
    ASSERT_EQ(exec(ln, ccv_nnc_no_hint, {x->gpu(), s->gpu(), b->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    y->expect_close(static_cast<float>(eps_of(dt)), 1e-3f, "LAYER_NORM on the default GPU backend");
  }
}

}  // namespace
