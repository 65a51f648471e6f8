// The concrete graph (Level 2): nodes over concrete tensors, edges, and the
// run order. The order between given sources and destinations is computed
// once and cached until the graph changes, so a run is a loop over a vector.
#pragma once

#include <cstdio>
#include <vector>

#include "nnc/ccv_nnc.h"

struct ccv_nnc_graph_s {
  struct Node {
    ccv_nnc_cmd_t cmd;
    ccv_nnc_hint_t hint;
    std::vector<ccv_nnc_tensor_t*> inputs;
    std::vector<ccv_nnc_tensor_t*> outputs;
    std::vector<int> outgoing;  // indices of nodes ordered after this one
  };
  std::vector<Node> nodes;
  std::vector<ccv_nnc_graph_exec_t> sources, destinations;  // defaults set by the caller
  // Cache of the default run (sources and destinations both defaults).
  bool order_valid = false;
  std::vector<int> default_order;
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
// Nodes to run, in order, for the given (or default) sources and destinations.
std::vector<int> run_order(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size,
                           const ccv_nnc_graph_exec_t* destinations, int destination_size);
int run(Graph* g, const ccv_nnc_graph_exec_t* sources, int source_size, const ccv_nnc_graph_exec_t* destinations,
        int destination_size, ccv_nnc_stream_context_t* stream);
void topsort(Graph* g, int* exec_cvt, int exec_cvt_size);
void dot(const Graph* g, int flags, FILE* out);

}  // namespace nnc::graph
