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
//               order than CPU_REF's), each result rounded once;
//   convolution products summed in float (32F, 16F, 16BF) or double (64F),
//               rounded once; dx a gather per input element, dw one thread
//               per weight, dbias one block per filter: no atomics.
#include "cmd/common/gpu_cnn.hpp"

#include "cmd/common/axes.hpp"
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

static_assert(gpu::kCnnF32 == kF32 && gpu::kCnnF16 == kF16 && gpu::kCnnBF16 == kBF16 && gpu::kCnnF64 == kF64,
              "gpu_cnn.hpp's type codes are GpuType's");

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "GPU_REF";
}

bool accept_gpu(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                int output_size) {
  return on_one_gpu(inputs, input_size, outputs, output_size, nullptr);
}

gpu::CnnImage cnn_image(const Image& im) {
  gpu::CnnImage a;
  a.p = im.data;
  a.type = gpu_type(im.datatype);
  a.n = im.n, a.h = im.h, a.w = im.w, a.c = im.c;
  a.sn = im.sn, a.sh = im.sh, a.sw = im.sw, a.sc = im.sc;
  return a;
}

gpu::CnnWeights cnn_weights(const conv::Weights& w) {
  gpu::CnnWeights a;
  a.p = w.data;
  a.type = gpu_type(w.datatype);
  a.k = w.k, a.kh = w.kh, a.kw = w.kw, a.c = w.c;
  a.sk = w.sk, a.skh = w.skh, a.skw = w.skw, a.sc = w.sc;
  return a;
}

// --- MAX_POOL / AVERAGE_POOL ------------------------------------------------

gpu::PoolGeom pool_geom(const pool::Geometry& g, bool max) {
  gpu::PoolGeom p;
  p.H = g.H, p.W = g.W, p.OH = g.OH, p.OW = g.OW;
  p.KH = g.KH, p.KW = g.KW, p.SH = g.SH, p.SW = g.SW, p.PT = g.PT, p.PL = g.PL;
  p.max = max;
  return p;
}

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
  c.check(launch_pool_backward(c.s, pool_geom(g, max), cnn_image(g.x), cnn_image(g.y), cnn_image(image_of(outputs[0]))));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- CONVOLUTION ----------------------------------------------------------

gpu::ConvGeom conv_geom(const conv::Geometry& g) {
  gpu::ConvGeom p;
  p.N = g.N, p.H = g.H, p.W = g.W, p.C = g.C, p.K = g.K, p.OH = g.OH, p.OW = g.OW;
  p.KH = g.KH, p.KW = g.KW, p.SH = g.SH, p.SW = g.SW, p.PT = g.PT, p.PL = g.PL, p.DH = g.DH, p.DW = g.DW;
  p.Cg = g.Cg, p.Kg = g.Kg;
  return p;
}

// K elements of a bias-like tensor: the stride along its (last) extent of K
// (CPU_REF's rule; 1 when every extent is 1).
int64_t k_stride(const ccv_nnc_tensor_t* t, int K, const char* what) {
  const Layout b = layout_of(t, what);
  int64_t stride = 1;
  for (int i = 0; i < b.nd; i++)
    if (b.dim[i] == K) stride = b.stride[i];
  return stride;
}

