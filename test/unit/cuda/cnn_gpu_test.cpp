// GPU_REF MAX_POOL / AVERAGE_POOL, BATCH_NORM and CONVOLUTION, forward and
// backward (cuda/cnn_gpu.cpp), against CPU_REF on random inputs with fixed
// seeds: 32F, 16F, 16BF and 64F, NHWC and NCHW, views (whole parents
// compared, so a write outside a view fails), odd shapes (N 2, 7 x 9
// images, stride 2, asymmetric padding, dilation 2, groups 2), batch norm in
// training and inference, and refusals (an error code and a message). Each
// call is forced onto GPU_REF (cmd.backend) so that cuDNN does not take it
// on a real GPU; one pooling call is left to the registry (GPU_CUDNN first,
// which declines 64F) to see that the fallback runs.
//
// Tolerances (|gpu - cpu| <= atol + rtol |cpu|; every tensor compared as 32F):
// - Pooling: 0. The kernels do CPU_REF's double operations (a maximum with
//   its tie rule; sums, then one division; the backward's sums of g or
//   g / count in CPU_REF's window order) and round once as it does, so the
//   bits are CPU_REF's. Ties are made on purpose (values on a grid of 1/4)
//   and a NaN is put in x.
// - Batch norm: statistics and gradient sums in double in another order
//   (block sums): differences ~1e-15 relative before the one rounding to the
//   output type, so at most one ulp of it after: 32F and 64F (compared as
//   32F) rtol 1e-6, atol 1e-6 (dx cancels: h - mean(h) - xhat mean(h xhat));
//   16F 1 ulp = 2^-10: rtol 2e-3, atol 2e-3; 16BF 2^-7: rtol 1.6e-2, atol 1.6e-2.
// - Convolution: products summed in float (double for 64F) against CPU_REF's
//   double. At most 126 terms (dw: N OH OW), |terms| <= 1: float error
//   <= 126 * 2^-24 * sum |terms| < 1e-3 in the worst case, ~1e-6 typical:
//   32F rtol 1e-5, atol 1e-4; 16F / 16BF: the float result rounds to at most
//   one ulp from CPU_REF's: rtol / atol 2e-3 (16F), 1.6e-2 (16BF); 64F as
//   32F: rtol 1e-6, atol 1e-6. A wrong tap, group, stride or padding moves
//   values by ~0.1 or more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test/unit/cuda/env_guard.hpp"
#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

const int kTypes[] = {CCV_32F, CCV_16F, CCV_16BF, CCV_64F};

const char* type_name(int t) {
  switch (t) {
    case CCV_32F:
      return "32F";
    case CCV_16F:
      return "16F";
    case CCV_16BF:
      return "16BF";
    default:
      return "64F";
  }
}

struct Tol {
  float rtol, atol;
};
Tol bn_tol(int t) {
  if (t == CCV_16F) return {2e-3f, 2e-3f};
  if (t == CCV_16BF) return {1.6e-2f, 1.6e-2f};
  return {1e-6f, 1e-6f};
}
Tol conv_tol(int t) {
  if (t == CCV_16F) return {2e-3f, 2e-3f};
  if (t == CCV_16BF) return {1.6e-2f, 1.6e-2f};
  if (t == CCV_64F) return {1e-6f, 1e-6f};
  return {1e-5f, 1e-4f};
}

std::vector<int> img(int n, int h, int w, int c, bool nchw) {
  return nchw ? std::vector<int>{n, c, h, w} : std::vector<int>{n, h, w, c};
}

ccv_nnc_hint_t hint_of(int sh, int sw, int top, int left, int bottom, int right) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = sh, h.stride.dim[1] = sw;
  h.border.begin[0] = top, h.border.begin[1] = left;
  h.border.end[0] = bottom, h.border.end[1] = right;
  return h;
}

// c on CPU_REF over the CPU sides, then on GPU_REF (or, with `forced` false,
// on whatever backend the registry picks) over the GPU sides.
void run_pair(ccv_nnc_cmd_t c, ccv_nnc_hint_t hint, const std::vector<Both*>& in, const std::vector<Both*>& out,
              const std::string& what, bool forced = true) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, hint, ci, co), CCV_NNC_EXEC_SUCCESS) << what << " (CPU_REF): " << ccv_nnc_error_message();
  c.backend = forced ? static_cast<uint32_t>(CCV_NNC_BACKEND_GPU_REF) : 0u;
  ASSERT_EQ(exec(c, hint, gi, go), CCV_NNC_EXEC_SUCCESS) << what << " (GPU): " << ccv_nnc_error_message();
}

