// GPU_REF TRANSPOSE, PAD and UPSAMPLE of cuda/more_gpu.cpp against CPU_REF on
// random inputs (fixed seeds): odd shapes, views inside larger parents (whole
// parents compared, so a write outside a view fails), several axis pairs,
// every pad mode with pads longer than the axis, nearest and bilinear with
// and without align_corners, up and down, NHWC / NCHW / 3-d images, 16F and
// 32S where the command takes them, and refusals. Skips without a GPU.
//
// Tolerances: TRANSPOSE and PAD forward copy bytes: exact. UPSAMPLE forward
// blends 4 floats in double with the same weights as CPU_REF and rounds once:
// equal up to the last rounding (rtol 1e-6, atol 1e-7). The backwards sum in
// float with atomics in any order: a dx element gathers at most ~20 terms
// here (reflect pads of 2-3 periods, a 3x downsample's 4x4 window of weights
// <= 1 on g in [-1, 1]), each addition rounding once (6e-8 of the running
// sum, <= 20): within 20 * 20 * 6e-8 = 2.4e-5 absolute: atol 3e-5, rtol 1e-5.
// A misplaced element is off by O(0.1) or more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t transpose(bool backward, int a, int b) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_TRANSPOSE_BACKWARD : CCV_NNC_TRANSPOSE_FORWARD);
  c.info.transpose.axis[0] = a;
  c.info.transpose.axis[1] = b;
  return c;
}

std::vector<int> swapped(std::vector<int> d, int a, int b) {
  std::swap(d[a], d[b]);
  return d;
}

TEST(GpuRefShape, TransposeOverViewsAndTypes) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(503);
  struct Case {
    std::vector<int> dim;
    int a, b;
    bool view;
    int type;
  };
  const Case cases[] = {{{5, 7, 3}, 0, 2, false, CCV_32F},     {{2, 3, 5, 7}, 1, 3, true, CCV_32F},
                        {{33, 65}, 0, 1, true, CCV_32F},       {{4, 5, 6}, 1, 1, true, CCV_32F},
                        {{3, 1, 9, 2}, 0, 3, false, CCV_16F},  {{6, 5, 4}, 2, 0, true, CCV_32S},
                        {{2, 3, 4, 5, 3}, 1, 4, true, CCV_32F}};
  for (const Case& k : cases)
    for (bool backward : {false, true}) {
      const std::string what = std::string(backward ? "TRANSPOSE_BACKWARD " : "TRANSPOSE_FORWARD ") +
                               std::to_string(k.a) + "," + std::to_string(k.b) + " nd " + std::to_string(k.dim.size());
      auto x = both({k.dim, k.view, k.type}, rng, -9, 9), y = both({swapped(k.dim, k.a, k.b), k.view, k.type}, rng);
      run_both(transpose(backward, k.a, k.b), {x.get()}, {y.get()}, what);
      y->expect_close(0, 0, what);
    }
  // Two pairs in one call.
  auto x1 = both({{3, 4}}, rng), x2 = both({{5, 2, 3}, true}, rng);
  auto y1 = both({{4, 3}}, rng), y2 = both({{2, 5, 3}}, rng);
  run_both(transpose(false, 0, 1), {x1.get(), x2.get()}, {y1.get(), y2.get()}, "TRANSPOSE two pairs");
  y1->expect_close(0, 0, "TRANSPOSE pair 1");
  y2->expect_close(0, 0, "TRANSPOSE pair 2");
}

ccv_nnc_cmd_t pad(bool backward, int type, const std::vector<int>& begin, const std::vector<int>& end) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_PAD_BACKWARD : CCV_NNC_PAD_FORWARD);
  c.info.pad.type = type;
  for (size_t i = 0; i < begin.size(); i++) {
    c.info.size.dim[i] = begin[i];
    c.info.pad.end[i] = end[i];
  }
  return c;
}

TEST(GpuRefShape, PadEveryModeForwardAndBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(509);
  struct Case {
    std::vector<int> dim, begin, end;
    bool view;
  };
  const Case cases[] = {
      {{5, 7}, {1, 2}, {3, 0}, true},  {{2, 3, 4, 5}, {0, 1, 2, 3}, {1, 0, 3, 2}, false},
      {{3, 4}, {5, 7}, {6, 2}, true},   // pads longer than the axis: reflect wraps 2-3 periods
      {{1, 6}, {2, 1}, {2, 4}, false},  // an axis of 1 (reflect repeats it)
      {{17}, {0}, {0}, true},           // no padding: a copy
  };
  for (const Case& k : cases)
    for (int type : {CCV_NNC_PAD_ZERO, CCV_NNC_PAD_REPLICATE, CCV_NNC_PAD_REFLECT}) {
      std::vector<int> big = k.dim;
      for (size_t i = 0; i < big.size(); i++) big[i] += k.begin[i] + k.end[i];
      const std::string what = "PAD type " + std::to_string(type) + " nd " + std::to_string(k.dim.size());
      auto x = both({k.dim, k.view}, rng), y = both({big, k.view}, rng);
      run_both(pad(false, type, k.begin, k.end), {x.get()}, {y.get()}, what);
      y->expect_close(0, 0, what);
      auto g = both({big, !k.view}, rng), dx = both({k.dim, k.view}, rng);
      run_both(pad(true, type, k.begin, k.end), {g.get(), x.get()}, {dx.get()}, what + " backward");
      dx->expect_close(1e-5f, 3e-5f, what + " backward");
    }
  // Forward on 16F and 8U (bytes).
  for (int dt : {CCV_16F, CCV_8U}) {
    auto x = both({{4, 5, 3}, true, dt}, rng, 0, 9), y = both({{6, 9, 3}, false, dt}, rng, 0, 9);
    run_both(pad(false, CCV_NNC_PAD_REFLECT, {1, 2, 0}, {1, 2, 0}), {x.get()}, {y.get()}, "PAD 16F / 8U");
    y->expect_close(0, 0, "PAD 16F / 8U");
  }
}

