// COMPRESSION_LSSC: lossy block compression of 16F images (activations kept
// for a backward pass), 4 x 4 pixels of one channel in 4 halves (4:1).
//   Forward inputs |x_0..x_{n-1}|, outputs |c_0..c_{n-1}| (every slot filled):
//     x_i a 16F image, [n, h, w, ch] (NHWC), [n, ch, h, w] (NCHW) or 3-d
//     without n; c_i x_i's shape with h -> ceil(h / 4) and w -> 4 ceil(w / 4),
//     16F, same format.
//   Backward inputs |c_0..c_{m-1}, ...|, outputs |y_0..y_{k-1}| (k <= m; the
//     inputs after the first k are ignored): y_i the image c_i decodes to, any
//     height and width that compress to c_i's (libnnc's shape is the padded
//     one, 4 h' x w').
//   The format (the shape is libnnc's; the bits are ours): the block of rows
//     4 by .. 4 by + 3 and columns 4 bx .. 4 bx + 3 of one channel (the rows
//     and columns inside the image only) is stored in c at row by, columns
//     4 bx .. 4 bx + 3 of that channel:
//       [0] lo, the block's smallest value, [1] hi, its largest (NaN ignored;
//       both 0 for a block of NaNs),
//       [2], [3] the bits of a 32-bit word (low half in [2]) holding a 2-bit
//       level for each pixel, pixel (r, c) of the block at bits 2 (4 r + c);
//       outside the image the level is 0.
//     Level k decodes to lo + (hi - lo) k / 3 (in double, rounded once to 16F),
//     so level 0 is lo and level 3 is hi exactly; a pixel is given the level
//     nearest to its value (the lower on a tie), a NaN level 0. A block whose
//     values all lie on its four levels decodes exactly (so does one of at most
//     two distinct values); otherwise the error is at most (hi - lo) / 6 plus
//     the final rounding.
// Bitmasks are libnnc's (every forward slot filled, inputs and outputs one for
// one; the backward's outputs a run no longer than its inputs); no in-place pair.
#include "cmd/compression/lssc.hpp"

#include "cmd/common/checks.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "cmd/common/image.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace lssc {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }


// `image` compresses to `packed`: same format, 16F, same axes but height and width.
void check_pair(const char* name, int i, const ccv_nnc_tensor_t* image, const ccv_nnc_tensor_t* packed) {
  for (const ccv_nnc_tensor_t* t : {image, packed}) {
    NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == CCV_16F, "%s: slot %d is %s; it takes 16F", name, i, dt(t));
    NNC_CHECK(image_height_axis(t->info) >= 0, "%s: slot %d is %s %s; it takes a 3-d or 4-d NHWC or NCHW image", name, i,
              format_name(t->info.format), shape_string(t->info.dim).c_str());
  }
  NNC_CHECK(image->info.format == packed->info.format, "%s: slot %d: the image is %s but the compressed tensor %s",
            name, i, format_name(image->info.format), format_name(packed->info.format));
  const int hw = image_height_axis(image->info);
  int want[kMaxDim] = {};
  for (int d = 0; d < kMaxDim; d++) want[d] = image->info.dim[d];
  want[hw] = (image->info.dim[hw] + 3) / 4;
  want[hw + 1] = (image->info.dim[hw + 1] + 3) / 4 * 4;
  NNC_CHECK(same_shape(want, packed->info.dim), "%s: slot %d: an image %s compresses to %s, not %s", name, i,
            shape_string(image->info.dim).c_str(), shape_string(want).c_str(),
            shape_string(packed->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "COMPRESSION_LSSC_FORWARD";
  NNC_CHECK(input_size >= 1 && input_size == output_size, "%s: one output per input (got %d inputs, %d outputs)",
            name, input_size, output_size);
  for (int i = 0; i < input_size; i++) {
    NNC_CHECK(inputs[i] && outputs[i], "%s: slot %d is NULL; every slot is needed", name, i);
    check_pair(name, i, inputs[i], outputs[i]);
  }
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "COMPRESSION_LSSC_BACKWARD";
  NNC_CHECK(output_size >= 1 && input_size >= output_size,
            "%s: one compressed input per output first (got %d inputs, %d outputs)", name, input_size, output_size);
  for (int i = 0; i < output_size; i++) {
    NNC_CHECK(inputs[i] && outputs[i], "%s: slot %d is NULL; every slot is needed", name, i);
    check_pair(name, i, outputs[i], inputs[i]);
  }
}

void forward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && i < input_size; i++) {
    outputs[i] = inputs[i];
    const int hw = image_height_axis(inputs[i]);
    if (hw < 0) continue;
    outputs[i].dim[hw] = (inputs[i].dim[hw] + 3) / 4;
    outputs[i].dim[hw + 1] = (inputs[i].dim[hw + 1] + 3) / 4 * 4;
  }
}

// The padded image: 4 rows per compressed row, the width as it is.
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && i < input_size; i++) {
    outputs[i] = inputs[i];
    const int hw = image_height_axis(inputs[i]);
    if (hw >= 0) outputs[i].dim[hw] = inputs[i].dim[hw] * 4;
  }
}

bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs, int isz,
                     const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return ones_prefix(inputs, isz, &in) && ones_prefix(outputs, osz, &out) && out == in &&
         input_size == output_size && input_size == in;
}

bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int output_size, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  int in = 0, out = 0;
  return ones_prefix(inputs, isz, &in) && ones_prefix(outputs, osz, &out) && out <= in && out == output_size;
}

}  // namespace

}  // namespace lssc

void register_lssc(Registry& r) {
  using namespace lssc;
  r.add_command({.cmd = CCV_NNC_COMPRESSION_LSSC_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_COMPRESSION_LSSC_BACKWARD, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(CCV_16F, formats::kImage),
                {{CCV_NNC_COMPRESSION_LSSC_FORWARD, forward_ref}, {CCV_NNC_COMPRESSION_LSSC_BACKWARD, backward_ref}});
}

}  // namespace nnc
