// bench-upsample: UPSAMPLE's CPU_OPT kernels against PyTorch 1.13's CPU
// kernels on the same shapes, both on NNC's thread count
// (nnc_bench::header_torch(); NNC_NUM_THREADS=n sets both).
//
//   bench-upsample
//
// Bilinear 2x (half-pixel centres, align_corners = 0) of 8 x 64 x 64 x 64 fp32
// into 8 x 64 x 128 x 128: UPSAMPLE_FORWARD and UPSAMPLE_BACKWARD, NCHW and
// NHWC, against at::upsample_bilinear2d_out / at::upsample_bilinear2d_backward_out
// on contiguous and channels_last tensors; nearest 2x forward the same way
// (at::upsample_nearest2d_out). Times are medians in milliseconds; ratio =
// NNC / PyTorch (below 1: faster).
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#endif

namespace {

constexpr int N = 8, C = 64, H = 64, W = 64;

ccv_nnc_tensor_t* tensor(std::vector<int> dims, int format) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return ccv_nnc_tensor_new(nullptr, p, 0);
}

void fill(ccv_nnc_tensor_t* t, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  size_t n = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  for (size_t i = 0; i < n; i++) t->data.f32[i] = d(rng);
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

// NNC forward and backward times of one type and layout.
void nnc_upsample(int type, bool nhwc, double* fwd, double* bwd) {
  const int fmt = nhwc ? CCV_TENSOR_FORMAT_NHWC : CCV_TENSOR_FORMAT_NCHW;
  const std::vector<int> small = nhwc ? std::vector<int>{N, H, W, C} : std::vector<int>{N, C, H, W};
  const std::vector<int> big = nhwc ? std::vector<int>{N, 2 * H, 2 * W, C} : std::vector<int>{N, C, 2 * H, 2 * W};
  ccv_nnc_tensor_t *x = tensor(small, fmt), *y = tensor(big, fmt), *g = tensor(big, fmt), *dx = tensor(small, fmt);
  std::mt19937 rng(1);
  fill(x, rng), fill(g, rng);
  ccv_nnc_cmd_t f = CMD_UPSAMPLE_FORWARD(type, 2, 2, 0), b = CMD_UPSAMPLE_BACKWARD(type, 2, 2, 0);
  f.backend = b.backend = CCV_NNC_BACKEND_CPU_OPT;
  *fwd = nnc_bench::time_ms([&] { check(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, &x, 1, &y, 1, nullptr), "forward"); });
  *bwd = nnc_bench::time_ms(
      [&] { check(ccv_nnc_cmd_exec(b, ccv_nnc_no_hint, 0, &g, 1, &dx, 1, nullptr), "backward"); });
  ccv_nnc_tensor_free(x), ccv_nnc_tensor_free(y), ccv_nnc_tensor_free(g), ccv_nnc_tensor_free(dx);
}

#ifdef NNC_HAVE_TORCH
void torch_upsample(bool bilinear, bool channels_last, double* fwd, double* bwd) {
  at::manual_seed(1);
  const auto fmt = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor x = (at::rand({N, C, H, W}) * 2 - 1).contiguous(fmt);
  at::Tensor g = (at::rand({N, C, 2 * H, 2 * W}) * 2 - 1).contiguous(fmt);
  at::Tensor y = at::empty({N, C, 2 * H, 2 * W}).contiguous(fmt), dx = at::empty({N, C, H, W}).contiguous(fmt);
  if (bilinear) {
    *fwd = nnc_bench::time_ms([&] { at::upsample_bilinear2d_out(y, x, {2 * H, 2 * W}, false); });
    *bwd = nnc_bench::time_ms(
        [&] { at::upsample_bilinear2d_backward_out(dx, g, {2 * H, 2 * W}, {N, C, H, W}, false); });
  } else {
    *fwd = nnc_bench::time_ms([&] { at::upsample_nearest2d_out(y, x, {2 * H, 2 * W}); });
    *bwd = nnc_bench::time_ms([&] { at::upsample_nearest2d_backward_out(dx, g, {2 * H, 2 * W}, {N, C, H, W}); });
  }
}
#endif

}  // namespace

int main() {
  ccv_nnc_init();
  nnc_bench::header_torch();
  for (int type : {CCV_NNC_UPSAMPLE_BILINEAR, CCV_NNC_UPSAMPLE_NEAREST}) {
    const std::string name = type == CCV_NNC_UPSAMPLE_BILINEAR ? "bilinear" : "nearest";
    nnc_bench::Table table("UPSAMPLE " + name + " 2x, 8x64x64x64 -> 8x64x128x128 fp32", "PyTorch");
    for (bool nhwc : {false, true}) {
      double nf = 0, nb = 0, tf = -1, tb = -1;
      nnc_upsample(type, nhwc, &nf, &nb);
#ifdef NNC_HAVE_TORCH
      torch_upsample(type == CCV_NNC_UPSAMPLE_BILINEAR, nhwc, &tf, &tb);
#endif
      const char* layout = nhwc ? "NHWC (PyTorch channels_last)" : "NCHW";
      table.row(std::string("forward  ") + layout, nf, tf);
      table.row(std::string("backward ") + layout, nb, tb);
    }
  }
  return 0;
}
