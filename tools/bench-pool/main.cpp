// bench-pool: the cost of one parallel loop on the library's pool
// (pthreadpool through nnc::parallel_for) against OpenMP, for an empty body
// (pure dispatch) and for y = a + b over sizes from 16K to 16M floats.
#include <cstdio>
#include <vector>

#include "bench.hpp"
#include "core/parallel.hpp"
#ifdef NNC_BENCH_OPENMP
#include <omp.h>
#endif

int main() {
  const size_t threads = nnc::thread_count();
  std::printf("threads: %zu (pool) ", threads);
#ifdef NNC_BENCH_OPENMP
  omp_set_num_threads(static_cast<int>(threads));
  std::printf("/ %d (OpenMP)\n", omp_get_max_threads());
#else
  std::printf("(OpenMP not found)\n");
#endif
  nnc_bench::Table table("parallel loops: NNC pool (pthreadpool) vs OpenMP", "OpenMP");
  volatile size_t sink = 0;
  const double pool_empty = nnc_bench::time_us_per_call([&] {
    nnc::parallel_for(threads * 64, 1, [&](size_t b, size_t e) { sink = sink + (e - b); });
  }, 200000) / 1000.0;
  double omp_empty = -1;
#ifdef NNC_BENCH_OPENMP
  omp_empty = nnc_bench::time_us_per_call([&] {
#pragma omp parallel for
    for (size_t i = 0; i < threads * 64; i++) sink = sink + 1;
  }, 200000) / 1000.0;
#endif
  table.row("empty loop (dispatch only)", pool_empty, omp_empty);
  for (size_t n : {size_t{1} << 14, size_t{1} << 18, size_t{1} << 22, size_t{1} << 24}) {
    std::vector<float> a(n, 1.f), b(n, 2.f), y(n);
    const double pool = nnc_bench::time_ms([&] {
      nnc::parallel_for(n, 4096, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; i++) y[i] = a[i] + b[i];
      });
    });
    double omp = -1;
#ifdef NNC_BENCH_OPENMP
    omp = nnc_bench::time_ms([&] {
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    });
#endif
    char name[64];
    std::snprintf(name, sizeof(name), "y = a + b, %zu floats", n);
    table.row(name, pool, omp);
  }
  return 0;
}
