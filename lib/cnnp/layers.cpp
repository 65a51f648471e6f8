// Layers: leaf models over the command families.
//
// Each constructor returns a Layer whose build adds the commands for its
// inputs' shapes. Parameters are declared in build (their shapes follow the
// input), slot 0 the weight and slot 1 the bias, initialised as PyTorch does
// by default: weights and biases of convolution and dense layers uniform in
// ±1/sqrt(fan_in); norms' scales 1 and biases 0.
#include "cnnp/layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "nnc/ccv_nnc_easy.h"

namespace nnc::cnnp {

ccv_nnc_cmd_t command(uint32_t id, const ccv_nnc_cmd_param_t& p) { return ccv_nnc_cmd(id, nullptr, p, 0); }
ccv_nnc_cmd_t command(uint32_t id) { return ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0); }

ccv_nnc_tensor_param_t with_dims(const ccv_nnc_tensor_param_t& x, const std::vector<int>& dims, int format) {
  ccv_nnc_tensor_param_t p = x;
  std::memset(p.dim, 0, sizeof(p.dim));
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  if (format >= 0) p.format = format;
  return p;
}

Model* finish(Layer* l, int is_trainable) {
  l->is_trainable = is_trainable;
  return l;
}

int dims_of(const ccv_nnc_tensor_param_t& p) {
  int n = 0;
  while (n < CCV_NNC_MAX_DIM_ALLOC && p.dim[n] > 0) n++;
  return n;
}

namespace {

// The channel axis and spatial axes of an image tensor, by its format.
struct ImageAxes {
  int n = 0, c = 0, h = 0, w = 0;  // h, w < 0: no such axis
  int rank = 0;
};

ImageAxes image_axes(const Model& m, const ccv_nnc_tensor_param_t& p) {
  ImageAxes a;
  a.rank = dims_of(p);
  NNC_CHECK(a.rank == 3 || a.rank == 4, "model %s takes an image ([N,] H, W, C or [N,] C, H, W), given %d dimensions", model_label(m).c_str(),
            a.rank);
  const int o = a.rank - 3;
  if (p.format == CCV_TENSOR_FORMAT_NCHW) {
    a.c = o, a.h = o + 1, a.w = o + 2;
  } else {
    NNC_CHECK(p.format == CCV_TENSOR_FORMAT_NHWC, "model %s takes NHWC or NCHW images", model_label(m).c_str());
    a.h = o, a.w = o + 1, a.c = o + 2;
  }
  return a;
}

// A one-input, one-output command.
Model* unary(const char* kind, const char* name, ccv_nnc_cmd_t cmd) {
  return new Layer(kind, name, 1, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

}  // namespace

Model* convolution(int groups, int filters, const int* kdim, const int* dilation, int no_bias, ccv_nnc_hint_t hint, int format,
                   int is_trainable, const char* name) {
  NNC_CHECK(kdim, "ccv_cnnp_convolution: no window size");
  NNC_CHECK(filters > 0 && kdim[0] > 0 && kdim[1] > 0, "ccv_cnnp_convolution: %d filters of %dx%d", filters, kdim[0], kdim[1]);
  const int g = groups > 0 ? groups : 1;
  NNC_CHECK(filters % g == 0, "ccv_cnnp_convolution: %d filters in %d groups", filters, g);
  const int kh = kdim[0], kw = kdim[1];
  const int dh = dilation ? dilation[0] : 0, dw = dilation ? dilation[1] : 0;
  auto l = new Layer("convolution", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const ImageAxes a = image_axes(self, x);
    const int c = x.dim[a.c];
    NNC_CHECK(c % g == 0, "model %s: %d input channels in %d groups", model_label(self).c_str(), c, g);
    const int wf = format ? format : x.format;
    ParamDecl w;
    w.info = wf == CCV_TENSOR_FORMAT_NCHW ? with_dims(x, {filters, c / g, kh, kw}, wf) : with_dims(x, {filters, kh, kw, c / g}, wf);
    const float bound = 1.0f / std::sqrt(static_cast<float>(c / g * kh * kw));
    w.init = Init::uniform(-bound, bound);
    std::vector<Sym> args = {in[0], b.parameter(&self, 0, w)};
    if (!no_bias) {
      ParamDecl bias;
      bias.info = with_dims(x, {filters}, wf);
      bias.init = Init::uniform(-bound, bound);
      bias.label = "bias";
      bias.selector = CCV_CNNP_PARAMETER_SELECT_BIAS;
      args.push_back(b.parameter(&self, 1, bias));
    }
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    p.size.dim[0] = kh, p.size.dim[1] = kw, p.size.dim[2] = c / g;
    p.convolution.count = filters;
    p.convolution.groups = g;
    p.convolution.dilation[0] = dh, p.convolution.dilation[1] = dw;
    out = b.apply(command(CCV_NNC_CONVOLUTION_FORWARD, p), hint, args, 1);
  });
  return finish(l, is_trainable);
}

Model* dense(int count, int no_bias, int flags, int is_trainable, const char* name) {
  NNC_CHECK(count > 0, "ccv_cnnp_dense: %d outputs", count);
  auto l = new Layer("dense", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    NNC_CHECK(r >= 1, "model %s: the input has no shape", model_label(self).c_str());
    const int k = x.dim[r - 1];
    ParamDecl w;
    w.info = with_dims(x, {count, k});
    const float bound = 1.0f / std::sqrt(static_cast<float>(k));
    w.init = Init::uniform(-bound, bound);
    std::vector<Sym> args = {in[0], b.parameter(&self, 0, w)};
    if (!no_bias) {
      ParamDecl bias;
      bias.info = with_dims(x, {count});
      bias.init = Init::uniform(-bound, bound);
      bias.label = "bias";
      bias.selector = CCV_CNNP_PARAMETER_SELECT_BIAS;
      args.push_back(b.parameter(&self, 1, bias));
    }
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    p.blas.a[0] = 1, p.blas.a[1] = 1;
    p.blas.transpose_b[0] = 0, p.blas.transpose_b[1] = 1;
    p.blas.flags = flags;
    out = b.apply(command(CCV_NNC_GEMM_FORWARD, p), ccv_nnc_no_hint, args, 1);
  });
  return finish(l, is_trainable);
}

