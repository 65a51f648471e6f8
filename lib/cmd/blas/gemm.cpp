// GEMM's description: shape rules, validation, output shapes, which tensors
// may be absent, and the reduction of forward and backward to one product.
#include "cmd/blas/gemm.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace nnc::gemm {

bool transpose_ok(int nd, const int t[2]) {
  if (!is_transposed(t)) return true;
  if (nd < 2) return false;
  const int lo = std::min(t[0], t[1]), hi = std::max(t[0], t[1]);
  return lo == nd - 2 && hi == nd - 1;
}

namespace {

// Batch dimension i of b (right-aligned to nd), 1 where x has none.
int aligned_dim(const Operand& x, int nd, int i) {
  const int j = i - (nd - x.batch_nd);
  return j < 0 ? 1 : x.bdim[j];
}

}  // namespace

bool broadcast(const Operand& x, const Operand& y, Batch* out) {
  Batch b;
  b.nd = std::max(x.batch_nd, y.batch_nd);
  for (int i = 0; i < b.nd; i++) {
    const int dx = aligned_dim(x, b.nd, i), dy = aligned_dim(y, b.nd, i);
    if (dx != dy && dx != 1 && dy != 1) return false;
    b.dim[i] = std::max(dx, dy);
  }
  *out = b;
  return true;
}

bool broadcasts_to(const Operand& x, const Batch& b) {
  for (int j = 0; j < x.batch_nd; j++) {
    const int i = j - (x.batch_nd - b.nd);
    if (i < 0) {
      if (x.bdim[j] != 1) return false;
    } else if (x.bdim[j] != 1 && x.bdim[j] != b.dim[i]) {
      return false;
    }
  }
  return true;
}

bool same_batch(const Operand& x, const Batch& b) {
  const int nd = std::max(x.batch_nd, b.nd);
  for (int i = 0; i < nd; i++) {
    const int j = i - (nd - b.nd);
    if (aligned_dim(x, nd, i) != (j < 0 ? 1 : b.dim[j])) return false;
  }
  return true;
}

Factor factor(const Operand& x, bool trans, const Batch& batch) {
  Factor f;
  f.data = x.data;
  f.trans = trans;
  f.srows = x.rows, f.scols = x.cols;
  f.rows = trans ? x.cols : x.rows;
  f.cols = trans ? x.rows : x.cols;
  f.rs = trans ? x.cs : x.rs;
  f.cs = trans ? x.rs : x.cs;
  // A single stored row has no meaningful row stride; BLAS still wants ld >= cols.
  f.ld = x.rows == 1 ? std::max<int64_t>(x.rs, x.cols) : x.rs;
  for (int i = 0; i < batch.nd; i++) {
    const int j = i - (batch.nd - x.batch_nd);
    f.bstride[i] = (j < 0 || x.bdim[j] == 1) ? 0 : x.bstride[j];
  }
  return f;
}

namespace {

Product make(const Batch& batch, const Operand& a, bool ta, const Operand& b, bool tb, const Operand& c) {
  Product p;
  p.batch = batch;
  p.A = factor(a, ta, batch);
  p.B = factor(b, tb, batch);
  p.C = factor(c, false, batch);
  p.M = p.A.rows, p.K = p.A.cols, p.N = p.B.cols;
  for (int i = 0; i < batch.nd; i++)
    if (batch.dim[i] > 1 && p.C.bstride[i] == 0) p.reduce = true;
  return p;
}

}  // namespace

Product forward_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* w,
                        const ccv_nnc_tensor_t* b) {
  const Operand oa = operand(a), ow = operand(w), ob = operand(b);
  Batch batch;
  broadcast(oa, ow, &batch);
  return make(batch, oa, is_transposed(p.blas.transpose_a), ow, is_transposed(p.blas.transpose_b), ob);
}

// op(a) = g · op(w)^T, so a = g · op(w)^T or a = op(w) · g^T when a is transposed.
Product da_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* w,
                   const ccv_nnc_tensor_t* da) {
  const Operand og = operand(g), ow = operand(w), oda = operand(da);
  Batch batch;
  broadcast(oda, ow, &batch);
  const bool ta = is_transposed(p.blas.transpose_a), tb = is_transposed(p.blas.transpose_b);
  return ta ? make(batch, ow, tb, og, true, oda) : make(batch, og, false, ow, !tb, oda);
}

