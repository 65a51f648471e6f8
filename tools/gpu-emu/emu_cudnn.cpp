// GPU_CUDNN under CPU emulation (design: CMakeLists.txt here): the part of
// cuDNN's legacy API that cuda/cudnn.cpp calls, computed on the calling
// thread as the emulated runtime runs everything, so that cudnn.cpp (its
// descriptors, algorithm search, staging of views, fallbacks to GPU_REF and
// the 16-bit reruns) runs unchanged and the Cudnn.* tests run in CI.
//
// Computed: 4-d convolution (cross-correlation; groups, dilation, padding,
// strides; filters NCHW = KCRS or NHWC = KRSC, packed) forward, data, filter
// and bias gradients; MAX (NaN propagating) and average pooling forward and
// backward; softmax (instance mode, accurate or log) forward and backward;
// spatial batch norm (training, inference, backward); AddTensor, SetTensor,
// OpTensor (ADD, MUL, MIN, MAX), ReduceTensor (ADD). Sums in double, each
// output rounded once to its type; alpha / beta as cuDNN blends them.
//
// What this cuDNN (9.19 on an H200, the first GPU runs) refused or did
// wrong is refused or done wrong here, so a regression of cudnn.cpp's
// workarounds fails the tests as it would on a GPU:
// - convolutions take x and y only packed in the filter's layout (NCHW
//   filter: NCHW-packed; NHWC filter: NHWC-packed): anything else, strided
//   views included, is CUDNN_STATUS_NOT_SUPPORTED from every algorithm;
// - the bias gradient and ReduceTensor refuse BFLOAT16;
// - softmax reads and writes strided rows as if they were packed (wrong
//   values, no error);
// - the transform algorithms (FFT, FFT tiling, non-fused Winograd) round
//   their operands to TF32's 10 bits (they erred by 2% on an fp32 filter
//   gradient), and so does DEFAULT math on fp32 (TF32 tensor cores);
// - DIRECT and the fused Winograd answer NOT_SUPPORTED.
// The graph (backend) API: emu_cudnn_graph.cpp, on these convolutions.
// Not emulated: everything else cuDNN has.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "emu_hooks.hpp"
#include "emu_numbers.hpp"

namespace {

struct Token {
  int kind;
  cudaStream_t stream = nullptr;  // a cuDNN handle's (cudnnSetStream)
};
thread_local cudaStream_t t_stream = nullptr;  // the stream of the call in progress's handle
cudaStream_t stream_of(cudnnHandle_t h) { return h ? reinterpret_cast<Token*>(h)->stream : nullptr; }

// The rest of a call, queued as the work of its handle's stream (t_stream):
// `work` owns copies of the descriptors and the host scalars (alpha, beta)
// it needs, read at the call as cuDNN reads them; device memory is read and
// written when the stream's work runs.
template <class F>
cudnnStatus_t queue(F&& work) {
  emu::library_call(t_stream, std::forward<F>(work));
  return CUDNN_STATUS_SUCCESS;
}

constexpr int kMaxDims = 8;

struct TensorD {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int nb = 0;
  int dim[kMaxDims] = {};
  int stride[kMaxDims] = {};
};
struct FilterD {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int nb = 0;
  int dim[kMaxDims] = {};  // K, C / groups, R, S
  // The graph API's filters: any strides (dims K, C / groups, R, S) instead
  // of a packed format.
  bool strided = false;
  int64_t stride[4] = {};
};
struct ConvD {
  int n = 0;
  int pad[kMaxDims] = {}, stride[kMaxDims] = {}, dilation[kMaxDims] = {};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool bf16 = false;  // the graph API's reduced-precision engine
};
struct PoolD {
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  int n = 0;
  int window[kMaxDims] = {}, pad[kMaxDims] = {}, stride[kMaxDims] = {};
};
struct OpD {
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
};
struct ReduceD {
  cudnnReduceTensorOp_t op = CUDNN_REDUCE_TENSOR_ADD;
};

template <class T, class H>
T* as(H h) {
  return reinterpret_cast<T*>(h);
}

bool type_ok(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}
emu::Elem elem(cudnnDataType_t t) {
  return t == CUDNN_DATA_DOUBLE  ? emu::Elem::kF64
         : t == CUDNN_DATA_HALF  ? emu::Elem::kF16
         : t == CUDNN_DATA_BFLOAT16 ? emu::Elem::kBF16
                                    : emu::Elem::kF32;
}
double load(cudnnDataType_t t, const void* p, int64_t i) { return emu::load(elem(t), p, i); }
void store(cudnnDataType_t t, void* p, int64_t i, double v) { emu::store(elem(t), p, i, v); }
// alpha / beta: double for DOUBLE data, float for the rest.
double scale(cudnnDataType_t data, const void* p) {
  return data == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(p) : *static_cast<const float*>(p);
}
// out = alpha * v + beta * out (beta 0: out is not read), rounded once.
void blend(cudnnDataType_t t, void* p, int64_t i, double alpha, double v, double beta) {
  store(t, p, i, beta == 0 ? alpha * v : alpha * v + beta * load(t, p, i));
}

using emu::tf32;

int64_t count(const TensorD& t) {
  int64_t n = 1;
  for (int i = 0; i < t.nb; i++) n *= t.dim[i];
  return n;
}
// Element i (row-major over the dims) of t: its offset by t's strides.
int64_t offset_of(const TensorD& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.nb - 1; d >= 0; d--) {
    off += (i % t.dim[d]) * t.stride[d];
    i /= t.dim[d];
  }
  return off;
}
// Packed strides in the NCHW order of dims (4-d: N, C, H, W).
bool packed_nchw(const TensorD& t) {
  int64_t s = 1;
  for (int d = t.nb - 1; d >= 0; d--) {
    if (t.dim[d] != 1 && t.stride[d] != s) return false;
    s *= t.dim[d];
  }
  return true;
}
bool packed_nhwc(const TensorD& t) {
  if (t.nb != 4) return false;
  const int order[4] = {1, 3, 2, 0};  // C fastest, then W, H, N
  int64_t s = 1;
  for (int d : order) {
    if (t.dim[d] != 1 && t.stride[d] != s) return false;
    s *= t.dim[d];
  }
  return true;
}

// 4-d tensor element (n, c, h, w).
struct T4 {
  const TensorD* d;
  int64_t at(int n, int c, int h, int w) const {
    return n * static_cast<int64_t>(d->stride[0]) + c * static_cast<int64_t>(d->stride[1]) +
           h * static_cast<int64_t>(d->stride[2]) + w * static_cast<int64_t>(d->stride[3]);
  }
};
// The filter's element (k, c, r, s), packed in its format.
int64_t filter_at(const FilterD& f, int k, int c, int r, int s) {
  if (f.strided) return k * f.stride[0] + c * f.stride[1] + r * f.stride[2] + s * f.stride[3];
  const int C = f.dim[1], R = f.dim[2], S = f.dim[3];
  return f.format == CUDNN_TENSOR_NHWC ? ((static_cast<int64_t>(k) * R + r) * S + s) * C + c
                                       : ((static_cast<int64_t>(k) * C + c) * R + r) * S + s;
}

