// LSTM: a multi-layer, optionally bidirectional long short-term memory over a
// sequence, with libnnc's cuDNN-style slots (lstm.hpp has the shapes, the
// packed weights' order and the reserve's layout).
//   Forward inputs |x|xs|hx|cx|w|, outputs |y|hy|cy|r|: xs, hx, cx, hy, cy
//     optional; r optional here (libnnc's bitmask wants it, as it wants xs:
//     a graph passes both), written whenever given.
//   Backward inputs |dy|dhy|dcy|dr|x|xs|hx|cx|w|y|hy|cy|r|, outputs
//     |dx|dxs|dhx|dcx|dw|: reads dy (NULL: zeros), dhy, dcy (NULL: zeros),
//     x (for dw only; without it the sizes come from dx), xs, w and r; writes whichever outputs are given (dxs,
//     when given, is zeroed: lengths have no gradient). dw is overwritten,
//     not added to.
// Shapes and bitmasks are libnnc's: y [T, B, D·P] (batch first: [B, T, D·P]);
// hy and cy take hx's and cx's parameters; r [ceil(n / H), H] with n from the
// backend's aux (reserve_size); the backward's outputs take the forward
// inputs' shapes (dx like x, ..., dw like w). The forward needs x, xs, w,
// y and r present; the backward needs dy, hx, w, y, r and gives dx, dhx, dcx
// (dw optional), or also reads x and gives dw (with dx, dhx, dcx, or alone).
// No in-place pair.
#include "cmd/rnn/lstm.hpp"

#include <algorithm>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace lstm {

Dims dims_of(const ccv_nnc_cmd_param_t& p, const int* xdim) {
  Dims n;
  const int nd = nd_of(xdim);
  n.batch_first = p.rnn.batch_first != 0;
  if (nd == 3) {
    n.B = n.batch_first ? xdim[0] : xdim[1];
    n.T = n.batch_first ? xdim[1] : xdim[0];
  } else {
    n.B = 1;
    n.T = xdim[0];
  }
  n.F = nd >= 1 ? xdim[nd - 1] : 0;
  n.H = p.rnn.hidden_size;
  n.proj = p.rnn.proj_size > 0;
  n.P = n.proj ? p.rnn.proj_size : n.H;
  n.L = p.rnn.num_layers;
  n.D = p.rnn.bidirectional ? 2 : 1;
  n.bias = p.rnn.bias != 0;
  n.has_factors = p.rnn.dropout > 0 && n.L > 1;
  n.drop = n.has_factors && !p.rnn.is_test;
  n.p = n.drop ? p.rnn.dropout : 0;
  return n;
}

size_t reserve_size(const ccv_nnc_cmd_t cmd, const int, const int feature_size, const int batch_count,
                    const int max_seq_count) {
  Dims n;
  n.T = max_seq_count, n.B = batch_count, n.F = feature_size;
  n.H = cmd.info.rnn.hidden_size;
  n.proj = cmd.info.rnn.proj_size > 0;
  n.P = n.proj ? cmd.info.rnn.proj_size : n.H;
  n.L = cmd.info.rnn.num_layers;
  n.D = cmd.info.rnn.bidirectional ? 2 : 1;
  n.has_factors = cmd.info.rnn.dropout > 0 && n.L > 1;
  if (n.T <= 0 || n.B <= 0 || n.H <= 0 || n.L <= 0 || n.P <= 0) return 0;
  return n.reserve_count();
}

void lengths(const ccv_nnc_tensor_t* xs, const Dims& n, int* len) {
  if (!xs) {
    std::fill(len, len + n.B, n.T);
    return;
  }
  const Layout l = layout_of(xs, "xs");
  int k = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* i) {
    int v;
    std::memcpy(&v, l.at(i), sizeof v);
    NNC_CHECK(v >= 0 && v <= n.T, "LSTM: xs[%d] = %d is not a sequence length in 0..%d", k, v, n.T);
    len[k++] = v;
  });
}

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t c = 1;
  for (int i = 0, nd = nd_of(t->info.dim); i < nd; i++) c *= static_cast<size_t>(t->info.dim[i]);
  return c;
}

