// bench-norm: the normalisation and reduction CPU_OPT kernels against PyTorch
// 1.13's CPU kernels on the same shapes and data, both on NNC's thread count
// (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-norm
//
// 1. Batch norm in training on 32 x 64 x 56 x 56 fp32 (the first stage of a
//    ResNet at batch 32): BATCH_NORM_FORWARD (y, running mean / var updated in
//    place, saved mean / inv_std) then BATCH_NORM_BACKWARD (dx, dscale, dbias).
//    NNC runs it twice: NCHW (statistics over axes 0, 2, 3) and NHWC
//    (32 x 56 x 56 x 64, axes 0, 1, 2). PyTorch: at::native_batch_norm then
//    at::native_batch_norm_backward (train = true, all three gradients) on the
//    contiguous NCHW tensor, and again on a channels_last one for the NHWC row.
//    (libtorch 1.13 has no CPU kernel for native_batch_norm.out: its functional
//    form allocates y, the saved statistics and the gradients on each call.)
// 2. Layer norm over the last axis of 64 x 256 x 768 fp32 with scale and bias:
//    LAYER_NORM_FORWARD + _BACKWARD against at::native_layer_norm +
//    at::native_layer_norm_backward.
// 3. REDUCE_SUM over the batch of a 64 x 3136 fp32 tensor (axis 0, output
//    1 x 3136) against at::sum_out(out, x, {0}, keepdim = true).
// 4. Group norm, 32 groups, on 16 x 128 x 64 x 64 fp32 with scale and bias:
//    GROUP_NORM_FORWARD (y, saved mean / inv_std) + _BACKWARD (dx, dscale,
//    dbias), NCHW (group axis 1, reduce axes 2, 3) and NHWC (16 x 64 x 64 x
//    128, group axis 3, reduce axes 1, 2), against at::native_group_norm +
//    at::native_group_norm_backward on contiguous and channels_last tensors.
// Times are medians in milliseconds; ratio = NNC / PyTorch (below 1: faster).
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

ccv_nnc_tensor_param_t param(std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

struct Tensor {
  ccv_nnc_tensor_t* t;
  explicit Tensor(std::vector<int> dims, int format = CCV_TENSOR_FORMAT_NHWC)
      : t(ccv_nnc_tensor_new(nullptr, param(dims, format), 0)) {}
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  float* data() const { return t->data.f32; }
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
    return n;
  }
  void fill(std::mt19937& rng, float lo, float hi) const {
    std::uniform_real_distribution<float> d(lo, hi);
    for (size_t i = 0; i < count(); i++) data()[i] = d(rng);
  }
};

ccv_nnc_cmd_t cmd_with(uint32_t id, const ccv_nnc_cmd_param_t& p) {
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_OPT;
  return c;
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

// Batch norm forward + backward in training; returns NNC's ms (and fills
// fwd / bwd with the parts).
double nnc_batch_norm(bool nhwc, double* fwd, double* bwd) {
  const int N = 32, C = 64, H = 56, W = 56;
  std::mt19937 rng(1);
  const int fmt = nhwc ? CCV_TENSOR_FORMAT_NHWC : CCV_TENSOR_FORMAT_NCHW;
  const std::vector<int> dims = nhwc ? std::vector<int>{N, H, W, C} : std::vector<int>{N, C, H, W};
  Tensor x(dims, fmt), y(dims, fmt), g(dims, fmt), dx(dims, fmt);
  Tensor scale({C}), bias({C}), rm({C}), rv({C}), sm({C}), si({C}), ds({C}), db({C});
  x.fill(rng, -1, 3), g.fill(rng, -1, 1), scale.fill(rng, 0.5, 1.5), bias.fill(rng, -1, 1), rm.fill(rng, 0, 0);
  rv.fill(rng, 1, 1);
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.bnorm.count = 3;
  p.bnorm.axis[0] = 0;
  p.bnorm.axis[1] = nhwc ? 1 : 2;
  p.bnorm.axis[2] = nhwc ? 2 : 3;
  p.bnorm.epsilon = 1e-5f;
  p.bnorm.momentum = 0.9f;
  const ccv_nnc_cmd_t f = cmd_with(CCV_NNC_BATCH_NORM_FORWARD, p), b = cmd_with(CCV_NNC_BATCH_NORM_BACKWARD, p);
  ccv_nnc_tensor_t* fin[] = {x.t, scale.t, bias.t, rm.t, rv.t};
  ccv_nnc_tensor_t* fout[] = {y.t, rm.t, rv.t, sm.t, si.t};
  ccv_nnc_tensor_t* bin[] = {g.t,  nullptr, nullptr, nullptr, nullptr, x.t,  scale.t, bias.t,
                             rm.t, rv.t,    y.t,     rm.t,    rv.t,    sm.t, si.t};
  ccv_nnc_tensor_t* bout[] = {dx.t, ds.t, db.t};
  auto forward = [&] {
    check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 5, fout, 5, nullptr), "BATCH_NORM_FORWARD");
  };
  auto backward = [&] {
    check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 15, bout, 3, nullptr), "BATCH_NORM_BACKWARD");
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

