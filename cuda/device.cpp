// Device memory from the caching allocator; the module's registration.
#include <cstdlib>

#include "core/caching_allocator.hpp"
#include "core/device.hpp"
#include "core/registry.hpp"
#include "cuda/cuda.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

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

namespace {

int device_count();

// The caching allocator's view of the device (core/caching_allocator.hpp).
void* raw_alloc(int device, size_t bytes) {
  const int devices = device_count();
  NNC_CHECK(device >= 0 && device < devices, "device allocator: GPU device %d does not exist (%d GPU%s found)", device,
            devices, devices == 1 ? "" : "s");
  NNC_CUDA_CHECK(cudaSetDevice(device), "device allocator");
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: the allocator releases its cache and retries
    return nullptr;
  }
  NNC_CUDA_CHECK(e, "device allocator");
  return p;
}

void raw_free(int device, void* p) {
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(p);
  cudaGetLastError();  // at exit the runtime may be going away: nothing to do about it
}

void* record(int device, void* stream) {
  static const char* what = "device allocator";
  NNC_CUDA_CHECK(cudaSetDevice(device), what);
  cudaEvent_t e = nullptr;
  NNC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  const cudaError_t r = cudaEventRecord(e, static_cast<cudaStream_t>(stream));
  if (r != cudaSuccess) {
    cudaEventDestroy(e);
    check(r, what, "cudaEventRecord");
  }
  return e;
}

bool done(void* e) {
  const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
  if (r == cudaErrorNotReady) return false;
  if (r != cudaSuccess) cudaGetLastError();  // a failed stream: its work is over either way
  return true;
}

void wait(void* e) {
  if (cudaEventSynchronize(static_cast<cudaEvent_t>(e)) != cudaSuccess) cudaGetLastError();
}

void release(void* e) {
  cudaEventDestroy(static_cast<cudaEvent_t>(e));
  cudaGetLastError();
}

CachingAllocator* g_allocator = nullptr;

// Made on first use and never destroyed; its memory goes back at exit. The
// runtime is initialised first, so that its own teardown (registered as it
// starts) runs after ours.
CachingAllocator& allocator() {
  static CachingAllocator* a = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) cudaGetLastError();
    g_allocator = new CachingAllocator(CachingBackend{raw_alloc, raw_free, record, done, wait, release});
    std::atexit([] { g_allocator->release_all(); });
    return g_allocator;
  }();
  return *a;
}

void* device_alloc(int device, size_t bytes) { return allocator().allocate(device, bytes, nullptr); }

void device_free(int device, void* p) {
  (void)device;
  try {
    allocator().deallocate(p);
  } catch (...) {
    // Not ours (or freed twice): nothing sensible to do in a free.
  }
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the sticky status
    return 0;
  }
  return n;
}

bool memory_stats(int device, ccv_nnc_gpu_memory_stats_t* out) {
  const CachingStats s = allocator().stats(device);
  out->in_use = s.in_use;
  out->requested = s.requested;
  out->reserved = s.reserved;
  out->cached = s.cached;
  out->peak_in_use = s.peak_in_use;
  out->peak_reserved = s.peak_reserved;
  out->allocations = s.allocations;
  out->segments = s.segments;
  out->hits = s.hits;
  out->misses = s.misses;
  out->oom_retries = s.oom_retries;
  out->released = s.released;
  return true;
}

size_t memory_release_cached(int device) { return allocator().release_cached(device); }

void pin_host(void* host, size_t bytes) {
  NNC_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterDefault), "ccv_nnc_tensor_pin_memory (cudaHostRegister)");
}

void unpin_host(void* host) {
  if (cudaHostUnregister(host) != cudaSuccess) cudaGetLastError();  // in a free: nothing else to do
}

const DeviceMemory kDeviceMemory = {device_alloc, device_free, device_count, memory_stats, memory_release_cached, pin_host, unpin_host};

}  // namespace

void* device_alloc_on(int device, size_t bytes, cudaStream_t s, const char*) {
  // The legacy stream is the synchronous calls' stream: blocks for it are
  // free for everybody once freed, as those of tensors are.
  return allocator().allocate(device, bytes, s == cudaStreamLegacy ? nullptr : static_cast<void*>(s));
}

void device_free_on(int, void* p) { device_free(0, p); }

void register_transfer(Registry& r);
void register_gemm(Registry& r);
void register_ewgpu(Registry& r);
void register_gpu_more(Registry& r);  // more_gpu.cpp
void register_attn_gpu(Registry& r);  // attn_gpu.cpp
void register_gpu_misc(Registry& r);  // misc_gpu.cpp
void register_cnn_gpu(Registry& r);  // cnn_gpu.cpp
void register_cudnn(Registry& r);  // cudnn.cpp (cudnn_none.cpp without cuDNN)
void register_nccl(Registry& r);   // nccl.cpp (nccl_none.cpp without NCCL)
void install_nccl_across();        // nccl_across.cpp (nccl_across_none.cpp without NCCL)

}  // namespace nnc::cuda

namespace nnc {

// Called from register_all_families (lib/cmd/families.cpp) in CUDA builds.
void register_cuda(Registry& r) {
  set_device_memory(&cuda::kDeviceMemory);
  cuda::install_stream_hooks();
  cuda::register_transfer(r);
  cuda::register_gemm(r);
  cuda::register_ewgpu(r);
  cuda::register_gpu_more(r);
  cuda::register_attn_gpu(r);
  cuda::register_gpu_misc(r);
  cuda::register_cnn_gpu(r);
  cuda::register_cudnn(r);
  cuda::register_nccl(r);
  cuda::install_nccl_across();
}

}  // namespace nnc
