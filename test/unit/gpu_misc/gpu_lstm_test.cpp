// The GPU LSTM's schedule (cmd/common/gpu_lstm.hpp) run on the CPU: every
// GEMM through the same column-major call cuBLAS gets (gpu_lstm::column_major,
// evaluated by a plain column-major loop), every fused kernel as a loop over
// its threads' elements with the cell formulas of cmd/common/gpu_misc.hpp,
// against CPU_REF's LSTM forward (y, hy, cy and the whole reserve) and
// backward (dx, dhx, dcx, dw), on random inputs with fixed seeds: bias or
// not, one or two directions, one to three layers, a projection, batch
// first, sequence lengths with 0 and T, absent states, dropout read back from
// CPU_REF's reserve (and is_test). The backward also reads CPU_REF's reserve,
// as a GPU backward reads a CPU forward's.
//
// Tolerance: the schedule computes in float, CPU_REF in double. Values are
// O(1) and each passes through at most T = 7 steps of a few dozen float
// multiply-adds: differences stay below 1e-5; rtol 1e-4, atol 2e-5 (the
// weight gradients sum T B products: atol 1e-4). A wrong slot, offset, mask
// or transpose moves values by 1e-2 or more.
#include "cmd/common/gpu_lstm.hpp"

#include <gtest/gtest.h>

#include "host_tensor.hpp"

#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "cmd/common/gpu_misc.hpp"
#include "cmd/rnn/lstm.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using namespace nnc::gpu_lstm;