// The parents of b set to values on a grid of 1/4 in [-1, 1] (ties for the
// maxima), with a NaN at the view's element `nan_at` (row-major; -1: none).
void grid_values(Both& b, std::mt19937& rng, long nan_at) {
  ccv_nnc_tensor_t* p = b.cpu_parent();
  ccv_nnc_tensor_param_t fp = p->info;
  fp.datatype = CCV_32F;
  Owned f(fp);
  std::uniform_int_distribution<int> d(-4, 4);
  const size_t n = ccv_nnc_tensor_count(fp);
  for (size_t i = 0; i < n; i++) f->data.f32[i] = 0.25f * static_cast<float>(d(rng));
  if (nan_at >= 0) {
    // The view's element nan_at inside the parent (a view sits at offset 1 on every axis).
    const bool view = b.cpu() != p;
    int nd = 0;
    while (nd < CCV_NNC_MAX_DIM && p->info.dim[nd]) nd++;
    long rest = nan_at, off = 0, stride = 1;
    for (int i = nd - 1; i >= 0; i--) {
      const int vdim = view ? p->info.dim[i] - 2 : p->info.dim[i];
      off += ((rest % vdim) + (view ? 1 : 0)) * stride;
      rest /= vdim;
      stride *= p->info.dim[i];
    }
    f->data.f32[off] = NAN;
  }
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(exec(c, ccv_nnc_no_hint, {f.t}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  b.upload();
}

ccv_nnc_cmd_t pool_cmd(uint32_t id, int kh, int kw) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = kh, c.info.size.dim[1] = kw, c.info.size.dim[2] = 1;
  return c;
}

// x 2 x 7 x 9 x 3, a 3 x 3 window, stride 2, padding top 1, left 0, bottom 0,
// right 2: y 2 x 3 x 5 x 3 (and a 2 x 2 window, stride 1, padding 1 / 1 on a
// second shape: overlapping windows that reach past both sides).
TEST(CnnGpu, PoolForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1901);
  struct Shape {
    int H, W, KH, KW;
    ccv_nnc_hint_t hint;
    int OH, OW;
  };
  const Shape shapes[] = {{7, 9, 3, 3, hint_of(2, 2, 1, 0, 0, 2), 3, 5}, {5, 6, 2, 2, hint_of(1, 1, 1, 1, 1, 0), 6, 6}};
  int run = 0;
  for (const Shape& s : shapes)
    for (int type : kTypes)
      for (bool nchw : {false, true})
        for (bool max : {true, false}) {
          const bool view = (run++ % 3) == 1;
          const std::string what = std::string(max ? "MAX" : "AVERAGE") + "_POOL " + type_name(type) +
                                   (nchw ? " NCHW" : " NHWC") + (view ? " views" : "") + " " + std::to_string(s.H) +
                                   "x" + std::to_string(s.W);
          const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
          BothPtr x = both({img(2, s.H, s.W, 3, nchw), view, type, fmt}, rng);
          grid_values(*x, rng, max ? 11 : -1);
          BothPtr y = both({img(2, s.OH, s.OW, 3, nchw), view, type, fmt}, rng);
          run_pair(pool_cmd(max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD, s.KH, s.KW), s.hint,
                   {x.get()}, {y.get()}, what);
          y->expect_close(0, 0, what + " forward");
          BothPtr g = both({img(2, s.OH, s.OW, 3, nchw), !view, type, fmt}, rng);
          BothPtr dx = both({img(2, s.H, s.W, 3, nchw), view, type, fmt}, rng);
          const uint32_t bw = max ? CCV_NNC_MAX_POOL_BACKWARD : CCV_NNC_AVERAGE_POOL_BACKWARD;
          run_pair(pool_cmd(bw, s.KH, s.KW), s.hint, {g.get(), x.get(), y.get()}, {dx.get()}, what);
          dx->expect_close(0, 0, what + " backward");
        }
}

