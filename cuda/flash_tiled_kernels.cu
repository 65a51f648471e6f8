// The register-tiled scalar flash attention kernels: see flash_tiled.hpp for
// the tiling and the shared-memory layouts. Index maps, causal bounds, work
// items and the mask come from lib/cmd/common/gpu_attn.hpp / gpu_flash.hpp
// (tested on the CPU), as in flash_kernels.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "cuda/async_copy.cuh"
#include "cuda/flash_tiled.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::AttnShape;
using gpu::AttnView;

constexpr int kT = kFlashTiledRows;  // 64
constexpr int kThreads = kFlashTiledThreads;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Loaders: ld(base, element) -> float.
struct LdAny {
  int type;
  __device__ float operator()(const void* p, int64_t off) const { return ld_any(p, off, type); }
};

// 4 bytes gmem -> smem asynchronously (cp.async.ca; async_copy.cuh has the
// commit / wait and the emulation's rules).
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem) {
#if defined(__CUDA_ARCH__)
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(gmem) : "memory");
#elif defined(NNC_GPU_EMU)
  ::emu::async_copy(smem, gmem, 4);
#else
  (void)smem, (void)gmem;
#endif
}
// One element of a tile: loaded (ASYNC: a 32F operand copied by cp.async)
// or 0.
template <bool ASYNC, class L>
__device__ __forceinline__ void put(float* dst, const L& ld, const void* x, int64_t off, bool in) {
  if constexpr (ASYNC) {
    if (in)
      cp_async4(dst, static_cast<const float*>(x) + off);
    else
      *dst = 0.f;
  } else {
    *dst = in ? ld(x, off) : 0.f;
  }
}

