// The per-element formulas of the GPU_REF row kernels SOFTMAX,
// SOFTMAX_CROSSENTROPY and CATEGORICAL_CROSSENTROPY (cuda/loss_optim_kernels.cu)
// in float, as host code: nvcc compiles this header into the kernels as it
// is, and test/unit/gpu_half checks them on the CPU against the CPU_REF
// kernels' 16F / 16BF results (lib/cmd/softmax, lib/cmd/loss: double inside,
// rounded once), with the kernels' rounding model: every input loaded as
// float, the row's max and sums in float, each output rounded once to its
// storage type.
//
//   m = max_j z_j (0 for a row of -inf), sum = sum_j exp(z_j - m)
//   softmax_j = softmax_value(z_j, m, sum)
//   loss = sum_j sce_loss_term(t_j, z_j, m, log(sum))   (t_j: smoothed_target)
//
// C++17 without CUDA or NNC includes (NNC_HD from gpu_plan.hpp).
#pragma once

#include <cmath>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::gpu {

// The target of a column: a dense label v smoothed to trim0 + (trim1 - trim0) v;
// for class-index labels the kernels take trim1 / trim0 directly.
NNC_HD float smoothed_target(float trim0, float trim1, float v) { return trim0 + (trim1 - trim0) * v; }

NNC_HD float softmax_value(float z, float m, float sum) { return expf(z - m) / sum; }

// Column j's share of SOFTMAX_CROSSENTROPY's loss (0 where the target is 0,
// so a -inf logit with target 0 adds nothing).
NNC_HD float sce_loss_term(float t, float z, float m, float lse) { return t != 0.f ? t * ((m - z) + lse) : 0.f; }

// d logits_j = g (s_j T - t_j) + s_j (gs_j - <gs, s>): gl the row's loss
// gradient, tot = T = sum_j t_j, gs the softmax output's gradient, d = <gs, s>.
NNC_HD float sce_dlogit(float gl, float s, float tot, float t, float gs, float d) {
  return gl * (s * tot - t) + s * (gs - d);
}

// CATEGORICAL_CROSSENTROPY: max(log p, -100) (NaN kept), the loss share
// -t log p, dp = -g t / max(p, 1e-12) and d labels = -g (trim1 - trim0) log p.
NNC_HD float cce_log(float p) {
  const float l = logf(p);
  return l < -100.f ? -100.f : l;
}
NNC_HD float cce_loss_term(float t, float p) { return t != 0.f ? -t * cce_log(p) : 0.f; }
NNC_HD float cce_dp(float g, float t, float p) { return -g * t / (p < 1e-12f ? 1e-12f : p); }
NNC_HD float cce_dlabel(float g, float trim0, float trim1, float p) { return -g * (trim1 - trim0) * cce_log(p); }

// SOFTMAX backward: dx_j = y_j (g_j - <g, y>).
NNC_HD float softmax_dx(float y, float g, float d) { return y * (g - d); }

}  // namespace nnc::gpu
