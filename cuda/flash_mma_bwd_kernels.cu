// The tensor-core flash attention backward for 16F / 16BF (flash_mma_bwd.hpp;
// algorithm, tiles, shared-memory layouts and fragment maps:
// lib/cmd/common/gpu_flash_mma.hpp). Every tile product is mma_16816<T>
// (cuda/mma.cuh: fp16 / bf16 operands, fp32 accumulation); the softmax
// probabilities and ds are computed in fp32 from the accumulators and rounded
// to T once, as the A operand of dV += P^T dO, dK += dS^T Q and dQ += dS K.
// Each output element is accumulated by one lane in a fixed order (no
// atomics): reruns give the same bits. Warp-uniform control flow around every
// mma (all 32 lanes call it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cuda/async_copy.cuh"
#include "cuda/flash_mma_bwd.hpp"
#include "cuda/mma.cuh"
#include "cuda/mma_tile.cuh"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::AttnShape;
using gpu::AttnView;
using gpu::FlashMmaBwdGeom;
using gpu::kFlashMmaBwdKeys;
using gpu::kFlashMmaBwdRows;
using gpu::kFlashMmaBwdThreads;

// The softmax in base 2 (as the forward, flash_mma_kernels.cu): x = dot
// scale log2(e) (+ mask log2(e)), p = 2^(x - lse log2(e)); a row without
// keys (lse -inf) subtracts +inf instead, so that its p is 0 as attn_prob's.
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float lse_base2(float lse) {
  return lse == gpu::attn_neg_inf() ? INFINITY : lse * kLog2e;
}

template <int N>
__device__ __forceinline__ void zero(float (&c)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) c[n][e] = 0.f;
}

// c[nt] += A (16 x 16k rows row0.. of a, k over kd steps) B, B(k, n) = b[n0 + n][k]
// for the N n8 tiles n0 = 8 nt: the "X Y^T" product of two row-major tiles.
// kLdsm: fragments by ldmatrix (two k-steps at a time, the last odd one by
// .x2), the sums of each c[nt] in the same order (k-steps ascending).
template <class T, bool kLdsm, int N>
__device__ __forceinline__ void mma_abt(float (&c)[N][4], const uint16_t* a, int as, int row0, const uint16_t* b,
                                        int bs, int ksteps, int lane) {
  if constexpr (kLdsm) {
    int kd = 0;
    for (; kd + 1 < ksteps; kd += 2) {
      uint32_t af0[4], af1[4];
      frag_a_x4(af0, a, as, row0, 16 * kd, lane);
      frag_a_x4(af1, a, as, row0, 16 * kd + 16, lane);
#pragma unroll
      for (int nt = 0; nt < N; nt++) {
        uint32_t bf0[2], bf1[2];
        frag_b_nk_x4(bf0, bf1, b, bs, 8 * nt, 16 * kd, lane);
        mma_16816<T>(c[nt], af0, bf0, c[nt]);
        mma_16816<T>(c[nt], af1, bf1, c[nt]);
      }
    }
    if (kd < ksteps) {
      uint32_t af[4];
      frag_a_x4(af, a, as, row0, 16 * kd, lane);
#pragma unroll
      for (int nt = 0; nt < N; nt++) {
        uint32_t bf[2];
        frag_b_nk_x2(bf, b, bs, 8 * nt, 16 * kd, lane);
        mma_16816<T>(c[nt], af, bf, c[nt]);
      }
    }
  } else {
    for (int kd = 0; kd < ksteps; kd++) {
      uint32_t af[4];
      frag_a(af, a, as, row0, 16 * kd, lane);
#pragma unroll
      for (int nt = 0; nt < N; nt++) {
        uint32_t bf[2];
        frag_b_nk(bf, b, bs, 8 * nt, 16 * kd, lane);
        mma_16816<T>(c[nt], af, bf, c[nt]);
      }
    }
  }
}

