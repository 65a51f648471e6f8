// CPU_OPT kernels of BATCH_NORM and LAYER_NORM for fp32 / fp64 (views of x,
// y, g and dx are packed into the workspace first and unpacked after:
// stage.hpp).
//
// The shape is seen as O x K x I (reduced, kept, reduced extents; see
// split3): NHWC batch norm is O x C x 1 (vectorised across channels),
// NCHW is N x C x HW (vectorised along each channel's rows), layer norm is
// 1 x rows x features. Statistics take one pass over shifted data (sums of
// x - c and (x - c)^2, c a sample mean of the channel / row), then the
// output pass centres on c, so a large mean with a small variance keeps its
// digits without a third pass over memory.
// Work splits over the pool by rows and channels; when there are too few
// independent outputs the rows split into parts with partial sums, combined in
// double. The per-channel tensors may be views of any layout: they are copied
// to and from small arrays in the workspace, which holds every temporary
// (nothing allocates).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cmd/common/axes.hpp"
#include "cmd/common/copy.hpp"
#include "cmd/common/reduce_loops.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/norm/norm_avx2.hpp"
#include "cmd/norm/norm_avx512.hpp"
#include "cmd/norm/stage.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::norm {

namespace {

constexpr size_t kParallelFrom = size_t{1} << 14;

struct Shape {
  size_t O, K, I;
};

bool shape_of(const ccv_nnc_tensor_t* x, const int* axis, int count, Shape* s) {
  const int nd = nd_of(x->info.dim);
  unsigned mask = 0;
  for (int i = 0; i < count; i++) mask |= 1u << axis[i];
  if (!split3(x->info.dim, nd, mask, &s->O, &s->K, &s->I)) return false;
  if (s->K == 1) {  // everything reduced: one row
    s->I *= s->O;
    s->O = 1;
  }
  return true;
}

size_t parts_for(const Shape& s) {
  const size_t threads = thread_count();
  if (threads <= 1 || s.O * s.K * s.I < kParallelFrom) return 1;
  if (s.I > 1 && s.K >= 4 * threads) return 1;
  return std::min<size_t>(s.O, 4 * threads);
}

enum Sums { kMeanSum, kSqDev, kDot2 };

// Per-channel sums over O x I of x (kMeanSum), (x - c)^2 and x - c (kSqDev,
// into r1 and r2), or g and g * (x - c) (kDot2, into r1 and r2). `partial`
// holds 2 * parts * K.
// Channels inner with AVX-512 and K a multiple of 16 up to kSumsMaxK, or AVX2
// and K a multiple of 8 up to avx2::kSumsMaxK, a part's sums stay in registers
// over its rows (norm_avx512.hpp, norm_avx2.hpp).
template <class T>
void channel_sums(const red::Loops<T>& L, Sums what, const Shape& s, const T* x, const T* g, const T* c, size_t parts,
                  T* partial, double* r1, double* r2) {
  const size_t O = s.O, K = s.K, I = s.I;
  const size_t rows = (O + parts - 1) / parts;
  T* p1 = partial;
  T* p2 = partial + parts * K;
  std::fill(partial, partial + 2 * parts * K, T(0));
  const bool parallel = O * K * I >= kParallelFrom;
  if (I == 1) {
    const bool regs512 = cpu_features().avx512 && K % 16 == 0 && K <= kSumsMaxK;
    const bool regs2 = !regs512 && cpu_features().avx2 && avx2::sums_ok(K);
    range_parallel(parts, parallel ? 0 : parts + 1, 1, [&](size_t b, size_t e) {
      for (size_t q = b; q < e; q++) {
        const size_t o0 = q * rows, o1 = std::min(O, o0 + rows);
        if (o1 <= o0) continue;
        const int64_t ld = static_cast<int64_t>(K);
        if constexpr (std::is_same_v<T, float>) {
          if (what != kMeanSum && (regs512 || regs2)) {
            const auto sqdev = regs512 ? col_sqdev_regs : avx2::col_sqdev_regs;
            const auto dot2 = regs512 ? col_dot2_regs : avx2::col_dot2_regs;
            if (what == kSqDev)
              sqdev(x + o0 * K, o1 - o0, K, c, p1 + q * K, p2 + q * K);
            else
              dot2(g + o0 * K, x + o0 * K, o1 - o0, K, c, p1 + q * K, p2 + q * K);
            continue;
          }
        }
        if (what == kMeanSum)
          L.col_reduce(red::kSum, x + o0 * K, o1 - o0, ld, K, p1 + q * K, true);
        else if (what == kSqDev)
          L.col_sqdev(x + o0 * K, o1 - o0, ld, K, c, p1 + q * K, p2 + q * K);
        else
          L.col_dot2(g + o0 * K, x + o0 * K, o1 - o0, ld, K, c, p1 + q * K, p2 + q * K);
      }
    });
  } else {
    range_parallel(parts * K, parallel ? 0 : parts * K + 1, 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; t++) {
        const size_t q = t / K, k = t % K;
        const size_t o0 = q * rows, o1 = std::min(O, o0 + rows);
        T a1 = 0, a2 = 0;
        for (size_t o = o0; o < o1; o++) {
          const size_t off = (o * K + k) * I;
          if (what == kMeanSum)
            a1 += L.row_reduce(red::kSum, x + off, I);
          else if (what == kSqDev)
            a1 += L.row_sqdev(x + off, I, c[k], &a2);
          else
            L.row_dot2(g + off, x + off, I, c[k], &a1, &a2);
        }
        p1[q * K + k] = a1;
        p2[q * K + k] = a2;
      }
    });
  }
  for (size_t k = 0; k < K; k++) {
    double a1 = 0, a2 = 0;
    for (size_t q = 0; q < parts; q++) a1 += p1[q * K + k], a2 += p2[q * K + k];
    r1[k] = a1;
    if (r2) r2[k] = a2;
  }
}