double nnc_layer_norm(double* fwd, double* bwd) {
  const int B = 64, S = 256, D = 768;
  std::mt19937 rng(2);
  Tensor x({B, S, D}), y({B, S, D}), g({B, S, D}), dx({B, S, D});
  Tensor scale({1, 1, D}), bias({1, 1, D}), ds({1, 1, D}), db({1, 1, D}), sm({B, S, 1}), si({B, S, 1});
  x.fill(rng, -1, 3), g.fill(rng, -1, 1), scale.fill(rng, 0.5, 1.5), bias.fill(rng, -1, 1);
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.lnorm.count = 1;
  p.lnorm.axis[0] = 2;
  p.lnorm.epsilon = 1e-5f;
  p.lnorm.elementwise_affine = 1;
  const ccv_nnc_cmd_t f = cmd_with(CCV_NNC_LAYER_NORM_FORWARD, p), b = cmd_with(CCV_NNC_LAYER_NORM_BACKWARD, p);
  ccv_nnc_tensor_t* fin[] = {x.t, scale.t, bias.t};
  ccv_nnc_tensor_t* fout[] = {y.t, sm.t, si.t};
  ccv_nnc_tensor_t* bin[] = {g.t, nullptr, nullptr, x.t, scale.t, bias.t, y.t, sm.t, si.t};
  ccv_nnc_tensor_t* bout[] = {dx.t, ds.t, db.t};
  auto forward = [&] {
    check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 3, fout, 3, nullptr), "LAYER_NORM_FORWARD");
  };
  auto backward = [&] {
    check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 9, bout, 3, nullptr), "LAYER_NORM_BACKWARD");
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

double nnc_reduce_sum() {
  std::mt19937 rng(3);
  Tensor x({64, 3136}), y({1, 3136});
  x.fill(rng, -1, 1);
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.reduce.count = 1;
  p.reduce.axis[0] = 0;
  const ccv_nnc_cmd_t c = cmd_with(CCV_NNC_REDUCE_SUM_FORWARD, p);
  ccv_nnc_tensor_t* in[] = {x.t};
  ccv_nnc_tensor_t* out[] = {y.t};
  return nnc_bench::time_ms(
      [&] { check(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr), "REDUCE_SUM"); }, 5, 300, 50, 20000);
}

double nnc_group_norm(bool nhwc, double* fwd, double* bwd) {
  const int N = 16, C = 128, H = 64, W = 64, G = 32;
  std::mt19937 rng(4);
  const int fmt = nhwc ? CCV_TENSOR_FORMAT_NHWC : CCV_TENSOR_FORMAT_NCHW;
  const std::vector<int> dims = nhwc ? std::vector<int>{N, H, W, C} : std::vector<int>{N, C, H, W};
  const std::vector<int> stats = nhwc ? std::vector<int>{N, 1, 1, G} : std::vector<int>{N, G, 1, 1};
  Tensor x(dims, fmt), y(dims, fmt), g(dims, fmt), dx(dims, fmt), sm(stats, fmt), si(stats, fmt);
  Tensor scale({C}), bias({C}), ds({C}), db({C});
  x.fill(rng, -1, 3), g.fill(rng, -1, 1), scale.fill(rng, 0.5, 1.5), bias.fill(rng, -1, 1);
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.gnorm.group_axis = nhwc ? 3 : 1;
  p.gnorm.groups = G;
  p.gnorm.reduce_count = 2;
  p.gnorm.reduce_axis[0] = nhwc ? 1 : 2;
  p.gnorm.reduce_axis[1] = nhwc ? 2 : 3;
  p.gnorm.epsilon = 1e-5f;
  p.gnorm.elementwise_affine = 1;
  const ccv_nnc_cmd_t f = cmd_with(CCV_NNC_GROUP_NORM_FORWARD, p), b = cmd_with(CCV_NNC_GROUP_NORM_BACKWARD, p);
  ccv_nnc_tensor_t* fin[] = {x.t, scale.t, bias.t};
  ccv_nnc_tensor_t* fout[] = {y.t, sm.t, si.t};
  ccv_nnc_tensor_t* bin[] = {g.t, nullptr, nullptr, x.t, scale.t, bias.t, y.t, sm.t, si.t};
  ccv_nnc_tensor_t* bout[] = {dx.t, ds.t, db.t};
  auto forward = [&] {
    check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, fin, 3, fout, 3, nullptr), "GROUP_NORM_FORWARD");
  };
  auto backward = [&] {
    check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, bin, 9, bout, 3, nullptr), "GROUP_NORM_BACKWARD");
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

