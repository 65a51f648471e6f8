// The GPU_CUBLAS GEMM plans (cmd/common/gemm_plan.hpp) on the CPU: for
// hundreds of random GEMM_FORWARD / GEMM_BACKWARD configurations (fixed seed:
// odd sizes 1, 3, 17, 129; every transpose; 2-d, 3-d and 4-d products; batch
// broadcast both ways; padded and column-major views; every bias shape), the
// plan is executed by a naive column-major GEMM over the host buffers — read
// exactly as cuBLAS reads them (op, m, n, k, ld, strides, bases, beta, the bias
// epilogue), plus the bias fill and the dbias reduction plans — and the whole
// parent buffers of the outputs (padding included) must equal CPU_REF's.
#include "cmd/common/gemm_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/common/gemm_cases.hpp"

namespace {

namespace gp = nnc::gemm_plan;
using nnc_test_gemm::count;
using nnc_test_gemm::Dims;
using nnc_test_gemm::gemm_cmd;
using nnc_test_gemm::Kind;
using nnc_test_gemm::params;
using nnc_test_gemm::Tensor;

// A tensor or a view (unit/common/gemm_cases.hpp's Kind) of random values.
struct Buf {
  Tensor parent, view;
  Dims dims;
  ccv_nnc_tensor_t* get() const { return view ? view.get() : parent.get(); }
  float* base() const { return parent->data.f32; }
  size_t size() const { return count(dims_of_parent); }
  Dims dims_of_parent;
};

Buf make(const Dims& dims, Kind kind, std::mt19937& rng) {
  Buf b;
  b.dims = dims;
  const nnc_test_gemm::Layout l = nnc_test_gemm::layout(dims, kind);
  b.dims_of_parent = l.parent;
  b.parent.reset(ccv_nnc_tensor_new(nullptr, params(CCV_32F, l.parent), 0));
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < count(l.parent); i++) b.parent->data.f32[i] = u(rng);
  if (l.kind == Kind::plain) return b;
  b.view.reset(reinterpret_cast<ccv_nnc_tensor_t*>(
      ccv_nnc_tensor_view_new(b.parent.get(), params(CCV_32F, dims), l.ofs, l.stride)));
  EXPECT_TRUE(b.view) << ccv_nnc_error_message();
  return b;
}

// ---------------------------------------------------------------------------
// The plans executed as cuBLAS would (column-major, fp32 storage, double sums).

struct Counts {
  std::map<std::string, int> seen;
  void hit(const std::string& s) { seen[s]++; }
};

void run_call(const gp::Call& c, const float* bias, Counts& n, bool all_accumulate = false) {
  if (c.bases.empty()) return;
  const float* A = reinterpret_cast<const float*>(c.a);
  const float* B = reinterpret_cast<const float*>(c.b);
  float* C = reinterpret_cast<float*>(c.c);
  n.hit(c.swapped ? "swapped" : "direct");
  n.hit(std::string("op_a ") + (c.trans_a ? "T" : "N"));
  n.hit(std::string("op_b ") + (c.trans_b ? "T" : "N"));
  if (c.batch > 1) n.hit("strided batch");
  if (c.bases.size() > 1) n.hit("outer loop");
  for (const gp::Base& base : c.bases) {
    const bool accumulate = base.accumulate || all_accumulate;
    if (accumulate) n.hit("accumulate");
    for (int i = 0; i < c.batch; i++) {
      const float* a = A + base.a + i * c.stride_a;
      const float* b = B + base.b + i * c.stride_b;
      float* cc = C + base.c + i * c.stride_c;
      const float* bi = bias ? bias + base.bias + i * c.stride_bias : nullptr;
      for (int r = 0; r < c.m; r++)
        for (int s = 0; s < c.n; s++) {
          double sum = 0;
          for (int q = 0; q < c.k; q++) {
            const double x = c.trans_a ? a[q + r * c.lda] : a[r + q * c.lda];
            const double y = c.trans_b ? b[s + q * c.ldb] : b[q + s * c.ldb];
            sum += x * y;
          }
          float& out = cc[r + s * c.ldc];
          if (accumulate) sum += out;
          if (bi) sum += bi[r];
          out = static_cast<float>(sum);
        }
    }
  }
}

