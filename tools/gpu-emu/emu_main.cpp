// GPU_REF under CPU emulation (design: CMakeLists.txt here): registers the
// CUDA module (cuda/device.cpp's register_cuda, compiled against the
// emulated runtime) before the library starts, and runs the GPU tests of
// test/unit/cuda that reach only GPU_REF kernels. The tests that need what
// is not emulated are left out HERE, each with its reason (kExcluded); an
// explicit --gtest_filter on the command line replaces the whole selection.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
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

// EMU_EXACT_MEMORY=1: each GPU tensor an allocation of its own instead of a
// block of the caching allocator's segments, so that a kernel reading or
// writing past a tensor is caught: under AddressSanitizer a malloc of the
// exact size; otherwise the tensor ends (its size rounded up to 8 bytes) where
// an inaccessible page begins, and an access there stops the program with a
// message (tools/test runs one order this way).
#if defined(__SANITIZE_ADDRESS__)
void* exact_alloc(int device, size_t bytes) {
  if (device != 0) nnc::fail(CCV_NNC_EXEC_INVALID, "gpu-emu: device %d does not exist (1 device)", device);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) nnc::fail(CCV_NNC_EXEC_OOM, "gpu-emu: cannot allocate %zu bytes", bytes);
  return p;
}
void exact_free(int, void* p) { std::free(p); }
void install_fault_message() {}
#else
struct Mapping {
  char* base;
  size_t length;
};
std::mutex g_mutex;
std::map<void*, Mapping> g_mappings;
size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
void* exact_alloc(int device, size_t bytes) {
  if (device != 0) nnc::fail(CCV_NNC_EXEC_INVALID, "gpu-emu: device %d does not exist (1 device)", device);
  const size_t data = (bytes + 7) / 8 * 8, pages = (data + page_size() - 1) / page_size() * page_size();
  void* m = mmap(nullptr, pages + page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) nnc::fail(CCV_NNC_EXEC_OOM, "gpu-emu: cannot map %zu bytes", bytes);
  char* base = static_cast<char*>(m);
  mprotect(base + pages, page_size(), PROT_NONE);
  void* p = base + pages - data;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_mappings[p] = Mapping{base, pages + page_size()};
  return p;
}
void exact_free(int, void* p) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_mappings.find(p);
  if (it == g_mappings.end()) return;
  munmap(it->second.base, it->second.length);
  g_mappings.erase(it);
}
void on_fault(int sig) {
  static const char msg[] =
      "gpu-emu: memory fault (EMU_EXACT_MEMORY=1: an access past the end of a GPU tensor, if it was in a kernel)\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}
void install_fault_message() {
  signal(SIGSEGV, on_fault);
  signal(SIGBUS, on_fault);
}
#endif
int one_device() { return 1; }
const nnc::DeviceMemory kExactMemory = {exact_alloc, exact_free, one_device};

const bool g_registered = nnc::set_late_registration([](nnc::Registry& r) {
  nnc::register_cuda(r);
  const char* e = std::getenv("EMU_EXACT_MEMORY");
  if (e && *e && std::strcmp(e, "0") != 0) {
    nnc::set_device_memory(&kExactMemory);
    install_fault_message();
  }
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
    {"CudaSchedule.*",
     "the wide graph ends in a GEMM (cuBLAS); and its point, work spread over streams, needs "
     "asynchronous streams"},
    {"CudaTrain.*", "the reference network has convolutions (cuDNN) and dense layers (cuBLAS)"},
    {"Cudnn.*", "GPU_CUDNN (cuDNN is not emulated)"},
    {"CudnnGraph.*", "GPU_CUDNN through cuDNN's graph API (cuDNN is not emulated)"},
    {"ConvTransposeGpu.*", "transposed convolution is GPU_CUDNN (cuDNN is not emulated)"},
    {"Nccl.*", "GPU_NCCL (NCCL is not emulated)"},
    {"GpuNcclBackward.*", "GPU_NCCL (NCCL is not emulated)"},
    {"GpuStream.*",
     "streams and events: the emulated runtime runs all work at once, so a stream never has work "
     "pending (KernelOnAStream... and SignalBetweenTwoGpuStreams... wait for that forever) and the "
     "ordering between streams they check cannot fail; CublasGemm... and the graph tests need cuBLAS"},
    {"CudaPinned.*",
     "transfers queued on a stream through pinned memory: the emulated stream is synchronous, so the "
     "test cannot fail"},
    {"GpuAllocator.*",
     "the caching allocator over cudaMalloc: here cudaMalloc is host malloc with no device limit, "
     "which says nothing about the device"},
};

// Left out as well when EMU_MAX_BLOCKS caps grids: kernels that need the grid
// they launch (one partial result per block of a fixed grid, read back whole).
const Exclusion kExcludedCapped[] = {
    {"GpuRefMisc.Histogram*",
     "HISTOGRAM's statistics pass (misc_kernels.cu, hist_stats_kernel) writes one partial per "
     "block of a fixed grid of kStatsBlocks and its final pass reads them all"},
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
    const char* capped = std::getenv("EMU_MAX_BLOCKS");
    if (capped && std::atoi(capped) > 0)
      for (const Exclusion& e : kExcludedCapped) filter += std::string(":") + e.pattern;
    testing::GTEST_FLAG(filter) = filter;
    std::printf("gpu-emu: %zu test patterns left out (their reasons: tools/gpu-emu/emu_main.cpp)\n",
                sizeof(kExcluded) / sizeof(kExcluded[0]));
  }
  return RUN_ALL_TESTS();
}
