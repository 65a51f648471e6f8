// bench-compile [--run] [--peak] [--no-train] [GRAPH...]   (GRAPH: resnet50, mobilenet_v2, ...; default all)
//
// Builds inference graphs (fp32, NHWC) through the public Level-3 API for
// batch 1 and 32 and compiles each with ccv_nnc_symbolic_graph_compile; then
// (unless --no-train) the training graph of each ("+bwd" rows): the head's
// softmax becomes a softmax cross-entropy averaged into a scalar loss (the
// LSTM: the mean of its outputs), and ccv_nnc_symbolic_graph_backward adds
// the gradient of every parameter, each an output of the compiled graph:
//   resnet50      224x224, bottlenecks [3,4,6,3] with projection shortcuts
//   mobilenet_v2  224x224, inverted residuals, depthwise convs (groups = C)
//   densenet121   224x224, blocks [6,12,24,16], growth 32; the concatenation
//                 is written in place: each block's output is one symbol and
//                 every layer writes its channels into an alias of it
//   inception_v3  299x299, stem and A/B/C/D/E modules; branch outputs are
//                 aliases of the module's output (in place, as above)
//   lstm2x512     2 layers, hidden 512, input 512, 32 unrolled steps, GEMM +
//                 element-wise commands, gates split by aliases of one GEMM
// Nothing runs (no kernel is needed to compile) unless --run, which runs
// each graph at batch 1 once with small random parameters and checks that
// every softmax row sums to 1 (the LSTM: h finite, inside (-1, 1), not 0),
// after checking a small in-place dense block against separate tensors; and
// each training graph at batch 1 (labels: class indices): the loss finite
// (cross-entropy positive), every gradient finite, some gradient not zero.
// --peak prints the exec at the activation peak and the tensors live there.
//
// Per graph: execs, compile time (median of 5 compile + free; wall and this
// thread's CPU time), the arena
// (ccv_nnc_tensor_arena_size), a lower bound computed here and the ratio.
// Parameters (weights, BN statistics) and data inputs are symbols no exec
// writes: the compiler keeps them in the arena for the whole run, so
//   bound = const bytes + max over steps of the activation bytes live there,
// liveness over the compiled order from the first write (through any alias)
// to the last read (aliases count as their base; outputs live to the end).
// The bound ignores in-place pairs, so a plan that takes them may go below
// it; "plan/lb" is the planner's own arena over its own lower bound (which
// does know in-place pairs and the 64-byte alignment), read from the arena.
// DT counts DATA_TRANSFER nodes in the compiled graph (copies; the in-place
// concatenations must need none). The exit status is 1 if anything failed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "symbolic/compile.hpp"

namespace {

using T = ccv_nnc_tensor_symbol_t;
using Dims = std::vector<int>;

const T kNone{CCV_NNC_NO_TENSOR_SYMBOL, nullptr};

ccv_nnc_tensor_param_t tparam(const Dims& d) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < d.size(); i++) p.dim[i] = d[i];
  return p;
}

ccv_nnc_cmd_param_t blank() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

ccv_nnc_cmd_t command(uint32_t id, const ccv_nnc_cmd_param_t& p) { return ccv_nnc_cmd(id, nullptr, p, 0); }

ccv_nnc_cmd_t conv_cmd(int k, int kh, int kw, int c, int groups) {
  ccv_nnc_cmd_param_t p = blank();
  p.size.dim[0] = kh;
  p.size.dim[1] = kw;
  p.size.dim[2] = c / groups;
  p.convolution.count = k;
  p.convolution.groups = groups;
  return command(CCV_NNC_CONVOLUTION_FORWARD, p);
}

// Inference batch norm over N, H, W (NHWC).
ccv_nnc_cmd_t bn_cmd() {
  ccv_nnc_cmd_param_t p = blank();
  p.bnorm.count = 3;
  p.bnorm.axis[0] = 0, p.bnorm.axis[1] = 1, p.bnorm.axis[2] = 2;
  p.bnorm.epsilon = 1e-5f;
  p.bnorm.is_test = 1;
  return command(CCV_NNC_BATCH_NORM_FORWARD, p);
}

enum Pad { kSame, kValid };

// A graph under construction. The first failing call keeps its message;
// later calls do nothing.
struct Builder {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  std::vector<T> outputs;
  std::vector<int> params;          // weights and BN statistics
  std::vector<float> param_scale;   // --run fills each uniform in +-scale (BN var: 1 + that)
  std::vector<char> param_is_var;
  std::vector<char> param_is_stat;  // BN running statistics: updated, not differentiated
  std::string error;
  int count = 0;
  bool train = false;  // the head ends in a scalar loss instead of a softmax

  ~Builder() { ccv_nnc_symbolic_graph_free(sg); }
  bool ok() const { return error.empty(); }

  void fail(const std::string& what) {
    if (error.empty()) error = what + ": " + (ccv_nnc_error_message() ? ccv_nnc_error_message() : "(no message)");
  }

