// The GPU_REF kernels' launch functions (ew_kernels.cu, reduce_kernels.cu,
// loss_optim_kernels.cu), called by the backends in ewgpu.cpp,
// reduce_gpu.cpp and loss_optim_gpu.cpp. Each queues its work on the stream
// it is given and returns the launch status (the caller checks it and calls
// finish()). Index arithmetic is host code: cmd/common/gpu_plan.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_plan.hpp"

namespace nnc::cuda {

// Storage types of the element-wise kernels (computed in float).
enum GpuType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3 };

// Element-wise ops: y = f(x_1..x_n) with a, b from the command. Inputs are
// operands 1..n of the plan (operand 0 is y); a NULL input reads as 1 (a NULL
// g of a backward, EWDIV's NULL a).
enum EwOp : int {
  kEwScale = 0,     // a x1
  kEwAxpby,         // a x1 + b x2
  kEwSum,           // x1 + ... + xn
  kEwProd,          // a x1 ... xn
  kEwDiv,           // x1 / x2
  kEwExp,
  kEwLog,
  kEwSqrt,
  kEwRelu,          // NaN stays NaN
  kEwSigmoid,
  kEwTanh,
  kEwReluGrad,      // x2 > 0 ? x1 : 0          (g, y or x)
  kEwSigmoidGradY,  // x1 x2 (1 - x2)           (g, y)
  kEwTanhGradY,     // x1 (1 - x2) (1 + x2)     (g, y)
  kEwSigmoidGradX,  // from x: s = sigmoid(x2)
  kEwTanhGradX,     // from x: t = tanh(x2)
  kEwDivGrad,       // x1 / x2                  (EWLOG's g / x, EWDIV's g / b)
  kEwSqrtGrad,      // x1 / (2 x2)              (g, y)
  kEwDivGradB,      // -x1 x2 / x3              (g, y, b)
};

// Device pointers of the plan's operands (element 0 of each tensor or view).
struct EwPtrs {
  void* p[gpu::kPlanOperands] = {};
};

cudaError_t launch_ew(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& ptrs, int op, int n_inputs,
                      float a, float b);
// y = x over a plan of two operands (0: y, 1: x), elements of 1, 2, 4 or 8 bytes.
cudaError_t launch_copy(cudaStream_t s, const gpu::EwPlan& plan, void* y, const void* x, int element_size);
// Every element of a one-operand plan set to the element_size bytes of pattern.
cudaError_t launch_fill(cudaStream_t s, const gpu::EwPlan& plan, void* y, uint64_t pattern, int element_size);
// y (type `to`) = x (type `from`) converted, correctly rounded (doubles
// narrowed to 16F / 16BF in one rounding).
cudaError_t launch_convert(cudaStream_t s, const gpu::EwPlan& plan, void* y, GpuType to, const void* x, GpuType from);

// Reductions: y[o] = scale * R over r of f(x1, x2) (plan: cmd/common/gpu_plan.hpp).
enum ReduceOp : int {
  kRedSum = 0,  // sum x1 (NULL x1 reads 1)
  kRedSumProd,  // sum x1 x2 (NULL x1 reads 1)
  kRedMax,      // max x1, NaN propagates
};
cudaError_t launch_reduce(cudaStream_t s, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch, float* y, const float* x1,
                          const float* x2, int op, float scale);

}  // namespace nnc::cuda
