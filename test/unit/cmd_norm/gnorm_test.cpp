// GROUP_NORM and RMSNORM against references written here (fp64), finite
// differences, and CPU_REF; libnnc's contract from its description file.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "norm_easy.h"

using namespace cmdtest;

namespace {

class GroupNorm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};
using RmsNorm = GroupNorm;

constexpr int NHWC = CCV_TENSOR_FORMAT_NHWC, NCHW = CCV_TENSOR_FORMAT_NCHW;
constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;

ccv_nnc_cmd_t gnorm(uint32_t id, int group_axis, int groups, std::vector<int> reduce, float eps, int affine,
                    uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.gnorm.group_axis = group_axis;
  p.gnorm.groups = groups;
  p.gnorm.reduce_count = static_cast<int>(reduce.size());
  for (size_t i = 0; i < reduce.size(); i++) p.gnorm.reduce_axis[i] = reduce[i];
  p.gnorm.epsilon = eps;
  p.gnorm.elementwise_affine = affine;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

ccv_nnc_cmd_t rms(uint32_t id, std::vector<int> axes, float eps, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.rmsnorm.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) p.rmsnorm.axis[i] = axes[i];
  p.rmsnorm.epsilon = eps;
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

struct GnCase {
  std::vector<int> dims;
  int group_axis, groups;
  std::vector<int> reduce;
  int format;
  bool opt;  // CPU_OPT takes this layout (kept axes first, the reduced ones after)
};

const GnCase kGnCases[] = {
    {{3, 6, 4, 5}, 1, 3, {2, 3}, NCHW, true},   // NCHW images
    {{2, 4, 5, 6}, 3, 2, {1, 2}, NHWC, true},   // NHWC images
    {{4, 6}, 1, 3, {}, NHWC, true},             // no reduce axes: over each group's channels
    {{2, 3, 8, 5}, 2, 4, {1, 3}, NHWC, true},   // reduced axes on both sides of the channels
    {{4, 3, 5}, 0, 2, {2}, NHWC, false},        // a kept axis after the channels: CPU_REF only
    {{2, 6, 3}, 1, 6, {2}, NCHW, true},         // one channel per group (instance norm)
    {{2, 6, 3}, 1, 1, {2}, NCHW, true},         // one group (layer norm over C x rest)
};

std::vector<int> channel_shape(const GnCase& c) {
  std::vector<int> d(c.dims.size(), 1);
  d[c.group_axis] = c.dims[c.group_axis];
  return d;
}
std::vector<int> stats_shape(const GnCase& c) {
  std::vector<int> d = c.dims;
  d[c.group_axis] = c.groups;
  for (int a : c.reduce) d[a] = 1;
  return d;
}

// Independent indexing: for each element (row-major), its statistics index
// (row-major over stats_shape) and channel.
struct GnIndex {
  std::vector<size_t> stat, channel;
  size_t stats = 1, size = 1;
};
GnIndex gn_index(const GnCase& c) {
  GnIndex r;
  const std::vector<int> sd = stats_shape(c);
  for (int d : sd) r.stats *= static_cast<size_t>(d);
  size_t count = 1;
  for (int d : c.dims) count *= static_cast<size_t>(d);
  r.size = count / r.stats;
  const int cg = c.dims[c.group_axis] / c.groups;
  std::vector<int> idx(c.dims.size());
  for (size_t lin = 0; lin < count; lin++) {
    size_t rem = lin;
    for (int i = static_cast<int>(c.dims.size()) - 1; i >= 0; i--)
      idx[i] = static_cast<int>(rem % c.dims[i]), rem /= c.dims[i];
    size_t k = 0;
    for (size_t i = 0; i < c.dims.size(); i++) {
      int v = idx[i];
      if (static_cast<int>(i) == c.group_axis) v /= cg;
      if (sd[i] == 1) v = 0;
      k = k * static_cast<size_t>(sd[i]) + static_cast<size_t>(v);
    }
    r.stat.push_back(k);
    r.channel.push_back(static_cast<size_t>(idx[c.group_axis]));
  }
  return r;
}

struct GnStats {
  std::vector<double> mean, var;
};
GnStats gn_stats(const T& x, const GnIndex& ix) {
  GnStats s;
  s.mean.assign(ix.stats, 0), s.var.assign(ix.stats, 0);
  for (size_t i = 0; i < x.count(); i++) s.mean[ix.stat[i]] += x.get(i) / static_cast<double>(ix.size);
  for (size_t i = 0; i < x.count(); i++) {
    const double d = x.get(i) - s.mean[ix.stat[i]];
    s.var[ix.stat[i]] += d * d / static_cast<double>(ix.size);
  }
  return s;
}

TEST_F(GroupNorm, ForwardMatchesReference) {
  std::mt19937 rng(101);
  for (uint32_t backend : {0u, REF, OPT})
    for (int dt : {CCV_32F, CCV_64F})
      for (const GnCase& c : kGnCases)
        for (int affine : {0, 1}) {
          if (backend == OPT && !c.opt) continue;
          const bool view = (c.dims.size() + affine + dt) % 2 == 1;
          T x = view ? T::view(dt, c.dims, c.format) : T(dt, c.dims, c.format);
          T y = view ? T::view(dt, c.dims, c.format) : T(dt, c.dims, c.format);
          T scale(dt, channel_shape(c), c.format), bias(dt, channel_shape(c), c.format);
          T sm(dt, stats_shape(c), c.format), si = T::view(dt, stats_shape(c), c.format);
          fill_uniform(x, rng, -2, 4), fill_uniform(scale, rng, 0.5, 2), fill_uniform(bias, rng);
          std::vector<ccv_nnc_tensor_t*> in = {x};
          if (affine) in = {x, scale, bias};
          ASSERT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, c.group_axis, c.groups, c.reduce, 1e-4f, affine, backend), in,
                        {y, sm, si}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          const GnIndex ix = gn_index(c);
          const GnStats s = gn_stats(x, ix);
          const double tol = dt == CCV_32F ? 2e-5 : 1e-12;
          for (size_t k = 0; k < ix.stats; k++) {
            EXPECT_NEAR(sm.get(k), s.mean[k], tol) << k;
            EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k] + double(1e-4f)), tol * 10) << k;
          }
          for (size_t i = 0; i < x.count(); i++) {
            const size_t k = ix.stat[i], ch = ix.channel[i];
            double want = (x.get(i) - s.mean[k]) / std::sqrt(s.var[k] + double(1e-4f));
            if (affine) want = want * scale.get(ch) + bias.get(ch);
            ASSERT_NEAR(y.get(i), want, tol * 10 * std::max(1.0, std::fabs(want))) << "element " << i;
          }
          EXPECT_TRUE(y.guard_intact());
          EXPECT_TRUE(si.guard_intact());
        }
}

