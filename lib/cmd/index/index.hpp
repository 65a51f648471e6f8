// The INDEX_SELECT family inside: index.cpp describes the command and
// registers the kernels; cpu_ref.cpp and cpu_opt.cpp hold them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::index {

// The n row indices `indices` holds (32S or 64S, row-major) into out[0..n),
// each checked against `rows`: throws (CCV_NNC_EXEC_INVALID) naming the first
// position outside.
void read_rows(const ccv_nnc_tensor_t* indices, int64_t rows, const char* name, int64_t* out);

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);
NNC_KERNEL(forward_opt);
NNC_KERNEL(backward_opt);
bool opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size);

}  // namespace nnc::index