  Dims dims(T t) const {
    const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(sg, t);
    Dims d;
    for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && p.dim[i]; i++) d.push_back(p.dim[i]);
    return d;
  }
  std::string name(const char* prefix) { return std::string(prefix) + std::to_string(count++); }

  std::vector<int> inputs;  // data inputs (image, sequence, initial state)
  T input(const Dims& d, const char* prefix) {
    const T t = tensor(d, prefix);
    if (t.d >= 0) inputs.push_back(t.d);
    return t;
  }
  T tensor(const Dims& d, const char* prefix = "t") {
    if (!ok()) return kNone;
    const std::string n = name(prefix);
    const T t = ccv_nnc_tensor_symbol_new(sg, tparam(d), n.c_str());
    if (t.d < 0) fail("tensor_symbol_new " + n);
    return t;
  }
  T param(const Dims& d, float scale, bool var = false) {
    const T t = tensor(d, "p");
    if (t.d >= 0) {
      params.push_back(t.d);
      param_scale.push_back(scale);
      param_is_var.push_back(var);
      param_is_stat.push_back(0);
    }
    return t;
  }
  // A view of `base` with the base's packed strides (a slice), ofs in elements per axis.
  T alias(T base, const Dims& ofs, const Dims& d) {
    if (!ok()) return kNone;
    const Dims bd = dims(base);
    int o[CCV_NNC_MAX_DIM_ALLOC] = {}, s[CCV_NNC_MAX_DIM_ALLOC] = {};
    int64_t st = 1;
    for (int i = static_cast<int>(bd.size()) - 1; i >= 0; i--) {
      s[i] = static_cast<int>(st);
      st *= bd[static_cast<size_t>(i)];
    }
    for (size_t i = 0; i < ofs.size(); i++) o[i] = ofs[i];
    const std::string n = name("a");
    const T t = ccv_nnc_tensor_symbol_alias_new(sg, base, o, s, tparam(d), n.c_str());
    if (t.d < 0) fail("tensor_symbol_alias_new " + n);
    return t;
  }
  // Channels [c0, c0 + c) of an NHWC base.
  T channels(T base, int c0, int c) {
    Dims d = dims(base);
    if (d.empty()) return kNone;
    Dims ofs(d.size(), 0);
    ofs.back() = c0;
    d.back() = c;
    return alias(base, ofs, d);
  }
  // The same elements under another packed shape.
  T reshape(T base, const Dims& d) {
    if (!ok()) return kNone;
    int o[CCV_NNC_MAX_DIM_ALLOC] = {}, s[CCV_NNC_MAX_DIM_ALLOC] = {};
    const std::string n = name("r");
    const T t = ccv_nnc_tensor_symbol_alias_new(sg, base, o, s, tparam(d), n.c_str());
    if (t.d < 0) fail("tensor_symbol_alias_new " + n);
    return t;
  }
  void exec(const ccv_nnc_cmd_t& cmd, std::vector<T> in, std::vector<T> out, const char* what) {
    if (!ok()) return;
    const std::string n = name(what);
    const ccv_nnc_graph_exec_symbol_t e =
        ccv_nnc_graph_exec_symbol_new(sg, cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), n.c_str());
    if (e.d < 0) fail("graph_exec_symbol_new " + n);
  }
  T out_or_new(T out, const Dims& d) { return out.d >= 0 ? out : tensor(d); }

  T conv(T x, int k, int kh, int kw, int stride, Pad pad, int groups = 1, bool bias = false, T out = kNone) {
    if (!ok()) return kNone;
    const Dims d = dims(x);
    const int h = d[1], w = d[2], c = d[3];
    const int oh = pad == kSame ? (h + stride - 1) / stride : (h - kh) / stride + 1;
    const int ow = pad == kSame ? (w + stride - 1) / stride : (w - kw) / stride + 1;
    const float s = std::sqrt(1.f / static_cast<float>(kh * kw * (c / groups)));
    const T wt = param({k, kh, kw, c / groups}, s);
    const T y = out_or_new(out, {d[0], oh, ow, k});
    if (bias)
      exec(conv_cmd(k, kh, kw, c, groups), {x, wt, param({k}, 0.01f)}, {y}, "conv");
    else
      exec(conv_cmd(k, kh, kw, c, groups), {x, wt}, {y}, "conv");
    return y;
  }
  T bn(T x, T out = kNone) {
    if (!ok()) return kNone;
    const Dims d = dims(x);
    const int c = d.back();
    const T scale = param({c}, 0.1f), bias = param({c}, 0.1f), mean = param({c}, 0.1f), var = param({c}, 0.1f, true);
    const T y = out_or_new(out, d);
    if (!train) {
      exec(bn_cmd(), {x, scale, bias, mean, var}, {y}, "bn");
      return y;
    }
    // Training: batch statistics, the running ones updated in place (libnnc's
    // |y|mean|var|saved_mean|saved_inv_std|).
    param_is_stat[param_is_stat.size() - 2] = param_is_stat[param_is_stat.size() - 1] = 1;
    ccv_nnc_cmd_t cmd = bn_cmd();
    cmd.info.bnorm.is_test = 0;
    cmd.info.bnorm.momentum = 0.9f;
    exec(cmd, {x, scale, bias, mean, var}, {y, mean, var, tensor({c}, "saved_mean"), tensor({c}, "saved_inv_std")}, "bn");
    return y;
  }
  T unary(uint32_t id, const ccv_nnc_cmd_param_t& p, T x, T out, const char* what) {
    if (!ok()) return kNone;
    const T y = out_or_new(out, dims(x));
    exec(command(id, p), {x}, {y}, what);
    return y;
  }
  T relu(T x, T out = kNone) { return unary(CCV_NNC_RELU_FORWARD, blank(), x, out, "relu"); }
  T relu6(T x, T out = kNone) {
    ccv_nnc_cmd_param_t p = blank();
    p.clamp.min = 0;
    p.clamp.max = 6;
    return unary(CCV_NNC_CLAMP_FORWARD, p, x, out, "relu6");
  }
  T sigmoid(T x) { return unary(CCV_NNC_SIGMOID_FORWARD, blank(), x, kNone, "sigmoid"); }
  T tanh_(T x) { return unary(CCV_NNC_TANH_FORWARD, blank(), x, kNone, "tanh"); }
  T softmax(T x) { return unary(CCV_NNC_SOFTMAX_FORWARD, blank(), x, kNone, "softmax"); }
  T binary(uint32_t id, T a, T b, T out, const char* what) {
    if (!ok()) return kNone;
    const T y = out_or_new(out, dims(a));
    exec(command(id, blank()), {a, b}, {y}, what);
    return y;
  }
  T sum(T a, T b, T out = kNone) { return binary(CCV_NNC_EWSUM_FORWARD, a, b, out, "sum"); }
  T prod(T a, T b, T out = kNone) { return binary(CCV_NNC_EWPROD_FORWARD, a, b, out, "prod"); }
  T pool(uint32_t id, T x, int k, int stride, Pad pad, T out = kNone) {
    if (!ok()) return kNone;
    const Dims d = dims(x);
    const int oh = pad == kSame ? (d[1] + stride - 1) / stride : (d[1] - k) / stride + 1;
    const int ow = pad == kSame ? (d[2] + stride - 1) / stride : (d[2] - k) / stride + 1;
    ccv_nnc_cmd_param_t p = blank();
    p.size.dim[0] = k;
    p.size.dim[1] = k;
    const T y = out_or_new(out, {d[0], oh, ow, d[3]});
    exec(command(id, p), {x}, {y}, id == CCV_NNC_MAX_POOL_FORWARD ? "maxpool" : "avgpool");
    return y;
  }
  T maxpool(T x, int k, int stride, Pad pad, T out = kNone) { return pool(CCV_NNC_MAX_POOL_FORWARD, x, k, stride, pad, out); }
  T avgpool(T x, int k, int stride, Pad pad, T out = kNone) { return pool(CCV_NNC_AVERAGE_POOL_FORWARD, x, k, stride, pad, out); }
  // y = x w^T (+ b), w [out, in].
  T gemm(T x, int n_out, bool bias, T out = kNone) {
    if (!ok()) return kNone;
    const Dims d = dims(x);
    const T w = param({n_out, d.back()}, std::sqrt(1.f / static_cast<float>(d.back())));
    ccv_nnc_cmd_param_t p = blank();
    p.blas.transpose_b[0] = 0;
    p.blas.transpose_b[1] = 1;
    const T y = out_or_new(out, {d[0], n_out});
    if (bias)
      exec(command(CCV_NNC_GEMM_FORWARD, p), {x, w, param({n_out}, 0.01f)}, {y}, "gemm");
    else
      exec(command(CCV_NNC_GEMM_FORWARD, p), {x, w}, {y}, "gemm");
    return y;
  }
  // Global average pool, flatten, FC to 1000 classes, softmax (the output).
  void head(T x) {
    if (!ok()) return;
    const Dims d = dims(x);
    const T p = avgpool(x, d[1], 1, kValid);
    const T f = reshape(p, {d[0], d[3]});
    if (!train) {
      outputs.push_back(softmax(gemm(f, 1000, true)));
      return;
    }
    // Training: softmax cross-entropy against one class index per row, averaged.
    const T logits = gemm(f, 1000, true), labels = input({d[0]}, "labels");
    const T loss = tensor({d[0], 1}, "loss"), probs = tensor({d[0], 1000}, "probs");
    ccv_nnc_cmd_param_t xent = blank();
    xent.label_smoothing.trim0 = 0, xent.label_smoothing.trim1 = 1;  // no smoothing (CMD_SOFTMAX_CROSSENTROPY_FORWARD())
    exec(command(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, xent), {logits, labels}, {loss, probs}, "xent");
    outputs.push_back(mean_all(loss));
  }
  // The mean of every element, as a 1x..x1 symbol (a scalar loss).
  T mean_all(T x) {
    if (!ok()) return kNone;
    const Dims d = dims(x);
    ccv_nnc_cmd_param_t p = blank();
    for (size_t i = 0; i < d.size(); i++) p.reduce.axis[i] = static_cast<int>(i);
    p.reduce.count = static_cast<int>(d.size());
    const T y = tensor(Dims(d.size(), 1), "mean");
    exec(command(CCV_NNC_REDUCE_MEAN_FORWARD, p), {x}, {y}, "mean");
    return y;
  }
  // conv (no bias) + BN + ReLU, the last written into `out` if given.
  T cbr(T x, int k, int kh, int kw, int stride = 1, Pad pad = kSame, T out = kNone) {
    return relu(bn(conv(x, k, kh, kw, stride, pad)), out);
  }
};

