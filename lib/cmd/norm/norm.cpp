// The normalisation family: BATCH_NORM, LAYER_NORM, GROUP_NORM and RMSNORM,
// forward and backward.
//
// BATCH_NORM (bnorm.axis[0..count): the axes the statistics run over, e.g.
// {0, 1, 2} for NHWC images and {0, 2, 3} for NCHW; the other axes are the
// channels. Per-channel tensors hold one element per channel, in row-major
// order of the channel axes; their shape is the input's with the reduced axes
// of extent 1, or any shape with the same extents once 1s are dropped (so [C]
// and [1, C, 1, 1] both work for NCHW).
//   Forward inputs  |x|scale|bias|mean|var|, outputs |y|mean|var|saved_mean|saved_inv_std|.
//   Training (is_test = 0): m, v = the batch mean and biased variance of x per
//     channel; inv_std = 1 / sqrt(v + epsilon); y = (x - m) * inv_std * scale + bias;
//     output mean = input mean * momentum + m * (1 - momentum), the same for var
//     with v, the biased variance that normalised the batch (PyTorch's running
//     var takes the unbiased one). Outputs 1 / 2 may be the input tensors 3 / 4
//     themselves; NULL skips the update. saved_mean = m, saved_inv_std = inv_std
//     (NULL skips them).
//   Inference (is_test = 1): y = (x - mean) / sqrt(var + epsilon) * scale + bias
//     with the running mean / var of inputs 3 / 4; outputs 1..4 are not written.
//   Backward inputs (libnnc's order: gradients of the 5 outputs, the 5 inputs,
//     the 5 outputs) |g|-|-|-|-|x|scale|bias|mean|var|y|mean|var|saved_mean|saved_inv_std|,
//     only g, x and scale (for dx) plus saved_mean / saved_inv_std (training) or
//     mean / var (inference) are read. Outputs |dx|dscale|dbias|, any may be NULL.
//     Training: dx = scale * inv_std * (g - mean(g) - xhat * mean(g * xhat)) with
//     xhat = (x - m) * inv_std and means per channel; inference: dx = g * scale *
//     inv_std (the statistics are constants). dscale = sum(g * xhat), dbias = sum(g).
// LAYER_NORM (lnorm.axis[0..count): the axes normalised over, e.g. {2} for
// (batch, sequence, features)). The kept axes index the statistics.
//   Forward inputs |x|scale|bias| (elementwise_affine = 1; scale / bias have the
//     normalised extents: x's shape with the kept axes of extent 1, or the same
//     extents once 1s are dropped; either may be NULL: 1 / 0) or |x|
//     (elementwise_affine = 0); outputs |y|saved_mean|saved_inv_std|, the saved
//     statistics shaped like x with the normalised axes of extent 1 (NULL skips).
//     y = (x - m) * inv_std * scale + bias, m / variance biased, per kept index.
//   Backward inputs |g|-|-|x|scale|bias|y|saved_mean|saved_inv_std| (affine, 9)
//     or |g|-|-|x|y|saved_mean|saved_inv_std| (7); outputs |dx|dscale|dbias| or
//     |dx|. With h = g * scale: dx = inv_std * (h - mean(h) - xhat * mean(h * xhat))
//     over the normalised axes; dscale = sum over kept axes of g * xhat, dbias = sum g.
// GROUP_NORM (gnorm.group_axis: the channel axis, of C channels; gnorm.groups:
// G, dividing C; gnorm.reduce_axis[0..reduce_count): further axes the
// statistics run over, e.g. {2, 3} for NCHW images). Statistics are per group
// of C / G channels and per index of the remaining (kept) axes: for NCHW x
// [N, C, H, W] with group axis 1 and reduce axes {2, 3}, over C / G x H x W
// elements for each (n, group), saved as [N, G, 1, 1] (x's shape with the
// group axis of extent G and the reduce axes of extent 1).
//   Forward inputs |x|scale|bias| (elementwise_affine = 1; scale / bias per
//     channel: x's shape with every axis but the group axis of extent 1, or
//     [C]; either may be NULL: 1 / 0) or |x|; outputs
//     |y|saved_mean|saved_inv_std| (NULL skips the statistics).
//     y = (x - m) * inv_std * scale[c] + bias[c], the variance biased.
//   Backward inputs |g|-|-|x|scale|bias|y|saved_mean|saved_inv_std| (affine)
//     or |g|-|-|x|y|saved_mean|saved_inv_std|; outputs |dx|dscale|dbias| or
//     |dx|. With h = g * scale[c], per statistics group:
//     dx = inv_std * (h - mean(h) - xhat * mean(h * xhat)); dscale[c] = sum of
//     g * xhat over everything but the channel, dbias[c] = sum of g.
// RMSNORM (rmsnorm.axis[0..count): the normalised axes, as LAYER_NORM's).
//   Forward inputs |x|scale| (scale with the normalised extents, as layer
//     norm's; NULL: 1), outputs |y|saved_inv_std| (saved_inv_std shaped like
//     x with the normalised axes of extent 1; NULL skips it).
//     y = x * inv_rms * scale with inv_rms = 1 / sqrt(mean(x^2) + epsilon).
//   Backward inputs |g|-|x|scale|y|saved_inv_std|, outputs |dx|dscale|. With
//     h = g * scale and xhat = x * inv_rms: dx = inv_rms * (h - xhat *
//     mean(h * xhat)); dscale = sum over the kept axes of g * xhat.
// Shapes, bitmasks and in-place rules are libnnc's (see the functions below):
// BATCH_NORM enforces (and allows nothing beyond) the running statistics'
// in-place update; LAYER_NORM, GROUP_NORM and RMSNORM have no in-place pair
// (the kernels still take y = x, as every one reads a statistics group whole
// before writing it).
#include "cmd/norm/norm.hpp"

