// The element-wise math commands: EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, CLAMP,
// MIN and MAX, forward and backward. None broadcasts (ADD and MUL do): every
// tensor of one call has the output's shape and data type (16F, 16BF, 32F or
// 64F). Forward outputs may be any of the inputs (in place).
//
// Backward commands take libnnc's layout |g|forward inputs|forward outputs|
// -> |gradients of the forward inputs|; g is required, NULL outputs are not
// computed, and the trailing forward output may be left off the input list
// when it is not needed. Each lists what it reads; the rest may be NULL.
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

#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::ew {

namespace {

constexpr int kAllFormats = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW | CCV_TENSOR_FORMAT_CHWN;
constexpr int kFloatTypes = CCV_32F | CCV_64F | CCV_16F | CCV_16BF;

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
  NNC_CHECK(type_of(y) & kFloatTypes, "%s: y is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(y));
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
  const ccv_nnc_tensor_t* g = inputs[0];
  NNC_CHECK(g, "%s: the gradient g (input 0) is NULL", c.c_str());
  NNC_CHECK(type_of(g) & kFloatTypes, "%s: g is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(g));
  bool any = false;
  for (int j = 0; j < output_size; j++) {
    if (!outputs[j]) continue;
    any = true;
    check_like(c, "output", j, outputs[j], "g", g);
  }
  NNC_CHECK(any, "%s: every output is NULL", c.c_str());
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

bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs, int ib,
                     const uint64_t* outputs, int ob, Op op) {
  const int n = forward_inputs(op);
  if (output_size != 1 || !bit(outputs, ob, 0)) return false;
  if (n < 0 ? input_size < 1 : input_size != n) return false;
  for (int i = 0; i < input_size; i++)
    if (!bit(inputs, ib, i) && !(op == Op::kDiv && i == 0)) return false;
  return true;
}

bool backward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs, int ib,
                      const uint64_t* outputs, int ob, Op op) {
  int n = forward_inputs(op);
  if (n < 0) n = output_size;
  if (output_size < 1 || output_size > n || input_size < 1 + n || input_size > 2 + n) return false;
  auto wanted = [&](int j) { return bit(outputs, ob, j); };
  bool any = false;
  for (int j = 0; j < output_size; j++) any = any || wanted(j);
  if (!any) return false;
  for (int i = 0; i <= n + 1; i++)
    if (reads(op, n, i, wanted) && (i >= input_size || !bit(inputs, ib, i))) return false;
  return true;
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

// The output takes the shape of the last input given (EWDIV's a may be NULL).
void forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                    const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  int k = 0;
  for (int i = 0; i < input_size; i++)
    if (inputs[i].dim[0] > 0) k = i;
  outputs[0] = inputs[k];
}

// dx_i takes x_i's shape, or g's where x_i is not given.
void backward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                     const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  for (int j = 0; j < output_size; j++)
    outputs[j] = (1 + j < input_size && inputs[1 + j].dim[0] > 0) ? inputs[1 + j] : inputs[0];
}

// Unary backward: dx may share g's (or the forward tensors') memory, each
// element being read before it is written at the same index.
bool unary_backward_inplace(const ccv_nnc_cmd_param_t&, int, int, int, int) { return true; }

template <Op OP>
void add(Registry& r, uint32_t forward) {
  CommandInfo f;
  f.cmd = forward;
  f.tensor_auto = forward_shapes;
  f.bitmask = forward_bitmask_t<OP>;
  f.allow_inplace = inplace::always;
  f.validate = validate_forward;
  r.add_command(f);
  CommandInfo b;
  b.cmd = forward | 1;
  b.tensor_auto = backward_shapes;
  b.bitmask = backward_bitmask_t<OP>;
  if (forward_inputs(OP) == 1) b.allow_inplace = unary_backward_inplace;
  b.validate = validate_backward;
  r.add_command(b);

  Kernel k;
  k.tensor_formats = kAllFormats;
  k.tensor_memory = CCV_TENSOR_CPU_MEMORY;
  k.backend = CCV_NNC_BACKEND_CPU_REF;
  k.tensor_datatypes = kFloatTypes;
  r.add_kernels(k, {{forward, math_forward_ref}, {forward | 1u, math_backward_ref}});
  k.backend = CCV_NNC_BACKEND_CPU_OPT;
  k.tensor_datatypes = CCV_32F | CCV_64F;
  r.add_kernels(k, {{forward, math_forward_opt}, {forward | 1u, math_backward_opt}});
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

bool overlaps(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  if (!a || !b) return false;
  auto range = [](const ccv_nnc_tensor_t* t, const unsigned char*& lo, const unsigned char*& hi) {
    const Layout l = layout_of(t);
    int64_t span = 0;
    for (int i = 0; i < l.nd; i++)
      span += static_cast<int64_t>(l.dim[i] - 1) * (l.stride[i] < 0 ? -l.stride[i] : l.stride[i]);
    lo = l.data;
    hi = l.data + (span + 1) * static_cast<int64_t>(l.element_size);
  };
  const unsigned char *alo, *ahi, *blo, *bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
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
