// LSTM under libnnc's GPU backend id (cuda/lstm_gpu.cpp): libnnc runs LSTM
// on the GPU only as GPU_CUDNN, so a libnnc program may set cmd.backend to
// GPU_CUDNN, ask ccv_nnc_cmd_find_backend which backend runs it, read the
// reserve's size through ccv_nnc_cmd_aux of that backend, or autotune it.
// Our GPU LSTM (our kernels and cuBLAS products, registered as GPU_CUBLAS)
// answers under GPU_CUDNN as well: these tests check that each of those
// paths gets a working kernel whose results are CPU_REF's. Skips without a
// GPU (runs under tools/gpu-emu, where the cuBLAS product is emulated).
//
// Tolerance: as GpuCublasLstm's (misc_gpu_test.cpp): float on the GPU,
// double on CPU_REF, O(1) values, T <= 6: rtol 2e-4, atol 5e-5 (the weight
// gradient, sums of T B products: atol 3e-4). A wrong gate, slot or
// transpose is off by 1e-2 or more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

constexpr int T = 6, B = 3, F = 4, H = 5, L = 2;  // bidirectional, 2 layers, with bias
constexpr int D = 2, O = D * H;

ccv_nnc_cmd_t lstm(uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.rnn.hidden_size = H, c.info.rnn.num_layers = L, c.info.rnn.bias = 1, c.info.rnn.bidirectional = 1;
  c.backend = backend;
  return c;
}

using ReserveSize = size_t (*)(const ccv_nnc_cmd_t, const int, const int, const int, const int);

size_t reserve_of(const ccv_nnc_cmd_t& c) {
  const ReserveSize f = reinterpret_cast<ReserveSize>(ccv_nnc_cmd_aux(c));
  return f ? f(c, CCV_32F, F, B, T) : 0;
}

int weight_count() {
  int w = 0;
  for (int l = 0; l < L; l++) w += D * (4 * H * ((l == 0 ? F : O) + H) + 8 * H);
  return w;
}

int exec_n(const ccv_nnc_cmd_t& c, const std::vector<Both*>& in, const std::vector<Both*>& out, bool gpu) {
  std::vector<ccv_nnc_tensor_t*> i, o;
  for (Both* b : in) i.push_back(b ? (gpu ? b->gpu() : b->cpu()) : nullptr);
  for (Both* b : out) o.push_back(b ? (gpu ? b->gpu() : b->cpu()) : nullptr);
  return exec(c, ccv_nnc_no_hint, i, o);
}

// The registry's answers: GPU_CUDNN (libnnc's only GPU LSTM backend) and
// GPU_CUBLAS both run LSTM on GPU memory, find_backend reports GPU_CUDNN
// (it ranks first; the same code runs), and either backend's aux is the
// reserve size CPU_REF's gives.
TEST(GpuLstmCompat, RegistryReportsGpuCudnn) {
  NNC_REQUIRE_GPU();
  for (uint32_t id : {CCV_NNC_LSTM_FORWARD, CCV_NNC_LSTM_BACKWARD}) {
    EXPECT_EQ(ccv_nnc_cmd_ok(id, CCV_NNC_BACKEND_GPU_CUDNN), 1) << ccv_nnc_cmd_name(id);
    EXPECT_EQ(ccv_nnc_cmd_ok(id, CCV_NNC_BACKEND_GPU_CUBLAS), 1) << ccv_nnc_cmd_name(id);
    EXPECT_EQ(ccv_nnc_cmd_find_backend(lstm(id, 0), CCV_TENSOR_GPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F),
              static_cast<uint32_t>(CCV_NNC_BACKEND_GPU_CUDNN))
        << ccv_nnc_cmd_name(id);
    // The CPU answer is unchanged.
    const uint32_t cpu = ccv_nnc_cmd_find_backend(lstm(id, 0), CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F);
    EXPECT_TRUE(cpu == CCV_NNC_BACKEND_CPU_OPT || cpu == CCV_NNC_BACKEND_CPU_REF) << cpu;
  }
  const size_t want = reserve_of(lstm(CCV_NNC_LSTM_FORWARD, CCV_NNC_BACKEND_CPU_REF));
  ASSERT_GT(want, 0u);
  EXPECT_EQ(reserve_of(lstm(CCV_NNC_LSTM_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN)), want);
  EXPECT_EQ(reserve_of(lstm(CCV_NNC_LSTM_FORWARD, CCV_NNC_BACKEND_GPU_CUBLAS)), want);
}

