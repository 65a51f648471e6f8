// CPU_REF kernel of TRANSPOSE: each output element copied from the input
// element at the swapped index, through both tensors' own strides.
#include <cstring>
#include <utility>

#include "cmd/util/transpose.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::util {

NNC_KERNEL(transpose_ref) {
  const Layout x = layout_of(inputs[0], "TRANSPOSE input");
  const Layout y = layout_of(outputs[0], "TRANSPOSE output");
  const int a = cmd.info.transpose.axis[0], b = cmd.info.transpose.axis[1];
  int from[kMaxDim];
  for_each_index(y.dim.data(), y.nd, [&](const int* index) {
    std::memcpy(from, index, sizeof(int) * static_cast<size_t>(y.nd));
    std::swap(from[a], from[b]);
    std::memcpy(y.at(index), x.at(from), y.element_size);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::util
