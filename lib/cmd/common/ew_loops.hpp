// Inner loops of the element-wise (EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP,
// MIN, MAX) and broadcasting BLAS (ADD, MUL, SCALAR_MUL) CPU_OPT kernels, one
// table per element type and instruction set. loops_impl.hpp holds plain C++
// that GCC vectorises at -O3; it is compiled twice (loops.cpp generic,
// loops_avx2.cpp) and loops<T>() hands out the widest table this CPU runs.
//
// Every loop walks n contiguous elements. Binary loops take a Mode saying
// which operand, if any, is one scalar repeated (a broadcast along the run).
#pragma once

#include <cstddef>

namespace nnc::ew {

enum Mode {
  kVV = 0,  // a[i], b[i]
  kSV = 1,  // a[0], b[i]
  kVS = 2,  // a[i], b[0]
};

// Flags of the clamp loops: which bounds exist.
enum ClampFlags { kHasLo = 1, kHasHi = 2 };
enum MinMaxFlags { kMinMaxIsMax = 1, kMinMaxForB = 2 };

template <class T>
struct Loops {
  // y = p a + q b.
  void (*add)(T* y, const T* a, const T* b, size_t n, int mode, T p, T q);
  // y = p a b.
  void (*mul)(T* y, const T* a, const T* b, size_t n, int mode, T p);
  // y = p a / b.
  void (*div)(T* y, const T* a, const T* b, size_t n, int mode, T p);
  // y = min(a, b) / max(a, b); a NaN in either gives NaN.
  void (*min)(T* y, const T* a, const T* b, size_t n, int mode);
  void (*max)(T* y, const T* a, const T* b, size_t n, int mode);
  // y = p a b / c (EWDIV's db with p = -1: -g y / b).
  void (*muldiv)(T* y, const T* a, const T* b, const T* c, size_t n, T p);
  // Unary maps.
  void (*exp)(T* y, const T* x, size_t n);
  void (*log)(T* y, const T* x, size_t n);
  void (*sqrt)(T* y, const T* x, size_t n);
  // y = x below hi and above lo (the bounds in `flags`); NaN stays NaN.
  void (*clamp)(T* y, const T* x, size_t n, T lo, T hi, int flags);
  // d = g where y is strictly inside the bounds that exist, else 0.
  void (*clamp_grad)(T* d, const T* g, const T* y, size_t n, T lo, T hi, int flags);
  // The gradient of MIN / MAX for one operand: d = g w, w = 1 where that
  // operand is the one picked, 1/2 on ties, 0 otherwise. A NaN picks itself
  // (a first: a NaN a takes all of g, also when b is NaN). flags: kMinMaxIsMax
  // for MAX, kMinMaxForB when d is b's gradient.
  void (*minmax_grad)(T* d, const T* g, const T* a, const T* b, size_t n, int flags);
  // Sum of g[i] b[i] (bmode 0: b is NULL and reads as 1; 1: b[i]; 2: b[0]).
  T (*dot)(const T* g, const T* b, size_t n, int bmode);
  // acc[i] += g[i] b[i] with b as in dot.
  void (*acc)(T* acc, const T* g, const T* b, size_t n, int bmode);
  // y[i] = p x[i] (also the combine step of partial sums).
  void (*scale)(T* y, const T* x, size_t n, T p);
  // add and mul with non-temporal stores of y (the AVX2 tables; the generic
  // ones store normally): for outputs much larger than the caches, where they
  // save reading y's lines before writing them. Ends with a store fence.
  void (*add_nt)(T* y, const T* a, const T* b, size_t n, int mode, T p, T q);
  void (*mul_nt)(T* y, const T* a, const T* b, size_t n, int mode, T p);
};

template <class T>
const Loops<T>& loops();
template <>
const Loops<float>& loops<float>();
template <>
const Loops<double>& loops<double>();

const Loops<float>& loops_f32_generic();
const Loops<double>& loops_f64_generic();
const Loops<float>& loops_f32_avx2();
const Loops<double>& loops_f64_avx2();

}  // namespace nnc::ew
