// bench-dynamic: what one eager call costs, and what a training step holds.
//
//   bench-dynamic [rounds]   (default 7; each figure is the minimum over rounds x 10 samples)
//   bench-dynamic mlp [layers width batch]   (the memory table only; default 20 1024 64)
//
// Memory: one training step of an MLP (layers x (x W^T + b, relu), loss =
// sum((h - target)^2), ccv_nnc_dynamic_graph_minimize with SGD, momentum 0.9),
// written as eager code frees its temporaries, in immediate mode and in the
// deferred mode (the loss read after the step: the step is one planned graph;
// and the loss read before minimize, as a training loop that logs it does:
// the forward runs, then backward and update as a second graph), beside
// PyTorch eager's same step (torch_mlp_peak.py through /usr/bin/python3, its
// allocations counted from torch.profiler's memory events). A step runs
// first (it makes the momenta); the next is measured. "held" is the tensor
// storage held before the step (parameters, momenta; NNC's also x and the
// target), "peak extra" the most the step held above it, from
// ccv_nnc_dynamic_graph_memory_stats (storage handed out, the recording's
// arena included).
//
// A one-element ADD through ccv_nnc_dynamic_graph_exec, with a fresh output
// variable freed after each call (as eager code writes c = a + b in a loop):
//   traced   - a is a variable, so the call is traced (and pruned when c goes);
//   no_grad  - the same between set_no_grad(1) and (0);
// beside libtorch C++ eager (`a + b`) with requires_grad on a and under
// NoGradGuard, in the same run, and ccv_nnc_cmd_exec alone for the floor.
// Traced calls go on the graph's tape and leave it when c is freed, so the
// traced row is the cost of a call whose result is dropped; the chain row
// (32 adds kept, then the gradient of the last with respect to a) is the
// cost per call when the trace is used.
// Times are per call in the thread's CPU time (the wall-clock minimum beside).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cmath>
#include <ctime>
#include <string>
#include <vector>

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

ccv_nnc_tensor_param_t matrix(int rows, int cols) {
  ccv_nnc_tensor_param_t p = one_float();
  p.dim[0] = rows;
  p.dim[1] = cols;
  return p;
}

struct Peak {
  double held = 0, extra = 0, ms = 0;
  float loss = 0;
};

