// A check of cuda/async_copy.cuh on the device it runs on (the GPU tests'
// LdmatrixLayout.*): one warp copies 32 rows of 8 16-bit values into shared
// memory with cp.async (rows placed in a scrambled order), waits, reads them
// back plainly and loads them with ldmatrix .x4, .x4.trans, .x2 and .x2.trans,
// lane l giving the address of source row l. A wrong reading of the
// instruction's layout gives the registers in other places, so the test tells
// whether the flash forward's fragment loads (flash_mma_kernels.cu) read what
// the tensor cores expect.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nnc::cuda {

// src: 32 x 8 16-bit values (row r is matrix r / 8's row r % 8); out: 32 x 8
// 16-bit values (the rows read back from shared memory), then 32 x 12
// registers: lane l's x4[0..3], x4.trans[0..3], x2[0..1], x2.trans[0..1].
constexpr int kLdmatrixProbeWords = 32 * 4 + 32 * 12;  // 32-bit words of out
cudaError_t launch_ldmatrix_probe(cudaStream_t s, const uint16_t* src, uint32_t* out);

}  // namespace nnc::cuda
