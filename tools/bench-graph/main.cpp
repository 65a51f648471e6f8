// bench-graph: per-node cost of the concrete graph. A chain of 10,000
// one-element EWSUM nodes (y_i = y_{i-1} + x) run with ccv_nnc_graph_run,
// against the same commands through ccv_nnc_cmd_exec in a loop, and against
// libtorch's at::add_out into preallocated outputs with one thread.
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#ifdef NNC_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

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
  return 0;
}
