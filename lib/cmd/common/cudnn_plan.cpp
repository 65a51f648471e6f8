// cudnn_plan.hpp: from NNC's geometry (the families' own checks, so a call
// means here what it means on CPU_REF) to cuDNN's descriptor numbers.
#include "cmd/common/cudnn_plan.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cmd/common/axes.hpp"
#include "cmd/common/image.hpp"
#include "cmd/convolution/convolution.hpp"
#include "cmd/convolution_transpose/convolution_transpose.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/pool/pool.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::cudnn_plan {

namespace {

bool refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

bool gpu_f32(const ccv_nnc_tensor_t* t) { return t && CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32F; }

// A storage type cuDNN takes here: 32F, 16F (CUDNN_DATA_HALF) or 16BF
// (CUDNN_DATA_BFLOAT16); the 16-bit ones compute and accumulate in fp32.
bool cudnn_float(int dt) { return dt == CCV_32F || dt == CCV_16F || dt == CCV_16BF; }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }
// t absent, or of one of those types and of ref's type.
bool same_type(const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* ref) {
  return !t || (cudnn_float(type_of(t)) && type_of(t) == type_of(ref));
}
const char* const kTypes = "GPU_CUDNN takes 32F, 16F or 16BF tensors, all of one type";

// An image's (n, c, h, w) as cuDNN wants them. A 3-d image has no batch
// stride: N = 1, and its stride is the extent of the rest (any value is right
// for a size-1 dimension; this one keeps the layout recognisable as packed).
// False when a stride or an offset does not fit cuDNN's int.
bool tensor4_of(const Image& im, Tensor4* t) {
  int64_t d[4] = {im.n, im.c, im.h, im.w};
  int64_t s[4] = {im.sn, im.sc, im.sh, im.sw};
  if (im.n == 1 && s[0] == 0) s[0] = std::max({im.sc * im.c, im.sh * im.h, im.sw * im.w, int64_t{1}});
  int64_t last = 0;
  for (int i = 0; i < 4; i++) {
    if (s[i] <= 0 || s[i] > INT_MAX || d[i] > INT_MAX) return false;
    last += (d[i] - 1) * s[i];
    t->dim[i] = static_cast<int>(d[i]);
    t->stride[i] = static_cast<int>(s[i]);
  }
  return last < INT_MAX;
}

// A 1-d K-element bias (any shape holding K elements along one dimension).
bool bias_of(const ccv_nnc_tensor_t* b, int K, Tensor4* t) {
  const Layout l = layout_of(b);
  int64_t stride = 1;
  for (int i = 0; i < l.nd; i++)
    if (l.dim[i] == K) stride = l.stride[i];
  if (stride <= 0 || stride * K > INT_MAX) return false;
  const int s = static_cast<int>(stride);
  t->dim[0] = 1, t->dim[1] = K, t->dim[2] = 1, t->dim[3] = 1;
  t->stride[0] = s * K, t->stride[1] = s, t->stride[2] = s, t->stride[3] = s;
  return true;
}

bool is_image(const ccv_nnc_tensor_t* t) {
  const int nd = nd_of(t->info.dim);
  return (nd == 3 || nd == 4) && (t->info.format == CCV_TENSOR_FORMAT_NHWC || t->info.format == CCV_TENSOR_FORMAT_NCHW);
}

bool weights_ok(const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* x, const char* role, std::string* why) {
  if (!same_type(w, x) || !cudnn_float(type_of(x))) return refuse(why, kTypes);
  if (w->info.format != x->info.format)
    return refuse(why, std::string(role) + " is " + format_name(w->info.format) + " but x is " +
                           format_name(x->info.format) + "; GPU_CUDNN takes weights in x's format");
  if (!layout_of(w).packed()) return refuse(why, std::string(role) + " is a view; a cuDNN filter must be packed");
  return true;
}

// cuDNN pads both sides alike. A call whose two sides differ still maps when
// cuDNN's output extent with the leading pad is NNC's: every output then reads
// the same input positions (those beyond the image are 0 either way).
bool symmetric_pad(int in, int begin, int end, int window_extent, int stride, int out, int* pad) {
  (void)end;
  const int span = in + 2 * begin - window_extent;
  if (span < 0 || span / stride + 1 != out) return false;
  *pad = begin;
  return true;
}

