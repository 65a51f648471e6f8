// The broadcasting BLAS commands: ADD, MUL and SCALAR_MUL, forward and backward.
//
// Broadcasting is libnnc's (ccv_nnc_tensor_view_get_broadcast_dim /
// _check_broadcast_dim): shapes are aligned at their last dimension, a missing
// leading dimension counts as 1, and each dimension pair is equal or one of
// them is 1. The output has the larger nd and the larger size of each pair;
// formats are not consulted, so a per-channel vector over NCHW is 1xCx1x1 (or
// Cx1x1) and over NHWC C (or 1x1x1xC). All tensors of one call share one data
// type (16F, 16BF, 32F, 64F); any format, any strides.
//
// ADD_FORWARD  |a|b| -> |y|, y = p a + q b with p = blas.a[0], q = blas.a[1]
//   (CMD_ADD_FORWARD(p, q)).
// ADD_BACKWARD |g|a|b|y| -> |da|db|, da = p * g summed over the dimensions a
//   was broadcast along (shaped as a), db likewise with q. Reads only g: the
//   shapes come from the outputs themselves (each must broadcast to g's shape,
//   and match a / b when those are given). a, b, y may be NULL or left off.
// MUL_FORWARD  |a|b| -> |y|, y = p a b with p = blas.a[0] (CMD_MUL_FORWARD(p)).
// MUL_BACKWARD |g|a|b|y| -> |da|db|, da = p * sum over a's broadcast
//   dimensions of g b, db = p * sum over b's of g a. Reads g, b for da and a
//   for db; y is never read.
// SCALAR_MUL_FORWARD  |x| -> |y|, y = a x with a = blas.a[0].
// SCALAR_MUL_BACKWARD |g|x|y| -> |dx|, dx = a g. Reads only g.
//
// Backward: a NULL g reads as ones (CCV_NNC_CMD_ATTR_NULL_IS_ONES) of the
// shape the other tensors broadcast to. In place (libnnc's rule): y may be a
// (the input at its position); the backwards declare no pairs, though the
// kernels also run with y over a full-shaped b or dx over g. Bitmasks are
// libnnc's patterns.
#include "cmd/blas/elementwise.hpp"

#include <string>

#include "cmd/common/null_is_ones.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::blas_ew {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
std::string dims(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }

// "ADD_BACKWARD" for messages (no string is built on the passing path).
struct Name {
  const char* s;
  const char* c_str() const { return s; }
};
Name name_of(uint32_t cmd) {
  const bool back = cmd & 1u;
  switch (cmd & ~1u) {
    case CCV_NNC_ADD_FORWARD:
      return {back ? "ADD_BACKWARD" : "ADD_FORWARD"};
    case CCV_NNC_MUL_FORWARD:
      return {back ? "MUL_BACKWARD" : "MUL_FORWARD"};
    default:
      return {back ? "SCALAR_MUL_BACKWARD" : "SCALAR_MUL_FORWARD"};
  }
}
bool is_scalar_mul(uint32_t cmd) { return (cmd & ~1u) == CCV_NNC_SCALAR_MUL_FORWARD; }

