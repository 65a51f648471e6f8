// The AVX2 + FMA sgemm kernels (lib/cmd/blas/sgemm_avx2.cpp,
// sgemm_small_avx2.cpp) called directly, against a double-precision product
// written here: every operand layout (A in place or transposed, B with rows
// adjacent, columns adjacent or neither, padded leading dimensions), m, n and
// k over the kernels' tails, beta 0 (C starts as NaN and must be
// overwritten) and 1, sizes that cross the packing blocks and use threads,
// and the packed interface Winograd uses. Then GEMM on CPU_OPT against
// CPU_REF (batches, transposes, bias, views, backward); registered a second
// time with NNC_NO_AVX512=1, where CPU_OPT itself runs these kernels (a test
// checks that it does, bit for bit).
//
// Tolerance: each element within 8 float epsilons of Σ|a||b| (+ |C| when
// beta = 1), the scale of its own rounding, the same for every k.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "cmd/common/sgemm.hpp"
#include "core/parallel.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/common/gemm_cases.hpp"

namespace {

using nnc::gemm::Sgemm;

constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr float kSentinel = 12345.0f;

bool have_avx2() { return nnc::cpu_features().avx2; }

// The library's registry and pool, once for the binary.
const bool kInit = [] {
  ccv_nnc_init();
  return true;
}();

// How B is laid out: rows adjacent (bcs = 1), columns adjacent (brs = 1), or
// neither (both strides above 1).
enum class BLayout { rows, columns, strided };

// Operands of one product, with their own storage.
struct Problem {
  int m, n, k;
  bool ta;
  BLayout bl;
  float beta;
  std::vector<float> a, b, c, c0;
  int64_t ars, acs, brs, bcs, ldc;

  Problem(int m_, int n_, int k_, bool ta_, BLayout bl_, float beta_, int pad, std::mt19937& rng)
      : m(m_), n(n_), k(k_), ta(ta_), bl(bl_), beta(beta_) {
    std::uniform_real_distribution<float> u(-1, 1);
    if (ta) {
      ars = 1, acs = m + pad;
      a.resize(static_cast<size_t>(k) * acs);
    } else {
      ars = k + pad, acs = 1;
      a.resize(static_cast<size_t>(m) * ars);
    }
    switch (bl) {
      case BLayout::rows: brs = n + pad, bcs = 1; break;
      case BLayout::columns: brs = 1, bcs = k + pad; break;
      case BLayout::strided: bcs = 2, brs = 2 * n + pad; break;
    }
    b.resize(bl == BLayout::columns ? static_cast<size_t>(n) * bcs : static_cast<size_t>(k) * brs);
    ldc = n + pad;
    c.resize(static_cast<size_t>(m) * ldc);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    // Padding of C must survive; beta = 0 must not read C (NaN would show).
    for (size_t i = 0; i < c.size(); i++) {
      const bool inside = static_cast<int64_t>(i % ldc) < n;
      c[i] = !inside ? kSentinel : beta == 0 ? std::numeric_limits<float>::quiet_NaN() : u(rng);
    }
    c0 = c;
  }

  Sgemm args() {
    Sgemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = a.data(), g.ars = ars, g.acs = acs;
    g.b = b.data(), g.brs = brs, g.bcs = bcs;
    g.beta = beta, g.c = c.data(), g.ldc = ldc;
    return g;
  }

  float A(int i, int p) const { return a[i * ars + p * acs]; }
  float B(int p, int j) const { return b[p * brs + j * bcs]; }

