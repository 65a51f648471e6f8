// Inner loops shared by the reduction and normalisation CPU_OPT kernels, one
// table per element type and instruction set. loops_impl.hpp holds the plain
// C++ that GCC vectorises; it is compiled three times (loops.cpp generic,
// loops_avx2.cpp, loops_avx512.cpp) and loops_f32() / loops_f64() hand out the
// widest table this CPU runs.
//
// "row" loops walk one contiguous run of n elements; "col" loops walk `rows`
// rows of n contiguous elements ld apart and work per column j (the NHWC
// case: vectorised across channels).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnc::red {

enum Op { kSum = 0, kMax = 1, kMin = 2, kSumSq = 3 };

template <class T>
struct Loops {
  // op over x[0..n) (n >= 1).
  T (*row_reduce)(int op, const T* x, size_t n);
  // y[j] = op(y[j] (unless init), x[r * ld + j] for r < rows), j < n. rows >= 1.
  void (*col_reduce)(int op, const T* x, size_t rows, int64_t ld, size_t n, T* y, bool init);
  // Returns the sum of (x[i] - mean)^2 and adds the sum of x[i] - mean to *dev
  // (the shifted-data variance: exact even when `mean` is only close).
  T (*row_sqdev)(const T* x, size_t n, T mean, T* dev);
  // acc[j] += sum_r (x[r * ld + j] - mean[j])^2; dev[j] += sum_r x[r * ld + j] - mean[j].
  void (*col_sqdev)(const T* x, size_t rows, int64_t ld, size_t n, const T* mean, T* acc, T* dev);
  // y[i] = (x[i] - c) * a + b (centred first, so a large mean cancels exactly).
  void (*row_affine)(const T* x, T* y, size_t n, T c, T a, T b);
  // y[r * ld + j] = (x[r * ld + j] - c[j]) * a[j] + b[j].
  void (*col_affine)(const T* x, T* y, size_t rows, int64_t ld, size_t n, const T* c, const T* a, const T* b);
  // *sg += sum g[i]; *sgx += sum g[i] * (x[i] - mean).
  void (*row_dot2)(const T* g, const T* x, size_t n, T mean, T* sg, T* sgx);
  // sg[j] += sum_r g[r, j]; sgx[j] += sum_r g[r, j] * (x[r, j] - mean[j]).
  void (*col_dot2)(const T* g, const T* x, size_t rows, int64_t ld, size_t n, const T* mean, T* sg, T* sgx);
  // dx[i] = a * g[i] + b * (x[i] - m) + c.
  void (*row_axpbypc)(const T* g, const T* x, T* dx, size_t n, T m, T a, T b, T c);
  // dx[r, j] = a[j] * g[r, j] + b[j] * (x[r, j] - m[j]) + c[j].
  void (*col_axpbypc)(const T* g, const T* x, T* dx, size_t rows, int64_t ld, size_t n, const T* m, const T* a,
                      const T* b, const T* c);
  // Layer norm rows. y[i] = ((x[i] - c) - r) * inv * s[i] + b[i] (s, b may be NULL: 1 and 0): the mean
  // as a centre c near the data plus a small rest r, so that a large mean cancels exactly.
  void (*ln_forward)(const T* x, T* y, size_t n, T c, T r, T inv, const T* s, const T* b);
  // With h = g * s (g where s is NULL) and xhat = (x - mean) * inv: *sh += sum h, *shx += sum h * xhat;
  // ds[j] += g * xhat and db[j] += g where they are not NULL.
  void (*ln_backward_sums)(const T* g, const T* x, size_t n, T mean, T inv, const T* s, T* sh, T* shx, T* ds, T* db);
  // dx[i] = inv * (h[i] - mh - xhat[i] * mhx).
  void (*ln_backward_dx)(const T* g, const T* x, T* dx, size_t n, T mean, T inv, const T* s, T mh, T mhx);
  // ARGMAX (max) / ARGMIN of x[0..n), n >= 1: the index of the first largest /
  // smallest element; a NaN beats every number, and the first NaN wins.
  int32_t (*row_arg)(const T* x, size_t n, bool max);
  // The same per column j < n over rows r < rows of x[r * ld + j]: the value
  // in best[j], its row in at[j].
  void (*col_arg)(const T* x, size_t rows, int64_t ld, size_t n, bool max, T* best, int32_t* at);
};

const Loops<float>& loops_f32();
const Loops<double>& loops_f64();
template <class T>
const Loops<T>& loops();
template <>
inline const Loops<float>& loops<float>() {
  return loops_f32();
}
template <>
inline const Loops<double>& loops<double>() {
  return loops_f64();
}

// The tables of each instruction set (loops.cpp picks one).
const Loops<float>& loops_f32_generic();
const Loops<double>& loops_f64_generic();
const Loops<float>& loops_f32_avx2();
const Loops<double>& loops_f64_avx2();
const Loops<float>& loops_f32_avx512();
const Loops<double>& loops_f64_avx512();

}  // namespace nnc::red
