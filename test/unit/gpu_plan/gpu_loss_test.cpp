// The GPU_REF loss formulas (cmd/common/gpu_loss.hpp, run by
// cuda/more_kernels.cu) evaluated on the CPU against the CPU_REF kernels
// (double inside): MSE (MEAN and SUM), SMOOTH_L1 (beta 1, 0.5, 0), BINARY_
// and SIGMOID_BINARY_CROSSENTROPY (pos_weight 1 and 2.5, targets 0 and 1
// exactly, probabilities 0 and 1 that hit the log floor), forward and
// backward, on one row of kN elements per case (fixed seed). The row's
// loss is the double sum of the float terms, as the GPU kernel sums.
//
// Tolerance: each float term is within a few ulp of the double one (one
// logf / expf / log1pf, <= 2 ulp here on glibc, and <= 4 float operations):
// rtol 1e-5 on the loss (positive terms: no cancellation in the sum) and on
// each gradient, with atol 1e-6 for the sigmoid form's s - 1 near z >> 0
// (float s holds 1 - s only to 6e-8 absolute). A wrong formula, weight or
// clamp is off by far more.
#include "cmd/common/gpu_loss.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using namespace nnc::gpu;

constexpr int kN = 2001;

ccv_nnc_tensor_t* row(int n) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = 1;
  p.dim[1] = n;
  return ccv_nnc_tensor_new(nullptr, p, 0);
}

struct Case {
  uint32_t cmd;
  int op;
  const char* name;
  float w, beta;
  int sum;  // MSE: CCV_NNC_MSE_REDUCE_SUM
};

ccv_nnc_cmd_t make(const Case& k, bool backward) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  if (k.op == kLossMse) p.mse.reduce_op = k.sum ? CCV_NNC_MSE_REDUCE_SUM : CCV_NNC_MSE_REDUCE_MEAN;
  if (k.op == kLossSmoothL1) p.smooth_l1.beta = k.beta;
  if (k.op == kLossBce || k.op == kLossSigmoidBce) p.binary_crossentropy.pos_weight = k.w;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(k.cmd + (backward ? 1 : 0), nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  return c;
}

bool close(float got, float want, float rtol, float atol) {
  return got == want || (std::isnan(got) && std::isnan(want)) || std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

TEST(GpuLoss, FormulasMatchCpuRef) {
  std::mt19937 rng(701);
  const Case cases[] = {
      {CCV_NNC_MSE_FORWARD, kLossMse, "MSE mean", 1, 1, 0},
      {CCV_NNC_MSE_FORWARD, kLossMse, "MSE sum", 1, 1, 1},
      {CCV_NNC_SMOOTH_L1_FORWARD, kLossSmoothL1, "SMOOTH_L1 1", 1, 1, 0},
      {CCV_NNC_SMOOTH_L1_FORWARD, kLossSmoothL1, "SMOOTH_L1 0.5", 1, 0.5f, 0},
      {CCV_NNC_SMOOTH_L1_FORWARD, kLossSmoothL1, "SMOOTH_L1 0", 1, 0, 0},
      {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, kLossBce, "BCE", 1, 1, 0},
      {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, kLossBce, "BCE w 2.5", 2.5f, 1, 0},
      {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, kLossSigmoidBce, "SBCE", 1, 1, 0},
      {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, kLossSigmoidBce, "SBCE w 2.5", 2.5f, 1, 0},
  };
  for (const Case& k : cases) {
    const bool prob = k.op == kLossBce, sig = k.op == kLossSigmoidBce;
    ccv_nnc_tensor_t *a = row(kN), *b = row(kN), *loss = row(1), *s = row(kN), *g = row(1), *gs = row(kN),
                     *da = row(kN), *db = row(kN);
    std::uniform_real_distribution<float> d(prob ? 0.01f : -12.f, prob ? 0.99f : 12.f), u(0, 1), gd(-1, 1);
    for (int i = 0; i < kN; i++) {
      a->data.f32[i] = d(rng);
      b->data.f32[i] = prob || sig ? (i % 5 == 0 ? 0.f : i % 5 == 1 ? 1.f : u(rng)) : d(rng);
      gs->data.f32[i] = gd(rng);
    }
    if (prob) a->data.f32[7] = 0, a->data.f32[8] = 1;            // log floors
    if (k.op == kLossSmoothL1) a->data.f32[9] = b->data.f32[9];  // d = 0
    g->data.f32[0] = -0.75f;
    const LossArgs p{k.w, k.beta, k.op == kLossMse && !k.sum ? kN : 1};
    // Forward.
    std::vector<ccv_nnc_tensor_t*> fi = {a, b}, fo = {loss};
    if (sig) fo.push_back(s);
    ASSERT_EQ(ccv_nnc_cmd_exec(make(k, false), ccv_nnc_no_hint, 0, fi.data(), 2, fo.data(), static_cast<int>(fo.size()),
                               nullptr),
              CCV_NNC_EXEC_SUCCESS)
        << k.name << ": " << ccv_nnc_error_message();
    double sum = 0;
    for (int i = 0; i < kN; i++) sum += loss_term(k.op, a->data.f32[i], b->data.f32[i], p);
    if (k.op == kLossMse) sum /= p.k;
    EXPECT_TRUE(close(static_cast<float>(sum), loss->data.f32[0], 1e-5f, 0))
        << k.name << ": " << sum << " vs CPU_REF " << loss->data.f32[0];
    // Backward (the sigmoid form with g_sigmoid too, and from the saved sigmoid alone).
    for (int variant = 0; variant < (sig ? 2 : 1); variant++) {
      std::vector<ccv_nnc_tensor_t*> bi;
      if (sig)
        bi = {g, gs, variant ? nullptr : a, b, loss, s};
      else
        bi = {g, a, b, loss};
      std::vector<ccv_nnc_tensor_t*> bo = {da, variant ? nullptr : db};
      ASSERT_EQ(ccv_nnc_cmd_exec(make(k, true), ccv_nnc_no_hint, 0, bi.data(), static_cast<int>(bi.size()), bo.data(),
                                 2, nullptr),
                CCV_NNC_EXEC_SUCCESS)
          << k.name << ": " << ccv_nnc_error_message();
      int bad = 0;
      for (int i = 0; i < kN; i++) {
        float x, y;
        loss_grad(k.op, g->data.f32[0], a->data.f32[i], b->data.f32[i], sig ? gs->data.f32[i] : 0.f, s->data.f32[i],
                  !(sig && variant), p, &x, &y);
        if (!close(x, da->data.f32[i], 1e-5f, 1e-6f) && bad++ < 5)
          ADD_FAILURE() << k.name << " variant " << variant << " da " << i << " (a " << a->data.f32[i] << ", b "
                        << b->data.f32[i] << "): " << x << " vs CPU_REF " << da->data.f32[i];
        if (!variant && !close(y, db->data.f32[i], 1e-5f, 1e-6f) && bad++ < 5)
          ADD_FAILURE() << k.name << " db " << i << " (a " << a->data.f32[i] << ", b " << b->data.f32[i] << "): " << y
                        << " vs CPU_REF " << db->data.f32[i];
      }
      EXPECT_EQ(bad, 0) << k.name;
    }
    for (ccv_nnc_tensor_t* t : {a, b, loss, s, g, gs, da, db}) ccv_nnc_tensor_free(t);
  }
}

}  // namespace

