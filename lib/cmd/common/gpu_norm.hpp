// Index arithmetic of the GPU_REF RMSNORM and GROUP_NORM kernels
// (cuda/more_kernels.cu) as host code, tested on the CPU (test/unit/gpu_plan)
// against the CPU_REF kernels' own grouping.
//
// Both are "normalise x over some axes of a full shape": RMSNORM over its
// axes of x's shape; GROUP_NORM over x's shape with the group axis of C
// channels split in two, (G, C / G), normalised over the C / G axis and the
// reduce axes. Eight operands have strides over the full shape (0 where they
// do not vary; absent ones all 0): x, y, g, dx, scale, bias (per normalised
// element for RMSNORM, per channel for GROUP_NORM) and the saved mean and
// inv_std (per statistics group).
//   groups:  outer walks the statistics groups (operand 0 unused, 1 + k:
//            operand k at the group's first element), inner the elements of
//            one group (operand k).
//   params:  outer walks the scale elements, inner the elements each one
//            sums over (dscale, dbias).
#pragma once

#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

enum NormOperand : int {
  kNormX = 0,
  kNormY,
  kNormG,
  kNormDx,
  kNormScale,
  kNormBias,
  kNormMean,
  kNormInv,
  kNormOperands
};

// The kernels' per-element formulas, in double (the statistics are summed
// in double too; each output is rounded once to its storage type on store,
// 32F, 16F or 16BF): y from x and its group's mean and 1 / std (0 and 1 /
// rms for RMSNORM), and dx from h = g scale, x^ = (x - mean) inv and the
// group's means of h (0 for RMSNORM) and of h x^. test/unit/gpu_half checks
// them, with that rounding, against CPU_REF's 16F / 16BF results.
NNC_HD double norm_y(double x, double mean, double inv, double scale, double bias) {
  return (x - mean) * inv * scale + bias;
}
NNC_HD double norm_dx(double inv, double h, double mean_h, double xhat, double mean_hx) {
  return inv * (h - mean_h - xhat * mean_hx);
}

struct NormPlan {
  ReducePlan groups;
  ReducePlan params;
  int64_t group_size = 0;  // elements per statistics group
};

// The strides over x's nd axes of a small tensor (sdim / sstride, snd axes)
// whose extents, once 1s are dropped, are those of want[0..nd) once 1s are
// dropped: 0 on axes where want is 1. False when the extents differ.
bool small_strides(const int* sdim, const int64_t* sstride, int snd, const int* want, int nd, int64_t* out);

// GROUP_NORM's split of x's axes: axis ga (C channels) becomes (G, C / G).
// Strides of an operand indexed by channel (x-like, scale) or by group (the
// statistics: their stride on axis ga steps one group).
void split_dims(const int* dim, int nd, int ga, int groups, int* out);
void split_strides(const int64_t* s, int nd, int ga, int per_group, bool by_group, int64_t* out);

// The plans over dim[0..nd) for strides[kNormOperands] (NULL entries: an
// absent operand); bit i of norm_mask: axis i normalised; of param_mask: the
// scale varies along axis i. False when the shapes do not fit.
bool make_norm_plan(NormPlan& p, const int* dim, int nd, const int64_t* const* strides, unsigned norm_mask,
                    unsigned param_mask);

}  // namespace nnc::gpu
