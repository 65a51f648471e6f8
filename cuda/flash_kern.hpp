// The fused (flash) GPU attention kernels' launch functions
// (flash_kernels.cu), called by attn_gpu.cpp. The geometry, eligibility and
// the online-softmax steps are lib/cmd/common/gpu_flash.hpp (tested on the
// CPU); the launches queue their work on the given stream and return the
// launch status.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_flash.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

struct FlashArgs {
  gpu::AttnShape s;  // s.lse: the layout lse is written (forward) or read (backward) at
  gpu::FlashGeom g;  // from gpu::flash_plan
  int type = kF32;   // q, k, v, mask: kF32, kF16 or kBF16 (GpuType)
  const void *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  void* lse = nullptr;  // forward: written when not NULL; backward: read
  int lse_type = kF32;
  // Forward: o (written when not NULL) at o_view, of type o_type.
  void* o = nullptr;
  gpu::AttnView o_view;
  int o_type = kF32;
  // Backward: dO (g) and the forward's O, each at its view and of its type;
  // delta: float [B, H, Sq] scratch (written by the first pass).
  const void* dO = nullptr;
  gpu::AttnView dO_view;
  int dO_type = kF32;
  const void* O = nullptr;
  gpu::AttnView O_view;
  int O_type = kF32;
  float* delta = nullptr;
  // Backward outputs (each when not NULL), of type out_type.
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  gpu::AttnView dq_view, dk_view, dv_view;
  int out_type = kF32;
  // The tensor-core forward's key splits (gpu::flash_mma_splits; 1: none)
  // and, when more than 1, their float scratch of
  // gpu::flash_mma_split_floats(s, splits).
  int splits = 1;
  float* part = nullptr;
  // The tensor-core forward's pairs a block (gpu::flash_mma_fwd_rows:
  // kFlashMmaRows, or kFlashMmaWideRows on the cp.async path).
  int rows = gpu::kFlashMmaRows;
  // 32-key steps at the 128 bucket in 64-row blocks (gpu::flash_mma_fwd_narrow).
  bool narrow = false;
};

// o and lse.
cudaError_t launch_flash_forward(cudaStream_t s, const FlashArgs& a);
// o and lse on the tensor cores (flash_mma_kernels.cu): a.type kF16 or kBF16,
// `bucket` from gpu::flash_mma_forward_plan (a.g is not used); with
// a.splits > 1 the keys are split over blocks (a.part their scratch) and a
// second kernel combines them.
cudaError_t launch_flash_mma_forward(cudaStream_t s, const FlashArgs& a, int bucket);
// delta, then dk and dv (when asked), then dq (when asked).
cudaError_t launch_flash_backward(cudaStream_t s, const FlashArgs& a);

}  // namespace nnc::cuda
