// NMS against an independent brute-force greedy (the textbook "take the best
// remaining box, drop everything it overlaps" loop, with its own IoU), ties
// in score and IoUs exactly at the threshold; the backward against finite
// differences; libnnc's contract from its description file; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_nms_example(float b[15], int c[3]);

using namespace cmdtest;

namespace {

class Nms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t nms(uint32_t id, float threshold) {
  ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
  c.info.nms.iou_threshold = threshold;
  return c;
}

struct Box {
  double score, x, y, w, h;
};

// IoU through the corners, written apart from the library's.
double iou_ref(const Box& p, const Box& q) {
  const double l = std::max(p.x, q.x), r = std::min(p.x + std::max(p.w, 0.0), q.x + std::max(q.w, 0.0));
  const double t = std::max(p.y, q.y), b = std::min(p.y + std::max(p.h, 0.0), q.y + std::max(q.h, 0.0));
  const double inter = (r > l && b > t) ? (r - l) * (b - t) : 0.0;
  const double u = std::max(p.w, 0.0) * std::max(p.h, 0.0) + std::max(q.w, 0.0) * std::max(q.h, 0.0) - inter;
  return u > 0 ? inter / u : 0.0;
}

// Kept rows in order: repeatedly take the best remaining row (highest score,
// the lowest row number on a tie), keep it, and remove every remaining row
// whose IoU with it is above the threshold.
std::vector<int> brute_force(const std::vector<Box>& boxes, double threshold) {
  std::vector<bool> gone(boxes.size(), false);
  std::vector<int> kept;
  for (;;) {
    int best = -1;
    for (size_t i = 0; i < boxes.size(); i++)
      if (!gone[i] && (best < 0 || boxes[i].score > boxes[best].score)) best = static_cast<int>(i);
    if (best < 0) return kept;
    kept.push_back(best);
    gone[best] = true;
    for (size_t i = 0; i < boxes.size(); i++)
      if (!gone[i] && iou_ref(boxes[i], boxes[best]) > threshold) gone[i] = true;
  }
}

// Boxes on a coarse grid (so many IoUs repeat and hit simple fractions) with
// scores from a few values (so many tie).
std::vector<Box> random_boxes(int n, std::mt19937& rng) {
  std::uniform_int_distribution<int> pos(0, 6), ext(1, 4), score(0, 5);
  std::vector<Box> b(n);
  for (auto& x : b) x = {score(rng) / 4.0, double(pos(rng)), double(pos(rng)), double(ext(rng)), double(ext(rng))};
  return b;
}

void put(const T& a, int batch, int n, int k, int bi, const std::vector<Box>& boxes) {
  for (int i = 0; i < n; i++) {
    const double v[5] = {boxes[i].score, boxes[i].x, boxes[i].y, boxes[i].w, boxes[i].h};
    for (int j = 0; j < k; j++) a.set((static_cast<size_t>(bi) * n + i) * k + j, j < 5 ? v[j] : 100 * bi + 10 * i + j);
  }
  (void)batch;
}

TEST_F(Nms, ForwardMatchesBruteForceGreedy) {
  std::mt19937 rng(18);
  int checked_ties = 0, checked_boundary = 0;
  for (int dt : {CCV_32F, CCV_64F, CCV_16F}) {
    for (int trial = 0; trial < 12; trial++) {
      const int batch = trial % 3 == 0 ? 0 : 1 + trial % 3, n = 1 + (trial * 7) % 23, k = 5 + trial % 3;
      const int bs = batch ? batch : 1;
      std::vector<int> shape = batch ? std::vector<int>{batch, n, k} : std::vector<int>{n, k};
      std::vector<int> cshape = batch ? std::vector<int>{batch, n} : std::vector<int>{n};
      const bool views = trial % 2 == 1;
      T a = views ? T::view(dt, shape) : T(dt, shape);
      T b = views ? T::view(dt, shape) : T(dt, shape);
      T c = views ? T::view(CCV_32S, cshape) : T(CCV_32S, cshape);
      std::vector<std::vector<Box>> all;
      for (int bi = 0; bi < bs; bi++) {
        all.push_back(random_boxes(n, rng));
        put(a, bs, n, k, bi, all.back());
      }
      // Thresholds that real IoUs in these boxes equal: 1/2, 1/3, 1/4, 0 ... and a few others.
      for (float thr : {0.0f, 0.25f, 1.0f / 3, 0.5f, 0.7f, 1.0f}) {
        ASSERT_EQ(run(nms(CCV_NNC_NMS_FORWARD, thr), {a}, {b, c}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
        for (int bi = 0; bi < bs; bi++) {
          const auto& boxes = all[bi];
          for (size_t i = 0; i < boxes.size(); i++)
            for (size_t j = 0; j < i; j++) {
              checked_ties += boxes[i].score == boxes[j].score;
              checked_boundary += iou_ref(boxes[i], boxes[j]) == static_cast<double>(thr);
            }
          const std::vector<int> want = brute_force(boxes, thr);
          for (int j = 0; j < n; j++) {
            const int got = static_cast<int>(c.get(static_cast<size_t>(bi) * n + j));
            const int w = j < static_cast<int>(want.size()) ? want[j] : -1;
            ASSERT_EQ(got, w) << "batch " << bi << " rank " << j << " threshold " << thr;
            for (int x = 0; x < k; x++) {
              const double v = b.get((static_cast<size_t>(bi) * n + j) * k + x);
              const double e = w < 0 ? 0.0 : a.get((static_cast<size_t>(bi) * n + w) * k + x);
              ASSERT_EQ(v, e) << "b[" << bi << ", " << j << ", " << x << "]";
            }
          }
        }
      }
      EXPECT_TRUE(b.guard_intact() && c.guard_intact());
    }
  }
  // The random boxes did exercise ties and IoUs exactly at a threshold.
  EXPECT_GT(checked_ties, 100);
  EXPECT_GT(checked_boundary, 20);
}

// IoU equal to the threshold keeps the box; a hair above it drops it.
TEST_F(Nms, ThresholdIsStrict) {
  T a(CCV_64F, {2, 5}), b(CCV_64F, {2, 5}), c(CCV_32S, {2});
  put(a, 1, 2, 5, 0, {{1, 0, 0, 2, 2}, {1, 0, 0, 2, 1}});  // tie in score, IoU exactly 1/2
  ASSERT_EQ(run(nms(CCV_NNC_NMS_FORWARD, 0.5f), {a}, {b, c}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(c.get(0), 0);
  EXPECT_EQ(c.get(1), 1);
  ASSERT_EQ(run(nms(CCV_NNC_NMS_FORWARD, std::nextafter(0.5f, 0.0f)), {a}, {b, c}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(c.get(0), 0);
  EXPECT_EQ(c.get(1), -1);
  for (int x = 0; x < 5; x++) EXPECT_EQ(b.get(5 + x), 0.0);
  // A NaN score ranks last; empty boxes overlap nothing.
  put(a, 1, 2, 5, 0, {{NAN, 0, 0, 2, 2}, {-5, 0, 0, 0, 3}});
  ASSERT_EQ(run(nms(CCV_NNC_NMS_FORWARD, 0.0f), {a}, {b, c}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_EQ(c.get(0), 1);
  EXPECT_EQ(c.get(1), 0);
}

// L = <r, b> moves with a's kept rows only: dL/da = the backward of r.
TEST_F(Nms, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(7);
  for (int batch : {0, 2}) {
    const int n = 9, k = 6;
    std::vector<int> shape = batch ? std::vector<int>{batch, n, k} : std::vector<int>{n, k};
    std::vector<int> cshape = batch ? std::vector<int>{batch, n} : std::vector<int>{n};
    T a(CCV_64F, shape), b(CCV_64F, shape), c(CCV_32S, cshape), r(CCV_64F, shape), da = T::view(CCV_64F, shape);
    std::uniform_real_distribution<double> pos(0, 2), ext(1, 3), s(0, 1);
    for (size_t i = 0; i < a.count(); i++) {
      const size_t col = i % k;
      a.set(i, col == 0 ? s(rng) : col <= 2 ? pos(rng) : col <= 4 ? ext(rng) : s(rng));
    }
    fill_uniform(r, rng);
    const ccv_nnc_cmd_t f = nms(CCV_NNC_NMS_FORWARD, 0.3f);
    ASSERT_EQ(run(f, {a}, {b, c}), CCV_NNC_EXEC_SUCCESS);
    int kept = 0;
    for (size_t i = 0; i < c.count(); i++) kept += c.get(i) >= 0;
    EXPECT_GT(kept, 1);
    EXPECT_LT(kept, static_cast<int>(c.count()));
    ASSERT_EQ(run(nms(CCV_NNC_NMS_BACKWARD, 0.3f), {r, nullptr, nullptr, nullptr, c}, {da}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    auto loss = [&] {
      EXPECT_EQ(run(f, {a}, {b, c}), CCV_NNC_EXEC_SUCCESS);
      double l = 0;
      for (size_t i = 0; i < b.count(); i++) l += b.get(i) * r.get(i);
      return l;
    };
    const double eps = 1e-7;
    for (size_t i = 0; i < a.count(); i++) {
      const double v = a.get(i);
      a.set(i, v + eps);
      const double up = loss();
      a.set(i, v - eps);
      const double down = loss();
      a.set(i, v);
      EXPECT_NEAR(da.get(i), (up - down) / (2 * eps), 1e-6) << i;
    }
    EXPECT_TRUE(da.guard_intact());
  }
}

// libnnc's description file: b like a, c 32S [n] or [batch, n]; da like a
// (input 2); the forward needs a and both outputs, the backward gb and c.
TEST_F(Nms, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 4); };
  ccv_nnc_tensor_param_t in[5] = {param(CCV_16F, {7, 5})}, out[2];
  ccv_nnc_hint_tensor_auto(nms(CCV_NNC_NMS_FORWARD, 0.5f), in, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{7, 5, 0, 0}));
  EXPECT_EQ(out[0].datatype, CCV_16F);
  EXPECT_EQ(dims(out[1]), (std::vector<int>{7, 0, 0, 0}));
  EXPECT_EQ(out[1].datatype, CCV_32S);
  in[0] = param(CCV_32F, {3, 7, 6});
  ccv_nnc_hint_tensor_auto(nms(CCV_NNC_NMS_FORWARD, 0.5f), in, 1, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[1]), (std::vector<int>{3, 7, 0, 0}));
  in[2] = param(CCV_64F, {4, 8, 5});
  ccv_nnc_hint_tensor_auto(nms(CCV_NNC_NMS_BACKWARD, 0.5f), in, 5, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{4, 8, 5, 0}));
  EXPECT_EQ(out[0].datatype, CCV_64F);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = nms(CCV_NNC_NMS_FORWARD, 0.5f), bw = nms(CCV_NNC_NMS_BACKWARD, 0.5f);
  EXPECT_TRUE(bm(f, 1, 1, 2, 3));
  EXPECT_FALSE(bm(f, 1, 1, 2, 1));
  EXPECT_FALSE(bm(f, 1, 0, 2, 3));
  EXPECT_TRUE(bm(bw, 5, 17, 1, 1));
  EXPECT_TRUE(bm(bw, 5, 31, 1, 1));
  EXPECT_FALSE(bm(bw, 5, 1, 1, 1));   // c is needed
  EXPECT_FALSE(bm(bw, 5, 16, 1, 1));  // gb is needed
  EXPECT_FALSE(bm(bw, 5, 17, 1, 0));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(f, 0, 1, 0, 2));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(bw, 0, 5, 0, 1));
  float b[15];
  int c[3];
  ASSERT_EQ(nnc_test_nms_example(b, c), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // Ranked 0.9, 0.7, 0.5: the 0.7 box has IoU 3/4 with the 0.9 one (dropped), the 0.5 box 1/2 (kept).
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], 0);
  EXPECT_EQ(c[2], -1);
  const float want[15] = {0.9f, 0, 0, 2, 2, 0.5f, 0, 0, 2, 1, 0, 0, 0, 0, 0};
  for (int i = 0; i < 15; i++) EXPECT_EQ(b[i], want[i]) << i;
}

TEST_F(Nms, BadInputFailsWithAMessage) {
  T a(CCV_32F, {4, 5}), b(CCV_32F, {4, 5}), c(CCV_32S, {4}), narrow(CCV_32F, {4, 4}), b64(CCV_64F, {4, 5});
  T cf(CCV_32F, {4}), c3(CCV_32S, {3}), a1(CCV_32F, {20}), ai(CCV_32S, {4, 5});
  const ccv_nnc_cmd_t f = nms(CCV_NNC_NMS_FORWARD, 0.5f);
  EXPECT_EQ(run(f, {a}, {b, c}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {narrow}, {narrow, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("score, x, y, width, height")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a}, {b64, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a}, {b, cf}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("32S")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a}, {b, c3}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a1}, {a1, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {ai}, {ai, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a}, {b, nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {nullptr}, {b, c}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a}, {b}), CCV_NNC_EXEC_INVALID);
  const ccv_nnc_cmd_t bw = nms(CCV_NNC_NMS_BACKWARD, 0.5f);
  T g(CCV_32F, {4, 5}), da(CCV_32F, {4, 5});
  for (int i = 0; i < 4; i++) c.set(i, i == 3 ? -1 : 2 - i);
  EXPECT_EQ(run(bw, {g, nullptr, a, b, c}, {da}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(bw, {g, nullptr, a, b, nullptr}, {da}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {g, nullptr, a, b, c}, {b64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {g, nullptr, a, b}, {da}), CCV_NNC_EXEC_INVALID);
  for (size_t i = 0; i < da.count(); i++) da.set(i, 3);
  c.set(1, 4);  // outside a's 4 rows
  EXPECT_EQ(run(bw, {g, nullptr, a, b, c}, {da}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("outside")) << ccv_nnc_error_message();
  for (size_t i = 0; i < da.count(); i++) EXPECT_EQ(da.get(i), 3) << "da written on a refused call";
}

}  // namespace
