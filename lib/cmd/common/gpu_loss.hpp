// The per-element formulas of the GPU_REF losses (cuda/more_kernels.cu: MSE,
// SMOOTH_L1, BINARY_CROSSENTROPY, SIGMOID_BINARY_CROSSENTROPY) in float, as
// host code: nvcc compiles this header into the kernels as it is, and
// test/unit/gpu_plan checks them on the CPU against the CPU_REF kernels
// (lib/cmd/loss/cpu_ref.cpp, double inside). The kernels sum a row's terms in
// double.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

enum LossOp : int { kLossMse = 0, kLossSmoothL1, kLossBce, kLossSigmoidBce };
struct LossArgs {
  float w = 1;     // binary_crossentropy.pos_weight
  float beta = 1;  // smooth_l1.beta
  int k = 1;       // MSE's divisor: the row length (MEAN) or 1 (SUM)
};

namespace loss_detail {
// max(log p, -100), NaN kept (as std::max(log p, -100.0) on the CPU).
NNC_HD float clog(float p) {
  const float l = logf(p);
  return l < -100.f ? -100.f : l;
}
NNC_HD float floor_div(float p) { return p < 1e-12f ? 1e-12f : p; }
NNC_HD float softplus(float z) { return (z < 0.f ? 0.f : z) + log1pf(expf(-fabsf(z))); }
NNC_HD float sigmoid(float z) {
  if (z >= 0.f) return 1.f / (1.f + expf(-z));
  const float e = expf(z);
  return e / (1.f + e);
}
}  // namespace loss_detail

// Element j's share of its row's loss (a: a / x / z, b: b / y; MSE's before the division by k).
NNC_HD float loss_term(int op, float a, float b, const LossArgs& p) {
  using namespace loss_detail;
  switch (op) {
    case kLossMse:
      return (a - b) * (a - b);
    case kLossSmoothL1: {
      const float d = fabsf(a - b);
      return d < p.beta ? 0.5f * d * d / p.beta : d - 0.5f * (p.beta < 0.f ? 0.f : p.beta);
    }
    case kLossBce: {
      float l = 0.f;
      if (b != 0.f) l -= p.w * b * clog(a);  // a zero weight keeps 0 * (-100) out
      if (b != 1.f) l -= (1.f - b) * clog(1.f - a);
      return l;
    }
    default:
      return p.w * b * softplus(-a) + (1.f - b) * softplus(a);
  }
}

// The gradients of element j: g the row's loss gradient; for
// SIGMOID_BINARY_CROSSENTROPY `a` is z when has_z, else s is the saved
// sigmoid; gs the sigmoid output's gradient (0 when absent). *db is valid
// where the CPU computes it (for the sigmoid form only with z).
NNC_HD void loss_grad(int op, float g, float a, float b, float gs, float s, bool has_z, const LossArgs& p, float* da,
                      float* db) {
  using namespace loss_detail;
  switch (op) {
    case kLossMse: {
      const float d = g * 2.f / static_cast<float>(p.k) * (a - b);
      *da = d;
      *db = -d;
      return;
    }
    case kLossSmoothL1: {
      const float d = a - b;
      const float s1 = fabsf(d) < p.beta ? d / p.beta : (d > 0.f ? 1.f : d < 0.f ? -1.f : 0.f);
      *da = g * s1;
      *db = -g * s1;
      return;
    }
    case kLossBce:
      *da = g * (-p.w * b / floor_div(a) + (1.f - b) / floor_div(1.f - a));
      *db = -g * (p.w * clog(a) - clog(1.f - a));
      return;
    default: {
      const float sg = has_z ? sigmoid(a) : s;
      *da = g * (sg * (p.w * b + 1.f - b) - p.w * b) + gs * sg * (1.f - sg);
      *db = has_z ? g * (p.w * softplus(-a) - softplus(a)) : 0.f;
      return;
    }
  }
}

}  // namespace nnc::gpu
