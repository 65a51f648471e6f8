// Launch functions of the GPU LSTM's fused kernels (lstm_kernels.cu), called
// by the Ops of lstm_gpu.cpp in the order cmd/common/gpu_lstm.hpp's schedule
// gives (its comments define each one). fp32, packed buffers; `len` holds
// each sequence's length on the device. Each returns the launch status.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace nnc::cuda {

// len[b] = xs[b] (T without xs), clamped to 0 .. T; bad = INT_MAX - the first
// b outside it (0: all good).
cudaError_t launch_lstm_lengths(cudaStream_t s, const int* xs, int B, int T, int* len, int* bad);
// Between a sequence tensor ([T, B, F] or [B, T, F]) and time-major [T, B, F].
cudaError_t launch_lstm_seq(cudaStream_t s, float* dst, const float* src, int T, int B, int F, bool batch_first,
                            bool to_time_major);
cudaError_t launch_lstm_add_bias(cudaStream_t s, float* g, size_t rows, int H4, const float* b_ih, const float* b_hh);
cudaError_t launch_lstm_cell_forward(cudaStream_t s, float* g_t, const float* gh, const float* c_prev, float* c_out,
                                     const float* h_prev, float* h_out, float* m_out, int B, int H, int t,
                                     const int* len);
// dst[b] = src[b] for the rows past their sequence's end (valid == false) or
// within it (valid == true).
cudaError_t launch_lstm_rows(cudaStream_t s, float* dst, const float* src, int B, int W, const int* len, int t,
                             bool valid);
cudaError_t launch_lstm_write_y(cudaStream_t s, float* out, int O, int off, const float* S, int T, int B, int P, int d,
                                const int* len);
cudaError_t launch_lstm_dropout(cudaStream_t s, const float* out, float* next, float* factors, size_t n, uint64_t key,
                                double p, float scale, bool drop);
cudaError_t launch_lstm_dh_add(cudaStream_t s, float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P,
                               const int* len, int t);
cudaError_t launch_lstm_cell_backward(cudaStream_t s, const float* g_t, const float* c_prev, const float* c_now,
                                      const float* dm, float* dc, float* dpre_t, int B, int H, int t, const int* len);
cudaError_t launch_lstm_bias_grad(cudaStream_t s, float* db_ih, float* db_hh, const float* dpre, size_t rows, int H4);
cudaError_t launch_lstm_scale(cudaStream_t s, float* dst, const float* src, const float* factors, size_t n);

}  // namespace nnc::cuda
