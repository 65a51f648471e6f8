// CPU_OPT kernels of LSTM (fp32 and fp64), with the reserve laid out as
// lstm.hpp says so that either backend's backward reads either's forward.
//
// Forward, per layer and direction: the input projection of every step at
// once, one GEMM [T·B, in] x W_ihᵀ written straight into the reserve's gate
// block (after the two biases, added as its initial value); then per step
// one GEMM h_{t-1} x W_hhᵀ added onto that step's rows, and one fused pass
// (lstm_body.hpp, AVX-512 or AVX2 chosen at run time) that activates the
// gates in place and writes c_t and o tanh(c_t) (which is h_t without a
// projection, else one more GEMM by W_hrᵀ). Backward, per layer and
// direction, steps in reverse: a fused pass gives the gates' pre-activation
// gradients of the step (kept for all steps), one GEMM carries dh back
// through W_hh; after the steps, dW_ih, dW_hh (and dW_hr) are one GEMM each
// over all T·B rows, and the input gradient one GEMM by W_ih. fp32 GEMMs run
// on our sgemm (cmd/common/sgemm.hpp) where the CPU has AVX2 or AVX-512
// (the weight gradients from dG transposed once, since it reads A in
// place), fp64 ones on OpenBLAS. fp32 without a projection splits each step
// by hidden units over the pool with W_hh packed once (Parts, below); the
// other cases split the fused passes by batch rows.
// Sequences given as views or batch first are copied time-major first.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cmd/common/sgemm.hpp"
#include "cmd/common/transpose_avx512.hpp"
#include "cmd/rnn/lstm.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "core/vmath_scalar.hpp"

namespace nnc::lstm {

namespace generic {
using V = nnc::vmath::Scalar;
#include "cmd/rnn/lstm_body.hpp"
}  // namespace generic

namespace {

// C = op(A) op(B) (+ C when beta is 1), row-major.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0)
      for (int i = 0; i < m; i++)
        std::fill(c + static_cast<size_t>(i) * ldc, c + static_cast<size_t>(i) * ldc + n, 0.0f);
    return;
  }
  const CpuFeatures& f = cpu_features();
  // Our sgemm reads A in place: a transposed A (the weight gradients' dGᵀ)
  // would be read down its columns, so those go to OpenBLAS, which packs it.
  if (!ta && (f.avx512 || f.avx2)) {
    gemm::Sgemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = a, g.ars = ta ? 1 : lda, g.acs = ta ? lda : 1;
    g.b = b, g.brs = tb ? 1 : ldb, g.bcs = tb ? ldb : 1;
    g.beta = beta, g.c = c, g.ldc = ldc;
    if (m >= 6) {
      if (f.avx512)
        gemm::sgemm_avx512(g);
      else
        gemm::sgemm_avx2(g);
      return;
    }
    if (f.avx512 ? gemm::sgemm_small_avx512(g) : gemm::sgemm_small_avx2(g)) return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double beta,
          double* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0)
      for (int i = 0; i < m; i++)
        std::fill(c + static_cast<size_t>(i) * ldc, c + static_cast<size_t>(i) * ldc + n, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, beta, c, ldc);
}

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// The fused passes: fp32 on the widest instruction set the CPU has, fp64 in plain C++.
void forward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, float* pre, const float* gh,
                  int ldg, int gstride, const float* cp, float* cn, float* m, const float* hp) {
  const CpuFeatures& f = cpu_features();
  if (f.avx512)
    avx512::forward_cell(H, u0, u1, b0, b1, valid, pre, gh, ldg, gstride, cp, cn, m, hp);
  else if (f.avx2)
    avx2::forward_cell(H, u0, u1, b0, b1, valid, pre, gh, ldg, gstride, cp, cn, m, hp);
  else
    generic::forward_cell(H, u0, u1, b0, b1, valid, pre, gh, ldg, gstride, cp, cn, m, hp);
}
void backward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, const float* g,
                   const float* cp, const float* cn, const float* dm, float* dc, float* dpre) {
  const CpuFeatures& f = cpu_features();
  if (f.avx512)
    avx512::backward_cell(H, u0, u1, b0, b1, valid, g, cp, cn, dm, dc, dpre);
  else if (f.avx2)
    avx2::backward_cell(H, u0, u1, b0, b1, valid, g, cp, cn, dm, dc, dpre);
  else
    generic::backward_cell(H, u0, u1, b0, b1, valid, g, cp, cn, dm, dc, dpre);
}
void forward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, double* pre,
                  const double* gh, int ldg, int gstride, const double* cp, double* cn, double* m, const double* hp) {
  for (size_t b = b0; b < b1; b++) {
    double* const g = pre + b * 4 * H;
    if (valid && !valid[b]) {
      for (int q = 0; q < 4; q++) std::fill(g + q * H + u0, g + q * H + u1, 0.0);
      for (int j = u0; j < u1; j++) cn[b * H + j] = cp[b * H + j], m[b * H + j] = hp ? hp[b * H + j] : 0;
      continue;
    }
    const double* const a = gh ? gh + b * ldg - u0 : nullptr;
    for (int j = u0; j < u1; j++) {
      double pi = g[j], pf = g[H + j], pg = g[2 * H + j], po = g[3 * H + j];
      if (a) pi += a[j], pf += a[gstride + j], pg += a[2 * gstride + j], po += a[3 * gstride + j];
      const double i = sigmoid(pi), f = sigmoid(pf), gg = std::tanh(pg), o = sigmoid(po);
      g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
      const double c = f * cp[b * H + j] + i * gg;
      cn[b * H + j] = c;
      m[b * H + j] = o * std::tanh(c);
    }
  }
}
void backward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, const double* gates,
                   const double* cp, const double* cn, const double* dm, double* dc, double* dpre) {
  for (size_t b = b0; b < b1; b++) {
    double* const dp = dpre + b * 4 * H;
    if (valid && !valid[b]) {
      for (int q = 0; q < 4; q++) std::fill(dp + q * H + u0, dp + q * H + u1, 0.0);
      continue;
    }
    const double* const g = gates + b * 4 * H;
    for (int j = u0; j < u1; j++) {
      const size_t e = b * H + j;
      const double i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
      const double tc = std::tanh(cn[e]);
      const double dcv = dc[e] + dm[e] * o * (1 - tc * tc);
      dp[j] = dcv * gg * i * (1 - i);
      dp[H + j] = dcv * cp[e] * f * (1 - f);
      dp[2 * H + j] = dcv * i * (1 - gg * gg);
      dp[3 * H + j] = dm[e] * tc * o * (1 - o);
      dc[e] = dcv * f;
    }
  }
}

