// The pooling family: MAX_POOL and AVERAGE_POOL forward and backward (2-d).
//
//   ccv_nnc_cmd_t pool = CMD_MAX_POOL_FORWARD(2, 2);  // size.dim = {2, 2, 1}
//   ccv_nnc_cmd_exec(pool, HINT((2, 2), (0, 0)), 0, TENSOR_LIST(x), TENSOR_LIST(y), 0);
//
// Window size.dim[0] x size.dim[1] (rows, cols); stride and padding from the
// hint (stride 0 reads as 1); with ccv_nnc_no_hint they are derived from the
// extents of x and y (ccv_nnc_hint_auto's rule). Padding must be smaller than
// the window in each dimension, so every window holds at least one element.
// x NHWC [N,] H, W, C or NCHW [N,] C, H, W; y the same format with OH =
// (H + top + bottom - KH) / SH + 1 rows, OW likewise, and C channels.
// Padding is not data: windows cover only the elements inside the image.
//
// MAX_POOL_FORWARD:  |x| -> |y|; y = the largest element of the window. A NaN
//   in the window wins (y is NaN), as in PyTorch.
// MAX_POOL_BACKWARD: |g|x|y| -> |dx| (y is not read and may be NULL or left
//   out; x is required). Each window's gradient goes to one element: the first,
//   in row-major order within the window, that holds the maximum (or the first
//   NaN). Ties therefore go to the top-left-most element, like PyTorch's
//   indices. Windows that overlap add their gradients.
// AVERAGE_POOL_FORWARD:  |x| -> |y|; y = mean of the window's elements inside
//   the image: padding does not count in the divisor (PyTorch's
//   count_include_pad = False).
// AVERAGE_POOL_BACKWARD: |g|x|y| or |g| -> |dx|; only g is read (dx gives the
//   input's shape): each element of a window gets g / (its element count).
// Shapes and bitmasks are libnnc's: ccv_nnc_hint_tensor_auto grows g back
//   through the window for dx ((g - 1) * stride - padding + window); the
//   bitmask of MAX_POOL_BACKWARD asks for all of |g|x|y|, AVERAGE_POOL's for g.
// Data types: one float type for every tensor: 32F, 64F, 16F, 16BF on CPU_REF
// (in double), 32F on CPU_OPT.
#include "cmd/pool/pool.hpp"

#include <algorithm>
#include <cstring>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace pool {

namespace {

const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int dt_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

bool image_shape(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  return (nd == 3 || nd == 4) && (p.format == CCV_TENSOR_FORMAT_NHWC || p.format == CCV_TENSOR_FORMAT_NCHW);
}

void tensor_auto_forward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  ccv_nnc_tensor_param_t y = inputs[0];
  if (image_shape(y)) {
    const int nd = nd_of(y.dim);
    const int hi = y.format == CCV_TENSOR_FORMAT_NHWC ? nd - 3 : nd - 2;
    for (int i = 0; i < 2; i++) {
      const int k = params.size.dim[i] > 0 ? params.size.dim[i] : 1;
      const int s = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
      const int span = y.dim[hi + i] + hint.border.begin[i] + hint.border.end[i] - k;
      y.dim[hi + i] = span < 0 ? 0 : span / s + 1;
    }
  }
  for (int i = 0; i < output_size; i++) outputs[i] = y;
}

// libnnc's rule: dx is g's parameters with each spatial extent grown back
// through the window, (g - 1) * stride - top - bottom + window (the inverse
// of the forward's extent when the division was exact).
void tensor_auto_backward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  ccv_nnc_tensor_param_t dx = inputs[0];
  if (image_shape(dx)) {
    const int nd = nd_of(dx.dim);
    const int hi = dx.format == CCV_TENSOR_FORMAT_NHWC ? nd - 3 : nd - 2;
    for (int i = 0; i < 2; i++) {
      const int k = params.size.dim[i] > 0 ? params.size.dim[i] : 1;
      const int s = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
      const int extent = (dx.dim[hi + i] - 1) * s - hint.border.begin[i] - hint.border.end[i] + k;
      dx.dim[hi + i] = std::max(extent, 0);
    }
  }
  for (int i = 0; i < output_size; i++) outputs[i] = dx;
}

