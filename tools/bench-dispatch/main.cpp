// bench-dispatch: what the library itself costs around a trivial kernel.
//
//   bench-dispatch [rounds]   (default 7: 70 samples of each figure, the minimum kept)
//
// 1. A chain of 10,000 one-element EWSUM nodes run by ccv_nnc_graph_run with
//    the default sources / destinations, and with the chain's ends passed
//    explicitly: microseconds per node. Target: 0.05 us either way.
// 2. ccv_nnc_cmd_exec of a one-element EWSUM with the command built in the
//    loop, as libnnc programs write it (CMD_EWSUM_FORWARD() each call):
//    microseconds per call. Target: 0.04 us.
// The machine may be shared: each figure is the minimum over many short
// samples, timed in the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), so
// time spent descheduled by other processes does not count; the wall-clock
// minimum is printed beside it.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using nnc_bench::Best;
using nnc_bench::best_of;

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
  constexpr int kCalls = 100000;
  ccv_nnc_init();
  const char* env = std::getenv("NNC_NUM_THREADS");
  std::printf("bench-dispatch: %s threads (%s), min of %d samples\n", env ? env : std::to_string(std::thread::hardware_concurrency()).c_str(),
              env ? "NNC_NUM_THREADS" : "cores", 10 * rounds);

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
  check(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), "warm-up run");
  check(ccv_nnc_graph_run(g, 0, &nodes.front(), 1, &nodes.back(), 1, nullptr, nullptr), "warm-up explicit run");
  const int samples = 10 * rounds;
  const Best by_default = best_of(samples, kNodes, [&] {
    check(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), "run");
  });
  const Best by_range = best_of(samples, kNodes, [&] {
    check(ccv_nnc_graph_run(g, 0, &nodes.front(), 1, &nodes.back(), 1, nullptr, nullptr), "explicit run");
  });
  if (t[0]->data.f32[0] != 1.5f) {
    std::fprintf(stderr, "the chain computed %g, not 1.5\n", t[0]->data.f32[0]);
    return 1;
  }

  ccv_nnc_tensor_t* in[2] = {t[0], zero};
  ccv_nnc_tensor_t* out[1] = {t[1]};
  check(ccv_nnc_cmd_exec(ewsum(), ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), "warm-up exec");
  const Best exec = best_of(samples, kCalls, [&] {
    for (int k = 0; k < kCalls; k++) check(ccv_nnc_cmd_exec(ewsum(), ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), "exec");
  });

  std::printf("%-52s %9s %9s %9s\n", "", "us (cpu)", "us (wall)", "target");
  std::printf("%-52s %9.4f %9.4f %9.3f\n", "graph run, 10,000-node chain, default, per node", by_default.cpu * 1e6,
              by_default.wall * 1e6, 0.05);
  std::printf("%-52s %9.4f %9.4f %9.3f\n", "graph run, 10,000-node chain, explicit ends, per node", by_range.cpu * 1e6,
              by_range.wall * 1e6, 0.05);
  std::printf("%-52s %9.4f %9.4f %9.3f\n", "ccv_nnc_cmd_exec, EWSUM built each call, per call", exec.cpu * 1e6,
              exec.wall * 1e6, 0.04);
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_free(t[0]);
  ccv_nnc_tensor_free(t[1]);
  ccv_nnc_tensor_free(zero);
  return 0;
}