// A convolution's shapes, checked as cuDNN checks them.
struct ConvShape {
  int N, C, H, W, K, Cg, R, S, P, Q, groups;
  int ph, pw, sh, sw, dh, dw;
  cudnnDataType_t type;
  bool reduced;  // operands rounded to TF32 (transform algorithms, DEFAULT math on fp32)
  bool bf16 = false;  // operands rounded to bf16 (the graph API's reduced-precision engine)
};
cudnnStatus_t conv_shape(const TensorD* x, const FilterD* w, const ConvD* c, const TensorD* y, ConvShape* s) {
  if (!x || !w || !c || !y) return CUDNN_STATUS_BAD_PARAM;
  if (x->nb != 4 || y->nb != 4 || w->nb != 4 || c->n != 2) return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->type != y->type || x->type != w->type || !type_ok(x->type)) return CUDNN_STATUS_BAD_PARAM;
  *s = {x->dim[0], x->dim[1], x->dim[2], x->dim[3], w->dim[0], w->dim[1], w->dim[2], w->dim[3], y->dim[2], y->dim[3],
        c->groups, c->pad[0], c->pad[1], c->stride[0], c->stride[1], c->dilation[0], c->dilation[1], x->type, false};
  if (s->groups < 1 || s->C != s->Cg * s->groups || s->K % s->groups || y->dim[0] != s->N || y->dim[1] != s->K)
    return CUDNN_STATUS_BAD_PARAM;
  const int P = (s->H + 2 * s->ph - ((s->R - 1) * s->dh + 1)) / s->sh + 1;
  const int Q = (s->W + 2 * s->pw - ((s->S - 1) * s->dw + 1)) / s->sw + 1;
  if (P != s->P || Q != s->Q) return CUDNN_STATUS_BAD_PARAM;
  // This cuDNN's legacy convolutions: x and y packed in the filter's layout
  // (the graph API's engines take strides).
  const bool nhwc = w->format == CUDNN_TENSOR_NHWC;
  for (const TensorD* t : {x, y})
    if (!w->strided && (nhwc ? !packed_nhwc(*t) : !packed_nchw(*t))) return CUDNN_STATUS_NOT_SUPPORTED;
  if (c->mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED;
  s->reduced = x->type == CUDNN_DATA_FLOAT && c->math == CUDNN_DEFAULT_MATH;
  s->bf16 = c->bf16;
  return CUDNN_STATUS_SUCCESS;
}

// Every (n, k, p, q, c, r, s) term of the convolution, with the x element
// it reads (h, w inside x); f(n, k, p, q, c_in_x, c_in_w, r, s, h, w).
template <class F>
void each_term(const ConvShape& s, F&& f) {
  const int Kg = s.K / s.groups;
  for (int n = 0; n < s.N; n++)
    for (int k = 0; k < s.K; k++) {
      const int g = k / Kg;
      for (int p = 0; p < s.P; p++)
        for (int q = 0; q < s.Q; q++)
          for (int c = 0; c < s.Cg; c++)
            for (int r = 0; r < s.R; r++) {
              const int h = p * s.sh - s.ph + r * s.dh;
              if (h < 0 || h >= s.H) continue;
              for (int t = 0; t < s.S; t++) {
                const int w = q * s.sw - s.pw + t * s.dw;
                if (w < 0 || w >= s.W) continue;
                f(n, k, p, q, g * s.Cg + c, c, r, t, h, w);
              }
            }
    }
}

double operand(const ConvShape& s, double v) {
  if (s.bf16) return __bfloat162float(__float2bfloat16(static_cast<float>(v)));
  return s.reduced ? tf32(static_cast<float>(v)) : v;
}

// The operands read once into packed double arrays (rounded as the
// algorithm rounds): images as n, c, h, w; filters as k, c, r, s.
std::vector<double> gather(const ConvShape& s, const TensorD& d, const void* p, int N, int C, int H, int W) {
  std::vector<double> v(static_cast<size_t>(N) * C * H * W);
  const T4 t{&d};
  size_t i = 0;
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int h = 0; h < H; h++)
        for (int w = 0; w < W; w++) v[i++] = operand(s, load(s.type, p, t.at(n, c, h, w)));
  return v;
}
std::vector<double> gather_filter(const ConvShape& s, const FilterD& f, const void* p) {
  std::vector<double> v(static_cast<size_t>(s.K) * s.Cg * s.R * s.S);
  size_t i = 0;
  for (int k = 0; k < s.K; k++)
    for (int c = 0; c < s.Cg; c++)
      for (int r = 0; r < s.R; r++)
        for (int t = 0; t < s.S; t++) v[i++] = operand(s, load(s.type, p, filter_at(f, k, c, r, t)));
  return v;
}
size_t img(const ConvShape& s, int n, int c, int h, int w) {
  return ((static_cast<size_t>(n) * s.C + c) * s.H + h) * s.W + w;
}
size_t out(const ConvShape& s, int n, int k, int p, int q) {
  return ((static_cast<size_t>(n) * s.K + k) * s.P + p) * s.Q + q;
}
size_t flt(const ConvShape& s, int k, int c, int r, int t) {
  return ((static_cast<size_t>(k) * s.Cg + c) * s.R + r) * s.S + t;
}