// A fused pass over the batch, split over the pool when the step is big enough.
template <class F>
void over_batch(int B, int H, F&& f) {
  const size_t grain = std::max<size_t>(1, 8192 / static_cast<size_t>(std::max(H, 1)));
  if (static_cast<size_t>(B) <= grain || thread_count() <= 1) {
    f(size_t{0}, static_cast<size_t>(B));
    return;
  }
  parallel_for(static_cast<size_t>(B), grain, [&](size_t b0, size_t b1) { f(b0, b1); });
}

// The fp32 recurrence without a projection, on our own sgemm (AVX2 or
// AVX-512): the hidden units split into one part per thread, and each part's
// slice of W_hh packed once per layer and direction, so that a step is one
// parallel_for in which each thread multiplies h_{t-1} by its packed slice
// and runs the fused pass on its own units (forward), or carries dh back
// through its slice of W_hh and runs the fused backward on its units. A
// weight matrix repacked by every step's GEMM cost as much as the product.
struct Parts {
  int n = 1;
  std::vector<int> u;  // part p: units [u[p], u[p + 1])
  Parts(int H) {
    n = static_cast<int>(std::min<size_t>(thread_count(), static_cast<size_t>((H + 15) / 16)));
    n = std::max(n, 1);
    for (int p = 0; p <= n; p++) u.push_back(static_cast<int>(static_cast<int64_t>(H) * p / n));
  }
};
bool own_sgemm() { return cpu_features().avx512 || cpu_features().avx2; }
void pack(const gemm::Sgemm& g, float* packed) {
  if (cpu_features().avx512)
    gemm::sgemm_pack_avx512(g, packed);
  else
    gemm::sgemm_pack_avx2(g, packed);
}
void packed_gemm(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc) {
  if (cpu_features().avx512)
    gemm::sgemm_packed_avx512(m, n, k, a, lda, packed, c, ldc);
  else
    gemm::sgemm_packed_avx2(m, n, k, a, lda, packed, c, ldc);
}
// 64-byte aligned floats.
struct Aligned {
  std::vector<float> v;
  float* p = nullptr;
  explicit Aligned(size_t n) : v(n + 16) {
    p = v.data();
    while (reinterpret_cast<uintptr_t>(p) % 64) p++;
  }
};

