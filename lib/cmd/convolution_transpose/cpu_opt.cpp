// CONVOLUTION_TRANSPOSE on CPU_OPT (fp32, NHWC and NCHW, views, groups,
// dilation): two paths, both on the AVX-512 or AVX2 + FMA code chosen at run
// time, threaded on the library's pool under the compute lock.
//
// Windows that tile the output (KH = SH, KW = SW, no dilation, padding or
// output_padding, one group; NHWC x and y with adjacent channels and y's
// pixels adjacent — U-Net's 2x2 / stride-2 up-convolutions): every input
// pixel writes its own KH x KW block of outputs, so each (input row, kh)
// pair is one product x_row [W x C] · w[:, kh] [C x KW·K] written straight
// into output row h·SH + kh (its KW·K columns per pixel are adjacent), bias
// added while the row is in cache. The weights are packed once per kh
// (sgemm.hpp's packed panels) and the pairs split over the pool. Its
// backward regroups g's pixels as rows (n, h, w) of KH·KW·K columns, which
// makes dx = gcol · w_flatᵀ and dw = xᵀ · gcol two whole threaded sgemms.
//
// Everything else: the transposed convolution is the input gradient of a
// CONVOLUTION whose filters are our input channels (the weights' layout is
// exactly that convolution's), so the convolution family's CPU_OPT kernels
// run it — its backward for our forward, its forward for our dx and its
// backward again (roles of x and g exchanged) for dw — and the bias is added
// (or summed, for dbias) here. Their implicit GEMMs, Winograd and threading
// apply as they are. output_padding at or past the stride (possible with a
// larger dilation) runs CPU_REF's loops.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cmd/common/sgemm.hpp"
#include "cmd/convolution_transpose/convolution_transpose.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/registry.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::convt {

namespace {

// The convolution whose input gradient our forward is.
ccv_nnc_cmd_t as_convolution(const ccv_nnc_cmd_t& cmd, uint32_t id, const Geometry& g) {
  ccv_nnc_cmd_t c = cmd;
  c.cmd = id;
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  c.algorithm = 0;
  std::memset(&c.info, 0, sizeof(c.info));
  c.info.size.dim[0] = g.KH, c.info.size.dim[1] = g.KW, c.info.size.dim[2] = g.Kg;
  c.info.convolution.count = g.C;
  c.info.convolution.groups = g.G;
  c.info.convolution.dilation[0] = g.DH, c.info.convolution.dilation[1] = g.DW;
  return c;
}

ccv_nnc_cmd_exec_f convolution_kernel(uint32_t id) {
  const Kernel* k = registry().kernel(id, CCV_NNC_BACKEND_CPU_OPT);
  NNC_CHECK(k && k->exec, "CONVOLUTION_TRANSPOSE: the convolution's CPU_OPT kernel is missing");
  return k->exec;
}

int run_convolution(ccv_nnc_cmd_exec_f f, const ccv_nnc_cmd_t& c, const ccv_nnc_hint_t& hint,
                    std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                    ccv_nnc_stream_context_t* stream) {
  return f(c, hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), stream);
}

bool tiles_output(const Geometry& g) {
  return g.KH == g.SH && g.KW == g.SW && g.DH == 1 && g.DW == 1 && g.PT == 0 && g.PL == 0 && g.PB == 0 &&
         g.PR == 0 && g.OP == 0 && g.G == 1 && g.x.nhwc && g.y.nhwc && g.x.sc == 1 && g.y.sc == 1 &&
         g.y.sw == g.K && (cpu_features().avx512 || cpu_features().avx2);
}

void add_bias_rows(float* y, int rows, int K, const float* bias, int64_t bstride) {
  for (int r = 0; r < rows; r++) {
    float* row = y + static_cast<int64_t>(r) * K;
    for (int k = 0; k < K; k++) row[k] += bias[k * bstride];
  }
}

