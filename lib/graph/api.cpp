// The exported Level-2 functions: thin shims over lib/graph/graph.cpp.
#include <cstring>
#include <memory>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "graph/graph.hpp"
#include "graph/schedule.hpp"

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
  guard_void([&] {
    auto& node = node_of(graph, exec, "ccv_nnc_graph_exec_set");
    NNC_CHECK(node.kind == ccv_nnc_graph_s::Kind::Command, "ccv_nnc_graph_exec_set: node %d is a while or case..of node", exec.d);
    node.cmd = cmd;
    invalidate_plans(graph);
  });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_graph_exec_cmd(const ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec) {
  ccv_nnc_cmd_t noop;
  std::memset(&noop, 0, sizeof(noop));
  return guard<ccv_nnc_cmd_t>(noop, [&] { return node_of(const_cast<ccv_nnc_graph_t*>(graph), exec, "ccv_nnc_graph_exec_cmd").cmd; });
}

NNC_API void ccv_nnc_graph_exec_set_hint(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_hint_t hint) {
  guard_void([&] {
    auto& node = node_of(graph, exec, "ccv_nnc_graph_exec_set_hint");
    node.hint = hint;
    invalidate_plans(graph);
  });
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
      if (node.kind != ccv_nnc_graph_s::Kind::Command || node.has_multiview) continue;  // bound per round
      node.cmd = cmd_autotune(node.cmd, max_workspace_size, node.hint, flags, node.inputs.data(), static_cast<int>(node.inputs.size()),
                              node.outputs.data(), static_cast<int>(node.outputs.size()), nullptr);
    }
    invalidate_plans(graph);
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
    invalidate_defaults(graph);
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
    invalidate_defaults(graph);
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
  const int code = guard_code([&] {
    stream_take_held(stream_context);  // core/stream.hpp: a failure the last wait reported comes back here
    return run(graph, flags, sources, source_size, destinations, destination_size, tensor_tape, stream_context);
  });
  if (__builtin_expect(memory_efficient(), 0) && GuardScope::outside()) release_thread_workspace();
  return code;
}

// --- static schedules --------------------------------------------------------

NNC_API void ccv_nnc_graph_set_default_static_schedule(ccv_nnc_graph_t* const graph, const int stream_type, const int max_stream_count) {
  guard_void([&] {
    auto s = std::make_unique<Schedule>(make_schedule(graph, stream_type, max_stream_count, nullptr, 0, nullptr, 0));
    graph->default_schedule = std::move(s);
  });
}

NNC_API ccv_nnc_graph_static_schedule_t* ccv_nnc_graph_static_schedule_new(ccv_nnc_graph_t* const graph, const int stream_type, const int max_stream_count,
                                                                           const ccv_nnc_graph_exec_t* const sources, const int source_size,
                                                                           const ccv_nnc_graph_exec_t* const destinations, const int destination_size) {
  return guard<ccv_nnc_graph_static_schedule_t*>(nullptr, [&] {
    auto s = std::make_unique<ccv_nnc_graph_static_schedule_s>();
    s->s = make_schedule(graph, stream_type, max_stream_count, sources, source_size, destinations, destination_size);
    return s.release();
  });
}

NNC_API void ccv_nnc_graph_static_schedule_free(ccv_nnc_graph_static_schedule_t* const schedule) { delete schedule; }

NNC_API ccv_nnc_stream_context_t* ccv_nnc_graph_default_stream(const ccv_nnc_graph_t* const graph) {
  return guard<ccv_nnc_stream_context_t*>(nullptr, [&]() -> ccv_nnc_stream_context_t* {
    NNC_CHECK(graph, "ccv_nnc_graph_default_stream: graph is NULL");
    auto* g = const_cast<ccv_nnc_graph_t*>(graph);
    if (!g->default_schedule && !g->streams) return nullptr;
    if (!g->streams) g->streams = std::make_unique<Streams>();
    if (g->default_schedule) return g->streams->take(g->default_schedule->stream_types)[0];
    if (g->streams->s.empty()) return g->streams->take({CCV_STREAM_CONTEXT_CPU})[0];
    return g->streams->s[0];
  });
}

NNC_API int ccv_nnc_graph_run_with_schedule(ccv_nnc_graph_t* const graph, const int flags, const ccv_nnc_graph_static_schedule_t* const schedule,
                                            ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context) {
  (void)flags;
  return guard_code([&] {
    NNC_CHECK(graph, "ccv_nnc_graph_run_with_schedule: graph is NULL");
    NNC_CHECK(schedule, "ccv_nnc_graph_run_with_schedule: schedule is NULL");
    NNC_CHECK(!graph->parent, "ccv_nnc_graph_run_with_schedule: this graph is a sub-graph; run its parent");
    stream_take_held(stream_context);
    return run_schedule(graph, schedule->s, tensor_tape, stream_context);
  });
}

