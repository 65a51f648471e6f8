// The exported ccv_cnnp_model_* calls: argument checks, then model.cpp.
// Calls that libnnc declares void report bad input through
// ccv_nnc_error_message() and change nothing.
#include <cmath>
#include <cstring>

#include "cnnp/layers.hpp"
#include "cnnp/model.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream.hpp"
#include "nnc/ccv_nnc_easy.h"

using namespace nnc;
using namespace nnc::cnnp;

namespace {

// The model, after the work its fit / evaluate queued on GPU streams (the
// call reads or writes its state from the host).
Model* check_model(const ccv_cnnp_model_t* m, const char* what) {
  NNC_CHECK(m, "%s: the model is NULL", what);
  Model* model = const_cast<Model*>(m);
  settle(model);
  return model;
}

Param* one_parameter(Model* m, const ccv_cnnp_model_io_t io, const char* what) {
  auto ps = select(m, io, what);
  NNC_CHECK(ps.size() == 1, "%s: the selection names %zu parameters, not one (give an index)", what, ps.size());
  return ps[0];
}

// Run cmd on each tensor (and an extra input), writing back in place.
void map_tensors(const std::vector<ccv_nnc_tensor_t*>& targets, const std::vector<ccv_nnc_tensor_t*>& firsts, const ccv_nnc_cmd_t& cmd,
                 const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* aux_ins, int aux_in_size, ccv_nnc_tensor_t* const* aux_outs,
                 int aux_out_size, ccv_nnc_stream_context_t* stream, const char* what) {
  for (size_t i = 0; i < targets.size(); i++) {
    std::vector<ccv_nnc_tensor_t*> ins = {targets[i]};
    if (!firsts.empty()) ins.push_back(firsts[i]);
    ins.insert(ins.end(), aux_ins, aux_ins + aux_in_size);
    std::vector<ccv_nnc_tensor_t*> outs = {targets[i]};
    outs.insert(outs.end(), aux_outs, aux_outs + aux_out_size);
    const int r = ccv_nnc_cmd_exec(cmd, hint, flags, ins.data(), static_cast<int>(ins.size()), outs.data(), static_cast<int>(outs.size()), stream);
    if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: %s", what, error_message().c_str());
  }
}

}  // namespace

// --- composition ------------------------------------------------------------

NNC_API ccv_cnnp_model_io_t ccv_cnnp_input(void) {
  return guard<ccv_cnnp_model_io_t>(nullptr, [] { return make_input(); });
}

NNC_API ccv_cnnp_model_io_t ccv_cnnp_model_apply(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t* const inputs, const int input_size) {
  return guard<ccv_cnnp_model_io_t>(nullptr, [&] { return apply(model, inputs, input_size); });
}

NNC_API void ccv_cnnp_model_add_dependencies(ccv_cnnp_model_io_t model_io, const ccv_cnnp_model_io_t* const dependencies, const int dependency_size) {
  guard_void([&] {
    NNC_CHECK(model_io, "ccv_cnnp_model_add_dependencies: no model io");
    NNC_CHECK(model_io->model, "ccv_cnnp_model_add_dependencies: an input cannot have dependencies");
    NNC_CHECK(dependency_size >= 0 && (dependency_size == 0 || dependencies), "ccv_cnnp_model_add_dependencies: no dependencies");
    for (int i = 0; i < dependency_size; i++) {
      NNC_CHECK(dependencies[i] && dependencies[i]->sequence < model_io->sequence,
                "ccv_cnnp_model_add_dependencies: dependency %d is NULL or was made after the io it should precede", i);
    }
    model_io->dependencies.insert(model_io->dependencies.end(), dependencies, dependencies + dependency_size);
  });
}

