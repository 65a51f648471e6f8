// The emulation's own checks: its kernels (selftest_kernels.cu) against
// closed forms, in whichever order EMU_ORDER runs threads, the launches
// that must fail, and its streams' rules (GpuEmuStreams: work runs late,
// only what a wait needs, events and the legacy stream order it, copies by
// CUDA's rules for pageable and pinned memory; EMU_STREAMS=eager fails six).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>

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
cudaError_t cp_async(const void* src, void* out, int wait, int threads);
cudaError_t ldmatrix(const uint16_t* tile, uint32_t* out);
cudaError_t misaligned(const uint16_t* src, int which);
cudaError_t big_shared(unsigned char* out, int bytes, int opt_in);
cudaError_t store_on(cudaStream_t s, int* p, int v);
cudaError_t add_one_on(cudaStream_t s, const int* x, int* y);
cudaError_t divergent_on(cudaStream_t s, int* y);
}  // namespace gpu_emu_selftest
namespace emu {
// emu_runtime.cpp: the scheduling modes, set for one test.
bool set_warp_ahead(bool on);  // returns the previous setting
bool order_reversed();
bool set_stream_extras(bool on);  // returns the previous setting
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

// cp.async (cuda/async_copy.cuh): a copy lands only when a wait_group has
// retired its group and the thread reached a __syncthreads after it, so a
// read with no wait, or after the wait with no barrier, sees the old bytes
// (as a GPU may: a missing wait or barrier shows); wait_group 1 lands the
// older of two groups only, wait_group 0 both. With EMU_WARP_AHEAD they land
// at once instead.
TEST(GpuEmu, CpAsyncLandsAtTheWaitAndBarrier) {
  const bool was = emu::set_warp_ahead(false);  // (with it, copies land at once: below)
  const int n = 48;
  const uint32_t old = 0xaaaaaaaau;
  std::vector<uint32_t> src(2 * n * 4), out(8 * n * 4, 0);
  std::mt19937 rng(13);
  for (uint32_t& v : src) v = static_cast<uint32_t>(rng());
  auto chunk = [&](int read, int group, int t) { return &out[static_cast<size_t>(((2 * read + group) * n + t) * 4)]; };
  // The chunk thread t reads of group g: what thread t - 1 copied.
  auto copied = [&](int group, int t) { return &src[static_cast<size_t>((group * n + (t + n - 1) % n) * 4)]; };
  ASSERT_EQ(cp_async(src.data(), out.data(), 0, n), cudaSuccess);
  for (int g = 0; g < 2; g++)
    for (int t = 0; t < n; t++)
      for (int w = 0; w < 4; w++) EXPECT_EQ(chunk(0, g, t)[w], old) << "no wait: group " << g << " landed";
  ASSERT_EQ(cp_async(src.data(), out.data(), 1, n), cudaSuccess);
  for (int t = 0; t < n; t++)
    for (int w = 0; w < 4; w++) {
      EXPECT_EQ(chunk(1, 0, t)[w], old) << "wait_group 1, no barrier: the first group landed, thread " << t;
      EXPECT_EQ(chunk(1, 1, t)[w], old) << "wait_group 1, no barrier: the second group landed, thread " << t;
      EXPECT_EQ(chunk(2, 0, t)[w], copied(0, t)[w]) << "wait_group 1: the first group, thread " << t;
      EXPECT_EQ(chunk(2, 1, t)[w], old) << "wait_group 1: the second group landed, thread " << t;
      EXPECT_EQ(chunk(3, 0, t)[w], copied(0, t)[w]) << "wait_group 0: the first group, thread " << t;
      EXPECT_EQ(chunk(3, 1, t)[w], copied(1, t)[w]) << "wait_group 0: the second group, thread " << t;
    }
  // EMU_WARP_AHEAD: copies land as they are issued (the earliest a GPU may
  // land them), so the read after the first __syncthreads, without a wait,
  // sees both groups.
  emu::set_warp_ahead(true);
  ASSERT_EQ(cp_async(src.data(), out.data(), 0, n), cudaSuccess);
  for (int g = 0; g < 2; g++)
    for (int t = 0; t < n; t++)
      for (int w = 0; w < 4; w++) EXPECT_EQ(chunk(0, g, t)[w], copied(g, t)[w]) << "at once: group " << g;
  emu::set_warp_ahead(was);
}

// ldmatrix .x4 / .x4.trans of the four 8 x 8 quarters of a 16 x 16 tile,
// checked element by element by where the PTX ISA puts it: element (r, c) of
// matrix m goes to register m of lane 4 r + c / 2, half c % 2 (plain), and to
// lane 4 c + r / 2, half r % 2 (.trans).
TEST(GpuEmu, LdmatrixFollowsTheIsaLayout) {
  std::vector<uint16_t> tile(256);
  std::mt19937 rng(17);
  for (uint16_t& v : tile) v = static_cast<uint16_t>(rng());
  std::vector<uint32_t> out(256, 0), want(256, 0);
  ASSERT_EQ(ldmatrix(tile.data(), out.data()), cudaSuccess);
  for (int row = 0; row < 16; row++)
    for (int col = 0; col < 16; col++) {
      const int m = row / 8 + 2 * (col / 8), r = row % 8, c = col % 8;
      const uint32_t v = tile[static_cast<size_t>(row * 16 + col)];
      want[static_cast<size_t>((4 * r + c / 2) * 4 + m)] |= v << (16 * (c % 2));
      want[static_cast<size_t>(128 + (4 * c + r / 2) * 4 + m)] |= v << (16 * (r % 2));
    }
  for (int i = 0; i < 256; i++)
    EXPECT_EQ(out[static_cast<size_t>(i)], want[static_cast<size_t>(i)])
        << (i < 128 ? "x4" : "x4.trans") << " lane " << i % 128 / 4 << " register " << i % 4;
}

// cp.async and ldmatrix need 16-byte aligned addresses: a launch that
// passes others fails with cudaErrorMisalignedAddress, as on a GPU.
TEST(GpuEmu, MisalignedCpAsyncAndLdmatrixFailTheLaunch) {
  alignas(16) static uint16_t src[32 * 8 + 16];
  EXPECT_EQ(misaligned(src, 0), cudaErrorMisalignedAddress);
  EXPECT_EQ(misaligned(src, 1), cudaErrorMisalignedAddress);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared
}

// More than 48 KiB of dynamic shared memory needs the kernel's opt-in of at
// least that many bytes (cudaFuncSetAttribute), as on a GPU: without it, or
// with too small a one, the launch fails and nothing runs.
TEST(GpuEmu, SharedMemoryAbove48KiBNeedsTheOptIn) {
  const int bytes = 64 * 1024;
  std::vector<unsigned char> out(bytes, 0);
  EXPECT_EQ(big_shared(out.data(), 48 * 1024, 0), cudaSuccess);  // the default limit: no opt-in needed
  EXPECT_EQ(out[0], static_cast<unsigned char>((48 * 1024 - 1) * 7));
  std::fill(out.begin(), out.end(), 0);
  EXPECT_EQ(big_shared(out.data(), bytes, 0), cudaErrorInvalidValue);
  EXPECT_EQ(out[0], 0) << "the refused launch ran";
  EXPECT_EQ(big_shared(out.data(), bytes, bytes - 16), cudaErrorInvalidValue);  // an opt-in below the launch's
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(big_shared(out.data(), bytes, bytes), cudaSuccess);
  for (int i = 0; i < bytes; i++) ASSERT_EQ(out[i], static_cast<unsigned char>((bytes - 1 - i) * 7)) << i;
  EXPECT_EQ(big_shared(out.data(), bytes, 228 * 1024), cudaErrorInvalidValue);  // past sm_90's 227 KiB
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared
}

TEST(GpuEmu, InvalidBarriersAndConfigurationsFailTheLaunch) {
  std::vector<int> y(2048);
  EXPECT_EQ(divergent(y.data()), cudaErrorLaunchFailure);
  EXPECT_EQ(early_return(y.data()), cudaErrorLaunchFailure);
  EXPECT_EQ(bad_config(y.data()), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared
}

// ---- streams that run their work late (emu_runtime.cpp) ----
// (Kernels here write host memory, which the emulation lets them: device
// memory is host memory.)

// Two streams, and waits that run only what they need (not, as in a random
// stream order, other queued work too) for the test's length.
struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  bool extras = emu::set_stream_extras(false);
  Streams(unsigned flags = cudaStreamNonBlocking) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&a, flags), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&b, flags), cudaSuccess);
  }
  ~Streams() {
    cudaStreamSynchronize(a), cudaStreamSynchronize(b);
    cudaStreamDestroy(a), cudaStreamDestroy(b);
    emu::set_stream_extras(extras);
  }
};

