// Host side of the GPU_REF convolution, pooling and batch norm kernels: the
// kernels' arguments (cmd/common/gpu_cnn.hpp) from the families' own
// descriptions of a call (conv::Geometry, pool::Geometry, BatchNormIo), so
// that cuda/cnn_gpu.cpp and the CPU tests (test/unit/gpu_cnn) build them
// the same way. Pointers are the tensors' own (device memory on the GPU).
#pragma once

#include "cmd/common/gpu_cnn.hpp"
#include "cmd/common/image.hpp"
#include "cmd/convolution/convolution.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/pool/pool.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::gpu {

// CnnType of a float data type (32F for anything else).
int cnn_type(int datatype);

CnnImage cnn_image(const Image& im);
CnnWeights cnn_weights(const conv::Weights& w);
PoolGeom pool_geom(const pool::Geometry& g, bool max);
ConvGeom conv_geom(const conv::Geometry& g);

// The stride of a bias-like tensor's K elements: along its last extent of K
// (CPU_REF's rule; 1 when every extent is 1).
int64_t k_stride(const ccv_nnc_tensor_t* t, int K);

// BATCH_NORM's arguments: forward (io from batch_norm_forward_io) or
// backward (batch_norm_backward_io), the operands each reads or writes as
// CPU_REF does (inference: the running statistics, no outputs 1..4 written
// forward; training backward: the saved statistics). Throws nnc::Error when
// a tensor does not fit x (type, rank, per-channel count).
BnArgs bn_args(const ccv_nnc_cmd_t& cmd, const norm::BatchNormIo& io, bool forward, const char* what);

}  // namespace nnc::gpu
