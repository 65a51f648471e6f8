#include "core/parallel.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <cblas.h>
#include <cpuinfo.h>
#include <pthreadpool.h>

namespace nnc {

namespace {

thread_local bool t_in_pool = false;

std::recursive_mutex& compute_mutex() {
  static std::recursive_mutex m;
  return m;
}

size_t detect_threads() {
  if (const char* env = std::getenv("NNC_NUM_THREADS")) {
    const long n = std::strtol(env, nullptr, 10);
    if (n > 0 && n < 4096) return static_cast<size_t>(n);
  }
  size_t n = 0;
  if (cpuinfo_initialize()) n = cpuinfo_get_processors_count();
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

struct Pool {
  size_t threads;
  pthreadpool_t pool;
  Pool() : threads(detect_threads()), pool(nullptr) {
    if (threads > 1) pool = pthreadpool_create(threads);
    // OpenBLAS gets the same number of threads; it only ever runs under the
    // compute lock, so its threads and ours never run at once.
    openblas_set_num_threads(static_cast<int>(threads));
  }
  ~Pool() {
    if (pool) pthreadpool_destroy(pool);
  }
};

Pool& pool() {
  static Pool p;
  return p;
}

struct Task {
  const std::function<void(size_t, size_t)>* body;
  size_t n;
  size_t chunk;
};

void run_chunk(void* context, size_t i) {
  const Task* task = static_cast<const Task*>(context);
  const bool was = t_in_pool;
  t_in_pool = true;
  const size_t begin = i * task->chunk;
  (*task->body)(begin, std::min(task->n, begin + task->chunk));
  store_fence();
  t_in_pool = was;
}

}  // namespace

size_t thread_count() { return pool().threads; }

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  Pool& p = pool();
  if (!p.pool || t_in_pool || n <= grain) {
    body(0, n);
    store_fence();
    return;
  }
  // A few chunks per thread balance uneven work without much overhead.
  const size_t chunks_wanted = p.threads * 4;
  size_t chunk = std::max(grain, (n + chunks_wanted - 1) / chunks_wanted);
  const size_t chunks = (n + chunk - 1) / chunk;
  Task task{&body, n, chunk};
  auto lock = compute_lock();
  pthreadpool_parallelize_1d(p.pool, run_chunk, &task, chunks, 0);
}

void store_fence() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_sfence();
#endif
}

std::unique_lock<std::recursive_mutex> compute_lock() {
  pool();  // make sure OpenBLAS's thread count is set before the first BLAS call
  return std::unique_lock<std::recursive_mutex>(compute_mutex());
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
    if (cpuinfo_initialize()) {
      f.fma3 = cpuinfo_has_x86_fma3();
      f.f16c = cpuinfo_has_x86_f16c();
      f.avx2 = cpuinfo_has_x86_avx2() && f.fma3 && f.f16c;
      // NNC_NO_AVX512=1 keeps the AVX2 kernels even on an AVX-512 CPU (the
      // tests run both sets on one machine that way).
      const char* no512 = std::getenv("NNC_NO_AVX512");
      f.avx512 = cpuinfo_has_x86_avx512f() && cpuinfo_has_x86_avx512bw() && cpuinfo_has_x86_avx512vl() &&
                 cpuinfo_has_x86_avx512dq() && f.fma3 && f.f16c && !(no512 && *no512 && std::strcmp(no512, "0") != 0);
    }
    return f;
  }();
  return features;
}

}  // namespace nnc
