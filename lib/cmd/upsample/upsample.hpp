// The UPSAMPLE family inside: upsample.cpp describes the command and
// registers the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the
// packed, threaded ones (their bodies in upsample_body.hpp, compiled once per
// instruction set: cpu_opt.cpp, cpu_opt_avx2.cpp, cpu_opt_avx512.cpp).
#pragma once

#include <algorithm>
#include <cmath>

#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::upsample {

// The height axis of a tensor (the width axis follows it), by libnnc's rule:
// [H, W]; [C, H, W] for NCHW and CHWN 3-d, else [H, W, C]; [N, C, H, W] for
// NCHW 4-d, else [N, H, W, C] (CHWN 4-d: [C, H, W, N]). -1 for other ranks.
inline int height_axis(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  if (nd == 2) return 0;
  if (nd == 3) return p.format == CCV_TENSOR_FORMAT_NCHW || p.format == CCV_TENSOR_FORMAT_CHWN ? 1 : 0;
  if (nd == 4) return p.format == CCV_TENSOR_FORMAT_NCHW ? 2 : 1;
  return -1;
}

// A tensor as B x H x W x C around its two spatial axes (B the axes before,
// C those after).
struct Geometry {
  size_t B = 1, C = 1;
  int H = 1, W = 1;
};
inline Geometry geometry(const ccv_nnc_tensor_param_t& p) {
  Geometry g;
  const int h = height_axis(p), nd = nd_of(p.dim);
  for (int i = 0; i < h; i++) g.B *= static_cast<size_t>(p.dim[i]);
  g.H = p.dim[h];
  g.W = p.dim[h + 1];
  for (int i = h + 2; i < nd; i++) g.C *= static_cast<size_t>(p.dim[i]);
  return g;
}

// Where output position `dst` of an axis resized from `in` to `out` reads:
// i0, and for bilinear i1 with weight l (1 - l on i0). Coordinates come from
// the two extents, not from the command's scales (which only size the output
// in tensor_auto), so any output size works, down as well as up.
//   bilinear: src = (dst + 0.5) * in / out - 0.5 clamped at 0 (half-pixel
//     centres), or dst * (in - 1) / (out - 1) with align_corners;
//   nearest: the input cell holding the output cell's centre,
//     floor((dst + 0.5) * in / out), or the aligned coordinate rounded.
struct Tap {
  int i0 = 0, i1 = 0;
  double l = 0;
};
inline Tap tap(int type, bool align_corners, int dst, int in, int out) {
  Tap t;
  double src;
  if (align_corners)
    src = out > 1 ? static_cast<double>(dst) * (in - 1) / (out - 1) : 0.0;
  else if (type == CCV_NNC_UPSAMPLE_NEAREST)
    src = (dst + 0.5) * in / out;
  else
    src = std::max(0.0, (dst + 0.5) * in / out - 0.5);
  if (type == CCV_NNC_UPSAMPLE_NEAREST) {
    const int i = static_cast<int>(align_corners ? std::floor(src + 0.5) : std::floor(src));
    t.i0 = t.i1 = std::min(std::max(i, 0), in - 1);
    return t;
  }
  t.i0 = std::min(static_cast<int>(std::floor(src)), in - 1);
  t.i1 = std::min(t.i0 + 1, in - 1);
  t.l = t.i1 == t.i0 ? 0.0 : src - t.i0;
  return t;
}

// What the optimised loops (upsample_body.hpp) read: the packed input
// B x H x W x C, the output extents, and the taps of every output row and
// column with their weights in the element type (nearest: l = 0). For the
// backward, the output rows that read input row iy are oy in
// [lo[iy], hi[iy]), the output columns that read input column j ox in
// [wlo[j], whi[j]).
template <class T>
struct Tables {
  size_t B = 1, C = 1;
  int H = 1, W = 1, OH = 1, OW = 1;
  bool nearest = false;
  bool half_pixel_2x = false;  // bilinear, half-pixel centres, OW = 2 W (the taps repeat every 2 columns)
  bool nearest_2x = false;     // nearest, not aligned, OW = 2 W: output column ox reads ox / 2
  const int *h0 = nullptr, *h1 = nullptr, *w0 = nullptr, *w1 = nullptr;
  const int *lo = nullptr, *hi = nullptr, *wlo = nullptr, *whi = nullptr;
  const T *hl = nullptr, *wl = nullptr;
};

// The loops of one instruction set (upsample_body.hpp): output rows
// r = b * OH + oy in [r0, r1) of the forward; input rows r = b * H + iy of
// the backward, each written whole (dx need not be zeroed). `row` is
// scratch for one row of max(W, OW) * C elements.
#define NNC_UPSAMPLE_LOOPS                                                                                  \
  void forward_rows(const Tables<float>& t, const float* x, float* y, size_t r0, size_t r1, float* row);   \
  void forward_rows(const Tables<double>& t, const double* x, double* y, size_t r0, size_t r1, double* row); \
  void backward_rows(const Tables<float>& t, const float* g, float* dx, size_t r0, size_t r1, float* row); \
  void backward_rows(const Tables<double>& t, const double* g, double* dx, size_t r0, size_t r1, double* row);
namespace generic {
NNC_UPSAMPLE_LOOPS
}
namespace avx2 {
NNC_UPSAMPLE_LOOPS
}
namespace avx512 {
NNC_UPSAMPLE_LOOPS
}
#undef NNC_UPSAMPLE_LOOPS

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);
NNC_KERNEL(forward_opt);
NNC_KERNEL(backward_opt);

}  // namespace nnc::upsample
