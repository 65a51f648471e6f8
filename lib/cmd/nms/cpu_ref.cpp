// CPU_REF kernels of NMS: each batch's rows read into doubles, ranked by a
// stable sort, then the greedy pass over the ranked rows against the kept ones.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cmd/nms/nms.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::nms {

namespace {

// A 2-d or 3-d boxes layout seen as [batch, n, k] (batch 1 for 2-d).
struct Boxes {
  Layout l;
  int batch = 1, n = 0, k = 0;
  int64_t sb = 0, sn = 0, sk = 0;
  unsigned char* at(int b, int i, int j) const {
    return l.data + (b * sb + i * sn + j * sk) * static_cast<int64_t>(l.element_size);
  }
};

Boxes boxes_of(const ccv_nnc_tensor_t* t, const char* what) {
  Boxes b;
  b.l = layout_of(t, what);
  const int o = b.l.nd == 3 ? 1 : 0;
  if (o) b.batch = b.l.dim[0], b.sb = b.l.stride[0];
  b.n = b.l.dim[o], b.k = b.l.dim[o + 1], b.sn = b.l.stride[o], b.sk = b.l.stride[o + 1];
  return b;
}

// c seen as [batch, n].
struct Index {
  Layout l;
  int64_t sb = 0, sn = 0;
  int32_t* at(int b, int i) const {
    return reinterpret_cast<int32_t*>(l.data + (b * sb + i * sn) * static_cast<int64_t>(l.element_size));
  }
};

Index index_of(const ccv_nnc_tensor_t* t) {
  Index c;
  c.l = layout_of(t, "c");
  if (c.l.nd == 2)
    c.sb = c.l.stride[0], c.sn = c.l.stride[1];
  else
    c.sn = c.l.stride[0];
  return c;
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Boxes a = boxes_of(inputs[0], "a"), b = boxes_of(outputs[0], "b");
  const Index c = index_of(outputs[1]);
  const double threshold = cmd.info.nms.iou_threshold;
  std::vector<double> rows;
  std::vector<int> order, kept;
  for (int bi = 0; bi < a.batch; bi++) {
    rows.assign(static_cast<size_t>(a.n) * a.k, 0.0);
    for (int i = 0; i < a.n; i++)
      for (int j = 0; j < a.k; j++) rows[static_cast<size_t>(i) * a.k + j] = load_double(a.at(bi, i, j), a.l.datatype);
    auto row = [&](int i) { return &rows[static_cast<size_t>(i) * a.k]; };
    order.resize(a.n);
    for (int i = 0; i < a.n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      const double sx = row(x)[0], sy = row(y)[0];
      if (std::isnan(sx)) return false;
      return std::isnan(sy) || sx > sy;
    });
    kept.clear();
    for (int i : order) {
      const double* r = row(i);
      bool keep = true;
      for (int k : kept) {
        const double* q = row(k);
        if (iou(r[1], r[2], r[3], r[4], q[1], q[2], q[3], q[4]) > threshold) {
          keep = false;
          break;
        }
      }
      if (keep) kept.push_back(i);
    }
    for (int j = 0; j < a.n; j++) {
      const bool has = j < static_cast<int>(kept.size());
      for (int x = 0; x < a.k; x++) store_double(b.at(bi, j, x), b.l.datatype, has ? row(kept[j])[x] : 0.0);
      *c.at(bi, j) = has ? kept[j] : -1;
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Boxes g = boxes_of(inputs[0], "gb"), da = boxes_of(outputs[0], "da");
  const Index c = index_of(inputs[4]);
  // Check every index before writing, so a bad c leaves da as it was.
  for (int bi = 0; bi < g.batch; bi++)
    for (int j = 0; j < g.n; j++) {
      const int32_t r = *c.at(bi, j);
      NNC_CHECK(r >= -1 && r < g.n, "NMS_BACKWARD: c[%d, %d] is %d, outside -1 .. %d", bi, j, r, g.n - 1);
    }
  std::vector<double> sum(static_cast<size_t>(g.n) * g.k);
  for (int bi = 0; bi < g.batch; bi++) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int j = 0; j < g.n; j++) {
      const int32_t r = *c.at(bi, j);
      if (r < 0) continue;
      for (int x = 0; x < g.k; x++) sum[static_cast<size_t>(r) * g.k + x] += load_double(g.at(bi, j, x), g.l.datatype);
    }
    for (int i = 0; i < g.n; i++)
      for (int x = 0; x < g.k; x++) store_double(da.at(bi, i, x), da.l.datatype, sum[static_cast<size_t>(i) * g.k + x]);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::nms
