// GPU_REF element-wise kernels over strided, broadcast operands: every
// element's offsets come from the plan (cmd/common/gpu_plan.hpp, tested on
// the CPU); grid-stride loops with 64-bit indices. Computation in float for
// 32F / 16F / 16BF storage. Packed (and scalar / bias-like broadcast)
// operands aligned alike take the vector kernels: 16 bytes per operand per
// thread, the decision host code (cmd/common/gpu_vec.hpp, tested on the CPU);
// they compute exactly what the scalar kernels compute.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>

#include "cmd/common/gpu_vec.hpp"
#include "cuda/typed_access.cuh"
#include "cuda/kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;
using gpu::EwVec;
using gpu::kPlanOperands;

// W elements of U in one aligned access (16 bytes or less).
template <class U, int W>
struct alignas(sizeof(U) * W) VecOf {
  U e[W];
};

template <class U, int W>
__device__ __forceinline__ VecOf<U, W> ld_vec(const void* p, int64_t off) {
  return *reinterpret_cast<const VecOf<U, W>*>(static_cast<const U*>(p) + off);
}
template <class U, int W>
__device__ __forceinline__ void st_vec(void* p, int64_t off, const VecOf<U, W>& v) {
  *reinterpret_cast<VecOf<U, W>*>(static_cast<U*>(p) + off) = v;
}

// The addresses and element sizes of a launch's operands, for choose_ew_vec.
gpu::EwVec vec_of(const EwPlan& p, const void* const* ptrs, const int* sizes) {
  if (!gpu::ew_vec_allowed_from_env()) return {};
  uint64_t addr[kPlanOperands] = {};
  for (int k = 0; k < p.operands && k < kPlanOperands; k++) addr[k] = reinterpret_cast<uintptr_t>(ptrs[k]);
  return gpu::choose_ew_vec(p, addr, sizes);
}


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

// Input k's W values at vector element i (operand 1 + k of v): a vector, or
// one value for all W (a broadcast scalar or column; a NULL input reads 1).
template <class T, int W>
__device__ __forceinline__ void ld_operand(const EwVec& v, const EwPtrs& q, int k, int64_t i, float* x) {
  const void* p = q.p[k];
  const int m = v.mode[k];
  if (m == gpu::kVecPacked || m == gpu::kVecRow) {
    const VecOf<T, W> in = ld_vec<T, W>(p, v.offset(k, i));
#pragma unroll
    for (int e = 0; e < W; e++) x[e] = ld<T>(in.e, e);
    return;
  }
  const float s = p ? ld<T>(p, v.offset(k, i)) : 1.f;
#pragma unroll
  for (int e = 0; e < W; e++) x[e] = s;
}

// apply() over the W elements of a vector, the op's branch taken once per
// vector rather than once per element (the first GPU run: 16F EWSUM at 2.7
// TB/s against 4.0 in 32F, the same bytes per thread but twice the elements
// through apply's switch). The ops taken here have no product to fuse with a
// sum (sums, products, scale, relu and its gradient), so each element rounds
// as apply() rounds it; the others go through apply() element by element.
template <int N, int W>
__device__ __forceinline__ void apply_vec(int op, const float (&x)[N][W], float (&y)[W], float a, float b) {
  switch (op) {
    case kEwSum:
#pragma unroll
      for (int e = 0; e < W; e++) {
        float s = x[0][e];
#pragma unroll
        for (int k = 1; k < N; k++) s += x[k][e];
        y[e] = s;
      }
      return;
    case kEwProd:
#pragma unroll
      for (int e = 0; e < W; e++) {
        float s = x[0][e];
#pragma unroll
        for (int k = 1; k < N; k++) s *= x[k][e];
        y[e] = a * s;
      }
      return;
    case kEwScale:
#pragma unroll
      for (int e = 0; e < W; e++) y[e] = a * x[0][e];
      return;
    case kEwRelu:
#pragma unroll
      for (int e = 0; e < W; e++) y[e] = x[0][e] > 0.f || x[0][e] != x[0][e] ? x[0][e] : 0.f;
      return;
    case kEwReluGrad:
      if constexpr (N >= 2) {
#pragma unroll
        for (int e = 0; e < W; e++) y[e] = x[1][e] > 0.f ? x[0][e] : 0.f;
        return;
      }
      break;
    default:
      break;
  }
#pragma unroll
  for (int e = 0; e < W; e++) {
    float xe[N];
#pragma unroll
    for (int k = 0; k < N; k++) xe[k] = x[k][e];
    y[e] = apply(op, xe, N, a, b);
  }
}

