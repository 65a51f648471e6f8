// GEMM: the family's shape rules and the one form every GEMM kernel runs.
//
// Shapes (libnnc's rule, from ccv_nnc_tensor_get_matrix_params in its public
// ccv_nnc_easy.h): the last two dimensions of a tensor are the matrix (rows,
// columns); a 1-d tensor [k] is one row; every dimension before the last two
// is a batch dimension. transpose_a / transpose_b name the two axes to swap:
// equal values mean no transpose, otherwise they must be the last two axes
// ((0, 1) for a 2-d tensor, (nd - 2, nd - 1) for a batched one).
//
//   b = op(a) · op(w) + bias      op(a): [batch.., m, k]  op(w): [batch.., k, n]
//
// Batch dimensions are right-aligned and broadcast: each of a's and w's batch
// dimensions is 1 (or absent) or equals the output's, so a 2-d w is shared by
// every batch (the fully connected layer), a 3-d w pairs with a 3-d a, and a
// 4-d [p, q, m, k] a is p·q products. b has the broadcast batch dimensions and
// [m, n] (leading 1s on either side are ignored); a 1-d a with an unbatched w
// gives a 1-d b [n]. bias, when present, broadcasts to b as ADD's operands do
// (right-aligned, each dimension 1 or b's): [n] or [1, n] is added to every
// row, [m, n] to every batch, [B, 1, n] per batch, b's own shape element by
// element. The backward's dbias takes the bias's shape and sums g over the
// dimensions the bias was broadcast along; its inputs are libnnc's
// |g|a|w|bias|b| (bias and b never read).
//
// Example (a fully connected layer, w is [n, k]):
//
//     ccv_nnc_cmd_param_t p = {};
//     p.blas.a[0] = p.blas.a[1] = 1;
//     p.blas.transpose_b[0] = 0, p.blas.transpose_b[1] = 1;
//     ccv_nnc_cmd_t fc = ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, 0, p, 0);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::gemm {

inline bool is_transposed(const int t[2]) { return t[0] != t[1]; }
// No transpose, or the last two axes of an nd-dimensional tensor.
bool transpose_ok(int nd, const int t[2]);

// These descriptors sit on the path of every ccv_nnc_cmd_exec, so their
// arrays are left uninitialised: only the first batch_nd / nd entries are set
// and read.

// A tensor read as a batch of matrices, before any transpose.
struct Operand {
  unsigned char* data = nullptr;
  int rows = 0, cols = 0;
  int64_t rs = 0, cs = 0;  // element strides between rows and between columns
  int batch_nd = 0;
  int bdim[kMaxDim];
  int64_t bstride[kMaxDim];
};
// Inline: on the dispatch path, and most callers read only a few fields.
inline Operand operand_from(const int* dim, int nd, const int64_t* stride, unsigned char* data) {
  Operand o;
  o.data = data;
  if (nd == 1) {
    o.rows = 1, o.cols = dim[0];
    o.cs = stride[0], o.rs = stride[0] * dim[0];
    return o;
  }
  o.rows = dim[nd - 2], o.cols = dim[nd - 1];
  o.rs = stride[nd - 2], o.cs = stride[nd - 1];
  o.batch_nd = nd - 2;
  for (int i = 0; i < nd - 2; i++) o.bdim[i] = dim[i], o.bstride[i] = stride[i];
  return o;
}
// A tensor or view (not multi-view).
inline Operand operand(const ccv_nnc_tensor_t* t) {
  const int nd = nd_of(t->info.dim);
  int64_t stride[kMaxDim];
  if (CCV_IS_TENSOR_VIEW(t)) {
    const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
    for (int i = 0; i < nd; i++) stride[i] = v->stride[i];
  } else {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) stride[i] = s, s *= t->info.dim[i];
  }
  return operand_from(t->info.dim, nd, stride, static_cast<unsigned char*>(t->data.ptr));
}
// Shape only (packed strides, no data).
inline Operand operand(const int* dim) {
  const int nd = nd_of(dim);
  int64_t stride[kMaxDim];
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) stride[i] = s, s *= dim[i];
  return operand_from(dim, nd, stride, nullptr);
}

// The batch dimensions of a product (right-aligned).
struct Batch {
  int nd = 0;
  int dim[kMaxDim];
  size_t count() const {
    size_t c = 1;
    for (int i = 0; i < nd; i++) c *= static_cast<size_t>(dim[i]);
    return c;
  }
};
// The broadcast of two operands' batch dimensions; false if they conflict.
bool broadcast(const Operand& x, const Operand& y, Batch* out);
// x's batch dimensions are each 1 or equal to b's (right-aligned).
bool broadcasts_to(const Operand& x, const Batch& b);
// x's batch dimensions are b's, leading 1s on either side ignored.
bool same_batch(const Operand& x, const Batch& b);

