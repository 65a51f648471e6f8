#include "symbolic/graph.hpp"

#include <algorithm>
#include <cstring>
#include <queue>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::symbolic {

namespace {

template <class G>
auto& tensor_at(G* g, const ccv_nnc_tensor_symbol_t& s, const char* what) {
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(s.graph == g, "%s: tensor symbol %d belongs to %s graph", what, s.d,
            s.graph ? "another" : "no");
  NNC_CHECK(s.d >= 0 && static_cast<size_t>(s.d) < g->tensors.size(), "%s: tensor symbol %d does not exist (the graph has %zu)",
            what, s.d, g->tensors.size());
  auto& t = g->tensors[static_cast<size_t>(s.d)];
  NNC_CHECK(!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags), "%s: %s was freed", what, tensor_label(g, s.d).c_str());
  return t;
}

template <class G>
auto& exec_at(G* g, const ccv_nnc_graph_exec_symbol_t& s, const char* what) {
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(s.graph == g, "%s: exec symbol %d belongs to %s graph", what, s.d, s.graph ? "another" : "no");
  NNC_CHECK(s.d >= 0 && static_cast<size_t>(s.d) < g->execs.size(), "%s: exec symbol %d does not exist (the graph has %zu)",
            what, s.d, g->execs.size());
  auto& e = g->execs[static_cast<size_t>(s.d)];
  NNC_CHECK(!CCV_NNC_GRAPH_EXEC_IS_DEAD(e.flags), "%s: %s was freed", what, exec_label(g, s.d).c_str());
  return e;
}

bool live_exec(const Graph* g, int e) { return !CCV_NNC_GRAPH_EXEC_IS_DEAD(g->execs[static_cast<size_t>(e)].flags); }

void remove_value(std::vector<int>& v, int x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

// Whether `to` reaches `from` through live edges (so from -> to would close a cycle).
bool reaches(const Graph* g, int to, int from) {
  std::vector<char> seen(g->execs.size(), 0);
  std::vector<int> stack{to};
  seen[static_cast<size_t>(to)] = 1;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (n == from) return true;
    for (int m : g->execs[static_cast<size_t>(n)].outgoing)
      if (!seen[static_cast<size_t>(m)]) {
        seen[static_cast<size_t>(m)] = 1;
        stack.push_back(m);
      }
  }
  return false;
}

int nd(const ccv_nnc_tensor_param_t& info) { return nd_of(info.dim); }

}  // namespace

Graph::Tensor& tensor_of(Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what) { return tensor_at(g, s, what); }
const Graph::Tensor& tensor_of(const Graph* g, const ccv_nnc_tensor_symbol_t& s, const char* what) {
  return tensor_at(g, s, what);
}
Graph::Exec& exec_of(Graph* g, const ccv_nnc_graph_exec_symbol_t& s, const char* what) { return exec_at(g, s, what); }
const Graph::Exec& exec_of(const Graph* g, const ccv_nnc_graph_exec_symbol_t& s, const char* what) {
  return exec_at(g, s, what);
}

std::string tensor_label(const Graph* g, int d) {
  const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
  std::string s = format("tensor symbol %d", d);
  if (!t.name.empty()) s += format(" (\"%s\")", t.name.c_str());
  return s;
}

std::string exec_label(const Graph* g, int d) {
  const Graph::Exec& e = g->execs[static_cast<size_t>(d)];
  const char* cmd = cmd_name(e.cmd.cmd);
  if (e.name.empty()) return format("exec symbol %d (%s)", d, cmd ? cmd : "custom");
  return format("exec symbol %d (\"%s\", %s)", d, e.name.c_str(), cmd ? cmd : "custom");
}

size_t bytes_of(const ccv_nnc_tensor_param_t& info) {
  const int n = nd(info);
  if (n == 0) return 0;
  size_t count = 1;
  for (int i = 0; i < n; i++) count *= static_cast<size_t>(info.dim[i]);
  return count * datatype_size(info.datatype);
}

void alias_strides(const Graph* g, int d, int64_t* stride) {
  const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
  const int n = nd(t.info);
  bool given = false;
  for (int i = 0; i < n; i++) given = given || t.stride[i] != 0;
  if (given) {
    for (int i = 0; i < n; i++) stride[i] = t.stride[i];
    return;
  }
  packed_strides(t.info.dim, n, stride);
}

