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

}  // namespace nnc::comm
