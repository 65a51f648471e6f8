// GPU_REF random kernels: DROPOUT forward / backward, RANDOM_UNIFORM and
// RANDOM_NORMAL, drawing the same counter-based words as CPU_REF (see
// lib/cmd/rand/rand.hpp), computed in double as it does and stored as its
// store_double stores (32F: one rounding; 16F / 16BF: rounded to float, then
// to the type; 64F: as is), so a seed gives the same mask and values on both,
// in every type. The element type T is float, __half, __nv_bfloat16 or
// double (every data tensor of a call in one type).
#include "cuda/kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::EwPlan;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ uint64_t word64(uint64_t key, uint64_t k) {
  return mix64(key + (k + 1) * 0x9e3779b97f4a7c15ull);
}
__device__ __forceinline__ uint32_t word32(uint64_t key, uint64_t i) {
  const uint64_t h = word64(key, i >> 1);
  return static_cast<uint32_t>(i & 1 ? h >> 32 : h);
}

template <class T>
__device__ __forceinline__ double load_d(const void* p, int64_t off) {
  return ld<T>(p, off);  // float, 16F, 16BF: exact in float, then in double
}
template <>
__device__ __forceinline__ double load_d<double>(const void* p, int64_t off) {
  return static_cast<const double*>(p)[off];
}
template <class T>
__device__ __forceinline__ void store_d(void* p, int64_t off, double v) {
  st<T>(p, off, static_cast<float>(v));  // through float, as nnc::store_double
}
template <>
__device__ __forceinline__ void store_d<double>(void* p, int64_t off, double v) {
  static_cast<double*>(p)[off] = v;
}

template <class T>
__global__ void dropout_kernel(EwPlan p, void* y, const void* x, unsigned char* mask, int shaped, uint64_t key,
                               uint64_t threshold, double scale, int keep_all) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, shaped ? 3 : 2, i, off);
    const bool keep = keep_all >= 0 ? keep_all != 0 : word32(key, static_cast<uint64_t>(i)) >= threshold;
    const double v = load_d<T>(x, off[1]);
    store_d<T>(y, off[0], keep ? v * scale : 0.0);
    if (keep_all < 0) (shaped ? mask[off[2]] : mask[i]) = keep;
  }
}

template <class T>
__global__ void dropout_backward_kernel(EwPlan p, void* dx, const void* g, const unsigned char* mask, int shaped,
                                        double scale, int entirety) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, shaped && !entirety ? 3 : 2, i, off);
    const bool keep = entirety ? mask[0] != 0 : (shaped ? mask[off[2]] : mask[i]) != 0;
    store_d<T>(dx, off[0], keep ? load_d<T>(g, off[1]) * scale : 0.0);
  }
}

template <class T>
__global__ void random_kernel(EwPlan p, void* y, uint64_t key, int normal, double a, double b) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    double v;
    if (normal) {  // a: std, b: mean; the Box-Muller pair of word64(i / 2)
      const uint64_t w = word64(key, static_cast<uint64_t>(i) >> 1);
      const double u1 = (static_cast<double>(static_cast<uint32_t>(w)) + 0.5) * 0x1p-32;
      const double u2 = static_cast<double>(w >> 32) * 0x1p-32;
      const double r = sqrt(-2 * log(u1));
      const double t = 6.283185307179586476925 * u2;
      v = b + a * (r * ((i & 1) ? sin(t) : cos(t)));
    } else if (sizeof(T) == 8) {  // a: lb, b: range; 64F: 53 bits of word64(i)
      v = fma(b, static_cast<double>(word64(key, static_cast<uint64_t>(i)) >> 11) * 0x1p-53, a);
    } else {  // 24 bits of word32(i)
      v = fma(b, static_cast<double>(word32(key, static_cast<uint64_t>(i)) >> 8) * 0x1p-24, a);
    }
    store_d<T>(y, gpu::plan_offset(p, 0, i), v);
  }
}

// Calls f(Elem{}) for the element type of `type` (kF32, kF16, kBF16, kF64);
// false for any other.
template <class F>
bool with_type(int type, F&& f) {
  if (type == kF64) {
    f(double{});
    return true;
  }
  return with_float_type(type, f);
}

}  // namespace

cudaError_t launch_dropout(cudaStream_t s, GpuType type, const EwPlan& p, void* y, const void* x, unsigned char* mask,
                           int shaped, uint64_t key, uint64_t threshold, double scale, int keep_all) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  if (!with_type(type, [&](auto tag) {
        dropout_kernel<decltype(tag)><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, y, x, mask, shaped, key,
                                                                                            threshold, scale, keep_all);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_dropout_backward(cudaStream_t s, GpuType type, const EwPlan& p, void* dx, const void* g,
                                    const unsigned char* mask, int shaped, double scale, int entirety) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  if (!with_type(type, [&](auto tag) {
        dropout_backward_kernel<decltype(tag)>
            <<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, dx, g, mask, shaped, scale, entirety);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_random(cudaStream_t s, GpuType type, const EwPlan& p, void* y, uint64_t key, int normal, double a,
                          double b) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  if (!with_type(type, [&](auto tag) {
        random_kernel<decltype(tag)><<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, y, key, normal, a, b);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace nnc::cuda
