// CPU_REF kernels of the loss family: rows read into doubles through each
// tensor's own strides, computed in double, rounded once into the output type.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cmd/common/rows.hpp"
#include "cmd/loss/loss.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::loss {

namespace {

using rows::Items;
using rows::Rows;

struct Row {
  Rows t;
  std::vector<double> v;
  explicit Row(const ccv_nnc_tensor_t* tensor, const char* what) : t(rows::rows_of(layout_of(tensor, what))) {
    v.resize(static_cast<size_t>(t.cols));
  }
  const std::vector<double>& load(int64_t r) {
    for (int c = 0; c < t.cols; c++) v[c] = load_double(t.at(r, c), t.datatype);
    return v;
  }
  void store(int64_t r) const {
    for (int c = 0; c < t.cols; c++) store_double(t.at(r, c), t.datatype, v[c]);
  }
};

double clamped_log(double p) { return std::max(std::log(p), kLogFloor); }
double softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::fabs(z))); }
double sigmoid(double z) {
  if (z >= 0) return 1 / (1 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1 + e);
}

// Per-row loss gradient: g[r], or 1 without g.
struct Grad {
  bool present = false;
  Items items;
  explicit Grad(const ccv_nnc_tensor_t* g) {
    if (!g) return;
    present = true;
    items = rows::items_of(layout_of(g, "g"));
  }
  double at(int64_t r) const { return present ? load_double(items.at(r), items.datatype) : 1.0; }
};

// Targets of categorical cross-entropy (see loss.cpp).
struct Targets {
  bool dense = false;
  double trim0 = 0, trim1 = 1;
  std::vector<int> index;
  std::unique_ptr<Row> lab;
  Targets(const char* what, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* labels) {
    trim0 = cmd.info.label_smoothing.trim0;
    trim1 = cmd.info.label_smoothing.trim1;
    dense = rows::label_kind(x->info, labels->info) == rows::LabelKind::kDense;
    if (dense) {
      lab = std::make_unique<Row>(labels, "labels");
    } else {
      index.resize(static_cast<size_t>(rows::row_count(x->info.dim)));
      const int nd = nd_of(x->info.dim);
      rows::read_indices(what, layout_of(labels, "labels"), x->info.dim[nd - 1], index.data());
    }
  }
  void fill(int64_t r, std::vector<double>& t) {
    if (dense) {
      const std::vector<double>& l = lab->load(r);
      for (size_t j = 0; j < t.size(); j++) t[j] = trim0 + (trim1 - trim0) * l[j];
    } else {
      std::fill(t.begin(), t.end(), trim0);
      t[static_cast<size_t>(index[static_cast<size_t>(r)])] = trim1;
    }
  }
};

void store_item(const Items& it, int64_t r, double v) { store_double(it.at(r), it.datatype, v); }

}  // namespace