// op(w) = op(a)^T · g, so w = op(a)^T · g or w = g^T · op(a) when w is transposed.
Product dw_product(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* a,
                   const ccv_nnc_tensor_t* dw) {
  const Operand og = operand(g), oa = operand(a), odw = operand(dw);
  Batch batch;
  broadcast(oa, odw, &batch);
  const bool ta = is_transposed(p.blas.transpose_a), tb = is_transposed(p.blas.transpose_b);
  return tb ? make(batch, og, true, oa, ta, odw) : make(batch, oa, !ta, og, false, odw);
}

BiasMap bias_map(const ccv_nnc_tensor_t* bias, const Product& p) {
  const Operand o = operand(bias);
  const Factor f = factor(o, false, p.batch);  // bstride 0 where the bias has extent 1
  BiasMap m;
  m.data = o.data;
  m.rs = o.rows == 1 ? 0 : o.rs;
  m.cs = o.cols == 1 ? 0 : o.cs;
  for (int i = 0; i < p.batch.nd; i++) m.bstride[i] = f.bstride[i];
  return m;
}

Product output_walk(const ccv_nnc_tensor_t* g) {
  const Operand o = operand(g);
  Product p;
  p.batch.nd = o.batch_nd;
  for (int i = 0; i < o.batch_nd; i++) p.batch.dim[i] = o.bdim[i];
  p.C = factor(o, false, p.batch);
  p.M = o.rows, p.N = o.cols;
  for (int i = 0; i < p.batch.nd; i++) p.A.bstride[i] = p.B.bstride[i] = 0;
  return p;
}

