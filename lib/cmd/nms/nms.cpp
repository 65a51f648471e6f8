// NMS: greedy non-maximum suppression over scored boxes.
//   Forward inputs |a|, outputs |b|c|: a is [n, k] or [batch, n, k] (k >= 5),
//     each row (score, x, y, width, height, then any extra columns, carried
//     along); b has a's shape and floating-point type; c is 32S, [n] or
//     [batch, n]. Per batch: the rows are ranked by score, highest first (ties
//     keep a's order; NaN scores rank last), and a row is kept unless its box's
//     IoU with a box kept before it is greater than iou_threshold (equal is
//     kept). b's first m rows are the m kept rows in rank order and c's first m
//     entries their row numbers in a; b's remaining rows are 0 and c's -1.
//   Backward inputs |gb|gc|a|b|c| (gb and c used), outputs |da|: da has a's
//     shape; da's row c[j] is gb's row j for each kept j, every other row 0.
// Shapes and bitmasks are libnnc's: b takes a's parameters, c is 32S with a's
// first extent (and its second when a is 3-d); da takes a's (input 2); the
// forward needs a and both outputs, the backward gb and c; no in-place pair.
#include "cmd/nms/nms.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace nms {

double iou(double ax, double ay, double aw, double ah, double bx, double by, double bw, double bh) {
  aw = std::max(aw, 0.0), ah = std::max(ah, 0.0), bw = std::max(bw, 0.0), bh = std::max(bh, 0.0);
  const double iw = std::max(0.0, std::min(ax + aw, bx + bw) - std::max(ax, bx));
  const double ih = std::max(0.0, std::min(ay + ah, by + bh) - std::max(ay, by));
  const double inter = iw * ih, uni = aw * ah + bw * bh - inter;
  return uni > 0 ? inter / uni : 0.0;
}

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

// The boxes tensor (a, b, gb or da): 2-d or 3-d, rows of at least 5, a float type.
void check_boxes(const char* name, const char* role, const ccv_nnc_tensor_t* t) {
  const int nd = nd_of(t->info.dim);
  NNC_CHECK(nd == 2 || nd == 3, "%s: %s is %s; it takes [n, k] or [batch, n, k]", name, role,
            shape_string(t->info.dim).c_str());
  NNC_CHECK(t->info.dim[nd - 1] >= 5, "%s: %s's rows hold %d values; each needs (score, x, y, width, height)", name,
            role, t->info.dim[nd - 1]);
  NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) & types::kFloat, "%s: %s is %s; it takes 16F, 16BF, 32F and 64F",
            name, role, dt(t));
}

// c: 32S, [n] for 2-d boxes, [batch, n] for 3-d ones.
void check_index(const char* name, const ccv_nnc_tensor_t* c, const ccv_nnc_tensor_t* boxes, const char* role) {
  NNC_CHECK(CCV_GET_DATA_TYPE(c->info.datatype) == CCV_32S, "%s: c is %s; it is 32S", name, dt(c));
  const int nd = nd_of(boxes->info.dim);
  int want[kMaxDim] = {};
  want[0] = boxes->info.dim[0];
  if (nd == 3) want[1] = boxes->info.dim[1];
  NNC_CHECK(same_shape(c->info.dim, want), "%s: %s is %s, so c must be %s (it is %s)", name, role,
            shape_string(boxes->info.dim).c_str(), shape_string(want).c_str(), shape_string(c->info.dim).c_str());
}

void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "NMS_FORWARD";
  NNC_CHECK(input_size == 1 && output_size == 2, "%s: takes input |a| and outputs |b|c| (got %d inputs, %d outputs)",
            name, input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0] && outputs[1], "%s: a (input 0), b and c (outputs 0, 1) are required", name);
  const ccv_nnc_tensor_t *a = inputs[0], *b = outputs[0];
  check_boxes(name, "a", a);
  NNC_CHECK(same_shape(a->info.dim, b->info.dim), "%s: b is %s but a is %s", name, shape_string(b->info.dim).c_str(),
            shape_string(a->info.dim).c_str());
  NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype), "%s: b is %s but a is %s",
            name, dt(b), dt(a));
  check_index(name, outputs[1], a, "a");
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "NMS_BACKWARD";
  NNC_CHECK(input_size == 5 && output_size == 1,
            "%s: takes inputs |gb|gc|a|b|c| and output |da| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  NNC_CHECK(inputs[0] && inputs[4] && outputs[0], "%s: gb (input 0), c (input 4) and da (output 0) are required",
            name);
  const ccv_nnc_tensor_t *g = inputs[0], *da = outputs[0];
  check_boxes(name, "gb", g);
  NNC_CHECK(same_shape(g->info.dim, da->info.dim), "%s: da is %s but gb is %s", name,
            shape_string(da->info.dim).c_str(), shape_string(g->info.dim).c_str());
  NNC_CHECK(CCV_GET_DATA_TYPE(g->info.datatype) == CCV_GET_DATA_TYPE(da->info.datatype), "%s: da is %s but gb is %s",
            name, dt(da), dt(g));
  if (inputs[2])
    NNC_CHECK(same_shape(inputs[2]->info.dim, da->info.dim), "%s: da is %s but a is %s", name,
              shape_string(da->info.dim).c_str(), shape_string(inputs[2]->info.dim).c_str());
  check_index(name, inputs[4], g, "gb");
}

void forward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  if (output_size < 2) return;
  outputs[1] = inputs[0];
  outputs[1].datatype = CCV_32S;
  std::memset(outputs[1].dim, 0, sizeof(outputs[1].dim));
  outputs[1].dim[0] = inputs[0].dim[0];
  outputs[1].dim[1] = nd_of(inputs[0].dim) <= 2 ? 0 : inputs[0].dim[1];
}

// da takes a's parameters (input 2).
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 3 || output_size < 1) return;
  outputs[0] = inputs[2];
}

// a; exactly b and c.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  return (word0(inputs, isz) & 1u) == 1u && word0(outputs, osz) == 3u;
}

// gb and c (gc, a and b unused); exactly da.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                      int osz) {
  return (word0(inputs, isz) & 17u) == 17u && word0(outputs, osz) == 1u;
}

}  // namespace

}  // namespace nms

void register_nms(Registry& r) {
  using namespace nms;
  r.add_command({.cmd = CCV_NNC_NMS_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_NMS_BACKWARD, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kFloat | CCV_32S), {{CCV_NNC_NMS_FORWARD, forward_ref}, {CCV_NNC_NMS_BACKWARD, backward_ref}});
}

}  // namespace nnc
