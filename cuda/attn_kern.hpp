// The GPU attention kernels' launch functions (attn_kernels.cu), called by
// attn_gpu.cpp. Each queues its work on the stream it is given and returns
// the launch status. The math is lib/cmd/common/gpu_attn.hpp (tested on the
// CPU); here only the block reductions and the launch geometry.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_attn.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

// Storage types of the tensors the kernels read or write are GpuType codes
// (cuda/kern.hpp): kF32, kF16 or kBF16; scratch is always float.
struct AttnRows {
  gpu::AttnShape s;  // s.lse: where lse is read / written (lse_type: its type)
  int type = kF32;   // q, k, v, mask
  const void *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  int64_t u0 = 0, u1 = 0;  // the chunk: units u = b * Hk + hk in [u0, u1) (gpu_attn.hpp's attn_row_of)
  float* p = nullptr;      // [chunk rows][Sk] scratch: probabilities
  float* ds = nullptr;     // backward: [chunk rows][Sk] scratch: ds
  void* lse = nullptr;     // forward: written when not NULL; backward: read
  int lse_type = kF32;
  void* o = nullptr;  // forward: written when not NULL, at o_view
  gpu::AttnView o_view;
  int o_type = kF32;          // o's type (kF32 for a float scratch whatever `type` is)
  const float* dO = nullptr;  // backward: [B, Sq, H, Dv] packed float
};

// Forward rows of the chunk: p, lse, o.
cudaError_t launch_attn_forward_rows(cudaStream_t s, const AttnRows& a);
// Backward rows: p and ds.
cudaError_t launch_attn_backward_rows(cudaStream_t s, const AttnRows& a);
// dq, dk, dv of the chunk (each when its pointer is not NULL; out_type: their type).
cudaError_t launch_attn_grads(cudaStream_t s, const AttnRows& a, void* dq, gpu::AttnView dqv, void* dk,
                              gpu::AttnView dkv, void* dv, gpu::AttnView dvv, int out_type);
// dst[b, i, h, d] (dst_view, dst_type) = src[b, i, h, d] (src_view, src_type): B x S x H x D elements.
cudaError_t launch_attn_copy(cudaStream_t s, int B, int S, int H, int D, const void* src, gpu::AttnView src_view,
                             int src_type, void* dst, gpu::AttnView dst_view, int dst_type);
// The fused projection: y = O w^T + bias (y at p's y strides); w, bias and y of `type`, O float.
cudaError_t launch_attn_proj(cudaStream_t s, const gpu::AttnProj& p, const float* O, const void* w, const void* bias,
                             void* y, int type);
// Its backward: dO (float, [R][C]) = g w when dO; dw (at dw_rs, dw_cs) = g^T O when dw; dbias when dbias
// (g, w, dw, dbias of `type`).
cudaError_t launch_attn_proj_backward(cudaStream_t s, const gpu::AttnProj& p, const void* g, const void* w,
                                      const float* O, float* dO, void* dw, int64_t dw_rs, int64_t dw_cs, void* dbias,
                                      int64_t dbias_stride, int type);

}  // namespace nnc::cuda
