// The dynamic graph: variables, eager execution traced into a symbolic
// graph, pruning of the trace, and backward through the symbolic autodiff.
#include "dynamic/dynamic.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <xxhash.h>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/tensor.hpp"
#include "symbolic/graph.hpp"

using namespace nnc;

namespace {

using DG = ccv_nnc_dynamic_graph_s;
using Var = ccv_nnc_tensor_variable_s;
using SG = ccv_nnc_symbolic_graph_s;

void check_graph(const DG* g, const char* what) { NNC_CHECK(g, "%s: the dynamic graph is NULL", what); }

// `role` names the argument in messages, with `index` when it is one of an array.
Var* check_var(const DG* g, Var* v, const char* what, const char* role, int index = -1) {
  check_graph(g, what);
  auto label = [&] { return index < 0 ? std::string(role) : format("%s %d", role, index); };
  if (!v) fail(CCV_NNC_EXEC_INVALID, "%s: %s is NULL", what, label().c_str());
  if (v->graph != g) fail(CCV_NNC_EXEC_INVALID, "%s: %s belongs to another dynamic graph", what, label().c_str());
  if (!v->alive) fail(CCV_NNC_EXEC_INVALID, "%s: %s was freed", what, label().c_str());
  return v;
}

constexpr size_t kPoolLimit = 256u << 20;  // bytes kept for reuse at most

// Storage from the graph's pool when one of the same type and size is there.
std::shared_ptr<ccv_nnc_tensor_t> new_storage(DG* g, const ccv_nnc_tensor_param_t& info, const char* what) {
  ccv_nnc_tensor_t* t = nullptr;
  const size_t bytes = ccv_nnc_tensor_data_size(info);
  for (size_t i = g->pool.size(); i-- > 0;) {
    ccv_nnc_tensor_t* c = g->pool[i];
    if (c->info.datatype != info.datatype || c->info.format != info.format || c->info.type != info.type ||
        ccv_nnc_tensor_data_size(c->info) != bytes)
      continue;
    t = c;
    g->pool[i] = g->pool.back();
    g->pool.pop_back();
    g->pool_bytes -= bytes;
    std::memcpy(t->info.dim, info.dim, sizeof(info.dim));
    break;
  }
  if (!t) t = ccv_nnc_tensor_new(nullptr, info, 0);
  if (!t) fail(CCV_NNC_EXEC_OOM, "%s: cannot allocate a %s %s tensor", what, shape_string(info.dim).c_str(), datatype_name(info.datatype));
  g->in_use += bytes;
  g->peak = std::max(g->peak, g->in_use);
  return std::shared_ptr<ccv_nnc_tensor_t>(t, [g](ccv_nnc_tensor_t* p) {
    const size_t n = ccv_nnc_tensor_data_size(p->info);
    g->in_use -= n;
    if (g->dying || g->pool_bytes + n > kPoolLimit) {
      ccv_nnc_tensor_free(p);
      return;
    }
    g->pool.push_back(p);
    g->pool_bytes += n;
  });
}


// A few tensors or parameters without a heap allocation for the common sizes.
// The first n are value-initialised (only those: zeroing all N tensor
// parameters costs a small call more than the rest of its bookkeeping).
template <class T, size_t N = 8>
class Small {
 public:
  explicit Small(size_t n) : n_(n) {
    if (n > N) heap_.resize(n);
    else
      for (size_t i = 0; i < n; i++) inline_[i] = T{};
  }
  T* data() { return n_ > N ? heap_.data() : inline_; }
  T& operator[](size_t i) { return data()[i]; }

 private:
  size_t n_;
  T inline_[N];
  std::vector<T> heap_;
};

// The variable an alias views, through freed bases (which hand their storage to the alias).
const std::shared_ptr<ccv_nnc_tensor_t>& storage_of(const Var* v) {
  if (v->alias_of && !v->orphan) return v->alias_of->value;
  return v->value;
}

// What commands read and write for v: its storage, or an alias's header over
// its base's current storage (NULL when there is none yet).
ccv_nnc_tensor_t* tensor_of(Var* v) {
  if (!v->alias_of) return v->value.get();
  ccv_nnc_tensor_t* base = storage_of(v).get();
  if (!base) return nullptr;
  const int n = nd_of(v->info.dim);
  int64_t stride[CCV_NNC_MAX_DIM_ALLOC], packed[CCV_NNC_MAX_DIM_ALLOC];
  bool given = false;
  for (int i = 0; i < n; i++) given = given || v->stride[i] != 0;
  packed_strides(v->info.dim, n, packed);
  for (int i = 0; i < n; i++) stride[i] = given ? v->stride[i] : packed[i];
  int64_t first = 0;
  for (int i = 0; i < n; i++) first += static_cast<int64_t>(v->ofs[i]) * stride[i];
  if (!v->view) v->view = std::make_unique<ccv_nnc_tensor_view_t>();
  std::memset(v->view.get(), 0, sizeof(ccv_nnc_tensor_view_t));
  if (std::equal(stride, stride + n, packed)) {
    const ccv_nnc_tensor_t t = tensor_value(base->data.u8 + first * static_cast<int64_t>(datatype_size(v->info.datatype)), v->info, 0);
    std::memcpy(v->view.get(), &t, sizeof(t));
  } else {
    int istride[CCV_NNC_MAX_DIM_ALLOC] = {};
    for (int i = 0; i < n; i++) istride[i] = static_cast<int>(stride[i]);
    view_fill(v->view.get(), base, v->info, v->ofs, istride);
  }
  return reinterpret_cast<ccv_nnc_tensor_t*>(v->view.get());
}

// ---- The trace ------------------------------------------------------------

int base_of(DG* g, int s) { return symbolic::base_of(g->trace, s); }
void sync(DG* g) { g->symbols.resize(g->trace->tensors.size()); }
bool needed(DG* g, int b) { return g->symbols[static_cast<size_t>(b)].named > 0 || g->symbols[static_cast<size_t>(b)].readers > 0; }
bool dead_symbol(DG* g, int s) { return CCV_NNC_TENSOR_SYMBOL_IS_DEAD(g->trace->tensors[static_cast<size_t>(s)].flags); }

int live_writer(DG* g, int b) {
  for (int w : g->trace->tensors[static_cast<size_t>(b)].writers)
    if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(g->trace->execs[static_cast<size_t>(w)].flags)) return w;
  return -1;
}

void drop_symbol(DG* g, int b) {
  g->symbols[static_cast<size_t>(b)].value.reset();
  if (!dead_symbol(g, b)) {
    symbolic::tensor_free(g->trace, {b, g->trace});
    g->dropped++;
  }
}

// Rebuild the trace with its live symbols and execs only, renumbered.
// (symbolic::tensor_new etc. record the graph they were made in; the
// symbols are plain indices, so moving the tables over is enough.)
void compact(DG* g) {
  SG* old = g->trace;
  auto fresh = std::make_unique<SG>();
  SG* t = fresh.get();
  std::vector<int> tmap(old->tensors.size(), -1), emap(old->execs.size(), -1);
  for (int pass = 0; pass < 2; pass++)  // bases, then the aliases of them
    for (size_t d = 0; d < old->tensors.size(); d++) {
      const SG::Tensor& x = old->tensors[d];
      if (CCV_NNC_TENSOR_SYMBOL_IS_DEAD(x.flags) || (x.alias_of >= 0) != (pass == 1)) continue;
      const char* name = x.name.empty() ? nullptr : x.name.c_str();
      tmap[d] = pass == 0 ? symbolic::tensor_new(t, x.info, name).d
                          : symbolic::alias_new(t, {tmap[static_cast<size_t>(x.alias_of)], t}, x.ofs, x.stride, x.info, name).d;
      t->tensors[static_cast<size_t>(tmap[d])].flags = x.flags;
    }
  for (size_t e = 0; e < old->execs.size(); e++) {
    const SG::Exec& x = old->execs[e];
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    for (int d : x.inputs) in.push_back(d >= 0 ? ccv_nnc_tensor_symbol_t{tmap[static_cast<size_t>(d)], t} : ccv_nnc_tensor_symbol_t{d, nullptr});
    for (int d : x.outputs) out.push_back(d >= 0 ? ccv_nnc_tensor_symbol_t{tmap[static_cast<size_t>(d)], t} : ccv_nnc_tensor_symbol_t{d, nullptr});
    emap[e] = symbolic::exec_new(t, x.cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                                 x.name.empty() ? nullptr : x.name.c_str())
                  .d;
    t->execs[static_cast<size_t>(emap[e])].hint = x.hint;
    t->execs[static_cast<size_t>(emap[e])].flags = x.flags;
  }
  for (size_t e = 0; e < old->execs.size(); e++)
    if (emap[e] >= 0)
      for (int to : old->execs[e].outgoing)
        if (emap[static_cast<size_t>(to)] >= 0) symbolic::concat(t, emap[e], emap[static_cast<size_t>(to)]);
  std::vector<ccv_nnc_dynamic_graph_s::Symbol> symbols(t->tensors.size());
  for (size_t d = 0; d < old->tensors.size(); d++)
    if (tmap[d] >= 0 && d < g->symbols.size()) symbols[static_cast<size_t>(tmap[d])] = std::move(g->symbols[d]);
  for (auto& v : g->shells)
    if (v->alive && v->symbol >= 0) v->symbol = tmap[static_cast<size_t>(v->symbol)];
  g->symbols = std::move(symbols);
  // The trace object stays (its address may key state kept for it elsewhere); its tables are replaced.
  std::swap(old->tensors, t->tensors);
  std::swap(old->execs, t->execs);
  std::swap(old->sources, t->sources);
  std::swap(old->destinations, t->destinations);
  g->dropped = 0;
}

void maybe_compact(DG* g) {
  if (g->tape_live) return;  // tape entries name trace symbols: renumber only without them
  const size_t n = g->trace->tensors.size();
  if (n < 32 || g->dropped * 4 < n) return;  // counting the dead costs O(n): only now and then
  size_t dead = 0;
  for (const auto& t : g->trace->tensors) dead += CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) ? 1 : 0;
  if (dead * 2 > n) compact(g);
  else g->dropped = 0;
}

// Remove what no variable and no needed command can reach from base symbol b.
void prune(DG* g, int start) {
  // A work list and copies of an exec's symbols, on the stack for the usual small cases.
  std::vector<int> more;
  int stack[16];
  int top = 0;
  stack[top++] = start;
  auto push = [&](int b) {
    if (top < 16) stack[top++] = b;
    else more.push_back(b);
  };
  while (top > 0 || !more.empty()) {
    int b;
    if (!more.empty()) {
      b = more.back();
      more.pop_back();
    } else {
      b = stack[--top];
    }
    if (dead_symbol(g, b) || needed(g, b)) continue;
    const int w = live_writer(g, b);
    if (w < 0) {  // a leaf
      drop_symbol(g, b);
      continue;
    }
    const SG::Exec& x = g->trace->execs[static_cast<size_t>(w)];
    bool all = true;
    for (int o : x.outputs)
      if (o >= 0) all = all && !needed(g, base_of(g, o));
    if (!all) continue;  // another output is still needed
    Small<int> ins(x.inputs.size()), outs(x.outputs.size());
    const size_t n_in = x.inputs.size(), n_out = x.outputs.size();
    std::copy(x.inputs.begin(), x.inputs.end(), ins.data());
    std::copy(x.outputs.begin(), x.outputs.end(), outs.data());
    symbolic::exec_free(g->trace, {w, g->trace});
    for (size_t k = 0; k < n_out; k++)
      if (outs[k] >= 0) drop_symbol(g, base_of(g, outs[k]));
    for (size_t k = 0; k < n_in; k++)
      if (ins[k] >= 0) {
        const int bi = base_of(g, ins[k]);
        g->symbols[static_cast<size_t>(bi)].readers--;
        push(bi);
      }
  }
}

// ---- The tape ---------------------------------------------------------

