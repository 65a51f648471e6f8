// Axis sets of the reducing families (reduction, normalisation): which axes a
// command folds, the shape that leaves, and the runs a kernel walks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

// Bit i set when axis i of an nd-dimensional tensor is in axis[0..count).
// Throws (CCV_NNC_EXEC_INVALID, naming `what`) on a count outside [1, nd], an
// axis outside [0, nd), or a repeated axis.
unsigned axis_mask(const char* what, const int* axis, int count, int nd);

// `dim` with the axes of `mask` set to 1 (nd entries, the rest 0).
void reduced_dims(const int* dim, int nd, unsigned mask, int* out);

// The shape as three extents (outer reduced, kept, inner reduced) when the
// kept axes (those not in mask, ignoring extents of 1) are one block: element
// (o, k, i) sits at (o * kept + k) * inner + i of the packed tensor. False if
// the kept axes are split by a reduced one.
bool split3(const int* dim, int nd, unsigned mask, size_t* outer, size_t* kept, size_t* inner);

// Merged runs of a shape: extents of 1 dropped, neighbours of the same kind
// (reduced or kept) multiplied together. Returns the number of runs.
int runs_of(const int* dim, int nd, unsigned mask, size_t* extent, bool* reduced);

// Element `linear` (row-major over its own shape) of a tensor seen through its layout.
inline unsigned char* at_linear(const Layout& l, size_t linear) {
  int64_t off = 0;
  for (int i = l.nd - 1; i >= 0; i--) {
    off += static_cast<int64_t>(linear % static_cast<size_t>(l.dim[i])) * l.stride[i];
    linear /= static_cast<size_t>(l.dim[i]);
  }
  return l.data + off * static_cast<int64_t>(l.element_size);
}

// Whether a tensor is packed (no view gaps).
bool is_packed(const ccv_nnc_tensor_t* t);

}  // namespace nnc
