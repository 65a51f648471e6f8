// GPU_REF kernels of more_gpu.cpp: activations (LEAKY_RELU, GELU in both
// forms, SWISH) and element-wise math (CLAMP, MIN, MAX), forward and
// backward, over strided operands planned on the host (gpu_plan.hpp).
// Grid-stride loops with 64-bit indices; computed in float for 32F / 16F /
// 16BF storage. Every input of an element is read before any output of it is
// written, so an output may be an input (in place).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "cuda/more_kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;
using gpu::kPlanOperands;

template <class T>
__global__ void act_kernel(EwPlan p, EwPtrs q, int op, int n_out, int n_in, ActArgs a) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[5];
    gpu::plan_offsets(p, n_out + n_in, i, off);
    float x[3] = {1.f, 1.f, 1.f}, y[2] = {0.f, 0.f};
    for (int k = 0; k < n_in; k++)
      if (q.p[n_out + k]) x[k] = ld<T>(q.p[n_out + k], off[n_out + k]);
    gpu::act_apply(op, x, y, a);
    for (int k = 0; k < n_out; k++)
      if (q.p[k]) st<T>(q.p[k], off[k], y[k]);
  }
}

}  // namespace

cudaError_t launch_act(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& ptrs, int op, int n_out,
                       int n_in, const ActArgs& args) {
  if (n_out < 1 || n_out > 2 || n_in < 1 || n_in > 3 || plan.operands != n_out + n_in) return cudaErrorInvalidValue;
  if (plan.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        act_kernel<Elem><<<grid, l.threads, 0, s>>>(plan, ptrs, op, n_out, n_in, args);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

namespace {

template <class U>
__global__ void pad_kernel(gpu::PadMap m, U* y, const U* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m.count; i += step) {
    int64_t yo;
    const int64_t xo = gpu::pad_map(m, i, &yo);
    y[yo] = xo < 0 ? U(0) : x[xo];
  }
}

// The scattering backwards add g (of T) into acc: dx itself (32F, A float)
// or a double scratch of dx's shape (16F / 16BF; more_gpu.cpp says why).
template <class T, class A>
__global__ void pad_backward_kernel(gpu::PadMap m, const void* g, A* acc) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m.count; i += step) {
    int64_t go;
    const int64_t xo = gpu::pad_map(m, i, &go);
    if (xo >= 0) atomicAdd(acc + xo, static_cast<A>(ld<T>(g, go)));
  }
}

template <class T>
__global__ void upsample_kernel(gpu::UpMap m, void* y, const void* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m.count; i += step) {
    int64_t yo, so[4];
    double w[4];
    gpu::up_map(m, i, &yo, so, w);
    float v;
    if (m.nearest) {
      v = ld<T>(x, so[0]);
    } else {
      double acc = 0;
#pragma unroll
      for (int k = 0; k < 4; k++) acc += w[k] * static_cast<double>(ld<T>(x, so[k]));
      v = static_cast<float>(acc);
    }
    st<T>(y, yo, v);
  }
}

template <class T, class A>
__global__ void upsample_backward_kernel(gpu::UpMap m, const void* g, A* acc) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m.count; i += step) {
    int64_t go, so[4];
    double w[4];
    gpu::up_map(m, i, &go, so, w);
    const double v = ld<T>(g, go);
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (w[k] != 0) atomicAdd(acc + so[k], static_cast<A>(w[k] * v));
  }
}

}  // namespace

