// Loops and branches of symbolic graphs: sub-graphs, the stand-ins they hold
// for their owners' symbols, and the inputs and outputs this gives the exec
// symbol that runs them.
//
// A sub-graph names an enclosing graph's symbol through a local stand-in
// (Tensor::outer). The owner's loop / case..of exec symbol then reads that
// symbol, or writes it when the sub-graph does, so the owner orders, plans
// and checks SSA for it like for any other exec. Those inputs and outputs
// are derived, never edited by hand: refresh_owner recomputes them after
// every change inside.
#include <algorithm>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/tensor.hpp"
#include "symbolic/graph.hpp"

ccv_nnc_symbolic_graph_s::~ccv_nnc_symbolic_graph_s() {
  for (Exec& x : execs)
    for (ccv_nnc_symbolic_graph_s* sub : x.subs) delete sub;
}

namespace nnc::symbolic {

namespace {

void add_unique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

bool live(const Graph* g, int e) { return !CCV_NNC_GRAPH_EXEC_IS_DEAD(g->execs[static_cast<size_t>(e)].flags); }

// The owner-level symbols a sub-graph reads and writes through its stand-ins.
void collect_io(const Graph* sub, std::vector<int>& reads, std::vector<int>& writes) {
  std::vector<char> written(sub->tensors.size(), 0), read(sub->tensors.size(), 0);
  for (size_t e = 0; e < sub->execs.size(); e++) {
    if (!live(sub, static_cast<int>(e))) continue;
    for (int d : sub->execs[e].inputs)
      if (d >= 0) read[static_cast<size_t>(base_of(sub, d))] = 1;
    for (int d : sub->execs[e].outputs)
      if (d >= 0) written[static_cast<size_t>(base_of(sub, d))] = 1;
  }
  for (int d : sub->while_inputs)
    if (d >= 0) read[static_cast<size_t>(base_of(sub, d))] = 1;
  for (const auto& c : sub->carry_overs) read[static_cast<size_t>(base_of(sub, c.second))] = 1;
  for (size_t d = 0; d < sub->tensors.size(); d++) {
    const int outer = sub->tensors[d].outer;
    if (outer < 0 || CCV_NNC_TENSOR_SYMBOL_IS_DEAD(sub->tensors[d].flags)) continue;
    if (written[d])
      add_unique(writes, outer);
    else if (read[d])
      add_unique(reads, outer);
  }
}

}  // namespace

bool encloses(const Graph* a, const Graph* g) {
  for (const Graph* p = g ? g->parent : nullptr; p; p = p->parent)
    if (p == a) return true;
  return false;
}

bool has_subgraphs(const Graph* g) {
  for (size_t e = 0; e < g->execs.size(); e++)
    if (live(g, static_cast<int>(e)) && !g->execs[e].subs.empty()) return true;
  return false;
}

int stand_in(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what) {
  NNC_CHECK(g->parent, "%s: tensor symbol %d belongs to another graph", what, s.d);
  // The symbol one level up (itself when the parent owns it).
  const int up = s.graph == g->parent ? (tensor_of(g->parent, s, what), s.d) : stand_in(g->parent, s, what);
  for (const auto& p : g->stand_ins)
    if (p.first == up) return p.second;
  const Graph::Tensor& t = g->parent->tensors[static_cast<size_t>(up)];
  NNC_CHECK(t.alias_of < 0, "%s: %s of the enclosing graph is an alias; a loop or branch can use a base symbol only", what,
            tensor_label(g->parent, up).c_str());
  const ccv_nnc_tensor_symbol_t made = tensor_new(g, t.info, t.name.empty() ? nullptr : t.name.c_str());
  g->tensors[static_cast<size_t>(made.d)].outer = up;
  g->stand_ins.emplace_back(up, made.d);
  return made.d;
}

int local_symbol(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what) {
  if (s.d == CCV_NNC_NO_TENSOR_SYMBOL || !s.graph) return CCV_NNC_NO_TENSOR_SYMBOL;
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  if (s.d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) {
    NNC_CHECK(s.graph == g && g->parent && (g->parent->execs[static_cast<size_t>(g->exec_in_parent)].flags & CCV_NNC_GRAPH_EXEC_P_WHILE),
              "%s: the loop counter can only be used in the body of its own while loop", what);
    return CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL;
  }
  if (s.graph != g && encloses(s.graph, g)) return stand_in(g, s, what);
  tensor_of(g, s, what);
  return s.d;
}

ccv_nnc_tensor_param_t slot_params(const Graph* g, int d) {
  if (d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) {
    ccv_nnc_tensor_param_t p{};
    p.type = CCV_TENSOR_CPU_MEMORY;
    p.format = CCV_TENSOR_FORMAT_NHWC;
    p.datatype = CCV_64S;
    p.dim[0] = 1;
    return p;
  }
  return g->tensors[static_cast<size_t>(d)].info;
}

void refresh_exec(Graph* owner, int e) {
  Graph::Exec& x = owner->execs[static_cast<size_t>(e)];
  std::vector<int> reads = x.declared_inputs, writes = x.declared_outputs;
  for (const Graph* sub : x.subs)
    if (sub) collect_io(sub, reads, writes);
  // A symbol written inside is not an input of the whole.
  reads.erase(std::remove_if(reads.begin(), reads.end(),
                             [&](int d) {
                               return std::find(writes.begin(), writes.end(), d) != writes.end() &&
                                      std::find(x.declared_inputs.begin(), x.declared_inputs.end(), d) == x.declared_inputs.end();
                             }),
              reads.end());
  for (int w : writes) {
    const Graph::Tensor& t = owner->tensors[static_cast<size_t>(w)];
    for (int other : t.writers)
      NNC_CHECK(other == e || !live(owner, other), "%s is written inside %s but %s already writes it (SSA)",
                tensor_label(owner, w).c_str(), exec_label(owner, e).c_str(), exec_label(owner, other).c_str());
  }
  for (int o : x.outputs)
    if (o >= 0) {
      auto& ws = owner->tensors[static_cast<size_t>(o)].writers;
      ws.erase(std::remove(ws.begin(), ws.end(), e), ws.end());
    }
  x.inputs = std::move(reads);
  x.outputs = std::move(writes);
  for (int o : x.outputs) owner->tensors[static_cast<size_t>(o)].writers.push_back(e);
  refresh_owner(owner);
}

void refresh_owner(Graph* g) {
  if (g->parent) refresh_exec(g->parent, g->exec_in_parent);
}

void hookup(Graph* src_graph, Graph* dest_graph, const ccv_nnc_tensor_symbol_t& src_symbol, const ccv_nnc_tensor_symbol_t& dest_symbol,
            const char* what) {
  NNC_CHECK(src_graph && dest_graph, "%s: a graph is NULL", what);
  NNC_CHECK(encloses(src_graph, dest_graph), "%s: dest_graph is not a sub-graph of src_graph", what);
  const Graph::Tensor& src = tensor_of(src_graph, src_symbol, what);
  Graph::Tensor& dest = tensor_of(dest_graph, dest_symbol, what);
  NNC_CHECK(src.alias_of < 0 && dest.alias_of < 0, "%s: only base symbols can be hooked up", what);
  // The symbol one level up that dest will stand for.
  const int up = dest_graph->parent == src_graph ? src_symbol.d : stand_in(dest_graph->parent, src_symbol, what);
  for (const auto& p : dest_graph->stand_ins)
    NNC_CHECK(p.first != up || p.second == dest_symbol.d, "%s: %s already has a stand-in here, %s", what,
              tensor_label(src_graph, src_symbol.d).c_str(), tensor_label(dest_graph, p.second).c_str());
  NNC_CHECK(dest.outer < 0 || dest.outer == up, "%s: %s already stands for another symbol", what,
            tensor_label(dest_graph, dest_symbol.d).c_str());
  if (nd_of(dest.info.dim) == 0) dest.info = src.info;
  NNC_CHECK(nd_of(src.info.dim) == 0 ||
                (same_shape(src.info, dest.info) && CCV_GET_DATA_TYPE(src.info.datatype) == CCV_GET_DATA_TYPE(dest.info.datatype)),
            "%s: %s is %s %s but %s is %s %s", what, tensor_label(src_graph, src_symbol.d).c_str(), shape_string(src.info.dim).c_str(),
            datatype_name(src.info.datatype), tensor_label(dest_graph, dest_symbol.d).c_str(), shape_string(dest.info.dim).c_str(),
            datatype_name(dest.info.datatype));
  if (dest.outer < 0) {
    dest.outer = up;
    dest_graph->stand_ins.emplace_back(up, dest_symbol.d);
  }
  refresh_owner(dest_graph);
}

}  // namespace nnc::symbolic

