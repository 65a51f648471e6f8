// The AVX-512F loops of the channels-inner (NHWC) batch norm, fp32, on packed
// rows of K channels (cpu_opt_avx512.cpp; call only after
// cpu_features().avx512):
//
//   if (K % 16 == 0 && K <= norm::kSumsMaxK) norm::col_sqdev_regs(x, rows, K, c, acc, dev);
//   if (norm::stream_ok(y, K)) norm::col_affine_stream(x, y, rows, K, c, a, b);
//
// The sums keep their accumulators in registers over all the rows (red::Loops'
// col_sqdev / col_dot2 add into memory row by row, a store-to-load chain that
// bounds them below the memory's speed). The output loops compute what
// col_affine / col_axpbypc compute but write with non-temporal stores: a
// large output is not read again soon, and streaming it spares the read of
// each line before it is written and keeps the inputs in cache instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnc::norm {

// Rows of K floats starting at out can be streamed: K a multiple of 16 and out
// aligned to 64 bytes.
inline bool stream_ok(const float* out, size_t K) { return K % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0; }

// y[r, j] = (x[r, j] - c[j]) * a[j] + b[j] for r < rows, j < K.
void col_affine_stream(const float* x, float* y, size_t rows, size_t K, const float* c, const float* a, const float* b);

// dx[r, j] = a[j] g[r, j] + b[j] (x[r, j] - m[j]) + c[j].
void col_axpbypc_stream(const float* g, const float* x, float* dx, size_t rows, size_t K, const float* m,
                        const float* a, const float* b, const float* c);

// Channels-inner sums with the accumulators in registers (K a multiple of 16,
// at most kSumsMaxK): acc[j] += (x - c[j])^2 and dev[j] += x - c[j] over the
// rows (col_sqdev), or sg[j] += g and sgx[j] += g (x - c[j]) (col_dot2).
constexpr size_t kSumsMaxK = 128;
void col_sqdev_regs(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev);
void col_dot2_regs(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx);

}  // namespace nnc::norm
