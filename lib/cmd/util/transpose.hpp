// TRANSPOSE inside: transpose.cpp describes the command and registers it
// (called from register_util); transpose_cpu_ref.cpp holds the plain loop,
// transpose_cpu_opt.cpp the cache-blocked one.
#pragma once

#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::util {

void register_transpose(Registry& r);

#define NNC_TRANSPOSE_KERNEL(name)                                                                               \
  int name(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs, \
           const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,                        \
           ccv_nnc_stream_context_t* const stream_context)
NNC_TRANSPOSE_KERNEL(transpose_ref);
NNC_TRANSPOSE_KERNEL(transpose_opt);

}  // namespace nnc::util
