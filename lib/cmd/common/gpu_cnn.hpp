// Per-element formulas and index maps of the GPU_REF convolution, pooling
// and batch norm kernels (cuda/cnn_kernels.cu), as host+device code, tested
// on the CPU (test/unit/gpu_cnn) against the CPU_REF kernels of
// lib/cmd/convolution, lib/cmd/pool and lib/cmd/norm.
//
// Every kernel is "one thread per output element" (or one block per batch
// norm channel / per bias), so everything a thread does is one call here:
//   pool_forward_at / pool_backward_at   a pooled element / a dx element (a
//                                        gather over the windows covering it);
//   conv_forward_at / conv_dx_at /       an output element / a dx element (a
//   conv_dw_at                           gather, no atomics) / a weight element;
//   bn_* (with bn_offset)                batch norm's per-channel walk.
// Storage types use cuda::GpuType's codes (0 32F, 1 16F, 2 16BF, 3 64F);
// values are read exactly (cnn_ld) and stored as nnc::store_double does
// (cnn_st: 16F / 16BF through float), so a double result is CPU_REF's bits.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cstdint>

#include "cmd/common/gpu_misc.hpp"
#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

enum CnnType : int { kCnnF32 = 0, kCnnF16 = 1, kCnnBF16 = 2, kCnnF64 = 3 };

// Element off of a float array of type `type`, exactly, as A (float or double).
template <class A>
NNC_HD A cnn_ld(const void* p, int type, int64_t off) {
  switch (type) {
    case kCnnF32:
      return static_cast<A>(static_cast<const float*>(p)[off]);
    case kCnnF16:
      return static_cast<A>(float_from_half(static_cast<const uint16_t*>(p)[off]));
    case kCnnBF16: {
      const uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[off]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return static_cast<A>(f);
    }
    default:
      return static_cast<A>(static_cast<const double*>(p)[off]);
  }
}

// v stored as nnc::store_double does (16F / 16BF through float).
NNC_HD void cnn_st(void* p, int type, int64_t off, double v) {
  switch (type) {
    case kCnnF32:
      static_cast<float*>(p)[off] = static_cast<float>(v);
      break;
    case kCnnF16:
      static_cast<uint16_t*>(p)[off] = half_from_float(static_cast<float>(v));
      break;
    case kCnnBF16:
      static_cast<uint16_t*>(p)[off] = bf16_from_float(static_cast<float>(v));
      break;
    default:
      static_cast<double*>(p)[off] = v;
  }
}

// A 3-d or 4-d image (or view) in NHWC order of meaning, strides in elements
// (nnc::Image with a type code).
struct CnnImage {
  void* p = nullptr;
  int type = kCnnF32;
  int n = 1, h = 0, w = 0, c = 0;
  int64_t sn = 0, sh = 0, sw = 0, sc = 0;
};
NNC_HD int64_t cnn_off(const CnnImage& im, int n, int h, int w, int c) {
  return n * im.sn + h * im.sh + w * im.sw + c * im.sc;
}
NNC_HD int64_t cnn_count(const CnnImage& im) { return static_cast<int64_t>(im.n) * im.h * im.w * im.c; }

// Element t of an image's n * h * w * c in the walk order a kernel uses:
// channels fastest when they are contiguous (NHWC), else columns (NCHW), so
// neighbouring threads touch neighbouring memory.
NNC_HD bool cnn_channels_fast(const CnnImage& im) { return im.sc <= im.sw; }
NNC_HD void cnn_index(const CnnImage& im, bool channels_fast, int64_t t, int* n, int* h, int* w, int* c) {
  if (channels_fast) {
    *c = static_cast<int>(t % im.c), t /= im.c;
    *w = static_cast<int>(t % im.w), t /= im.w;
    *h = static_cast<int>(t % im.h), t /= im.h;
  } else {
    *w = static_cast<int>(t % im.w), t /= im.w;
    *h = static_cast<int>(t % im.h), t /= im.h;
    *c = static_cast<int>(t % im.c), t /= im.c;
  }
  *n = static_cast<int>(t);
}