// Left to the registry: GPU_CUDNN, ranked first, takes no 64F (nor, here,
// the asymmetric padding), so the call must land on GPU_REF and match.
TEST(CnnGpu, PoolFallsBackFromCudnn) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1902);
  BothPtr x = both({img(2, 7, 9, 3, false), false, CCV_64F, CCV_TENSOR_FORMAT_NHWC}, rng);
  BothPtr y = both({img(2, 3, 5, 3, false), false, CCV_64F, CCV_TENSOR_FORMAT_NHWC}, rng);
  run_pair(pool_cmd(CCV_NNC_AVERAGE_POOL_FORWARD, 3, 3), hint_of(2, 2, 1, 0, 0, 2), {x.get()}, {y.get()},
           "AVERAGE_POOL 64F, default backend", false);
  y->expect_close(0, 0, "AVERAGE_POOL 64F, default backend");
}

ccv_nnc_cmd_t bn_cmd(uint32_t id, const std::vector<int>& axes, bool test) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.bnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.bnorm.axis[i] = axes[i];
  c.info.bnorm.epsilon = 1e-4f;
  c.info.bnorm.momentum = 0.9f;
  c.info.bnorm.is_test = test ? 1 : 0;
  return c;
}

// x 2 x 5 x 7 x 3 (NHWC, statistics over 0, 1, 2, per-channel tensors [3]),
// 2 x 3 x 5 x 7 (NCHW, over 0, 2, 3, per-channel [1, 3, 1, 1]) or a 3-d
// CHWN 4 x 9 x 5 over axis 1 alone (4 x 5 channels, per-channel [4, 1, 5]);
// the running mean / var updated in place (outputs 1 / 2 are inputs 3 / 4).
void batch_norm_cases(uint32_t seed) {
  std::mt19937 rng(seed);
  int run = 0;
  for (int type : kTypes)
    for (int layout = 0; layout < 3; layout++)
      for (bool test : {false, true}) {
        const bool view = (run++ % 2) == 1;
        const Tol tol = bn_tol(type);
        const char* names[] = {" NHWC", " NCHW", " CHWN 3-d"};
        const std::string what = std::string("BATCH_NORM ") + type_name(type) + names[layout] +
                                 (test ? " inference" : " training") + (view ? " views" : "");
        const int fmt = layout == 0   ? CCV_TENSOR_FORMAT_NHWC
                        : layout == 1 ? CCV_TENSOR_FORMAT_NCHW
                                      : CCV_TENSOR_FORMAT_CHWN;
        const std::vector<int> xd = layout == 2 ? std::vector<int>{4, 9, 5} : img(2, 5, 7, 3, layout == 1);
        const std::vector<int> cd = layout == 0   ? std::vector<int>{3}
                                    : layout == 1 ? std::vector<int>{1, 3, 1, 1}
                                                  : std::vector<int>{4, 1, 5};
        const std::vector<int> axes = layout == 0   ? std::vector<int>{0, 1, 2}
                                      : layout == 1 ? std::vector<int>{0, 2, 3}
                                                    : std::vector<int>{1};
        BothPtr x = both({xd, view, type, fmt}, rng, -2, 3);
        BothPtr y = both({xd, view, type, fmt}, rng);
        BothPtr scale = both({cd, false, type, fmt}, rng, 0.5f, 1.5f), bias = both({cd, false, type, fmt}, rng);
        BothPtr mean = both({cd, false, type, fmt}, rng), var = both({cd, false, type, fmt}, rng, 0.5f, 2);
        BothPtr smean = both({cd, false, type, fmt}, rng), sinv = both({cd, false, type, fmt}, rng);
        if (test)
          run_pair(bn_cmd(CCV_NNC_BATCH_NORM_FORWARD, axes, true), ccv_nnc_no_hint,
                   {x.get(), scale.get(), bias.get(), mean.get(), var.get()}, {y.get()}, what);
        else
          run_pair(bn_cmd(CCV_NNC_BATCH_NORM_FORWARD, axes, false), ccv_nnc_no_hint,
                   {x.get(), scale.get(), bias.get(), mean.get(), var.get()},
                   {y.get(), mean.get(), var.get(), smean.get(), sinv.get()}, what);
        y->expect_close(tol.rtol, tol.atol, what + " y");
        mean->expect_close(tol.rtol, tol.atol, what + " running mean");
        var->expect_close(tol.rtol, tol.atol, what + " running var");
        smean->expect_close(tol.rtol, tol.atol, what + " saved mean");
        sinv->expect_close(tol.rtol, tol.atol, what + " saved inv_std");
        BothPtr g = both({xd, !view, type, fmt}, rng), dx = both({xd, view, type, fmt}, rng);
        BothPtr dscale = both({cd, false, type, fmt}, rng), dbias = both({cd, false, type, fmt}, rng);
        BothPtr dmean = both({cd, false, type, fmt}, rng), dvar = both({cd, false, type, fmt}, rng);
        std::vector<Both*> in = {g.get(), nullptr,     nullptr,    nullptr,     nullptr,
                                 x.get(), scale.get(), bias.get(), mean.get(),  var.get(),
                                 y.get(), mean.get(),  var.get(),  smean.get(), sinv.get()};
        std::vector<Both*> out = {dx.get(), dscale.get(), dbias.get()};
        if (test) out.push_back(dmean.get()), out.push_back(dvar.get());
        run_pair(bn_cmd(CCV_NNC_BATCH_NORM_BACKWARD, axes, test), ccv_nnc_no_hint, in, out, what + " backward");
        dx->expect_close(tol.rtol, tol.atol, what + " dx");
        dscale->expect_close(tol.rtol, tol.atol, what + " dscale");
        dbias->expect_close(tol.rtol, tol.atol, what + " dbias");
        if (test) {
          dmean->expect_close(tol.rtol, tol.atol, what + " dmean");
          dvar->expect_close(tol.rtol, tol.atol, what + " dvar");
        }
      }
}

