// SCALED_DOT_PRODUCT_ATTENTION's GPU kernels (see attn_kern.hpp): one block
// per query row for the row passes, one thread per element for the rest. The
// values come from cmd/common/gpu_attn.hpp's functions. Storage of 32F, 16F
// or 16BF (AttnRows' GpuType codes), float arithmetic and scratch.
#include <algorithm>

#include "cuda/attn_kern.hpp"
#include "cuda/typed_access.cuh"

namespace nnc::cuda {

namespace {

using gpu::AttnShape;
using gpu::AttnView;

constexpr int kRowThreads = 128;  // a multiple of 32 (the reductions assume whole warps)
constexpr int kThreads = 256;

// Max (is_max) or sum over the block, returned to every thread. `red` holds
// 32 floats; the block is whole warps.
__device__ float block_reduce(float v, float* red, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, u) : v + u;
  }
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();  // red's previous use is over
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < nw ? red[lane] : (is_max ? -INFINITY : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, u) : v + u;
  }
  return v;
}

// The sum over a warp, returned to every lane.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class L>
__global__ void forward_rows(AttnRows a) {
  extern __shared__ float qrow[];  // D floats
  __shared__ float red[32];
  __shared__ float acc[kRowThreads];  // the o parts (parts * Dv <= the block's threads)
  const AttnShape& s = a.s;
  const L ld;
  const int t = threadIdx.x, n = blockDim.x;
  const int64_t rows = gpu::attn_chunk_rows(s, a.u0, a.u1);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int b, h, i;
    gpu::attn_row_of(s, a.u0, r, &b, &h, &i);
    float* prow = a.p + r * s.Sk;
    for (int d = t; d < s.D; d += n) qrow[d] = ld(a.q, gpu::attn_off(s.q, b, i, h, d));
    __syncthreads();
    // One warp per key (coalesced reads of the key's row), lane 0 keeps the score.
    const int lane = t & 31, warp = t >> 5, warps = n >> 5, end = gpu::attn_key_end(s, i);
    float m = -INFINITY;
    for (int j = warp; j < end; j += warps) {
      const float dot =
          warp_sum(gpu::attn_dot_part(qrow, ld, a.k, gpu::attn_key_off(s, b, h, j), s.k.sd, s.D, lane, 32));
      const float sc = gpu::attn_score_finish(s, dot, ld, a.mask, b, h, i, j);
      if (lane == 0) prow[j] = sc;
      m = fmaxf(m, sc);
    }
    m = block_reduce(m, red, true);  // its barrier also publishes prow
    float l = gpu::attn_exp_part(s, prow, m, i, t, n);
    l = block_reduce(l, red, false);
    const float lse = gpu::attn_lse(m, l);
    gpu::attn_prob_part(s, prow, lse, i, t, n);
    __syncthreads();  // every probability of the row is written
    if (a.lse && t == 0) st_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type, lse);
    if (a.o) {
      const int parts = gpu::attn_out_parts(s.Dv, n);
      if (parts > 1) {  // every thread works: part t / Dv of the keys for column t % Dv, then the parts summed
        const int d = t % s.Dv, part = t / s.Dv;
        if (part < parts) acc[part * s.Dv + d] = gpu::attn_out_part(s, prow, ld, a.v, b, h, i, d, part, parts);
        __syncthreads();
        if (t < s.Dv) {
          float o = 0;
          for (int k = 0; k < parts; k++) o += acc[k * s.Dv + t];
          st_any(a.o, gpu::attn_off(a.o_view, b, i, h, t), a.o_type, o);
        }
      } else {
        for (int d = t; d < s.Dv; d += n)
          st_any(a.o, gpu::attn_off(a.o_view, b, i, h, d), a.o_type, gpu::attn_out(s, prow, ld, a.v, b, h, i, d));
      }
    }
    __syncthreads();  // qrow, prow and acc are reused by the next row
  }
}

