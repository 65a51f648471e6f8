// The GPU_REF kernels' launch functions (ew_kernels.cu, reduce_kernels.cu,
// loss_optim_kernels.cu), called by the backends in ewgpu.cpp,
// reduce_gpu.cpp and loss_optim_gpu.cpp. Each queues its work on the stream
// it is given and returns the launch status (the caller checks it and calls
// finish()). Index arithmetic is host code: cmd/common/gpu_plan.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_optim.hpp"
#include "cmd/common/gpu_plan.hpp"

namespace nnc::cuda {

// Storage types of the element-wise kernels (computed in float).
enum GpuType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3 };

// Element-wise ops: y = f(x_1..x_n) with a, b from the command. Inputs are
// operands 1..n of the plan (operand 0 is y); a NULL input reads as 1 (a NULL
// g of a backward, EWDIV's NULL a).
enum EwOp : int {
  kEwScale = 0,  // a x1
  kEwAxpby,      // a x1 + b x2
  kEwSum,        // x1 + ... + xn
  kEwProd,       // a x1 ... xn
  kEwDiv,        // x1 / x2
  kEwExp,
  kEwLog,
  kEwSqrt,
  kEwRelu,  // NaN stays NaN
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
// Launches that took a vector kernel (16 bytes per operand per thread; the
// decision: cmd/common/gpu_vec.hpp) in this process so far: launch_ew,
// launch_copy, launch_fill, launch_convert and launch_optim count theirs, so a
// test can check which path a call took. count_vec_launch is theirs to call.
uint64_t vec_launches();
void count_vec_launch();

// Reductions: y[o] = scale * R over r of f(x1, x2) (plan: cmd/common/gpu_plan.hpp).
enum ReduceOp : int {
  kRedSum = 0,  // sum x1 (NULL x1 reads 1)
  kRedSumProd,  // sum x1 x2 (NULL x1 reads 1)
  kRedMax,      // max x1, NaN propagates
};
cudaError_t launch_reduce(cudaStream_t s, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch, float* y,
                          const float* x1, const float* x2, int op, float scale);
// The same over 32F, 16F or 16BF storage (every operand of `type`), summed in
// float, each output rounded once. A sliced launch (launch.slices > 1,
// gpu::choose_reduce_sliced) needs scratch of gpu::reduce_scratch_elements
// floats on the stream.
cudaError_t launch_reduce_as(cudaStream_t s, GpuType type, const gpu::ReducePlan& plan, const gpu::ReduceLaunch& launch,
                             void* y, const void* x1, const void* x2, int op, float scale, float* scratch = nullptr);

// Row-wise kernels (losses, softmax): every row tensor is rows x cols along
// its last dimension; `rows` walks the leading dimensions (operand k: the
// first element of row r of row tensor k); items (a value per row: losses,
// g, class indices) are walked in row-major order of their own shapes, item r
// belonging to row r. One block per row. Rows and items are 32F, 16F or
// 16BF (class indices also 32S), loaded as float, computed in float and
// rounded once on store.
struct RowArgs {
  gpu::EwPlan rows;
  int64_t col_stride[gpu::kPlanOperands] = {};
  void* row_ptr[gpu::kPlanOperands] = {};  // NULL: absent
  int cols = 0;
  gpu::EwPlan item[2];     // one operand each
  void* item_ptr[2] = {};  // NULL: absent (g reads 1)
  int item_int[2] = {};    // 1 when the items are 32S
  int item_type[2] = {};   // else their GpuType (kF32, kF16, kBF16)
  int row_type = kF32;     // the row tensors' GpuType (one for all: CPU_REF's rule)
  float trim0 = 0, trim1 = 1;
};
// SOFTMAX_CROSSENTROPY forward: row tensors 0 logits, 1 softmax (or NULL),
// 2 dense labels (or NULL); items 0 loss (or NULL), 1 class indices (or NULL).
// *bad (device memory, may be NULL) is set to 1 + the first row whose index
// is outside [0, cols) or not whole.
cudaError_t launch_softmax_crossentropy(cudaStream_t s, const RowArgs& a, int* bad);
// Backward: row tensors 0 softmax, 1 g_softmax (or NULL), 2 dense labels (or
// NULL), 3 d logits; items 0 g (or NULL), 1 class indices (or NULL).
cudaError_t launch_softmax_crossentropy_backward(cudaStream_t s, const RowArgs& a, int* bad);
// CATEGORICAL_CROSSENTROPY forward: row tensors 0 p, 2 dense labels; items 0
// loss, 1 class indices.
cudaError_t launch_categorical_crossentropy(cudaStream_t s, const RowArgs& a, int* bad);
// Backward: row tensors 0 p, 2 dense labels, 3 dp (or NULL), 4 d labels (or
// NULL); items 0 g (or NULL), 1 class indices.
cudaError_t launch_categorical_crossentropy_backward(cudaStream_t s, const RowArgs& a, int* bad);
// SOFTMAX forward: row tensors 0 x, 1 y. Backward: 0 g (NULL: ones), 1 y, 2 dx.
cudaError_t launch_softmax(cudaStream_t s, const RowArgs& a);
cudaError_t launch_softmax_backward(cudaStream_t s, const RowArgs& a);

// One optimiser step per element (cmd/common/gpu_optim.hpp: optim.hpp's
// formulas in float), every operand of `type` (32F, 16F or 16BF): plan
// operands g, a, then the input state, then b and the output state (SGD: g a
// m b n; ADAM / ADAMW: g a m v [vm] b n u [um]; RMSPROP: g a m v b n u).
// OptimArgs and the OptimKind values live in cmd/common/gpu_optim.hpp.
using gpu::kOptAdam;
using gpu::kOptAdamW;
using gpu::kOptRmsprop;
using gpu::kOptSgd;
using gpu::OptimArgs;
cudaError_t launch_optim(cudaStream_t s, GpuType type, const gpu::EwPlan& plan, const EwPtrs& ptrs, const OptimArgs& a);

// INDEX_SELECT: y row i (axis 0) = x row indices[i]; `inner` walks the other
// axes (operands 0 y, 1 x), `idx` the indices (32S, or 64S when wide) in
// row-major order. A bad index sets *bad to 1 + i and zeroes y's row.
cudaError_t launch_gather(cudaStream_t s, const gpu::EwPlan& inner, const gpu::EwPlan& idx, const void* indices,
                          int wide, int64_t rows_x, int64_t n, void* y, int64_t ys0, const void* x, int64_t xs0,
                          int element_size, int* bad);
// Its backward: acc row indices[i] += g row i (atomics; acc zeroed by the
// caller; inner operands 0 acc, 1 g). g is of `type`; acc is float for kF32,
// double for kF64, kF16 and kBF16 (index_gpu.cpp: a double scratch for halves).
cudaError_t launch_scatter_add(cudaStream_t s, GpuType type, const gpu::EwPlan& inner, const gpu::EwPlan& idx,
                               const void* indices, int wide, int64_t rows_dx, int64_t n, void* acc, int64_t as0,
                               const void* g, int64_t gs0, int* bad);
// MASKED_FILL: y = mask == eq ? fill : x (operands 0 y, 1 x, 2 the mask broadcast).
enum MaskType : int { kMaskF32 = 0, kMaskF16, kMaskI32, kMaskU8 };
cudaError_t launch_masked_fill(cudaStream_t s, GpuType type, const gpu::EwPlan& p, void* y, const void* x,
                               const void* mask, int mask_type, double eq, float fill);

// The random family's counter (lib/cmd/rand/rand.hpp): element i of an
// execution takes the splitmix64 output of key + (k + 1) * golden, k = i
// (64-bit words) or i / 2 (32-bit halves), so the GPU draws CPU_REF's values.
// Plans walk the elements in row-major order (operand 0 the output).
// Data of `type` (kF32, kF16, kBF16, kF64: x, y, g, dx in one type), computed
// in double and stored as CPU_REF stores (rand_kernels.cu).
// DROPOUT forward: operands 0 y, 1 x, 2 the mask when `shaped` (an 8U tensor
// of x's shape), else mask bytes at mask + i; keep_all >= 0 for entirety.
cudaError_t launch_dropout(cudaStream_t s, GpuType type, const gpu::EwPlan& p, void* y, const void* x,
                           unsigned char* mask, int shaped, uint64_t key, uint64_t threshold, double scale,
                           int keep_all);
// Backward: operands 0 dx, 1 g, 2 the mask when shaped; entirety reads mask[0].
cudaError_t launch_dropout_backward(cudaStream_t s, GpuType type, const gpu::EwPlan& p, void* dx, const void* g,
                                    const unsigned char* mask, int shaped, double scale, int entirety);
// RANDOM_UNIFORM (lb + range u; 64F: 53 bits of word64(i)) and RANDOM_NORMAL
// (mean + std z) into a plan of `type`.
cudaError_t launch_random(cudaStream_t s, GpuType type, const gpu::EwPlan& p, void* y, uint64_t key, int normal,
                          double a, double b);

}  // namespace nnc::cuda
