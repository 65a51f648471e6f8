// The normalisation family inside. norm.cpp describes BATCH_NORM,
// LAYER_NORM, GROUP_NORM and RMSNORM (shapes, checks, tensor roles) and
// registers the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp,
// gnorm_opt.cpp and rmsnorm_opt.cpp the packed, threaded, vectorised paths
// (over lib/cmd/common/reduce_loops.hpp).
#pragma once

#include "cmd/common/axes.hpp"
#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::norm {

// Tensor roles of one call, NULL where absent (see norm.cpp for the orders).
struct BatchNormIo {
  ccv_nnc_tensor_t *x = nullptr, *scale = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr;  // inputs
  ccv_nnc_tensor_t *y = nullptr, *out_mean = nullptr, *out_var = nullptr, *saved_mean = nullptr,
                   *saved_inv_std = nullptr;                                          // outputs
  ccv_nnc_tensor_t *g = nullptr, *dx = nullptr, *dscale = nullptr, *dbias = nullptr;  // backward
  ccv_nnc_tensor_t *dmean = nullptr, *dvar = nullptr;  // backward outputs 3 and 4 (the running statistics)
};
BatchNormIo batch_norm_forward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                  int output_size);
BatchNormIo batch_norm_backward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                   int output_size);

struct LayerNormIo {
  ccv_nnc_tensor_t *x = nullptr, *scale = nullptr, *bias = nullptr;
  ccv_nnc_tensor_t *y = nullptr, *saved_mean = nullptr, *saved_inv_std = nullptr;
  ccv_nnc_tensor_t *g = nullptr, *dx = nullptr, *dscale = nullptr, *dbias = nullptr;
};
LayerNormIo layer_norm_forward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                  ccv_nnc_tensor_t* const* outputs, int output_size);
LayerNormIo layer_norm_backward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                   ccv_nnc_tensor_t* const* outputs, int output_size);

// GROUP_NORM: x's group axis of C channels splits into `groups` runs of C /
// groups channels; statistics per group and per index of the axes that are
// neither the group axis nor reduced.
// The same slots as LAYER_NORM's.
using GroupNormIo = LayerNormIo;
GroupNormIo group_norm_forward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                  ccv_nnc_tensor_t* const* outputs, int output_size);
GroupNormIo group_norm_backward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                   ccv_nnc_tensor_t* const* outputs, int output_size);
// Bit i set for each reduce axis of a validated GROUP_NORM command.
unsigned gnorm_reduce_mask(const ccv_nnc_cmd_t& cmd);

struct RmsNormIo {
  ccv_nnc_tensor_t *x = nullptr, *scale = nullptr;
  ccv_nnc_tensor_t *y = nullptr, *saved_inv_std = nullptr;
  ccv_nnc_tensor_t *g = nullptr, *dx = nullptr, *dscale = nullptr;
};
RmsNormIo rmsnorm_forward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                             int output_size);
RmsNormIo rmsnorm_backward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                              int output_size);

NNC_KERNEL(bnorm_forward_ref);
NNC_KERNEL(bnorm_backward_ref);
NNC_KERNEL(lnorm_forward_ref);
NNC_KERNEL(lnorm_backward_ref);
NNC_KERNEL(bnorm_forward_opt);
NNC_KERNEL(bnorm_backward_opt);
NNC_KERNEL(lnorm_forward_opt);
NNC_KERNEL(lnorm_backward_opt);
NNC_KERNEL(gnorm_forward_ref);
NNC_KERNEL(gnorm_backward_ref);
NNC_KERNEL(rmsnorm_forward_ref);
NNC_KERNEL(rmsnorm_backward_ref);
NNC_KERNEL(gnorm_forward_opt);
NNC_KERNEL(gnorm_backward_opt);
NNC_KERNEL(rmsnorm_forward_opt);
NNC_KERNEL(rmsnorm_backward_opt);
bool gnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size);
bool rmsnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size);
bool bnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size);
bool lnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size);

}  // namespace nnc::norm
