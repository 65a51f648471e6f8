// The GPU_REF convolution, pooling and batch norm kernels' formulas and
// index maps (cmd/common/gpu_cnn.hpp) and their arguments
// (cmd/common/gpu_cnn_args.hpp), run on the CPU in the kernels' own walk
// (cuda/cnn_kernels.cu: one call per output element, per weight, per
// filter, per channel) against the CPU_REF kernels of the same commands.
// Random inputs with fixed seeds; 32F, 16F, 16BF and 64F; NHWC and NCHW;
// odd shapes (7 x 9, stride 2, asymmetric padding, dilation 2, groups 2);
// ties and a NaN for the maxima; batch norm in training and inference.
//
// Exactness: pooling does CPU_REF's double operations in its order, so
// every pooled element and every dx is asserted EQUAL to the bit. Batch
// norm sums in double in the kernels' order (one pass per channel, here
// sequential): differences far below the output type's rounding, so <= 1 ulp
// after it: rtol / atol 1e-6 (32F, 64F compared as double at 1e-12), 2e-3
// (16F), 1.6e-2 (16BF). Convolution sums in float (32F / 16F / 16BF) or
// double (64F) against CPU_REF's double: at most 126 terms of |t| <= 1,
// float error <= 126 2^-24 sum |t| (< 1e-3, ~1e-6 typical): 32F rtol 1e-5,
// atol 1e-4; 16F / 16BF one ulp of the output (2e-3 / 1.6e-2); 64F 1e-12.
#include "cmd/common/gpu_cnn.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cmd/common/gpu_cnn_args.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using namespace nnc::gpu;

const int kTypes[] = {CCV_32F, CCV_16F, CCV_16BF, CCV_64F};

struct Tensor {
  ccv_nnc_tensor_t* t = nullptr;
  Tensor(int type, std::vector<int> dim, int format) {
    ccv_nnc_tensor_param_t p{};
    p.type = CCV_TENSOR_CPU_MEMORY;
    p.format = format;
    p.datatype = type;
    for (size_t i = 0; i < dim.size(); i++) p.dim[i] = dim[i];
    t = ccv_nnc_tensor_new(nullptr, p, 0);
  }
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  size_t count() const { return ccv_nnc_tensor_count(t->info); }
  int type() const { return CCV_GET_DATA_TYPE(t->info.datatype); }
  double at(size_t i) const { return nnc::load_double(t->data.u8 + i * nnc::datatype_size(type()), type()); }
  void set(size_t i, double v) { nnc::store_double(t->data.u8 + i * nnc::datatype_size(type()), type(), v); }
  size_t bytes() const { return count() * nnc::datatype_size(type()); }
};

// Uniform in [lo, hi), or (grid) on a grid of 1/4 in [-1, 1] for ties.
void fill(Tensor& x, std::mt19937& rng, double lo = -1, double hi = 1, bool grid = false) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> q(-4, 4);
  for (size_t i = 0; i < x.count(); i++) x.set(i, grid ? 0.25 * q(rng) : u(rng));
}

void copy(Tensor& to, const Tensor& from) { std::memcpy(to.t->data.u8, from.t->data.u8, from.bytes()); }