void resnet50(Builder& b, int n) {
  const T x = b.input({n, 224, 224, 3}, "x");
  T h = b.maxpool(b.cbr(x, 64, 7, 7, 2), 3, 2, kSame);
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; s++) {
    const int w = 64 << s;
    for (int i = 0; i < blocks[s]; i++) {
      const int stride = i == 0 && s > 0 ? 2 : 1;
      T a = b.cbr(h, w, 1, 1);
      a = b.cbr(a, w, 3, 3, stride);
      a = b.bn(b.conv(a, 4 * w, 1, 1, 1, kSame));
      const T sc = i == 0 ? b.bn(b.conv(h, 4 * w, 1, 1, stride, kSame)) : h;
      h = b.relu(b.sum(a, sc));
    }
  }
  b.head(h);
}

void mobilenet_v2(Builder& b, int n) {
  const T x = b.input({n, 224, 224, 3}, "x");
  T h = b.relu6(b.bn(b.conv(x, 32, 3, 3, 2, kSame)));
  int c_in = 32;
  const int table[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& row : table) {
    const int t = row[0], c = row[1];
    for (int i = 0; i < row[2]; i++) {
      const int stride = i == 0 ? row[3] : 1;
      const int hidden = c_in * t;
      T a = h;
      if (t != 1) a = b.relu6(b.bn(b.conv(a, hidden, 1, 1, 1, kSame)));
      a = b.relu6(b.bn(b.conv(a, hidden, 3, 3, stride, kSame, hidden)));
      a = b.bn(b.conv(a, c, 1, 1, 1, kSame));
      if (stride == 1 && c_in == c) a = b.sum(a, h);
      h = a;
      c_in = c;
    }
  }
  h = b.relu6(b.bn(b.conv(h, 1280, 1, 1, 1, kSame)));
  b.head(h);
}

void densenet121(Builder& b, int n) {
  const int growth = 32;
  const T x = b.input({n, 224, 224, 3}, "x");
  const T stem = b.cbr(x, 64, 7, 7, 2);  // 112x112
  const int layers[4] = {6, 12, 24, 16};
  int c = 64, hw = 56;
  T prev = kNone;
  for (int bi = 0; bi < 4; bi++) {
    const int total = c + layers[bi] * growth;
    const T block = b.tensor({n, hw, hw, total}, "block");
    if (bi == 0) {
      b.maxpool(stem, 3, 2, kSame, b.channels(block, 0, c));
    } else {
      // Transition: BN, ReLU, 1x1 conv to c channels, 2x2 average pool into the block.
      const T t = b.conv(b.relu(b.bn(prev)), c, 1, 1, 1, kSame);
      b.avgpool(t, 2, 2, kValid, b.channels(block, 0, c));
    }
    for (int l = 0; l < layers[bi]; l++) {
      const int have = c + l * growth;
      const T in = b.channels(block, 0, have);
      const T a = b.cbr(b.relu(b.bn(in)), 4 * growth, 1, 1);
      b.conv(a, growth, 3, 3, 1, kSame, 1, false, b.channels(block, have, growth));
    }
    prev = block;
    if (bi < 3) {
      c = total / 2;
      hw /= 2;
    }
  }
  b.head(b.relu(b.bn(prev)));
}