// out = a[k] * g + b[k] * (x - m[k]) + c[k] per channel (with g NULL: out = (x - m[k]) * a[k] + b[k]).
// Channels inner (I == 1): the parts of channel_sums again (so that each
// thread finds the rows it summed), large outputs of whole lines streamed past
// the cache (norm_avx512.hpp, norm_avx2.hpp): that spares the read
// of each output line before its write and keeps the inputs in cache.
template <class T>
void channel_apply(const red::Loops<T>& L, const Shape& s, size_t parts, const T* g, const T* x, T* out, const T* m,
                   const T* a, const T* b, const T* c) {
  const size_t O = s.O, K = s.K, I = s.I;
  const bool parallel = O * K * I >= kParallelFrom;
  if (I == 1) {
    const size_t rows = (O + parts - 1) / parts;
    bool stream512 = false, stream2 = false;
    if constexpr (std::is_same_v<T, float>) {
      const bool big = O * K * sizeof(float) >= kStreamBytes;
      stream512 = big && cpu_features().avx512 && stream_ok(out, K);
      stream2 = big && !stream512 && cpu_features().avx2 && avx2::stream_ok(out, K);
    }
    range_parallel(parts, parallel ? 0 : parts + 1, 1, [&](size_t b0, size_t e0) {
      for (size_t q = b0; q < e0; q++) {
        const size_t o0 = q * rows, o1 = std::min(O, o0 + rows);
        if (o1 <= o0) continue;
        const size_t off = o0 * K;
        if constexpr (std::is_same_v<T, float>) {
          if (stream512 || stream2) {
            if (g)
              (stream512 ? col_axpbypc_stream : avx2::col_axpbypc_stream)(g + off, x + off, out + off, o1 - o0, K,
                                                                           m, a, b, c);
            else
              (stream512 ? col_affine_stream : avx2::col_affine_stream)(x + off, out + off, o1 - o0, K, m, a, b);
            continue;
          }
        }
        const int64_t ld = static_cast<int64_t>(K);
        if (g)
          L.col_axpbypc(g + off, x + off, out + off, o1 - o0, ld, K, m, a, b, c);
        else
          L.col_affine(x + off, out + off, o1 - o0, ld, K, m, a, b);
      }
    });
  } else {
    range_parallel(O * K, parallel ? 0 : O * K + 1, std::max<size_t>(1, 4096 / I), [&](size_t b0, size_t e0) {
      for (size_t r = b0; r < e0; r++) {
        const size_t k = r % K, off = r * I;
        if (g)
          L.row_axpbypc(g + off, x + off, out + off, I, m[k], a[k], b[k], c[k]);
        else
          L.row_affine(x + off, out + off, I, m[k], a[k], b[k]);
      }
    });
  }
}

// NCHW-like shapes (each channel a set of rows) whose channels are numerous
// enough to share out and small enough to stay in cache: statistics and output
// run channel by channel, reading each channel from memory once.
constexpr size_t kFuseBytes = size_t{1} << 20;
bool fuse_channels(const Shape& s, size_t parts, size_t element) {
  return s.I > 1 && parts == 1 && s.O * s.I * element * 2 <= kFuseBytes && thread_count() > 0;
}

