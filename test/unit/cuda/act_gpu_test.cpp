// GPU_REF activations and element-wise math of cuda/more_gpu.cpp (LEAKY_RELU,
// GELU exact and tanh, SWISH, CLAMP, MIN, MAX, forward and backward) against
// CPU_REF on random inputs (fixed seeds): odd shapes, views inside larger
// parents (whole parents compared, so a write outside a view fails), both
// formats, in place, NULL g, ties and NaNs for MIN / MAX, 16F, and refusals.
// Every test skips without a GPU.
//
// Tolerances: CPU_REF computes in double and rounds once; the GPU computes in
// float. CUDA's expf is within 2 ulp and erfcf within 4 ulp; each formula
// chains at most six float operations after that (GELU's derivative: ncdf,
// an exp, three products, a sum), so 32F results are within ~20 ulp
// (1.2e-6 relative) of the double ones: rtol 1e-5 with atol 1e-6 for values
// near a zero of the function (GELU's derivative crosses 0 near x = -0.75,
// where terms of size 0.2 cancel: their float errors are ~2e-7 absolute). A
// wrong formula (the tanh form for the exact one differs by up to 1e-3), a
// wrong index or a missed element is off by far more. CLAMP, MIN and MAX are
// exact (comparisons and copies, g times 0, 1/2 or 1). 16F: both sides round
// a value to half once from results that differ by ~1e-6 relative, so they
// may land one half-ulp apart (2^-11 = 4.9e-4 relative): rtol 1e-3, atol 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

constexpr float kRtol = 1e-5f, kAtol = 1e-6f;

struct Act {
  uint32_t fwd;
  int tanh_form;
  float slope;
  const char* name;
};

ccv_nnc_cmd_t act(const Act& a, bool backward) {
  ccv_nnc_cmd_t c = make_cmd(backward ? a.fwd + 1 : a.fwd);
  if (a.fwd == CCV_NNC_GELU_FORWARD) c.info.gelu.tanh = a.tanh_form;
  if (a.fwd == CCV_NNC_LEAKY_RELU_FORWARD) c.info.leaky_relu.negative_slope = a.slope;
  return c;
}

const Act kActs[] = {
    {CCV_NNC_LEAKY_RELU_FORWARD, 0, 0.2f, "LEAKY_RELU 0.2"},
    {CCV_NNC_LEAKY_RELU_FORWARD, 0, -0.3f, "LEAKY_RELU -0.3"},
    {CCV_NNC_GELU_FORWARD, 0, 0, "GELU exact"},
    {CCV_NNC_GELU_FORWARD, 1, 0, "GELU tanh"},
    {CCV_NNC_SWISH_FORWARD, 0, 0, "SWISH"},
};

TEST(GpuRefAct, ForwardAndBackwardOverViews) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(211);
  const Spec specs[] = {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{3, 1, 5, 7}, true, CCV_32F, CCV_TENSOR_FORMAT_NCHW},
                        Spec{{2, 5, 3, 9}, true}, Spec{{1}}};
  for (const Spec& s : specs)
    for (const Act& a : kActs)
      for (float range : {4.f, 25.f}) {  // 25: GELU tanh's derivative limit beyond |x| = 20
        const std::string what = std::string(a.name) + " range " + std::to_string(range);
        auto x = both(s, rng, -range, range), y = both(s, rng), g = both(s, rng, -2, 2), dx = both(s, rng);
        run_both(act(a, false), {x.get()}, {y.get()}, what + " forward");
        y->expect_close(kRtol, kAtol, what + " forward");
        run_both(act(a, true), {g.get(), x.get(), y.get()}, {dx.get()}, what + " backward |g|x|y|");
        dx->expect_close(kRtol, kAtol, what + " backward |g|x|y|");
        auto dx2 = both(s, rng);  // the list ends after x
        run_both(act(a, true), {g.get(), x.get()}, {dx2.get()}, what + " backward |g|x|");
        dx2->expect_close(kRtol, kAtol, what + " backward |g|x|");
        if (a.fwd == CCV_NNC_LEAKY_RELU_FORWARD && a.slope >= 0) {
          auto dx3 = both(s, rng);  // libnnc's |g|0|y|
          run_both(act(a, true), {g.get(), nullptr, y.get()}, {dx3.get()}, what + " backward from y");
          dx3->expect_close(kRtol, kAtol, what + " backward from y");
        }
      }
}

TEST(GpuRefAct, InPlaceAnd16F) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(223);
  for (const Act& a : kActs) {
    // Backward in place (dx over g, reading x), then forward in place (y over x).
    auto x = both({{9, 31}, true}, rng, -4, 4), g = both({{9, 31}, true}, rng);
    run_both(act(a, true), {g.get(), x.get()}, {g.get()}, std::string(a.name) + " backward in place");
    g->expect_close(kRtol, kAtol, std::string(a.name) + " backward in place");
    run_both(act(a, false), {x.get()}, {x.get()}, std::string(a.name) + " in place");
    x->expect_close(kRtol, kAtol, std::string(a.name) + " in place");
    // 16F storage.
    const Spec h{{5, 37}, true, CCV_16F};
    auto xh = both(h, rng, -4, 4), yh = both(h, rng), gh = both(h, rng), dh = both(h, rng);
    run_both(act(a, false), {xh.get()}, {yh.get()}, std::string(a.name) + " 16F");
    yh->expect_close(1e-3f, 1e-3f, std::string(a.name) + " 16F");
    run_both(act(a, true), {gh.get(), xh.get()}, {dh.get()}, std::string(a.name) + " 16F backward");
    dh->expect_close(1e-3f, 1e-3f, std::string(a.name) + " 16F backward");
  }
}