// mode 0: immediate; 1: deferred, the loss read after the step; 2: deferred, the loss read before minimize.
Peak mlp_step_peak(int mode, int layers, int width, int batch) {
  ccv_nnc_dynamic_graph_t* g = ccv_nnc_dynamic_graph_new();
  using V = ccv_nnc_tensor_variable_t;
  const V x = ccv_nnc_tensor_constant_new(g, matrix(batch, width));
  const V target = ccv_nnc_tensor_constant_new(g, matrix(batch, width));
  std::vector<V> params, momenta;
  unsigned seed = 42;
  auto uniform = [&](float bound) {
    seed = seed * 1664525u + 1013904223u;
    return bound * (2.f * static_cast<float>(seed >> 8) / 16777216.f - 1.f);
  };
  auto fill = [&](V v, float bound) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_variable(g, v);
    for (size_t k = 0; k < ccv_nnc_tensor_count(t->info); k++) t->data.f32[k] = uniform(bound);
  };
  fill(x, 1), fill(target, 1);
  const float bound = 1.f / std::sqrt(static_cast<float>(width));
  for (int l = 0; l < layers; l++) {
    params.push_back(ccv_nnc_tensor_variable_new(g, matrix(width, width)));
    fill(params.back(), bound);
    ccv_nnc_tensor_param_t b = one_float();
    b.dim[0] = width;
    params.push_back(ccv_nnc_tensor_variable_new(g, b));
    fill(params.back(), bound);
  }
  for (size_t k = 0; k < params.size(); k++) momenta.push_back(ccv_nnc_tensor_variable_new(g));
  if (mode) ccv_nnc_dynamic_graph_set_deferred(g, 1);
  ccv_nnc_cmd_param_t gp;
  std::memset(&gp, 0, sizeof(gp));
  gp.blas.a[0] = gp.blas.a[1] = 1;
  gp.blas.transpose_b[0] = 0;
  gp.blas.transpose_b[1] = 1;
  const ccv_nnc_cmd_t gemm = ccv_nnc_cmd(CCV_NNC_GEMM_FORWARD, nullptr, gp, 0);
  const ccv_nnc_cmd_t relu = ccv_nnc_cmd(CCV_NNC_RELU_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  ccv_nnc_cmd_param_t sp;
  std::memset(&sp, 0, sizeof(sp));
  sp.blas.a[0] = 1;
  sp.blas.a[1] = -1;
  const ccv_nnc_cmd_t minus = ccv_nnc_cmd(CCV_NNC_ADD_FORWARD, nullptr, sp, 0);
  const ccv_nnc_cmd_t square = ccv_nnc_cmd(CCV_NNC_EWPROD_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  ccv_nnc_cmd_param_t rp;
  std::memset(&rp, 0, sizeof(rp));
  rp.reduce.axis[0] = 0;
  rp.reduce.axis[1] = 1;
  rp.reduce.count = 2;
  const ccv_nnc_cmd_t sum = ccv_nnc_cmd(CCV_NNC_REDUCE_SUM_FORWARD, nullptr, rp, 0);
  ccv_nnc_cmd_param_t op;
  std::memset(&op, 0, sizeof(op));
  op.sgd.rate = 0.01f;
  op.sgd.scale = 1;
  op.sgd.momentum = 0.9f;
  const ccv_nnc_cmd_t sgd = ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, op, 0);
  auto run1 = [&](ccv_nnc_cmd_t cmd, std::vector<V> in, V out) {
    if (ccv_nnc_dynamic_graph_exec(g, cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), &out, 1, 0, nullptr) != 0) {
      std::fprintf(stderr, "bench-dynamic: %s\n", ccv_nnc_error_message());
      std::exit(1);
    }
  };
  Peak result;
  for (int step = 0; step < 2; step++) {
    uint64_t before = 0;
    if (step == 1) ccv_nnc_dynamic_graph_memory_stats(g, &before, nullptr, 1);
    const auto start = std::chrono::steady_clock::now();
    V h = x;
    for (int l = 0; l < layers; l++) {
      const V y = ccv_nnc_tensor_variable_new(g), r = ccv_nnc_tensor_variable_new(g);
      run1(gemm, {h, params[static_cast<size_t>(2 * l)], params[static_cast<size_t>(2 * l + 1)]}, y);
      run1(relu, {y}, r);
      ccv_nnc_tensor_variable_free(g, y);
      if (h != x) ccv_nnc_tensor_variable_free(g, h);
      h = r;
    }
    const V e = ccv_nnc_tensor_variable_new(g), sq = ccv_nnc_tensor_variable_new(g), loss = ccv_nnc_tensor_variable_new(g);
    run1(minus, {h, target}, e);
    ccv_nnc_tensor_variable_free(g, h);
    run1(square, {e, e}, sq);
    ccv_nnc_tensor_variable_free(g, e);
    run1(sum, {sq}, loss);
    ccv_nnc_tensor_variable_free(g, sq);
    if (mode == 2) result.loss = ccv_nnc_tensor_from_variable(g, loss)->data.f32[0];
    ccv_nnc_dynamic_graph_minimize(g, sgd, &loss, 1, nullptr, params.data(), static_cast<int>(params.size()), momenta.data(), 0, nullptr);
    if (*ccv_nnc_error_message()) {
      std::fprintf(stderr, "bench-dynamic: %s\n", ccv_nnc_error_message());
      std::exit(1);
    }
    if (mode != 2) result.loss = ccv_nnc_tensor_from_variable(g, loss)->data.f32[0];  // mode 1: runs the whole step
    ccv_nnc_tensor_variable_free(g, loss);
    if (mode == 2) ccv_nnc_dynamic_graph_flush(g);  // the backward and the update
    if (step == 1) {
      uint64_t peak = 0;
      ccv_nnc_dynamic_graph_memory_stats(g, nullptr, &peak, 0);
      result.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      result.held = static_cast<double>(before);
      result.extra = static_cast<double>(peak - before);
    }
  }
  ccv_nnc_dynamic_graph_free(g);
  return result;
}

}  // namespace

