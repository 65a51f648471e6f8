// The optimisers' per-element steps for the GPU_REF kernels in float, as
// host code: SGD, ADAM, ADAMW and RMSPROP (cuda/loss_optim_kernels.cu) and
// LAMB (cuda/more_kernels.cu). nvcc compiles this header into the kernels as
// it is, and test/unit/gpu_plan and test/unit/gpu_half check it on the CPU
// against lib/cmd/optim/optim.hpp's double formulas and against CPU_REF's
// 16F / 16BF results (the kernels load 32F / 16F / 16BF as float, compute in
// float and round each output once when they store it).
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// Float products and sums that nvcc may not fuse into an fma: it fuses
// a * b + c where it sees fit, and two inlined copies of one formula (the
// element-wise vector and scalar kernels) came out one bit apart on an H200.
// __fmul_rn / __fadd_rn are never fused, so every path rounds each step alike.
NNC_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NNC_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NNC_HD float sub_rn(float a, float b) { return add_rn(a, -b); }

// optim::Coef's SGD / ADAM / ADAMW / RMSPROP fields in float (the 1 - x
// factors formed in double on the host, as optim.hpp forms them).
enum OptimKind : int { kOptSgd = 0, kOptAdam, kOptAdamW, kOptRmsprop };
struct OptimArgs {
  int kind = kOptSgd;
  float rate = 0, scale = 1, decay = 0;
  float momentum = 0, one_minus_dampening = 1;
  int nesterov = 0;
  float beta1 = 0, one_minus_beta1 = 1, beta2 = 0, one_minus_beta2 = 1, epsilon = 0;
  int amsgrad = 0;
  float step_size = 0, inv_sqrt_bc2 = 1, weight_keep = 1;
  float alpha = 0, one_minus_alpha = 1;
};

// SGD: b, n from g, a, m (every input read before an output is written).
NNC_HD void sgd_step_f(const OptimArgs& c, float g, float a, float m, float* b, float* n) {
  const float grad = add_rn(mul_rn(c.scale, g), mul_rn(c.decay, a));
  float nm, upd;
  if (c.momentum == 0.f) {
    nm = grad;
    upd = grad;
  } else {
    nm = add_rn(mul_rn(c.momentum, m), mul_rn(c.one_minus_dampening, grad));
    upd = c.nesterov ? add_rn(grad, mul_rn(c.momentum, nm)) : nm;
  }
  *n = nm;
  *b = sub_rn(a, mul_rn(c.rate, upd));
}

// ADAM / ADAMW: b, n, u (and um with amsgrad, from vm).
NNC_HD void adam_step_f(const OptimArgs& c, float g, float a, float m, float v, float vm, float* b, float* n, float* u,
                        float* um) {
  const float grad = c.kind == kOptAdamW ? mul_rn(c.scale, g) : add_rn(mul_rn(c.scale, g), mul_rn(c.decay, a));
  const float nm = add_rn(mul_rn(c.beta1, m), mul_rn(c.one_minus_beta1, grad));
  const float nv = add_rn(mul_rn(c.beta2, v), mul_rn(mul_rn(c.one_minus_beta2, grad), grad));
  float d = nv;
  if (c.amsgrad) {
    d = vm > nv ? vm : nv;
    *um = d;
  }
  const float denom = add_rn(mul_rn(sqrtf(d), c.inv_sqrt_bc2), c.epsilon);
  *n = nm;
  *u = nv;
  *b = sub_rn(mul_rn(a, c.weight_keep), mul_rn(c.step_size, nm) / denom);
}

// RMSPROP: b, n, u (n from the unrounded u, as CPU_REF's double).
NNC_HD void rmsprop_step_f(const OptimArgs& c, float g, float a, float m, float v, float* b, float* n, float* u) {
  const float grad = add_rn(mul_rn(c.scale, g), mul_rn(c.decay, a));
  const float nv = add_rn(mul_rn(c.alpha, v), mul_rn(mul_rn(c.one_minus_alpha, grad), grad));
  const float nm = add_rn(mul_rn(c.momentum, m), grad / add_rn(sqrtf(nv), c.epsilon));
  *u = nv;
  *n = nm;
  *b = sub_rn(a, mul_rn(c.rate, nm));
}

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