TEST_F(GroupNorm, ScaleAsAPlainChannelVectorAndNullParameters) {
  // scale / bias may be [C] instead of x's shape with 1s; a NULL scale is 1 and a NULL bias 0.
  std::mt19937 rng(102);
  const GnCase c = kGnCases[0];
  for (uint32_t backend : {REF, OPT}) {
    T x(CCV_32F, c.dims, NCHW), y1(CCV_32F, c.dims, NCHW), y2(CCV_32F, c.dims, NCHW), y3(CCV_32F, c.dims, NCHW);
    T s4(CCV_32F, channel_shape(c), NCHW), s1(CCV_32F, {6}), b1(CCV_32F, {6});
    fill_uniform(x, rng), fill_uniform(s1, rng), fill_uniform(b1, rng);
    for (int i = 0; i < 6; i++) s4.set(i, s1.get(i));
    const ccv_nnc_cmd_t f = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-5f, 1, backend);
    ASSERT_EQ(run(f, {x, s1, b1}, {y1}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(f, {x, s4, b1}, {y2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(max_rel_diff(y1, y2), 0);
    ASSERT_EQ(run(f, {x, nullptr, nullptr}, {y3}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-5f, 0, backend), {x}, {y2}),
              CCV_NNC_EXEC_SUCCESS);
    EXPECT_EQ(max_rel_diff(y3, y2), 0);
  }
}

TEST_F(GroupNorm, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(103);
  const GnCase cases[] = {{{2, 4, 2, 3}, 1, 2, {2, 3}, NCHW, true},
                          {{2, 2, 3, 4}, 3, 2, {1, 2}, NHWC, true},
                          {{3, 6}, 1, 3, {}, NHWC, true},
                          {{2, 2, 4, 3}, 2, 2, {1, 3}, NHWC, true},
                          {{2, 4, 3}, 0, 2, {2}, NHWC, false}};
  for (uint32_t backend : {REF, OPT})
    for (const GnCase& c : cases)
      for (int affine : {0, 1}) {
        if (backend == OPT && !c.opt) continue;
        const std::vector<int> cs = channel_shape(c), ss = stats_shape(c);
        T x(CCV_64F, c.dims, c.format), scale(CCV_64F, cs, c.format), bias(CCV_64F, cs, c.format);
        fill_uniform(x, rng, -2, 2), fill_uniform(scale, rng, 0.5, 2), fill_uniform(bias, rng);
        std::vector<T*> in = {&x};
        std::vector<bool> diff = {true};
        if (affine) in = {&x, &scale, &bias}, diff = {true, true, true};
        const ccv_nnc_cmd_t f =
            gnorm(CCV_NNC_GROUP_NORM_FORWARD, c.group_axis, c.groups, c.reduce, 1e-3f, affine, backend);
        const ccv_nnc_cmd_t b =
            gnorm(CCV_NNC_GROUP_NORM_BACKWARD, c.group_axis, c.groups, c.reduce, 1e-3f, affine, backend);
        expect_gradients_match_some(f, b, ccv_nnc_no_hint, in, {c.dims, ss, ss}, {true, false, false}, diff, rng, 1e-6,
                                    1e-6, c.format);
      }
}

// A training round (forward, then backward from g) on one backend: y, saved
// statistics, dx, dscale, dbias as doubles.
std::vector<std::vector<double>> gn_round(const GnCase& c, uint32_t backend, bool view, int dt, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<int> cs = channel_shape(c), ss = stats_shape(c);
  T x = view ? T::view(dt, c.dims, c.format, 1) : T(dt, c.dims, c.format);
  T g = view ? T::view(dt, c.dims, c.format, 1) : T(dt, c.dims, c.format);
  T y = view ? T::view(dt, c.dims, c.format, 2) : T(dt, c.dims, c.format);
  T dx = view ? T::view(dt, c.dims, c.format, 2) : T(dt, c.dims, c.format);
  T scale(dt, cs, c.format), bias(dt, cs, c.format), sm(dt, ss, c.format), si(dt, ss, c.format);
  T ds(dt, cs, c.format), db(dt, cs, c.format);
  fill_uniform(x, rng, -1, 3), fill_uniform(g, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, c.group_axis, c.groups, c.reduce, 1e-5f, 1, backend),
                {x, scale, bias}, {y, sm, si}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_BACKWARD, c.group_axis, c.groups, c.reduce, 1e-5f, 1, backend),
                {g, nullptr, nullptr, x, scale, bias, y, sm, si}, {dx, ds, db}),
            CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_TRUE(y.guard_intact());
  EXPECT_TRUE(dx.guard_intact());
  std::vector<std::vector<double>> out;
  for (const T* t : {&y, &sm, &si, &dx, &ds, &db}) {
    out.emplace_back();
    for (size_t i = 0; i < t->count(); i++) out.back().push_back(t->get(i));
  }
  return out;
}