ccv_nnc_cmd_t upsample(bool backward, int type, int align) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_UPSAMPLE_BACKWARD : CCV_NNC_UPSAMPLE_FORWARD);
  c.info.upsample.type = type;
  c.info.upsample.align_corners = align;
  c.info.upsample.width_scale = 2;
  c.info.upsample.height_scale = 2;
  return c;
}

TEST(GpuRefShape, UpsampleNearestBilinearBothFormats) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(521);
  struct Case {
    std::vector<int> small, big;
    int format;
    bool view;
  };
  const Case cases[] = {
      {{2, 5, 7, 3}, {2, 10, 14, 3}, CCV_TENSOR_FORMAT_NHWC, true},
      {{2, 3, 5, 7}, {2, 3, 11, 6}, CCV_TENSOR_FORMAT_NCHW, true},  // height up, width down
      {{5, 7, 3}, {9, 13, 3}, CCV_TENSOR_FORMAT_NHWC, false},
      {{3, 5, 7}, {3, 15, 21}, CCV_TENSOR_FORMAT_NCHW, true},
      {{9, 12}, {3, 4}, CCV_TENSOR_FORMAT_NHWC, false},             // a 3x downsample
      {{1, 1, 1, 2}, {1, 3, 4, 2}, CCV_TENSOR_FORMAT_NHWC, false},  // a 1x1 image
  };
  for (const Case& k : cases)
    for (int type : {CCV_NNC_UPSAMPLE_NEAREST, CCV_NNC_UPSAMPLE_BILINEAR})
      for (int align : {0, 1}) {
        const std::string what = std::string(type == CCV_NNC_UPSAMPLE_NEAREST ? "nearest" : "bilinear") +
                                 (align ? " aligned" : "") + " nd " + std::to_string(k.small.size()) +
                                 (k.format == CCV_TENSOR_FORMAT_NCHW ? " NCHW" : " NHWC");
        auto x = both({k.small, k.view, CCV_32F, k.format}, rng), y = both({k.big, k.view, CCV_32F, k.format}, rng);
        run_both(upsample(false, type, align), {x.get()}, {y.get()}, "UPSAMPLE " + what);
        y->expect_close(1e-6f, 1e-7f, "UPSAMPLE " + what);
        auto g = both({k.big, !k.view, CCV_32F, k.format}, rng), dx = both({k.small, k.view, CCV_32F, k.format}, rng);
        run_both(upsample(true, type, align), {g.get(), x.get(), y.get()}, {dx.get()}, "UPSAMPLE_BACKWARD " + what);
        dx->expect_close(1e-5f, 3e-5f, "UPSAMPLE_BACKWARD " + what);
      }
  // 16F forward: both sides round a double blend to half once.
  auto x = both({{2, 5, 7, 3}, true, CCV_16F}, rng), y = both({{2, 10, 14, 3}, false, CCV_16F}, rng);
  run_both(upsample(false, CCV_NNC_UPSAMPLE_BILINEAR, 0), {x.get()}, {y.get()}, "UPSAMPLE 16F");
  y->expect_close(1e-3f, 1e-3f, "UPSAMPLE 16F");
}

TEST(GpuRefShape, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(523);
  // PAD backward on 64F: GPU_REF sums 32F, 16F and 16BF (half2_gpu_test.cpp)
  // and refuses 64F with a message.
  auto g = both({{6, 7}, false, CCV_64F}, rng), dx = both({{4, 5}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t p = pad(true, CCV_NNC_PAD_ZERO, {1, 1}, {1, 1});
  p.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(p, ccv_nnc_no_hint, {g->gpu()}, {dx->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // PAD forward whose output does not fit the padding: the family's check.
  auto x = both({{4, 5}}, rng), y = both({{6, 8}}, rng);
  ccv_nnc_cmd_t pf = pad(false, CCV_NNC_PAD_ZERO, {1, 1}, {1, 1});
  pf.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(pf, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // TRANSPOSE in place of two different axes: refused.
  auto sq = both({{5, 5}}, rng);
  ccv_nnc_cmd_t t = transpose(false, 0, 1);
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(t, ccv_nnc_no_hint, {sq->gpu()}, {sq->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // UPSAMPLE with channels that differ: the family's check.
  auto ux = both({{2, 4, 4, 3}}, rng), uy = both({{2, 8, 8, 4}}, rng);
  ccv_nnc_cmd_t u = upsample(false, CCV_NNC_UPSAMPLE_NEAREST, 0);
  u.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(u, ccv_nnc_no_hint, {ux->gpu()}, {uy->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A CPU x with a GPU y: no backend takes the mix.
  auto cy = both({{6, 7}}, rng);
  EXPECT_NE(exec(pf, ccv_nnc_no_hint, {x->cpu()}, {cy->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