void element_range(const Graph* g, int d, int64_t* first, int64_t* last) {
  const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
  const int n = nd(t.info);
  if (t.alias_of < 0) {
    *first = 0;
    *last = static_cast<int64_t>(bytes_of(t.info) / std::max<size_t>(datatype_size(t.info.datatype), 1)) - 1;
    return;
  }
  int64_t stride[CCV_NNC_MAX_DIM_ALLOC];
  alias_strides(g, d, stride);
  int64_t offset = 0, reach = 0;
  for (int i = 0; i < n; i++) {
    offset += static_cast<int64_t>(t.ofs[i]) * stride[i];
    reach += static_cast<int64_t>(t.info.dim[i] - 1) * stride[i];
  }
  *first = offset;
  *last = offset + reach;
}

bool may_overlap(const Graph* g, int a, int b) {
  if (a == b) return true;
  const Graph::Tensor& ta = g->tensors[static_cast<size_t>(a)];
  const Graph::Tensor& tb = g->tensors[static_cast<size_t>(b)];
  if (ta.alias_of < 0 || tb.alias_of < 0) return true;  // the whole base against a part of it
  // Two boxes on the same strides: apart when they are apart in some dimension.
  const int n = nd(ta.info);
  if (n == nd(tb.info)) {
    int64_t sa[CCV_NNC_MAX_DIM_ALLOC], sb[CCV_NNC_MAX_DIM_ALLOC];
    alias_strides(g, a, sa);
    alias_strides(g, b, sb);
    if (std::equal(sa, sa + n, sb)) {
      for (int i = 0; i < n; i++)
        if (ta.ofs[i] + ta.info.dim[i] <= tb.ofs[i] || tb.ofs[i] + tb.info.dim[i] <= ta.ofs[i]) return false;
      return true;
    }
  }
  int64_t fa, la, fb, lb;
  element_range(g, a, &fa, &la);
  element_range(g, b, &fb, &lb);
  return !(la < fb || lb < fa);
}

ccv_nnc_tensor_symbol_t tensor_new(Graph* g, const ccv_nnc_tensor_param_t& info, const char* name) {
  NNC_CHECK(g, "ccv_nnc_tensor_symbol_new: the symbolic graph is NULL");
  if (nd(info) > 0) validate_params(info, "ccv_nnc_tensor_symbol_new");
  Graph::Tensor t;
  t.info = info;
  if (name) t.name = name;
  g->tensors.push_back(std::move(t));
  const ccv_nnc_tensor_symbol_t made = {static_cast<int32_t>(g->tensors.size() - 1), g};
  if (g->tensor_hook) g->tensor_hook(g->tensor_hook_context, made, info, name);
  return made;
}

