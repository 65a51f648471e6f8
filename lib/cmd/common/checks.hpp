// Checks several families make of their operands: libnnc's "run from the
// first bit" bitmask shape, and whether two tensors share bytes.
#pragma once

#include <cstdint>

#include "nnc/ccv_nnc.h"

namespace nnc {

// libnnc's bitmask shape "1..10..0": true when the set bits of the first
// `size` words form one run from bit 0 (count set to its length).
bool ones_prefix(const uint64_t* masks, int size, int* count);

// Whether two tensors' bytes overlap (in-place and aliasing checks).
bool overlaps(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b);

}  // namespace nnc
