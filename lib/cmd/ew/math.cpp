// The element-wise math commands: EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP,
// MIN and MAX, forward and backward. None broadcasts (ADD and MUL do): every
// tensor of one call has the output's shape and data type (16F, 16BF, 32F or
// 64F). Forward outputs may be any of the inputs (in place).
//
// Backward commands take libnnc's layout |g|forward inputs|forward outputs|
// -> |gradients of the forward inputs|; a NULL g reads as ones
// (CCV_NNC_CMD_ATTR_NULL_IS_ONES, as EWDIV's a does forward), NULL outputs
// are not computed, and the trailing forward output may be left off the
// input list when it is not needed. Each lists what it reads; the rest may be
// NULL. Shapes, bitmasks and in-place pairs are libnnc's: a forward output
// takes input 0's parameters (EWDIV's: b's), every gradient takes g's; the
// bitmasks are libnnc's exact patterns (which may ask for more than the
// kernels read: EWPROD's backward wants every x_i and y, MIN / MAX's both
// gradients); forwards and the backwards of EWEXP, EWLOG, EWSQRT, CLAMP,
// MIN and MAX may run in place, EWPROD's and EWDIV's backwards declare no
// pair.
//
// EWPROD_FORWARD  |x_1..x_n| -> |y|, y = x_1 x_2 ... x_n (n >= 1).
// EWPROD_BACKWARD |g|x_1..x_n|y| -> |dx_1..dx_n| (n = the number of outputs),
//   dx_i = g * prod_{j != i} x_j: exact where some x is 0 (no division by y).
//   Reads g and, for each dx_i asked for, every x_j with j != i.
// EWDIV_FORWARD   |a|b| -> |y|, y = a / b; a NULL a reads as 1 (y = 1 / b).
// EWDIV_BACKWARD  |g|a|b|y| -> |da|db|, da = g / b, db = -g y / b.
//   Reads g, b, and y for db; never a (so it works for the 1 / b form).
// EWEXP_FORWARD   |x| -> |y|, y = exp(x).
// EWEXP_BACKWARD  |g|x|y| -> |dx|, dx = g y. Reads g and y.
// EWLOG_FORWARD   |x| -> |y|, y = log(x) (natural).
// EWLOG_BACKWARD  |g|x|y| -> |dx|, dx = g / x. Reads g and x.
// EWSQRT_FORWARD  |x| -> |y|, y = sqrt(x).
// EWSQRT_BACKWARD |g|x|y| -> |dx|, dx = g / (2 y). Reads g and y.
// CLAMP_FORWARD   |x| -> |y|, y = min(max(x, clamp.min), clamp.max); a NaN
//   bound is no bound; a NaN x stays NaN.
// CLAMP_BACKWARD  |g|x|y| -> |dx|, dx = g where y is strictly inside the
//   bounds that exist, 0 where it sits on one (x at or beyond it). Reads g, y.
// MIN_FORWARD / MAX_FORWARD |a|b| -> |y|, y = min(a, b) / max(a, b); a NaN in
//   either gives NaN.
// MIN_BACKWARD / MAX_BACKWARD |g|a|b|y| -> |da|db|: g goes to the operand that
//   was picked, half to each on a tie (so da + db = g); where a is NaN, all of
//   g goes to a, where only b is NaN, to b. Reads g, a and b.
#include "cmd/ew/math.hpp"

#include <string>

#include "cmd/common/null_is_ones.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {


struct Entry {
  uint32_t forward;
  Op op;
  const char* name;
  const char* names[2];  // forward, backward (for messages, without building strings on every call)
};

