// The formulas of the GPU_REF activation and element-wise math kernels
// (cuda/more_kernels.cu: LEAKY_RELU, GELU exact and tanh, SWISH, CLAMP, MIN,
// MAX and their gradients) in float, as host code: nvcc compiles this header
// into the kernels as it is, and test/unit/gpu_plan checks every op on the
// CPU against the CPU_REF kernels (which compute in double), so the part of
// a GPU kernel that decides each value is tested without a GPU.
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// Element-wise ops with up to two outputs y[0..1] from up to three inputs
// x[0..2] (a NULL input reads as 1: a NULL g of a backward). Formulas of the
// CPU_REF kernels (lib/cmd/activation/cpu_ref.cpp, lib/cmd/ew/math_cpu_ref.cpp).
enum ActOp : int {
  kActLeakyRelu = 0,  // x > 0 ? x : a x
  kActGelu,           // x Phi(x)
  kActGeluTanh,       // x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))
  kActSwish,          // x sigmoid(x)
  kActClamp,          // min(max(x, lo), hi), a missing bound skipped; NaN stays NaN
  kActMin,            // min(a, b), NaN in either gives NaN (a's first)
  kActMax,
  kActLeakyReluGrad,  // (g, t): t > 0 ? g : a g   (t: x, or y when a >= 0)
  kActGeluGrad,       // (g, x)
  kActGeluTanhGrad,   // (g, x), x clamped to [-20, 20] (the derivative's limits)
  kActSwishGrad,      // (g, x)
  kActClampGrad,      // (g, y): g where y is strictly inside the bounds, else 0
  kActMinGrad,        // (g, a, b) -> (da, db): g to the picked operand, half each on a tie;
  kActMaxGrad,        //   a NaN a takes all of g, a NaN b alone takes it
  kActReduceMaxGrad,  // (g, x, y): x == y ? g : 0 (REDUCE_MAX / REDUCE_MIN backward, g and y broadcast)
  kActNorm2Grad,      // (g, x, y): y == 0 ? 0 : g x / y (REDUCE_NORM2 backward)
  kActOpCount,
};
struct ActArgs {
  float a = 0;  // LEAKY_RELU's negative slope
  float lo = 0, hi = 0;
  int has_lo = 0, has_hi = 0;
};
// How many inputs and outputs an op has.
NNC_HD int act_inputs(int op) {
  return op == kActMin || op == kActMax                                                             ? 2
         : op == kActMinGrad || op == kActMaxGrad || op == kActReduceMaxGrad || op == kActNorm2Grad ? 3
         : op >= kActLeakyReluGrad                                                                  ? 2
                                                                                                    : 1;
}
NNC_HD int act_outputs(int op) { return op == kActMinGrad || op == kActMaxGrad ? 2 : 1; }

namespace act_detail {
constexpr float kK0 = 0.79788456080286535588f;  // sqrt(2 / pi)
constexpr float kK1 = 0.044715f;
NNC_HD bool nan_f(float v) { return v != v; }
// Without cancellation for negative x (as CPU_REF).
NNC_HD float sigm(float x) {
  const float e = expf(-fabsf(x));
  return x < 0.f ? e / (1.f + e) : 1.f / (1.f + e);
}
NNC_HD float ncdf(float x) { return 0.5f * erfcf(-x * 0.70710678118654752440f); }
NNC_HD float pick_weight(float x, float o, bool is_max, bool for_b) {
  const bool pick = (is_max ? x > o : x < o) || (nan_f(x) && (!for_b || !nan_f(o)));
  return pick ? 1.f : (x == o ? 0.5f : 0.f);
}
}  // namespace act_detail

NNC_HD void act_apply(int op, const float* x, float* y, const ActArgs& a) {
  using namespace act_detail;
  switch (op) {
    case kActLeakyRelu:
      y[0] = x[0] > 0.f ? x[0] : a.a * x[0];
      break;
    case kActGelu:
      y[0] = x[0] * ncdf(x[0]);
      break;
    case kActGeluTanh:
      y[0] = x[0] * sigm(2.f * kK0 * (x[0] + kK1 * x[0] * x[0] * x[0]));
      break;
    case kActSwish:
      y[0] = x[0] * sigm(x[0]);
      break;
    case kActClamp: {
      float v = x[0];
      if (a.has_lo && v < a.lo) v = a.lo;
      if (a.has_hi && v > a.hi) v = a.hi;
      y[0] = v;
      break;
    }
    case kActMin:
    case kActMax:
      if (nan_f(x[0]) || nan_f(x[1]))
        y[0] = nan_f(x[0]) ? x[0] : x[1];
      else
        y[0] = op == kActMin ? (x[0] < x[1] ? x[0] : x[1]) : (x[0] > x[1] ? x[0] : x[1]);
      break;
    case kActLeakyReluGrad:
      y[0] = x[0] * (x[1] > 0.f ? 1.f : a.a);
      break;
    case kActGeluGrad: {
      const float t = x[1];
      y[0] = x[0] * (ncdf(t) + t * expf(-0.5f * t * t) * 0.39894228040143267794f);
      break;
    }
    case kActGeluTanhGrad: {
      float t = x[1];
      if (!nan_f(t)) t = fminf(20.f, fmaxf(-20.f, t));
      const float s = sigm(2.f * kK0 * (t + kK1 * t * t * t));
      y[0] = x[0] * (s + 2.f * t * s * (1.f - s) * kK0 * (1.f + 3.f * kK1 * t * t));
      break;
    }
    case kActSwishGrad: {
      const float t = x[1], s = sigm(t);
      y[0] = x[0] * (s * (1.f + t * (1.f - s)));
      break;
    }
    case kActClampGrad: {
      const float v = x[1];
      const bool inside = (!a.has_lo || v > a.lo) && (!a.has_hi || v < a.hi);
      y[0] = inside ? x[0] : 0.f;
      break;
    }
    case kActMinGrad:
    case kActMaxGrad:
      y[0] = x[0] * pick_weight(x[1], x[2], op == kActMaxGrad, false);
      y[1] = x[0] * pick_weight(x[2], x[1], op == kActMaxGrad, true);
      break;
    case kActReduceMaxGrad:
      y[0] = x[1] == x[2] ? x[0] : 0.f;
      break;
    case kActNorm2Grad:
      y[0] = x[2] == 0.f ? 0.f : x[0] * x[1] / x[2];
      break;
    default:
      y[0] = y[1] = 0.f;
      break;
  }
}

}  // namespace nnc::gpu
