// bench-gpu-train: one training step of the reference network (the demo's:
// two 5x5 convolutions with ReLU and 2x2 max pooling, dense 256, ReLU, dense
// 10; softmax cross-entropy; SGD lr 0.01 momentum 0.9) on GPU 0 through
// ccv_cnnp_model_fit, beside PyTorch's on the same GPU (peer.py, run from
// here with python3; $NNC_BENCH_PEER names another copy), batches 64 and 256 of 28x28 fp32 images, NHWC.
// Each side: the median of 5 rounds of `steps` steps after 10 warm-up steps,
// in milliseconds per step: synchronous fit, and fit queued on a GPU stream.
//   bench-gpu-train [steps]        (default 50)
// Prints images per second and the ratio NNC / PyTorch of step times (below
// 1: NNC is faster). Both sides use plain fp32 (no TF32).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "reference_net.hpp"

namespace {

void check(const char* what) {
  if (ccv_nnc_error_message()[0]) {
    std::fprintf(stderr, "bench-gpu-train: %s: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

// NNC's milliseconds per step at this batch: synchronous fit (the host waits
// for each step), or fit queued on a GPU stream (steps in flight: each call
// returns once its step is queued, and the host waits once per round of
// steps). Either runs the model's static schedule over up to 4 streams.
struct StepMs {
  double step = 0;   // wall time per step, the host waiting at the end of each round
  double queue = 0;  // host time per step spent in fit itself (queueing, on a stream)
  double host = 0;   // on a stream: fit's time for one step queued on an idle GPU (the host's own cost)
};
StepMs nnc_step_ms(int batch, int steps, bool on_stream) {
  nnc_bench::ReferenceStep net(batch, on_stream);
  check("compile");
  for (int i = 0; i < 10; i++) net.step();
  net.wait();
  check("fit");
  std::vector<double> rounds, queued;
  for (int r = 0; r < 5; r++) {
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; i++) net.step();
    const auto q = std::chrono::steady_clock::now();
    net.wait();
    rounds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count() / steps);
    queued.push_back(std::chrono::duration<double, std::milli>(q - a).count() / steps);
  }
  check("fit");
  // One step at a time on an idle GPU: the host's own cost per step (a step
  // queued behind a full launch queue waits for the GPU; this one cannot).
  std::vector<double> alone;
  for (int i = 0; on_stream && i < 21; i++) {
    net.wait();
    const auto a = std::chrono::steady_clock::now();
    net.step();
    alone.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  net.wait();
  std::sort(alone.begin(), alone.end());
  std::sort(rounds.begin(), rounds.end());
  std::sort(queued.begin(), queued.end());
  return {rounds[2], queued[2], alone.empty() ? 0.0 : alone[alone.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  ccv_nnc_init();
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) < 1) {
    std::fprintf(stderr, "bench-gpu-train: no GPU found\n");
    return 1;
  }
  const int batches[] = {64, 256};
  // PyTorch first, in its own process, so the two never share the GPU.
  std::map<int, double> torch_ms;
  // The peer: $NNC_BENCH_PEER, the source tree's, or tools/bench-gpu-train/peer.py under the current folder.
  std::string peer = std::getenv("NNC_BENCH_PEER") ? std::getenv("NNC_BENCH_PEER") : NNC_BENCH_PEER;
  if (FILE* f = std::fopen(peer.c_str(), "r"))
    std::fclose(f);
  else
    peer = "tools/bench-gpu-train/peer.py";
  const std::string cmd = "python3 " + peer + " " + std::to_string(steps) + " 64 256 2>&1";
  // NNC_BENCH_NO_PEER=1: NNC's rows only (a second run under other settings).
  const bool no_peer = std::getenv("NNC_BENCH_NO_PEER") && std::getenv("NNC_BENCH_NO_PEER")[0] == '1';
  if (FILE* p = no_peer ? nullptr : popen(cmd.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), p)) {
      int b = 0;
      double ms = 0;
      if (std::sscanf(line, "torch %d %lf", &b, &ms) == 2)
        torch_ms[b] = ms;
      else
        std::fputs(line, stdout);
    }
    pclose(p);
  }
  std::printf("reference network, one SGD step, fp32 NHWC, %d steps x 5 rounds (median)\n", steps);
  // "queue ms": the host's time inside fit per step. On a stream, when it is
  // close to "NNC ms" the step is bound by the host (launches, planning) or
  // by a full launch queue; "host ms" (on a stream) is one step's fit on an
  // idle GPU, the host's own cost: close to "NNC ms", the host bounds the step.
  std::printf("%-8s %-7s %12s %10s %10s %12s %12s %12s %8s\n", "batch", "NNC on", "NNC ms", "queue ms", "host ms",
              "NNC img/s", "torch ms", "torch img/s", "ratio");
  for (int b : batches)
    for (bool on_stream : {false, true}) {
      const StepMs r = nnc_step_ms(b, steps, on_stream);
      const double ms = r.step;
      const char* how = on_stream ? "stream" : "sync";
      const auto it = torch_ms.find(b);
      char host[16] = "-";
      if (on_stream) std::snprintf(host, sizeof(host), "%.4f", r.host);
      if (it != torch_ms.end())
        std::printf("%-8d %-7s %12.4f %10.4f %10s %12.0f %12.4f %12.0f %7.3fx\n", b, how, ms, r.queue, host,
                    b * 1e3 / ms, it->second, b * 1e3 / it->second, ms / it->second);
      else
        std::printf("%-8d %-7s %12.4f %10.4f %10s %12.0f %12s %12s %8s\n", b, how, ms, r.queue, host, b * 1e3 / ms, "-",
                    "-", "-");
    }
  return 0;
}
