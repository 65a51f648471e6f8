// The tensor-core (mma.sync) flash attention backward for 16F and 16BF
// (flash_mma_bwd_kernels.cu), called by attn_gpu.cpp's flash_backward
// instead of launch_flash_backward when the inputs are 16F / 16BF,
// NNC_GPU_ATTN_MMA is not "0" and gpu::flash_mma_bwd_geometry takes the head
// sizes (algorithm, tiles and layouts: lib/cmd/common/gpu_flash_mma.hpp).
#pragma once

#include <cuda_runtime.h>

#include "cmd/common/gpu_flash_mma.hpp"
#include "cuda/flash_kern.hpp"

namespace nnc::cuda {

// The scalar kernels' first backward pass alone (flash_kernels.cu):
// a.delta[(b H + h) Sq + i] = dO_i . O_i.
cudaError_t launch_flash_delta(cudaStream_t s, const FlashArgs& a);

// delta (launch_flash_delta), then dk and dv (when asked), then dq (when
// asked), on tensor cores. a.type must be kF16 or kBF16 (q, k, v, mask; dO,
// O, lse and the outputs of any type FlashArgs allows); g from
// gpu::flash_mma_bwd_geometry(a.s.D, a.s.Dv, &g). a.g is not read.
cudaError_t launch_flash_mma_backward(cudaStream_t s, const FlashArgs& a, const gpu::FlashMmaBwdGeom& g);

}  // namespace nnc::cuda
