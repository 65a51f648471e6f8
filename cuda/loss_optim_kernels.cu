// GPU_REF row kernels (SOFTMAX, SOFTMAX_CROSSENTROPY, CATEGORICAL_CROSSENTROPY)
// and the optimisers' element-wise step (formulas: cmd/common/gpu_softmax.hpp,
// gpu_optim.hpp). Rows: one block per row (a power of
// two of threads, 32..256), each thread a strided share of the columns, then
// shared-memory trees; every element a thread writes it has read itself, so
// the in-place pairs of the CPU contracts hold. Rows 32F, 16F or 16BF (one
// type per call, CPU_REF's rule), loaded as float, computed in float, every
// output rounded once on store; class indices 32S, 32F, 16F or 16BF.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cmd/common/gpu_softmax.hpp"
#include "cmd/common/gpu_vec.hpp"
#include "cuda/kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

constexpr int kRowThreads = 256;

__device__ float block_sum(float v, float* shm) {
  shm[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) shm[threadIdx.x] += shm[threadIdx.x + w];
    __syncthreads();
  }
  const float r = shm[0];
  __syncthreads();
  return r;
}

__device__ float block_max(float v, float* shm) {
  shm[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) shm[threadIdx.x] = fmaxf(shm[threadIdx.x], shm[threadIdx.x + w]);
    __syncthreads();
  }
  const float r = shm[0];
  __syncthreads();
  return r;
}

// A row of a row tensor of storage type T: element j as float, stored rounded.
template <class T>
struct RowPtr {
  T* p;
  int64_t cs;
  __device__ float operator[](int j) const { return ld<T>(p, j * cs); }
  __device__ void set(int j, float v) const { st<T>(p, j * cs, v); }
};

template <class T>
__device__ RowPtr<T> row_of(const RowArgs& a, int k, const int64_t* off) {
  return {a.row_ptr[k] ? static_cast<T*>(a.row_ptr[k]) + off[k] : nullptr, a.col_stride[k]};
}

// Item o of item tensor k (a float type) as float.
__device__ float item_at(const RowArgs& a, int k, int64_t o) {
  switch (a.item_type[k]) {
    case kF16:
      return ld<__half>(a.item_ptr[k], o);
    case kBF16:
      return ld<__nv_bfloat16>(a.item_ptr[k], o);
    default:
      return ld<float>(a.item_ptr[k], o);
  }
}
__device__ void item_set(const RowArgs& a, int k, int64_t r, float v) {
  const int64_t o = gpu::plan_offset(a.item[k], 0, r);
  switch (a.item_type[k]) {
    case kF16:
      st<__half>(a.item_ptr[k], o, v);
      break;
    case kBF16:
      st<__nv_bfloat16>(a.item_ptr[k], o, v);
      break;
    default:
      st<float>(a.item_ptr[k], o, v);
      break;
  }
}

// The class index of row r, or -1 (and *bad set) when it is not one.
__device__ int class_of(const RowArgs& a, int64_t r, int* bad) {
  const int64_t o = gpu::plan_offset(a.item[1], 0, r);
  int c;
  if (a.item_int[1]) {
    c = static_cast<const int*>(a.item_ptr[1])[o];
  } else {
    const float v = item_at(a, 1, o);  // 16F / 16BF indices are whole numbers exactly where they are whole
    c = (v == floorf(v) && v >= 0.f && v < static_cast<float>(a.cols)) ? static_cast<int>(v) : -1;
  }
  if (c < 0 || c >= a.cols) {
    if (bad && threadIdx.x == 0) atomicCAS(bad, 0, static_cast<int>(r < 0x7ffffffe ? r + 1 : 0x7fffffff));
    return -1;
  }
  return c;
}

// The target of column j: trim1 for the labelled class (index labels), or
// trim0 + (trim1 - trim0) l_j (dense labels).
template <class T>
__device__ float target(const RowArgs& a, const RowPtr<T>& lab, int cls, int j) {
  if (lab.p) return gpu::smoothed_target(a.trim0, a.trim1, lab[j]);
  return j == cls ? a.trim1 : a.trim0;
}

__device__ float item_or_one(const RowArgs& a, int k, int64_t r) {
  if (!a.item_ptr[k]) return 1.f;
  return item_at(a, k, gpu::plan_offset(a.item[k], 0, r));
}