bool conv_of(const conv::Geometry& g, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* y,
             Conv* p, std::string* why) {
  if (!weights_ok(w, x, "w", why)) return false;
  p->datatype = type_of(x);
  if (!tensor4_of(g.x, &p->x) || !tensor4_of(g.y, &p->y))
    return refuse(why, "a tensor has more than 2^31 - 1 elements");
  (void)y;
  p->w.dim[0] = g.K, p->w.dim[1] = g.Cg, p->w.dim[2] = g.KH, p->w.dim[3] = g.KW;
  p->w.nhwc = w->info.format == CCV_TENSOR_FORMAT_NHWC;
  const int eh = (g.KH - 1) * g.DH + 1, ew = (g.KW - 1) * g.DW + 1;
  if (!symmetric_pad(g.H, g.PT, g.PB, eh, g.SH, g.OH, &p->pad[0]) ||
      !symmetric_pad(g.W, g.PL, g.PR, ew, g.SW, g.OW, &p->pad[1]))
    return refuse(why, "padding " + std::to_string(g.PT) + "," + std::to_string(g.PB) + " / " + std::to_string(g.PL) +
                           "," + std::to_string(g.PR) +
                           " differs between the two sides of a dimension in a way that changes the " +
                           "output extent; cuDNN pads both sides alike");
  p->stride[0] = g.SH, p->stride[1] = g.SW;
  p->dilation[0] = g.DH, p->dilation[1] = g.DW;
  p->groups = g.G;
  return true;
}

}  // namespace

bool conv_forward_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias,
                          const ccv_nnc_tensor_t* y, std::string* why) {
  if (!x || !w || !y) return refuse(why, "x, w and y are required");
  for (const ccv_nnc_tensor_t* t : {x, y, bias})
    if (!same_type(t, x)) return refuse(why, kTypes);
  if (!is_image(x) || !is_image(y)) return refuse(why, "x and y must be 3-d or 4-d NHWC or NCHW tensors");
  return weights_ok(w, x, "w", why);
}

bool conv_backward_tensors(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                           int output_size, std::string* why) {
  if (input_size < 1 || output_size < 1 || input_size > 5 || output_size > 3) return refuse(why, "wrong slots");
  const conv::BackwardIo io = conv::backward_io(inputs, input_size, outputs, output_size);
  if (!io.g || (!io.dx && !io.dw && !io.dbias)) return refuse(why, "needs g and an output");
  for (const ccv_nnc_tensor_t* t : {io.g, io.x, io.dx, io.dbias})
    if (!same_type(t, io.g)) return refuse(why, kTypes);
  if (!is_image(io.g)) return refuse(why, "g must be a 3-d or 4-d NHWC or NCHW tensor");
  if (!io.dx && !io.dw) return true;
  if (!io.x || !io.w) return refuse(why, "dx and dw need x and w");
  if (!is_image(io.x)) return refuse(why, "x must be a 3-d or 4-d NHWC or NCHW tensor");
  if (!weights_ok(io.w, io.x, "w", why)) return false;
  if (io.dw && !weights_ok(io.dw, io.x, "dw", why)) return false;
  return true;
}

bool pool_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y, std::string* why) {
  if (!x || !y) return refuse(why, "the input and the pooled tensor are required");
  if (!same_type(x, x) || !same_type(y, x)) return refuse(why, kTypes);
  if (!is_image(x) || !is_image(y)) return refuse(why, "pooling takes 3-d or 4-d NHWC or NCHW tensors");
  return true;
}