// A sequence tensor time-major and packed: the tensor's own memory when it is
// so already, else a copy in `buf`.
template <class E>
E* time_major(ccv_nnc_tensor_t* t, const Dims& n, std::vector<E>& buf, const char* what) {
  const Layout l = layout_of(t, what);
  if (l.packed() && (l.nd == 2 || !n.batch_first || n.B == 1 || n.T == 1)) return reinterpret_cast<E*>(l.data);
  const int W = l.dim[l.nd - 1];
  buf.resize(n.tb() * W);
  for (int t = 0; t < n.T; t++)
    for (int b = 0; b < n.B; b++) {
      const int64_t off = l.nd == 3
                              ? (n.batch_first ? b * l.stride[0] + t * l.stride[1] : t * l.stride[0] + b * l.stride[1])
                              : t * l.stride[0];
      const E* const s = reinterpret_cast<const E*>(l.data) + off;
      E* const d = buf.data() + (static_cast<size_t>(t) * n.B + b) * W;
      for (int f = 0; f < W; f++) d[f] = s[f * l.stride[l.nd - 1]];
    }
  return buf.data();
}
// The reverse: time-major rows `src` into a sequence tensor (nothing when it is its memory already).
template <class E>
void store_seq(const E* src, ccv_nnc_tensor_t* t, const Dims& n, const char* what) {
  const Layout l = layout_of(t, what);
  if (reinterpret_cast<const unsigned char*>(src) == l.data) return;
  const int W = l.dim[l.nd - 1];
  for (int t = 0; t < n.T; t++)
    for (int b = 0; b < n.B; b++) {
      const int64_t off = l.nd == 3
                              ? (n.batch_first ? b * l.stride[0] + t * l.stride[1] : t * l.stride[0] + b * l.stride[1])
                              : t * l.stride[0];
      E* const d = reinterpret_cast<E*>(l.data) + off;
      const E* const s = src + (static_cast<size_t>(t) * n.B + b) * W;
      for (int f = 0; f < W; f++) d[f * l.stride[l.nd - 1]] = s[f];
    }
}
// A whole tensor packed (its memory when packed already).
template <class E>
E* packed_of(ccv_nnc_tensor_t* t, std::vector<E>& buf, const char* what) {
  const Layout l = layout_of(t, what);
  if (l.packed()) return reinterpret_cast<E*>(l.data);
  buf.resize(l.count());
  size_t k = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* i) { buf[k++] = *reinterpret_cast<const E*>(l.at(i)); });
  return buf.data();
}
template <class E>
void unpack(const E* src, ccv_nnc_tensor_t* t, const char* what) {
  const Layout l = layout_of(t, what);
  if (reinterpret_cast<const unsigned char*>(src) == l.data) return;
  size_t k = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* i) { *reinterpret_cast<E*>(l.at(i)) = src[k++]; });
}
// State (hx, cx, ...) k as [B, W] rows: read into `dst`, or written from `src`.
template <class E>
void load_state(const ccv_nnc_tensor_t* t, int k, int B, int W, E* dst) {
  if (!t) {
    std::fill(dst, dst + static_cast<size_t>(B) * W, E(0));
    return;
  }
  const Layout l = layout_of(t, "state");
  for (int b = 0; b < B; b++)
    for (int j = 0; j < W; j++) {
      const int64_t off =
          l.nd == 3 ? k * l.stride[0] + b * l.stride[1] + j * l.stride[2] : k * l.stride[0] + j * l.stride[1];
      dst[static_cast<size_t>(b) * W + j] = reinterpret_cast<const E*>(l.data)[off];
    }
}
template <class E>
void store_state(ccv_nnc_tensor_t* t, int k, int B, int W, const E* src) {
  if (!t) return;
  const Layout l = layout_of(t, "state");
  for (int b = 0; b < B; b++)
    for (int j = 0; j < W; j++) {
      const int64_t off =
          l.nd == 3 ? k * l.stride[0] + b * l.stride[1] + j * l.stride[2] : k * l.stride[0] + j * l.stride[1];
      reinterpret_cast<E*>(l.data)[off] = src[static_cast<size_t>(b) * W + j];
    }
}

