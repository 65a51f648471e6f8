// CPU_REF kernels of LSTM: every step of every sequence element by element,
// in double, the tensors read through their own strides; the reserve is
// built in double and rounded once into r's type. lstm.hpp has the layout.
#include <cmath>
#include <vector>

#include "cmd/rnn/lstm.hpp"
#include "core/error.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::lstm {

namespace {

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// A sequence tensor (x, y, dy, dx) by (t, b, feature).
struct Seq {
  Layout l;
  bool batch_first = false;
  unsigned char* at(int t, int b, int f) const {
    int64_t off;
    if (l.nd == 3)
      off = (batch_first ? b * l.stride[0] + t * l.stride[1] : t * l.stride[0] + b * l.stride[1]) + f * l.stride[2];
    else
      off = t * l.stride[0] + f * l.stride[1];
    return l.data + off * static_cast<int64_t>(l.element_size);
  }
};
Seq seq(const ccv_nnc_tensor_t* t, const Dims& n, const char* what) { return {layout_of(t, what), n.batch_first}; }

// A state tensor (hx, cx, ...) by (layer·D + d, b, j).
unsigned char* state_at(const Layout& l, int k, int b, int j) {
  const int64_t off =
      l.nd == 3 ? k * l.stride[0] + b * l.stride[1] + j * l.stride[2] : k * l.stride[0] + j * l.stride[1];
  return l.data + off * static_cast<int64_t>(l.element_size);
}

// A whole tensor in row-major order, as doubles.
std::vector<double> gather(const ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  std::vector<double> v;
  v.reserve(l.count());
  for_each_index(l.dim.data(), l.nd, [&](const int* i) { v.push_back(load_double(l.at(i), l.datatype)); });
  return v;
}
void scatter(const std::vector<double>& v, ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  size_t k = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* i) { store_double(l.at(i), l.datatype, v[k++]); });
}

// The value a double takes once stored in `datatype` (the dropout scale as the reserve holds it).
double rounded(double v, int datatype) { return datatype == CCV_32F ? static_cast<double>(static_cast<float>(v)) : v; }

}  // namespace