using namespace nnc;
using namespace nnc::symbolic;

namespace {

constexpr ccv_nnc_tensor_symbol_t kNoTensor = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
constexpr ccv_nnc_graph_exec_symbol_t kNoExec = {CCV_NNC_NO_GRAPH_EXEC_SYMBOL, nullptr};

void check_control_cmd(uint32_t cmd, const char* what) {
  NNC_CHECK(cmd == CCV_NNC_GRAPH_FORWARD || cmd == CCV_NNC_GRAPH_BACKWARD,
            "%s: cmd must be CCV_NNC_GRAPH_FORWARD or CCV_NNC_GRAPH_BACKWARD (got 0x%x)", what, cmd);
}

// Attach sub to g as a sub-graph of exec e.
void adopt(Graph* g, int e, Graph* sub, const char* what) {
  NNC_CHECK(sub, "%s: the sub-graph is NULL", what);
  NNC_CHECK(sub != g && !encloses(sub, g), "%s: a graph cannot be a sub-graph of itself or of its own sub-graph", what);
  NNC_CHECK(!sub->parent, "%s: the sub-graph already belongs to %s", what,
            exec_label(sub->parent, sub->exec_in_parent).c_str());
  sub->parent = g;
  sub->exec_in_parent = e;
}

Graph* while_body(Graph* g, const char* what) {
  NNC_CHECK(g, "%s: the while graph is NULL", what);
  NNC_CHECK(g->parent && (g->parent->execs[static_cast<size_t>(g->exec_in_parent)].flags & CCV_NNC_GRAPH_EXEC_P_WHILE),
            "%s: the graph is not the body of a while loop (attach it with ccv_nnc_symbolic_graph_while first)", what);
  return g;
}

int new_control(Graph* g, uint32_t cmd, int kind, const char* name) {
  Graph::Exec x;
  x.cmd = ccv_nnc_cmd(cmd, nullptr, ccv_nnc_cmd_auto, 0);
  x.hint = ccv_nnc_no_hint;
  x.flags = kind;
  if (name) x.name = name;
  g->execs.push_back(std::move(x));
  return static_cast<int>(g->execs.size() - 1);
}

}  // namespace

