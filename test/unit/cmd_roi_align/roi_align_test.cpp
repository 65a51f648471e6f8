// ROI_ALIGN: a closed form (bins of an affine map average to the map at the
// bin's centre), an fp64 reference written with tent weights, finite
// differences for the backward, libnnc's contract, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_roi_align_example(float b[4]);

using namespace cmdtest;

namespace {

class RoiAlign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

ccv_nnc_cmd_t roi(uint32_t id, int rows, int cols) {
  ccv_nnc_cmd_t c = command(id, CCV_NNC_BACKEND_CPU_REF);
  c.info.size.dim[0] = rows, c.info.size.dim[1] = cols, c.info.size.dim[2] = 1;
  return c;
}

// An image's shape in its format; n = 0 means 3-d.
std::vector<int> image_shape(int n, int h, int w, int c, bool nchw) {
  std::vector<int> s = nchw ? std::vector<int>{c, h, w} : std::vector<int>{h, w, c};
  if (n) s.insert(s.begin(), n);
  return s;
}

// Linear index of (n, y, x, c) in a packed image of that shape.
size_t idx(int n, int y, int x, int c, int h, int w, int ch, bool nchw) {
  return nchw ? ((static_cast<size_t>(n) * ch + c) * h + y) * w + x : ((static_cast<size_t>(n) * h + y) * w + x) * ch + c;
}

struct Box {
  double x, y, w, h;
};

// Bilinear read at pixel coordinates (py, px) as a sum of tent weights over
// every pixel: zero beyond one pixel outside, clamped to the map otherwise.
double tent_read(const T& a, int n, int c, double py, double px, int h, int w, int ch, bool nchw) {
  if (py < -1 || py > h || px < -1 || px > w) return 0;
  py = std::min(std::max(py, 0.0), h - 1.0), px = std::min(std::max(px, 0.0), w - 1.0);
  double v = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const double wt = std::max(0.0, 1 - std::fabs(py - y)) * std::max(0.0, 1 - std::fabs(px - x));
      if (wt > 0) v += wt * a.get(idx(n, y, x, c, h, w, ch, nchw));
    }
  return v;
}

double reference(const T& a, int n, int c, const Box& b, int i, int j, int rows, int cols, int h, int w, int ch,
                 bool nchw) {
  const double bh = std::max(b.h, 0.0) * h / rows, bw = std::max(b.w, 0.0) * w / cols;
  const int sy = std::max(1, static_cast<int>(std::ceil(bh))), sx = std::max(1, static_cast<int>(std::ceil(bw)));
  double s = 0;
  for (int iy = 0; iy < sy; iy++)
    for (int ix = 0; ix < sx; ix++) {
      const double ys = b.y * h + bh * (i + (iy + 0.5) / sy), xs = b.x * w + bw * (j + (ix + 0.5) / sx);
      s += tent_read(a, n, c, ys - 0.5, xs - 0.5, h, w, ch, nchw);
    }
  return s / (sy * sx);
}

// Inside the map, an affine map a = 1 + 0.5 y + 0.25 x - c (pixel centres at
// half-integers) pooled over a box gives the same function at each bin's
// centre: the samples of a bin are symmetric about it.
TEST_F(RoiAlign, AffineMapGivesBinCentres) {
  std::mt19937 rng(3);
  for (bool nchw : {false, true}) {
    const int h = 11, w = 9, ch = 3, rows = 3, cols = 4, r = 4;
    T a(CCV_64F, image_shape(1, h, w, ch, nchw), nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int c = 0; c < ch; c++) a.set(idx(0, y, x, c, h, w, ch, nchw), 1 + 0.5 * (y + 0.5) + 0.25 * (x + 0.5) - c);
    T boxes(CCV_64F, {r, 4});
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<Box> bs(r);
    for (int k = 0; k < r; k++) {
      // Keep every sample between the first and last pixel centres.
      const double x0 = 0.5 + u(rng) * 3, y0 = 0.5 + u(rng) * 4;
      const double bw = u(rng) * (w - 0.5 - x0), bh = u(rng) * (h - 0.5 - y0);
      bs[k] = {x0 / w, y0 / h, bw / w, bh / h};
      const double v[4] = {bs[k].x, bs[k].y, bs[k].w, bs[k].h};
      for (int j = 0; j < 4; j++) boxes.set(k * 4 + j, v[j]);
    }
    T b(CCV_64F, image_shape(r, rows, cols, ch, nchw), nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC);
    ASSERT_EQ(run(roi(CCV_NNC_ROI_ALIGN_FORWARD, rows, cols), {a, boxes}, {b}), CCV_NNC_EXEC_SUCCESS)
        << ccv_nnc_error_message();
    for (int k = 0; k < r; k++)
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
          for (int c = 0; c < ch; c++) {
            const double yc = (bs[k].y + bs[k].h * (i + 0.5) / rows) * h, xc = (bs[k].x + bs[k].w * (j + 0.5) / cols) * w;
            EXPECT_NEAR(b.get(idx(k, i, j, c, rows, cols, ch, nchw)), 1 + 0.5 * yc + 0.25 * xc - c, 1e-12)
                << "box " << k << " bin " << i << ", " << j << " channel " << c;
          }
  }
}

