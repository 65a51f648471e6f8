// The optimiser family: one update step of a parameter tensor and its state.
//
// Every command follows libnnc's convention for minimizers: inputs are the
// gradient g, the parameter a, then the optimiser's state; outputs are the
// updated parameter b, then the updated state, in the same order as the
// input state (output i+1 is the new value of input i+2). Outputs are
// expected to be the inputs themselves (b = a, n = m, ...): in place is
// allowed for exactly those pairs. All tensors have one shape and one data
// type (fp32, fp64, fp16, bf16); the state starts at zero.
//
//   SGD_FORWARD      |g|a|m|         -> |b|n|         m: momentum buffer
//   ADAM_FORWARD     |g|a|m|v|       -> |b|n|u|       m: first moment, v: second moment
//                    |g|a|m|v|vm|    -> |b|n|u|um|    amsgrad: vm, the running max of v
//   ADAMW_FORWARD    as ADAM, with decoupled weight decay
//   RMSPROP_FORWARD  |g|a|m|v|       -> |b|n|u|       m: momentum buffer, v: mean square
//   LAMB_FORWARD     |g|a|m|v|       -> |b|n|u|       m, v: as ADAM
//
// The formulas (those of PyTorch's torch.optim SGD / Adam / AdamW / RMSprop,
// and LAMB of You et al. with bias correction) are spelled out in optim.hpp.
// Choices where libnnc's header is silent: SGD's decay is L2 added to the
// scaled gradient before the momentum; SGD with momentum 0 is plain SGD (the
// state output receives the gradient); ADAM's decay is L2 in the gradient,
// ADAMW's multiplies the parameter by 1 - rate*decay; `step` counts from 1
// and drives the bias correction; RMSPROP always writes its momentum buffer
// (with momentum 0 it holds the last step's grad / (sqrt(v) + epsilon));
// LAMB's trust ratio uses the 2-norms of the whole parameter tensor.
// The optimisers have no backward: their *_BACKWARD ids are registered as in
// libnnc, with a bitmask that accepts nothing and no kernel. Shapes, bitmasks
// and in-place pairs are libnnc's: every output like the gradient (input 0);
// exactly the inputs and outputs above, all present; output i may share input
// i + 1's memory.
#include "cmd/optim/optim.hpp"

#include <cmath>
#include <string>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace optim {

Coef coef_of(const ccv_nnc_cmd_t& cmd) {
  Coef c;
  const ccv_nnc_cmd_param_t& p = cmd.info;
  switch (cmd.cmd) {
    case CCV_NNC_SGD_FORWARD:
      c.kind = Kind::kSgd;
      c.rate = p.sgd.rate, c.scale = p.sgd.scale, c.decay = p.sgd.decay;
      c.momentum = p.sgd.momentum, c.dampening = p.sgd.dampening, c.nesterov = p.sgd.nesterov != 0;
      break;
    case CCV_NNC_ADAM_FORWARD:
    case CCV_NNC_ADAMW_FORWARD: {
      c.kind = cmd.cmd == CCV_NNC_ADAM_FORWARD ? Kind::kAdam : Kind::kAdamW;
      c.rate = p.adam.rate, c.scale = p.adam.scale, c.decay = p.adam.decay;
      c.beta1 = p.adam.beta1, c.beta2 = p.adam.beta2, c.epsilon = p.adam.epsilon, c.amsgrad = p.adam.amsgrad != 0;
      const double bc1 = 1 - std::pow(c.beta1, p.adam.step);
      const double bc2 = 1 - std::pow(c.beta2, p.adam.step);
      c.step_size = c.rate / bc1;
      c.inv_sqrt_bc2 = 1 / std::sqrt(bc2);
      c.weight_keep = c.kind == Kind::kAdamW ? 1 - c.rate * c.decay : 1;
      break;
    }
    case CCV_NNC_RMSPROP_FORWARD:
      c.kind = Kind::kRmsprop;
      c.rate = p.rmsprop.rate, c.scale = p.rmsprop.scale, c.decay = p.rmsprop.decay;
      c.alpha = p.rmsprop.alpha, c.momentum = p.rmsprop.momentum, c.epsilon = p.rmsprop.epsilon;
      break;
    case CCV_NNC_LAMB_FORWARD:
      c.kind = Kind::kLamb;
      c.rate = p.lamb.rate, c.scale = p.lamb.scale, c.decay = p.lamb.decay;
      c.beta1 = p.lamb.beta1, c.beta2 = p.lamb.beta2, c.epsilon = p.lamb.epsilon;
      c.inv_bc1 = 1 / (1 - std::pow(c.beta1, p.lamb.step));
      c.inv_bc2 = 1 / (1 - std::pow(c.beta2, p.lamb.step));
      break;
  }
  return c;
}

