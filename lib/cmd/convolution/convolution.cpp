// The convolution family: CONVOLUTION forward and backward (2-d windows).
//
//   ccv_nnc_cmd_t conv = CMD_CONVOLUTION_FORWARD(groups, K, KH, KW, C);
//   ccv_nnc_cmd_exec(conv, HINT((1, 1), (1, 1)), 0, TENSOR_LIST(x, w, bias), TENSOR_LIST(y), 0);
//
// Parameters: size.dim = {KH, KW, C} (the window), convolution.count = K (the
// number of filters, all groups together), convolution.groups (0 reads as 1),
// convolution.dilation[0..1] (0 reads as 1). As in libnnc, execution takes the
// window from the weights: size.dim serves shape inference only (forward
// tensor_auto), so programs written for libnnc that pass it in another order
// (CMD_CONVOLUTION_BACKWARD(1, 4, 2, 3, 5) beside 4x5x3x2 weights) run; the
// forward checks count against w, the backward reads neither. Stride and
// padding come from the hint (stride 0 reads as 1); with ccv_nnc_no_hint the
// hint is derived from the extents of x and y with the weights' dilated window
// ((KH - 1) * DH + 1), the same rule as ccv_nnc_hint_auto.
//
// Forward: inputs |x|w|bias|, bias optional (NULL or absent: 0); output |y|.
//   x  NHWC [N,] H, W, C        or NCHW [N,] C, H, W
//   w  NHWC K, KH, KW, C/groups or NCHW K, C/groups, KH, KW — the weights'
//      own format tag picks their layout, so NHWC data may use NCHW weights.
//   bias: K elements (1-d [K], or any shape holding K elements).
//   y  NHWC [N,] OH, OW, K      or NCHW [N,] K, OH, OW, x's format; OH =
//      (H + top + bottom - ((KH - 1) * DH + 1)) / SH + 1, the same for OW.
//   y[n, oh, ow, k] = bias[k] + sum over kh, kw, c of
//      x[n, oh * SH + kh * DH - top, ow * SW + kw * DW - left, g * C/groups + c]
//      * w[k, kh, kw, c], g = k / (K / groups); x outside the image reads 0.
// Backward: inputs |g|x|w|bias|y| (libnnc's order: the output gradient, then
//   the forward inputs, then the forward output); only g, x (for dw) and w
//   (for dx) are read, so bias and y may be NULL or left out, and x too when
//   dw is not asked for (dx gives its shape). Outputs
//   |dx|dw|dbias|, each optional (NULL or left out): the gradients of x, w and
//   bias, shaped like them. dbias[k] = sum of g over n, oh, ow.
// libnnc's bitmasks: the forward needs |x|w| (two inputs) or |x|w|bias| (three)
//   and y; the backward g with x (then dw, maybe dbias) or with w (then dx,
//   maybe dbias), or g, x and w for dx and dw (maybe dbias). Backward shapes
//   (tensor_auto): each output like the forward input it differentiates.
// Data types: x, w, bias, y (g, dx, dw, dbias) share one float type: 32F,
// 64F, 16F or 16BF on CPU_REF (accumulating in double), 32F on CPU_OPT.
#include "cmd/convolution/convolution.hpp"

#include <algorithm>
#include <cstring>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "cmd/common/conv_rules.hpp"

