// The same FMA peak loop as nnc_bench::fma_peak_gflops with 16-lane AVX-512
// vectors (the width NNC's convolution kernels use where the CPU has it);
// main.cpp calls this only when the CPU has AVX-512F.
#include <immintrin.h>

#include <chrono>
#include <thread>
#include <vector>

double peak_avx512_gflops(int threads) {
  auto one = [](double* out) {
    __m512 acc[12];
    for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps(1.0f + 1e-7f * static_cast<float>(i));
    const __m512 m = _mm512_set1_ps(0.9999999f), a = _mm512_set1_ps(1e-7f);
    const long iters = 10000000;
    const auto s = std::chrono::steady_clock::now();
    for (long k = 0; k < iters; k++)
      for (int i = 0; i < 12; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count();
    float sink = 0;
    for (int i = 0; i < 12; i++) sink += _mm512_reduce_add_ps(acc[i]);
    *out = (sink == 12345.f ? 0 : 1) * iters * 12.0 * 16 * 2 / sec / 1e9;
  };
  std::vector<double> results(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) pool.emplace_back(one, &results[static_cast<size_t>(t)]);
  for (auto& t : pool) t.join();
  double total = 0;
  for (double r : results) total += r;
  return total;
}
