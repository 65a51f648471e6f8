// bench-exec: how much one ccv_nnc_cmd_exec costs, and how close the
// optimised element-wise paths come to the memory system.
//
//   bench-exec [calls] [dispatch]   (default 10,000,000 dispatch calls;
//                                    "dispatch" skips the large runs, for callgrind)
//
// 1. Dispatch: a one-element EWSUM (two 1-element fp32 inputs), timed over
//    `calls` executions; libnnc takes 0.036 us for the same call.
// 2. Large EWSUM, 2 x 16M floats: CPU_OPT and CPU_REF against a plain
//    single-threaded loop and memcpy, in GB/s of traffic (2 reads + 1 write).
// 3. 16M fp32 -> fp16 DATATYPE_CONVERSION: OPT (F16C) against REF.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

ccv_nnc_tensor_param_t param(int datatype, int n) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  p.dim[0] = n;
  return p;
}

ccv_nnc_cmd_t command(uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

// Best of `reps` runs of f, in seconds.
template <class F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const auto t0 = Clock::now();
    f();
    const double t = seconds_since(t0);
    if (t < best) best = t;
  }
  return best;
}

__attribute__((noinline)) void plain_sum(float* y, const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 10000000L;
  const bool dispatch_only = argc > 2 && std::strcmp(argv[2], "dispatch") == 0;
  ccv_nnc_init();

  // --- 1. dispatch ---------------------------------------------------------
  {
    ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, param(CCV_32F, 1), 0);
    ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, param(CCV_32F, 1), 0);
    ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, param(CCV_32F, 1), 0);
    a->data.f32[0] = 1;
    b->data.f32[0] = 2;
    ccv_nnc_tensor_t* in[2] = {a, b};
    ccv_nnc_tensor_t* out[1] = {y};
    std::printf("dispatch: one-element EWSUM (2 x 1 fp32), %ld calls each\n", calls);
    std::printf("  %-34s %10s %10s\n", "", "us/call", "vs libnnc");
    const struct {
      const char* name;
      uint32_t backend;
    } runs[] = {{"default backend (CPU_OPT chosen)", 0}, {"backend = CPU_OPT", CCV_NNC_BACKEND_CPU_OPT},
                {"backend = CPU_REF", CCV_NNC_BACKEND_CPU_REF}};
    for (const auto& r : runs) {
      if (dispatch_only && r.backend) break;  // one loop of the default path only
      const ccv_nnc_cmd_t cmd = command(CCV_NNC_EWSUM_FORWARD, r.backend);
      int bad = 0;
      for (int i = 0; i < 10000; i++) bad |= ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
      const double t = best_of(dispatch_only ? 1 : 3, [&] {
        for (long i = 0; i < calls; i++) bad |= ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
      });
      if (bad || y->data.f32[0] != 3) {
        std::fprintf(stderr, "EWSUM failed: %s\n", ccv_nnc_error_message());
        return 1;
      }
      const double us = t / static_cast<double>(calls) * 1e6;
      std::printf("  %-34s %10.4f %9.2fx\n", r.name, us, us / 0.036);
    }
    if (dispatch_only) return 0;
    // The empty command, for the fixed cost of the API itself.
    ccv_nnc_cmd_t noop = command(CCV_NNC_NOOP, 0);
    const double t = best_of(3, [&] {
      for (long i = 0; i < calls; i++) ccv_nnc_cmd_exec(noop, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
    });
    std::printf("  %-34s %10.4f\n", "NOOP with the same tensors", t / static_cast<double>(calls) * 1e6);
    std::printf("  libnnc reference: 0.036 us/call\n\n");
    ccv_nnc_tensor_free(a);
    ccv_nnc_tensor_free(b);
    ccv_nnc_tensor_free(y);
  }

  // --- 2. large EWSUM ------------------------------------------------------
  const int n = 16 << 20;
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, param(CCV_32F, n), 0);
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, param(CCV_32F, n), 0);
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, param(CCV_32F, n), 0);
  ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, param(CCV_16F, n), 0);
  for (int i = 0; i < n; i++) {
    a->data.f32[i] = static_cast<float>(i % 1000) * 0.5f;
    b->data.f32[i] = static_cast<float>(i % 777) * 0.25f;
    y->data.f32[i] = 0;
  }
  {
    const double bytes = 3.0 * n * sizeof(float);
    ccv_nnc_tensor_t* in[2] = {a, b};
    ccv_nnc_tensor_t* out[1] = {y};
    auto exec = [&](uint32_t backend) {
      const ccv_nnc_cmd_t cmd = command(CCV_NNC_EWSUM_FORWARD, backend);
      return best_of(5, [&] { ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr); });
    };
    const double opt = exec(CCV_NNC_BACKEND_CPU_OPT);
    const double ref = exec(CCV_NNC_BACKEND_CPU_REF);
    const double plain = best_of(5, [&] { plain_sum(y->data.f32, a->data.f32, b->data.f32, n); });
    const double copy = best_of(5, [&] { std::memcpy(y->data.f32, a->data.f32, sizeof(float) * n); });
    std::printf("large EWSUM: y = a + b, 16M fp32 each (%.0f MB of traffic)\n", bytes / 1e6);
    std::printf("  %-34s %10s %10s %12s\n", "", "ms", "GB/s", "vs plain");
    std::printf("  %-34s %10.2f %10.2f %11.2fx\n", "CPU_OPT (pool, AVX2)", opt * 1e3, bytes / opt / 1e9, plain / opt);
    std::printf("  %-34s %10.2f %10.2f %11.2fx\n", "CPU_REF", ref * 1e3, bytes / ref / 1e9, plain / ref);
    std::printf("  %-34s %10.2f %10.2f %11.2fx\n", "plain loop, one thread", plain * 1e3, bytes / plain / 1e9, 1.0);
    std::printf("  %-34s %10.2f %10.2f    (2 x 64 MB)\n\n", "memcpy 64 MB, one thread", copy * 1e3,
                2.0 * n * sizeof(float) / copy / 1e9);
  }

  // --- 3. conversion -------------------------------------------------------
  {
    ccv_nnc_tensor_t* in[1] = {a};
    ccv_nnc_tensor_t* out[1] = {h};
    auto exec = [&](uint32_t backend) {
      const ccv_nnc_cmd_t cmd = command(CCV_NNC_DATATYPE_CONVERSION_FORWARD, backend);
      return best_of(3, [&] { ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr); });
    };
    const double opt = exec(CCV_NNC_BACKEND_CPU_OPT);
    const double ref = exec(CCV_NNC_BACKEND_CPU_REF);
    const double bytes = 6.0 * n;
    std::printf("DATATYPE_CONVERSION 16M fp32 -> fp16\n");
    std::printf("  %-34s %10.2f ms %8.2f GB/s\n", "CPU_OPT (pool, F16C)", opt * 1e3, bytes / opt / 1e9);
    std::printf("  %-34s %10.2f ms %8.2f GB/s  (OPT is %.1fx faster)\n", "CPU_REF", ref * 1e3, bytes / ref / 1e9, ref / opt);
  }
  ccv_nnc_tensor_free(a);
  ccv_nnc_tensor_free(b);
  ccv_nnc_tensor_free(y);
  ccv_nnc_tensor_free(h);
  return 0;
}
