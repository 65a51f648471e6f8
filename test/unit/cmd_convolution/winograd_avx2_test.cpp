// Winograd on AVX2 (winograd_avx2.cpp): the forward run and the weight
// gradient called directly against sums in double written here, whatever the
// CPU's widest instruction set, and the command's Winograd paths (forward, dx,
// dw) against CPU_REF (on the AVX2 code where the kernels are AVX2: the
// test_winograd_avx2_avx2 run sets NNC_NO_AVX512). Odd extents that cut the
// last tiles, channel counts that are not multiples of 8, strided outputs,
// one thread and the pool. Also the AVX2 kernel table's transpose (NCHW <->
// NHWC rows on AVX2 CPUs) over every edge case of its 8 x 8 tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "cmd/convolution/kernels.hpp"
#include "cmd/convolution/winograd.hpp"
#include "core/parallel.hpp"

using namespace cmdtest;

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float, FreeDeleter>;

Buffer aligned_floats(size_t n) {
  return Buffer(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64)));
}

std::vector<float> uniform(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Winograd's transforms round at about 1e-6 of the magnitude of the terms
// summed (not of the sum): |got - want| over the sum of |terms|, floored at 1.
double rel(double got, double want, double magnitude) {
  return std::fabs(got - want) / std::max(1.0, magnitude);
}

struct Shape {
  int N, OH, OW, C, K, R;
};

const Shape kShapes[] = {
    {2, 13, 11, 17, 20, 3},  // tiles cut on both edges; C and K past whole vectors
    {1, 7, 9, 3, 5, 3},      // fewer channels than one vector
    {2, 9, 10, 13, 9, 5},    // 5x5: odd rows cut the last tile
    {1, 5, 5, 1, 33, 5},     // one input channel
    {4, 20, 21, 9, 11, 3},   // more tiles than one block holds: several blocks per thread
};

class WinogradAvx2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nnc::cpu_features().avx2) GTEST_SKIP() << "no AVX2 + FMA + F16C on this CPU";
  }
};

TEST_F(WinogradAvx2, ForwardMatchesDoubleSums) {
  std::mt19937 rng(11);
  for (const Shape& s : kShapes)
    for (bool threaded : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE(testing::Message() << "N" << s.N << " " << s.OH << "x" << s.OW << " C" << s.C << " K" << s.K
                                        << " R" << s.R << (threaded ? " threaded" : "") << (bias ? " bias" : ""));
        nnc::conv::WinogradRun r;
        r.N = s.N, r.C = s.C, r.K = s.K, r.R = s.R, r.OH = s.OH, r.OW = s.OW;
        r.in_h = nnc::conv::winograd_extent(s.OH, s.R), r.in_w = nnc::conv::winograd_extent(s.OW, s.R);
        ASSERT_GE(r.in_h, s.OH + s.R - 1);
        const std::vector<float> in = uniform(static_cast<size_t>(r.N) * r.in_h * r.in_w * r.C, rng);
        const std::vector<float> w = uniform(static_cast<size_t>(r.K) * r.R * r.R * r.C, rng);
        const std::vector<float> b = uniform(static_cast<size_t>(r.K), rng);
        // Pixels K + 3 floats apart: the gaps must stay as they were.
        const int64_t sw = s.K + 3, sh = sw * s.OW, sn = sh * s.OH;
        std::vector<float> out(static_cast<size_t>(sn) * s.N, 7.0f);
        r.in = in.data(), r.w = w.data(), r.bias = bias ? b.data() : nullptr;
        r.out = out.data(), r.sn = sn, r.sh = sh, r.sw = sw;
        r.threaded = threaded;
        Buffer scratch = aligned_floats(nnc::conv::winograd_scratch_floats_avx2(r));
        {
          auto lock = nnc::compute_lock();
          nnc::conv::winograd_avx2(r, scratch.get());
        }
        double worst = 0;
        for (int n = 0; n < s.N; n++)
          for (int oh = 0; oh < s.OH; oh++)
            for (int ow = 0; ow < s.OW; ow++) {
              const float* px = out.data() + n * sn + oh * sh + ow * sw;
              for (int k = 0; k < s.K; k++) {
                double want = bias ? b[k] : 0.0, mag = std::fabs(want);
                for (int i = 0; i < s.R; i++)
                  for (int j = 0; j < s.R; j++)
                    for (int c = 0; c < s.C; c++) {
                      const double t =
                          static_cast<double>(in[((static_cast<size_t>(n) * r.in_h + oh + i) * r.in_w + ow + j) * r.C +
                                                 c]) *
                          w[((static_cast<size_t>(k) * s.R + i) * s.R + j) * s.C + c];
                      want += t, mag += std::fabs(t);
                    }
                worst = std::max(worst, rel(px[k], want, mag));
              }
              for (int k = s.K; k < sw; k++) ASSERT_EQ(px[k], 7.0f) << "gap written at channel " << k;
            }
        EXPECT_LE(worst, 1e-5);
      }
}