namespace {

// Axes [a, b) of a layout as one dimension: extent and stride (size-1 axes
// ignored; false when the others are not evenly nested). An empty or all-1
// run has extent 1 and stride 1.
bool fold(const Layout& l, int a, int b, int64_t* extent, int64_t* stride) {
  int64_t e = 1, s = 1;
  for (int i = b - 1; i >= a; i--) {
    if (l.dim[i] == 1) continue;
    if (e == 1)
      s = l.stride[i];
    else if (l.stride[i] != s * e)
      return false;
    e *= l.dim[i];
  }
  *extent = e;
  *stride = s;
  return true;
}

bool packed_per_channel(const ccv_nnc_tensor_t* t) { return !t || (gpu_f32(t) && layout_of(t).packed()); }
// Batch norm's per-channel tensors: in x's type (NNC's contract: every tensor
// of the command one type) and packed.
bool packed_like(const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* x) {
  return !t || (same_type(t, x) && layout_of(t).packed());
}
const char* const kLayerNormHalf =
    "GPU_CUDNN's layer norm takes 32F only (its per-feature scale and bias run through fp32 cudnnOpTensor / "
    "cudnnReduceTensor); 16F and 16BF layer norm run on GPU_REF";

// x as {before, kept, after, 1} for a reduced-axis mask, and the channel count.
// Fills the extent-1 slots of (n, c, h, w) with the strides a packed NCHW
// layout gives them (w: 1, then each the next inner one's extent x stride).
void canonical_strides(const int64_t e[4], int64_t st[4]) {
  if (e[3] == 1) st[3] = 1;
  if (e[2] == 1) st[2] = e[3] * st[3];
  if (e[1] == 1) st[1] = e[2] * st[2];
  if (e[0] == 1) st[0] = e[1] * st[1];
}

bool to_tensor4(const int64_t e[4], const int64_t st[4], Tensor4* t) {
  int64_t last = 0;
  for (int i = 0; i < 4; i++) {
    if (e[i] > INT_MAX || st[i] <= 0 || st[i] > INT_MAX) return false;
    last += (e[i] - 1) * st[i];
    t->dim[i] = static_cast<int>(e[i]);
    t->stride[i] = static_cast<int>(st[i]);
  }
  return last < INT_MAX;
}

// Statistics over the axes of `mask` per index of the others, as cuDNN's
// SPATIAL batch norm sees them: the kept axes fold into c; the reduced axes,
// as few runs of nested axes as their strides allow (at most three), fill the
// slots `slots` names in order (0 n, 2 h, 3 w). `feature`: x's slots with c of
// extent 1 and the strides of a packed tensor of the reduced extents (layer
// norm's scale and bias), when asked.
struct Stats {
  Tensor4 x, feature;
  int64_t kept = 1, reduced = 1;
};
bool stats_of(const ccv_nnc_tensor_t* x, unsigned mask, const int slots[3], Stats* out, std::string* why) {
  const Layout l = layout_of(x);
  int k0 = -1, k1 = -1;  // the kept axes [k0, k1), ignoring kept axes of extent 1 at the edges
  for (int i = 0; i < l.nd; i++)
    if (!(mask & (1u << i)) && l.dim[i] != 1) {
      if (k0 < 0) k0 = i;
      k1 = i + 1;
    }
  if (k0 < 0) k0 = k1 = l.nd;  // one statistic
  for (int i = k0; i < k1; i++)
    if ((mask & (1u << i)) && l.dim[i] != 1)
      return refuse(why, "the kept axes (the statistics' index) are not adjacent");
  int64_t ac, sc;
  if (!fold(l, k0, k1, &ac, &sc)) return refuse(why, "the kept axes do not fold into one dimension");
  int64_t run_e[kMaxDim], run_s[kMaxDim];
  int runs = 0, prev = -1;
  for (int i = 0; i < l.nd; i++) {
    if (!(mask & (1u << i)) || l.dim[i] == 1) continue;
    if (runs > 0 && prev == i - 1 && run_s[runs - 1] == l.stride[i] * l.dim[i]) {
      run_e[runs - 1] *= l.dim[i];
      run_s[runs - 1] = l.stride[i];
    } else {
      run_e[runs] = l.dim[i], run_s[runs] = l.stride[i];
      runs++;
    }
    prev = i;
    // A size-1 axis between two reduced ones does not break a run.
    for (int j = i + 1; j < l.nd && l.dim[j] == 1; j++) prev = j;
  }
  if (runs > 3) return refuse(why, "x's reduced axes need more than cuDNN's three (n, h, w)");
  int64_t e[4] = {1, ac, 1, 1}, st[4] = {0, sc, 0, 0};
  int64_t fe[4] = {1, 1, 1, 1}, fs[4] = {0, 0, 0, 0};
  int64_t packed = 1;  // the feature tensor's strides: packed over the runs, last run innermost
  for (int i = runs - 1; i >= 0; i--) {
    const int slot = slots[i];
    e[slot] = run_e[i], st[slot] = run_s[i];
    fe[slot] = run_e[i], fs[slot] = packed;
    packed *= run_e[i];
  }
  canonical_strides(e, st);
  canonical_strides(fe, fs);
  if (!to_tensor4(e, st, &out->x) || !to_tensor4(fe, fs, &out->feature))
    return refuse(why, "x has more than 2^31 - 1 elements");
  out->kept = ac;
  out->reduced = e[0] * e[2] * e[3];
  return true;
}

Tensor4 per_c(int c) {
  Tensor4 t;
  t.dim[0] = 1, t.dim[1] = c, t.dim[2] = 1, t.dim[3] = 1;
  t.stride[0] = c, t.stride[1] = 1, t.stride[2] = 1, t.stride[3] = 1;
  return t;
}

bool batch_norm_x(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, BatchNorm* p, std::string* why) {
  const unsigned mask =
      axis_mask("BATCH_NORM (GPU_CUDNN)", cmd.info.bnorm.axis, cmd.info.bnorm.count, nd_of(x->info.dim));
  static const int kSlots[3] = {0, 2, 3};  // n, h, w: packed NHWC images become {N*H*W, C, 1, 1}
  Stats st;
  if (!stats_of(x, mask, kSlots, &st, why)) return false;
  if (st.kept > INT_MAX) return refuse(why, "too many channels");
  p->x = st.x;
  p->channels = static_cast<int>(st.kept);
  p->per_channel = static_cast<long long>(st.reduced);
  p->param = per_c(p->channels);
  p->epsilon = cmd.info.bnorm.epsilon;
  p->training = !cmd.info.bnorm.is_test;
  const double momentum = cmd.info.bnorm.momentum, M = static_cast<double>(st.reduced);
  p->keep = static_cast<float>(momentum);
  p->take_mean = static_cast<float>(1 - momentum);
  p->take_var = st.reduced > 1 ? static_cast<float>((1 - momentum) * (M - 1) / M) : 0.f;
  return true;
}

bool layer_norm_x(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, LayerNorm* p, std::string* why) {
  const unsigned mask =
      axis_mask("LAYER_NORM (GPU_CUDNN)", cmd.info.lnorm.axis, cmd.info.lnorm.count, nd_of(x->info.dim));
  static const int kSlots[3] = {2, 3, 0};  // h, w, n: rows x features become {1, R, F, 1}, packed NCHW
  Stats st;
  if (!stats_of(x, mask, kSlots, &st, why)) return false;
  if (st.kept > INT_MAX) return refuse(why, "too many rows");
  p->x = st.x;
  p->feature = st.feature;
  p->rows = static_cast<int>(st.kept);
  p->features = static_cast<long long>(st.reduced);
  p->row_param = per_c(p->rows);
  p->epsilon = cmd.info.lnorm.epsilon;
  return true;
}

}  // namespace