// acc[nt] += A B for nt < ntiles (of N; both even), A the k-step kk
// fragment, B(k, n) = m[16 kk + k][8 nt + n]. kLdsm: B by ldmatrix .trans,
// two n-tiles at a time.
template <class T, bool kLdsm, int N>
__device__ __forceinline__ void mma_acc_kn(float (&acc)[N][4], const uint32_t (&af)[4], const uint16_t* m, int stride,
                                           int kk, int ntiles, int lane) {
  if constexpr (kLdsm) {
    static_assert(N % 2 == 0, "pairs of n-tiles");
#pragma unroll
    for (int nt = 0; nt < N; nt += 2)
      if (nt < ntiles) {
        uint32_t bf0[2], bf1[2];
        frag_b_kn_x4(bf0, bf1, m, stride, 16 * kk, 8 * nt, lane);
        mma_16816<T>(acc[nt], af, bf0, acc[nt]);
        mma_16816<T>(acc[nt + 1], af, bf1, acc[nt + 1]);
      }
  } else {
#pragma unroll
    for (int nt = 0; nt < N; nt++)
      if (nt < ntiles) {
        uint32_t bf[2];
        frag_b_kn(bf, m, stride, 16 * kk, 8 * nt, lane);
        mma_16816<T>(acc[nt], af, bf, acc[nt]);
      }
  }
}

