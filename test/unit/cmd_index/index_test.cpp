// INDEX_SELECT against gathers written here, finite differences, CPU_REF,
// and libnnc's contract from its description file.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_index_example(float y[6]);

using namespace cmdtest;

namespace {

class IndexSelect : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

constexpr uint32_t REF = CCV_NNC_BACKEND_CPU_REF, OPT = CCV_NNC_BACKEND_CPU_OPT;

ccv_nnc_cmd_t cmd(uint32_t id, uint32_t backend = 0) { return command(id, backend); }

void set_indices(const T& t, const std::vector<int>& v) {
  for (size_t i = 0; i < v.size(); i++) t.set(i, v[i]);
}

TEST_F(IndexSelect, ForwardGathersRows) {
  std::mt19937 rng(501);
  int round = 0;
  for (uint32_t backend : {0u, REF, OPT})
    for (int dt : {CCV_32F, CCV_64F, CCV_16F, CCV_32S, CCV_8U})
      for (int it : {CCV_32S, CCV_64S})
        for (const std::vector<int>& dims : {std::vector<int>{5, 3}, std::vector<int>{7}, std::vector<int>{4, 3, 2}}) {
          const std::vector<int> picks = {3, 0, 3, 1, 4 % dims[0], 2};
          std::vector<int> yd = dims;
          yd[0] = static_cast<int>(picks.size());
          const bool view = ++round % 2 == 0;
          T x = view ? T::view(dt, dims) : T(dt, dims), y = view ? T(dt, yd) : T::view(dt, yd);
          T idx(it, {static_cast<int>(picks.size())});
          fill_random(x, rng);
          set_indices(idx, picks);
          const int rc = run(cmd(CCV_NNC_INDEX_SELECT_FORWARD, backend), {x, idx}, {y});
          // CPU_OPT takes rows packed inside: a view padded in every axis of a 3-d
          // tensor is CPU_REF's (a 2-d view's rows are runs of elements).
          if (backend == OPT && (x.is_view() || y.is_view()) && dims.size() > 2) {
            EXPECT_EQ(rc, CCV_NNC_EXEC_NO_KERNEL);
            continue;
          }
          ASSERT_EQ(rc, CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
          size_t row = 1;
          for (size_t d = 1; d < dims.size(); d++) row *= static_cast<size_t>(dims[d]);
          for (size_t i = 0; i < picks.size(); i++)
            for (size_t c = 0; c < row; c++)
              ASSERT_EQ(y.get(i * row + c), x.get(static_cast<size_t>(picks[i]) * row + c)) << i << " " << c;
          EXPECT_TRUE(y.guard_intact());
        }
}

TEST_F(IndexSelect, BackwardSumsRepeatedRows) {
  // Rows 2, 0, 2 of a 3-row x: dx row 2 = g0 + g2, row 0 = g1, row 1 = 0.
  for (uint32_t backend : {REF, OPT})
    for (int dt : {CCV_32F, CCV_64F}) {
      T g(dt, {3, 4}), dx(dt, {3, 4}), x(dt, {3, 4}), idx(CCV_32S, {3});
      for (size_t i = 0; i < g.count(); i++) g.set(i, static_cast<double>(i) + 1);
      for (size_t i = 0; i < dx.count(); i++) dx.set(i, 99);  // overwritten whole
      set_indices(idx, {2, 0, 2});
      ASSERT_EQ(run(cmd(CCV_NNC_INDEX_SELECT_BACKWARD, backend), {g, x, idx}, {dx}), CCV_NNC_EXEC_SUCCESS)
          << ccv_nnc_error_message();
      for (int c = 0; c < 4; c++) {
        EXPECT_EQ(dx.get(c), g.get(4 + c));
        EXPECT_EQ(dx.get(4 + c), 0);
        EXPECT_EQ(dx.get(8 + c), g.get(c) + g.get(8 + c));
      }
    }
}

TEST_F(IndexSelect, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(502);
  for (uint32_t backend : {REF, OPT}) {
    T x(CCV_64F, {4, 3}), idx(CCV_64S, {5});
    fill_uniform(x, rng);
    set_indices(idx, {1, 3, 1, 0, 1});
    // The command is linear in x; the indices are not differentiated (a NULL gradient slot).
    expect_gradients_match(cmd(CCV_NNC_INDEX_SELECT_FORWARD, backend), cmd(CCV_NNC_INDEX_SELECT_BACKWARD, backend),
                           ccv_nnc_no_hint, {&x, &idx}, {{5, 3}}, {true, false}, rng);
  }
}

TEST_F(IndexSelect, OptAgreesWithRefOnRowViewsAndAThreadedSize) {
  std::mt19937 rng(503);
  struct Case {
    std::vector<int> x;
    int n;
  };
  for (const Case& c : {Case{{50, 17}, 33}, Case{{1000, 256}, 3000}, Case{{300, 4, 129}, 700}, Case{{9}, 20}})
    for (int dt : {CCV_32F, CCV_64F})
      for (int view : {0, 1}) {
        std::vector<int> yd = c.x;
        yd[0] = c.n;
        // Row views: a slice of rows of a taller tensor (rows packed inside, their own row stride).
        auto make = [&](const std::vector<int>& d) {
          if (!view) return T(dt, d);
          std::vector<int> big = d;
          big[0] += 5;
          return T(dt, big);
        };
        T xp = make(c.x), gp = make(yd);
        ccv_nnc_tensor_view_t* xv = nullptr;
        ccv_nnc_tensor_view_t* gv = nullptr;
        int ofs[CCV_NNC_MAX_DIM_ALLOC] = {2};
        if (view) {
          xv = ccv_nnc_tensor_view_new(xp, param(dt, c.x), ofs, nullptr);
          gv = ccv_nnc_tensor_view_new(gp, param(dt, yd), ofs, nullptr);
        }
        ccv_nnc_tensor_t* x = view ? reinterpret_cast<ccv_nnc_tensor_t*>(xv) : xp.get();
        ccv_nnc_tensor_t* g = view ? reinterpret_cast<ccv_nnc_tensor_t*>(gv) : gp.get();
        fill_uniform(xp, rng), fill_uniform(gp, rng);
        T idx(CCV_32S, {c.n});
        for (int i = 0; i < c.n; i++) idx.set(i, std::uniform_int_distribution<int>(0, c.x[0] - 1)(rng));
        expect_backends_agree(cmd(CCV_NNC_INDEX_SELECT_FORWARD), ccv_nnc_no_hint, {x, idx}, {yd}, dt, OPT, 0);
        // Summation order is the same (index order per column): equal results.
        expect_backends_agree(cmd(CCV_NNC_INDEX_SELECT_BACKWARD), ccv_nnc_no_hint, {g, nullptr, idx}, {c.x}, dt, OPT,
                              dt == CCV_32F ? 1e-6 : 1e-14);
        if (xv) ccv_nnc_tensor_view_free(xv);
        if (gv) ccv_nnc_tensor_view_free(gv);
      }
}

// libnnc's description file: tensor_auto, bitmasks, no in-place pair.
TEST_F(IndexSelect, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  ccv_nnc_tensor_param_t in[3] = {param(CCV_16F, {10, 4, 5}), param(CCV_32S, {7}), param(CCV_32S, {7})}, out;
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_INDEX_SELECT_FORWARD), in, 2, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(dims(out), (std::vector<int>{7, 4, 5, 0}));
  EXPECT_EQ(out.datatype, CCV_16F);
  // The backward: the gradient's shape (libnnc's "best guess").
  in[0] = param(CCV_32F, {7, 4, 5});
  in[1] = param(CCV_32F, {10, 4, 5});
  ccv_nnc_hint_tensor_auto(cmd(CCV_NNC_INDEX_SELECT_BACKWARD), in, 3, ccv_nnc_no_hint, &out, 1);
  EXPECT_EQ(dims(out), (std::vector<int>{7, 4, 5, 0}));
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = cmd(CCV_NNC_INDEX_SELECT_FORWARD), b = cmd(CCV_NNC_INDEX_SELECT_BACKWARD);
  EXPECT_TRUE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 2, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 2, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 0));
  EXPECT_TRUE(bm(b, 3, 5, 1, 1));
  EXPECT_TRUE(bm(b, 3, 7, 1, 1));
  EXPECT_FALSE(bm(b, 3, 3, 1, 1));
  EXPECT_FALSE(bm(b, 3, 6, 1, 1));
  EXPECT_FALSE(bm(b, 3, 5, 1, 0));
  for (const ccv_nnc_cmd_t& c : {f, b})
    for (int i = 0; i < 3; i++) {
      EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(c, i, 3, 0, 1));
      EXPECT_FALSE(ccv_nnc_cmd_enforce_inplace(c, i, 3, 0, 1));
    }
  float y[6];
  ASSERT_EQ(nnc_test_index_example(y), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  const float want[6] = {4, 5, 0, 1, 4, 5};
  for (int i = 0; i < 6; i++) EXPECT_EQ(y[i], want[i]) << i;
}