ccv_nnc_tensor_symbol_t alias_new(Graph* g, const ccv_nnc_tensor_symbol_t& base, const int* ofs, const int* stride,
                                  const ccv_nnc_tensor_param_t& info, const char* name) {
  static const char* what = "ccv_nnc_tensor_symbol_alias_new";
  // A copy: adding the alias below may move the table.
  const Graph::Tensor b = tensor_at(g, base, what);
  NNC_CHECK(b.alias_of < 0, "%s: %s is itself an alias; make the alias of its base %s", what,
            tensor_label(g, base.d).c_str(), tensor_label(g, b.alias_of).c_str());
  NNC_CHECK(nd(b.info) > 0, "%s: %s has no shape yet", what, tensor_label(g, base.d).c_str());
  validate_params(info, what);
  NNC_CHECK(CCV_GET_DATA_TYPE(info.datatype) == CCV_GET_DATA_TYPE(b.info.datatype),
            "%s: the alias is %s but %s is %s", what, datatype_name(info.datatype), tensor_label(g, base.d).c_str(),
            datatype_name(b.info.datatype));
  const int n = nd(info);
  Graph::Tensor t;
  t.info = info;
  if (name) t.name = name;
  t.alias_of = base.d;
  for (int i = 0; i < n; i++) {
    t.ofs[i] = ofs ? ofs[i] : 0;
    t.stride[i] = stride ? stride[i] : 0;
    NNC_CHECK(t.ofs[i] >= 0 && t.stride[i] >= 0, "%s: ofs[%d] = %d and stride[%d] = %d must not be negative", what, i,
              t.ofs[i], i, t.stride[i]);
  }
  g->tensors.push_back(t);
  const int d = static_cast<int>(g->tensors.size() - 1);
  int64_t first, last;
  element_range(g, d, &first, &last);
  const int64_t count = static_cast<int64_t>(bytes_of(b.info) / datatype_size(b.info.datatype));
  if (last >= count) {
    g->tensors.pop_back();
    fail(CCV_NNC_EXEC_INVALID, "%s: a %s alias at element %lld reaches element %lld, outside %s (%s, %lld elements)", what,
         shape_string(info.dim).c_str(), static_cast<long long>(first), static_cast<long long>(last),
         tensor_label(g, base.d).c_str(), shape_string(b.info.dim).c_str(), static_cast<long long>(count));
  }
  g->tensors[static_cast<size_t>(base.d)].aliases.push_back(d);
  if (g->alias_hook) g->alias_hook(g->alias_hook_context, {d, g}, base, ofs ? ofs : g->tensors[static_cast<size_t>(d)].ofs,
                                   stride ? stride : g->tensors[static_cast<size_t>(d)].stride, info, name);
  return {d, g};
}

void tensor_free(Graph* g, const ccv_nnc_tensor_symbol_t& s) {
  Graph::Tensor& t = tensor_at(g, s, "ccv_nnc_tensor_symbol_free");
  t.flags |= CCV_NNC_TENSOR_SYMBOL_DEAD;
  if (t.alias_of >= 0) remove_value(g->tensors[static_cast<size_t>(t.alias_of)].aliases, s.d);
  for (int a : std::vector<int>(t.aliases)) g->tensors[static_cast<size_t>(a)].flags |= CCV_NNC_TENSOR_SYMBOL_DEAD;
}

