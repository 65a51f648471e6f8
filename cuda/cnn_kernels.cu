// GPU_REF kernels of CONVOLUTION, MAX_POOL / AVERAGE_POOL and BATCH_NORM,
// the fallback where cuDNN does not take a call (16F / 16BF / 64F, shapes
// it declines). The values come from cmd/common/gpu_cnn.hpp (tested on the
// CPU against CPU_REF); here only the walk: grid-stride loops with 64-bit
// indices, one thread per output element (pooled element, dx element as a
// gather over the windows covering it, convolution output, dx element, weight
// element), one block per filter for dbias and per channel for batch norm
// (block sums in shared memory). No atomics, so results do not depend on
// the order threads run in.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cnn_kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::CnnImage;
using gpu::CnnWeights;

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t first_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t stride_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

dim3 grid_for(int64_t count) { return dim3(static_cast<unsigned>(gpu::choose_ew(count).blocks)); }
dim3 blocks_for(int64_t items) { return dim3(static_cast<unsigned>(items < 65535 ? items : 65535)); }

// --- pooling ------------------------------------------------------------------

__global__ void pool_forward_kernel(gpu::PoolGeom g, CnnImage x, CnnImage y, bool cfast) {
  const int64_t total = gpu::cnn_count(y);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int n, oh, ow, c;
    gpu::cnn_index(y, cfast, t, &n, &oh, &ow, &c);
    gpu::cnn_st(y.p, y.type, gpu::cnn_off(y, n, oh, ow, c), gpu::pool_forward_at(g, x, n, oh, ow, c));
  }
}

// Max pooling: each window's maximum (a position h * W + w) into am.
__global__ void pool_argmax_kernel(gpu::PoolGeom g, CnnImage x, CnnImage gy, int32_t* am, bool cfast) {
  const int64_t total = gpu::cnn_count(gy);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int n, oh, ow, c;
    gpu::cnn_index(gy, cfast, t, &n, &oh, &ow, &c);
    am[gpu::pool_am_index(g, n, oh, ow, c)] = gpu::pool_argmax_at(g, x, n, oh, ow, c);
  }
}

// dx: a gather over the covering windows (max: through am).
__global__ void pool_backward_kernel(gpu::PoolGeom g, CnnImage x, CnnImage gy, CnnImage dx, const int32_t* am,
                                     bool cfast) {
  const int64_t total = gpu::cnn_count(dx);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int n, h, w, c;
    gpu::cnn_index(dx, cfast, t, &n, &h, &w, &c);
    const double v =
        g.max ? gpu::pool_max_backward_at(g, am, gy, n, h, w, c) : gpu::pool_backward_at(g, x, gy, n, h, w, c);
    gpu::cnn_st(dx.p, dx.type, gpu::cnn_off(dx, n, h, w, c), v);
  }
}

// --- convolution ------------------------------------------------------------

template <class A>
__global__ void conv_forward_kernel(gpu::ConvGeom g, CnnImage x, CnnWeights w, const void* bias, int64_t bias_stride,
                                    CnnImage y, bool cfast) {
  const int64_t total = gpu::cnn_count(y);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int n, oh, ow, k;
    gpu::cnn_index(y, cfast, t, &n, &oh, &ow, &k);
    A s = bias ? gpu::cnn_ld<A>(bias, y.type, k * bias_stride) : A(0);
    s += gpu::conv_forward_at<A>(g, x, w, n, oh, ow, k);
    gpu::cnn_st(y.p, y.type, gpu::cnn_off(y, n, oh, ow, k), static_cast<double>(s));
  }
}

template <class A>
__global__ void conv_dx_kernel(gpu::ConvGeom g, CnnImage gy, CnnWeights w, CnnImage dx, bool cfast) {
  const int64_t total = gpu::cnn_count(dx);
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int n, h, x0, c;
    gpu::cnn_index(dx, cfast, t, &n, &h, &x0, &c);
    gpu::cnn_st(dx.p, dx.type, gpu::cnn_off(dx, n, h, x0, c),
                static_cast<double>(gpu::conv_dx_at<A>(g, gy, w, n, h, x0, c)));
  }
}

template <class A>
__global__ void conv_dw_kernel(gpu::ConvGeom g, CnnImage gy, CnnImage x, CnnWeights dw) {
  const int64_t total = static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int k, kh, kw, c;
    gpu::cnn_weight_index(dw, t, &k, &kh, &kw, &c);
    gpu::cnn_st(dw.p, dw.type, gpu::cnn_woff(dw, k, kh, kw, c),
                static_cast<double>(gpu::conv_dw_at<A>(g, gy, x, k, kh, kw, c)));
  }
}

