// Reverse-mode automatic differentiation of a symbolic graph (Level 3.5).
//
//   nnc::symbolic::backward(g, {loss}, {w, x}, nullptr, 0, nullptr, 0);
//   int dw = nnc::symbolic::gradient_of(g, w);  // its gradient symbol, or -1
//
// backward() appends to the graph, for every forward exec on a path from a
// wrt symbol to an f symbol, its backward command in libnnc's layout
// (|output gradients|forward inputs|forward outputs| -> |input gradients|),
// passing only the slots the command's bitmask asks for. Gradients follow
// SSA: the partial gradients of a symbol read several times are summed into
// one new symbol, two at a time as they arrive (so a weight read at every
// step of an unrolled loop keeps one running sum alive, not every step's
// part); gradients arriving through aliases go into aliases of a
// zero-initialised gradient of the base, except that the gradient of a place
// lying inside each larger place a gradient arrived for is a sum of views of
// those (a dense block's channels under its later layers' prefixes). A scalar f's gradient symbol (the
// seed) is flagged INIT_ONES.
//
// Second order (beyond libnnc): a backward command met on the path (from an
// earlier backward()) is differentiated by its rule in backward.cpp, written
// in forward commands (and backward commands used as linear maps), so
// gradients of gradients plan and run like any graph; a backward command
// without a rule is refused by name.
#pragma once

#include "symbolic/graph.hpp"

namespace nnc::symbolic {

// Throws nnc::Error (INVALID) with a message on bad input, leaving the graph
// as it was.
void backward(Graph* g, const ccv_nnc_tensor_symbol_t* f, int f_size, const ccv_nnc_tensor_symbol_t* wrt, int wrt_size,
              const ccv_nnc_graph_exec_symbol_t* sources, int source_size, const ccv_nnc_graph_exec_symbol_t* destinations,
              int destination_size);

// What a failed backward() or minimize() must undo: the symbols and execs
// appended after this point are dropped again (with the edges to them).
struct Checkpoint {
  size_t tensors = 0, execs = 0;
};
Checkpoint checkpoint(const Graph* g);
void rollback(Graph* g, const Checkpoint& c);

// The gradient symbol of a wrt symbol (the seed of an f symbol) after the last
// backward() on g, or -1.
int gradient_of(const Graph* g, int symbol);

}  // namespace nnc::symbolic
