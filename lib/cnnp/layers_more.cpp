// Layers, continued: normalisation, shape and view layers, element-wise and
// reduction layers, embedding and matmul, the constant-like layers
// (parameter, scalar, variable, move), and the layers whose command family
// has no kernel yet. The models over a caller's command, graph or debug
// function are in layers_exec.cpp.
//
// Parameter shapes are the ones the commands and PyTorch use: [C] for batch
// and group norm, the normalised extents alone for layer and RMS norm
// (PyTorch's normalized_shape), [vocab, embed] for an embedding.
//
// Views (chunk, permute) are aliases of the input's storage. A symbolic
// graph refuses an alias of an alias, so a view of a view is made on the
// first one's base: chunks and permutations only move and reorder whole axes,
// so each new axis keeps one (offset, stride) pair of the base and the
// composed view is always expressible.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "cnnp/layers.hpp"
#include "core/error.hpp"
#include "nnc/ccv_nnc_easy.h"

namespace nnc::cnnp {

namespace {

// The parameters with nothing past the last dimension: a 3-d NHWC CPU
// tensor's info carries the dense-matrix row step in dim[4] (the toll-free
// bridge), which must not leak into shapes that are compared as a whole.
ccv_nnc_tensor_param_t clean(const ccv_nnc_tensor_param_t& x) {
  ccv_nnc_tensor_param_t p = x;
  for (int i = dims_of(x); i < CCV_NNC_MAX_DIM_ALLOC; i++) p.dim[i] = 0;
  return p;
}

std::vector<int> dims_vec(const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + dims_of(p)); }

// A view of `s` with axis i of the view being axis from[i] of s, moved by add[i] elements.
Sym view_of(const Model& m, Build& b, Sym s, const std::vector<int>& dims, const std::vector<int>& from, const std::vector<int>& add) {
  const Build::Place p = b.place(s);
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {0};
  for (size_t i = 0; i < dims.size(); i++) {
    ofs[i] = p.ofs[from[i]] + add[i];
    stride[i] = p.stride[from[i]];
  }
  const auto info = with_dims(b.params(s), dims);
  Sym a = ccv_nnc_tensor_symbol_alias_new(b.graph, p.base, ofs, stride, info, nullptr);
  NNC_CHECK(a.d >= 0, "model %s: %s", model_label(m).c_str(), error_message().c_str());
  return a;
}

ParamDecl decl(const ccv_nnc_tensor_param_t& info, Init init, const char* label, int selector, bool trainable = true) {
  ParamDecl d;
  d.info = info;
  d.init = init;
  d.label = label;
  d.selector = selector;
  d.trainable = trainable;
  return d;
}

void check_axis(const Model& m, int axis, int rank) {
  NNC_CHECK(axis >= 0 && axis < rank, "model %s: axis %d is outside its %d-dimensional input", model_label(m).c_str(), axis, rank);
}

std::vector<int> axis_list(const char* what, const int* axis, int count) {
  NNC_CHECK(count > 0 && count <= CCV_NNC_MAX_DIM_ALLOC, "%s: %d axes (1 to %d)", what, count, CCV_NNC_MAX_DIM_ALLOC);
  NNC_CHECK(axis, "%s: no axes", what);
  std::vector<int> a(axis, axis + count);
  for (int i = 0; i < count; i++) {
    NNC_CHECK(a[i] >= 0, "%s: axis %d is negative", what, a[i]);
    for (int j = 0; j < i; j++) NNC_CHECK(a[i] != a[j], "%s: axis %d given twice", what, a[i]);
  }
  return a;
}

void check_axes(const Model& m, const std::vector<int>& axes, int rank) {
  for (int a : axes) check_axis(m, a, rank);
}

// The extents of x on `axes` alone (in order), as a parameter shape: PyTorch's
// normalized_shape for layer / RMS norm, [C] for group norm. The norm
// commands take it for x's shape with the other axes of extent 1.
ccv_nnc_tensor_param_t extents_on(const ccv_nnc_tensor_param_t& x, std::vector<int> axes) {
  std::sort(axes.begin(), axes.end());
  std::vector<int> dims;
  for (int a : axes) dims.push_back(x.dim[a]);
  return with_dims(x, dims);
}

Model* binary(const char* kind, const char* name, ccv_nnc_cmd_t cmd) {
  return new Layer(kind, name, 2, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* reduce(const char* kind, uint32_t id, const int* axis, int axis_count, const char* name) {
  const std::string what = std::string("ccv_cnnp_") + kind;
  const auto axes = axis_list(what.c_str(), axis, axis_count);
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  for (size_t i = 0; i < axes.size(); i++) p.reduce.axis[i] = axes[i];
  p.reduce.count = axis_count;
  const ccv_nnc_cmd_t cmd = command(id, p);
  return new Layer(kind, name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    check_axes(self, axes, dims_of(b.params(in[0])));
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* arg(const char* kind, uint32_t id, int axis, const char* name) {
  NNC_CHECK(axis >= 0, "ccv_cnnp_%s: axis %d is negative", kind, axis);
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.reduce.axis[0] = axis;
  p.reduce.count = 1;
  const ccv_nnc_cmd_t cmd = command(id, p);
  return new Layer(kind, name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    check_axis(self, axis, dims_of(b.params(in[0])));
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

}  // namespace

// ---------------------------------------------------------------------------
// Normalisation

Model* batch_norm(float momentum, float epsilon, int is_trainable, const char* name) {
  NNC_CHECK(epsilon >= 0, "ccv_cnnp_batch_norm: epsilon %g is negative", static_cast<double>(epsilon));
  NNC_CHECK(momentum >= 0 && momentum <= 1, "ccv_cnnp_batch_norm: momentum %g is not in [0, 1]", static_cast<double>(momentum));
  auto l = new Layer("batch_norm", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    NNC_CHECK(r >= 2, "model %s: batch norm needs a batch axis and a channel axis, given %d dimensions", model_label(self).c_str(), r);
    // The channel axis: C of NCHW ([N,] C, H, W), the last axis otherwise.
    const int c = x.format == CCV_TENSOR_FORMAT_NCHW && r >= 3 ? r - 3 : r - 1;
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    for (int i = 0; i < r; i++)
      if (i != c) p.bnorm.axis[p.bnorm.count++] = i;
    p.bnorm.epsilon = epsilon;
    p.bnorm.momentum = momentum;
    p.bnorm.is_test = b.is_test ? 1 : 0;
    const auto per_channel = with_dims(x, {x.dim[c]});
    const Sym scale = b.parameter(&self, 0, decl(per_channel, Init::constant(1), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT));
    const Sym bias = b.parameter(&self, 1, decl(per_channel, Init::zeros(), "bias", CCV_CNNP_PARAMETER_SELECT_BIAS));
    // The running statistics persist with the parameters but are never
    // trained, and neither a weight nor a bias: only ALL_PARAMETERS selects them.
    const Sym mean = b.parameter(&self, 2, decl(per_channel, Init::zeros(), "mean", -1, false));
    const Sym var = b.parameter(&self, 3, decl(per_channel, Init::constant(1), "var", -1, false));
    const Sym y = b.tensor(clean(x));
    const std::vector<Sym> args = {in[0], scale, bias, mean, var};
    if (b.is_test) {
      b.exec(command(CCV_NNC_BATCH_NORM_FORWARD, p), ccv_nnc_no_hint, args, {y});
    } else {
      const Sym mean_out = b.parameter_update(&self, 2), var_out = b.parameter_update(&self, 3);
      b.exec(command(CCV_NNC_BATCH_NORM_FORWARD, p), ccv_nnc_no_hint, args, {y, mean_out, var_out, b.tensor_auto(), b.tensor_auto()});
    }
    out = {y};
  });
  return finish(l, is_trainable);
}

Model* layer_norm(float epsilon, const int* axis, int axis_count, int elementwise_affine, int is_trainable, const char* name) {
  const auto axes = axis_list("ccv_cnnp_layer_norm", axis, axis_count);
  NNC_CHECK(epsilon >= 0, "ccv_cnnp_layer_norm: epsilon %g is negative", static_cast<double>(epsilon));
  auto l = new Layer("layer_norm", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    check_axes(self, axes, dims_of(x));
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    for (size_t i = 0; i < axes.size(); i++) p.lnorm.axis[i] = axes[i];
    p.lnorm.count = static_cast<int>(axes.size());
    p.lnorm.epsilon = epsilon;
    p.lnorm.elementwise_affine = elementwise_affine ? 1 : 0;
    std::vector<Sym> args = {in[0]};
    if (elementwise_affine) {
      const auto shape = extents_on(x, axes);
      args.push_back(b.parameter(&self, 0, decl(shape, Init::constant(1), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT)));
      args.push_back(b.parameter(&self, 1, decl(shape, Init::zeros(), "bias", CCV_CNNP_PARAMETER_SELECT_BIAS)));
    }
    out = {b.apply(command(CCV_NNC_LAYER_NORM_FORWARD, p), ccv_nnc_no_hint, args, 3)[0]};
  });
  return finish(l, is_trainable);
}

Model* group_norm(int group_axis, int groups, float epsilon, const int* reduce_axis, int axis_count, int elementwise_affine, int is_trainable,
                  const char* name) {
  NNC_CHECK(groups > 0, "ccv_cnnp_group_norm: %d groups", groups);
  NNC_CHECK(group_axis >= 0, "ccv_cnnp_group_norm: group axis %d is negative", group_axis);
  std::vector<int> axes;
  if (axis_count > 0) axes = axis_list("ccv_cnnp_group_norm", reduce_axis, axis_count);
  for (int a : axes) NNC_CHECK(a != group_axis, "ccv_cnnp_group_norm: the group axis %d is also a reduce axis", a);
  auto l = new Layer("group_norm", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    check_axis(self, group_axis, r);
    check_axes(self, axes, r);
    NNC_CHECK(x.dim[group_axis] % groups == 0, "model %s: %d channels do not split into %d groups", model_label(self).c_str(), x.dim[group_axis],
              groups);
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    p.gnorm.group_axis = group_axis;
    for (size_t i = 0; i < axes.size(); i++) p.gnorm.reduce_axis[i] = axes[i];
    p.gnorm.reduce_count = static_cast<int>(axes.size());
    p.gnorm.groups = groups;
    p.gnorm.epsilon = epsilon;
    p.gnorm.elementwise_affine = elementwise_affine ? 1 : 0;
    std::vector<Sym> args = {in[0]};
    if (elementwise_affine) {
      const auto shape = extents_on(x, {group_axis});
      args.push_back(b.parameter(&self, 0, decl(shape, Init::constant(1), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT)));
      args.push_back(b.parameter(&self, 1, decl(shape, Init::zeros(), "bias", CCV_CNNP_PARAMETER_SELECT_BIAS)));
    }
    out = {b.apply(command(CCV_NNC_GROUP_NORM_FORWARD, p), ccv_nnc_no_hint, args, 3)[0]};
  });
  return finish(l, is_trainable);
}

Model* rmsnorm(float epsilon, const int* axis, int axis_count, int is_trainable, const char* name) {
  const auto axes = axis_list("ccv_cnnp_rmsnorm", axis, axis_count);
  auto l = new Layer("rmsnorm", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    check_axes(self, axes, dims_of(x));
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    for (size_t i = 0; i < axes.size(); i++) p.rmsnorm.axis[i] = axes[i];
    p.rmsnorm.count = static_cast<int>(axes.size());
    p.rmsnorm.epsilon = epsilon;
    const Sym scale =
        b.parameter(&self, 0, decl(extents_on(x, axes), Init::constant(1), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT));
    out = {b.apply(command(CCV_NNC_RMSNORM_FORWARD, p), ccv_nnc_no_hint, {in[0], scale}, 2)[0]};
  });
  return finish(l, is_trainable);
}

// ---------------------------------------------------------------------------
// Shapes and views

Model* concat(int axis, const char* name) {
  NNC_CHECK(axis >= 0, "ccv_cnnp_concat: axis %d is negative", axis);
  return new Layer("concat", name, -1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    NNC_CHECK(!in.empty(), "model %s: nothing to concatenate", model_label(self).c_str());
    const auto x0 = b.params(in[0]);
    const int r = dims_of(x0);
    check_axis(self, axis, r);
    auto dims = dims_vec(x0);
    dims[axis] = 0;
    for (size_t k = 0; k < in.size(); k++) {
      const auto x = b.params(in[k]);
      NNC_CHECK(dims_of(x) == r && x.datatype == x0.datatype, "model %s: input %zu has another rank or data type than input 0",
                model_label(self).c_str(), k);
      for (int i = 0; i < r; i++)
        NNC_CHECK(i == axis || x.dim[i] == x0.dim[i], "model %s: input %zu has extent %d on axis %d, input 0 has %d", model_label(self).c_str(), k,
                  x.dim[i], i, x0.dim[i]);
      dims[axis] += x.dim[axis];
    }
    // Each input is copied into its part of one tensor.
    const Sym y = b.tensor(with_dims(x0, dims));
    const Build::Place py = b.place(y);  // y's own strides, packed
    int at = 0;
    for (size_t k = 0; k < in.size(); k++) {
      const auto x = b.params(in[k]);
      int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0};
      ofs[axis] = at;
      at += x.dim[axis];
      const Sym part = ccv_nnc_tensor_symbol_alias_new(b.graph, y, ofs, py.stride, with_dims(x0, dims_vec(x)), nullptr);
      NNC_CHECK(part.d >= 0, "model %s: %s", model_label(self).c_str(), error_message().c_str());
      b.exec(command(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, {in[k]}, {part});
    }
    out = {y};
  });
}

Model* chunk(int n, int axis, const char* name) {
  NNC_CHECK(n > 0, "ccv_cnnp_chunk: %d pieces", n);
  NNC_CHECK(axis >= 0, "ccv_cnnp_chunk: axis %d is negative", axis);
  return new Layer(
      "chunk", name, 1,
      [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
        const auto x = b.params(in[0]);
        const int r = dims_of(x);
        check_axis(self, axis, r);
        NNC_CHECK(x.dim[axis] % n == 0, "model %s: extent %d of axis %d does not divide into %d pieces", model_label(self).c_str(), x.dim[axis],
                  axis, n);
        auto dims = dims_vec(x);
        dims[axis] /= n;
        std::vector<int> from(static_cast<size_t>(r)), add(static_cast<size_t>(r), 0);
        for (int i = 0; i < r; i++) from[i] = i;
        out.clear();
        for (int k = 0; k < n; k++) {
          add[axis] = k * dims[axis];
          out.push_back(view_of(self, b, in[0], dims, from, add));
        }
      },
      n);
}

Model* extract(int index, const char* name) {
  NNC_CHECK(index >= 0, "ccv_cnnp_extract: index %d is negative", index);
  return new Layer("extract", name, -1, [=](const Layer& self, Build&, const std::vector<Sym>& in, std::vector<Sym>& out) {
    NNC_CHECK(index < static_cast<int>(in.size()), "model %s: index %d of %zu inputs", model_label(self).c_str(), index, in.size());
    out = {in[static_cast<size_t>(index)]};
  });
}

Model* permute(const int* index, const char* name) {
  NNC_CHECK(index, "ccv_cnnp_permute: no index");
  std::vector<int> order(index, index + CCV_NNC_MAX_DIM_ALLOC);
  return new Layer("permute", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    std::vector<int> from(order.begin(), order.begin() + r), seen(static_cast<size_t>(r), 0), dims(static_cast<size_t>(r));
    for (int i = 0; i < r; i++) {
      NNC_CHECK(from[i] >= 0 && from[i] < r && !seen[from[i]]++, "model %s: index[%d] = %d does not permute %d axes", model_label(self).c_str(), i,
                from[i], r);
      dims[i] = x.dim[from[i]];
    }
    out = {view_of(self, b, in[0], dims, from, std::vector<int>(static_cast<size_t>(r), 0))};
  });
}

