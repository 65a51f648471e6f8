// The reduction family inside (its axis helpers, shared with the
// normalisation family, are cmd/common/axes.hpp). reduce.cpp describes the commands (shapes, checks) and registers the
// kernels; cpu_ref.cpp holds the plain loops, cpu_opt.cpp the packed,
// threaded paths over the vectorised loops of loops.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cmd/common/axes.hpp"
#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::red {

NNC_KERNEL(reduce_forward_ref);
NNC_KERNEL(reduce_forward_opt);
NNC_KERNEL(reduce_backward_ref);
NNC_KERNEL(reduce_backward_opt);
NNC_KERNEL(arg_forward_ref);
NNC_KERNEL(arg_forward_opt);

}  // namespace nnc::red
