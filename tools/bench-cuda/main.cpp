// bench-cuda: fp32 GEMM on GPU 0, C = A B^T with A [M, K] and B [N, K] (libnnc's
// TRANSPOSE(0, 1) on the weights), through ccv_nnc_cmd_exec (GPU_CUBLAS)
// beside cublasSgemm called directly on the same buffers. Each call is
// followed by a device synchronisation on both sides (NNC's kernel
// synchronises before returning), so the figures include it. Median of 20
// after 5 warm-ups.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

// The median of 20 timed calls after 5 warm-ups (nnc_bench::time_ms).
template <class F>
double median_ms(F&& f) {
  return nnc_bench::time_ms(f, 5, 0, 20, 20);
}

ccv_nnc_tensor_param_t gpu(int a, int b) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_GPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = a;
  p.dim[1] = b;
  return p;
}

}  // namespace

int main() {
  ccv_nnc_init();
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0) {
    std::printf("no GPU found: nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU 0: %s; fp32 GEMM C = A B^T; ms per call (median of 20), device synchronised after each\n", prop.name);
  std::printf("%-22s %12s %12s %8s %10s\n", "M x N x K", "NNC", "cuBLAS", "ratio", "NNC TFLOP/s");
  cublasHandle_t h;
  cublasCreate(&h);
  const int shapes[][3] = {{64, 64, 64}, {512, 512, 512}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 1024, 4096}};
  for (const auto& s : shapes) {
    const int M = s[0], N = s[1], K = s[2];
    ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, gpu(M, K), 0);
    ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, gpu(N, K), 0);
    ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(nullptr, gpu(M, N), 0);
    if (!a || !b || !c) {
      std::printf("allocation failed: %s\n", ccv_nnc_error_message());
      return 1;
    }
    cudaMemset(a->data.u8, 0, static_cast<size_t>(M) * K * 4);
    cudaMemset(b->data.u8, 0, static_cast<size_t>(N) * K * 4);
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.blas.a[0] = p.blas.a[1] = 1;
    p.blas.transpose_b[0] = 0;
    p.blas.transpose_b[1] = 1;
    const ccv_nnc_cmd_t gemm = ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, p, 0);
    ccv_nnc_tensor_t* in[2] = {a, b};
    const double ours = median_ms([&] { ccv_nnc_cmd_exec(gemm, ccv_nnc_no_hint, 0, in, 2, &c, 1, nullptr); });
    const float alpha = 1, beta = 0;
    const double peer = median_ms([&] {
      cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, b->data.f32, K, a->data.f32, K, &beta, c->data.f32, N);
      cudaDeviceSynchronize();
    });
    char name[64];
    std::snprintf(name, sizeof(name), "%d x %d x %d", M, N, K);
    std::printf("%-22s %12.4f %12.4f %8.2f %10.1f\n", name, ours, peer, ours / peer, 2.0 * M * N * K / (ours * 1e-3) / 1e12);
    ccv_nnc_tensor_free(a);
    ccv_nnc_tensor_free(b);
    ccv_nnc_tensor_free(c);
  }
  cublasDestroy(h);
  return 0;
}
