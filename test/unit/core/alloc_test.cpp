// No heap allocation per command: ccv_nnc_cmd_exec, directly and on a
// stream, once the stream's queue has grown to the depth in use. Counts calls
// of the replaceable operator new and of nothing else (malloc is not seen),
// so it pins the C++ containers the dispatch path used to build per call.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

#include "test_util.hpp"

namespace {
std::atomic<long> g_news{0};
}

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Every form that pairs with the ones above is replaced too, so no block
// crosses between this malloc-based allocator and the runtime's (the
// standard library's temporary buffers use the nothrow form; a sanitizer
// reports a mismatch otherwise).
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace nnc_test;

namespace {

int nothing_exec(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
                 ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_nothing = {nothing_exec, nullptr};

// Holds the stream's worker until released, so a burst queues in full.
std::atomic<bool> g_released{true};
int hold_exec(const ccv_nnc_cmd_t, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
              ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  while (!g_released.load(std::memory_order_acquire)) std::this_thread::yield();
  return CCV_NNC_EXEC_SUCCESS;
}
ccv_nnc_cmd_vtab_t g_hold = {hold_exec, nullptr};

TEST(Allocation, NonePerCommandDirectlyOrOnAStream) {
  ccv_nnc_init();
  Tensor a(cpu_param(CCV_32F, {3})), b(cpu_param(CCV_32F, {3}));
  for (int i = 0; i < 3; i++) a.f32()[i] = 1.f + static_cast<float>(i);
  ccv_nnc_tensor_t* in[] = {a.t, a.t};
  ccv_nnc_tensor_t* out[] = {b.t};
  // More tensors than a queue record holds inline: the record's vector.
  ccv_nnc_tensor_t* many[12] = {a.t, a.t, a.t, a.t, a.t, a.t, a.t, a.t, a.t, a.t, a.t, a.t};
  ccv_nnc_stream_context_t* s = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_CPU);
  const ccv_nnc_cmd_t custom = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_nothing, no_params(), 0);
  auto burst = [&] {
    for (int i = 0; i < 64; i++) {
      ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0,
                                 in, 2, out, 1, nullptr), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0,
                                 in, 2, out, 1, s), CCV_NNC_EXEC_SUCCESS);
      ASSERT_EQ(ccv_nnc_cmd_exec(custom, ccv_nnc_no_hint, 0, many, 12, out, 1, s), CCV_NNC_EXEC_SUCCESS);
    }
    ccv_nnc_stream_context_wait(s);
  };
  // Warm-up: one burst queued whole behind a held worker, the deepest queue
  // this loop can build however fast or slow the worker runs later (a loaded
  // machine); then two free-running ones.
  const ccv_nnc_cmd_t hold = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_hold, no_params(), 0);
  g_released = false;
  ASSERT_EQ(ccv_nnc_cmd_exec(hold, ccv_nnc_no_hint, 0, nullptr, 0, nullptr, 0, s), CCV_NNC_EXEC_SUCCESS);
  for (int i = 0; i < 64; i++) {
    ASSERT_EQ(ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0,
                               in, 2, out, 1, s), CCV_NNC_EXEC_SUCCESS);
    ASSERT_EQ(ccv_nnc_cmd_exec(custom, ccv_nnc_no_hint, 0, many, 12, out, 1, s), CCV_NNC_EXEC_SUCCESS);
  }
  g_released = true;
  ccv_nnc_stream_context_wait(s);
  burst();
  burst();
  const long before = g_news.load();
  for (int r = 0; r < 10; r++) burst();
  const long during = g_news.load() - before;
  EXPECT_EQ(during, 0) << "heap allocations over 1,920 commands";
  for (int i = 0; i < 3; i++) EXPECT_EQ(b.f32()[i], 2.f * (1.f + static_cast<float>(i)));
  ccv_nnc_stream_context_free(s);
}

}  // namespace