// Algorithms: which run (the rest answer NOT_SUPPORTED), which round.
bool fwd_runs(int a) { return a >= 0 && a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && a != CUDNN_CONVOLUTION_FWD_ALGO_DIRECT && a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD; }
bool fwd_rounds(int a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool data_runs(int a) { return a >= 0 && a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD; }
bool data_rounds(int a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool filter_runs(int a) { return a >= 0 && a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD; }
bool filter_rounds(int a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}
// Workspace: some bytes for the GEMM-like algorithms, so that the caller's
// scratch path runs.
size_t workspace(int a) { return a == 0 ? 0 : 4096; }

// One of the convolution's three products, blended into its output by
// alpha and beta: op 0 y from x and w (forward), 1 x from y and w (data
// gradient), 2 w from x and y (filter gradient). The algorithm runs and
// rounds by its rules above. The two inputs are read once into packed
// arrays; the output is written once, rounded to its type.
cudnnStatus_t convolution(int op, int algo, const void* alpha, const void* beta, const TensorD* xd, void* x,
                          const FilterD* wd, void* w, const TensorD* yd, void* y, const ConvD* cd) {
  static bool (*const runs[3])(int) = {fwd_runs, data_runs, filter_runs};
  static bool (*const rounds[3])(int) = {fwd_rounds, data_rounds, filter_rounds};
  ConvShape s;
  const cudnnStatus_t st = conv_shape(xd, wd, cd, yd, &s);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!runs[op](algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  s.reduced = s.reduced || (s.type == CUDNN_DATA_FLOAT && rounds[op](algo));
  const double a = scale(s.type, alpha), b = scale(s.type, beta);
  return queue([=, xc = *xd, wc = *wd, yc = *yd] {
    const TensorD *xd = &xc, *yd = &yc;
    const FilterD* wd = &wc;
    std::vector<double> xv, wv, yv;
    if (op != 1) xv = gather(s, *xd, x, s.N, s.C, s.H, s.W);
    if (op != 2) wv = gather_filter(s, *wd, w);
    if (op != 0) yv = gather(s, *yd, y, s.N, s.K, s.P, s.Q);
    std::vector<double> acc(op == 0 ? static_cast<size_t>(s.N) * s.K * s.P * s.Q
                            : op == 1 ? static_cast<size_t>(s.N) * s.C * s.H * s.W
                                      : static_cast<size_t>(s.K) * s.Cg * s.R * s.S,
                            0.0);
    each_term(s, [&](int n, int k, int p, int q, int c, int cw, int r, int t, int h, int wi) {
      if (op == 0)
        acc[out(s, n, k, p, q)] += xv[img(s, n, c, h, wi)] * wv[flt(s, k, cw, r, t)];
      else if (op == 1)
        acc[img(s, n, c, h, wi)] += yv[out(s, n, k, p, q)] * wv[flt(s, k, cw, r, t)];
      else
        acc[flt(s, k, cw, r, t)] += xv[img(s, n, c, h, wi)] * yv[out(s, n, k, p, q)];
    });
    const T4 X{xd}, Y{yd};
    for (int i0 = 0; i0 < (op == 2 ? s.K : s.N); i0++)
      for (int i1 = 0; i1 < (op == 0 ? s.K : op == 1 ? s.C : s.Cg); i1++)
        for (int i2 = 0; i2 < (op == 0 ? s.P : op == 1 ? s.H : s.R); i2++)
          for (int i3 = 0; i3 < (op == 0 ? s.Q : op == 1 ? s.W : s.S); i3++) {
            if (op == 0)
              blend(s.type, y, Y.at(i0, i1, i2, i3), a, acc[out(s, i0, i1, i2, i3)], b);
            else if (op == 1)
              blend(s.type, x, X.at(i0, i1, i2, i3), a, acc[img(s, i0, i1, i2, i3)], b);
            else
              blend(s.type, w, filter_at(*wd, i0, i1, i2, i3), a, acc[flt(s, i0, i1, i2, i3)], b);
          }
  });
}

// b broadcasts to c: each of b's dims equals c's or is 1.
bool broadcasts(const TensorD& b, const TensorD& c) {
  if (b.nb != c.nb) return false;
  for (int i = 0; i < c.nb; i++)
    if (b.dim[i] != c.dim[i] && b.dim[i] != 1) return false;
  return true;
}
// The offset in b of c's element i (row-major over c's dims), b broadcast.
int64_t broadcast_offset(const TensorD& b, const TensorD& c, int64_t i) {
  int64_t off = 0;
  for (int d = c.nb - 1; d >= 0; d--) {
    const int64_t x = i % c.dim[d];
    i /= c.dim[d];
    if (b.dim[d] != 1) off += x * b.stride[d];
  }
  return off;
}

// Pooling's window of output (n, c, p, q): rows [h0, h1), columns [w0, w1)
// inside x, and the count average pooling divides by.
struct Window {
  int h0, h1, w0, w1, count;
};
Window window(const PoolD& d, const TensorD& x, int p, int q) {
  const int hs = p * d.stride[0] - d.pad[0], ws = q * d.stride[1] - d.pad[1];
  Window w{std::max(hs, 0), std::min(hs + d.window[0], x.dim[2]), std::max(ws, 0), std::min(ws + d.window[1], x.dim[3]), 0};
  w.count = d.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? d.window[0] * d.window[1]
                                                                  : std::max(0, w.h1 - w.h0) * std::max(0, w.w1 - w.w0);
  return w;
}
bool is_max(const PoolD& d) { return d.mode == CUDNN_POOLING_MAX || d.mode == CUDNN_POOLING_MAX_DETERMINISTIC; }
cudnnStatus_t pool_check(const PoolD* d, const TensorD* x, const TensorD* y) {
  if (!d || !x || !y) return CUDNN_STATUS_BAD_PARAM;
  if (d->n != 2 || x->nb != 4 || y->nb != 4 || x->type != y->type || !type_ok(x->type)) return CUDNN_STATUS_NOT_SUPPORTED;
  if (x->dim[0] != y->dim[0] || x->dim[1] != y->dim[1]) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 2; i++)
    if (y->dim[2 + i] != (x->dim[2 + i] + 2 * d->pad[i] - d->window[i]) / d->stride[i] + 1) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}
// The position of a window's maximum (the first in row order; NaN wins).
void window_max(const TensorD& xd, const void* x, int n, int c, const Window& w, double* m, int* mh, int* mw) {
  const T4 X{&xd};
  *m = -INFINITY, *mh = -1, *mw = -1;
  for (int h = w.h0; h < w.h1; h++)
    for (int i = w.w0; i < w.w1; i++) {
      const double v = load(xd.type, x, X.at(n, c, h, i));
      if (std::isnan(*m)) continue;
      if (std::isnan(v) || v > *m || *mh < 0) *m = v, *mh = h, *mw = i;
    }
}

// Softmax over each instance (C * H * W of one n). This cuDNN walked
// strided rows as if packed: so does this.
TensorD as_packed(const TensorD& t) {
  TensorD p = t;
  int64_t s = 1;
  for (int d = t.nb - 1; d >= 0; d--) p.stride[d] = static_cast<int>(s), s *= t.dim[d];
  return p;
}

// Spatial batch norm's per-channel walk: f(offset of (n, c, h, w)) for each
// element of channel c.
template <class F>
void channel(const TensorD& t, int c, F&& f) {
  const T4 X{&t};
  for (int n = 0; n < t.dim[0]; n++)
    for (int h = 0; h < t.dim[2]; h++)
      for (int w = 0; w < t.dim[3]; w++) f(X.at(n, c, h, w));
}
bool bn_shapes(const TensorD* x, const TensorD* y, const TensorD* p) {
  return x && y && p && x->nb == 4 && y->nb == 4 && p->nb == 4 && p->dim[0] == 1 && p->dim[1] == x->dim[1] &&
         p->dim[2] == 1 && p->dim[3] == 1 && std::equal(x->dim, x->dim + 4, y->dim) && type_ok(x->type) &&
         x->type == y->type;
}

// The heuristics' order: the GEMM-like algorithms first, the transforms
// last; for filters of 5 x 5 and more the transforms first (this cuDNN chose
// FFT for a 5 x 5 filter gradient, the 2% error above).
template <class Perf>
void fill_perf(Perf* out, int* found, int requested, int count, bool (*runs)(int), bool (*rounds)(int),
               cudnnMathType_t math, const FilterD* w) {
  const bool transforms_first = w && w->nb == 4 && w->dim[2] * w->dim[3] >= 25;
  std::vector<int> order;
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < count; a++)
      if (rounds(a) == (transforms_first == (pass == 0))) order.push_back(a);
  int n = 0;
  for (int a : order) {
    if (n >= requested) break;
    Perf p;
    std::memset(&p, 0, sizeof(p));
    p.algo = static_cast<decltype(p.algo)>(a);
    p.status = runs(a) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
    p.time = static_cast<float>(n + 1) * 0.01f;
    p.memory = workspace(a);
    p.determinism = CUDNN_DETERMINISTIC;
    p.mathType = math;
    out[n++] = p;
  }
  *found = n;
}

// Find: every algorithm listed (fill_perf) that runs, each run by
// run(algo, one, zero) into the caller's output (cuDNN leaves the last run's
// there); one that needs more workspace than given is ALLOC_FAILED.
template <class Perf, class Run>
cudnnStatus_t find_all(Perf* perf, int* found, int requested, int count, bool (*runs)(int), bool (*rounds)(int),
                       cudnnConvolutionDescriptor_t cd, cudnnFilterDescriptor_t wd, size_t bytes, Run run) {
  if (!cd || !found || !perf) return CUDNN_STATUS_BAD_PARAM;
  fill_perf(perf, found, requested, count, runs, rounds, as<ConvD>(cd)->math, as<FilterD>(wd));
  const float one = 1, zero = 0;
  for (int i = 0; i < *found; i++)
    if (perf[i].status == CUDNN_STATUS_SUCCESS)
      perf[i].status = perf[i].memory > bytes ? CUDNN_STATUS_ALLOC_FAILED : run(perf[i].algo, &one, &zero);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

namespace emu {
// The graph API's convolutions (emu_cudnn_graph.cpp): x, w and y by dims
// and strides (w: K, C / groups, R, S), groups from x's and w's channels.
// op: 0 forward (y from x, w), 1 data gradient (x from y, w), 2 filter
// gradient (w from x, y). rounding: 0 none, 1 TF32 operands on fp32 data,
// 2 bf16 operands.
cudnnStatus_t convolve(int op, cudnnDataType_t type, const int64_t* xdim, const int64_t* xstride, void* x,
                       const int64_t* wdim, const int64_t* wstride, void* w, const int64_t* ydim, const int64_t* ystride,
                       void* y, const int64_t* pad, const int64_t* stride, const int64_t* dilation, int rounding,
                       float alpha, float beta, cudaStream_t stream) {
  TensorD xd, yd;
  FilterD wd;
  xd.type = yd.type = wd.type = type;
  xd.nb = yd.nb = wd.nb = 4;
  wd.strided = true;
  for (int i = 0; i < 4; i++) {
    xd.dim[i] = static_cast<int>(xdim[i]), xd.stride[i] = static_cast<int>(xstride[i]);
    yd.dim[i] = static_cast<int>(ydim[i]), yd.stride[i] = static_cast<int>(ystride[i]);
    wd.dim[i] = static_cast<int>(wdim[i]), wd.stride[i] = wstride[i];
  }
  ConvD cd;
  cd.n = 2;
  for (int i = 0; i < 2; i++)
    cd.pad[i] = static_cast<int>(pad[i]), cd.stride[i] = static_cast<int>(stride[i]),
    cd.dilation[i] = static_cast<int>(dilation[i]);
  if (wd.dim[1] <= 0 || xd.dim[1] % wd.dim[1]) return CUDNN_STATUS_BAD_PARAM;
  cd.groups = xd.dim[1] / wd.dim[1];
  cd.math = rounding == 1 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  cd.bf16 = rounding == 2;
  t_stream = stream;
  switch (op) {
    case 0:
      return convolution(0, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &alpha, &beta, &xd, x, &wd, w, &yd, y, &cd);
    case 1:
      return convolution(1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &alpha, &beta, &xd, x, &wd, w, &yd, y, &cd);
    default:
      return convolution(2, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, &alpha, &beta, &xd, x, &wd, w, &yd, y, &cd);
  }
}
}  // namespace emu

extern "C" {

const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
    default:
      return "CUDNN_STATUS (gpu-emu)";
  }
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* h) {
  EMU_API_CALL();
  *h = as<cudnnContext>(new Token{10});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t h) {
  EMU_API_CALL();
  delete as<Token>(h);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetStream(cudnnHandle_t h, cudaStream_t* s) {
  EMU_API_CALL();
  if (!h || !s) return CUDNN_STATUS_BAD_PARAM;
  *s = as<Token>(h)->stream;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  EMU_API_CALL();
  t_stream = stream_of(h);
  if (!h) return CUDNN_STATUS_BAD_PARAM;
  as<Token>(h)->stream = s;
  return CUDNN_STATUS_SUCCESS;
}

#define EMU_DESCRIPTOR(T, Name, Struct)                                  \
  cudnnStatus_t CUDNNWINAPI cudnnCreate##Name##Descriptor(T* d) {         \
    EMU_API_CALL();                                             \
    *d = as<std::remove_pointer_t<T>>(new Struct);                        \
    return CUDNN_STATUS_SUCCESS;                                          \
  }                                                                       \
  cudnnStatus_t CUDNNWINAPI cudnnDestroy##Name##Descriptor(T d) {         \
    EMU_API_CALL();                                             \
    delete as<Struct>(d);                                                 \
    return CUDNN_STATUS_SUCCESS;                                          \
  }