bool bias_broadcasts(const int* bias, const int* out) {
  int nb = nd_of(bias);
  const int no = nd_of(out);
  if (nb < 1) return false;
  // A bias with more dimensions than the output may only add leading 1s.
  int skip = 0;
  while (nb - skip > no && bias[skip] == 1) skip++;
  if (nb - skip > no) return false;
  for (int k = 0; k < nb - skip; k++) {
    const int x = bias[nb - 1 - k];
    if (x != 1 && x != out[no - 1 - k]) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Validation

namespace {

std::string shape_of(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }

std::string batch_string(const Batch& b) {
  if (b.nd == 0) return "none";
  std::string s;
  for (int i = 0; i < b.nd; i++) {
    if (i) s += 'x';
    s += std::to_string(b.dim[i]);
  }
  return s;
}

void check_transpose(const char* cmd, const char* name, const int t[2], const ccv_nnc_tensor_t* x, const char* xname) {
  const int nd = nd_of(x->info.dim);
  if (transpose_ok(nd, t)) return;
  if (nd < 2)
    fail(CCV_NNC_EXEC_INVALID, "%s: %s = (%d, %d) but %s is 1-d (%s) and cannot be transposed", cmd, name, t[0], t[1],
         xname, shape_of(x).c_str());
  fail(CCV_NNC_EXEC_INVALID, "%s: %s = (%d, %d) does not name the last two axes of %s (%d-d, %s); use (%d, %d)", cmd,
       name, t[0], t[1], xname, nd, shape_of(x).c_str(), nd - 2, nd - 1);
}

void check_datatypes(const char* cmd, std::initializer_list<std::pair<const char*, const ccv_nnc_tensor_t*>> ts) {
  const ccv_nnc_tensor_t* first = nullptr;
  const char* first_name = nullptr;
  for (const auto& [name, t] : ts) {
    if (!t) continue;
    if (!first) {
      first = t, first_name = name;
      continue;
    }
    const int x = CCV_GET_DATA_TYPE(t->info.datatype), y = CCV_GET_DATA_TYPE(first->info.datatype);
    if (x != y)
      fail(CCV_NNC_EXEC_INVALID, "%s: data types differ: %s is %s but %s is %s", cmd, first_name, datatype_name(y),
           name, datatype_name(x));
  }
}

// The bias broadcasts to the output as ADD does: [n] (or [1, n]) for every
// row, [m, n] for every batch, [B, 1, n] per batch, or the output's shape.
void check_bias(const char* cmd, const char* name, const ccv_nnc_tensor_t* bias, const char* out_name,
                const ccv_nnc_tensor_t* out) {
  if (!bias_broadcasts(bias->info.dim, out->info.dim))
    fail(CCV_NNC_EXEC_INVALID,
         "%s: %s is %s, which does not broadcast to %s %s (aligned at the last dimension, each 1 or equal)", cmd, name,
         shape_of(bias).c_str(), out_name, shape_of(out).c_str());
}

}  // namespace

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "GEMM_FORWARD";
  NNC_CHECK(input_size == 2 || input_size == 3, "%s takes 2 or 3 inputs (a, w[, bias]), got %d", name, input_size);
  NNC_CHECK(output_size == 1, "%s takes 1 output (b), got %d", name, output_size);
  const ccv_nnc_tensor_t* a = inputs[0];
  const ccv_nnc_tensor_t* w = inputs[1];
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  const ccv_nnc_tensor_t* b = outputs[0];
  NNC_CHECK(a, "%s: input a (0) is NULL", name);
  NNC_CHECK(w, "%s: input w (1) is NULL", name);
  NNC_CHECK(b, "%s: output b (0) is NULL", name);
  check_datatypes(name, {{"a", a}, {"w", w}, {"bias", bias}, {"b", b}});
  const int* ta = cmd.info.blas.transpose_a;
  const int* tb = cmd.info.blas.transpose_b;
  check_transpose(name, "transpose_a", ta, a, "a");
  check_transpose(name, "transpose_b", tb, w, "w");
  const Operand oa = operand(a->info.dim), ow = operand(w->info.dim), ob = operand(b->info.dim);
  const int m = is_transposed(ta) ? oa.cols : oa.rows, k = is_transposed(ta) ? oa.rows : oa.cols;
  const int kw = is_transposed(tb) ? ow.cols : ow.rows, n = is_transposed(tb) ? ow.rows : ow.cols;
  if (k != kw)
    fail(CCV_NNC_EXEC_INVALID,
         "%s: inner dimensions differ: a is %s (m = %d, k = %d after transpose_a) but w is %s (k = %d, n = %d after "
         "transpose_b)",
         name, shape_of(a).c_str(), m, k, shape_of(w).c_str(), kw, n);
  Batch batch;
  if (!broadcast(oa, ow, &batch))
    fail(CCV_NNC_EXEC_INVALID, "%s: batch dimensions of a (%s) and w (%s) cannot broadcast (each must be 1 or equal)",
         name, shape_of(a).c_str(), shape_of(w).c_str());
  if (ob.rows != m || ob.cols != n || !same_batch(ob, batch))
    fail(CCV_NNC_EXEC_INVALID, "%s: output b is %s but a (%s) times w (%s) gives batch %s and a %dx%d matrix", name,
         shape_of(b).c_str(), shape_of(a).c_str(), shape_of(w).c_str(), batch_string(batch).c_str(), m, n);
  if (bias) check_bias(name, "bias", bias, "the output b", b);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "GEMM_BACKWARD";
  NNC_CHECK(input_size >= 1 && input_size <= 5, "%s takes 1 to 5 inputs (g, a, w[, bias, b]), got %d", name,
            input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 3, "%s takes 1 to 3 outputs (da, dw, dbias), got %d", name, output_size);
  const BackwardArgs t = backward_args(inputs, input_size, outputs, output_size);
  NNC_CHECK(t.g, "%s: input g (0), the gradient of b, is NULL", name);
  NNC_CHECK(t.da || t.dw || t.dbias, "%s: every output (da, dw, dbias) is NULL; nothing to compute", name);
  NNC_CHECK(!t.da || t.w, "%s: computing da needs w (input 2), which is NULL", name);
  NNC_CHECK(!t.dw || t.a, "%s: computing dw needs a (input 1), which is NULL", name);
  check_datatypes(name, {{"g", t.g}, {"a", t.a}, {"w", t.w}, {"da", t.da}, {"dw", t.dw}, {"dbias", t.dbias}});
  const int* ta = cmd.info.blas.transpose_a;
  const int* tb = cmd.info.blas.transpose_b;
  if (t.a) check_transpose(name, "transpose_a", ta, t.a, "a");
  if (t.da) check_transpose(name, "transpose_a", ta, t.da, "da");
  if (t.w) check_transpose(name, "transpose_b", tb, t.w, "w");
  if (t.dw) check_transpose(name, "transpose_b", tb, t.dw, "dw");
  auto check_same = [&](const ccv_nnc_tensor_t* x, const char* xn, const ccv_nnc_tensor_t* y, const char* yn) {
    if (!x || !y) return;
    if (!nnc::same_shape(x->info, y->info))
      fail(CCV_NNC_EXEC_INVALID, "%s: %s is %s but %s is %s; they must have the same shape", name, xn,
           shape_of(x).c_str(), yn, shape_of(y).c_str());
  };
  check_same(t.a, "a", t.da, "da");
  check_same(t.w, "w", t.dw, "dw");
  const Operand og = operand(t.g->info.dim);
  const Batch gb = [&] {
    Batch b;
    b.nd = og.batch_nd;
    for (int i = 0; i < b.nd; i++) b.dim[i] = og.bdim[i];
    return b;
  }();
  const int m = og.rows, n = og.cols;
  int k = -1;
  const ccv_nnc_tensor_t* ax = t.a ? t.a : t.da;
  const ccv_nnc_tensor_t* wx = t.w ? t.w : t.dw;
  const char* an = t.a ? "a" : "da";
  const char* wn = t.w ? "w" : "dw";
  if (ax) {
    const Operand oa = operand(ax->info.dim);
    const int am = is_transposed(ta) ? oa.cols : oa.rows;
    k = is_transposed(ta) ? oa.rows : oa.cols;
    if (am != m || !broadcasts_to(oa, gb))
      fail(CCV_NNC_EXEC_INVALID, "%s: g is %s but %s is %s (m = %d after transpose_a); g must be the shape of b", name,
           shape_of(t.g).c_str(), an, shape_of(ax).c_str(), am);
  }
  if (wx) {
    const Operand ow = operand(wx->info.dim);
    const int wk = is_transposed(tb) ? ow.cols : ow.rows, wn_ = is_transposed(tb) ? ow.rows : ow.cols;
    if (wn_ != n || !broadcasts_to(ow, gb))
      fail(CCV_NNC_EXEC_INVALID, "%s: g is %s but %s is %s (n = %d after transpose_b); g must be the shape of b", name,
           shape_of(t.g).c_str(), wn, shape_of(wx).c_str(), wn_);
    if (k >= 0 && wk != k)
      fail(CCV_NNC_EXEC_INVALID, "%s: inner dimensions differ: %s is %s (k = %d) but %s is %s (k = %d)", name, an,
           shape_of(ax).c_str(), k, wn, shape_of(wx).c_str(), wk);
  }
  if (ax && wx) {
    Batch batch;
    const Operand oa = operand(ax->info.dim), ow = operand(wx->info.dim);
    if (!broadcast(oa, ow, &batch) || !same_batch(og, batch))
      fail(CCV_NNC_EXEC_INVALID, "%s: g is %s but %s (%s) times %s (%s) gives batch %s", name, shape_of(t.g).c_str(),
           an, shape_of(ax).c_str(), wn, shape_of(wx).c_str(), batch_string(batch).c_str());
  }
  if (t.dbias) check_bias(name, "dbias", t.dbias, "g", t.g);
}

// ---------------------------------------------------------------------------
// Output shapes

void tensor_auto_forward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (output_size < 1) return;
  NNC_CHECK(input_size >= 2, "GEMM_FORWARD: output shape needs a and w, got %d inputs", input_size);
  const ccv_nnc_tensor_param_t& a = inputs[0];
  const ccv_nnc_tensor_param_t& w = inputs[1];
  const int a_nd = nd_of(a.dim), w_nd = nd_of(w.dim);
  NNC_CHECK(a_nd >= 1 && w_nd >= 1, "GEMM_FORWARD: a (%s) and w (%s) must have dimensions", shape_string(a.dim).c_str(),
            shape_string(w.dim).c_str());
  const int* ta = params.blas.transpose_a;
  const int* tb = params.blas.transpose_b;
  NNC_CHECK(transpose_ok(a_nd, ta), "GEMM_FORWARD: transpose_a = (%d, %d) does not name the last two axes of a (%s)",
            ta[0], ta[1], shape_string(a.dim).c_str());
  NNC_CHECK(transpose_ok(w_nd, tb), "GEMM_FORWARD: transpose_b = (%d, %d) does not name the last two axes of w (%s)",
            tb[0], tb[1], shape_string(w.dim).c_str());
  const Operand oa = operand(a.dim), ow = operand(w.dim);
  const int m = is_transposed(ta) ? oa.cols : oa.rows, k = is_transposed(ta) ? oa.rows : oa.cols;
  const int kw = is_transposed(tb) ? ow.cols : ow.rows, n = is_transposed(tb) ? ow.rows : ow.cols;
  NNC_CHECK(k == kw, "GEMM_FORWARD: inner dimensions differ: a is %s (k = %d) but w is %s (k = %d)",
            shape_string(a.dim).c_str(), k, shape_string(w.dim).c_str(), kw);
  Batch batch;
  NNC_CHECK(broadcast(oa, ow, &batch), "GEMM_FORWARD: batch dimensions of a (%s) and w (%s) cannot broadcast",
            shape_string(a.dim).c_str(), shape_string(w.dim).c_str());
  NNC_CHECK(batch.nd + 2 <= kMaxDim, "GEMM_FORWARD: too many batch dimensions");
  ccv_nnc_tensor_param_t b = a;
  std::fill(std::begin(b.dim), std::end(b.dim), 0);
  if (a_nd == 1 && batch.nd == 0) {
    b.dim[0] = n;
  } else {
    for (int i = 0; i < batch.nd; i++) b.dim[i] = batch.dim[i];
    b.dim[batch.nd] = m;
    b.dim[batch.nd + 1] = n;
  }
  outputs[0] = b;
}

