// CPU_OPT kernels of the loss family for fp32 tensors and views whose last
// dimension is unit-stride, rows split over the library's pool when there is
// enough work. MSE and SMOOTH_L1: plain loops over each row (the element-wise
// backward ones vectorise), per-row sums in double. The probability losses
// (CATEGORICAL_, BINARY_ and SIGMOID_BINARY_CROSSENTROPY): the row loops of
// rows_body.hpp for the widest instruction set the CPU has. Nothing is
// allocated: class-index labels' one int per row lives in the stream's (or
// the calling thread's) workspace.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "cmd/common/rows.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/loss/loss.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "core/vmath_scalar.hpp"

namespace nnc::loss {

namespace scalar {
namespace {
using V = vmath::Scalar;
#include "cmd/loss/rows_body.hpp"
}  // namespace
}  // namespace scalar

namespace {

constexpr size_t kParallelElements = size_t{1} << 15;
constexpr size_t kGrainElements = size_t{1} << 13;

bool unit_rows(const ccv_nnc_tensor_t* t) {
  if (!CCV_IS_TENSOR_VIEW(t)) return true;
  const int nd = nd_of(t->info.dim);
  return t->info.dim[nd - 1] == 1 || reinterpret_cast<const ccv_nnc_tensor_view_t*>(t)->stride[nd - 1] == 1;
}

template <class F>
void over_rows(int64_t rows, int cols, const F& body) {
  const size_t c = static_cast<size_t>(std::max(cols, 1));
  range_parallel(static_cast<size_t>(rows), std::max<size_t>(1, kParallelElements / c),
                 std::max<size_t>(1, kGrainElements / c),
                 [&](size_t b, size_t e) { body(static_cast<int64_t>(b), static_cast<int64_t>(e)); });
}

const float* crow(const rows::Rows& t, int64_t r) { return reinterpret_cast<const float*>(t.data) + t.row(r); }
float* wrow(const rows::Rows& t, int64_t r) { return reinterpret_cast<float*>(t.data) + t.row(r); }

struct Grad {
  bool present = false;
  rows::Items items;
  explicit Grad(const ccv_nnc_tensor_t* g) {
    if (!g) return;
    present = true;
    items = rows::items_of(layout_of(g, "g"));
  }
  float at(int64_t r) const { return present ? *reinterpret_cast<const float*>(items.at(r)) : 1.0f; }
};

// sum_j f(a_j - b_j) over each row into loss[r] * scale. Four partial sums
// keep the double additions from forming one long dependent chain.
template <class F>
void forward(ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs, double scale, const F& f) {
  const rows::Rows a = rows::rows_of(layout_of(inputs[0], "a"));
  const rows::Rows b = rows::rows_of(layout_of(inputs[1], "b"));
  const rows::Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const int n = a.cols;
  over_rows(a.rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* ar = crow(a, r);
      const float* br = crow(b, r);
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int j = 0;
      for (; j + 4 <= n; j += 4) {
        s0 += f(ar[j] - br[j]);
        s1 += f(ar[j + 1] - br[j + 1]);
        s2 += f(ar[j + 2] - br[j + 2]);
        s3 += f(ar[j + 3] - br[j + 3]);
      }
      for (; j < n; j++) s0 += f(ar[j] - br[j]);
      *reinterpret_cast<float*>(loss.at(r)) = static_cast<float>(((s0 + s1) + (s2 + s3)) * scale);
    }
  });
}

// da = c g f'(a - b), db = -da, over each row (either output may be NULL).
template <class F>
void backward(ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs, int output_size, float c,
              const F& df) {
  const Grad g(inputs[0]);
  const rows::Rows a = rows::rows_of(layout_of(inputs[1], "a"));
  const rows::Rows b = rows::rows_of(layout_of(inputs[2], "b"));
  const bool has_da = outputs[0] != nullptr, has_db = output_size > 1 && outputs[1] != nullptr;
  rows::Rows da, db;
  if (has_da) da = rows::rows_of(layout_of(outputs[0], "da"));
  if (has_db) db = rows::rows_of(layout_of(outputs[1], "db"));
  const int n = a.cols;
  over_rows(a.rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float k = c * g.at(r);
      const float* ar = crow(a, r);
      const float* br = crow(b, r);
      float* dar = has_da ? wrow(da, r) : nullptr;
      float* dbr = has_db ? wrow(db, r) : nullptr;
      if (dar && dbr) {
        for (int j = 0; j < n; j++) {
          const float v = k * df(ar[j] - br[j]);
          dar[j] = v;
          dbr[j] = -v;
        }
      } else if (dar) {
        for (int j = 0; j < n; j++) dar[j] = k * df(ar[j] - br[j]);
      } else {
        for (int j = 0; j < n; j++) dbr[j] = -(k * df(ar[j] - br[j]));
      }
    }
  });
}