void cpu_ref(ccv_nnc_cmd_t c, ccv_nnc_hint_t h, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(ccv_nnc_cmd_exec(c, h, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                             nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
}

ccv_nnc_cmd_t make_cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

ccv_nnc_hint_t hint_of(int sh, int sw, int top, int left, int bottom, int right) {
  ccv_nnc_hint_t h;
  std::memset(&h, 0, sizeof(h));
  h.stride.dim[0] = sh, h.stride.dim[1] = sw;
  h.border.begin[0] = top, h.border.begin[1] = left;
  h.border.end[0] = bottom, h.border.end[1] = right;
  return h;
}

std::vector<int> img(int n, int h, int w, int c, bool nchw) {
  return nchw ? std::vector<int>{n, c, h, w} : std::vector<int>{n, h, w, c};
}

void expect_same_bytes(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.bytes(), b.bytes()) << what;
  size_t bad = 0;
  const size_t es = nnc::datatype_size(a.type());
  for (size_t i = 0; i < a.count(); i++)
    if (std::memcmp(a.t->data.u8 + i * es, b.t->data.u8 + i * es, es) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a.at(i) << ", CPU_REF " << b.at(i);
  EXPECT_EQ(bad, 0u) << what;
}

void expect_close(const Tensor& a, const Tensor& b, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(a.count(), b.count()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < a.count(); i++) {
    const double x = a.at(i), y = b.at(i);
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << x << ", CPU_REF " << y;
  }
  EXPECT_EQ(bad, 0u) << what;
}

// --- index maps ------------------------------------------------------------

// The weight gradient's parts (gpu::conv_dw_parts): enough threads, at most
// the batch and 64 parts, the override capped at the batch, and the parts'
// image runs cover the batch once, in order, none empty.
TEST(GpuCnn, WeightGradientPartsCoverTheBatchOnce) {
  using nnc::gpu::conv_dw_parts;
  EXPECT_EQ(conv_dw_parts(int64_t{1} << 20, 64), 1);   // weights enough to fill the GPU
  EXPECT_EQ(conv_dw_parts(int64_t{1} << 16, 64), 4);   // 2^18 threads
  EXPECT_EQ(conv_dw_parts(51200, 64), 6);              // the reference network's conv2: ceil(2^18 / 51200)
  EXPECT_EQ(conv_dw_parts(800, 64), 64);               // capped by the batch (and 64)
  EXPECT_EQ(conv_dw_parts(800, 500), 64);
  EXPECT_EQ(conv_dw_parts(800, 5), 5);
  EXPECT_EQ(conv_dw_parts(800, 1), 1);
  EXPECT_EQ(conv_dw_parts(0, 8), 1);
  EXPECT_EQ(conv_dw_parts(800, 7, 3), 3);  // asked for
  EXPECT_EQ(conv_dw_parts(800, 7, 100), 7);
  EXPECT_EQ(conv_dw_parts(int64_t{1} << 20, 7, 2), 2);
  for (int N : {1, 2, 7, 64, 100})
    for (int P = 1; P <= N && P <= 64; P++) {
      EXPECT_EQ(nnc::gpu::conv_dw_part_begin(N, P, 0), 0);
      EXPECT_EQ(nnc::gpu::conv_dw_part_begin(N, P, P), N);
      for (int p = 0; p < P; p++)
        EXPECT_LT(nnc::gpu::conv_dw_part_begin(N, P, p), nnc::gpu::conv_dw_part_begin(N, P, p + 1))
            << "N " << N << " parts " << P << " part " << p;
    }
}

TEST(GpuCnn, WalkCoversEveryElementOnce) {
  for (bool nchw : {false, true}) {
    Tensor x(CCV_32F, img(2, 3, 5, 4, nchw), nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC);
    const CnnImage im = cnn_image(nnc::image_of(x.t));
    const bool cfast = cnn_channels_fast(im);
    EXPECT_EQ(cfast, !nchw);
    std::set<int64_t> seen;
    int64_t prev = -1;
    bool contiguous = true;
    for (int64_t t = 0; t < cnn_count(im); t++) {
      int n, h, w, c;
      cnn_index(im, cfast, t, &n, &h, &w, &c);
      ASSERT_TRUE(n >= 0 && n < 2 && h >= 0 && h < 3 && w >= 0 && w < 5 && c >= 0 && c < 4);
      const int64_t off = cnn_off(im, n, h, w, c);
      seen.insert(off);
      contiguous = contiguous && off == prev + 1;  // neighbouring threads, neighbouring memory
      prev = off;
    }
    EXPECT_EQ(seen.size(), x.count());
    EXPECT_TRUE(contiguous) << (nchw ? "NCHW" : "NHWC");
  }
  // Weights: channels fastest.
  CnnWeights w;
  w.k = 3, w.kh = 2, w.kw = 5, w.c = 4;
  std::set<std::vector<int>> ws;
  for (int64_t t = 0; t < 3 * 2 * 5 * 4; t++) {
    int k, kh, kw, c;
    cnn_weight_index(w, t, &k, &kh, &kw, &c);
    ws.insert({k, kh, kw, c});
    if (t == 1) {
      EXPECT_EQ(c, 1);
    }
  }
  EXPECT_EQ(ws.size(), 120u);
}

// pool_covering and conv_source against brute force over every case small enough.
TEST(GpuCnn, CoveringAndSourceMaps) {
  for (int k = 1; k <= 4; k++)
    for (int s = 1; s <= 3; s++)
      for (int p = 0; p < k; p++)
        for (int in = k; in <= 9; in++) {
          const int out = (in + p + 1 - k) / s + 1;  // bottom padding 1
          for (int i = 0; i < in; i++) {
            int lo, hi;
            pool_covering(i, k, s, p, out, &lo, &hi);
            for (int o = 0; o < out; o++) {
              const bool covers = o * s - p <= i && i < o * s - p + k;
              EXPECT_EQ(covers, o >= lo && o < hi) << "i " << i << " k " << k << " s " << s << " p " << p;
            }
          }
        }
  for (int d = 1; d <= 3; d++)
    for (int s = 1; s <= 3; s++)
      for (int p = 0; p <= 3; p++)
        for (int tap = 0; tap < 3; tap++)
          for (int i = 0; i < 9; i++) {
            const int out = 5;
            int o = -1, want = -1;
            for (int j = 0; j < out; j++)
              if (j * s + tap * d - p == i) want = j;
            const bool found = conv_source(i, tap, d, s, p, out, &o);
            EXPECT_EQ(found, want >= 0);
            if (found) {
              EXPECT_EQ(o, want);
            }
          }
  EXPECT_EQ(cnn_floor_div(-1, 2), -1);
  EXPECT_EQ(cnn_floor_div(-4, 2), -2);
  EXPECT_EQ(cnn_floor_div(5, 2), 2);
}

// --- pooling -------------------------------------------------------------------

ccv_nnc_cmd_t pool_cmd(uint32_t id, int kh, int kw) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = kh, c.info.size.dim[1] = kw, c.info.size.dim[2] = 1;
  return c;
}

TEST(GpuCnn, PoolMatchesCpuRefBitForBit) {
  std::mt19937 rng(2001);
  struct Shape {
    int H, W, KH, KW;
    ccv_nnc_hint_t hint;
    int OH, OW;
  };
  const Shape shapes[] = {{7, 9, 3, 3, hint_of(2, 2, 1, 0, 0, 2), 3, 5}, {5, 6, 2, 2, hint_of(1, 1, 1, 1, 1, 0), 6, 6}};
  for (const Shape& s : shapes)
    for (int type : kTypes)
      for (bool nchw : {false, true})
        for (bool max : {true, false}) {
          const std::string what = std::string(max ? "MAX" : "AVERAGE") + " " + nnc::datatype_name(type) +
                                   (nchw ? " NCHW " : " NHWC ") + std::to_string(s.H);
          const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
          Tensor x(type, img(2, s.H, s.W, 3, nchw), fmt), y(type, img(2, s.OH, s.OW, 3, nchw), fmt),
              yk(type, img(2, s.OH, s.OW, 3, nchw), fmt);
          fill(x, rng, -1, 1, true);
          if (max) x.set(13, NAN);
          const uint32_t fw = max ? CCV_NNC_MAX_POOL_FORWARD : CCV_NNC_AVERAGE_POOL_FORWARD;
          cpu_ref(pool_cmd(fw, s.KH, s.KW), s.hint, {x.t}, {y.t});
          const nnc::pool::Geometry g = nnc::pool::geometry(pool_cmd(fw, s.KH, s.KW), s.hint, x.t, yk.t, "test");
          const PoolGeom pg = pool_geom(g, max);
          const CnnImage xi = cnn_image(g.x), yi = cnn_image(g.y);
          for (int64_t t = 0; t < cnn_count(yi); t++) {
            int n, oh, ow, c;
            cnn_index(yi, cnn_channels_fast(yi), t, &n, &oh, &ow, &c);
            cnn_st(yi.p, yi.type, cnn_off(yi, n, oh, ow, c), pool_forward_at(pg, xi, n, oh, ow, c));
          }
          expect_same_bytes(yk, y, what + " forward");
          Tensor gy(type, img(2, s.OH, s.OW, 3, nchw), fmt), dx(type, img(2, s.H, s.W, 3, nchw), fmt),
              dxk(type, img(2, s.H, s.W, 3, nchw), fmt);
          fill(gy, rng);
          const uint32_t bw = max ? CCV_NNC_MAX_POOL_BACKWARD : CCV_NNC_AVERAGE_POOL_BACKWARD;
          cpu_ref(pool_cmd(bw, s.KH, s.KW), s.hint, {gy.t, x.t, y.t}, {dx.t});
          const CnnImage gi = cnn_image(nnc::image_of(gy.t)), di = cnn_image(nnc::image_of(dxk.t));
          for (int64_t t = 0; t < cnn_count(di); t++) {
            int n, h, w, c;
            cnn_index(di, cnn_channels_fast(di), t, &n, &h, &w, &c);
            cnn_st(di.p, di.type, cnn_off(di, n, h, w, c), pool_backward_at(pg, xi, gi, n, h, w, c));
          }
          expect_same_bytes(dxk, dx, what + " backward");
          if (max) {  // the kernels' two steps: every window's maximum, then the gather through them
            std::vector<int32_t> am(static_cast<size_t>(cnn_count(gi)));
            for (int n = 0; n < 2; n++)
              for (int oh = 0; oh < s.OH; oh++)
                for (int ow = 0; ow < s.OW; ow++)
                  for (int c = 0; c < 3; c++)
                    am[pool_am_index(pg, n, oh, ow, c)] = pool_argmax_at(pg, xi, n, oh, ow, c);
            Tensor dx2(type, img(2, s.H, s.W, 3, nchw), fmt);
            const CnnImage d2 = cnn_image(nnc::image_of(dx2.t));
            for (int64_t t = 0; t < cnn_count(d2); t++) {
              int n, h, w, c;
              cnn_index(d2, cnn_channels_fast(d2), t, &n, &h, &w, &c);
              cnn_st(d2.p, d2.type, cnn_off(d2, n, h, w, c), pool_max_backward_at(pg, am.data(), gi, n, h, w, c));
            }
            expect_same_bytes(dx2, dx, what + " backward through the maxima");
          }
        }
}

// --- convolution ------------------------------------------------------------

ccv_nnc_cmd_t conv_cmd(uint32_t id, int K, int KH, int KW, int C, int groups, int dh, int dw) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.size.dim[0] = KH, c.info.size.dim[1] = KW, c.info.size.dim[2] = C;
  c.info.convolution.count = K;
  c.info.convolution.groups = groups;
  c.info.convolution.dilation[0] = dh, c.info.convolution.dilation[1] = dw;
  return c;
}