constexpr Entry kEntries[] = {
    {CCV_NNC_EWPROD_FORWARD, Op::kProd, "EWPROD", {"EWPROD_FORWARD", "EWPROD_BACKWARD"}},
    {CCV_NNC_EWDIV_FORWARD, Op::kDiv, "EWDIV", {"EWDIV_FORWARD", "EWDIV_BACKWARD"}},
    {CCV_NNC_EWEXP_FORWARD, Op::kExp, "EWEXP", {"EWEXP_FORWARD", "EWEXP_BACKWARD"}},
    {CCV_NNC_EWLOG_FORWARD, Op::kLog, "EWLOG", {"EWLOG_FORWARD", "EWLOG_BACKWARD"}},
    {CCV_NNC_EWSQRT_FORWARD, Op::kSqrt, "EWSQRT", {"EWSQRT_FORWARD", "EWSQRT_BACKWARD"}},
    {CCV_NNC_CLAMP_FORWARD, Op::kClamp, "CLAMP", {"CLAMP_FORWARD", "CLAMP_BACKWARD"}},
    {CCV_NNC_MIN_FORWARD, Op::kMin, "MIN", {"MIN_FORWARD", "MIN_BACKWARD"}},
    {CCV_NNC_MAX_FORWARD, Op::kMax, "MAX", {"MAX_FORWARD", "MAX_BACKWARD"}},
};

// "EWEXP_BACKWARD" for messages.
struct Name {
  const char* s;
  const char* c_str() const { return s; }
};
Name name_of(uint32_t cmd) {
  for (const Entry& e : kEntries)
    if (e.forward == (cmd & ~1u)) return {e.names[cmd & 1u]};
  return {"?"};
}

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

// Names of the inputs for messages.
const char* forward_layout(Op op) {
  switch (op) {
    case Op::kProd:
      return "|x_1..x_n|";
    case Op::kDiv:
    case Op::kMin:
    case Op::kMax:
      return "|a|b|";
    default:
      return "|x|";
  }
}
const char* backward_layout(Op op) {
  switch (op) {
    case Op::kProd:
      return "|g|x_1..x_n|y| -> |dx_1..dx_n|";
    case Op::kDiv:
    case Op::kMin:
    case Op::kMax:
      return "|g|a|b|y| -> |da|db|";
    default:
      return "|g|x|y| -> |dx|";
  }
}

