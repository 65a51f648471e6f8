// The element-wise family: EWSUM, forward and backward, here; EWPROD, EWDIV,
// EWEXP, EWLOG, EWSQRT, CLAMP, MIN and MAX in math.cpp.
//
// EWSUM_FORWARD: y = x_1 + ... + x_n for n >= 1 inputs of exactly the output's
// shape and data type (no broadcasting; ADD broadcasts). Any input may be the
// output itself.
// EWSUM_BACKWARD: inputs |g|x_1..x_n|y|, outputs |dx_1..dx_n|; every dx_i is g
// (a passthrough). A NULL g reads as ones (CCV_NNC_CMD_ATTR_NULL_IS_ONES), so
// the dx_i are filled with 1; NULL outputs are skipped.
#include "cmd/ew/ew.hpp"

#include <string>

#include "cmd/ew/math.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace ew {

namespace {

constexpr int kSumTypes = types::kFloat | CCV_32S | CCV_64S;

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
std::string dims_of(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }

// Runs on every EWSUM, so the passing path only compares integers.
void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(input_size >= 1, "EWSUM_FORWARD: needs at least one input (got %d)", input_size);
  NNC_CHECK(output_size == 1, "EWSUM_FORWARD: takes exactly one output (got %d)", output_size);
  const ccv_nnc_tensor_t* y = outputs[0];
  NNC_CHECK(y, "EWSUM_FORWARD: the output is NULL");
  const int type = CCV_GET_DATA_TYPE(y->info.datatype);
  NNC_CHECK(type & kSumTypes, "EWSUM_FORWARD: cannot sum %s tensors (it sums 16F, 16BF, 32F, 64F, 32S and 64S)", dt(y));
  for (int i = 0; i < input_size; i++) {
    const ccv_nnc_tensor_t* x = inputs[i];
    NNC_CHECK(x, "EWSUM_FORWARD: input %d is NULL", i);
    NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) == type, "EWSUM_FORWARD: input %d is %s but the output is %s", i,
              dt(x), dt(y));
    NNC_CHECK(same_shape(x->info, y->info),
              "EWSUM_FORWARD: input %d is %s but the output is %s; EWSUM needs equal shapes (it does not "
              "broadcast; ADD does)",
              i, dims_of(x).c_str(), dims_of(y).c_str());
  }
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(output_size >= 1, "EWSUM_BACKWARD: needs at least one output gradient (got %d)", output_size);
  const ccv_nnc_tensor_t* g = input_size > 0 ? inputs[0] : nullptr;
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* d = outputs[i];
    if (!d) continue;
    if (!g) {
      NNC_CHECK(CCV_GET_DATA_TYPE(d->info.datatype) & kSumTypes,
                "EWSUM_BACKWARD: cannot fill a %s gradient (output %d) with ones", dt(d), i);
      continue;
    }
    NNC_CHECK(CCV_GET_DATA_TYPE(d->info.datatype) == CCV_GET_DATA_TYPE(g->info.datatype),
              "EWSUM_BACKWARD: output %d is %s but the gradient g (input 0) is %s", i, dt(d), dt(g));
    NNC_CHECK(same_shape(d->info, g->info), "EWSUM_BACKWARD: output %d is %s but the gradient g (input 0) is %s; they must match", i,
              dims_of(d).c_str(), dims_of(g).c_str());
  }
}

// libnnc's patterns. Forward: the one output, every input as a run from
// the first.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                     int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size) {
  int count = 0;
  return output_size == 1 && output_bitmask_size > 0 && outputs[0] == 1u &&
         ones_prefix(inputs, input_bitmask_size, &count) && count == input_size;
}

// Backward: g (the exec path also takes a NULL g as ones) and every gradient
// as a run from the first.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                      int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size) {
  int count = 0;
  return input_size >= 1 && input_bitmask_size > 0 && (inputs[0] & 1u) == 1u &&
         ones_prefix(outputs, output_bitmask_size, &count) && count == output_size;
}

}  // namespace

}  // namespace ew

void register_ew(Registry& r) {
  using namespace ew;
  r.add_command({.cmd = CCV_NNC_EWSUM_FORWARD, .tensor_auto = shape::same_as_first_input, .bitmask = forward_bitmask, .allow_inplace = inplace::always, .validate = validate_forward});

  CommandInfo back;
  back.cmd = CCV_NNC_EWSUM_BACKWARD;
  back.attributes = CCV_NNC_CMD_ATTR_PASSTHROUGH | CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  back.tensor_auto = shape::same_as_first_input;
  back.bitmask = backward_bitmask;
  back.allow_inplace = inplace::always;  // libnnc: any pair (each dx is a copy of g)
  back.validate = validate_backward;
  r.add_command(back);

  r.add_kernels(cpu_ref(kSumTypes), {{CCV_NNC_EWSUM_FORWARD, ewsum_forward_ref}, {CCV_NNC_EWSUM_BACKWARD, ewsum_backward_ref}});
  r.add_kernels(cpu_opt(types::kWide), {{CCV_NNC_EWSUM_FORWARD, ewsum_forward_opt}});
  r.add_kernels(cpu_opt(kSumTypes), {{CCV_NNC_EWSUM_BACKWARD, ewsum_backward_opt}});  // copies: any type

  register_math(r);
}

}  // namespace nnc