void check_params(const char* name, const ccv_nnc_cmd_param_t& p) {
  NNC_CHECK(p.rnn.hidden_size > 0, "%s: hidden_size %d is not positive", name, p.rnn.hidden_size);
  NNC_CHECK(p.rnn.num_layers > 0, "%s: num_layers %d is not positive", name, p.rnn.num_layers);
  NNC_CHECK(p.rnn.proj_size >= 0 && p.rnn.proj_size < p.rnn.hidden_size,
            "%s: proj_size %d is not in 0 (none) .. hidden_size - 1 = %d", name, p.rnn.proj_size,
            p.rnn.hidden_size - 1);
  NNC_CHECK(p.rnn.dropout >= 0 && p.rnn.dropout < 1, "%s: dropout %g is not in [0, 1)", name,
            static_cast<double>(p.rnn.dropout));
}

// A float tensor of x's type.
void same_type(const char* name, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* t, const char* what) {
  if (!t) return;
  NNC_CHECK(CCV_GET_DATA_TYPE(t->info.datatype) == CCV_GET_DATA_TYPE(x->info.datatype), "%s: %s is %s but x is %s",
            name, what, dt(t), dt(x));
}

// hx / hy / dhx ([L·D, B, P]) or cx / cy / dcx ([L·D, B, H]); [L·D, P] too when B = 1.
void check_state(const char* name, const Dims& n, const ccv_nnc_tensor_t* t, const char* what, int width) {
  if (!t) return;
  const int nd = nd_of(t->info.dim);
  const bool ok = (nd == 3 && t->info.dim[0] == n.L * n.D && t->info.dim[1] == n.B && t->info.dim[2] == width) ||
                  (nd == 2 && n.B == 1 && t->info.dim[0] == n.L * n.D && t->info.dim[1] == width);
  NNC_CHECK(ok, "%s: %s is %s; it should be %dx%dx%d (layers x directions, batch, %s)", name, what,
            shape_string(t->info.dim).c_str(), n.L * n.D, n.B, width, width == n.H ? "hidden" : "projection");
}

// y / dy: [T, B, D·P] ([B, T, D·P] batch first), or [T, D·P] for a 2-d x.
void check_y(const char* name, const Dims& n, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* t, const char* what) {
  if (!t) return;
  const int nd = nd_of(t->info.dim), xnd = nd_of(x->info.dim);
  const int o = static_cast<int>(n.out_size());
  bool ok;
  if (nd == 3)
    ok = t->info.dim[0] == (n.batch_first ? n.B : n.T) && t->info.dim[1] == (n.batch_first ? n.T : n.B) &&
         t->info.dim[2] == o;
  else
    ok = nd == 2 && xnd == 2 && t->info.dim[0] == n.T && t->info.dim[1] == o;
  NNC_CHECK(ok, "%s: %s is %s; for x %s it should be %dx%dx%d", name, what, shape_string(t->info.dim).c_str(),
            shape_string(x->info.dim).c_str(), n.batch_first ? n.B : n.T, n.batch_first ? n.T : n.B, o);
}

// What the forward and the backward share: x, xs, w, r.
Dims check_common(const char* name, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, const ccv_nnc_tensor_t* xs,
                  const ccv_nnc_tensor_t* w, const ccv_nnc_tensor_t* r, bool need_r) {
  check_params(name, cmd.info);
  NNC_CHECK(x, "%s: x is required", name);
  NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & types::kWide, "%s: x is %s; it takes 32F and 64F", name, dt(x));
  const int nd = nd_of(x->info.dim);
  NNC_CHECK(nd == 2 || nd == 3, "%s: x is %s; it takes [T, B, F] ([B, T, F] batch first) or [T, F]", name,
            shape_string(x->info.dim).c_str());
  const Dims n = dims_of(cmd.info, x->info.dim);
  NNC_CHECK(w, "%s: w (the packed weights) is required", name);
  same_type(name, x, w, "w");
  NNC_CHECK(count_of(w) == n.weight_count(),
            "%s: w has %zu elements (%s); %d layer(s), %s, input %d, hidden %d%s%s need %zu", name, count_of(w),
            shape_string(w->info.dim).c_str(), n.L, n.D == 2 ? "bidirectional" : "one direction", n.F, n.H,
            n.proj ? ", projection" : "", n.bias ? ", bias" : ", no bias", n.weight_count());
  if (xs) {
    NNC_CHECK(CCV_GET_DATA_TYPE(xs->info.datatype) == CCV_32S, "%s: xs (sequence lengths) is %s; it takes 32S", name,
              dt(xs));
    NNC_CHECK(count_of(xs) == static_cast<size_t>(n.B), "%s: xs is %s; it holds one length per sequence (%d)", name,
              shape_string(xs->info.dim).c_str(), n.B);
  }
  NNC_CHECK(r || !need_r, "%s: r (the forward's reserve) is required", name);
  if (r) {
    same_type(name, x, r, "r");
    NNC_CHECK(count_of(r) >= n.reserve_count(), "%s: r has %zu elements (%s); these sizes need %zu", name, count_of(r),
              shape_string(r->info.dim).c_str(), n.reserve_count());
    NNC_CHECK(layout_of(r, "r").packed(), "%s: r must be a packed tensor, not a strided view", name);
  }
  return n;
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "LSTM_FORWARD";
  NNC_CHECK(input_size == 5 && output_size >= 1 && output_size <= 4,
            "%s: takes inputs |x|xs|hx|cx|w| and outputs |y|hy|cy|r| (got %d inputs, %d outputs)", name, input_size,
            output_size);
  ccv_nnc_tensor_t* const x = inputs[0];
  auto out = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  const Dims n = check_common(name, cmd, x, inputs[1], inputs[4], out(3), false);
  NNC_CHECK(outputs[0], "%s: y (output 0) is required", name);
  check_state(name, n, inputs[2], "hx", n.P);
  check_state(name, n, inputs[3], "cx", n.H);
  check_y(name, n, x, outputs[0], "y");
  check_state(name, n, out(1), "hy", n.P);
  check_state(name, n, out(2), "cy", n.H);
  const char* names[] = {"xs", "hx", "cx"};
  for (int i = 2; i < 4; i++) same_type(name, x, inputs[i], names[i - 1]);
  same_type(name, x, outputs[0], "y");
  same_type(name, x, out(1), "hy");
  same_type(name, x, out(2), "cy");
}