// The weight gradient in parts (gpu::conv_dw_parts): thread t sums part
// t / weights of weight t % weights into partial[t]; the combine adds each
// weight's parts in order.
template <class A>
__global__ void conv_dw_partial_kernel(gpu::ConvGeom g, CnnImage gy, CnnImage x, CnnWeights dw, int parts, A* partial) {
  const int64_t weights = static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c;
  for (int64_t t = first_thread(); t < weights * parts; t += stride_threads()) {
    const int p = static_cast<int>(t / weights);
    int k, kh, kw, c;
    gpu::cnn_weight_index(dw, t - p * weights, &k, &kh, &kw, &c);
    partial[t] = gpu::conv_dw_at<A>(g, gy, x, k, kh, kw, c, gpu::conv_dw_part_begin(g.N, parts, p),
                                    gpu::conv_dw_part_begin(g.N, parts, p + 1));
  }
}

template <class A>
__global__ void conv_dw_combine_kernel(CnnWeights dw, int parts, const A* partial) {
  const int64_t weights = static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c;
  for (int64_t t = first_thread(); t < weights; t += stride_threads()) {
    A s = partial[t];
    for (int p = 1; p < parts; p++) s += partial[p * weights + t];
    int k, kh, kw, c;
    gpu::cnn_weight_index(dw, t, &k, &kh, &kw, &c);
    gpu::cnn_st(dw.p, dw.type, gpu::cnn_woff(dw, k, kh, kw, c), static_cast<double>(s));
  }
}

// dbias[k] = the sum of g over n, h, w: one block per filter.
template <class A>
__global__ void conv_dbias_kernel(CnnImage gy, void* dbias, int64_t dbias_stride) {
  __shared__ A part[kThreads];
  const int64_t per = static_cast<int64_t>(gy.n) * gy.h * gy.w;
  for (int64_t k = blockIdx.x; k < gy.c; k += gridDim.x) {
    A s = 0;
    for (int64_t i = threadIdx.x; i < per; i += blockDim.x) {
      const int w = static_cast<int>(i % gy.w), h = static_cast<int>((i / gy.w) % gy.h),
                n = static_cast<int>(i / (static_cast<int64_t>(gy.w) * gy.h));
      s += gpu::cnn_ld<A>(gy.p, gy.type, gpu::cnn_off(gy, n, h, w, static_cast<int>(k)));
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) gpu::cnn_st(dbias, gy.type, k * dbias_stride, static_cast<double>(part[0]));
    __syncthreads();  // part[0] read before the next filter overwrites it
  }
}

// --- batch norm ---------------------------------------------------------------

// The block's sums of v[0..m) into every thread's v (part: m * kThreads doubles).
__device__ __forceinline__ void block_sums(double* part, double* v, int m) {
  for (int j = 0; j < m; j++) part[j * kThreads + threadIdx.x] = v[j];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      for (int j = 0; j < m; j++) part[j * kThreads + threadIdx.x] += part[j * kThreads + threadIdx.x + half];
    __syncthreads();
  }
  for (int j = 0; j < m; j++) v[j] = part[j * kThreads];
  __syncthreads();  // every thread has read the sums before part is reused
}

__global__ void bn_forward_kernel(gpu::BnArgs a) {
  __shared__ double part[4 * kThreads];
  const int64_t R = a.per_channel;
  for (int64_t k = blockIdx.x; k < a.channels; k += gridDim.x) {
    double mean, inv;
    if (a.is_test) {
      mean = gpu::bn_small_ld(a, gpu::kBnMean, k, 0.0);
      inv = 1.0 / sqrt(gpu::bn_small_ld(a, gpu::kBnVar, k, 1.0) + a.epsilon);
    } else {
      double v[1] = {0};
      for (int64_t r = threadIdx.x; r < R; r += blockDim.x)
        v[0] += gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r));
      block_sums(part, v, 1);
      mean = v[0] / static_cast<double>(R);
      v[0] = 0;
      for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
        const double d = gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r)) - mean;
        v[0] += d * d;
      }
      block_sums(part, v, 1);
      const double var = v[0] / static_cast<double>(R);
      inv = 1.0 / sqrt(var + a.epsilon);
      if (threadIdx.x == 0) gpu::bn_channel_outputs(a, k, mean, var);
    }
    const double scale = gpu::bn_small_ld(a, gpu::kBnScale, k, 1.0), bias = gpu::bn_small_ld(a, gpu::kBnBias, k, 0.0);
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
      const double x = gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r));
      gpu::cnn_st(a.big[gpu::kBnY].p, a.type, gpu::bn_big_off(a, gpu::kBnY, k, r),
                  gpu::bn_y(x, mean, inv, scale, bias));
    }
  }
}

