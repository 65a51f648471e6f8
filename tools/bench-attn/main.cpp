// bench-attn: SCALED_DOT_PRODUCT_ATTENTION's and CONVOLUTION_TRANSPOSE's
// CPU_OPT kernels against PyTorch 1.13 on the same shapes, both on NNC's
// thread count (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-attn [--quick]
//
// Attention: batch 8, 8 heads, sequence 512, head 64, fp32, causal and not.
// PyTorch 1.13 has no scaled_dot_product_attention: its side is the explicit
// softmax(q kᵀ · scale [+ causal mask]) v over [B, H, S, D] tensors (at::matmul,
// at::softmax), the backward through autograd. NNC runs [B, S, H, D] (its
// layout) with the saved lse.
// Transposed convolution: U-Net's decoder up-convolutions (2x2, stride 2;
// batch 1, the 572-pixel network's shapes) and a 3x3 / stride-2 / padding-1 /
// output_padding-1 one; NNC NHWC, PyTorch at::conv_transpose2d on
// channels_last (its fast layout for oneDNN) — forward, and the backward
// (dx, dw, dbias) through autograd. Times are medians in ms; ratio = NNC /
// PyTorch (below 1: faster).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

// ccv_nnc_cmd_exec with input and output lists (the TENSOR_LIST macro is C only).
static int exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, std::vector<ccv_nnc_tensor_t*> in,
                std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr);
}

#ifdef NNC_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

ccv_nnc_tensor_t* tensor(std::vector<int> dims, int datatype = CCV_32F) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
  size_t n = 1;
  for (int d : dims) n *= static_cast<size_t>(d);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < n; i++) t->data.f32[i] = u(rng);
  return t;
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

constexpr int B = 8, H = 8, S = 512, D = 64;

void nnc_attention(bool causal, double* fwd, double* bwd) {
  ccv_nnc_tensor_t *q = tensor({B, S, H, D}), *k = tensor({B, S, H, D}), *v = tensor({B, S, H, D});
  ccv_nnc_tensor_t *o = tensor({B, S, H, D}), *lse = tensor({B, H, S}), *g = tensor({B, S, H, D});
  ccv_nnc_tensor_t *dq = tensor({B, S, H, D}), *dk = tensor({B, S, H, D}), *dv = tensor({B, S, H, D});
  ccv_nnc_cmd_t f = CMD_SCALED_DOT_PRODUCT_ATTENTION_FORWARD(1.0f / std::sqrt(static_cast<float>(D)), causal);
  ccv_nnc_cmd_t b = CMD_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD(1.0f / std::sqrt(static_cast<float>(D)), causal);
  f.backend = b.backend = CCV_NNC_BACKEND_CPU_OPT;
  *fwd = nnc_bench::time_ms([&] { check(exec(f, ccv_nnc_no_hint, {q, k, v}, {o, lse}), "attention forward"); });
  ccv_nnc_tensor_t* bin[12] = {g, nullptr, nullptr, q, k, v, nullptr, nullptr, nullptr, o, lse, nullptr};
  ccv_nnc_tensor_t* bout[3] = {dq, dk, dv};
  *bwd = nnc_bench::time_ms([&] { check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 12, bout, 3, nullptr), "attention backward"); });
  for (ccv_nnc_tensor_t* t : {q, k, v, o, lse, g, dq, dk, dv}) ccv_nnc_tensor_free(t);
}

struct ConvT {
  int N, C, K, Hh, Ww, KH, S, P, OP;
  int OH() const { return (Hh - 1) * S + KH - 2 * P + OP; }
};

void nnc_convt(const ConvT& c, double* fwd, double* bwd) {
  ccv_nnc_tensor_t *x = tensor({c.N, c.Hh, c.Ww, c.C}), *w = tensor({c.C, c.KH, c.KH, c.K}), *bias = tensor({c.K});
  const int OH = c.OH(), OW = (c.Ww - 1) * c.S + c.KH - 2 * c.P + c.OP;
  ccv_nnc_tensor_t *y = tensor({c.N, OH, OW, c.K}), *g = tensor({c.N, OH, OW, c.K});
  ccv_nnc_tensor_t *dx = tensor({c.N, c.Hh, c.Ww, c.C}), *dw = tensor({c.C, c.KH, c.KH, c.K}), *db = tensor({c.K});
  ccv_nnc_cmd_t f = CMD_CONVOLUTION_TRANSPOSE_FORWARD(1, c.K, c.OP, c.KH, c.KH, c.C);
  ccv_nnc_cmd_t b = CMD_CONVOLUTION_TRANSPOSE_BACKWARD(1, c.K, c.OP, c.KH, c.KH, c.C);
  f.backend = b.backend = CCV_NNC_BACKEND_CPU_OPT;
  ccv_nnc_hint_t hint;
  std::memset(&hint, 0, sizeof(hint));
  hint.stride.dim[0] = hint.stride.dim[1] = c.S;
  hint.border.begin[0] = hint.border.begin[1] = hint.border.end[0] = hint.border.end[1] = c.P;
  *fwd = nnc_bench::time_ms([&] { check(exec(f, hint, {x, w, bias}, {y}), "convt forward"); });
  *bwd = nnc_bench::time_ms([&] { check(exec(b, hint, {g, x, w}, {dx, dw, db}), "convt backward"); });
  for (ccv_nnc_tensor_t* t : {x, w, bias, y, g, dx, dw, db}) ccv_nnc_tensor_free(t);
}