void check_like(const Name& c, const char* what, int index, const ccv_nnc_tensor_t* t, const char* ref_what,
                const ccv_nnc_tensor_t* ref) {
  NNC_CHECK(type_of(t) == type_of(ref), "%s: %s %d is %s but %s is %s; all tensors take one data type", c.c_str(), what,
            index, dt(t), ref_what, dt(ref));
  NNC_CHECK(same_shape(t->info.dim, ref->info.dim),
            "%s: %s %d is %s but %s is %s; they must match (%s does not broadcast)", c.c_str(), what, index,
            shape_string(t->info.dim).c_str(), ref_what, shape_string(ref->info.dim).c_str(), c.c_str());
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Op op = op_of(cmd.cmd);
  const Name c = name_of(cmd.cmd);
  const int n = forward_inputs(op);
  if (n < 0)
    NNC_CHECK(input_size >= 1, "%s: takes inputs %s with n >= 1 (got %d inputs)", c.c_str(), forward_layout(op),
              input_size);
  else
    NNC_CHECK(input_size == n, "%s: takes inputs %s (got %d inputs)", c.c_str(), forward_layout(op), input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |y| (got %d outputs)", c.c_str(), output_size);
  const ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(y, "%s: the output y is NULL", c.c_str());
  NNC_CHECK(type_of(y) & types::kFloat, "%s: y is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(y));
  for (int i = 0; i < input_size; i++) {
    if (!inputs[i]) {
      NNC_CHECK(op == Op::kDiv && i == 0, "%s: input %d is NULL%s", c.c_str(), i,
                op == Op::kDiv ? " (only a, input 0, may be NULL: 1 / b)" : "");
      continue;
    }
    check_like(c, "input", i, inputs[i], "the output y", y);
  }
}

// Whether backward input i (g = 0, forward inputs 1..n, y = n + 1) is read
// when the outputs `wanted(j)` are computed.
template <class W>
bool reads(Op op, int n, int i, const W& wanted) {
  if (i == 0) return true;
  switch (op) {
    case Op::kProd:
      if (i > n) return false;
      for (int j = 0; j < n; j++)
        if (wanted(j) && j != i - 1) return true;
      return false;
    case Op::kDiv:
      return (i == 2 && (wanted(0) || wanted(1))) || (i == 3 && wanted(1));
    case Op::kExp:
    case Op::kSqrt:
    case Op::kClamp:
      return i == 2;
    case Op::kLog:
      return i == 1;
    case Op::kMin:
    case Op::kMax:
      return i == 1 || i == 2;
  }
  return false;
}

const char* input_name(Op op, int i, int n) {
  if (i == 0) return "g";
  if (i == n + 1) return "y";
  switch (op) {
    case Op::kProd:
      return "x_i";
    case Op::kDiv:
    case Op::kMin:
    case Op::kMax:
      return i == 1 ? "a" : "b";
    default:
      return "x";
  }
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const Op op = op_of(cmd.cmd);
  const Name c = name_of(cmd.cmd);
  int n = forward_inputs(op);
  if (n < 0) {
    NNC_CHECK(output_size >= 1, "%s: takes %s (got %d outputs)", c.c_str(), backward_layout(op), output_size);
    n = output_size;
  } else {
    NNC_CHECK(output_size >= 1 && output_size <= n, "%s: takes %s (got %d outputs)", c.c_str(), backward_layout(op),
              output_size);
  }
  NNC_CHECK(input_size >= 1 + n && input_size <= 2 + n, "%s: takes %s (got %d inputs for %d forward inputs)", c.c_str(),
            backward_layout(op), input_size, n);
  // A NULL g reads as ones of the gradients' shape and type.
  const ccv_nnc_tensor_t* first = nullptr;
  for (int j = 0; j < output_size && !first; j++) first = outputs[j];
  NNC_CHECK(first, "%s: every output is NULL", c.c_str());
  const ccv_nnc_tensor_t* g = inputs[0] ? inputs[0] : first;
  NNC_CHECK(type_of(g) & types::kFloat, "%s: g is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(g));
  for (int j = 0; j < output_size; j++)
    if (outputs[j]) check_like(c, "output", j, outputs[j], "g", g);
  auto wanted = [&](int j) { return j < output_size && outputs[j] != nullptr; };
  for (int i = 1; i <= n + 1; i++) {
    const ccv_nnc_tensor_t* t = i < input_size ? inputs[i] : nullptr;
    if (t)
      check_like(c, "input", i, t, "g", g);
    else
      NNC_CHECK(!reads(op, n, i, wanted), "%s: %s (input %d) is %s; the gradients asked for need it", c.c_str(),
                input_name(op, i, n), i, i < input_size ? "NULL" : "missing");
  }
}

}  // namespace

namespace {

// libnnc's forward patterns, bit for bit.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs, int ib,
                     const uint64_t* outputs, int ob, Op op) {
  if (ib < 1 || ob < 1) return false;
  const uint64_t in = inputs[0], out = outputs[0];
  switch (op) {
    case Op::kProd: {  // every input, as a run from the first
      int count = 0;
      return output_size == 1 && out == 1u && ones_prefix(inputs, ib, &count) && count == input_size;
    }
    case Op::kDiv:  // a may be left out (1 / b)
      return ((in & 3u) == 3u || (in & 3u) == 2u) && out == 1u;
    case Op::kMin:
    case Op::kMax:
      return (in & 3u) == 3u && out == 1u;
    default:
      return (in & 1u) == 1u && out == 1u;
  }
}

// libnnc's backward patterns over |g|x..|y|, bit for bit.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int output_size, const uint64_t* inputs, int ib,
                      const uint64_t* outputs, int ob, Op op) {
  if (ib < 1 || ob < 1) return false;
  const uint64_t in = inputs[0], out = outputs[0];
  switch (op) {
    case Op::kProd: {  // g, every x_i and y; every gradient
      int in_count = 0, out_count = 0;
      if (!ones_prefix(inputs, ib, &in_count) || !ones_prefix(outputs, ob, &out_count)) return false;
      return out_count == output_size && in_count == out_count + 2;
    }
    case Op::kDiv: {  // a (bit 1) never counts
      const uint64_t m = in & 0xdu;
      return (m == 0xdu && (out == 3u || out == 2u)) || (m == 0x5u && out == 1u);
    }
    case Op::kLog:  // g and x
      return (in & 3u) == 3u && out == 1u;
    case Op::kMin:
    case Op::kMax:  // g, a, b; both gradients
      return (in & 7u) == 7u && out == 3u;
    default:  // EXP, SQRT, CLAMP: g and y
      return (in & 5u) == 5u && out == 1u;
  }
}

template <Op OP>
bool forward_bitmask_t(const ccv_nnc_cmd_param_t& p, int is, int os, const uint64_t* i, int ib, const uint64_t* o,
                       int ob) {
  return forward_bitmask(p, is, os, i, ib, o, ob, OP);
}
template <Op OP>
bool backward_bitmask_t(const ccv_nnc_cmd_param_t& p, int is, int os, const uint64_t* i, int ib, const uint64_t* o,
                        int ob) {
  return backward_bitmask(p, is, os, i, ib, o, ob, OP);
}

// libnnc's rule: the output takes input 0's parameters (forward from
// inputs); EWDIV's takes b's (its a may be NULL).
void forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                    const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  for (int i = 0; i < output_size && i < input_size; i++) outputs[i] = inputs[i];
}
void div_forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                        const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2) return;
  for (int i = 0; i < output_size; i++) outputs[i] = inputs[1];
}

