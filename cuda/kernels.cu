// cuBLAS GEMM's helper kernels (plain CUDA C++; no NNC headers here): a
// bias broadcast into the rows of the output, and the column sums of a
// gradient (dbias). The element-wise families are ewgpu.cpp's.
#include <cuda_runtime.h>

namespace {

__global__ void broadcast_rows_kernel(float* c, const float* bias, long long total, int cols) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) c[i] = bias[i % cols];
}

}  // namespace

namespace nnc::cuda {

cudaError_t launch_broadcast_rows(float* c, const float* bias, int rows, int cols, cudaStream_t s) {
  const long long total = static_cast<long long>(rows) * cols;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  broadcast_rows_kernel<<<static_cast<unsigned>(blocks), threads, 0, s>>>(c, bias, total, cols);
  return cudaGetLastError();
}

}  // namespace nnc::cuda

// Column sums of a packed row-major matrix (a bias's gradient).
namespace {

__global__ void column_sums_kernel(const float* g, float* out, int rows, int cols) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float s = 0.f;
  for (int i = 0; i < rows; i++) s += g[static_cast<long long>(i) * cols + j];
  out[j] = s;
}

}  // namespace

namespace nnc::cuda {

cudaError_t launch_column_sums(const float* g, float* out, int rows, int cols, cudaStream_t s) {
  if (cols == 0) return cudaSuccess;
  column_sums_kernel<<<(cols + 127) / 128, 128, 0, s>>>(g, out, rows, cols);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
