// Device memory and cuBLAS handles; the module's registration.
#include <mutex>
#include <vector>

#include "core/device.hpp"
#include "core/registry.hpp"
#include "cuda/cuda.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

cudaError_t launch_broadcast_rows(float* c, const float* bias, int rows, int cols, cudaStream_t s);

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "an unknown cuBLAS status";
  }
}

void broadcast_rows(float* c, const float* bias, int rows, int cols, cudaStream_t s) {
  NNC_CUDA_CHECK(launch_broadcast_rows(c, bias, rows, cols, s), "GEMM_FORWARD (GPU_CUBLAS)");
}

namespace {

void* device_alloc(int device, size_t bytes) {
  NNC_CUDA_CHECK(cudaSetDevice(device), "ccv_nnc_tensor_new");
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e != cudaSuccess)
    fail(CCV_NNC_EXEC_OOM, "ccv_nnc_tensor_new: cannot allocate %zu bytes on GPU %d: %s", bytes, device, cudaGetErrorString(e));
  return p;
}

void device_free(int device, void* p) {
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(p);
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the sticky status
    return 0;
  }
  return n;
}

const DeviceMemory kDeviceMemory = {device_alloc, device_free, device_count};

}  // namespace

void* device_alloc_on(int device, size_t bytes, cudaStream_t, const char* what) {
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    cudaGetLastError();
    fail(CCV_NNC_EXEC_OOM, "%s: cannot allocate %zu bytes on GPU %d: %s", what, bytes, device, cudaGetErrorString(e));
  }
  return p;
}

void device_free_on(int device, void* p) { device_free(device, p); }

void register_transfer(Registry& r);
void register_gemm(Registry& r);
void register_ew(Registry& r);

}  // namespace nnc::cuda

namespace nnc {

// Called from register_all_families (lib/cmd/families.cpp) in CUDA builds.
void register_cuda(Registry& r) {
  set_device_memory(&cuda::kDeviceMemory);
  cuda::install_stream_hooks();
  cuda::register_transfer(r);
  cuda::register_gemm(r);
  cuda::register_ew(r);
}

}  // namespace nnc