template <class T>
__global__ void softmax_crossentropy_kernel(RowArgs a, int* bad) {
  __shared__ float shm[kRowThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[3];
    gpu::plan_offsets(a.rows, 3, r, off);
    const RowPtr<T> z = row_of<T>(a, 0, off), s = row_of<T>(a, 1, off), lab = row_of<T>(a, 2, off);
    const int cls = lab.p ? -1 : class_of(a, r, bad);
    float m = -INFINITY;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) m = fmaxf(m, z[j]);
    m = block_max(m, shm);
    if (isinf(m) && m < 0) m = 0;  // a row of -inf: uniform, as CPU_REF
    float e = 0;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) e += expf(z[j] - m);
    const float sum = block_sum(e, shm);
    const float lse = logf(sum);
    if (a.item_ptr[0]) {
      float l = 0;
      for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
        l += gpu::sce_loss_term(target(a, lab, cls, j), z[j], m, lse);
      }
      l = block_sum(l, shm);  // every label of the row is read before the softmax is written
      if (threadIdx.x == 0) item_set(a, 0, r, l);
    }
    if (s.p)
      for (int j = threadIdx.x; j < a.cols; j += blockDim.x) s.set(j, gpu::softmax_value(z[j], m, sum));
    __syncthreads();
  }
}

template <class T>
__global__ void softmax_crossentropy_backward_kernel(RowArgs a, int* bad) {
  __shared__ float shm[kRowThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[4];
    gpu::plan_offsets(a.rows, 4, r, off);
    const RowPtr<T> s = row_of<T>(a, 0, off), gs = row_of<T>(a, 1, off), lab = row_of<T>(a, 2, off),
                    dz = row_of<T>(a, 3, off);
    const int cls = lab.p ? -1 : class_of(a, r, bad);
    const float gl = item_or_one(a, 0, r);
    float tot, d = 0;
    if (lab.p) {
      float t = 0;
      for (int j = threadIdx.x; j < a.cols; j += blockDim.x) t += target(a, lab, cls, j);
      tot = block_sum(t, shm);
    } else {
      tot = (cls >= 0 ? a.trim1 : a.trim0) + static_cast<float>(a.cols - 1) * a.trim0;
    }
    if (gs.p) {
      float p = 0;
      for (int j = threadIdx.x; j < a.cols; j += blockDim.x) p += gs[j] * s[j];
      d = block_sum(p, shm);
    }
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const float sj = s[j], t = target(a, lab, cls, j), gj = gs.p ? gs[j] : 0.f;
      dz.set(j, gpu::sce_dlogit(gl, sj, tot, t, gj, d));
    }
    __syncthreads();
  }
}

template <class T>
__global__ void categorical_crossentropy_kernel(RowArgs a, int* bad) {
  __shared__ float shm[kRowThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[3];
    gpu::plan_offsets(a.rows, 3, r, off);
    const RowPtr<T> p = row_of<T>(a, 0, off), lab = row_of<T>(a, 2, off);
    const int cls = lab.p ? -1 : class_of(a, r, bad);
    float l = 0;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) l += gpu::cce_loss_term(target(a, lab, cls, j), p[j]);
    l = block_sum(l, shm);
    if (threadIdx.x == 0) item_set(a, 0, r, l);
  }
}

template <class T>
__global__ void categorical_crossentropy_backward_kernel(RowArgs a, int* bad) {
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[5];
    gpu::plan_offsets(a.rows, 5, r, off);
    const RowPtr<T> p = row_of<T>(a, 0, off), lab = row_of<T>(a, 2, off), dp = row_of<T>(a, 3, off),
                    dl = row_of<T>(a, 4, off);
    const int cls = lab.p ? -1 : class_of(a, r, bad);
    const float g = item_or_one(a, 0, r);
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const float pj = p[j], t = target(a, lab, cls, j);
      if (dp.p) dp.set(j, gpu::cce_dp(g, t, pj));
      if (dl.p) dl.set(j, gpu::cce_dlabel(g, a.trim0, a.trim1, pj));
    }
  }
}

template <class T>
__global__ void softmax_kernel(RowArgs a) {
  __shared__ float shm[kRowThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[2];
    gpu::plan_offsets(a.rows, 2, r, off);
    const RowPtr<T> x = row_of<T>(a, 0, off), y = row_of<T>(a, 1, off);
    float m = -INFINITY;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) m = fmaxf(m, x[j]);
    m = block_max(m, shm);
    if (isinf(m) && m < 0) m = 0;
    float e = 0;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) e += expf(x[j] - m);
    const float sum = block_sum(e, shm);
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) y.set(j, gpu::softmax_value(x[j], m, sum));
    __syncthreads();
  }
}

template <class T>
__global__ void softmax_backward_kernel(RowArgs a) {
  __shared__ float shm[kRowThreads];
  for (int64_t r = blockIdx.x; r < a.rows.count; r += gridDim.x) {
    int64_t off[3];
    gpu::plan_offsets(a.rows, 3, r, off);
    const RowPtr<T> g = row_of<T>(a, 0, off), y = row_of<T>(a, 1, off), dx = row_of<T>(a, 2, off);
    float p = 0;
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) p += (g.p ? g[j] : 1.f) * y[j];
    const float d = block_sum(p, shm);
    for (int j = threadIdx.x; j < a.cols; j += blockDim.x) {
      const float yj = y[j];
      dx.set(j, gpu::softmax_dx(yj, g.p ? g[j] : 1.f, d));
    }
    __syncthreads();
  }
}