// The Ops of gpu_lstm.hpp as CPU loops, one "thread" element at a time.
struct CpuOps {
  std::deque<std::vector<float>> blocks;
  float* scratch(size_t n) {
    blocks.emplace_back(n + 1, std::nanf(""));  // NaN: a buffer read before it is written shows
    return blocks.back().data();
  }
  void gemm(const Gemm& g) {
    const ColumnMajor c = column_major(g);
    // cuBLAS's own checks (CUBLAS_STATUS_INVALID_VALUE otherwise).
    EXPECT_GE(c.ld1, std::max(1, c.t1 ? c.k : c.m));
    EXPECT_GE(c.ld2, std::max(1, c.t2 ? c.n : c.k));
    EXPECT_GE(c.ldc, std::max(1, c.m));
    EXPECT_TRUE(c.m >= 0 && c.n >= 0 && c.k >= 0);
    for (int i = 0; i < c.m; i++)
      for (int j = 0; j < c.n; j++) {
        double s = 0;
        for (int p = 0; p < c.k; p++) {
          const float a = c.t1 ? c.A1[p + static_cast<size_t>(i) * c.ld1] : c.A1[i + static_cast<size_t>(p) * c.ld1];
          const float b = c.t2 ? c.A2[j + static_cast<size_t>(p) * c.ld2] : c.A2[p + static_cast<size_t>(j) * c.ld2];
          s += static_cast<double>(a) * b;
        }
        float& out = c.C[i + static_cast<size_t>(j) * c.ldc];
        out = static_cast<float>(c.alpha * s + (c.beta == 0 ? 0.0 : c.beta * static_cast<double>(out)));
      }
  }
  void fill(float* p, size_t n) { std::fill(p, p + n, 0.f); }
  void lengths(const int* xs, int B, int T, int* len) {
    for (int b = 0; b < B; b++) len[b] = xs ? std::min(std::max(xs[b], 0), T) : T;
  }
  static size_t seq_at(int t, int b, int f, int T, int B, int F, bool bf) {
    return bf ? (static_cast<size_t>(b) * T + t) * F + f : (static_cast<size_t>(t) * B + b) * F + f;
  }
  void seq_to_tm(float* dst, const float* src, int T, int B, int F, bool bf) {
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (int f = 0; f < F; f++) dst[(static_cast<size_t>(t) * B + b) * F + f] = src[seq_at(t, b, f, T, B, F, bf)];
  }
  void tm_to_seq(float* dst, const float* src, int T, int B, int F, bool bf) {
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++)
        for (int f = 0; f < F; f++) dst[seq_at(t, b, f, T, B, F, bf)] = src[(static_cast<size_t>(t) * B + b) * F + f];
  }
  void state_in(float* dst, const float* state, int k, int B, int W) {
    for (int i = 0; i < B * W; i++) dst[i] = state ? state[static_cast<size_t>(k) * B * W + i] : 0.f;
  }
  void state_out(float* state, int k, const float* src, int B, int W) {
    for (int i = 0; i < B * W; i++) state[static_cast<size_t>(k) * B * W + i] = src[i];
  }
  void add_bias(float* g, size_t rows, int H4, const float* bi, const float* bh) {
    for (size_t r = 0; r < rows; r++)
      for (int q = 0; q < H4; q++) g[r * H4 + q] += bi[q] + bh[q];
  }
  void cell_forward(const CellForward& c) {
    for (int b = 0; b < c.B; b++)
      for (int j = 0; j < c.H; j++) {
        float* g = c.g_t + static_cast<size_t>(b) * 4 * c.H;
        const float* gh = c.gh + static_cast<size_t>(b) * 4 * c.H;
        const size_t e = static_cast<size_t>(b) * c.H + j;
        if (c.t >= c.len[b]) {
          for (int q = 0; q < 4; q++) g[q * c.H + j] = 0;
          c.c_out[e] = c.c_prev[e];
          if (c.h_out) c.h_out[e] = c.h_prev[e];
          if (c.m_out) c.m_out[e] = 0;
          continue;
        }
        float gates[4], cn, m;
        nnc::gpu::lstm_cell(g[j] + gh[j], g[c.H + j] + gh[c.H + j], g[2 * c.H + j] + gh[2 * c.H + j],
                            g[3 * c.H + j] + gh[3 * c.H + j], c.c_prev[e], gates, &cn, &m);
        for (int q = 0; q < 4; q++) g[q * c.H + j] = gates[q];
        c.c_out[e] = cn;
        (c.h_out ? c.h_out : c.m_out)[e] = m;
      }
  }
  void carry_rows(float* dst, const float* src, int B, int W, const int* len, int t) {
    for (int b = 0; b < B; b++)
      if (t >= len[b])
        for (int j = 0; j < W; j++) dst[static_cast<size_t>(b) * W + j] = src[static_cast<size_t>(b) * W + j];
  }
  void write_y(const WriteY& w) {
    for (int t = 0; t < w.T; t++)
      for (int b = 0; b < w.B; b++)
        for (int j = 0; j < w.P; j++) {
          const int slot = w.d == 0 ? t + 1 : t;
          w.out[(static_cast<size_t>(t) * w.B + b) * w.O + w.off + j] =
              t < w.len[b] ? w.S[(static_cast<size_t>(slot) * w.B + b) * w.P + j] : 0.f;
        }
  }
  void dropout(const float* out, float* next, float* factors, size_t n, uint64_t key, double p, float scale,
               bool drop) {
    for (size_t e = 0; e < n; e++) {
      const float f = drop ? (nnc::gpu::lstm_keeps(key, e, p) ? scale : 0.f) : 1.f;
      if (factors) factors[e] = f;
      next[e] = out[e] * f;
    }
  }
  void dh_add(float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P, const int* len, int t) {
    for (int b = 0; b < B; b++)
      for (int j = 0; j < P; j++) {
        const size_t e = static_cast<size_t>(b) * P + j;
        const bool valid = t < len[b];
        if (valid) dh[e] += dout_t[static_cast<size_t>(b) * ldo + j];
        if (dh_t) dh_t[e] = valid ? dh[e] : 0.f;
      }
  }
  void cell_backward(const CellBackward& c) {
    for (int b = 0; b < c.B; b++)
      for (int j = 0; j < c.H; j++) {
        float* dp = c.dpre_t + static_cast<size_t>(b) * 4 * c.H;
        const size_t e = static_cast<size_t>(b) * c.H + j;
        if (c.t >= c.len[b]) {
          for (int q = 0; q < 4; q++) dp[q * c.H + j] = 0;
          continue;
        }
        const float* g = c.g_t + static_cast<size_t>(b) * 4 * c.H;
        const float gates[4] = {g[j], g[c.H + j], g[2 * c.H + j], g[3 * c.H + j]};
        float d[4];
        nnc::gpu::lstm_cell_grad(gates, c.c_prev[e], c.c_now[e], c.dm[e], &c.dc[e], d);
        for (int q = 0; q < 4; q++) dp[q * c.H + j] = d[q];
      }
  }
  void select_rows(float* dh, const float* dh2, int B, int W, const int* len, int t) {
    for (int b = 0; b < B; b++)
      if (t < len[b])
        for (int j = 0; j < W; j++) dh[static_cast<size_t>(b) * W + j] = dh2[static_cast<size_t>(b) * W + j];
  }
  void bias_grad(float* bi, float* bh, const float* dpre, size_t rows, int H4) {
    for (int q = 0; q < H4; q++) {
      double s = 0;
      for (size_t r = 0; r < rows; r++) s += dpre[r * H4 + q];
      bi[q] += static_cast<float>(s), bh[q] += static_cast<float>(s);
    }
  }
  void scale_by(float* dst, const float* src, const float* factors, size_t n) {
    for (size_t e = 0; e < n; e++) dst[e] = factors ? src[e] * factors[e] : src[e];
  }
};

