// The caching device allocator's bookkeeping against a host imitation of a
// device: raw segments are host buffers of a limited device capacity, and
// streams are counters of queued work ("ticks") that the test advances, so an
// event ("stream s at tick t") completes exactly when the test says.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/caching_allocator.hpp"
#include "core/error.hpp"

namespace {

using nnc::CachingAllocator;

struct MockDevice {
  std::mutex mutex;
  size_t capacity = size_t{64} << 20;  // per device
  std::map<int, size_t> used;
  std::map<void*, std::pair<int, size_t>> segments;
  int raw_allocs = 0, raw_frees = 0, failed_allocs = 0;
  // Streams: queued and completed ticks. Events: (stream, tick).
  std::map<void*, uint64_t> queued, completed;
  struct Ev {
    void* stream;
    uint64_t tick;
  };
  int live_events = 0, waits = 0;

  nnc::CachingBackend backend() {
    nnc::CachingBackend b;
    b.alloc = [this](int device, size_t bytes) -> void* {
      std::lock_guard<std::mutex> lock(mutex);
      if (used[device] + bytes > capacity) {
        failed_allocs++;
        return nullptr;
      }
      void* p = std::aligned_alloc(4096, bytes);  // segment sizes are multiples of 2 MiB
      used[device] += bytes;
      segments[p] = {device, bytes};
      raw_allocs++;
      return p;
    };
    b.free = [this](int device, void* p) {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = segments.find(p);
      ASSERT_NE(it, segments.end()) << "freed a pointer that is not a segment";
      EXPECT_EQ(it->second.first, device);
      used[device] -= it->second.second;
      segments.erase(it);
      std::free(p);
      raw_frees++;
    };
    b.record = [this](int, void* stream) -> void* {
      std::lock_guard<std::mutex> lock(mutex);
      live_events++;
      return new Ev{stream, queued[stream]};
    };
    b.done = [this](void* e) {
      std::lock_guard<std::mutex> lock(mutex);
      auto* ev = static_cast<Ev*>(e);
      return completed[ev->stream] >= ev->tick;
    };
    b.wait = [this](void* e) {
      std::lock_guard<std::mutex> lock(mutex);
      auto* ev = static_cast<Ev*>(e);
      waits++;
      completed[ev->stream] = std::max(completed[ev->stream], ev->tick);  // "the device ran until then"
    };
    b.release = [this](void* e) {
      std::lock_guard<std::mutex> lock(mutex);
      live_events--;
      delete static_cast<Ev*>(e);
    };
    return b;
  }
  // Work queued on / finished by a stream.
  void queue(void* s) {
    std::lock_guard<std::mutex> lock(mutex);
    queued[s]++;
  }
  void complete(void* s) {
    std::lock_guard<std::mutex> lock(mutex);
    completed[s] = queued[s];
  }
};

void* const S1 = reinterpret_cast<void*>(0x1001);
void* const S2 = reinterpret_cast<void*>(0x1002);
constexpr size_t MiB = size_t{1} << 20;

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(dev.live_events, 0) << "events leaked";
    EXPECT_TRUE(dev.segments.empty()) << "segments leaked";
  }
  MockDevice dev;
};

TEST_F(CachingAllocatorTest, SizesAreRoundedAndSegmentsSizedByClass) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(MiB + 1), MiB + 512);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB + 512), 12 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(33 * MiB), 34 * MiB);
  EXPECT_THROW(CachingAllocator::round_size(SIZE_MAX - 3), nnc::Error);
}

TEST_F(CachingAllocatorTest, SmallBlocksShareASegmentAndAreAlignedAndDisjoint) {
  CachingAllocator a(dev.backend());
  std::vector<std::pair<char*, size_t>> blocks;
  std::mt19937 rng(3);
  for (int i = 0; i < 40; i++) {
    const size_t n = 1 + rng() % 40000;
    char* p = static_cast<char*>(a.allocate(0, n, nullptr));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 512, 0u);  // segments are 4096-aligned here
    std::memset(p, i, n);  // the whole request is writable (ASan checks)
    blocks.push_back({p, n});
  }
  // Disjoint.
  auto sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); i++) EXPECT_GE(sorted[i].first, sorted[i - 1].first + sorted[i - 1].second);
  const nnc::CachingStats s = a.stats(0);
  EXPECT_EQ(s.allocations, 40u);
  EXPECT_EQ(s.misses, s.segments);
  EXPECT_LE(s.segments, 1u + (40u * 40000u) / (2 * MiB));  // packed into 2 MiB segments
  EXPECT_EQ(s.reserved, s.segments * 2 * MiB);
  size_t requested = 0, rounded = 0;
  for (auto& b : blocks) requested += b.second, rounded += CachingAllocator::round_size(b.second);
  EXPECT_EQ(s.requested, requested);
  EXPECT_EQ(s.in_use, rounded);
  EXPECT_EQ(s.cached, s.reserved - s.in_use);
  for (auto& b : blocks) a.deallocate(b.first);
  EXPECT_EQ(a.stats(0).in_use, 0u);
  EXPECT_EQ(a.stats(0).allocations, 0u);
  // Every segment merged back into one free block: all of them can be released.
  EXPECT_EQ(a.release_cached(0), s.reserved);
  EXPECT_EQ(a.stats(0).reserved, 0u);
  EXPECT_EQ(dev.raw_frees, dev.raw_allocs);
}