template <class A>
void conv_walk(const ConvGeom& g, const CnnImage& x, const CnnWeights& w, const void* bias, int64_t bs,
               const CnnImage& y, const CnnImage& gy, const CnnImage& dx, const CnnWeights& dw, void* db) {
  for (int64_t t = 0; t < cnn_count(y); t++) {
    int n, oh, ow, k;
    cnn_index(y, cnn_channels_fast(y), t, &n, &oh, &ow, &k);
    A s = bias ? cnn_ld<A>(bias, y.type, k * bs) : A(0);
    s += conv_forward_at<A>(g, x, w, n, oh, ow, k);
    cnn_st(y.p, y.type, cnn_off(y, n, oh, ow, k), static_cast<double>(s));
  }
  for (int64_t t = 0; t < cnn_count(dx); t++) {
    int n, h, x0, c;
    cnn_index(dx, cnn_channels_fast(dx), t, &n, &h, &x0, &c);
    cnn_st(dx.p, dx.type, cnn_off(dx, n, h, x0, c), static_cast<double>(conv_dx_at<A>(g, gy, w, n, h, x0, c)));
  }
  for (int64_t t = 0; t < static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c; t++) {
    int k, kh, kw, c;
    cnn_weight_index(dw, t, &k, &kh, &kw, &c);
    cnn_st(dw.p, dw.type, cnn_woff(dw, k, kh, kw, c), static_cast<double>(conv_dw_at<A>(g, gy, x, k, kh, kw, c)));
  }
  for (int k = 0; k < gy.c; k++) {
    A s = 0;
    for (int n = 0; n < gy.n; n++)
      for (int h = 0; h < gy.h; h++)
        for (int w0 = 0; w0 < gy.w; w0++) s += cnn_ld<A>(gy.p, gy.type, cnn_off(gy, n, h, w0, k));
    cnn_st(db, gy.type, k, static_cast<double>(s));
  }
}