const RowLoops& row_loops() {
  static const RowLoops* const best = []() -> const RowLoops* {
    const CpuFeatures& f = cpu_features();
    if (f.avx512) return &kRowLoopsAvx512;
    if (f.avx2) return &kRowLoopsAvx2;
    return &scalar::kRowTable;
  }();
  return *best;
}

// An optional tensor's rows (present = false for NULL).
struct MaybeRows {
  bool present = false;
  rows::Rows rows;
  MaybeRows(const ccv_nnc_tensor_t* t, const char* what) {
    if (!t) return;
    present = true;
    rows = rows::rows_of(layout_of(t, what));
  }
  const float* in(int64_t r) const { return present ? crow(rows, r) : nullptr; }
  float* out(int64_t r) const { return present ? wrow(rows, r) : nullptr; }
};

// Class-index labels, read (and range-checked) once into the stream's or
// thread's workspace; empty for dense labels.
std::span<const int> class_indices(const char* what, const ccv_nnc_tensor_t* p, const ccv_nnc_tensor_t* labels,
                                   ccv_nnc_stream_context_t* stream) {
  if (rows::label_kind(p->info, labels->info) == rows::LabelKind::kDense) return {};
  const size_t n = static_cast<size_t>(rows::row_count(p->info.dim));
  int* index = static_cast<int*>(workspace(stream, n * sizeof(int)));
  rows::read_indices(what, layout_of(labels, "labels"), p->info.dim[nd_of(p->info.dim) - 1], index);
  return {index, n};
}

// The vector loops' clamped log, on one element.
float log_floor(float p) { return scalar::clog<vmath::Scalar>(p); }

}  // namespace

