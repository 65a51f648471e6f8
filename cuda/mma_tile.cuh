// Shared-memory tiles and mma.m16n8k16 fragments for the tensor-core flash
// kernels (flash_mma_kernels.cu, flash_mma_bwd_kernels.cu): tiles of 16-bit
// values loaded from an attention operand, and the A / B fragments of
// cuda/mma.cuh read from them (index maps: gpu::mma16816_* in
// lib/cmd/common/gpu_flash_mma.hpp, tested on the CPU against the PTX ISA's
// layout).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cmd/common/gpu_flash_mma.hpp"
#include "cuda/async_copy.cuh"
#include "cuda/mma.cuh"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

template <class T>
constexpr int kTypeCode = std::is_same_v<T, __half> ? kF16 : kBF16;

// 16 bytes from src to dst (both 16-byte aligned).
__device__ __forceinline__ void copy16(uint16_t* dst, const uint16_t* src) {
#if defined(NNC_GPU_EMU)
  std::memcpy(dst, src, 16);
#else
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#endif
}
__device__ __forceinline__ void zero16(uint16_t* dst) {
#if defined(NNC_GPU_EMU)
  std::memset(dst, 0, 16);
#else
  *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
#endif
}

// rows x npad 16-bit values (T's bits) into dst (row stride `stride` halves):
// tile row r is v = row0 + r, sequence row v / G of head head0 + v % G (G 1:
// row0 + r of head0; the tensor-core forward's query heads sharing a kv head:
// gpu::flash_mma_pair), element (r, d) of x (GpuType xtype) for v < limit and
// d < n, else 0. Consecutive threads take consecutive d.
template <class T>
__device__ __forceinline__ void load_tile16(uint16_t* dst, int stride, int rows, int n, int npad, const void* x,
                                            const gpu::AttnView& xv, int xtype, int b, int row0, int G, int head0,
                                            int limit) {
  // Runs of 8 (16 bytes) when the operand is of type T with rows of whole,
  // 16-byte aligned runs (dst rows are: stride and the regions are multiples
  // of 8 halves, npad of 16).
  if (gpu::flash_tile16_runs(xtype, kTypeCode<T>, xv, n, x)) {
    const int runs = npad / 8, count = rows * runs;
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
      const int r = e / runs, d = 8 * (e - r * runs), v = row0 + r;
      if (v < limit && d < n)
        copy16(dst + r * stride + d, static_cast<const uint16_t*>(x) + gpu::attn_off(xv, b, v / G, head0 + v % G, d));
      else
        zero16(dst + r * stride + d);
    }
    return;
  }
  const int count = rows * npad;
  for (int e = threadIdx.x; e < count; e += blockDim.x) {
    const int r = e / npad, d = e - r * npad, v = row0 + r;
    uint16_t bits = 0;
    if (v < limit && d < n) {
      const int64_t o = gpu::attn_off(xv, b, v / G, head0 + v % G, d);
      bits = xtype == kTypeCode<T> ? static_cast<const uint16_t*>(x)[o] : bits16<T>(ld_any(x, o, xtype));
    }
    dst[r * stride + d] = bits;
  }
}

// load_tile16's copy in runs of 16 bytes (G 1), started with cp.async: rows
// x npad values of x (an operand with gpu::flash_tile16_runs) into dst, rows
// row0 + r < limit of head `head`, zero past the limit and past n (those
// runs by plain stores). The calling thread's copies join its next
// cp_async_commit group; the tile is complete for the block after a
// cp_async_wait retiring that group and a __syncthreads.
template <class T>
__device__ __forceinline__ void cp_tile16(uint16_t* dst, int stride, int rows, int n, int npad, const void* x,
                                          const gpu::AttnView& xv, int b, int row0, int head, int limit) {
  const int runs = npad / 8, count = rows * runs;
  for (int e = threadIdx.x; e < count; e += blockDim.x) {
    const int r = e / runs, d = 8 * (e - r * runs), v = row0 + r;
    if (v < limit && d < n)
      cp_async16(dst + r * stride + d, static_cast<const uint16_t*>(x) + gpu::attn_off(xv, b, v, head, d));
    else
      zero16(dst + r * stride + d);
  }
}

