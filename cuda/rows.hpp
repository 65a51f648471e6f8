// The row kernels' arguments from tensors (loss_optim_gpu.cpp, shared with
// more_gpu.cpp): set_rows plans the rows of the present tensors (all of one
// shape; the last dimension is a row), set_item plans tensor k with one
// value per row.
#pragma once

#include <initializer_list>

#include "cuda/kern.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::cuda {

void set_rows(RowArgs& a, std::initializer_list<const ccv_nnc_tensor_t*> ts, const char* what);
void set_item(RowArgs& a, int k, const ccv_nnc_tensor_t* t, const char* what);

}  // namespace nnc::cuda
