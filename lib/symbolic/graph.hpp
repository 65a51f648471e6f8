// The symbolic graph (Level 3): tensor symbols (shapes without memory),
// aliases of them, and exec symbols (commands over symbols) with edges.
//
// SSA: a tensor symbol is written by one exec symbol. Aliases of one symbol
// may each be written by their own exec when the parts they cover are
// disjoint (a concatenation written in place); anything else is refused
// when the second writer is added, naming the symbol and both writers.
//
// Symbols are never renumbered: a freed symbol stays in the table, marked
// dead, so references held by the caller keep their meaning (using one is
// an error with a message).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "core/live.hpp"

struct ccv_nnc_symbolic_graph_s {
  struct Tensor {
    ccv_nnc_tensor_param_t info{};
    std::string name;
    int flags = 0;  // CCV_NNC_TENSOR_SYMBOL_* (dead included)
    // An alias: the symbol it views (never itself an alias), the offset in
    // each of its dimensions and its strides in elements (all 0: packed for
    // its own shape, a reshape).
    int alias_of = -1;
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {};
    int stride[CCV_NNC_MAX_DIM_ALLOC] = {};
    std::vector<int> aliases;  // of a base: its alias symbols
    std::vector<int> writers;  // exec symbols that write this symbol itself
    ccv_nnc_tensor_symbol_t pair{CCV_NNC_NO_TENSOR_SYMBOL, nullptr};  // ccv_nnc_tensor_symbol_pair_with
    // In a sub-graph: the symbol of the enclosing graph this one stands for
    // (ccv_nnc_tensor_symbol_hookup), -1 for a symbol of its own.
    int outer = -1;
    // A case..of output: the input it takes when no branch runs (-1: none).
    int bypass = -1;
    std::vector<std::pair<int, int>> copies;  // (device id, symbol): ccv_nnc_tensor_symbol_set_copy
  };
  struct Exec {
    ccv_nnc_cmd_t cmd{};
    ccv_nnc_hint_t hint{};
    std::string name;
    int flags = 0;  // CCV_NNC_GRAPH_EXEC_* (dead included)
    std::vector<int> inputs, outputs;  // tensor symbol indices, CCV_NNC_NO_TENSOR_SYMBOL for none
    std::vector<int> outgoing;         // exec symbols ordered after this one
    ccv_nnc_graph_exec_symbol_t pair{CCV_NNC_NO_GRAPH_EXEC_SYMBOL, nullptr};
    // A while loop (flags CCV_NNC_GRAPH_EXEC_P_WHILE): subs = {body}. A
    // case..of (CCV_NNC_GRAPH_EXEC_CASE_OF): subs[i] is branch i, NULL where
    // none is set. Owned by this graph. Their inputs and outputs are what the
    // caller declared (the expression's inputs and the fall-backs, the
    // outputs) plus the enclosing symbols the sub-graphs read or write,
    // recomputed whenever a sub-graph changes.
    std::vector<ccv_nnc_symbolic_graph_s*> subs;
    std::vector<int> declared_inputs, declared_outputs;
    std::vector<std::pair<int, int>> copies;  // (device id, exec symbol): ccv_nnc_graph_exec_symbol_set_copy
    int expr_inputs = 0;  // case..of: inputs[0, expr_inputs) are what the expression sees
    ccv_nnc_graph_case_of_f case_of = nullptr;
    const void* case_of_data = nullptr;
  };
  std::vector<Tensor> tensors;
  std::vector<Exec> execs;
  std::vector<ccv_nnc_graph_exec_symbol_t> sources, destinations;
  // Called after each symbol is made (the *_new_hook functions).
  ccv_nnc_tensor_symbol_new_hook_f tensor_hook = nullptr;
  void* tensor_hook_context = nullptr;
  ccv_nnc_tensor_symbol_alias_new_hook_f alias_hook = nullptr;
  void* alias_hook_context = nullptr;
  ccv_nnc_graph_exec_symbol_new_hook_f exec_hook = nullptr;
  void* exec_hook_context = nullptr;

  // A sub-graph: its owner and the exec symbol there that runs it, and the
  // stand-ins it holds for the owner's symbols (owner symbol -> local).
  ccv_nnc_symbolic_graph_s* parent = nullptr;
  int exec_in_parent = -1;
  std::vector<std::pair<int, int>> stand_ins;
  // A while body: the expression, its inputs (local symbols or
  // CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL), the breakpoints, and the carried
  // pairs (written this round -> read next round).
  ccv_nnc_graph_while_f while_expr = nullptr;
  const void* while_data = nullptr;
  std::vector<int> while_inputs;
  std::vector<int> breakpoints;
  std::vector<std::pair<int, int>> carry_overs;

  // The last ccv_nnc_symbolic_graph_backward: each wrt / f symbol and the
  // symbol holding its gradient (with the forward symbol's parameters, to
  // notice a symbol changed since).
  struct GradientRecord {
    int forward = -1, gradient = -1;
    ccv_nnc_tensor_param_t info{};
  };
  std::vector<GradientRecord> gradients;

  // What exec symbols' commands point at and this graph keeps alive (the
  // tapes of differentiated loops, see loop_tape.hpp).
  std::vector<std::shared_ptr<void>> owned;

