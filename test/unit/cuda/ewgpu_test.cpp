// GPU_REF element-wise kernels (cuda/ewgpu.cpp) against CPU_REF on random
// inputs (fixed seeds): odd shapes, views inside larger parents (whose
// borders must stay untouched: whole parents are compared), broadcasting,
// NULL gradients read as ones, in-place calls, 16F, both image formats, and
// refusals. Every test skips without a GPU.
//
// Tolerances: CPU_REF computes in double and rounds once; the GPU computes in
// float. One add / multiply / divide is within 1 ulp (6e-8 relative), CUDA's
// expf / logf / tanhf / sqrtf within 2 ulp, and the compositions here
// (sigmoid, the gradients) chain at most four of them: rtol 2e-6 (16 ulp)
// with atol 1e-6 for values near 0 leaves room for that and nothing more; a
// wrong element, index or broadcast is off by O(1). Sums over n broadcast
// elements (ADD / MUL backward) round at most n times: atol 1e-6 n. 16F
// results round once more to half (relative 2^-11 = 4.9e-4): rtol 1e-3.
// Copies, SET and conversions are exact (both sides round correctly once).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

constexpr float kRtol = 2e-6f, kAtol = 1e-6f;

ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.blas.a[0] = p;
  c.info.blas.a[1] = q;
  return c;
}

TEST(GpuRefEw, AddMulBroadcastOverViews) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(101);
  struct Case {
    Spec a, b, y;
  };
  const Case cases[] = {
      {{{7, 33, 5}, true}, {{33, 1}}, {{7, 33, 5}}},
      {{{33, 1}}, {{7, 33, 5}, true}, {{7, 33, 5}, true}},
      {{{1023}}, {{1}}, {{1023}}},
      {{{2, 1, 7, 1}}, {{3, 1, 9}, true}, {{2, 3, 7, 9}, true}},
      {{{1, 1, 1}}, {{1}}, {{1, 1, 1}}},
      // NCHW with a per-channel operand (1xCx1x1), as a bias over an image.
      {{{2, 3, 5, 7}, true, CCV_32F, CCV_TENSOR_FORMAT_NCHW},
       {{1, 3, 1, 1}, false, CCV_32F, CCV_TENSOR_FORMAT_NCHW},
       {{2, 3, 5, 7}, false, CCV_32F, CCV_TENSOR_FORMAT_NCHW}},
  };
  for (const Case& k : cases)
    for (uint32_t id : {CCV_NNC_ADD_FORWARD, CCV_NNC_MUL_FORWARD}) {
      auto a = both(k.a, rng), b = both(k.b, rng), y = both(k.y, rng);
      run_both(blas(id, 0.75f, -1.25f), {a.get(), b.get()}, {y.get()}, ccv_nnc_cmd_name(id));
      y->expect_close(kRtol, kAtol, ccv_nnc_cmd_name(id));
    }
  // In place: y is a (the only pair libnnc allows).
  auto a = both({{31, 17}, true}, rng), b = both({{17}}, rng);
  ccv_nnc_tensor_t* ci[] = {a->cpu(), b->cpu()};
  ccv_nnc_tensor_t* gi[] = {a->gpu(), b->gpu()};
  ccv_nnc_cmd_t c = blas(CCV_NNC_ADD_FORWARD, 1, 2);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, ci, 2, ci, 1, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  ASSERT_EQ(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, gi, 2, gi, 1, nullptr), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  a->expect_close(kRtol, kAtol, "ADD in place");
}

