// GPU_REF under CPU emulation (design: CMakeLists.txt here): the block
// scheduler behind emu::launch (cuda_emu.hpp) and a synchronous stand-in for
// the part of the CUDA runtime that the module's host code uses (the
// libraries': emu_cublas.cpp, emu_cudnn.cpp, emu_cudnn_graph.cpp,
// emu_nccl.cpp). "Device" memory is host memory. EMU_DEVICES devices.
//
// Streams run their work late, as a GPU's may: a launch, an asynchronous
// copy or fill, and an emulated library's product (emu_hooks.hpp:
// library_work), only queues its work on its stream, and queued work runs
// when the host waits for it (cudaStreamSynchronize, cudaEventSynchronize,
// cudaDeviceSynchronize, a synchronous copy to host memory, cudaFree's
// implicit wait), and then only what that wait needs: the stream's work and
// what it waits for (cudaStreamWaitEvent), nothing of other streams. So a host read before
// its wait, a stream reading what another writes without waiting for its
// event, or a block reused by another stream before the work using it has
// run, reads the old bytes, as on a GPU when the timing goes against it.
// Work ready at once runs oldest first; with EMU_ORDER=reverse newest first;
// with a seed (set_stream_order_seed, EMU_STREAM_SEED) in a random order, and
// a wait then also runs other queued work at random. As on a GPU:
// - copies from pageable host memory take their bytes at the call; copies to
//   pageable host memory return when done; pinned memory (cudaHostRegister)
//   is copied when the stream's work runs;
// - cudaMemcpy between device memory and cudaMemset are asynchronous (on
//   the legacy default stream);
// - the legacy default stream waits for streams made without
//   cudaStreamNonBlocking, and they for it;
// - a kernel failing as it runs (a bad barrier, a misaligned cp.async)
//   reports at the host's next wait, and in cudaGetLastError after;
// - a stream or event used after its destroy is an error (with a message).
//
// Environment:
//   EMU_ORDER=reverse  blocks, and a block's threads within each phase, run
//                      last to first (a kernel whose result depends on that
//                      order has a race: tools/test runs both orders)
//   EMU_MAX_BLOCKS=n   grids of more than n blocks (along x) launched with
//                      n: every grid-stride loop then goes round (on the
//                      GPU only grids past the launch code's cap do)
//   EMU_STATS=1        at exit, each kernel's launches, blocks, threads and
//                      most threads in one block (to stderr; EMU_STATS=<file>:
//                      to that file), which tools/gpu-emu/check_registers.py
//                      holds against ptxas's registers per kernel
//   EMU_WARP_AHEAD=1   at warp barriers (warp intrinsics, tensor-core
//                      products) one warp at a time goes on (the first in
//                      the thread order), so a warp runs ahead of the
//                      others up to its next __syncthreads: shared memory a
//                      warp overwrites while another still reads it (a
//                      missing __syncthreads) shows. Without it every warp
//                      moves one warp barrier per round, in step.
//                      cp.async copies (cuda/async_copy.cuh) then land at
//                      once, the earliest a GPU may land them (a prefetch
//                      into a buffer another warp still reads shows);
//                      without it they land at the latest, when the
//                      __syncthreads after the wait retiring them releases
//                      (a missing wait or barrier shows).
//   EMU_DEVICES=n      n devices (default 2, at most 8): memory, streams
//                      and events belong to one; a launch on another
//                      device's stream than the current one's, or an event
//                      recorded on another device's stream, fails as on a GPU
//   EMU_DEVICE_MEMORY=bytes each device's memory (default 80 GiB): a
//                      cudaMalloc past it fails (cudaErrorMemoryAllocation)
//   EMU_SKIP_KERNELS=1 launches are checked and counted but no block runs
//                      (host-cost-emu: the host's own cost of a step; every
//                      result is then garbage)
//   EMU_EXACT_MEMORY=1 each GPU tensor its own allocation, ending at an
//                      inaccessible page (or exact under ASan): emu_main.cpp
//   EMU_STREAMS=eager  every launch, copy and fill runs at once instead, on
//                      the calling thread (streams are always done)
//   EMU_STREAM_SEED=n  queued work ready at once runs in a random order from
//                      seed n (set_stream_order_seed sets it too)
//   EMU_TRACE=1        each operation queued (its stream, what it waits for)
//                      and run, to stderr
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "cuda_emu.hpp"
#include "emu_hooks.hpp"

// Fibers switch by a few instructions on x86-64 (emu_switch_stacks), else, and
// under AddressSanitizer (which follows swapcontext only), by ucontext.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define EMU_FAST_SWITCH 1
#else
#define EMU_FAST_SWITCH 0
#endif

namespace emu {
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
}  // namespace emu

