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
// A run gives each stream its list as one task; a wait spins on nothing: it
// blocks on an atomic flag set by the node it waits for. A failing or
// cancelled node still sets its flag, so no stream waits forever, and the
// first failure is what the run reports.
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

Schedule make_schedule(Graph* g, int stream_type, int max_stream_count, const ccv_nnc_graph_exec_t* sources,
                       int source_size, const ccv_nnc_graph_exec_t* destinations, int destination_size) {
  NNC_CHECK(g, "ccv_nnc_graph_static_schedule_new: graph is NULL");
  NNC_CHECK(max_stream_count >= 1 && max_stream_count <= 64,
            "ccv_nnc_graph_static_schedule_new: max_stream_count %d is outside [1, 64]", max_stream_count);
  const int context = CCV_STREAM_GET_CONTEXT(stream_type);
  if (context == CCV_STREAM_CONTEXT_GPU)
    fail(CCV_NNC_EXEC_NO_KERNEL,
         "ccv_nnc_graph_static_schedule_new: static schedules over several GPU streams are not implemented yet; run "
         "the graph on one GPU stream context (ccv_nnc_graph_run with it) instead");
  NNC_CHECK(context == CCV_STREAM_CONTEXT_CPU,
            "ccv_nnc_graph_static_schedule_new: stream type 0x%x is neither CCV_STREAM_CONTEXT_CPU nor _GPU", stream_type);
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
  std::vector<int> last(1, -1), load(1, 0);  // stream 0 always exists
  for (size_t p = 0; p < n; p++) {
    int chosen = exclusive(g, s.order[p]) ? 0 : -1;
    // Prefer the predecessor placed last (the one most likely finished last).
    int best = -1;
    for (int u : chosen < 0 ? preds[p] : std::vector<int>{})
      if (last[static_cast<size_t>(s.stream_of[static_cast<size_t>(u)])] == u && u > best) {
        best = u;
        chosen = s.stream_of[static_cast<size_t>(u)];
      }
    if (chosen < 0 && last[0] < 0 && static_cast<int>(p) == 0) chosen = 0;
    if (chosen < 0) {
      if (static_cast<int>(last.size()) < max_stream_count) {
        chosen = static_cast<int>(last.size());
        last.push_back(-1);
        load.push_back(0);
      } else {
        chosen = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      }
    }
    s.stream_of[p] = chosen;
    last[static_cast<size_t>(chosen)] = static_cast<int>(p);
    load[static_cast<size_t>(chosen)]++;
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
void run_sync(Graph* g, const Schedule& s, ccv_nnc_tensor_tape_t* tape, ccv_nnc_stream_context_t* own) {
  RunState state(s.order.size());
  const int others = s.stream_count - 1;
  for (int k = 1; k < s.stream_count; k++) {
    ccv_nnc_stream_context_t* stream = g->streams->s[static_cast<size_t>(k)];
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

void ensure_streams(Graph* g, int type, int count) {
  if (!g->streams) {
    g->streams = std::make_unique<Streams>();
    g->streams->type = type;
  }
  while (static_cast<int>(g->streams->s.size()) < count) g->streams->s.push_back(stream_new(g->streams->type));
}

}  // namespace

int run_schedule(Graph* g, const Schedule& s, ccv_nnc_tensor_tape_t* tape, ccv_nnc_stream_context_t* caller) {
  NNC_CHECK(s.graph == g, "ccv_nnc_graph_run_with_schedule: the schedule was made for another graph");
  NNC_CHECK(s.version == g->version,
            "ccv_nnc_graph_run_with_schedule: the graph changed after the schedule was made; make a new one");
  ensure_streams(g, s.stream_type, s.stream_count);
  for (int k = 1; k < s.stream_count; k++)
    NNC_CHECK(caller != g->streams->s[static_cast<size_t>(k)],
              "ccv_nnc_graph_run: the caller's stream is one of the graph's own streams other than its default");
  g->cancelled.store(false);
  if (!s.plan || s.plan->plan_version != g->plan_version) s.plan = make_plan(g, s.order);
  // Multi-views of the top graph are bound before any stream starts.
  bind_multiviews(g, 0);
  if (!caller || is_gpu_stream(caller)) {
    // A GPU caller: the lists signal each other from the host, which a node
    // only queued on a device stream would not honour; run after its work.
    host_sync(caller);
    run_sync(g, s, tape, nullptr);
    return CCV_NNC_EXEC_SUCCESS;
  }
  stream_enqueue(caller, [g, &s, tape, caller]() {
    return guard_code([&] {
      run_sync(g, s, tape, caller);
      return CCV_NNC_EXEC_SUCCESS;
    });
  });
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::graph