void tensor_auto_backward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  // libnnc's rule (backward from inputs): da, dw and dbias take the shapes of
  // a, w and bias (inputs 1, 2, 3); without a bias, dbias is [n].
  NNC_CHECK(input_size >= 3, "GEMM_BACKWARD: output shapes need g, a and w, got %d inputs", input_size);
  if (output_size > 0) outputs[0] = inputs[1];
  if (output_size > 1) outputs[1] = inputs[2];
  if (output_size > 2 && input_size > 3 && inputs[3].dim[0] > 0) {
    outputs[2] = inputs[3];
  } else if (output_size > 2) {
    const Operand ow = operand(inputs[2].dim);
    ccv_nnc_tensor_param_t bias = inputs[2];
    std::fill(std::begin(bias.dim), std::end(bias.dim), 0);
    bias.dim[0] = is_transposed(params.blas.transpose_b) ? ow.rows : ow.cols;
    outputs[2] = bias;
  }
}

// libnnc's patterns exactly: |a|w| or |a|w|bias| -> |b|, every one present.
bool bitmask_forward(const ccv_nnc_cmd_param_t&, int input_size, int, const uint64_t* inputs, int input_bitmask_size,
                     const uint64_t* outputs, int output_bitmask_size) {
  if (input_bitmask_size < 1 || output_bitmask_size < 1 || outputs[0] != 1u) return false;
  if (input_size == 3) return (inputs[0] & 7u) == 7u;
  if (input_size == 2) return (inputs[0] & 3u) == 3u;
  return false;
}

// libnnc's six patterns over |g|a|w|(bias, b unread)| -> |da|dw|dbias|: g
// always; a when dw is asked for; w when da is; dbias only beside da or dw.
bool bitmask_backward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                      const uint64_t* outputs, int output_bitmask_size) {
  if (input_bitmask_size < 1 || output_bitmask_size < 1) return false;
  const uint64_t in = inputs[0], out = outputs[0];
  if ((in & 7u) == 7u && (out == 7u || out == 3u)) return true;
  if ((in & 3u) == 3u && (out == 6u || out == 2u)) return true;
  if ((in & 5u) == 5u && (out == 5u || out == 1u)) return true;
  return false;
}

}  // namespace nnc::gemm