void expect_close(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); j++) {
    ASSERT_EQ(a[j].size(), b[j].size());
    for (size_t i = 0; i < a[j].size(); i++)
      ASSERT_NEAR(a[j][i], b[j][i], tol * std::max(1.0, std::fabs(b[j][i]))) << "tensor " << j << " element " << i;
  }
}

TEST_F(GroupNorm, OptAgreesWithRefOnOddViewsAndThreadedShapes) {
  const GnCase cases[] = {
      {{3, 10, 7, 9}, 1, 5, {2, 3}, NCHW, true},
      {{2, 9, 11, 12}, 3, 4, {1, 2}, NHWC, true},
      {{5, 7, 3, 6}, 2, 3, {1, 3}, NHWC, true},
      {{7, 15}, 1, 5, {}, NHWC, true},
      // Threaded: the NCHW runs split by (n, channel), the NHWC rows by parts with partial sums.
      {{2, 64, 32, 33}, 1, 32, {2, 3}, NCHW, true},
      {{4, 24, 25, 96}, 3, 32, {1, 2}, NHWC, true},
      {{1, 40, 40, 320}, 3, 32, {1, 2}, NHWC, true},
      {{1, 320, 24, 24}, 1, 32, {2, 3}, NCHW, true},
  };
  uint32_t seed = 110;
  for (const GnCase& c : cases)
    for (int dt : {CCV_32F, CCV_64F}) {
      const double tol = dt == CCV_32F ? 5e-4 : 1e-10;
      const auto ref = gn_round(c, REF, false, dt, seed);
      expect_close(gn_round(c, OPT, false, dt, seed), ref, tol);
      expect_close(gn_round(c, OPT, true, dt, seed), ref, tol);  // views of x, g, y, dx
      seed++;
    }
}

TEST_F(GroupNorm, LargeMeanSmallVarianceKeepsItsDigits) {
  std::mt19937 rng(104);
  const GnCase cases[] = {{{4, 8, 9, 9}, 1, 4, {2, 3}, NCHW, true}, {{4, 9, 9, 8}, 3, 4, {1, 2}, NHWC, true}};
  for (uint32_t backend : {REF, OPT})
    for (const GnCase& c : cases) {
      T x(CCV_32F, c.dims, c.format), y(CCV_32F, c.dims, c.format), si(CCV_32F, stats_shape(c), c.format);
      for (size_t i = 0; i < x.count(); i++) x.set(i, 10000 + std::uniform_real_distribution<double>(-1e-2, 1e-2)(rng));
      ASSERT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, c.group_axis, c.groups, c.reduce, 0, 0, backend), {x},
                    {y, nullptr, si}),
                CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      const GnIndex ix = gn_index(c);
      const GnStats s = gn_stats(x, ix);
      for (size_t k = 0; k < ix.stats; k++)
        EXPECT_NEAR(si.get(k), 1 / std::sqrt(s.var[k]), 1e-3 / std::sqrt(s.var[k])) << k;
      double worst = 0;
      for (size_t i = 0; i < x.count(); i++)
        worst = std::max(worst, std::fabs(y.get(i) - (x.get(i) - s.mean[ix.stat[i]]) / std::sqrt(s.var[ix.stat[i]])));
      EXPECT_LT(worst, 2e-3);
    }
}