NNC_API ccv_cnnp_model_io_t ccv_cnnp_model_parameters(ccv_cnnp_model_t* const model, const int selector, const int index) {
  return guard<ccv_cnnp_model_io_t>(nullptr, [&] {
    Model* m = check_model(model, "ccv_cnnp_model_parameters");
    NNC_CHECK(selector == ALL_PARAMETERS || selector == CCV_CNNP_PARAMETER_SELECT_WEIGHT || selector == CCV_CNNP_PARAMETER_SELECT_BIAS,
              "ccv_cnnp_model_parameters: unknown selector %d", selector);
    NNC_CHECK(index >= ALL_PARAMETERS, "ccv_cnnp_model_parameters: index %d", index);
    auto io = std::make_unique<Io>();
    io->model = m;
    io->is_parameters = true;
    io->selector = selector;
    io->index = index;
    m->ios.push_back(std::move(io));
    return m->ios.back().get();
  });
}

NNC_API void ccv_cnnp_model_notify_hook(ccv_cnnp_model_t* const model, ccv_cnnp_model_notify_f func, void* const context) {
  guard_void([&] {
    Model* m = check_model(model, "ccv_cnnp_model_notify_hook");
    m->hooks.clear();
    if (func) m->hooks.emplace_back(func, context);
  });
}

NNC_API void ccv_cnnp_model_notify(const ccv_cnnp_model_t* const model, const int tag, void* const payload) {
  guard_void([&] {
    std::vector<Model*> stack = {check_model(model, "ccv_cnnp_model_notify")};
    while (!stack.empty()) {
      Model* m = stack.back();
      stack.pop_back();
      for (auto& [f, c] : m->hooks) f(m, tag, payload, c);
      std::vector<Model*> kids;
      m->children(kids);
      stack.insert(stack.end(), kids.rbegin(), kids.rend());
    }
  });
}

NNC_API ccv_cnnp_model_t* ccv_cnnp_model_new(const ccv_cnnp_model_io_t* const inputs, const int input_size, const ccv_cnnp_model_io_t* const outputs,
                                             const int output_size, const int is_trainable, const char* const name) {
  return guard<ccv_cnnp_model_t*>(nullptr, [&] { return make_functional(inputs, input_size, outputs, output_size, is_trainable, name); });
}

NNC_API ccv_cnnp_model_t* ccv_cnnp_sequential_new(ccv_cnnp_model_t* const* const models, const int model_size, const int is_trainable,
                                                  const char* const name) {
  return guard<ccv_cnnp_model_t*>(nullptr, [&] {
    NNC_CHECK(model_size > 0 && models, "ccv_cnnp_sequential_new: no models");
    return make_sequential(models, model_size, is_trainable, name);
  });
}

NNC_API ccv_cnnp_model_t* ccv_cnnp_dynamic_new(ccv_cnnp_model_dynamic_f func, void* const context, const char* const name) {
  return guard<ccv_cnnp_model_t*>(nullptr, [&] { return make_dynamic(func, context, name); });
}

NNC_API ccv_cnnp_model_t* ccv_cnnp_model_copy(const ccv_cnnp_model_t* const model, const int is_trainable) {
  return guard<ccv_cnnp_model_t*>(nullptr, [&] {
    auto c = check_model(model, "ccv_cnnp_model_copy")->clone();
    c->is_trainable = is_trainable;
    return c.release();
  });
}

NNC_API void ccv_cnnp_model_free(ccv_cnnp_model_t* const model) { delete model; }

NNC_API int ccv_cnnp_model_output_size(const ccv_cnnp_model_t* const model) {
  return guard<int>(0, [&] { return check_model(model, "ccv_cnnp_model_output_size")->output_size; });
}

NNC_API int ccv_cnnp_model_is_trainable(const ccv_cnnp_model_t* const model) {
  return guard<int>(-1, [&] { return check_model(model, "ccv_cnnp_model_is_trainable")->is_trainable; });
}

// --- compile and run ----------------------------------------------------------

NNC_API void ccv_cnnp_model_compile(ccv_cnnp_model_t* const model, const ccv_nnc_tensor_param_t* const inputs, const int input_size,
                                    const ccv_nnc_cmd_t minimizer, const ccv_nnc_cmd_t loss) {
  guard_void([&] { compile(model, inputs, input_size, minimizer, loss); });
}

