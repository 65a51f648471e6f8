// GPU_CUDNN's convolutions through cuDNN's graph API (cuda/cudnn_graph.cpp,
// NNC_CUDNN_GRAPH) against CPU_REF, on random inputs with fixed seeds:
// - GraphOnly*: NNC_CUDNN_GRAPH=2 (the graph API or a refusal, never the
//   legacy calls), convolution forward and backward (dx, dw) and the
//   transposed convolution's, 32F / 16F / 16BF, both formats, groups,
//   stride, dilation, padding, 3-d, a call on a GPU stream context; a shape
//   the graph API has no plan for is counted and printed, not a failure,
//   except the shapes the benchmarks time (they must run on it);
// - ExistingCases: the existing convolution tests (cudnn_test.cpp,
//   cudnn_half_test.cpp, convt_gpu_test.cpp) rerun in a child process of this
//   program under NNC_CUDNN_GRAPH=1 (the graph API wherever it has a plan,
//   the legacy calls elsewhere: the mode a default would turn on) and
//   NNC_CUDNN_GRAPH_VERBOSE=1, their output copied into this one's; they must
//   pass, and the graph API must have planned some of their shapes (the
//   count of shapes with and without a plan is printed);
// - NoPlan*: with every engine configuration rejected
//   (NNC_CUDNN_GRAPH_REJECT=1), NNC_CUDNN_GRAPH=1 still gives CPU_REF's
//   answer through the legacy calls (twice: the shape is remembered), and
//   NNC_CUDNN_GRAPH=2 refuses with a message (GPU_CUDNN named) or runs on the
//   next backend (chosen automatically).
// Each test skips, saying so, without a GPU.
//
// Tolerances: those of the tests whose cases these are (cudnn_test.cpp's
// header for fp32: |gpu - cpu| <= 1e-5 n + 1e-4 |cpu| for n terms of
// magnitude <= 1, which any fp32 algorithm meets and a wrong index, layout,
// pad or group misses by the order of the values; cudnn_half_test.cpp's for
// 16F / 16BF: a rounding of the inputs, fp32 sums, a rounding of the output).
// A TF32 engine on fp32 data is caught exactly by Cudnn.ConvolutionIsNotTf32,
// which ExistingCases reruns on the graph path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "env_guard.hpp"
#include "gpu.hpp"
#include "gpu_pair.hpp"
#include "unit/common/conv_case.hpp"

using namespace nnc_gpu_test;

