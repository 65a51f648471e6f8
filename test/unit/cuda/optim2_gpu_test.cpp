// GPU_REF LAMB (cuda/more_gpu.cpp) against CPU_REF on random inputs (fixed
// seeds): odd shapes, views inside larger parents (whole parents compared),
// in place (b over a, n over m, u over v) and apart, several steps (the bias
// corrections), a zero parameter (trust ratio 1), and refusals. Skips
// without a GPU.
//
// Tolerances: the moments are two float multiply-adds (rtol 1e-6 would do;
// 1e-5 given); b = a - rate trust r with trust from norms summed in double
// (atomics in any order: 1e-15 relative) and r a few float operations
// (~1e-6 relative): |b - b_cpu| <= rate * trust * |r| * 1e-6 + one rounding
// of b: rtol 1e-5, atol 1e-6. A wrong trust ratio (e.g. 1) moves b by
// rate * |r| * |trust - 1| >> 1e-5.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t lamb(int step, float decay) {
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_LAMB_FORWARD);
  c.info.lamb.step = step;
  c.info.lamb.rate = 0.01f;
  c.info.lamb.scale = 0.5f;
  c.info.lamb.beta1 = 0.9f;
  c.info.lamb.beta2 = 0.999f;
  c.info.lamb.decay = decay;
  c.info.lamb.epsilon = 1e-6f;
  return c;
}

TEST(GpuRefOptim2, LambAgainstCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1101);
  for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}, Spec{{3, 5, 7, 9}, true}, Spec{{70000}}})
    for (int step : {1, 3, 100})
      for (float decay : {0.f, 0.1f}) {
        const std::string what = "LAMB step " + std::to_string(step) + " decay " + std::to_string(decay) + " n " +
                                 std::to_string(s.dim.size());
        auto g = both(s, rng), a = both(s, rng), m = both(s, rng, -0.1f, 0.1f), v = both(s, rng, 0, 0.01f);
        // Apart.
        auto b = both(s, rng), n = both(s, rng), u = both(s, rng);
        run_both(lamb(step, decay), {g.get(), a.get(), m.get(), v.get()}, {b.get(), n.get(), u.get()}, what);
        b->expect_close(1e-5f, 1e-6f, what + " b");
        n->expect_close(1e-5f, 1e-7f, what + " n");
        u->expect_close(1e-5f, 1e-9f, what + " u");
        // In place.
        run_both(lamb(step, decay), {g.get(), a.get(), m.get(), v.get()}, {a.get(), m.get(), v.get()},
                 what + " in place");
        a->expect_close(1e-5f, 1e-6f, what + " in place b");
        m->expect_close(1e-5f, 1e-7f, what + " in place n");
        v->expect_close(1e-5f, 1e-9f, what + " in place u");
      }
  // A zero parameter: |a| = 0, trust 1.
  auto g = both({{5, 9}}, rng), a = both({{5, 9}}, rng), m = both({{5, 9}}, rng), v = both({{5, 9}}, rng, 0, 1);
  auto b = both({{5, 9}}, rng), n = both({{5, 9}}, rng), u = both({{5, 9}}, rng);
  for (int i = 0; i < 45; i++) a->cpu_parent()->data.f32[i] = 0;
  a->upload();
  run_both(lamb(2, 0), {g.get(), a.get(), m.get(), v.get()}, {b.get(), n.get(), u.get()}, "LAMB zero a");
  b->expect_close(1e-5f, 1e-6f, "LAMB zero a");
}

TEST(GpuRefOptim2, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1103);
  // b over g: refused (pass 1 still reads g).
  auto g = both({{5, 9}}, rng), a = both({{5, 9}}, rng), m = both({{5, 9}}, rng), v = both({{5, 9}}, rng, 0, 1);
  auto n = both({{5, 9}}, rng), u = both({{5, 9}}, rng);
  ccv_nnc_cmd_t c = lamb(1, 0);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {g->gpu(), a->gpu(), m->gpu(), v->gpu()}, {g->gpu(), n->gpu(), u->gpu()}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // 64F: GPU_REF computes in float and says so (16F / 16BF are taken:
  // half_gpu_test.cpp).
  auto h = both({{5, 9}, false, CCV_64F}, rng), h2 = both({{5, 9}, false, CCV_64F}, rng),
       h3 = both({{5, 9}, false, CCV_64F}, rng), h4 = both({{5, 9}, false, CCV_64F}, rng, 0, 1);
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {h->gpu(), h2->gpu(), h3->gpu(), h4->gpu()}, {h2->gpu(), h3->gpu(), h4->gpu()}),
            CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
}

}  // namespace