TEST_F(GroupNorm, InPlaceStreamsAndHalfPrecision) {
  std::mt19937 rng(105);
  ccv_nnc_stream_context_t* stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  ASSERT_NE(stream, nullptr);
  for (uint32_t backend : {REF, OPT}) {
    const std::vector<int> dims = {3, 8, 5, 7};
    T x(CCV_32F, dims, NCHW), y(CCV_32F, dims, NCHW), scale(CCV_32F, {8}), bias(CCV_32F, {8});
    fill_uniform(x, rng), fill_uniform(scale, rng), fill_uniform(bias, rng);
    const ccv_nnc_cmd_t f = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 4, {2, 3}, 1e-5f, 1, backend);
    ccv_nnc_tensor_t* in[] = {x, scale, bias};
    ccv_nnc_tensor_t* out[] = {y};
    ASSERT_EQ(ccv_nnc_cmd_exec(f, ccv_nnc_no_hint, 0, in, 3, out, 1, stream), CCV_NNC_EXEC_SUCCESS);
    ccv_nnc_stream_context_wait(stream);
    ASSERT_EQ(run(f, {x, scale, bias}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();  // y = x
    for (size_t i = 0; i < x.count(); i++) ASSERT_NEAR(x.get(i), y.get(i), 1e-6);
  }
  ccv_nnc_stream_context_free(stream);
  for (int dt : {CCV_16F, CCV_16BF}) {
    const GnCase c = kGnCases[0];
    T x(dt, c.dims, NCHW), y(dt, c.dims, NCHW);
    fill_random(x, rng);
    ASSERT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-3f, 0), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    const GnIndex ix = gn_index(c);
    const GnStats s = gn_stats(x, ix);
    for (size_t i = 0; i < x.count(); i++) {
      const double want = (x.get(i) - s.mean[ix.stat[i]]) / std::sqrt(s.var[ix.stat[i]] + double(1e-3f));
      EXPECT_NEAR(y.get(i), want, (dt == CCV_16F ? 2e-3 : 2e-2) * std::max(1.0, std::fabs(want)));
    }
  }
}

