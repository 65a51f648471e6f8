// GPU_REF element-wise kernels over strided, broadcast operands: every
// element's offsets come from the plan (cmd/common/gpu_plan.hpp, tested on
// the CPU); grid-stride loops with 64-bit indices. Computation in float for
// 32F / 16F / 16BF storage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/typed_access.cuh"
#include "cuda/kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;
using gpu::kPlanOperands;


__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + expf(-x)); }

__device__ __forceinline__ float apply(int op, const float* x, int n, float a, float b) {
  switch (op) {
    case kEwScale:
      return a * x[0];
    case kEwAxpby:
      return a * x[0] + b * x[1];
    case kEwSum: {
      float s = x[0];
      for (int k = 1; k < n; k++) s += x[k];
      return s;
    }
    case kEwProd: {
      float s = x[0];
      for (int k = 1; k < n; k++) s *= x[k];
      return a * s;
    }
    case kEwDiv:
      return x[0] / x[1];
    case kEwExp:
      return expf(x[0]);
    case kEwLog:
      return logf(x[0]);
    case kEwSqrt:
      return sqrtf(x[0]);
    case kEwRelu:
      return x[0] > 0.f || x[0] != x[0] ? x[0] : 0.f;
    case kEwSigmoid:
      return sigmoidf(x[0]);
    case kEwTanh:
      return tanhf(x[0]);
    case kEwReluGrad:
      return x[1] > 0.f ? x[0] : 0.f;
    case kEwSigmoidGradY:
      return x[0] * x[1] * (1.f - x[1]);
    case kEwTanhGradY:
      return x[0] * (1.f - x[1]) * (1.f + x[1]);
    case kEwSigmoidGradX: {
      const float y = sigmoidf(x[1]);
      return x[0] * y * (1.f - y);
    }
    case kEwTanhGradX: {
      const float y = tanhf(x[1]);
      return x[0] * (1.f - y) * (1.f + y);
    }
    case kEwDivGrad:
      return x[0] / x[1];
    case kEwSqrtGrad:
      return x[0] / (2.f * x[1]);
    case kEwDivGradB:
      return -x[0] * x[1] / x[2];
    default:
      return 0.f;
  }
}

template <class T>
__global__ void ew_kernel(EwPlan p, EwPtrs q, int op, int n, float a, float b) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[kPlanOperands];
    gpu::plan_offsets(p, n + 1, i, off);
    float x[kPlanOperands - 1];
    // Every input is read before the output is written: an input may be the output.
    for (int k = 0; k < n; k++) x[k] = q.p[1 + k] ? ld<T>(q.p[1 + k], off[1 + k]) : 1.f;
    st<T>(q.p[0], off[0], apply(op, x, n, a, b));
  }
}

// The same with the input count known at compile time (1..3: every command
// but EWSUM / EWPROD of many inputs), so offsets and values stay in
// registers; packed operands (one merged dimension, unit strides) skip the
// plan's arithmetic.
template <class T, int N>
__global__ void ew_fixed_kernel(EwPlan p, EwPtrs q, int op, float a, float b, int packed) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[N + 1];
    if (packed) {
#pragma unroll
      for (int k = 0; k <= N; k++) off[k] = i;
    } else {
      gpu::plan_offsets(p, N + 1, i, off);
    }
    float x[N];
#pragma unroll
    for (int k = 0; k < N; k++) x[k] = q.p[1 + k] ? ld<T>(q.p[1 + k], off[1 + k]) : 1.f;
    st<T>(q.p[0], off[0], apply(op, x, N, a, b));
  }
}

template <class T>
cudaError_t ew_as(cudaStream_t s, const EwPlan& plan, const EwPtrs& ptrs, int op, int n, float a, float b) {
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  int packed = plan.nd == 1;
  for (int k = 0; k <= n && packed; k++) packed = plan.stride[k][0] == 1;
  switch (n) {
    case 1:
      ew_fixed_kernel<T, 1><<<grid, l.threads, 0, s>>>(plan, ptrs, op, a, b, packed);
      break;
    case 2:
      ew_fixed_kernel<T, 2><<<grid, l.threads, 0, s>>>(plan, ptrs, op, a, b, packed);
      break;
    case 3:
      ew_fixed_kernel<T, 3><<<grid, l.threads, 0, s>>>(plan, ptrs, op, a, b, packed);
      break;
    default:
      ew_kernel<T><<<grid, l.threads, 0, s>>>(plan, ptrs, op, n, a, b);
      break;
  }
  return cudaGetLastError();
}

