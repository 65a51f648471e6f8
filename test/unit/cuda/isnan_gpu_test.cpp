// GPU_REF REDUCE_ISNAN (cuda/more_gpu.cpp) against CPU_REF (fixed seeds):
// sparse NaNs (some outputs with none), infinities (numbers, not NaN),
// several axis sets, views inside larger parents (whole parents compared),
// 32F / 32S / 8U / 16F outputs, 16F input, the backward's zeros, and
// refusals; and the fills of the same file: SET_BACKWARD (every output set
// to blas.a[0], any type) and RANDOM_UNIFORM / RANDOM_NORMAL backward
// (zeros). Everything is exact (flags, zeros, one value). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t isnan_cmd(bool backward, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_REDUCE_ISNAN_BACKWARD : CCV_NNC_REDUCE_ISNAN_FORWARD);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

TEST(GpuRefIsnan, ForwardAndBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1301);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<int> dim, axes;
    bool view;
    int xtype, ytype;
  };
  const Case cases[] = {{{7, 33, 5}, {1}, true, CCV_32F, CCV_32F}, {{64, 129}, {0}, false, CCV_32F, CCV_32S},
                        {{1023}, {0}, false, CCV_32F, CCV_8U},     {{3, 5, 7, 9}, {0, 2}, true, CCV_32F, CCV_32F},
                        {{9, 17}, {1}, true, CCV_16F, CCV_16F},    {{4, 6}, {0, 1}, false, CCV_32F, CCV_32F}};
  for (const Case& k : cases) {
    const std::string what = "REDUCE_ISNAN nd " + std::to_string(k.dim.size());
    std::vector<int> ydim = k.dim;
    for (int a : k.axes) ydim[a] = 1;
    auto x = both({k.dim, k.view, CCV_32F}, rng);
    float* xp = x->cpu_parent()->data.f32;
    const size_t n = ccv_nnc_tensor_count(x->cpu_parent()->info);
    for (size_t i = 0; i < n; i++) xp[i] = i % 53 == 7 ? nan : i % 41 == 3 ? inf : xp[i];
    x->upload();
    auto y = both({ydim, k.view, k.ytype}, rng, 0, 0);
    if (k.xtype == CCV_32F) {
      run_both(isnan_cmd(false, k.axes), {x.get()}, {y.get()}, what);
    } else {  // the same values as 16F (NaN and inf survive the conversion)
      auto xh = both({k.dim, k.view, k.xtype}, rng);
      run_both(make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {x.get()}, {xh.get()}, what + " to 16F");
      run_both(isnan_cmd(false, k.axes), {xh.get()}, {y.get()}, what);
    }
    y->expect_close(0, 0, what);
    auto g = both({ydim}, rng), dx = both({k.dim, k.view}, rng);
    run_both(isnan_cmd(true, k.axes), {g.get(), x.get(), y.get()}, {dx.get()}, what + " backward");
    dx->expect_close(0, 0, what + " backward");
  }
}

TEST(GpuRefFill, SetBackwardAndRandomBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1307);
  auto y = both({{7, 33}, true}, rng), z = both({{5, 3, 4}, true, CCV_32S}, rng, -9, 9),
       h = both({{9}, false, CCV_16F}, rng);
  ccv_nnc_cmd_t set = make_cmd(CCV_NNC_SET_BACKWARD);
  set.info.blas.a[0] = 2.5f;
  run_both(set, {}, {y.get(), z.get(), h.get()}, "SET_BACKWARD");
  y->expect_close(0, 0, "SET_BACKWARD 32F");
  z->expect_close(0, 0, "SET_BACKWARD 32S");
  h->expect_close(0, 0, "SET_BACKWARD 16F");
  for (uint32_t id : {CCV_NNC_RANDOM_UNIFORM_BACKWARD, CCV_NNC_RANDOM_NORMAL_BACKWARD}) {
    auto g = both({{7, 33}}, rng), dx = both({{7, 33}, true}, rng);
    run_both(make_cmd(id), {g.get()}, {dx.get()}, ccv_nnc_cmd_name(id));
    dx->expect_close(0, 0, ccv_nnc_cmd_name(id));
  }
}

TEST(GpuRefIsnan, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1303);
  // A y of the wrong shape: the family's check.
  auto x = both({{4, 6}}, rng), y = both({{4, 6}}, rng);
  ccv_nnc_cmd_t c = isnan_cmd(false, {1});
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A 64F x: GPU_REF reads 32F / 16F / 16BF.
  auto x64 = both({{4, 6}, false, CCV_64F}, rng), y1 = both({{4, 1}}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x64->gpu()}, {y1->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
