// The inner loops of the reduction and normalisation kernels, every
// instruction-set table this CPU runs (the generic one always), against
// double-precision loops written here, on every length up to a few vectors.
#include "cmd/common/reduce_loops.hpp"
#include "core/parallel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using nnc::red::Loops;

template <class T>
std::vector<std::pair<const char*, const Loops<T>*>> tables();
template <>
std::vector<std::pair<const char*, const Loops<float>*>> tables<float>() {
  std::vector<std::pair<const char*, const Loops<float>*>> t = {{"generic", &nnc::red::loops_f32_generic()}};
  if (nnc::cpu_features().avx2)
    t.push_back({"avx2", &nnc::red::loops_f32_avx2()});
  if (nnc::cpu_features().avx512)
    t.push_back({"avx512", &nnc::red::loops_f32_avx512()});
  return t;
}
template <>
std::vector<std::pair<const char*, const Loops<double>*>> tables<double>() {
  std::vector<std::pair<const char*, const Loops<double>*>> t = {{"generic", &nnc::red::loops_f64_generic()}};
  if (nnc::cpu_features().avx2)
    t.push_back({"avx2", &nnc::red::loops_f64_avx2()});
  if (nnc::cpu_features().avx512)
    t.push_back({"avx512", &nnc::red::loops_f64_avx512()});
  return t;
}

