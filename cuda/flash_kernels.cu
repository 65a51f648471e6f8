// The fused (flash) SCALED_DOT_PRODUCT_ATTENTION kernels (see flash_kern.hpp
// and, for the algorithm, the geometry and the shared-memory layouts,
// lib/cmd/common/gpu_flash.hpp). FlashAttention-2 with scalar FMA: tiles of
// q, k, v (and dO) in shared memory as float, accumulators in registers (NC
// columns per thread), fp32 throughout, no scratch beyond delta
// ([B, H, Sq] floats). Each output element is summed by one thread in a
// fixed order (no atomics), so reruns give the same bits.
#include <cuda_fp16.h>

#include "cuda/flash_kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::AttnShape;
using gpu::AttnView;
using gpu::FlashGeom;
using gpu::kFlashGroups;
using gpu::kFlashKeys;
using gpu::kFlashThreads;
using gpu::kFlashTpr;

// Max / sum over the kFlashTpr lanes of a row group (every lane of the warp
// takes part; the groups are aligned within the warp).
__device__ __forceinline__ float group_max(float v) {
  for (int o = kFlashTpr / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float group_sum(float v) {
  for (int o = kFlashTpr / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kKpt = 64 / kFlashTpr;  // a thread's keys (or rows) of a tile: tiles are at most 64 long

// out[u][k] = (row u of a, at a + u astep) . (row t + k kFlashTpr of b) (n
// floats each, b's rows `stride` floats apart) for each k < kKpt with
// t + k kFlashTpr < count (the others are left 0): each shared-memory element
// of b is read once for the thread's R rows, each of a once for its keys.
template <int R>
__device__ __forceinline__ void dots(const float* a, int astep, const float* b, int stride, int n, int t, int count,
                                     float (&out)[R][kKpt]) {
#pragma unroll
  for (int u = 0; u < R; u++)
#pragma unroll
    for (int k = 0; k < kKpt; k++) out[u][k] = 0.f;
  for (int d = 0; d < n; d++) {
    float x[R];
#pragma unroll
    for (int u = 0; u < R; u++) x[u] = a[u * astep + d];
#pragma unroll
    for (int k = 0; k < kKpt; k++)
      if (t + k * kFlashTpr < count) {
        const float y = b[(t + k * kFlashTpr) * stride + d];
#pragma unroll
        for (int u = 0; u < R; u++) out[u][k] = fmaf(x[u], y, out[u][k]);
      }
  }
}

// rows x n elements of operand x (b, row0 + r, head, d) at view xv into
// dst[r * stride + d]; rows at or past `limit` get 0.
template <class T>
__device__ __forceinline__ void load_tile(float* dst, int stride, int rows, int n, const void* x, const AttnView& xv,
                                          int b, int row0, int head, int limit) {
  for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
    const int r = e / n, d = e - r * n, row = row0 + r;
    dst[r * stride + d] = row < limit ? ld<T>(x, gpu::attn_off(xv, b, row, head, d)) : 0.f;
  }
}
// The same for an operand of run-time type (dO, O).
__device__ __forceinline__ void load_tile_any(float* dst, int stride, int rows, int n, const void* x,
                                              const AttnView& xv, int type, int b, int row0, int head, int limit) {
  for (int e = threadIdx.x; e < rows * n; e += blockDim.x) {
    const int r = e / n, d = e - r * n, row = row0 + r;
    dst[r * stride + d] = row < limit ? ld_any(x, gpu::attn_off(xv, b, row, head, d), type) : 0.f;
  }
}

template <int NC, class T>
__global__ void flash_forward(FlashArgs a) {
  constexpr int R = gpu::flash_rpt(NC), kRows = kFlashGroups * R;  // rows per thread, per block (= g.rows)
  extern __shared__ float fsm[];
  const AttnShape& s = a.s;
  const FlashGeom& g = a.g;
  float* sq = fsm + g.fwd_q;
  float* sk = fsm + g.fwd_k;
  float* sv = fsm + g.fwd_v;
  float* sp = fsm + g.fwd_p;
  const int tid = threadIdx.x, grp = tid / kFlashTpr, t = tid % kFlashTpr, tile = g.fwd_tile;
  const LdAs<T> ldm;
  const int64_t items = gpu::flash_row_tiles(s, kRows);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, h, i0;
    gpu::flash_row_tile(s, kRows, w, &b, &h, &i0);
    const int hk = gpu::attn_kv_head(s, h);
    const int kend = gpu::flash_tile_key_end(s, i0, kRows);
    // The thread's rows: i0 + grp + u kFlashGroups.
    int rend[R];
    float m[R], l[R], acc[R][NC];
#pragma unroll
    for (int u = 0; u < R; u++) {
      const int i = i0 + grp + u * kFlashGroups;
      rend[u] = i < s.Sq ? gpu::attn_key_end(s, i) : 0;
      m[u] = gpu::attn_neg_inf(), l[u] = 0.f;
#pragma unroll
      for (int c = 0; c < NC; c++) acc[u][c] = 0.f;
    }
    load_tile<T>(sq, g.ks, kRows, s.D, a.q, s.q, b, i0, h, s.Sq);
    for (int j0 = 0; j0 < kend; j0 += tile) {
      __syncthreads();  // q is in place; the previous tile's k, v and p are read
      load_tile<T>(sk, g.ks, tile, s.D, a.k, s.k, b, j0, hk, s.Sk);
      load_tile<T>(sv, g.vs, tile, s.Dv, a.v, s.v, b, j0, hk, s.Sk);
      __syncthreads();
      // The thread's keys jj = t + k kFlashTpr of the tile: scores, then p.
      float sc[R][kKpt], alpha[R];
      dots<R>(sq + grp * g.ks, kFlashGroups * g.ks, sk, g.ks, s.D, t, tile, sc);
#pragma unroll
      for (int u = 0; u < R; u++) {
        const int row = grp + u * kFlashGroups, i = i0 + row;
        float tmax = gpu::attn_neg_inf();
#pragma unroll
        for (int k = 0; k < kKpt; k++) {
          const int jj = t + k * kFlashTpr, j = j0 + jj;
          if (jj >= tile) break;
          sc[u][k] = j < rend[u] ? gpu::attn_score_finish(s, sc[u][k], ldm, a.mask, b, h, i, j) : gpu::attn_neg_inf();
          tmax = fmaxf(tmax, sc[u][k]);
        }
        const float m2 = fmaxf(m[u], group_max(tmax));
        alpha[u] = gpu::flash_alpha(m[u], m2);
        float psum = 0.f;
        float* prow = sp + row * g.fwd_ps;
#pragma unroll
        for (int k = 0; k < kKpt; k++) {
          const int jj = t + k * kFlashTpr;
          if (jj >= tile) break;
          const float p = gpu::flash_prob(sc[u][k], m2);
          prow[jj] = p;
          psum += p;
        }
        l[u] = l[u] * alpha[u] + group_sum(psum);
        m[u] = m2;
      }
      __syncwarp();  // the rows' p (written by their group's lanes) are visible to the group
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const int d = t + c * kFlashTpr;
        if (d < s.Dv) {
          float x[R];
#pragma unroll
          for (int u = 0; u < R; u++) x[u] = acc[u][c] * alpha[u];
          for (int jj = 0; jj < tile; jj++) {
            const float vv = sv[jj * g.vs + d];
#pragma unroll
            for (int u = 0; u < R; u++) x[u] = fmaf(sp[(grp + u * kFlashGroups) * g.fwd_ps + jj], vv, x[u]);
          }
#pragma unroll
          for (int u = 0; u < R; u++) acc[u][c] = x[u];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < R; u++) {
      const int i = i0 + grp + u * kFlashGroups;
      if (i >= s.Sq) continue;
      const float inv = gpu::flash_out_scale(l[u]);
      if (a.o) {
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int d = t + c * kFlashTpr;
          if (d < s.Dv) st_any(a.o, gpu::attn_off(a.o_view, b, i, h, d), a.o_type, acc[u][c] * inv);
        }
      }
      if (a.lse && t == 0) st_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type, gpu::attn_lse(m[u], l[u]));
    }
    __syncthreads();  // q, k, v and p are reused by the next item
  }
}

// delta[(b * H + h) * Sq + i] = dO_i . O_i, one warp per row.
__global__ void flash_delta(FlashArgs a) {
  const AttnShape& s = a.s;
  const int64_t rows = static_cast<int64_t>(s.B) * s.H * s.Sq;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows;
       row += warps) {
    const int i = static_cast<int>(row % s.Sq);
    const int64_t bh = row / s.Sq;
    const int h = static_cast<int>(bh % s.H), b = static_cast<int>(bh / s.H);
    float acc = 0.f;
    for (int d = lane; d < s.Dv; d += 32)
      acc = fmaf(ld_any(a.dO, gpu::attn_off(a.dO_view, b, i, h, d), a.dO_type),
                 ld_any(a.O, gpu::attn_off(a.O_view, b, i, h, d), a.O_type), acc);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) a.delta[row] = acc;
  }
}