  // Every element of C against the double product; C's padding untouched.
  void check(const char* what) const {
    int bad = 0;
    for (int i = 0; i < m && bad < 5; i++)
      for (int j = 0; j < n && bad < 5; j++) {
        double want = 0, scale = 0;
        for (int p = 0; p < k; p++) {
          want += static_cast<double>(A(i, p)) * B(p, j);
          scale += std::fabs(static_cast<double>(A(i, p)) * B(p, j));
        }
        const double before = c0[i * ldc + j];
        if (beta != 0) want += beta * before, scale += std::fabs(beta * before);
        const double got = c[i * ldc + j];
        if (!(std::fabs(got - want) <= 8 * kEps * scale + 1e-30)) {
          ADD_FAILURE() << what << " m " << m << " n " << n << " k " << k << " ta " << ta << " B layout "
                        << static_cast<int>(bl) << " beta " << beta << ": C(" << i << ", " << j << ") = " << got
                        << ", want " << want << " (scale " << scale << ")";
          bad++;
        }
      }
    for (int i = 0; i < m; i++)
      for (int64_t j = n; j < ldc; j++)
        if (c[i * ldc + j] != kSentinel) {
          ADD_FAILURE() << what << " m " << m << " n " << n << " k " << k << ": wrote C's padding at row " << i;
          return;
        }
  }
};

TEST(SgemmAvx2, BlockedOverTailsLayoutsAndBeta) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(7);
  const int ms[] = {1, 2, 5, 6, 7, 11, 13, 37, 70};
  const int ns[] = {1, 3, 7, 8, 9, 16, 17, 31, 33, 70};
  const int ks[] = {1, 2, 5, 8, 9, 17, 33, 70};
  for (int m : ms)
    for (int n : ns)
      for (int k : ks)
        for (int layout = 0; layout < 6; layout++) {
          const bool ta = layout & 1;
          const BLayout bl = static_cast<BLayout>(layout >> 1);
          const float beta = (m + n + k + layout) % 2 ? 1.0f : 0.0f;
          Problem pr(m, n, k, ta, bl, beta, (m + k) % 3, rng);
          const Sgemm g = pr.args();
          if ((m * n + k) % 2)
            nnc::gemm::sgemm_avx2(g);
          else
            ASSERT_TRUE(nnc::gemm::sgemm_avx2_serial(g));
          pr.check("sgemm_avx2");
          if (HasFailure()) return;
        }
}

TEST(SgemmAvx2, BlockedOtherBetaAndEmpty) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(8);
  Problem pr(13, 21, 9, false, BLayout::rows, 0.5f, 1, rng);
  nnc::gemm::sgemm_avx2(pr.args());
  pr.check("beta 0.5");
  // k = 0: C = beta · C (and 0, not NaN, for beta = 0).
  Problem zero(7, 9, 0, false, BLayout::rows, 0.0f, 2, rng);
  nnc::gemm::sgemm_avx2(zero.args());
  zero.check("k = 0, beta 0");
  Problem keep(7, 9, 0, true, BLayout::columns, 1.0f, 2, rng);
  nnc::gemm::sgemm_avx2(keep.args());
  keep.check("k = 0, beta 1");
}

// Past one packing block (k > 512 rows, n > 1024 columns) and on the pool:
// column ranges, and row ranges when there are fewer panels than threads.
TEST(SgemmAvx2, BlockedAcrossBlocksAndThreads) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(9);
  struct Size {
    int m, n, k;
  };
  const Size sizes[] = {{7, 1030, 530}, {301, 13, 201}, {70, 150, 260}, {6, 200, 1025}, {200, 8, 300}};
  for (const Size& s : sizes)
    for (int layout = 0; layout < 6; layout++) {
      Problem pr(s.m, s.n, s.k, layout & 1, static_cast<BLayout>(layout >> 1), layout % 4 == 1 ? 1.0f : 0.0f, 3,
                 rng);
      auto lock = nnc::compute_lock();
      nnc::gemm::sgemm_avx2(pr.args());
      pr.check("sgemm_avx2 threaded");
      if (HasFailure()) return;
    }
}