ccv_nnc_cmd_t clamp(bool backward, float lo, float hi) {
  ccv_nnc_cmd_t c = make_cmd(backward ? CCV_NNC_CLAMP_BACKWARD : CCV_NNC_CLAMP_FORWARD);
  c.info.clamp.min = lo;
  c.info.clamp.max = hi;
  return c;
}

TEST(GpuRefMath, ClampForwardAndBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(227);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::pair<float, float> bounds[] = {{-0.5f, 0.25f}, {-0.5f, nan}, {nan, 0.25f}, {0.f, 0.f}};
  for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{3, 4, 5, 6}, true, CCV_32F, CCV_TENSOR_FORMAT_NCHW}})
    for (const auto& [lo, hi] : bounds) {
      const std::string what = "CLAMP [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      auto x = both(s, rng), y = both(s, rng), g = both(s, rng), dx = both(s, rng), dx2 = both(s, rng);
      // Some x exactly on the bounds (the backward gives 0 there).
      float* xp = x->cpu_parent()->data.f32;
      for (size_t i = 0; i < ccv_nnc_tensor_count(x->cpu_parent()->info); i += 5) xp[i] = i % 2 ? -0.5f : 0.25f;
      x->upload();
      run_both(clamp(false, lo, hi), {x.get()}, {y.get()}, what);
      y->expect_close(0, 0, what);
      run_both(clamp(true, lo, hi), {g.get(), x.get(), y.get()}, {dx.get()}, what + " backward");
      dx->expect_close(0, 0, what + " backward");
      run_both(clamp(true, lo, hi), {nullptr, x.get(), y.get()}, {dx2.get()}, what + " backward NULL g");
      dx2->expect_close(0, 0, what + " backward NULL g");
    }
}

TEST(GpuRefMath, MinMaxTiesAndNaN) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(229);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{2, 3, 5, 7}, true, CCV_32F, CCV_TENSOR_FORMAT_NCHW}})
    for (uint32_t id : {CCV_NNC_MIN_FORWARD, CCV_NNC_MAX_FORWARD}) {
      const std::string what = ccv_nnc_cmd_name(id);
      auto a = both(s, rng), b = both(s, rng), y = both(s, rng), g = both(s, rng);
      // a and b share the parent shape: the same parent index is the same element.
      float* ap = a->cpu_parent()->data.f32;
      float* bp = b->cpu_parent()->data.f32;
      for (size_t i = 0; i < ccv_nnc_tensor_count(a->cpu_parent()->info); i++) {
        if (i % 7 == 0) ap[i] = bp[i];  // ties: half of g to each
        if (i % 11 == 0) ap[i] = nan;   // all of g to a
        if (i % 13 == 0) bp[i] = nan;   // to b unless a is NaN too
      }
      a->upload();
      b->upload();
      run_both(make_cmd(id), {a.get(), b.get()}, {y.get()}, what);
      y->expect_close(0, 0, what);
      auto da = both(s, rng), db = both(s, rng), db2 = both(s, rng), da3 = both(s, rng), db3 = both(s, rng);
      run_both(make_cmd(id + 1), {g.get(), a.get(), b.get(), y.get()}, {da.get(), db.get()}, what + " backward");
      da->expect_close(0, 0, what + " backward da");
      db->expect_close(0, 0, what + " backward db");
      run_both(make_cmd(id + 1), {g.get(), a.get(), b.get()}, {nullptr, db2.get()}, what + " backward db alone");
      db2->expect_close(0, 0, what + " backward db alone");
      run_both(make_cmd(id + 1), {nullptr, a.get(), b.get()}, {da3.get(), db3.get()}, what + " backward NULL g");
      da3->expect_close(0, 0, what + " backward NULL g da");
      db3->expect_close(0, 0, what + " backward NULL g db");
      // In place: da over g.
      run_both(make_cmd(id + 1), {g.get(), a.get(), b.get()}, {g.get(), nullptr}, what + " backward in place");
      g->expect_close(0, 0, what + " backward in place");
    }
  // Forward in place (y over a), 16F.
  const Spec h{{6, 35}, true, CCV_16F};
  auto a = both(h, rng), b = both(h, rng);
  run_both(make_cmd(CCV_NNC_MAX_FORWARD), {a.get(), b.get()}, {a.get()}, "MAX 16F in place");
  a->expect_close(0, 0, "MAX 16F in place");
}

TEST(GpuRefAct, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(233);
  // x on the CPU, y on the GPU: no backend takes the mix.
  auto x = both({{4, 5}}, rng), y = both({{4, 5}}, rng);
  ccv_nnc_cmd_t c = act(kActs[2], false);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x->cpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // 64F on the GPU: GPU_REF computes in float and refuses it.
  auto x64 = both({{4, 5}, false, CCV_64F}, rng), y64 = both({{4, 5}, false, CCV_64F}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x64->gpu()}, {y64->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // MIN of mismatched shapes: the family's check, with a message.
  auto a = both({{3, 4}}, rng), b = both({{4, 3}}, rng), m = both({{3, 4}}, rng);
  ccv_nnc_cmd_t mn = make_cmd(CCV_NNC_MIN_FORWARD);
  mn.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(mn, ccv_nnc_no_hint, {a->gpu(), b->gpu()}, {m->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // GELU backward without x: refused.
  auto g = both({{4, 5}}, rng), dx = both({{4, 5}}, rng);
  ccv_nnc_cmd_t gb = act(kActs[2], true);
  gb.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(gb, ccv_nnc_no_hint, {g->gpu(), nullptr, y->gpu()}, {dx->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
