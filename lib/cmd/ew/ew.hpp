// The element-wise family inside. ew.cpp describes the commands and registers
// the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the packed /
// threaded paths and cpu_opt_avx2.cpp their AVX2 inner loops.
#pragma once

#include <cstddef>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::ew {

NNC_KERNEL(ewsum_forward_ref);
NNC_KERNEL(ewsum_forward_opt);
NNC_KERNEL(ewsum_backward_ref);
NNC_KERNEL(ewsum_backward_opt);

// y[i] = x[0][i] + x[1][i] + ... + x[n-1][i] for i < count, summed left to
// right in float (so it matches the scalar loop bit for bit). y may be one of
// the x. Call only when cpu_features() reports AVX2.
void sum_f32_avx2(float* y, const float* const* x, int n, size_t count);

}  // namespace nnc::ew
