// The fused (flash) GPU attention kernels' launch functions
// (flash_kernels.cu), called by attn_gpu.cpp. The geometry, eligibility and
// the online-softmax steps are lib/cmd/common/gpu_flash.hpp (tested on the
// CPU); the launches queue their work on the given stream and return the
// launch status.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_flash.hpp"

namespace nnc::cuda {

struct FlashArgs {
  gpu::AttnShape s;  // s.lse: the layout lse is written (forward) or read (backward) at
  gpu::FlashGeom g;  // from gpu::flash_plan
  int half = 0;      // q, k, v, mask are fp16 (else fp32)
  const void *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  void* lse = nullptr;  // forward: written when not NULL; backward: read
  int lse_half = 0;
  // Forward: o (written when not NULL) at o_view, of type o_half.
  void* o = nullptr;
  gpu::AttnView o_view;
  int o_half = 0;
  // Backward: dO (g) and the forward's O, each at its view and of its type;
  // delta: float [B, H, Sq] scratch (written by the first pass).
  const void* dO = nullptr;
  gpu::AttnView dO_view;
  int dO_half = 0;
  const void* O = nullptr;
  gpu::AttnView O_view;
  int O_half = 0;
  float* delta = nullptr;
  // Backward outputs (each when not NULL), of type out_half.
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  gpu::AttnView dq_view, dk_view, dv_view;
  int out_half = 0;
};

// o and lse.
cudaError_t launch_flash_forward(cudaStream_t s, const FlashArgs& a);
// delta, then dk and dv (when asked), then dq (when asked).
cudaError_t launch_flash_backward(cudaStream_t s, const FlashArgs& a);

}  // namespace nnc::cuda