// Inception-v3 modules (torchvision's layout): each writes its branches into
// channel slices of one output symbol.
T inception_a(Builder& b, T h, int pool_features) {
  const Dims d = b.dims(h);
  const T o = b.tensor({d[0], d[1], d[2], 224 + pool_features}, "mixed");
  b.cbr(h, 64, 1, 1, 1, kSame, b.channels(o, 0, 64));
  b.cbr(b.cbr(h, 48, 1, 1), 64, 5, 5, 1, kSame, b.channels(o, 64, 64));
  b.cbr(b.cbr(b.cbr(h, 64, 1, 1), 96, 3, 3), 96, 3, 3, 1, kSame, b.channels(o, 128, 96));
  b.cbr(b.avgpool(h, 3, 1, kSame), pool_features, 1, 1, 1, kSame, b.channels(o, 224, pool_features));
  return o;
}

T inception_b(Builder& b, T h) {
  const Dims d = b.dims(h);
  const int oh = (d[1] - 3) / 2 + 1;
  const T o = b.tensor({d[0], oh, oh, 384 + 96 + d[3]}, "mixed");
  b.cbr(h, 384, 3, 3, 2, kValid, b.channels(o, 0, 384));
  b.cbr(b.cbr(b.cbr(h, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, kValid, b.channels(o, 384, 96));
  b.maxpool(h, 3, 2, kValid, b.channels(o, 480, d[3]));
  return o;
}

T inception_c(Builder& b, T h, int c7) {
  const Dims d = b.dims(h);
  const T o = b.tensor({d[0], d[1], d[2], 768}, "mixed");
  b.cbr(h, 192, 1, 1, 1, kSame, b.channels(o, 0, 192));
  b.cbr(b.cbr(b.cbr(h, c7, 1, 1), c7, 1, 7), 192, 7, 1, 1, kSame, b.channels(o, 192, 192));
  T a = b.cbr(b.cbr(b.cbr(b.cbr(h, c7, 1, 1), c7, 7, 1), c7, 1, 7), c7, 7, 1);
  b.cbr(a, 192, 1, 7, 1, kSame, b.channels(o, 384, 192));
  b.cbr(b.avgpool(h, 3, 1, kSame), 192, 1, 1, 1, kSame, b.channels(o, 576, 192));
  return o;
}

T inception_d(Builder& b, T h) {
  const Dims d = b.dims(h);
  const int oh = (d[1] - 3) / 2 + 1;
  const T o = b.tensor({d[0], oh, oh, 320 + 192 + d[3]}, "mixed");
  b.cbr(b.cbr(h, 192, 1, 1), 320, 3, 3, 2, kValid, b.channels(o, 0, 320));
  const T a = b.cbr(b.cbr(b.cbr(h, 192, 1, 1), 192, 1, 7), 192, 7, 1);
  b.cbr(a, 192, 3, 3, 2, kValid, b.channels(o, 320, 192));
  b.maxpool(h, 3, 2, kValid, b.channels(o, 512, d[3]));
  return o;
}

T inception_e(Builder& b, T h) {
  const Dims d = b.dims(h);
  const T o = b.tensor({d[0], d[1], d[2], 2048}, "mixed");
  b.cbr(h, 320, 1, 1, 1, kSame, b.channels(o, 0, 320));
  const T a = b.cbr(h, 384, 1, 1);
  b.cbr(a, 384, 1, 3, 1, kSame, b.channels(o, 320, 384));
  b.cbr(a, 384, 3, 1, 1, kSame, b.channels(o, 704, 384));
  const T c = b.cbr(b.cbr(h, 448, 1, 1), 384, 3, 3);
  b.cbr(c, 384, 1, 3, 1, kSame, b.channels(o, 1088, 384));
  b.cbr(c, 384, 3, 1, 1, kSame, b.channels(o, 1472, 384));
  b.cbr(b.avgpool(h, 3, 1, kSame), 192, 1, 1, 1, kSame, b.channels(o, 1856, 192));
  return o;
}

void inception_v3(Builder& b, int n) {
  const T x = b.input({n, 299, 299, 3}, "x");
  T h = b.cbr(x, 32, 3, 3, 2, kValid);  // 149
  h = b.cbr(h, 32, 3, 3, 1, kValid);    // 147
  h = b.cbr(h, 64, 3, 3, 1, kSame);     // 147
  h = b.maxpool(h, 3, 2, kValid);       // 73
  h = b.cbr(h, 80, 1, 1, 1, kValid);
  h = b.cbr(h, 192, 3, 3, 1, kValid);  // 71
  h = b.maxpool(h, 3, 2, kValid);      // 35
  h = inception_a(b, h, 32);
  h = inception_a(b, h, 64);
  h = inception_a(b, h, 64);
  h = inception_b(b, h);  // 17
  h = inception_c(b, h, 128);
  h = inception_c(b, h, 160);
  h = inception_c(b, h, 160);
  h = inception_c(b, h, 192);
  h = inception_d(b, h);  // 8
  h = inception_e(b, h);
  h = inception_e(b, h);
  b.head(h);
}

// Two stacked LSTM layers unrolled over `steps`; x and the top layer's h
// sequence are [steps * n, 512] with step t at rows [t * n, (t + 1) * n).
void lstm(Builder& b, int n) {
  const int hidden = 512, input = 512, steps = 32, layers = 2;
  const T x = b.input({steps * n, input}, "x");
  const T y = b.tensor({steps * n, hidden}, "y");
  T wx[layers], wh[layers], bias[layers], h[layers], c[layers];
  const float s = std::sqrt(1.f / hidden);
  for (int l = 0; l < layers; l++) {
    wx[l] = b.param({4 * hidden, l == 0 ? input : hidden}, s);
    wh[l] = b.param({4 * hidden, hidden}, s);
    bias[l] = b.param({4 * hidden}, 0.01f);
    h[l] = b.input({n, hidden}, "h0");
    c[l] = b.input({n, hidden}, "c0");
  }
  ccv_nnc_cmd_param_t p = blank();
  p.blas.transpose_b[0] = 0;
  p.blas.transpose_b[1] = 1;
  const ccv_nnc_cmd_t gemm = command(CCV_NNC_GEMM_FORWARD, p);
  for (int t = 0; t < steps && b.ok(); t++) {
    T in = b.alias(x, {t * n, 0}, {n, input});
    for (int l = 0; l < layers; l++) {
      const T gx = b.tensor({n, 4 * hidden}), gh = b.tensor({n, 4 * hidden});
      b.exec(gemm, {in, wx[l], bias[l]}, {gx}, "gemm_x");
      b.exec(gemm, {h[l], wh[l]}, {gh}, "gemm_h");
      const T g = b.sum(gx, gh);
      const T i = b.sigmoid(b.alias(g, {0, 0}, {n, hidden}));
      const T f = b.sigmoid(b.alias(g, {0, hidden}, {n, hidden}));
      const T gg = b.tanh_(b.alias(g, {0, 2 * hidden}, {n, hidden}));
      const T o = b.sigmoid(b.alias(g, {0, 3 * hidden}, {n, hidden}));
      c[l] = b.sum(b.prod(f, c[l]), b.prod(i, gg));
      h[l] = b.prod(o, b.tanh_(c[l]), l == layers - 1 ? b.alias(y, {t * n, 0}, {n, hidden}) : kNone);
      in = h[l];
    }
  }
  b.outputs.push_back(b.train ? b.mean_all(y) : y);
}

// Training: the gradient of the loss (outputs[0]) with respect to every
// parameter, the gradients made outputs beside the loss.
void add_backward(Builder& b) {
  if (!b.ok()) return;
  std::vector<T> wrt;
  for (size_t i = 0; i < b.params.size(); i++)
    if (!b.param_is_stat[i]) wrt.push_back(T{b.params[i], b.sg});
  ccv_nnc_symbolic_graph_backward(b.sg, b.outputs.data(), 1, wrt.data(), static_cast<int>(wrt.size()),
                                  SYMBOLIC_GRAPH_SOURCES(b.sg), SYMBOLIC_GRAPH_DESTINATIONS(b.sg));
  const char* message = ccv_nnc_error_message();
  if (message && *message) {
    b.fail("symbolic_graph_backward");
    return;
  }
  for (const T& w : wrt) {
    const T g = ccv_nnc_tensor_symbol_for_backward(b.sg, w);
    if (g.d < 0) {
      b.fail("symbolic_graph_backward");
      return;
    }
    b.outputs.push_back(g);
  }
}

struct Compiled {
  ccv_nnc_graph_t* graph = nullptr;
  ccv_nnc_tensor_arena_t* arena = nullptr;
  ccv_nnc_graph_exec_arena_t* execs = nullptr;
  bool compile(const Builder& b) {
    ccv_nnc_symbolic_graph_compile(b.sg, ccv_nnc_default_compile_params, nullptr, 0, b.outputs.data(),
                                   static_cast<int>(b.outputs.size()), SYMBOLIC_GRAPH_SOURCES(b.sg),
                                   SYMBOLIC_GRAPH_DESTINATIONS(b.sg), &graph, &arena, &execs);
    return graph != nullptr;
  }
  void free() {
    ccv_nnc_graph_free(graph);
    ccv_nnc_tensor_arena_free(arena);
    ccv_nnc_graph_exec_arena_free(execs);
    graph = nullptr, arena = nullptr, execs = nullptr;
  }
};

double mb(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

struct Analysis {
  int execs = 0;
  int64_t params = 0, inputs = 0, activations = 0, peak = 0, peak_step = -1;
  int data_transfers = 0;
  std::string peak_detail;  // --peak: the exec at the peak and what is live there
};

// Liveness over the compiled order: the node an exec symbol became is its
// position (the compiler makes nodes in its order; the SETs of zero-initialised
// gradient accumulators are nodes made just before their first user, so the
// positions keep the order).
Analysis analyse(const Builder& b, const Compiled& c, bool detail) {
  Analysis a;
  const int ne = ccv_nnc_graph_exec_symbol_count(b.sg);
  const int nt = ccv_nnc_tensor_symbol_count(b.sg);
  auto base = [&](int d) {
    const T r = ccv_nnc_tensor_symbol_alias_to(b.sg, T{d, b.sg});
    return r.d >= 0 ? r.d : d;
  };
  std::vector<int64_t> first(static_cast<size_t>(nt), INT64_MAX), last(static_cast<size_t>(nt), -1);
  std::vector<char> used(static_cast<size_t>(nt), 0), written(static_cast<size_t>(nt), 0);
  int64_t steps = 0;
  for (int e = 0; e < ne; e++) {
    const ccv_nnc_graph_exec_t node = ccv_nnc_graph_exec_from_symbol(c.execs, ccv_nnc_graph_exec_symbol_t{e, b.sg});
    if (!node.graph) continue;
    a.execs++;
    const int64_t step = node.d;
    steps = std::max(steps, step + 1);
    const int *in, *out;
    int ni, no;
    ccv_nnc_graph_exec_symbol_io(b.sg, ccv_nnc_graph_exec_symbol_t{e, b.sg}, &in, &ni, &out, &no);
    for (int i = 0; i < ni; i++)
      if (in[i] >= 0) {
        const size_t d = static_cast<size_t>(base(in[i]));
        used[d] = 1;
        last[d] = std::max(last[d], step);
      }
    for (int i = 0; i < no; i++)
      if (out[i] >= 0) {
        const size_t d = static_cast<size_t>(base(out[i]));
        used[d] = written[d] = 1;
        first[d] = std::min(first[d], step);
        last[d] = std::max(last[d], step);
      }
  }
  for (const T& o : b.outputs) last[static_cast<size_t>(base(o.d))] = INT64_MAX;
  std::vector<char> is_param(static_cast<size_t>(nt), 0);
  for (int p : b.params) is_param[static_cast<size_t>(p)] = 1;
  std::vector<int64_t> delta(static_cast<size_t>(steps + 1), 0);
  for (int d = 0; d < nt; d++) {
    if (!used[static_cast<size_t>(d)] || base(d) != d) continue;
    const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(b.sg, T{d, b.sg});
    int64_t bytes = 4;
    for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && p.dim[i]; i++) bytes *= p.dim[i];
    if (!written[static_cast<size_t>(d)]) {
      (is_param[static_cast<size_t>(d)] ? a.params : a.inputs) += bytes;
      continue;
    }
    a.activations += bytes;
    const int64_t f = first[static_cast<size_t>(d)], l = std::min(last[static_cast<size_t>(d)], steps - 1);
    delta[static_cast<size_t>(f)] += bytes;
    delta[static_cast<size_t>(l + 1)] -= bytes;
  }
  int64_t live = 0;
  for (int64_t s = 0; s < steps; s++) {
    live += delta[static_cast<size_t>(s)];
    if (live > a.peak) a.peak = live, a.peak_step = s;
  }
  if (detail && a.peak_step >= 0) {
    for (int e = 0; e < ne; e++)
      if (ccv_nnc_graph_exec_from_symbol(c.execs, ccv_nnc_graph_exec_symbol_t{e, b.sg}).d == a.peak_step)
        a.peak_detail = std::string("at ") + ccv_nnc_graph_exec_symbol_name(b.sg, ccv_nnc_graph_exec_symbol_t{e, b.sg}) + ":";
    for (int d = 0; d < nt; d++) {
      const size_t i = static_cast<size_t>(d);
      if (!used[i] || !written[i] || base(d) != d || first[i] > a.peak_step || last[i] < a.peak_step) continue;
      const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(b.sg, T{d, b.sg});
      int64_t bytes = 4;
      for (int k = 0; k < CCV_NNC_MAX_DIM_ALLOC && p.dim[k]; k++) bytes *= p.dim[k];
      char buf[128];
      std::snprintf(buf, sizeof(buf), " %s %.1f", ccv_nnc_tensor_symbol_name(b.sg, T{d, b.sg}), mb(bytes));
      a.peak_detail += buf;
    }
  }
  const int nodes = ccv_nnc_graph_exec_count(c.graph);
  for (int i = 0; i < nodes; i++)
    if (ccv_nnc_graph_exec_cmd(c.graph, ccv_nnc_graph_exec_t{i, c.graph}).cmd == CCV_NNC_DATA_TRANSFER_FORWARD) a.data_transfers++;
  return a;
}

// This thread's CPU time: other processes on a loaded machine disturb it less than wall time.
double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int64_t count_of(const ccv_nnc_tensor_t* t) {
  int64_t n = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= t->info.dim[i];
  return n;
}

// Parameters and inputs small and random (BN variances near 1), fixed seed.
void fill_random(const Builder& b, const Compiled& c) {
  std::mt19937 rng(7);
  auto fill = [&](int d, float lo, float hi) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(c.arena, T{d, b.sg});
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t i = 0, n = count_of(t); i < n; i++) t->data.f32[i] = u(rng);
  };
  for (size_t i = 0; i < b.params.size(); i++) {
    const float s = b.param_scale[i];
    if (b.param_is_var[i])
      fill(b.params[i], 1 - s, 1 + s);
    else
      fill(b.params[i], -s, s);
  }
  for (int d : b.inputs) fill(d, -1, 1);
}

