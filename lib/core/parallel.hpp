// The library's one thread pool, and the rule that keeps busy threads at or
// below the number of cores: a multi-threaded kernel (a parallel_for over the
// pool, or an OpenBLAS call, which uses OpenBLAS's own threads) runs only
// while holding the compute lock. Work from different streams therefore
// takes turns on the cores instead of oversubscribing them. Small kernels
// that run on the calling thread need no lock.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>

namespace nnc {

// Number of threads kernels may use (the cores of this machine, or
// NNC_NUM_THREADS from the environment when set at first use).
size_t thread_count();

// body must not throw (it runs on pool threads).
// Run body(begin, end) over [0, n) in chunks of at least `grain` items, on
// the pool. Runs inline when n is small, there is one thread, or the caller is
// already a pool worker (nested parallelism runs serially).
void parallel_for(size_t n, size_t grain, const std::function<void(size_t begin, size_t end)>& body);

// Orders this thread's streaming (non-temporal) stores before its later
// stores (SFENCE). parallel_for ends every chunk, and its inline run, with
// one, and so does every kernel run by ccv_nnc_cmd_exec: kernels write with
// streaming stores and leave the fence to these two places. A fence per row
// or per register tile instead stalls the loop on each one (ADD per channel
// on 32x64x56x56: 0.46 ms with a fence per row, 0.33 ms without).
void store_fence();

// Hold while calling a multi-threaded library (OpenBLAS).
std::unique_lock<std::recursive_mutex> compute_lock();

// Outputs of at least this many bytes are written with non-temporal
// (streaming) stores where a kernel can: far larger than the caches and not
// read again soon, so skipping the read of each line before its write pays.
constexpr size_t kStreamBytes = size_t{8} << 20;
// No kernel streams an output smaller than this (the activation loops stream
// runs from 64K floats, the others from kStreamBytes): ccv_nnc_cmd_exec owes
// the fence after a kernel only from here up, since a kernel may stream
// outside parallel_for (one thread, or one run below the parallel size).
constexpr size_t kStreamFloorBytes = size_t{256} << 10;

// CPU features, detected once with cpuinfo; NNC_NO_AVX512 (set, not "0")
// in the environment reports no AVX-512.
struct CpuFeatures {
  // AVX2 with FMA and F16C: the set every lib/cmd/*_avx2.cpp file is compiled
  // for (the compiler may use any of them there), so the one test before
  // calling into such a file. A CPU with AVX2 but no FMA reports false.
  bool avx2 = false;
  // The single extensions as cpuinfo reports them, for code that needs only one.
  bool fma3 = false;
  bool f16c = false;
  // AVX-512 F, BW, VL and DQ with FMA and F16C: the set every lib/cmd/*_avx512.cpp
  // file is compiled for (the compiler may use any of them there).
  bool avx512 = false;
};
const CpuFeatures& cpu_features();

}  // namespace nnc
