// CPU_OPT kernel of TRANSPOSE: y[i] = x[swapped i] as a strided copy.
//
// The copy is a Walk over y's shape with x's strides permuted. When the swap
// leaves the innermost dimension contiguous in both tensors the rows are
// plain copies; when it moves x's contiguous dimension away from y's (the
// matrix-transpose case), the two dimensions are copied in square tiles so
// that both sides stay in cache. Work splits over the pool; nothing allocates.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cmd/common/strided.hpp"
#include "cmd/common/transpose_avx512.hpp"
#include "cmd/util/transpose.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::util {

namespace {

constexpr size_t kParallelFrom = size_t{1} << 15;
constexpr size_t kTile = 32;

template <class E>
void copy_row(E* y, int64_t ys, const E* x, int64_t xs, size_t n) {
  if (ys == 1 && xs == 1) {
    std::memcpy(y, x, n * sizeof(E));
    return;
  }
  for (size_t i = 0; i < n; i++) y[static_cast<int64_t>(i) * ys] = x[static_cast<int64_t>(i) * xs];
}

// y[r * ys + c] = x[r + c * xs] for r in [r0, r1), c in [0, C), in tiles.
template <class E>
void tile_rows(E* y, int64_t ys, const E* x, int64_t xs, size_t r0, size_t r1, size_t C) {
  if constexpr (sizeof(E) == 4) {
    static const bool avx512 = cpu_features().avx512;
    if (avx512) {  // bit copies through float lanes: no arithmetic, payloads kept
      transpose_f32_avx512(reinterpret_cast<const float*>(x + r0), xs, static_cast<int>(C), static_cast<int>(r1 - r0),
                           reinterpret_cast<float*>(y + static_cast<int64_t>(r0) * ys), ys);
      return;
    }
  }
  for (size_t c0 = 0; c0 < C; c0 += kTile) {
    const size_t c1 = std::min(C, c0 + kTile);
    for (size_t r = r0; r < r1; r++) {
      E* yr = y + static_cast<int64_t>(r) * ys;
      const E* xr = x + r;
      for (size_t c = c0; c < c1; c++) yr[c] = xr[static_cast<int64_t>(c) * xs];
    }
  }
}

template <class E>
void transpose(const Layout& x, const Layout& y, int a, int b) {
  int64_t xs[kMaxDim] = {};
  for (int i = 0; i < y.nd; i++) xs[i] = x.stride[i];
  std::swap(xs[a], xs[b]);
  const int64_t* strides[2] = {y.stride.data(), xs};
  Walk w;
  make_walk(w, y.dim.data(), y.nd, 2, strides);
  E* yp = reinterpret_cast<E*>(y.data);
  const E* xp = reinterpret_cast<const E*>(x.data);
  const int last = w.nd - 1;
  // The tiled case: y's inner stride is 1 and x is contiguous along another walk dimension d.
  int d = -1;
  if (w.stride[0][last] == 1 && w.stride[1][last] != 1)
    for (int i = 0; i < last; i++)
      if (w.stride[1][i] == 1) d = i;
  if (d < 0) {
    walk_parallel(w, kParallelFrom, [&](const int64_t* off, size_t n) {
      copy_row(yp + off[0], w.inner_stride(0), xp + off[1], w.inner_stride(1), n);
    });
    return;
  }
  // Outer dimensions: every walk dimension but d and the last.
  int outer_dim[kMaxDim], no = 0;
  size_t outer = 1;
  for (int i = 0; i < last; i++)
    if (i != d) outer_dim[no++] = i, outer *= static_cast<size_t>(w.dim[i]);
  const size_t R = static_cast<size_t>(w.dim[d]), C = static_cast<size_t>(w.dim[last]);
  const int64_t ys = w.stride[0][d], xcs = w.stride[1][last];
  const size_t row_tiles = (R + kTile - 1) / kTile;
  const size_t tasks = outer * row_tiles;
  range_parallel(tasks, outer * R * C >= kParallelFrom ? 0 : tasks + 1, 1, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; t++) {
      size_t o = t / row_tiles;
      const size_t rt = t % row_tiles;
      int64_t yo = 0, xo = 0;
      for (int k = no - 1; k >= 0; k--) {
        const int dim = outer_dim[k];
        const size_t i = o % static_cast<size_t>(w.dim[dim]);
        o /= static_cast<size_t>(w.dim[dim]);
        yo += static_cast<int64_t>(i) * w.stride[0][dim];
        xo += static_cast<int64_t>(i) * w.stride[1][dim];
      }
      tile_rows(yp + yo, ys, xp + xo, xcs, rt * kTile, std::min(R, (rt + 1) * kTile), C);
    }
  });
}

}  // namespace

NNC_KERNEL(transpose_opt) {
  const Layout x = layout_of(inputs[0], "TRANSPOSE input");
  const Layout y = layout_of(outputs[0], "TRANSPOSE output");
  const int a = cmd.info.transpose.axis[0], b = cmd.info.transpose.axis[1];
  switch (y.element_size) {
    case 1:
      transpose<uint8_t>(x, y, a, b);
      break;
    case 2:
      transpose<uint16_t>(x, y, a, b);
      break;
    case 4:
      transpose<uint32_t>(x, y, a, b);
      break;
    default:
      transpose<uint64_t>(x, y, a, b);
      break;
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::util
