// The ew loops compiled for AVX2 + FMA (see loops.hpp), with the
// non-temporal-store add / mul for outputs far larger than the caches.
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/vmath_avx2.hpp"

#define NNC_EW_STREAM_STORES 1
#define NNC_EW_VECTOR_EXP_LOG 1

namespace nnc::ew {
namespace {

struct F32 {
  using T = float;
  using R = __m256;
  static constexpr size_t N = 8;
  static R load(const T* p) { return _mm256_loadu_ps(p); }
  static R set1(T v) { return _mm256_set1_ps(v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static void stream(T* p, R v) { _mm256_stream_ps(p, v); }
};
struct F64 {
  using T = double;
  using R = __m256d;
  static constexpr size_t N = 4;
  static R load(const T* p) { return _mm256_loadu_pd(p); }
  static R set1(T v) { return _mm256_set1_pd(v); }
  static R add(R a, R b) { return _mm256_add_pd(a, b); }
  static R mul(R a, R b) { return _mm256_mul_pd(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
  static void stream(T* p, R v) { _mm256_stream_pd(p, v); }
};

template <class T>
struct Isa;
template <>
struct Isa<float> : F32 {};
template <>
struct Isa<double> : F64 {};

// y = op(a, b) with stream stores; E(x, z) is the scalar form, V(x, z) the vector one.
template <class T, class S, class V>
inline void stream_binary(T* y, const T* a, const T* b, size_t n, int mode, S scalar, V vec) {
  using I = Isa<T>;
  size_t i = 0;
  auto av = [&](size_t k) { return mode == 1 ? a[0] : a[k]; };
  auto bv = [&](size_t k) { return mode == 2 ? b[0] : b[k]; };
  // Scalar head up to a 32-byte boundary of y (T-aligned y only; otherwise all scalar).
  if (reinterpret_cast<uintptr_t>(y) % sizeof(T) != 0) {
    for (; i < n; i++) y[i] = scalar(av(i), bv(i));
    return;
  }
  for (; i < n && reinterpret_cast<uintptr_t>(y + i) % 32 != 0; i++) y[i] = scalar(av(i), bv(i));
  const typename I::R as = I::set1(a[0]), bs = I::set1(b[0]);
  switch (mode) {
    case 1:
      for (; i + I::N <= n; i += I::N) I::stream(y + i, vec(as, I::load(b + i)));
      break;
    case 2:
      for (; i + I::N <= n; i += I::N) I::stream(y + i, vec(I::load(a + i), bs));
      break;
    default:
      for (; i + 2 * I::N <= n; i += 2 * I::N) {
        const typename I::R r0 = vec(I::load(a + i), I::load(b + i));
        const typename I::R r1 = vec(I::load(a + i + I::N), I::load(b + i + I::N));
        I::stream(y + i, r0);
        I::stream(y + i + I::N, r1);
      }
      for (; i + I::N <= n; i += I::N) I::stream(y + i, vec(I::load(a + i), I::load(b + i)));
  }
  for (; i < n; i++) y[i] = scalar(av(i), bv(i));
  // No fence here: one ends each pool chunk and each command (core/parallel.hpp).
}

template <class T>
void add_nt(T* y, const T* a, const T* b, size_t n, int mode, T p, T q) {
  using I = Isa<T>;
  if (p == T(1) && q == T(1)) {
    stream_binary(
        y, a, b, n, mode, [](T x, T z) { return x + z; }, [](auto x, auto z) { return I::add(x, z); });
    return;
  }
  const typename I::R pv = I::set1(p), qv = I::set1(q);
  stream_binary(
      y, a, b, n, mode, [p, q](T x, T z) { return p * x + q * z; },
      [pv, qv](auto x, auto z) { return I::fmadd(pv, x, I::mul(qv, z)); });
}

template <class T>
void mul_nt(T* y, const T* a, const T* b, size_t n, int mode, T p) {
  using I = Isa<T>;
  if (p == T(1)) {
    stream_binary(
        y, a, b, n, mode, [](T x, T z) { return x * z; }, [](auto x, auto z) { return I::mul(x, z); });
    return;
  }
  const typename I::R pv = I::set1(p);
  stream_binary(
      y, a, b, n, mode, [p](T x, T z) { return p * x * z; }, [pv](auto x, auto z) { return I::mul(I::mul(pv, x), z); });
}

// exp / log: fp32 through core/vmath.hpp (within 2 ulp), fp64 through libm.
template <class T, bool LOG>
void exp_log(T* y, const T* x, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    using V = vmath::Avx2;
    size_t i = 0;
    for (; i + V::N <= n; i += V::N) {
      const V::R v = V::load(x + i);
      V::store(y + i, LOG ? vmath::log<V>(v) : vmath::exp<V>(v));
    }
    if (i < n) {
      const int m = static_cast<int>(n - i);
      const V::R v = V::load_tail(x + i, m, 1.0f);
      V::store_tail(y + i, LOG ? vmath::log<V>(v) : vmath::exp<V>(v), m);
    }
  } else {
    for (size_t i = 0; i < n; i++) y[i] = LOG ? std::log(x[i]) : std::exp(x[i]);
  }
}
template <class T>
void exp_(T* y, const T* x, size_t n) {
  exp_log<T, false>(y, x, n);
}
template <class T>
void log_(T* y, const T* x, size_t n) {
  exp_log<T, true>(y, x, n);
}

}  // namespace
}  // namespace nnc::ew

#define NNC_EW_LOOPS_SUFFIX avx2
#include "cmd/common/ew_loops_impl.hpp"
