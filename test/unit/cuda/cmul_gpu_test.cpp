// GPU_REF CMUL (cuda/more_gpu.cpp) against CPU_REF on random inputs (fixed
// seeds): rotary-embedding broadcasts ([B, T, H, D] times [1, T, 1, D]),
// broadcasts of either operand, views inside larger parents (whole parents
// compared), in place (c over a), the backward's sums over broadcast axes,
// NULL g (a tensor of ones: 1 + 1i), one gradient alone, and refusals. Skips
// without a GPU.
//
// Tolerances: both sides compute the products in double and round once
// (forward: equal up to that rounding, rtol 1e-6, atol 1e-7); the backward
// sums <= 30 pairs in double on both sides: the same, atol 1e-6 for sums
// near 0. A wrong pair, sign or conjugate is off by O(0.1).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

TEST(GpuRefCmul, ForwardBackwardBroadcasts) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1201);
  struct Case {
    Spec a, b, c;
  };
  const Case cases[] = {
      {{{2, 5, 3, 8}, true}, {{1, 5, 1, 8}}, {{2, 5, 3, 8}, true}},
      {{{1, 5, 1, 8}}, {{2, 5, 3, 8}, true}, {{2, 5, 3, 8}}},
      {{{4, 6}, true}, {{4, 6}}, {{4, 6}}},
      {{{7, 3, 10}}, {{10}}, {{7, 3, 10}, true}},
      {{{2}}, {{2}}, {{2}}},
  };
  for (const Case& k : cases) {
    const std::string what = "CMUL nd " + std::to_string(k.c.dim.size());
    auto a = both(k.a, rng), b = both(k.b, rng), c = both(k.c, rng);
    run_both(make_cmd(CCV_NNC_CMUL_FORWARD), {a.get(), b.get()}, {c.get()}, what);
    c->expect_close(1e-6f, 1e-7f, what);
    auto g = both(k.c, rng), da = both(k.a, rng), db = both(k.b, rng), da2 = both(k.a, rng), db2 = both(k.b, rng),
         db3 = both(k.b, rng);
    run_both(make_cmd(CCV_NNC_CMUL_BACKWARD), {g.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
    da->expect_close(1e-6f, 1e-6f, what + " da");
    db->expect_close(1e-6f, 1e-6f, what + " db");
    run_both(make_cmd(CCV_NNC_CMUL_BACKWARD), {nullptr, a.get(), b.get()}, {da2.get(), db2.get()}, what + " NULL g");
    da2->expect_close(1e-6f, 1e-6f, what + " NULL g da");
    db2->expect_close(1e-6f, 1e-6f, what + " NULL g db");
    run_both(make_cmd(CCV_NNC_CMUL_BACKWARD), {g.get(), a.get(), b.get()}, {nullptr, db3.get()}, what + " db alone");
    db3->expect_close(1e-6f, 1e-6f, what + " db alone");
  }
  // In place: c over a.
  auto a = both({{3, 4, 6}, true}, rng), b = both({{4, 6}}, rng);
  run_both(make_cmd(CCV_NNC_CMUL_FORWARD), {a.get(), b.get()}, {a.get()}, "CMUL in place");
  a->expect_close(1e-6f, 1e-7f, "CMUL in place");
}

TEST(GpuRefCmul, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(1203);
  // An odd last axis: the family's check.
  auto a = both({{3, 5}}, rng), b = both({{3, 5}}, rng), c = both({{3, 5}}, rng);
  ccv_nnc_cmd_t f = make_cmd(CCV_NNC_CMUL_FORWARD);
  f.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(f, ccv_nnc_no_hint, {a->gpu(), b->gpu()}, {c->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // 64F: GPU_REF's CMUL takes 32F, 16F and 16BF (half2_gpu_test.cpp) and
  // refuses 64F with a message.
  auto h = both({{3, 4}, false, CCV_64F}, rng), h2 = both({{3, 4}, false, CCV_64F}, rng),
       h3 = both({{3, 4}, false, CCV_64F}, rng);
  EXPECT_EQ(exec(f, ccv_nnc_no_hint, {h->gpu(), h2->gpu()}, {h3->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // A backward gradient over g: refused.
  auto g = both({{3, 4}}, rng), x = both({{3, 4}}, rng), y = both({{3, 4}}, rng);
  ccv_nnc_cmd_t bw = make_cmd(CCV_NNC_CMUL_BACKWARD);
  bw.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(bw, ccv_nnc_no_hint, {g->gpu(), x->gpu(), y->gpu()}, {g->gpu(), nullptr}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