// floor(a / b) for b > 0.
NNC_HD int cnn_floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// --- pooling (lib/cmd/pool) ------------------------------------------------

struct PoolGeom {
  int H = 0, W = 0, OH = 0, OW = 0, C = 0;
  int KH = 1, KW = 1, SH = 1, SW = 1, PT = 0, PL = 0;
  bool max = true;
};

// The window of output (oh, ow) clipped to the image: rows [h0, h1), cols [w0, w1).
struct PoolWin {
  int h0, h1, w0, w1;
  NNC_HD int count() const { return (h1 - h0) * (w1 - w0); }
};
NNC_HD PoolWin pool_window(const PoolGeom& g, int oh, int ow) {
  const int h = oh * g.SH - g.PT, w = ow * g.SW - g.PL;
  PoolWin r;
  r.h0 = h > 0 ? h : 0;
  r.h1 = h + g.KH < g.H ? h + g.KH : g.H;
  r.w0 = w > 0 ? w : 0;
  r.w1 = w + g.KW < g.W ? w + g.KW : g.W;
  return r;
}

// The outputs o in [lo, hi) whose window (k wide, stride s, padding p before)
// covers input position i; extent `out` outputs. (Also convolution's map with
// k = the dilated window... not used there: see conv_dx_at.)
NNC_HD void pool_covering(int i, int k, int s, int p, int out, int* lo, int* hi) {
  const int a = cnn_floor_div(i + p - k, s) + 1, b = cnn_floor_div(i + p, s) + 1;
  *lo = a > 0 ? a : 0;
  *hi = b < out ? b : out;
}

// CPU_REF's maximum of a window: the first (row-major) largest element, or
// the first NaN.
NNC_HD void pool_argmax(const CnnImage& x, const PoolWin& win, int n, int c, int* bh, int* bw) {
  double best = 0;
  *bh = win.h0, *bw = win.w0;
  bool first = true;
  for (int h = win.h0; h < win.h1; h++)
    for (int w = win.w0; w < win.w1; w++) {
      const double v = cnn_ld<double>(x.p, x.type, cnn_off(x, n, h, w, c));
      if (v != v) {
        *bh = h, *bw = w;
        return;
      }
      if (first || v > best) best = v, *bh = h, *bw = w, first = false;
    }
}

// y[n, oh, ow, c]: the window's maximum, or its mean over the elements inside
// the image (double, CPU_REF's order).
NNC_HD double pool_forward_at(const PoolGeom& g, const CnnImage& x, int n, int oh, int ow, int c) {
  const PoolWin win = pool_window(g, oh, ow);
  if (g.max) {
    int bh, bw;
    pool_argmax(x, win, n, c, &bh, &bw);
    return cnn_ld<double>(x.p, x.type, cnn_off(x, n, bh, bw, c));
  }
  double s = 0;
  for (int h = win.h0; h < win.h1; h++)
    for (int w = win.w0; w < win.w1; w++) s += cnn_ld<double>(x.p, x.type, cnn_off(x, n, h, w, c));
  return s / win.count();
}

// dx[n, h, w, c]: the sum, over the windows covering (h, w) in CPU_REF's
// order (oh, then ow), of g (max: where the window's maximum is (h, w)) or of
// g / the window's count (average). x is read only for max.
NNC_HD double pool_backward_at(const PoolGeom& g, const CnnImage& x, const CnnImage& gy, int n, int h, int w, int c) {
  int oh0, oh1, ow0, ow1;
  pool_covering(h, g.KH, g.SH, g.PT, g.OH, &oh0, &oh1);
  pool_covering(w, g.KW, g.SW, g.PL, g.OW, &ow0, &ow1);
  double s = 0;
  for (int oh = oh0; oh < oh1; oh++)
    for (int ow = ow0; ow < ow1; ow++) {
      const PoolWin win = pool_window(g, oh, ow);
      const double gv = cnn_ld<double>(gy.p, gy.type, cnn_off(gy, n, oh, ow, c));
      if (g.max) {
        int bh, bw;
        pool_argmax(x, win, n, c, &bh, &bw);
        if (bh == h && bw == w) s += gv;
      } else {
        s += gv / win.count();
      }
    }
  return s;
}