#include <cmath>
#include <string>

#include "cmd/common/axes.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace norm {

namespace {

ccv_nnc_tensor_t* in_at(ccv_nnc_tensor_t* const* t, int size, int i) { return i < size ? t[i] : nullptr; }
const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

// Extents other than 1, in order.
int squeeze(const int* dim, int nd, int* out) {
  int n = 0;
  for (int i = 0; i < nd; i++)
    if (dim[i] != 1) out[n++] = dim[i];
  return n;
}

// `t` holds the elements of shape `want` (nd dims), up to extents of 1.
void check_small(const char* name, const char* role, const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_t* x,
                 const int* want, int nd) {
  if (!t) return;
  NNC_CHECK(type_of(t) == type_of(x), "%s: %s is %s but x is %s", name, role, dt(t), dt(x));
  int a[kMaxDim], b[kMaxDim];
  const int na = squeeze(t->info.dim, nd_of(t->info.dim), a), nb = squeeze(want, nd, b);
  bool same = na == nb;
  for (int i = 0; i < na && same; i++) same = a[i] == b[i];
  int shown[kMaxDim] = {};
  for (int i = 0; i < nd; i++) shown[i] = want[i];
  NNC_CHECK(same, "%s: %s is %s but x is %s, so it must be %s (or the same extents without the 1s)", name, role,
            shape_string(t->info.dim).c_str(), shape_string(x->info.dim).c_str(), shape_string(shown).c_str());
}

void check_x(const char* name, const ccv_nnc_tensor_t* x, const char* role, const ccv_nnc_tensor_t* t) {
  if (!t) return;
  NNC_CHECK(type_of(t) == type_of(x), "%s: %s is %s but x is %s", name, role, dt(t), dt(x));
  NNC_CHECK(same_shape(t->info, x->info), "%s: %s is %s but x is %s; they must match", name,
            role, shape_string(t->info.dim).c_str(), shape_string(x->info.dim).c_str());
}

// Per-channel shape of x for a reduced-axis mask (keep = false) or a kept-axis one.
void small_shape(const ccv_nnc_tensor_t* x, unsigned mask, int* out) {
  reduced_dims(x->info.dim, nd_of(x->info.dim), mask, out);
}
void normalised_shape(const ccv_nnc_tensor_t* x, unsigned mask, int* out) {
  const int nd = nd_of(x->info.dim);
  unsigned kept = 0;
  for (int i = 0; i < nd; i++)
    if (!((mask >> i) & 1u)) kept |= 1u << i;
  reduced_dims(x->info.dim, nd, kept, out);
}

void check_epsilon(const char* name, float epsilon) {
  NNC_CHECK(epsilon >= 0 && std::isfinite(epsilon), "%s: epsilon must be finite and >= 0 (got %g)", name,
            static_cast<double>(epsilon));
}

void validate_bnorm_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                            int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "BATCH_NORM_FORWARD";
  NNC_CHECK(input_size == 5, "%s: takes inputs |x|scale|bias|mean|var| (got %d inputs)", name, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 5,
            "%s: takes outputs |y|mean|var|saved_mean|saved_inv_std| (got %d outputs)", name, output_size);
  const BatchNormIo io = batch_norm_forward_io(inputs, input_size, outputs, output_size);
  NNC_CHECK(io.x && io.y, "%s: x (input 0) and y (output 0) are required", name);
  NNC_CHECK(io.scale && io.bias, "%s: scale (input 1) and bias (input 2) are required", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  check_epsilon(name, cmd.info.bnorm.epsilon);
  const unsigned mask = axis_mask(name, cmd.info.bnorm.axis, cmd.info.bnorm.count, nd_of(io.x->info.dim));
  check_x(name, io.x, "y", io.y);
  int c[kMaxDim];
  small_shape(io.x, mask, c);
  const int nd = nd_of(io.x->info.dim);
  check_small(name, "scale", io.scale, io.x, c, nd);
  check_small(name, "bias", io.bias, io.x, c, nd);
  check_small(name, "mean", io.mean, io.x, c, nd);
  check_small(name, "var", io.var, io.x, c, nd);
  if (cmd.info.bnorm.is_test) {
    NNC_CHECK(io.mean && io.var, "%s: inference (is_test) needs the running mean and var (inputs 3 and 4)", name);
    return;
  }
  check_small(name, "the output mean", io.out_mean, io.x, c, nd);
  check_small(name, "the output var", io.out_var, io.x, c, nd);
  check_small(name, "saved_mean", io.saved_mean, io.x, c, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, c, nd);
  NNC_CHECK(!io.out_mean || io.mean, "%s: updating the running mean (output 1) needs the mean (input 3)", name);
  NNC_CHECK(!io.out_var || io.var, "%s: updating the running var (output 2) needs the var (input 4)", name);
}

void validate_bnorm_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "BATCH_NORM_BACKWARD";
  const bool test = cmd.info.bnorm.is_test;
  NNC_CHECK(input_size == 15,
            "%s: takes the 15 inputs |g|-|-|-|-|x|scale|bias|mean|var|y|mean|var|saved_mean|saved_inv_std| "
            "(got %d)",
            name, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 5, "%s: takes outputs |dx|dscale|dbias|dmean|dvar| (got %d)", name, output_size);
  const BatchNormIo io = batch_norm_backward_io(inputs, input_size, outputs, output_size);
  NNC_CHECK(io.dx || io.dscale || io.dbias || io.dmean || io.dvar, "%s: every output is NULL", name);
  NNC_CHECK(io.g && io.x, "%s: needs g (input 0) and x (input 5)", name);
  NNC_CHECK(!io.dx || io.scale, "%s: dx needs scale (input 6)", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  check_epsilon(name, cmd.info.bnorm.epsilon);
  const unsigned mask = axis_mask(name, cmd.info.bnorm.axis, cmd.info.bnorm.count, nd_of(io.x->info.dim));
  check_x(name, io.x, "g", io.g);
  check_x(name, io.x, "dx", io.dx);
  int c[kMaxDim];
  small_shape(io.x, mask, c);
  const int nd = nd_of(io.x->info.dim);
  check_small(name, "scale", io.scale, io.x, c, nd);
  check_small(name, "dscale", io.dscale, io.x, c, nd);
  check_small(name, "dbias", io.dbias, io.x, c, nd);
  check_small(name, "dmean", io.dmean, io.x, c, nd);
  check_small(name, "dvar", io.dvar, io.x, c, nd);
  NNC_CHECK(!(io.dmean || io.dvar) || !test || io.scale, "%s: dmean and dvar in inference need scale (input 6)", name);
  if (test) {
    NNC_CHECK(io.mean && io.var, "%s: inference (is_test) reads the running mean and var (inputs 8 and 9)", name);
    check_small(name, "mean", io.mean, io.x, c, nd);
    check_small(name, "var", io.var, io.x, c, nd);
  } else {
    NNC_CHECK(io.saved_mean && io.saved_inv_std, "%s: needs saved_mean and saved_inv_std (inputs 13 and 14)", name);
    check_small(name, "saved_mean", io.saved_mean, io.x, c, nd);
    check_small(name, "saved_inv_std", io.saved_inv_std, io.x, c, nd);
  }
}

void validate_lnorm_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                            int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "LAYER_NORM_FORWARD";
  const bool affine = cmd.info.lnorm.elementwise_affine;
  NNC_CHECK(affine ? input_size >= 1 && input_size <= 3 : input_size == 1, "%s: takes inputs %s (got %d)", name,
            affine ? "|x|scale|bias|" : "|x| (elementwise_affine is 0)", input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 3, "%s: takes outputs |y|saved_mean|saved_inv_std| (got %d)", name,
            output_size);
  const LayerNormIo io = layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  NNC_CHECK(io.x && io.y, "%s: x (input 0) and y (output 0) are required", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  check_epsilon(name, cmd.info.lnorm.epsilon);
  const int nd = nd_of(io.x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.lnorm.axis, cmd.info.lnorm.count, nd);
  check_x(name, io.x, "y", io.y);
  int s[kMaxDim], m[kMaxDim];
  normalised_shape(io.x, mask, s);
  small_shape(io.x, mask, m);
  check_small(name, "scale", io.scale, io.x, s, nd);
  check_small(name, "bias", io.bias, io.x, s, nd);
  check_small(name, "saved_mean", io.saved_mean, io.x, m, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

void validate_lnorm_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "LAYER_NORM_BACKWARD";
  const bool affine = cmd.info.lnorm.elementwise_affine;
  NNC_CHECK(input_size == (affine ? 9 : 7), "%s: takes inputs %s (got %d)", name,
            affine ? "|g|-|-|x|scale|bias|y|saved_mean|saved_inv_std|" : "|g|-|-|x|y|saved_mean|saved_inv_std|",
            input_size);
  NNC_CHECK(output_size >= 1 && output_size <= (affine ? 3 : 1), "%s: takes outputs %s (got %d)", name,
            affine ? "|dx|dscale|dbias|" : "|dx|", output_size);
  const LayerNormIo io = layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  NNC_CHECK(io.dx || io.dscale || io.dbias, "%s: every output is NULL", name);
  NNC_CHECK(io.g && io.x && io.saved_mean && io.saved_inv_std,
            "%s: needs g (input 0), x (input 3), saved_mean and saved_inv_std (the last two inputs)", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  const int nd = nd_of(io.x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.lnorm.axis, cmd.info.lnorm.count, nd);
  check_x(name, io.x, "g", io.g);
  check_x(name, io.x, "dx", io.dx);
  int s[kMaxDim], m[kMaxDim];
  normalised_shape(io.x, mask, s);
  small_shape(io.x, mask, m);
  check_small(name, "scale", io.scale, io.x, s, nd);
  check_small(name, "dscale", io.dscale, io.x, s, nd);
  check_small(name, "dbias", io.dbias, io.x, s, nd);
  check_small(name, "saved_mean", io.saved_mean, io.x, m, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

// GROUP_NORM's per-channel shape (x with every axis but the group axis of
// extent 1) and statistics shape (x with the group axis of extent G and the
// reduce axes of extent 1). The command must have passed gnorm_check.
void gnorm_shapes(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, int* channel, int* stats) {
  const int nd = nd_of(x->info.dim);
  const int ga = cmd.info.gnorm.group_axis;
  const unsigned mask = gnorm_reduce_mask(cmd);
  for (int i = 0; i < nd; i++) {
    channel[i] = i == ga ? x->info.dim[i] : 1;
    stats[i] = i == ga ? cmd.info.gnorm.groups : ((mask >> i) & 1u) ? 1 : x->info.dim[i];
  }
}

// The group axis, groups and reduce axes against x.
void gnorm_check(const char* name, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x) {
  const auto& p = cmd.info.gnorm;
  const int nd = nd_of(x->info.dim);
  NNC_CHECK(p.group_axis >= 0 && p.group_axis < nd, "%s: group_axis %d is outside x's %d axes (%s)", name,
            p.group_axis, nd, shape_string(x->info.dim).c_str());
  const int c = x->info.dim[p.group_axis];
  NNC_CHECK(p.groups >= 1 && c % p.groups == 0, "%s: %d groups must divide the %d channels of axis %d", name,
            p.groups, c, p.group_axis);
  NNC_CHECK(p.reduce_count >= 0 && p.reduce_count < nd, "%s: reduce_count %d must be in [0, %d) for x %s", name,
            p.reduce_count, nd, shape_string(x->info.dim).c_str());
  unsigned mask = 0;
  for (int i = 0; i < p.reduce_count; i++) {
    const int a = p.reduce_axis[i];
    NNC_CHECK(a >= 0 && a < nd, "%s: reduce axis %d is outside x's %d axes", name, a, nd);
    NNC_CHECK(a != p.group_axis, "%s: reduce axis %d is the group axis", name, a);
    NNC_CHECK(!((mask >> a) & 1u), "%s: reduce axis %d is listed twice", name, a);
    mask |= 1u << a;
  }
  check_epsilon(name, p.epsilon);
}

void validate_gnorm_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                            int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "GROUP_NORM_FORWARD";
  const bool affine = cmd.info.gnorm.elementwise_affine;
  NNC_CHECK(affine ? input_size >= 1 && input_size <= 3 : input_size == 1, "%s: takes inputs %s (got %d)", name,
            affine ? "|x|scale|bias|" : "|x| (elementwise_affine is 0)", input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 3, "%s: takes outputs |y|saved_mean|saved_inv_std| (got %d)", name,
            output_size);
  const GroupNormIo io = group_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  NNC_CHECK(io.x && io.y, "%s: x (input 0) and y (output 0) are required", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  gnorm_check(name, cmd, io.x);
  check_x(name, io.x, "y", io.y);
  const int nd = nd_of(io.x->info.dim);
  int c[kMaxDim] = {}, m[kMaxDim] = {};
  gnorm_shapes(cmd, io.x, c, m);
  check_small(name, "scale", io.scale, io.x, c, nd);
  check_small(name, "bias", io.bias, io.x, c, nd);
  check_small(name, "saved_mean", io.saved_mean, io.x, m, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

void validate_gnorm_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                             int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "GROUP_NORM_BACKWARD";
  const bool affine = cmd.info.gnorm.elementwise_affine;
  NNC_CHECK(input_size == (affine ? 9 : 7), "%s: takes inputs %s (got %d)", name,
            affine ? "|g|-|-|x|scale|bias|y|saved_mean|saved_inv_std|" : "|g|-|-|x|y|saved_mean|saved_inv_std|",
            input_size);
  NNC_CHECK(output_size >= 1 && output_size <= (affine ? 3 : 1), "%s: takes outputs %s (got %d)", name,
            affine ? "|dx|dscale|dbias|" : "|dx|", output_size);
  const GroupNormIo io = group_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  NNC_CHECK(io.dx || io.dscale || io.dbias, "%s: every output is NULL", name);
  NNC_CHECK(io.g && io.x && io.saved_mean && io.saved_inv_std,
            "%s: needs g (input 0), x (input 3), saved_mean and saved_inv_std (the last two inputs)", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  gnorm_check(name, cmd, io.x);
  check_x(name, io.x, "g", io.g);
  check_x(name, io.x, "dx", io.dx);
  const int nd = nd_of(io.x->info.dim);
  int c[kMaxDim] = {}, m[kMaxDim] = {};
  gnorm_shapes(cmd, io.x, c, m);
  check_small(name, "scale", io.scale, io.x, c, nd);
  check_small(name, "dscale", io.dscale, io.x, c, nd);
  check_small(name, "dbias", io.dbias, io.x, c, nd);
  check_small(name, "saved_mean", io.saved_mean, io.x, m, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

void validate_rmsnorm_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                              int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "RMSNORM_FORWARD";
  NNC_CHECK(input_size >= 1 && input_size <= 2, "%s: takes inputs |x|scale| (got %d)", name, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 2, "%s: takes outputs |y|saved_inv_std| (got %d)", name, output_size);
  const RmsNormIo io = rmsnorm_forward_io(inputs, input_size, outputs, output_size);
  NNC_CHECK(io.x && io.y, "%s: x (input 0) and y (output 0) are required", name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  check_epsilon(name, cmd.info.rmsnorm.epsilon);
  const int nd = nd_of(io.x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.rmsnorm.axis, cmd.info.rmsnorm.count, nd);
  check_x(name, io.x, "y", io.y);
  int s[kMaxDim], m[kMaxDim];
  normalised_shape(io.x, mask, s);
  small_shape(io.x, mask, m);
  check_small(name, "scale", io.scale, io.x, s, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

void validate_rmsnorm_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                               int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "RMSNORM_BACKWARD";
  NNC_CHECK(input_size == 6, "%s: takes inputs |g|-|x|scale|y|saved_inv_std| (got %d)", name, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 2, "%s: takes outputs |dx|dscale| (got %d)", name, output_size);
  const RmsNormIo io = rmsnorm_backward_io(inputs, input_size, outputs, output_size);
  NNC_CHECK(io.dx || io.dscale, "%s: every output is NULL", name);
  NNC_CHECK(io.g && io.x && io.saved_inv_std, "%s: needs g (input 0), x (input 2) and saved_inv_std (input 5)",
            name);
  NNC_CHECK(type_of(io.x) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name, dt(io.x));
  const int nd = nd_of(io.x->info.dim);
  const unsigned mask = axis_mask(name, cmd.info.rmsnorm.axis, cmd.info.rmsnorm.count, nd);
  check_x(name, io.x, "g", io.g);
  check_x(name, io.x, "dx", io.dx);
  int s[kMaxDim], m[kMaxDim];
  normalised_shape(io.x, mask, s);
  small_shape(io.x, mask, m);
  check_small(name, "scale", io.scale, io.x, s, nd);
  check_small(name, "dscale", io.dscale, io.x, s, nd);
  check_small(name, "saved_inv_std", io.saved_inv_std, io.x, m, nd);
}

// libnnc's shapes: y (and, backward, dx) like the first input; every other
// output like it with the command's axes of extent 1. For BATCH_NORM those are
// the per-channel statistics and dscale / dbias. LAYER_NORM's backward applies
// the same rule, so its dscale / dbias come out shaped like the saved
// statistics (x with the normalised axes 1), not like scale: libnnc's rule,
// kept for source compatibility; execution checks them against scale's shape.
void first_and_reduced(const ccv_nnc_tensor_param_t* inputs, int input_size, const int* axis, int count,
                       ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  const int nd = nd_of(inputs[0].dim);
  for (int i = 0; i < output_size; i++) {
    outputs[i] = inputs[0];
    if (i == 0) continue;
    for (int j = 0; j < count && j < kMaxDim; j++)
      if (axis[j] >= 0 && axis[j] < nd) outputs[i].dim[axis[j]] = 1;
  }
}

void bnorm_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  first_and_reduced(inputs, input_size, p.bnorm.axis, p.bnorm.count, outputs, output_size);
}

void lnorm_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  first_and_reduced(inputs, input_size, p.lnorm.axis, p.lnorm.count, outputs, output_size);
}

// GROUP_NORM's rule: y / dx like the first input, every other output like it
// with the group axis of extent G and the reduce axes of extent 1 (the saved
// statistics; libnnc gives the backward's dscale / dbias that shape too, kept
// for source compatibility; execution checks them against scale's shape).
void gnorm_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1) return;
  const int nd = nd_of(inputs[0].dim);
  for (int i = 0; i < output_size; i++) {
    outputs[i] = inputs[0];
    if (i == 0) continue;
    if (p.gnorm.group_axis >= 0 && p.gnorm.group_axis < nd) outputs[i].dim[p.gnorm.group_axis] = p.gnorm.groups;
    for (int j = 0; j < p.gnorm.reduce_count && j < kMaxDim; j++)
      if (p.gnorm.reduce_axis[j] >= 0 && p.gnorm.reduce_axis[j] < nd) outputs[i].dim[p.gnorm.reduce_axis[j]] = 1;
  }
}

void rmsnorm_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  first_and_reduced(inputs, input_size, p.rmsnorm.axis, p.rmsnorm.count, outputs, output_size);
}

// libnnc's bitmasks (predicates on the first word). BATCH_NORM_FORWARD: all
// five inputs, and y alone or all five outputs.
bool bnorm_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                           const uint64_t* outputs, int osz) {
  const uint64_t out = word0(outputs, osz);
  return word0(inputs, isz) == 31u && (out == 1u || out == 31u);
}

// |g|-|-|-|-|x|scale|bias|mean|var|y|mean|var|saved_mean|saved_inv_std|: g, x,
// scale, saved_mean, saved_inv_std; all of |dx|dscale|dbias|.
bool bnorm_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                            const uint64_t* outputs, int osz) {
  constexpr uint64_t kNeed = (1u << 0) | (1u << 5) | (1u << 6) | (1u << 13) | (1u << 14);
  return (word0(inputs, isz) & kNeed) == kNeed && (word0(outputs, osz) & 7u) == 7u;
}

// LAYER_NORM_FORWARD: |x|scale|bias| (affine) or |x|, all of them; y alone or
// all of |y|saved_mean|saved_inv_std|.
bool lnorm_forward_bitmask(const ccv_nnc_cmd_param_t& p, int, int, const uint64_t* inputs, int isz,
                           const uint64_t* outputs, int osz) {
  const uint64_t out = word0(outputs, osz);
  return word0(inputs, isz) == (p.lnorm.elementwise_affine ? 7u : 1u) && (out == 1u || out == 7u);
}

// Affine |g|-|-|x|scale|bias|y|saved_mean|saved_inv_std|: g, x, scale and the
// saved statistics; plain |g|-|-|x|y|saved_mean|saved_inv_std|: g, x and the
// saved statistics. dx is always produced.
bool lnorm_backward_bitmask(const ccv_nnc_cmd_param_t& p, int, int, const uint64_t* inputs, int isz,
                            const uint64_t* outputs, int osz) {
  const uint64_t need = p.lnorm.elementwise_affine ? (1u << 0) | (1u << 3) | (1u << 4) | (1u << 7) | (1u << 8)
                                                   : (1u << 0) | (1u << 3) | (1u << 5) | (1u << 6);
  return (word0(inputs, isz) & need) == need && (word0(outputs, osz) & 1u) == 1u;
}

// GROUP_NORM_FORWARD: as LAYER_NORM_FORWARD, under gnorm.elementwise_affine.
bool gnorm_forward_bitmask(const ccv_nnc_cmd_param_t& p, int, int, const uint64_t* inputs, int isz,
                           const uint64_t* outputs, int osz) {
  const uint64_t out = word0(outputs, osz);
  return word0(inputs, isz) == (p.gnorm.elementwise_affine ? 7u : 1u) && (out == 1u || out == 7u);
}

// Affine |g|-|-|x|scale|bias|y|saved_mean|saved_inv_std|: g, x, scale and the
// saved statistics, dx always produced. Plain |g|-|-|x|y|saved_mean|saved_inv_std|:
// g, x and the saved statistics, and exactly dx.
bool gnorm_backward_bitmask(const ccv_nnc_cmd_param_t& p, int, int, const uint64_t* inputs, int isz,
                            const uint64_t* outputs, int osz) {
  const uint64_t in = word0(inputs, isz), out = word0(outputs, osz);
  if (p.gnorm.elementwise_affine) {
    constexpr uint64_t kNeed = (1u << 0) | (1u << 3) | (1u << 4) | (1u << 7) | (1u << 8);
    return (in & kNeed) == kNeed && (out & 1u) == 1u;
  }
  constexpr uint64_t kNeed = (1u << 0) | (1u << 3) | (1u << 5) | (1u << 6);
  return (in & kNeed) == kNeed && (out & 7u) == 1u;
}

// RMSNORM_FORWARD: both inputs |x|scale| and both outputs |y|saved_inv_std|.
bool rmsnorm_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                             const uint64_t* outputs, int osz) {
  return word0(inputs, isz) == 3u && word0(outputs, osz) == 3u;
}

// |g|-|x|scale|y|saved_inv_std|: g, x, scale and saved_inv_std; dx always produced.
bool rmsnorm_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz,
                              const uint64_t* outputs, int osz) {
  constexpr uint64_t kNeed = (1u << 0) | (1u << 2) | (1u << 3) | (1u << 5);
  return (word0(inputs, isz) & kNeed) == kNeed && (word0(outputs, osz) & 1u) == 1u;
}

// The running statistics are updated in place: libnnc ties outputs 1 / 2 to
// inputs 3 / 4 and allows no other pair.
bool bnorm_forward_enforce(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return (input_idx == 3 && output_idx == 1) || (input_idx == 4 && output_idx == 2);
}

void add(Registry& r, uint32_t id, TensorAutoFn tensor_auto, BitmaskFn bitmask, InplaceFn allow, InplaceFn enforce,
         ValidateFn validate, ccv_nnc_cmd_exec_f ref, ccv_nnc_cmd_exec_f opt, AcceptFn accept) {
  r.add_command({.cmd = id, .tensor_auto = tensor_auto, .bitmask = bitmask, .allow_inplace = allow, .enforce_inplace = enforce, .validate = validate});
  r.add_kernels(cpu_ref(types::kFloat), {{id, ref}});
  r.add_kernels(cpu_opt(types::kWide).accepting(accept), {{id, opt}});
}

}  // namespace