NNC_API void ccv_cnnp_model_absorb(ccv_cnnp_model_t* const model, ccv_cnnp_model_t* const init, const ccv_nnc_tensor_param_t* const inputs,
                                   const int input_size) {
  guard_void([&] { absorb(check_model(model, "ccv_cnnp_model_absorb"), init, inputs, input_size); });
}

NNC_API void ccv_cnnp_model_tensor_auto(ccv_cnnp_model_t* const model, ccv_nnc_tensor_param_t* const outputs, const int output_size) {
  guard_void([&] {
    Compiled& c = compiled_of(model, "ccv_cnnp_model_tensor_auto");
    NNC_CHECK(outputs && output_size >= 0, "ccv_cnnp_model_tensor_auto: no outputs array");
    NNC_CHECK(output_size <= static_cast<int>(c.outputs.size()), "ccv_cnnp_model_tensor_auto: the model has %zu outputs, %d asked for",
              c.outputs.size(), output_size);
    for (int i = 0; i < output_size; i++) outputs[i] = c.outputs[static_cast<size_t>(i)];
  });
}

NNC_API void ccv_cnnp_model_dot(const ccv_cnnp_model_t* const model, const int flags, FILE** const outs, const int out_size) {
  guard_void([&] { dot(model, flags, outs, out_size); });
}

NNC_API void ccv_cnnp_model_format(const ccv_cnnp_model_t* const model, const ccv_nnc_symbolic_graph_format_f format_fn, void* const context) {
  guard_void([&] {
    NNC_CHECK(model && model->compiled && !model->compiled->jits.empty(), "ccv_cnnp_model_format: the model has no compiled graph yet");
    NNC_CHECK(format_fn, "ccv_cnnp_model_format: no format function");
    format_jit(model, format_fn, context);
  });
}

// A call given a stream starts after the stream's earlier work (a batch
// copied in on it, this model's previous call queued on it). On a GPU stream
// fit and evaluate queue their work there, behind that work on the device,
// and return at once: the host waits for nothing, so the next step is queued
// while this one runs. Otherwise the host waits for the stream and the call
// runs synchronously, which a stream's caller may always get.
namespace {
void after_stream(ccv_nnc_stream_context_t* stream) {
  if (stream) nnc::stream_wait(stream);
}
void before_queueing(ccv_nnc_stream_context_t* stream) {
  if (!nnc::is_gpu_stream(stream)) after_stream(stream);
}
ccv_nnc_stream_context_t* gpu_or_null(ccv_nnc_stream_context_t* stream) { return nnc::is_gpu_stream(stream) ? stream : nullptr; }
}  // namespace

NNC_API void ccv_cnnp_model_fit(ccv_cnnp_model_t* const model, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                                ccv_nnc_tensor_t* const* const fits, const int fit_size, ccv_nnc_tensor_t* const* const outputs,
                                const int output_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    NNC_CHECK(!tensor_tape, "ccv_cnnp_model_fit: tensor tapes are not supported yet");
    before_queueing(stream_context);
    fit(model, inputs, input_size, fits, fit_size, outputs, output_size, gpu_or_null(stream_context));
  });
}

NNC_API void ccv_cnnp_model_evaluate(ccv_cnnp_model_t* const model, const ccv_cnnp_evaluate_param_t params, ccv_nnc_tensor_t* const* const inputs,
                                     const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size,
                                     ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    NNC_CHECK(!tensor_tape, "ccv_cnnp_model_evaluate: tensor tapes are not supported yet");
    before_queueing(stream_context);
    evaluate(model, params, inputs, input_size, outputs, output_size, false, gpu_or_null(stream_context));
  });
}

NNC_API void ccv_cnnp_model_dry_run(ccv_cnnp_model_t* const model, const ccv_cnnp_evaluate_param_t params, ccv_nnc_tensor_t* const* const inputs,
                                    const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  guard_void([&] { evaluate(model, params, inputs, input_size, outputs, output_size, true); });
}

