// The bodies of the Loops tables (see loops.hpp), written as plain loops that
// GCC vectorises at -O3 for whatever -m flags the including file has. Every
// function has internal linkage so that the generic, AVX2 and AVX-512 copies
// never merge at link time. Reductions keep kLanes independent partial results
// so that the compiler may vectorise them without reassociating a single sum.
//
// Include once per instruction set, after defining NNC_LOOPS_SUFFIX (generic,
// avx2, avx512).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "cmd/common/reduce_loops.hpp"

#define NNC_LOOPS_CAT2(a, b) a##b
#define NNC_LOOPS_CAT(a, b) NNC_LOOPS_CAT2(a, b)

namespace nnc::red {

namespace {

template <class T>
constexpr size_t kLanes = 128 / sizeof(T);
// Lanes of the loops with two or more sums per element: enough independent
// chains to cover the add latency with four AVX-512 (eight AVX2) registers.
template <class T>
constexpr size_t kWide = 256 / sizeof(T);

template <class T>
inline T combine(int op, T a, T b) {
  switch (op) {
    case kMax:
      return b > a ? b : a;
    case kMin:
      return b < a ? b : a;
    default:
      return a + b;
  }
}

template <class T, int OP>
T row_reduce_op(const T* x, size_t n) {
  constexpr size_t L = kLanes<T>;
  size_t i = 0;
  T acc[L];
  if (n >= L) {
    for (size_t k = 0; k < L; k++) acc[k] = OP == kSumSq ? x[k] * x[k] : x[k];
    for (i = L; i + L <= n; i += L)
      for (size_t k = 0; k < L; k++) {
        const T v = x[i + k];
        if constexpr (OP == kMax)
          acc[k] = v > acc[k] ? v : acc[k];
        else if constexpr (OP == kMin)
          acc[k] = v < acc[k] ? v : acc[k];
        else if constexpr (OP == kSumSq)
          acc[k] += v * v;
        else
          acc[k] += v;
      }
  } else {
    acc[0] = OP == kSumSq ? x[0] * x[0] : x[0];
    i = 1;
    for (size_t k = 1; k < L; k++) acc[k] = acc[0];
    if (OP == kSum || OP == kSumSq)
      for (size_t k = 1; k < L; k++) acc[k] = 0;
  }
  T r = acc[0];
  for (size_t k = 1; k < L; k++) r = combine(OP == kSumSq ? kSum : OP, r, acc[k]);
  for (; i < n; i++) r = combine(OP == kSumSq ? kSum : OP, r, OP == kSumSq ? x[i] * x[i] : x[i]);
  return r;
}

template <class T>
T row_reduce(int op, const T* x, size_t n) {
  switch (op) {
    case kMax:
      return row_reduce_op<T, kMax>(x, n);
    case kMin:
      return row_reduce_op<T, kMin>(x, n);
    case kSumSq:
      return row_reduce_op<T, kSumSq>(x, n);
    default:
      return row_reduce_op<T, kSum>(x, n);
  }
}

template <class T, int OP>
void col_reduce_op(const T* __restrict x, size_t rows, int64_t ld, size_t n, T* __restrict y, bool init) {
  size_t r = 0;
  if (init) {
    for (size_t j = 0; j < n; j++) y[j] = OP == kSumSq ? x[j] * x[j] : x[j];
    r = 1;
  }
  for (; r < rows; r++) {
    const T* xr = x + static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) {
      const T v = xr[j];
      if constexpr (OP == kMax)
        y[j] = v > y[j] ? v : y[j];
      else if constexpr (OP == kMin)
        y[j] = v < y[j] ? v : y[j];
      else if constexpr (OP == kSumSq)
        y[j] += v * v;
      else
        y[j] += v;
    }
  }
}

template <class T>
void col_reduce(int op, const T* x, size_t rows, int64_t ld, size_t n, T* y, bool init) {
  switch (op) {
    case kMax:
      return col_reduce_op<T, kMax>(x, rows, ld, n, y, init);
    case kMin:
      return col_reduce_op<T, kMin>(x, rows, ld, n, y, init);
    case kSumSq:
      return col_reduce_op<T, kSumSq>(x, rows, ld, n, y, init);
    default:
      return col_reduce_op<T, kSum>(x, rows, ld, n, y, init);
  }
}

template <class T>
T row_sqdev(const T* x, size_t n, T mean, T* dev) {
  constexpr size_t L = kWide<T>;
  T acc[L] = {}, sd[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L)
    for (size_t k = 0; k < L; k++) {
      const T d = x[i + k] - mean;
      acc[k] += d * d;
      sd[k] += d;
    }
  T r = 0, rd = 0;
  for (size_t k = 0; k < L; k++) r += acc[k], rd += sd[k];
  for (; i < n; i++) {
    const T d = x[i] - mean;
    r += d * d;
    rd += d;
  }
  *dev += rd;
  return r;
}

template <class T>
void col_sqdev(const T* __restrict x, size_t rows, int64_t ld, size_t n, const T* __restrict mean, T* __restrict acc,
               T* __restrict dev) {
  for (size_t r = 0; r < rows; r++) {
    const T* xr = x + static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) {
      const T d = xr[j] - mean[j];
      acc[j] += d * d;
      dev[j] += d;
    }
  }
}