EMU_DESCRIPTOR(cudnnTensorDescriptor_t, Tensor, TensorD)
EMU_DESCRIPTOR(cudnnFilterDescriptor_t, Filter, FilterD)
EMU_DESCRIPTOR(cudnnConvolutionDescriptor_t, Convolution, ConvD)
EMU_DESCRIPTOR(cudnnPoolingDescriptor_t, Pooling, PoolD)
EMU_DESCRIPTOR(cudnnOpTensorDescriptor_t, OpTensor, OpD)
EMU_DESCRIPTOR(cudnnReduceTensorDescriptor_t, ReduceTensor, ReduceD)
#undef EMU_DESCRIPTOR

cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int nb,
                                                     const int dim[], const int stride[]) {
  EMU_API_CALL();
  TensorD* t = as<TensorD>(desc);
  if (!t || nb < 3 || nb > kMaxDims || !dim || !stride) return CUDNN_STATUS_BAD_PARAM;
  if (!type_ok(type)) return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nb; i++)
    if (dim[i] <= 0 || stride[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  t->type = type, t->nb = nb;
  std::copy(dim, dim + nb, t->dim), std::copy(stride, stride + nb, t->stride);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                                     cudnnTensorFormat_t format, int nb, const int dim[]) {
  EMU_API_CALL();
  FilterD* f = as<FilterD>(desc);
  if (!f || nb < 3 || nb > kMaxDims || !dim) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < nb; i++)
    if (dim[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  f->type = type, f->format = format, f->nb = nb;
  std::copy(dim, dim + nb, f->dim);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc, int n, const int pad[],
                                                          const int stride[], const int dilation[],
                                                          cudnnConvolutionMode_t mode, cudnnDataType_t) {
  EMU_API_CALL();
  ConvD* c = as<ConvD>(desc);
  if (!c || n < 1 || n > kMaxDims - 2) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < n; i++)
    if (pad[i] < 0 || stride[i] <= 0 || dilation[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  c->n = n, c->mode = mode;
  std::copy(pad, pad + n, c->pad), std::copy(stride, stride + n, c->stride), std::copy(dilation, dilation + n, c->dilation);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  EMU_API_CALL();
  if (!desc || groups < 1) return CUDNN_STATUS_BAD_PARAM;
  as<ConvD>(desc)->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  EMU_API_CALL();
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  as<ConvD>(desc)->math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t desc, const cudnnPoolingMode_t mode,
                                                      const cudnnNanPropagation_t, int n, const int window[],
                                                      const int pad[], const int stride[]) {
  EMU_API_CALL();
  PoolD* p = as<PoolD>(desc);
  if (!p || n < 1 || n > kMaxDims - 2) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < n; i++)
    if (window[i] <= 0 || pad[i] < 0 || stride[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  p->mode = mode, p->n = n;
  std::copy(window, window + n, p->window), std::copy(pad, pad + n, p->pad), std::copy(stride, stride + n, p->stride);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t desc, cudnnOpTensorOp_t op,
                                                     cudnnDataType_t, cudnnNanPropagation_t) {
  EMU_API_CALL();
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  as<OpD>(desc)->op = op;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnSetReduceTensorDescriptor(cudnnReduceTensorDescriptor_t desc, cudnnReduceTensorOp_t op,
                                                         cudnnDataType_t, cudnnNanPropagation_t,
                                                         cudnnReduceTensorIndices_t, cudnnIndicesType_t) {
  EMU_API_CALL();
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  as<ReduceD>(desc)->op = op;
  return CUDNN_STATUS_SUCCESS;
}

// ---- convolution: algorithms, workspace, the three calls, bias ----
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* n) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  *n = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* n) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  *n = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int* n) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  *n = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t,
                                                                 const cudnnFilterDescriptor_t w,
                                                                 const cudnnConvolutionDescriptor_t c,
                                                                 const cudnnTensorDescriptor_t, const int requested,
                                                                 int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (!c || !found || !perf) return CUDNN_STATUS_BAD_PARAM;
  fill_perf(perf, found, requested, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, fwd_runs, fwd_rounds, as<ConvD>(c)->math,
            as<FilterD>(w));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
                                                                      const cudnnTensorDescriptor_t,
                                                                      const cudnnConvolutionDescriptor_t c,
                                                                      const cudnnTensorDescriptor_t,
                                                                      const int requested, int* found,
                                                                      cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (!c || !found || !perf) return CUDNN_STATUS_BAD_PARAM;
  fill_perf(perf, found, requested, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, data_runs, data_rounds, as<ConvD>(c)->math,
            as<FilterD>(w));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t,
                                                                        const cudnnTensorDescriptor_t,
                                                                        const cudnnConvolutionDescriptor_t c,
                                                                        const cudnnFilterDescriptor_t dw,
                                                                        const int requested, int* found,
                                                                        cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (!c || !found || !perf) return CUDNN_STATUS_BAD_PARAM;
  fill_perf(perf, found, requested, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, filter_runs, filter_rounds,
            as<ConvD>(c)->math, as<FilterD>(dw));
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                                  const cudnnFilterDescriptor_t w,
                                                                  const cudnnConvolutionDescriptor_t c,
                                                                  const cudnnTensorDescriptor_t y,
                                                                  cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  ConvShape s;
  const cudnnStatus_t st = conv_shape(as<TensorD>(x), as<FilterD>(w), as<ConvD>(c), as<TensorD>(y), &s);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!fwd_runs(a)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = workspace(a);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
                                                                       const cudnnTensorDescriptor_t dy,
                                                                       const cudnnConvolutionDescriptor_t c,
                                                                       const cudnnTensorDescriptor_t dx,
                                                                       cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  ConvShape s;
  const cudnnStatus_t st = conv_shape(as<TensorD>(dx), as<FilterD>(w), as<ConvD>(c), as<TensorD>(dy), &s);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!data_runs(a)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = workspace(a);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
                                                                         const cudnnTensorDescriptor_t x,
                                                                         const cudnnTensorDescriptor_t dy,
                                                                         const cudnnConvolutionDescriptor_t c,
                                                                         const cudnnFilterDescriptor_t dw,
                                                                         cudnnConvolutionBwdFilterAlgo_t a,
                                                                         size_t* bytes) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  ConvShape s;
  const cudnnStatus_t st = conv_shape(as<TensorD>(x), as<FilterD>(dw), as<ConvD>(c), as<TensorD>(dy), &s);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!filter_runs(a)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = workspace(a);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xd,
                                                  const void* x, const cudnnFilterDescriptor_t wd, const void* w,
                                                  const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t a,
                                                  void*, size_t bytes, const void* beta,
                                                  const cudnnTensorDescriptor_t yd, void* y) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (bytes < workspace(a) && fwd_runs(a)) return CUDNN_STATUS_BAD_PARAM;
  return convolution(0, a, alpha, beta, as<TensorD>(xd), const_cast<void*>(x), as<FilterD>(wd), const_cast<void*>(w),
                     as<TensorD>(yd), y, as<ConvD>(cd));
}
cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                       const cudnnFilterDescriptor_t wd, const void* w,
                                                       const cudnnTensorDescriptor_t dyd, const void* dy,
                                                       const cudnnConvolutionDescriptor_t cd,
                                                       cudnnConvolutionBwdDataAlgo_t a, void*, size_t bytes,
                                                       const void* beta, const cudnnTensorDescriptor_t dxd, void* dx) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (bytes < workspace(a) && data_runs(a)) return CUDNN_STATUS_BAD_PARAM;
  return convolution(1, a, alpha, beta, as<TensorD>(dxd), dx, as<FilterD>(wd), const_cast<void*>(w), as<TensorD>(dyd),
                     const_cast<void*>(dy), as<ConvD>(cd));
}
cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                                         const cudnnTensorDescriptor_t xd, const void* x,
                                                         const cudnnTensorDescriptor_t dyd, const void* dy,
                                                         const cudnnConvolutionDescriptor_t cd,
                                                         cudnnConvolutionBwdFilterAlgo_t a, void*, size_t bytes,
                                                         const void* beta, const cudnnFilterDescriptor_t dwd,
                                                         void* dw) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  if (bytes < workspace(a) && filter_runs(a)) return CUDNN_STATUS_BAD_PARAM;
  return convolution(2, a, alpha, beta, as<TensorD>(xd), const_cast<void*>(x), as<FilterD>(dwd), dw, as<TensorD>(dyd),
                     const_cast<void*>(dy), as<ConvD>(cd));
}

