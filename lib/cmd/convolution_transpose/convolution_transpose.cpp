// The transposed-convolution family: CONVOLUTION_TRANSPOSE forward and
// backward (2-d windows) — the adjoint of CONVOLUTION, which scatters each
// input pixel through the window into the output.
//
//   ccv_nnc_cmd_t up = CMD_CONVOLUTION_TRANSPOSE_FORWARD(groups, K, output_padding, KH, KW, C);
//   ccv_nnc_cmd_exec(up, HINT((2, 2), (1, 1)), 0, TENSOR_LIST(x, w, bias), TENSOR_LIST(y), 0);
//
// Parameters: size.dim = {KH, KW, C} (shape inference only: execution takes
// the window from the weights, as CONVOLUTION does); convolution_transpose.
// count = K, the output channels (all groups together), .groups (0 reads as
// 1), .dilation[0..1] (0 reads as 1), .output_padding (extra rows and columns
// at the bottom / right; 0 <= output_padding < max(stride, dilation) in each
// dimension, PyTorch's rule). Stride and padding come from the hint (stride 0
// reads as 1; ccv_nnc_no_hint is stride 1 without padding).
//
// Forward: inputs |x|w|bias| (bias optional), output |y|.
//   x  NHWC [N,] H, W, C        or NCHW [N,] C, H, W
//   w  NHWC C, KH, KW, K/groups or NCHW C, K/groups, KH, KW (libnnc's and
//      PyTorch's layout: the first axis is the input channels); the weights'
//      own format tag picks their layout.
//   bias: K elements.
//   y  x's format, [N,] OH, OW, K with OH = (H - 1) * SH + (KH - 1) * DH + 1
//      - top - bottom + output_padding (the same for OW): libnnc's tensor_auto.
//   y[n, oh, ow, k] = bias[k] + sum over h, w, kh, kw, c in k's group with
//      oh = h * SH + kh * DH - top and ow = w * SW + kw * DW - left of
//      x[n, h, w, c] * w[c, kh, kw, k mod K/groups].
//   This is exactly the input gradient of CONVOLUTION with weights w read as
//   its [C filters, KH, KW, K/groups channels] (and the CPU_OPT backend runs
//   it that way).
// Backward: inputs |g|x|w|bias|y| (only g, x for dw and w for dx are read),
//   outputs |dx|dw|dbias|, each optional: dx = the CONVOLUTION of g with w,
//   dw[c, kh, kw, k] = sum of x[n, h, w, c] * g[n, oh, ow, k], dbias = the sum
//   of g per channel. The same input / output patterns as CONVOLUTION_BACKWARD
//   (libnnc's bitmask is the convolution's): g, x, w -> dx, dw (dbias); g, x
//   -> dw (dbias); g, w -> dx (dbias). tensor_auto: each gradient like the
//   forward input it differentiates. No in-place pair.
// Data types: one float type for every tensor: 32F, 64F, 16F, 16BF on
// CPU_REF (accumulating in double), 32F on CPU_OPT.
#include "cmd/convolution_transpose/convolution_transpose.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "cmd/common/conv_rules.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace convt {

