// bench-dynamic: what one eager call costs.
//
//   bench-dynamic [rounds]   (default 7; each figure is the minimum over rounds x 10 samples)
//
// A one-element ADD through ccv_nnc_dynamic_graph_exec, with a fresh output
// variable freed after each call (as eager code writes c = a + b in a loop):
//   traced   - a is a variable, so the call is traced (and pruned when c goes);
//   no_grad  - the same between set_no_grad(1) and (0);
// beside libtorch C++ eager (`a + b`) with requires_grad on a and under
// NoGradGuard, in the same run, and ccv_nnc_cmd_exec alone for the floor.
// Times are per call in the thread's CPU time (the wall-clock minimum beside).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

#if NNC_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using nnc_bench::Best;
// calls per sample, seconds per call
template <class F>
Best best_of(int samples, int calls, F&& f) {
  return nnc_bench::best_of(samples, calls, [&] {
    for (int k = 0; k < calls; k++) f();
  });
}

ccv_nnc_tensor_param_t one_float() {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = 1;
  return p;
}

void row(const char* name, Best b, double peer) {
  if (peer > 0)
    std::printf("%-34s %8.3f us  (wall %8.3f)   %.2fx libtorch\n", name, b.cpu * 1e6, b.wall * 1e6, b.cpu / peer);
  else
    std::printf("%-34s %8.3f us  (wall %8.3f)\n", name, b.cpu * 1e6, b.wall * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int samples = rounds * 10, calls = 2000;
  ccv_nnc_init();
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  ccv_nnc_tensor_variable_t a = ccv_nnc_tensor_variable_new(g, one_float());
  ccv_nnc_tensor_variable_t b = ccv_nnc_tensor_constant_new(g, one_float());
  ccv_nnc_tensor_from_variable(g, a)->data.f32[0] = 1;
  ccv_nnc_tensor_from_variable(g, b)->data.f32[0] = 2;
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = p.blas.a[1] = 1;
  const ccv_nnc_cmd_t add = ccv_nnc_cmd(CCV_NNC_ADD_FORWARD, nullptr, p, 0);
  ccv_nnc_tensor_variable_t in[2] = {a, b};
  auto call = [&] {
    ccv_nnc_tensor_variable_t c = ccv_nnc_tensor_variable_new(g);
    ccv_nnc_dynamic_graph_exec(g, add, ccv_nnc_no_hint, 0, in, 2, &c, 1, 0, 0);
    ccv_nnc_tensor_variable_free(g, c);
  };
  call();
  const Best traced = best_of(samples, calls, call);
  ccv_nnc_dynamic_graph_set_no_grad(g, 1);
  const Best no_grad = best_of(samples, calls, call);
  ccv_nnc_dynamic_graph_set_no_grad(g, 0);
  ccv_nnc_tensor_t* ta = ccv_nnc_tensor_from_variable(g, a);
  ccv_nnc_tensor_t* tb = ccv_nnc_tensor_from_variable(g, b);
  ccv_nnc_tensor_t* tc = ccv_nnc_tensor_new(0, one_float(), 0);
  ccv_nnc_tensor_t* tin[2] = {ta, tb};
  const Best floor = best_of(samples, calls, [&] { ccv_nnc_cmd_exec(add, ccv_nnc_no_hint, 0, tin, 2, &tc, 1, nullptr); });
  double torch_traced = 0, torch_no_grad = 0;
#if NNC_HAVE_TORCH
  torch::set_num_threads(1);
  torch::Tensor x = torch::ones({1}, torch::requires_grad());
  torch::Tensor y = torch::full({1}, 2.0);
  const Best tt = best_of(samples, calls, [&] {
    torch::Tensor z = x + y;
    (void)z;
  });
  Best tn;
  {
    torch::NoGradGuard guard;
    tn = best_of(samples, calls, [&] {
      torch::Tensor z = x + y;
      (void)z;
    });
  }
  torch_traced = tt.cpu;
  torch_no_grad = tn.cpu;
  std::printf("libtorch %s, 1 thread\n", TORCH_VERSION);
  row("libtorch a + b (requires_grad)", tt, 0);
  row("libtorch a + b (NoGradGuard)", tn, 0);
#else
  std::printf("libtorch: not built in (configure with NNC_BENCH_TORCH=ON and libtorch-dev installed)\n");
#endif
  row("dynamic_graph_exec ADD, traced", traced, torch_traced);
  row("dynamic_graph_exec ADD, no_grad", no_grad, torch_no_grad);
  row("ccv_nnc_cmd_exec ADD (the floor)", floor, 0);
  std::printf("trace after the loops: %d execs, %d tensor symbols\n", ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC),
              ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_TENSOR));
  ccv_nnc_tensor_free(tc);
  ccv_nnc_dynamic_graph_free(g);
  return 0;
}
