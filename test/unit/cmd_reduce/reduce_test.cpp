// The reduction family against references written here (double loops over
// the shape), finite differences, and CPU_REF.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"
#include "reduce_easy.h"

using namespace cmdtest;

namespace {

class Reduce : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t reduce_cmd(uint32_t id, std::vector<int> axes, uint32_t backend = 0) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) p.reduce.axis[i] = axes[i];
  ccv_nnc_cmd_t c = ccv_nnc_cmd(id, nullptr, p, 0);
  c.backend = backend;
  return c;
}

std::vector<int> reduced(std::vector<int> dims, const std::vector<int>& axes) {
  for (int a : axes) dims[a] = 1;
  return dims;
}

// Expected output of a reduction (op: 0 sum, 1 mean, 2 max, 3 min, 4 norm2) in row-major order.
std::vector<double> expected(const T& x, const std::vector<int>& dims, const std::vector<int>& axes, int op) {
  const std::vector<int> od = reduced(dims, axes);
  size_t on = 1;
  for (int d : od) on *= static_cast<size_t>(d);
  std::vector<double> acc(on, op == 2 ? -INFINITY : op == 3 ? INFINITY : 0.0);
  std::vector<size_t> cnt(on, 0);
  std::vector<int> idx(dims.size(), 0);
  for (size_t lin = 0; lin < x.count(); lin++) {
    size_t rem = lin;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; i--) {
      idx[i] = static_cast<int>(rem % dims[i]);
      rem /= dims[i];
    }
    size_t o = 0;
    for (size_t i = 0; i < dims.size(); i++) o = o * od[i] + (od[i] == 1 ? 0 : idx[i]);
    const double v = x.get(lin);
    cnt[o]++;
    if (op == 2)
      acc[o] = std::max(acc[o], v);
    else if (op == 3)
      acc[o] = std::min(acc[o], v);
    else if (op == 4)
      acc[o] += v * v;
    else
      acc[o] += v;
  }
  for (size_t o = 0; o < on; o++) {
    if (op == 1) acc[o] /= static_cast<double>(cnt[o]);
    if (op == 4) acc[o] = std::sqrt(acc[o]);
  }
  return acc;
}

const uint32_t kForward[] = {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD,
                             CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD};

struct Case {
  std::vector<int> dims, axes;
};
const Case kCases[] = {{{5, 7}, {0}},       {{5, 7}, {1}},       {{5, 7}, {0, 1}},
                       {{3, 4, 5}, {1}},    {{3, 4, 5}, {0, 2}}, {{2, 3, 4, 5}, {0, 2, 3}},
                       {{2, 3, 4, 5}, {3}}, {{2, 1, 4, 5}, {1}}, {{6, 1, 7}, {0, 1}},
                       {{9}, {0}}};

TEST_F(Reduce, ForwardMatchesReferenceOnEveryBackendTypeAndView) {
  std::mt19937 rng(1);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (int dt : {CCV_32F, CCV_64F})
      for (const Case& c : kCases)
        for (bool view : {false, true})
          for (int op = 0; op < 5; op++) {
            T x = view ? T::view(dt, c.dims) : T(dt, c.dims);
            fill_uniform(x, rng, -2, 2);
            T y = view ? T::view(dt, reduced(c.dims, c.axes)) : T(dt, reduced(c.dims, c.axes));
            ASSERT_EQ(run(reduce_cmd(kForward[op], c.axes, backend), {x}, {y}), CCV_NNC_EXEC_SUCCESS)
                << ccv_nnc_error_message();
            const std::vector<double> want = expected(x, c.dims, c.axes, op);
            for (size_t k = 0; k < want.size(); k++)
              ASSERT_NEAR(y.get(k), want[k], (dt == CCV_32F ? 2e-6 : 1e-12) * std::max(1.0, std::fabs(want[k])))
                  << "op " << op << " backend " << backend << " element " << k;
            EXPECT_TRUE(y.guard_intact());
          }
}

