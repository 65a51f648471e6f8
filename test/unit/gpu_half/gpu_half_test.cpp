// The rounding model of the GPU_REF kernels on 16F and 16BF storage, checked
// on the CPU: every input loaded as float, the per-element formula evaluated
// in float with the host+device functions the kernels run
// (cmd/common/gpu_optim.hpp, gpu_loss.hpp, gpu_softmax.hpp; the norms in
// double, gpu_norm.hpp), each output rounded ONCE to its storage type. The
// model's values are compared with CPU_REF's own 16F / 16BF results (double
// inside, rounded once) on the same random inputs (fixed seeds, odd shapes),
// for SGD, ADAM, ADAMW (amsgrad), RMSPROP, LAMB, MSE, SMOOTH_L1,
// BINARY_CROSSENTROPY, SIGMOID_BINARY_CROSSENTROPY, SOFTMAX,
// SOFTMAX_CROSSENTROPY (class indices of another type, dense labels, label
// smoothing), CATEGORICAL_CROSSENTROPY, LAYER_NORM, RMSNORM and GROUP_NORM, forward and
// backward.
//
// Tolerance, per element: both sides round (once) values that differ only by
// the float evaluation's error, a few float ulps (2^-24 relative) of the
// terms; one 16F rounding is within 2^-11 relative (half an ulp), 16BF 2^-8,
// so the two rounded values are equal or one ulp of the storage type apart:
// |model - cpu_ref| <= ulp_T(max |.|) + atol, atol (1e-6 for O(1) terms)
// covering the float error where a result cancels to near zero. And the
// rounding must be the model's: at least 97% of the elements are bit-equal
// (an element differs only when its exact value lies within the float error
// of a rounding boundary: about 2^-24 / 2^-11 ~ 1e-4 of them for 16F, more
// where a result cancels, as ADAM's n = beta1 m + (1 - beta1) grad near 0:
// up to 0.9% here). A model without the final rounding (0 to 11% bit-equal
// when tried) fails that count; a wrong formula fails the ulp bound.
// NNC_GPU_HALF_VERBOSE=1 prints each comparison's counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cmd/common/gpu_loss.hpp"
#include "cmd/common/gpu_norm.hpp"
#include "cmd/common/gpu_optim.hpp"
#include "cmd/common/gpu_optim_args.hpp"
#include "cmd/common/gpu_softmax.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"
#include "unit/common/half_optimisers.hpp"

namespace {

using namespace nnc::gpu;

struct Free {
  void operator()(ccv_nnc_tensor_t* t) const { ccv_nnc_tensor_free(t); }
};
using Tensor = std::unique_ptr<ccv_nnc_tensor_t, Free>;

Tensor make(int type, const std::vector<int>& dim) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = type;
  for (size_t i = 0; i < dim.size(); i++) p.dim[i] = dim[i];
  return Tensor(ccv_nnc_tensor_new(nullptr, p, 0));
}

