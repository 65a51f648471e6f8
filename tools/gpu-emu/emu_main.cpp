// GPU_REF under CPU emulation (design: CMakeLists.txt here): registers the
// CUDA module (cuda/device.cpp's register_cuda, compiled against the
// emulated runtime) before the library starts, and runs the GPU tests of
// test/unit/cuda that reach only GPU_REF kernels. The tests that need what
// is not emulated are left out HERE, each with its reason (kExcluded); an
// explicit --gtest_filter on the command line replaces the whole selection.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"

namespace nnc {
void register_cuda(Registry& r);  // cuda/device.cpp
namespace cuda {
// GPU_CUBLAS GEMM (cuda/gemm.cpp) needs cuBLAS: not registered here.
void register_gemm(Registry&) {}
}  // namespace cuda
}  // namespace nnc

namespace {

// EMU_EXACT_MEMORY=1: each GPU tensor a malloc of its own exact size instead
// of a block of the caching allocator's segments, so that a sanitizer build
// (AddressSanitizer) sees a kernel reading or writing past a tensor.
void* exact_alloc(int device, size_t bytes) {
  if (device != 0) nnc::fail(CCV_NNC_EXEC_INVALID, "gpu-emu: device %d does not exist (1 device)", device);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) nnc::fail(CCV_NNC_EXEC_OOM, "gpu-emu: cannot allocate %zu bytes", bytes);
  return p;
}
void exact_free(int, void* p) { std::free(p); }
int one_device() { return 1; }
const nnc::DeviceMemory kExactMemory = {exact_alloc, exact_free, one_device};

const bool g_registered = nnc::set_late_registration([](nnc::Registry& r) {
  nnc::register_cuda(r);
  const char* e = std::getenv("EMU_EXACT_MEMORY");
  if (e && *e && std::strcmp(e, "0") != 0) nnc::set_device_memory(&kExactMemory);
});

struct Exclusion {
  const char* pattern;  // gtest filter pattern
  const char* reason;
};
// The GPU tests that do not run under emulation, and why.
const Exclusion kExcluded[] = {
    {"Cuda.Gemm*", "GEMM is GPU_CUBLAS (cuBLAS is not emulated)"},
    {"GemmGpu.*", "GEMM is GPU_CUBLAS (cuBLAS is not emulated)"},
    {"Cuda.CompiledGraphBackwardOnGpuMatchesCpu", "its graph has a GEMM node (cuBLAS)"},
    {"CudaSchedule.*", "the wide graph ends in a GEMM (cuBLAS); and its point, work spread over streams, needs "
                       "asynchronous streams"},
    {"CudaTrain.*", "the reference network has convolutions (cuDNN) and dense layers (cuBLAS)"},
    {"Cudnn.*", "GPU_CUDNN (cuDNN is not emulated)"},
    {"Nccl.*", "GPU_NCCL (NCCL is not emulated)"},
    {"GpuStream.*", "streams and events: the emulated runtime runs everything at once, so a stream never has work "
                    "pending (KernelOnAStream... waits for that forever) and ordering between streams is not tested; "
                    "CublasGemm... needs cuBLAS"},
    {"CudaPinned.*", "transfers queued on a stream through pinned memory: the emulated stream is synchronous, so the "
                     "test cannot fail"},
    {"GpuAllocator.*", "the caching allocator over cudaMalloc: here cudaMalloc is host malloc with no device limit, "
                       "which says nothing about the device"},
};

}  // namespace

int main(int argc, char** argv) {
  bool explicit_filter = false;
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "--gtest_filter", 14) == 0) explicit_filter = true;
  testing::InitGoogleTest(&argc, argv);
  if (!g_registered) {
    std::fprintf(stderr, "gpu-emu: the CUDA module could not be registered before the library started\n");
    return 1;
  }
  if (!explicit_filter) {
    std::string filter = "*-";
    for (const Exclusion& e : kExcluded) {
      if (filter.back() != '-') filter += ':';
      filter += e.pattern;
    }
    testing::GTEST_FLAG(filter) = filter;
    std::printf("gpu-emu: %zu test patterns left out (their reasons: tools/gpu-emu/emu_main.cpp)\n",
                sizeof(kExcluded) / sizeof(kExcluded[0]));
  }
  return RUN_ALL_TESTS();
}