template <class T>
void row_affine(const T* x, T* y, size_t n, T c, T a, T b) {
  for (size_t i = 0; i < n; i++) y[i] = (x[i] - c) * a + b;
}

template <class T>
void col_affine(const T* x, T* y, size_t rows, int64_t ld, size_t n, const T* __restrict c, const T* __restrict a,
                const T* __restrict b) {
  for (size_t r = 0; r < rows; r++) {
    const T* xr = x + static_cast<int64_t>(r) * ld;
    T* yr = y + static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) yr[j] = (xr[j] - c[j]) * a[j] + b[j];
  }
}

template <class T>
void row_dot2(const T* g, const T* x, size_t n, T mean, T* sg, T* sgx) {
  constexpr size_t L = kWide<T>;
  T a[L] = {}, b[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L)
    for (size_t k = 0; k < L; k++) {
      a[k] += g[i + k];
      b[k] += g[i + k] * (x[i + k] - mean);
    }
  T ra = 0, rb = 0;
  for (size_t k = 0; k < L; k++) ra += a[k], rb += b[k];
  for (; i < n; i++) ra += g[i], rb += g[i] * (x[i] - mean);
  *sg += ra;
  *sgx += rb;
}

template <class T>
void col_dot2(const T* __restrict g, const T* __restrict x, size_t rows, int64_t ld, size_t n, const T* __restrict mean,
              T* __restrict sg, T* __restrict sgx) {
  for (size_t r = 0; r < rows; r++) {
    const T* gr = g + static_cast<int64_t>(r) * ld;
    const T* xr = x + static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) {
      sg[j] += gr[j];
      sgx[j] += gr[j] * (xr[j] - mean[j]);
    }
  }
}

template <class T>
void row_axpbypc(const T* g, const T* x, T* dx, size_t n, T m, T a, T b, T c) {
  for (size_t i = 0; i < n; i++) dx[i] = a * g[i] + b * (x[i] - m) + c;
}

template <class T>
void col_axpbypc(const T* g, const T* x, T* dx, size_t rows, int64_t ld, size_t n, const T* __restrict m,
                 const T* __restrict a, const T* __restrict b, const T* __restrict c) {
  for (size_t r = 0; r < rows; r++) {
    const int64_t o = static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) dx[o + j] = a[j] * g[o + j] + b[j] * (x[o + j] - m[j]) + c[j];
  }
}

template <class T>
void ln_forward(const T* x, T* y, size_t n, T c, T r, T inv, const T* s, const T* b) {
  if (s && b) {
    for (size_t i = 0; i < n; i++) y[i] = ((x[i] - c) - r) * inv * s[i] + b[i];
  } else if (s) {
    for (size_t i = 0; i < n; i++) y[i] = ((x[i] - c) - r) * inv * s[i];
  } else if (b) {
    for (size_t i = 0; i < n; i++) y[i] = ((x[i] - c) - r) * inv + b[i];
  } else {
    for (size_t i = 0; i < n; i++) y[i] = ((x[i] - c) - r) * inv;
  }
}

template <class T>
void ln_backward_sums(const T* __restrict g, const T* __restrict x, size_t n, T mean, T inv, const T* __restrict s,
                      T* sh, T* shx, T* __restrict ds, T* __restrict db) {
  constexpr size_t L = kWide<T>;
  T a[L] = {}, b[L] = {};
  size_t i = 0;
  if (s && ds && db) {  // the training case with an affine transform: one pass for everything
    for (; i + L <= n; i += L)
      for (size_t k = 0; k < L; k++) {
        const T gv = g[i + k], xh = (x[i + k] - mean) * inv, h = gv * s[i + k];
        a[k] += h;
        b[k] += h * xh;
        ds[i + k] += gv * xh;
        db[i + k] += gv;
      }
  } else if (s) {
    for (; i + L <= n; i += L)
      for (size_t k = 0; k < L; k++) {
        const T h = g[i + k] * s[i + k];
        a[k] += h;
        b[k] += h * ((x[i + k] - mean) * inv);
      }
  } else {
    for (; i + L <= n; i += L)
      for (size_t k = 0; k < L; k++) {
        const T h = g[i + k];
        a[k] += h;
        b[k] += h * ((x[i + k] - mean) * inv);
      }
  }
  const size_t done = i;
  T ra = 0, rb = 0;
  for (size_t k = 0; k < L; k++) ra += a[k], rb += b[k];
  for (; i < n; i++) {
    const T h = s ? g[i] * s[i] : g[i];
    ra += h;
    rb += h * ((x[i] - mean) * inv);
  }
  *sh += ra;
  *shx += rb;
  const size_t from = s && ds && db ? done : 0;
  if (ds)
    for (size_t j = from; j < n; j++) ds[j] += g[j] * ((x[j] - mean) * inv);
  if (db)
    for (size_t j = from; j < n; j++) db[j] += g[j];
}

