// CPU_OPT kernels of SOFTMAX and SOFTMAX_CROSSENTROPY for fp32 tensors and
// views whose last dimension is unit-stride (rows may be strided). Each row
// goes through vector loops (AVX-512 or AVX2 with FMA, picked once at run
// time, or scalar); rows are split over the library's pool when there is
// enough work. Class indices are checked once, serially, into the stream's
// workspace before any thread starts; nothing is allocated per call.
#include <cmath>
#include <cstring>

#include "cmd/common/rows.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/softmax/softmax.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::softmax {

namespace {

// Below this many elements a command stays on the calling thread.
constexpr size_t kParallelElements = size_t{1} << 15;
// Each task gets at least this many elements.
constexpr size_t kGrainElements = size_t{1} << 13;
// Rows shorter than this, packed one after another, take the block path: row
// by row, each short row is one dependent chain (max, exp, sum) and the loop
// is latency-bound; a block of rows instead goes through one flat exp pass.
constexpr int kSmallCols = 32;
// Elements per block of the block path (stays in L1).
constexpr int64_t kBlockElements = 4096;

namespace scalar {
void row_exp(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] < -87.3365402f ? 0.0f : std::exp(x[i]);
}
float row_max(const float* x, int n) {
  float m = x[0];
  for (int i = 1; i < n; i++) m = std::max(m, x[i]);
  return m;
}
float row_exp_sum(const float* x, float m, float* y, int n) {
  float s = 0;
  for (int i = 0; i < n; i++) {
    const float d = x[i] - m;
    const float e = d < -87.3365402f ? 0.0f : std::exp(d);
    if (y) y[i] = e;
    s += e;
  }
  return s;
}
void row_scale(float* y, float a, int n) {
  for (int i = 0; i < n; i++) y[i] *= a;
}
void row_softmax_backward(const float* g, const float* y, float* dx, int n) {
  float d = 0;
  for (int i = 0; i < n; i++) d += g[i] * y[i];
  for (int i = 0; i < n; i++) dx[i] = y[i] * (g[i] - d);
}
void row_crossentropy_backward(const float* s, const float* gs, const float* lab, float* dz, int n, float a, float b,
                               float c) {
  float d = 0;
  if (gs)
    for (int i = 0; i < n; i++) d += gs[i] * s[i];
  for (int i = 0; i < n; i++) {
    float r = s[i] * (a - d + (gs ? gs[i] : 0.0f)) - b;
    if (lab) r -= c * lab[i];
    dz[i] = r;
  }
}
}  // namespace scalar

const RowKernels kRowKernelsScalar = {"scalar",
                                      scalar::row_exp,
                                      scalar::row_max,
                                      scalar::row_exp_sum,
                                      scalar::row_scale,
                                      scalar::row_softmax_backward,
                                      scalar::row_crossentropy_backward};

// Last dimension unit-stride (or of size 1)?
bool unit_rows(const ccv_nnc_tensor_t* t) {
  if (!CCV_IS_TENSOR_VIEW(t)) return true;
  const int nd = nd_of(t->info.dim);
  return t->info.dim[nd - 1] == 1 || reinterpret_cast<const ccv_nnc_tensor_view_t*>(t)->stride[nd - 1] == 1;
}

// Run body(row_begin, row_end) over all rows, on the pool when large.
template <class F>
void over_rows(int64_t rows, int cols, const F& body) {
  const size_t n = static_cast<size_t>(rows);
  range_parallel(n, std::max<size_t>(1, kParallelElements / static_cast<size_t>(std::max(cols, 1))),
                 std::max<size_t>(1, kGrainElements / static_cast<size_t>(std::max(cols, 1))),
                 [&](size_t b, size_t e) { body(static_cast<int64_t>(b), static_cast<int64_t>(e)); });
}

float* row_ptr(const rows::Rows& t, int64_t r) { return reinterpret_cast<float*>(t.data) + t.row(r); }

// Rows packed one after another (row r at r * cols)?
bool packed_rows(const rows::Rows& t) {
  return (t.col_stride == 1 || t.cols == 1) && (t.rows == 1 || (t.outer.uniform && t.outer.step == t.cols));
}
bool small_rows(const rows::Rows& t) { return t.cols < kSmallCols && packed_rows(t); }

// The block path's forward: for rows [r0, r1) of packed x (cols each), e holds
// exp(x - max) / sum per row when `normalise`, else exp(x - max); sums[r - r0]
// gets each row's sum and maxes[r - r0] its max. `before(r, m)` runs for each
// row after its max is known and before e is written (e may be x).
template <class Before>
void block_forward(const RowKernels& k, const float* x, float* e, int cols, int64_t r0, int64_t r1, bool normalise,
                   float* maxes, float* sums, const Before& before) {
  const int64_t block_rows = std::max<int64_t>(1, kBlockElements / cols);
  for (int64_t b = r0; b < r1; b += block_rows) {
    const int64_t end = std::min(r1, b + block_rows);
    for (int64_t r = b; r < end; r++) {
      const float* xr = x + r * cols;
      float m = xr[0];
      for (int j = 1; j < cols; j++) m = std::max(m, xr[j]);
      if (std::isinf(m) && m < 0) m = 0;
      maxes[r - r0] = m;
      before(r, m);
      float* er = e + r * cols;
      for (int j = 0; j < cols; j++) er[j] = xr[j] - m;
    }
    k.exp(e + b * cols, e + b * cols, static_cast<size_t>((end - b) * cols));
    for (int64_t r = b; r < end; r++) {
      float* er = e + r * cols;
      float s = 0;
      for (int j = 0; j < cols; j++) s += er[j];
      sums[r - r0] = s;
      if (normalise) {
        const float inv = 1.0f / s;
        for (int j = 0; j < cols; j++) er[j] *= inv;
      }
    }
  }
}