// Two adjacent 16-bit values of shared memory (4-byte aligned) as one register.
__device__ __forceinline__ uint32_t ld32(const uint16_t* p) {
#if defined(NNC_GPU_EMU)
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#else
  return *reinterpret_cast<const uint32_t*>(p);
#endif
}
// The A fragment of the 16 x 16 block at (row0, col0) of a row-major tile.
__device__ __forceinline__ void frag_a(uint32_t (&a)[4], const uint16_t* m, int stride, int row0, int col0, int lane) {
#pragma unroll
  for (int r = 0; r < 4; r++)
    a[r] = ld32(m + (row0 + gpu::mma16816_a_row(lane, r)) * stride + col0 + gpu::mma16816_a_col(lane, r));
}
// The B fragment B(k, n) = m[n0 + n][k0 + k] (a row-major tile read
// transposed: the pairs along k are adjacent).
__device__ __forceinline__ void frag_b_nk(uint32_t (&bf)[2], const uint16_t* m, int stride, int n0, int k0, int lane) {
#pragma unroll
  for (int r = 0; r < 2; r++)
    bf[r] = ld32(m + (n0 + gpu::mma16816_b_n(lane)) * stride + k0 + gpu::mma16816_b_k(lane, r));
}
// The B fragment B(k, n) = m[k0 + k][n0 + n] (the pairs along k are two rows).
__device__ __forceinline__ void frag_b_kn(uint32_t (&bf)[2], const uint16_t* m, int stride, int k0, int n0, int lane) {
  const int n = n0 + gpu::mma16816_b_n(lane);
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int k = k0 + gpu::mma16816_b_k(lane, r);
    bf[r] = pack16(m[k * stride + n], m[(k + 1) * stride + n]);
  }
}
// The same fragments by ldmatrix (cuda/async_copy.cuh; lane addresses:
// gpu::ldsm_*, checked on the CPU against the gpu::mma16816_* maps). Rows
// must be 16-byte aligned (stride and column offsets multiples of 8).
// frag_a's A fragment.
__device__ __forceinline__ void frag_a_x4(uint32_t (&a)[4], const uint16_t* m, int stride, int row0, int col0,
                                          int lane) {
  ldmatrix_x4(a, m + (row0 + gpu::ldsm_quad_row(lane)) * stride + col0 + gpu::ldsm_quad_col(lane));
}
// frag_b_nk's B fragments of k-steps k0 (b0) and k0 + 16 (b1).
__device__ __forceinline__ void frag_b_nk_x4(uint32_t (&b0)[2], uint32_t (&b1)[2], const uint16_t* m, int stride,
                                             int n0, int k0, int lane) {
  uint32_t r[4];
  ldmatrix_x4(r, m + (n0 + gpu::ldsm_row8_row(lane)) * stride + k0 + gpu::ldsm_row8_col(lane));
  b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
}
// frag_b_nk's B fragment of k-step k0 alone (ldmatrix .x2: lanes 0..15's
// addresses; the others give the same, valid ones).
__device__ __forceinline__ void frag_b_nk_x2(uint32_t (&bf)[2], const uint16_t* m, int stride, int n0, int k0,
                                             int lane) {
  ldmatrix_x2(bf, m + (n0 + gpu::ldsm_row8_row(lane & 15)) * stride + k0 + gpu::ldsm_row8_col(lane & 15));
}
// frag_b_kn's B fragments of n-tiles n0 (b0) and n0 + 8 (b1).
__device__ __forceinline__ void frag_b_kn_x4(uint32_t (&b0)[2], uint32_t (&b1)[2], const uint16_t* m, int stride,
                                             int k0, int n0, int lane) {
  uint32_t r[4];
  ldmatrix_x4_trans(r, m + (k0 + gpu::ldsm_quad_row(lane)) * stride + n0 + gpu::ldsm_quad_col(lane));
  b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
}

// The A fragment of k-step kk from fp32 accumulator tiles (rounded to T).
template <class T, int N>
__device__ __forceinline__ void frag_a_from_acc(uint32_t (&a)[4], const float (&c)[N][4], int kk) {
#pragma unroll
  for (int r = 0; r < 4; r++) {
    const int tile = 2 * kk + gpu::mma16816_c2a_tile(r), e = gpu::mma16816_c2a_elem(r);
    a[r] = pack_floats<T>(c[tile][e], c[tile][e + 1]);
  }
}

}  // namespace nnc::cuda
