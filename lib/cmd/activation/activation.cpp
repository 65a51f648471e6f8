// The activation family: RELU, LEAKY_RELU, SIGMOID, TANH, GELU, SWISH,
// forward and backward, element by element.
//
// FORWARD: |x| -> |y|, y of x's shape and type (the output may be x itself).
//   RELU        y = max(x, 0)                (NaN stays NaN)
//   LEAKY_RELU  y = x > 0 ? x : s x          (s = leaky_relu.negative_slope)
//   SIGMOID     y = 1 / (1 + exp(-x))
//   TANH        y = tanh x
//   GELU        y = x Phi(x), Phi the standard normal CDF (gelu.tanh == 0,
//               the exact erf form), or y = x (1 + tanh u) / 2 with
//               u = sqrt(2 / pi) (x + 0.044715 x^3) (gelu.tanh != 0)
//   SWISH       y = x sigmoid(x)
//   (GELU and SWISH of -inf are NaN, -inf times 0, as in PyTorch.)
// BACKWARD (libnnc's layout): |g|x|y| -> |dx|, dx = g dy/dx; the list may end
//   after x (|g|x|), and x or y may be NULL where the command does not need
//   it. g is required, except for SIGMOID and TANH, whose NULL g reads as
//   ones (CCV_NNC_CMD_ATTR_NULL_IS_ONES, as in libnnc). What each reads:
//   RELU        y (dx = y > 0 ? g : 0), or x when y is NULL (the same test);
//               at 0 the derivative is taken as 0, as PyTorch does.
//   LEAKY_RELU  x (dx = x > 0 ? g : s g), or y when x is NULL and s >= 0
//               (then y > 0 exactly where x > 0; libnnc's |g|0|y|).
//   SIGMOID     y (dx = g y (1 - y)), or x when y is NULL (y recomputed).
//   TANH        y (dx = g (1 - y) (1 + y)), or x when y is NULL.
//   GELU        x (dx = g (Phi(x) + x phi(x)) exact; the derivative of the
//               tanh form otherwise, taken as its limit 0 or 1 beyond |x| = 20).
//   SWISH       x (dx = g s (1 + x (1 - s)), s = sigmoid(x)).
//   For GELU and SWISH, y is optional; when given it must be this command's
//   forward output of x: CPU_OPT then reads Phi(x), sigmoid(2u) or sigmoid(x)
//   as y / x (a division instead of an exp and a division), CPU_REF always
//   recomputes from x.
// Contract (libnnc's): the bitmasks are its exact patterns, which name what
//   libnnc reads (RELU, LEAKY_RELU, SIGMOID, TANH backward: g and y; GELU,
//   SWISH: g and x), not every form the kernels accept; y and dx may share
//   only x's and g's memory (input 0 with output 0); shapes: y is x's, dx
//   is g's (SIGMOID's and TANH's: y's).
// Types: 16F, 16BF, 32F, 64F, every tensor of one command in the same type and
// shape; any format, any view. Backends: CPU_REF (double inside, any layout),
// CPU_OPT (fp32 with a unit-stride innermost dimension: vector loops of
// core/vmath.hpp, AVX-512 / AVX2 / scalar chosen at run time, threaded from
// 32K or 64K elements, large outputs streamed past the caches; SIGMOID / TANH
// backward only when y is given).
#include "cmd/activation/activation.hpp"

#include <string>

#include "cmd/common/null_is_ones.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace activation {

Op op_of(const ccv_nnc_cmd_t& cmd) {
  switch (cmd.cmd & ~1u) {
    case CCV_NNC_RELU_FORWARD:
      return kRelu;
    case CCV_NNC_LEAKY_RELU_FORWARD:
      return kLeakyRelu;
    case CCV_NNC_SIGMOID_FORWARD:
      return kSigmoid;
    case CCV_NNC_TANH_FORWARD:
      return kTanh;
    case CCV_NNC_GELU_FORWARD:
      return cmd.info.gelu.tanh ? kGeluTanh : kGelu;
    case CCV_NNC_SWISH_FORWARD:
      return kSwish;
    default:
      return kOpCount;
  }
}

bool backward_uses_output(Op op) { return op == kRelu || op == kSigmoid || op == kTanh; }

namespace {


const char* name_of(uint32_t cmd) {
  switch (cmd & ~1u) {
    case CCV_NNC_RELU_FORWARD:
      return "RELU";
    case CCV_NNC_LEAKY_RELU_FORWARD:
      return "LEAKY_RELU";
    case CCV_NNC_SIGMOID_FORWARD:
      return "SIGMOID";
    case CCV_NNC_TANH_FORWARD:
      return "TANH";
    case CCV_NNC_GELU_FORWARD:
      return "GELU";
    default:
      return "SWISH";
  }
}

std::string command_name(uint32_t cmd) { return std::string(name_of(cmd)) + (cmd & 1 ? "_BACKWARD" : "_FORWARD"); }

int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(type_of(t)); }

bool is_float(int type) { return type == CCV_32F || type == CCV_64F || type == CCV_16F || type == CCV_16BF; }

