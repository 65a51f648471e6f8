// GPU_CUBLAS GEMM's helper kernels (cuda/gemm.cpp), over any floating type:
// the bias broadcast into b before an accumulating GEMM; dbias, the sum of g
// over the dimensions the bias was broadcast along; and the fp16 / bf16
// rounding of sums kept in fp32 scratch. Index arithmetic is
// the host's (cmd/common/gpu_plan.hpp, planned by cmd/common/gemm_plan.cpp).
// dbias sums in float (double for fp64) whatever the storage type; every
// output is written by exactly one thread or block, so results are
// deterministic.
#include "cuda/kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

// Storage T, accumulator A (float, or double for double storage).
template <class T>
struct Acc {
  using type = float;
  __device__ static float load(const void* p, int64_t off) { return ld<T>(p, off); }
  __device__ static void store(void* p, int64_t off, float v) { st<T>(p, off, v); }
};
template <>
struct Acc<double> {
  using type = double;
  __device__ static double load(const void* p, int64_t off) { return static_cast<const double*>(p)[off]; }
  __device__ static void store(void* p, int64_t off, double v) { static_cast<double*>(p)[off] = v; }
};

// c[off0] = bias[off1] over the plan (operand 0: b, operand 1: the bias, 0 strides where broadcast).
template <class T>
__global__ void bias_fill_kernel(EwPlan p, void* c, const void* bias) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[2];
    gpu::plan_offsets(p, 2, i, off);
    Acc<T>::store(c, off[0], Acc<T>::load(bias, off[1]));
  }
}

// One thread per dbias element (neighbouring outputs read neighbouring g
// columns: coalesced for the [n] bias of a row-major g).
template <class T>
__global__ void bias_grad_thread_kernel(EwPlan outer, EwPlan inner, void* dbias, const void* g) {
  using A = typename Acc<T>::type;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer.count; o += step) {
    int64_t base[2] = {0, 0};
    gpu::plan_offsets(outer, 2, o, base);
    A acc = 0;
    for (int64_t r = 0; r < inner.count; r++) acc += Acc<T>::load(g, base[1] + gpu::plan_offset(inner, 0, r));
    Acc<T>::store(dbias, base[0], acc);
  }
}

// One block per dbias element (few outputs, long sums): a strided loop per
// thread, then a tree in shared memory.
template <class T>
__global__ void bias_grad_block_kernel(EwPlan outer, EwPlan inner, void* dbias, const void* g) {
  using A = typename Acc<T>::type;
  __shared__ A part[256];
  for (int64_t o = blockIdx.x; o < outer.count; o += gridDim.x) {
    int64_t base[2] = {0, 0};
    gpu::plan_offsets(outer, 2, o, base);
    A acc = 0;
    for (int64_t r = threadIdx.x; r < inner.count; r += blockDim.x)
      acc += Acc<T>::load(g, base[1] + gpu::plan_offset(inner, 0, r));
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) Acc<T>::store(dbias, base[0], part[0]);
    __syncthreads();  // part is reused by the next output
  }
}

// The sliced launch (gpu::choose_reduce_sliced: a tall g, few bias
// elements): thread t sums run t / m of dbias element t % m into partial[t]
// (A: float, double for fp64), then each element's partials are added in
// run order.
template <class T>
__global__ void bias_grad_slice_kernel(EwPlan outer, EwPlan inner, int64_t slices, typename Acc<T>::type* partial,
                                       const void* g) {
  using A = typename Acc<T>::type;
  const int64_t m = outer.count, n = inner.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < m * slices; t += step) {
    const int64_t s = t / m, o = t - s * m;
    int64_t base[2] = {0, 0};
    gpu::plan_offsets(outer, 2, o, base);
    A acc = 0;
    const int64_t r1 = gpu::reduce_slice_begin(n, slices, s + 1);
    for (int64_t r = gpu::reduce_slice_begin(n, slices, s); r < r1; r++)
      acc += Acc<T>::load(g, base[1] + gpu::plan_offset(inner, 0, r));
    partial[t] = acc;
  }
}
template <class T>
__global__ void bias_grad_combine_kernel(EwPlan outer, int64_t slices, const typename Acc<T>::type* partial,
                                         void* dbias) {
  using A = typename Acc<T>::type;
  const int64_t m = outer.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < m; o += step) {
    A acc = partial[o];
    for (int64_t s = 1; s < slices; s++) acc += partial[s * m + o];
    Acc<T>::store(dbias, gpu::plan_offset(outer, 0, o), acc);
  }
}