bool batch_norm_forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                        ccv_nnc_tensor_t* const* outputs, int output_size, BatchNorm* plan, std::string* why) {
  const norm::BatchNormIo io = norm::batch_norm_forward_io(inputs, input_size, outputs, output_size);
  if (!io.x || !io.y || !io.scale || !io.bias) return refuse(why, "x, scale, bias and y are required");
  if (!same_type(io.x, io.x) || !same_type(io.y, io.x)) return refuse(why, kTypes);
  if (!same_strides(io.x, io.y))
    return refuse(why, "x and y are laid out differently; cuDNN takes one layout for both");
  for (const ccv_nnc_tensor_t* t :
       {io.scale, io.bias, io.mean, io.var, io.out_mean, io.out_var, io.saved_mean, io.saved_inv_std})
    if (!packed_like(t, io.x))
      return refuse(why, "a per-channel tensor is a view or not of x's type; cuDNN takes them packed");
  BatchNorm p;
  if (!batch_norm_x(cmd, io.x, &p, why)) return false;
  p.datatype = type_of(io.x);
  if (p.training && p.per_channel < 2)
    return refuse(why, "one element per statistic: cuDNN's running variance (unbiased) is undefined there");
  *plan = p;
  return true;
}

bool batch_norm_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size, BatchNorm* plan, std::string* why) {
  const norm::BatchNormIo io = norm::batch_norm_backward_io(inputs, input_size, outputs, output_size);
  if (cmd.info.bnorm.is_test) return refuse(why, "cuDNN has no inference-mode batch norm backward");
  if (io.dmean || io.dvar) return refuse(why, "cuDNN gives no gradient of the running statistics (dmean, dvar)");
  if (!io.g || !io.x || !io.saved_mean || !io.saved_inv_std)
    return refuse(why, "g, x, saved_mean and saved_inv_std are required");
  if (!io.dx && !io.dscale && !io.dbias) return refuse(why, "no output");
  if (io.dx && !io.scale) return refuse(why, "dx needs scale");
  for (const ccv_nnc_tensor_t* t : {io.x, io.g, io.dx})
    if (!same_type(t, io.x)) return refuse(why, kTypes);
  if (!same_strides(io.x, io.g) || (io.dx && !same_strides(io.x, io.dx)))
    return refuse(why, "x, g and dx are laid out differently; cuDNN takes one layout for the three");
  for (const ccv_nnc_tensor_t* t : {io.scale, io.saved_mean, io.saved_inv_std, io.dscale, io.dbias})
    if (!packed_like(t, io.x))
      return refuse(why, "a per-channel tensor is a view or not of x's type; cuDNN takes them packed");
  BatchNorm p;
  if (!batch_norm_x(cmd, io.x, &p, why)) return false;
  p.datatype = type_of(io.x);
  *plan = p;
  return true;
}

int pack_backward_algorithms(int data, int filter) {
  const int d = data >= 0 && data < kAlgorithmsPerPart - 1 ? data + 1 : 0;
  const int f = filter >= 0 && filter < kAlgorithmsPerPart - 1 ? filter + 1 : 0;
  return f * kAlgorithmsPerPart + d;
}
int backward_data_algorithm(int packed) { return packed < 0 ? -1 : packed % kAlgorithmsPerPart - 1; }
int backward_filter_algorithm(int packed) {
  return packed < 0 ? -1 : (packed / kAlgorithmsPerPart) % kAlgorithmsPerPart - 1;
}

bool layer_norm_forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                        ccv_nnc_tensor_t* const* outputs, int output_size, LayerNorm* plan, std::string* why) {
  const norm::LayerNormIo io = norm::layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  if (!io.x || !io.y) return refuse(why, "x and y are required");
  if (cudnn_float(type_of(io.x)) && type_of(io.x) != CCV_32F) return refuse(why, kLayerNormHalf);
  if (!gpu_f32(io.x) || !gpu_f32(io.y)) return refuse(why, "GPU_CUDNN takes 32F tensors");
  if (!same_strides(io.x, io.y))
    return refuse(why, "x and y are laid out differently; cuDNN takes one layout for both");
  for (const ccv_nnc_tensor_t* t : {io.scale, io.bias, io.saved_mean, io.saved_inv_std})
    if (!packed_per_channel(t))
      return refuse(why, "scale, bias or a saved statistic is a view or not 32F; cuDNN takes them packed");
  LayerNorm p;
  if (!layer_norm_x(cmd, io.x, &p, why)) return false;
  *plan = p;
  return true;
}