// libnnc's predicates on the first word: the forward needs x; MAX_POOL's
// backward |g|x|y| all three (CPU kernels here read only g and x);
// AVERAGE_POOL's backward only g.
bool bitmask_forward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                     const uint64_t* outputs, int output_bitmask_size) {
  return (word0(inputs, input_bitmask_size) & 1u) == 1u && word0(outputs, output_bitmask_size) == 1u;
}

bool bitmask_max_backward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                          const uint64_t* outputs, int output_bitmask_size) {
  return (word0(inputs, input_bitmask_size) & 7u) == 7u && word0(outputs, output_bitmask_size) == 1u;
}

bool bitmask_avg_backward(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int input_bitmask_size,
                          const uint64_t* outputs, int output_bitmask_size) {
  return (word0(inputs, input_bitmask_size) & 1u) == 1u && word0(outputs, output_bitmask_size) == 1u;
}

const char* name_of(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_MAX_POOL_FORWARD: return "MAX_POOL_FORWARD";
    case CCV_NNC_MAX_POOL_BACKWARD: return "MAX_POOL_BACKWARD";
    case CCV_NNC_AVERAGE_POOL_FORWARD: return "AVERAGE_POOL_FORWARD";
    default: return "AVERAGE_POOL_BACKWARD";
  }
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = name_of(cmd.cmd);
  NNC_CHECK(input_size == 1 && output_size == 1, "%s: takes one input |x| and one output |y| (got %d and %d)", name,
            input_size, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: x and y are required", name);
  geometry(cmd, hint, inputs[0], outputs[0], name);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = name_of(cmd.cmd);
  const bool max = cmd.cmd == CCV_NNC_MAX_POOL_BACKWARD;
  NNC_CHECK(input_size >= (max ? 2 : 1) && input_size <= 3, "%s: takes inputs %s (got %d)", name,
            max ? "|g|x|y| (y optional)" : "|g|x|y| or |g|", input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output |dx| (got %d)", name, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: g (input 0) and dx (output 0) are required", name);
  ccv_nnc_tensor_t* x = input_size > 1 ? inputs[1] : nullptr;
  NNC_CHECK(!max || x, "%s: x (input 1) is required to find each window's maximum", name);
  geometry(cmd, hint, outputs[0], inputs[0], name);
  if (x) {
    NNC_CHECK(dt_of(x) == dt_of(outputs[0]), "%s: x is %s but dx is %s", name, dt_name(x), dt_name(outputs[0]));
    NNC_CHECK(x->info.format == outputs[0]->info.format && same_shape(x->info, outputs[0]->info), "%s: x is %s %s but dx is %s %s; they must match", name, format_name(x->info.format),
              shape_string(x->info.dim).c_str(), format_name(outputs[0]->info.format),
              shape_string(outputs[0]->info.dim).c_str());
  }
  ccv_nnc_tensor_t* y = input_size > 2 ? inputs[2] : nullptr;
  if (y) {
    NNC_CHECK(dt_of(y) == dt_of(inputs[0]), "%s: y is %s but g is %s", name, dt_name(y), dt_name(inputs[0]));
    NNC_CHECK(y->info.format == inputs[0]->info.format && same_shape(y->info, inputs[0]->info), "%s: y is %s but g is %s; they must match", name, shape_string(y->info.dim).c_str(),
              shape_string(inputs[0]->info.dim).c_str());
  }
}

}  // namespace

Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& given, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* y, const char* name) {
  NNC_CHECK(dt_of(x) & types::kFloat, "%s: the input is %s; pooling takes 32F, 64F, 16F and 16BF", name, dt_name(x));
  NNC_CHECK(dt_of(y) == dt_of(x), "%s: the pooled tensor is %s but the input is %s; they must share one type", name,
            dt_name(y), dt_name(x));
  NNC_CHECK(image_shape(x->info), "%s: the input is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", name,
            format_name(x->info.format), shape_string(x->info.dim).c_str());
  NNC_CHECK(nd_of(y->info.dim) == nd_of(x->info.dim) && y->info.format == x->info.format,
            "%s: the pooled tensor is %s %s but the input is %s %s; same rank and format expected", name,
            format_name(y->info.format), shape_string(y->info.dim).c_str(), format_name(x->info.format),
            shape_string(x->info.dim).c_str());
  const ccv_nnc_cmd_param_t& p = cmd.info;
  NNC_CHECK(p.size.dim[0] > 0 && p.size.dim[1] > 0, "%s: the window (size.dim) is %dx%d; both must be > 0", name,
            p.size.dim[0], p.size.dim[1]);
  const ccv_nnc_hint_t hint = is_no_hint(given) ? hint_auto(p, x->info, y->info) : given;
  Geometry g;
  g.datatype = dt_of(x);
  g.x = image_of(x);
  g.y = image_of(y);
  g.N = g.x.n, g.H = g.x.h, g.W = g.x.w, g.C = g.x.c;
  g.KH = p.size.dim[0], g.KW = p.size.dim[1];
  for (int i = 0; i < 2; i++)
    NNC_CHECK(hint.stride.dim[i] >= 0 && hint.border.begin[i] >= 0 && hint.border.end[i] >= 0,
              "%s: the hint's stride / border in dimension %d is negative (stride %d, border %d, %d)", name, i,
              hint.stride.dim[i], hint.border.begin[i], hint.border.end[i]);
  g.SH = hint.stride.dim[0] > 0 ? hint.stride.dim[0] : 1;
  g.SW = hint.stride.dim[1] > 0 ? hint.stride.dim[1] : 1;
  g.PT = hint.border.begin[0], g.PL = hint.border.begin[1];
  g.PB = hint.border.end[0], g.PR = hint.border.end[1];
  NNC_CHECK(g.PT < g.KH && g.PB < g.KH && g.PL < g.KW && g.PR < g.KW,
            "%s: padding %d,%d / %d,%d must be smaller than the %dx%d window", name, g.PT, g.PB, g.PL, g.PR, g.KH,
            g.KW);
  const int sh = g.H + g.PT + g.PB - g.KH, sw = g.W + g.PL + g.PR - g.KW;
  NNC_CHECK(sh >= 0 && sw >= 0, "%s: the %dx%d window does not fit the %dx%d input with padding %d,%d / %d,%d", name,
            g.KH, g.KW, g.H, g.W, g.PT, g.PB, g.PL, g.PR);
  g.OH = sh / g.SH + 1, g.OW = sw / g.SW + 1;
  NNC_CHECK(g.y.n == g.N && g.y.h == g.OH && g.y.w == g.OW && g.y.c == g.C,
            "%s: the pooled tensor is %s but the input %s with a %dx%d window, stride %dx%d and padding %d,%d / "
            "%d,%d gives %d x %d x %d x %d (N, OH, OW, C)",
            name, shape_string(y->info.dim).c_str(), shape_string(x->info.dim).c_str(), g.KH, g.KW, g.SH, g.SW, g.PT,
            g.PB, g.PL, g.PR, g.N, g.OH, g.OW, g.C);
  return g;
}

}  // namespace pool

