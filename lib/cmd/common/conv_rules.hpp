// libnnc's convolution rules that CONVOLUTION_TRANSPOSE shares: libnnc
// registers the convolution's bitmask predicates for both families, and both
// backwards shape |dx|dw|dbias| after |g|x|w| the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
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

// Tensor roles of a backward call: inputs |g|x|w|bias|y| (bias, y unread),
// outputs |dx|dw|dbias|.
struct BackwardIo {
  ccv_nnc_tensor_t *g = nullptr, *x = nullptr, *w = nullptr;
  ccv_nnc_tensor_t *dx = nullptr, *dw = nullptr, *dbias = nullptr;
};
inline BackwardIo backward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                              int output_size) {
  BackwardIo io;
  io.g = input_size > 0 ? inputs[0] : nullptr;
  io.x = input_size > 1 ? inputs[1] : nullptr;
  io.w = input_size > 2 ? inputs[2] : nullptr;
  io.dx = output_size > 0 ? outputs[0] : nullptr;
  io.dw = output_size > 1 ? outputs[1] : nullptr;
  io.dbias = output_size > 2 ? outputs[2] : nullptr;
  // libnnc's |g|-|w| -> |dx| and |g|x|-| -> |-|dw| patterns: the gradient
  // stands in for the missing input, whose shape alone is read.
  if (!io.x && io.dx && !io.dw) io.x = io.dx;
  if (!io.w && io.dw && !io.dx) io.w = io.dw;
  return io;
}

// `t` (when given) has x's data type.
inline void check_same_type(const char* name, const ccv_nnc_tensor_t* x, const char* role, const ccv_nnc_tensor_t* t) {
  if (!t) return;
  NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == CCV_GET_DATA_TYPE(x->info.datatype),
            "%s: %s is %s but x is %s; they must share one type", name, role, datatype_name(t->info.datatype),
            datatype_name(x->info.datatype));
}

// The forward's slots: |x|w|bias| (bias optional) -> |y|.
inline void check_forward_slots(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size,
                                ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(input_size == 2 || input_size == 3, "%s: takes inputs |x|w|bias| (bias optional; got %d inputs)", name,
            input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |y| (got %d outputs)", name, output_size);
  NNC_CHECK(inputs[0] && inputs[1], "%s: x (input 0) and w (input 1) are required", name);
  NNC_CHECK(outputs[0], "%s: y (output 0) is required", name);
}

// The backward's slots: |g|x|w|bias|y| -> |dx|dw|dbias|, g and one output at least.
inline BackwardIo check_backward_slots(const char* name, ccv_nnc_tensor_t* const* inputs, int input_size,
                                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(input_size >= 2 && input_size <= 5, "%s: takes inputs |g|x|w|bias|y| (at least |g|x|; got %d inputs)",
            name, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 3, "%s: takes outputs |dx|dw|dbias| (got %d outputs)", name,
            output_size);
  const BackwardIo io = backward_io(inputs, input_size, outputs, output_size);
  NNC_CHECK(io.dx || io.dw || io.dbias, "%s: every output is NULL", name);
  NNC_CHECK(io.g, "%s: needs g (input 0)", name);
  return io;
}

}  // namespace nnc::conv_rules