namespace emu {
namespace {

thread_local cudaError_t g_last = cudaSuccess;  // cudaGetLastError's status
void set_error(cudaError_t e) {
  if (g_last == cudaSuccess) g_last = e;
}

// --- the block scheduler ---------------------------------------------------
constexpr size_t kStack = 256 * 1024;  // per emulated thread (mapped lazily)
constexpr unsigned kMaxThreads = 1024;
// sm_90's 227 KiB of shared memory per block; more than 48 KiB needs the
// kernel's opt-in (cudaFuncSetAttribute, below), checked at launch.
constexpr size_t kMaxDynamicShared = 227 * 1024;
constexpr size_t kDefaultDynamicShared = 48 * 1024;
std::mutex g_opt_in_mutex;
std::map<const void*, size_t>& opt_in() {  // kernel -> its cudaFuncAttributeMaxDynamicSharedMemorySize
  static auto* const v = new std::map<const void*, size_t>;
  return *v;
}

enum State { Ready, AtBarrier, AtWarpBarrier, Done };
struct Fiber {
#if EMU_FAST_SWITCH
  void* sp = nullptr;  // its saved stack pointer while it is not running
#else
  ucontext_t ctx;
#endif
  void* stack = nullptr;
  State state = Ready;
  const char* file = nullptr;
  int line = 0;
  unsigned mask = 0;  // at a warp barrier: the lanes it waits for
  uint64_t slot = 0;  // a value it offers its warp (shuffles, votes)
  // Asynchronous copies (cp.async, cuda/async_copy.cuh): those not yet
  // committed, the committed groups not yet retired by a wait (oldest
  // first), and those retired, written at the thread's next __syncthreads.
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Copy> open, landed;
  std::vector<std::vector<Copy>> groups;
};

std::mutex g_launch;  // one launch at a time: __shared__ statics are per kernel, not per block
std::vector<Fiber>& fibers() {
  static auto* const v = new std::vector<Fiber>;
  return *v;
}
#if EMU_FAST_SWITCH
void* g_main_sp = nullptr;
#else
ucontext_t g_main;
#endif
unsigned g_current = 0;
const std::function<void()>* g_body = nullptr;  // the launch's threads' body
thread_local bool t_in_kernel = false;
int g_barrier_count = 0;  // threads with a nonzero predicate at the barrier last released
std::vector<unsigned char>& shared_buffer() {
  static auto* const v = new std::vector<unsigned char>;
  return *v;
}
size_t g_dynamic_bytes = 0;
bool g_reverse = false;
bool g_warp_ahead = false;  // EMU_WARP_AHEAD
unsigned g_max_blocks = 0;  // EMU_MAX_BLOCKS (0: no cap)
bool g_skip_kernels = false;  // EMU_SKIP_KERNELS (or set_skip_kernels)
// Devices (EMU_DEVICES=n, default 2, at most 8): the calling thread's
// current one (cudaSetDevice is per thread, as CUDA's); streams and events
// belong to the device current where they were made.
int g_devices = 2;
size_t g_capacity = size_t{80} << 30;  // EMU_DEVICE_MEMORY
thread_local int t_device = 0;
struct FakeObject {
  int kind;  // 1 a stream, 2 an event
  int device;
  // Destroyed objects are kept, marked, so that a use after the destroy is
  // an error with a message (on a GPU: an error, or worse), not a write to
  // freed memory.
  bool destroyed = false;
};
// s (a stream, or the default one) or e (an event), or a message and
// cudaErrorInvalidResourceHandle when it was destroyed.
bool alive(const void* object, const char* call) {
  const FakeObject* f = static_cast<const FakeObject*>(object);
  if (!f || !f->destroyed) return true;
  std::fprintf(stderr, "gpu-emu: %s: a %s used after it was destroyed\n", call, f->kind == 1 ? "stream" : "event");
  set_error(cudaErrorInvalidResourceHandle);
  return false;
}
// The default streams (cudaStreamLegacy, cudaStreamPerThread, 0) are each
// device's legacy stream here.
bool is_default(cudaStream_t s) { return !s || s == cudaStreamLegacy || s == cudaStreamPerThread; }
bool alive(cudaStream_t s, const char* call) {
  return is_default(s) || alive(static_cast<const void*>(reinterpret_cast<FakeObject*>(s)), call);
}
// An event handle that is not NULL and not destroyed, or the error set.
bool usable(cudaEvent_t e, const char* call) {
  if (e) return alive(static_cast<const void*>(e), call);
  set_error(cudaErrorInvalidResourceHandle);
  return false;
}
int device_of(cudaStream_t s) { return is_default(s) ? t_device : reinterpret_cast<FakeObject*>(s)->device; }
std::atomic<unsigned long long> g_launches{0};  // every launch that passed its checks (launch_count)
std::atomic<unsigned long long> g_stream_launches{0};  // those on a stream other than the default one
// cudaHostRegister's ranges and their bytes (never destroyed: a tensor may
// be unpinned by a static destructor after this file's would have run).
std::mutex g_pinned_mutex;
size_t g_pinned = 0;
std::map<void*, size_t>* g_pinned_ranges = new std::map<void*, size_t>;
bool pinned(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  const std::lock_guard<std::mutex> lock(g_pinned_mutex);
  auto it = g_pinned_ranges->upper_bound(const_cast<char*>(c));
  if (it == g_pinned_ranges->begin()) return false;
  --it;
  return c + n <= static_cast<const char*>(it->first) + it->second;
}

// --- streams that run their work late ---------------------------------------
// Queued work: operations with ids in the order queued; each waits for
// older ones only (the one before it on its stream, the events its stream
// waits for), so the queue is always a DAG and id order a valid order.
struct StreamObject : FakeObject {
  bool blocking;      // made without cudaStreamNonBlocking: ordered with the legacy stream
  uint64_t tail = 0;  // its last operation queued (0: none)
};
struct EventObject : FakeObject {
  uint64_t target = 0;  // the operation its last record waits for (0: none, complete)
};
struct Op {
  std::vector<uint64_t> deps;  // older operations it runs after
  std::function<void()> run;   // empty: a wait (cudaStreamWaitEvent), no work
  unsigned devices;             // bit d: queued on a stream of device d
  bool running = false;  // taken by a thread that is running it
};
enum StreamOrder { kOldest, kNewest, kRandom };
bool g_eager = false;  // EMU_STREAMS=eager
bool g_trace = false;  // EMU_TRACE
std::mutex g_queue_mutex;  // ops(), the streams' and events' ids, the orders
std::condition_variable g_op_done;
std::map<uint64_t, Op>& ops() {  // queued, not yet run, by id
  static auto* const v = new std::map<uint64_t, Op>;
  return *v;
}
uint64_t g_next_op = 1;
uint64_t g_legacy_tail[8] = {};            // each device's legacy stream's last operation
std::vector<StreamObject*>* blocking() {  // by device: its blocking streams
  static auto* const v = new std::vector<StreamObject*>[8];
  return v;
}
StreamOrder g_stream_order = kOldest;
uint64_t g_rng = 0;  // kRandom's state (splitmix64)
std::atomic<int> g_async_error{cudaSuccess};  // the first failure of queued work, for the next wait
std::atomic<unsigned long long> g_ran{0};      // kernels, copies, fills and library products run (work_run)
uint64_t next_random() {  // splitmix64; the caller holds g_queue_mutex
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool queued(uint64_t id) { return id && ops().count(id); }
uint64_t& tail_of(cudaStream_t s) {
  return is_default(s) ? g_legacy_tail[device_of(s)] : static_cast<StreamObject*>(reinterpret_cast<FakeObject*>(s))->tail;
}
// What an operation queued on s now waits for: s's last one; on the legacy
// stream every blocking stream's last; on a blocking stream the legacy
// stream's last. The caller holds g_queue_mutex.
std::vector<uint64_t> front_of(cudaStream_t s) {
  std::vector<uint64_t> deps;
  auto add = [&](uint64_t id) {
    if (queued(id)) deps.push_back(id);
  };
  add(tail_of(s));
  const int d = device_of(s);
  if (is_default(s)) {
    for (const StreamObject* b : blocking()[d]) add(b->tail);
  } else if (static_cast<StreamObject*>(reinterpret_cast<FakeObject*>(s))->blocking) {
    add(g_legacy_tail[d]);
  }
  return deps;
}

// Runs one operation's work on this thread; a failure it leaves for
// cudaGetLastError goes to the next wait instead (g_async_error).
void run_work(const std::function<void()>& work) {
  const cudaError_t saved = g_last;
  g_last = cudaSuccess;
  g_ran++;
  work();
  if (g_last != cudaSuccess) {
    int none = cudaSuccess;
    g_async_error.compare_exchange_strong(none, g_last);
  }
  g_last = saved;
}

// Queues work on the streams `on` (one operation, after each one's work:
// a collective's), or runs it at once with EMU_STREAMS=eager or
// EMU_SKIP_KERNELS; `also`: one more operation it waits for.
void enqueue_on(const std::vector<cudaStream_t>& on, std::function<void()> work, uint64_t also = 0) {
  // Skipping kernels (host-cost-emu) stands for a GPU infinitely fast: what
  // is still queued (copies, fills) is done at once, as the host would find it.
  if (g_eager || g_skip_kernels) {
    if (work) run_work(work);
    return;
  }
  const std::lock_guard<std::mutex> lock(g_queue_mutex);
  Op op;
  op.devices = 0;
  for (cudaStream_t s : on) {
    const std::vector<uint64_t> front = front_of(s);
    op.deps.insert(op.deps.end(), front.begin(), front.end());
    op.devices |= 1u << device_of(s);
  }
  if (queued(also)) op.deps.push_back(also);
  op.run = std::move(work);
  const uint64_t id = g_next_op++;
  if (g_trace) {
    std::fprintf(stderr, "gpu-emu: queued %llu on stream %p (devices 0x%x)%s, after",
                 static_cast<unsigned long long>(id), static_cast<void*>(on[0]), op.devices, op.run ? "" : " (a wait)");
    for (uint64_t d : op.deps) std::fprintf(stderr, " %llu", static_cast<unsigned long long>(d));
    std::fprintf(stderr, "\n");
  }
  ops().emplace(id, std::move(op));
  for (cudaStream_t s : on) tail_of(s) = id;
}
void enqueue(cudaStream_t s, std::function<void()> work, uint64_t also = 0) { enqueue_on({s}, std::move(work), also); }

// Runs the queued operations the `targets` wait for, and the targets: only
// those, in the order the stream order picks among those ready (in a random
// order, each other queued operation joins them too with odds of one in
// two, as if the GPU had reached it meanwhile). Another thread may run some
// of them meanwhile; this one then waits for it.
void complete(std::vector<uint64_t> targets) {
  std::unique_lock<std::mutex> lock(g_queue_mutex);
  if (g_stream_order == kRandom)
    for (const auto& [id, op] : ops())
      if (next_random() & 1) targets.push_back(id);
  // The targets and what they wait for, still queued.
  std::vector<uint64_t> need;
  std::set<uint64_t> seen;
  while (!targets.empty()) {
    const uint64_t id = targets.back();
    targets.pop_back();
    const auto it = ops().find(id);
    if (it == ops().end() || !seen.insert(id).second) continue;
    need.push_back(id);
    for (uint64_t d : it->second.deps) targets.push_back(d);
  }
  if (need.empty()) return;
  // Kahn's order over them: an operation is ready once what it waits for has run.
  std::map<uint64_t, std::pair<int, std::vector<uint64_t>>> graph;  // id -> (waits left, its waiters)
  for (uint64_t id : need) graph[id];
  for (uint64_t id : need)
    for (uint64_t d : ops().at(id).deps)
      if (graph.count(d)) {
        graph[id].first++;
        graph[d].second.push_back(id);
      }
  std::set<uint64_t> ready;
  for (const auto& [id, g] : graph)
    if (g.first == 0) ready.insert(id);
  while (!ready.empty()) {
    auto pick = ready.begin();
    if (g_stream_order == kNewest) {
      pick = std::prev(ready.end());
    } else if (g_stream_order == kRandom) {
      std::advance(pick, static_cast<std::ptrdiff_t>(next_random() % ready.size()));
    }
    const uint64_t id = *pick;
    ready.erase(pick);
    auto it = ops().find(id);
    if (it != ops().end() && it->second.running) {
      g_op_done.wait(lock, [&] { return !ops().count(id); });  // another thread runs it
    } else if (it != ops().end()) {
      it->second.running = true;
      const std::function<void()> work = std::move(it->second.run);
      lock.unlock();
      if (g_trace) std::fprintf(stderr, "gpu-emu: runs %llu\n", static_cast<unsigned long long>(id));
      if (work) run_work(work);
      lock.lock();
      ops().erase(id);
      g_op_done.notify_all();
    }
    for (uint64_t w : graph[id].second)
      if (--graph[w].first == 0) ready.insert(w);
  }
}
// Runs a stream's queued work (and what it waits for).
void complete_stream(cudaStream_t s) {
  std::vector<uint64_t> targets;
  {
    const std::lock_guard<std::mutex> lock(g_queue_mutex);
    targets = front_of(s);
  }
  complete(std::move(targets));
}
// Runs every operation queued on device d (and what they wait for); d -1:
// on every device.
void complete_device(int d) {
  std::vector<uint64_t> targets;
  {
    const std::lock_guard<std::mutex> lock(g_queue_mutex);
    for (const auto& [id, op] : ops())
      if (d < 0 || op.devices >> d & 1u) targets.push_back(id);
  }
  complete(std::move(targets));
}
// A wait's status: the first failure of queued work since the last, if any.
cudaError_t waited() {
  const cudaError_t e = static_cast<cudaError_t>(g_async_error.exchange(cudaSuccess));
  if (e != cudaSuccess) set_error(e);
  return e;
}

// The entry points' call counters (api_counter), in first-call order; a
// deque, so a counter stays where it is as others are added. Never
// destroyed: static destructors (the module's caches) still call entry
// points, which count the call, after this file's would have run.
std::deque<std::pair<const char*, std::atomic<unsigned long long>>>& api_table() {
  static auto* const v = new std::deque<std::pair<const char*, std::atomic<unsigned long long>>>;
  return *v;
}
std::mutex g_api_mutex;
std::atomic<unsigned long long> g_copies{0};  // copies and fills (copy_count)

struct Stat {
  unsigned long long launches = 0, blocks = 0, threads = 0;
  unsigned block_max = 0;  // the most threads one block of it had
};
std::map<std::string, Stat>* g_stats = nullptr;  // EMU_STATS
std::string g_stats_path;                         // EMU_STATS=<file>: there instead of stderr

void print_stats() {
  FILE* f = g_stats_path.empty() ? stderr : std::fopen(g_stats_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "gpu-emu: cannot write the statistics to %s\n", g_stats_path.c_str());
    return;
  }
  std::fprintf(f,
               "gpu-emu: %zu kernels launched (launches, blocks, threads, most threads a block; kernel, launching "
               "function):\n",
               g_stats->size());
  for (const auto& [k, s] : *g_stats)
    std::fprintf(f, "%10llu %10llu %12llu %6u  %s\n", s.launches, s.blocks, s.threads, s.block_max, k.c_str());
  if (f != stderr) std::fclose(f);
}

const bool g_env = [] {
  const char* o = std::getenv("EMU_ORDER");
  g_reverse = o && std::strcmp(o, "reverse") == 0;
  g_warp_ahead = env_flag("EMU_WARP_AHEAD");
  if (const char* m = std::getenv("EMU_MAX_BLOCKS")) g_max_blocks = static_cast<unsigned>(std::strtoul(m, nullptr, 10));
  if (const char* d = std::getenv("EMU_DEVICES")) g_devices = std::max(1, std::min(8, std::atoi(d)));
  if (const char* m = std::getenv("EMU_DEVICE_MEMORY")) g_capacity = std::strtoull(m, nullptr, 10);
  const char* streams = std::getenv("EMU_STREAMS");
  g_eager = streams && std::strcmp(streams, "eager") == 0;
  g_trace = env_flag("EMU_TRACE");
  g_stream_order = g_reverse ? kNewest : kOldest;
  if (const char* seed = std::getenv("EMU_STREAM_SEED"); seed && *seed) {
    g_stream_order = kRandom;
    g_rng = std::strtoull(seed, nullptr, 10);
  }
  g_skip_kernels = env_flag("EMU_SKIP_KERNELS");
  if (env_flag("EMU_STATS")) {
    const char* st = std::getenv("EMU_STATS");
    if (std::strcmp(st, "1") != 0) g_stats_path = st;
    g_stats = new std::map<std::string, Stat>;
    std::atexit(print_stats);
  }
  return true;
}();

void fiber_entry();

#if EMU_FAST_SWITCH
// Switches stacks: saves the callee-saved registers, MXCSR and the x87
// control word on the current stack, stores its pointer in *from, and resumes
// the stack `to` saved the same way (no system call, unlike swapcontext).
extern "C" void emu_switch_stacks(void** from, void* to);
asm(R"(
  .text
  .globl emu_switch_stacks
  .type emu_switch_stacks,@function
emu_switch_stacks:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch_stacks,.-emu_switch_stacks
)");

// A fresh stack whose first switch "returns" into fiber_entry, as if called.
void prepare(Fiber& f) {
  uint64_t* sp = reinterpret_cast<uint64_t*>(static_cast<char*>(f.stack) + kStack);  // 16-byte aligned
  *--sp = 0;                                         // fiber_entry's return address (never used)
  *--sp = reinterpret_cast<uint64_t>(&fiber_entry);  // where the switch returns to
  for (int r = 0; r < 6; r++) *--sp = 0;             // rbp rbx r12 r13 r14 r15
  uint32_t csr[2];
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
  *--sp = (static_cast<uint64_t>(csr[1] & 0xffff) << 32) | csr[0];
  f.sp = sp;
}
void to_fiber(Fiber& f) { emu_switch_stacks(&g_main_sp, f.sp); }
void to_scheduler(Fiber& f) { emu_switch_stacks(&f.sp, g_main_sp); }
#else
void prepare(Fiber& f) {
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStack;
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, fiber_entry, 0);
}
void to_fiber(Fiber& f) { swapcontext(&g_main, &f.ctx); }
void to_scheduler(Fiber& f) { swapcontext(&f.ctx, &g_main); }
#endif

void fiber_entry() {
  (*g_body)();
  fibers()[g_current].state = Done;
  to_scheduler(fibers()[g_current]);
}

void set_thread_index(unsigned i) {
  threadIdx.x = i % blockDim.x;
  threadIdx.y = (i / blockDim.x) % blockDim.y;
  threadIdx.z = i / (blockDim.x * blockDim.y);
}

// Releases the warp barriers every lane of whose mask has reached (with the
// same mask): every such warp, or with EMU_WARP_AHEAD the first in the
// thread order (the last with EMU_ORDER=reverse); false, with a message, when
// a warp can never go on.
bool release_warps(unsigned n, bool* released) {
  *released = false;
  bool waiting = false;
  const unsigned warps = (n + 31) / 32;
  for (unsigned k = 0; k < warps; k++) {
    if (g_warp_ahead && *released) return true;
    const unsigned w = 32 * (g_reverse ? warps - 1 - k : k);
    const unsigned end = w + 32 < n ? w + 32 : n;
    for (unsigned i = w; i < end; i++) {
      const Fiber& f = fibers()[i];
      if (f.state != AtWarpBarrier) continue;
      bool all = true;
      for (unsigned j = w; j < end; j++) {
        if (!(f.mask >> (j - w) & 1u)) continue;
        const Fiber& g = fibers()[j];
        if (g.state == AtWarpBarrier && g.mask == f.mask) continue;
        all = false;
        if (g.state == Done || g.state == AtBarrier || g.state == AtWarpBarrier) {
          std::fprintf(stderr,
                       "gpu-emu: block (%u,%u,%u): thread %u waits for its warp (mask 0x%08x) at %s:%d, but thread %u "
                       "%s\n",
                       blockIdx.x, blockIdx.y, blockIdx.z, i, f.mask, f.file, f.line, j,
                       g.state == Done        ? "has returned"
                       : g.state == AtBarrier ? "waits at __syncthreads"
                                              : "waits with another mask");
          return false;
        }
      }
      if (all) {
        for (unsigned j = w; j < end; j++)
          if (f.mask >> (j - w) & 1u) fibers()[j].state = Ready;
        *released = true;
      } else {
        waiting = true;
      }
    }
  }
  (void)waiting;
  return true;
}

// Runs the n threads of the current block; false (with a message) when they
// cannot end correctly.
bool run_block(unsigned n) {
  std::memset(dynamic_shared(), 0xff, g_dynamic_bytes);
  for (unsigned i = 0; i < n; i++) {
    Fiber& f = fibers()[i];
    prepare(f);
    f.state = Ready;
    f.open.clear(), f.landed.clear(), f.groups.clear();  // copies never waited for and synchronised are dropped
  }
  for (;;) {
    for (unsigned j = 0; j < n; j++) {
      const unsigned i = g_reverse ? n - 1 - j : j;
      if (fibers()[i].state != Ready) continue;
      g_current = i;
      set_thread_index(i);
      to_fiber(fibers()[i]);
    }
    // Every thread now waits at a barrier or has returned. Warps first.
    bool released = false;
    if (!release_warps(n, &released)) return false;
    if (released) continue;
    unsigned waiting = 0, done = 0, first = 0;
    for (unsigned i = 0; i < n; i++) {
      if (fibers()[i].state == AtBarrier && waiting++ == 0) first = i;
      if (fibers()[i].state == Done) done++;
    }
    if (waiting == 0) return true;
    const Fiber& a = fibers()[first];
    if (done > 0) {
      std::fprintf(stderr,
                   "gpu-emu: block (%u,%u,%u): %u threads wait at __syncthreads (%s:%d) after %u of the block's "
                   "threads returned\n",
                   blockIdx.x, blockIdx.y, blockIdx.z, waiting, a.file, a.line, done);
      return false;
    }
    for (unsigned i = 0; i < n; i++) {
      const Fiber& b = fibers()[i];
      if (b.line != a.line || std::strcmp(b.file, a.file) != 0) {
        std::fprintf(stderr,
                     "gpu-emu: block (%u,%u,%u): divergent __syncthreads: thread %u waits at %s:%d, thread %u at "
                     "%s:%d\n",
                     blockIdx.x, blockIdx.y, blockIdx.z, first, a.file, a.line, i, b.file, b.line);
        return false;
      }
    }
    g_barrier_count = 0;
    for (unsigned i = 0; i < n; i++) {
      for (const Fiber::Copy& c : fibers()[i].landed) std::memcpy(c.dst, c.src, c.bytes);  // cp.async retired by a wait
      fibers()[i].landed.clear();
      g_barrier_count += fibers()[i].slot != 0;
      fibers()[i].state = Ready;
    }
  }
}

}  // namespace

