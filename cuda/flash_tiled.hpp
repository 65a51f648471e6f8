// The register-tiled scalar (fp32 FMA) flash attention kernels
// (flash_tiled_kernels.cu): the default for the calls that the scalar flash
// kernels (flash_kernels.cu) serve with head sizes D, Dv up to
// kFlashTiledMaxHead — every 32F call, and 16F / 16BF calls kept off the
// tensor cores. Same contract and arguments as launch_flash_forward /
// launch_flash_backward (flash_kern.hpp; a.g is not read).
//
// Tiling (GEMM style): a block of kFlashTiledThreads = 256 threads (16 x 16)
// takes 64 query rows (forward, dq) or 64 keys (dk / dv) and walks the other
// side in tiles of 64; each thread owns a 4 x 4 micro-tile of the 64 x 64
// score tile (rows 4 ty .. 4 ty + 3, keys 4 tx .. 4 tx + 3) and the matching
// 4 rows x DB / 16 columns of the output (columns 4 tx + 64 c .. + 3) in
// registers. q, k, v, dO tiles sit in shared memory as float: transposed
// ([d][64 rows], 16-byte groups XOR-swizzled by d, so the transposing stores
// and the float4 fragment reads are both free of bank conflicts) for the
// products over d, natural ([row][DB]) where the product runs over rows;
// p / ds pass through a swizzled [64][64] tile. Online softmax in base 2
// (scale folded with log2 e, exp2f), each row's max reduced over its 16
// lanes with shuffles; l is kept per thread and reduced once at the end.
// The backward: delta (flash_kernels.cu's kernel), then dk / dv per key tile
// looping over the group's query heads and query tiles, then dq per query
// tile looping over key tiles: no atomics, each output summed by one thread
// in a fixed order (reruns give the same bits).
//
// NNC_GPU_ATTN_F32=old keeps the old scalar flash kernels (flash_kernels.cu)
// for everything, =fwd / =bwd takes only the forward / only the backward
// here; unset or anything else: these kernels for heads up to 128.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "cuda/flash_kern.hpp"

namespace nnc::cuda {

constexpr int kFlashTiledThreads = 256;
constexpr int kFlashTiledRows = 64;  // query rows (or keys) per block and per tile
constexpr int kFlashTiledMaxHead = 128;

// Whether the tiled kernels take a call's forward (backward false) or
// backward (true) with head sizes D, Dv, given the value of NNC_GPU_ATTN_F32
// (NULL when unset): "old" neither (the old scalar kernels), "fwd" only the
// forward, "bwd" only the backward, anything else both.
inline bool flash_tiled_takes(int D, int Dv, bool backward, const char* env_value) {
  if (env_value && std::strcmp(env_value, "old") == 0) return false;
  if (env_value && std::strcmp(env_value, backward ? "fwd" : "bwd") == 0) return false;
  return D >= 1 && Dv >= 1 && D <= kFlashTiledMaxHead && Dv <= kFlashTiledMaxHead;
}
inline bool flash_tiled_takes_from_env(int D, int Dv, bool backward) {
  return flash_tiled_takes(D, Dv, backward, std::getenv("NNC_GPU_ATTN_F32"));
}

// NNC_GPU_ATTN_F32_ASYNC: double-buffered 32F tiles, the next tile copied
// by cp.async while the current one is computed on — in the forward k / v
// (shared memory 96 KB / 176 KB for heads up to 64 / 128), in dk / dv the q
// / dO tiles (heads up to 64 only: 192 KB). "0": never (one buffer, loads
// through registers); "1": wherever it fits (the forward at heads above 64
// then runs one block per SM instead of two); unset or anything else
// (mode 2): where it keeps the occupancy, heads up to 64.
inline int flash_tiled_async_mode(const char* v) {
  if (v && std::strcmp(v, "0") == 0) return 0;
  if (v && std::strcmp(v, "1") == 0) return 1;
  return 2;
}
inline int flash_tiled_async_mode_from_env() { return flash_tiled_async_mode(std::getenv("NNC_GPU_ATTN_F32_ASYNC")); }

// o and lse (as launch_flash_forward).
cudaError_t launch_flash_tiled_forward(cudaStream_t s, const FlashArgs& a);
// delta, then dk and dv (when asked), then dq (when asked).
cudaError_t launch_flash_tiled_backward(cudaStream_t s, const FlashArgs& a);
// flash_kernels.cu's delta pass (delta = dO . O per row).
cudaError_t launch_flash_delta(cudaStream_t s, const FlashArgs& a);

}  // namespace nnc::cuda
