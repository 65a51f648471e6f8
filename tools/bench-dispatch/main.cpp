// bench-dispatch: what the library itself costs around a trivial kernel.
//
//   bench-dispatch [rounds]   (default 7; each figure is the minimum over rounds)
//
// 1. A chain of 10,000 one-element EWSUM nodes run by ccv_nnc_graph_run with
//    the default sources / destinations, and with the chain's ends passed
//    explicitly: microseconds per node. Target: 0.05 us either way.
// 2. ccv_nnc_cmd_exec of a one-element EWSUM with the command built in the
//    loop, as libnnc programs write it (CMD_EWSUM_FORWARD() each call):
//    microseconds per call. Target: 0.04 us.
// The machine may be shared: take the minimum of several runs, not one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

ccv_nnc_tensor_param_t one_float() {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_COMPUTE_DEVICE_ANY | CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = 1;
  return p;
}

// What CMD_EWSUM_FORWARD() expands to.
ccv_nnc_cmd_t ewsum() { return ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0); }

void check(int code, const char* what) {
  if (code == CCV_NNC_EXEC_SUCCESS) return;
  std::fprintf(stderr, "%s failed (%d): %s\n", what, code, ccv_nnc_error_message());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  constexpr int kNodes = 10000;
  constexpr int kCalls = 2000000;
  ccv_nnc_init();
  const char* env = std::getenv("NNC_NUM_THREADS");
  std::printf("bench-dispatch: %s threads (%s), min of %d rounds\n", env ? env : std::to_string(std::thread::hardware_concurrency()).c_str(),
              env ? "NNC_NUM_THREADS" : "cores", rounds);

  // The chain: node i adds `zero` to one tensor into the other, alternating.
  ccv_nnc_tensor_t* t[2] = {ccv_nnc_tensor_new(nullptr, one_float(), 0), ccv_nnc_tensor_new(nullptr, one_float(), 0)};
  ccv_nnc_tensor_t* zero = ccv_nnc_tensor_new(nullptr, one_float(), 0);
  t[0]->data.f32[0] = 1.5f;
  t[1]->data.f32[0] = 0;
  zero->data.f32[0] = 0;
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  std::vector<ccv_nnc_graph_exec_t> nodes(kNodes);
  for (int i = 0; i < kNodes; i++) {
    ccv_nnc_tensor_t* in[2] = {t[i & 1], zero};
    ccv_nnc_tensor_t* out[1] = {t[(i + 1) & 1]};
    nodes[i] = ccv_nnc_graph_exec_new(g, ewsum(), ccv_nnc_no_hint, in, 2, out, 1);
    if (i) ccv_nnc_graph_exec_concat(g, nodes[i - 1], nodes[i]);
  }
  double best_default = 1e30, best_explicit = 1e30, best_exec = 1e30;
  check(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), "warm-up run");
  check(ccv_nnc_graph_run(g, 0, &nodes.front(), 1, &nodes.back(), 1, nullptr, nullptr), "warm-up explicit run");
  for (int r = 0; r < rounds; r++) {
    auto t0 = Clock::now();
    for (int k = 0; k < 20; k++) check(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), "run");
    best_default = std::min(best_default, seconds_since(t0) / 20 / kNodes);
    t0 = Clock::now();
    for (int k = 0; k < 20; k++)
      check(ccv_nnc_graph_run(g, 0, &nodes.front(), 1, &nodes.back(), 1, nullptr, nullptr), "explicit run");
    best_explicit = std::min(best_explicit, seconds_since(t0) / 20 / kNodes);
  }
  if (t[0]->data.f32[0] != 1.5f) {
    std::fprintf(stderr, "the chain computed %g, not 1.5\n", t[0]->data.f32[0]);
    return 1;
  }

  ccv_nnc_tensor_t* in[2] = {t[0], zero};
  ccv_nnc_tensor_t* out[1] = {t[1]};
  check(ccv_nnc_cmd_exec(ewsum(), ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), "warm-up exec");
  for (int r = 0; r < rounds; r++) {
    const auto t0 = Clock::now();
    for (int k = 0; k < kCalls; k++) check(ccv_nnc_cmd_exec(ewsum(), ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), "exec");
    best_exec = std::min(best_exec, seconds_since(t0) / kCalls);
  }

  std::printf("%-52s %9s %9s\n", "", "us", "target");
  std::printf("%-52s %9.4f %9.3f\n", "graph run, 10,000-node chain, default, per node", best_default * 1e6, 0.05);
  std::printf("%-52s %9.4f %9.3f\n", "graph run, 10,000-node chain, explicit ends, per node", best_explicit * 1e6, 0.05);
  std::printf("%-52s %9.4f %9.3f\n", "ccv_nnc_cmd_exec, EWSUM built each call, per call", best_exec * 1e6, 0.04);
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_free(t[0]);
  ccv_nnc_tensor_free(t[1]);
  ccv_nnc_tensor_free(zero);
  return 0;
}