template <class U>
__global__ void copy_kernel(EwPlan p, U* y, const U* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[2];
    gpu::plan_offsets(p, 2, i, off);
    y[off[0]] = x[off[1]];
  }
}

template <class U>
__global__ void fill_kernel(EwPlan p, U* y, U v) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step)
    y[gpu::plan_offset(p, 0, i)] = v;
}

// Conversions through double (exact for every source type), narrowed once.
__device__ __forceinline__ double to_d(float v) { return v; }
__device__ __forceinline__ double to_d(double v) { return v; }
__device__ __forceinline__ double to_d(__half v) { return __half2float(v); }
__device__ __forceinline__ double to_d(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class B>
__device__ __forceinline__ B from_d(double v);
template <>
__device__ __forceinline__ float from_d<float>(double v) {
  return __double2float_rn(v);
}
template <>
__device__ __forceinline__ double from_d<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_d<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_d<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

template <class A, class B>
__global__ void convert_kernel(EwPlan p, B* y, const A* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[2];
    gpu::plan_offsets(p, 2, i, off);
    y[off[0]] = from_d<B>(to_d(x[off[1]]));
  }
}

template <class A, class B>
cudaError_t convert_as(cudaStream_t s, const EwPlan& plan, void* y, const void* x) {
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  convert_kernel<A, B>
      <<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(plan, static_cast<B*>(y), static_cast<const A*>(x));
  return cudaGetLastError();
}

template <class A>
cudaError_t convert_from(cudaStream_t s, const EwPlan& plan, void* y, GpuType to, const void* x) {
  switch (to) {
    case kF32:
      return convert_as<A, float>(s, plan, y, x);
    case kF64:
      return convert_as<A, double>(s, plan, y, x);
    case kF16:
      return convert_as<A, __half>(s, plan, y, x);
    case kBF16:
      return convert_as<A, __nv_bfloat16>(s, plan, y, x);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_ew(cudaStream_t s, GpuType type, const EwPlan& plan, const EwPtrs& ptrs, int op, int n_inputs,
                      float a, float b) {
  if (plan.count == 0) return cudaSuccess;
  if (n_inputs < 1 || n_inputs + 1 > kPlanOperands) return cudaErrorInvalidValue;
  switch (type) {
    case kF32:
      return ew_as<float>(s, plan, ptrs, op, n_inputs, a, b);
    case kF16:
      return ew_as<__half>(s, plan, ptrs, op, n_inputs, a, b);
    case kBF16:
      return ew_as<__nv_bfloat16>(s, plan, ptrs, op, n_inputs, a, b);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_copy(cudaStream_t s, const EwPlan& plan, void* y, const void* x, int element_size) {
  if (plan.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (element_size) {
    case 1:
      copy_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint8_t*>(y), static_cast<const uint8_t*>(x));
      break;
    case 2:
      copy_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint16_t*>(y), static_cast<const uint16_t*>(x));
      break;
    case 4:
      copy_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint32_t*>(y), static_cast<const uint32_t*>(x));
      break;
    case 8:
      copy_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint64_t*>(y), static_cast<const uint64_t*>(x));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_fill(cudaStream_t s, const EwPlan& plan, void* y, uint64_t pattern, int element_size) {
  if (plan.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  switch (element_size) {
    case 1:
      fill_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint8_t*>(y), static_cast<uint8_t>(pattern));
      break;
    case 2:
      fill_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint16_t*>(y), static_cast<uint16_t>(pattern));
      break;
    case 4:
      fill_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint32_t*>(y), static_cast<uint32_t>(pattern));
      break;
    case 8:
      fill_kernel<<<grid, l.threads, 0, s>>>(plan, static_cast<uint64_t*>(y), pattern);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_convert(cudaStream_t s, const EwPlan& plan, void* y, GpuType to, const void* x, GpuType from) {
  if (plan.count == 0) return cudaSuccess;
  switch (from) {
    case kF32:
      return convert_from<float>(s, plan, y, to, x);
    case kF64:
      return convert_from<double>(s, plan, y, to, x);
    case kF16:
      return convert_from<__half>(s, plan, y, to, x);
    case kBF16:
      return convert_from<__nv_bfloat16>(s, plan, y, to, x);
  }
  return cudaErrorInvalidValue;
}

}  // namespace nnc::cuda