// Max / sum over the 16 lanes (tx) that share a row (lanes 0-15 and 16-31
// of a warp are two rows groups; every lane takes part).
__device__ __forceinline__ float max16(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float sum16(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Transposed tile: rows [row0, row0 + 64) (rows at or past `limit` as 0),
// d in [0, DB) (d at or past n as 0) of operand x (b, row, head, d) at view
// xv into dst[d * 64 + (r ^ ((d & 7) << 2))]. Warp w of the block takes the
// d blocks w + 8 c (8 d each, lane & 7), rows lane >> 3 + 4 it: a warp's
// stores hit 32 distinct banks, its loads 4 rows x 8 consecutive d, and
// each thread's offsets advance by a constant (4 rows) per step.
template <int DB, bool ASYNC = false, class L>
__device__ __forceinline__ void load_t(float* dst, const L& ld, const void* x, const AttnView& xv, int b, int row0,
                                       int head, int limit, int n) {
  const int lane = threadIdx.x & 31, wq = threadIdx.x >> 5, r0 = lane >> 3;
#pragma unroll
  for (int c = 0; c < DB / 64; c++) {
    const int d = (wq + 8 * c) * 8 + (lane & 7);
    float* out = dst + d * kT;
    const int sw = (d & 7) << 2;
    if (d >= n) {
#pragma unroll
      for (int it = 0; it < kT / 4; it++) out[(r0 + 4 * it) ^ sw] = 0.f;
      continue;
    }
    int64_t off = gpu::attn_off(xv, b, row0 + r0, head, d);
    const int64_t step = 4 * xv.ss;
#pragma unroll 4
    for (int it = 0; it < kT / 4; it++, off += step) {
      const int r = r0 + 4 * it;
      put<ASYNC>(out + (r ^ sw), ld, x, off, row0 + r < limit);
    }
  }
}
// Natural tile: dst[r * DB + d], same zero fill; thread t takes column
// t % DB and rows t / DB + (256 / DB) it.
template <int DB, bool ASYNC = false, class L>
__device__ __forceinline__ void load_n(float* dst, const L& ld, const void* x, const AttnView& xv, int b, int row0,
                                       int head, int limit, int n) {
  constexpr int kStep = kThreads / DB;
  const int d = threadIdx.x % DB, r0 = threadIdx.x / DB;
  if (d >= n) {
#pragma unroll
    for (int it = 0; it < kT / kStep; it++) dst[(r0 + kStep * it) * DB + d] = 0.f;
    return;
  }
  int64_t off = gpu::attn_off(xv, b, row0 + r0, head, d);
  const int64_t step = kStep * xv.ss;
#pragma unroll 4
  for (int it = 0; it < kT / kStep; it++, off += step) {
    const int r = r0 + kStep * it;
    put<ASYNC>(dst + r * DB + d, ld, x, off, row0 + r < limit);
  }
}

// c[r][q] = sum over d < dlim (a multiple of 8) of A[d][4 ay + r] B[d][4 bx + q]
// (both transposed tiles as load_t writes them).
__device__ __forceinline__ void mm_tt(const float* A, const float* B, int ay, int bx, int dlim, float (&c)[4][4]) {
#pragma unroll
  for (int r = 0; r < 4; r++)
#pragma unroll
    for (int q = 0; q < 4; q++) c[r][q] = 0.f;
  for (int d0 = 0; d0 < dlim; d0 += 8) {
#pragma unroll
    for (int dd = 0; dd < 8; dd++) {
      const int d = d0 + dd;
      const float4 x = *reinterpret_cast<const float4*>(A + d * kT + ((ay * 4) ^ (dd << 2)));
      const float4 y = *reinterpret_cast<const float4*>(B + d * kT + ((bx * 4) ^ (dd << 2)));
      const float xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < 4; q++) c[r][q] = fmaf(xs[r], ys[q], c[r][q]);
    }
  }
}

// The thread's 4 x 4 values v[r][q] (row / key 4 ay + r of the output side,
// 4 bx + q of the summed side) into the [64][64] tile P as P[k][...] with k
// = 4 bx + q the summed index: a float4 of the 4 ay + r at ((ay ^ (k >> 2)) << 2).
__device__ __forceinline__ void write_p(float* P, int ay, int bx, const float (&v)[4][4]) {
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int k = bx * 4 + q;
    *reinterpret_cast<float4*>(P + k * kT + ((ay ^ bx) << 2)) = make_float4(v[0][q], v[1][q], v[2][q], v[3][q]);
  }
}

