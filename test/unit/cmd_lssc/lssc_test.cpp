// COMPRESSION_LSSC: the block format checked against an encoder and decoder
// written here from its description (lssc.cpp), exact round trips where each
// block's values lie on its four levels, the error bound elsewhere, libnnc's
// contract from its description file, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_lssc_example(unsigned short packed[4], unsigned short back[16]);

using namespace cmdtest;

namespace {

class Lssc : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

struct Shape {
  int n, h, w, c;  // n = 0: 3-d
  bool nchw;
  std::vector<int> dims(int hh, int ww) const {
    std::vector<int> d = nchw ? std::vector<int>{c, hh, ww} : std::vector<int>{hh, ww, c};
    if (n) d.insert(d.begin(), n);
    return d;
  }
  std::vector<int> image() const { return dims(h, w); }
  std::vector<int> packed() const { return dims((h + 3) / 4, (w + 3) / 4 * 4); }
  int format() const { return nchw ? CCV_TENSOR_FORMAT_NCHW : CCV_TENSOR_FORMAT_NHWC; }
  // Linear index of (n, y, x, c) in a packed tensor of hh x ww.
  size_t at(int i, int y, int x, int ch, int hh, int ww) const {
    return nchw ? ((static_cast<size_t>(i) * c + ch) * hh + y) * ww + x : ((static_cast<size_t>(i) * hh + y) * ww + x) * c + ch;
  }
};

const Shape kShapes[] = {{2, 8, 12, 3, false}, {1, 9, 6, 2, true}, {0, 5, 7, 4, false}, {3, 4, 4, 1, true},
                         {0, 1, 1, 2, true},   {2, 13, 3, 1, false}};

// Each 4 x 4 block of each channel: f(image index, channel, block row, block column).
template <class F>
void for_each_block(const Shape& s, F&& f) {
  for (int i = 0; i < std::max(s.n, 1); i++)
    for (int ch = 0; ch < s.c; ch++)
      for (int by = 0; by < (s.h + 3) / 4; by++)
        for (int bx = 0; bx < (s.w + 3) / 4; bx++) f(i, ch, by, bx);
}

// The encoder as described: lo / hi of the block, each pixel the nearest of the
// four levels lo + (hi - lo) k / 3 (lower on a tie), 2 bits at 2 (4 r + c).
void expect_block_encoded(const Shape& s, const T& x, const T& p, int i, int ch, int by, int bx) {
  std::vector<double> v;
  for (int r = 0; r < 4; r++)
    for (int q = 0; q < 4; q++) {
      const int y = 4 * by + r, xx = 4 * bx + q;
      v.push_back(y < s.h && xx < s.w ? x.get(s.at(i, y, xx, ch, s.h, s.w)) : NAN);
    }
  double lo = INFINITY, hi = -INFINITY;
  for (double a : v)
    if (!std::isnan(a)) lo = std::min(lo, a), hi = std::max(hi, a);
  const int ph = (s.h + 3) / 4, pw = (s.w + 3) / 4 * 4;
  auto slot = [&](int k) { return p.at(s.at(i, by, 4 * bx + k, ch, ph, pw)); };
  uint16_t raw[4];
  for (int k = 0; k < 4; k++) std::memcpy(&raw[k], slot(k), 2);
  EXPECT_EQ(half_value(raw[0]), lo);
  EXPECT_EQ(half_value(raw[1]), hi);
  const uint32_t bits = raw[2] | static_cast<uint32_t>(raw[3]) << 16;
  for (int j = 0; j < 16; j++) {
    int best = 0;
    if (!std::isnan(v[j]) && hi > lo) {
      double err = INFINITY;
      for (int k = 0; k < 4; k++) {
        const double e = std::fabs(v[j] - (lo + (hi - lo) * k / 3));
        if (e < err) err = e, best = k;
      }
    }
    ASSERT_EQ((bits >> (2 * j)) & 3u, static_cast<uint32_t>(best)) << "pixel " << j << " of block " << by << ", " << bx;
  }
}

// Blocks on their levels: a random lo and step per block (multiples of 1/8), each
// pixel lo + k step for a random k (so 16F holds every level exactly).
void fill_on_levels(const Shape& s, const T& x, std::mt19937& rng) {
  std::uniform_int_distribution<int> lo8(-32, 32), step8(0, 8), k4(0, 3);
  for_each_block(s, [&](int i, int ch, int by, int bx) {
    const double lo = lo8(rng) / 8.0, step = step8(rng) / 8.0;
    std::vector<size_t> inside;
    for (int r = 0; r < 4; r++)
      for (int q = 0; q < 4; q++) {
        const int y = 4 * by + r, xx = 4 * bx + q;
        if (y < s.h && xx < s.w) inside.push_back(s.at(i, y, xx, ch, s.h, s.w));
      }
    // The first pixel on level 0 and the last on level 3, so lo and step are the block's.
    for (size_t k = 0; k < inside.size(); k++)
      x.set(inside[k], lo + (k == 0 ? 0 : k + 1 == inside.size() ? 3 : k4(rng)) * step);
  });
}

TEST_F(Lssc, FormatAndExactRoundTripOnLevels) {
  std::mt19937 rng(21);
  for (const Shape& s : kShapes)
    for (bool views : {false, true}) {
      T x = views ? T::view(CCV_16F, s.image(), s.format()) : T(CCV_16F, s.image(), s.format());
      T p = views ? T::view(CCV_16F, s.packed(), s.format()) : T(CCV_16F, s.packed(), s.format());
      T y = views ? T::view(CCV_16F, s.image(), s.format()) : T(CCV_16F, s.image(), s.format());
      fill_on_levels(s, x, rng);
      ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), {x}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for_each_block(s, [&](int i, int ch, int by, int bx) { expect_block_encoded(s, x, p, i, ch, by, bx); });
      ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {p}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      for (size_t k = 0; k < x.count(); k++) ASSERT_EQ(y.bits(k), x.bits(k)) << k;
      EXPECT_TRUE(p.guard_intact() && y.guard_intact());
    }
}

