// The HISTOGRAM family inside: histogram.cpp describes the command and
// registers the kernel; cpu_ref.cpp holds it.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::histogram {

// The number of magnitude bins of the logarithmic mode, libnnc's formula
// (single precision, as its shape inference computes it): ceil(log(max / min)
// / log(rate)). The histogram has twice that plus 2 entries.
int log_range(const ccv_nnc_cmd_param_t& params);

NNC_KERNEL(forward_ref);

}  // namespace nnc::histogram
