// Device kernels of the CUDA module (plain CUDA C++; no NNC headers here).
#include <cuda_runtime.h>

namespace {

__global__ void broadcast_rows_kernel(float* c, const float* bias, long long total, int cols) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) c[i] = bias[i % cols];
}

}  // namespace

namespace nnc::cuda {

cudaError_t launch_broadcast_rows(float* c, const float* bias, int rows, int cols) {
  const long long total = static_cast<long long>(rows) * cols;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  broadcast_rows_kernel<<<static_cast<unsigned>(blocks), threads>>>(c, bias, total, cols);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