dim3 row_grid(const RowArgs& a) {
  const int64_t b = a.rows.count < gpu::kMaxBlocks ? a.rows.count : gpu::kMaxBlocks;
  return dim3(static_cast<unsigned>(b));
}
int row_threads(const RowArgs& a) {
  int t = 32;
  while (t < kRowThreads && t < a.cols) t *= 2;
  return t;
}

// --- optimisers -------------------------------------------------------------

// Every operand of one type T (32F, 16F, 16BF: CPU_REF's rule); loaded as
// float, computed in float (gpu_optim.hpp), each output rounded once on store.
template <class T>
__global__ void optim_kernel(EwPlan plan, EwPtrs q, OptimArgs c) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int n = plan.operands;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < plan.count; i += step) {
    int64_t off[gpu::kPlanOperands];
    gpu::plan_offsets(plan, n, i, off);
    const float g = ld<T>(q.p[0], off[0]), a = ld<T>(q.p[1], off[1]), m = ld<T>(q.p[2], off[2]);
    float b, nm, nv, um = 0;
    if (c.kind == gpu::kOptSgd) {  // g a m | b n
      gpu::sgd_step_f(c, g, a, m, &b, &nm);
      st<T>(q.p[4], off[4], nm);
      st<T>(q.p[3], off[3], b);
      continue;
    }
    const float v = ld<T>(q.p[3], off[3]);
    if (c.kind == gpu::kOptRmsprop) {  // g a m v | b n u
      gpu::rmsprop_step_f(c, g, a, m, v, &b, &nm, &nv);
      st<T>(q.p[6], off[6], nv);
      st<T>(q.p[5], off[5], nm);
      st<T>(q.p[4], off[4], b);
      continue;
    }
    // ADAM / ADAMW: g a m v [vm] | b n u [um]
    const int ob = c.amsgrad ? 5 : 4;
    const float vm = c.amsgrad ? ld<T>(q.p[4], off[4]) : 0.f;
    gpu::adam_step_f(c, g, a, m, v, vm, &b, &nm, &nv, &um);
    if (c.amsgrad) st<T>(q.p[8], off[8], um);
    st<T>(q.p[ob + 1], off[ob + 1], nm);
    st<T>(q.p[ob + 2], off[ob + 2], nv);
    st<T>(q.p[ob], off[ob], b);
  }
}

// The vector path of optim_kernel (cmd/common/gpu_vec.hpp; every operand
// packed and aligned alike): operands g a m [v [vm]] then b n [u [um]]; one
// element's step from its inputs x (as float) into its outputs r, by the
// same formulas, so each element comes out bit for bit as optim_kernel's.
__device__ __forceinline__ void optim_values(const OptimArgs& c, const float* x, float* r) {
  if (c.kind == gpu::kOptSgd)
    gpu::sgd_step_f(c, x[0], x[1], x[2], &r[0], &r[1]);
  else if (c.kind == gpu::kOptRmsprop)
    gpu::rmsprop_step_f(c, x[0], x[1], x[2], x[3], &r[0], &r[1], &r[2]);
  else
    gpu::adam_step_f(c, x[0], x[1], x[2], x[3], c.amsgrad ? x[4] : 0.f, &r[0], &r[1], &r[2], &r[3]);
}

// NI inputs, NO outputs (SGD 3 / 2, RMSPROP and ADAM 4 / 3, ADAM with
// amsgrad 5 / 4) known at compile time, so values and pointers stay in registers.
template <class T, int NI, int NO>
__global__ void optim_vec_kernel(gpu::EwVec v, EwPtrs q, OptimArgs c) {
  constexpr int W = gpu::kVecBytes / sizeof(T);
  struct alignas(sizeof(T) * W) Vec {
    T e[W];
  };
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t ns = v.scalars();
  for (int64_t t = t0; t < ns; t += step) {
    const int64_t i = v.scalar_index(t);
    float x[5] = {}, r[4] = {};
#pragma unroll
    for (int k = 0; k < NI; k++) x[k] = ld<T>(q.p[k], i);
    optim_values(c, x, r);
#pragma unroll
    for (int k = 0; k < NO; k++) st<T>(q.p[NI + k], i, r[k]);
  }
  for (int64_t j = t0; j < v.vectors; j += step) {
    const int64_t i = v.head + j * W;
    Vec in[NI], out[NO];
#pragma unroll
    for (int k = 0; k < NI; k++) in[k] = *reinterpret_cast<const Vec*>(static_cast<const T*>(q.p[k]) + i);
#pragma unroll
    for (int e = 0; e < W; e++) {
      float x[5] = {}, r[4] = {};
#pragma unroll
      for (int k = 0; k < NI; k++) x[k] = ld<T>(in[k].e, e);
      optim_values(c, x, r);
#pragma unroll
      for (int k = 0; k < NO; k++) st<T>(out[k].e, e, r[k]);
    }
#pragma unroll
    for (int k = 0; k < NO; k++) *reinterpret_cast<Vec*>(static_cast<T*>(q.p[NI + k]) + i) = out[k];
  }
}

}  // namespace

