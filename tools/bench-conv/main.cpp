// bench-conv: the convolution and pooling CPU_OPT kernels against PyTorch's
// CPU kernels on the same shapes, both on NNC's thread count (the header line
// says which instruction set NNC's kernels run and each side's threads:
// NNC_NUM_THREADS=n sets both, NNC_NO_AVX512=1 takes the AVX2 kernels).
//
//   bench-conv [nhwc|nchw|both] [conv|pool|all]   (default: both all)
//
// Convolutions (fp32, bias, stride 1, "same" padding):
//   N=32 C=64 56x56 K=64 3x3 pad 1;  N=64 C=1 28x28 K=32 5x5 pad 2;
//   N=64 C=32 14x14 K=64 5x5 pad 2.
// Each is timed forward (y = conv(x, w) + b) and backward (dx, dw and dbias
// from g, x, w). NNC runs CONVOLUTION_FORWARD / _BACKWARD on CPU_OPT with the
// tensors in NHWC (weights K x KH x KW x C) and again in NCHW (weights
// K x C x KH x KW); PyTorch runs at::conv2d and at::convolution_backward
// (output_mask = all three) on contiguous NCHW tensors — the same logical
// problem. Each NNC command is first tuned with ccv_nnc_cmd_autotune (the
// CPU_OPT algorithm: instruction set and block width; printed as "alg");
// the NHWC "default" rows time algorithm 0, what an untuned command runs.
// GFLOP/s counts 2 N OH OW K C KH KW per forward and twice that per backward
// (dx and dw); "% peak" is against the FMA peak measured in this run on the
// same threads with the instruction set NNC's kernels use (peak_avx512.cpp
// when they run AVX-512), and, in brackets, against the AVX2 loop of
// nnc_bench::fma_peak_gflops (peak_avx2.cpp).
// Max pooling 2x2 stride 2 on 64 x 32 x 28 x 28: NNC MAX_POOL_FORWARD and
// MAX_POOL_BACKWARD (dx from g and x) in NCHW and NHWC; PyTorch
// at::max_pool2d_with_indices_out (what training runs: values and indices)
// and at::max_pool2d_with_indices_backward_out, NCHW.
// Times are medians in milliseconds; ratio = NNC / PyTorch (below 1: faster).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

// peak_avx2.cpp, peak_avx512.cpp: the FMA loop per instruction set.
double peak_avx2_gflops(int threads);
double peak_avx512_gflops(int threads);

#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;