// The labels of one call: class indices (checked, in the workspace) or dense rows.
struct Labels {
  bool dense = false;
  const int* index = nullptr;
  rows::Rows rows;
};

// `index` has room for one int per row.
Labels labels_of(const char* what, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* labels, int classes, int* index) {
  Labels l;
  if (rows::label_kind(x->info, labels->info) == rows::LabelKind::kDense) {
    l.dense = true;
    l.rows = rows::rows_of(layout_of(labels, "labels"));
    return l;
  }
  rows::read_indices(what, layout_of(labels, "labels"), classes, index);
  l.index = index;
  return l;
}

}  // namespace

const RowKernels* row_kernels_scalar() { return &kRowKernelsScalar; }
const RowKernels* row_kernels_avx2() { return cpu_features().avx2 ? &kRowKernelsAvx2 : nullptr; }
const RowKernels* row_kernels_avx512() { return cpu_features().avx512 ? &kRowKernelsAvx512 : nullptr; }

const RowKernels& row_kernels() {
  static const RowKernels* const best = [] {
    if (const RowKernels* k = row_kernels_avx512()) return k;
    if (const RowKernels* k = row_kernels_avx2()) return k;
    return row_kernels_scalar();
  }();
  return *best;
}

bool opt_accept(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  for (int i = 0; i < input_size; i++)
    if (inputs[i] && !unit_rows(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (outputs[i] && !unit_rows(outputs[i])) return false;
  return true;
}

NNC_KERNEL(softmax_forward_opt) {
  const rows::Rows x = rows::rows_of(layout_of(inputs[0], "x"));
  const rows::Rows y = rows::rows_of(layout_of(outputs[0], "y"));
  const RowKernels& k = row_kernels();
  const int n = x.cols;
  if (small_rows(x) && small_rows(y)) {
    float* scratch = static_cast<float*>(workspace(stream_context, 2 * static_cast<size_t>(x.rows) * sizeof(float)));
    const float* xd = reinterpret_cast<const float*>(x.data);
    float* yd = reinterpret_cast<float*>(y.data);
    over_rows(x.rows, n, [&](int64_t b, int64_t e) {
      block_forward(k, xd, yd, n, b, e, true, scratch + b, scratch + x.rows + b, [](int64_t, float) {});
    });
    return CCV_NNC_EXEC_SUCCESS;
  }
  over_rows(x.rows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      const float* xr = row_ptr(x, r);
      float* yr = row_ptr(y, r);
      float m = k.max(xr, n);
      if (std::isinf(m) && m < 0) m = 0;
      const float s = k.exp_sum(xr, m, yr, n);
      k.scale(yr, 1.0f / s, n);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(softmax_backward_opt) {
  const rows::Rows g = rows::rows_of(layout_of(inputs[0], "g"));
  const rows::Rows y = rows::rows_of(layout_of(inputs[2], "y"));
  const rows::Rows dx = rows::rows_of(layout_of(outputs[0], "dx"));
  const RowKernels& k = row_kernels();
  const int n = g.cols;
  over_rows(g.rows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) k.softmax_backward(row_ptr(g, r), row_ptr(y, r), row_ptr(dx, r), n);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(crossentropy_forward_opt) {
  const rows::Rows z = rows::rows_of(layout_of(inputs[0], "logits"));
  const int n = z.cols;
  const int64_t nrows = z.rows;
  const ccv_nnc_tensor_t* loss_t = outputs[0];
  const ccv_nnc_tensor_t* s_t = output_size > 1 ? outputs[1] : nullptr;
  rows::Items loss;
  rows::Rows s;
  if (loss_t) loss = rows::items_of(layout_of(loss_t, "loss"));
  if (s_t) s = rows::rows_of(layout_of(s_t, "softmax"));
  const bool small = small_rows(z) && (!s_t || small_rows(s));
  // One workspace request: class indices, then (block path) each row's
  // max, sum and label part, and the exps when there is no softmax output.
  const size_t index_bytes = (static_cast<size_t>(nrows) * sizeof(int) + 63) / 64 * 64;
  const size_t block_bytes = small
                                 ? static_cast<size_t>(nrows) * (2 * sizeof(float) + 2 * sizeof(double)) +
                                       (s_t ? 0 : static_cast<size_t>(nrows) * static_cast<size_t>(n) * sizeof(float))
                                 : 0;
  unsigned char* ws = static_cast<unsigned char*>(workspace(stream_context, index_bytes + block_bytes));
  Labels lab;
  if (loss_t) lab = labels_of("SOFTMAX_CROSSENTROPY_FORWARD", inputs[0], inputs[1], n, reinterpret_cast<int*>(ws));
  const double trim0 = cmd.info.label_smoothing.trim0, trim1 = cmd.info.label_smoothing.trim1;
  const double dtrim = trim1 - trim0;
  // The label part of row r's loss, sum_j t_j (m - z_j), and T = sum_j t_j;
  // the loss is part + T log sum exp(z - m). Read before the softmax is
  // written (the softmax may be the logits).
  auto label_part = [&](int64_t r, const float* zr, float m, double& part, double& total) {
    part = 0, total = 0;
    if (!lab.dense) {
      const int l = lab.index[r];
      part = trim1 * (static_cast<double>(m) - zr[l]);
      total = trim1 + (n - 1) * trim0;
      if (trim0 != 0) {
        double rest = 0;
        for (int j = 0; j < n; j++)
          if (j != l) rest += static_cast<double>(m) - zr[j];
        part += trim0 * rest;
      }
    } else {
      const float* lr = row_ptr(lab.rows, r);
      for (int j = 0; j < n; j++) {
        const double t = trim0 + dtrim * lr[j];
        total += t;
        if (t != 0) part += t * (static_cast<double>(m) - zr[j]);
      }
    }
  };
  auto store_loss = [&](int64_t r, double part, double total, float sum) {
    *reinterpret_cast<float*>(loss.at(r)) = static_cast<float>(part + total * std::log(static_cast<double>(sum)));
  };
  const RowKernels& k = row_kernels();
  if (small) {
    float* maxes = reinterpret_cast<float*>(ws + index_bytes);
    float* sums = maxes + nrows;
    // maxes and sums together are 8 * nrows bytes: parts stay 8-byte aligned.
    double* parts = reinterpret_cast<double*>(sums + nrows);
    double* totals = parts + nrows;
    float* e = s_t ? reinterpret_cast<float*>(s.data) : reinterpret_cast<float*>(totals + nrows);
    const float* zd = reinterpret_cast<const float*>(z.data);
    over_rows(nrows, n, [&](int64_t b, int64_t end) {
      block_forward(k, zd, e, n, b, end, s_t != nullptr, maxes + b, sums + b, [&](int64_t r, float m) {
        if (loss_t) label_part(r, zd + r * n, m, parts[r], totals[r]);
      });
      if (loss_t)
        for (int64_t r = b; r < end; r++) store_loss(r, parts[r], totals[r], sums[r]);
    });
    return CCV_NNC_EXEC_SUCCESS;
  }
  over_rows(nrows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      const float* zr = row_ptr(z, r);
      float m = k.max(zr, n);
      if (std::isinf(m) && m < 0) m = 0;
      double part = 0, total = 0;
      if (loss_t) label_part(r, zr, m, part, total);
      float* sr = s_t ? row_ptr(s, r) : nullptr;
      const float sum = k.exp_sum(zr, m, sr, n);
      if (sr) k.scale(sr, 1.0f / sum, n);
      if (loss_t) store_loss(r, part, total, sum);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(crossentropy_backward_opt) {
  const rows::Rows s = rows::rows_of(layout_of(inputs[5], "softmax"));
  const int n = s.cols;
  const Labels lab =
      labels_of("SOFTMAX_CROSSENTROPY_BACKWARD", inputs[5], inputs[3], n,
                static_cast<int*>(workspace(stream_context, static_cast<size_t>(s.rows) * sizeof(int))));
  rows::Items g;
  rows::Rows gs;
  if (inputs[0]) g = rows::items_of(layout_of(inputs[0], "g"));
  if (inputs[1]) gs = rows::rows_of(layout_of(inputs[1], "g_softmax"));
  const bool has_g = inputs[0] != nullptr, has_gs = inputs[1] != nullptr;
  const rows::Rows dz = rows::rows_of(layout_of(outputs[0], "d logits"));
  const float trim0 = cmd.info.label_smoothing.trim0, trim1 = cmd.info.label_smoothing.trim1;
  const float dtrim = trim1 - trim0;
  const RowKernels& k = row_kernels();
  over_rows(s.rows, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      const float gl = has_g ? *reinterpret_cast<const float*>(g.at(r)) : 1.0f;
      const float* gsr = has_gs ? row_ptr(gs, r) : nullptr;
      float* dzr = row_ptr(dz, r);
      if (!lab.dense) {
        const float total = trim1 + static_cast<float>(n - 1) * trim0;
        k.crossentropy_backward(row_ptr(s, r), gsr, nullptr, dzr, n, gl * total, gl * trim0, 0.0f);
        dzr[lab.index[r]] -= gl * dtrim;
      } else {
        const float* lr = row_ptr(lab.rows, r);
        float sum = 0;
        for (int j = 0; j < n; j++) sum += lr[j];
        const float total = static_cast<float>(n) * trim0 + dtrim * sum;
        k.crossentropy_backward(row_ptr(s, r), gsr, lr, dzr, n, gl * total, gl * trim0, gl * dtrim);
      }
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::softmax
