// GPU_REF on 16F and 16BF storage against CPU_REF (issue 19: every GPU
// backend against CPU_REF on random inputs, odd shapes, views, fp32 and
// fp16): the optimisers (SGD, ADAM, ADAMW with and without amsgrad, RMSPROP,
// LAMB; in place over views for several steps, then out of place), the row
// losses (MSE mean and sum, SMOOTH_L1, BINARY_ and SIGMOID_BINARY_CROSSENTROPY),
// SOFTMAX, SOFTMAX_CROSSENTROPY (class indices 32S and of another float type
// than the logits, dense labels, label smoothing) and CATEGORICAL_CROSSENTROPY,
// and LAYER_NORM / RMSNORM / GROUP_NORM, forward and backward; every parent
// compared whole (a view's border must stay untouched). Plus the type mixes
// CPU_REF refuses (the same error code and message on the GPU tensors) and
// the 64F refusal of GPU_REF (it computes in float), also PAD / UPSAMPLE
// backward's. Skips without a GPU.
//
// Tolerance, per element: GPU_REF loads 16F / 16BF as float, computes in
// float (sums of a row in float or double, statistics in double) and rounds
// each output once; CPU_REF computes in double and rounds once. The two
// values rounded differ by the float evaluation's error only: a few float
// ulps (2^-24 relative; CUDA's expf / logf within 2 ulp, a row of up to 513
// terms summed in float within ~513 * 2^-24 ~ 3e-5 relative, far below one
// 16F rounding, 2^-11, or one 16BF rounding, 2^-8). So the results are equal
// or one ulp of the storage type apart: |gpu - cpu| <= ulp_T(max |.|) + atol,
// with atol = 1e-6 for the float error of results that cancel to near zero
// (softmax's g - <g, y>, the optimisers' a - rate * update) on O(1) terms.
// A backward reads the forward's outputs as CPU_REF wrote them (uploaded to
// the GPU first), and an optimiser's next step CPU_REF's state, so that one
// ulp of difference is never carried into a result that cancels.
// And at least 90% of the elements (less one; of those above 100 atol in
// magnitude) are bit-equal: a wrong rounding
// (truncation, or a second rounding through another type) moves far more; the
// CPU model of the same arithmetic (test/unit/gpu_half) is >= 99% bit-equal.
// A wrong formula, row, channel or type is off by many ulps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"
#include "unit/common/half_optimisers.hpp"