bool layer_norm_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size, LayerNorm* plan, std::string* why) {
  const norm::LayerNormIo io = norm::layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  if (!io.g || !io.x || !io.saved_mean || !io.saved_inv_std)
    return refuse(why, "g, x, saved_mean and saved_inv_std are required");
  if (!io.dx && !io.dscale && !io.dbias) return refuse(why, "no output");
  if (cudnn_float(type_of(io.x)) && type_of(io.x) != CCV_32F) return refuse(why, kLayerNormHalf);
  for (const ccv_nnc_tensor_t* t : {io.g, io.x, io.dx})
    if (t && !gpu_f32(t)) return refuse(why, "GPU_CUDNN takes 32F tensors");
  if (!same_strides(io.x, io.g) || (io.dx && !same_strides(io.x, io.dx)))
    return refuse(why, "x, g and dx are laid out differently; cuDNN takes one layout for the three");
  for (const ccv_nnc_tensor_t* t : {io.scale, io.saved_mean, io.saved_inv_std, io.dscale, io.dbias})
    if (!packed_per_channel(t)) return refuse(why, "scale, a gradient of it or a saved statistic is a view or not 32F");
  LayerNorm p;
  if (!layer_norm_x(cmd, io.x, &p, why)) return false;
  *plan = p;
  return true;
}

bool one_type(std::initializer_list<const ccv_nnc_tensor_t*> ts, std::string* why) {
  const ccv_nnc_tensor_t* first = nullptr;
  for (const ccv_nnc_tensor_t* t : ts)
    if (t && !first) first = t;
  if (!first) return true;
  for (const ccv_nnc_tensor_t* t : ts)
    if (!same_type(t, first)) return refuse(why, kTypes);
  return true;
}

bool same_desc(const Tensor4& a, const Tensor4& b) {
  for (int i = 0; i < 4; i++)
    if (a.dim[i] != b.dim[i] || a.stride[i] != b.stride[i]) return false;
  return true;
}

bool same_strides(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  if (!a || !b) return false;
  const Layout la = layout_of(a), lb = layout_of(b);
  if (la.nd != lb.nd) return false;
  for (int i = 0; i < la.nd; i++)
    if (la.dim[i] != lb.dim[i] || la.stride[i] != lb.stride[i]) return false;
  return true;
}

size_t extent(const Tensor4& t) {
  size_t last = 0;
  for (int i = 0; i < 4; i++) {
    if (t.dim[i] <= 0) return 0;
    last += static_cast<size_t>(t.dim[i] - 1) * static_cast<size_t>(t.stride[i]);
  }
  return last + 1;
}

Tensor4 packed_as(const Tensor4& t, bool nhwc) {
  Tensor4 p = t;
  const int n = 0, c = 1, h = 2, w = 3;
  if (nhwc) {
    p.stride[c] = 1;
    p.stride[w] = t.dim[c];
    p.stride[h] = t.dim[w] * t.dim[c];
    p.stride[n] = t.dim[h] * t.dim[w] * t.dim[c];
  } else {
    p.stride[w] = 1;
    p.stride[h] = t.dim[w];
    p.stride[c] = t.dim[h] * t.dim[w];
    p.stride[n] = t.dim[c] * t.dim[h] * t.dim[w];
  }
  return p;
}

bool is_packed(const Tensor4& t, bool nhwc) {
  const Tensor4 p = packed_as(t, nhwc);
  for (int i = 0; i < 4; i++)
    if (t.dim[i] > 1 && t.stride[i] != p.stride[i]) return false;
  return true;
}

bool conv_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y, Conv* plan,
                  std::string* why) {
  NNC_CHECK(x && w && y, "CONVOLUTION_FORWARD (GPU_CUDNN): x, w and y are required");
  const conv::Geometry g = conv::geometry(cmd, hint, x, w, bias, y, "CONVOLUTION_FORWARD");
  if (!conv_forward_tensors(x, w, bias, y, why)) return false;
  Conv p;
  if (!conv_of(g, x, w, y, &p, why)) return false;
  if (bias) {
    if (!bias_of(bias, g.K, &p.bias)) return refuse(why, "the bias's stride does not fit cuDNN's int");
    p.has_bias = true;
  }
  *plan = p;
  return true;
}