// Random maps and boxes (some past the borders, some empty) against the tent
// reference: NHWC and NCHW, one image per box or one for all, 3-d, views, 16F, 32F and 64F.
TEST_F(RoiAlign, ForwardMatchesTentReference) {
  std::mt19937 rng(5);
  struct Case {
    int images, boxes, h, w, ch, rows, cols;
  };
  const Case cases[] = {{3, 3, 7, 10, 2, 2, 3}, {1, 4, 5, 6, 3, 3, 3}, {0, 1, 6, 5, 4, 4, 2}, {2, 2, 13, 9, 1, 5, 1}};
  for (int dt : {CCV_64F, CCV_32F, CCV_16F})
    for (bool nchw : {false, true})
      for (const Case& cs : cases)
        for (bool views : {false, true}) {
          const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
          const auto ashape = image_shape(cs.images, cs.h, cs.w, cs.ch, nchw);
          const auto bshape = image_shape(cs.images ? cs.boxes : 0, cs.rows, cs.cols, cs.ch, nchw);
          T a = views ? T::view(dt, ashape, fmt) : T(dt, ashape, fmt);
          T b = views ? T::view(dt, bshape, fmt) : T(dt, bshape, fmt);
          T boxes = cs.images ? T(dt, {cs.boxes, 4}) : T(dt, {4});
          fill_random(a, rng);
          std::uniform_int_distribution<int> q(-8, 40);
          std::vector<Box> bs(cs.boxes);
          for (int k = 0; k < cs.boxes; k++) {
            // Multiples of 1/32 from -1/4 to 5/4 (exact in 32F); k == 1 gets an empty box.
            bs[k] = {q(rng) / 32.0, q(rng) / 32.0, k == 1 ? 0.0 : (q(rng) + 8) / 32.0, (q(rng) + 8) / 32.0};
            const double v[4] = {bs[k].x, bs[k].y, bs[k].w, bs[k].h};
            for (int j = 0; j < 4; j++) boxes.set(k * 4 + j, v[j]);
          }
          ASSERT_EQ(run(roi(CCV_NNC_ROI_ALIGN_FORWARD, cs.rows, cs.cols), {a, boxes}, {b}), CCV_NNC_EXEC_SUCCESS)
              << ccv_nnc_error_message();
          // A packed fp64 copy of a for the reference.
          T ap(CCV_64F, ashape, fmt);
          for (size_t i = 0; i < a.count(); i++) ap.set(i, a.get(i));
          const double tol = dt == CCV_16F ? 1e-3 : dt == CCV_32F ? 1e-5 : 1e-12;
          for (int k = 0; k < cs.boxes; k++)
            for (int i = 0; i < cs.rows; i++)
              for (int j = 0; j < cs.cols; j++)
                for (int c = 0; c < cs.ch; c++) {
                  const int n = cs.images == 1 || cs.images == 0 ? 0 : k;
                  const double want = reference(ap, n, c, bs[k], i, j, cs.rows, cs.cols, cs.h, cs.w, cs.ch, nchw);
                  ASSERT_NEAR(b.get(idx(k, i, j, c, cs.rows, cs.cols, cs.ch, nchw)), want, tol * std::max(1.0, std::fabs(want)))
                      << "box " << k << " bin " << i << ", " << j << " channel " << c << (nchw ? " NCHW" : " NHWC");
                }
          EXPECT_TRUE(b.guard_intact());
        }
}

// The forward is linear in a: its backward against central differences, with
// boxes crossing the border and one image shared by several boxes.
TEST_F(RoiAlign, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(9);
  for (bool nchw : {false, true})
    for (int images : {1, 3}) {
      const int fmt = nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC;
      const int h = 6, w = 7, ch = 2, rows = 2, cols = 3, r = 3;
      T a(CCV_64F, image_shape(images, h, w, ch, nchw), fmt);
      fill_uniform(a, rng);
      T boxes(CCV_64F, {r, 4});
      const double bv[3][4] = {{0.1, 0.2, 0.7, 0.6}, {-0.2, 0.5, 0.6, 0.7}, {0.55, 0.05, 0.31, 0.93}};
      for (int k = 0; k < r; k++)
        for (int j = 0; j < 4; j++) boxes.set(k * 4 + j, bv[k][j]);
      expect_gradients_match(roi(CCV_NNC_ROI_ALIGN_FORWARD, rows, cols), roi(CCV_NNC_ROI_ALIGN_BACKWARD, rows, cols),
                             ccv_nnc_no_hint, {&a, &boxes}, {image_shape(r, rows, cols, ch, nchw)}, {true, false}, rng,
                             1e-6, 1e-7, fmt);
    }
}

