// Commands: names, custom commands, NOOP, hints, the registry's ordering and
// bad input to ccv_nnc_cmd_exec.
#include <gtest/gtest.h>

#include <string>

#include "core/cmd.hpp"
#include "core/registry.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

std::string last_error() { return ccv_nnc_error_message(); }

class CmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ccv_nnc_init();
    ccv_nnc_error_clear();
  }
};

TEST_F(CmdTest, NamesOfCommandsAndBackends) {
  EXPECT_STREQ(ccv_nnc_cmd_name(CCV_NNC_GEMM_FORWARD), "CCV_NNC_GEMM_FORWARD");
  EXPECT_STREQ(ccv_nnc_cmd_name(CCV_NNC_GEMM_BACKWARD), "CCV_NNC_GEMM_BACKWARD");
  EXPECT_STREQ(ccv_nnc_cmd_name(CCV_NNC_NOOP), "CCV_NNC_NOOP");
  EXPECT_EQ(ccv_nnc_cmd_name(0x12345678), nullptr);
  EXPECT_STREQ(ccv_nnc_cmd_backend_name(CCV_NNC_BACKEND_CPU_REF), "CCV_NNC_BACKEND_CPU_REF");
  EXPECT_STREQ(ccv_nnc_cmd_backend_name(CCV_NNC_BACKEND_GPU_CUDNN), "CCV_NNC_BACKEND_GPU_CUDNN");
  EXPECT_EQ(ccv_nnc_cmd_backend_name(0x1), nullptr);
}

TEST_F(CmdTest, ForwardAndBackwardDifferInTheLowBit) {
  const ccv_nnc_cmd_t f = ccv_nnc_cmd(CCV_NNC_SOFTMAX_FORWARD, nullptr, no_params(), 0);
  const ccv_nnc_cmd_t b = ccv_nnc_cmd(CCV_NNC_SOFTMAX_BACKWARD, nullptr, no_params(), 0);
  EXPECT_TRUE(ccv_nnc_cmd_is_forward(f));
  EXPECT_FALSE(ccv_nnc_cmd_is_backward(f));
  EXPECT_TRUE(ccv_nnc_cmd_is_backward(b));
  EXPECT_FALSE(ccv_nnc_cmd_is_forward(b));
  EXPECT_EQ(f.cmd ^ b.cmd, 1u);
  EXPECT_EQ(f.backend, 0u);
}

TEST_F(CmdTest, UnknownCommandIdBecomesNoopWithAMessage) {
  const ccv_nnc_cmd_t c = ccv_nnc_cmd(0xdeadbeef, nullptr, no_params(), 0);
  EXPECT_EQ(c.cmd, static_cast<uint32_t>(CCV_NNC_NOOP));
  EXPECT_NE(last_error().find("unknown command"), std::string::npos);
}

TEST_F(CmdTest, NoopSucceedsAndTouchesNothing) {
  Tensor a(cpu_param(CCV_32F, {3}));
  a.f32()[0] = 42;
  ccv_nnc_tensor_t* in[] = {a.t};
  EXPECT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_NOOP, nullptr, no_params(), 0), ccv_nnc_no_hint, 0, in, 1, in, 1, nullptr),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(a.f32()[0], 42);
}

// A custom command: out[i] = in[i] * 2 + the command's first scalar.
int scale_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
               ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  if (input_size != 1 || output_size != 1) return CCV_NNC_EXEC_INVALID;
  const size_t n = ccv_nnc_tensor_count(inputs[0]->info);
  for (size_t i = 0; i < n; i++) outputs[0]->data.f32[i] = inputs[0]->data.f32[i] * 2 + cmd.info.blas.a[0];
  return CCV_NNC_EXEC_SUCCESS;
}

void scale_auto(const ccv_nnc_cmd_t, const ccv_nnc_tensor_param_t* const inputs, const int, const ccv_nnc_hint_t,
                ccv_nnc_tensor_param_t* const outputs, const int output_size) {
  for (int i = 0; i < output_size; i++) {
    outputs[i] = inputs[0];
    outputs[i].dim[0] *= 2;  // something a default would not do
  }
}