namespace {

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;
using Case = nnc_test_conv::ConvCase<false>;
using CaseT = nnc_test_conv::ConvCase<true>;

double eps_of(int dt) { return dt == CCV_16F ? std::ldexp(1.0, -10) : dt == CCV_16BF ? std::ldexp(1.0, -7) : 0.0; }
float rtol_for(int dt) { return dt == CCV_32F ? 1e-4f : static_cast<float>(2 * eps_of(dt)); }
float atol_for(int dt, size_t n) {
  const double fp32 = 1e-5 * static_cast<double>(n) + 1e-6;
  if (dt == CCV_32F) return static_cast<float>(fp32);
  return static_cast<float>(eps_of(dt) * (1 + 2 * std::sqrt(static_cast<double>(n))) + fp32);
}
std::string tname(int dt) { return dt == CCV_32F ? "32F" : dt == CCV_16F ? "16F" : "16BF"; }

// size.dim[2]: channels per group, as libnnc's callers give it.
ccv_nnc_cmd_t conv_cmd(const Case& c, uint32_t id, uint32_t backend) {
  ccv_nnc_cmd_t cmd = c.cmd(id, backend);
  cmd.info.size.dim[2] = c.C / c.G;
  return cmd;
}

template <class C>
std::string name(const C& c, int dt) {
  char b[256];
  std::snprintf(b, sizeof(b), "%s%s N%d %dx%d C%d K%d w%dx%d s%dx%d p%d,%d/%d,%d d%dx%d g%d%s %s",
                c.format == NHWC ? "NHWC" : "NCHW", c.batched ? "" : " 3-d", c.N, c.H, c.W, c.C, c.K, c.KH, c.KW, c.SH,
                c.SW, c.PT, c.PB, c.PL, c.PR, c.DH, c.DW, c.G, c.views ? " views" : "", tname(dt).c_str());
  return b;
}

// Packed operands only here (views reach the graph path as the packed copies
// cudnn.cpp stages; they run in ExistingCases).
std::vector<Case> conv_cases() {
  std::vector<Case> cs;
  for (int f : {NHWC, NCHW}) {
    for (const auto& k : nnc_test_conv::odd_conv_cases(f)) cs.push_back(k);
    Case r{4, 14, 14, 32, 64, 5, 5};  // the reference network's second layer (tensor-core sizes)
    r.PT = r.PB = r.PL = r.PR = 2, r.format = f;
    cs.push_back(r);
  }
  return cs;
}

std::vector<CaseT> convt_cases() {
  std::vector<CaseT> cs;
  for (int f : {NHWC, NCHW}) {
    CaseT a{2, 5, 7, 3, 4, 3, 3};  // odd sizes, pad 1
    a.PT = a.PB = a.PL = a.PR = 1, a.format = f;
    cs.push_back(a);
    CaseT c{1, 5, 4, 4, 8, 3, 2};  // 3-d, groups 4, stride 2x3, dilation 2x1, output_padding 1, pad 1
    c.batched = false, c.G = 4, c.bias = false, c.SH = 2, c.SW = 3, c.DH = 2, c.OP = 1, c.format = f;
    c.PT = c.PB = 1;
    cs.push_back(c);
    CaseT u{2, 8, 8, 64, 32, 2, 2};  // a U-Net up-sampler: 2x2, stride 2
    u.SH = u.SW = 2, u.format = f;
    cs.push_back(u);
  }
  return cs;
}

// Runs cmd on CPU_REF over the CPU sides and on `backend` over the GPU sides;
// true when both ran. Where `no_plan` is given, a refusal for want of a
// graph plan (NNC_CUDNN_GRAPH=2) is not a failure: it is printed, counted
// and the call's outputs are not compared (the graph API may lack engines
// for odd shapes; mode 1 then runs them on the legacy calls). Any other
// failure is.
bool run_pair(ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t& hint, const std::vector<Both*>& in,
              const std::vector<Both*>& out, int* no_plan = nullptr, uint32_t backend = CCV_NNC_BACKEND_GPU_CUDNN,
              ccv_nnc_stream_context_t* stream = nullptr) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  cmd.backend = CCV_NNC_BACKEND_CPU_REF;
  if (exec(cmd, hint, ci, co) != CCV_NNC_EXEC_SUCCESS) {
    ADD_FAILURE() << "CPU_REF: " << ccv_nnc_error_message();
    return false;
  }
  cmd.backend = backend;
  const int r = exec(cmd, hint, gi, go, stream);
  if (stream) ccv_nnc_stream_context_wait(stream);
  if (r == CCV_NNC_EXEC_SUCCESS) return true;
  const std::string m = ccv_nnc_error_message();
  if (no_plan && r == CCV_NNC_EXEC_NO_KERNEL && m.find("graph API has no plan") != std::string::npos) {
    ++*no_plan;
    std::printf("no graph plan (counted, not compared): %s\n", m.c_str());
    return false;
  }
  ADD_FAILURE() << "GPU: " << m;
  return false;
}