TEST_F(CachingAllocatorTest, FreedBlockIsReusedAtOnceOnItsOwnStream) {
  CachingAllocator a(dev.backend());
  void* p = a.allocate(0, 3000, S1);
  dev.queue(S1);  // work using p, not finished
  a.deallocate(p);
  void* q = a.allocate(0, 3000, S1);
  EXPECT_EQ(q, p);  // stream order makes it safe
  EXPECT_EQ(a.stats(0).hits, 1u);
  EXPECT_EQ(a.stats(0).misses, 1u);
  a.deallocate(q);
  // Synchronous blocks (stream NULL) are free for everybody at once.
  void* r = a.allocate(0, 100 * 1024, nullptr);
  a.deallocate(r);
  EXPECT_EQ(a.allocate(0, 100 * 1024, S2), r);
  a.release_all();
}

TEST_F(CachingAllocatorTest, AnotherStreamReusesABlockOnlyAfterTheFreeEventCompleted) {
  CachingAllocator a(dev.backend());
  // A whole segment (large pool, nothing else in it) so that "another block" means another segment.
  void* p = a.allocate(0, 16 * MiB, S1);
  dev.queue(S1);
  a.deallocate(p);
  void* q = a.allocate(0, 16 * MiB, S2);
  EXPECT_NE(q, p);  // S1 has not passed the free yet
  EXPECT_EQ(a.stats(0).misses, 2u);
  a.deallocate(q);  // S2 has no queued work: its event is complete at once
  dev.complete(S1);
  void* r = a.allocate(0, 16 * MiB, S2);
  EXPECT_TRUE(r == p || r == q);
  void* t = a.allocate(0, 16 * MiB, S2);
  EXPECT_TRUE((t == p || t == q) && t != r);  // both reused now, no new segment
  EXPECT_EQ(a.stats(0).misses, 2u);
  EXPECT_EQ(a.stats(0).hits, 2u);
  a.deallocate(r);
  a.deallocate(t);
  a.release_all();
}

TEST_F(CachingAllocatorTest, ABlockUsedOnAnotherStreamWaitsForThatStreamEvenForItsOwner) {
  CachingAllocator a(dev.backend());
  void* p = a.allocate(0, 16 * MiB, S1);
  a.record_stream(p, S2);
  a.record_stream(p, S2);  // once is enough
  a.record_stream(p, S1);  // its own stream: nothing to add
  dev.queue(S2);
  a.deallocate(p);
  void* q = a.allocate(0, 16 * MiB, S1);
  EXPECT_NE(q, p);  // S2 may still read p
  dev.complete(S2);
  void* r = a.allocate(0, 16 * MiB, S1);
  EXPECT_EQ(r, p);
  a.deallocate(q);
  a.deallocate(r);
  EXPECT_THROW(a.record_stream(p, S2), nnc::Error);  // freed
  a.release_all();
}

TEST_F(CachingAllocatorTest, LargeSegmentsAreSplitAndMergedBack) {
  CachingAllocator a(dev.backend());
  // 2 MiB + 512 comes from a 20 MiB segment; the rest (> 1 MiB) is split off and serves the next.
  char* p = static_cast<char*>(a.allocate(0, 2 * MiB + 1, S1));
  char* q = static_cast<char*>(a.allocate(0, 3 * MiB, S1));
  EXPECT_EQ(q, p + 2 * MiB + 512);
  EXPECT_EQ(a.stats(0).segments, 1u);
  // A rest of 1 MiB or less is not split off (the large pool keeps no crumbs).
  char* big = static_cast<char*>(a.allocate(0, 15 * MiB - 512 - MiB / 2, S1));  // leaves 512 KiB + ... of the 20
  EXPECT_EQ(big, q + 3 * MiB);
  EXPECT_EQ(a.stats(0).in_use, 20 * MiB);
  a.deallocate(q);
  a.deallocate(p);
  a.deallocate(big);
  dev.complete(S1);
  // Merged into one block again: a request for the whole segment takes it without a new one.
  char* whole = static_cast<char*>(a.allocate(0, 20 * MiB, S2));
  EXPECT_EQ(whole, p);
  EXPECT_EQ(a.stats(0).segments, 1u);
  a.deallocate(whole);
  // Small requests never come from the large pool.
  void* s = a.allocate(0, 4096, S2);
  EXPECT_EQ(a.stats(0).segments, 2u);
  a.deallocate(s);
  EXPECT_EQ(a.release_cached(-1), 22 * MiB);
}