  ccv_nnc_symbolic_graph_s() = default;
  ccv_nnc_symbolic_graph_s(const ccv_nnc_symbolic_graph_s&) = delete;
  ccv_nnc_symbolic_graph_s& operator=(const ccv_nnc_symbolic_graph_s&) = delete;
  ~ccv_nnc_symbolic_graph_s();
  nnc::LiveCounter<CCV_NNC_LIVE_SYMBOLIC_GRAPH> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::symbolic {

using Graph = ccv_nnc_symbolic_graph_s;

// Checked access: throws nnc::Error (INVALID) naming `what` when the
// reference is NULL, of another graph, out of range or freed.
Graph::Tensor& tensor_of(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what);
const Graph::Tensor& tensor_of(const Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what);
Graph::Exec& exec_of(Graph* g, const ccv_nnc_graph_exec_symbol_t& s, const char* what);
const Graph::Exec& exec_of(const Graph* g, const ccv_nnc_graph_exec_symbol_t& s, const char* what);

// "tensor symbol 3 (\"h1\")" / "exec symbol 2 (\"fc1\", GEMM_FORWARD)" for messages.
std::string tensor_label(const Graph* g, int d);
std::string exec_label(const Graph* g, int d);

// The symbol a tensor symbol's memory belongs to (itself, or the base of an alias).
inline int base_of(const Graph* g, int d) { return g->tensors[static_cast<size_t>(d)].alias_of >= 0 ? g->tensors[static_cast<size_t>(d)].alias_of : d; }

// A base symbol and its aliases: every symbol that names part of its memory.
std::vector<int> family_of(const Graph* g, int base);
// The default sources and destinations from the edges: the live execs
// without incoming / without outgoing edges.
void reset_ends(Graph* g);

// Bytes of a symbol's own shape, and where an alias sits in its base:
// [first, last] in elements of the base (a base covers all of itself).
size_t bytes_of(const ccv_nnc_tensor_param_t& info);
void element_range(const Graph* g, int d, int64_t* first, int64_t* last);
// The alias's strides in elements as views will use them (see Tensor::stride).
void alias_strides(const Graph* g, int d, int64_t* stride);
// Whether two symbols of the same base may touch the same element.
bool may_overlap(const Graph* g, int a, int b);

ccv_nnc_tensor_symbol_t tensor_new(Graph* g, const ccv_nnc_tensor_param_t& info, const char* name);
ccv_nnc_tensor_symbol_t alias_new(Graph* g, const ccv_nnc_tensor_symbol_t& base, const int* ofs, const int* stride,
                                  const ccv_nnc_tensor_param_t& info, const char* name);
void tensor_free(Graph* g, const ccv_nnc_tensor_symbol_t& s);
ccv_nnc_graph_exec_symbol_t exec_new(Graph* g, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_symbol_t* inputs,
                                     int input_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size,
                                     const char* name);
void exec_free(Graph* g, const ccv_nnc_graph_exec_symbol_t& s);
// Replace an exec's tensors (SSA checked against the other writers; shapes
// are not inferred again).
void exec_set_io(Graph* g, int e, const ccv_nnc_tensor_symbol_t* inputs, int input_size, const ccv_nnc_tensor_symbol_t* outputs,
                 int output_size);
// Shapes for the outputs that have none, along the order between sources and destinations.
void tensor_auto(Graph* g, const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                 const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size);
// Edges. concat refuses an edge that would close a cycle; returns false if
// the edge was there already (concat) or absent (disjoin).
bool concat(Graph* g, int from, int to);
bool disjoin(Graph* g, int from, int to);
// Edges from data dependencies among `execs` (all live execs when empty),
// and with `with_ends` the default sources and destinations from the edges.
void autogen(Graph* g, const std::vector<int>& execs, bool with_ends);

// The live exec symbols between sources and destinations (the defaults when
// empty: those set, else the execs without incoming / outgoing edges), in a
// topological order (smallest index first among the ready ones). Throws on
// a cycle or a foreign / freed endpoint.
std::vector<int> exec_order(const Graph* g, const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                            const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size);

// Sub-graphs (control.cpp).
// Whether a encloses g (at any depth; a graph does not enclose itself).
bool encloses(const Graph* a, const Graph* g);
// The local stand-in in g for symbol s of an enclosing graph, made (and
// hooked up through every graph between) when there is none yet.
int stand_in(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what);
// A symbol for g's exec slots: g's own, a stand-in for an enclosing graph's,
// or the loop counter; CCV_NNC_NO_TENSOR_SYMBOL for an empty slot.
int local_symbol(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what);
// Parameters of a slot's symbol (the loop counter's included).
ccv_nnc_tensor_param_t slot_params(const Graph* g, int d);
// After g (a sub-graph) changed: recompute the inputs and outputs of the
// exec symbol that runs it, and of those above it. Throws (SSA) when an
// enclosing symbol would get a second writer.
void refresh_owner(Graph* g);
void refresh_exec(Graph* owner, int e);
// Record that dest_symbol of dest_graph stands for src_symbol of src_graph (an enclosing graph).
void hookup(Graph* src_graph, Graph* dest_graph, const ccv_nnc_tensor_symbol_t& src_symbol, const ccv_nnc_tensor_symbol_t& dest_symbol,
            const char* what);
// The sub-graph kind of an exec: 0, CCV_NNC_GRAPH_EXEC_P_WHILE or CCV_NNC_GRAPH_EXEC_CASE_OF.
inline int control_of(const Graph::Exec& x) { return x.flags & (CCV_NNC_GRAPH_EXEC_P_WHILE | CCV_NNC_GRAPH_EXEC_CASE_OF); }
// Whether any live exec of g runs a sub-graph.
bool has_subgraphs(const Graph* g);

}  // namespace nnc::symbolic
