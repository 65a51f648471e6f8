// The harness's gradient and backend checks must pass on a correct command and
// fail on a wrong one; otherwise every family test built on them proves nothing.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "cmd_test_util.hpp"

using namespace cmdtest;

namespace {

ccv_nnc_cmd_t gemm(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.blas.a[0] = p.blas.a[1] = 1;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

TEST(Harness, GradientCheckPassesOnGemm) {
  ccv_nnc_init();
  std::mt19937 rng(3);
  T a(CCV_64F, {3, 4}), w(CCV_64F, {4, 5}), bias(CCV_64F, {5});
  fill_uniform(a, rng);
  fill_uniform(w, rng);
  fill_uniform(bias, rng);
  expect_gradients_match(gemm(CCV_NNC_GEMM_FORWARD), gemm(CCV_NNC_GEMM_BACKWARD), ccv_nnc_no_hint, {&a, &w, &bias},
                         {{3, 5}}, {true, true, true}, rng);
}

// y = 2x, with a backward that claims dy/dx = 3: the check must object
// (one element, so exactly one failure is reported).
int twice(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* in, const int, ccv_nnc_tensor_t* const* out,
          const int, ccv_nnc_stream_context_t* const) {
  for (size_t i = 0; i < ccv_nnc_tensor_count(in[0]->info); i++) out[0]->data.f64[i] = 2 * in[0]->data.f64[i];
  return 0;
}
int wrong_grad(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* in, const int,
               ccv_nnc_tensor_t* const* out, const int, ccv_nnc_stream_context_t* const) {
  for (size_t i = 0; i < ccv_nnc_tensor_count(in[0]->info); i++) out[0]->data.f64[i] = 3 * in[0]->data.f64[i];
  return 0;
}
ccv_nnc_cmd_vtab_t g_twice = {twice, nullptr};
ccv_nnc_cmd_vtab_t g_wrong = {wrong_grad, nullptr};

void run_wrong_gradient_check() {
  std::mt19937 rng(4);
  T x(CCV_64F, {1});
  fill_uniform(x, rng);
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  expect_gradients_match(ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_twice, p, 0),
                         ccv_nnc_cmd(CCV_NNC_CUSTOM_BACKWARD, &g_wrong, p, 0), ccv_nnc_no_hint, {&x}, {{1}}, {true},
                         rng);
}

TEST(Harness, GradientCheckFailsOnAWrongBackward) {
  ccv_nnc_init();
  EXPECT_NONFATAL_FAILURE(run_wrong_gradient_check(), "d/d input 0");
}

TEST(Harness, BackendsAgreeOnGemmAndTheComparisonCanFail) {
  ccv_nnc_init();
  std::mt19937 rng(5);
  T a(CCV_32F, {7, 9}), w(CCV_32F, {9, 3});
  fill_uniform(a, rng);
  fill_uniform(w, rng);
  EXPECT_TRUE(expect_backends_agree(gemm(CCV_NNC_GEMM_FORWARD), ccv_nnc_no_hint, {a, w}, {{7, 3}}, CCV_32F,
                                    CCV_NNC_BACKEND_CPU_OPT, 1e-5));
  T b(CCV_32F, {4}), c(CCV_32F, {4});
  for (size_t i = 0; i < 4; i++) b.set(i, 1.0), c.set(i, 1.001);
  EXPECT_NONFATAL_FAILURE(EXPECT_LE(max_rel_diff(b, c), 1e-5), "max_rel_diff");
}

}  // namespace