// dq: one block per (b, h, kFlashMmaBwdRows query rows), warp w owning rows
// 16 w .. 16 w + 15 of the tile, over the key tiles the rows can see.
// kAsync (k and v with gpu::flash_tile16_runs, NNC_GPU_ATTN_ASYNC not 0): the
// k and v tiles by cp.async into two buffers (g.dq_k / dq_v and g.dq_k1 /
// dq_v1), tile j + 1 in flight while tile j is computed on; at the 128
// bucket fragments by ldmatrix.
// kMask: s.has_mask (kernels of their own: the mask's addressing costs
// registers). The visibility test and the mask run only on the tiles that
// cross some row's end (or with a mask).
template <class T, int DM, bool kAsync, bool kMask>
__global__ void flash_mma_dq(FlashArgs a, FlashMmaBwdGeom g) {
  constexpr int NT = DM / 8;                            // n8 tiles of the lane's dQ
  constexpr int BK = gpu::flash_mma_bwd_dq_k_tile(DM);  // keys per tile
  constexpr int ST = BK / 8;                            // n8 tiles of S, dP
  // Fragments by ldmatrix with cp.async at the 128 bucket only: below it the
  // registers ldmatrix's paired fragments take (181 / 185 against 150 / 168
  // at 32 / 64) would cost a block an SM (3 -> 2).
  constexpr bool kLdsm = kAsync && DM == 128;
  extern __shared__ __align__(16) unsigned char fmsm[];
  const AttnShape& s = a.s;
  uint16_t* sq = reinterpret_cast<uint16_t*>(fmsm + g.dq_q);
  uint16_t* sdo = reinterpret_cast<uint16_t*>(fmsm + g.dq_do);
  uint16_t* sk = reinterpret_cast<uint16_t*>(fmsm + g.dq_k);
  uint16_t* sv = reinterpret_cast<uint16_t*>(fmsm + g.dq_v);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int ndt = g.Dp / 8, nkd = g.Dp / 16, nkv = g.Dvp / 16;
  // kAsync: the k and v tiles of keys j0 into buffer p (one commit group).
  auto prefetch = [&](int p, int b, int hk, int j0) {
    cp_tile16<T>(reinterpret_cast<uint16_t*>(fmsm + (p ? g.dq_k1 : g.dq_k)), g.ks, BK, s.D, g.Dp, a.k, s.k, b, j0, hk,
                 s.Sk);
    cp_tile16<T>(reinterpret_cast<uint16_t*>(fmsm + (p ? g.dq_v1 : g.dq_v)), g.vs, BK, s.Dv, g.Dvp, a.v, s.v, b, j0, hk,
                 s.Sk);
  };
  const LdAs<T> ldm;
  const int64_t items = gpu::flash_mma_bwd_row_tiles(s);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, h, i0;
    gpu::flash_mma_bwd_row_tile(s, w, &b, &h, &i0);
    const int hk = gpu::attn_kv_head(s, h);
    const int kend = gpu::flash_tile_key_end(s, i0, kFlashMmaBwdRows);
    if constexpr (kAsync) {
      if (kend > 0) prefetch(0, b, hk, 0);
      cp_async_commit();
    }
    load_tile16<T>(sq, g.ks, kFlashMmaBwdRows, s.D, g.Dp, a.q, s.q, a.type, b, i0, 1, h, s.Sq);
    load_tile16<T>(sdo, g.vs, kFlashMmaBwdRows, s.Dv, g.Dvp, a.dO, a.dO_view, a.dO_type, b, i0, 1, h, s.Sq);
    // The lane's rows (accumulator rows g and g + 8 of the warp's 16): the
    // keys each sees (0 past Sq), lse in base 2, delta; rmin the fewest keys
    // a row of the lane sees.
    int row[2], rend[2];
    float lse[2], dl[2];
    int rmin = 0x7fffffff;
#pragma unroll
    for (int u = 0; u < 2; u++) {
      const int i = i0 + 16 * warp + gpu::mma16816_c_row(lane, 2 * u);
      row[u] = i;
      rend[u] = i < s.Sq ? gpu::attn_key_end(s, i) : 0;
      if (i < s.Sq && rend[u] < rmin) rmin = rend[u];
      lse[u] = i < s.Sq ? lse_base2(ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type)) : INFINITY;
      dl[u] = i < s.Sq ? a.delta[(static_cast<int64_t>(b) * s.H + h) * s.Sq + i] : 0.f;
    }
    const float sl2 = s.scale * kLog2e;
    float acc[NT][4];
    zero(acc);
    int buf = 0;  // kAsync: the buffer of tile j0
    for (int j0 = 0; j0 < kend; j0 += BK) {
      __syncthreads();  // q, dO in place; the previous tile's k, v are read
      if constexpr (kAsync) {
        if (j0 + BK < kend) prefetch(buf ^ 1, b, hk, j0 + BK);
        cp_async_commit();
        cp_async_wait<1>();  // this thread's copies of tile j0 have landed ...
        __syncthreads();     // ... and every thread's
        sk = reinterpret_cast<uint16_t*>(fmsm + (buf ? g.dq_k1 : g.dq_k));
        sv = reinterpret_cast<uint16_t*>(fmsm + (buf ? g.dq_v1 : g.dq_v));
        buf ^= 1;
      } else {
        load_tile16<T>(sk, g.ks, BK, s.D, g.Dp, a.k, s.k, a.type, b, j0, 1, hk, s.Sk);
        load_tile16<T>(sv, g.vs, BK, s.Dv, g.Dvp, a.v, s.v, a.type, b, j0, 1, hk, s.Sk);
        __syncthreads();
      }
      float sc[ST][4], dp[ST][4];
      zero(sc), zero(dp);
      mma_abt<T, kLdsm>(sc, sq, g.ks, 16 * warp, sk, g.ks, nkd, lane);   // S = Q K^T
      mma_abt<T, kLdsm>(dp, sdo, g.vs, 16 * warp, sv, g.vs, nkv, lane);  // dP = dO V^T
      if (kMask || j0 + BK > rmin) {  // a mask, or a key hidden from a row of the lane
#pragma unroll
        for (int nt = 0; nt < ST; nt++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int u = e >> 1, j = j0 + 8 * nt + gpu::mma16816_c_col(lane, e);
            float ds = 0.f;
            if (j < rend[u]) {
              float x = sc[nt][e] * sl2;
              if constexpr (kMask) x += ldm(a.mask, gpu::attn_mask_off(s, b, h, row[u], j)) * kLog2e;
              const float p = exp2f(x - lse[u]);
              if (p != 0.f) ds = gpu::flash_ds(p, dp[nt][e], dl[u], s.scale);
            }
            sc[nt][e] = ds;
          }
      } else {
#pragma unroll
        for (int nt = 0; nt < ST; nt++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int u = e >> 1;
            const float p = exp2f(sc[nt][e] * sl2 - lse[u]);
            sc[nt][e] = p != 0.f ? gpu::flash_ds(p, dp[nt][e], dl[u], s.scale) : 0.f;
          }
      }
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {  // dQ += dS K
        uint32_t af[4];
        frag_a_from_acc<T>(af, sc, kk);
        mma_acc_kn<T, kLdsm>(acc, af, sk, g.ks, kk, ndt, lane);
      }
    }
    if (a.dq) {
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int i = row[e >> 1], d = 8 * nt + gpu::mma16816_c_col(lane, e);
          if (i < s.Sq && d < s.D) st_any(a.dq, gpu::attn_off(a.dq_view, b, i, h, d), a.out_type, acc[nt][e]);
        }
    }
    __syncthreads();  // q, dO, k, v are reused by the next item
  }
}

