// GPU_REF MSE, SMOOTH_L1, BINARY_CROSSENTROPY and SIGMOID_BINARY_CROSSENTROPY
// of cuda/more_gpu.cpp against CPU_REF on random inputs (fixed seeds): rows
// of odd lengths (one row, many short rows, rows longer than a block), 3-d
// stacks of rows as views inside larger parents (whole parents compared),
// the loss in [N, 1] and in [N] shapes, both MSE reductions, several beta and
// pos_weight values, targets exactly 0 and 1, NULL g, one gradient alone, the
// sigmoid form's optional outputs and its backward from the saved sigmoid,
// and refusals. Skips without a GPU.
//
// Tolerances: each element's term or gradient is a few float operations
// (<= ~6 ulp, 4e-7 relative, from CUDA's logf / expf / log1pf within 2 ulp)
// against CPU_REF's double; a row's loss sums nonnegative terms in double, so
// it keeps that relative error: rtol 1e-5. Gradients: rtol 1e-5 with atol
// 1e-6 for the sigmoid form's s - 1 (float s holds 1 - s to 6e-8 absolute
// when z >> 0). A wrong element, row or weight is off by O(0.01) or more.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

constexpr float kRtol = 1e-5f, kAtol = 1e-6f;

struct Loss {
  uint32_t id;
  const char* name;
  float w, beta;
  int sum;
};

const Loss kLosses[] = {
    {CCV_NNC_MSE_FORWARD, "MSE mean", 1, 1, 0},
    {CCV_NNC_MSE_FORWARD, "MSE sum", 1, 1, 1},
    {CCV_NNC_SMOOTH_L1_FORWARD, "SMOOTH_L1 beta 1", 1, 1, 0},
    {CCV_NNC_SMOOTH_L1_FORWARD, "SMOOTH_L1 beta 0.25", 1, 0.25f, 0},
    {CCV_NNC_SMOOTH_L1_FORWARD, "SMOOTH_L1 beta 0", 1, 0, 0},
    {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, "BCE", 1, 1, 0},
    {CCV_NNC_BINARY_CROSSENTROPY_FORWARD, "BCE pos_weight 2.5", 2.5f, 1, 0},
    {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, "SBCE", 1, 1, 0},
    {CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, "SBCE pos_weight 2.5", 2.5f, 1, 0},
};

ccv_nnc_cmd_t loss_cmd(const Loss& l, bool backward) {
  ccv_nnc_cmd_t c = make_cmd(backward ? l.id + 1 : l.id);
  c.info.mse.reduce_op = l.sum ? CCV_NNC_MSE_REDUCE_SUM : CCV_NNC_MSE_REDUCE_MEAN;
  c.info.smooth_l1.beta = l.beta;
  c.info.binary_crossentropy.pos_weight = l.w;
  // The unions overlap: set the one this loss reads last.
  if (l.id == CCV_NNC_MSE_FORWARD) c.info.mse.reduce_op = l.sum ? CCV_NNC_MSE_REDUCE_SUM : CCV_NNC_MSE_REDUCE_MEAN;
  if (l.id == CCV_NNC_SMOOTH_L1_FORWARD) c.info.smooth_l1.beta = l.beta;
  if (l.id == CCV_NNC_BINARY_CROSSENTROPY_FORWARD || l.id == CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD)
    c.info.binary_crossentropy.pos_weight = l.w;
  return c;
}

struct Shape {
  std::vector<int> rows, loss;
  bool view;
};
const Shape kShapes[] = {
    {{7, 33}, {7, 1}, true}, {{3, 5, 17}, {3, 5, 1}, true}, {{2, 1000}, {2, 1}, false},
    {{1023}, {1}, false},    {{300, 3}, {300}, false},  // many short rows; the loss in [N]
};

// Targets of the cross-entropies: in [0, 1] with some exactly 0 and 1.
void targets(Both* y) {
  float* p = y->cpu_parent()->data.f32;
  const size_t n = ccv_nnc_tensor_count(y->cpu_parent()->info);
  for (size_t i = 0; i < n; i++) p[i] = i % 5 == 0 ? 0.f : i % 5 == 1 ? 1.f : 0.5f * (p[i] + 1);
  y->upload();
}

