// CPU streams and signals.
//
// A CPU stream is a queue of tasks and a worker thread that runs them in
// order. Signals are generation counters: emitting queues a task that raises
// the signal's "reached" generation; waiting queues a task that blocks the
// waiting stream's worker until the generation it saw at the wait call has
// been reached. Because generations only grow, a signal can be emitted again
// (or recycled, as emit_signal_new does) without confusing earlier waiters.
#include "core/stream.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/error.hpp"

struct SignalState {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t emitted = 0;  // generations handed out by emit calls
  uint64_t reached = 0;  // highest generation whose emit task has run
  ccv_nnc_stream_context_t* emitter = nullptr;
};

struct ccv_nnc_stream_signal_s {
  int type;
  std::shared_ptr<SignalState> state;
};

struct ccv_nnc_stream_context_s {
  int type = 0;
  std::mutex mutex;
  std::condition_variable work_cv;  // new task or stop
  std::condition_variable idle_cv;  // queue drained
  std::deque<std::function<int()>> queue;
  size_t pending = 0;  // queued plus running
  bool stop = false;
  std::thread worker;
  // First failure since the last wait.
  int error_code = CCV_NNC_EXEC_SUCCESS;
  std::string error_message;
  // Scratch memory, only touched from the worker (or with the queue empty).
  void* workspace = nullptr;
  size_t workspace_size = 0;
  std::mt19937 rng{0x9e3779b9u};
  std::vector<std::pair<int, std::pair<ccv_nnc_stream_context_destructor_f, void*>>> hooks;
  int next_hook = 0;
  ccv_nnc_stream_context_neighbor_discovery_f discovery = nullptr;
  void* discovery_context = nullptr;
  std::unique_ptr<ccv_nnc_stream_signal_s> own_signal;
};

namespace nnc {

namespace {

thread_local ccv_nnc_stream_context_t* t_current_stream = nullptr;
thread_local void* t_workspace = nullptr;
thread_local size_t t_workspace_size = 0;

struct ThreadWorkspace {
  ~ThreadWorkspace() { std::free(t_workspace); }
};
thread_local ThreadWorkspace t_workspace_owner;

void run_worker(ccv_nnc_stream_context_t* s) {
  t_current_stream = s;
  for (;;) {
    std::function<int()> task;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->work_cv.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) return;  // stop requested and nothing left
      task = std::move(s->queue.front());
      s->queue.pop_front();
    }
    int code = CCV_NNC_EXEC_SUCCESS;
    std::string message;
    clear_error_message();
    try {
      code = task();
      if (code != CCV_NNC_EXEC_SUCCESS) message = error_message();
    } catch (...) {
      code = record_current_exception();
      message = error_message();
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    if (code != CCV_NNC_EXEC_SUCCESS && s->error_code == CCV_NNC_EXEC_SUCCESS) {
      s->error_code = code;
      s->error_message = message.empty() ? format("a command on a stream failed with %d", code) : message;
    }
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

}  // namespace

void stream_enqueue(ccv_nnc_stream_context_t* s, std::function<int()> task) {
  check_stream(s, "stream_enqueue");
  std::lock_guard<std::mutex> lock(s->mutex);
  s->queue.push_back(std::move(task));
  s->pending++;
  s->work_cv.notify_one();
}

void* workspace(ccv_nnc_stream_context_t* stream, size_t size) {
  if (stream) return grow(stream->workspace, stream->workspace_size, size);
  return grow(t_workspace, t_workspace_size, size);
}

ccv_nnc_stream_context_t* stream_new(int type) {
  const int context = CCV_STREAM_GET_CONTEXT(type);
  NNC_CHECK(context == CCV_STREAM_CONTEXT_CPU || context == CCV_STREAM_CONTEXT_GPU,
            "ccv_nnc_stream_context_new: type 0x%x is neither CCV_STREAM_CONTEXT_CPU nor _GPU", type);
  if (context == CCV_STREAM_CONTEXT_GPU)
    fail(CCV_NNC_EXEC_NO_KERNEL, "ccv_nnc_stream_context_new: GPU streams need CUDA, which this build lacks");
  auto s = std::make_unique<ccv_nnc_stream_context_s>();
  s->type = type;
  s->worker = std::thread(run_worker, s.get());
  return s.release();
}

void stream_wait(const ccv_nnc_stream_context_t* cs) {
  check_stream(cs, "ccv_nnc_stream_context_wait");
  auto* s = const_cast<ccv_nnc_stream_context_t*>(cs);
  NNC_CHECK(t_current_stream != s, "ccv_nnc_stream_context_wait: a stream cannot wait for itself from its own work");
  std::unique_lock<std::mutex> lock(s->mutex);
  s->idle_cv.wait(lock, [&] { return s->pending == 0; });
  if (s->error_code != CCV_NNC_EXEC_SUCCESS) {
    const std::string message = s->error_message;
    const int code = s->error_code;
    s->error_code = CCV_NNC_EXEC_SUCCESS;
    s->error_message.clear();
    lock.unlock();
    throw Error(code, message);
  }
}

void stream_free(ccv_nnc_stream_context_t* s) {
  if (!s) return;
  NNC_CHECK(t_current_stream != s, "ccv_nnc_stream_context_free: a stream cannot free itself from its own work");
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
  NNC_CHECK(mem == CCV_TENSOR_CPU_MEMORY, "ccv_nnc_stream_context_get_workspace: only CPU memory in this build");
  if (!s) return workspace(nullptr, size);
  return grow(s->workspace, s->workspace_size, size);
}

void stream_drain(ccv_nnc_stream_context_t* s) {
  check_stream(s, "ccv_nnc_stream_context_drain");
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
  if (context == CCV_STREAM_CONTEXT_GPU)
    fail(CCV_NNC_EXEC_NO_KERNEL, "ccv_nnc_stream_signal_new: GPU signals need CUDA, which this build lacks");
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
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    generation = ++state->emitted;
    state->emitter = s;
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
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    target = state->emitted;
  }
  auto block = [state, target]() {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->cv.wait(lock, [&] { return state->reached >= target; });
    return CCV_NNC_EXEC_SUCCESS;
  };
  if (!cs) {
    block();
    return;
  }
  stream_enqueue(const_cast<ccv_nnc_stream_context_t*>(cs), block);
}

ccv_nnc_stream_context_t* signal_emitter(const ccv_nnc_stream_signal_t* signal) {
  NNC_CHECK(signal, "ccv_nnc_stream_signal_get_emitter: signal is NULL");
  std::lock_guard<std::mutex> lock(signal->state->mutex);
  return signal->state->emitter;
}

}  // namespace nnc
