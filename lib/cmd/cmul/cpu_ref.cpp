// CPU_REF kernels of CMUL: every pair through its tensor's own strides (0
// along broadcast axes), products in double, rounded once into the output.
#include <vector>

#include "cmd/cmul/cmul.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::cmul {

namespace {

// Strides of t over the n axes of the full shape, aligned at the last axes;
// 0 where t broadcasts.
void strides_over(const Layout& t, int n, int64_t* s) {
  for (int i = 0; i < n; i++) {
    const int j = i - (n - t.nd);
    s[i] = (j < 0 || t.dim[j] == 1) ? 0 : t.stride[j];
  }
}

double at(const Layout& t, const int64_t* s, const int* i, int n, int re_im) {
  int64_t off = re_im * s[n - 1];
  for (int d = 0; d < n; d++) off += static_cast<int64_t>(i[d]) * s[d];
  return load_double(t.data + off * static_cast<int64_t>(t.element_size), t.datatype);
}

// Visit every complex element of the full shape: f(index) with index[n - 1]
// the first (real) position of the pair.
template <class F>
void for_each_pair(const int* full, int n, F&& f) {
  int half[kMaxDim];
  for (int d = 0; d < n; d++) half[d] = full[d];
  half[n - 1] = full[n - 1] / 2;
  for_each_index(half, n, [&](const int* h) {
    int i[kMaxDim];
    for (int d = 0; d < n; d++) i[d] = h[d];
    i[n - 1] = 2 * h[n - 1];
    f(static_cast<const int*>(i));
  });
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Layout a = layout_of(inputs[0], "a"), b = layout_of(inputs[1], "b"), c = layout_of(outputs[0], "c");
  const int n = c.nd;
  int64_t sa[kMaxDim], sb[kMaxDim], sc[kMaxDim];
  strides_over(a, n, sa), strides_over(b, n, sb), strides_over(c, n, sc);
  // Read both operands before writing, so c may be a.
  for_each_pair(c.dim.data(), n, [&](const int* i) {
    const double ar = at(a, sa, i, n, 0), ai = at(a, sa, i, n, 1), br = at(b, sb, i, n, 0), bi = at(b, sb, i, n, 1);
    int64_t off = 0;
    for (int d = 0; d < n; d++) off += static_cast<int64_t>(i[d]) * sc[d];
    unsigned char* p = c.data + off * static_cast<int64_t>(c.element_size);
    store_double(p, c.datatype, ar * br - ai * bi);
    store_double(p + sc[n - 1] * static_cast<int64_t>(c.element_size), c.datatype, ar * bi + ai * br);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Layout g = layout_of(inputs[0], "g");
  const int n = g.nd;
  int64_t sg[kMaxDim];
  strides_over(g, n, sg);
  // d = sum over the broadcast axes of g * conj(other); `other` is b for da, a for db.
  auto gradient = [&](ccv_nnc_tensor_t* dt, const ccv_nnc_tensor_t* other) {
    if (!dt) return;
    const Layout d = layout_of(dt, "gradient"), o = layout_of(other, "operand");
    int64_t so[kMaxDim], packed[kMaxDim], sd[kMaxDim];
    strides_over(o, n, so);
    packed_strides(d.dim.data(), d.nd, packed);
    for (int i = 0; i < n; i++) {
      const int j = i - (n - d.nd);
      sd[i] = (j < 0 || d.dim[j] == 1) ? 0 : packed[j];
    }
    std::vector<double> sum(d.count(), 0.0);
    for_each_pair(g.dim.data(), n, [&](const int* i) {
      const double gr = at(g, sg, i, n, 0), gi = at(g, sg, i, n, 1), orr = at(o, so, i, n, 0), oi = at(o, so, i, n, 1);
      int64_t k = 0;
      for (int x = 0; x < n; x++) k += static_cast<int64_t>(i[x]) * sd[x];
      sum[static_cast<size_t>(k)] += gr * orr + gi * oi;
      sum[static_cast<size_t>(k + sd[n - 1])] += gi * orr - gr * oi;
    });
    size_t k = 0;
    for_each_index(d.dim.data(), d.nd, [&](const int* i) { store_double(d.at(i), d.datatype, sum[k++]); });
  };
  gradient(outputs[0], inputs[2]);
  gradient(output_size > 1 ? outputs[1] : nullptr, inputs[1]);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::cmul