bool conv_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                   int input_size, ccv_nnc_tensor_t* const* outputs, int output_size, ConvBackward* plan,
                   std::string* why) {
  const conv::BackwardIo io =
      conv_rules::check_backward_slots("CONVOLUTION_BACKWARD", inputs, input_size, outputs, output_size);
  ConvBackward p;
  p.dx = io.dx != nullptr, p.dw = io.dw != nullptr, p.dbias = io.dbias != nullptr;
  if (!same_type(io.g, io.g)) return refuse(why, kTypes);
  if (!p.dx && !p.dw) {
    const ccv_nnc_tensor_param_t& gi = io.g->info;
    NNC_CHECK((nd_of(gi.dim) == 3 || nd_of(gi.dim) == 4) &&
                  (gi.format == CCV_TENSOR_FORMAT_NHWC || gi.format == CCV_TENSOR_FORMAT_NCHW),
              "CONVOLUTION_BACKWARD: g is %s %s; it must be a 3-d or 4-d NHWC or NCHW tensor", format_name(gi.format),
              shape_string(gi.dim).c_str());
    const Image gimg = image_of(io.g);
    NNC_CHECK(layout_of(io.dbias).count() == static_cast<size_t>(gimg.c),
              "CONVOLUTION_BACKWARD: dbias is %s but g has %d channels", shape_string(io.dbias->info.dim).c_str(),
              gimg.c);
    if (!same_type(io.dbias, io.g)) return refuse(why, kTypes);
    if (!tensor4_of(gimg, &p.conv.y) || !bias_of(io.dbias, gimg.c, &p.conv.bias))
      return refuse(why, "a tensor has more than 2^31 - 1 elements");
    p.conv.datatype = type_of(io.g);
    p.conv.has_bias = true;
    p.bias_only = true;
    *plan = p;
    return true;
  }
  NNC_CHECK(io.x && io.w, "CONVOLUTION_BACKWARD: dx and dw need x (input 1) and w (input 2)");
  const conv::Geometry g = conv::geometry(cmd, hint, io.x, io.w, nullptr, io.g, "CONVOLUTION_BACKWARD");
  if (!conv_of(g, io.x, io.w, io.g, &p.conv, why)) return false;
  for (const ccv_nnc_tensor_t* t : {io.g, io.dx, io.dw, io.dbias})
    if (!same_type(t, io.x)) return refuse(why, kTypes);
  if (io.dx) {
    NNC_CHECK(same_shape(io.dx->info, io.x->info) && io.dx->info.format == io.x->info.format,
              "CONVOLUTION_BACKWARD: dx is %s but x is %s; they must match", shape_string(io.dx->info.dim).c_str(),
              shape_string(io.x->info.dim).c_str());
    if (!tensor4_of(image_of(io.dx), &p.dx_desc)) return refuse(why, "dx has more than 2^31 - 1 elements");
  }
  if (io.dw) {
    NNC_CHECK(same_shape(io.dw->info, io.w->info), "CONVOLUTION_BACKWARD: dw is %s but w is %s; they must match",
              shape_string(io.dw->info.dim).c_str(), shape_string(io.w->info.dim).c_str());
    if (io.dw->info.format != io.w->info.format) return refuse(why, "dw's format differs from w's");
    if (!layout_of(io.dw).packed()) return refuse(why, "dw is a view; a cuDNN filter must be packed");
  }
  if (io.dbias) {
    NNC_CHECK(layout_of(io.dbias).count() == static_cast<size_t>(g.K),
              "CONVOLUTION_BACKWARD: dbias is %s but there are %d filters", shape_string(io.dbias->info.dim).c_str(),
              g.K);
    if (!bias_of(io.dbias, g.K, &p.conv.bias)) return refuse(why, "dbias's stride does not fit cuDNN's int");
    p.conv.has_bias = true;
  }
  *plan = p;
  return true;
}

bool pool(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* y,
          Pool* plan, std::string* why) {
  const bool max = cmd.cmd == CCV_NNC_MAX_POOL_FORWARD || cmd.cmd == CCV_NNC_MAX_POOL_BACKWARD;
  const char* name = max ? "MAX_POOL (GPU_CUDNN)" : "AVERAGE_POOL (GPU_CUDNN)";
  NNC_CHECK(x && y, "%s: the input and the pooled tensor are required", name);
  const pool::Geometry g = pool::geometry(cmd, hint, x, y, name);
  if (!pool_tensors(x, y, why)) return false;
  Pool p;
  p.datatype = type_of(x);
  // NNC's average does not count padding (pool.cpp): cuDNN's EXCLUDE_PADDING.
  p.mode = max ? PoolMode::kMax : PoolMode::kAverageExcludePadding;
  if (!tensor4_of(g.x, &p.x) || !tensor4_of(g.y, &p.y)) return refuse(why, "a tensor has more than 2^31 - 1 elements");
  p.window[0] = g.KH, p.window[1] = g.KW;
  p.stride[0] = g.SH, p.stride[1] = g.SW;
  if (!symmetric_pad(g.H, g.PT, g.PB, g.KH, g.SH, g.OH, &p.pad[0]) ||
      !symmetric_pad(g.W, g.PL, g.PR, g.KW, g.SW, g.OW, &p.pad[1]))
    return refuse(why, "padding " + std::to_string(g.PT) + "," + std::to_string(g.PB) + " / " + std::to_string(g.PL) +
                           "," + std::to_string(g.PR) +
                           " differs between the two sides of a dimension in a way that changes the " +
                           "output extent; cuDNN pads both sides alike");
  *plan = p;
  return true;
}