template <class L>
__global__ void backward_rows(AttnRows a) {
  extern __shared__ float sm[];  // qrow [D], dOrow [Dv]
  __shared__ float red[32];
  const AttnShape& s = a.s;
  const L ld;
  float* qrow = sm;
  float* dOrow = sm + s.D;
  const int t = threadIdx.x, n = blockDim.x;
  const int64_t rows = gpu::attn_chunk_rows(s, a.u0, a.u1);
  const AttnView dov = gpu::attn_packed(s.Sq, s.H, s.Dv);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int b, h, i;
    gpu::attn_row_of(s, a.u0, r, &b, &h, &i);
    float* prow = a.p + r * s.Sk;
    float* dsrow = a.ds + r * s.Sk;
    for (int d = t; d < s.D; d += n) qrow[d] = ld(a.q, gpu::attn_off(s.q, b, i, h, d));
    for (int d = t; d < s.Dv; d += n) dOrow[d] = a.dO[gpu::attn_off(dov, b, i, h, d)];
    __syncthreads();
    const float lse = ld_any(a.lse, gpu::attn_lse_off(s, b, h, i), a.lse_type);
    // One warp per key: the score and dp = dO_i . v_j, kept by lane 0.
    const int lane = t & 31, warp = t >> 5, warps = n >> 5, end = gpu::attn_key_end(s, i);
    for (int j = warp; j < end; j += warps) {
      const float dot =
          warp_sum(gpu::attn_dot_part(qrow, ld, a.k, gpu::attn_key_off(s, b, h, j), s.k.sd, s.D, lane, 32));
      const float dp =
          warp_sum(gpu::attn_dot_part(dOrow, ld, a.v, gpu::attn_value_off(s, b, h, j), s.v.sd, s.Dv, lane, 32));
      if (lane == 0) {
        prow[j] = gpu::attn_score_finish(s, dot, ld, a.mask, b, h, i, j);
        dsrow[j] = dp;
      }
    }
    __syncthreads();
    float delta = gpu::attn_bwd_prob_part(s, prow, dsrow, lse, i, t, n);
    delta = block_reduce(delta, red, false);
    gpu::attn_ds_part(s, prow, dsrow, delta, t, n);
    __syncthreads();
  }
}

int64_t grid_for(int64_t n, int threads) {
  return std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, int64_t{1} << 20));
}

template <class L>
__global__ void grads(AttnRows a, void* dq, AttnView dqv, void* dk, AttnView dkv, void* dv, AttnView dvv,
                      int out_type) {
  const AttnShape& s = a.s;
  const L ld;
  const int64_t units = a.u1 - a.u0;
  const int64_t nq = dq ? gpu::attn_chunk_rows(s, a.u0, a.u1) * s.D : 0;
  const int64_t nk = dk ? units * s.Sk * s.D : 0;
  const int64_t nv = dv ? units * s.Sk * s.Dv : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nq + nk + nv; e += step) {
    if (e < nq) {
      int b, i, h, d;
      gpu::attn_dq_index(s, a.u0, e, &b, &i, &h, &d);
      st_any(dq, gpu::attn_off(dqv, b, i, h, d), out_type, gpu::attn_dq(s, a.ds, a.u0, ld, a.k, b, i, h, d));
    } else if (e < nq + nk) {
      int b, j, hk, d;
      gpu::attn_dkv_index(s, a.u0, e - nq, s.D, &b, &j, &hk, &d);
      st_any(dk, gpu::attn_off(dkv, b, j, hk, d), out_type, gpu::attn_dk(s, a.ds, a.u0, ld, a.q, b, j, hk, d));
    } else {
      int b, j, hk, d;
      gpu::attn_dkv_index(s, a.u0, e - nq - nk, s.Dv, &b, &j, &hk, &d);
      st_any(dv, gpu::attn_off(dvv, b, j, hk, d), out_type, gpu::attn_dv(s, a.p, a.u0, a.dO, b, j, hk, d));
    }
  }
}

__global__ void copy4(int B, int S, int H, int D, const void* src, AttnView sv, int src_type, void* dst, AttnView dv,
                      int dst_type) {
  const int64_t n = static_cast<int64_t>(B) * S * H * D;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    int64_t x = e;
    const int d = static_cast<int>(x % D);
    x /= D;
    const int h = static_cast<int>(x % H);
    x /= H;
    const int i = static_cast<int>(x % S);
    x /= S;
    const int b = static_cast<int>(x);
    st_any(dst, gpu::attn_off(dv, b, i, h, d), dst_type, ld_any(src, gpu::attn_off(sv, b, i, h, d), src_type));
  }
}

template <class T>
__global__ void proj(gpu::AttnProj p, const float* O, const void* w, const void* bias, void* y) {
  const LdAs<T> load_t;
  const int64_t n = static_cast<int64_t>(p.R) * p.N;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    const int64_t r = e / p.N;
    const int c = static_cast<int>(e % p.N);
    st<T>(y, gpu::attn_proj_off(p, r, c), gpu::attn_proj(p, O, load_t, w, bias, r, c));
  }
}

