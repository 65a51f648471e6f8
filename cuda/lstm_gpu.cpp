// GPU_CUBLAS LSTM forward and backward (fp32, packed tensors; also registered
// as GPU_CUDNN, see register_lstm_gpu): the schedule of
// cmd/common/gpu_lstm.hpp (tested on the CPU against CPU_REF) run with
// cublasSgemm for the products and the fused kernels of lstm_kernels.cu for
// the rest. The contract is lib/cmd/rnn/lstm.cpp's (PyTorch's packed weight
// order, the reserve layout of cmd/rnn/lstm.hpp, so either backend's backward
// reads either's forward); its validate function has checked the shapes.
// This backend refuses 64F, views, and tensors off one GPU. The reserve is
// computed in float (CPU_REF: double, rounded once into r). Dropout draws its
// key from the stream's generator as CPU_REF does (one 32-bit draw per
// forward), so a run with the same seed drops the same elements.
//
// A sequence length outside 0 .. T (xs) is found on the device: the steps run
// with it clamped and a synchronous call then fails with CCV_NNC_EXEC_INVALID
// (CPU_REF fails before writing anything); on a GPU stream it is not reported.
#include <climits>
#include <memory>
#include <utility>
#include <vector>

#include "cmd/common/gpu_lstm.hpp"
#include "cmd/rnn/lstm.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/lstm_kern.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

struct GpuOps {
  const Call& c;
  cublasHandle_t h;
  std::vector<std::unique_ptr<StreamBlock>> blocks;

  cublasMath_t saved = CUBLAS_DEFAULT_MATH;