void validate_backward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "LSTM_BACKWARD";
  NNC_CHECK(input_size == 13 && output_size >= 1 && output_size <= 5,
            "%s: takes inputs |dy|dhy|dcy|dr|x|xs|hx|cx|w|y|hy|cy|r| and outputs |dx|dxs|dhx|dcx|dw| (got %d "
            "inputs, %d outputs)",
            name, input_size, output_size);
  auto out = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  // libnnc's first pattern gives dx, dhx, dcx without x (autodiff then drops
  // it): the sizes come from dx, shaped like x. dw needs x's values.
  NNC_CHECK(inputs[4] || out(0), "%s: x (input 4) or dx (output 0) is required for the sizes", name);
  NNC_CHECK(inputs[4] || !out(4), "%s: dw (output 4) needs x (input 4)", name);
  ccv_nnc_tensor_t* const x = inputs[4] ? inputs[4] : out(0);
  const Dims n = check_common(name, cmd, x, inputs[5], inputs[8], inputs[12], true);
  check_y(name, n, x, inputs[0], "dy");
  check_state(name, n, inputs[1], "dhy", n.P);
  check_state(name, n, inputs[2], "dcy", n.H);
  same_type(name, x, inputs[0], "dy");
  same_type(name, x, inputs[1], "dhy");
  same_type(name, x, inputs[2], "dcy");
  if (ccv_nnc_tensor_t* const dx = out(0)) {
    same_type(name, x, dx, "dx");
    NNC_CHECK(same_shape(dx->info, x->info), "%s: dx is %s but x is %s", name, shape_string(dx->info.dim).c_str(),
              shape_string(x->info.dim).c_str());
  }
  check_state(name, n, out(2), "dhx", n.P);
  check_state(name, n, out(3), "dcx", n.H);
  same_type(name, x, out(2), "dhx");
  same_type(name, x, out(3), "dcx");
  if (ccv_nnc_tensor_t* const dw = out(4)) {
    same_type(name, x, dw, "dw");
    NNC_CHECK(count_of(dw) == n.weight_count(), "%s: dw has %zu elements; w has %zu", name, count_of(dw),
              n.weight_count());
  }
}