// libnnc's description file, rule by rule: tensor_auto, bitmask, no in-place pair.
TEST_F(GroupNorm, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  ccv_nnc_tensor_param_t in[9] = {}, out[3];
  in[0] = param(CCV_32F, {8, 6, 5, 5}, NCHW);
  // Forward: y like x; the saved statistics x with the group axis of extent G and the reduce axes 1.
  ccv_nnc_hint_tensor_auto(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-5f, 1), in, 3, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{8, 3, 1, 1, 0}));
  EXPECT_EQ(dims(out[2]), (std::vector<int>{8, 3, 1, 1, 0}));
  EXPECT_EQ(out[1].format, NCHW);
  // NHWC, group axis 3, reduce axis 1 only.
  in[0] = param(CCV_64F, {2, 4, 5, 6}, NHWC);
  ccv_nnc_hint_tensor_auto(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 3, 2, {1}, 1e-5f, 0), in, 1, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 1, 5, 2, 0}));
  EXPECT_EQ(out[2].datatype, CCV_64F);
  // Backward: shapes from g (input 0); dscale / dbias get the statistics' shape by libnnc's rule.
  in[0] = param(CCV_32F, {8, 6, 5, 5}, NCHW);
  ccv_nnc_hint_tensor_auto(gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 3, {2, 3}, 1e-5f, 1), in, 9, ccv_nnc_no_hint, out, 3);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{8, 6, 5, 5, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{8, 3, 1, 1, 0}));
  EXPECT_EQ(dims(out[2]), (std::vector<int>{8, 3, 1, 1, 0}));

  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t fa = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-5f, 1),
                      fp = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 3}, 1e-5f, 0);
  EXPECT_TRUE(bm(fa, 3, 7, 3, 7));
  EXPECT_TRUE(bm(fa, 3, 7, 1, 1));
  EXPECT_FALSE(bm(fa, 3, 1, 3, 7));
  EXPECT_FALSE(bm(fa, 3, 3, 3, 7));
  EXPECT_FALSE(bm(fa, 3, 7, 3, 3));
  EXPECT_TRUE(bm(fp, 1, 1, 3, 7));
  EXPECT_TRUE(bm(fp, 1, 1, 1, 1));
  EXPECT_FALSE(bm(fp, 3, 7, 3, 7));
  EXPECT_FALSE(bm(fp, 1, 1, 3, 5));
  const ccv_nnc_cmd_t ba = gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 3, {2, 3}, 1e-5f, 1),
                      bp = gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 3, {2, 3}, 1e-5f, 0);
  const uint64_t affine_need = 1u | (1u << 3) | (1u << 4) | (1u << 7) | (1u << 8);  // 409
  EXPECT_EQ(affine_need, 409u);
  for (uint64_t o : {7u, 5u, 3u, 1u}) EXPECT_TRUE(bm(ba, 9, affine_need, 3, o)) << o;
  EXPECT_TRUE(bm(ba, 9, 0x1ff, 3, 7));
  EXPECT_FALSE(bm(ba, 9, affine_need, 3, 6));
  for (int i : {0, 3, 4, 7, 8}) EXPECT_FALSE(bm(ba, 9, affine_need & ~(1ull << i), 3, 7)) << i;
  const uint64_t plain_need = 1u | (1u << 3) | (1u << 5) | (1u << 6);  // 105
  EXPECT_EQ(plain_need, 105u);
  EXPECT_TRUE(bm(bp, 7, plain_need, 1, 1));
  EXPECT_FALSE(bm(bp, 7, plain_need, 3, 3));  // exactly dx
  for (int i : {0, 3, 5, 6}) EXPECT_FALSE(bm(bp, 7, plain_need & ~(1ull << i), 1, 1)) << i;
  for (const ccv_nnc_cmd_t& c : {fa, fp, ba, bp})
    for (int i = 0; i < 9; i++)
      for (int o = 0; o < 3; o++) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 9, o, 3)) << i << o;
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 9, o, 3)) << i << o;
      }

  // The backward in libnnc's slots (affine and plain), dx against the closed form.
  std::mt19937 rng(106);
  for (int affine : {1, 0}) {
    T x(CCV_64F, {2, 4, 3}, NCHW), y(CCV_64F, {2, 4, 3}, NCHW), g(CCV_64F, {2, 4, 3}, NCHW);
    T dx(CCV_64F, {2, 4, 3}, NCHW), s(CCV_64F, {1, 4, 1}, NCHW), b(CCV_64F, {1, 4, 1}, NCHW);
    T sm(CCV_64F, {2, 2, 1}, NCHW), si(CCV_64F, {2, 2, 1}, NCHW);
    T ds(CCV_64F, {1, 4, 1}, NCHW), db(CCV_64F, {1, 4, 1}, NCHW);
    fill_uniform(x, rng), fill_uniform(s, rng, 0.5, 2), fill_uniform(b, rng), fill_uniform(g, rng);
    const ccv_nnc_cmd_t f = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 2, {2}, 1e-5f, affine);
    const ccv_nnc_cmd_t bw = gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 2, {2}, 1e-5f, affine);
    if (affine) {
      ASSERT_EQ(run(f, {x, s, b}, {y, sm, si}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(bw, {g, nullptr, nullptr, x, s, b, y, sm, si}, {dx, ds, db}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
    } else {
      ASSERT_EQ(run(f, {x}, {y, sm, si}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      ASSERT_EQ(run(bw, {g, nullptr, nullptr, x, y, sm, si}, {dx}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    }
    for (int n = 0; n < 2; n++)
      for (int gr = 0; gr < 2; gr++) {
        double m = 0, v = 0, mh = 0, mhx = 0;
        auto at = [&](int c, int i) { return static_cast<size_t>((n * 4 + c) * 3 + i); };
        for (int c = 2 * gr; c < 2 * gr + 2; c++)
          for (int i = 0; i < 3; i++) m += x.get(at(c, i)) / 6;
        for (int c = 2 * gr; c < 2 * gr + 2; c++)
          for (int i = 0; i < 3; i++) v += (x.get(at(c, i)) - m) * (x.get(at(c, i)) - m) / 6;
        const double inv = 1 / std::sqrt(v + double(1e-5f));
        for (int c = 2 * gr; c < 2 * gr + 2; c++)
          for (int i = 0; i < 3; i++) {
            const double h = g.get(at(c, i)) * (affine ? s.get(c) : 1.0);
            mh += h / 6, mhx += h * (x.get(at(c, i)) - m) * inv / 6;
          }
        for (int c = 2 * gr; c < 2 * gr + 2; c++)
          for (int i = 0; i < 3; i++) {
            const double h = g.get(at(c, i)) * (affine ? s.get(c) : 1.0);
            const double xhat = (x.get(at(c, i)) - m) * inv;
            EXPECT_NEAR(dx.get(at(c, i)), inv * (h - mh - xhat * mhx), 1e-9);
          }
      }
  }
}

TEST_F(GroupNorm, BadInputFailsWithAMessage) {
  T x(CCV_32F, {2, 6, 4}, NCHW), y(CCV_32F, {2, 6, 4}, NCHW), c6(CCV_32F, {6}), c4(CCV_32F, {4});
  T st(CCV_32F, {2, 3, 1}, NCHW), st2(CCV_32F, {2, 2, 1}, NCHW), c6d(CCV_64F, {6}), y5(CCV_32F, {2, 6, 5}, NCHW);
  T xi(CCV_32S, {2, 6, 4}, NCHW), yi(CCV_32S, {2, 6, 4}, NCHW);
  const ccv_nnc_cmd_t f = gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2}, 1e-5f, 1);
  EXPECT_EQ(run(f, {x, c6, c6}, {y, st, st}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 4, {2}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("groups")) << ccv_nnc_error_message();
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 0, {2}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 3, 3, {2}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("group_axis")) << ccv_nnc_error_message();
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {1}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("group axis")) << ccv_nnc_error_message();
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2, 2}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {5}, 1e-5f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2}, -1.f, 1), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c4, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("scale")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, c6d, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c6, c6}, {y, st2, st}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("saved_mean")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, c6, c6}, {y5}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {nullptr, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c6, c6}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {xi, nullptr, nullptr}, {yi}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_FORWARD, 1, 3, {2}, 1e-5f, 0), {x, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c6, c6, c6}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, c6, c6}, {y, st, st, st}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t b = gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 3, {2}, 1e-5f, 1);
  T dx(CCV_32F, {2, 6, 4}, NCHW);
  EXPECT_EQ(run(b, {y, nullptr, nullptr, x, c6, c6, y, st, st}, {dx, c6, c6}), CCV_NNC_EXEC_SUCCESS)
      << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, nullptr, nullptr, x, c6, c6, y, st, nullptr}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("saved_inv_std")) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, nullptr, nullptr, x, c6, c6, y}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, nullptr, nullptr, x, c6, c6, y, st, st}, {nullptr, nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y5, nullptr, nullptr, x, c6, c6, y, st, st}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, nullptr, nullptr, x, c6, c6, y, st, st}, {dx, c4}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(gnorm(CCV_NNC_GROUP_NORM_BACKWARD, 1, 3, {2}, 1e-5f, 0), {y, nullptr, nullptr, x, y, st, st}, {dx, c6}),
            CCV_NNC_EXEC_INVALID);
}

