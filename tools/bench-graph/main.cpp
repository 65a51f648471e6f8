// bench-graph: per-node cost of the concrete graph. A chain of 10,000
// one-element EWSUM nodes (y_i = y_{i-1} + x) run with ccv_nnc_graph_run,
// against the same commands through ccv_nnc_cmd_exec in a loop, and against
// libtorch's at::add_out into preallocated outputs with one thread.
//
// Then static scheduling: 8 independent chains run with a schedule on 2
// streams against one on 1 stream (time of one whole run, ratio 2 / 1):
// chains of GEMMs (the kernels use both cores each, OpenBLAS under the
// library's compute lock) and chains of mid-sized EWSUMs (each small enough
// to run on one core).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

// 8 chains of `length` nodes: GEMM (y = y_prev . w, side x side) or EWSUM
// (y = y_prev + x, `side` elements). Returns ms per run for 1 and 2 streams.
void chains(bool gemm, int side, int length, const char* label) {
  constexpr int kChains = 8;
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  if (gemm) {
    p.dim[0] = side;
    p.dim[1] = side;
  } else {
    p.dim[0] = side;
  }
  std::vector<ccv_nnc_tensor_t*> all;
  auto fresh = [&](float v) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
    const size_t n = ccv_nnc_tensor_count(t->info);
    for (size_t i = 0; i < n; i++) t->data.f32[i] = v * static_cast<float>((i % 7) + 1) / 7.f;
    all.push_back(t);
    return t;
  };
  ccv_nnc_tensor_t* w = fresh(gemm ? 1.f / static_cast<float>(side) : 0.001f);
  ccv_nnc_cmd_param_t params;
  std::memset(&params, 0, sizeof(params));
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(gemm ? CCV_NNC_GEMM_FORWARD : CCV_NNC_EWSUM_FORWARD, nullptr, params, 0);
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  for (int c = 0; c < kChains; c++) {
    ccv_nnc_tensor_t* prev = fresh(1.f);
    ccv_nnc_graph_exec_t last{};
    for (int k = 0; k < length; k++) {
      ccv_nnc_tensor_t* y = fresh(0.f);
      ccv_nnc_tensor_t* in[] = {prev, w};
      const ccv_nnc_graph_exec_t e = ccv_nnc_graph_exec_new(g, cmd, ccv_nnc_no_hint, in, 2, &y, 1);
      if (k) ccv_nnc_graph_exec_concat(g, last, e);
      last = e;
      prev = y;
    }
  }
  double ms[2] = {0, 0};
  for (int streams = 1; streams <= 2; streams++) {
    ccv_nnc_graph_static_schedule_t* s = ccv_nnc_graph_static_schedule_new(g, CCV_STREAM_CONTEXT_CPU, streams, nullptr, 0, nullptr, 0);
    if (!s || ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr) != 0) {
      std::fprintf(stderr, "bench-graph: schedule failed: %s\n", ccv_nnc_error_message());
      std::exit(1);
    }
    ms[streams - 1] = nnc_bench::time_ms([&] { ccv_nnc_graph_run_with_schedule(g, 0, s, nullptr, nullptr); });
    ccv_nnc_graph_static_schedule_free(s);
  }
  std::printf("  %-34s %9.3f %9.3f   %.3fx\n", label, ms[0], ms[1], ms[1] / ms[0]);
  ccv_nnc_graph_free(g);
  for (auto* t : all) ccv_nnc_tensor_free(t);
}

void streams_bench() {
  std::printf("\n8 independent chains, one run (ms): 1 stream, 2 streams, ratio 2/1\n");
  chains(true, 256, 8, "GEMM 256x256x256, 8 per chain");
  chains(true, 64, 32, "GEMM 64x64x64, 32 per chain");
  chains(false, 32768, 32, "EWSUM 32768 floats, 32 per chain");
}

}  // namespace

int main() {
  ccv_nnc_init();
  constexpr int kNodes = 10000;
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = 1;
  std::vector<ccv_nnc_tensor_t*> t(kNodes + 1);
  for (auto& x : t) x = ccv_nnc_tensor_new(nullptr, p, 0);
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, p, 0);
  x->data.f32[0] = 1;
  t[0]->data.f32[0] = 0;
  ccv_nnc_cmd_param_t params;
  std::memset(&params, 0, sizeof(params));
  const ccv_nnc_cmd_t sum = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, params, 0);
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  ccv_nnc_graph_exec_t prev{};
  for (int i = 0; i < kNodes; i++) {
    ccv_nnc_tensor_t* in[] = {t[static_cast<size_t>(i)], x};
    ccv_nnc_tensor_t* out[] = {t[static_cast<size_t>(i) + 1]};
    const ccv_nnc_graph_exec_t e = ccv_nnc_graph_exec_new(g, sum, ccv_nnc_no_hint, in, 2, out, 1);
    if (i) ccv_nnc_graph_exec_concat(g, prev, e);
    prev = e;
  }
  if (ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr) != 0 || t[kNodes]->data.f32[0] != kNodes) {
    std::fprintf(stderr, "bench-graph: wrong result: %s\n", ccv_nnc_error_message());
    return 1;
  }
  const double graph_us = nnc_bench::time_us_per_call([&] { ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr); }, 200) / kNodes;
  const double exec_us = nnc_bench::time_us_per_call([&] {
    for (int i = 0; i < kNodes; i++) {
      ccv_nnc_tensor_t* in[] = {t[static_cast<size_t>(i)], x};
      ccv_nnc_tensor_t* out[] = {t[static_cast<size_t>(i) + 1]};
      ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr);
    }
  }, 200) / kNodes;
  double torch_us = -1;
#ifdef NNC_HAVE_TORCH
  at::set_num_threads(1);
  std::vector<at::Tensor> tt;
  for (int i = 0; i <= kNodes; i++) tt.push_back(at::zeros({1}));
  at::Tensor tx = at::ones({1});
  torch_us = nnc_bench::time_us_per_call([&] {
    for (int i = 0; i < kNodes; i++) at::add_out(tt[static_cast<size_t>(i) + 1], tt[static_cast<size_t>(i)], tx);
  }, 50) / kNodes;
#endif
  std::printf("per node, chain of %d one-element EWSUM (us)\n", kNodes);
  std::printf("  ccv_nnc_graph_run         %8.4f\n", graph_us);
  std::printf("  ccv_nnc_cmd_exec loop     %8.4f\n", exec_us);
  if (torch_us > 0)
    std::printf("  libtorch at::add_out      %8.4f   graph / libtorch = %.3fx\n", torch_us, graph_us / torch_us);
  else
    std::printf("  libtorch at::add_out           -   (built without the libtorch peer)\n");
  ccv_nnc_graph_free(g);
  for (auto* y : t) ccv_nnc_tensor_free(y);
  ccv_nnc_tensor_free(x);
  streams_bench();
  return 0;
}
