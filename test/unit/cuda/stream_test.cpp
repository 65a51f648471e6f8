// GPU stream contexts on a GPU: work queued on CUDA streams returns before it
// ends and ccv_nnc_stream_context_wait makes it visible; signals order work
// between GPU streams and between GPU and CPU streams; cuBLAS on a stream; a
// concrete and a compiled graph run on a GPU stream give the values of a
// synchronous run; stream workspace in device memory; refusals. Every test
// skips, saying so, when no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/stream.hpp"
#include "unit/cuda/gpu.hpp"

using namespace nnc_gpu_test;

namespace {

ccv_nnc_tensor_param_t f32(int memory, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = memory;  // device 0
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}
constexpr int kCpu = CCV_TENSOR_CPU_MEMORY;
constexpr int kGpu = CCV_TENSOR_GPU_MEMORY;

ccv_nnc_cmd_t command(uint32_t id, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}
ccv_nnc_cmd_t scale(float a) {
  ccv_nnc_cmd_t c = command(CCV_NNC_SCALAR_MUL_FORWARD);
  c.info.blas.a[0] = a;
  return c;
}
ccv_nnc_cmd_t gemm(bool transpose_b) {
  ccv_nnc_cmd_t c = command(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = c.info.blas.a[1] = 1;
  if (transpose_b) c.info.blas.transpose_b[0] = 0, c.info.blas.transpose_b[1] = 1;
  return c;
}

struct Stream {
  ccv_nnc_stream_context_t* s;
  explicit Stream(int type) : s(ccv_nnc_stream_context_new(type)) {}
  ~Stream() { ccv_nnc_stream_context_free(s); }
  operator ccv_nnc_stream_context_t*() const { return s; }
};
constexpr int kGpuStream = CCV_STREAM_CONTEXT_GPU;  // device 0
// Under the CPU emulation (tools/gpu-emu) streams run their work only when
// the host waits for it, so work still queued is certain there, and these
// tests' sizes (there for a GPU's timing) shrink: elements >> kEmuShift.
#if NNC_GPU_EMU_TESTS
constexpr int kEmuShift = 12;
#else
constexpr int kEmuShift = 0;
#endif

std::string message() { return ccv_nnc_error_message(); }

// Queues `rounds` in-place multiplications of y by `a` (a large y: each round
// is a full pass over device memory, so the whole takes tens of milliseconds).
void queue_scalings(ccv_nnc_tensor_t* y, float a, int rounds, ccv_nnc_stream_context_t* s) {
  for (int r = 0; r < rounds; r++) ASSERT_EQ(exec(scale(a), ccv_nnc_no_hint, {y}, {y}, s), CCV_NNC_EXEC_SUCCESS) << message();
}

TEST(GpuStream, KernelOnAStreamReturnsBeforeItsWorkEndsAndWaitMakesItVisible) {
  NNC_REQUIRE_GPU();
  Stream s(kGpuStream);
  ASSERT_NE(s.s, nullptr) << message();
  // 2^26 floats (256 MiB): a pass reads and writes 512 MiB, ~0.2 ms on an H100;
  // 400 passes ~80 ms, far more than queueing them takes.
  constexpr int n = 1 << (26 - kEmuShift);
  constexpr int rounds = kEmuShift ? 40 : 400;
  constexpr float a = 1.001f;
  std::mt19937 rng(7);
  Owned host(f32(kCpu, {n}));
  fill(host, rng, 0.5f, 2.f);
  Owned dev = to_gpu(host);
  const cudaStream_t cs = nnc::cuda::stream_of(s, 0, "test");
  queue_scalings(dev, a, rounds, s);
  // Still running: the calls only queued the work.
  EXPECT_EQ(cudaStreamQuery(cs), cudaErrorNotReady);
  // Copy back on the stream (into pageable memory CUDA completes the copy
  // before returning, so this comes after the query), wait, compare with fp64:
  // 400 roundings of a product, each within 2^-24 relative: < 3e-5 relative.
  Owned back(f32(kCpu, {n}));
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {dev}, {back}, s), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(message(), "");
  EXPECT_EQ(cudaStreamQuery(cs), cudaSuccess);
  const double factor = std::pow(static_cast<double>(a), rounds);
  size_t bad = 0;
  for (size_t i = 0; i < static_cast<size_t>(n); i += kEmuShift ? 7 : 997) {
    const double want = host->data.f32[i] * factor;
    if (std::fabs(back->data.f32[i] - want) > 1e-4 * std::fabs(want) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": " << back->data.f32[i] << " vs " << want;
  }
  EXPECT_EQ(bad, 0u);
}

TEST(GpuStream, SignalBetweenTwoGpuStreamsOrdersTheirWork) {
  NNC_REQUIRE_GPU();
  Stream a(kGpuStream), b(kGpuStream);
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(kGpuStream);
  ASSERT_TRUE(a.s && b.s && sig) << message();
  constexpr int n = 1 << (24 - kEmuShift);
  std::mt19937 rng(11);
  Owned host(f32(kCpu, {n}));
  fill(host, rng);
  Owned x = to_gpu(host);
  Owned y(on_gpu(host->info)), z(on_gpu(host->info));
  // On a: y = 2x, then y += x twenty times (y = 22x, exact in fp32 for these
  // magnitudes up to rounding of each sum); on b after the signal: z = 0.5 y.
  // Without the signal b would read y part way (or before it is written).
  ASSERT_EQ(exec(scale(2), ccv_nnc_no_hint, {x}, {y}, a), CCV_NNC_EXEC_SUCCESS) << message();
  for (int r = 0; r < 20; r++) ASSERT_EQ(exec(command(CCV_NNC_EWSUM_FORWARD), ccv_nnc_no_hint, {y, x}, {y}, a), 0) << message();
  ccv_nnc_stream_context_emit_signal(a, sig);
  EXPECT_EQ(ccv_nnc_stream_signal_get_emitter(sig), a.s);
  ccv_nnc_stream_context_wait_signal(b, sig);
  ASSERT_EQ(exec(scale(0.5f), ccv_nnc_no_hint, {y}, {z}, b), CCV_NNC_EXEC_SUCCESS) << message();
  Owned back(host->info);
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {z}, {back}, b), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(b);
  // 21 roundings of sums of the same sign-scaled values: 21 * 2^-24 relative of
  // 22|x| at most, so 1e-5 relative (and 1e-6 absolute near zero).
  Owned want(host->info);
  for (int i = 0; i < n; i++) want->data.f32[i] = static_cast<float>(11.0 * host->data.f32[i]);
  expect_close(back, want, 1e-5f, 1e-6f, "z = 0.5 (2x + 20x)");
  ccv_nnc_stream_context_wait(a);
  ccv_nnc_stream_signal_free(sig);
}

TEST(GpuStream, CpuStreamWaitsForAGpuSignalAndGpuStreamForACpuSignal) {
  NNC_REQUIRE_GPU();
  Stream g(kGpuStream), c(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_signal_t* sig = ccv_nnc_stream_signal_new(kGpuStream);
  ASSERT_TRUE(g.s && c.s && sig) << message();
  constexpr int n = 1 << (24 - kEmuShift);
  std::mt19937 rng(13);
  Owned host(f32(kCpu, {n}));
  fill(host, rng, 0.5f, 2.f);
  Owned dev = to_gpu(host);
  // GPU -> CPU: the CPU stream's copy back (a synchronous transfer on its
  // worker, on the legacy stream, which does not wait for a non-blocking
  // stream by itself) runs after the GPU stream's 100 scalings.
  queue_scalings(dev, 1.001f, 100, g);
  ccv_nnc_stream_context_emit_signal(g, sig);
  ccv_nnc_stream_context_wait_signal(c, sig);
  Owned back(host->info);
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {dev}, {back}, c), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(c);
  EXPECT_EQ(message(), "");
  const double factor = std::pow(1.001, 100);
  for (int i = 0; i < n; i += kEmuShift ? 7 : 4099)
    ASSERT_NEAR(back->data.f32[i], host->data.f32[i] * factor, 2e-5 * host->data.f32[i] * factor) << i;
  // CPU -> GPU: a host buffer filled on the CPU stream (after a delay) is
  // uploaded by the GPU stream after the signal.
  static Owned* s_source = nullptr;
  Owned source(f32(kCpu, {1024}));
  for (int i = 0; i < 1024; i++) source->data.f32[i] = -1;
  s_source = &source;
  ccv_nnc_stream_context_add_callback(c, [](void*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < 1024; i++) (*s_source)->data.f32[i] = static_cast<float>(i);
  }, nullptr);
  ccv_nnc_stream_signal_t* cpu_sig = ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_CPU);
  ccv_nnc_stream_context_emit_signal(c, cpu_sig);
  ccv_nnc_stream_context_wait_signal(g, cpu_sig);
  Owned up(on_gpu(source->info)), down(source->info);
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {source}, {up}, g), CCV_NNC_EXEC_SUCCESS) << message();
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {up}, {down}, g), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(g);
  for (int i = 0; i < 1024; i++) ASSERT_EQ(down->data.f32[i], static_cast<float>(i)) << i;
  ccv_nnc_stream_context_wait(c);
  ccv_nnc_stream_signal_free(cpu_sig);
  ccv_nnc_stream_signal_free(sig);
}

