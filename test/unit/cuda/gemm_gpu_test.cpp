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
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/cuda/gpu.hpp"

namespace {

using Dims = std::vector<int>;

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const uint32_t mant = x & 0x7fffff;
  if (exp <= 0) return static_cast<uint16_t>(sign);  // test values are never that small but 0
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return static_cast<uint16_t>(h);
}
float from_half(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const uint32_t x = sign | (static_cast<uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

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

size_t count(const Dims& d) {
  size_t c = 1;
  for (int x : d) c *= static_cast<size_t>(x);
  return c;
}

ccv_nnc_tensor_param_t params(int datatype, const Dims& dims, bool gpu) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = gpu ? (static_cast<int>(CCV_TENSOR_GPU_MEMORY) | static_cast<int>(CCV_COMPUTE_DEVICE_000))
               : CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

struct TensorDeleter {
  void operator()(ccv_nnc_tensor_t* t) const {
    if (t && CCV_IS_TENSOR_VIEW(t))
      ccv_nnc_tensor_view_free(reinterpret_cast<ccv_nnc_tensor_view_t*>(t));
    else
      ccv_nnc_tensor_free(t);
  }
};
using Tensor = std::unique_ptr<ccv_nnc_tensor_t, TensorDeleter>;

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
// the GPU copy), each the same view (or none) of its own parent buffer.
enum class Kind { plain, padded, colmajor };
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
  const int nd = static_cast<int>(dims.size());
  if (nd < 2 && kind == Kind::colmajor) kind = Kind::padded;
  Dims big = dims;
  if (kind != Kind::plain)
    for (int& x : big) x += 2;
  if (kind == Kind::colmajor) std::swap(big[nd - 1], big[nd - 2]);
  t.cpu_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, big, false), 0));
  t.abs_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, big, false), 0));
  t.gpu_parent.reset(ccv_nnc_tensor_new(nullptr, params(datatype, big, true), 0));
  EXPECT_TRUE(t.gpu_parent) << ccv_nnc_error_message();
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < count(big); i++) {
    set(t.cpu_parent.get(), i, u(rng));
    set(t.abs_parent.get(), i, std::fabs(get(t.cpu_parent.get(), i)));  // exact in every type
  }
  ccv_nnc_tensor_t* src = t.cpu_parent.get();
  ccv_nnc_tensor_t* dst = t.gpu_parent.get();
  EXPECT_EQ(ccv_nnc_cmd_exec(transfer(), ccv_nnc_no_hint, 0, &src, 1, &dst, 1, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  if (kind == Kind::plain) return t;
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  int acc = 1;
  for (int i = nd; i-- > 0;) stride[i] = acc, acc *= big[i];
  for (int i = 0; i < nd; i++) ofs[i] = 1;
  if (kind == Kind::colmajor) std::swap(stride[nd - 1], stride[nd - 2]);
  auto view = [&](ccv_nnc_tensor_t* parent, bool gpu) {
    return Tensor(
        reinterpret_cast<ccv_nnc_tensor_t*>(ccv_nnc_tensor_view_new(parent, params(datatype, dims, gpu), ofs, stride)));
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

ccv_nnc_cmd_t gemm_cmd(uint32_t id, const int ta[2], const int tb[2], int flags, uint32_t backend) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = p.blas.a[1] = 1;
  p.blas.transpose_a[0] = ta[0], p.blas.transpose_a[1] = ta[1];
  p.blas.transpose_b[0] = tb[0], p.blas.transpose_b[1] = tb[1];
  p.blas.flags = flags;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(id, nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

// A random GEMM (the same generator as test/unit/gemm_plan's).
struct Config {
  int ta[2] = {0, 0}, tb[2] = {0, 0};
  int m = 0, n = 0, k = 0;
  size_t batch = 1;
  Dims a, w, b, bias;
  Kind ka = Kind::plain, kw = Kind::plain, kb = Kind::plain, kbias = Kind::plain;
  std::string text;
};

std::string str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) {
    if (i) s += ',';
    s += std::to_string(d[i]);
  }
  return s + "]";
}

Config random_config(std::mt19937& rng, size_t budget) {
  auto pick = [&](std::initializer_list<int> xs) {
    return *(xs.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(xs.size()) - 1)(rng));
  };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  Config c;
  for (;;) {
    const int m = pick({1, 3, 17, 129}), n = pick({1, 3, 17, 129}), k = pick({1, 3, 17, 129});
    const int bnd = pick({0, 1, 1, 2, 2});
    Dims batch;
    for (int i = 0; i < bnd; i++) batch.push_back(pick({1, 2, 3}));
    if (count(batch) * m * n * k > budget) continue;
    auto operand_batch = [&]() {
      Dims d = batch;
      switch (pick({0, 0, 1, 2, 3})) {
        case 1:
          return Dims{};
        case 2:
          for (int& x : d) x = coin(0.5) ? 1 : x;
          return d;
        case 3:
          if (!d.empty()) d.erase(d.begin());
          return d;
        default:
          return d;
      }
    };
    Dims ab = operand_batch(), wb = operand_batch();
    for (int i = 0; i < bnd; i++) {
      const int ai = i - (bnd - static_cast<int>(ab.size())), wi = i - (bnd - static_cast<int>(wb.size()));
      const int ax = ai < 0 ? 1 : ab[ai], wx = wi < 0 ? 1 : wb[wi];
      if (ax != batch[i] && wx != batch[i]) {
        if (ai < 0)
          ab = batch;
        else
          ab[ai] = batch[i];
      }
    }
    const bool ta = coin(0.5), tb = coin(0.5);
    c.m = m, c.n = n, c.k = k, c.batch = count(batch);
    c.a = ab, c.w = wb;
    c.a.push_back(ta ? k : m), c.a.push_back(ta ? m : k);
    c.w.push_back(tb ? n : k), c.w.push_back(tb ? k : n);
    const int and_ = static_cast<int>(c.a.size()), wnd = static_cast<int>(c.w.size());
    if (ta) c.ta[0] = and_ - 2, c.ta[1] = and_ - 1;
    if (tb) c.tb[0] = wnd - 1, c.tb[1] = wnd - 2;
    if (!ta && m == 1 && ab.empty() && wb.empty() && coin(0.3)) c.a = Dims{k};
    c.b = batch;
    c.b.push_back(m), c.b.push_back(n);
    if (c.a.size() == 1) c.b = Dims{n};
    switch (pick({0, 1, 1, 2, 3, 4, 5})) {
      case 1:
        c.bias = Dims{n};
        break;
      case 2:
        c.bias = Dims{1, n};
        break;
      case 3:
        c.bias = c.b;
        break;
      case 4:
        if (c.b.size() >= 2) c.bias = Dims{m, n};
        break;
      case 5:
        if (c.b.size() >= 3) {
          c.bias = c.b;
          c.bias[c.bias.size() - 2] = 1;
        }
        break;
      default:
        break;
    }
    auto kind = [&]() { return static_cast<Kind>(pick({0, 0, 0, 1, 2})); };
    c.ka = kind(), c.kw = kind(), c.kb = kind(), c.kbias = kind();
    c.text = "a " + str(c.a) + (ta ? "^T" : "") + " w " + str(c.w) + (tb ? "^T" : "") + " b " + str(c.b) + " bias " +
             str(c.bias) + " views " + std::to_string(int(c.ka)) + std::to_string(int(c.kw)) +
             std::to_string(int(c.kb)) + std::to_string(int(c.kbias));
    return c;
  }
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

void forward_configs(int datatype, int flags, int configs, uint32_t seed) {
  std::mt19937 rng(seed);
  const Precision pr = precision(datatype, flags);
  for (int it = 0; it < configs; it++) {
    const Config c = random_config(rng, 200000);
    Trio a = make(datatype, c.a, c.ka, rng), w = make(datatype, c.w, c.kw, rng), b = make(datatype, c.b, c.kb, rng);
    Trio bias;
    if (!c.bias.empty()) bias = make(datatype, c.bias, c.kbias, rng);
    const std::string what = std::string(type_name(datatype)) + " forward " + c.text;
    std::vector<ccv_nnc_tensor_t*> cin = {a.cpu(), w.cpu()}, ain = {a.abs(), w.abs()}, gin = {a.gpu(), w.gpu()};
    if (!c.bias.empty()) cin.push_back(bias.cpu()), ain.push_back(bias.abs()), gin.push_back(bias.gpu());
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_CPU_REF), cin, {b.cpu()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_CPU_REF), ain, {b.abs()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    // The padding of b's views: CPU_REF leaves the initial values, and so must the GPU.
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_FORWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_GPU_CUBLAS), gin, {b.gpu()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    // |a||w| + |bias| for S; the padding of the abs buffer holds |initial|, which bounds nothing but is harmless.
    expect_within(b, b.abs_parent.get(), static_cast<int64_t>(c.k) + 2, pr, what);
    if (::testing::Test::HasFailure()) return;
  }
}

void backward_configs(int datatype, int flags, int configs, uint32_t seed) {
  std::mt19937 rng(seed);
  const Precision pr = precision(datatype, flags);
  for (int it = 0; it < configs; it++) {
    const Config c = random_config(rng, 100000);
    Trio g = make(datatype, c.b, c.kb, rng), a = make(datatype, c.a, c.ka, rng), w = make(datatype, c.w, c.kw, rng);
    const int pattern = it % 6;
    const bool want_da = pattern % 3 != 1, want_dw = pattern % 3 != 0, want_db = pattern >= 3;
    Trio da, dw, db;
    if (want_da) da = make(datatype, c.a, c.kb, rng);
    if (want_dw) dw = make(datatype, c.w, c.ka, rng);
    if (want_db) db = make(datatype, c.bias.empty() ? Dims{c.b.back()} : c.bias, c.kbias, rng);
    const std::string what = std::string(type_name(datatype)) + " backward " + c.text + " outputs" +
                             (want_da ? " da" : "") + (want_dw ? " dw" : "") + (want_db ? " dbias" : "");
    auto side = [&](ccv_nnc_tensor_t* (Trio::*f)() const) {
      std::vector<ccv_nnc_tensor_t*> in = {(g.*f)(), want_dw ? (a.*f)() : nullptr, want_da ? (w.*f)() : nullptr};
      std::vector<ccv_nnc_tensor_t*> out = {want_da ? (da.*f)() : nullptr, want_dw ? (dw.*f)() : nullptr,
                                            want_db ? (db.*f)() : nullptr};
      return std::make_pair(in, out);
    };
    auto [cin, cout] = side(&Trio::cpu);
    auto [ain, aout] = side(&Trio::abs);
    auto [gin, gout] = side(&Trio::gpu);
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_BACKWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_CPU_REF), cin, cout),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_BACKWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_CPU_REF), ain, aout),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    ASSERT_EQ(run(gemm_cmd(CCV_NNC_GEMM_BACKWARD, c.ta, c.tb, flags, CCV_NNC_BACKEND_GPU_CUBLAS), gin, gout),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message() << " " << what;
    // Terms per output: at most max(m, n, k) times the batch (a broadcast operand's gradient sums the batch).
    const int64_t terms = static_cast<int64_t>(std::max({c.m, c.n, c.k})) * static_cast<int64_t>(c.batch) + 1;
    const int64_t partials = (flags & CCV_NNC_GEMM_16F) ? static_cast<int64_t>(c.batch) : 0;
    if (want_da) expect_within(da, da.abs_parent.get(), terms, pr, what + " (da)", partials);
    if (want_dw) expect_within(dw, dw.abs_parent.get(), terms, pr, what + " (dw)", partials);
    if (want_db) expect_within(db, db.abs_parent.get(), static_cast<int64_t>(count(c.b)), pr, what + " (dbias)");
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(GemmGpu, ForwardFp32MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_32F, 0, 150, 101);
}
TEST(GemmGpu, ForwardFp16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_16F, 0, 100, 102);
}
TEST(GemmGpu, ForwardBf16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_16BF, 0, 100, 103);
}
TEST(GemmGpu, ForwardFp64MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_64F, 0, 40, 104);
}
TEST(GemmGpu, ForwardFp16WithFp16AccumulationWithinItsBound) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_16F, CCV_NNC_GEMM_16F, 60, 105);
}
TEST(GemmGpu, ForwardFp32WithTf32AllowedWithinItsBound) {
  NNC_REQUIRE_GPU();
  forward_configs(CCV_32F, CCV_NNC_GEMM_32TF, 60, 106);
}
TEST(GemmGpu, BackwardFp32MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  backward_configs(CCV_32F, 0, 120, 201);
}
TEST(GemmGpu, BackwardFp16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  backward_configs(CCV_16F, 0, 80, 202);
}
TEST(GemmGpu, BackwardBf16MatchesCpuRef) {
  NNC_REQUIRE_GPU();
  backward_configs(CCV_16BF, 0, 80, 203);
}
TEST(GemmGpu, BackwardFp16WithFp16AccumulationWithinItsBound) {
  NNC_REQUIRE_GPU();
  backward_configs(CCV_16F, CCV_NNC_GEMM_16F, 40, 204);
}

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
  {  // inner dimensions differ
    Trio a = make(CCV_32F, {4, 5}, Kind::plain, rng), w = make(CCV_32F, {6, 3}, Kind::plain, rng);
    Trio b = make(CCV_32F, {4, 3}, Kind::plain, rng);
    EXPECT_EQ(run(fwd, {a.gpu(), w.gpu()}, {b.gpu()}), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("inner dimensions differ"), std::string::npos)
        << ccv_nnc_error_message();
  }
  {  // mixed data types
    Trio a = make(CCV_32F, {4, 5}, Kind::plain, rng), w = make(CCV_16F, {5, 3}, Kind::plain, rng);
    Trio b = make(CCV_32F, {4, 3}, Kind::plain, rng);
    EXPECT_EQ(run(fwd, {a.gpu(), w.gpu()}, {b.gpu()}), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(std::string(ccv_nnc_error_message()).find("data types differ"), std::string::npos)
        << ccv_nnc_error_message();
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
