// GPU_REF INDEX_SELECT (a gather of axis-0 rows and its scatter-add
// backward) and MASKED_FILL (a select against a broadcast mask).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

__device__ __forceinline__ int64_t index_at(const void* indices, int wide, int64_t off) {
  return wide ? static_cast<const long long*>(indices)[off] : static_cast<const int*>(indices)[off];
}

template <class U>
__global__ void gather_kernel(EwPlan inner, EwPlan idx, const void* indices, int wide, int64_t rows_x, int64_t n, U* y,
                              int64_t ys0, const U* x, int64_t xs0, int* bad) {
  const int64_t total = n * inner.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t i = t / inner.count, e = t - i * inner.count;
    const int64_t r = index_at(indices, wide, gpu::plan_offset(idx, 0, i));
    int64_t o[2];
    gpu::plan_offsets(inner, 2, e, o);
    if (r < 0 || r >= rows_x) {
      if (bad) atomicCAS(bad, 0, static_cast<int>(i < 0x7ffffffe ? i + 1 : 0x7fffffff));
      y[i * ys0 + o[0]] = U(0);
      continue;
    }
    y[i * ys0 + o[0]] = x[r * xs0 + o[1]];
  }
}

// g's element as the accumulator's type (16F / 16BF widen exactly).
template <class A>
__device__ __forceinline__ A widen(float v) {
  return static_cast<A>(v);
}
template <class A>
__device__ __forceinline__ A widen(double v) {
  return static_cast<A>(v);
}
template <class A>
__device__ __forceinline__ A widen(__half v) {
  return static_cast<A>(__half2float(v));
}
template <class A>
__device__ __forceinline__ A widen(__nv_bfloat16 v) {
  return static_cast<A>(__bfloat162float(v));
}

// acc[idx[i], ...] += g[i, ...] (acc zeroed before): acc is dx (32F, 64F) or
// a double scratch of dx's shape (16F, 16BF; index_gpu.cpp says why).
template <class T, class A>
__global__ void scatter_add_kernel(EwPlan inner, EwPlan idx, const void* indices, int wide, int64_t rows_dx, int64_t n,
                                   A* acc, int64_t as0, const T* g, int64_t gs0, int* bad) {
  const int64_t total = n * inner.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t i = t / inner.count, e = t - i * inner.count;
    const int64_t r = index_at(indices, wide, gpu::plan_offset(idx, 0, i));
    if (r < 0 || r >= rows_dx) {
      if (bad) atomicCAS(bad, 0, static_cast<int>(i < 0x7ffffffe ? i + 1 : 0x7fffffff));
      continue;
    }
    int64_t o[2];
    gpu::plan_offsets(inner, 2, e, o);
    atomicAdd(acc + r * as0 + o[0], widen<A>(g[i * gs0 + o[1]]));
  }
}

template <class T, class A>
cudaError_t scatter_as(cudaStream_t s, const EwPlan& inner, const EwPlan& idx, const void* indices, int wide,
                       int64_t rows_dx, int64_t n, void* acc, int64_t as0, const void* g, int64_t gs0, int* bad) {
  const gpu::EwLaunch l = gpu::choose_ew(n * inner.count);
  scatter_add_kernel<T, A><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(
      inner, idx, indices, wide, rows_dx, n, static_cast<A*>(acc), as0, static_cast<const T*>(g), gs0, bad);
  return cudaGetLastError();
}

template <class M>
__device__ __forceinline__ double mask_value(const M* m, int64_t off) {
  return static_cast<double>(m[off]);
}
template <>
__device__ __forceinline__ double mask_value<__half>(const __half* m, int64_t off) {
  return __half2float(m[off]);
}

// y = mask == eq ? fill : x  (operands 0 y, 1 x, 2 mask).
template <class T, class M>
__global__ void masked_fill_kernel(EwPlan p, T* y, const T* x, const M* m, double eq, T fill) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, 3, i, off);
    y[off[0]] = mask_value(m, off[2]) == eq ? fill : x[off[1]];
  }
}