NNC_API void ccv_nnc_tensor_symbol_hookup(ccv_nnc_symbolic_graph_t* const src_graph, ccv_nnc_symbolic_graph_t* const dest_graph,
                                          const ccv_nnc_tensor_symbol_t src_tensor_symbol,
                                          const ccv_nnc_tensor_symbol_t dest_tensor_symbol) {
  guard_void([&] { hookup(src_graph, dest_graph, src_tensor_symbol, dest_tensor_symbol, "ccv_nnc_tensor_symbol_hookup"); });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_resolve(const ccv_nnc_symbolic_graph_t* const graph,
                                                              const ccv_nnc_tensor_symbol_t tensor_symbol) {
  return guard(kNoTensor, [&]() -> ccv_nnc_tensor_symbol_t {
    static const char* what = "ccv_nnc_tensor_symbol_resolve";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    const Graph* from = tensor_symbol.graph;
    if (from == graph) {
      tensor_of(graph, tensor_symbol, what);
      return tensor_symbol;
    }
    if (encloses(from, graph)) {  // down: follow the stand-ins
      tensor_of(from, tensor_symbol, what);
      std::vector<const Graph*> chain;
      for (const Graph* p = graph; p != from; p = p->parent) chain.push_back(p);
      int d = tensor_symbol.d;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        int found = -1;
        for (const auto& p : (*it)->stand_ins)
          if (p.first == d) found = p.second;
        if (found < 0) return kNoTensor;
        d = found;
      }
      return {d, const_cast<Graph*>(graph)};
    }
    if (encloses(graph, from)) {  // up: what each stand-in stands for
      tensor_of(from, tensor_symbol, what);
      int d = tensor_symbol.d;
      for (const Graph* p = from; p != graph; p = p->parent) {
        d = p->tensors[static_cast<size_t>(d)].outer;
        if (d < 0) return kNoTensor;
      }
      return {d, const_cast<Graph*>(graph)};
    }
    fail(CCV_NNC_EXEC_INVALID, "%s: tensor symbol %d belongs to a graph that neither encloses nor is enclosed by this one", what,
         tensor_symbol.d);
  });
}