// y [cols, rows] = x [rows, cols] transposed, split over the pool by rows.
void transpose(const float* x, int rows, int cols, float* y) {
  parallel_for(static_cast<size_t>(rows), 64, [&](size_t r0, size_t r1) {
    if (cpu_features().avx512) {
      transpose_f32_avx512(x + r0 * cols, cols, static_cast<int>(r1 - r0), cols, y + r0, rows);
      return;
    }
    for (size_t i0 = r0; i0 < r1; i0 += 16)
      for (int j0 = 0; j0 < cols; j0 += 16)
        for (size_t i = i0; i < std::min(r1, i0 + 16); i++)
          for (int j = j0; j < std::min(cols, j0 + 16); j++) y[static_cast<size_t>(j) * rows + i] = x[i * cols + j];
  });
}

// The steps of one layer and direction (forward), fp32 without projection:
// see Parts.
void forward_steps_fast(const Dims& n, int d, const float* Whh, float* G, float* C, float* S, float* out,
                        const int* len, bool ragged) {
  const int T = n.T, B = n.B, H = n.H, H4 = 4 * n.H;
  const size_t O = n.out_size();
  const Parts parts(H);
  // W_hh's rows reordered so that part p's are one block: its units' gates i, f, g, o.
  std::vector<float> Wp(static_cast<size_t>(H4) * H);
  std::vector<Aligned> packed;
  packed.reserve(static_cast<size_t>(parts.n));
  for (int p = 0; p < parts.n; p++) {
    const int u0 = parts.u[p], w = parts.u[p + 1] - u0;
    for (int g = 0; g < 4; g++)
      for (int u = 0; u < w; u++)
        std::memcpy(&Wp[(static_cast<size_t>(4) * u0 + g * w + u) * H], Whh + (static_cast<size_t>(g) * H + u0 + u) * H,
                    sizeof(float) * H);
    packed.emplace_back(static_cast<size_t>(gemm::sgemm_packed_floats(H, 4 * w)));
    gemm::Sgemm s;
    s.k = H, s.n = 4 * w;
    s.b = &Wp[static_cast<size_t>(4) * u0 * H], s.brs = 1, s.bcs = H;
    pack(s, packed.back().p);
  }
  std::vector<float> Gh(static_cast<size_t>(B) * H4);
  std::vector<unsigned char> valid(static_cast<size_t>(B));
  for (int s = 0; s < T; s++) {
    const int t = d == 0 ? s : T - 1 - s;
    const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
    float* const Gt = G + static_cast<size_t>(t) * B * H4;
    const float* const hp = S + rs * B * H;
    float* const hn = S + ws * B * H;
    for (int b = 0; b < B; b++) valid[b] = t < len[b];
    parallel_for(static_cast<size_t>(parts.n), 1, [&](size_t p0, size_t p1) {
      for (size_t p = p0; p < p1; p++) {
        const int u0 = parts.u[p], u1 = parts.u[p + 1], w = u1 - u0;
        packed_gemm(B, 4 * w, H, hp, H, packed[p].p, Gh.data() + 4 * u0, H4);
        forward_cell(H, u0, u1, 0, B, ragged ? valid.data() : nullptr, Gt, Gh.data() + 4 * u0, H4, w, C + rs * B * H,
                     C + ws * B * H, hn, hp);
        for (int b = 0; b < B; b++) {
          float* const o = out + (static_cast<size_t>(t) * B + b) * O + static_cast<size_t>(d) * H;
          if (ragged && !valid[b])
            std::fill(o + u0, o + u1, 0.0f);
          else
            std::memcpy(o + u0, hn + static_cast<size_t>(b) * H + u0, sizeof(float) * w);
        }
      }
    });
  }
}