bool opt_accept(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  for (int i = 0; i < input_size; i++)
    if (inputs[i] && !unit_rows(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (outputs[i] && !unit_rows(outputs[i])) return false;
  return true;
}

NNC_KERNEL(mse_forward_opt) {
  const int cols = inputs[0]->info.dim[nd_of(inputs[0]->info.dim) - 1];
  const double scale = cmd.info.mse.reduce_op == CCV_NNC_MSE_REDUCE_SUM ? 1.0 : 1.0 / cols;
  forward(inputs, outputs, scale, [](float d) { return static_cast<double>(d) * d; });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(mse_backward_opt) {
  const int cols = inputs[1]->info.dim[nd_of(inputs[1]->info.dim) - 1];
  const float c = cmd.info.mse.reduce_op == CCV_NNC_MSE_REDUCE_SUM ? 2.0f : 2.0f / static_cast<float>(cols);
  backward(inputs, outputs, output_size, c, [](float d) { return d; });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(smooth_l1_forward_opt) {
  const double beta = cmd.info.smooth_l1.beta;
  const double half = 0.5 * std::max(beta, 0.0);
  forward(inputs, outputs, 1.0, [beta, half](float d) {
    const double x = std::fabs(static_cast<double>(d));
    return x < beta ? 0.5 * x * x / beta : x - half;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(smooth_l1_backward_opt) {
  const float beta = cmd.info.smooth_l1.beta;
  backward(inputs, outputs, output_size, 1.0f, [beta](float d) {
    if (std::fabs(d) < beta) return d / beta;
    return d > 0 ? 1.0f : d < 0 ? -1.0f : 0.0f;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(binary_forward_opt) {
  const rows::Rows x = rows::rows_of(layout_of(inputs[0], "x"));
  const rows::Rows y = rows::rows_of(layout_of(inputs[1], "y"));
  const rows::Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const float w = cmd.info.binary_crossentropy.pos_weight;
  const RowLoops& L = row_loops();
  over_rows(x.rows, x.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
      *reinterpret_cast<float*>(loss.at(r)) = static_cast<float>(L.bce_forward(crow(x, r), crow(y, r), x.cols, w));
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(binary_backward_opt) {
  const Grad g(inputs[0]);
  const rows::Rows x = rows::rows_of(layout_of(inputs[1], "x"));
  const rows::Rows y = rows::rows_of(layout_of(inputs[2], "y"));
  const MaybeRows dx(outputs[0], "dx"), dy(output_size > 1 ? outputs[1] : nullptr, "dy");
  const float w = cmd.info.binary_crossentropy.pos_weight;
  const RowLoops& L = row_loops();
  over_rows(x.rows, x.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) L.bce_backward(crow(x, r), crow(y, r), dx.out(r), dy.out(r), x.cols, g.at(r), w);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(sigmoid_binary_forward_opt) {
  const rows::Rows z = rows::rows_of(layout_of(inputs[0], "z"));
  const rows::Rows y = rows::rows_of(layout_of(inputs[1], "y"));
  rows::Items loss;
  if (outputs[0]) loss = rows::items_of(layout_of(outputs[0], "loss"));
  const MaybeRows s(output_size > 1 ? outputs[1] : nullptr, "sigmoid");
  const float w = cmd.info.binary_crossentropy.pos_weight;
  const RowLoops& L = row_loops();
  over_rows(z.rows, z.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const double l = L.sbce_forward(crow(z, r), crow(y, r), s.out(r), z.cols, w);
      if (outputs[0]) *reinterpret_cast<float*>(loss.at(r)) = static_cast<float>(l);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(sigmoid_binary_backward_opt) {
  const Grad g(inputs[0]);
  const MaybeRows gs(inputs[1], "g_sigmoid"), z(inputs[2], "z");
  const MaybeRows s(z.present || input_size <= 5 ? nullptr : inputs[5], "sigmoid");
  const rows::Rows y = rows::rows_of(layout_of(inputs[3], "y"));
  const MaybeRows dz(outputs[0], "dz"), dy(output_size > 1 ? outputs[1] : nullptr, "dy");
  const float w = cmd.info.binary_crossentropy.pos_weight;
  const RowLoops& L = row_loops();
  over_rows(y.rows, y.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
      L.sbce_backward(z.in(r), s.in(r), crow(y, r), gs.in(r), dz.out(r), dy.out(r), y.cols, g.at(r), w);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(categorical_forward_opt) {
  const rows::Rows p = rows::rows_of(layout_of(inputs[0], "p"));
  const std::span<const int> index =
      class_indices("CATEGORICAL_CROSSENTROPY_FORWARD", inputs[0], inputs[1], stream_context);
  const MaybeRows dense(index.empty() ? inputs[1] : nullptr, "labels");
  const rows::Items loss = rows::items_of(layout_of(outputs[0], "loss"));
  const float trim0 = cmd.info.label_smoothing.trim0, trim1 = cmd.info.label_smoothing.trim1;
  const RowLoops& L = row_loops();
  over_rows(p.rows, p.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* pr = crow(p, r);
      double l = 0;
      if (dense.present) {
        l = L.cce_forward(pr, dense.in(r), p.cols, trim0, trim1);
      } else {
        // trim0 on every class, then the labelled one's trim1 in its place.
        const int c = index[static_cast<size_t>(r)];
        if (trim0 != 0) l = L.cce_forward(pr, nullptr, p.cols, trim0, trim0) + trim0 * double(log_floor(pr[c]));
        if (trim1 != 0) l -= trim1 * double(log_floor(pr[c]));
      }
      *reinterpret_cast<float*>(loss.at(r)) = static_cast<float>(l);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(categorical_backward_opt) {
  const Grad g(inputs[0]);
  const rows::Rows p = rows::rows_of(layout_of(inputs[1], "p"));
  const std::span<const int> index =
      class_indices("CATEGORICAL_CROSSENTROPY_BACKWARD", inputs[1], inputs[2], stream_context);
  const MaybeRows dense(index.empty() ? inputs[2] : nullptr, "labels");
  const MaybeRows dp(outputs[0], "dp"), dl(output_size > 1 ? outputs[1] : nullptr, "d labels");
  const float trim0 = cmd.info.label_smoothing.trim0, trim1 = cmd.info.label_smoothing.trim1;
  const RowLoops& L = row_loops();
  over_rows(p.rows, p.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float gr = g.at(r);
      L.cce_backward(crow(p, r), dense.in(r), dp.out(r), dl.out(r), p.cols, gr, trim0, trim1);
      if (!dense.present && dp.present) {  // the labelled class's target is trim1
        const int c = index[static_cast<size_t>(r)];
        dp.out(r)[c] = -gr * trim1 / std::max(static_cast<float>(kDivFloor), crow(p, r)[c]);
      }
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::loss
