// The element-wise family inside. ew.cpp describes the commands and registers
// the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the packed /
// threaded paths and cpu_opt_avx2.cpp their AVX2 inner loops.
#pragma once

#include <cstddef>

#include "nnc/ccv_nnc.h"

namespace nnc::ew {

#define NNC_EW_KERNEL(name)                                                                                     \
  int name(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs, \
           const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,                       \
           ccv_nnc_stream_context_t* const stream_context)
NNC_EW_KERNEL(ewsum_forward_ref);
NNC_EW_KERNEL(ewsum_forward_opt);
NNC_EW_KERNEL(ewsum_backward_ref);
NNC_EW_KERNEL(ewsum_backward_opt);

// y[i] = x[0][i] + x[1][i] + ... + x[n-1][i] for i < count, summed left to
// right in float (so it matches the scalar loop bit for bit). y may be one of
// the x. Call only when cpu_features() reports AVX2.
void sum_f32_avx2(float* y, const float* const* x, int n, size_t count);

}  // namespace nnc::ew