// The in-place concatenation against separate tensors: a small dense block
// (4 layers of BN, ReLU, 3x3 conv with growth 5 over 2x9x7 images of 4
// channels) compiled with each layer writing its channels into an alias of
// the block, against the same commands run one at a time on separate
// tensors and concatenated here. Both use the same kernels: what is checked
// is the views and the arena's reuse around them.
bool check_dense_block() {
  const int n = 2, h = 9, w = 7, c0 = 4, growth = 5, layers = 4, total = c0 + layers * growth;
  Builder b;
  const T x = b.input({n, h, w, c0}, "x");
  const T block = b.tensor({n, h, w, total}, "block");
  b.relu(x, b.channels(block, 0, c0));
  std::vector<size_t> first_param;
  for (int l = 0; l < layers; l++) {
    const int have = c0 + l * growth;
    first_param.push_back(b.params.size());
    b.conv(b.relu(b.bn(b.channels(block, 0, have))), growth, 3, 3, 1, kSame, 1, false, b.channels(block, have, growth));
  }
  b.outputs.push_back(block);
  Compiled c;
  if (!b.ok() || ccv_nnc_graph_exec_symbol_autogen(b.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS) != 0 || !c.compile(b)) {
    std::printf("run: dense block: build or compile failed: %s\n", b.ok() ? ccv_nnc_error_message() : b.error.c_str());
    return false;
  }
  fill_random(b, c);
  bool ok = ccv_nnc_graph_run(c.graph, 0, TRAVERSE_FULL, 0, 0) == CCV_NNC_EXEC_SUCCESS;
  const ccv_nnc_tensor_t* xt = ccv_nnc_tensor_from_symbol(c.arena, x);
  const int64_t pixels = static_cast<int64_t>(n) * h * w;
  std::vector<float> cat(static_cast<size_t>(pixels * total), 0.f);
  for (int64_t p = 0; p < pixels; p++)
    for (int k = 0; k < c0; k++) cat[static_cast<size_t>(p * total + k)] = std::max(0.f, xt->data.f32[p * c0 + k]);
  for (int l = 0; l < layers && ok; l++) {
    const int have = c0 + l * growth;
    ccv_nnc_tensor_t* in = ccv_nnc_tensor_new(nullptr, tparam({n, h, w, have}), 0);
    ccv_nnc_tensor_t* normed = ccv_nnc_tensor_new(nullptr, tparam({n, h, w, have}), 0);
    ccv_nnc_tensor_t* act = ccv_nnc_tensor_new(nullptr, tparam({n, h, w, have}), 0);
    ccv_nnc_tensor_t* out = ccv_nnc_tensor_new(nullptr, tparam({n, h, w, growth}), 0);
    for (int64_t p = 0; p < pixels; p++)
      for (int k = 0; k < have; k++) in->data.f32[p * have + k] = cat[static_cast<size_t>(p * total + k)];
    ccv_nnc_tensor_t* pt[5];
    for (int i = 0; i < 5; i++) pt[i] = ccv_nnc_tensor_from_symbol(c.arena, T{b.params[first_param[static_cast<size_t>(l)] + static_cast<size_t>(i)], b.sg});
    // The layer's parameters in the order made: BN's scale, bias, mean, var (the
    // inner call runs first), then the conv weights.
    ccv_nnc_tensor_t* bn_in[5] = {in, pt[0], pt[1], pt[2], pt[3]};
    const ccv_nnc_cmd_t conv = conv_cmd(growth, 3, 3, have, 1);
    ok = ccv_nnc_cmd_exec(bn_cmd(), ccv_nnc_no_hint, 0, bn_in, 5, &normed, 1, nullptr) == CCV_NNC_EXEC_SUCCESS &&
         ccv_nnc_cmd_exec(command(CCV_NNC_RELU_FORWARD, blank()), ccv_nnc_no_hint, 0, &normed, 1, &act, 1, nullptr) == CCV_NNC_EXEC_SUCCESS;
    ccv_nnc_tensor_t* conv_in[2] = {act, pt[4]};
    ok = ok && ccv_nnc_cmd_exec(conv, ccv_nnc_hint_auto(conv.info, act->info, out->info), 0, conv_in, 2, &out, 1, nullptr) == CCV_NNC_EXEC_SUCCESS;
    for (int64_t p = 0; p < pixels; p++)
      for (int k = 0; k < growth; k++) cat[static_cast<size_t>(p * total + have + k)] = out->data.f32[p * growth + k];
    for (ccv_nnc_tensor_t* t : {in, normed, act, out}) ccv_nnc_tensor_free(t);
  }
  const ccv_nnc_tensor_t* bt = ccv_nnc_tensor_from_symbol(c.arena, block);
  double diff = 0, big = 0;
  for (int64_t i = 0; i < pixels * total; i++) {
    diff = std::max(diff, static_cast<double>(std::fabs(bt->data.f32[i] - cat[static_cast<size_t>(i)])));
    big = std::max(big, static_cast<double>(std::fabs(cat[static_cast<size_t>(i)])));
  }
  if (!(diff <= 1e-6 * std::max(1.0, big))) ok = false;
  std::printf("run: dense block in place vs separate tensors: %s, max |diff| %.3g (max |value| %.3g)\n", ok ? "OK" : "FAILED", diff, big);
  c.free();
  return ok;
}

