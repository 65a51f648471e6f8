#include "graph/graph.hpp"

#include "graph/schedule.hpp"

#include <algorithm>
#include <string>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

ccv_nnc_graph_s::ccv_nnc_graph_s() = default;
ccv_nnc_graph_s::~ccv_nnc_graph_s() {
  for (auto& node : nodes)
    for (ccv_nnc_graph_s* sub : node.subs) delete sub;
}

namespace nnc::graph {

namespace {

void check_io(const char* what, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
              int output_size) {
  NNC_CHECK(input_size >= 0 && output_size >= 0, "%s: negative tensor count (%d inputs, %d outputs)", what, input_size,
            output_size);
  NNC_CHECK(input_size == 0 || inputs, "%s: %d inputs but the input array is NULL", what, input_size);
  NNC_CHECK(output_size == 0 || outputs, "%s: %d outputs but the output array is NULL", what, output_size);
}

// Indices of the reference list, each checked to belong to g.
std::vector<int> indices(Graph* g, const ccv_nnc_graph_exec_t* execs, int size, const char* what) {
  NNC_CHECK(size >= 0, "%s: negative count %d", what, size);
  NNC_CHECK(size == 0 || execs, "%s: %d nodes but the array is NULL", what, size);
  std::vector<int> out;
  out.reserve(static_cast<size_t>(size));
  for (int i = 0; i < size; i++) {
    node_of(g, execs[i], what);
    out.push_back(execs[i].d);
  }
  return out;
}

// Nodes reachable from `from` following edges forward (or backward).
std::vector<char> reach(const Graph* g, const std::vector<int>& from, bool forward) {
  const size_t n = g->nodes.size();
  std::vector<std::vector<int>> incoming;
  if (!forward) {
    incoming.resize(n);
    for (size_t i = 0; i < n; i++)
      for (int j : g->nodes[i].outgoing) incoming[static_cast<size_t>(j)].push_back(static_cast<int>(i));
  }
  std::vector<char> seen(n, 0);
  std::vector<int> stack(from.begin(), from.end());
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(v)]) continue;
    seen[static_cast<size_t>(v)] = 1;
    const auto& next = forward ? g->nodes[static_cast<size_t>(v)].outgoing : incoming[static_cast<size_t>(v)];
    for (int w : next)
      if (!seen[static_cast<size_t>(w)]) stack.push_back(w);
  }
  return seen;
}

}  // namespace

// Kahn's algorithm over the nodes marked in `keep`, smallest index first among
// the ready ones (so the order is deterministic and follows creation order).
std::vector<int> topological(const Graph* g, const std::vector<char>& keep) {
  const size_t n = g->nodes.size();
  std::vector<int> indegree(n, 0);
  for (size_t i = 0; i < n; i++)
    if (keep[i])
      for (int j : g->nodes[i].outgoing)
        if (keep[static_cast<size_t>(j)]) indegree[static_cast<size_t>(j)]++;
  std::vector<int> ready;
  for (size_t i = 0; i < n; i++)
    if (keep[i] && indegree[i] == 0) ready.push_back(static_cast<int>(i));
  std::make_heap(ready.begin(), ready.end(), std::greater<int>());
  std::vector<int> order;
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<int>());
    const int v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (int w : g->nodes[static_cast<size_t>(v)].outgoing)
      if (keep[static_cast<size_t>(w)] && --indegree[static_cast<size_t>(w)] == 0) {
        ready.push_back(w);
        std::push_heap(ready.begin(), ready.end(), std::greater<int>());
      }
  }
  return order;
}

void invalidate(Graph* g) {
  g->order_valid = false;
  g->default_order.clear();
  g->loop_head.clear();
  g->loop_tail.clear();
  g->version++;
  g->default_schedule.reset();
  g->gpu_schedule.reset();
  g->gpu_schedule_checked = false;
  invalidate_plans(g);
  for (Graph* p = g; p; p = p->parent) p->multiviews_valid = false;
}

void invalidate_plans(Graph* g) {
  g->plan_version++;
  g->default_plan.reset();
  g->head_plan.reset();
  g->tail_plan.reset();
  g->range_plans.clear();
  for (Graph* p = g; p; p = p->parent) p->multiviews_valid = false;
}