// Max pooling's backward in two steps, so that a dx element does not scan
// every window covering it (a global window would cost its area squared):
// first each window's maximum as a position h * W + w (one thread per
// pooled element; am packed in (n, oh, ow, c) order), then each dx element
// sums g over the covering windows whose maximum it is, in CPU_REF's order.
NNC_HD int64_t pool_am_index(const PoolGeom& g, int n, int oh, int ow, int c) {
  return ((static_cast<int64_t>(n) * g.OH + oh) * g.OW + ow) * g.C + c;
}
NNC_HD int32_t pool_argmax_at(const PoolGeom& g, const CnnImage& x, int n, int oh, int ow, int c) {
  int bh, bw;
  pool_argmax(x, pool_window(g, oh, ow), n, c, &bh, &bw);
  return bh * g.W + bw;
}
NNC_HD double pool_max_backward_at(const PoolGeom& g, const int32_t* am, const CnnImage& gy, int n, int h, int w,
                                   int c) {
  int oh0, oh1, ow0, ow1;
  pool_covering(h, g.KH, g.SH, g.PT, g.OH, &oh0, &oh1);
  pool_covering(w, g.KW, g.SW, g.PL, g.OW, &ow0, &ow1);
  const int32_t here = h * g.W + w;
  double s = 0;
  for (int oh = oh0; oh < oh1; oh++)
    for (int ow = ow0; ow < ow1; ow++)
      if (am[pool_am_index(g, n, oh, ow, c)] == here) s += cnn_ld<double>(gy.p, gy.type, cnn_off(gy, n, oh, ow, c));
  return s;
}

// --- convolution (lib/cmd/convolution) ---------------------------------------

// Weights in (k, kh, kw, c) order of meaning (nnc::conv::Weights).
struct CnnWeights {
  void* p = nullptr;
  int type = kCnnF32;
  int k = 0, kh = 0, kw = 0, c = 0;
  int64_t sk = 0, skh = 0, skw = 0, sc = 0;
};
NNC_HD int64_t cnn_woff(const CnnWeights& w, int k, int kh, int kw, int c) {
  return k * w.sk + kh * w.skh + kw * w.skw + c * w.sc;
}

struct ConvGeom {
  int N = 1, H = 0, W = 0, C = 0, K = 0, OH = 0, OW = 0;
  int KH = 1, KW = 1, SH = 1, SW = 1, PT = 0, PL = 0, DH = 1, DW = 1;
  int Cg = 0, Kg = 0;  // channels and filters per group
};

// y[n, oh, ow, k] without the bias: the sum over kh, kw, c of x * w in A
// (float for 32F / 16F / 16BF, double for 64F).
template <class A>
NNC_HD A conv_forward_at(const ConvGeom& g, const CnnImage& x, const CnnWeights& w, int n, int oh, int ow, int k) {
  const int c0 = (k / g.Kg) * g.Cg;
  A s = 0;
  for (int kh = 0; kh < g.KH; kh++) {
    const int ih = oh * g.SH + kh * g.DH - g.PT;
    if (ih < 0 || ih >= g.H) continue;
    for (int kw = 0; kw < g.KW; kw++) {
      const int iw = ow * g.SW + kw * g.DW - g.PL;
      if (iw < 0 || iw >= g.W) continue;
      const int64_t xo = cnn_off(x, n, ih, iw, c0), wo = cnn_woff(w, k, kh, kw, 0);
      for (int c = 0; c < g.Cg; c++) s += cnn_ld<A>(x.p, x.type, xo + c * x.sc) * cnn_ld<A>(w.p, w.type, wo + c * w.sc);
    }
  }
  return s;
}