bool set_warp_ahead(bool on) {
  const bool was = g_warp_ahead;
  g_warp_ahead = on;
  return was;
}
bool order_reversed() { return g_reverse; }
// Whether a wait may run other queued work than it needs (a random stream
// order does); off: the stream order becomes the block order's (oldest or
// newest first). Returns the previous setting.
bool set_stream_extras(bool on) {
  const std::lock_guard<std::mutex> lock(g_queue_mutex);
  const bool was = g_stream_order == kRandom;
  g_stream_order = on ? kRandom : g_reverse ? kNewest : kOldest;
  return was;
}

int syncthreads_count(int predicate, const char* file, int line) {
  fibers()[g_current].slot = predicate != 0;
  syncthreads(file, line);
  return g_barrier_count;  // read before any thread can reach the next barrier
}

void syncthreads(const char* file, int line) {
  Fiber& f = fibers()[g_current];
  f.state = AtBarrier;
  f.file = file;
  f.line = line;
  to_scheduler(f);
}

void fault(cudaError_t e, const char* what, const void* address, const char* file, int line) {
  std::fprintf(stderr, "gpu-emu: block (%u,%u,%u) thread %u: %s (%p) at %s:%d\n", blockIdx.x, blockIdx.y, blockIdx.z,
               g_current, what, address, file, line);
  set_error(e);
}
void async_copy(void* dst, const void* src, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  if (a % bytes != 0)
    fault(cudaErrorMisalignedAddress, "cp.async: an address not aligned to its size", dst, __FILE__, __LINE__);
  if (g_warp_ahead) {  // the earliest a copy may land: a buffer overwritten while another warp reads it shows
    std::memcpy(dst, src, bytes);
    return;
  }
  fibers()[g_current].open.push_back({dst, src, bytes});
}
void async_commit() {
  Fiber& f = fibers()[g_current];
  f.groups.push_back(std::move(f.open));
  f.open.clear();
}
// The retired groups' copies land when the thread's next __syncthreads releases (CUDA
// makes them visible to the block's other threads only after one): so a
// read before the wait, or after it with no __syncthreads, sees the old
// bytes. (A thread reading its own copies right after the wait would too;
// no kernel of ours does.)
void async_wait(int pending) {
  Fiber& f = fibers()[g_current];
  const size_t n = f.groups.size() > static_cast<size_t>(pending) ? f.groups.size() - pending : 0;
  for (size_t k = 0; k < n; k++) f.landed.insert(f.landed.end(), f.groups[k].begin(), f.groups[k].end());
  f.groups.erase(f.groups.begin(), f.groups.begin() + static_cast<std::ptrdiff_t>(n));
}