// Forward and backward with cmd.backend = GPU_CUDNN set explicitly, against
// CPU_REF; then autotune from GPU_CUDNN (it keeps the backend asked for) and
// from no backend (it picks one of the two GPU entries), each run again.
TEST(GpuLstmCompat, ExplicitGpuCudnnMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(3203);
  const ccv_nnc_cmd_t fc = lstm(CCV_NNC_LSTM_FORWARD, CCV_NNC_BACKEND_CPU_REF);
  const ccv_nnc_cmd_t fg = lstm(CCV_NNC_LSTM_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN);
  const int rcount = static_cast<int>(reserve_of(fg));
  ASSERT_GT(rcount, 0);
  auto x = both({{T, B, F}}, rng), w = both({{weight_count()}}, rng, -0.5f, 0.5f);
  auto xs = both({{B}, false, CCV_32S}, rng, 1, T);
  xs->cpu_parent()->data.i32[0] = T;
  xs->upload();
  auto hx = both({{L * D, B, H}}, rng), cx = both({{L * D, B, H}}, rng);
  auto y = both({{T, B, O}}, rng), hy = both({{L * D, B, H}}, rng), cy = both({{L * D, B, H}}, rng);
  auto r = both({{rcount}}, rng);
  const std::vector<Both*> fin{x.get(), xs.get(), hx.get(), cx.get(), w.get()};
  const std::vector<Both*> fout{y.get(), hy.get(), cy.get(), r.get()};
  ASSERT_EQ(exec_n(fc, fin, fout, false), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(exec_n(fg, fin, fout, true), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  y->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM y");
  hy->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM hy");
  cy->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM cy");
  r->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM reserve");
  auto dy = both({{T, B, O}}, rng), dhy = both({{L * D, B, H}}, rng), dcy = both({{L * D, B, H}}, rng);
  auto dx = both({{T, B, F}}, rng), dhx = both({{L * D, B, H}}, rng), dcx = both({{L * D, B, H}}, rng);
  auto dw = both({{weight_count()}}, rng);
  const std::vector<Both*> bin{dy.get(), dhy.get(), dcy.get(), nullptr, x.get(), xs.get(), nullptr,
                               nullptr,  w.get(),   nullptr,   nullptr, nullptr, r.get()};
  const std::vector<Both*> bout{dx.get(), nullptr, dhx.get(), dcx.get(), dw.get()};
  ASSERT_EQ(exec_n(lstm(CCV_NNC_LSTM_BACKWARD, CCV_NNC_BACKEND_CPU_REF), bin, bout, false), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ASSERT_EQ(exec_n(lstm(CCV_NNC_LSTM_BACKWARD, CCV_NNC_BACKEND_GPU_CUDNN), bin, bout, true), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  dx->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM dx");
  dhx->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM dhx");
  dcx->expect_close(2e-4f, 5e-5f, "GPU_CUDNN LSTM dcx");
  dw->expect_close(2e-4f, 3e-4f, "GPU_CUDNN LSTM dw");

  // Autotune, then run what it chose (y overwritten first, so a run that does
  // nothing fails).
  std::vector<ccv_nnc_tensor_t*> gi, go;
  for (Both* b : fin) gi.push_back(b->gpu());
  for (Both* b : fout) go.push_back(b->gpu());
  for (uint32_t asked : {static_cast<uint32_t>(CCV_NNC_BACKEND_GPU_CUDNN), 0u}) {
    const ccv_nnc_cmd_t tuned =
        ccv_nnc_cmd_autotune(lstm(CCV_NNC_LSTM_FORWARD, asked), 0, ccv_nnc_no_hint, 0, gi.data(),
                             static_cast<int>(gi.size()), go.data(), static_cast<int>(go.size()), nullptr);
    if (asked)
      EXPECT_EQ(tuned.backend, asked);
    else
      EXPECT_TRUE(tuned.backend == CCV_NNC_BACKEND_GPU_CUDNN || tuned.backend == CCV_NNC_BACKEND_GPU_CUBLAS)
          << tuned.backend;
    auto zero = both({{T, B, O}}, rng, 0, 0);
    ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {zero->cpu_parent()}, {y->gpu_parent()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(exec(tuned, ccv_nnc_no_hint, gi, go), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    y->expect_close(2e-4f, 5e-5f, "autotuned LSTM y (asked " + std::to_string(asked) + ")");
  }
}

}  // namespace