// Any values: the encoding as described, and each decoded pixel within a sixth
// of its block's range of the original (plus the 16F rounding).
TEST_F(Lssc, ErrorBoundedByTheBlockRange) {
  std::mt19937 rng(22);
  for (const Shape& s : kShapes) {
    T x(CCV_16F, s.image(), s.format()), p(CCV_16F, s.packed(), s.format());
    T y(CCV_16F, s.dims((s.h + 3) / 4 * 4, (s.w + 3) / 4 * 4), s.format());  // libnnc's padded shape
    fill_random(x, rng);
    ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), {x}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {p}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    const int yh = (s.h + 3) / 4 * 4, yw = (s.w + 3) / 4 * 4;
    for_each_block(s, [&](int i, int ch, int by, int bx) {
      expect_block_encoded(s, x, p, i, ch, by, bx);
      double lo = INFINITY, hi = -INFINITY;
      for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++) {
          const int yy = 4 * by + r, xx = 4 * bx + q;
          if (yy < s.h && xx < s.w) lo = std::min(lo, x.get(s.at(i, yy, xx, ch, s.h, s.w))), hi = std::max(hi, x.get(s.at(i, yy, xx, ch, s.h, s.w)));
        }
      for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++) {
          const int yy = 4 * by + r, xx = 4 * bx + q;
          const double got = y.get(s.at(i, yy, xx, ch, yh, yw));
          if (yy < s.h && xx < s.w)
            EXPECT_LE(std::fabs(got - x.get(s.at(i, yy, xx, ch, s.h, s.w))), (hi - lo) / 6 + std::fabs(got) / 1024)
                << "pixel " << yy << ", " << xx;
          else
            EXPECT_EQ(got, lo) << "padding decodes to level 0";
        }
    });
  }
}

// Values halfway between two levels take the lower one.
TEST_F(Lssc, TiesGoToTheLowerLevel) {
  const Shape s{0, 4, 4, 1, false};
  T x(CCV_16F, s.image()), p(CCV_16F, s.packed()), y(CCV_16F, s.image());
  const double v[16] = {0, 3, 0.5, 1.5, 2.5, 1, 2, 0.5, 1.5, 2.5, 0, 3, 3, 0, 0.5, 2.5};
  for (int i = 0; i < 16; i++) x.set(i, v[i]);
  ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), {x}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  expect_block_encoded(s, x, p, 0, 0, 0, 0);
  ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {p}, {y}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (int i = 0; i < 16; i++) EXPECT_EQ(y.get(i), v[i] - (v[i] == std::floor(v[i]) ? 0 : 0.5)) << i;
}

// Several tensors in one call, and the backward ignoring inputs past its outputs.
TEST_F(Lssc, SeveralTensorsAtOnce) {
  std::mt19937 rng(23);
  const Shape a = kShapes[0], b = kShapes[1];
  T xa(CCV_16F, a.image(), a.format()), xb(CCV_16F, b.image(), b.format());
  T pa(CCV_16F, a.packed(), a.format()), pb(CCV_16F, b.packed(), b.format());
  T ya(CCV_16F, a.image(), a.format()), yb(CCV_16F, b.image(), b.format());
  fill_on_levels(a, xa, rng);
  fill_on_levels(b, xb, rng);
  ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), {xa, xb}, {pa, pb}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {pa, pb}, {ya, yb}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (size_t k = 0; k < xa.count(); k++) ASSERT_EQ(ya.bits(k), xa.bits(k));
  for (size_t k = 0; k < xb.count(); k++) ASSERT_EQ(yb.bits(k), xb.bits(k));
  T yb2(CCV_16F, b.image(), b.format());
  ASSERT_EQ(run(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), {pb, pa}, {yb2}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  for (size_t k = 0; k < xb.count(); k++) ASSERT_EQ(yb2.bits(k), xb.bits(k));
}

