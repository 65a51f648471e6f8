#include "cmd/common/checks.hpp"

#include "core/tensor.hpp"

namespace nnc {

bool ones_prefix(const uint64_t* masks, int size, int* count) {
  int total = 0;
  bool ended = false;
  for (int w = 0; w < size; w++)
    for (int b = 0; b < 64; b++) {
      const bool set = (masks[w] >> b) & 1u;
      if (set && ended) return false;
      if (!set) ended = true;
      total += set ? 1 : 0;
    }
  *count = total;
  return true;
}

bool overlaps(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  if (!a || !b) return false;
  auto range = [](const ccv_nnc_tensor_t* t, const unsigned char*& lo, const unsigned char*& hi) {
    const Layout l = layout_of(t);
    int64_t span = 0;
    for (int i = 0; i < l.nd; i++)
      span += static_cast<int64_t>(l.dim[i] - 1) * (l.stride[i] < 0 ? -l.stride[i] : l.stride[i]);
    lo = l.data;
    hi = l.data + (span + 1) * static_cast<int64_t>(l.element_size);
  };
  const unsigned char *alo, *ahi, *blo, *bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace nnc
