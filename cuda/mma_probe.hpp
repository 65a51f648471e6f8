// A check of cuda/mma.cuh's fragment layout on the device it runs on (the
// GPU tests' MmaLayout.*): one warp computes D = A B (A 16 x 16, B 16 x 8,
// row-major 16-bit arrays, D 16 x 8 float) through mma_16816, each operand
// gathered into its fragments by the documented layout. A wrong layout gives
// a wrong product, so the test tells whether every tensor-core kernel of ours
// (the flash attention forward: flash_mma_kernels.cu) reads its fragments as
// the hardware does.
#pragma once

#include <cuda_runtime.h>

namespace nnc::cuda {

// bf16: the operands are __nv_bfloat16 (else __half).
cudaError_t launch_mma_probe(cudaStream_t s, int bf16, const void* a, const void* b, float* d);

}  // namespace nnc::cuda