// acc[r][4 c + q] += sum over k < klim (rounded up to 4: the callers' p
// past klim are 0 and their N rows there zero-filled or loaded) of
// P[k][4 ay + r] N[k][64 c + 4 bx + q] (P as write_p leaves it, N a natural
// tile); the 4 k of a step unrolled KU at a time.
template <int DB, int KU = 4>
__device__ __forceinline__ void mm_pn(const float* P, const float* N, int ay, int bx, int klim,
                                      float (&acc)[4][DB / 16]) {
  for (int k0 = 0; k0 < klim; k0 += 4) {
    const float* pk = P + k0 * kT + ((ay ^ (k0 >> 2)) << 2);
    const float* nk = N + k0 * DB + bx * 4;
#pragma unroll KU
    for (int kk = 0; kk < 4; kk++) {
      const float4 p = *reinterpret_cast<const float4*>(pk + kk * kT);
      const float ps[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
      for (int c = 0; c < DB / 64; c++) {
        const float4 n = *reinterpret_cast<const float4*>(nk + kk * DB + c * 64);
        const float ns[4] = {n.x, n.y, n.z, n.w};
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
          for (int q = 0; q < 4; q++) acc[r][c * 4 + q] = fmaf(ps[r], ns[q], acc[r][c * 4 + q]);
      }
    }
  }
}

__device__ __forceinline__ int min_int(int a, int b) { return a < b ? a : b; }

// Shared-memory floats of each kernel.
constexpr int fwd_floats(int DB, bool async) { return (async ? 5 : 3) * kT * DB + kT * kT; }
constexpr int dq_floats(int DB) { return 5 * kT * DB + kT * kT; }
constexpr int kv_floats(int DB, bool async) { return (async ? 10 : 6) * kT * DB + 2 * kT * kT; }

// ASYNC (32F): two k / v buffers, the next tile's copied by cp.async
// while the current one is computed on.
template <int DB, class T, bool ASYNC>
__global__ void __launch_bounds__(kThreads, 2) flash_tiled_forward(FlashArgs a) {
  constexpr int NC = DB / 16;
  extern __shared__ float4 ftsm4[];
  float* sq = reinterpret_cast<float*>(ftsm4);
  float* skv = sq + kT * DB;  // [k | v] per buffer
  float* sp = skv + (ASYNC ? 4 : 2) * kT * DB;
  const AttnShape& s = a.s;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const float sl2 = s.scale * kLog2e;
  const int dlim = (s.D + 7) & ~7;
  const LdAs<T> ldt;
  const int64_t items = gpu::flash_row_tiles(s, kT);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, h, i0;
    gpu::flash_row_tile(s, kT, w, &b, &h, &i0);
    const int hk = gpu::attn_kv_head(s, h);
    const int kend = gpu::flash_tile_key_end(s, i0, kT);
    int rend[4];
    float m[4], l[4], acc[4][NC];
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int i = i0 + ty * 4 + r;
      rend[r] = i < s.Sq ? gpu::attn_key_end(s, i) : 0;
      m[r] = gpu::attn_neg_inf(), l[r] = 0.f;
#pragma unroll
      for (int c = 0; c < NC; c++) acc[r][c] = 0.f;
    }
    load_t<DB>(sq, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
    // (ASYNC) Starts the copies of key tile j into buffer bb.
    auto issue = [&](int j, int bb) {
      float* k = skv + bb * 2 * kT * DB;
      load_t<DB, true>(k, ldt, a.k, s.k, b, j, hk, s.Sk, s.D);
      load_n<DB, true>(k + kT * DB, ldt, a.v, s.v, b, j, hk, s.Sk, s.Dv);
      cp_async_commit();
    };
    if constexpr (ASYNC) {
      if (kend > 0) issue(0, 0);
    }
    for (int j0 = 0, bb = 0; j0 < kend; j0 += kT, bb ^= 1) {
      __syncthreads();  // q in place; the previous tile's k, v, p read
      float* sk = skv + (ASYNC ? bb : 0) * 2 * kT * DB;
      float* sv = sk + kT * DB;
      if constexpr (ASYNC) {
        if (j0 + kT < kend) {
          issue(j0 + kT, bb ^ 1);
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
      } else {
        load_t<DB>(sk, ldt, a.k, s.k, b, j0, hk, s.Sk, s.D);
        load_n<DB>(sv, ldt, a.v, s.v, b, j0, hk, s.Sk, s.Dv);
      }
      __syncthreads();
      float sc[4][4];
      mm_tt(sq, sk, ty, tx, dlim, sc);
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const int i = i0 + ty * 4 + r;
        float mx = gpu::attn_neg_inf();
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int j = j0 + tx * 4 + q;
          float t = gpu::attn_neg_inf();
          if (j < rend[r]) {
            t = sc[r][q] * sl2;
            if (s.has_mask) t = fmaf(ldt(a.mask, gpu::attn_mask_off(s, b, h, i, j)), kLog2e, t);
          }
          sc[r][q] = t;
          mx = fmaxf(mx, t);
        }
        const float mn = fmaxf(m[r], max16(mx));
        const float alpha = m[r] == gpu::attn_neg_inf() ? 0.f : exp2f(m[r] - mn);
        float ps = 0.f;
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const float p = sc[r][q] == gpu::attn_neg_inf() ? 0.f : exp2f(sc[r][q] - mn);
          sc[r][q] = p;
          ps += p;
        }
        l[r] = fmaf(l[r], alpha, ps);
        m[r] = mn;
#pragma unroll
        for (int c = 0; c < NC; c++) acc[r][c] *= alpha;
      }
      write_p(sp, ty, tx, sc);
      __syncthreads();
      mm_pn<DB>(sp, sv, ty, tx, min_int(kT, kend - j0), acc);
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const float lt = sum16(l[r]);
      const int i = i0 + ty * 4 + r;
      if (i >= s.Sq) continue;
      const float inv = gpu::flash_out_scale(lt);
      if (a.o) {
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int d = (c >> 2) * 64 + tx * 4 + (c & 3);
          if (d < s.Dv) st_any(a.o, gpu::attn_off(a.o_view, b, i, h, d), a.o_type, acc[r][c] * inv);
        }
      }
      if (a.lse && tx == 0) {
        const float lse = m[r] == gpu::attn_neg_inf() || !(lt > 0) ? gpu::attn_neg_inf() : (m[r] + log2f(lt)) * kLn2;
        st_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type, lse);
      }
    }
    __syncthreads();  // q, k, v, p are reused by the next item
  }
}

