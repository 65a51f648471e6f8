// The broadcasting BLAS commands inside: ADD, MUL and SCALAR_MUL (see
// elementwise.cpp for their semantics), their shape rule and kernels.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {
class Registry;
}

namespace nnc::blas_ew {

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);
NNC_KERNEL(forward_opt);
NNC_KERNEL(backward_opt);

// libnnc's broadcast of two shapes: right-aligned, each dimension equal or 1.
// Writes the result (nd = the larger nd) into out and returns true, or false
// when they do not broadcast.
bool broadcast_dims(const int* a, const int* b, int* out);
// Whether `d` (a gradient's shape) broadcasts to `full` without growing it.
bool reduces_to(const int* d, const int* full);

// The shape and type a NULL g (read as ones) has: the broadcast of the other
// tensors of a backward call. False when they give none or do not broadcast.
bool implicit_g(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                ccv_nnc_tensor_param_t* g);

void register_elementwise(Registry& r);

}  // namespace nnc::blas_ew