// Tape value `start` is named by no variable now: its entry leaves once no
// output of it is named or read, and so on up the inputs.
void tape_prune(DG* g, int start) {
  std::vector<int> trace_inputs;
  std::vector<int> work{start};
  while (!work.empty()) {
    const int t = work.back();
    work.pop_back();
    const DG::TapeValue& tv = g->tape_values[static_cast<size_t>(t)];
    if (tv.owner || tv.readers > 0 || tv.writer < 0) continue;
    DG::TapeEntry& e = g->tape[static_cast<size_t>(tv.writer)];
    if (!e.alive) continue;
    bool all = true;
    for (int j = 0; j < e.output_size; j++)
      if (const int o = e.outputs[j]; o >= 0) all = all && !g->tape_values[static_cast<size_t>(o)].owner && g->tape_values[static_cast<size_t>(o)].readers == 0;
    if (!all) continue;
    e.alive = false;
    g->tape_live--;
    for (int j = 0; j < e.output_size; j++)
      if (const int o = e.outputs[j]; o >= 0) {
        g->tape_values[static_cast<size_t>(o)].value.reset();
        g->tape_values[static_cast<size_t>(o)].writer = -1;
      }
    for (int i = 0; i < e.input_size; i++) {
      const int r = e.inputs[i];
      if (r >= 0) {
        const int b = base_of(g, r);
        g->symbols[static_cast<size_t>(b)].readers--;
        trace_inputs.push_back(b);
      } else if (r <= -2) {
        g->tape_values[static_cast<size_t>(-2 - r)].readers--;
        work.push_back(-2 - r);
      }
    }
  }
  if (g->tape_live == 0) {
    g->tape.clear();
    g->tape_values.clear();
  }
  for (int b : trace_inputs) prune(g, b);
}

// Write the tape into the trace (in order: each entry an exec, each value a
// symbol), and empty it.
void tape_flush(DG* g) {
  if (g->tape.empty()) return;
  std::vector<int> sym(g->tape_values.size(), -1);
  for (const DG::TapeEntry& e : g->tape) {
    if (!e.alive) continue;
    ccv_nnc_tensor_symbol_t is[DG::kTapeArity], os[DG::kTapeArity];
    for (int i = 0; i < e.input_size; i++) {
      const int r = e.inputs[i];
      const int d = r >= 0 ? r : r <= -2 ? sym[static_cast<size_t>(-2 - r)] : CCV_NNC_NO_TENSOR_SYMBOL;
      is[i] = {d, d >= 0 ? g->trace : nullptr};
    }
    for (int j = 0; j < e.output_size; j++) {
      const int o = e.outputs[j];
      if (o >= 0) sym[static_cast<size_t>(o)] = symbolic::tensor_new(g->trace, g->tape_values[static_cast<size_t>(o)].value->info, nullptr).d;
      const int d = o >= 0 ? sym[static_cast<size_t>(o)] : CCV_NNC_NO_TENSOR_SYMBOL;
      os[j] = {d, d >= 0 ? g->trace : nullptr};
    }
    const int x = symbolic::exec_new(g->trace, e.cmd, is, e.input_size, os, e.output_size, nullptr).d;
    g->trace->execs[static_cast<size_t>(x)].hint = e.hint;
    sync(g);
    for (int i = 0; i < e.input_size; i++) {
      if (is[i].d < 0) continue;
      const int b = base_of(g, is[i].d);
      if (e.inputs[i] <= -2) g->symbols[static_cast<size_t>(b)].readers++;  // (a trace input was counted when taped)
      const int w = live_writer(g, b);
      if (w >= 0 && w != x) symbolic::concat(g->trace, w, x);
    }
    for (int j = 0; j < e.output_size; j++) {
      const int o = e.outputs[j];
      if (o < 0) continue;
      DG::TapeValue& tv = g->tape_values[static_cast<size_t>(o)];
      const int d = sym[static_cast<size_t>(o)];
      g->symbols[static_cast<size_t>(d)].value = tv.value;
      if (tv.owner) {
        g->symbols[static_cast<size_t>(d)].named++;
        tv.owner->symbol = d;
        tv.owner->tape = -1;
      }
    }
  }
  g->tape.clear();
  g->tape_values.clear();
  g->tape_live = 0;
}

// v stops naming its trace symbol (or tape value).
void release(DG* g, Var* v) {
  if (v->tape >= 0) {
    const int t = v->tape;
    v->tape = -1;
    g->tape_values[static_cast<size_t>(t)].owner = nullptr;
    tape_prune(g, t);
    maybe_compact(g);
    return;
  }
  if (v->symbol < 0) return;
  const int b = base_of(g, v->symbol);
  v->symbol = -1;
  g->symbols[static_cast<size_t>(b)].named--;
  prune(g, b);
  maybe_compact(g);
}

// v's trace symbol, made (as a leaf, or an alias of its base's) when it has none.
int symbol_of(DG* g, Var* v) {
  if (v->tape >= 0 || (v->alias_of && !v->orphan && v->alias_of->tape >= 0)) tape_flush(g);
  if (v->symbol >= 0) return v->symbol;
  int s;
  if (v->alias_of && !v->orphan) {
    const int b = symbol_of(g, v->alias_of);
    s = symbolic::alias_new(g->trace, {b, g->trace}, v->ofs, v->stride, v->info, nullptr).d;
  } else {
    ccv_nnc_tensor_param_t info = v->alias_of ? storage_of(v)->info : v->info;
    s = symbolic::tensor_new(g->trace, info, nullptr).d;
    if (v->alias_of) {  // a freed base's storage, held by the alias: a leaf aliased like before
      const int b = s;
      sync(g);
      g->symbols[static_cast<size_t>(b)].value = storage_of(v);
      s = symbolic::alias_new(g->trace, {b, g->trace}, v->ofs, v->stride, v->info, nullptr).d;
    }
  }
  sync(g);
  const int b = base_of(g, s);
  if (!g->symbols[static_cast<size_t>(b)].value) g->symbols[static_cast<size_t>(b)].value = storage_of(v);
  g->symbols[static_cast<size_t>(b)].named++;
  v->symbol = s;
  return s;
}

Var* new_variable(DG* g, const ccv_nnc_tensor_param_t& info, bool constant, const char* what) {
  check_graph(g, what);
  if (nd_of(info.dim) > 0) validate_params(info, what);
  Var* v;
  if (!g->free_shells.empty()) {
    v = g->free_shells.back();
    g->free_shells.pop_back();
    *v = Var();
  } else {
    g->shells.push_back(std::make_unique<Var>());
    v = g->shells.back().get();
  }
  v->graph = g;
  v->alive = true;
  live_add(CCV_NNC_LIVE_TENSOR_VARIABLE, 1);
  v->info = info;
  v->constant = constant;
  return v;
}

// Aliases of v that are alive.
// A base's live aliases (a copy: callers may free them while walking).
std::vector<Var*> aliases_of(DG*, Var* v) { return v->aliases; }

void destroy(DG* g, Var* v) {
  if (v->alias_of && !v->orphan) {
    auto& list = v->alias_of->aliases;
    list.erase(std::remove(list.begin(), list.end(), v), list.end());
  }
  for (const auto& d : v->destructors) d.first(g, tensor_of(v), d.second);
  v->destructors.clear();
  release(g, v);
  // Aliases keep viewing this storage.
  if (!v->alias_of) {
    for (Var* a : v->aliases) {
      a->value = v->value;
      a->orphan = true;
    }
    v->aliases.clear();
  }
  // A value a run made and this variable held: the recording computes it again if a backward needs it.
  if (!v->alias_of && v->pending && !v->pending->keep) v->pending->storage.reset();
  v->pending.reset();
  v->value.reset();
  v->view.reset();
  v->alive = false;
  live_add(CCV_NNC_LIVE_TENSOR_VARIABLE, -1);
  g->free_shells.push_back(v);
}

// ---- Memoisation -----------------------------------------------------------

bool memoizable(const ccv_nnc_cmd_t& cmd) {
  const uint32_t c = cmd.cmd;
  return !cmd.isa && c != CCV_NNC_CUSTOM_FORWARD && c != CCV_NNC_CUSTOM_BACKWARD && c != CCV_NNC_RANDOM_UNIFORM_FORWARD &&
         c != CCV_NNC_RANDOM_NORMAL_FORWARD && c != CCV_NNC_DROPOUT_FORWARD && c != CCV_NNC_DROPOUT_BACKWARD && c != CCV_NNC_NOOP;
}

// The key of a call, or false when it cannot be memoised (a view among the inputs).
bool memo_key(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, ccv_nnc_tensor_t* const* in, int input_size,
              const ccv_nnc_tensor_param_t* out_params, int output_size, DG::MemoKey* key) {
  XXH3_state_t* st = XXH3_createState();
  if (!st) return false;
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, &cmd.cmd, sizeof(cmd.cmd));
  XXH3_128bits_update(st, &cmd.backend, sizeof(cmd.backend));
  XXH3_128bits_update(st, &cmd.algorithm, sizeof(cmd.algorithm));
  XXH3_128bits_update(st, &cmd.info, sizeof(cmd.info));
  XXH3_128bits_update(st, &hint, sizeof(hint));
  XXH3_128bits_update(st, &flags, sizeof(flags));
  XXH3_128bits_update(st, &input_size, sizeof(input_size));
  bool ok = true;
  for (int i = 0; i < input_size && ok; i++) {
    const ccv_nnc_tensor_t* t = in[i];
    const int present = t ? 1 : 0;
    XXH3_128bits_update(st, &present, sizeof(present));
    if (!t) continue;
    if (CCV_IS_TENSOR_VIEW(t) || CCV_IS_TENSOR_MULTIVIEW(t)) {
      ok = false;
      break;
    }
    XXH3_128bits_update(st, &t->info, sizeof(t->info));
    XXH3_128bits_update(st, t->data.u8, ccv_nnc_tensor_data_size(t->info));
  }
  XXH3_128bits_update(st, &output_size, sizeof(output_size));
  for (int j = 0; j < output_size; j++) XXH3_128bits_update(st, &out_params[j], sizeof(out_params[j]));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  key->low = h.low64;
  key->high = h.high64;
  return ok;
}

void memo_evict(DG* g) {
  while (g->memo_bytes > g->memo_limit && !g->memo_ages.empty()) {
    const DG::MemoKey k = g->memo_ages.back();
    g->memo_ages.pop_back();
    auto it = g->memo.find(k);
    if (it == g->memo.end()) continue;
    g->memo_bytes -= it->second.bytes;
    for (const auto& o : it->second.outputs)
      if (o) g->memo_held.erase(o.get());
    g->memo.erase(it);
  }
}

void memo_clear(DG* g) {
  g->memo.clear();
  g->memo_ages.clear();
  g->memo_held.clear();
  g->memo_bytes = 0;
}

// A variable about to be handed to the caller: storage the cache holds is
// copied first, so the caller's writes cannot reach the cache.
void memo_unshare(DG* g, Var* v, const char* what) {
  Var* base = v->alias_of && !v->orphan ? v->alias_of : v;
  if (!base->value || !g->memo_held.count(base->value.get())) return;
  auto copy = new_storage(g, base->value->info, what);
  copy_tensor(base->value.get(), copy.get(), what);  // (DATA_TRANSFER: it may be on a GPU)
  // The trace keeps the cached storage (the same bytes); the variable goes on with its copy.
  base->value = copy;
}

// ---- Streams -------------------------------------------------------------

struct Retire {
  DG* g;
  std::vector<std::shared_ptr<ccv_nnc_tensor_t>>* held;
};

void retire_callback(void* context) {
  auto* r = static_cast<Retire*>(context);
  {
    const std::lock_guard<std::mutex> lock(r->g->retired_mutex);
    r->g->retired.push_back(r->held);
    r->g->any_retired.store(true, std::memory_order_release);
  }
  delete r;
}

// Drop the references of calls the streams have run (on the graph's thread).
void drain_retired(DG* g) {
  if (!g->any_retired.load(std::memory_order_acquire)) return;
  std::vector<std::vector<std::shared_ptr<ccv_nnc_tensor_t>>*> done;
  {
    const std::lock_guard<std::mutex> lock(g->retired_mutex);
    done.swap(g->retired);
    g->any_retired.store(false, std::memory_order_relaxed);
  }
  for (auto* h : done) delete h;
}

// ---- Deferred mode -----------------------------------------------------

struct Compiled {
  ccv_nnc_graph_t* graph = nullptr;
  ccv_nnc_tensor_arena_t* tensors = nullptr;
  ccv_nnc_graph_exec_arena_t* execs = nullptr;
  ~Compiled() {
    ccv_nnc_graph_free(graph);
    ccv_nnc_tensor_arena_free(tensors);
    ccv_nnc_graph_exec_arena_free(execs);
  }
};

using SymbolicPtr = std::unique_ptr<ccv_nnc_symbolic_graph_t, void (*)(ccv_nnc_symbolic_graph_t*)>;

// The recording as a symbolic graph: a symbol per value (existing storage or
// pending value), an exec per recorded call, edges from the data.
struct Built {
  SymbolicPtr sg{nullptr, ccv_nnc_symbolic_graph_free};
  std::unordered_map<const ccv_nnc_tensor_t*, int> storage_symbols;
  std::vector<std::pair<std::shared_ptr<ccv_nnc_tensor_t>, int>> storages;  // in first-use order
  std::unordered_map<const ccv_nnc_deferred_value_s*, int> pending_symbols;
  std::vector<std::pair<std::shared_ptr<ccv_nnc_tensor_t>, int>> roots;  // updates written in place
  std::vector<std::pair<int, int>> backward_execs;                        // [begin, end) of each recorded backward's execs
};

