// Models: composition, compilation into planned graphs, training and inference.
//
// Compile builds the model once into a scratch symbolic graph to learn its
// outputs and parameters, allocates the parameters and initialises the new
// ones. A run (fit, evaluate) then looks for a compiled graph (a Jit) made
// for its mode and shapes, and builds one when there is none:
//   inference  the model with is_test set, parameters bound;
//   fit        the model, the loss against the fits, its backward and one
//              minimiser exec per trainable parameter, all in one graph and
//              one arena, parameters and minimiser state bound (each update
//              writes the tensor it read, so nothing is copied);
//   staged     the model, its backward from gradients the caller gives and
//              a sum of each parameter's gradient, run in two parts by
//              evaluate(requires_grad) and backward; apply_gradients then runs
//              each parameter's minimiser on its summed gradient.
// The caller's input, fit and output tensors are bound to their symbols on
// each call (a pointer swap), never copied. A few Jits are cached, most
// recently used first, so alternating shapes (a short last batch) do not
// recompile.
#include "cnnp/model.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>

#include "cnnp/layers.hpp"
#include "core/error.hpp"
#include "core/splitmix.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc_easy.h"
#include "core/gpu_stream.hpp"
#include "core/stream.hpp"
#include "graph/graph.hpp"
#include "graph/schedule.hpp"
#include "symbolic/graph.hpp"
#include "symbolic/compile.hpp"
#include "symbolic/data_parallel.hpp"

namespace nnc::cnnp {

namespace {

// Public calls made from inside the library: their failure becomes ours.
template <class F>
auto checked(F&& f) {
  clear_error_message();
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    if (detail::t_guard.error_set) fail(CCV_NNC_EXEC_INVALID, "%s", error_message().c_str());
  } else {
    auto r = f();
    if (detail::t_guard.error_set) fail(CCV_NNC_EXEC_INVALID, "%s", error_message().c_str());
    return r;
  }
}

// Same type, layout and shape. Only the dimensions up to the rank count: a
// 3-d tensor keeps its matrix row step past them (the ccv_dense_matrix_t layout).
bool same_params(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  if (a.type != b.type || a.format != b.format || a.datatype != b.datatype) return false;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC; i++) {
    if (a.dim[i] != b.dim[i]) return false;
    if (a.dim[i] == 0) break;
  }
  return true;
}

std::string shape_string(const ccv_nnc_tensor_param_t& p) { return nnc::shape_string(p.dim); }

// Creation order of model ios (threads may build models at once).
std::atomic<uint64_t> g_io_sequence{0};

}  // namespace

TensorRef new_tensor(const ccv_nnc_tensor_param_t& info) {
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, info, 0);
  if (!t) fail(CCV_NNC_EXEC_OOM, "cannot allocate a tensor of shape %s: %s", shape_string(info).c_str(), error_message().c_str());
  return TensorRef(t, [](ccv_nnc_tensor_t* p) { ccv_nnc_tensor_free(p); });
}

void copy_values(ccv_nnc_tensor_t* src, ccv_nnc_tensor_t* dst, const char* what) {
  NNC_CHECK(ccv_nnc_tensor_count(src->info) == ccv_nnc_tensor_count(dst->info), "%s: %zu elements into %zu", what,
            static_cast<size_t>(ccv_nnc_tensor_count(src->info)), static_cast<size_t>(ccv_nnc_tensor_count(dst->info)));
  // Another type in another memory: converted where the source is, then moved
  // (no kernel converts and moves at once).
  if (src->info.datatype != dst->info.datatype && CCV_TENSOR_GET_MEMORY(src->info.type) != CCV_TENSOR_GET_MEMORY(dst->info.type)) {
    ccv_nnc_tensor_param_t q = src->info;
    q.datatype = dst->info.datatype;
    TensorRef mid = new_tensor(q);
    copy_values(src, mid.get(), what);
    copy_values(mid.get(), dst, what);
    return;
  }
  const uint32_t id = src->info.datatype == dst->info.datatype ? CCV_NNC_DATA_TRANSFER_FORWARD : CCV_NNC_DATATYPE_CONVERSION_FORWARD;
  const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd(id, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, 0, &src, 1, &dst, 1, nullptr);
  if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: %s", what, error_message().c_str());
}

std::string model_label(const Model& m) { return m.name.empty() ? std::string(m.kind) : m.name + " (" + m.kind + ")"; }

void expect_inputs(const Model& m, const std::vector<Sym>& in, int count) {
  NNC_CHECK(static_cast<int>(in.size()) == count, "model %s takes %d input%s, given %zu", model_label(m).c_str(), count,
            count == 1 ? "" : "s", in.size());
}

// ---------------------------------------------------------------------------
// Build

Sym Build::tensor(const ccv_nnc_tensor_param_t& info, const char* name) {
  Sym s = checked([&] { return ccv_nnc_tensor_symbol_new(graph, info, name); });
  NNC_CHECK(s.d >= 0, "cannot create a tensor symbol: %s", error_message().c_str());
  return s;
}

ccv_nnc_tensor_param_t Build::params(Sym s) const { return ccv_nnc_tensor_symbol_params(graph, s); }

ccv_nnc_graph_exec_symbol_t Build::exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const std::vector<Sym>& inputs,
                                        const std::vector<Sym>& outputs, const char* name) {
  auto e = checked([&] {
    return ccv_nnc_graph_exec_symbol_new(graph, cmd, inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                                         static_cast<int>(outputs.size()), name);
  });
  NNC_CHECK(e.d >= 0, "%s", error_message().c_str());
  if (std::memcmp(&hint, &ccv_nnc_no_hint, sizeof(hint)) != 0) checked([&] { ccv_nnc_graph_exec_symbol_set_hint(graph, e, hint); });
  return e;
}

std::vector<Sym> Build::apply(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const std::vector<Sym>& inputs, int output_count,
                              const char* name) {
  std::vector<ccv_nnc_tensor_param_t> ip(inputs.size()), op(static_cast<size_t>(output_count));
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].d >= 0) ip[i] = params(inputs[i]);
  ccv_nnc_hint_tensor_auto(cmd, ip.data(), static_cast<int>(ip.size()), hint, op.data(), output_count);
  std::vector<Sym> outs;
  for (auto& p : op) outs.push_back(ccv_nnc_tensor_count(p) > 0 ? tensor(p) : tensor_auto());
  exec(cmd, hint, inputs, outs, name);
  return outs;
}

namespace {
void packed_strides(const ccv_nnc_tensor_param_t& p, int* stride) {
  int st = 1;
  for (int i = dims_of(p) - 1; i >= 0; i--) {
    stride[i] = st;
    st *= p.dim[i];
  }
}
}  // namespace

Build::Place Build::place(Sym s) const {
  Place p;
  const auto info = params(s);
  const Sym to = ccv_nnc_tensor_symbol_alias_to(graph, s);
  if (to.d < 0) {
    p.base = s;
    packed_strides(info, p.stride);
    return p;
  }
  p.base = to;
  ccv_nnc_tensor_symbol_alias_params(graph, s, p.ofs, p.stride);
  const int n = dims_of(info);
  if (std::all_of(p.stride, p.stride + n, [](int v) { return v == 0; })) packed_strides(info, p.stride);  // a reshape
  return p;
}

bool Build::is_packed(Sym s) const {
  const Place p = place(s);
  const auto info = params(s);
  int want[CCV_NNC_MAX_DIM_ALLOC] = {0};
  packed_strides(info, want);
  for (int i = 0; i < dims_of(info); i++)
    if (info.dim[i] > 1 && p.stride[i] != want[i]) return false;
  return true;
}

Sym Build::reshape(Sym s, const ccv_nnc_tensor_param_t& info) {
  if (ccv_nnc_tensor_symbol_alias_to(graph, s).d >= 0 && !is_packed(s))
    s = apply(ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, {s}, 1)[0];
  const auto src = params(s);
  NNC_CHECK(ccv_nnc_tensor_count(src) == ccv_nnc_tensor_count(info), "reshape of %s into %s: the element counts differ",
            shape_string(src).c_str(), shape_string(info).c_str());
  const Place p = place(s);
  int offset = 0;
  for (int i = 0; i < dims_of(src); i++) offset += p.ofs[i] * p.stride[i];
  int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0}, stride[CCV_NNC_MAX_DIM_ALLOC] = {0};
  packed_strides(info, stride);
  ofs[dims_of(info) - 1] = offset;  // the view's first element, in the base's packed order
  Sym a = checked([&] { return ccv_nnc_tensor_symbol_alias_new(graph, p.base, ofs, stride, info, nullptr); });
  NNC_CHECK(a.d >= 0, "reshape: %s", error_message().c_str());
  return a;
}

std::string Build::label_of(const Model* m) {
  auto it = label_.find(m);
  if (it != label_.end()) return it->second;
  std::string l;
  if (!m->name.empty()) {
    l = m->name;
    int n = kind_count_["name:" + l]++;
    if (n > 0) l += format("_%d", n + 1);
  } else {
    l = format("%s_%d", m->kind, kind_count_[m->kind]++);
  }
  label_[m] = l;
  return l;
}

Sym Build::parameter(const Model* owner, int slot, const ParamDecl& decl) {
  auto key = std::make_pair(owner, slot);
  auto it = index_.find(key);
  if (it != index_.end()) {
    const Found& f = found[it->second];
    NNC_CHECK(same_params(f.decl.info, decl.info), "model %s: its %s is %s in one place and %s in another (a model applied twice must see the same shapes)",
              model_label(*owner).c_str(), decl.label, shape_string(f.decl.info).c_str(), shape_string(decl.info).c_str());
    return f.symbol;
  }
  // Trainable unless a model around it (or it) says 0; -1 inherits.
  bool trainable = decl.trainable;
  for (int t : trainable_)
    if (t == 0) trainable = false;
  std::string name = label_of(owner) + "." + decl.label;
  Sym s = tensor(decl.info, name.c_str());
  index_[key] = found.size();
  found.push_back({owner, slot, decl, trainable, s, name});
  return s;
}

Sym Build::parameter_update(const Model* owner, int slot) {
  auto it = index_.find(std::make_pair(owner, slot));
  NNC_CHECK(it != index_.end(), "model %s: parameter slot %d updated before it is declared", model_label(*owner).c_str(), slot);
  for (auto& u : updates) NNC_CHECK(u.first != it->second, "model %s: parameter %s updated twice in one graph", model_label(*owner).c_str(), found[it->second].name.c_str());
  Sym s = tensor(found[it->second].decl.info, (found[it->second].name + " updated").c_str());
  updates.emplace_back(it->second, s);
  return s;
}

void Build::run(Model* m, const std::vector<Sym>& in, std::vector<Sym>& out) {
  const bool checkpointed = m->gradient_checkpointing != 0;
  // A model that absorbed another builds as that one (ccv_cnnp_model_absorb).
  while (m->absorbed) m = m->absorbed;
  if (m->input_size >= 0) expect_inputs(*m, in, m->input_size);
  trainable_.push_back(m->is_trainable);
  out.clear();
  const int begin = ccv_nnc_graph_exec_symbol_count(graph);
  checkpoint_depth_ += checkpointed;
  m->build(*this, in, out);
  checkpoint_depth_ -= checkpointed;
  if (checkpointed && checkpoint_depth_ == 0) checkpoints.emplace_back(begin, ccv_nnc_graph_exec_symbol_count(graph));
  trainable_.pop_back();
  NNC_CHECK(static_cast<int>(out.size()) == m->output_size || m->output_size < 0, "model %s built %zu outputs, expected %d",
            model_label(*m).c_str(), out.size(), m->output_size);
}