TEST(GpuRefLoss2, ForwardAndBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(801);
  for (const Shape& sh : kShapes)
    for (const Loss& l : kLosses) {
      const bool bce = l.id == CCV_NNC_BINARY_CROSSENTROPY_FORWARD,
                 sig = l.id == CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD;
      const std::string what = std::string(l.name) + " rows " + std::to_string(sh.rows.back());
      auto a = bce ? both({sh.rows, sh.view}, rng, 0.02f, 0.98f) : both({sh.rows, sh.view}, rng, -6, 6);
      auto b = both({sh.rows, !sh.view}, rng, -6, 6);
      if (bce || sig) targets(b.get());
      auto loss = both({sh.loss}, rng), s = both({sh.rows, sh.view}, rng);
      if (sig)
        run_both(loss_cmd(l, false), {a.get(), b.get()}, {loss.get(), s.get()}, what);
      else
        run_both(loss_cmd(l, false), {a.get(), b.get()}, {loss.get()}, what);
      loss->expect_close(kRtol, kAtol, what + " loss");
      if (sig) s->expect_close(kRtol, kAtol, what + " sigmoid");
      auto g = both({sh.loss}, rng), da = both({sh.rows, sh.view}, rng), db = both({sh.rows}, rng);
      auto da2 = both({sh.rows}, rng), db3 = both({sh.rows, sh.view}, rng);
      if (sig) {
        auto gs = both({sh.rows, sh.view}, rng);
        run_both(loss_cmd(l, true), {g.get(), gs.get(), a.get(), b.get(), loss.get(), s.get()}, {da.get(), db.get()},
                 what + " backward");
        // From the saved sigmoid alone (z NULL, no dy), NULL g.
        run_both(loss_cmd(l, true), {nullptr, nullptr, nullptr, b.get(), loss.get(), s.get()}, {da2.get(), nullptr},
                 what + " backward from the sigmoid");
        run_both(loss_cmd(l, true), {g.get(), nullptr, a.get(), b.get()}, {nullptr, db3.get()}, what + " dy alone");
      } else {
        run_both(loss_cmd(l, true), {g.get(), a.get(), b.get(), loss.get()}, {da.get(), db.get()}, what + " backward");
        run_both(loss_cmd(l, true), {nullptr, a.get(), b.get()}, {da2.get(), nullptr}, what + " NULL g");
        run_both(loss_cmd(l, true), {g.get(), a.get(), b.get()}, {nullptr, db3.get()}, what + " db alone");
      }
      da->expect_close(kRtol, kAtol, what + " da");
      db->expect_close(kRtol, kAtol, what + " db");
      da2->expect_close(kRtol, kAtol, what + " da (NULL g / from the sigmoid)");
      db3->expect_close(kRtol, kAtol, what + " db alone");
    }
  // SIGMOID_BINARY_CROSSENTROPY with the loss left out, and with the sigmoid left out.
  const Loss& l = kLosses[7];
  auto z = both({{9, 31}, true}, rng, -6, 6), y = both({{9, 31}}, rng), s = both({{9, 31}}, rng),
       loss = both({{9, 1}}, rng);
  targets(y.get());
  run_both(loss_cmd(l, false), {z.get(), y.get()}, {nullptr, s.get()}, "SBCE sigmoid only");
  s->expect_close(kRtol, kAtol, "SBCE sigmoid only");
  run_both(loss_cmd(l, false), {z.get(), y.get()}, {loss.get(), nullptr}, "SBCE loss only");
  loss->expect_close(kRtol, kAtol, "SBCE loss only");
}

TEST(GpuRefLoss2, Refusals) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(809);
  // 64F rows: GPU_REF computes in float and says so (16F / 16BF are taken:
  // half_gpu_test.cpp).
  auto a = both({{4, 6}, false, CCV_64F}, rng), b = both({{4, 6}, false, CCV_64F}, rng),
       l = both({{4, 1}, false, CCV_64F}, rng);
  ccv_nnc_cmd_t c = loss_cmd(kLosses[0], false);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {a->gpu(), b->gpu()}, {l->gpu()}), CCV_NNC_EXEC_NO_KERNEL);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("64F"), std::string::npos) << ccv_nnc_error_message();
  // Mismatched rows: the family's check.
  auto a2 = both({{4, 6}}, rng), b2 = both({{4, 5}}, rng), l2 = both({{4, 1}}, rng);
  EXPECT_NE(exec(c, ccv_nnc_no_hint, {a2->gpu(), b2->gpu()}, {l2->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
  // The sigmoid form's dy without z: refused.
  auto y = both({{4, 6}}, rng), s = both({{4, 6}}, rng), dy = both({{4, 6}}, rng);
  ccv_nnc_cmd_t sb = loss_cmd(kLosses[7], true);
  sb.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_NE(exec(sb, ccv_nnc_no_hint, {l2->gpu(), nullptr, nullptr, y->gpu(), nullptr, s->gpu()}, {nullptr, dy->gpu()}),
            CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

}  // namespace