// libnnc's description file: b is a with rows x cols in place of its height
// and width (at least 1 each), da takes a's (input 1); the forward needs a and
// the boxes, the backward g and the boxes; no in-place pair.
TEST_F(RoiAlign, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  ccv_nnc_tensor_param_t in[3] = {param(CCV_32F, {2, 9, 8, 3}), param(CCV_32F, {2, 4})}, out[1];
  ccv_nnc_hint_tensor_auto(roi(CCV_NNC_ROI_ALIGN_FORWARD, 5, 4), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 5, 4, 3, 0}));
  in[0] = param(CCV_16F, {2, 3, 9, 8}, CCV_TENSOR_FORMAT_NCHW);
  ccv_nnc_hint_tensor_auto(roi(CCV_NNC_ROI_ALIGN_FORWARD, 5, 4), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 5, 4, 0}));
  EXPECT_EQ(out[0].datatype, CCV_16F);
  in[0] = param(CCV_32F, {9, 8, 3});
  ccv_nnc_hint_tensor_auto(roi(CCV_NNC_ROI_ALIGN_FORWARD, 0, 0), in, 2, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{1, 1, 3, 0, 0}));
  in[1] = param(CCV_64F, {4, 7, 6, 2});
  ccv_nnc_hint_tensor_auto(roi(CCV_NNC_ROI_ALIGN_BACKWARD, 2, 2), in, 3, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{4, 7, 6, 2, 0}));
  EXPECT_EQ(out[0].datatype, CCV_64F);
  auto bm = [](const ccv_nnc_cmd_t& c, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(c, ni, no, &inputs, 1, &outputs, 1);
  };
  const ccv_nnc_cmd_t f = roi(CCV_NNC_ROI_ALIGN_FORWARD, 2, 2), bw = roi(CCV_NNC_ROI_ALIGN_BACKWARD, 2, 2);
  EXPECT_TRUE(bm(f, 2, 3, 1, 1));
  EXPECT_FALSE(bm(f, 2, 1, 1, 1));
  EXPECT_FALSE(bm(f, 2, 3, 1, 0));
  EXPECT_TRUE(bm(bw, 3, 5, 1, 1));
  EXPECT_TRUE(bm(bw, 3, 7, 1, 1));
  EXPECT_FALSE(bm(bw, 3, 3, 1, 1));  // the boxes are needed
  EXPECT_FALSE(bm(bw, 3, 6, 1, 1));
  EXPECT_FALSE(bm(bw, 3, 5, 2, 3));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(f, 0, 2, 0, 1));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(bw, 0, 3, 0, 1));
  float b[4];
  ASSERT_EQ(nnc_test_roi_align_example(b), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // Each bin's four samples fall on its four pixel centres: 2 x 2 block means of 0 .. 15.
  const float want[4] = {2.5f, 4.5f, 10.5f, 12.5f};
  for (int i = 0; i < 4; i++) EXPECT_EQ(b[i], want[i]) << i;
}

TEST_F(RoiAlign, BadInputFailsWithAMessage) {
  T a(CCV_32F, {2, 6, 6, 3}), boxes(CCV_32F, {2, 4}), b(CCV_32F, {2, 2, 2, 3});
  T boxes3(CCV_32F, {3, 4}), boxes5(CCV_32F, {2, 5}), b64(CCV_64F, {2, 2, 2, 3}), bwrong(CCV_32F, {2, 3, 2, 3});
  T bnchw(CCV_32F, {2, 3, 2, 2}, CCV_TENSOR_FORMAT_NCHW), a2(CCV_32F, {6, 6}), boxesi(CCV_32S, {2, 4});
  for (size_t i = 0; i < 8; i++) boxes.set(i, 0.25);
  const ccv_nnc_cmd_t f = roi(CCV_NNC_ROI_ALIGN_FORWARD, 2, 2);
  EXPECT_EQ(run(f, {a, boxes}, {b}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a, boxes3}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("one per box")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a, boxes5}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, boxes}, {b64}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, boxes}, {bwrong}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("2 x 2 grid")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {a, boxes}, {bnchw}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a2, boxes}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, boxesi}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a, nullptr}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {a}, {b}), CCV_NNC_EXEC_INVALID);
  boxes.set(5, NAN);
  EXPECT_EQ(run(f, {a, boxes}, {b}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("finite")) << ccv_nnc_error_message();
  boxes.set(5, 0.25);
  const ccv_nnc_cmd_t bw = roi(CCV_NNC_ROI_ALIGN_BACKWARD, 2, 2);
  T da(CCV_32F, {2, 6, 6, 3}), da5(CCV_32F, {2, 5, 6, 3});
  EXPECT_EQ(run(bw, {b, nullptr, boxes}, {da}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(bw, {b, a, boxes}, {da5}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {b, a, nullptr}, {da}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(bw, {b, a, boxes}, {da, boxes}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("no gradient")) << ccv_nnc_error_message();
  EXPECT_EQ(run(bw, {b, a}, {da}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