int state_count(const ccv_nnc_cmd_t& cmd) {
  switch (cmd.cmd) {
    case CCV_NNC_SGD_FORWARD:
      return 1;
    case CCV_NNC_ADAM_FORWARD:
    case CCV_NNC_ADAMW_FORWARD:
      return cmd.info.adam.amsgrad ? 3 : 2;
    default:
      return 2;
  }
}

namespace {

const char* name_of(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_SGD_FORWARD:
      return "SGD_FORWARD";
    case CCV_NNC_ADAM_FORWARD:
      return "ADAM_FORWARD";
    case CCV_NNC_ADAMW_FORWARD:
      return "ADAMW_FORWARD";
    case CCV_NNC_RMSPROP_FORWARD:
      return "RMSPROP_FORWARD";
    default:
      return "LAMB_FORWARD";
  }
}

bool finite(double x) { return std::isfinite(x); }

void check_params(const ccv_nnc_cmd_t& cmd, const char* name) {
  const ccv_nnc_cmd_param_t& p = cmd.info;
  auto beta_ok = [](double b) { return b >= 0 && b < 1; };
  switch (cmd.cmd) {
    case CCV_NNC_SGD_FORWARD:
      NNC_CHECK(finite(p.sgd.rate) && finite(p.sgd.scale) && finite(p.sgd.decay) && finite(p.sgd.momentum) &&
                    finite(p.sgd.dampening),
                "%s: rate, scale, decay, momentum and dampening must be finite", name);
      break;
    case CCV_NNC_ADAM_FORWARD:
    case CCV_NNC_ADAMW_FORWARD:
      NNC_CHECK(p.adam.step >= 1,
                "%s: adam.step is %d; steps count from 1 (the bias correction divides by 1 - beta^step)", name,
                p.adam.step);
      NNC_CHECK(beta_ok(p.adam.beta1) && beta_ok(p.adam.beta2), "%s: beta1 (%g) and beta2 (%g) must be in [0, 1)", name,
                p.adam.beta1, p.adam.beta2);
      NNC_CHECK(finite(p.adam.rate) && finite(p.adam.scale) && finite(p.adam.decay) && p.adam.epsilon >= 0 &&
                    finite(p.adam.epsilon),
                "%s: rate, scale and decay must be finite and epsilon finite and >= 0", name);
      break;
    case CCV_NNC_RMSPROP_FORWARD:
      NNC_CHECK(p.rmsprop.alpha >= 0 && p.rmsprop.alpha <= 1, "%s: alpha (%g) must be in [0, 1]", name,
                p.rmsprop.alpha);
      NNC_CHECK(finite(p.rmsprop.rate) && finite(p.rmsprop.scale) && finite(p.rmsprop.decay) &&
                    finite(p.rmsprop.momentum) && p.rmsprop.epsilon >= 0 && finite(p.rmsprop.epsilon),
                "%s: rate, scale, decay and momentum must be finite and epsilon finite and >= 0", name);
      break;
    case CCV_NNC_LAMB_FORWARD:
      NNC_CHECK(p.lamb.step >= 1, "%s: lamb.step is %d; steps count from 1", name, p.lamb.step);
      NNC_CHECK(beta_ok(p.lamb.beta1) && beta_ok(p.lamb.beta2), "%s: beta1 (%g) and beta2 (%g) must be in [0, 1)", name,
                p.lamb.beta1, p.lamb.beta2);
      NNC_CHECK(finite(p.lamb.rate) && finite(p.lamb.scale) && finite(p.lamb.decay) && p.lamb.epsilon >= 0 &&
                    finite(p.lamb.epsilon),
                "%s: rate, scale and decay must be finite and epsilon finite and >= 0", name);
      break;
  }
}