void* dynamic_shared() {
  // 16-byte aligned, as CUDA's (vector types may live there).
  const uintptr_t p = reinterpret_cast<uintptr_t>(shared_buffer().data());
  return reinterpret_cast<void*>((p + 15) / 16 * 16);
}

unsigned warp_exchange(unsigned mask, uint64_t value, const char* file, int line, uint64_t* lanes) {
  Fiber& f = fibers()[g_current];
  const unsigned warp = g_current / 32 * 32;
  const unsigned present = blockDim.x * blockDim.y * blockDim.z - warp;  // lanes the warp has
  if (present < 32) mask &= (1u << present) - 1;
  f.slot = value;
  f.mask = mask;
  f.file = file;
  f.line = line;
  f.state = AtWarpBarrier;
  to_scheduler(f);
  for (unsigned l = 0; l < 32; l++) lanes[l] = (mask >> l & 1u) ? fibers()[warp + l].slot : 0;
  // A second barrier: no lane may offer its next value before every lane has read this one.
  f.mask = mask;
  f.state = AtWarpBarrier;
  to_scheduler(f);
  return g_current - warp;
}

bool launch_checked(dim3& grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const char* kernel,
                    const char* caller, const void* func) {
  if (!alive(stream, kernel)) return false;
  if (device_of(stream) != t_device) {
    std::fprintf(stderr, "gpu-emu: %s (from %s) launched on a stream of device %d while device %d is current\n", kernel,
                 caller, device_of(stream), t_device);
    set_error(cudaErrorInvalidResourceHandle);
    return false;
  }
  const unsigned long long n = 1ull * block.x * block.y * block.z;
  if (n == 0 || n > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu ||
      grid.y > 65535 || grid.z > 65535) {
    std::fprintf(stderr, "gpu-emu: invalid launch configuration: grid (%u,%u,%u), block (%u,%u,%u)\n", grid.x, grid.y,
                 grid.z, block.x, block.y, block.z);
    set_error(cudaErrorInvalidConfiguration);
    return false;
  }
  if (shared_bytes > kMaxDynamicShared) {
    std::fprintf(stderr, "gpu-emu: %zu bytes of dynamic shared memory asked for (at most %zu)\n", shared_bytes,
                 kMaxDynamicShared);
    set_error(cudaErrorInvalidValue);
    return false;
  }
  if (shared_bytes > kDefaultDynamicShared) {
    size_t allowed = 0;
    if (func) {
      const std::lock_guard<std::mutex> lock(g_opt_in_mutex);
      const auto it = opt_in().find(func);
      if (it != opt_in().end()) allowed = it->second;
    }
    if (shared_bytes > allowed) {
      std::fprintf(stderr,
                   "gpu-emu: %s (from %s) asks for %zu bytes of dynamic shared memory, above 48 KiB, but its opt-in "
                   "(cudaFuncSetAttribute, cudaFuncAttributeMaxDynamicSharedMemorySize) allows %zu\n",
                   kernel, caller, shared_bytes, allowed);
      set_error(cudaErrorInvalidValue);
      return false;
    }
  }
  if (g_max_blocks > 0 && grid.x > g_max_blocks) grid.x = g_max_blocks;
  if (t_in_kernel) {
    std::fprintf(stderr, "gpu-emu: a launch from inside a kernel is not emulated\n");
    set_error(cudaErrorNotSupported);
    return false;
  }
  if (g_stats) {
    const std::lock_guard<std::mutex> lock(g_launch);
    Stat& st = (*g_stats)[std::string(kernel) + "  (" + caller + ")"];
    st.launches++;
    st.blocks += 1ull * grid.x * grid.y * grid.z;
    st.threads += 1ull * grid.x * grid.y * grid.z * n;
    st.block_max = std::max(st.block_max, static_cast<unsigned>(n));
  }
  g_launches++;
  if (!is_default(stream)) g_stream_launches++;
  return !g_skip_kernels;
}