cudaError_t launch_pad(cudaStream_t s, const gpu::PadMap& m, void* y, const void* x, int element_size) {
  if (m.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(m.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (element_size) {
    case 1:
      pad_kernel<uint8_t><<<grid, l.threads, 0, s>>>(m, static_cast<uint8_t*>(y), static_cast<const uint8_t*>(x));
      break;
    case 2:
      pad_kernel<uint16_t><<<grid, l.threads, 0, s>>>(m, static_cast<uint16_t*>(y), static_cast<const uint16_t*>(x));
      break;
    case 4:
      pad_kernel<uint32_t><<<grid, l.threads, 0, s>>>(m, static_cast<uint32_t*>(y), static_cast<const uint32_t*>(x));
      break;
    case 8:
      pad_kernel<uint64_t><<<grid, l.threads, 0, s>>>(m, static_cast<uint64_t*>(y), static_cast<const uint64_t*>(x));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_pad_backward(cudaStream_t s, GpuType type, const gpu::PadMap& m, const void* g, void* acc) {
  if (m.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(m.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (type) {
    case kF32:
      pad_backward_kernel<float, float><<<grid, l.threads, 0, s>>>(m, g, static_cast<float*>(acc));
      break;
    case kF16:
      pad_backward_kernel<__half, double><<<grid, l.threads, 0, s>>>(m, g, static_cast<double*>(acc));
      break;
    case kBF16:
      pad_backward_kernel<__nv_bfloat16, double><<<grid, l.threads, 0, s>>>(m, g, static_cast<double*>(acc));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_upsample(cudaStream_t s, GpuType type, const gpu::UpMap& m, void* y, const void* x) {
  if (m.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(m.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        upsample_kernel<Elem><<<grid, l.threads, 0, s>>>(m, y, x);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_upsample_backward(cudaStream_t s, GpuType type, const gpu::UpMap& m, const void* g, void* acc) {
  if (m.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(m.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (type) {
    case kF32:
      upsample_backward_kernel<float, float><<<grid, l.threads, 0, s>>>(m, g, static_cast<float*>(acc));
      break;
    case kF16:
      upsample_backward_kernel<__half, double><<<grid, l.threads, 0, s>>>(m, g, static_cast<double*>(acc));
      break;
    case kBF16:
      upsample_backward_kernel<__nv_bfloat16, double><<<grid, l.threads, 0, s>>>(m, g, static_cast<double*>(acc));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {

__device__ __forceinline__ float red2_combine(int op, float a, float v) {
  if (op == kRed2Min) return ((v != v) || v < a) && a == a ? v : a;  // NaN wins, as CPU_REF
  return a + v;
}
__device__ __forceinline__ float red2_element(int op, float v) { return op == kRed2Norm2 ? v * v : v; }
__device__ __forceinline__ float red2_final(int op, float a) { return op == kRed2Norm2 ? sqrtf(a) : a; }

template <class T>
__global__ void reduce2_thread_kernel(gpu::EwPlan outer, gpu::EwPlan inner, void* y, const void* x, int op) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer.count; o += step) {
    int64_t base[2];
    gpu::plan_offsets(outer, 2, o, base);
    float acc = op == kRed2Min ? INFINITY : 0.f;
    for (int64_t r = 0; r < inner.count; r++)
      acc = red2_combine(op, acc, red2_element(op, ld<T>(x, base[1] + gpu::plan_offset(inner, 0, r))));
    st<T>(y, base[0], red2_final(op, acc));
  }
}

template <class T>
__global__ void reduce2_block_kernel(gpu::EwPlan outer, gpu::EwPlan inner, void* y, const void* x, int op) {
  __shared__ float part[256];
  for (int64_t o = blockIdx.x; o < outer.count; o += gridDim.x) {
    int64_t base[2];
    gpu::plan_offsets(outer, 2, o, base);
    float acc = op == kRed2Min ? INFINITY : 0.f;
    for (int64_t r = threadIdx.x; r < inner.count; r += blockDim.x)
      acc = red2_combine(op, acc, red2_element(op, ld<T>(x, base[1] + gpu::plan_offset(inner, 0, r))));
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] = red2_combine(op, part[threadIdx.x], part[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) st<T>(y, base[0], red2_final(op, part[0]));
    __syncthreads();  // part is reused by the next output
  }
}

template <class T>
__global__ void arg_kernel(gpu::EwPlan p, int32_t* y, const void* x, int64_t len, int64_t stride, int is_max) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < p.count; o += step) {
    int64_t off[2];
    gpu::plan_offsets(p, 2, o, off);
    float best = ld<T>(x, off[1]);
    int64_t at = 0;
    for (int64_t i = 1; i < len && best == best; i++) {
      const float v = ld<T>(x, off[1] + i * stride);
      if (v != v || (is_max ? v > best : v < best)) best = v, at = i;
    }
    y[off[0]] = static_cast<int32_t>(at);
  }
}

}  // namespace

cudaError_t launch_reduce2(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch,
                           void* y, const void* x, int op) {
  if (plan.outer.count == 0 || launch.blocks == 0) return cudaSuccess;
  if (plan.inner.operands != 1 || launch.threads > 256 || (launch.threads & (launch.threads - 1)))
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(launch.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        if (launch.block_per_output)
          reduce2_block_kernel<Elem><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x, op);
        else
          reduce2_thread_kernel<Elem><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x, op);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_arg(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, int32_t* y, const void* x, int64_t len,
                       int64_t stride, int is_max) {
  if (plan.count == 0) return cudaSuccess;
  if (len < 1 || plan.operands != 2) return cudaErrorInvalidValue;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        arg_kernel<Elem><<<grid, l.threads, 0, s>>>(plan, y, x, len, stride, is_max);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

namespace {

constexpr int kLossThreads = 256;

// Element j of row tensor k's row (off: the rows' offsets), in elements of T.
__device__ __forceinline__ int64_t row_at(const RowArgs& a, int k, const int64_t* off, int j) {
  return off[k] + static_cast<int64_t>(j) * a.col_stride[k];
}

// Rows, the loss and g all of type T (CPU_REF's rule), loaded as float; the
// loss is rounded once from the double sum (st_d), the gradients once from
// float.
template <class T>
__global__ void loss_rows_kernel(RowArgs a, int op, gpu::LossArgs p) {
  __shared__ double part[kLossThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[gpu::kPlanOperands];
    gpu::plan_offsets(a.rows, a.rows.operands, r, off);
    double acc = 0;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const float av = ld<T>(a.row_ptr[0], row_at(a, 0, off, j)), bv = ld<T>(a.row_ptr[1], row_at(a, 1, off, j));
      acc += static_cast<double>(gpu::loss_term(op, av, bv, p));
      if (a.row_ptr[2]) st<T>(a.row_ptr[2], row_at(a, 2, off, j), gpu::loss_detail::sigmoid(av));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0 && a.item_ptr[0]) {
      const double v = op == gpu::kLossMse ? part[0] / p.k : part[0];
      st_d<T>(a.item_ptr[0], gpu::plan_offset(a.item[0], 0, r), v);
    }
    __syncthreads();  // part is reused by the next row
  }
}

template <class T>
__global__ void loss_rows_backward_kernel(RowArgs a, int op, gpu::LossArgs p) {
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[gpu::kPlanOperands];
    gpu::plan_offsets(a.rows, a.rows.operands, r, off);
    const float g = a.item_ptr[0] ? ld<T>(a.item_ptr[0], gpu::plan_offset(a.item[0], 0, r)) : 1.f;
    const bool has_z = a.row_ptr[0] != nullptr;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
      // Every input of the element is read before its gradients are written (in place).
      const float av = has_z ? ld<T>(a.row_ptr[0], row_at(a, 0, off, j)) : 0.f;
      const float bv = ld<T>(a.row_ptr[1], row_at(a, 1, off, j));
      const float gs = a.row_ptr[4] ? ld<T>(a.row_ptr[4], row_at(a, 4, off, j)) : 0.f;
      const float sv = a.row_ptr[5] ? ld<T>(a.row_ptr[5], row_at(a, 5, off, j)) : 0.f;
      float da, db;
      gpu::loss_grad(op, g, av, bv, gs, sv, has_z, p, &da, &db);
      if (a.row_ptr[2]) st<T>(a.row_ptr[2], row_at(a, 2, off, j), da);
      if (a.row_ptr[3]) st<T>(a.row_ptr[3], row_at(a, 3, off, j), db);
    }
  }
}

unsigned loss_grid(const RowArgs& a) {
  return static_cast<unsigned>(a.rows.count < gpu::kMaxBlocks ? a.rows.count : gpu::kMaxBlocks);
}
int loss_threads(const RowArgs& a) {
  int t = 32;
  while (t < kLossThreads && t < a.cols) t *= 2;
  return t;
}

}  // namespace

cudaError_t launch_loss_rows(cudaStream_t s, const RowArgs& a, int op, const gpu::LossArgs& p) {
  if (a.rows.count == 0) return cudaSuccess;
  if (!a.row_ptr[0] || !a.row_ptr[1] || a.rows.operands < 3) return cudaErrorInvalidValue;
  if (!with_float_type(a.row_type, [&](auto tag) {
        using Elem = decltype(tag);
        loss_rows_kernel<Elem><<<loss_grid(a), loss_threads(a), 0, s>>>(a, op, p);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_loss_rows_backward(cudaStream_t s, const RowArgs& a, int op, const gpu::LossArgs& p) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  if ((!a.row_ptr[0] && !a.row_ptr[5]) || !a.row_ptr[1] || a.rows.operands < 6) return cudaErrorInvalidValue;
  if (!with_float_type(a.row_type, [&](auto tag) {
        using Elem = decltype(tag);
        loss_rows_backward_kernel<Elem><<<loss_grid(a), loss_threads(a), 0, s>>>(a, op, p);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

namespace {

constexpr int kNormThreads = 256;

__device__ double block_sum_d(double v, double* shm) {
  shm[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) shm[threadIdx.x] += shm[threadIdx.x + w];
    __syncthreads();
  }
  const double r = shm[0];
  __syncthreads();
  return r;
}

// Operand k's element at the group's base plus off (in elements of T).
__device__ __forceinline__ int64_t at(int k, const int64_t* base, const int64_t* off) { return base[1 + k] + off[k]; }

// Every operand of type T (CPU_REF's rule: scale, bias and the statistics
// take x's type), loaded as float, statistics summed and y / dx blended in
// double (as before), each output rounded once from double on store (st_d).
template <class T>
__global__ void norm_forward_kernel(gpu::ReducePlan p, int64_t n, NormPtrs q, int rms, float eps) {
  __shared__ double shm[kNormThreads];
  for (int64_t o = blockIdx.x; o < p.outer.count; o += gridDim.x) {
    int64_t base[1 + gpu::kNormOperands];
    gpu::plan_offsets(p.outer, 1 + gpu::kNormOperands, o, base);
    const void* x = q.ptr[gpu::kNormX];
    const int64_t xb = base[1 + gpu::kNormX];
    double mean = 0;
    if (!rms) {
      double s = 0;
      for (int64_t r = threadIdx.x; r < n; r += blockDim.x)
        s += ld<T>(x, xb + gpu::plan_offset(p.inner, gpu::kNormX, r));
      mean = block_sum_d(s, shm) / static_cast<double>(n);
    }
    double v = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      const double d = ld<T>(x, xb + gpu::plan_offset(p.inner, gpu::kNormX, r)) - mean;
      v += d * d;
    }
    const double inv = 1.0 / sqrt(block_sum_d(v, shm) / static_cast<double>(n) + static_cast<double>(eps));
    if (threadIdx.x == 0) {
      if (q.ptr[gpu::kNormMean]) st_d<T>(q.ptr[gpu::kNormMean], base[1 + gpu::kNormMean], mean);
      if (q.ptr[gpu::kNormInv]) st_d<T>(q.ptr[gpu::kNormInv], base[1 + gpu::kNormInv], inv);
    }
    // Every x of the group has been read (block_sum_d synchronised): y may be x.
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      int64_t off[gpu::kNormOperands];
      gpu::plan_offsets(p.inner, gpu::kNormOperands, r, off);
      const double sc = q.ptr[gpu::kNormScale] ? ld<T>(q.ptr[gpu::kNormScale], at(gpu::kNormScale, base, off)) : 1.0;
      const double bi = q.ptr[gpu::kNormBias] ? ld<T>(q.ptr[gpu::kNormBias], at(gpu::kNormBias, base, off)) : 0.0;
      const double xv = ld<T>(x, at(gpu::kNormX, base, off));
      st_d<T>(q.ptr[gpu::kNormY], at(gpu::kNormY, base, off), gpu::norm_y(xv, mean, inv, sc, bi));
    }
  }
}

// The backward reads the saved statistics as stored (rounded to T), as
// CPU_REF does.
template <class T>
__global__ void norm_backward_dx_kernel(gpu::ReducePlan p, int64_t n, NormPtrs q, int rms) {
  __shared__ double shm[kNormThreads];
  for (int64_t o = blockIdx.x; o < p.outer.count; o += gridDim.x) {
    int64_t base[1 + gpu::kNormOperands];
    gpu::plan_offsets(p.outer, 1 + gpu::kNormOperands, o, base);
    const double mean = rms ? 0.0 : ld<T>(q.ptr[gpu::kNormMean], base[1 + gpu::kNormMean]);
    const double inv = ld<T>(q.ptr[gpu::kNormInv], base[1 + gpu::kNormInv]);
    double sh = 0, shx = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      int64_t off[gpu::kNormOperands];
      gpu::plan_offsets(p.inner, gpu::kNormOperands, r, off);
      const double sc = q.ptr[gpu::kNormScale] ? ld<T>(q.ptr[gpu::kNormScale], at(gpu::kNormScale, base, off)) : 1.0;
      const double h = static_cast<double>(ld<T>(q.ptr[gpu::kNormG], at(gpu::kNormG, base, off))) * sc;
      const double xhat = (ld<T>(q.ptr[gpu::kNormX], at(gpu::kNormX, base, off)) - mean) * inv;
      sh += h;
      shx += h * xhat;
    }
    const double mh = rms ? 0.0 : block_sum_d(sh, shm) / static_cast<double>(n);
    const double mhx = block_sum_d(shx, shm) / static_cast<double>(n);
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      int64_t off[gpu::kNormOperands];
      gpu::plan_offsets(p.inner, gpu::kNormOperands, r, off);
      const double sc = q.ptr[gpu::kNormScale] ? ld<T>(q.ptr[gpu::kNormScale], at(gpu::kNormScale, base, off)) : 1.0;
      const double h = static_cast<double>(ld<T>(q.ptr[gpu::kNormG], at(gpu::kNormG, base, off))) * sc;
      const double xhat = (ld<T>(q.ptr[gpu::kNormX], at(gpu::kNormX, base, off)) - mean) * inv;
      st_d<T>(q.ptr[gpu::kNormDx], at(gpu::kNormDx, base, off), gpu::norm_dx(inv, h, mh, xhat, mhx));
    }
  }
}

template <class T>
__global__ void norm_backward_params_kernel(gpu::ReducePlan p, NormPtrs q, int rms) {
  __shared__ double shm[kNormThreads];
  for (int64_t o = blockIdx.x; o < p.outer.count; o += gridDim.x) {
    int64_t base[1 + gpu::kNormOperands];
    gpu::plan_offsets(p.outer, 1 + gpu::kNormOperands, o, base);
    double sg = 0, sgx = 0;
    for (int64_t r = threadIdx.x; r < p.inner.count; r += blockDim.x) {
      int64_t off[gpu::kNormOperands];
      gpu::plan_offsets(p.inner, gpu::kNormOperands, r, off);
      const double g = ld<T>(q.ptr[gpu::kNormG], at(gpu::kNormG, base, off));
      const double mean = rms ? 0.0 : ld<T>(q.ptr[gpu::kNormMean], at(gpu::kNormMean, base, off));
      const double xhat = (ld<T>(q.ptr[gpu::kNormX], at(gpu::kNormX, base, off)) - mean) *
                          static_cast<double>(ld<T>(q.ptr[gpu::kNormInv], at(gpu::kNormInv, base, off)));
      sg += g;
      sgx += g * xhat;
    }
    const double dscale = block_sum_d(sgx, shm);
    const double dbias = block_sum_d(sg, shm);
    if (threadIdx.x == 0) {
      if (q.ptr[gpu::kNormScale]) st_d<T>(q.ptr[gpu::kNormScale], base[1 + gpu::kNormScale], dscale);
      if (q.ptr[gpu::kNormBias]) st_d<T>(q.ptr[gpu::kNormBias], base[1 + gpu::kNormBias], dbias);
    }
  }
}

int norm_threads(int64_t n) {
  int t = 32;
  while (t < kNormThreads && t < n) t *= 2;
  return t;
}
unsigned norm_grid(int64_t m) { return static_cast<unsigned>(m < gpu::kMaxBlocks ? m : gpu::kMaxBlocks); }

}  // namespace

cudaError_t launch_norm_forward(cudaStream_t s, const gpu::ReducePlan& groups, int64_t group_size, const NormPtrs& q,
                                int rms, float epsilon) {
  if (groups.outer.count == 0 || group_size == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormY] || groups.inner.count != group_size) return cudaErrorInvalidValue;
  if (!with_float_type(q.type, [&](auto tag) {
        using Elem = decltype(tag);
        norm_forward_kernel<Elem>
            <<<norm_grid(groups.outer.count), norm_threads(group_size), 0, s>>>(groups, group_size, q, rms, epsilon);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_norm_backward_dx(cudaStream_t s, const gpu::ReducePlan& groups, int64_t group_size,
                                    const NormPtrs& q, int rms) {
  if (groups.outer.count == 0 || group_size == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormG] || !q.ptr[gpu::kNormDx] || !q.ptr[gpu::kNormInv] ||
      (!rms && !q.ptr[gpu::kNormMean]) || groups.inner.count != group_size)
    return cudaErrorInvalidValue;
  if (!with_float_type(q.type, [&](auto tag) {
        using Elem = decltype(tag);
        norm_backward_dx_kernel<Elem>
            <<<norm_grid(groups.outer.count), norm_threads(group_size), 0, s>>>(groups, group_size, q, rms);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_norm_backward_params(cudaStream_t s, const gpu::ReducePlan& params, const NormPtrs& q, int rms) {
  if (params.outer.count == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormG] || !q.ptr[gpu::kNormInv] || (!rms && !q.ptr[gpu::kNormMean]))
    return cudaErrorInvalidValue;
  if (!with_float_type(q.type, [&](auto tag) {
        using Elem = decltype(tag);
        norm_backward_params_kernel<Elem>
            <<<norm_grid(params.outer.count), norm_threads(params.inner.count), 0, s>>>(params, q, rms);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

// --- The row kernels (gpu::NormRows): LAYER_NORM / RMSNORM over packed rows ---
//
// Precision: statistics in float. Each thread sums its <= 4 chunks (<= 32
// terms) in order, then a butterfly over the warp and, in the block path, the
// warps' sums in order: the computed sum of n terms is within about
// (32 + log2(1024)) u sum|t| of the exact one (u = 2^-24), so the mean is off
// by <= ~3e-6 max|x| and the variance (deviations from that float mean,
// squared) by a relative ~3e-6; 1 / sqrtf rounds once more. y = (x - mean)
// inv scale + bias in float, rounded once to T on store: for 32F within a few
// ulps of CPU_REF's double formula when |mean| is not many times the standard
// deviation (the mean's error scales with max|x|, y's with the deviation);
// for 16F / 16BF one rounding of the storage type plus that. The tests'
// tolerances (test/unit/cuda/norm_fast_test.cpp) follow from this.

namespace {

template <class T>
struct RowIo {
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));
  // Chunk [e0, e0 + kV) of a row of n elements at p (element offset base) as
  // float: one 16-byte load when `vector` and the chunk is whole; else element
  // loads, and 0 past the row's end.
  static __device__ __forceinline__ void load(float* v, const void* p, int64_t base, int64_t e0, int64_t n,
                                              bool vector) {
    if (vector && e0 + kV <= n) {
      const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const T*>(p) + base + e0);
      T t[kV];
      memcpy(t, &raw, sizeof(raw));
#pragma unroll
      for (int j = 0; j < kV; j++) v[j] = ld<T>(t, j);
      return;
    }
#pragma unroll
    for (int j = 0; j < kV; j++) v[j] = e0 + j < n ? ld<T>(p, base + e0 + j) : 0.f;
  }
  // The same chunk kept as stored (16 bytes: 4 registers whatever T is, where
  // 8 floats would take 8 for the halves), 0 past the row's end; unpack()
  // gives the floats.
  static __device__ __forceinline__ uint4 load_raw(const void* p, int64_t base, int64_t e0, int64_t n, bool vector) {
    if (vector && e0 + kV <= n) return *reinterpret_cast<const uint4*>(static_cast<const T*>(p) + base + e0);
    T t[kV];
#pragma unroll
    for (int j = 0; j < kV; j++) t[j] = e0 + j < n ? static_cast<const T*>(p)[base + e0 + j] : T(0.f);
    uint4 raw;
    memcpy(&raw, t, sizeof(raw));
    return raw;
  }
  static __device__ __forceinline__ void unpack(const uint4& raw, float* v) {
    T t[kV];
    memcpy(t, &raw, sizeof(raw));
#pragma unroll
    for (int j = 0; j < kV; j++) v[j] = ld<T>(t, j);
  }
  static __device__ __forceinline__ void store(void* p, int64_t base, int64_t e0, int64_t n, bool vector,
                                               const float* v) {
    if (vector && e0 + kV <= n) {
      T t[kV];
#pragma unroll
      for (int j = 0; j < kV; j++) st<T>(t, j, v[j]);
      uint4 raw;
      memcpy(&raw, t, sizeof(raw));
      *reinterpret_cast<uint4*>(static_cast<T*>(p) + base + e0) = raw;
      return;
    }
#pragma unroll
    for (int j = 0; j < kV; j++)
      if (e0 + j < n) st<T>(p, base + e0 + j, v[j]);
  }
};

__device__ __forceinline__ float warp_sum_f(float v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;  // the same bits in every lane (each step adds the same pair)
}

// The row's sum over its tpr threads (threadIdx.x), the same in every one of
// them: a warp butterfly, then (block path) the warps' sums in order through
// red[flip][0..tpr / 32). Every thread of the block calls it together in the
// block path. The two halves of red alternate (flip) so that one barrier a
// sum is enough: a warp that writes red[flip] again has passed the barrier of
// the sum in between, which every warp reaches only after its reads.
__device__ __forceinline__ float row_sum(float v, int tpr, float (*red)[32], int& flip) {
  v = warp_sum_f(v);
  if (tpr <= 32) return v;
  float* r = red[flip];
  flip ^= 1;
  if ((threadIdx.x & 31) == 0) r[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.f;
  for (int w = 0; w < tpr / 32; w++) s += r[w];
  return s;
}

// The row loop: warp path (tpr 32): row blockIdx.x rows_per_block +
// threadIdx.y, each warp on its own (no block barrier); block path: blockDim.y
// is 1 and the whole block walks the rows together.
template <class T, int K>
__global__ void __launch_bounds__(gpu::kNormRowMaxThreads)
    norm_rows_forward_kernel(gpu::EwPlan rows, int64_t n, NormPtrs q, int rms, float eps, int vector) {
  constexpr int V = RowIo<T>::kV;
  __shared__ float red[2][32];
  int flip = 0;
  const int tpr = blockDim.x, t = threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  const void* x = q.ptr[gpu::kNormX];
  const void* scale = q.ptr[gpu::kNormScale];
  const void* bias = q.ptr[gpu::kNormBias];
  const float inv_n = 1.f / static_cast<float>(n);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < rows.count; row += step) {
    int64_t base[1 + gpu::kNormOperands];
    gpu::plan_offsets(rows, 1 + gpu::kNormOperands, row, base);
    uint4 xr[K];  // the thread's part of the row, as stored
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < K; c++) {
      xr[c] = RowIo<T>::load_raw(x, base[1 + gpu::kNormX], (static_cast<int64_t>(c) * tpr + t) * V, n, vector);
      float v[V];
      RowIo<T>::unpack(xr[c], v);
#pragma unroll
      for (int j = 0; j < V; j++) s += v[j];
    }
    const float mean = rms ? 0.f : row_sum(s, tpr, red, flip) * inv_n;
    float d2 = 0.f;
#pragma unroll
    for (int c = 0; c < K; c++) {
      float v[V];
      RowIo<T>::unpack(xr[c], v);
#pragma unroll
      for (int j = 0; j < V; j++) {
        const int64_t e = (static_cast<int64_t>(c) * tpr + t) * V + j;
        const float d = e < n ? v[j] - mean : 0.f;
        d2 += d * d;
      }
    }
    const float inv = 1.f / sqrtf(row_sum(d2, tpr, red, flip) * inv_n + eps);
    if (t == 0) {
      if (q.ptr[gpu::kNormMean]) st<T>(q.ptr[gpu::kNormMean], base[1 + gpu::kNormMean], mean);
      if (q.ptr[gpu::kNormInv]) st<T>(q.ptr[gpu::kNormInv], base[1 + gpu::kNormInv], inv);
    }
#pragma unroll
    for (int c = 0; c < K; c++) {
      const int64_t e0 = (static_cast<int64_t>(c) * tpr + t) * V;
      if (e0 >= n) continue;
      float v[V], sc[V], bi[V];
      RowIo<T>::unpack(xr[c], v);
#pragma unroll
      for (int j = 0; j < V; j++) sc[j] = 1.f, bi[j] = 0.f;
      if (scale) RowIo<T>::load(sc, scale, base[1 + gpu::kNormScale], e0, n, vector);
      if (bias) RowIo<T>::load(bi, bias, base[1 + gpu::kNormBias], e0, n, vector);
#pragma unroll
      for (int j = 0; j < V; j++) v[j] = (v[j] - mean) * inv * sc[j] + bi[j];
      RowIo<T>::store(q.ptr[gpu::kNormY], base[1 + gpu::kNormY], e0, n, vector, v);
    }
  }
}

// dx = inv (h - mean(h) - xhat mean(h xhat)), h = g scale, xhat = (x - mean)
// inv from the saved statistics as stored (CPU_REF's rule); the two means in
// float as the forward's sums.
template <class T, int K>
__global__ void __launch_bounds__(gpu::kNormRowMaxThreads)
    norm_rows_backward_dx_kernel(gpu::EwPlan rows, int64_t n, NormPtrs q, int rms, int vector) {
  constexpr int V = RowIo<T>::kV;
  __shared__ float red[2][32];
  int flip = 0;
  const int tpr = blockDim.x, t = threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  const void* scale = q.ptr[gpu::kNormScale];
  const float inv_n = 1.f / static_cast<float>(n);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < rows.count; row += step) {
    int64_t base[1 + gpu::kNormOperands];
    gpu::plan_offsets(rows, 1 + gpu::kNormOperands, row, base);
    const float mean = rms ? 0.f : ld<T>(q.ptr[gpu::kNormMean], base[1 + gpu::kNormMean]);
    const float inv = ld<T>(q.ptr[gpu::kNormInv], base[1 + gpu::kNormInv]);
    uint4 gr[K], xr[K];  // g and x as stored (scale is read again in the second pass: cached)
    float sh = 0.f, shx = 0.f;
#pragma unroll
    for (int c = 0; c < K; c++) {
      const int64_t e0 = (static_cast<int64_t>(c) * tpr + t) * V;
      gr[c] = RowIo<T>::load_raw(q.ptr[gpu::kNormG], base[1 + gpu::kNormG], e0, n, vector);
      xr[c] = RowIo<T>::load_raw(q.ptr[gpu::kNormX], base[1 + gpu::kNormX], e0, n, vector);
      if (e0 >= n) continue;  // past the row: g and x are 0 there, h too
      float h[V], xh[V], sc[V];
#pragma unroll
      for (int j = 0; j < V; j++) sc[j] = 1.f;
      if (scale) RowIo<T>::load(sc, scale, base[1 + gpu::kNormScale], e0, n, vector);
      RowIo<T>::unpack(gr[c], h);
      RowIo<T>::unpack(xr[c], xh);
#pragma unroll
      for (int j = 0; j < V; j++) {
        // Past the row's end g loads as 0 (h 0); xhat forced to 0.
        h[j] *= sc[j];
        xh[j] = e0 + j < n ? (xh[j] - mean) * inv : 0.f;
        sh += h[j];
        shx += h[j] * xh[j];
      }
    }
    const float mh = rms ? 0.f : row_sum(sh, tpr, red, flip) * inv_n;
    const float mhx = row_sum(shx, tpr, red, flip) * inv_n;
#pragma unroll
    for (int c = 0; c < K; c++) {
      const int64_t e0 = (static_cast<int64_t>(c) * tpr + t) * V;
      if (e0 >= n) continue;
      float h[V], xh[V], sc[V];
#pragma unroll
      for (int j = 0; j < V; j++) sc[j] = 1.f;
      if (scale) RowIo<T>::load(sc, scale, base[1 + gpu::kNormScale], e0, n, vector);
      RowIo<T>::unpack(gr[c], h);
      RowIo<T>::unpack(xr[c], xh);
#pragma unroll
      for (int j = 0; j < V; j++) h[j] = inv * (h[j] * sc[j] - mh - (xh[j] - mean) * inv * mhx);
      RowIo<T>::store(q.ptr[gpu::kNormDx], base[1 + gpu::kNormDx], e0, n, vector, h);
    }
  }
}

// dscale / dbias partials: block (strip, slice) sums columns [32 strip, + 32)
// over rows [slice rows_per_split, + rows_per_split); thread (x, y) its
// column over every kNormColRowThreads-th row of the slice, in float; the
// block's y threads combined in y order. part[(2 slice + 0) cols + col]:
// sum g xhat, [(2 slice + 1) cols + col]: sum g.
template <class T>
__global__ void norm_cols_partial_kernel(gpu::EwPlan rows, int64_t cols, gpu::NormCols c, NormPtrs q, int rms,
                                         float* part) {
  __shared__ float acc[2][gpu::kNormColRowThreads][gpu::kNormColWidth + 1];
  // Grid-stride over (strip, slice): the grid is (strips, splits) unless capped.
  for (int64_t slice = blockIdx.y; slice < c.splits; slice += gridDim.y)
    for (int64_t strip = blockIdx.x; strip < c.strips; strip += gridDim.x) {
      const int64_t col = strip * gpu::kNormColWidth + threadIdx.x;
      const int64_t r0 = slice * c.rows_per_split;
      const int64_t r1 = r0 + c.rows_per_split < rows.count ? r0 + c.rows_per_split : rows.count;
      float sgx = 0.f, sg = 0.f;
      if (col < cols)
#pragma unroll 4  // independent rows: several loads of g and x in flight a thread
        for (int64_t row = r0 + threadIdx.y; row < r1; row += gpu::kNormColRowThreads) {
          int64_t base[1 + gpu::kNormOperands];
          gpu::plan_offsets(rows, 1 + gpu::kNormOperands, row, base);
          const float g = ld<T>(q.ptr[gpu::kNormG], base[1 + gpu::kNormG] + col);
          const float mean = rms ? 0.f : ld<T>(q.ptr[gpu::kNormMean], base[1 + gpu::kNormMean]);
          const float inv = ld<T>(q.ptr[gpu::kNormInv], base[1 + gpu::kNormInv]);
          sgx += g * ((ld<T>(q.ptr[gpu::kNormX], base[1 + gpu::kNormX] + col) - mean) * inv);
          sg += g;
        }
      acc[0][threadIdx.y][threadIdx.x] = sgx;
      acc[1][threadIdx.y][threadIdx.x] = sg;
      __syncthreads();
      if (threadIdx.y < 2 && col < cols) {
        float s = 0.f;
        for (int y = 0; y < gpu::kNormColRowThreads; y++) s += acc[threadIdx.y][y][threadIdx.x];
        part[(2 * slice + threadIdx.y) * cols + col] = s;
      }
      __syncthreads();  // acc is written again by the next (strip, slice)
    }
}

// dscale[col] / dbias[col]: the slices' partials added in slice order,
// rounded once to T.
template <class T>
__global__ void norm_cols_combine_kernel(int64_t cols, int64_t splits, NormPtrs q, const float* part) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < cols; col += step) {
    float sgx = 0.f, sg = 0.f;
    for (int64_t k = 0; k < splits; k++) {
      sgx += part[(2 * k) * cols + col];
      sg += part[(2 * k + 1) * cols + col];
    }
    if (q.ptr[gpu::kNormScale]) st<T>(q.ptr[gpu::kNormScale], col, sgx);
    if (q.ptr[gpu::kNormBias]) st<T>(q.ptr[gpu::kNormBias], col, sg);
  }
}

// Calls f(Elem{}, std::integral_constant<int, K>{}) for the row's chunk count.
template <class F>
bool with_rows_kernel(int type, int chunks, F&& f) {
  return with_float_type(type, [&](auto tag) {
    switch (chunks) {
      case 1:
        f(tag, std::integral_constant<int, 1>{});
        break;
      case 2:
        f(tag, std::integral_constant<int, 2>{});
        break;
      default:
        f(tag, std::integral_constant<int, 4>{});
        break;
    }
  });
}

bool rows_ok(const gpu::NormRows& r, const gpu::EwPlan& rows, int type) {
  const int es = type == kF32 ? 4 : 2;
  return r.fast && rows.count == r.rows && r.vec_width == 16 / es &&
         (r.chunks == 1 || r.chunks == 2 || r.chunks == 4) &&
         (r.threads_per_row == 32 ? r.rows_per_block >= 1 : r.rows_per_block == 1) && r.threads_per_row >= 32 &&
         r.threads_per_row <= gpu::kNormRowMaxThreads && r.threads_per_row % 32 == 0 &&
         static_cast<int64_t>(r.threads_per_row) * r.chunks * r.vec_width >= r.cols;
}

}  // namespace

cudaError_t launch_norm_rows_forward(cudaStream_t s, const gpu::NormRows& r, const gpu::EwPlan& rows, const NormPtrs& q,
                                     int rms, float epsilon) {
  if (r.rows == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormY] || !rows_ok(r, rows, q.type)) return cudaErrorInvalidValue;
  const dim3 block(static_cast<unsigned>(r.threads_per_row), static_cast<unsigned>(r.rows_per_block));
  if (!with_rows_kernel(q.type, r.chunks, [&](auto tag, auto k) {
        using Elem = decltype(tag);
        norm_rows_forward_kernel<Elem, decltype(k)::value>
            <<<static_cast<unsigned>(r.blocks), block, 0, s>>>(rows, r.cols, q, rms, epsilon, r.vector ? 1 : 0);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_norm_rows_backward_dx(cudaStream_t s, const gpu::NormRows& r, const gpu::EwPlan& rows,
                                         const NormPtrs& q, int rms) {
  if (r.rows == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormG] || !q.ptr[gpu::kNormDx] || !q.ptr[gpu::kNormInv] ||
      (!rms && !q.ptr[gpu::kNormMean]) || !rows_ok(r, rows, q.type))
    return cudaErrorInvalidValue;
  const dim3 block(static_cast<unsigned>(r.threads_per_row), static_cast<unsigned>(r.rows_per_block));
  if (!with_rows_kernel(q.type, r.chunks, [&](auto tag, auto k) {
        using Elem = decltype(tag);
        norm_rows_backward_dx_kernel<Elem, decltype(k)::value>
            <<<static_cast<unsigned>(r.blocks), block, 0, s>>>(rows, r.cols, q, rms, r.vector ? 1 : 0);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_norm_cols_params(cudaStream_t s, const gpu::NormCols& c, const gpu::EwPlan& rows, int64_t cols,
                                    const NormPtrs& q, int rms, float* partial) {
  if (rows.count == 0 || cols == 0) return cudaSuccess;
  if (!q.ptr[gpu::kNormX] || !q.ptr[gpu::kNormG] || !q.ptr[gpu::kNormInv] || (!rms && !q.ptr[gpu::kNormMean]) ||
      !partial || c.splits < 1 || c.splits > gpu::kMaxBlocks || c.rows_per_split * c.splits < rows.count ||
      c.strips * gpu::kNormColWidth < cols)
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(c.strips < gpu::kMaxBlocks ? c.strips : gpu::kMaxBlocks),
                  static_cast<unsigned>(c.splits));
  const dim3 block(gpu::kNormColWidth, gpu::kNormColRowThreads);
  const int64_t cb = (cols + 255) / 256;
  if (!with_float_type(q.type, [&](auto tag) {
        using Elem = decltype(tag);
        norm_cols_partial_kernel<Elem><<<grid, block, 0, s>>>(rows, cols, c, q, rms, partial);
        norm_cols_combine_kernel<Elem>
            <<<static_cast<unsigned>(cb < gpu::kMaxBlocks ? cb : gpu::kMaxBlocks), 256, 0, s>>>(cols, c.splits, q,
                                                                                                partial);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

namespace {

// Every operand of type T. Pass 1 stores n and u rounded to T and forms r
// from the stored (rounded) values, as pass 2 reads them back (and as
// CPU_REF does), so both passes see one r.
template <class T>
__global__ void lamb_moments_kernel(gpu::EwPlan p, EwPtrs q, gpu::LambCoef c, double* sums) {
  __shared__ double sa[256], sr[256];
  double a2 = 0, r2 = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[7];
    gpu::plan_offsets(p, 7, i, off);
    const float g = ld<T>(q.p[0], off[0]), a = ld<T>(q.p[1], off[1]);
    const float m = ld<T>(q.p[2], off[2]), v = ld<T>(q.p[3], off[3]);
    float n, u;
    gpu::lamb_moments_f(c, g, m, v, &n, &u);
    st<T>(q.p[5], off[5], n);
    st<T>(q.p[6], off[6], u);
    const float r = gpu::lamb_direction_f(c, a, ld<T>(q.p[5], off[5]), ld<T>(q.p[6], off[6]));
    a2 += static_cast<double>(a) * a;
    r2 += static_cast<double>(r) * r;
  }
  sa[threadIdx.x] = a2;
  sr[threadIdx.x] = r2;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      sa[threadIdx.x] += sa[threadIdx.x + w];
      sr[threadIdx.x] += sr[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(sums, sa[0]);
    atomicAdd(sums + 1, sr[0]);
  }
}

template <class T>
__global__ void lamb_update_kernel(gpu::EwPlan p, EwPtrs q, gpu::LambCoef c, const double* sums) {
  const float k = static_cast<float>(gpu::lamb_step_size(c, sums[0], sums[1]));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[7];
    gpu::plan_offsets(p, 7, i, off);
    const float a = ld<T>(q.p[1], off[1]);
    const float n = ld<T>(q.p[5], off[5]), u = ld<T>(q.p[6], off[6]);
    st<T>(q.p[4], off[4], a - k * gpu::lamb_direction_f(c, a, n, u));
  }
}

template <class T>
cudaError_t lamb_passes(cudaStream_t s, const gpu::EwLaunch& l, const gpu::EwPlan& plan, const EwPtrs& q,
                        const gpu::LambCoef& c, double* sums) {
  lamb_moments_kernel<T><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(plan, q, c, sums);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  lamb_update_kernel<T><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(plan, q, c, sums);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_lamb(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& q, const gpu::LambCoef& c,
                        double* sums) {
  if (plan.count == 0) return cudaSuccess;
  if (plan.operands != 7 || !sums) return cudaErrorInvalidValue;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  if (l.threads != 256) return cudaErrorInvalidValue;  // the shared arrays hold 256
  switch (type) {
    case kF32:
      return lamb_passes<float>(s, l, plan, q, c, sums);
    case kF16:
      return lamb_passes<__half>(s, l, plan, q, c, sums);
    case kBF16:
      return lamb_passes<__nv_bfloat16>(s, l, plan, q, c, sums);
    default:
      return cudaErrorInvalidValue;
  }
}

namespace {

struct Im3 {
  int64_t v[3];
};

// Products and sums in double, each output rounded once (st_d), as CPU_REF.
template <class T>
__global__ void cmul_kernel(gpu::EwPlan p, void* c, const void* a, const void* b, Im3 im) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, 3, i, off);
    const double ar = ld<T>(a, off[1]), ai = ld<T>(a, off[1] + im.v[1]), br = ld<T>(b, off[2]),
                 bi = ld<T>(b, off[2] + im.v[2]);
    st_d<T>(c, off[0], ar * br - ai * bi);  // both parts read first: c may be a
    st_d<T>(c, off[0] + im.v[0], ar * bi + ai * br);
  }
}

template <class T>
__global__ void cmul_backward_kernel(gpu::EwPlan outer, gpu::EwPlan inner, void* d, const void* g, const void* o,
                                     Im3 im) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < outer.count; q += step) {
    int64_t base[3];
    gpu::plan_offsets(outer, 3, q, base);
    double re = 0, imv = 0;
    for (int64_t r = 0; r < inner.count; r++) {
      int64_t off[2];
      gpu::plan_offsets(inner, 2, r, off);
      const double gr = g ? ld<T>(g, base[1] + off[0]) : 1.0, gi = g ? ld<T>(g, base[1] + off[0] + im.v[1]) : 1.0;
      const double orr = ld<T>(o, base[2] + off[1]), oi = ld<T>(o, base[2] + off[1] + im.v[2]);
      re += gr * orr + gi * oi;
      imv += gi * orr - gr * oi;
    }
    st_d<T>(d, base[0], re);
    st_d<T>(d, base[0] + im.v[0], imv);
  }
}

}  // namespace

cudaError_t launch_cmul(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, void* c, const void* a, const void* b,
                        const int64_t* im) {
  if (plan.count == 0) return cudaSuccess;
  if (plan.operands != 3) return cudaErrorInvalidValue;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        cmul_kernel<Elem>
            <<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(plan, c, a, b, Im3{{im[0], im[1], im[2]}});
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_cmul_backward(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, void* d, const void* g,
                                 const void* o, const int64_t* im) {
  if (plan.outer.count == 0) return cudaSuccess;
  if (plan.outer.operands != 3 || plan.inner.operands != 2) return cudaErrorInvalidValue;
  const gpu::EwLaunch l = gpu::choose_ew(plan.outer.count);
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        cmul_backward_kernel<Elem><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(plan.outer, plan.inner, d, g,
                                                                                         o, Im3{{im[0], im[1], im[2]}});
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

namespace {

// y_type codes (the caller maps CCV_* types): 0 32F, 1 64F, 2 16F, 3 16BF, 4 32S, 5 64S, 6 8U.
__device__ __forceinline__ void store_flag(void* y, int64_t off, int code, int v) {
  switch (code) {
    case 0:
      static_cast<float*>(y)[off] = static_cast<float>(v);
      break;
    case 1:
      static_cast<double*>(y)[off] = v;
      break;
    case 2:
      static_cast<__half*>(y)[off] = __int2half_rn(v);
      break;
    case 3:
      static_cast<__nv_bfloat16*>(y)[off] = __int2bfloat16_rn(v);
      break;
    case 4:
      static_cast<int32_t*>(y)[off] = v;
      break;
    case 5:
      static_cast<int64_t*>(y)[off] = v;
      break;
    default:
      static_cast<uint8_t*>(y)[off] = static_cast<uint8_t>(v);
      break;
  }
}

template <class T>
__global__ void isnan_kernel(gpu::EwPlan outer, gpu::EwPlan inner, void* y, int code, const void* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer.count; o += step) {
    int64_t base[2];
    gpu::plan_offsets(outer, 2, o, base);
    int any = 0;
    for (int64_t r = 0; r < inner.count && !any; r++) {
      const float v = ld<T>(x, base[1] + gpu::plan_offset(inner, 0, r));
      any = v != v;
    }
    store_flag(y, base[0], code, any);
  }
}

}  // namespace

cudaError_t launch_isnan(cudaStream_t s, const gpu::ReducePlan& plan, void* y, int y_code, const void* x,
                         GpuType x_type) {
  if (plan.outer.count == 0) return cudaSuccess;
  if (plan.outer.operands != 2 || plan.inner.operands != 1 || y_code < 0 || y_code > 6) return cudaErrorInvalidValue;
  const gpu::EwLaunch l = gpu::choose_ew(plan.outer.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (!with_float_type(x_type, [&](auto tag) {
        using Elem = decltype(tag);
        isnan_kernel<Elem><<<grid, l.threads, 0, s>>>(plan.outer, plan.inner, y, y_code, x);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace nnc::cuda
