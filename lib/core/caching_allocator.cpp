// The caching device allocator's bookkeeping (caching_allocator.hpp).
#include "core/caching_allocator.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace nnc {

struct CachingAllocator::Event {
  const CachingBackend* backend;
  void* event;
  Event(const CachingBackend* b, void* e) : backend(b), event(e) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { backend->release(event); }
};

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes == 0) return kRound;
  if (bytes > std::numeric_limits<size_t>::max() - kLargeRound)
    fail(CCV_NNC_EXEC_OOM, "device allocator: %zu bytes cannot be allocated", bytes);
  return (bytes + kRound - 1) / kRound * kRound;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallLimit) return kSmallSegment;
  if (rounded <= kMidLimit) return kMidSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::CachingAllocator(CachingBackend backend) : backend_(std::move(backend)) {}

CachingAllocator::~CachingAllocator() { release_all(); }

CachingAllocator::Device& CachingAllocator::device_of(int device) {
  NNC_CHECK(device >= 0, "device allocator: device %d is not a device", device);
  return devices_[device];
}

CachingAllocator::Block* CachingAllocator::find_free(Device& d, bool small, size_t size, void* stream) {
  Block key;
  key.size = size;
  key.ptr = nullptr;
  Block* best = nullptr;
  const Pool& shared = d.shared[small];
  auto it = shared.lower_bound(&key);
  if (it != shared.end()) best = *it;
  if (stream) {
    auto o = d.owned[small].find(stream);
    if (o != d.owned[small].end()) {
      auto jt = o->second.lower_bound(&key);
      // The tighter fit; on a tie the stream's own block (no event behind it).
      if (jt != o->second.end() && (!best || (*jt)->size <= best->size)) best = *jt;
    }
  }
  return best;
}

void CachingAllocator::take(Device& d, Block* b) {
  switch (b->where) {
    case Where::Shared: d.shared[b->small].erase(b); break;
    case Where::Owned: {
      auto o = d.owned[b->small].find(b->stream);
      if (o != d.owned[b->small].end()) {
        o->second.erase(b);
        if (o->second.empty()) d.owned[b->small].erase(o);
      }
      d.waiting.erase(b);
      break;
    }
    case Where::Pending: d.waiting.erase(b); break;
    case Where::Allocated: break;
  }
}

bool CachingAllocator::mergeable(const Block* a, const Block* b) const {
  if (a->where != b->where) return false;
  if (a->where == Where::Shared) return true;
  return a->where == Where::Owned && a->stream == b->stream;
}