void invalidate_defaults(Graph* g) {
  g->order_valid = false;
  g->default_order.clear();
  g->loop_head.clear();
  g->loop_tail.clear();
  g->default_plan.reset();
  g->head_plan.reset();
  g->tail_plan.reset();
  // A range with one side left empty uses the default of that side.
  g->range_plans.clear();
  g->default_schedule.reset();
  g->gpu_schedule.reset();
  g->gpu_schedule_checked = false;
}

std::shared_ptr<Plan> range_plan(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size,
                                 const ccv_nnc_graph_exec_t* destinations, int destination_size) {
  constexpr size_t kKept = 8;
  auto same = [](const std::vector<ccv_nnc_graph_exec_t>& kept, const ccv_nnc_graph_exec_t* given, int size) {
    if (kept.size() != static_cast<size_t>(size)) return false;
    for (int i = 0; i < size; i++)
      if (kept[static_cast<size_t>(i)].d != given[i].d || kept[static_cast<size_t>(i)].graph != given[i].graph) return false;
    return true;
  };
  // Sizes are checked by run_order on a miss; a hit only matches arrays that passed.
  if (source_size >= 0 && destination_size >= 0 && (source_size == 0 || sources) && (destination_size == 0 || destinations))
    for (auto& r : g->range_plans)
      if (same(r.sources, sources, source_size) && same(r.destinations, destinations, destination_size)) return r.plan;
  std::shared_ptr<Plan> plan = make_plan(g, run_order(g, sources, source_size, destinations, destination_size));
  Graph::RangePlan r;
  r.sources.assign(sources, sources + source_size);
  r.destinations.assign(destinations, destinations + destination_size);
  r.plan = plan;
  if (g->range_plans.size() >= kKept) g->range_plans.pop_back();
  g->range_plans.insert(g->range_plans.begin(), std::move(r));
  return plan;
}

namespace {
bool any_multiview(const std::vector<ccv_nnc_tensor_t*>& ts) {
  for (const ccv_nnc_tensor_t* t : ts)
    if (t && CCV_IS_TENSOR_MULTIVIEW(t)) return true;
  return false;
}
}  // namespace

Graph::Node& node_of(Graph* g, const ccv_nnc_graph_exec_t& exec, const char* what) {
  NNC_CHECK(g, "%s: graph is NULL", what);
  NNC_CHECK(exec.graph == g, "%s: node %d belongs to %s graph", what, exec.d, exec.graph ? "another" : "no");
  NNC_CHECK(exec.d >= 0 && static_cast<size_t>(exec.d) < g->nodes.size(), "%s: node %d does not exist (%zu nodes)",
            what, exec.d, g->nodes.size());
  return g->nodes[static_cast<size_t>(exec.d)];
}

ccv_nnc_graph_exec_t exec_new(Graph* g, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint,
                              ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                              int output_size) {
  NNC_CHECK(g, "ccv_nnc_graph_exec_new: graph is NULL");
  check_io("ccv_nnc_graph_exec_new", inputs, input_size, outputs, output_size);
  NNC_CHECK(g->nodes.size() < static_cast<size_t>(INT32_MAX), "ccv_nnc_graph_exec_new: too many nodes");
  Graph::Node node;
  node.cmd = cmd;
  node.hint = hint;
  node.inputs.assign(inputs, inputs + input_size);
  node.outputs.assign(outputs, outputs + output_size);
  node.has_multiview = any_multiview(node.inputs) || any_multiview(node.outputs);
  g->nodes.push_back(std::move(node));
  invalidate(g);
  return ccv_nnc_graph_exec_t{static_cast<int32_t>(g->nodes.size() - 1), g};
}

void set_io(Graph* g, const ccv_nnc_graph_exec_t& exec, ccv_nnc_tensor_t* const* inputs, int input_size,
            ccv_nnc_tensor_t* const* outputs, int output_size) {
  Graph::Node& node = node_of(g, exec, "ccv_nnc_graph_exec_set_io");
  check_io("ccv_nnc_graph_exec_set_io", inputs, input_size, outputs, output_size);
  node.inputs.assign(inputs, inputs + input_size);
  node.outputs.assign(outputs, outputs + output_size);
  node.has_multiview = any_multiview(node.inputs) || any_multiview(node.outputs);
  node.input_flags.clear();
  node.output_flags.clear();
  invalidate_plans(g);
}