// LAMB's float steps (cmd/common/gpu_optim.hpp) against optim.hpp's double
// formulas on random values (fixed seed); rtol 1e-5 (a few float operations
// and one sqrtf), atol 1e-7 for values near 0.
#include "cmd/common/gpu_optim.hpp"
#include "cmd/optim/optim.hpp"

namespace {

TEST(GpuOptim, LambStepsMatchOptim) {
  std::mt19937 rng(711);
  std::uniform_real_distribution<float> d(-2, 2), pos(0, 1);
  nnc::optim::Coef k;
  k.kind = nnc::optim::Kind::kLamb;
  k.rate = 0.01, k.scale = 0.5, k.decay = 0.1, k.beta1 = 0.9, k.beta2 = 0.999, k.epsilon = 1e-6, k.inv_bc1 = 1 / 0.19,
  k.inv_bc2 = 1 / 0.002997;
  nnc::gpu::LambCoef c;
  c.rate = 0.01f, c.scale = 0.5f, c.decay = 0.1f, c.beta1 = 0.9f, c.beta2 = 0.999f, c.epsilon = 1e-6f;
  c.inv_bc1 = static_cast<float>(k.inv_bc1), c.inv_bc2 = static_cast<float>(k.inv_bc2);
  for (int i = 0; i < 2000; i++) {
    const float g = d(rng), a = d(rng), m = d(rng), v = pos(rng);
    double n0, u0;
    nnc::optim::lamb_moments<double>(k, g, m, v, n0, u0);
    float n, u;
    nnc::gpu::lamb_moments_f(c, g, m, v, &n, &u);
    ASSERT_TRUE(close(n, static_cast<float>(n0), 1e-5f, 1e-7f)) << i << ": n " << n << " vs " << n0;
    ASSERT_TRUE(close(u, static_cast<float>(u0), 1e-5f, 1e-7f)) << i << ": u " << u << " vs " << u0;
    const double r0 = nnc::optim::lamb_direction<double>(k, a, n, u);
    ASSERT_TRUE(close(nnc::gpu::lamb_direction_f(c, a, n, u), static_cast<float>(r0), 1e-5f, 1e-7f)) << i;
  }
  EXPECT_DOUBLE_EQ(nnc::gpu::lamb_step_size(c, 4.0, 16.0), static_cast<double>(c.rate) * nnc::optim::lamb_trust(4, 16));
  EXPECT_DOUBLE_EQ(nnc::gpu::lamb_step_size(c, 0.0, 16.0), static_cast<double>(c.rate) * nnc::optim::lamb_trust(0, 16));
}

}  // namespace
