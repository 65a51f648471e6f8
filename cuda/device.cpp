// Device memory and cuBLAS handles; the module's registration.
#include <mutex>
#include <vector>

#include "core/device.hpp"
#include "core/registry.hpp"
#include "cuda/cuda.hpp"

namespace nnc::cuda {

cudaError_t launch_broadcast_rows(float* c, const float* bias, int rows, int cols);

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

void broadcast_rows(float* c, const float* bias, int rows, int cols) {
  NNC_CUDA_CHECK(launch_broadcast_rows(c, bias, rows, cols), "GEMM_FORWARD (GPU_CUBLAS)");
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

std::mutex g_handles_mutex;
// Destroyed at exit (errors ignored: the runtime may be shutting down too).
struct Handles {
  std::vector<cublasHandle_t> v;
  ~Handles() {
    for (cublasHandle_t h : v)
      if (h) cublasDestroy(h);
  }
};
Handles g_handles_holder;
std::vector<cublasHandle_t>& g_handles = g_handles_holder.v;

}  // namespace

cublasHandle_t cublas_handle(int device) {
  const std::lock_guard<std::mutex> lock(g_handles_mutex);
  if (static_cast<size_t>(device) >= g_handles.size()) g_handles.resize(static_cast<size_t>(device) + 1, nullptr);
  if (!g_handles[static_cast<size_t>(device)]) {
    NNC_CUDA_CHECK(cudaSetDevice(device), "cuBLAS");
    NNC_CUDA_CHECK(cublasCreate(&g_handles[static_cast<size_t>(device)]), "cuBLAS");
  }
  return g_handles[static_cast<size_t>(device)];
}

void register_transfer(Registry& r);
void register_gemm(Registry& r);
void register_ewgpu(Registry& r);
void register_cudnn(Registry& r);  // cudnn.cpp (cudnn_none.cpp without cuDNN)
void register_nccl(Registry& r);   // nccl.cpp (nccl_none.cpp without NCCL)

}  // namespace nnc::cuda

namespace nnc {

// Called from register_all_families (lib/cmd/families.cpp) in CUDA builds.
void register_cuda(Registry& r) {
  set_device_memory(&cuda::kDeviceMemory);
  cuda::register_transfer(r);
  cuda::register_gemm(r);
  cuda::register_ewgpu(r);
  cuda::register_cudnn(r);
  cuda::register_nccl(r);
}

}  // namespace nnc
