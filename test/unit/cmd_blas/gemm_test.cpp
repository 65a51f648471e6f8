// GEMM forward and backward through the C API, on CPU_REF and CPU_OPT.
//
// The reference here is written independently of the library: element access
// through the public tensor / view fields, a double-precision triple loop with
// its own broadcasting rule, and central finite differences for gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gemm_easy.h"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/common/gemm_cases.hpp"

namespace {

using nnc_test_gemm::count;
using nnc_test_gemm::Dims;
using nnc_test_gemm::from_bf16;
using nnc_test_gemm::from_half;
using nnc_test_gemm::params;
using nnc_test_gemm::Tensor;
using nnc_test_gemm::to_bf16;
using nnc_test_gemm::to_half;

// ---------------------------------------------------------------------------
// Tensors

Tensor make(int datatype, const Dims& dims) {
  Tensor t(ccv_nnc_tensor_new(nullptr, params(datatype, dims), 0));
  EXPECT_TRUE(t) << ccv_nnc_error_message();
  return t;
}

Dims dims_of(const ccv_nnc_tensor_t* t) {
  Dims d;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) d.push_back(t->info.dim[i]);
  return d;
}

// A tensor's elements through its public fields: data, shape, and the view's
// strides (packed strides for a plain tensor). Fixed-size, so cheap to make.
struct Acc {
  unsigned char* p = nullptr;
  int type = 0;
  long es = 0;
  int nd = 0;
  int dim[CCV_NNC_MAX_DIM_ALLOC] = {};
  long stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  explicit Acc(const ccv_nnc_tensor_t* t) {
    p = static_cast<unsigned char*>(t->data.ptr);
    type = CCV_GET_DATA_TYPE(t->info.datatype);
    es = static_cast<long>(CCV_GET_DATA_TYPE_SIZE(t->info.datatype));
    while (nd < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[nd]) dim[nd] = t->info.dim[nd], nd++;
    if (CCV_IS_TENSOR_VIEW(t)) {
      const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
      for (int i = 0; i < nd; i++) stride[i] = v->stride[i];
    } else {
      long acc = 1;
      for (int i = nd; i-- > 0;) stride[i] = acc, acc *= dim[i];
    }
  }
  long offset(const int* idx) const {
    long off = 0;
    for (int i = 0; i < nd; i++) off += idx[i] * stride[i];
    return off;
  }
  double get(long off) const {
    const void* q = p + off * es;
    switch (type) {
      case CCV_32F:
        return *static_cast<const float*>(q);
      case CCV_64F:
        return *static_cast<const double*>(q);
      case CCV_16F:
        return from_half(*static_cast<const uint16_t*>(q));
      case CCV_16BF:
        return from_bf16(*static_cast<const uint16_t*>(q));
    }
    ADD_FAILURE() << "unexpected data type";
    return 0;
  }
  void set(long off, double v) const {
    void* q = p + off * es;
    switch (type) {
      case CCV_32F:
        *static_cast<float*>(q) = static_cast<float>(v);
        return;
      case CCV_64F:
        *static_cast<double*>(q) = v;
        return;
      case CCV_16F:
        *static_cast<uint16_t*>(q) = to_half(static_cast<float>(v));
        return;
      case CCV_16BF:
        *static_cast<uint16_t*>(q) = to_bf16(static_cast<float>(v));
        return;
    }
    ADD_FAILURE() << "unexpected data type";
  }
};

double get(const ccv_nnc_tensor_t* t, const Dims& idx) {
  const Acc x(t);
  return x.get(x.offset(idx.data()));
}

void set(ccv_nnc_tensor_t* t, const Dims& idx, double v) {
  const Acc x(t);
  x.set(x.offset(idx.data()), v);
}

// Every index of a shape, row-major.
void each(const Dims& d, const std::function<void(const Dims&)>& f) {
  if (d.empty()) return;
  Dims idx(d.size(), 0);
  for (;;) {
    f(idx);
    int i = static_cast<int>(d.size()) - 1;
    while (i >= 0 && ++idx[i] == d[i]) idx[i--] = 0;
    if (i < 0) return;
  }
}

void fill_random(ccv_nnc_tensor_t* t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  const Acc x(t);
  each(dims_of(t), [&](const Dims& i) { x.set(x.offset(i.data()), u(rng)); });
}

void fill(ccv_nnc_tensor_t* t, double v) {
  const Acc x(t);
  each(dims_of(t), [&](const Dims& i) { x.set(x.offset(i.data()), v); });
}

std::vector<double> values(const ccv_nnc_tensor_t* t) {
  std::vector<double> v;
  const Acc x(t);
  each(dims_of(t), [&](const Dims& i) { v.push_back(x.get(x.offset(i.data()))); });
  return v;
}

// A view of shape `dims` in the middle of a larger packed tensor: every
// dimension padded by `pad` (offset pad/2), so no row is contiguous with the next.
struct Viewed {
  Tensor parent;
  Tensor view;
};
Viewed make_view(int datatype, const Dims& dims, int pad = 3, std::mt19937* rng = nullptr) {
  Dims big = dims;
  for (int& x : big) x += pad;
  Viewed v;
  v.parent = make(datatype, big);
  if (rng)
    fill_random(v.parent.get(), *rng);
  else
    fill(v.parent.get(), 0);
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
  int stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  long acc = 1;
  for (size_t i = big.size(); i-- > 0;) stride[i] = static_cast<int>(acc), acc *= big[i];
  for (size_t i = 0; i < dims.size(); i++) ofs[i] = pad / 2;
  v.view.reset(reinterpret_cast<ccv_nnc_tensor_t*>(
      ccv_nnc_tensor_view_new(v.parent.get(), params(datatype, dims), ofs, stride)));
  EXPECT_TRUE(v.view) << ccv_nnc_error_message();
  return v;
}

// ---------------------------------------------------------------------------
// Commands

std::string backend_name(uint32_t backend) {
  const char* name = ccv_nnc_cmd_backend_name(backend);
  return name ? name : "(chosen)";
}

struct Transpose {
  int a0 = 0, a1 = 0, b0 = 0, b1 = 0;
};