void check_like(const std::string& c, const char* what, const ccv_nnc_tensor_t* t, const char* what_ref,
                const ccv_nnc_tensor_t* ref) {
  NNC_CHECK(type_of(t) == type_of(ref), "%s: %s is %s but %s is %s; they must match", c.c_str(), what, dt(t), what_ref,
            dt(ref));
  NNC_CHECK(same_shape(t->info.dim, ref->info.dim), "%s: %s is %s but %s is %s; they must match", c.c_str(), what,
            shape_string(t->info.dim).c_str(), what_ref, shape_string(ref->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const std::string c = command_name(cmd.cmd);
  NNC_CHECK(input_size == 1, "%s: takes one input |x| (got %d inputs)", c.c_str(), input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |y| (got %d outputs)", c.c_str(), output_size);
  NNC_CHECK(inputs[0], "%s: x (input 0) is NULL", c.c_str());
  NNC_CHECK(outputs[0], "%s: y (output 0) is NULL", c.c_str());
  NNC_CHECK(is_float(type_of(inputs[0])), "%s: x is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(inputs[0]));
  check_like(c, "y", outputs[0], "x", inputs[0]);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const std::string c = command_name(cmd.cmd);
  const Op op = op_of(cmd);
  NNC_CHECK(input_size >= 2 && input_size <= 3, "%s: takes inputs |g|x|y| (got %d inputs)", c.c_str(), input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |dx| (got %d outputs)", c.c_str(), output_size);
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* x = inputs[1];
  const ccv_nnc_tensor_t* y = input_size > 2 ? inputs[2] : nullptr;
  NNC_CHECK(outputs[0], "%s: dx (output 0) is NULL", c.c_str());
  if (!g && (op == kSigmoid || op == kTanh)) g = outputs[0];  // NULL is ones, of dx's shape
  NNC_CHECK(g, "%s: the gradient g (input 0) is NULL", c.c_str());
  NNC_CHECK(is_float(type_of(g)), "%s: g is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), dt(g));
  switch (op) {
    case kRelu:
    case kSigmoid:
    case kTanh:
      NNC_CHECK(x || y, "%s: both x (input 1) and y (input 2) are NULL; it needs y (or x)", c.c_str());
      break;
    case kLeakyRelu:
      NNC_CHECK(x || (y && cmd.info.leaky_relu.negative_slope >= 0),
                "%s: x (input 1) is NULL; it needs x, or y when negative_slope >= 0 (it is %g)", c.c_str(),
                static_cast<double>(cmd.info.leaky_relu.negative_slope));
      break;
    default:
      NNC_CHECK(x, "%s: x (input 1) is NULL; the backward needs x", c.c_str());
      break;
  }
  if (x) check_like(c, "x", x, "g", g);
  if (y) check_like(c, "y", y, "g", g);
  check_like(c, "dx", outputs[0], "g", g);
}

// libnnc's patterns, bit for bit: x -> y.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                     int ob) {
  return ib > 0 && ob > 0 && (inputs[0] & 1u) == 1u && outputs[0] == 1u;
}

// Backward over |g|x|y|: RELU, LEAKY_RELU, SIGMOID, TANH read g and y; GELU
// and SWISH g and x (SIGMOID's and TANH's tolerate more output bits).
template <Op kOp>
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                      int ob) {
  if (ib < 1 || ob < 1) return false;
  const uint64_t in = inputs[0], out = outputs[0];
  switch (kOp) {
    case kRelu:
    case kLeakyRelu:
      return (in & 5u) == 5u && out == 1u;
    case kSigmoid:
    case kTanh:
      return (in & 5u) == 5u && (out & 1u) == 1u;
    default:
      return (in & 3u) == 3u && out == 1u;
  }
}

// libnnc's in-place rule: only output 0 over input 0 (y over x, dx over g).
bool first_pair(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 0;
}

// SIGMOID's and TANH's dx takes y's shape (input 2), g's without it.
void y_shaped_backward(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                       const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = input_size > 2 && inputs[2].dim[0] > 0 ? inputs[2] : inputs[0];
}

void add(Registry& r, uint32_t forward, BitmaskFn backward_bitmask_fn) {
  const bool from_y = forward == CCV_NNC_SIGMOID_FORWARD || forward == CCV_NNC_TANH_FORWARD;
  CommandInfo info;
  info.cmd = forward;
  info.bitmask = forward_bitmask;
  info.allow_inplace = first_pair;
  info.validate = validate_forward;
  r.add_command(info);
  info = CommandInfo{};
  info.cmd = forward + 1;
  if (from_y) info.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  info.tensor_auto = from_y ? y_shaped_backward : shape::same_as_first_input;
  info.bitmask = backward_bitmask_fn;
  info.allow_inplace = first_pair;
  info.validate = validate_backward;
  r.add_command(info);

  r.add_kernels(cpu_ref(types::kFloat),
                {{forward, forward_ref},
                 {forward + 1, from_y ? null_is_ones<backward_ref, shape_of_first_output> : backward_ref}});
  r.add_kernels(cpu_opt(CCV_32F).accepting(opt_accept),
                {{forward, forward_opt},
                 {forward + 1, from_y ? null_is_ones<backward_opt, shape_of_first_output> : backward_opt}});
}

}  // namespace

}  // namespace activation

void register_activation(Registry& r) {
  using namespace activation;
  add(r, CCV_NNC_RELU_FORWARD, backward_bitmask<kRelu>);
  add(r, CCV_NNC_LEAKY_RELU_FORWARD, backward_bitmask<kLeakyRelu>);
  add(r, CCV_NNC_SIGMOID_FORWARD, backward_bitmask<kSigmoid>);
  add(r, CCV_NNC_TANH_FORWARD, backward_bitmask<kTanh>);
  add(r, CCV_NNC_GELU_FORWARD, backward_bitmask<kGelu>);
  add(r, CCV_NNC_SWISH_FORWARD, backward_bitmask<kSwish>);
}

}  // namespace nnc
