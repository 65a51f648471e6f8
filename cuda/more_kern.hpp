// Launch functions of the GPU_REF kernels in more_kernels.cu (called by
// more_gpu.cpp): activations and element-wise math the first GPU_REF part
// (ew_kernels.cu) does not cover. Each queues its work on the stream it is
// given and returns the launch status. Index arithmetic is host code
// (cmd/common/gpu_plan.hpp, tested on the CPU).
#pragma once

#include <cuda_runtime.h>

#include "cmd/common/gpu_act.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

// Element-wise ops with up to two outputs (cmd/common/gpu_act.hpp: the ops
// and their formulas): plan operands 0 .. n_out - 1 are the outputs (a NULL
// output is skipped), then the n_in inputs (a NULL input reads as 1).
using gpu::ActArgs;
using gpu::ActOp;
cudaError_t launch_act(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& ptrs, int op, int n_out,
                       int n_in, const ActArgs& args);

}  // namespace nnc::cuda