TEST_F(Reduce, HalfAndBfloatOnTheReferenceBackend) {
  std::mt19937 rng(2);
  for (int dt : {CCV_16F, CCV_16BF}) {
    T x(dt, {4, 6});
    fill_random(x, rng);
    for (int op = 0; op < 5; op++) {
      T y(dt, {4, 1});
      ASSERT_EQ(run(reduce_cmd(kForward[op], {1}), {x}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      const std::vector<double> want = expected(x, {4, 6}, {1}, op);
      for (size_t k = 0; k < want.size(); k++)
        EXPECT_NEAR(y.get(k), want[k], (dt == CCV_16F ? 1e-3 : 8e-3) * std::max(1.0, std::fabs(want[k])));
    }
  }
}

TEST_F(Reduce, OptAgreesWithRefOnLargeAndOddShapes) {
  std::mt19937 rng(3);
  // Large enough to thread, including the split-R path (few outputs, many rows).
  const Case cases[] = {{{257, 130}, {0}},           {{130, 257}, {1}},           {{64, 3136}, {0}},
                        {{3, 50, 41, 7}, {0, 1, 2}}, {{3, 50, 41, 7}, {0, 2, 3}}, {{70001}, {0}},
                        {{5, 33, 301}, {0, 2}}};
  for (const Case& c : cases)
    for (int op = 0; op < 5; op++)
      for (bool view : {false, true}) {
        T x = view ? T::view(CCV_32F, c.dims, CCV_TENSOR_FORMAT_NHWC, 1) : T(CCV_32F, c.dims);
        fill_uniform(x, rng, -1, 1);
        expect_backends_agree(reduce_cmd(kForward[op], c.axes), ccv_nnc_no_hint, {x}, {reduced(c.dims, c.axes)},
                              CCV_32F, CCV_NNC_BACKEND_CPU_OPT, 1e-4);
      }
}

TEST_F(Reduce, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(4);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT})
    for (const Case& c : {Case{{3, 4}, {1}}, Case{{2, 3, 4}, {0, 2}}, Case{{2, 3, 2}, {0, 1, 2}}})
      for (int op = 0; op < 5; op++) {
        T x(CCV_64F, c.dims);
        fill_uniform(x, rng, -1, 1);  // distinct values: no ties for MAX / MIN
        expect_gradients_match(reduce_cmd(kForward[op], c.axes, backend), reduce_cmd(kForward[op] + 1, c.axes, backend),
                               ccv_nnc_no_hint, {&x}, {reduced(c.dims, c.axes)}, {true}, rng);
      }
}

TEST_F(Reduce, BackwardOptAgreesWithRefOnViews) {
  std::mt19937 rng(5);
  const std::vector<int> dims = {6, 70, 9};
  for (const std::vector<int>& axes : {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{0, 2}})
    for (int op = 0; op < 5; op++) {
      T x = T::view(CCV_32F, dims);
      fill_uniform(x, rng);
      T y(CCV_32F, reduced(dims, axes));
      ASSERT_EQ(run(reduce_cmd(kForward[op], axes), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
      T g = T::view(CCV_32F, reduced(dims, axes));
      fill_uniform(g, rng);
      expect_backends_agree(reduce_cmd(kForward[op] + 1, axes), ccv_nnc_no_hint, {g, x, y}, {dims}, CCV_32F,
                            CCV_NNC_BACKEND_CPU_OPT, 1e-5);
    }
}

TEST_F(Reduce, SumAndMeanBackwardNeedOnlyTheGradientAndTiesAllReceiveIt) {
  T g(CCV_32F, {2, 1});
  g.set(0, 3), g.set(1, -6);
  for (uint32_t backend : {CCV_NNC_BACKEND_CPU_REF, CCV_NNC_BACKEND_CPU_OPT}) {
    T dx(CCV_32F, {2, 3});
    ASSERT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_MEAN_BACKWARD, {1}, backend), {g}, {dx}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (int i = 0; i < 6; i++) EXPECT_EQ(dx.get(i), i < 3 ? 1.0 : -2.0);
    ASSERT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_BACKWARD, {1}, backend), {g, nullptr, nullptr}, {dx}),
              CCV_NNC_EXEC_SUCCESS);
    for (int i = 0; i < 6; i++) EXPECT_EQ(dx.get(i), i < 3 ? 3.0 : -6.0);
    // MAX with a tie: both maxima get g.
    T x(CCV_32F, {2, 3}), y(CCV_32F, {2, 1});
    const double xv[] = {1, 5, 5, -1, -2, -3};
    for (int i = 0; i < 6; i++) x.set(i, xv[i]);
    y.set(0, 5), y.set(1, -1);
    ASSERT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_MAX_BACKWARD, {1}, backend), {g, x, y}, {dx}), CCV_NNC_EXEC_SUCCESS);
    const double want[] = {0, 3, 3, -6, 0, 0};
    for (int i = 0; i < 6; i++) EXPECT_EQ(dx.get(i), want[i]);
  }
}