namespace {

using namespace nnc_gpu_test;

constexpr int kTypes[] = {CCV_16F, CCV_16BF};
const char* tname(int type) { return type == CCV_16F ? "16F" : "16BF"; }

double ulp(int type, double v) {
  const int mant = type == CCV_16F ? 10 : 7;
  const int emin = type == CCV_16F ? -14 : -126;
  const double a = std::fabs(v);
  int e = a > 0 ? static_cast<int>(std::floor(std::log2(a))) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

// The GPU parent of b against its CPU parent (see the top comment). The
// bit-equal count leaves out elements below 100 atol in magnitude: there the
// value is what is left of a cancellation (SOFTMAX backward with g = ones:
// dx = y (1 - sum y), sum y = 1 up to the rounding of y), made of the float
// sums' error, and which side of a rounding boundary it falls is noise.
void expect_ulp(const Both& b, int type, const std::string& what, double atol = 1e-6) {
  Owned back = to_cpu(b.gpu_parent());
  Owned g = as_f32(back), c = as_f32(b.cpu_parent());
  const size_t n = ccv_nnc_tensor_count(c->info);
  size_t bad = 0, exact = 0, counted = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = g->data.f32[i], y = c->data.f32[i];
    const double m = std::fmax(std::fabs(x), std::fabs(y));
    const bool count = !(m < 100 * atol);
    counted += count;
    if (x == y || (std::isnan(x) && std::isnan(y))) {
      exact += count;
      continue;
    }
    if (!(std::fabs(x - y) <= ulp(type, m) + atol) && bad++ < 5)
      ADD_FAILURE() << what << ": parent element " << i << " is " << x << " on the GPU, " << y << " on CPU_REF";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements beyond one ulp";
  EXPECT_GE(static_cast<double>(exact) + 1, 0.9 * static_cast<double>(counted))
      << what << ": only " << exact << " of " << counted << " elements (above " << 100 * atol
      << " in magnitude) bit-equal to CPU_REF";
}

// --- optimisers ---------------------------------------------------------------

using nnc_test_half::Opt;
using nnc_test_half::optimisers;

// Two steps in place over views (b = a, n = m, u = v, um = vm), then one out of
// place into packed tensors: every output compared after each run.
TEST(GpuRefHalf, OptimisersMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2011);
  for (int type : kTypes)
    for (const Opt& o : optimisers()) {
      const std::string what = std::string(o.name) + " " + tname(type);
      const Spec s{{7, 33}, true, type};
      auto g = both(s, rng), a = both(s, rng);
      std::vector<BothPtr> state;
      for (int i = 0; i < o.state; i++) state.push_back(i == 0 ? both(s, rng, -0.5f, 0.5f) : both(s, rng, 0.f, 1.f));
      std::vector<Both*> in{g.get(), a.get()}, out{a.get()};
      for (auto& t : state) in.push_back(t.get()), out.push_back(t.get());
      for (int step = 0; step < 2; step++) {
        run_both(o.cmd, in, out, what + " in place");
        expect_ulp(*a, type, what + " a, step " + std::to_string(step));
        for (size_t i = 0; i < state.size(); i++)
          expect_ulp(*state[i], type, what + " state " + std::to_string(i) + ", step " + std::to_string(step));
        // The next step starts from CPU_REF's values on both sides (a one-ulp
        // difference carried into another step could round to two).
        a->upload();
        for (auto& t : state) t->upload();
      }
      std::vector<BothPtr> fresh;
      std::vector<Both*> out2;
      for (size_t i = 0; i < out.size(); i++) {
        fresh.push_back(both({{7, 33}, false, type}, rng));
        out2.push_back(fresh.back().get());
      }
      run_both(o.cmd, in, out2, what + " out of place");
      for (size_t i = 0; i < fresh.size(); i++) expect_ulp(*fresh[i], type, what + " out " + std::to_string(i));
    }
}

// --- MSE, SMOOTH_L1, BINARY_ / SIGMOID_BINARY_CROSSENTROPY ---------------------

struct Loss {
  uint32_t id;
  const char* name;
  float w, beta;
  int sum;
  float lo, hi;  // the first input's range (probabilities for BCE)
};

ccv_nnc_cmd_t loss_cmd(const Loss& l, bool backward) {
  ccv_nnc_cmd_t c = make_cmd(backward ? l.id + 1 : l.id);
  // The unions overlap: set only the one this loss reads.
  if (l.id == CCV_NNC_MSE_FORWARD) c.info.mse.reduce_op = l.sum ? CCV_NNC_MSE_REDUCE_SUM : CCV_NNC_MSE_REDUCE_MEAN;
  if (l.id == CCV_NNC_SMOOTH_L1_FORWARD) c.info.smooth_l1.beta = l.beta;
  if (l.id == CCV_NNC_BINARY_CROSSENTROPY_FORWARD || l.id == CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD)
    c.info.binary_crossentropy.pos_weight = l.w;
  return c;
}

TEST(GpuRefHalf, LossesMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2017);
  const Loss losses[] = {
      {CCV_NNC_MSE_FORWARD, "MSE mean", 1, 1, 0, -1, 1},
      {CCV_NNC_MSE_FORWARD, "MSE sum", 1, 1, 1, -1, 1},
      {CCV_NNC_SMOOTH_L1_FORWARD, "SMOOTH_L1 0.5", 1, 0.5f, 0, -1.5f, 1.5f},
      {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, "BCE w 2.5", 2.5f, 1, 0, 0.02f, 0.98f},
      {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, "SBCE w 1.5", 1.5f, 1, 0, -4, 4},
  };
  struct Shape {
    std::vector<int> dim, loss;
    bool view;
  };
  const Shape shapes[] = {{{5, 37}, {5, 1}, true}, {{3, 2, 300}, {3, 2, 1}, false}};  // 300: a row over a block
  for (int type : kTypes)
    for (const Loss& l : losses)
      for (const Shape& sh : shapes) {
        const std::string what = std::string(l.name) + " " + tname(type) + " rows of " + std::to_string(sh.dim.back());
        const bool sbce = l.id == CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD;
        const bool prob = l.id == CCV_NNC_BINARY_CROSSENTROPY_FORWARD || sbce;
        auto a = both({sh.dim, sh.view, type}, rng, l.lo, l.hi),
             b = both({sh.dim, !sh.view, type}, rng, prob ? 0.f : -1.f, 1.f);
        auto loss = both({sh.loss, sh.view, type}, rng), sig = both({sh.dim, sh.view, type}, rng);
        if (sbce)
          run_both(loss_cmd(l, false), {a.get(), b.get()}, {loss.get(), sig.get()}, what);
        else
          run_both(loss_cmd(l, false), {a.get(), b.get()}, {loss.get()}, what);
        expect_ulp(*loss, type, what + " loss");
        if (sbce) expect_ulp(*sig, type, what + " sigmoid");
        sig->upload();  // the backward reads CPU_REF's sigmoid on both sides
        auto g = both({sh.loss, false, type}, rng, 0.5f, 1.5f), gs = both({sh.dim, false, type}, rng);
        auto da = both({sh.dim, sh.view, type}, rng), db = both({sh.dim, !sh.view, type}, rng);
        if (sbce)
          run_both(loss_cmd(l, true), {g.get(), gs.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
        else
          run_both(loss_cmd(l, true), {g.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
        expect_ulp(*da, type, what + " da");
        expect_ulp(*db, type, what + " db");
        if (sbce) {  // from the saved sigmoid, g NULL (ones)
          auto dz = both({sh.dim, false, type}, rng);
          run_both(loss_cmd(l, true), {nullptr, gs.get(), nullptr, b.get(), nullptr, sig.get()}, {dz.get()},
                   what + " backward from the sigmoid");
          expect_ulp(*dz, type, what + " dz from the sigmoid");
        }
      }
}

// --- SOFTMAX, SOFTMAX_CROSSENTROPY, CATEGORICAL_CROSSENTROPY ------------------------

TEST(GpuRefHalf, SoftmaxMatchesCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2027);
  for (int type : kTypes)
    for (const Spec& s : {Spec{{6, 41}, true, type}, Spec{{2, 3, 513}, false, type}}) {
      const std::string what = std::string("SOFTMAX ") + tname(type) + " rows of " + std::to_string(s.dim.back());
      auto x = both(s, rng, -6, 6), y = both(s, rng);
      run_both(make_cmd(CCV_NNC_SOFTMAX_FORWARD), {x.get()}, {y.get()}, what);
      expect_ulp(*y, type, what + " y");
      // The backward reads CPU_REF's y on both sides: a one-ulp difference in
      // y would move dx = y (g - <g, y>) by more than an ulp where it cancels.
      y->upload();
      auto g = both({s.dim, !s.view, type}, rng), dx = both(s, rng), dx1 = both(s, rng);
      run_both(make_cmd(CCV_NNC_SOFTMAX_BACKWARD), {g.get(), nullptr, y.get()}, {dx.get()}, what + " backward");
      expect_ulp(*dx, type, what + " dx");
      run_both(make_cmd(CCV_NNC_SOFTMAX_BACKWARD), {nullptr, nullptr, y.get()}, {dx1.get()},
               what + " backward, g ones");
      expect_ulp(*dx1, type, what + " dx, g ones");
      // In place: y over x.
      run_both(make_cmd(CCV_NNC_SOFTMAX_FORWARD), {x.get()}, {x.get()}, what + " in place");
      expect_ulp(*x, type, what + " y over x");
    }
}

TEST(GpuRefHalf, CrossEntropiesMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2039);
  const int rows = 6, cols = 41;
  for (int type : kTypes)
    // Labels: class indices 32S, class indices of the other half type (CPU_REF
    // takes any float type), dense rows of the logits' type.
    for (int kind = 0; kind < 3; kind++) {
      const int ltype = kind == 0 ? CCV_32S : kind == 1 ? (type == CCV_16F ? CCV_16BF : CCV_16F) : type;
      const std::string what = std::string(tname(type)) + (kind == 2 ? " dense labels" : " class indices of ") +
                               (kind == 0   ? "32S"
                                : kind == 1 ? tname(ltype)
                                            : "");
      auto z = both({{rows, cols}, true, type}, rng, -5, 5);
      BothPtr lab;
      if (kind == 2) {
        lab = both({{rows, cols}, false, type}, rng, 0, 1);
      } else {
        lab = both({{rows}, false, ltype}, rng, 0, cols - 1);
        if (kind == 1) {  // whole numbers in a float type (exact in 16F and 16BF below 256)
          ccv_nnc_tensor_t* p = lab->cpu_parent();
          Owned f = as_f32(p);
          for (int r = 0; r < rows; r++) f->data.f32[r] = std::floor(f->data.f32[r]);
          ccv_nnc_cmd_t cv = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
          cv.backend = CCV_NNC_BACKEND_CPU_REF;
          ASSERT_EQ(exec(cv, ccv_nnc_no_hint, {f.t}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          lab->upload();
        }
      }
      for (int smooth = 0; smooth < 2; smooth++) {
        const float trim0 = smooth ? 0.05f : 0.f, trim1 = smooth ? 0.9f : 1.f;
        const std::string w = what + (smooth ? ", smoothed" : "");
        ccv_nnc_cmd_t f = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
        ccv_nnc_cmd_t bw = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD);
        ccv_nnc_cmd_t cf = make_cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD);
        ccv_nnc_cmd_t cb = make_cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD);
        for (ccv_nnc_cmd_t* c : {&f, &bw, &cf, &cb}) {
          c->info.label_smoothing.trim0 = trim0;
          c->info.label_smoothing.trim1 = trim1;
        }
        auto loss = both({{rows, 1}, true, type}, rng), s = both({{rows, cols}, true, type}, rng);
        run_both(f, {z.get(), lab.get()}, {loss.get(), s.get()}, "SOFTMAX_CROSSENTROPY " + w);
        expect_ulp(*loss, type, "SOFTMAX_CROSSENTROPY " + w + " loss");
        expect_ulp(*s, type, "SOFTMAX_CROSSENTROPY " + w + " softmax");
        s->upload();  // the backward reads CPU_REF's softmax on both sides (d logits cancels)
        auto g = both({{rows, 1}, false, type}, rng, 0.5f, 1.5f),
             gs = both({{rows, cols}, false, type}, rng, -0.5f, 0.5f);
        auto dz = both({{rows, cols}, true, type}, rng);
        run_both(bw, {g.get(), gs.get(), z.get(), lab.get(), loss.get(), s.get()}, {dz.get()},
                 "SOFTMAX_CROSSENTROPY backward " + w);
        expect_ulp(*dz, type, "SOFTMAX_CROSSENTROPY " + w + " d logits");
        auto dz1 = both({{rows, cols}, false, type}, rng);
        run_both(bw, {nullptr, nullptr, nullptr, lab.get(), nullptr, s.get()}, {dz1.get()},
                 "SOFTMAX_CROSSENTROPY backward, g ones " + w);
        expect_ulp(*dz1, type, "SOFTMAX_CROSSENTROPY " + w + " d logits, g ones");
        // CATEGORICAL_CROSSENTROPY on probabilities away from 0 (no log clamps).
        auto p = both({{rows, cols}, true, type}, rng, 0.01f, 1.f), closs = both({{rows}, false, type}, rng);
        run_both(cf, {p.get(), lab.get()}, {closs.get()}, "CATEGORICAL_CROSSENTROPY " + w);
        expect_ulp(*closs, type, "CATEGORICAL_CROSSENTROPY " + w + " loss");
        auto dp = both({{rows, cols}, true, type}, rng), dl = both({{rows, cols}, false, type}, rng);
        if (kind == 2) {
          run_both(cb, {g.get(), p.get(), lab.get()}, {dp.get(), dl.get()}, "CATEGORICAL_CROSSENTROPY backward " + w);
          expect_ulp(*dl, type, "CATEGORICAL_CROSSENTROPY " + w + " d labels");
        } else {
          run_both(cb, {g.get(), p.get(), lab.get()}, {dp.get()}, "CATEGORICAL_CROSSENTROPY backward " + w);
        }
        expect_ulp(*dp, type, "CATEGORICAL_CROSSENTROPY " + w + " dp");
      }
    }
}

// --- LAYER_NORM, RMSNORM, GROUP_NORM ----------------------------------------------

TEST(GpuRefHalf, NormsMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2053);
  for (int type : kTypes)
    for (int kind = 0; kind < 3; kind++) {  // LAYER_NORM, RMSNORM, GROUP_NORM over x [3, 6, 37]
      const char* names[] = {"LAYER_NORM", "RMSNORM", "GROUP_NORM"};
      const std::string what = std::string(names[kind]) + " " + tname(type);
      const std::vector<int> xd = {3, 6, 37};
      ccv_nnc_cmd_t f, bw;
      std::vector<int> sd, md;
      if (kind == 0) {
        f = make_cmd(CCV_NNC_LAYER_NORM_FORWARD), bw = make_cmd(CCV_NNC_LAYER_NORM_BACKWARD);
        for (ccv_nnc_cmd_t* c : {&f, &bw}) {
          c->info.lnorm.count = 1, c->info.lnorm.axis[0] = 2, c->info.lnorm.epsilon = 1e-5f;
          c->info.lnorm.elementwise_affine = 1;
        }
        sd = {1, 1, 37}, md = {3, 6, 1};
      } else if (kind == 1) {
        f = make_cmd(CCV_NNC_RMSNORM_FORWARD), bw = make_cmd(CCV_NNC_RMSNORM_BACKWARD);
        for (ccv_nnc_cmd_t* c : {&f, &bw}) {
          c->info.rmsnorm.count = 2, c->info.rmsnorm.axis[0] = 1, c->info.rmsnorm.axis[1] = 2;
          c->info.rmsnorm.epsilon = 1e-5f;
        }
        sd = {6, 37}, md = {3, 1, 1};
      } else {
        f = make_cmd(CCV_NNC_GROUP_NORM_FORWARD), bw = make_cmd(CCV_NNC_GROUP_NORM_BACKWARD);
        for (ccv_nnc_cmd_t* c : {&f, &bw}) {
          c->info.gnorm.group_axis = 1, c->info.gnorm.groups = 3, c->info.gnorm.epsilon = 1e-5f;
          c->info.gnorm.reduce_count = 1, c->info.gnorm.reduce_axis[0] = 2, c->info.gnorm.elementwise_affine = 1;
        }
        sd = {1, 6, 1}, md = {3, 3, 1};
      }
      auto x = both({xd, true, type}, rng, -2, 2), y = both({xd, true, type}, rng);
      auto scale = both({sd, false, type}, rng, 0.5f, 1.5f), bias = both({sd, false, type}, rng, -0.5f, 0.5f);
      auto mean = both({md, false, type}, rng), inv = both({md, true, type}, rng);
      if (kind == 1)
        run_both(f, {x.get(), scale.get()}, {y.get(), inv.get()}, what);
      else
        run_both(f, {x.get(), scale.get(), bias.get()}, {y.get(), mean.get(), inv.get()}, what);
      expect_ulp(*y, type, what + " y");
      expect_ulp(*inv, type, what + " saved_inv_std");
      if (kind != 1) expect_ulp(*mean, type, what + " saved_mean");
      // The backward reads CPU_REF's saved statistics on both sides (dx cancels).
      mean->upload();
      inv->upload();
      auto g = both({xd, false, type}, rng), dx = both({xd, true, type}, rng);
      auto ds = both({sd, false, type}, rng), db = both({sd, true, type}, rng);
      if (kind == 1)
        run_both(bw, {g.get(), nullptr, x.get(), scale.get(), y.get(), inv.get()}, {dx.get(), ds.get()},
                 what + " backward");
      else
        run_both(bw, {g.get(), nullptr, nullptr, x.get(), scale.get(), bias.get(), y.get(), mean.get(), inv.get()},
                 {dx.get(), ds.get(), db.get()}, what + " backward");
      expect_ulp(*dx, type, what + " dx");
      // dscale / dbias sum 3 x 37 (or 3 x 2 x 37) products: in double on both sides.
      expect_ulp(*ds, type, what + " dscale");
      if (kind != 1) expect_ulp(*db, type, what + " dbias");
    }
}

