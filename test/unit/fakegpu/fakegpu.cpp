// The pretend GPU (fakegpu.hpp).
#include "fakegpu.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/declined.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc_fakegpu {
namespace {

struct Block {
  size_t mapped;  // bytes mapped (whole pages)
  size_t bytes;   // bytes asked for
  int device;
};

std::mutex g_mutex;
int g_devices = 0;
std::map<void*, Block> g_blocks;  // every live allocation
std::vector<size_t> g_in_use, g_allocations;
int g_running = 0;  // kernels running now: memory is readable while > 0
std::atomic<size_t> g_kernels{0};

// The CPU kernel each command runs on pretend GPU tensors.
std::unordered_map<uint32_t, nnc::Kernel> g_cpu;
bool g_prefer_optimised = false;

size_t page() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

void protect_all(int prot) {
  for (auto& [p, b] : g_blocks) mprotect(p, b.mapped, prot);
}

void* alloc(int device, size_t bytes) {
  if (device < 0 || device >= g_devices)
    nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: device %d does not exist (%d devices)", device, g_devices);
  const size_t mapped = (bytes + page() - 1) / page() * page() + page();
  void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) nnc::fail(CCV_NNC_EXEC_OOM, "fake GPU: cannot map %zu bytes", bytes);
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_running > 0) mprotect(p, mapped, PROT_READ | PROT_WRITE);
  g_blocks[p] = Block{mapped, bytes, device};
  g_in_use[static_cast<size_t>(device)] += bytes;
  g_allocations[static_cast<size_t>(device)]++;
  return p;
}

void drain_all();

void release(int device, void* p) {
  drain_all();  // as cudaFree: queued work that may use the block ends first
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.find(p);
  if (it == g_blocks.end()) return;
  if (it->second.device == device) g_in_use[static_cast<size_t>(device)] -= it->second.bytes;
  munmap(p, it->second.mapped);
  g_blocks.erase(it);
}

int count() { return g_devices; }

std::map<void*, size_t> g_pinned;  // page-locked host ranges (pretend)

void pin(void* host, size_t bytes) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_pinned.emplace(host, bytes).second) nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: %p is pinned already", host);
}

void unpin(void* host) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_pinned.erase(host);
}

const nnc::DeviceMemory kMemory = {alloc, release, count, nullptr, nullptr, pin, unpin};

bool is_gpu(const ccv_nnc_tensor_t* t) {
  return t && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY;
}

// DATA_TRANSFER moves between host and device; every other command takes
// GPU tensors only, as the real GPU kernels do. At least one must be on the GPU.
bool accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
            int output_size) {
  const auto it = g_cpu.find(cmd.cmd);
  if (it == g_cpu.end()) return false;
  const bool mixed_ok = cmd.cmd == CCV_NNC_DATA_TRANSFER_FORWARD || cmd.cmd == CCV_NNC_DATA_TRANSFER_BACKWARD;
  bool any = false;
  for (int i = 0; i < input_size + output_size; i++) {
    const ccv_nnc_tensor_t* t = i < input_size ? inputs[i] : outputs[i - input_size];
    if (!t) continue;
    if (is_gpu(t)) {
      any = true;
    } else if (!mixed_ok) {
      return false;
    }
  }
  const nnc::Kernel& k = it->second;
  return any && (!k.accept || k.accept(cmd, inputs, input_size, outputs, output_size));
}

int run_now(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs,
            const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,
            ccv_nnc_stream_context_t* const stream_context) {
  const nnc::Kernel& k = g_cpu.at(cmd.cmd);
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_running++ == 0) protect_all(PROT_READ | PROT_WRITE);
  }
  g_kernels++;
  ccv_nnc_cmd_t c = cmd;
  c.backend = k.backend;
  int status;
  try {
    status = k.exec(c, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (--g_running == 0) protect_all(PROT_NONE);
    throw;
  }
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_running == 0) protect_all(PROT_NONE);
  return status;
}