void concat(Graph* g, const ccv_nnc_graph_exec_t& source, const ccv_nnc_graph_exec_t& destination) {
  Graph::Node& s = node_of(g, source, "ccv_nnc_graph_exec_concat: source");
  node_of(g, destination, "ccv_nnc_graph_exec_concat: destination");
  NNC_CHECK(source.d != destination.d, "ccv_nnc_graph_exec_concat: node %d cannot follow itself", source.d);
  if (std::find(s.outgoing.begin(), s.outgoing.end(), destination.d) != s.outgoing.end()) return;
  // The edge closes a cycle iff the source is already reachable from the destination.
  const std::vector<char> after = reach(g, {destination.d}, true);
  NNC_CHECK(!after[static_cast<size_t>(source.d)],
            "ccv_nnc_graph_exec_concat: an edge from node %d to node %d would make a cycle (%d already runs after %d)",
            source.d, destination.d, source.d, destination.d);
  s.outgoing.push_back(destination.d);
  invalidate(g);
}

void disjoin(Graph* g, const ccv_nnc_graph_exec_t& source, const ccv_nnc_graph_exec_t& destination) {
  Graph::Node& s = node_of(g, source, "ccv_nnc_graph_exec_disjoin: source");
  node_of(g, destination, "ccv_nnc_graph_exec_disjoin: destination");
  auto it = std::find(s.outgoing.begin(), s.outgoing.end(), destination.d);
  NNC_CHECK(it != s.outgoing.end(), "ccv_nnc_graph_exec_disjoin: there is no edge from node %d to node %d", source.d,
            destination.d);
  s.outgoing.erase(it);
  invalidate(g);
}

std::vector<int> run_order(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size,
                           const ccv_nnc_graph_exec_t* destinations, int destination_size) {
  const bool defaults = source_size == 0 && destination_size == 0;
  if (defaults && g->order_valid) return g->default_order;
  std::vector<int> from = source_size ? indices(g, sources, source_size, "ccv_nnc_graph_run: sources")
                                      : indices(g, g->sources.data(), static_cast<int>(g->sources.size()),
                                                "ccv_nnc_graph_run: default sources");
  std::vector<int> to = destination_size
                            ? indices(g, destinations, destination_size, "ccv_nnc_graph_run: destinations")
                            : indices(g, g->destinations.data(), static_cast<int>(g->destinations.size()),
                                      "ccv_nnc_graph_run: default destinations");
  const size_t n = g->nodes.size();
  const bool all_sources = from.empty(), all_destinations = to.empty();
  if (all_sources || all_destinations) {
    // No defaults set: every node with no incoming (outgoing) edge.
    std::vector<char> has_in(n, 0);
    for (const auto& node : g->nodes)
      for (int j : node.outgoing) has_in[static_cast<size_t>(j)] = 1;
    for (size_t i = 0; i < n; i++) {
      if (all_sources && !has_in[i]) from.push_back(static_cast<int>(i));
      if (all_destinations && g->nodes[i].outgoing.empty()) to.push_back(static_cast<int>(i));
    }
  }
  const std::vector<char> down = reach(g, from, true);
  const std::vector<char> up = reach(g, to, false);
  std::vector<char> keep(n, 0);
  for (size_t i = 0; i < n; i++) keep[i] = down[i] && up[i];
  std::vector<int> order = topological(g, keep);
  if (defaults) {
    g->default_order = order;
    g->order_valid = true;
  }
  return order;
}