TEST(SgemmAvx2, SmallOverTailsAndLayouts) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(10);
  for (int m = 1; m <= 5; m++)
    for (int n = 1; n <= 70; n += (n < 20 ? 1 : 7))
      for (int k : {1, 3, 7, 8, 9, 16, 17, 31, 70})
        for (int layout = 0; layout < 3; layout++) {
          // rows-adjacent B with A in place or transposed; columns-adjacent B
          // (the fully connected layer) with A's rows adjacent.
          const bool ta = layout == 1;
          const BLayout bl = layout == 2 ? BLayout::columns : BLayout::rows;
          Problem pr(m, n, k, ta, bl, (n + k) % 2 ? 1.0f : 0.0f, (n + k) % 3, rng);
          ASSERT_TRUE(nnc::gemm::sgemm_small_avx2(pr.args()));
          pr.check("sgemm_small_avx2");
          if (HasFailure()) return;
        }
}

TEST(SgemmAvx2, SmallFullyConnectedSizesThreaded) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(11);
  for (int m : {1, 4, 5})
    for (BLayout bl : {BLayout::rows, BLayout::columns}) {
      const float beta = (m + static_cast<int>(bl)) % 2 ? 1.0f : 0.0f;
      Problem pr(m, 257, 1537, false, bl, beta, 0, rng);
      auto lock = nnc::compute_lock();
      ASSERT_TRUE(nnc::gemm::sgemm_small_avx2(pr.args()));
      pr.check("sgemm_small_avx2 fc");
      if (HasFailure()) return;
    }
}

TEST(SgemmAvx2, SmallRefusesWhatItCannotTake) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(12);
  Problem six(6, 9, 5, false, BLayout::rows, 0.0f, 0, rng);
  EXPECT_FALSE(nnc::gemm::sgemm_small_avx2(six.args()));
  Problem strided(3, 9, 5, false, BLayout::strided, 0.0f, 0, rng);
  EXPECT_FALSE(nnc::gemm::sgemm_small_avx2(strided.args()));
  Problem transposed(3, 9, 5, true, BLayout::columns, 0.0f, 0, rng);
  EXPECT_FALSE(nnc::gemm::sgemm_small_avx2(transposed.args()));
  // Refused calls leave C alone.
  EXPECT_TRUE(std::isnan(strided.c[0]));
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// Winograd's use: B packed once (either layout), many row-major A.
TEST(SgemmAvx2, PackedInterface) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  std::mt19937 rng(13);
  for (int m : {1, 5, 6, 7, 13, 36})
    for (int n : {1, 7, 8, 9, 16, 17, 33, 64, 70})
      for (int k : {1, 3, 8, 17, 70})
        for (BLayout bl : {BLayout::rows, BLayout::columns, BLayout::strided}) {
          Problem pr(m, n, k, false, bl, 0.0f, 3, rng);
          const int64_t floats = nnc::gemm::sgemm_packed_floats(k, n);
          const int64_t room = (floats + 16 + 15) / 16 * 16;  // a multiple of 64 bytes, with spare floats
          std::unique_ptr<float, FreeDeleter> packed(
              static_cast<float*>(std::aligned_alloc(64, sizeof(float) * room)));
          ASSERT_TRUE(packed);
          for (int64_t i = 0; i < room; i++) packed.get()[i] = kSentinel;
          const Sgemm g = pr.args();
          nnc::gemm::sgemm_pack_avx2(g, packed.get());
          for (int64_t i = floats; i < room; i++) ASSERT_EQ(packed.get()[i], kSentinel) << "packed past its size";
          nnc::gemm::sgemm_packed_avx2(m, n, k, pr.a.data(), pr.ars, packed.get(), pr.c.data(), pr.ldc);
          pr.check("sgemm_packed_avx2");
          // The packed B serves a second A as well.
          Problem again(m, n, k, false, bl, 0.0f, 3, rng);
          again.b = pr.b;
          nnc::gemm::sgemm_packed_avx2(m, n, k, again.a.data(), again.ars, packed.get(), again.c.data(), again.ldc);
          again.check("sgemm_packed_avx2, second A");
          if (HasFailure()) return;
        }
}

// ---------------------------------------------------------------------------
// GEMM through the command: CPU_OPT against CPU_REF. Under NNC_NO_AVX512=1
// (the _avx2 ctest run) CPU_OPT runs the kernels above.

using nnc_test_gemm::params;
using nnc_test_gemm::Tensor;

