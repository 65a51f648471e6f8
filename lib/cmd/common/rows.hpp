// Row access shared by the softmax and loss families: every tensor these
// commands take is a stack of rows along its last dimension (the classes or
// features), with every earlier dimension a batch dimension. A tensor or view
// is addressed as rows x cols through its own strides; a label tensor of class
// indices holds one element per row, in row-major order of its own shape.
//
//   Rows z = rows_of(layout_of(logits));
//   for (int64_t r = 0; r < z.rows; r++) {
//     const float* row = reinterpret_cast<const float*>(z.data) + z.row(r);
//     ... row[c * z.col_stride] for c < z.cols ...
//   }
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc::rows {

// Element offset of the i-th item (row-major) of a shape `dim[0..n)` laid out
// with `stride` (in elements). Uniform shapes (one stride step between
// consecutive items) skip the division.
struct Strider {
  int n = 0;
  std::array<int, kMaxDim> dim{};
  std::array<int64_t, kMaxDim> stride{};
  bool uniform = true;
  int64_t step = 0;

  void init(const int* d, const int64_t* s, int count) {
    n = count;
    for (int i = 0; i < n; i++) dim[i] = d[i], stride[i] = s[i];
    // Uniform when, ignoring dimensions of size 1, each stride is the next
    // one times the next dimension; the step is the innermost such stride.
    uniform = true;
    step = 0;
    int inner = -1;
    for (int i = n - 1; i >= 0; i--) {
      if (dim[i] == 1) continue;
      if (inner < 0) {
        step = stride[i];
      } else if (stride[i] != stride[inner] * dim[inner]) {
        uniform = false;
      }
      inner = i;
    }
  }
  int64_t offset(int64_t i) const {
    if (uniform) return i * step;
    int64_t off = 0;
    for (int k = n - 1; k >= 0; k--) {
      off += (i % dim[k]) * stride[k];
      i /= dim[k];
    }
    return off;
  }
};

// A tensor as rows x cols.
struct Rows {
  unsigned char* data = nullptr;
  int datatype = 0;
  size_t es = 0;
  int64_t rows = 0;
  int cols = 0;
  int64_t col_stride = 1;
  Strider outer;
  int64_t row(int64_t r) const { return outer.offset(r); }
  unsigned char* at(int64_t r, int c) const { return data + (row(r) + c * col_stride) * static_cast<int64_t>(es); }
};

inline Rows rows_of(const Layout& l) {
  Rows r;
  r.data = l.data;
  r.datatype = l.datatype;
  r.es = l.element_size;
  r.cols = l.nd ? l.dim[l.nd - 1] : 1;
  r.col_stride = l.nd ? l.stride[l.nd - 1] : 1;
  r.rows = 1;
  for (int i = 0; i + 1 < l.nd; i++) r.rows *= l.dim[i];
  r.outer.init(l.dim.data(), l.stride.data(), l.nd > 0 ? l.nd - 1 : 0);
  return r;
}

// Every item of a tensor in row-major order (class-index labels, per-row
// losses and their gradients).
struct Items {
  unsigned char* data = nullptr;
  int datatype = 0;
  size_t es = 0;
  int64_t count = 0;
  Strider s;
  unsigned char* at(int64_t i) const { return data + s.offset(i) * static_cast<int64_t>(es); }
};

inline Items items_of(const Layout& l) {
  Items it;
  it.data = l.data;
  it.datatype = l.datatype;
  it.es = l.element_size;
  it.count = static_cast<int64_t>(l.count());
  it.s.init(l.dim.data(), l.stride.data(), l.nd);
  return it;
}

inline bool is_float(int datatype) {
  return datatype == CCV_32F || datatype == CCV_64F || datatype == CCV_16F || datatype == CCV_16BF;
}

// Number of rows of a tensor parameter block (product of all but the last dimension).
inline int64_t row_count(const int* dim) {
  const int nd = nd_of(dim);
  int64_t r = 1;
  for (int i = 0; i + 1 < nd; i++) r *= dim[i];
  return r;
}
inline int64_t item_count(const int* dim) {
  const int nd = nd_of(dim);
  int64_t r = nd ? 1 : 0;
  for (int i = 0; i < nd; i++) r *= dim[i];
  return r;
}
// libnnc's shape of a loss (the tensor_auto of the loss commands): the
// labels' dimensions in the input's type and format, with the channel entry
// (ccv_nnc_tensor_get_c) set to 1 when it is larger than 1. So for [N, C]
// inputs, class-index labels [N] give [N], [N, 1] or dense [N, C] labels
// [N, 1]. MSE applies the rule to 1-d targets too (keep_1d false); the others
// keep a 1-d label shape. Class-index labels with one dimension fewer than
// the input (our extension to several batch dimensions, [B, T] for [B, T, C])
// keep their shape: their last entry is not a class axis.
inline void loss_params(const ccv_nnc_tensor_param_t& in, const ccv_nnc_tensor_param_t& labels, bool keep_1d,
                        ccv_nnc_tensor_param_t& out) {
  out = in;
  std::memcpy(out.dim, labels.dim, sizeof(out.dim));
  const int nd = nd_of(out.dim);
  if (nd == 0 || (keep_1d && nd == 1) || nd == nd_of(in.dim) - 1) return;
  if (ccv_nnc_tensor_get_c(out) > 1) ccv_nnc_tensor_set_c(&out, nd, 1);
}

// How a label tensor relates to a logits / probabilities tensor.
enum class LabelKind { kDense, kIndex, kBad };

// Dense: a floating-point tensor of exactly the input's shape (one-hot or
// probability rows). Index: one class index per row (32S or a float type):
// the input's shape without its last dimension, or with it set to 1, or a
// 1-d tensor of one entry per row.
inline LabelKind label_kind(const ccv_nnc_tensor_param_t& x, const ccv_nnc_tensor_param_t& label) {
  const int ldt = CCV_GET_DATA_TYPE(label.datatype);
  const int nd = nd_of(x.dim), lnd = nd_of(label.dim);
  // A float label shaped like an input of one class ([n, 1]) is read as dense.
  if (is_float(ldt) && same_shape(x.dim, label.dim)) return LabelKind::kDense;
  if (ldt != CCV_32S && !is_float(ldt)) return LabelKind::kBad;
  const int64_t rows = row_count(x.dim);
  if (item_count(label.dim) != rows) return LabelKind::kBad;
  if (lnd == 1) return LabelKind::kIndex;
  if (lnd == nd - 1) {
    for (int i = 0; i < lnd; i++)
      if (label.dim[i] != x.dim[i]) return LabelKind::kBad;
    return LabelKind::kIndex;
  }
  if (lnd == nd && label.dim[nd - 1] == 1) {
    for (int i = 0; i + 1 < nd; i++)
      if (label.dim[i] != x.dim[i]) return LabelKind::kBad;
    return LabelKind::kIndex;
  }
  return LabelKind::kBad;
}

// Read and check every class index (0 <= index < classes, an integer value)
// into `out[0..rows)`; throws CCV_NNC_EXEC_INVALID naming the first bad one.
inline void read_indices(const char* what, const Layout& label, int classes, int* out) {
  const Items it = items_of(label);
  for (int64_t i = 0; i < it.count; i++) {
    const unsigned char* p = it.at(i);
    if (it.datatype == CCV_32S) {
      int32_t v;
      std::memcpy(&v, p, 4);
      NNC_CHECK(v >= 0 && v < classes, "%s: label %lld is class %d, outside [0, %d)", what, static_cast<long long>(i),
                v, classes);
      out[i] = v;
    } else {
      const double v = load_double(p, it.datatype);
      NNC_CHECK(v == std::floor(v), "%s: label %lld is %g, not a whole class index", what, static_cast<long long>(i),
                v);
      NNC_CHECK(v >= 0 && v < classes, "%s: label %lld is class %g, outside [0, %d)", what, static_cast<long long>(i),
                v, classes);
      out[i] = static_cast<int>(v);
    }
  }
}

}  // namespace nnc::rows
