// Exported Level-3 functions: argument checks and the guard around the C++ code.
#include <algorithm>
#include <cstring>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/tensor.hpp"
#include "symbolic/compile.hpp"
#include "symbolic/data_parallel.hpp"
#include "symbolic/graph.hpp"
#include "symbolic/simplify.hpp"

using namespace nnc;
using namespace nnc::symbolic;

const ccv_nnc_symbolic_graph_compile_param_t ccv_nnc_default_compile_params = {};

namespace {

constexpr ccv_nnc_tensor_symbol_t kNoTensor = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
constexpr ccv_nnc_graph_exec_symbol_t kNoExec = {CCV_NNC_NO_GRAPH_EXEC_SYMBOL, nullptr};
constexpr ccv_nnc_graph_exec_t kNoNode = {-1, nullptr};

Graph* mut(const ccv_nnc_symbolic_graph_t* g) { return const_cast<Graph*>(g); }

void check_arena_symbol(const void* arena_graph, const ccv_nnc_symbolic_graph_t* symbol_graph, int d, size_t count,
                        const char* what, const char* kind) {
  NNC_CHECK(symbol_graph == arena_graph, "%s: %s symbol %d is not of the graph this arena was compiled from", what, kind, d);
  NNC_CHECK(d >= 0 && static_cast<size_t>(d) < count, "%s: %s symbol %d does not exist in the compiled graph", what, kind, d);
}

}  // namespace

NNC_API ccv_nnc_symbolic_graph_t* ccv_nnc_symbolic_graph_new(void) {
  return guard<ccv_nnc_symbolic_graph_t*>(nullptr, [] { return std::make_unique<ccv_nnc_symbolic_graph_s>().release(); });
}

