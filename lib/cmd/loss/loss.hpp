// The loss family inside. loss.cpp describes the commands (shapes, checks,
// backward needs) and registers the kernels; cpu_ref.cpp holds the
// double-precision loops over any layout and any float type, cpu_opt.cpp the
// fp32 kernels for unit-stride rows, with the probability losses' row loops
// vectorised per instruction set (rows_body.hpp, rows_avx2.cpp,
// rows_avx512.cpp).
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::loss {

NNC_KERNEL(categorical_forward_ref);
NNC_KERNEL(categorical_backward_ref);
NNC_KERNEL(binary_forward_ref);
NNC_KERNEL(binary_backward_ref);
NNC_KERNEL(sigmoid_binary_forward_ref);
NNC_KERNEL(sigmoid_binary_backward_ref);
NNC_KERNEL(mse_forward_ref);
NNC_KERNEL(mse_backward_ref);
NNC_KERNEL(smooth_l1_forward_ref);
NNC_KERNEL(smooth_l1_backward_ref);
NNC_KERNEL(mse_forward_opt);
NNC_KERNEL(mse_backward_opt);
NNC_KERNEL(smooth_l1_forward_opt);
NNC_KERNEL(smooth_l1_backward_opt);
NNC_KERNEL(categorical_forward_opt);
NNC_KERNEL(categorical_backward_opt);
NNC_KERNEL(binary_forward_opt);
NNC_KERNEL(binary_backward_opt);
NNC_KERNEL(sigmoid_binary_forward_opt);
NNC_KERNEL(sigmoid_binary_backward_opt);

// CPU_OPT's accept test: fp32 tensors whose last dimension is unit-stride.
bool opt_accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size);

// Clamps that keep the probability losses finite: log(p) is read as at least
// kLogFloor (PyTorch's BCELoss convention), and 1 / p as 1 / max(p, kDivFloor).
constexpr double kLogFloor = -100.0;
constexpr double kDivFloor = 1e-12;

// One row of n fp32 elements of each probability loss (loss.cpp has the
// formulas; w is pos_weight, g the row's loss gradient). Forward loops return
// the row's loss; NULL outputs are skipped.
struct RowLoops {
  double (*bce_forward)(const float* x, const float* y, int n, float w);
  void (*bce_backward)(const float* x, const float* y, float* dx, float* dy, int n, float g, float w);
  // Also writes sigmoid(z) into s unless s is NULL.
  double (*sbce_forward)(const float* z, const float* y, float* s, int n, float w);
  // dz and dy from the logits z, or dz alone from the saved sigmoid s when z is NULL.
  void (*sbce_backward)(const float* z, const float* s, const float* y, const float* gs, float* dz, float* dy, int n,
                        float g, float w);
  // Targets trim0 + (trim1 - trim0) l from dense labels l, or trim0 for every
  // class when l is NULL (class-index labels: the caller adds the labelled class).
  double (*cce_forward)(const float* p, const float* l, int n, float trim0, float trim1);
  void (*cce_backward)(const float* p, const float* l, float* dp, float* dl, int n, float g, float trim0,
                       float trim1);
};
extern const RowLoops kRowLoopsAvx2;
extern const RowLoops kRowLoopsAvx512;

}  // namespace nnc::loss
