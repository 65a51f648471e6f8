// The CUDA module's shared pieces: status checks that turn every CUDA and
// cuBLAS failure into an nnc::Error with a message (never compiled away), and
// the device kernels written in kernels.cu.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/error.hpp"

namespace nnc::cuda {

inline void check(cudaError_t e, const char* what, const char* call) {
  if (e != cudaSuccess)
    fail(e == cudaErrorMemoryAllocation ? CCV_NNC_EXEC_OOM : CCV_NNC_EXEC_INVALID, "%s: %s failed: %s (%s)", what, call,
         cudaGetErrorString(e), cudaGetErrorName(e));
}
const char* cublas_status_name(cublasStatus_t s);
inline void check(cublasStatus_t s, const char* what, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(CCV_NNC_EXEC_INVALID, "%s: %s failed: %s", what, call, cublas_status_name(s));
}
#define NNC_CUDA_CHECK(call, what) ::nnc::cuda::check((call), (what), #call)

// The cuBLAS handle of a device (made on first use, kept for the process).
cublasHandle_t cublas_handle(int device);

// C (rows x cols, row-major, contiguous) = each row of C set to bias (cols).
void broadcast_rows(float* c, const float* bias, int rows, int cols);

}  // namespace nnc::cuda