void validate(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = name_of(cmd.cmd);
  const int s = state_count(cmd);
  NNC_CHECK(input_size == 2 + s && output_size == 1 + s,
            "%s: takes %d inputs (g, a, %d state) and %d outputs (b, %d state)%s; got %d inputs and %d outputs", name,
            2 + s, s, 1 + s, s,
            (cmd.cmd == CCV_NNC_ADAM_FORWARD || cmd.cmd == CCV_NNC_ADAMW_FORWARD) && s == 3 ? " with amsgrad" : "",
            input_size, output_size);
  check_params(cmd, name);
  const ccv_nnc_tensor_t* a = inputs[1];
  NNC_CHECK(a, "%s: the parameter a (input 1) is NULL", name);
  const int type = CCV_GET_DATA_TYPE(a->info.datatype);
  NNC_CHECK(type & types::kFloat, "%s: cannot update %s tensors (it takes 32F, 64F, 16F and 16BF)", name, datatype_name(type));
  auto check = [&](const ccv_nnc_tensor_t* t, const char* what, int index) {
    NNC_CHECK(t, "%s: %s %d is NULL", name, what, index);
    NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == type, "%s: %s %d is %s but the parameter a is %s", name, what,
              index, datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)), datatype_name(type));
    NNC_CHECK(same_shape(t->info, a->info), "%s: %s %d is %s but the parameter a is %s; every tensor must have a's shape", name,
              what, index, shape_string(t->info.dim).c_str(), shape_string(a->info.dim).c_str());
    NNC_CHECK(CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GET_MEMORY(a->info.type),
              "%s: %s %d is in another memory than the parameter a", name, what, index);
  };
  for (int i = 0; i < input_size; i++) check(inputs[i], "input", i);
  for (int i = 0; i < output_size; i++) check(outputs[i], "output", i);
}

// libnnc's bitmasks: exactly the command's inputs and outputs, all present
// (SGD 3 -> 2; ADAM / ADAMW 4 -> 3, or 5 -> 4 with amsgrad; RMSPROP and LAMB 4 -> 3).
bool bitmask(const ccv_nnc_cmd_param_t& p, int, int, const uint64_t* inputs, int input_bitmask_size,
             const uint64_t* outputs, int output_bitmask_size, int state) {
  const uint64_t in = (uint64_t{1} << (2 + state)) - 1, out = (uint64_t{1} << (1 + state)) - 1;
  (void)p;
  return word0(inputs, input_bitmask_size) == in && word0(outputs, output_bitmask_size) == out;
}
bool sgd_bitmask(const ccv_nnc_cmd_param_t& p, int ni, int no, const uint64_t* in, int ib, const uint64_t* out, int ob) {
  return bitmask(p, ni, no, in, ib, out, ob, 1);
}
bool adam_bitmask(const ccv_nnc_cmd_param_t& p, int ni, int no, const uint64_t* in, int ib, const uint64_t* out,
                  int ob) {
  return bitmask(p, ni, no, in, ib, out, ob, p.adam.amsgrad ? 3 : 2);
}
bool two_state_bitmask(const ccv_nnc_cmd_param_t& p, int ni, int no, const uint64_t* in, int ib, const uint64_t* out,
                       int ob) {
  return bitmask(p, ni, no, in, ib, out, ob, 2);
}

// The optimisers' backward ids exist (as in libnnc) without a backward: a
// bitmask that accepts nothing, a shape rule that leaves the outputs alone.
bool no_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t*, int, const uint64_t*, int) { return false; }
void no_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t*, int, const ccv_nnc_hint_t&,
             ccv_nnc_tensor_param_t*, int) {}
void validate_no_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int,
                          ccv_nnc_tensor_t* const*, int) {
  const char* n = cmd_name(cmd.cmd);
  fail(CCV_NNC_EXEC_NO_KERNEL, "%s: an optimiser step has no backward", n ? n : "optimiser");
}

// Output i is the new value of input i + 1 (b of a, n of m, ...).
bool inplace_pair(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == output_idx + 1;
}

}  // namespace

}  // namespace optim

void register_optim(Registry& r) {
  using namespace optim;
  for (uint32_t id : {CCV_NNC_SGD_FORWARD, CCV_NNC_ADAM_FORWARD, CCV_NNC_ADAMW_FORWARD, CCV_NNC_RMSPROP_FORWARD,
                      CCV_NNC_LAMB_FORWARD}) {
    CommandInfo info;
    info.cmd = id;
    info.tensor_auto = shape::same_as_first_input;
    info.bitmask = id == CCV_NNC_SGD_FORWARD                                 ? sgd_bitmask
                   : id == CCV_NNC_ADAM_FORWARD || id == CCV_NNC_ADAMW_FORWARD ? adam_bitmask
                                                                              : two_state_bitmask;
    info.allow_inplace = inplace_pair;
    info.validate = validate;
    r.add_command(info);
    r.add_command({.cmd = id + 1, .tensor_auto = no_auto, .bitmask = no_bitmask, .validate = validate_no_backward});

    r.add_kernels(cpu_ref(types::kFloat), {{id, optim_ref}});
    // CPU_OPT hands 16-bit types and views to the reference loop itself.
    r.add_kernels(cpu_opt(types::kFloat), {{id, optim_opt}});
  }
}

}  // namespace nnc
