// The GPU_REF activation / element-wise math formulas (cmd/common/gpu_act.hpp,
// run by cuda/more_kernels.cu) evaluated on the CPU, element by element,
// against the CPU_REF kernels of the same commands (double inside): every op
// forward and backward, random inputs with a fixed seed over [-6, 6] and
// [-25, 25] (GELU tanh's derivative is clamped beyond |x| = 20), ties, NaNs
// and exact bounds for CLAMP / MIN / MAX, a NULL g (read as 1).
//
// Tolerance: the formulas are float; glibc's expf / erfcf are within 1 ulp and
// each op chains at most six float operations after them, so the values are
// within ~10 ulp (6e-7 relative) of CPU_REF's double results rounded to
// float: rtol 1e-5, with atol 1e-6 where a derivative crosses 0 (GELU's near
// x = -0.75: terms of 0.2 cancel, float errors ~2e-7 absolute). A wrong
// formula or constant is off by 1e-3 or more. CLAMP, MIN and MAX are exact.
#include "cmd/common/gpu_act.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using namespace nnc::gpu;

constexpr int kN = 4001;

struct Case {
  uint32_t cmd;  // forward id; backward when `backward`
  bool backward;
  int op;
  const char* name;
  int gelu_tanh = 0;
  float slope = 0;
  float lo = NAN, hi = NAN;
};

ccv_nnc_cmd_t make(const Case& k) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  if (k.cmd == CCV_NNC_GELU_FORWARD) p.gelu.tanh = k.gelu_tanh;
  if (k.cmd == CCV_NNC_LEAKY_RELU_FORWARD) p.leaky_relu.negative_slope = k.slope;
  if (k.op == kActReduceMaxGrad || k.op == kActNorm2Grad) {
    p.reduce.count = 1;
    p.reduce.axis[0] = 0;
  }
  if (k.cmd == CCV_NNC_CLAMP_FORWARD) {
    p.clamp.min = k.lo;
    p.clamp.max = k.hi;
  }
  ccv_nnc_cmd_t c = ccv_nnc_cmd(k.cmd + (k.backward ? 1 : 0), nullptr, p, 0);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  return c;
}

ActArgs args_of(const Case& k) {
  ActArgs a;
  a.a = k.slope;
  a.lo = k.lo;
  a.hi = k.hi;
  a.has_lo = !std::isnan(k.lo);
  a.has_hi = !std::isnan(k.hi);
  return a;
}

struct T {
  ccv_nnc_tensor_t* t;
  T() {
    ccv_nnc_tensor_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.type = CCV_TENSOR_CPU_MEMORY;
    p.format = CCV_TENSOR_FORMAT_NHWC;
    p.datatype = CCV_32F;
    p.dim[0] = 1;  // [1, kN]: the reductions below run over axis 0 (one element each)
    p.dim[1] = kN;
    t = ccv_nnc_tensor_new(nullptr, p, 0);
  }
  ~T() { ccv_nnc_tensor_free(t); }
  float* f() const { return t->data.f32; }
};