TEST_F(GroupNorm, EasyMacrosFromC) {
  const ccv_nnc_cmd_t f = nnc_test_gnorm_forward();
  EXPECT_EQ(f.cmd, CCV_NNC_GROUP_NORM_FORWARD);
  EXPECT_EQ(f.info.gnorm.group_axis, 1);
  EXPECT_EQ(f.info.gnorm.groups, 2);
  EXPECT_EQ(f.info.gnorm.elementwise_affine, 1);
  EXPECT_EQ(f.info.gnorm.reduce_count, 2);
  EXPECT_EQ(f.info.gnorm.reduce_axis[1], 3);
  EXPECT_FLOAT_EQ(f.info.gnorm.epsilon, 1e-5f);
  const ccv_nnc_cmd_t r = nnc_test_rmsnorm_forward();
  EXPECT_EQ(r.cmd, CCV_NNC_RMSNORM_FORWARD);
  EXPECT_EQ(r.info.rmsnorm.count, 1);
  EXPECT_EQ(r.info.rmsnorm.axis[0], 1);
  float y[8];
  ASSERT_EQ(nnc_test_gnorm_example(y), CCV_NNC_EXEC_SUCCESS);
  // Channels {0, 1} of the one image are 0 1 | 4 9: mean 3.5, variance 12.25.
  EXPECT_NEAR(y[0], -1.0, 1e-5);
  EXPECT_NEAR(y[3], 11.0 / 7.0, 1e-5);
  ASSERT_EQ(nnc_test_rmsnorm_example(y), CCV_NNC_EXEC_SUCCESS);
  // Row 0 is 0 1 4 9: mean square 24.5.
  EXPECT_NEAR(y[3], 9 / std::sqrt(24.5), 1e-5);
}

// RMSNORM.

struct RmsCase {
  std::vector<int> dims, axes;
  bool opt;
};

std::vector<int> normalised(std::vector<int> dims, const std::vector<int>& axes) {
  std::vector<bool> on(dims.size(), false);
  for (int a : axes) on[a] = true;
  for (size_t i = 0; i < dims.size(); i++)
    if (!on[i]) dims[i] = 1;
  return dims;
}
std::vector<int> kept(std::vector<int> dims, const std::vector<int>& axes) {
  for (int a : axes) dims[a] = 1;
  return dims;
}