namespace nnc {

namespace conv {

namespace {

const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int dt_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

int groups_of(const ccv_nnc_cmd_param_t& p) { return p.convolution.groups > 0 ? p.convolution.groups : 1; }
int dilation_of(const ccv_nnc_cmd_param_t& p, int i) {
  return p.convolution.dilation[i] > 0 ? p.convolution.dilation[i] : 1;
}

// Output extent of one spatial dimension, or -1 if the window does not fit.
int out_extent(int x, int begin, int end, int k, int d, int s) {
  const int span = x + begin + end - ((k - 1) * d + 1);
  return span < 0 ? -1 : span / s + 1;
}

bool image_shape(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  return (nd == 3 || nd == 4) && (p.format == CCV_TENSOR_FORMAT_NHWC || p.format == CCV_TENSOR_FORMAT_NCHW);
}

void tensor_auto_forward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (output_size < 1 || input_size < 1) return;
  const ccv_nnc_tensor_param_t& x = inputs[0];
  ccv_nnc_tensor_param_t y = x;
  if (image_shape(x)) {
    const int nd = nd_of(x.dim);
    const bool nhwc = x.format == CCV_TENSOR_FORMAT_NHWC;
    const int hi = nhwc ? nd - 3 : nd - 2;  // index of H
    const int ci = nhwc ? nd - 1 : nd - 3;  // index of C
    // The filters' count from the weights (libnnc's rule), the command's without them.
    int K = input_size > 1 && nd_of(inputs[1].dim) > 0 ? inputs[1].dim[0] : params.convolution.count;
    for (int i = 0; i < 2; i++) {
      const int k = params.size.dim[i] > 0 ? params.size.dim[i] : 1;
      const int s = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
      y.dim[hi + i] = std::max(
          0, out_extent(x.dim[hi + i], hint.border.begin[i], hint.border.end[i], k, dilation_of(params, i), s));
    }
    y.dim[ci] = K;
  }
  outputs[0] = y;
  for (int i = 1; i < output_size; i++) outputs[i] = y;
}

void tensor_auto_backward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  conv_rules::tensor_auto_backward(inputs, input_size, outputs, output_size,
                                   input_size > 2 && nd_of(inputs[2].dim) > 0 ? inputs[2].dim[0] : params.convolution.count);
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CONVOLUTION_FORWARD";
  conv_rules::check_forward_slots(name, inputs, input_size, outputs, output_size);
  geometry(cmd, hint, inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0], name);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CONVOLUTION_BACKWARD";
  const BackwardIo io = conv_rules::check_backward_slots(name, inputs, input_size, outputs, output_size);
  if (!io.dx && !io.dw) {  // dbias alone: a sum of g, whatever x and w are
    NNC_CHECK(dt_of(io.g) & types::kFloat, "%s: g is %s; convolution takes 32F, 64F, 16F and 16BF", name, dt_name(io.g));
    NNC_CHECK(image_shape(io.g->info), "%s: g is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", name,
              format_name(io.g->info.format), shape_string(io.g->info.dim).c_str());
    NNC_CHECK(dt_of(io.dbias) == dt_of(io.g), "%s: dbias is %s but g is %s", name, dt_name(io.dbias), dt_name(io.g));
    const int K = image_of(io.g).c;
    NNC_CHECK(layout_of(io.dbias).count() == static_cast<size_t>(K), "%s: dbias is %s but g has %d channels", name,
              shape_string(io.dbias->info.dim).c_str(), K);
    return;
  }
  NNC_CHECK(io.x && io.w, "%s: dx and dw need x (input 1) and w (input 2)", name);
  const Geometry geo = geometry(cmd, hint, io.x, io.w, nullptr, io.g, name);
  auto same = [&](const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* like, const char* role, const char* of) {
    if (!t) return;
    conv_rules::check_same_type(name, io.x, role, t);
    NNC_CHECK(t->info.format == like->info.format && same_shape(t->info, like->info), "%s: %s is %s %s but %s is %s %s; they must match", name, role, format_name(t->info.format),
              shape_string(t->info.dim).c_str(), of, format_name(like->info.format),
              shape_string(like->info.dim).c_str());
  };
  same(io.dx, io.x, "dx", "x");
  same(io.dw, io.w, "dw", "w");
  if (io.dbias) {
    conv_rules::check_same_type(name, io.x, "dbias", io.dbias);
    size_t count = 1;
    for (int i = 0; i < nd_of(io.dbias->info.dim); i++) count *= static_cast<size_t>(io.dbias->info.dim[i]);
    NNC_CHECK(count == static_cast<size_t>(geo.K), "%s: dbias is %s but there are %d filters", name,
              shape_string(io.dbias->info.dim).c_str(), geo.K);
  }
}

}  // namespace