// p and ds of (query row i with its lse and delta, key j) from the dots
// q_i . k_j (qk) and dO_i . v_j (dp); 0 for a hidden pair.
template <class T>
__device__ __forceinline__ void flash_pds(const FlashArgs& a, float qk, float dp, float lse, float delta, int b, int h,
                                          int i, int j, float* p, float* ds) {
  const AttnShape& s = a.s;
  *p = 0.f, *ds = 0.f;
  if (!gpu::flash_visible(s, i, j)) return;
  const float pp = gpu::attn_prob(gpu::attn_score_finish(s, qk, LdAs<T>{}, a.mask, b, h, i, j), lse);
  if (pp == 0.f) return;
  *p = pp;
  *ds = gpu::flash_ds(pp, dp, delta, s.scale);
}

// dq, one block per (b, h, kRows query rows), over the key tiles.
template <int NC, class T>
__global__ void flash_dq(FlashArgs a) {
  constexpr int R = gpu::flash_rpt(NC), kRows = kFlashGroups * R;  // rows per thread, per block (= g.rows)
  extern __shared__ float fsm[];
  const AttnShape& s = a.s;
  const FlashGeom& g = a.g;
  float* sq = fsm + g.dq_q;
  float* sdo = fsm + g.dq_do;
  float* sl = fsm + g.dq_l;
  float* sdl = fsm + g.dq_dl;
  float* sk = fsm + g.dq_k;
  float* sv = fsm + g.dq_v;
  float* ss = fsm + g.dq_s;
  const int tid = threadIdx.x, grp = tid / kFlashTpr, t = tid % kFlashTpr, tile = g.dq_tile;
  const int64_t items = gpu::flash_row_tiles(s, kRows);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, h, i0;
    gpu::flash_row_tile(s, kRows, w, &b, &h, &i0);
    const int hk = gpu::attn_kv_head(s, h);
    const int kend = gpu::flash_tile_key_end(s, i0, kRows);
    load_tile<T>(sq, g.ks, kRows, s.D, a.q, s.q, b, i0, h, s.Sq);
    load_tile_any(sdo, g.vs, kRows, s.Dv, a.dO, a.dO_view, a.dO_type, b, i0, h, s.Sq);
    for (int row = tid; row < kRows; row += blockDim.x) {
      const int i = i0 + row;
      sl[row] = i < s.Sq ? ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type) : 0.f;
      sdl[row] = i < s.Sq ? a.delta[(static_cast<int64_t>(b) * s.H + h) * s.Sq + i] : 0.f;
    }
    float acc[R][NC];
