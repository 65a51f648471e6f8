// libnnc's convolution rules that CONVOLUTION_TRANSPOSE shares: libnnc
// registers the convolution's bitmask predicates for both families, and both
// backwards shape |dx|dw|dbias| after |g|x|w| the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::conv_rules {

// Forward |x|w|bias| -> |y|, bias optional.
inline bool bitmask_forward(const ccv_nnc_cmd_param_t&, int input_size, int, const uint64_t* inputs, int input_bitmask_size,
                            const uint64_t* outputs, int output_bitmask_size) {
  const uint64_t in = word0(inputs, input_bitmask_size);
  if (word0(outputs, output_bitmask_size) != 1u) return false;
  return (input_size == 3 && (in & 7u) == 7u) || (input_size == 2 && (in & 3u) == 3u);
}

// Backward |g|x|w| -> |dx|dw|dbias|: g, x, w give dx and dw; g, x give dw;
// g, w give dx; dbias may come with any of them.
inline bool bitmask_backward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                             const uint64_t* outputs, int output_bitmask_size) {
  const uint64_t in = word0(inputs, input_bitmask_size), out = word0(outputs, output_bitmask_size);
  if ((in & 7u) == 7u && (out == 7u || out == 3u)) return true;
  if ((in & 3u) == 3u && (out == 6u || out == 2u)) return true;
  if ((in & 5u) == 5u && (out == 5u || out == 1u)) return true;
  return false;
}

// dx like x (input 1), dw like w (input 2), dbias a 1-d [dbias_count] of g's type.
inline void tensor_auto_backward(const ccv_nnc_tensor_param_t* inputs, int input_size, ccv_nnc_tensor_param_t* outputs,
                                 int output_size, int dbias_count) {
  for (int i = 0; i < output_size; i++) {
    const int from = i + 1;
    if (from < input_size && (i < 2 || nd_of(inputs[from].dim) > 0)) {
      outputs[i] = inputs[from];
      continue;
    }
    ccv_nnc_tensor_param_t p = input_size > 0 ? inputs[0] : ccv_nnc_tensor_param_t{};
    if (i == 2) {
      std::memset(p.dim, 0, sizeof(p.dim));
      p.dim[0] = std::max(dbias_count, 1);
    }
    outputs[i] = p;
  }
}

}  // namespace nnc::conv_rules