BatchNormIo batch_norm_forward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                  int output_size) {
  BatchNormIo io;
  io.x = in_at(inputs, input_size, 0);
  io.scale = in_at(inputs, input_size, 1);
  io.bias = in_at(inputs, input_size, 2);
  io.mean = in_at(inputs, input_size, 3);
  io.var = in_at(inputs, input_size, 4);
  io.y = in_at(outputs, output_size, 0);
  io.out_mean = in_at(outputs, output_size, 1);
  io.out_var = in_at(outputs, output_size, 2);
  io.saved_mean = in_at(outputs, output_size, 3);
  io.saved_inv_std = in_at(outputs, output_size, 4);
  return io;
}

BatchNormIo batch_norm_backward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                   int output_size) {
  BatchNormIo io;
  io.g = in_at(inputs, input_size, 0);
  io.x = in_at(inputs, input_size, 5);
  io.scale = in_at(inputs, input_size, 6);
  io.bias = in_at(inputs, input_size, 7);
  io.mean = in_at(inputs, input_size, 8);
  io.var = in_at(inputs, input_size, 9);
  io.y = in_at(inputs, input_size, 10);
  io.saved_mean = in_at(inputs, input_size, 13);
  io.saved_inv_std = in_at(inputs, input_size, 14);
  io.dx = in_at(outputs, output_size, 0);
  io.dscale = in_at(outputs, output_size, 1);
  io.dbias = in_at(outputs, output_size, 2);
  io.dmean = in_at(outputs, output_size, 3);
  io.dvar = in_at(outputs, output_size, 4);
  return io;
}