ccv_nnc_cmd_t gemm(uint32_t id, Transpose t = {}, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.blas.a[0] = p.blas.a[1] = 1;
  p.blas.transpose_a[0] = t.a0, p.blas.transpose_a[1] = t.a1;
  p.blas.transpose_b[0] = t.b0, p.blas.transpose_b[1] = t.b1;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(id, nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

int exec(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

// The axes to swap for a tensor of nd dimensions.
void axes(int nd, bool transposed, int* x, int* y) {
  if (!transposed) {
    *x = *y = 0;
    return;
  }
  *x = nd - 2, *y = nd - 1;
}
Transpose transposes(int a_nd, bool ta, int w_nd, bool tb) {
  Transpose t;
  axes(a_nd, ta, &t.a0, &t.a1);
  axes(w_nd, tb, &t.b0, &t.b1);
  return t;
}

// ---------------------------------------------------------------------------
// The independent reference: b[batch.., i, j] = sum_q A(i, q) W(q, j) + bias,
// the bias broadcast to b (right-aligned, extent-1 dimensions repeated).

// Where op(x)(r, 0) is for output batch index `batch` (right-aligned, size-1
// dimensions broadcast), and the step from (r, q) to (r, q + 1).
long op_row(const Acc& x, bool trans, const int* batch, int batch_nd, int r, long* step) {
  if (x.nd == 1) {
    *step = x.stride[0];
    return 0;
  }
  const int xb = x.nd - 2;
  long off = 0;
  for (int i = 0; i < xb; i++) off += (x.dim[i] == 1 ? 0 : batch[i + batch_nd - xb]) * x.stride[i];
  *step = trans ? x.stride[xb] : x.stride[xb + 1];
  return off + r * (trans ? x.stride[xb + 1] : x.stride[xb]);
}

// The bias element for output index idx: right-aligned, extent 1 repeated.
double bias_at(const Acc& xb, const Dims& idx) {
  long off = 0;
  const int n = static_cast<int>(idx.size());
  for (int d = 0; d < xb.nd; d++) {
    const int i = d - (xb.nd - n);
    off += (i < 0 || xb.dim[d] == 1 ? 0 : idx[i]) * xb.stride[d];
  }
  return xb.get(off);
}

// magnitude (optional): per element sum_q |A(i, q) W(q, j)| + |bias|, the
// scale of the rounding error any summation of the product can make.
std::vector<double> reference(const ccv_nnc_tensor_t* a, bool ta, const ccv_nnc_tensor_t* w, bool tb,
                              const ccv_nnc_tensor_t* bias, const Dims& b_dims,
                              std::vector<double>* magnitude = nullptr) {
  const Acc xa(a), xw(w);
  const int k = xa.nd == 1 ? xa.dim[0] : (ta ? xa.dim[xa.nd - 2] : xa.dim[xa.nd - 1]);
  std::vector<double> out;
  out.reserve(count(b_dims));
  if (magnitude) magnitude->clear();
  each(b_dims, [&](const Dims& idx) {
    const int nb = idx.size() >= 2 ? static_cast<int>(idx.size()) - 2 : 0;
    const int i = idx.size() >= 2 ? idx[nb] : 0, j = idx.back();
    double s = 0, m = 0;
    if (bias) {
      s = bias_at(Acc(bias), idx);
      m = std::fabs(s);
    }
    // op(w)(q, j) is row j of op(w)^T: the same walk with the transpose flipped.
    long sa = 0, sw = 0;
    long oa = op_row(xa, ta, idx.data(), nb, i, &sa);
    long ow = op_row(xw, !tb, idx.data(), nb, j, &sw);
    if (xw.nd == 1) ow = j * xw.stride[0], sw = 0;  // a 1-d w is one row [n] (k = 1)
    for (int q = 0; q < k; q++, oa += sa, ow += sw) {
      const double t = xa.get(oa) * xw.get(ow);
      s += t;
      m += std::fabs(t);
    }
    out.push_back(s);
    if (magnitude) magnitude->push_back(m);
  });
  return out;
}

// |got - want| <= bound[i] for every element.
void expect_within(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& bound,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(bound.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!(std::fabs(got[i] - want[i]) <= bound[i]) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i] << " within "
                    << bound[i];
  EXPECT_EQ(bad, 0u) << what;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double scale = std::max(1.0, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tol * scale)) {
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

class Gemm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// ---------------------------------------------------------------------------
// Forward: known values

TEST_F(Gemm, KnownValuesOnEveryBackend) {
  for (uint32_t backend : {0u, uint32_t(CCV_NNC_BACKEND_CPU_REF), uint32_t(CCV_NNC_BACKEND_CPU_OPT)}) {
    Tensor a = make(CCV_32F, {2, 3}), w = make(CCV_32F, {3, 2}), bias = make(CCV_32F, {2}), b = make(CCV_32F, {2, 2});
    for (int i = 0; i < 6; i++) a->data.f32[i] = static_cast<float>(i + 1), w->data.f32[i] = static_cast<float>(i + 7);
    bias->data.f32[0] = 1, bias->data.f32[1] = -1;
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, backend), {a.get(), w.get()}, {b.get()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    EXPECT_EQ(values(b.get()), (std::vector<double>{58, 64, 139, 154}));
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, backend), {a.get(), w.get(), bias.get()}, {b.get()}),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(values(b.get()), (std::vector<double>{59, 63, 140, 153}));
    // NULL bias is no bias.
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, backend), {a.get(), w.get(), nullptr}, {b.get()}),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(values(b.get()), (std::vector<double>{58, 64, 139, 154}));
  }
}

TEST_F(Gemm, EasyMacrosFromC) {
  float out[8];
  ASSERT_EQ(nnc_test_gemm_example(out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // [1 2 3; 4 5 6] x [1..4; 5..8; 9..12]
  const float want[8] = {38, 44, 50, 56, 83, 98, 113, 128};
  for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], want[i]) << i;
  const ccv_nnc_cmd_t fc = nnc_test_gemm_fc();
  const ccv_nnc_cmd_t mine = gemm(CCV_NNC_GEMM_FORWARD, {0, 0, 0, 1});
  EXPECT_EQ(fc.cmd, static_cast<uint32_t>(CCV_NNC_GEMM_FORWARD));
  EXPECT_EQ(std::memcmp(&fc.info, &mine.info, sizeof(fc.info)), 0);
  EXPECT_EQ(nnc_test_gemm_plain().info.blas.transpose_b[1], 0);
  const ccv_nnc_cmd_t bt = nnc_test_gemm_backward_ta();
  EXPECT_EQ(bt.cmd, static_cast<uint32_t>(CCV_NNC_GEMM_BACKWARD));
  EXPECT_EQ(bt.info.blas.transpose_a[0], 1);
  EXPECT_EQ(bt.info.blas.transpose_a[1], 2);
}

// ---------------------------------------------------------------------------
// Forward: REF and OPT against the reference, random inputs

struct Size {
  int m, k, n;
};
enum class BatchMode { None, SharedW, BatchedBoth, SharedA, FourD };