// One factor of a batched product: op(X) of a stored operand X.
struct Factor {
  unsigned char* data = nullptr;
  int rows = 0, cols = 0;    // of op(X)
  int64_t rs = 0, cs = 0;    // element strides of op(X)
  bool trans = false;        // op(X) = X^T
  int srows = 0, scols = 0;  // X as stored
  int64_t ld = 0;            // X's leading dimension for row-major BLAS (its row stride)
  int64_t bstride[kMaxDim];  // aligned to the product's batch (first batch.nd); 0 where broadcast
};
Factor factor(const Operand& x, bool trans, const Batch& batch);

// C (M x N) = A (M x K) · B (K x N) for every batch index. When C is shared by
// several batch indices (the gradient of a broadcast operand) the products are
// summed into it: `reduce`.
struct Product {
  Batch batch;
  int M = 0, N = 0, K = 0;
  Factor A, B, C;
  bool reduce = false;
};

// The products of forward and backward (tensors already validated).
Product forward_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* w,
                        const ccv_nnc_tensor_t* b);
// da from g and w; dw from g and a.
Product da_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* w,
                   const ccv_nnc_tensor_t* da);
Product dw_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* a,
                   const ccv_nnc_tensor_t* dw);

// Visit every batch index: f(offsets) with the element offsets of A, B, C.
template <class F>
void for_each_batch(const Product& p, F&& f) {
  int idx[kMaxDim];
  const int nd = p.batch.nd;
  for (int i = 0; i < nd; i++) idx[i] = 0;
  int64_t oa = 0, ob = 0, oc = 0;
  for (;;) {
    f(oa, ob, oc);
    int d = nd - 1;
    for (; d >= 0; d--) {
      oa += p.A.bstride[d], ob += p.B.bstride[d], oc += p.C.bstride[d];
      if (++idx[d] < p.batch.dim[d]) break;
      oa -= p.A.bstride[d] * p.batch.dim[d], ob -= p.B.bstride[d] * p.batch.dim[d],
          oc -= p.C.bstride[d] * p.batch.dim[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// A bias (or dbias) broadcast over a product's C: its element for C's (batch,
// i, j) sits at data + ob + i * rs + j * cs (in elements), ob walked with
// bstride over the batch; strides are 0 along every dimension where the bias
// has extent 1 or no dimension at all, so [n], [1, n], [m, n], [B, 1, n] and
// [B, m, n] are one form.
struct BiasMap {
  unsigned char* data = nullptr;
  int64_t rs = 0, cs = 0;
  int64_t bstride[kMaxDim];
};
// The bias tensor (validated to broadcast to C) against product p.
BiasMap bias_map(const ccv_nnc_tensor_t* bias, const Product& p);
// f(ob, oc) for every batch index of p, in for_each_batch's order.
template <class F>
void for_each_bias_batch(const Product& p, const BiasMap& bias, F&& f) {
  Product walk;
  walk.batch = p.batch;
  for (int i = 0; i < p.batch.nd; i++)
    walk.A.bstride[i] = bias.bstride[i], walk.B.bstride[i] = 0, walk.C.bstride[i] = p.C.bstride[i];
  for_each_batch(walk, [&](int64_t ob, int64_t, int64_t oc) { f(ob, oc); });
}
// g (the gradient of the output) as the C of a product, for summing dbias.
Product output_walk(const ccv_nnc_tensor_t* g);
// Does a bias of shape `bias` broadcast to an output of shape `out` (aligned
// at the last dimension; leading 1s on either side ignored)?
bool bias_broadcasts(const int* bias, const int* out);

// CommandInfo pieces (gemm.cpp).
void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);
void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size);
void tensor_auto_forward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
void tensor_auto_backward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size);
bool bitmask_forward(const ccv_nnc_cmd_param_t& params, int input_size, int output_size, const uint64_t* inputs,
                     int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size);
bool bitmask_backward(const ccv_nnc_cmd_param_t& params, int input_size, int output_size, const uint64_t* inputs,
                      int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size);

// The backward's tensors by role (NULL when absent).
struct BackwardArgs {
  ccv_nnc_tensor_t* g = nullptr;
  ccv_nnc_tensor_t* a = nullptr;
  ccv_nnc_tensor_t* w = nullptr;
  ccv_nnc_tensor_t* da = nullptr;
  ccv_nnc_tensor_t* dw = nullptr;
  ccv_nnc_tensor_t* dbias = nullptr;
};
inline BackwardArgs backward_args(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                  int output_size) {
  BackwardArgs r;
  r.g = input_size > 0 ? inputs[0] : nullptr;
  r.a = input_size > 1 ? inputs[1] : nullptr;
  r.w = input_size > 2 ? inputs[2] : nullptr;
  r.da = output_size > 0 ? outputs[0] : nullptr;
  r.dw = output_size > 1 ? outputs[1] : nullptr;
  r.dbias = output_size > 2 ? outputs[2] : nullptr;
  return r;
}

// Backends (gemm_cpu_ref.cpp, gemm_cpu_opt.cpp).
void register_cpu_ref(Registry& r);
void register_cpu_opt(Registry& r);

}  // namespace nnc::gemm