TEST(GpuRefEw, AddMulBackwardSumOverBroadcastDimensions) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(103);
  struct Case {
    Spec g, a, b;
  };
  const Case cases[] = {
      {{{7, 33, 5}, true}, {{7, 33, 5}}, {{33, 1}, true}},
      {{{64, 129}}, {{1, 129}}, {{64, 129}, true}},  // a bias-like gradient: sums over 64 rows
      {{{1023}}, {{1023}, true}, {{1}}},             // a scalar's gradient: one sum over 1023
      {{{3, 5, 7, 9}}, {{5, 1, 9}}, {{3, 1, 7, 1}}},
      // NCHW: a per-channel gradient (1xCx1x1) summed over N, H and W.
      {{{4, 3, 5, 7}, true, CCV_32F, CCV_TENSOR_FORMAT_NCHW},
       {{4, 3, 5, 7}, false, CCV_32F, CCV_TENSOR_FORMAT_NCHW},
       {{1, 3, 1, 1}, false, CCV_32F, CCV_TENSOR_FORMAT_NCHW}},
  };
  for (const Case& k : cases) {
    size_t n = 1;
    for (int d : k.g.dim) n *= static_cast<size_t>(d);
    const float atol = 1e-6f * static_cast<float>(n);
    for (uint32_t id : {CCV_NNC_ADD_BACKWARD, CCV_NNC_MUL_BACKWARD})
      for (int null_g = 0; null_g < 2; null_g++) {
        auto g = both(k.g, rng), a = both(k.a, rng), b = both(k.b, rng), da = both(k.a, rng), db = both(k.b, rng);
        const std::string what = std::string(ccv_nnc_cmd_name(id)) + (null_g ? " (NULL g)" : "");
        run_both(blas(id, 0.5f, -2.f), {null_g ? nullptr : g.get(), a.get(), b.get()}, {da.get(), db.get()}, what);
        da->expect_close(1e-5f, atol, what + " da");
        db->expect_close(1e-5f, atol, what + " db");
        // One gradient alone.
        auto db2 = both(k.b, rng);
        run_both(blas(id, 0.5f, -2.f), {g.get(), a.get(), b.get()}, {nullptr, db2.get()}, what + " db alone");
        db2->expect_close(1e-5f, atol, what + " db alone");
      }
  }
  // SCALAR_MUL backward: dx = a g.
  auto g = both({{9, 33}, true}, rng), dx = both({{9, 33}, true}, rng);
  run_both(blas(CCV_NNC_SCALAR_MUL_BACKWARD, -3.f), {g.get()}, {dx.get()}, "SCALAR_MUL_BACKWARD");
  dx->expect_close(kRtol, kAtol, "SCALAR_MUL_BACKWARD");
}

TEST(GpuRefEw, UnaryForwardAndBackwardOverViews) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(107);
  const std::pair<uint32_t, uint32_t> ops[] = {
      {CCV_NNC_EWEXP_FORWARD, CCV_NNC_EWEXP_BACKWARD},     {CCV_NNC_EWLOG_FORWARD, CCV_NNC_EWLOG_BACKWARD},
      {CCV_NNC_EWSQRT_FORWARD, CCV_NNC_EWSQRT_BACKWARD},   {CCV_NNC_RELU_FORWARD, CCV_NNC_RELU_BACKWARD},
      {CCV_NNC_SIGMOID_FORWARD, CCV_NNC_SIGMOID_BACKWARD}, {CCV_NNC_TANH_FORWARD, CCV_NNC_TANH_BACKWARD}};
  for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{3, 1, 5, 7}, true}, Spec{{1}}})
    for (const auto& [fwd, back] : ops) {
      const bool positive = fwd == CCV_NNC_EWLOG_FORWARD || fwd == CCV_NNC_EWSQRT_FORWARD;
      const float lo = positive ? 0.1f : -3.f, hi = 3.f;
      auto x = both(s, rng, lo, hi), y = both(s, rng), g = both(s, rng), dx = both(s, rng);
      run_both(make_cmd(fwd), {x.get()}, {y.get()}, ccv_nnc_cmd_name(fwd));
      y->expect_close(kRtol, kAtol, ccv_nnc_cmd_name(fwd));
      // y: computed by each side itself (equal within the tolerance above).
      run_both(make_cmd(back), {g.get(), x.get(), y.get()}, {dx.get()}, ccv_nnc_cmd_name(back));
      dx->expect_close(4e-6f, 4e-6f, ccv_nnc_cmd_name(back));
      if (fwd == CCV_NNC_RELU_FORWARD || fwd == CCV_NNC_SIGMOID_FORWARD || fwd == CCV_NNC_TANH_FORWARD) {
        auto dx2 = both(s, rng);  // from x alone (y NULL)
        run_both(make_cmd(back), {g.get(), x.get(), nullptr}, {dx2.get()},
                 std::string(ccv_nnc_cmd_name(back)) + " from x");
        dx2->expect_close(4e-6f, 4e-6f, std::string(ccv_nnc_cmd_name(back)) + " from x");
      }
      if (fwd == CCV_NNC_SIGMOID_FORWARD || fwd == CCV_NNC_EWEXP_FORWARD) {
        auto dx3 = both(s, rng);  // a NULL g reads as ones
        run_both(make_cmd(back), {nullptr, x.get(), y.get()}, {dx3.get()},
                 std::string(ccv_nnc_cmd_name(back)) + " NULL g");
        dx3->expect_close(4e-6f, 4e-6f, std::string(ccv_nnc_cmd_name(back)) + " NULL g");
      }
    }
  // SCALAR_MUL forward over a view.
  auto x = both({{5, 7, 3}, true}, rng), y = both({{5, 7, 3}}, rng);
  run_both(blas(CCV_NNC_SCALAR_MUL_FORWARD, 2.5f), {x.get()}, {y.get()}, "SCALAR_MUL_FORWARD");
  y->expect_close(kRtol, kAtol, "SCALAR_MUL_FORWARD");
}