static Model* pool(const char* kind, uint32_t id, const int* kdim, ccv_nnc_hint_t hint, const char* name) {
  NNC_CHECK(kdim, "ccv_cnnp_%s: no window size", kind);
  const int kh = kdim[0], kw = kdim[1];
  return new Layer(kind, name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const ImageAxes a = image_axes(self, x);
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    // A zero window is the whole image (global pooling).
    p.size.dim[0] = kh > 0 ? kh : x.dim[a.h];
    p.size.dim[1] = kw > 0 ? kw : x.dim[a.w];
    p.size.dim[2] = 1;
    out = b.apply(command(id, p), hint, in, 1);
  });
}

Model* max_pool(const int* kdim, ccv_nnc_hint_t hint, const char* name) { return pool("max_pool", CCV_NNC_MAX_POOL_FORWARD, kdim, hint, name); }
Model* average_pool(const int* kdim, ccv_nnc_hint_t hint, const char* name) {
  return pool("average_pool", CCV_NNC_AVERAGE_POOL_FORWARD, kdim, hint, name);
}

Model* flatten(const char* name) {
  return new Layer("flatten", name, 1, [](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    const int n = r > 1 ? x.dim[0] : 1;
    const int rest = static_cast<int>(ccv_nnc_tensor_count(x)) / n;
    out = {b.reshape(in[0], with_dims(x, {n, rest}))};
  });
}

