// The GPU LSTM's fused kernels (lstm_kern.hpp): one thread per element of a
// step's [B, H] (the cell) or of a buffer, grid-stride loops with 64-bit
// indices; the cell's formulas are cmd/common/gpu_misc.hpp's (checked on the
// CPU against CPU_REF with the whole schedule, test/unit/gpu_misc).
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "cmd/common/gpu_misc.hpp"
#include "cmd/common/gpu_plan.hpp"
#include "cuda/lstm_kern.hpp"

namespace nnc::cuda {

namespace {

__device__ __forceinline__ int64_t first_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t stride_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

dim3 grid_for(int64_t count) { return dim3(static_cast<unsigned>(gpu::choose_ew(count).blocks)); }

__global__ void lengths_kernel(const int* xs, int B, int T, int* len, int* bad) {
  for (int64_t b = first_thread(); b < B; b += stride_threads()) {
    int v = xs ? xs[b] : T;
    if (v < 0 || v > T) {
      atomicMax(bad, static_cast<int>(INT_MAX - b));
      v = v < 0 ? 0 : T;
    }
    len[b] = v;
  }
}

__global__ void seq_kernel(float* dst, const float* src, int T, int B, int F, bool batch_first, bool to_tm) {
  const int64_t total = static_cast<int64_t>(T) * B * F;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int f = static_cast<int>(e % F);
    const int64_t q = e / F;
    const int b = static_cast<int>(q % B), t = static_cast<int>(q / B);
    const int64_t seq = batch_first ? (static_cast<int64_t>(b) * T + t) * F + f : e;
    if (to_tm)
      dst[e] = src[seq];
    else
      dst[seq] = src[e];
  }
}

__global__ void add_bias_kernel(float* g, int64_t total, int H4, const float* bi, const float* bh) {
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int q = static_cast<int>(e % H4);
    g[e] += bi[q] + bh[q];
  }
}

__global__ void cell_forward_kernel(float* g_t, const float* gh, const float* c_prev, float* c_out, const float* h_prev,
                                    float* h_out, float* m_out, int B, int H, int t, const int* len) {
  const int64_t total = static_cast<int64_t>(B) * H;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int b = static_cast<int>(e / H), j = static_cast<int>(e % H);
    float* g = g_t + static_cast<int64_t>(b) * 4 * H;
    if (t >= len[b]) {
      for (int q = 0; q < 4; q++) g[q * H + j] = 0;
      c_out[e] = c_prev[e];
      if (h_out) h_out[e] = h_prev[e];
      if (m_out) m_out[e] = 0;
      continue;
    }
    const float* a = gh + static_cast<int64_t>(b) * 4 * H;
    float gates[4], c, m;
    gpu::lstm_cell(g[j] + a[j], g[H + j] + a[H + j], g[2 * H + j] + a[2 * H + j], g[3 * H + j] + a[3 * H + j],
                   c_prev[e], gates, &c, &m);
    for (int q = 0; q < 4; q++) g[q * H + j] = gates[q];
    c_out[e] = c;
    (h_out ? h_out : m_out)[e] = m;
  }
}

__global__ void rows_kernel(float* dst, const float* src, int B, int W, const int* len, int t, bool valid) {
  const int64_t total = static_cast<int64_t>(B) * W;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int b = static_cast<int>(e / W);
    if ((t < len[b]) == valid) dst[e] = src[e];
  }
}

__global__ void write_y_kernel(float* out, int O, int off, const float* S, int T, int B, int P, int d, const int* len) {
  const int64_t total = static_cast<int64_t>(T) * B * P;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int j = static_cast<int>(e % P);
    const int64_t q = e / P;
    const int b = static_cast<int>(q % B), t = static_cast<int>(q / B);
    const int slot = d == 0 ? t + 1 : t;
    out[q * O + off + j] = t < len[b] ? S[(static_cast<int64_t>(slot) * B + b) * P + j] : 0.f;
  }
}

__global__ void dropout_kernel(const float* out, float* next, float* factors, int64_t n, uint64_t key, double p,
                               float scale, bool drop) {
  for (int64_t e = first_thread(); e < n; e += stride_threads()) {
    const float f = drop ? (gpu::lstm_keeps(key, static_cast<uint64_t>(e), p) ? scale : 0.f) : 1.f;
    if (factors) factors[e] = f;
    next[e] = out[e] * f;
  }
}

__global__ void dh_add_kernel(float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P, const int* len,
                              int t) {
  const int64_t total = static_cast<int64_t>(B) * P;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int b = static_cast<int>(e / P), j = static_cast<int>(e % P);
    const bool valid = t < len[b];
    if (valid) dh[e] += dout_t[static_cast<int64_t>(b) * ldo + j];
    if (dh_t) dh_t[e] = valid ? dh[e] : 0.f;
  }
}

__global__ void cell_backward_kernel(const float* g_t, const float* c_prev, const float* c_now, const float* dm,
                                     float* dc, float* dpre_t, int B, int H, int t, const int* len) {
  const int64_t total = static_cast<int64_t>(B) * H;
  for (int64_t e = first_thread(); e < total; e += stride_threads()) {
    const int b = static_cast<int>(e / H), j = static_cast<int>(e % H);
    float* dp = dpre_t + static_cast<int64_t>(b) * 4 * H;
    if (t >= len[b]) {
      for (int q = 0; q < 4; q++) dp[q * H + j] = 0;
      continue;
    }
    const float* g = g_t + static_cast<int64_t>(b) * 4 * H;
    const float gates[4] = {g[j], g[H + j], g[2 * H + j], g[3 * H + j]};
    float d[4];
    gpu::lstm_cell_grad(gates, c_prev[e], c_now[e], dm[e], &dc[e], d);
    for (int q = 0; q < 4; q++) dp[q * H + j] = d[q];
  }
}