ccv_nnc_tensor_param_t param(std::vector<int> dims, int format) {
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
  Tensor(std::vector<int> dims, int format) : t(ccv_nnc_tensor_new(nullptr, param(dims, format), 0)) {}
  ~Tensor() { ccv_nnc_tensor_free(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
    return n;
  }
  void fill(std::mt19937& rng) const {
    std::uniform_real_distribution<float> d(-1, 1);
    for (size_t i = 0; i < count(); i++) t->data.f32[i] = d(rng);
  }
};

int exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, std::vector<ccv_nnc_tensor_t*> in,
         std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

void check(int code, const char* what) {
  if (code != CCV_NNC_EXEC_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

struct Conv {
  const char* name;
  int N, C, H, W, K, R, pad;
  double flops() const { return 2.0 * N * H * W * K * C * R * R; }  // stride 1, same padding
  ccv_nnc_hint_t hint() const {
    ccv_nnc_hint_t h;
    std::memset(&h, 0, sizeof(h));
    h.stride.dim[0] = h.stride.dim[1] = 1;
    h.border.begin[0] = h.border.begin[1] = h.border.end[0] = h.border.end[1] = pad;
    return h;
  }
};

struct Times {
  double fwd = -1, bwd = -1;
};

ccv_nnc_cmd_t tuned(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, std::vector<ccv_nnc_tensor_t*> in,
                    std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_autotune(cmd, size_t{1} << 30, hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                              static_cast<int>(out.size()), nullptr);
}

Times nnc_conv(const Conv& c, int format, int* fwd_alg, int* bwd_alg, bool untuned = false) {
  std::mt19937 rng(1);
  const bool nhwc = format == NHWC;
  auto img = [&](int ch) { return nhwc ? std::vector<int>{c.N, c.H, c.W, ch} : std::vector<int>{c.N, ch, c.H, c.W}; };
  Tensor x(img(c.C), format), y(img(c.K), format), g(img(c.K), format), dx(img(c.C), format);
  Tensor w(nhwc ? std::vector<int>{c.K, c.R, c.R, c.C} : std::vector<int>{c.K, c.C, c.R, c.R}, format);
  Tensor dw(nhwc ? std::vector<int>{c.K, c.R, c.R, c.C} : std::vector<int>{c.K, c.C, c.R, c.R}, format);
  Tensor b({c.K}, format), db({c.K}, format);
  x.fill(rng), w.fill(rng), b.fill(rng), g.fill(rng);
  ccv_nnc_cmd_t fwd = CMD_CONVOLUTION_FORWARD(1, c.K, c.R, c.R, c.C);
  ccv_nnc_cmd_t bwd = CMD_CONVOLUTION_BACKWARD(1, c.K, c.R, c.R, c.C);
  fwd.backend = bwd.backend = CCV_NNC_BACKEND_CPU_OPT;
  const ccv_nnc_hint_t hint = c.hint();
  if (untuned) {
    fwd.algorithm = bwd.algorithm = 0;
  } else {
    fwd = tuned(fwd, hint, {x.t, w.t, b.t}, {y.t});
    bwd = tuned(bwd, hint, {g.t, x.t, w.t}, {dx.t, dw.t, db.t});
  }
  *fwd_alg = fwd.algorithm, *bwd_alg = bwd.algorithm;
  Times t;
  t.fwd = nnc_bench::time_ms([&] {
    check(exec(fwd, hint, {x.t, w.t, b.t}, {y.t}), "CONVOLUTION_FORWARD");
  });
  t.bwd = nnc_bench::time_ms([&] {
    check(exec(bwd, hint, {g.t, x.t, w.t}, {dx.t, dw.t, db.t}),
          "CONVOLUTION_BACKWARD");
  });
  return t;
}

// The best direct (non-Winograd) forward on NHWC, for the FMA-peak figure:
// Winograd's GFLOP/s count multiply-adds it does not do.
double direct_fwd_ms(const Conv& c, int* alg) {
  std::mt19937 rng(1);
  Tensor x({c.N, c.H, c.W, c.C}, NHWC), y({c.N, c.H, c.W, c.K}, NHWC), w({c.K, c.R, c.R, c.C}, NHWC), b({c.K}, NHWC);
  x.fill(rng), w.fill(rng), b.fill(rng);
  const ccv_nnc_hint_t hint = c.hint();
  double best = -1;
  for (int a = 1; a <= 5; a++) {
    ccv_nnc_cmd_t fwd = CMD_CONVOLUTION_FORWARD(1, c.K, c.R, c.R, c.C);
    fwd.backend = CCV_NNC_BACKEND_CPU_OPT, fwd.algorithm = a;
    const double t = nnc_bench::time_ms([&] { check(exec(fwd, hint, {x.t, w.t, b.t}, {y.t}), "CONVOLUTION_FORWARD"); });
    if (best < 0 || t < best) best = t, *alg = a;
  }
  return best;
}

// Winograd's rounding on this shape (batch 2, NHWC): the largest difference
// from CPU_REF relative to the largest |value|, for y and for dx.
void winograd_error(const Conv& c, double* ey, double* edx) {
  std::mt19937 rng(3);
  const int N = 2;
  Tensor x({N, c.H, c.W, c.C}, NHWC), w({c.K, c.R, c.R, c.C}, NHWC), b({c.K}, NHWC), g({N, c.H, c.W, c.K}, NHWC);
  Tensor y0({N, c.H, c.W, c.K}, NHWC), y1({N, c.H, c.W, c.K}, NHWC);
  Tensor dx0({N, c.H, c.W, c.C}, NHWC), dx1({N, c.H, c.W, c.C}, NHWC);
  x.fill(rng), w.fill(rng), b.fill(rng), g.fill(rng);
  const ccv_nnc_hint_t hint = c.hint();
  auto run = [&](uint32_t backend, int alg, const Tensor& y, const Tensor& dx) {
    ccv_nnc_cmd_t fwd = CMD_CONVOLUTION_FORWARD(1, c.K, c.R, c.R, c.C);
    ccv_nnc_cmd_t bwd = CMD_CONVOLUTION_BACKWARD(1, c.K, c.R, c.R, c.C);
    fwd.backend = bwd.backend = backend;
    fwd.algorithm = bwd.algorithm = alg;
    check(exec(fwd, hint, {x.t, w.t, b.t}, {y.t}), "CONVOLUTION_FORWARD");
    check(exec(bwd, hint, {g.t, x.t, w.t}, {dx.t}), "CONVOLUTION_BACKWARD");
  };
  run(CCV_NNC_BACKEND_CPU_REF, 0, y0, dx0);
  run(CCV_NNC_BACKEND_CPU_OPT, 6, y1, dx1);
  auto rel = [](const Tensor& want, const Tensor& got) {
    double diff = 0, big = 0;
    for (size_t i = 0; i < want.count(); i++) {
      diff = std::max(diff, static_cast<double>(std::fabs(want.t->data.f32[i] - got.t->data.f32[i])));
      big = std::max(big, static_cast<double>(std::fabs(want.t->data.f32[i])));
    }
    return diff / big;
  };
  *ey = rel(y0, y1), *edx = rel(dx0, dx1);
}

Times nnc_pool(int format) {
  std::mt19937 rng(2);
  const bool nhwc = format == NHWC;
  Tensor x(nhwc ? std::vector<int>{64, 28, 28, 32} : std::vector<int>{64, 32, 28, 28}, format);
  Tensor dx(nhwc ? std::vector<int>{64, 28, 28, 32} : std::vector<int>{64, 32, 28, 28}, format);
  Tensor y(nhwc ? std::vector<int>{64, 14, 14, 32} : std::vector<int>{64, 32, 14, 14}, format);
  Tensor g(nhwc ? std::vector<int>{64, 14, 14, 32} : std::vector<int>{64, 32, 14, 14}, format);
  x.fill(rng), g.fill(rng);
  ccv_nnc_cmd_t fwd = CMD_MAX_POOL_FORWARD(2, 2), bwd = CMD_MAX_POOL_BACKWARD(2, 2);
  fwd.backend = bwd.backend = CCV_NNC_BACKEND_CPU_OPT;
  ccv_nnc_hint_t hint;
  std::memset(&hint, 0, sizeof(hint));
  hint.stride.dim[0] = hint.stride.dim[1] = 2;
  Times t;
  t.fwd = nnc_bench::time_ms(
      [&] { check(exec(fwd, hint, {x.t}, {y.t}), "MAX_POOL_FORWARD"); });
  t.bwd = nnc_bench::time_ms([&] {
    check(exec(bwd, hint, {g.t, x.t, y.t}, {dx.t}), "MAX_POOL_BACKWARD");
  });
  return t;
}

#ifdef NNC_HAVE_TORCH
Times torch_conv(const Conv& c) {
  at::manual_seed(1);
  at::Tensor x = at::rand({c.N, c.C, c.H, c.W}) * 2 - 1, w = at::rand({c.K, c.C, c.R, c.R}) * 2 - 1;
  at::Tensor b = at::rand({c.K}) * 2 - 1, g = at::rand({c.N, c.K, c.H, c.W}) * 2 - 1;
  at::Tensor y;
  Times t;
  t.fwd = nnc_bench::time_ms([&] { y = at::conv2d(x, w, b, {1, 1}, {c.pad, c.pad}); });
  t.bwd = nnc_bench::time_ms([&] {
    auto r = at::convolution_backward(g, x, w, at::IntArrayRef({c.K}), {1, 1}, {c.pad, c.pad}, {1, 1}, false, {0, 0},
                                      1, {true, true, true});
    (void)r;
  });
  return t;
}

Times torch_pool() {
  at::manual_seed(2);
  at::Tensor x = at::rand({64, 32, 28, 28}), g = at::rand({64, 32, 14, 14});
  at::Tensor y = at::empty({64, 32, 14, 14}), idx = at::empty({64, 32, 14, 14}, at::kLong), dx = at::empty_like(x);
  Times t;
  t.fwd = nnc_bench::time_ms([&] { at::max_pool2d_with_indices_out(y, idx, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false); });
  t.bwd = nnc_bench::time_ms(
      [&] { at::max_pool2d_with_indices_backward_out(dx, g, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, idx); });
  return t;
}
#else
Times torch_conv(const Conv&) { return {}; }
Times torch_pool() { return {}; }
#endif

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "both";
  const std::string part = argc > 2 ? argv[2] : "all";
  std::vector<int> formats;
  if (which != "nchw") formats.push_back(NHWC);
  if (which != "nhwc") formats.push_back(NCHW);
  ccv_nnc_init();
  const int threads = nnc_bench::header_torch();
  __builtin_cpu_init();
  // The set NNC's kernels run (NNC_NO_AVX512 honoured), as the header says.
  const bool avx512 = nnc_bench::nnc_isa().rfind("AVX-512", 0) == 0;
  // Best of three: a shared or virtual machine only ever lowers the rate.
  auto best_of_3 = [threads](double (*f)(int)) { return std::max({f(threads), f(threads), f(threads)}); };
  const double peak2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? best_of_3(peak_avx2_gflops) : 0;
  const double peak5 = avx512 ? best_of_3(peak_avx512_gflops) : 0;
  std::printf("FMA peak, fp32, %d threads: AVX2 %.1f GFLOP/s (nnc_bench::fma_peak_gflops), AVX-512 %.1f GFLOP/s%s\n",
              threads, peak2, peak5, avx512 ? "" : " (not run: NNC's kernels are AVX2)");
  // % of the peak of the set NNC's kernels run first, then % of the AVX2 peak.
  const double peak = avx512 ? peak5 : peak2;
  const Conv convs[] = {{"N=32 C=64 56x56 K=64 3x3 pad 1", 32, 64, 56, 56, 64, 3, 1},
                        {"N=64 C=1 28x28 K=32 5x5 pad 2", 64, 1, 28, 28, 32, 5, 2},
                        {"N=64 C=32 14x14 K=64 5x5 pad 2", 64, 32, 14, 14, 64, 5, 2}};
  nnc_bench::Table table("convolution (PyTorch: NCHW, at::conv2d / at::convolution_backward)", "PyTorch");
  char note[128];
  for (const Conv& c : convs) {
    if (part == "pool") break;
    const Times peer = torch_conv(c);
    for (int f : formats) {
      int fa = 0, ba = 0;
      const Times ours = nnc_conv(c, f, &fa, &ba);
      const char* fn = f == NHWC ? "NHWC" : "NCHW";
      const double gf = c.flops() / ours.fwd / 1e6, gb = 2 * c.flops() / ours.bwd / 1e6;
      std::snprintf(note, sizeof(note), "%6.1f GFLOP/s %3.0f%% peak (%3.0f%% AVX2) alg %d", gf, 100 * gf / peak,
                    100 * gf / peak2, fa);
      table.row(std::string("fwd ") + c.name + " " + fn, ours.fwd, peer.fwd, note);
      std::snprintf(note, sizeof(note), "%6.1f GFLOP/s %3.0f%% peak (%3.0f%% AVX2) alg %d", gb, 100 * gb / peak,
                    100 * gb / peak2, ba);
      table.row(std::string("bwd ") + c.name + " " + fn, ours.bwd, peer.bwd, note);
      if (f == NHWC) {
        const Times def = nnc_conv(c, f, &fa, &ba, /*untuned=*/true);
        table.row(std::string("fwd ") + c.name + " " + fn + " default", def.fwd, peer.fwd, "algorithm 0");
        table.row(std::string("bwd ") + c.name + " " + fn + " default", def.bwd, peer.bwd, "algorithm 0");
      }
      if (f == NHWC && c.C >= 16) {
        int da = 0;
        const double direct = direct_fwd_ms(c, &da);
        const double gd = c.flops() / direct / 1e6;
        std::snprintf(note, sizeof(note), "%6.1f GFLOP/s %3.0f%% peak (%3.0f%% AVX2) alg %d", gd, 100 * gd / peak,
                      100 * gd / peak2, da);
        table.row(std::string("fwd ") + c.name + " " + fn + " direct", direct, peer.fwd, note);
      }
    }
  }
  for (const Conv& c : convs) {
    if (part == "pool" || c.C < 16) continue;  // Winograd runs on AVX-512 and AVX2 alike
    double ey = 0, edx = 0;
    winograd_error(c, &ey, &edx);
    std::printf("Winograd (alg 6) vs CPU_REF, %s, batch 2: max |error| / max |value| y %.1e, dx %.1e\n", c.name, ey,
                edx);
  }
  if (part == "conv") return 0;
  nnc_bench::Table pool("max pool 2x2 stride 2 on 64x32x28x28 (PyTorch: NCHW, with indices)", "PyTorch");
  const Times peer = torch_pool();
  for (int f : formats) {
    const Times ours = nnc_pool(f);
    const char* fn = f == NHWC ? " NHWC" : " NCHW";
    pool.row(std::string("max pool fwd") + fn, ours.fwd, peer.fwd);
    pool.row(std::string("max pool bwd") + fn, ours.bwd, peer.bwd);
  }
  return 0;
}
