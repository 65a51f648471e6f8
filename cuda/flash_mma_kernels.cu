// The tensor-core flash attention forward (design: lib/cmd/common/gpu_flash.hpp,
// "The tensor-core forward"): FlashAttention-2 on mma.sync.m16n8k16 for 16F /
// 16BF q, k, v, fp32 accumulation, o and lse as the scalar flash forward
// writes them (flash_kernels.cu, whose backward reads this lse).
//
// Per work item (b, kv head, 64 (query row, query head) pairs of the heads
// sharing the kv head: gpu::flash_mma_item), warp w owns rows 16 w .. 16 w + 15:
//   q rows -> shared (staged in the k tile) -> the warp's A fragments, held
//   in registers for the whole item (KD = bucket / 16 of them);
//   per key tile of 64: k and v -> shared (16-bit, zero past Sk and past
//   D / Dv); S = q k^T in 8 accumulator tiles of 16 x 8; the scores finished
//   (scale, mask, causal: gpu_attn.hpp), the running max and sum per row (a
//   row's 16 values of a tile sit in the 4 lanes of a quad: two xor
//   shuffles), o rescaled, p packed to 16 bits straight from the accumulators
//   into A fragments (accumulator tiles 2 kk and 2 kk + 1 are the A fragment
//   of keys 16 kk .. 16 kk + 15), o += p v.
// Each o element is summed by one lane in a fixed order: reruns give the
// same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>