// The output position o with o * s + k * d - p == i, if there is one inside [0, out).
NNC_HD bool conv_source(int i, int k, int d, int s, int p, int out, int* o) {
  const int t = i + p - k * d;
  if (t < 0 || t % s != 0) return false;
  *o = t / s;
  return *o < out;
}

// dx[n, ih, iw, ci]: the sum over the filters of ci's group and the taps
// (kh, kw) that read (ih, iw) of g * w (a gather: no atomics).
template <class A>
NNC_HD A conv_dx_at(const ConvGeom& g, const CnnImage& gy, const CnnWeights& w, int n, int ih, int iw, int ci) {
  const int grp = ci / g.Cg, c = ci - grp * g.Cg;
  A s = 0;
  for (int kh = 0; kh < g.KH; kh++) {
    int oh;
    if (!conv_source(ih, kh, g.DH, g.SH, g.PT, g.OH, &oh)) continue;
    for (int kw = 0; kw < g.KW; kw++) {
      int ow;
      if (!conv_source(iw, kw, g.DW, g.SW, g.PL, g.OW, &ow)) continue;
      for (int k = grp * g.Kg; k < (grp + 1) * g.Kg; k++)
        s += cnn_ld<A>(gy.p, gy.type, cnn_off(gy, n, oh, ow, k)) * cnn_ld<A>(w.p, w.type, cnn_woff(w, k, kh, kw, c));
    }
  }
  return s;
}

// dw[k, kh, kw, c]: the sum over n, oh, ow of g * x (over images n0 <= n <
// n1 only when given: a part of the sum, see conv_dw_parts).
template <class A>
NNC_HD A conv_dw_at(const ConvGeom& g, const CnnImage& gy, const CnnImage& x, int k, int kh, int kw, int c, int n0 = 0,
                    int n1 = -1) {
  const int ci = (k / g.Kg) * g.Cg + c;
  if (n1 < 0) n1 = g.N;
  A s = 0;
  for (int n = n0; n < n1; n++)
    for (int oh = 0; oh < g.OH; oh++) {
      const int ih = oh * g.SH + kh * g.DH - g.PT;
      if (ih < 0 || ih >= g.H) continue;
      for (int ow = 0; ow < g.OW; ow++) {
        const int iw = ow * g.SW + kw * g.DW - g.PL;
        if (iw < 0 || iw >= g.W) continue;
        s += cnn_ld<A>(gy.p, gy.type, cnn_off(gy, n, oh, ow, k)) * cnn_ld<A>(x.p, x.type, cnn_off(x, n, ih, iw, ci));
      }
    }
  return s;
}

// The weight gradient in parts: with few weights (a small layer, a large
// batch), one thread per weight leaves most of a GPU idle while each thread
// walks the whole batch. The batch is then cut into `parts` runs of images,
// each weight's run sums written to scratch (weights x parts in A) by one
// thread each, and a second kernel adds a weight's parts in order (no
// atomics: the same bits every run). conv_dw_parts: enough threads for a
// large GPU (kConvDwThreads), at most the batch and kConvDwMaxParts; 1 means
// no scratch. want > 0 (NNC_GPU_CONV_DW_PARTS, for tests) asks for that many,
// capped at the batch.
constexpr int64_t kConvDwThreads = int64_t{1} << 18;
constexpr int kConvDwMaxParts = 64;
inline int conv_dw_parts(int64_t weights, int N, int want = 0) {
  if (weights <= 0 || N <= 1) return 1;
  int64_t p = want > 0 ? want : (kConvDwThreads + weights - 1) / weights;
  if (want <= 0 && p > kConvDwMaxParts) p = kConvDwMaxParts;
  if (p > N) p = N;
  return p < 1 ? 1 : static_cast<int>(p);
}
// The first image of part p of `parts` (part p covers [begin(p), begin(p + 1))).
NNC_HD int conv_dw_part_begin(int N, int parts, int p) {
  return static_cast<int>(static_cast<int64_t>(N) * p / parts);
}