// A call with partial sums run as the fp16 / bf16 backward does: into fp32
// scratch slots (column-major, ld m), then each slot stored into its output.
void run_call_scratch(const gp::Call& c, Counts& n) {
  n.hit("scratch sums");
  const gp::ScratchSums plan = gp::scratch_sums(c);
  ASSERT_EQ(plan.slot.size(), c.bases.size());
  std::vector<float> scratch(static_cast<size_t>(plan.per_slot) * plan.outputs.size(), std::nanf(""));
  gp::Call into = c;
  into.c = reinterpret_cast<unsigned char*>(scratch.data());
  into.ldc = c.m;
  into.stride_c = static_cast<int64_t>(c.m) * c.n;
  for (size_t i = 0; i < c.bases.size(); i++) {
    into.bases = {c.bases[i]};
    into.bases[0].c = plan.slot[i] * plan.per_slot;
    Counts ignored;
    run_call(into, nullptr, ignored);
  }
  float* out = reinterpret_cast<float*>(c.c);
  for (const auto& [off, slot] : plan.outputs) {
    int64_t o[2];
    for (int64_t i = 0; i < plan.store.count; i++) {
      nnc::gpu::plan_offsets(plan.store, 2, i, o);
      out[off + o[0]] = scratch[static_cast<size_t>(slot * plan.per_slot + o[1])];
    }
  }
}

// fallback: run an epilogue plan as the backend does when cuBLASLt offers no
// algorithm (fill, then accumulate every call).
void run_forward(const gp::Forward& f, Counts& n, bool fallback) {
  const bool fill = f.bias == gp::BiasMode::fill || (f.bias == gp::BiasMode::epilogue && fallback);
  if (fill) {
    n.hit("bias fill");
    float* c = reinterpret_cast<float*>(f.gemm.c);
    const float* x = reinterpret_cast<const float*>(f.bias_data);
    int64_t off[2];
    for (int64_t i = 0; i < f.fill.count; i++) {
      nnc::gpu::plan_offsets(f.fill, 2, i, off);
      c[off[0]] = x[off[1]];
    }
  }
  if (f.bias == gp::BiasMode::epilogue) n.hit(fallback ? "bias epilogue fallback" : "bias epilogue");
  const bool epilogue = f.bias == gp::BiasMode::epilogue && !fallback;
  run_call(f.gemm, epilogue ? reinterpret_cast<const float*>(f.bias_data) : nullptr, n, fill);
}

void run_backward(const gp::Backward& b, Counts& n, bool scratch) {
  for (const gp::Call* c : {b.da ? &b.da_gemm : nullptr, b.dw ? &b.dw_gemm : nullptr}) {
    if (!c) continue;
    if (scratch && gp::has_partial_sums(*c))
      run_call_scratch(*c, n);
    else
      run_call(*c, nullptr, n);
  }
  if (b.dbias) {
    n.hit("dbias");
    const float* g = reinterpret_cast<const float*>(b.g_data);
    float* d = reinterpret_cast<float*>(b.dbias_data);
    for (int64_t o = 0; o < b.reduce.outer.count; o++) {
      double s = 0;
      const int64_t go = nnc::gpu::plan_offset(b.reduce.outer, 1, o);
      for (int64_t r = 0; r < b.reduce.inner.count; r++) s += g[go + nnc::gpu::plan_offset(b.reduce.inner, 0, r)];
      d[nnc::gpu::plan_offset(b.reduce.outer, 0, o)] = static_cast<float>(s);
    }
  }
}

// ---------------------------------------------------------------------------
// Random configurations: unit/common/gemm_cases.hpp's generator, up to 300000
// multiply-adds, every bias shape equally likely.

nnc_test_gemm::Case random_config(std::mt19937& rng) {
  return nnc_test_gemm::random_case(rng, 300000, {0, 1, 2, 3, 4, 5});
}

