// The pooling family inside. pool.cpp describes MAX_POOL and AVERAGE_POOL
// (semantics, shapes, checks) and registers the kernels; cpu_ref.cpp holds the
// plain loops, cpu_opt.cpp the threaded, vectorised fp32 paths.
//
//   Geometry g = geometry(cmd, hint, x, y, "MAX_POOL_FORWARD");  // y: the output or g
#pragma once

#include "cmd/common/image.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::pool {

struct Geometry {
  int N = 1, H = 0, W = 0, C = 0, OH = 0, OW = 0;
  int KH = 1, KW = 1, SH = 1, SW = 1, PT = 0, PL = 0, PB = 0, PR = 0;
  Image x, y;  // x: the input (or dx), y: the output (or g)
  int datatype = 0;
};

// Check x and y (the pooled side: the forward output or the gradient g)
// against the window and the hint (ccv_nnc_no_hint: derived from the extents)
// and fill the geometry. Throws nnc::Error naming the problem.
Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* y, const char* name);

NNC_KERNEL(max_forward_ref);
NNC_KERNEL(max_backward_ref);
NNC_KERNEL(avg_forward_ref);
NNC_KERNEL(avg_backward_ref);

// The CPU_OPT kernels (cpu_opt.cpp).
void register_cpu_opt(Registry& r);

}  // namespace nnc::pool