namespace {

const char* dt_name(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int dt_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
int groups_of(const ccv_nnc_cmd_param_t& p) {
  return p.convolution_transpose.groups > 0 ? p.convolution_transpose.groups : 1;
}
int dilation_of(const ccv_nnc_cmd_param_t& p, int i) {
  return p.convolution_transpose.dilation[i] > 0 ? p.convolution_transpose.dilation[i] : 1;
}

bool image_shape(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  return (nd == 3 || nd == 4) && (p.format == CCV_TENSOR_FORMAT_NHWC || p.format == CCV_TENSOR_FORMAT_NCHW);
}

int out_extent(int in, int k, int d, int s, int begin, int end, int op) {
  return (in - 1) * s + (k - 1) * d + 1 - begin - end + op;
}

// libnnc's rule: channels from the weights' C axis (times the groups), the
// spatial extents from the formula above, everything else from x.
void tensor_auto_forward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t& hint, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (output_size < 1 || input_size < 1) return;
  const ccv_nnc_tensor_param_t& x = inputs[0];
  ccv_nnc_tensor_param_t y = x;
  if (image_shape(x)) {
    const int nd = nd_of(x.dim);
    const bool nhwc = x.format == CCV_TENSOR_FORMAT_NHWC;
    const int hi = nhwc ? nd - 3 : nd - 2;
    const int ci = nhwc ? nd - 1 : nd - 3;
    int K = params.convolution_transpose.count;
    if (input_size > 1 && nd_of(inputs[1].dim) == 4) {
      const ccv_nnc_tensor_param_t& w = inputs[1];
      K = (w.format == CCV_TENSOR_FORMAT_NCHW ? w.dim[1] : w.dim[3]) * groups_of(params);
    }
    for (int i = 0; i < 2; i++) {
      const int k = params.size.dim[i] > 0 ? params.size.dim[i] : 1;
      const int s = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
      y.dim[hi + i] = std::max(0, out_extent(x.dim[hi + i], k, dilation_of(params, i), s, hint.border.begin[i],
                                             hint.border.end[i], params.convolution_transpose.output_padding));
    }
    y.dim[ci] = K;
  }
  outputs[0] = y;
  for (int i = 1; i < output_size; i++) outputs[i] = y;
}

void tensor_auto_backward(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                          const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  conv_rules::tensor_auto_backward(inputs, input_size, outputs, output_size, params.convolution_transpose.count);
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CONVOLUTION_TRANSPOSE_FORWARD";
  conv_rules::check_forward_slots(name, inputs, input_size, outputs, output_size);
  geometry(cmd, hint, inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0], name);
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                       int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "CONVOLUTION_TRANSPOSE_BACKWARD";
  const BackwardIo io = conv_rules::check_backward_slots(name, inputs, input_size, outputs, output_size);
  if (!io.dx && !io.dw) {
    check_bias_only(io.g, io.dbias, name);
    return;
  }
  NNC_CHECK(io.x && io.w, "%s: dx and dw need x (input 1) and w (input 2)", name);
  const Geometry geo = geometry(cmd, hint, io.x, io.w, nullptr, io.g, name);
  auto same = [&](const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* like, const char* role, const char* of) {
    if (!t) return;
    conv_rules::check_same_type(name, io.x, role, t);
    NNC_CHECK(t->info.format == like->info.format && same_shape(t->info, like->info),
              "%s: %s is %s %s but %s is %s %s; they must match", name, role, format_name(t->info.format),
              shape_string(t->info.dim).c_str(), of, format_name(like->info.format),
              shape_string(like->info.dim).c_str());
  };
  same(io.dx, io.x, "dx", "x");
  same(io.dw, io.w, "dw", "w");
  if (io.dbias) {
    conv_rules::check_same_type(name, io.x, "dbias", io.dbias);
    NNC_CHECK(layout_of(io.dbias).count() == static_cast<size_t>(geo.K),
              "%s: dbias is %s but there are %d output channels", name, shape_string(io.dbias->info.dim).c_str(), geo.K);
  }
}

}  // namespace

Weights weights_of(const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t);
  Weights w;
  w.data = l.data;
  w.c = l.dim[0], w.sc = l.stride[0];
  if (l.format != CCV_TENSOR_FORMAT_NCHW) {
    w.kh = l.dim[1], w.kw = l.dim[2], w.k = l.dim[3];
    w.skh = l.stride[1], w.skw = l.stride[2], w.sk = l.stride[3];
  } else {
    w.k = l.dim[1], w.kh = l.dim[2], w.kw = l.dim[3];
    w.sk = l.stride[1], w.skh = l.stride[2], w.skw = l.stride[3];
  }
  return w;
}

ccv_nnc_hint_t effective_hint(const ccv_nnc_hint_t& hint) {
  ccv_nnc_hint_t h = hint;
  for (int i = 0; i < 2; i++)
    if (h.stride.dim[i] <= 0) h.stride.dim[i] = 1;
  return h;
}