void check(const Case& k, float range, bool null_g, std::mt19937& rng) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::uniform_real_distribution<float> d(-range, range);
  const int nin = act_inputs(k.op), nout = act_outputs(k.op);
  T in[3], out[2];
  for (auto& t : in)
    for (int i = 0; i < kN; i++) t.f()[i] = d(rng);
  const bool exact = k.op == kActClamp || k.op == kActClampGrad || k.op == kActMin || k.op == kActMax ||
                     k.op == kActMinGrad || k.op == kActMaxGrad || k.op == kActReduceMaxGrad;
  if (exact || k.op == kActNorm2Grad) {  // ties, NaNs, values on the bounds, y == 0
    const int a = k.backward ? 1 : 0;
    for (int i = 0; i < kN; i++) {
      if (i % 7 == 0) in[a].f()[i] = in[a + 1].f()[i];
      if (i % 11 == 0) in[a].f()[i] = nan;
      if (i % 13 == 0) in[a + 1].f()[i] = nan;
      if (i % 3 == 0 && k.op == kActReduceMaxGrad) in[a].f()[i] = in[a + 1].f()[i];  // x == y: g passes
      if (i % 17 == 0 && k.op == kActNorm2Grad) in[2].f()[i] = 0;                    // y == 0: 0
      if (i % 5 == 0 && !std::isnan(k.lo)) in[a].f()[i] = k.lo;
      if (i % 5 == 1 && !std::isnan(k.hi)) in[a].f()[i] = k.hi;
    }
  }
  // The command's input list (CLAMP backward: |g|x|y| reading y; the others |g|x| or |g|a|b|).
  std::vector<ccv_nnc_tensor_t*> ins, outs;
  if (k.op == kActClampGrad) {
    ins = {null_g ? nullptr : in[0].t, in[1].t, in[1].t};  // y stands in for x (unused)
  } else {
    for (int i = 0; i < nin; i++) ins.push_back(i == 0 && k.backward && null_g ? nullptr : in[i].t);
  }
  for (int j = 0; j < nout; j++) outs.push_back(out[j].t);
  ASSERT_EQ(ccv_nnc_cmd_exec(make(k), ccv_nnc_no_hint, 0, ins.data(), static_cast<int>(ins.size()), outs.data(),
                             static_cast<int>(outs.size()), nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << k.name << ": " << ccv_nnc_error_message();
  const ActArgs a = args_of(k);
  int bad = 0;
  for (int i = 0; i < kN; i++) {
    float x[3] = {1, 1, 1}, y[2] = {0, 0};
    for (int j = 0; j < nin; j++) x[j] = in[j].f()[i];
    if (k.backward && null_g) x[0] = 1;
    act_apply(k.op, x, y, a);
    for (int j = 0; j < nout; j++) {
      const float want = out[j].f()[i], got = y[j];
      const float rtol = exact ? 0 : 1e-5f, atol = exact ? 0 : 1e-6f;
      const bool ok = got == want || (std::isnan(got) && std::isnan(want)) ||
                      std::fabs(got - want) <= atol + rtol * std::fabs(want);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << k.name << (null_g ? " (NULL g)" : "") << " range " << range << " output " << j << " element "
                      << i << " (inputs " << x[0] << ", " << x[1] << ", " << x[2] << "): " << got << ", CPU_REF "
                      << want;
    }
  }
  EXPECT_EQ(bad, 0) << k.name;
}

TEST(GpuAct, FormulasMatchCpuRef) {
  std::mt19937 rng(307);
  const Case cases[] = {
      {CCV_NNC_LEAKY_RELU_FORWARD, false, kActLeakyRelu, "LEAKY_RELU", 0, 0.2f},
      {CCV_NNC_LEAKY_RELU_FORWARD, true, kActLeakyReluGrad, "LEAKY_RELU_BACKWARD", 0, -0.3f},
      {CCV_NNC_GELU_FORWARD, false, kActGelu, "GELU"},
      {CCV_NNC_GELU_FORWARD, true, kActGeluGrad, "GELU_BACKWARD"},
      {CCV_NNC_GELU_FORWARD, false, kActGeluTanh, "GELU tanh", 1},
      {CCV_NNC_GELU_FORWARD, true, kActGeluTanhGrad, "GELU_BACKWARD tanh", 1},
      {CCV_NNC_SWISH_FORWARD, false, kActSwish, "SWISH"},
      {CCV_NNC_SWISH_FORWARD, true, kActSwishGrad, "SWISH_BACKWARD"},
      {CCV_NNC_CLAMP_FORWARD, false, kActClamp, "CLAMP", 0, 0, -0.5f, 2.f},
      {CCV_NNC_CLAMP_FORWARD, false, kActClamp, "CLAMP lo", 0, 0, -0.5f, NAN},
      {CCV_NNC_CLAMP_FORWARD, true, kActClampGrad, "CLAMP_BACKWARD", 0, 0, -0.5f, 2.f},
      {CCV_NNC_CLAMP_FORWARD, true, kActClampGrad, "CLAMP_BACKWARD hi", 0, 0, NAN, 2.f},
      {CCV_NNC_MIN_FORWARD, false, kActMin, "MIN"},
      {CCV_NNC_MAX_FORWARD, false, kActMax, "MAX"},
      {CCV_NNC_MIN_FORWARD, true, kActMinGrad, "MIN_BACKWARD"},
      {CCV_NNC_MAX_FORWARD, true, kActMaxGrad, "MAX_BACKWARD"},
      {CCV_NNC_REDUCE_MAX_FORWARD, true, kActReduceMaxGrad, "REDUCE_MAX_BACKWARD"},
      {CCV_NNC_REDUCE_MIN_FORWARD, true, kActReduceMaxGrad, "REDUCE_MIN_BACKWARD"},
      {CCV_NNC_REDUCE_NORM2_FORWARD, true, kActNorm2Grad, "REDUCE_NORM2_BACKWARD"},
  };
  for (const Case& k : cases)
    for (float range : {6.f, 25.f}) {
      check(k, range, false, rng);
      if (k.backward && (k.op == kActClampGrad || k.op == kActMinGrad || k.op == kActMaxGrad))
        check(k, range, true, rng);
    }
}

TEST(GpuAct, Arity) {
  EXPECT_EQ(act_inputs(kActGelu), 1);
  EXPECT_EQ(act_inputs(kActMax), 2);
  EXPECT_EQ(act_inputs(kActSwishGrad), 2);
  EXPECT_EQ(act_inputs(kActMinGrad), 3);
  EXPECT_EQ(act_outputs(kActMaxGrad), 2);
  EXPECT_EQ(act_outputs(kActClampGrad), 1);
}

}  // namespace
