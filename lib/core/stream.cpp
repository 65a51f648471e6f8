// CPU streams and signals.
//
// A CPU stream is a queue of tasks and a worker thread that runs them in
// order. Signals are generation counters: emitting queues a task that raises
// the signal's "reached" generation; waiting queues a task that blocks the
// waiting stream's worker until the generation it saw at the wait call has
// been reached. Because generations only grow, a signal can be emitted again
// (or recycled, as emit_signal_new does) without confusing earlier waiters.
//
// GPU stream contexts (CCV_STREAM_CONTEXT_GPU) have no worker: their work is
// queued on a device stream by the calling thread, through the hooks the CUDA
// module installs (core/gpu_stream.hpp says which call waits for what).
#include "core/stream.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "core/parallel.hpp"
#include "core/live.hpp"
#include "core/registry.hpp"
#include "core/stream_errors.hpp"

// A device event of a signal, freed through the hooks that made it (a test
// may install other hooks meanwhile).
struct GpuEvent {
  const nnc::GpuStreamHooks* hooks;
  void* event;
  int device;
  GpuEvent(const nnc::GpuStreamHooks* h, int d) : hooks(h), event(h->event_new(d)), device(d) {}
  GpuEvent(const GpuEvent&) = delete;
  GpuEvent& operator=(const GpuEvent&) = delete;
  ~GpuEvent() { hooks->event_free(event); }
};

struct SignalState {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t emitted = 0;  // generations handed out by emit calls
  uint64_t reached = 0;  // highest generation whose emit task has run
  ccv_nnc_stream_context_t* emitter = nullptr;
  // Set when the latest emit was on a GPU stream: the event it recorded.
  // Waiters on CPU streams hold a reference until their task has waited.
  std::shared_ptr<GpuEvent> event;
};

struct ccv_nnc_stream_signal_s {
  int type;
  std::shared_ptr<SignalState> state;
  nnc::LiveCounter<CCV_NNC_LIVE_STREAM_SIGNAL> live_counter_;  // ccv_nnc_live_object_count
};

// One queued piece of work: a command (exec set), or a general task (fn).
// Records live in the stream's ring and are overwritten in place, so a
// command costs no allocation: its tensors fit the inline array, or the
// record's own vector, which keeps its capacity from one use to the next.
struct StreamTask {
  static constexpr int kInline = 8;
  ccv_nnc_cmd_exec_f exec = nullptr;
  uint32_t backend = 0;
  int flags = 0;
  int ni = 0, no = 0;
  ccv_nnc_cmd_t cmd;
  ccv_nnc_hint_t hint;
  std::array<ccv_nnc_tensor_t*, kInline> io_inline;
  std::vector<ccv_nnc_tensor_t*> io_more;
  std::function<int()> fn;
  ccv_nnc_tensor_t** io() { return ni + no <= kInline ? io_inline.data() : io_more.data(); }
};

