// The GPU LSTM's schedule (cuda/lstm_gpu.cpp) as host code: which GEMM and
// which fused kernel runs when, on which part of which buffer, for LSTM
// forward and backward (fp32, packed tensors), written once against an
// `Ops` object that either queues the work on a GPU (cuBLAS + the kernels of
// cuda/lstm_kernels.cu) or, in test/unit/gpu_misc, runs the same steps with
// plain loops on the CPU, so the whole schedule (slots, offsets, masks, the
// reserve layout of cmd/rnn/lstm.hpp) is checked against CPU_REF without a GPU.
//
// The plan (T steps, B batch, H hidden, P = proj or H, per layer l and
// direction d):
//   forward:  G = in W_ih^T (+ b_ih + b_hh) for all steps (one GEMM), then per
//             step Gh = h_prev W_hh^T (a GEMM) and the fused cell (gates, c,
//             m = o tanh c, carried state past a sequence's end); with a
//             projection h = m W_hr^T (a GEMM). The states live in the
//             reserve's slots, so the backward reads them back.
//   backward: per step (last first) dh += dy_t, dm = dh W_hr (projection),
//             the fused cell gradient into dpre_t, dh = dpre_t W_hh; then for
//             all steps at once din (+)= dpre W_ih, dW_ih += dpre^T in, dW_hh
//             += dpre^T h_prev, the bias sums, dW_hr += dh^T m.
//
// Ops (device pointers; every call queued in order):
//   float* scratch(size_t n)                        n floats, for this call
//   void gemm(const Gemm&)
//   void fill(float* p, size_t n)                   zeros
//   void lengths(const int* xs, int B, int T, int* len)      len = xs or T
//   void seq_to_tm(float* dst, const float* src, int T, int B, int F, bool batch_first)
//   void tm_to_seq(float* dst, const float* src, int T, int B, int F, bool batch_first)
//   void state_in(float* dst, const float* state, int k, int B, int W)   dst = state[k] or 0
//   void state_out(float* state, int k, const float* src, int B, int W)
//   void add_bias(float* g, size_t rows, int H4, const float* b_ih, const float* b_hh)
//   void cell_forward(const CellForward&)
//   void carry_rows(float* dst, const float* src, int B, int W, const int* len, int t)
//   void write_y(const WriteY&)
//   void dropout(const float* out, float* next, float* factors, size_t n, uint64_t key, double p, float scale, bool
//   drop) void dh_add(float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P, const int* len, int t) void
//   cell_backward(const CellBackward&) void select_rows(float* dh, const float* dh2, int B, int W, const int* len, int
//   t) void bias_grad(float* db_ih, float* db_hh, const float* dpre, size_t rows, int H4) void scale_by(float* dst,
//   const float* src, const float* factors, size_t n)   factors NULL: copy
#pragma once

#include <cstddef>
#include <cstdint>

#include "cmd/rnn/lstm.hpp"

