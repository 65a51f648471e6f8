// Drivers of the element-wise CPU_OPT kernels (ew and the broadcasting BLAS
// commands): they walk tensors of one output shape through any strides,
// broadcasting included (stride 0), and hand the inner loops (loops.hpp)
// contiguous runs.
//
//   const T* x[] = {a, b};
//   const int64_t* xs[] = {as, bs};            // element strides over y's dims
//   for_runs<T, 2>(y.dim.data(), y.nd, y_ptr, ys, x, xs, kScalarOk, [&](T* yr, const T* const* xr, const bool* sc, size_t n) {
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

#include "cmd/ew/loops.hpp"
#include "cmd/util/strided.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

// Walks at least this big run on the pool.
constexpr size_t kParallelFrom = size_t{1} << 15;
// Elements per gathered block.
constexpr size_t kBlock = 256;

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
  bool direct = ys == 1;
  bool scalar[K];
  for (int k = 0; k < K; k++) {
    scalar[k] = xs[k] == 0 && ((scalar_ok >> k) & 1u);
    direct = direct && (xs[k] == 1 || scalar[k]);
  }
  walk_parallel(w, kParallelFrom, [&](const int64_t* off, size_t n) {
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
  size_t parts = 1;
  if (total >= kParallelFrom && thread_count() > 1)
    parts = std::min<size_t>(thread_count(), rows > 1 ? rows : std::max<size_t>(1, inner / 4096));
  // One block per part; part 0 is also where the parts are summed.
  T* acc = static_cast<T*>(workspace(stream, parts * dcount * sizeof(T)));
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
    for (size_t k = 1; k < parts; k++) L.acc(acc, acc + k * dcount, nullptr, dcount, 0);
  }
  // d = p * acc through d's own strides.
  const T* x[] = {acc};
  const int64_t* xs[] = {packed};
  for_runs<T, 1>(d.dim.data(), d.nd, dp, d.stride.data(), x, xs, 0u,
                 [&](T* y, const T* const* xr, const bool*, size_t n) { L.scale(y, xr[0], n, p); });
}

}  // namespace nnc::ew
