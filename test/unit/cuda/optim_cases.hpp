// The optimiser configurations the GPU optimiser tests run (reduce_loss_optim_test.cpp
// against CPU_REF, ewvec_test.cpp vector against scalar): SGD plain and with
// momentum, nesterov and decay; ADAM and ADAMW with and without amsgrad;
// RMSPROP. `state`: how many state tensors follow g and a.
#pragma once

#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"

namespace nnc_gpu_test {

struct OptCase {
  const char* name;
  uint32_t id;
  int state;
  ccv_nnc_cmd_param_t p;
};

inline std::vector<OptCase> optimiser_cases() {
  std::vector<OptCase> opts;
  auto add = [&](const char* name, uint32_t id, int state, auto set) {
    OptCase o{name, id, state, {}};
    std::memset(&o.p, 0, sizeof(o.p));
    set(o.p);
    opts.push_back(o);
  };
  add("SGD", CCV_NNC_SGD_FORWARD, 1, [](ccv_nnc_cmd_param_t& p) { p.sgd.rate = 0.1f, p.sgd.scale = 1; });
  add("SGD momentum nesterov decay", CCV_NNC_SGD_FORWARD, 1, [](ccv_nnc_cmd_param_t& p) {
    p.sgd.rate = 0.05f, p.sgd.scale = 0.5f, p.sgd.decay = 0.01f, p.sgd.momentum = 0.9f, p.sgd.dampening = 0.1f,
    p.sgd.nesterov = 1;
  });
  for (uint32_t id : {CCV_NNC_ADAM_FORWARD, CCV_NNC_ADAMW_FORWARD})
    for (int ams = 0; ams < 2; ams++)
      add(id == CCV_NNC_ADAM_FORWARD ? (ams ? "ADAM amsgrad" : "ADAM") : (ams ? "ADAMW amsgrad" : "ADAMW"), id,
          ams ? 3 : 2, [ams](ccv_nnc_cmd_param_t& p) {
            p.adam.step = 3, p.adam.rate = 0.01f, p.adam.beta1 = 0.9f, p.adam.beta2 = 0.999f, p.adam.decay = 0.02f,
            p.adam.epsilon = 1e-8f, p.adam.amsgrad = ams, p.adam.scale = 1;
          });
  add("RMSPROP", CCV_NNC_RMSPROP_FORWARD, 2, [](ccv_nnc_cmd_param_t& p) {
    p.rmsprop.rate = 0.01f, p.rmsprop.scale = 1, p.rmsprop.decay = 0.001f, p.rmsprop.alpha = 0.9f,
    p.rmsprop.momentum = 0.5f, p.rmsprop.epsilon = 1e-6f;
  });
  return opts;
}

}  // namespace nnc_gpu_test
