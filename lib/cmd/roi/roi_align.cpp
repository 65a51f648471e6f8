// ROI_ALIGN: each box's region of a feature map, averaged into a fixed grid
// of bins by bilinear sampling (Mask R-CNN's RoIAlign, pixel centres at
// half-integers).
//   Forward inputs |a|boxes|, outputs |b|: a is an image, [n, h, w, c] (NHWC)
//     or [n, c, h, w] (NCHW), or 3-d without n; boxes is [r, 4] (or [4], one
//     box), each (x, y, width, height) as fractions of a's width and height;
//     b is [r, rows, cols, c] in a's format (3-d when a is and there is one
//     box), rows x cols from the command's size.dim[0], [1]. Box k reads image
//     k when a has r images, image 0 when a has one. In map units the box is
//     x0 = x * w, y0 = y * h, extents width * w, height * h (negative counts as
//     0); bin (i, j) spans 1 / rows of its height and 1 / cols of its width,
//     and averages ceil(bin height) x ceil(bin width) samples (from 1 to
//     1024 each way) at the centres of an even subgrid of the bin; a box
//     value that is not finite is an error. A sample at map point
//     (y, x) reads pixel row y - 1/2, column x - 1/2 bilinearly: beyond one
//     pixel outside the map it is 0, otherwise the point is clamped to
//     [0, h - 1] x [0, w - 1] first.
//   Backward inputs |g|a|boxes| (g and boxes used; a fourth, b, is ignored),
//     outputs |da|: da has a's shape, the adjoint of the forward's linear map
//     (each sample's share of g spread over its four pixels). No gradient
//     flows to the boxes.
// Shapes and bitmasks are libnnc's: b is a with its height and width replaced
// by rows and cols (at least 1 each); da takes input 1's (a's) parameters; the
// forward needs a and boxes, the backward g and boxes; no in-place pair.
#include "cmd/roi/roi_align.hpp"

#include "core/error.hpp"
#include "core/registry.hpp"
#include "cmd/common/image.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace roi_align {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }


int box_count(const ccv_nnc_tensor_t* boxes) { return nd_of(boxes->info.dim) == 1 ? 1 : boxes->info.dim[0]; }

void check_image(const char* name, const char* role, const ccv_nnc_tensor_t* t) {
  const int nd = nd_of(t->info.dim);
  NNC_CHECK((nd == 3 || nd == 4) &&
                (t->info.format == CCV_TENSOR_FORMAT_NHWC || t->info.format == CCV_TENSOR_FORMAT_NCHW),
            "%s: %s is %s %s; it takes a 3-d or 4-d NHWC or NCHW image", name, role, format_name(t->info.format),
            shape_string(t->info.dim).c_str());
  NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) & types::kFloat, "%s: %s is %s; it takes 16F, 16BF, 32F and 64F",
            name, role, dt(t));
}

