// The attention family: SCALED_DOT_PRODUCT_ATTENTION forward and backward.
//
//   ccv_nnc_cmd_t a = CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(1. / sqrt(64), 1);  // scale, is_causal
//   ccv_nnc_cmd_exec(a, ccv_nnc_no_hint, 0, TENSOR_LIST(q, k, v), TENSOR_LIST(o, lse), 0);
//
// Parameters: scaled_dot_product_attention.scale (used as given),
// .is_causal (query i sees key j only where j <= i + Sk - Sq: bottom-right
// aligned, FlashAttention's rule; for Sq = Sk the usual lower triangle),
// .flags (accumulator precision hints; the CPU accumulates in fp32 on
// CPU_OPT and in double on CPU_REF whatever they say).
//
// Forward inputs |q|k|v|attn_mask|w|bias| (libnnc's slots):
//   q [B, Sq, H, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv] (Hk divides H:
//   query head h reads kv head h / (H / Hk)); or all 3-d [B, S, D] (one head).
//   attn_mask (optional, NULL or absent): added to the scaled scores,
//   broadcast numpy-style (right-aligned, extents 1 or full) against
//   [B, H, Sq, Sk] (3-d q: [B, Sq, Sk]); -inf hides a key.
//   w, bias (optional; w present makes the "fused unify-head" form): w is
//   [Nout, H * Dv], bias [Nout].
// Outputs |o|lse|qkv|:
//   without w: o [B, Sq, H, Dv] (3-d: [B, Sq, Dv]) = softmax(scale · q kᵀ +
//   mask) v per batch and head; with w: output 0 is y [B, Sq, Nout] = qkv ·
//   wᵀ + bias, qkv ([B, Sq, H * Dv] rows) the attention result, which output 2
//   receives when given.
//   lse (optional): the log-sum-exp of each query row's scaled, masked
//   scores, saved for the backward: libnnc's shape [B, H, Sq] (3-d q: [Sq, B],
//   element (i, b)). A row that sees no key gets o = 0 and lse = -inf.
// Backward inputs |g|-|-|q|k|v|attn_mask|w|bias|o|lse|qkv| (g the gradient of
//   output 0; the gradients of lse and qkv are not read), outputs
//   |dq|dk|dv|-|dw|dbias| (no gradient for the mask). CPU_OPT reads lse and
//   the attention result (o, or qkv when fused) as saved; CPU_REF recomputes
//   everything from q, k, v, mask, w.
// libnnc's bitmasks: forward |q|k|v| (mask optional) with o and lse, or with
//   w (and bias) and all three outputs; backward g, q, k, v, o, lse (+ w,
//   qkv, bias for the fused form) giving dq, dk, dv (+ dw, dbias). One
//   deliberate difference: the third backward rule also refuses qkv without
//   w (see bitmask_backward), so autodiff keeps w for a fused call. The
//   backward runs without bias (dbias is a sum of g), qkv, o or lse (both
//   recomputed from q, k, v). Output 0 may share memory with q. Backward
//   shapes: each gradient like its input.
// Data types: q, k, v, mask, w, bias, o, g and the gradients share one float
// type (32F, 64F, 16F, 16BF on CPU_REF; 32F on CPU_OPT); lse is any float
// type (tensor_auto makes it 32F).
#include "cmd/attention/attention.hpp"

#include <algorithm>
#include <cstring>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace attn {

namespace {

int dt_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(dt_of(t)); }