size_t elements(const ccv_nnc_tensor_t* t) {
  size_t c = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[i]; i++) c *= t->info.dim[i];
  return c;
}

Tensor random_tensor(const std::vector<int>& dims, std::mt19937& rng) {
  Tensor t(ccv_nnc_tensor_new(nullptr, params(CCV_32F, dims), 0));
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < elements(t.get()); i++) t->data.f32[i] = u(rng);
  return t;
}

// The same tensor with every value made non-negative (for the Σ|a||b| scale).
Tensor absolute(const ccv_nnc_tensor_t* t) {
  Tensor r(ccv_nnc_tensor_new(nullptr, t->info, 0));
  for (size_t i = 0; i < elements(t); i++) r->data.f32[i] = std::fabs(t->data.f32[i]);
  return r;
}

// ta / tb swap the last two axes of A (nd dimensions) / w (nw dimensions).
ccv_nnc_cmd_t gemm_cmd(uint32_t id, bool ta, bool tb, int nd, int nw, uint32_t backend) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.blas.a[0] = p.blas.a[1] = 1;
  if (ta) p.blas.transpose_a[0] = nd - 2, p.blas.transpose_a[1] = nd - 1;
  if (tb) p.blas.transpose_b[0] = nw - 2, p.blas.transpose_b[1] = nw - 1;
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(id, nullptr, p, 0);
  cmd.backend = backend;
  return cmd;
}

int exec(const ccv_nnc_cmd_t& cmd, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), nullptr);
}

// got within 8 epsilons of scale (REF on absolute values) of want, per element.
void expect_close(const ccv_nnc_tensor_t* got, const ccv_nnc_tensor_t* want, const ccv_nnc_tensor_t* scale,
                  const char* what) {
  ASSERT_EQ(elements(got), elements(want));
  for (size_t i = 0; i < elements(got); i++) {
    const double tol = 8 * kEps * scale->data.f32[i] * (1 + 1e-5) + 1e-30;
    if (!(std::fabs(static_cast<double>(got->data.f32[i]) - want->data.f32[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << got->data.f32[i] << ", CPU_REF gives "
                    << want->data.f32[i] << " (tolerance " << tol << ")";
      return;
    }
  }
}

struct Shape {
  int batch, m, k, n;
  bool batched_w = false;
};

TEST(SgemmAvx2, CommandOptMatchesRefForward) {
  std::mt19937 rng(14);
  const Shape shapes[] = {{1, 1, 37, 19},  {1, 4, 300, 70},  {1, 5, 9, 17},  {1, 6, 33, 16},  {1, 29, 70, 45},
                          {3, 2, 17, 23},  {3, 7, 31, 9},    {2, 64, 129, 70}, {4, 3, 40, 33, true},
                          {2, 13, 21, 35, true}};
  for (const Shape& s : shapes)
    for (int t = 0; t < 4; t++)
      for (bool bias : {false, true}) {
        const bool ta = t & 1, tb = t & 2;
        std::vector<int> ad = ta ? std::vector<int>{s.k, s.m} : std::vector<int>{s.m, s.k};
        std::vector<int> wd = tb ? std::vector<int>{s.n, s.k} : std::vector<int>{s.k, s.n};
        std::vector<int> cd = {s.m, s.n};
        if (s.batch > 1) {
          ad.insert(ad.begin(), s.batch), cd.insert(cd.begin(), s.batch);
          if (s.batched_w) wd.insert(wd.begin(), s.batch);
        }
        const int nd = static_cast<int>(ad.size()), nw = static_cast<int>(wd.size());
        Tensor a = random_tensor(ad, rng), w = random_tensor(wd, rng), b = random_tensor({s.n}, rng);
        Tensor abs_a = absolute(a.get()), abs_w = absolute(w.get()), abs_b = absolute(b.get());
        Tensor opt = random_tensor(cd, rng), ref = random_tensor(cd, rng), scale = random_tensor(cd, rng);
        std::vector<ccv_nnc_tensor_t*> in = {a.get(), w.get()}, abs_in = {abs_a.get(), abs_w.get()};
        if (bias) in.push_back(b.get()), abs_in.push_back(abs_b.get());
        ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_FORWARD, ta, tb, nd, nw, CCV_NNC_BACKEND_CPU_OPT), in, {opt.get()}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_FORWARD, ta, tb, nd, nw, CCV_NNC_BACKEND_CPU_REF), in, {ref.get()}),
                  CCV_NNC_EXEC_SUCCESS);
        ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_FORWARD, ta, tb, nd, nw, CCV_NNC_BACKEND_CPU_REF), abs_in, {scale.get()}),
                  CCV_NNC_EXEC_SUCCESS);
        SCOPED_TRACE(testing::Message() << "batch " << s.batch << " m " << s.m << " k " << s.k << " n " << s.n
                                        << " ta " << ta << " tb " << tb << " bias " << bias);
        expect_close(opt.get(), ref.get(), scale.get(), "forward");
        if (HasFailure()) return;
      }
}