// The steps of one layer and direction (backward), fp32 without projection:
// dG [T, B, 4H] gets every step's pre-activation gradients, dh and dc [B, H]
// come in as dhy / dcy and leave as dhx / dcx.
void backward_steps_fast(const Dims& n, int d, const float* Whh, const float* G, const float* C, const float* dout,
                         float* dG, float* dh, float* dc, const int* len, bool ragged) {
  const int T = n.T, B = n.B, H = n.H, H4 = 4 * n.H;
  const size_t O = n.out_size();
  const Parts parts(H);
  std::vector<Aligned> packed;  // part p: the columns of W_hh [4H, H] of its units
  packed.reserve(static_cast<size_t>(parts.n));
  for (int p = 0; p < parts.n; p++) {
    const int u0 = parts.u[p], w = parts.u[p + 1] - u0;
    packed.emplace_back(static_cast<size_t>(gemm::sgemm_packed_floats(H4, w)));
    gemm::Sgemm s;
    s.k = H4, s.n = w;
    s.b = Whh + u0, s.brs = H, s.bcs = 1;
    pack(s, packed.back().p);
  }
  std::vector<float> dhn(static_cast<size_t>(B) * H);
  std::vector<unsigned char> valid(static_cast<size_t>(B)), prev(static_cast<size_t>(B), 1);
  const float* dGprev = nullptr;  // the step processed before (the next one in time)
  for (int s = 0; s < T; s++) {
    const int t = d == 0 ? T - 1 - s : s;
    const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
    for (int b = 0; b < B; b++) valid[b] = t < len[b];
    float* const dGt = dG + static_cast<size_t>(t) * B * H4;
    parallel_for(static_cast<size_t>(parts.n), 1, [&](size_t p0, size_t p1) {
      for (size_t p = p0; p < p1; p++) {
        const int u0 = parts.u[p], u1 = parts.u[p + 1], w = u1 - u0;
        if (dGprev) {  // dh back through W_hh from the step after (rows it skipped keep theirs)
          packed_gemm(B, w, H4, dGprev, H4, packed[p].p, dhn.data() + u0, H);
          for (int b = 0; b < B; b++)
            if (!ragged || prev[b])
              std::memcpy(dh + static_cast<size_t>(b) * H + u0, dhn.data() + static_cast<size_t>(b) * H + u0,
                          sizeof(float) * w);
        }
        for (int b = 0; b < B; b++) {
          if (ragged && !valid[b]) continue;
          float* const h = dh + static_cast<size_t>(b) * H;
          const float* const g = dout + (static_cast<size_t>(t) * B + b) * O + static_cast<size_t>(d) * H;
          for (int u = u0; u < u1; u++) h[u] += g[u];
        }
        backward_cell(H, u0, u1, 0, B, ragged ? valid.data() : nullptr, G + static_cast<size_t>(t) * B * H4,
                      C + rs * B * H, C + ws * B * H, dh, dc, dGt);
      }
    });
    prev = valid;
    dGprev = dGt;
  }
  if (dGprev) {  // the first step's dh back to h0
    gemm(false, false, B, H, H4, dGprev, H4, Whh, H, 0.0f, dhn.data(), H);
    for (int b = 0; b < B; b++)
      if (!ragged || prev[b])
        std::memcpy(dh + static_cast<size_t>(b) * H, dhn.data() + static_cast<size_t>(b) * H, sizeof(float) * H);
  }
}

