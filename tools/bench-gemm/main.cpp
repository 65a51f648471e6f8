// bench-gemm: the GEMM command against OpenBLAS itself. For fp32 the command
// runs our own kernels on AVX-512 CPUs, and on AVX2 + FMA ones (or with
// NNC_NO_AVX512=1); elsewhere OpenBLAS plus our overhead. The header says
// which instruction set ran and each side's thread count (the same: NNC sets
// OpenBLAS's to its pool's), the "ran" column which kernel each row took.
// OPENBLAS_CORETYPE=Haswell makes OpenBLAS run its AVX2 kernels, the fair peer
// for NNC_NO_AVX512=1.
//
// For each shape, the same buffers are multiplied by ccv_nnc_cmd_exec
// (GEMM_FORWARD on CPU_OPT: validation, backend choice, the kernel) and by
// cblas_sgemm called directly (the peer), each side in its own blocks of
// samples after a pause (see race); each reports the median time per call.
// ratio = peer / ours: 1 or more means the command is at least as fast as raw BLAS.
//
//   bench-gemm [--quick] [--min]
//
// --min reports each side's fastest sample (samples of >= 0.5 ms instead of
// >= 5 ms) in place of the median: on a machine shared with other work the
// median measures the neighbours, the fastest sample what the code can do.
//   NNC_NO_AVX512=1 OPENBLAS_CORETYPE=Haswell bench-gemm
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "bench.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using nnc_bench::Isa;
using nnc_bench::nnc_isa_kind;
using nnc_bench::nnc_threads;

// Which kernel the command runs for a product of `rows` rows (the batch
// folded into the rows where A's matrices follow one another and w is shared).
std::string kernel(int rows) {
  switch (nnc_isa_kind()) {
    case Isa::avx512: return rows >= 6 ? "AVX-512 6x64" : "AVX-512 small";
    case Isa::avx2: return rows >= 6 ? "AVX2 6x16" : "AVX2 small";
    default: return "OpenBLAS";
  }
}

double seconds(const std::function<void()>& f, int calls) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; i++) f();
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

struct Timing {
  double ours = 0, peer = 0;
};

// Median (or fastest, with `best`) seconds per call of each side. The sides take turns in blocks of
// samples, two blocks each, every block after a pause: idle pool threads spin
// for a while before they sleep (OpenBLAS's for tens of milliseconds), so a
// side timed right after the other would share the cores with them.
Timing race(const std::function<void()>& ours, const std::function<void()>& peer, bool quick, bool best) {
  // Warm up both (page faults, thread start), then size the samples.
  ours(), peer(), ours(), peer();
  const double once = std::max(seconds(peer, 1), 1e-7);
  const int calls = std::max(1, static_cast<int>((best ? 0.0005 : 0.005) / once));  // >= 5 (0.5) ms per sample
  const double budget = quick ? 0.3 : 2.0;                        // seconds per side
  const int samples = std::clamp(static_cast<int>(budget / (once * calls)), 6, best ? 400 : 50) / 2;
  std::vector<double> a, b;
  auto block = [&](const std::function<void()>& f, std::vector<double>* out) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    f(), f();  // wakes this side's threads
    for (int s = 0; s < samples; s++) out->push_back(seconds(f, calls));
  };
  for (int round = 0; round < 2; round++) {
    block(ours, &a);
    block(peer, &b);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  if (best) return {*std::min_element(a.begin(), a.end()), *std::min_element(b.begin(), b.end())};
  return {median(a), median(b)};
}

ccv_nnc_tensor_param_t params(std::vector<int> dims) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

ccv_nnc_cmd_t gemm_cmd(bool transpose_w) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.blas.a[0] = p.blas.a[1] = 1;
  if (transpose_w) p.blas.transpose_b[1] = 1;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, p, 0);
  cmd.backend = CCV_NNC_BACKEND_CPU_OPT;
  return cmd;
}

struct Case {
  std::string name;
  int batch, m, k, n;
  bool batched_w;  // w is [batch, k, n] (else shared [k, n])
  bool fc;         // w is [n, k], transposed, plus a bias
  double target;
};

void fill(ccv_nnc_tensor_t* t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  size_t count = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) count *= t->info.dim[i];
  for (size_t i = 0; i < count; i++) t->data.f32[i] = u(rng);
}