// p (base 2: t - lse2) and ds of query row i (lse2 = lse log2 e, delta dl)
// and key j from the dots qk = q_i . k_j and dp = dO_i . v_j; 0 when hidden.
template <class T>
__device__ __forceinline__ void tiled_pds(const FlashArgs& a, float qk, float dp, float lse2, float dl, int b, int h,
                                          int i, int j, float sl2, float* p, float* ds) {
  const AttnShape& s = a.s;
  *p = 0.f, *ds = 0.f;
  if (!gpu::flash_visible(s, i, j) || lse2 == gpu::attn_neg_inf()) return;
  float t = qk * sl2;
  if (s.has_mask) t = fmaf(LdAs<T>{}(a.mask, gpu::attn_mask_off(s, b, h, i, j)), kLog2e, t);
  if (t == gpu::attn_neg_inf()) return;
  const float pp = exp2f(t - lse2);
  *p = pp;
  *ds = gpu::flash_ds(pp, dp, dl, s.scale);
}

// lse (times log2 e) and delta of query row i of (b, h); -inf / 0 past Sq.
__device__ __forceinline__ void row_stats(const FlashArgs& a, int b, int h, int i, float* lse2, float* dl) {
  const AttnShape& s = a.s;
  if (i >= s.Sq) {
    *lse2 = gpu::attn_neg_inf(), *dl = 0.f;
    return;
  }
  *lse2 = ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type) * kLog2e;
  *dl = a.delta[(static_cast<int64_t>(b) * s.H + h) * s.Sq + i];
}