#ifdef NNC_HAVE_TORCH
double torch_group_norm(bool channels_last, double* fwd, double* bwd) {
  const int64_t N = 16, C = 128, HW = 64 * 64, G = 32;
  at::manual_seed(4);
  const auto fmt = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor x = (at::rand({N, C, 64, 64}) * 4 - 1).contiguous(fmt);
  at::Tensor g = (at::rand({N, C, 64, 64}) * 2 - 1).contiguous(fmt);
  at::Tensor w = at::rand({C}) + 0.5, b = at::rand({C});
  std::tuple<at::Tensor, at::Tensor, at::Tensor> r = at::native_group_norm(x, w, b, N, C, HW, G, 1e-5);
  auto forward = [&] { r = at::native_group_norm(x, w, b, N, C, HW, G, 1e-5); };
  auto backward = [&] {
    at::native_group_norm_backward(g, x, std::get<1>(r), std::get<2>(r), w, N, C, HW, G, {true, true, true});
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

double torch_batch_norm(bool channels_last, double* fwd, double* bwd) {
  at::manual_seed(1);
  const auto fmt = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor x = (at::rand({32, 64, 56, 56}) * 4 - 1).contiguous(fmt);
  at::Tensor g = (at::rand({32, 64, 56, 56}) * 2 - 1).contiguous(fmt);
  at::Tensor w = at::rand({64}) + 0.5, b = at::rand({64}), rm = at::zeros({64}), rv = at::ones({64});
  std::tuple<at::Tensor, at::Tensor, at::Tensor> r = at::native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
  auto forward = [&] { r = at::native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5); };
  auto backward = [&] {
    at::native_batch_norm_backward(g, x, w, rm, rv, std::get<1>(r), std::get<2>(r), true, 1e-5, {true, true, true});
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

double torch_layer_norm(double* fwd, double* bwd) {
  at::manual_seed(2);
  at::Tensor x = at::rand({64, 256, 768}) * 4 - 1, g = at::rand({64, 256, 768}) * 2 - 1;
  at::Tensor w = at::rand({768}) + 0.5, b = at::rand({768});
  std::tuple<at::Tensor, at::Tensor, at::Tensor> r = at::native_layer_norm(x, {768}, w, b, 1e-5);
  auto forward = [&] { r = at::native_layer_norm(x, {768}, w, b, 1e-5); };
  auto backward = [&] {
    at::native_layer_norm_backward(g, x, {768}, std::get<1>(r), std::get<2>(r), w, b, {true, true, true});
  };
  *fwd = nnc_bench::time_ms(forward);
  *bwd = nnc_bench::time_ms(backward);
  return nnc_bench::time_ms([&] {
    forward();
    backward();
  });
}

double torch_reduce_sum() {
  at::Tensor x = at::rand({64, 3136}), y = at::empty({1, 3136});
  return nnc_bench::time_ms([&] { at::sum_out(y, x, {0}, true); }, 5, 300, 50, 20000);
}
#endif

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
  double nf = 0, nb = 0, tf = -1, tb = -1, nt, tt = -1;
  {
    nnc_bench::Table table(
        "Batch norm, training, 32x64x56x56 fp32 (forward: y + running / saved statistics; "
        "backward: dx, dscale, dbias)",
        "PyTorch");
    for (bool nhwc : {false, true}) {
      nt = nnc_batch_norm(nhwc, &nf, &nb);
#ifdef NNC_HAVE_TORCH
      tt = torch_batch_norm(nhwc, &tf, &tb);
#endif
      const char* layout = nhwc ? "NHWC (PyTorch channels_last)" : "NCHW";
      table.row(std::string("forward   ") + layout, nf, tf);
      table.row(std::string("backward  ") + layout, nb, tb);
      table.row(std::string("fwd + bwd ") + layout, nt, tt);
    }
  }
  {
    nnc_bench::Table table("Layer norm over the last axis, 64x256x768 fp32, scale and bias", "PyTorch");
    nt = nnc_layer_norm(&nf, &nb);
#ifdef NNC_HAVE_TORCH
    tt = torch_layer_norm(&tf, &tb);
#endif
    table.row("forward", nf, tf);
    table.row("backward", nb, tb);
    table.row("fwd + bwd", nt, tt);
  }
  {
    nnc_bench::Table table("REDUCE_SUM over the batch (axis 0) of 64x3136 fp32", "PyTorch");
    nt = nnc_reduce_sum();
#ifdef NNC_HAVE_TORCH
    tt = torch_reduce_sum();
#endif
    table.row("64x3136 -> 1x3136", nt, tt);
  }
  {
    nnc_bench::Table table("Group norm, 32 groups, 16x128x64x64 fp32, scale and bias (backward: dx, dscale, dbias)",
                           "PyTorch");
    for (bool nhwc : {false, true}) {
      nt = nnc_group_norm(nhwc, &nf, &nb);
#ifdef NNC_HAVE_TORCH
      tt = torch_group_norm(nhwc, &tf, &tb);
#endif
      const char* layout = nhwc ? "NHWC (PyTorch channels_last)" : "NCHW";
      table.row(std::string("forward   ") + layout, nf, tf);
      table.row(std::string("backward  ") + layout, nb, tb);
      table.row(std::string("fwd + bwd ") + layout, nt, tt);
    }
  }
  return 0;
}