size_t count(const Tensor& t) { return ccv_nnc_tensor_count(t->info); }
size_t esize(const Tensor& t) { return CCV_GET_DATA_TYPE_SIZE(t->info.datatype); }
int type_of(const Tensor& t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

double get(const Tensor& t, size_t i) { return nnc::load_double(t->data.u8 + i * esize(t), type_of(t)); }
// Element i as the kernels load it: float (exact for 16F / 16BF / 32F).
float getf(const Tensor& t, size_t i) { return static_cast<float>(get(t, i)); }
void set(const Tensor& t, size_t i, double v) { nnc::store_double(t->data.u8 + i * esize(t), type_of(t), v); }

// v rounded once to `type` (round to nearest even, as the kernels' stores).
double rnd(int type, double v) {
  unsigned char b[8];
  nnc::store_double(b, type, v);
  return nnc::load_double(b, type);
}

// One unit in the last place of `type` at magnitude |v| (the subnormal step below the normal range).
double ulp(int type, double v) {
  const int mant = type == CCV_16F ? 10 : type == CCV_16BF ? 7 : 23;
  const int emin = type == CCV_16F ? -14 : -126;
  const double a = std::fabs(v);
  int e = a > 0 ? static_cast<int>(std::floor(std::log2(a))) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

void fill(const Tensor& t, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (size_t i = 0; i < count(t); i++) set(t, i, d(rng));
}

// Model values against CPU_REF's, element by element (see the top comment).
struct Tally {
  std::string what;
  int type;
  double atol = 1e-6;
  size_t n = 0, exact = 0, bad = 0;
  void add(double model, double ref, size_t i) {
    n++;
    if (model == ref || (std::isnan(model) && std::isnan(ref))) {
      exact++;
      return;
    }
    const double m = std::fmax(std::fabs(model), std::fabs(ref));
    if (!(std::fabs(model - ref) <= ulp(type, m) + atol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << model << " in the model, " << ref << " from CPU_REF";
  }
  // Every element of ref (a T tensor) against model(i) (already rounded).
  template <class F>
  void all(const Tensor& ref, F model) {
    for (size_t i = 0; i < count(ref); i++) add(model(i), get(ref, i), i);
  }
  ~Tally() {
    if (std::getenv("NNC_GPU_HALF_VERBOSE")) printf("%-60s n %zu exact %zu bad %zu\n", what.c_str(), n, exact, bad);
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " beyond one ulp";
    EXPECT_GE(static_cast<double>(exact), 0.97 * static_cast<double>(n))
        << what << ": only " << exact << " of " << n << " bit-equal to CPU_REF";
  }
};

const char* tname(int type) { return type == CCV_16F ? "16F" : "16BF"; }

void run_ref(ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
             const std::string& what) {
  c.backend = CCV_NNC_BACKEND_CPU_REF;
  ASSERT_EQ(ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(),
                             static_cast<int>(out.size()), nullptr),
            CCV_NNC_EXEC_SUCCESS)
      << what << ": " << ccv_nnc_error_message();
}

ccv_nnc_cmd_t cmd_of(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

constexpr int kTypes[] = {CCV_16F, CCV_16BF};

// --- optimisers ---------------------------------------------------------------

using nnc_test_half::Opt;
using nnc_test_half::optimisers;

TEST(GpuHalfModel, OptimisersMatchCpuRef) {
  std::mt19937 rng(1901);
  const std::vector<int> dim = {7, 143};
  for (const Opt& o : optimisers())
    for (int type : kTypes) {
      const std::string what = std::string(o.name) + " " + tname(type);
      Tensor g = make(type, dim), a = make(type, dim), b = make(type, dim);
      fill(g, rng, -1, 1);
      fill(a, rng, -1, 1);
      std::vector<Tensor> st, out;
      for (int i = 0; i < o.state; i++) {
        st.push_back(make(type, dim));
        fill(st.back(), rng, i == 0 ? -0.5 : 0.0, i == 0 ? 0.5 : 1.0);  // m any sign; v, vm >= 0
        out.push_back(make(type, dim));
      }
      std::vector<ccv_nnc_tensor_t*> in{g.get(), a.get()}, outs{b.get()};
      for (int i = 0; i < o.state; i++) in.push_back(st[i].get()), outs.push_back(out[i].get());
      run_ref(o.cmd, in, outs, what);
      const size_t n = count(a);
      std::vector<double> mb(n), mn(n), mu(n), mum(n);
      if (o.cmd.cmd == CCV_NNC_LAMB_FORWARD) {
        // Pass 1: n, u rounded; r from the rounded moments; pass 2 as the kernel.
        const LambCoef c = lamb_coef_of(o.cmd);
        double a2 = 0, r2 = 0;
        for (size_t i = 0; i < n; i++) {
          float nf, uf;
          lamb_moments_f(c, getf(g, i), getf(st[0], i), getf(st[1], i), &nf, &uf);
          mn[i] = rnd(type, nf), mu[i] = rnd(type, uf);
          const float r = lamb_direction_f(c, getf(a, i), static_cast<float>(mn[i]), static_cast<float>(mu[i]));
          a2 += static_cast<double>(getf(a, i)) * getf(a, i);
          r2 += static_cast<double>(r) * r;
        }
        const float k = static_cast<float>(lamb_step_size(c, a2, r2));
        for (size_t i = 0; i < n; i++) {
          const float av = getf(a, i);
          mb[i] = rnd(type, av - k * lamb_direction_f(c, av, static_cast<float>(mn[i]), static_cast<float>(mu[i])));
        }
      } else {
        OptimArgs c;
        ASSERT_TRUE(optim_args_of(o.cmd, &c));
        for (size_t i = 0; i < n; i++) {
          float fb = 0, fn = 0, fu = 0, fum = 0;
          if (c.kind == kOptSgd)
            sgd_step_f(c, getf(g, i), getf(a, i), getf(st[0], i), &fb, &fn);
          else if (c.kind == kOptRmsprop)
            rmsprop_step_f(c, getf(g, i), getf(a, i), getf(st[0], i), getf(st[1], i), &fb, &fn, &fu);
          else
            adam_step_f(c, getf(g, i), getf(a, i), getf(st[0], i), getf(st[1], i), c.amsgrad ? getf(st[2], i) : 0.f,
                        &fb, &fn, &fu, &fum);
          mb[i] = rnd(type, fb), mn[i] = rnd(type, fn), mu[i] = rnd(type, fu), mum[i] = rnd(type, fum);
        }
      }
      Tally{what + " b", type}.all(b, [&](size_t i) { return mb[i]; });
      Tally{what + " n", type}.all(out[0], [&](size_t i) { return mn[i]; });
      if (o.state > 1) Tally{what + " u", type}.all(out[1], [&](size_t i) { return mu[i]; });
      if (o.state > 2) Tally{what + " um", type}.all(out[2], [&](size_t i) { return mum[i]; });
    }
}

// --- MSE, SMOOTH_L1, BINARY_ / SIGMOID_BINARY_CROSSENTROPY ---------------------

struct LossCase {
  uint32_t id;
  int op;
  const char* name;
  float w, beta;
  double alo, ahi;  // the first input's range (probabilities for BCE)
};

TEST(GpuHalfModel, LossesMatchCpuRef) {
  std::mt19937 rng(1907);
  const LossCase cases[] = {
      {CCV_NNC_MSE_FORWARD, kLossMse, "MSE mean", 1, 1, -1, 1},
      {CCV_NNC_SMOOTH_L1_FORWARD, kLossSmoothL1, "SMOOTH_L1 0.5", 1, 0.5f, -1.5, 1.5},
      {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, kLossBce, "BCE w 2.5", 2.5f, 1, 0.02, 0.98},
      {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, kLossSigmoidBce, "SBCE w 1.5", 1.5f, 1, -4, 4},
  };
  const int rows = 5, cols = 37;
  for (const LossCase& k : cases)
    for (int type : kTypes) {
      const std::string what = std::string(k.name) + " " + tname(type);
      ccv_nnc_cmd_t f = cmd_of(k.id), bw = cmd_of(k.id + 1);
      for (ccv_nnc_cmd_t* c : {&f, &bw}) {
        if (k.op == kLossMse) c->info.mse.reduce_op = CCV_NNC_MSE_REDUCE_MEAN;
        if (k.op == kLossSmoothL1) c->info.smooth_l1.beta = k.beta;
        if (k.op == kLossBce || k.op == kLossSigmoidBce) c->info.binary_crossentropy.pos_weight = k.w;
      }
      LossArgs p;
      p.w = k.w, p.beta = k.beta, p.k = k.op == kLossMse ? cols : 1;
      Tensor a = make(type, {rows, cols}), b = make(type, {rows, cols}), loss = make(type, {rows, 1});
      Tensor sig = make(type, {rows, cols});
      fill(a, rng, k.alo, k.ahi);
      fill(b, rng, k.op == kLossBce || k.op == kLossSigmoidBce ? 0.0 : -1.0, 1);
      const bool sbce = k.op == kLossSigmoidBce;
      run_ref(f, {a.get(), b.get()},
              sbce ? std::vector<ccv_nnc_tensor_t*>{loss.get(), sig.get()} : std::vector<ccv_nnc_tensor_t*>{loss.get()},
              what);
      // The loss: float terms summed in double, rounded once (st_d).
      Tally{what + " loss", type}.all(loss, [&](size_t r) {
        double acc = 0;
        for (int j = 0; j < cols; j++) acc += loss_term(k.op, getf(a, r * cols + j), getf(b, r * cols + j), p);
        return rnd(type, k.op == kLossMse ? acc / p.k : acc);
      });
      if (sbce)
        Tally{what + " sigmoid", type}.all(sig, [&](size_t i) { return rnd(type, loss_detail::sigmoid(getf(a, i))); });
      // Backward with g per row (and g_sigmoid for the sigmoid form).
      Tensor g = make(type, {rows, 1}), gs = make(type, {rows, cols}), da = make(type, {rows, cols}),
             db = make(type, {rows, cols});
      fill(g, rng, 0.5, 1.5);
      fill(gs, rng, -1, 1);
      if (sbce)
        run_ref(bw, {g.get(), gs.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
      else
        run_ref(bw, {g.get(), a.get(), b.get()}, {da.get(), db.get()}, what + " backward");
      std::vector<double> mda(count(da)), mdb(count(da));
      for (size_t i = 0; i < count(da); i++) {
        float x, y;
        loss_grad(k.op, getf(g, i / cols), getf(a, i), getf(b, i), sbce ? getf(gs, i) : 0.f, 0.f, true, p, &x, &y);
        mda[i] = rnd(type, x), mdb[i] = rnd(type, y);
      }
      Tally{what + " da", type}.all(da, [&](size_t i) { return mda[i]; });
      Tally{what + " db", type}.all(db, [&](size_t i) { return mdb[i]; });
    }
}

// --- SOFTMAX, SOFTMAX_CROSSENTROPY, CATEGORICAL_CROSSENTROPY ----------------------

// A row's max (0 for a row of -inf) and sum of exp in float, as the kernels.
void row_stats(const Tensor& z, size_t r, int cols, float* m, float* sum) {
  float mx = -INFINITY;
  for (int j = 0; j < cols; j++) mx = std::fmax(mx, getf(z, r * cols + j));
  if (std::isinf(mx) && mx < 0) mx = 0;
  float s = 0;
  for (int j = 0; j < cols; j++) s += std::exp(getf(z, r * cols + j) - mx);
  *m = mx, *sum = s;
}

TEST(GpuHalfModel, SoftmaxMatchesCpuRef) {
  std::mt19937 rng(1913);
  const int rows = 6, cols = 41;
  for (int type : kTypes) {
    const std::string what = std::string("SOFTMAX ") + tname(type);
    Tensor x = make(type, {rows, cols}), y = make(type, {rows, cols});
    fill(x, rng, -6, 6);
    run_ref(cmd_of(CCV_NNC_SOFTMAX_FORWARD), {x.get()}, {y.get()}, what);
    Tally{what + " y", type}.all(y, [&](size_t i) {
      float m, s;
      row_stats(x, i / cols, cols, &m, &s);
      return rnd(type, softmax_value(getf(x, i), m, s));
    });
    Tensor g = make(type, {rows, cols}), dx = make(type, {rows, cols});
    fill(g, rng, -1, 1);
    run_ref(cmd_of(CCV_NNC_SOFTMAX_BACKWARD), {g.get(), nullptr, y.get()}, {dx.get()}, what + " backward");
    Tally{what + " dx", type}.all(dx, [&](size_t i) {
      const size_t r = i / cols;
      float d = 0;
      for (int j = 0; j < cols; j++) d += getf(g, r * cols + j) * getf(y, r * cols + j);
      return rnd(type, softmax_dx(getf(y, i), getf(g, i), d));
    });
  }
}

TEST(GpuHalfModel, CrossEntropiesMatchCpuRef) {
  std::mt19937 rng(1931);
  const int rows = 6, cols = 41;
  const float trim0 = 0.05f, trim1 = 0.9f;
  for (int type : kTypes)
    for (int dense = 0; dense < 2; dense++) {
      // Class indices of another type than the rows (CPU_REF takes 32S or any float type).
      const int ltype = dense ? type : (type == CCV_16F ? CCV_16BF : CCV_32S);
      const std::string what = std::string(tname(type)) + (dense ? " dense labels" : " class indices");
      Tensor z = make(type, {rows, cols}), lab = dense ? make(type, {rows, cols}) : make(ltype, {rows});
      fill(z, rng, -5, 5);
      if (dense) {
        fill(lab, rng, 0, 1);
      } else {
        std::uniform_int_distribution<int> c(0, cols - 1);
        for (int r = 0; r < rows; r++) set(lab, r, c(rng));
      }
      // t_j in float, as the kernels form it.
      auto target = [&](size_t r, int j) {
        if (dense) return smoothed_target(trim0, trim1, getf(lab, r * cols + j));
        return static_cast<int>(get(lab, r)) == j ? trim1 : trim0;
      };
      ccv_nnc_cmd_t f = cmd_of(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD),
                    bw = cmd_of(CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD);
      f.info.label_smoothing.trim0 = bw.info.label_smoothing.trim0 = trim0;
      f.info.label_smoothing.trim1 = bw.info.label_smoothing.trim1 = trim1;
      Tensor loss = make(type, {rows, 1}), s = make(type, {rows, cols});
      run_ref(f, {z.get(), lab.get()}, {loss.get(), s.get()}, "SOFTMAX_CROSSENTROPY " + what);
      Tally{"SOFTMAX_CROSSENTROPY " + what + " loss", type}.all(loss, [&](size_t r) {
        float m, sum;
        row_stats(z, r, cols, &m, &sum);
        float l = 0;
        for (int j = 0; j < cols; j++) l += sce_loss_term(target(r, j), getf(z, r * cols + j), m, std::log(sum));
        return rnd(type, l);
      });
      Tally{"SOFTMAX_CROSSENTROPY " + what + " softmax", type}.all(s, [&](size_t i) {
        float m, sum;
        row_stats(z, i / cols, cols, &m, &sum);
        return rnd(type, softmax_value(getf(z, i), m, sum));
      });
      Tensor g = make(type, {rows, 1}), gs = make(type, {rows, cols}), dz = make(type, {rows, cols});
      fill(g, rng, 0.5, 1.5);
      fill(gs, rng, -0.5, 0.5);
      run_ref(bw, {g.get(), gs.get(), z.get(), lab.get(), loss.get(), s.get()}, {dz.get()},
              "SOFTMAX_CROSSENTROPY backward " + what);
      Tally{"SOFTMAX_CROSSENTROPY " + what + " d logits", type}.all(dz, [&](size_t i) {
        const size_t r = i / cols;
        float tot = 0, d = 0;
        if (dense)
          for (int j = 0; j < cols; j++) tot += target(r, j);
        else
          tot = trim1 + static_cast<float>(cols - 1) * trim0;
        for (int j = 0; j < cols; j++) d += getf(gs, r * cols + j) * getf(s, r * cols + j);
        return rnd(type,
                   sce_dlogit(getf(g, r), getf(s, i), tot, target(r, static_cast<int>(i % cols)), getf(gs, i), d));
      });
      // CATEGORICAL_CROSSENTROPY on probabilities (the softmax just computed,
      // floored away from 0 so that no log clamps).
      ccv_nnc_cmd_t cf = cmd_of(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD),
                    cb = cmd_of(CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD);
      cf.info.label_smoothing.trim0 = cb.info.label_smoothing.trim0 = trim0;
      cf.info.label_smoothing.trim1 = cb.info.label_smoothing.trim1 = trim1;
      Tensor p = make(type, {rows, cols});
      fill(p, rng, 0.01, 1);
      run_ref(cf, {p.get(), lab.get()}, {loss.get()}, "CATEGORICAL_CROSSENTROPY " + what);
      Tally{"CATEGORICAL_CROSSENTROPY " + what + " loss", type}.all(loss, [&](size_t r) {
        float l = 0;
        for (int j = 0; j < cols; j++) l += cce_loss_term(target(r, j), getf(p, r * cols + j));
        return rnd(type, l);
      });
      Tensor dp = make(type, {rows, cols}), dl = make(type, {rows, cols});
      std::vector<ccv_nnc_tensor_t*> outs{dp.get()};
      if (dense) outs.push_back(dl.get());
      run_ref(cb, {g.get(), p.get(), lab.get()}, outs, "CATEGORICAL_CROSSENTROPY backward " + what);
      Tally{"CATEGORICAL_CROSSENTROPY " + what + " dp", type}.all(dp, [&](size_t i) {
        return rnd(type, cce_dp(getf(g, i / cols), target(i / cols, static_cast<int>(i % cols)), getf(p, i)));
      });
      if (dense)
        Tally{"CATEGORICAL_CROSSENTROPY " + what + " d labels", type}.all(
            dl, [&](size_t i) { return rnd(type, cce_dlabel(getf(g, i / cols), trim0, trim1, getf(p, i))); });
    }
}

// --- LAYER_NORM, RMSNORM, GROUP_NORM --------------------------------------------

enum NormKind { kLayer, kRms, kGroup };

// The norms' model over x [A, C, W] normalised per (a, group of channels):
// statistics in double from the loaded x, y and dx from gpu_norm.hpp's
// formulas in double, each output (and saved statistic) rounded once; the
// backward reads the saved statistics as stored. LAYER_NORM and RMSNORM
// normalise over axes {1, 2} (one group of all C and W; scale and bias [C, W];
// RMSNORM without mean or bias), GROUP_NORM over 2 groups of C / 2 channels
// and W (scale and bias [1, C, 1]).
void check_norm(int type, NormKind kind, std::mt19937& rng) {
  const bool rms = kind == kRms, per_channel = kind == kGroup;
  const int A = 3, C = 6, W = 5, G = per_channel ? 2 : 1, cg = C / G, n = cg * W;
  const std::string what = std::string(kind == kLayer ? "LAYER_NORM " : rms ? "RMSNORM " : "GROUP_NORM ") + tname(type);
  const float eps = 1e-5f;
  const std::vector<int> sdim = per_channel ? std::vector<int>{1, C, 1} : std::vector<int>{C, W};
  Tensor x = make(type, {A, C, W}), y = make(type, {A, C, W}), scale = make(type, sdim), bias = make(type, sdim);
  Tensor mean = make(type, {A, G, 1}), inv = make(type, {A, G, 1});
  fill(x, rng, -2, 2);
  fill(scale, rng, 0.5, 1.5);
  fill(bias, rng, -0.5, 0.5);
  ccv_nnc_cmd_t f, bw;
  if (rms) {
    f = cmd_of(CCV_NNC_RMSNORM_FORWARD), bw = cmd_of(CCV_NNC_RMSNORM_BACKWARD);
    for (ccv_nnc_cmd_t* c : {&f, &bw}) {
      c->info.rmsnorm.count = 2, c->info.rmsnorm.axis[0] = 1, c->info.rmsnorm.axis[1] = 2;
      c->info.rmsnorm.epsilon = eps;
    }
    run_ref(f, {x.get(), scale.get()}, {y.get(), inv.get()}, what);
  } else if (kind == kLayer) {
    f = cmd_of(CCV_NNC_LAYER_NORM_FORWARD), bw = cmd_of(CCV_NNC_LAYER_NORM_BACKWARD);
    for (ccv_nnc_cmd_t* c : {&f, &bw}) {
      c->info.lnorm.count = 2, c->info.lnorm.axis[0] = 1, c->info.lnorm.axis[1] = 2;
      c->info.lnorm.epsilon = eps, c->info.lnorm.elementwise_affine = 1;
    }
    run_ref(f, {x.get(), scale.get(), bias.get()}, {y.get(), mean.get(), inv.get()}, what);
  } else {
    f = cmd_of(CCV_NNC_GROUP_NORM_FORWARD), bw = cmd_of(CCV_NNC_GROUP_NORM_BACKWARD);
    for (ccv_nnc_cmd_t* c : {&f, &bw}) {
      c->info.gnorm.group_axis = 1, c->info.gnorm.groups = G, c->info.gnorm.epsilon = eps;
      c->info.gnorm.reduce_count = 1, c->info.gnorm.reduce_axis[0] = 2, c->info.gnorm.elementwise_affine = 1;
    }
    run_ref(f, {x.get(), scale.get(), bias.get()}, {y.get(), mean.get(), inv.get()}, what);
  }
  auto xi = [&](int a, int c, int w) { return static_cast<size_t>((a * C + c) * W + w); };
  auto si = [&](int c, int w) { return static_cast<size_t>(per_channel ? c : c * W + w); };
  std::vector<double> mmean(A * G), minv(A * G), my(count(x));
  for (int a = 0; a < A; a++)
    for (int k = 0; k < G; k++) {
      double s = 0, v = 0;
      if (!rms)
        for (int c = k * cg; c < (k + 1) * cg; c++)
          for (int w = 0; w < W; w++) s += get(x, xi(a, c, w));
      const double mu = rms ? 0.0 : s / n;
      for (int c = k * cg; c < (k + 1) * cg; c++)
        for (int w = 0; w < W; w++) v += (get(x, xi(a, c, w)) - mu) * (get(x, xi(a, c, w)) - mu);
      const double iv = 1.0 / std::sqrt(v / n + static_cast<double>(eps));
      mmean[a * G + k] = rnd(type, mu), minv[a * G + k] = rnd(type, iv);
      for (int c = k * cg; c < (k + 1) * cg; c++)
        for (int w = 0; w < W; w++)
          my[xi(a, c, w)] =
              rnd(type, norm_y(get(x, xi(a, c, w)), mu, iv, get(scale, si(c, w)), rms ? 0.0 : get(bias, si(c, w))));
    }
  Tally{what + " y", type}.all(y, [&](size_t i) { return my[i]; });
  Tally{what + " saved_inv_std", type}.all(inv, [&](size_t i) { return minv[i]; });
  if (!rms) Tally{what + " saved_mean", type}.all(mean, [&](size_t i) { return mmean[i]; });
  // Backward from the stored statistics.
  Tensor g = make(type, {A, C, W}), dx = make(type, {A, C, W}), ds = make(type, sdim), db = make(type, sdim);
  fill(g, rng, -1, 1);
  if (rms)
    run_ref(bw, {g.get(), nullptr, x.get(), scale.get(), y.get(), inv.get()}, {dx.get(), ds.get()}, what + " backward");
  else
    run_ref(bw, {g.get(), nullptr, nullptr, x.get(), scale.get(), bias.get(), y.get(), mean.get(), inv.get()},
            {dx.get(), ds.get(), db.get()}, what + " backward");
  std::vector<double> mdx(count(x)), mds(count(ds), 0.0), mdb(count(db), 0.0);
  for (int a = 0; a < A; a++)
    for (int k = 0; k < G; k++) {
      const double mu = rms ? 0.0 : get(mean, static_cast<size_t>(a * G + k));
      const double iv = get(inv, static_cast<size_t>(a * G + k));
      double sh = 0, shx = 0;
      for (int c = k * cg; c < (k + 1) * cg; c++)
        for (int w = 0; w < W; w++) {
          const double h = get(g, xi(a, c, w)) * get(scale, si(c, w)), xh = (get(x, xi(a, c, w)) - mu) * iv;
          sh += h, shx += h * xh;
          mds[si(c, w)] += get(g, xi(a, c, w)) * xh;
          mdb[si(c, w)] += get(g, xi(a, c, w));
        }
      for (int c = k * cg; c < (k + 1) * cg; c++)
        for (int w = 0; w < W; w++) {
          const double h = get(g, xi(a, c, w)) * get(scale, si(c, w)), xh = (get(x, xi(a, c, w)) - mu) * iv;
          mdx[xi(a, c, w)] = rnd(type, norm_dx(iv, h, rms ? 0.0 : sh / n, xh, shx / n));
        }
    }
  Tally{what + " dx", type}.all(dx, [&](size_t i) { return mdx[i]; });
  Tally{what + " dscale", type}.all(ds, [&](size_t i) { return rnd(type, mds[i]); });
  if (!rms) Tally{what + " dbias", type}.all(db, [&](size_t i) { return rnd(type, mdb[i]); });
}

TEST(GpuHalfModel, NormsMatchCpuRef) {
  std::mt19937 rng(1949);
  for (int type : kTypes)
    for (NormKind k : {kLayer, kRms, kGroup}) check_norm(type, k, rng);
}

}  // namespace
