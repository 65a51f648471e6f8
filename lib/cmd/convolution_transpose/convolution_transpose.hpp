// The transposed-convolution family inside. convolution_transpose.cpp
// describes CONVOLUTION_TRANSPOSE (semantics, shapes, checks) and registers
// the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the fp32 path
// that runs the convolution family's CPU_OPT kernels with the roles swapped.
//
//   Geometry g = geometry(cmd, hint, x, w, bias, y, "CONVOLUTION_TRANSPOSE_FORWARD");
//   // g.N, g.H, g.W, g.C (input) -> g.OH, g.OW, g.K (output channels)
#pragma once

#include <cstdint>

#include "cmd/common/conv_rules.hpp"
#include "cmd/common/image.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::convt {

// Strides of the weights in (c, kh, kw, k) order of meaning: NHWC weights
// are [C, KH, KW, K/groups], NCHW weights [C, K/groups, KH, KW] (C the input
// channels, K the output channels) — a convolution's weights with its
// filters and channels exchanged.
struct Weights {
  unsigned char* data = nullptr;
  int c = 0, kh = 0, kw = 0, k = 0;
  int64_t sc = 0, skh = 0, skw = 0, sk = 0;
};

struct Geometry {
  int N = 1, H = 0, W = 0, C = 0;      // input
  int K = 0, OH = 0, OW = 0;           // output
  int KH = 1, KW = 1;                  // window
  int SH = 1, SW = 1;                  // stride
  int PT = 0, PL = 0, PB = 0, PR = 0;  // padding (cropped off the full output)
  int DH = 1, DW = 1;                  // dilation
  int OP = 0;                          // output_padding
  int G = 1, Cg = 0, Kg = 0;           // groups, channels per group
  Image x, y;                          // y: the output (forward) or g (backward)
  Weights w;
  unsigned char* bias = nullptr;
  int64_t bias_stride = 1;
  int datatype = 0;
};

Weights weights_of(const ccv_nnc_tensor_t* t);

// The hint a call runs with: ccv_nnc_no_hint reads as stride 1, no padding.
ccv_nnc_hint_t effective_hint(const ccv_nnc_hint_t& hint);

// Check x, w (and bias) against the command and y (the forward output or the
// backward's g); fill the geometry. Throws nnc::Error naming the problem.
Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y, const char* name);

// Tensor roles of a backward call (shared with the other convolution family).
using conv_rules::BackwardIo;
using conv_rules::backward_io;

// dbias[k] = sum of g over everything but its channels (any float type).
void bias_gradient(const ccv_nnc_tensor_t* g, ccv_nnc_tensor_t* dbias);
// Check the dbias-only call (g, dbias; no x or w needed).
void check_bias_only(const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* dbias, const char* name);

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

void register_cpu_opt(Registry& r);

}  // namespace nnc::convt