using gpu_misc_test::Tensor;

void expect_near(const float* mine, const float* ref, size_t n, double rtol, double atol, const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (!(std::fabs(mine[i] - ref[i]) <= atol + rtol * std::fabs(ref[i])) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << mine[i] << ", CPU_REF " << ref[i];
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " differ";
}

struct Case {
  int T, B, F, H, proj, L;
  bool bias, bidirectional, batch_first, lengths, states;
  float dropout;
  bool is_test;
};

void run_case(const Case& k, std::mt19937& rng) {
  const std::string what = "LSTM T" + std::to_string(k.T) + " B" + std::to_string(k.B) + " H" + std::to_string(k.H) +
                           " L" + std::to_string(k.L) + (k.bidirectional ? " bi" : "") + (k.proj ? " proj" : "") +
                           (k.batch_first ? " batch_first" : "") + (k.lengths ? " xs" : "") +
                           (k.dropout > 0 ? " dropout" : "");
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.rnn.hidden_size = k.H, p.rnn.proj_size = k.proj, p.rnn.num_layers = k.L, p.rnn.bias = k.bias;
  p.rnn.batch_first = k.batch_first, p.rnn.bidirectional = k.bidirectional, p.rnn.dropout = k.dropout;
  p.rnn.is_test = k.is_test;
  ccv_nnc_cmd_t fwd = ccv_nnc_cmd(CCV_NNC_LSTM_FORWARD, nullptr, p, 0);
  fwd.backend = CCV_NNC_BACKEND_CPU_REF;
  const std::vector<int> xdim = k.batch_first ? std::vector<int>{k.B, k.T, k.F} : std::vector<int>{k.T, k.B, k.F};
  int xd[CCV_NNC_MAX_DIM_ALLOC] = {};
  std::copy(xdim.begin(), xdim.end(), xd);
  const nnc::lstm::Dims n = nnc::lstm::dims_of(p, xd);
  const int O = static_cast<int>(n.out_size());
  Tensor x(CCV_32F, xdim), w(CCV_32F, {static_cast<int>(n.weight_count())});
  Tensor xs(CCV_32S, {k.B});
  Tensor hx(CCV_32F, {k.L * n.D, k.B, n.P}), cx(CCV_32F, {k.L * n.D, k.B, k.H});
  Tensor y(CCV_32F, k.batch_first ? std::vector<int>{k.B, k.T, O} : std::vector<int>{k.T, k.B, O});
  Tensor hy(CCV_32F, {k.L * n.D, k.B, n.P}), cy(CCV_32F, {k.L * n.D, k.B, k.H});
  Tensor r(CCV_32F, {static_cast<int>(n.reserve_count())});
  std::uniform_real_distribution<float> u(-1, 1), uw(-0.6f, 0.6f);
  for (size_t i = 0; i < x.count(); i++) x.f()[i] = u(rng);
  for (size_t i = 0; i < w.count(); i++) w.f()[i] = uw(rng);
  for (size_t i = 0; i < hx.count(); i++) hx.f()[i] = u(rng);
  for (size_t i = 0; i < cx.count(); i++) cx.f()[i] = u(rng);
  for (int b = 0; b < k.B; b++) xs.t->data.i32[b] = b == 0 ? k.T : b == 1 ? 0 : 1 + static_cast<int>(rng() % k.T);
  ccv_nnc_tensor_t* ins[5] = {x.t, k.lengths ? xs.t : nullptr, k.states ? hx.t : nullptr, k.states ? cx.t : nullptr,
                              w.t};
  ccv_nnc_tensor_t* outs[4] = {y.t, hy.t, cy.t, r.t};
  ASSERT_EQ(ccv_nnc_cmd_exec(fwd, ccv_nnc_no_hint, 0, ins, 5, outs, 4, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  const bool dropping = n.drop;
  if (!dropping) {  // the forward's dropout key is drawn inside CPU_REF: compare only without it
    CpuOps ops;
    std::vector<float> my(y.count()), myhy(hy.count()), mycy(cy.count()), myr(r.count());
    Forward f;
    f.x = x.f(), f.xs = k.lengths ? xs.t->data.i32 : nullptr, f.hx = k.states ? hx.f() : nullptr;
    f.cx = k.states ? cx.f() : nullptr, f.w = w.f(), f.y = my.data(), f.hy = myhy.data(), f.cy = mycy.data();
    f.r = myr.data();
    forward(ops, n, f, 0, 1.f);
    expect_near(my.data(), y.f(), y.count(), 1e-4, 2e-5, what + " y");
    expect_near(myhy.data(), hy.f(), hy.count(), 1e-4, 2e-5, what + " hy");
    expect_near(mycy.data(), cy.f(), cy.count(), 1e-4, 2e-5, what + " cy");
    expect_near(myr.data(), r.f(), n.reserve_count(), 1e-4, 2e-5, what + " reserve");
  }
  // Backward from CPU_REF's reserve.
  ccv_nnc_cmd_t bwd = fwd;
  bwd.cmd = CCV_NNC_LSTM_BACKWARD;
  Tensor dy(CCV_32F, k.batch_first ? std::vector<int>{k.B, k.T, O} : std::vector<int>{k.T, k.B, O});
  Tensor dhy(CCV_32F, {k.L * n.D, k.B, n.P}), dcy(CCV_32F, {k.L * n.D, k.B, k.H});
  Tensor dx(CCV_32F, xdim), dhx(CCV_32F, {k.L * n.D, k.B, n.P}), dcx(CCV_32F, {k.L * n.D, k.B, k.H});
  Tensor dw(CCV_32F, {static_cast<int>(n.weight_count())});
  for (size_t i = 0; i < dy.count(); i++) dy.f()[i] = u(rng);
  for (size_t i = 0; i < dhy.count(); i++) dhy.f()[i] = u(rng);
  for (size_t i = 0; i < dcy.count(); i++) dcy.f()[i] = u(rng);
  ccv_nnc_tensor_t* bins[13] = {dy.t,
                                k.states ? dhy.t : nullptr,
                                k.states ? dcy.t : nullptr,
                                nullptr,
                                x.t,
                                k.lengths ? xs.t : nullptr,
                                nullptr,
                                nullptr,
                                w.t,
                                nullptr,
                                nullptr,
                                nullptr,
                                r.t};
  ccv_nnc_tensor_t* bouts[5] = {dx.t, nullptr, dhx.t, dcx.t, dw.t};
  ASSERT_EQ(ccv_nnc_cmd_exec(bwd, ccv_nnc_no_hint, 0, bins, 13, bouts, 5, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  CpuOps ops;
  std::vector<float> mdx(dx.count()), mdhx(dhx.count()), mdcx(dcx.count()), mdw(dw.count());
  Backward b;
  b.dy = dy.f(), b.dhy = k.states ? dhy.f() : nullptr, b.dcy = k.states ? dcy.f() : nullptr, b.x = x.f();
  b.xs = k.lengths ? xs.t->data.i32 : nullptr, b.w = w.f(), b.r = r.f();
  b.dx = mdx.data(), b.dhx = mdhx.data(), b.dcx = mdcx.data(), b.dw = mdw.data();
  backward(ops, n, b);
  expect_near(mdx.data(), dx.f(), dx.count(), 1e-4, 2e-5, what + " dx");
  expect_near(mdhx.data(), dhx.f(), dhx.count(), 1e-4, 2e-5, what + " dhx");
  expect_near(mdcx.data(), dcx.f(), dcx.count(), 1e-4, 2e-5, what + " dcx");
  expect_near(mdw.data(), dw.f(), dw.count(), 1e-4, 1e-4, what + " dw");
}

TEST(GpuLstmSchedule, AsCpuRef) {
  std::mt19937 rng(91);
  const Case cases[] = {
      // T  B  F  H proj L  bias  bi     bf     xs     states dropout is_test
      {5, 3, 4, 6, 0, 1, true, false, false, false, true, 0, false},
      {7, 4, 5, 3, 0, 2, true, true, false, true, true, 0, false},
      {6, 2, 3, 5, 2, 1, false, false, true, false, false, 0, false},
      {4, 5, 2, 4, 3, 3, true, true, true, true, true, 0, false},
      {1, 1, 1, 1, 0, 1, true, false, false, false, true, 0, false},
      {5, 3, 4, 4, 0, 3, true, true, false, true, true, 0.4f, false},   // dropout: backward through the factors
      {5, 3, 4, 4, 2, 2, true, false, false, false, true, 0.4f, true},  // is_test: factors 1
  };
  for (const Case& k : cases) run_case(k, rng);
}

}  // namespace
