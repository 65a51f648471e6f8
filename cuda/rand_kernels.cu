// GPU_REF random kernels: DROPOUT forward / backward, RANDOM_UNIFORM and
// RANDOM_NORMAL, drawing the same counter-based words as CPU_REF (see
// lib/cmd/rand/rand.hpp), computed in double as it does, so a seed gives the
// same mask and values on both.
#include "cuda/kern.hpp"

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

__global__ void dropout_kernel(EwPlan p, float* y, const float* x, unsigned char* mask, int shaped, uint64_t key,
                               uint64_t threshold, double scale, int keep_all) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, shaped ? 3 : 2, i, off);
    const bool keep = keep_all >= 0 ? keep_all != 0 : word32(key, static_cast<uint64_t>(i)) >= threshold;
    const float v = x[off[1]];
    y[off[0]] = keep ? __double2float_rn(static_cast<double>(v) * scale) : 0.f;
    if (keep_all < 0) (shaped ? mask[off[2]] : mask[i]) = keep;
  }
}

__global__ void dropout_backward_kernel(EwPlan p, float* dx, const float* g, const unsigned char* mask, int shaped,
                                        double scale, int entirety) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += step) {
    int64_t off[3];
    gpu::plan_offsets(p, shaped && !entirety ? 3 : 2, i, off);
    const bool keep = entirety ? mask[0] != 0 : (shaped ? mask[off[2]] : mask[i]) != 0;
    dx[off[0]] = keep ? __double2float_rn(static_cast<double>(g[off[1]]) * scale) : 0.f;
  }
}

__global__ void random_kernel(EwPlan p, float* y, uint64_t key, int normal, double a, double b) {
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
    } else {  // a: lb, b: range; 24 bits of word32(i)
      v = fma(b, static_cast<double>(word32(key, static_cast<uint64_t>(i)) >> 8) * 0x1p-24, a);
    }
    y[gpu::plan_offset(p, 0, i)] = __double2float_rn(v);
  }
}

}  // namespace

cudaError_t launch_dropout(cudaStream_t s, const EwPlan& p, float* y, const float* x, unsigned char* mask, int shaped,
                           uint64_t key, uint64_t threshold, double scale, int keep_all) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  dropout_kernel<<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, y, x, mask, shaped, key, threshold, scale,
                                                                       keep_all);
  return cudaGetLastError();
}

cudaError_t launch_dropout_backward(cudaStream_t s, const EwPlan& p, float* dx, const float* g,
                                    const unsigned char* mask, int shaped, double scale, int entirety) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  dropout_backward_kernel<<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, dx, g, mask, shaped, scale,
                                                                                entirety);
  return cudaGetLastError();
}

cudaError_t launch_random(cudaStream_t s, const EwPlan& p, float* y, uint64_t key, int normal, double a, double b) {
  if (p.count == 0) return cudaSuccess;
  const gpu::EwLaunch l = gpu::choose_ew(p.count);
  random_kernel<<<static_cast<unsigned>(l.blocks), l.threads, 0, s>>>(p, y, key, normal, a, b);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