// dk and dv: one block per (b, kv head, kFlashMmaBwdKeys keys), warp w owning
// keys 16 w .. 16 w + 15 of the tile, over the group's query heads and the
// query tiles that can see the keys (steps (h, i0), i0 fastest). kAsync (q
// and dO with gpu::flash_tile16_runs, NNC_GPU_ATTN_ASYNC not 0): the q and dO
// tiles by cp.async into two buffers (g.kv_q / kv_do and g.kv_q1 / kv_do1),
// the next step's in flight while this step's are computed on; fragments by
// ldmatrix.
// kMask as flash_mma_dq's.
template <class T, int DM, bool kAsync, bool kMask>
__global__ void flash_mma_dkdv(FlashArgs a, FlashMmaBwdGeom g) {
  constexpr int NT = DM / 8;                            // n8 tiles of the lane's dK, dV
  constexpr int BQ = gpu::flash_mma_bwd_kv_q_tile(DM);  // query rows per tile
  constexpr int ST = BQ / 8;                            // n8 tiles of S^T, dP^T
  extern __shared__ __align__(16) unsigned char fmsm[];
  const AttnShape& s = a.s;
  uint16_t* sk = reinterpret_cast<uint16_t*>(fmsm + g.kv_k);
  uint16_t* sv = reinterpret_cast<uint16_t*>(fmsm + g.kv_v);
  uint16_t* sq = reinterpret_cast<uint16_t*>(fmsm + g.kv_q);
  uint16_t* sdo = reinterpret_cast<uint16_t*>(fmsm + g.kv_do);
  float* sl = reinterpret_cast<float*>(fmsm + g.kv_l);
  float* sdl = reinterpret_cast<float*>(fmsm + g.kv_dl);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nkd = g.Dp / 16, nkv = g.Dvp / 16, ndk = g.Dp / 8, ndv = g.Dvp / 8;
  const int G = s.H / s.Hk;
  const LdAs<T> ldm;
  const int64_t items = gpu::flash_mma_bwd_key_tiles(s);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, hk, j0;
    gpu::flash_mma_bwd_key_tile(s, w, &b, &hk, &j0);
    load_tile16<T>(sk, g.ks, kFlashMmaBwdKeys, s.D, g.Dp, a.k, s.k, a.type, b, j0, 1, hk, s.Sk);
    load_tile16<T>(sv, g.vs, kFlashMmaBwdKeys, s.Dv, g.Dvp, a.v, s.v, a.type, b, j0, 1, hk, s.Sk);
    // The lane's keys (accumulator rows g and g + 8 of the warp's 16), the
    // first query row that sees each (Sq: none; past Sk: none), and qmax,
    // the last of those of the lane's keys within Sk.
    int key[2], qbeg[2], qmax = 0;
#pragma unroll
    for (int u = 0; u < 2; u++) {
      key[u] = j0 + 16 * warp + gpu::mma16816_c_row(lane, 2 * u);
      qbeg[u] = key[u] < s.Sk ? gpu::attn_query_begin(s, key[u]) : s.Sq;
      if (key[u] < s.Sk && qbeg[u] > qmax) qmax = qbeg[u];
    }
    const float sl2 = s.scale * kLog2e;
    float dk[NT][4], dv[NT][4];
    zero(dk), zero(dv);
    const int ib = gpu::flash_tile_query_begin(s, j0);
    // kAsync: the q and dO tiles of step (h, i0) into buffer p (one commit group).
    auto prefetch = [&](int p, int h, int i0) {
      cp_tile16<T>(reinterpret_cast<uint16_t*>(fmsm + (p ? g.kv_q1 : g.kv_q)), g.ks, BQ, s.D, g.Dp, a.q, s.q, b, i0, h,
                   s.Sq);
      cp_tile16<T>(reinterpret_cast<uint16_t*>(fmsm + (p ? g.kv_do1 : g.kv_do)), g.vs, BQ, s.Dv, g.Dvp, a.dO, a.dO_view,
                   b, i0, h, s.Sq);
    };
    if constexpr (kAsync) {
      if (ib < s.Sq) prefetch(0, hk * G, ib);
      cp_async_commit();
    }
    int buf = 0;  // kAsync: the buffer of step (h, i0)
    for (int h = hk * G; h < (hk + 1) * G; h++)
      for (int i0 = ib; i0 < s.Sq; i0 += BQ) {
        __syncthreads();  // k, v in place; the previous tile's q, dO, lse, delta are read
        if constexpr (kAsync) {
          const bool last_row = i0 + BQ >= s.Sq;
          if (!last_row)
            prefetch(buf ^ 1, h, i0 + BQ);
          else if (h + 1 < (hk + 1) * G)
            prefetch(buf ^ 1, h + 1, ib);
          cp_async_commit();
        } else {
          load_tile16<T>(sq, g.ks, BQ, s.D, g.Dp, a.q, s.q, a.type, b, i0, 1, h, s.Sq);
          load_tile16<T>(sdo, g.vs, BQ, s.Dv, g.Dvp, a.dO, a.dO_view, a.dO_type, b, i0, 1, h, s.Sq);
        }
        for (int ii = threadIdx.x; ii < BQ; ii += blockDim.x) {
          const int i = i0 + ii;
          sl[ii] = i < s.Sq ? lse_base2(ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type)) : INFINITY;
          sdl[ii] = i < s.Sq ? a.delta[(static_cast<int64_t>(b) * s.H + h) * s.Sq + i] : 0.f;
        }
        if constexpr (kAsync) {
          cp_async_wait<1>();  // this thread's copies of this step have landed (every thread's after the barrier)
          sq = reinterpret_cast<uint16_t*>(fmsm + (buf ? g.kv_q1 : g.kv_q));
          sdo = reinterpret_cast<uint16_t*>(fmsm + (buf ? g.kv_do1 : g.kv_do));
          buf ^= 1;
        }
        __syncthreads();
        float sc[ST][4], dp[ST][4];
        zero(sc), zero(dp);
        mma_abt<T, kAsync>(sc, sk, g.ks, 16 * warp, sq, g.ks, nkd, lane);   // S^T = K Q^T
        mma_abt<T, kAsync>(dp, sv, g.vs, 16 * warp, sdo, g.vs, nkv, lane);  // dP^T = V dO^T
        if (kMask || i0 + BQ > s.Sq || i0 < qmax) {  // a mask, or a row hidden from a key of the lane
#pragma unroll
          for (int nt = 0; nt < ST; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int u = e >> 1, ii = 8 * nt + gpu::mma16816_c_col(lane, e), i = i0 + ii;
              float p = 0.f, ds = 0.f;
              if (i >= qbeg[u] && i < s.Sq) {
                float x = sc[nt][e] * sl2;
                if constexpr (kMask) x += ldm(a.mask, gpu::attn_mask_off(s, b, h, i, key[u])) * kLog2e;
                p = exp2f(x - sl[ii]);
                if (p != 0.f) ds = gpu::flash_ds(p, dp[nt][e], sdl[ii], s.scale);
              }
              sc[nt][e] = p;
              dp[nt][e] = ds;
            }
        } else {
#pragma unroll
          for (int nt = 0; nt < ST; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int ii = 8 * nt + gpu::mma16816_c_col(lane, e);
              const float p = exp2f(sc[nt][e] * sl2 - sl[ii]);
              sc[nt][e] = p;
              dp[nt][e] = p != 0.f ? gpu::flash_ds(p, dp[nt][e], sdl[ii], s.scale) : 0.f;
            }
        }
#pragma unroll
        for (int kk = 0; kk < BQ / 16; kk++) {
          uint32_t af[4];
          frag_a_from_acc<T>(af, sc, kk);  // dV += P^T dO
          mma_acc_kn<T, kAsync>(dv, af, sdo, g.vs, kk, ndv, lane);
          frag_a_from_acc<T>(af, dp, kk);  // dK += dS^T Q
          mma_acc_kn<T, kAsync>(dk, af, sq, g.ks, kk, ndk, lane);
        }
      }
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int j = key[e >> 1], d = 8 * nt + gpu::mma16816_c_col(lane, e);
        if (j >= s.Sk) continue;
        if (a.dk && d < s.D) st_any(a.dk, gpu::attn_off(a.dk_view, b, j, hk, d), a.out_type, dk[nt][e]);
        if (a.dv && d < s.Dv) st_any(a.dv, gpu::attn_off(a.dv_view, b, j, hk, d), a.out_type, dv[nt][e]);
      }
    __syncthreads();  // k and v are reused by the next item
  }
}

