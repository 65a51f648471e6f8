// bench-optim: the optimiser and random-number CPU_OPT kernels against
// PyTorch's CPU implementations on the same sizes, both on NNC's thread
// count (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-optim
//
// 1. SGD step with momentum 0.9 over 1M fp32 parameters: SGD_FORWARD in place
//    (|g|a|m| -> |a|m|) against torch::optim::SGD(lr, momentum 0.9).step() on
//    a 1M-element parameter whose .grad is set.
// 2. Adam step over 1M fp32 parameters: ADAM_FORWARD in place (|g|a|m|v| ->
//    |a|m|v|, step counting up) against torch::optim::Adam.step(). Also the
//    same with amsgrad, ADAMW against torch::optim::AdamW, for reference.
// 3. RANDOM_UNIFORM_FORWARD into 16M fp32 against at::Tensor::uniform_ on a
//    preallocated tensor (what at::rand does after allocating).
// 4. DROPOUT_FORWARD (p = 0.5, y and mask) over 16M fp32 against
//    at::native_dropout (which allocates y and its bool mask).
// Times are medians in milliseconds; ratio = NNC / PyTorch (below 1: faster).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>
#endif

namespace {

ccv_nnc_tensor_param_t param(int n, int datatype = CCV_32F) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  p.dim[0] = n;
  return p;
}

struct Tensor {
  ccv_nnc_tensor_t* t;
  explicit Tensor(int n, int datatype = CCV_32F) : t(ccv_nnc_tensor_new(nullptr, param(n, datatype), 0)) {}
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  void fill(std::mt19937& rng, float lo, float hi) const {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int i = 0; i < t->info.dim[0]; i++) t->data.f32[i] = d(rng);
  }
};

ccv_nnc_cmd_param_t zero_param() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

ccv_nnc_cmd_t opt_cmd(uint32_t id, const ccv_nnc_cmd_param_t& p) {
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  return c;
}

constexpr int kParams = 1 << 20;
constexpr int kRandom = 16 << 20;

double nnc_sgd() {
  std::mt19937 rng(1);
  Tensor g(kParams), a(kParams), m(kParams);
  g.fill(rng, -1, 1), a.fill(rng, -1, 1), m.fill(rng, 0, 0);
  ccv_nnc_cmd_param_t p = zero_param();
  p.sgd = {0, 1e-3f, 1, 0, 0.9f, 0};
  const ccv_nnc_cmd_t cmd = opt_cmd(CCV_NNC_SGD_FORWARD, p);
  ccv_nnc_tensor_t* in[] = {g.t, a.t, m.t};
  ccv_nnc_tensor_t* out[] = {a.t, m.t};
  return nnc_bench::time_ms([&] { check(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 3, out, 2, nullptr), "SGD"); });
}

double nnc_adam(uint32_t id, int amsgrad) {
  std::mt19937 rng(2);
  Tensor g(kParams), a(kParams), m(kParams), v(kParams), vm(kParams);
  g.fill(rng, -1, 1), a.fill(rng, -1, 1), m.fill(rng, 0, 0), v.fill(rng, 0, 0), vm.fill(rng, 0, 0);
  ccv_nnc_cmd_param_t p = zero_param();
  p.adam = {1, 1e-3f, 1, 0.9f, 0.999f, id == CCV_NNC_ADAMW_FORWARD ? 0.01f : 0.f, 1e-8f, amsgrad};
  ccv_nnc_tensor_t* in[] = {g.t, a.t, m.t, v.t, vm.t};
  ccv_nnc_tensor_t* out[] = {a.t, m.t, v.t, vm.t};
  const int ns = amsgrad ? 3 : 2;
  return nnc_bench::time_ms([&] {
    check(ccv_nnc_cmd_exec(opt_cmd(id, p), ccv_nnc_no_hint, 0, in, 2 + ns, out, 1 + ns, nullptr), "ADAM");
    p.adam.step++;
  });
}