// ---------------------------------------------------------------------------
// Composites

namespace {

struct Sequential final : Model {
  Sequential(const char* name) : Model("sequential", name) {}
  std::vector<std::unique_ptr<Model>> models;
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    std::vector<Sym> cur = in, next;
    for (auto& m : models) {
      b.run(m.get(), cur, next);
      cur.swap(next);
    }
    out = cur;
    output_size = static_cast<int>(out.size());
  }
  std::unique_ptr<Model> clone() const override {
    auto s = std::make_unique<Sequential>(name.c_str());
    copy_common_to(*s);
    for (auto& m : models) s->models.push_back(m->clone());
    s->output_size = output_size;
    return s;
  }
  void children(std::vector<Model*>& out) const override {
    for (auto& m : models) out.push_back(m.get());
  }
};

// Every io reachable from `outputs`, in creation order (a valid build order).
std::vector<Io*> reachable(const std::vector<Io*>& outputs) {
  std::set<Io*> seen;
  std::vector<Io*> stack(outputs.begin(), outputs.end()), all;
  while (!stack.empty()) {
    Io* io = stack.back();
    stack.pop_back();
    if (!io || !seen.insert(io).second) continue;
    all.push_back(io);
    for (Io* i : io->inputs) stack.push_back(i);
    for (Io* i : io->dependencies) stack.push_back(i);
  }
  std::sort(all.begin(), all.end(), [](Io* a, Io* b) { return a->sequence < b->sequence; });
  return all;
}

struct Functional final : Model {
  Functional(const char* name) : Model("functional", name) {}
  std::vector<std::unique_ptr<Io>> inputs;   // the ccv_cnnp_input()s, adopted
  std::vector<Io*> outputs;
  std::vector<std::unique_ptr<Model>> models;  // every model applied on the way, adopted

  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    NNC_CHECK(in.size() == inputs.size(), "model %s takes %zu inputs, given %zu", model_label(*this).c_str(), inputs.size(), in.size());
    for (size_t i = 0; i < inputs.size(); i++) inputs[i]->symbols = {in[i]};
    std::map<Io*, std::pair<int, int>> ranges;  // exec symbols each apply added
    for (Io* io : reachable(outputs)) {
      if (!io->model) {
        NNC_CHECK(!io->symbols.empty(), "model %s: an input it uses is not one of its inputs", model_label(*this).c_str());
        continue;
      }
      NNC_CHECK(!io->is_parameters, "model %s: parameters used as an input are not supported yet", model_label(*this).c_str());
      std::vector<Sym> args, res;
      for (Io* i : io->inputs) args.insert(args.end(), i->symbols.begin(), i->symbols.end());
      const int before = ccv_nnc_graph_exec_symbol_count(b.graph);
      b.run(io->model, args, res);
      const int after = ccv_nnc_graph_exec_symbol_count(b.graph);
      ranges[io] = {before, after};
      // Non-functional dependencies: what they added runs before what this adds.
      for (Io* d : io->dependencies) {
        auto r = ranges.find(d);
        if (r == ranges.end() || r->second.first == r->second.second || before == after) continue;
        for (int e = r->second.first; e < r->second.second; e++)
          ccv_nnc_graph_exec_symbol_concat(b.graph, {e, b.graph}, {before, b.graph});
      }
      io->symbols = res;
    }
    out.clear();
    for (Io* o : outputs) out.insert(out.end(), o->symbols.begin(), o->symbols.end());
    output_size = static_cast<int>(out.size());
    for (Io* io : reachable(outputs)) io->symbols.clear();
  }

  std::unique_ptr<Model> clone() const override {
    auto f = std::make_unique<Functional>(name.c_str());
    copy_common_to(*f);
    std::map<const Model*, Model*> mm;
    for (auto& m : models) {
      f->models.push_back(m->clone());
      mm[m.get()] = f->models.back().get();
    }
    std::map<const Io*, Io*> im;
    for (auto& i : inputs) {
      f->inputs.push_back(std::make_unique<Io>());
      f->inputs.back()->sequence = i->sequence;
      im[i.get()] = f->inputs.back().get();
    }
    for (Io* io : reachable(outputs)) {
      if (!io->model) continue;
      Model* nm = mm.at(io->model);
      nm->ios.push_back(std::make_unique<Io>());
      Io* n = nm->ios.back().get();
      n->model = nm;
      n->sequence = io->sequence;
      n->is_parameters = io->is_parameters;
      n->selector = io->selector;
      n->index = io->index;
      im[io] = n;
    }
    for (auto& [o, n] : im) {
      for (Io* i : o->inputs) n->inputs.push_back(im.at(i));
      for (Io* i : o->dependencies) n->dependencies.push_back(im.at(i));
    }
    for (Io* o : outputs) f->outputs.push_back(im.at(o));
    f->output_size = output_size;
    return f;
  }
  void children(std::vector<Model*>& out) const override {
    for (auto& m : models) out.push_back(m.get());
  }
};

// ccv_cnnp_dynamic_new: the model is made from the input shapes, again when they change.
struct Dynamic final : Model {
  Dynamic(ccv_cnnp_model_dynamic_f func, void* context, const char* name) : Model("dynamic", name, -1), func(func), context(context) {}
  ccv_cnnp_model_dynamic_f func;
  void* context;
  std::unique_ptr<Model> made;
  std::vector<ccv_nnc_tensor_param_t> made_for;
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override {
    std::vector<ccv_nnc_tensor_param_t> shapes;
    for (Sym s : in) shapes.push_back(b.params(s));
    bool same = made && shapes.size() == made_for.size();
    for (size_t i = 0; same && i < shapes.size(); i++) same = same_params(shapes[i], made_for[i]);
    if (!same) {
      Model* m = func(shapes.data(), static_cast<int>(shapes.size()), context);
      NNC_CHECK(m, "model %s: its function returned no model", model_label(*this).c_str());
      made.reset(m);
      made_for = shapes;
    }
    b.run(made.get(), in, out);
    output_size = static_cast<int>(out.size());
  }
  std::unique_ptr<Model> clone() const override {
    auto d = std::make_unique<Dynamic>(func, context, name.c_str());
    copy_common_to(*d);
    return d;
  }
  void children(std::vector<Model*>& out) const override {
    if (made) out.push_back(made.get());
  }
};

}  // namespace

std::unique_ptr<Model> Layer::clone() const {
  auto l = std::make_unique<Layer>(kind, name.c_str(), input_size, fn, output_size);
  copy_common_to(*l);
  if (on_copy) l->on_free = on_copy();
  l->on_copy = on_copy;
  return l;
}

Model* make_sequential(Model* const* models, int size, int is_trainable, const char* name) {
  for (int i = 0; i < size; i++) NNC_CHECK(models[i], "ccv_cnnp_sequential_new: model %d is NULL", i);
  auto s = std::make_unique<Sequential>(name);
  s->is_trainable = is_trainable;
  for (int i = 0; i < size; i++) s->models.emplace_back(models[i]);
  return s.release();
}

Io* make_input() {
  Io* io = new Io();
  io->sequence = ++g_io_sequence;
  return io;
}

Io* apply(Model* m, const ccv_cnnp_model_io_t* inputs, int size) {
  NNC_CHECK(m, "ccv_cnnp_model_apply: no model");
  NNC_CHECK(size >= 0 && (size == 0 || inputs), "ccv_cnnp_model_apply: no inputs");
  for (int i = 0; i < size; i++) NNC_CHECK(inputs[i], "ccv_cnnp_model_apply: input %d is NULL", i);
  auto io = std::make_unique<Io>();
  io->model = m;
  io->inputs.assign(inputs, inputs + size);
  io->sequence = ++g_io_sequence;
  m->ios.push_back(std::move(io));
  return m->ios.back().get();
}

Model* make_functional(const ccv_cnnp_model_io_t* inputs, int input_size, const ccv_cnnp_model_io_t* outputs, int output_size,
                       int is_trainable, const char* name) {
  const char* what = "ccv_cnnp_model_new";
  NNC_CHECK(input_size >= 0 && (input_size == 0 || inputs), "%s: no inputs", what);
  NNC_CHECK(output_size > 0 && outputs, "%s: no outputs", what);
  for (int i = 0; i < input_size; i++) NNC_CHECK(inputs[i] && !inputs[i]->model, "%s: input %d is not a ccv_cnnp_input()", what, i);
  for (int i = 0; i < output_size; i++) NNC_CHECK(outputs[i], "%s: output %d is NULL", what, i);
  std::vector<Io*> outs(outputs, outputs + output_size);
  std::set<Io*> declared(inputs, inputs + input_size);
  std::set<Model*> models;
  for (Io* io : reachable(outs)) {
    if (io->model) models.insert(io->model);
    else NNC_CHECK(declared.count(io), "%s: an output depends on an input that is not among the %d inputs given", what, input_size);
  }
  auto f = std::make_unique<Functional>(name);
  f->is_trainable = is_trainable;
  for (int i = 0; i < input_size; i++) f->inputs.emplace_back(inputs[i]);
  f->outputs = outs;
  // Each output io stands for all outputs of its model (until a build says exactly).
  f->output_size = 0;
  for (Io* o : outs) f->output_size += o->model ? std::max(o->model->output_size, 1) : 1;
  // Adopt in creation order of their first apply, so parameters are named in program order.
  std::vector<Model*> order(models.begin(), models.end());
  auto first = [](Model* m) {
    uint64_t s = UINT64_MAX;
    for (auto& io : m->ios) s = std::min(s, io->sequence);
    return s;
  };
  std::sort(order.begin(), order.end(), [&](Model* a, Model* b) { return first(a) < first(b); });
  for (Model* m : order) f->models.emplace_back(m);
  return f.release();
}

Model* make_dynamic(ccv_cnnp_model_dynamic_f func, void* context, const char* name) {
  NNC_CHECK(func, "ccv_cnnp_dynamic_new: no function");
  return new Dynamic(func, context, name);
}

// ---------------------------------------------------------------------------
// Compiled graphs