void launch_queue(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, std::function<void()> body) {
  const unsigned long long n = 1ull * block.x * block.y * block.z;
  enqueue(stream, [grid, block, shared_bytes, n, body = std::move(body)] {
    // The grid's blocks one after another, each block's threads as fibers.
    const std::lock_guard<std::mutex> lock(g_launch);
    while (fibers().size() < n) {
      Fiber f;
      f.stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (f.stack == MAP_FAILED) {
        set_error(cudaErrorMemoryAllocation);
        return;
      }
      fibers().push_back(f);
    }
    g_dynamic_bytes = shared_bytes;
    if (shared_buffer().size() < shared_bytes + 16) shared_buffer().resize(shared_bytes + 16);
    g_body = &body;
    t_in_kernel = true;
    gridDim = grid;
    blockDim = block;
    bool ok = true;
    for (unsigned z = 0; ok && z < grid.z; z++)
      for (unsigned y = 0; ok && y < grid.y; y++)
        for (unsigned x = 0; ok && x < grid.x; x++) {
          blockIdx = g_reverse ? uint3{grid.x - 1 - x, grid.y - 1 - y, grid.z - 1 - z} : uint3{x, y, z};
          ok = run_block(static_cast<unsigned>(n));
        }
    t_in_kernel = false;
    if (!ok) set_error(cudaErrorLaunchFailure);
  });
}