bool softmax_rows(const ccv_nnc_tensor_t* t, Tensor4* desc, std::string* why) {
  NNC_CHECK(t, "SOFTMAX (GPU_CUDNN): a tensor is NULL");
  if (!cudnn_float(type_of(t))) return refuse(why, kTypes);
  const Layout l = layout_of(t);
  NNC_CHECK(l.nd >= 1, "SOFTMAX (GPU_CUDNN): the tensor has no dimension");
  const int64_t cols = l.dim[l.nd - 1], col_stride = l.stride[l.nd - 1];
  // The batch dimensions must fold into one: rows at one stride apart.
  int64_t rows = 1, row_stride = 0;
  for (int i = l.nd - 2; i >= 0; i--) {
    if (l.dim[i] == 1) continue;
    if (rows == 1)
      row_stride = l.stride[i];
    else if (l.stride[i] != row_stride * rows)
      return refuse(why, "the view's batch dimensions do not fold into one row stride");
    rows *= l.dim[i];
  }
  if (rows == 1) row_stride = std::max<int64_t>(cols * col_stride, 1);
  if (rows > INT_MAX || cols > INT_MAX || col_stride <= 0 || row_stride <= 0 ||
      (rows - 1) * row_stride + (cols - 1) * col_stride >= INT_MAX)
    return refuse(why, "the tensor has more than 2^31 - 1 elements");
  desc->dim[0] = static_cast<int>(rows), desc->dim[1] = static_cast<int>(cols), desc->dim[2] = 1, desc->dim[3] = 1;
  desc->stride[0] = static_cast<int>(row_stride), desc->stride[1] = static_cast<int>(col_stride);
  desc->stride[2] = desc->stride[3] = 1;
  return true;
}

// ---- CONVOLUTION_TRANSPOSE ----

namespace {

// 32F, 16F or 16BF, and t's type is x's.
bool convt_type(const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* x) { return same_type(t, x); }
const char* kConvtTypes = kTypes;

bool convt_weights(const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* x, const char* role, std::string* why) {
  if (!convt_type(w, x)) return refuse(why, kConvtTypes);
  if (w->info.format != x->info.format)
    return refuse(why, std::string(role) + " is " + format_name(w->info.format) + " but x is " +
                           format_name(x->info.format) + "; GPU_CUDNN takes weights in x's format");
  if (!layout_of(w).packed()) return refuse(why, std::string(role) + " is a view; a cuDNN filter must be packed");
  return true;
}

bool convt_of(const convt::Geometry& g, const ccv_nnc_tensor_t* w, Conv* p, std::string* why) {
  p->datatype = g.datatype;
  if (!tensor4_of(g.y, &p->x) || !tensor4_of(g.x, &p->y))
    return refuse(why, "a tensor has more than 2^31 - 1 elements");
  p->w.dim[0] = g.C, p->w.dim[1] = g.Kg, p->w.dim[2] = g.KH, p->w.dim[3] = g.KW;
  p->w.nhwc = w->info.format == CCV_TENSOR_FORMAT_NHWC;
  const int eh = (g.KH - 1) * g.DH + 1, ew = (g.KW - 1) * g.DW + 1;
  // The convolution runs from y (OH x OW) to x (H x W): cuDNN's extent
  // formula must give back x's extent with NNC's leading pad.
  if (!symmetric_pad(g.OH, g.PT, g.PB, eh, g.SH, g.H, &p->pad[0]) ||
      !symmetric_pad(g.OW, g.PL, g.PR, ew, g.SW, g.W, &p->pad[1]))
    return refuse(why, "padding " + std::to_string(g.PT) + "," + std::to_string(g.PB) + " / " + std::to_string(g.PL) +
                           "," + std::to_string(g.PR) + " with output_padding " + std::to_string(g.OP) +
                           " is not the data gradient of a convolution with one pad on both sides; cuDNN pads both "
                           "sides alike");
  p->stride[0] = g.SH, p->stride[1] = g.SW;
  p->dilation[0] = g.DH, p->dilation[1] = g.DW;
  p->groups = g.G;
  return true;
}

}  // namespace

bool conv_transpose_forward_tensors(const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias,
                                    const ccv_nnc_tensor_t* y, std::string* why) {
  if (!x || !w || !y) return refuse(why, "x, w and y are required");
  for (const ccv_nnc_tensor_t* t : {x, y, bias})
    if (!convt_type(t, x)) return refuse(why, kConvtTypes);
  if (!is_image(x) || !is_image(y)) return refuse(why, "x and y must be 3-d or 4-d NHWC or NCHW tensors");
  return convt_weights(w, x, "w", why);
}