// A graph at batch 1 once: parameters and inputs small and random, BN
// variances near 1. A softmax output's rows must sum to 1; the LSTM's h
// sequence must be finite, inside (-1, 1) and not all zero.
bool run_net(const char* name, void (*build)(Builder&, int)) {
  Builder b;
  build(b, 1);
  if (!b.ok() || ccv_nnc_graph_exec_symbol_autogen(b.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS) != 0) {
    std::printf("run: build failed: %s\n", b.error.c_str());
    return false;
  }
  Compiled c;
  if (!c.compile(b)) {
    std::printf("run: compile failed: %s\n", ccv_nnc_error_message());
    return false;
  }
  fill_random(b, c);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = ccv_nnc_graph_run(c.graph, 0, TRAVERSE_FULL, 0, 0);
  const double ms = ms_since(t0);
  bool ok = rc == CCV_NNC_EXEC_SUCCESS;
  if (!ok) std::printf("run: ccv_nnc_graph_run returned %d: %s\n", rc, ccv_nnc_error_message());
  const ccv_nnc_tensor_t* y = ccv_nnc_tensor_from_symbol(c.arena, b.outputs[0]);
  if (!std::strcmp(name, "lstm2x512")) {
    const int64_t n = static_cast<int64_t>(y->info.dim[0]) * y->info.dim[1];
    double big = 0;
    for (int64_t i = 0; i < n; i++) {
      const float v = y->data.f32[i];
      if (!std::isfinite(v) || std::fabs(v) >= 1) ok = false;
      big = std::max(big, static_cast<double>(std::fabs(v)));
    }
    if (big == 0) ok = false;
    std::printf("run: %s batch 1: %s in %.1f ms, max |h| %.4f\n", name, ok ? "OK" : "FAILED", ms, big);
    c.free();
    return ok;
  }
  double worst = 0, total = 0;
  float top = -1;
  int arg = -1;
  const int rows = y->info.dim[0], cols = y->info.dim[1];
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int k = 0; k < cols; k++) {
      const float v = y->data.f32[r * cols + k];
      if (!std::isfinite(v) || v < 0) ok = false;
      if (v > top) top = v, arg = k;
      s += v;
    }
    total += s;
    worst = std::max(worst, std::fabs(s - 1));
  }
  if (worst > 1e-4) ok = false;
  std::printf("run: %s batch 1: %s in %.1f ms, softmax row sum %.7f (|sum - 1| max %.2e), top class %d p=%.4f\n", name,
              ok ? "OK" : "FAILED", ms, total / rows, worst, arg, top);
  c.free();
  return ok;
}