void memory_table(int layers, int width, int batch) {
  const char* names[3] = {"NNC immediate", "NNC deferred (loss read after the step)", "NNC deferred (loss read before minimize)"};
  Peak p[3];
  for (int mode = 0; mode < 3; mode++) p[mode] = mlp_step_peak(mode, layers, width, batch);
  double torch_held = 0, torch_extra = 0;
  const std::string cmd = std::string("/usr/bin/python3 ") + NNC_BENCH_DYNAMIC_PEER + " " + std::to_string(layers) + " " +
                          std::to_string(width) + " " + std::to_string(batch) + " 2>/dev/null";
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f)) std::sscanf(line, "held %lf peak_extra %lf", &torch_held, &torch_extra);
    pclose(f);
  }
  const double mib = 1024.0 * 1024.0;
  std::printf("\none MLP training step: %d x (linear %d -> %d, relu), batch %d, SGD momentum 0.9 (the second step measured)\n", layers, width,
              width, batch);
  std::printf("%-42s %10s %16s %10s %10s %12s\n", "", "held MiB", "peak extra MiB", "ms", "loss", "extra/torch");
  for (int mode = 0; mode < 3; mode++) {
    std::printf("%-42s %10.1f %16.1f %10.1f %10.3f", names[mode], p[mode].held / mib, p[mode].extra / mib, p[mode].ms, p[mode].loss);
    if (torch_extra > 0) std::printf(" %11.2fx", p[mode].extra / torch_extra);
    std::printf("\n");
  }
  if (torch_extra > 0)
    std::printf("%-42s %10.1f %16.1f   (torch.profiler memory events)\n", "PyTorch eager", torch_held / mib, torch_extra / mib);
  else
    std::printf("PyTorch eager: not measured (%s failed)\n", cmd.c_str());
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "mlp") == 0) {
    ccv_nnc_init();
    memory_table(argc > 2 ? std::atoi(argv[2]) : 20, argc > 3 ? std::atoi(argv[3]) : 1024, argc > 4 ? std::atoi(argv[4]) : 64);
    return 0;
  }
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
  // A chain kept for a backward: 32 adds, then the gradient of the last
  // with respect to a (the tape goes into the trace; the backward is
  // compiled and run), per add.
  constexpr int kChain = 32;
  auto chain = [&] {
    ccv_nnc_tensor_variable_t made[kChain];
    ccv_nnc_tensor_variable_t y = a;
    for (int k = 0; k < kChain; k++) {
      made[k] = ccv_nnc_tensor_variable_new(g);
      ccv_nnc_tensor_variable_t cin[2] = {y, b};
      ccv_nnc_dynamic_graph_exec(g, add, ccv_nnc_no_hint, 0, cin, 2, &made[k], 1, 0, 0);
      y = made[k];
    }
    ccv_nnc_tensor_variable_t da = ccv_nnc_tensor_variable_new(g);
    ccv_nnc_dynamic_graph_backward(g, &y, 1, 0, &a, 1, &da, 1, 0);
    ccv_nnc_tensor_variable_free(g, da);
    for (int k = 0; k < kChain; k++) ccv_nnc_tensor_variable_free(g, made[k]);
  };
  chain();
  if (*ccv_nnc_error_message()) std::printf("chain: %s\n", ccv_nnc_error_message());
  Best chained = best_of(samples, 20, chain);
  chained.cpu /= kChain;
  chained.wall /= kChain;
  ccv_nnc_dynamic_graph_set_no_grad(g, 1);
  const Best no_grad = best_of(samples, calls, call);
  ccv_nnc_dynamic_graph_set_no_grad(g, 0);
  ccv_nnc_tensor_t* ta = ccv_nnc_tensor_from_variable(g, a);
  ccv_nnc_tensor_t* tb = ccv_nnc_tensor_from_variable(g, b);
  ccv_nnc_tensor_t* tc = ccv_nnc_tensor_new(0, one_float(), 0);
  ccv_nnc_tensor_t* tin[2] = {ta, tb};
  const Best floor = best_of(samples, calls, [&] { ccv_nnc_cmd_exec(add, ccv_nnc_no_hint, 0, tin, 2, &tc, 1, nullptr); });
  double torch_traced = 0, torch_no_grad = 0, torch_chain = 0;
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
  Best tchain = best_of(samples, 20, [&] {
    torch::Tensor z = x;
    for (int k = 0; k < kChain; k++) z = z + y;
    z.backward();
    x.mutable_grad().reset();
  });
  tchain.cpu /= kChain;
  tchain.wall /= kChain;
  torch_traced = tt.cpu;
  torch_no_grad = tn.cpu;
  torch_chain = tchain.cpu;
  std::printf("libtorch %s, 1 thread\n", TORCH_VERSION);
  row("libtorch a + b (requires_grad)", tt, 0);
  row("libtorch a + b (NoGradGuard)", tn, 0);
  row("libtorch 32 adds + backward, per add", tchain, 0);
#else
  std::printf("libtorch: not built in (configure with NNC_BENCH_TORCH=ON and libtorch-dev installed)\n");
#endif
  row("dynamic_graph_exec ADD, traced", traced, torch_traced);
  row("dynamic_graph_exec ADD, no_grad", no_grad, torch_no_grad);
  row("32 ADDs + backward, per ADD", chained, torch_chain);
  row("ccv_nnc_cmd_exec ADD (the floor)", floor, 0);
  std::printf("trace after the loops: %d execs, %d tensor symbols\n", ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_GRAPH_EXEC),
              ccv_nnc_dynamic_graph_bookkeeping_count(g, CCV_NNC_SYMBOL_TENSOR));
  ccv_nnc_tensor_free(tc);
  ccv_nnc_dynamic_graph_free(g);
  memory_table(20, 1024, 64);
  return 0;
}