void forward_tiled(const Geometry& g, ccv_nnc_stream_context_t* stream) {
  const bool avx512 = cpu_features().avx512;
  const int ncols = g.KW * g.K;
  const int64_t pf = gemm::sgemm_packed_floats(g.C, ncols);
  const size_t wfloats = static_cast<size_t>(g.C) * g.KH * g.KW * g.K;
  const size_t floats = wfloats + static_cast<size_t>(pf) * g.KH + 16;
  float* scratch = static_cast<float*>(workspace(stream, floats * sizeof(float) + 64));
  float* wp = scratch;  // [C][KH][KW][K], packed
  float* packed = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch + wfloats) + 63) & ~uintptr_t{63});
  const float* w = reinterpret_cast<const float*>(g.w.data);
  for (int c = 0; c < g.C; c++)
    for (int kh = 0; kh < g.KH; kh++)
      for (int kw = 0; kw < g.KW; kw++)
        for (int k = 0; k < g.K; k++)
          wp[((static_cast<size_t>(c) * g.KH + kh) * g.KW + kw) * g.K + k] =
              w[c * g.w.sc + kh * g.w.skh + kw * g.w.skw + k * g.w.sk];
  for (int kh = 0; kh < g.KH; kh++) {
    gemm::Sgemm s;
    s.k = g.C, s.n = ncols;
    s.b = wp + static_cast<size_t>(kh) * ncols, s.brs = static_cast<int64_t>(g.KH) * ncols, s.bcs = 1;
    if (avx512)
      gemm::sgemm_pack_avx512(s, packed + kh * pf);
    else
      gemm::sgemm_pack_avx2(s, packed + kh * pf);
  }
  const float* x = reinterpret_cast<const float*>(g.x.data);
  float* y = reinterpret_cast<float*>(g.y.data);
  const float* bias = reinterpret_cast<const float*>(g.bias);
  const size_t tasks = static_cast<size_t>(g.N) * g.H * g.KH;
  auto body = [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; t++) {
      const int kh = static_cast<int>(t % g.KH);
      const int h = static_cast<int>(t / g.KH % g.H), n = static_cast<int>(t / g.KH / g.H);
      const float* a = x + n * g.x.sn + h * g.x.sh;
      float* c = y + n * g.y.sn + (h * g.SH + kh) * g.y.sh;
      if (avx512)
        gemm::sgemm_packed_avx512(g.W, ncols, g.C, a, g.x.sw, packed + kh * pf, c, ncols);
      else
        gemm::sgemm_packed_avx2(g.W, ncols, g.C, a, g.x.sw, packed + kh * pf, c, ncols);
      if (bias) add_bias_rows(c, g.W * g.KW, g.K, bias, g.bias_stride);
    }
  };
  const double work = static_cast<double>(tasks) * g.W * ncols * g.C;
  if (work < (1 << 18) || tasks == 1)
    body(0, tasks);
  else
    parallel_for(tasks, 1, [&](size_t b, size_t e) { body(b, e); });
}

void sgemm(const gemm::Sgemm& s) {
  if (cpu_features().avx512)
    gemm::sgemm_avx512(s);
  else
    gemm::sgemm_avx2(s);
}

// x's (or dx's) pixels one stride apart across rows and images, channels adjacent.
bool uniform_rows(const Image& im) {
  return im.nhwc && im.sc == 1 && im.sh == im.w * im.sw && (im.n == 1 || im.sn == im.h * im.sh);
}

// The backward of a tiling window as two whole products over gcol, g's
// pixels regrouped as rows (n, h, w) of KH·KW·K columns (kh, kw, k):
// dx = gcol · w_flatᵀ and dw = xᵀ · gcol, w_flat being the weights as
// [C, KH·KW·K] (NHWC order).
void backward_tiled(const Geometry& g, ccv_nnc_tensor_t* dx_t, ccv_nnc_tensor_t* dw_t,
                    ccv_nnc_stream_context_t* stream) {
  const int cols = g.KH * g.KW * g.K;
  const int64_t rows = static_cast<int64_t>(g.N) * g.H * g.W;
  const size_t gfloats = static_cast<size_t>(rows) * cols, wfloats = static_cast<size_t>(g.C) * cols;
  float* gcol = static_cast<float*>(workspace(stream, (gfloats + 2 * wfloats + 32) * sizeof(float)));
  float* wflat = gcol + gfloats + 16;    // the weights as [C, KH·KW·K]
  float* dwflat = wflat + wfloats;       // dw the same way
  const float* gy = reinterpret_cast<const float*>(g.y.data);
  const size_t nh = static_cast<size_t>(g.N) * g.H;
  auto regroup = [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; r++) {
      const int n = static_cast<int>(r / g.H), h = static_cast<int>(r % g.H);
      for (int kh = 0; kh < g.KH; kh++) {
        // Output row h·KH + kh holds, for each w, KW·K adjacent floats.
        const float* src = gy + n * g.y.sn + (h * g.SH + kh) * g.y.sh;
        for (int w = 0; w < g.W; w++)
          std::memcpy(gcol + (r * g.W + w) * cols + static_cast<size_t>(kh) * g.KW * g.K,
                      src + static_cast<int64_t>(w) * g.KW * g.K, sizeof(float) * g.KW * g.K);
      }
    }
  };
  if (gfloats < (1 << 16))
    regroup(0, nh);
  else
    parallel_for(nh, 1, [&](size_t b, size_t e) { regroup(b, e); });
  if (dx_t) {
    const float* w = reinterpret_cast<const float*>(g.w.data);
    for (int c = 0; c < g.C; c++)
      for (int kh = 0; kh < g.KH; kh++)
        for (int kw = 0; kw < g.KW; kw++)
          for (int k = 0; k < g.K; k++)
            wflat[static_cast<size_t>(c) * cols + (kh * g.KW + kw) * g.K + k] =
                w[c * g.w.sc + kh * g.w.skh + kw * g.w.skw + k * g.w.sk];
    const Image dx = image_of(dx_t);
    gemm::Sgemm s;
    s.m = static_cast<int>(rows), s.n = g.C, s.k = cols;
    s.a = gcol, s.ars = cols, s.acs = 1;
    s.b = wflat, s.brs = 1, s.bcs = cols;
    s.c = reinterpret_cast<float*>(dx.data), s.ldc = dx.sw;
    sgemm(s);
  }
  if (dw_t) {
    gemm::Sgemm s;
    s.m = g.C, s.n = cols, s.k = static_cast<int>(rows);
    s.a = reinterpret_cast<const float*>(g.x.data), s.ars = 1, s.acs = g.x.sw;
    s.b = gcol, s.brs = cols, s.bcs = 1;
    s.c = dwflat, s.ldc = cols;
    sgemm(s);
    const Weights d = weights_of(dw_t);
    float* out = reinterpret_cast<float*>(d.data);
    for (int c = 0; c < g.C; c++)
      for (int kh = 0; kh < g.KH; kh++)
        for (int kw = 0; kw < g.KW; kw++)
          for (int k = 0; k < g.K; k++)
            out[c * d.sc + kh * d.skh + kw * d.skw + k * d.sk] =
                dwflat[static_cast<size_t>(c) * cols + (kh * g.KW + kw) * g.K + k];
  }
}