NNC_API void ccv_cnnp_model_backward(ccv_cnnp_model_t* const model, ccv_nnc_tensor_t* const* const ingrads, const int ingrad_size,
                                     ccv_nnc_tensor_t* const* const outgrads, const int outgrad_size, ccv_nnc_tensor_tape_t* const tensor_tape,
                                     ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    (void)tensor_tape;
    after_stream(stream_context);
    backward(model, ingrads, ingrad_size, outgrads, outgrad_size);
  });
}

NNC_API void ccv_cnnp_model_apply_gradients(ccv_cnnp_model_t* const model, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    after_stream(stream_context);
    apply_gradients(model);
  });
}

NNC_API void ccv_cnnp_model_cancel(ccv_cnnp_model_t* const model) {
  guard_void([&] {
    // From another thread, while a call runs: no waiting (queued work cannot be cancelled).
    NNC_CHECK(model, "ccv_cnnp_model_cancel: the model is NULL");
    Model* m = const_cast<Model*>(model);
    m->cancelled = 1;
    cancel_jits(m);
  });
}

// --- settings -----------------------------------------------------------------

NNC_API void ccv_cnnp_model_set_data_parallel(ccv_cnnp_model_t* const model, const int parallel) {
  guard_void([&] { nnc::cnnp::set_data_parallel(check_model(model, "ccv_cnnp_model_set_data_parallel"), parallel); });
}

NNC_API void ccv_cnnp_model_set_comm(ccv_cnnp_model_t* const model, ccv_nnc_comm_t* const comm, const size_t bucket_bytes) {
  guard_void([&] { nnc::cnnp::set_comm(check_model(model, "ccv_cnnp_model_set_comm"), comm, bucket_bytes); });
}

NNC_API void ccv_cnnp_model_comm_time(ccv_cnnp_model_t* const model, double* const allreduce_seconds, double* const waited_seconds) {
  guard_void([&] { nnc::cnnp::comm_time(check_model(model, "ccv_cnnp_model_comm_time"), allreduce_seconds, waited_seconds); });
}

NNC_API void ccv_cnnp_model_set_max_concurrency(ccv_cnnp_model_t* const model, const int max_stream_count) {
  guard_void([&] {
    Model* m = check_model(model, "ccv_cnnp_model_set_max_concurrency");
    NNC_CHECK(max_stream_count >= 0, "ccv_cnnp_model_set_max_concurrency: %d streams", max_stream_count);
    m->max_concurrency = max_stream_count;
  });
}

NNC_API void ccv_cnnp_model_set_memory_compression(ccv_cnnp_model_t* const model, const int memory_compression) {
  guard_void([&] {
    check_model(model, "ccv_cnnp_model_set_memory_compression");
    NNC_CHECK(!memory_compression, "ccv_cnnp_model_set_memory_compression: not supported yet (the graph pass that inserts COMPRESSION_LSSC, ccv_nnc_symbolic_graph_memory_compression, is not implemented)");
  });
}

NNC_API void ccv_cnnp_model_set_memory_reduction(ccv_cnnp_model_t* const model, const int memory_reduction) {
  guard_void([&] {
    check_model(model, "ccv_cnnp_model_set_memory_reduction");
    NNC_CHECK(!memory_reduction, "ccv_cnnp_model_set_memory_reduction: not supported yet");
  });
}

NNC_API void ccv_cnnp_model_set_gradient_checkpointing(ccv_cnnp_model_t* const model, const int gradient_checkpointing) {
  guard_void([&] {
    Model* m = check_model(model, "ccv_cnnp_model_set_gradient_checkpointing");
    m->gradient_checkpointing = gradient_checkpointing ? 1 : 0;
    // Compiled graphs of every model holding this one are rebuilt lazily: the
    // caller sets it before compiling, or the model's own graphs go now.
    drop_jits(m);
  });
}