namespace {

// LAYER_NORM and GROUP_NORM share their slots: |x|scale|bias| -> |y|saved_mean|saved_inv_std|
// (scale and bias when elementwise_affine), backward |g|-|-|x|scale|...|saved_mean|saved_inv_std|
// -> |dx|dscale|dbias|.
LayerNormIo affine_norm_forward_io(bool affine, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                   int output_size) {
  LayerNormIo io;
  io.x = in_at(inputs, input_size, 0);
  if (affine) {
    io.scale = in_at(inputs, input_size, 1);
    io.bias = in_at(inputs, input_size, 2);
  }
  io.y = in_at(outputs, output_size, 0);
  io.saved_mean = in_at(outputs, output_size, 1);
  io.saved_inv_std = in_at(outputs, output_size, 2);
  return io;
}

LayerNormIo affine_norm_backward_io(bool affine, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                                    int output_size) {
  LayerNormIo io;
  io.g = in_at(inputs, input_size, 0);
  io.x = in_at(inputs, input_size, 3);
  if (affine) io.scale = in_at(inputs, input_size, 4);
  if (input_size >= 2) {
    io.saved_mean = inputs[input_size - 2];
    io.saved_inv_std = inputs[input_size - 1];
  }
  io.dx = in_at(outputs, output_size, 0);
  if (affine) {
    io.dscale = in_at(outputs, output_size, 1);
    io.dbias = in_at(outputs, output_size, 2);
  }
  return io;
}

}  // namespace