const char* mode_name(BatchMode b) {
  switch (b) {
    case BatchMode::None:
      return "2-d";
    case BatchMode::SharedW:
      return "batched a, shared w";
    case BatchMode::BatchedBoth:
      return "batched a and w";
    case BatchMode::SharedA:
      return "shared a, batched w";
    case BatchMode::FourD:
      return "4-d a, 3-d w";
  }
  return "?";
}

struct Case {
  Dims a, w, b;
};
Case shapes(Size s, BatchMode mode, bool ta, bool tb) {
  const Dims am = ta ? Dims{s.k, s.m} : Dims{s.m, s.k};
  const Dims wm = tb ? Dims{s.n, s.k} : Dims{s.k, s.n};
  auto with = [](Dims batch, const Dims& m) {
    batch.insert(batch.end(), m.begin(), m.end());
    return batch;
  };
  switch (mode) {
    case BatchMode::None:
      return {am, wm, {s.m, s.n}};
    case BatchMode::SharedW:
      return {with({3}, am), wm, {3, s.m, s.n}};
    case BatchMode::BatchedBoth:
      return {with({3}, am), with({3}, wm), {3, s.m, s.n}};
    case BatchMode::SharedA:
      return {am, with({2}, wm), {2, s.m, s.n}};
    case BatchMode::FourD:
      return {with({2, 3}, am), with({3}, wm), {2, 3, s.m, s.n}};
  }
  return {};
}

// The bias's shape: a row [n] (every row of every batch), the output's full
// shape, or one row per batch ([.., 1, n]; [1, n] without batch).
enum class BiasShape { Row, Full, PerBatch };
Dims bias_dims(const Case& c, BiasShape bs) {
  switch (bs) {
    case BiasShape::Row:
      return {c.b.back()};
    case BiasShape::Full:
      return c.b;
    case BiasShape::PerBatch: {
      Dims d = c.b;
      if (d.size() >= 2) d[d.size() - 2] = 1;
      return d;
    }
  }
  return {};
}
const char* bias_name(BiasShape bs) {
  return bs == BiasShape::Row ? "" : bs == BiasShape::Full ? " full bias" : " per-batch bias";
}

constexpr double kStale = 1000;

// Unit roundoff of a type (half an ulp at 1).
double unit_roundoff(int datatype) {
  switch (datatype) {
    case CCV_64F:
      return 0x1p-53;
    case CCV_32F:
      return 0x1p-24;
    case CCV_16F:
      return 0x1p-11;
    default:
      return 0x1p-8;  // bf16
  }
}

// The error a correct backend may make on each element, from the magnitude
// M = sum_q |a w| + |bias| of the terms: the output's rounding (2 u M, the
// stored value being the nearest of its type, through at most two roundings)
// plus, for the types a backend accumulates in (fp32, fp64), the rigorous
// bound of a k + 1-term sum in any order, gamma = (k + 1) u / (1 - (k + 1) u).
// fp16 and bf16 are summed in double (CPU_REF), so only the rounding counts:
// the bound does not grow with k. fp16's subnormal spacing is the floor.
std::vector<double> error_bound(int datatype, int k, const std::vector<double>& magnitude) {
  const double u = unit_roundoff(datatype);
  const bool accumulates = datatype == CCV_32F || datatype == CCV_64F;
  const double n = k + 1.0;
  const double gamma = accumulates ? n * u / (1 - n * u) : 0;
  const double floor = datatype == CCV_16F ? 0x1p-24 : datatype == CCV_16BF ? 0x1p-133 : 0;
  std::vector<double> b;
  b.reserve(magnitude.size());
  for (double m : magnitude) b.push_back((2 * u + gamma) * m + floor);
  return b;
}

void check_forward(int datatype, Size s, BatchMode mode, bool ta, bool tb, bool with_bias, bool views,
                   const std::vector<uint32_t>& backends, BiasShape bs = BiasShape::Row) {
  const Case c = shapes(s, mode, ta, tb);
  std::mt19937 rng(1234 + s.m * 7 + s.k * 13 + s.n);
  std::vector<Viewed> keep;
  auto tensor = [&](const Dims& d, bool random) -> ccv_nnc_tensor_t* {
    if (views) {
      keep.push_back(make_view(datatype, d, 3, &rng));
      if (random) fill_random(keep.back().view.get(), rng);
      return keep.back().view.get();
    }
    keep.push_back(Viewed{make(datatype, d), nullptr});
    if (random) fill_random(keep.back().parent.get(), rng);
    return keep.back().parent.get();
  };
  ccv_nnc_tensor_t* a = tensor(c.a, true);
  ccv_nnc_tensor_t* w = tensor(c.w, true);
  ccv_nnc_tensor_t* bias = with_bias ? tensor(bias_dims(c, bs), true) : nullptr;
  std::vector<double> magnitude;
  const std::vector<double> want = reference(a, ta, w, tb, bias, c.b, &magnitude);
  const std::vector<double> bound = error_bound(datatype, s.k, magnitude);
  const Transpose t = transposes(static_cast<int>(c.a.size()), ta, static_cast<int>(c.w.size()), tb);
  const std::string what = std::string(mode_name(mode)) + " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) +
                           " n=" + std::to_string(s.n) + (ta ? " ta" : "") + (tb ? " tb" : "") +
                           (with_bias ? " bias" : "") + bias_name(bs) + (views ? " views" : "") +
                           " type=" + std::to_string(datatype);
  for (uint32_t backend : backends) {
    ccv_nnc_tensor_t* b = tensor(c.b, false);
    // Stale values in b (and around it, for a view) must be overwritten (and kept).
    fill(views ? keep.back().parent.get() : b, kStale);
    std::vector<ccv_nnc_tensor_t*> in = {a, w};
    if (with_bias) in.push_back(bias);
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, t, backend), in, {b}), CCV_NNC_EXEC_SUCCESS)
        << what << ": " << ccv_nnc_error_message();
    expect_within(values(b), want, bound, what + " backend " + backend_name(backend));
    if (views) {  // nothing outside the view was written
      const Tensor& parent = keep.back().parent;
      size_t stale = 0;
      for (double x : values(parent.get())) stale += x == kStale ? 1 : 0;
      EXPECT_EQ(stale, count(dims_of(parent.get())) - count(c.b)) << what << ": writes outside the output view";
    }
  }
}

const Size kSizes[] = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}};
const BatchMode kModes[] = {BatchMode::None, BatchMode::SharedW, BatchMode::BatchedBoth, BatchMode::SharedA,
                            BatchMode::FourD};
const std::vector<uint32_t> kBoth = {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT};

TEST_F(Gemm, ForwardFp32AndFp64BothBackends) {
  for (int datatype : {CCV_32F, CCV_64F})
    for (Size s : kSizes)
      for (BatchMode mode : kModes)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++)
            for (int bias = 0; bias < 2; bias++) check_forward(datatype, s, mode, ta, tb, bias, false, kBoth);
}