// libnnc's tensor_auto, rule for rule.
void tensor_auto_forward(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 3 || output_size < 1) return;
  const int q_nd = nd_of(inputs[0].dim), v_nd = nd_of(inputs[2].dim);
  if ((q_nd != 3 && q_nd != 4) || v_nd != q_nd) {
    for (int i = 0; i < output_size; i++) outputs[i] = inputs[0];
    return;
  }
  auto lse = [&]() {
    ccv_nnc_tensor_param_t p = inputs[0];
    p.dim[q_nd - 3] = inputs[0].dim[q_nd - 2];
    p.dim[q_nd - 2] = inputs[0].dim[q_nd - 3];
    p.dim[q_nd - 1] = 0;
    p.datatype = CCV_32F;
    return p;
  };
  if (input_size > 4 && nd_of(inputs[4].dim) > 0) {
    outputs[0] = inputs[0];
    outputs[0].dim[1] = inputs[0].dim[1];
    outputs[0].dim[2] = inputs[2].dim[v_nd - 1] * (q_nd == 4 ? inputs[0].dim[2] : 1);
    outputs[0].dim[3] = 0;
    if (output_size > 1) outputs[1] = lse();
    if (output_size > 2) {
      outputs[2] = inputs[0];
      outputs[2].dim[q_nd - 1] = inputs[2].dim[v_nd - 1];
    }
    for (int i = 3; i < output_size; i++) outputs[i] = outputs[0];
    return;
  }
  outputs[0] = inputs[0];
  outputs[0].dim[q_nd - 1] = inputs[2].dim[v_nd - 1];
  if (output_size > 1) outputs[1] = lse();
  for (int i = 2; i < output_size; i++) outputs[i] = outputs[0];
}

void tensor_auto_backward(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size; i++)
    outputs[i] = 3 + i < input_size ? inputs[3 + i] : (input_size > 0 ? inputs[0] : ccv_nnc_tensor_param_t{});
}

bool bitmask_forward(const ccv_nnc_cmd_param_t&, int input_size, int, const uint64_t* inputs, int input_bitmask_size,
                     const uint64_t* outputs, int output_bitmask_size) {
  const uint64_t in = word0(inputs, input_bitmask_size), out = word0(outputs, output_bitmask_size);
  if (input_size == 6 && (in & 55u) == 55u && (out & 7u) == 7u) return true;
  if (input_size == 5 && (in & 23u) == 23u && (out & 7u) == 7u) return true;
  return (in & 55u) == 7u && (out & 3u) == 3u;
}

bool bitmask_backward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                      const uint64_t* outputs, int output_bitmask_size) {
  const uint64_t in = word0(inputs, input_bitmask_size), out = word0(outputs, output_bitmask_size);
  if ((in & 4025u) == 4025u && (out & 63u) == 55u) return true;  // fused with bias
  if ((in & 3769u) == 3769u && (out & 31u) == 23u) return true;  // fused without bias
  // libnnc's third rule, with one refusal added: qkv (11) given without w (7).
  // Our autodiff passes a backward only the inputs its bitmask insists on,
  // dropping them one by one in slot order; libnnc's rule would let it drop
  // w from a fused call (the rule ignores w), which then could not run.
  if ((in & 2048u) && !(in & 128u)) return false;
  return (in & 1593u) == 1593u && (out & 7u) == 7u;
}

bool allow_query_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 0;
}

ccv_nnc_tensor_t* at(ccv_nnc_tensor_t* const* list, int size, int i) { return i < size ? list[i] : nullptr; }

// A 3-d or 4-d tensor as [B, S, H, D].
View4 view4(const ccv_nnc_tensor_t* t, int* dims) {
  const Layout l = layout_of(t);
  View4 v;
  v.data = l.data;
  v.datatype = l.datatype;
  if (l.nd == 4) {
    v.sb = l.stride[0], v.ss = l.stride[1], v.sh = l.stride[2], v.sd = l.stride[3];
    for (int i = 0; i < 4; i++) dims[i] = l.dim[i];
  } else {
    v.sb = l.stride[0], v.ss = l.stride[1], v.sh = 0, v.sd = l.stride[2];
    dims[0] = l.dim[0], dims[1] = l.dim[1], dims[2] = 1, dims[3] = l.dim[2];
  }
  return v;
}