NNC_API void ccv_nnc_symbolic_graph_free(ccv_nnc_symbolic_graph_t* const graph) {
  guard_void([&] {
    // A sub-graph goes with the graph that owns it.
    NNC_CHECK(!graph || !graph->parent, "ccv_nnc_symbolic_graph_free: the graph is a loop body or branch of %s; free the graph that owns it",
              exec_label(graph->parent, graph->exec_in_parent).c_str());
    delete graph;
  });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_new(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_param_t info,
                                                          const char* const name) {
  return guard(kNoTensor, [&] { return tensor_new(graph, info, name); });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_alias_new(ccv_nnc_symbolic_graph_t* const graph,
                                                                const ccv_nnc_tensor_symbol_t tensor_symbol,
                                                                const int ofs[CCV_NNC_MAX_DIM_ALLOC],
                                                                const int stride[CCV_NNC_MAX_DIM_ALLOC],
                                                                const ccv_nnc_tensor_param_t info, const char* const name) {
  return guard(kNoTensor, [&] { return alias_new(graph, tensor_symbol, ofs, stride, info, name); });
}

NNC_API void ccv_nnc_tensor_symbol_free(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_t tensor) {
  guard_void([&] { tensor_free(graph, tensor); });
}

NNC_API ccv_nnc_graph_exec_symbol_t ccv_nnc_graph_exec_symbol_new(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_cmd_t cmd,
                                                                  const ccv_nnc_tensor_symbol_t* const inputs, const int input_size,
                                                                  const ccv_nnc_tensor_symbol_t* const outputs,
                                                                  const int output_size, const char* const name) {
  return guard(kNoExec, [&] { return exec_new(graph, cmd, inputs, input_size, outputs, output_size, name); });
}

NNC_API void ccv_nnc_graph_exec_symbol_set_hint(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec,
                                                const ccv_nnc_hint_t hint) {
  guard_void([&] { exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_set_hint").hint = hint; });
}

NNC_API void ccv_nnc_graph_exec_symbol_free(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_graph_exec_symbol_t symbol) {
  guard_void([&] { exec_free(graph, symbol); });
}

NNC_API int ccv_nnc_graph_exec_symbol_autogen(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const execs,
                                              const int exec_size, const int flags) {
  return guard<int>(-1, [&] {
    static const char* what = "ccv_nnc_graph_exec_symbol_autogen";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    NNC_CHECK(exec_size >= 0 && (exec_size == 0 || execs), "%s: bad execs array (size %d)", what, exec_size);
    std::vector<int> set;
    for (int i = 0; i < exec_size; i++) {
      exec_of(graph, execs[i], what);
      set.push_back(execs[i].d);
    }
    autogen(graph, set, flags & CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
    return 0;
  });
}

namespace {

void set_ends(Graph* g, std::vector<ccv_nnc_graph_exec_symbol_t>& ends, const ccv_nnc_graph_exec_symbol_t* list, int size,
              const char* what) {
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(size >= 0 && (size == 0 || list), "%s: bad array (size %d)", what, size);
  for (int i = 0; i < size; i++) exec_of(g, list[i], what);
  ends.assign(list, list + size);
}

}  // namespace

NNC_API void ccv_nnc_symbolic_graph_set_sources(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources,
                                                const int source_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_set_sources: the symbolic graph is NULL");
    set_ends(graph, graph->sources, sources, source_size, "ccv_nnc_symbolic_graph_set_sources");
  });
}

NNC_API void ccv_nnc_symbolic_graph_add_source(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source) {
  guard_void([&] {
    exec_of(graph, source, "ccv_nnc_symbolic_graph_add_source");
    for (const auto& s : graph->sources)
      if (s.d == source.d) return;
    graph->sources.push_back(source);
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t* ccv_nnc_symbolic_graph_sources(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph && !graph->sources.empty() ? mut(graph)->sources.data() : nullptr;
}

NNC_API int ccv_nnc_symbolic_graph_source_size(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph ? static_cast<int>(graph->sources.size()) : 0;
}

NNC_API void ccv_nnc_symbolic_graph_set_destinations(ccv_nnc_symbolic_graph_t* const graph,
                                                     const ccv_nnc_graph_exec_symbol_t* const destinations,
                                                     const int destination_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_set_destinations: the symbolic graph is NULL");
    set_ends(graph, graph->destinations, destinations, destination_size, "ccv_nnc_symbolic_graph_set_destinations");
  });
}

NNC_API void ccv_nnc_symbolic_graph_add_destination(ccv_nnc_symbolic_graph_t* const graph,
                                                    const ccv_nnc_graph_exec_symbol_t destination) {
  guard_void([&] {
    exec_of(graph, destination, "ccv_nnc_symbolic_graph_add_destination");
    for (const auto& s : graph->destinations)
      if (s.d == destination.d) return;
    graph->destinations.push_back(destination);
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t* ccv_nnc_symbolic_graph_destinations(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph && !graph->destinations.empty() ? mut(graph)->destinations.data() : nullptr;
}

NNC_API int ccv_nnc_symbolic_graph_destination_size(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph ? static_cast<int>(graph->destinations.size()) : 0;
}

namespace {

// One graph's nodes and edges; a loop's body and a case..of's branches go in
// clusters beside the node that runs them. Node names carry the path of
// sub-graphs ("node3_0_2": node 2 of sub-graph 0 of node 3).
void dot_graph(const Graph* graph, int flags, FILE* out, const std::string& prefix) {
  auto tensor_text = [&](int d) {
    if (d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) return std::string("count");
    if (d < 0) return std::string("-");
    const Graph::Tensor& t = graph->tensors[static_cast<size_t>(d)];
    std::string s = t.name.empty() ? format("t%d", d) : t.name;
    if (flags & CCV_NNC_LONG_DOT_GRAPH) s += format(" %s %s", datatype_name(t.info.datatype), shape_string(t.info.dim).c_str());
    return s;
  };
  for (size_t e = 0; e < graph->execs.size(); e++) {
    const Graph::Exec& x = graph->execs[e];
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
    const char* cmd = x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE ? "while" : x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF ? "case..of" : cmd_name(x.cmd.cmd);
    std::string label = format("%s%s%s|%s", x.name.c_str(), x.name.empty() ? "" : " ", cmd ? cmd : "custom", "in:");
    for (int d : x.inputs) label.append(1, ' ').append(tensor_text(d));
    label += "|out:";
    for (int d : x.outputs) label.append(1, ' ').append(tensor_text(d));
    std::string escaped;
    for (char c : label) {
      if (c == '"' || c == '{' || c == '}' || c == '<' || c == '>') escaped += '\\';
      escaped += c;
    }
    std::fprintf(out, "node%s%zu [shape=record,label=\"%s\"];\n", prefix.c_str(), e, escaped.c_str());
    for (size_t i = 0; i < x.subs.size(); i++) {
      if (!x.subs[i]) continue;
      const std::string sub = format("%s%zu_%zu_", prefix.c_str(), e, i);
      std::fprintf(out, "subgraph cluster%s {\nlabel=\"%s\";\n", sub.c_str(),
                   x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE ? "body" : format("branch %zu", i).c_str());
      dot_graph(x.subs[i], flags, out, sub);
      std::fprintf(out, "}\n");
    }
  }
  for (size_t e = 0; e < graph->execs.size(); e++) {
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[e].flags)) continue;
    for (int t : graph->execs[e].outgoing) std::fprintf(out, "node%s%zu -> node%s%d;\n", prefix.c_str(), e, prefix.c_str(), t);
  }
}

}  // namespace

NNC_API void ccv_nnc_symbolic_graph_dot(const ccv_nnc_symbolic_graph_t* const graph, const int flags, FILE* out) {
  guard_void([&] {
    NNC_CHECK(graph && out, "ccv_nnc_symbolic_graph_dot: graph or out is NULL");
    std::fprintf(out, "digraph G {\ncompound=true;\n");
    dot_graph(graph, flags, out, "");
    std::fprintf(out, "}\n");
  });
}

NNC_API void ccv_nnc_symbolic_graph_compile(const ccv_nnc_symbolic_graph_t* const graph,
                                            const ccv_nnc_symbolic_graph_compile_param_t compile_params,
                                            const ccv_nnc_tensor_bind_t* const tensor_binds, const int tensor_bind_size,
                                            const ccv_nnc_tensor_symbol_t* const outputs, const int output_size,
                                            const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size,
                                            const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size,
                                            ccv_nnc_graph_t** const graph_ref, ccv_nnc_tensor_arena_t** const tensor_arena_ref,
                                            ccv_nnc_graph_exec_arena_t** const graph_exec_arena_ref) {
  if (graph_ref) *graph_ref = nullptr;
  if (tensor_arena_ref) *tensor_arena_ref = nullptr;
  if (graph_exec_arena_ref) *graph_exec_arena_ref = nullptr;
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_compile";
    NNC_CHECK(graph_ref && tensor_arena_ref && graph_exec_arena_ref, "%s: graph_ref, tensor_arena_ref and graph_exec_arena_ref are required",
              what);
    const Compiled c = compile(graph, compile_params.allocator, tensor_binds, tensor_bind_size, outputs, output_size, sources,
                               source_size, destinations, destination_size);
    *graph_ref = c.graph;
    *tensor_arena_ref = c.tensor_arena;
    *graph_exec_arena_ref = c.exec_arena;
  });
}

NNC_API ccv_nnc_tensor_t* ccv_nnc_tensor_from_symbol(const ccv_nnc_tensor_arena_t* const tensor_arena,
                                                     const ccv_nnc_tensor_symbol_t symbol) {
  return guard<ccv_nnc_tensor_t*>(nullptr, [&]() -> ccv_nnc_tensor_t* {
    return tensor_from_symbol(tensor_arena, symbol);
  });
}

NNC_API void ccv_nnc_tensor_bind_symbol(ccv_nnc_tensor_arena_t* const tensor_arena, const ccv_nnc_tensor_symbol_t symbol,
                                        const ccv_nnc_tensor_t* const tensor) {
  guard_void([&] { bind(tensor_arena, symbol, tensor); });
}

NNC_API void ccv_nnc_tensor_arena_clear_bindings(ccv_nnc_tensor_arena_t* const tensor_arena) {
  guard_void([&] {
    NNC_CHECK(tensor_arena, "ccv_nnc_tensor_arena_clear_bindings: the tensor arena is NULL");
    for (size_t d = 0; d < tensor_arena->headers.size(); d++)
      if (tensor_arena->headers[d] && tensor_arena->base[d] == static_cast<int>(d))
        bind(tensor_arena, {static_cast<int32_t>(d), tensor_arena->graph}, nullptr);
  });
}

NNC_API void ccv_nnc_tensor_arena_buffer_free(ccv_nnc_tensor_arena_t* const tensor_arena) {
  guard_void([&] {
    NNC_CHECK(tensor_arena, "ccv_nnc_tensor_arena_buffer_free: the tensor arena is NULL");
    if (!tensor_arena->buffer && tensor_arena->sides.empty()) return;
    // Tensors that pointed into the buffers point nowhere now (a run fails with a message, not a stray write).
    std::vector<std::pair<const unsigned char*, const unsigned char*>> ranges;
    if (tensor_arena->buffer) ranges.emplace_back(tensor_arena->buffer, tensor_arena->buffer + tensor_arena->size);
    for (const auto& side : tensor_arena->sides) {
      const auto* lo = static_cast<const unsigned char*>(side.raw);
      ranges.emplace_back(lo, lo + side.size);
    }
    auto inside = [&](const unsigned char* p) {
      for (const auto& [lo, hi] : ranges)
        if (p >= lo && p < hi) return true;
      return false;
    };
    for (size_t d = 0; d < tensor_arena->headers.size(); d++) {
      if (inside(tensor_arena->own[d])) tensor_arena->own[d] = nullptr;
      ccv_nnc_tensor_view_t* h = tensor_arena->headers[d].get();
      if (h && inside(h->data.u8)) h->data.u8 = nullptr;
    }
    for (auto& sa : tensor_arena->subs)
      for (auto& h : sa->headers)
        if (h && inside(h->data.u8)) h->data.u8 = nullptr;
    tensor_arena->release();
  });
}

NNC_API uint64_t ccv_nnc_tensor_arena_size(const ccv_nnc_tensor_arena_t* const tensor_arena) {
  if (!tensor_arena) return 0;
  uint64_t size = tensor_arena->size;  // and the other devices' arenas of a graph over several GPUs
  for (const auto& side : tensor_arena->sides) size += side.size;
  return size;
}

NNC_API void ccv_nnc_tensor_arena_free(ccv_nnc_tensor_arena_t* const tensor_arena) { delete tensor_arena; }

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_exec_from_symbol(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena,
                                                            const ccv_nnc_graph_exec_symbol_t symbol) {
  return guard(kNoNode, [&] {
    static const char* what = "ccv_nnc_graph_exec_from_symbol";
    NNC_CHECK(graph_exec_arena, "%s: the exec arena is NULL", what);
    for (const auto& sub : graph_exec_arena->subs)
      if (sub.first == symbol.graph) {
        check_arena_symbol(sub.first, symbol.graph, symbol.d, sub.second.size(), what, "exec");
        return sub.second[static_cast<size_t>(symbol.d)];
      }
    check_arena_symbol(graph_exec_arena->graph, symbol.graph, symbol.d, graph_exec_arena->execs.size(), what, "exec");
    return graph_exec_arena->execs[static_cast<size_t>(symbol.d)];
  });
}

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_exec_source(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena) {
  return graph_exec_arena ? graph_exec_arena->source : kNoNode;
}

NNC_API ccv_nnc_graph_exec_t ccv_nnc_graph_exec_destination(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena) {
  return graph_exec_arena ? graph_exec_arena->destination : kNoNode;
}

NNC_API void ccv_nnc_graph_exec_arena_free(ccv_nnc_graph_exec_arena_t* const graph_exec_arena) { delete graph_exec_arena; }

NNC_API ccv_nnc_tensor_param_t ccv_nnc_tensor_symbol_params(const ccv_nnc_symbolic_graph_t* const graph,
                                                            const ccv_nnc_tensor_symbol_t tensor) {
  return guard(ccv_nnc_tensor_param_t{}, [&] { return tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_params").info; });
}

NNC_API int ccv_nnc_tensor_symbol_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor,
                                      const ccv_nnc_tensor_param_t info) {
  return guard<int>(-1, [&] {
    Graph::Tensor& t = tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_set");
    if (nd_of(info.dim) > 0) validate_params(info, "ccv_nnc_tensor_symbol_set");
    const ccv_nnc_tensor_param_t before = t.info;
    t.info = info;
    // Its aliases (or, for an alias, itself) must still lie inside the base.
    const int b = base_of(graph, tensor.d);
    const ccv_nnc_tensor_param_t& bi = graph->tensors[static_cast<size_t>(b)].info;
    const int64_t count = nd_of(bi.dim) ? static_cast<int64_t>(bytes_of(bi) / datatype_size(bi.datatype)) : 0;
    for (int a : graph->tensors[static_cast<size_t>(b)].aliases) {
      int64_t first, last;
      element_range(graph, a, &first, &last);
      if (last >= count) {
        t.info = before;
        fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_tensor_symbol_set: %s would reach element %lld, outside %s (%lld elements)",
             tensor_label(graph, a).c_str(), static_cast<long long>(last), tensor_label(graph, b).c_str(),
             static_cast<long long>(count));
      }
    }
    return 0;
  });
}

NNC_API const char* ccv_nnc_tensor_symbol_name(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor) {
  return guard<const char*>(nullptr, [&]() -> const char* {
    const Graph::Tensor& t = tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_name");
    return t.name.empty() ? nullptr : t.name.c_str();
  });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_alias_to(const ccv_nnc_symbolic_graph_t* const graph,
                                                               const ccv_nnc_tensor_symbol_t tensor_symbol) {
  return guard(kNoTensor, [&]() -> ccv_nnc_tensor_symbol_t {
    const Graph::Tensor& t = tensor_of(graph, tensor_symbol, "ccv_nnc_tensor_symbol_alias_to");
    if (t.alias_of < 0) return kNoTensor;
    return {t.alias_of, graph};
  });
}

NNC_API int ccv_nnc_tensor_symbol_alias_params(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor,
                                               int ofs[CCV_NNC_MAX_DIM_ALLOC], int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard<int>(-1, [&] {
    const Graph::Tensor& t = tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_alias_params");
    if (t.alias_of < 0) return -1;
    if (ofs) std::memcpy(ofs, t.ofs, sizeof(t.ofs));
    if (stride) std::memcpy(stride, t.stride, sizeof(t.stride));
    return 0;
  });
}

NNC_API int ccv_nnc_tensor_symbol_alias_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor,
                                            const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard<int>(-1, [&] {
    static const char* what = "ccv_nnc_tensor_symbol_alias_set";
    Graph::Tensor& t = tensor_of(graph, tensor, what);
    NNC_CHECK(t.alias_of >= 0, "%s: %s is not an alias", what, tensor_label(graph, tensor.d).c_str());
    const int n = nd_of(t.info.dim);
    int old_ofs[CCV_NNC_MAX_DIM_ALLOC], old_stride[CCV_NNC_MAX_DIM_ALLOC];
    std::memcpy(old_ofs, t.ofs, sizeof(old_ofs));
    std::memcpy(old_stride, t.stride, sizeof(old_stride));
    for (int i = 0; i < n; i++) {
      NNC_CHECK((!ofs || ofs[i] >= 0) && (!stride || stride[i] >= 0), "%s: ofs and stride must not be negative (dimension %d)", what, i);
      t.ofs[i] = ofs ? ofs[i] : 0;
      t.stride[i] = stride ? stride[i] : 0;
    }
    // Inside its base, and (when written) apart from the parts other execs write.
    auto restore = [&] {
      std::memcpy(t.ofs, old_ofs, sizeof(old_ofs));
      std::memcpy(t.stride, old_stride, sizeof(old_stride));
    };
    const Graph::Tensor& b = graph->tensors[static_cast<size_t>(t.alias_of)];
    int64_t first, last;
    element_range(graph, tensor.d, &first, &last);
    const int64_t count = static_cast<int64_t>(bytes_of(b.info) / datatype_size(b.info.datatype));
    if (last >= count) {
      restore();
      fail(CCV_NNC_EXEC_INVALID, "%s: the alias would reach element %lld, outside %s (%lld elements)", what, static_cast<long long>(last),
           tensor_label(graph, t.alias_of).c_str(), static_cast<long long>(count));
    }
    bool written = false;
    for (int w : t.writers) written = written || !CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[static_cast<size_t>(w)].flags);
    if (written)
      for (int s : family_of(graph, t.alias_of)) {
        if (s == tensor.d) continue;
        for (int w : graph->tensors[static_cast<size_t>(s)].writers)
          if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[static_cast<size_t>(w)].flags) && may_overlap(graph, tensor.d, s)) {
            restore();
            fail(CCV_NNC_EXEC_INVALID, "%s: %s would overlap %s, which %s writes (SSA)", what, tensor_label(graph, tensor.d).c_str(),
                 tensor_label(graph, s).c_str(), exec_label(graph, w).c_str());
          }
      }
    return 0;
  });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_copy(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol,
                                                           const int device_id) {
  return guard(kNoTensor, [&]() -> ccv_nnc_tensor_symbol_t {
    const Graph::Tensor& t = tensor_of(graph, symbol, "ccv_nnc_tensor_symbol_copy");
    for (const auto& c : t.copies)
      if (c.first == device_id) return {c.second, const_cast<Graph*>(graph)};
    return kNoTensor;
  });
}

NNC_API void ccv_nnc_tensor_symbol_set_copy(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol, const int device_id,
                                            const ccv_nnc_tensor_symbol_t copy) {
  guard_void([&] {
    static const char* what = "ccv_nnc_tensor_symbol_set_copy";
    Graph::Tensor& t = tensor_of(graph, symbol, what);
    NNC_CHECK(device_id >= 0, "%s: device_id %d is negative", what, device_id);
    const bool none = copy.d == CCV_NNC_NO_TENSOR_SYMBOL;
    if (!none) tensor_of(graph, copy, what);
    auto& v = graph->tensors[static_cast<size_t>(symbol.d)].copies;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const std::pair<int, int>& c) { return c.first == device_id; }), v.end());
    if (!none) t.copies.emplace_back(device_id, copy.d);
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t ccv_nnc_graph_exec_symbol_copy(const ccv_nnc_symbolic_graph_t* const graph,
                                                                   const ccv_nnc_graph_exec_symbol_t symbol, const int device_id) {
  return guard(kNoExec, [&]() -> ccv_nnc_graph_exec_symbol_t {
    const Graph::Exec& x = exec_of(graph, symbol, "ccv_nnc_graph_exec_symbol_copy");
    for (const auto& c : x.copies)
      if (c.first == device_id) return {c.second, const_cast<Graph*>(graph)};
    return kNoExec;
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_set_copy(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol,
                                                const int device_id, const ccv_nnc_graph_exec_symbol_t copy) {
  guard_void([&] {
    static const char* what = "ccv_nnc_graph_exec_symbol_set_copy";
    Graph::Exec& x = exec_of(graph, symbol, what);
    NNC_CHECK(device_id >= 0, "%s: device_id %d is negative", what, device_id);
    const bool none = copy.d == CCV_NNC_NO_GRAPH_EXEC_SYMBOL;
    if (!none) exec_of(graph, copy, what);
    auto& v = graph->execs[static_cast<size_t>(symbol.d)].copies;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const std::pair<int, int>& c) { return c.first == device_id; }), v.end());
    if (!none) x.copies.emplace_back(device_id, copy.d);
  });
}

NNC_API int ccv_nnc_tensor_symbol_set_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor,
                                            const int flags) {
  return guard<int>(-1, [&] {
    Graph::Tensor& t = tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_set_flags");
    NNC_CHECK(!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(flags), "ccv_nnc_tensor_symbol_set_flags: free a symbol with ccv_nnc_tensor_symbol_free");
    NNC_CHECK(!((flags & CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS) && (flags & CCV_NNC_TENSOR_SYMBOL_INIT_ONES)),
              "ccv_nnc_tensor_symbol_set_flags: INIT_ZEROS and INIT_ONES together");
    t.flags = flags;
    return 0;
  });
}