__global__ void bn_backward_kernel(gpu::BnArgs a) {
  __shared__ double part[4 * kThreads];
  const int64_t R = a.per_channel;
  for (int64_t k = blockIdx.x; k < a.channels; k += gridDim.x) {
    double mean, inv;
    gpu::bn_backward_stats(a, k, &mean, &inv);
    const double scale = gpu::bn_small_ld(a, gpu::kBnScale, k, 1.0);
    double v[4] = {0, 0, 0, 0};  // sums of h, h xhat, g xhat, g
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
      const double g = gpu::cnn_ld<double>(a.big[gpu::kBnG].p, a.type, gpu::bn_big_off(a, gpu::kBnG, k, r));
      const double xhat =
          (gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r)) - mean) * inv;
      const double h = g * scale;
      v[0] += h, v[1] += h * xhat, v[2] += g * xhat, v[3] += g;
    }
    block_sums(part, v, 4);
    if (threadIdx.x == 0) gpu::bn_backward_channel(a, k, inv, v[0], v[1], v[2], v[3]);
    if (!a.big[gpu::kBnDx].p) continue;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
      const double g = gpu::cnn_ld<double>(a.big[gpu::kBnG].p, a.type, gpu::bn_big_off(a, gpu::kBnG, k, r));
      const double xhat =
          (gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r)) - mean) * inv;
      gpu::cnn_st(a.big[gpu::kBnDx].p, a.type, gpu::bn_big_off(a, gpu::kBnDx, k, r),
                  gpu::bn_dx(a, g * scale, xhat, inv, v[0], v[1]));
    }
  }
}

// --- batch norm, sliced (long channels) ------------------------------------

constexpr int kBnSumX = 0, kBnSumDev = 1, kBnSumGrad = 2, kBnRunning = 3;

// Block (k, s): the sums of slice s of channel k into partial[(k S + s) 4 + j]:
// x (kBnSumX), (x - mean)^2 with chan's mean (kBnSumDev), or h, h xhat,
// g xhat, g (kBnSumGrad, with the backward's statistics).
__global__ void bn_partial_kernel(gpu::BnArgs a, int64_t S, int mode, const double* chan, double* partial) {
  __shared__ double part[4 * kThreads];
  const int m = mode == kBnSumGrad ? 4 : 1;
  for (int64_t item = blockIdx.x; item < a.channels * S; item += gridDim.x) {
    const int64_t k = item / S, s = item - k * S;
    const int64_t r0 = gpu::bn_slice_begin(a.per_channel, S, s), r1 = gpu::bn_slice_begin(a.per_channel, S, s + 1);
    double mean = 0, inv = 1, scale = 1;
    if (mode == kBnSumDev) mean = chan[k * 4];
    if (mode == kBnSumGrad) {
      gpu::bn_backward_stats(a, k, &mean, &inv);
      scale = gpu::bn_small_ld(a, gpu::kBnScale, k, 1.0);
    }
    double v[4] = {0, 0, 0, 0};
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
      const double x = gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r));
      if (mode == kBnSumX) {
        v[0] += x;
      } else if (mode == kBnSumDev) {
        v[0] += (x - mean) * (x - mean);
      } else {
        const double g = gpu::cnn_ld<double>(a.big[gpu::kBnG].p, a.type, gpu::bn_big_off(a, gpu::kBnG, k, r));
        const double xhat = (x - mean) * inv, h = g * scale;
        v[0] += h, v[1] += h * xhat, v[2] += g * xhat, v[3] += g;
      }
    }
    block_sums(part, v, m);
    if (threadIdx.x == 0)
      for (int j = 0; j < m; j++) partial[item * 4 + j] = v[j];
  }
}

