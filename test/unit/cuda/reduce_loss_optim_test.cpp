// GPU_REF reductions and optimisers (cuda/reduce_gpu.cpp,
// cuda/optim_gpu.cpp) against CPU_REF on random inputs (fixed seeds): odd
// shapes, every axis set, views inside larger parents (compared whole), and
// refusals. Every test skips without a GPU.
//
// Tolerances: CPU_REF sums in double and rounds once; the GPU sums n floats,
// each addition within half an ulp of its partial sum. With inputs in
// [-1, 1) the partial sums stay below n, so atol 1e-6 n bounds the rounding
// with a wide margin for the sizes here while a missing or doubled element
// (|x| ~ 0.5 on average) is far outside it. MAX is exact. The optimisers'
// fp32 arithmetic on O(1) values is within a few ulp: rtol / atol 1e-5.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t reduce_cmd(uint32_t id, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

TEST(GpuRefReduce, SumMeanMaxOverAnyAxes) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(211);
  struct Case {
    std::vector<int> dim;
    std::vector<int> axes;
    bool view;
  };
  const Case cases[] = {
      {{1023}, {0}, false},          {{7, 33}, {1}, true},          {{7, 33}, {0}, false},       {{7, 33}, {0, 1}, true},
      {{64, 4096}, {1}, false},      {{128, 8192}, {0}, false},     {{3, 5, 7, 9}, {1, 3}, true}, {{3, 5, 7, 9}, {0, 2}, false},
      {{1, 1, 33}, {2}, false},      {{2, 1, 100003}, {2}, false},  {{5, 1}, {1}, true},
  };
  for (const Case& k : cases) {
    std::vector<int> out = k.dim;
    size_t n = 1;
    for (int a : k.axes) {
      n *= static_cast<size_t>(out[static_cast<size_t>(a)]);
      out[static_cast<size_t>(a)] = 1;
    }
    for (uint32_t id : {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD}) {
      auto x = both({k.dim, k.view}, rng), y = both({out, k.view}, rng);
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " over " + std::to_string(n);
      run_both(reduce_cmd(id, k.axes), {x.get()}, {y.get()}, what);
      const float atol = id == CCV_NNC_REDUCE_MAX_FORWARD ? 0.f : id == CCV_NNC_REDUCE_MEAN_FORWARD ? 1e-6f : 1e-6f * static_cast<float>(n);
      y->expect_close(1e-5f, atol, what);
    }
    for (uint32_t id : {CCV_NNC_REDUCE_SUM_BACKWARD, CCV_NNC_REDUCE_MEAN_BACKWARD}) {
      auto g = both({out, !k.view}, rng), dx = both({k.dim, k.view}, rng);
      run_both(reduce_cmd(id, k.axes), {g.get()}, {dx.get()}, ccv_nnc_cmd_name(id));
      dx->expect_close(1e-6f, 1e-7f, ccv_nnc_cmd_name(id));
    }
  }
}

TEST(GpuRefReduce, MaxPropagatesNaN) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(223);
  auto x = both({{4, 37}}, rng), y = both({{4, 1}}, rng);
  // A NaN in row 2 (uploaded to both sides).
  Owned host = to_cpu(x->gpu());
  host->data.f32[2 * 37 + 11] = NAN;
  x->cpu()->data.f32[2 * 37 + 11] = NAN;
  ccv_nnc_cmd_t t = make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD);
  ASSERT_EQ(exec(t, ccv_nnc_no_hint, {host.t}, {x->gpu()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  run_both(reduce_cmd(CCV_NNC_REDUCE_MAX_FORWARD, {1}), {x.get()}, {y.get()}, "REDUCE_MAX with NaN");
  y->expect_close(0, 0, "REDUCE_MAX with NaN");
  Owned back = to_cpu(y->gpu());
  EXPECT_TRUE(std::isnan(back->data.f32[2]));
  EXPECT_FALSE(std::isnan(back->data.f32[1]));
}

TEST(GpuRefReduce, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(227);
  // 16F reductions: GPU_REF refuses them (an error with a message).
  auto x = both({{7, 5}, false, CCV_16F}, rng), y = both({{7, 1}, false, CCV_16F}, rng);
  ccv_nnc_cmd_t c = reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {1});
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A wrong output shape: an error with a message.
  auto x2 = both({{7, 5}}, rng), y2 = both({{7, 2}}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x2->gpu()}, {y2->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