TEST(GpuRefEw, SumProdDivOverViewsAndInPlace) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(109);
  const Spec s{{13, 33}, true};
  // EWSUM over 13 inputs (two passes of the kernel), the output one of them.
  std::vector<BothPtr> xs;
  std::vector<Both*> in;
  for (int i = 0; i < 13; i++) {
    xs.push_back(both(i % 2 ? s : Spec{{13, 33}}, rng));
    in.push_back(xs.back().get());
  }
  auto y = both(s, rng);
  run_both(make_cmd(CCV_NNC_EWSUM_FORWARD), in, {y.get()}, "EWSUM");
  y->expect_close(kRtol, 4 * kAtol, "EWSUM");
  run_both(make_cmd(CCV_NNC_EWSUM_FORWARD), in, {in[11]}, "EWSUM into input 11");
  in[11]->expect_close(kRtol, 4 * kAtol, "EWSUM into input 11");
  // EWPROD of 3 in place on the last input, and its backward.
  auto p0 = both(s, rng, 0.5f, 1.5f), p1 = both(s, rng, 0.5f, 1.5f), p2 = both(s, rng, 0.5f, 1.5f), py = both(s, rng);
  run_both(make_cmd(CCV_NNC_EWPROD_FORWARD), {p0.get(), p1.get(), p2.get()}, {py.get()}, "EWPROD");
  py->expect_close(kRtol, kAtol, "EWPROD");
  auto g = both(s, rng), d0 = both(s, rng), d1 = both(s, rng), d2 = both(s, rng);
  run_both(make_cmd(CCV_NNC_EWPROD_BACKWARD), {g.get(), p0.get(), p1.get(), p2.get(), py.get()},
           {d0.get(), d1.get(), d2.get()}, "EWPROD_BACKWARD");
  for (Both* d : {d0.get(), d1.get(), d2.get()}) d->expect_close(kRtol, kAtol, "EWPROD_BACKWARD");
  run_both(make_cmd(CCV_NNC_EWPROD_FORWARD), {p0.get(), p1.get(), p2.get()}, {p2.get()}, "EWPROD in place");
  p2->expect_close(kRtol, kAtol, "EWPROD in place");
  // EWDIV with and without a numerator, and its backward.
  auto a = both(s, rng), b = both(s, rng, 0.5f, 2.f), q = both(s, rng), r = both(s, rng);
  run_both(make_cmd(CCV_NNC_EWDIV_FORWARD), {a.get(), b.get()}, {q.get()}, "EWDIV");
  q->expect_close(kRtol, kAtol, "EWDIV");
  run_both(make_cmd(CCV_NNC_EWDIV_FORWARD), {nullptr, b.get()}, {r.get()}, "EWDIV 1 / b");
  r->expect_close(kRtol, kAtol, "EWDIV 1 / b");
  auto da = both(s, rng), db = both(s, rng);
  run_both(make_cmd(CCV_NNC_EWDIV_BACKWARD), {g.get(), a.get(), b.get(), q.get()}, {da.get(), db.get()},
           "EWDIV_BACKWARD");
  da->expect_close(kRtol, kAtol, "EWDIV_BACKWARD da");
  db->expect_close(kRtol, kAtol, "EWDIV_BACKWARD db");
  // EWSUM backward: copies of g, or ones.
  auto e0 = both(s, rng), e1 = both(Spec{{13, 33}}, rng);
  run_both(make_cmd(CCV_NNC_EWSUM_BACKWARD), {g.get()}, {e0.get(), e1.get()}, "EWSUM_BACKWARD");
  e0->expect_close(0, 0, "EWSUM_BACKWARD");
  e1->expect_close(0, 0, "EWSUM_BACKWARD");
  run_both(make_cmd(CCV_NNC_EWSUM_BACKWARD), {nullptr}, {e0.get()}, "EWSUM_BACKWARD ones");
  e0->expect_close(0, 0, "EWSUM_BACKWARD ones");
}

TEST(GpuRefEw, HalfPrecision) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(113);
  for (int type : {CCV_16F, CCV_16BF}) {
    const float rtol = type == CCV_16F ? 1e-3f : 8e-3f;  // one rounding to 11 / 8 significant bits
    const Spec s{{7, 33, 5}, true, type};
    auto a = both(s, rng), b = both(Spec{{33, 1}, false, type}, rng), y = both(s, rng);
    run_both(blas(CCV_NNC_ADD_FORWARD, 1.f, 1.f), {a.get(), b.get()}, {y.get()}, "ADD 16-bit");
    y->expect_close(rtol, 1e-3f, "ADD 16-bit");
    auto z = both(s, rng);
    run_both(make_cmd(CCV_NNC_SIGMOID_FORWARD), {a.get()}, {z.get()}, "SIGMOID 16-bit");
    z->expect_close(rtol, 1e-3f, "SIGMOID 16-bit");
  }
}