// Shapes past CPU_OPT's blocking on AVX-512 CPUs (256 rows of k and 512
// columns of n per block, 64-column panels, 6-row tiles, two threads split by
// columns or, with one panel, by rows), every transpose, on plain tensors and
// strided views.
TEST_F(Gemm, ForwardAcrossBlocksBothBackends) {
  for (Size s : {Size{13, 520, 600}, Size{200, 100, 50}, Size{70, 300, 130}})
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) check_forward(CCV_32F, s, BatchMode::None, ta, tb, ta == tb, false, kBoth);
  check_forward(CCV_32F, Size{70, 300, 130}, BatchMode::SharedW, false, true, true, false, kBoth);
  check_forward(CCV_32F, Size{13, 520, 600}, BatchMode::None, true, false, true, true, kBoth);
}

// Products of 1 to 5 rows (CPU_OPT's unpacked kernel on AVX-512 CPUs: B's
// rows or columns adjacent, column blocks of 64 or 4 with tails, k in
// vectors of 16 with a tail, threads over columns for the largest), every
// transpose (a transposed A with a transposed B goes to OpenBLAS), bias,
// batches and strided views.
TEST_F(Gemm, ForwardFewRowsBothBackends) {
  for (int m = 1; m <= 5; m++)
    for (Size s : {Size{m, 1, 7}, Size{m, 15, 65}, Size{m, 33, 130}, Size{m, 300, 67}})
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          check_forward(CCV_32F, s, BatchMode::None, ta, tb, (m + tb) % 2, false, kBoth);
          check_forward(CCV_32F, s, BatchMode::BatchedBoth, ta, tb, (m + ta) % 2, m % 2 == 1, kBoth);
        }
  for (int tb = 0; tb < 2; tb++) {
    check_forward(CCV_32F, Size{1, 3136, 256}, BatchMode::None, false, tb, true, false, kBoth);
    check_forward(CCV_32F, Size{4, 1000, 1000}, BatchMode::None, false, tb, false, true, kBoth);
  }
}

TEST_F(Gemm, ForwardStridedViewsBothBackends) {
  for (int datatype : {CCV_32F, CCV_64F})
    for (Size s : {Size{1, 1, 1}, Size{7, 13, 5}})
      for (BatchMode mode : kModes)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) check_forward(datatype, s, mode, ta, tb, true, true, kBoth);
}

// A bias of the output's full shape, and one row per batch ([B, 1, n]),
// broadcast as ADD would: every batch mode, transpose (TRANSPOSE(1, 2) of a
// 3-d operand included), plain tensors and views, fp32 / fp64 / fp16 on
// both backends (fp16 on REF only).
TEST_F(Gemm, ForwardFullAndPerBatchBias) {
  for (BiasShape bs : {BiasShape::Full, BiasShape::PerBatch})
    for (BatchMode mode : kModes)
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          check_forward(CCV_32F, Size{7, 13, 5}, mode, ta, tb, true, false, kBoth, bs);
          check_forward(CCV_64F, Size{33, 65, 17}, mode, ta, tb, true, ta == tb, kBoth, bs);
          check_forward(CCV_32F, Size{3, 9, 70}, mode, ta, tb, true, true, kBoth, bs);  // few rows
          check_forward(CCV_16F, Size{9, 33, 4}, mode, ta, tb, true, false, {CCV_NNC_BACKEND_CPU_REF}, bs);
        }
}

TEST_F(Gemm, ForwardHalfAndBf16OnRef) {
  for (int datatype : {CCV_16F, CCV_16BF})
    for (Size s : {Size{1, 1, 1}, Size{7, 13, 5}, Size{9, 33, 4}})
      for (BatchMode mode : {BatchMode::None, BatchMode::SharedW, BatchMode::BatchedBoth})
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) {
            check_forward(datatype, s, mode, ta, tb, true, false, {CCV_NNC_BACKEND_CPU_REF});
            check_forward(datatype, s, mode, ta, tb, false, false, {0});  // chosen automatically: REF
          }
  // OPT does not take half precision and says so.
  Tensor a = make(CCV_16F, {2, 3}), w = make(CCV_16F, {3, 2}), b = make(CCV_16F, {2, 2});
  EXPECT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, CCV_NNC_BACKEND_CPU_OPT), {a.get(), w.get()}, {b.get()}),
            CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("CCV_NNC_BACKEND_CPU_OPT"), std::string::npos)
      << ccv_nnc_error_message();
}

TEST_F(Gemm, OneDimensionalInputIsOneRow) {
  for (uint32_t backend : kBoth) {
    std::mt19937 rng(7);
    Tensor a = make(CCV_64F, {5}), w = make(CCV_64F, {5, 3}), b = make(CCV_64F, {3});
    fill_random(a.get(), rng), fill_random(w.get(), rng);
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, backend), {a.get(), w.get()}, {b.get()}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    expect_close(values(b.get()), reference(a.get(), false, w.get(), false, nullptr, {3}), 1e-12, "1-d a");
  }
}

// The fully connected layer: [batch, k] x [n, k]^T + bias, the fold-into-one-GEMM path.
TEST_F(Gemm, FullyConnectedLayer) {
  std::mt19937 rng(11);
  Tensor a = make(CCV_32F, {64, 3, 10}), w = make(CCV_32F, {6, 10}), bias = make(CCV_32F, {6});
  fill_random(a.get(), rng), fill_random(w.get(), rng), fill_random(bias.get(), rng);
  const std::vector<double> want = reference(a.get(), false, w.get(), true, bias.get(), {64, 3, 6});
  for (uint32_t backend : kBoth) {
    Tensor b = make(CCV_32F, {64, 3, 6});
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {0, 0, 0, 1}, backend), {a.get(), w.get(), bias.get()}, {b.get()}),
              CCV_NNC_EXEC_SUCCESS);
    expect_close(values(b.get()), want, 1e-5, "fully connected");
  }
}

// A view whose rows are not unit-stride: OPT declines, REF runs it.
TEST_F(Gemm, NonUnitColumnStrideFallsBackToRef) {
  std::mt19937 rng(5);
  Tensor parent = make(CCV_32F, {4, 6});
  fill_random(parent.get(), rng);
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
  int stride[CCV_NNC_MAX_DIM_ALLOC] = {6, 2};  // every other column
  Tensor a(
      reinterpret_cast<ccv_nnc_tensor_t*>(ccv_nnc_tensor_view_new(parent.get(), params(CCV_32F, {4, 3}), ofs, stride)));
  ASSERT_TRUE(a) << ccv_nnc_error_message();
  Tensor w = make(CCV_32F, {3, 2}), b = make(CCV_32F, {4, 2});
  fill_random(w.get(), rng);
  EXPECT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, CCV_NNC_BACKEND_CPU_OPT), {a.get(), w.get()}, {b.get()}),
            CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("4x3"), std::string::npos) << ccv_nnc_error_message();
  ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD), {a.get(), w.get()}, {b.get()}), CCV_NNC_EXEC_SUCCESS);
  expect_close(values(b.get()), reference(a.get(), false, w.get(), false, nullptr, {4, 2}), 1e-6, "strided columns");
}