bool conv_transpose_backward_tensors(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                     int output_size, std::string* why) {
  if (input_size < 1 || output_size < 1 || input_size > 5 || output_size > 3) return refuse(why, "wrong slots");
  const convt::BackwardIo io = convt::backward_io(inputs, input_size, outputs, output_size);
  if (!io.g || (!io.dx && !io.dw && !io.dbias)) return refuse(why, "needs g and an output");
  for (const ccv_nnc_tensor_t* t : {io.g, io.x, io.dx, io.dbias})
    if (!convt_type(t, io.g)) return refuse(why, kConvtTypes);
  if (!is_image(io.g)) return refuse(why, "g must be a 3-d or 4-d NHWC or NCHW tensor");
  if (!io.dx && !io.dw) return true;
  if (!io.x || !io.w) return refuse(why, "dx and dw need x and w");
  if (!is_image(io.x)) return refuse(why, "x must be a 3-d or 4-d NHWC or NCHW tensor");
  if (!convt_weights(io.w, io.x, "w", why)) return false;
  if (io.dw && !convt_weights(io.dw, io.x, "dw", why)) return false;
  return true;
}

bool conv_transpose_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const ccv_nnc_tensor_t* x,
                            const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* bias, const ccv_nnc_tensor_t* y,
                            ConvTranspose* plan, std::string* why) {
  NNC_CHECK(x && w && y, "CONVOLUTION_TRANSPOSE_FORWARD (GPU_CUDNN): x, w and y are required");
  const convt::Geometry g = convt::geometry(cmd, hint, x, w, bias, y, "CONVOLUTION_TRANSPOSE_FORWARD");
  if (!conv_transpose_forward_tensors(x, w, bias, y, why)) return false;
  ConvTranspose p;
  if (!convt_of(g, w, &p.conv, why)) return false;
  if (bias) {
    if (!bias_of(bias, g.K, &p.conv.bias)) return refuse(why, "the bias's stride does not fit cuDNN's int");
    p.conv.has_bias = true;
  }
  *plan = p;
  return true;
}

bool conv_transpose_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size, ConvTranspose* plan,
                             std::string* why) {
  static const char* name = "CONVOLUTION_TRANSPOSE_BACKWARD";
  const convt::BackwardIo io = conv_rules::check_backward_slots(name, inputs, input_size, outputs, output_size);
  ConvTranspose p;
  p.dx = io.dx != nullptr, p.dw = io.dw != nullptr, p.dbias = io.dbias != nullptr;
  if (!p.dx && !p.dw) {
    convt::check_bias_only(io.g, io.dbias, name);
    if (!convt_type(io.g, io.g) || !convt_type(io.dbias, io.g)) return refuse(why, kConvtTypes);
    const Image gimg = image_of(io.g);
    if (!tensor4_of(gimg, &p.conv.x) || !bias_of(io.dbias, gimg.c, &p.conv.bias))
      return refuse(why, "a tensor has more than 2^31 - 1 elements");
    p.conv.datatype = gimg.datatype;
    p.conv.has_bias = true;
    p.bias_only = true;
    *plan = p;
    return true;
  }
  NNC_CHECK(io.x && io.w, "%s: dx and dw need x (input 1) and w (input 2)", name);
  const convt::Geometry g = convt::geometry(cmd, hint, io.x, io.w, nullptr, io.g, name);
  if (!conv_transpose_backward_tensors(inputs, input_size, outputs, output_size, why)) return false;
  if (!convt_of(g, io.w, &p.conv, why)) return false;
  if (io.dx) {
    NNC_CHECK(same_shape(io.dx->info, io.x->info) && io.dx->info.format == io.x->info.format,
              "%s: dx is %s but x is %s; they must match", name, shape_string(io.dx->info.dim).c_str(),
              shape_string(io.x->info.dim).c_str());
    if (!tensor4_of(image_of(io.dx), &p.dx_desc)) return refuse(why, "dx has more than 2^31 - 1 elements");
  }
  if (io.dw) {
    NNC_CHECK(same_shape(io.dw->info, io.w->info), "%s: dw is %s but w is %s; they must match", name,
              shape_string(io.dw->info.dim).c_str(), shape_string(io.w->info.dim).c_str());
    if (io.dw->info.format != io.w->info.format) return refuse(why, "dw's format differs from w's");
  }
  if (io.dbias) {
    NNC_CHECK(layout_of(io.dbias).count() == static_cast<size_t>(g.K), "%s: dbias is %s but there are %d channels",
              name, shape_string(io.dbias->info.dim).c_str(), g.K);
    if (!bias_of(io.dbias, g.K, &p.conv.bias)) return refuse(why, "dbias's stride does not fit cuDNN's int");
    p.conv.has_bias = true;
  }
  *plan = p;
  return true;
}

}  // namespace nnc::cudnn_plan