// A recorded backward: the symbolic autodiff over the calls recorded before
// it, planned with them. Seeds are the caller's values or ones; the gradients
// become the values the record promised.
template <class SourceSymbol>
void add_backward(ccv_nnc_symbolic_graph_t* sg, const DG::Record& r, SourceSymbol& source_symbol, Built& b, const char* what) {
  std::vector<ccv_nnc_tensor_symbol_t> f, wrt;
  for (size_t i = 0; i < r.inputs.size(); i++) (static_cast<int>(i) < r.f_size ? f : wrt).push_back(source_symbol(r.inputs[i]));
  symbolic::autogen(sg, {}, false);  // the forward's order, which the autodiff walks
  const int begin = static_cast<int>(sg->execs.size());
  ccv_nnc_symbolic_graph_backward(sg, f.data(), static_cast<int>(f.size()), wrt.data(), static_cast<int>(wrt.size()), nullptr, 0, nullptr, 0);
  NNC_CHECK(std::string(ccv_nnc_error_message()).empty(), "%s: differentiating the recording: %s", what, ccv_nnc_error_message());
  b.backward_execs.emplace_back(begin, static_cast<int>(sg->execs.size()));
  const ccv_nnc_cmd_t copy = ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  for (size_t i = 0; i < f.size(); i++) {
    const ccv_nnc_tensor_symbol_t seed = ccv_nnc_tensor_symbol_for_backward(sg, f[i]);
    if (seed.d < 0) continue;
    int& flags = sg->tensors[static_cast<size_t>(seed.d)].flags;
    flags &= ~(CCV_NNC_TENSOR_SYMBOL_INIT_ONES | CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    const DG::Source& df = r.df[i];
    if (!df.storage && !df.pending) {
      flags |= CCV_NNC_TENSOR_SYMBOL_INIT_ONES;
      continue;
    }
    const ccv_nnc_tensor_symbol_t from = source_symbol(df);
    symbolic::exec_new(sg, copy, &from, 1, &seed, 1, nullptr);
  }
  for (size_t j = 0; j < r.outputs.size(); j++) {
    if (!r.outputs[j]) continue;
    ccv_nnc_tensor_symbol_t gs = ccv_nnc_tensor_symbol_for_backward(sg, wrt[j]);
    NNC_CHECK(gs.d >= 0, "%s: no gradient reaches input %d of a recorded backward", what, static_cast<int>(j));
    if (sg->tensors[static_cast<size_t>(gs.d)].alias_of >= 0) {  // a value of its own, for the variable to hold
      const ccv_nnc_tensor_symbol_t own = symbolic::tensor_new(sg, sg->tensors[static_cast<size_t>(gs.d)].info, nullptr);
      symbolic::exec_new(sg, copy, &gs, 1, &own, 1, nullptr);
      gs = own;
    }
    b.pending_symbols[r.outputs[j].get()] = gs.d;
  }
}

Built build_recording(DG* g, const char* what) {
  Built b;
  b.sg.reset(ccv_nnc_symbolic_graph_new());
  ccv_nnc_symbolic_graph_t* sg = b.sg.get();
  std::unordered_map<std::string, int> alias_symbols;
  std::vector<int> done_execs;
  std::vector<std::pair<int, int>> updates;  // (update exec, the symbol of the value it overwrites)
  auto source_symbol = [&](const DG::Source& src) -> ccv_nnc_tensor_symbol_t {
    int base;
    auto pit = src.pending ? b.pending_symbols.find(src.pending.get()) : b.pending_symbols.end();
    if (pit != b.pending_symbols.end()) {
      base = pit->second;
    } else {
      // A value made by a run before (its call no longer recorded): its storage.
      const std::shared_ptr<ccv_nnc_tensor_t>& storage = src.pending ? src.pending->storage : src.storage;
      NNC_CHECK(storage, "%s: a recorded call reads a value no earlier recorded call makes", what);
      auto it = b.storage_symbols.find(storage.get());
      if (it == b.storage_symbols.end()) {
        base = symbolic::tensor_new(sg, storage->info, nullptr).d;
        b.storage_symbols.emplace(storage.get(), base);
        b.storages.emplace_back(storage, base);
      } else {
        base = it->second;
      }
    }
    if (!src.alias) return {base, sg};
    // One symbol per view, so a backward differentiates against the symbol the calls read.
    std::string key(reinterpret_cast<const char*>(&base), sizeof(base));
    key.append(reinterpret_cast<const char*>(src.ofs), sizeof(src.ofs));
    key.append(reinterpret_cast<const char*>(src.stride), sizeof(src.stride));
    key.append(reinterpret_cast<const char*>(src.info.dim), sizeof(src.info.dim));
    auto it = alias_symbols.find(key);
    if (it != alias_symbols.end()) return {it->second, sg};
    const ccv_nnc_tensor_symbol_t a = symbolic::alias_new(sg, {base, sg}, src.ofs, src.stride, src.info, nullptr);
    alias_symbols.emplace(std::move(key), a.d);
    return a;
  };
  for (const DG::Record& r : g->records) {
    if (r.backward) {
      add_backward(sg, r, source_symbol, b, what);
      continue;
    }
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    for (const DG::Source& src : r.inputs)
      in.push_back(src.storage || src.pending ? source_symbol(src) : ccv_nnc_tensor_symbol_t{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
    for (size_t j = 0; j < r.outputs.size(); j++) {
      const auto& o = r.outputs[j];
      if (!o && j < r.views.size() && r.views[j].alias) {
        const DG::Source& view = r.views[j];
        if (!b.pending_symbols.count(view.pending.get())) {  // its first part: the value, zeros where no part is written
          const int s = symbolic::tensor_new(sg, view.pending->info, nullptr).d;
          sg->tensors[static_cast<size_t>(s)].flags |= CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS;
          b.pending_symbols[view.pending.get()] = s;
        }
        out.push_back(source_symbol(view));
        continue;
      }
      if (!o) {
        out.push_back({CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
        continue;
      }
      const ccv_nnc_tensor_symbol_t s = symbolic::tensor_new(sg, o->info, nullptr);
      b.pending_symbols[o.get()] = s.d;
      if (o->storage) {  // made by a run before and kept: bound to its storage
        b.storage_symbols[o->storage.get()] = s.d;
        b.storages.emplace_back(o->storage, s.d);
      } else if (o->root) {
        b.roots.emplace_back(o->root, s.d);
      }
      out.push_back(s);
    }
    const int e = symbolic::exec_new(sg, r.cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr).d;
    sg->execs[static_cast<size_t>(e)].hint = r.hint;
    bool kept = r.done;
    for (const auto& o : r.outputs) kept = kept && (!o || o->storage);
    if (kept) done_execs.push_back(e);
    if (r.update)
      for (size_t j = 0; j < r.outputs.size(); j++)
        if (r.outputs[j] && r.outputs[j]->root && j + 1 < in.size() && in[j + 1].d >= 0) updates.emplace_back(e, in[j + 1].d);
  }
  // Calls run before whose values are all kept: there for the autodiff only, not to run again.
  for (int e : done_execs) symbolic::exec_free(sg, {e, sg});
  // An update in place comes after every read of the value it overwrites
  // (the forward's and the backward's).
  for (const auto& [e, old] : updates) {
    const int ob = symbolic::base_of(sg, old);
    for (size_t x = 0; x < sg->execs.size(); x++) {
      if (static_cast<int>(x) == e || CCV_NNC_GRAPH_EXEC_IS_DEAD(sg->execs[x].flags)) continue;
      bool reads = false;
      for (int d : sg->execs[x].inputs) reads = reads || (d >= 0 && symbolic::base_of(sg, d) == ob);
      if (reads) symbolic::concat(sg, static_cast<int>(x), e);
    }
  }
  // An update runs as soon as its gradient is made, before the backward goes
  // on to the next command: each gradient is freed at once instead of all of
  // them being held until the backward ends (the first exec after the
  // gradient's maker that does not lead to the update).
  symbolic::autogen(sg, {}, false);
  std::vector<int> update_execs;
  for (const auto& u : updates)
    if (std::find(update_execs.begin(), update_execs.end(), u.first) == update_execs.end()) update_execs.push_back(u.first);
  for (int e : update_execs) {
    const int gi = sg->execs[static_cast<size_t>(e)].inputs.empty() ? -1 : sg->execs[static_cast<size_t>(e)].inputs[0];
    if (gi < 0) continue;
    int w = -1;
    for (int x : sg->tensors[static_cast<size_t>(symbolic::base_of(sg, gi))].writers)
      if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(sg->execs[static_cast<size_t>(x)].flags)) w = x;
    for (const auto& [begin, end] : b.backward_execs) {
      if (w < begin || w >= end) continue;
      for (int n = w + 1; n < end; n++) {
        if (n == e || CCV_NNC_GRAPH_EXEC_IS_DEAD(sg->execs[static_cast<size_t>(n)].flags)) continue;
        try {
          symbolic::concat(sg, e, n);
          break;
        } catch (...) {  // n leads to the update: try the next
        }
      }
    }
  }
  symbolic::autogen(sg, {}, true);
  return b;
}

// Run the recording: what live variables will hold gets storage and is kept;
// the rest lives in the compiled arena for the run only.
// Drop the recording (the variables keep the values they hold).
void forget_recording(DG* g) {
  g->records.clear();
  for (auto& v : g->shells)
    if (v->alive) v->pending.reset();
}

// After a run: the calls a backward may still differentiate (traced ones a
// live variable reaches) stay recorded, marked as run; the rest go.
void keep_traced(DG* g) {
  std::unordered_map<const ccv_nnc_deferred_value_s*, size_t> maker;
  for (size_t i = 0; i < g->records.size(); i++)
    for (const auto& o : g->records[i].outputs)
      if (o) maker[o.get()] = i;
  std::vector<char> keep(g->records.size(), 0);
  std::vector<size_t> work;
  for (auto& v : g->shells)
    if (v->alive && v->pending && v->pending->traced) {
      auto it = maker.find(v->pending.get());
      if (it != maker.end()) work.push_back(it->second);
    }
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (keep[i]) continue;
    keep[i] = 1;
    for (const DG::Source& src : g->records[i].inputs)
      if (src.pending && src.pending->traced) {
        auto it = maker.find(src.pending.get());
        if (it != maker.end()) work.push_back(it->second);
      }
  }
  std::vector<DG::Record> kept;
  for (size_t i = 0; i < g->records.size(); i++) {
    bool traced = false;
    for (const auto& o : g->records[i].outputs) traced = traced || (o && o->traced);
    if (keep[i] && traced && !g->records[i].backward) {
      g->records[i].done = true;
      kept.push_back(std::move(g->records[i]));
    }
  }
  g->records = std::move(kept);
}

bool any_pending(DG* g) {
  for (const DG::Record& r : g->records)
    if (!r.done) return true;
  return false;
}

void flush(DG* g) {
  static const char* what = "ccv_nnc_dynamic_graph_flush";
  if (!any_pending(g)) return;
  // Whatever happens, the recording is consumed: kept for a later backward
  // after a run, dropped after a failure.
  struct Consume {
    DG* g;
    bool ran = false;
    ~Consume() {
      if (!ran) forget_recording(g);
      else keep_traced(g);
    }
  } consume{g};
  Built b = build_recording(g, what);
  ccv_nnc_symbolic_graph_t* sg = b.sg.get();
  std::vector<ccv_nnc_tensor_symbol_t> wanted, binds_symbols;
  std::vector<Var*> holders;
  for (auto& v : g->shells)
    if (v->alive && v->pending && !v->pending->storage) {
      auto it = b.pending_symbols.find(v->pending.get());
      if (it == b.pending_symbols.end()) continue;
      bool seen = false;
      for (const auto& w : wanted) seen = seen || w.d == it->second;
      if (!seen) wanted.push_back({it->second, sg});
      holders.push_back(v.get());
    }
  // Values computing again would change (random draws): kept, for a backward recorded later.
  std::vector<std::pair<ccv_nnc_deferred_value_s*, int>> kept_values;
  for (const DG::Record& r : g->records)
    if (!r.done)
      for (const auto& o : r.outputs)
        if (o && o->keep && !o->storage) {
          auto it = b.pending_symbols.find(o.get());
          if (it == b.pending_symbols.end()) continue;
          kept_values.emplace_back(o.get(), it->second);
          bool seen = false;
          for (const auto& w : wanted) seen = seen || w.d == it->second;
          if (!seen) wanted.push_back({it->second, sg});
        }
  for (const auto& st : b.storages) binds_symbols.push_back({st.second, sg});
  const int passes[] = {CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION, CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
  ccv_nnc_symbolic_graph_simplify(sg, passes, 2, binds_symbols.data(), static_cast<int>(binds_symbols.size()), wanted.data(),
                                  static_cast<int>(wanted.size()), nullptr, 0, nullptr, 0);
  NNC_CHECK(std::string(ccv_nnc_error_message()).empty(), "%s: simplifying the recording: %s", what, ccv_nnc_error_message());
  if (wanted.empty()) {  // nothing anyone can read
    consume.ran = true;
    return;
  }
  std::vector<ccv_nnc_tensor_bind_t> binds;
  for (const auto& st : b.storages)
    if (!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(sg->tensors[static_cast<size_t>(st.second)].flags)) binds.push_back({{st.second, sg}, st.first.get()});
  std::unordered_map<int, std::shared_ptr<ccv_nnc_tensor_t>> made;
  for (const auto& rt : b.roots)
    if (!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(sg->tensors[static_cast<size_t>(rt.second)].flags)) {
      made[rt.second] = rt.first;
      binds.push_back({{rt.second, sg}, rt.first.get()});
    }
  for (const auto& w : wanted) {
    if (made.count(w.d)) continue;  // updated in place
    made[w.d] = new_storage(g, sg->tensors[static_cast<size_t>(w.d)].info, what);
    binds.push_back({w, made[w.d].get()});
  }
  Compiled c;
  ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds.data(), static_cast<int>(binds.size()), wanted.data(),
                                 static_cast<int>(wanted.size()), nullptr, 0, nullptr, 0, &c.graph, &c.tensors, &c.execs);
  NNC_CHECK(c.graph, "%s: compiling the recording: %s", what, ccv_nnc_error_message());
  const uint64_t arena = ccv_nnc_tensor_arena_size(c.tensors);
  g->in_use += arena;
  g->peak = std::max(g->peak, g->in_use);
  const int rc = ccv_nnc_graph_run(c.graph, 0, nullptr, 0, nullptr, 0, nullptr, nullptr);
  g->in_use -= arena;
  NNC_CHECK(rc == CCV_NNC_EXEC_SUCCESS, "%s: running the recording: %s", what, ccv_nnc_error_message());
  for (Var* v : holders) {
    const int d = b.pending_symbols[v->pending.get()];
    v->value = made[d];
    v->info = v->value->info;
    // Calls recorded before (kept for a later backward) read it through this storage.
    v->pending->storage = v->value;
    if (!v->pending->traced) v->pending.reset();  // not differentiated again: a leaf from here
  }
  for (const auto& [value, d] : kept_values) value->storage = made[d];
  consume.ran = true;
}

// Inputs of a call in the deferred mode: values as they are now, or values
// earlier recorded calls will make.
DG::Source source_of(DG*, Var* v, int i, const char* what) {
  DG::Source src;
  Var* base = v->alias_of && !v->orphan ? v->alias_of : v;
  if (base->pending) {
    src.pending = base->pending;
  } else {
    src.storage = storage_of(v);
    if (!src.storage) fail(CCV_NNC_EXEC_INVALID, "%s: input %d has no value yet (set it, or read it with ccv_nnc_tensor_from_variable)", what, i);
  }
  src.info = v->info;
  if (v->alias_of) {
    src.alias = true;
    std::memcpy(src.ofs, v->ofs, sizeof(src.ofs));
    std::memcpy(src.stride, v->stride, sizeof(src.stride));
  } else if (src.storage) {
    src.info = src.storage->info;
  } else {
    src.info = base->pending->info;
  }
  return src;
}

// v will hold a value a recorded call makes.
void assign_pending(DG* g, Var* v, const std::shared_ptr<ccv_nnc_deferred_value_s>& value) {
  release(g, v);
  for (Var* a : aliases_of(g, v)) release(g, a);
  v->value.reset();
  v->pending = value;
  v->info = value->info;
}

int record(DG* g, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, const ccv_nnc_tensor_variable_t* inputs, int input_size,
           ccv_nnc_tensor_variable_t* outputs, int output_size, bool traced = true) {
  static const char* what = "ccv_nnc_dynamic_graph_exec";
  DG::Record r;
  r.cmd = cmd;
  r.hint = hint;
  r.flags = flags;
  std::vector<ccv_nnc_tensor_param_t> in_params(static_cast<size_t>(input_size)), out_params(static_cast<size_t>(output_size));
  bool differentiable = false;
  for (int i = 0; i < input_size; i++) {
    if (!inputs[i]) {
      r.inputs.emplace_back();
      continue;
    }
    Var* v = check_var(g, inputs[i], what, "input", i);
    r.inputs.push_back(source_of(g, v, i, what));
    in_params[static_cast<size_t>(i)] = r.inputs.back().info;
    differentiable = differentiable || !v->constant;
  }
  ccv_nnc_hint_tensor_auto(cmd, in_params.data(), input_size, hint, out_params.data(), output_size);
  // Writes into aliases. The recording is a symbolic graph, where a value has
  // one writer, or several writing disjoint parts through aliases: so a
  // variable is written through its aliases only while it holds no value
  // (a concatenation written in place); its parts not written are zeros, as
  // in immediate mode. Not traced, as in immediate mode.
  std::vector<std::pair<Var*, std::shared_ptr<ccv_nnc_deferred_value_s>>> rebased;
  r.views.resize(static_cast<size_t>(output_size));
  for (int j = 0; j < output_size; j++) {
    Var* v = outputs[j];
    if (!v || !v->alias_of) continue;
    check_var(g, v, what, "output", j);
    NNC_CHECK(!v->constant, "%s: output %d is a constant; constants are never written", what, j);
    NNC_CHECK(g->no_grad || !differentiable || !traced,
              "%s: output %d is an alias; writing into part of a variable is not traced (do it between set_no_grad(1) and (0))", what, j);
    NNC_CHECK(!v->orphan, "%s: output %d is an alias of a freed variable", what, j);
    Var* base = v->alias_of;
    for (int k = 0; k < j; k++) NNC_CHECK(outputs[k] != v, "%s: outputs %d and %d are the same variable", what, k, j);
    std::shared_ptr<ccv_nnc_deferred_value_s> next;
    for (const auto& rb : rebased)
      if (rb.first == base) next = rb.second;
    if (!next && base->pending && base->pending->parts && !base->pending->storage) next = base->pending;  // another part
    if (!next) {
      NNC_CHECK(!base->pending && !base->value,
                "%s: output %d is an alias of a variable that holds a value; in the deferred mode a variable is written through its "
                "aliases only while it has no value yet (its parts, like a concatenation, before it is read)",
                what, j);
      next = std::make_shared<ccv_nnc_deferred_value_s>();
      next->info = base->info;
      next->traced = false;
      next->parts = true;
      rebased.emplace_back(base, next);
    }
    DG::Source& view = r.views[static_cast<size_t>(j)];
    view.pending = next;
    view.alias = true;
    view.info = v->info;
    std::memcpy(view.ofs, v->ofs, sizeof(view.ofs));
    std::memcpy(view.stride, v->stride, sizeof(view.stride));
  }
  for (int j = 0; j < output_size; j++) {
    Var* v = outputs[j];
    if (!v || v->alias_of) {
      r.outputs.emplace_back();
      continue;
    }
    check_var(g, v, what, "output", j);
    NNC_CHECK(!v->constant, "%s: output %d is a constant; constants are never written", what, j);
    for (const auto& rb : rebased)
      NNC_CHECK(rb.first != v, "%s: output %d is written whole and through an alias in the same call", what, j);
    ccv_nnc_tensor_param_t p = nd_of(v->info.dim) > 0 ? v->info : out_params[static_cast<size_t>(j)];
    NNC_CHECK(nd_of(p.dim) > 0, "%s: cannot infer the shape of output %d from the inputs; give the variable one", what, j);
    for (int k = 0; k < j; k++) NNC_CHECK(outputs[k] != v, "%s: outputs %d and %d are the same variable", what, k, j);
    auto value = std::make_shared<ccv_nnc_deferred_value_s>();
    value->info = p;
    value->traced = traced && !g->no_grad && differentiable;
    value->keep = value->traced && !memoizable(cmd) && cmd.cmd != CCV_NNC_NOOP;
    r.outputs.push_back(value);
  }
  for (int j = 0; j < output_size; j++)
    if (outputs[j] && !outputs[j]->alias_of) assign_pending(g, outputs[j], r.outputs[static_cast<size_t>(j)]);
  for (auto& [base, next] : rebased) assign_pending(g, base, next);
  g->records.push_back(std::move(r));
  return CCV_NNC_EXEC_SUCCESS;
}

// A backward in the deferred mode: recorded, to be differentiated and planned
// with the calls before it when the recording runs.
void record_backward(DG* g, const ccv_nnc_tensor_variable_t* f_variables, int f_size, const ccv_nnc_tensor_variable_t* df,
                     const ccv_nnc_tensor_variable_t* inputs, int input_size, ccv_nnc_tensor_variable_t* outputs, const char* what) {
  DG::Record r;
  r.backward = true;
  r.f_size = f_size;
  for (int i = 0; i < f_size; i++) {
    Var* v = check_var(g, f_variables[i], what, "f variable", i);
    NNC_CHECK(!v->alias_of && v->pending,
              "%s: f variable %d was not computed by a call recorded in the deferred mode (record the forward in the deferred mode too)", what, i);
    r.inputs.push_back(source_of(g, v, i, what));
    DG::Source seed;
    if (df && df[i]) {
      Var* d = check_var(g, df[i], what, "df_optionals", i);
      seed = source_of(g, d, i, what);
      NNC_CHECK(same_shape(seed.info, v->pending->info), "%s: df_optionals[%d] is %s but f is %s", what, i, shape_string(seed.info.dim).c_str(),
                shape_string(v->pending->info.dim).c_str());
    }
    r.df.push_back(seed);
  }
  // Each input must lead to an f through the recorded calls (checked now, as
  // immediate mode does): one sweep back from the f values marks what they
  // depend on. A value is known by its recorded maker, or by its storage once
  // a run made it.
  auto storage_key = [](const DG::Source& x) -> const void* { return x.pending ? x.pending->storage.get() : x.storage.get(); };
  std::unordered_set<const void*> needed;
  for (int i = 0; i < f_size; i++) needed.insert(r.inputs[static_cast<size_t>(i)].pending.get());
  for (auto it = g->records.rbegin(); it != g->records.rend(); ++it) {
    if (it->backward) continue;
    bool feeds = false;
    for (const auto& o : it->outputs) feeds = feeds || (o && needed.count(o.get()) > 0);
    if (!feeds) continue;
    for (const DG::Source& in : it->inputs) {
      if (in.pending) needed.insert(in.pending.get());
      if (const void* k = storage_key(in)) needed.insert(k);
    }
  }
  for (int i = 0; i < input_size; i++) {
    Var* v = check_var(g, inputs[i], what, "input", i);
    NNC_CHECK(!v->constant, "%s: input %d is a constant; constants have no gradient", what, i);
    r.inputs.push_back(source_of(g, v, i, what));
    const DG::Source& src = r.inputs.back();
    const void* k = storage_key(src);
    NNC_CHECK((src.pending && needed.count(src.pending.get())) || (k && needed.count(k)),
              "%s: input %d has no path to the f variables (no recorded call leads from it to an f)", what, i);
  }
  std::vector<std::pair<Var*, std::shared_ptr<ccv_nnc_deferred_value_s>>> assign;
  std::vector<DG::Record> sums;  // gradients added to what the outputs hold
  for (int i = 0; i < input_size; i++) {
    Var* o = outputs[i];
    if (!o) {
      r.outputs.emplace_back();
      continue;
    }
    check_var(g, o, what, "output", i);
    NNC_CHECK(!o->constant, "%s: output %d is a constant; constants are never written", what, i);
    NNC_CHECK(!o->alias_of, "%s: output %d is an alias; gradients into part of a variable are not supported in the deferred mode", what, i);
    for (int k = 0; k < i; k++) NNC_CHECK(outputs[k] != o, "%s: outputs %d and %d are the same variable", what, k, i);
    auto grad = std::make_shared<ccv_nnc_deferred_value_s>();
    grad->info = r.inputs[static_cast<size_t>(f_size + i)].info;
    grad->traced = false;  // gradients are not differentiated again (as in immediate mode)
    r.outputs.push_back(grad);
    const bool holds = o->pending || o->value;
    const ccv_nnc_tensor_param_t held = o->pending ? o->pending->info : o->value ? o->value->info : ccv_nnc_tensor_param_t{};
    if (holds && same_shape(held, grad->info)) {  // accumulate, as immediate mode does
      DG::Record sum;
      sum.cmd = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
      sum.hint = ccv_nnc_no_hint;
      sum.inputs.push_back(source_of(g, o, 0, what));
      DG::Source gsrc;
      gsrc.pending = grad;
      gsrc.info = grad->info;
      sum.inputs.push_back(gsrc);
      auto total = std::make_shared<ccv_nnc_deferred_value_s>();
      total->info = held;
      total->traced = false;
      sum.outputs.push_back(total);
      sums.push_back(std::move(sum));
      assign.emplace_back(o, total);
    } else {
      assign.emplace_back(o, grad);
    }
  }
  g->records.push_back(std::move(r));
  for (auto& s : sums) g->records.push_back(std::move(s));
  for (auto& [o, value] : assign) assign_pending(g, o, value);
}

}  // namespace

ccv_nnc_dynamic_graph_s::~ccv_nnc_dynamic_graph_s() {
  for (auto& s : shells)
    if (s->alive) {
      for (const auto& d : s->destructors) d.first(this, tensor_of(s.get()), d.second);
      nnc::live_add(CCV_NNC_LIVE_TENSOR_VARIABLE, -1);
    }
  dying = true;  // storage released from here on is freed, not pooled
  drain_retired(this);
  tape.clear();
  tape_values.clear();
  records.clear();
  memo.clear();
  memo_held.clear();
  symbols.clear();
  shells.clear();
  for (ccv_nnc_tensor_t* t : pool) ccv_nnc_tensor_free(t);
  delete trace;
}

// ---- Exported ---------------------------------------------------------------

NNC_API ccv_nnc_dynamic_graph_t* ccv_nnc_dynamic_graph_new(void) {
  return guard<ccv_nnc_dynamic_graph_t*>(nullptr, [] {
    auto g = std::make_unique<ccv_nnc_dynamic_graph_s>();
    g->trace = new ccv_nnc_symbolic_graph_s();
    return g.release();
  });
}

NNC_API void ccv_nnc_dynamic_graph_free(ccv_nnc_dynamic_graph_t* const graph) { delete graph; }

NNC_API ccv_nnc_tensor_variable_t ccv_nnc_tensor_variable_new_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_param_t info) {
  return guard<ccv_nnc_tensor_variable_t>(nullptr, [&] { return new_variable(graph, info, false, "ccv_nnc_tensor_variable_new"); });
}

NNC_API ccv_nnc_tensor_variable_t ccv_nnc_tensor_constant_new_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_param_t info) {
  return guard<ccv_nnc_tensor_variable_t>(nullptr, [&] { return new_variable(graph, info, true, "ccv_nnc_tensor_constant_new"); });
}