// Find: every algorithm that runs, timed in emulation order (results left in
// the output, as cuDNN leaves the last run's).
cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const void* x, const cudnnFilterDescriptor_t wd, const void* w,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t yd, void* y, const int requested, int* found,
    cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t bytes) {
  EMU_API_CALL();
  t_stream = stream_of(h);
  return find_all(perf, found, requested, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, fwd_runs, fwd_rounds, cd, wd, bytes,
                  [&](auto algo, const float* one, const float* zero) {
                    return cudnnConvolutionForward(h, one, xd, x, wd, w, cd, algo, ws, bytes, zero, yd, y);
                  });
}
cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const void* w, const cudnnTensorDescriptor_t dyd, const void* dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dxd, void* dx, const int requested,
    int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t bytes) {
  EMU_API_CALL();
  t_stream = stream_of(h);
  return find_all(perf, found, requested, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, data_runs, data_rounds, cd, wd, bytes,
                  [&](auto algo, const float* one, const float* zero) {
                    return cudnnConvolutionBackwardData(h, one, wd, w, dyd, dy, cd, algo, ws, bytes, zero, dxd, dx);
                  });
}
cudnnStatus_t CUDNNWINAPI cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t dyd, const void* dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dwd, void* dw, const int requested,
    int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws, size_t bytes) {
  EMU_API_CALL();
  t_stream = stream_of(h);
  return find_all(perf, found, requested, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, filter_runs, filter_rounds, cd, dwd, bytes,
                  [&](auto algo, const float* one, const float* zero) {
                    return cudnnConvolutionBackwardFilter(h, one, xd, x, dyd, dy, cd, algo, ws, bytes, zero, dwd, dw);
                  });
}

