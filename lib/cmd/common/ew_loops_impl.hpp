// The bodies of the ew Loops tables (see loops.hpp), written as plain loops
// that GCC vectorises at -O3 for whatever -m flags the including file has.
// Everything has internal linkage so the generic and AVX2 copies never merge
// at link time. Sums keep kLanes independent partial sums so that the
// compiler may vectorise them without reassociating one sum.
//
// Include once per instruction set, after defining NNC_EW_LOOPS_SUFFIX.
#include <cmath>
#include <cstddef>

#include "cmd/common/ew_loops.hpp"

#define NNC_EW_CAT2(a, b) a##b
#define NNC_EW_CAT(a, b) NNC_EW_CAT2(a, b)

namespace nnc::ew {

namespace {

template <class T>
constexpr size_t kLanes = 128 / sizeof(T);

// One binary map in its three operand modes; each branch is a simple loop.
#define NNC_EW_BINARY(EXPR)            \
  switch (mode) {                      \
    case kSV: {                        \
      const T av = a[0];               \
      for (size_t i = 0; i < n; i++) { \
        const T x = av, z = b[i];      \
        y[i] = EXPR;                   \
      }                                \
      break;                           \
    }                                  \
    case kVS: {                        \
      const T bv = b[0];               \
      for (size_t i = 0; i < n; i++) { \
        const T x = a[i], z = bv;      \
        y[i] = EXPR;                   \
      }                                \
      break;                           \
    }                                  \
    default:                           \
      for (size_t i = 0; i < n; i++) { \
        const T x = a[i], z = b[i];    \
        y[i] = EXPR;                   \
      }                                \
  }

template <class T>
void add(T* __restrict y, const T* __restrict a, const T* __restrict b, size_t n, int mode, T p, T q) {
  // __restrict is a lie for in-place calls (y == a), but every element is
  // read before it is written at the same index, which is all vectorised
  // code relies on; y never overlaps an operand at a different offset.
  if (p == T(1) && q == T(1)) {
    NNC_EW_BINARY(x + z)
  } else {
    NNC_EW_BINARY(p * x + q * z)
  }
}

template <class T>
void mul(T* __restrict y, const T* __restrict a, const T* __restrict b, size_t n, int mode, T p) {
  if (p == T(1)) {
    NNC_EW_BINARY(x * z)
  } else {
    NNC_EW_BINARY(p * x * z)
  }
}

template <class T>
void div(T* __restrict y, const T* __restrict a, const T* __restrict b, size_t n, int mode, T p) {
  if (p == T(1)) {
    NNC_EW_BINARY(x / z)
  } else {
    NNC_EW_BINARY(p * x / z)
  }
}

template <class T>
void min(T* __restrict y, const T* __restrict a, const T* __restrict b, size_t n, int mode) {
  NNC_EW_BINARY((x < z || x != x) ? x : z)
}

template <class T>
void max(T* __restrict y, const T* __restrict a, const T* __restrict b, size_t n, int mode) {
  NNC_EW_BINARY((x > z || x != x) ? x : z)
}

#undef NNC_EW_BINARY

template <class T>
void muldiv(T* __restrict y, const T* __restrict a, const T* __restrict b, const T* __restrict c, size_t n, T p) {
  for (size_t i = 0; i < n; i++) y[i] = p * a[i] * b[i] / c[i];
}

#ifndef NNC_EW_VECTOR_EXP_LOG
// (The AVX2 file supplies exp_ / log_ with core/vmath.hpp's vector exp / log for fp32.)
template <class T>
void exp_(T* __restrict y, const T* __restrict x, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = std::exp(x[i]);
}

template <class T>
void log_(T* __restrict y, const T* __restrict x, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = std::log(x[i]);
}
#endif

template <class T>
void sqrt_(T* __restrict y, const T* __restrict x, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = std::sqrt(x[i]);
}

template <class T>
void clamp(T* __restrict y, const T* __restrict x, size_t n, T lo, T hi, int flags) {
  switch (flags & 3) {
    case kHasLo:
      for (size_t i = 0; i < n; i++) y[i] = x[i] < lo ? lo : x[i];
      break;
    case kHasHi:
      for (size_t i = 0; i < n; i++) y[i] = x[i] > hi ? hi : x[i];
      break;
    case kHasLo | kHasHi:
      for (size_t i = 0; i < n; i++) {
        const T v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
      break;
    default:
      for (size_t i = 0; i < n; i++) y[i] = x[i];
  }
}

template <class T>
void clamp_grad(T* __restrict d, const T* __restrict g, const T* __restrict y, size_t n, T lo, T hi, int flags) {
  switch (flags & 3) {
    case kHasLo:
      for (size_t i = 0; i < n; i++) d[i] = y[i] > lo ? g[i] : T(0);
      break;
    case kHasHi:
      for (size_t i = 0; i < n; i++) d[i] = y[i] < hi ? g[i] : T(0);
      break;
    case kHasLo | kHasHi:
      for (size_t i = 0; i < n; i++) d[i] = (y[i] > lo && y[i] < hi) ? g[i] : T(0);
      break;
    default:
      for (size_t i = 0; i < n; i++) d[i] = g[i];
  }
}

template <class T, int F>
void minmax_grad_f(T* __restrict d, const T* __restrict g, const T* __restrict a, const T* __restrict b, size_t n) {
  constexpr bool is_max = F & kMinMaxIsMax;
  constexpr bool for_b = F & kMinMaxForB;
  for (size_t i = 0; i < n; i++) {
    const T x = for_b ? b[i] : a[i];
    const T o = for_b ? a[i] : b[i];
    const bool pick = (is_max ? x > o : x < o) || (x != x && (!for_b || o == o));
    const T w = pick ? T(1) : (x == o ? T(0.5) : T(0));
    d[i] = g[i] * w;
  }
}

template <class T>
void minmax_grad(T* d, const T* g, const T* a, const T* b, size_t n, int flags) {
  switch (flags & 3) {
    case 0:
      minmax_grad_f<T, 0>(d, g, a, b, n);
      break;
    case 1:
      minmax_grad_f<T, 1>(d, g, a, b, n);
      break;
    case 2:
      minmax_grad_f<T, 2>(d, g, a, b, n);
      break;
    default:
      minmax_grad_f<T, 3>(d, g, a, b, n);
      break;
  }
}

template <class T, int BMODE>
T dot_f(const T* __restrict g, const T* __restrict b, size_t n) {
  constexpr size_t L = kLanes<T>;
  T acc[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L)
    for (size_t k = 0; k < L; k++) {
      if constexpr (BMODE == 1)
        acc[k] += g[i + k] * b[i + k];
      else
        acc[k] += g[i + k];
    }
  T s = 0;
  for (; i < n; i++) s += BMODE == 1 ? g[i] * b[i] : g[i];
  for (size_t k = 0; k < L; k++) s += acc[k];
  return BMODE == 2 ? s * b[0] : s;
}

template <class T>
T dot(const T* g, const T* b, size_t n, int bmode) {
  switch (bmode) {
    case 1:
      return dot_f<T, 1>(g, b, n);
    case 2:
      return dot_f<T, 2>(g, b, n);
    default:
      return dot_f<T, 0>(g, b, n);
  }
}

template <class T>
void acc(T* __restrict s, const T* __restrict g, const T* __restrict b, size_t n, int bmode) {
  switch (bmode) {
    case 1:
      for (size_t i = 0; i < n; i++) s[i] += g[i] * b[i];
      break;
    case 2: {
      const T bv = b[0];
      for (size_t i = 0; i < n; i++) s[i] += g[i] * bv;
      break;
    }
    default:
      for (size_t i = 0; i < n; i++) s[i] += g[i];
  }
}

template <class T>
void scale(T* __restrict y, const T* __restrict x, size_t n, T p) {
  for (size_t i = 0; i < n; i++) y[i] = p * x[i];
}

#ifdef NNC_EW_STREAM_STORES
// NNC_EW_STREAM_STORES (the AVX2 file) supplies add_nt<T> / mul_nt<T>.
#else
template <class T>
void add_nt(T* y, const T* a, const T* b, size_t n, int mode, T p, T q) {
  add<T>(y, a, b, n, mode, p, q);
}
template <class T>
void mul_nt(T* y, const T* a, const T* b, size_t n, int mode, T p) {
  mul<T>(y, a, b, n, mode, p);
}
#endif

template <class T>
constexpr Loops<T> make_table() {
  return Loops<T>{add<T>,   mul<T>,        div<T>,         min<T>, max<T>, muldiv<T>, exp_<T>,   log_<T>,  sqrt_<T>,
                  clamp<T>, clamp_grad<T>, minmax_grad<T>, dot<T>, acc<T>, scale<T>,  add_nt<T>, mul_nt<T>};
}

constexpr Loops<float> kF32 = make_table<float>();
constexpr Loops<double> kF64 = make_table<double>();

}  // namespace

const Loops<float>& NNC_EW_CAT(loops_f32_, NNC_EW_LOOPS_SUFFIX)() { return kF32; }
const Loops<double>& NNC_EW_CAT(loops_f64_, NNC_EW_LOOPS_SUFFIX)() { return kF64; }

}  // namespace nnc::ew