void add_bias(const Geometry& g) {
  if (!g.bias) return;
  const float* bias = reinterpret_cast<const float*>(g.bias);
  float* y = reinterpret_cast<float*>(g.y.data);
  const size_t rows = static_cast<size_t>(g.N) * g.OH;
  auto body = [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; r++) {
      const int n = static_cast<int>(r / g.OH), oh = static_cast<int>(r % g.OH);
      float* row = y + n * g.y.sn + oh * g.y.sh;
      if (g.y.sc == 1) {
        for (int ow = 0; ow < g.OW; ow++)
          for (int k = 0; k < g.K; k++) row[ow * g.y.sw + k] += bias[k * g.bias_stride];
      } else {
        for (int k = 0; k < g.K; k++) {
          const float b = bias[k * g.bias_stride];
          float* p = row + k * g.y.sc;
          for (int ow = 0; ow < g.OW; ow++) p[ow * g.y.sw] += b;
        }
      }
    }
  };
  if (static_cast<double>(rows) * g.OW * g.K < (1 << 16))
    body(0, rows);
  else
    parallel_for(rows, 1, [&](size_t b, size_t e) { body(b, e); });
}

NNC_KERNEL(forward_opt) {
  ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  const Geometry g = geometry(cmd, hint, inputs[0], inputs[1], bias, outputs[0], "CONVOLUTION_TRANSPOSE_FORWARD");
  if (g.OP >= g.SH || g.OP >= g.SW)
    return forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  auto lock = compute_lock();
  if (tiles_output(g)) {
    forward_tiled(g, stream_context);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const ccv_nnc_cmd_t c = as_convolution(cmd, CCV_NNC_CONVOLUTION_BACKWARD, g);
  const int rc = run_convolution(convolution_kernel(CCV_NNC_CONVOLUTION_BACKWARD), c, effective_hint(hint),
                                 {inputs[0], outputs[0], inputs[1]}, {outputs[0]}, stream_context);
  if (rc != CCV_NNC_EXEC_SUCCESS) return rc;
  add_bias(g);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_opt) {
  const BackwardIo io = backward_io(inputs, input_size, outputs, output_size);
  if (!io.dx && !io.dw) {
    bias_gradient(io.g, io.dbias);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Geometry g = geometry(cmd, hint, io.x, io.w, nullptr, io.g, "CONVOLUTION_TRANSPOSE_BACKWARD");
  if (g.OP >= g.SH || g.OP >= g.SW)
    return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (io.dbias) bias_gradient(io.g, io.dbias);
  auto lock = compute_lock();
  if (tiles_output(g) && uniform_rows(g.x) && (!io.dx || uniform_rows(image_of(io.dx)))) {
    backward_tiled(g, io.dx, io.dw, stream_context);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const ccv_nnc_hint_t h = effective_hint(hint);
  if (io.dx) {
    const ccv_nnc_cmd_t c = as_convolution(cmd, CCV_NNC_CONVOLUTION_FORWARD, g);
    const int rc = run_convolution(convolution_kernel(CCV_NNC_CONVOLUTION_FORWARD), c, h, {io.g, io.w}, {io.dx},
                                   stream_context);
    if (rc != CCV_NNC_EXEC_SUCCESS) return rc;
  }
  if (io.dw) {
    // The convolution's weight gradient with its input g and its output gradient x.
    const ccv_nnc_cmd_t c = as_convolution(cmd, CCV_NNC_CONVOLUTION_BACKWARD, g);
    const int rc = run_convolution(convolution_kernel(CCV_NNC_CONVOLUTION_BACKWARD), c, h, {io.x, io.g, io.w},
                                   {nullptr, io.dw}, stream_context);
    if (rc != CCV_NNC_EXEC_SUCCESS) return rc;
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  r.add_kernels(cpu_opt(CCV_32F, formats::kImage).exclusive_use(),
                {{CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, forward_opt},
                 {CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, backward_opt}});
}

}  // namespace nnc::convt