// --- pretend GPU streams ----------------------------------------------------
//
// A stream is a queue of work, event records and event waits. Nothing runs
// when it is queued: the queues advance only when the host waits (for a
// stream, an event, or before memory is freed), and then in an order drawn at
// random among the streams whose next item may run (a wait may run once the
// record it names has). So work queued without the waits it needs runs
// before what it depends on, often, and gives wrong results, as on a GPU.

struct FakeEvent {
  uint64_t recorded = 0;  // records queued
  uint64_t reached = 0;   // the latest record that ran
};

struct Item {
  enum Kind { Work, Record, Wait } kind;
  std::function<void()> work;
  FakeEvent* event = nullptr;
  uint64_t ticket = 0;
};

struct FakeStream {
  int device = 0;
  std::deque<Item> queue;
  std::vector<char> workspace;
  std::string fault;  // the first failure of its work, reported by the next wait
};

std::mutex g_sim;                 // queues and events
std::recursive_mutex g_drive;     // one host thread advances the queues at a time
std::vector<FakeStream*> g_streams;
std::mt19937 g_order(20261127);
std::atomic<size_t> g_deferred{0};

bool runnable(const FakeStream* s) {
  if (s->queue.empty()) return false;
  const Item& i = s->queue.front();
  return i.kind != Item::Wait || i.event->reached >= i.ticket;
}

// Runs queued items until done() holds (checked under g_sim).
template <class Done>
void drive(Done done) {
  const std::lock_guard<std::recursive_mutex> driving(g_drive);
  for (;;) {
    Item item;
    FakeStream* from = nullptr;
    {
      const std::lock_guard<std::mutex> lock(g_sim);
      if (done()) return;
      std::vector<FakeStream*> ready;
      for (FakeStream* s : g_streams)
        if (runnable(s)) ready.push_back(s);
      if (ready.empty())
        nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: the streams wait for each other and none can go on (deadlock)");
      from = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(g_order)];
      item = std::move(from->queue.front());
      from->queue.pop_front();
      if (item.kind == Item::Record) item.event->reached = std::max(item.event->reached, item.ticket);
    }
    if (item.kind == Item::Work) item.work();
  }
}

void drain_all() {
  drive([] {
    for (FakeStream* s : g_streams)
      if (!s->queue.empty()) return false;
    return true;
  });
}

void drain(FakeStream* s) {
  drive([s] { return s->queue.empty(); });
}

void* stream_new(int device) {
  if (device < 0 || device >= g_devices)
    nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: device %d does not exist (%d devices)", device, g_devices);
  auto* s = new FakeStream;
  s->device = device;
  const std::lock_guard<std::mutex> lock(g_sim);
  g_streams.push_back(s);
  return s;
}

void stream_free(void* p) {
  auto* s = static_cast<FakeStream*>(p);
  try {
    drain(s);
  } catch (const nnc::Error&) {
    drain_all();  // a deadlock cannot end: drop what is left
  }
  const std::lock_guard<std::mutex> lock(g_sim);
  g_streams.erase(std::find(g_streams.begin(), g_streams.end(), s));
  delete s;
}

void stream_wait(void* p) {
  auto* s = static_cast<FakeStream*>(p);
  drain(s);
  std::string fault;
  {
    const std::lock_guard<std::mutex> lock(g_sim);
    fault.swap(s->fault);
  }
  if (!fault.empty()) nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: queued work failed: %s", fault.c_str());
}

void* stream_workspace(void* p, size_t bytes) {
  auto* s = static_cast<FakeStream*>(p);
  drain(s);  // work queued earlier may still use the old buffer
  if (s->workspace.size() < bytes) s->workspace.resize(bytes);
  return s->workspace.data();
}

void stream_drain(void* p) {
  auto* s = static_cast<FakeStream*>(p);
  drain(s);
  std::vector<char>().swap(s->workspace);
}

