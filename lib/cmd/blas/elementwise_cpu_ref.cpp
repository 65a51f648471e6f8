// CPU_REF kernels of ADD, MUL and SCALAR_MUL (elementwise.cpp): one element
// at a time in double through each tensor's strides, broadcast dimensions
// read with stride 0; backward sums accumulate in double and are rounded once.
#include <vector>

#include "cmd/blas/elementwise.hpp"
#include "cmd/common/runs.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::blas_ew {

namespace {

double at(const Layout& l, const int64_t* s, int nd, const int* index) {
  int64_t off = 0;
  for (int i = 0; i < nd; i++) off += static_cast<int64_t>(index[i]) * s[i];
  return load_double(l.data + off * static_cast<int64_t>(l.element_size), l.datatype);
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Layout y = layout_of(outputs[0], "y");
  const uint32_t op = cmd.cmd & ~1u;
  const double p = cmd.info.blas.a[0], q = cmd.info.blas.a[1];
  const Layout a = layout_of(inputs[0], "a");
  int64_t as[kMaxDim], bs[kMaxDim];
  ew::broadcast_strides(a, y, as);
  Layout b;
  if (input_size > 1) {
    b = layout_of(inputs[1], "b");
    ew::broadcast_strides(b, y, bs);
  }
  for_each_index(y.dim.data(), y.nd, [&](const int* index) {
    const double av = at(a, as, y.nd, index);
    double v;
    if (op == CCV_NNC_SCALAR_MUL_FORWARD)
      v = p * av;
    else if (op == CCV_NNC_ADD_FORWARD)
      v = p * av + q * at(b, bs, y.nd, index);
    else
      v = p * av * at(b, bs, y.nd, index);
    store_double(y.at(index), y.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const uint32_t op = cmd.cmd & ~1u;
  const Layout g = layout_of(inputs[0], "g");
  int64_t gs[kMaxDim];
  ew::broadcast_strides(g, g, gs);
  // Every gradient is computed before any is stored, so outputs may share inputs.
  std::vector<std::vector<double>> sums(static_cast<size_t>(output_size));
  std::vector<Layout> d(static_cast<size_t>(output_size));
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    d[j] = layout_of(outputs[j], "gradient");
    const double scale = op == CCV_NNC_ADD_FORWARD ? cmd.info.blas.a[j] : cmd.info.blas.a[0];
    // Packed accumulators in d's shape, addressed through broadcast strides.
    std::vector<double>& acc = sums[j];
    acc.assign(d[j].count(), 0.0);
    Layout packed = d[j];
    packed_strides(packed.dim.data(), packed.nd, packed.stride.data());
    int64_t ps[kMaxDim];
    ew::broadcast_strides(packed, g, ps);
    Layout other;
    int64_t os[kMaxDim] = {};
    const bool mul = op == CCV_NNC_MUL_FORWARD;
    if (mul) {
      other = layout_of(inputs[2 - j], "operand");
      ew::broadcast_strides(other, g, os);
    }
    for_each_index(g.dim.data(), g.nd, [&](const int* index) {
      int64_t k = 0;
      for (int i = 0; i < g.nd; i++) k += static_cast<int64_t>(index[i]) * ps[i];
      double v = at(g, gs, g.nd, index);
      if (mul) v *= at(other, os, g.nd, index);
      acc[static_cast<size_t>(k)] += v;
    });
    for (double& v : acc) v *= scale;
  }
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    size_t k = 0;
    for_each_index(d[j].dim.data(), d[j].nd,
                   [&](const int* index) { store_double(d[j].at(index), d[j].datatype, sums[j][k++]); });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::blas_ew
