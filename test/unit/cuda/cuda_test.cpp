// The CUDA module on a GPU: transfers host <-> device, and GEMM on cuBLAS
// against the CPU_REF backend on random inputs (odd shapes, transposes, bias).
// Every test skips, saying so, when no GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

bool have_gpu() { return ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) > 0; }
#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no GPU found (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0): GPU tests skipped"

ccv_nnc_tensor_param_t params(int memory, int a, int b = 0) {
  ccv_nnc_tensor_param_t p{};
  p.type = memory;  // device 0
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = a;
  p.dim[1] = b;
  return p;
}

ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

int run(ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr);
}

struct Gpu {
  ccv_nnc_tensor_t* t;
  explicit Gpu(ccv_nnc_tensor_param_t p) : t(ccv_nnc_tensor_new(nullptr, p, 0)) {}
  ~Gpu() { ccv_nnc_tensor_free(t); }
};

TEST(Cuda, DeviceIsSeen) {
  REQUIRE_GPU();
  EXPECT_GE(ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), 1);
}

TEST(Cuda, TransferRoundTrip) {
  REQUIRE_GPU();
  constexpr int n = 1237;
  Gpu host(params(CCV_TENSOR_CPU_MEMORY, n)), back(params(CCV_TENSOR_CPU_MEMORY, n));
  Gpu dev(params(CCV_TENSOR_GPU_MEMORY, n)), dev2(params(CCV_TENSOR_GPU_MEMORY, n));
  ASSERT_NE(dev.t, nullptr) << ccv_nnc_error_message();
  for (int i = 0; i < n; i++) host.t->data.f32[i] = 0.5f * static_cast<float>(i) - 3.f;
  ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {host.t}, {dev.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {dev.t}, {dev2.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {dev2.t}, {back.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(std::memcmp(host.t->data.f32, back.t->data.f32, n * sizeof(float)), 0);
  // A size mismatch is refused with a message.
  Gpu small(params(CCV_TENSOR_CPU_MEMORY, n - 1));
  EXPECT_NE(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {dev.t}, {small.t}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("must match"), std::string::npos) << ccv_nnc_error_message();
}

TEST(Cuda, GemmMatchesCpuRef) {
  REQUIRE_GPU();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case {
    int M, K, N;
    bool ta, tb, bias;
  };
  for (const Case c : {Case{1, 1, 1, false, false, false}, Case{37, 53, 29, false, false, true}, Case{64, 128, 96, false, true, true},
                       Case{17, 9, 130, true, false, false}, Case{33, 65, 31, true, true, true}}) {
    Gpu a(params(CCV_TENSOR_CPU_MEMORY, c.ta ? c.K : c.M, c.ta ? c.M : c.K));
    Gpu b(params(CCV_TENSOR_CPU_MEMORY, c.tb ? c.N : c.K, c.tb ? c.K : c.N));
    Gpu bias(params(CCV_TENSOR_CPU_MEMORY, c.N)), ref(params(CCV_TENSOR_CPU_MEMORY, c.M, c.N)), got(params(CCV_TENSOR_CPU_MEMORY, c.M, c.N));
    for (ccv_nnc_tensor_t* t : {a.t, b.t, bias.t}) {
      const int count = t->info.dim[0] * (t->info.dim[1] ? t->info.dim[1] : 1);
      for (int i = 0; i < count; i++) t->data.f32[i] = u(rng);
    }
    ccv_nnc_cmd_t g = cmd(CCV_NNC_GEMM_FORWARD);
    g.info.blas.a[0] = g.info.blas.a[1] = 1;
    if (c.ta) g.info.blas.transpose_a[0] = 0, g.info.blas.transpose_a[1] = 1;
    if (c.tb) g.info.blas.transpose_b[0] = 0, g.info.blas.transpose_b[1] = 1;
    ccv_nnc_cmd_t g_ref = g;
    g_ref.backend = CCV_NNC_BACKEND_CPU_REF;
    std::vector<ccv_nnc_tensor_t*> in{a.t, b.t};
    if (c.bias) in.push_back(bias.t);
    ASSERT_EQ(run(g_ref, in, {ref.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    Gpu da(a.t->info), db(b.t->info), dbias(bias.t->info), dc(ref.t->info);
    auto to_gpu = [](ccv_nnc_tensor_param_t p) {
      p.type = CCV_TENSOR_GPU_MEMORY;
      return p;
    };
    Gpu ga(to_gpu(a.t->info)), gb(to_gpu(b.t->info)), gbias(to_gpu(bias.t->info)), gc(to_gpu(ref.t->info));
    ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {a.t, b.t, bias.t}, {ga.t, gb.t, gbias.t}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    std::vector<ccv_nnc_tensor_t*> gin{ga.t, gb.t};
    if (c.bias) gin.push_back(gbias.t);
    ASSERT_EQ(run(g, gin, {gc.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gc.t}, {got.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (int i = 0; i < c.M * c.N; i++)
      ASSERT_NEAR(got.t->data.f32[i], ref.t->data.f32[i], 1e-4f * (1 + std::fabs(ref.t->data.f32[i])))
          << c.M << "x" << c.K << "x" << c.N << " ta " << c.ta << " tb " << c.tb << " element " << i;
  }
}

// GEMM_BACKWARD on cuBLAS against CPU_REF: |g|a|w| -> |da|dw|dbias| for every
// transpose combination, and dw alone.
TEST(Cuda, GemmBackwardMatchesCpuRef) {
  REQUIRE_GPU();
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case {
    int M, K, N;
    bool ta, tb;
  };
  for (const Case c : {Case{37, 53, 29, false, false}, Case{64, 128, 96, false, true}, Case{17, 9, 130, true, false}, Case{33, 65, 31, true, true}}) {
    auto host = [](int a, int b) { return std::make_unique<Gpu>(params(CCV_TENSOR_CPU_MEMORY, a, b)); };
    auto dev = [](const ccv_nnc_tensor_t* like) {
      ccv_nnc_tensor_param_t p = like->info;
      p.type = CCV_TENSOR_GPU_MEMORY;
      return std::make_unique<Gpu>(p);
    };
    auto g = host(c.M, c.N), a = host(c.ta ? c.K : c.M, c.ta ? c.M : c.K), w = host(c.tb ? c.N : c.K, c.tb ? c.K : c.N);
    for (ccv_nnc_tensor_t* t : {g->t, a->t, w->t})
      for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) t->data.f32[i] = u(rng);
    auto da = host(a->t->info.dim[0], a->t->info.dim[1]), dw = host(w->t->info.dim[0], w->t->info.dim[1]), dbias = host(c.N, 0);
    ccv_nnc_cmd_t back = cmd(CCV_NNC_GEMM_BACKWARD, CCV_NNC_BACKEND_CPU_REF);
    back.info.blas.a[0] = back.info.blas.a[1] = 1;
    if (c.ta) back.info.blas.transpose_a[0] = 0, back.info.blas.transpose_a[1] = 1;
    if (c.tb) back.info.blas.transpose_b[0] = 0, back.info.blas.transpose_b[1] = 1;
    ASSERT_EQ(run(back, {g->t, a->t, w->t}, {da->t, dw->t, dbias->t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    auto gg = dev(g->t), ga = dev(a->t), gw = dev(w->t), gda = dev(da->t), gdw = dev(dw->t), gdb = dev(dbias->t), gdw2 = dev(dw->t);
    ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {g->t, a->t, w->t}, {gg->t, ga->t, gw->t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    back.backend = 0;
    ASSERT_EQ(run(back, {gg->t, ga->t, gw->t}, {gda->t, gdw->t, gdb->t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(back, {gg->t, ga->t, nullptr}, {nullptr, gdw2->t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    auto check = [&](const ccv_nnc_tensor_t* ref, const ccv_nnc_tensor_t* gpu_t, const char* name) {
      auto back_host = host(ref->info.dim[0], ref->info.dim[1]);
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {const_cast<ccv_nnc_tensor_t*>(gpu_t)}, {back_host->t}), CCV_NNC_EXEC_SUCCESS);
      for (size_t i = 0; i < ccv_nnc_tensor_count(ref->info); i++)
        ASSERT_NEAR(back_host->t->data.f32[i], ref->data.f32[i], 1e-4f * (1 + std::fabs(ref->data.f32[i])))
            << name << " " << c.M << "x" << c.K << "x" << c.N << " ta " << c.ta << " tb " << c.tb << " element " << i;
    };
    check(da->t, gda->t, "da");
    check(dw->t, gdw->t, "dw");
    check(dbias->t, gdb->t, "dbias");
    check(dw->t, gdw2->t, "dw alone");
  }
}

// Element-wise families on the GPU against CPU_REF (odd sizes, 1-d and 2-d,
// EWSUM / EWPROD over three inputs, EWDIV with and without a numerator).
TEST(Cuda, ElementwiseMatchesCpuRef) {
  REQUIRE_GPU();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.1f, 2.f);  // positive: log, sqrt and division stay defined
  struct Op {
    uint32_t id;
    int inputs;
    float scale;
  };
  const Op ops[] = {{CCV_NNC_EWEXP_FORWARD, 1, 0},  {CCV_NNC_EWLOG_FORWARD, 1, 0},     {CCV_NNC_EWSQRT_FORWARD, 1, 0},
                    {CCV_NNC_RELU_FORWARD, 1, 0},   {CCV_NNC_SIGMOID_FORWARD, 1, 0},  {CCV_NNC_TANH_FORWARD, 1, 0},
                    {CCV_NNC_SCALAR_MUL_FORWARD, 1, -1.5f}, {CCV_NNC_EWSUM_FORWARD, 3, 0}, {CCV_NNC_EWPROD_FORWARD, 3, 0},
                    {CCV_NNC_EWDIV_FORWARD, 2, 0},  {CCV_NNC_EWDIV_FORWARD, -2, 0}};
  for (const auto& shape : {std::vector<int>{1237}, std::vector<int>{33, 65}}) {
    for (const Op& op : ops) {
      const int n_in = op.inputs < 0 ? -op.inputs : op.inputs;
      const int a = shape[0], b = shape.size() > 1 ? shape[1] : 0;
      std::vector<std::unique_ptr<Gpu>> host, dev;
      std::vector<ccv_nnc_tensor_t*> hin, din;
      for (int i = 0; i < n_in; i++) {
        host.push_back(std::make_unique<Gpu>(params(CCV_TENSOR_CPU_MEMORY, a, b)));
        dev.push_back(std::make_unique<Gpu>(params(CCV_TENSOR_GPU_MEMORY, a, b)));
        for (size_t k = 0; k < ccv_nnc_tensor_count(host.back()->t->info); k++) host.back()->t->data.f32[k] = u(rng) * (op.id == CCV_NNC_RELU_FORWARD && k % 2 ? -1.f : 1.f);
        ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {host.back()->t}, {dev.back()->t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        hin.push_back(host.back()->t);
        din.push_back(dev.back()->t);
      }
      if (op.inputs < 0) hin[0] = din[0] = nullptr;  // EWDIV's 1 / b
      Gpu ref(params(CCV_TENSOR_CPU_MEMORY, a, b)), got(params(CCV_TENSOR_CPU_MEMORY, a, b)), out(params(CCV_TENSOR_GPU_MEMORY, a, b));
      ccv_nnc_cmd_t c = cmd(op.id, CCV_NNC_BACKEND_CPU_REF);
      c.info.blas.a[0] = op.scale;
      ASSERT_EQ(run(c, hin, {ref.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      c.backend = 0;
      ASSERT_EQ(run(c, din, {out.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {out.t}, {got.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t k = 0; k < ccv_nnc_tensor_count(ref.t->info); k++)
        ASSERT_NEAR(got.t->data.f32[k], ref.t->data.f32[k], 2e-6f * (1 + std::fabs(ref.t->data.f32[k])))
            << "command 0x" << std::hex << op.id << std::dec << " element " << k;
    }
  }
}

// The one-input functions' backward |g|x|y| -> |dx| against CPU_REF, and
// RELU's |g|x| (no y).
TEST(Cuda, ElementwiseBackwardMatchesCpuRef) {
  REQUIRE_GPU();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(0.1f, 2.f);
  const std::pair<uint32_t, uint32_t> ops[] = {{CCV_NNC_RELU_FORWARD, CCV_NNC_RELU_BACKWARD},
                                               {CCV_NNC_SIGMOID_FORWARD, CCV_NNC_SIGMOID_BACKWARD},
                                               {CCV_NNC_TANH_FORWARD, CCV_NNC_TANH_BACKWARD},
                                               {CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWEXP_BACKWARD},
                                               {CCV_NNC_EWLOG_FORWARD, CCV_NNC_EWLOG_BACKWARD},
                                               {CCV_NNC_EWSQRT_FORWARD, CCV_NNC_EWSQRT_BACKWARD}};
  constexpr int n = 1237;
  for (const auto& op : ops)
    for (int with_y = 1; with_y >= (op.first == CCV_NNC_RELU_FORWARD ? 0 : 1); with_y--) {
      Gpu x(params(CCV_TENSOR_CPU_MEMORY, n)), y(params(CCV_TENSOR_CPU_MEMORY, n)), g(params(CCV_TENSOR_CPU_MEMORY, n));
      Gpu ref(params(CCV_TENSOR_CPU_MEMORY, n)), got(params(CCV_TENSOR_CPU_MEMORY, n));
      for (int k = 0; k < n; k++) {
        x.t->data.f32[k] = u(rng) * (op.first == CCV_NNC_RELU_FORWARD && k % 3 == 0 ? -1.f : 1.f);
        g.t->data.f32[k] = u(rng) - 1.f;
      }
      ASSERT_EQ(run(cmd(op.first, CCV_NNC_BACKEND_CPU_REF), {x.t}, {y.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(cmd(op.second, CCV_NNC_BACKEND_CPU_REF), {g.t, x.t, y.t}, {ref.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      Gpu gx(params(CCV_TENSOR_GPU_MEMORY, n)), gy(params(CCV_TENSOR_GPU_MEMORY, n)), gg(params(CCV_TENSOR_GPU_MEMORY, n)),
          gdx(params(CCV_TENSOR_GPU_MEMORY, n));
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x.t, y.t, g.t}, {gx.t, gy.t, gg.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      std::vector<ccv_nnc_tensor_t*> in{gg.t, gx.t};
      if (with_y) in.push_back(gy.t);
      ASSERT_EQ(run(cmd(op.second), in, {gdx.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {gdx.t}, {got.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (int k = 0; k < n; k++)
        ASSERT_NEAR(got.t->data.f32[k], ref.t->data.f32[k], 2e-6f * (1 + std::fabs(ref.t->data.f32[k])))
            << "command 0x" << std::hex << op.second << std::dec << " with_y " << with_y << " element " << k;
    }
}

// A symbolic graph of GPU symbols compiles into an arena in device memory:
// a 2-layer MLP and its backward (autodiff) on the GPU give the CPU's
// gradients.
TEST(Cuda, CompiledGraphBackwardOnGpuMatchesCpu) {
  REQUIRE_GPU();
  constexpr int B = 7, I = 13, H = 21, O = 5;
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Host {
    std::vector<float> v;
    int a, b;
  };
  std::vector<Host> inputs = {{{}, B, I}, {{}, H, I}, {{}, H, 0}, {{}, O, H}, {{}, O, 0}, {{}, B, O}};  // x W1 b1 W2 b2 dy
  for (Host& h : inputs) {
    h.v.resize(static_cast<size_t>(h.a) * (h.b ? h.b : 1));
    for (float& f : h.v) f = u(rng);
  }
  std::vector<std::vector<float>> grads[2];
  for (int on_gpu = 0; on_gpu < 2; on_gpu++) {
    const int memory = on_gpu ? CCV_TENSOR_GPU_MEMORY : CCV_TENSOR_CPU_MEMORY;
    ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
    std::vector<ccv_nnc_tensor_symbol_t> in;
    for (const Host& h : inputs) in.push_back(ccv_nnc_tensor_symbol_new(sg, params(memory, h.a, h.b), nullptr));
    const ccv_nnc_tensor_symbol_t hs = ccv_nnc_tensor_symbol_new(sg, params(memory, B, H), "h");
    const ccv_nnc_tensor_symbol_t rs = ccv_nnc_tensor_symbol_new(sg, params(memory, B, H), "r");
    const ccv_nnc_tensor_symbol_t ys = ccv_nnc_tensor_symbol_new(sg, params(memory, B, O), "y");
    ccv_nnc_cmd_t gemm = cmd(CCV_NNC_GEMM_FORWARD);
    gemm.info.blas.a[0] = gemm.info.blas.a[1] = 1;
    gemm.info.blas.transpose_b[0] = 0, gemm.info.blas.transpose_b[1] = 1;
    std::vector<ccv_nnc_tensor_symbol_t> a1{in[0], in[1], in[2]}, o1{hs}, a2{hs}, o2{rs}, a3{rs, in[3], in[4]}, o3{ys};
    ccv_nnc_graph_exec_symbol_new(sg, gemm, a1.data(), 3, o1.data(), 1, "fc1");
    ccv_nnc_graph_exec_symbol_new(sg, cmd(CCV_NNC_RELU_FORWARD), a2.data(), 1, o2.data(), 1, "relu");
    ccv_nnc_graph_exec_symbol_new(sg, gemm, a3.data(), 3, o3.data(), 1, "fc2");
    ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    std::vector<ccv_nnc_tensor_symbol_t> wrt{in[1], in[2], in[3], in[4]};
    ccv_nnc_symbolic_graph_backward(sg, &ys, 1, wrt.data(), 4, ccv_nnc_symbolic_graph_sources(sg), ccv_nnc_symbolic_graph_source_size(sg),
                                    ccv_nnc_symbolic_graph_destinations(sg), ccv_nnc_symbolic_graph_destination_size(sg));
    ASSERT_STREQ(ccv_nnc_error_message(), "");
    ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    std::vector<ccv_nnc_tensor_symbol_t> outs;
    for (const auto& w : wrt) outs.push_back(ccv_nnc_tensor_symbol_for_backward(sg, w));
    const ccv_nnc_tensor_symbol_t seed = ccv_nnc_tensor_symbol_for_backward(sg, ys);
    Gpu seed_t(params(memory, B, O));
    ccv_nnc_tensor_bind_t bind{seed, seed_t.t};
    ccv_nnc_graph_t* g = nullptr;
    ccv_nnc_tensor_arena_t* ta = nullptr;
    ccv_nnc_graph_exec_arena_t* ea = nullptr;
    ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, &bind, 1, outs.data(), 4, nullptr, 0, nullptr, 0, &g, &ta, &ea);
    ASSERT_NE(g, nullptr) << ccv_nnc_error_message();
    auto upload = [&](const Host& h, ccv_nnc_tensor_t* t) {
      Gpu host(params(CCV_TENSOR_CPU_MEMORY, h.a, h.b));
      std::memcpy(host.t->data.f32, h.v.data(), h.v.size() * sizeof(float));
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {host.t}, {t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    };
    for (int i = 0; i < 5; i++) upload(inputs[static_cast<size_t>(i)], ccv_nnc_tensor_from_symbol(ta, in[static_cast<size_t>(i)]));
    upload(inputs[5], seed_t.t);
    ASSERT_EQ(ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    for (const auto& o : outs) {
      ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_symbol(ta, o);
      ASSERT_EQ(CCV_TENSOR_GET_MEMORY(t->info.type), memory);
      Gpu host(params(CCV_TENSOR_CPU_MEMORY, t->info.dim[0], t->info.dim[1]));
      ASSERT_EQ(run(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {t}, {host.t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      grads[on_gpu].emplace_back(host.t->data.f32, host.t->data.f32 + ccv_nnc_tensor_count(host.t->info));
    }
    ccv_nnc_graph_free(g);
    ccv_nnc_tensor_arena_free(ta);
    ccv_nnc_graph_exec_arena_free(ea);
    ccv_nnc_symbolic_graph_free(sg);
  }
  for (size_t w = 0; w < grads[0].size(); w++)
    for (size_t k = 0; k < grads[0][w].size(); k++)
      ASSERT_NEAR(grads[1][w][k], grads[0][w][k], 1e-4f * (1 + std::fabs(grads[0][w][k]))) << "gradient " << w << " element " << k;
}

TEST(Cuda, GpuTensorWithoutGpuIsAnError) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present: this checks the message without one";
  EXPECT_EQ(ccv_nnc_tensor_new(nullptr, params(CCV_TENSOR_GPU_MEMORY, 4), 0), nullptr);
  EXPECT_NE(std::string(ccv_nnc_error_message()), "");
}

}  // namespace
