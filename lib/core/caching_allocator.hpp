// A caching device allocator: the bookkeeping in host code, with no CUDA in
// it. The CUDA module gives it the raw allocation calls and stream events
// (cuda/device.cpp); the unit tests give it a host imitation of both.
//
// Why: cudaMalloc / cudaFree per tensor are slow and cudaFree synchronises the
// device. The allocator takes memory from the device in segments, hands out
// blocks cut from them, and keeps freed blocks for the next request.
//
// Sizes: requests are rounded up to 512 bytes. Up to 1 MiB they come from
// 2 MiB segments (the small pool), up to 10 MiB from 20 MiB segments, beyond
// that from a segment of their own rounded up to 2 MiB (the large pool). A
// free block bigger than the request is split (the rest stays free: at least
// 512 bytes in the small pool, more than 1 MiB in the large one); freed
// neighbours in a segment merge again.
//
// Streams: a block belongs to the stream it was allocated for. Freed, it
// serves that stream again at once (the stream's later work runs after the
// work that used it), and any other stream only once an event recorded on
// the owner stream at the free has completed. A block also used on other
// streams (record_stream) waits for events on each of them before anyone
// reuses it. Stream NULL means synchronous use: freed, the block is free for
// everybody at once (its user has waited for its work already).
//
// When the device has no room, the allocator waits for the pending events,
// returns every wholly free segment to the device, and tries once more; then
// it fails with CCV_NNC_EXEC_OOM and a message with its figures.
// Thread-safe (one lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace nnc {

struct CachingBackend {
  // Raw device memory: NULL when the device has no room; throws nnc::Error on
  // any other failure (the allocator is left as it was).
  std::function<void*(int device, size_t bytes)> alloc;
  std::function<void(int device, void* ptr)> free;
  // An event at the current end of `stream`'s queued work on `device`.
  std::function<void*(int device, void* stream)> record;
  // Has the stream passed the event?
  std::function<bool(void* event)> done;
  // Blocks until the stream has passed the event.
  std::function<void(void* event)> wait;
  // The event is no longer needed.
  std::function<void(void* event)> release;
};

struct CachingStats {
  size_t in_use = 0;         // bytes of the blocks handed out (rounded sizes)
  size_t requested = 0;      // bytes asked for by the live allocations
  size_t reserved = 0;       // bytes of the segments held from the device
  size_t cached = 0;         // reserved - in_use
  size_t peak_in_use = 0;
  size_t peak_reserved = 0;
  uint64_t allocations = 0;  // live allocations
  uint64_t segments = 0;     // live segments
  uint64_t hits = 0;         // requests served from cached blocks
  uint64_t misses = 0;       // requests that took a new segment
  uint64_t oom_retries = 0;  // raw allocations that failed and were retried after releasing the cache
  uint64_t released = 0;     // segments given back to the device
};

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kMidLimit = size_t{10} << 20;
  static constexpr size_t kMidSegment = size_t{20} << 20;
  static constexpr size_t kLargeRound = size_t{2} << 20;

  // The size a request of `bytes` is given, and the segment taken for it when
  // no cached block fits.
  static size_t round_size(size_t bytes);
  static size_t segment_size(size_t rounded);

  explicit CachingAllocator(CachingBackend backend);
  ~CachingAllocator();  // release_all()
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` on `device` for work on `stream` (NULL:
  // synchronous use). Throws nnc::Error (CCV_NNC_EXEC_OOM) when the device
  // has no room even after the cache is released.
  void* allocate(int device, size_t bytes, void* stream);
  // Returns a block. Throws nnc::Error for a pointer it did not hand out
  // (or one freed already).
  void deallocate(void* ptr);
  // The block is used by work on `stream` too (not only its own stream).
  void record_stream(void* ptr, void* stream);
  // Gives every wholly free segment of `device` (-1: of every device) back;
  // returns the bytes given back.
  size_t release_cached(int device);
  // Gives every segment back, blocks in use or not (at exit; tests).
  void release_all();
  CachingStats stats(int device) const;
  void reset_peaks(int device);
  // Devices the allocator has seen.
  std::vector<int> devices() const;

 private:
  struct Event;
  using EventRef = std::shared_ptr<Event>;
  enum class Where { Allocated, Shared, Owned, Pending };
  struct Block {
    int device = 0;
    bool small = false;
    char* ptr = nullptr;
    size_t size = 0;
    size_t requested = 0;
    size_t segment = 0;  // the segment's size, in its first block
    Block* prev = nullptr;  // neighbours in the segment
    Block* next = nullptr;
    Where where = Where::Shared;
    void* stream = nullptr;        // owner
    std::vector<void*> uses;       // other streams (while allocated)
    std::vector<EventRef> events;  // while free: what reuse waits for
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySize>;
  struct Device {
    Pool shared[2];                        // [small]: free for every stream
    std::map<void*, Pool> owned[2];        // free for their owner stream at once
    std::set<Block*> waiting;              // free blocks with events (Owned or Pending)
    std::vector<Block*> heads;             // first block of each segment
    CachingStats stats;
  };

  Device& device_of(int device);
  Block* find_free(Device& d, bool small, size_t size, void* stream);
  void take(Device& d, Block* b);       // out of its pool
  void put(Device& d, Block* b);        // into the pool its state says, merging
  Block* merge(Device& d, Block* b);    // with free neighbours of the same state
  bool mergeable(const Block* a, const Block* b) const;
  void process_events(Device& d);
  size_t release_cached_locked(int device, Device& d);
  void free_segment(Device& d, Block* head);

  CachingBackend backend_;
  mutable std::mutex mutex_;
  std::map<int, Device> devices_;
  std::unordered_map<void*, Block*> live_;
};

}  // namespace nnc