CachingAllocator::Block* CachingAllocator::merge(Device& d, Block* b) {
  if (Block* p = b->prev; p && mergeable(p, b)) {
    take(d, p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    p->events.insert(p->events.end(), b->events.begin(), b->events.end());
    delete b;
    b = p;
  }
  if (Block* n = b->next; n && mergeable(b, n)) {
    take(d, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    b->events.insert(b->events.end(), n->events.begin(), n->events.end());
    delete n;
  }
  return b;
}

void CachingAllocator::put(Device& d, Block* b) {
  b = merge(d, b);
  switch (b->where) {
    case Where::Shared: d.shared[b->small].insert(b); break;
    case Where::Owned:
      d.owned[b->small][b->stream].insert(b);
      d.waiting.insert(b);
      break;
    case Where::Pending: d.waiting.insert(b); break;
    case Where::Allocated: break;
  }
}

void CachingAllocator::process_events(Device& d) {
  std::vector<Block*> ready;
  for (Block* b : d.waiting) {
    auto& ev = b->events;
    ev.erase(std::remove_if(ev.begin(), ev.end(), [&](const EventRef& e) { return backend_.done(e->event); }), ev.end());
    if (ev.empty()) ready.push_back(b);
  }
  // A ready block merges only with Shared neighbours, so the others in
  // `ready` (not Shared yet) survive until their turn.
  for (Block* b : ready) {
    take(d, b);
    b->where = Where::Shared;
    put(d, b);
  }
}

void* CachingAllocator::allocate(int device, size_t bytes, void* stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  Device& d = device_of(device);
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallLimit;
  process_events(d);
  Block* b = find_free(d, small, size, stream);
  if (b) {
    take(d, b);
    d.stats.hits++;
  } else {
    const size_t segment = segment_size(size);
    void* p = backend_.alloc(device, segment);
    if (!p) {
      // No room: wait for the blocks still in use by streams, give every
      // wholly free segment back, and try once more.
      d.stats.oom_retries++;
      for (Block* w : d.waiting)
        for (const EventRef& e : w->events) backend_.wait(e->event);
      release_cached_locked(device, d);
      p = backend_.alloc(device, segment);
      if (!p)
        fail(CCV_NNC_EXEC_OOM,
             "cannot allocate %zu bytes on GPU %d: the device is out of memory (this process holds %zu bytes in %llu "
             "segments, %zu of them in use, %zu cached after releasing what it could)",
             bytes, device, d.stats.reserved, static_cast<unsigned long long>(d.stats.segments), d.stats.in_use,
             d.stats.reserved - d.stats.in_use);
    }
    b = new Block;
    b->device = device;
    b->small = small;
    b->ptr = static_cast<char*>(p);
    b->size = segment;
    b->segment = segment;
    b->where = Where::Shared;
    d.heads.push_back(b);
    d.stats.reserved += segment;
    d.stats.peak_reserved = std::max(d.stats.peak_reserved, d.stats.reserved);
    d.stats.segments++;
    d.stats.misses++;
  }
  const Where was = b->where;
  b->where = Where::Allocated;  // before the rest is put back: it must not merge into b
  const size_t rest = b->size - size;
  if (small ? rest >= kRound : rest > kSmallLimit) {
    // The rest stays free in the state the block was in.
    Block* r = new Block;
    r->device = device;
    r->small = b->small;
    r->ptr = b->ptr + size;
    r->size = rest;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    r->where = was;
    r->stream = b->stream;
    r->events = b->events;
    put(d, r);
  }
  b->events.clear();
  b->uses.clear();
  b->stream = stream;
  b->requested = bytes;
  live_[b->ptr] = b;
  d.stats.in_use += b->size;
  d.stats.requested += bytes;
  d.stats.allocations++;
  d.stats.peak_in_use = std::max(d.stats.peak_in_use, d.stats.in_use);
  return b->ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  NNC_CHECK(it != live_.end(), "device allocator: %p was not handed out by it, or was freed already", ptr);
  Block* b = it->second;
  // Events first: if recording one fails, the block stays allocated.
  std::vector<EventRef> events;
  if (b->stream) events.push_back(std::make_shared<Event>(&backend_, backend_.record(b->device, b->stream)));
  for (void* u : b->uses) events.push_back(std::make_shared<Event>(&backend_, backend_.record(b->device, u)));
  live_.erase(it);
  Device& d = devices_[b->device];
  d.stats.in_use -= b->size;
  d.stats.requested -= b->requested;
  d.stats.allocations--;
  b->requested = 0;
  b->events = std::move(events);
  if (b->events.empty())
    b->where = Where::Shared;
  else if (b->uses.empty())
    b->where = Where::Owned;
  else
    b->where = Where::Pending;  // other streams' work: nobody reuses it before their events
  b->uses.clear();
  put(d, b);
}

void CachingAllocator::record_stream(void* ptr, void* stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  NNC_CHECK(it != live_.end(), "device allocator: %p was not handed out by it, or was freed already", ptr);
  Block* b = it->second;
  if (!stream || stream == b->stream) return;
  if (std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end()) b->uses.push_back(stream);
}

void CachingAllocator::free_segment(Device& d, Block* head) {
  for (Block* b = head; b;) {
    Block* next = b->next;
    if (b->where == Where::Allocated) {
      live_.erase(b->ptr);
      d.stats.in_use -= b->size;
      d.stats.requested -= b->requested;
      d.stats.allocations--;
    } else {
      take(d, b);
    }
    if (b != head) delete b;
    b = next;
  }
  backend_.free(head->device, head->ptr);
  d.stats.reserved -= head->segment;
  d.stats.segments--;
  d.stats.released++;
  d.heads.erase(std::find(d.heads.begin(), d.heads.end(), head));
  delete head;
}

size_t CachingAllocator::release_cached_locked(int, Device& d) {
  process_events(d);
  size_t bytes = 0;
  std::vector<Block*> whole;
  for (Block* h : d.heads)
    if (h->where == Where::Shared && !h->next) whole.push_back(h);  // one free block: the whole segment
  for (Block* h : whole) {
    bytes += h->segment;
    free_segment(d, h);
  }
  return bytes;
}

size_t CachingAllocator::release_cached(int device) {
  const std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = 0;
  for (auto& [id, d] : devices_)
    if (device < 0 || id == device) bytes += release_cached_locked(id, d);
  return bytes;
}

void CachingAllocator::release_all() {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, d] : devices_)
    while (!d.heads.empty()) free_segment(d, d.heads.back());
}

CachingStats CachingAllocator::stats(int device) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = devices_.find(device);
  if (it == devices_.end()) return {};
  CachingStats s = it->second.stats;
  s.cached = s.reserved - s.in_use;
  return s;
}

void CachingAllocator::reset_peaks(int device) {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, d] : devices_)
    if (device < 0 || id == device) {
      d.stats.peak_in_use = d.stats.in_use;
      d.stats.peak_reserved = d.stats.reserved;
    }
}

std::vector<int> CachingAllocator::devices() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> ids;
  for (const auto& [id, d] : devices_) ids.push_back(id);
  return ids;
}

}  // namespace nnc
