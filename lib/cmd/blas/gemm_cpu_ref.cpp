// GEMM on CPU_REF: plain loops over any strides and every floating type,
// accumulating in double. Slow on purpose; it is what the others are checked
// against.
#include <vector>

#include "cmd/blas/gemm.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"

namespace nnc::gemm {

namespace {


double at(const Factor& f, int datatype, size_t esize, int64_t off, int i, int j) {
  return load_double(f.data + (off + i * f.rs + j * f.cs) * static_cast<int64_t>(esize), datatype);
}

// Every product A · B of the batch, summed in double per C matrix and handed
// to store(C offset, M x N row-major sums).
template <class Store>
void run_product(const Product& p, int datatype, Store&& store) {
  const size_t esize = datatype_size(datatype);
  // Sum into doubles first: a reduced C collects several products.
  std::vector<double> sum(static_cast<size_t>(p.M) * p.N);
  if (!p.reduce) {
    for_each_batch(p, [&](int64_t oa, int64_t ob, int64_t oc) {
      for (int i = 0; i < p.M; i++)
        for (int j = 0; j < p.N; j++) {
          double s = 0;
          for (int q = 0; q < p.K; q++) s += at(p.A, datatype, esize, oa, i, q) * at(p.B, datatype, esize, ob, q, j);
          sum[static_cast<size_t>(i) * p.N + j] = s;
        }
      store(oc, sum.data());
    });
    return;
  }
  // Reduced: C's distinct offsets each get the sum of every product landing on them.
  std::vector<int64_t> offsets;
  std::vector<std::vector<double>> sums;
  for_each_batch(p, [&](int64_t oa, int64_t ob, int64_t oc) {
    size_t slot = 0;
    while (slot < offsets.size() && offsets[slot] != oc) slot++;
    if (slot == offsets.size()) {
      offsets.push_back(oc);
      sums.emplace_back(static_cast<size_t>(p.M) * p.N, 0.0);
    }
    for (int i = 0; i < p.M; i++)
      for (int j = 0; j < p.N; j++) {
        double s = 0;
        for (int q = 0; q < p.K; q++) s += at(p.A, datatype, esize, oa, i, q) * at(p.B, datatype, esize, ob, q, j);
        sums[slot][static_cast<size_t>(i) * p.N + j] += s;
      }
  });
  for (size_t s = 0; s < offsets.size(); s++) store(offsets[s], sums[s].data());
}

// C's matrix at offset oc = v (+ the bias matrix at offset ob when bias).
void store_matrix(const Product& p, int datatype, int64_t oc, const double* v, const BiasMap* bias = nullptr,
                  int64_t ob = 0) {
  const int64_t esize = static_cast<int64_t>(datatype_size(datatype));
  for (int i = 0; i < p.M; i++)
    for (int j = 0; j < p.N; j++) {
      double x = v[static_cast<size_t>(i) * p.N + j];
      if (bias) x += load_double(bias->data + (ob + i * bias->rs + j * bias->cs) * esize, datatype);
      store_double(p.C.data + (oc + i * p.C.rs + j * p.C.cs) * esize, datatype, x);
    }
}

NNC_KERNEL(forward) {
  const Layout b = layout_of(outputs[0], "b");
  const Product p = forward_product(cmd.info, inputs[0], inputs[1], outputs[0]);
  if (input_size < 3 || !inputs[2]) {
    run_product(p, b.datatype, [&](int64_t oc, const double* v) { store_matrix(p, b.datatype, oc, v); });
    return CCV_NNC_EXEC_SUCCESS;
  }
  // The forward product is never reduced, so run_product stores the batch
  // indices in for_each_batch's order: the bias offsets follow in that order.
  const BiasMap bias = bias_map(inputs[2], p);
  std::vector<int64_t> bias_offsets;
  for_each_bias_batch(p, bias, [&](int64_t ob, int64_t) { bias_offsets.push_back(ob); });
  size_t next = 0;
  run_product(p, b.datatype,
              [&](int64_t oc, const double* v) { store_matrix(p, b.datatype, oc, v, &bias, bias_offsets[next++]); });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward) {
  const BackwardArgs t = backward_args(inputs, input_size, outputs, output_size);
  const Layout g = layout_of(t.g, "g");
  if (t.da) {
    const Layout da = layout_of(t.da, "da");
    const Product p = da_product(cmd.info, t.g, t.w, t.da);
    run_product(p, da.datatype, [&](int64_t oc, const double* v) { store_matrix(p, da.datatype, oc, v); });
  }
  if (t.dw) {
    const Layout dw = layout_of(t.dw, "dw");
    const Product p = dw_product(cmd.info, t.g, t.a, t.dw);
    run_product(p, dw.datatype, [&](int64_t oc, const double* v) { store_matrix(p, dw.datatype, oc, v); });
  }
  if (t.dbias) {
    // dbias = g summed over every dimension along which the bias was
    // broadcast (right-aligned; extent 1 or absent in dbias).
    const Layout db = layout_of(t.dbias, "dbias");
    std::vector<double> sum(db.count(), 0.0);
    for_each_index(g.dim.data(), g.nd, [&](const int* idx) {
      size_t k = 0;
      for (int d = 0; d < db.nd; d++) {
        const int gd = d - (db.nd - g.nd);  // g's dimension aligned with dbias's d
        const int i = (gd < 0 || db.dim[d] == 1) ? 0 : idx[gd];
        k = k * static_cast<size_t>(db.dim[d]) + static_cast<size_t>(i);
      }
      sum[k] += load_double(g.at(idx), g.datatype);
    });
    size_t k = 0;
    for_each_index(db.dim.data(), db.nd, [&](const int* idx) { store_double(db.at(idx), db.datatype, sum[k++]); });
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_ref(Registry& r) {
  r.add_kernels(cpu_ref(types::kFloat), {{CCV_NNC_GEMM_FORWARD, forward}, {CCV_NNC_GEMM_BACKWARD, backward}});
}

}  // namespace nnc::gemm
