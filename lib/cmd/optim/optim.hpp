// The optimiser family inside: SGD, ADAM, ADAMW, RMSPROP and LAMB as
// element-wise update commands. optim.cpp describes the commands (I/O order,
// checks) and registers the kernels; cpu_ref.cpp holds the per-element double
// loops, cpu_opt.cpp the packed / threaded ones and cpu_opt_avx2.cpp their
// AVX2 inner loops.
//
// Every update is written here once as a coefficient set (Coef) computed from
// the command's parameters in double; both backends evaluate the same
// formulas, the reference in double per element, the optimised one in the
// tensor's type.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/kernel.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::optim {

NNC_KERNEL(optim_ref);
NNC_KERNEL(optim_opt);

// Which update a command performs.
enum class Kind { kSgd, kAdam, kAdamW, kRmsprop, kLamb };

// The per-element coefficients of one update, derived from ccv_nnc_cmd_param_t.
//   SGD:     grad = scale*g + decay*a; n = momentum*m + (1-dampening)*grad
//            (n = grad when momentum == 0); upd = nesterov ? grad + momentum*n : n;
//            b = a - rate*upd.
//   ADAM:    grad = scale*g + decay*a; ADAMW: grad = scale*g, a' = a*(1 - rate*decay)
//            n = beta1*m + (1-beta1)*grad; u = beta2*v + (1-beta2)*grad^2;
//            amsgrad: um = max(vm, u), the denominator uses um instead of u;
//            b = a' - step_size * n / (sqrt(u) * inv_sqrt_bc2 + epsilon),
//            step_size = rate / (1 - beta1^step), inv_sqrt_bc2 = 1 / sqrt(1 - beta2^step).
//   RMSPROP: grad = scale*g + decay*a; u = alpha*v + (1-alpha)*grad^2;
//            n = momentum*m + grad / (sqrt(u) + epsilon); b = a - rate*n.
//   LAMB:    grad = scale*g; n, u as ADAM; r = (n*inv_bc1) / (sqrt(u*inv_bc2) + epsilon) + decay*a;
//            b = a - rate * trust * r, trust = |a| / |r| (2-norms over the whole
//            tensor; 1 when either is 0).
struct Coef {
  Kind kind = Kind::kSgd;
  double rate = 0, scale = 1, decay = 0;
  // SGD
  double momentum = 0, dampening = 0;
  bool nesterov = false;
  // ADAM / ADAMW / LAMB / RMSPROP
  double beta1 = 0, beta2 = 0, epsilon = 0;
  bool amsgrad = false;
  double step_size = 0;             // ADAM(W): rate / bc1
  double inv_sqrt_bc2 = 1;          // ADAM(W): 1 / sqrt(bc2)
  double inv_bc1 = 1, inv_bc2 = 1;  // LAMB
  double weight_keep = 1;           // ADAMW: 1 - rate*decay
  double alpha = 0;                 // RMSPROP
};
Coef coef_of(const ccv_nnc_cmd_t& cmd);

// Number of state tensors (inputs after g and a; outputs after b).
int state_count(const ccv_nnc_cmd_t& cmd);

// One element of each update in the scalar type S (double in CPU_REF, the
// tensor's type in CPU_OPT). Outputs are written after every input is read,
// so b may alias a, n alias m, u alias v.
template <class S>
inline void sgd_step(const Coef& c, S g, S a, S m, S& b, S& n) {
  const S grad = S(c.scale) * g + S(c.decay) * a;
  S nm;
  S upd;
  if (c.momentum == 0) {
    nm = grad;
    upd = grad;
  } else {
    nm = S(c.momentum) * m + S(1 - c.dampening) * grad;
    upd = c.nesterov ? grad + S(c.momentum) * nm : nm;
  }
  n = nm;
  b = a - S(c.rate) * upd;
}

// ADAM and ADAMW; vm / um are read / written only with amsgrad.
template <class S>
inline void adam_step(const Coef& c, S g, S a, S m, S v, S vm, S& b, S& n, S& u, S& um) {
  const S grad = c.kind == Kind::kAdamW ? S(c.scale) * g : S(c.scale) * g + S(c.decay) * a;
  const S nm = S(c.beta1) * m + S(1 - c.beta1) * grad;
  const S nv = S(c.beta2) * v + S(1 - c.beta2) * grad * grad;
  S d = nv;
  if (c.amsgrad) {
    d = vm > nv ? vm : nv;
    um = d;
  }
  const S denom = std::sqrt(d) * S(c.inv_sqrt_bc2) + S(c.epsilon);
  n = nm;
  u = nv;
  b = a * S(c.weight_keep) - S(c.step_size) * nm / denom;
}

template <class S>
inline void rmsprop_step(const Coef& c, S g, S a, S m, S v, S& b, S& n, S& u) {
  const S grad = S(c.scale) * g + S(c.decay) * a;
  const S nv = S(c.alpha) * v + S(1 - c.alpha) * grad * grad;
  const S nm = S(c.momentum) * m + grad / (std::sqrt(nv) + S(c.epsilon));
  u = nv;
  n = nm;
  b = a - S(c.rate) * nm;
}

// LAMB in two passes: lamb_moments gives the new moments, lamb_direction the
// update direction r from the (stored) new moments; b = a - rate*trust*r.
template <class S>
inline void lamb_moments(const Coef& c, S g, S m, S v, S& n, S& u) {
  const S grad = S(c.scale) * g;
  n = S(c.beta1) * m + S(1 - c.beta1) * grad;
  u = S(c.beta2) * v + S(1 - c.beta2) * grad * grad;
}
template <class S>
inline S lamb_direction(const Coef& c, S a, S n, S u) {
  return n * S(c.inv_bc1) / (std::sqrt(u * S(c.inv_bc2)) + S(c.epsilon)) + S(c.decay) * a;
}
// The trust ratio from the squared norms of a and r.
inline double lamb_trust(double a2, double r2) { return a2 > 0 && r2 > 0 ? std::sqrt(a2) / std::sqrt(r2) : 1.0; }

// AVX2 + FMA loops over packed fp32 (cpu_opt_avx2.cpp); call only when
// cpu_features() reports avx2 and fma3. b may be a, n may be m, u may be v.
void sgd_f32_avx2(const Coef& c, const float* g, const float* a, const float* m, float* b, float* n, size_t count);
void adam_f32_avx2(const Coef& c, const float* g, const float* a, const float* m, const float* v, const float* vm,
                   float* b, float* n, float* u, float* um, size_t count);

}  // namespace nnc::optim