ccv_nnc_cmd_vtab_t g_scale = {scale_exec, scale_auto};

TEST_F(CmdTest, CustomCommandRunsTheCallersFunctions) {
  ccv_nnc_cmd_param_t p = no_params();
  p.blas.a[0] = 0.5f;
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_scale, p, 0);
  Tensor a(cpu_param(CCV_32F, {5})), b(cpu_param(CCV_32F, {5}));
  for (int i = 0; i < 5; i++) a.f32()[i] = static_cast<float>(i);
  ccv_nnc_tensor_t* in[] = {a.t};
  ccv_nnc_tensor_t* out[] = {b.t};
  ASSERT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 5; i++) EXPECT_EQ(b.f32()[i], i * 2 + 0.5f);
  // Its failure code comes back with a message.
  ccv_nnc_tensor_t* two[] = {a.t, a.t};
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, two, 2, out, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("custom"), std::string::npos);
  // Shape inference goes through its tensor_auto.
  ccv_nnc_tensor_param_t ip = cpu_param(CCV_32F, {3, 4});
  ccv_nnc_tensor_param_t op = {};
  ccv_nnc_hint_tensor_auto(cmd, &ip, 1, ccv_nnc_no_hint, &op, 1);
  EXPECT_EQ(op.dim[0], 6);
  EXPECT_EQ(op.dim[1], 4);
  // Without an isa, exec is refused rather than crashing.
  const ccv_nnc_cmd_t bare = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, nullptr, p, 0);
  EXPECT_EQ(ccv_nnc_cmd_exec(bare, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("no exec"), std::string::npos);
}

TEST_F(CmdTest, ExecRejectsMalformedArguments) {
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_scale, no_params(), 0);
  Tensor a(cpu_param(CCV_32F, {5}));
  ccv_nnc_tensor_t* in[] = {a.t};
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, nullptr, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("input array is NULL"), std::string::npos);
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, -1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("negative"), std::string::npos);
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, CCV_NNC_ACCUMULATE_OUTPUT, in, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  // A tensor header with no data.
  ccv_nnc_tensor_t empty = ccv_nnc_tensor(nullptr, cpu_param(CCV_32F, {5}), 0);
  ccv_nnc_tensor_t* bad[] = {&empty};
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, bad, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("no data"), std::string::npos);
  // A multi-view tensor is refused.
  ccv_nnc_tensor_t mv = *a.t;
  mv.type |= CCV_TENSOR_MULTIVIEW;
  ccv_nnc_tensor_t* multi[] = {&mv};
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, multi, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("multi-view"), std::string::npos);
  // An id nobody knows, made without ccv_nnc_cmd.
  ccv_nnc_cmd_t unknown = cmd;
  unknown.cmd = 0x13572468;
  EXPECT_EQ(ccv_nnc_cmd_exec(unknown, ccv_nnc_no_hint, 0, in, 1, in, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("unknown command"), std::string::npos);
  // A known command with nothing to run: the optimisers' and ARGMAX's
  // backward ids, as in libnnc (every family of libnnc now has a kernel).
  for (uint32_t id : {CCV_NNC_SGD_BACKWARD, CCV_NNC_ARGMAX_BACKWARD}) {
    const ccv_nnc_cmd_t known = ccv_nnc_cmd(id, nullptr, no_params(), 0);
    EXPECT_EQ(ccv_nnc_cmd_exec(known, ccv_nnc_no_hint, 0, in, 1, in, 1, nullptr), CCV_NNC_EXEC_NO_KERNEL) << last_error();
    EXPECT_NE(last_error().find("BACKWARD"), std::string::npos) << last_error();
  }
}