TEST_F(Gemm, AutotunePicksAWorkingBackend) {
  std::mt19937 rng(3);
  Tensor a = make(CCV_32F, {3, 17, 9}), w = make(CCV_32F, {9, 11}), bias = make(CCV_32F, {11}),
         b = make(CCV_32F, {3, 17, 11});
  fill_random(a.get(), rng), fill_random(w.get(), rng), fill_random(bias.get(), rng);
  std::vector<ccv_nnc_tensor_t*> in = {a.get(), w.get(), bias.get()}, out = {b.get()};
  const ccv_nnc_cmd_t tuned =
      ccv_nnc_cmd_autotune(gemm(CCV_NNC_GEMM_FORWARD), 0, ccv_nnc_no_hint, 0, in.data(), 3, out.data(), 1, nullptr);
  EXPECT_TRUE(tuned.backend == CCV_NNC_BACKEND_CPU_REF || tuned.backend == CCV_NNC_BACKEND_CPU_OPT) << tuned.backend;
  fill(b.get(), 0);
  ASSERT_EQ(exec(tuned, in, out), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  expect_close(values(b.get()), reference(a.get(), false, w.get(), false, bias.get(), {3, 17, 11}), 1e-5, "autotuned");
  // Half precision: only REF can run it, so autotune must pick REF.
  Tensor ha = make(CCV_16F, {2, 3}), hw = make(CCV_16F, {3, 2}), hb = make(CCV_16F, {2, 2});
  fill_random(ha.get(), rng), fill_random(hw.get(), rng);
  std::vector<ccv_nnc_tensor_t*> hin = {ha.get(), hw.get()}, hout = {hb.get()};
  const ccv_nnc_cmd_t htuned =
      ccv_nnc_cmd_autotune(gemm(CCV_NNC_GEMM_FORWARD), 0, ccv_nnc_no_hint, 0, hin.data(), 2, hout.data(), 1, nullptr);
  EXPECT_EQ(htuned.backend, static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF));
}

TEST_F(Gemm, PreferredBackendIsOpt) {
  ccv_nnc_cmd_t cmd = gemm(CCV_NNC_GEMM_FORWARD);
  EXPECT_EQ(ccv_nnc_cmd_find_backend(cmd, CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_32F),
            static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_OPT));
  EXPECT_EQ(ccv_nnc_cmd_find_backend(cmd, CCV_TENSOR_CPU_MEMORY, CCV_TENSOR_FORMAT_NHWC, CCV_16F),
            static_cast<uint32_t>(CCV_NNC_BACKEND_CPU_REF));
  // A backend that does not implement GEMM, forced.
  Tensor a = make(CCV_32F, {2, 3}), w = make(CCV_32F, {3, 2}), b = make(CCV_32F, {2, 2});
  EXPECT_EQ(exec(gemm(CCV_NNC_GEMM_FORWARD, {}, CCV_NNC_BACKEND_GPU_CUBLAS), {a.get(), w.get()}, {b.get()}),
            CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

// ---------------------------------------------------------------------------
// Output shapes

Dims auto_shape(Transpose t, const std::vector<Dims>& in, int datatype = CCV_32F, bool* ok = nullptr) {
  std::vector<ccv_nnc_tensor_param_t> p;
  for (const Dims& d : in) p.push_back(params(datatype, d));
  ccv_nnc_tensor_param_t out = params(CCV_8U, {99});
  out.format = CCV_TENSOR_FORMAT_CHWN;
  ccv_nnc_hint_tensor_auto(gemm(CCV_NNC_GEMM_FORWARD, t), p.data(), static_cast<int>(p.size()), ccv_nnc_no_hint, &out,
                           1);
  if (ok) *ok = out.datatype == datatype && out.format == CCV_TENSOR_FORMAT_NHWC && out.type == CCV_TENSOR_CPU_MEMORY;
  Dims d;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && out.dim[i]; i++) d.push_back(out.dim[i]);
  return d;
}