NNC_API ccv_nnc_tensor_variable_t ccv_nnc_tensor_variable_alias_new(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable,
                                                                    const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC],
                                                                    const ccv_nnc_tensor_param_t info) {
  return guard<ccv_nnc_tensor_variable_t>(nullptr, [&]() -> ccv_nnc_tensor_variable_t {
    static const char* what = "ccv_nnc_tensor_variable_alias_new";
    Var* base = check_var(graph, tensor_variable, what, "the variable");
    NNC_CHECK(!base->alias_of, "%s: the variable is itself an alias; alias its base", what);
    NNC_CHECK(nd_of(base->info.dim) > 0, "%s: the variable has no shape yet", what);
    validate_params(info, what);
    NNC_CHECK(CCV_GET_DATA_TYPE(info.datatype) == CCV_GET_DATA_TYPE(base->info.datatype), "%s: the alias is %s but the variable is %s", what,
              datatype_name(info.datatype), datatype_name(base->info.datatype));
    // Inside the base.
    const int n = nd_of(info.dim);
    int64_t st[CCV_NNC_MAX_DIM_ALLOC], packed[CCV_NNC_MAX_DIM_ALLOC];
    bool given = false;
    for (int i = 0; i < n; i++) {
      NNC_CHECK((!ofs || ofs[i] >= 0) && (!stride || stride[i] >= 0), "%s: ofs and stride must not be negative (dimension %d)", what, i);
      given = given || (stride && stride[i] != 0);
    }
    packed_strides(info.dim, n, packed);
    int64_t reach = 0;
    for (int i = 0; i < n; i++) {
      st[i] = given ? stride[i] : packed[i];
      reach += (static_cast<int64_t>(ofs ? ofs[i] : 0) + info.dim[i] - 1) * st[i];
    }
    int64_t count = 1;
    for (int i = 0; i < nd_of(base->info.dim); i++) count *= base->info.dim[i];
    NNC_CHECK(reach < count, "%s: a %s alias reaches element %lld, outside the variable (%s, %lld elements)", what,
              shape_string(info.dim).c_str(), static_cast<long long>(reach), shape_string(base->info.dim).c_str(), static_cast<long long>(count));
    Var* v = new_variable(graph, info, base->constant, what);
    v->alias_of = base;
    base->aliases.push_back(v);
    for (int i = 0; i < n; i++) {
      v->ofs[i] = ofs ? ofs[i] : 0;
      v->stride[i] = stride ? stride[i] : 0;
    }
    return v;
  });
}