TEST_F(RmsNorm, ForwardMatchesReference) {
  std::mt19937 rng(201);
  const RmsCase cases[] = {{{4, 5, 7}, {2}, true}, {{3, 4, 5}, {1, 2}, true}, {{6, 9}, {1}, true},
                           {{6, 9}, {0, 1}, true}, {{4, 5, 6}, {0}, false}, {{4, 5, 6}, {1}, false}};
  for (uint32_t backend : {0u, REF, OPT})
    for (int dt : {CCV_32F, CCV_64F})
      for (const RmsCase& c : cases)
        for (int with_scale : {0, 1}) {
          if (backend == OPT && !c.opt) continue;
          const bool view = (c.dims.size() + with_scale + dt) % 2 == 1;
          T x = view ? T::view(dt, c.dims) : T(dt, c.dims), y = view ? T::view(dt, c.dims) : T(dt, c.dims);
          T scale(dt, normalised(c.dims, c.axes)), si = T::view(dt, kept(c.dims, c.axes));
          fill_uniform(x, rng, -2, 3), fill_uniform(scale, rng, 0.5, 2);
          ASSERT_EQ(run(rms(CCV_NNC_RMSNORM_FORWARD, c.axes, 1e-4f, backend), {x, with_scale ? scale.get() : nullptr},
                        {y, si}),
                    CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          // Independent indexing: group over the kept axes, position over the normalised ones.
          std::vector<bool> on(c.dims.size(), false);
          for (int a : c.axes) on[a] = true;
          std::vector<size_t> grp(x.count()), pos(x.count());
          size_t groups = 1;
          for (size_t i = 0; i < c.dims.size(); i++)
            if (!on[i]) groups *= c.dims[i];
          std::vector<double> ms(groups, 0);
          std::vector<int> idx(c.dims.size());
          for (size_t lin = 0; lin < x.count(); lin++) {
            size_t rem = lin, gk = 0, pk = 0;
            for (int i = static_cast<int>(c.dims.size()) - 1; i >= 0; i--)
              idx[i] = static_cast<int>(rem % c.dims[i]), rem /= c.dims[i];
            for (size_t i = 0; i < c.dims.size(); i++) (on[i] ? pk : gk) = (on[i] ? pk : gk) * c.dims[i] + idx[i];
            grp[lin] = gk, pos[lin] = pk;
            ms[gk] += x.get(lin) * x.get(lin) * static_cast<double>(groups) / static_cast<double>(x.count());
          }
          const double tol = dt == CCV_32F ? 2e-5 : 1e-12;
          for (size_t k = 0; k < groups; k++) EXPECT_NEAR(si.get(k), 1 / std::sqrt(ms[k] + double(1e-4f)), tol * 10);
          for (size_t i = 0; i < x.count(); i++) {
            double want = x.get(i) / std::sqrt(ms[grp[i]] + double(1e-4f));
            if (with_scale) want *= scale.get(pos[i]);
            ASSERT_NEAR(y.get(i), want, tol * 10 * std::max(1.0, std::fabs(want))) << i;
          }
          EXPECT_TRUE(y.guard_intact());
          EXPECT_TRUE(si.guard_intact());
        }
}

TEST_F(RmsNorm, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(202);
  const RmsCase cases[] = {{{3, 2, 5}, {2}, true}, {{2, 3, 4}, {1, 2}, true}, {{4, 3, 2}, {0}, false}};
  for (uint32_t backend : {REF, OPT})
    for (const RmsCase& c : cases) {
      if (backend == OPT && !c.opt) continue;
      T x(CCV_64F, c.dims), scale(CCV_64F, normalised(c.dims, c.axes));
      fill_uniform(x, rng, -2, 2), fill_uniform(scale, rng, 0.5, 2);
      expect_gradients_match_some(rms(CCV_NNC_RMSNORM_FORWARD, c.axes, 1e-3f, backend),
                                  rms(CCV_NNC_RMSNORM_BACKWARD, c.axes, 1e-3f, backend), ccv_nnc_no_hint, {&x, &scale},
                                  {c.dims, kept(c.dims, c.axes)}, {true, false}, {true, true}, rng);
    }
}

TEST_F(RmsNorm, OptAgreesWithRefOnOddViewsAndThreadedShapes) {
  for (int dt : {CCV_32F, CCV_64F})
    for (const std::vector<int>& dims :
         {std::vector<int>{7, 13, 77}, std::vector<int>{64, 3, 768}, std::vector<int>{5, 1001}, std::vector<int>{3, 1}})
      for (int view : {0, 1}) {
        std::mt19937 rng(203);
        const std::vector<int> axes = {static_cast<int>(dims.size()) - 1};
        const std::vector<int> ss = normalised(dims, axes), ms = kept(dims, axes);
        T x = view ? T::view(dt, dims, NHWC, 1) : T(dt, dims), g = view ? T::view(dt, dims, NHWC, 1) : T(dt, dims);
        T scale(dt, ss);
        fill_uniform(x, rng, -1, 3), fill_uniform(g, rng), fill_uniform(scale, rng);
        const double tol = dt == CCV_32F ? 2e-4 : 1e-10;
        expect_backends_agree(rms(CCV_NNC_RMSNORM_FORWARD, axes, 1e-5f), ccv_nnc_no_hint, {x, scale}, {dims, ms}, dt,
                              OPT, tol);
        T y(dt, dims), si(dt, ms);
        ASSERT_EQ(run(rms(CCV_NNC_RMSNORM_FORWARD, axes, 1e-5f), {x, scale}, {y, si}), CCV_NNC_EXEC_SUCCESS);
        expect_backends_agree(rms(CCV_NNC_RMSNORM_BACKWARD, axes, 1e-5f), ccv_nnc_no_hint,
                              {g, nullptr, x, scale, y, si}, {dims, ss}, dt, OPT, tol);
        expect_backends_agree(rms(CCV_NNC_RMSNORM_BACKWARD, axes, 1e-5f), ccv_nnc_no_hint,
                              {g, nullptr, x, nullptr, y, si}, {dims, ss}, dt, OPT, tol);
      }
}

TEST_F(RmsNorm, LibnncContractAndInPlace) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  ccv_nnc_tensor_param_t in[6] = {}, out[2];
  in[0] = param(CCV_32F, {2, 7, 16});
  in[1] = param(CCV_32F, {16});
  ccv_nnc_hint_tensor_auto(rms(CCV_NNC_RMSNORM_FORWARD, {2}, 1e-5f), in, 2, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 7, 16, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 7, 1, 0}));
  ccv_nnc_hint_tensor_auto(rms(CCV_NNC_RMSNORM_FORWARD, {1, 2}, 1e-5f), in, 2, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 1, 1, 0}));
  // Backward: dx like g; dscale, by libnnc's rule, like the saved statistics.
  ccv_nnc_hint_tensor_auto(rms(CCV_NNC_RMSNORM_BACKWARD, {2}, 1e-5f), in, 6, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 7, 16, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 7, 1, 0}));

  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = rms(CCV_NNC_RMSNORM_FORWARD, {2}, 1e-5f), b = rms(CCV_NNC_RMSNORM_BACKWARD, {2}, 1e-5f);
  EXPECT_TRUE(bm(f, 2, 3, 2, 3));
  EXPECT_FALSE(bm(f, 2, 1, 2, 3));  // scale is required
  EXPECT_FALSE(bm(f, 2, 3, 2, 1));  // and so is saved_inv_std
  const uint64_t need = 1u | (1u << 2) | (1u << 3) | (1u << 5);  // 45
  EXPECT_EQ(need, 45u);
  EXPECT_TRUE(bm(b, 6, need, 2, 3));
  EXPECT_TRUE(bm(b, 6, need, 2, 1));
  EXPECT_TRUE(bm(b, 6, 63, 2, 1));
  EXPECT_FALSE(bm(b, 6, need, 2, 2));
  for (int i : {0, 2, 3, 5}) EXPECT_FALSE(bm(b, 6, need & ~(1ull << i), 2, 3)) << i;
  for (const ccv_nnc_cmd_t& c : {f, b})
    for (int i = 0; i < 6; i++)
      for (int o = 0; o < 2; o++) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 6, o, 2));
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 6, o, 2));
      }
  // y may still be x when a caller runs it so.
  std::mt19937 rng(204);
  for (uint32_t backend : {REF, OPT}) {
    T x(CCV_32F, {9, 31}), y(CCV_32F, {9, 31}), s(CCV_32F, {31}), si(CCV_32F, {9, 1});
    fill_uniform(x, rng), fill_uniform(s, rng);
    const ccv_nnc_cmd_t c = rms(CCV_NNC_RMSNORM_FORWARD, {1}, 1e-5f, backend);
    ASSERT_EQ(run(c, {x, s}, {y, si}), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(run(c, {x, s}, {x, si}), CCV_NNC_EXEC_SUCCESS);
    for (size_t i = 0; i < x.count(); i++) ASSERT_NEAR(x.get(i), y.get(i), 1e-6);
  }
}

