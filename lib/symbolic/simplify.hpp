// Graph simplification passes (ccv_nnc_symbolic_graph_simplify).
#pragma once

#include "symbolic/graph.hpp"

namespace nnc::symbolic {

void simplify(Graph* g, const int* passes, int pass_size, const ccv_nnc_tensor_symbol_t* binds, int bind_size,
              const ccv_nnc_tensor_symbol_t* outputs, int output_size, const ccv_nnc_graph_exec_symbol_t* sources,
              int source_size, const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size);

}  // namespace nnc::symbolic
