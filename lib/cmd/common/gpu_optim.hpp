// LAMB's per-element steps for the GPU_REF kernel (cuda/more_kernels.cu) in
// float, as host code: nvcc compiles this header into the kernel as it is,
// and test/unit/gpu_plan checks it on the CPU against lib/cmd/optim/optim.hpp's
// double formulas (lamb_moments, lamb_direction, lamb_trust).
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// optim::Coef's LAMB fields.
struct LambCoef {
  float rate = 0, scale = 1, decay = 0;
  float beta1 = 0, beta2 = 0, epsilon = 0;
  float inv_bc1 = 1, inv_bc2 = 1;
};

// n, u: the new moments from g and the old m, v.
NNC_HD void lamb_moments_f(const LambCoef& c, float g, float m, float v, float* n, float* u) {
  const float grad = c.scale * g;
  *n = c.beta1 * m + (1.f - c.beta1) * grad;
  *u = c.beta2 * v + (1.f - c.beta2) * grad * grad;
}
// The update direction r from a and the new moments.
NNC_HD float lamb_direction_f(const LambCoef& c, float a, float n, float u) {
  return n * c.inv_bc1 / (sqrtf(u * c.inv_bc2) + c.epsilon) + c.decay * a;
}
// rate * trust from the squared norms of a and r (trust 1 when either is 0).
NNC_HD double lamb_step_size(const LambCoef& c, double a2, double r2) {
  return static_cast<double>(c.rate) * (a2 > 0 && r2 > 0 ? sqrt(a2) / sqrt(r2) : 1.0);
}

}  // namespace nnc::gpu