#include "cuda/async_copy.cuh"
#include "cuda/flash_kern.hpp"
#include "cuda/mma.cuh"
#include "cuda/mma_tile.cuh"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::AttnShape;
using gpu::kFlashMmaKeys;
using gpu::kFlashMmaRows;
using gpu::kFlashMmaThreads;

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// HB: the head bucket (32, 64, 128): q and k rows of HB, v rows of HB.
// kAsync (k and v with gpu::flash_tile16_runs, NNC_GPU_ATTN_ASYNC not 0):
// k and v tiles by cp.async into two buffers (buffer p: k at
// sk + 2 p kFlashMmaKeys LD, v right after it), tile j + 1 in flight while
// tile j is computed on (q is staged in buffer 1's k while the item's first
// tile loads into buffer 0), fragments by ldmatrix; the products and sums in
// the same order as the plain loads', so both give the same bits.
template <int HB, class T, bool kAsync>
__global__ void __launch_bounds__(kFlashMmaThreads) flash_mma_forward(FlashArgs a) {
  constexpr int KD = HB / 16;               // k-steps of q k^T
  constexpr int NV = HB / 8;                // 8-column tiles of o
  constexpr int NS = kFlashMmaKeys / 8;     // 8-key tiles of a score tile
  constexpr int KP = kFlashMmaKeys / 16;    // k-steps of p v
  constexpr int LD = HB + 8;                // = gpu::flash_mma_stride(HB)
  constexpr int TILE = kFlashMmaKeys * LD;  // halves of a k or v tile
  extern __shared__ __align__(16) float fsm[];
  uint16_t* const sbase = reinterpret_cast<uint16_t*>(fsm);
  uint16_t* sk = sbase;
  uint16_t* sv = sk + TILE;
  const AttnShape& s = a.s;
  const LdAs<T> ldm;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int G = gpu::flash_mma_group(s);
  const int splits = a.splits;
  const int64_t items = gpu::flash_mma_items(s) * splits;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, hk, v0, jbegin, jend;
    gpu::flash_mma_item(s, w / splits, &b, &hk, &v0);
    gpu::flash_mma_split_keys(gpu::flash_mma_key_end(s, v0), splits, static_cast<int>(w % splits), &jbegin, &jend);
    // The lane's two rows: pairs v0 + r0 and v0 + r0 + 8 (r0 = 16 warp + g),
    // each a query row i[u] of head h[u] (valid[u]: within the G Sq pairs).
    const int r0 = warp * 16 + g;
    int rend[2], i[2], h[2];
    bool valid[2];
    float m[2], l[2];
    for (int u = 0; u < 2; u++) {
      valid[u] = gpu::flash_mma_pair(s, hk, v0 + r0 + 8 * u, &i[u], &h[u]);
      rend[u] = valid[u] ? gpu::attn_key_end(s, i[u]) : 0;
      m[u] = gpu::attn_neg_inf(), l[u] = 0.f;
    }
    float o[NV][4];
#pragma unroll
    for (int n = 0; n < NV; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    // The k and v tiles of keys j0 into buffer p, by cp.async (one commit group).
    auto prefetch = [&](int p, int j0) {
      cp_tile16<T>(sbase + 2 * p * TILE, LD, kFlashMmaKeys, s.D, HB, a.k, s.k, b, j0, hk, s.Sk);
      cp_tile16<T>(sbase + (2 * p + 1) * TILE, LD, kFlashMmaKeys, s.Dv, HB, a.v, s.v, b, j0, hk, s.Sk);
    };
    uint16_t* sq = sk;  // q's staging
    if constexpr (kAsync) {
      if (jbegin < jend) prefetch(0, jbegin);
      cp_async_commit();
      sq = sbase + 2 * TILE;
    }
    // q: staged in a k tile, then into the warp's A fragments.
    load_tile16<T>(sq, LD, kFlashMmaRows, s.D, HB, a.q, s.q, a.type, b, v0, G, hk * G, G * s.Sq);
    __syncthreads();
    uint32_t qa[KD][4];
#pragma unroll
    for (int kd = 0; kd < KD; kd++) {
      if constexpr (kAsync)
        frag_a_x4(qa[kd], sq, LD, warp * 16, kd * 16, lane);
      else
        frag_a(qa[kd], sq, LD, warp * 16, kd * 16, lane);
    }
    int buf = 0;  // kAsync: the buffer of tile j0
    for (int j0 = jbegin; j0 < jend; j0 += kFlashMmaKeys) {
      __syncthreads();  // q's fragments are read (first tile); the previous tile's k and v are read
      if constexpr (kAsync) {
        if (j0 + kFlashMmaKeys < jend) prefetch(buf ^ 1, j0 + kFlashMmaKeys);
        cp_async_commit();
        cp_async_wait<1>();  // this thread's copies of tile j0 have landed ...
        __syncthreads();     // ... and every thread's
        sk = sbase + 2 * buf * TILE;
        sv = sk + TILE;
        buf ^= 1;
      } else {
        load_tile16<T>(sk, LD, kFlashMmaKeys, s.D, HB, a.k, s.k, a.type, b, j0, 1, hk, s.Sk);
        load_tile16<T>(sv, LD, kFlashMmaKeys, s.Dv, HB, a.v, s.v, a.type, b, j0, 1, hk, s.Sk);
        __syncthreads();
      }
      float sc[NS][4];
#pragma unroll
      for (int n = 0; n < NS; n++) {
        sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
        if constexpr (kAsync) {
#pragma unroll
          for (int kd = 0; kd < KD; kd += 2) {
            uint32_t kb0[2], kb1[2];
            frag_b_nk_x4(kb0, kb1, sk, LD, n * 8, kd * 16, lane);  // B(d, key) = k[key][d], two k-steps
            mma_16816<T>(sc[n], qa[kd], kb0, sc[n]);
            mma_16816<T>(sc[n], qa[kd + 1], kb1, sc[n]);
          }
        } else {
#pragma unroll
          for (int kd = 0; kd < KD; kd++) {
            uint32_t kb[2];
            frag_b_nk(kb, sk, LD, n * 8, kd * 16, lane);  // B(d, key) = k[key][d]
            mma_16816<T>(sc[n], qa[kd], kb, sc[n]);
          }
        }
      }
      // Finish the scores; the rows' new max, alpha, p and sums.
      float tmax[2] = {gpu::attn_neg_inf(), gpu::attn_neg_inf()};
#pragma unroll
      for (int n = 0; n < NS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int u = e >> 1, j = j0 + n * 8 + 2 * t + (e & 1);
          const float x =
              j < rend[u] ? gpu::attn_score_finish(s, sc[n][e], ldm, a.mask, b, h[u], i[u], j) : gpu::attn_neg_inf();
          sc[n][e] = x;
          tmax[u] = fmaxf(tmax[u], x);
        }
      float alpha[2], psum[2] = {0.f, 0.f};
#pragma unroll
      for (int u = 0; u < 2; u++) {
        const float m2 = fmaxf(m[u], quad_max(tmax[u]));
        alpha[u] = gpu::flash_alpha(m[u], m2);
        m[u] = m2;
      }
#pragma unroll
      for (int n = 0; n < NS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float p = gpu::flash_prob(sc[n][e], m[e >> 1]);
          sc[n][e] = p;
          psum[e >> 1] += p;
        }
#pragma unroll
      for (int u = 0; u < 2; u++) l[u] = l[u] * alpha[u] + quad_sum(psum[u]);
#pragma unroll
      for (int n = 0; n < NV; n++) {
        o[n][0] *= alpha[0], o[n][1] *= alpha[0];
        o[n][2] *= alpha[1], o[n][3] *= alpha[1];
      }
      // o += p v: p's A fragments straight from the score accumulators.
#pragma unroll
      for (int kk = 0; kk < KP; kk++) {
        uint32_t pa[4];
        frag_a_from_acc<T>(pa, sc, kk);
        if constexpr (kAsync) {
#pragma unroll
          for (int n = 0; n < NV; n += 2) {
            uint32_t vb0[2], vb1[2];
            frag_b_kn_x4(vb0, vb1, sv, LD, kk * 16, n * 8, lane);  // B(key, col) = v[key][col], two n-tiles
            mma_16816<T>(o[n], pa, vb0, o[n]);
            mma_16816<T>(o[n + 1], pa, vb1, o[n + 1]);
          }
        } else {
#pragma unroll
          for (int n = 0; n < NV; n++) {
            uint32_t vb[2];
            frag_b_kn(vb, sv, LD, kk * 16, n * 8, lane);  // B(key, col) = v[key][col]
            mma_16816<T>(o[n], pa, vb, o[n]);
          }
        }
      }
    }
    if (splits > 1) {  // this split's unnormalised o, m and l for the combine
      const int sp = static_cast<int>(w % splits);
      const int64_t rows = static_cast<int64_t>(s.B) * s.H * s.Sq * splits;
      float* pm = a.part + rows * s.Dv;
      float* pl = pm + rows;
#pragma unroll
      for (int u = 0; u < 2; u++) {
        if (!valid[u]) continue;
        const int64_t r = gpu::flash_mma_row(s, b, h[u], i[u]) * splits + sp;
#pragma unroll
        for (int n = 0; n < NV; n++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            const int d = n * 8 + 2 * t + c;
            if (d < s.Dv) a.part[r * s.Dv + d] = o[n][2 * u + c];
          }
        if (t == 0) pm[r] = m[u], pl[r] = l[u];
      }
      __syncthreads();  // the k tile (q's staging) is reused by the next item
      continue;
    }
#pragma unroll
    for (int u = 0; u < 2; u++) {
      if (!valid[u]) continue;
      const float inv = gpu::flash_out_scale(l[u]);
      if (a.o) {
#pragma unroll
        for (int n = 0; n < NV; n++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            const int d = n * 8 + 2 * t + c;
            if (d < s.Dv) {
              st_any(a.o, gpu::attn_off(a.o_view, b, i[u], h[u], d), a.o_type, o[n][2 * u + c] * inv);
            }
          }
      }
      if (a.lse && t == 0) st_any(a.lse, gpu::attn_lse_off(s, b, h[u], i[u]), a.lse_type, gpu::attn_lse(m[u], l[u]));
    }
    __syncthreads();  // the k tile (q's staging) is reused by the next item
  }
}

