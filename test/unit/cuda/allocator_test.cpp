// The caching device allocator on a GPU: freed tensor memory is reused without
// new device memory, the figures follow, the cache goes back on request, an
// impossible request fails with CCV_NNC_EXEC_OOM and a message, a stream
// workspace comes from it too, and one freed is not another stream's before
// the work using it has run. Skips, saying so, without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda/stream.hpp"
#include "unit/cuda/gpu.hpp"

using namespace nnc_gpu_test;

namespace {

ccv_nnc_tensor_param_t gpu_f32(int n) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_GPU_MEMORY;  // device 0
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  p.dim[0] = n;
  return p;
}

ccv_nnc_gpu_memory_stats_t stats() {
  ccv_nnc_gpu_memory_stats_t s;
  EXPECT_EQ(ccv_nnc_gpu_memory_stats(0, &s), 0) << ccv_nnc_error_message();
  return s;
}

TEST(GpuAllocator, FreedTensorMemoryIsReusedAndCounted) {
  NNC_REQUIRE_GPU();
  const ccv_nnc_gpu_memory_stats_t s0 = stats();
  // 1000 floats: 4000 bytes, rounded to 4096.
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, gpu_f32(1000), 0);
  ASSERT_NE(a, nullptr) << ccv_nnc_error_message();
  const ccv_nnc_gpu_memory_stats_t s1 = stats();
  EXPECT_EQ(s1.in_use, s0.in_use + 4096);
  EXPECT_EQ(s1.allocations, s0.allocations + 1);
  ccv_nnc_tensor_free(a);
  EXPECT_EQ(stats().in_use, s0.in_use);
  // The same size again: cached memory (the best fit, maybe not the same
  // place), no new segment.
  ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(nullptr, gpu_f32(1000), 0);
  ASSERT_NE(b, nullptr);
  const ccv_nnc_gpu_memory_stats_t s2 = stats();
  EXPECT_EQ(s2.reserved, s1.reserved);
  EXPECT_EQ(s2.hits, s1.hits + 1);
  EXPECT_GE(s2.peak_in_use, s2.in_use);
  EXPECT_EQ(s2.cached, s2.reserved - s2.in_use);
  // Usable memory: a round trip through it.
  std::mt19937 rng(5);
  Owned host(on_cpu(b->info));
  fill(host, rng);
  ASSERT_EQ(exec(transfer(), ccv_nnc_no_hint, {host}, {b}), 0) << ccv_nnc_error_message();
  Owned back = to_cpu(b);
  EXPECT_EQ(std::memcmp(back->data.f32, host->data.f32, 4000), 0);
  ccv_nnc_tensor_free(b);
  // A big tensor takes a segment of its own; freed and released, it goes back.
  ccv_nnc_tensor_t* big = ccv_nnc_tensor_new(nullptr, gpu_f32(64 << 20), 0);  // 256 MiB
  ASSERT_NE(big, nullptr) << ccv_nnc_error_message();
  const size_t reserved_with_big = stats().reserved;
  ccv_nnc_tensor_free(big);
  EXPECT_GE(ccv_nnc_gpu_memory_release_cached(0), size_t{256} << 20);
  EXPECT_LE(stats().reserved, reserved_with_big - (size_t{256} << 20));
}

TEST(GpuAllocator, AnImpossibleRequestFailsWithOutOfMemory) {
  NNC_REQUIRE_GPU();
  const ccv_nnc_gpu_memory_stats_t s0 = stats();
  // 2^37 floats = 512 GiB: more than any single GPU.
  ccv_nnc_tensor_param_t p = gpu_f32(1 << 30);
  p.dim[1] = 128;
  EXPECT_EQ(ccv_nnc_tensor_new(nullptr, p, 0), nullptr);
  const std::string m = ccv_nnc_error_message();
  EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
  const ccv_nnc_gpu_memory_stats_t s1 = stats();
  EXPECT_EQ(s1.oom_retries, s0.oom_retries + 1);
  EXPECT_EQ(s1.in_use, s0.in_use);
  // Still usable afterwards.
  ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(nullptr, gpu_f32(10), 0);
  EXPECT_NE(a, nullptr) << ccv_nnc_error_message();
  ccv_nnc_tensor_free(a);
  // Bad arguments.
  ccv_nnc_gpu_memory_stats_t other;
  EXPECT_EQ(ccv_nnc_gpu_memory_stats(ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU), &other), -1);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("no GPU"), std::string::npos);
}

