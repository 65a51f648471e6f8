// GPU_REF REDUCE_MIN / REDUCE_NORM2 forward, REDUCE_MAX / MIN / NORM2
// backward and ARGMAX / ARGMIN of cuda/more_gpu.cpp against CPU_REF on random
// inputs (fixed seeds): several axis sets, long reductions (a block per
// output) and many short ones (a thread per output), views inside larger
// parents (whole parents compared), ties and NaNs, 16F for ARGMAX, refusals.
// Skips without a GPU.
//
// Tolerances: MIN, the MAX / MIN backward (a comparison and a copy of g) and
// the indices are exact. NORM2 sums n squares in float (CPU_REF in double):
// the sum's relative error is at most n eps = 1023 * 6e-8 = 6e-5 for the
// longest reduction here, halved by the square root: rtol 1e-4. Its backward
// g x / y reads each side's own y: the same 6e-5 plus two roundings: rtol
// 2e-4, atol 1e-6. A wrong axis or element is off by O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t reduce(uint32_t id, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

std::vector<int> reduced(std::vector<int> d, const std::vector<int>& axes) {
  for (int a : axes) d[static_cast<size_t>(a)] = 1;
  return d;
}

struct Case {
  std::vector<int> dim, axes;
  bool view;
};
const Case kCases[] = {
    {{7, 33, 5}, {1}, true}, {{64, 129}, {0}, false},       {{64, 129}, {1}, true},  {{3, 5, 7, 9}, {0, 2}, true},
    {{1023}, {0}, false},    {{5, 6, 7}, {0, 1, 2}, false}, {{4096, 3}, {1}, false},  // many short reductions: a thread
                                                                                      // per output
};

TEST(GpuRefReduce2, MinNorm2ForwardAndBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(601);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Case& k : kCases)
    for (uint32_t id : {CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD}) {
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " nd " + std::to_string(k.dim.size()) + " axes " +
                               std::to_string(k.axes.size());
      auto x = both({k.dim, k.view}, rng, -2, 2), y = both({reduced(k.dim, k.axes), k.view}, rng);
      if (id != CCV_NNC_REDUCE_NORM2_FORWARD) {  // ties (MAX / MIN backward gives g to each) and a NaN or two
        float* xp = x->cpu_parent()->data.f32;
        const size_t n = ccv_nnc_tensor_count(x->cpu_parent()->info);
        for (size_t i = 0; i < n; i++) xp[i] = std::round(xp[i] * 2) / 2;
        if (n > 500) xp[n / 3] = nan;
        x->upload();
      }
      run_both(reduce(id, k.axes), {x.get()}, {y.get()}, what);
      y->expect_close(id == CCV_NNC_REDUCE_NORM2_FORWARD ? 1e-4f : 0.f, 0, what);
      auto g = both({reduced(k.dim, k.axes), !k.view}, rng), dx = both({k.dim, k.view}, rng);
      run_both(reduce(id + 1, k.axes), {g.get(), x.get(), y.get()}, {dx.get()}, what + " backward");
      if (id == CCV_NNC_REDUCE_NORM2_FORWARD)
        dx->expect_close(2e-4f, 1e-6f, what + " backward");
      else
        dx->expect_close(0, 0, what + " backward");
    }
}

TEST(GpuRefReduce2, ArgMaxArgMinTiesNaNAnd16F) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(607);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct ArgCase {
    std::vector<int> dim;
    int axis;
    bool view;
    int type;
  };
  const ArgCase cases[] = {{{7, 33, 5}, 1, true, CCV_32F}, {{64, 129}, 0, false, CCV_32F},
                           {{64, 129}, 1, true, CCV_32F},  {{3, 5, 7, 9}, 3, true, CCV_32F},
                           {{1023}, 0, false, CCV_32F},    {{9, 17, 3}, 0, true, CCV_16F}};
  for (const ArgCase& k : cases)
    for (uint32_t id : {CCV_NNC_ARGMAX_FORWARD, CCV_NNC_ARGMIN_FORWARD}) {
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " axis " + std::to_string(k.axis);
      auto x = both({k.dim, k.view, k.type}, rng, -3, 3);
      if (k.type == CCV_32F) {  // few values: many ties (the first wins), and NaNs (found first)
        float* xp = x->cpu_parent()->data.f32;
        const size_t n = ccv_nnc_tensor_count(x->cpu_parent()->info);
        for (size_t i = 0; i < n; i++) xp[i] = i % 97 == 0 ? nan : std::round(xp[i]);
        x->upload();
      }
      auto y = both({reduced(k.dim, {k.axis}), k.view, CCV_32S}, rng, 0, 0);
      run_both(reduce(id, {k.axis}), {x.get()}, {y.get()}, what);
      y->expect_close(0, 0, what);
    }
}

TEST(GpuRefReduce2, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(613);
  // REDUCE_MIN on 64F: GPU_REF reduces in float, so it refuses 64F with a
  // message (16F and 16BF: half2_gpu_test.cpp).
  auto x = both({{5, 6}, false, CCV_64F}, rng), y = both({{1, 6}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t c = reduce(CCV_NNC_REDUCE_MIN_FORWARD, {0});
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // ARGMAX into a 32F output: refused with a message.
  auto xf = both({{5, 6}}, rng), yf = both({{1, 6}}, rng);
  ccv_nnc_cmd_t a = reduce(CCV_NNC_ARGMAX_FORWARD, {0});
  a.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(a, ccv_nnc_no_hint, {xf->gpu()}, {yf->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // REDUCE_NORM2 backward without y: refused.
  auto g = both({{1, 6}}, rng), dx = both({{5, 6}}, rng);
  ccv_nnc_cmd_t b = reduce(CCV_NNC_REDUCE_NORM2_BACKWARD, {0});
  b.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(b, ccv_nnc_no_hint, {g->gpu(), xf->gpu(), nullptr}, {dx->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