Model* contiguous(const char* name) {
  return new Layer("contiguous", name, 1, [](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    if (b.is_packed(in[0])) {
      out = in;
      return;
    }
    const Sym y = b.tensor(clean(b.params(in[0])));
    auto e = b.exec(command(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, {in[0]}, {y});
    // The copy is the point: simplification must not fold it away.
    ccv_nnc_graph_exec_symbol_set_flags(b.graph, e, CCV_NNC_GRAPH_EXEC_DISABLE_OPT);
    out = {y};
  });
}

Model* pad(int type, const int* begin, const int* end, const char* name) {
  NNC_CHECK(begin && end, "ccv_cnnp_pad: no begin or end");
  NNC_CHECK(type == CCV_NNC_PAD_ZERO || type == CCV_NNC_PAD_REPLICATE || type == CCV_NNC_PAD_REFLECT, "ccv_cnnp_pad: unknown type %d", type);
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC; i++) {
    NNC_CHECK(begin[i] >= 0 && end[i] >= 0, "ccv_cnnp_pad: negative padding on axis %d", i);
    p.size.dim[i] = begin[i];
    p.pad.end[i] = end[i];
  }
  p.pad.type = type;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_PAD_FORWARD, p);
  return new Layer("pad", name, 1, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* upsample(int type, float width_scale, float height_scale, int align_corners, const char* name) {
  NNC_CHECK(type == CCV_NNC_UPSAMPLE_NEAREST || type == CCV_NNC_UPSAMPLE_BILINEAR, "ccv_cnnp_upsample: unknown type %d", type);
  NNC_CHECK(width_scale > 0 && height_scale > 0, "ccv_cnnp_upsample: scales %g x %g", static_cast<double>(width_scale),
            static_cast<double>(height_scale));
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.upsample.type = type;
  p.upsample.width_scale = width_scale;
  p.upsample.height_scale = height_scale;
  p.upsample.align_corners = align_corners;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_UPSAMPLE_FORWARD, p);
  return new Layer("upsample", name, 1, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

// ---------------------------------------------------------------------------
// Element-wise and reductions

Model* cmul(const char* name) { return binary("cmul", name, command(CCV_NNC_CMUL_FORWARD)); }
Model* min_layer(const char* name) { return binary("min", name, command(CCV_NNC_MIN_FORWARD)); }
Model* max_layer(const char* name) { return binary("max", name, command(CCV_NNC_MAX_FORWARD)); }

Model* div(int reciprocal, const char* name) {
  if (!reciprocal) return binary("div", name, command(CCV_NNC_EWDIV_FORWARD));
  return new Layer("div", name, 1, [](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    // EWDIV with no numerator is 1 / b.
    out = b.apply(command(CCV_NNC_EWDIV_FORWARD), ccv_nnc_no_hint, {Sym{CCV_NNC_NO_TENSOR_SYMBOL, nullptr}, in[0]}, 1);
  });
}

Model* reduce_sum(const int* axis, int count, const char* name) { return reduce("reduce_sum", CCV_NNC_REDUCE_SUM_FORWARD, axis, count, name); }
Model* reduce_mean(const int* axis, int count, const char* name) { return reduce("reduce_mean", CCV_NNC_REDUCE_MEAN_FORWARD, axis, count, name); }
Model* reduce_max(const int* axis, int count, const char* name) { return reduce("reduce_max", CCV_NNC_REDUCE_MAX_FORWARD, axis, count, name); }
Model* reduce_min(const int* axis, int count, const char* name) { return reduce("reduce_min", CCV_NNC_REDUCE_MIN_FORWARD, axis, count, name); }
Model* reduce_norm2(const int* axis, int count, const char* name) {
  return reduce("reduce_norm2", CCV_NNC_REDUCE_NORM2_FORWARD, axis, count, name);
}
Model* argmax(int axis, const char* name) { return arg("argmax", CCV_NNC_ARGMAX_FORWARD, axis, name); }
Model* argmin(int axis, const char* name) { return arg("argmin", CCV_NNC_ARGMIN_FORWARD, axis, name); }

Model* masked_fill(float eq, float fill, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.blas.a[0] = eq, p.blas.a[1] = fill;
  return binary("masked_fill", name, command(CCV_NNC_MASKED_FILL_FORWARD, p));
}

Model* index_select(const char* name) { return binary("index_select", name, command(CCV_NNC_INDEX_SELECT_FORWARD)); }

Model* embedding(int datatype, int vocab_size, int embed_size, int is_trainable, const char* name) {
  NNC_CHECK(vocab_size > 0 && embed_size > 0, "ccv_cnnp_embedding: a %d x %d vocabulary", vocab_size, embed_size);
  NNC_CHECK(datatype == CCV_32F || datatype == CCV_64F || datatype == CCV_16F || datatype == CCV_16BF,
            "ccv_cnnp_embedding: the vocabulary's data type 0x%x is not a floating-point one", datatype);
  auto l = new Layer("embedding", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto idx = b.params(in[0]);
    ccv_nnc_tensor_param_t vp = with_dims(idx, {vocab_size, embed_size});
    vp.datatype = datatype;
    vp.format = CCV_TENSOR_FORMAT_NHWC;
    // N(0, 1), as PyTorch's nn.Embedding.
    const Sym vocab = b.parameter(&self, 0, decl(vp, Init::normal(0, 1), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT));
    const int n = static_cast<int>(ccv_nnc_tensor_count(idx));
    const int r = dims_of(idx);
    if (r == 1) {
      out = b.apply(command(CCV_NNC_INDEX_SELECT_FORWARD), ccv_nnc_no_hint, {vocab, in[0]}, 1);
      return;
    }
    // Indices of any shape give one row each, shaped [indices..., embed]: the
    // rows are written into a flat view of that tensor, which stays the base.
    auto dims = dims_vec(idx);
    dims.push_back(embed_size);
    const Sym y = b.tensor(with_dims(vp, dims));
    b.exec(command(CCV_NNC_INDEX_SELECT_FORWARD), ccv_nnc_no_hint, {vocab, b.reshape(in[0], with_dims(idx, {n}))},
           {b.reshape(y, with_dims(vp, {n, embed_size}))});
    out = {y};
  });
  return finish(l, is_trainable);
}

Model* matmul(const int* transpose_a, const int* transpose_b, int flags, const char* name) {
  ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
  p.blas.a[0] = 1, p.blas.a[1] = 1;
  if (transpose_a) p.blas.transpose_a[0] = transpose_a[0], p.blas.transpose_a[1] = transpose_a[1];
  if (transpose_b) p.blas.transpose_b[0] = transpose_b[0], p.blas.transpose_b[1] = transpose_b[1];
  p.blas.flags = flags;
  const ccv_nnc_cmd_t cmd = command(CCV_NNC_GEMM_FORWARD, p);
  return new Layer("matmul", name, 2, [cmd](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    out = b.apply(cmd, ccv_nnc_no_hint, in, 1);
  });
}

Model* datatype_conversion(int datatype, int ref_to_last, const char* name) {
  return new Layer("datatype_conversion", name, -1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const size_t want = ref_to_last ? 2 : 1;
    NNC_CHECK(in.size() == want, "model %s takes %zu input%s, given %zu", model_label(self).c_str(), want, want == 1 ? "" : "s", in.size());
    auto p = b.params(in[0]);
    p.datatype = ref_to_last ? b.params(in[1]).datatype : datatype;
    const Sym y = b.tensor(p);
    b.exec(command(CCV_NNC_DATATYPE_CONVERSION_FORWARD), ccv_nnc_no_hint, {in[0]}, {y});
    out = {y};
  });
}