NNC_API void ccv_nnc_graph_cancel(ccv_nnc_graph_t* const graph) {
  if (graph) graph->cancelled.store(true);
}

// --- other node properties -----------------------------------------------------

NNC_API void ccv_nnc_graph_exec_set_io_flags(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const int* const input_flags,
                                             const int input_flag_size, const int* const output_flags, const int output_flag_size) {
  guard_void([&] {
    auto& node = node_of(graph, exec, "ccv_nnc_graph_exec_set_io_flags");
    NNC_CHECK(input_flag_size == 0 || (input_flags && static_cast<size_t>(input_flag_size) == node.inputs.size()),
              "ccv_nnc_graph_exec_set_io_flags: %d input flags for %zu inputs", input_flag_size, node.inputs.size());
    NNC_CHECK(output_flag_size == 0 || (output_flags && static_cast<size_t>(output_flag_size) == node.outputs.size()),
              "ccv_nnc_graph_exec_set_io_flags: %d output flags for %zu outputs", output_flag_size, node.outputs.size());
    node.input_flags.assign(input_flags, input_flags + input_flag_size);
    node.output_flags.assign(output_flags, output_flags + output_flag_size);
  });
}

NNC_API void ccv_nnc_graph_exec_pair_with(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_graph_exec_t pair_exec) {
  guard_void([&] {
    auto& node = node_of(graph, exec, "ccv_nnc_graph_exec_pair_with");
    node_of(graph, pair_exec, "ccv_nnc_graph_exec_pair_with: pair");
    node.pair = pair_exec.d;
  });
}

NNC_API void ccv_nnc_graph_add_carry_over(ccv_nnc_graph_t* const graph, const ccv_nnc_tensor_t* const from, const ccv_nnc_tensor_t* const to) {
  guard_void([&] { add_carry_over(graph, from, to); });
}

NNC_API void ccv_nnc_graph_exec_add_as_affected(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_tensor_t* const update) {
  guard_void([&] {
    auto& node = node_of(graph, exec, "ccv_nnc_graph_exec_add_as_affected");
    NNC_CHECK(update, "ccv_nnc_graph_exec_add_as_affected: tensor is NULL");
    node.affected.push_back(update);
    invalidate_plans(graph);
  });
}

// --- while loops and case..of ------------------------------------------------------

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_while(ccv_nnc_graph_t* const graph, const uint32_t cmd, ccv_nnc_graph_t* const while_graph) {
  return guard<ccv_nnc_graph_exec_t>(no_exec(), [&] { return while_new(graph, cmd, while_graph); });
}

NNC_API void ccv_nnc_graph_set_while_expr(ccv_nnc_graph_t* const while_graph, const ccv_nnc_graph_while_f while_expr, const void* const while_data,
                                          ccv_nnc_tensor_t* const* const inputs, const int input_size,
                                          const ccv_nnc_graph_exec_t* const breakpoints, const int breakpoint_size) {
  guard_void([&] { set_while_expr(while_graph, while_expr, while_data, inputs, input_size, breakpoints, breakpoint_size); });
}

NNC_API ccv_nnc_tensor_t ccv_nnc_tensor_for_while_count(const ccv_nnc_graph_t* const while_graph) {
  ccv_nnc_tensor_t t;
  std::memset(&t, 0, sizeof(t));
  guard_void([&] {
    NNC_CHECK(while_graph, "ccv_nnc_tensor_for_while_count: graph is NULL");
    t.type = CCV_TENSOR_CPU_MEMORY;
    t.info.type = CCV_TENSOR_CPU_MEMORY;
    t.info.format = CCV_TENSOR_FORMAT_NHWC;
    t.info.datatype = CCV_64S;
    t.info.dim[0] = 1;
    t.data.i64 = const_cast<int64_t*>(&while_graph->loop_count);
  });
  return t;
}