#ifdef NNC_HAVE_TORCH
void torch_attention(bool causal, double* fwd, double* bwd) {
  torch::manual_seed(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  at::Tensor q = (torch::rand({B, H, S, D}) * 2 - 1).set_requires_grad(true);
  at::Tensor k = (torch::rand({B, H, S, D}) * 2 - 1).set_requires_grad(true);
  at::Tensor v = (torch::rand({B, H, S, D}) * 2 - 1).set_requires_grad(true);
  at::Tensor g = torch::rand({B, H, S, D});
  at::Tensor mask = torch::full({S, S}, -INFINITY).triu(1);
  auto forward = [&]() {
    at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
    if (causal) s = s + mask;
    return at::matmul(at::softmax(s, -1), v);
  };
  {
    torch::NoGradGuard no_grad;
    *fwd = nnc_bench::time_ms([&] { forward(); });
  }
  *bwd = nnc_bench::time_ms([&] {
    at::Tensor o = forward();
    o.backward(g);
  });
  // The backward row above includes PyTorch's forward (autograd needs it);
  // report the backward alone.
  *bwd = std::max(*bwd - *fwd, 1e-6);
}

void torch_convt(const ConvT& c, double* fwd, double* bwd) {
  torch::manual_seed(1);
  const auto cl = at::MemoryFormat::ChannelsLast;
  at::Tensor x = (torch::rand({c.N, c.C, c.Hh, c.Ww}) * 2 - 1).contiguous(cl).set_requires_grad(true);
  at::Tensor w = (torch::rand({c.C, c.K, c.KH, c.KH}) * 2 - 1).contiguous(cl).set_requires_grad(true);
  at::Tensor b = (torch::rand({c.K}) * 2 - 1).set_requires_grad(true);
  const int OH = c.OH(), OW = (c.Ww - 1) * c.S + c.KH - 2 * c.P + c.OP;
  at::Tensor g = torch::rand({c.N, c.K, OH, OW}).contiguous(cl);
  auto forward = [&]() { return at::conv_transpose2d(x, w, b, {c.S, c.S}, {c.P, c.P}, {c.OP, c.OP}); };
  {
    torch::NoGradGuard no_grad;
    *fwd = nnc_bench::time_ms([&] { forward(); });
  }
  *bwd = nnc_bench::time_ms([&] { forward().backward(g); });
  *bwd = std::max(*bwd - *fwd, 1e-6);
}
#endif

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
  {
    nnc_bench::Table table("SCALED_DOT_PRODUCT_ATTENTION B8 H8 S512 D64 fp32 (PyTorch: explicit softmax(QK^T)V)", "PyTorch");
    for (bool causal : {false, true}) {
      double nf = 0, nb = 0, tf = -1, tb = -1;
      nnc_attention(causal, &nf, &nb);
#ifdef NNC_HAVE_TORCH
      torch_attention(causal, &tf, &tb);
#endif
      table.row(std::string("forward  ") + (causal ? "causal" : "full"), nf, tf);
      table.row(std::string("backward ") + (causal ? "causal" : "full"), nb, tb, "(PyTorch: autograd minus its forward)");
    }
  }
  {
    nnc_bench::Table table("CONVOLUTION_TRANSPOSE fp32, NNC NHWC / PyTorch channels_last", "PyTorch");
    const ConvT cases[] = {
        {1, 1024, 512, 28, 28, 2, 2, 0, 0}, {1, 512, 256, 52, 52, 2, 2, 0, 0}, {1, 256, 128, 100, 100, 2, 2, 0, 0},
        {1, 128, 64, 196, 196, 2, 2, 0, 0}, {4, 64, 32, 64, 64, 3, 2, 1, 1},
    };
    for (const ConvT& c : cases) {
      double nf = 0, nb = 0, tf = -1, tb = -1;
      nnc_convt(c, &nf, &nb);
#ifdef NNC_HAVE_TORCH
      torch_convt(c, &tf, &tb);
#endif
      char name[96];
      std::snprintf(name, sizeof(name), "%dx%d s%d N%d %d->%d %dx%d", c.KH, c.KH, c.S, c.N, c.C, c.K, c.Hh, c.Ww);
      table.row(std::string("forward  ") + name, nf, tf);
      table.row(std::string("backward ") + name, nb, tb);
    }
  }
  return 0;
}