  // fp32 products in fp32: the handle's math mode (shared with other
  // backends, which may allow TF32) set to the default for this call and put
  // back after it.
  GpuOps(const Call& call, cublasHandle_t handle) : c(call), h(handle) {
    NNC_CUDA_CHECK(cublasGetMathMode(h, &saved), c.what);
    if (saved != CUBLAS_DEFAULT_MATH) NNC_CUDA_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), c.what);
  }
  ~GpuOps() {
    if (saved != CUBLAS_DEFAULT_MATH) cublasSetMathMode(h, saved);
  }
  GpuOps(const GpuOps&) = delete;
  GpuOps& operator=(const GpuOps&) = delete;
  float* scratch(size_t n) {
    blocks.push_back(std::make_unique<StreamBlock>((n ? n : 1) * sizeof(float), c.s, c.what));
    return static_cast<float*>(blocks.back()->get());
  }
  void gemm(const gpu_lstm::Gemm& g) {
    if (g.M == 0 || g.N == 0) return;
    const gpu_lstm::ColumnMajor m = gpu_lstm::column_major(g);
    NNC_CUDA_CHECK(cublasSgemm(h, m.t1 ? CUBLAS_OP_T : CUBLAS_OP_N, m.t2 ? CUBLAS_OP_T : CUBLAS_OP_N, m.m, m.n, m.k,
                               &m.alpha, m.A1, m.ld1, m.A2, m.ld2, &m.beta, m.C, m.ldc),
                   c.what);
  }
  void fill(float* p, size_t n) {
    if (n) NNC_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), c.s), c.what);
  }
  int* bad = nullptr;  // the lengths' flag
  void lengths(const int* xs, int B, int T, int* len) { c.check(launch_lstm_lengths(c.s, xs, B, T, len, bad)); }
  void seq_to_tm(float* dst, const float* src, int T, int B, int F, bool bf) {
    c.check(launch_lstm_seq(c.s, dst, src, T, B, F, bf, true));
  }
  void tm_to_seq(float* dst, const float* src, int T, int B, int F, bool bf) {
    c.check(launch_lstm_seq(c.s, dst, src, T, B, F, bf, false));
  }
  void state_in(float* dst, const float* state, int k, int B, int W) {
    const size_t n = static_cast<size_t>(B) * W;
    if (!n) return;
    if (state)
      NNC_CUDA_CHECK(cudaMemcpyAsync(dst, state + k * n, n * sizeof(float), cudaMemcpyDeviceToDevice, c.s), c.what);
    else
      fill(dst, n);
  }
  void state_out(float* state, int k, const float* src, int B, int W) {
    const size_t n = static_cast<size_t>(B) * W;
    if (n)
      NNC_CUDA_CHECK(cudaMemcpyAsync(state + k * n, src, n * sizeof(float), cudaMemcpyDeviceToDevice, c.s), c.what);
  }
  void add_bias(float* g, size_t rows, int H4, const float* bi, const float* bh) {
    c.check(launch_lstm_add_bias(c.s, g, rows, H4, bi, bh));
  }
  void cell_forward(const gpu_lstm::CellForward& a) {
    c.check(launch_lstm_cell_forward(c.s, a.g_t, a.gh, a.c_prev, a.c_out, a.h_prev, a.h_out, a.m_out, a.B, a.H, a.t,
                                     a.len));
  }
  void carry_rows(float* dst, const float* src, int B, int W, const int* len, int t) {
    c.check(launch_lstm_rows(c.s, dst, src, B, W, len, t, false));
  }
  void write_y(const gpu_lstm::WriteY& w) {
    c.check(launch_lstm_write_y(c.s, w.out, w.O, w.off, w.S, w.T, w.B, w.P, w.d, w.len));
  }
  void dropout(const float* out, float* next, float* factors, size_t n, uint64_t key, double p, float scale,
               bool drop) {
    c.check(launch_lstm_dropout(c.s, out, next, factors, n, key, p, scale, drop));
  }
  void dh_add(float* dh, float* dh_t, const float* dout_t, int ldo, int B, int P, const int* len, int t) {
    c.check(launch_lstm_dh_add(c.s, dh, dh_t, dout_t, ldo, B, P, len, t));
  }
  void cell_backward(const gpu_lstm::CellBackward& a) {
    c.check(launch_lstm_cell_backward(c.s, a.g_t, a.c_prev, a.c_now, a.dm, a.dc, a.dpre_t, a.B, a.H, a.t, a.len));
  }
  void select_rows(float* dh, const float* dh2, int B, int W, const int* len, int t) {
    c.check(launch_lstm_rows(c.s, dh, dh2, B, W, len, t, true));
  }
  void bias_grad(float* bi, float* bh, const float* dpre, size_t rows, int H4) {
    c.check(launch_lstm_bias_grad(c.s, bi, bh, dpre, rows, H4));
  }
  void scale_by(float* dst, const float* src, const float* factors, size_t n) {
    c.check(launch_lstm_scale(c.s, dst, src, factors, n));
  }
};

const char* name_of(uint32_t cmd) {
  const char* n = ccv_nnc_cmd_name(cmd);
  return n ? n : "LSTM";
}

// Present tensors: plain (no view), 32F (xs 32S).
bool plain(const ccv_nnc_tensor_t* t, int type) {
  return !t || (!CCV_IS_TENSOR_VIEW(t) && CCV_GET_DATA_TYPE(t->info.datatype) == type);
}

bool accept_lstm(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  const bool fwd = cmd.cmd == CCV_NNC_LSTM_FORWARD;
  const int xs_slot = fwd ? 1 : 5;
  for (int i = 0; i < input_size; i++)
    if (!plain(inputs[i], i == xs_slot ? CCV_32S : CCV_32F)) return false;
  for (int i = 0; i < output_size; i++)
    if (!plain(outputs[i], !fwd && i == 1 ? CCV_32S : CCV_32F)) return false;
  return true;
}

float* f32(ccv_nnc_tensor_t* t) { return t ? t->data.f32 : nullptr; }
const int* i32(ccv_nnc_tensor_t* t) { return t ? t->data.i32 : nullptr; }

void check_lengths(const Call& c, DeviceFlag& bad, int T) {
  const int flag = bad.done();
  NNC_CHECK(flag == 0, "%s: xs[%d] is not a sequence length in 0..%d", c.what, INT_MAX - flag, T);
}

