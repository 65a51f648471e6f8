// The util family inside: SET, DATA_TRANSFER, FORMAT_TRANSFORM and
// DATATYPE_CONVERSION. util.cpp describes the commands (shapes, checks) and
// registers the kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the
// packed / threaded / vectorised ones.
#pragma once

#include <cstdint>

#include "cmd/common/copy.hpp"
#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::util {

// One element of `datatype` holding `value` (SET's fill value): floats rounded
// to nearest-even, integers rounded and saturated (NaN becomes 0).
void fill_pattern(double value, int datatype, unsigned char out[8]);

// Where each output dimension comes from when a tensor of `in_format` is
// rewritten in `out_format` (both nd-dimensional): perm[j] is the input
// dimension that output dimension j holds. Returns false when the two
// formats do not describe the same axes at this nd (CHWN is 4-d only).
bool format_permutation(int in_format, int out_format, int nd, int* perm);

// Whether DATATYPE_CONVERSION converts from `from` to `to`.
bool conversion_supported(int from, int to);

// Convert n elements from one floating-point type to another along strides
// (in elements), correctly rounded; shared by both backends for the pairs the
// optimised one has no vector loop for.
void convert_strided(const unsigned char* src, int from, int64_t src_stride, unsigned char* dst, int to,
                     int64_t dst_stride, size_t n);

// libnnc's bitmasks of the pairwise copies (DATA_TRANSFER, FORMAT_TRANSFORM,
// DATATYPE_CONVERSION, TRANSPOSE): forward, inputs and outputs are equal runs
// from the first bit covering both lists; backward, the outputs are a run
// covering their list, no longer than the inputs' run.
bool pairs_forward_bitmask(const ccv_nnc_cmd_param_t& params, int input_size, int output_size, const uint64_t* inputs,
                           int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size);
bool pairs_backward_bitmask(const ccv_nnc_cmd_param_t& params, int input_size, int output_size, const uint64_t* inputs,
                            int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size);

NNC_KERNEL(set_ref);
NNC_KERNEL(set_opt);
NNC_KERNEL(transfer_ref);
NNC_KERNEL(transfer_opt);
NNC_KERNEL(format_ref);
NNC_KERNEL(format_opt);
NNC_KERNEL(convert_ref);
NNC_KERNEL(convert_opt);

// AVX2 + F16C loops (cpu_opt_avx2.cpp); call only when cpu_features() has f16c and avx2.
void f32_to_f16_f16c(const float* src, uint16_t* dst, size_t n);
void f16_to_f32_f16c(const uint16_t* src, float* dst, size_t n);

}  // namespace nnc::util
