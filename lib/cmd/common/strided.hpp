// Iteration over several same-shaped tensors or views for the optimised
// element-wise kernels (EWSUM, SET, DATA_TRANSFER, DATATYPE_CONVERSION, ...).
//
//   Walk w;
//   const int64_t* strides[] = {out.stride.data(), in.stride.data()};
//   make_walk(w, out.dim.data(), out.nd, 2, strides);
//   walk_parallel(w, 1 << 16, [&](const int64_t* off, size_t n) {
//     copy_row(out.data + off[0] * 4, w.inner_stride(0), in.data + off[1] * 4, w.inner_stride(1), n);
//   });
//
// Dimensions of size 1 are dropped and neighbouring dimensions that are
// contiguous in every operand are merged, so a view that is packed except for
// a row pitch becomes rows of one long inner loop. The body gets each
// operand's element offset of a run of `n` elements along the innermost
// (merged) dimension. Nothing here allocates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc {

// Most operands one walk handles (for example EWSUM's inputs plus its output).
constexpr int kMaxWalkOperands = 33;

struct Walk {
  int operands = 0;
  int nd = 0;  // >= 1 after make_walk
  int dim[kMaxDim];
  int64_t stride[kMaxWalkOperands][kMaxDim];

  size_t inner() const { return static_cast<size_t>(dim[nd - 1]); }
  int64_t inner_stride(int k) const { return stride[k][nd - 1]; }
  size_t rows() const {
    size_t r = 1;
    for (int i = 0; i < nd - 1; i++) r *= static_cast<size_t>(dim[i]);
    return r;
  }
  // True when every operand's innermost stride is 1.
  bool unit_inner() const {
    for (int k = 0; k < operands; k++)
      if (stride[k][nd - 1] != 1) return false;
    return true;
  }
};

// Build a walk over shape dim[0..nd) with `operands` stride arrays (in elements).
// operands must be at most kMaxWalkOperands.
inline void make_walk(Walk& w, const int* dim, int nd, int operands, const int64_t* const* strides) {
  w.operands = operands;
  int m = 0;
  for (int i = 0; i < nd; i++) {
    if (dim[i] == 1) continue;
    w.dim[m] = dim[i];
    for (int k = 0; k < operands; k++) w.stride[k][m] = strides[k][i];
    m++;
  }
  if (m == 0) {
    w.dim[0] = 1;
    for (int k = 0; k < operands; k++) w.stride[k][0] = 1;
    m = 1;
  }
  // Merge from the inside out: dimension j-1 folds into j when its stride is dim[j] * stride[j] everywhere.
  int out = m - 1;
  for (int j = m - 2; j >= 0; j--) {
    bool merge = true;
    for (int k = 0; k < operands && merge; k++)
      merge = w.stride[k][j] == w.stride[k][out] * static_cast<int64_t>(w.dim[out]);
    if (merge) {
      w.dim[out] *= w.dim[j];
      continue;
    }
    out--;
    w.dim[out] = w.dim[j];
    for (int k = 0; k < operands; k++) w.stride[k][out] = w.stride[k][j];
  }
  // Shift the kept dimensions [out, m) down to [0, m - out).
  w.nd = m - out;
  if (out > 0) {
    for (int i = 0; i < w.nd; i++) {
      w.dim[i] = w.dim[i + out];
      for (int k = 0; k < operands; k++) w.stride[k][i] = w.stride[k][i + out];
    }
  }
}

namespace detail {

template <class F>
struct WalkTask {
  const Walk* w;
  const F* f;
  // Rows [r0, r1): each row is the full innermost dimension.
  void rows(size_t r0, size_t r1) const {
    const Walk& W = *w;
    const int outer = W.nd - 1;
    int index[kMaxDim];
    size_t r = r0;
    for (int d = outer - 1; d >= 0; d--) {
      index[d] = static_cast<int>(r % static_cast<size_t>(W.dim[d]));
      r /= static_cast<size_t>(W.dim[d]);
    }
    int64_t off[kMaxWalkOperands];
    for (int k = 0; k < W.operands; k++) {
      int64_t o = 0;
      for (int d = 0; d < outer; d++) o += static_cast<int64_t>(index[d]) * W.stride[k][d];
      off[k] = o;
    }
    for (size_t row = r0; row < r1; row++) {
      (*f)(static_cast<const int64_t*>(off), W.inner());
      // Advance the odometer and the offsets with it.
      for (int d = outer - 1; d >= 0; d--) {
        if (++index[d] < W.dim[d]) {
          for (int k = 0; k < W.operands; k++) off[k] += W.stride[k][d];
          break;
        }
        index[d] = 0;
        for (int k = 0; k < W.operands; k++) off[k] -= W.stride[k][d] * static_cast<int64_t>(W.dim[d] - 1);
      }
    }
  }
  // Elements [b, e) of a walk with a single row.
  void span(size_t b, size_t e) const {
    int64_t off[kMaxWalkOperands];
    for (int k = 0; k < w->operands; k++) off[k] = static_cast<int64_t>(b) * w->stride[k][0];
    (*f)(static_cast<const int64_t*>(off), e - b);
  }
};

}  // namespace detail

// Run f(const int64_t* offsets, size_t n) over the whole walk, on the pool
// when it has at least `parallel_from` elements. f must not throw.
template <class F>
void walk_parallel(const Walk& w, size_t parallel_from, const F& f) {
  const detail::WalkTask<F> task{&w, &f};
  const size_t inner = w.inner();
  const size_t rows = w.rows();
  const size_t total = inner * rows;
  if (total < parallel_from || thread_count() <= 1) {
    if (w.nd == 1)
      task.span(0, inner);
    else
      task.rows(0, rows);
    return;
  }
  // The lambdas capture one pointer, so std::function stores them without allocating.
  const detail::WalkTask<F>* t = &task;
  if (w.nd == 1) {
    parallel_for(inner, std::max<size_t>(parallel_from / 4, 1024), [t](size_t b, size_t e) { t->span(b, e); });
  } else {
    const size_t grain = std::max<size_t>(1, (parallel_from / 4) / std::max<size_t>(inner, 1));
    parallel_for(rows, grain, [t](size_t b, size_t e) { t->rows(b, e); });
  }
}

// Split [0, n) over the pool in chunks of at least `grain` when n >= parallel_from;
// f(size_t begin, size_t end) must not throw.
template <class F>
void range_parallel(size_t n, size_t parallel_from, size_t grain, const F& f) {
  if (n < parallel_from || thread_count() <= 1) {
    f(size_t{0}, n);
    return;
  }
  const F* p = &f;
  parallel_for(n, std::max<size_t>(grain, 1), [p](size_t b, size_t e) { (*p)(b, e); });
}

}  // namespace nnc