TEST(GpuCnn, ConvolutionMatchesCpuRef) {
  std::mt19937 rng(2002);
  struct Case {
    int C, K, KH, KW, G, DH, DW;
    ccv_nnc_hint_t hint;
    int OH, OW;
  };
  const Case cases[] = {{3, 5, 3, 3, 1, 1, 1, hint_of(2, 2, 1, 0, 0, 2), 3, 5},
                        {4, 6, 3, 2, 2, 2, 2, hint_of(1, 1, 2, 1, 1, 2), 6, 10}};
  for (const Case& k : cases)
    for (int type : kTypes)
      for (bool nchw : {false, true}) {
        const std::string what = std::string("CONVOLUTION ") + nnc::datatype_name(type) + (nchw ? " NCHW" : " NHWC") +
                                 " G" + std::to_string(k.G);
        const double rtol = type == CCV_16F ? 2e-3 : type == CCV_16BF ? 1.6e-2 : type == CCV_64F ? 1e-12 : 1e-5;
        const double atol = type == CCV_16F ? 2e-3 : type == CCV_16BF ? 1.6e-2 : type == CCV_64F ? 1e-12 : 1e-4;
        const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
        const int Cg = k.C / k.G;
        const std::vector<int> wd =
            nchw ? std::vector<int>{k.K, Cg, k.KH, k.KW} : std::vector<int>{k.K, k.KH, k.KW, Cg};
        Tensor x(type, img(2, 7, 9, k.C, nchw), fmt), w(type, wd, fmt), bias(type, {k.K}, fmt);
        Tensor y(type, img(2, k.OH, k.OW, k.K, nchw), fmt), yk(type, img(2, k.OH, k.OW, k.K, nchw), fmt);
        Tensor gy(type, img(2, k.OH, k.OW, k.K, nchw), fmt);
        Tensor dx(type, img(2, 7, 9, k.C, nchw), fmt), dxk(type, img(2, 7, 9, k.C, nchw), fmt);
        Tensor dw(type, wd, fmt), dwk(type, wd, fmt), db(type, {k.K}, fmt), dbk(type, {k.K}, fmt);
        fill(x, rng), fill(w, rng), fill(bias, rng), fill(gy, rng);
        const ccv_nnc_cmd_t fw = conv_cmd(CCV_NNC_CONVOLUTION_FORWARD, k.K, k.KH, k.KW, k.C, k.G, k.DH, k.DW);
        const ccv_nnc_cmd_t bw = conv_cmd(CCV_NNC_CONVOLUTION_BACKWARD, k.K, k.KH, k.KW, k.C, k.G, k.DH, k.DW);
        cpu_ref(fw, k.hint, {x.t, w.t, bias.t}, {y.t});
        cpu_ref(bw, k.hint, {gy.t, x.t, w.t}, {dx.t, dw.t, db.t});
        const nnc::conv::Geometry g = nnc::conv::geometry(fw, k.hint, x.t, w.t, bias.t, yk.t, "test");
        const ConvGeom cg = conv_geom(g);
        const CnnImage gi = cnn_image(nnc::image_of(gy.t)), di = cnn_image(nnc::image_of(dxk.t));
        const CnnWeights dwi = cnn_weights(nnc::conv::weights_of(dwk.t));
        const int64_t bs = k_stride(bias.t, k.K);
        if (type == CCV_64F)
          conv_walk<double>(cg, cnn_image(g.x), cnn_weights(g.w), g.bias, bs, cnn_image(g.y), gi, di, dwi,
                            dbk.t->data.u8);
        else
          conv_walk<float>(cg, cnn_image(g.x), cnn_weights(g.w), g.bias, bs, cnn_image(g.y), gi, di, dwi,
                           dbk.t->data.u8);
        expect_close(yk, y, rtol, atol, what + " y");
        expect_close(dxk, dx, rtol, atol, what + " dx");
        expect_close(dwk, dw, rtol, atol, what + " dw");
        expect_close(dbk, db, rtol, atol, what + " dbias");
      }
}