TEST_F(RmsNorm, BadInputFailsWithAMessage) {
  T x(CCV_32F, {4, 6}), y(CCV_32F, {4, 6}), s(CCV_32F, {6}), s4(CCV_32F, {4});
  T si(CCV_32F, {4, 1}), si6(CCV_32F, {6, 1});
  T sd(CCV_64F, {6}), xi(CCV_32S, {4, 6}), yi(CCV_32S, {4, 6}), dx(CCV_32F, {4, 6});
  const ccv_nnc_cmd_t f = rms(CCV_NNC_RMSNORM_FORWARD, {1}, 1e-5f);
  EXPECT_EQ(run(f, {x, s}, {y, si}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, s4}, {y, si}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("scale")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x, sd}, {y, si}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, s}, {y, si6}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("saved_inv_std")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {nullptr, s}, {y, si}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, s}, {nullptr, si}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {xi, nullptr}, {yi}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, s, s}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(rms(CCV_NNC_RMSNORM_FORWARD, {2}, 1e-5f), {x, s}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(rms(CCV_NNC_RMSNORM_FORWARD, {}, 1e-5f), {x, s}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(rms(CCV_NNC_RMSNORM_FORWARD, {1}, NAN), {x, s}, {y}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t b = rms(CCV_NNC_RMSNORM_BACKWARD, {1}, 1e-5f);
  EXPECT_EQ(run(b, {y, nullptr, x, s, y, si}, {dx, s}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, nullptr, x, s, y, nullptr}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("saved_inv_std")) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {y, x, s, y, si}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, nullptr, x, s, y, si}, {nullptr, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {y, nullptr, x, s, y, si}, {dx, s4}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {s, nullptr, x, s, y, si}, {dx}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