ccv_nnc_graph_exec_symbol_t exec_new(Graph* g, const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_symbol_t* inputs,
                                     int input_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size,
                                     const char* name) {
  static const char* what = "ccv_nnc_graph_exec_symbol_new";
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(input_size >= 0 && output_size >= 0, "%s: negative input_size %d or output_size %d", what, input_size,
            output_size);
  NNC_CHECK((inputs || input_size == 0) && (outputs || output_size == 0), "%s: a NULL array with a non-zero size", what);
  const int e = static_cast<int>(g->execs.size());
  Graph::Exec x;
  x.cmd = cmd;
  x.hint = ccv_nnc_no_hint;
  if (name) x.name = name;
  // An empty slot is CCV_NNC_NO_TENSOR_SYMBOL, or a symbol of no graph; an
  // enclosing graph's symbol gets a local stand-in.
  auto slot = [&](const ccv_nnc_tensor_symbol_t& s, const char* role, int i) {
    if (s.graph == g && s.d >= 0 && static_cast<size_t>(s.d) < g->tensors.size() &&
        !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(g->tensors[static_cast<size_t>(s.d)].flags))
      return static_cast<int>(s.d);  // the common case, without building a message
    const std::string w = format("%s: %s %d", what, role, i);
    return local_symbol(g, s, w.c_str());
  };
  for (int i = 0; i < input_size; i++) x.inputs.push_back(slot(inputs[i], "input", i));
  for (int i = 0; i < output_size; i++) {
    x.outputs.push_back(slot(outputs[i], "output", i));
    NNC_CHECK(x.outputs.back() != CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL, "%s: output %d is the loop counter, which only the loop writes",
              what, i);
  }
  // Shapes: outputs created without one take the command's inference.
  std::vector<ccv_nnc_tensor_param_t> in(static_cast<size_t>(input_size)), out(static_cast<size_t>(output_size));
  for (int i = 0; i < input_size; i++)
    if (x.inputs[static_cast<size_t>(i)] == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL)
      in[static_cast<size_t>(i)] = slot_params(g, CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL);
    else if (x.inputs[static_cast<size_t>(i)] >= 0) {
      in[static_cast<size_t>(i)] = g->tensors[static_cast<size_t>(x.inputs[static_cast<size_t>(i)])].info;
      NNC_CHECK(nd(in[static_cast<size_t>(i)]) > 0, "%s: input %d, %s, has no shape yet (nothing before it gave one)",
                what, i, tensor_label(g, x.inputs[static_cast<size_t>(i)]).c_str());
    }
  bool unknown = false;
  for (int i = 0; i < output_size; i++)
    if (x.outputs[static_cast<size_t>(i)] >= 0) unknown = unknown || nd(g->tensors[static_cast<size_t>(x.outputs[static_cast<size_t>(i)])].info) == 0;
  if (unknown && cmd.cmd != CCV_NNC_NOOP && cmd.cmd != CCV_NNC_CUSTOM_FORWARD && cmd.cmd != CCV_NNC_CUSTOM_BACKWARD) {
    hint_tensor_auto(cmd, in.data(), input_size, x.hint, out.data(), output_size);
    for (int i = 0; i < output_size; i++) {
      const int o = x.outputs[static_cast<size_t>(i)];
      if (o < 0 || nd(g->tensors[static_cast<size_t>(o)].info) > 0) continue;
      NNC_CHECK(nd(out[static_cast<size_t>(i)]) > 0, "%s: cannot infer the shape of output %d, %s, from the inputs", what,
                i, tensor_label(g, o).c_str());
      ccv_nnc_tensor_param_t p = out[static_cast<size_t>(i)];
      p.type = g->tensors[static_cast<size_t>(o)].info.type ? g->tensors[static_cast<size_t>(o)].info.type : p.type;
      g->tensors[static_cast<size_t>(o)].info = p;
    }
  }
  // The hint windowed commands run with, from the first input and output.
  if (input_size > 0 && output_size > 0 && x.inputs[0] >= 0 && x.outputs[0] >= 0)
    x.hint = hint_auto(cmd.info, g->tensors[static_cast<size_t>(x.inputs[0])].info,
                       g->tensors[static_cast<size_t>(x.outputs[0])].info);
  // SSA: no element of an output may already have a writer.
  for (int i = 0; i < output_size; i++) {
    const int o = x.outputs[static_cast<size_t>(i)];
    if (o < 0) continue;
    const int b = base_of(g, o);
    const std::vector<int> family = family_of(g, b);
    for (int s : family)
      for (int w : g->tensors[static_cast<size_t>(s)].writers)
        if (live_exec(g, w) && may_overlap(g, o, s))
          fail(CCV_NNC_EXEC_INVALID, "%s: output %d, %s, would break SSA: %s already writes %s", what, i,
               tensor_label(g, o).c_str(), exec_label(g, w).c_str(),
               s == o ? "it" : format("%s, which overlaps it", tensor_label(g, s).c_str()).c_str());
    for (int j = 0; j < i; j++) {
      const int p = x.outputs[static_cast<size_t>(j)];
      NNC_CHECK(p < 0 || base_of(g, p) != b || !may_overlap(g, o, p),
                "%s: outputs %d and %d, %s and %s, overlap (one writer, one value each)", what, j, i,
                tensor_label(g, p).c_str(), tensor_label(g, o).c_str());
    }
  }
  g->execs.push_back(std::move(x));
  for (int o : g->execs.back().outputs)
    if (o >= 0) g->tensors[static_cast<size_t>(o)].writers.push_back(e);
  if (g->parent) {
    try {
      refresh_owner(g);
    } catch (...) {  // an enclosing symbol would get a second writer: undo
      for (int o : g->execs.back().outputs)
        if (o >= 0) remove_value(g->tensors[static_cast<size_t>(o)].writers, e);
      g->execs.back().flags |= CCV_NNC_GRAPH_EXEC_DEAD;
      throw;
    }
  }
  if (g->exec_hook) g->exec_hook(g->exec_hook_context, {e, g}, cmd, inputs, input_size, outputs, output_size, name);
  return {e, g};
}