// One thread per channel: the partial sums combined in slice order into
// chan[k 4 + 0..3] = mean, inv_std, sum h, sum h xhat, and the channel's
// outputs written (running / saved statistics; dscale, dbias, dmean, dvar).
__global__ void bn_combine_kernel(gpu::BnArgs a, int64_t S, int mode, double* chan, const double* partial) {
  for (int64_t k = first_thread(); k < a.channels; k += stride_threads()) {
    double v[4] = {0, 0, 0, 0};
    if (mode != kBnRunning)
      for (int64_t s = 0; s < S; s++)
        for (int j = 0; j < 4; j++) v[j] += partial[(k * S + s) * 4 + j];
    const double R = static_cast<double>(a.per_channel);
    if (mode == kBnSumX) {
      chan[k * 4] = v[0] / R;
    } else if (mode == kBnSumDev) {
      chan[k * 4 + 1] = gpu::bn_channel_outputs(a, k, chan[k * 4], v[0] / R);
    } else if (mode == kBnRunning) {
      chan[k * 4] = gpu::bn_small_ld(a, gpu::kBnMean, k, 0.0);
      chan[k * 4 + 1] = 1.0 / sqrt(gpu::bn_small_ld(a, gpu::kBnVar, k, 1.0) + a.epsilon);
    } else {
      double mean, inv;
      gpu::bn_backward_stats(a, k, &mean, &inv);
      gpu::bn_backward_channel(a, k, inv, v[0], v[1], v[2], v[3]);
      chan[k * 4] = mean, chan[k * 4 + 1] = inv, chan[k * 4 + 2] = v[0], chan[k * 4 + 3] = v[1];
    }
  }
}

// One thread per element of x, in x's memory order: y (forward) or dx.
__global__ void bn_apply_kernel(gpu::BnArgs a, bool forward, const double* chan) {
  const int64_t total = a.channels * a.per_channel;
  for (int64_t t = first_thread(); t < total; t += stride_threads()) {
    int64_t k, r;
    gpu::bn_split_index(a, t, &k, &r);
    const double mean = chan[k * 4], inv = chan[k * 4 + 1];
    const double scale = gpu::bn_small_ld(a, gpu::kBnScale, k, 1.0);
    const double x = gpu::cnn_ld<double>(a.big[gpu::kBnX].p, a.type, gpu::bn_big_off(a, gpu::kBnX, k, r));
    if (forward) {
      gpu::cnn_st(a.big[gpu::kBnY].p, a.type, gpu::bn_big_off(a, gpu::kBnY, k, r),
                  gpu::bn_y(x, mean, inv, scale, gpu::bn_small_ld(a, gpu::kBnBias, k, 0.0)));
    } else {
      const double g = gpu::cnn_ld<double>(a.big[gpu::kBnG].p, a.type, gpu::bn_big_off(a, gpu::kBnG, k, r));
      gpu::cnn_st(a.big[gpu::kBnDx].p, a.type, gpu::bn_big_off(a, gpu::kBnDx, k, r),
                  gpu::bn_dx(a, g * scale, (x - mean) * inv, inv, chan[k * 4 + 2], chan[k * 4 + 3]));
    }
  }
}

}  // namespace

cudaError_t launch_pool_forward(cudaStream_t s, const gpu::PoolGeom& g, const CnnImage& x, const CnnImage& y) {
  const int64_t total = gpu::cnn_count(y);
  if (total > 0) pool_forward_kernel<<<grid_for(total), kThreads, 0, s>>>(g, x, y, gpu::cnn_channels_fast(y));
  return cudaGetLastError();
}

cudaError_t launch_pool_backward(cudaStream_t s, const gpu::PoolGeom& g, const CnnImage& x, const CnnImage& gy,
                                 const CnnImage& dx, int32_t* am) {
  if (g.max && !am) return cudaErrorInvalidValue;
  const int64_t pooled = gpu::cnn_count(gy), total = gpu::cnn_count(dx);
  if (g.max && pooled > 0)
    pool_argmax_kernel<<<grid_for(pooled), kThreads, 0, s>>>(g, x, gy, am, gpu::cnn_channels_fast(gy));
  if (total > 0)
    pool_backward_kernel<<<grid_for(total), kThreads, 0, s>>>(g, x, gy, dx, am, gpu::cnn_channels_fast(dx));
  return cudaGetLastError();
}

cudaError_t launch_conv_forward(cudaStream_t s, const gpu::ConvGeom& g, const CnnImage& x, const CnnWeights& w,
                                const void* bias, int64_t bias_stride, const CnnImage& y) {
  const int64_t total = gpu::cnn_count(y);
  if (total == 0) return cudaSuccess;
  const bool cfast = gpu::cnn_channels_fast(y);
  if (y.type == gpu::kCnnF64)
    conv_forward_kernel<double><<<grid_for(total), kThreads, 0, s>>>(g, x, w, bias, bias_stride, y, cfast);
  else
    conv_forward_kernel<float><<<grid_for(total), kThreads, 0, s>>>(g, x, w, bias, bias_stride, y, cfast);
  return cudaGetLastError();
}

