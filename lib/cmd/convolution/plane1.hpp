// CONVOLUTION forward of a one-channel image into channel-major output planes
// (a first layer in NCHW: C = 1, stride 1, any window, padding, dilation),
// vectorised along the pixels of the output plane.
//
// The caller lays each image out as KW shifted copies of its zero-padded
// plane, copy j holding columns j * DW .. j * DW + OW - 1 of every padded row,
// so rows of exactly OW pixels: then tap (kh, kw) of output pixel p (counted
// row-major over the OH x OW plane) is element p + kh * DH * OW of copy kw,
// and a run of pixels reads one contiguous run per tap, across output rows.
// For each run of up to 3 vectors of pixels and each block of F filters,
// the F x 3 accumulators take, per tap, the shifted input vectors times the
// tap's broadcast weights; the results go straight into the F output planes
// (no NHWC row and no transpose). A plane with rows of exactly OW pixels is
// one line of OH * OW pixels (every lane used); a strided one is OH lines.
//
// Compiled per instruction set (plane1_avx2.cpp, plane1_avx512.cpp from
// plane1_impl.hpp); call only after the matching cpu_features() check.
#pragma once

#include <cstdint>

namespace nnc::conv {

struct Plane1Args {
  const float* x = nullptr;         // the shifted copies of one image
  const int64_t* tapoff = nullptr;  // per tap (kh * KW + kw): kw * copy stride + kh * DH * OW
  int taps = 0;
  const float* w = nullptr;      // this block's weights: [taps][filters]
  const float* bias = nullptr;   // the block's filters' biases, or NULL for 0
  float* y = nullptr;            // first output pixel of the block's first filter
  int64_t ysc = 0;               // plane stride of y
  int lines = 1, len = 0;        // `lines` runs of `len` adjacent output pixels,
  int64_t xline = 0, yline = 0;  // the next at x + xline, y + yline
  int fvalid = 0;                // planes stored (the rest of the block is padding)
};

// Filters per block and floats per vector of each instruction set. The
// copies need `lanes` floats of slack after them: a line's last vector reads
// up to lanes - 1 floats past its end.
constexpr int kPlane1FiltersAvx2 = 4, kPlane1LanesAvx2 = 8;
constexpr int kPlane1FiltersAvx512 = 8, kPlane1LanesAvx512 = 16;

void plane1_avx2(const Plane1Args& a);
void plane1_avx512(const Plane1Args& a);

}  // namespace nnc::conv
