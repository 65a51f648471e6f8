// Counting replacements of operator new and wrappers of the C allocator (see
// CMakeLists.txt: the linker routes calls from static objects through the
// __wrap_ functions; __real_ ones are the C library's, or a sanitizer's).
#include "alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> g_count{0};
void bump() { g_count.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

uint64_t alloc_counter::count() { return g_count.load(std::memory_order_relaxed); }

extern "C" {
void* __real_malloc(size_t);
void* __real_calloc(size_t, size_t);
void* __real_realloc(void*, size_t);
int __real_posix_memalign(void**, size_t, size_t);
void* __real_aligned_alloc(size_t, size_t);
void* __wrap_malloc(size_t n) { bump(); return __real_malloc(n); }
void* __wrap_calloc(size_t n, size_t m) { bump(); return __real_calloc(n, m); }
void* __wrap_realloc(void* p, size_t n) { bump(); return __real_realloc(p, n); }
int __wrap_posix_memalign(void** p, size_t a, size_t n) { bump(); return __real_posix_memalign(p, a, n); }
void* __wrap_aligned_alloc(size_t a, size_t n) { bump(); return __real_aligned_alloc(a, n); }
}

void* operator new(size_t n) {
  bump();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  bump();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { bump(); return std::malloc(n ? n : 1); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { bump(); return std::malloc(n ? n : 1); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