void exec_set_io(Graph* g, int e, const ccv_nnc_tensor_symbol_t* inputs, int input_size, const ccv_nnc_tensor_symbol_t* outputs,
                 int output_size) {
  static const char* what = "ccv_nnc_graph_exec_symbol_set_io";
  NNC_CHECK(input_size >= 0 && output_size >= 0 && (inputs || input_size == 0) && (outputs || output_size == 0),
            "%s: bad arrays (sizes %d and %d)", what, input_size, output_size);
  auto slot = [&](const ccv_nnc_tensor_symbol_t& s) { return local_symbol(g, s, what); };
  std::vector<int> in, out;
  for (int i = 0; i < input_size; i++) in.push_back(slot(inputs[i]));
  for (int i = 0; i < output_size; i++) out.push_back(slot(outputs[i]));
  for (size_t i = 0; i < out.size(); i++) {
    const int o = out[i];
    if (o < 0) continue;
    const int b = base_of(g, o);
    const std::vector<int> family = family_of(g, b);
    for (int s : family)
      for (int w : g->tensors[static_cast<size_t>(s)].writers)
        NNC_CHECK(w == e || !live_exec(g, w) || !may_overlap(g, o, s), "%s: output %zu, %s, would break SSA: %s already writes %s",
                  what, i, tensor_label(g, o).c_str(), exec_label(g, w).c_str(), tensor_label(g, s).c_str());
  }
  Graph::Exec& x = g->execs[static_cast<size_t>(e)];
  for (int o : x.outputs)
    if (o >= 0) remove_value(g->tensors[static_cast<size_t>(o)].writers, e);
  x.inputs = std::move(in);
  x.outputs = std::move(out);
  for (int o : x.outputs)
    if (o >= 0) g->tensors[static_cast<size_t>(o)].writers.push_back(e);
  if (g->parent) refresh_owner(g);
}

void tensor_auto(Graph* g, const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                 const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  for (int e : exec_order(g, sources, source_size, destinations, destination_size)) {
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    if (control_of(x)) continue;  // its outputs take their shapes from the sub-graphs
    bool unknown = false, ready = true;
    for (int o : x.outputs) unknown = unknown || (o >= 0 && nd(g->tensors[static_cast<size_t>(o)].info) == 0);
    std::vector<ccv_nnc_tensor_param_t> in(x.inputs.size()), out(x.outputs.size());
    for (size_t i = 0; i < x.inputs.size(); i++)
      if (x.inputs[i] >= 0) {
        in[i] = g->tensors[static_cast<size_t>(x.inputs[i])].info;
        ready = ready && nd(in[i]) > 0;
      }
    if (!unknown || !ready || x.cmd.cmd == CCV_NNC_NOOP || x.cmd.cmd == CCV_NNC_CUSTOM_FORWARD || x.cmd.cmd == CCV_NNC_CUSTOM_BACKWARD) continue;
    hint_tensor_auto(x.cmd, in.data(), static_cast<int>(in.size()), x.hint, out.data(), static_cast<int>(out.size()));
    for (size_t i = 0; i < x.outputs.size(); i++) {
      const int o = x.outputs[i];
      if (o >= 0 && nd(g->tensors[static_cast<size_t>(o)].info) == 0 && nd(out[i]) > 0) g->tensors[static_cast<size_t>(o)].info = out[i];
    }
  }
}

void exec_free(Graph* g, const ccv_nnc_graph_exec_symbol_t& s) {
  Graph::Exec& x = exec_at(g, s, "ccv_nnc_graph_exec_symbol_free");
  x.flags |= CCV_NNC_GRAPH_EXEC_DEAD;
  for (int o : x.outputs)
    if (o >= 0) remove_value(g->tensors[static_cast<size_t>(o)].writers, s.d);
  // Keep the order it stood for: its predecessors now precede its successors.
  const std::vector<int> after = x.outgoing;
  x.outgoing.clear();
  for (size_t p = 0; p < g->execs.size(); p++) {
    Graph::Exec& pe = g->execs[p];
    if (std::find(pe.outgoing.begin(), pe.outgoing.end(), s.d) == pe.outgoing.end()) continue;
    remove_value(pe.outgoing, s.d);
    for (int a : after)
      if (std::find(pe.outgoing.begin(), pe.outgoing.end(), a) == pe.outgoing.end()) pe.outgoing.push_back(a);
  }
  auto drop = [&](std::vector<ccv_nnc_graph_exec_symbol_t>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const ccv_nnc_graph_exec_symbol_t& e) { return e.d == s.d; }), v.end());
  };
  drop(g->sources);
  drop(g->destinations);
  // A loop or case..of goes with its sub-graphs.
  for (Graph* sub : x.subs) delete sub;
  x.subs.clear();
  if (g->parent) refresh_owner(g);
}

