// CPU_REF kernels of INDEX_SELECT: every element through its tensor's own
// strides; the forward copies element bytes (any type), the backward sums in
// double and rounds once into dx's type.
#include <cstring>
#include <vector>

#include "cmd/index/index.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::index {

NNC_KERNEL(forward_ref) {
  const Layout x = layout_of(inputs[0], "x"), y = layout_of(outputs[0], "y");
  std::vector<int64_t> rows(static_cast<size_t>(y.dim[0]));
  read_rows(inputs[1], x.dim[0], "INDEX_SELECT_FORWARD", rows.data());
  for_each_index(y.dim.data(), y.nd, [&](const int* i) {
    int64_t off = rows[static_cast<size_t>(i[0])] * x.stride[0];
    for (int d = 1; d < y.nd; d++) off += static_cast<int64_t>(i[d]) * x.stride[d];
    std::memcpy(y.at(i), x.data + off * static_cast<int64_t>(x.element_size), x.element_size);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Layout g = layout_of(inputs[0], "g"), dx = layout_of(outputs[0], "dx");
  std::vector<int64_t> rows(static_cast<size_t>(g.dim[0]));
  read_rows(inputs[2], dx.dim[0], "INDEX_SELECT_BACKWARD", rows.data());
  int64_t packed[kMaxDim];
  packed_strides(dx.dim.data(), dx.nd, packed);
  std::vector<double> sum(dx.count(), 0.0);
  for_each_index(g.dim.data(), g.nd, [&](const int* i) {
    int64_t k = rows[static_cast<size_t>(i[0])] * packed[0];
    for (int d = 1; d < g.nd; d++) k += static_cast<int64_t>(i[d]) * packed[d];
    sum[static_cast<size_t>(k)] += load_double(g.at(i), g.datatype);
  });
  size_t k = 0;
  for_each_index(dx.dim.data(), dx.nd, [&](const int* i) { store_double(dx.at(i), dx.datatype, sum[k++]); });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::index