// The map (a or da), the boxes and the pooled tensor (b or g) fit together.
void check_all(const char* name, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* map, const char* mrole,
               const ccv_nnc_tensor_t* boxes, const ccv_nnc_tensor_t* pooled, const char* prole) {
  check_image(name, mrole, map);
  check_image(name, prole, pooled);
  const int bnd = nd_of(boxes->info.dim);
  NNC_CHECK((bnd == 1 || bnd == 2) && boxes->info.dim[bnd - 1] == 4,
            "%s: boxes is %s; it takes [r, 4] or [4] (x, y, width, height)", name,
            shape_string(boxes->info.dim).c_str());
  NNC_CHECK(CCV_GET_DATA_TYPE(boxes->info.datatype) & types::kFloat, "%s: boxes is %s; it takes a floating-point type",
            name, dt(boxes));
  NNC_CHECK(map->info.format == pooled->info.format && CCV_GET_DATA_TYPE(map->info.datatype) ==
                                                           CCV_GET_DATA_TYPE(pooled->info.datatype),
            "%s: %s is %s %s but %s is %s %s", name, prole, format_name(pooled->info.format), dt(pooled), mrole,
            format_name(map->info.format), dt(map));
  const int rows = cmd.info.size.dim[0] > 1 ? cmd.info.size.dim[0] : 1;
  const int cols = cmd.info.size.dim[1] > 1 ? cmd.info.size.dim[1] : 1;
  const int r = box_count(boxes), mnd = nd_of(map->info.dim), pnd = nd_of(pooled->info.dim);
  const int images = mnd == 4 ? map->info.dim[0] : 1;
  NNC_CHECK(images == r || images == 1, "%s: %s holds %d images for %d boxes; it needs one per box, or one for all",
            name, mrole, images, r);
  const int channels = map->info.format == CCV_TENSOR_FORMAT_NCHW ? map->info.dim[mnd - 3] : map->info.dim[mnd - 1];
  int want[kMaxDim] = {};
  int k = 0;
  if (pnd == 4 || r != 1) want[k++] = r;
  if (map->info.format == CCV_TENSOR_FORMAT_NCHW)
    want[k++] = channels, want[k++] = rows, want[k++] = cols;
  else
    want[k++] = rows, want[k++] = cols, want[k++] = channels;
  NNC_CHECK(same_shape(pooled->info.dim, want), "%s: %s is %s with %d boxes and a %d x %d grid, so %s must be %s (it is %s)",
            name, mrole, shape_string(map->info.dim).c_str(), r, rows, cols, prole, shape_string(want).c_str(),
            shape_string(pooled->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "ROI_ALIGN_FORWARD";
  NNC_CHECK(input_size == 2 && output_size == 1,
            "%s: takes inputs |a|boxes| and output |b| (got %d inputs, %d outputs)", name, input_size, output_size);
  NNC_CHECK(inputs[0] && inputs[1] && outputs[0], "%s: a, boxes (inputs 0, 1) and b (output 0) are required", name);
  check_all(name, cmd, inputs[0], "a", inputs[1], outputs[0], "b");
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "ROI_ALIGN_BACKWARD";
  NNC_CHECK(input_size >= 3 && input_size <= 4 && output_size >= 1 && output_size <= 2,
            "%s: takes inputs |g|a|boxes| and output |da| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  NNC_CHECK(output_size < 2 || !outputs[1], "%s: the boxes get no gradient; output 1 must be NULL", name);
  NNC_CHECK(inputs[0] && inputs[2] && outputs[0], "%s: g (input 0), boxes (input 2) and da (output 0) are required",
            name);
  if (inputs[1])
    NNC_CHECK(same_shape(inputs[1]->info.dim, outputs[0]->info.dim), "%s: da is %s but a is %s", name,
              shape_string(outputs[0]->info.dim).c_str(), shape_string(inputs[1]->info.dim).c_str());
  check_all(name, cmd, outputs[0], "da", inputs[2], inputs[0], "g");
}

void forward_auto(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  const int hw = image_height_axis(inputs[0]);
  if (hw < 0) return;
  outputs[0].dim[hw] = params.size.dim[0] > 1 ? params.size.dim[0] : 1;
  outputs[0].dim[hw + 1] = params.size.dim[1] > 1 ? params.size.dim[1] : 1;
}

// da takes a's parameters (input 1).
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2 || output_size < 1) return;
  outputs[0] = inputs[1];
}

// a and boxes; exactly b.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return (word0(inputs, isz) & 3u) == 3u && word0(outputs, osz) == 1u;
}

// g and boxes (a not needed: the map is linear); exactly da.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                      const uint64_t* outputs, int osz) {
  return (word0(inputs, isz) & 5u) == 5u && word0(outputs, osz) == 1u;
}

}  // namespace

}  // namespace roi_align

void register_roi_align(Registry& r) {
  using namespace roi_align;
  r.add_command({.cmd = CCV_NNC_ROI_ALIGN_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_ROI_ALIGN_BACKWARD, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kFloat, formats::kImage),
                {{CCV_NNC_ROI_ALIGN_FORWARD, forward_ref}, {CCV_NNC_ROI_ALIGN_BACKWARD, backward_ref}});
}

}  // namespace nnc
