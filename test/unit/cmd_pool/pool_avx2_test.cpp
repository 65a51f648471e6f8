// MAX_POOL_BACKWARD on CPU_OPT for 2x2 stride-2 windows that tile an NHWC
// image (the AVX2 one-hot path and AVX-512's alike; the test_pool_avx2_avx2
// run sets NNC_NO_AVX512): each window's gradient goes to its first maximum
// in row-major order, or to its first NaN, and every other dx element is 0 —
// checked against that rule written here, over channel counts around whole
// vectors of 8, ties, infinities, NaNs and strided views. And the gate every
// *_avx2.cpp call passes: CpuFeatures::avx2 is AVX2, FMA and F16C together.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "core/parallel.hpp"

using namespace cmdtest;

namespace {

class PoolAvx2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

// The window's winner: the first element greater than the best so far, or
// the first NaN when the best is not one.
int winner(const float v[4]) {
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (v[i] > v[best] || (std::isnan(v[i]) && !std::isnan(v[best]))) best = i;
  return best;
}

TEST_F(PoolAvx2, GateIsTheCompiledSet) {
  __builtin_cpu_init();
  const bool set = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  EXPECT_EQ(nnc::cpu_features().avx2, set);
  // AVX-512 implies the AVX2 set (every AVX-512 path may fall back to it).
  if (nnc::cpu_features().avx512) {
    EXPECT_TRUE(nnc::cpu_features().avx2);
  }
}

TEST_F(PoolAvx2, MaxBackward2x2TilesToTheFirstMaximum) {
  std::mt19937 rng(21);
  const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f};
  for (int C : {1, 7, 8, 9, 16, 17, 24, 31, 64, 70})
    for (bool views : {false, true})
      for (int N : {1, 3}) {
        const int H = 6, W = 10, OH = 3, OW = 5;
        SCOPED_TRACE(testing::Message() << "N" << N << " C" << C << (views ? " views" : ""));
        const std::vector<int> xs{N, H, W, C}, ys{N, OH, OW, C};
        T x = views ? T::view(CCV_32F, xs) : T(CCV_32F, xs), g = views ? T::view(CCV_32F, ys) : T(CCV_32F, ys);
        T dx = views ? T::view(CCV_32F, xs) : T(CCV_32F, xs);
        std::uniform_int_distribution<int> small(-2, 2), pick(0, 19);
        for (size_t i = 0; i < x.count(); i++) {
          const int p = pick(rng);
          x.set(i, p < 5 ? specials[p] : static_cast<float>(small(rng)));  // ties in most windows
        }
        fill_uniform(g, rng, 0.5, 1.5);
        for (size_t i = 0; i < dx.count(); i++) dx.set(i, 99.0);  // every element must be written
        ccv_nnc_cmd_param_t p = {};
        p.size.dim[0] = 2, p.size.dim[1] = 2, p.size.dim[2] = C;
        ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_MAX_POOL_BACKWARD, nullptr, p, 0);
        cmd.backend = CCV_NNC_BACKEND_CPU_OPT;
        ccv_nnc_hint_t hint = {};
        hint.stride.dim[0] = hint.stride.dim[1] = 2;
        ASSERT_EQ(run_hint(cmd, hint, {g, x, nullptr}, {dx}), 0) << ccv_nnc_error_message();
        if (views) {
          EXPECT_TRUE(dx.guard_intact());
        }
        int wrong = 0;
        for (int n = 0; n < N; n++)
          for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
              for (int c = 0; c < C; c++) {
                float v[4];
                size_t at[4];
                for (int i = 0; i < 4; i++) {
                  at[i] = ((static_cast<size_t>(n) * H + 2 * oh + i / 2) * W + 2 * ow + i % 2) * C + c;
                  v[i] = static_cast<float>(x.get(at[i]));
                }
                const int win = winner(v);
                const double gv = g.get(((static_cast<size_t>(n) * OH + oh) * OW + ow) * C + c);
                for (int i = 0; i < 4; i++) {
                  const double want = i == win ? gv : 0.0;
                  if (dx.get(at[i]) != want && wrong++ < 5)
                    ADD_FAILURE() << "n " << n << " oh " << oh << " ow " << ow << " c " << c << " element " << i
                                  << ": " << dx.get(at[i]) << " want " << want;
                }
              }
        EXPECT_EQ(wrong, 0);
      }
}

}  // namespace
