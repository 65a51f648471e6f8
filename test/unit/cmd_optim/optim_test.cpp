// SGD, ADAM, ADAMW, RMSPROP and LAMB: several in-place steps against
// closed-form double-precision updates written here (PyTorch's formulation of
// each optimiser), on both CPU backends, fp32 / fp64 / fp16 / bf16, packed and
// strided views, CPU_OPT against CPU_REF on odd and threaded sizes, the
// command descriptions, bad input, and the CMD_* macros from GNU C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "cmd_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "unit/cmd_optim/optim_easy.h"

using namespace cmdtest;

namespace {

constexpr uint32_t kRef = CCV_NNC_BACKEND_CPU_REF;
constexpr uint32_t kOpt = CCV_NNC_BACKEND_CPU_OPT;

class OptimTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_param_t zero_param() {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  return p;
}

ccv_nnc_cmd_param_t sgd(float rate, float scale, float decay, float momentum, float dampening, int nesterov) {
  ccv_nnc_cmd_param_t p = zero_param();
  p.sgd = {nesterov, rate, scale, decay, momentum, dampening};
  return p;
}
ccv_nnc_cmd_param_t adam(float rate, float scale, float beta1, float beta2, float decay, float epsilon, int amsgrad) {
  ccv_nnc_cmd_param_t p = zero_param();
  p.adam = {1, rate, scale, beta1, beta2, decay, epsilon, amsgrad};
  return p;
}
ccv_nnc_cmd_param_t rmsprop(float rate, float scale, float decay, float alpha, float momentum, float epsilon) {
  ccv_nnc_cmd_param_t p = zero_param();
  p.rmsprop = {rate, scale, decay, alpha, momentum, epsilon};
  return p;
}
ccv_nnc_cmd_param_t lamb(float rate, float scale, float beta1, float beta2, float decay, float epsilon) {
  ccv_nnc_cmd_param_t p = zero_param();
  p.lamb = {1, rate, scale, beta1, beta2, decay, epsilon};
  return p;
}

int states_of(uint32_t id, const ccv_nnc_cmd_param_t& p) {
  if (id == CCV_NNC_SGD_FORWARD) return 1;
  if ((id == CCV_NNC_ADAM_FORWARD || id == CCV_NNC_ADAMW_FORWARD) && p.adam.amsgrad) return 3;
  return 2;
}

void set_step(uint32_t id, ccv_nnc_cmd_param_t& p, int t) {
  if (id == CCV_NNC_ADAM_FORWARD || id == CCV_NNC_ADAMW_FORWARD) p.adam.step = t;
  if (id == CCV_NNC_LAMB_FORWARD) p.lamb.step = t;
}

// One closed-form step of the optimiser on whole vectors (a: parameter,
// s: state in the command's order), in double, PyTorch's way.
void reference_step(uint32_t id, const ccv_nnc_cmd_param_t& p, int t, const std::vector<double>& g,
                    std::vector<double>& a, std::vector<std::vector<double>>& s) {
  const size_t n = a.size();
  if (id == CCV_NNC_SGD_FORWARD) {
    const auto& q = p.sgd;
    for (size_t i = 0; i < n; i++) {
      double d = double(q.scale) * g[i] + double(q.decay) * a[i];
      if (q.momentum != 0) {
        s[0][i] = double(q.momentum) * s[0][i] + (1 - double(q.dampening)) * d;
        d = q.nesterov ? d + double(q.momentum) * s[0][i] : s[0][i];
      } else {
        s[0][i] = d;
      }
      a[i] -= double(q.rate) * d;
    }
  } else if (id == CCV_NNC_ADAM_FORWARD || id == CCV_NNC_ADAMW_FORWARD) {
    const auto& q = p.adam;
    const double bc1 = 1 - std::pow(double(q.beta1), t), bc2 = 1 - std::pow(double(q.beta2), t);
    for (size_t i = 0; i < n; i++) {
      double grad = double(q.scale) * g[i];
      if (id == CCV_NNC_ADAM_FORWARD)
        grad += double(q.decay) * a[i];
      else
        a[i] *= 1 - double(q.rate) * double(q.decay);
      s[0][i] = double(q.beta1) * s[0][i] + (1 - double(q.beta1)) * grad;
      s[1][i] = double(q.beta2) * s[1][i] + (1 - double(q.beta2)) * grad * grad;
      double second = s[1][i];
      if (q.amsgrad) second = s[2][i] = std::max(s[2][i], s[1][i]);
      const double denom = std::sqrt(second) / std::sqrt(bc2) + double(q.epsilon);
      a[i] -= double(q.rate) / bc1 * s[0][i] / denom;
    }
  } else if (id == CCV_NNC_RMSPROP_FORWARD) {
    const auto& q = p.rmsprop;
    for (size_t i = 0; i < n; i++) {
      const double grad = double(q.scale) * g[i] + double(q.decay) * a[i];
      s[1][i] = double(q.alpha) * s[1][i] + (1 - double(q.alpha)) * grad * grad;
      const double avg = std::sqrt(s[1][i]) + double(q.epsilon);
      s[0][i] = double(q.momentum) * s[0][i] + grad / avg;
      a[i] -= double(q.rate) * s[0][i];
    }
  } else {
    const auto& q = p.lamb;
    const double bc1 = 1 - std::pow(double(q.beta1), t), bc2 = 1 - std::pow(double(q.beta2), t);
    std::vector<double> r(n);
    double an = 0, rn = 0;
    for (size_t i = 0; i < n; i++) {
      const double grad = double(q.scale) * g[i];
      s[0][i] = double(q.beta1) * s[0][i] + (1 - double(q.beta1)) * grad;
      s[1][i] = double(q.beta2) * s[1][i] + (1 - double(q.beta2)) * grad * grad;
      r[i] = (s[0][i] / bc1) / (std::sqrt(s[1][i] / bc2) + double(q.epsilon)) + double(q.decay) * a[i];
      an += a[i] * a[i];
      rn += r[i] * r[i];
    }
    const double trust = an > 0 && rn > 0 ? std::sqrt(an) / std::sqrt(rn) : 1;
    for (size_t i = 0; i < n; i++) a[i] -= double(q.rate) * trust * r[i];
  }
}

struct OptCase {
  uint32_t id;
  ccv_nnc_cmd_param_t p;
  const char* what;
};

// Runs `steps` in-place steps of the command on tensors (views when `view`)
// and the reference beside it; returns the largest relative difference over
// the parameter and every state.
double run_steps(const OptCase& c, uint32_t backend, int datatype, const std::vector<int>& dims, bool view, int steps,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const int ns = states_of(c.id, c.p);
  auto make = [&] { return view ? T::view(datatype, dims) : T(datatype, dims); };
  T g = make(), a = make();
  std::vector<T> s;
  for (int k = 0; k < ns; k++) s.push_back(make());
  const size_t n = a.count();
  std::vector<double> ra(n), rg(n);
  std::vector<std::vector<double>> rs(ns, std::vector<double>(n, 0.0));
  const double q = datatype == CCV_16F || datatype == CCV_16BF ? 64 : 0;  // exact 16-bit values
  auto value = [&] { return q ? std::round(u(rng) * q) / q : u(rng); };
  for (size_t i = 0; i < n; i++) {
    a.set(i, value());
    ra[i] = a.get(i);
    for (int k = 0; k < ns; k++) s[k].set(i, 0);
  }
  double worst = 0;
  for (int t = 1; t <= steps; t++) {
    for (size_t i = 0; i < n; i++) {
      g.set(i, value());
      rg[i] = g.get(i);
    }
    ccv_nnc_cmd_param_t p = c.p;
    set_step(c.id, p, t);
    ccv_nnc_cmd_t cmd = ccv_nnc_cmd(c.id, nullptr, p, 0);
    cmd.backend = backend;
    std::vector<ccv_nnc_tensor_t*> in = {g, a}, out = {a};
    for (int k = 0; k < ns; k++) in.push_back(s[k]), out.push_back(s[k]);
    const int code = run(cmd, in, out);
    EXPECT_EQ(code, CCV_NNC_EXEC_SUCCESS) << c.what << ": " << ccv_nnc_error_message();
    if (code != CCV_NNC_EXEC_SUCCESS) return INFINITY;
    reference_step(c.id, p, t, rg, ra, rs);
    // The next step starts from what the library holds (rounded to its type).
    for (size_t i = 0; i < n; i++) {
      worst = std::max(worst, std::fabs(a.get(i) - ra[i]) / std::max(1.0, std::fabs(ra[i])));
      ra[i] = a.get(i);
      for (int k = 0; k < ns; k++) {
        worst = std::max(worst, std::fabs(s[k].get(i) - rs[k][i]) / std::max(1.0, std::fabs(rs[k][i])));
        rs[k][i] = s[k].get(i);
      }
    }
  }
  EXPECT_TRUE(a.guard_intact() && g.guard_intact());
  for (const T& t : s) EXPECT_TRUE(t.guard_intact());
  return worst;
}

std::vector<OptCase> all_setups() {
  return {
      {CCV_NNC_SGD_FORWARD, sgd(0.1f, 1, 0, 0, 0, 0), "SGD plain"},
      {CCV_NNC_SGD_FORWARD, sgd(0.1f, 0.5f, 0.01f, 0.9f, 0.1f, 0), "SGD momentum, dampening, decay, scale"},
      {CCV_NNC_SGD_FORWARD, sgd(0.05f, 2, 0.001f, 0.9f, 0, 1), "SGD nesterov"},
      {CCV_NNC_ADAM_FORWARD, adam(0.01f, 1, 0.9f, 0.999f, 0, 1e-8f, 0), "ADAM"},
      {CCV_NNC_ADAM_FORWARD, adam(0.01f, 0.5f, 0.8f, 0.99f, 0.1f, 1e-3f, 1), "ADAM amsgrad, decay, scale"},
      {CCV_NNC_ADAMW_FORWARD, adam(0.01f, 1, 0.9f, 0.999f, 0.1f, 1e-8f, 0), "ADAMW"},
      {CCV_NNC_ADAMW_FORWARD, adam(0.02f, 3, 0.5f, 0.9f, 0.2f, 1e-4f, 1), "ADAMW amsgrad"},
      {CCV_NNC_RMSPROP_FORWARD, rmsprop(0.01f, 1, 0, 0.99f, 0, 1e-8f), "RMSPROP"},
      {CCV_NNC_RMSPROP_FORWARD, rmsprop(0.01f, 0.5f, 0.01f, 0.9f, 0.9f, 1e-3f), "RMSPROP momentum, decay"},
      {CCV_NNC_LAMB_FORWARD, lamb(0.01f, 1, 0.9f, 0.999f, 0, 1e-6f), "LAMB"},
      {CCV_NNC_LAMB_FORWARD, lamb(0.02f, 0.5f, 0.8f, 0.99f, 0.01f, 1e-4f), "LAMB decay, scale"},
  };
}

TEST_F(OptimTest, StepsMatchClosedFormInDouble) {
  for (const OptCase& c : all_setups())
    for (uint32_t backend : {kRef, kOpt}) {
      EXPECT_LE(run_steps(c, backend, CCV_64F, {37}, false, 4, 1), 1e-12) << c.what << " fp64 backend " << backend;
      EXPECT_LE(run_steps(c, backend, CCV_32F, {5, 13}, false, 4, 2), 2e-6) << c.what << " fp32 backend " << backend;
    }
}

TEST_F(OptimTest, StepsOnStridedViews) {
  for (const OptCase& c : all_setups())
    for (uint32_t backend : {kRef, kOpt}) {
      EXPECT_LE(run_steps(c, backend, CCV_64F, {3, 4, 5}, true, 3, 3), 1e-12) << c.what << " backend " << backend;
      EXPECT_LE(run_steps(c, backend, CCV_32F, {7, 9}, true, 3, 4), 2e-6) << c.what << " backend " << backend;
    }
}

TEST_F(OptimTest, HalfAndBfloatOnRef) {
  for (const OptCase& c : all_setups()) {
    EXPECT_LE(run_steps(c, kRef, CCV_16F, {29}, false, 2, 5), 2e-3) << c.what;
    EXPECT_LE(run_steps(c, kRef, CCV_16BF, {29}, false, 2, 6), 1.6e-2) << c.what;
  }
}

// Odd and threaded sizes (the vector tails and the pool split), fresh outputs.
TEST_F(OptimTest, OptAgreesWithRefOnOddAndLargeSizes) {
  std::mt19937 rng(7);
  for (const OptCase& c : all_setups())
    for (int n : {1, 7, 9, 1003, 70001}) {
      const int ns = states_of(c.id, c.p);
      std::vector<T> in;
      for (int k = 0; k < 2 + ns; k++) {
        in.emplace_back(CCV_32F, std::vector<int>{n});
        // Second moments are never negative.
        const bool square = (c.id != CCV_NNC_SGD_FORWARD && k >= 3) || (c.id == CCV_NNC_RMSPROP_FORWARD && k == 3);
        fill_uniform(in.back(), rng, square ? 0 : -1, 1);
      }
      ccv_nnc_cmd_param_t p = c.p;
      set_step(c.id, p, 3);
      std::vector<ccv_nnc_tensor_t*> ptrs;
      for (const T& t : in) ptrs.push_back(t);
      std::vector<std::vector<int>> shapes(1 + ns, std::vector<int>{n});
      expect_backends_agree(ccv_nnc_cmd(c.id, nullptr, p, 0), ccv_nnc_no_hint, ptrs, shapes, CCV_32F, kOpt, 2e-6);
    }
}

TEST_F(OptimTest, SgdMomentumBufferAndNesterovByHand) {
  // a = 1, g = 2, m = 0.5; momentum 0.9, dampening 0, rate 0.1:
  // n = 0.9*0.5 + 2 = 2.45; plain: b = 1 - 0.245; nesterov: b = 1 - 0.1*(2 + 0.9*2.45).
  for (int nesterov : {0, 1}) {
    T g(CCV_64F, {1}), a(CCV_64F, {1}), m(CCV_64F, {1}), b(CCV_64F, {1}), n(CCV_64F, {1});
    g.set(0, 2), a.set(0, 1), m.set(0, 0.5);
    ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, sgd(0.1f, 1, 0, 0.9f, 0, nesterov), 0);
    ASSERT_EQ(run(cmd, {g, a, m}, {b, n}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_NEAR(n.get(0), 0.9 * 0.5 + 2, 1e-7);
    EXPECT_NEAR(b.get(0), nesterov ? 1 - 0.1 * (2 + 0.9 * 2.45) : 1 - 0.245, 1e-7);
    EXPECT_EQ(a.get(0), 1);  // not in place: the input is untouched
  }
}

TEST_F(OptimTest, AmsgradKeepsTheMaximum) {
  // A large first gradient then small ones: vm stays at the first v, v decays.
  T g(CCV_64F, {1}), a(CCV_64F, {1}), m(CCV_64F, {1}), v(CCV_64F, {1}), vm(CCV_64F, {1});
  a.set(0, 0), m.set(0, 0), v.set(0, 0), vm.set(0, 0);
  ccv_nnc_cmd_param_t p = adam(0.1f, 1, 0.9f, 0.5f, 0, 0, 1);
  for (int t = 1; t <= 3; t++) {
    g.set(0, t == 1 ? 4 : 0.5);
    p.adam.step = t;
    ASSERT_EQ(run(ccv_nnc_cmd(CCV_NNC_ADAM_FORWARD, nullptr, p, 0), {g, a, m, v, vm}, {a, m, v, vm}),
              CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
  }
  EXPECT_DOUBLE_EQ(vm.get(0), 0.5 * 16);  // v after step 1 = (1 - 0.5) * 16
  EXPECT_LT(v.get(0), vm.get(0));
}

TEST_F(OptimTest, DescriptionsBitmasksAndInplace) {
  for (const OptCase& c : all_setups()) {
    const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(c.id, nullptr, c.p, 0);
    const int ns = states_of(c.id, c.p);
    const uint64_t in_all = (uint64_t{1} << (2 + ns)) - 1, out_all = (uint64_t{1} << (1 + ns)) - 1;
    EXPECT_TRUE(ccv_nnc_cmd_bitmask(cmd, 2 + ns, 1 + ns, &in_all, 1, &out_all, 1)) << c.what;
    const uint64_t in_missing = in_all & ~uint64_t{2};
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(cmd, 2 + ns, 1 + ns, &in_missing, 1, &out_all, 1)) << c.what;
    for (int o = 0; o < 1 + ns; o++)
      for (int i = 0; i < 2 + ns; i++)
        EXPECT_EQ(ccv_nnc_cmd_allow_inplace(cmd, i, 2 + ns, o, 1 + ns), i == o + 1) << c.what << " " << i << "," << o;
    ccv_nnc_tensor_param_t in[5], out[4];
    for (int i = 0; i < 2 + ns; i++) in[i] = param(CCV_32F, {3, 4});
    std::memset(out, 0, sizeof(out));
    ccv_nnc_hint_tensor_auto(cmd, in, 2 + ns, ccv_nnc_no_hint, out, 1 + ns);
    for (int o = 0; o < 1 + ns; o++) EXPECT_TRUE(out[o].dim[0] == 3 && out[o].dim[1] == 4 && out[o].dim[2] == 0);
    // libnnc's bitmask is exact: an extra slot, a missing output or the other
    // ADAM form (amsgrad or not) does not match.
    const uint64_t in_extra = (in_all << 1) | 1, out_missing = out_all >> 1;
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(cmd, 3 + ns, 1 + ns, &in_extra, 1, &out_all, 1)) << c.what;
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(cmd, 2 + ns, 1 + ns, &in_all, 1, &out_missing, 1)) << c.what;
    if (c.id == CCV_NNC_ADAM_FORWARD || c.id == CCV_NNC_ADAMW_FORWARD) {
      ccv_nnc_cmd_t other = cmd;
      other.info.adam.amsgrad = !cmd.info.adam.amsgrad;
      EXPECT_FALSE(ccv_nnc_cmd_bitmask(other, 2 + ns, 1 + ns, &in_all, 1, &out_all, 1)) << c.what;
    }
    for (int i = 0; i < 2 + ns; i++)
      for (int o = 0; o < 1 + ns; o++) EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(cmd, i, 2 + ns, o, 1 + ns));
    // The backward id exists without a backward.
    ccv_nnc_cmd_t back = cmd;
    back.cmd = c.id + 1;
    EXPECT_FALSE(ccv_nnc_cmd_bitmask(back, 2 + ns, 1 + ns, &in_all, 1, &out_all, 1)) << c.what;
    ccv_nnc_tensor_param_t untouched = param(CCV_16F, {7});
    ccv_nnc_hint_tensor_auto(back, in, 2 + ns, ccv_nnc_no_hint, &untouched, 1);
    EXPECT_TRUE(untouched.datatype == CCV_16F && untouched.dim[0] == 7 && untouched.dim[1] == 0) << c.what;
    T t(CCV_32F, {3, 4});
    EXPECT_EQ(run(back, {t, t, t}, {t}), CCV_NNC_EXEC_NO_KERNEL) << c.what;
    EXPECT_TRUE(message_has("no backward")) << ccv_nnc_error_message();
  }
}

