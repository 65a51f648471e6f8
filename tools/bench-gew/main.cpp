// bench-gew: the memory-bound GPU_REF element-wise kernels on GPU 0, on
// 16M-element (2^24) tensors in 32F and 16F: EWSUM (a + b), EWPROD (a b),
// RELU forward and backward (from y), ADD of a bias (x[16384, 1024] +
// b[1024]), MUL by a one-element tensor, SET, DATATYPE_CONVERSION 32F -> 16F
// and 16F -> 32F, an SGD step with momentum and an ADAM step (in place, as a
// training step runs them). Each row runs on the vector kernels (the default)
// and on the scalar ones (NNC_GPU_EW_VEC=0), each timed as 20 calls queued on
// a GPU stream then one wait, median of 7 such batches after a warm-up batch
// (so the figure is the device's time, not a host round trip per call), and
// printed in GB/s of the bytes the op must move (each input read once, each
// output written once) beside PyTorch's figure for the same op (peer.py, run
// first in its own process, the same timing), with the time ratios
// vector / scalar and vector / PyTorch (below 1: ours is faster).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

constexpr int kN = 1 << 24;
constexpr int kCalls = 20;

ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// Device milliseconds per call of f queued on `s`: median over 7 batches of kCalls.
double batch_ms(ccv_nnc_stream_context_t* s, const std::function<void()>& f) {
  for (int i = 0; i < kCalls; i++) f();
  ccv_nnc_stream_context_wait(s);
  std::vector<double> t;
  for (int r = 0; r < 7; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; i++) f();
    ccv_nnc_stream_context_wait(s);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kCalls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string name;
  double bytes;
  ccv_nnc_cmd_t c;
  std::vector<ccv_nnc_tensor_t*> in, out;
};

}  // namespace