void check_operand(const char* name, const char* role, const ccv_nnc_tensor_t* t, int nd, const ccv_nnc_tensor_t* q) {
  NNC_CHECK(t, "%s: %s is required", name, role);
  NNC_CHECK(nd_of(t->info.dim) == nd, "%s: %s is %s but q is %s; q, k, v (and o) are all [B, S, H, D] or all [B, S, D]",
            name, role, shape_string(t->info.dim).c_str(), shape_string(q->info.dim).c_str());
  NNC_CHECK(dt_of(t) == dt_of(q), "%s: %s is %s but q is %s; they must share one type", name, role, dt_name(t),
            dt_name(q));
}

void expect_dims(const char* name, const char* role, const ccv_nnc_tensor_t* t, const int* want, int nd) {
  bool ok = nd_of(t->info.dim) == nd;
  for (int i = 0; ok && i < nd; i++) ok = t->info.dim[i] == want[i];
  int w[CCV_NNC_MAX_DIM_ALLOC] = {};
  for (int i = 0; i < nd; i++) w[i] = want[i];
  NNC_CHECK(ok, "%s: %s is %s; expected %s", name, role, shape_string(t->info.dim).c_str(), shape_string(w).c_str());
}

// A tensor holding rows x cols elements as a matrix (leading axes flattened
// into rows, trailing into columns), if its strides allow; data NULL if not.
View2 view2(const ccv_nnc_tensor_t* t, int split) {
  const Layout l = layout_of(t);
  View2 m;
  m.datatype = l.datatype;
  int64_t rows = 1, cols = 1;
  for (int i = 0; i < split; i++) rows *= l.dim[i];
  for (int i = split; i < l.nd; i++) cols *= l.dim[i];
  m.rows = static_cast<int>(rows), m.cols = static_cast<int>(cols);
  // Each group of axes must walk with one stride.
  auto one_stride = [&](int from, int to, int64_t* s) {
    *s = l.stride[to - 1];
    for (int i = to - 1; i > from; i--)
      if (l.stride[i - 1] != l.stride[i] * l.dim[i]) return false;
    return true;
  };
  if (one_stride(0, split, &m.rs) && one_stride(split, l.nd, &m.cs)) m.data = l.data;
  return m;
}

}  // namespace