// Each case: true when every GPU call ran (and was compared).
bool conv_forward_case(const Case& c, int dt, std::mt19937& rng, int* no_plan,
                       ccv_nnc_stream_context_t* stream = nullptr) {
  SCOPED_TRACE(name(c, dt));
  BothPtr x = both({c.x_shape(), false, dt, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr b = both({{c.K}, false, dt, c.format}, rng);
  BothPtr y = both({c.y_shape(), false, dt, c.format}, rng);
  std::vector<Both*> in = {x.get(), w.get()};
  if (c.bias) in.push_back(b.get());
  if (!run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, 0), c.hint(), in, {y.get()}, no_plan,
                CCV_NNC_BACKEND_GPU_CUDNN, stream))
    return false;
  y->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.C / c.G) * c.KH * c.KW + 1), "y");
  return true;
}

bool conv_backward_case(const Case& c, int dt, std::mt19937& rng, int* no_plan) {
  SCOPED_TRACE(name(c, dt) + " backward");
  BothPtr x = both({c.x_shape(), false, dt, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr g = both({c.y_shape(), false, dt, c.format}, rng);
  BothPtr dx = both({c.x_shape(), false, dt, c.format}, rng);
  BothPtr dw = both({c.w_shape(), false, dt, c.format}, rng);
  // (dbias is not the graph path's: the legacy reduction computes it, so it is left out here.)
  if (!run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_BACKWARD, 0), c.hint(), {g.get(), x.get(), w.get()},
                {dx.get(), dw.get(), nullptr}, no_plan))
    return false;
  dx->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.K / c.G) * c.KH * c.KW), "dx");
  dw->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.N) * c.OH() * c.OW()), "dw");
  return true;
}

bool convt_case(const CaseT& c, int dt, std::mt19937& rng, int* no_plan) {
  SCOPED_TRACE(name(c, dt) + " transposed");
  BothPtr x = both({c.x_shape(), false, dt, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, dt, c.format}, rng);
  BothPtr b = both({{c.K}, false, dt, c.format}, rng);
  BothPtr y = both({c.y_shape(), false, dt, c.format}, rng);
  std::vector<Both*> in = {x.get(), w.get()};
  if (c.bias) in.push_back(b.get());
  bool ran = run_pair(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, 0), c.hint(), in, {y.get()}, no_plan);
  if (ran) y->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.C / c.G) * c.KH * c.KW + 1), "y");
  BothPtr g = both({c.y_shape(), false, dt, c.format}, rng);
  BothPtr dx = both({c.x_shape(), false, dt, c.format}, rng);
  BothPtr dw = both({c.w_shape(), false, dt, c.format}, rng);
  if (!run_pair(c.cmd(CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, 0), c.hint(), {g.get(), x.get(), w.get()},
                {dx.get(), dw.get(), nullptr}, no_plan))
    return false;
  dx->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.K / c.G) * c.KH * c.KW), "dx");
  dw->expect_close(rtol_for(dt), atol_for(dt, static_cast<size_t>(c.N) * c.H * c.W), "dw");
  return ran;
}

// Graph only. Shapes without a plan are counted, not failures, except the
// ones the benchmarks time (the reference network's 32 -> 64 layer, the
// U-Net up-sampler), which must run on the graph API in every type.
TEST(CudnnGraph, GraphOnlyConvolution) {
  NNC_REQUIRE_GPU();
  EnvGuard on("NNC_CUDNN_GRAPH", "2"), reject("NNC_CUDNN_GRAPH_REJECT", nullptr);
  std::mt19937 rng(2601);
  int no_plan = 0, calls = 0;
  for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
    for (const Case& c : conv_cases()) {
      const bool required = c.C == 32 && c.K == 64;
      calls += 2;
      EXPECT_TRUE(conv_forward_case(c, dt, rng, &no_plan) || !required)
          << name(c, dt) << ": forward not on the graph API";
      EXPECT_TRUE(conv_backward_case(c, dt, rng, &no_plan) || !required)
          << name(c, dt) << ": backward not on the graph API";
    }
  std::printf("graph API: no plan for %d of %d calls\n", no_plan, calls);
}