// dq: one block per (b, h, 64 query rows), over the key tiles.
template <int DB, class T>
__global__ void __launch_bounds__(kThreads, DB <= 64 && sizeof(T) == 4 ? 2 : 1) flash_tiled_dq(FlashArgs a) {
  constexpr int NC = DB / 16;
  extern __shared__ float4 ftsm4[];
  float* sq = reinterpret_cast<float*>(ftsm4);  // transposed q
  float* sdo = sq + kT * DB;                    // transposed dO
  float* sk = sdo + kT * DB;                    // transposed k
  float* svt = sk + kT * DB;                    // transposed v
  float* skn = svt + kT * DB;                   // natural k
  float* sds = skn + kT * DB;                   // ds [key][rows]
  const AttnShape& s = a.s;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const float sl2 = s.scale * kLog2e;
  const int dlim = (s.D + 7) & ~7, dvlim = (s.Dv + 7) & ~7;
  const LdAs<T> ldt;
  const LdAny ldo{a.dO_type};
  const int64_t items = gpu::flash_row_tiles(s, kT);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, h, i0;
    gpu::flash_row_tile(s, kT, w, &b, &h, &i0);
    const int hk = gpu::attn_kv_head(s, h);
    const int kend = gpu::flash_tile_key_end(s, i0, kT);
    float lse2[4], dl[4], acc[4][NC];
#pragma unroll
    for (int r = 0; r < 4; r++) {
      row_stats(a, b, h, i0 + ty * 4 + r, &lse2[r], &dl[r]);
#pragma unroll
      for (int c = 0; c < NC; c++) acc[r][c] = 0.f;
    }
    load_t<DB>(sq, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
    load_t<DB>(sdo, ldo, a.dO, a.dO_view, b, i0, h, s.Sq, s.Dv);
    for (int j0 = 0; j0 < kend; j0 += kT) {
      __syncthreads();  // q, dO in place; the previous tile's k, v, ds read
      load_t<DB>(sk, ldt, a.k, s.k, b, j0, hk, s.Sk, s.D);
      load_t<DB>(svt, ldt, a.v, s.v, b, j0, hk, s.Sk, s.Dv);
      load_n<DB>(skn, ldt, a.k, s.k, b, j0, hk, s.Sk, s.D);
      __syncthreads();
      float qk[4][4], dp[4][4];
      mm_tt(sq, sk, ty, tx, dlim, qk);
      mm_tt(sdo, svt, ty, tx, dvlim, dp);
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          float p, ds;
          tiled_pds<T>(a, qk[r][q], dp[r][q], lse2[r], dl[r], b, h, i0 + ty * 4 + r, j0 + tx * 4 + q, sl2, &p, &ds);
          qk[r][q] = ds;
        }
      write_p(sds, ty, tx, qk);
      __syncthreads();
      mm_pn<DB, sizeof(T) == 4 && DB <= 64 ? 1 : 4>(sds, skn, ty, tx, min_int(kT, kend - j0), acc);  // (128 registers)
    }
    if (a.dq) {
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const int i = i0 + ty * 4 + r;
        if (i >= s.Sq) continue;
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int d = (c >> 2) * 64 + tx * 4 + (c & 3);
          if (d < s.D) st_any(a.dq, gpu::attn_off(a.dq_view, b, i, h, d), a.out_type, acc[r][c]);
        }
      }
    }
    __syncthreads();
  }
}