TEST(CnnGpu, BatchNormTrainAndTest) {
  NNC_REQUIRE_GPU();
  batch_norm_cases(1903);
}

// The same with channels cut into runs (NNC_GPU_BN_MIN_SLICE=4: 17 blocks a
// channel for 70 elements, 2 uneven runs of 4 and 5 for the CHWN case), then
// one thread per element: the sliced schedule large tensors get.
TEST(CnnGpu, BatchNormSliced) {
  NNC_REQUIRE_GPU();
  struct Env {
    Env() { setenv("NNC_GPU_BN_MIN_SLICE", "4", 1); }
    ~Env() { unsetenv("NNC_GPU_BN_MIN_SLICE"); }
  } env;
  batch_norm_cases(1906);
}

ccv_nnc_cmd_t conv_cmd(uint32_t id, int K, int KH, int KW, int C, int groups, int dh, int dw) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = KH, c.info.size.dim[1] = KW, c.info.size.dim[2] = C;
  c.info.convolution.count = K;
  c.info.convolution.groups = groups;
  c.info.convolution.dilation[0] = dh, c.info.convolution.dilation[1] = dw;
  return c;
}

// Case A: N 2, 7 x 9, C 3, K 5, 3 x 3, stride 2, padding 1, 0 / 0, 2 (OH 3,
// OW 5). Case B: C 4, K 6, groups 2, a 3 x 2 window with dilation 2, stride
// 1, padding 2, 1 / 1, 2 (OH 6, OW 10).
TEST(CnnGpu, ConvolutionForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1904);
  struct Case {
    int C, K, KH, KW, G, DH, DW;
    ccv_nnc_hint_t hint;
    int OH, OW;
  };
  const Case cases[] = {{3, 5, 3, 3, 1, 1, 1, hint_of(2, 2, 1, 0, 0, 2), 3, 5},
                        {4, 6, 3, 2, 2, 2, 2, hint_of(1, 1, 2, 1, 1, 2), 6, 10}};
  int run = 0;
  for (const Case& k : cases)
    for (int type : kTypes)
      for (bool nchw : {false, true}) {
        const bool view = (run++ % 3) == 2;
        const bool with_bias = (run % 2) == 0;
        const Tol tol = conv_tol(type);
        const std::string what = std::string("CONVOLUTION ") + type_name(type) + (nchw ? " NCHW" : " NHWC") +
                                 (view ? " views" : "") + " C" + std::to_string(k.C) + " G" + std::to_string(k.G) +
                                 (with_bias ? " bias" : "");
        const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
        const int Cg = k.C / k.G;
        const std::vector<int> wd =
            nchw ? std::vector<int>{k.K, Cg, k.KH, k.KW} : std::vector<int>{k.K, k.KH, k.KW, Cg};
        BothPtr x = both({img(2, 7, 9, k.C, nchw), view, type, fmt}, rng);
        BothPtr w = both({wd, view, type, fmt}, rng);
        BothPtr bias = both({{k.K}, false, type, fmt}, rng);
        BothPtr y = both({img(2, k.OH, k.OW, k.K, nchw), view, type, fmt}, rng);
        const ccv_nnc_cmd_t fw = conv_cmd(CCV_NNC_CONVOLUTION_FORWARD, k.K, k.KH, k.KW, k.C, k.G, k.DH, k.DW);
        if (with_bias)
          run_pair(fw, k.hint, {x.get(), w.get(), bias.get()}, {y.get()}, what);
        else
          run_pair(fw, k.hint, {x.get(), w.get()}, {y.get()}, what);
        y->expect_close(tol.rtol, tol.atol, what + " y");
        BothPtr g = both({img(2, k.OH, k.OW, k.K, nchw), !view, type, fmt}, rng);
        BothPtr dx = both({img(2, 7, 9, k.C, nchw), view, type, fmt}, rng);
        BothPtr dw = both({wd, !view, type, fmt}, rng);
        BothPtr db = both({{k.K}, false, type, fmt}, rng);
        const ccv_nnc_cmd_t bw = conv_cmd(CCV_NNC_CONVOLUTION_BACKWARD, k.K, k.KH, k.KW, k.C, k.G, k.DH, k.DW);
        run_pair(bw, k.hint, {g.get(), x.get(), w.get()}, {dx.get(), dw.get(), db.get()}, what + " backward");
        dx->expect_close(tol.rtol, tol.atol, what + " dx");
        dw->expect_close(tol.rtol, tol.atol, what + " dw");
        db->expect_close(tol.rtol, tol.atol, what + " dbias");
        // dbias alone (neither x nor w read), and dx alone from |g|-|w|.
        BothPtr db2 = both({{k.K}, false, type, fmt}, rng);
        run_pair(bw, k.hint, {g.get(), nullptr, nullptr}, {nullptr, nullptr, db2.get()}, what + " dbias alone");
        db2->expect_close(tol.rtol, tol.atol, what + " dbias alone");
        BothPtr dx2 = both({img(2, 7, 9, k.C, nchw), false, type, fmt}, rng);
        run_pair(bw, k.hint, {g.get(), nullptr, w.get()}, {dx2.get()}, what + " dx alone");
        dx2->expect_close(tol.rtol, tol.atol, what + " dx alone");
      }
}

