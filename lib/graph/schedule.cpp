// Static schedules: nodes placed on streams once, run many times.
//
// Placement walks a topological order. A node whose kernel uses the whole
// machine under the compute lock (Kernel::exclusive: OpenBLAS GEMM and the
// like) goes to stream 0: such nodes never overlap, so spreading them only
// adds waits and cache traffic. Any other node continues the stream of a
// predecessor that was the last node placed there (a chain stays on one
// stream); otherwise it opens a new stream while fewer than the maximum are
// open, or joins the least loaded one. Every edge between streams becomes a
// wait, dropped when the waiting stream already waited for that node or a
// later one on the same stream (a stream runs its nodes in order).
//
// A run on CPU streams gives each stream its list as one task; a wait spins
// on nothing: it blocks on an atomic flag set by the node it waits for. A
// failing or cancelled node still sets its flag, so no stream waits forever,
// and the first failure is what the run reports.
//
// A run on GPU streams has no worker threads: the calling thread walks the
// topological order once and queues each node on its stream (a device kernel
// only queues work; host code on a stream first waits for that stream's
// queued work, as on any GPU stream). A wait becomes a device-side wait for
// the signal (a CUDA event) the other stream emitted after the node waited
// for, so the host never blocks between streams. Streams other than 0 first
// wait for the caller's earlier work, and at the end the caller waits for
// them (without a caller, the host waits for every stream). If queueing a
// node fails, nothing more is queued; what was queued is waited for and the
// failure is reported.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream.hpp"
#include "graph/schedule.hpp"