TEST_F(WinogradAvx2, WeightGradientMatchesDoubleSums) {
  std::mt19937 rng(12);
  for (const Shape& s : kShapes)
    for (bool threaded : {false, true}) {
      SCOPED_TRACE(testing::Message() << "N" << s.N << " " << s.OH << "x" << s.OW << " C" << s.C << " K" << s.K
                                      << " R" << s.R << (threaded ? " threaded" : ""));
      nnc::conv::WinogradGradRun r;
      r.N = s.N, r.C = s.C, r.K = s.K, r.R = s.R, r.OH = s.OH, r.OW = s.OW;
      r.in_h = nnc::conv::winograd_extent(s.OH, s.R), r.in_w = nnc::conv::winograd_extent(s.OW, s.R);
      const std::vector<float> in = uniform(static_cast<size_t>(r.N) * r.in_h * r.in_w * r.C, rng);
      // g's pixels K + 2 floats apart (what lies between is never read as g).
      const int64_t gsw = s.K + 2, gsh = gsw * s.OW, gsn = gsh * s.OH;
      const std::vector<float> g = uniform(static_cast<size_t>(gsn) * s.N, rng);
      std::vector<float> dw(static_cast<size_t>(s.K) * s.R * s.R * s.C, 7.0f), db(static_cast<size_t>(s.K), 7.0f);
      r.in = in.data(), r.g = g.data(), r.gsn = gsn, r.gsh = gsh, r.gsw = gsw;
      r.dw = dw.data(), r.dbias = db.data();
      r.threaded = threaded;
      Buffer scratch = aligned_floats(nnc::conv::winograd_gradient_scratch_floats_avx2(r));
      {
        auto lock = nnc::compute_lock();
        nnc::conv::winograd_gradient_avx2(r, scratch.get());
      }
      double worst = 0, worst_b = 0;
      for (int k = 0; k < s.K; k++) {
        double sb = 0, mb = 0;
        for (int n = 0; n < s.N; n++)
          for (int oh = 0; oh < s.OH; oh++)
            for (int ow = 0; ow < s.OW; ow++) {
              const double t = g[n * gsn + oh * gsh + ow * gsw + k];
              sb += t, mb += std::fabs(t);
            }
        worst_b = std::max(worst_b, rel(db[k], sb, mb));
        for (int i = 0; i < s.R; i++)
          for (int j = 0; j < s.R; j++)
            for (int c = 0; c < s.C; c++) {
              double want = 0, mag = 0;
              for (int n = 0; n < s.N; n++)
                for (int oh = 0; oh < s.OH; oh++)
                  for (int ow = 0; ow < s.OW; ow++) {
                    const double t = static_cast<double>(g[n * gsn + oh * gsh + ow * gsw + k]) *
                                     in[((static_cast<size_t>(n) * r.in_h + oh + i) * r.in_w + ow + j) * r.C + c];
                    want += t, mag += std::fabs(t);
                  }
              worst = std::max(worst, rel(dw[((static_cast<size_t>(k) * s.R + i) * s.R + j) * s.C + c], want, mag));
            }
      }
      EXPECT_LE(worst, 1e-5);
      EXPECT_LE(worst_b, 1e-6);
    }
}

