// The emulation's own checks: its kernels (selftest_kernels.cu) against
// closed forms, in whichever order EMU_ORDER runs threads, and the launches
// that must fail.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gpu_emu_selftest {
cudaError_t block_sum(const float* x, float* y, int n, int blocks, int threads);
cudaError_t warp_ops(const int* x, int* sum, unsigned* ballot, int* up, int* down, int* idx, int threads);
cudaError_t reverse_blocks(const float* x, float* y, int blocks, int threads);
cudaError_t block_votes(const int* x, int* count, int* any7, int* all_small, int threads);
cudaError_t divergent(int* y);
cudaError_t early_return(int* y);
cudaError_t bad_config(int* y);
cudaError_t warp_race(int* seen);
}  // namespace gpu_emu_selftest
namespace emu {
// emu_runtime.cpp: the scheduling modes, set for one test.
bool set_warp_ahead(bool on);  // returns the previous setting
bool order_reversed();
}  // namespace emu

namespace {
using namespace gpu_emu_selftest;

TEST(GpuEmu, BlockTreeSumsAreExactOnIntegers) {
  // Integers: every order of summation gives the same float. One block (a
  // grid of several writes y per block, which EMU_MAX_BLOCKS would change).
  const int n = 5000, blocks = 1, threads = 128;
  std::vector<float> x(n), y(blocks, -1);
  std::mt19937 rng(7);
  for (float& v : x) v = static_cast<float>(rng() % 100);
  ASSERT_EQ(block_sum(x.data(), y.data(), n, blocks, threads), cudaSuccess);
  for (int b = 0; b < blocks; b++) {
    double want = 0;
    for (int i = 0; i < n; i++)
      if (i / threads % blocks == b) want += x[static_cast<size_t>(i)];
    EXPECT_EQ(y[static_cast<size_t>(b)], want) << "block " << b;
  }
}

TEST(GpuEmu, WarpShufflesAndBallots) {
  for (int threads : {64, 40}) {  // 40: a partial second warp
    std::vector<int> x(static_cast<size_t>(threads)), sum(x.size()), up(x.size()), down(x.size()), idx(x.size());
    std::vector<unsigned> ballot(x.size());
    std::mt19937 rng(11);
    for (int& v : x) v = static_cast<int>(rng() % 1000);
    ASSERT_EQ(warp_ops(x.data(), sum.data(), ballot.data(), up.data(), down.data(), idx.data(), threads), cudaSuccess);
    for (int t = 0; t < threads; t++) {
      const int w = t / 32 * 32, lane = t % 32, lanes = threads - w < 32 ? threads - w : 32;
      int s = 0;
      unsigned b = 0;
      for (int l = 0; l < 32; l++) {
        // xor partners outside a partial warp read 0.
        if (l < lanes) s += x[static_cast<size_t>(w + l)];
        if (l < lanes && (x[static_cast<size_t>(w + l)] & 1)) b |= 1u << l;
      }
      if (lanes == 32) EXPECT_EQ(sum[static_cast<size_t>(t)], s) << t;
      EXPECT_EQ(ballot[static_cast<size_t>(t)], b) << t;
      EXPECT_EQ(up[static_cast<size_t>(t)], x[static_cast<size_t>(lane >= 3 ? t - 3 : t)]) << t;
      const int seg = lane % 16;
      if (lanes == 32) EXPECT_EQ(down[static_cast<size_t>(t)], x[static_cast<size_t>(seg + 5 < 16 ? t + 5 : t)]) << t;
      if (lanes > 7) EXPECT_EQ(idx[static_cast<size_t>(t)], x[static_cast<size_t>(w + 7)]) << t;
    }
  }
}

TEST(GpuEmu, DynamicSharedMemory) {
  const int blocks = 3, threads = 96;
  std::vector<float> x(blocks * threads), y(x.size(), -1);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<float>(i);
  ASSERT_EQ(reverse_blocks(x.data(), y.data(), blocks, threads), cudaSuccess);
  for (int b = 0; b < blocks; b++)
    for (int t = 0; t < threads; t++)
      EXPECT_EQ(y[static_cast<size_t>(b * threads + t)], static_cast<float>(b * threads + threads - 1 - t));
}

TEST(GpuEmu, BlockVotes) {
  const int threads = 100;
  std::vector<int> x(threads), count(threads), any7(threads), all_small(threads);
  for (int with7 : {0, 1}) {
    std::mt19937 rng(5);
    int odd = 0;
    for (int& v : x) {
      v = static_cast<int>(rng() % 500) * 2 + 8 + static_cast<int>(rng() % 2);  // never 7, all < 1010
      odd += v & 1;
    }
    if (with7) odd += 1 - (x[42] & 1), x[42] = 7;
    ASSERT_EQ(block_votes(x.data(), count.data(), any7.data(), all_small.data(), threads), cudaSuccess);
    bool small = true;
    for (int v : x) small = small && v < 1000;
    for (int t = 0; t < threads; t++) {
      EXPECT_EQ(count[static_cast<size_t>(t)], odd);
      EXPECT_EQ(any7[static_cast<size_t>(t)], with7);
      EXPECT_EQ(all_small[static_cast<size_t>(t)], small ? 1 : 0);
    }
  }
}

// EMU_WARP_AHEAD lets one warp run ahead of the others between barriers: a
// read of another warp's shared write with only warp barriers between
// (a missing __syncthreads) then sees the old value, as the GPU may.
TEST(GpuEmu, WarpAheadShowsAMissingBarrierBetweenWarps) {
  const bool was = emu::set_warp_ahead(false);
  int seen = -1;
  ASSERT_EQ(warp_race(&seen), cudaSuccess);
  EXPECT_EQ(seen, 1) << "in step, warp 0 reads after warp 1 wrote";
  emu::set_warp_ahead(true);
  ASSERT_EQ(warp_race(&seen), cudaSuccess);
  // First to last, warp 0 runs ahead and reads before warp 1 writes; last
  // to first, warp 1 runs ahead and writes first.
  EXPECT_EQ(seen, emu::order_reversed() ? 1 : 0);
  emu::set_warp_ahead(was);
}

TEST(GpuEmu, InvalidBarriersAndConfigurationsFailTheLaunch) {
  std::vector<int> y(2048);
  EXPECT_EQ(divergent(y.data()), cudaErrorLaunchFailure);
  EXPECT_EQ(early_return(y.data()), cudaErrorLaunchFailure);
  EXPECT_EQ(bad_config(y.data()), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared
}

}  // namespace
