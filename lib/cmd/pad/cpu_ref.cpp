// CPU_REF kernels of PAD: every element through its tensor's own strides.
// The forward copies element bytes (exact for every type); the backward sums
// in double and rounds once into dx's type.
#include <cstring>
#include <vector>

#include "cmd/pad/pad.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::pad {

namespace {

// The input index of every padded position of axis d (-1: a zero).
std::vector<std::vector<int>> source_maps(const ccv_nnc_cmd_t& cmd, const Layout& small, const Layout& big) {
  std::vector<std::vector<int>> map(static_cast<size_t>(big.nd));
  for (int d = 0; d < big.nd; d++) {
    map[d].resize(static_cast<size_t>(big.dim[d]));
    for (int i = 0; i < big.dim[d]; i++)
      map[d][i] = source_index(cmd.info.pad.type, i, cmd.info.size.dim[d], small.dim[d]);
  }
  return map;
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Layout x = layout_of(inputs[0], "x"), y = layout_of(outputs[0], "y");
  const auto map = source_maps(cmd, x, y);
  const size_t es = y.element_size;
  for_each_index(y.dim.data(), y.nd, [&](const int* i) {
    int64_t off = 0;
    for (int d = 0; d < y.nd; d++) {
      const int j = map[d][i[d]];
      if (j < 0) {
        std::memset(y.at(i), 0, es);
        return;
      }
      off += static_cast<int64_t>(j) * x.stride[d];
    }
    std::memcpy(y.at(i), x.data + off * static_cast<int64_t>(es), es);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Layout g = layout_of(inputs[0], "g"), dx = layout_of(outputs[0], "dx");
  const auto map = source_maps(cmd, dx, g);
  int64_t packed[kMaxDim];
  packed_strides(dx.dim.data(), dx.nd, packed);
  std::vector<double> sum(dx.count(), 0.0);
  for_each_index(g.dim.data(), g.nd, [&](const int* i) {
    int64_t k = 0;
    for (int d = 0; d < g.nd; d++) {
      const int j = map[d][i[d]];
      if (j < 0) return;
      k += static_cast<int64_t>(j) * packed[d];
    }
    sum[static_cast<size_t>(k)] += load_double(g.at(i), g.datatype);
  });
  size_t k = 0;
  for_each_index(dx.dim.data(), dx.nd, [&](const int* i) { store_double(dx.at(i), dx.datatype, sum[k++]); });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::pad