NNC_API ccv_nnc_graph_t* ccv_nnc_graph_from_while_exec(const ccv_nnc_graph_t* const graph, ccv_nnc_graph_exec_t exec) {
  return guard<ccv_nnc_graph_t*>(nullptr, [&]() -> ccv_nnc_graph_t* {
    auto& node = node_of(const_cast<ccv_nnc_graph_t*>(graph), exec, "ccv_nnc_graph_from_while_exec");
    NNC_CHECK(node.kind == ccv_nnc_graph_s::Kind::While, "ccv_nnc_graph_from_while_exec: node %d is not a while node", exec.d);
    return node.subs[0];
  });
}

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_case_of_new(ccv_nnc_graph_t* const graph, const uint32_t cmd, ccv_nnc_tensor_t* const* const inputs,
                                                       const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  return guard<ccv_nnc_graph_exec_t>(no_exec(), [&] { return case_of_new(graph, cmd, inputs, input_size, outputs, output_size); });
}

NNC_API void ccv_nnc_graph_set_case_of_expr(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_graph_case_of_f case_of,
                                            const void* case_of_data, const int offset) {
  guard_void([&] { set_case_of_expr(graph, exec, case_of, case_of_data, offset); });
}

NNC_API void ccv_nnc_graph_set_case_of(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_graph_t* const case_graph,
                                       const int case_of) {
  guard_void([&] { set_case_of(graph, exec, case_graph, case_of); });
}

// --- the tape --------------------------------------------------------------------------

NNC_API ccv_nnc_tensor_tape_t* ccv_nnc_tensor_tape_new(void) {
  return guard<ccv_nnc_tensor_tape_t*>(nullptr, [] { return std::make_unique<ccv_nnc_tensor_tape_s>().release(); });
}

NNC_API void ccv_nnc_tensor_tape_free(ccv_nnc_tensor_tape_t* const tape) { delete tape; }

namespace {
std::vector<int64_t> current_rounds(ccv_nnc_tensor_tape_t* tape, const ccv_nnc_graph_t* graph) {
  std::lock_guard<std::mutex> lock(tape->mutex);
  auto it = tape->current.find(graph);
  return it == tape->current.end() ? std::vector<int64_t>{} : it->second;
}
}  // namespace

NNC_API void ccv_nnc_tensor_tape_io(ccv_nnc_tensor_tape_t* const tape, const ccv_nnc_graph_t* const graph, const int* const input_flags,
                                    ccv_nnc_tensor_t* const* const inputs, const int input_size, const int* const output_flags,
                                    ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  guard_void([&] {
    NNC_CHECK(tape && graph, "ccv_nnc_tensor_tape_io: tape or graph is NULL");
    NNC_CHECK(input_size >= 0 && output_size >= 0, "ccv_nnc_tensor_tape_io: negative sizes");
    NNC_CHECK(input_size == 0 || (inputs && input_flags), "ccv_nnc_tensor_tape_io: inputs or their flags are NULL");
    NNC_CHECK(output_size == 0 || (outputs && output_flags), "ccv_nnc_tensor_tape_io: outputs or their flags are NULL");
    const std::vector<int64_t> rounds = current_rounds(tape, graph);
    for (int i = 0; i < input_size; i++)
      if (input_flags[i] && inputs[i]) {
        ccv_nnc_tensor_t* t = resolve(inputs[i]);
        NNC_CHECK(t, "ccv_nnc_tensor_tape_io: input %d is a multi-view that points at nothing", i);
        tape_keep(tape, inputs[i], t, rounds);
      }
    for (int i = 0; i < output_size; i++)
      if (output_flags[i] && outputs[i]) {
        ccv_nnc_tensor_t* t = resolve(outputs[i]);
        NNC_CHECK(t, "ccv_nnc_tensor_tape_io: output %d is a multi-view that points at nothing", i);
        tape_keep(tape, outputs[i], t, rounds);
      }
  });
}

NNC_API uint64_t ccv_nnc_tensor_tape_numbering(ccv_nnc_tensor_tape_t* const tape, const ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec) {
  return guard<uint64_t>(0, [&]() -> uint64_t {
    NNC_CHECK(tape, "ccv_nnc_tensor_tape_numbering: tape is NULL");
    node_of(const_cast<ccv_nnc_graph_t*>(graph), exec, "ccv_nnc_tensor_tape_numbering");
    uint64_t n = 0;
    NNC_CHECK(tape_number(tape, graph, exec.d, current_rounds(tape, graph), &n),
              "ccv_nnc_tensor_tape_numbering: nothing recorded for node %d at the current rounds", exec.d);
    return n;
  });
}

NNC_API void ccv_nnc_tensor_tape_set_numbering(ccv_nnc_tensor_tape_t* const tape, ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec,
                                               const uint64_t numbering) {
  guard_void([&] {
    NNC_CHECK(tape, "ccv_nnc_tensor_tape_set_numbering: tape is NULL");
    node_of(graph, exec, "ccv_nnc_tensor_tape_set_numbering");
    tape_record_number(tape, graph, exec.d, current_rounds(tape, graph), numbering);
  });
}