// --- batch norm --------------------------------------------------------------

ccv_nnc_cmd_t bn_cmd(uint32_t id, const std::vector<int>& axes, bool test) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.bnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.bnorm.axis[i] = axes[i];
  c.info.bnorm.epsilon = 1e-4f;
  c.info.bnorm.momentum = 0.9f;
  c.info.bnorm.is_test = test ? 1 : 0;
  return c;
}

// The kernels' per-channel walk (bn_forward_kernel / bn_backward_kernel), sequential.
void bn_forward_walk(const BnArgs& a) {
  for (int64_t k = 0; k < a.channels; k++) {
    double mean, inv;
    if (a.is_test) {
      mean = bn_small_ld(a, kBnMean, k, 0.0);
      inv = 1.0 / std::sqrt(bn_small_ld(a, kBnVar, k, 1.0) + a.epsilon);
    } else {
      double s = 0;
      for (int64_t r = 0; r < a.per_channel; r++) s += cnn_ld<double>(a.big[kBnX].p, a.type, bn_big_off(a, kBnX, k, r));
      mean = s / static_cast<double>(a.per_channel);
      s = 0;
      for (int64_t r = 0; r < a.per_channel; r++) {
        const double d = cnn_ld<double>(a.big[kBnX].p, a.type, bn_big_off(a, kBnX, k, r)) - mean;
        s += d * d;
      }
      inv = bn_channel_outputs(a, k, mean, s / static_cast<double>(a.per_channel));
    }
    const double scale = bn_small_ld(a, kBnScale, k, 1.0), bias = bn_small_ld(a, kBnBias, k, 0.0);
    for (int64_t r = 0; r < a.per_channel; r++)
      cnn_st(a.big[kBnY].p, a.type, bn_big_off(a, kBnY, k, r),
             bn_y(cnn_ld<double>(a.big[kBnX].p, a.type, bn_big_off(a, kBnX, k, r)), mean, inv, scale, bias));
  }
}