TEST(CudnnGraph, GraphOnlyTransposedConvolution) {
  NNC_REQUIRE_GPU();
  EnvGuard on("NNC_CUDNN_GRAPH", "2"), reject("NNC_CUDNN_GRAPH_REJECT", nullptr);
  std::mt19937 rng(2602);
  int no_plan = 0, calls = 0;
  for (int dt : {CCV_32F, CCV_16F, CCV_16BF})
    for (const CaseT& c : convt_cases()) {
      const bool required = c.C == 64 && c.K == 32;
      calls += 2;
      EXPECT_TRUE(convt_case(c, dt, rng, &no_plan) || !required) << name(c, dt) << ": not on the graph API";
    }
  std::printf("graph API: no plan for %d of %d calls\n", no_plan, calls);
}

// On a GPU stream context: the plan cache that lives with the stream's own
// handle; the same shape again on a second stream (a second cache).
TEST(CudnnGraph, GraphOnlyOnStreams) {
  NNC_REQUIRE_GPU();
  EnvGuard on("NNC_CUDNN_GRAPH", "2"), reject("NNC_CUDNN_GRAPH_REJECT", nullptr);
  std::mt19937 rng(2603);
  Case c{4, 12, 12, 8, 16, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  for (int round = 0; round < 2; round++) {
    ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
    ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
    int no_plan = 0;
    EXPECT_TRUE(conv_forward_case(c, CCV_32F, rng, &no_plan, s));
    EXPECT_TRUE(conv_forward_case(c, CCV_32F, rng, &no_plan, s));  // the cached plan
    ccv_nnc_stream_context_free(s);
  }
}

// Every engine configuration rejected: no plan for any shape.
TEST(CudnnGraph, NoPlanRunsTheLegacyCalls) {
  NNC_REQUIRE_GPU();
  EnvGuard first("NNC_CUDNN_GRAPH", "1"), reject("NNC_CUDNN_GRAPH_REJECT", "1");
  std::mt19937 rng(2604);
  Case c{2, 9, 7, 6, 8, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1, c.G = 2;
  for (int round = 0; round < 2; round++) {  // the second time the shape is known to have no plan
    SCOPED_TRACE(round ? "again" : "first");
    for (int dt : {CCV_32F, CCV_16F}) {
      EXPECT_TRUE(conv_forward_case(c, dt, rng, nullptr));
      EXPECT_TRUE(conv_backward_case(c, dt, rng, nullptr));
    }
    CaseT t{2, 5, 7, 3, 4, 3, 3};
    t.PT = t.PB = t.PL = t.PR = 1;
    EXPECT_TRUE(convt_case(t, CCV_32F, rng, nullptr));
  }
}

TEST(CudnnGraph, NoPlanGraphOnlyRefusesOrFallsBack) {
  NNC_REQUIRE_GPU();
  EnvGuard only("NNC_CUDNN_GRAPH", "2"), reject("NNC_CUDNN_GRAPH_REJECT", "1");
  std::mt19937 rng(2605);
  Case c{2, 9, 7, 5, 4, 3, 3};
  c.PT = c.PB = c.PL = c.PR = 1;
  BothPtr x = both({c.x_shape(), false, CCV_32F, c.format}, rng);
  BothPtr w = both({c.w_shape(), false, CCV_32F, c.format}, rng);
  BothPtr y = both({c.y_shape(), false, CCV_32F, c.format}, rng);
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE(round ? "again" : "first");
    // GPU_CUDNN named: refused, saying why, y untouched.
    EXPECT_EQ(exec(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_GPU_CUDNN), c.hint(), {x->gpu(), w->gpu()},
                   {y->gpu()}),
              CCV_NNC_EXEC_NO_KERNEL);
    const std::string m = ccv_nnc_error_message();
    EXPECT_NE(m.find("graph API has no plan"), std::string::npos) << m;
    EXPECT_NE(m.find("NNC_CUDNN_GRAPH_REJECT"), std::string::npos) << m;
    if (round) {
      EXPECT_NE(m.find("as an earlier call of this shape found"), std::string::npos) << m;
    }
    y->expect_close(0, 0, "y untouched after the refusal");
  }
  // Chosen automatically: the next backend (GPU_REF) runs it.
  ASSERT_TRUE(run_pair(conv_cmd(c, CCV_NNC_CONVOLUTION_FORWARD, 0), c.hint(), {x.get(), w.get()}, {y.get()}, nullptr,
                       0));
  y->expect_close(rtol_for(CCV_32F), atol_for(CCV_32F, static_cast<size_t>(c.C) * c.KH * c.KW), "y on GPU_REF");
}