TEST_F(Reduce, ArgmaxArgminFindTheFirstExtremum) {
  std::mt19937 rng(6);
  for (int dt : {CCV_32F, CCV_64F, CCV_16F})
    for (int axis = 0; axis < 3; axis++) {
      const std::vector<int> dims = {4, 5, 6};
      T x = T::view(dt, dims);
      std::uniform_int_distribution<int> d(-3, 3);  // many ties
      for (size_t i = 0; i < x.count(); i++) x.set(i, d(rng));
      for (bool is_max : {true, false}) {
        T y(CCV_32S, reduced(dims, {axis}));
        ASSERT_EQ(run(reduce_cmd(is_max ? CCV_NNC_ARGMAX_FORWARD : CCV_NNC_ARGMIN_FORWARD, {axis}), {x}, {y}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        const std::vector<int> od = reduced(dims, {axis});
        const int stride = axis == 0 ? 30 : axis == 1 ? 6 : 1;
        for (size_t o = 0; o < y.count(); o++) {
          const int i2 = static_cast<int>(o % od[2]), i1 = static_cast<int>(o / od[2] % od[1]),
                    i0 = static_cast<int>(o / od[2] / od[1]);
          const int base = i0 * 30 + i1 * 6 + i2;
          int best = 0;
          for (int k = 1; k < dims[axis]; k++) {
            const double v = x.get(base + k * stride), b = x.get(base + best * stride);
            if (is_max ? v > b : v < b) best = k;
          }
          EXPECT_EQ(y.get(o), best) << "axis " << axis << " output " << o;
        }
      }
    }
}

// CPU_OPT's vectorised arg reductions (lanes per row, or per column when the
// axis is not innermost) against a reference written here: first extremum on
// ties, the first NaN wins. Rows long enough for the lane path and short ones,
// NaNs in the first element, inside the lanes and in the tail, sizes that go
// to the pool, fp32 and fp64; a strided output view.
TEST_F(Reduce, ArgOptFindsTheFirstExtremumAndTheFirstNaN) {
  std::mt19937 rng(16);
  const std::vector<std::pair<std::vector<int>, int>> cases = {
      {{3, 200, 5}, 0}, {{3, 200, 5}, 1}, {{3, 200, 5}, 2}, {{2001, 70}, 1}, {{70, 2001}, 0},
      {{7, 33}, 1},     {{7, 33}, 0},     {{1, 1}, 1},      {{5, 131}, 1},   {{2, 3, 1500}, 1}};
  for (int dt : {CCV_32F, CCV_64F})
    for (const auto& [dims, axis] : cases) {
      T x(dt, dims);
      std::uniform_int_distribution<int> d(-20, 20);  // ties
      for (size_t i = 0; i < x.count(); i++) x.set(i, d(rng));
      const std::vector<int> od = reduced(dims, {axis});
      size_t inner = 1;
      for (size_t k = axis + 1; k < dims.size(); k++) inner *= static_cast<size_t>(dims[k]);
      const size_t len = static_cast<size_t>(dims[axis]);
      T y0(CCV_32S, od);
      // NaNs: in every 7th output position's run, at a position depending on it.
      for (size_t o = 0; o < y0.count(); o += 7) {
        const size_t outer = o / inner, in = o % inner;
        const size_t k = (o * 13) % len;
        x.set((outer * len + k) * inner + in, NAN);
        if (o % 14 == 0 && k + 3 < len) x.set((outer * len + k + 3) * inner + in, NAN);
      }
      for (bool is_max : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "dt " << dt << " dims " << dims.size() << "-d axis " << axis << " len "
                                          << len << (is_max ? " max" : " min"));
        T y(CCV_32S, od);
        ASSERT_EQ(run(reduce_cmd(is_max ? CCV_NNC_ARGMAX_FORWARD : CCV_NNC_ARGMIN_FORWARD, {axis},
                                 CCV_NNC_BACKEND_CPU_OPT),
                      {x}, {y}),
                  CCV_NNC_EXEC_SUCCESS)
            << ccv_nnc_error_message();
        for (size_t o = 0; o < y.count(); o++) {
          const size_t outer = o / inner, in = o % inner;
          int best = 0;
          double b = x.get(outer * len * inner + in);
          for (size_t k = 1; k < len && !std::isnan(b); k++) {
            const double v = x.get((outer * len + k) * inner + in);
            if (std::isnan(v) || (is_max ? v > b : v < b)) b = v, best = static_cast<int>(k);
          }
          ASSERT_EQ(y.get(o), best) << "output " << o;
        }
      }
    }
  // The output through a strided view.
  T x(CCV_32F, {9, 40});
  for (size_t i = 0; i < x.count(); i++) x.set(i, static_cast<double>((i * 7) % 40));
  T y = T::view(CCV_32S, {9, 1});
  ASSERT_EQ(run(reduce_cmd(CCV_NNC_ARGMAX_FORWARD, {1}, CCV_NNC_BACKEND_CPU_OPT), {x}, {y}), CCV_NNC_EXEC_SUCCESS);
  for (int r = 0; r < 9; r++) {
    int best = 0;
    for (int k = 1; k < 40; k++)
      if (x.get(r * 40 + k) > x.get(r * 40 + best)) best = k;
    EXPECT_EQ(y.get(r), best) << r;
  }
}

TEST_F(Reduce, ShapeInference) {
  ccv_nnc_tensor_param_t in = param(CCV_32F, {4, 5, 6}), out;
  ccv_nnc_hint_tensor_auto(reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {0, 2}), &in, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(out.dim[0], 1);
  EXPECT_EQ(out.dim[1], 5);
  EXPECT_EQ(out.dim[2], 1);
  EXPECT_EQ(out.dim[3], 0);
  ccv_nnc_hint_tensor_auto(reduce_cmd(CCV_NNC_ARGMAX_FORWARD, {1}), &in, 1, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(out.dim[1], 1);
  EXPECT_EQ(out.datatype, CCV_32S);
}

// libnnc's contract: shapes, bitmasks and (no) in-place pairs of each reduction.
TEST_F(Reduce, LibnncContract) {
  const uint32_t fwd[] = {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD,
                          CCV_NNC_REDUCE_MIN_FORWARD, CCV_NNC_REDUCE_NORM2_FORWARD, CCV_NNC_ARGMAX_FORWARD,
                          CCV_NNC_ARGMIN_FORWARD};
  auto bm = [](uint32_t id, int ni, uint64_t in, int no, uint64_t out) {
    return ccv_nnc_cmd_bitmask(reduce_cmd(id, {0}), ni, no, &in, 1, &out, 1);
  };
  for (uint32_t f : fwd) {
    EXPECT_TRUE(bm(f, 1, 1, 1, 1)) << ccv_nnc_cmd_name(f);
    EXPECT_FALSE(bm(f, 2, 3, 1, 1)) << ccv_nnc_cmd_name(f);  // exactly x
    EXPECT_FALSE(bm(f, 1, 1, 1, 0)) << ccv_nnc_cmd_name(f);
    const uint32_t b = f + 1;
    const bool arg = f == CCV_NNC_ARGMAX_FORWARD || f == CCV_NNC_ARGMIN_FORWARD;
    const bool xy = f == CCV_NNC_REDUCE_MAX_FORWARD || f == CCV_NNC_REDUCE_MIN_FORWARD || f == CCV_NNC_REDUCE_NORM2_FORWARD;
    EXPECT_EQ(bm(b, 3, 0b111, 1, 1), !arg) << ccv_nnc_cmd_name(b);
    EXPECT_EQ(bm(b, 3, 0b001, 1, 1), !arg && !xy) << ccv_nnc_cmd_name(b);
    EXPECT_EQ(bm(b, 1, 0b1, 1, 1), !arg && !xy) << ccv_nnc_cmd_name(b);
    EXPECT_FALSE(bm(b, 3, 0b110, 1, 1)) << ccv_nnc_cmd_name(b);
    EXPECT_FALSE(bm(b, 3, 0b111, 1, 0)) << ccv_nnc_cmd_name(b);
    for (uint32_t id : {f, b})
      for (int i = 0; i < 3; i++) {
        EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(reduce_cmd(id, {0}), i, 3, 0, 1)) << ccv_nnc_cmd_name(id);
        EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(reduce_cmd(id, {0}), i, 3, 0, 1)) << ccv_nnc_cmd_name(id);
      }
    // Backward shapes: libnnc gives dx the gradient's parameters; ARGMAX /
    // ARGMIN's backward leaves the outputs alone.
    ccv_nnc_tensor_param_t in[3] = {param(CCV_64F, {1, 5}), param(CCV_32F, {4, 5}), param(CCV_32F, {1, 5})};
    ccv_nnc_tensor_param_t out = param(CCV_16F, {7});
    ccv_nnc_hint_tensor_auto(reduce_cmd(b, {0}), in, 3, ccv_nnc_no_hint, &out, 1);
    const ccv_nnc_tensor_param_t want = arg ? param(CCV_16F, {7}) : in[0];
    EXPECT_EQ(out.datatype, want.datatype) << ccv_nnc_cmd_name(b);
    EXPECT_EQ(std::vector<int>(out.dim, out.dim + 3), std::vector<int>(want.dim, want.dim + 3)) << ccv_nnc_cmd_name(b);
  }
  T y(CCV_32F, {1, 5}), dx(CCV_32F, {4, 5});
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_ARGMIN_BACKWARD, {0}), {y}, {dx}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_TRUE(message_has("no backward")) << ccv_nnc_error_message();
}

