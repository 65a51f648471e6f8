// The caching device allocator on a GPU: freed tensor memory is reused without
// new device memory, the figures follow, the cache goes back on request, an
// impossible request fails with CCV_NNC_EXEC_OOM and a message, and a stream
// workspace comes from it too. Skips, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

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

}  // namespace
