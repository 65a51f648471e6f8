// Compiling a symbolic graph: the exec symbols between sources and
// destinations, in a topological order, become nodes of a concrete graph;
// the tensor symbols they use get one arena laid out by the memory planner
// (lib/symbolic/alloc), with views for aliases and the caller's tensors
// for bound symbols.
//
// Liveness over that order: a symbol lives from the step that first writes
// it (or any part of it, through an alias) to the last step that reads it.
// Symbols no exec writes are inputs: they live through the whole run, so
// what the caller puts there survives runs. Symbols in `outputs` live to
// the end. A command that may run in place offers its output the place of
// an input read for the last time there; the planner takes the offer when
// it lowers the arena.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "symbolic/graph.hpp"
#include "core/live.hpp"

// The tensors of one loop body or case..of branch, inside its owner's arena.
struct ccv_nnc_tensor_sub_arena_s {
  const ccv_nnc_symbolic_graph_s* graph = nullptr;
  // Per symbol: what the sub-graph's nodes use (a header, a multi-view bound
  // round by round, or an enclosing graph's tensor), and for symbols the
  // sub-graph only reads, what the first round reads (what
  // ccv_nnc_tensor_from_symbol gives, so the caller can fill it).
  std::vector<ccv_nnc_tensor_t*> tensors, initial;
  std::vector<std::unique_ptr<ccv_nnc_tensor_view_t>> headers;
  std::vector<std::unique_ptr<ccv_nnc_tensor_multiview_t>> multiviews;
  ccv_nnc_tensor_t count{};  // the loop counter (CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL)
  ~ccv_nnc_tensor_sub_arena_s();
};

struct ccv_nnc_tensor_arena_s {
  const ccv_nnc_symbolic_graph_s* graph = nullptr;  // compiled from (identity only: it may be freed)
  // Per tensor symbol: the header the compiled graph's nodes use (NULL when
  // the symbol is not part of the compiled graph). A base symbol's data
  // points into the arena or at a bound tensor; an alias's is its base's
  // data plus `offset` bytes.
  std::vector<std::unique_ptr<ccv_nnc_tensor_view_t>> headers;
  std::vector<int> base;            // per symbol: its base symbol
  std::vector<int64_t> offset;      // per alias: bytes from its base's data
  std::vector<unsigned char*> own;  // per base symbol: its data at compile time
  std::vector<uint64_t> capacity;   // per base symbol: bytes it may grow to (ccv_nnc_tensor_arena_reinit)
  unsigned char* buffer = nullptr;  // 64-byte aligned, inside `raw`
  void* raw = nullptr;              // what the allocator returned
  int memory = CCV_TENSOR_CPU_MEMORY;  // where the arena lives (GPU: device memory of `device`)
  int device = 0;
  ccv_nnc_symbolic_graph_compile_allocator_t allocator{};  // isa NULL: malloc / free
  uint64_t size = 0;     // bytes of buffer (the planned arena)
  // A graph over several GPUs: the arenas of the devices after the first
  // (device memory, planned on their own).
  struct Side {
    void* raw = nullptr;
    uint64_t size = 0;
    int device = 0;
  };
  std::vector<Side> sides;
  uint64_t planned = 0;  // the planner's arena, before alignment padding
  uint64_t lower_bound = 0;
  // Loops and branches: per symbol, the tensor nodes use instead of the
  // header (a loop's carried result, a case..of output's phi multi-view);
  // the sub-graphs' tensors; multi-views owned here.
  std::vector<ccv_nnc_tensor_t*> override;
  std::vector<std::unique_ptr<ccv_nnc_tensor_sub_arena_s>> subs;
  std::vector<std::unique_ptr<ccv_nnc_tensor_multiview_t>> multiviews;
  ~ccv_nnc_tensor_arena_s();
  // Give the memory back through the allocator it came from.
  void release();
  nnc::LiveCounter<CCV_NNC_LIVE_TENSOR_ARENA> live_counter_;  // ccv_nnc_live_object_count
};

struct ccv_nnc_graph_exec_arena_s {
  const ccv_nnc_symbolic_graph_s* graph = nullptr;
  std::vector<ccv_nnc_graph_exec_t> execs;  // per exec symbol; graph NULL when not compiled
  ccv_nnc_graph_exec_t source{-1, nullptr}, destination{-1, nullptr};
  // Per loop body or branch: its exec symbols' nodes.
  std::vector<std::pair<const ccv_nnc_symbolic_graph_s*, std::vector<ccv_nnc_graph_exec_t>>> subs;
  nnc::LiveCounter<CCV_NNC_LIVE_GRAPH_EXEC_ARENA> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::symbolic {

struct Compiled {
  ccv_nnc_graph_t* graph = nullptr;
  ccv_nnc_tensor_arena_t* tensor_arena = nullptr;
  ccv_nnc_graph_exec_arena_t* exec_arena = nullptr;
};

Compiled compile(const Graph* g, const ccv_nnc_symbolic_graph_compile_allocator_t& allocator, const ccv_nnc_tensor_bind_t* binds,
                 int bind_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size,
                 const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                 const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size);

// What ccv_nnc_tensor_from_symbol gives for a symbol of the graph or of one
// of its sub-graphs (NULL when it is not part of the compiled graph).
ccv_nnc_tensor_t* tensor_from_symbol(const ccv_nnc_tensor_arena_t* arena, const ccv_nnc_tensor_symbol_t& symbol);

// Point a symbol (and the aliases of it) at `tensor`'s data; NULL restores
// what compile gave it.
void bind(ccv_nnc_tensor_arena_t* arena, const ccv_nnc_tensor_symbol_t& symbol, const ccv_nnc_tensor_t* tensor);

// Take the symbols' current shapes into the arena's tensors where each still
// fits the bytes compiled for it; returns false (nothing changed) otherwise.
bool reinit(ccv_nnc_tensor_arena_t* arena, const Graph* g);
// Take the exec symbols' current commands and hints into the compiled nodes.
void exec_reinit(ccv_nnc_graph_exec_arena_t* arena, ccv_nnc_graph_t* graph, const Graph* g);

}  // namespace nnc::symbolic
