// GEMM on GPU_CUBLAS against CPU_REF: forward and backward on random
// configurations (fixed seeds) — odd sizes 1, 3, 17, 129; every transpose;
// 2-d, 3-d and 4-d products; batch broadcast both ways; padded and
// column-major views; every bias shape (cuBLASLt's epilogue and the fill
// path) — in fp32, fp16, bf16 and fp64; the TF32 and fp16-accumulation
// flags; a GPU stream context; and the refusals (inner dimensions, mixed
// types, operands cuBLAS cannot address).
//
// Each output's whole parent buffer (views: padding included, which must
// stay as it was) is compared element by element with CPU_REF's, which sums
// in double and rounds once. Tolerance for an element with CPU_REF value r:
//
//   |gpu - r| <= 2 u_out |r| + (n u_acc + 2 u_in + p u_out) S + n tiny
//
// S = sum of |products| (CPU_REF run again on |inputs|: the same command on
// absolute values gives exactly that sum, and for dbias the sum of |g|); n an
// upper bound on the number of terms of the sum (k times the batch count);
// u_out the unit roundoff of the stored output (both sides round once: fp32
// 2^-24, fp16 2^-11, bf16 2^-8, fp64 2^-53); u_acc that of the accumulation
// (fp32 2^-24 by default; fp16 2^-11 with CCV_NNC_GEMM_16F; the standard
// bound for recursive summation is n u_acc S; fp16 accumulation also rounds
// each product, hence n counts one more); u_in the rounding of the inputs
// before the products (0, except TF32: 2^-10, twice for a product — the
// tensor cores may truncate to TF32's 10 bits rather than round); p the number
// of partial sums rounded to the storage type (a broadcast operand's gradient
// that is not one GEMM is summed by calls in sequence; with fp32 accumulation
// the partial sums stay in fp32 scratch and are rounded once, p = 0; with
// CCV_NNC_GEMM_16F each call writes its partial sum into the output, p = the
// batch count; 0 for the forward); tiny
// the spacing of the storage type's subnormals (fp16: 2^-24, the size of
// products of two small test values; 0 elsewhere at these magnitudes). fp16 and
// bf16 products are exact in fp32, so by default fp16 differs from CPU_REF
// only by the output rounding plus k 2^-24 S. A wrong index, stride, beta or
// bias gives errors of the order of S itself, far outside these bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/common/gemm_cases.hpp"
#include "unit/cuda/gpu.hpp"

namespace {

using nnc_test_gemm::count;
using nnc_test_gemm::Dims;
using nnc_test_gemm::from_bf16;
using nnc_test_gemm::from_half;
using nnc_test_gemm::gemm_cmd;
using nnc_test_gemm::Kind;
using nnc_test_gemm::params;
using nnc_test_gemm::Tensor;
using nnc_test_gemm::to_bf16;
using nnc_test_gemm::to_half;

double get(const ccv_nnc_tensor_t* t, size_t i) {
  switch (CCV_GET_DATA_TYPE(t->info.datatype)) {
    case CCV_64F:
      return t->data.f64[i];
    case CCV_16F:
      return from_half(reinterpret_cast<const uint16_t*>(t->data.u8)[i]);
    case CCV_16BF:
      return from_bf16(reinterpret_cast<const uint16_t*>(t->data.u8)[i]);
    default:
      return t->data.f32[i];
  }
}
void set(ccv_nnc_tensor_t* t, size_t i, double v) {
  switch (CCV_GET_DATA_TYPE(t->info.datatype)) {
    case CCV_64F:
      t->data.f64[i] = v;
      return;
    case CCV_16F:
      reinterpret_cast<uint16_t*>(t->data.u8)[i] = to_half(static_cast<float>(v));
      return;
    case CCV_16BF:
      reinterpret_cast<uint16_t*>(t->data.u8)[i] = to_bf16(static_cast<float>(v));
      return;
    default:
      t->data.f32[i] = static_cast<float>(v);
      return;
  }
}

int run(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
        ccv_nnc_stream_context_t* stream = nullptr) {
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), stream);
}

ccv_nnc_cmd_t transfer() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, p, 0);
}

