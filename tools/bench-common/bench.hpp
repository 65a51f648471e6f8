// Shared pieces of the benchmark programs: timing by median of repeated runs,
// the machine's FMA peak, and a table that prints ours, the peer's and the ratio.
//
//   nnc_bench::Table table("convolution", "PyTorch");
//   table.row("3x3 N=32 C=64 56x56", nnc_bench::time_ms([&] { run_ours(); }),
//             nnc_bench::time_ms([&] { run_peer(); }));
//
// A ratio is ours / peer: below 1 we are faster. Benchmarks are programs, never
// tests: nothing here asserts a time.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace nnc_bench {

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

}  // namespace nnc_bench