void check_type(const Name& c, const char* what, const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* ref) {
  NNC_CHECK(type_of(t) & types::kFloat, "%s: %s is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), what, dt(t));
  NNC_CHECK(type_of(t) == type_of(ref), "%s: %s is %s but the others are %s; all take one data type", c.c_str(), what,
            dt(t), dt(ref));
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Name c = name_of(cmd.cmd);
  const bool scalar = is_scalar_mul(cmd.cmd);
  NNC_CHECK(input_size == (scalar ? 1 : 2), "%s: takes inputs %s (got %d inputs)", c.c_str(), scalar ? "|x|" : "|a|b|",
            input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |y| (got %d outputs)", c.c_str(), output_size);
  const ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(y, "%s: the output y is NULL", c.c_str());
  for (int i = 0; i < input_size; i++) {
    NNC_CHECK(inputs[i], "%s: input %d is NULL", c.c_str(), i);
    check_type(c, i == 0 ? (scalar ? "x" : "a") : "b", inputs[i], y);
  }
  check_type(c, "y", y, y);
  if (scalar) {
    NNC_CHECK(same_shape(inputs[0]->info.dim, y->info.dim), "%s: x is %s but y is %s; they must match", c.c_str(),
              dims(inputs[0]).c_str(), dims(y).c_str());
    return;
  }
  int out[kMaxDim + 1] = {};
  NNC_CHECK(broadcast_dims(inputs[0]->info.dim, inputs[1]->info.dim, out),
            "%s: a is %s and b is %s; they do not broadcast (aligned at the last dimension, each pair equal or 1)",
            c.c_str(), dims(inputs[0]).c_str(), dims(inputs[1]).c_str());
  NNC_CHECK(same_shape(out, y->info.dim), "%s: a %s and b %s broadcast to %s but y is %s", c.c_str(),
            dims(inputs[0]).c_str(), dims(inputs[1]).c_str(), shape_string(out).c_str(), dims(y).c_str());
}

}  // namespace

// A NULL g (CCV_NNC_CMD_ATTR_NULL_IS_ONES): its shape is the broadcast of
// every other tensor given (each gradient, a, b and y broadcast to it), its
// type and format theirs.
bool implicit_g(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size,
                ccv_nnc_tensor_param_t* g) {
  const ccv_nnc_tensor_t* first = nullptr;
  int shape[kMaxDim + 1] = {};
  auto take = [&](const ccv_nnc_tensor_t* t) {
    if (!t) return true;
    if (!first) {
      first = t;
      for (int i = 0; i < kMaxDim; i++) shape[i] = t->info.dim[i];
      shape[nd_of(t->info.dim)] = 0;
      return true;
    }
    int out[kMaxDim + 1] = {};
    if (!broadcast_dims(shape, t->info.dim, out)) return false;
    for (int i = 0; i <= kMaxDim; i++) shape[i] = out[i];
    return true;
  };
  for (int j = 0; j < output_size; j++)
    if (!take(outputs[j])) return false;
  for (int i = 1; i < input_size; i++)
    if (!take(inputs[i])) return false;
  if (!first) return false;
  *g = normalized_params(first->info);
  g->type = CCV_TENSOR_CPU_MEMORY;
  for (int i = 0; i < kMaxDim; i++) g->dim[i] = shape[i];
  return true;
}

namespace {

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Name c = name_of(cmd.cmd);
  const bool scalar = is_scalar_mul(cmd.cmd);
  const int n = scalar ? 1 : 2;
  NNC_CHECK(input_size >= 1 && input_size <= n + 2, "%s: takes inputs %s (got %d inputs)", c.c_str(),
            scalar ? "|g|x|y|" : "|g|a|b|y|", input_size);
  NNC_CHECK(output_size >= 1 && output_size <= n, "%s: takes outputs %s (got %d outputs)", c.c_str(),
            scalar ? "|dx|" : "|da|db|", output_size);
  // A NULL g reads as ones of the shape the other tensors broadcast to.
  ccv_nnc_tensor_t ones_g{};
  const ccv_nnc_tensor_t* g = inputs[0];
  if (!g) {
    NNC_CHECK(implicit_g(inputs, input_size, outputs, output_size, &ones_g.info),
              "%s: the gradient g (input 0) is NULL (read as ones), but the other tensors give no shape it could have",
              c.c_str());
    g = &ones_g;
  }
  check_type(c, "g", g, g);
  for (int i = 1; i < input_size; i++)
    if (inputs[i]) check_type(c, i == n + 1 ? "y" : "a forward input", inputs[i], g);
  if (input_size > n + 1 && inputs[n + 1])
    NNC_CHECK(same_shape(inputs[n + 1]->info.dim, g->info.dim), "%s: y is %s but g is %s; they must match", c.c_str(),
              dims(inputs[n + 1]).c_str(), dims(g).c_str());
  bool any = false;
  const bool mul = (cmd.cmd & ~1u) == CCV_NNC_MUL_FORWARD;
  for (int j = 0; j < output_size; j++) {
    const ccv_nnc_tensor_t* d = outputs[j];
    if (!d) continue;
    any = true;
    const char* dn = scalar ? "dx" : j == 0 ? "da" : "db";
    check_type(c, dn, d, g);
    if (scalar) {
      NNC_CHECK(same_shape(d->info.dim, g->info.dim), "%s: dx is %s but g is %s; they must match", c.c_str(),
                dims(d).c_str(), dims(g).c_str());
      continue;
    }
    NNC_CHECK(reduces_to(d->info.dim, g->info.dim),
              "%s: %s is %s, which does not broadcast to g %s (aligned at the last dimension, each equal or 1)",
              c.c_str(), dn, dims(d).c_str(), dims(g).c_str());
    const ccv_nnc_tensor_t* x = 1 + j < input_size ? inputs[1 + j] : nullptr;
    if (x)
      NNC_CHECK(same_shape(d->info.dim, x->info.dim), "%s: %s is %s but %s (input %d) is %s; they must match", c.c_str(),
                dn, dims(d).c_str(), j == 0 ? "a" : "b", 1 + j, dims(x).c_str());
    if (mul) {
      // da needs b, db needs a.
      const int other = 2 - j;
      const ccv_nnc_tensor_t* o = other < input_size ? inputs[other] : nullptr;
      NNC_CHECK(o, "%s: %s needs %s (input %d), which is %s", c.c_str(), dn, other == 2 ? "b" : "a", other,
                other < input_size ? "NULL" : "missing");
      NNC_CHECK(reduces_to(o->info.dim, g->info.dim), "%s: %s (input %d) is %s, which does not broadcast to g %s",
                c.c_str(), other == 2 ? "b" : "a", other, dims(o).c_str(), dims(g).c_str());
    }
  }
  NNC_CHECK(any, "%s: every output is NULL", c.c_str());
}

// The bitmasks are libnnc's patterns, bit for bit (the first word only).
// ADD / MUL forward: a and b -> y.
bool add_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* i, int ib, const uint64_t* o, int ob) {
  return ib > 0 && ob > 0 && (i[0] & 3u) == 3u && o[0] == 1u;
}
// SCALAR_MUL forward: x -> y.
bool scalar_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* i, int ib, const uint64_t* o,
                            int ob) {
  return ib > 0 && ob > 0 && (i[0] & 1u) == 1u && o[0] == 1u;
}
// ADD backward: g -> da, db or both.
bool add_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* i, int ib, const uint64_t* o, int ob) {
  return ib > 0 && ob > 0 && (i[0] & 1u) == 1u && (o[0] == 3u || o[0] == 1u || o[0] == 2u);
}
// SCALAR_MUL backward: g -> dx.
bool scalar_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* i, int ib, const uint64_t* o,
                             int ob) {
  return ib > 0 && ob > 0 && (i[0] & 1u) == 1u && o[0] == 1u;
}
// MUL backward: g, a, b for both; g and b for da; g and a for db.
bool mul_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* i, int ib, const uint64_t* o, int ob) {
  if (ib < 1 || ob < 1) return false;
  if (o[0] == 3u) return (i[0] & 7u) == 7u;
  if (o[0] == 1u) return (i[0] & 5u) == 5u;
  if (o[0] == 2u) return (i[0] & 3u) == 3u;
  return false;
}