template <class E>
void forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs,
             int output_size, ccv_nnc_stream_context_t* stream) {
  ccv_nnc_tensor_t* const x = inputs[0];
  const Dims n = dims_of(cmd.info, x->info.dim);
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L, H4 = 4 * n.H;
  const size_t TB = n.tb(), O = n.out_size();
  std::vector<int> len(static_cast<size_t>(B));
  lengths(inputs[1], n, len.data());
  const bool ragged = std::any_of(len.begin(), len.end(), [&](int v) { return v < T; });
  std::vector<unsigned char> valid(static_cast<size_t>(B));
  ccv_nnc_tensor_t* const hy = output_size > 1 ? outputs[1] : nullptr;
  ccv_nnc_tensor_t* const cy = output_size > 2 ? outputs[2] : nullptr;
  ccv_nnc_tensor_t* const r = output_size > 3 ? outputs[3] : nullptr;
  const uint64_t key = n.drop ? dropout_key(stream_genrand(stream)) : 0;
  const E scale = n.drop ? static_cast<E>(1 / (1 - n.p)) : E(1);

  std::vector<E> wbuf, xbuf, rbuf, ybuf, outbuf, state;
  const E* const W = packed_of<E>(inputs[4], wbuf, "w");
  const E* const x0 = time_major<E>(x, n, xbuf, "x");
  E* R;
  if (r) {
    R = reinterpret_cast<E*>(r->data.u8);
  } else {
    rbuf.resize(n.reserve_count());
    R = rbuf.data();
  }
  E* const y0 = time_major<E>(outputs[0], n, ybuf, "y");  // y's memory, or a buffer copied out at the end
  for (int l = 0; l < L; l++) {
    const int I = static_cast<int>(n.in_size(l));
    const E* const in = l == 0 ? x0 : R + n.layer_input(l);
    E* out = y0;
    if (l + 1 < L) {
      outbuf.resize(TB * O);
      out = outbuf.data();
    }
    for (int d = 0; d < D; d++) {
      const Dims::WeightOffsets wo = n.weights(l, d);
      const Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      E* const G = R + co.g;
      E* const C = R + co.c;
      E* const S = R + co.s;
      // Every step's input projection, onto the biases.
      if (n.bias) {
        for (size_t row = 0; row < TB; row++)
          for (int q = 0; q < H4; q++) G[row * H4 + q] = W[wo.b_ih + q] + W[wo.b_hh + q];
      }
      gemm(false, true, static_cast<int>(TB), H4, I, in, I, W + wo.w_ih, I, n.bias ? E(1) : E(0), G, H4);
      const int init = d == 0 ? 0 : T;
      load_state<E>(inputs[2], k, B, P, S + static_cast<size_t>(init) * B * P);
      load_state<E>(inputs[3], k, B, H, C + static_cast<size_t>(init) * B * H);
      bool done = false;
      if constexpr (std::is_same_v<E, float>) {
        if (!n.proj && own_sgemm()) {
          forward_steps_fast(n, d, W + wo.w_hh, G, C, S, out, len.data(), ragged);
          done = true;
        }
      }
      for (int s = 0; s < T && !done; s++) {
        const int t = d == 0 ? s : T - 1 - s;
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        E* const Gt = G + static_cast<size_t>(t) * B * H4;
        const E* const hp = S + rs * B * P;
        E* const hn = S + ws * B * P;
        gemm(false, true, B, H4, P, hp, P, W + wo.w_hh, P, E(1), Gt, H4);
        for (int b = 0; b < B; b++) valid[b] = t < len[b];
        E* const m = n.proj ? R + co.m + static_cast<size_t>(t) * B * H : hn;
        over_batch(B, H, [&](size_t b0, size_t b1) {
          forward_cell(H, 0, H, b0, b1, ragged ? valid.data() : nullptr, Gt, nullptr, 0, 0, C + rs * B * H,
                       C + ws * B * H, m, nullptr);
        });
        if (n.proj) gemm(false, true, B, P, H, m, H, W + wo.w_hr, H, E(0), hn, P);
        for (int b = 0; b < B; b++) {
          E* const o = out + (static_cast<size_t>(t) * B + b) * O + static_cast<size_t>(d) * P;
          if (ragged && !valid[b]) {  // the state carries past the end; y is 0 there
            std::memcpy(hn + static_cast<size_t>(b) * P, hp + static_cast<size_t>(b) * P, sizeof(E) * P);
            std::fill(o, o + P, E(0));
          } else {
            std::memcpy(o, hn + static_cast<size_t>(b) * P, sizeof(E) * P);
          }
        }
      }
      const int last = d == 0 ? T : 0;
      store_state<E>(hy, k, B, P, S + static_cast<size_t>(last) * B * P);
      store_state<E>(cy, k, B, H, C + static_cast<size_t>(last) * B * H);
    }
    if (l + 1 < L) {
      E* const next = R + n.layer_input(l + 1);
      E* const fac = n.has_factors ? R + n.factors(l) : nullptr;
      const size_t total = TB * O;
      parallel_for(total, 1 << 14, [&](size_t e0, size_t e1) {
        for (size_t e = e0; e < e1; e++) {
          const E f = n.drop ? (keeps(key, e, n.p) ? scale : E(0)) : E(1);
          if (fac) fac[e] = f;
          next[e] = out[e] * f;
        }
      });
    }
  }
  store_seq<E>(y0, outputs[0], n, "y");
}