// The weight gradient in parts of the batch (gpu::conv_dw_parts): the
// default split (one image per part here: few weights), an uneven one (7
// images in 3 parts: 2, 2, 3) and none (1 part), each against CPU_REF.
TEST(CnnGpu, WeightGradientInParts) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1910);
  for (int type : {CCV_32F, CCV_16F, CCV_64F})
    for (const char* parts : {static_cast<const char*>(nullptr), "3", "1"}) {
      const nnc_gpu_test::EnvGuard env("NNC_GPU_CONV_DW_PARTS", parts);
      const Tol tol = conv_tol(type);
      const std::string what = std::string("CONVOLUTION dw ") + type_name(type) + " parts " + (parts ? parts : "default");
      const int fmt = CCV_TENSOR_FORMAT_NHWC;
      BothPtr x = both({img(7, 6, 5, 3, false), false, type, fmt}, rng);
      BothPtr w = both({{4, 3, 3, 3}, false, type, fmt}, rng);
      BothPtr g = both({img(7, 6, 5, 4, false), false, type, fmt}, rng);
      BothPtr dw = both({{4, 3, 3, 3}, true, type, fmt}, rng);
      const ccv_nnc_cmd_t bw = conv_cmd(CCV_NNC_CONVOLUTION_BACKWARD, 4, 3, 3, 3, 1, 1, 1);
      run_pair(bw, hint_of(1, 1, 1, 1, 1, 1), {g.get(), x.get(), w.get()}, {nullptr, dw.get()}, what);
      dw->expect_close(tol.rtol, tol.atol, what);
    }
}