bool run(const Case& c, bool quick, bool best) {
  std::mt19937 rng(1);
  const bool batched = c.batch > 1;
  std::vector<int> ad = {c.m, c.k}, wd = c.fc ? std::vector<int>{c.n, c.k} : std::vector<int>{c.k, c.n},
                   bd = {c.m, c.n};
  if (batched) {
    ad.insert(ad.begin(), c.batch), bd.insert(bd.begin(), c.batch);
    if (c.batched_w) wd.insert(wd.begin(), c.batch);
  }
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, params(ad), 0);
  ccv_nnc_tensor_t* w = ccv_nnc_tensor_new(nullptr, params(wd), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, params(bd), 0);
  ccv_nnc_tensor_t* bias = c.fc ? ccv_nnc_tensor_new(nullptr, params({c.n}), 0) : nullptr;
  fill(a, rng), fill(w, rng);
  if (bias) fill(bias, rng);
  ccv_nnc_tensor_t* in[3] = {a, w, bias};
  const int in_size = bias ? 3 : 2;
  const ccv_nnc_cmd_t cmd = gemm_cmd(c.fc);
  int status = CCV_NNC_EXEC_SUCCESS;
  auto ours = [&] {
    const int r = ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, in_size, &b, 1, nullptr);
    if (r != CCV_NNC_EXEC_SUCCESS) status = r;
  };
  const float* A = a->data.f32;
  const float* W = w->data.f32;
  float* B = b->data.f32;
  const size_t a_step = static_cast<size_t>(c.m) * c.k, w_step = c.batched_w ? static_cast<size_t>(c.k) * c.n : 0,
               b_step = static_cast<size_t>(c.m) * c.n;
  auto peer = [&] {
    if (c.fc) {  // bias row copies, then b += a · w^T
      for (int i = 0; i < c.m; i++) std::memcpy(B + static_cast<size_t>(i) * c.n, bias->data.f32, sizeof(float) * c.n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.m, c.n, c.k, 1.0f, A, c.k, W, c.k, 1.0f, B, c.n);
      return;
    }
    for (int i = 0; i < c.batch; i++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.m, c.n, c.k, 1.0f, A + i * a_step, c.k, W + i * w_step,
                  c.n, 0.0f, B + i * b_step, c.n);
  };
  // Both sides must compute the same thing.
  peer();
  std::vector<float> want(B, B + b_step * c.batch);
  ours();
  double err = 0;
  for (size_t i = 0; i < want.size(); i++) err = std::max(err, static_cast<double>(std::abs(want[i] - B[i])));
  bool ok = status == CCV_NNC_EXEC_SUCCESS && err <= 1e-3 * std::max(1, c.k / 64);
  if (!ok)
    std::fprintf(stderr, "%s: results differ (max error %g, status %d: %s)\n", c.name.c_str(), err, status,
                 ccv_nnc_error_message());
  const Timing t = race(ours, peer, quick, best);
  const double flops = 2.0 * c.batch * c.m * c.k * c.n;
  const double ratio = t.peer / t.ours;
  const int rows = c.batched_w ? c.m : c.m * c.batch;
  std::printf("%-36s %10.4f %10.4f %8.1f %8.1f %7.3f %6.2f %-6s %s\n", c.name.c_str(), t.ours * 1e3, t.peer * 1e3,
              flops / t.ours * 1e-9, flops / t.peer * 1e-9, ratio, c.target, ratio >= c.target ? "ok" : "BELOW",
              kernel(rows).c_str());
  ccv_nnc_tensor_free(a), ccv_nnc_tensor_free(w), ccv_nnc_tensor_free(b), ccv_nnc_tensor_free(bias);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, best = false;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--min") == 0) best = true;
  }
  ccv_nnc_init();
  const std::vector<Case> cases = {
      {"1024x1024x1024", 1, 1024, 1024, 1024, false, false, 0.95},
      {"4096x4096x4096", 1, 4096, 4096, 4096, false, false, 0.95},
      {"64x3136x256", 1, 64, 3136, 256, false, false, 0.90},
      {"64x256x10", 1, 64, 256, 10, false, false, 0.90},
      {"64x256x3136 (dense layer's dx)", 1, 64, 256, 3136, false, false, 0.90},
      {"32 x (64x64x64), batched w", 32, 64, 64, 64, true, false, 0.90},
      {"fc 64x3136x256 (w^T, bias)", 1, 64, 3136, 256, false, true, 0.90},
      {"fc 64x256x10 (w^T, bias)", 1, 64, 256, 10, false, true, 0.90},
      {"fc 1x3136x256 (batch 1, w^T, bias)", 1, 1, 3136, 256, false, true, 0.90},
      {"fc 4x3136x256 (batch 4, w^T, bias)", 1, 4, 3136, 256, false, true, 0.90},
      {"1x256x3136 (batch-1 dx)", 1, 1, 256, 3136, false, false, 0.90},
      {"odd 37x333x1001", 1, 37, 333, 1001, false, false, 0.90},
      {"odd 513x257x129", 1, 513, 257, 129, false, false, 0.90},
      {"odd 1000x17x1000 (short k)", 1, 1000, 17, 1000, false, false, 0.90},
      {"odd 6x5000x70", 1, 6, 5000, 70, false, false, 0.90},
      {"odd 3x1000x999", 1, 3, 1000, 999, false, false, 0.90},
      {"fc 100x999x77 (w^T, bias)", 1, 100, 999, 77, false, true, 0.90},
  };
  // The first command sets OpenBLAS's thread count to NNC's pool's
  // (lib/core/parallel.cpp); run one so that the header reports it.
  {
    ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, params({8, 8}), 0);
    std::memset(x->data.f32, 0, sizeof(float) * 64);
    ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, params({8, 8}), 0);
    ccv_nnc_tensor_t* in[2] = {x, x};
    ccv_nnc_cmd_exec(gemm_cmd(false), ccv_nnc_no_hint, 0, in, 2, &y, 1, nullptr);
    ccv_nnc_tensor_free(x), ccv_nnc_tensor_free(y);
  }
  const Isa isa = nnc_isa_kind();
  std::printf("GEMM fp32, CPU_OPT through ccv_nnc_cmd_exec vs cblas_sgemm (OpenBLAS) on the same buffers\n");
  std::printf("ours: NNC's %s, %d threads | peer: OpenBLAS %s kernels, %d threads\n",
              isa == Isa::avx512 ? "AVX-512 kernels" : isa == Isa::avx2 ? "AVX2 kernels" : "OpenBLAS (no own kernels)",
              nnc_threads(), openblas_get_corename(), openblas_get_num_threads());
  std::printf("%-36s %10s %10s %8s %8s %7s %6s %-6s %s\n", "shape m x k x n", "ours (ms)", "peer (ms)", "GF ours",
              "GF peer", "ratio", "target", "", "ours ran");
  bool ok = true;
  std::printf("times: %s per call\n", best ? "fastest sample" : "median sample");
  for (const Case& c : cases) ok = run(c, quick, best) && ok;
  return ok ? 0 : 1;
}
