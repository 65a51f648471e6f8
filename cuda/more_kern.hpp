// Launch functions of the GPU_REF kernels in more_kernels.cu (called by
// more_gpu.cpp): activations and element-wise math the first GPU_REF part
// (ew_kernels.cu) does not cover. Each queues its work on the stream it is
// given and returns the launch status. Index arithmetic is host code
// (cmd/common/gpu_plan.hpp, tested on the CPU).
#pragma once

#include <cuda_runtime.h>

#include "cmd/common/gpu_act.hpp"
#include "cmd/common/gpu_loss.hpp"
#include "cmd/common/gpu_norm.hpp"
#include "cmd/common/gpu_optim.hpp"
#include "cmd/common/gpu_shape.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

// Element-wise ops with up to two outputs (cmd/common/gpu_act.hpp: the ops
// and their formulas): plan operands 0 .. n_out - 1 are the outputs (a NULL
// output is skipped), then the n_in inputs (a NULL input reads as 1).
using gpu::ActArgs;
using gpu::ActOp;
cudaError_t launch_act(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& ptrs, int op, int n_out,
                       int n_in, const ActArgs& args);

// PAD forward: y element i (row-major over y) = x at pad_map, or 0 bytes;
// elements of 1, 2, 4 or 8 bytes.
cudaError_t launch_pad(cudaStream_t s, const gpu::PadMap& m, void* y, const void* x, int element_size);
// PAD backward: every g element (the map's big tensor, of `type`: 32F, 16F
// or 16BF) adds into acc at its source (atomics; acc zeroed by the caller
// first): acc is dx itself for 32F (float), else a double scratch of dx's
// shape (the map built with its strides) that the caller converts into dx.
cudaError_t launch_pad_backward(cudaStream_t s, GpuType type, const gpu::PadMap& m, const void* g, void* acc);
// UPSAMPLE forward: y (the map's big tensor) from its x taps, blended in
// double (nearest: one read) and rounded once; 32F, 16F, 16BF.
cudaError_t launch_upsample(cudaStream_t s, GpuType type, const gpu::UpMap& m, void* y, const void* x);
// UPSAMPLE backward: every g element adds w g into its acc taps of nonzero
// weight (atomics; acc zeroed by the caller first; acc as PAD backward's).
cudaError_t launch_upsample_backward(cudaStream_t s, GpuType type, const gpu::UpMap& m, const void* g, void* acc);

// REDUCE_MIN (NaN propagates, as CPU_REF) and REDUCE_NORM2 (sqrt of the sum
// of squares, summed in float) of one input: y[o] over the plan's inner
// elements; a thread or a block per output as `launch` says (gpu_plan.hpp).
// x and y of `type` (32F, 16F or 16BF), loaded as float, y rounded once.
enum Reduce2Op : int { kRed2Min = 0, kRed2Norm2 };
cudaError_t launch_reduce2(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch,
                           void* y, const void* x, int op);
// ARGMAX / ARGMIN along one axis: `plan` walks the outputs (operand 0 y, 32S;
// operand 1 x's first element along the axis), each thread scans len
// elements `stride` apart: the first best, a NaN counting as best (CPU_REF).
cudaError_t launch_arg(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, int32_t* y, const void* x, int64_t len,
                       int64_t stride, int is_max);

// Row losses (gpu_loss.hpp; RowArgs of kern.hpp, 32F rows, one block per
// row). Forward: row tensors 0 a (x, z), 1 b (y), 2 the sigmoid output (or
// NULL); item 0 the loss (or NULL): the row's terms summed in double.
cudaError_t launch_loss_rows(cudaStream_t s, const RowArgs& a, int op, const gpu::LossArgs& p);
// Backward: row tensors 0 a (z; NULL: read the saved sigmoid, 5), 1 b, 2 da,
// 3 db, 4 g_sigmoid, 5 the saved sigmoid (each NULL when absent); item 0 g
// (NULL: ones).
cudaError_t launch_loss_rows_backward(cudaStream_t s, const RowArgs& a, int op, const gpu::LossArgs& p);

