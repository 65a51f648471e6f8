// Models over what the caller brings: a command (ccv_cnnp_cmd_exec), a
// symbolic graph (ccv_cnnp_graph) and a debug function (ccv_cnnp_debug).
//
// Each owns the contexts the caller hands over (init states, the debug
// context): a copy of the model copies them with the caller's copy function,
// and the model releases its own with the caller's deinit. Without a copy
// function a copy shares the context and leaves releasing it to the original.
#include <cstring>
#include <map>
#include <memory>

#include "cnnp/layers.hpp"
#include "core/error.hpp"
#include "nnc/ccv_nnc_easy.h"
#include "symbolic/graph.hpp"

namespace nnc::cnnp {

namespace {

// An init state the model may own.
struct OwnedState {
  ccv_cnnp_cmd_exec_io_init_state_t state{};
  bool owned = false;
  OwnedState() = default;
  explicit OwnedState(const ccv_cnnp_cmd_exec_io_init_state_t& s) : state(s), owned(true) {}
  OwnedState copy() const {
    OwnedState o;
    o.state = state;
    o.owned = state.copy != nullptr;
    if (state.copy && state.context) o.state.context = state.copy(state.context);
    return o;
  }
  void release() {
    if (owned && state.deinit && state.context) state.deinit(state.context);
    owned = false;
  }
};

bool is_shared(int type) { return type == CCV_CNNP_INIT_SHARED_TENSOR || type == CCV_CNNP_INIT_SHARED_TENSOR_AS_TRAINABLE; }

ParamDecl shared_decl(const ccv_nnc_tensor_param_t& info, const ccv_cnnp_cmd_exec_io_init_state_t& state, int type) {
  ParamDecl d;
  d.info = info;
  // Nothing past the last dimension (a 3-d tensor's info carries its matrix step in dim[4]).
  int n = 0;
  while (n < CCV_NNC_MAX_DIM_ALLOC && info.dim[n] > 0) n++;
  for (int i = n; i < CCV_NNC_MAX_DIM_ALLOC; i++) d.info.dim[i] = 0;
  d.init.kind = Init::CALLBACK;
  d.init.state = state;
  d.label = "weight";
  d.selector = CCV_CNNP_PARAMETER_SELECT_WEIGHT;
  d.trainable = type == CCV_CNNP_INIT_SHARED_TENSOR_AS_TRAINABLE;
  return d;
}

// ---------------------------------------------------------------------------

struct CmdExec final : Model {
  CmdExec(const char* name) : Model("cmd_exec", name) {}
  ccv_nnc_cmd_t cmd{};
  ccv_nnc_hint_t hint{};
  int flags = 0;
  std::vector<int> in_types;
  std::vector<OwnedState> states;  // one per input (empty unless shared)
  std::vector<int> out_types;
  ~CmdExec() override {
    for (auto& s : states) s.release();
  }
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    size_t next = 0;
    std::vector<Sym> args;
    for (size_t i = 0; i < in_types.size(); i++) {
      if (in_types[i] == CCV_CNNP_IO) {
        NNC_CHECK(next < in.size(), "model %s takes %d inputs, given %zu", model_label(*this).c_str(), input_size, in.size());
        args.push_back(in[next++]);
      } else if (is_shared(in_types[i])) {
        args.push_back(b.parameter(this, static_cast<int>(i), shared_decl(states[i].state.info, states[i].state, in_types[i])));
      } else {
        args.push_back({CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
      }
    }
    std::vector<Sym> outs;
    out.clear();
    for (int t : out_types) {
      if (t == CCV_CNNP_NO_TENSOR) {
        outs.push_back({CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
        continue;
      }
      outs.push_back(b.tensor_auto());
      if (t == CCV_CNNP_IO) out.push_back(outs.back());
    }
    b.exec(cmd, hint, args, outs);
    (void)flags;  // a graph exec has no per-exec flags to run with
  }
  std::unique_ptr<Model> clone() const override {
    auto c = std::make_unique<CmdExec>(name.c_str());
    copy_common_to(*c);
    c->output_size = output_size;
    c->cmd = cmd, c->hint = hint, c->flags = flags;
    c->in_types = in_types, c->out_types = out_types;
    for (auto& s : states) c->states.push_back(s.copy());
    return c;
  }
};

// ---------------------------------------------------------------------------

struct GraphModel final : Model {
  GraphModel(const char* name) : Model("graph", name) {}
  ccv_nnc_symbolic_graph_t* graph = nullptr;  // our own copy
  std::vector<int> inputs, outputs;           // symbol indices in it
  std::map<int, std::pair<int, OwnedState>> shared;  // symbol -> (type, state)
  ~GraphModel() override {
    for (auto& [d, s] : shared) s.second.release();
    if (graph) ccv_nnc_symbolic_graph_free(graph);
  }
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    const symbolic::Graph* g = graph;
    std::vector<Sym> map(g->tensors.size(), Sym{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
    for (size_t i = 0; i < inputs.size(); i++) map[static_cast<size_t>(inputs[i])] = in[i];
    int slot = 0;
    for (auto& [d, s] : shared) {
      const auto& t = g->tensors[static_cast<size_t>(d)];
      const ccv_nnc_tensor_param_t info = ccv_nnc_tensor_count(s.second.state.info) > 0 ? s.second.state.info : t.info;
      map[static_cast<size_t>(d)] = b.parameter(this, slot++, shared_decl(info, s.second.state, s.first));
    }
    // Every other live symbol gets a symbol of its own; bases first, then aliases.
    for (size_t d = 0; d < g->tensors.size(); d++) {
      const auto& t = g->tensors[d];
      if (map[d].d >= 0 || CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) || t.alias_of >= 0) continue;
      map[d] = b.tensor(t.info, t.name.empty() ? nullptr : t.name.c_str());
    }
    for (size_t d = 0; d < g->tensors.size(); d++) {
      const auto& t = g->tensors[d];
      if (map[d].d >= 0 || CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) || t.alias_of < 0) continue;
      const Sym base = map[static_cast<size_t>(t.alias_of)];
      NNC_CHECK(ccv_nnc_tensor_symbol_alias_to(b.graph, base).d < 0,
                "model %s: an alias in its graph views an input that is itself a view; make the input contiguous first",
                model_label(*this).c_str());
      map[d] = ccv_nnc_tensor_symbol_alias_new(b.graph, base, t.ofs, t.stride, t.info, nullptr);
      NNC_CHECK(map[d].d >= 0, "model %s: %s", model_label(*this).c_str(), error_message().c_str());
    }
    auto mapped = [&](const std::vector<int>& xs) {
      std::vector<Sym> r;
      for (int x : xs) r.push_back(x >= 0 ? map[static_cast<size_t>(x)] : Sym{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
      return r;
    };
    for (const auto& e : g->execs) {
      if (CCV_NNC_GRAPH_EXEC_IS_DEAD(e.flags)) continue;
      NNC_CHECK(e.subs.empty(), "model %s: its graph has a while or case..of sub-graph, which a model cannot hold yet", model_label(*this).c_str());
      auto x = b.exec(e.cmd, e.hint, mapped(e.inputs), mapped(e.outputs), e.name.empty() ? nullptr : e.name.c_str());
      if (e.flags & CCV_NNC_GRAPH_EXEC_DISABLE_OPT) ccv_nnc_graph_exec_symbol_set_flags(b.graph, x, CCV_NNC_GRAPH_EXEC_DISABLE_OPT);
    }
    out.clear();
    for (int o : outputs) out.push_back(map[static_cast<size_t>(o)]);
  }
  std::unique_ptr<Model> clone() const override {
    auto c = std::make_unique<GraphModel>(name.c_str());
    copy_common_to(*c);
    c->output_size = output_size;
    c->graph = ccv_nnc_symbolic_graph_dup(graph, nullptr);
    NNC_CHECK(c->graph, "copying model %s: %s", model_label(*this).c_str(), error_message().c_str());
    c->inputs = inputs, c->outputs = outputs;
    for (auto& [d, s] : shared) c->shared[d] = {s.first, s.second.copy()};
    return c;
  }
};

// ---------------------------------------------------------------------------

struct DebugContext {
  ccv_cnnp_model_debug_f func;
  void* context;
};

int debug_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
               ccv_nnc_tensor_t* const* const, const int, ccv_nnc_stream_context_t* const stream_context) {
  auto* d = static_cast<const DebugContext*>(cmd.data);
  if (d && d->func) d->func(inputs, input_size, stream_context, d->context);
  return CCV_NNC_EXEC_SUCCESS;
}

ccv_nnc_cmd_vtab_t g_debug_vtab = {debug_exec, nullptr};

struct Debug final : Model {
  Debug(const char* name) : Model("debug", name) {}
  std::unique_ptr<DebugContext> ctx;
  ccv_cnnp_model_debug_context_deinit_f deinit = nullptr;
  ccv_cnnp_model_debug_context_copy_f copy = nullptr;
  bool owned = true;
  ~Debug() override {
    if (owned && deinit && ctx->context) deinit(ctx->context);
  }
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    NNC_CHECK(!in.empty(), "model %s takes at least one input", model_label(*this).c_str());
    ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, &g_debug_vtab, ccv_nnc_cmd_auto, 0);
    c.data = ctx.get();
    // It reads the inputs and writes nothing: the first input passes through.
    b.exec(c, ccv_nnc_no_hint, in, {});
    out = {in[0]};
  }
  std::unique_ptr<Model> clone() const override {
    auto d = std::make_unique<Debug>(name.c_str());
    copy_common_to(*d);
    d->ctx = std::make_unique<DebugContext>(*ctx);
    d->deinit = deinit, d->copy = copy;
    d->owned = copy != nullptr;
    if (copy && ctx->context) d->ctx->context = copy(ctx->context);
    return d;
  }
};

// ccv_cnnp_cmd_exec_io_copy: the context is the caller's tensor.
void copy_init(const ccv_nnc_tensor_symbol_t symbol, const ccv_cnnp_state_initializer_f initializer, void* const initializer_context,
               void* const context) {
  initializer(initializer_context, ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0,
              static_cast<ccv_nnc_tensor_t*>(context), symbol);
}

// ccv_cnnp_cmd_exec_io_set_by: the context is a copy of the command.
struct SetBy {
  ccv_nnc_cmd_t cmd;
  ccv_nnc_hint_t hint;
  int flags;
};

void set_by_init(const ccv_nnc_tensor_symbol_t symbol, const ccv_cnnp_state_initializer_f initializer, void* const initializer_context,
                 void* const context) {
  const SetBy* s = static_cast<const SetBy*>(context);
  initializer(initializer_context, s->cmd, s->hint, s->flags, nullptr, symbol);
}
void* set_by_copy(void* const context) { return new SetBy(*static_cast<const SetBy*>(context)); }
void set_by_deinit(void* const context) { delete static_cast<SetBy*>(context); }

void check_state(const char* what, int i, const ccv_cnnp_cmd_exec_io_init_state_t& s) {
  NNC_CHECK(s.init, "%s: shared tensor %d has no initialiser (use ccv_cnnp_cmd_exec_io_copy or _set_by)", what, i);
  NNC_CHECK(ccv_nnc_tensor_count(s.info) > 0, "%s: shared tensor %d has no shape", what, i);
}

}  // namespace

Model* cmd_exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags, const ccv_cnnp_cmd_exec_io_t* inputs, int input_size,
                const int* outputs, int output_size, int is_trainable, const char* name) {
  const char* what = "ccv_cnnp_cmd_exec";
  NNC_CHECK(input_size >= 0 && (input_size == 0 || inputs), "%s: no inputs", what);
  NNC_CHECK(output_size > 0 && outputs, "%s: no outputs", what);
  auto m = std::make_unique<CmdExec>(name);
  m->cmd = cmd, m->hint = hint, m->flags = flags;
  m->is_trainable = is_trainable;
  int ios = 0;
  for (int i = 0; i < input_size; i++) {
    const int t = inputs[i].type;
    NNC_CHECK(t == CCV_CNNP_IO || t == CCV_CNNP_NO_TENSOR || is_shared(t), "%s: input %d has type %d", what, i, t);
    if (is_shared(t)) check_state(what, i, inputs[i].init_state);
    ios += t == CCV_CNNP_IO;
  }
  int outs = 0;
  for (int i = 0; i < output_size; i++) {
    const int t = outputs[i];
    NNC_CHECK(t == CCV_CNNP_IO || t == CCV_CNNP_NO_TENSOR || t == CCV_CNNP_TENSOR_NOT_OUTPUT, "%s: output %d has type %d", what, i, t);
    outs += t == CCV_CNNP_IO;
  }
  NNC_CHECK(outs > 0, "%s: none of the %d outputs is an io", what, output_size);
  // Taken over only once nothing can fail.
  for (int i = 0; i < input_size; i++) {
    m->in_types.push_back(inputs[i].type);
    m->states.push_back(is_shared(inputs[i].type) ? OwnedState(inputs[i].init_state) : OwnedState());
  }
  m->out_types.assign(outputs, outputs + output_size);
  m->input_size = ios;
  m->output_size = outs;
  return m.release();
}

Model* graph_model(const ccv_nnc_symbolic_graph_t* graph, const ccv_cnnp_tensor_symbol_param_t* params, int param_size,
                   const ccv_nnc_tensor_symbol_t* inputs, int input_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size, int is_trainable,
                   const char* name) {
  const char* what = "ccv_cnnp_graph";
  NNC_CHECK(graph, "%s: no graph", what);
  NNC_CHECK(param_size >= 0 && (param_size == 0 || params), "%s: no tensor symbol parameters", what);
  NNC_CHECK(input_size >= 0 && (input_size == 0 || inputs), "%s: no inputs", what);
  NNC_CHECK(output_size > 0 && outputs, "%s: no outputs", what);
  const symbolic::Graph* g = graph;
  auto valid = [&](const ccv_nnc_tensor_symbol_t& s, const char* role, int i) {
    NNC_CHECK(s.graph == graph && s.d >= 0 && static_cast<size_t>(s.d) < g->tensors.size() &&
                  !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(g->tensors[static_cast<size_t>(s.d)].flags),
              "%s: %s %d is not a live symbol of the graph", what, role, i);
  };
  auto m = std::make_unique<GraphModel>(name);
  m->is_trainable = is_trainable;
  for (int i = 0; i < input_size; i++) {
    valid(inputs[i], "input", i);
    m->inputs.push_back(inputs[i].d);
  }
  for (int i = 0; i < output_size; i++) {
    valid(outputs[i], "output", i);
    m->outputs.push_back(outputs[i].d);
  }
  std::vector<std::pair<int, ccv_cnnp_tensor_symbol_param_t>> shared;
  for (int i = 0; i < param_size; i++) {
    valid(params[i].symbol, "tensor symbol parameter", i);
    if (!is_shared(params[i].type)) continue;  // an io: an input or output listed above
    NNC_CHECK(params[i].init_state.init, "%s: shared tensor %d has no initialiser (use ccv_cnnp_cmd_exec_io_copy or _set_by)", what, i);
    shared.emplace_back(params[i].symbol.d, params[i]);
  }
  m->graph = ccv_nnc_symbolic_graph_dup(graph, nullptr);
  NNC_CHECK(m->graph, "%s: %s", what, error_message().c_str());
  for (auto& [d, p] : shared) m->shared[d] = {p.type, OwnedState(p.init_state)};
  m->input_size = input_size;
  m->output_size = output_size;
  return m.release();
}

Model* debug(ccv_cnnp_model_debug_f func, void* context, ccv_cnnp_model_debug_context_deinit_f deinit, ccv_cnnp_model_debug_context_copy_f copy,
             const char* name) {
  NNC_CHECK(func, "ccv_cnnp_debug: no function");
  auto d = std::make_unique<Debug>(name);
  d->ctx = std::make_unique<DebugContext>(DebugContext{func, context});
  d->deinit = deinit, d->copy = copy;
  d->input_size = -1;
  return d.release();
}

ccv_cnnp_cmd_exec_io_init_state_t cmd_exec_io_copy(const ccv_nnc_tensor_t* tensor) {
  NNC_CHECK(tensor, "ccv_cnnp_cmd_exec_io_copy: no tensor");
  ccv_cnnp_cmd_exec_io_init_state_t s{};
  s.info = tensor->info;
  s.context = const_cast<ccv_nnc_tensor_t*>(tensor);
  s.init = copy_init;
  return s;
}

ccv_cnnp_cmd_exec_io_init_state_t cmd_exec_io_set_by(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
                                                     const ccv_nnc_tensor_param_t& params) {
  ccv_cnnp_cmd_exec_io_init_state_t s{};
  s.info = params;
  s.context = new SetBy{cmd, hint, flags};
  s.init = set_by_init;
  s.copy = set_by_copy;
  s.deinit = set_by_deinit;
  return s;
}

}  // namespace nnc::cnnp