// ew_fixed_kernel's work on a vector launch (cmd/common/gpu_vec.hpp): the
// head and tail elements one at a time, then W = 16 / sizeof(T) elements per
// thread per step, each operand one 16-byte access (or one value). Every
// vector is read whole before it is written: an input may be the output.
template <class T, int N>
__global__ void ew_vec_kernel(EwVec v, EwPtrs q, int op, float a, float b) {
  constexpr int W = gpu::kVecBytes / sizeof(T);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t ns = v.scalars();
  for (int64_t t = t0; t < ns; t += step) {
    const int64_t i = v.scalar_index(t);
    float x[N];
#pragma unroll
    for (int k = 0; k < N; k++) x[k] = q.p[1 + k] ? ld<T>(q.p[1 + k], v.offset(1 + k, i)) : 1.f;
    st<T>(q.p[0], i, apply(op, x, N, a, b));
  }
  for (int64_t j = t0; j < v.vectors; j += step) {
    const int64_t i = v.head + j * W;
    float x[N][W];
#pragma unroll
    for (int k = 0; k < N; k++) ld_operand<T, W>(v, q, 1 + k, i, x[k]);
    float y[W];
    apply_vec<N, W>(op, x, y, a, b);
    VecOf<T, W> out;
#pragma unroll
    for (int e = 0; e < W; e++) st<T>(out.e, e, y[e]);
    st_vec<T, W>(q.p[0], i, out);
  }
}

template <class T, int N>
void ew_vec_launch(cudaStream_t s, const EwVec& v, const EwPtrs& ptrs, int op, float a, float b) {
  ew_vec_kernel<T, N><<<static_cast<unsigned>(v.launch.blocks), v.launch.threads, 0, s>>>(v, ptrs, op, a, b);
}