TEST(GpuRefEw, SetTransferFormatConvert) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(127);
  // SET over views of several types: the border stays.
  for (int type : {CCV_32F, CCV_16F, CCV_32S, CCV_64F}) {
    auto y = both({{5, 7, 9}, true, type}, rng);
    ccv_nnc_cmd_t c = blas(CCV_NNC_SET_FORWARD, 3.25f);
    run_both(c, {}, {y.get()}, "SET");
    y->expect_close(0, 0, "SET");
  }
  // DATA_TRANSFER between GPU views (and a packed side).
  auto x = both({{6, 31, 3}, true}, rng), t = both({{6, 31, 3}, true}, rng), u = both({{6, 31, 3}}, rng);
  run_both(make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {x.get(), x.get()}, {t.get(), u.get()}, "DATA_TRANSFER views");
  t->expect_close(0, 0, "DATA_TRANSFER view -> view");
  u->expect_close(0, 0, "DATA_TRANSFER view -> packed");
  // FORMAT_TRANSFORM NHWC <-> NCHW, views, 4-d and 3-d.
  struct F {
    std::vector<int> nhwc, nchw;
  };
  for (const F& f : {F{{2, 5, 7, 3}, {2, 3, 5, 7}}, F{{5, 7, 33}, {33, 5, 7}}})
    for (bool view : {false, true}) {
      auto in = both({f.nhwc, view, CCV_32F, CCV_TENSOR_FORMAT_NHWC}, rng);
      auto out = both({f.nchw, !view, CCV_32F, CCV_TENSOR_FORMAT_NCHW}, rng);
      auto back = both({f.nhwc, view, CCV_32F, CCV_TENSOR_FORMAT_NHWC}, rng);
      run_both(make_cmd(CCV_NNC_FORMAT_TRANSFORM_FORWARD), {in.get()}, {out.get()}, "NHWC -> NCHW");
      out->expect_close(0, 0, "NHWC -> NCHW");
      run_both(make_cmd(CCV_NNC_FORMAT_TRANSFORM_FORWARD), {out.get()}, {back.get()}, "NCHW -> NHWC");
      back->expect_close(0, 0, "NCHW -> NHWC");
    }
  // DATATYPE_CONVERSION between every pair of 16F, 16BF, 32F, 64F (exact: one
  // correct rounding on both sides), over a view; wide range of magnitudes.
  for (int from : {CCV_32F, CCV_64F, CCV_16F, CCV_16BF})
    for (int to : {CCV_32F, CCV_64F, CCV_16F, CCV_16BF}) {
      auto a = both({{33, 17}, true, from}, rng, -70000.f, 70000.f), b = both({{33, 17}, from == to, to}, rng);
      run_both(make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD), {a.get()}, {b.get()}, "DATATYPE_CONVERSION");
      b->expect_close(0, 0, std::string("DATATYPE_CONVERSION ") + std::to_string(from) + " -> " + std::to_string(to));
    }
}

TEST(GpuRefEw, RefusalsAndBadShapes) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(131);
  // Shapes that do not broadcast: an error with a message, before any kernel.
  auto a = both({{7, 5}}, rng), b = both({{3}}, rng), y = both({{7, 5}}, rng);
  ccv_nnc_cmd_t c = blas(CCV_NNC_ADD_FORWARD, 1, 1);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {a->gpu(), b->gpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("broadcast"), std::string::npos) << ccv_nnc_error_message();
  // MUL backward on 64F: GPU_REF refuses it (its sums are in float; 16F and
  // 16BF run since branch ghalf3, half3_gpu_test.cpp).
  auto g64 = both({{7, 5}, false, CCV_64F}, rng), a64 = both({{7, 5}, false, CCV_64F}, rng),
       b64 = both({{7, 5}, false, CCV_64F}, rng);
  auto d64 = both({{7, 5}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t m = blas(CCV_NNC_MUL_BACKWARD, 1);
  m.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(m, ccv_nnc_no_hint, {g64->gpu(), a64->gpu(), b64->gpu()}, {d64->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // A mix of CPU and GPU tensors: refused (no backend takes it).
  ccv_nnc_cmd_t e = make_cmd(CCV_NNC_EWEXP_FORWARD);
  e.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(e, ccv_nnc_no_hint, {a->cpu()}, {y->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