// db = alpha * the sum of dy over N, H, W + beta * db (db: 1 x K x 1 x 1).
// This cuDNN refuses BFLOAT16 here.
cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                                       const cudnnTensorDescriptor_t dyd, const void* dy,
                                                       const void* beta, const cudnnTensorDescriptor_t dbd, void* db) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *g = as<TensorD>(dyd), *b = as<TensorD>(dbd);
  if (!g || !b || g->nb != 4 || b->nb != 4 || b->dim[1] != g->dim[1] || b->dim[0] != 1 || b->dim[2] != 1 ||
      b->dim[3] != 1)
    return CUDNN_STATUS_BAD_PARAM;
  if (g->type == CUDNN_DATA_BFLOAT16 || b->type == CUDNN_DATA_BFLOAT16) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(g->type, alpha), bt = scale(g->type, beta);
  return queue([=, gc = *g, bc = *b] {
    const TensorD *g = &gc, *b = &bc;
    for (int k = 0; k < g->dim[1]; k++) {
      double s = 0;
      channel(*g, k, [&](int64_t off) { s += load(g->type, dy, off); });
      blend(b->type, db, k * static_cast<int64_t>(b->stride[1]), a, s, bt);
    }
  });
}

// ---- pooling ----
cudnnStatus_t CUDNNWINAPI cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pd, const void* alpha,
                                              const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                              const cudnnTensorDescriptor_t yd, void* y) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const PoolD* d = as<PoolD>(pd);
  const TensorD *X = as<TensorD>(xd), *Y = as<TensorD>(yd);
  const cudnnStatus_t st = pool_check(d, X, Y);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  const double a = scale(X->type, alpha), b = scale(X->type, beta);
  return queue([=, dc = *d, Xc = *X, Yc = *Y] {
    const PoolD* d = &dc;
    const TensorD *X = &Xc, *Y = &Yc;
    const T4 TX{X}, TY{Y};
    for (int n = 0; n < Y->dim[0]; n++)
      for (int c = 0; c < Y->dim[1]; c++)
        for (int p = 0; p < Y->dim[2]; p++)
          for (int q = 0; q < Y->dim[3]; q++) {
            const Window w = window(*d, *X, p, q);
            double v = 0;
            if (is_max(*d)) {
              int mh, mw;
              window_max(*X, x, n, c, w, &v, &mh, &mw);
            } else {
              for (int h = w.h0; h < w.h1; h++)
                for (int i = w.w0; i < w.w1; i++) v += load(X->type, x, TX.at(n, c, h, i));
              v = w.count > 0 ? v / w.count : 0;
            }
            blend(Y->type, y, TY.at(n, c, p, q), a, v, b);
          }
  });
}
cudnnStatus_t CUDNNWINAPI cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pd, const void* alpha,
                                               const cudnnTensorDescriptor_t yd, const void* y,
                                               const cudnnTensorDescriptor_t dyd, const void* dy,
                                               const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                               const cudnnTensorDescriptor_t dxd, void* dx) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const PoolD* d = as<PoolD>(pd);
  const TensorD *X = as<TensorD>(xd), *G = as<TensorD>(dyd), *DX = as<TensorD>(dxd);
  cudnnStatus_t st = pool_check(d, X, G);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!DX || !std::equal(X->dim, X->dim + 4, DX->dim) || DX->type != X->type) return CUDNN_STATUS_BAD_PARAM;
  (void)y, (void)yd;
  const double a = scale(X->type, alpha), b = scale(X->type, beta);
  return queue([=, dc = *d, Xc = *X, Gc = *G, DXc = *DX] {
    const PoolD* d = &dc;
    const TensorD *X = &Xc, *G = &Gc, *DX = &DXc;
    const T4 TG{G}, TDX{DX};
    std::vector<double> acc(static_cast<size_t>(count(*X)), 0.0);
    auto at = [&](int n, int c, int h, int w) {
      return ((static_cast<size_t>(n) * X->dim[1] + c) * X->dim[2] + h) * X->dim[3] + w;
    };
    for (int n = 0; n < G->dim[0]; n++)
      for (int c = 0; c < G->dim[1]; c++)
        for (int p = 0; p < G->dim[2]; p++)
          for (int q = 0; q < G->dim[3]; q++) {
            const Window w = window(*d, *X, p, q);
            const double g = load(G->type, dy, TG.at(n, c, p, q));
            if (is_max(*d)) {
              double m;
              int mh, mw;
              window_max(*X, x, n, c, w, &m, &mh, &mw);
              if (mh >= 0) acc[at(n, c, mh, mw)] += g;
            } else if (w.count > 0) {
              for (int h = w.h0; h < w.h1; h++)
                for (int i = w.w0; i < w.w1; i++) acc[at(n, c, h, i)] += g / w.count;
            }
          }
    for (int n = 0; n < X->dim[0]; n++)
      for (int c = 0; c < X->dim[1]; c++)
        for (int h = 0; h < X->dim[2]; h++)
          for (int w = 0; w < X->dim[3]; w++) blend(DX->type, dx, TDX.at(n, c, h, w), a, acc[at(n, c, h, w)], b);
  });
}