int main() {
  if (!nnc_bench::gpu_start()) return 0;
  // PyTorch first, in its own process, so the two never share the GPU.
  const std::map<std::string, double> torch_ms = nnc_bench::run_peer(NNC_BENCH_PEER, "tools/bench-gew/peer.py");
  std::printf("GPU 0: %s; %d elements; ms per call = median of 7 batches of %d calls queued on a stream\n",
              nnc_bench::gpu0_name().c_str(), kN, kCalls);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  std::vector<ccv_nnc_tensor_t*> owned;
  auto t = [&](std::vector<int> d, int dt) {
    // Bytes 0x3c: 0.0115 in fp32, 1.06 in fp16: finite, positive (RELU's
    // backward passes g), no denormals.
    ccv_nnc_tensor_t* x = nnc_bench::gpu_tensor(d, dt, CCV_TENSOR_FORMAT_NHWC, 0x3c);
    if (!x) {
      std::printf("cannot allocate a tensor of %d elements\n", kN);
      std::exit(0);
    }
    owned.push_back(x);
    return x;
  };
  std::vector<Row> rows;
  for (int dt : {CCV_32F, CCV_16F}) {
    const char* tag = dt == CCV_16F ? "16F" : "32F";
    const double es = dt == CCV_16F ? 2 : 4;
    ccv_nnc_tensor_t *a = t({kN}, dt), *b = t({kN}, dt), *y = t({kN}, dt);
    auto name = [&](const char* op) { return std::string(op) + "-" + tag; };
    rows.push_back({name("ewsum"), 3 * es * kN, cmd(CCV_NNC_EWSUM_FORWARD), {a, b}, {y}});
    rows.push_back({name("ewprod"), 3 * es * kN, cmd(CCV_NNC_EWPROD_FORWARD), {a, b}, {y}});
    rows.push_back({name("relu-fwd"), 2 * es * kN, cmd(CCV_NNC_RELU_FORWARD), {a}, {y}});
    rows.push_back({name("relu-bwd"), 3 * es * kN, cmd(CCV_NNC_RELU_BACKWARD), {a, nullptr, b}, {y}});
    ccv_nnc_tensor_t* x2 = t({kN / 1024, 1024}, dt);
    ccv_nnc_tensor_t* y2 = t({kN / 1024, 1024}, dt);
    ccv_nnc_tensor_t* bias = t({1024}, dt);
    ccv_nnc_cmd_t add = cmd(CCV_NNC_ADD_FORWARD);
    add.info.blas.a[0] = add.info.blas.a[1] = 1;
    rows.push_back({name("bias-add"), 2 * es * kN, add, {x2, bias}, {y2}});
    ccv_nnc_tensor_t* one = t({1}, dt);
    ccv_nnc_cmd_t mul = cmd(CCV_NNC_MUL_FORWARD);
    mul.info.blas.a[0] = 1;
    rows.push_back({name("mul-1elem"), 2 * es * kN, mul, {a, one}, {y}});
    ccv_nnc_cmd_t set = cmd(CCV_NNC_SET_FORWARD);
    set.info.blas.a[0] = 0.5f;
    rows.push_back({name("set"), es * kN, set, {}, {y}});
    ccv_nnc_tensor_t* m = t({kN}, dt);
    ccv_nnc_tensor_t* v = t({kN}, dt);
    ccv_nnc_cmd_t sgd = cmd(CCV_NNC_SGD_FORWARD);
    sgd.info.sgd.rate = 1e-6f, sgd.info.sgd.scale = 1, sgd.info.sgd.momentum = 0.9f;
    // g a m -> a m: reads 3, writes 2.
    rows.push_back({name("sgd-step"), 5 * es * kN, sgd, {b, a, m}, {a, m}});
    ccv_nnc_cmd_t adam = cmd(CCV_NNC_ADAM_FORWARD);
    adam.info.adam.step = 1, adam.info.adam.rate = 1e-6f, adam.info.adam.scale = 1;
    adam.info.adam.beta1 = 0.9f, adam.info.adam.beta2 = 0.999f, adam.info.adam.epsilon = 1e-8f;
    // g a m v -> a m v: reads 4, writes 3.
    rows.push_back({name("adam-step"), 7 * es * kN, adam, {b, a, m, v}, {a, m, v}});
  }
  ccv_nnc_tensor_t *f32 = t({kN}, CCV_32F), *f16 = t({kN}, CCV_16F);
  rows.push_back({"convert-32F-16F", 6.0 * kN, cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {f32}, {f16}});
  rows.push_back({"convert-16F-32F", 6.0 * kN, cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {f16}, {f32}});

  std::printf("%-18s %10s %10s %10s %10s %10s %10s %9s %9s\n", "row", "vec ms", "scalar ms", "torch ms", "vec GB/s",
              "scal GB/s", "torch GB/s", "vec/scal", "vec/torch");
  for (Row& r : rows) {
    if (!nnc_bench::first_call(r.name.c_str(), 18, r.c, ccv_nnc_no_hint, r.in, r.out)) continue;
    auto run = [&] {
      ccv_nnc_cmd_exec(r.c, ccv_nnc_no_hint, 0, r.in.data(), static_cast<int>(r.in.size()), r.out.data(),
                       static_cast<int>(r.out.size()), s);
    };
    unsetenv("NNC_GPU_EW_VEC");
    const double vec = batch_ms(s, run);
    setenv("NNC_GPU_EW_VEC", "0", 1);
    const double scalar = batch_ms(s, run);
    unsetenv("NNC_GPU_EW_VEC");
    const auto it = torch_ms.find(r.name);
    char tcol[32] = "-", tgb[32] = "-", tratio[32] = "-";
    if (it != torch_ms.end()) {
      std::snprintf(tcol, sizeof tcol, "%.4f", it->second);
      std::snprintf(tgb, sizeof tgb, "%.0f", r.bytes / (it->second * 1e-3) / 1e9);
      std::snprintf(tratio, sizeof tratio, "%.2f", vec / it->second);
    }
    std::printf("%-18s %10.4f %10.4f %10s %10.0f %10.0f %10s %9.2f %9s\n", r.name.c_str(), vec, scalar, tcol,
                r.bytes / (vec * 1e-3) / 1e9, r.bytes / (scalar * 1e-3) / 1e9, tgb, vec / scalar, tratio);
  }
  if (ccv_nnc_stream_context_error(s) != CCV_NNC_EXEC_SUCCESS) std::printf("stream error: %s\n", ccv_nnc_error_message());
  ccv_nnc_stream_context_free(s);
  for (ccv_nnc_tensor_t* x : owned) ccv_nnc_tensor_free(x);
  return 0;
}