template <Op OP>
void add(Registry& r, uint32_t forward) {
  CommandInfo f;
  f.cmd = forward;
  if (OP == Op::kDiv) f.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;  // a NULL a is 1
  f.tensor_auto = OP == Op::kDiv ? div_forward_shapes : forward_shapes;
  f.bitmask = forward_bitmask_t<OP>;
  f.allow_inplace = inplace::always;
  f.validate = validate_forward;
  r.add_command(f);
  CommandInfo b;
  b.cmd = forward | 1;
  b.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  b.tensor_auto = shape::same_as_first_input;  // every gradient is g's shape
  b.bitmask = backward_bitmask_t<OP>;
  // Each kernel reads every operand at an index before writing there (the
  // optimised one hands overlapping two-gradient calls to the reference).
  if (OP != Op::kProd && OP != Op::kDiv) b.allow_inplace = inplace::always;
  b.validate = validate_backward;
  r.add_command(b);

  r.add_kernels(cpu_ref(types::kFloat),
                {{forward, math_forward_ref}, {forward | 1u, null_is_ones<math_backward_ref, shape_of_first_output>}});
  r.add_kernels(cpu_opt(types::kWide),
                {{forward, math_forward_opt}, {forward | 1u, null_is_ones<math_backward_opt, shape_of_first_output>}});
}

}  // namespace

Op op_of(uint32_t cmd) {
  for (const Entry& e : kEntries)
    if (e.forward == (cmd & ~1u)) return e.op;
  return Op::kProd;
}

const char* op_name(Op op) {
  for (const Entry& e : kEntries)
    if (e.op == op) return e.name;
  return "?";
}

int forward_inputs(Op op) {
  switch (op) {
    case Op::kProd:
      return -1;
    case Op::kDiv:
    case Op::kMin:
    case Op::kMax:
      return 2;
    default:
      return 1;
  }
}

void register_math(Registry& r) {
  add<Op::kProd>(r, CCV_NNC_EWPROD_FORWARD);
  add<Op::kDiv>(r, CCV_NNC_EWDIV_FORWARD);
  add<Op::kExp>(r, CCV_NNC_EWEXP_FORWARD);
  add<Op::kLog>(r, CCV_NNC_EWLOG_FORWARD);
  add<Op::kSqrt>(r, CCV_NNC_EWSQRT_FORWARD);
  add<Op::kClamp>(r, CCV_NNC_CLAMP_FORWARD);
  add<Op::kMin>(r, CCV_NNC_MIN_FORWARD);
  add<Op::kMax>(r, CCV_NNC_MAX_FORWARD);
}

}  // namespace nnc::ew