// ---- softmax over each instance (strided rows walked as if packed) ----
cudnnStatus_t CUDNNWINAPI cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                              const void* alpha, const cudnnTensorDescriptor_t xd, const void* x,
                                              const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *X0 = as<TensorD>(xd), *Y0 = as<TensorD>(yd);
  if (!X0 || !Y0 || X0->nb != Y0->nb || !std::equal(X0->dim, X0->dim + X0->nb, Y0->dim)) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_SOFTMAX_MODE_INSTANCE || X0->type != Y0->type) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(X0->type, alpha), b = scale(X0->type, beta);
  return queue([=, X0c = *X0, Y0c = *Y0] {
    const TensorD *X0 = &X0c, *Y0 = &Y0c;
    const TensorD X = as_packed(*X0), Y = as_packed(*Y0);
    const int64_t rows = X.dim[0], row = count(X) / rows;
    for (int64_t r = 0; r < rows; r++) {
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < row; i++) m = std::max(m, load(X.type, x, offset_of(X, r * row + i)));
      if (algo == CUDNN_SOFTMAX_FAST) m = 0;
      for (int64_t i = 0; i < row; i++) s += std::exp(load(X.type, x, offset_of(X, r * row + i)) - m);
      for (int64_t i = 0; i < row; i++) {
        const double v = load(X.type, x, offset_of(X, r * row + i)) - m;
        blend(Y.type, y, offset_of(Y, r * row + i), a, algo == CUDNN_SOFTMAX_LOG ? v - std::log(s) : std::exp(v) / s, b);
      }
    }
  });
}
cudnnStatus_t CUDNNWINAPI cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                               const void* alpha, const cudnnTensorDescriptor_t yd, const void* y,
                                               const cudnnTensorDescriptor_t dyd, const void* dy, const void* beta,
                                               const cudnnTensorDescriptor_t dxd, void* dx) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *Y0 = as<TensorD>(yd), *G0 = as<TensorD>(dyd), *D0 = as<TensorD>(dxd);
  if (!Y0 || !G0 || !D0 || !std::equal(Y0->dim, Y0->dim + Y0->nb, G0->dim) ||
      !std::equal(Y0->dim, Y0->dim + Y0->nb, D0->dim))
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_SOFTMAX_MODE_INSTANCE) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(Y0->type, alpha), b = scale(Y0->type, beta);
  return queue([=, Y0c = *Y0, G0c = *G0, D0c = *D0] {
    const TensorD *Y0 = &Y0c, *G0 = &G0c, *D0 = &D0c;
    const TensorD Y = as_packed(*Y0), G = as_packed(*G0), D = as_packed(*D0);
    const int64_t rows = Y.dim[0], row = count(Y) / rows;
    for (int64_t r = 0; r < rows; r++) {
      double s = 0;
      for (int64_t i = 0; i < row; i++) {
        const double g = load(G.type, dy, offset_of(G, r * row + i)), v = load(Y.type, y, offset_of(Y, r * row + i));
        s += algo == CUDNN_SOFTMAX_LOG ? g : g * v;
      }
      for (int64_t i = 0; i < row; i++) {
        const double g = load(G.type, dy, offset_of(G, r * row + i)), v = load(Y.type, y, offset_of(Y, r * row + i));
        blend(D.type, dx, offset_of(D, r * row + i), a, algo == CUDNN_SOFTMAX_LOG ? g - std::exp(v) * s : v * (g - s), b);
      }
    }
  });
}

// ---- spatial batch norm ----
cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta, const cudnnTensorDescriptor_t xd,
    const void* x, const cudnnTensorDescriptor_t yd, void* y, const cudnnTensorDescriptor_t pd, const void* scale_p,
    const void* bias_p, double factor, void* running_mean, void* running_var, double eps, void* save_mean,
    void* save_inv) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *X = as<TensorD>(xd), *Y = as<TensorD>(yd), *P = as<TensorD>(pd);
  if (!bn_shapes(X, Y, P) || !scale_p || !bias_p) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(X->type, alpha), b = scale(X->type, beta);
  return queue([=, Xc = *X, Yc = *Y, Pc = *P] {
    const TensorD *X = &Xc, *Y = &Yc, *P = &Pc;
    const double m = static_cast<double>(X->dim[0]) * X->dim[2] * X->dim[3];
    for (int c = 0; c < X->dim[1]; c++) {
      const int64_t pc = c * static_cast<int64_t>(P->stride[1]);
      double mean = 0, var = 0;
      channel(*X, c, [&](int64_t off) { mean += load(X->type, x, off); });
      mean /= m;
      channel(*X, c, [&](int64_t off) {
        const double d = load(X->type, x, off) - mean;
        var += d * d;
      });
      var /= m;
      const double inv = 1 / std::sqrt(var + eps), g = load(P->type, scale_p, pc), bi = load(P->type, bias_p, pc);
      const T4 TX{X}, TY{Y};
      for (int n = 0; n < X->dim[0]; n++)
        for (int h = 0; h < X->dim[2]; h++)
          for (int w = 0; w < X->dim[3]; w++)
            blend(Y->type, y, TY.at(n, c, h, w), a, g * (load(X->type, x, TX.at(n, c, h, w)) - mean) * inv + bi, b);
      if (running_mean) store(P->type, running_mean, pc, (1 - factor) * load(P->type, running_mean, pc) + factor * mean);
      if (running_var)
        store(P->type, running_var, pc,
              (1 - factor) * load(P->type, running_var, pc) + factor * (m > 1 ? var * m / (m - 1) : var));
      if (save_mean) store(P->type, save_mean, pc, mean);
      if (save_inv) store(P->type, save_inv, pc, inv);
    }
  });
}
cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta, const cudnnTensorDescriptor_t xd,
    const void* x, const cudnnTensorDescriptor_t yd, void* y, const cudnnTensorDescriptor_t pd, const void* scale_p,
    const void* bias_p, const void* est_mean, const void* est_var, double eps) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *X = as<TensorD>(xd), *Y = as<TensorD>(yd), *P = as<TensorD>(pd);
  if (!bn_shapes(X, Y, P) || !scale_p || !bias_p || !est_mean || !est_var) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(X->type, alpha), b = scale(X->type, beta);
  return queue([=, Xc = *X, Yc = *Y, Pc = *P] {
    const TensorD *X = &Xc, *Y = &Yc, *P = &Pc;
    const T4 TX{X}, TY{Y};
    for (int c = 0; c < X->dim[1]; c++) {
      const int64_t pc = c * static_cast<int64_t>(P->stride[1]);
      const double mean = load(P->type, est_mean, pc), inv = 1 / std::sqrt(load(P->type, est_var, pc) + eps);
      const double g = load(P->type, scale_p, pc), bi = load(P->type, bias_p, pc);
      for (int n = 0; n < X->dim[0]; n++)
        for (int h = 0; h < X->dim[2]; h++)
          for (int w = 0; w < X->dim[3]; w++)
            blend(Y->type, y, TY.at(n, c, h, w), a, g * (load(X->type, x, TX.at(n, c, h, w)) - mean) * inv + bi, b);
    }
  });
}
cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha_d, const void* beta_d, const void* alpha_p,
    const void* beta_p, const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t dyd,
    const void* dy, const cudnnTensorDescriptor_t dxd, void* dx, const cudnnTensorDescriptor_t pd, const void* scale_p,
    void* dscale, void* dbias, double eps, const void* saved_mean, const void* saved_inv) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *X = as<TensorD>(xd), *G = as<TensorD>(dyd), *D = as<TensorD>(dxd), *P = as<TensorD>(pd);
  if (!bn_shapes(X, G, P) || !D || !std::equal(X->dim, X->dim + 4, D->dim) || !scale_p || !dscale || !dbias)
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) return CUDNN_STATUS_NOT_SUPPORTED;
  const double ad = scale(X->type, alpha_d), bd = scale(X->type, beta_d), ap = scale(X->type, alpha_p),
               bp = scale(X->type, beta_p);
  return queue([=, Xc = *X, Gc = *G, Dc = *D, Pc = *P] {
    const TensorD *X = &Xc, *G = &Gc, *D = &Dc, *P = &Pc;
    const double m = static_cast<double>(X->dim[0]) * X->dim[2] * X->dim[3];
    const T4 TX{X}, TG{G}, TD{D};
    for (int c = 0; c < X->dim[1]; c++) {
      const int64_t pc = c * static_cast<int64_t>(P->stride[1]);
      double mean, inv;
      if (saved_mean && saved_inv) {
        mean = load(P->type, saved_mean, pc), inv = load(P->type, saved_inv, pc);
      } else {
        mean = 0;
        double var = 0;
        channel(*X, c, [&](int64_t off) { mean += load(X->type, x, off); });
        mean /= m;
        channel(*X, c, [&](int64_t off) {
          const double d = load(X->type, x, off) - mean;
          var += d * d;
        });
        inv = 1 / std::sqrt(var / m + eps);
      }
      double sg = 0, sgx = 0;
      for (int n = 0; n < X->dim[0]; n++)
        for (int h = 0; h < X->dim[2]; h++)
          for (int w = 0; w < X->dim[3]; w++) {
            const double g = load(G->type, dy, TG.at(n, c, h, w));
            sg += g, sgx += g * (load(X->type, x, TX.at(n, c, h, w)) - mean) * inv;
          }
      const double gamma = load(P->type, scale_p, pc);
      for (int n = 0; n < X->dim[0]; n++)
        for (int h = 0; h < X->dim[2]; h++)
          for (int w = 0; w < X->dim[3]; w++) {
            const double xhat = (load(X->type, x, TX.at(n, c, h, w)) - mean) * inv;
            const double g = load(G->type, dy, TG.at(n, c, h, w));
            blend(D->type, dx, TD.at(n, c, h, w), ad, gamma * inv / m * (m * g - sg - xhat * sgx), bd);
          }
      blend(P->type, dscale, pc, ap, sgx, bp);
      blend(P->type, dbias, pc, ap, sg, bp);
    }
  });
}