struct ccv_nnc_stream_context_s {
  int type = 0;
  std::mutex mutex;
  std::condition_variable work_cv;  // new task or stop
  std::condition_variable idle_cv;  // queue drained
  // A ring of records (grown by doubling, never shrunk): `count` queued from `head`.
  std::vector<StreamTask> ring;
  size_t head = 0, count = 0;
  // Tensor lists of finished records too long for a record's inline array,
  // kept for the next long one: such lists are allocated only while more long
  // records are queued at once than ever before, wherever they land in the ring.
  std::vector<std::vector<ccv_nnc_tensor_t*>> spare_io;
  size_t pending = 0;  // queued plus running
  bool stop = false;
  std::thread worker;
  // Failures since the last wait (the first whole, the rest counted).
  nnc::StreamErrors failures;
  // What the last wait reported, held for the next call that queues on the
  // stream (stream_take_held): its code and message. `has_held` lets that
  // call see an empty hold without the lock.
  std::atomic<bool> has_held{false};
  int held_code = CCV_NNC_EXEC_SUCCESS;
  std::string held_message;
  // Scratch memory, only touched from the worker (or with the queue empty).
  void* workspace = nullptr;
  size_t workspace_size = 0;
  std::mt19937 rng{0x9e3779b9u};
  std::vector<std::pair<int, std::pair<ccv_nnc_stream_context_destructor_f, void*>>> hooks;
  int next_hook = 0;
  ccv_nnc_stream_context_neighbor_discovery_f discovery = nullptr;
  void* discovery_context = nullptr;
  std::unique_ptr<ccv_nnc_stream_signal_s> own_signal;
  // A GPU stream context: the module's stream object, its hooks and device.
  void* gpu = nullptr;
  const nnc::GpuStreamHooks* gpu_hooks = nullptr;
  int device = -1;
  nnc::LiveCounter<CCV_NNC_LIVE_STREAM_CONTEXT> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc {

namespace {

thread_local ccv_nnc_stream_context_t* t_current_stream = nullptr;
// The buffer lives in the thread_local object itself: a thread_local with a
// destructor is constructed (and so destroyed at thread exit) only in the
// threads that use it, so a separate owner object that is never named in a
// thread would never free that thread's buffer.
struct ThreadWorkspace {
  void* buffer = nullptr;
  size_t size = 0;
  ~ThreadWorkspace() { std::free(buffer); }
};
thread_local ThreadWorkspace t_workspace;

// Takes the record at the head of the ring into `out` (the caller holds the
// lock). Vectors and functions are swapped or moved, never copied, so the
// records keep their storage.
void take_head(ccv_nnc_stream_context_t* s, StreamTask& out) {
  StreamTask& t = s->ring[s->head];
  out.exec = t.exec;
  out.backend = t.backend;
  out.flags = t.flags;
  out.ni = t.ni;
  out.no = t.no;
  if (t.exec) {
    out.cmd = t.cmd;
    out.hint = t.hint;
    if (t.ni + t.no <= StreamTask::kInline)
      std::copy_n(t.io_inline.begin(), t.ni + t.no, out.io_inline.begin());
    else
      out.io_more.swap(t.io_more);
  } else {
    out.fn = std::move(t.fn);
    t.fn = nullptr;
  }
  s->head = (s->head + 1) % s->ring.size();
  s->count--;
}

// A free record at the tail of the ring, growing it when full (the caller
// holds the lock; the worker only touches records it has taken out).
StreamTask& tail_record(ccv_nnc_stream_context_t* s) {
  if (s->count == s->ring.size()) {
    std::vector<StreamTask> bigger(std::max<size_t>(16, s->ring.size() * 2));
    for (size_t i = 0; i < s->count; i++) bigger[i] = std::move(s->ring[(s->head + i) % s->ring.size()]);
    s->ring = std::move(bigger);
    s->head = 0;
  }
  return s->ring[(s->head + s->count) % s->ring.size()];
}

int run_task(ccv_nnc_stream_context_t* s, StreamTask& task) {
  if (!task.exec) {
    const int code = task.fn();
    task.fn = nullptr;  // release what it captured now, not at the next task
    return code;
  }
  ccv_nnc_tensor_t** io = task.io();
  const int code = task.exec(task.cmd, task.hint, task.flags, io, task.ni, io + task.ni, task.no, s);
  store_fence();  // the kernel's streaming stores, if any (core/parallel.hpp)
  if (code != CCV_NNC_EXEC_SUCCESS && error_message().empty()) {
    const char* name = cmd_name(task.cmd.cmd);
    if (task.backend)
      set_error_message(format("%s: backend %s failed with %d", name ? name : "custom", backend_name(task.backend), code));
    else
      set_error_message(format("%s: the custom exec function returned %d", name ? name : "custom", code));
  }
  return code;
}

void run_worker(ccv_nnc_stream_context_t* s) {
  t_current_stream = s;
  StreamTask task;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->work_cv.wait(lock, [&] { return s->stop || s->count > 0; });
      if (s->count == 0) return;  // stop requested and nothing left
      take_head(s, task);
    }
    int code = CCV_NNC_EXEC_SUCCESS;
    std::string message;
    clear_error_message();
    try {
      code = run_task(s, task);
      if (code != CCV_NNC_EXEC_SUCCESS) message = error_message();
    } catch (...) {
      task.fn = nullptr;
      code = record_current_exception();
      message = error_message();
    }
    if (memory_efficient()) {
      // Only the worker uses the stream's workspace while work is queued.
      std::free(s->workspace);
      s->workspace = nullptr;
      s->workspace_size = 0;
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    if (task.io_more.capacity() > 0) {
      s->spare_io.push_back(std::move(task.io_more));
      task.io_more = {};
    }
    if (code != CCV_NNC_EXEC_SUCCESS) s->failures.add(code, std::move(message));
    if (--s->pending == 0) s->idle_cv.notify_all();
  }
}

void* grow(void*& buffer, size_t& size, size_t wanted) {
  if (wanted <= size && buffer) return buffer;
  void* fresh = nullptr;
  const size_t rounded = (wanted + 63) & ~size_t{63};
  if (posix_memalign(&fresh, 64, std::max<size_t>(rounded, 64)) != 0)
    fail(CCV_NNC_EXEC_OOM, "cannot allocate %zu bytes of workspace", wanted);
  std::free(buffer);
  buffer = fresh;
  size = rounded;
  return buffer;
}

void check_stream(const ccv_nnc_stream_context_t* s, const char* what) {
  NNC_CHECK(s, "%s: stream is NULL", what);
}

std::atomic<const GpuStreamHooks*> g_gpu_hooks{nullptr};

void record_failure(ccv_nnc_stream_context_t* s, int code, const std::string& message) {
  std::lock_guard<std::mutex> lock(s->mutex);
  s->failures.add(code, message);
}

// The host waits for a GPU stream's queued device work; bad input its kernels
// found meanwhile becomes pending failures of the stream. Throws what the
// wait itself throws (an asynchronous fault), after keeping the found ones.
void gpu_sync(ccv_nnc_stream_context_t* s) {
  const GpuStreamHooks* h = s->gpu_hooks;
  std::exception_ptr fault;
  try {
    h->stream_wait(s->gpu);
  } catch (...) {
    fault = std::current_exception();
  }
  if (h->take_errors) {
    StreamErrors found;
    h->take_errors(s->gpu, found);
    if (!found.empty()) {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->failures.merge(found);
    }
  }
  if (fault) std::rethrow_exception(fault);
}

// Host work for a GPU stream: after its queued device work, on the calling
// thread. A failure is kept for the next ccv_nnc_stream_context_wait, as a
// CPU stream's worker keeps it.
void run_inline(ccv_nnc_stream_context_t* s, const std::function<int()>& task) {
  ccv_nnc_stream_context_t* const outer = t_current_stream;
  int code = CCV_NNC_EXEC_SUCCESS;
  try {
    gpu_sync(s);
    t_current_stream = s;
    code = task();
  } catch (...) {
    code = record_current_exception();
  }
  t_current_stream = outer;
  if (code != CCV_NNC_EXEC_SUCCESS) record_failure(s, code, error_message());
}

}  // namespace

void set_gpu_stream_hooks(const GpuStreamHooks* hooks) { g_gpu_hooks.store(hooks); }
const GpuStreamHooks* gpu_stream_hooks() { return g_gpu_hooks.load(); }

void* gpu_stream_of(const ccv_nnc_stream_context_t* s) { return s ? s->gpu : nullptr; }
int gpu_stream_device(const ccv_nnc_stream_context_t* s) { return s && s->gpu ? s->device : -1; }
bool is_gpu_stream(const ccv_nnc_stream_context_t* s) { return s && s->gpu; }

namespace {
thread_local ccv_nnc_stream_context_t* t_error_log_owner = nullptr;
}  // namespace

ErrorLogOwner::ErrorLogOwner(ccv_nnc_stream_context_t* owner) : previous_(t_error_log_owner) { t_error_log_owner = owner; }
ErrorLogOwner::~ErrorLogOwner() { t_error_log_owner = previous_; }
ccv_nnc_stream_context_t* error_log_owner() { return t_error_log_owner; }

void host_sync(ccv_nnc_stream_context_t* s) {
  if (s && s->gpu) gpu_sync(s);
}

namespace {

// Takes the failure the last wait held (false when none): its code and message.
bool take_held(ccv_nnc_stream_context_t* s, int* code, std::string* message) {
  std::lock_guard<std::mutex> lock(s->mutex);
  if (!s->has_held.load(std::memory_order_relaxed)) return false;
  *code = s->held_code;
  *message = std::move(s->held_message);
  s->held_code = CCV_NNC_EXEC_SUCCESS;
  s->held_message.clear();
  s->has_held.store(false, std::memory_order_release);
  return true;
}

}  // namespace

void stream_take_held(ccv_nnc_stream_context_t* s) {
  if (!s || !s->has_held.load(std::memory_order_acquire)) return;
  int code;
  std::string message;
  if (!take_held(s, &code, &message)) return;
  throw Error(code, format("%s (held on the stream since ccv_nnc_stream_context_wait reported it; this call did not run)",
                           message.c_str()));
}

void stream_raise_failures(ccv_nnc_stream_context_t* s) {
  if (!s) return;
  std::unique_lock<std::mutex> lock(s->mutex);
  if (s->failures.empty()) return;
  const int code = s->failures.code();
  std::string message = s->failures.message();
  s->failures.clear();
  lock.unlock();
  throw Error(code, message);
}

int stream_error(ccv_nnc_stream_context_t* s) {
  check_stream(s, "ccv_nnc_stream_context_error");
  int code;
  std::string message;
  if (!take_held(s, &code, &message)) return CCV_NNC_EXEC_SUCCESS;
  set_error_message(message);
  return code;
}

int gpu_stream_exec(ccv_nnc_stream_context_t* s, ccv_nnc_cmd_exec_f exec, bool device_kernel, const ccv_nnc_cmd_t& cmd,
                    const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* inputs, int input_size,
                    ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!device_kernel) host_sync(s);
  ccv_nnc_stream_context_t* const outer = t_current_stream;
  t_current_stream = s;
  int code;
  try {
    code = exec(cmd, hint, flags, inputs, input_size, outputs, output_size, s);
  } catch (...) {
    t_current_stream = outer;
    throw;
  }
  t_current_stream = outer;
  if (!device_kernel) store_fence();
  return code;
}

