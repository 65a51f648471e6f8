// What the emulated runtime (emu_runtime.cpp) offers its own tools beyond
// CUDA's API: counts of launches and runtime calls, and a switch that keeps
// launches from running (host-cost-emu measures the host's own cost with it).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace emu {

// A runtime or cuBLAS entry point was called (`name`: its __func__).
void count_api(const char* name);
// Each entry point's calls so far, by name, in first-call order.
std::vector<std::pair<std::string, unsigned long long>> api_counts();
// Kernel launches (and emulated cuBLAS products) that passed their checks.
unsigned long long launch_count();
void count_launch();
// Launches are checked and counted but nothing runs (EMU_SKIP_KERNELS=1 sets
// it at start): results are garbage, the host's own work is what is left.
void set_skip_kernels(bool skip);
bool skipping_kernels();

}  // namespace emu