NNC_API void ccv_nnc_tensor_symbol_set_bypasses(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_map_t* const symbol_map,
                                                const int symbol_map_size) {
  guard_void([&] {
    static const char* what = "ccv_nnc_tensor_symbol_set_bypasses";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    NNC_CHECK(symbol_map_size >= 0 && (symbol_map || symbol_map_size == 0), "%s: bad symbol map (size %d)", what, symbol_map_size);
    for (int i = 0; i < symbol_map_size; i++) {
      const Graph::Tensor& src = tensor_of(graph, symbol_map[i].source, what);
      Graph::Tensor& dest = tensor_of(graph, symbol_map[i].destination, what);
      NNC_CHECK(same_shape(src.info, dest.info) && CCV_GET_DATA_TYPE(src.info.datatype) == CCV_GET_DATA_TYPE(dest.info.datatype),
                "%s: pair %d: %s (%s) cannot stand in for %s (%s)", what, i, tensor_label(graph, symbol_map[i].source.d).c_str(),
                shape_string(src.info.dim).c_str(), tensor_label(graph, symbol_map[i].destination.d).c_str(),
                shape_string(dest.info.dim).c_str());
      dest.bypass = symbol_map[i].source.d;
      // The case..of that writes it reads the fall-back.
      for (int w : dest.writers) {
        Graph::Exec& x = graph->execs[static_cast<size_t>(w)];
        if (!(x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF) || CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
        add_unique(x.declared_inputs, symbol_map[i].source.d);
        refresh_exec(graph, w);
      }
    }
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t ccv_nnc_symbolic_graph_while(ccv_nnc_symbolic_graph_t* const graph, const uint32_t cmd,
                                                                 ccv_nnc_symbolic_graph_t* const while_graph, const char* const name) {
  return guard(kNoExec, [&]() -> ccv_nnc_graph_exec_symbol_t {
    static const char* what = "ccv_nnc_symbolic_graph_while";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    check_control_cmd(cmd, what);
    const int e = static_cast<int>(graph->execs.size());
    adopt(graph, e, while_graph, what);
    new_control(graph, cmd, CCV_NNC_GRAPH_EXEC_P_WHILE, name);
    graph->execs.back().subs.push_back(while_graph);
    refresh_owner(while_graph);
    return {e, graph};
  });
}

NNC_API void ccv_nnc_symbolic_graph_set_while_expr(ccv_nnc_symbolic_graph_t* const while_graph, const ccv_nnc_graph_while_f while_expr,
                                                   const void* const while_data, const ccv_nnc_tensor_symbol_t* const inputs,
                                                   const int input_size, const ccv_nnc_graph_exec_symbol_t* const breakpoints,
                                                   const int breakpoint_size) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_set_while_expr";
    Graph* g = while_body(while_graph, what);
    NNC_CHECK(while_expr, "%s: the expression is NULL", what);
    NNC_CHECK(input_size >= 0 && (inputs || input_size == 0), "%s: bad inputs array (size %d)", what, input_size);
    NNC_CHECK(breakpoint_size > 0 && breakpoints, "%s: at least one breakpoint is needed", what);
    std::vector<int> in, bp;
    for (int i = 0; i < input_size; i++) {
      const int d = local_symbol(g, inputs[i], what);
      NNC_CHECK(d != CCV_NNC_NO_TENSOR_SYMBOL, "%s: input %d is empty", what, i);
      in.push_back(d);
    }
    for (int i = 0; i < breakpoint_size; i++) {
      exec_of(g, breakpoints[i], what);
      bp.push_back(breakpoints[i].d);
    }
    g->while_expr = while_expr;
    g->while_data = while_data;
    g->while_inputs = std::move(in);
    g->breakpoints = std::move(bp);
    refresh_owner(g);
  });
}

NNC_API void ccv_nnc_symbolic_graph_set_carry_overs(ccv_nnc_symbolic_graph_t* const while_graph,
                                                    const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_set_carry_overs";
    Graph* g = while_body(while_graph, what);
    NNC_CHECK(symbol_map_size >= 0 && (symbol_map || symbol_map_size == 0), "%s: bad symbol map (size %d)", what, symbol_map_size);
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < symbol_map_size; i++) {
      const int from = local_symbol(g, symbol_map[i].source, what);
      const int to = local_symbol(g, symbol_map[i].destination, what);
      NNC_CHECK(from >= 0 && to >= 0, "%s: pair %d needs two tensor symbols (the loop counter is carried by the loop itself)", what, i);
      NNC_CHECK(from != to, "%s: pair %d carries %s into itself", what, i, tensor_label(g, from).c_str());
      const Graph::Tensor& f = g->tensors[static_cast<size_t>(from)];
      const Graph::Tensor& t = g->tensors[static_cast<size_t>(to)];
      NNC_CHECK(f.alias_of < 0 && t.alias_of < 0, "%s: pair %d: aliases cannot be carried (carry their bases)", what, i);
      NNC_CHECK(nd_of(f.info.dim) == 0 || nd_of(t.info.dim) == 0 ||
                    (same_shape(f.info, t.info) && CCV_GET_DATA_TYPE(f.info.datatype) == CCV_GET_DATA_TYPE(t.info.datatype)),
                "%s: pair %d: %s is %s %s but %s is %s %s", what, i, tensor_label(g, from).c_str(), shape_string(f.info.dim).c_str(),
                datatype_name(f.info.datatype), tensor_label(g, to).c_str(), shape_string(t.info.dim).c_str(),
                datatype_name(t.info.datatype));
      for (const auto& p : pairs)
        NNC_CHECK(p.second != to, "%s: %s is carried into twice", what, tensor_label(g, to).c_str());
      pairs.emplace_back(from, to);
    }
    g->carry_overs = std::move(pairs);
    refresh_owner(g);
  });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_for_while_count(const ccv_nnc_symbolic_graph_t* const while_graph) {
  return guard(kNoTensor, [&]() -> ccv_nnc_tensor_symbol_t {
    Graph* g = while_body(const_cast<Graph*>(while_graph), "ccv_nnc_tensor_symbol_for_while_count");
    return {CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL, g};
  });
}