void* event_new(int) { return new FakeEvent; }
void event_free(void* e) {
  drain_all();  // no queued wait or record may still name it
  delete static_cast<FakeEvent*>(e);
}
void event_record(void* e, void* p) {
  auto* event = static_cast<FakeEvent*>(e);
  const std::lock_guard<std::mutex> lock(g_sim);
  static_cast<FakeStream*>(p)->queue.push_back(Item{Item::Record, {}, event, ++event->recorded});
}
void stream_wait_event(void* p, void* e) {
  auto* event = static_cast<FakeEvent*>(e);
  const std::lock_guard<std::mutex> lock(g_sim);
  if (event->recorded == 0) return;  // never recorded: nothing to wait for (as CUDA)
  static_cast<FakeStream*>(p)->queue.push_back(Item{Item::Wait, {}, event, event->recorded});
}
void event_sync(void* e) {
  auto* event = static_cast<FakeEvent*>(e);
  uint64_t target;
  {
    const std::lock_guard<std::mutex> lock(g_sim);
    target = event->recorded;
  }
  drive([event, target] { return event->reached >= target; });
}

const nnc::GpuStreamHooks kStreams = {stream_new, stream_free,  stream_wait,  stream_workspace, stream_drain,
                                      event_new,  event_free,   event_record, stream_wait_event, event_sync,
                                      nullptr};

// A tensor's header as it is now (a queued kernel sees the tensor as it was
// when queued, as a CUDA launch captures its arguments).
struct Header {
  ccv_nnc_tensor_view_t view;
  ccv_nnc_tensor_t* get() { return reinterpret_cast<ccv_nnc_tensor_t*>(&view); }
};

int exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs,
         const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,
         ccv_nnc_stream_context_t* const stream_context) {
  auto* s = static_cast<FakeStream*>(nnc::gpu_stream_of(stream_context));
  if (!s) return run_now(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  bool host = false;
  for (int i = 0; i < input_size + output_size; i++) {
    const ccv_nnc_tensor_t* t = i < input_size ? inputs[i] : outputs[i - input_size];
    host = host || (t && !is_gpu(t) && !(t->type & CCV_TENSOR_PINNED_MEM));
  }
  if (host) {
    // A copy to or from pageable host memory waits for the stream and happens
    // now, as cudaMemcpyAsync does; one with pinned memory is queued.
    drain(s);
    return run_now(cmd, hint, flags, inputs, input_size, outputs, output_size, nullptr);
  }
  auto headers = std::make_shared<std::vector<Header>>(static_cast<size_t>(input_size + output_size));
  auto pointers = std::make_shared<std::vector<ccv_nnc_tensor_t*>>(static_cast<size_t>(input_size + output_size), nullptr);
  for (int i = 0; i < input_size + output_size; i++) {
    const ccv_nnc_tensor_t* t = i < input_size ? inputs[i] : outputs[i - input_size];
    if (!t) continue;
    std::memcpy(&(*headers)[static_cast<size_t>(i)].view, t, CCV_IS_TENSOR_VIEW(t) ? sizeof(ccv_nnc_tensor_view_t) : sizeof(ccv_nnc_tensor_t));
    (*pointers)[static_cast<size_t>(i)] = (*headers)[static_cast<size_t>(i)].get();
  }
  Item item{Item::Work, {}, nullptr, 0};
  item.work = [cmd, hint, flags, headers, pointers, input_size, output_size, s]() {
    std::string failure;
    try {
      // Without the stream: the CPU kernel stands for device work already queued.
      if (run_now(cmd, hint, flags, pointers->data(), input_size, pointers->data() + input_size, output_size, nullptr) !=
          CCV_NNC_EXEC_SUCCESS)
        failure = ccv_nnc_error_message();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (failure.empty()) return;
    const std::lock_guard<std::mutex> lock(g_sim);
    if (s->fault.empty()) s->fault = failure;
  };
  g_deferred++;
  const std::lock_guard<std::mutex> lock(g_sim);
  s->queue.push_back(std::move(item));
  return CCV_NNC_EXEC_SUCCESS;
}

// The pretend GPU_CUDNN (set_declining): the same work as the pretend
// GPU_REF, preferred to it, for a few commands; either can refuse calls at
// run time as cuDNN does (core/declined.hpp).
constexpr uint32_t kDeclinable[] = {CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_EWSUM_FORWARD};
std::map<std::pair<uint32_t, uint32_t>, int> g_declining;  // under g_mutex: (command, backend) -> refusals left (-1: all)
std::atomic<size_t> g_declines{0};

void maybe_decline(uint32_t cmd, uint32_t backend) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_declining.find({cmd, backend});
  if (it == g_declining.end() || it->second == 0) return;
  if (it->second > 0) it->second--;
  g_declines++;
  throw nnc::Declined(nnc::format("fake %s: refused at run time (set_declining)",
                                  backend == CCV_NNC_BACKEND_GPU_CUDNN ? "GPU_CUDNN" : "GPU_REF"));
}

int exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs,
         const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,
         ccv_nnc_stream_context_t* const stream_context);