void topsort(Graph* g, int* exec_cvt, int exec_cvt_size) {
  NNC_CHECK(g, "ccv_nnc_graph_topsort: graph is NULL");
  NNC_CHECK(exec_cvt_size >= 0 && (exec_cvt_size == 0 || exec_cvt), "ccv_nnc_graph_topsort: bad conversion array");
  const size_t n = g->nodes.size();
  const std::vector<int> order = topological(g, std::vector<char>(n, 1));
  NNC_CHECK(order.size() == n, "ccv_nnc_graph_topsort: the graph has a cycle");
  std::vector<int> cvt(n);
  for (size_t i = 0; i < n; i++) cvt[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<Graph::Node> nodes(n);
  for (size_t i = 0; i < n; i++) {
    Graph::Node& node = g->nodes[static_cast<size_t>(order[i])];
    for (int& j : node.outgoing) j = cvt[static_cast<size_t>(j)];
    nodes[i] = std::move(node);
  }
  g->nodes = std::move(nodes);
  for (size_t i = 0; i < n; i++) {
    Graph::Node& node = g->nodes[i];
    if (node.pair >= 0) node.pair = cvt[static_cast<size_t>(node.pair)];
    for (Graph* sub : node.subs)
      if (sub) sub->exec_in_parent = static_cast<int>(i);
  }
  for (int& b : g->breakpoints) b = cvt[static_cast<size_t>(b)];
  for (auto& e : g->sources) e.d = cvt[static_cast<size_t>(e.d)];
  for (auto& e : g->destinations) e.d = cvt[static_cast<size_t>(e.d)];
  for (int i = 0; i < exec_cvt_size; i++) exec_cvt[i] = static_cast<size_t>(i) < n ? cvt[static_cast<size_t>(i)] : -1;
  invalidate(g);
}

namespace {

std::string tensor_list(const std::vector<ccv_nnc_tensor_t*>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); i++) {
    if (i) s += "|";
    const ccv_nnc_tensor_t* t = ts[i];
    if (!t) {
      s += "-";
      continue;
    }
    if (CCV_IS_TENSOR_MULTIVIEW(t)) {
      const auto* mv = reinterpret_cast<const ccv_nnc_tensor_multiview_t*>(t);
      s += format("multiview %s%d", mv->kind == CCV_NNC_MULTIVIEW_K1N ? "1+" : "", static_cast<int>(mv->repeat));
      continue;
    }
    s += format("%s %s", datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)), shape_string(t->info.dim).c_str());
  }
  return s;
}

// Nodes of g named <prefix>node<i>; sub-graphs as clusters inside.
void dot_graph(const Graph* g, int flags, FILE* out, const std::string& prefix, int& cluster) {
  for (size_t i = 0; i < g->nodes.size(); i++) {
    const auto& node = g->nodes[i];
    const char* kind = node.kind == Graph::Kind::While ? "while" : node.kind == Graph::Kind::CaseOf ? "case..of" : nullptr;
    const char* name = kind ? kind : cmd_name(node.cmd.cmd);
    if (flags == CCV_NNC_LONG_DOT_GRAPH)
      std::fprintf(out, "%snode%zu [shape=record,label=\"{%zu %s|{in: %s}|{out: %s}}\"];\n", prefix.c_str(), i, i,
                   name ? name : "?", tensor_list(node.inputs).c_str(), tensor_list(node.outputs).c_str());
    else
      std::fprintf(out, "%snode%zu [shape=box,label=\"%zu %s\"];\n", prefix.c_str(), i, i, name ? name : "?");
    for (size_t b = 0; b < node.subs.size(); b++) {
      if (!node.subs[b]) continue;
      std::fprintf(out, "subgraph cluster%d {\nlabel=\"%s node %zu%s\";\n", cluster++, name ? name : "?", i,
                   node.kind == Graph::Kind::CaseOf ? format(", branch %zu", b).c_str() : "");
      dot_graph(node.subs[b], flags, out, prefix + format("n%zub%zu_", i, b), cluster);
      std::fprintf(out, "}\n");
    }
  }
  for (size_t i = 0; i < g->nodes.size(); i++)
    for (int j : g->nodes[i].outgoing) std::fprintf(out, "%snode%zu -> %snode%d;\n", prefix.c_str(), i, prefix.c_str(), j);
}

}  // namespace

void dot(const Graph* g, int flags, FILE* out) {
  NNC_CHECK(g && out, "ccv_nnc_graph_dot: graph or file is NULL");
  std::fprintf(out, "digraph G {\ncompound=true;\n");
  int cluster = 0;
  dot_graph(g, flags, out, "", cluster);
  std::fprintf(out, "}\n");
}

}  // namespace nnc::graph