// RMSNORM / GROUP_NORM (gpu_norm.hpp; 32F, 16F or 16BF, loaded as float and
// rounded once on store). ptr[k]: operand k's element 0
// (gpu::NormOperand order; NULL absent: scale reads 1, bias 0, the saved
// statistics are not written). Forward: one block per statistics group, mean
// (not for rms) and biased variance (or mean square) summed in double, y
// blended in double. Backward: dx one block per group from the saved
// statistics; dscale / dbias one block per scale element.
struct NormPtrs {
  void* ptr[gpu::kNormOperands] = {};
  int type = kF32;  // every operand's GpuType: kF32, kF16 or kBF16 (one type, as CPU_REF)
};
cudaError_t launch_norm_forward(cudaStream_t s, const gpu::ReducePlan& groups, int64_t group_size, const NormPtrs& q,
                                int rms, float epsilon);
cudaError_t launch_norm_backward_dx(cudaStream_t s, const gpu::ReducePlan& groups, int64_t group_size,
                                    const NormPtrs& q, int rms);
// dscale / dbias: here the kNormScale and kNormBias slots (pointers and the
// plan's strides) hold dscale and dbias (either NULL).
cudaError_t launch_norm_backward_params(cudaStream_t s, const gpu::ReducePlan& params, const NormPtrs& q, int rms);

// The row kernels (gpu::NormRows, chosen on the host by choose_norm_rows):
// `rows` is the groups plan's outer walk (operand 1 + k: operand k's row
// start). Forward: y, and the saved statistics where given. Backward: dx from
// g, x, the saved statistics (as stored) and scale. Each row is read once
// into registers and written after it is read: y may be x, dx may be g.
cudaError_t launch_norm_rows_forward(cudaStream_t s, const gpu::NormRows& r, const gpu::EwPlan& rows, const NormPtrs& q,
                                     int rms, float epsilon);
cudaError_t launch_norm_rows_backward_dx(cudaStream_t s, const gpu::NormRows& r, const gpu::EwPlan& rows,
                                         const NormPtrs& q, int rms);
// dscale / dbias of the row case (gpu::NormCols): kNormScale / kNormBias hold
// dscale / dbias (either NULL; packed over the row); `partial` is device
// scratch of 2 c.splits cols floats.
cudaError_t launch_norm_cols_params(cudaStream_t s, const gpu::NormCols& c, const gpu::EwPlan& rows, int64_t cols,
                                    const NormPtrs& q, int rms, float* partial);

// LAMB (32F, 16F or 16BF, every operand one type): plan operands 0 g, 1 a, 2 m, 3 v, 4 b, 5 n, 6 u over a's
// shape. Pass 1 writes n, u and sums |a|^2, |r|^2 in double into sums[0..1]
// (device memory the caller zeroed); pass 2 writes b = a - rate trust r,
// reading the sums on the device (no host round trip).
cudaError_t launch_lamb(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& q, const gpu::LambCoef& c,
                        double* sums);

// CMUL over complex pairs, every operand of `type` (32F, 16F or 16BF),
// products and sums in double, each output rounded once: plans walk the
// pairs (the last axis halved, its stride doubled), each operand's imaginary
// part im[k] elements after its real one. Forward operands 0 c, 1 a, 2 b
// (broadcast: strides 0).
cudaError_t launch_cmul(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, void* c, const void* a, const void* b,
                        const int64_t* im);
// Backward: d = sum over the reduced pairs of g conj(o) (a thread per output
// pair, summed in double); plan inputs 0 g (NULL: 1 + 1i, a tensor of ones), 1 o.
cudaError_t launch_cmul_backward(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, void* d, const void* g,
                                 const void* o, const int64_t* im);

// REDUCE_ISNAN forward: y[o] = 1 if any x of output o's inner elements is NaN,
// else 0 (a thread per output), x 32F / 16F / 16BF, y stored as y_type (a
// code: 0 32F, 1 64F, 2 16F, 3 16BF, 4 32S, 5 64S, 6 8U).
cudaError_t launch_isnan(cudaStream_t s, const gpu::ReducePlan& plan, void* y, int y_code, const void* x,
                         GpuType x_type);

}  // namespace nnc::cuda