TEST_F(Reduce, BadInputFailsWithAMessage) {
  T x(CCV_32F, {4, 5}), y(CCV_32F, {1, 5}), wrong(CCV_32F, {4, 1}), y64(CCV_64F, {1, 5}), i32(CCV_32S, {1, 5});
  const ccv_nnc_cmd_t sum0 = reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {0});
  EXPECT_EQ(run(sum0, {x}, {wrong}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("1x5")) << ccv_nnc_error_message();
  EXPECT_EQ(run(sum0, {x}, {y64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(sum0, {x, x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(sum0, {x}, {y, y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(sum0, {nullptr}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {2}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("axis 2")) << ccv_nnc_error_message();
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {0, 0}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {-1}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {}), {x}, {y}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_ARGMAX_FORWARD, {0}), {x}, {y}), CCV_NNC_EXEC_INVALID);  // not 32S
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_ARGMAX_FORWARD, {0, 1}), {x}, {i32}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_ARGMAX_FORWARD, {0}), {x}, {i32}), CCV_NNC_EXEC_SUCCESS);
  // Backward: g of the wrong shape, missing x / y for MAX, dx of another type.
  T dx(CCV_32F, {4, 5}), dx64(CCV_64F, {4, 5});
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_BACKWARD, {0}), {wrong}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_BACKWARD, {0}), {y}, {dx64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_MAX_BACKWARD, {0}), {y}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_MAX_BACKWARD, {0}), {y, nullptr, y}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_NORM2_BACKWARD, {0}), {y, x, wrong}, {dx}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_REDUCE_SUM_BACKWARD, {0}), {y}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(reduce_cmd(CCV_NNC_ARGMAX_BACKWARD, {0}), {y}, {dx}), CCV_NNC_EXEC_NO_KERNEL);
}

TEST_F(Reduce, EasyMacrosFromC) {
  const ccv_nnc_cmd_t s = nnc_test_reduce_sum_0_2();
  EXPECT_EQ(s.cmd, CCV_NNC_REDUCE_SUM_FORWARD);
  EXPECT_EQ(s.info.reduce.count, 2);
  EXPECT_EQ(s.info.reduce.axis[0], 0);
  EXPECT_EQ(s.info.reduce.axis[1], 2);
  EXPECT_EQ(nnc_test_reduce_max_backward_1().cmd, CCV_NNC_REDUCE_MAX_BACKWARD);
  EXPECT_EQ(nnc_test_argmax_1().info.reduce.axis[0], 1);
  float out[2];
  ASSERT_EQ(nnc_test_reduce_mean_example(out), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 5.0f);
}

}  // namespace