struct Jit {
  enum Mode { INFER, FIT, STAGED } mode = INFER;
  bool is_test = true;
  std::vector<ccv_nnc_tensor_param_t> key_inputs, key_fits;
  uint64_t disable_outgrad = 0;
  ccv_nnc_symbolic_graph_t* sg = nullptr;
  ccv_nnc_graph_t* graph = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  std::vector<Sym> inputs, outputs, fits;
  Sym loss{CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
  std::vector<Sym> seeds, outgrads;          // STAGED: gradients of the outputs (bound per call), of the inputs
  std::vector<TensorRef> ones;               // STAGED: the seed of an output given no gradient, per device (device-major)
  // STAGED: the two parts, as nodes of the compiled graph.
  std::vector<ccv_nnc_graph_exec_t> fwd_dst, bwd_src, bwd_dst;
  int scheduled_streams = 0;  // the default schedule's streams per device (0: none)
  ~Jit() {
    if (graph) ccv_nnc_graph_free(graph);
    if (ta) ccv_nnc_tensor_arena_free(ta);
    if (ea) ccv_nnc_graph_exec_arena_free(ea);
    if (sg) ccv_nnc_symbolic_graph_free(sg);
  }
};

Compiled::~Compiled() = default;

Compiled& compiled_queued(Model* m, const char* what) {
  NNC_CHECK(m, "%s: no model", what);
  NNC_CHECK(m->compiled, "%s: model %s is not compiled (call ccv_cnnp_model_compile first)", what, model_label(*m).c_str());
  return *m->compiled;
}

Compiled& compiled_of(Model* m, const char* what) {
  Compiled& c = compiled_queued(m, what);
  settle(m);
  return c;
}

void params_written(Model* m) {
  if (m && m->compiled) m->compiled->copies_stale = true;
}

namespace {

// The parameters and minimiser state copied to their copies on the other
// devices, where host code changed them since the last run.
// A parameter shared with another model (ccv_cnnp_model_share_parameters)
// may change whenever that model runs: its copies are refreshed every run.
void refresh_copies(Model* m) {
  if (m->parallel <= 1) return;  // one device: no copies in use (every step comes here)
  Compiled& c = *m->compiled;
  bool shared = false;
  for (const Param& p : c.params) shared = shared || (!p.copies.empty() && p.tensor.use_count() > 1);
  if (!c.copies_stale && !shared) return;
  settle(m);
  for (Param& p : c.params) {
    if (!c.copies_stale && p.tensor.use_count() <= 1) continue;
    for (auto& [d, t] : p.copies) copy_values(p.tensor.get(), t.get(), "ccv_cnnp_model_set_data_parallel: refreshing a parameter's copy");
    for (auto& [d, ts] : p.aux_copies)
      for (size_t a = 0; a < ts.size() && a < p.aux.size(); a++)
        copy_values(p.aux[a].get(), ts[a].get(), "ccv_cnnp_model_set_data_parallel: refreshing a minimiser state's copy");
  }
  c.copies_stale = false;
}

}  // namespace

void settle(Model* m) {
  if (!m || !m->pending) return;
  m->pending = false;  // a failed wait is reported once, by the call that waited
  signal_wait(nullptr, m->inflight);
}

ccv_nnc_stream_context_t* default_stream(Model* m) {
  if (!m->compiled || m->compiled->inputs.empty()) return nullptr;
  const int type = m->compiled->inputs[0].type;
  if (CCV_TENSOR_GET_MEMORY(type) != CCV_TENSOR_GPU_MEMORY) return nullptr;
  if (!m->default_stream) {
    int st = CCV_STREAM_CONTEXT_GPU;
    CCV_STREAM_SET_DEVICE_ID(st, CCV_TENSOR_GET_DEVICE_ID(type));
    m->default_stream = ccv_nnc_stream_context_new(st);
    NNC_CHECK(m->default_stream, "ccv_cnnp_model_default_stream: %s", error_message().c_str());
  }
  return m->default_stream;
}

void drop_jits(Model* m) {
  if (!m->compiled) return;
  m->compiled->jits.clear();
  m->compiled->staged = nullptr;
  m->compiled->staged_state = 0;
}

namespace {

void initialise(Param& p, SplitMix64& rng) {
  ccv_nnc_tensor_t* t = p.tensor.get();
  const size_t n = ccv_nnc_tensor_count(t->info);
  const Init& in = p.decl.init;
  // Values are drawn on the host, in fp64 or fp32, and copied (converted,
  // moved to the GPU) into the parameter when it is not such a CPU tensor.
  auto fill = [&](auto gen) {
    const bool direct = CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_CPU_MEMORY &&
                        (t->info.datatype == CCV_32F || t->info.datatype == CCV_64F);
    TensorRef host;
    ccv_nnc_tensor_t* h = t;
    if (!direct) {
      ccv_nnc_tensor_param_t q = t->info;
      q.type = CCV_TENSOR_CPU_MEMORY;
      if (q.datatype != CCV_64F) q.datatype = CCV_32F;
      host = new_tensor(q);
      h = host.get();
    }
    if (h->info.datatype == CCV_32F) {
      for (size_t i = 0; i < n; i++) h->data.f32[i] = static_cast<float>(gen());
    } else {
      for (size_t i = 0; i < n; i++) h->data.f64[i] = gen();
    }
    if (!direct) copy_values(h, t, format("initialising %s", p.name.c_str()).c_str());
  };
  switch (in.kind) {
    case Init::ZEROS: fill([] { return 0.0; }); break;
    case Init::CONSTANT: fill([&] { return static_cast<double>(in.a); }); break;
    case Init::UNIFORM: fill([&] { return in.a + (static_cast<double>(in.b) - in.a) * rng.uniform(); }); break;
    case Init::NORMAL:
      fill([&] {
        double u1 = rng.uniform(), u2 = rng.uniform();
        if (u1 < 1e-300) u1 = 1e-300;
        return in.a + in.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      });
      break;
    case Init::COPY: {
      NNC_CHECK(in.from, "initialising %s: no tensor to copy", p.name.c_str());
      copy_values(const_cast<ccv_nnc_tensor_t*>(in.from), t, format("initialising %s", p.name.c_str()).c_str());
      break;
    }
    case Init::CALLBACK: {
      struct Ctx {
        ccv_nnc_tensor_t* target;
        const char* name;
        int code = CCV_NNC_EXEC_SUCCESS;
      } ctx{t, p.name.c_str()};
      auto initializer = [](void* c, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const input,
                            const ccv_nnc_tensor_symbol_t) {
        Ctx* x = static_cast<Ctx*>(c);
        ccv_nnc_tensor_t* out = x->target;
        x->code = ccv_nnc_cmd_exec(cmd, hint, flags, &input, input ? 1 : 0, &out, 1, nullptr);
      };
      NNC_CHECK(in.state.init, "initialising %s: no initialiser", p.name.c_str());
      in.state.init({0, nullptr}, initializer, &ctx, in.state.context);
      NNC_CHECK(ctx.code == CCV_NNC_EXEC_SUCCESS, "initialising %s: %s", p.name.c_str(), error_message().c_str());
      break;
    }
  }
  p.initialized = true;
}

bool is_noop(const ccv_nnc_cmd_t& c) { return c.cmd == CCV_NNC_NOOP || c.cmd == 0; }

// The minimiser's saved state of a parameter, zeros when it is new or when
// the minimiser keeps another number of tensors.
void ensure_aux(Param& p, int aux) {
  if (p.aux.size() == static_cast<size_t>(aux)) return;
  p.aux.clear();
  for (int a = 0; a < aux; a++) {
    p.aux.push_back(new_tensor(p.tensor->info));
    ccv_nnc_tensor_zero(p.aux.back().get());
  }
}

bool is_minimizer(uint32_t id) {
  return id == CCV_NNC_SGD_FORWARD || id == CCV_NNC_ADAM_FORWARD || id == CCV_NNC_ADAMW_FORWARD || id == CCV_NNC_RMSPROP_FORWARD ||
         id == CCV_NNC_LAMB_FORWARD;
}

// The loss commands with a second output (the softmax or sigmoid they compute on the way).
int loss_outputs(const ccv_nnc_cmd_t& c) {
  return c.cmd == CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD || c.cmd == CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD ? 2 : 1;
}

// Build the model into a fresh graph and match what it declares to the compiled parameters.
std::vector<size_t> build_into(Model* m, Jit& j, Build& b) {
  for (size_t i = 0; i < j.key_inputs.size(); i++) j.inputs.push_back(b.tensor(j.key_inputs[i], "input"));
  b.run(m, j.inputs, j.outputs);
  // The caller's output tensors are bound to the outputs: an output that is a
  // view, an input, a parameter or another output gets a copy of its own.
  std::set<int> taken;
  for (Sym in : j.inputs) taken.insert(in.d);
  for (auto& f : b.found) taken.insert(f.symbol.d);
  for (auto& o : j.outputs) {
    if (ccv_nnc_tensor_symbol_alias_to(b.graph, o).d >= 0 || !taken.insert(o.d).second) {
      o = b.apply(ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, {o}, 1, "output copy")[0];
      taken.insert(o.d);
    }
  }
  Compiled& c = *m->compiled;
  std::vector<size_t> which;
  for (auto& f : b.found) {
    size_t k = 0;
    while (k < c.params.size() && !(c.params[k].owner == f.owner && c.params[k].slot == f.slot)) k++;
    NNC_CHECK(k < c.params.size(), "model %s: parameter %s appeared after compile (the model changed?)", model_label(*m).c_str(), f.name.c_str());
    NNC_CHECK(same_params(c.params[k].tensor->info, f.decl.info), "model %s: parameter %s has shape %s here, %s at compile",
              model_label(*m).c_str(), f.name.c_str(), shape_string(f.decl.info).c_str(), shape_string(c.params[k].tensor->info).c_str());
    which.push_back(k);
  }
  return which;
}

// What a bind of a compiled graph is, for data parallelism over devices
// (spread): the parameter's index and -1 (the parameter) or the index of its
// minimiser state.
using Roles = std::vector<std::pair<size_t, int>>;

// The parameters (and the symbols that update them in place) bound to the
// model's tensors, with what each bind is in `roles`.
std::vector<ccv_nnc_tensor_bind_t> parameter_binds(const Build& b, const std::vector<size_t>& which, const Compiled& c, Roles& roles) {
  std::vector<ccv_nnc_tensor_bind_t> binds;
  for (size_t i = 0; i < which.size(); i++) {
    binds.push_back({b.found[i].symbol, c.params[which[i]].tensor.get()});
    roles.emplace_back(which[i], -1);
  }
  for (auto& [i, sym] : b.updates) {
    binds.push_back({sym, c.params[which[i]].tensor.get()});
    roles.emplace_back(which[i], -1);
  }
  return binds;
}

void compile_jit(Model* m, Jit& j, std::vector<ccv_nnc_tensor_bind_t>& binds, std::vector<Sym> keep) {
  Compiled& c = *m->compiled;
  checked([&] { ccv_nnc_graph_exec_symbol_autogen(j.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS); });
  keep.insert(keep.end(), j.outputs.begin(), j.outputs.end());
  checked([&] {
    ccv_nnc_symbolic_graph_compile(j.sg, c.compile_params, binds.data(), static_cast<int>(binds.size()), keep.data(),
                                   static_cast<int>(keep.size()), ccv_nnc_symbolic_graph_sources(j.sg), ccv_nnc_symbolic_graph_source_size(j.sg),
                                   ccv_nnc_symbolic_graph_destinations(j.sg), ccv_nnc_symbolic_graph_destination_size(j.sg), &j.graph, &j.ta, &j.ea);
  });
  NNC_CHECK(j.graph && j.ta && j.ea, "model %s: compiling its graph failed: %s", model_label(*m).c_str(), error_message().c_str());
}

// The graph's own GPU (where its inputs are).
int graph_device(const Jit& j) {
  const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(j.sg, j.inputs.at(0));
  return CCV_TENSOR_GET_MEMORY(p.type) == CCV_TENSOR_GPU_MEMORY ? CCV_TENSOR_GET_DEVICE_ID(p.type) : -1;
}

// The symbol standing for `s` on `device` (s itself on the graph's own).
Sym on_device(const Jit& j, Sym s, int device) {
  if (device == graph_device(j)) return s;
  return ccv_nnc_tensor_symbol_copy(j.sg, s, device);
}

// A parameter's tensor (aux < 0) or minimiser state `aux` on `device`, made
// on first use: the parameter's own device gives its own tensors; another
// gets copies, the state copied from the parameter's (the parameter itself
// is broadcast by the graph every run).
ccv_nnc_tensor_t* param_on(Param& p, int aux, int device) {
  if (CCV_TENSOR_GET_DEVICE_ID(p.tensor->info.type) == device) return aux < 0 ? p.tensor.get() : p.aux[static_cast<size_t>(aux)].get();
  auto with_device = [device](ccv_nnc_tensor_param_t info) {
    CCV_TENSOR_SET_DEVICE_ID(info.type, device);
    return info;
  };
  if (aux < 0) {
    for (auto& [d, t] : p.copies)
      if (d == device) return t.get();
    p.copies.emplace_back(device, new_tensor(with_device(p.tensor->info)));
    copy_values(p.tensor.get(), p.copies.back().second.get(), "ccv_cnnp_model_set_data_parallel: copying a parameter");
    return p.copies.back().second.get();
  }
  for (auto& [d, ts] : p.aux_copies)
    if (d == device && ts.size() == p.aux.size()) return ts[static_cast<size_t>(aux)].get();
  std::vector<TensorRef> ts;
  for (auto& a : p.aux) {
    ts.push_back(new_tensor(with_device(a->info)));
    copy_values(a.get(), ts.back().get(), "ccv_cnnp_model_set_data_parallel: copying a minimiser's state");
  }
  p.aux_copies.erase(std::remove_if(p.aux_copies.begin(), p.aux_copies.end(), [&](const auto& x) { return x.first == device; }),
                     p.aux_copies.end());
  p.aux_copies.emplace_back(device, std::move(ts));
  return p.aux_copies.back().second[static_cast<size_t>(aux)].get();
}

// ccv_cnnp_model_set_data_parallel: the graph copied over the devices, the
// parameters that are not trainable broadcast from the graph's device (the
// trainable ones are kept equal by equal updates), the gradients (`grads`)
// summed over the devices before the minimisers read them; then each bind of
// a parameter or minimiser state gets its copy on every other device.
// `roles` says what each bind is: the parameter index and -1 (the
// parameter) or the state index.
void spread(Model* m, Jit& j, const Build& b, const std::vector<size_t>& which, const std::vector<Sym>& grads,
            std::vector<ccv_nnc_tensor_bind_t>& binds, const Roles& roles) {
  Compiled& c = *m->compiled;
  const int device = graph_device(j);
  NNC_CHECK(device >= 0, "model %s: data parallelism over %d devices needs the model's inputs on a GPU (they are in CPU memory)",
            model_label(*m).c_str(), m->parallel);
  std::vector<Sym> params;
  for (size_t i = 0; i < which.size(); i++)
    if (!b.found[i].trainable) params.push_back(b.found[i].symbol);
  checked([&] { ccv_nnc_graph_exec_symbol_autogen(j.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS); });
  checked([&] {
    ccv_nnc_symbolic_graph_data_parallel(j.sg, m->parallel, params.data(), static_cast<int>(params.size()), grads.data(),
                                         static_cast<int>(grads.size()), nullptr, nullptr, 0, nullptr, CCV_NNC_PARALLEL_REDUCE_OP_SUM,
                                         ccv_nnc_symbolic_graph_sources(j.sg), ccv_nnc_symbolic_graph_source_size(j.sg),
                                         ccv_nnc_symbolic_graph_destinations(j.sg), ccv_nnc_symbolic_graph_destination_size(j.sg));
  });
  const size_t n = binds.size();
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < m->parallel; d++) {
      if (d == device) continue;
      const Sym s = ccv_nnc_tensor_symbol_copy(j.sg, binds[i].symbol, d);
      if (s.d < 0) continue;  // not used by the graph
      binds.push_back({s, param_on(c.params[roles[i].first], roles[i].second, d)});
    }
}

std::unique_ptr<Jit> make_infer(Model* m, const std::vector<ccv_nnc_tensor_param_t>& shapes, bool is_test) {
  auto j = std::make_unique<Jit>();
  j->mode = Jit::INFER;
  j->is_test = is_test;
  j->key_inputs = shapes;
  j->sg = ccv_nnc_symbolic_graph_new();
  Build b(j->sg, is_test);
  auto which = build_into(m, *j, b);
  Compiled& c = *m->compiled;
  Roles roles;
  std::vector<ccv_nnc_tensor_bind_t> binds = parameter_binds(b, which, c, roles);
  if (m->parallel > 1) spread(m, *j, b, which, {}, binds, roles);
  compile_jit(m, *j, binds, {});
  return j;
}

// Gradient checkpointing: the backward execs that read values computed
// inside a checkpointed model's range read copies recomputed just before the
// backward reaches that model (after the gradients of the range's outputs
// exist), so the forward's own values die inside the forward. Ranges whose
// values are views, or that draw random numbers (a recompute would draw
// others), are refused with a message.
void recompute_checkpoints(Model* m, Jit& j, Build& b, int forward_end) {
  symbolic::Graph* g = j.sg;
  const int total = ccv_nnc_graph_exec_symbol_count(j.sg);
  std::set<int> kept;
  for (Sym o : j.outputs) kept.insert(o.d);
  for (auto [begin, end] : b.checkpoints) {
    std::set<int> produced;
    for (int e = begin; e < end; e++) {
      const auto& x = g->execs[static_cast<size_t>(e)];
      NNC_CHECK(x.cmd.cmd != CCV_NNC_DROPOUT_FORWARD && x.cmd.cmd != CCV_NNC_RANDOM_UNIFORM_FORWARD && x.cmd.cmd != CCV_NNC_RANDOM_NORMAL_FORWARD,
                "model %s: gradient checkpointing over a random command (%s) would recompute other numbers", model_label(*m).c_str(),
                ccv_nnc_cmd_name(x.cmd.cmd));
      for (int d : x.outputs)
        if (d >= 0) produced.insert(d);
    }
    std::set<int> boundary;
    for (int d : produced) {
      const auto& t = g->tensors[static_cast<size_t>(d)];
      NNC_CHECK(t.alias_of < 0 && t.aliases.empty(), "model %s: gradient checkpointing over views (%s) is not supported yet", model_label(*m).c_str(),
                symbolic::tensor_label(g, d).c_str());
      if (kept.count(d)) boundary.insert(d);
    }
    for (int e = 0; e < forward_end; e++) {
      if (e >= begin && e < end) continue;
      for (int d : g->execs[static_cast<size_t>(e)].inputs)
        if (produced.count(d)) boundary.insert(d);
    }
    std::vector<int> readers;
    for (int e = forward_end; e < total; e++)
      for (int d : g->execs[static_cast<size_t>(e)].inputs)
        if (produced.count(d) && !boundary.count(d)) {
          readers.push_back(e);
          break;
        }
    if (readers.empty()) continue;
    // Recompute, into fresh symbols, only the execs the backward's values need.
    std::set<int> needed;
    for (int e : readers)
      for (int d : g->execs[static_cast<size_t>(e)].inputs)
        if (produced.count(d) && !boundary.count(d)) needed.insert(d);
    std::vector<char> recompute(static_cast<size_t>(end - begin), 0);
    for (int e = end - 1; e >= begin; e--) {
      const auto& x = g->execs[static_cast<size_t>(e)];
      bool need = false;
      for (int d : x.outputs) need = need || (d >= 0 && needed.count(d));
      if (!need) continue;
      recompute[static_cast<size_t>(e - begin)] = 1;
      for (int d : x.inputs)
        if (d >= 0 && produced.count(d)) needed.insert(d);
    }
    std::map<int, int> copy;
    std::vector<ccv_nnc_graph_exec_symbol_t> recomputed;
    for (int e = begin; e < end; e++) {
      if (!recompute[static_cast<size_t>(e - begin)]) continue;
      const ccv_nnc_cmd_t cmd = g->execs[static_cast<size_t>(e)].cmd;
      const ccv_nnc_hint_t hint = g->execs[static_cast<size_t>(e)].hint;
      const std::vector<int> ins = g->execs[static_cast<size_t>(e)].inputs, outs = g->execs[static_cast<size_t>(e)].outputs;
      std::vector<Sym> a, r;
      for (int d : ins) a.push_back({d >= 0 && copy.count(d) ? copy[d] : d, j.sg});
      for (int d : outs) {
        if (d < 0) {
          r.push_back({CCV_NNC_NO_TENSOR_SYMBOL, j.sg});
          continue;
        }
        Sym n = b.tensor(g->tensors[static_cast<size_t>(d)].info);
        copy[d] = n.d;
        r.push_back(n);
      }
      recomputed.push_back(b.exec(cmd, hint, a, r, "recompute"));
    }
    // Just in time: after the gradients of the range's outputs are computed.
    for (int d : boundary) {
      const Sym grad = ccv_nnc_tensor_symbol_for_backward(j.sg, {d, j.sg});
      if (grad.d < 0) continue;
      const ccv_nnc_graph_exec_symbol_t w = ccv_nnc_graph_exec_symbol_for_backward(j.sg, grad);
      if (w.d < 0) continue;
      for (auto& x : recomputed) ccv_nnc_graph_exec_symbol_concat(j.sg, w, x);
    }
    for (int e : readers) {
      std::vector<Sym> a, r;
      for (int d : g->execs[static_cast<size_t>(e)].inputs)
        a.push_back({d >= 0 && !boundary.count(d) && copy.count(d) ? copy[d] : d, j.sg});
      for (int d : g->execs[static_cast<size_t>(e)].outputs) r.push_back({d, j.sg});
      checked([&] {
        ccv_nnc_graph_exec_symbol_set_io(j.sg, {e, j.sg}, a.data(), static_cast<int>(a.size()), r.data(), static_cast<int>(r.size()));
      });
    }
  }
}

std::unique_ptr<Jit> make_fit(Model* m, const std::vector<ccv_nnc_tensor_param_t>& shapes, const std::vector<ccv_nnc_tensor_param_t>& fit_shapes) {
  Compiled& c = *m->compiled;
  auto j = std::make_unique<Jit>();
  j->mode = Jit::FIT;
  j->is_test = false;
  j->key_inputs = shapes;
  j->key_fits = fit_shapes;
  j->sg = ccv_nnc_symbolic_graph_new();
  Build b(j->sg, false);
  auto which = build_into(m, *j, b);
  NNC_CHECK(!j->outputs.empty(), "model %s has no output to fit", model_label(*m).c_str());
  if (is_noop(c.loss)) {
    NNC_CHECK(fit_shapes.empty(), "model %s was compiled without a loss, so its first output is the loss; fit takes no fit tensors (given %zu)",
              model_label(*m).c_str(), fit_shapes.size());
    j->loss = j->outputs[0];
  } else {
    NNC_CHECK(!fit_shapes.empty(), "model %s: fit needs the targets of its loss (no fit tensors given)", model_label(*m).c_str());
    std::vector<Sym> ins = {j->outputs[0]};
    for (auto& p : fit_shapes) {
      j->fits.push_back(b.tensor(p, "fit"));
      ins.push_back(j->fits.back());
    }
    j->loss = b.tensor_auto();
    std::vector<Sym> outs = {j->loss};
    if (loss_outputs(c.loss) == 2) outs.push_back(b.tensor_auto());
    b.exec(c.loss, ccv_nnc_no_hint, ins, outs, "loss");
  }
  const int forward_end = ccv_nnc_graph_exec_symbol_count(j->sg);
  // The trainable parameters get one minimiser exec each.
  std::vector<Sym> train;
  std::vector<size_t> train_index;
  for (size_t i = 0; i < which.size(); i++)
    if (b.found[i].trainable && c.params[which[i]].trainable) {
      train.push_back(b.found[i].symbol);
      train_index.push_back(which[i]);
    }
  Roles roles;
  std::vector<ccv_nnc_tensor_bind_t> binds = parameter_binds(b, which, c, roles);
  std::vector<Sym> grads;  // of the trained parameters, for data parallelism over devices
  if (!train.empty()) {
    checked([&] { ccv_nnc_graph_exec_symbol_autogen(j->sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS); });
    const int aux = ccv_nnc_minimizer_saved_aux_size(c.minimizer);
    NNC_CHECK(aux >= 0, "model %s: the minimiser is not one (%s)", model_label(*m).c_str(), ccv_nnc_cmd_name(c.minimizer.cmd));
    std::vector<Sym> updated(train.size());
    std::vector<ccv_nnc_tensor_symbol_map_t> saved(train.size() * static_cast<size_t>(aux));
    std::vector<ccv_nnc_graph_exec_symbol_t> execs(train.size());
    checked([&] {
      ccv_nnc_symbolic_graph_minimize(j->sg, c.minimizer, &j->loss, 1, train.data(), static_cast<int>(train.size()), nullptr, 0,
                                      ccv_nnc_symbolic_graph_sources(j->sg), ccv_nnc_symbolic_graph_source_size(j->sg),
                                      ccv_nnc_symbolic_graph_destinations(j->sg), ccv_nnc_symbolic_graph_destination_size(j->sg), nullptr,
                                      updated.data(), saved.data(), execs.data());
    });
    // A loss per sample is seeded with ones: the gradient of the sum, as libnnc's fit
    // does (a minimiser's `scale`, such as SGD's, turns it into a mean).
    Sym seed = ccv_nnc_tensor_symbol_for_backward(j->sg, j->loss);
    if (seed.d >= 0 && ccv_nnc_tensor_count(b.params(j->loss)) > 1)
      checked([&] { ccv_nnc_tensor_symbol_set_flags(j->sg, seed, CCV_NNC_TENSOR_SYMBOL_INIT_ONES); });
    // Across processes: each gradient averaged before its minimiser reads it.
    if (averages(m)) {
      std::vector<Sym> grads;
      for (Sym t : train) {
        const Sym g = ccv_nnc_tensor_symbol_for_backward(j->sg, t);
        if (g.d >= 0) grads.push_back(g);
      }
      checked([&] {
        ccv_nnc_symbolic_graph_data_parallel_comm(j->sg, m->comm, grads.data(), static_cast<int>(grads.size()), nullptr,
                                                  m->comm_bucket_bytes);
      });
    }
    for (size_t i = 0; i < train.size(); i++) {
      Param& p = c.params[train_index[i]];
      if (p.minimizer.cmd != c.minimizer.cmd || std::memcmp(&p.minimizer.info, &c.minimizer.info, sizeof(p.minimizer.info)) != 0)
        checked([&] { ccv_nnc_graph_exec_symbol_set(j->sg, execs[i], p.minimizer); });
      binds.push_back({updated[i], p.tensor.get()});
      roles.emplace_back(train_index[i], -1);
      ensure_aux(p, aux);
      for (int a = 0; a < aux; a++) {
        binds.push_back({saved[i * aux + a].source, p.aux[a].get()});
        binds.push_back({saved[i * aux + a].destination, p.aux[a].get()});
        roles.emplace_back(train_index[i], a);
        roles.emplace_back(train_index[i], a);
      }
      const Sym g = ccv_nnc_tensor_symbol_for_backward(j->sg, train[i]);
      if (g.d >= 0) grads.push_back(g);
    }
  }
  if (!b.checkpoints.empty()) recompute_checkpoints(m, *j, b, forward_end);
  if (m->parallel > 1) spread(m, *j, b, which, grads, binds, roles);
  compile_jit(m, *j, binds, {j->loss});
  return j;
}

// Forward, then the backward of the outputs with respect to the trainable
// parameters (and the inputs whose outgrad is enabled), then one EWSUM per
// parameter adding its gradient into Param::gradient (bound in and out, so
// gradients accumulate over backward calls until apply_gradients). Run in two
// parts of one compiled graph, so the forward values the backward reads stay
// where the forward left them.
std::unique_ptr<Jit> make_staged(Model* m, const std::vector<ccv_nnc_tensor_param_t>& shapes, bool is_test, uint64_t disable_outgrad) {
  Compiled& c = *m->compiled;
  auto j = std::make_unique<Jit>();
  j->mode = Jit::STAGED;
  j->is_test = is_test;
  j->key_inputs = shapes;
  j->disable_outgrad = disable_outgrad;
  j->sg = ccv_nnc_symbolic_graph_new();
  Build b(j->sg, is_test);
  auto which = build_into(m, *j, b);
  NNC_CHECK(!j->outputs.empty(), "model %s has no output to differentiate", model_label(*m).c_str());
  const int forward_end = ccv_nnc_graph_exec_symbol_count(j->sg);
  std::vector<Sym> wrt;
  std::vector<size_t> train_index;
  for (size_t i = 0; i < which.size(); i++)
    if (b.found[i].trainable && c.params[which[i]].trainable) {
      wrt.push_back(b.found[i].symbol);
      train_index.push_back(which[i]);
    }
  std::vector<int> input_wrt;
  for (size_t i = 0; i < j->inputs.size(); i++) {
    const bool off = i < 64 && (disable_outgrad >> i) & 1;
    const int dt = j->key_inputs[i].datatype;
    if (!off && (dt == CCV_32F || dt == CCV_64F || dt == CCV_16F || dt == CCV_16BF)) {
      input_wrt.push_back(static_cast<int>(i));
      wrt.push_back(j->inputs[i]);
    }
  }
  NNC_CHECK(!wrt.empty(), "model %s: nothing to differentiate (no trainable parameter, every outgrad disabled)", model_label(*m).c_str());
  checked([&] { ccv_nnc_graph_exec_symbol_autogen(j->sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS); });
  checked([&] {
    ccv_nnc_symbolic_graph_backward(j->sg, j->outputs.data(), static_cast<int>(j->outputs.size()), wrt.data(), static_cast<int>(wrt.size()),
                                    ccv_nnc_symbolic_graph_sources(j->sg), ccv_nnc_symbolic_graph_source_size(j->sg),
                                    ccv_nnc_symbolic_graph_destinations(j->sg), ccv_nnc_symbolic_graph_destination_size(j->sg));
  });
  // The seeds are always bound (to the caller's gradients or to ones), never set by the graph.
  for (Sym o : j->outputs) {
    Sym seed = ccv_nnc_tensor_symbol_for_backward(j->sg, o);
    NNC_CHECK(seed.d >= 0, "model %s: an output has no gradient symbol", model_label(*m).c_str());
    checked([&] { ccv_nnc_tensor_symbol_set_flags(j->sg, seed, 0); });
    j->seeds.push_back(seed);
  }
  const int own_device = m->parallel > 1 ? graph_device(*j) : -1;
  for (int d = 0; d < std::max(m->parallel, 1); d++)
    for (Sym o : j->outputs) {
      ccv_nnc_tensor_param_t info = b.params(o);
      if (m->parallel > 1) CCV_TENSOR_SET_DEVICE_ID(info.type, d);
      j->ones.push_back(new_tensor(info));
      ccv_nnc_tensor_t* one = j->ones.back().get();
      NNC_CHECK(one->info.datatype == CCV_64F || one->info.datatype == CCV_32F,
                "model %s: backward without output gradients needs fp32 or fp64 outputs", model_label(*m).c_str());
      // Ones by SET_FORWARD: the output may live on a GPU.
      ccv_nnc_cmd_param_t set;
      std::memset(&set, 0, sizeof(set));
      set.blas.a[0] = 1;
      const int r = ccv_nnc_cmd_exec(ccv_nnc_cmd(CCV_NNC_SET_FORWARD, nullptr, set, 0), ccv_nnc_no_hint, 0, nullptr, 0, &one, 1, nullptr);
      NNC_CHECK(r == CCV_NNC_EXEC_SUCCESS, "model %s: setting an output's seed gradient to ones: %s", model_label(*m).c_str(),
                error_message().c_str());
    }
  Roles roles;
  std::vector<ccv_nnc_tensor_bind_t> binds = parameter_binds(b, which, c, roles);
  std::vector<Sym> grads;  // the gradients the accumulators read (summed over devices first)
  std::vector<ccv_nnc_graph_exec_symbol_t> accumulators;
  std::vector<ccv_nnc_tensor_bind_t> accumulator_binds;
  for (size_t k = 0; k < train_index.size(); k++) {
    Param& p = c.params[train_index[k]];
    Sym g = ccv_nnc_tensor_symbol_for_backward(j->sg, wrt[k]);
    if (g.d < 0) continue;  // the outputs do not depend on it
    if (!p.gradient) {
      p.gradient = new_tensor(p.tensor->info);
      ccv_nnc_tensor_zero(p.gradient.get());
    }
    Sym acc = b.tensor(p.tensor->info, (p.name + " gradient").c_str());
    Sym sum = b.tensor(p.tensor->info, (p.name + " gradient sum").c_str());
    accumulators.push_back(
        b.exec(ccv_nnc_cmd(CCV_NNC_EWSUM_FORWARD, nullptr, ccv_nnc_cmd_auto, 0), ccv_nnc_no_hint, {acc, g}, {sum}, "accumulate"));
    grads.push_back(g);
    accumulator_binds.push_back({acc, p.gradient.get()});
    accumulator_binds.push_back({sum, p.gradient.get()});
  }
  for (int i : input_wrt) {
    Sym g = ccv_nnc_tensor_symbol_for_backward(j->sg, j->inputs[static_cast<size_t>(i)]);
    j->outgrads.resize(j->inputs.size(), Sym{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
    j->outgrads[static_cast<size_t>(i)] = g;
  }
  if (!b.checkpoints.empty()) recompute_checkpoints(m, *j, b, forward_end);
  const int n_exec = ccv_nnc_graph_exec_symbol_count(j->sg);
  if (m->parallel > 1) {
    // Over several devices: the graph copied onto each, the gradients summed
    // over the devices before the accumulators read them, and only the
    // graph's own device accumulates (apply_gradients updates its parameters
    // and marks the other devices' copies stale: the next run refreshes them).
    spread(m, *j, b, which, grads, binds, roles);
    for (auto e : accumulators)
      for (int d = 0; d < m->parallel; d++) {
        if (d == own_device) continue;
        const ccv_nnc_graph_exec_symbol_t copy = ccv_nnc_graph_exec_symbol_copy(j->sg, e, d);
        if (copy.d >= 0) ccv_nnc_graph_exec_symbol_free(j->sg, copy);
      }
  }
  binds.insert(binds.end(), accumulator_binds.begin(), accumulator_binds.end());
  std::vector<Sym> keep;
  for (Sym g : j->outgrads)
    if (g.d >= 0)
      for (int d = 0; d < std::max(m->parallel, 1); d++) {
        const Sym s = m->parallel > 1 ? on_device(*j, g, d) : g;
        if (s.d >= 0) keep.push_back(s);
      }
  compile_jit(m, *j, binds, keep);
  // The two parts: forward nodes (of the exec symbols the build made, and
  // their copies on the other devices) and the rest.
  const ccv_nnc_graph_t* g = j->graph;
  std::vector<int> part(g->nodes.size(), 0);  // 1 forward, 2 backward, 0 neither (initialisers)
  for (int e = 0; e < n_exec; e++)
    for (int d = 0; d < std::max(m->parallel, 1); d++) {
      ccv_nnc_graph_exec_symbol_t s{e, j->sg};
      if (m->parallel > 1 && d != own_device) s = ccv_nnc_graph_exec_symbol_copy(j->sg, s, d);
      if (s.d < 0) continue;
      const ccv_nnc_graph_exec_t x = ccv_nnc_graph_exec_from_symbol(j->ea, s);
      if (x.graph && x.d >= 0) part[static_cast<size_t>(x.d)] = e < forward_end ? 1 : 2;
    }
  // What the data parallel pass added after a backward node (the gradients'
  // allreduce) is backward too.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t n = 0; n < g->nodes.size(); n++)
      if (part[n] == 2)
        for (int t : g->nodes[n].outgoing)
          if (part[static_cast<size_t>(t)] == 0) {
            part[static_cast<size_t>(t)] = 2;
            changed = true;
          }
  }
  std::vector<int> preds_in_backward(g->nodes.size(), 0);
  for (size_t n = 0; n < g->nodes.size(); n++)
    for (int t : g->nodes[n].outgoing)
      if (part[n] == 2) preds_in_backward[static_cast<size_t>(t)]++;
  for (size_t n = 0; n < g->nodes.size(); n++) {
    bool to_same = false, to_backward = false, only_backward = !g->nodes[n].outgoing.empty();
    for (int t : g->nodes[n].outgoing) {
      if (part[static_cast<size_t>(t)] == part[n]) to_same = true;
      if (part[static_cast<size_t>(t)] == 2) to_backward = true;
      else only_backward = false;
    }
    const ccv_nnc_graph_exec_t x{static_cast<int>(n), const_cast<ccv_nnc_graph_t*>(g)};
    if (part[n] == 1 && !to_same) j->fwd_dst.push_back(x);
    if (part[n] == 2 && !to_same) j->bwd_dst.push_back(x);
    if (part[n] == 2 && preds_in_backward[n] == 0) j->bwd_src.push_back(x);
    // An initialiser only the backward reads runs with the backward.
    if (part[n] == 0 && to_backward && only_backward) j->bwd_src.push_back(x);
  }
  NNC_CHECK(!j->fwd_dst.empty() && !j->bwd_src.empty() && !j->bwd_dst.empty(), "model %s: could not split its graph into forward and backward",
            model_label(*m).c_str());
  return j;
}

std::vector<ccv_nnc_tensor_param_t> shapes_of(ccv_nnc_tensor_t* const* ts, int n, const char* what, const char* kind) {
  std::vector<ccv_nnc_tensor_param_t> s;
  for (int i = 0; i < n; i++) {
    NNC_CHECK(ts[i], "%s: %s %d is NULL", what, kind, i);
    s.push_back(ts[i]->info);
  }
  return s;
}

bool same_list(const std::vector<ccv_nnc_tensor_param_t>& a, const std::vector<ccv_nnc_tensor_param_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (!same_params(a[i], b[i])) return false;
  return true;
}

constexpr size_t kMaxJits = 4;

template <class Match, class Make>
Jit* find_jit(Compiled& c, Match match, Make make) {
  for (size_t i = 0; i < c.jits.size(); i++)
    if (match(*c.jits[i])) {
      std::rotate(c.jits.begin(), c.jits.begin() + static_cast<long>(i), c.jits.begin() + static_cast<long>(i) + 1);
      return c.jits.front().get();
    }
  auto j = make();
  if (c.jits.size() >= kMaxJits) {
    if (c.staged == c.jits.back().get()) {
      c.staged = nullptr;
      c.staged_state = 0;
    }
    c.jits.pop_back();
  }
  c.jits.insert(c.jits.begin(), std::move(j));
  return c.jits.front().get();
}

void bind_all(Jit& j, const std::vector<Sym>& syms, ccv_nnc_tensor_t* const* ts, int n, const char* what, const char* kind) {
  for (int i = 0; i < n && i < static_cast<int>(syms.size()); i++) {
    // An input no exec reads is not part of the compiled graph: nothing to bind.
    if (!symbolic::tensor_from_symbol(j.ta, syms[i])) continue;
    if (!ts[i]) {
      symbolic::bind(j.ta, syms[i], nullptr);
      continue;
    }
    try {
      symbolic::bind(j.ta, syms[i], ts[i]);
    } catch (const Error& e) {
      fail(CCV_NNC_EXEC_INVALID, "%s: %s %d: %s", what, kind, i, e.what());
    }
  }
}


// A model on the GPU runs its whole graph through a static schedule over GPU
// streams: the nodes go to up to max_concurrency streams per device (0: as
// many as the graph's width asks for, at most 64), with device-side waits
// between them, and several devices run at once. Given a GPU stream the run
// is queued behind it; otherwise the host waits once, at the end, instead of
// after every kernel as synchronous GPU calls do.
void schedule_for(Model* m, Jit& j) {
  const Compiled& c = *m->compiled;
  if (c.inputs.empty() || CCV_TENSOR_GET_MEMORY(c.inputs[0].type) != CCV_TENSOR_GPU_MEMORY) return;
  const int streams = m->max_concurrency > 0 ? std::min(m->max_concurrency, 64) : 64;
  if (j.scheduled_streams == streams && j.graph->default_schedule) return;
  int type = CCV_STREAM_CONTEXT_GPU;
  CCV_STREAM_SET_DEVICE_ID(type, CCV_TENSOR_GET_DEVICE_ID(c.inputs[0].type));
  j.graph->default_schedule = std::make_unique<graph::Schedule>(graph::make_schedule(j.graph, type, streams, nullptr, 0, nullptr, 0));
  j.scheduled_streams = streams;
}

// Runs j's graph (from src to dst; the whole graph when both are empty).
// Given a GPU stream the run is queued there behind the model's earlier
// queued runs (a device-side wait, whatever stream they went to) and the
// model's signal is emitted after it; the host waits for nothing.
void run(Model* m, Jit& j, const char* what, const std::vector<ccv_nnc_graph_exec_t>& src = {},
         const std::vector<ccv_nnc_graph_exec_t>& dst = {}, ccv_nnc_stream_context_t* stream = nullptr) {
  m->cancelled = 0;
  // Given no stream, what the caller queued on the model's default stream comes first.
  if (!stream && m->default_stream) {
    ccv_nnc_stream_context_wait(m->default_stream);
    const int e = ccv_nnc_stream_context_error(m->default_stream);
    if (e != CCV_NNC_EXEC_SUCCESS) fail(e, "%s: work queued on the model's default stream failed: %s", what, error_message().c_str());
  }
  if (src.empty() && dst.empty()) schedule_for(m, j);
  refresh_copies(m);
  const bool queued = is_gpu_stream(stream);
  if (queued && m->pending) signal_wait(stream, m->inflight);
  const int r = ccv_nnc_graph_run(j.graph, 0, src.empty() ? nullptr : src.data(), static_cast<int>(src.size()),
                                  dst.empty() ? nullptr : dst.data(), static_cast<int>(dst.size()), nullptr, stream);
  if (queued) {
    if (!m->inflight) m->inflight = signal_new(CCV_STREAM_CONTEXT_GPU);
    signal_emit(stream, m->inflight);  // also after a failed run: what it queued is ordered before later calls
    m->pending = true;
  }
  if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: %s", what, error_message().c_str());
}

}  // namespace

void compile(Model* m, const ccv_nnc_tensor_param_t* inputs, int input_size, const ccv_nnc_cmd_t& minimizer, const ccv_nnc_cmd_t& loss) {
  const char* what = "ccv_cnnp_model_compile";
  NNC_CHECK(m, "%s: no model", what);
  NNC_CHECK(input_size > 0 && inputs, "%s: model %s needs the shapes of its inputs (none given)", what, model_label(*m).c_str());
  for (int i = 0; i < input_size; i++)
    NNC_CHECK(ccv_nnc_tensor_count(inputs[i]) > 0, "%s: input %d has no shape", what, i);
  NNC_CHECK(is_noop(minimizer) || is_minimizer(minimizer.cmd), "%s: %s is not a minimiser", what,
            ccv_nnc_cmd_name(minimizer.cmd));
  // Discover the parameters in a scratch graph.
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  struct Free {
    ccv_nnc_symbolic_graph_t* g;
    ~Free() { ccv_nnc_symbolic_graph_free(g); }
  } free_sg{sg};
  Build b(sg, false);
  std::vector<Sym> in, out;
  for (int i = 0; i < input_size; i++) in.push_back(b.tensor(inputs[i], "input"));
  b.run(m, in, out);
  auto old = std::move(m->compiled);
  auto c = std::make_unique<Compiled>();
  c->inputs.assign(inputs, inputs + input_size);
  c->minimizer = minimizer;
  c->loss = loss;
  if (old) {
    c->compile_params = old->compile_params;
    c->workspace_size = old->workspace_size;
  }
  for (Sym o : out) c->outputs.push_back(b.params(o));
  SplitMix64 rng{0x6e6e635f6d6f6465ull};
  std::set<std::string> names;
  for (auto& f : b.found) {
    Param p;
    p.owner = f.owner;
    p.slot = f.slot;
    p.decl = f.decl;
    p.trainable = f.trainable;
    p.minimizer = minimizer;
    p.name = f.name;
    for (int k = 2; !names.insert(p.name).second; k++) p.name = f.name + "_" + std::to_string(k);
    // A recompile keeps what the parameters hold.
    if (old)
      for (auto& q : old->params)
        if (q.owner == p.owner && q.slot == p.slot && q.tensor && same_params(q.tensor->info, f.decl.info)) {
          p.tensor = q.tensor;
          p.initialized = q.initialized;
          p.aux = q.aux;
          if (q.minimizer.cmd == old->minimizer.cmd) p.minimizer = minimizer;
          else p.minimizer = q.minimizer;
        }
    if (!p.tensor) p.tensor = new_tensor(f.decl.info);
    c->params.push_back(std::move(p));
  }
  for (auto& p : c->params)
    if (!p.initialized) initialise(p, rng);
  m->compiled = std::move(c);
  if (m->comm) sync_parameters(m, what);
}

void absorb(Model* m, Model* init, const ccv_nnc_tensor_param_t* inputs, int input_size) {
  const char* what = "ccv_cnnp_model_absorb";
  Compiled& c = compiled_of(m, what);
  NNC_CHECK(init, "%s: no model to absorb", what);
  NNC_CHECK(init != m, "%s: a model cannot absorb itself", what);
  // The model to absorb is ours from here on, whatever happens (libnnc's contract).
  std::unique_ptr<Model> owned(init);
  NNC_CHECK(!init->compiled, "%s: the model to absorb is compiled already", what);
  compile(init, inputs, input_size, c.minimizer, c.loss);
  NNC_CHECK(init->compiled, "%s: compiling the model to absorb failed", what);
  Compiled& n = *init->compiled;
  auto refuse = [&](const std::string& why) { fail(CCV_NNC_EXEC_INVALID, "%s: %s", what, why.c_str()); };
  if (n.params.size() != c.params.size())
    refuse(format("model %s has %zu parameters, the one to absorb %zu", model_label(*m).c_str(), c.params.size(), n.params.size()));
  for (size_t i = 0; i < n.params.size(); i++)
    if (!same_params(n.params[i].tensor->info, c.params[i].tensor->info))
      refuse(format("parameter %zu is %s in model %s, %s in the one to absorb", i, shape_string(c.params[i].tensor->info).c_str(),
                    model_label(*m).c_str(), shape_string(n.params[i].tensor->info).c_str()));
  // The new structure's parameters are the old tensors, with their state.
  for (size_t i = 0; i < n.params.size(); i++) {
    n.params[i].tensor = c.params[i].tensor;
    n.params[i].aux = c.params[i].aux;
    n.params[i].gradient = c.params[i].gradient;
    n.params[i].has_gradient = c.params[i].has_gradient;
    n.params[i].minimizer = c.params[i].minimizer;
    n.params[i].initialized = c.params[i].initialized;
  }
  n.compile_params = c.compile_params;
  n.workspace_size = c.workspace_size;
  Model* old = m->absorbed;
  m->compiled = std::move(init->compiled);
  m->absorbed = owned.release();
  m->output_size = init->output_size;
  delete old;
}

// The caller's tensors, in groups of `per` (one group per device under
// ccv_cnnp_model_set_data_parallel, device 0's first; one group otherwise),
// bound to the symbols standing for the graph's on each device; symbols past
// a group's tensors (outputs the caller left out) get the arena's.
void bind_groups(Jit& j, const std::vector<Sym>& syms, ccv_nnc_tensor_t* const* ts, int per, int groups, const char* what, const char* kind) {
  for (int k = 0; k < groups; k++) {
    std::vector<Sym> on;
    std::vector<ccv_nnc_tensor_t*> group;
    for (size_t i = 0; i < syms.size(); i++) {
      const Sym s = groups > 1 ? on_device(j, syms[i], k) : syms[i];
      if (s.d < 0) continue;  // read by no exec: no copy on the other devices
      on.push_back(s);
      group.push_back(static_cast<int>(i) < per ? ts[k * per + static_cast<int>(i)] : nullptr);
    }
    const std::string which = groups > 1 ? format("device %d's %s", k, kind) : std::string(kind);
    bind_all(j, on, group.data(), static_cast<int>(on.size()), what, which.c_str());
  }
}

// The number of groups of tensors a call takes, and the size of each, with the checks.
int group_size(Model* m, int given, size_t per_device, bool exact, const char* what, const char* kind) {
  const int p = std::max(m->parallel, 1);
  if (p == 1) return given;
  NNC_CHECK(given % p == 0 && (!exact || given / p == static_cast<int>(per_device)),
            "%s: model %s runs on %d devices, so it takes %d groups of %s tensors, one group per device (given %d %s tensors)",
            what, model_label(*m).c_str(), p, p, exact ? std::to_string(per_device).c_str() : "the same number of", given, kind);
  return given / p;
}

void check_groups(ccv_nnc_tensor_t* const* ts, int per, int groups, const char* what, const char* kind) {
  for (int k = 1; k < groups; k++)
    for (int i = 0; i < per; i++)
      if (ts[i] && ts[k * per + i]) {
        // The same shape, type and format on every device (the memory differs).
        ccv_nnc_tensor_param_t a = ts[i]->info, b = ts[k * per + i]->info;
        a.type = b.type = 0;
        NNC_CHECK(same_params(a, b) && a.datatype == b.datatype && a.format == b.format,
                  "%s: %s %d for device %d has shape %s, for device 0 %s", what, kind, i, k,
                  shape_string(ts[k * per + i]->info).c_str(), shape_string(ts[i]->info).c_str());
      }
}

void fit(Model* m, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* fits, int fit_size,
         ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream) {
  const char* what = "ccv_cnnp_model_fit";
  Compiled& c = is_gpu_stream(stream) ? compiled_queued(m, what) : compiled_of(m, what);
  NNC_CHECK(!is_noop(c.minimizer), "%s: model %s was compiled without a minimiser", what, model_label(*m).c_str());
  const int groups = std::max(m->parallel, 1);
  NNC_CHECK(inputs || input_size == 0, "%s: inputs is NULL", what);
  const int per_input = group_size(m, input_size, c.inputs.size(), true, what, "input");
  NNC_CHECK(per_input == static_cast<int>(c.inputs.size()) && inputs, "%s: model %s was compiled with %zu inputs, given %d", what,
            model_label(*m).c_str(), c.inputs.size(), per_input);
  NNC_CHECK(fit_size >= 0 && (fit_size == 0 || fits), "%s: no fit tensors", what);
  const int per_fit = group_size(m, fit_size, 0, false, what, "fit");
  NNC_CHECK(output_size >= 0 && (output_size == 0 || outputs), "%s: outputs is NULL", what);
  const int per_output = group_size(m, output_size, 0, false, what, "output");
  NNC_CHECK(per_output <= static_cast<int>(c.outputs.size()), "%s: model %s has %zu outputs, given %d", what, model_label(*m).c_str(),
            c.outputs.size(), per_output);
  auto shapes = shapes_of(inputs, per_input, what, "input");
  auto fit_shapes = shapes_of(fits, per_fit, what, "fit");
  check_groups(inputs, per_input, groups, what, "input");
  check_groups(fits, per_fit, groups, what, "fit");
  for (size_t i = 0; i < shapes.size(); i++)
    NNC_CHECK(shapes[i].datatype == c.inputs[i].datatype, "%s: input %zu has another data type than at compile", what, i);
  Jit* j = find_jit(
      c, [&](const Jit& x) { return x.mode == Jit::FIT && same_list(x.key_inputs, shapes) && same_list(x.key_fits, fit_shapes); },
      [&] {
        settle(m);  // a new graph copies parameter state that queued steps may still update
        return make_fit(m, shapes, fit_shapes);
      });
  bind_groups(*j, j->inputs, inputs, per_input, groups, what, "input");
  bind_groups(*j, j->fits, fits, per_fit, groups, what, "fit");
  bind_groups(*j, j->outputs, outputs, per_output, groups, what, "output");
  run(m, *j, what, {}, {}, stream);
  c.staged_state = 0;
}

void evaluate(Model* m, const ccv_cnnp_evaluate_param_t& params, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size, bool dry_run, ccv_nnc_stream_context_t* stream) {
  const char* what = dry_run ? "ccv_cnnp_model_dry_run" : "ccv_cnnp_model_evaluate";
  Compiled& c = is_gpu_stream(stream) && !params.requires_grad ? compiled_queued(m, what) : compiled_of(m, what);
  const int groups = std::max(m->parallel, 1);
  NNC_CHECK(inputs || input_size == 0, "%s: inputs is NULL", what);
  const int per_input = group_size(m, input_size, c.inputs.size(), true, what, "input");
  NNC_CHECK(per_input == static_cast<int>(c.inputs.size()) && inputs, "%s: model %s was compiled with %zu inputs, given %d", what,
            model_label(*m).c_str(), c.inputs.size(), per_input);
  NNC_CHECK(output_size >= 0 && (output_size == 0 || outputs), "%s: outputs is NULL", what);
  const int per_output = group_size(m, output_size, 0, false, what, "output");
  NNC_CHECK(per_output <= static_cast<int>(c.outputs.size()), "%s: model %s has %zu outputs, given %d", what, model_label(*m).c_str(),
            c.outputs.size(), per_output);
  check_groups(inputs, per_input, groups, what, "input");
  auto shapes = shapes_of(inputs, per_input, what, "input");
  for (size_t i = 0; i < shapes.size(); i++)
    NNC_CHECK(shapes[i].datatype == c.inputs[i].datatype, "%s: input %zu has another data type than at compile", what, i);
  const bool is_test = params.is_test != 0;
  if (params.requires_grad) {
    const uint64_t off = params.disable_outgrad;
    Jit* j = find_jit(
        c, [&](const Jit& x) { return x.mode == Jit::STAGED && x.is_test == is_test && x.disable_outgrad == off && same_list(x.key_inputs, shapes); },
        [&] { return make_staged(m, shapes, is_test, off); });
    c.last_outputs.clear();
    for (Sym o : j->outputs) c.last_outputs.push_back(ccv_nnc_tensor_symbol_params(j->sg, o));
    bind_groups(*j, j->inputs, inputs, per_input, groups, what, "input");
    bind_groups(*j, j->outputs, outputs, per_output, groups, what, "output");
    c.staged = nullptr;
    c.staged_state = 0;
    if (dry_run) return;
    run(m, *j, what, {}, j->fwd_dst, stream);
    c.staged = j;
    c.staged_state = 1;
    return;
  }
  Jit* j = find_jit(
      c, [&](const Jit& x) { return x.mode == Jit::INFER && x.is_test == is_test && same_list(x.key_inputs, shapes); },
      [&] {
        settle(m);
        return make_infer(m, shapes, is_test);
      });
  c.last_outputs.clear();
  for (Sym o : j->outputs) c.last_outputs.push_back(ccv_nnc_tensor_symbol_params(j->sg, o));
  bind_groups(*j, j->inputs, inputs, per_input, groups, what, "input");
  bind_groups(*j, j->outputs, outputs, per_output, groups, what, "output");
  if (!dry_run) run(m, *j, what, {}, {}, stream);
}

void backward(Model* m, ccv_nnc_tensor_t* const* ingrads, int ingrad_size, ccv_nnc_tensor_t* const* outgrads, int outgrad_size) {
  const char* what = "ccv_cnnp_model_backward";
  Compiled& c = compiled_of(m, what);
  NNC_CHECK(c.staged && c.staged_state == 1, "%s: model %s has no forward pass to go back through (call ccv_cnnp_model_evaluate with requires_grad first; "
            "each evaluate allows one backward)", what, model_label(*m).c_str());
  Jit& j = *c.staged;
  // Over several devices: one group of gradients per device, device 0's first.
  const int groups = std::max(m->parallel, 1);
  NNC_CHECK(ingrad_size >= 0 && (ingrad_size == 0 || ingrads), "%s: ingrads is NULL", what);
  NNC_CHECK(outgrad_size >= 0 && (outgrad_size == 0 || outgrads), "%s: outgrads is NULL", what);
  const int per_in = group_size(m, ingrad_size, 0, false, what, "gradient");
  const int per_out = group_size(m, outgrad_size, 0, false, what, "input gradient");
  NNC_CHECK(per_in <= static_cast<int>(j.seeds.size()), "%s: model %s has %zu outputs, given %d gradients", what, model_label(*m).c_str(),
            j.seeds.size(), per_in);
  NNC_CHECK(per_out <= static_cast<int>(j.inputs.size()), "%s: model %s has %zu inputs, given %d input gradients", what,
            model_label(*m).c_str(), j.inputs.size(), per_out);
  for (int k = 0; k < groups; k++) {
    const std::string on = groups > 1 ? format(" (device %d)", k) : std::string();
    for (size_t i = 0; i < j.seeds.size(); i++) {
      ccv_nnc_tensor_t* given = static_cast<int>(i) < per_in ? ingrads[k * per_in + static_cast<int>(i)] : nullptr;
      ccv_nnc_tensor_t* g = given ? given : j.ones[static_cast<size_t>(k) * j.seeds.size() + i].get();
      const Sym seed = groups > 1 ? on_device(j, j.seeds[i], k) : j.seeds[i];
      try {
        symbolic::bind(j.ta, seed, g);
      } catch (const Error& e) {
        fail(CCV_NNC_EXEC_INVALID, "%s: gradient %zu%s: %s", what, i, on.c_str(), e.what());
      }
    }
    for (int i = 0; i < per_out; i++) {
      ccv_nnc_tensor_t* t = outgrads[k * per_out + i];
      if (!t) continue;
      NNC_CHECK(static_cast<size_t>(i) < j.outgrads.size() && j.outgrads[static_cast<size_t>(i)].d >= 0,
                "%s: input %d has no gradient (its outgrad is disabled, or it is not a float tensor)", what, i);
      const Sym s = groups > 1 ? on_device(j, j.outgrads[static_cast<size_t>(i)], k) : j.outgrads[static_cast<size_t>(i)];
      try {
        symbolic::bind(j.ta, s, t);
      } catch (const Error& e) {
        fail(CCV_NNC_EXEC_INVALID, "%s: input gradient %d%s: %s", what, i, on.c_str(), e.what());
      }
    }
  }
  c.staged_state = 0;
  run(m, j, what, j.bwd_src, j.bwd_dst);
  for (auto& p : c.params) p.has_gradient = p.has_gradient || static_cast<bool>(p.gradient);
}

void set_data_parallel(Model* m, int parallel) {
  const char* what = "ccv_cnnp_model_set_data_parallel";
  NNC_CHECK(parallel >= 0, "%s: parallel is %d", what, parallel);
  const int gpus = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU);
  const int p = parallel == 0 ? std::max(gpus, 1) : parallel;
  NNC_CHECK(p == 1 || p <= gpus,
            "%s: %d devices asked for, %d GPU%s found (across processes, use ccv_cnnp_model_set_comm)", what, p, gpus,
            gpus == 1 ? "" : "s");
  NNC_CHECK(p == 1 || !m->comm, "%s: model %s trains across processes (ccv_cnnp_model_set_comm); across the devices of each process too is not supported",
            what, model_label(*m).c_str());
  if (p == m->parallel) return;
  m->parallel = p;
  drop_jits(m);
}