// 3-d (unbatched) images: x 7 x 9 x 3 (NHWC) or 3 x 7 x 9 (NCHW), a 3 x 3
// convolution with padding 1 and a 2 x 2 max pool with stride 2.
TEST(CnnGpu, Unbatched3d) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1905);
  for (int type : {CCV_32F, CCV_16F})
    for (bool nchw : {false, true}) {
      const Tol tol = conv_tol(type);
      const std::string what = std::string("3-d ") + type_name(type) + (nchw ? " NCHW" : " NHWC");
      const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
      auto im3 = [&](int h, int w, int c) { return nchw ? std::vector<int>{c, h, w} : std::vector<int>{h, w, c}; };
      const std::vector<int> wd = {5, 3, 3, 3};  // K, KH, KW, C or K, C, KH, KW: all 3
      BothPtr x = both({im3(7, 9, 3), false, type, fmt}, rng), w = both({wd, false, type, fmt}, rng);
      BothPtr y = both({im3(7, 9, 5), false, type, fmt}, rng);
      const ccv_nnc_hint_t h1 = hint_of(1, 1, 1, 1, 1, 1);
      run_pair(conv_cmd(CCV_NNC_CONVOLUTION_FORWARD, 5, 3, 3, 3, 1, 1, 1), h1, {x.get(), w.get()}, {y.get()}, what);
      y->expect_close(tol.rtol, tol.atol, what + " conv y");
      BothPtr g = both({im3(7, 9, 5), false, type, fmt}, rng), dx = both({im3(7, 9, 3), false, type, fmt}, rng);
      BothPtr dw = both({wd, false, type, fmt}, rng);
      run_pair(conv_cmd(CCV_NNC_CONVOLUTION_BACKWARD, 5, 3, 3, 3, 1, 1, 1), h1, {g.get(), x.get(), w.get()},
               {dx.get(), dw.get()}, what);
      dx->expect_close(tol.rtol, tol.atol, what + " conv dx");
      dw->expect_close(tol.rtol, tol.atol, what + " conv dw");
      BothPtr p = both({im3(3, 4, 3), false, type, fmt}, rng);
      run_pair(pool_cmd(CCV_NNC_MAX_POOL_FORWARD, 2, 2), hint_of(2, 2, 0, 0, 0, 0), {x.get()}, {p.get()}, what);
      p->expect_close(0, 0, what + " max pool");
    }
}

// Refusals: mismatched types, a CPU tensor among GPU ones, and a pooled
// tensor of the wrong shape: an error code and a message naming the command.
TEST(CnnGpu, Refusals) {
  NNC_REQUIRE_GPU();
  Owned x(on_gpu(param_of(img(2, 7, 9, 3, false), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true)));
  Owned y16(on_gpu(param_of(img(2, 3, 5, 3, false), CCV_16F, CCV_TENSOR_FORMAT_NHWC, true)));
  Owned ybad(on_gpu(param_of(img(2, 4, 5, 3, false), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true)));
  Owned ycpu(param_of(img(2, 3, 5, 3, false), CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
  ccv_nnc_cmd_t c = pool_cmd(CCV_NNC_MAX_POOL_FORWARD, 3, 3);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  const ccv_nnc_hint_t h = hint_of(2, 2, 1, 0, 0, 2);
  EXPECT_NE(exec(c, h, {x.t}, {y16.t}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("MAX_POOL_FORWARD"), std::string::npos)
      << ccv_nnc_error_message();
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("16F"), std::string::npos) << ccv_nnc_error_message();
  EXPECT_NE(exec(c, h, {x.t}, {ybad.t}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("pooled tensor"), std::string::npos) << ccv_nnc_error_message();
  EXPECT_NE(exec(c, h, {x.t}, {ycpu.t}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("GPU_REF"), std::string::npos) << ccv_nnc_error_message();
  // A convolution whose weights carry the wrong channel count.
  Owned w(on_gpu(param_of({5, 3, 3, 2}, CCV_32F, CCV_TENSOR_FORMAT_NHWC, true)));
  Owned yc(on_gpu(param_of(img(2, 3, 5, 5, false), CCV_32F, CCV_TENSOR_FORMAT_NHWC, true)));
  ccv_nnc_cmd_t cv = conv_cmd(CCV_NNC_CONVOLUTION_FORWARD, 5, 3, 3, 3, 1, 1, 1);
  cv.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(cv, h, {x.t, w.t}, {yc.t}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("CONVOLUTION_FORWARD"), std::string::npos)
      << ccv_nnc_error_message();
}

}  // namespace