template <class T>
cudaError_t ew_as(cudaStream_t s, const EwPlan& plan, const EwPtrs& ptrs, int op, int n, float a, float b) {
  if (n <= 3 && plan.operands == n + 1) {
    int sizes[kPlanOperands];
    for (int k = 0; k < kPlanOperands; k++) sizes[k] = static_cast<int>(sizeof(T));
    const EwVec v = vec_of(plan, ptrs.p, sizes);
    if (v.width) {
      if (n == 1)
        ew_vec_launch<T, 1>(s, v, ptrs, op, a, b);
      else if (n == 2)
        ew_vec_launch<T, 2>(s, v, ptrs, op, a, b);
      else
        ew_vec_launch<T, 3>(s, v, ptrs, op, a, b);
      count_vec_launch();
      return cudaGetLastError();
    }
  }
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

// copy_kernel on a vector launch (both operands packed): 16 bytes a step.
template <class U>
__global__ void copy_vec_kernel(EwVec v, U* y, const U* x) {
  constexpr int W = gpu::kVecBytes / sizeof(U);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t ns = v.scalars();
  for (int64_t t = t0; t < ns; t += step) {
    const int64_t i = v.scalar_index(t);
    y[i] = x[i];
  }
  for (int64_t j = t0; j < v.vectors; j += step) {
    const int64_t i = v.head + j * W;
    st_vec<U, W>(y, i, ld_vec<U, W>(x, i));
  }
}

// fill_kernel on a vector launch: 16 bytes of the pattern a step.
template <class U>
__global__ void fill_vec_kernel(EwVec v, U* y, U val) {
  constexpr int W = gpu::kVecBytes / sizeof(U);
  VecOf<U, W> pat;
#pragma unroll
  for (int e = 0; e < W; e++) pat.e[e] = val;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t ns = v.scalars();
  for (int64_t t = t0; t < ns; t += step) y[v.scalar_index(t)] = val;
  for (int64_t j = t0; j < v.vectors; j += step) st_vec<U, W>(y, v.head + j * W, pat);
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

// convert_kernel on a vector launch: W = 16 / the larger element size
// elements a step, one access each side.
template <class A, class B>
__global__ void convert_vec_kernel(EwVec v, B* y, const A* x) {
  constexpr int W = gpu::kVecBytes / (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t ns = v.scalars();
  for (int64_t t = t0; t < ns; t += step) {
    const int64_t i = v.scalar_index(t);
    y[i] = from_d<B>(to_d(x[i]));
  }
  for (int64_t j = t0; j < v.vectors; j += step) {
    const int64_t i = v.head + j * W;
    const VecOf<A, W> in = ld_vec<A, W>(x, i);
    VecOf<B, W> out;
#pragma unroll
    for (int e = 0; e < W; e++) out.e[e] = from_d<B>(to_d(in.e[e]));
    st_vec<B, W>(y, i, out);
  }
}

template <class A, class B>
cudaError_t convert_as(cudaStream_t s, const EwPlan& plan, void* y, const void* x) {
  {
    const int sizes[kPlanOperands] = {static_cast<int>(sizeof(B)), static_cast<int>(sizeof(A))};
    const void* ptrs[] = {y, x};
    const EwVec v = plan.operands == 2 ? vec_of(plan, ptrs, sizes) : EwVec{};
    constexpr int W = gpu::kVecBytes / (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
    if (v.width == W && v.mode[1] == gpu::kVecPacked) {
      convert_vec_kernel<A, B><<<static_cast<unsigned>(v.launch.blocks), v.launch.threads, 0, s>>>(
          v, static_cast<B*>(y), static_cast<const A*>(x));
      count_vec_launch();
      return cudaGetLastError();
    }
  }
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

std::atomic<uint64_t> g_vec_launches{0};

}  // namespace

uint64_t vec_launches() { return g_vec_launches.load(); }
void count_vec_launch() { g_vec_launches.fetch_add(1); }

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
  {
    const int sizes[kPlanOperands] = {element_size, element_size};
    const void* ptrs[] = {y, x};
    const EwVec v = plan.operands == 2 ? vec_of(plan, ptrs, sizes) : EwVec{};
    if (v.width && v.mode[1] == gpu::kVecPacked) {
      const dim3 grid(static_cast<unsigned>(v.launch.blocks));
      switch (element_size) {
        case 1:
          copy_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint8_t*>(y), static_cast<const uint8_t*>(x));
          break;
        case 2:
          copy_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint16_t*>(y),
                                                            static_cast<const uint16_t*>(x));
          break;
        case 4:
          copy_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint32_t*>(y),
                                                            static_cast<const uint32_t*>(x));
          break;
        default:
          copy_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint64_t*>(y),
                                                            static_cast<const uint64_t*>(x));
          break;
      }
      count_vec_launch();
      return cudaGetLastError();
    }
  }
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
  {
    const int sizes[kPlanOperands] = {element_size};
    const void* ptrs[] = {y};
    const EwVec v = plan.operands == 1 ? vec_of(plan, ptrs, sizes) : EwVec{};
    if (v.width) {
      const dim3 grid(static_cast<unsigned>(v.launch.blocks));
      switch (element_size) {
        case 1:
          fill_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint8_t*>(y), static_cast<uint8_t>(pattern));
          break;
        case 2:
          fill_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint16_t*>(y),
                                                            static_cast<uint16_t>(pattern));
          break;
        case 4:
          fill_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint32_t*>(y),
                                                            static_cast<uint32_t>(pattern));
          break;
        default:
          fill_vec_kernel<<<grid, v.launch.threads, 0, s>>>(v, static_cast<uint64_t*>(y), pattern);
          break;
      }
      count_vec_launch();
      return cudaGetLastError();
    }
  }
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