// ---- tensor arithmetic ----
// C = alpha * A + beta * C, A broadcast.
cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t ad,
                                         const void* A, const void* beta, const cudnnTensorDescriptor_t cd, void* C) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD *Ad = as<TensorD>(ad), *Cd = as<TensorD>(cd);
  if (!Ad || !Cd || !broadcasts(*Ad, *Cd)) return CUDNN_STATUS_BAD_PARAM;
  const double a = scale(Cd->type, alpha), b = scale(Cd->type, beta);
  return queue([=, Adc = *Ad, Cdc = *Cd] {
    const TensorD *Ad = &Adc, *Cd = &Cdc;
    for (int64_t i = 0, n = count(*Cd); i < n; i++)
      blend(Cd->type, C, offset_of(*Cd, i), a, load(Ad->type, A, broadcast_offset(*Ad, *Cd, i)), b);
  });
}
// Every element of y = value[0] (in y's type).
cudnnStatus_t CUDNNWINAPI cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yd, void* y, const void* value) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const TensorD* Y = as<TensorD>(yd);
  if (!Y || !value) return CUDNN_STATUS_BAD_PARAM;
  const double v = load(Y->type, value, 0);
  return queue([=, Yc = *Y] {
    const TensorD* Y = &Yc;
    for (int64_t i = 0, n = count(*Y); i < n; i++) store(Y->type, y, offset_of(*Y, i), v);
  });
}
// C = op(alpha1 * A, alpha2 * B) + beta * C, B broadcast.
cudnnStatus_t CUDNNWINAPI cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t od, const void* alpha1,
                                        const cudnnTensorDescriptor_t ad, const void* A, const void* alpha2,
                                        const cudnnTensorDescriptor_t bd, const void* B, const void* beta,
                                        const cudnnTensorDescriptor_t cd, void* C) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const OpD* o = as<OpD>(od);
  const TensorD *Ad = as<TensorD>(ad), *Bd = as<TensorD>(bd), *Cd = as<TensorD>(cd);
  if (!o || !Ad || !Bd || !Cd || !broadcasts(*Ad, *Cd) || !broadcasts(*Bd, *Cd)) return CUDNN_STATUS_BAD_PARAM;
  if (o->op != CUDNN_OP_TENSOR_ADD && o->op != CUDNN_OP_TENSOR_MUL && o->op != CUDNN_OP_TENSOR_MIN &&
      o->op != CUDNN_OP_TENSOR_MAX)
    return CUDNN_STATUS_NOT_SUPPORTED;
  const double a1 = scale(Cd->type, alpha1), a2 = scale(Cd->type, alpha2), b = scale(Cd->type, beta);
  return queue([=, oc = *o, Adc = *Ad, Bdc = *Bd, Cdc = *Cd] {
    const OpD* o = &oc;
    const TensorD *Ad = &Adc, *Bd = &Bdc, *Cd = &Cdc;
    for (int64_t i = 0, n = count(*Cd); i < n; i++) {
      const double u = a1 * load(Ad->type, A, broadcast_offset(*Ad, *Cd, i));
      const double v = a2 * load(Bd->type, B, broadcast_offset(*Bd, *Cd, i));
      const double r = o->op == CUDNN_OP_TENSOR_ADD   ? u + v
                       : o->op == CUDNN_OP_TENSOR_MUL ? u * v
                       : o->op == CUDNN_OP_TENSOR_MIN ? std::min(u, v)
                                                      : std::max(u, v);
      blend(Cd->type, C, offset_of(*Cd, i), 1, r, b);
    }
  });
}
cudnnStatus_t CUDNNWINAPI cudnnGetReductionWorkspaceSize(cudnnHandle_t handle, const cudnnReduceTensorDescriptor_t,
                                                         const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
                                                         size_t* bytes) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  *bytes = 256;
  return CUDNN_STATUS_SUCCESS;
}
// C = alpha * (the sum of A over the dims where C has extent 1) + beta * C.
// This cuDNN refuses BFLOAT16 here.
cudnnStatus_t CUDNNWINAPI cudnnReduceTensor(cudnnHandle_t handle, const cudnnReduceTensorDescriptor_t rd, void*, size_t,
                                            void*, size_t, const void* alpha, const cudnnTensorDescriptor_t ad,
                                            const void* A, const void* beta, const cudnnTensorDescriptor_t cd,
                                            void* C) {
  EMU_API_CALL();
  t_stream = stream_of(handle);
  const ReduceD* r = as<ReduceD>(rd);
  const TensorD *Ad = as<TensorD>(ad), *Cd = as<TensorD>(cd);
  if (!r || !Ad || !Cd || !broadcasts(*Cd, *Ad)) return CUDNN_STATUS_BAD_PARAM;
  if (r->op != CUDNN_REDUCE_TENSOR_ADD || Ad->type == CUDNN_DATA_BFLOAT16 || Cd->type == CUDNN_DATA_BFLOAT16)
    return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = scale(Cd->type, alpha), b = scale(Cd->type, beta);
  return queue([=, Adc = *Ad, Cdc = *Cd] {
    const TensorD *Ad = &Adc, *Cd = &Cdc;
    std::vector<double> acc(static_cast<size_t>(count(*Cd)), 0.0);
    TensorD packed_c = as_packed(*Cd);
    for (int64_t i = 0, n = count(*Ad); i < n; i++)
      acc[static_cast<size_t>(broadcast_offset(packed_c, *Ad, i))] += load(Ad->type, A, offset_of(*Ad, i));
    for (int64_t i = 0, n = count(*Cd); i < n; i++) blend(Cd->type, C, offset_of(*Cd, i), a, acc[static_cast<size_t>(i)], b);
  });
}

}  // extern "C"