namespace nnc::graph {

Streams::~Streams() {
  for (auto* s : this->s) stream_free(s);
}

Schedule::Signals::~Signals() {
  for (auto* v : {&position, &stream})
    for (auto* x : *v)
      if (x) signal_free(x);
}

namespace {
// Whether node v's kernel (for its tensors now) is exclusive; nodes that do
// not validate yet (multi-views, sub-graphs) are not.
bool exclusive(Graph* g, int v) {
  const Graph::Node& node = g->nodes[static_cast<size_t>(v)];
  if (node.kind != Graph::Kind::Command || node.has_multiview) return false;
  try {
    return prepare_exec(node.cmd, node.hint, 0, node.inputs.data(), static_cast<int>(node.inputs.size()),
                        node.outputs.data(), static_cast<int>(node.outputs.size()))
        .exclusive;
  } catch (const Error&) {
    return false;  // the run reports it
  }
}
}  // namespace

int node_device(Graph* g, int v, int fallback) {
  const Graph::Node& node = g->nodes[static_cast<size_t>(v)];
  for (const auto* list : {&node.inputs, &node.outputs})
    for (const ccv_nnc_tensor_t* t : *list)
      if (t && !CCV_IS_TENSOR_MULTIVIEW(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY)
        return CCV_TENSOR_GET_DEVICE_ID(t->info.type);
  return fallback;
}

Schedule make_schedule(Graph* g, int stream_type, int max_stream_count, const ccv_nnc_graph_exec_t* sources,
                       int source_size, const ccv_nnc_graph_exec_t* destinations, int destination_size) {
  NNC_CHECK(g, "ccv_nnc_graph_static_schedule_new: graph is NULL");
  NNC_CHECK(max_stream_count >= 1 && max_stream_count <= 64,
            "ccv_nnc_graph_static_schedule_new: max_stream_count %d is outside [1, 64]", max_stream_count);
  const int context = CCV_STREAM_GET_CONTEXT(stream_type);
  NNC_CHECK(context == CCV_STREAM_CONTEXT_CPU || context == CCV_STREAM_CONTEXT_GPU,
            "ccv_nnc_graph_static_schedule_new: stream type 0x%x is neither CCV_STREAM_CONTEXT_CPU nor _GPU", stream_type);
  if (context == CCV_STREAM_CONTEXT_GPU)
    NNC_CHECK(gpu_stream_hooks(),
              "ccv_nnc_graph_static_schedule_new: a schedule over GPU streams needs the CUDA module, which this build lacks "
              "(built without CUDA)");
  Schedule s;
  s.graph = g;
  s.stream_type = stream_type;
  s.order = run_order(g, sources, source_size, destinations, destination_size);
  s.version = g->version;
  const size_t n = s.order.size();
  std::vector<int> pos(g->nodes.size(), -1);
  for (size_t p = 0; p < n; p++) pos[static_cast<size_t>(s.order[p])] = static_cast<int>(p);
  std::vector<std::vector<int>> preds(n);  // positions
  for (size_t p = 0; p < n; p++)
    for (int w : g->nodes[static_cast<size_t>(s.order[p])].outgoing)
      if (pos[static_cast<size_t>(w)] >= 0) preds[static_cast<size_t>(pos[static_cast<size_t>(w)])].push_back(static_cast<int>(p));
  s.stream_of.assign(n, 0);
  // On GPU streams each node goes to a stream of the device its kernel runs
  // on; max_stream_count is per device (different devices run concurrently
  // anyway). Stream 0 is the schedule's own device's and always exists.
  const int home = context == CCV_STREAM_CONTEXT_GPU ? CCV_STREAM_GET_DEVICE_ID(stream_type) : 0;
  std::vector<int> last(1, -1), load(1, 0), device(1, home);
  for (size_t p = 0; p < n; p++) {
    const int dev = context == CCV_STREAM_CONTEXT_GPU ? node_device(g, s.order[p], home) : home;
    // On GPU streams nothing is exclusive: a node only queues device work.
    int chosen = context == CCV_STREAM_CONTEXT_CPU && exclusive(g, s.order[p]) ? 0 : -1;
    // Prefer the predecessor placed last (the one most likely finished last).
    int best = -1;
    for (int u : chosen < 0 ? preds[p] : std::vector<int>{}) {
      const int k = s.stream_of[static_cast<size_t>(u)];
      if (device[static_cast<size_t>(k)] == dev && last[static_cast<size_t>(k)] == u && u > best) {
        best = u;
        chosen = k;
      }
    }
    if (chosen < 0 && dev == home && last[0] < 0) chosen = 0;
    if (chosen < 0) {
      int on_device = 0, least = -1;
      for (size_t k = 0; k < last.size(); k++)
        if (device[k] == dev) {
          on_device++;
          if (least < 0 || load[k] < load[static_cast<size_t>(least)]) least = static_cast<int>(k);
        }
      if (on_device < max_stream_count) {
        NNC_CHECK(last.size() < 64, "ccv_nnc_graph_static_schedule_new: the schedule would need more than 64 streams");
        chosen = static_cast<int>(last.size());
        last.push_back(-1);
        load.push_back(0);
        device.push_back(dev);
      } else {
        chosen = least;
      }
    }
    s.stream_of[p] = chosen;
    last[static_cast<size_t>(chosen)] = static_cast<int>(p);
    load[static_cast<size_t>(chosen)]++;
  }
  s.stream_types.resize(device.size());
  for (size_t k = 0; k < device.size(); k++) {
    int type = stream_type;
    if (context == CCV_STREAM_CONTEXT_GPU) CCV_STREAM_SET_DEVICE_ID(type, device[k]);
    s.stream_types[k] = type;
  }
  s.stream_count = static_cast<int>(last.size());
  s.lists.assign(static_cast<size_t>(s.stream_count), {});
  s.waits.assign(n, {});
  s.signals.assign(n, 0);
  // known[a][b]: the latest position on stream b that stream a has waited for.
  std::vector<std::vector<int>> known(static_cast<size_t>(s.stream_count),
                                      std::vector<int>(static_cast<size_t>(s.stream_count), -1));
  for (size_t p = 0; p < n; p++) {
    const int a = s.stream_of[p];
    s.lists[static_cast<size_t>(a)].push_back(static_cast<int>(p));
    std::vector<int> ps = preds[p];
    std::sort(ps.begin(), ps.end(), std::greater<int>());
    for (int u : ps) {
      const int b = s.stream_of[static_cast<size_t>(u)];
      if (b == a || known[static_cast<size_t>(a)][static_cast<size_t>(b)] >= u) continue;
      known[static_cast<size_t>(a)][static_cast<size_t>(b)] = u;
      s.waits[p].push_back(u);
      s.signals[static_cast<size_t>(u)] = 1;
    }
  }
  return s;
}

namespace {

struct RunState {
  explicit RunState(size_t n) : done(n) {
    for (auto& d : done) d.store(0, std::memory_order_relaxed);
  }
  std::vector<std::atomic<uint32_t>> done;
  std::atomic<bool> failed{false};
  std::atomic<int> finished{0};
  std::mutex mutex;
  int code = CCV_NNC_EXEC_SUCCESS;
  std::string message;

  void record(int c, const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    if (code == CCV_NNC_EXEC_SUCCESS) {
      code = c;
      message = m;
    }
    failed.store(true);
  }
};

void run_list(Graph* g, const Schedule& s, int stream, RunState& state, ccv_nnc_tensor_tape_t* tape,
              ccv_nnc_stream_context_t* kernel_stream) {
  RunContext ctx;
  ctx.tape = tape;
  ctx.stream = kernel_stream;
  ctx.cancelled = &g->cancelled;
  for (int p : s.lists[static_cast<size_t>(stream)]) {
    for (int w : s.waits[static_cast<size_t>(p)]) {
      auto& flag = state.done[static_cast<size_t>(w)];
      while (!flag.load(std::memory_order_acquire)) flag.wait(0, std::memory_order_acquire);
    }
    if (!state.failed.load(std::memory_order_relaxed)) {
      try {
        if (g->cancelled.load(std::memory_order_relaxed))
          fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_graph_run: cancelled (ccv_nnc_graph_cancel)");
        run_position(g, *s.plan, static_cast<size_t>(p), ctx);
      } catch (const Error& e) {
        state.record(e.code(), e.what());
      } catch (const std::bad_alloc&) {
        state.record(CCV_NNC_EXEC_OOM, "ccv_nnc_graph_run: out of memory");
      } catch (const std::exception& e) {
        state.record(CCV_NNC_EXEC_INVALID, e.what());
      }
    }
    if (s.signals[static_cast<size_t>(p)]) {
      state.done[static_cast<size_t>(p)].store(1, std::memory_order_release);
      state.done[static_cast<size_t>(p)].notify_all();
    }
  }
}

// Runs the schedule on the calling thread (list 0) and the graph's streams.
void run_sync(Graph* g, const Schedule& s, const std::vector<ccv_nnc_stream_context_t*>& streams, ccv_nnc_tensor_tape_t* tape,
              ccv_nnc_stream_context_t* own) {
  RunState state(s.order.size());
  const int others = s.stream_count - 1;
  for (int k = 1; k < s.stream_count; k++) {
    ccv_nnc_stream_context_t* stream = streams[static_cast<size_t>(k)];
    stream_enqueue(stream, [g, &s, k, &state, tape, stream]() {
      run_list(g, s, k, state, tape, stream);
      state.finished.fetch_add(1, std::memory_order_release);
      state.finished.notify_all();
      return CCV_NNC_EXEC_SUCCESS;
    });
  }
  run_list(g, s, 0, state, tape, own);
  for (int f = state.finished.load(std::memory_order_acquire); f < others; f = state.finished.load(std::memory_order_acquire))
    state.finished.wait(f, std::memory_order_acquire);
  if (state.code != CCV_NNC_EXEC_SUCCESS) throw Error(state.code, state.message);
}

ccv_nnc_stream_signal_t* make_signal(std::vector<ccv_nnc_stream_signal_t*>& v, size_t i, int type) {
  if (!v[i]) v[i] = signal_new(type);
  return v[i];
}

// Queues the schedule on GPU streams: stream 0 is `caller` when that is a GPU
// stream, else the graph's first stream. Without a GPU caller the host waits
// for everything before returning.
void run_gpu(Graph* g, const Schedule& s, std::vector<ccv_nnc_stream_context_t*> streams, ccv_nnc_tensor_tape_t* tape,
             ccv_nnc_stream_context_t* caller) {
  const size_t n = s.order.size();
  const int count = s.stream_count;
  if (!s.gpu_signals) {
    auto sig = std::make_unique<Schedule::Signals>();
    sig->position.assign(n, nullptr);
    sig->stream.assign(static_cast<size_t>(count) + 1, nullptr);
    s.gpu_signals = std::move(sig);
  }
  Schedule::Signals& sig = *s.gpu_signals;
  if (caller) streams[0] = caller;
  // The other streams start after the caller's earlier work.
  if (caller && count > 1) {
    ccv_nnc_stream_signal_t* entry = make_signal(sig.stream, static_cast<size_t>(count), s.stream_type);
    signal_emit(caller, entry);
    for (int k = 1; k < count; k++) signal_wait(streams[static_cast<size_t>(k)], entry);
  }
  std::vector<RunContext> ctx(static_cast<size_t>(count));
  for (int k = 0; k < count; k++) {
    ctx[static_cast<size_t>(k)].tape = tape;
    ctx[static_cast<size_t>(k)].stream = streams[static_cast<size_t>(k)];
    ctx[static_cast<size_t>(k)].gpu_stream = true;
    ctx[static_cast<size_t>(k)].cancelled = &g->cancelled;
  }
  int code = CCV_NNC_EXEC_SUCCESS;
  std::string message;
  // Behind a caller, what the kernels find is the caller's to report (core/gpu_stream.hpp).
  const ErrorLogOwner log_owner(caller ? caller : error_log_owner());
  try {
    for (size_t p = 0; p < n; p++) {
      const int k = s.stream_of[p];
      ccv_nnc_stream_context_t* stream = streams[static_cast<size_t>(k)];
      for (int w : s.waits[p]) signal_wait(stream, sig.position[static_cast<size_t>(w)]);
      if (g->cancelled.load(std::memory_order_relaxed))
        fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_graph_run: cancelled (ccv_nnc_graph_cancel)");
      run_position(g, *s.plan, p, ctx[static_cast<size_t>(k)]);
      if (s.signals[p]) signal_emit(stream, make_signal(sig.position, p, s.stream_type));
    }
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = CCV_NNC_EXEC_OOM;
    message = "ccv_nnc_graph_run: out of memory";
  } catch (const std::exception& e) {
    code = CCV_NNC_EXEC_INVALID;
    message = e.what();
  }
  if (caller && code == CCV_NNC_EXEC_SUCCESS) {
    // The caller's later work starts after every stream's.
    for (int k = 1; k < count; k++) {
      ccv_nnc_stream_signal_t* exit = make_signal(sig.stream, static_cast<size_t>(k), s.stream_type);
      signal_emit(streams[static_cast<size_t>(k)], exit);
      signal_wait(caller, exit);
    }
    return;
  }
  // No caller, or a failure: the host waits for what was queued.
  for (int k = 0; k < count; k++) {
    try {
      host_sync(streams[static_cast<size_t>(k)]);
      stream_raise_failures(streams[static_cast<size_t>(k)]);  // bad input its kernels found (core/stream.hpp)
    } catch (const Error& e) {
      if (code == CCV_NNC_EXEC_SUCCESS) {
        code = e.code();
        message = e.what();
      }
    }
  }
  if (code != CCV_NNC_EXEC_SUCCESS) throw Error(code, message);
}

}  // namespace

std::vector<ccv_nnc_stream_context_t*> Streams::take(const std::vector<int>& want) {
  std::vector<ccv_nnc_stream_context_t*> r;
  std::vector<char> used(s.size(), 0);
  for (int type : want) {
    size_t i = 0;
    while (i < s.size() && (used[i] || types[i] != type)) i++;
    if (i == s.size()) {
      s.push_back(stream_new(type));
      types.push_back(type);
      used.push_back(0);
    }
    used[i] = 1;
    r.push_back(s[i]);
  }
  return r;
}

int run_schedule(Graph* g, const Schedule& s, ccv_nnc_tensor_tape_t* tape, ccv_nnc_stream_context_t* caller) {
  NNC_CHECK(s.graph == g, "ccv_nnc_graph_run_with_schedule: the schedule was made for another graph");
  NNC_CHECK(s.version == g->version,
            "ccv_nnc_graph_run_with_schedule: the graph changed after the schedule was made; make a new one");
  if (!g->streams) g->streams = std::make_unique<Streams>();
  const std::vector<ccv_nnc_stream_context_t*> streams = g->streams->take(s.stream_types);
  for (int k = 1; k < s.stream_count; k++)
    NNC_CHECK(caller != streams[static_cast<size_t>(k)],
              "ccv_nnc_graph_run: the caller's stream is one of the graph's own streams other than its default");
  if (s.gpu() && is_gpu_stream(caller))
    NNC_CHECK(gpu_stream_device(caller) == CCV_STREAM_GET_DEVICE_ID(s.stream_type),
              "ccv_nnc_graph_run: the caller's GPU stream is on device %d but the schedule's first stream is on device %d",
              gpu_stream_device(caller), CCV_STREAM_GET_DEVICE_ID(s.stream_type));
  g->cancelled.store(false);
  if (!s.plan || s.plan->plan_version != g->plan_version) s.plan = make_plan(g, s.order);
  // Multi-views of the top graph are bound before any stream starts.
  bind_multiviews(g, 0);
  if (s.gpu()) {
    if (!caller || is_gpu_stream(caller)) {
      run_gpu(g, s, streams, tape, caller);
      return CCV_NNC_EXEC_SUCCESS;
    }
    // A CPU stream: its task queues the GPU streams and waits for them.
    stream_enqueue(caller, [g, &s, streams, tape]() {
      return guard_code([&] {
        run_gpu(g, s, streams, tape, nullptr);
        return CCV_NNC_EXEC_SUCCESS;
      });
    });
    return CCV_NNC_EXEC_SUCCESS;
  }
  if (!caller || is_gpu_stream(caller)) {
    // A GPU caller: the lists signal each other from the host, which a node
    // only queued on a device stream would not honour; run after its work.
    host_sync(caller);
    run_sync(g, s, streams, tape, nullptr);
    return CCV_NNC_EXEC_SUCCESS;
  }
  stream_enqueue(caller, [g, &s, streams, tape, caller]() {
    return guard_code([&] {
      run_sync(g, s, streams, tape, caller);
      return CCV_NNC_EXEC_SUCCESS;
    });
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::graph
