// ccv_nnc_palettize / ccv_nnc_depalettize: exact round trips where a block
// has at most 2^qbits distinct values; otherwise each element decodes to its
// block's nearest palette entry and the block's RMS error is within what a
// uniform grid over its range guarantees; the layout read by a decoder
// written here from the declaration's description; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../../cmd_test_util.hpp"

extern "C" int nnc_test_palettize_example(float back[100], size_t sizes[2]);

using namespace cmdtest;

namespace {

class Palettize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ccv_nnc_init(); }
};

size_t es(int dt) { return dt == CCV_16F ? 2 : dt == CCV_32F ? 4 : 8; }

// Values exact in every type: multiples of 1/64 in [-8, 8] (scaled for variety).
std::vector<unsigned char> encode_all(const std::vector<double>& v, int dt) {
  std::vector<unsigned char> b(v.size() * es(dt));
  for (size_t i = 0; i < v.size(); i++) T::encode(b.data() + i * es(dt), dt, v[i]);
  return b;
}

double decode_at(const std::vector<unsigned char>& b, size_t i, int dt) { return T::decode(b.data() + i * es(dt), dt); }

size_t expected_size(int dt, size_t n, int q, int nb) {
  return ((n + nb - 1) / nb) * (size_t{1} << q) * es(dt) + (n * q + 7) / 8;
}

struct Decoded {
  std::vector<std::vector<double>> palettes;
  std::vector<int> index;
};

// The layout as declared: per block, 2^q palette entries then the indices,
// least significant bit first, element j at bits j q .. j q + q - 1.
Decoded decode_layout(const std::vector<unsigned char>& p, int dt, size_t n, int q, int nb) {
  Decoded d;
  size_t off = 0;
  const size_t k = size_t{1} << q;
  for (size_t begin = 0; begin < n; begin += nb) {
    const size_t m = std::min(n, begin + nb) - begin;
    std::vector<double> pal(k);
    for (size_t j = 0; j < k; j++) pal[j] = T::decode(p.data() + off + j * es(dt), dt);
    off += k * es(dt);
    for (size_t j = 0; j < m; j++) {
      int idx = 0;
      for (int b = 0; b < q; b++) {
        const size_t bit = j * q + b;
        idx |= ((p[off + bit / 8] >> (bit % 8)) & 1) << b;
      }
      d.index.push_back(idx);
    }
    off += (m * q + 7) / 8;
    d.palettes.push_back(pal);
  }
  EXPECT_EQ(off, p.size());
  return d;
}

struct Config {
  int q, nb;
};
const Config kConfigs[] = {{4, 32}, {4, 6}, {5, 8}, {5, 64}, {6, 12}, {7, 40}, {8, 1}, {8, 333}};

TEST_F(Palettize, ExactForFewDistinctValuesPerBlock) {
  std::mt19937 rng(31);
  for (int dt : {CCV_16F, CCV_32F, CCV_64F})
    for (const Config c : kConfigs) {
      const size_t n = 5 * c.nb + c.nb / 2 + 1;  // a short last block
      const int k = 1 << c.q;
      std::vector<double> v(n);
      std::uniform_int_distribution<int> grid(-512, 512);
      for (size_t begin = 0; begin < n; begin += c.nb) {
        // At most 2^q distinct values per block (fewer in some).
        std::uniform_int_distribution<int> pick(0, (begin / c.nb) % 2 ? k - 1 : k / 3);
        std::vector<double> set(k);
        for (double& s : set) s = grid(rng) / 64.0;
        for (size_t i = begin; i < std::min(n, begin + c.nb); i++) v[i] = set[pick(rng)];
      }
      const auto in = encode_all(v, dt);
      std::vector<unsigned char> p(expected_size(dt, n, c.q, c.nb) + 16, 0xcd);
      const size_t bytes = ccv_nnc_palettize(in.data(), dt, CCV_TENSOR_CPU_MEMORY, n, c.q, c.nb, p.data(), p.size());
      ASSERT_EQ(bytes, expected_size(dt, n, c.q, c.nb)) << ccv_nnc_error_message();
      for (size_t i = bytes; i < p.size(); i++) ASSERT_EQ(p[i], 0xcd) << "written past the size it returned";
      p.resize(bytes);
      std::vector<unsigned char> back(in.size());
      ccv_nnc_depalettize(p.data(), dt, CCV_TENSOR_CPU_MEMORY, bytes, c.q, c.nb, back.data(), n);
      ASSERT_EQ(std::memcmp(back.data(), in.data(), in.size()), 0) << "q " << c.q << " block " << c.nb;
      const Decoded d = decode_layout(p, dt, n, c.q, c.nb);
      for (size_t i = 0; i < n; i++) ASSERT_EQ(d.palettes[i / c.nb][d.index[i]], v[i]) << i;
    }
}