TEST_F(OptimTest, RejectsBadInputWithMessages) {
  T g(CCV_32F, {8}), a(CCV_32F, {8}), m(CCV_32F, {8}), v(CCV_32F, {8});
  T wrong(CCV_32F, {9}), d(CCV_64F, {8}), i32(CCV_32S, {8});
  const ccv_nnc_cmd_t s = ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, sgd(0.1f, 1, 0, 0.9f, 0, 0), 0);
  EXPECT_EQ(run(s, {g, a}, {a, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("SGD_FORWARD")) << ccv_nnc_error_message();
  EXPECT_EQ(run(s, {g, a, m}, {a}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(s, {g, a, m}, {a, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(s, {nullptr, a, m}, {a, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(s, {wrong, a, m}, {a, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("9")) << ccv_nnc_error_message();
  EXPECT_EQ(run(s, {g, a, d}, {a, m}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("64F")) << ccv_nnc_error_message();
  EXPECT_NE(run(s, {i32, i32, i32}, {i32, i32}), CCV_NNC_EXEC_SUCCESS);
  ccv_nnc_cmd_param_t p = adam(0.1f, 1, 0.9f, 0.999f, 0, 1e-8f, 0);
  p.adam.step = 0;
  EXPECT_EQ(run(ccv_nnc_cmd(CCV_NNC_ADAM_FORWARD, nullptr, p, 0), {g, a, m, v}, {a, m, v}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("step")) << ccv_nnc_error_message();
  p.adam.step = 1;
  p.adam.beta2 = 1;
  EXPECT_EQ(run(ccv_nnc_cmd(CCV_NNC_ADAM_FORWARD, nullptr, p, 0), {g, a, m, v}, {a, m, v}), CCV_NNC_EXEC_INVALID);
  p.adam.beta2 = 0.999f;
  p.adam.amsgrad = 1;  // amsgrad needs the fifth input and fourth output
  EXPECT_EQ(run(ccv_nnc_cmd(CCV_NNC_ADAMW_FORWARD, nullptr, p, 0), {g, a, m, v}, {a, m, v}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("amsgrad")) << ccv_nnc_error_message();
  ccv_nnc_cmd_param_t r = rmsprop(0.1f, 1, 0, 1.5f, 0, 1e-8f);
  EXPECT_EQ(run(ccv_nnc_cmd(CCV_NNC_RMSPROP_FORWARD, nullptr, r, 0), {g, a, m, v}, {a, m, v}), CCV_NNC_EXEC_INVALID);
  ccv_nnc_cmd_param_t l = lamb(0.1f, 1, 0.9f, 0.999f, 0, -1);
  EXPECT_EQ(run(ccv_nnc_cmd(CCV_NNC_LAMB_FORWARD, nullptr, l, 0), {g, a, m, v}, {a, m, v}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("epsilon")) << ccv_nnc_error_message();
}

TEST_F(OptimTest, EasyMacrosFromC) {
  const int n = 19;
  std::vector<float> g(n), a(n);
  for (int i = 0; i < n; i++) g[i] = 0.1f * float(i - 9), a[i] = 0.05f * float(i);
  for (int which = 0; which < 5; which++) {
    std::vector<float> pa = a, s0(n, 0), s1(n, 0);
    ASSERT_EQ(optim_easy_step(which, 2, g.data(), pa.data(), s0.data(), s1.data(), n), CCV_NNC_EXEC_SUCCESS)
        << which << ": " << ccv_nnc_error_message();
    // The same two steps through the C++ path above.
    static const uint32_t ids[5] = {CCV_NNC_SGD_FORWARD, CCV_NNC_ADAM_FORWARD, CCV_NNC_ADAMW_FORWARD,
                                    CCV_NNC_RMSPROP_FORWARD, CCV_NNC_LAMB_FORWARD};
    ccv_nnc_cmd_param_t p[5] = {sgd(0.1f, 1, 0.01f, 0.9f, 0.9f, 1), adam(0.01f, 1, 0.9f, 0.999f, 0.01f, 1e-8f, 0),
                                adam(0.01f, 1, 0.9f, 0.999f, 0.01f, 1e-8f, 0),
                                rmsprop(0.01f, 1, 0.01f, 0.9f, 0.5f, 1e-8f),
                                lamb(0.01f, 1, 0.9f, 0.999f, 0.01f, 1e-6f)};
    const int ns = states_of(ids[which], p[which]);
    std::vector<double> ra(a.begin(), a.end()), rg(g.begin(), g.end());
    std::vector<std::vector<double>> rs(ns, std::vector<double>(n, 0.0));
    for (int t = 1; t <= 2; t++) reference_step(ids[which], p[which], t, rg, ra, rs);
    for (int i = 0; i < n; i++) EXPECT_NEAR(pa[i], ra[i], 1e-5 * std::max(1.0, std::fabs(ra[i]))) << which << " " << i;
  }
}

}  // namespace
