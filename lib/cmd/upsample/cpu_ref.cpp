// CPU_REF kernels of UPSAMPLE: every element through its tensor's own
// strides, values blended in double and rounded once into the output type.
#include <vector>

#include "cmd/upsample/upsample.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::upsample {

namespace {

std::vector<Tap> taps(const ccv_nnc_cmd_t& cmd, int in, int out) {
  std::vector<Tap> t(static_cast<size_t>(out));
  for (int i = 0; i < out; i++) t[i] = tap(cmd.info.upsample.type, cmd.info.upsample.align_corners, i, in, out);
  return t;
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Layout x = layout_of(inputs[0], "x"), y = layout_of(outputs[0], "y");
  const int h = height_axis(inputs[0]->info);
  const std::vector<Tap> th = taps(cmd, x.dim[h], y.dim[h]), tw = taps(cmd, x.dim[h + 1], y.dim[h + 1]);
  for_each_index(y.dim.data(), y.nd, [&](const int* i) {
    int64_t base = 0;
    for (int d = 0; d < y.nd; d++)
      if (d != h && d != h + 1) base += static_cast<int64_t>(i[d]) * x.stride[d];
    const Tap a = th[i[h]], b = tw[i[h + 1]];
    auto at = [&](int r, int c) {
      const int64_t off = base + r * x.stride[h] + c * x.stride[h + 1];
      return load_double(x.data + off * static_cast<int64_t>(x.element_size), x.datatype);
    };
    // Nearest reads one element (no zero weights times a neighbour that may be infinite).
    const double v = cmd.info.upsample.type == CCV_NNC_UPSAMPLE_NEAREST
                         ? at(a.i0, b.i0)
                         : (1 - a.l) * ((1 - b.l) * at(a.i0, b.i0) + b.l * at(a.i0, b.i1)) +
                               a.l * ((1 - b.l) * at(a.i1, b.i0) + b.l * at(a.i1, b.i1));
    store_double(y.at(i), y.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Layout g = layout_of(inputs[0], "g"), dx = layout_of(outputs[0], "dx");
  const int h = height_axis(inputs[0]->info);
  const std::vector<Tap> th = taps(cmd, dx.dim[h], g.dim[h]), tw = taps(cmd, dx.dim[h + 1], g.dim[h + 1]);
  int64_t packed[kMaxDim];
  packed_strides(dx.dim.data(), dx.nd, packed);
  std::vector<double> sum(dx.count(), 0.0);
  for_each_index(g.dim.data(), g.nd, [&](const int* i) {
    int64_t base = 0;
    for (int d = 0; d < g.nd; d++)
      if (d != h && d != h + 1) base += static_cast<int64_t>(i[d]) * packed[d];
    const Tap a = th[i[h]], b = tw[i[h + 1]];
    const double v = load_double(g.at(i), g.datatype);
    auto add = [&](int r, int c, double w) {
      if (w != 0) sum[static_cast<size_t>(base + r * packed[h] + c * packed[h + 1])] += w * v;
    };
    add(a.i0, b.i0, (1 - a.l) * (1 - b.l));
    add(a.i0, b.i1, (1 - a.l) * b.l);
    add(a.i1, b.i0, a.l * (1 - b.l));
    add(a.i1, b.i1, a.l * b.l);
  });
  size_t k = 0;
  for_each_index(dx.dim.data(), dx.nd, [&](const int* i) { store_double(dx.at(i), dx.datatype, sum[k++]); });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::upsample
