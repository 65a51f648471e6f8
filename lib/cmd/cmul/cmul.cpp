// CMUL: complex multiplication, the last axis holding (real, imaginary)
// pairs: c[..., 2j] + i c[..., 2j + 1] = (a[..., 2j] + i a[..., 2j + 1]) *
// (b[..., 2j] + i b[..., 2j + 1]).
//   Forward inputs |a|b|, outputs |c|: one floating-point type; a and b
//     broadcast to c aligned at their last axes (each axis 1 or c's), except
//     the last, an even extent all three share (rotary embeddings: x
//     [B, T, H, D] times [1, T, 1, D]).
//   Backward inputs |g|a|b|, outputs |da|db| (either may be NULL; g NULL
//     reads as ones): da = g * conj(b), db = g * conj(a), each summed over the
//     axes its operand broadcasts along.
// Shapes, bitmasks and in-place rules are libnnc's: c is the broadcast of a
// and b; the backward's outputs take the forward inputs' shapes (inputs 1
// and 2); c may share a's memory (input 0 with output 0).
#include "cmd/cmul/cmul.hpp"

#include "cmd/common/null_is_ones.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace cmul {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// `t` broadcasts to `full` (aligned at the last axes) with the same, even, last axis.
void check_operand(const char* name, const char* role, const ccv_nnc_tensor_t* t, const int* full, int type) {
  NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == type, "%s: %s is %s but the others are %s", name, role, dt(t),
            datatype_name(type));
  const int n = nd_of(full), nt = nd_of(t->info.dim);
  bool ok = nt <= n && t->info.dim[nt - 1] == full[n - 1];
  for (int i = 0; i < nt && ok; i++) {
    const int d = t->info.dim[nt - 1 - i], f = full[n - 1 - i];
    ok = d == 1 || d == f;
  }
  int shown[kMaxDim] = {};
  for (int i = 0; i < n; i++) shown[i] = full[i];
  NNC_CHECK(ok, "%s: %s is %s, which does not broadcast to %s with the same last axis", name, role,
            shape_string(t->info.dim).c_str(), shape_string(shown).c_str());
}

void check_pairs(const char* name, const int* full) {
  const int n = nd_of(full);
  NNC_CHECK(n >= 1 && full[n - 1] % 2 == 0, "%s: the last axis (%d) must hold (real, imaginary) pairs: even", name,
            n >= 1 ? full[n - 1] : 0);
}

void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CMUL_FORWARD";
  NNC_CHECK(input_size == 2 && output_size == 1, "%s: takes inputs |a|b| and output |c| (got %d inputs, %d outputs)",
            name, input_size, output_size);
  NNC_CHECK(inputs[0] && inputs[1] && outputs[0], "%s: a, b (inputs 0, 1) and c (output 0) are required", name);
  const int type = CCV_GET_DATA_TYPE(outputs[0]->info.datatype);
  NNC_CHECK(type & types::kFloat, "%s: c is %s; it takes 16F, 16BF, 32F and 64F", name, dt(outputs[0]));
  int full[kMaxDim];
  broadcast_dims(inputs[0]->info.dim, inputs[1]->info.dim, full);
  NNC_CHECK(same_shape(full, outputs[0]->info.dim), "%s: a %s and b %s make %s, but c is %s", name,
            shape_string(inputs[0]->info.dim).c_str(), shape_string(inputs[1]->info.dim).c_str(),
            shape_string(full).c_str(), shape_string(outputs[0]->info.dim).c_str());
  check_pairs(name, full);
  check_operand(name, "a", inputs[0], full, type);
  check_operand(name, "b", inputs[1], full, type);
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CMUL_BACKWARD";
  NNC_CHECK(input_size >= 3 && input_size <= 4 && output_size >= 1 && output_size <= 2,
            "%s: takes inputs |g|a|b| and outputs |da|db| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  ccv_nnc_tensor_t *g = inputs[0], *a = inputs[1], *b = inputs[2];
  ccv_nnc_tensor_t *da = outputs[0], *db = output_size > 1 ? outputs[1] : nullptr;
  NNC_CHECK(da || db, "%s: every output is NULL", name);
  NNC_CHECK(!da || b, "%s: da needs b (input 2)", name);
  NNC_CHECK(!db || a, "%s: db needs a (input 1)", name);
  NNC_CHECK(a || g, "%s: needs a (input 1) or g (input 0) for the shape", name);
  const ccv_nnc_tensor_t* any = g ? g : a;
  const int type = CCV_GET_DATA_TYPE(any->info.datatype);
  NNC_CHECK(type & types::kFloat, "%s: %s is %s; it takes 16F, 16BF, 32F and 64F", name, g ? "g" : "a", dt(any));
  int full[kMaxDim];
  broadcast_dims(a ? a->info.dim : g->info.dim, b ? b->info.dim : any->info.dim, full);
  if (g) {
    NNC_CHECK(same_shape(full, g->info.dim), "%s: a and b make %s but g is %s", name, shape_string(full).c_str(),
              shape_string(g->info.dim).c_str());
    check_operand(name, "g", g, full, type);
  }
  check_pairs(name, full);
  if (a) check_operand(name, "a", a, full, type);
  if (b) check_operand(name, "b", b, full, type);
  if (da) {
    NNC_CHECK(a ? same_shape(da->info.dim, a->info.dim) : true, "%s: da is %s but a is %s", name,
              shape_string(da->info.dim).c_str(), shape_string(a->info.dim).c_str());
    check_operand(name, "da", da, full, type);
  }
  if (db) {
    NNC_CHECK(same_shape(db->info.dim, b->info.dim), "%s: db is %s but b is %s", name,
              shape_string(db->info.dim).c_str(), shape_string(b->info.dim).c_str());
    check_operand(name, "db", db, full, type);
  }
}

void forward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2 || output_size < 1) return;
  outputs[0] = inputs[0];
  broadcast_dims(inputs[0].dim, inputs[1].dim, outputs[0].dim);
}

// Output i takes forward input i's parameters (input 1 + i).
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && 1 + i < input_size; i++) outputs[i] = inputs[1 + i];
}

bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return (word0(inputs, isz) & 3u) == 3u && word0(outputs, osz) == 1u;
}

// Both gradients need g, a and b; da alone g and b; db alone g and a.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  const uint64_t in = word0(inputs, isz), out = word0(outputs, osz);
  return ((in & 7u) == 7u && out == 3u) || ((in & 5u) == 5u && out == 1u) || ((in & 3u) == 3u && out == 2u);
}

bool same_position(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == output_idx;
}

// g's shape when it is NULL: the broadcast of a and b (either may stand alone).
bool ones_shape(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const*, int,
                ccv_nnc_tensor_param_t* g) {
  const ccv_nnc_tensor_t* a = input_size > 1 ? inputs[1] : nullptr;
  const ccv_nnc_tensor_t* b = input_size > 2 ? inputs[2] : nullptr;
  if (!a && !b) return false;
  *g = normalized_params((a ? a : b)->info);
  g->type = CCV_TENSOR_CPU_MEMORY;
  broadcast_dims((a ? a : b)->info.dim, (b ? b : a)->info.dim, g->dim);
  return true;
}

}  // namespace

}  // namespace cmul

void register_cmul(Registry& r) {
  using namespace cmul;
  r.add_command({.cmd = CCV_NNC_CMUL_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .allow_inplace = same_position, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_CMUL_BACKWARD, .attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kFloat), {{CCV_NNC_CMUL_FORWARD, forward_ref},
                                         {CCV_NNC_CMUL_BACKWARD, null_is_ones<backward_ref, ones_shape>}});
}

}  // namespace nnc