// Row-major C = A B^T + bias in fp64.
std::vector<double> reference_gemm(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b, const ccv_nnc_tensor_t* bias) {
  const int M = a->info.dim[0], K = a->info.dim[1], N = b->info.dim[0];
  std::vector<double> c(static_cast<size_t>(M) * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = bias ? bias->data.f32[j] : 0;
      for (int k = 0; k < K; k++) s += static_cast<double>(a->data.f32[i * K + k]) * b->data.f32[j * K + k];
      c[static_cast<size_t>(i) * N + j] = s;
    }
  return c;
}

TEST(GpuStream, CublasGemmOnTwoStreamsAtOnce) {
  NNC_REQUIRE_GPU();
  Stream s1(kGpuStream), s2(kGpuStream);
  ASSERT_TRUE(s1.s && s2.s) << message();
  std::mt19937 rng(17);
  // Odd shapes; each stream its own product, queued interleaved.
  const int M = 129, K = 257, N = 67;
  Owned a1(f32(kCpu, {M, K})), b1(f32(kCpu, {N, K})), bias1(f32(kCpu, {N}));
  Owned a2(f32(kCpu, {M, K})), b2(f32(kCpu, {N, K}));
  for (ccv_nnc_tensor_t* t : {a1.t, b1.t, bias1.t, a2.t, b2.t}) fill(t, rng);
  Owned da1 = to_gpu(a1), db1 = to_gpu(b1), dbias1 = to_gpu(bias1), da2 = to_gpu(a2), db2 = to_gpu(b2);
  Owned c1(f32(kGpu, {M, N})), c2(f32(kGpu, {M, N}));
  Owned h1(f32(kCpu, {M, N})), h2(f32(kCpu, {M, N}));
  for (int rep = 0; rep < 3; rep++) {  // the handles are made once and reused
    ASSERT_EQ(exec(gemm(true), ccv_nnc_no_hint, {da1, db1, dbias1}, {c1}, s1), CCV_NNC_EXEC_SUCCESS) << message();
    ASSERT_EQ(exec(gemm(true), ccv_nnc_no_hint, {da2, db2}, {c2}, s2), CCV_NNC_EXEC_SUCCESS) << message();
  }
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {c1}, {h1}, s1), CCV_NNC_EXEC_SUCCESS) << message();
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {c2}, {h2}, s2), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(s1);
  ccv_nnc_stream_context_wait(s2);
  EXPECT_EQ(message(), "");
  // fp32 sums of K = 257 products of values in [-1, 1] (cuBLAS may use TF32
  // only when asked; we do not): within 1e-4 absolute of fp64.
  const std::vector<double> w1 = reference_gemm(a1, b1, bias1), w2 = reference_gemm(a2, b2, nullptr);
  for (size_t i = 0; i < w1.size(); i++) {
    ASSERT_NEAR(h1->data.f32[i], w1[i], 1e-4) << "stream 1, element " << i;
    ASSERT_NEAR(h2->data.f32[i], w2[i], 1e-4) << "stream 2, element " << i;
  }
  // A refusal on a stream: the inner dimensions differ.
  Owned bad(f32(kGpu, {N, K + 1}));
  EXPECT_NE(exec(gemm(true), ccv_nnc_no_hint, {da1, bad}, {c1}, s1), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(message(), "");
  ccv_nnc_stream_context_wait(s1);
}