NNC_API ccv_nnc_tensor_param_t ccv_nnc_tensor_variable_params(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable) {
  return guard(ccv_nnc_tensor_param_t{}, [&] { return check_var(graph, tensor_variable, "ccv_nnc_tensor_variable_params", "the variable")->info; });
}

NNC_API int ccv_nnc_tensor_variable_alias_params(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable,
                                                int ofs[CCV_NNC_MAX_DIM_ALLOC], int stride[CCV_NNC_MAX_DIM_ALLOC]) {
  return guard<int>(-1, [&] {
    const Var* v = check_var(graph, tensor_variable, "ccv_nnc_tensor_variable_alias_params", "the variable");
    if (!v->alias_of) return -1;
    if (ofs) std::memcpy(ofs, v->ofs, sizeof(v->ofs));
    if (stride) std::memcpy(stride, v->stride, sizeof(v->stride));
    return 0;
  });
}

NNC_API ccv_nnc_tensor_t* ccv_nnc_tensor_from_variable_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable,
                                                            ccv_nnc_stream_context_t* const stream_context) {
  return guard<ccv_nnc_tensor_t*>(nullptr, [&]() -> ccv_nnc_tensor_t* {
    static const char* what = "ccv_nnc_tensor_from_variable";
    (void)stream_context;  // CPU streams: nothing is pending on them for a variable
    Var* v = check_var(graph, tensor_variable, what, "the variable");
    Var* base = v->alias_of && !v->orphan ? v->alias_of : v;
    if (base->pending && !base->pending->storage) flush(graph);
    if (graph->memo_limit) memo_unshare(graph, v, what);
    if (!storage_of(v)) {
      NNC_CHECK(nd_of(base->info.dim) > 0, "%s: the variable has no shape yet (no command wrote it)", what);
      base->value = new_storage(graph, base->info, what);
      if (base->symbol >= 0) graph->symbols[static_cast<size_t>(base_of(graph, base->symbol))].value = base->value;
    }
    return tensor_of(v);
  });
}

NNC_API int ccv_nnc_tensor_variable_is_constant(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable) {
  return guard<int>(0, [&] { return check_var(graph, tensor_variable, "ccv_nnc_tensor_variable_is_constant", "the variable")->constant ? 1 : 0; });
}

NNC_API void ccv_nnc_tensor_variable_set(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable,
                                         ccv_nnc_tensor_t* const tensor) {
  guard_void([&] {
    static const char* what = "ccv_nnc_tensor_variable_set";
    Var* v = check_var(graph, tensor_variable, what, "the variable");
    NNC_CHECK(!v->alias_of, "%s: set the base variable, not an alias", what);
    NNC_CHECK(tensor, "%s: the tensor is NULL", what);
    NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(tensor) && !CCV_IS_TENSOR_VIEW(tensor), "%s: only plain tensors can be set", what);
    NNC_CHECK(nd_of(v->info.dim) == 0 || (same_shape(v->info, tensor->info) &&
                                          CCV_GET_DATA_TYPE(v->info.datatype) == CCV_GET_DATA_TYPE(tensor->info.datatype)),
              "%s: the tensor is %s %s but the variable is %s %s", what, shape_string(tensor->info.dim).c_str(),
              datatype_name(tensor->info.datatype), shape_string(v->info.dim).c_str(), datatype_name(v->info.datatype));
    // A new value: what the trace read before keeps its own storage.
    release(graph, v);
    for (Var* a : aliases_of(graph, v)) release(graph, a);
    v->pending.reset();
    v->info = tensor->info;
    v->value = std::shared_ptr<ccv_nnc_tensor_t>(tensor, [](ccv_nnc_tensor_t*) {});
  });
}

NNC_API void ccv_nnc_tensor_variable_detach(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable) {
  guard_void([&] {
    static const char* what = "ccv_nnc_tensor_variable_detach";
    Var* v = check_var(graph, tensor_variable, what, "the variable");
    NNC_CHECK(!v->alias_of, "%s: detach the base variable, not an alias", what);
    release(graph, v);
    for (Var* a : aliases_of(graph, v)) {
      release(graph, a);
      a->constant = true;
    }
    v->constant = true;
  });
}

NNC_API void ccv_nnc_tensor_variable_destructor_hook(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable,
                                                     ccv_nnc_tensor_variable_destructor_f func, void* const context) {
  guard_void([&] {
    static const char* what = "ccv_nnc_tensor_variable_destructor_hook";
    Var* v = check_var(graph, tensor_variable, what, "the variable");
    NNC_CHECK(func, "%s: the function is NULL", what);
    v->destructors.emplace_back(func, context);
  });
}

NNC_API void ccv_nnc_tensor_variable_free(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable) {
  guard_void([&] {
    destroy(graph, check_var(graph, tensor_variable, "ccv_nnc_tensor_variable_free", "the variable"));
    drain_retired(graph);
  });
}

