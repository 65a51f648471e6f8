// The AVX2 + FMA loops of the channels-inner (NHWC) batch norm, fp32, on
// packed rows of K channels: what norm_avx512.hpp's loops do, for CPUs without
// AVX-512 (cpu_opt_avx2.cpp; call only after cpu_features().avx2):
//
//   if (norm::avx2::sums_ok(K)) norm::avx2::col_sqdev_regs(x, rows, K, c, acc, dev);
//   if (norm::avx2::stream_ok(y, K)) norm::avx2::col_affine_stream(x, y, rows, K, c, a, b);
//
// With 16 registers of 8 floats, a sum keeps at most 32 channels' two
// accumulators and centres in registers; wider rows take red::Loops' sums.
// Summing them 32 channels at a time over row blocks that stay in the L1 cache
// instead was slower (BATCH_NORM_BACKWARD, 32x56x56x64, one thread: 6.8 ms
// against 4.1 ms): each pass skips half of every row's lines, which the
// prefetchers do not follow.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnc::norm::avx2 {

// Rows of K floats starting at out can be streamed: K a multiple of 8 and out
// aligned to 32 bytes.
inline bool stream_ok(const float* out, size_t K) { return K % 8 == 0 && reinterpret_cast<uintptr_t>(out) % 32 == 0; }

// The register sums take K a multiple of 8 up to kSumsMaxK.
constexpr size_t kSumsMaxK = 32;
inline bool sums_ok(size_t K) { return K % 8 == 0 && K <= kSumsMaxK; }

#include "cmd/norm/norm_loops_decl.hpp"

// Layer norm's output loops with streamed stores (n a multiple of 8, out
// aligned to 32 bytes: stream_ok(out, n)); s / b may be NULL. The formulas of
// red::Loops' ln_forward and ln_backward_dx, with fused multiply-adds:
//   y[i] = ((x[i] - c) - r) * inv * s[i] + b[i]
//   dx[i] = inv * (g[i] s[i] - mh - (x[i] - mean) * inv * mhx)
void row_ln_forward_stream(const float* x, float* y, size_t n, float c, float r, float inv, const float* s,
                           const float* b);
void row_ln_dx_stream(const float* g, const float* x, float* dx, size_t n, float mean, float inv, const float* s,
                      float mh, float mhx);

}  // namespace nnc::norm::avx2