void stream_enqueue(ccv_nnc_stream_context_t* s, std::function<int()> task) {
  check_stream(s, "stream_enqueue");
  if (s->gpu) {
    run_inline(s, task);
    return;
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  StreamTask& t = tail_record(s);
  t.exec = nullptr;
  t.fn = std::move(task);
  s->count++;
  s->pending++;
  s->work_cv.notify_one();
}

void stream_enqueue_command(ccv_nnc_stream_context_t* s, ccv_nnc_cmd_exec_f exec, uint32_t backend,
                            const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
                            ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                            int output_size) {
  check_stream(s, "stream_enqueue_command");
  NNC_CHECK(exec, "stream_enqueue_command: no exec function");
  if (s->gpu) {
    // Not the path of ccv_nnc_cmd_exec (gpu_stream_exec); a host command all the same.
    run_inline(s, [&] { return exec(cmd, hint, flags, inputs, input_size, outputs, output_size, s); });
    (void)backend;
    return;
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  StreamTask& t = tail_record(s);
  const int n = input_size + output_size;
  ccv_nnc_tensor_t** io = t.io_inline.data();
  if (n > StreamTask::kInline) {
    if (t.io_more.capacity() < static_cast<size_t>(n) && !s->spare_io.empty()) {
      t.io_more.swap(s->spare_io.back());  // the record's own list, if any, is the spare now
      if (s->spare_io.back().capacity() == 0) s->spare_io.pop_back();
    }
    t.io_more.resize(static_cast<size_t>(n));  // may allocate: more long records at once than before
    io = t.io_more.data();
  } else if (t.io_more.capacity() > 0) {
    s->spare_io.push_back(std::move(t.io_more));  // not stranded under short records
    t.io_more = {};
  }
  std::copy_n(inputs, input_size, io);
  std::copy_n(outputs, output_size, io + input_size);
  t.exec = exec;
  t.backend = backend;
  t.cmd = cmd;
  t.hint = hint;
  t.flags = flags;
  t.ni = input_size;
  t.no = output_size;
  s->count++;
  s->pending++;
  s->work_cv.notify_one();
}

void* workspace(ccv_nnc_stream_context_t* stream, size_t size) {
  if (stream) return grow(stream->workspace, stream->workspace_size, size);
  return grow(t_workspace.buffer, t_workspace.size, size);
}

void release_thread_workspace() {
  std::free(t_workspace.buffer);
  t_workspace.buffer = nullptr;
  t_workspace.size = 0;
}

size_t thread_workspace_size() { return t_workspace.size; }

ccv_nnc_stream_context_t* stream_new(int type) {
  const int context = CCV_STREAM_GET_CONTEXT(type);
  NNC_CHECK(context == CCV_STREAM_CONTEXT_CPU || context == CCV_STREAM_CONTEXT_GPU,
            "ccv_nnc_stream_context_new: type 0x%x is neither CCV_STREAM_CONTEXT_CPU nor _GPU", type);
  if (context == CCV_STREAM_CONTEXT_GPU) {
    (void)registry();  // the CUDA module installs its hooks as the registry is built
    const GpuStreamHooks* hooks = gpu_stream_hooks();
    if (!hooks)
      fail(CCV_NNC_EXEC_NO_KERNEL,
           "ccv_nnc_stream_context_new: GPU streams need the CUDA module, which this build lacks (built without CUDA)");
    const int device = CCV_STREAM_GET_DEVICE_ID(type);
    auto s = std::make_unique<ccv_nnc_stream_context_s>();
    s->type = type;
    s->device = device;
    s->gpu_hooks = hooks;
    s->gpu = hooks->stream_new(device);  // throws with the device's message
    if (!s->gpu) fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_stream_context_new: no stream on GPU %d", device);
    return s.release();
  }
  auto s = std::make_unique<ccv_nnc_stream_context_s>();
  s->type = type;
  s->worker = std::thread(run_worker, s.get());
  return s.release();
}

void stream_wait(const ccv_nnc_stream_context_t* cs) {
  check_stream(cs, "ccv_nnc_stream_context_wait");
  auto* s = const_cast<ccv_nnc_stream_context_t*>(cs);
  NNC_CHECK(t_current_stream != s, "ccv_nnc_stream_context_wait: a stream cannot wait for itself from its own work");
  if (s->gpu) {
    try {
      gpu_sync(s);
    } catch (const Error& e) {
      record_failure(s, e.code(), e.what());
    }
  }
  std::unique_lock<std::mutex> lock(s->mutex);
  s->idle_cv.wait(lock, [&] { return s->pending == 0; });
  if (!s->failures.empty()) {
    // Reported here as a message (the wait returns nothing) and held for the
    // next call that queues on the stream, which returns it as a code. A
    // report not yet taken is replaced: the newer one is what the caller saw.
    const std::string message = s->failures.message();
    const int code = s->failures.code();
    s->failures.clear();
    s->held_code = code;
    s->held_message = message;
    s->has_held.store(true, std::memory_order_release);
    lock.unlock();
    throw Error(code, message);
  }
}

void stream_free(ccv_nnc_stream_context_t* s) {
  if (!s) return;
  NNC_CHECK(t_current_stream != s, "ccv_nnc_stream_context_free: a stream cannot free itself from its own work");
  if (s->gpu) {
    try {
      gpu_sync(s);  // the destructor hooks run after the stream's work
    } catch (...) {
    }
    for (auto& [id, hook] : s->hooks) hook.first(s, hook.second);
    s->gpu_hooks->stream_free(s->gpu);
    std::free(s->workspace);
    delete s;
    return;
  }
  {
    std::unique_lock<std::mutex> lock(s->mutex);
    s->idle_cv.wait(lock, [&] { return s->pending == 0; });
    s->stop = true;
    s->work_cv.notify_all();
  }
  s->worker.join();
  for (auto& [id, hook] : s->hooks) hook.first(s, hook.second);
  std::free(s->workspace);
  delete s;
}

int stream_type(const ccv_nnc_stream_context_t* s) {
  check_stream(s, "ccv_nnc_stream_context_type");
  return s->type;
}

void* stream_get_workspace(ccv_nnc_stream_context_t* s, size_t size, int mem) {
  NNC_CHECK(mem == CCV_TENSOR_CPU_MEMORY || mem == CCV_TENSOR_GPU_MEMORY,
            "ccv_nnc_stream_context_get_workspace: mem 0x%x is neither CCV_TENSOR_CPU_MEMORY nor _GPU_MEMORY", mem);
  if (mem == CCV_TENSOR_GPU_MEMORY) {
    NNC_CHECK(s && s->gpu,
              "ccv_nnc_stream_context_get_workspace: GPU memory comes only from a GPU stream context (this one is %s)",
              s ? "a CPU stream context" : "NULL");
    return s->gpu_hooks->workspace(s->gpu, size);
  }
  if (!s) return workspace(nullptr, size);
  if (t_current_stream == s) return grow(s->workspace, s->workspace_size, size);
  // From another thread: growing would free the buffer a queued or running
  // kernel uses. Only an idle stream (nothing queued, nothing running) lends it.
  std::lock_guard<std::mutex> lock(s->mutex);
  NNC_CHECK(s->pending == 0,
            "ccv_nnc_stream_context_get_workspace: the stream has %zu commands queued or running; call it from the "
            "stream's own work or after ccv_nnc_stream_context_wait",
            s->pending);
  return grow(s->workspace, s->workspace_size, size);
}

void stream_drain(ccv_nnc_stream_context_t* s) {
  check_stream(s, "ccv_nnc_stream_context_drain");
  if (s->gpu) s->gpu_hooks->drain(s->gpu);
  stream_enqueue(s, [s]() {
    std::free(s->workspace);
    s->workspace = nullptr;
    s->workspace_size = 0;
    return CCV_NNC_EXEC_SUCCESS;
  });
}

void stream_add_callback(ccv_nnc_stream_context_t* s, ccv_nnc_callback_f callback, void* context) {
  check_stream(s, "ccv_nnc_stream_context_add_callback");
  NNC_CHECK(callback, "ccv_nnc_stream_context_add_callback: callback is NULL");
  stream_enqueue(s, [callback, context]() {
    callback(context);
    return CCV_NNC_EXEC_SUCCESS;
  });
}

int stream_add_destructor_hook(ccv_nnc_stream_context_t* s, ccv_nnc_stream_context_destructor_f f, void* context) {
  check_stream(s, "ccv_nnc_stream_context_add_destructor_hook");
  NNC_CHECK(f, "ccv_nnc_stream_context_add_destructor_hook: destructor is NULL");
  std::lock_guard<std::mutex> lock(s->mutex);
  const int id = s->next_hook++;
  s->hooks.push_back({id, {f, context}});
  return id;
}

void stream_remove_destructor_hook(ccv_nnc_stream_context_t* s, int id) {
  check_stream(s, "ccv_nnc_stream_context_remove_destructor_hook");
  std::lock_guard<std::mutex> lock(s->mutex);
  auto it = std::find_if(s->hooks.begin(), s->hooks.end(), [&](const auto& h) { return h.first == id; });
  NNC_CHECK(it != s->hooks.end(), "ccv_nnc_stream_context_remove_destructor_hook: no hook with id %d", id);
  s->hooks.erase(it);
}

namespace {
std::mutex g_rng_mutex;
std::mt19937& default_rng() {
  static std::mt19937 rng(0x9e3779b9u);
  return rng;
}
}  // namespace

void stream_set_seed(ccv_nnc_stream_context_t* s, uint32_t seed) {
  if (!s) {
    std::lock_guard<std::mutex> lock(g_rng_mutex);
    default_rng().seed(seed);
    return;
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  s->rng.seed(seed);
}

uint32_t stream_genrand(ccv_nnc_stream_context_t* s) {
  if (!s) {
    std::lock_guard<std::mutex> lock(g_rng_mutex);
    return static_cast<uint32_t>(default_rng()());
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  return static_cast<uint32_t>(s->rng());
}

void stream_set_neighbor_discovery(ccv_nnc_stream_context_t* s, ccv_nnc_stream_context_neighbor_discovery_f f,
                                   void* context) {
  check_stream(s, "ccv_nnc_stream_context_set_neighbor_discovery");
  s->discovery = f;
  s->discovery_context = context;
}

ccv_nnc_stream_context_t* stream_find_neighbor(ccv_nnc_stream_context_t* s, int device_id) {
  check_stream(s, "ccv_nnc_stream_context_find_neighbor");
  if (!s->discovery) return nullptr;
  return s->discovery(device_id, s->discovery_context);
}

ccv_nnc_stream_signal_t* signal_new(int type) {
  const int context = CCV_STREAM_GET_CONTEXT(type);
  NNC_CHECK(context == CCV_STREAM_CONTEXT_CPU || context == CCV_STREAM_CONTEXT_GPU,
            "ccv_nnc_stream_signal_new: type 0x%x is neither CCV_STREAM_CONTEXT_CPU nor _GPU", type);
  if (context == CCV_STREAM_CONTEXT_GPU) (void)registry();  // installs the CUDA module's hooks
  if (context == CCV_STREAM_CONTEXT_GPU && !gpu_stream_hooks())
    fail(CCV_NNC_EXEC_NO_KERNEL,
         "ccv_nnc_stream_signal_new: GPU signals need the CUDA module, which this build lacks (built without CUDA)");
  auto signal = std::make_unique<ccv_nnc_stream_signal_s>();
  signal->type = type;
  signal->state = std::make_shared<SignalState>();
  return signal.release();
}

void signal_free(ccv_nnc_stream_signal_t* signal) { delete signal; }

int signal_type(const ccv_nnc_stream_signal_t* signal) {
  NNC_CHECK(signal, "ccv_nnc_stream_signal_type: signal is NULL");
  return signal->type;
}

void signal_emit(ccv_nnc_stream_context_t* s, ccv_nnc_stream_signal_t* signal) {
  NNC_CHECK(signal, "ccv_nnc_stream_context_emit_signal: signal is NULL");
  std::shared_ptr<SignalState> state = signal->state;
  if (s && s->gpu) {
    // The event of the previous emit is kept unless something else holds it
    // (a CPU stream's pending wait does): re-recording it does not change what
    // a device-side wait issued earlier waits for.
    std::lock_guard<std::mutex> lock(state->mutex);
    std::shared_ptr<GpuEvent>& held = state->event;
    if (!held || held.use_count() > 1 || held->hooks != s->gpu_hooks || held->device != s->device)
      held = std::make_shared<GpuEvent>(s->gpu_hooks, s->device);
    s->gpu_hooks->event_record(held->event, s->gpu);
    state->emitter = s;
    ++state->emitted;  // waiters of earlier CPU emits still wait for their own generation
    return;
  }
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    generation = ++state->emitted;
    state->emitter = s;
    state->event.reset();
  }
  auto reach = [state, generation]() {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->reached = std::max(state->reached, generation);
    state->cv.notify_all();
    return CCV_NNC_EXEC_SUCCESS;
  };
  if (!s) {
    reach();
    return;
  }
  stream_enqueue(s, reach);
}

ccv_nnc_stream_signal_t* signal_emit_new(ccv_nnc_stream_context_t* s) {
  check_stream(s, "ccv_nnc_stream_context_emit_signal_new");
  if (!s->own_signal) s->own_signal.reset(signal_new(s->type));
  signal_emit(s, s->own_signal.get());
  return s->own_signal.get();
}

void signal_wait(const ccv_nnc_stream_context_t* cs, const ccv_nnc_stream_signal_t* signal) {
  NNC_CHECK(signal, "ccv_nnc_stream_context_wait_signal: signal is NULL");
  std::shared_ptr<SignalState> state = signal->state;
  auto* waiter = const_cast<ccv_nnc_stream_context_t*>(cs);
  uint64_t target;
  std::shared_ptr<GpuEvent> event;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    target = state->emitted;
    event = state->event;
  }
  if (event) {  // the latest emit was on a GPU stream
    if (waiter && waiter->gpu) {
      waiter->gpu_hooks->stream_wait_event(waiter->gpu, event->event);
      return;
    }
    if (!waiter) {
      event->hooks->event_sync(event->event);
      return;
    }
    stream_enqueue(waiter, [event]() {
      event->hooks->event_sync(event->event);
      return CCV_NNC_EXEC_SUCCESS;
    });
    return;
  }
  auto block = [state, target]() {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->cv.wait(lock, [&] { return state->reached >= target; });
    return CCV_NNC_EXEC_SUCCESS;
  };
  // NULL, or a GPU stream whose later work this caller queues: block here.
  if (!waiter || waiter->gpu) {
    block();
    return;
  }
  stream_enqueue(waiter, block);
}

ccv_nnc_stream_context_t* signal_emitter(const ccv_nnc_stream_signal_t* signal) {
  NNC_CHECK(signal, "ccv_nnc_stream_signal_get_emitter: signal is NULL");
  std::lock_guard<std::mutex> lock(signal->state->mutex);
  return signal->state->emitter;
}

}  // namespace nnc
