// GPU_REF under CPU emulation (design: CMakeLists.txt here): the block
// scheduler behind emu::launch (cuda_emu.hpp) and a synchronous stand-in for
// the part of the CUDA runtime that the module's host code uses (the
// libraries': emu_cublas.cpp, emu_cudnn.cpp, emu_cudnn_graph.cpp,
// emu_nccl.cpp). "Device" memory is host
// memory; every copy, memset and kernel runs at once, on the calling thread,
// so streams and events are always complete. EMU_DEVICES devices.
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
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
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
std::map<const void*, size_t> g_opt_in;  // kernel -> its cudaFuncAttributeMaxDynamicSharedMemorySize

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
std::vector<Fiber> g_fibers;
#if EMU_FAST_SWITCH
void* g_main_sp = nullptr;
#else
ucontext_t g_main;
#endif
unsigned g_current = 0;
void (*g_body)(void*) = nullptr;
void* g_arg = nullptr;
bool g_in_kernel = false;
int g_barrier_count = 0;  // threads with a nonzero predicate at the barrier last released
std::vector<unsigned char> g_dynamic_shared;
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
  int kind;
  int device;
};
int device_of(cudaStream_t s) {
  return s && s != cudaStreamLegacy && s != cudaStreamPerThread ? reinterpret_cast<FakeObject*>(s)->device : t_device;
}
unsigned long long g_launches = 0;  // every launch that passed its checks (launch_count)
unsigned long long g_stream_launches = 0;  // those on a stream other than the default one
// cudaHostRegister's ranges and their bytes (never destroyed: a tensor may
// be unpinned by a static destructor after this file's would have run).
std::mutex g_pinned_mutex;
size_t g_pinned = 0;
std::map<void*, size_t>* g_pinned_ranges = new std::map<void*, size_t>;

