// The concrete graph (Level 2): nodes over concrete tensors, edges, and the
// run order. The order between given sources and destinations is computed
// once and cached until the graph changes, so a run is a loop over a vector.
//
// A node is a command, a while loop (one owned sub-graph run until its
// expression says stop) or a case..of (owned branch sub-graphs, one chosen
// per run by an expression). Each command node caches the kernel chosen and
// the shapes it was validated with; a run re-validates a node only when the
// tensors it sees differ from those (a multi-view tensor that now points at a
// tensor of another shape, or a tensor the caller changed).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/cmd.hpp"
#include "nnc/ccv_nnc.h"
#include "core/live.hpp"

namespace nnc::graph {
struct Schedule;
struct Streams;
struct Plan;
}  // namespace nnc::graph

struct ccv_nnc_graph_s {
  enum class Kind : uint8_t { Command, While, CaseOf };
  struct Node {
    ccv_nnc_cmd_t cmd;
    ccv_nnc_hint_t hint;
    std::vector<ccv_nnc_tensor_t*> inputs;
    std::vector<ccv_nnc_tensor_t*> outputs;
    std::vector<int> outgoing;  // indices of nodes ordered after this one
    Kind kind = Kind::Command;
    // While: subs[0] is the loop body. CaseOf: subs[i] is branch i (NULL
    // where none is set). Owned.
    std::vector<ccv_nnc_graph_s*> subs;
    ccv_nnc_graph_case_of_f case_of = nullptr;
    const void* case_of_data = nullptr;
    int case_of_offset = 0;
    std::vector<int> input_flags, output_flags;
    int pair = -1;                            // the forward node of a backward node
    std::vector<ccv_nnc_tensor_t*> affected;  // tensors updated along with this node
    bool has_multiview = false;               // some input or output is a multi-view tensor
  };
  std::vector<Node> nodes;
  std::vector<ccv_nnc_graph_exec_t> sources, destinations;  // defaults set by the caller
  // Cache of the default run (sources and destinations both defaults).
  bool order_valid = false;
  std::vector<int> default_order;
  // For a loop body: the default order split at the breakpoints (the
  // breakpoints and what they need, then the rest).
  std::vector<int> loop_head, loop_tail;
  // Compact run plans for the default order and a loop body's two parts
  // (built on first use after a change).
  std::unique_ptr<nnc::graph::Plan> default_plan, head_plan, tail_plan;
  // Plans of runs given explicit sources or destinations, keyed by the arrays
  // as passed (the most recent first, a few kept): a program that runs the
  // same sub-range again pays for its order and plan once, like the default.
  struct RangePlan {
    std::vector<ccv_nnc_graph_exec_t> sources, destinations;
    std::shared_ptr<nnc::graph::Plan> plan;
  };
  std::vector<RangePlan> range_plans;
  uint64_t version = 0;       // bumped by every change of structure (schedules check it)
  uint64_t plan_version = 0;  // bumped by every change at all (plans check it)

  // A sub-graph knows its place.
  ccv_nnc_graph_s* parent = nullptr;
  int exec_in_parent = -1;

  // While loops: the expression, its inputs, where it is evaluated, the
  // counter it sees through ccv_nnc_tensor_for_while_count, carried tensors.
  ccv_nnc_graph_while_f while_expr = nullptr;
  const void* while_data = nullptr;
  std::vector<ccv_nnc_tensor_t*> while_inputs;
  std::vector<int> breakpoints;
  int64_t loop_count = 0;
  std::vector<std::pair<const ccv_nnc_tensor_t*, const ccv_nnc_tensor_t*>> carry_overs;  // (from, to)
  uint64_t carry_copies = 0;  // bytes-moving carries done (0 when multi-views bind them)

  // Multi-view tensors anchored to this graph that nodes of this graph or its
  // sub-graphs reach (found when the graph is first run after a change).
  bool multiviews_valid = false;
  std::vector<ccv_nnc_tensor_multiview_t*> multiviews;

  std::atomic<bool> cancelled{false};

  // What the nodes' commands point at and this graph keeps alive (the tapes
  // of differentiated loops, see lib/symbolic/loop_tape.hpp).
  std::vector<std::shared_ptr<void>> owned;

  // Static schedules and the streams they run on.
  std::unique_ptr<nnc::graph::Schedule> default_schedule;
  // A run without a stream of a graph whose nodes use GPU memory queues the
  // default order on one GPU stream per device (this schedule, made on first
  // use) and waits once at the end, instead of after every kernel.
  std::unique_ptr<nnc::graph::Schedule> gpu_schedule;
  bool gpu_schedule_checked = false;  // whether gpu_schedule is current (NULL: no GPU node)
  std::unique_ptr<nnc::graph::Streams> streams;