// Weight element t of k * kh * kw * c, channels fastest.
NNC_HD void cnn_weight_index(const CnnWeights& w, int64_t t, int* k, int* kh, int* kw, int* c) {
  *c = static_cast<int>(t % w.c), t /= w.c;
  *kw = static_cast<int>(t % w.kw), t /= w.kw;
  *kh = static_cast<int>(t % w.kh), t /= w.kh;
  *k = static_cast<int>(t);
}

// --- batch norm (lib/cmd/norm, BATCH_NORM) ------------------------------------

constexpr int kCnnDims = 12;  // CCV_NNC_MAX_DIM_ALLOC

// Row-major element i of nd extents dim through strides: the offset.
NNC_HD int64_t bn_offset(int64_t i, const int* dim, const int64_t* stride, int nd) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (i % dim[d]) * stride[d];
    i /= dim[d];
  }
  return off;
}

// An x-shaped operand (x, y, g, dx): strides over the kept (channel) axes and
// over the reduced axes, in x's axis order.
struct BnBig {
  void* p = nullptr;
  int64_t ks[kCnnDims] = {}, rs[kCnnDims] = {};
};
// A per-channel operand: its own extents and strides; element k (row-major,
// the channel's index over x's kept axes) as CPU_REF's at_linear reads it.
struct BnSmall {
  void* p = nullptr;
  int nd = 0;
  int dim[kCnnDims] = {};
  int64_t stride[kCnnDims] = {};
};

enum BnBigOperand : int { kBnX = 0, kBnY, kBnG, kBnDx, kBnBigs };
enum BnSmallOperand : int {
  kBnScale = 0,
  kBnBias,
  kBnMean,     // input mean (running; the forward's momentum update and inference read it)
  kBnVar,      // input var
  kBnOutMean,  // forward outputs 1..4
  kBnOutVar,
  kBnSavedMean,
  kBnSavedInv,
  kBnDscale,  // backward outputs 1..4
  kBnDbias,
  kBnDmean,
  kBnDvar,
  kBnSmalls
};

struct BnArgs {
  int type = kCnnF32;
  int nk = 0, nr = 0;  // kept and reduced axes
  int kdim[kCnnDims] = {}, rdim[kCnnDims] = {};
  int64_t channels = 0, per_channel = 0;
  double epsilon = 0, momentum = 0;
  bool is_test = false;
  int nd = 0;  // x's own shape, and bit i of mask set for a reduced axis i
  int dim[kCnnDims] = {};
  unsigned mask = 0;
  BnBig big[kBnBigs];
  BnSmall small[kBnSmalls];
};

NNC_HD int64_t bn_big_off(const BnArgs& a, int op, int64_t k, int64_t r) {
  return bn_offset(k, a.kdim, a.big[op].ks, a.nk) + bn_offset(r, a.rdim, a.big[op].rs, a.nr);
}
// Element k of a small operand as double (`fallback` when it is absent).
NNC_HD double bn_small_ld(const BnArgs& a, int op, int64_t k, double fallback) {
  const BnSmall& s = a.small[op];
  return s.p ? cnn_ld<double>(s.p, a.type, bn_offset(k, s.dim, s.stride, s.nd)) : fallback;
}
NNC_HD void bn_small_st(const BnArgs& a, int op, int64_t k, double v) {
  const BnSmall& s = a.small[op];
  if (s.p) cnn_st(s.p, a.type, bn_offset(k, s.dim, s.stride, s.nd), v);
}

