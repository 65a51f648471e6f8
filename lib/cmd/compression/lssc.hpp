// The COMPRESSION_LSSC family inside: lssc.cpp describes the commands and
// the block format and registers the kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::lssc {

NNC_KERNEL(forward_ref);   // compress
NNC_KERNEL(backward_ref);  // decompress

}  // namespace nnc::lssc
