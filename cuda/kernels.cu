// Device kernels of the CUDA module (plain CUDA C++; no NNC headers here).
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

// Element-wise kernels over packed fp32 arrays (ew.cpp chooses and checks).
namespace {

__global__ void unary_kernel(const float* x, float* y, long long n, int op, float a) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float r;
  switch (op) {
    case 0: r = expf(v); break;
    case 1: r = logf(v); break;
    case 2: r = sqrtf(v); break;
    case 3: r = v > 0.f ? v : 0.f; break;
    case 4: r = 1.f / (1.f + expf(-v)); break;
    case 5: r = tanhf(v); break;
    case 6: r = a * v; break;
    case 8: r = a; break;  // fill (SET)
    default: r = 1.f / v; break;  // 7: reciprocal
  }
  y[i] = r;
}

__global__ void binary_kernel(const float* a, const float* b, float* y, long long n, int op) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  switch (op) {
    case 0: y[i] = a[i] + b[i]; break;
    case 1: y[i] = a[i] * b[i]; break;
    default: y[i] = a[i] / b[i]; break;  // 2
  }
}

unsigned blocks_for(long long n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

namespace nnc::cuda {

cudaError_t launch_unary(const float* x, float* y, long long n, int op, float a, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unary_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, y, n, op, a);
  return cudaGetLastError();
}

cudaError_t launch_binary(const float* a, const float* b, float* y, long long n, int op, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  binary_kernel<<<blocks_for(n, 256), 256, 0, s>>>(a, b, y, n, op);
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

// Gradients of the element-wise functions from g and the value each reads
// (y for RELU / SIGMOID / TANH / EWEXP / EWSQRT, x for EWLOG and a RELU without y).
namespace {

__global__ void grad_kernel(const float* g, const float* v, float* dx, long long n, int op) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float gv = g[i], vv = v[i];
  float r;
  switch (op) {
    case 0: r = vv > 0.f ? gv : 0.f; break;             // RELU
    case 1: r = gv * vv * (1.f - vv); break;            // SIGMOID
    case 2: r = gv * (1.f - vv) * (1.f + vv); break;    // TANH
    case 3: r = gv * vv; break;                         // EWEXP
    case 4: r = gv / vv; break;                         // EWLOG
    default: r = gv / (2.f * vv); break;                // 5: EWSQRT
  }
  dx[i] = r;
}

}  // namespace

namespace nnc::cuda {

cudaError_t launch_grad(const float* g, const float* v, float* dx, long long n, int op, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  grad_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(g, v, dx, n, op);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