template <class T>
void check_tables() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> d(-2, 2);
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-12;
  for (const auto& [name, table] : tables<T>()) {
    const Loops<T>& L = *table;
    for (size_t n = 1; n <= 150; n += (n < 70 ? 1 : 7)) {
      const size_t rows = 3;
      std::vector<T> x(n * rows), g(n * rows), c(n), s(n), b(n), y(n * rows);
      for (T& v : x) v = static_cast<T>(d(rng));
      for (T& v : g) v = static_cast<T>(d(rng));
      for (T& v : c) v = static_cast<T>(d(rng));
      for (T& v : s) v = static_cast<T>(d(rng));
      for (T& v : b) v = static_cast<T>(d(rng));
      // Row reductions.
      double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
      for (size_t i = 0; i < n; i++)
        sum += x[i], sq += double(x[i]) * x[i], mx = std::max(mx, double(x[i])), mn = std::min(mn, double(x[i]));
      EXPECT_NEAR(L.row_reduce(nnc::red::kSum, x.data(), n), sum, tol * n) << name << " n " << n;
      EXPECT_NEAR(L.row_reduce(nnc::red::kSumSq, x.data(), n), sq, tol * n) << name;
      EXPECT_EQ(L.row_reduce(nnc::red::kMax, x.data(), n), static_cast<T>(mx)) << name;
      EXPECT_EQ(L.row_reduce(nnc::red::kMin, x.data(), n), static_cast<T>(mn)) << name;
      const T m = c[0];
      T dev = 0;
      double wsq = 0, wdev = 0, wsg = 0, wsgx = 0;
      for (size_t i = 0; i < n; i++) {
        wsq += (double(x[i]) - m) * (double(x[i]) - m), wdev += double(x[i]) - m;
        wsg += g[i], wsgx += double(g[i]) * (double(x[i]) - m);
      }
      EXPECT_NEAR(L.row_sqdev(x.data(), n, m, &dev), wsq, tol * n) << name;
      EXPECT_NEAR(dev, wdev, tol * n) << name;
      T sg = 0, sgx = 0;
      L.row_dot2(g.data(), x.data(), n, m, &sg, &sgx);
      EXPECT_NEAR(sg, wsg, tol * n) << name;
      EXPECT_NEAR(sgx, wsgx, tol * n) << name;
      // Column loops over `rows` rows of n.
      std::vector<T> acc(n, T(0)), acc2(n, T(0)), col(n);
      L.col_reduce(nnc::red::kSum, x.data(), rows, static_cast<int64_t>(n), n, col.data(), true);
      L.col_sqdev(x.data(), rows, static_cast<int64_t>(n), n, c.data(), acc.data(), acc2.data());
      for (size_t j = 0; j < n; j++) {
        double cs = 0, csq = 0, cd = 0;
        for (size_t r = 0; r < rows; r++) {
          const double v = x[r * n + j];
          cs += v, csq += (v - c[j]) * (v - c[j]), cd += v - c[j];
        }
        EXPECT_NEAR(col[j], cs, tol * 4) << name;
        EXPECT_NEAR(acc[j], csq, tol * 8) << name;
        EXPECT_NEAR(acc2[j], cd, tol * 4) << name;
      }
      // Affine and the backward combination.
      L.row_axpbypc(g.data(), x.data(), y.data(), n, m, s[0], b[0], c[1 % n]);
      for (size_t i = 0; i < n; i++)
        EXPECT_NEAR(y[i], double(s[0]) * g[i] + double(b[0]) * (double(x[i]) - m) + c[1 % n], tol * 8) << name;
      L.col_affine(x.data(), y.data(), rows, static_cast<int64_t>(n), n, c.data(), s.data(), b.data());
      for (size_t i = 0; i < n * rows; i++)
        EXPECT_NEAR(y[i], (double(x[i]) - c[i % n]) * s[i % n] + b[i % n], tol * 8) << name;
      // Layer-norm rows with scale and bias.
      const T inv = static_cast<T>(0.75), r = static_cast<T>(0.125);
      L.ln_forward(x.data(), y.data(), n, m, r, inv, s.data(), b.data());
      for (size_t i = 0; i < n; i++) EXPECT_NEAR(y[i], ((double(x[i]) - m) - r) * inv * s[i] + b[i], tol * 8) << name;
      std::vector<T> ds(n, T(0)), db(n, T(0));
      T sh = 0, shx = 0;
      L.ln_backward_sums(g.data(), x.data(), n, m, inv, s.data(), &sh, &shx, ds.data(), db.data());
      double wsh = 0, wshx = 0;
      for (size_t i = 0; i < n; i++) {
        const double xh = (double(x[i]) - m) * inv, h = double(g[i]) * s[i];
        wsh += h, wshx += h * xh;
        EXPECT_NEAR(ds[i], g[i] * xh, tol * 4) << name;
        EXPECT_NEAR(db[i], g[i], tol) << name;
      }
      EXPECT_NEAR(sh, wsh, tol * n) << name;
      EXPECT_NEAR(shx, wshx, tol * n) << name;
      // Arg reductions: ties (values rounded to halves), then a NaN at one place.
      std::vector<T> t(n * rows);
      for (size_t i = 0; i < n * rows; i++) t[i] = static_cast<T>(std::round(x[i] * 2) / 2);
      for (int nan_at : {-1, static_cast<int>(n / 2), static_cast<int>(n) - 1}) {
        std::vector<T> u = t;
        if (nan_at >= 0) u[static_cast<size_t>(nan_at)] = static_cast<T>(NAN);
        for (bool max : {true, false}) {
          int want = 0;
          for (size_t i = 1; i < n && !std::isnan(u[want]); i++)
            if (std::isnan(u[i]) || (max ? u[i] > u[want] : u[i] < u[want])) want = static_cast<int>(i);
          EXPECT_EQ(L.row_arg(u.data(), n, max), want) << name << " n " << n << " nan at " << nan_at;
          std::vector<T> best(n);
          std::vector<int32_t> at(n);
          L.col_arg(u.data(), rows, static_cast<int64_t>(n), n, max, best.data(), at.data());
          for (size_t j = 0; j < n; j++) {
            int32_t w = 0;
            for (size_t r = 1; r < rows && !std::isnan(u[w * n + j]); r++) {
              const T v = u[r * n + j];
              if (std::isnan(v) || (max ? v > u[w * n + j] : v < u[w * n + j])) w = static_cast<int32_t>(r);
            }
            EXPECT_EQ(at[j], w) << name << " column " << j;
          }
        }
      }
    }
  }
}

TEST(ReduceLoops, EveryTableAgreesWithDoubleLoopsFp32) { check_tables<float>(); }
TEST(ReduceLoops, EveryTableAgreesWithDoubleLoopsFp64) { check_tables<double>(); }

}  // namespace