std::atomic<unsigned long long>* api_counter(const char* name) {
  const std::lock_guard<std::mutex> lock(g_api_mutex);
  return &api_table().emplace_back(std::piecewise_construct, std::forward_as_tuple(name), std::forward_as_tuple(0)).second;
}

void set_skip_kernels(bool skip) { g_skip_kernels = skip; }
bool skipping_kernels() { return g_skip_kernels; }
unsigned long long launch_count() { return g_launches; }
unsigned long long stream_launch_count() { return g_stream_launches; }
unsigned long long copy_count() { return g_copies; }
unsigned long long work_run() { return g_ran; }
size_t pinned_bytes() {
  const std::lock_guard<std::mutex> lock(g_pinned_mutex);
  return g_pinned;
}
void library_work(const void* const* streams, size_t count, std::function<void()> work) {
  std::vector<cudaStream_t> on;
  for (size_t i = 0; i < count; i++) {
    on.push_back(static_cast<cudaStream_t>(const_cast<void*>(streams[i])));
    if (!alive(on.back(), "a library call")) return;
    g_launches++;
    if (!is_default(on.back())) g_stream_launches++;
  }
  if (!g_skip_kernels) enqueue_on(on, std::move(work));
}
void set_stream_order_seed(uint64_t seed) {
  const std::lock_guard<std::mutex> lock(g_queue_mutex);
  g_stream_order = kRandom;
  g_rng = seed;
}
void finish_device(int device) { complete_device(device); }
size_t queued_work() {
  const std::lock_guard<std::mutex> lock(g_queue_mutex);
  return ops().size();
}
std::vector<std::pair<std::string, unsigned long long>> api_counts() {
  const std::lock_guard<std::mutex> lock(g_api_mutex);
  std::vector<std::pair<std::string, unsigned long long>> r;
  for (const auto& [name, calls] : api_table()) r.emplace_back(name, calls.load());
  return r;
}

}  // namespace emu

