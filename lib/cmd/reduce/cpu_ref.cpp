// CPU_REF kernels of the reductions: every element visited through its
// tensor's own strides, accumulated in double, rounded once into the output.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cmd/reduce/reduce.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::red {

namespace {

// Address in `small` (reduced axes of extent 1) of the element that full-shape index `index` reduces into.
unsigned char* reduced_at(const Layout& small, const int* index, unsigned mask) {
  int64_t off = 0;
  for (int i = 0; i < small.nd; i++)
    if (!((mask >> i) & 1u)) off += static_cast<int64_t>(index[i]) * small.stride[i];
  return small.data + off * static_cast<int64_t>(small.element_size);
}

size_t reduced_count(const Layout& full, unsigned mask) {
  size_t n = 1;
  for (int i = 0; i < full.nd; i++)
    if ((mask >> i) & 1u) n *= static_cast<size_t>(full.dim[i]);
  return n;
}

// Linear index in the reduced (packed) shape of a full-shape index.
size_t reduced_linear(const Layout& full, const int* index, unsigned mask) {
  size_t k = 0;
  for (int i = 0; i < full.nd; i++)
    if (!((mask >> i) & 1u)) k = k * static_cast<size_t>(full.dim[i]) + static_cast<size_t>(index[i]);
  return k;
}

}  // namespace

NNC_KERNEL(reduce_forward_ref) {
  const Layout x = layout_of(inputs[0], "reduction input");
  const Layout y = layout_of(outputs[0], "reduction output");
  const unsigned mask = axis_mask("reduction", cmd.info.reduce.axis, cmd.info.reduce.count, x.nd);
  const size_t n = y.count();
  const bool is_max = cmd.cmd == CCV_NNC_REDUCE_MAX_FORWARD, is_min = cmd.cmd == CCV_NNC_REDUCE_MIN_FORWARD;
  const bool squares = cmd.cmd == CCV_NNC_REDUCE_NORM2_FORWARD;
  std::vector<double> acc(n, is_max ? -INFINITY : is_min ? INFINITY : 0.0);
  for_each_index(x.dim.data(), x.nd, [&](const int* index) {
    const double v = load_double(x.at(index), x.datatype);
    double& a = acc[reduced_linear(x, index, mask)];
    if (is_max)
      a = (std::isnan(v) || v > a) && !std::isnan(a) ? v : a;
    else if (is_min)
      a = (std::isnan(v) || v < a) && !std::isnan(a) ? v : a;
    else
      a += squares ? v * v : v;
  });
  const double count = static_cast<double>(reduced_count(x, mask));
  for (size_t k = 0; k < n; k++) {
    double v = acc[k];
    if (cmd.cmd == CCV_NNC_REDUCE_MEAN_FORWARD) v /= count;
    if (squares) v = std::sqrt(v);
    store_double(at_linear(y, k), y.datatype, v);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce_backward_ref) {
  const Layout g = layout_of(inputs[0], "reduction gradient");
  const Layout dx = layout_of(outputs[0], "reduction dx");
  const unsigned mask = axis_mask("reduction", cmd.info.reduce.axis, cmd.info.reduce.count, dx.nd);
  const double count = static_cast<double>(reduced_count(dx, mask));
  Layout x, y;
  const bool xy = cmd.cmd != CCV_NNC_REDUCE_SUM_BACKWARD && cmd.cmd != CCV_NNC_REDUCE_MEAN_BACKWARD;
  if (xy) {
    x = layout_of(inputs[1], "reduction x");
    y = layout_of(inputs[2], "reduction y");
  }
  for_each_index(dx.dim.data(), dx.nd, [&](const int* index) {
    const double gv = load_double(reduced_at(g, index, mask), g.datatype);
    double v;
    switch (cmd.cmd) {
      case CCV_NNC_REDUCE_SUM_BACKWARD:
        v = gv;
        break;
      case CCV_NNC_REDUCE_MEAN_BACKWARD:
        v = gv / count;
        break;
      case CCV_NNC_REDUCE_NORM2_BACKWARD: {
        const double yv = load_double(reduced_at(y, index, mask), y.datatype);
        v = yv == 0 ? 0.0 : gv * load_double(x.at(index), x.datatype) / yv;
        break;
      }
      default:  // MAX, MIN
        v = load_double(x.at(index), x.datatype) == load_double(reduced_at(y, index, mask), y.datatype) ? gv : 0.0;
    }
    store_double(dx.at(index), dx.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(arg_forward_ref) {
  const Layout x = layout_of(inputs[0], "ARGMAX/ARGMIN input");
  const Layout y = layout_of(outputs[0], "ARGMAX/ARGMIN output");
  const int axis = cmd.info.reduce.axis[0];
  const bool is_max = cmd.cmd == CCV_NNC_ARGMAX_FORWARD;
  const int len = x.dim[axis];
  int index[kMaxDim];
  for_each_index(y.dim.data(), y.nd, [&](const int* out) {
    std::memcpy(index, out, sizeof(int) * static_cast<size_t>(y.nd));
    int best = 0;
    index[axis] = 0;
    double bv = load_double(x.at(index), x.datatype);
    for (int i = 1; i < len && !std::isnan(bv); i++) {
      index[axis] = i;
      const double v = load_double(x.at(index), x.datatype);
      if (std::isnan(v) || (is_max ? v > bv : v < bv)) bv = v, best = i;
    }
    const int32_t r = best;
    std::memcpy(y.at(out), &r, 4);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::red
