// GPU_REF reductions over strided operands (REDUCE_SUM / MEAN / MAX, the
// gradients of broadcast operands): y[o] = scale * R_r f(x1, x2) over the
// plan's inner elements. One thread per output (a sequential loop), one
// block per output (a strided loop per thread, then a shared-memory tree),
// or runs of the inner elements per thread with the partials combined in
// order by a second kernel (few outputs over long sums):
// cmd/common/gpu_plan.hpp chooses. No atomics: every output is written by
// exactly one thread, so results are deterministic. Storage 32F, 16F or 16BF
// (every operand one type), loaded as float, summed in float, each output
// rounded once on store.
#include "cuda/kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

__device__ __forceinline__ float combine(int op, float acc, float v) {
  if (op == kRedMax) return ((v != v) || v > acc) && acc == acc ? v : acc;  // NaN wins, as CPU_REF
  return acc + v;
}

template <class T>
__device__ __forceinline__ float element(int op, const void* x1, const void* x2, int64_t o1, int64_t o2) {
  const float a = x1 ? ld<T>(x1, o1) : 1.f;
  return op == kRedSumProd ? a * ld<T>(x2, o2) : a;
}

__device__ __forceinline__ float identity(int op) { return op == kRedMax ? -INFINITY : 0.f; }

// IN inputs: 1 (x1) or 2 (x1, x2); outer operands: 0 y, 1 x1, 2 x2. (A
// compile-time count keeps the offsets in registers.)
template <class T, int IN>
__global__ void reduce_thread_kernel(EwPlan outer, EwPlan inner, void* y, const void* x1, const void* x2, int op,
                                     float scale) {
  constexpr int inputs = IN;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer.count; o += step) {
    int64_t base[3] = {0, 0, 0};
    gpu::plan_offsets(outer, 1 + inputs, o, base);
    float acc = identity(op);
    for (int64_t r = 0; r < inner.count; r++) {
      int64_t off[2] = {0, 0};
      gpu::plan_offsets(inner, inputs, r, off);
      acc = combine(op, acc, element<T>(op, x1, x2, base[1] + off[0], base[2] + off[1]));
    }
    st<T>(y, base[0], op == kRedMax ? acc : scale * acc);
  }
}

template <class T, int IN>
__global__ void reduce_block_kernel(EwPlan outer, EwPlan inner, void* y, const void* x1, const void* x2, int op,
                                    float scale) {
  constexpr int inputs = IN;
  __shared__ float part[256];
  for (int64_t o = blockIdx.x; o < outer.count; o += gridDim.x) {
    int64_t base[3] = {0, 0, 0};
    gpu::plan_offsets(outer, 1 + inputs, o, base);
    float acc = identity(op);
    for (int64_t r = threadIdx.x; r < inner.count; r += blockDim.x) {
      int64_t off[2] = {0, 0};
      gpu::plan_offsets(inner, inputs, r, off);
      acc = combine(op, acc, element<T>(op, x1, x2, base[1] + off[0], base[2] + off[1]));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] = combine(op, part[threadIdx.x], part[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) st<T>(y, base[0], op == kRedMax ? part[0] : scale * part[0]);
    __syncthreads();  // part is reused by the next output
  }
}

// The sliced launch (gpu::choose_reduce_sliced): thread t sums run t / m of
// output t % m (m outputs) into partial[t]; neighbouring threads take
// neighbouring outputs, so their reads are neighbours.
template <class T, int IN>
__global__ void reduce_slice_kernel(EwPlan outer, EwPlan inner, int64_t slices, float* partial, const void* x1,
                                    const void* x2, int op) {
  constexpr int inputs = IN;
  const int64_t m = outer.count, n = inner.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < m * slices; t += step) {
    const int64_t s = t / m, o = t - s * m;
    int64_t base[3] = {0, 0, 0};
    gpu::plan_offsets(outer, 1 + inputs, o, base);
    float acc = identity(op);
    const int64_t r1 = gpu::reduce_slice_begin(n, slices, s + 1);
    for (int64_t r = gpu::reduce_slice_begin(n, slices, s); r < r1; r++) {
      int64_t off[2] = {0, 0};
      gpu::plan_offsets(inner, inputs, r, off);
      acc = combine(op, acc, element<T>(op, x1, x2, base[1] + off[0], base[2] + off[1]));
    }
    partial[t] = acc;
  }
}

// Each output's partials combined in run order, scaled and stored once.
template <class T>
__global__ void reduce_combine_kernel(EwPlan outer, int64_t slices, const float* partial, void* y, int op,
                                      float scale) {
  const int64_t m = outer.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < m; o += step) {
    float acc = partial[o];
    for (int64_t s = 1; s < slices; s++) acc = combine(op, acc, partial[s * m + o]);
    st<T>(y, gpu::plan_offset(outer, 0, o), op == kRedMax ? acc : scale * acc);
  }
}

}  // namespace

cudaError_t launch_reduce_as(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch,
                             void* y, const void* x1, const void* x2, int op, float scale, float* scratch) {
  if (plan.outer.count == 0 || launch.blocks == 0) return cudaSuccess;
  const int inputs = plan.inner.operands;
  if (inputs < 1 || inputs > 2 || (op == kRedSumProd && (inputs != 2 || !x2)) || launch.threads > 256 ||
      (launch.threads & (launch.threads - 1)) || (launch.slices > 1 && !scratch))
    return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(launch.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        if (launch.slices > 1) {
          if (inputs == 1)
            reduce_slice_kernel<Elem, 1><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, launch.slices, scratch,
                                                                         x1, x2, op);
          else
            reduce_slice_kernel<Elem, 2><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, launch.slices, scratch,
                                                                         x1, x2, op);
          const gpu::EwLaunch c = gpu::choose_ew(plan.outer.count);
          reduce_combine_kernel<Elem><<<static_cast<unsigned>(c.blocks), c.threads, 0, s>>>(plan.outer, launch.slices,
                                                                                           scratch, y, op, scale);
        } else if (launch.block_per_output) {
          if (inputs == 1)
            reduce_block_kernel<Elem, 1><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x1, x2, op, scale);
          else
            reduce_block_kernel<Elem, 2><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x1, x2, op, scale);
        } else {
          if (inputs == 1)
            reduce_thread_kernel<Elem, 1><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x1, x2, op, scale);
          else
            reduce_thread_kernel<Elem, 2><<<grid, launch.threads, 0, s>>>(plan.outer, plan.inner, y, x1, x2, op, scale);
        }
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_reduce(cudaStream_t s, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch, float* y,
                          const float* x1, const float* x2, int op, float scale) {
  return launch_reduce_as(s, kF32, plan, launch, y, x1, x2, op, scale, nullptr);
}

}  // namespace nnc::cuda