NNC_API int ccv_cnnp_model_gradient_checkpointing(ccv_cnnp_model_t* const model) {
  return guard<int>(0, [&] { return check_model(model, "ccv_cnnp_model_gradient_checkpointing")->gradient_checkpointing; });
}

NNC_API void ccv_cnnp_model_set_compile_params(ccv_cnnp_model_t* const model, const ccv_nnc_symbolic_graph_compile_param_t compile_params) {
  guard_void([&] {
    Compiled& c = compiled_of(model, "ccv_cnnp_model_set_compile_params");
    c.compile_params = compile_params;
    drop_jits(model);
  });
}

NNC_API void ccv_cnnp_model_set_workspace_size(ccv_cnnp_model_t* const model, size_t workspace_size) {
  guard_void([&] {
    Model* m = check_model(model, "ccv_cnnp_model_set_workspace_size");
    if (m->compiled) m->compiled->workspace_size = workspace_size;
  });
}

NNC_API size_t ccv_cnnp_model_workspace_size(ccv_cnnp_model_t* const model) {
  return guard<size_t>(0, [&] {
    Model* m = check_model(model, "ccv_cnnp_model_workspace_size");
    return m->compiled ? m->compiled->workspace_size : size_t{0};
  });
}

NNC_API ccv_nnc_stream_context_t* ccv_cnnp_model_default_stream(const ccv_cnnp_model_t* const model) {
  return guard<ccv_nnc_stream_context_t*>(nullptr, [&] {
    NNC_CHECK(model, "ccv_cnnp_model_default_stream: the model is NULL");
    return default_stream(const_cast<Model*>(model));  // no settle: queued steps may go on
  });
}

NNC_API uint64_t ccv_cnnp_model_memory_size(const ccv_cnnp_model_t* const model) {
  return guard<uint64_t>(0, [&] { return memory_size(model); });
}

// --- parameters ---------------------------------------------------------------

NNC_API void ccv_cnnp_model_set_parameter(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter, const ccv_nnc_tensor_t* const tensor) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_set_parameter";
    Param* p = one_parameter(check_model(model, what), parameter, what);
    NNC_CHECK(tensor, "%s: no tensor", what);
    copy_values(const_cast<ccv_nnc_tensor_t*>(tensor), p->tensor.get(), format("%s: %s", what, p->name.c_str()).c_str());
    p->initialized = true;
    params_written(model);
  });
}

NNC_API void ccv_cnnp_model_parameter_copy(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter, ccv_nnc_tensor_t* const tensor) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_parameter_copy";
    Param* p = one_parameter(check_model(model, what), parameter, what);
    NNC_CHECK(tensor, "%s: no tensor", what);
    copy_values(p->tensor.get(), tensor, format("%s: %s", what, p->name.c_str()).c_str());
  });
}

NNC_API ccv_nnc_tensor_param_t ccv_cnnp_model_parameter_tensor_params(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter) {
  return guard<ccv_nnc_tensor_param_t>(ccv_nnc_tensor_param_t{}, [&] {
    const char* what = "ccv_cnnp_model_parameter_tensor_params";
    return one_parameter(check_model(model, what), parameter, what)->tensor->info;
  });
}

NNC_API const char* ccv_cnnp_model_parameter_name(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter) {
  return guard<const char*>(nullptr, [&] {
    const char* what = "ccv_cnnp_model_parameter_name";
    return one_parameter(check_model(model, what), parameter, what)->name.c_str();
  });
}

NNC_API int ccv_cnnp_model_parameter_count(ccv_cnnp_model_t* const model) {
  return guard<int>(0, [&] { return static_cast<int>(compiled_of(model, "ccv_cnnp_model_parameter_count").params.size()); });
}