template <class T, class M>
cudaError_t masked_as(cudaStream_t s, const EwPlan& p, void* y, const void* x, const void* m, double eq, T fill) {
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  masked_fill_kernel<T, M><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(
      p, static_cast<T*>(y), static_cast<const T*>(x), static_cast<const M*>(m), eq, fill);
  return cudaGetLastError();
}

template <class T>
cudaError_t masked_with(cudaStream_t s, const EwPlan& p, void* y, const void* x, const void* m, int mask_type,
                        double eq, T fill) {
  switch (mask_type) {
    case kMaskF32:
      return masked_as<T, float>(s, p, y, x, m, eq, fill);
    case kMaskF16:
      return masked_as<T, __half>(s, p, y, x, m, eq, fill);
    case kMaskI32:
      return masked_as<T, int>(s, p, y, x, m, eq, fill);
    case kMaskU8:
      return masked_as<T, unsigned char>(s, p, y, x, m, eq, fill);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_gather(cudaStream_t s, const EwPlan& inner, const EwPlan& idx, const void* indices, int wide,
                          int64_t rows_x, int64_t n, void* y, int64_t ys0, const void* x, int64_t xs0, int element_size,
                          int* bad) {
  const int64_t total = n * inner.count;
  if (total == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(total);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (element_size) {
    case 1:
      gather_kernel<<<grid, l.threads, 0, s>>>(inner, idx, indices, wide, rows_x, n, static_cast<uint8_t*>(y), ys0,
                                               static_cast<const uint8_t*>(x), xs0, bad);
      break;
    case 2:
      gather_kernel<<<grid, l.threads, 0, s>>>(inner, idx, indices, wide, rows_x, n, static_cast<uint16_t*>(y), ys0,
                                               static_cast<const uint16_t*>(x), xs0, bad);
      break;
    case 4:
      gather_kernel<<<grid, l.threads, 0, s>>>(inner, idx, indices, wide, rows_x, n, static_cast<uint32_t*>(y), ys0,
                                               static_cast<const uint32_t*>(x), xs0, bad);
      break;
    case 8:
      gather_kernel<<<grid, l.threads, 0, s>>>(inner, idx, indices, wide, rows_x, n, static_cast<uint64_t*>(y), ys0,
                                               static_cast<const uint64_t*>(x), xs0, bad);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_scatter_add(cudaStream_t s, GpuType type, const EwPlan& inner, const EwPlan& idx,
                               const void* indices, int wide, int64_t rows_dx, int64_t n, void* acc, int64_t as0,
                               const void* g, int64_t gs0, int* bad) {
  if (n * inner.count == 0) return cudaSuccess;
  switch (type) {
    case kF32:
      return scatter_as<float, float>(s, inner, idx, indices, wide, rows_dx, n, acc, as0, g, gs0, bad);
    case kF64:
      return scatter_as<double, double>(s, inner, idx, indices, wide, rows_dx, n, acc, as0, g, gs0, bad);
    case kF16:
      return scatter_as<__half, double>(s, inner, idx, indices, wide, rows_dx, n, acc, as0, g, gs0, bad);
    case kBF16:
      return scatter_as<__nv_bfloat16, double>(s, inner, idx, indices, wide, rows_dx, n, acc, as0, g, gs0, bad);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_masked_fill(cudaStream_t s, GpuType type, const EwPlan& p, void* y, const void* x, const void* mask,
                               int mask_type, double eq, float fill) {
  if (p.count == 0) return cudaSuccess;
  switch (type) {
    case kF32:
      return masked_with<float>(s, p, y, x, mask, mask_type, eq, fill);
    case kF16:
      return masked_with<__half>(s, p, y, x, mask, mask_type, eq, __float2half_rn(fill));
    case kBF16:
      return masked_with<__nv_bfloat16>(s, p, y, x, mask, mask_type, eq, __float2bfloat16_rn(fill));
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace nnc::cuda