NNC_API ccv_nnc_symbolic_graph_t* ccv_nnc_symbolic_graph_from_while_symbol(const ccv_nnc_symbolic_graph_t* const graph,
                                                                          const ccv_nnc_graph_exec_symbol_t while_symbol) {
  return guard<ccv_nnc_symbolic_graph_t*>(nullptr, [&]() -> ccv_nnc_symbolic_graph_t* {
    static const char* what = "ccv_nnc_symbolic_graph_from_while_symbol";
    const Graph::Exec& x = exec_of(graph, while_symbol, what);
    NNC_CHECK((x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE) && !x.subs.empty(), "%s: %s is not a while loop", what,
              exec_label(graph, while_symbol.d).c_str());
    return x.subs[0];
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t ccv_nnc_symbolic_graph_case_of_new(ccv_nnc_symbolic_graph_t* const graph, const uint32_t cmd,
                                                                       const ccv_nnc_tensor_symbol_t* const inputs, const int input_size,
                                                                       const ccv_nnc_tensor_symbol_map_t* const symbol_map,
                                                                       const int symbol_map_size, const char* const name) {
  return guard(kNoExec, [&]() -> ccv_nnc_graph_exec_symbol_t {
    static const char* what = "ccv_nnc_symbolic_graph_case_of_new";
    NNC_CHECK(graph, "%s: the symbolic graph is NULL", what);
    check_control_cmd(cmd, what);
    NNC_CHECK(input_size >= 0 && (inputs || input_size == 0), "%s: bad inputs array (size %d)", what, input_size);
    NNC_CHECK(symbol_map_size >= 0 && (symbol_map || symbol_map_size == 0), "%s: bad symbol map (size %d)", what, symbol_map_size);
    std::vector<int> in, out;
    for (int i = 0; i < input_size; i++) {
      tensor_of(graph, inputs[i], what);
      in.push_back(inputs[i].d);
    }
    for (int i = 0; i < symbol_map_size; i++) {
      const Graph::Tensor& src = tensor_of(graph, symbol_map[i].source, what);
      Graph::Tensor& dest = tensor_of(graph, symbol_map[i].destination, what);
      if (nd_of(dest.info.dim) == 0) dest.info = src.info;
      NNC_CHECK(same_shape(src.info, dest.info) && CCV_GET_DATA_TYPE(src.info.datatype) == CCV_GET_DATA_TYPE(dest.info.datatype),
                "%s: pair %d: %s is %s %s but %s is %s %s", what, i, tensor_label(graph, symbol_map[i].source.d).c_str(),
                shape_string(src.info.dim).c_str(), datatype_name(src.info.datatype),
                tensor_label(graph, symbol_map[i].destination.d).c_str(), shape_string(dest.info.dim).c_str(),
                datatype_name(dest.info.datatype));
      NNC_CHECK(dest.alias_of < 0, "%s: pair %d: the output %s is an alias; use a base symbol", what, i,
                tensor_label(graph, symbol_map[i].destination.d).c_str());
      for (int w : dest.writers)
        NNC_CHECK(CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[static_cast<size_t>(w)].flags),
                  "%s: pair %d: %s already has a writer, %s (SSA)", what, i, tensor_label(graph, symbol_map[i].destination.d).c_str(),
                  exec_label(graph, w).c_str());
      for (int o : out)
        NNC_CHECK(o != symbol_map[i].destination.d, "%s: %s is an output twice", what,
                  tensor_label(graph, o).c_str());
      add_unique(in, symbol_map[i].source.d);
      out.push_back(symbol_map[i].destination.d);
    }
    const int e = new_control(graph, cmd, CCV_NNC_GRAPH_EXEC_CASE_OF, name);
    Graph::Exec& x = graph->execs.back();
    x.expr_inputs = input_size;
    x.declared_inputs = in;
    x.declared_outputs = out;
    x.inputs = in;
    x.outputs = out;
    for (int i = 0; i < symbol_map_size; i++) graph->tensors[static_cast<size_t>(symbol_map[i].destination.d)].bypass = symbol_map[i].source.d;
    for (int o : out) graph->tensors[static_cast<size_t>(o)].writers.push_back(e);
    return {e, graph};
  });
}

NNC_API void ccv_nnc_symbolic_graph_set_case_of_expr(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec,
                                                     ccv_nnc_graph_case_of_f case_of, const void* case_of_data) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_set_case_of_expr";
    Graph::Exec& x = exec_of(graph, exec, what);
    NNC_CHECK(x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF, "%s: %s is not a case..of", what, exec_label(graph, exec.d).c_str());
    NNC_CHECK(case_of, "%s: the expression is NULL", what);
    x.case_of = case_of;
    x.case_of_data = case_of_data;
  });
}