// A strided view of A and of the output (rows farther apart than their width).
TEST(SgemmAvx2, CommandOptMatchesRefOnViews) {
  std::mt19937 rng(15);
  for (int m : {3, 17}) {
    const int k = 45, n = 27;
    Tensor a_big = random_tensor({m, k + 5}, rng), w = random_tensor({k, n}, rng);
    Tensor c_big = random_tensor({m, n + 3}, rng), ref = random_tensor({m, n}, rng);
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 2};
    int a_stride[CCV_NNC_MAX_DIM_ALLOC] = {k + 5, 1};
    int c_stride[CCV_NNC_MAX_DIM_ALLOC] = {n + 3, 1};
    Tensor a(reinterpret_cast<ccv_nnc_tensor_t*>(
        ccv_nnc_tensor_view_new(a_big.get(), params(CCV_32F, {m, k}), ofs, a_stride)));
    int c_ofs[CCV_NNC_MAX_DIM_ALLOC] = {0, 1};
    Tensor c(reinterpret_cast<ccv_nnc_tensor_t*>(
        ccv_nnc_tensor_view_new(c_big.get(), params(CCV_32F, {m, n}), c_ofs, c_stride)));
    ASSERT_TRUE(a && c) << ccv_nnc_error_message();
    const std::vector<float> before(c_big->data.f32, c_big->data.f32 + elements(c_big.get()));
    ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_FORWARD, false, false, 2, 2, CCV_NNC_BACKEND_CPU_OPT), {a.get(), w.get()},
                   {c.get()}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n + 3; j++) {
        const float got = c_big->data.f32[i * (n + 3) + j];
        if (j < 1 || j > n) {
          EXPECT_EQ(got, before[i * (n + 3) + j]) << "wrote outside the view at " << i << ", " << j;
          continue;
        }
        double want = 0, scale = 0;
        for (int p = 0; p < k; p++) {
          const double x = static_cast<double>(a_big->data.f32[i * (k + 5) + 2 + p]) * w->data.f32[p * n + j - 1];
          want += x, scale += std::fabs(x);
        }
        EXPECT_NEAR(got, want, 8 * kEps * scale) << "m " << m << " at " << i << ", " << j - 1;
      }
  }
}