// A tensor three times over (the CPU copy, a CPU copy of its absolute values,
// the GPU copy), each the same view (unit/common/gemm_cases.hpp's Kind), or
// none, of its own parent buffer.
struct Trio {
  Dims dims;
  Tensor cpu_parent, abs_parent, gpu_parent;
  Tensor cpu_view, abs_view, gpu_view;
  ccv_nnc_tensor_t* cpu() const { return cpu_view ? cpu_view.get() : cpu_parent.get(); }
  ccv_nnc_tensor_t* abs() const { return abs_view ? abs_view.get() : abs_parent.get(); }
  ccv_nnc_tensor_t* gpu() const { return gpu_view ? gpu_view.get() : gpu_parent.get(); }
  size_t size() const { return ccv_nnc_tensor_count(cpu_parent->info); }
};

Trio make(int datatype, const Dims& dims, Kind kind, std::mt19937& rng) {
  Trio t;
  t.dims = dims;
  const nnc_test_gemm::Layout l = nnc_test_gemm::layout(dims, kind);
  t.cpu_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, l.parent, false), 0));
  t.abs_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, l.parent, false), 0));
  t.gpu_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, l.parent, true), 0));
  EXPECT_TRUE(t.gpu_parent) << ccv_nnc_error_message();
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < count(l.parent); i++) {
    set(t.cpu_parent.get(), i, u(rng));
    set(t.abs_parent.get(), i, std::fabs(get(t.cpu_parent.get(), i)));  // exact in every type
  }
  ccv_nnc_tensor_t* src = t.cpu_parent.get();
  ccv_nnc_tensor_t* dst = t.gpu_parent.get();
  EXPECT_EQ(ccv_nnc_cmd_exec(transfer(), ccv_nnc_no_hint, 0, &src, 1, &dst, 1, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  if (l.kind == Kind::plain) return t;
  auto view = [&](ccv_nnc_tensor_t* parent, bool gpu) {
    return Tensor(reinterpret_cast<ccv_nnc_tensor_t*>(
        ccv_nnc_tensor_view_new(parent, params(datatype, dims, gpu), l.ofs, l.stride)));
  };
  t.cpu_view = view(t.cpu_parent.get(), false);
  t.abs_view = view(t.abs_parent.get(), false);
  t.gpu_view = view(t.gpu_parent.get(), true);
  EXPECT_TRUE(t.cpu_view && t.gpu_view) << ccv_nnc_error_message();
  return t;
}

// The GPU parent buffer back on the host.
Tensor download(const Trio& t) {
  Tensor back(ccv_nnc_tensor_new(nullptr,
                                 params(
                                     CCV_GET_DATA_TYPE(t.cpu_parent->info.datatype),
                                     [&] {
                                       Dims d;
                                       for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t.cpu_parent->info.dim[i]; i++)
                                         d.push_back(t.cpu_parent->info.dim[i]);
                                       return d;
                                     }(),
                                     false),
                                 0));
  ccv_nnc_tensor_t* src = t.gpu_parent.get();
  ccv_nnc_tensor_t* dst = back.get();
  EXPECT_EQ(ccv_nnc_cmd_exec(transfer(), ccv_nnc_no_hint, 0, &src, 1, &dst, 1, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  return back;
}

struct Precision {
  double u_out, u_acc, u_in, tiny;
};
Precision precision(int datatype, int flags) {
  const double f32 = std::ldexp(1.0, -24);
  switch (datatype) {
    case CCV_64F:
      return {std::ldexp(1.0, -53), std::ldexp(1.0, -53), 0, 0};
    case CCV_16F:
      return {std::ldexp(1.0, -11), (flags & CCV_NNC_GEMM_16F) ? std::ldexp(1.0, -11) : f32, 0, f32};
    case CCV_16BF:
      return {std::ldexp(1.0, -8), f32, 0, 0};
    default:
      return {f32, f32, (flags & CCV_NNC_GEMM_32TF) ? std::ldexp(1.0, -10) : 0, 0};
  }
}

// Compares the GPU's whole parent buffer with CPU_REF's (ref) given the
// absolute-value sums (S, same layout).
void expect_within(const Trio& out, const ccv_nnc_tensor_t* S, int64_t terms, const Precision& pr,
                   const std::string& what, int64_t partials = 0) {
  Tensor got = download(out);
  const ccv_nnc_tensor_t* ref = out.cpu_parent.get();
  int bad = 0;
  for (size_t i = 0; i < out.size(); i++) {
    const double r = get(ref, i), g = get(got.get(), i), s = std::fabs(get(S, i));
    const double n = static_cast<double>(terms);
    const double tol = 2 * pr.u_out * std::fabs(r) +
                       (n * pr.u_acc + 2 * pr.u_in + static_cast<double>(partials) * pr.u_out) * s + n * pr.tiny +
                       1e-300;
    if (!(std::fabs(g - r) <= tol) && bad++ < 4)
      ADD_FAILURE() << what << ": element " << i << " of its buffer is " << g << ", CPU_REF " << r << " (tolerance "
                    << tol << ")";
  }
}

// A random GEMM (unit/common/gemm_cases.hpp's generator, as test/unit/gemm_plan
// draws it, but for the budget and a bias of shape [n] twice as likely).
nnc_test_gemm::Case random_config(std::mt19937& rng, size_t budget) {
  return nnc_test_gemm::random_case(rng, budget, {0, 1, 1, 2, 3, 4, 5});
}

const char* type_name(int datatype) {
  switch (datatype) {
    case CCV_16F:
      return "16F";
    case CCV_16BF:
      return "16BF";
    case CCV_64F:
      return "64F";
    default:
      return "32F";
  }
}

// A random run: one test (GemmGpu.<name>), `configs` random cases of one
// direction, datatype and flags, from a seed of its own.
struct RandomRun {
  const char* name;
  bool backward;
  int datatype, flags, configs;
  uint32_t seed;
};
constexpr RandomRun kRandomRuns[] = {
    {"ForwardFp32MatchesCpuRef", false, CCV_32F, 0, 150, 101},
    {"ForwardFp16MatchesCpuRef", false, CCV_16F, 0, 100, 102},
    {"ForwardBf16MatchesCpuRef", false, CCV_16BF, 0, 100, 103},
    {"ForwardFp64MatchesCpuRef", false, CCV_64F, 0, 40, 104},
    {"ForwardFp16WithFp16AccumulationWithinItsBound", false, CCV_16F, CCV_NNC_GEMM_16F, 60, 105},
    {"ForwardFp32WithTf32AllowedWithinItsBound", false, CCV_32F, CCV_NNC_GEMM_32TF, 60, 106},
    {"BackwardFp32MatchesCpuRef", true, CCV_32F, 0, 120, 201},
    {"BackwardFp16MatchesCpuRef", true, CCV_16F, 0, 80, 202},
    {"BackwardBf16MatchesCpuRef", true, CCV_16BF, 0, 80, 203},
    {"BackwardFp16WithFp16AccumulationWithinItsBound", true, CCV_16F, CCV_NNC_GEMM_16F, 40, 204},
};

// Runs the command three times: CPU_REF on the values, CPU_REF on their
// absolute values, GPU_CUBLAS; io(side) gives that side's inputs and outputs.
// A failed run is a fatal failure (the caller returns).
using Side = ccv_nnc_tensor_t* (Trio::*)() const;
template <class Io>
void run_three(uint32_t id, const nnc_test_gemm::Case& c, int flags, const std::string& what, Io io) {
  const std::pair<Side, uint32_t> sides[3] = {{&Trio::cpu, CCV_NNC_BACKEND_CPU_REF},
                                              {&Trio::abs, CCV_NNC_BACKEND_CPU_REF},
                                              {&Trio::gpu, CCV_NNC_BACKEND_GPU_CUBLAS}};
  for (const auto& [side, backend] : sides) {
    const auto [in, out] = io(side);
    ASSERT_EQ(run(gemm_cmd(id, c.ta, c.tb, flags, backend), in, out), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
  }
}

void forward_case(const RandomRun& r, const nnc_test_gemm::Case& c, const Precision& pr, std::mt19937& rng) {
  const int dt = r.datatype;
  Trio a = make(dt, c.a, c.ka, rng), w = make(dt, c.w, c.kw, rng), b = make(dt, c.b, c.kb, rng);
  Trio bias;
  if (!c.bias.empty()) bias = make(dt, c.bias, c.kbias, rng);
  const std::string what = std::string(type_name(dt)) + " forward " + c.text;
  // The padding of b's views: CPU_REF leaves the initial values, and so must the GPU.
  run_three(CCV_NNC_GEMM_FORWARD, c, r.flags, what, [&](Side f) {
    std::vector<ccv_nnc_tensor_t*> in = {(a.*f)(), (w.*f)()};
    if (!c.bias.empty()) in.push_back((bias.*f)());
    return std::make_pair(in, std::vector<ccv_nnc_tensor_t*>{(b.*f)()});
  });
  if (::testing::Test::HasFatalFailure()) return;
  // |a||w| + |bias| for S; the padding of the abs buffer holds |initial|, which bounds nothing but is harmless.
  // A 16-bit output may be rounded twice: cuBLAS(Lt) may store a partial
  // result (the product before the bias, or a split-k partial sum) in the
  // output type. Seen on an H200 with cuBLAS 13: a bf16 forward with bias 2
  // ulps from CPU_REF. One more rounding of something no larger than S: p = 1.
  const int64_t partials = dt == CCV_16F || dt == CCV_16BF ? 1 : 0;
  expect_within(b, b.abs_parent.get(), static_cast<int64_t>(c.k) + 2, pr, what, partials);
}

void backward_case(const RandomRun& r, const nnc_test_gemm::Case& c, int it, const Precision& pr, std::mt19937& rng) {
  const int dt = r.datatype;
  Trio g = make(dt, c.b, c.kb, rng), a = make(dt, c.a, c.ka, rng), w = make(dt, c.w, c.kw, rng);
  const int pattern = it % 6;
  const bool want_da = pattern % 3 != 1, want_dw = pattern % 3 != 0, want_db = pattern >= 3;
  Trio da, dw, db;
  if (want_da) da = make(dt, c.a, c.kb, rng);
  if (want_dw) dw = make(dt, c.w, c.ka, rng);
  if (want_db) db = make(dt, c.bias.empty() ? Dims{c.b.back()} : c.bias, c.kbias, rng);
  const std::string what = std::string(type_name(dt)) + " backward " + c.text + " outputs" + (want_da ? " da" : "") +
                           (want_dw ? " dw" : "") + (want_db ? " dbias" : "");
  run_three(CCV_NNC_GEMM_BACKWARD, c, r.flags, what, [&](Side f) {
    std::vector<ccv_nnc_tensor_t*> in = {(g.*f)(), want_dw ? (a.*f)() : nullptr, want_da ? (w.*f)() : nullptr};
    std::vector<ccv_nnc_tensor_t*> out = {want_da ? (da.*f)() : nullptr, want_dw ? (dw.*f)() : nullptr,
                                          want_db ? (db.*f)() : nullptr};
    return std::make_pair(in, out);
  });
  if (::testing::Test::HasFatalFailure()) return;
  // Terms per output: at most max(m, n, k) times the batch (a broadcast operand's gradient sums the batch).
  const int64_t terms = static_cast<int64_t>(std::max({c.m, c.n, c.k})) * static_cast<int64_t>(c.batch) + 1;
  const int64_t partials = (r.flags & CCV_NNC_GEMM_16F) ? static_cast<int64_t>(c.batch) : 0;
  if (want_da) expect_within(da, da.abs_parent.get(), terms, pr, what + " (da)", partials);
  if (want_dw) expect_within(dw, dw.abs_parent.get(), terms, pr, what + " (dw)", partials);
  if (want_db) expect_within(db, db.abs_parent.get(), static_cast<int64_t>(count(c.b)), pr, what + " (dbias)");
}

// The run's cases one after the other, up to the first that fails.
void random_run(const RandomRun& r) {
  std::mt19937 rng(r.seed);
  const Precision pr = precision(r.datatype, r.flags);
  for (int it = 0; it < r.configs; it++) {
    const nnc_test_gemm::Case c = random_config(rng, r.backward ? 100000 : 200000);
    if (r.backward)
      backward_case(r, c, it, pr, rng);
    else
      forward_case(r, c, pr, rng);
    if (::testing::Test::HasFailure()) return;
  }
}

class RandomRunTest : public ::testing::Test {
 public:
  explicit RandomRunTest(const RandomRun& r) : r_(r) {}
  void TestBody() override {
    NNC_REQUIRE_GPU();
    random_run(r_);
  }

 private:
  RandomRun r_;
};

const bool kRandomRunsRegistered = [] {
  for (const RandomRun& r : kRandomRuns)
    ::testing::RegisterTest("GemmGpu", r.name, nullptr, nullptr, __FILE__, __LINE__,
                            [r]() -> ::testing::Test* { return new RandomRunTest(r); });
  return true;
}();

// TF32 is opt-in. Every input is 1 + 2^-15 (TF32 keeps 10 mantissa bits, so
// it reads 1): over k = 64 the exact sum is 64 + 2^-8 + 2^-24, which fp32
// holds as 64 + 2^-8 (its spacing at 64 is 2^-17). Without the flag every
// element must be that to ~1e-5 relative of the difference (fp32 sums), i.e.
// within 2^-14 of it; with the flag cuBLAS may use TF32, and on an H100 it
// does: the elements read 64.
TEST(GemmGpu, Tf32OnlyWithTheFlag) {
  NNC_REQUIRE_GPU();
  const int M = 128, N = 128, K = 64;
  const float x = 1.f + std::ldexp(1.f, -15);
  Tensor a(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {M, K}, false), 0));
  Tensor w(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {K, N}, false), 0));
  for (int i = 0; i < M * K; i++) a->data.f32[i] = x;
  for (int i = 0; i < K * N; i++) w->data.f32[i] = x;
  Tensor ga(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {M, K}, true), 0));
  Tensor gw(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {K, N}, true), 0));
  Tensor gb(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {M, N}, true), 0));
  Tensor back(ccv_nnc_tensor_new(nullptr, params(CCV_32F, {M, N}, false), 0));
  ASSERT_EQ(run(transfer(), {a.get(), w.get()}, {ga.get(), gw.get()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const int none[2] = {0, 0};
  const double exact = 64.0 + std::ldexp(1.0, -8);
  for (int flags : {0, static_cast<int>(CCV_NNC_GEMM_32F), static_cast<int>(CCV_NNC_GEMM_32TF)}) {
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, none, none, flags, CCV_NNC_BACKEND_GPU_CUBLAS), {ga.get(), gw.get()},
                  {gb.get()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    ASSERT_EQ(run(transfer(), {gb.get()}, {back.get()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    int off = 0, at64 = 0;
    for (int i = 0; i < M * N; i++) {
      const double v = back->data.f32[i];
      if (std::fabs(v - exact) > std::ldexp(1.0, -14)) off++;
      if (v == 64.0) at64++;
    }
    if (flags & CCV_NNC_GEMM_32TF) {
      // Within the TF32 bound of the exact sum (2 · 2^-10 · 64 + fp32 sums), and TF32 was used.
      for (int i = 0; i < M * N; i++) ASSERT_NEAR(back->data.f32[i], exact, 2 * std::ldexp(1.0, -10) * 64 + 1e-4);
      EXPECT_EQ(at64, M * N) << "CCV_NNC_GEMM_32TF did not reach cuBLAS (no element lost its low bits)";
    } else {
      EXPECT_EQ(off, 0) << "flags " << flags << ": " << off << " elements lost their low bits (TF32 without the flag?)";
    }
  }
}

// The bias epilogue and the plain path on a GPU stream context (work queued,
// then waited for): the fully connected layer over a [4, 5, 64] input.
TEST(GemmGpu, OnAStreamContext) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(9);
  const int none[2] = {0, 0}, tb[2] = {0, 1};
  Trio x = make(CCV_32F, {4, 5, 64}, Kind::plain, rng), w = make(CCV_32F, {33, 64}, Kind::plain, rng);
  Trio bias = make(CCV_32F, {33}, Kind::plain, rng), y = make(CCV_32F, {4, 5, 33}, Kind::plain, rng);
  ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, none, tb, 0, CCV_NNC_BACKEND_CPU_REF), {x.cpu(), w.cpu(), bias.cpu()},
                {y.cpu()}),
            CCV_NNC_EXEC_SUCCESS);
  ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, none, tb, 0, CCV_NNC_BACKEND_CPU_REF), {x.abs(), w.abs(), bias.abs()},
                {y.abs()}),
            CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  EXPECT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, none, tb, 0, CCV_NNC_BACKEND_GPU_CUBLAS), {x.gpu(), w.gpu(), bias.gpu()},
                {y.gpu()}, s),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  ccv_nnc_stream_context_wait(s);
  ccv_nnc_stream_context_free(s);
  expect_within(y, y.abs_parent.get(), 65, precision(CCV_32F, 0), "fc on a stream context");
}