template <class T>
__global__ void proj_backward(gpu::AttnProj p, const void* g, const void* w, const float* O, float* dO, void* dw,
                              int64_t dw_rs, int64_t dw_cs, void* dbias, int64_t dbias_stride) {
  const LdAs<T> load_t;
  const int64_t nx = dO ? static_cast<int64_t>(p.R) * p.C : 0;
  const int64_t nw = dw ? static_cast<int64_t>(p.N) * p.C : 0;
  const int64_t nb = dbias ? p.N : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nx + nw + nb; e += step) {
    if (e < nx) {
      const int64_t r = e / p.C;
      const int c = static_cast<int>(e % p.C);
      dO[e] = gpu::attn_proj_dx(p, load_t, g, w, r, c);
    } else if (e < nx + nw) {
      const int64_t x = e - nx;
      const int n = static_cast<int>(x / p.C), c = static_cast<int>(x % p.C);
      st<T>(dw, n * dw_rs + c * dw_cs, gpu::attn_proj_dw(p, load_t, g, O, n, c));
    } else {
      const int n = static_cast<int>(e - nx - nw);
      st<T>(dbias, n * dbias_stride, gpu::attn_proj_dbias(p, load_t, g, n));
    }
  }
}

int row_grid(const AttnRows& a) {
  const int64_t rows = gpu::attn_chunk_rows(a.s, a.u0, a.u1);
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, int64_t{1} << 20)));
}

}  // namespace

cudaError_t launch_attn_forward_rows(cudaStream_t st, const AttnRows& a) {
  const size_t shm = static_cast<size_t>(a.s.D) * sizeof(float);
  if (!with_float_type(a.type, [&](auto tag) {
        using T = decltype(tag);
        forward_rows<LdAs<T>><<<row_grid(a), kRowThreads, shm, st>>>(a);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_attn_backward_rows(cudaStream_t st, const AttnRows& a) {
  const size_t shm = static_cast<size_t>(a.s.D + a.s.Dv) * sizeof(float);
  if (!with_float_type(a.type, [&](auto tag) {
        using T = decltype(tag);
        backward_rows<LdAs<T>><<<row_grid(a), kRowThreads, shm, st>>>(a);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_attn_grads(cudaStream_t st, const AttnRows& a, void* dq, AttnView dqv, void* dk, AttnView dkv,
                              void* dv, AttnView dvv, int out_type) {
  const AttnShape& s = a.s;
  const int64_t units = a.u1 - a.u0;
  const int64_t n = (dq ? gpu::attn_chunk_rows(s, a.u0, a.u1) * s.D : 0) + (dk ? units * s.Sk * s.D : 0) +
                    (dv ? units * s.Sk * s.Dv : 0);
  if (n == 0) return cudaSuccess;
  const int grid = static_cast<int>(grid_for(n, kThreads));
  if (!with_float_type(a.type, [&](auto tag) {
        using T = decltype(tag);
        grads<LdAs<T>><<<grid, kThreads, 0, st>>>(a, dq, dqv, dk, dkv, dv, dvv, out_type);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_attn_copy(cudaStream_t st, int B, int S, int H, int D, const void* src, AttnView src_view,
                             int src_type, void* dst, AttnView dst_view, int dst_type) {
  const int64_t n = static_cast<int64_t>(B) * S * H * D;
  copy4<<<static_cast<int>(grid_for(n, kThreads)), kThreads, 0, st>>>(B, S, H, D, src, src_view, src_type, dst,
                                                                      dst_view, dst_type);
  return cudaGetLastError();
}

cudaError_t launch_attn_proj(cudaStream_t st, const gpu::AttnProj& p, const float* O, const void* w, const void* bias,
                             void* y, int type) {
  const int grid = static_cast<int>(grid_for(static_cast<int64_t>(p.R) * p.N, kThreads));
  if (!with_float_type(type, [&](auto tag) {
        using T = decltype(tag);
        proj<T><<<grid, kThreads, 0, st>>>(p, O, w, bias, y);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_attn_proj_backward(cudaStream_t st, const gpu::AttnProj& p, const void* g, const void* w,
                                      const float* O, float* dO, void* dw, int64_t dw_rs, int64_t dw_cs, void* dbias,
                                      int64_t dbias_stride, int type) {
  const int64_t n =
      (dO ? static_cast<int64_t>(p.R) * p.C : 0) + (dw ? static_cast<int64_t>(p.N) * p.C : 0) + (dbias ? p.N : 0);
  if (n == 0) return cudaSuccess;
  const int grid = static_cast<int>(grid_for(n, kThreads));
  if (!with_float_type(type, [&](auto tag) {
        using T = decltype(tag);
        proj_backward<T><<<grid, kThreads, 0, st>>>(p, g, w, O, dO, dw, dw_rs, dw_cs, dbias, dbias_stride);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace nnc::cuda
