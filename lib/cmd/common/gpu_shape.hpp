// Index maps of the GPU_REF shape kernels (cuda/more_kernels.cu: PAD,
// UPSAMPLE; TRANSPOSE is a plain gpu_plan copy) as host code: nvcc compiles
// this header into the kernels as it is, and test/unit/gpu_plan checks it on
// the CPU against the CPU_REF families' own maps (pad::source_index,
// upsample::tap) and naive walks.
//
//   PadMap m;  make_pad_map(m, type, x.dim, x.stride, y.dim, y.stride, nd, begin);
//   // element i (0 <= i < m.count) of y, row-major: pad_map(m, i, &yoff) is the
//   // offset of x it copies (-1: a zero), yoff its own offset in y.
//   UpMap u;   make_up_map(u, nearest, align_corners, h, big.dim, big.stride, small.dim, small.stride, nd);
//   // element i of the big tensor (y forward, g backward): up_map(u, i, &off, soff, w)
//   // gives its offset and the offsets / weights of the 4 small-tensor (x / dx) taps.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

enum PadType : int { kPadZero = 0, kPadReplicate = 1, kPadReflect = 2 };  // CCV_NNC_PAD_*

// The input index that padded position i of an axis of extent n >= 1 (padded
// by `begin` in front) reads, or -1 where zero padding writes a 0.
NNC_HD int64_t pad_source(int type, int64_t i, int64_t begin, int64_t n) {
  int64_t j = i - begin;
  if (j >= 0 && j < n) return j;
  if (type == kPadZero) return -1;
  if (type == kPadReplicate || n == 1) return j < 0 ? 0 : n - 1;
  const int64_t period = 2 * (n - 1);  // reflect: mirror images repeat
  j %= period;
  if (j < 0) j += period;
  return j < n ? j : period - j;
}

struct PadMap {
  int nd = 0;
  int type = kPadZero;
  int64_t count = 0;
  int64_t dim[kPlanDims] = {};         // the big tensor (y, g)
  int64_t big_stride[kPlanDims] = {};  // its strides
  int64_t small_dim[kPlanDims] = {};   // the small one (x, dx)
  int64_t small_stride[kPlanDims] = {};
  int64_t begin[kPlanDims] = {};
};
// False when the shapes do not fit (big = small + begin + end, begin >= 0, small >= 1).
bool make_pad_map(PadMap& m, int type, const int* small_dim, const int64_t* small_stride, const int* big_dim,
                  const int64_t* big_stride, int nd, const int* begin);

NNC_HD int64_t pad_map(const PadMap& m, int64_t i, int64_t* big_off) {
  int64_t off = 0, src = 0;
  bool zero = false;
  for (int d = m.nd - 1; d >= 0; d--) {
    const int64_t q = i / m.dim[d], c = i - q * m.dim[d];
    i = q;
    off += c * m.big_stride[d];
    const int64_t j = pad_source(m.type, c, m.begin[d], m.small_dim[d]);
    if (j < 0)
      zero = true;
    else
      src += j * m.small_stride[d];
  }
  *big_off = off;
  return zero ? -1 : src;
}

// UPSAMPLE's tap (lib/cmd/upsample/upsample.hpp, the same arithmetic in
// double): where output position dst of an axis resized from `in` to `out`
// reads, i0 and i1 with weight l on i1 (1 - l on i0).
NNC_HD void up_tap(int nearest, int align, int64_t dst, int64_t in, int64_t out, int64_t* i0, int64_t* i1, double* l) {
  double src;
  if (align)
    src = out > 1 ? static_cast<double>(dst) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  else if (nearest)
    src = (static_cast<double>(dst) + 0.5) * static_cast<double>(in) / static_cast<double>(out);
  else
    src = fmax(0.0, (static_cast<double>(dst) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
  if (nearest) {
    int64_t i = static_cast<int64_t>(align ? floor(src + 0.5) : floor(src));
    i = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
    *i0 = *i1 = i;
    *l = 0;
    return;
  }
  int64_t a = static_cast<int64_t>(floor(src));
  a = a < in - 1 ? a : in - 1;
  *i0 = a;
  *i1 = a + 1 < in - 1 ? a + 1 : in - 1;
  *l = *i1 == *i0 ? 0.0 : src - static_cast<double>(a);
}

struct UpMap {
  int nd = 0, h = 0;  // the height axis; the width axis is h + 1
  int nearest = 0, align = 0;
  int64_t count = 0;
  int64_t dim[4] = {};  // the big tensor (y forward, g backward)
  int64_t big_stride[4] = {};
  int64_t small_dim[4] = {};  // x forward, dx backward
  int64_t small_stride[4] = {};
};
// False when nd is not 2..4, h is not an axis with a width axis after it, or
// the shapes differ outside the two spatial axes.
bool make_up_map(UpMap& m, int nearest, int align, int h, const int* big_dim, const int64_t* big_stride,
                 const int* small_dim, const int64_t* small_stride, int nd);

// Element i of the big tensor: its offset, and the small tensor's 4 taps
// (rows i0, i0, i1, i1 by columns i0, i1, i0, i1) with their weights
// ((1 - ly)(1 - lx), (1 - ly) lx, ly (1 - lx), ly lx; nearest: 1, 0, 0, 0).
NNC_HD void up_map(const UpMap& m, int64_t i, int64_t* big_off, int64_t* soff, double* w) {
  int64_t off = 0, base = 0, c[4] = {};
  for (int d = m.nd - 1; d >= 0; d--) {
    const int64_t q = i / m.dim[d];
    c[d] = i - q * m.dim[d];
    i = q;
    off += c[d] * m.big_stride[d];
    if (d != m.h && d != m.h + 1) base += c[d] * m.small_stride[d];
  }
  *big_off = off;
  int64_t y0, y1, x0, x1;
  double ly, lx;
  up_tap(m.nearest, m.align, c[m.h], m.small_dim[m.h], m.dim[m.h], &y0, &y1, &ly);
  up_tap(m.nearest, m.align, c[m.h + 1], m.small_dim[m.h + 1], m.dim[m.h + 1], &x0, &x1, &lx);
  const int64_t sy = m.small_stride[m.h], sx = m.small_stride[m.h + 1];
  soff[0] = base + y0 * sy + x0 * sx;
  soff[1] = base + y0 * sy + x1 * sx;
  soff[2] = base + y1 * sy + x0 * sx;
  soff[3] = base + y1 * sy + x1 * sx;
  w[0] = (1 - ly) * (1 - lx);
  w[1] = (1 - ly) * lx;
  w[2] = ly * (1 - lx);
  w[3] = ly * lx;
}

// CMUL's pairs: a tensor whose last axis holds (real, imaginary) pairs, seen
// over the n axes of the full pair shape half[0..n) (the full shape with its
// last extent halved): its strides over it (aligned at the last axis, 0 where
// it broadcasts, the last one doubled) and *im, the distance from a real part
// to its imaginary part. False when the last axis is odd or the tensor does
// not broadcast.
bool pair_strides(const int* dim, const int64_t* stride, int nd, const int* half, int n, int64_t* s, int64_t* im);

}  // namespace nnc::gpu