NNC_API ccv_array_t* ccv_cnnp_model_parameters_filter(ccv_cnnp_model_t* const model, ccv_cnnp_model_parameters_filter_f filter, void* const context) {
  return guard<ccv_array_t*>(nullptr, [&] {
    const char* what = "ccv_cnnp_model_parameters_filter";
    Compiled& c = compiled_of(model, what);
    NNC_CHECK(filter, "%s: no filter", what);
    ccv_array_t* a = ccv_array_new(sizeof(ccv_cnnp_model_io_t), 0, 0);
    NNC_CHECK(a, "%s: out of memory", what);
    for (size_t i = 0; i < c.params.size(); i++) {
      if (!filter(model, c.params[i].name.c_str(), context)) continue;
      ccv_cnnp_model_io_t io = ccv_cnnp_model_parameters(model, ALL_PARAMETERS, static_cast<int>(i));
      ccv_array_push(a, &io);
    }
    return a;
  });
}

NNC_API ccv_cnnp_model_io_t ccv_cnnp_model_parameter_first(ccv_cnnp_model_t* const model, ccv_cnnp_model_parameters_filter_f first, void* const context) {
  return guard<ccv_cnnp_model_io_t>(nullptr, [&]() -> ccv_cnnp_model_io_t {
    const char* what = "ccv_cnnp_model_parameter_first";
    Compiled& c = compiled_of(model, what);
    NNC_CHECK(first, "%s: no filter", what);
    for (size_t i = 0; i < c.params.size(); i++)
      if (first(model, c.params[i].name.c_str(), context)) return ccv_cnnp_model_parameters(model, ALL_PARAMETERS, static_cast<int>(i));
    return nullptr;
  });
}

NNC_API ccv_cnnp_model_io_t ccv_cnnp_model_parameter_first_uninit(ccv_cnnp_model_t* const model) {
  return guard<ccv_cnnp_model_io_t>(nullptr, [&]() -> ccv_cnnp_model_io_t {
    Compiled& c = compiled_of(model, "ccv_cnnp_model_parameter_first_uninit");
    for (size_t i = 0; i < c.params.size(); i++)
      if (!c.params[i].initialized) return ccv_cnnp_model_parameters(model, ALL_PARAMETERS, static_cast<int>(i));
    return nullptr;
  });
}

NNC_API void ccv_cnnp_model_set_parameters(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_cnnp_model_t* const from_model,
                                           const ccv_cnnp_model_io_t from_parameters) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_set_parameters";
    auto to = select(check_model(model, what), parameters, what);
    auto from = select(check_model(from_model, what), from_parameters, what);
    NNC_CHECK(to.size() == from.size(), "%s: %zu parameters to set from %zu", what, to.size(), from.size());
    for (size_t i = 0; i < to.size(); i++) {
      copy_values(from[i]->tensor.get(), to[i]->tensor.get(), format("%s: %s from %s", what, to[i]->name.c_str(), from[i]->name.c_str()).c_str());
      to[i]->initialized = true;
    }
    params_written(model);
  });
}

NNC_API void ccv_cnnp_model_share_parameters(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_cnnp_model_t* const from_model,
                                             const ccv_cnnp_model_io_t from_parameters, ccv_cnnp_model_parameters_renamer_f renamer, void* const context) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_share_parameters";
    auto to = select(check_model(model, what), parameters, what);
    auto from = select(check_model(from_model, what), from_parameters, what);
    std::vector<Param*> matched;
    if (renamer) {
      // Match by the renamed name.
      for (Param* t : to) {
        Param* hit = nullptr;
        for (Param* f : from) {
          char buf[1024];
          std::strncpy(buf, f->name.c_str(), sizeof(buf) - 1);
          buf[sizeof(buf) - 1] = 0;
          if (renamer(context, f->name.c_str(), buf, sizeof(buf)) == 0 && t->name == buf) hit = f;
        }
        NNC_CHECK(hit, "%s: no parameter of the other model matches %s", what, t->name.c_str());
        matched.push_back(hit);
      }
    } else {
      NNC_CHECK(to.size() == from.size(), "%s: %zu parameters to share from %zu", what, to.size(), from.size());
      matched = from;
    }
    for (size_t i = 0; i < to.size(); i++) {
      NNC_CHECK(std::memcmp(to[i]->tensor->info.dim, matched[i]->tensor->info.dim, sizeof(to[i]->tensor->info.dim)) == 0 &&
                    to[i]->tensor->info.datatype == matched[i]->tensor->info.datatype,
                "%s: %s and %s differ in shape or type", what, to[i]->name.c_str(), matched[i]->name.c_str());
    }
    for (size_t i = 0; i < to.size(); i++) {
      to[i]->tensor = matched[i]->tensor;
      to[i]->initialized = true;
    }
    drop_jits(model);  // the compiled graphs bound the old tensors
    params_written(model);
  });
}

