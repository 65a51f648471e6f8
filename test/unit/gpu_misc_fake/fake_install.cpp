// The pretend GPU (test/unit/fakegpu) installed before anything builds the
// command registry, for test/unit/cuda/misc_gpu_test.cpp in builds without CUDA.
#include "fakegpu.hpp"

namespace {
const bool g_installed = nnc_fakegpu::install(1);
}  // namespace
