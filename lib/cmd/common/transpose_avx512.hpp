// fp32 matrix transposes on AVX-512 by 16 x 16 register tiles.
//
// transpose_f32_avx512 may be called from any file once
// nnc::cpu_features().avx512 is known to be true:
//
//   // y (cols x rows, rows ys apart) = transpose of x (rows x cols, rows xs apart)
//   nnc::transpose_f32_avx512(x, xs, rows, cols, y, ys);
#pragma once

#include <cstdint>

namespace nnc {

// y[j * ys + i] = x[i * xs + j] for i < rows, j < cols.
void transpose_f32_avx512(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys);

}  // namespace nnc