NNC_API void ccv_cnnp_model_parameters_zip_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd,
                                               const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins, const int aux_in_size,
                                               ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size, ccv_nnc_stream_context_t* const stream_context,
                                               const ccv_cnnp_model_t* const from_model, const ccv_cnnp_model_io_t from_parameters) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_parameters_zip_map";
    auto to = select(check_model(model, what), parameters, what);
    auto from = select(check_model(from_model, what), from_parameters, what);
    NNC_CHECK(to.size() == from.size(), "%s: %zu parameters zipped with %zu", what, to.size(), from.size());
    std::vector<ccv_nnc_tensor_t*> t, f;
    for (size_t i = 0; i < to.size(); i++) t.push_back(to[i]->tensor.get()), f.push_back(from[i]->tensor.get());
    map_tensors(t, f, cmd, hint, flags, aux_ins, aux_in_size, aux_outs, aux_out_size, stream_context, what);
    params_written(model);
  });
}

NNC_API void ccv_cnnp_model_parameters_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd,
                                           const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins, const int aux_in_size,
                                           ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_parameters_map";
    std::vector<ccv_nnc_tensor_t*> t;
    for (Param* p : select(check_model(model, what), parameters, what)) t.push_back(p->tensor.get());
    map_tensors(t, {}, cmd, hint, flags, aux_ins, aux_in_size, aux_outs, aux_out_size, stream_context, what);
    params_written(model);
  });
}

// The gradients ccv_cnnp_model_backward summed for the selected parameters.
static std::vector<ccv_nnc_tensor_t*> gradients_of(Model* m, const ccv_cnnp_model_io_t parameters, const char* what) {
  std::vector<ccv_nnc_tensor_t*> g;
  for (Param* p : select(m, parameters, what))
    if (p->has_gradient && p->gradient) g.push_back(p->gradient.get());
  NNC_CHECK(!g.empty(), "%s: no gradients (call ccv_cnnp_model_evaluate with requires_grad and ccv_cnnp_model_backward first)", what);
  for (auto* t : g)
    NNC_CHECK(t->info.datatype == CCV_32F || t->info.datatype == CCV_64F, "%s: gradients of fp32 or fp64 parameters only", what);
  return g;
}

static double element(const ccv_nnc_tensor_t* t, size_t i) { return t->info.datatype == CCV_64F ? t->data.f64[i] : t->data.f32[i]; }

// A gradient's values where the host can read them: itself, or a host copy of a GPU tensor.
static nnc::cnnp::TensorRef readable(ccv_nnc_tensor_t* t, const char* what) {
  if (CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_CPU_MEMORY) return nnc::cnnp::TensorRef(t, [](ccv_nnc_tensor_t*) {});
  ccv_nnc_tensor_param_t p = t->info;
  p.type = CCV_TENSOR_CPU_MEMORY;
  nnc::cnnp::TensorRef h = nnc::cnnp::new_tensor(p);
  nnc::cnnp::copy_values(t, h.get(), what);
  return h;
}

NNC_API void ccv_cnnp_model_parameter_gradients_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd,
                                                    const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins,
                                                    const int aux_in_size, ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size,
                                                    ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_parameter_gradients_map";
    auto g = gradients_of(check_model(model, what), parameters, what);
    map_tensors(g, {}, cmd, hint, flags, aux_ins, aux_in_size, aux_outs, aux_out_size, stream_context, what);
  });
}