Model* relu(const char* name) { return unary("relu", name, command(CCV_NNC_RELU_FORWARD)); }
Model* sigmoid(const char* name) { return unary("sigmoid", name, command(CCV_NNC_SIGMOID_FORWARD)); }
Model* tanh_layer(const char* name) { return unary("tanh", name, command(CCV_NNC_TANH_FORWARD)); }
Model* swish(const char* name) { return unary("swish", name, command(CCV_NNC_SWISH_FORWARD)); }
Model* softmax(const char* name) { return unary("softmax", name, command(CCV_NNC_SOFTMAX_FORWARD)); }
Model* sqrt_layer(const char* name) { return unary("sqrt", name, command(CCV_NNC_EWSQRT_FORWARD)); }
Model* gelu(int tanh, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.gelu.tanh = tanh;
  return unary("gelu", name, command(CCV_NNC_GELU_FORWARD, p));
}
Model* leaky_relu(float slope, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.leaky_relu.negative_slope = slope;
  return unary("leaky_relu", name, command(CCV_NNC_LEAKY_RELU_FORWARD, p));
}
Model* scalar_mul(float a, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.blas.a[0] = a;
  return unary("scalar_mul", name, command(CCV_NNC_SCALAR_MUL_FORWARD, p));
}
Model* clamp(float min, float max, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.clamp.min = min, p.clamp.max = max;
  return unary("clamp", name, command(CCV_NNC_CLAMP_FORWARD, p));
}

Model* identity(const char* name) {
  return new Layer("identity", name, 1, [](const Layer&, Build&, const std::vector<Sym>& in, std::vector<Sym>& out) { out = in; });
}

Model* add(float p, float q, const char* name) {
  ccv_nnc_cmd_param_t c = ccv_nnc_cmd_auto;
  c.blas.a[0] = p, c.blas.a[1] = q;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_ADD_FORWARD, c);
  return new Layer("add", name, 2, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* mul(float p, const char* name) {
  ccv_nnc_cmd_param_t c = ccv_nnc_cmd_auto;
  c.blas.a[0] = p;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_MUL_FORWARD, c);
  return new Layer("mul", name, 2, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* sum(const char* name) {
  return new Layer("sum", name, -1, [](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    NNC_CHECK(!in.empty(), "model %s: nothing to sum", model_label(self).c_str());
    out = b.apply(command(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, in, 1);
  });
}

Model* reshape(int format, const int* dim, const int* ofs, const int* stride, const char* name) {
  NNC_CHECK(dim, "ccv_cnnp_reshape: no shape");
  std::vector<int> d(dim, dim + CCV_NNC_MAX_DIM_ALLOC), o, s;
  if (ofs) o.assign(ofs, ofs + CCV_NNC_MAX_DIM_ALLOC);
  if (stride) s.assign(stride, stride + CCV_NNC_MAX_DIM_ALLOC);
  return new Layer("reshape", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    auto x = b.params(in[0]);
    ccv_nnc_tensor_param_t p = x;
    std::memcpy(p.dim, d.data(), sizeof(p.dim));
    if (format) p.format = format;
    const bool plain = (o.empty() || std::all_of(o.begin(), o.end(), [](int v) { return v == 0; })) &&
                       (s.empty() || std::all_of(s.begin(), s.end(), [](int v) { return v == 0; }));
    if (plain) {
      out = {b.reshape(in[0], p)};
      return;
    }
    Sym a = ccv_nnc_tensor_symbol_alias_new(b.graph, in[0], o.empty() ? ccv_nnc_no_ofs : o.data(), s.data(), p, nullptr);
    NNC_CHECK(a.d >= 0, "model %s: %s", model_label(self).c_str(), error_message().c_str());
    out = {a};
  });
}

Model* transpose(int axis_a, int axis_b, const char* name) {
  ccv_nnc_cmd_param_t c = ccv_nnc_cmd_auto;
  c.transpose.axis[0] = axis_a, c.transpose.axis[1] = axis_b;
  return unary("transpose", name, command(CCV_NNC_TRANSPOSE_FORWARD, c));
}

Model* dropout(float p, int entirety, const char* name) {
  NNC_CHECK(p >= 0 && p < 1, "ccv_cnnp_dropout: p = %g is not in [0, 1)", static_cast<double>(p));
  ccv_nnc_cmd_param_t c = ccv_nnc_cmd_auto;
  c.dropout.p = p, c.dropout.entirety = entirety;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_DROPOUT_FORWARD, c);
  return new Layer("dropout", name, 1, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    // At test time dropout is the identity.
    if (b.is_test) {
      out = in;
      return;
    }
    auto r = b.apply(cmd, ccv_nnc_no_hint, in, 2);
    out = {r[0]};
  });
}

}  // namespace nnc::cnnp
