// CPU_REF kernels of the util family: one element at a time through each
// tensor's own strides, so every layout, view and data type takes the same
// obviously-correct path. The commands' validate functions have already
// checked counts, shapes and types.
#include <algorithm>
#include <cstring>

#include "cmd/util/util.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::util {

void ref_fill(ccv_nnc_tensor_t* t, double value) {
  const Layout y = layout_of(t, "output");
  unsigned char pattern[8];
  fill_pattern(value, y.datatype, pattern);
  for_each_index(y.dim.data(), y.nd, [&](const int* index) { std::memcpy(y.at(index), pattern, y.element_size); });
}

void ref_copy(const ccv_nnc_tensor_t* xt, ccv_nnc_tensor_t* yt) {
  const Layout x = layout_of(xt, "input");
  const Layout y = layout_of(yt, "output");
  if (x.nd != y.nd || !std::equal(x.dim.begin(), x.dim.begin() + x.nd, y.dim.begin())) {
    // A reshaping copy between packed tensors (validated).
    std::memmove(y.data, x.data, x.count() * x.element_size);
    return;
  }
  for_each_index(y.dim.data(), y.nd, [&](const int* index) { std::memmove(y.at(index), x.at(index), y.element_size); });
}

NNC_KERNEL(set_ref) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) ref_fill(outputs[i], cmd.info.blas.a[0]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(transfer_ref) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) ref_copy(inputs[i], outputs[i]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(format_ref) {
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout x = layout_of(inputs[i], "FORMAT_TRANSFORM input");
    const Layout y = layout_of(outputs[i], "FORMAT_TRANSFORM output");
    int perm[kMaxDim];
    NNC_CHECK(format_permutation(x.format, y.format, y.nd, perm), "FORMAT_TRANSFORM: formats %s and %s do not match",
              format_name(x.format), format_name(y.format));
    for_each_index(y.dim.data(), y.nd, [&](const int* index) {
      int from[kMaxDim];
      for (int j = 0; j < y.nd; j++) from[perm[j]] = index[j];
      std::memcpy(y.at(index), x.at(from), y.element_size);
    });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(convert_ref) {
  for (int i = 0; i < output_size; i++) {
    if (!outputs[i]) continue;
    const Layout x = layout_of(inputs[i], "DATATYPE_CONVERSION input");
    const Layout y = layout_of(outputs[i], "DATATYPE_CONVERSION output");
    for_each_index(y.dim.data(), y.nd, [&](const int* index) {
      if (x.datatype == y.datatype)
        std::memmove(y.at(index), x.at(index), y.element_size);
      else
        convert_strided(x.at(index), x.datatype, 1, y.at(index), y.datatype, 1, 1);
    });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::util