NNC_KERNEL(categorical_forward_ref) {
  Row p(inputs[0], "p");
  Targets tg("CATEGORICAL_CROSSENTROPY_FORWARD", cmd, inputs[0], inputs[1]);
  const Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  std::vector<double> t(p.v.size());
  for (int64_t r = 0; r < p.t.rows; r++) {
    const std::vector<double>& pv = p.load(r);
    tg.fill(r, t);
    double l = 0;
    for (size_t j = 0; j < t.size(); j++)
      if (t[j] != 0) l -= t[j] * clamped_log(pv[j]);
    store_item(loss, r, l);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(categorical_backward_ref) {
  Row p(inputs[1], "p");
  Targets tg("CATEGORICAL_CROSSENTROPY_BACKWARD", cmd, inputs[1], inputs[2]);
  const Grad g(inputs[0]);
  std::unique_ptr<Row> dp, dl;
  if (outputs[0]) dp = std::make_unique<Row>(outputs[0], "dp");
  if (output_size > 1 && outputs[1]) dl = std::make_unique<Row>(outputs[1], "d labels");
  std::vector<double> t(p.v.size());
  for (int64_t r = 0; r < p.t.rows; r++) {
    const std::vector<double> pv = p.load(r);
    tg.fill(r, t);
    const double gr = g.at(r);
    if (dp) {
      for (size_t j = 0; j < t.size(); j++) dp->v[j] = -gr * t[j] / std::max(pv[j], kDivFloor);
      dp->store(r);
    }
    if (dl) {
      for (size_t j = 0; j < t.size(); j++) dl->v[j] = -gr * (tg.trim1 - tg.trim0) * clamped_log(pv[j]);
      dl->store(r);
    }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(binary_forward_ref) {
  Row x(inputs[0], "x"), y(inputs[1], "y");
  const Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const double w = cmd.info.binary_crossentropy.pos_weight;
  for (int64_t r = 0; r < x.t.rows; r++) {
    const std::vector<double> xv = x.load(r);
    const std::vector<double>& yv = y.load(r);
    double l = 0;
    for (size_t j = 0; j < xv.size(); j++) {
      // A zero weight keeps 0 * (-100) out of rows that do not need it.
      if (yv[j] != 0) l -= w * yv[j] * clamped_log(xv[j]);
      if (yv[j] != 1) l -= (1 - yv[j]) * clamped_log(1 - xv[j]);
    }
    store_item(loss, r, l);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(binary_backward_ref) {
  Row x(inputs[1], "x"), y(inputs[2], "y");
  const Grad g(inputs[0]);
  std::unique_ptr<Row> dx, dy;
  if (outputs[0]) dx = std::make_unique<Row>(outputs[0], "dx");
  if (output_size > 1 && outputs[1]) dy = std::make_unique<Row>(outputs[1], "dy");
  const double w = cmd.info.binary_crossentropy.pos_weight;
  for (int64_t r = 0; r < x.t.rows; r++) {
    const std::vector<double> xv = x.load(r);
    const std::vector<double> yv = y.load(r);
    const double gr = g.at(r);
    for (size_t j = 0; j < xv.size(); j++) {
      if (dx)
        dx->v[j] = gr * (-w * yv[j] / std::max(xv[j], kDivFloor) + (1 - yv[j]) / std::max(1 - xv[j], kDivFloor));
      if (dy) dy->v[j] = -gr * (w * clamped_log(xv[j]) - clamped_log(1 - xv[j]));
    }
    if (dx) dx->store(r);
    if (dy) dy->store(r);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(sigmoid_binary_forward_ref) {
  Row z(inputs[0], "z"), y(inputs[1], "y");
  const bool has_loss = outputs[0] != nullptr;
  Items loss;
  if (has_loss) loss = rows::items_of(layout_of(outputs[0], "loss"));
  std::unique_ptr<Row> s;
  if (output_size > 1 && outputs[1]) s = std::make_unique<Row>(outputs[1], "sigmoid");
  const double w = cmd.info.binary_crossentropy.pos_weight;
  for (int64_t r = 0; r < z.t.rows; r++) {
    const std::vector<double> zv = z.load(r);
    const std::vector<double>& yv = y.load(r);
    double l = 0;
    for (size_t j = 0; j < zv.size(); j++) {
      l += w * yv[j] * softplus(-zv[j]) + (1 - yv[j]) * softplus(zv[j]);
      if (s) s->v[j] = sigmoid(zv[j]);
    }
    if (has_loss) store_item(loss, r, l);
    if (s) s->store(r);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(sigmoid_binary_backward_ref) {
  const Grad g(inputs[0]);
  std::unique_ptr<Row> gs, z, s;
  if (inputs[1]) gs = std::make_unique<Row>(inputs[1], "g_sigmoid");
  if (inputs[2])
    z = std::make_unique<Row>(inputs[2], "z");
  else
    s = std::make_unique<Row>(inputs[5], "sigmoid");
  Row y(inputs[3], "y");
  std::unique_ptr<Row> dz, dy;
  if (outputs[0]) dz = std::make_unique<Row>(outputs[0], "dz");
  if (output_size > 1 && outputs[1]) dy = std::make_unique<Row>(outputs[1], "dy");
  const double w = cmd.info.binary_crossentropy.pos_weight;
  const int64_t nrows = y.t.rows;
  for (int64_t r = 0; r < nrows; r++) {
    const std::vector<double> yv = y.load(r);
    std::vector<double> sv = z ? z->load(r) : s->load(r);
    std::vector<double> zv;
    if (z) {
      zv = sv;
      for (double& e : sv) e = sigmoid(e);
    }
    if (gs) gs->load(r);
    const double gr = g.at(r);
    for (size_t j = 0; j < yv.size(); j++) {
      if (dz) {
        double d = gr * (sv[j] * (w * yv[j] + 1 - yv[j]) - w * yv[j]);
        if (gs) d += gs->v[j] * sv[j] * (1 - sv[j]);
        dz->v[j] = d;
      }
      if (dy) dy->v[j] = gr * (w * softplus(-zv[j]) - softplus(zv[j]));
    }
    if (dz) dz->store(r);
    if (dy) dy->store(r);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(mse_forward_ref) {
  Row a(inputs[0], "a"), b(inputs[1], "b");
  const Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const double k = cmd.info.mse.reduce_op == CCV_NNC_MSE_REDUCE_SUM ? 1.0 : static_cast<double>(a.t.cols);
  for (int64_t r = 0; r < a.t.rows; r++) {
    const std::vector<double> av = a.load(r);
    const std::vector<double>& bv = b.load(r);
    double l = 0;
    for (size_t j = 0; j < av.size(); j++) l += (av[j] - bv[j]) * (av[j] - bv[j]);
    store_item(loss, r, l / k);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(mse_backward_ref) {
  const Grad g(inputs[0]);
  Row a(inputs[1], "a"), b(inputs[2], "b");
  std::unique_ptr<Row> da, db;
  if (outputs[0]) da = std::make_unique<Row>(outputs[0], "da");
  if (output_size > 1 && outputs[1]) db = std::make_unique<Row>(outputs[1], "db");
  const double k = cmd.info.mse.reduce_op == CCV_NNC_MSE_REDUCE_SUM ? 1.0 : static_cast<double>(a.t.cols);
  for (int64_t r = 0; r < a.t.rows; r++) {
    const std::vector<double> av = a.load(r);
    const std::vector<double>& bv = b.load(r);
    const double gr = g.at(r) * 2 / k;
    for (size_t j = 0; j < av.size(); j++) {
      const double d = gr * (av[j] - bv[j]);
      if (da) da->v[j] = d;
      if (db) db->v[j] = -d;
    }
    if (da) da->store(r);
    if (db) db->store(r);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(smooth_l1_forward_ref) {
  Row a(inputs[0], "a"), b(inputs[1], "b");
  const Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const double beta = cmd.info.smooth_l1.beta;
  for (int64_t r = 0; r < a.t.rows; r++) {
    const std::vector<double> av = a.load(r);
    const std::vector<double>& bv = b.load(r);
    double l = 0;
    for (size_t j = 0; j < av.size(); j++) {
      const double d = std::fabs(av[j] - bv[j]);
      l += d < beta ? 0.5 * d * d / beta : d - 0.5 * std::max(beta, 0.0);
    }
    store_item(loss, r, l);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(smooth_l1_backward_ref) {
  const Grad g(inputs[0]);
  Row a(inputs[1], "a"), b(inputs[2], "b");
  std::unique_ptr<Row> da, db;
  if (outputs[0]) da = std::make_unique<Row>(outputs[0], "da");
  if (output_size > 1 && outputs[1]) db = std::make_unique<Row>(outputs[1], "db");
  const double beta = cmd.info.smooth_l1.beta;
  for (int64_t r = 0; r < a.t.rows; r++) {
    const std::vector<double> av = a.load(r);
    const std::vector<double>& bv = b.load(r);
    const double gr = g.at(r);
    for (size_t j = 0; j < av.size(); j++) {
      const double d = av[j] - bv[j];
      const double s = std::fabs(d) < beta ? d / beta : (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0);
      if (da) da->v[j] = gr * s;
      if (db) db->v[j] = -gr * s;
    }
    if (da) da->store(r);
    if (db) db->store(r);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::loss
