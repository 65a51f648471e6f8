// The PAD family inside: pad.cpp describes the command and registers the
// kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::pad {

// The input index a padded position `i` of an axis of extent n (padded by
// `begin` in front) reads, or -1 where zero padding writes a 0. n >= 1.
inline int source_index(int type, int i, int begin, int n) {
  int j = i - begin;
  if (j >= 0 && j < n) return j;
  if (type == CCV_NNC_PAD_ZERO) return -1;
  if (type == CCV_NNC_PAD_REPLICATE || n == 1) return j < 0 ? 0 : n - 1;
  // Reflect: mirror images of the axis repeat with period 2 (n - 1).
  const int period = 2 * (n - 1);
  j %= period;
  if (j < 0) j += period;
  return j < n ? j : period - j;
}

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

}  // namespace nnc::pad