// --- refusals ------------------------------------------------------------------

// The command refused on CPU_REF over CPU tensors and on GPU_REF over GPU
// tensors, with the same code and message, which names `needle`.
void expect_refused_alike(ccv_nnc_cmd_t c, const std::vector<Both*>& in, const std::vector<Both*>& out, int code,
                          const std::string& needle, const std::string& what) {
  std::vector<ccv_nnc_tensor_t*> ci, gi, co, go;
  for (Both* b : in) ci.push_back(b ? b->cpu() : nullptr), gi.push_back(b ? b->gpu() : nullptr);
  for (Both* b : out) co.push_back(b ? b->cpu() : nullptr), go.push_back(b ? b->gpu() : nullptr);
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, ci, co), code) << what << " (CPU_REF)";
  const std::string cpu = ccv_nnc_error_message();
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, gi, go), code) << what << " (GPU_REF)";
  const std::string gpu = ccv_nnc_error_message();
  EXPECT_EQ(gpu, cpu) << what;
  EXPECT_NE(gpu.find(needle), std::string::npos) << what << ": " << gpu;
}

TEST(GpuRefHalf, TypeMixesAreRefusedAsOnCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2063);
  // SGD: a 16F gradient for 32F parameters and state.
  auto g16 = both({{5, 9}, false, CCV_16F}, rng), a32 = both({{5, 9}}, rng), m32 = both({{5, 9}}, rng);
  auto b32 = both({{5, 9}}, rng), n32 = both({{5, 9}}, rng);
  ccv_nnc_cmd_t sgd = make_cmd(CCV_NNC_SGD_FORWARD);
  sgd.info.sgd.rate = 0.1f, sgd.info.sgd.scale = 1;
  expect_refused_alike(sgd, {g16.get(), a32.get(), m32.get()}, {b32.get(), n32.get()}, CCV_NNC_EXEC_INVALID,
                       "but the parameter a is 32F", "SGD 16F g, 32F a");
  // ADAM: 16BF parameters with 32F moments.
  auto g = both({{5, 9}, false, CCV_16BF}, rng), a = both({{5, 9}, false, CCV_16BF}, rng),
       v32 = both({{5, 9}}, rng, 0, 1);
  ccv_nnc_cmd_t adam = make_cmd(CCV_NNC_ADAM_FORWARD);
  adam.info.adam.step = 1, adam.info.adam.rate = 0.01f, adam.info.adam.beta1 = 0.9f, adam.info.adam.beta2 = 0.999f;
  adam.info.adam.epsilon = 1e-8f, adam.info.adam.scale = 1;
  expect_refused_alike(adam, {g.get(), a.get(), m32.get(), v32.get()}, {a.get(), m32.get(), v32.get()},
                       CCV_NNC_EXEC_INVALID, "but the parameter a is 16BF", "ADAM 16BF a, 32F state");
  // SOFTMAX: 16F x into a 16BF y.
  auto x16 = both({{4, 7}, false, CCV_16F}, rng), y16b = both({{4, 7}, false, CCV_16BF}, rng);
  expect_refused_alike(make_cmd(CCV_NNC_SOFTMAX_FORWARD), {x16.get()}, {y16b.get()}, CCV_NNC_EXEC_INVALID,
                       "y is 16BF but x is 16F", "SOFTMAX 16F -> 16BF");
  // MSE: a 16F, b 32F.
  auto a16 = both({{4, 7}, false, CCV_16F}, rng), b7 = both({{4, 7}}, rng), l16 = both({{4, 1}, false, CCV_16F}, rng);
  ccv_nnc_cmd_t mse = make_cmd(CCV_NNC_MSE_FORWARD);
  expect_refused_alike(mse, {a16.get(), b7.get()}, {l16.get()}, CCV_NNC_EXEC_INVALID, "b is 32F but a is 16F",
                       "MSE 16F a, 32F b");
  // SOFTMAX_CROSSENTROPY: dense 32F labels for 16F logits.
  auto lab32 = both({{4, 7}}, rng, 0, 1), s16 = both({{4, 7}, false, CCV_16F}, rng);
  expect_refused_alike(make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD), {x16.get(), lab32.get()}, {l16.get(), s16.get()},
                       CCV_NNC_EXEC_INVALID, "dense labels are 32F but the logits are 16F",
                       "SOFTMAX_CROSSENTROPY 32F dense labels, 16F logits");
  // RMSNORM: a 32F scale for 16F x.
  auto sc32 = both({{7}}, rng), y16 = both({{4, 7}, false, CCV_16F}, rng);
  ccv_nnc_cmd_t rms = make_cmd(CCV_NNC_RMSNORM_FORWARD);
  rms.info.rmsnorm.count = 1, rms.info.rmsnorm.axis[0] = 1, rms.info.rmsnorm.epsilon = 1e-5f;
  expect_refused_alike(rms, {x16.get(), sc32.get()}, {y16.get()}, CCV_NNC_EXEC_INVALID, "scale is 32F but x is 16F",
                       "RMSNORM 16F x, 32F scale");
  // A 16F class index that is not whole: CCV_NNC_EXEC_INVALID on both, naming the row.
  auto idx = both({{4}, false, CCV_16F}, rng, 0, 6), lz = both({{4}, false, CCV_16F}, rng);
  ccv_nnc_tensor_t* ip = idx->cpu_parent();
  {
    Owned f = as_f32(ip);
    for (int r = 0; r < 4; r++) f->data.f32[r] = r == 2 ? 2.5f : static_cast<float>(r);
    ccv_nnc_cmd_t cv = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
    cv.backend = CCV_NNC_BACKEND_CPU_REF;
    ASSERT_EQ(exec(cv, ccv_nnc_no_hint, {f.t}, {ip}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  }
  idx->upload();
  ccv_nnc_cmd_t sce = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  sce.info.label_smoothing.trim1 = 1;
  sce.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(sce, ccv_nnc_no_hint, {x16->gpu(), idx->gpu()}, {lz->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("row 2"), std::string::npos) << ccv_nnc_error_message();
}

// 64F: CPU_REF takes it, GPU_REF (which computes in float) refuses it with
// CCV_NNC_EXEC_NO_KERNEL and a message that says why, and writes nothing.
TEST(GpuRefHalf, F64IsRefusedWithAMessage) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2069);
  auto x = both({{4, 7}, false, CCV_64F}, rng), y = both({{4, 7}, false, CCV_64F}, rng);
  auto m = both({{4, 7}, false, CCV_64F}, rng);
  auto expect_f64 = [](ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                       const char* what) {
    c.backend = CCV_NNC_BACKEND_GPU_REF;
    EXPECT_EQ(exec(c, ccv_nnc_no_hint, in, out), CCV_NNC_EXEC_NO_KERNEL) << what;
    const std::string msg = ccv_nnc_error_message();
    EXPECT_NE(msg.find("64F"), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find("float"), std::string::npos) << what << ": " << msg;
  };
  Owned before = to_cpu(y->gpu());
  expect_f64(make_cmd(CCV_NNC_SOFTMAX_FORWARD), {x->gpu()}, {y->gpu()}, "SOFTMAX 64F");
  Owned after = to_cpu(y->gpu());
  EXPECT_EQ(std::memcmp(before->data.u8, after->data.u8, 4 * 7 * sizeof(double)), 0) << "SOFTMAX 64F wrote y";
  ccv_nnc_cmd_t sgd = make_cmd(CCV_NNC_SGD_FORWARD);
  sgd.info.sgd.rate = 0.1f, sgd.info.sgd.scale = 1;
  expect_f64(sgd, {x->gpu(), y->gpu(), m->gpu()}, {y->gpu(), m->gpu()}, "SGD 64F");
  ccv_nnc_cmd_t ln = make_cmd(CCV_NNC_LAYER_NORM_FORWARD);
  ln.info.lnorm.count = 1, ln.info.lnorm.axis[0] = 1, ln.info.lnorm.epsilon = 1e-5f;
  expect_f64(ln, {x->gpu()}, {y->gpu()}, "LAYER_NORM 64F");
  auto l = both({{4, 1}, false, CCV_64F}, rng);
  expect_f64(make_cmd(CCV_NNC_MSE_FORWARD), {x->gpu(), m->gpu()}, {l->gpu()}, "MSE 64F");
  // 64F class indices with 32F logits (CPU_REF takes any float type): refused the same way.
  auto z = both({{4, 7}}, rng), i64 = both({{4}, false, CCV_64F}, rng, 0, 6), lz = both({{4}}, rng);
  ccv_nnc_cmd_t sce = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  sce.info.label_smoothing.trim1 = 1;
  expect_f64(sce, {z->gpu(), i64->gpu()}, {lz->gpu()}, "SOFTMAX_CROSSENTROPY 64F class indices");
}