namespace nnc::gpu_lstm {

// Row-major C = alpha op(A) op(B) + beta C, op(A) M x K, op(B) K x N.
struct Gemm {
  bool ta = false, tb = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1;
  const float* A = nullptr;
  int lda = 0;
  const float* B = nullptr;
  int ldb = 0;
  float beta = 0;
  float* C = nullptr;
  int ldc = 0;
};

// The same product as a column-major BLAS (cuBLAS) is asked for it: the
// row-major C is the column-major C^T = op(B)^T op(A)^T, so the operands
// swap: first B (with tb), then A (with ta), m = N, n = M.
struct ColumnMajor {
  bool t1, t2;
  int m, n, k;
  const float* A1;
  int ld1;
  const float* A2;
  int ld2;
  float* C;
  int ldc;
  float alpha, beta;
};
inline ColumnMajor column_major(const Gemm& g) {
  return {g.tb, g.ta, g.N, g.M, g.K, g.B, g.ldb, g.A, g.lda, g.C, g.ldc, g.alpha, g.beta};
}

// A step's fused forward cell over (b, j) in [B] x [H]: rows with t <
// len[b] take pre = g_t + gh, write the gates over g_t, c_out and m (into
// h_out without a projection, into m_out with one); other rows get gates 0,
// c_out = c_prev, h_out = h_prev (no projection) or m_out = 0.
struct CellForward {
  float* g_t = nullptr;       // [B, 4H]
  const float* gh = nullptr;  // [B, 4H]
  const float* c_prev = nullptr;
  float* c_out = nullptr;  // [B, H]
  const float* h_prev = nullptr;
  float* h_out = nullptr;  // [B, H] without a projection, else NULL
  float* m_out = nullptr;  // [B, H] with a projection, else NULL
  int B = 0, H = 0, t = 0;
  const int* len = nullptr;
};

// y's part of direction d: out[(t B + b) O + off + j] = S[slot(t)][b][j] or 0
// past a sequence's end.
struct WriteY {
  float* out = nullptr;
  int O = 0, off = 0;
  const float* S = nullptr;  // the direction's state slots [T + 1, B, P]
  int T = 0, B = 0, P = 0, d = 0;
  const int* len = nullptr;
};

// A step's fused backward cell over (b, j): rows with t < len[b] write
// dpre_t and update dc; other rows get dpre_t 0 and keep dc.
struct CellBackward {
  const float* g_t = nullptr;  // the activated gates [B, 4H]
  const float* c_prev = nullptr;
  const float* c_now = nullptr;
  const float* dm = nullptr;  // [B, H]
  float* dc = nullptr;        // [B, H], in / out
  float* dpre_t = nullptr;    // [B, 4H]
  int B = 0, H = 0, t = 0;
  const int* len = nullptr;
};

struct Forward {
  const float* x = nullptr;  // packed, [T, B, F] or [B, T, F]
  const int* xs = nullptr;
  const float *hx = nullptr, *cx = nullptr, *w = nullptr;
  float *y = nullptr, *hy = nullptr, *cy = nullptr, *r = nullptr;  // r NULL: scratch
};

template <class Ops>
void forward(Ops& ops, const lstm::Dims& n, const Forward& a, uint64_t key, float scale) {
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L, H4 = 4 * H;
  const size_t tb = n.tb(), O = n.out_size();
  if (tb == 0) return;
  int* len = reinterpret_cast<int*>(ops.scratch(static_cast<size_t>(B)));
  ops.lengths(a.xs, B, T, len);
  float* R = a.r ? a.r : ops.scratch(n.reserve_count());
  float* x0 = ops.scratch(tb * n.F);
  ops.seq_to_tm(x0, a.x, T, B, n.F, n.batch_first);
  float* out = ops.scratch(tb * O);
  float* gh = ops.scratch(static_cast<size_t>(B) * H4);
  const float* in = x0;
  for (int l = 0; l < L; l++) {
    const int I = static_cast<int>(n.in_size(l));
    for (int d = 0; d < D; d++) {
      const lstm::Dims::WeightOffsets wo = n.weights(l, d);
      const lstm::Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      float *const G = R + co.g, *const C = R + co.c, *const S = R + co.s, *const M = R + co.m;
      const int init = d == 0 ? 0 : T;
      ops.state_in(S + static_cast<size_t>(init) * B * P, a.hx, k, B, P);
      ops.state_in(C + static_cast<size_t>(init) * B * H, a.cx, k, B, H);
      Gemm g;
      g.tb = true, g.M = static_cast<int>(tb), g.N = H4, g.K = I, g.A = in, g.lda = I, g.B = a.w + wo.w_ih, g.ldb = I;
      g.C = G, g.ldc = H4;
      ops.gemm(g);
      if (n.bias) ops.add_bias(G, tb, H4, a.w + wo.b_ih, a.w + wo.b_hh);
      for (int s = 0; s < T; s++) {
        const int t = d == 0 ? s : T - 1 - s;
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        Gemm r;
        r.tb = true, r.M = B, r.N = H4, r.K = P, r.A = S + rs * B * P, r.lda = P, r.B = a.w + wo.w_hh, r.ldb = P;
        r.C = gh, r.ldc = H4;
        ops.gemm(r);
        CellForward c;
        c.g_t = G + static_cast<size_t>(t) * B * H4, c.gh = gh;
        c.c_prev = C + rs * B * H, c.c_out = C + ws * B * H;
        c.h_prev = S + rs * B * P;
        if (n.proj)
          c.m_out = M + static_cast<size_t>(t) * B * H;
        else
          c.h_out = S + ws * B * P;
        c.B = B, c.H = H, c.t = t, c.len = len;
        ops.cell_forward(c);
        if (n.proj) {
          Gemm p;
          p.tb = true, p.M = B, p.N = P, p.K = H, p.A = c.m_out, p.lda = H, p.B = a.w + wo.w_hr, p.ldb = H;
          p.C = S + ws * B * P, p.ldc = P;
          ops.gemm(p);
          ops.carry_rows(S + ws * B * P, S + rs * B * P, B, P, len, t);
        }
      }
      WriteY wy;
      wy.out = out, wy.O = static_cast<int>(O), wy.off = d * P, wy.S = S, wy.T = T, wy.B = B, wy.P = P, wy.d = d;
      wy.len = len;
      ops.write_y(wy);
      const int last = d == 0 ? T : 0;
      if (a.hy) ops.state_out(a.hy, k, S + static_cast<size_t>(last) * B * P, B, P);
      if (a.cy) ops.state_out(a.cy, k, C + static_cast<size_t>(last) * B * H, B, H);
    }
    if (l + 1 < L) {
      float* next = R + n.layer_input(l + 1);
      ops.dropout(out, next, n.has_factors ? R + n.factors(l) : nullptr, tb * O, key, n.p, scale, n.drop);
      in = next;
    }
  }
  ops.tm_to_seq(a.y, out, T, B, static_cast<int>(O), n.batch_first);
}

struct Backward {
  const float *dy = nullptr, *dhy = nullptr, *dcy = nullptr;
  const float* x = nullptr;  // needed for dw
  const int* xs = nullptr;
  const float* w = nullptr;
  const float* r = nullptr;
  float *dx = nullptr, *dhx = nullptr, *dcx = nullptr, *dw = nullptr;
};

template <class Ops>
void backward(Ops& ops, const lstm::Dims& n, const Backward& a) {
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L, H4 = 4 * H;
  const size_t tb = n.tb(), O = n.out_size();
  if (a.dw) ops.fill(a.dw, n.weight_count());
  if (tb == 0) return;
  const float* const R = a.r;
  int* len = reinterpret_cast<int*>(ops.scratch(static_cast<size_t>(B)));
  ops.lengths(a.xs, B, T, len);
  const float* x0 = nullptr;
  if (a.dw) {
    float* x0s = ops.scratch(tb * n.F);
    ops.seq_to_tm(x0s, a.x, T, B, n.F, n.batch_first);
    x0 = x0s;
  }
  size_t widest = n.F;
  for (int l = 1; l < L; l++) widest = widest > n.in_size(l) ? widest : n.in_size(l);
  float* dout = ops.scratch(tb * (O > widest ? O : widest));
  if (a.dy)
    ops.seq_to_tm(dout, a.dy, T, B, static_cast<int>(O), n.batch_first);
  else
    ops.fill(dout, tb * O);
  float* din = ops.scratch(tb * widest);
  float* dh = ops.scratch(static_cast<size_t>(B) * P);
  float* dh2 = ops.scratch(static_cast<size_t>(B) * P);
  float* dc = ops.scratch(static_cast<size_t>(B) * H);
  float* dm = n.proj ? ops.scratch(static_cast<size_t>(B) * H) : dh;
  float* dpre = ops.scratch(tb * H4);
  float* DH = n.proj ? ops.scratch(tb * P) : nullptr;
  for (int l = L - 1; l >= 0; l--) {
    const int I = static_cast<int>(n.in_size(l));
    const float* in = l == 0 ? x0 : R + n.layer_input(l);
    for (int d = 0; d < D; d++) {
      const lstm::Dims::WeightOffsets wo = n.weights(l, d);
      const lstm::Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      const float *const G = R + co.g, *const C = R + co.c, *const S = R + co.s, *const M = R + co.m;
      ops.state_in(dh, a.dhy, k, B, P);
      ops.state_in(dc, a.dcy, k, B, H);
      for (int s = 0; s < T; s++) {
        const int t = d == 0 ? T - 1 - s : s;
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        float* dh_t = DH ? DH + static_cast<size_t>(t) * B * P : nullptr;
        ops.dh_add(dh, dh_t, dout + static_cast<size_t>(t) * B * O + static_cast<size_t>(d) * P, static_cast<int>(O), B,
                   P, len, t);
        if (n.proj) {
          Gemm p;
          p.M = B, p.N = H, p.K = P, p.A = dh, p.lda = P, p.B = a.w + wo.w_hr, p.ldb = H, p.C = dm, p.ldc = H;
          ops.gemm(p);
        }
        CellBackward c;
        c.g_t = G + static_cast<size_t>(t) * B * H4, c.c_prev = C + rs * B * H, c.c_now = C + ws * B * H;
        c.dm = dm, c.dc = dc, c.dpre_t = dpre + static_cast<size_t>(t) * B * H4;
        c.B = B, c.H = H, c.t = t, c.len = len;
        ops.cell_backward(c);
        Gemm r;
        r.M = B, r.N = P, r.K = H4, r.A = c.dpre_t, r.lda = H4, r.B = a.w + wo.w_hh, r.ldb = P, r.C = dh2, r.ldc = P;
        ops.gemm(r);
        ops.select_rows(dh, dh2, B, P, len, t);
      }
      Gemm gi;  // din (+)= dpre W_ih
      gi.M = static_cast<int>(tb), gi.N = I, gi.K = H4, gi.A = dpre, gi.lda = H4, gi.B = a.w + wo.w_ih, gi.ldb = I;
      gi.beta = d == 0 ? 0.f : 1.f, gi.C = din, gi.ldc = I;
      ops.gemm(gi);
      if (a.dw) {
        Gemm wi;  // dW_ih += dpre^T in
        wi.ta = true, wi.M = H4, wi.N = I, wi.K = static_cast<int>(tb), wi.A = dpre, wi.lda = H4, wi.B = in, wi.ldb = I;
        wi.beta = 1, wi.C = a.dw + wo.w_ih, wi.ldc = I;
        ops.gemm(wi);
        Gemm wh;  // dW_hh += dpre^T h_prev (the read slots: 0 .. T-1 forward, 1 .. T reverse)
        wh.ta = true, wh.M = H4, wh.N = P, wh.K = static_cast<int>(tb), wh.A = dpre, wh.lda = H4;
        wh.B = S + (d == 0 ? 0 : static_cast<size_t>(B) * P), wh.ldb = P, wh.beta = 1, wh.C = a.dw + wo.w_hh,
        wh.ldc = P;
        ops.gemm(wh);
        if (n.bias) ops.bias_grad(a.dw + wo.b_ih, a.dw + wo.b_hh, dpre, tb, H4);
        if (n.proj) {
          Gemm wr;  // dW_hr += DH^T m
          wr.ta = true, wr.M = P, wr.N = H, wr.K = static_cast<int>(tb), wr.A = DH, wr.lda = P, wr.B = M, wr.ldb = H;
          wr.beta = 1, wr.C = a.dw + wo.w_hr, wr.ldc = H;
          ops.gemm(wr);
        }
      }
      if (a.dhx) ops.state_out(a.dhx, k, dh, B, P);
      if (a.dcx) ops.state_out(a.dcx, k, dc, B, H);
    }
    if (l > 0) ops.scale_by(dout, din, n.has_factors ? R + n.factors(l - 1) : nullptr, tb * I);
  }
  if (a.dx) ops.tm_to_seq(a.dx, din, T, B, n.F, n.batch_first);
}

}  // namespace nnc::gpu_lstm