double nnc_uniform() {
  Tensor y(kRandom);
  ccv_nnc_cmd_param_t p = zero_param();
  p.blas.a[0] = 0, p.blas.a[1] = 1;
  const ccv_nnc_cmd_t cmd = opt_cmd(CCV_NNC_RANDOM_UNIFORM_FORWARD, p);
  return nnc_bench::time_ms(
      [&] { check(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, nullptr, 0, &y.t, 1, nullptr), "RANDOM_UNIFORM"); });
}

double nnc_dropout() {
  std::mt19937 rng(3);
  Tensor x(kRandom), y(kRandom), mask(kRandom, CCV_8U);
  x.fill(rng, -1, 1);
  ccv_nnc_cmd_param_t p = zero_param();
  p.dropout.p = 0.5f;
  const ccv_nnc_cmd_t cmd = opt_cmd(CCV_NNC_DROPOUT_FORWARD, p);
  ccv_nnc_tensor_t* out[] = {y.t, mask.t};
  return nnc_bench::time_ms(
      [&] { check(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, &x.t, 1, out, 2, nullptr), "DROPOUT"); });
}

#ifdef NNC_HAVE_TORCH
double torch_sgd() {
  torch::NoGradGuard no_grad;
  torch::Tensor w = torch::rand({kParams}) * 2 - 1;
  w.set_requires_grad(true);
  w.mutable_grad() = torch::rand({kParams}) * 2 - 1;
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(1e-3).momentum(0.9));
  return nnc_bench::time_ms([&] { opt.step(); });
}

double torch_adam(bool amsgrad, bool decoupled) {
  torch::NoGradGuard no_grad;
  torch::Tensor w = torch::rand({kParams}) * 2 - 1;
  w.set_requires_grad(true);
  w.mutable_grad() = torch::rand({kParams}) * 2 - 1;
  if (decoupled) {
    torch::optim::AdamW opt({w}, torch::optim::AdamWOptions(1e-3).weight_decay(0.01).amsgrad(amsgrad));
    return nnc_bench::time_ms([&] { opt.step(); });
  }
  torch::optim::Adam opt({w}, torch::optim::AdamOptions(1e-3).amsgrad(amsgrad));
  return nnc_bench::time_ms([&] { opt.step(); });
}

double torch_uniform() {
  at::Tensor y = at::empty({kRandom});
  return nnc_bench::time_ms([&] { y.uniform_(0, 1); });
}

double torch_dropout() {
  at::Tensor x = at::rand({kRandom}) * 2 - 1;
  return nnc_bench::time_ms([&] {
    auto r = at::native_dropout(x, 0.5, true);
    (void)r;
  });
}
#else
double torch_sgd() { return -1; }
double torch_adam(bool, bool) { return -1; }
double torch_uniform() { return -1; }
double torch_dropout() { return -1; }
#endif

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
#ifndef NNC_HAVE_TORCH
  std::printf("PyTorch peer not built in (configure with -DNNC_BENCH_TORCH=ON and libtorch-dev): peer shows \"-\"\n");
#endif
  {
    nnc_bench::Table table("Optimiser steps over 1M fp32 parameters (in place)", "PyTorch");
    table.row("SGD momentum 0.9", nnc_sgd(), torch_sgd());
    table.row("Adam", nnc_adam(CCV_NNC_ADAM_FORWARD, 0), torch_adam(false, false));
    table.row("Adam amsgrad", nnc_adam(CCV_NNC_ADAM_FORWARD, 1), torch_adam(true, false));
    table.row("AdamW decay 0.01", nnc_adam(CCV_NNC_ADAMW_FORWARD, 0), torch_adam(false, true));
  }
  {
    nnc_bench::Table table("Random numbers, 16M fp32", "PyTorch");
    table.row("RANDOM_UNIFORM [0, 1) vs uniform_", nnc_uniform(), torch_uniform());
    table.row("DROPOUT p=0.5 (y, mask) vs native_dropout", nnc_dropout(), torch_dropout(), "(peer allocates)");
  }
  return 0;
}