void register_pool(Registry& r) {
  for (uint32_t id : {CCV_NNC_MAX_POOL_FORWARD, CCV_NNC_AVERAGE_POOL_FORWARD}) {
    CommandInfo c;
    c.cmd = id;
    c.tensor_auto = pool::tensor_auto_forward;
    c.bitmask = pool::bitmask_forward;
    c.validate = pool::validate_forward;
    c.windowed = true;
    r.add_command(c);
  }
  for (uint32_t id : {CCV_NNC_MAX_POOL_BACKWARD, CCV_NNC_AVERAGE_POOL_BACKWARD}) {
    CommandInfo c;
    c.cmd = id;
    c.tensor_auto = pool::tensor_auto_backward;
    c.bitmask = id == CCV_NNC_MAX_POOL_BACKWARD ? pool::bitmask_max_backward : pool::bitmask_avg_backward;
    c.validate = pool::validate_backward;
    // Not `windowed`: core would derive the hint from g to dx; pool::geometry
    // derives it from dx to g instead.
    r.add_command(c);
  }
  r.add_kernels(cpu_ref(types::kFloat, formats::kImage), {{CCV_NNC_MAX_POOL_FORWARD, pool::max_forward_ref},
                                                          {CCV_NNC_MAX_POOL_BACKWARD, pool::max_backward_ref},
                                                          {CCV_NNC_AVERAGE_POOL_FORWARD, pool::avg_forward_ref},
                                                          {CCV_NNC_AVERAGE_POOL_BACKWARD, pool::avg_backward_ref}});
  pool::register_cpu_opt(r);
}

}  // namespace nnc