void check_bias_only(const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* dbias, const char* name) {
  NNC_CHECK(dt_of(g) & types::kFloat, "%s: g is %s; it takes 32F, 64F, 16F and 16BF", name, dt_name(g));
  NNC_CHECK(image_shape(g->info), "%s: g is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", name,
            format_name(g->info.format), shape_string(g->info.dim).c_str());
  NNC_CHECK(dt_of(dbias) == dt_of(g), "%s: dbias is %s but g is %s", name, dt_name(dbias), dt_name(g));
  const int K = image_of(g).c;
  NNC_CHECK(layout_of(dbias).count() == static_cast<size_t>(K), "%s: dbias is %s but g has %d channels", name,
            shape_string(dbias->info.dim).c_str(), K);
}

Geometry geometry(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& given, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y,
                  const char* name) {
  const ccv_nnc_cmd_param_t& p = cmd.info;
  NNC_CHECK(dt_of(x) & types::kFloat, "%s: x is %s; it takes 32F, 64F, 16F and 16BF", name, dt_name(x));
  conv_rules::check_same_type(name, x, "w", w);
  conv_rules::check_same_type(name, x, "bias", bias);
  conv_rules::check_same_type(name, x, "the output (or g)", y);
  NNC_CHECK(image_shape(x->info), "%s: x is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", name,
            format_name(x->info.format), shape_string(x->info.dim).c_str());
  NNC_CHECK(nd_of(y->info.dim) == nd_of(x->info.dim) && y->info.format == x->info.format,
            "%s: the output (or g) is %s %s but x is %s %s; same rank and format expected", name,
            format_name(y->info.format), shape_string(y->info.dim).c_str(), format_name(x->info.format),
            shape_string(x->info.dim).c_str());
  NNC_CHECK(
      nd_of(w->info.dim) == 4 && (w->info.format == CCV_TENSOR_FORMAT_NHWC || w->info.format == CCV_TENSOR_FORMAT_NCHW),
      "%s: w is %s %s; it must be 4-d: NHWC C x KH x KW x K/groups or NCHW C x K/groups x KH x KW", name,
      format_name(w->info.format), shape_string(w->info.dim).c_str());
  Geometry g;
  g.datatype = dt_of(x);
  g.x = image_of(x);
  g.y = image_of(y);
  g.w = weights_of(w);
  g.N = g.x.n, g.H = g.x.h, g.W = g.x.w, g.C = g.x.c;
  g.G = groups_of(p);
  NNC_CHECK(p.convolution_transpose.groups >= 0, "%s: convolution_transpose.groups is %d", name,
            p.convolution_transpose.groups);
  g.KH = g.w.kh, g.KW = g.w.kw;
  g.K = g.w.k * g.G;
  NNC_CHECK(g.w.c > 0 && g.w.k > 0 && g.KH > 0 && g.KW > 0, "%s: w is %s; every extent must be > 0", name,
            shape_string(w->info.dim).c_str());
  NNC_CHECK(g.w.c == g.C, "%s: w is %s %s with %d input channels (its first axis) but x has %d channels", name,
            format_name(w->info.format), shape_string(w->info.dim).c_str(), g.w.c, g.C);
  NNC_CHECK(g.C % g.G == 0, "%s: %d groups must divide the %d input channels", name, g.G, g.C);
  if (cmd.cmd == CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD)
    NNC_CHECK(p.convolution_transpose.count == g.K,
              "%s: convolution_transpose.count is %d but w is %s %s: %d channels per group x %d groups = %d", name,
              p.convolution_transpose.count, format_name(w->info.format), shape_string(w->info.dim).c_str(), g.w.k,
              g.G, g.K);
  g.Cg = g.C / g.G, g.Kg = g.w.k;
  for (int i = 0; i < 2; i++)
    NNC_CHECK(p.convolution_transpose.dilation[i] >= 0, "%s: convolution_transpose.dilation[%d] is %d; it must be >= 0",
              name, i, p.convolution_transpose.dilation[i]);
  g.DH = dilation_of(p, 0), g.DW = dilation_of(p, 1);
  const ccv_nnc_hint_t hint = effective_hint(given);
  for (int i = 0; i < 2; i++)
    NNC_CHECK(hint.stride.dim[i] >= 0 && hint.border.begin[i] >= 0 && hint.border.end[i] >= 0,
              "%s: the hint's stride / border in dimension %d is negative (stride %d, border %d, %d)", name, i,
              hint.stride.dim[i], hint.border.begin[i], hint.border.end[i]);
  g.SH = hint.stride.dim[0], g.SW = hint.stride.dim[1];
  g.PT = hint.border.begin[0], g.PL = hint.border.begin[1];
  g.PB = hint.border.end[0], g.PR = hint.border.end[1];
  g.OP = p.convolution_transpose.output_padding;
  NNC_CHECK(g.OP >= 0 && (g.OP < std::max(g.SH, g.DH) || g.OP == 0) && (g.OP < std::max(g.SW, g.DW) || g.OP == 0),
            "%s: output_padding %d must be >= 0 and below the stride (%dx%d) or the dilation (%dx%d)", name, g.OP,
            g.SH, g.SW, g.DH, g.DW);
  g.OH = out_extent(g.H, g.KH, g.DH, g.SH, g.PT, g.PB, g.OP);
  g.OW = out_extent(g.W, g.KW, g.DW, g.SW, g.PL, g.PR, g.OP);
  NNC_CHECK(g.OH > 0 && g.OW > 0, "%s: the padding %d,%d / %d,%d leaves no output of the %dx%d input (window %dx%d)",
            name, g.PT, g.PB, g.PL, g.PR, g.H, g.W, g.KH, g.KW);
  NNC_CHECK(g.y.n == g.N && g.y.h == g.OH && g.y.w == g.OW && g.y.c == g.K,
            "%s: the output (or g) is %s but x %s, w %s, stride %dx%d, padding %d,%d / %d,%d and output_padding %d "
            "give %d x %d x %d x %d (N, OH, OW, K)",
            name, shape_string(y->info.dim).c_str(), shape_string(x->info.dim).c_str(),
            shape_string(w->info.dim).c_str(), g.SH, g.SW, g.PT, g.PB, g.PL, g.PR, g.OP, g.N, g.OH, g.OW, g.K);
  if (bias) {
    const Layout b = layout_of(bias);
    NNC_CHECK(b.count() == static_cast<size_t>(g.K), "%s: bias is %s but there are %d output channels", name,
              shape_string(bias->info.dim).c_str(), g.K);
    g.bias = b.data;
    g.bias_stride = 1;
    for (int i = 0; i < b.nd; i++)
      if (b.dim[i] == g.K) g.bias_stride = b.stride[i];
  }
  return g;
}

