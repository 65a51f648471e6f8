// Winograd convolution F(m x m, R x R) for stride 1, no dilation, one group
// and square windows of 3 (m = 4) or 5 (m = 2): both on 6 x 6 tiles, so the
// products per output fall from R² to 36 / m² (9 -> 2.25, 25 -> 9) at the cost
// of transforming inputs, weights and outputs. Used by CONVOLUTION's CPU_OPT
// for the forward pass, the input gradient (the convolution of the padded g
// with the flipped, transposed weights) and the weight gradient (below), on
// AVX-512 (winograd_avx512.cpp) and AVX2 + FMA (winograd_avx2.cpp) CPUs: one
// body, winograd_body.hpp, compiled by each with its own vector type.
//
//   y[n, oh, ow, k] = bias[k] + sum_{i, j < R} sum_c in[n, oh + i, ow + j, c] · w[k, i, j, c]
//
// for oh < OH, ow < OW, where `in` is a packed NHWC buffer already padded,
// large enough that every tile's 6 x 6 patch lies inside it (winograd_extent).
// The transforms' points are 0, ±1, ±2 and infinity (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016); the matrices are
// derived here by the Toom-Cook construction.
//
//   WinogradRun r;  ... fill it ...
//   std::vector<float> scratch(winograd_scratch_floats(r));
//   winograd_avx512(r, scratch.data());  // under the compute lock when threaded
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnc::conv {

struct WinogradRun {
  const float* in = nullptr;  // N x in_h x in_w x C, packed
  int N = 0, in_h = 0, in_w = 0, C = 0;
  const float* w = nullptr;     // K x R x R x C, packed
  const float* bias = nullptr;  // K floats, or NULL for 0
  int K = 0, R = 0, OH = 0, OW = 0;
  float* out = nullptr;  // NHWC with unit-stride channels
  int64_t sn = 0, sh = 0, sw = 0;
  bool threaded = true;
};

// Output tile size m for window R (0: Winograd does not apply). Inline here,
// not in the per-instruction-set files, so that choosing an algorithm never
// calls code compiled for a set the CPU may lack.
inline int winograd_tile(int R) { return R == 3 ? 4 : R == 5 ? 2 : 0; }
// The padded input extent every tile needs: ceil(O / m) · m + R - 1.
inline int winograd_extent(int O, int R) {
  const int m = winograd_tile(R);
  return (O + m - 1) / m * m + R - 1;
}
// Scratch the run needs, in floats (64-byte aligned pieces inside), for the
// same instruction set's run.
size_t winograd_scratch_floats(const WinogradRun& r);
size_t winograd_scratch_floats_avx2(const WinogradRun& r);
// winograd_avx512 runs on CPUs with cpu_features().avx512 only,
// winograd_avx2 on those with cpu_features().avx2; scratch 64-byte aligned.
void winograd_avx512(const WinogradRun& r, float* scratch);
void winograd_avx2(const WinogradRun& r, float* scratch);

// The weight gradient by F(R x R, m x m) on the same tiles and transforms:
//   dw[k, i, j, c] = sum_{n, oh < OH, ow < OW} g[n, oh, ow, k] · in[n, oh + i, ow + j, c]
// with `in` padded as above (winograd_extent of OH and OW).
struct WinogradGradRun {
  const float* in = nullptr;  // N x in_h x in_w x C, packed
  int N = 0, in_h = 0, in_w = 0, C = 0;
  const float* g = nullptr;  // N x OH x OW x K, unit-stride channels
  int64_t gsn = 0, gsh = 0, gsw = 0;
  int K = 0, R = 0, OH = 0, OW = 0;
  float* dw = nullptr;     // K x R x R x C, packed; overwritten
  float* dbias = nullptr;  // K floats, the sum of g, or NULL; overwritten
  bool threaded = true;
};
size_t winograd_gradient_scratch_floats(const WinogradGradRun& r);
size_t winograd_gradient_scratch_floats_avx2(const WinogradGradRun& r);
void winograd_gradient_avx512(const WinogradGradRun& r, float* scratch);
void winograd_gradient_avx2(const WinogradGradRun& r, float* scratch);

}  // namespace nnc::conv
