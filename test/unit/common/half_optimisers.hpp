// The optimiser configurations both 16F / 16BF suites run
// (test/unit/gpu_half/gpu_half_test.cpp: the GPU_REF rounding model on the CPU;
// test/unit/cuda/half_gpu_test.cpp: GPU_REF against CPU_REF on a GPU): SGD plain
// and with momentum, Nesterov, dampening and decay; ADAM and ADAMW with and
// without amsgrad; RMSPROP; LAMB. `state`: how many state tensors the command
// reads and writes besides the gradient and the parameter. Headers only: every
// target that includes it has ${PROJECT_SOURCE_DIR}/test among its include
// directories.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"

namespace nnc_test_half {

struct Opt {
  const char* name;
  ccv_nnc_cmd_t cmd;
  int state;
};

inline std::vector<Opt> optimisers() {
  auto cmd_of = [](uint32_t id) {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    return ccv_nnc_cmd(id, nullptr, p, 0);
  };
  std::vector<Opt> o;
  ccv_nnc_cmd_t c = cmd_of(CCV_NNC_SGD_FORWARD);
  c.info.sgd.rate = 0.1f, c.info.sgd.scale = 1;
  o.push_back({"SGD", c, 1});
  c = cmd_of(CCV_NNC_SGD_FORWARD);
  c.info.sgd.rate = 0.05f, c.info.sgd.scale = 0.5f, c.info.sgd.decay = 0.01f, c.info.sgd.momentum = 0.9f;
  c.info.sgd.dampening = 0.1f, c.info.sgd.nesterov = 1;
  o.push_back({"SGD momentum nesterov decay", c, 1});
  for (uint32_t id : {CCV_NNC_ADAM_FORWARD, CCV_NNC_ADAMW_FORWARD})
    for (int ams = 0; ams < 2; ams++) {
      c = cmd_of(id);
      c.info.adam.step = 3, c.info.adam.rate = 0.01f, c.info.adam.beta1 = 0.9f, c.info.adam.beta2 = 0.999f;
      c.info.adam.decay = 0.02f, c.info.adam.epsilon = 1e-8f, c.info.adam.amsgrad = ams, c.info.adam.scale = 1;
      o.push_back({id == CCV_NNC_ADAM_FORWARD ? (ams ? "ADAM amsgrad" : "ADAM") : (ams ? "ADAMW amsgrad" : "ADAMW"), c,
                   ams ? 3 : 2});
    }
  c = cmd_of(CCV_NNC_RMSPROP_FORWARD);
  c.info.rmsprop.rate = 0.01f, c.info.rmsprop.scale = 1, c.info.rmsprop.decay = 0.001f, c.info.rmsprop.alpha = 0.9f;
  c.info.rmsprop.momentum = 0.5f, c.info.rmsprop.epsilon = 1e-6f;
  o.push_back({"RMSPROP", c, 2});
  c = cmd_of(CCV_NNC_LAMB_FORWARD);
  c.info.lamb.step = 2, c.info.lamb.rate = 0.01f, c.info.lamb.beta1 = 0.9f, c.info.lamb.beta2 = 0.999f;
  c.info.lamb.decay = 0.01f, c.info.lamb.epsilon = 1e-6f, c.info.lamb.scale = 1;
  o.push_back({"LAMB", c, 2});
  return o;
}

}  // namespace nnc_test_half
