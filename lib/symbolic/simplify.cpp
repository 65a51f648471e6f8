// ccv_nnc_symbolic_graph_simplify: passes that rewrite the graph into one
// with fewer execs and the same values for the outputs asked for.
//
// Every pass keeps SSA and the graph's order: a reader moved from one symbol
// to an equal one gets an edge from that symbol's writer; an exec removed
// hands its order to its neighbours (exec_free). Execs flagged
// CCV_NNC_GRAPH_EXEC_DISABLE_OPT are left alone.
#include "symbolic/simplify.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "cmd/common/copy.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::symbolic {

namespace {

bool live(const Graph* g, int e) { return !CCV_NNC_GRAPH_EXEC_IS_DEAD(g->execs[static_cast<size_t>(e)].flags); }
bool optimisable(const Graph* g, int e) {
  return live(g, e) && !(g->execs[static_cast<size_t>(e)].flags & CCV_NNC_GRAPH_EXEC_DISABLE_OPT);
}
const Graph::Tensor& T(const Graph* g, int d) { return g->tensors[static_cast<size_t>(d)]; }

// A command whose outputs are a function of its inputs alone: not random,
// not the caller's own code, not a NOOP.
bool pure(const Graph::Exec& x) {
  const uint32_t c = x.cmd.cmd;
  return !x.cmd.isa && !control_of(x) && c != CCV_NNC_NOOP && c != CCV_NNC_CUSTOM_FORWARD && c != CCV_NNC_CUSTOM_BACKWARD &&
         c != CCV_NNC_RANDOM_UNIFORM_FORWARD && c != CCV_NNC_RANDOM_NORMAL_FORWARD && c != CCV_NNC_DROPOUT_FORWARD;
}

// A plain symbol: not an alias and viewed by none, so it can stand for another.
bool plain(const Graph* g, int d) { return d >= 0 && T(g, d).alias_of < 0 && T(g, d).aliases.empty(); }

// Every read of `from` becomes a read of `to` (equal values); each moved
// reader is ordered after `to`'s writers.
void replace_reads(Graph* g, int from, int to) {
  for (size_t e = 0; e < g->execs.size(); e++) {
    if (!live(g, static_cast<int>(e))) continue;
    // A loop or case..of reads through its sub-graphs' stand-ins: they are
    // pointed at `to` too (left alone where one already stands for `to`).
    Graph::Exec& cx = g->execs[e];
    if (!cx.subs.empty() && std::find(cx.inputs.begin(), cx.inputs.end(), from) != cx.inputs.end()) {
      bool clash = false;
      for (const Graph* sub : cx.subs)
        if (sub)
          for (const auto& p : sub->stand_ins) clash = clash || p.first == to;
      if (clash) continue;
      for (Graph* sub : cx.subs)
        if (sub)
          for (auto& p : sub->stand_ins)
            if (p.first == from) {
              p.first = to;
              sub->tensors[static_cast<size_t>(p.second)].outer = to;
            }
      std::replace(cx.declared_inputs.begin(), cx.declared_inputs.end(), from, to);
      for (int o : cx.outputs)
        if (o >= 0 && T(g, o).bypass == from) g->tensors[static_cast<size_t>(o)].bypass = to;
    }
    bool moved = false;
    for (int& d : g->execs[e].inputs)
      if (d == from) {
        d = to;
        moved = true;
      }
    if (!moved) continue;
    for (int w : T(g, to).writers)
      if (live(g, w) && w != static_cast<int>(e)) {
        std::vector<int>& out = g->execs[static_cast<size_t>(w)].outgoing;
        if (std::find(out.begin(), out.end(), static_cast<int>(e)) == out.end()) out.push_back(static_cast<int>(e));
      }
  }
}

bool is_kept(const std::vector<char>& keep, int d) { return d >= 0 && keep[static_cast<size_t>(d)]; }

// Two params describe the same tensor memory layout.
bool same_param(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  return a.type == b.type && a.format == b.format && CCV_GET_DATA_TYPE(a.datatype) == CCV_GET_DATA_TYPE(b.datatype) &&
         same_shape(a, b);
}

// Common sub-expressions: an exec running the same command, with the same
// hint, over the same inputs as an earlier one computes the same outputs;
// the later outputs' readers read the earlier ones (pruning removes the
// later exec when nothing else needs it). Random and custom commands are
// not pure, and execs writing through aliases are left as they are.
int cse(Graph* g, const std::vector<int>& order, const std::vector<char>& keep) {
  std::map<std::string, int> seen;
  int merged = 0;
  for (int e : order) {
    if (!optimisable(g, e)) continue;
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    const uint32_t c = x.cmd.cmd;
    if (!pure(x)) continue;
    bool simple = !x.outputs.empty();
    for (int o : x.outputs) simple = simple && (o < 0 || plain(g, o));
    for (int i : x.inputs) simple = simple && std::find(x.outputs.begin(), x.outputs.end(), i) == x.outputs.end();
    if (!simple) continue;
    std::string key(reinterpret_cast<const char*>(&c), sizeof(c));
    key.append(reinterpret_cast<const char*>(&x.cmd.info), sizeof(x.cmd.info));
    key.append(reinterpret_cast<const char*>(&x.cmd.backend), sizeof(x.cmd.backend));
    key.append(reinterpret_cast<const char*>(&x.hint), sizeof(x.hint));
    const int ni = static_cast<int>(x.inputs.size()), no = static_cast<int>(x.outputs.size());
    key.append(reinterpret_cast<const char*>(&ni), sizeof(ni));
    key.append(reinterpret_cast<const char*>(x.inputs.data()), x.inputs.size() * sizeof(int));
    key.append(reinterpret_cast<const char*>(&no), sizeof(no));
    for (int o : x.outputs) {
      const ccv_nnc_tensor_param_t p = o >= 0 ? T(g, o).info : ccv_nnc_tensor_param_t{};
      key.append(reinterpret_cast<const char*>(&p), sizeof(p));
    }
    const auto [it, fresh] = seen.emplace(key, e);
    if (fresh) continue;
    const Graph::Exec& first = g->execs[static_cast<size_t>(it->second)];
    for (size_t j = 0; j < x.outputs.size(); j++) {
      const int o = x.outputs[j], f = first.outputs[j];
      if (o < 0 || f < 0 || is_kept(keep, o)) continue;  // an output asked for keeps its own writer
      replace_reads(g, o, f);
    }
    merged++;
  }
  return merged;
}

// Identity copies: DATA_TRANSFER, FORMAT_TRANSFORM or DATATYPE_CONVERSION
// between tensors of one layout (a plain symbol each) is removed and its
// output's readers read its input.
int transfers(Graph* g, const std::vector<int>& order, const std::vector<char>& keep) {
  int removed = 0;
  for (int e : order) {
    if (!optimisable(g, e)) continue;
    Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    const uint32_t c = x.cmd.cmd;
    if (c != CCV_NNC_DATA_TRANSFER_FORWARD && c != CCV_NNC_FORMAT_TRANSFORM_FORWARD && c != CCV_NNC_DATATYPE_CONVERSION_FORWARD)
      continue;
    const size_t n = std::min(x.inputs.size(), x.outputs.size());
    bool all = n > 0 && x.inputs.size() == x.outputs.size();
    for (size_t k = 0; k < n && all; k++) {
      const int i = x.inputs[k], o = x.outputs[k];
      all = plain(g, i) && plain(g, o) && !is_kept(keep, o) && same_param(T(g, i).info, T(g, o).info);
    }
    if (!all) continue;
    const std::vector<int> ins = x.inputs, outs = x.outputs;
    exec_free(g, {e, g});
    for (size_t k = 0; k < n; k++) replace_reads(g, outs[k], ins[k]);
    removed++;
  }
  return removed;
}

// A symbol nothing writes and flagged INIT_ZEROS / INIT_ONES holds 0 / 1.
int constant_of(const Graph* g, int d) {
  if (d < 0 || !plain(g, d)) return -1;
  for (int w : T(g, d).writers)
    if (live(g, w)) return -1;
  if (T(g, d).flags & CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS) return 0;
  if (T(g, d).flags & CCV_NNC_TENSOR_SYMBOL_INIT_ONES) return 1;
  return -1;
}

// Owl's useless work: x + 0 (EWSUM, ADD with unit factors), x * 1 (EWPROD,
// MUL or SCALAR_MUL by one) and the identity copies become their input,
// when the shapes say the result is that input unchanged.
int useless(Graph* g, const std::vector<int>& order, const std::vector<char>& keep) {
  int removed = transfers(g, order, keep);
  for (int e : order) {
    if (!optimisable(g, e)) continue;
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    if (x.outputs.size() != 1 || !plain(g, x.outputs[0]) || is_kept(keep, x.outputs[0])) continue;
    const int o = x.outputs[0];
    const uint32_t c = x.cmd.cmd;
    int identity = -1;  // the input the output equals
    if (c == CCV_NNC_SCALAR_MUL_FORWARD && x.inputs.size() == 1 && x.cmd.info.blas.a[0] == 1) {
      identity = x.inputs[0];
    } else if ((c == CCV_NNC_EWSUM_FORWARD || c == CCV_NNC_EWPROD_FORWARD ||
                ((c == CCV_NNC_ADD_FORWARD || c == CCV_NNC_MUL_FORWARD) && x.cmd.info.blas.a[0] == 1 &&
                 (c == CCV_NNC_MUL_FORWARD || x.cmd.info.blas.a[1] == 1))) &&
               x.inputs.size() == 2) {
      const int neutral = c == CCV_NNC_EWSUM_FORWARD || c == CCV_NNC_ADD_FORWARD ? 0 : 1;
      for (int k = 0; k < 2 && identity < 0; k++)
        if (constant_of(g, x.inputs[static_cast<size_t>(k)]) == neutral) identity = x.inputs[static_cast<size_t>(1 - k)];
    } else if (c == CCV_NNC_EWSUM_FORWARD && x.inputs.size() == 1) {
      identity = x.inputs[0];
    }
    if (identity < 0 || !plain(g, identity) || !same_param(T(g, identity).info, T(g, o).info)) continue;
    exec_free(g, {e, g});
    replace_reads(g, o, identity);
    removed++;
  }
  return removed;
}

// Fusion: SOFTMAX then CATEGORICAL_CROSSENTROPY on its output is one
// SOFTMAX_CROSSENTROPY (the same loss, with the log taken of the logits'
// softmax in one pass, and the softmax still written for other readers).
int fuse(Graph* g, const std::vector<int>& order) {
  int fused = 0;
  for (int e : order) {
    if (!optimisable(g, e)) continue;
    Graph::Exec& ce = g->execs[static_cast<size_t>(e)];
    if (ce.cmd.cmd != CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD || ce.inputs.size() != 2 || ce.outputs.size() != 1 || ce.inputs[0] < 0 ||
        ce.inputs[1] < 0 || ce.outputs[0] < 0)
      continue;
    const int y = ce.inputs[0];
    if (!plain(g, y)) continue;
    int sm = -1;
    for (int w : T(g, y).writers)
      if (live(g, w)) sm = sm < 0 ? w : -2;
    if (sm < 0 || !optimisable(g, sm)) continue;
    const Graph::Exec& s = g->execs[static_cast<size_t>(sm)];
    if (s.cmd.cmd != CCV_NNC_SOFTMAX_FORWARD || s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.cmd.isa)
      continue;
    const int x = s.inputs[0];
    exec_free(g, {sm, g});
    Graph::Exec& f = g->execs[static_cast<size_t>(e)];
    const ccv_nnc_cmd_param_t info = f.cmd.info;
    const uint32_t backend = f.cmd.backend;
    f.cmd = make_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, info, 0);
    f.cmd.backend = backend;
    f.inputs[0] = x;
    f.outputs.push_back(y);
    g->tensors[static_cast<size_t>(y)].writers.push_back(e);
    // After what writes x; before what reads y.
    for (const int w : T(g, base_of(g, x)).writers)
      if (live(g, w) && w != e) {
        std::vector<int>& out = g->execs[static_cast<size_t>(w)].outgoing;
        if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
      }
    for (size_t r = 0; r < g->execs.size(); r++) {
      if (!live(g, static_cast<int>(r)) || static_cast<int>(r) == e) continue;
      const std::vector<int>& in = g->execs[r].inputs;
      if (std::find(in.begin(), in.end(), y) == in.end()) continue;
      std::vector<int>& out = g->execs[static_cast<size_t>(e)].outgoing;
      if (std::find(out.begin(), out.end(), static_cast<int>(r)) == out.end()) out.push_back(static_cast<int>(r));
    }
    fused++;
  }
  return fused;
}