void expect_buffers_equal(const Buf& expected_from, const std::vector<float>& expected, const char* what,
                          const std::string& text, int* failures) {
  const float* got = expected_from.base();
  for (size_t i = 0; i < expected.size(); i++) {
    const double e = expected[i], g = got[i];
    if (!(std::fabs(e - g) <= 1e-5 * std::max(1.0, std::fabs(e)))) {
      if ((*failures)++ < 5)
        ADD_FAILURE() << what << " element " << i << " of its buffer: CPU_REF " << e << ", plan " << g << " — " << text;
      return;
    }
  }
}

std::vector<float> snapshot(const Buf& b) { return std::vector<float>(b.base(), b.base() + b.size()); }
void restore(const Buf& b, const std::vector<float>& v) { std::memcpy(b.base(), v.data(), v.size() * sizeof(float)); }

const std::vector<std::string> kForwardPaths = {"swapped",    "direct",    "op_a N",        "op_a T",
                                                "op_b N",     "op_b T",    "strided batch", "outer loop",
                                                "accumulate", "bias fill", "bias epilogue", "bias epilogue fallback"};

TEST(GemmPlan, ForwardMatchesCpuRefOnRandomConfigurations) {
  std::mt19937 rng(20261127);
  Counts n;
  int failures = 0, folded = 0;
  const int kConfigs = 400;
  for (int it = 0; it < kConfigs; it++) {
    const nnc_test_gemm::Case c = random_config(rng);
    Buf a = make(c.a, c.ka, rng), w = make(c.w, c.kw, rng), b = make(c.b, c.kb, rng);
    Buf bias;
    if (!c.bias.empty()) bias = make(c.bias, c.kbias, rng);
    const ccv_nnc_cmd_t cmd = gemm_cmd(CCV_NNC_GEMM_FORWARD, c.ta, c.tb);
    std::vector<ccv_nnc_tensor_t*> in = {a.get(), w.get()};
    if (!c.bias.empty()) in.push_back(bias.get());
    ccv_nnc_tensor_t* out[1] = {b.get()};
    const std::vector<float> before = snapshot(b);
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out, 1, nullptr),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " — " << c.text;
    const std::vector<float> expected = snapshot(b);
    restore(b, before);
    gp::Options opt;
    opt.fold = it % 4 != 3;  // the general paths too
    opt.epilogue = it % 5 != 4;
    gp::Forward f;
    std::string why;
    ASSERT_TRUE(gp::forward(cmd, in.data(), static_cast<int>(in.size()), out, 1, &f, &why, opt))
        << why << " — " << c.text;
    if (f.gemm.calls() == 1 && f.gemm.batch == 1 &&
        count(c.b) / c.b.back() / (c.b.size() > 1 ? c.b[c.b.size() - 2] : 1) > 1)
      folded++;
    run_forward(f, n, it % 3 == 2);
    expect_buffers_equal(b, expected, "b", c.text, &failures);
  }
  for (const auto& p : kForwardPaths) EXPECT_GT(n.seen[p], 0) << "no configuration took the path: " << p;
  EXPECT_GT(folded, 0) << "no batch folded into one GEMM";
  std::string summary;
  for (const auto& [k, v] : n.seen) summary += k + " " + std::to_string(v) + "; ";
  std::printf("forward paths over %d configurations (%d folded): %s\n", kConfigs, folded, summary.c_str());
}