TEST(GpuStream, WorkspaceIsDeviceMemoryOfTheStreamsDevice) {
  NNC_REQUIRE_GPU();
  Stream s(kGpuStream);
  ASSERT_NE(s.s, nullptr) << message();
  void* w = ccv_nnc_stream_context_get_workspace(s, 1 << 20, CCV_TENSOR_GPU_MEMORY);
  ASSERT_NE(w, nullptr) << message();
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, w), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  // Usable by work on the stream: fill it, copy it back.
  const cudaStream_t cs = nnc::cuda::stream_of(s, 0, "test");
  ASSERT_EQ(cudaMemsetAsync(w, 0x3f, 1 << 20, cs), cudaSuccess);
  std::vector<unsigned char> back(1 << 20);
  ASSERT_EQ(cudaMemcpyAsync(back.data(), w, back.size(), cudaMemcpyDeviceToHost, cs), cudaSuccess);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(back[0], 0x3f);
  EXPECT_EQ(back[back.size() - 1], 0x3f);
  // A smaller request reuses it; a larger one moves it.
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(s, 1000, CCV_TENSOR_GPU_MEMORY), w);
  void* w2 = ccv_nnc_stream_context_get_workspace(s, 8 << 20, CCV_TENSOR_GPU_MEMORY);
  ASSERT_NE(w2, nullptr);
  ccv_nnc_stream_context_drain(s);
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(message(), "");
}

