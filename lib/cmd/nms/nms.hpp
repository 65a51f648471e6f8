// The NMS family inside: nms.cpp describes the command and registers the
// kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::nms {

// Intersection over union of two boxes given as (x, y, width, height); a
// negative extent counts as 0, and two empty boxes have IoU 0.
double iou(double ax, double ay, double aw, double ah, double bx, double by, double bw, double bh);

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

}  // namespace nnc::nms
