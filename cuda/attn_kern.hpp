// The GPU attention kernels' launch functions (attn_kernels.cu), called by
// attn_gpu.cpp. Each queues its work on the stream it is given and returns
// the launch status. The math is lib/cmd/common/gpu_attn.hpp (tested on the
// CPU); here only the block reductions and the launch geometry.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_attn.hpp"

namespace nnc::cuda {

// Storage type of a tensor the kernels read or write: 0 fp32, 1 fp16.
struct AttnRows {
  gpu::AttnShape s;  // s.lse: where lse is read / written (lse_half: its type)
  int half = 0;      // q, k, v, mask are fp16
  const void *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  int64_t u0 = 0, u1 = 0;  // the chunk: units u = b * Hk + hk in [u0, u1) (gpu_attn.hpp's attn_row_of)
  float* p = nullptr;      // [chunk rows][Sk] scratch: probabilities
  float* ds = nullptr;     // backward: [chunk rows][Sk] scratch: ds
  void* lse = nullptr;     // forward: written when not NULL; backward: read
  int lse_half = 0;
  void* o = nullptr;  // forward: written when not NULL, at o_view
  gpu::AttnView o_view;
  int o_half = 0;             // o's type (a float scratch when 0 and half is 1)
  const float* dO = nullptr;  // backward: [B, Sq, H, Dv] packed float
};

// Forward rows of the chunk: p, lse, o.
cudaError_t launch_attn_forward_rows(cudaStream_t s, const AttnRows& a);
// Backward rows: p and ds.
cudaError_t launch_attn_backward_rows(cudaStream_t s, const AttnRows& a);
// dq, dk, dv of the chunk (each when its pointer is not NULL; out_half: their type).
cudaError_t launch_attn_grads(cudaStream_t s, const AttnRows& a, void* dq, gpu::AttnView dqv, void* dk,
                              gpu::AttnView dkv, void* dv, gpu::AttnView dvv, int out_half);
// dst[b, i, h, d] (dst_view, dst_half) = src[b, i, h, d] (src_view, src_half): B x S x H x D elements.
cudaError_t launch_attn_copy(cudaStream_t s, int B, int S, int H, int D, const void* src, gpu::AttnView src_view,
                             int src_half, void* dst, gpu::AttnView dst_view, int dst_half);
// The fused projection: y = O w^T + bias (y at p's y strides), all of type `half`.
cudaError_t launch_attn_proj(cudaStream_t s, const gpu::AttnProj& p, const float* O, const void* w, const void* bias,
                             void* y, int half);
// Its backward: dO (float, [R][C]) = g w when dO; dw (at dw_rs, dw_cs) = g^T O when dw; dbias when dbias.
cudaError_t launch_attn_proj_backward(cudaStream_t s, const gpu::AttnProj& p, const void* g, const void* w,
                                      const float* O, float* dO, void* dw, int64_t dw_rs, int64_t dw_cs, void* dbias,
                                      int64_t dbias_stride, int half);

}  // namespace nnc::cuda