TEST(GpuStream, RefusalsHaveMessages) {
  NNC_REQUIRE_GPU();
  const int count = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU);
  int type = CCV_STREAM_CONTEXT_GPU;
  CCV_STREAM_SET_DEVICE_ID(type, count);  // one past the last device
  EXPECT_EQ(ccv_nnc_stream_context_new(type), nullptr);
  EXPECT_NE(message().find("no GPU"), std::string::npos) << message();
  Stream c(CCV_STREAM_CONTEXT_CPU);
  EXPECT_EQ(ccv_nnc_stream_context_get_workspace(c, 16, CCV_TENSOR_GPU_MEMORY), nullptr);
  EXPECT_NE(message(), "");
  // Mismatched element counts on a GPU stream: refused before anything is queued.
  Stream s(kGpuStream);
  Owned x(f32(kGpu, {10})), y(f32(kGpu, {11}));
  EXPECT_NE(exec(command(CCV_NNC_EWEXP_FORWARD), ccv_nnc_no_hint, {x}, {y}, s), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(message(), "");
  ccv_nnc_stream_context_wait(s);
}

// x [B, I] -> fc1 (W1 [H, I], b1) -> relu -> fc2 (W2 [O, H], b2) -> y, on GPU tensors.
struct Mlp {
  static constexpr int B = 37, I = 53, H = 29, O = 11;
  std::vector<Owned> host;  // x W1 b1 W2 b2
  Mlp() {
    std::mt19937 rng(23);
    for (const auto& d : std::vector<std::vector<int>>{{B, I}, {H, I}, {H}, {O, H}, {O}}) {
      host.emplace_back(f32(kCpu, d));
      fill(host.back(), rng);
    }
  }
  // y in fp64.
  std::vector<double> reference() const {
    const std::vector<double> h = reference_gemm(host[0], host[1], host[2]);
    Owned r(f32(kCpu, {B, H}));
    for (size_t i = 0; i < h.size(); i++) r->data.f32[i] = static_cast<float>(std::max(0.0, h[i]));
    return reference_gemm(r, host[3], host[4]);
  }
};

TEST(GpuStream, ConcreteGraphOnAGpuStreamMatchesASynchronousRun) {
  NNC_REQUIRE_GPU();
  Mlp m;
  std::vector<Owned> dev;
  for (const Owned& h : m.host) dev.push_back(to_gpu(h));
  Owned hid(f32(kGpu, {Mlp::B, Mlp::H})), act(f32(kGpu, {Mlp::B, Mlp::H})), y(f32(kGpu, {Mlp::B, Mlp::O}));
  Owned y_host(f32(kCpu, {Mlp::B, Mlp::O}));
  ccv_nnc_graph_t* g = ccv_nnc_graph_new();
  auto node = [&](ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
    return ccv_nnc_graph_exec_new(g, c, ccv_nnc_no_hint, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
  };
  const ccv_nnc_graph_exec_t n1 = node(gemm(true), {dev[0], dev[1], dev[2]}, {hid});
  const ccv_nnc_graph_exec_t n2 = node(command(CCV_NNC_RELU_FORWARD), {hid}, {act});
  const ccv_nnc_graph_exec_t n3 = node(gemm(true), {act, dev[3], dev[4]}, {y});
  const ccv_nnc_graph_exec_t n4 = node(transfer(), {y}, {y_host});  // back to the host inside the graph
  ccv_nnc_graph_exec_concat(g, n1, n2);
  ccv_nnc_graph_exec_concat(g, n2, n3);
  ccv_nnc_graph_exec_concat(g, n3, n4);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << message();
  std::vector<float> sync(y_host->data.f32, y_host->data.f32 + Mlp::B * Mlp::O);
  // fp32 through two GEMMs of K = 53 and 29 on [-1, 1] inputs: 1e-4 of fp64.
  const std::vector<double> want = m.reference();
  for (size_t i = 0; i < want.size(); i++) ASSERT_NEAR(sync[i], want[i], 1e-4) << i;
  std::memset(y_host->data.f32, 0, sizeof(float) * Mlp::B * Mlp::O);
  Stream s(kGpuStream);
  for (int rep = 0; rep < 2; rep++) {
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_SUCCESS) << message();
    ccv_nnc_stream_context_wait(s);
    EXPECT_EQ(message(), "");
    // The same kernels on other cuBLAS handles: equal up to a different
    // algorithm's summation order.
    for (size_t i = 0; i < sync.size(); i++) ASSERT_NEAR(y_host->data.f32[i], sync[i], 1e-5f * (1 + std::fabs(sync[i]))) << i;
  }
  ccv_nnc_graph_free(g);
}

