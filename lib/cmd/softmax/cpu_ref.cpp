// CPU_REF kernels of SOFTMAX and SOFTMAX_CROSSENTROPY: each row is read into
// doubles through the tensor's own strides, computed in double and rounded
// once into the output type. Any float type, any layout or view.
#include <cmath>
#include <limits>
#include <vector>

#include "cmd/common/rows.hpp"
#include "cmd/softmax/softmax.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::softmax {

namespace {

void load_row(const rows::Rows& t, int64_t r, double* out) {
  for (int c = 0; c < t.cols; c++) out[c] = load_double(t.at(r, c), t.datatype);
}
void store_row(const rows::Rows& t, int64_t r, const double* v) {
  for (int c = 0; c < t.cols; c++) store_double(t.at(r, c), t.datatype, v[c]);
}

// max and sum exp(x - max) of a row. A row of -inf only has max -inf; it is
// treated as uniform (every x - max read as 0) rather than NaN.
void max_sum(const double* x, int n, double& m, double& s) {
  m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; i++) m = std::max(m, x[i]);
  if (std::isinf(m) && m < 0) m = 0;
  s = 0;
  for (int i = 0; i < n; i++) s += std::exp(x[i] - m);
}

// The targets t_j of one row, and their sum.
struct Targets {
  rows::LabelKind kind;
  double trim0, trim1;
  std::vector<int> index;  // kIndex
  rows::Rows dense;        // kDense
  std::vector<double> lab;

  double fill(int64_t r, int n, double* t) {
    double sum = 0;
    if (kind == rows::LabelKind::kIndex) {
      for (int j = 0; j < n; j++) t[j] = trim0;
      t[index[static_cast<size_t>(r)]] = trim1;
    } else {
      load_row(dense, r, t);
      for (int j = 0; j < n; j++) t[j] = trim0 + (trim1 - trim0) * t[j];
    }
    for (int j = 0; j < n; j++) sum += t[j];
    return sum;
  }
};

Targets targets_of(const char* what, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x,
                   const ccv_nnc_tensor_t* labels, int classes, int64_t rows_) {
  Targets t;
  t.kind = rows::label_kind(x->info, labels->info);
  t.trim0 = cmd.info.label_smoothing.trim0;
  t.trim1 = cmd.info.label_smoothing.trim1;
  if (t.kind == rows::LabelKind::kIndex) {
    t.index.resize(static_cast<size_t>(rows_));
    rows::read_indices(what, layout_of(labels, "labels"), classes, t.index.data());
  } else {
    t.dense = rows::rows_of(layout_of(labels, "labels"));
  }
  return t;
}

}  // namespace

NNC_KERNEL(softmax_forward_ref) {
  const rows::Rows x = rows::rows_of(layout_of(inputs[0], "x"));
  const rows::Rows y = rows::rows_of(layout_of(outputs[0], "y"));
  std::vector<double> v(static_cast<size_t>(x.cols));
  for (int64_t r = 0; r < x.rows; r++) {
    load_row(x, r, v.data());
    double m, s;
    max_sum(v.data(), x.cols, m, s);
    for (double& e : v) e = std::exp(e - m) / s;
    store_row(y, r, v.data());
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(softmax_backward_ref) {
  const rows::Rows g = rows::rows_of(layout_of(inputs[0], "g"));
  const rows::Rows y = rows::rows_of(layout_of(inputs[2], "y"));
  const rows::Rows dx = rows::rows_of(layout_of(outputs[0], "dx"));
  std::vector<double> gv(static_cast<size_t>(g.cols)), yv(gv.size());
  for (int64_t r = 0; r < g.rows; r++) {
    load_row(g, r, gv.data());
    load_row(y, r, yv.data());
    double d = 0;
    for (int j = 0; j < g.cols; j++) d += gv[j] * yv[j];
    for (int j = 0; j < g.cols; j++) gv[j] = yv[j] * (gv[j] - d);
    store_row(dx, r, gv.data());
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(crossentropy_forward_ref) {
  const rows::Rows z = rows::rows_of(layout_of(inputs[0], "logits"));
  Targets tg = targets_of("SOFTMAX_CROSSENTROPY_FORWARD", cmd, inputs[0], inputs[1], z.cols, z.rows);
  ccv_nnc_tensor_t* loss_t = outputs[0];
  ccv_nnc_tensor_t* s_t = output_size > 1 ? outputs[1] : nullptr;
  rows::Items loss;
  rows::Rows s;
  if (loss_t) loss = rows::items_of(layout_of(loss_t, "loss"));
  if (s_t) s = rows::rows_of(layout_of(s_t, "softmax"));
  std::vector<double> v(static_cast<size_t>(z.cols)), t(v.size());
  for (int64_t r = 0; r < z.rows; r++) {
    load_row(z, r, v.data());
    double m, sum;
    max_sum(v.data(), z.cols, m, sum);
    const double lse = std::log(sum);
    if (loss_t) {
      // The targets are read before the softmax is written: labels may be
      // the softmax output's memory.
      tg.fill(r, z.cols, t.data());
      double l = 0;
      for (int j = 0; j < z.cols; j++)
        if (t[j] != 0) l += t[j] * ((m - v[j]) + lse);
      store_double(loss.at(r), loss.datatype, l);
    }
    if (s_t) {
      for (double& e : v) e = std::exp(e - m) / sum;
      store_row(s, r, v.data());
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(crossentropy_backward_ref) {
  const rows::Rows s = rows::rows_of(layout_of(inputs[5], "softmax"));
  Targets tg = targets_of("SOFTMAX_CROSSENTROPY_BACKWARD", cmd, inputs[5], inputs[3], s.cols, s.rows);
  const bool has_g = inputs[0] != nullptr, has_gs = inputs[1] != nullptr;
  rows::Items g;
  rows::Rows gs;
  if (has_g) g = rows::items_of(layout_of(inputs[0], "g"));
  if (has_gs) gs = rows::rows_of(layout_of(inputs[1], "g_softmax"));
  const rows::Rows dz = rows::rows_of(layout_of(outputs[0], "d logits"));
  std::vector<double> sv(static_cast<size_t>(s.cols)), t(sv.size()), gsv(sv.size(), 0.0);
  for (int64_t r = 0; r < s.rows; r++) {
    load_row(s, r, sv.data());
    const double gl = has_g ? load_double(g.at(r), g.datatype) : 1.0;
    const double total = tg.fill(r, s.cols, t.data());
    double d = 0;
    if (has_gs) {
      load_row(gs, r, gsv.data());
      for (int j = 0; j < s.cols; j++) d += gsv[j] * sv[j];
    }
    for (int j = 0; j < s.cols; j++) t[j] = gl * (sv[j] * total - t[j]) + sv[j] * (gsv[j] - d);
    store_row(dz, r, t.data());
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::softmax