NNC_API void ccv_nnc_symbolic_graph_set_case_of(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol,
                                                ccv_nnc_symbolic_graph_t* const case_graph, const int case_of,
                                                const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size) {
  guard_void([&] {
    static const char* what = "ccv_nnc_symbolic_graph_set_case_of";
    Graph::Exec& x = exec_of(graph, symbol, what);
    NNC_CHECK(x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF, "%s: %s is not a case..of", what, exec_label(graph, symbol.d).c_str());
    NNC_CHECK(case_of >= 0 && case_of < 4096, "%s: branch index %d is out of range [0, 4096)", what, case_of);
    NNC_CHECK(static_cast<size_t>(case_of) >= x.subs.size() || !x.subs[static_cast<size_t>(case_of)],
              "%s: %s already has a branch %d", what, exec_label(graph, symbol.d).c_str(), case_of);
    NNC_CHECK(symbol_map_size >= 0 && (symbol_map || symbol_map_size == 0), "%s: bad symbol map (size %d)", what, symbol_map_size);
    for (int i = 0; i < symbol_map_size; i++) {
      tensor_of(case_graph, symbol_map[i].source, what);
      tensor_of(graph, symbol_map[i].destination, what);
      NNC_CHECK(std::find(x.declared_outputs.begin(), x.declared_outputs.end(), symbol_map[i].destination.d) != x.declared_outputs.end(),
                "%s: pair %d: %s is not an output of %s", what, i, tensor_label(graph, symbol_map[i].destination.d).c_str(),
                exec_label(graph, symbol.d).c_str());
    }
    adopt(graph, symbol.d, case_graph, what);
    if (x.subs.size() <= static_cast<size_t>(case_of)) x.subs.resize(static_cast<size_t>(case_of) + 1, nullptr);
    x.subs[static_cast<size_t>(case_of)] = case_graph;
    try {
      for (int i = 0; i < symbol_map_size; i++) hookup(graph, case_graph, symbol_map[i].destination, symbol_map[i].source, what);
      refresh_owner(case_graph);
    } catch (...) {
      x.subs[static_cast<size_t>(case_of)] = nullptr;
      case_graph->parent = nullptr;
      case_graph->exec_in_parent = -1;
      throw;
    }
  });
}
