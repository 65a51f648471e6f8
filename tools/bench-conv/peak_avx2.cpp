// The shared FMA peak loop (nnc_bench::fma_peak_gflops), compiled here with
// AVX2 + FMA: its lambda does not inherit the function's target attribute.
// main.cpp calls this only when the CPU has both.
#include "bench.hpp"

double peak_avx2_gflops(int threads) { return nnc_bench::fma_peak_gflops(threads); }
