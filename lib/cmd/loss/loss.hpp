// The loss family inside. loss.cpp describes the commands (shapes, checks,
// backward needs) and registers the kernels; cpu_ref.cpp holds the
// double-precision loops over any layout and any float type, cpu_opt.cpp the
// fp32 MSE and SMOOTH_L1 loops (the other losses run on CPU_REF only).
#pragma once

#include "nnc/ccv_nnc.h"

namespace nnc::loss {

#define NNC_LOSS_KERNEL(name)                                                                                    \
  int name(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs, \
           const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,                        \
           ccv_nnc_stream_context_t* const stream_context)
NNC_LOSS_KERNEL(categorical_forward_ref);
NNC_LOSS_KERNEL(categorical_backward_ref);
NNC_LOSS_KERNEL(binary_forward_ref);
NNC_LOSS_KERNEL(binary_backward_ref);
NNC_LOSS_KERNEL(sigmoid_binary_forward_ref);
NNC_LOSS_KERNEL(sigmoid_binary_backward_ref);
NNC_LOSS_KERNEL(mse_forward_ref);
NNC_LOSS_KERNEL(mse_backward_ref);
NNC_LOSS_KERNEL(smooth_l1_forward_ref);
NNC_LOSS_KERNEL(smooth_l1_backward_ref);
NNC_LOSS_KERNEL(mse_forward_opt);
NNC_LOSS_KERNEL(mse_backward_opt);
NNC_LOSS_KERNEL(smooth_l1_forward_opt);
NNC_LOSS_KERNEL(smooth_l1_backward_opt);

// CPU_OPT's accept test: fp32 tensors whose last dimension is unit-stride.
bool opt_accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size);

// Clamps that keep the probability losses finite: log(p) is read as at least
// kLogFloor (PyTorch's BCELoss convention), and 1 / p as 1 / max(p, kDivFloor).
constexpr double kLogFloor = -100.0;
constexpr double kDivFloor = 1e-12;

}  // namespace nnc::loss
