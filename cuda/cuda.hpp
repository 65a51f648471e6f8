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

// Device memory ordered on the CUDA stream `s` (the module's allocator,
// device.cpp): a block from device_alloc_on may be used by work queued on `s`
// at once; after device_free_on it may serve later work on the same stream at
// once, and other streams only once `s` has passed the free. Throws nnc::Error
// (CCV_NNC_EXEC_OOM) when the device has no room.
void* device_alloc_on(int device, size_t bytes, cudaStream_t s, const char* what);
void device_free_on(int device, void* p);

// A block of device_alloc_on for the length of a scope, on the current
// device (the one stream_of made current). Empty for 0 bytes.
class StreamBlock {
 public:
  StreamBlock(size_t bytes, cudaStream_t s, const char* what) {
    if (bytes == 0) return;
    NNC_CUDA_CHECK(cudaGetDevice(&device_), what);
    p_ = device_alloc_on(device_, bytes, s, what);
  }
  ~StreamBlock() { release(); }
  StreamBlock(const StreamBlock&) = delete;
  StreamBlock& operator=(const StreamBlock&) = delete;
  void* get() const { return p_; }
  void release() {
    if (p_) device_free_on(device_, p_);
    p_ = nullptr;
  }

 private:
  int device_ = 0;
  void* p_ = nullptr;
};

}  // namespace nnc::cuda