// c[k] = the mean of a small sample of channel k (its first rows), the shift
// of the one-pass variance: close to the mean, so the shifted sums stay small.
template <class T>
void shift_estimate(const Shape& s, const T* x, T* c) {
  const size_t rows = std::min<size_t>(s.O, 16), cols = std::min<size_t>(s.I, 256);
  for (size_t k = 0; k < s.K; k++) {
    double a = 0;
    for (size_t o = 0; o < rows; o++)
      for (size_t i = 0; i < cols; i++) a += static_cast<double>(x[(o * s.K + k) * s.I + i]);
    c[k] = static_cast<T>(a / static_cast<double>(rows * cols));
  }
}

template <class T>
int bnorm_forward(const ccv_nnc_cmd_t& cmd, const BatchNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  Shape s;
  shape_of(io.x, cmd.info.bnorm.axis, cmd.info.bnorm.count, &s);
  const size_t K = s.K, parts = parts_for(s);
  // Workspace: mean, inv, a, b, running (K each) + partials (2 * parts * K) + double sums (2 * K).
  T* buf;
  T* w = scratch<T>(stream, (6 * K + 2 * parts * K) * sizeof(T) + 2 * K * sizeof(double) + 64,
                    staged(io.x) + staged(io.y), &buf);
  T *mean = w, *inv = w + K, *a = w + 2 * K, *b = w + 3 * K, *run = w + 4 * K, *partial = w + 6 * K;
  double* d1 = reinterpret_cast<double*>(partial + 2 * parts * K);
  const T* x = stage_in<T>(io.x, &buf);
  T* y = stage_out<T>(io.y, &buf);
  const double eps = cmd.info.bnorm.epsilon;
  const double n = static_cast<double>(s.O * s.I);
  const bool fused = fuse_channels(s, parts, sizeof(T)) && !cmd.info.bnorm.is_test;
  if (cmd.info.bnorm.is_test) {
    read_small<T>(io.mean, K, T(0), mean);
    read_small<T>(io.var, K, T(1), inv);
    for (size_t k = 0; k < K; k++) inv[k] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(inv[k]) + eps));
  } else {
    // One pass over shifted data: with c = a rough mean of a small sample of
    // the channel, mean = c + sum(x - c) / n and var = sum((x - c)^2) / n -
    // (sum(x - c) / n)^2. c sits inside the data, so the differences keep the
    // digits a large mean would cost (Chan, Golub & LeVeque's shifted
    // algorithm). x is centred on c in the output pass and the rest of the
    // mean goes into b, in double.
    double* residual = d1 + K;
    shift_estimate(s, x, mean);
    if (fused) {
      // Each channel's rows stay in cache between its statistics and its output.
      read_small<T>(io.scale, K, T(1), a);
      read_small<T>(io.bias, K, T(0), b);
      range_parallel(K, 0, 1, [&](size_t k0, size_t k1) {
        for (size_t k = k0; k < k1; k++) {
          double sq = 0, dev = 0;
          for (size_t o = 0; o < s.O; o++) {
            T d = 0;
            sq += static_cast<double>(L.row_sqdev(x + (o * K + k) * s.I, s.I, mean[k], &d));
            dev += static_cast<double>(d);
          }
          residual[k] = dev / n;
          d1[k] = std::max(0.0, sq / n - residual[k] * residual[k]);
          const T ak = a[k] * static_cast<T>(1.0 / std::sqrt(d1[k] + eps));
          const T bk = static_cast<T>(b[k] - residual[k] * ak);
          for (size_t o = 0; o < s.O; o++)
            L.row_affine(x + (o * K + k) * s.I, y + (o * K + k) * s.I, s.I, mean[k], ak, bk);
        }
      });
    } else {
      channel_sums(L, kSqDev, s, x, static_cast<const T*>(nullptr), mean, parts, partial, d1, residual);
      for (size_t k = 0; k < K; k++) {
        residual[k] /= n;
        d1[k] = std::max(0.0, d1[k] / n - residual[k] * residual[k]);  // the variance
      }
    }
    const double m = cmd.info.bnorm.momentum;
    for (size_t k = 0; k < K; k++) inv[k] = static_cast<T>(d1[k]);  // the variance, for now
    if (io.out_var) {
      read_small<T>(io.var, K, T(0), run);
      for (size_t k = 0; k < K; k++) run[k] = static_cast<T>(run[k] * m + inv[k] * (1 - m));
      write_small(io.out_var, K, run);
    }
    if (io.out_mean) {
      read_small<T>(io.mean, K, T(0), run);
      for (size_t k = 0; k < K; k++) run[k] = static_cast<T>(run[k] * m + (mean[k] + residual[k]) * (1 - m));
      write_small(io.out_mean, K, run);
    }
    for (size_t k = 0; k < K; k++) inv[k] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(inv[k]) + eps));
    if (io.saved_mean) {
      for (size_t k = 0; k < K; k++) run[k] = static_cast<T>(mean[k] + residual[k]);
      write_small(io.saved_mean, K, run);
    }
    write_small(io.saved_inv_std, K, inv);
  }
  if (fused) {
    unstage(io.y, y);
    return CCV_NNC_EXEC_SUCCESS;
  }
  // The residual of the mean, from the temporaries (zero in inference).
  T* res = partial;
  for (size_t k = 0; k < K; k++) res[k] = cmd.info.bnorm.is_test ? T(0) : static_cast<T>(d1[K + k]);
  read_small<T>(io.scale, K, T(1), a);
  read_small<T>(io.bias, K, T(0), b);
  for (size_t k = 0; k < K; k++) {
    a[k] = a[k] * inv[k];
    b[k] = b[k] - res[k] * a[k];
  }
  channel_apply(L, s, parts, static_cast<const T*>(nullptr), x, y, mean, a, b, static_cast<const T*>(nullptr));
  unstage(io.y, y);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int bnorm_backward(const ccv_nnc_cmd_t& cmd, const BatchNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  Shape s;
  shape_of(io.x, cmd.info.bnorm.axis, cmd.info.bnorm.count, &s);
  const size_t K = s.K, parts = parts_for(s);
  T* buf;
  T* w = scratch<T>(stream, (8 * K + 2 * parts * K) * sizeof(T) + 2 * K * sizeof(double) + 64,
                    staged(io.x) + staged(io.g) + staged(io.dx), &buf);
  T *mean = w, *inv = w + K, *A = w + 2 * K, *B = w + 3 * K, *C = w + 4 * K, *tmp = w + 5 * K, *partial = w + 6 * K;
  T* scale_k = partial + 2 * parts * K;
  double* sg = reinterpret_cast<double*>(scale_k + K + (K & 1));
  double* sgx = sg + K;
  const bool test = cmd.info.bnorm.is_test;
  if (test) {
    read_small<T>(io.mean, K, T(0), mean);
    read_small<T>(io.var, K, T(1), inv);
    for (size_t k = 0; k < K; k++)
      inv[k] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(inv[k]) + cmd.info.bnorm.epsilon));
  } else {
    read_small<T>(io.saved_mean, K, T(0), mean);
    read_small<T>(io.saved_inv_std, K, T(1), inv);
  }
  const T* x = stage_in<T>(io.x, &buf);
  const T* g = stage_in<T>(io.g, &buf);
  const double n = static_cast<double>(s.O * s.I);
  // A[k] g + B[k] (x - mean[k]) + C[k] from the sums of channel k.
  auto coefficients = [&](size_t k) {
    const double a = static_cast<double>(scale_k[k]) * inv[k];
    A[k] = static_cast<T>(a);
    B[k] = test ? T(0) : static_cast<T>(-a * inv[k] * inv[k] * sgx[k] / n);
    C[k] = test ? T(0) : static_cast<T>(-a * sg[k] / n);
  };
  T* dx = stage_out<T>(io.dx, &buf);
  read_small<T>(io.scale, K, T(1), scale_k);
  if (fuse_channels(s, parts, sizeof(T))) {
    // Each channel's rows stay in cache between its sums and its dx.
    range_parallel(K, 0, 1, [&](size_t k0, size_t k1) {
      for (size_t k = k0; k < k1; k++) {
        double a1 = 0, a2 = 0;
        for (size_t o = 0; o < s.O; o++) {
          T r1 = 0, r2 = 0;
          L.row_dot2(g + (o * K + k) * s.I, x + (o * K + k) * s.I, s.I, mean[k], &r1, &r2);
          a1 += static_cast<double>(r1), a2 += static_cast<double>(r2);
        }
        sg[k] = a1, sgx[k] = a2;
        if (!dx) continue;
        coefficients(k);
        for (size_t o = 0; o < s.O; o++) {
          const size_t off = (o * K + k) * s.I;
          L.row_axpbypc(g + off, x + off, dx + off, s.I, mean[k], A[k], B[k], C[k]);
        }
      }
    });
  } else {
    channel_sums(L, kDot2, s, x, g, mean, parts, partial, sg, sgx);
  }
  if (io.dscale) {
    for (size_t k = 0; k < K; k++) tmp[k] = static_cast<T>(sgx[k] * inv[k]);
    write_small(io.dscale, K, tmp);
  }
  if (io.dbias) {
    for (size_t k = 0; k < K; k++) tmp[k] = static_cast<T>(sg[k]);
    write_small(io.dbias, K, tmp);
  }
  if (dx && !fuse_channels(s, parts, sizeof(T))) {
    for (size_t k = 0; k < K; k++) coefficients(k);
    channel_apply(L, s, parts, g, x, dx, mean, A, B, C);
  }
  unstage(io.dx, dx);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int lnorm_forward(const ccv_nnc_cmd_t& cmd, const LayerNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  Shape s;
  shape_of(io.x, cmd.info.lnorm.axis, cmd.info.lnorm.count, &s);
  const size_t K = s.K, I = s.I;
  T* buf;
  T* w = scratch<T>(stream, (2 * K + 2 * I) * sizeof(T) + 64, staged(io.x) + staged(io.y), &buf);
  T *mean = w, *inv = w + K, *sc = w + 2 * K, *bi = w + 2 * K + I;
  if (io.scale) read_small<T>(io.scale, I, T(1), sc);
  if (io.bias) read_small<T>(io.bias, I, T(0), bi);
  const T* scale = io.scale ? sc : nullptr;
  const T* bias = io.bias ? bi : nullptr;
  const T* x = stage_in<T>(io.x, &buf);
  T* y = stage_out<T>(io.y, &buf);
  const double eps = cmd.info.lnorm.epsilon;
  // A large output goes past the cache on AVX2 (as channel_apply's): whole rows of aligned lines only.
  bool stream_out = false;
  if constexpr (std::is_same_v<T, float>)
    stream_out = !cpu_features().avx512 && cpu_features().avx2 && K * I * sizeof(float) >= kStreamBytes &&
             avx2::stream_ok(y, I);
  range_parallel(K, K * I >= kParallelFrom ? 0 : K + 1, std::max<size_t>(1, 4096 / I), [&](size_t b, size_t e) {
    for (size_t k = b; k < e; k++) {
      const T* xr = x + k * I;
      const double n = static_cast<double>(I);
      // The shift of a one-pass shifted-data variance (see bnorm_forward): the mean of a sample of the row.
      const size_t sample = std::min<size_t>(I, 32);
      const T m =
          static_cast<T>(static_cast<double>(L.row_reduce(red::kSum, xr, sample)) / static_cast<double>(sample));
      T dev = 0;
      const double sq = static_cast<double>(L.row_sqdev(xr, I, m, &dev)) / n;
      const double r = static_cast<double>(dev) / n;  // shifted data: mean = m + r
      const T iv = static_cast<T>(1.0 / std::sqrt(std::max(0.0, sq - r * r) + eps));
      mean[k] = static_cast<T>(m + r), inv[k] = iv;
      if constexpr (std::is_same_v<T, float>) {
        if (stream_out) {
          avx2::row_ln_forward_stream(xr, y + k * I, I, m, static_cast<T>(r), iv, scale, bias);
          continue;
        }
      }
      L.ln_forward(xr, y + k * I, I, m, static_cast<T>(r), iv, scale, bias);
    }
  });
  write_small(io.saved_mean, K, mean);
  write_small(io.saved_inv_std, K, inv);
  unstage(io.y, y);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int lnorm_backward(const ccv_nnc_cmd_t& cmd, const LayerNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  Shape s;
  shape_of(io.x, cmd.info.lnorm.axis, cmd.info.lnorm.count, &s);
  const size_t K = s.K, I = s.I;
  const bool parallel = K * I >= kParallelFrom && thread_count() > 1;
  const size_t parts = parallel ? std::min<size_t>(K, 4 * thread_count()) : 1;
  const bool params = io.dscale || io.dbias;
  T* buf;
  T* w = scratch<T>(stream, (2 * K + I + (params ? 2 * parts * I : 0)) * sizeof(T) + 64,
                    staged(io.x) + staged(io.g) + staged(io.dx), &buf);
  T *mean = w, *inv = w + K, *sc = w + 2 * K, *pds = w + 2 * K + I, *pdb = pds + parts * I;
  read_small<T>(io.saved_mean, K, T(0), mean);
  read_small<T>(io.saved_inv_std, K, T(1), inv);
  if (io.scale) read_small<T>(io.scale, I, T(1), sc);
  const T* scale = io.scale ? sc : nullptr;
  if (params) std::fill(pds, pds + 2 * parts * I, T(0));
  const T* x = stage_in<T>(io.x, &buf);
  const T* g = stage_in<T>(io.g, &buf);
  T* dx = stage_out<T>(io.dx, &buf);
  const size_t rows = (K + parts - 1) / parts;
  bool stream_out = false;
  if constexpr (std::is_same_v<T, float>)
    stream_out = dx && !cpu_features().avx512 && cpu_features().avx2 && K * I * sizeof(float) >= kStreamBytes &&
             avx2::stream_ok(dx, I);
  range_parallel(parts, parallel ? 0 : parts + 1, 1, [&](size_t b, size_t e) {
    for (size_t q = b; q < e; q++) {
      T* ds = params ? pds + q * I : nullptr;
      T* db = params ? pdb + q * I : nullptr;
      for (size_t k = q * rows; k < std::min(K, (q + 1) * rows); k++) {
        T sh = 0, shx = 0;
        L.ln_backward_sums(g + k * I, x + k * I, I, mean[k], inv[k], scale, &sh, &shx, ds, db);
        if constexpr (std::is_same_v<T, float>) {
          if (stream_out) {
            avx2::row_ln_dx_stream(g + k * I, x + k * I, dx + k * I, I, mean[k], inv[k], scale,
                                   sh / static_cast<T>(I), shx / static_cast<T>(I));
            continue;
          }
        }
        if (dx)
          L.ln_backward_dx(g + k * I, x + k * I, dx + k * I, I, mean[k], inv[k], scale, sh / static_cast<T>(I),
                           shx / static_cast<T>(I));
      }
    }
  });
  if (params) {
    for (size_t q = 1; q < parts; q++)
      for (size_t j = 0; j < I; j++) pds[j] += pds[q * I + j], pdb[j] += pdb[q * I + j];
    write_small(io.dscale, I, pds);
    write_small(io.dbias, I, pdb);
  }
  unstage(io.dx, dx);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

bool bnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_BATCH_NORM_FORWARD;
  const BatchNormIo io = forward ? batch_norm_forward_io(inputs, input_size, outputs, output_size)
                                 : batch_norm_backward_io(inputs, input_size, outputs, output_size);
  if (!io.x || (forward && !io.y)) return false;
  Shape s;
  return cmd.info.bnorm.count >= 1 && cmd.info.bnorm.count <= kMaxDim &&
         shape_of(io.x, cmd.info.bnorm.axis, cmd.info.bnorm.count, &s);
}

bool lnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_LAYER_NORM_FORWARD;
  const LayerNormIo io = forward ? layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size)
                                 : layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  if (!io.x) return false;
  Shape s;
  return cmd.info.lnorm.count >= 1 && cmd.info.lnorm.count <= kMaxDim &&
         shape_of(io.x, cmd.info.lnorm.axis, cmd.info.lnorm.count, &s) && s.O == 1;
}

NNC_KERNEL(bnorm_forward_opt) {
  const BatchNormIo io = batch_norm_forward_io(inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return bnorm_forward<double>(cmd, io, stream_context);
  return bnorm_forward<float>(cmd, io, stream_context);
}

NNC_KERNEL(bnorm_backward_opt) {
  const BatchNormIo io = batch_norm_backward_io(inputs, input_size, outputs, output_size);
  // libnnc's outputs 3 and 4 (the running statistics' gradients, which only
  // a caller differentiating them asks for): the reference computes it all.
  if (io.dmean || io.dvar) return bnorm_backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return bnorm_backward<double>(cmd, io, stream_context);
  return bnorm_backward<float>(cmd, io, stream_context);
}

NNC_KERNEL(lnorm_forward_opt) {
  const LayerNormIo io = layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return lnorm_forward<double>(cmd, io, stream_context);
  return lnorm_forward<float>(cmd, io, stream_context);
}

NNC_KERNEL(lnorm_backward_opt) {
  const LayerNormIo io = layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return lnorm_backward<double>(cmd, io, stream_context);
  return lnorm_backward<float>(cmd, io, stream_context);
}

}  // namespace nnc::norm