template <class E>
void backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* const* outputs,
              int output_size) {
  auto outp = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  ccv_nnc_tensor_t *const dy = inputs[0], *const dhy = inputs[1], *const dcy = inputs[2];
  ccv_nnc_tensor_t* const x = inputs[4] ? inputs[4] : outputs[0];  // dx is shaped like x (validated)
  const Dims n = dims_of(cmd.info, x->info.dim);
  const int T = n.T, B = n.B, H = n.H, P = n.P, D = n.D, L = n.L, H4 = 4 * n.H;
  const size_t TB = n.tb(), O = n.out_size();
  std::vector<int> len(static_cast<size_t>(B));
  lengths(inputs[5], n, len.data());
  const bool ragged = std::any_of(len.begin(), len.end(), [&](int v) { return v < T; });
  std::vector<unsigned char> valid(static_cast<size_t>(B));
  ccv_nnc_tensor_t *const dx = outp(0), *const dxs = outp(1), *const dhx = outp(2), *const dcx = outp(3),
                          *const dw = outp(4);
  std::vector<E> wbuf, xbuf, dwbuf, dybuf;
  const E* const W = packed_of<E>(inputs[8], wbuf, "w");
  const E* const R = reinterpret_cast<const E*>(inputs[12]->data.u8);
  E* dW = nullptr;
  if (dw) dW = packed_of<E>(dw, dwbuf, "dw");  // every element is written below
  const E* const x0 = dw ? time_major<E>(x, n, xbuf, "x") : nullptr;
  std::vector<E> dout(TB * O, E(0));
  if (dy) {
    const E* const d0 = time_major<E>(dy, n, dybuf, "dy");
    std::memcpy(dout.data(), d0, sizeof(E) * TB * O);
  }
  std::vector<E> dGT;  // dG transposed, for the weight gradients on our sgemm
  std::vector<E> dG(TB * H4), din, dh(static_cast<size_t>(B) * P), dc(static_cast<size_t>(B) * H),
      dhn(static_cast<size_t>(B) * P), dm(n.proj ? static_cast<size_t>(B) * H : 0), dHs(n.proj ? TB * P : 0);
  for (int l = L - 1; l >= 0; l--) {
    const int I = static_cast<int>(n.in_size(l));
    const E* const in = l == 0 ? x0 : R + n.layer_input(l);
    const bool need_din = l > 0 || dx;
    din.assign(need_din ? TB * I : 0, E(0));
    for (int d = 0; d < D; d++) {
      const Dims::WeightOffsets wo = n.weights(l, d);
      const Dims::CellOffsets co = n.cell(l, d);
      const int k = l * D + d;
      const E* const G = R + co.g;
      const E* const C = R + co.c;
      const E* const S = R + co.s;
      load_state<E>(dhy, k, B, P, dh.data());
      load_state<E>(dcy, k, B, H, dc.data());
      bool done = false;
      if constexpr (std::is_same_v<E, float>) {
        if (!n.proj && own_sgemm()) {
          backward_steps_fast(n, d, W + wo.w_hh, G, C, dout.data(), dG.data(), dh.data(), dc.data(), len.data(),
                              ragged);
          done = true;
        }
      }
      for (int s = 0; s < T && !done; s++) {
        const int t = d == 0 ? T - 1 - s : s;
        const size_t rs = static_cast<size_t>(n.read_slot(d, t)), ws = static_cast<size_t>(n.write_slot(d, t));
        for (int b = 0; b < B; b++) valid[b] = t < len[b];
        E* const dGt = dG.data() + static_cast<size_t>(t) * B * H4;
        for (int b = 0; b < B; b++) {
          if (ragged && !valid[b]) continue;
          E* const h = dh.data() + static_cast<size_t>(b) * P;
          const E* const g = dout.data() + (static_cast<size_t>(t) * B + b) * O + static_cast<size_t>(d) * P;
          for (int j = 0; j < P; j++) h[j] += g[j];
        }
        const E* dmt = dh.data();
        if (n.proj) {
          E* const keep = dHs.data() + static_cast<size_t>(t) * B * P;
          for (int b = 0; b < B; b++) {
            E* const o = keep + static_cast<size_t>(b) * P;
            if (ragged && !valid[b])
              std::fill(o, o + P, E(0));
            else
              std::memcpy(o, dh.data() + static_cast<size_t>(b) * P, sizeof(E) * P);
          }
          gemm(false, false, B, H, P, dh.data(), P, W + wo.w_hr, H, E(0), dm.data(), H);
          dmt = dm.data();
        }
        over_batch(B, H, [&](size_t b0, size_t b1) {
          backward_cell(H, 0, H, b0, b1, ragged ? valid.data() : nullptr, G + static_cast<size_t>(t) * B * H4,
                        C + rs * B * H, C + ws * B * H, dmt, dc.data(), dGt);
        });
        gemm(false, false, B, P, H4, dGt, H4, W + wo.w_hh, P, E(0), dhn.data(), P);
        for (int b = 0; b < B; b++)
          if (!ragged || valid[b])
            std::memcpy(dh.data() + static_cast<size_t>(b) * P, dhn.data() + static_cast<size_t>(b) * P, sizeof(E) * P);
      }
      store_state<E>(dhx, k, B, P, dh.data());
      store_state<E>(dcx, k, B, H, dc.data());
      if (dW) {
        const E* const hprev = S + (d == 0 ? 0 : static_cast<size_t>(B) * P);  // the slots steps 0..T-1 read
        bool done_w = false;
        if constexpr (std::is_same_v<E, float>) {
          if (own_sgemm()) {  // dGᵀ made explicit, so our sgemm reads it along rows (no OpenBLAS)
            dGT.resize(TB * H4);
            transpose(dG.data(), static_cast<int>(TB), H4, dGT.data());
            gemm(false, false, H4, I, static_cast<int>(TB), dGT.data(), static_cast<int>(TB), in, I, 0.0f, dW + wo.w_ih,
                 I);
            gemm(false, false, H4, P, static_cast<int>(TB), dGT.data(), static_cast<int>(TB), hprev, P, 0.0f,
                 dW + wo.w_hh, P);
            if (n.bias) {
              float* const db = dW + wo.b_ih;
              parallel_for(static_cast<size_t>(H4), 64, [&](size_t q0, size_t q1) {
                for (size_t q = q0; q < q1; q++) {
                  const float* const g = dGT.data() + q * TB;
                  float v = 0;
                  for (size_t row = 0; row < TB; row++) v += g[row];
                  db[q] = v;
                }
              });
              std::memcpy(dW + wo.b_hh, db, sizeof(float) * H4);
            }
            done_w = true;
          }
        }
        if (!done_w) {
          gemm(true, false, H4, I, static_cast<int>(TB), dG.data(), H4, in, I, E(0), dW + wo.w_ih, I);
          gemm(true, false, H4, P, static_cast<int>(TB), dG.data(), H4, hprev, P, E(0), dW + wo.w_hh, P);
        }
        if (n.bias && !done_w) {
          E* const db = dW + wo.b_ih;
          std::fill(db, db + H4, E(0));
          for (size_t row = 0; row < TB; row++) {
            const E* const g = dG.data() + row * H4;
            for (int q = 0; q < H4; q++) db[q] += g[q];
          }
          std::memcpy(dW + wo.b_hh, db, sizeof(E) * H4);
        }
        if (n.proj) gemm(true, false, P, H, static_cast<int>(TB), dHs.data(), P, R + co.m, H, E(0), dW + wo.w_hr, H);
      }
      if (need_din)
        gemm(false, false, static_cast<int>(TB), I, H4, dG.data(), H4, W + wo.w_ih, I, d == 0 ? E(0) : E(1), din.data(),
             I);
    }
    if (l > 0) {
      dout.resize(din.size());
      const E* const fac = n.has_factors ? R + n.factors(l - 1) : nullptr;
      for (size_t e = 0; e < din.size(); e++) dout[e] = fac ? din[e] * fac[e] : din[e];
    }
  }
  if (dx) {
    std::vector<E> dxbuf;
    E* const d0 = time_major<E>(dx, n, dxbuf, "dx");
    std::memcpy(d0, din.data(), sizeof(E) * din.size());
    store_seq<E>(d0, dx, n, "dx");
  }
  if (dw) unpack<E>(dW, dw, "dw");
  if (dxs) ccv_nnc_tensor_zero(dxs);
}

}  // namespace

NNC_KERNEL(forward_opt) {
  auto lock = compute_lock();
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_32F)
    forward<float>(cmd, inputs, outputs, output_size, stream_context);
  else
    forward<double>(cmd, inputs, outputs, output_size, stream_context);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_opt) {
  auto lock = compute_lock();
  if (CCV_GET_DATA_TYPE(inputs[8]->info.datatype) == CCV_32F)  // w: x may be absent
    backward<float>(cmd, inputs, outputs, output_size);
  else
    backward<double>(cmd, inputs, outputs, output_size);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::lstm
