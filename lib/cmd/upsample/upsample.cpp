// UPSAMPLE: resize the two spatial axes of an image tensor (see height_axis
// in upsample.hpp for which they are: NHWC [N, H, W, C] or [H, W, C], NCHW
// [N, C, H, W] or [C, H, W], and [H, W]) to the output's extents.
//   upsample.type CCV_NNC_UPSAMPLE_NEAREST or _BILINEAR; align_corners maps
//   the first and last pixel centres of input and output onto each other
//   instead of their cells' edges (upsample.hpp, tap()). width_scale /
//   height_scale size the output in tensor_auto (extent * scale, rounded);
//   the kernels take the extents of the tensors they are given, so a smaller
//   output downsamples.
//   Forward inputs |x|, outputs |y|: same type, format and extents outside
//     the spatial axes.
//   Backward inputs |g|x|y| (only g is read), outputs |dx|: each x element
//     gathers the weights it was read with times g.
// Shapes and bitmasks are libnnc's: the forward scales the spatial axes; the
// backward's dx takes the gradient's shape (libnnc's rule; a caller passes
// dx shaped like x); no in-place pair.
#include "cmd/upsample/upsample.hpp"

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace upsample {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// `small` and `big` (x and y, or dx and g) agree outside the spatial axes.
void check_pair(const char* name, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* a, const char* ra,
                const ccv_nnc_tensor_t* b, const char* rb) {
  const int t = cmd.info.upsample.type;
  NNC_CHECK(t == CCV_NNC_UPSAMPLE_NEAREST || t == CCV_NNC_UPSAMPLE_BILINEAR,
            "%s: upsample.type %d is neither CCV_NNC_UPSAMPLE_NEAREST nor _BILINEAR", name, t);
  NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) & types::kFloat, "%s: %s is %s; it takes 16F, 16BF, 32F and 64F",
            name, ra, dt(a));
  NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype), "%s: %s is %s but %s is %s",
            name, ra, dt(a), rb, dt(b));
  NNC_CHECK(a->info.format == b->info.format, "%s: %s is %s but %s is %s", name, ra, format_name(a->info.format), rb,
            format_name(b->info.format));
  const int nd = nd_of(a->info.dim);
  NNC_CHECK(nd >= 2 && nd <= 4, "%s: %s is %s; it takes 2-d to 4-d images", name, ra,
            shape_string(a->info.dim).c_str());
  NNC_CHECK(nd_of(b->info.dim) == nd, "%s: %s is %s but %s is %s; they need the same number of axes", name, ra,
            shape_string(a->info.dim).c_str(), rb, shape_string(b->info.dim).c_str());
  const int h = height_axis(a->info);
  for (int i = 0; i < nd; i++)
    NNC_CHECK(i == h || i == h + 1 || a->info.dim[i] == b->info.dim[i],
              "%s: %s is %s but %s is %s; only the spatial axes %d and %d (%s) may differ", name, ra,
              shape_string(a->info.dim).c_str(), rb, shape_string(b->info.dim).c_str(), h, h + 1,
              format_name(a->info.format));
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "UPSAMPLE_FORWARD";
  NNC_CHECK(input_size == 1 && output_size == 1, "%s: takes input |x| and output |y| (got %d inputs, %d outputs)",
            name, input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: x (input 0) and y (output 0) are required", name);
  check_pair(name, cmd, inputs[0], "x", outputs[0], "y");
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "UPSAMPLE_BACKWARD";
  NNC_CHECK(input_size >= 1 && input_size <= 3 && output_size == 1,
            "%s: takes inputs |g|x|y| and output |dx| (got %d inputs, %d outputs)", name, input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: g (input 0) and dx (output 0) are required", name);
  check_pair(name, cmd, outputs[0], "dx", inputs[0], "g");
}

void forward_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  const int h = height_axis(inputs[0]);
  if (h < 0) return;
  outputs[0].dim[h] = static_cast<int>(inputs[0].dim[h] * p.upsample.height_scale + 0.5);
  outputs[0].dim[h + 1] = static_cast<int>(inputs[0].dim[h + 1] * p.upsample.width_scale + 0.5);
}

// Exactly |x| and |y|.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return word0(inputs, isz) == 1u && word0(outputs, osz) == 1u;
}

// g present (x and y optional), exactly |dx|.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  return (word0(inputs, isz) & 1u) == 1u && word0(outputs, osz) == 1u;
}

}  // namespace

}  // namespace upsample

void register_upsample(Registry& r) {
  using namespace upsample;
  r.add_command({.cmd = CCV_NNC_UPSAMPLE_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_UPSAMPLE_BACKWARD, .tensor_auto = shape::same_as_first_input, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kFloat),
                {{CCV_NNC_UPSAMPLE_FORWARD, forward_ref}, {CCV_NNC_UPSAMPLE_BACKWARD, backward_ref}});
  r.add_kernels(cpu_opt(types::kWide),
                {{CCV_NNC_UPSAMPLE_FORWARD, forward_opt}, {CCV_NNC_UPSAMPLE_BACKWARD, backward_opt}});
}

}  // namespace nnc