void bn_backward_walk(const BnArgs& a) {
  for (int64_t k = 0; k < a.channels; k++) {
    double mean, inv;
    bn_backward_stats(a, k, &mean, &inv);
    const double scale = bn_small_ld(a, kBnScale, k, 1.0);
    double v[4] = {0, 0, 0, 0};
    for (int64_t r = 0; r < a.per_channel; r++) {
      const double g = cnn_ld<double>(a.big[kBnG].p, a.type, bn_big_off(a, kBnG, k, r));
      const double xhat = (cnn_ld<double>(a.big[kBnX].p, a.type, bn_big_off(a, kBnX, k, r)) - mean) * inv;
      v[0] += g * scale, v[1] += g * scale * xhat, v[2] += g * xhat, v[3] += g;
    }
    bn_backward_channel(a, k, inv, v[0], v[1], v[2], v[3]);
    if (!a.big[kBnDx].p) continue;
    for (int64_t r = 0; r < a.per_channel; r++) {
      const double g = cnn_ld<double>(a.big[kBnG].p, a.type, bn_big_off(a, kBnG, k, r));
      const double xhat = (cnn_ld<double>(a.big[kBnX].p, a.type, bn_big_off(a, kBnX, k, r)) - mean) * inv;
      cnn_st(a.big[kBnDx].p, a.type, bn_big_off(a, kBnDx, k, r), bn_dx(a, g * scale, xhat, inv, v[0], v[1]));
    }
  }
}