bool concat(Graph* g, int from, int to) {
  Graph::Exec& f = g->execs[static_cast<size_t>(from)];
  if (std::find(f.outgoing.begin(), f.outgoing.end(), to) != f.outgoing.end()) return false;
  NNC_CHECK(from != to && !reaches(g, to, from), "ccv_nnc_graph_exec_symbol_concat: an edge from %s to %s would close a cycle",
            exec_label(g, from).c_str(), exec_label(g, to).c_str());
  f.outgoing.push_back(to);
  return true;
}

bool disjoin(Graph* g, int from, int to) {
  std::vector<int>& out = g->execs[static_cast<size_t>(from)].outgoing;
  const auto it = std::find(out.begin(), out.end(), to);
  if (it == out.end()) return false;
  out.erase(it);
  return true;
}

void autogen(Graph* g, const std::vector<int>& execs, bool with_ends) {
  std::vector<int> set = execs;
  if (set.empty())
    for (int e = 0; e < static_cast<int>(g->execs.size()); e++)
      if (live_exec(g, e)) set.push_back(e);
  std::vector<char> in_set(g->execs.size(), 0);
  for (int e : set) in_set[static_cast<size_t>(e)] = 1;
  std::vector<std::pair<int, int>> added;
  for (int e : set) {
    for (int i : g->execs[static_cast<size_t>(e)].inputs) {
      if (i < 0) continue;
      const int b = base_of(g, i);
      const std::vector<int> family = family_of(g, b);
      for (int s : family)
        for (int w : g->tensors[static_cast<size_t>(s)].writers) {
          if (w == e || !in_set[static_cast<size_t>(w)] || !live_exec(g, w) || !may_overlap(g, i, s)) continue;
          std::vector<int>& out = g->execs[static_cast<size_t>(w)].outgoing;
          if (std::find(out.begin(), out.end(), e) != out.end()) continue;
          out.push_back(e);
          added.emplace_back(w, e);
        }
    }
  }
  // The data dependencies must form no cycle (each read after its write).
  std::vector<int> indegree(g->execs.size(), 0);
  size_t live = 0;
  for (size_t e = 0; e < g->execs.size(); e++) {
    if (!live_exec(g, static_cast<int>(e))) continue;
    live++;
    for (int t : g->execs[e].outgoing) indegree[static_cast<size_t>(t)]++;
  }
  std::vector<int> ready;
  for (size_t e = 0; e < g->execs.size(); e++)
    if (live_exec(g, static_cast<int>(e)) && indegree[e] == 0) ready.push_back(static_cast<int>(e));
  size_t done = 0;
  while (!ready.empty()) {
    const int n = ready.back();
    ready.pop_back();
    done++;
    for (int t : g->execs[static_cast<size_t>(n)].outgoing)
      if (--indegree[static_cast<size_t>(t)] == 0) ready.push_back(t);
  }
  if (done != live) {
    for (const auto& [w, e] : added) remove_value(g->execs[static_cast<size_t>(w)].outgoing, e);
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_graph_exec_symbol_autogen: the execs' data dependencies form a cycle");
  }
  if (with_ends) reset_ends(g);
}

void reset_ends(Graph* g) {
  std::vector<char> has_in(g->execs.size(), 0);
  for (size_t e = 0; e < g->execs.size(); e++)
    if (live_exec(g, static_cast<int>(e)))
      for (int t : g->execs[e].outgoing) has_in[static_cast<size_t>(t)] = 1;
  g->sources.clear();
  g->destinations.clear();
  for (size_t e = 0; e < g->execs.size(); e++) {
    if (!live_exec(g, static_cast<int>(e))) continue;
    if (!has_in[e]) g->sources.push_back({static_cast<int32_t>(e), g});
    if (g->execs[e].outgoing.empty()) g->destinations.push_back({static_cast<int32_t>(e), g});
  }
}