// The existing convolution tests, rerun with the graph path on: this program
// again in a child process (NNC_CUDNN_GRAPH=1 and NNC_CUDNN_GRAPH_VERBOSE=1
// inherited), its output copied here with each line prefixed "graph| " (so
// that scripts reading this program's own "[  FAILED  ]" / "[ RUN      ]"
// lines do not take them for its own; this test's failure names the child's
// failures). Skipped under a CUDA tool that injects itself
// (compute-sanitizer: CUDA_INJECTION64_PATH), where the rerun would be slow
// and the tool would not watch the child anyway.
TEST(CudnnGraph, ExistingCases) {
  NNC_REQUIRE_GPU();
  if (std::getenv("CUDA_INJECTION64_PATH")) GTEST_SKIP() << "under a CUDA tool (CUDA_INJECTION64_PATH set)";
  EnvGuard first("NNC_CUDNN_GRAPH", "1"), reject("NNC_CUDNN_GRAPH_REJECT", nullptr);
  EnvGuard verbose("NNC_CUDNN_GRAPH_VERBOSE", "1"), no_xml("GTEST_OUTPUT", nullptr);
  const std::string filter =
      "Cudnn.ConvolutionForwardMatchesCpuRef:Cudnn.ConvolutionForwardOnViews:"
      "Cudnn.ConvolutionBackwardEveryOutputSubset:Cudnn.ConvolutionIsNotTf32:Cudnn.ConvolutionOnAStream:"
      "Cudnn.HalfConvolutionForwardMatchesCpuRef:Cudnn.HalfConvolutionBackwardMatchesCpuRef:"
      "Cudnn.HalfConvolutionAccumulatesInFp32:ConvTransposeGpu.ForwardMatchesCpuRef:"
      "ConvTransposeGpu.BackwardEveryOutputSubset:ConvTransposeGpu.OnAStream";
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(len, 0) << "cannot read /proc/self/exe";
  self[len] = 0;
  const std::string cmd = std::string("'") + self + "' --gtest_color=no --gtest_filter='" + filter + "' 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr) << "cannot start " << cmd;
  char line[4096];
  int passed_line = 0, planned = 0, no_plan = 0;
  std::string failed;
  std::printf("---- the child run (NNC_CUDNN_GRAPH=1): %s\n", filter.c_str());
  while (std::fgets(line, sizeof(line), f)) {
    std::printf("graph| %s", line);  // prefixed: not this run's own gtest lines
    const std::string l(line);
    if (l.find("[  PASSED  ]") == 0) passed_line = 1;
    if (l.find("cuDNN graph API: ") == 0) ++(l.find(": no plan: ") != std::string::npos ? no_plan : planned);
    if (l.find("[  FAILED  ] ") == 0 && l.find(" ms)") != std::string::npos)
      failed += l.substr(13, l.find(' ', 13) - 13) + " ";
  }
  const int status = pclose(f);
  std::printf("---- end of the child run (status %d): the graph API planned %d shapes, had no plan for %d (the legacy "
              "calls ran those)\n",
              status, planned, no_plan);
  EXPECT_EQ(status, 0) << "the convolution tests failed with NNC_CUDNN_GRAPH=1 (their output is above): " << failed;
  EXPECT_TRUE(passed_line) << "the child run printed no PASSED line";
  EXPECT_GT(planned, 0) << "the graph API planned none of the convolution tests' shapes";
}

}  // namespace