TEST_F(Palettize, NearestEntryAndErrorBoundPerBlock) {
  std::mt19937 rng(32);
  for (int dt : {CCV_16F, CCV_32F, CCV_64F})
    for (const Config c : kConfigs) {
      if (c.nb < 8) continue;
      const size_t n = 4 * c.nb + 3;
      std::vector<double> v(n);
      std::normal_distribution<double> g(0, 1);
      for (size_t i = 0; i < n; i++) {
        v[i] = (i % 17 == 0 ? 5 : 1) * g(rng);  // some outliers
        if (dt == CCV_16F) v[i] = std::round(std::clamp(v[i], -30.0, 30.0) * 64) / 64;  // exact in 16F
      }
      const auto in = encode_all(v, dt);
      for (size_t i = 0; i < n; i++) v[i] = decode_at(in, i, dt);  // the values as stored
      std::vector<unsigned char> p(expected_size(dt, n, c.q, c.nb));
      const size_t bytes = ccv_nnc_palettize(in.data(), dt, CCV_TENSOR_CPU_MEMORY, n, c.q, c.nb, p.data(), p.size());
      ASSERT_EQ(bytes, p.size()) << ccv_nnc_error_message();
      std::vector<unsigned char> back(in.size());
      ccv_nnc_depalettize(p.data(), dt, CCV_TENSOR_CPU_MEMORY, bytes, c.q, c.nb, back.data(), n);
      const Decoded d = decode_layout(p, dt, n, c.q, c.nb);
      const int k = 1 << c.q;
      for (size_t b = 0; b * c.nb < n; b++) {
        const auto& pal = d.palettes[b];
        EXPECT_TRUE(std::is_sorted(pal.begin(), pal.end())) << "block " << b;
        const size_t begin = b * c.nb, end = std::min(n, begin + c.nb);
        double lo = INFINITY, hi = -INFINITY, sq = 0;
        for (size_t i = begin; i < end; i++) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
        for (size_t i = begin; i < end; i++) {
          const double got = decode_at(back, i, dt);
          ASSERT_EQ(got, pal[d.index[i]]) << i;
          double best = INFINITY;
          for (double e : pal) best = std::min(best, std::fabs(v[i] - e));
          ASSERT_EQ(std::fabs(v[i] - got), best) << "element " << i << " is not at its nearest entry";
          sq += (v[i] - got) * (v[i] - got);
        }
        // A uniform grid of 2^q points over [lo, hi] errs by at most (hi - lo) / (2 (2^q - 1)).
        const double rms = std::sqrt(sq / (end - begin)), grid = (hi - lo) / (2 * (k - 1));
        const double slack = dt == CCV_16F ? std::max(std::fabs(lo), std::fabs(hi)) / 1024 : 1e-6 * grid;
        EXPECT_LE(rms, grid + slack) << "block " << b << " q " << c.q;
      }
    }
}