std::vector<int> family_of(const Graph* g, int base) {
  std::vector<int> family{base};
  const std::vector<int>& aliases = g->tensors[static_cast<size_t>(base)].aliases;
  family.insert(family.end(), aliases.begin(), aliases.end());
  return family;
}

std::vector<int> exec_order(const Graph* g, const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                            const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  const size_t n = g->execs.size();
  std::vector<int> from, to;
  auto take = [&](const ccv_nnc_graph_exec_symbol_t* list, int size, const std::vector<ccv_nnc_graph_exec_symbol_t>& def,
                  std::vector<int>& into, const char* role) {
    if (size > 0) {
      NNC_CHECK(list, "the %s array is NULL with size %d", role, size);
      for (int i = 0; i < size; i++) {
        exec_at(g, list[i], role);
        into.push_back(list[i].d);
      }
    } else {
      for (const auto& s : def) {
        exec_at(g, s, role);
        into.push_back(s.d);
      }
    }
  };
  take(sources, source_size, g->sources, from, "source");
  take(destinations, destination_size, g->destinations, to, "destination");
  std::vector<char> has_in(n, 0);
  for (size_t e = 0; e < n; e++)
    if (live_exec(g, static_cast<int>(e)))
      for (int t : g->execs[e].outgoing) has_in[static_cast<size_t>(t)] = 1;
  if (from.empty())
    for (size_t e = 0; e < n; e++)
      if (live_exec(g, static_cast<int>(e)) && !has_in[e]) from.push_back(static_cast<int>(e));
  if (to.empty())
    for (size_t e = 0; e < n; e++)
      if (live_exec(g, static_cast<int>(e)) && g->execs[e].outgoing.empty()) to.push_back(static_cast<int>(e));
  // Forward from the sources, backward from the destinations.
  std::vector<char> fwd(n, 0), bwd(n, 0);
  std::vector<int> stack(from.begin(), from.end());
  for (int s : from) fwd[static_cast<size_t>(s)] = 1;
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    for (int t : g->execs[static_cast<size_t>(x)].outgoing)
      if (!fwd[static_cast<size_t>(t)]) {
        fwd[static_cast<size_t>(t)] = 1;
        stack.push_back(t);
      }
  }
  std::vector<std::vector<int>> incoming(n);
  for (size_t e = 0; e < n; e++)
    if (live_exec(g, static_cast<int>(e)))
      for (int t : g->execs[e].outgoing) incoming[static_cast<size_t>(t)].push_back(static_cast<int>(e));
  stack.assign(to.begin(), to.end());
  for (int d : to) {
    NNC_CHECK(fwd[static_cast<size_t>(d)], "%s is not reachable from the sources", exec_label(g, d).c_str());
    bwd[static_cast<size_t>(d)] = 1;
  }
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    for (int p : incoming[static_cast<size_t>(x)])
      if (!bwd[static_cast<size_t>(p)]) {
        bwd[static_cast<size_t>(p)] = 1;
        stack.push_back(p);
      }
  }
  std::vector<int> indegree(n, 0);
  size_t kept = 0;
  for (size_t e = 0; e < n; e++) {
    if (!(fwd[e] && bwd[e])) continue;
    kept++;
    for (int p : incoming[e])
      if (fwd[static_cast<size_t>(p)] && bwd[static_cast<size_t>(p)]) indegree[e]++;
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t e = 0; e < n; e++)
    if (fwd[e] && bwd[e] && indegree[e] == 0) ready.push(static_cast<int>(e));
  std::vector<int> order;
  order.reserve(kept);
  while (!ready.empty()) {
    const int x = ready.top();
    ready.pop();
    order.push_back(x);
    for (int t : g->execs[static_cast<size_t>(x)].outgoing)
      if (fwd[static_cast<size_t>(t)] && bwd[static_cast<size_t>(t)] && --indegree[static_cast<size_t>(t)] == 0) ready.push(t);
  }
  NNC_CHECK(order.size() == kept, "the exec symbols between the sources and the destinations form a cycle");
  return order;
}

}  // namespace nnc::symbolic
