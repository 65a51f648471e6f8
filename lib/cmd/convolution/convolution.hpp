// The convolution family inside. convolution.cpp describes CONVOLUTION
// (semantics, shapes, checks) and registers the kernels; cpu_ref.cpp holds the
// plain loops, cpu_opt.cpp the packed, threaded path over the micro-kernels of
// kernels.hpp (kernels_avx2.cpp / kernels_avx512.cpp).
//
//   Geometry g = geometry(cmd, hint, x, w, y, "CONVOLUTION_FORWARD");
//   // g.N, g.H, g.W, g.C -> g.OH, g.OW, g.K; element strides of every tensor.
#pragma once

#include <cstdint>

#include "cmd/common/conv_rules.hpp"
#include "cmd/common/image.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::conv {

// Strides of the weights in (k, kh, kw, c) order of meaning. NHWC weights are
// [K, KH, KW, C/groups], NCHW weights [K, C/groups, KH, KW].
struct Weights {
  unsigned char* data = nullptr;
  int datatype = 0;
  int k = 0, kh = 0, kw = 0, c = 0;
  int64_t sk = 0, skh = 0, skw = 0, sc = 0;
  bool nhwc = true;
};

// One convolution problem: shapes, window, and the element strides of each
// tensor present (data NULL where absent).
struct Geometry {
  int N = 1, H = 0, W = 0, C = 0;      // input
  int K = 0, OH = 0, OW = 0;           // output
  int KH = 1, KW = 1;                  // window
  int SH = 1, SW = 1;                  // stride
  int PT = 0, PL = 0, PB = 0, PR = 0;  // padding: top, left, bottom, right
  int DH = 1, DW = 1;                  // dilation
  int G = 1, Cg = 0, Kg = 0;           // groups, channels per group
  bool batched = true;                 // inputs are 4-d (otherwise 3-d, N = 1)
  Image x, y;                          // y: the output (forward) or g (backward)
  Weights w;
  unsigned char* bias = nullptr;  // K elements with stride bias_stride
  int64_t bias_stride = 1;
  int datatype = 0;
};

// The weights' layout (images: image_of, cmd/common/image.hpp).
Weights weights_of(const ccv_nnc_tensor_t* t);

// The hint a call runs with: the given one, or, for ccv_nnc_no_hint, the one
// derived from the input and output extents with the dilated window (core's
// derivation knows nothing of dilation). Throws when none fits.
ccv_nnc_hint_t resolve_hint(const ccv_nnc_cmd_param_t& params, const ccv_nnc_hint_t& hint,
                            const ccv_nnc_tensor_param_t& x, const ccv_nnc_tensor_param_t& y, const char* name);

// Check x, w (and bias) against the command and fill the geometry; `y` is the
// forward output or the backward gradient g (its extents are checked against
// the ones the hint gives). Throws nnc::Error naming the problem.
Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y, const char* name);

// Tensor roles of a backward call (shared with the other convolution family).
using conv_rules::BackwardIo;
using conv_rules::backward_io;

// dbias = the sum of g over everything but its channels (the backward call
// that asks for dbias alone, which needs neither x nor w).
void bias_gradient_only(const ccv_nnc_tensor_t* g, ccv_nnc_tensor_t* dbias);

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

// The CPU_OPT kernels (cpu_opt.cpp).
void register_cpu_opt(Registry& r);

}  // namespace nnc::conv
