// GPU_REF backends of CONVOLUTION, MAX_POOL / AVERAGE_POOL and BATCH_NORM,
// forward and backward: the fallback behind GPU_CUDNN (which the registry
// tries first, lib/core/registry.cpp backend_rank) for what cuDNN does not
// take: 16F / 16BF / 64F, asymmetric padding, views, shapes cudnn_plan
// declines. Every float type CPU_REF takes (32F, 64F, 16F, 16BF), NHWC and
// NCHW images (batch norm: any shape, any axes), views, with CPU_REF's
// contract: the families' geometry / io functions (lib/cmd/convolution,
// lib/cmd/pool, lib/cmd/norm) read the calls here exactly as CPU_REF does,
// and their validate functions have checked the tensors before these run.
// The values are cmd/common/gpu_cnn.hpp's (tested on the CPU against
// CPU_REF):
//   pooling     sums and maxima in double, CPU_REF's order and tie rule
//               (the first maximum, row-major; a NaN wins): CPU_REF's bits;
//   batch norm  statistics and gradient sums in double (block sums, another
//               order than CPU_REF's), each result rounded once; one block
//               per channel, or for long channels S blocks per channel and
//               then one thread per element in x's memory order;
//   convolution products summed in float (32F, 16F, 16BF) or double (64F),
//               rounded once; dx a gather per input element, dw one thread
//               per weight, dbias one block per filter: no atomics.
#include <cstdlib>

#include "cmd/common/gpu_cnn_args.hpp"
#include "cmd/common/image.hpp"
#include "cmd/convolution/convolution.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/pool/pool.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cnn_kern.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/kern.hpp"