LayerNormIo layer_norm_forward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  return affine_norm_forward_io(cmd.info.lnorm.elementwise_affine, inputs, input_size, outputs, output_size);
}

LayerNormIo layer_norm_backward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                   ccv_nnc_tensor_t* const* outputs, int output_size) {
  return affine_norm_backward_io(cmd.info.lnorm.elementwise_affine, inputs, input_size, outputs, output_size);
}

unsigned gnorm_reduce_mask(const ccv_nnc_cmd_t& cmd) {
  unsigned mask = 0;
  for (int i = 0; i < cmd.info.gnorm.reduce_count && i < kMaxDim; i++) mask |= 1u << cmd.info.gnorm.reduce_axis[i];
  return mask;
}

GroupNormIo group_norm_forward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                  ccv_nnc_tensor_t* const* outputs, int output_size) {
  return affine_norm_forward_io(cmd.info.gnorm.elementwise_affine, inputs, input_size, outputs, output_size);
}

GroupNormIo group_norm_backward_io(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                   ccv_nnc_tensor_t* const* outputs, int output_size) {
  return affine_norm_backward_io(cmd.info.gnorm.elementwise_affine, inputs, input_size, outputs, output_size);
}

RmsNormIo rmsnorm_forward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                             int output_size) {
  RmsNormIo io;
  io.x = in_at(inputs, input_size, 0);
  io.scale = in_at(inputs, input_size, 1);
  io.y = in_at(outputs, output_size, 0);
  io.saved_inv_std = in_at(outputs, output_size, 1);
  return io;
}

