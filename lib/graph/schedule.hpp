// Static scheduling of a graph's nodes onto streams, the run that follows a
// schedule, and the per-run state shared with run.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "core/live.hpp"

namespace nnc::graph {

// What a run carries down into loops and branches.
struct RunContext {
  ccv_nnc_tensor_tape_t* tape = nullptr;
  ccv_nnc_stream_context_t* stream = nullptr;  // passed to kernels
  bool gpu_stream = false;  // `stream` is a GPU stream context (core/gpu_stream.hpp)
  const std::atomic<bool>* cancelled = nullptr;
  std::vector<int64_t> rounds;  // rounds of the enclosing loops, outermost first
};

// Nodes placed on streams. Positions index `order`.
struct Schedule {
  const Graph* graph = nullptr;
  uint64_t version = 0;  // the graph's version when made
  int stream_type = 0;
  int stream_count = 0;
  std::vector<int> order;                // node indices in a topological order
  std::vector<int> stream_of;            // per position
  std::vector<int> stream_types;         // per stream (GPU: each with its device)
  std::vector<std::vector<int>> waits;   // per position: positions on other streams to wait for
  std::vector<char> signals;             // per position: someone waits for it
  std::vector<std::vector<int>> lists;   // per stream: its positions in order
  mutable std::unique_ptr<Plan> plan;    // steps of `order`, remade when the graph's plan_version moves
  // GPU schedules: one signal (a device event) per position that others wait
  // for, and one per stream for the run's entry and exit; made at the first run.
  struct Signals {
    std::vector<ccv_nnc_stream_signal_t*> position, stream;
    Signals() = default;
    Signals(const Signals&) = delete;
    Signals& operator=(const Signals&) = delete;
    ~Signals();
  };
  mutable std::unique_ptr<Signals> gpu_signals;
  bool gpu() const { return CCV_STREAM_GET_CONTEXT(stream_type) == CCV_STREAM_CONTEXT_GPU; }
};

// Streams a graph owns for its schedules, each of its own type (a GPU
// stream's type names its device).
struct Streams {
  std::vector<int> types;
  std::vector<ccv_nnc_stream_context_t*> s;
  // For a schedule's stream types: the first stream of each type for the
  // first stream of that type in the list, the second for the second, and so
  // on; made as needed.
  std::vector<ccv_nnc_stream_context_t*> take(const std::vector<int>& types);
  ~Streams();
};

// The GPU whose stream node v's kernel queues on: its first GPU input's (a
// transfer between devices runs on its source's), else its first GPU
// output's, else `fallback` (host nodes, sub-graphs).
int node_device(Graph* g, int v, int fallback);

Schedule make_schedule(Graph* g, int stream_type, int max_stream_count, const ccv_nnc_graph_exec_t* sources,
                       int source_size, const ccv_nnc_graph_exec_t* destinations, int destination_size);
// Runs a schedule: without a caller stream, stream 0's nodes on the calling
// thread and the others on the graph's streams, returning when all are done;
// with one, everything is queued behind the caller stream's work and the
// caller stream waits for the others. A GPU schedule is queued by the calling
// thread onto GPU streams (the caller's, when it is a GPU stream, as stream 0)
// with device-side waits between them; see schedule.cpp.
int run_schedule(Graph* g, const Schedule& s, ccv_nnc_tensor_tape_t* tape, ccv_nnc_stream_context_t* caller);

// Bind the multi-views anchored to g for round `round`.
void bind_multiviews(Graph* g, int64_t round);

}  // namespace nnc::graph

// The opaque public schedule.
struct ccv_nnc_graph_static_schedule_s {
  nnc::graph::Schedule s;
};

// The tape: numbers (loop round counts, branch choices) and kept tensor
// contents, keyed by graph, node and the rounds of the enclosing loops.
struct ccv_nnc_tensor_tape_s {
  struct Key {
    const void* graph;
    int exec;
    std::vector<int64_t> rounds;
    bool operator<(const Key& o) const {
      if (graph != o.graph) return graph < o.graph;
      if (exec != o.exec) return exec < o.exec;
      return rounds < o.rounds;
    }
  };
  std::map<Key, uint64_t> numbering;
  // Kept tensors: (tensor address, rounds) → bytes.
  std::map<std::pair<const void*, std::vector<int64_t>>, std::vector<uint8_t>> kept;
  std::map<const void*, std::vector<int64_t>> current;  // graph → its rounds now
  std::mutex mutex;  // runs on several streams record at once
  nnc::LiveCounter<CCV_NNC_LIVE_TENSOR_TAPE> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::graph {
// Internal tape interface (used by the run and by tests until autodiff exists).
void tape_record_number(ccv_nnc_tensor_tape_t* tape, const Graph* g, int exec, const std::vector<int64_t>& rounds,
                        uint64_t number);
bool tape_number(const ccv_nnc_tensor_tape_t* tape, const Graph* g, int exec, const std::vector<int64_t>& rounds,
                 uint64_t* number);
void tape_set_current(ccv_nnc_tensor_tape_t* tape, const Graph* g, const std::vector<int64_t>& rounds);
// Keep the contents of `contents` (a concrete tensor) as `key`'s (the tensor a
// node names, possibly a multi-view) at these rounds.
void tape_keep(ccv_nnc_tensor_tape_t* tape, const ccv_nnc_tensor_t* key, const ccv_nnc_tensor_t* contents,
               const std::vector<int64_t>& rounds);
// The contents kept for tensor at these rounds (NULL if none).
const std::vector<uint8_t>* tape_kept(const ccv_nnc_tensor_tape_t* tape, const ccv_nnc_tensor_t* tensor,
                                      const std::vector<int64_t>& rounds);
}  // namespace nnc::graph