#pragma unroll
    for (int u = 0; u < R; u++)
#pragma unroll
      for (int c = 0; c < NC; c++) acc[u][c] = 0.f;
    for (int j0 = 0; j0 < kend; j0 += tile) {
      __syncthreads();  // q, dO, lse, delta in place; the previous tile's k and ds are read
      load_tile<T>(sk, g.ks, tile, s.D, a.k, s.k, b, j0, hk, s.Sk);
      load_tile<T>(sv, g.vs, tile, s.Dv, a.v, s.v, b, j0, hk, s.Sk);
      __syncthreads();
      {  // the rows' pairs with the keys jj = t + k kFlashTpr
        float qk[R][kKpt], dp[R][kKpt];
        dots<R>(sq + grp * g.ks, kFlashGroups * g.ks, sk, g.ks, s.D, t, tile, qk);
        dots<R>(sdo + grp * g.vs, kFlashGroups * g.vs, sv, g.vs, s.Dv, t, tile, dp);
#pragma unroll
        for (int u = 0; u < R; u++) {
          const int row = grp + u * kFlashGroups;
#pragma unroll
          for (int k = 0; k < kKpt; k++) {
            const int jj = t + k * kFlashTpr;
            if (jj >= tile) break;
            float p, ds;
            flash_pds<T>(a, qk[u][k], dp[u][k], sl[row], sdl[row], b, h, i0 + row, j0 + jj, &p, &ds);
            ss[row * g.dq_ps + jj] = ds;
          }
        }
      }
      __syncthreads();
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const int d = t + c * kFlashTpr;
        if (d < s.D) {
          float x[R];
#pragma unroll
          for (int u = 0; u < R; u++) x[u] = acc[u][c];
          for (int jj = 0; jj < tile; jj++) {
            const float kv = sk[jj * g.ks + d];
#pragma unroll
            for (int u = 0; u < R; u++) x[u] = fmaf(ss[(grp + u * kFlashGroups) * g.dq_ps + jj], kv, x[u]);
          }
#pragma unroll
          for (int u = 0; u < R; u++) acc[u][c] = x[u];
        }
      }
    }
    if (a.dq) {
#pragma unroll
      for (int u = 0; u < R; u++) {
        const int i = i0 + grp + u * kFlashGroups;
        if (i >= s.Sq) continue;
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int d = t + c * kFlashTpr;
          if (d < s.D) st_any(a.dq, gpu::attn_off(a.dq_view, b, i, h, d), a.out_type, acc[u][c]);
        }
      }
    }
    __syncthreads();
  }
}

