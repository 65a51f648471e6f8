// Live-object counts behind ccv_nnc_live_object_count (the bindings' leak
// tests). A struct that is one of the counted kinds carries a LiveCounter
// member: every construction (copies included) adds one and every
// destruction takes one away, so all paths that make or free the object --
// public calls, sub-graphs, copies, objects the library makes for itself --
// are counted without touching each of them. Plain C objects (tensors,
// views) call live_add at their allocation and release instead.
#pragma once
#include <atomic>
#include <cstdint>

#include "nnc/ccv_nnc.h"

namespace nnc {

extern std::atomic<int64_t> g_live_objects[CCV_NNC_LIVE_KIND_COUNT];

inline void live_add(int kind, int64_t delta) noexcept {
  g_live_objects[kind].fetch_add(delta, std::memory_order_relaxed);
}

template <int Kind>
struct LiveCounter {
  static_assert(Kind >= 0 && Kind < CCV_NNC_LIVE_KIND_COUNT);
  LiveCounter() noexcept { live_add(Kind, 1); }
  LiveCounter(const LiveCounter&) noexcept { live_add(Kind, 1); }
  LiveCounter& operator=(const LiveCounter&) noexcept { return *this; }
  ~LiveCounter() { live_add(Kind, -1); }
};

}  // namespace nnc