void bias_gradient(const ccv_nnc_tensor_t* gt, ccv_nnc_tensor_t* dbias) {
  const Image g = image_of(gt);
  const int dt = g.datatype;
  const size_t es = datatype_size(dt);
  std::vector<double> db(static_cast<size_t>(g.c), 0.0);
  for (int n = 0; n < g.n; n++)
    for (int h = 0; h < g.h; h++)
      for (int w = 0; w < g.w; w++) {
        const int64_t o = n * g.sn + h * g.sh + w * g.sw;
        if (dt == CCV_32F) {
          const float* p = reinterpret_cast<const float*>(g.data) + o;
          for (int c = 0; c < g.c; c++) db[c] += p[c * g.sc];
        } else {
          for (int c = 0; c < g.c; c++) db[c] += load_double(g.data + (o + c * g.sc) * static_cast<int64_t>(es), dt);
        }
      }
  const Layout b = layout_of(dbias);
  int64_t stride = 1;
  for (int i = 0; i < b.nd; i++)
    if (b.dim[i] == g.c) stride = b.stride[i];
  for (int c = 0; c < g.c; c++) store_double(b.data + c * stride * static_cast<int64_t>(es), dt, db[c]);
}

}  // namespace convt

void register_convolution_transpose(Registry& r) {
  r.add_command({.cmd = CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD,
                 .tensor_auto = convt::tensor_auto_forward,
                 .bitmask = conv_rules::bitmask_forward,  // libnnc registers the convolution's predicates here too
                 .validate = convt::validate_forward});
  r.add_command({.cmd = CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD,
                 .tensor_auto = convt::tensor_auto_backward,
                 .bitmask = conv_rules::bitmask_backward,
                 .validate = convt::validate_backward});
  r.add_kernels(cpu_ref(types::kFloat, formats::kImage),
                {{CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, convt::forward_ref},
                 {CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, convt::backward_ref}});
  convt::register_cpu_opt(r);
}

}  // namespace nnc