void forward_auto(const ccv_nnc_cmd_param_t& p, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  NNC_CHECK(output_size >= 1 && input_size >= 5, "LSTM_FORWARD: output shapes need |x|xs|hx|cx|w| (got %d inputs)",
            input_size);
  const int nd = nd_of(inputs[0].dim);
  NNC_CHECK(nd == 2 || nd == 3, "LSTM_FORWARD: x is %s; it takes [T, B, F] or [T, F]",
            shape_string(inputs[0].dim).c_str());
  const Dims n = dims_of(p, inputs[0].dim);
  NNC_CHECK(n.B > 0 && n.H > 0, "LSTM_FORWARD: batch %d, hidden_size %d", n.B, n.H);
  const int T = n.T, B = n.B;
  std::memset(outputs[0].dim, 0, sizeof(outputs[0].dim));
  outputs[0].dim[0] = n.batch_first ? B : T;
  outputs[0].dim[1] = n.batch_first ? T : B;
  outputs[0].dim[2] = static_cast<int>(n.out_size());
  outputs[0].type = inputs[0].type;
  outputs[0].format = inputs[0].format;
  outputs[0].datatype = inputs[0].datatype;
  if (output_size >= 4) {
    ccv_nnc_cmd_t cmd;
    std::memset(&cmd, 0, sizeof(cmd));
    cmd.cmd = CCV_NNC_LSTM_FORWARD;
    cmd.info = p;
    const size_t total = reserve_size(cmd, inputs[0].datatype, n.F, B, T);
    std::memset(outputs[3].dim, 0, sizeof(outputs[3].dim));
    outputs[3].dim[0] = static_cast<int>((total + n.H - 1) / n.H);
    outputs[3].dim[1] = n.H;
    outputs[3].type = inputs[0].type;
    outputs[3].format = inputs[0].format;
    outputs[3].datatype = inputs[0].datatype;
  }
  if (input_size >= 4 && output_size >= 3)
    for (int i = 0; i < 2; i++) outputs[i + 1] = inputs[i + 2];
}

// libnnc's rule (backward from inputs): output i takes forward input i's
// parameters, which sit after the forward's four output gradients.
void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                   const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && 4 + i < input_size; i++) outputs[i] = inputs[4 + i];
}

// libnnc's pattern: exactly 5 inputs with x, xs and w present (hx, cx
// optional); y and r present (hy, cy optional).
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int, const uint64_t* inputs, int isz,
                     const uint64_t* outputs, int osz) {
  return input_size == 5 && (word0(inputs, isz) & 19u) == 19u && (word0(outputs, osz) & 9u) == 9u;
}

// libnnc's three patterns (slots |dy|dhy|dcy|dr|x|xs|hx|cx|w|y|hy|cy|r| ->
// |dx|dxs|dhx|dcx|dw|): dy, hx, w, y, r in giving dx, dhx, dcx; with x too,
// giving dx, dhx, dcx and dw, or dw alone.
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                      int osz) {
  const uint64_t in = word0(inputs, isz), out = word0(outputs, osz);
  constexpr uint64_t base = (1u << 0) | (1u << 6) | (1u << 8) | (1u << 9) | (1u << 12);  // dy, hx, w, y, r
  constexpr uint64_t with_x = base | (1u << 4);
  if ((in & base) == base && (out & 13u) == 13u) return true;
  if ((in & with_x) == with_x && (out & 29u) == 29u) return true;
  if ((in & with_x) == with_x && (out & 16u) == 16u) return true;
  return false;
}

}  // namespace

}  // namespace lstm

void register_rnn(Registry& r) {
  using namespace lstm;
  r.add_command({.cmd = CCV_NNC_LSTM_FORWARD,
                 .tensor_auto = forward_auto,
                 .bitmask = forward_bitmask,
                 .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_LSTM_BACKWARD,
                 .tensor_auto = backward_auto,
                 .bitmask = backward_bitmask,
                 .validate = validate_backward});
  // xs is int32 beside float tensors; validate checks every type.
  for (const KernelTraits& t : {cpu_ref(types::kWide | CCV_32S), cpu_opt(types::kWide | CCV_32S)}) {
    const bool opt = t.backend == CCV_NNC_BACKEND_CPU_OPT;
    const std::pair<uint32_t, ccv_nnc_cmd_exec_f> execs[] = {
        {CCV_NNC_LSTM_FORWARD, opt ? forward_opt : forward_ref},
        {CCV_NNC_LSTM_BACKWARD, opt ? backward_opt : backward_ref}};
    for (const auto& [cmd, exec] : execs) {
      Kernel k;
      k.cmd = cmd;
      k.backend = t.backend;
      k.tensor_formats = t.formats;
      k.tensor_datatypes = t.datatypes;
      k.tensor_memory = t.memory;
      k.exec = exec;
      k.aux = reinterpret_cast<void*>(&reserve_size);  // libnnc's ccv_nnc_cmd_aux: the reserve's size
      k.exclusive = opt;                               // OPT runs GEMMs and parallel_for over the pool
      r.add_kernel(k);
    }
  }
}

}  // namespace nnc
