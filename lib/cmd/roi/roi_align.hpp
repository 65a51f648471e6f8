// The ROI_ALIGN family inside: roi_align.cpp describes the command and
// registers the kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::roi_align {

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

}  // namespace nnc::roi_align
