// Minimisers on a symbolic graph (Level 3.5): the backward pass of the losses,
// then one optimiser exec per parameter in libnnc's minimizer layout
// |gradient|parameter|state...| -> |updated parameter|updated state...|.
//
// The state symbols (saved_aux sources) are new symbols without an initial
// value: the caller binds them (zeros before the first step) and carries each
// destination into its source between steps, as libnnc's callers do.
#include <cstring>
#include <string>
#include <vector>

#include "cmd/optim/optim.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "symbolic/backward.hpp"
#include "symbolic/graph.hpp"

using namespace nnc;
using namespace nnc::symbolic;

namespace {

bool is_minimizer(uint32_t cmd) {
  switch (cmd) {
    case CCV_NNC_SGD_FORWARD:
    case CCV_NNC_ADAM_FORWARD:
    case CCV_NNC_ADAMW_FORWARD:
    case CCV_NNC_RMSPROP_FORWARD:
    case CCV_NNC_LAMB_FORWARD:
      return true;
    default:
      return false;
  }
}

int saved_aux_size(const ccv_nnc_cmd_t& minimizer, const char* what) {
  NNC_CHECK(is_minimizer(minimizer.cmd), "%s: %s is not a minimizer (SGD, ADAM, ADAMW, RMSPROP or LAMB forward)", what,
            cmd_name(minimizer.cmd) ? cmd_name(minimizer.cmd) : "an unknown command");
  return optim::state_count(minimizer);
}

void append(Graph* g, const ccv_nnc_cmd_t& minimizer, int aux, const ccv_nnc_tensor_symbol_t* losses, int loss_size,
            const ccv_nnc_tensor_symbol_t* parameters, int parameter_size, const ccv_nnc_tensor_symbol_t* inputs, int input_size,
            const ccv_nnc_graph_exec_symbol_t* sources, int source_size, const ccv_nnc_graph_exec_symbol_t* destinations,
            int destination_size, ccv_nnc_tensor_symbol_t* gradients, ccv_nnc_tensor_symbol_t* updated_parameters,
            ccv_nnc_tensor_symbol_map_t* saved_aux, ccv_nnc_graph_exec_symbol_t* graph_exec_symbols);

void minimize(Graph* g, const ccv_nnc_cmd_t& minimizer, const ccv_nnc_tensor_symbol_t* losses, int loss_size,
              const ccv_nnc_tensor_symbol_t* parameters, int parameter_size, const ccv_nnc_tensor_symbol_t* inputs,
              int input_size, const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
              const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size, ccv_nnc_tensor_symbol_t* gradients,
              ccv_nnc_tensor_symbol_t* updated_parameters, ccv_nnc_tensor_symbol_map_t* saved_aux,
              ccv_nnc_graph_exec_symbol_t* graph_exec_symbols) {
  static const char* what = "ccv_nnc_symbolic_graph_minimize";
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  const int aux = saved_aux_size(minimizer, what);
  NNC_CHECK(parameter_size > 0 && parameters, "%s: no parameters (parameter_size %d)", what, parameter_size);
  NNC_CHECK(input_size >= 0 && (input_size == 0 || inputs), "%s: bad inputs array (size %d)", what, input_size);
  NNC_CHECK(updated_parameters && graph_exec_symbols && (aux == 0 || saved_aux),
            "%s: updated_parameters, saved_aux and graph_exec_symbols are required", what);
  const Checkpoint before = checkpoint(g);
  try {
    append(g, minimizer, aux, losses, loss_size, parameters, parameter_size, inputs, input_size, sources, source_size, destinations,
           destination_size, gradients, updated_parameters, saved_aux, graph_exec_symbols);
  } catch (...) {
    rollback(g, before);
    throw;
  }
}

// The backward pass and the updates; the outputs are written last, so they
// stay untouched when anything fails.
void append(Graph* g, const ccv_nnc_cmd_t& minimizer, int aux, const ccv_nnc_tensor_symbol_t* losses, int loss_size,
            const ccv_nnc_tensor_symbol_t* parameters, int parameter_size, const ccv_nnc_tensor_symbol_t* inputs, int input_size,
            const ccv_nnc_graph_exec_symbol_t* sources, int source_size, const ccv_nnc_graph_exec_symbol_t* destinations,
            int destination_size, ccv_nnc_tensor_symbol_t* gradients, ccv_nnc_tensor_symbol_t* updated_parameters,
            ccv_nnc_tensor_symbol_map_t* saved_aux, ccv_nnc_graph_exec_symbol_t* graph_exec_symbols) {
  std::vector<ccv_nnc_tensor_symbol_t> wrt(parameters, parameters + parameter_size);
  wrt.insert(wrt.end(), inputs, inputs + input_size);
  backward(g, losses, loss_size, wrt.data(), static_cast<int>(wrt.size()), sources, source_size, destinations,
           destination_size);
  std::vector<ccv_nnc_tensor_symbol_t> grads, updated;
  std::vector<ccv_nnc_tensor_symbol_map_t> aux_pairs;
  std::vector<ccv_nnc_graph_exec_symbol_t> execs;
  std::vector<int> made;
  for (const ccv_nnc_tensor_symbol_t& w : wrt) grads.push_back({gradient_of(g, w.d), g});
  for (int i = 0; i < parameter_size; i++) {
    const ccv_nnc_tensor_param_t info = g->tensors[static_cast<size_t>(parameters[i].d)].info;
    const std::string name = g->tensors[static_cast<size_t>(parameters[i].d)].name;
    auto fresh = [&](const char* suffix) {
      const std::string n = name.empty() ? std::string() : name + suffix;
      return tensor_new(g, info, n.empty() ? nullptr : n.c_str());
    };
    std::vector<ccv_nnc_tensor_symbol_t> in{grads[static_cast<size_t>(i)], parameters[i]}, out{fresh(" updated")};
    for (int k = 0; k < aux; k++) {
      const ccv_nnc_tensor_symbol_t s = fresh(" state"), d = fresh(" state updated");
      in.push_back(s);
      out.push_back(d);
      aux_pairs.push_back({s, d});
    }
    const ccv_nnc_graph_exec_symbol_t e = exec_new(g, minimizer, in.data(), static_cast<int>(in.size()), out.data(),
                                                   static_cast<int>(out.size()), name.empty() ? nullptr : (name + " update").c_str());
    updated.push_back(out[0]);
    execs.push_back(e);
    made.push_back(e.d);
  }
  // Each update after the backward exec writing its gradient.
  std::vector<int> set = made;
  for (const auto& s : grads)
    for (int d : {s.d, g->tensors[static_cast<size_t>(s.d)].alias_of})
      if (d >= 0)
        for (int w : g->tensors[static_cast<size_t>(d)].writers) set.push_back(w);
  autogen(g, set, false);
  // Each update after every other reader of its parameter, so a caller may
  // bind the parameter and its update to one tensor (libnnc's in-place step).
  for (int i = 0; i < parameter_size; i++) {
    const int u = made[static_cast<size_t>(i)];
    const int b = base_of(g, parameters[i].d);
    for (size_t e = 0; e < g->execs.size(); e++) {
      const Graph::Exec& x = g->execs[e];
      if (static_cast<int>(e) == u || CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
      bool reads = false;
      for (int d : x.inputs) reads = reads || (d >= 0 && base_of(g, d) == b);
      if (reads) {
        try {
          concat(g, static_cast<int>(e), u);
        } catch (const Error&) {
          // It runs after the update (the caller's own use of the parameter): no edge.
        }
      }
    }
  }
  if (!g->sources.empty() || !g->destinations.empty()) reset_ends(g);
  if (gradients)
    for (size_t i = 0; i < grads.size(); i++) gradients[i] = grads[i];
  for (int i = 0; i < parameter_size; i++) {
    updated_parameters[i] = updated[static_cast<size_t>(i)];
    graph_exec_symbols[i] = execs[static_cast<size_t>(i)];
  }
  for (size_t k = 0; k < aux_pairs.size(); k++) saved_aux[k] = aux_pairs[k];
}

}  // namespace

NNC_API void ccv_nnc_symbolic_graph_minimize(
    ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_cmd_t minimizer, const ccv_nnc_tensor_symbol_t* const losses,
    const int loss_size, const ccv_nnc_tensor_symbol_t* const parameters, const int parameter_size,
    const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_graph_exec_symbol_t* const sources,
    const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size,
    ccv_nnc_tensor_symbol_t* const gradients, ccv_nnc_tensor_symbol_t* const updated_parameters,
    ccv_nnc_tensor_symbol_map_t* const saved_aux, ccv_nnc_graph_exec_symbol_t* const graph_exec_symbols) {
  guard_void([&] {
    minimize(graph, minimizer, losses, loss_size, parameters, parameter_size, inputs, input_size, sources, source_size,
             destinations, destination_size, gradients, updated_parameters, saved_aux, graph_exec_symbols);
  });
}

NNC_API int ccv_nnc_minimizer_saved_aux_size(const ccv_nnc_cmd_t minimizer) {
  return guard<int>(-1, [&] { return saved_aux_size(minimizer, "ccv_nnc_minimizer_saved_aux_size"); });
}
