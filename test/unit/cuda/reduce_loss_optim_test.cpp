// GPU_REF reductions and optimisers (cuda/reduce_gpu.cpp,
// cuda/optim_gpu.cpp) against CPU_REF on random inputs (fixed seeds): odd
// shapes, every axis set, views inside larger parents (compared whole), and
// refusals. Every test skips without a GPU.
//
// Tolerances: CPU_REF sums in double and rounds once; the GPU sums n floats,
// each addition within half an ulp of its partial sum. With inputs in
// [-1, 1) the partial sums stay below n, so atol 1e-6 n bounds the rounding
// with a wide margin for the sizes here while a missing or doubled element
// (|x| ~ 0.5 on average) is far outside it. MAX is exact. The optimisers'
// fp32 arithmetic on O(1) values is within a few ulp: rtol / atol 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"
#include "test/unit/cuda/optim_cases.hpp"

namespace {

using namespace nnc_gpu_test;

ccv_nnc_cmd_t reduce_cmd(uint32_t id, const std::vector<int>& axes) {
  ccv_nnc_cmd_t c = make_cmd(id);
  c.info.reduce.count = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); i++) c.info.reduce.axis[i] = axes[i];
  return c;
}

// dim with the axes reduced to 1, and in *n how many elements each output sums.
std::vector<int> reduced(std::vector<int> dim, const std::vector<int>& axes, size_t* n) {
  *n = 1;
  for (int a : axes) {
    *n *= static_cast<size_t>(dim[static_cast<size_t>(a)]);
    dim[static_cast<size_t>(a)] = 1;
  }
  return dim;
}

TEST(GpuRefReduce, SumMeanMaxOverAnyAxes) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(211);
  struct Case {
    std::vector<int> dim;
    std::vector<int> axes;
    bool view;
  };
  const Case cases[] = {
      {{1023}, {0}, false},         {{7, 33}, {1}, true},          {{7, 33}, {0}, false},
      {{7, 33}, {0, 1}, true},      {{64, 4096}, {1}, false},      {{128, 8192}, {0}, false},
      {{3, 5, 7, 9}, {1, 3}, true}, {{3, 5, 7, 9}, {0, 2}, false}, {{1, 1, 33}, {2}, false},
      {{2, 1, 100003}, {2}, false}, {{5, 1}, {1}, true},
  };
  for (const Case& k : cases) {
    size_t n = 0;
    const std::vector<int> out = reduced(k.dim, k.axes, &n);
    for (uint32_t id : {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD}) {
      auto x = both({k.dim, k.view}, rng), y = both({out, k.view}, rng);
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " over " + std::to_string(n);
      run_both(reduce_cmd(id, k.axes), {x.get()}, {y.get()}, what);
      const float atol = id == CCV_NNC_REDUCE_MAX_FORWARD    ? 0.f
                         : id == CCV_NNC_REDUCE_MEAN_FORWARD ? 1e-6f
                                                             : 1e-6f * static_cast<float>(n);
      y->expect_close(1e-5f, atol, what);
    }
    for (uint32_t id : {CCV_NNC_REDUCE_SUM_BACKWARD, CCV_NNC_REDUCE_MEAN_BACKWARD}) {
      auto g = both({out, !k.view}, rng), dx = both({k.dim, k.view}, rng);
      run_both(reduce_cmd(id, k.axes), {g.get()}, {dx.get()}, ccv_nnc_cmd_name(id));
      dx->expect_close(1e-6f, 1e-7f, ccv_nnc_cmd_name(id));
    }
  }
}

