// host-cost-emu: the host's own cost of one training step of the reference
// network on the GPU path (bench-gpu-train's step: ccv_cnnp_model_fit on GPU
// 0, fp32 NHWC, SGD with momentum), measured without a GPU. The CUDA module
// runs against the emulated runtime with its kernels skipped
// (emu::set_skip_kernels): every launch is checked and counted, none runs,
// and what is left is the library's host work plus the emulated runtime's
// (tens of nanoseconds a call). On a GPU each runtime call costs more (a
// launch about 2-4 us), so the counts printed are the other half of the
// picture.
//   host-cost-emu [steps] [batch]   (default 200 steps, batch 64)
// Prints for synchronous fit and fit on a GPU stream: host microseconds per
// step (the median of 5 rounds), kernel launches (cuBLAS products counted as
// one each) and runtime calls per step, by entry point. Exits 1 if the
// library reports an error. The convolutions run on GPU_REF here (cuDNN is
// not emulated), so their launches are GPU_REF's, not cuDNN's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "emu_hooks.hpp"
#include "nnc/ccv_nnc.h"
#include "reference_net.hpp"

namespace {

void check(const char* what) {
  if (ccv_nnc_error_message()[0]) {
    std::fprintf(stderr, "host-cost-emu: %s: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

std::map<std::string, unsigned long long> api_now() {
  std::map<std::string, unsigned long long> m;
  for (const auto& [name, calls] : emu::api_counts()) m[name] = calls;
  return m;
}

void measure(int batch, int steps, bool on_stream) {
  nnc_bench::ReferenceStep net(batch, on_stream);
  check("compile");
  for (int i = 0; i < 5; i++) net.step();
  net.wait();
  check("fit");
  const unsigned long long launches0 = emu::launch_count();
  const std::map<std::string, unsigned long long> api0 = api_now();
  std::vector<double> us;
  for (int r = 0; r < 5; r++) {
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; i++) net.step();
    net.wait();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count() / steps);
  }
  check("fit");
  std::sort(us.begin(), us.end());
  const double n = 5.0 * steps;
  const std::map<std::string, unsigned long long> api1 = api_now();
  std::vector<std::pair<double, std::string>> per_step;
  double calls = 0;
  for (const auto& [name, c] : api1) {
    const auto it = api0.find(name);
    const double d = (c - (it == api0.end() ? 0 : it->second)) / n;
    if (d > 0) per_step.emplace_back(d, name), calls += d;
  }
  std::sort(per_step.rbegin(), per_step.rend());
  std::printf("batch %d, %s: %.1f us host per step (median of 5 rounds of %d), %.1f launches, %.1f runtime calls\n",
              batch, on_stream ? "on a GPU stream" : "synchronous", us[2], steps,
              (emu::launch_count() - launches0) / n, calls);
  for (const auto& [d, name] : per_step) std::printf("  %8.2f  %s\n", d, name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  emu::set_skip_kernels(true);
  ccv_nnc_init();
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const int batch = argc > 2 ? std::max(1, std::atoi(argv[2])) : 64;
  std::printf("host-cost-emu: the reference network's training step on the emulated GPU, kernels skipped\n");
  for (bool on_stream : {false, true}) measure(batch, steps, on_stream);
  return 0;
}
