// The exported Level-2 functions: thin shims over lib/graph/graph.cpp.
#include <cstring>
#include <memory>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "graph/graph.hpp"

using namespace nnc;
using namespace nnc::graph;

namespace {
ccv_nnc_graph_exec_t no_exec() { return ccv_nnc_graph_exec_t{-1, nullptr}; }
}  // namespace

extern "C" {

NNC_API ccv_nnc_graph_t* ccv_nnc_graph_new(void) {
  return guard<ccv_nnc_graph_t*>(nullptr, [] { return std::make_unique<ccv_nnc_graph_s>().release(); });
}

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_exec_new(ccv_nnc_graph_t* const graph, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint,
                                                    ccv_nnc_tensor_t* const* const inputs, const int input_size,
                                                    ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  return guard<ccv_nnc_graph_exec_t>(no_exec(), [&] { return exec_new(graph, cmd, hint, inputs, input_size, outputs, output_size); });
}

NNC_API void ccv_nnc_graph_exec_set(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_cmd_t cmd) {
  guard_void([&] { node_of(graph, exec, "ccv_nnc_graph_exec_set").cmd = cmd; });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_graph_exec_cmd(const ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec) {
  ccv_nnc_cmd_t noop;
  std::memset(&noop, 0, sizeof(noop));
  return guard<ccv_nnc_cmd_t>(noop, [&] { return node_of(const_cast<ccv_nnc_graph_t*>(graph), exec, "ccv_nnc_graph_exec_cmd").cmd; });
}

NNC_API void ccv_nnc_graph_exec_set_hint(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_hint_t hint) {
  guard_void([&] { node_of(graph, exec, "ccv_nnc_graph_exec_set_hint").hint = hint; });
}

NNC_API void ccv_nnc_graph_exec_set_io(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_tensor_t* const* const inputs,
                                       const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  guard_void([&] { set_io(graph, exec, inputs, input_size, outputs, output_size); });
}

NNC_API int ccv_nnc_graph_exec_concat(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t source, const ccv_nnc_graph_exec_t destination) {
  return guard<int>(-1, [&] {
    concat(graph, source, destination);
    return 0;
  });
}

NNC_API int ccv_nnc_graph_exec_disjoin(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t source, const ccv_nnc_graph_exec_t destination) {
  return guard<int>(-1, [&] {
    disjoin(graph, source, destination);
    return 0;
  });
}

NNC_API int ccv_nnc_graph_exec_count(const ccv_nnc_graph_t* const graph) {
  return graph ? static_cast<int>(graph->nodes.size()) : 0;
}

NNC_API void ccv_nnc_graph_dot(const ccv_nnc_graph_t* const graph, const int flags, FILE* out) {
  guard_void([&] { dot(graph, flags, out); });
}

NNC_API void ccv_nnc_graph_autotune(ccv_nnc_graph_t* const graph, const size_t max_workspace_size, const int flags,
                                    const ccv_nnc_graph_exec_t* const sources, const int source_size,
                                    const ccv_nnc_graph_exec_t* const destinations, const int destination_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_graph_autotune: graph is NULL");
    for (int v : run_order(graph, sources, source_size, destinations, destination_size)) {
      auto& node = graph->nodes[static_cast<size_t>(v)];
      node.cmd = cmd_autotune(node.cmd, max_workspace_size, node.hint, flags, node.inputs.data(), static_cast<int>(node.inputs.size()),
                              node.outputs.data(), static_cast<int>(node.outputs.size()), nullptr);
    }
  });
}

NNC_API void ccv_nnc_graph_topsort(ccv_nnc_graph_t* const graph, int* const exec_cvt, const int exec_cvt_size) {
  guard_void([&] { topsort(graph, exec_cvt, exec_cvt_size); });
}

NNC_API void ccv_nnc_graph_set_sources(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t* const sources, const int source_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_graph_set_sources: graph is NULL");
    NNC_CHECK(source_size >= 0 && (source_size == 0 || sources), "ccv_nnc_graph_set_sources: bad array");
    for (int i = 0; i < source_size; i++) node_of(graph, sources[i], "ccv_nnc_graph_set_sources");
    graph->sources.assign(sources, sources + source_size);
    graph->order_valid = false;
  });
}

NNC_API ccv_nnc_graph_exec_t* ccv_nnc_graph_sources(const ccv_nnc_graph_t* const graph) {
  return graph && !graph->sources.empty() ? const_cast<ccv_nnc_graph_exec_t*>(graph->sources.data()) : nullptr;
}

NNC_API int ccv_nnc_graph_source_size(const ccv_nnc_graph_t* const graph) {
  return graph ? static_cast<int>(graph->sources.size()) : 0;
}

NNC_API void ccv_nnc_graph_set_destinations(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t* const destinations,
                                            const int destination_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_graph_set_destinations: graph is NULL");
    NNC_CHECK(destination_size >= 0 && (destination_size == 0 || destinations), "ccv_nnc_graph_set_destinations: bad array");
    for (int i = 0; i < destination_size; i++) node_of(graph, destinations[i], "ccv_nnc_graph_set_destinations");
    graph->destinations.assign(destinations, destinations + destination_size);
    graph->order_valid = false;
  });
}

NNC_API ccv_nnc_graph_exec_t* ccv_nnc_graph_destinations(const ccv_nnc_graph_t* const graph) {
  return graph && !graph->destinations.empty() ? const_cast<ccv_nnc_graph_exec_t*>(graph->destinations.data()) : nullptr;
}

NNC_API int ccv_nnc_graph_destination_size(const ccv_nnc_graph_t* const graph) {
  return graph ? static_cast<int>(graph->destinations.size()) : 0;
}

NNC_API void ccv_nnc_graph_free(ccv_nnc_graph_t* const graph) { delete graph; }

NNC_API int ccv_nnc_graph_run(ccv_nnc_graph_t* const graph, const int flags, const ccv_nnc_graph_exec_t* const sources, const int source_size,
                              const ccv_nnc_graph_exec_t* const destinations, const int destination_size,
                              ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context) {
  (void)flags;
  return guard_code([&] {
    NNC_CHECK(!tensor_tape, "ccv_nnc_graph_run: tensor tapes arrive with while / case..of sub-graphs; pass NULL");
    return run(graph, sources, source_size, destinations, destination_size, stream_context);
  });
}

}  // extern "C"