NNC_API int ccv_nnc_dynamic_graph_exec(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags,
                                       const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs,
                                       const int output_size, const int parallel, ccv_nnc_stream_context_t* const stream_context) {
  return guard_code([&] {
    static const char* what = "ccv_nnc_dynamic_graph_exec";
    check_graph(graph, what);
    NNC_CHECK(input_size >= 0 && output_size >= 0 && (inputs || input_size == 0) && (outputs || output_size == 0),
              "%s: bad arrays (sizes %d and %d)", what, input_size, output_size);
    NNC_CHECK(parallel >= 0, "%s: parallel %d is negative", what, parallel);
    drain_retired(graph);
    if (graph->deferred) return record(graph, cmd, hint, flags, inputs, input_size, outputs, output_size);
    if (any_pending(graph))  // an immediate call after recorded ones: they run first
      flush(graph);
    Small<ccv_nnc_tensor_t*> in(static_cast<size_t>(input_size)), out(static_cast<size_t>(output_size));
    Small<ccv_nnc_tensor_param_t> in_params(static_cast<size_t>(input_size)), out_params(static_cast<size_t>(output_size));
    bool differentiable = false;
    for (int i = 0; i < input_size; i++) {
      if (!inputs[i]) continue;
      Var* v = check_var(graph, inputs[i], what, "input", i);
      in[static_cast<size_t>(i)] = tensor_of(v);
      NNC_CHECK(in[static_cast<size_t>(i)], "%s: input %d has no value yet (set it, or read it with ccv_nnc_tensor_from_variable)", what, i);
      in_params[static_cast<size_t>(i)] = in[static_cast<size_t>(i)]->info;
      differentiable = differentiable || !v->constant;
    }
    ccv_nnc_hint_tensor_auto(cmd, in_params.data(), input_size, hint, out_params.data(), output_size);
    // The outputs' storage: reused in place only when nothing else (the trace, an input) holds it.
    Small<std::shared_ptr<ccv_nnc_tensor_t>> fresh(static_cast<size_t>(output_size));
    for (int j = 0; j < output_size; j++) {
      Var* v = outputs[j];
      if (!v) continue;
      check_var(graph, v, what, "output", j);
      NNC_CHECK(!v->constant, "%s: output %d is a constant; constants are never written", what, j);
      if (v->alias_of) {
        NNC_CHECK(graph->no_grad || !differentiable,
                  "%s: output %d is an alias; writing into part of a variable is not traced yet (do it between set_no_grad(1) and (0))", what, j);
        Var* base = v->alias_of;
        if (!v->orphan && !base->value) {  // written in parts (a concatenation): zeros where no part is written
          base->value = new_storage(graph, base->info, what);
          tensor_zero(base->value.get());  // (a GPU tensor with SET_FORWARD)
          if (base->symbol >= 0) graph->symbols[static_cast<size_t>(base_of(graph, base->symbol))].value = base->value;
        }
        out[static_cast<size_t>(j)] = tensor_of(v);
        NNC_CHECK(out[static_cast<size_t>(j)], "%s: output %d is an alias of a variable with no value", what, j);
        continue;
      }
      ccv_nnc_tensor_param_t p = nd_of(v->info.dim) > 0 ? v->info : out_params[static_cast<size_t>(j)];
      NNC_CHECK(nd_of(p.dim) > 0, "%s: cannot infer the shape of output %d from the inputs; give the variable one", what, j);
      if (nd_of(v->info.dim) == 0 && v->info.datatype) p.datatype = v->info.datatype;
      bool reuse = v->value && v->value.use_count() == 1 && same_shape(v->value->info, p) &&
                   CCV_GET_DATA_TYPE(v->value->info.datatype) == CCV_GET_DATA_TYPE(p.datatype);
      for (int i = 0; i < input_size && reuse; i++)
        if (inputs[i] && storage_of(inputs[i]).get() == v->value.get()) reuse = false;
      fresh[static_cast<size_t>(j)] = reuse ? v->value : new_storage(graph, p, what);
      out[static_cast<size_t>(j)] = fresh[static_cast<size_t>(j)].get();
      for (int k = 0; k < j; k++)
        NNC_CHECK(outputs[k] != v, "%s: outputs %d and %d are the same variable", what, k, j);
    }
    // Memoisation: the outputs of the same call before, or this call's outputs kept for next time.
    bool aliased_output = false;
    for (int j = 0; j < output_size; j++) aliased_output = aliased_output || (outputs[j] && outputs[j]->alias_of);
    DG::MemoKey key;
    const bool memo = graph->memo_limit > 0 && !aliased_output && memoizable(cmd) &&
                      memo_key(cmd, hint, flags, in.data(), input_size, out_params.data(), output_size, &key);
    auto hit = memo ? graph->memo.find(key) : graph->memo.end();
    if (hit != graph->memo.end()) {
      graph->memo_hits++;
      graph->memo_ages.splice(graph->memo_ages.begin(), graph->memo_ages, hit->second.age);
      for (int j = 0; j < output_size; j++)
        if (outputs[j]) fresh[static_cast<size_t>(j)] = hit->second.outputs[static_cast<size_t>(j)];
    } else {
      const int rc = ccv_nnc_cmd_exec(cmd, hint, flags, in.data(), input_size, out.data(), output_size, stream_context);
      if (rc != CCV_NNC_EXEC_SUCCESS) return rc;
      if (stream_context) {  // queued: its tensors stay alive until the stream has run it
        auto* held = new std::vector<std::shared_ptr<ccv_nnc_tensor_t>>();
        for (int i = 0; i < input_size; i++)
          if (inputs[i] && storage_of(inputs[i])) held->push_back(storage_of(inputs[i]));
        for (int j = 0; j < output_size; j++)
          if (fresh[static_cast<size_t>(j)]) held->push_back(fresh[static_cast<size_t>(j)]);
          else if (outputs[j] && storage_of(outputs[j])) held->push_back(storage_of(outputs[j]));
        ccv_nnc_stream_context_add_callback(stream_context, retire_callback, new Retire{graph, held});
      }
      if (memo) {
        graph->memo_misses++;
        DG::MemoEntry entry;
        for (int j = 0; j < output_size; j++) {
          entry.outputs.push_back(fresh[static_cast<size_t>(j)]);
          if (fresh[static_cast<size_t>(j)]) {
            entry.bytes += ccv_nnc_tensor_data_size(fresh[static_cast<size_t>(j)]->info);
            graph->memo_held.insert(fresh[static_cast<size_t>(j)].get());
          }
        }
        if (entry.bytes <= graph->memo_limit) {
          graph->memo_ages.push_front(key);
          entry.age = graph->memo_ages.begin();
          graph->memo_bytes += entry.bytes;
          graph->memo.emplace(key, std::move(entry));
          memo_evict(graph);
        } else {
          for (const auto& o : entry.outputs)
            if (o) graph->memo_held.erase(o.get());
        }
      }
    }
    const bool traced = !graph->no_grad && differentiable;
    // (inline arrays: a heap allocation per call is a measurable part of a small call's cost)
    Small<int> in_symbols(static_cast<size_t>(input_size)), out_symbols(static_cast<size_t>(output_size));
    // On the tape when it can be (no alias among the variables, few of them).
    bool taped = traced && input_size <= DG::kTapeArity && output_size <= DG::kTapeArity;
    for (int i = 0; i < input_size && taped; i++) taped = !inputs[i] || !inputs[i]->alias_of;
    int entry = -1;
    if (taped) {
      constexpr size_t kTapeLimit = 256;  // longer runs go into the trace (bounded tape, bounded flush)
      if (graph->tape_live >= kTapeLimit) tape_flush(graph);
      DG::TapeEntry e;
      e.cmd = cmd;
      e.hint = hint;
      e.input_size = input_size;
      e.output_size = output_size;
      for (int i = 0; i < input_size; i++) {
        Var* v = inputs[i];
        if (!v) {
          e.inputs[i] = CCV_NNC_NO_TENSOR_SYMBOL;
        } else if (v->tape >= 0) {
          graph->tape_values[static_cast<size_t>(v->tape)].readers++;
          e.inputs[i] = -2 - v->tape;
        } else {
          const int sym = symbol_of(graph, v);
          graph->symbols[static_cast<size_t>(base_of(graph, sym))].readers++;
          e.inputs[i] = sym;
        }
      }
      entry = static_cast<int>(graph->tape.size());
      for (int j = 0; j < output_size; j++) {
        e.outputs[j] = -1;
        if (!outputs[j]) continue;
        e.outputs[j] = static_cast<int>(graph->tape_values.size());
        DG::TapeValue tv;
        tv.value = fresh[static_cast<size_t>(j)];
        tv.writer = entry;
        graph->tape_values.push_back(std::move(tv));
      }
      graph->tape.push_back(e);
      graph->tape_live++;
    } else if (traced) {
      for (int i = 0; i < input_size; i++) in_symbols[static_cast<size_t>(i)] = inputs[i] ? symbol_of(graph, inputs[i]) : CCV_NNC_NO_TENSOR_SYMBOL;
      for (int j = 0; j < output_size; j++)
        out_symbols[static_cast<size_t>(j)] = outputs[j] ? symbolic::tensor_new(graph->trace, fresh[static_cast<size_t>(j)]->info, nullptr).d
                                                         : CCV_NNC_NO_TENSOR_SYMBOL;
      Small<ccv_nnc_tensor_symbol_t> is(static_cast<size_t>(input_size)), os(static_cast<size_t>(output_size));
      for (int i = 0; i < input_size; i++) is[static_cast<size_t>(i)] = {in_symbols[static_cast<size_t>(i)], in_symbols[static_cast<size_t>(i)] >= 0 ? graph->trace : nullptr};
      for (int j = 0; j < output_size; j++)
        os[static_cast<size_t>(j)] = {out_symbols[static_cast<size_t>(j)], out_symbols[static_cast<size_t>(j)] >= 0 ? graph->trace : nullptr};
      const int e = symbolic::exec_new(graph->trace, cmd, is.data(), input_size, os.data(), output_size, nullptr).d;
      graph->trace->execs[static_cast<size_t>(e)].hint = hint;
      sync(graph);
      for (int i = 0; i < input_size; i++)
        if (const int s = in_symbols[static_cast<size_t>(i)]; s >= 0) {
          const int b = base_of(graph, s);
          graph->symbols[static_cast<size_t>(b)].readers++;
          const int w = live_writer(graph, b);
          if (w >= 0) symbolic::concat(graph->trace, w, e);
        }
    }
    for (int j = 0; j < output_size; j++) {
      Var* v = outputs[j];
      if (!v || v->alias_of) continue;
      release(graph, v);
      for (Var* a : aliases_of(graph, v)) release(graph, a);
      v->pending.reset();
      v->value = fresh[static_cast<size_t>(j)];
      v->info = v->value->info;
      if (taped) {
        const int t = graph->tape[static_cast<size_t>(entry)].outputs[j];
        graph->tape_values[static_cast<size_t>(t)].owner = v;
        v->tape = t;
      } else if (traced) {
        const int s = out_symbols[static_cast<size_t>(j)];
        graph->symbols[static_cast<size_t>(s)].value = v->value;
        graph->symbols[static_cast<size_t>(s)].named++;
        v->symbol = s;
      }
    }
    if (traced && !taped)  // an output nobody names (a NULL slot's) is not needed
      for (int j = 0; j < output_size; j++)
        if (out_symbols[static_cast<size_t>(j)] >= 0) prune(graph, out_symbols[static_cast<size_t>(j)]);
    return static_cast<int>(CCV_NNC_EXEC_SUCCESS);
  });
}

NNC_API void ccv_nnc_dynamic_graph_set_max_concurrency(ccv_nnc_dynamic_graph_t* const graph, const int max_stream_count) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_set_max_concurrency");
    NNC_CHECK(max_stream_count >= 1, "ccv_nnc_dynamic_graph_set_max_concurrency: %d is less than 1", max_stream_count);
    graph->max_concurrency = max_stream_count;
  });
}

NNC_API int ccv_nnc_dynamic_graph_set_no_grad(ccv_nnc_dynamic_graph_t* const dynamic_graph, const int no_grad) {
  return guard<int>(-1, [&] {
    check_graph(dynamic_graph, "ccv_nnc_dynamic_graph_set_no_grad");
    const int was = dynamic_graph->no_grad;
    dynamic_graph->no_grad = no_grad ? 1 : 0;
    return was == dynamic_graph->no_grad ? -1 : 0;
  });
}

NNC_API int ccv_nnc_dynamic_graph_set_deferred(ccv_nnc_dynamic_graph_t* const graph, const int deferred) {
  return guard<int>(-1, [&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_set_deferred");
    const int was = graph->deferred;
    if (was && !deferred) {  // what is recorded runs; immediate mode traces anew from here
      flush(graph);
      forget_recording(graph);
    }
    graph->deferred = deferred ? 1 : 0;
    return was == graph->deferred ? -1 : 0;
  });
}

NNC_API int ccv_nnc_dynamic_graph_flush(ccv_nnc_dynamic_graph_t* const graph) {
  return guard_code([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_flush");
    flush(graph);
    return static_cast<int>(CCV_NNC_EXEC_SUCCESS);
  });
}