TEST_F(Palettize, QxTensorSizeFromC) {
  float back[100];
  size_t sizes[2];
  ASSERT_EQ(nnc_test_palettize_example(back, sizes), 0);
  EXPECT_EQ(sizes[0], sizes[1]);
  EXPECT_EQ(sizes[0], 4u * 16 * 4 + 50);  // 4 blocks of 16 floats, 400 bits of indices
  for (int i = 0; i < 100; i++) EXPECT_EQ(back[i], i % 7 - 3) << i;  // 7 values per block: exact
}

TEST_F(Palettize, BadInputIsRefusedWithAMessage) {
  std::vector<unsigned char> in = encode_all(std::vector<double>(64, 1.5), CCV_32F);
  std::vector<unsigned char> out(1024, 0xee);
  const auto untouched = [&] { return std::all_of(out.begin(), out.end(), [](unsigned char b) { return b == 0xee; }); };
  auto pal = [&](int dt, int mem, int q, int nb, size_t len, size_t out_len) {
    return ccv_nnc_palettize(in.data(), dt, mem, len, q, nb, out.data(), out_len);
  };
  const int cpu = CCV_TENSOR_CPU_MEMORY;
  EXPECT_EQ(pal(CCV_8U, cpu, 4, 8, 64, out.size()), 0u);
  EXPECT_TRUE(message_has("16F, 32F or 64F")) << ccv_nnc_error_message();
  EXPECT_EQ(pal(CCV_32F, CCV_TENSOR_GPU_MEMORY, 4, 8, 64, out.size()), 0u);
  EXPECT_TRUE(message_has("CPU memory")) << ccv_nnc_error_message();
  EXPECT_EQ(pal(CCV_32F, cpu, 3, 8, 64, out.size()), 0u);
  EXPECT_EQ(pal(CCV_32F, cpu, 9, 8, 64, out.size()), 0u);
  EXPECT_TRUE(message_has("qbits")) << ccv_nnc_error_message();
  EXPECT_EQ(pal(CCV_32F, cpu, 5, 4, 64, out.size()), 0u);
  EXPECT_TRUE(message_has("multiple of 8")) << ccv_nnc_error_message();
  EXPECT_EQ(pal(CCV_32F, cpu, 4, 0, 64, out.size()), 0u);
  EXPECT_EQ(pal(CCV_32F, cpu, 4, 8, 64, expected_size(CCV_32F, 64, 4, 8) - 1), 0u);
  EXPECT_TRUE(message_has("take")) << ccv_nnc_error_message();
  EXPECT_EQ(ccv_nnc_palettize(nullptr, CCV_32F, cpu, 64, 4, 8, out.data(), out.size()), 0u);
  EXPECT_TRUE(message_has("NULL")) << ccv_nnc_error_message();
  const float nan = NAN;
  std::memcpy(in.data() + 40, &nan, 4);
  EXPECT_EQ(pal(CCV_32F, cpu, 4, 8, 64, out.size()), 0u);
  EXPECT_TRUE(message_has("finite")) << ccv_nnc_error_message();
  EXPECT_TRUE(untouched());
  // depalettize: too few bytes for the elements asked, bad parameters.
  std::vector<unsigned char> p(expected_size(CCV_32F, 64, 4, 8), 0);
  ccv_nnc_depalettize(p.data(), CCV_32F, cpu, p.size() - 1, 4, 8, out.data(), 64);
  EXPECT_TRUE(message_has("input_length")) << ccv_nnc_error_message();
  ccv_nnc_depalettize(p.data(), CCV_32F, cpu, p.size(), 4, 7, out.data(), 64);
  EXPECT_TRUE(message_has("multiple of 8")) << ccv_nnc_error_message();
  ccv_nnc_depalettize(p.data(), CCV_32F, cpu, p.size(), 4, 8, nullptr, 64);
  EXPECT_TRUE(message_has("NULL")) << ccv_nnc_error_message();
  EXPECT_TRUE(untouched());
}

}  // namespace