NNC_KERNEL(forward_ref) {
  ccv_nnc_tensor_t* const x = inputs[0];
  const Dims n = dims_of(cmd.info, x->info.dim);
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L;
  const int datatype = CCV_GET_DATA_TYPE(x->info.datatype);
  std::vector<int> len(static_cast<size_t>(B));
  lengths(inputs[1], n, len.data());
  const std::vector<double> W = gather(inputs[4], "w");
  std::vector<double> R(n.reserve_count(), 0.0);
  ccv_nnc_tensor_t* const hy = output_size > 1 ? outputs[1] : nullptr;
  ccv_nnc_tensor_t* const cy = output_size > 2 ? outputs[2] : nullptr;
  ccv_nnc_tensor_t* const r = output_size > 3 ? outputs[3] : nullptr;
  const uint64_t key = n.drop ? dropout_key(stream_genrand(stream_context)) : 0;
  const double scale = n.drop ? rounded(1 / (1 - n.p), datatype) : 1;

  // The current layer's input, time-major [T, B, in].
  std::vector<double> in(n.tb() * n.F);
  {
    const Seq xs = seq(x, n, "x");
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (int f = 0; f < n.F; f++)
          in[(static_cast<size_t>(t) * B + b) * n.F + f] = load_double(xs.at(t, b, f), datatype);
  }
  const Layout hx = inputs[2] ? layout_of(inputs[2], "hx") : Layout{},
               cx = inputs[3] ? layout_of(inputs[3], "cx") : Layout{};
  const Layout hyl = hy ? layout_of(hy, "hy") : Layout{}, cyl = cy ? layout_of(cy, "cy") : Layout{};
  std::vector<double> out, pre(4 * static_cast<size_t>(H)), m(static_cast<size_t>(H));
  for (int l = 0; l < L; l++) {
    const size_t I = n.in_size(l), O = n.out_size();
    out.assign(n.tb() * O, 0.0);
    for (int d = 0; d < D; d++) {
      const Dims::WeightOffsets wo = n.weights(l, d);
      const Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      // The initial state into its slot.
      const int init = d == 0 ? 0 : T;
      for (int b = 0; b < B; b++) {
        for (int j = 0; j < P; j++)
          R[co.s + (static_cast<size_t>(init) * B + b) * P + j] =
              inputs[2] ? load_double(state_at(hx, k, b, j), datatype) : 0;
        for (int j = 0; j < H; j++)
          R[co.c + (static_cast<size_t>(init) * B + b) * H + j] =
              inputs[3] ? load_double(state_at(cx, k, b, j), datatype) : 0;
      }
      for (int s = 0; s < T; s++) {
        const int t = d == 0 ? s : T - 1 - s;
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        for (int b = 0; b < B; b++) {
          double* const hp = &R[co.s + (rs * B + b) * P];
          double* const cp = &R[co.c + (rs * B + b) * H];
          double* const hn = &R[co.s + (ws * B + b) * P];
          double* const cn = &R[co.c + (ws * B + b) * H];
          double* const g = &R[co.g + (static_cast<size_t>(t) * B + b) * 4 * H];
          if (t >= len[b]) {  // past the sequence's end: the state carries, y stays 0
            for (int j = 0; j < P; j++) hn[j] = hp[j];
            for (int j = 0; j < H; j++) cn[j] = cp[j];
            continue;
          }
          const double* const xt = &in[(static_cast<size_t>(t) * B + b) * I];
          for (int q = 0; q < 4 * H; q++) {
            double v = n.bias ? W[wo.b_ih + q] + W[wo.b_hh + q] : 0;
            for (size_t f = 0; f < I; f++) v += W[wo.w_ih + q * I + f] * xt[f];
            for (int f = 0; f < P; f++) v += W[wo.w_hh + static_cast<size_t>(q) * P + f] * hp[f];
            pre[q] = v;
          }
          for (int j = 0; j < H; j++) {
            const double ig = sigmoid(pre[j]), fg = sigmoid(pre[H + j]), gg = std::tanh(pre[2 * H + j]),
                         og = sigmoid(pre[3 * H + j]);
            g[j] = ig, g[H + j] = fg, g[2 * H + j] = gg, g[3 * H + j] = og;
            cn[j] = fg * cp[j] + ig * gg;
            m[j] = og * std::tanh(cn[j]);
          }
          if (n.proj) {
            double* const mm = &R[co.m + (static_cast<size_t>(t) * B + b) * H];
            for (int j = 0; j < H; j++) mm[j] = m[j];
            for (int q = 0; q < P; q++) {
              double v = 0;
              for (int j = 0; j < H; j++) v += W[wo.w_hr + static_cast<size_t>(q) * H + j] * m[j];
              hn[q] = v;
            }
          } else {
            for (int j = 0; j < H; j++) hn[j] = m[j];
          }
          for (int j = 0; j < P; j++)
            out[(static_cast<size_t>(t) * B + b) * O + static_cast<size_t>(d) * P + j] = hn[j];
        }
      }
      const int last = d == 0 ? T : 0;
      for (int b = 0; b < B; b++) {
        if (hy)
          for (int j = 0; j < P; j++)
            store_double(state_at(hyl, k, b, j), datatype, R[co.s + (static_cast<size_t>(last) * B + b) * P + j]);
        if (cy)
          for (int j = 0; j < H; j++)
            store_double(state_at(cyl, k, b, j), datatype, R[co.c + (static_cast<size_t>(last) * B + b) * H + j]);
      }
    }
    if (l + 1 < L) {
      in.resize(out.size());
      for (size_t e = 0; e < out.size(); e++) {
        const double f = n.drop ? (keeps(key, e, n.p) ? scale : 0.0) : 1.0;
        if (n.has_factors) R[n.factors(l) + e] = f;
        // The next layer reads its input as the reserve holds it.
        in[e] = rounded(out[e] * f, datatype);
        R[n.layer_input(l + 1) + e] = in[e];
      }
    }
  }
  const Seq y = seq(outputs[0], n, "y");
  const size_t O = n.out_size();
  for (int t = 0; t < T; t++)
    for (int b = 0; b < B; b++)
      for (size_t j = 0; j < O; j++)
        store_double(y.at(t, b, static_cast<int>(j)), datatype, out[(static_cast<size_t>(t) * B + b) * O + j]);
  if (r) {
    const Layout rl = layout_of(r, "r");
    for (size_t e = 0; e < R.size(); e++) store_double(rl.data + e * rl.element_size, datatype, R[e]);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  auto out = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  ccv_nnc_tensor_t *const dy = inputs[0], *const dhy = inputs[1], *const dcy = inputs[2];
  ccv_nnc_tensor_t* const x = inputs[4] ? inputs[4] : outputs[0];  // dx is shaped like x (validated)
  const Dims n = dims_of(cmd.info, x->info.dim);
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L;
  const int datatype = CCV_GET_DATA_TYPE(x->info.datatype);
  std::vector<int> len(static_cast<size_t>(B));
  lengths(inputs[5], n, len.data());
  const std::vector<double> W = gather(inputs[8], "w");
  std::vector<double> R(n.reserve_count());
  {
    const Layout rl = layout_of(inputs[12], "r");
    for (size_t e = 0; e < R.size(); e++) R[e] = load_double(rl.data + e * rl.element_size, datatype);
  }
  ccv_nnc_tensor_t *const dx = out(0), *const dxs = out(1), *const dhx = out(2), *const dcx = out(3),
                          *const dw = out(4);
  std::vector<double> dW(dw ? n.weight_count() : 0, 0.0);
  const size_t O = n.out_size();
  // The gradient of the current layer's output, time-major.
  std::vector<double> dout(n.tb() * O, 0.0);
  if (dy) {
    const Seq s = seq(dy, n, "dy");
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (size_t j = 0; j < O; j++)
          dout[(static_cast<size_t>(t) * B + b) * O + j] = load_double(s.at(t, b, static_cast<int>(j)), datatype);
  }
  std::vector<double> x0;  // layer 0's input, for dw
  if (dw) {
    const Seq s = seq(x, n, "x");
    x0.resize(n.tb() * n.F);
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (int f = 0; f < n.F; f++)
          x0[(static_cast<size_t>(t) * B + b) * n.F + f] = load_double(s.at(t, b, f), datatype);
  }
  const Layout dhyl = dhy ? layout_of(dhy, "dhy") : Layout{}, dcyl = dcy ? layout_of(dcy, "dcy") : Layout{};
  const Layout dhxl = dhx ? layout_of(dhx, "dhx") : Layout{}, dcxl = dcx ? layout_of(dcx, "dcx") : Layout{};
  std::vector<double> din, dh(static_cast<size_t>(B) * P), dc(static_cast<size_t>(B) * H), dm(static_cast<size_t>(H)),
      dpre(4 * static_cast<size_t>(H));
  for (int l = L - 1; l >= 0; l--) {
    const size_t I = n.in_size(l);
    const double* const in = l == 0 ? x0.data() : &R[n.layer_input(l)];
    din.assign(n.tb() * I, 0.0);
    for (int d = 0; d < D; d++) {
      const Dims::WeightOffsets wo = n.weights(l, d);
      const Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      for (int b = 0; b < B; b++) {
        for (int j = 0; j < P; j++)
          dh[static_cast<size_t>(b) * P + j] = dhy ? load_double(state_at(dhyl, k, b, j), datatype) : 0;
        for (int j = 0; j < H; j++)
          dc[static_cast<size_t>(b) * H + j] = dcy ? load_double(state_at(dcyl, k, b, j), datatype) : 0;
      }
      for (int s = 0; s < T; s++) {
        const int t = d == 0 ? T - 1 - s : s;  // the forward's steps, last first
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        for (int b = 0; b < B; b++) {
          if (t >= len[b]) continue;  // the state carried through: so do its gradients
          const size_t tb = static_cast<size_t>(t) * B + b;
          double* const dhb = &dh[static_cast<size_t>(b) * P];
          double* const dcb = &dc[static_cast<size_t>(b) * H];
          for (int j = 0; j < P; j++) dhb[j] += dout[tb * O + static_cast<size_t>(d) * P + j];
          if (n.proj) {
            const double* const mm = &R[co.m + tb * H];
            for (int j = 0; j < H; j++) {
              double v = 0;
              for (int q = 0; q < P; q++) v += W[wo.w_hr + static_cast<size_t>(q) * H + j] * dhb[q];
              dm[j] = v;
            }
            if (dw)
              for (int q = 0; q < P; q++)
                for (int j = 0; j < H; j++) dW[wo.w_hr + static_cast<size_t>(q) * H + j] += dhb[q] * mm[j];
          } else {
            for (int j = 0; j < H; j++) dm[j] = dhb[j];
          }
          const double* const g = &R[co.g + tb * 4 * H];
          const double* const cp = &R[co.c + (rs * B + b) * H];
          const double* const cn = &R[co.c + (ws * B + b) * H];
          const double* const hp = &R[co.s + (rs * B + b) * P];
          for (int j = 0; j < H; j++) {
            const double ig = g[j], fg = g[H + j], gg = g[2 * H + j], og = g[3 * H + j];
            const double tc = std::tanh(cn[j]);
            const double dcv = dcb[j] + dm[j] * og * (1 - tc * tc);
            dpre[j] = dcv * gg * ig * (1 - ig);
            dpre[H + j] = dcv * cp[j] * fg * (1 - fg);
            dpre[2 * H + j] = dcv * ig * (1 - gg * gg);
            dpre[3 * H + j] = dm[j] * tc * og * (1 - og);
            dcb[j] = dcv * fg;
          }
          const double* const xt = dw ? &in[tb * I] : nullptr;
          for (size_t f = 0; f < I; f++) {
            double v = 0;
            for (int q = 0; q < 4 * H; q++) v += W[wo.w_ih + q * I + f] * dpre[q];
            din[tb * I + f] += v;
          }
          for (int f = 0; f < P; f++) {
            double v = 0;
            for (int q = 0; q < 4 * H; q++) v += W[wo.w_hh + static_cast<size_t>(q) * P + f] * dpre[q];
            dhb[f] = v;
          }
          if (dw)
            for (int q = 0; q < 4 * H; q++) {
              for (size_t f = 0; f < I; f++) dW[wo.w_ih + q * I + f] += dpre[q] * xt[f];
              for (int f = 0; f < P; f++) dW[wo.w_hh + static_cast<size_t>(q) * P + f] += dpre[q] * hp[f];
              if (n.bias) dW[wo.b_ih + q] += dpre[q], dW[wo.b_hh + q] += dpre[q];
            }
        }
      }
      for (int b = 0; b < B; b++) {
        if (dhx)
          for (int j = 0; j < P; j++)
            store_double(state_at(dhxl, k, b, j), datatype, dh[static_cast<size_t>(b) * P + j]);
        if (dcx)
          for (int j = 0; j < H; j++)
            store_double(state_at(dcxl, k, b, j), datatype, dc[static_cast<size_t>(b) * H + j]);
      }
    }
    if (l > 0) {  // through the dropout below this layer
      for (size_t e = 0; e < din.size(); e++) dout[e] = n.has_factors ? din[e] * R[n.factors(l - 1) + e] : din[e];
    }
  }
  if (dx) {
    const Seq s = seq(dx, n, "dx");
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (int f = 0; f < n.F; f++)
          store_double(s.at(t, b, f), datatype, din[(static_cast<size_t>(t) * B + b) * n.F + f]);
  }
  if (dw) scatter(dW, dw, "dw");
  if (dxs) ccv_nnc_tensor_zero(dxs);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::lstm