NNC_API int ccv_nnc_dynamic_graph_export(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t* const inputs, const int input_size,
                                         const ccv_nnc_tensor_variable_t* const outputs, const int output_size,
                                         ccv_nnc_symbolic_graph_t** const symbolic_graph, ccv_nnc_tensor_symbol_t* const input_symbols,
                                         ccv_nnc_tensor_symbol_t* const output_symbols) {
  if (symbolic_graph) *symbolic_graph = nullptr;
  return guard<int>(-1, [&] {
    static const char* what = "ccv_nnc_dynamic_graph_export";
    check_graph(graph, what);
    NNC_CHECK(symbolic_graph, "%s: symbolic_graph is NULL", what);
    NNC_CHECK(input_size >= 0 && (inputs || input_size == 0) && (input_symbols || input_size == 0), "%s: bad inputs arrays (size %d)", what,
              input_size);
    NNC_CHECK(output_size > 0 && outputs && output_symbols, "%s: at least one output is needed, with its symbol array", what);
    Built b = build_recording(graph, what);
    ccv_nnc_symbolic_graph_t* sg = b.sg.get();
    std::vector<ccv_nnc_tensor_symbol_t> outs;
    for (int j = 0; j < output_size; j++) {
      Var* v = check_var(graph, outputs[j], what, "output", j);
      NNC_CHECK(!v->alias_of, "%s: output %d is an alias; export its base", what, j);
      auto it = v->pending ? b.pending_symbols.find(v->pending.get()) : b.pending_symbols.end();
      NNC_CHECK(it != b.pending_symbols.end(), "%s: output %d is not made by the recorded calls (record them in the deferred mode)", what, j);
      outs.push_back({it->second, sg});
    }
    std::vector<int> given(static_cast<size_t>(input_size), -1);
    std::vector<ccv_nnc_tensor_symbol_t> ins;
    for (int i = 0; i < input_size; i++) {
      Var* v = check_var(graph, inputs[i], what, "input", i);
      NNC_CHECK(!v->alias_of, "%s: input %d is an alias; give its base", what, i);
      NNC_CHECK(!v->pending, "%s: input %d is itself made by the recorded calls; give the values it is made from", what, i);
      // (a value made by a run before and kept is a recorded call's output too)
      {
        auto it = v->value ? b.storage_symbols.find(v->value.get()) : b.storage_symbols.end();
        NNC_CHECK(it != b.storage_symbols.end(), "%s: input %d feeds none of the recorded calls", what, i);
        given[static_cast<size_t>(i)] = it->second;
      }
      ins.push_back({given[static_cast<size_t>(i)], sg});
    }
    // Keep what the outputs need, then check every input is still read and nothing else is.
    const int prune = CCV_NNC_SIMPLIFY_GRAPH_PRUNING;
    ccv_nnc_symbolic_graph_simplify(sg, &prune, 1, nullptr, 0, outs.data(), static_cast<int>(outs.size()), nullptr, 0, nullptr, 0);
    NNC_CHECK(std::string(ccv_nnc_error_message()).empty(), "%s: %s", what, ccv_nnc_error_message());
    std::vector<char> read(sg->tensors.size(), 0), written(sg->tensors.size(), 0);
    for (const auto& x : sg->execs) {
      if (CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
      for (int d : x.inputs)
        if (d >= 0) read[static_cast<size_t>(symbolic::base_of(sg, d))] = 1;
      for (int d : x.outputs)
        if (d >= 0) written[static_cast<size_t>(symbolic::base_of(sg, d))] = 1;
    }
    for (int i = 0; i < input_size; i++)
      NNC_CHECK(read[static_cast<size_t>(given[static_cast<size_t>(i)])], "%s: input %d feeds none of the outputs", what, i);
    for (size_t d = 0; d < sg->tensors.size(); d++) {
      if (!read[d] || written[d] || CCV_NNC_TENSOR_SYMBOL_IS_DEAD(sg->tensors[d].flags) || sg->tensors[d].alias_of >= 0) continue;
      const bool is_given = std::find(given.begin(), given.end(), static_cast<int>(d)) != given.end();
      NNC_CHECK(is_given, "%s: the outputs need a value (tensor symbol %d, %s) that is not among the inputs", what, static_cast<int>(d),
                shape_string(sg->tensors[d].info.dim).c_str());
    }
    for (int i = 0; i < input_size; i++) input_symbols[i] = ins[static_cast<size_t>(i)];
    for (int j = 0; j < output_size; j++) output_symbols[j] = outs[static_cast<size_t>(j)];
    *symbolic_graph = b.sg.release();
    return 0;
  });
}

NNC_API void ccv_nnc_dynamic_graph_memory_stats(ccv_nnc_dynamic_graph_t* const graph, uint64_t* const in_use, uint64_t* const peak,
                                                const int reset_peak) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_memory_stats");
    if (in_use) *in_use = graph->in_use;
    if (peak) *peak = graph->peak;
    if (reset_peak) graph->peak = graph->in_use;
  });
}

NNC_API void ccv_nnc_dynamic_graph_set_memoization(ccv_nnc_dynamic_graph_t* const graph, const size_t max_bytes) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_set_memoization");
    graph->memo_limit = max_bytes;
    if (!max_bytes) {
      memo_clear(graph);
      graph->memo_hits = graph->memo_misses = 0;
    } else {
      memo_evict(graph);
    }
  });
}

NNC_API void ccv_nnc_dynamic_graph_memoization_stats(const ccv_nnc_dynamic_graph_t* const graph, uint64_t* const hits, uint64_t* const misses) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_memoization_stats");
    if (hits) *hits = graph->memo_hits;
    if (misses) *misses = graph->memo_misses;
  });
}

NNC_API void ccv_nnc_dynamic_graph_gc(ccv_nnc_dynamic_graph_t* const dynamic_graph) {
  guard_void([&] {
    check_graph(dynamic_graph, "ccv_nnc_dynamic_graph_gc");
    drain_retired(dynamic_graph);
    for (ccv_nnc_tensor_t* t : dynamic_graph->pool) ccv_nnc_tensor_free(t);
    dynamic_graph->pool.clear();
    dynamic_graph->pool_bytes = 0;
  });
}

NNC_API void ccv_nnc_dynamic_graph_dot(const ccv_nnc_dynamic_graph_t* const graph, const int flags, FILE* out) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_dot");
    tape_flush(const_cast<DG*>(graph));
    ccv_nnc_symbolic_graph_dot(graph->trace, flags, out);
  });
}

NNC_API int ccv_nnc_dynamic_graph_bookkeeping_count(const ccv_nnc_dynamic_graph_t* const graph, const int type) {
  return guard<int>(0, [&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_bookkeeping_count");
    tape_flush(const_cast<DG*>(graph));
    return ccv_nnc_symbolic_graph_active_symbol_count(graph->trace, type);
  });
}

NNC_API void ccv_nnc_dynamic_graph_format(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_symbolic_graph_format_f format_fn,
                                          void* const context) {
  guard_void([&] {
    check_graph(graph, "ccv_nnc_dynamic_graph_format");
    tape_flush(const_cast<DG*>(graph));
    if (ccv_nnc_symbolic_graph_active_symbol_count(graph->trace, CCV_NNC_SYMBOL_GRAPH_EXEC) == 0) return;
    ccv_nnc_symbolic_graph_format(graph->trace, nullptr, 0, nullptr, 0, format_fn, context);
  });
}

NNC_API void ccv_nnc_dynamic_graph_has_effect_to_tensor_variables(const ccv_nnc_dynamic_graph_t* const graph,
                                                                  const ccv_nnc_tensor_variable_t* const source_variables, const int source_variable_size,
                                                                  const ccv_nnc_tensor_variable_t* const destination_variables,
                                                                  const int destination_variable_size, uint64_t* const bitmask) {
  guard_void([&] {
    static const char* what = "ccv_nnc_dynamic_graph_has_effect_to_tensor_variables";
    check_graph(graph, what);
    NNC_CHECK(bitmask, "%s: bitmask is NULL", what);
    NNC_CHECK(source_variable_size >= 0 && destination_variable_size >= 0, "%s: negative sizes", what);
    DG* g = const_cast<DG*>(graph);
    tape_flush(g);
    for (int i = 0; i < (source_variable_size + 63) / 64; i++) bitmask[i] = 0;
    std::vector<char> target(g->trace->tensors.size(), 0);
    for (int j = 0; j < destination_variable_size; j++) {
      Var* v = check_var(g, destination_variables[j], what, "a destination");
      if (v->symbol >= 0) target[static_cast<size_t>(base_of(g, v->symbol))] = 1;
    }
    // Symbol -> the live execs reading it.
    std::vector<std::vector<int>> readers(g->trace->tensors.size());
    for (size_t e = 0; e < g->trace->execs.size(); e++) {
      if (CCV_NNC_GRAPH_EXEC_IS_DEAD(g->trace->execs[e].flags)) continue;
      for (int i : g->trace->execs[e].inputs)
        if (i >= 0) readers[static_cast<size_t>(base_of(g, i))].push_back(static_cast<int>(e));
    }
    for (int i = 0; i < source_variable_size; i++) {
      Var* v = check_var(g, source_variables[i], what, "a source");
      if (v->symbol < 0) continue;
      std::vector<char> seen(g->trace->tensors.size(), 0);
      std::vector<int> work{base_of(g, v->symbol)};
      bool hit = false;
      while (!work.empty() && !hit) {
        const int b = work.back();
        work.pop_back();
        if (seen[static_cast<size_t>(b)]) continue;
        seen[static_cast<size_t>(b)] = 1;
        hit = target[static_cast<size_t>(b)];
        for (int e : readers[static_cast<size_t>(b)])
          for (int o : g->trace->execs[static_cast<size_t>(e)].outputs)
            if (o >= 0) work.push_back(base_of(g, o));
      }
      if (hit) bitmask[i / 64] |= uint64_t{1} << (i % 64);
    }
  });
}

// ---- Gradients ------------------------------------------------------------

namespace {

void backward(DG* g, const ccv_nnc_tensor_variable_t* f_variables, int f_size, const ccv_nnc_tensor_variable_t* df, const ccv_nnc_tensor_variable_t* inputs,
              int input_size, ccv_nnc_tensor_variable_t* outputs, int output_size, ccv_nnc_stream_context_t* stream) {
  static const char* what = "ccv_nnc_dynamic_graph_backward";
  check_graph(g, what);
  NNC_CHECK(f_size > 0 && f_variables, "%s: no f variables", what);
  NNC_CHECK(input_size > 0 && inputs, "%s: no input variables", what);
  NNC_CHECK(output_size == input_size && outputs, "%s: %d outputs for %d inputs (one gradient per input)", what, output_size, input_size);
  if (g->deferred) {
    record_backward(g, f_variables, f_size, df, inputs, input_size, outputs, what);
    return;
  }
  flush(g);
  tape_flush(g);
  std::vector<ccv_nnc_tensor_symbol_t> f, wrt;
  for (int i = 0; i < f_size; i++) {
    Var* v = check_var(g, f_variables[i], what, "f variable", i);
    NNC_CHECK(v->symbol >= 0 && live_writer(g, base_of(g, v->symbol)) >= 0,
              "%s: f variable %d was not computed by a traced command (a constant, or computed without gradients)", what, i);
    f.push_back({v->symbol, g->trace});
  }
  for (int i = 0; i < input_size; i++) {
    Var* v = check_var(g, inputs[i], what, "input", i);
    NNC_CHECK(!v->constant, "%s: input %d is a constant; constants have no gradient", what, i);
    NNC_CHECK(v->symbol >= 0, "%s: input %d has no path to the f variables (no traced command read it)", what, i);
    if (outputs[i]) check_var(g, outputs[i], what, "output", i);
    wrt.push_back({v->symbol, g->trace});
  }
  const size_t execs_before = g->trace->execs.size(), tensors_before = g->trace->tensors.size();
  // Whatever happens, the backward part leaves the trace.
  struct Cleanup {
    DG* g;
    size_t execs_before, tensors_before;
    ~Cleanup() {
      for (size_t e = execs_before; e < g->trace->execs.size(); e++)
        if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(g->trace->execs[e].flags)) symbolic::exec_free(g->trace, {static_cast<int>(e), g->trace});
      for (size_t t = tensors_before; t < g->trace->tensors.size(); t++)
        if (!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(g->trace->tensors[t].flags) && g->trace->tensors[t].alias_of < 0)
          symbolic::tensor_free(g->trace, {static_cast<int>(t), g->trace});
      sync(g);
      g->dropped += g->trace->tensors.size() - tensors_before;
      maybe_compact(g);
    }
  } cleanup{g, execs_before, tensors_before};
  ccv_nnc_symbolic_graph_backward(g->trace, f.data(), f_size, wrt.data(), input_size, nullptr, 0, nullptr, 0);
  const std::string message = ccv_nnc_error_message();
  NNC_CHECK(g->trace->execs.size() > execs_before || message.empty(), "%s: %s", what, message.c_str());
  sync(g);
  std::vector<ccv_nnc_graph_exec_symbol_t> backward_execs;
  for (size_t e = execs_before; e < g->trace->execs.size(); e++)
    if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(g->trace->execs[e].flags)) backward_execs.push_back({static_cast<int>(e), g->trace});
  NNC_CHECK(!backward_execs.empty(), "%s: nothing to differentiate (%s)", what, message.empty() ? "no path from the inputs to f" : message.c_str());
  std::vector<ccv_nnc_tensor_bind_t> binds;
  std::vector<std::shared_ptr<ccv_nnc_tensor_t>> hold;
  // Forward values the backward reads: the trace's storage.
  std::vector<char> bound(g->trace->tensors.size(), 0);
  for (const auto& e : backward_execs)
    for (int s : g->trace->execs[static_cast<size_t>(e.d)].inputs) {
      if (s < 0 || static_cast<size_t>(s) >= tensors_before) continue;
      const int b = base_of(g, s);
      if (bound[static_cast<size_t>(b)]) continue;
      bound[static_cast<size_t>(b)] = 1;
      const auto& value = g->symbols[static_cast<size_t>(b)].value;
      NNC_CHECK(value, "%s: the value of trace symbol %d, which the backward reads, is no longer kept", what, b);
      binds.push_back({{b, g->trace}, value.get()});
    }
  // Seeds: the caller's, or ones.
  for (int i = 0; i < f_size; i++) {
    const ccv_nnc_tensor_symbol_t seed = ccv_nnc_tensor_symbol_for_backward(g->trace, f[static_cast<size_t>(i)]);
    if (seed.d < 0 || static_cast<size_t>(seed.d) >= g->trace->tensors.size()) continue;
    bool read = false;
    for (const auto& e : backward_execs)
      for (int s : g->trace->execs[static_cast<size_t>(e.d)].inputs) read = read || (s >= 0 && base_of(g, s) == base_of(g, seed.d));
    if (!read) continue;
    g->trace->tensors[static_cast<size_t>(seed.d)].flags &= ~(CCV_NNC_TENSOR_SYMBOL_INIT_ONES | CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    ccv_nnc_tensor_t* t = nullptr;
    if (df && df[i]) {
      t = tensor_of(check_var(g, df[i], what, "df_optionals", i));
      NNC_CHECK(t && same_shape(t->info, g->trace->tensors[static_cast<size_t>(seed.d)].info), "%s: df_optionals[%d] has no value or a shape other than f's",
                what, i);
    } else {
      hold.push_back(new_storage(g, g->trace->tensors[static_cast<size_t>(seed.d)].info, what));
      t = hold.back().get();
      // Ones, by SET_FORWARD: the seed may live on a GPU.
      ccv_nnc_cmd_param_t ones;
      std::memset(&ones, 0, sizeof(ones));
      ones.blas.a[0] = 1;
      const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SET_FORWARD, nullptr, ones, 0), ccv_nnc_no_hint, 0, nullptr, 0, &t, 1, nullptr);
      NNC_CHECK(r == CCV_NNC_EXEC_SUCCESS, "%s: setting the seed gradient of f %d to ones: %s", what, i, error_message().c_str());
    }
    binds.push_back({seed, t});
  }
  // Gradients: into the outputs' storage, or beside it to be added.
  std::vector<ccv_nnc_tensor_symbol_t> grads;
  std::vector<std::shared_ptr<ccv_nnc_tensor_t>> into(static_cast<size_t>(input_size));
  for (int i = 0; i < input_size; i++) {
    const ccv_nnc_tensor_symbol_t gs = ccv_nnc_tensor_symbol_for_backward(g->trace, wrt[static_cast<size_t>(i)]);
    NNC_CHECK(gs.d >= 0, "%s: input %d has no path to the f variables", what, i);
    grads.push_back(gs);
    if (!outputs[i]) continue;
    const ccv_nnc_tensor_param_t info = g->trace->tensors[static_cast<size_t>(gs.d)].info;
    into[static_cast<size_t>(i)] = new_storage(g, info, what);
    binds.push_back({gs, into[static_cast<size_t>(i)].get()});
  }
  Compiled c;
  ccv_nnc_symbolic_graph_compile(g->trace, ccv_nnc_default_compile_params, binds.data(), static_cast<int>(binds.size()), grads.data(),
                                 static_cast<int>(grads.size()), backward_execs.data(), static_cast<int>(backward_execs.size()),
                                 backward_execs.data(), static_cast<int>(backward_execs.size()), &c.graph, &c.tensors, &c.execs);
  NNC_CHECK(c.graph, "%s: compiling the backward pass: %s", what, ccv_nnc_error_message());
  const int rc = ccv_nnc_graph_run(c.graph, 0, nullptr, 0, nullptr, 0, nullptr, stream);
  NNC_CHECK(rc == CCV_NNC_EXEC_SUCCESS, "%s: running the backward pass: %s", what, ccv_nnc_error_message());
  for (int i = 0; i < input_size; i++) {
    Var* o = outputs[i];
    if (!o) continue;
    const std::shared_ptr<ccv_nnc_tensor_t>& gv = into[static_cast<size_t>(i)];
    ccv_nnc_tensor_t* existing = tensor_of(o);
    if (existing && same_shape(existing->info, gv->info)) {  // accumulate
      ccv_nnc_tensor_t* in[2] = {existing, gv.get()};
      ccv_nnc_tensor_t* out[1] = {existing};
      ccv_nnc_cmd_t sum = ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
      NNC_CHECK(ccv_nnc_cmd_exec(sum, ccv_nnc_no_hint, 0, in, 2, out, 1, stream) == CCV_NNC_EXEC_SUCCESS, "%s: adding gradient %d: %s", what, i,
                ccv_nnc_error_message());
      continue;
    }
    NNC_CHECK(!o->alias_of, "%s: output %d is an alias with no value to add to", what, i);
    release(g, o);
    o->pending.reset();
    o->value = gv;
    o->info = gv->info;
  }
}

}  // namespace