// dk and dv: one block per (b, kv head, 64 keys), over the group's query
// heads and the query tiles that see the keys. The thread's micro-tile:
// keys 4 ty + r, query rows 4 tx + q.
// ASYNC (32F, heads up to 64): two buffers of the q / dO tiles, the next
// (head, query tile)'s copied by cp.async while the current one is computed on.
template <int DB, class T, bool ASYNC>
__global__ void __launch_bounds__(kThreads, 1) flash_tiled_dkdv(FlashArgs a) {
  constexpr int NC = DB / 16;
  extern __shared__ float4 ftsm4[];
  float* skt = reinterpret_cast<float*>(ftsm4);  // transposed k
  float* svt = skt + kT * DB;                    // transposed v
  float* sbuf = svt + kT * DB;                   // per buffer: transposed q, dO; natural q, dO
  float* sp = sbuf + (ASYNC ? 8 : 4) * kT * DB;  // p [row][keys]
  float* sds = sp + kT * kT;                     // ds [row][keys]
  const AttnShape& s = a.s;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const float sl2 = s.scale * kLog2e;
  const int dlim = (s.D + 7) & ~7, dvlim = (s.Dv + 7) & ~7;
  const int G = s.H / s.Hk;
  const LdAs<T> ldt;
  const LdAny ldo{a.dO_type};
  const int64_t items = gpu::flash_key_tiles(s, kT);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, hk, j0;
    gpu::flash_key_tile(s, w, &b, &hk, &j0, kT);
    load_t<DB>(skt, ldt, a.k, s.k, b, j0, hk, s.Sk, s.D);
    load_t<DB>(svt, ldt, a.v, s.v, b, j0, hk, s.Sk, s.Dv);
    float dk[4][NC], dv[4][NC];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int c = 0; c < NC; c++) dk[r][c] = dv[r][c] = 0.f;
    // The (query head, query tile) pairs that see the keys: t < nt, head
    // hk G + t / nq, rows from ib + (t % nq) 64.
    const int ib = gpu::flash_tile_query_begin(s, j0);
    const int nq = ib < s.Sq ? (s.Sq - ib + kT - 1) / kT : 0, nt = G * nq;
    // (ASYNC) Starts the copies of pair t into buffer bb.
    auto issue = [&](int t, int bb) {
      const int h = hk * G + t / nq, i0 = ib + (t % nq) * kT;
      float* q = sbuf + bb * 4 * kT * DB;
      load_t<DB, true>(q, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
      load_t<DB, true>(q + kT * DB, ldo, a.dO, a.dO_view, b, i0, h, s.Sq, s.Dv);
      load_n<DB, true>(q + 2 * kT * DB, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
      load_n<DB, true>(q + 3 * kT * DB, ldo, a.dO, a.dO_view, b, i0, h, s.Sq, s.Dv);
      cp_async_commit();
    };
    if constexpr (ASYNC) {
      if (nt > 0) issue(0, 0);
    }
    for (int t = 0, bb = 0; t < nt; t++, bb ^= 1) {
      const int h = hk * G + t / nq, i0 = ib + (t % nq) * kT;
      __syncthreads();                                     // k, v in place; the previous tile's q, dO, p, ds read
      float* sqt = sbuf + (ASYNC ? bb : 0) * 4 * kT * DB;  // transposed q
      float* sdot = sqt + kT * DB;                         // transposed dO
      float* sqn = sdot + kT * DB;                         // natural q
      float* sdon = sqn + kT * DB;                         // natural dO
      if constexpr (ASYNC) {
        if (t + 1 < nt) {
          issue(t + 1, bb ^ 1);
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
      } else {
        load_t<DB>(sqt, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
        load_t<DB>(sdot, ldo, a.dO, a.dO_view, b, i0, h, s.Sq, s.Dv);
        load_n<DB>(sqn, ldt, a.q, s.q, b, i0, h, s.Sq, s.D);
        load_n<DB>(sdon, ldo, a.dO, a.dO_view, b, i0, h, s.Sq, s.Dv);
      }
      float lse2[4], dl[4];
#pragma unroll
      for (int q = 0; q < 4; q++) row_stats(a, b, h, i0 + tx * 4 + q, &lse2[q], &dl[q]);
      __syncthreads();
      float qk[4][4], dp[4][4];
      mm_tt(skt, sqt, ty, tx, dlim, qk);
      mm_tt(svt, sdot, ty, tx, dvlim, dp);
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          float p, ds;
          tiled_pds<T>(a, qk[r][q], dp[r][q], lse2[q], dl[q], b, h, i0 + tx * 4 + q, j0 + ty * 4 + r, sl2, &p, &ds);
          qk[r][q] = p, dp[r][q] = ds;
        }
      write_p(sp, ty, tx, qk);
      write_p(sds, ty, tx, dp);
      __syncthreads();
      const int klim = min_int(kT, s.Sq - i0);
      mm_pn<DB>(sp, sdon, ty, tx, klim, dv);
      mm_pn<DB>(sds, sqn, ty, tx, klim, dk);
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int j = j0 + ty * 4 + r;
      if (j >= s.Sk) continue;
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const int d = (c >> 2) * 64 + tx * 4 + (c & 3);
        if (a.dk && d < s.D) st_any(a.dk, gpu::attn_off(a.dk_view, b, j, hk, d), a.out_type, dk[r][c]);
        if (a.dv && d < s.Dv) st_any(a.dv, gpu::attn_off(a.dv_view, b, j, hk, d), a.out_type, dv[r][c]);
      }
    }
    __syncthreads();  // k and v are reused by the next item
  }
}

size_t bytes(int floats) { return static_cast<size_t>(floats) * sizeof(float); }

