// The GPU_REF shape kernels' index maps (cmd/common/gpu_shape.hpp) on the CPU:
// pad_source and up_tap against the CPU_REF families' own maps
// (pad::source_index, upsample::tap) over every small case, and pad_map /
// up_map (offsets through strides, views) against naive coordinate walks on
// random shapes with a fixed seed.
#include "cmd/common/gpu_shape.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cmd/pad/pad.hpp"
#include "cmd/upsample/upsample.hpp"

namespace {

using namespace nnc::gpu;

static_assert(static_cast<int>(kPadZero) == static_cast<int>(CCV_NNC_PAD_ZERO) &&
                  static_cast<int>(kPadReplicate) == static_cast<int>(CCV_NNC_PAD_REPLICATE) &&
                  static_cast<int>(kPadReflect) == static_cast<int>(CCV_NNC_PAD_REFLECT),
              "the GPU pad types are libnnc's");

TEST(GpuShape, PadSourceIsCpuRefs) {
  for (int type : {CCV_NNC_PAD_ZERO, CCV_NNC_PAD_REPLICATE, CCV_NNC_PAD_REFLECT})
    for (int n = 1; n <= 7; n++)
      for (int begin = 0; begin <= 9; begin++)
        for (int i = 0; i < n + begin + 12; i++)
          ASSERT_EQ(pad_source(type, i, begin, n), nnc::pad::source_index(type, i, begin, n))
              << "type " << type << " n " << n << " begin " << begin << " i " << i;
}

// Row-major coordinates of element i over dim.
std::vector<int> coords(int64_t i, const std::vector<int>& dim) {
  std::vector<int> c(dim.size());
  for (int d = static_cast<int>(dim.size()) - 1; d >= 0; d--) {
    c[d] = static_cast<int>(i % dim[d]);
    i /= dim[d];
  }
  return c;
}

TEST(GpuShape, PadMapWalksViews) {
  std::mt19937 rng(401);
  for (int t = 0; t < 60; t++) {
    const int nd = 1 + static_cast<int>(rng() % 4), type = static_cast<int>(rng() % 3);
    std::vector<int> small(nd), big(nd), begin(nd);
    std::vector<int64_t> ss(nd), bs(nd);
    int64_t m = 1, mb = 1;
    for (int d = nd - 1; d >= 0; d--) {
      small[d] = 1 + static_cast<int>(rng() % 5);
      begin[d] = static_cast<int>(rng() % 4);
      big[d] = small[d] + begin[d] + static_cast<int>(rng() % 4);
      ss[d] = m;  // views: parents one wider on every axis
      m *= small[d] + 1;
      bs[d] = mb;
      mb *= big[d] + 2;
    }
    PadMap pm;
    ASSERT_TRUE(make_pad_map(pm, type, small.data(), ss.data(), big.data(), bs.data(), nd, begin.data()));
    int64_t count = 1;
    for (int d = 0; d < nd; d++) count *= big[d];
    ASSERT_EQ(pm.count, count);
    for (int64_t i = 0; i < count; i++) {
      const std::vector<int> c = coords(i, big);
      int64_t want_big = 0, want_small = 0;
      bool zero = false;
      for (int d = 0; d < nd; d++) {
        want_big += c[d] * bs[d];
        const int j = nnc::pad::source_index(type, c[d], begin[d], small[d]);
        if (j < 0)
          zero = true;
        else
          want_small += j * ss[d];
      }
      int64_t got_big = -7;
      const int64_t got = pad_map(pm, i, &got_big);
      ASSERT_EQ(got_big, want_big);
      ASSERT_EQ(got, zero ? -1 : want_small) << "case " << t << " element " << i;
    }
  }
  // Refused: a negative begin, a big axis too short.
  const int s[] = {3}, b[] = {4}, neg[] = {-1}, two[] = {2};
  const int64_t st[] = {1};
  PadMap pm;
  EXPECT_FALSE(make_pad_map(pm, kPadZero, s, st, b, st, 1, neg));
  EXPECT_FALSE(make_pad_map(pm, kPadZero, s, st, b, st, 1, two));
  EXPECT_FALSE(make_pad_map(pm, 3, s, st, b, st, 1, two));
}

TEST(GpuShape, UpTapIsCpuRefs) {
  for (int nearest : {0, 1})
    for (int align : {0, 1})
      for (int in = 1; in <= 9; in++)
        for (int out = 1; out <= 19; out++)
          for (int dst = 0; dst < out; dst++) {
            const nnc::upsample::Tap t =
                nnc::upsample::tap(nearest ? CCV_NNC_UPSAMPLE_NEAREST : CCV_NNC_UPSAMPLE_BILINEAR, align, dst, in, out);
            int64_t i0, i1;
            double l;
            up_tap(nearest, align, dst, in, out, &i0, &i1, &l);
            ASSERT_EQ(i0, t.i0) << nearest << align << " " << in << " " << out << " " << dst;
            ASSERT_EQ(i1, t.i1);
            ASSERT_EQ(l, t.l);
          }
}

TEST(GpuShape, UpMapWalksViews) {
  std::mt19937 rng(409);
  for (int t = 0; t < 40; t++) {
    const int nd = 2 + static_cast<int>(rng() % 3);
    const int h = static_cast<int>(rng() % (nd - 1));
    const int nearest = static_cast<int>(rng() % 2), align = static_cast<int>(rng() % 2);
    std::vector<int> small(nd), big(nd);
    std::vector<int64_t> ss(nd), bs(nd);
    int64_t m = 1, mb = 1;
    for (int d = nd - 1; d >= 0; d--) {
      small[d] = 1 + static_cast<int>(rng() % 5);
      big[d] = d == h || d == h + 1 ? 1 + static_cast<int>(rng() % 11) : small[d];
      ss[d] = m;
      m *= small[d] + 2;
      bs[d] = mb;
      mb *= big[d] + 1;
    }
    UpMap um;
    ASSERT_TRUE(make_up_map(um, nearest, align, h, big.data(), bs.data(), small.data(), ss.data(), nd));
    const int type = nearest ? CCV_NNC_UPSAMPLE_NEAREST : CCV_NNC_UPSAMPLE_BILINEAR;
    for (int64_t i = 0; i < um.count; i++) {
      const std::vector<int> c = coords(i, big);
      int64_t want_big = 0, base = 0;
      for (int d = 0; d < nd; d++) {
        want_big += c[d] * bs[d];
        if (d != h && d != h + 1) base += c[d] * ss[d];
      }
      const nnc::upsample::Tap a = nnc::upsample::tap(type, align, c[h], small[h], big[h]);
      const nnc::upsample::Tap b = nnc::upsample::tap(type, align, c[h + 1], small[h + 1], big[h + 1]);
      int64_t off, soff[4];
      double w[4];
      up_map(um, i, &off, soff, w);
      ASSERT_EQ(off, want_big);
      const int64_t ys[] = {a.i0, a.i0, a.i1, a.i1}, xs[] = {b.i0, b.i1, b.i0, b.i1};
      const double ws[] = {(1 - a.l) * (1 - b.l), (1 - a.l) * b.l, a.l * (1 - b.l), a.l * b.l};
      for (int k = 0; k < 4; k++) {
        ASSERT_EQ(soff[k], base + ys[k] * ss[h] + xs[k] * ss[h + 1]) << "case " << t << " element " << i;
        ASSERT_EQ(w[k], ws[k]);
      }
    }
  }
  UpMap um;
  const int d3[] = {2, 3, 4}, e3[] = {3, 3, 4};
  const int64_t s3[] = {12, 4, 1};
  EXPECT_FALSE(make_up_map(um, 1, 0, 1, d3, s3, e3, s3, 3));  // axis 0 differs outside the spatial axes
  EXPECT_FALSE(make_up_map(um, 1, 0, 2, d3, s3, d3, s3, 3));  // no width axis after h
}

TEST(GpuShape, CmulPairStrides) {
  // b [1, 3, 1, 4] (two pairs) in a view of a [1, 4, 2, 6] parent over the pair shape [2, 3, 5, 2].
  const int bd[] = {1, 3, 1, 4}, half[] = {2, 3, 5, 2};
  const int64_t bs[] = {48, 12, 6, 1};
  int64_t s[4], im;
  ASSERT_TRUE(pair_strides(bd, bs, 4, half, 4, s, &im));
  EXPECT_EQ(im, 1);
  for (int i0 = 0; i0 < 2; i0++)
    for (int i1 = 0; i1 < 3; i1++)
      for (int i2 = 0; i2 < 5; i2++)
        for (int j = 0; j < 2; j++) {
          // Pair j of b at (0, i1, 0): real at i1 * 12 + 2 j, imaginary one further.
          const int64_t off = i0 * s[0] + i1 * s[1] + i2 * s[2] + j * s[3];
          ASSERT_EQ(off, i1 * 12 + 2 * j);
          ASSERT_EQ(off + im, i1 * 12 + 2 * j + 1);
        }
  // Fewer axes (a [4] over [3, 2]), an odd last axis, a shape that does not broadcast.
  const int v[] = {4}, hv[] = {3, 2}, odd[] = {5}, bad[] = {2, 4};
  const int64_t vs[] = {3}, bads[] = {4, 1};
  ASSERT_TRUE(pair_strides(v, vs, 1, hv, 2, s, &im));
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(s[1], 6);
  EXPECT_EQ(im, 3);
  EXPECT_FALSE(pair_strides(odd, vs, 1, hv, 2, s, &im));
  EXPECT_FALSE(pair_strides(bad, bads, 2, hv, 2, s, &im));
}

}  // namespace