// Constant folding over the constants a symbolic graph has: symbols flagged
// INIT_ZEROS / INIT_ONES that nothing writes. An exec whose inputs are all
// such constants runs once here, on tensors of the real shapes; an output
// that comes out uniformly 0 or 1 becomes a constant symbol of that value
// (its writer goes), anything else is left to run.
int fold(Graph* g, const std::vector<int>& order, const std::vector<char>& keep) {
  int folded = 0;
  for (int e : order) {
    if (!optimisable(g, e)) continue;
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    if (x.inputs.empty() || !pure(x)) continue;
    bool constant = true;
    for (int i : x.inputs) constant = constant && (i < 0 || constant_of(g, i) >= 0);
    bool outputs_plain = !x.outputs.empty();
    for (int o : x.outputs) outputs_plain = outputs_plain && (o < 0 || (plain(g, o) && !is_kept(keep, o)));
    if (!constant || !outputs_plain) continue;
    struct Owned {
      std::vector<ccv_nnc_tensor_t*> list;
      ~Owned() {
        for (ccv_nnc_tensor_t* t : list) nnc::tensor_free(t);
      }
    } owned;
    // A CPU tensor of the symbol's shape (NULL for an empty slot), freed with the pass.
    auto scratch = [&](int d) -> ccv_nnc_tensor_t* {
      if (d < 0) return nullptr;
      ccv_nnc_tensor_param_t p = T(g, d).info;
      p.type = CCV_TENSOR_CPU_MEMORY;
      owned.list.push_back(nnc::tensor_new(nullptr, p, 0));
      return owned.list.back();
    };
    std::vector<ccv_nnc_tensor_t*> in, out;
    for (int i : x.inputs) {
      in.push_back(scratch(i));
      if (in.back()) util::opt_fill(in.back(), constant_of(g, i));
    }
    for (int o : x.outputs) out.push_back(scratch(o));
    ccv_nnc_cmd_t cmd = x.cmd;
    cmd.backend = 0;  // whatever CPU backend runs it
    int code;
    try {
      code = cmd_exec(cmd, x.hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr);
    } catch (...) {
      code = CCV_NNC_EXEC_INVALID;
    }
    if (code != CCV_NNC_EXEC_SUCCESS) {  // left to run, and to report its error, when the graph runs
      clear_error_message();
      continue;
    }
    std::vector<int> value(x.outputs.size(), -1);
    bool uniform = true;
    for (size_t j = 0; j < x.outputs.size() && uniform; j++) {
      if (!out[j]) continue;
      const ccv_nnc_tensor_param_t& p = out[j]->info;
      const size_t n = bytes_of(p) / datatype_size(p.datatype);
      const double v0 = load_double(out[j]->data.u8, p.datatype);
      uniform = v0 == 0 || v0 == 1;
      for (size_t k = 1; k < n && uniform; k++) uniform = load_double(out[j]->data.u8 + k * datatype_size(p.datatype), p.datatype) == v0;
      value[j] = static_cast<int>(v0);
    }
    if (!uniform) continue;
    const std::vector<int> outs = x.outputs;
    exec_free(g, {e, g});
    for (size_t j = 0; j < outs.size(); j++) {
      if (outs[j] < 0) continue;
      Graph::Tensor& t = g->tensors[static_cast<size_t>(outs[j])];
      t.flags = (t.flags & ~(CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES)) |
                (value[j] ? CCV_NNC_TENSOR_SYMBOL_INIT_ONES : CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    }
    folded++;
  }
  return folded;
}

// Execs that no output asked for depends on are removed; so are tensor
// symbols nothing uses any more.
int prune(Graph* g, const std::vector<int>& order, const std::vector<char>& keep, const std::vector<char>& bound) {
  std::vector<char> need_exec(g->execs.size(), 0), need_tensor(g->tensors.size(), 0);
  std::vector<int> stack;
  auto need = [&](int d) {
    if (d < 0) return;
    const int b = base_of(g, d);
    for (int s : family_of(g, b)) {
      if (!may_overlap(g, d, s)) continue;
      if (!need_tensor[static_cast<size_t>(s)]) need_tensor[static_cast<size_t>(s)] = 1;
      for (int w : T(g, s).writers)
        if (live(g, w) && !need_exec[static_cast<size_t>(w)]) {
          need_exec[static_cast<size_t>(w)] = 1;
          stack.push_back(w);
        }
    }
    need_tensor[static_cast<size_t>(d)] = 1;
  };
  for (size_t d = 0; d < g->tensors.size(); d++)
    if (keep[d]) need(static_cast<int>(d));
  while (!stack.empty()) {
    const int e = stack.back();
    stack.pop_back();
    for (int i : g->execs[static_cast<size_t>(e)].inputs) need(i);
  }
  int removed = 0;
  for (int e : order)
    if (live(g, e) && !need_exec[static_cast<size_t>(e)] && !(g->execs[static_cast<size_t>(e)].flags & CCV_NNC_GRAPH_EXEC_DISABLE_OPT)) {
      exec_free(g, {e, g});
      removed++;
    }
  // Symbols no live exec touches, not asked for and not to be bound.
  std::vector<char> touched(g->tensors.size(), 0);
  for (size_t e = 0; e < g->execs.size(); e++) {
    if (!live(g, static_cast<int>(e))) continue;
    for (const std::vector<int>* io : {&g->execs[e].inputs, &g->execs[e].outputs})
      for (int d : *io)
        if (d >= 0) {
          touched[static_cast<size_t>(d)] = 1;
          touched[static_cast<size_t>(base_of(g, d))] = 1;
        }
  }
  for (size_t d = 0; d < g->tensors.size(); d++) {
    Graph::Tensor& t = g->tensors[d];
    if (CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) || touched[d] || keep[d] || bound[d]) continue;
    bool alias_alive = false;
    for (int a : t.aliases) alias_alive = alias_alive || touched[static_cast<size_t>(a)] || keep[static_cast<size_t>(a)] || bound[static_cast<size_t>(a)];
    if (alias_alive) continue;
    tensor_free(g, {static_cast<int32_t>(d), g});
  }
  return removed;
}

}  // namespace