// One thread per column q: the sum over the rows (neighbouring threads read
// neighbouring columns), added to both bias gradients.
__global__ void bias_grad_kernel(float* bi, float* bh, const float* dpre, int64_t rows, int H4) {
  for (int64_t q = first_thread(); q < H4; q += stride_threads()) {
    double s = 0;
    for (int64_t r = 0; r < rows; r++) s += dpre[r * H4 + q];
    bi[q] += static_cast<float>(s);
    bh[q] += static_cast<float>(s);
  }
}

__global__ void scale_kernel(float* dst, const float* src, const float* factors, int64_t n) {
  for (int64_t e = first_thread(); e < n; e += stride_threads()) dst[e] = factors ? src[e] * factors[e] : src[e];
}

}  // namespace

cudaError_t launch_lstm_lengths(cudaStream_t s, const int* xs, int B, int T, int* len, int* bad) {
  if (B > 0) lengths_kernel<<<grid_for(B), 256, 0, s>>>(xs, B, T, len, bad);
  return cudaGetLastError();
}

cudaError_t launch_lstm_seq(cudaStream_t s, float* dst, const float* src, int T, int B, int F, bool batch_first,
                            bool to_time_major) {
  const int64_t total = static_cast<int64_t>(T) * B * F;
  if (total > 0) seq_kernel<<<grid_for(total), 256, 0, s>>>(dst, src, T, B, F, batch_first, to_time_major);
  return cudaGetLastError();
}

cudaError_t launch_lstm_add_bias(cudaStream_t s, float* g, size_t rows, int H4, const float* b_ih, const float* b_hh) {
  const int64_t total = static_cast<int64_t>(rows) * H4;
  if (total > 0) add_bias_kernel<<<grid_for(total), 256, 0, s>>>(g, total, H4, b_ih, b_hh);
  return cudaGetLastError();
}

cudaError_t launch_lstm_cell_forward(cudaStream_t s, float* g_t, const float* gh, const float* c_prev, float* c_out,
                                     const float* h_prev, float* h_out, float* m_out, int B, int H, int t,
                                     const int* len) {
  const int64_t total = static_cast<int64_t>(B) * H;
  if (total > 0)
    cell_forward_kernel<<<grid_for(total), 256, 0, s>>>(g_t, gh, c_prev, c_out, h_prev, h_out, m_out, B, H, t, len);
  return cudaGetLastError();
}

cudaError_t launch_lstm_rows(cudaStream_t s, float* dst, const float* src, int B, int W, const int* len, int t,
                             bool valid) {
  const int64_t total = static_cast<int64_t>(B) * W;
  if (total > 0) rows_kernel<<<grid_for(total), 256, 0, s>>>(dst, src, B, W, len, t, valid);
  return cudaGetLastError();
}

cudaError_t launch_lstm_write_y(cudaStream_t s, float* out, int O, int off, const float* S, int T, int B, int P, int d,
                                const int* len) {
  const int64_t total = static_cast<int64_t>(T) * B * P;
  if (total > 0) write_y_kernel<<<grid_for(total), 256, 0, s>>>(out, O, off, S, T, B, P, d, len);
  return cudaGetLastError();
}

cudaError_t launch_lstm_dropout(cudaStream_t s, const float* out, float* next, float* factors, size_t n, uint64_t key,
                                double p, float scale, bool drop) {
  if (n > 0)
    dropout_kernel<<<grid_for(static_cast<int64_t>(n)), 256, 0, s>>>(out, next, factors, static_cast<int64_t>(n), key,
                                                                     p, scale, drop);
  return cudaGetLastError();
}

cudaError_t launch_lstm_dh_add(cudaStream_t s, float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P,
                               const int* len, int t) {
  const int64_t total = static_cast<int64_t>(B) * P;
  if (total > 0) dh_add_kernel<<<grid_for(total), 256, 0, s>>>(dh, dh_t, dout_t, ldo, B, P, len, t);
  return cudaGetLastError();
}

cudaError_t launch_lstm_cell_backward(cudaStream_t s, const float* g_t, const float* c_prev, const float* c_now,
                                      const float* dm, float* dc, float* dpre_t, int B, int H, int t, const int* len) {
  const int64_t total = static_cast<int64_t>(B) * H;
  if (total > 0) cell_backward_kernel<<<grid_for(total), 256, 0, s>>>(g_t, c_prev, c_now, dm, dc, dpre_t, B, H, t, len);
  return cudaGetLastError();
}

cudaError_t launch_lstm_bias_grad(cudaStream_t s, float* db_ih, float* db_hh, const float* dpre, size_t rows, int H4) {
  if (H4 > 0) bias_grad_kernel<<<grid_for(H4), 256, 0, s>>>(db_ih, db_hh, dpre, static_cast<int64_t>(rows), H4);
  return cudaGetLastError();
}

cudaError_t launch_lstm_scale(cudaStream_t s, float* dst, const float* src, const float* factors, size_t n) {
  if (n > 0) scale_kernel<<<grid_for(static_cast<int64_t>(n)), 256, 0, s>>>(dst, src, factors, static_cast<int64_t>(n));
  return cudaGetLastError();
}

}  // namespace nnc::cuda