// dk and dv, one block per (b, kv head, kFlashKeys keys), over the group's
// query heads and the query tiles that see the keys.
template <int NC, class T>
__global__ void flash_dkdv(FlashArgs a) {
  extern __shared__ float fsm[];
  const AttnShape& s = a.s;
  const FlashGeom& g = a.g;
  float* sk = fsm + g.kv_k;
  float* sv = fsm + g.kv_v;
  float* sq = fsm + g.kv_q;
  float* sdo = fsm + g.kv_do;
  float* sl = fsm + g.kv_l;
  float* sdl = fsm + g.kv_dl;
  float* sp = fsm + g.kv_p;
  float* ss = fsm + g.kv_s;
  const int tid = threadIdx.x, kk = tid / kFlashTpr, t = tid % kFlashTpr, qt = g.kv_q_tile;
  const int G = s.H / s.Hk;
  const int64_t items = gpu::flash_key_tiles(s);
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    int b, hk, j0;
    gpu::flash_key_tile(s, w, &b, &hk, &j0);
    const int j = j0 + kk;
    load_tile<T>(sk, g.ks, kFlashKeys, s.D, a.k, s.k, b, j0, hk, s.Sk);
    load_tile<T>(sv, g.vs, kFlashKeys, s.Dv, a.v, s.v, b, j0, hk, s.Sk);
    float dk[NC], dv[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) dk[c] = dv[c] = 0.f;
    const int ib = gpu::flash_tile_query_begin(s, j0);
    for (int h = hk * G; h < (hk + 1) * G; h++)
      for (int i0 = ib; i0 < s.Sq; i0 += qt) {
        __syncthreads();  // k, v in place; the previous tile's q, dO, p, ds are read
        load_tile<T>(sq, g.ks, qt, s.D, a.q, s.q, b, i0, h, s.Sq);
        load_tile_any(sdo, g.vs, qt, s.Dv, a.dO, a.dO_view, a.dO_type, b, i0, h, s.Sq);
        for (int ii = tid; ii < qt; ii += blockDim.x) {
          const int i = i0 + ii;
          sl[ii] = i < s.Sq ? ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type) : 0.f;
          sdl[ii] = i < s.Sq ? a.delta[(static_cast<int64_t>(b) * s.H + h) * s.Sq + i] : 0.f;
        }
        __syncthreads();
        {  // key kk's pairs with the query rows ii = t + k kFlashTpr
          float qk[1][kKpt], dp[1][kKpt];
          dots<1>(sk + kk * g.ks, 0, sq, g.ks, s.D, t, qt, qk);
          dots<1>(sv + kk * g.vs, 0, sdo, g.vs, s.Dv, t, qt, dp);
#pragma unroll
          for (int k = 0; k < kKpt; k++) {
            const int ii = t + k * kFlashTpr;
            if (ii >= qt) break;
            float p, ds;
            flash_pds<T>(a, qk[0][k], dp[0][k], sl[ii], sdl[ii], b, h, i0 + ii, j, &p, &ds);
            sp[ii * g.kv_ps + kk] = p;
            ss[ii * g.kv_ps + kk] = ds;
          }
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const int d = t + c * kFlashTpr;
          if (d < s.Dv) {
            float x = dv[c];
            for (int ii = 0; ii < qt; ii++) x = fmaf(sp[ii * g.kv_ps + kk], sdo[ii * g.vs + d], x);
            dv[c] = x;
          }
          if (d < s.D) {
            float x = dk[c];
            for (int ii = 0; ii < qt; ii++) x = fmaf(ss[ii * g.kv_ps + kk], sq[ii * g.ks + d], x);
            dk[c] = x;
          }
        }
      }
    if (j < s.Sk) {
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const int d = t + c * kFlashTpr;
        if (a.dk && d < s.D) st_any(a.dk, gpu::attn_off(a.dk_view, b, j, hk, d), a.out_type, dk[c]);
        if (a.dv && d < s.Dv) st_any(a.dv, gpu::attn_off(a.dv_view, b, j, hk, d), a.out_type, dv[c]);
      }
    }
    __syncthreads();  // k and v are reused by the next item
  }
}