TEST(GpuStream, CompiledGraphOnAGpuStreamMatchesASynchronousRun) {
  NNC_REQUIRE_GPU();
  Mlp m;
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  std::vector<ccv_nnc_tensor_symbol_t> in;
  for (const Owned& h : m.host) {
    ccv_nnc_tensor_param_t p = on_gpu(h->info);
    in.push_back(ccv_nnc_tensor_symbol_new(sg, p, nullptr));
  }
  const ccv_nnc_tensor_symbol_t hs = ccv_nnc_tensor_symbol_new(sg, f32(kGpu, {Mlp::B, Mlp::H}), "h");
  const ccv_nnc_tensor_symbol_t rs = ccv_nnc_tensor_symbol_new(sg, f32(kGpu, {Mlp::B, Mlp::H}), "r");
  const ccv_nnc_tensor_symbol_t ys = ccv_nnc_tensor_symbol_new(sg, f32(kGpu, {Mlp::B, Mlp::O}), "y");
  std::vector<ccv_nnc_tensor_symbol_t> a1{in[0], in[1], in[2]}, o1{hs}, a2{hs}, o2{rs}, a3{rs, in[3], in[4]}, o3{ys};
  ccv_nnc_graph_exec_symbol_new(sg, gemm(true), a1.data(), 3, o1.data(), 1, "fc1");
  ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_RELU_FORWARD), a2.data(), 1, o2.data(), 1, "relu");
  ccv_nnc_graph_exec_symbol_new(sg, gemm(true), a3.data(), 3, o3.data(), 1, "fc2");
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  std::vector<Owned> dev;
  std::vector<ccv_nnc_tensor_bind_t> binds;
  for (size_t i = 0; i < in.size(); i++) {
    dev.push_back(to_gpu(m.host[i]));
    binds.push_back({in[i], dev.back().t});
  }
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds.data(), static_cast<int>(binds.size()), &ys, 1,
                                 nullptr, 0, nullptr, 0, &g, &ta, &ea);
  ASSERT_NE(g, nullptr) << message();
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_from_symbol(ta, ys);
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << message();
  Owned sync = to_cpu(y);
  const std::vector<double> want = m.reference();
  for (size_t i = 0; i < want.size(); i++) ASSERT_NEAR(sync->data.f32[i], want[i], 1e-4) << i;
  // Clear y, run on a stream, copy back on the same stream.
  ASSERT_EQ(cudaMemset(y->data.f32, 0, sizeof(float) * Mlp::B * Mlp::O), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the fill is queued on the legacy stream, which s does not wait for
  Stream s(kGpuStream);
  ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, s), CCV_NNC_EXEC_SUCCESS) << message();
  Owned back(f32(kCpu, {Mlp::B, Mlp::O}));
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {y}, {back}, s), CCV_NNC_EXEC_SUCCESS) << message();
  ccv_nnc_stream_context_wait(s);
  EXPECT_EQ(message(), "");
  expect_close(back, sync, 1e-5f, 1e-5f, "compiled graph on a GPU stream");
  ccv_nnc_graph_free(g);
  ccv_nnc_tensor_arena_free(ta);
  ccv_nnc_graph_exec_arena_free(ea);
  ccv_nnc_symbolic_graph_free(sg);
}

}  // namespace