// y from x and the channel's statistics (CPU_REF's normalise).
NNC_HD double bn_y(double x, double mean, double inv, double scale, double bias) {
  return (x - mean) * inv * scale + bias;
}
// The training forward's per-channel outputs once mean and biased var are
// known (sums in double, mean = sum / count, var = sum of squared deviations
// / count): running statistics, saved statistics. Returns inv_std.
NNC_HD double bn_channel_outputs(const BnArgs& a, int64_t k, double mean, double var) {
  const double inv = 1.0 / sqrt(var + a.epsilon);
  const double m = a.momentum;
  if (a.small[kBnOutMean].p) bn_small_st(a, kBnOutMean, k, bn_small_ld(a, kBnMean, k, 0.0) * m + mean * (1 - m));
  if (a.small[kBnOutVar].p) bn_small_st(a, kBnOutVar, k, bn_small_ld(a, kBnVar, k, 0.0) * m + var * (1 - m));
  bn_small_st(a, kBnSavedMean, k, mean);
  bn_small_st(a, kBnSavedInv, k, inv);
  return inv;
}
// The backward's statistics of channel k: saved (training) or running
// (inference: inv = 1 / sqrt(var + epsilon)).
NNC_HD void bn_backward_stats(const BnArgs& a, int64_t k, double* mean, double* inv) {
  if (a.is_test) {
    *mean = bn_small_ld(a, kBnMean, k, 0.0);
    *inv = 1.0 / sqrt(bn_small_ld(a, kBnVar, k, 1.0) + a.epsilon);
  } else {
    *mean = bn_small_ld(a, kBnSavedMean, k, 0.0);
    *inv = bn_small_ld(a, kBnSavedInv, k, 1.0);
  }
}
// The backward's per-channel outputs from the sums of h = g scale, h xhat,
// g xhat and g over the channel.
NNC_HD void bn_backward_channel(const BnArgs& a, int64_t k, double inv, double sh, double shx, double sgx, double sg) {
  bn_small_st(a, kBnDscale, k, sgx);
  bn_small_st(a, kBnDbias, k, sg);
  bn_small_st(a, kBnDmean, k, a.is_test ? -inv * sh : 0.0);
  bn_small_st(a, kBnDvar, k, a.is_test ? -0.5 * inv * inv * shx : 0.0);
}
// dx of one element.
NNC_HD double bn_dx(const BnArgs& a, double h, double xhat, double inv, double sh, double shx) {
  double v = h;
  if (!a.is_test) {
    const double n = static_cast<double>(a.per_channel);
    v = h - sh / n - xhat * shx / n;
  }
  return v * inv;
}

// The sliced schedule, for channels too long for one block each: every
// channel's reduced elements cut into `slices` runs (one block each, partial
// sums in scratch, combined per channel in slice order), then one thread per
// element of x in its row-major (memory) order. 1: one block per channel
// (the channels alone give 512 blocks, or a channel holds fewer than
// 2 min_slice elements); else runs of at least min_slice elements, up to
// 512 blocks in all and 1024 per channel.
NNC_HD int64_t bn_slices(int64_t channels, int64_t per_channel, int64_t min_slice) {
  if (min_slice < 1 || per_channel < 2 * min_slice || channels >= 512) return 1;
  int64_t s = per_channel / min_slice;
  const int64_t want = (512 + channels - 1) / channels;
  if (s > want) s = want;
  if (s > 1024) s = 1024;
  return s < 1 ? 1 : s;
}
// Run s of `slices` over [0, per_channel) starts here (run s ends where s + 1 starts).
NNC_HD int64_t bn_slice_begin(int64_t per_channel, int64_t slices, int64_t s) { return per_channel * s / slices; }
// Element t of x in row-major order of its own axes: its channel k (row-major
// over the kept axes) and reduced index r (over the reduced axes).
NNC_HD void bn_split_index(const BnArgs& a, int64_t t, int64_t* k, int64_t* r) {
  int64_t kk = 0, rr = 0, km = 1, rm = 1;
  for (int d = a.nd - 1; d >= 0; d--) {
    const int64_t i = t % a.dim[d];
    t /= a.dim[d];
    if ((a.mask >> d) & 1u) {
      rr += i * rm;
      rm *= a.dim[d];
    } else {
      kk += i * km;
      km *= a.dim[d];
    }
  }
  *k = kk, *r = rr;
}

}  // namespace nnc::gpu