// --- the CUDA runtime, synchronous -----------------------------------------
namespace {
using emu::FakeObject;
using emu::t_device;
struct Block {
  size_t bytes;
  int device;
};
std::mutex g_memory;
std::map<const char*, Block>& blocks() {  // cudaMalloc's blocks by start
  static auto* const v = new std::map<const char*, Block>;
  return *v;
}
size_t g_used[8] = {};                   // bytes cudaMalloc holds, by device

// Where a range of n bytes lies: inside one device block, clear of every
// device block (host memory), or across the two (a bug either way).
enum Where { kHost, kDevice, kStraddles };
Where where(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  const std::lock_guard<std::mutex> lock(g_memory);
  auto it = blocks().upper_bound(c);
  if (it != blocks().begin()) {
    const auto& [start, b] = *std::prev(it);
    if (c < start + b.bytes) return c + n <= start + b.bytes ? kDevice : kStraddles;
  }
  return it != blocks().end() && it->first < c + n ? kStraddles : kHost;
}
void bad_range(const char* call, const char* which, const char* want) {
  std::fprintf(stderr, "gpu-emu: %s: %s is not %s\n", call, which, want);
  emu::set_error(cudaErrorInvalidValue);
}
// A copy's kind against where its ends are, d and s (cudaMemcpyDefault: anything).
bool copy_ok(Where d, Where s, cudaMemcpyKind k, const char* call) {
  if (k == cudaMemcpyDefault) return true;
  const bool dst_device = k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice;
  const bool src_device = k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice;
  if (d != (dst_device ? kDevice : kHost)) {
    bad_range(call, "the destination", dst_device ? "device memory (the copy's kind says so)" : "host memory (the copy's kind says so)");
    return false;
  }
  if (s != (src_device ? kDevice : kHost)) {
    bad_range(call, "the source", src_device ? "device memory (the copy's kind says so)" : "host memory (the copy's kind says so)");
    return false;
  }
  return true;
}
// A copy, checked, queued on s as CUDA runs it: from pageable host memory
// its bytes are taken now; to pageable host memory (or between host ranges)
// it returns when done; device and pinned ends are read and written when
// the stream's work runs. `sync`: cudaMemcpy's rules instead (it waits for
// the stream first, and for itself unless it writes device memory from
// pageable memory or from the device).
cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s, bool sync, const char* call) {
  if (!emu::alive(s, call)) return cudaErrorInvalidResourceHandle;
  if (!n) return emu::g_copies++, cudaSuccess;
  const Where dst_at = where(dst, n), src_at = where(src, n);
  if (!copy_ok(dst_at, src_at, k, call)) return emu::set_error(cudaErrorInvalidValue), cudaErrorInvalidValue;
  emu::g_copies++;
  const bool dst_device = dst_at == kDevice, src_device = src_at == kDevice;
  const bool src_staged = !src_device && !emu::pinned(src, n);
  if (sync && src_staged && dst_device) emu::complete_stream(s);  // cudaMemcpy from pageable memory waits first
  if (src_staged) {  // pageable: copied to a staging buffer before the call returns
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                                static_cast<const unsigned char*>(src) + n);
    emu::enqueue(s, [dst, n, staged] { std::memcpy(dst, staged->data(), n); });
  } else {
    emu::enqueue(s, [dst, src, n] { std::memmove(dst, src, n); });
  }
  const bool returns_done = sync ? !(dst_device && (src_staged || src_device)) : !dst_device && !emu::pinned(dst, n);
  if (returns_done) {
    emu::complete_stream(s);
    return emu::waited();
  }
  return cudaSuccess;
}
cudaError_t fill(void* p, int v, size_t n, cudaStream_t s, const char* call) {
  if (!emu::alive(s, call)) return cudaErrorInvalidResourceHandle;
  if (n && where(p, n) != kDevice) return bad_range(call, "the memory set", "device memory"), cudaErrorInvalidValue;
  emu::g_copies++;
  if (n) emu::enqueue(s, [p, v, n] { std::memset(p, v, n); });
  return cudaSuccess;
}
cudaStream_t new_stream(bool blocking) {
  auto* s = new emu::StreamObject;
  s->kind = 1;
  s->device = t_device;
  s->blocking = blocking;
  if (blocking) {
    const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
    emu::blocking()[t_device].push_back(s);
  }
  return reinterpret_cast<cudaStream_t>(static_cast<FakeObject*>(s));
}
emu::StreamObject* stream_object(cudaStream_t s) {
  return static_cast<emu::StreamObject*>(reinterpret_cast<FakeObject*>(s));
}
cudaEvent_t new_event() {
  auto* e = new emu::EventObject;
  e->kind = 2;
  e->device = t_device;
  return reinterpret_cast<cudaEvent_t>(static_cast<FakeObject*>(e));
}
emu::EventObject* event_object(cudaEvent_t e) {
  return static_cast<emu::EventObject*>(reinterpret_cast<FakeObject*>(e));
}
}  // namespace

// EMU_EXACT_MEMORY's tensors (emu_register.cpp): device memory too.
void emu::device_range(const void* p, size_t bytes, int device) {
  const std::lock_guard<std::mutex> lock(g_memory);
  if (bytes)
    blocks()[static_cast<const char*>(p)] = Block{bytes, device};
  else
    blocks().erase(static_cast<const char*>(p));
}

extern "C" {

// The calling thread's last error, else a failure of queued work not yet reported.
cudaError_t CUDARTAPI cudaGetLastError(void) {
  EMU_API_CALL();
  const cudaError_t e = emu::g_last;
  emu::g_last = cudaSuccess;
  return e != cudaSuccess ? e : static_cast<cudaError_t>(emu::g_async_error.exchange(cudaSuccess));
}
cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  EMU_API_CALL();
  return emu::g_last != cudaSuccess ? emu::g_last : static_cast<cudaError_t>(emu::g_async_error.load());
}
const char* CUDARTAPI cudaGetErrorName(cudaError_t e) {
  EMU_API_CALL();
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorHostMemoryAlreadyRegistered:
      return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered:
      return "cudaErrorHostMemoryNotRegistered";
    default:
      return "cudaError (gpu-emu)";
  }
}
const char* CUDARTAPI cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }

cudaError_t CUDARTAPI cudaGetDeviceCount(int* n) {
  EMU_API_CALL();
  *n = emu::g_devices;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaSetDevice(int d) {
  EMU_API_CALL();
  if (d < 0 || d >= emu::g_devices) return emu::set_error(cudaErrorInvalidDevice), cudaErrorInvalidDevice;
  t_device = d;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetDevice(int* d) {
  EMU_API_CALL();
  *d = t_device;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  EMU_API_CALL();
  emu::complete_device(t_device);
  return emu::waited();
}

// The opt-in above 48 KiB of dynamic shared memory that launch_body checks;
// other attributes are accepted and ignored.
cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  EMU_API_CALL();
  if (!func) return cudaErrorInvalidDeviceFunction;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<size_t>(value) > emu::kMaxDynamicShared) return cudaErrorInvalidValue;
    const std::lock_guard<std::mutex> lock(emu::g_opt_in_mutex);
    emu::opt_in()[func] = static_cast<size_t>(value);
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMalloc(void** p, size_t bytes) {
  EMU_API_CALL();
  *p = nullptr;
  {
    // Each device holds EMU_DEVICE_MEMORY bytes (default 80 GiB, an H100's):
    // past that cudaMalloc fails as a full GPU's does (not sticky).
    const std::lock_guard<std::mutex> lock(g_memory);
    if (bytes > emu::g_capacity || g_used[t_device] > emu::g_capacity - bytes) return cudaErrorMemoryAllocation;
    g_used[t_device] += bytes;
  }
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  const std::lock_guard<std::mutex> lock(g_memory);
  if (!*p) {
    g_used[t_device] -= bytes;
    return cudaErrorMemoryAllocation;
  }
  blocks()[static_cast<const char*>(*p)] = Block{bytes, t_device};
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaFree(void* p) {
  EMU_API_CALL();
  if (!p) return cudaSuccess;
  {
    const std::lock_guard<std::mutex> lock(g_memory);
    if (!blocks().count(static_cast<const char*>(p))) return emu::set_error(cudaErrorInvalidValue), cudaErrorInvalidValue;
  }
  // cudaFree waits for the device, as CUDA's does; here for every device,
  // since work queued on another device's stream may use the block (a copy
  // or a peer's kernel).
  emu::complete_device(-1);
  {
    const std::lock_guard<std::mutex> lock(g_memory);
    const auto it = blocks().find(static_cast<const char*>(p));
    if (it == blocks().end()) return emu::set_error(cudaErrorInvalidValue), cudaErrorInvalidValue;
    g_used[it->second.device] -= it->second.bytes;
    blocks().erase(it);
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  EMU_API_CALL();
  std::memset(a, 0, sizeof(*a));
  const char* c = static_cast<const char*>(p);
  const std::lock_guard<std::mutex> lock(g_memory);
  auto it = blocks().upper_bound(c);
  if (it != blocks().begin() && c < std::prev(it)->first + std::prev(it)->second.bytes) {
    a->type = cudaMemoryTypeDevice;
    a->device = std::prev(it)->second.device;
    a->devicePointer = const_cast<void*>(p);
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaHostRegister(void* p, size_t bytes, unsigned int) {
  EMU_API_CALL();
  const std::lock_guard<std::mutex> lock(emu::g_pinned_mutex);
  if (!p || !bytes || !emu::g_pinned_ranges->emplace(p, bytes).second)
    return emu::set_error(cudaErrorHostMemoryAlreadyRegistered), cudaErrorHostMemoryAlreadyRegistered;
  emu::g_pinned += bytes;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaHostUnregister(void* p) {
  EMU_API_CALL();
  const std::lock_guard<std::mutex> lock(emu::g_pinned_mutex);
  const auto it = emu::g_pinned_ranges->find(p);
  if (it == emu::g_pinned_ranges->end())
    return emu::set_error(cudaErrorHostMemoryNotRegistered), cudaErrorHostMemoryNotRegistered;
  emu::g_pinned -= it->second;
  emu::g_pinned_ranges->erase(it);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind k) {
  EMU_API_CALL();
  return copy(dst, src, n, k, cudaStreamLegacy, true, __func__);
}
cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind k, cudaStream_t s) {
  EMU_API_CALL();
  return copy(dst, src, n, k, s, false, __func__);
}
cudaError_t CUDARTAPI cudaMemset(void* p, int v, size_t n) {
  EMU_API_CALL();
  return fill(p, v, n, cudaStreamLegacy, __func__);
}
cudaError_t CUDARTAPI cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  EMU_API_CALL();
  return fill(p, v, n, s, __func__);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  EMU_API_CALL();
  *s = new_stream(!(flags & cudaStreamNonBlocking));
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* s) {
  EMU_API_CALL();
  *s = new_stream(true);
  return cudaSuccess;
}
// Its queued work still runs (what waits for it keeps its ids).
cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) {
  EMU_API_CALL();
  if (emu::is_default(s)) return emu::set_error(cudaErrorInvalidResourceHandle), cudaErrorInvalidResourceHandle;
  if (!emu::alive(s, __func__)) return cudaErrorInvalidResourceHandle;
  emu::StreamObject* o = stream_object(s);
  {
    const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
    auto& b = emu::blocking()[o->device];
    b.erase(std::remove(b.begin(), b.end(), o), b.end());
  }
  o->destroyed = true;  // kept: its queued work still runs, and a later use is caught
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t s) {
  EMU_API_CALL();
  if (!emu::alive(s, __func__)) return cudaErrorInvalidResourceHandle;
  emu::complete_stream(s);
  return emu::waited();
}
cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t s) {
  EMU_API_CALL();
  if (!emu::alive(s, __func__)) return cudaErrorInvalidResourceHandle;
  const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
  return emu::front_of(s).empty() ? cudaSuccess : cudaErrorNotReady;
}
// The stream's later work waits for the work the event's last record
// captured (nothing, if never recorded).
cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  EMU_API_CALL();
  if (!emu::alive(s, __func__) || !emu::usable(e, __func__)) return cudaErrorInvalidResourceHandle;
  uint64_t target = 0;
  {
    const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
    target = event_object(e)->target;
    if (!emu::queued(target)) return cudaSuccess;
  }
  emu::enqueue(s, nullptr, target);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  EMU_API_CALL();
  *e = new_event();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* e) {
  EMU_API_CALL();
  *e = new_event();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  EMU_API_CALL();
  if (!emu::usable(e, __func__)) return cudaErrorInvalidResourceHandle;
  event_object(e)->destroyed = true;  // kept: a later use is caught
  return cudaSuccess;
}
// The event captures the stream's work queued so far; the event and the
// stream must be one device's, as on a GPU.
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  EMU_API_CALL();
  if (!emu::alive(s, __func__) || !emu::usable(e, __func__)) return cudaErrorInvalidResourceHandle;
  if (event_object(e)->device != emu::device_of(s)) {
    std::fprintf(stderr, "gpu-emu: cudaEventRecord of an event of device %d on a stream of device %d\n",
                 event_object(e)->device, emu::device_of(s));
    return emu::set_error(cudaErrorInvalidResourceHandle), cudaErrorInvalidResourceHandle;
  }
  {
    const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
    const std::vector<uint64_t> front = emu::front_of(s);
    if (front.size() <= 1) {
      event_object(e)->target = front.empty() ? 0 : front[0];
      return cudaSuccess;
    }
  }
  emu::enqueue(s, nullptr);  // the legacy stream after blocking streams: one operation after them all
  const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
  event_object(e)->target = emu::tail_of(s);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) {
  EMU_API_CALL();
  if (!emu::usable(e, __func__)) return cudaErrorInvalidResourceHandle;
  const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
  return emu::queued(event_object(e)->target) ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
  EMU_API_CALL();
  if (!emu::usable(e, __func__)) return cudaErrorInvalidResourceHandle;
  uint64_t target = 0;
  {
    const std::lock_guard<std::mutex> lock(emu::g_queue_mutex);
    target = event_object(e)->target;
  }
  emu::complete({target});
  return emu::waited();
}

}  // extern "C"