TEST_F(CmdTest, HintAutoFindsStrideAndPadding) {
  ccv_nnc_cmd_param_t conv = no_params();
  conv.size.dim[0] = 5;
  conv.size.dim[1] = 5;
  conv.size.dim[2] = 1;
  // 28x28 -> 28x28 with a 5x5 window: stride 1, padding 2 each side.
  ccv_nnc_hint_t h = ccv_nnc_hint_auto(conv, cpu_param(CCV_32F, {64, 28, 28, 1}), cpu_param(CCV_32F, {64, 28, 28, 32}));
  EXPECT_EQ(h.stride.dim[0], 1);
  EXPECT_EQ(h.stride.dim[1], 1);
  EXPECT_EQ(h.border.begin[0], 2);
  EXPECT_EQ(h.border.end[1], 2);
  EXPECT_TRUE(ccv_nnc_hint_verify(h, conv, cpu_param(CCV_32F, {64, 28, 28, 1}), cpu_param(CCV_32F, {64, 28, 28, 32})));
  // 2x2 pooling 28 -> 14: stride 2, no padding.
  ccv_nnc_cmd_param_t pool = no_params();
  pool.size.dim[0] = 2;
  pool.size.dim[1] = 2;
  h = ccv_nnc_hint_auto(pool, cpu_param(CCV_32F, {28, 28, 32}), cpu_param(CCV_32F, {14, 14, 32}));
  EXPECT_EQ(h.stride.dim[0], 2);
  EXPECT_EQ(h.border.begin[0], 0);
  EXPECT_EQ(h.border.end[0], 0);
  EXPECT_TRUE(ccv_nnc_hint_verify(h, pool, cpu_param(CCV_32F, {28, 28, 32}), cpu_param(CCV_32F, {14, 14, 32})));
  // NCHW: the spatial dimensions are the last two.
  h = ccv_nnc_hint_auto(pool, cpu_param(CCV_32F, {8, 32, 28, 28}, CCV_TENSOR_FORMAT_NCHW),
                        cpu_param(CCV_32F, {8, 32, 14, 14}, CCV_TENSOR_FORMAT_NCHW));
  EXPECT_EQ(h.stride.dim[0], 2);
  EXPECT_EQ(h.stride.dim[1], 2);
  // Every hint that auto produces verifies, over a grid of shapes.
  for (int x = 3; x < 40; x += 3)
    for (int k = 1; k <= 5; k += 2)
      for (int y = 1; y <= x; y += 2) {
        ccv_nnc_cmd_param_t w = no_params();
        w.size.dim[0] = k;
        w.size.dim[1] = k;
        const auto a = cpu_param(CCV_32F, {x, x, 4});
        const auto b = cpu_param(CCV_32F, {y, y, 4});
        const ccv_nnc_hint_t g = ccv_nnc_hint_auto(w, a, b);
        if (g.stride.dim[0] == 0) continue;  // no hint exists
        EXPECT_TRUE(ccv_nnc_hint_verify(g, w, a, b)) << "x=" << x << " k=" << k << " y=" << y;
        EXPECT_LT(g.border.begin[0], k) << "x=" << x << " k=" << k << " y=" << y;
      }
  // A hint that does not produce the output size fails verification.
  ccv_nnc_hint_t wrong = {};
  wrong.stride.dim[0] = wrong.stride.dim[1] = 1;
  EXPECT_FALSE(ccv_nnc_hint_verify(wrong, conv, cpu_param(CCV_32F, {28, 28, 1}), cpu_param(CCV_32F, {28, 28, 32})));
  // Huge extents and windows (from a damaged file, say): no overflow and no
  // long search; 2^30 -> 2 with a window of 3 takes stride 2^29 - 1.
  ccv_nnc_cmd_param_t huge = no_params();
  huge.size.dim[0] = huge.size.dim[1] = 3;
  const auto hx = cpu_param(CCV_32F, {1 << 30, 1 << 30, 1}), hy = cpu_param(CCV_32F, {2, 2, 1});
  h = ccv_nnc_hint_auto(huge, hx, hy);
  EXPECT_EQ(h.stride.dim[0], (1 << 29) - 1);
  EXPECT_TRUE(ccv_nnc_hint_verify(h, huge, hx, hy));
  // A window as large as the image: 2 outputs with stride 1 and one row of padding.
  huge.size.dim[0] = huge.size.dim[1] = 0x7fffffff;
  const auto hm = cpu_param(CCV_32F, {0x7fffffff, 0x7fffffff, 1});
  h = ccv_nnc_hint_auto(huge, hm, hy);
  EXPECT_EQ(h.stride.dim[0], 1);
  EXPECT_EQ(h.border.begin[0] + h.border.end[0], 1);
  EXPECT_TRUE(ccv_nnc_hint_verify(h, huge, hm, hy));
}

