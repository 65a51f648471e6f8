// Drivers of the element-wise CPU_OPT kernels (ew and the broadcasting BLAS
// commands): they walk tensors of one output shape through any strides,
// broadcasting included (stride 0), and hand the inner loops (loops.hpp)
// contiguous runs.
//
//   const T* x[] = {a, b};
//   const int64_t* xs[] = {as, bs};            // element strides over y's dims
//   for_runs<T, 2>(y.dim.data(), y.nd, y_ptr, ys, x, xs, kScalarOk, [&](T* yr, const T* const* xr, const bool* sc,
//   size_t n) {
//     L.add(yr, xr[0], xr[1], n, sc[0] ? kSV : sc[1] ? kVS : kVV, p, q);
//   });
//
// An operand whose innermost stride is 0 is passed as a scalar where the
// caller allows it (bit k of scalar_ok), otherwise it and any operand with a
// stride other than 1 are gathered into blocks on the stack; a strided output
// is computed into a block and scattered. Large walks go to the thread pool.
// Nothing allocates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cmd/common/ew_loops.hpp"
#include "cmd/common/reduce_loops.hpp"
#include "cmd/common/strided.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

// Walks at least this big run on the pool.
constexpr size_t kParallelFrom = size_t{1} << 15;
// Elements per gathered block.
constexpr size_t kBlock = 256;

// walk_parallel with one contiguous share per thread instead of many small
// chunks: share k is always thread k's (the pool hands its threads equal
// ranges), so a kernel called again on the same tensors finds its share still
// in that core's cache (a 64 x 3136 bias add fits two L2s, not one).
template <class F>
void walk_static(const Walk& w, size_t parallel_from, const F& f) {
  const detail::WalkTask<F> task{&w, &f};
  const size_t inner = w.inner(), rows = w.rows();
  const size_t threads = thread_count();
  if (inner * rows < parallel_from || threads <= 1) {
    if (w.nd == 1)
      task.span(0, inner);
    else
      task.rows(0, rows);
    return;
  }
  struct Split {
    const detail::WalkTask<F>* task;
    size_t n, parts;
    bool span;
  };
  const Split split{&task, w.nd == 1 ? inner : rows,
                    w.nd == 1 ? std::min(threads, std::max<size_t>(1, inner / 1024)) : std::min(threads, rows),
                    w.nd == 1};
  const Split* sp = &split;  // one pointer: std::function stores the lambda without allocating
  parallel_for(split.parts, 1, [sp](size_t lo, size_t hi) {
    for (size_t k = lo; k < hi; k++) {
      const size_t b = sp->n * k / sp->parts, e = sp->n * (k + 1) / sp->parts;
      if (sp->span)
        sp->task->span(b, e);
      else
        sp->task->rows(b, e);
    }
  });
}

// Elements of one tile of a periodic operand (16 KiB).
template <class T>
constexpr size_t kTile = 16384 / sizeof(T);