TEST(GpuCnn, BatchNormMatchesCpuRef) {
  std::mt19937 rng(2003);
  for (int type : kTypes)
    for (int layout = 0; layout < 3; layout++)
      for (bool test : {false, true}) {
        // NHWC over 0, 1, 2 with [3]; NCHW over 0, 2, 3 with [1, 3, 1, 1]; a
        // CHWN 3-d [4, 3, 5] over axis 1 alone: 4 x 5 channels, per-channel [4, 1, 5].
        const bool nchw = layout == 1;
        const std::vector<int> xd = layout == 2 ? std::vector<int>{4, 3, 5} : img(2, 5, 7, 3, nchw);
        const std::vector<int> cd = layout == 0   ? std::vector<int>{3}
                                    : layout == 1 ? std::vector<int>{1, 3, 1, 1}
                                                  : std::vector<int>{4, 1, 5};
        const std::vector<int> axes = layout == 0   ? std::vector<int>{0, 1, 2}
                                      : layout == 1 ? std::vector<int>{0, 2, 3}
                                                    : std::vector<int>{1};
        const std::string what = std::string("BATCH_NORM ") + nnc::datatype_name(type) + " layout " +
                                 std::to_string(layout) + (test ? " inference" : " training");
        const double tol = type == CCV_16F ? 2e-3 : type == CCV_16BF ? 1.6e-2 : type == CCV_64F ? 1e-12 : 1e-6;
        const int fmt = layout == 2 ? CCV_TENSOR_FORMAT_CHWN : nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
        Tensor x(type, xd, fmt), scale(type, cd, fmt), bias(type, cd, fmt);
        Tensor mean(type, cd, fmt), var(type, cd, fmt), meank(type, cd, fmt), vark(type, cd, fmt);
        Tensor y(type, xd, fmt), yk(type, xd, fmt), sm(type, cd, fmt), smk(type, cd, fmt), si(type, cd, fmt),
            sik(type, cd, fmt);
        fill(x, rng, -2, 3), fill(scale, rng, 0.5, 1.5), fill(bias, rng), fill(mean, rng), fill(var, rng, 0.5, 2);
        copy(meank, mean), copy(vark, var);
        const ccv_nnc_cmd_t fw = bn_cmd(CCV_NNC_BATCH_NORM_FORWARD, axes, test);
        std::vector<ccv_nnc_tensor_t*> out = {y.t, mean.t, var.t, sm.t, si.t};
        std::vector<ccv_nnc_tensor_t*> outk = {yk.t, meank.t, vark.t, smk.t, sik.t};
        if (test) out.resize(1), outk.resize(1);
        cpu_ref(fw, ccv_nnc_no_hint, {x.t, scale.t, bias.t, mean.t, var.t}, out);
        std::vector<ccv_nnc_tensor_t*> in = {x.t, scale.t, bias.t, meank.t, vark.t};
        bn_forward_walk(
            bn_args(fw, nnc::norm::batch_norm_forward_io(in.data(), 5, outk.data(), static_cast<int>(outk.size())),
                    true, "test"));
        expect_close(yk, y, tol, tol, what + " y");
        if (!test) {
          expect_close(meank, mean, tol, tol, what + " running mean");
          expect_close(vark, var, tol, tol, what + " running var");
          expect_close(smk, sm, tol, tol, what + " saved mean");
          expect_close(sik, si, tol, tol, what + " saved inv_std");
        }
        Tensor g(type, xd, fmt), dx(type, xd, fmt), dxk(type, xd, fmt), ds(type, cd, fmt), dsk(type, cd, fmt),
            dbi(type, cd, fmt), dbik(type, cd, fmt), dm(type, cd, fmt), dmk(type, cd, fmt), dv(type, cd, fmt),
            dvk(type, cd, fmt);
        fill(g, rng);
        const ccv_nnc_cmd_t bw = bn_cmd(CCV_NNC_BATCH_NORM_BACKWARD, axes, test);
        std::vector<ccv_nnc_tensor_t*> bin = {g.t,    nullptr, nullptr, nullptr, nullptr, x.t,  scale.t, bias.t,
                                              mean.t, var.t,   y.t,     mean.t,  var.t,   sm.t, si.t};
        std::vector<ccv_nnc_tensor_t*> bout = {dx.t, ds.t, dbi.t, dm.t, dv.t},
                                       boutk = {dxk.t, dsk.t, dbik.t, dmk.t, dvk.t};
        cpu_ref(bw, ccv_nnc_no_hint, bin, bout);
        bn_backward_walk(
            bn_args(bw, nnc::norm::batch_norm_backward_io(bin.data(), 15, boutk.data(), 5), false, "test"));
        expect_close(dxk, dx, tol, tol, what + " dx");
        expect_close(dsk, ds, tol, tol, what + " dscale");
        expect_close(dbik, dbi, tol, tol, what + " dbias");
        expect_close(dmk, dm, tol, tol, what + " dmean");
        expect_close(dvk, dv, tol, tol, what + " dvar");
      }
}