// Refusals: an error code and a message, never a crash.
TEST(GemmGpu, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(5);
  const int none[2] = {0, 0};
  const ccv_nnc_cmd_t fwd = gemm_cmd(CCV_NNC_GEMM_FORWARD, none, none, 0, CCV_NNC_BACKEND_GPU_CUBLAS);
  // Inner dimensions that differ, then mixed data types: w as the row says.
  const struct {
    int w_datatype;
    Dims w_dims;
    const char* message;
  } invalid[] = {{CCV_32F, {6, 3}, "inner dimensions differ"}, {CCV_16F, {5, 3}, "data types differ"}};
  for (const auto& x : invalid) {
    Trio a = make(CCV_32F, {4, 5}, Kind::plain, rng), w = make(x.w_datatype, x.w_dims, Kind::plain, rng);
    Trio b = make(CCV_32F, {4, 3}, Kind::plain, rng);
    EXPECT_EQ(run(fwd, {a.gpu(), w.gpu()}, {b.gpu()}), CCV_NNC_EXEC_INVALID) << x.message;
    EXPECT_NE(std::string(ccv_nnc_error_message()).find(x.message), std::string::npos) << ccv_nnc_error_message();
  }
  {  // an operand with no unit stride: every other column of every other row
    Trio parent = make(CCV_32F, {8, 10}, Kind::plain, rng);
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
    stride[0] = 20, stride[1] = 2;
    Tensor a(reinterpret_cast<ccv_nnc_tensor_t*>(
        ccv_nnc_tensor_view_new(parent.gpu(), params(CCV_32F, {4, 5}, true), ofs, stride)));
    ASSERT_TRUE(a) << ccv_nnc_error_message();
    Trio w = make(CCV_32F, {5, 3}, Kind::plain, rng), b = make(CCV_32F, {4, 3}, Kind::plain, rng);
    EXPECT_EQ(run(fwd, {a.get(), w.gpu()}, {b.gpu()}), CCV_NNC_EXEC_NO_KERNEL);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("unit-stride"), std::string::npos) << ccv_nnc_error_message();
  }
  {  // a CPU operand beside GPU ones
    Trio a = make(CCV_32F, {4, 5}, Kind::plain, rng), w = make(CCV_32F, {5, 3}, Kind::plain, rng);
    Trio b = make(CCV_32F, {4, 3}, Kind::plain, rng);
    EXPECT_NE(run(fwd, {a.cpu(), w.gpu()}, {b.gpu()}), CCV_NNC_EXEC_SUCCESS);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
  {  // backward: dw's shape is not w's
    Trio g = make(CCV_32F, {4, 3}, Kind::plain, rng), a = make(CCV_32F, {4, 5}, Kind::plain, rng);
    Trio dw = make(CCV_32F, {5, 4}, Kind::plain, rng);
    const ccv_nnc_cmd_t bwd = gemm_cmd(CCV_NNC_GEMM_BACKWARD, none, none, 0, CCV_NNC_BACKEND_GPU_CUBLAS);
    EXPECT_EQ(run(bwd, {g.gpu(), a.gpu(), nullptr}, {nullptr, dw.gpu()}), CCV_NNC_EXEC_INVALID);
    EXPECT_STRNE(ccv_nnc_error_message(), "");
  }
}

}  // namespace