TEST(GemmPlan, BackwardMatchesCpuRefOnRandomConfigurations) {
  std::mt19937 rng(1127);
  Counts n;
  int failures = 0;
  const int kConfigs = 400;
  for (int it = 0; it < kConfigs; it++) {
    const nnc_test_gemm::Case c = random_config(rng);
    Buf g = make(c.b, c.kb, rng), a = make(c.a, c.ka, rng), w = make(c.w, c.kw, rng);
    // Outputs: a non-empty subset of da, dw, with or without dbias (libnnc's patterns).
    const int pattern = std::uniform_int_distribution<int>(0, 5)(rng);
    const bool want_da = pattern % 3 != 1, want_dw = pattern % 3 != 0, want_db = pattern >= 3;
    Buf da, dw, db;
    if (want_da) da = make(c.a, c.kb, rng);
    if (want_dw) dw = make(c.w, c.ka, rng);
    if (want_db) db = make(c.bias.empty() ? Dims{c.b.back()} : c.bias, c.kbias, rng);
    const ccv_nnc_cmd_t cmd = gemm_cmd(CCV_NNC_GEMM_BACKWARD, c.ta, c.tb);
    ccv_nnc_tensor_t* in[3] = {g.get(), want_dw ? a.get() : nullptr, want_da ? w.get() : nullptr};
    ccv_nnc_tensor_t* out[3] = {want_da ? da.get() : nullptr, want_dw ? dw.get() : nullptr,
                                want_db ? db.get() : nullptr};
    const std::string text =
        c.text + " outputs " + (want_da ? "da " : "") + (want_dw ? "dw " : "") + (want_db ? "dbias" : "");
    std::vector<float> before[3], expected[3];
    const Buf* outs[3] = {&da, &dw, &db};
    for (int i = 0; i < 3; i++)
      if (out[i]) before[i] = snapshot(*outs[i]);
    ASSERT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 3, out, 3, nullptr), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " — " << text;
    for (int i = 0; i < 3; i++)
      if (out[i]) expected[i] = snapshot(*outs[i]), restore(*outs[i], before[i]);
    gp::Options opt;
    opt.fold = it % 4 != 3;
    gp::Backward plan;
    std::string why;
    ASSERT_TRUE(gp::backward(cmd, in, 3, out, 3, &plan, &why, opt)) << why << " — " << text;
    run_backward(plan, n, it % 2 == 1);
    static const char* names[3] = {"da", "dw", "dbias"};
    for (int i = 0; i < 3; i++)
      if (out[i]) expect_buffers_equal(*outs[i], expected[i], names[i], text, &failures);
  }
  // The gradient of a broadcast operand sums products: accumulating calls or a fold over k.
  for (const char* p :
       {"swapped", "direct", "op_a T", "op_b T", "strided batch", "outer loop", "accumulate", "dbias", "scratch sums"})
    EXPECT_GT(n.seen[p], 0) << "no configuration took the path: " << p;
  std::string summary;
  for (const auto& [k, v] : n.seen) summary += k + " " + std::to_string(v) + "; ";
  std::printf("backward paths over %d configurations: %s\n", kConfigs, summary.c_str());
}

// The shapes that matter most give the calls one expects (and cuBLAS's fast
// paths): the fully connected layer over a 3-d input is one GEMM of B·T rows;
// the gradient of its shared weight one GEMM over B·T inner rows; attention's
// Q K^T a single strided batched call.
TEST(GemmPlan, CommonShapesGiveTheExpectedCalls) {
  std::mt19937 rng(7);
  {
    const int ta[2] = {0, 0}, tb[2] = {0, 1};
    Buf x = make({4, 5, 64}, Kind::plain, rng), w = make({32, 64}, Kind::plain, rng),
        y = make({4, 5, 32}, Kind::plain, rng);
    Buf bias = make({32}, Kind::plain, rng);
    const ccv_nnc_cmd_t cmd = gemm_cmd(CCV_NNC_GEMM_FORWARD, ta, tb);
    ccv_nnc_tensor_t* in[3] = {x.get(), w.get(), bias.get()};
    ccv_nnc_tensor_t* out[1] = {y.get()};
    gp::Forward f;
    std::string why;
    ASSERT_TRUE(gp::forward(cmd, in, 3, out, 1, &f, &why)) << why;
    EXPECT_EQ(f.bias, gp::BiasMode::epilogue);
    ASSERT_EQ(f.gemm.calls(), 1);
    EXPECT_EQ(f.gemm.batch, 1);
    EXPECT_TRUE(f.gemm.swapped);
    EXPECT_EQ(f.gemm.m, 32);
    EXPECT_EQ(f.gemm.n, 20);
    EXPECT_EQ(f.gemm.k, 64);
    EXPECT_TRUE(f.gemm.trans_a);  // w [32, 64] row-major is W^T's column-major storage
    EXPECT_FALSE(f.gemm.trans_b);
    EXPECT_EQ(f.gemm.lda, 64);
    EXPECT_EQ(f.gemm.ldb, 64);
    EXPECT_EQ(f.gemm.ldc, 32);
    // dw = g^T x over all 20 rows at once.
    Buf g = make({4, 5, 32}, Kind::plain, rng), dw = make({32, 64}, Kind::plain, rng);
    ccv_nnc_tensor_t* bin[3] = {g.get(), x.get(), nullptr};
    ccv_nnc_tensor_t* bout[3] = {nullptr, dw.get(), nullptr};
    gp::Backward b;
    ASSERT_TRUE(gp::backward(gemm_cmd(CCV_NNC_GEMM_BACKWARD, ta, tb), bin, 3, bout, 3, &b, &why)) << why;
    ASSERT_EQ(b.dw_gemm.calls(), 1);
    EXPECT_EQ(b.dw_gemm.batch, 1);
    EXPECT_EQ(b.dw_gemm.k, 20);
  }
  {
    const int ta[2] = {0, 0}, tb[2] = {2, 3};
    Buf q = make({2, 8, 33, 16}, Kind::plain, rng), k = make({2, 8, 33, 16}, Kind::plain, rng);
    Buf s = make({2, 8, 33, 33}, Kind::plain, rng);
    ccv_nnc_tensor_t* in[2] = {q.get(), k.get()};
    ccv_nnc_tensor_t* out[1] = {s.get()};
    gp::Forward f;
    std::string why;
    ASSERT_TRUE(gp::forward(gemm_cmd(CCV_NNC_GEMM_FORWARD, ta, tb), in, 2, out, 1, &f, &why)) << why;
    ASSERT_EQ(f.gemm.calls(), 1);
    EXPECT_EQ(f.gemm.batch, 16);  // 2 x 8 merged into one strided batch
    EXPECT_EQ(f.gemm.stride_a, 33 * 16);
    EXPECT_EQ(f.gemm.stride_c, 33 * 33);
  }
}