template <uint32_t kBackend>
int exec_declinable(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs,
                    const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,
                    ccv_nnc_stream_context_t* const stream_context) {
  maybe_decline(cmd.cmd, kBackend);
  return exec(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
}

void late(nnc::Registry& r) {
  nnc::set_device_memory(&kMemory);
  for (uint32_t cmd : r.commands()) {
    const nnc::Kernel* k = r.kernel(cmd, g_prefer_optimised ? CCV_NNC_BACKEND_CPU_OPT : CCV_NNC_BACKEND_CPU_REF);
    if (!k) k = r.kernel(cmd, g_prefer_optimised ? CCV_NNC_BACKEND_CPU_REF : CCV_NNC_BACKEND_CPU_OPT);
    if (!k || !k->exec) continue;
    g_cpu[cmd] = *k;
    nnc::Kernel m = *k;
    m.backend = CCV_NNC_BACKEND_GPU_REF;
    m.tensor_memory = CCV_TENSOR_CPU_MEMORY | CCV_TENSOR_GPU_MEMORY;
    m.exec = exec;
    m.accept = accept;
    m.autotune = nullptr;
    m.algorithms = 1;
    if (std::find(std::begin(kDeclinable), std::end(kDeclinable), cmd) != std::end(kDeclinable)) {
      m.exec = exec_declinable<CCV_NNC_BACKEND_GPU_REF>;
      r.add_kernel(m);
      m.backend = CCV_NNC_BACKEND_GPU_CUDNN;
      m.exec = exec_declinable<CCV_NNC_BACKEND_GPU_CUDNN>;
    }
    r.add_kernel(m);
  }
}

}  // namespace

bool install(int devices, bool prefer_optimised) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_devices = devices;
    g_prefer_optimised = prefer_optimised;
    g_in_use.assign(static_cast<size_t>(devices), 0);
    g_allocations.assign(static_cast<size_t>(devices), 0);
  }
  nnc::set_gpu_stream_hooks(&kStreams);
  return nnc::set_late_registration(late);
}

void set_stream_order_seed(uint32_t seed) {
  const std::lock_guard<std::mutex> lock(g_sim);
  g_order.seed(seed);
}

size_t kernels_queued() { return g_deferred.load(); }

size_t pinned_bytes() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  size_t n = 0;
  for (auto& [p, b] : g_pinned) n += b;
  return n;
}

size_t bytes_in_use(int device) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return device >= 0 && device < g_devices ? g_in_use[static_cast<size_t>(device)] : 0;
}

size_t allocations(int device) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return device >= 0 && device < g_devices ? g_allocations[static_cast<size_t>(device)] : 0;
}

size_t kernels_run() { return g_kernels.load(); }

void set_declining(uint32_t cmd, int calls, uint32_t backend) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_declining[{cmd, backend}] = calls;
}

size_t declines() { return g_declines.load(); }

}  // namespace nnc_fakegpu