// libnnc's rule: y is a's parameters (type, format) with the broadcast shape.
void forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                    const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  if (input_size < 2) return;
  int out[kMaxDim + 1] = {};
  if (!broadcast_dims(inputs[0].dim, inputs[1].dim, out)) return;
  for (int i = 0; i < kMaxDim; i++) outputs[0].dim[i] = out[i];
}

// da / db take a's / b's shape; g's where those are not given.
void backward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                     const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  for (int j = 0; j < output_size; j++)
    outputs[j] = (1 + j < input_size && inputs[1 + j].dim[0] > 0) ? inputs[1 + j] : inputs[0];
}

// libnnc's rule: an output may share the memory of the input at its own
// position only (y with a; cuDNN's OpTensor cannot write over b alone).
bool forward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == output_idx;
}

bool implicit_g_shape(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                      int output_size, ccv_nnc_tensor_param_t* g) {
  return implicit_g(inputs, input_size, outputs, output_size, g);
}

}  // namespace

bool broadcast_dims(const int* a, const int* b, int* out) {
  const int na = nd_of(a), nb = nd_of(b), n = na > nb ? na : nb;
  for (int i = 0; i < kMaxDim; i++) out[i] = 0;
  for (int k = 0; k < n; k++) {  // k-th dimension from the end
    const int x = k < na ? a[na - 1 - k] : 1, y = k < nb ? b[nb - 1 - k] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[n - 1 - k] = x > y ? x : y;
  }
  return true;
}

bool reduces_to(const int* d, const int* full) {
  const int nd = nd_of(d), nf = nd_of(full);
  if (nd > nf) return false;
  for (int k = 0; k < nd; k++) {
    const int x = d[nd - 1 - k];
    if (x != 1 && x != full[nf - 1 - k]) return false;
  }
  return true;
}

void register_elementwise(Registry& r) {
  for (uint32_t fwd : {CCV_NNC_ADD_FORWARD, CCV_NNC_MUL_FORWARD, CCV_NNC_SCALAR_MUL_FORWARD}) {
    const bool scalar = fwd == CCV_NNC_SCALAR_MUL_FORWARD;
    r.add_command({.cmd = fwd, .tensor_auto = forward_shapes, .bitmask = scalar ? scalar_forward_bitmask : add_forward_bitmask, .allow_inplace = forward_inplace, .validate = validate_forward});
    CommandInfo b;
    b.cmd = fwd | 1u;
    b.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
    b.tensor_auto = backward_shapes;
    b.bitmask = fwd == CCV_NNC_MUL_FORWARD ? mul_backward_bitmask : scalar ? scalar_backward_bitmask : add_backward_bitmask;
    b.validate = validate_backward;  // no in-place pair, as in libnnc
    r.add_command(b);

    r.add_kernels(cpu_ref(types::kFloat), {{fwd, forward_ref}, {fwd | 1u, null_is_ones<backward_ref, implicit_g_shape>}});
    r.add_kernels(cpu_opt(types::kWide), {{fwd, forward_opt}, {fwd | 1u, null_is_ones<backward_opt, implicit_g_shape>}});
  }
}

}  // namespace nnc::blas_ew
