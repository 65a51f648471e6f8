// Host half of the GPU_REF optimiser coefficients (gpu_optim_args.hpp).
#include "cmd/common/gpu_optim_args.hpp"

#include "cmd/optim/optim.hpp"

namespace nnc::gpu {

bool optim_args_of(const ccv_nnc_cmd_t& cmd, OptimArgs* args) {
  const optim::Coef k = optim::coef_of(cmd);
  OptimArgs o;
  switch (k.kind) {
    case optim::Kind::kSgd:
      o.kind = kOptSgd;
      break;
    case optim::Kind::kAdam:
      o.kind = kOptAdam;
      break;
    case optim::Kind::kAdamW:
      o.kind = kOptAdamW;
      break;
    case optim::Kind::kRmsprop:
      o.kind = kOptRmsprop;
      break;
    default:
      return false;
  }
  o.rate = static_cast<float>(k.rate), o.scale = static_cast<float>(k.scale), o.decay = static_cast<float>(k.decay);
  o.momentum = static_cast<float>(k.momentum), o.one_minus_dampening = static_cast<float>(1 - k.dampening);
  o.nesterov = k.nesterov;
  o.beta1 = static_cast<float>(k.beta1), o.one_minus_beta1 = static_cast<float>(1 - k.beta1);
  o.beta2 = static_cast<float>(k.beta2), o.one_minus_beta2 = static_cast<float>(1 - k.beta2);
  o.epsilon = static_cast<float>(k.epsilon), o.amsgrad = k.amsgrad;
  o.step_size = static_cast<float>(k.step_size), o.inv_sqrt_bc2 = static_cast<float>(k.inv_sqrt_bc2);
  o.weight_keep = static_cast<float>(k.weight_keep);
  o.alpha = static_cast<float>(k.alpha), o.one_minus_alpha = static_cast<float>(1 - k.alpha);
  *args = o;
  return true;
}

LambCoef lamb_coef_of(const ccv_nnc_cmd_t& cmd) {
  const optim::Coef k = optim::coef_of(cmd);
  LambCoef c;
  c.rate = static_cast<float>(k.rate);
  c.scale = static_cast<float>(k.scale);
  c.decay = static_cast<float>(k.decay);
  c.beta1 = static_cast<float>(k.beta1);
  c.beta2 = static_cast<float>(k.beta2);
  c.epsilon = static_cast<float>(k.epsilon);
  c.inv_bc1 = static_cast<float>(k.inv_bc1);
  c.inv_bc2 = static_cast<float>(k.inv_bc2);
  return c;
}

}  // namespace nnc::gpu