NNC_API int ccv_nnc_tensor_symbol_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor) {
  return guard<int>(0, [&] { return tensor_of(graph, tensor, "ccv_nnc_tensor_symbol_flags").flags; });
}

NNC_API void ccv_nnc_graph_exec_symbol_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec,
                                           const ccv_nnc_cmd_t cmd) {
  guard_void([&] { exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_set").cmd = cmd; });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_graph_exec_symbol_cmd(const ccv_nnc_symbolic_graph_t* const graph,
                                                    const ccv_nnc_graph_exec_symbol_t exec) {
  return guard_else([] { return make_cmd(CCV_NNC_NOOP, nullptr, ccv_nnc_cmd_auto, 0); },
                    [&] { return exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_cmd").cmd; });
}

NNC_API const char* ccv_nnc_graph_exec_symbol_name(const ccv_nnc_symbolic_graph_t* const graph,
                                                   const ccv_nnc_graph_exec_symbol_t exec) {
  return guard<const char*>(nullptr, [&]() -> const char* {
    const Graph::Exec& x = exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_name");
    return x.name.empty() ? nullptr : x.name.c_str();
  });
}

NNC_API int ccv_nnc_graph_exec_symbol_concat(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source,
                                             const ccv_nnc_graph_exec_symbol_t destination) {
  return guard<int>(-1, [&] {
    exec_of(graph, source, "ccv_nnc_graph_exec_symbol_concat: source");
    exec_of(graph, destination, "ccv_nnc_graph_exec_symbol_concat: destination");
    concat(graph, source.d, destination.d);
    return 0;
  });
}

NNC_API int ccv_nnc_graph_exec_symbol_disjoin(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source,
                                              const ccv_nnc_graph_exec_symbol_t destination) {
  return guard<int>(-1, [&] {
    exec_of(graph, source, "ccv_nnc_graph_exec_symbol_disjoin: source");
    exec_of(graph, destination, "ccv_nnc_graph_exec_symbol_disjoin: destination");
    NNC_CHECK(disjoin(graph, source.d, destination.d), "ccv_nnc_graph_exec_symbol_disjoin: there is no edge from %s to %s",
              exec_label(graph, source.d).c_str(), exec_label(graph, destination.d).c_str());
    return 0;
  });
}

NNC_API int ccv_nnc_graph_exec_symbol_count(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph ? static_cast<int>(graph->execs.size()) : 0;
}

NNC_API int ccv_nnc_tensor_symbol_count(const ccv_nnc_symbolic_graph_t* const graph) {
  return graph ? static_cast<int>(graph->tensors.size()) : 0;
}

NNC_API int ccv_nnc_symbolic_graph_active_symbol_count(const ccv_nnc_symbolic_graph_t* const graph, const int type) {
  return guard<int>(0, [&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_active_symbol_count: the symbolic graph is NULL");
    int n = 0;
    if (type == CCV_NNC_SYMBOL_GRAPH_EXEC) {
      for (const auto& x : graph->execs) n += !CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags);
      return n;
    }
    NNC_CHECK(type == CCV_NNC_SYMBOL_TENSOR || type == CCV_NNC_SYMBOL_TENSOR_ALIAS,
              "ccv_nnc_symbolic_graph_active_symbol_count: unknown symbol type %d", type);
    for (const auto& t : graph->tensors)
      n += !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) && ((t.alias_of >= 0) == (type == CCV_NNC_SYMBOL_TENSOR_ALIAS));
    return n;
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_io(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol,
                                          const int** const inputs, int* const input_size, const int** const outputs,
                                          int* const output_size) {
  guard_void([&] {
    const Graph::Exec& x = exec_of(graph, symbol, "ccv_nnc_graph_exec_symbol_io");
    if (inputs) *inputs = x.inputs.empty() ? nullptr : x.inputs.data();
    if (input_size) *input_size = static_cast<int>(x.inputs.size());
    if (outputs) *outputs = x.outputs.empty() ? nullptr : x.outputs.data();
    if (output_size) *output_size = static_cast<int>(x.outputs.size());
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_to(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol,
                                          const int** const tos, int* const to_size) {
  guard_void([&] {
    const Graph::Exec& x = exec_of(graph, symbol, "ccv_nnc_graph_exec_symbol_to");
    if (tos) *tos = x.outgoing.empty() ? nullptr : x.outgoing.data();
    if (to_size) *to_size = static_cast<int>(x.outgoing.size());
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_set_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec,
                                                 const int flags) {
  guard_void([&] {
    Graph::Exec& x = exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_set_flags");
    NNC_CHECK(!CCV_NNC_GRAPH_EXEC_IS_DEAD(flags), "ccv_nnc_graph_exec_symbol_set_flags: free an exec with ccv_nnc_graph_exec_symbol_free");
    x.flags = flags;
  });
}

NNC_API int ccv_nnc_graph_exec_symbol_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec) {
  return guard<int>(0, [&] { return exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_flags").flags; });
}

NNC_API void ccv_nnc_symbolic_graph_sources_to_destinations(const ccv_nnc_symbolic_graph_t* const graph,
                                                            const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size,
                                                            const ccv_nnc_graph_exec_symbol_t* const destinations,
                                                            const int destination_size, uint64_t* const bitmask) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_sources_to_destinations";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    NNC_CHECK(source_size >= 0 && (source_size == 0 || (sources && bitmask)), "%s: bad sources or bitmask", what);
    NNC_CHECK(destination_size >= 0 && (destination_size == 0 || destinations), "%s: bad destinations", what);
    std::vector<char> target(graph->execs.size(), 0);
    for (int i = 0; i < destination_size; i++) {
      exec_of(graph, destinations[i], what);
      target[static_cast<size_t>(destinations[i].d)] = 1;
    }
    for (int i = 0; i < source_size; i++) exec_of(graph, sources[i], what);
    std::memset(bitmask, 0, static_cast<size_t>((source_size + 63) / 64) * sizeof(uint64_t));
    for (int i = 0; i < source_size; i++) {
      std::vector<char> seen(graph->execs.size(), 0);
      std::vector<int> stack{sources[i].d};
      seen[static_cast<size_t>(sources[i].d)] = 1;
      bool hit = false;
      while (!stack.empty() && !hit) {
        const int n = stack.back();
        stack.pop_back();
        hit = target[static_cast<size_t>(n)];
        for (int t : graph->execs[static_cast<size_t>(n)].outgoing)
          if (!seen[static_cast<size_t>(t)] && !CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[static_cast<size_t>(t)].flags)) {
            seen[static_cast<size_t>(t)] = 1;
            stack.push_back(t);
          }
      }
      if (hit) bitmask[i / 64] |= uint64_t{1} << (i % 64);
    }
  });
}

NNC_API void ccv_nnc_symbolic_graph_format(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources,
                                           const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations,
                                           const int destination_size, const ccv_nnc_symbolic_graph_format_f format_fn,
                                           void* const context) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_format";
    NNC_CHECK(graph && format_fn, "%s: graph or format_fn is NULL", what);
    std::vector<int> order;
    try {
      order = exec_order(graph, sources, source_size, destinations, destination_size);
    } catch (const Error& e) {
      fail(e.code(), "%s: %s", what, e.what());
    }
    std::vector<char> in_order(graph->execs.size(), 0);
    for (int e : order) in_order[static_cast<size_t>(e)] = 1;
    std::vector<std::vector<int>> incoming(graph->execs.size());
    for (int e : order)
      for (int t : graph->execs[static_cast<size_t>(e)].outgoing)
        if (in_order[static_cast<size_t>(t)]) incoming[static_cast<size_t>(t)].push_back(e);
    std::vector<int> outgoing;
    for (int e : order) {
      const Graph::Exec& x = graph->execs[static_cast<size_t>(e)];
      outgoing.clear();
      for (int t : x.outgoing)
        if (in_order[static_cast<size_t>(t)]) outgoing.push_back(t);
      const std::vector<int>& in = incoming[static_cast<size_t>(e)];
      format_fn(graph, e, x.name.empty() ? nullptr : x.name.c_str(), x.cmd, x.flags, in.empty() ? nullptr : in.data(),
                static_cast<int>(in.size()), outgoing.empty() ? nullptr : outgoing.data(), static_cast<int>(outgoing.size()),
                x.inputs.empty() ? nullptr : x.inputs.data(), static_cast<int>(x.inputs.size()),
                x.outputs.empty() ? nullptr : x.outputs.data(), static_cast<int>(x.outputs.size()), context);
    }
  });
}

NNC_API void ccv_nnc_symbolic_graph_simplify(ccv_nnc_symbolic_graph_t* const graph, const int* const passes, const int pass_size,
                                             const ccv_nnc_tensor_symbol_t* const binds, const int bind_size,
                                             const ccv_nnc_tensor_symbol_t* const outputs, const int output_size,
                                             const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size,
                                             const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size) {
  guard_void([&] {
    simplify(graph, passes, pass_size, binds, bind_size, outputs, output_size, sources, source_size, destinations,
             destination_size);
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_set_io(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec,
                                              const ccv_nnc_tensor_symbol_t* const inputs, const int input_size,
                                              const ccv_nnc_tensor_symbol_t* const outputs, const int output_size) {
  guard_void([&] {
    exec_of(graph, exec, "ccv_nnc_graph_exec_symbol_set_io");
    exec_set_io(graph, exec.d, inputs, input_size, outputs, output_size);
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_replace_io(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol,
                                                  const ccv_nnc_tensor_symbol_t old_symbol, const ccv_nnc_tensor_symbol_t new_symbol) {
  guard_void([&] {
    static const char* what = "ccv_nnc_graph_exec_symbol_replace_io";
    Graph* g = mut(graph);
    const Graph::Exec& x = exec_of(g, symbol, what);
    tensor_of(g, old_symbol, what);
    tensor_of(g, new_symbol, what);
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    auto swap = [&](int d) -> ccv_nnc_tensor_symbol_t {
      const int n = d == old_symbol.d ? new_symbol.d : d;
      return {n, n < 0 ? nullptr : g};
    };
    for (int d : x.inputs) in.push_back(swap(d));
    for (int d : x.outputs) out.push_back(swap(d));
    exec_set_io(g, symbol.d, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
  });
}

NNC_API void ccv_nnc_symbolic_graph_tensor_auto(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources,
                                                const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations,
                                                const int destination_size) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_tensor_auto: the symbolic graph is NULL");
    try {
      tensor_auto(graph, sources, source_size, destinations, destination_size);
    } catch (const Error& e) {
      fail(e.code(), "ccv_nnc_symbolic_graph_tensor_auto: %s", e.what());
    }
  });
}

NNC_API ccv_nnc_symbolic_graph_t* ccv_nnc_symbolic_graph_dup(const ccv_nnc_symbolic_graph_t* const graph,
                                                             ccv_nnc_symbolic_graph_subst_f subst) {
  return guard<ccv_nnc_symbolic_graph_t*>(nullptr, [&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_dup: the symbolic graph is NULL");
    NNC_CHECK(!has_subgraphs(graph), "ccv_nnc_symbolic_graph_dup: graphs with while loops or case..of are not supported yet");
    auto copy = std::make_unique<ccv_nnc_symbolic_graph_s>();
    copy->tensors = graph->tensors;
    copy->execs = graph->execs;
    for (auto& t : copy->tensors)
      if (t.pair.graph == graph) t.pair.graph = copy.get();
    for (size_t e = 0; e < copy->execs.size(); e++) {
      Graph::Exec& x = copy->execs[e];
      if (x.pair.graph == graph) x.pair.graph = copy.get();
      if (subst && !CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) x.cmd = subst({static_cast<int32_t>(e), copy.get()}, x.cmd);
    }
    for (auto s : graph->sources) copy->sources.push_back({s.d, copy.get()});
    for (auto s : graph->destinations) copy->destinations.push_back({s.d, copy.get()});
    return copy.release();
  });
}

namespace {

template <class F>
void* swap_hook(Graph* g, F& slot, void*& slot_context, F hook, void* context, F* previous_hook, const char* what) {
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  void* previous_context = slot_context;
  if (previous_hook) *previous_hook = slot;
  slot = hook;
  slot_context = context;
  return previous_context;
}

}  // namespace

NNC_API void* ccv_nnc_tensor_symbol_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_new_hook_f hook,
                                             void* context, ccv_nnc_tensor_symbol_new_hook_f* previous_hook) {
  return guard<void*>(nullptr, [&] {
    NNC_CHECK(graph, "ccv_nnc_tensor_symbol_new_hook: the symbolic graph is NULL");
    return swap_hook(graph, graph->tensor_hook, graph->tensor_hook_context, hook, context, previous_hook,
                     "ccv_nnc_tensor_symbol_new_hook");
  });
}

NNC_API void* ccv_nnc_tensor_symbol_alias_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_alias_new_hook_f hook,
                                                   void* context, ccv_nnc_tensor_symbol_alias_new_hook_f* previous_hook) {
  return guard<void*>(nullptr, [&] {
    NNC_CHECK(graph, "ccv_nnc_tensor_symbol_alias_new_hook: the symbolic graph is NULL");
    return swap_hook(graph, graph->alias_hook, graph->alias_hook_context, hook, context, previous_hook,
                     "ccv_nnc_tensor_symbol_alias_new_hook");
  });
}

NNC_API void* ccv_nnc_graph_exec_symbol_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_graph_exec_symbol_new_hook_f hook,
                                                 void* context, ccv_nnc_graph_exec_symbol_new_hook_f* previous_hook) {
  return guard<void*>(nullptr, [&] {
    NNC_CHECK(graph, "ccv_nnc_graph_exec_symbol_new_hook: the symbolic graph is NULL");
    return swap_hook(graph, graph->exec_hook, graph->exec_hook_context, hook, context, previous_hook,
                     "ccv_nnc_graph_exec_symbol_new_hook");
  });
}

NNC_API void ccv_nnc_tensor_symbol_pair_with(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor_symbol,
                                             const ccv_nnc_tensor_symbol_t pair_tensor_symbol) {
  guard_void([&] {
    Graph::Tensor& t = tensor_of(graph, tensor_symbol, "ccv_nnc_tensor_symbol_pair_with");
    tensor_of(pair_tensor_symbol.graph, pair_tensor_symbol, "ccv_nnc_tensor_symbol_pair_with: pair");
    t.pair = pair_tensor_symbol;
  });
}

NNC_API void ccv_nnc_graph_exec_symbol_pair_with(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec_symbol,
                                                 const ccv_nnc_graph_exec_symbol_t pair_exec_symbol) {
  guard_void([&] {
    Graph::Exec& x = exec_of(graph, exec_symbol, "ccv_nnc_graph_exec_symbol_pair_with");
    exec_of(pair_exec_symbol.graph, pair_exec_symbol, "ccv_nnc_graph_exec_symbol_pair_with: pair");
    x.pair = pair_exec_symbol;
  });
}

NNC_API void ccv_nnc_symbolic_graph_memory_compression(ccv_nnc_symbolic_graph_t* const graph,
                                                       const ccv_nnc_graph_exec_symbol_t* const, const int,
                                                       const ccv_nnc_graph_exec_symbol_t* const, const int) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_memory_compression: the symbolic graph is NULL");
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_symbolic_graph_memory_compression is not supported yet; the graph is unchanged");
  });
}

NNC_API void ccv_nnc_symbolic_graph_memory_reduction(ccv_nnc_symbolic_graph_t* const graph,
                                                     const ccv_nnc_graph_exec_symbol_t* const, const int,
                                                     const ccv_nnc_graph_exec_symbol_t* const, const int) {
  guard_void([&] {
    NNC_CHECK(graph, "ccv_nnc_symbolic_graph_memory_reduction: the symbolic graph is NULL");
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_symbolic_graph_memory_reduction is not supported yet; the graph is unchanged");
  });
}

NNC_API int ccv_nnc_tensor_arena_reinit(ccv_nnc_tensor_arena_t* const tensor_arena, const ccv_nnc_symbolic_graph_t* const graph) {
  return guard<int>(-1, [&] {
    if (reinit(tensor_arena, graph)) return 0;
    set_error_message("ccv_nnc_tensor_arena_reinit: a symbol's shape no longer fits the memory compiled for it; compile again");
    return -1;
  });
}

NNC_API void ccv_nnc_graph_exec_reinit(ccv_nnc_graph_exec_arena_t* const graph_exec_arena, ccv_nnc_graph_t* const graph,
                                       const ccv_nnc_symbolic_graph_t* const symbolic_graph) {
  guard_void([&] { exec_reinit(graph_exec_arena, graph, symbolic_graph); });
}

// --- data parallelism ---------------------------------------------------------

NNC_API void ccv_nnc_symbolic_graph_data_parallel(ccv_nnc_symbolic_graph_t* const graph, const int parallel,
                                                  const ccv_nnc_tensor_symbol_t* const broadcasts, const int broadcast_size,
                                                  const ccv_nnc_tensor_symbol_t* const allreducers, const int allreducer_size,
                                                  ccv_nnc_tensor_symbol_t* const allreducer_outs,
                                                  const ccv_nnc_tensor_symbol_t* const reducers, const int reducer_size,
                                                  ccv_nnc_tensor_symbol_t* const reducer_outs, const int reduce_op_type,
                                                  const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size,
                                                  const ccv_nnc_graph_exec_symbol_t* const destinations,
                                                  const int destination_size) {
  nnc::guard_void([&] {
    const char* what = "ccv_nnc_symbolic_graph_data_parallel";
    NNC_CHECK(graph, "%s: graph is NULL", what);
    NNC_CHECK(reduce_op_type == CCV_NNC_PARALLEL_REDUCE_OP_SUM, "%s: reduce op %d; the only one is CCV_NNC_PARALLEL_REDUCE_OP_SUM", what,
              reduce_op_type);
    NNC_CHECK(parallel >= 0, "%s: parallel is %d", what, parallel);
    // 0: every GPU there is.
    const int devices = parallel == 0 ? ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) : parallel;
    if (devices <= 1) {
      // One device: nothing to copy or reduce; the allreduced and reduced symbols are themselves.
      for (int i = 0; i < allreducer_size && allreducer_outs && allreducers; i++) allreducer_outs[i] = allreducers[i];
      for (int i = 0; i < reducer_size && reducer_outs && reducers; i++) reducer_outs[i] = reducers[i];
      return;
    }
    nnc::symbolic::data_parallel_devices(graph, devices, broadcasts, broadcast_size, allreducers, allreducer_size,
                                         allreducer_outs, reducers, reducer_size, reducer_outs, sources, source_size,
                                         destinations, destination_size);
  });
}

NNC_API void ccv_nnc_symbolic_graph_data_parallel_comm(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_comm_t* const comm,
                                                       const ccv_nnc_tensor_symbol_t* const gradients, const int gradient_size,
                                                       ccv_nnc_tensor_symbol_t* const averaged, const size_t bucket_bytes) {
  nnc::guard_void([&] { nnc::symbolic::data_parallel_comm(graph, comm, gradients, gradient_size, averaged, bucket_bytes); });
}