TEST(GpuEmuStreams, QueuedWorkRunsWhenTheHostWaitsForIt) {
  Streams st;
  int x = 0;
  ASSERT_EQ(store_on(st.a, &x, 7), cudaSuccess);
  EXPECT_EQ(x, 0) << "the launch ran at once";
  EXPECT_EQ(cudaStreamQuery(st.a), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamSynchronize(st.a), cudaSuccess);
  EXPECT_EQ(x, 7);
  EXPECT_EQ(cudaStreamQuery(st.a), cudaSuccess);
}

TEST(GpuEmuStreams, AWaitRunsOnlyWhatItNeeds) {
  Streams st;
  int x = 0, y = 0;
  ASSERT_EQ(store_on(st.a, &x, 1), cudaSuccess);
  ASSERT_EQ(store_on(st.b, &y, 2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(st.b), cudaSuccess);
  EXPECT_EQ(y, 2);
  EXPECT_EQ(x, 0) << "waiting for b ran a's work";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(x, 1);
}

// b reads what a writes: with the event between them it sees a's value;
// without it, under the emulation, the old one (on a GPU: either).
TEST(GpuEmuStreams, AnEventOrdersTwoStreamsAndWithoutItTheReaderRunsFirst) {
  for (bool with_event : {true, false}) {
    SCOPED_TRACE(with_event ? "with the event" : "without it");
    Streams st;
    int x = 0, y = -1;
    cudaEvent_t e = nullptr;
    ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    ASSERT_EQ(store_on(st.a, &x, 41), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e, st.a), cudaSuccess);
    EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
    if (with_event) ASSERT_EQ(cudaStreamWaitEvent(st.b, e, 0), cudaSuccess);
    ASSERT_EQ(add_one_on(st.b, &x, &y), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(st.b), cudaSuccess);
    EXPECT_EQ(y, with_event ? 42 : 1);
    EXPECT_EQ(cudaEventQuery(e), with_event ? cudaSuccess : cudaErrorNotReady);
    ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
    EXPECT_EQ(x, 41);
    cudaEventDestroy(e);
  }
}