// The row kernel K instantiated for the rows' storage type.
#define ROW_LAUNCH(K, ...)                                                  \
  switch (a.row_type) {                                                     \
    case kF32:                                                              \
      K<float><<<row_grid(a), row_threads(a), 0, s>>>(__VA_ARGS__);         \
      break;                                                                \
    case kF16:                                                              \
      K<__half><<<row_grid(a), row_threads(a), 0, s>>>(__VA_ARGS__);        \
      break;                                                                \
    case kBF16:                                                             \
      K<__nv_bfloat16><<<row_grid(a), row_threads(a), 0, s>>>(__VA_ARGS__); \
      break;                                                                \
    default:                                                                \
      return cudaErrorInvalidValue;                                         \
  }                                                                         \
  return cudaGetLastError()

cudaError_t launch_softmax_crossentropy(cudaStream_t s, const RowArgs& a, int* bad) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(softmax_crossentropy_kernel, a, bad);
}
cudaError_t launch_softmax_crossentropy_backward(cudaStream_t s, const RowArgs& a, int* bad) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(softmax_crossentropy_backward_kernel, a, bad);
}
cudaError_t launch_categorical_crossentropy(cudaStream_t s, const RowArgs& a, int* bad) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(categorical_crossentropy_kernel, a, bad);
}
cudaError_t launch_categorical_crossentropy_backward(cudaStream_t s, const RowArgs& a, int* bad) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(categorical_crossentropy_backward_kernel, a, bad);
}
cudaError_t launch_softmax(cudaStream_t s, const RowArgs& a) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(softmax_kernel, a);
}
cudaError_t launch_softmax_backward(cudaStream_t s, const RowArgs& a) {
  if (a.rows.count == 0 || a.cols == 0) return cudaSuccess;
  ROW_LAUNCH(softmax_backward_kernel, a);
}

cudaError_t launch_optim(cudaStream_t s, GpuType type, const EwPlan& plan, const EwPtrs& ptrs, const OptimArgs& a) {
  if (plan.count == 0) return cudaSuccess;
  const int esize = type == kF32 ? 4 : 2;
  // Operands g a state.. | b state..: ni inputs, ni - 1 outputs.
  const int ni = a.kind == gpu::kOptSgd ? 3 : a.kind == gpu::kOptRmsprop ? 4 : a.amsgrad ? 5 : 4;
  gpu::EwVec v;
  if ((type == kF32 || type == kF16 || type == kBF16) && plan.operands == 2 * ni - 1 &&
      gpu::ew_vec_allowed_from_env()) {
    uint64_t addr[gpu::kPlanOperands] = {};
    for (int k = 0; k < plan.operands && k < gpu::kPlanOperands; k++) addr[k] = reinterpret_cast<uintptr_t>(ptrs.p[k]);
    v = gpu::choose_ew_vec(plan, addr, esize);
    // Every operand read or written as a vector (no NULL, no broadcast).
    for (int k = 0; k < plan.operands && v.width; k++)
      if (v.mode[k] != gpu::kVecPacked) v.width = 0;
  }
  if (v.width) {
    const dim3 vgrid(static_cast<unsigned>(v.launch.blocks));
    with_float_type(type, [&](auto tag) {
      using Elem = decltype(tag);
      if (ni == 3)
        optim_vec_kernel<Elem, 3, 2><<<vgrid, v.launch.threads, 0, s>>>(v, ptrs, a);
      else if (ni == 4)
        optim_vec_kernel<Elem, 4, 3><<<vgrid, v.launch.threads, 0, s>>>(v, ptrs, a);
      else
        optim_vec_kernel<Elem, 5, 4><<<vgrid, v.launch.threads, 0, s>>>(v, ptrs, a);
    });
    count_vec_launch();
    return cudaGetLastError();
  }
  const gpu::EwLaunch l = gpu::choose_ew(plan.count);
  const dim3 grid(static_cast<unsigned>(l.blocks));
  if (!with_float_type(type, [&](auto tag) {
        using Elem = decltype(tag);
        optim_kernel<Elem><<<grid, l.threads, 0, s>>>(plan, ptrs, a);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace nnc::cuda