  ccv_nnc_graph_s();
  ~ccv_nnc_graph_s();
  nnc::LiveCounter<CCV_NNC_LIVE_GRAPH> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::graph {

using Graph = ccv_nnc_graph_s;

Graph::Node& node_of(Graph* g, const ccv_nnc_graph_exec_t& exec, const char* what);
ccv_nnc_graph_exec_t exec_new(Graph* g, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint,
                              ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                              int output_size);
void set_io(Graph* g, const ccv_nnc_graph_exec_t& exec, ccv_nnc_tensor_t* const* inputs, int input_size,
            ccv_nnc_tensor_t* const* outputs, int output_size);
void concat(Graph* g, const ccv_nnc_graph_exec_t& source, const ccv_nnc_graph_exec_t& destination);
void disjoin(Graph* g, const ccv_nnc_graph_exec_t& source, const ccv_nnc_graph_exec_t& destination);
// Forget cached orders, schedules and plans (after a change of structure).
void invalidate(Graph* g);
// Forget cached plans only (a node's command, hint or tensors changed).
void invalidate_plans(Graph* g);
// Forget what depends on the default sources and destinations (they changed).
void invalidate_defaults(Graph* g);
// The plan of a run from the given sources to the given destinations (either
// may be empty for the defaults, not both), from the graph's cache or made.
std::shared_ptr<Plan> range_plan(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size,
                                 const ccv_nnc_graph_exec_t* destinations, int destination_size);
// Nodes to run, in order, for the given (or default) sources and destinations.
std::vector<int> run_order(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size,
                           const ccv_nnc_graph_exec_t* destinations, int destination_size);
// Topological order (smallest index first) of the nodes marked in keep.
std::vector<int> topological(const Graph* g, const std::vector<char>& keep);
void topsort(Graph* g, int* exec_cvt, int exec_cvt_size);
void dot(const Graph* g, int flags, FILE* out);

// Sub-graphs (run.cpp).
ccv_nnc_graph_exec_t while_new(Graph* g, uint32_t cmd, Graph* body);
void set_while_expr(Graph* body, ccv_nnc_graph_while_f expr, const void* data, ccv_nnc_tensor_t* const* inputs,
                    int input_size, const ccv_nnc_graph_exec_t* breakpoints, int breakpoint_size);
ccv_nnc_graph_exec_t case_of_new(Graph* g, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                 ccv_nnc_tensor_t* const* outputs, int output_size);
void set_case_of_expr(Graph* g, const ccv_nnc_graph_exec_t& exec, ccv_nnc_graph_case_of_f expr, const void* data,
                      int offset);
void set_case_of(Graph* g, const ccv_nnc_graph_exec_t& exec, Graph* branch, int index);
void add_carry_over(Graph* g, const ccv_nnc_tensor_t* from, const ccv_nnc_tensor_t* to);

// The tensor a node sees for t: t itself, or what a multi-view currently
// points at (NULL if a multi-view is not bound yet).
inline ccv_nnc_tensor_t* resolve(ccv_nnc_tensor_t* t) {
  while (t && CCV_IS_TENSOR_MULTIVIEW(t)) t = reinterpret_cast<ccv_nnc_tensor_multiview_t*>(t)->it;
  return t;
}

// A run plan: the nodes of one order as a flat array of steps holding what a
// run touches (kernel, interned command and hint, tensor pointers, interned
// parameters seen at preparation), so that a run streams through a few
// contiguous arrays instead of the node records.
struct CmdHint {
  ccv_nnc_cmd_t cmd;
  ccv_nnc_hint_t hint;
};
struct Step {
  ccv_nnc_cmd_exec_f exec = nullptr;  // NULL: a NOOP (when prepared)
  const CmdHint* ch = nullptr;        // command and the hint to pass (derived for windows)
  uint32_t io = 0;                    // first of ni + no tensors in Plan::io / Plan::seen
  uint16_t ni = 0, no = 0;
  int node = 0;
  Graph::Kind kind = Graph::Kind::Command;
  bool has_multiview = false;
  bool prepared = false;
  bool device = false;  // a GPU kernel (PreparedExec::device): no host wait before it on a GPU stream
  uint32_t backend = 0;  // the kernel's backend (PreparedExec::backend)
};
struct Plan {
  uint64_t plan_version = 0;  // the graph's plan_version when made
  std::vector<Step> steps;
  std::vector<ccv_nnc_tensor_t*> io;
  std::vector<const ccv_nnc_tensor_param_t*> seen;
  struct Interned;
  std::unique_ptr<Interned> interned;
  Plan();
  ~Plan();
};
std::unique_ptr<Plan> make_plan(const Graph* g, const std::vector<int>& order);

// Running (run.cpp).
int run(Graph* g, int flags, const ccv_nnc_graph_exec_t* sources, int source_size,
        const ccv_nnc_graph_exec_t* destinations, int destination_size, ccv_nnc_tensor_tape_t* tape,
        ccv_nnc_stream_context_t* stream);
struct RunContext;
// The plan of g's default order (made if needed).
Plan& default_plan(Graph* g);
// Runs a plan of g on the calling thread, binding g's multi-views for round 0 first.
void run_plan(Graph* g, Plan& plan, RunContext& ctx);
// Runs one step of a plan.
void run_position(Graph* g, Plan& plan, size_t position, RunContext& ctx);

}  // namespace nnc::graph