// The legacy stream and streams made without cudaStreamNonBlocking wait for
// each other; a non-blocking stream and the legacy one do not.
TEST(GpuEmuStreams, TheLegacyStreamWaitsForBlockingStreamsOnly) {
  for (unsigned flags : {cudaStreamDefault, cudaStreamNonBlocking}) {
    SCOPED_TRACE(flags == cudaStreamDefault ? "blocking" : "non-blocking");
    Streams st(flags);
    int x = 0, y = -1;
    ASSERT_EQ(store_on(st.a, &x, 9), cudaSuccess);
    ASSERT_EQ(add_one_on(nullptr, &x, &y), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(y, flags == cudaStreamDefault ? 10 : 1);
  }
}

// From pageable memory a copy takes its bytes at the call; from pinned
// memory when the stream's work runs. To pageable memory it returns done.
TEST(GpuEmuStreams, CopiesFollowCudasRulesForPageableAndPinnedMemory) {
  Streams st;
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 2 * sizeof(int)), cudaSuccess);
  int pageable = 5;
  ASSERT_EQ(cudaMemcpyAsync(d, &pageable, sizeof(int), cudaMemcpyHostToDevice, st.a), cudaSuccess);
  pageable = 6;
  static int pinned[4];
  ASSERT_EQ(cudaHostRegister(pinned, sizeof(pinned), cudaHostRegisterDefault), cudaSuccess);
  pinned[0] = 5;
  ASSERT_EQ(cudaMemcpyAsync(d + 1, pinned, sizeof(int), cudaMemcpyHostToDevice, st.a), cudaSuccess);
  pinned[0] = 6;
  int back[2] = {0, 0};
  ASSERT_EQ(cudaMemcpyAsync(back, d, sizeof(back), cudaMemcpyDeviceToHost, st.a), cudaSuccess);
  EXPECT_EQ(back[0], 5) << "the pageable source was read late";
  EXPECT_EQ(back[1], 6) << "the pinned source was read at the call";
  // Into pinned memory the copy is still queued until the wait.
  pinned[1] = 0;
  ASSERT_EQ(cudaMemcpyAsync(pinned + 1, d, sizeof(int), cudaMemcpyDeviceToHost, st.a), cudaSuccess);
  EXPECT_EQ(pinned[1], 0);
  ASSERT_EQ(cudaStreamSynchronize(st.a), cudaSuccess);
  EXPECT_EQ(pinned[1], 5);
  ASSERT_EQ(cudaHostUnregister(pinned), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
}

TEST(GpuEmuStreams, AKernelFailingAsItRunsReportsAtTheWait) {
  Streams st;
  std::vector<int> y(32);
  ASSERT_EQ(divergent_on(st.a, y.data()), cudaSuccess);  // queued: nothing has failed yet
  EXPECT_EQ(cudaStreamSynchronize(st.a), cudaErrorLaunchFailure);
  cudaGetLastError();
  EXPECT_EQ(cudaStreamSynchronize(st.a), cudaSuccess);  // reported once
}

TEST(GpuEmuStreams, AStreamOrEventUsedAfterItsDestroyIsAnError) {
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  ASSERT_EQ(cudaEventDestroy(e), cudaSuccess);
  int x = 0;
  EXPECT_EQ(store_on(s, &x, 1), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  EXPECT_EQ(x, 0);
}

}  // namespace