RmsNormIo rmsnorm_backward_io(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                              int output_size) {
  RmsNormIo io;
  io.g = in_at(inputs, input_size, 0);
  io.x = in_at(inputs, input_size, 2);
  io.scale = in_at(inputs, input_size, 3);
  io.y = in_at(inputs, input_size, 4);
  io.saved_inv_std = in_at(inputs, input_size, 5);
  io.dx = in_at(outputs, output_size, 0);
  io.dscale = in_at(outputs, output_size, 1);
  return io;
}

}  // namespace norm

void register_norm(Registry& r) {
  using namespace norm;
  add(r, CCV_NNC_BATCH_NORM_FORWARD, bnorm_auto, bnorm_forward_bitmask, nullptr, bnorm_forward_enforce,
      validate_bnorm_forward, bnorm_forward_ref, bnorm_forward_opt, bnorm_opt_accepts);
  add(r, CCV_NNC_BATCH_NORM_BACKWARD, bnorm_auto, bnorm_backward_bitmask, nullptr, nullptr,
      validate_bnorm_backward, bnorm_backward_ref, bnorm_backward_opt, bnorm_opt_accepts);
  add(r, CCV_NNC_LAYER_NORM_FORWARD, lnorm_auto, lnorm_forward_bitmask, nullptr, nullptr,
      validate_lnorm_forward, lnorm_forward_ref, lnorm_forward_opt, lnorm_opt_accepts);
  add(r, CCV_NNC_LAYER_NORM_BACKWARD, lnorm_auto, lnorm_backward_bitmask, nullptr, nullptr,
      validate_lnorm_backward, lnorm_backward_ref, lnorm_backward_opt, lnorm_opt_accepts);
  add(r, CCV_NNC_GROUP_NORM_FORWARD, gnorm_auto, gnorm_forward_bitmask, nullptr, nullptr, validate_gnorm_forward,
      gnorm_forward_ref, gnorm_forward_opt, gnorm_opt_accepts);
  add(r, CCV_NNC_GROUP_NORM_BACKWARD, gnorm_auto, gnorm_backward_bitmask, nullptr, nullptr, validate_gnorm_backward,
      gnorm_backward_ref, gnorm_backward_opt, gnorm_opt_accepts);
  add(r, CCV_NNC_RMSNORM_FORWARD, rmsnorm_auto, rmsnorm_forward_bitmask, nullptr, nullptr, validate_rmsnorm_forward,
      rmsnorm_forward_ref, rmsnorm_forward_opt, rmsnorm_opt_accepts);
  add(r, CCV_NNC_RMSNORM_BACKWARD, rmsnorm_auto, rmsnorm_backward_bitmask, nullptr, nullptr,
      validate_rmsnorm_backward, rmsnorm_backward_ref, rmsnorm_backward_opt, rmsnorm_opt_accepts);
}

}  // namespace nnc
