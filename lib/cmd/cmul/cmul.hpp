// The CMUL family inside: cmul.cpp describes the command and registers the
// kernels; cpu_ref.cpp holds them.
#pragma once

#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::cmul {

// The broadcast of two shapes aligned at their last axes (libnnc's rule):
// each axis the larger extent. Returns the rank.
inline int broadcast_dims(const int* a, const int* b, int* out) {
  const int na = nd_of(a), nb = nd_of(b), n = na > nb ? na : nb;
  for (int i = 0; i < kMaxDim; i++) out[i] = 0;
  for (int i = 0; i < n; i++) {
    const int ia = i - (n - na), ib = i - (n - nb);
    const int da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    out[i] = da > db ? da : db;
  }
  return n;
}

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);

}  // namespace nnc::cmul