// ---------------------------------------------------------------------------
// Constants, variables, moves

Model* parameter(const ccv_nnc_tensor_param_t& params, float init_bound, int is_trainable, const char* name) {
  NNC_CHECK(ccv_nnc_tensor_count(params) > 0, "ccv_cnnp_parameter: the parameter has no shape");
  const Init init = init_bound > 0 ? Init::uniform(-init_bound, init_bound) : Init::zeros();
  auto l = new Layer("parameter", name, 0, [=](const Layer& self, Build& b, const std::vector<Sym>&, std::vector<Sym>& out) {
    out = {b.parameter(&self, 0, decl(clean(params), init, "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT))};
  });
  return finish(l, is_trainable);
}

Model* scalar(int type, int format, int datatype, float value, const char* name) {
  ccv_nnc_tensor_param_t p{};
  p.type = type ? type : CCV_TENSOR_CPU_MEMORY;
  p.format = format ? format : CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype ? datatype : CCV_32F;
  p.dim[0] = 1;
  ccv_nnc_cmd_param_t c = ccv_nnc_cmd_auto;
  c.blas.a[0] = value;
  const ccv_nnc_cmd_t set = command(CCV_NNC_SET_FORWARD, c);
  return new Layer("scalar", name, 0, [=](const Layer&, Build& b, const std::vector<Sym>&, std::vector<Sym>& out) {
    const Sym s = b.tensor(p);
    b.exec(set, ccv_nnc_no_hint, {}, {s});
    out = {s};
  });
}

Model* variable(const ccv_nnc_tensor_param_t& params, const char* name) {
  NNC_CHECK(ccv_nnc_tensor_count(params) > 0, "ccv_cnnp_variable: the variable has no shape");
  return new Layer("variable", name, 0, [=](const Layer&, Build& b, const std::vector<Sym>&, std::vector<Sym>& out) { out = {b.tensor(clean(params))}; });
}

Model* move(const char* name) {
  return new Layer("move", name, 2, [](const Layer&, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    b.exec(command(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, {in[0]}, {in[1]});
    out = {in[1]};
  });
}

// ---------------------------------------------------------------------------
// Transposed convolution and attention.

Model* convolution_transpose(int groups, int filters, const int* kdim, const int* dilation, int output_padding, int no_bias, ccv_nnc_hint_t hint,
                             int format, int is_trainable, const char* name) {
  NNC_CHECK(kdim, "ccv_cnnp_convolution_transpose: no window size");
  NNC_CHECK(filters > 0 && kdim[0] > 0 && kdim[1] > 0, "ccv_cnnp_convolution_transpose: %d filters of %dx%d", filters, kdim[0], kdim[1]);
  const int g = groups > 0 ? groups : 1;
  NNC_CHECK(filters % g == 0, "ccv_cnnp_convolution_transpose: %d filters in %d groups", filters, g);
  const int kh = kdim[0], kw = kdim[1];
  const int dh = dilation ? dilation[0] : 0, dw = dilation ? dilation[1] : 0;
  auto l = new Layer("convolution_transpose", name, 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    NNC_CHECK(r == 3 || r == 4, "model %s takes an image ([N,] H, W, C or [N,] C, H, W), given %d dimensions", model_label(self).c_str(), r);
    const bool nchw = x.format == CCV_TENSOR_FORMAT_NCHW;
    const int o = r - 3;
    const int ca = nchw ? o : o + 2, ha = nchw ? o + 1 : o, wa = nchw ? o + 2 : o + 1;
    const int c = x.dim[ca];
    const int wf = format ? format : x.format;
    // PyTorch's layout: [C_in, filters / groups, kh, kw] (NHWC: channels last).
    const auto wp = wf == CCV_TENSOR_FORMAT_NCHW ? with_dims(x, {c, filters / g, kh, kw}) : with_dims(x, {c, kh, kw, filters / g});
    const float bound = 1.0f / std::sqrt(static_cast<float>(filters / g * kh * kw));
    auto wd = decl(wp, Init::uniform(-bound, bound), "weight", CCV_CNNP_PARAMETER_SELECT_WEIGHT);
    wd.info.format = wf;
    std::vector<Sym> args = {in[0], b.parameter(&self, 0, wd)};
    if (!no_bias) args.push_back(b.parameter(&self, 1, decl(with_dims(x, {filters}), Init::uniform(-bound, bound), "bias", CCV_CNNP_PARAMETER_SELECT_BIAS)));
    // Output extent: (in - 1) * stride - pads + dilation * (k - 1) + 1 + output_padding.
    auto extent = [&](int i, int axis, int k, int d) {
      const int s = hint.stride.dim[i] > 0 ? hint.stride.dim[i] : 1;
      return (x.dim[axis] - 1) * s - hint.border.begin[i] - hint.border.end[i] + (d > 0 ? d : 1) * (k - 1) + 1 + output_padding;
    };
    auto dims = dims_vec(x);
    dims[ha] = extent(0, ha, kh, dh);
    dims[wa] = extent(1, wa, kw, dw);
    dims[ca] = filters;
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    p.size.dim[0] = kh, p.size.dim[1] = kw, p.size.dim[2] = c;
    p.convolution_transpose.count = filters;
    p.convolution_transpose.groups = g;
    p.convolution_transpose.dilation[0] = dh, p.convolution_transpose.dilation[1] = dw;
    p.convolution_transpose.output_padding = output_padding;
    const Sym y = b.tensor(with_dims(x, dims));
    b.exec(command(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, p), hint, args, {y});
    out = {y};
  });
  return finish(l, is_trainable);
}

Model* scaled_dot_product_attention(float scale, int is_causal, int has_attn_mask, int flags, int fused_unify_head_weights, int no_bias,
                                    int is_trainable, const char* name) {
  auto l = new Layer("scaled_dot_product_attention", name, has_attn_mask ? 4 : 3,
                     [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
                       const auto q = b.params(in[0]), v = b.params(in[2]);
                       const int r = dims_of(q);
                       NNC_CHECK((r == 3 || r == 4) && dims_of(v) == r, "model %s takes q, k, v of [N, S, H, D] or [N, S, D], given %d dimensions",
                                 model_label(self).c_str(), r);
                       ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
                       p.scaled_dot_product_attention.scale = scale;
                       p.scaled_dot_product_attention.is_causal = is_causal;
                       p.scaled_dot_product_attention.flags = flags;
                       std::vector<Sym> args(in.begin(), in.end());
                       if (!has_attn_mask) args.push_back({CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
                       auto dims = dims_vec(q);
                       dims[r - 1] = v.dim[r - 1];
                       if (fused_unify_head_weights) {
                         const int hv = r == 4 ? q.dim[2] * v.dim[3] : v.dim[2];
                         const float bound = 1.0f / std::sqrt(static_cast<float>(hv));
                         args.push_back(b.parameter(&self, 0, decl(with_dims(q, {hv, hv}), Init::uniform(-bound, bound), "weight",
                                                                   CCV_CNNP_PARAMETER_SELECT_WEIGHT)));
                         if (!no_bias)
                           args.push_back(b.parameter(
                               &self, 1, decl(with_dims(q, {hv}), Init::uniform(-bound, bound), "bias", CCV_CNNP_PARAMETER_SELECT_BIAS)));
                         dims = {q.dim[0], q.dim[1], hv};
                       }
                       const Sym y = b.tensor(with_dims(q, dims));
                       // The saved log-sum-exp (libnnc's [B, H, Sq], or [Sq, B] for 3-d q, in 32F) and,
                       // fused, the attention result before the projection: the backward's bitmask
                       // needs both, so the training graph has them.
                       auto lse = r == 4 ? with_dims(q, {q.dim[0], q.dim[2], q.dim[1]}) : with_dims(q, {q.dim[1], q.dim[0]});
                       lse.datatype = CCV_32F;
                       // libnnc's slots exactly (6 inputs, 3 outputs, absent ones as no symbol), as the
                       // backward's slot numbers and bitmask are counted from them.
                       std::vector<Sym> outs = {y, b.tensor(lse), {CCV_NNC_NO_TENSOR_SYMBOL, nullptr}};
                       if (fused_unify_head_weights) {
                         auto qkv = dims_vec(q);
                         qkv[r - 1] = v.dim[r - 1];
                         outs[2] = b.tensor(with_dims(q, qkv));
                       }
                       while (args.size() < 6) args.push_back({CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
                       b.exec(command(CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, p), ccv_nnc_no_hint, args, outs);
                       out = {y};
                     });
  return finish(l, is_trainable);
}

// ---------------------------------------------------------------------------
// LSTM

// The LSTM command over x ([T, B, F], [B, T, F] batch first, or [T, F]) and,
// when masked, the sequence lengths (int32 [B], the command's xs). One
// parameter, the packed weights in the command's order (lib/cmd/rnn/lstm.hpp:
// torch.nn.LSTM's _flat_weights concatenated) as [count / hidden, hidden],
// uniform in +-1/sqrt(hidden) as PyTorch initialises; h0 = c0 = 0 (set by the
// graph: the backward's bitmask wants hx present). Output y; the reserve is
// the graph's, for the backward.
Model* lstm(int masked, int hidden_size, int proj_size, int num_layers, int bias, int batch_first, int bidirectional, float dropout, int is_trainable,
            const char* name) {
  NNC_CHECK(hidden_size > 0 && num_layers > 0, "ccv_cnnp_lstm: hidden size %d, %d layers", hidden_size, num_layers);
  NNC_CHECK(proj_size >= 0 && proj_size < hidden_size + (proj_size == 0), "ccv_cnnp_lstm: projection size %d for hidden size %d", proj_size,
            hidden_size);
  NNC_CHECK(dropout >= 0 && dropout < 1, "ccv_cnnp_lstm: dropout %g is not in [0, 1)", static_cast<double>(dropout));
  auto l = new Layer("lstm", name, masked ? 2 : 1, [=](const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) {
    const auto x = b.params(in[0]);
    const int r = dims_of(x);
    NNC_CHECK(r == 2 || r == 3, "model %s takes x of [T, B, F] ([B, T, F] batch first) or [T, F], given %d dimensions",
              model_label(self).c_str(), r);
    ccv_nnc_cmd_param_t p = ccv_nnc_cmd_auto;
    p.rnn.hidden_size = hidden_size;
    p.rnn.proj_size = proj_size;
    p.rnn.num_layers = num_layers;
    p.rnn.bias = bias ? 1 : 0;
    p.rnn.batch_first = batch_first ? 1 : 0;
    p.rnn.bidirectional = bidirectional ? 1 : 0;
    p.rnn.dropout = dropout;
    p.rnn.is_test = b.is_test ? 1 : 0;
    const int H = hidden_size, P = proj_size ? proj_size : hidden_size, D = bidirectional ? 2 : 1;
    const int B = r == 3 ? x.dim[batch_first ? 0 : 1] : 1;
    // The packed weights' count (lstm.hpp): per layer and direction 4H x in,
    // 4H x P, two 4H biases, P x H projection; a multiple of H.
    size_t count = 0;
    for (int i = 0; i < num_layers; i++) {
      const size_t in_l = i == 0 ? static_cast<size_t>(x.dim[r - 1]) : static_cast<size_t>(D) * P;
      count += D * (4 * static_cast<size_t>(H) * (in_l + P) + (bias ? 8 * static_cast<size_t>(H) : 0) +
                    (proj_size ? static_cast<size_t>(P) * H : 0));
    }
    const float bound = 1.0f / std::sqrt(static_cast<float>(H));
    const Sym w = b.parameter(&self, 0, decl(with_dims(x, {static_cast<int>(count / H), H}), Init::uniform(-bound, bound), "weight",
                                             CCV_CNNP_PARAMETER_SELECT_WEIGHT));
    ccv_nnc_cmd_param_t zero = ccv_nnc_cmd_auto;
    zero.blas.a[0] = 0;
    const Sym h0 = b.tensor(with_dims(x, {num_layers * D, B, P})), c0 = b.tensor(with_dims(x, {num_layers * D, B, H}));
    b.exec(command(CCV_NNC_SET_FORWARD, zero), ccv_nnc_no_hint, {}, {h0});
    b.exec(command(CCV_NNC_SET_FORWARD, zero), ccv_nnc_no_hint, {}, {c0});
    const Sym none = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
    const std::vector<Sym> args = {in[0], masked ? in[1] : none, h0, c0, w};
    // y and the reserve shaped by the command's own shape inference.
    ccv_nnc_tensor_param_t ins[5] = {x, masked ? b.params(in[1]) : ccv_nnc_tensor_param_t{}, b.params(h0), b.params(c0), b.params(w)};
    ccv_nnc_tensor_param_t outs[4] = {};
    const ccv_nnc_cmd_t cmd = command(CCV_NNC_LSTM_FORWARD, p);
    ccv_nnc_hint_tensor_auto(cmd, ins, 5, ccv_nnc_no_hint, outs, 4);
    const Sym y = b.tensor(outs[0]), reserve = b.tensor(outs[3]);
    b.exec(cmd, ccv_nnc_no_hint, args, {y, none, none, reserve});
    out = {y};
  });
  return finish(l, is_trainable);
}

}  // namespace nnc::cnnp