// Launches kernel k with `floats` of dynamic shared memory (opting in past
// 48 KiB, as the GPU requires) over `items` work items.
template <class K>
cudaError_t launch(K k, int floats, int64_t items, cudaStream_t st, const FlashArgs& a) {
  const size_t n = bytes(floats);
  if (n > (size_t{48} << 10)) {
    const cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(n));
    if (e != cudaSuccess) return e;
  }
  k<<<gpu::flash_grid(items), kThreads, n, st>>>(a);
  return cudaGetLastError();
}

// f.template operator()<DB, T>() for the call's head bucket (64 or 128) and type.
template <class F>
cudaError_t with_db_type(const FlashArgs& a, F&& f) {
  const int m = a.s.D > a.s.Dv ? a.s.D : a.s.Dv;
  if (m <= 64) {
    if (a.type == kF16) return f.template operator()<64, __half>();
    if (a.type == kBF16) return f.template operator()<64, __nv_bfloat16>();
    return f.template operator()<64, float>();
  }
  if (a.type == kF16) return f.template operator()<128, __half>();
  if (a.type == kBF16) return f.template operator()<128, __nv_bfloat16>();
  return f.template operator()<128, float>();
}

struct LaunchForward {
  cudaStream_t st;
  const FlashArgs& a;
  int async;  // flash_tiled_async_mode
  template <int DB, class T>
  cudaError_t operator()() const {
    if constexpr (std::is_same_v<T, float>) {
      if (async == 1 || (async == 2 && DB <= 64))
        return launch(flash_tiled_forward<DB, T, true>, fwd_floats(DB, true), gpu::flash_row_tiles(a.s, kT), st, a);
    }
    return launch(flash_tiled_forward<DB, T, false>, fwd_floats(DB, false), gpu::flash_row_tiles(a.s, kT), st, a);
  }
};
struct LaunchDq {
  cudaStream_t st;
  const FlashArgs& a;
  template <int DB, class T>
  cudaError_t operator()() const {
    return launch(flash_tiled_dq<DB, T>, dq_floats(DB), gpu::flash_row_tiles(a.s, kT), st, a);
  }
};
struct LaunchDkdv {
  cudaStream_t st;
  const FlashArgs& a;
  int async;  // flash_tiled_async_mode
  template <int DB, class T>
  cudaError_t operator()() const {
    if constexpr (std::is_same_v<T, float> && DB <= 64) {
      if (async && a.dO_type == kF32)
        return launch(flash_tiled_dkdv<DB, T, true>, kv_floats(DB, true), gpu::flash_key_tiles(a.s, kT), st, a);
    }
    return launch(flash_tiled_dkdv<DB, T, false>, kv_floats(DB, false), gpu::flash_key_tiles(a.s, kT), st, a);
  }
};

}  // namespace

cudaError_t launch_flash_tiled_forward(cudaStream_t st, const FlashArgs& a) {
  if (!flash_tiled_takes(a.s.D, a.s.Dv, false, nullptr)) return cudaErrorInvalidValue;
  if (gpu::flash_row_tiles(a.s, kT) == 0) return cudaSuccess;
  return with_db_type(a, LaunchForward{st, a, flash_tiled_async_mode_from_env()});
}

cudaError_t launch_flash_tiled_backward(cudaStream_t st, const FlashArgs& a) {
  if (!flash_tiled_takes(a.s.D, a.s.Dv, true, nullptr)) return cudaErrorInvalidValue;
  if (static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq == 0) return cudaSuccess;
  cudaError_t e = launch_flash_delta(st, a);
  if (e != cudaSuccess) return e;
  if ((a.dk || a.dv) && gpu::flash_key_tiles(a.s, kT) > 0) {
    e = with_db_type(a, LaunchDkdv{st, a, flash_tiled_async_mode_from_env()});
    if (e != cudaSuccess) return e;
  }
  if (a.dq) e = with_db_type(a, LaunchDq{st, a});
  return e;
}

}  // namespace nnc::cuda