// PAD and UPSAMPLE backward take 16F / 16BF (summed in a double scratch:
// half2_gpu_test.cpp); a 64F dx is refused with CCV_NNC_EXEC_NO_KERNEL and a
// message that says why, and left as it was.
TEST(GpuRefHalf, AtomicBackwardsRefuse64FWithAReason) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(2081);
  auto g = both({{6, 7}, false, CCV_64F}, rng), dx = both({{4, 5}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t p = make_cmd(CCV_NNC_PAD_BACKWARD);
  p.info.pad.type = CCV_NNC_PAD_ZERO;
  p.info.size.dim[0] = p.info.size.dim[1] = 1;
  p.info.pad.end[0] = p.info.pad.end[1] = 1;
  p.backend = CCV_NNC_BACKEND_GPU_REF;
  Owned before = to_cpu(dx->gpu());
  EXPECT_EQ(exec(p, ccv_nnc_no_hint, {g->gpu()}, {dx->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("run 64F on the CPU"), std::string::npos)
      << ccv_nnc_error_message();
  Owned after = to_cpu(dx->gpu());
  EXPECT_EQ(std::memcmp(before->data.u8, after->data.u8, 4 * 5 * sizeof(double)), 0) << "PAD_BACKWARD 64F wrote dx";
}

}  // namespace
