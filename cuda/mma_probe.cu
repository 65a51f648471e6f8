// The fragment-layout probe (mma_probe.hpp).
#include "cuda/mma.cuh"
#include "cuda/mma_probe.hpp"

namespace nnc::cuda {

namespace {

template <class T>
__global__ void mma_probe(const uint16_t* A, const uint16_t* B, float* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const uint32_t a[4] = {pack16(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]),
                         pack16(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]),
                         pack16(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]),
                         pack16(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9])};
  const uint32_t b[2] = {pack16(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]),
                         pack16(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g])};
  const float c[4] = {0.f, 0.f, 0.f, 0.f};
  float d[4];
  mma_16816<T>(d, a, b, c);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

}  // namespace

cudaError_t launch_mma_probe(cudaStream_t s, int bf16, const void* a, const void* b, float* d) {
  const auto* A = static_cast<const uint16_t*>(a);
  const auto* B = static_cast<const uint16_t*>(b);
  if (bf16)
    mma_probe<__nv_bfloat16><<<1, 32, 0, s>>>(A, B, d);
  else
    mma_probe<__half><<<1, 32, 0, s>>>(A, B, d);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
