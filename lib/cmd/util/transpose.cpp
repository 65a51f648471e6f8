// TRANSPOSE: swap two axes.
//
// transpose.axis[0] and transpose.axis[1] name the two axes (equal axes: a
// plain copy). Forward: inputs |x|, outputs |y|, y's shape is x's with the two
// extents exchanged and y[..i..j..] = x[..j..i..]; any data type, any strides.
// Backward: inputs |g| (the forward tensors x and y may follow and are
// ignored), outputs |dx|: dx is g transposed back by the same two axes (a swap
// is its own inverse). As in libnnc (whose bitmask is DATA_TRANSFER's), one
// call may carry several pairs: forward |x_1..x_n| -> |y_1..y_n|, backward
// |g_1..g_n|...| -> |dx_1..dx_n|, each pair transposed alone.
#include "cmd/util/transpose.hpp"

#include <string>

#include "cmd/util/util.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc::util {

namespace {


// libnnc's rule: output i is input i with the two axes swapped.
void transpose_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                    const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && i < input_size; i++) {
    const int nd = nd_of(inputs[i].dim);
    outputs[i] = inputs[i];
    const int a = p.transpose.axis[0], b = p.transpose.axis[1];
    if (a >= 0 && a < nd && b >= 0 && b < nd) {
      outputs[i].dim[a] = inputs[i].dim[b];
      outputs[i].dim[b] = inputs[i].dim[a];
    }
  }
}

void validate_pair(const ccv_nnc_cmd_t& cmd, const char* name, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y) {
  NNC_CHECK(x && y, "%s: the input and the output must not be NULL", name);
  const int nd = nd_of(x->info.dim);
  const int a = cmd.info.transpose.axis[0], b = cmd.info.transpose.axis[1];
  NNC_CHECK(a >= 0 && a < nd && b >= 0 && b < nd, "%s: axes %d and %d: a %d-dimensional tensor has axes 0 to %d", name,
            a, b, nd, nd - 1);
  NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) == CCV_GET_DATA_TYPE(y->info.datatype), "%s: input is %s, output %s",
            name, datatype_name(CCV_GET_DATA_TYPE(x->info.datatype)),
            datatype_name(CCV_GET_DATA_TYPE(y->info.datatype)));
  int want[kMaxDim] = {};
  for (int i = 0; i < nd; i++) want[i] = x->info.dim[i];
  want[a] = x->info.dim[b];
  want[b] = x->info.dim[a];
  bool same = nd_of(y->info.dim) == nd;
  for (int i = 0; i < nd && same; i++) same = y->info.dim[i] == want[i];
  NNC_CHECK(same, "%s: swapping axes %d and %d of %s gives %s, but the output is %s", name, a, b,
            shape_string(x->info.dim).c_str(), shape_string(want).c_str(), shape_string(y->info.dim).c_str());
}

void validate(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_TRANSPOSE_FORWARD;
  const char* name = forward ? "TRANSPOSE_FORWARD" : "TRANSPOSE_BACKWARD";
  NNC_CHECK(output_size >= 1, "%s: takes at least one output (got %d)", name, output_size);
  NNC_CHECK(forward ? input_size == output_size : input_size >= output_size && input_size <= 3 * output_size,
            "%s: takes %s for %d output%s (got %d inputs)", name,
            forward ? "one input per output |x_1..x_n|" : "inputs |g_1..g_n| (then the unused x and y)", output_size,
            output_size == 1 ? "" : "s", input_size);
  for (int i = 0; i < output_size; i++) validate_pair(cmd, name, inputs[i], outputs[i]);
}

// One kernel call per pair.
template <ccv_nnc_cmd_exec_f F>
NNC_KERNEL(pairwise) {
  for (int i = 0; i < output_size; i++) {
    const int code = F(cmd, hint, flags, inputs + i, 1, outputs + i, 1, stream_context);
    if (code != CCV_NNC_EXEC_SUCCESS) return code;
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_transpose(Registry& r) {
  for (uint32_t id : {CCV_NNC_TRANSPOSE_FORWARD, CCV_NNC_TRANSPOSE_BACKWARD}) {
    CommandInfo c;
    c.cmd = id;
    c.tensor_auto = transpose_auto;
    c.bitmask = id == CCV_NNC_TRANSPOSE_FORWARD ? pairs_forward_bitmask : pairs_backward_bitmask;  // libnnc's
    c.validate = validate;
    r.add_command(c);
    r.add_kernels(cpu_ref(types::kAll), {{id, pairwise<transpose_ref>}});
    r.add_kernels(cpu_opt(types::kAll), {{id, pairwise<transpose_opt>}});
  }
}

}  // namespace nnc::util
