#include "cmd/common/axes.hpp"

#include "core/error.hpp"

namespace nnc {

unsigned axis_mask(const char* what, const int* axis, int count, int nd) {
  NNC_CHECK(count >= 1 && count <= nd, "%s: %d axes given for a %d-dimensional tensor (it needs 1 to %d)", what, count,
            nd, nd);
  unsigned mask = 0;
  for (int i = 0; i < count; i++) {
    NNC_CHECK(axis[i] >= 0 && axis[i] < nd, "%s: axis %d is outside a %d-dimensional tensor", what, axis[i], nd);
    NNC_CHECK(!(mask & (1u << axis[i])), "%s: axis %d is given twice", what, axis[i]);
    mask |= 1u << axis[i];
  }
  return mask;
}

void reduced_dims(const int* dim, int nd, unsigned mask, int* out) {
  for (int i = 0; i < kMaxDim; i++) out[i] = i < nd ? ((mask >> i) & 1u ? 1 : dim[i]) : 0;
}

int runs_of(const int* dim, int nd, unsigned mask, size_t* extent, bool* reduced) {
  int n = 0;
  for (int i = 0; i < nd; i++) {
    if (dim[i] == 1) continue;
    const bool r = (mask >> i) & 1u;
    if (n > 0 && reduced[n - 1] == r) {
      extent[n - 1] *= static_cast<size_t>(dim[i]);
    } else {
      extent[n] = static_cast<size_t>(dim[i]);
      reduced[n] = r;
      n++;
    }
  }
  return n;
}

bool split3(const int* dim, int nd, unsigned mask, size_t* outer, size_t* kept, size_t* inner) {
  size_t extent[kMaxDim];
  bool reduced[kMaxDim];
  const int n = runs_of(dim, nd, mask, extent, reduced);
  *outer = *kept = *inner = 1;
  int i = 0;
  if (i < n && reduced[i]) *outer = extent[i++];
  if (i < n && !reduced[i]) *kept = extent[i++];
  if (i < n && reduced[i]) *inner = extent[i++];
  return i == n;
}

bool is_packed(const ccv_nnc_tensor_t* t) { return CCV_IS_TENSOR_CONTIGUOUS(t); }

}  // namespace nnc