TEST(GpuRefReduce, MaxPropagatesNaN) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(223);
  auto x = both({{4, 37}}, rng), y = both({{4, 1}}, rng);
  // A NaN in row 2 (uploaded to both sides).
  Owned host = to_cpu(x->gpu());
  host->data.f32[2 * 37 + 11] = NAN;
  x->cpu()->data.f32[2 * 37 + 11] = NAN;
  ccv_nnc_cmd_t t = make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD);
  ASSERT_EQ(exec(t, ccv_nnc_no_hint, {host.t}, {x->gpu()}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  run_both(reduce_cmd(CCV_NNC_REDUCE_MAX_FORWARD, {1}), {x.get()}, {y.get()}, "REDUCE_MAX with NaN");
  y->expect_close(0, 0, "REDUCE_MAX with NaN");
  Owned back = to_cpu(y->gpu());
  EXPECT_TRUE(std::isnan(back->data.f32[2]));
  EXPECT_FALSE(std::isnan(back->data.f32[1]));
}

// Column sums of tall inputs (few outputs, long sums) take the sliced launch
// (gpu::choose_reduce_sliced: runs of rows per thread, partials combined in
// order): REDUCE_SUM / MEAN / MAX and ADD's broadcast gradient (a bias
// gradient) against CPU_REF, uneven runs, a multi-dimensional inner walk,
// 16F, and a NaN that must reach its column's maximum from any run.
TEST(GpuRefReduce, ColumnSumsOfTallInputsInRuns) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(229);
  struct Case {
    std::vector<int> dim;
    std::vector<int> axes;
    int dt;
  };
  const Case cases[] = {{{1000, 70}, {0}, CCV_32F}, {{2, 517, 37}, {0, 1}, CCV_32F}, {{1000, 70}, {0}, CCV_16F}};
  for (const Case& k : cases) {
    size_t n = 0;
    const std::vector<int> out = reduced(k.dim, k.axes, &n);
    for (uint32_t id : {CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_REDUCE_MEAN_FORWARD, CCV_NNC_REDUCE_MAX_FORWARD}) {
      auto x = both({k.dim, false, k.dt}, rng), y = both({out, false, k.dt}, rng);
      const std::string what = std::string(ccv_nnc_cmd_name(id)) + " of columns over " + std::to_string(n) +
                               (k.dt == CCV_16F ? " 16F" : "");
      run_both(reduce_cmd(id, k.axes), {x.get()}, {y.get()}, what);
      // 16F: one rounding of the float sum (about 5e-4 relative) on top.
      const float rtol = k.dt == CCV_16F ? 2e-3f : 1e-5f;
      const float atol = id == CCV_NNC_REDUCE_MAX_FORWARD    ? 0.f
                         : id == CCV_NNC_REDUCE_MEAN_FORWARD ? (k.dt == CCV_16F ? 1e-3f : 1e-6f)
                                                             : (k.dt == CCV_16F ? 2e-3f : 1e-6f) * static_cast<float>(n);
      y->expect_close(rtol, atol, what);
    }
  }
  // The bias gradient of ADD: db[70] = the sum of g[1000, 70] over rows.
  {
    auto g = both({{1000, 70}}, rng), da = both({{1000, 70}}, rng), db = both({{70}}, rng);
    ccv_nnc_cmd_t add = make_cmd(CCV_NNC_ADD_BACKWARD);
    add.info.blas.a[0] = 1, add.info.blas.a[1] = 1;
    auto a = both({{1000, 70}}, rng), b = both({{70}}, rng);
    run_both(add, {g.get(), a.get(), b.get()}, {da.get(), db.get()}, "ADD backward, bias gradient");
    db->expect_close(1e-5f, 1e-6f * 1000, "ADD backward db");
    da->expect_close(1e-6f, 0, "ADD backward da");
  }
  // A NaN in one column, deep in the rows: only that column's maximum is NaN.
  {
    auto x = both({{1000, 70}}, rng), y = both({{1, 70}}, rng);
    Owned host = to_cpu(x->gpu());
    host->data.f32[777 * 70 + 13] = NAN;
    x->cpu()->data.f32[777 * 70 + 13] = NAN;
    ASSERT_EQ(exec(make_cmd(CCV_NNC_DATA_TRANSFER_FORWARD), ccv_nnc_no_hint, {host.t}, {x->gpu()}), CCV_NNC_EXEC_SUCCESS);
    run_both(reduce_cmd(CCV_NNC_REDUCE_MAX_FORWARD, {0}), {x.get()}, {y.get()}, "column REDUCE_MAX with NaN");
    Owned back = to_cpu(y->gpu());
    for (int j = 0; j < 70; j++) EXPECT_EQ(std::isnan(back->data.f32[j]), j == 13) << "column " << j;
  }
}

