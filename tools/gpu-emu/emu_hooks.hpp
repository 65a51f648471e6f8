// What the emulated runtime (emu_runtime.cpp) offers its own tools beyond
// CUDA's API: counts of launches and runtime calls, and a switch that keeps
// launches from running (host-cost-emu measures the host's own cost with it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace emu {

// An EMU_* switch: set, and not "0".
bool env_flag(const char* name);

// The call counter of the entry point `name` (its __func__), made on its
// first call; EMU_API_CALL() at the top of an entry point counts the call (a
// relaxed increment after the first: host-cost-emu times the host around it).
std::atomic<unsigned long long>* api_counter(const char* name);
#define EMU_API_CALL()                                                                        \
  do {                                                                                        \
    static std::atomic<unsigned long long>* const emu_calls_ = ::emu::api_counter(__func__); \
    emu_calls_->fetch_add(1, std::memory_order_relaxed);                                      \
  } while (0)
// Each entry point's calls so far, by name, in first-call order.
std::vector<std::pair<std::string, unsigned long long>> api_counts();
// Kernel launches (and emulated cuBLAS products) that passed their checks.
unsigned long long launch_count();
// Of those, the ones queued on a stream other than the default one.
unsigned long long stream_launch_count();
// Copies and fills (cudaMemcpy*, cudaMemset*) made.
unsigned long long copy_count();
// Kernels, copies, fills and library products that have run (queued work
// counts once it has run; launch_count and copy_count count it as queued).
unsigned long long work_run();
// Marks [p, p + bytes) as device memory of `device` (bytes 0: forgets the
// range starting at p), for memory the emulated cudaMalloc did not hand out
// (EMU_EXACT_MEMORY's tensors): copies and fills check their ends against it.
void device_range(const void* p, size_t bytes, int device);
// Host bytes registered with cudaHostRegister and not unregistered.
size_t pinned_bytes();
// Launches are checked and counted but nothing runs (EMU_SKIP_KERNELS=1 sets
// it at start): results are garbage, the host's own work is what is left.
void set_skip_kernels(bool skip);
bool skipping_kernels();
// A library's product, queued on `streams` (cudaStream_t; several for a
// collective: one operation after each one's work), counted as a launch on
// each. `work` runs when the streams' work does, so it must own copies of
// what it reads from the call's arguments but device memory: descriptors,
// host scalars (alpha, beta). With EMU_SKIP_KERNELS it never runs (and
// need not be built: NULL).
void library_work(const void* const* streams, size_t count, std::function<void()> work);
// library_work on one stream, building the work only when it will run
// (host-cost-emu times the host around the call).
template <class F>
void library_call(const void* stream, F&& work) {
  if (skipping_kernels())
    library_work(&stream, 1, nullptr);
  else
    library_work(&stream, 1, std::function<void()>(std::forward<F>(work)));
}
// Queued work ready at once runs in a random order from `seed` from now on
// (emu_runtime.cpp: streams run their work late).
void set_stream_order_seed(uint64_t seed);
// Operations queued on streams and not yet run.
size_t queued_work();
// Runs the work queued on `device` (as cudaDeviceSynchronize, without
// changing the calling thread's current device); -1: on every device.
void finish_device(int device);

}  // namespace emu
