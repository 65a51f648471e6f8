// The row kernels' arguments from tensors (loss_optim_gpu.cpp, shared with
// more_gpu.cpp): set_rows plans the rows of the present tensors (all of one
// shape; the last dimension is a row), set_item plans tensor k with one
// value per row; refuse_f64 turns 64F away with a message.
#pragma once

#include <initializer_list>

#include "cuda/kern.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::cuda {

void set_rows(RowArgs& a, std::initializer_list<const ccv_nnc_tensor_t*> ts, const char* what);
void set_item(RowArgs& a, int k, const ccv_nnc_tensor_t* t, const char* what);
// Fails (CCV_NNC_EXEC_NO_KERNEL, with a message) when a tensor present is
// 64F: the GPU_REF kernels that call it compute in float, so they refuse 64F
// rather than narrow it silently.
void refuse_f64(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                const char* what);

}  // namespace nnc::cuda