TEST(GpuRefReduce, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(227);
  // 64F reductions: GPU_REF (float) refuses them with a message (16F and
  // 16BF: half2_gpu_test.cpp).
  auto x = both({{7, 5}, false, CCV_64F}, rng), y = both({{7, 1}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t c = reduce_cmd(CCV_NNC_REDUCE_SUM_FORWARD, {1});
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu()}, {y->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // A wrong output shape: an error with a message.
  auto x2 = both({{7, 5}}, rng), y2 = both({{7, 2}}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {x2->gpu()}, {y2->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace

namespace {

using namespace nnc_gpu_test;

// Class indices 0..classes-1 in a 32S or 32F tensor (both sides).
void set_classes(Both& b, int classes, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, classes - 1);
  ccv_nnc_tensor_t* t = b.cpu_parent();
  for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) {
    const int c = d(rng);
    if (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32S)
      t->data.i32[i] = c;
    else
      t->data.f32[i] = static_cast<float>(c);
  }
  b.upload();
}

// Rows of a packed CPU parent made positive and summing to 1 (dense labels, probabilities).
void make_distributions(Both& b, int cols) {
  ccv_nnc_tensor_t* t = b.cpu_parent();
  const size_t n = ccv_nnc_tensor_count(t->info);
  for (size_t r = 0; r < n / static_cast<size_t>(cols); r++) {
    float s = 0;
    for (int j = 0; j < cols; j++) s += (t->data.f32[r * cols + j] = std::fabs(t->data.f32[r * cols + j]) + 0.01f);
    for (int j = 0; j < cols; j++) t->data.f32[r * cols + j] /= s;
  }
  b.upload();
}

struct LossCase {
  std::vector<int> x;       // logits / probabilities
  std::vector<int> labels;  // index labels' shape (dense: x's)
  int label_type;           // CCV_32S, CCV_32F index, or 0 for dense
  bool view;
  float trim0, trim1;
};

std::vector<int> loss_shape(const LossCase& k) {
  if (k.label_type == 0 || k.labels.size() == k.x.size()) {
    std::vector<int> s = k.x;
    s.back() = 1;
    return s;
  }
  return k.labels;
}

const LossCase kLossCases[] = {
    {{7, 10}, {7}, CCV_32S, false, 0, 1},
    {{33, 1023}, {33, 1}, CCV_32F, true, 0, 1},
    {{5, 3, 7}, {5, 3}, CCV_32S, true, 0.01f, 0.93f},
    {{9, 33}, {9, 33}, 0, false, 0, 1},
    {{9, 33}, {9, 33}, 0, true, 0.02f, 0.9f},
    {{1, 1}, {1}, CCV_32S, false, 0, 1},
    {{65}, {1}, CCV_32S, false, 0.1f, 0.8f},
};

TEST(GpuRefLoss, SoftmaxCrossentropyForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(307);
  for (const LossCase& k : kLossCases) {
    const int cols = k.x.back();
    const float tol = 2e-6f * static_cast<float>(cols) + 1e-5f;
    auto z = both({k.x, k.view}, rng, -4.f, 4.f);
    BothPtr lab;
    if (k.label_type == 0) {
      lab = both({k.x, !k.view}, rng);
      make_distributions(*lab, cols);  // a view's parent rows are not its rows; any values in [0, 1] do
    } else {
      lab = both({k.labels, false, k.label_type}, rng, 0, static_cast<float>(cols - 1));
      set_classes(*lab, cols, rng);
    }
    auto loss = both({loss_shape(k), false}, rng), s = both({k.x, k.view}, rng);
    ccv_nnc_cmd_t c = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
    c.info.label_smoothing.trim0 = k.trim0;
    c.info.label_smoothing.trim1 = k.trim1;
    const std::string what = "SOFTMAX_CROSSENTROPY " + std::to_string(k.x[0]) + "x" + std::to_string(cols);
    run_both(c, {z.get(), lab.get()}, {loss.get(), s.get()}, what);
    loss->expect_close(1e-5f, tol, what + " loss");
    s->expect_close(1e-5f, 1e-7f, what + " softmax");
    auto loss2 = both({loss_shape(k), false}, rng);
    run_both(c, {z.get(), lab.get()}, {loss2.get(), nullptr}, what + " loss alone");
    loss2->expect_close(1e-5f, tol, what + " loss alone");
    // Backward: |g|g_softmax|logits|labels|loss|softmax| -> |d logits|.
    ccv_nnc_cmd_t b = c;
    b.cmd = CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD;
    auto g = both({loss_shape(k), true}, rng), gs = both({k.x, false}, rng), dz = both({k.x, k.view}, rng);
    run_both(b, {g.get(), gs.get(), z.get(), lab.get(), loss.get(), s.get()}, {dz.get()}, what + " backward");
    dz->expect_close(1e-5f, 1e-6f, what + " backward");
    auto dz2 = both({k.x, !k.view}, rng);
    run_both(b, {nullptr, nullptr, z.get(), lab.get(), loss.get(), s.get()}, {dz2.get()}, what + " backward, NULL g");
    dz2->expect_close(1e-5f, 1e-6f, what + " backward, NULL g");
  }
}

TEST(GpuRefLoss, CategoricalCrossentropyForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(311);
  for (const LossCase& k : kLossCases) {
    const int cols = k.x.back();
    auto p = both({k.x, false}, rng);
    make_distributions(*p, cols);
    BothPtr lab;
    if (k.label_type == 0) {
      lab = both({k.x, false}, rng);
      make_distributions(*lab, cols);
    } else {
      lab = both({k.labels, false, k.label_type}, rng, 0, static_cast<float>(cols - 1));
      set_classes(*lab, cols, rng);
    }
    auto loss = both({loss_shape(k), k.view}, rng);
    ccv_nnc_cmd_t c = make_cmd(CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD);
    c.info.label_smoothing.trim0 = k.trim0;
    c.info.label_smoothing.trim1 = k.trim1;
    const std::string what = "CATEGORICAL_CROSSENTROPY " + std::to_string(k.x[0]) + "x" + std::to_string(cols);
    run_both(c, {p.get(), lab.get()}, {loss.get()}, what);
    loss->expect_close(1e-5f, 2e-6f * static_cast<float>(cols) + 1e-5f, what);
    ccv_nnc_cmd_t b = c;
    b.cmd = CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD;
    auto g = both({loss_shape(k), false}, rng), dp = both({k.x, k.view}, rng), dl = both({k.x, false}, rng);
    std::vector<Both*> outs{dp.get()};
    if (k.label_type == 0) outs.push_back(dl.get());
    run_both(b, {g.get(), p.get(), lab.get(), loss.get()}, outs, what + " backward");
    dp->expect_close(1e-5f, 1e-6f, what + " dp");
    if (k.label_type == 0) dl->expect_close(1e-5f, 1e-6f, what + " d labels");
  }
}

TEST(GpuRefLoss, SoftmaxForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(313);
  for (const Spec& s : {Spec{{7, 10}}, Spec{{33, 1023}, true}, Spec{{5, 3, 7}, true}, Spec{{1}}, Spec{{2, 4097}}}) {
    auto x = both(s, rng, -5.f, 5.f), y = both(s, rng), g = both(s, rng), dx = both(s, rng), dx2 = both(s, rng);
    run_both(make_cmd(CCV_NNC_SOFTMAX_FORWARD), {x.get()}, {y.get()}, "SOFTMAX");
    y->expect_close(1e-5f, 1e-7f, "SOFTMAX");
    run_both(make_cmd(CCV_NNC_SOFTMAX_BACKWARD), {g.get(), x.get(), y.get()}, {dx.get()}, "SOFTMAX_BACKWARD");
    dx->expect_close(1e-5f, 1e-6f, "SOFTMAX_BACKWARD");
    run_both(make_cmd(CCV_NNC_SOFTMAX_BACKWARD), {nullptr, x.get(), y.get()}, {dx2.get()}, "SOFTMAX_BACKWARD NULL g");
    dx2->expect_close(1e-5f, 1e-6f, "SOFTMAX_BACKWARD NULL g");
  }
}

TEST(GpuRefLoss, BadClassIndexIsAnError) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(317);
  auto z = both({{4, 6}}, rng), lab = both({{4}, false, CCV_32S}, rng, 0, 5), loss = both({{4}}, rng);
  lab->cpu_parent()->data.i32[2] = 6;  // classes are 0..5
  lab->upload();
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD);
  c.info.label_smoothing.trim1 = 1;
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {z->gpu(), lab->gpu()}, {loss->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("row 2"), std::string::npos) << ccv_nnc_error_message();
  // A 64F softmax: refused by GPU_REF, which computes in float (an error
  // that says so, not a crash; 16F / 16BF are taken: half_gpu_test.cpp).
  auto h = both({{4, 6}, false, CCV_64F}, rng), hy = both({{4, 6}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t sm = make_cmd(CCV_NNC_SOFTMAX_FORWARD);
  sm.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(sm, ccv_nnc_no_hint, {h->gpu()}, {hy->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
}

// SGD (plain, momentum, nesterov, decay), ADAM, ADAMW (with amsgrad) and
// RMSPROP, three steps in place (b = a, n = m, ...) on views, and one step out
// of place; v and vm start non-negative as they are in use.
TEST(GpuRefOptim, StepsMatchCpuRef) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(331);
  const std::vector<OptCase> opts = optimiser_cases();
  for (const OptCase& o : opts)
    for (const Spec& s : {Spec{{1023}}, Spec{{7, 33}, true}}) {
      ccv_nnc_cmd_t c = ccv_nnc_cmd(o.id, nullptr, o.p, 0);
      auto g = both(s, rng), a = both(s, rng);
      std::vector<BothPtr> state;
      for (int i = 0; i < o.state; i++) state.push_back(i == 0 ? both(s, rng) : both(s, rng, 0.f, 1.f));
      std::vector<Both*> in{g.get(), a.get()}, out{a.get()};
      for (auto& t : state) in.push_back(t.get()), out.push_back(t.get());
      for (int step = 0; step < 3; step++) {
        run_both(c, in, out, std::string(o.name) + " in place");
        a->expect_close(1e-5f, 1e-6f, std::string(o.name) + " a, step " + std::to_string(step));
        for (auto& t : state)
          t->expect_close(1e-5f, 1e-6f, std::string(o.name) + " state, step " + std::to_string(step));
      }
      std::vector<BothPtr> fresh;
      std::vector<Both*> out2;
      for (size_t i = 0; i < out.size(); i++) {
        fresh.push_back(both({s.dim, !s.view}, rng));
        out2.push_back(fresh.back().get());
      }
      run_both(c, in, out2, std::string(o.name) + " out of place");
      for (auto& t : fresh) t->expect_close(1e-5f, 1e-6f, std::string(o.name) + " out of place");
    }
}

}  // namespace