// The entry points' call counters (api_counter), in first-call order; a
// deque, so a counter stays where it is as others are added.
std::deque<std::pair<const char*, std::atomic<unsigned long long>>> g_api;
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
  const char* wa = std::getenv("EMU_WARP_AHEAD");
  g_warp_ahead = wa && *wa && std::strcmp(wa, "0") != 0;
  if (const char* m = std::getenv("EMU_MAX_BLOCKS")) g_max_blocks = static_cast<unsigned>(std::strtoul(m, nullptr, 10));
  if (const char* d = std::getenv("EMU_DEVICES")) g_devices = std::max(1, std::min(8, std::atoi(d)));
  if (const char* m = std::getenv("EMU_DEVICE_MEMORY")) g_capacity = std::strtoull(m, nullptr, 10);
  const char* sk = std::getenv("EMU_SKIP_KERNELS");
  g_skip_kernels = sk && *sk && std::strcmp(sk, "0") != 0;
  const char* st = std::getenv("EMU_STATS");
  if (st && *st && std::strcmp(st, "0") != 0) {
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
  g_body(g_arg);
  g_fibers[g_current].state = Done;
  to_scheduler(g_fibers[g_current]);
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
      const Fiber& f = g_fibers[i];
      if (f.state != AtWarpBarrier) continue;
      bool all = true;
      for (unsigned j = w; j < end; j++) {
        if (!(f.mask >> (j - w) & 1u)) continue;
        const Fiber& g = g_fibers[j];
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
          if (f.mask >> (j - w) & 1u) g_fibers[j].state = Ready;
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
    Fiber& f = g_fibers[i];
    prepare(f);
    f.state = Ready;
    f.open.clear(), f.landed.clear(), f.groups.clear();  // copies never waited for and synchronised are dropped
  }
  for (;;) {
    for (unsigned j = 0; j < n; j++) {
      const unsigned i = g_reverse ? n - 1 - j : j;
      if (g_fibers[i].state != Ready) continue;
      g_current = i;
      set_thread_index(i);
      to_fiber(g_fibers[i]);
    }
    // Every thread now waits at a barrier or has returned. Warps first.
    bool released = false;
    if (!release_warps(n, &released)) return false;
    if (released) continue;
    unsigned waiting = 0, done = 0, first = 0;
    for (unsigned i = 0; i < n; i++) {
      if (g_fibers[i].state == AtBarrier && waiting++ == 0) first = i;
      if (g_fibers[i].state == Done) done++;
    }
    if (waiting == 0) return true;
    const Fiber& a = g_fibers[first];
    if (done > 0) {
      std::fprintf(stderr,
                   "gpu-emu: block (%u,%u,%u): %u threads wait at __syncthreads (%s:%d) after %u of the block's "
                   "threads returned\n",
                   blockIdx.x, blockIdx.y, blockIdx.z, waiting, a.file, a.line, done);
      return false;
    }
    for (unsigned i = 0; i < n; i++) {
      const Fiber& b = g_fibers[i];
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
      for (const Fiber::Copy& c : g_fibers[i].landed) std::memcpy(c.dst, c.src, c.bytes);  // cp.async retired by a wait
      g_fibers[i].landed.clear();
      g_barrier_count += g_fibers[i].slot != 0;
      g_fibers[i].state = Ready;
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

int syncthreads_count(int predicate, const char* file, int line) {
  g_fibers[g_current].slot = predicate != 0;
  syncthreads(file, line);
  return g_barrier_count;  // read before any thread can reach the next barrier
}

void syncthreads(const char* file, int line) {
  Fiber& f = g_fibers[g_current];
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
  g_fibers[g_current].open.push_back({dst, src, bytes});
}
void async_commit() {
  Fiber& f = g_fibers[g_current];
  f.groups.push_back(std::move(f.open));
  f.open.clear();
}
// The retired groups' copies land when the thread's next __syncthreads releases (CUDA
// makes them visible to the block's other threads only after one): so a
// read before the wait, or after it with no __syncthreads, sees the old
// bytes. (A thread reading its own copies right after the wait would too;
// no kernel of ours does.)
void async_wait(int pending) {
  Fiber& f = g_fibers[g_current];
  const size_t n = f.groups.size() > static_cast<size_t>(pending) ? f.groups.size() - pending : 0;
  for (size_t k = 0; k < n; k++) f.landed.insert(f.landed.end(), f.groups[k].begin(), f.groups[k].end());
  f.groups.erase(f.groups.begin(), f.groups.begin() + static_cast<std::ptrdiff_t>(n));
}

void* dynamic_shared() {
  // 16-byte aligned, as CUDA's (vector types may live there).
  const uintptr_t p = reinterpret_cast<uintptr_t>(g_dynamic_shared.data());
  return reinterpret_cast<void*>((p + 15) / 16 * 16);
}

unsigned warp_exchange(unsigned mask, uint64_t value, const char* file, int line, uint64_t* lanes) {
  Fiber& f = g_fibers[g_current];
  const unsigned warp = g_current / 32 * 32;
  const unsigned present = blockDim.x * blockDim.y * blockDim.z - warp;  // lanes the warp has
  if (present < 32) mask &= (1u << present) - 1;
  f.slot = value;
  f.mask = mask;
  f.file = file;
  f.line = line;
  f.state = AtWarpBarrier;
  to_scheduler(f);
  for (unsigned l = 0; l < 32; l++) lanes[l] = (mask >> l & 1u) ? g_fibers[warp + l].slot : 0;
  // A second barrier: no lane may offer its next value before every lane has read this one.
  f.mask = mask;
  f.state = AtWarpBarrier;
  to_scheduler(f);
  return g_current - warp;
}

void launch_body(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const char* kernel,
                 const char* caller, const void* func, void (*body)(void*), void* arg) {
  if (device_of(stream) != t_device) {
    std::fprintf(stderr, "gpu-emu: %s (from %s) launched on a stream of device %d while device %d is current\n", kernel,
                 caller, device_of(stream), t_device);
    set_error(cudaErrorInvalidResourceHandle);
    return;
  }
  const unsigned long long n = 1ull * block.x * block.y * block.z;
  if (n == 0 || n > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu ||
      grid.y > 65535 || grid.z > 65535) {
    std::fprintf(stderr, "gpu-emu: invalid launch configuration: grid (%u,%u,%u), block (%u,%u,%u)\n", grid.x, grid.y,
                 grid.z, block.x, block.y, block.z);
    set_error(cudaErrorInvalidConfiguration);
    return;
  }
  if (shared_bytes > kMaxDynamicShared) {
    std::fprintf(stderr, "gpu-emu: %zu bytes of dynamic shared memory asked for (at most %zu)\n", shared_bytes,
                 kMaxDynamicShared);
    set_error(cudaErrorInvalidValue);
    return;
  }
  if (shared_bytes > kDefaultDynamicShared) {
    size_t allowed = 0;
    if (func) {
      const std::lock_guard<std::mutex> lock(g_opt_in_mutex);
      const auto it = g_opt_in.find(func);
      if (it != g_opt_in.end()) allowed = it->second;
    }
    if (shared_bytes > allowed) {
      std::fprintf(stderr,
                   "gpu-emu: %s (from %s) asks for %zu bytes of dynamic shared memory, above 48 KiB, but its opt-in "
                   "(cudaFuncSetAttribute, cudaFuncAttributeMaxDynamicSharedMemorySize) allows %zu\n",
                   kernel, caller, shared_bytes, allowed);
      set_error(cudaErrorInvalidValue);
      return;
    }
  }
  if (g_max_blocks > 0 && grid.x > g_max_blocks) grid.x = g_max_blocks;
  const std::lock_guard<std::mutex> lock(g_launch);
  if (g_in_kernel) {
    std::fprintf(stderr, "gpu-emu: a launch from inside a kernel is not emulated\n");
    set_error(cudaErrorNotSupported);
    return;
  }
  while (g_fibers.size() < n) {
    Fiber f;
    f.stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f.stack == MAP_FAILED) {
      set_error(cudaErrorMemoryAllocation);
      return;
    }
    g_fibers.push_back(f);
  }
  if (g_stats) {
    Stat& st = (*g_stats)[std::string(kernel) + "  (" + caller + ")"];
    st.launches++;
    st.blocks += 1ull * grid.x * grid.y * grid.z;
    st.threads += 1ull * grid.x * grid.y * grid.z * n;
    st.block_max = std::max(st.block_max, static_cast<unsigned>(n));
  }
  g_launches++;
  if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread) g_stream_launches++;
  if (g_skip_kernels) return;
  g_dynamic_bytes = shared_bytes;
  if (g_dynamic_shared.size() < shared_bytes + 16) g_dynamic_shared.resize(shared_bytes + 16);
  g_body = body;
  g_arg = arg;
  g_in_kernel = true;
  gridDim = grid;
  blockDim = block;
  bool ok = true;
  for (unsigned z = 0; ok && z < grid.z; z++)
    for (unsigned y = 0; ok && y < grid.y; y++)
      for (unsigned x = 0; ok && x < grid.x; x++) {
        blockIdx = g_reverse ? uint3{grid.x - 1 - x, grid.y - 1 - y, grid.z - 1 - z} : uint3{x, y, z};
        ok = run_block(static_cast<unsigned>(n));
      }
  g_in_kernel = false;
  if (!ok) set_error(cudaErrorLaunchFailure);
}

std::atomic<unsigned long long>* api_counter(const char* name) {
  const std::lock_guard<std::mutex> lock(g_api_mutex);
  return &g_api.emplace_back(std::piecewise_construct, std::forward_as_tuple(name), std::forward_as_tuple(0)).second;
}

void set_skip_kernels(bool skip) { g_skip_kernels = skip; }
bool skipping_kernels() { return g_skip_kernels; }
unsigned long long launch_count() { return g_launches; }
unsigned long long stream_launch_count() { return g_stream_launches; }
unsigned long long copy_count() { return g_copies; }
size_t pinned_bytes() {
  const std::lock_guard<std::mutex> lock(g_pinned_mutex);
  return g_pinned;
}
void count_launch(const void* stream) {
  g_launches++;
  const cudaStream_t s = static_cast<cudaStream_t>(const_cast<void*>(stream));
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) g_stream_launches++;
}
std::vector<std::pair<std::string, unsigned long long>> api_counts() {
  const std::lock_guard<std::mutex> lock(g_api_mutex);
  std::vector<std::pair<std::string, unsigned long long>> r;
  for (const auto& [name, calls] : g_api) r.emplace_back(name, calls.load());
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
std::map<const char*, Block> g_blocks;  // cudaMalloc's blocks by start
size_t g_used[8] = {};                   // bytes cudaMalloc holds, by device

// Where a range of n bytes lies: inside one device block, clear of every
// device block (host memory), or across the two (a bug either way).
enum Where { kHost, kDevice, kStraddles };
Where where(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  const std::lock_guard<std::mutex> lock(g_memory);
  auto it = g_blocks.upper_bound(c);
  if (it != g_blocks.begin()) {
    const auto& [start, b] = *std::prev(it);
    if (c < start + b.bytes) return c + n <= start + b.bytes ? kDevice : kStraddles;
  }
  return it != g_blocks.end() && it->first < c + n ? kStraddles : kHost;
}
void bad_range(const char* call, const char* which, const char* want) {
  std::fprintf(stderr, "gpu-emu: %s: %s is not %s\n", call, which, want);
  emu::set_error(cudaErrorInvalidValue);
}
// A copy's kind against where its ends are (cudaMemcpyDefault: anything).
bool copy_ok(void* dst, const void* src, size_t n, cudaMemcpyKind k, const char* call) {
  if (!n || k == cudaMemcpyDefault) return true;
  const Where d = where(dst, n), s = where(src, n);
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
// The copies and fills, at once (every stream is always done), checked.
cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind k, const char* call) {
  if (!copy_ok(dst, src, n, k, call)) return emu::set_error(cudaErrorInvalidValue), cudaErrorInvalidValue;
  emu::g_copies++;
  if (n) std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t fill(void* p, int v, size_t n, const char* call) {
  if (n && where(p, n) != kDevice) return bad_range(call, "the memory set", "device memory"), cudaErrorInvalidValue;
  emu::g_copies++;
  if (n) std::memset(p, v, n);
  return cudaSuccess;
}
cudaStream_t new_stream() { return reinterpret_cast<cudaStream_t>(new FakeObject{1, t_device}); }
cudaEvent_t new_event() { return reinterpret_cast<cudaEvent_t>(new FakeObject{2, t_device}); }
}  // namespace

// EMU_EXACT_MEMORY's tensors (emu_register.cpp): device memory too.
void emu::device_range(const void* p, size_t bytes, int device) {
  const std::lock_guard<std::mutex> lock(g_memory);
  if (bytes)
    g_blocks[static_cast<const char*>(p)] = Block{bytes, device};
  else
    g_blocks.erase(static_cast<const char*>(p));
}

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void) {
  EMU_API_CALL();
  const cudaError_t e = emu::g_last;
  emu::g_last = cudaSuccess;
  return e;
}
cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  EMU_API_CALL();
  return emu::g_last;
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
  return cudaSuccess;
}