namespace nnc::cuda {

namespace {

using gpu::cnn_image;
using gpu::cnn_weights;
using gpu::conv_geom;
using gpu::pool_geom;

static_assert(int{gpu::kCnnF32} == int{kF32} && int{gpu::kCnnF16} == int{kF16} && int{gpu::kCnnBF16} == int{kBF16} &&
                  int{gpu::kCnnF64} == int{kF64},
              "gpu_cnn.hpp's type codes are GpuType's");

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

bool accept_gpu(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  return on_one_gpu(inputs, input_size, outputs, output_size, nullptr);
}

// --- MAX_POOL / AVERAGE_POOL ------------------------------------------------

NNC_KERNEL(pool_forward) {
  const char* what = name_of(cmd.cmd);
  const pool::Geometry g = pool::geometry(cmd, hint, inputs[0], outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_pool_forward(c.s, pool_geom(g, cmd.cmd == CCV_NNC_MAX_POOL_FORWARD), cnn_image(g.x), cnn_image(g.y)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(pool_backward) {
  const char* what = name_of(cmd.cmd);
  const bool max = cmd.cmd == CCV_NNC_MAX_POOL_BACKWARD;
  // As CPU_REF: max over x (input 1) and g; average over dx's shape and g.
  const pool::Geometry g = max ? pool::geometry(cmd, hint, inputs[1], inputs[0], what)
                               : pool::geometry(cmd, hint, outputs[0], inputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // Max: each window's maximum first, into scratch (one int32 per element of g).
  const gpu::CnnImage gy = cnn_image(g.y);
  StreamBlock am(max ? static_cast<size_t>(gpu::cnn_count(gy)) * sizeof(int32_t) : 0, c.s, what);
  c.check(launch_pool_backward(c.s, pool_geom(g, max), cnn_image(g.x), gy, cnn_image(image_of(outputs[0])),
                               static_cast<int32_t*>(am.get())));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- CONVOLUTION ----------------------------------------------------------

NNC_KERNEL(conv_forward) {
  const char* what = "CONVOLUTION_FORWARD";
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  const conv::Geometry g = conv::geometry(cmd, hint, inputs[0], inputs[1], bias, outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(
      launch_conv_forward(c.s, conv_geom(g), cnn_image(g.x), cnn_weights(g.w), g.bias, g.bias_stride, cnn_image(g.y)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// NNC_GPU_CONV_DW_PARTS=n asks for n parts (tests cut small batches unevenly); 0: the default choice.
int conv_dw_parts_wanted() {
  const char* e = std::getenv("NNC_GPU_CONV_DW_PARTS");
  return e && *e ? std::atoi(e) : 0;
}

NNC_KERNEL(conv_backward) {
  const char* what = "CONVOLUTION_BACKWARD";
  const conv::BackwardIo io = conv::backward_io(inputs, input_size, outputs, output_size);
  const gpu::CnnImage gy = cnn_image(image_of(io.g));
  gpu::ConvGeom geom;
  gpu::CnnImage x, dx;
  gpu::CnnWeights w, dw;
  if (io.dx || io.dw) {  // else dbias alone: neither x nor w is read (CPU_REF)
    const conv::Geometry g = conv::geometry(cmd, hint, io.x, io.w, nullptr, io.g, what);
    geom = conv_geom(g), x = cnn_image(g.x), w = cnn_weights(g.w);
    if (io.dx) dx = cnn_image(image_of(io.dx));
    if (io.dw) dw = cnn_weights(conv::weights_of(io.dw));
  }
  const int64_t db_stride = io.dbias ? gpu::k_stride(io.dbias, gy.c) : 1;
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  if (io.dx || io.dw) {
    // dw in parts of the batch when it has few weights (gpu::conv_dw_parts).
    const int64_t weights = io.dw ? static_cast<int64_t>(dw.k) * dw.kh * dw.kw * dw.c : 0;
    const int parts = io.dw ? gpu::conv_dw_parts(weights, geom.N, conv_dw_parts_wanted()) : 1;
    const size_t bytes = parts > 1 ? static_cast<size_t>(weights) * static_cast<size_t>(parts) *
                                         (gy.type == gpu::kCnnF64 ? sizeof(double) : sizeof(float))
                                   : 0;
    StreamBlock scratch(bytes, c.s, what);
    c.check(launch_conv_backward(c.s, geom, gy, x, w, dx, dw, parts, scratch.get()));
  }
  if (io.dbias) c.check(launch_conv_dbias(c.s, gy, io.dbias->data.u8, db_stride));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- BATCH_NORM -----------------------------------------------------------

// Elements per slice below which a channel is not cut (gpu::bn_slices):
// 4096, or NNC_GPU_BN_MIN_SLICE from the environment (tests set it small to
// run the sliced schedule on small tensors).
int64_t bn_min_slice() {
  const char* e = std::getenv("NNC_GPU_BN_MIN_SLICE");
  if (!e || !*e) return 4096;
  const long long v = std::atoll(e);
  return v > 0 ? static_cast<int64_t>(v) : 4096;
}

// One block per channel, or (long channels) the sliced schedule with its scratch.
void bn_launch(const Call& c, const gpu::BnArgs& a, bool forward, const char* what) {
  const int64_t S = gpu::bn_slices(a.channels, a.per_channel, bn_min_slice());
  if (S == 1) {
    c.check(forward ? launch_bn_forward(c.s, a) : launch_bn_backward(c.s, a));
    return;
  }
  const size_t chan_bytes = static_cast<size_t>(a.channels) * 4 * sizeof(double);
  StreamBlock scratch(chan_bytes * static_cast<size_t>(S + 1), c.s, what);
  double* chan = static_cast<double*>(scratch.get());
  double* partial = chan + a.channels * 4;
  c.check(forward ? launch_bn_forward_sliced(c.s, a, S, chan, partial)
                  : launch_bn_backward_sliced(c.s, a, S, chan, partial));
}

NNC_KERNEL(bn_forward) {
  const char* what = "BATCH_NORM_FORWARD";
  const gpu::BnArgs a =
      gpu::bn_args(cmd, norm::batch_norm_forward_io(inputs, input_size, outputs, output_size), true, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  bn_launch(c, a, true, what);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(bn_backward) {
  const char* what = "BATCH_NORM_BACKWARD";
  const gpu::BnArgs a =
      gpu::bn_args(cmd, norm::batch_norm_backward_io(inputs, input_size, outputs, output_size), false, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  bn_launch(c, a, false, what);
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

// Every backend of this file: the one call register_cuda makes.
void register_cnn_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = types::kFloat;
  t.formats = formats::kImage;
  r.add_kernels(t.accepting(accept_gpu), {{CCV_NNC_MAX_POOL_FORWARD, pool_forward},
                                          {CCV_NNC_MAX_POOL_BACKWARD, pool_backward},
                                          {CCV_NNC_AVERAGE_POOL_FORWARD, pool_forward},
                                          {CCV_NNC_AVERAGE_POOL_BACKWARD, pool_backward},
                                          {CCV_NNC_CONVOLUTION_FORWARD, conv_forward},
                                          {CCV_NNC_CONVOLUTION_BACKWARD, conv_backward}});
  KernelTraits any = t;
  any.formats = formats::kAll;
  r.add_kernels(any.accepting(accept_gpu),
                {{CCV_NNC_BATCH_NORM_FORWARD, bn_forward}, {CCV_NNC_BATCH_NORM_BACKWARD, bn_backward}});
}

}  // namespace nnc::cuda