Weights weights_of(const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t);
  Weights w;
  w.data = l.data;
  w.datatype = l.datatype;
  w.nhwc = l.format != CCV_TENSOR_FORMAT_NCHW;
  w.k = l.dim[0], w.sk = l.stride[0];
  if (w.nhwc) {
    w.kh = l.dim[1], w.kw = l.dim[2], w.c = l.dim[3];
    w.skh = l.stride[1], w.skw = l.stride[2], w.sc = l.stride[3];
  } else {
    w.c = l.dim[1], w.kh = l.dim[2], w.kw = l.dim[3];
    w.sc = l.stride[1], w.skh = l.stride[2], w.skw = l.stride[3];
  }
  return w;
}

ccv_nnc_hint_t resolve_hint(const ccv_nnc_cmd_param_t& params, const ccv_nnc_hint_t& hint,
                            const ccv_nnc_tensor_param_t& x, const ccv_nnc_tensor_param_t& y, const char*) {
  if (!is_no_hint(hint)) return hint;
  ccv_nnc_cmd_param_t p = params;
  for (int i = 0; i < 2; i++) {
    const int k = params.size.dim[i] > 0 ? params.size.dim[i] : 1;
    p.size.dim[i] = (k - 1) * dilation_of(params, i) + 1;
  }
  return hint_auto(p, x, y);
}

Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& given, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y,
                  const char* name) {
  const ccv_nnc_cmd_param_t& p = cmd.info;
  NNC_CHECK(dt_of(x) & types::kFloat, "%s: x is %s; convolution takes 32F, 64F, 16F and 16BF", name, dt_name(x));
  conv_rules::check_same_type(name, x, "w", w);
  conv_rules::check_same_type(name, x, "bias", bias);
  conv_rules::check_same_type(name, x, y == nullptr ? "y" : "the output (or g)", y);
  const int xnd = nd_of(x->info.dim);
  NNC_CHECK(image_shape(x->info), "%s: x is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", name,
            format_name(x->info.format), shape_string(x->info.dim).c_str());
  NNC_CHECK(nd_of(y->info.dim) == xnd && y->info.format == x->info.format,
            "%s: the output (or g) is %s %s but x is %s %s; same rank and format expected", name,
            format_name(y->info.format), shape_string(y->info.dim).c_str(), format_name(x->info.format),
            shape_string(x->info.dim).c_str());
  NNC_CHECK(
      nd_of(w->info.dim) == 4 && (w->info.format == CCV_TENSOR_FORMAT_NHWC || w->info.format == CCV_TENSOR_FORMAT_NCHW),
      "%s: w is %s %s; it must be 4-d: NHWC K x KH x KW x C/groups or NCHW K x C/groups x KH x KW", name,
      format_name(w->info.format), shape_string(w->info.dim).c_str());
  Geometry g;
  g.datatype = dt_of(x);
  g.batched = xnd == 4;
  g.x = image_of(x);
  g.w = weights_of(w);
  g.y = image_of(y);
  g.N = g.x.n, g.H = g.x.h, g.W = g.x.w, g.C = g.x.c;
  g.K = g.w.k;
  g.KH = g.w.kh, g.KW = g.w.kw;
  g.G = groups_of(p);
  // The window and, for the backward, the filters' count are the weights'
  // (libnnc's rule); size.dim is not read here.
  if (cmd.cmd == CCV_NNC_CONVOLUTION_FORWARD)
    NNC_CHECK(p.convolution.count == g.K, "%s: convolution.count is %d but w is %s with %d filters", name,
              p.convolution.count, shape_string(w->info.dim).c_str(), g.K);
  NNC_CHECK(g.K > 0 && g.KH > 0 && g.KW > 0, "%s: w is %s; every extent must be > 0", name,
            shape_string(w->info.dim).c_str());
  NNC_CHECK(g.C % g.G == 0 && g.K % g.G == 0, "%s: %d groups must divide the %d input channels and the %d filters",
            name, g.G, g.C, g.K);
  g.Cg = g.C / g.G, g.Kg = g.K / g.G;
  NNC_CHECK(g.w.c == g.Cg, "%s: w is %s %s with %d channels per filter but x has %d channels in %d groups (%d each)",
            name, format_name(w->info.format), shape_string(w->info.dim).c_str(), g.w.c, g.C, g.G, g.Cg);
  for (int i = 0; i < 2; i++)
    NNC_CHECK(p.convolution.dilation[i] >= 0, "%s: convolution.dilation[%d] is %d; it must be >= 0", name, i,
              p.convolution.dilation[i]);
  g.DH = dilation_of(p, 0), g.DW = dilation_of(p, 1);
  ccv_nnc_cmd_param_t window = p;
  window.size.dim[0] = g.KH, window.size.dim[1] = g.KW;
  const ccv_nnc_hint_t hint = resolve_hint(window, given, x->info, y->info, name);
  for (int i = 0; i < 2; i++)
    NNC_CHECK(hint.stride.dim[i] >= 0 && hint.border.begin[i] >= 0 && hint.border.end[i] >= 0,
              "%s: the hint's stride / border in dimension %d is negative (stride %d, border %d, %d)", name, i,
              hint.stride.dim[i], hint.border.begin[i], hint.border.end[i]);
  g.SH = hint.stride.dim[0] > 0 ? hint.stride.dim[0] : 1;
  g.SW = hint.stride.dim[1] > 0 ? hint.stride.dim[1] : 1;
  g.PT = hint.border.begin[0], g.PL = hint.border.begin[1];
  g.PB = hint.border.end[0], g.PR = hint.border.end[1];
  g.OH = out_extent(g.H, g.PT, g.PB, g.KH, g.DH, g.SH);
  g.OW = out_extent(g.W, g.PL, g.PR, g.KW, g.DW, g.SW);
  NNC_CHECK(g.OH > 0 && g.OW > 0,
            "%s: the %dx%d window (dilation %dx%d) does not fit the %dx%d input with padding %d,%d / %d,%d", name, g.KH,
            g.KW, g.DH, g.DW, g.H, g.W, g.PT, g.PB, g.PL, g.PR);
  g.K = g.w.k;
  NNC_CHECK(g.y.n == g.N && g.y.h == g.OH && g.y.w == g.OW && g.y.c == g.K,
            "%s: the output (or g) is %s but x %s, w %s, stride %dx%d and padding %d,%d / %d,%d give %d x %d x %d "
            "x %d (N, OH, OW, K)",
            name, shape_string(y->info.dim).c_str(), shape_string(x->info.dim).c_str(),
            shape_string(w->info.dim).c_str(), g.SH, g.SW, g.PT, g.PB, g.PL, g.PR, g.N, g.OH, g.OW, g.K);
  if (bias) {
    const Layout b = layout_of(bias);
    NNC_CHECK(b.count() == static_cast<size_t>(g.K), "%s: bias is %s but there are %d filters", name,
              shape_string(bias->info.dim).c_str(), g.K);
    g.bias = b.data;
    // K elements along one dimension (the others are 1).
    g.bias_stride = 1;
    for (int i = 0; i < b.nd; i++)
      if (b.dim[i] == g.K) g.bias_stride = b.stride[i];
  }
  return g;
}

}  // namespace conv

void register_convolution(Registry& r) {
  CommandInfo forward;
  forward.cmd = CCV_NNC_CONVOLUTION_FORWARD;
  forward.tensor_auto = conv::tensor_auto_forward;
  forward.bitmask = conv_rules::bitmask_forward;
  forward.validate = conv::validate_forward;
  // Not `windowed`: core would derive a missing hint without the dilation (and,
  // for the backward, from g to dx); resolve_hint does it for both instead.
  r.add_command(forward);

  r.add_command({.cmd = CCV_NNC_CONVOLUTION_BACKWARD, .tensor_auto = conv::tensor_auto_backward, .bitmask = conv_rules::bitmask_backward, .validate = conv::validate_backward});

  r.add_kernels(cpu_ref(types::kFloat, formats::kImage),
                {{CCV_NNC_CONVOLUTION_FORWARD, conv::forward_ref}, {CCV_NNC_CONVOLUTION_BACKWARD, conv::backward_ref}});
  conv::register_cpu_opt(r);
}

}  // namespace nnc