// The command: algorithm 6 (Winograd wherever it applies) and the default
// against CPU_REF, NHWC and NCHW, at the AVX-512 Winograd tests' tolerance
// (1e-4 of max(1, |value|): shapes of that suite's size, where it holds).
TEST_F(WinogradAvx2, CommandMatchesRef) {
  ccv_nnc_init();
  std::mt19937 rng(13);
  struct Case {
    int N, H, W, C, K, R, pad;
  };
  const Case cases[] = {{2, 13, 11, 17, 20, 3, 1}, {1, 9, 10, 16, 33, 5, 2}, {1, 11, 7, 20, 24, 5, 2},
                        {1, 15, 16, 12, 10, 3, 0}};
  for (const Case& c : cases)
    for (int format : {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW})
      for (int algorithm : {0, 6}) {
        SCOPED_TRACE(testing::Message() << "N" << c.N << " " << c.H << "x" << c.W << " C" << c.C << " K" << c.K << " "
                                        << c.R << "x" << c.R << " pad " << c.pad << " algorithm " << algorithm
                                        << (format == CCV_TENSOR_FORMAT_NHWC ? " NHWC" : " NCHW"));
        const bool nhwc = format == CCV_TENSOR_FORMAT_NHWC;
        const int OH = c.H + 2 * c.pad - c.R + 1, OW = c.W + 2 * c.pad - c.R + 1;
        auto img = [&](int h, int w, int ch) {
          return nhwc ? std::vector<int>{c.N, h, w, ch} : std::vector<int>{c.N, ch, h, w};
        };
        const std::vector<int> ws = nhwc ? std::vector<int>{c.K, c.R, c.R, c.C} : std::vector<int>{c.K, c.C, c.R, c.R};
        T x(CCV_32F, img(c.H, c.W, c.C), format), w(CCV_32F, ws, format), b(CCV_32F, {c.K}, format);
        T g(CCV_32F, img(OH, OW, c.K), format);
        fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
        ccv_nnc_cmd_param_t p = {};
        p.size.dim[0] = c.R, p.size.dim[1] = c.R, p.size.dim[2] = c.C;
        p.convolution.count = c.K;
        p.convolution.groups = 1;
        ccv_nnc_hint_t hint = {};
        hint.stride.dim[0] = hint.stride.dim[1] = 1;
        hint.border.begin[0] = hint.border.begin[1] = hint.border.end[0] = hint.border.end[1] = c.pad;
        T y[2] = {T(CCV_32F, img(OH, OW, c.K), format), T(CCV_32F, img(OH, OW, c.K), format)};
        T dx[2] = {T(CCV_32F, img(c.H, c.W, c.C), format), T(CCV_32F, img(c.H, c.W, c.C), format)};
        T dw[2] = {T(CCV_32F, ws, format), T(CCV_32F, ws, format)};
        T db[2] = {T(CCV_32F, {c.K}, format), T(CCV_32F, {c.K}, format)};
        for (int side = 0; side < 2; side++) {
          ccv_nnc_cmd_t f = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_FORWARD, nullptr, p, 0);
          ccv_nnc_cmd_t bk = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_BACKWARD, nullptr, p, 0);
          f.backend = bk.backend = side == 0 ? CCV_NNC_BACKEND_CPU_REF : CCV_NNC_BACKEND_CPU_OPT;
          f.algorithm = bk.algorithm = side == 0 ? 0 : algorithm;
          ASSERT_EQ(run_hint(f, hint, {x, w, b}, {y[side]}), 0) << ccv_nnc_error_message();
          ASSERT_EQ(run_hint(bk, hint, {g, x, w}, {dx[side], dw[side], db[side]}), 0) << ccv_nnc_error_message();
        }
        EXPECT_LE(max_rel_diff(y[1], y[0]), 1e-4);
        EXPECT_LE(max_rel_diff(dx[1], dx[0]), 1e-4);
        EXPECT_LE(max_rel_diff(dw[1], dw[0]), 1e-4);
        EXPECT_LE(max_rel_diff(db[1], db[0]), 1e-4);
      }
}