// Short rows (a per-channel vector over NHWC: rows of C) would reach the loops
// one short run at a time. When the output and every operand are contiguous
// across rows except operands that repeat one row (row stride 0), the rows
// are processed many at a time instead: each repeating row is copied side by
// side into a tile on the stack, so the loops see runs of up to kTile
// elements. Returns false (doing nothing) when the walk is not of that kind.
template <class T, int K, class F>
bool tiled_runs(const Walk& w, T* y, const T* const* x, const F& f) {
  if (w.nd < 2) return false;
  const size_t n = w.inner();
  const int r = w.nd - 2;  // the row dimension
  if (n * 4 > kTile<T> || w.stride[0][w.nd - 1] != 1 || w.stride[0][r] != static_cast<int64_t>(n)) return false;
  bool periodic[K];
  bool any = false;
  for (int k = 0; k < K; k++) {
    if (w.stride[k + 1][w.nd - 1] != 1) return false;
    const int64_t rs = w.stride[k + 1][r];
    if (rs != 0 && rs != static_cast<int64_t>(n)) return false;
    periodic[k] = rs == 0;
    any = any || periodic[k];
  }
  if (!any) return false;
  Walk rows = w;  // the same walk without its innermost dimension: each step is one row
  rows.nd = w.nd - 1;
  const size_t per = kTile<T> / n;  // rows per call
  walk_static(rows, std::max<size_t>(1, kParallelFrom / n), [&](const int64_t* off, size_t count) {
    T tile[K][kTile<T>];
    const T* xr[K];
    const bool scalar[K] = {};
    for (int k = 0; k < K; k++) {
      if (!periodic[k]) continue;
      const T* src = x[k] + off[k + 1];
      const size_t m = std::min(per, count);
      for (size_t i = 0; i < m; i++) std::copy(src, src + n, tile[k] + i * n);
    }
    for (size_t r0 = 0; r0 < count; r0 += per) {
      const size_t m = std::min(per, count - r0);
      const int64_t at = static_cast<int64_t>(r0 * n);
      for (int k = 0; k < K; k++) xr[k] = periodic[k] ? tile[k] : x[k] + off[k + 1] + at;
      f(y + off[0] + at, static_cast<const T* const*>(xr), scalar, m * n);
    }
  });
  return true;
}

// f(T* y, const T* const* x, const bool* scalar, size_t n) over every run of
// the output; K inputs. f must not throw.
template <class T, int K, class F>
void for_runs(const int* dim, int nd, T* y, const int64_t* ystride, const T* const* x, const int64_t* const* xstride,
              unsigned scalar_ok, const F& f) {
  Walk w;
  const int64_t* strides[K + 1];
  strides[0] = ystride;
  for (int k = 0; k < K; k++) strides[k + 1] = xstride[k];
  make_walk(w, dim, nd, K + 1, strides);
  int64_t xs[K];
  for (int k = 0; k < K; k++) xs[k] = w.inner_stride(k + 1);
  const int64_t ys = w.inner_stride(0);
  if (tiled_runs<T, K>(w, y, x, f)) return;
  bool direct = ys == 1;
  bool scalar[K];
  for (int k = 0; k < K; k++) {
    scalar[k] = xs[k] == 0 && ((scalar_ok >> k) & 1u);
    direct = direct && (xs[k] == 1 || scalar[k]);
  }
  walk_static(w, kParallelFrom, [&](const int64_t* off, size_t n) {
    T* yb = y + off[0];
    const T* xb[K];
    for (int k = 0; k < K; k++) xb[k] = x[k] + off[k + 1];
    if (direct) {
      f(yb, static_cast<const T* const*>(xb), static_cast<const bool*>(scalar), n);
      return;
    }
    T tmp[K + 1][kBlock];
    for (size_t b = 0; b < n; b += kBlock) {
      const size_t m = std::min(kBlock, n - b);
      const T* xr[K];
      for (int k = 0; k < K; k++) {
        const int64_t s = xs[k];
        if (s == 1 || scalar[k]) {
          xr[k] = scalar[k] ? xb[k] : xb[k] + b;
          continue;
        }
        const T* src = xb[k] + static_cast<int64_t>(b) * s;
        for (size_t i = 0; i < m; i++) tmp[k + 1][i] = src[static_cast<int64_t>(i) * s];
        xr[k] = tmp[k + 1];
      }
      T* yr = ys == 1 ? yb + b : tmp[0];
      f(yr, static_cast<const T* const*>(xr), static_cast<const bool*>(scalar), m);
      if (ys != 1) {
        T* dst = yb + static_cast<int64_t>(b) * ys;
        for (size_t i = 0; i < m; i++) dst[static_cast<int64_t>(i) * ys] = tmp[0][i];
      }
    }
  });
}