// The sliced schedule's maps: bn_split_index walks a packed x in memory order
// (element t at offset t) for every layout and axis set; the runs of
// bn_slice_begin partition each channel; bn_slices' choices.
TEST(GpuCnn, BatchNormSlicedMaps) {
  struct Case {
    std::vector<int> dim;
    std::vector<int> axes;
  };
  const Case cases[] = {{{2, 5, 7, 3}, {0, 1, 2}}, {{2, 3, 5, 7}, {0, 2, 3}}, {{4, 9, 5}, {1}}, {{3, 4, 5}, {0, 2}}};
  for (const Case& c : cases) {
    Tensor x(CCV_32F, c.dim, CCV_TENSOR_FORMAT_NHWC), y(CCV_32F, c.dim, CCV_TENSOR_FORMAT_NHWC);
    const ccv_nnc_cmd_t fw = bn_cmd(CCV_NNC_BATCH_NORM_FORWARD, c.axes, true);
    std::vector<ccv_nnc_tensor_t*> in = {x.t, nullptr, nullptr, nullptr, nullptr}, out = {y.t};
    const BnArgs a = bn_args(fw, nnc::norm::batch_norm_forward_io(in.data(), 5, out.data(), 1), true, "test");
    ASSERT_EQ(static_cast<size_t>(a.channels * a.per_channel), x.count());
    for (int64_t t = 0; t < a.channels * a.per_channel; t++) {
      int64_t k, r;
      bn_split_index(a, t, &k, &r);
      ASSERT_TRUE(k >= 0 && k < a.channels && r >= 0 && r < a.per_channel);
      ASSERT_EQ(bn_big_off(a, kBnX, k, r), t) << "element " << t;
    }
  }
  for (int64_t R : {1, 7, 70, 4096, 100000})
    for (int64_t S : {1, 2, 3, 17, 1024}) {
      if (S > R) continue;
      EXPECT_EQ(bn_slice_begin(R, S, 0), 0);
      EXPECT_EQ(bn_slice_begin(R, S, S), R);
      for (int64_t s = 0; s < S; s++) EXPECT_LT(bn_slice_begin(R, S, s), bn_slice_begin(R, S, s + 1));
    }
  EXPECT_EQ(bn_slices(64, 100352, 4096), 8);    // 64 channels of 32 x 56 x 56: 8 runs each, 512 blocks
  EXPECT_EQ(bn_slices(3, 1 << 20, 4096), 171);  // few long channels: ~512 blocks
  EXPECT_EQ(bn_slices(1, 1 << 24, 4096), 512);  // one channel
  EXPECT_EQ(bn_slices(512, 1 << 20, 4096), 1);  // the channels fill the device
  EXPECT_EQ(bn_slices(64, 8191, 4096), 1);      // short channels
  EXPECT_EQ(bn_slices(3, 70, 4), 17);           // the GPU test's NNC_GPU_BN_MIN_SLICE=4
}

// bn_args refuses a per-channel tensor of the wrong count, with a message.
TEST(GpuCnn, BatchNormArgsRefuseMisfits) {
  Tensor x(CCV_32F, {2, 5, 3}, CCV_TENSOR_FORMAT_NHWC), y(CCV_32F, {2, 5, 3}, CCV_TENSOR_FORMAT_NHWC),
      s(CCV_32F, {4}, CCV_TENSOR_FORMAT_NHWC), b(CCV_32F, {3}, CCV_TENSOR_FORMAT_NHWC);
  const ccv_nnc_cmd_t fw = bn_cmd(CCV_NNC_BATCH_NORM_FORWARD, {0, 1}, false);
  std::vector<ccv_nnc_tensor_t*> in = {x.t, s.t, b.t, nullptr, nullptr}, out = {y.t};
  try {
    bn_args(fw, nnc::norm::batch_norm_forward_io(in.data(), 5, out.data(), 1), true, "BATCH_NORM_FORWARD");
    ADD_FAILURE() << "no error";
  } catch (const nnc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("per-channel"), std::string::npos) << e.what();
  }
}

// GPU_CUDNN is tried before GPU_REF (backend_rank), so GPU_REF is the fallback.
TEST(GpuCnn, CudnnRanksBeforeGpuRef) {
  EXPECT_LT(nnc::backend_rank(CCV_NNC_BACKEND_GPU_CUDNN), nnc::backend_rank(CCV_NNC_BACKEND_GPU_REF));
  EXPECT_LT(nnc::backend_rank(CCV_NNC_BACKEND_GPU_REF), nnc::backend_rank(CCV_NNC_BACKEND_CPU_REF));
}

}  // namespace