void comm_time(Model* m, double* allreduce_seconds, double* waited_seconds) {
  double a = 0, w = 0;
  if (m->compiled)
    for (const auto& j : m->compiled->jits) {
      const symbolic::BucketTotals t = symbolic::bucket_totals(j->graph);
      a += t.comm_seconds;
      w += t.blocked_seconds;
    }
  if (allreduce_seconds) *allreduce_seconds = a;
  if (waited_seconds) *waited_seconds = w;
}

void apply_gradients(Model* m) {
  const char* what = "ccv_cnnp_model_apply_gradients";
  Compiled& c = compiled_of(m, what);
  NNC_CHECK(!is_noop(c.minimizer), "%s: model %s was compiled without a minimiser", what, model_label(*m).c_str());
  average_gradients(m, what);
  bool any = false;
  for (auto& p : c.params) {
    if (!p.has_gradient || !p.gradient) continue;
    any = true;
    ensure_aux(p, ccv_nnc_minimizer_saved_aux_size(p.minimizer));
    std::vector<ccv_nnc_tensor_t*> ins = {p.gradient.get(), p.tensor.get()}, outs = {p.tensor.get()};
    for (auto& a : p.aux) ins.push_back(a.get()), outs.push_back(a.get());
    const int r = ccv_nnc_cmd_exec(p.minimizer, ccv_nnc_no_hint, 0, ins.data(), static_cast<int>(ins.size()), outs.data(),
                                   static_cast<int>(outs.size()), nullptr);
    if (r != CCV_NNC_EXEC_SUCCESS) fail(r, "%s: updating %s: %s", what, p.name.c_str(), error_message().c_str());
    ccv_nnc_tensor_zero(p.gradient.get());
    p.has_gradient = false;
  }
  params_written(m);
  NNC_CHECK(any, "%s: model %s has no gradients (call ccv_cnnp_model_backward first)", what, model_label(*m).c_str());
}