// A training graph at batch 1 once: the loss must be finite and positive,
// every parameter's gradient finite, and some gradient not zero.
bool run_training(const char* name, void (*build)(Builder&, int)) {
  Builder b;
  b.train = true;
  build(b, 1);
  if (b.ok() && ccv_nnc_graph_exec_symbol_autogen(b.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS) != 0)
    b.fail("graph_exec_symbol_autogen");
  add_backward(b);
  Compiled c;
  if (!b.ok() || !c.compile(b)) {
    std::printf("run: %s+bwd: build or compile failed: %s\n", name, b.ok() ? ccv_nnc_error_message() : b.error.c_str());
    return false;
  }
  fill_random(b, c);
  for (int d : b.inputs) {  // class indices for the labels
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(c.arena, T{d, b.sg});
    if (!std::strncmp(ccv_nnc_tensor_symbol_name(b.sg, T{d, b.sg}), "labels", 6))
      for (int64_t i = 0, n = count_of(t); i < n; i++) t->data.f32[i] = static_cast<float>((i * 7 + 3) % 1000);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = ccv_nnc_graph_run(c.graph, 0, TRAVERSE_FULL, 0, 0);
  const double ms = ms_since(t0);
  bool ok = rc == CCV_NNC_EXEC_SUCCESS;
  if (!ok) std::printf("run: ccv_nnc_graph_run returned %d: %s\n", rc, ccv_nnc_error_message());
  const float loss = ccv_nnc_tensor_from_symbol(c.arena, b.outputs[0])->data.f32[0];
  // Cross-entropy is positive; the LSTM's mean output may have either sign.
  if (!std::isfinite(loss) || (std::strcmp(name, "lstm2x512") && !(loss > 0))) ok = false;
  double big = 0;
  for (size_t k = 1; k < b.outputs.size(); k++) {
    const ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(c.arena, b.outputs[k]);
    for (int64_t i = 0, n = count_of(t); i < n; i++) {
      if (!std::isfinite(t->data.f32[i])) ok = false;
      big = std::max(big, static_cast<double>(std::fabs(t->data.f32[i])));
    }
  }
  if (big == 0) ok = false;
  std::printf("run: %s+bwd batch 1: %s in %.1f ms, loss %.5f, %zu gradients, max |gradient| %.4g\n", name, ok ? "OK" : "FAILED", ms,
              loss, b.outputs.size() - 1, big);
  c.free();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  ccv_nnc_init();
  bool run = false, peak = false, no_train = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--run"))
      run = true;
    else if (!std::strcmp(argv[i], "--peak"))
      peak = true;
    else if (!std::strcmp(argv[i], "--no-train"))
      no_train = true;
    else if (argv[i][0] != '-')
      only.push_back(argv[i]);
    else {
      std::fprintf(stderr, "usage: bench-compile [--run] [--peak] [--no-train] [resnet50|mobilenet_v2|densenet121|inception_v3|lstm2x512 ...]\n");
      return 2;
    }
  }
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::printf("bench-compile: %u hardware threads, %s; fp32 NHWC inference and training (+bwd: mean loss, backward to every parameter); MB = 1e6 bytes\n",
              std::thread::hardware_concurrency(), when);
  std::printf("bound = params + inputs + peak live activations (no in-place); lb = the planner's own lower bound, plan/lb its arena over it\n");
  std::printf("%-17s %5s %6s %10s %7s %9s %9s %7s %7s %8s %9s %8s %7s %3s\n", "graph", "batch", "execs", "compile_ms", "cpu_ms", "arena_MB",
              "bound_MB", "ratio", "lb_MB", "plan/lb", "noreuse_MB", "param_MB", "input_MB", "DT");
  struct Net {
    const char* name;
    void (*build)(Builder&, int);
  };
  const Net nets[] = {{"resnet50", resnet50},
                      {"mobilenet_v2", mobilenet_v2},
                      {"densenet121", densenet121},
                      {"inception_v3", inception_v3},
                      {"lstm2x512", lstm}};
  int failures = 0;
  for (const Net& net : nets)
    for (int mode = 0; mode < 2; mode++)
    for (int batch : {1, 32}) {
      if (!only.empty() && std::find(only.begin(), only.end(), net.name) == only.end()) continue;
      if (mode == 1 && no_train) continue;
      const std::string label = std::string(net.name) + (mode ? "+bwd" : "");
      Builder b;
      b.train = mode == 1;
      net.build(b, batch);
      if (b.ok() && ccv_nnc_graph_exec_symbol_autogen(b.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS) != 0)
        b.fail("graph_exec_symbol_autogen");
      if (b.train) add_backward(b);
      if (!b.ok()) {
        std::printf("%-13s %5d build failed: %s\n", label.c_str(), batch, b.error.c_str());
        failures++;
        continue;
      }
      Compiled c;
      if (!c.compile(b)) {
        std::printf("%-13s %5d compile failed: %s\n", label.c_str(), batch, ccv_nnc_error_message());
        failures++;
        continue;
      }
      const Analysis a = analyse(b, c, peak);
      const uint64_t arena = ccv_nnc_tensor_arena_size(c.arena);
      const double plan_lb = c.arena->lower_bound ? static_cast<double>(c.arena->planned) / static_cast<double>(c.arena->lower_bound) : 0;
      const uint64_t lb = c.arena->lower_bound;
      c.free();
      std::vector<double> times, cpu;
      for (int r = 0; r < 5; r++) {
        const double c0 = thread_cpu_ms();
        const auto t0 = std::chrono::steady_clock::now();
        Compiled k;
        k.compile(b);
        k.free();
        times.push_back(ms_since(t0));
        cpu.push_back(thread_cpu_ms() - c0);
      }
      std::sort(times.begin(), times.end());
      std::sort(cpu.begin(), cpu.end());
      const int64_t bound = a.params + a.inputs + a.peak;
      std::printf("%-17s %5d %6d %10.2f %7.2f %9.1f %9.1f %7.4f %7.1f %8.4f %9.1f %8.1f %7.1f %3d\n", label.c_str(), batch, a.execs, times[2], cpu[2],
                  mb(static_cast<int64_t>(arena)), mb(bound), static_cast<double>(arena) / static_cast<double>(bound),
                  mb(static_cast<int64_t>(lb)), plan_lb,
                  mb(a.activations), mb(a.params), mb(a.inputs), a.data_transfers);
      if (peak) std::printf("  peak activations (MB) %s\n", a.peak_detail.c_str());
      std::fflush(stdout);
    }
  if (run && !check_dense_block()) failures++;
  if (run)
    for (const Net& net : nets)
      if (only.empty() || std::find(only.begin(), only.end(), net.name) != only.end()) {
        if (!run_net(net.name, net.build)) failures++;
        if (!no_train && !run_training(net.name, net.build)) failures++;
      }
  return failures ? 1 : 0;
}
