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

// log2(e) and ln(2): the softmax runs in base 2 (exp2f, one MUFU.EX2 a
// probability): scores x = dot scale log2(e) (+ mask log2(e)), p = 2^(x - m),
// lse = (m + log2 l) ln 2; the same probabilities as e^(s - m) in natural
// units up to fp32 rounding.
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// HB: the head bucket (32, 64, 128): q and k rows of HB, v rows of HB.
// RW: m16 row tiles a warp (1: blocks of kFlashMmaRows pairs; 2: of
// kFlashMmaWideRows, every k / v fragment read from shared memory feeding
// both tiles' products; cp.async only). Warp w owns pairs v0 + 16 RW w ..
// + 16 RW - 1, tile mt its 16 from v0 + 16 RW w + 16 mt.
// kAsync (k and v with gpu::flash_tile16_runs, NNC_GPU_ATTN_ASYNC not 0):
// k and v tiles by cp.async into two buffers (buffer p: k at
// sk + 2 p kFlashMmaKeys LD, v right after it), tile j + 1 in flight while
// tile j is computed on (q is staged in buffer 1 while the item's first tile
// loads into buffer 0; or, flash_mma_q_in_regs false, has its own tile after
// the buffers), fragments by ldmatrix; the products and sums in the same
// order as the plain loads', so both give the same bits.
// A tile no row of a warp sees (causal, past the warp's last row's keys) is
// skipped by the warp (p would be 0: m, l and o unchanged); the per-key
// visibility test and the mask run only on tiles that cross some row's end
// or with a mask.
// kMask: s.has_mask (a kernel of its own: the mask's addressing costs
// registers, 30 to 50 a lane, that calls without a mask need not pay).
// kNarrow: 32-key steps at the 128 bucket in 64-row blocks
// (gpu::flash_mma_fwd_keys), compiled for three blocks an SM (168
// registers, no spills).
template <int HB, class T, bool kAsync, int RW, bool kMask, bool kNarrow>
__global__ void __launch_bounds__(kFlashMmaThreads, kNarrow ? 3 : 0) flash_mma_forward(FlashArgs a) {
  static_assert(RW == 1 || (RW == 2 && kAsync), "wide blocks load by cp.async");
  constexpr int ROWS = 64 * RW;             // pairs of a block
  constexpr int WR = 16 * RW;               // pairs of a warp
  constexpr int KD = HB / 16;               // k-steps of q k^T
  constexpr int NV = HB / 8;                // 8-column tiles of o
  constexpr int KT = gpu::flash_mma_fwd_keys(HB, ROWS, kNarrow);  // keys a step
  constexpr int NS = KT / 8;                // 8-key tiles of a score tile
  constexpr int KP = KT / 16;               // k-steps of p v
  constexpr int LD = HB + 8;                // = gpu::flash_mma_stride(HB)
  constexpr int TILE = KT * LD;             // halves of a k or v tile
  constexpr bool kQRegs = gpu::flash_mma_q_in_regs(HB, ROWS);
  static_assert(kQRegs || kAsync, "q from shared memory by ldmatrix");
  static_assert(kQRegs ? ROWS <= 2 * KT : true, "q staged in the second buffer");
  extern __shared__ __align__(16) float fsm[];
  uint16_t* const sbase = reinterpret_cast<uint16_t*>(fsm);
  uint16_t* sk = sbase;
  uint16_t* sv = sk + TILE;
  const AttnShape& s = a.s;
  const LdAs<T> ldm;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int G = gpu::flash_mma_group(s);
  const int splits = a.splits;
  const int64_t items = gpu::flash_mma_items(s, ROWS) * splits;
  const float sl2 = s.scale * kLog2e;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, hk, v0, jbegin, jend;
    gpu::flash_mma_item(s, w / splits, &b, &hk, &v0, ROWS);
    gpu::flash_mma_split_keys(gpu::flash_mma_key_end(s, v0, ROWS), splits, static_cast<int>(w % splits), &jbegin,
                              &jend);
    // The keys any of the warp's pairs sees (0: none is a pair).
    const int wend = gpu::flash_mma_key_end(s, v0 + WR * warp, WR);
    // The lane's rows u = 2 mt + e: pairs v0 + WR warp + 16 mt + g + 8 e,
    // each a query row i[u] of head h[u] (valid[u]: within the G Sq pairs);
    // rmin: the fewest keys a valid one sees.
    int rend[2 * RW], i[2 * RW], h[2 * RW];
    bool valid[2 * RW];
    float m[2 * RW], l[2 * RW];
    int rmin = 0x7fffffff;
#pragma unroll
    for (int u = 0; u < 2 * RW; u++) {
      valid[u] = gpu::flash_mma_pair(s, hk, v0 + WR * warp + 16 * (u >> 1) + g + 8 * (u & 1), &i[u], &h[u]);
      rend[u] = valid[u] ? gpu::attn_key_end(s, i[u]) : 0;
      if (valid[u] && rend[u] < rmin) rmin = rend[u];
      m[u] = gpu::attn_neg_inf(), l[u] = 0.f;  // l: the lane's part of the row's sum (quad-summed at the end)
    }
    float o[RW][NV][4];
#pragma unroll
    for (int mt = 0; mt < RW; mt++)
#pragma unroll
      for (int n = 0; n < NV; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
    // The k and v tiles of keys j0 into buffer p, by cp.async (one commit group).
    auto prefetch = [&](int p, int j0) {
      cp_tile16<T>(sbase + 2 * p * TILE, LD, KT, s.D, HB, a.k, s.k, b, j0, hk, s.Sk);
      cp_tile16<T>(sbase + (2 * p + 1) * TILE, LD, KT, s.Dv, HB, a.v, s.v, b, j0, hk, s.Sk);
    };
    uint16_t* sq = sk;  // q's staging (or, kQRegs false, its tile)
    if constexpr (kAsync) {
      if (jbegin < jend) prefetch(0, jbegin);
      cp_async_commit();
      sq = sbase + (kQRegs ? 2 : 4) * TILE;
    }
    load_tile16<T>(sq, LD, ROWS, s.D, HB, a.q, s.q, a.type, b, v0, G, hk * G, G * s.Sq);
    __syncthreads();
    // q's A fragments: tile mt, k-step kd (kQRegs: held for the whole item).
    uint32_t qa[kQRegs ? RW : 1][kQRegs ? KD : 1][4];
    if constexpr (kQRegs) {
#pragma unroll
      for (int mt = 0; mt < RW; mt++)
#pragma unroll
        for (int kd = 0; kd < KD; kd++) {
          if constexpr (kAsync)
            frag_a_x4(qa[mt][kd], sq, LD, WR * warp + 16 * mt, kd * 16, lane);
          else
            frag_a(qa[mt][kd], sq, LD, WR * warp + 16 * mt, kd * 16, lane);
        }
    }
    int buf = 0;  // kAsync: the buffer of tile j0
    for (int j0 = jbegin; j0 < jend; j0 += KT) {
      __syncthreads();  // q's fragments are read (first tile); the previous tile's k and v are read
      if constexpr (kAsync) {
        if (j0 + KT < jend) prefetch(buf ^ 1, j0 + KT);
        cp_async_commit();
        cp_async_wait<1>();  // this thread's copies of tile j0 have landed ...
        __syncthreads();     // ... and every thread's
        sk = sbase + 2 * buf * TILE;
        sv = sk + TILE;
        buf ^= 1;
      } else {
        load_tile16<T>(sk, LD, KT, s.D, HB, a.k, s.k, a.type, b, j0, 1, hk, s.Sk);
        load_tile16<T>(sv, LD, KT, s.Dv, HB, a.v, s.v, a.type, b, j0, 1, hk, s.Sk);
        __syncthreads();
      }
      if (j0 >= wend) continue;  // warp-uniform: no row of the warp sees these keys
      // S = q k^T, each accumulator summed over the k-steps in ascending order.
      float sc[RW][NS][4];
#pragma unroll
      for (int mt = 0; mt < RW; mt++)
#pragma unroll
        for (int n = 0; n < NS; n++) sc[mt][n][0] = sc[mt][n][1] = sc[mt][n][2] = sc[mt][n][3] = 0.f;
      if constexpr (kAsync) {
#pragma unroll
        for (int kd = 0; kd < KD; kd += 2) {
          uint32_t qf[RW][2][4];
#pragma unroll
          for (int mt = 0; mt < RW; mt++)
#pragma unroll
            for (int x = 0; x < 2; x++) {
              if constexpr (kQRegs) {
#pragma unroll
                for (int r = 0; r < 4; r++) qf[mt][x][r] = qa[mt][kd + x][r];
              } else {
                frag_a_x4(qf[mt][x], sq, LD, WR * warp + 16 * mt, (kd + x) * 16, lane);
              }
            }
#pragma unroll
          for (int n = 0; n < NS; n++) {
            uint32_t kb0[2], kb1[2];
            frag_b_nk_x4(kb0, kb1, sk, LD, n * 8, kd * 16, lane);  // B(d, key) = k[key][d], two k-steps
#pragma unroll
            for (int mt = 0; mt < RW; mt++) {
              mma_16816<T>(sc[mt][n], qf[mt][0], kb0, sc[mt][n]);
              mma_16816<T>(sc[mt][n], qf[mt][1], kb1, sc[mt][n]);
            }
          }
        }
      } else {
#pragma unroll
        for (int kd = 0; kd < KD; kd++)
#pragma unroll
          for (int n = 0; n < NS; n++) {
            uint32_t kb[2];
            frag_b_nk(kb, sk, LD, n * 8, kd * 16, lane);  // B(d, key) = k[key][d]
#pragma unroll
            for (int mt = 0; mt < RW; mt++) mma_16816<T>(sc[mt][n], qa[mt][kd], kb, sc[mt][n]);
          }
      }
      // Finish the scores (base 2); the rows' new max, alpha, p and sums.
      float tmax[2 * RW];
#pragma unroll
      for (int u = 0; u < 2 * RW; u++) tmax[u] = gpu::attn_neg_inf();
      if (kMask || j0 + KT > rmin) {  // a mask, or some key hidden from a row of the lane
#pragma unroll
        for (int mt = 0; mt < RW; mt++)
#pragma unroll
          for (int n = 0; n < NS; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const int u = 2 * mt + (e >> 1), j = j0 + n * 8 + 2 * t + (e & 1);
              float x = gpu::attn_neg_inf();
              if (j < rend[u]) {
                x = sc[mt][n][e] * sl2;
                if constexpr (kMask) x += ldm(a.mask, gpu::attn_mask_off(s, b, h[u], i[u], j)) * kLog2e;
              }
              sc[mt][n][e] = x;
              tmax[u] = fmaxf(tmax[u], x);
            }
      } else {
#pragma unroll
        for (int mt = 0; mt < RW; mt++)
#pragma unroll
          for (int n = 0; n < NS; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
              const float x = sc[mt][n][e] * sl2;
              sc[mt][n][e] = x;
              tmax[2 * mt + (e >> 1)] = fmaxf(tmax[2 * mt + (e >> 1)], x);
            }
      }
      // ref: the max the exponentials subtract (0 while the max is -inf, so
      // that a hidden key, -inf, gives 2^-inf = 0 and alpha is 0: nothing
      // was accumulated yet).
      float alpha[2 * RW], ref[2 * RW], psum[2 * RW];
#pragma unroll
      for (int u = 0; u < 2 * RW; u++) {
        const float m2 = fmaxf(m[u], quad_max(tmax[u]));
        ref[u] = m2 == gpu::attn_neg_inf() ? 0.f : m2;
        alpha[u] = exp2f(m[u] - ref[u]);
        m[u] = m2;
        psum[u] = 0.f;
      }
#pragma unroll
      for (int mt = 0; mt < RW; mt++)
#pragma unroll
        for (int n = 0; n < NS; n++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int u = 2 * mt + (e >> 1);
            const float p = exp2f(sc[mt][n][e] - ref[u]);
            sc[mt][n][e] = p;
            psum[u] += p;
          }
#pragma unroll
      for (int u = 0; u < 2 * RW; u++) l[u] = l[u] * alpha[u] + psum[u];
#pragma unroll
      for (int mt = 0; mt < RW; mt++)
#pragma unroll
        for (int n = 0; n < NV; n++) {
          o[mt][n][0] *= alpha[2 * mt], o[mt][n][1] *= alpha[2 * mt];
          o[mt][n][2] *= alpha[2 * mt + 1], o[mt][n][3] *= alpha[2 * mt + 1];
        }
      // o += p v: p's A fragments straight from the score accumulators.
#pragma unroll
      for (int kk = 0; kk < KP; kk++) {
        uint32_t pa[RW][4];
#pragma unroll
        for (int mt = 0; mt < RW; mt++) frag_a_from_acc<T>(pa[mt], sc[mt], kk);
        if constexpr (kAsync) {
#pragma unroll
          for (int n = 0; n < NV; n += 2) {
            uint32_t vb0[2], vb1[2];
            frag_b_kn_x4(vb0, vb1, sv, LD, kk * 16, n * 8, lane);  // B(key, col) = v[key][col], two n-tiles
#pragma unroll
            for (int mt = 0; mt < RW; mt++) {
              mma_16816<T>(o[mt][n], pa[mt], vb0, o[mt][n]);
              mma_16816<T>(o[mt][n + 1], pa[mt], vb1, o[mt][n + 1]);
            }
          }
        } else {
#pragma unroll
          for (int n = 0; n < NV; n++) {
            uint32_t vb[2];
            frag_b_kn(vb, sv, LD, kk * 16, n * 8, lane);  // B(key, col) = v[key][col]
#pragma unroll
            for (int mt = 0; mt < RW; mt++) mma_16816<T>(o[mt][n], pa[mt], vb, o[mt][n]);
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 2 * RW; u++) l[u] = quad_sum(l[u]);
    if (splits > 1) {  // this split's unnormalised o, m (natural units) and l for the combine
      const int sp = static_cast<int>(w % splits);
      const int64_t rows = static_cast<int64_t>(s.B) * s.H * s.Sq * splits;
      float* pm = a.part + rows * s.Dv;
      float* pl = pm + rows;
#pragma unroll
      for (int u = 0; u < 2 * RW; u++) {
        if (!valid[u]) continue;
        const int64_t r = gpu::flash_mma_row(s, b, h[u], i[u]) * splits + sp;
#pragma unroll
        for (int n = 0; n < NV; n++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            const int d = n * 8 + 2 * t + c;
            if (d < s.Dv) a.part[r * s.Dv + d] = o[u >> 1][n][2 * (u & 1) + c];
          }
        if (t == 0) pm[r] = m[u] == gpu::attn_neg_inf() ? m[u] : m[u] * kLn2, pl[r] = l[u];
      }
      __syncthreads();  // the k tile (q's staging) is reused by the next item
      continue;
    }
#pragma unroll
    for (int u = 0; u < 2 * RW; u++) {
      if (!valid[u]) continue;
      const float inv = gpu::flash_out_scale(l[u]);
      if (a.o) {
#pragma unroll
        for (int n = 0; n < NV; n++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            const int d = n * 8 + 2 * t + c;
            if (d < s.Dv) {
              st_any(a.o, gpu::attn_off(a.o_view, b, i[u], h[u], d), a.o_type, o[u >> 1][n][2 * (u & 1) + c] * inv);
            }
          }
      }
      if (a.lse && t == 0) {
        const float lse = m[u] == gpu::attn_neg_inf() || !(l[u] > 0) ? gpu::attn_neg_inf() : (m[u] + log2f(l[u])) * kLn2;
        st_any(a.lse, gpu::attn_lse_off(s, b, h[u], i[u]), a.lse_type, lse);
      }
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

template <int HB, class T, bool kAsync, int RW, bool kMask, bool kNarrow = false>
cudaError_t launch_kernel(cudaStream_t st, const FlashArgs& a) {
  const int64_t items = gpu::flash_mma_items(a.s, 64 * RW) * a.splits;
  const int64_t bytes = gpu::flash_mma_fwd_shmem_bytes(HB, 64 * RW, kAsync, kNarrow);
  if (bytes > gpu::kFlashShmemLimit) {
    const cudaError_t e = cudaFuncSetAttribute(flash_mma_forward<HB, T, kAsync, RW, kMask, kNarrow>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) return e;
  }
  flash_mma_forward<HB, T, kAsync, RW, kMask, kNarrow><<<gpu::flash_grid(items), kFlashMmaThreads, bytes, st>>>(a);
  return cudaGetLastError();
}
template <int HB, class T, bool kMask>
cudaError_t launch_rows(cudaStream_t st, const FlashArgs& a, bool async) {
  if (a.rows == gpu::kFlashMmaWideRows) {
    // The host picks 128 rows only with cp.async and without a mask (whose
    // addressing would make the wide kernels spill).
    if constexpr (kMask) return cudaErrorInvalidValue;
    else if (!async) return cudaErrorInvalidValue;
    else return launch_kernel<HB, T, true, 2, false>(st, a);
  }
  if (a.rows != gpu::kFlashMmaRows) return cudaErrorInvalidValue;
  if constexpr (HB == 128) {
    if (a.narrow)
      return async ? launch_kernel<HB, T, true, 1, kMask, true>(st, a)
                   : launch_kernel<HB, T, false, 1, kMask, true>(st, a);
  }
  return async ? launch_kernel<HB, T, true, 1, kMask>(st, a) : launch_kernel<HB, T, false, 1, kMask>(st, a);
}
template <int HB, class T>
cudaError_t launch(cudaStream_t st, const FlashArgs& a, bool async) {
  const cudaError_t e = a.s.has_mask ? launch_rows<HB, T, true>(st, a, async) : launch_rows<HB, T, false>(st, a, async);
  if (e != cudaSuccess || a.splits <= 1) return e;
  const int64_t n = static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq * a.s.Dv;
  flash_mma_combine<<<gpu::flash_grid((n + 255) / 256), 256, 0, st>>>(a);
  return cudaGetLastError();
}
template <class T>
cudaError_t launch_bucket(cudaStream_t st, const FlashArgs& a, int bucket) {
  // cp.async and ldmatrix where k and v copy in 16-byte runs (the fast case
  // of load_tile16), unless NNC_GPU_ATTN_ASYNC=0.
  const bool async = gpu::flash_mma_fwd_async(a.type, a.s, a.k, a.v, std::getenv("NNC_GPU_ATTN_ASYNC"));
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
  if (gpu::flash_mma_items(a.s, a.rows) == 0) return cudaSuccess;
  if (a.splits < 1 || (a.splits > 1 && !a.part)) return cudaErrorInvalidValue;
  if (a.type == kF16) return launch_bucket<__half>(st, a, bucket);
  if (a.type == kBF16) return launch_bucket<__nv_bfloat16>(st, a, bucket);
  return cudaErrorInvalidValue;
}

}  // namespace nnc::cuda
