// Whole-tensor copy and fill for every family (EWSUM's backward, a NULL
// gradient taken as ones, zeroed gradients): copy x into y (same shape, same
// type, any strides) and fill y with a value. The _ref ones go element by
// element; the _opt ones are the optimised paths. They are the loops of
// DATA_TRANSFER and SET, so they are defined beside those kernels
// (cmd/util/cpu_ref.cpp, cpu_opt.cpp); families call them only through here.
#pragma once

#include "nnc/ccv_nnc.h"

namespace nnc::util {

void ref_copy(const ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y);
void ref_fill(ccv_nnc_tensor_t* y, double value);
void opt_copy(const ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y);
void opt_fill(ccv_nnc_tensor_t* y, double value);

}  // namespace nnc::util