// The split runs of each row combined: o = sum_s o_s e^(m_s - M) / L and
// lse = M + log L, L = sum_s l_s e^(m_s - M), M = max_s m_s (a row no run saw
// a key of: o 0, lse -inf, as unsplit). One thread per (row, column).
__global__ void flash_mma_combine(FlashArgs a) {
  const AttnShape& s = a.s;
  const int splits = a.splits;
  const int64_t rows = static_cast<int64_t>(s.B) * s.H * s.Sq, n = rows * s.Dv;
  const float* pm = a.part + rows * splits * s.Dv;
  const float* pl = pm + rows * splits;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / s.Dv;
    const int d = static_cast<int>(e - r * s.Dv);
    float M = gpu::attn_neg_inf();
    for (int sp = 0; sp < splits; sp++) M = fmaxf(M, pm[r * splits + sp]);
    float L = 0.f, acc = 0.f;
    for (int sp = 0; sp < splits; sp++) {
      const float x = gpu::flash_alpha(pm[r * splits + sp], M);  // 0 for a run without keys
      L += pl[r * splits + sp] * x;
      acc += a.part[(r * splits + sp) * s.Dv + d] * x;
    }
    const int i = static_cast<int>(r % s.Sq);
    const int64_t bh = r / s.Sq;
    const int h = static_cast<int>(bh % s.H), b = static_cast<int>(bh / s.H);
    if (a.o) st_any(a.o, gpu::attn_off(a.o_view, b, i, h, d), a.o_type, acc * gpu::flash_out_scale(L));
    if (a.lse && d == 0) st_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type, gpu::attn_lse(M, L));
  }
}

