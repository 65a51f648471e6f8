// The COMM family inside: comm.cpp describes the commands and registers the
// kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::comm {

NNC_KERNEL(allreduce_ref);           // ALLREDUCE forward and backward
NNC_KERNEL(broadcast_forward_ref);
NNC_KERNEL(broadcast_backward_ref);
NNC_KERNEL(reduce_forward_ref);
NNC_KERNEL(reduce_backward_ref);

// Across a communicator's processes (across.cpp): the checks and the run.
void validate_across(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                     int output_size);
int run_across(ccv_nnc_comm_t* comm, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
               ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream = nullptr);

}  // namespace nnc::comm