NNC_API void ccv_cnnp_model_parameters_clip_grad_norm(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, int norm_type, float max_norm,
                                                      ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    const char* what = "ccv_cnnp_model_parameters_clip_grad_norm";
    (void)stream_context;
    NNC_CHECK(norm_type == 2, "%s: only the 2-norm is supported (norm_type %d)", what, norm_type);
    NNC_CHECK(max_norm >= 0, "%s: max_norm %g is negative", what, static_cast<double>(max_norm));
    auto g = gradients_of(check_model(model, what), parameters, what);
    double sum = 0;
    for (auto* t : g) {
      const auto h = readable(t, what);
      for (size_t i = 0, n = ccv_nnc_tensor_count(h->info); i < n; i++) sum += element(h.get(), i) * element(h.get(), i);
    }
    const double total = std::sqrt(sum);
    // PyTorch's clip_grad_norm_: scale by max_norm / (total + 1e-6) when that is below 1.
    const double scale = max_norm / (total + 1e-6);
    if (scale >= 1) return;
    for (auto* t : g) {
      if (CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_CPU_MEMORY) {
        for (size_t i = 0, n = ccv_nnc_tensor_count(t->info); i < n; i++) {
          if (t->info.datatype == CCV_64F) t->data.f64[i] *= scale;
          else t->data.f32[i] = static_cast<float>(t->data.f32[i] * scale);
        }
        continue;
      }
      // On the device: SCALAR_MUL in place.
      ccv_nnc_cmd_param_t p;
      std::memset(&p, 0, sizeof(p));
      p.blas.a[0] = static_cast<float>(scale);
      const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SCALAR_MUL_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, 0, &t, 1, &t, 1, nullptr);
      NNC_CHECK(r == CCV_NNC_EXEC_SUCCESS, "%s: scaling a GPU gradient: %s", what, ccv_nnc_error_message());
    }
  });
}

NNC_API int ccv_cnnp_model_parameter_gradients_isnan(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters,
                                                     ccv_nnc_stream_context_t* const stream_context) {
  return guard<int>(-1, [&]() -> int {
    const char* what = "ccv_cnnp_model_parameter_gradients_isnan";
    (void)stream_context;
    for (auto* t : gradients_of(check_model(model, what), parameters, what)) {
      const auto h = readable(t, what);
      for (size_t i = 0, n = ccv_nnc_tensor_count(h->info); i < n; i++)
        if (std::isnan(element(h.get(), i))) return 1;
    }
    return 0;
  });
}

NNC_API void ccv_cnnp_model_set_minimizer(ccv_cnnp_model_t* const model, const ccv_nnc_cmd_t minimizer, const int reset,
                                          const ccv_cnnp_model_io_t* const parameters, const int parameter_size) {
  guard_void([&] { set_minimizer(model, minimizer, reset, parameters, parameter_size); });
}

NNC_API ccv_nnc_cmd_t ccv_cnnp_model_minimizer(ccv_cnnp_model_t* const model) {
  return guard<ccv_nnc_cmd_t>(ccv_nnc_cmd_t{}, [&] { return compiled_of(model, "ccv_cnnp_model_minimizer").minimizer; });
}

// Bindings support: compile with the commands by pointer.
NNC_API int ccv_cnnp_model_compile_p(ccv_cnnp_model_t* const model, const ccv_nnc_tensor_param_t* const inputs, const int input_size,
                                     const ccv_nnc_cmd_t* const minimizer, const ccv_nnc_cmd_t* const loss) {
  return guard_code([&]() -> int {
    NNC_CHECK(minimizer && loss, "ccv_cnnp_model_compile_p: minimizer and loss must not be NULL");
    // The void call reports failure through the message this guard cleared.
    ccv_cnnp_model_compile(model, inputs, input_size, *minimizer, *loss);
    return nnc::detail::t_guard.error_set ? -1 : 0;
  });
}