NNC_KERNEL(conv_forward) {
  const char* what = "CONVOLUTION_FORWARD";
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  const conv::Geometry g = conv::geometry(cmd, hint, inputs[0], inputs[1], bias, outputs[0], what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_conv_forward(c.s, conv_geom(g), cnn_image(g.x), cnn_weights(g.w), g.bias, g.bias_stride,
                              cnn_image(g.y)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(conv_backward) {
  const char* what = "CONVOLUTION_BACKWARD";
  const conv::BackwardIo io = conv::backward_io(inputs, input_size, outputs, output_size);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  const gpu::CnnImage gy = cnn_image(image_of(io.g));
  if (io.dx || io.dw) {
    const conv::Geometry g = conv::geometry(cmd, hint, io.x, io.w, nullptr, io.g, what);
    gpu::CnnImage dx;
    gpu::CnnWeights dw;
    if (io.dx) dx = cnn_image(image_of(io.dx));
    if (io.dw) dw = cnn_weights(conv::weights_of(io.dw));
    c.check(launch_conv_backward(c.s, conv_geom(g), gy, cnn_image(g.x), cnn_weights(g.w), dx, dw));
  }
  if (io.dbias) c.check(launch_conv_dbias(c.s, gy, io.dbias->data.u8, k_stride(io.dbias, gy.c, what)));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

// --- BATCH_NORM -----------------------------------------------------------

// x's axes split into kept (channel) and reduced ones; x-shaped operands'
// strides over each, per-channel operands as they are.
struct BnBuild {
  gpu::BnArgs a;
  Layout x;
  unsigned mask = 0;
  const char* what;

  BnBuild(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* xt, const char* w) : what(w) {
    x = layout_of(xt, what);
    mask = axis_mask(what, cmd.info.bnorm.axis, cmd.info.bnorm.count, x.nd);
    a.type = gpu_type(x.datatype);
    a.channels = 1, a.per_channel = 1;
    for (int i = 0; i < x.nd; i++) {
      if ((mask >> i) & 1u) {
        a.rdim[a.nr++] = x.dim[i];
        a.per_channel *= x.dim[i];
      } else {
        a.kdim[a.nk++] = x.dim[i];
        a.channels *= x.dim[i];
      }
    }
    a.epsilon = cmd.info.bnorm.epsilon;
    a.momentum = cmd.info.bnorm.momentum;
    a.is_test = cmd.info.bnorm.is_test;
  }
  void big(int op, const ccv_nnc_tensor_t* t) {
    if (!t) return;
    const Layout l = layout_of(t, what);
    NNC_CHECK(l.nd == x.nd && l.datatype == x.datatype, "%s: a tensor is %s %s but x is %s %s", what,
              datatype_name(l.datatype), shape_string(t->info.dim).c_str(), datatype_name(x.datatype),
              shape_string_n(x.dim.data(), x.nd).c_str());
    gpu::BnBig& b = a.big[op];
    b.p = l.data;
    for (int i = 0, k = 0, r = 0; i < x.nd; i++) {
      if ((mask >> i) & 1u)
        b.rs[r++] = l.stride[i];
      else
        b.ks[k++] = l.stride[i];
    }
  }
  void small(int op, const ccv_nnc_tensor_t* t) {
    if (!t) return;
    const Layout l = layout_of(t, what);
    NNC_CHECK(l.datatype == x.datatype && static_cast<int64_t>(l.count()) == a.channels,
              "%s: a per-channel tensor is %s %s but x is %s with %lld channels", what, datatype_name(l.datatype),
              shape_string(t->info.dim).c_str(), datatype_name(x.datatype), static_cast<long long>(a.channels));
    gpu::BnSmall& s = a.small[op];
    s.p = l.data;
    s.nd = l.nd;
    for (int i = 0; i < l.nd; i++) s.dim[i] = l.dim[i], s.stride[i] = l.stride[i];
  }
};

NNC_KERNEL(bn_forward) {
  const char* what = "BATCH_NORM_FORWARD";
  const norm::BatchNormIo io = norm::batch_norm_forward_io(inputs, input_size, outputs, output_size);
  BnBuild b(cmd, io.x, what);
  b.big(gpu::kBnX, io.x);
  b.big(gpu::kBnY, io.y);
  b.small(gpu::kBnScale, io.scale);
  b.small(gpu::kBnBias, io.bias);
  b.small(gpu::kBnMean, io.mean);
  b.small(gpu::kBnVar, io.var);
  if (!cmd.info.bnorm.is_test) {  // inference writes outputs 1..4 not at all (CPU_REF)
    b.small(gpu::kBnOutMean, io.out_mean);
    b.small(gpu::kBnOutVar, io.out_var);
    b.small(gpu::kBnSavedMean, io.saved_mean);
    b.small(gpu::kBnSavedInv, io.saved_inv_std);
  }
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_bn_forward(c.s, b.a));
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(bn_backward) {
  const char* what = "BATCH_NORM_BACKWARD";
  const norm::BatchNormIo io = norm::batch_norm_backward_io(inputs, input_size, outputs, output_size);
  BnBuild b(cmd, io.x, what);
  b.big(gpu::kBnX, io.x);
  b.big(gpu::kBnG, io.g);
  b.big(gpu::kBnDx, io.dx);
  b.small(gpu::kBnScale, io.scale);
  if (cmd.info.bnorm.is_test) {
    b.small(gpu::kBnMean, io.mean);
    b.small(gpu::kBnVar, io.var);
  } else {
    b.small(gpu::kBnSavedMean, io.saved_mean);
    b.small(gpu::kBnSavedInv, io.saved_inv_std);
  }
  b.small(gpu::kBnDscale, io.dscale);
  b.small(gpu::kBnDbias, io.dbias);
  b.small(gpu::kBnDmean, io.dmean);
  b.small(gpu::kBnDvar, io.dvar);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  c.check(launch_bn_backward(c.s, b.a));
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