TEST_F(CachingAllocatorTest, OutOfMemoryReleasesTheCacheAndRetries) {
  dev.capacity = 48 * MiB;
  CachingAllocator a(dev.backend());
  void* p = a.allocate(0, 20 * MiB, S1);  // 20 MiB segment
  void* q = a.allocate(0, 20 * MiB, S2);  // 20 MiB segment
  dev.queue(S1);
  a.deallocate(p);  // cached, S1 not past it yet
  // 24 MiB does not fit beside 40 MiB: the allocator waits for S1, gives p's segment back, retries.
  void* r = a.allocate(0, 24 * MiB, S2);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(a.stats(0).oom_retries, 1u);
  EXPECT_EQ(a.stats(0).released, 1u);
  EXPECT_GE(dev.waits, 1);
  // Beyond the device even when everything cached is released: an error with the figures.
  try {
    a.allocate(0, 30 * MiB, S2);
    ADD_FAILURE() << "allocated beyond the device";
  } catch (const nnc::Error& e) {
    EXPECT_EQ(e.code(), CCV_NNC_EXEC_OOM);
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  // The failure changed nothing.
  EXPECT_EQ(a.stats(0).allocations, 2u);
  a.deallocate(q);
  a.deallocate(r);
  a.release_all();
  EXPECT_EQ(a.stats(0).reserved, 0u);
}

TEST_F(CachingAllocatorTest, StatisticsFollowEveryStep) {
  CachingAllocator a(dev.backend());
  void* p = a.allocate(0, 1000, nullptr);
  void* q = a.allocate(0, 5000, nullptr);
  nnc::CachingStats s = a.stats(0);
  EXPECT_EQ(s.in_use, 1024u + 5120u);
  EXPECT_EQ(s.requested, 6000u);
  EXPECT_EQ(s.reserved, 2 * MiB);
  EXPECT_EQ(s.cached, 2 * MiB - 6144);
  EXPECT_EQ(s.peak_in_use, 6144u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);  // q was cut from p's segment
  a.deallocate(p);
  s = a.stats(0);
  EXPECT_EQ(s.in_use, 5120u);
  EXPECT_EQ(s.peak_in_use, 6144u);
  a.reset_peaks(0);
  EXPECT_EQ(a.stats(0).peak_in_use, 5120u);
  // Another device keeps its own figures.
  void* g1 = a.allocate(1, 1, nullptr);
  EXPECT_EQ(a.stats(1).in_use, 512u);
  EXPECT_EQ(a.stats(0).in_use, 5120u);
  EXPECT_EQ(a.stats(7).reserved, 0u);  // never used
  EXPECT_EQ(a.devices(), (std::vector<int>{0, 1}));
  a.deallocate(g1);
  a.deallocate(q);
  EXPECT_EQ(a.release_cached(-1), 4 * MiB);
  EXPECT_EQ(a.stats(0).released, 1u);
}

TEST_F(CachingAllocatorTest, BadPointersAndDevicesAreErrors) {
  CachingAllocator a(dev.backend());
  int local = 0;
  EXPECT_THROW(a.deallocate(&local), nnc::Error);
  void* p = a.allocate(0, 10, nullptr);
  a.deallocate(p);
  EXPECT_THROW(a.deallocate(p), nnc::Error);  // twice
  EXPECT_THROW(a.allocate(-1, 10, nullptr), nnc::Error);
  a.release_all();
}

TEST_F(CachingAllocatorTest, ReleaseAllGivesBackEvenBlocksInUse) {
  {
    CachingAllocator a(dev.backend());
    a.allocate(0, 100, S1);
    a.allocate(0, 30 * MiB, S2);
    void* p = a.allocate(1, 100, S1);
    dev.queue(S1);
    a.deallocate(p);  // an event pending at exit
  }  // the destructor releases everything
  EXPECT_TRUE(dev.segments.empty());
  EXPECT_EQ(dev.raw_frees, dev.raw_allocs);
}

TEST_F(CachingAllocatorTest, ManyThreadsAllocateAndFreeConsistently) {
  dev.capacity = size_t{1} << 30;
  CachingAllocator a(dev.backend());
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      void* stream = t % 2 ? S1 : S2;
      std::vector<std::pair<unsigned char*, size_t>> held;
      for (int i = 0; i < 2000; i++) {
        if (held.size() < 16 && rng() % 3) {
          const size_t n = rng() % 2 ? 1 + rng() % 8000 : 1 + rng() % (3 * MiB);
          auto* p = static_cast<unsigned char*>(a.allocate(0, n, stream));
          std::memset(p, t + 1, std::min<size_t>(n, 64));
          held.push_back({p, n});
        } else if (!held.empty()) {
          const size_t k = rng() % held.size();
          // Nobody else wrote into it while this thread held it.
          for (size_t j = 0; j < std::min<size_t>(held[k].second, 64); j++)
            if (held[k].first[j] != t + 1) overlaps++;
          a.deallocate(held[k].first);
          held.erase(held.begin() + static_cast<long>(k));
        }
      }
      for (auto& h : held) a.deallocate(h.first);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(a.stats(0).in_use, 0u);
  EXPECT_EQ(a.stats(0).allocations, 0u);
  const nnc::CachingStats s = a.stats(0);
  EXPECT_GT(s.hits, s.misses);  // the cache did its job
  a.release_all();
}

}  // namespace
