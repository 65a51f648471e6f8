// PAD: widen each axis i of x by size.dim[i] elements in front and
// pad.end[i] behind (both >= 0; axes past x's dimension count are ignored).
//   type CCV_NNC_PAD_ZERO writes 0s, CCV_NNC_PAD_REPLICATE repeats the edge
//   element, CCV_NNC_PAD_REFLECT (an NNC addition) mirrors the axis around its
//   edge without repeating it (x = a b c d padded by 2 in front: c b a b c d),
//   mirror images following each other for pads longer than the axis.
//   Forward inputs |x|, outputs |y|; y's shape is x's plus begin + end.
//   Backward inputs |g|x| (x only lends its shape to tensor_auto; any later
//   inputs are ignored), outputs |dx|: each dx element sums the g elements
//   that read it (one for zero padding; the edges gather their copies).
// Shapes and bitmasks are libnnc's: the forward's output shape from the
// command's begin and end, the backward's dx shaped like input 1; no
// in-place pair (y is larger than x).
#include "cmd/pad/pad.hpp"

#include <string>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace pad {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

void check_type(const char* name, const ccv_nnc_cmd_t& cmd) {
  const int t = cmd.info.pad.type;
  NNC_CHECK(t == CCV_NNC_PAD_ZERO || t == CCV_NNC_PAD_REPLICATE || t == CCV_NNC_PAD_REFLECT,
            "%s: pad.type %d is none of CCV_NNC_PAD_ZERO, _REPLICATE, _REFLECT", name, t);
}

// `small` padded by the command's begin / end is `big`.
void check_padded(const char* name, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* small, const char* small_role,
                  const ccv_nnc_tensor_t* big, const char* big_role) {
  NNC_CHECK(CCV_GET_DATA_TYPE(small->info.datatype) == CCV_GET_DATA_TYPE(big->info.datatype),
            "%s: %s is %s but %s is %s", name, small_role, dt(small), big_role, dt(big));
  const int nd = nd_of(small->info.dim);
  NNC_CHECK(nd_of(big->info.dim) == nd, "%s: %s is %s but %s is %s; they need the same number of axes", name,
            small_role, shape_string(small->info.dim).c_str(), big_role, shape_string(big->info.dim).c_str());
  int want[kMaxDim] = {};
  for (int i = 0; i < nd; i++) {
    const int b = cmd.info.size.dim[i], e = cmd.info.pad.end[i];
    NNC_CHECK(b >= 0 && e >= 0, "%s: the padding of axis %d is %d in front and %d behind; neither may be negative",
              name, i, b, e);
    want[i] = small->info.dim[i] + b + e;
  }
  NNC_CHECK(same_shape(want, big->info.dim), "%s: %s is %s, so with this padding %s must be %s (it is %s)", name,
            small_role, shape_string(small->info.dim).c_str(), big_role, shape_string(want).c_str(),
            shape_string(big->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "PAD_FORWARD";
  NNC_CHECK(input_size >= 1 && output_size == 1, "%s: takes input |x| and output |y| (got %d inputs, %d outputs)",
            name, input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: x (input 0) and y (output 0) are required", name);
  check_type(name, cmd);
  check_padded(name, cmd, inputs[0], "x", outputs[0], "y");
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "PAD_BACKWARD";
  NNC_CHECK(input_size >= 1 && input_size <= 3 && output_size == 1,
            "%s: takes inputs |g|x| and output |dx| (got %d inputs, %d outputs)", name, input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: g (input 0) and dx (output 0) are required", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(inputs[0]->info.datatype) & types::kFloat,
            "%s: g is %s; the backward takes 16F, 16BF, 32F and 64F", name, dt(inputs[0]));
  check_type(name, cmd);
  check_padded(name, cmd, outputs[0], "dx", inputs[0], "g");
}

void forward_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  const int nd = nd_of(inputs[0].dim);
  for (int i = 0; i < nd; i++) outputs[0].dim[i] += p.size.dim[i] + p.pad.end[i];
}

// dx takes x's shape (input 1). Without x, g's shape less the padding.
void backward_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (output_size < 1 || input_size < 1) return;
  if (input_size >= 2) {
    outputs[0] = inputs[1];
    return;
  }
  outputs[0] = inputs[0];
  const int nd = nd_of(inputs[0].dim);
  for (int i = 0; i < nd; i++) outputs[0].dim[i] -= p.size.dim[i] + p.pad.end[i];
}

// Both directions: input 0 (x or g) present, exactly output 0.
bool bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
             int osz) {
  return (word0(inputs, isz) & 1u) == 1u && word0(outputs, osz) == 1u;
}

}  // namespace

}  // namespace pad

void register_pad(Registry& r) {
  using namespace pad;
  r.add_command({.cmd = CCV_NNC_PAD_FORWARD, .tensor_auto = forward_auto, .bitmask = bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_PAD_BACKWARD, .tensor_auto = backward_auto, .bitmask = bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kAll), {{CCV_NNC_PAD_FORWARD, forward_ref}});
  r.add_kernels(cpu_ref(types::kFloat), {{CCV_NNC_PAD_BACKWARD, backward_ref}});
}

}  // namespace nnc