cudaError_t launch_conv_backward(cudaStream_t s, const gpu::ConvGeom& g, const CnnImage& gy, const CnnImage& x,
                                 const CnnWeights& w, const CnnImage& dx, const CnnWeights& dw, int dw_parts,
                                 void* dw_scratch) {
  const bool f64 = gy.type == gpu::kCnnF64;
  if (dx.p) {
    const int64_t total = gpu::cnn_count(dx);
    const bool cfast = gpu::cnn_channels_fast(dx);
    if (total > 0) {
      if (f64)
        conv_dx_kernel<double><<<grid_for(total), kThreads, 0, s>>>(g, gy, w, dx, cfast);
      else
        conv_dx_kernel<float><<<grid_for(total), kThreads, 0, s>>>(g, gy, w, dx, cfast);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (dw.p) {
    const int64_t total = static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c;
    if (total > 0 && dw_parts > 1) {
      if (!dw_scratch) return cudaErrorInvalidValue;
      if (f64) {
        conv_dw_partial_kernel<double>
            <<<grid_for(total * dw_parts), kThreads, 0, s>>>(g, gy, x, dw, dw_parts, static_cast<double*>(dw_scratch));
        conv_dw_combine_kernel<double>
            <<<grid_for(total), kThreads, 0, s>>>(dw, dw_parts, static_cast<const double*>(dw_scratch));
      } else {
        conv_dw_partial_kernel<float>
            <<<grid_for(total * dw_parts), kThreads, 0, s>>>(g, gy, x, dw, dw_parts, static_cast<float*>(dw_scratch));
        conv_dw_combine_kernel<float>
            <<<grid_for(total), kThreads, 0, s>>>(dw, dw_parts, static_cast<const float*>(dw_scratch));
      }
    } else if (total > 0) {
      if (f64)
        conv_dw_kernel<double><<<grid_for(total), kThreads, 0, s>>>(g, gy, x, dw);
      else
        conv_dw_kernel<float><<<grid_for(total), kThreads, 0, s>>>(g, gy, x, dw);
    }
  }
  return cudaGetLastError();
}

cudaError_t launch_conv_dbias(cudaStream_t s, const CnnImage& gy, void* dbias, int64_t dbias_stride) {
  if (gy.c == 0) return cudaSuccess;
  if (gy.type == gpu::kCnnF64)
    conv_dbias_kernel<double><<<blocks_for(gy.c), kThreads, 0, s>>>(gy, dbias, dbias_stride);
  else
    conv_dbias_kernel<float><<<blocks_for(gy.c), kThreads, 0, s>>>(gy, dbias, dbias_stride);
  return cudaGetLastError();
}

cudaError_t launch_bn_forward(cudaStream_t s, const gpu::BnArgs& a) {
  if (a.channels > 0 && a.per_channel > 0) bn_forward_kernel<<<blocks_for(a.channels), kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_bn_backward(cudaStream_t s, const gpu::BnArgs& a) {
  if (a.channels > 0 && a.per_channel > 0) bn_backward_kernel<<<blocks_for(a.channels), kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_bn_forward_sliced(cudaStream_t s, const gpu::BnArgs& a, int64_t S, double* chan, double* partial) {
  const int64_t total = a.channels * a.per_channel;
  if (total == 0) return cudaSuccess;
  const dim3 per_channel = grid_for(a.channels);
  if (a.is_test) {
    bn_combine_kernel<<<per_channel, kThreads, 0, s>>>(a, S, kBnRunning, chan, partial);
  } else {
    bn_partial_kernel<<<blocks_for(a.channels * S), kThreads, 0, s>>>(a, S, kBnSumX, chan, partial);
    bn_combine_kernel<<<per_channel, kThreads, 0, s>>>(a, S, kBnSumX, chan, partial);
    bn_partial_kernel<<<blocks_for(a.channels * S), kThreads, 0, s>>>(a, S, kBnSumDev, chan, partial);
    bn_combine_kernel<<<per_channel, kThreads, 0, s>>>(a, S, kBnSumDev, chan, partial);
  }
  bn_apply_kernel<<<grid_for(total), kThreads, 0, s>>>(a, true, chan);
  return cudaGetLastError();
}

cudaError_t launch_bn_backward_sliced(cudaStream_t s, const gpu::BnArgs& a, int64_t S, double* chan, double* partial) {
  const int64_t total = a.channels * a.per_channel;
  if (total == 0) return cudaSuccess;
  bn_partial_kernel<<<blocks_for(a.channels * S), kThreads, 0, s>>>(a, S, kBnSumGrad, chan, partial);
  bn_combine_kernel<<<grid_for(a.channels), kThreads, 0, s>>>(a, S, kBnSumGrad, chan, partial);
  if (a.big[gpu::kBnDx].p) bn_apply_kernel<<<grid_for(total), kThreads, 0, s>>>(a, false, chan);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
