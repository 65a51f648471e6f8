// The GPU_REF optimiser kernels' float coefficients (gpu_optim.hpp) from a
// command, as host code shared by the CUDA backends (cuda/loss_optim_gpu.cpp,
// cuda/more_gpu.cpp) and the CPU tests that check the kernels' formulas and
// rounding against CPU_REF (test/unit/gpu_half): optim::coef_of's doubles,
// with the 1 - x factors formed in double before narrowing.
#pragma once

#include "cmd/common/gpu_optim.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::gpu {

// SGD, ADAM, ADAMW, RMSPROP. False (args untouched) for another command.
bool optim_args_of(const ccv_nnc_cmd_t& cmd, OptimArgs* args);
// LAMB's.
LambCoef lamb_coef_of(const ccv_nnc_cmd_t& cmd);

}  // namespace nnc::gpu
