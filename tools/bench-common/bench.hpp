// Shared pieces of the benchmark programs: timing by median of repeated runs,
// the machine's FMA peak, and a table that prints ours, the peer's and the ratio.
//
//   nnc_bench::Table table("convolution", "PyTorch");
//   table.row("3x3 N=32 C=64 56x56", nnc_bench::time_ms([&] { run_ours(); }),
//             nnc_bench::time_ms([&] { run_peer(); }));
//
// A ratio is ours / peer: below 1 we are faster. Benchmarks are programs, never
// tests: nothing here asserts a time.
//
// Every benchmark opens with nnc_bench::header(), which gives the peer as many
// threads as NNC's pool has and prints one line a reader can compare runs by:
//
//   NNC kernels: AVX2 (NNC_NO_AVX512 set), 2 threads | PyTorch: 2 threads
//
// (with libtorch built in, nnc_bench::header_torch() does the setting itself).
// To run both sides on n threads: NNC_NUM_THREADS=n bench-xxx.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#ifdef NNC_HAVE_TORCH
#include <ATen/Parallel.h>
#endif

namespace nnc_bench {

// The instruction set NNC's CPU kernels run on this machine, decided as the
// library decides it (nnc::cpu_features, lib/core/parallel.cpp): AVX-512 F,
// BW, VL and DQ with FMA and F16C unless NNC_NO_AVX512 is set and not "0";
// else AVX2 with FMA and F16C; else the generic loops. The library keeps its
// own copy internal (only ccv_* is exported), hence this second reading.
enum class Isa { avx512, avx2, generic };
inline bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
inline Isa nnc_isa_kind() {
  const char* no512 = std::getenv("NNC_NO_AVX512");
  const bool off = no512 && *no512 && std::strcmp(no512, "0") != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (cpu_has_avx512() && !off) return Isa::avx512;
  return avx2 ? Isa::avx2 : Isa::generic;
}
inline std::string nnc_isa() {
  switch (nnc_isa_kind()) {
    case Isa::avx512: return "AVX-512";
    case Isa::avx2: return cpu_has_avx512() ? "AVX2 (NNC_NO_AVX512 set on an AVX-512 CPU)" : "AVX2 (no AVX-512 on this CPU)";
    default: return "generic (no AVX2 + FMA + F16C)";
  }
}

// NNC's kernel thread count, read as its pool reads it: NNC_NUM_THREADS when
// set to 1..4095, else the processors online.
inline int nnc_threads() {
  if (const char* env = std::getenv("NNC_NUM_THREADS")) {
    const long n = std::strtol(env, nullptr, 10);
    if (n > 0 && n < 4096) return static_cast<int>(n);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Gives the peer NNC's thread count (set_peer_threads(n) sets it and returns
// the count the peer then reports; empty when no peer is built in) and prints
// the shared header line. Returns the thread count.
inline int header(const std::string& peer, const std::function<int(int)>& set_peer_threads) {
  const int n = nnc_threads();
  std::string theirs = "not built in";
  if (set_peer_threads) theirs = std::to_string(set_peer_threads(n)) + " threads";
  std::printf("NNC kernels: %s, %d threads | %s: %s\n", nnc_isa().c_str(), n, peer.c_str(), theirs.c_str());
  std::fflush(stdout);
  return n;
}

// header() for the libtorch peer (at::set_num_threads; PyTorch's own default
// of one thread would otherwise make every ratio unfair). When NNC runs its
// AVX2 kernels on an AVX-512 CPU (NNC_NO_AVX512), PyTorch is held to AVX2
// too: its oneDNN primitives (convolution, GELU, ...) JIT AVX-512 code on
// such a CPU whatever ATen's own capability is, so without
// DNNL_MAX_CPU_ISA=AVX2 an "AVX2" row compared NNC's AVX2 kernel with
// oneDNN's AVX-512 one. Both variables are read when PyTorch first needs them,
// after this call; values already in the environment are kept (and printed).
inline int header_torch() {
#ifdef NNC_HAVE_TORCH
  std::string peer = "PyTorch";
  if (nnc_isa_kind() == Isa::avx2 && cpu_has_avx512()) {
    setenv("DNNL_MAX_CPU_ISA", "AVX2", 0);
    setenv("ATEN_CPU_CAPABILITY", "avx2", 0);
    peer += std::string(" (DNNL_MAX_CPU_ISA=") + std::getenv("DNNL_MAX_CPU_ISA") +
            ", ATEN_CPU_CAPABILITY=" + std::getenv("ATEN_CPU_CAPABILITY") + ")";
  }
  return header(peer, [](int n) {
    at::set_num_threads(n);
    return at::get_num_threads();
  });
#else
  return header("PyTorch", nullptr);
#endif
}

// Median wall time in milliseconds of `reps` runs of f after `warmup` runs;
// reps adapts so that the whole measurement takes about `budget_ms`.
inline double time_ms(const std::function<void()>& f, int warmup = 2, double budget_ms = 400, int min_reps = 5,
                      int max_reps = 1000) {
  // A pause first, so that the previous side's idle pool threads (they spin
  // a while before sleeping; OpenBLAS's for tens of milliseconds) have left
  // the cores; the warm-up runs then wake this side's.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (int i = 0; i < warmup; i++) f();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double once = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int reps = std::clamp(static_cast<int>(budget_ms / std::max(once, 1e-3)), min_reps, max_reps);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < reps; i++) {
    const auto s = std::chrono::steady_clock::now();
    f();
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

// Time of f per call in microseconds, for operations too small to time one by one.
inline double time_us_per_call(const std::function<void()>& f, long calls) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // as in time_ms
  for (long i = 0; i < calls / 10; i++) f();
  double best = INFINITY;
  for (int round = 0; round < 3; round++) {
    const auto s = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; i++) f();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count() / calls);
  }
  return best;
}

// One thread's FMA rate: 10 independent 8-lane chains (enough to cover the
// FMA latency on two ports). A plain function, not a lambda, so that the
// target attribute applies to it in a file compiled without -mavx2.
__attribute__((target("avx2,fma"))) inline void fma_peak_one(double* out) {
  __m256 acc[10];
  for (int i = 0; i < 10; i++) acc[i] = _mm256_set1_ps(1.0f + 1e-7f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.9999999f), a = _mm256_set1_ps(1e-7f);
  const long iters = 20000000;
  const auto s = std::chrono::steady_clock::now();
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < 10; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count();
  float sink = 0;
  for (int i = 0; i < 10; i++) sink += _mm256_cvtss_f32(acc[i]);
  *out = (sink == 12345.f ? 0 : 1) * iters * 10.0 * 8 * 2 / sec / 1e9;
}

// Single-precision AVX2 FMA peak of this machine in GFLOP/s over `threads`
// threads (AVX-512 machines reach twice this with 16-lane FMAs).
inline double fma_peak_gflops(int threads) {
  void (*one)(double*) = fma_peak_one;
  std::vector<double> results(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) pool.emplace_back(one, &results[static_cast<size_t>(t)]);
  for (auto& t : pool) t.join();
  double total = 0;
  for (double r : results) total += r;
  return total;
}

class Table {
 public:
  Table(std::string title, std::string peer) : title_(std::move(title)), peer_(std::move(peer)) {
    std::printf("\n%s\n%-44s %12s %12s %8s\n", title_.c_str(), "case", "NNC ms", (peer_ + " ms").c_str(), "ratio");
  }
  // peer_ms < 0: no peer in this build.
  void row(const std::string& name, double ours_ms, double peer_ms, const std::string& note = "") {
    if (peer_ms > 0)
      std::printf("%-44s %12.4f %12.4f %7.3fx %s\n", name.c_str(), ours_ms, peer_ms, ours_ms / peer_ms, note.c_str());
    else
      std::printf("%-44s %12.4f %12s %8s %s\n", name.c_str(), ours_ms, "-", "-", note.c_str());
    std::fflush(stdout);
  }

 private:
  std::string title_, peer_;
};

// Per-call costs on a shared machine: the minimum over many short samples,
// timed in the thread's own CPU time (time spent descheduled by other
// processes does not count), with the wall-clock minimum beside it.
inline double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
inline double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
struct Best {
  double cpu = 1e30, wall = 1e30;
};
// f runs `per` calls; the result is seconds per call.
template <class F>
Best best_of(int samples, double per, F&& f) {
  Best b;
  for (int i = 0; i < samples; i++) {
    const double c0 = thread_seconds(), w0 = wall_seconds();
    f();
    b.cpu = std::min(b.cpu, (thread_seconds() - c0) / per);
    b.wall = std::min(b.wall, (wall_seconds() - w0) / per);
  }
  return b;
}

}  // namespace nnc_bench