// c[off0] = x[off1] rounded to T (operand 0: the output, operand 1: an fp32 scratch).
template <class T>
__global__ void store_f32_kernel(EwPlan p, void* c, const float* x) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[2];
    gpu::plan_offsets(p, 2, i, off);
    st<T>(c, off[0], x[off[1]]);
  }
}

template <class T>
cudaError_t store_typed(cudaStream_t s, const EwPlan& p, void* c, const float* x) {
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  if (p.count == 0 || l.blocks == 0) return cudaSuccess;
  store_f32_kernel<T><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, c, x);
  return cudaGetLastError();
}

template <class T>
cudaError_t fill_typed(cudaStream_t s, const EwPlan& p, void* c, const void* bias) {
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  if (p.count == 0 || l.blocks == 0) return cudaSuccess;
  bias_fill_kernel<T><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, c, bias);
  return cudaGetLastError();
}

template <class T>
cudaError_t grad_typed(cudaStream_t s, const gpu::ReducePlan& r, const gpu::ReduceLaunch& l, void* dbias, const void* g,
                       void* scratch) {
  if (r.outer.count == 0 || l.blocks == 0) return cudaSuccess;
  if (l.threads > 256 || (l.threads & (l.threads - 1)) || (l.slices > 1 && !scratch)) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (l.slices > 1) {
    using A = typename Acc<T>::type;
    bias_grad_slice_kernel<T><<<grid, l.threads, 0, s>>>(r.outer, r.inner, l.slices, static_cast<A*>(scratch), g);
    const gpu::EwLaunch c = gpu::choose_ew(r.outer.count);
    bias_grad_combine_kernel<T>
        <<<static_cast<unsigned>(c.blocks), c.threads, 0, s>>>(r.outer, l.slices, static_cast<const A*>(scratch), dbias);
  } else if (l.block_per_output)
    bias_grad_block_kernel<T><<<grid, l.threads, 0, s>>>(r.outer, r.inner, dbias, g);
  else
    bias_grad_thread_kernel<T><<<grid, l.threads, 0, s>>>(r.outer, r.inner, dbias, g);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gemm_bias_fill(cudaStream_t s, int type, const gpu::EwPlan& p, void* c, const void* bias) {
  switch (type) {
    case kF32:
      return fill_typed<float>(s, p, c, bias);
    case kF16:
      return fill_typed<__half>(s, p, c, bias);
    case kBF16:
      return fill_typed<__nv_bfloat16>(s, p, c, bias);
    case kF64:
      return fill_typed<double>(s, p, c, bias);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_gemm_store_f32(cudaStream_t s, int type, const gpu::EwPlan& p, void* c, const float* x) {
  switch (type) {
    case kF16:
      return store_typed<__half>(s, p, c, x);
    case kBF16:
      return store_typed<__nv_bfloat16>(s, p, c, x);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_gemm_bias_grad(cudaStream_t s, int type, const gpu::ReducePlan& r, const gpu::ReduceLaunch& l,
                                  void* dbias, const void* g, void* scratch) {
  switch (type) {
    case kF32:
      return grad_typed<float>(s, r, l, dbias, g, scratch);
    case kF16:
      return grad_typed<__half>(s, r, l, dbias, g, scratch);
    case kBF16:
      return grad_typed<__nv_bfloat16>(s, r, l, dbias, g, scratch);
    case kF64:
      return grad_typed<double>(s, r, l, dbias, g, scratch);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace nnc::cuda