TEST(GpuAllocator, StreamWorkspaceComesFromTheAllocator) {
  NNC_REQUIRE_GPU();
  const size_t before = stats().in_use;
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_NE(s, nullptr) << ccv_nnc_error_message();
  const ccv_nnc_gpu_memory_stats_t s0 = stats();  // with the stream's own (its error log)
  void* w = ccv_nnc_stream_context_get_workspace(s, 3 << 20, CCV_TENSOR_GPU_MEMORY);
  ASSERT_NE(w, nullptr) << ccv_nnc_error_message();
  EXPECT_GE(stats().in_use, s0.in_use + (3 << 20));
  ccv_nnc_stream_context_drain(s);
  ccv_nnc_stream_context_wait(s);
  // Drained: back in the cache, and served from it again.
  EXPECT_EQ(stats().in_use, s0.in_use);
  const ccv_nnc_gpu_memory_stats_t s1 = stats();
  void* w2 = ccv_nnc_stream_context_get_workspace(s, 3 << 20, CCV_TENSOR_GPU_MEMORY);
  EXPECT_NE(w2, nullptr);
  EXPECT_EQ(stats().reserved, s1.reserved);
  EXPECT_EQ(stats().hits, s1.hits + 1);
  ccv_nnc_stream_context_free(s);
  EXPECT_EQ(stats().in_use, before);  // the stream's memory went back with it
}

// A stream's workspace freed (replaced by a larger one) while work queued on
// that stream still reads it is not handed to another stream before that
// work has run: here the reader waits on a third stream's work, so the other
// stream's write could otherwise land first (under the CPU emulation, whose
// streams run only what a wait needs, it does: the allocator's stream event
// is what keeps the block from the other stream).
TEST(GpuAllocator, AStreamsFreedWorkspaceIsNotAnotherStreamsBeforeItsWorkRuns) {
  NNC_REQUIRE_GPU();
  // A large block (its own segment of 14 MiB, and the tightest free fit for
  // the same request again), so that an allocator handing it over too early
  // would hand it to b.
  constexpr size_t kBytes = (size_t{13} << 20) + 4096;
  ccv_nnc_stream_context_t* a = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ccv_nnc_stream_context_t* b = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ccv_nnc_stream_context_t* c = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU);
  ASSERT_TRUE(a && b && c) << ccv_nnc_error_message();
  const cudaStream_t sa = nnc::cuda::stream_of(a, 0, "test"), sb = nnc::cuda::stream_of(b, 0, "test"),
                     sc = nnc::cuda::stream_of(c, 0, "test");
  ccv_nnc_tensor_t* y = ccv_nnc_tensor_new(nullptr, gpu_f32(kBytes / 4), 0);
  ccv_nnc_tensor_t* busy = ccv_nnc_tensor_new(nullptr, gpu_f32(kBytes / 4), 0);
  ASSERT_TRUE(y && busy) << ccv_nnc_error_message();
  // a's workspace filled with 0x11, and done.
  void* wa = ccv_nnc_stream_context_get_workspace(a, kBytes, CCV_TENSOR_GPU_MEMORY);
  ASSERT_NE(wa, nullptr) << ccv_nnc_error_message();
  ASSERT_EQ(cudaMemsetAsync(wa, 0x11, kBytes, sa), cudaSuccess);
  ccv_nnc_stream_context_wait(a);
  // a: after c's work, y = the workspace; then the workspace is freed.
  ASSERT_EQ(cudaMemsetAsync(busy->data.u8, 0, kBytes, sc), cudaSuccess);
  cudaEvent_t after_c = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&after_c, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(after_c, sc), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(sa, after_c, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(y->data.u8, wa, kBytes, cudaMemcpyDeviceToDevice, sa), cudaSuccess);
  // A larger workspace: the old block is freed with a's copy still queued
  // (ccv_nnc_stream_context_drain would wait for a first).
  ASSERT_NE(ccv_nnc_stream_context_get_workspace(a, 2 * kBytes, CCV_TENSOR_GPU_MEMORY), nullptr)
      << ccv_nnc_error_message();
  // b's workspace of the same size, filled with 0x22, and b waited for first.
  void* wb = ccv_nnc_stream_context_get_workspace(b, kBytes, CCV_TENSOR_GPU_MEMORY);
  ASSERT_NE(wb, nullptr) << ccv_nnc_error_message();
  ASSERT_EQ(cudaMemsetAsync(wb, 0x22, kBytes, sb), cudaSuccess);
  ccv_nnc_stream_context_wait(b);
  ccv_nnc_stream_context_wait(a);
  std::vector<unsigned char> got(kBytes);
  ASSERT_EQ(cudaMemcpy(got.data(), y->data.u8, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t bad = 0;
  for (unsigned char v : got) bad += v != 0x11;
  EXPECT_EQ(bad, 0u) << "a's queued copy read its freed workspace after b had written it"
                     << (wa == wb ? " (b was handed a's block)" : "");
  cudaEventDestroy(after_c);
  ccv_nnc_tensor_free(busy);
  ccv_nnc_tensor_free(y);
  ccv_nnc_stream_context_free(c);
  ccv_nnc_stream_context_free(b);
  ccv_nnc_stream_context_free(a);
}

}  // namespace