std::vector<Param*> select(Model* m, const Io* io, const char* what) {
  Compiled& c = compiled_of(m, what);
  NNC_CHECK(io, "%s: no parameters given", what);
  NNC_CHECK(io->is_parameters, "%s: the io given is not from ccv_cnnp_model_parameters", what);
  // The models inside the selection's model.
  std::set<const Model*> inside;
  std::vector<Model*> stack = {io->model};
  while (!stack.empty()) {
    Model* x = stack.back();
    stack.pop_back();
    if (!inside.insert(x).second) continue;
    x->children(stack);
    if (x->absorbed) stack.push_back(x->absorbed);
  }
  std::vector<Param*> r;
  for (auto& p : c.params)
    if (inside.count(p.owner) && (io->selector < 0 || p.decl.selector == io->selector)) r.push_back(&p);
  if (io->index >= 0) {
    NNC_CHECK(io->index < static_cast<int>(r.size()), "%s: model %s has %zu such parameters, index %d asked for", what,
              model_label(*io->model).c_str(), r.size(), io->index);
    r = {r[static_cast<size_t>(io->index)]};
  }
  return r;
}

void set_minimizer(Model* m, const ccv_nnc_cmd_t& minimizer, int reset, const ccv_cnnp_model_io_t* parameters, int parameter_size) {
  const char* what = "ccv_cnnp_model_set_minimizer";
  Compiled& c = compiled_of(m, what);
  NNC_CHECK(is_minimizer(minimizer.cmd), "%s: %s is not a minimiser", what, ccv_nnc_cmd_name(minimizer.cmd));
  const int aux = ccv_nnc_minimizer_saved_aux_size(minimizer);
  std::vector<Param*> ps;
  if (parameter_size > 0) {
    NNC_CHECK(parameters, "%s: no parameters", what);
    for (int i = 0; i < parameter_size; i++) {
      auto s = select(m, parameters[i], what);
      ps.insert(ps.end(), s.begin(), s.end());
    }
  } else {
    for (auto& p : c.params) ps.push_back(&p);
  }
  bool rebuild = false;
  for (Param* p : ps) {
    if (p->minimizer.cmd != minimizer.cmd) rebuild = true;
    if (std::memcmp(&p->minimizer.info, &minimizer.info, sizeof(minimizer.info)) != 0) rebuild = true;
    p->minimizer = minimizer;
    if (reset || static_cast<int>(p->aux.size()) != aux)
      for (auto& a : p->aux) ccv_nnc_tensor_zero(a.get());
  }
  params_written(m);
  if (parameter_size <= 0) c.minimizer = minimizer;
  if (!rebuild) return;
  // Only the minimiser execs change: update them in the compiled graphs.
  for (auto& j : c.jits) {
    if (j->mode != Jit::FIT) continue;
    const int n = ccv_nnc_graph_exec_symbol_count(j->sg);
    bool changed = false;
    for (int e = 0; e < n; e++) {
      ccv_nnc_graph_exec_symbol_t s{e, j->sg};
      ccv_nnc_cmd_t cmd = ccv_nnc_graph_exec_symbol_cmd(j->sg, s);
      if (!is_minimizer(cmd.cmd)) continue;
      // Which parameter it updates: its second input.
      const int* ins;
      int in_size;
      const int* outs;
      int out_size;
      ccv_nnc_graph_exec_symbol_io(j->sg, s, &ins, &in_size, &outs, &out_size);
      if (in_size < 2) continue;
      ccv_nnc_tensor_t* t = symbolic::tensor_from_symbol(j->ta, {ins[1], j->sg});
      for (Param* p : ps)
        if (t && t->data.u8 == p->tensor->data.u8) {
          if (ccv_nnc_minimizer_saved_aux_size(p->minimizer) != ccv_nnc_minimizer_saved_aux_size(cmd)) {
            changed = false;
            j->key_inputs.clear();  // never matches again: rebuilt on next fit
            break;
          }
          ccv_nnc_graph_exec_symbol_set(j->sg, s, p->minimizer);
          changed = true;
        }
    }
    if (changed) ccv_nnc_graph_exec_reinit(j->ea, j->graph, j->sg);
  }
}