TEST_F(Gemm, TensorAutoShapes) {
  bool ok = false;
  EXPECT_EQ(auto_shape({}, {{2, 3}, {3, 4}}, CCV_64F, &ok), (Dims{2, 4}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(auto_shape({}, {{2, 3}, {3, 4}, {4}}), (Dims{2, 4}));
  EXPECT_EQ(auto_shape({0, 1, 0, 0}, {{3, 2}, {3, 4}}), (Dims{2, 4}));
  EXPECT_EQ(auto_shape({0, 0, 0, 1}, {{64, 3136}, {256, 3136}, {256}}), (Dims{64, 256}));
  EXPECT_EQ(auto_shape({1, 2, 1, 2}, {{5, 3, 2}, {5, 4, 3}}), (Dims{5, 2, 4}));
  EXPECT_EQ(auto_shape({}, {{5, 2, 3}, {3, 4}}), (Dims{5, 2, 4}));
  EXPECT_EQ(auto_shape({0, 0, 1, 2}, {{2, 3}, {5, 4, 3}}), (Dims{5, 2, 4}));
  EXPECT_EQ(auto_shape({}, {{6, 5, 2, 3}, {5, 3, 4}}), (Dims{6, 5, 2, 4}));
  EXPECT_EQ(auto_shape({}, {{6, 1, 2, 3}, {5, 3, 4}}), (Dims{6, 5, 2, 4}));
  EXPECT_EQ(auto_shape({}, {{3}, {3, 4}}), (Dims{4}));
  EXPECT_EQ(auto_shape({}, {{3}, {2, 3, 4}}), (Dims{2, 1, 4}));
}

TEST_F(Gemm, TensorAutoRejectsWhatCannotMultiply) {
  ccv_nnc_tensor_param_t in[2] = {params(CCV_32F, {2, 3}), params(CCV_32F, {4, 5})};
  ccv_nnc_tensor_param_t out = params(CCV_32F, {7, 7});
  ccv_nnc_hint_tensor_auto(gemm(CCV_NNC_GEMM_FORWARD), in, 2, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(out.dim[0], 7);  // untouched
  EXPECT_EQ(out.dim[1], 7);
  const std::string msg = ccv_nnc_error_message();
  EXPECT_NE(msg.find("inner dimensions"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2x3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4x5"), std::string::npos) << msg;
}

TEST_F(Gemm, BackwardTensorAuto) {
  ccv_nnc_tensor_param_t in[3] = {params(CCV_32F, {8, 6}), params(CCV_32F, {8, 5}), params(CCV_32F, {6, 5})};
  ccv_nnc_tensor_param_t out[3];
  ccv_nnc_hint_tensor_auto(gemm(CCV_NNC_GEMM_BACKWARD, {0, 0, 0, 1}), in, 3, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(out[0].dim[0], 8);
  EXPECT_EQ(out[0].dim[1], 5);
  EXPECT_EQ(out[1].dim[0], 6);
  EXPECT_EQ(out[1].dim[1], 5);
  EXPECT_EQ(out[2].dim[0], 6);
  EXPECT_EQ(out[2].dim[1], 0);
  // libnnc's layout |g|a|w|bias|b|: dbias takes the bias's shape (input 3).
  ccv_nnc_tensor_param_t in5[5] = {params(CCV_32F, {2, 8, 6}), params(CCV_32F, {2, 8, 5}), params(CCV_32F, {6, 5}),
                                   params(CCV_32F, {2, 1, 6}), params(CCV_32F, {2, 8, 6})};
  ccv_nnc_hint_tensor_auto(gemm(CCV_NNC_GEMM_BACKWARD, {0, 0, 0, 1}), in5, 5, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(out[0].dim[1], 8);
  EXPECT_EQ(out[1].dim[0], 6);
  EXPECT_EQ(out[2].dim[0], 2);
  EXPECT_EQ(out[2].dim[1], 1);
  EXPECT_EQ(out[2].dim[2], 6);
  EXPECT_EQ(out[2].dim[3], 0);
}

TEST_F(Gemm, Bitmask) {
  const ccv_nnc_cmd_t f = gemm(CCV_NNC_GEMM_FORWARD), bw = gemm(CCV_NNC_GEMM_BACKWARD);
  auto mask = [](const ccv_nnc_cmd_t& c, int ins, uint64_t in, int outs, uint64_t out) {
    return ccv_nnc_cmd_bitmask(c, ins, outs, &in, 1, &out, 1);
  };
  EXPECT_EQ(mask(f, 2, 0b11, 1, 1), 1);
  EXPECT_EQ(mask(f, 3, 0b111, 1, 1), 1);
  EXPECT_EQ(mask(f, 3, 0b011, 1, 1), 0);  // libnnc: three inputs means a bias, which must be there
  EXPECT_EQ(mask(f, 2, 0b01, 1, 1), 0);   // no w
  EXPECT_EQ(mask(f, 2, 0b11, 1, 0), 0);   // no b
  EXPECT_EQ(mask(bw, 3, 0b111, 3, 0b111), 1);
  EXPECT_EQ(mask(bw, 3, 0b101, 1, 0b1), 1);   // da needs g and w
  EXPECT_EQ(mask(bw, 3, 0b011, 1, 0b1), 0);   // ... not a
  EXPECT_EQ(mask(bw, 3, 0b011, 2, 0b10), 1);  // dw needs g and a
  EXPECT_EQ(mask(bw, 3, 0b101, 2, 0b10), 0);
  EXPECT_EQ(mask(bw, 1, 0b1, 3, 0b100), 0);    // libnnc: dbias only beside da or dw
  EXPECT_EQ(mask(bw, 3, 0b011, 3, 0b110), 1);  // dw and dbias: g and a
  EXPECT_EQ(mask(bw, 3, 0b101, 3, 0b101), 1);  // da and dbias: g and w
  EXPECT_EQ(mask(bw, 3, 0b111, 3, 0b011), 1);  // da and dw, no dbias
  EXPECT_EQ(mask(bw, 5, 0b11111, 3, 0b111), 1);  // the forward's bias and b beside are allowed
  EXPECT_EQ(mask(bw, 3, 0b110, 3, 0b100), 0);  // no g
  EXPECT_EQ(mask(bw, 3, 0b111, 3, 0b000), 0);  // nothing asked
}

// ---------------------------------------------------------------------------
// Bad input

struct Bad {
  std::string what;
  Transpose t;
  std::vector<Dims> in;  // empty Dims: NULL
  std::vector<Dims> out;
  std::vector<std::string> mentions;
  int odd_type = -1;  // index into in (or in.size() + output index) with type 64F
};

void check_bad(const Bad& c, uint32_t cmd_id = CCV_NNC_GEMM_FORWARD) {
  std::vector<Tensor> keep;
  std::vector<ccv_nnc_tensor_t*> in, out;
  int idx = 0;
  auto add = [&](const Dims& d, std::vector<ccv_nnc_tensor_t*>& list) {
    if (d.empty()) {
      list.push_back(nullptr);
    } else {
      keep.push_back(make(idx == c.odd_type ? CCV_64F : CCV_32F, d));
      fill(keep.back().get(), 0);
      list.push_back(keep.back().get());
    }
    idx++;
  };
  for (const Dims& d : c.in) add(d, in);
  for (const Dims& d : c.out) add(d, out);
  for (uint32_t backend : {0u, uint32_t(CCV_NNC_BACKEND_CPU_REF), uint32_t(CCV_NNC_BACKEND_CPU_OPT)}) {
    EXPECT_EQ(exec(gemm(cmd_id, c.t, backend), in, out), CCV_NNC_EXEC_INVALID) << c.what;
    const std::string msg = ccv_nnc_error_message();
    EXPECT_FALSE(msg.empty()) << c.what;
    for (const std::string& m : c.mentions) EXPECT_NE(msg.find(m), std::string::npos) << c.what << ": " << msg;
  }
}

TEST_F(Gemm, BadForwardInput) {
  const std::vector<Bad> cases = {
      {"one input", {}, {{2, 3}}, {{2, 4}}, {"2 or 3 inputs", "got 1"}},
      {"four inputs", {}, {{2, 3}, {3, 4}, {4}, {4}}, {{2, 4}}, {"2 or 3 inputs", "got 4"}},
      {"no output", {}, {{2, 3}, {3, 4}}, {}, {"1 output", "got 0"}},
      {"two outputs", {}, {{2, 3}, {3, 4}}, {{2, 4}, {2, 4}}, {"1 output", "got 2"}},
      {"NULL w", {}, {{2, 3}, {}}, {{2, 4}}, {"w", "NULL"}},
      {"NULL b", {}, {{2, 3}, {3, 4}}, {{}}, {"b", "NULL"}},
      {"inner mismatch", {}, {{2, 3}, {4, 5}}, {{2, 5}}, {"inner dimensions", "2x3", "4x5", "k = 3", "k = 4"}},
      {"inner mismatch after transpose",
       {0, 1, 0, 0},
       {{2, 3}, {3, 4}},
       {{3, 4}},
       {"inner dimensions", "k = 2", "k = 3"}},
      {"bias length", {}, {{2, 3}, {3, 4}, {5}}, {{2, 4}}, {"bias is 5", "does not broadcast", "2x4"}},
      {"bias rows", {}, {{2, 3}, {3, 4}, {3, 4}}, {{2, 4}}, {"bias is 3x4", "2x4"}},
      {"bias batch", {}, {{6, 2, 3}, {3, 4}, {5, 1, 4}}, {{6, 2, 4}}, {"bias is 5x1x4", "6x2x4"}},
      {"bias with more dimensions", {}, {{2, 3}, {3, 4}, {2, 2, 4}}, {{2, 4}}, {"bias is 2x2x4"}},
      {"output shape", {}, {{2, 3}, {3, 4}}, {{2, 5}}, {"output b is 2x5", "2x4"}},
      {"output batch", {}, {{6, 2, 3}, {3, 4}}, {{2, 4}}, {"output b is 2x4", "batch 6"}},
      {"data types", {}, {{2, 3}, {3, 4}}, {{2, 4}}, {"data types differ", "32F", "64F"}, 1},
      {"bias data type", {}, {{2, 3}, {3, 4}, {4}}, {{2, 4}}, {"data types differ", "bias"}, 2},
      {"transpose not the last two axes",
       {0, 1, 0, 0},
       {{5, 2, 3}, {3, 4}},
       {{5, 3, 4}},
       {"transpose_a = (0, 1)", "last two axes", "5x2x3", "(1, 2)"}},
      {"transpose of 2-d w with 3-d axes", {0, 0, 1, 2}, {{2, 3}, {4, 3}}, {{2, 4}}, {"transpose_b = (1, 2)", "4x3"}},
      {"transpose of 1-d", {0, 1, 0, 0}, {{3}, {3, 4}}, {{4}}, {"1-d", "cannot be transposed"}},
      {"batch conflict", {}, {{2, 2, 3}, {3, 3, 4}}, {{3, 2, 4}}, {"cannot broadcast", "2x2x3", "3x3x4"}},
  };
  for (const Bad& c : cases) check_bad(c);
}

TEST_F(Gemm, BadBackwardInput) {
  const std::vector<Bad> cases = {
      {"no outputs", {}, {{2, 4}, {2, 3}, {3, 4}}, {{}, {}, {}}, {"nothing to compute"}},
      {"da without w", {}, {{2, 4}, {2, 3}, {}}, {{2, 3}}, {"da needs w"}},
      {"dw without a", {}, {{2, 4}, {}, {3, 4}}, {{}, {3, 4}}, {"dw needs a"}},
      {"da shape", {}, {{2, 4}, {2, 3}, {3, 4}}, {{2, 5}}, {"da is 2x5", "a is 2x3"}},
      {"g shape", {}, {{2, 5}, {2, 3}, {3, 4}}, {{2, 3}, {3, 4}}, {"g is 2x5", "n = 4"}},
      {"dbias length", {}, {{2, 4}, {2, 3}, {3, 4}}, {{}, {}, {3}}, {"dbias is 3", "does not broadcast", "g 2x4"}},
      {"dbias batch", {}, {{6, 2, 4}, {6, 2, 3}, {3, 4}}, {{}, {3, 4}, {5, 1, 4}}, {"dbias is 5x1x4", "g 6x2x4"}},
      {"too many outputs", {}, {{2, 4}, {2, 3}, {3, 4}}, {{2, 3}, {3, 4}, {4}, {4}}, {"1 to 3 outputs", "got 4"}},
      {"data types", {}, {{2, 4}, {2, 3}, {3, 4}}, {{2, 3}}, {"data types differ", "da"}, 3},
  };
  for (const Bad& c : cases) check_bad(c, CCV_NNC_GEMM_BACKWARD);
}

// ---------------------------------------------------------------------------
// Backward

// Loss L = sum(b .* r): g = r, and each gradient is checked against central
// differences of L (exact up to rounding, GEMM being linear in each input).
void check_backward(int datatype, Size s, BatchMode mode, bool ta, bool tb, bool views, uint32_t backend,
                    BiasShape bs = BiasShape::Row) {
  const Case c = shapes(s, mode, ta, tb);
  std::mt19937 rng(99 + s.m + 3 * s.k + 5 * s.n);
  std::vector<Viewed> keep;
  auto tensor = [&](const Dims& d) -> ccv_nnc_tensor_t* {
    if (views) {
      keep.push_back(make_view(datatype, d, 2, &rng));
      fill_random(keep.back().view.get(), rng);
      return keep.back().view.get();
    }
    keep.push_back(Viewed{make(datatype, d), nullptr});
    fill_random(keep.back().parent.get(), rng);
    return keep.back().parent.get();
  };
  ccv_nnc_tensor_t* a = tensor(c.a);
  ccv_nnc_tensor_t* w = tensor(c.w);
  ccv_nnc_tensor_t* bias = tensor(bias_dims(c, bs));
  ccv_nnc_tensor_t* g = tensor(c.b);
  ccv_nnc_tensor_t* da = tensor(c.a);
  ccv_nnc_tensor_t* dw = tensor(c.w);
  ccv_nnc_tensor_t* dbias = tensor(bias_dims(c, bs));
  const Transpose t = transposes(static_cast<int>(c.a.size()), ta, static_cast<int>(c.w.size()), tb);
  const std::string what = std::string(mode_name(mode)) + " m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) +
                           " n=" + std::to_string(s.n) + (ta ? " ta" : "") + (tb ? " tb" : "") +
                           bias_name(bs) + (views ? " views" : "") + " " + backend_name(backend);
  ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, t, backend), {g, a, w}, {da, dw, dbias}), CCV_NNC_EXEC_SUCCESS)
      << what << ": " << ccv_nnc_error_message();
  const std::vector<double> r = values(g);
  auto loss = [&] {
    const std::vector<double> b = reference(a, ta, w, tb, bias, c.b);
    double l = 0;
    for (size_t i = 0; i < b.size(); i++) l += b[i] * r[i];
    return l;
  };
  auto numeric = [&](ccv_nnc_tensor_t* x) {
    std::vector<double> d;
    const double h = datatype == CCV_64F ? 1e-3 : 1e-2;
    each(dims_of(x), [&](const Dims& i) {
      const double v = get(x, i);
      set(x, i, v + h);
      const double up = loss();
      set(x, i, v - h);
      const double down = loss();
      set(x, i, v);
      d.push_back((up - down) / (2 * h));
    });
    return d;
  };
  const double tol = datatype == CCV_64F ? 1e-8 : 2e-3;
  expect_close(values(da), numeric(a), tol, what + " da");
  expect_close(values(dw), numeric(w), tol, what + " dw");
  expect_close(values(dbias), numeric(bias), tol, what + " dbias");
}

TEST_F(Gemm, BackwardMatchesFiniteDifferencesFp64) {
  for (uint32_t backend : kBoth)
    for (Size s : {Size{1, 1, 1}, Size{4, 5, 3}})
      for (BatchMode mode : kModes)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) check_backward(CCV_64F, s, mode, ta, tb, false, backend);
}

TEST_F(Gemm, BackwardViewsAndFp32) {
  for (uint32_t backend : kBoth)
    for (BatchMode mode : kModes)
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          check_backward(CCV_64F, Size{3, 4, 2}, mode, ta, tb, true, backend);
          check_backward(CCV_32F, Size{3, 4, 2}, mode, ta, tb, false, backend);
        }
}

// dbias of a full-shape and of a per-batch bias: g summed over the broadcast
// dimensions only, against finite differences, on both backends.
TEST_F(Gemm, BackwardFullAndPerBatchBias) {
  for (uint32_t backend : kBoth)
    for (BiasShape bs : {BiasShape::Full, BiasShape::PerBatch})
      for (BatchMode mode : kModes)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) {
            check_backward(CCV_64F, Size{4, 5, 3}, mode, ta, tb, ta != tb, backend, bs);
            check_backward(CCV_32F, Size{3, 4, 2}, mode, ta, tb, false, backend, bs);
          }
}

// A plain 3-d tensor keeps the dense-matrix step in dim[4] (toll-free
// layout), a view does not: a and da of one shape must still be accepted
// together, whichever of the two is the view, and give the plain result.
TEST_F(Gemm, BackwardPlainTensorBesideViewOfTheSameShape) {
  std::mt19937 rng(8);
  Tensor a = make(CCV_32F, {3, 4, 5}), w = make(CCV_32F, {5, 2}), g = make(CCV_32F, {3, 4, 2});
  fill_random(a.get(), rng), fill_random(w.get(), rng), fill_random(g.get(), rng);
  for (uint32_t backend : kBoth) {
    Tensor da = make(CCV_32F, {3, 4, 5}), dw = make(CCV_32F, {5, 2});
    ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, {}, backend), {g.get(), a.get(), w.get()}, {da.get(), dw.get()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    Viewed vda = make_view(CCV_32F, {3, 4, 5}), va = make_view(CCV_32F, {3, 4, 5});
    std::vector<double> av = values(a.get());
    size_t i = 0;
    each({3, 4, 5}, [&](const Dims& idx) { set(va.view.get(), idx, av[i++]); });
    Tensor dw2 = make(CCV_32F, {5, 2}), da2 = make(CCV_32F, {3, 4, 5});
    // plain a, view da
    ASSERT_EQ(
        exec(gemm(CCV_NNC_GEMM_BACKWARD, {}, backend), {g.get(), a.get(), w.get()}, {vda.view.get(), dw2.get()}),
        CCV_NNC_EXEC_SUCCESS)
        << backend_name(backend) << ": " << ccv_nnc_error_message();
    // OPT may take another path for a view (one product per batch instead of one folded GEMM).
    expect_close(values(vda.view.get()), values(da.get()), 1e-6, "view da");
    expect_close(values(dw2.get()), values(dw.get()), 1e-6, "dw beside a view da");
    // view a, plain da
    ASSERT_EQ(
        exec(gemm(CCV_NNC_GEMM_BACKWARD, {}, backend), {g.get(), va.view.get(), w.get()}, {da2.get(), dw2.get()}),
        CCV_NNC_EXEC_SUCCESS)
        << backend_name(backend) << ": " << ccv_nnc_error_message();
    expect_close(values(da2.get()), values(da.get()), 1e-6, "da beside a view a");
    expect_close(values(dw2.get()), values(dw.get()), 1e-6, "dw from a view a");
  }
}

// REF and OPT agree on the gradients of odd-sized fp32 products, with outputs
// requested one at a time.
TEST_F(Gemm, BackwardRefAndOptAgree) {
  for (BatchMode mode : kModes)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const Size s{33, 65, 17};
        const Case c = shapes(s, mode, ta, tb);
        std::mt19937 rng(42);
        Tensor a = make(CCV_32F, c.a), w = make(CCV_32F, c.w), g = make(CCV_32F, c.b);
        fill_random(a.get(), rng), fill_random(w.get(), rng), fill_random(g.get(), rng);
        const Transpose t = transposes(static_cast<int>(c.a.size()), ta, static_cast<int>(c.w.size()), tb);
        std::vector<std::vector<double>> results[2];
        for (int which = 0; which < 2; which++) {
          const uint32_t backend = kBoth[which];
          Tensor da = make(CCV_32F, c.a), dw = make(CCV_32F, c.w), db = make(CCV_32F, {s.n});
          ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, t, backend), {g.get(), nullptr, w.get()}, {da.get()}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, t, backend), {g.get(), a.get(), nullptr}, {nullptr, dw.get()}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, t, backend), {g.get()}, {nullptr, nullptr, db.get()}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          results[which] = {values(da.get()), values(dw.get()), values(db.get())};
        }
        const std::string what = std::string(mode_name(mode)) + (ta ? " ta" : "") + (tb ? " tb" : "");
        // dbias of the other shapes, beside da (libnnc's bitmask asks dbias with da or dw).
        for (BiasShape bs : {BiasShape::Full, BiasShape::PerBatch}) {
          std::vector<double> got[2];
          for (int which = 0; which < 2; which++) {
            Tensor da = make(CCV_32F, c.a), db = make(CCV_32F, bias_dims(c, bs));
            ASSERT_EQ(exec(gemm(CCV_NNC_GEMM_BACKWARD, t, kBoth[which]), {g.get(), nullptr, w.get()},
                           {da.get(), nullptr, db.get()}),
                      CCV_NNC_EXEC_SUCCESS)
                << ccv_nnc_error_message();
            got[which] = values(db.get());
          }
          expect_close(got[1], got[0], 1e-5 * 33 * 6, what + bias_name(bs));
        }
        expect_close(results[1][0], results[0][0], 1e-5 * 17, what + " da");
        expect_close(results[1][1], results[0][1], 1e-5 * 33 * 6, what + " dw");
        expect_close(results[1][2], results[0][2], 1e-5 * 33 * 6, what + " dbias");
      }
}

}  // namespace