// libnnc's description file: height to ceil(h / 4), width to 4 ceil(w / 4);
// back to 4 h' x w'; slots one for one (the backward's outputs a prefix of its
// inputs); no in-place pair.
TEST_F(Lssc, LibnncContract) {
  auto dims = [](const ccv_nnc_tensor_param_t& p) { return std::vector<int>(p.dim, p.dim + 5); };
  ccv_nnc_tensor_param_t in[2] = {param(CCV_16F, {2, 9, 10, 3}), param(CCV_16F, {2, 3, 5, 7}, CCV_TENSOR_FORMAT_NCHW)}, out[2];
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), in, 2, ccv_nnc_no_hint, out, 2);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 3, 12, 3, 0}));
  EXPECT_EQ(dims(out[1]), (std::vector<int>{2, 3, 2, 8, 0}));
  EXPECT_EQ(out[1].format, CCV_TENSOR_FORMAT_NCHW);
  EXPECT_EQ(out[0].datatype, CCV_16F);
  ccv_nnc_tensor_param_t back[2];
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_COMPRESSION_LSSC_BACKWARD), out, 2, ccv_nnc_no_hint, back, 2);
  EXPECT_EQ(dims(back[0]), (std::vector<int>{2, 12, 12, 3, 0}));
  EXPECT_EQ(dims(back[1]), (std::vector<int>{2, 3, 8, 8, 0}));
  in[0] = param(CCV_16F, {5, 6, 2});
  ccv_nnc_hint_tensor_auto(command(CCV_NNC_COMPRESSION_LSSC_FORWARD), in, 1, ccv_nnc_no_hint, out, 1);
  EXPECT_EQ(dims(out[0]), (std::vector<int>{2, 8, 2, 0, 0}));
  auto bm = [](uint32_t id, int ni, uint64_t inputs, int no, uint64_t outputs) {
    return ccv_nnc_cmd_bitmask(command(id), ni, no, &inputs, 1, &outputs, 1);
  };
  const uint32_t f = CCV_NNC_COMPRESSION_LSSC_FORWARD, b = CCV_NNC_COMPRESSION_LSSC_BACKWARD;
  EXPECT_TRUE(bm(f, 2, 3, 2, 3));
  EXPECT_FALSE(bm(f, 2, 3, 2, 1));
  EXPECT_FALSE(bm(f, 3, 5, 3, 5));
  EXPECT_FALSE(bm(f, 2, 3, 3, 7));
  EXPECT_TRUE(bm(b, 3, 7, 2, 3));
  EXPECT_TRUE(bm(b, 2, 3, 2, 3));
  EXPECT_FALSE(bm(b, 2, 1, 2, 3));
  EXPECT_FALSE(bm(b, 2, 3, 2, 1));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(command(f), 0, 1, 0, 1));
  EXPECT_FALSE(ccv_nnc_cmd_allow_inplace(command(b), 0, 1, 0, 1));
  unsigned short packed[4], back16[16];
  ASSERT_EQ(nnc_test_lssc_example(packed, back16), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  // lo 0, hi 3 (16F bits), every row's levels 0, 1, 2, 3 = 0b11100100 per row.
  const unsigned short want[4] = {0x0000, 0x4200, 0xe4e4, 0xe4e4};
  for (int i = 0; i < 4; i++) EXPECT_EQ(packed[i], want[i]) << i;
  const unsigned short v[4] = {0x0000, 0x3c00, 0x4000, 0x4200};
  for (int i = 0; i < 16; i++) EXPECT_EQ(back16[i], v[i % 4]) << i;
}

TEST_F(Lssc, BadInputFailsWithAMessage) {
  T x(CCV_16F, {1, 8, 8, 2}), p(CCV_16F, {1, 2, 8, 2}), p2(CCV_16F, {1, 2, 4, 2}), x32(CCV_32F, {1, 8, 8, 2});
  T pn(CCV_16F, {1, 2, 2, 8}, CCV_TENSOR_FORMAT_NCHW), x2(CCV_16F, {8, 8});
  const ccv_nnc_cmd_t f = command(CCV_NNC_COMPRESSION_LSSC_FORWARD), b = command(CCV_NNC_COMPRESSION_LSSC_BACKWARD);
  EXPECT_EQ(run(f, {x}, {p}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {p2}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("compresses to")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x32}, {p}), CCV_NNC_EXEC_INVALID);
  EXPECT_TRUE(message_has("16F")) << ccv_nnc_error_message();
  EXPECT_EQ(run(f, {x}, {pn}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x2}, {p}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x, x}, {p}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(f, {x}, {nullptr}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {p}, {x}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  EXPECT_EQ(run(b, {p}, {x, x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {p2}, {x}), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(run(b, {nullptr}, {x}), CCV_NNC_EXEC_INVALID);
}

}  // namespace
