// The LSTM family inside (the RNN folder: libnnc names the command family
// "rnn", its only member is LSTM). lstm.cpp describes the commands and
// registers the kernels; cpu_ref.cpp holds the plain loops (fp32 / fp64,
// every value through its tensor's strides, arithmetic in double);
// cpu_opt.cpp the fast ones (the input projection of every step as one GEMM,
// one GEMM per step for the recurrence, gate activations fused and
// vectorised: lstm_body.hpp, compiled once per instruction set).
//
// Shapes (T steps, B batch, F input features, H hidden, P = proj_size or H,
// D = 2 if bidirectional else 1, L layers):
//   x   [T, B, F] ([B, T, F] with batch_first), or [T, F] (B = 1)
//   xs  optional int32 [B]: each sequence's length (0..T); steps at or past
//       it leave the state alone and give y = 0 (cuDNN's padded sequences)
//   hx  optional [L·D, B, P] initial h (zeros when absent), cx [L·D, B, H]
//   w   the packed weights (below), any shape with that many elements
//   y   [T, B, D·P] ([B, T, D·P] with batch_first); direction d is at d·P
//   hy  [L·D, B, P], cy [L·D, B, H]: the state after each sequence's last
//       step (for the reverse direction: after step 0)
//   r   the reserve (below), [ceil(n / H), H] by tensor_auto
//
// The packed weights, in PyTorch's order (torch.nn.LSTM's _flat_weights,
// concatenated), which is also cuDNN's order of gates: for each layer l, for
// each direction d (forward first), one block of
//   W_ih [4H, in_l]   in_l = F for layer 0, D·P above it
//   W_hh [4H, P]
//   b_ih [4H], b_hh [4H]         (only with bias)
//   W_hr [P, H]                  (only with proj_size)
// where the 4H rows are the gates i, f, g, o in that order. A step:
//   [i f g o] = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh
//   i, f, o = sigmoid(.), g = tanh(.)
//   c_t = f c_{t-1} + i g,  h_t = o tanh(c_t)   (with proj: h_t = W_hr (o tanh(c_t)))
// Layer l > 0 reads layer l-1's output (both directions concatenated),
// dropped out (dropout > 0 and not is_test: kept with probability 1 - p and
// scaled by 1 / (1 - p)).
//
// The reserve (elements of x's type; what the backward reads, so that it
// needs neither cx nor hy / cy). First, for each layer l and direction d
// (index l·D + d), a cell block of
//   G  [T, B, 4H]     the activated gates i, f, g, o of each step
//   C  [T+1, B, H]    the cell states, by slot (below)
//   S  [T+1, B, P]    the hidden states h, by slot
//   M  [T, B, H]      o tanh(c) before the projection (only with proj_size)
// where the state after step t is in slot t+1 for the forward direction and
// slot t for the reverse one, and the initial state in slot 0 (forward) or
// slot T (reverse): so the state a step reads is in slot t (forward) or t+1
// (reverse). Steps past a sequence's end carry the state (their G is 0).
// Then the inputs of layers 1..L-1 after dropout, [T, B, D·P] each; then,
// when dropout > 0 and L > 1, the dropout factors of layers 0..L-2, [T, B,
// D·P] each (0 or 1 / (1 - p); 1 under is_test). Time-major throughout.
//
// Dropout is reproducible: each forward draws one 32-bit seed from its
// stream's generator (ccv_nnc_stream_context_set_seed), and factor k (its
// index in the factors' region) keeps when splitmix64's output for (seed, k)
// as a 53-bit fraction is >= p. The backward reads the factors back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.hpp"
#include "core/splitmix.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::lstm {

// The sizes of one execution, from the command's parameters and x's shape.
struct Dims {
  int T = 0, B = 0, F = 0, H = 0, P = 0, L = 0, D = 1;
  bool proj = false, bias = false, batch_first = false, drop = false;
  double p = 0;              // dropout probability (0 when not dropping)
  bool has_factors = false;  // the reserve has a dropout region (dropout > 0 and L > 1)

  size_t in_size(int l) const { return l == 0 ? static_cast<size_t>(F) : static_cast<size_t>(D) * P; }
  size_t out_size() const { return static_cast<size_t>(D) * P; }
  // Elements of one (layer, direction) block of the weights.
  size_t weight_block(int l) const {
    const size_t h4 = 4 * static_cast<size_t>(H);
    return h4 * in_size(l) + h4 * P + (bias ? 2 * h4 : 0) + (proj ? static_cast<size_t>(P) * H : 0);
  }
  size_t weight_count() const {
    size_t n = 0;
    for (int l = 0; l < L; l++) n += D * weight_block(l);
    return n;
  }
  // Offsets of one block's parts (bias offsets meaningless without bias).
  struct WeightOffsets {
    size_t w_ih, w_hh, b_ih, b_hh, w_hr;
  };
  WeightOffsets weights(int l, int d) const {
    size_t base = 0;
    for (int k = 0; k < l; k++) base += D * weight_block(k);
    base += d * weight_block(l);
    WeightOffsets o;
    const size_t h4 = 4 * static_cast<size_t>(H);
    o.w_ih = base;
    o.w_hh = o.w_ih + h4 * in_size(l);
    o.b_ih = o.w_hh + h4 * P;
    o.b_hh = o.b_ih + h4;
    o.w_hr = bias ? o.b_hh + h4 : o.b_ih;
    return o;
  }