// Calls f(std::integral_constant-like NC, T{}) for the plan's column bucket
// and input type.
template <int NC, class F>
cudaError_t with_type(const FlashArgs& a, F&& f) {
  if (a.type == kF16) return f.template operator()<NC, __half>();
  if (a.type == kBF16) return f.template operator()<NC, __nv_bfloat16>();
  return f.template operator()<NC, float>();
}
template <class F>
cudaError_t with_nc_type(const FlashArgs& a, F&& f) {
  switch (a.g.nc) {
    case 4:
      return with_type<4>(a, f);
    case 8:
      return with_type<8>(a, f);
    case 16:
      return with_type<16>(a, f);
    case 32:
      return with_type<32>(a, f);
    default:
      return cudaErrorInvalidValue;
  }
}

size_t bytes(int floats) { return static_cast<size_t>(floats) * sizeof(float); }

struct LaunchForward {
  cudaStream_t st;
  const FlashArgs& a;
  template <int NC, class T>
  cudaError_t operator()() const {
    flash_forward<NC, T>
        <<<gpu::flash_grid(gpu::flash_row_tiles(a.s, a.g.rows)), kFlashThreads, bytes(a.g.fwd_floats), st>>>(a);
    return cudaGetLastError();
  }
};
struct LaunchDq {
  cudaStream_t st;
  const FlashArgs& a;
  template <int NC, class T>
  cudaError_t operator()() const {
    flash_dq<NC, T>
        <<<gpu::flash_grid(gpu::flash_row_tiles(a.s, a.g.rows)), kFlashThreads, bytes(a.g.dq_floats), st>>>(a);
    return cudaGetLastError();
  }
};
struct LaunchDkdv {
  cudaStream_t st;
  const FlashArgs& a;
  template <int NC, class T>
  cudaError_t operator()() const {
    flash_dkdv<NC, T><<<gpu::flash_grid(gpu::flash_key_tiles(a.s)), kFlashThreads, bytes(a.g.kv_floats), st>>>(a);
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t launch_flash_forward(cudaStream_t st, const FlashArgs& a) {
  if (gpu::flash_row_tiles(a.s, a.g.rows) == 0) return cudaSuccess;
  return with_nc_type(a, LaunchForward{st, a});
}

cudaError_t launch_flash_backward(cudaStream_t st, const FlashArgs& a) {
  const int64_t rows = static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq;
  if (rows == 0) return cudaSuccess;
  const int64_t warps_per_block = kFlashThreads / 32;
  flash_delta<<<gpu::flash_grid((rows + warps_per_block - 1) / warps_per_block), kFlashThreads, 0, st>>>(a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  if ((a.dk || a.dv) && gpu::flash_key_tiles(a.s) > 0) {
    e = with_nc_type(a, LaunchDkdv{st, a});
    if (e != cudaSuccess) return e;
  }
  if (a.dq) e = with_nc_type(a, LaunchDq{st, a});
  return e;
}

}  // namespace nnc::cuda

namespace nnc::cuda {

cudaError_t launch_flash_delta(cudaStream_t st, const FlashArgs& a) {
  const int64_t rows = static_cast<int64_t>(a.s.B) * a.s.H * a.s.Sq;
  if (rows == 0) return cudaSuccess;
  const int64_t warps_per_block = kFlashThreads / 32;
  flash_delta<<<gpu::flash_grid((rows + warps_per_block - 1) / warps_per_block), kFlashThreads, 0, st>>>(a);
  return cudaGetLastError();
}

}  // namespace nnc::cuda