NNC_API void ccv_nnc_dynamic_graph_backward(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_tensor_variable_t* const f_variables,
                                            const int f_variable_size, const ccv_nnc_tensor_variable_t* const df_optionals,
                                            const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs,
                                            const int output_size, ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    backward(dynamic_graph, f_variables, f_variable_size, df_optionals, inputs, input_size, outputs, output_size, stream_context);
  });
}

NNC_API void ccv_nnc_dynamic_graph_apply_gradients(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_cmd_t minimizer,
                                                   const ccv_nnc_tensor_variable_t* const gradients, const int gradient_size,
                                                   ccv_nnc_tensor_variable_t* const parameters, const int parameter_size,
                                                   ccv_nnc_tensor_variable_t* const saved_aux, const int parallel,
                                                   ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    static const char* what = "ccv_nnc_dynamic_graph_apply_gradients";
    check_graph(dynamic_graph, what);
    if (!dynamic_graph->deferred) flush(dynamic_graph);
    NNC_CHECK(parallel >= 0, "%s: parallel %d is negative", what, parallel);
    NNC_CHECK(gradient_size == parameter_size && parameter_size >= 0 && (gradients || gradient_size == 0) && (parameters || parameter_size == 0),
              "%s: %d gradients for %d parameters", what, gradient_size, parameter_size);
    const int aux = ccv_nnc_minimizer_saved_aux_size(minimizer);
    NNC_CHECK(aux >= 0, "%s: %s", what, ccv_nnc_error_message());
    NNC_CHECK(aux == 0 || saved_aux, "%s: the minimizer keeps %d auxiliary tensors per parameter; saved_aux is NULL", what, aux);
    if (dynamic_graph->deferred) {  // recorded: each update a call making the parameter's (and its state's) next value
      for (int i = 0; i < parameter_size; i++) {
        Var* p = check_var(dynamic_graph, parameters[i], what, "parameter", i);
        check_var(dynamic_graph, gradients[i], what, "gradient", i);
        NNC_CHECK(!p->alias_of, "%s: parameter %d is an alias; update its base in the deferred mode", what, i);
        std::vector<ccv_nnc_tensor_variable_t> in{gradients[i], p}, out{p};
        for (int k = 0; k < aux; k++) {
          Var* a = check_var(dynamic_graph, saved_aux[i * aux + k], what, "saved_aux", i * aux + k);
          NNC_CHECK(!a->alias_of, "%s: saved_aux %d is an alias; give its base in the deferred mode", what, i * aux + k);
          if (!a->value && !a->pending) {  // a fresh auxiliary tensor starts at zero
            if (nd_of(a->info.dim) == 0) a->info = p->info;
            a->value = new_storage(dynamic_graph, a->info, what);
            tensor_zero(a->value.get());
          }
          in.push_back(a);
          out.push_back(a);
        }
        // Not traced: a parameter after its update is a leaf, as in immediate mode.
        // In place, as immediate mode updates: into the storage the value is (or will be) in.
        std::vector<std::shared_ptr<ccv_nnc_tensor_t>> roots;
        for (auto v : out) roots.push_back(v->pending ? (v->pending->root ? v->pending->root : v->pending->storage) : v->value);
        record(dynamic_graph, minimizer, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
               false);
        DG::Record& r = dynamic_graph->records.back();
        r.update = true;
        for (size_t k = 0; k < roots.size() && k < r.outputs.size(); k++) r.outputs[k]->root = roots[k];
      }
      return;
    }
    for (int i = 0; i < parameter_size; i++) {
      Var* p = check_var(dynamic_graph, parameters[i], what, "parameter", i);
      Var* gv = check_var(dynamic_graph, gradients[i], what, "gradient", i);
      ccv_nnc_tensor_t* pt = tensor_of(p);
      ccv_nnc_tensor_t* gt = tensor_of(gv);
      NNC_CHECK(pt && gt, "%s: parameter %d or its gradient has no value", what, i);
      std::vector<ccv_nnc_tensor_t*> in{gt, pt}, out{pt};
      for (int k = 0; k < aux; k++) {
        Var* a = check_var(dynamic_graph, saved_aux[i * aux + k], what, "saved_aux", i * aux + k);
        if (!storage_of(a)) {  // a fresh auxiliary tensor starts at zero
          Var* base = a->alias_of && !a->orphan ? a->alias_of : a;
          if (nd_of(base->info.dim) == 0) base->info = pt->info;
          base->value = new_storage(dynamic_graph, base->info, what);
          tensor_zero(base->value.get());  // (a GPU tensor with SET_FORWARD)
        }
        in.push_back(tensor_of(a));
        out.push_back(tensor_of(a));
      }
      const int rc = ccv_nnc_cmd_exec(minimizer, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                                      stream_context);
      NNC_CHECK(rc == CCV_NNC_EXEC_SUCCESS, "%s: updating parameter %d: %s", what, i, ccv_nnc_error_message());
    }
  });
}

NNC_API void ccv_nnc_dynamic_graph_minimize(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_cmd_t minimizer,
                                            const ccv_nnc_tensor_variable_t* const losses, const int loss_size,
                                            const ccv_nnc_tensor_variable_t* const dloss_optionals, ccv_nnc_tensor_variable_t* const parameters,
                                            const int parameter_size, ccv_nnc_tensor_variable_t* const saved_aux, const int parallel,
                                            ccv_nnc_stream_context_t* const stream_context) {
  guard_void([&] {
    static const char* what = "ccv_nnc_dynamic_graph_minimize";
    check_graph(dynamic_graph, what);
    NNC_CHECK(parameter_size > 0 && parameters, "%s: no parameters", what);
    std::vector<ccv_nnc_tensor_variable_t> grads;
    struct Free {
      DG* g;
      std::vector<ccv_nnc_tensor_variable_t>* v;
      ~Free() {
        for (auto x : *v) destroy(g, x);
      }
    } free_grads{dynamic_graph, &grads};
    for (int i = 0; i < parameter_size; i++) grads.push_back(new_variable(dynamic_graph, ccv_nnc_tensor_auto, false, what));
    backward(dynamic_graph, losses, loss_size, dloss_optionals, parameters, parameter_size, grads.data(), parameter_size, stream_context);
    ccv_nnc_dynamic_graph_apply_gradients(dynamic_graph, minimizer, grads.data(), parameter_size, parameters, parameter_size, saved_aux, parallel,
                                          stream_context);
    const std::string message = ccv_nnc_error_message();
    NNC_CHECK(message.empty(), "%s", message.c_str());
  });
}

// ---- Bindings support: the commands by pointer -------------------------------

NNC_API int ccv_nnc_dynamic_graph_exec_p(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t* const cmd, const ccv_nnc_hint_t* const hint,
                                         const int flags, const ccv_nnc_tensor_variable_t* const inputs, const int input_size,
                                         ccv_nnc_tensor_variable_t* const outputs, const int output_size, const int parallel,
                                         ccv_nnc_stream_context_t* const stream_context) {
  if (!cmd) return guard_code([]() -> int { fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_dynamic_graph_exec_p: cmd is NULL"); });
  return ccv_nnc_dynamic_graph_exec(graph, *cmd, hint ? *hint : ccv_nnc_no_hint, flags, inputs, input_size, outputs, output_size, parallel,
                                    stream_context);
}

NNC_API int ccv_nnc_dynamic_graph_minimize_p(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t* const minimizer,
                                             const ccv_nnc_tensor_variable_t* const losses, const int loss_size,
                                             const ccv_nnc_tensor_variable_t* const dloss_optionals, ccv_nnc_tensor_variable_t* const parameters,
                                             const int parameter_size, ccv_nnc_tensor_variable_t* const saved_aux, const int parallel,
                                             ccv_nnc_stream_context_t* const stream_context) {
  return guard_code([&]() -> int {
    NNC_CHECK(minimizer, "ccv_nnc_dynamic_graph_minimize_p: minimizer is NULL");
    // The void call reports failure through the message this guard cleared.
    ccv_nnc_dynamic_graph_minimize(graph, *minimizer, losses, loss_size, dloss_optionals, parameters, parameter_size, saved_aux, parallel,
                                   stream_context);
    return nnc::detail::t_guard.error_set ? -1 : 0;
  });
}