  size_t tb() const { return static_cast<size_t>(T) * B; }
  size_t cell_block() const { return tb() * 4 * H + (tb() + B) * H + (tb() + B) * P + (proj ? tb() * H : 0); }
  struct CellOffsets {
    size_t g, c, s, m;
  };
  CellOffsets cell(int l, int d) const {
    CellOffsets o;
    o.g = (static_cast<size_t>(l) * D + d) * cell_block();
    o.c = o.g + tb() * 4 * H;
    o.s = o.c + (tb() + B) * H;
    o.m = o.s + (tb() + B) * P;
    return o;
  }
  // Layer l's input after dropout (l >= 1).
  size_t layer_input(int l) const { return L * D * cell_block() + (l - 1) * tb() * out_size(); }
  // The dropout factors applied to layer l's output (l <= L - 2).
  size_t factors(int l) const { return L * D * cell_block() + (L - 1 + l) * tb() * out_size(); }
  size_t reserve_count() const { return L * D * cell_block() + (L - 1) * tb() * out_size() * (has_factors ? 2 : 1); }
  // The slot a step of direction d reads its state from, and writes it to.
  int read_slot(int d, int t) const { return d == 0 ? t : t + 1; }
  int write_slot(int d, int t) const { return d == 0 ? t + 1 : t; }
};

// Dims from the command's parameters and x's shape (no checks).
Dims dims_of(const ccv_nnc_cmd_param_t& p, const int* xdim);

// The dropout factor of element k of the factors' region: keep (1 / (1 - p))
// or drop (0).
inline bool keeps(uint64_t key, uint64_t k, double p) {
  const uint64_t w = nnc::mix64(key + (k + 1) * 0x9e3779b97f4a7c15ull);
  return static_cast<double>(w >> 11) * 0x1.0p-53 >= p;
}
inline uint64_t dropout_key(uint32_t seed) { return nnc::mix64(0x3c6ef372fe94f82bull ^ seed); }

// The reserve's size in elements, by libnnc's signature for the command's
// aux (ccv_nnc_cmd_aux): (cmd, datatype, feature_size, batch_count,
// max_seq_count). An element count, not bytes: tensor_auto makes rows of
// hidden_size elements of x's type from it.
size_t reserve_size(const ccv_nnc_cmd_t cmd, const int datatype, const int feature_size, const int batch_count,
                    const int max_seq_count);

// Sequence lengths from xs (T for each without it); throws on a bad one.
void lengths(const ccv_nnc_tensor_t* xs, const Dims& n, int* len);

NNC_KERNEL(forward_ref);
NNC_KERNEL(backward_ref);
NNC_KERNEL(forward_opt);
NNC_KERNEL(backward_opt);

// The fused element-wise parts of a step (lstm_body.hpp), fp32, per
// instruction set, over the hidden units [u0, u1) of the batch rows [b0, b1):
//   forward_cell: pre [B, 4H] holds the gate pre-activations (overwritten by
//     the activated gates), to which gh adds (when not NULL) the recurrent
//     part: gate g of unit j of row b at gh[b·ldg + g·gstride + j - u0];
//     c_prev / c_out, m_out [B, H]: c_t and o tanh(c_t). Rows with
//     valid[b] == 0 get gates 0, carry c_prev, and m = h_prev (0 when NULL).
//   backward_cell: from the step's activated gates [B, 4H], c_prev, c [B, H],
//     dm [B, H] (the gradient of o tanh(c)) and dc [B, H] (carried, updated in
//     place to the gradient of c_prev), writes dpre [B, 4H]; rows not valid
//     get dpre 0 and keep dc.
#define NNC_LSTM_LOOPS                                                                                        \
  void forward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, float* pre,      \
                    const float* gh, int ldg, int gstride, const float* c_prev, float* c_out, float* m_out,   \
                    const float* h_prev);                                                                     \
  void backward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, const float* g, \
                     const float* c_prev, const float* c, const float* dm, float* dc, float* dpre);
namespace generic {
NNC_LSTM_LOOPS
}
namespace avx2 {
NNC_LSTM_LOOPS
}
namespace avx512 {
NNC_LSTM_LOOPS
}
#undef NNC_LSTM_LOOPS

}  // namespace nnc::lstm
