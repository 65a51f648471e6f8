// The broadcasting BLAS commands inside: ADD, MUL and SCALAR_MUL (see
// elementwise.cpp for their semantics), their shape rule and kernels.
#pragma once

#include "nnc/ccv_nnc.h"

namespace nnc {
class Registry;
}

namespace nnc::blas_ew {

#define NNC_BLAS_EW_KERNEL(name)                                                                                 \
  int name(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs, \
           const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,                        \
           ccv_nnc_stream_context_t* const stream_context)
NNC_BLAS_EW_KERNEL(forward_ref);
NNC_BLAS_EW_KERNEL(backward_ref);
NNC_BLAS_EW_KERNEL(forward_opt);
NNC_BLAS_EW_KERNEL(backward_opt);

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
