// CCV_NNC_CMD_ATTR_NULL_IS_ONES for backward kernels: a NULL gradient g
// (input 0) reads as a tensor of ones (libnnc's autodiff leaves the gradient
// of the final output out that way). Rather than teach every loop a constant
// operand, the kernel runs once on a packed tensor of ones of g's shape made
// for the call; the cost only falls on calls that leave g out.
//
//   r.add_kernels(k, {{CCV_NNC_EWEXP_BACKWARD, null_is_ones<math_backward_ref, shape_of_first_output>}});
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "cmd/common/copy.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

// g's parameters when g is NULL, from the call's other tensors (already
// validated); false if they do not say.
using OnesShapeFn = bool (*)(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                             int output_size, ccv_nnc_tensor_param_t* g);

// g has the shape and type of the first output given (element-wise
// backwards, where every gradient has g's shape).
inline bool shape_of_first_output(ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const* outputs, int output_size,
                                  ccv_nnc_tensor_param_t* g) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) {
      *g = normalized_params(outputs[i]->info);
      g->type = CCV_TENSOR_CPU_MEMORY;
      return true;
    }
  return false;
}

template <ccv_nnc_cmd_exec_f Exec, OnesShapeFn Shape>
NNC_KERNEL(null_is_ones) {
  if (input_size > 0 && inputs[0])
    return Exec(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  ccv_nnc_tensor_param_t p{};
  if (!Shape(inputs, input_size, outputs, output_size, &p))
    fail(CCV_NNC_EXEC_INVALID, "the gradient (input 0) is NULL and its shape cannot be told from the other tensors");
  struct Free {
    void operator()(ccv_nnc_tensor_t* t) const { tensor_free(t); }
  };
  const std::unique_ptr<ccv_nnc_tensor_t, Free> ones(tensor_new(nullptr, p, 0));
  util::opt_fill(ones.get(), 1);
  std::vector<ccv_nnc_tensor_t*> in(inputs, inputs + std::max(input_size, 0));
  if (in.empty()) in.push_back(nullptr);
  in[0] = ones.get();
  return Exec(cmd, hint, flags, in.data(), static_cast<int>(in.size()), outputs, output_size, stream_context);
}

}  // namespace nnc
