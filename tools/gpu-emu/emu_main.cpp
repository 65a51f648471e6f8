// GPU_REF under CPU emulation (design: CMakeLists.txt here): runs the GPU
// tests of test/unit/cuda that reach only what is emulated, with the CUDA
// module registered by emu_register.cpp. The tests that need what
// is not emulated are left out HERE, each with its reason (kExcluded); an
// explicit --gtest_filter on the command line replaces the whole selection.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "emu_hooks.hpp"

namespace emu {
bool cuda_registered();  // emu_register.cpp
}  // namespace emu

namespace {

struct Exclusion {
  const char* pattern;  // gtest filter pattern
  const char* reason;
};
#if EMU_FAKEGPU_SUITE
// test_fakegpu_emu: the pretend GPU's tests (test/unit/fakegpu) that need
// what the emulated runtime does not do, and why.
const Exclusion kExcluded[] = {
    {"FakeGpuDeathTest.*", "emulated device memory is host memory: a host read of it cannot crash"},
    {"FakeGpu.ARefusedCallRunsOnTheNextBackend:FakeGpu.AGraphNodeKeepsTheBackendItFellBackTo:"
     "FakeGpu.ModelTrainsWhenItsConvolutionsAreRefused",
     "cuDNN refusing calls on demand (nnc_fakegpu::set_declining) is the pretend GPU's; the Cudnn tests "
     "check the real refusals"},
};
#else
// The GPU tests that do not run under emulation, and why.
const Exclusion kExcluded[] = {
    {"CudaTrain.ReferenceNetworkTrainsOnTheGpuAsOnTheCpu",
     "400 steps of the reference network at batch 64 on the emulated GPU take too long for CI; "
     "CudaTrain.FirstStepsMatchTheCpuStepByStep runs four"},
};
#endif

// Left out as well with EMU_EXACT_MEMORY=1, where each tensor is an
// allocation of its own instead of the caching allocator's.
const Exclusion kExcludedExact[] = {
    {"GpuAllocator.*", "they check the caching allocator, which EMU_EXACT_MEMORY=1 replaces"},
};

// Left out as well when EMU_MAX_BLOCKS caps grids: kernels that need the grid
// they launch (one partial result per block of a fixed grid, read back whole).
const Exclusion kExcludedCapped[] = {
    {"GpuRefMisc.Histogram*",
     "HISTOGRAM's statistics pass (misc_kernels.cu, hist_stats_kernel) writes one partial per "
     "block of a fixed grid of kStatsBlocks and its final pass reads them all"},
};

// Work a test left queued on the emulated streams runs when it ends, so that
// its effects (a late write into memory the next test is handed) stay with
// it; it is named, since a test usually waits for what it queued.
class RunLeftoverWork : public testing::EmptyTestEventListener {
  void OnTestEnd(const testing::TestInfo& t) override {
    const size_t left = emu::queued_work();
    if (left == 0) return;
    std::printf("gpu-emu: %s.%s left %zu operations queued; they run now\n", t.test_suite_name(), t.name(), left);
    emu::finish_device(-1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool explicit_filter = false;
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "--gtest_filter", 14) == 0) explicit_filter = true;
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new RunLeftoverWork);
  if (!emu::cuda_registered()) {
    std::fprintf(stderr, "gpu-emu: the CUDA module could not be registered before the library started\n");
    return 1;
  }
  if (!explicit_filter) {
    std::string filter = "*-";
    for (const Exclusion& e : kExcluded) {
      if (filter.back() != '-') filter += ':';
      filter += e.pattern;
    }
    if (emu::env_flag("EMU_EXACT_MEMORY"))
      for (const Exclusion& e : kExcludedExact) filter += std::string(":") + e.pattern;
    const char* capped = std::getenv("EMU_MAX_BLOCKS");
    if (capped && std::atoi(capped) > 0)
      for (const Exclusion& e : kExcludedCapped) filter += std::string(":") + e.pattern;
    testing::GTEST_FLAG(filter) = filter;
    std::printf("gpu-emu: %zu test patterns left out (their reasons: tools/gpu-emu/emu_main.cpp)\n",
                sizeof(kExcluded) / sizeof(kExcluded[0]));
  }
  return RUN_ALL_TESTS();
}
