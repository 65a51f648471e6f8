// The pretend GPU's test hooks (test/unit/fakegpu/fakegpu.hpp) over the
// emulated CUDA module instead of the pretend one, so that
// test/unit/fakegpu/fakegpu_test.cpp (models, the dynamic graph, data
// parallelism, persistence, dataframes on GPUs) runs unchanged against the
// real module's backends, allocator, streams and transfers, on the emulated
// runtime's two devices (test_fakegpu_emu, tools/gpu-emu/CMakeLists.txt).
// What the emulated runtime cannot do — refuse cuDNN calls on demand, crash
// on a host read of device memory — the hooks do not pretend: the tests
// that need it are left out (emu_main.cpp).
#include <cuda_runtime.h>

#include <cstdio>

#include "emu_hooks.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/fakegpu/fakegpu.hpp"

namespace emu {
bool cuda_registered();  // emu_register.cpp
}  // namespace emu

namespace nnc_fakegpu {

bool install(int devices, bool) {
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess || have != devices) {
    std::fprintf(stderr, "gpu-emu: the tests ask for %d devices, the emulated runtime has %d (EMU_DEVICES)\n", devices,
                 have);
    return false;
  }
  return emu::cuda_registered();
}

size_t bytes_in_use(int device) {
  ccv_nnc_gpu_memory_stats_t s{};
  return ccv_nnc_gpu_memory_stats(device, &s) == 0 ? s.in_use : 0;
}
size_t allocations(int device) {
  ccv_nnc_gpu_memory_stats_t s{};
  return ccv_nnc_gpu_memory_stats(device, &s) == 0 ? static_cast<size_t>(s.allocations) : 0;
}
// Kernels, library products, copies and fills: the pretend GPU counts a transfer as a kernel.
size_t kernels_run() { return static_cast<size_t>(emu::work_run()); }
size_t kernels_queued() { return static_cast<size_t>(emu::stream_launch_count()); }
void set_stream_order_seed(uint32_t seed) { emu::set_stream_order_seed(seed); }
// Not emulated (the tests that use it are left out): refusals on demand.
void set_declining(uint32_t, int, uint32_t) {}
size_t declines() { return 0; }
size_t pinned_bytes() { return emu::pinned_bytes(); }

}  // namespace nnc_fakegpu