TEST_F(IndexSelect, BadInputFailsWithAMessage) {
  T x(CCV_32F, {5, 3}), y(CCV_32F, {4, 3}), y2(CCV_32F, {4, 2}), yd(CCV_64F, {4, 3}), idx(CCV_32S, {4});
  T idf(CCV_32F, {4}), id3(CCV_32S, {3});
  set_indices(idx, {0, 4, 2, 1});
  for (uint32_t backend : {REF, OPT}) {
    const ccv_nnc_cmd_t f = cmd(CCV_NNC_INDEX_SELECT_FORWARD, backend);
    EXPECT_EQ(run(f, {x, idx}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    idx.set(1, 5);
    EXPECT_EQ(run(f, {x, idx}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_TRUE(message_has("indices[1] is 5")) << ccv_nnc_error_message();
    idx.set(1, -1);
    EXPECT_EQ(run(f, {x, idx}, {y}), CCV_NNC_EXEC_INVALID);
    idx.set(1, 4);
    EXPECT_EQ(run(f, {x, idx}, {y2}), CCV_NNC_EXEC_INVALID);
    EXPECT_TRUE(message_has("4 rows")) << ccv_nnc_error_message();
    EXPECT_EQ(run(f, {x, idx}, {yd}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(f, {x, idf}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_TRUE(message_has("32S or 64S")) << ccv_nnc_error_message();
    EXPECT_EQ(run(f, {x, id3}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(f, {x, nullptr}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(f, {x}, {y}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(f, {x, idx}, {nullptr}), CCV_NNC_EXEC_INVALID);
    const ccv_nnc_cmd_t b = cmd(CCV_NNC_INDEX_SELECT_BACKWARD, backend);
    EXPECT_EQ(run(b, {y, x, idx}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(run(b, {y, nullptr, idx}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    EXPECT_EQ(run(b, {y, x, nullptr}, {x}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(b, {y, x}, {x}), CCV_NNC_EXEC_INVALID);
    EXPECT_EQ(run(b, {y2, x, idx}, {x}), CCV_NNC_EXEC_INVALID);
    idx.set(3, 9);
    EXPECT_EQ(run(b, {y, x, idx}, {x}), CCV_NNC_EXEC_INVALID);
    EXPECT_TRUE(message_has("indices[3] is 9")) << ccv_nnc_error_message();
    idx.set(3, 1);
  }
  T xi(CCV_32S, {5, 3}), yi(CCV_32S, {4, 3});
  EXPECT_EQ(run(cmd(CCV_NNC_INDEX_SELECT_BACKWARD), {yi, xi, idx}, {xi}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32S")) << ccv_nnc_error_message();
}

}  // namespace
