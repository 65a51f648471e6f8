// ccv_nnc_dynamic_graph_evaluate: a model run on dynamic-graph variables.
//
// The model enters the dynamic graph as one CUSTOM command whose forward is
// ccv_cnnp_model_evaluate (with requires_grad unless is_test) and whose
// backward is ccv_cnnp_model_backward: the dynamic graph traces it like any
// command, so ccv_nnc_dynamic_graph_backward reaches through it to the
// variables the model read, and the model sums the gradients of its own
// parameters (apply them with ccv_cnnp_model_apply_gradients, after
// ccv_cnnp_model_set_minimizer when the model was compiled here without
// one). A model that is not compiled yet is compiled for the inputs' shapes.
// One forward per backward: evaluating the model again before the backward
// of an earlier evaluate makes that backward refuse.
#include "cnnp/model.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "nnc/ccv_nnc_easy.h"

using namespace nnc;
using namespace nnc::cnnp;

namespace {

int model_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
               ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  Model* m = static_cast<Model*>(cmd.data);
  try {
    if (cmd.cmd == CCV_NNC_CUSTOM_FORWARD) {
      ccv_cnnp_evaluate_param_t p{};
      p.is_test = cmd.info.size.dim[0] == 1;
      p.requires_grad = !p.is_test;
      evaluate(m, p, inputs, input_size, outputs, output_size, false);
    } else {
      // |output gradients|inputs|outputs| -> |input gradients|
      const int n = output_size, k = m->compiled ? static_cast<int>(m->compiled->last_outputs.size()) : 0;
      NNC_CHECK(input_size >= k, "ccv_nnc_dynamic_graph_evaluate: the backward of model %s got %d inputs", model_label(*m).c_str(), input_size);
      backward(m, inputs, k, outputs, n);
    }
    return CCV_NNC_EXEC_SUCCESS;
  } catch (...) {
    // A command's exec returns a code: nothing thrown leaves it.
    return record_current_exception();
  }
}

void model_tensor_auto(const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_param_t* const, const int, const ccv_nnc_hint_t,
                       ccv_nnc_tensor_param_t* const outputs, const int output_size) {
  const Model* m = static_cast<const Model*>(cmd.data);
  for (int i = 0; i < output_size; i++)
    outputs[i] = m && m->compiled && i < static_cast<int>(m->compiled->last_outputs.size()) ? m->compiled->last_outputs[static_cast<size_t>(i)]
                                                                                            : ccv_nnc_tensor_param_t{};
}

ccv_nnc_cmd_vtab_t g_model_vtab = {model_exec, model_tensor_auto};

void dynamic_evaluate(ccv_nnc_dynamic_graph_t* g, Model* m, int is_test, const ccv_nnc_tensor_variable_t* inputs, int input_size,
                      ccv_nnc_tensor_variable_t* outputs, int output_size, bool dry_run, ccv_nnc_stream_context_t* stream) {
  const char* what = dry_run ? "ccv_nnc_dynamic_graph_dry_run" : "ccv_nnc_dynamic_graph_evaluate";
  NNC_CHECK(g, "%s: the dynamic graph is NULL", what);
  NNC_CHECK(m, "%s: the model is NULL", what);
  NNC_CHECK(input_size > 0 && inputs, "%s: no inputs", what);
  NNC_CHECK(dry_run || (output_size > 0 && outputs), "%s: no outputs", what);
  std::vector<ccv_nnc_tensor_t*> ts;
  std::vector<ccv_nnc_tensor_param_t> shapes;
  for (int i = 0; i < input_size; i++) {
    NNC_CHECK(inputs[i], "%s: input %d is NULL", what, i);
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_from_variable(g, inputs[i], stream);
    NNC_CHECK(t, "%s: input %d has no value: %s", what, i, error_message().c_str());
    ts.push_back(t);
    shapes.push_back(t->info);
  }
  if (!m->compiled) {
    compile(m, shapes.data(), input_size, ccv_nnc_cmd(CCV_NNC_NOOP, nullptr, ccv_nnc_cmd_auto, 0),
            ccv_nnc_cmd(CCV_NNC_NOOP, nullptr, ccv_nnc_cmd_auto, 0));
  }
  // Plan the graph for these shapes (and learn the output shapes) without running it.
  ccv_cnnp_evaluate_param_t p{};
  p.is_test = is_test;
  p.requires_grad = !is_test;
  evaluate(m, p, ts.data(), input_size, nullptr, 0, true);
  if (dry_run) return;
  NNC_CHECK(output_size <= static_cast<int>(m->compiled->last_outputs.size()), "%s: model %s has %zu outputs, given %d", what,
            model_label(*m).c_str(), m->compiled->last_outputs.size(), output_size);
  for (int i = 0; i < output_size; i++) NNC_CHECK(outputs[i], "%s: output %d is NULL", what, i);
  ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_model_vtab, ccv_nnc_cmd_auto, 0);
  cmd.data = m;
  cmd.info.size.dim[0] = is_test ? 1 : 0;
  const int r = ccv_nnc_dynamic_graph_exec(g, cmd, ccv_nnc_no_hint, 0, inputs, input_size, outputs, output_size, 0, stream);
  if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: %s", what, error_message().c_str());
}

}  // namespace

NNC_API void ccv_nnc_dynamic_graph_evaluate(ccv_nnc_dynamic_graph_t* const dynamic_graph, ccv_cnnp_model_t* const model, const int is_test,
                                            const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs,
                                            const int output_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    NNC_CHECK(!tensor_tape, "ccv_nnc_dynamic_graph_evaluate: tensor tapes are not supported yet");
    dynamic_evaluate(dynamic_graph, model, is_test, inputs, input_size, outputs, output_size, false, stream_context);
  });
}

NNC_API void ccv_nnc_dynamic_graph_dry_run(ccv_nnc_dynamic_graph_t* const dynamic_graph, ccv_cnnp_model_t* const model, const int is_test,
                                           const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] { dynamic_evaluate(dynamic_graph, model, is_test, inputs, input_size, nullptr, 0, true, stream_context); });
}
