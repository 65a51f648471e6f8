// The launch functions of the GPU_REF convolution, pooling and batch norm
// kernels (cnn_kernels.cu), called by cnn_gpu.cpp. Each queues its work on
// the stream it is given and returns the launch status. The per-element
// formulas and index maps are cmd/common/gpu_cnn.hpp's (tested on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cmd/common/gpu_cnn.hpp"

namespace nnc::cuda {

// MAX_POOL / AVERAGE_POOL (g.max picks): y from x; dx from g (and x for max),
// a gather per dx element. am (max only; device scratch of one int32 per
// element of g) receives each window's maximum first.
cudaError_t launch_pool_forward(cudaStream_t s, const gpu::PoolGeom& g, const gpu::CnnImage& x, const gpu::CnnImage& y);
cudaError_t launch_pool_backward(cudaStream_t s, const gpu::PoolGeom& g, const gpu::CnnImage& x,
                                 const gpu::CnnImage& gy, const gpu::CnnImage& dx, int32_t* am);

// CONVOLUTION. bias: K elements at bias_stride (NULL: 0). Any of dx / dw /
// dbias may be absent (p NULL); dbias: K elements at dbias_stride, summed
// over g's n, h, w (one block per filter). dw in dw_parts parts
// (gpu::conv_dw_parts) when above 1: dw_scratch holds weights x dw_parts
// floats (doubles for 64F).
cudaError_t launch_conv_forward(cudaStream_t s, const gpu::ConvGeom& g, const gpu::CnnImage& x,
                                const gpu::CnnWeights& w, const void* bias, int64_t bias_stride,
                                const gpu::CnnImage& y);
cudaError_t launch_conv_backward(cudaStream_t s, const gpu::ConvGeom& g, const gpu::CnnImage& gy,
                                 const gpu::CnnImage& x, const gpu::CnnWeights& w, const gpu::CnnImage& dx,
                                 const gpu::CnnWeights& dw, int dw_parts, void* dw_scratch);
cudaError_t launch_conv_dbias(cudaStream_t s, const gpu::CnnImage& gy, void* dbias, int64_t dbias_stride);

// BATCH_NORM: one block per channel (statistics in double, then the
// element-wise pass).
cudaError_t launch_bn_forward(cudaStream_t s, const gpu::BnArgs& a);
cudaError_t launch_bn_backward(cudaStream_t s, const gpu::BnArgs& a);
// The sliced schedule (gpu::bn_slices): S blocks per channel, then one
// thread per element. Scratch (device memory): chan 4 doubles per channel,
// partial 4 S doubles per channel.
cudaError_t launch_bn_forward_sliced(cudaStream_t s, const gpu::BnArgs& a, int64_t S, double* chan, double* partial);
cudaError_t launch_bn_backward_sliced(cudaStream_t s, const gpu::BnArgs& a, int64_t S, double* chan, double* partial);

}  // namespace nnc::cuda