// Fake kernels to check the registry's ordering without real commands.
int fake_exec(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int, ccv_nnc_tensor_t* const*,
              const int, ccv_nnc_stream_context_t* const) {
  return CCV_NNC_EXEC_SUCCESS;
}

TEST(Registry, KernelsAreKeptInBackendPreferenceOrder) {
  nnc::Registry r;
  nnc::Kernel k;
  k.cmd = CCV_NNC_RELU_FORWARD;
  k.exec = fake_exec;
  k.tensor_formats = CCV_TENSOR_FORMAT_NHWC;
  k.tensor_datatypes = CCV_32F;
  k.tensor_memory = CCV_TENSOR_CPU_MEMORY;
  k.backend = CCV_NNC_BACKEND_CPU_REF;
  r.add_kernel(k);
  k.backend = CCV_NNC_BACKEND_GPU_REF;
  r.add_kernel(k);
  k.backend = CCV_NNC_BACKEND_CPU_OPT;
  r.add_kernel(k);
  auto ks = r.kernels(CCV_NNC_RELU_FORWARD);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].backend, static_cast<uint32_t>(CCV_NNC_BACKEND_GPU_REF));
  EXPECT_EQ(ks[1].backend, static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT));
  EXPECT_EQ(ks[2].backend, static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF));
  // Adding a backend twice replaces it.
  k.backend = CCV_NNC_BACKEND_CPU_REF;
  k.algorithms = 3;
  r.add_kernel(k);
  EXPECT_EQ(r.kernels(CCV_NNC_RELU_FORWARD).size(), 3u);
  EXPECT_EQ(r.kernel(CCV_NNC_RELU_FORWARD, CCV_NNC_BACKEND_CPU_REF)->algorithms, 3);
  EXPECT_EQ(r.kernel(CCV_NNC_RELU_BACKWARD, CCV_NNC_BACKEND_CPU_REF), nullptr);
  EXPECT_NE(r.command(CCV_NNC_RELU_FORWARD), nullptr);
}

TEST_F(CmdTest, BitmaskDefaultsRequireEverything) {
  const ccv_nnc_cmd_t custom = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_scale, no_params(), 0);
  const uint64_t one = 1;
  EXPECT_EQ(ccv_nnc_cmd_bitmask(custom, 1, 1, &one, 1, &one, 1), 1);
  EXPECT_EQ(ccv_nnc_cmd_bitmask(custom, 1, 1, nullptr, 1, &one, 1), 0);  // NULL mask array
  EXPECT_NE(last_error().find("NULL"), std::string::npos);
}

TEST_F(CmdTest, MonoTimeIsMonotonic) {
  const uint64_t a = ccv_nnc_cmd_mono_time();
  const uint64_t b = ccv_nnc_cmd_mono_time();
  EXPECT_LE(a, b);
  EXPECT_GT(a, 0u);
}

TEST_F(CmdTest, FlagsAreSetAndCleared) {
  const uint64_t before = ccv_nnc_flags();
  ccv_nnc_enable_flag(CCV_NNC_DISABLE_MFA_GEMM);
  EXPECT_TRUE(ccv_nnc_flags() & CCV_NNC_DISABLE_MFA_GEMM);
  ccv_nnc_disable_flag(CCV_NNC_DISABLE_MFA_GEMM);
  EXPECT_EQ(ccv_nnc_flags(), before);
}

TEST_F(CmdTest, VersionIsReported) {
  const std::string v = ccv_nnc_version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2);
}

}  // namespace