// The opt-in above 48 KiB of dynamic shared memory that launch_body checks;
// other attributes are accepted and ignored.
cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  EMU_API_CALL();
  if (!func) return cudaErrorInvalidDeviceFunction;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<size_t>(value) > emu::kMaxDynamicShared) return cudaErrorInvalidValue;
    const std::lock_guard<std::mutex> lock(emu::g_opt_in_mutex);
    emu::g_opt_in[func] = static_cast<size_t>(value);
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
  g_blocks[static_cast<const char*>(*p)] = Block{bytes, t_device};
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaFree(void* p) {
  EMU_API_CALL();
  if (!p) return cudaSuccess;
  {
    const std::lock_guard<std::mutex> lock(g_memory);
    const auto it = g_blocks.find(static_cast<const char*>(p));
    if (it == g_blocks.end()) return emu::set_error(cudaErrorInvalidValue), cudaErrorInvalidValue;
    g_used[it->second.device] -= it->second.bytes;
    g_blocks.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  EMU_API_CALL();
  std::memset(a, 0, sizeof(*a));
  const char* c = static_cast<const char*>(p);
  const std::lock_guard<std::mutex> lock(g_memory);
  auto it = g_blocks.upper_bound(c);
  if (it != g_blocks.begin() && c < std::prev(it)->first + std::prev(it)->second.bytes) {
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
  return copy(dst, src, n, k, __func__);
}
cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind k, cudaStream_t) {
  EMU_API_CALL();
  return copy(dst, src, n, k, __func__);
}
cudaError_t CUDARTAPI cudaMemset(void* p, int v, size_t n) {
  EMU_API_CALL();
  return fill(p, v, n, __func__);
}
cudaError_t CUDARTAPI cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) {
  EMU_API_CALL();
  return fill(p, v, n, __func__);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  EMU_API_CALL();
  *s = new_stream();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* s) {
  EMU_API_CALL();
  *s = new_stream();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s) {
  EMU_API_CALL();
  delete reinterpret_cast<FakeObject*>(s);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t) {
  EMU_API_CALL();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t) {
  EMU_API_CALL();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) {
  EMU_API_CALL();
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
  delete reinterpret_cast<FakeObject*>(e);
  return cudaSuccess;
}
// The event and the stream must be one device's, as on a GPU.
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  EMU_API_CALL();
  if (!e) return emu::set_error(cudaErrorInvalidResourceHandle), cudaErrorInvalidResourceHandle;
  if (reinterpret_cast<FakeObject*>(e)->device != emu::device_of(s)) {
    std::fprintf(stderr, "gpu-emu: cudaEventRecord of an event of device %d on a stream of device %d\n",
                 reinterpret_cast<FakeObject*>(e)->device, emu::device_of(s));
    return emu::set_error(cudaErrorInvalidResourceHandle), cudaErrorInvalidResourceHandle;
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t) {
  EMU_API_CALL();
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t) {
  EMU_API_CALL();
  return cudaSuccess;
}

}  // extern "C"