TEST_F(WinogradAvx2, TableTransposeMatchesDefinition) {
  const nnc::conv::Kernels* k = nnc::conv::kernels_avx2();
  ASSERT_NE(k->transpose, nullptr);
  for (int rows = 1; rows <= 19; rows++)
    for (int cols = 1; cols <= 19; cols++) {
      const int64_t xs = cols + 3, ys = rows + 5;  // strided both ways
      std::vector<float> x(static_cast<size_t>(rows) * xs), y(static_cast<size_t>(cols) * ys, -1.0f);
      for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>(i);
      k->transpose(x.data(), xs, rows, cols, y.data(), ys);
      for (int j = 0; j < cols; j++)
        for (int i = 0; i < ys; i++)
          ASSERT_EQ(y[j * ys + i], i < rows ? x[i * xs + j] : -1.0f)
              << rows << " x " << cols << " at column " << j << " row " << i;
    }
}

// The default takes Winograd from 768 output pixels (16+ channels each way):
// the same bits as algorithm 6 there, on either instruction set.
TEST_F(WinogradAvx2, DefaultIsWinogradOnLargeOutputs) {
  ccv_nnc_init();
  std::mt19937 rng(14);
  const int N = 4, H = 14, W = 14, C = 16, K = 17, R = 3;  // 4 x 14 x 14 = 784 pixels
  T x(CCV_32F, {N, H, W, C}, CCV_TENSOR_FORMAT_NHWC), w(CCV_32F, {K, R, R, C}, CCV_TENSOR_FORMAT_NHWC);
  T b(CCV_32F, {K}, CCV_TENSOR_FORMAT_NHWC), g(CCV_32F, {N, H, W, K}, CCV_TENSOR_FORMAT_NHWC);
  fill_uniform(x, rng), fill_uniform(w, rng), fill_uniform(b, rng), fill_uniform(g, rng);
  ccv_nnc_cmd_param_t p = {};
  p.size.dim[0] = R, p.size.dim[1] = R, p.size.dim[2] = C;
  p.convolution.count = K;
  p.convolution.groups = 1;
  ccv_nnc_hint_t hint = {};
  hint.stride.dim[0] = hint.stride.dim[1] = 1;
  hint.border.begin[0] = hint.border.begin[1] = hint.border.end[0] = hint.border.end[1] = 1;
  std::vector<T> outs;
  for (int algorithm : {0, 6}) {
    ccv_nnc_cmd_t f = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_FORWARD, nullptr, p, 0);
    ccv_nnc_cmd_t bk = ccv_nnc_cmd(CCV_NNC_CONVOLUTION_BACKWARD, nullptr, p, 0);
    f.backend = bk.backend = CCV_NNC_BACKEND_CPU_OPT;
    f.algorithm = bk.algorithm = algorithm;
    outs.emplace_back(CCV_32F, std::vector<int>{N, H, W, K}, CCV_TENSOR_FORMAT_NHWC);
    outs.emplace_back(CCV_32F, std::vector<int>{N, H, W, C}, CCV_TENSOR_FORMAT_NHWC);
    outs.emplace_back(CCV_32F, std::vector<int>{K, R, R, C}, CCV_TENSOR_FORMAT_NHWC);
    const size_t o = outs.size() - 3;
    ASSERT_EQ(run_hint(f, hint, {x, w, b}, {outs[o]}), 0) << ccv_nnc_error_message();
    ASSERT_EQ(run_hint(bk, hint, {g, x, w}, {outs[o + 1], outs[o + 2]}), 0) << ccv_nnc_error_message();
  }
  for (int i = 0; i < 3; i++) EXPECT_EQ(max_rel_diff(outs[i], outs[i + 3]), 0) << "output " << i;
}

}  // namespace