// --- multi-view tensors ----------------------------------------------------------------

NNC_API void ccv_nnc_tensor_multiview(ccv_nnc_tensor_t* data[], const uint8_t kind, const uint16_t repeat, const ccv_nnc_graph_t* const graph,
                                      ccv_nnc_tensor_multiview_t* const tensor_multiview) {
  guard_void([&] {
    NNC_CHECK(tensor_multiview, "ccv_nnc_tensor_multiview: the multi-view is NULL");
    ccv_nnc_tensor_multiview_t& mv = *tensor_multiview;
    std::memset(&mv, 0, sizeof(mv));
    mv.type = CCV_TENSOR_MULTIVIEW;  // a multi-view that refuses to run until set up fully
    NNC_CHECK(kind == CCV_NNC_MULTIVIEW_K0N || kind == CCV_NNC_MULTIVIEW_K1N, "ccv_nnc_tensor_multiview: kind %d is neither K0N nor K1N", kind);
    NNC_CHECK(repeat > 0, "ccv_nnc_tensor_multiview: the repeat length must be at least 1");
    NNC_CHECK(data, "ccv_nnc_tensor_multiview: data is NULL");
    NNC_CHECK(graph, "ccv_nnc_tensor_multiview: the anchor graph is NULL");
    const int n = kind + repeat;
    for (int i = 0; i < n; i++) NNC_CHECK(data[i], "ccv_nnc_tensor_multiview: entry %d of %d is NULL", i, n);
    ccv_nnc_tensor_t** slots = mv._inline_data;
    if (n > 4) {
      slots = static_cast<ccv_nnc_tensor_t**>(std::calloc(static_cast<size_t>(n), sizeof(ccv_nnc_tensor_t*)));
      if (!slots) fail(CCV_NNC_EXEC_OOM, "ccv_nnc_tensor_multiview: out of memory");
      mv._heap_data = slots;
    }
    for (int i = 0; i < n; i++) {
      slots[i] = data[i];
      if (CCV_IS_TENSOR_MULTIVIEW(data[i])) reinterpret_cast<ccv_nnc_tensor_multiview_t*>(data[i])->p = &mv;
    }
    mv.kind = kind;
    mv.repeat = repeat;
    mv.anchor = reinterpret_cast<intptr_t>(graph);
    mv.type = CCV_TENSOR_MULTIVIEW | (CCV_IS_TENSOR_MULTIVIEW(data[0]) ? 0 : CCV_TENSOR_GET_MEMORY(data[0]->type));
  });
}

NNC_API void ccv_nnc_tensor_multiview_free(const ccv_nnc_tensor_multiview_t tensor_multiview) {
  std::free(tensor_multiview._heap_data);
  if (tensor_multiview.sp) ccv_array_free(tensor_multiview.sp);
}

NNC_API void ccv_nnc_tensor_synchronize_to_multiview(ccv_nnc_tensor_multiview_t* const tensor_multiview, ccv_nnc_tensor_t* const tensor) {
  guard_void([&] {
    NNC_CHECK(tensor_multiview && tensor, "ccv_nnc_tensor_synchronize_to_multiview: NULL argument");
    NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(tensor), "ccv_nnc_tensor_synchronize_to_multiview: the follower must be a plain tensor or view");
    if (!tensor_multiview->sp) {
      tensor_multiview->sp = ccv_array_new(sizeof(ccv_nnc_tensor_t*), 4, 0);
      if (!tensor_multiview->sp) fail(CCV_NNC_EXEC_OOM, "ccv_nnc_tensor_synchronize_to_multiview: out of memory");
    }
    ccv_nnc_tensor_t* t = tensor;
    ccv_array_push(tensor_multiview->sp, &t);
  });
}

NNC_API void ccv_nnc_tensor_multiview_synchronize(ccv_nnc_tensor_multiview_t* const tensor_multiview) {
  if (!tensor_multiview || !tensor_multiview->sp) return;
  ccv_nnc_tensor_t* it = resolve(tensor_multiview->it);
  if (!it) return;
  for (int i = 0; i < tensor_multiview->sp->rnum; i++) {
    ccv_nnc_tensor_t* follower = *static_cast<ccv_nnc_tensor_t**>(ccv_array_get(tensor_multiview->sp, i));
    follower->data = it->data;
  }
}

}  // extern "C"