// Strides of x over the dimensions of y (right-aligned, libnnc's broadcast):
// 0 where x has 1 (or no dimension) and y more.
inline void broadcast_strides(const Layout& x, const Layout& y, int64_t* s) {
  const int off = y.nd - x.nd;
  for (int i = 0; i < y.nd; i++) {
    const int j = i - off;
    s[i] = (j < 0 || x.dim[j] == 1) ? 0 : x.stride[j];
  }
}

// d = p * (sum of g b over the dimensions where d broadcasts), the backward
// of a broadcast operand. dim/nd: the full (output) shape; ds: d's strides
// over it (0 on the summed dimensions); b may be NULL (read as 1). Partial
// sums go to the stream's workspace, one d-sized block per part.
template <class T>
void reduce_runs(ccv_nnc_stream_context_t* stream, const int* dim, int nd, const Layout& d, const int64_t* ds,
                 const T* g, const int64_t* gs, const T* b, const int64_t* bs, T p) {
  const Loops<T>& L = loops<T>();
  bool reduced = false;
  for (int i = 0; i < nd; i++) reduced = reduced || (ds[i] == 0 && dim[i] > 1);
  T* dp = reinterpret_cast<T*>(d.data);
  if (!reduced) {
    if (b) {
      const T* x[] = {g, b};
      const int64_t* xs[] = {gs, bs};
      for_runs<T, 2>(dim, nd, dp, ds, x, xs, 2u, [&](T* y, const T* const* xr, const bool* sc, size_t n) {
        L.mul(y, xr[0], xr[1], n, sc[1] ? kVS : kVV, p);
      });
    } else {
      const T* x[] = {g};
      const int64_t* xs[] = {gs};
      for_runs<T, 1>(dim, nd, dp, ds, x, xs, 0u,
                     [&](T* y, const T* const* xr, const bool*, size_t n) { L.scale(y, xr[0], n, p); });
    }
    return;
  }
  // Packed strides of d's own shape, mapped onto the full shape.
  const size_t dcount = d.count();
  int64_t packed[kMaxDim];
  packed_strides(d.dim.data(), d.nd, packed);
  int64_t ps[kMaxDim];
  {
    const int off = nd - d.nd;
    for (int i = 0; i < nd; i++) ps[i] = ds[i] == 0 ? 0 : packed[i - off];
  }
  Walk w;
  const int64_t* strides[3] = {ps, gs, b ? bs : gs};
  make_walk(w, dim, nd, 3, strides);
  const size_t inner = w.inner(), rows = w.rows(), total = inner * rows;
  // A sum over rows into one contiguous row (a bias gradient): the threads
  // split the columns, each summing every row of its own columns, so no
  // partial blocks need adding up.
  bool columns = w.nd >= 2 && w.stride[0][w.nd - 1] == 1 && inner >= 512;
  for (int i = 0; i + 1 < w.nd && columns; i++) columns = w.stride[0][i] == 0;
  // Short rows summed into one (a per-channel gradient over NHWC): g (and b)
  // contiguous across the rows, d one row of `inner`.
  const bool short_rows = !columns && w.nd == 2 && w.stride[0][1] == 1 && w.stride[0][0] == 0 && w.stride[1][1] == 1 &&
                          w.stride[1][0] == static_cast<int64_t>(inner) &&
                          (!b || (w.stride[2][1] == 1 && w.stride[2][0] == static_cast<int64_t>(inner))) &&
                          inner * 4 <= kTile<T>;
  size_t parts = 1;
  if (total >= kParallelFrom && thread_count() > 1)
    parts = columns ? std::min<size_t>(thread_count(), inner / 256)
                    : std::min<size_t>(thread_count(), rows > 1 ? rows : std::max<size_t>(1, inner / 4096));
  // One block per part (one in all when splitting columns); part 0 is also
  // where the parts are summed.
  T* acc = static_cast<T*>(workspace(stream, (columns ? 1 : parts) * dcount * sizeof(T)));
  const int64_t s0 = w.inner_stride(0), sg = w.inner_stride(1), sb = b ? w.inner_stride(2) : 0;
  const int bmode_run = !b ? 0 : sb == 0 ? 2 : 1;
  auto run = [&](T* a, const int64_t* off, size_t n) {
    const T* gp = g + off[1];
    const T* bp = b ? b + off[2] : nullptr;
    T* ap = a + off[0];
    if (sg == 1 && (!b || sb <= 1) && s0 <= 1) {
      if (s0 == 0)
        *ap += L.dot(gp, bp, n, bmode_run);
      else
        L.acc(ap, gp, bp, n, bmode_run);
      return;
    }
    for (size_t i = 0; i < n; i++) {
      const int64_t j = static_cast<int64_t>(i);
      ap[j * s0] += gp[j * sg] * (b ? bp[j * sb] : T(1));
    }
  };
  auto part = [&](size_t k) {
    if (columns) {
      const size_t c0 = inner * k / parts, c1 = inner * (k + 1) / parts;
      if (!b && w.nd == 2 && sg == 1) {
        // A plain column sum (ADD's bias gradient): the reduction family's
        // column loop keeps the sums in registers across the rows.
        red::loops<T>().col_reduce(red::kSum, g + c0, rows, w.stride[1][0], c1 - c0, acc + c0, true);
        return;
      }
      std::fill(acc + c0, acc + c1, T(0));
      auto body = [&](const int64_t* off, size_t) {
        const int64_t o[3] = {off[0] + static_cast<int64_t>(c0), off[1] + static_cast<int64_t>(c0) * sg,
                              off[2] + static_cast<int64_t>(c0) * sb};
        run(acc, o, c1 - c0);
      };
      const detail::WalkTask<decltype(body)> task{&w, &body};
      task.rows(0, rows);
      return;
    }
    T* a = acc + k * dcount;
    std::fill(a, a + dcount, T(0));
    if (w.nd == 1) {
      const size_t lo = inner * k / parts, hi = inner * (k + 1) / parts;
      int64_t off[3] = {static_cast<int64_t>(lo) * w.stride[0][0], static_cast<int64_t>(lo) * w.stride[1][0],
                        static_cast<int64_t>(lo) * w.stride[2][0]};
      run(a, off, hi - lo);
      return;
    }
    const size_t lo = rows * k / parts, hi = rows * (k + 1) / parts;
    if (short_rows) {
      // Rows of n side by side in a tile of sums: runs of many rows at a time, folded into a at the end.
      T tile[kTile<T>];
      const size_t per = kTile<T> / inner;
      std::fill(tile, tile + per * inner, T(0));
      for (size_t r = lo; r < hi; r += per) {
        const size_t m = std::min(per, hi - r);
        const int64_t at = static_cast<int64_t>(r * inner);
        L.acc(tile, g + at, b ? b + at : nullptr, m * inner, b ? 1 : 0);
      }
      for (size_t j = 0; j < per; j++) L.acc(a, tile + j * inner, nullptr, inner, 0);
      return;
    }
    auto body = [&](const int64_t* off, size_t n) { run(a, off, n); };
    const detail::WalkTask<decltype(body)> task{&w, &body};
    task.rows(lo, hi);
  };
  if (parts == 1) {
    part(0);
  } else {
    parallel_for(parts, 1, [&](size_t lo, size_t hi) {
      for (size_t k = lo; k < hi; k++) part(k);
    });
    if (!columns)
      for (size_t k = 1; k < parts; k++) L.acc(acc, acc + k * dcount, nullptr, dcount, 0);
  }
  // d = p * acc through d's own strides.
  const T* x[] = {acc};
  const int64_t* xs[] = {packed};
  for_runs<T, 1>(d.dim.data(), d.nd, dp, d.stride.data(), x, xs, 0u,
                 [&](T* y, const T* const* xr, const bool*, size_t n) { L.scale(y, xr[0], n, p); });
}

}  // namespace nnc::ew