template <int HB, class T>
cudaError_t launch(cudaStream_t st, const FlashArgs& a, bool async) {
  const int64_t items = gpu::flash_mma_items(a.s) * a.splits;
  if (async) {
    const int64_t bytes = gpu::flash_mma_async_shmem_bytes(HB);
    if (bytes > gpu::kFlashShmemLimit) {
      const cudaError_t e = cudaFuncSetAttribute(flash_mma_forward<HB, T, true>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
      if (e != cudaSuccess) return e;
    }
    flash_mma_forward<HB, T, true><<<gpu::flash_grid(items), kFlashMmaThreads, bytes, st>>>(a);
  } else {
    flash_mma_forward<HB, T, false>
        <<<gpu::flash_grid(items), kFlashMmaThreads, gpu::flash_mma_shmem_bytes(HB), st>>>(a);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || a.splits <= 1) return e;
  const int64_t n = static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq * a.s.Dv;
  flash_mma_combine<<<gpu::flash_grid((n + 255) / 256), 256, 0, st>>>(a);
  return cudaGetLastError();
}
template <class T>
cudaError_t launch_bucket(cudaStream_t st, const FlashArgs& a, int bucket) {
  // cp.async and ldmatrix where k and v copy in 16-byte runs (the fast case
  // of load_tile16), unless NNC_GPU_ATTN_ASYNC=0.
  const bool async = gpu::flash_mma_async_allowed(std::getenv("NNC_GPU_ATTN_ASYNC")) &&
                     gpu::flash_tile16_runs(a.type, kTypeCode<T>, a.s.k, a.s.D, a.k) &&
                     gpu::flash_tile16_runs(a.type, kTypeCode<T>, a.s.v, a.s.Dv, a.v);
  switch (bucket) {
    case 32:
      return launch<32, T>(st, a, async);
    case 64:
      return launch<64, T>(st, a, async);
    case 128:
      return launch<128, T>(st, a, async);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_flash_mma_forward(cudaStream_t st, const FlashArgs& a, int bucket) {
  if (gpu::flash_mma_items(a.s) == 0) return cudaSuccess;
  if (a.splits < 1 || (a.splits > 1 && !a.part)) return cudaErrorInvalidValue;
  if (a.type == kF16) return launch_bucket<__half>(st, a, bucket);
  if (a.type == kBF16) return launch_bucket<__nv_bfloat16>(st, a, bucket);
  return cudaErrorInvalidValue;
}

}  // namespace nnc::cuda