TEST(SgemmAvx2, CommandOptMatchesRefBackward) {
  std::mt19937 rng(16);
  const Shape shapes[] = {{1, 1, 37, 19}, {1, 4, 70, 33}, {1, 23, 45, 70}, {3, 5, 17, 9}, {2, 9, 31, 20}};
  for (const Shape& s : shapes)
    for (int t = 0; t < 4; t++) {
      const bool ta = t & 1, tb = t & 2;
      std::vector<int> ad = ta ? std::vector<int>{s.k, s.m} : std::vector<int>{s.m, s.k};
      std::vector<int> wd = tb ? std::vector<int>{s.n, s.k} : std::vector<int>{s.k, s.n};
      std::vector<int> gd = {s.m, s.n};
      if (s.batch > 1) ad.insert(ad.begin(), s.batch), gd.insert(gd.begin(), s.batch);
      const int nd = static_cast<int>(ad.size()), nw = static_cast<int>(wd.size());
      Tensor g = random_tensor(gd, rng), a = random_tensor(ad, rng), w = random_tensor(wd, rng);
      Tensor abs_g = absolute(g.get()), abs_a = absolute(a.get()), abs_w = absolute(w.get());
      Tensor da[3] = {random_tensor(ad, rng), random_tensor(ad, rng), random_tensor(ad, rng)};
      Tensor dw[3] = {random_tensor(wd, rng), random_tensor(wd, rng), random_tensor(wd, rng)};
      Tensor db[3] = {random_tensor({s.n}, rng), random_tensor({s.n}, rng), random_tensor({s.n}, rng)};
      const uint32_t backends[2] = {CCV_NNC_BACKEND_CPU_OPT, CCV_NNC_BACKEND_CPU_REF};
      for (int r = 0; r < 3; r++) {
        const bool scale = r == 2;
        const std::vector<ccv_nnc_tensor_t*> in = scale ? std::vector<ccv_nnc_tensor_t*>{abs_g.get(), abs_a.get(), abs_w.get()}
                                                        : std::vector<ccv_nnc_tensor_t*>{g.get(), a.get(), w.get()};
        ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_BACKWARD, ta, tb, nd, nw, backends[r == 0 ? 0 : 1]), in,
                       {da[r].get(), dw[r].get(), db[r].get()}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
      }
      SCOPED_TRACE(testing::Message() << "batch " << s.batch << " m " << s.m << " k " << s.k << " n " << s.n
                                      << " ta " << ta << " tb " << tb);
      expect_close(da[0].get(), da[1].get(), da[2].get(), "da");
      expect_close(dw[0].get(), dw[1].get(), dw[2].get(), "dw");
      expect_close(db[0].get(), db[1].get(), db[2].get(), "dbias");
      if (HasFailure()) return;
    }
}

// Under NNC_NO_AVX512 on an AVX2 CPU, CPU_OPT's fp32 GEMM is these kernels:
// its output equals theirs bit for bit (the blocked one from 6 rows, the
// small one below).
TEST(SgemmAvx2, CommandRunsTheAvx2KernelsWithoutAvx512) {
  if (nnc::cpu_features().avx512 || !have_avx2())
    GTEST_SKIP() << "checked where AVX-512 is off and AVX2 on (the _avx2 ctest run, NNC_NO_AVX512=1)";
  std::mt19937 rng(17);
  for (int m : {1, 4, 6, 50})
    for (bool tb : {false, true}) {
      const int k = 300, n = 70;
      Tensor a = random_tensor({m, k}, rng);
      Tensor w = random_tensor(tb ? std::vector<int>{n, k} : std::vector<int>{k, n}, rng);
      Tensor c = random_tensor({m, n}, rng);
      ASSERT_EQ(exec(gemm_cmd(CCV_NNC_GEMM_FORWARD, false, tb, 2, 2, CCV_NNC_BACKEND_CPU_OPT), {a.get(), w.get()},
                     {c.get()}),
                CCV_NNC_EXEC_SUCCESS);
      std::vector<float> mine(static_cast<size_t>(m) * n);
      Sgemm g;
      g.m = m, g.n = n, g.k = k;
      g.a = a->data.f32, g.ars = k, g.acs = 1;
      g.b = w->data.f32, g.brs = tb ? 1 : n, g.bcs = tb ? k : 1;
      g.c = mine.data(), g.ldc = n;
      {
        auto lock = nnc::compute_lock();
        if (m >= 6)
          nnc::gemm::sgemm_avx2(g);
        else
          ASSERT_TRUE(nnc::gemm::sgemm_small_avx2(g));
      }
      EXPECT_EQ(std::memcmp(mine.data(), c->data.f32, sizeof(float) * mine.size()), 0) << "m " << m << " tb " << tb;
    }
}

}  // namespace