NNC_KERNEL(lstm_forward) {
  const char* what = name_of(cmd.cmd);
  ccv_nnc_tensor_t* const x = inputs[0];
  const lstm::Dims n = lstm::dims_of(cmd.info, x->info.dim);
  auto out = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  // The key is drawn only when dropping (as CPU_REF), before any work.
  const uint64_t key = n.drop ? lstm::dropout_key(stream_genrand(stream_context)) : 0;
  const float scale = n.drop ? static_cast<float>(1 / (1 - n.p)) : 1.f;
  GpuOps ops(c, cublas_handle(stream_context, device_of(inputs, input_size, outputs, output_size), c.s, what));
  DeviceFlag bad(c, true);
  ops.bad = bad.device();
  gpu_lstm::Forward a;
  a.x = f32(x), a.xs = i32(inputs[1]), a.hx = f32(inputs[2]), a.cx = f32(inputs[3]), a.w = f32(inputs[4]);
  a.y = f32(outputs[0]), a.hy = f32(out(1)), a.cy = f32(out(2)), a.r = f32(out(3));
  gpu_lstm::forward(ops, n, a, key, scale);
  check_lengths(c, bad, n.T);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(lstm_backward) {
  const char* what = name_of(cmd.cmd);
  auto out = [&](int i) { return i < output_size ? outputs[i] : nullptr; };
  ccv_nnc_tensor_t* const x = inputs[4] ? inputs[4] : outputs[0];
  const lstm::Dims n = lstm::dims_of(cmd.info, x->info.dim);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  GpuOps ops(c, cublas_handle(stream_context, device_of(inputs, input_size, outputs, output_size), c.s, what));
  DeviceFlag bad(c, true);
  ops.bad = bad.device();
  gpu_lstm::Backward b;
  b.dy = f32(inputs[0]), b.dhy = f32(inputs[1]), b.dcy = f32(inputs[2]), b.x = f32(inputs[4]);
  b.xs = i32(inputs[5]), b.w = f32(inputs[8]), b.r = f32(inputs[12]);
  b.dx = f32(out(0)), b.dhx = f32(out(2)), b.dcx = f32(out(3)), b.dw = f32(out(4));
  gpu_lstm::backward(ops, n, b);
  if (ccv_nnc_tensor_t* dxs = out(1))
    NNC_CUDA_CHECK(cudaMemsetAsync(dxs->data.u8, 0, ccv_nnc_tensor_count(dxs->info) * sizeof(int), c.s), what);
  check_lengths(c, bad, n.T);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

// Registered twice: as GPU_CUBLAS (what it is: our kernels and cuBLAS
// products) and, for compatibility, as GPU_CUDNN, the only GPU backend libnnc
// has for LSTM: a libnnc program that sets cmd.backend to GPU_CUDNN, or asks
// ccv_nnc_cmd_find_backend / ccv_nnc_cmd_aux for it, gets this same
// implementation (not cuDNN's RNN API: the reserve is cmd/rnn/lstm.hpp's
// layout, shared with CPU_REF, so the aux is CPU_REF's reserve_size too).
// Both entries run the same code, so automatic choice (GPU_CUDNN ranks first)
// loses nothing, and autotune times two equal candidates.
void register_lstm_gpu(Registry& r) {
  for (const uint32_t backend : {CCV_NNC_BACKEND_GPU_CUBLAS, CCV_NNC_BACKEND_GPU_CUDNN}) {
    const std::pair<uint32_t, ccv_nnc_cmd_exec_f> execs[] = {{CCV_NNC_LSTM_FORWARD, lstm_forward},
                                                             {CCV_NNC_LSTM_BACKWARD, lstm_backward}};
    for (const auto& [cmd, exec] : execs) {
      Kernel k;
      k.cmd = cmd;
      k.backend = backend;
      k.tensor_formats = formats::kAll;
      k.tensor_datatypes = CCV_32F | CCV_32S;
      k.tensor_memory = CCV_TENSOR_GPU_MEMORY;
      k.exec = exec;
      k.accept = accept_lstm;
      k.aux = reinterpret_cast<void*>(&lstm::reserve_size);  // libnnc's ccv_nnc_cmd_aux: the reserve's size
      r.add_kernel(k);
    }
  }
}

}  // namespace nnc::cuda