template <class T>
void ln_backward_dx(const T* g, const T* x, T* dx, size_t n, T mean, T inv, const T* s, T mh, T mhx) {
  if (s) {
    for (size_t i = 0; i < n; i++) dx[i] = inv * (g[i] * s[i] - mh - (x[i] - mean) * inv * mhx);
  } else {
    for (size_t i = 0; i < n; i++) dx[i] = inv * (g[i] - mh - (x[i] - mean) * inv * mhx);
  }
}

// Whether v replaces best in an arg reduction: strictly better (so the first
// of equals stays), or the first NaN.
template <class T, bool MAX>
inline bool arg_better(T v, T best) {
  return (MAX ? v > best : v < best) || (v != v && best == best);
}

template <class T, bool MAX>
int32_t row_arg_op(const T* x, size_t n) {
  constexpr size_t L = kLanes<T>;
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  T bv = x[0];
  int32_t bi = 0;
  size_t i = 1;
  if (n >= 2 * L) {
    // Per lane: the best value and its index, and the lane's first NaN.
    T best[L];
    int32_t at[L], nan_at[L];
    for (size_t k = 0; k < L; k++)
      best[k] = x[k], at[k] = static_cast<int32_t>(k), nan_at[k] = x[k] != x[k] ? static_cast<int32_t>(k) : kNone;
    for (i = L; i + L <= n; i += L)
      for (size_t k = 0; k < L; k++) {
        const T v = x[i + k];
        const bool better = MAX ? v > best[k] : v < best[k];
        best[k] = better ? v : best[k];
        at[k] = better ? static_cast<int32_t>(i + k) : at[k];
        nan_at[k] = v != v && nan_at[k] == kNone ? static_cast<int32_t>(i + k) : nan_at[k];
      }
    int32_t first_nan = kNone;
    for (size_t k = 0; k < L; k++) first_nan = std::min(first_nan, nan_at[k]);
    if (first_nan != kNone) return first_nan;  // lanes' NaNs all precede position i
    bv = best[0], bi = at[0];
    for (size_t k = 1; k < L; k++)
      if (arg_better<T, MAX>(best[k], bv) || (best[k] == bv && at[k] < bi)) bv = best[k], bi = at[k];
  }
  for (; i < n && bv == bv; i++)
    if (arg_better<T, MAX>(x[i], bv)) bv = x[i], bi = static_cast<int32_t>(i);
  return bi;
}

template <class T>
int32_t row_arg(const T* x, size_t n, bool max) {
  return max ? row_arg_op<T, true>(x, n) : row_arg_op<T, false>(x, n);
}

template <class T, bool MAX>
void col_arg_op(const T* __restrict x, size_t rows, int64_t ld, size_t n, T* __restrict best,
                int32_t* __restrict at) {
  for (size_t j = 0; j < n; j++) best[j] = x[j], at[j] = 0;
  for (size_t r = 1; r < rows; r++) {
    const T* xr = x + static_cast<int64_t>(r) * ld;
    for (size_t j = 0; j < n; j++) {
      const bool better = arg_better<T, MAX>(xr[j], best[j]);
      best[j] = better ? xr[j] : best[j];
      at[j] = better ? static_cast<int32_t>(r) : at[j];
    }
  }
}

template <class T>
void col_arg(const T* x, size_t rows, int64_t ld, size_t n, bool max, T* best, int32_t* at) {
  if (max)
    col_arg_op<T, true>(x, rows, ld, n, best, at);
  else
    col_arg_op<T, false>(x, rows, ld, n, best, at);
}

template <class T>
const Loops<T> kTable = {row_reduce<T>, col_reduce<T>,       row_sqdev<T>,     col_sqdev<T>,   row_affine<T>,
                         col_affine<T>, row_dot2<T>,         col_dot2<T>,      row_axpbypc<T>, col_axpbypc<T>,
                         ln_forward<T>, ln_backward_sums<T>, ln_backward_dx<T>, row_arg<T>,    col_arg<T>};

}  // namespace

const Loops<float>& NNC_LOOPS_CAT(loops_f32_, NNC_LOOPS_SUFFIX)() { return kTable<float>; }
const Loops<double>& NNC_LOOPS_CAT(loops_f64_, NNC_LOOPS_SUFFIX)() { return kTable<double>; }

}  // namespace nnc::red