void simplify(Graph* g, const int* passes, int pass_size, const ccv_nnc_tensor_symbol_t* binds, int bind_size,
              const ccv_nnc_tensor_symbol_t* outputs, int output_size, const ccv_nnc_graph_exec_symbol_t* sources,
              int source_size, const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  static const char* what = "ccv_nnc_symbolic_graph_simplify";
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(!g->parent, "%s: the graph is a loop body or a branch; simplify the graph that owns it (sub-graphs are left as they are)",
            what);
  NNC_CHECK(pass_size >= 0 && (pass_size == 0 || passes), "%s: bad passes array (size %d)", what, pass_size);
  NNC_CHECK(bind_size >= 0 && (bind_size == 0 || binds), "%s: bad binds array (size %d)", what, bind_size);
  NNC_CHECK(output_size >= 0 && (output_size == 0 || outputs), "%s: bad outputs array (size %d)", what, output_size);
  for (int p = 0; p < pass_size; p++)
    NNC_CHECK(passes[p] == CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION || passes[p] == CCV_NNC_SIMPLIFY_GRAPH_PRUNING ||
                  passes[p] == CCV_NNC_SIMPLIFY_DATA_TRANSFER_OPT || passes[p] == CCV_NNC_SIMPLIFY_OPS_FUSION ||
                  passes[p] == CCV_NNC_SIMPLIFY_USELESS_WORK || passes[p] == CCV_NNC_SIMPLIFY_CONSTANT_FOLDING,
              "%s: passes[%d] = %d is not a pass", what, p, passes[p]);
  std::vector<char> keep(g->tensors.size(), 0), bound(g->tensors.size(), 0);
  for (int i = 0; i < output_size; i++) {
    tensor_of(g, outputs[i], what);
    keep[static_cast<size_t>(outputs[i].d)] = 1;
  }
  for (int i = 0; i < bind_size; i++) {
    tensor_of(g, binds[i], what);
    bound[static_cast<size_t>(binds[i].d)] = 1;
  }
  std::vector<int> order;
  try {
    order = exec_order(g, sources, source_size, destinations, destination_size);
  } catch (const Error& e) {
    fail(e.code(), "%s: %s", what, e.what());
  }
  if (output_size == 0)  // nothing named: what the destinations write is the result
    for (const int e : order) {
      const std::vector<int>& out = g->execs[static_cast<size_t>(e)].outgoing;
      const bool last = std::none_of(out.begin(), out.end(), [&](int t) { return std::find(order.begin(), order.end(), t) != order.end(); });
      if (last)
        for (int o : g->execs[static_cast<size_t>(e)].outputs)
          if (o >= 0) keep[static_cast<size_t>(o)] = 1;
    }
  bool changed = false;
  for (int p = 0; p < pass_size; p++) {
    switch (passes[p]) {
      case CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION:
        changed = cse(g, order, keep) > 0 || changed;
        break;
      case CCV_NNC_SIMPLIFY_GRAPH_PRUNING:
        changed = prune(g, order, keep, bound) > 0 || changed;
        break;
      case CCV_NNC_SIMPLIFY_DATA_TRANSFER_OPT:
        changed = transfers(g, order, keep) > 0 || changed;
        break;
      case CCV_NNC_SIMPLIFY_USELESS_WORK:
        changed = useless(g, order, keep) > 0 || changed;
        break;
      case CCV_NNC_SIMPLIFY_CONSTANT_FOLDING:
        changed = fold(g, order, keep) > 0 || changed;
        break;
      default:  // CCV_NNC_SIMPLIFY_OPS_FUSION
        changed = fuse(g, order) > 0 || changed;
        break;
    }
    order.erase(std::remove_if(order.begin(), order.end(), [&](int e) { return !live(g, e); }), order.end());
  }
  if (changed) reset_ends(g);
}

}  // namespace nnc::symbolic