void dot(const Model* m, int flags, FILE** outs, int out_size) {
  NNC_CHECK(m, "ccv_cnnp_model_dot: no model");
  NNC_CHECK(out_size > 0 && outs && outs[0], "ccv_cnnp_model_dot: no output file");
  NNC_CHECK(m->compiled && !m->compiled->jits.empty(), "ccv_cnnp_model_dot: model %s has no compiled graph yet (fit or evaluate it first)",
            model_label(*m).c_str());
  ccv_nnc_symbolic_graph_dot(m->compiled->jits.front()->sg, flags, outs[0]);
}

void format_jit(const Model* m, ccv_nnc_symbolic_graph_format_f f, void* context) {
  Jit& j = *m->compiled->jits.front();
  ccv_nnc_symbolic_graph_format(j.sg, ccv_nnc_symbolic_graph_sources(j.sg), ccv_nnc_symbolic_graph_source_size(j.sg),
                                ccv_nnc_symbolic_graph_destinations(j.sg), ccv_nnc_symbolic_graph_destination_size(j.sg), f, context);
}

void cancel_jits(Model* m) {
  if (!m->compiled) return;
  for (auto& j : m->compiled->jits)
    if (j->graph) ccv_nnc_graph_cancel(j->graph);
}

uint64_t memory_size(const Model* m) {
  if (!m || !m->compiled) return 0;
  uint64_t s = 0;
  for (auto& p : m->compiled->params) {
    s += ccv_nnc_tensor_data_size(p.tensor->info);
    for (auto& a : p.aux) s += ccv_nnc_tensor_data_size(a->info);
  }
  for (auto& j : m->compiled->jits) s += j->ta->size;
  return s;
}

}  // namespace nnc::cnnp

ccv_cnnp_model_s::~ccv_cnnp_model_s() {
  // Queued work may still use the graphs' memory and the parameters.
  if (pending) {
    try {
      nnc::signal_wait(nullptr, inflight);
    } catch (...) {
      // A failed step: its work is over either way.
    }
  }
  if (inflight) nnc::signal_free(inflight);
  if (default_stream) ccv_nnc_stream_context_free(default_stream);
  delete absorbed;
}