// Operands cuBLAS cannot address (no unit stride either way) are refused with
// a reason that names the tensor.
TEST(GemmPlan, RefusesOperandsWithoutAUnitStride) {
  std::mt19937 rng(3);
  Buf parent = make({8, 10}, Kind::plain, rng);
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  stride[0] = 20, stride[1] = 2;  // every other column of every other row
  Tensor a(
      reinterpret_cast<ccv_nnc_tensor_t*>(ccv_nnc_tensor_view_new(parent.get(), params(CCV_32F, {4, 5}), ofs, stride)));
  ASSERT_TRUE(a) << ccv_nnc_error_message();
  Buf w = make({5, 3}, Kind::plain, rng), b = make({4, 3}, Kind::plain, rng);
  const int none[2] = {0, 0};
  const ccv_nnc_cmd_t cmd = gemm_cmd(CCV_NNC_GEMM_FORWARD, none, none);
  ccv_nnc_tensor_t* in[2] = {a.get(), w.get()};
  ccv_nnc_tensor_t* out[1] = {b.get()};
  gp::Forward f;
  std::string why;
  EXPECT_FALSE(gp::forward(cmd, in, 2, out, 1, &f, &why));
  EXPECT_NE(why.find("a (4x5, row stride 20, column stride 2)"), std::string::npos) << why;
  EXPECT_NE(why.find("unit-stride"), std::string::npos) << why;
  // The CPU reference takes it, of course.
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 2, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
}

TEST(GemmPlan, ComputeModesFollowTheFlags) {
  EXPECT_EQ(gp::compute_of(0, CCV_32F), gp::Compute::f32);
  EXPECT_EQ(gp::compute_of(CCV_NNC_GEMM_32TF, CCV_32F), gp::Compute::f32_tf32);
  EXPECT_EQ(gp::compute_of(CCV_NNC_GEMM_16F, CCV_32F), gp::Compute::f32);
  EXPECT_EQ(gp::compute_of(0, CCV_16F), gp::Compute::f32);
  EXPECT_EQ(gp::compute_of(CCV_NNC_GEMM_16F, CCV_16F), gp::Compute::f16);
  EXPECT_EQ(gp::compute_of(CCV_NNC_GEMM_16F | CCV_NNC_GEMM_32TF, CCV_16BF), gp::Compute::f32);
}

}  // namespace
