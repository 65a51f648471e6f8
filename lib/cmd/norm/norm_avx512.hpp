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

// The register sums take K a multiple of 16 up to kSumsMaxK.
constexpr size_t kSumsMaxK = 128;

#include "cmd/norm/norm_loops_decl.hpp"

}  // namespace nnc::norm