Problem problem(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                ccv_nnc_tensor_t* const* outputs, int output_size, bool backward, const char* name) {
  const int base = backward ? 3 : 0;
  if (backward) {
    NNC_CHECK(input_size >= 6 && input_size <= 12,
              "%s: takes inputs |g|-|-|q|k|v|attn_mask|w|bias|o|lse|qkv| (at least 6; got %d)", name, input_size);
    NNC_CHECK(output_size >= 1 && output_size <= 6, "%s: takes outputs |dq|dk|dv|-|dw|dbias| (got %d)", name,
              output_size);
  } else {
    NNC_CHECK(input_size >= 3 && input_size <= 6, "%s: takes inputs |q|k|v|attn_mask|w|bias| (at least 3; got %d)",
              name, input_size);
    NNC_CHECK(output_size >= 1 && output_size <= 3, "%s: takes outputs |o|lse|qkv| (got %d)", name, output_size);
  }
  ccv_nnc_tensor_t *q = at(inputs, input_size, base), *k = at(inputs, input_size, base + 1),
                   *v = at(inputs, input_size, base + 2), *mask = at(inputs, input_size, base + 3),
                   *w = at(inputs, input_size, base + 4), *bias = at(inputs, input_size, base + 5);
  NNC_CHECK(q && k && v, "%s: q, k and v (inputs %d, %d, %d) are required", name, base, base + 1, base + 2);
  const int nd = nd_of(q->info.dim);
  NNC_CHECK(nd == 3 || nd == 4, "%s: q is %s; it must be 4-d [B, S, H, D] or 3-d [B, S, D]", name,
            shape_string(q->info.dim).c_str());
  NNC_CHECK(dt_of(q) & types::kFloat, "%s: q is %s; it takes 32F, 64F, 16F and 16BF", name, dt_name(q));
  check_operand(name, "k", k, nd, q);
  check_operand(name, "v", v, nd, q);
  Problem p;
  p.datatype = dt_of(q);
  p.four_d = nd == 4;
  p.scale = cmd.info.scaled_dot_product_attention.scale;
  p.causal = cmd.info.scaled_dot_product_attention.is_causal != 0;
  int qd[4], kd[4], vd[4];
  p.q = view4(q, qd), p.k = view4(k, kd), p.v = view4(v, vd);
  p.B = qd[0], p.Sq = qd[1], p.H = qd[2], p.D = qd[3];
  p.Sk = kd[1], p.Hk = kd[2], p.Dv = vd[3];
  NNC_CHECK(kd[0] == p.B && vd[0] == p.B, "%s: batch sizes differ: q %s, k %s, v %s", name,
            shape_string(q->info.dim).c_str(), shape_string(k->info.dim).c_str(), shape_string(v->info.dim).c_str());
  NNC_CHECK(kd[3] == p.D, "%s: q is %s but k is %s; the head sizes (last axes) must match", name,
            shape_string(q->info.dim).c_str(), shape_string(k->info.dim).c_str());
  NNC_CHECK(vd[1] == p.Sk && vd[2] == p.Hk, "%s: k is %s but v is %s; their sequence and head axes must match", name,
            shape_string(k->info.dim).c_str(), shape_string(v->info.dim).c_str());
  NNC_CHECK(p.Hk > 0 && p.H % p.Hk == 0, "%s: q has %d heads, k and v %d; the latter must divide the former", name, p.H,
            p.Hk);
  NNC_CHECK(p.B > 0 && p.Sq > 0 && p.Sk > 0 && p.D > 0 && p.Dv > 0, "%s: an extent of q %s, k %s or v %s is 0", name,
            shape_string(q->info.dim).c_str(), shape_string(k->info.dim).c_str(), shape_string(v->info.dim).c_str());
  if (mask) {
    NNC_CHECK(dt_of(mask) == p.datatype, "%s: attn_mask is %s but q is %s; they must share one type", name,
              dt_name(mask), dt_name(q));
    const Layout m = layout_of(mask);
    const int tnd = p.four_d ? 4 : 3;
    const int target[4] = {p.B, p.H, p.Sq, p.Sk};
    const int* t = p.four_d ? target : nullptr;
    const int target3[3] = {p.B, p.Sq, p.Sk};
    if (!t) t = target3;
    NNC_CHECK(m.nd >= 1 && m.nd <= tnd, "%s: attn_mask is %s; it must broadcast against %s", name,
              shape_string(mask->info.dim).c_str(), p.four_d ? "[B, H, Sq, Sk]" : "[B, Sq, Sk]");
    int64_t s[4] = {0, 0, 0, 0};  // strides along the target's axes
    for (int i = 0; i < m.nd; i++) {
      const int ti = tnd - m.nd + i;
      NNC_CHECK(m.dim[i] == 1 || m.dim[i] == t[ti],
                "%s: attn_mask is %s; axis %d must be 1 or %d to broadcast against %s", name, shape_string(mask->info.dim).c_str(), i, t[ti], p.four_d ? "[B, H, Sq, Sk]" : "[B, Sq, Sk]");
      s[ti] = m.dim[i] == 1 ? 0 : m.stride[i];
    }
    p.mask.data = m.data;
    p.mask.datatype = m.datatype;
    if (p.four_d)
      p.mask.sb = s[0], p.mask.sh = s[1], p.mask.ss = s[2], p.mask.sd = s[3];
    else
      p.mask.sb = s[0], p.mask.sh = 0, p.mask.ss = s[1], p.mask.sd = s[2];
  }
  p.fused = w != nullptr;
  NNC_CHECK(w || !bias, "%s: a bias (input %d) needs the unify-head weights w (input %d)", name, base + 5, base + 4);
  const int HDv = p.H * p.Dv;
  if (p.fused) {
    NNC_CHECK(dt_of(w) == p.datatype, "%s: w is %s but q is %s", name, dt_name(w), dt_name(q));
    NNC_CHECK(nd_of(w->info.dim) == 2 && w->info.dim[1] == HDv,
              "%s: w is %s; the unify-head weights are [Nout, H * Dv] = [Nout, %d]", name,
              shape_string(w->info.dim).c_str(), HDv);
    p.Nout = w->info.dim[0];
    p.w = view2(w, 1);
    if (bias) {
      NNC_CHECK(dt_of(bias) == p.datatype, "%s: bias is %s but q is %s", name, dt_name(bias), dt_name(q));
      const Layout b = layout_of(bias);
      NNC_CHECK(b.count() == static_cast<size_t>(p.Nout), "%s: bias is %s but w has %d rows", name,
                shape_string(bias->info.dim).c_str(), p.Nout);
      p.bias = b.data;
      for (int i = 0; i < b.nd; i++)
        if (b.dim[i] == p.Nout) p.bias_stride = b.stride[i];
    }
  }
  const int odims[4] = {p.B, p.Sq, p.four_d ? p.H : p.Dv, p.Dv};
  const int ydims[3] = {p.B, p.Sq, p.Nout};
  auto attach_o = [&](ccv_nnc_tensor_t* t, const char* role) {
    if (!t) return;
    NNC_CHECK(dt_of(t) == p.datatype, "%s: %s is %s but q is %s", name, role, dt_name(t), dt_name(q));
    expect_dims(name, role, t, odims, nd);
    int d[4];
    p.o = view4(t, d);
  };
  auto attach_y = [&](ccv_nnc_tensor_t* t, const char* role) {
    NNC_CHECK(dt_of(t) == p.datatype, "%s: %s is %s but q is %s", name, role, dt_name(t), dt_name(q));
    expect_dims(name, role, t, ydims, 3);
    int d[4];
    const Layout l = layout_of(t);
    p.y3.data = l.data, p.y3.datatype = l.datatype;
    p.y3.sb = l.stride[0], p.y3.ss = l.stride[1], p.y3.sh = 0, p.y3.sd = l.stride[2];
    (void)d;
    p.y = view2(t, 2);
  };
  auto attach_lse = [&](ccv_nnc_tensor_t* t) {
    if (!t) return;
    NNC_CHECK(dt_of(t) & types::kFloat, "%s: lse is %s; it takes a float type", name, dt_name(t));
    const Layout l = layout_of(t);
    if (p.four_d) {
      const int want[3] = {p.B, p.H, p.Sq};
      expect_dims(name, "lse", t, want, 3);
      p.lse.sb = l.stride[0], p.lse.sh = l.stride[1], p.lse.ss = l.stride[2];
    } else {
      const int want[2] = {p.Sq, p.B};
      expect_dims(name, "lse (libnnc's [Sq, B] for 3-d q)", t, want, 2);
      p.lse.ss = l.stride[0], p.lse.sb = l.stride[1], p.lse.sh = 0;
    }
    p.lse.data = l.data, p.lse.datatype = l.datatype;
  };
  if (!backward) {
    ccv_nnc_tensor_t* out0 = outputs[0];
    NNC_CHECK(out0, "%s: output 0 is required", name);
    if (p.fused) {
      attach_y(out0, "y (output 0, the projected result)");
      attach_o(at(outputs, output_size, 2), "qkv (output 2)");
    } else {
      attach_o(out0, "o (output 0)");
    }
    attach_lse(at(outputs, output_size, 1));
    return p;
  }
  // Backward.
  ccv_nnc_tensor_t* g = inputs[0];
  NNC_CHECK(g, "%s: g (input 0) is required", name);
  if (p.fused) {
    attach_y(g, "g (input 0)");
    p.g = p.y3;
    p.y3 = View4{};
    p.y = View2{};
    attach_o(at(inputs, input_size, 11), "qkv (input 11)");
  } else {
    NNC_CHECK(dt_of(g) == p.datatype, "%s: g is %s but q is %s", name, dt_name(g), dt_name(q));
    expect_dims(name, "g (input 0)", g, odims, nd);
    int d[4];
    p.g = view4(g, d);
    attach_o(at(inputs, input_size, 9), "o (input 9)");
  }
  attach_lse(at(inputs, input_size, 10));
  auto grad = [&](int i, ccv_nnc_tensor_t* like, const char* role) -> ccv_nnc_tensor_t* {
    ccv_nnc_tensor_t* t = at(outputs, output_size, i);
    if (!t) return nullptr;
    NNC_CHECK(dt_of(t) == p.datatype, "%s: %s is %s but q is %s", name, role, dt_name(t), dt_name(q));
    NNC_CHECK(same_shape(t->info, like->info), "%s: %s is %s but its input is %s; they must match", name, role,
              shape_string(t->info.dim).c_str(), shape_string(like->info.dim).c_str());
    return t;
  };
  int d[4];
  if (ccv_nnc_tensor_t* t = grad(0, q, "dq")) p.dq = view4(t, d);
  if (ccv_nnc_tensor_t* t = grad(1, k, "dk")) p.dk = view4(t, d);
  if (ccv_nnc_tensor_t* t = grad(2, v, "dv")) p.dv = view4(t, d);
  NNC_CHECK(!at(outputs, output_size, 3), "%s: output 3 (a gradient of attn_mask) is not computed; pass NULL", name);
  if (ccv_nnc_tensor_t* t = at(outputs, output_size, 4)) {
    NNC_CHECK(p.fused, "%s: dw (output 4) needs w (input 7)", name);
    grad(4, w, "dw");
    p.dw = view2(t, 1);
  }
  if (ccv_nnc_tensor_t* t = at(outputs, output_size, 5)) {
    NNC_CHECK(p.fused, "%s: dbias (output 5) needs w (input 7)", name);
    NNC_CHECK(dt_of(t) == p.datatype, "%s: dbias is %s but q is %s", name, dt_name(t), dt_name(q));
    const Layout b = layout_of(t);
    NNC_CHECK(b.count() == static_cast<size_t>(p.Nout), "%s: dbias is %s but w has %d rows", name,
              shape_string(t->info.dim).c_str(), p.Nout);
    p.dbias = b.data;
    for (int i = 0; i < b.nd; i++)
      if (b.dim[i] == p.Nout) p.dbias_stride = b.stride[i];
  }
  NNC_CHECK(p.dq.data || p.dk.data || p.dv.data || p.dw.data || p.dbias, "%s: every output is NULL", name);
  return p;
}

namespace {

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  problem(cmd, inputs, input_size, outputs, output_size, false, "SCALED_DOT_PRODUCT_ATTENTION_FORWARD");
}
void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  problem(cmd, inputs, input_size, outputs, output_size, true, "SCALED_DOT_PRODUCT_ATTENTION_BACKWARD");
}

}  // namespace

}  // namespace attn

void register_attention(Registry& r) {
  r.add_command({.cmd = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD,
                 .tensor_auto = attn::tensor_auto_forward,
                 .bitmask = attn::bitmask_forward,
                 .allow_inplace = attn::allow_query_inplace,
                 .validate = attn::validate_forward});
  r.add_command({.cmd = CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD,
                 .tensor_auto = attn::tensor_auto_backward,
                 .bitmask = attn::bitmask_backward,
                 .validate = attn::validate_backward});
  r.add_kernels(cpu_ref(types::kFloat), {{CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, attn::forward_ref},
                                         {CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD, attn::backward_ref}});
  attn::register_cpu_opt(r);
}

}  // namespace nnc