// Kernel k's launch with `bytes` of dynamic shared memory (opting in above
// the default 48 KiB).
template <class K>
cudaError_t launch_kernel(K k, int64_t blocks, int bytes, cudaStream_t st, const FlashArgs& a,
                          const FlashMmaBwdGeom& g) {
  if (bytes > gpu::kFlashShmemLimit) {
    const cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
  }
  k<<<gpu::flash_grid(blocks), kFlashMmaBwdThreads, bytes, st>>>(a, g);
  return cudaGetLastError();
}

template <class T, int DM, bool kMask>
cudaError_t launch_typed(cudaStream_t st, const FlashArgs& a, const FlashMmaBwdGeom& g) {
  // cp.async for the tiles loaded per step where they copy in 16-byte runs,
  // unless NNC_GPU_ATTN_ASYNC=0.
  const gpu::AttnShape& s = a.s;
  const bool allowed = gpu::flash_mma_async_allowed(std::getenv("NNC_GPU_ATTN_ASYNC"));
  const bool dq_async = allowed && gpu::flash_tile16_runs(a.type, kTypeCode<T>, s.k, s.D, a.k) &&
                        gpu::flash_tile16_runs(a.type, kTypeCode<T>, s.v, s.Dv, a.v);
  const bool kv_async = allowed && gpu::flash_tile16_runs(a.type, kTypeCode<T>, s.q, s.D, a.q) &&
                        gpu::flash_tile16_runs(a.dO_type, kTypeCode<T>, a.dO_view, s.Dv, a.dO);
  if ((a.dk || a.dv) && gpu::flash_mma_bwd_key_tiles(s) > 0) {
    const int64_t blocks = gpu::flash_mma_bwd_key_tiles(s);
    const cudaError_t e = kv_async
                              ? launch_kernel(flash_mma_dkdv<T, DM, true, kMask>, blocks, g.kv_async_bytes, st, a, g)
                              : launch_kernel(flash_mma_dkdv<T, DM, false, kMask>, blocks, g.kv_bytes, st, a, g);
    if (e != cudaSuccess) return e;
  }
  if (a.dq && gpu::flash_mma_bwd_row_tiles(s) > 0) {
    const int64_t blocks = gpu::flash_mma_bwd_row_tiles(s);
    return dq_async ? launch_kernel(flash_mma_dq<T, DM, true, kMask>, blocks, g.dq_async_bytes, st, a, g)
                    : launch_kernel(flash_mma_dq<T, DM, false, kMask>, blocks, g.dq_bytes, st, a, g);
  }
  return cudaSuccess;
}

template <class T, bool kMask>
cudaError_t launch_bucket(cudaStream_t st, const FlashArgs& a, const FlashMmaBwdGeom& g) {
  switch (g.bucket) {
    case 32:
      return launch_typed<T, 32, kMask>(st, a, g);
    case 64:
      return launch_typed<T, 64, kMask>(st, a, g);
    case 128:
      return launch_typed<T, 128, kMask>(st, a, g);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_flash_mma_backward(cudaStream_t st, const FlashArgs& a, const FlashMmaBwdGeom& g) {
  if (a.type != kF16 && a.type != kBF16) return cudaErrorInvalidValue;
  if (g.D != a.s.D || g.Dv != a.s.Dv) return cudaErrorInvalidValue;
  if (static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq == 0) return cudaSuccess;
  cudaError_t e = launch_flash_delta(st, a);
  if (e != cudaSuccess) return e;
  if (a.s.has_mask)
    return a.type == kF16 ? launch_bucket<__half, true>(st, a, g) : launch_bucket<__nv_bfloat16, true>(st, a, g);
  return a.type == kF16 ? launch_bucket<__half, false>(st, a, g) : launch_bucket<__nv_bfloat16, false>(st, a, g);
}

}  // namespace nnc::cuda
