#include "symbolic/compile.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "graph/graph.hpp"
#include "symbolic/alloc/planner.hpp"

ccv_nnc_tensor_arena_s::~ccv_nnc_tensor_arena_s() { release(); }

void ccv_nnc_tensor_arena_s::release() {
  if (!raw) return;
  if (allocator.isa && allocator.isa->free)
    allocator.isa->free(raw, allocator.context.free);
  else
    std::free(raw);
  raw = nullptr;
  buffer = nullptr;
  size = 0;
}

namespace nnc::symbolic {

namespace {

constexpr int64_t kAlignment = 64;  // every arena tensor starts on a cache line (and an AVX-512 vector)

struct GraphDeleter {
  void operator()(ccv_nnc_graph_t* g) const { delete g; }
};

bool is_view(const ccv_nnc_tensor_t* t) { return CCV_IS_TENSOR_VIEW(t); }

// A header the graph's nodes can point at, owned by the arena. An existing
// header is rewritten in place: compiled nodes hold its address.
void set_header(std::unique_ptr<ccv_nnc_tensor_view_t>& slot, const ccv_nnc_tensor_t& t) {
  if (!slot) slot = std::make_unique<ccv_nnc_tensor_view_t>();
  std::memset(slot.get(), 0, sizeof(*slot));
  std::memcpy(slot.get(), &t, is_view(&t) ? sizeof(ccv_nnc_tensor_view_t) : sizeof(ccv_nnc_tensor_t));
}

// The header of alias d over its base's header: a plain tensor where the
// alias is packed (a reshape or a leading slice), else a strided view.
void alias_header(ccv_nnc_tensor_arena_t* arena, const Graph* g, int d, const ccv_nnc_tensor_t* base) {
  const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
  const int n = nd_of(t.info.dim);
  int64_t stride[CCV_NNC_MAX_DIM_ALLOC], packed[CCV_NNC_MAX_DIM_ALLOC];
  alias_strides(g, d, stride);
  packed_strides(t.info.dim, n, packed);
  int64_t first_element = 0;
  for (int i = 0; i < n; i++) first_element += static_cast<int64_t>(t.ofs[i]) * stride[i];
  const int64_t bytes = first_element * static_cast<int64_t>(datatype_size(t.info.datatype));
  arena->offset[static_cast<size_t>(d)] = bytes;
  if (std::equal(stride, stride + n, packed)) {
    set_header(arena->headers[static_cast<size_t>(d)], tensor_value(base->data.u8 ? base->data.u8 + bytes : nullptr, t.info, 0));
    return;
  }
  int istride[CCV_NNC_MAX_DIM_ALLOC] = {};
  for (int i = 0; i < n; i++) istride[i] = static_cast<int>(stride[i]);
  if (!arena->headers[static_cast<size_t>(d)]) arena->headers[static_cast<size_t>(d)] = std::make_unique<ccv_nnc_tensor_view_t>();
  view_fill(arena->headers[static_cast<size_t>(d)].get(), base, t.info, t.ofs, istride);
}

}  // namespace

Compiled compile(const Graph* g, const ccv_nnc_symbolic_graph_compile_allocator_t& allocator, const ccv_nnc_tensor_bind_t* binds,
                 int bind_size, const ccv_nnc_tensor_symbol_t* outputs, int output_size,
                 const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                 const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  static const char* what = "ccv_nnc_symbolic_graph_compile";
  NNC_CHECK(g, "%s: the symbolic graph is NULL", what);
  NNC_CHECK(bind_size >= 0 && (bind_size == 0 || binds), "%s: bad tensor_binds array (size %d)", what, bind_size);
  NNC_CHECK(output_size >= 0 && (output_size == 0 || outputs), "%s: bad outputs array (size %d)", what, output_size);
  std::vector<int> order;
  try {
    order = exec_order(g, sources, source_size, destinations, destination_size);
  } catch (const Error& e) {
    fail(e.code(), "%s: %s", what, e.what());
  }
  const size_t nt = g->tensors.size();

  // The caller's tensors.
  std::vector<const ccv_nnc_tensor_t*> bound(nt, nullptr);
  for (int i = 0; i < bind_size; i++) {
    const std::string w = format("%s: tensor_binds[%d]", what, i);
    const Graph::Tensor& t = tensor_of(g, binds[i].symbol, w.c_str());
    const ccv_nnc_tensor_t* x = binds[i].tensor;
    if (!x) continue;  // libnnc: a NULL tensor binds nothing
    NNC_CHECK(t.alias_of < 0, "%s is an alias of %s; bind the base symbol", w.c_str(),
              tensor_label(g, t.alias_of).c_str());
    NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(x), "%s: a multi-view tensor cannot be bound here", w.c_str());
    NNC_CHECK(same_shape(x->info, t.info) && CCV_GET_DATA_TYPE(x->info.datatype) == CCV_GET_DATA_TYPE(t.info.datatype),
              "%s: the tensor is %s %s but %s is %s %s", w.c_str(), shape_string(x->info.dim).c_str(),
              datatype_name(x->info.datatype), tensor_label(g, binds[i].symbol.d).c_str(),
              shape_string(t.info.dim).c_str(), datatype_name(t.info.datatype));
    bound[static_cast<size_t>(binds[i].symbol.d)] = x;
  }

  // Liveness over the order (steps shifted by one when initialisers run first).
  bool any_init = false;
  std::vector<char> used(nt, 0), written(nt, 0), keep(nt, 0);
  auto mark = [&](int d) {
    used[static_cast<size_t>(d)] = 1;
    used[static_cast<size_t>(base_of(g, d))] = 1;
  };
  for (int e : order) {
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    for (const std::vector<int>* io : {&x.inputs, &x.outputs})
      for (int d : *io) {
        if (d < 0) continue;
        NNC_CHECK(!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(g->tensors[static_cast<size_t>(d)].flags), "%s: %s uses %s, which was freed",
                  what, exec_label(g, e).c_str(), tensor_label(g, d).c_str());
        NNC_CHECK(nd_of(g->tensors[static_cast<size_t>(d)].info.dim) > 0, "%s: %s uses %s, which has no shape", what,
                  exec_label(g, e).c_str(), tensor_label(g, d).c_str());
        mark(d);
      }
  }
  for (int i = 0; i < output_size; i++) {
    const std::string w = format("%s: outputs[%d]", what, i);
    NNC_CHECK(nd_of(tensor_of(g, outputs[i], w.c_str()).info.dim) > 0, "%s: %s has no shape", w.c_str(),
              tensor_label(g, outputs[i].d).c_str());
    mark(outputs[i].d);
    keep[static_cast<size_t>(base_of(g, outputs[i].d))] = 1;
  }
  // An initialised alias of a base in use is part of its memory: set too.
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = g->tensors[d];
    if (t.alias_of >= 0 && used[static_cast<size_t>(t.alias_of)] && !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags) &&
        (t.flags & (CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES)))
      mark(static_cast<int>(d));
  }
  for (size_t d = 0; d < nt; d++)
    if (used[d] && g->tensors[d].flags & (CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES)) any_init = true;
  // The symbols initialised before the first exec (bases or aliases in use),
  // and the bases that holds them (live from the start).
  constexpr int kInit = CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES;
  std::vector<int> initialised;
  std::vector<char> init_base(nt, 0);
  for (size_t d = 0; d < nt; d++)
    if (used[d] && (g->tensors[d].flags & kInit)) {
      initialised.push_back(static_cast<int>(d));
      init_base[static_cast<size_t>(base_of(g, static_cast<int>(d)))] = 1;
    }
  const int64_t shift = any_init ? 1 : 0;
  const int64_t end = static_cast<int64_t>(order.size()) + shift - 1;
  std::vector<int64_t> first(nt, std::numeric_limits<int64_t>::max()), last(nt, -1);
  for (size_t k = 0; k < order.size(); k++) {
    const int64_t step = static_cast<int64_t>(k) + shift;
    const Graph::Exec& x = g->execs[static_cast<size_t>(order[k])];
    for (int d : x.inputs)
      if (d >= 0) last[static_cast<size_t>(base_of(g, d))] = std::max(last[static_cast<size_t>(base_of(g, d))], step);
    for (int d : x.outputs)
      if (d >= 0) {
        const size_t b = static_cast<size_t>(base_of(g, d));
        written[b] = 1;
        first[b] = std::min(first[b], step);
        last[b] = std::max(last[b], step);
      }
  }
  // The bases the arena holds, and the problem the planner solves.
  std::vector<int> bases;
  std::vector<size_t> index(nt, alloc::kNone);
  alloc::Problem problem;
  problem.total_steps = std::max<int64_t>(end + 1, 1);
  for (size_t d = 0; d < nt; d++) {
    if (!used[d] || g->tensors[d].alias_of >= 0) continue;
    const Graph::Tensor& t = g->tensors[d];
    alloc::TensorSpec s;
    s.size = static_cast<int64_t>(bytes_of(t.info));
    s.alignment = kAlignment;
    const bool init = init_base[d];
    // Inputs (nothing here writes them) and initialised symbols hold their
    // value from the start; inputs and outputs to the end.
    s.first = !written[d] || init ? 0 : first[d];
    s.last = !written[d] || keep[d] ? std::max<int64_t>(end, 0) : std::max(last[d], s.first);
    s.external = bound[d] != nullptr;
    index[d] = problem.tensors.size();
    bases.push_back(static_cast<int>(d));
    problem.tensors.push_back(s);
  }
  // In place: an output may take the place of an input whose last read is this step.
  for (size_t k = 0; k < order.size(); k++) {
    const int64_t step = static_cast<int64_t>(k) + shift;
    const Graph::Exec& x = g->execs[static_cast<size_t>(order[k])];
    std::vector<char> taken(x.inputs.size(), 0);
    for (size_t j = 0; j < x.outputs.size(); j++) {
      const int o = x.outputs[j];
      if (o < 0 || g->tensors[static_cast<size_t>(o)].alias_of >= 0 || !g->tensors[static_cast<size_t>(o)].aliases.empty() ||
          bound[static_cast<size_t>(o)])
        continue;
      const alloc::TensorSpec& os = problem.tensors[index[static_cast<size_t>(o)]];
      if (os.first != step) continue;
      for (size_t i = 0; i < x.inputs.size(); i++) {
        const int in = x.inputs[i];
        // Inputs (no writer here) and kept symbols hold their values across runs: never overwritten.
        if (in < 0 || in == o || taken[i] || g->tensors[static_cast<size_t>(in)].alias_of >= 0 ||
            !g->tensors[static_cast<size_t>(in)].aliases.empty() || bound[static_cast<size_t>(in)] ||
            !written[static_cast<size_t>(in)] || keep[static_cast<size_t>(in)])
          continue;
        const alloc::TensorSpec& is = problem.tensors[index[static_cast<size_t>(in)]];
        if (is.last != step || is.size != os.size) continue;
        if (!cmd_inplace(x.cmd, static_cast<int>(i), static_cast<int>(x.inputs.size()), static_cast<int>(j),
                         static_cast<int>(x.outputs.size()), false))
          continue;
        problem.inplace.push_back({index[static_cast<size_t>(o)], index[static_cast<size_t>(in)]});
        taken[i] = 1;
        break;
      }
    }
  }
  auto planned = alloc::plan(problem);
  NNC_CHECK(planned, "%s: the memory planner failed: %s", what, planned.error().c_str());
  const alloc::Plan& plan = planned.value();

  auto arena = std::make_unique<ccv_nnc_tensor_arena_s>();
  arena->graph = g;
  arena->planned = plan.arena;
  arena->lower_bound = plan.lower_bound;
  arena->allocator = allocator;
  if (plan.arena > 0) {
    const uint64_t bytes = (plan.arena + 63) & ~uint64_t{63};
    if (allocator.isa) {
      NNC_CHECK(allocator.isa->alloc && allocator.isa->free, "%s: the custom allocator needs both alloc and free", what);
      // Any alignment the allocator gives: the arena starts at the next 64-byte boundary inside.
      void* p = allocator.isa->alloc(CCV_TENSOR_CPU_MEMORY, 0, static_cast<size_t>(bytes + kAlignment), allocator.context.alloc);
      if (!p)
        fail(CCV_NNC_EXEC_OOM, "%s: the custom allocator gave no memory for the %llu-byte tensor arena", what,
             static_cast<unsigned long long>(bytes));
      arena->raw = p;
      const uintptr_t at = (reinterpret_cast<uintptr_t>(p) + kAlignment - 1) & ~static_cast<uintptr_t>(kAlignment - 1);
      arena->buffer = reinterpret_cast<unsigned char*>(at);
    } else {
      void* p = nullptr;
      if (posix_memalign(&p, kAlignment, bytes) != 0 || !p)
        fail(CCV_NNC_EXEC_OOM, "%s: cannot allocate the %llu-byte tensor arena", what, static_cast<unsigned long long>(bytes));
      arena->raw = p;
      arena->buffer = static_cast<unsigned char*>(p);
    }
    arena->size = bytes;
  }
  arena->headers.resize(nt);
  arena->base.resize(nt);
  arena->offset.assign(nt, 0);
  arena->own.assign(nt, nullptr);
  arena->capacity.assign(nt, 0);
  for (size_t d = 0; d < nt; d++) arena->base[d] = base_of(g, static_cast<int>(d));
  for (int b : bases) {
    const size_t d = static_cast<size_t>(b);
    arena->capacity[d] = bytes_of(g->tensors[d].info);
    if (bound[d]) {
      set_header(arena->headers[d], *bound[d]);
      arena->own[d] = bound[d]->data.u8;
    } else {
      unsigned char* ptr = arena->buffer + plan.arena_offset(index[d]);
      set_header(arena->headers[d], tensor_value(ptr, g->tensors[d].info, 0));
      arena->own[d] = ptr;
    }
  }
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = g->tensors[d];
    if (!used[d] || t.alias_of < 0) continue;
    const ccv_nnc_tensor_t* base = reinterpret_cast<const ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(t.alias_of)].get());
    NNC_CHECK(!is_view(base), "%s: %s is an alias of %s, which is bound to a tensor view; bind a plain tensor", what,
              tensor_label(g, static_cast<int>(d)).c_str(), tensor_label(g, t.alias_of).c_str());
    alias_header(arena.get(), g, static_cast<int>(d), base);
  }
  auto tensor = [&](int d) -> ccv_nnc_tensor_t* {
    return d < 0 ? nullptr : reinterpret_cast<ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(d)].get());
  };

  // The concrete graph: initialisers, then the execs in order.
  std::unique_ptr<ccv_nnc_graph_t, GraphDeleter> cg(new ccv_nnc_graph_s());
  auto exec_arena = std::make_unique<ccv_nnc_graph_exec_arena_s>();
  exec_arena->graph = g;
  exec_arena->execs.assign(g->execs.size(), ccv_nnc_graph_exec_t{-1, nullptr});
  std::vector<int> init_nodes;
  for (int b : initialised) {
    const int flags = g->tensors[static_cast<size_t>(b)].flags;
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.blas.a[0] = flags & CCV_NNC_TENSOR_SYMBOL_INIT_ONES ? 1 : 0;
    ccv_nnc_tensor_t* out = tensor(b);
    const ccv_nnc_graph_exec_t n =
        graph::exec_new(cg.get(), make_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, nullptr, 0, &out, 1);
    init_nodes.push_back(n.d);
  }
  std::vector<ccv_nnc_tensor_t*> in, out;
  for (int e : order) {
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    in.clear();
    out.clear();
    for (int d : x.inputs) in.push_back(tensor(d));
    for (int d : x.outputs) out.push_back(tensor(d));
    exec_arena->execs[static_cast<size_t>(e)] =
        graph::exec_new(cg.get(), x.cmd, x.hint, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
  }
  // Edges (acyclic by construction: no cycle check per edge).
  std::vector<char> has_in(cg->nodes.size(), 0);
  for (int e : order)
    for (int t : g->execs[static_cast<size_t>(e)].outgoing) {
      const ccv_nnc_graph_exec_t to = exec_arena->execs[static_cast<size_t>(t)];
      if (!to.graph) continue;
      cg->nodes[static_cast<size_t>(exec_arena->execs[static_cast<size_t>(e)].d)].outgoing.push_back(to.d);
      has_in[static_cast<size_t>(to.d)] = 1;
    }
  // Memory reuse as order: where the planner put a tensor in bytes an
  // earlier one used (or, in place, the bytes of an input it reads), every
  // other node touching the earlier one comes before the later one's first
  // writer, so a static schedule over several streams cannot overlap them
  // (the default run follows the planned order anyway).
  {
    std::vector<std::vector<int>> touching(nt);
    std::vector<int> first_writer(nt, -1);
    for (int e : order) {
      const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
      const int node = exec_arena->execs[static_cast<size_t>(e)].d;
      for (int d : x.inputs)
        if (d >= 0) touching[static_cast<size_t>(base_of(g, d))].push_back(node);
      for (int d : x.outputs)
        if (d >= 0) {
          const size_t b = static_cast<size_t>(base_of(g, d));
          touching[b].push_back(node);
          if (first_writer[b] < 0) first_writer[b] = node;
        }
    }
    for (size_t k = 0; k < initialised.size(); k++) {
      const size_t b = static_cast<size_t>(base_of(g, initialised[k]));
      touching[b].push_back(init_nodes[k]);
      if (first_writer[b] < 0 || first_writer[b] > init_nodes[k]) first_writer[b] = init_nodes[k];
    }
    struct Span {
      uint64_t lo, hi;
      int64_t first, last;
      int base;
    };
    std::vector<Span> spans;
    for (int b : bases) {
      const alloc::TensorSpec& t = problem.tensors[index[static_cast<size_t>(b)]];
      if (t.external || t.size <= 0) continue;
      const uint64_t lo = plan.arena_offset(index[static_cast<size_t>(b)]);
      spans.push_back({lo, lo + static_cast<uint64_t>(t.size), t.first, t.last, b});
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    auto order_after = [&](const Span& before, const Span& later) {
      const int w = first_writer[static_cast<size_t>(later.base)];
      if (w < 0) return;
      for (int n : touching[static_cast<size_t>(before.base)]) {
        if (n == w) continue;
        std::vector<int>& out = cg->nodes[static_cast<size_t>(n)].outgoing;
        if (std::find(out.begin(), out.end(), w) != out.end()) continue;
        out.push_back(w);
        has_in[static_cast<size_t>(w)] = 1;
      }
    };
    for (size_t i = 0; i < spans.size(); i++)
      for (size_t j = i + 1; j < spans.size() && spans[j].lo < spans[i].hi; j++) {
        // Equal steps: an output took its input's place in that exec; the
        // input's other readers must still finish before it writes.
        if (spans[i].last <= spans[j].first)
          order_after(spans[i], spans[j]);
        else if (spans[j].last <= spans[i].first)
          order_after(spans[j], spans[i]);
      }
  }
  std::vector<int> heads, tails;
  for (int e : order) {
    const int n = exec_arena->execs[static_cast<size_t>(e)].d;
    if (!has_in[static_cast<size_t>(n)]) heads.push_back(n);
    if (cg->nodes[static_cast<size_t>(n)].outgoing.empty()) tails.push_back(n);
  }
  for (int i : init_nodes) {
    for (int h : heads) cg->nodes[static_cast<size_t>(i)].outgoing.push_back(h);
    if (heads.empty()) tails.push_back(i);
  }
  if (!init_nodes.empty()) heads = init_nodes;
  // One source and one destination (ccv_nnc_graph_exec_source / _destination):
  // a NOOP where there would be several.
  const ccv_nnc_cmd_t noop = make_cmd(CCV_NNC_NOOP, nullptr, ccv_nnc_cmd_auto, 0);
  auto single = [&](const std::vector<int>& ends, bool before) -> ccv_nnc_graph_exec_t {
    if (ends.empty()) return {-1, nullptr};
    if (ends.size() == 1) return {ends[0], cg.get()};
    const ccv_nnc_graph_exec_t n = graph::exec_new(cg.get(), noop, ccv_nnc_no_hint, nullptr, 0, nullptr, 0);
    for (int x : ends) {
      if (before)
        cg->nodes[static_cast<size_t>(n.d)].outgoing.push_back(x);
      else
        cg->nodes[static_cast<size_t>(x)].outgoing.push_back(n.d);
    }
    return n;
  };
  exec_arena->source = single(heads, true);
  exec_arena->destination = single(tails, false);
  if (exec_arena->source.graph) cg->sources.assign(1, exec_arena->source);
  if (exec_arena->destination.graph) cg->destinations.assign(1, exec_arena->destination);
  graph::invalidate(cg.get());
  Compiled c;
  c.graph = cg.release();
  c.tensor_arena = arena.release();
  c.exec_arena = exec_arena.release();
  return c;
}

void bind(ccv_nnc_tensor_arena_t* arena, const ccv_nnc_tensor_symbol_t& symbol, const ccv_nnc_tensor_t* tensor) {
  static const char* what = "ccv_nnc_tensor_bind_symbol";
  NNC_CHECK(arena, "%s: the tensor arena is NULL", what);
  NNC_CHECK(symbol.graph == arena->graph, "%s: tensor symbol %d is not of the graph this arena was compiled from", what,
            symbol.d);
  NNC_CHECK(symbol.d >= 0 && static_cast<size_t>(symbol.d) < arena->headers.size() && arena->headers[static_cast<size_t>(symbol.d)],
            "%s: tensor symbol %d is not part of the compiled graph", what, symbol.d);
  const size_t d = static_cast<size_t>(symbol.d);
  NNC_CHECK(arena->base[d] == symbol.d, "%s: tensor symbol %d is an alias of tensor symbol %d; bind its base", what,
            symbol.d, arena->base[d]);
  ccv_nnc_tensor_view_t* h = arena->headers[d].get();
  unsigned char* data = arena->own[d];
  if (tensor) {
    NNC_CHECK(!CCV_IS_TENSOR_MULTIVIEW(tensor), "%s: a multi-view tensor cannot be bound", what);
    NNC_CHECK(same_shape(tensor->info, h->info) && CCV_GET_DATA_TYPE(tensor->info.datatype) == CCV_GET_DATA_TYPE(h->info.datatype),
              "%s: the tensor is %s %s but tensor symbol %d is %s %s", what, shape_string(tensor->info.dim).c_str(),
              datatype_name(tensor->info.datatype), symbol.d, shape_string(h->info.dim).c_str(),
              datatype_name(h->info.datatype));
    const bool hv = is_view(reinterpret_cast<const ccv_nnc_tensor_t*>(h));
    NNC_CHECK(is_view(tensor) == hv && (!hv || std::equal(h->stride, h->stride + CCV_NNC_MAX_DIM_ALLOC,
                                                          reinterpret_cast<const ccv_nnc_tensor_view_t*>(tensor)->stride)),
              "%s: the tensor's layout (%s) differs from the one compiled (%s); bind a tensor laid out the same", what,
              is_view(tensor) ? "a strided view" : "packed", hv ? "a strided view" : "packed");
    data = tensor->data.u8;
  }
  h->data.u8 = data;
  for (size_t a = 0; a < arena->headers.size(); a++)
    if (a != d && arena->base[a] == symbol.d && arena->headers[a])
      arena->headers[a]->data.u8 = data ? data + arena->offset[a] : nullptr;
}

}  // namespace nnc::symbolic

namespace nnc::symbolic {

bool reinit(ccv_nnc_tensor_arena_t* arena, const Graph* g) {
  static const char* what = "ccv_nnc_tensor_arena_reinit";
  NNC_CHECK(arena && g, "%s: the arena or the graph is NULL", what);
  NNC_CHECK(arena->graph == g, "%s: the arena was compiled from another graph", what);
  const size_t n = std::min(arena->headers.size(), g->tensors.size());
  for (size_t d = 0; d < n; d++) {
    if (!arena->headers[d] || arena->base[d] != static_cast<int>(d)) continue;
    const ccv_nnc_tensor_param_t& info = g->tensors[d].info;
    if (nd_of(info.dim) == 0 || bytes_of(info) > arena->capacity[d]) return false;
    if (CCV_GET_DATA_TYPE(info.datatype) != CCV_GET_DATA_TYPE(arena->headers[d]->info.datatype)) return false;
    // A tensor bound as a strided view keeps the shape it was bound with.
    if (is_view(reinterpret_cast<const ccv_nnc_tensor_t*>(arena->headers[d].get())) && !same_shape(info, arena->headers[d]->info))
      return false;
  }
  for (size_t d = 0; d < n; d++) {  // every alias inside its base's new shape
    if (!arena->headers[d] || arena->base[d] == static_cast<int>(d)) continue;
    const ccv_nnc_tensor_param_t& b = g->tensors[static_cast<size_t>(arena->base[d])].info;
    int64_t first, last;
    element_range(g, static_cast<int>(d), &first, &last);
    if (nd_of(g->tensors[d].info.dim) == 0 || last >= static_cast<int64_t>(bytes_of(b) / datatype_size(b.datatype))) return false;
  }
  for (size_t d = 0; d < n; d++) {
    if (!arena->headers[d] || arena->base[d] != static_cast<int>(d)) continue;
    ccv_nnc_tensor_view_t* h = arena->headers[d].get();
    h->info = g->tensors[d].info;
    if (!is_view(reinterpret_cast<ccv_nnc_tensor_t*>(h))) h->data_size = bytes_of(h->info);
  }
  // Aliases follow their bases' new shapes where they still fit inside them.
  for (size_t d = 0; d < n; d++) {
    if (!arena->headers[d] || arena->base[d] == static_cast<int>(d)) continue;
    const ccv_nnc_tensor_t* base = reinterpret_cast<const ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(arena->base[d])].get());
    alias_header(arena, g, static_cast<int>(d), base);
  }
  return true;
}

void exec_reinit(ccv_nnc_graph_exec_arena_t* arena, ccv_nnc_graph_t* graph, const Graph* g) {
  static const char* what = "ccv_nnc_graph_exec_reinit";
  NNC_CHECK(arena && graph && g, "%s: the arena, the graph or the symbolic graph is NULL", what);
  NNC_CHECK(arena->graph == g, "%s: the arena was compiled from another symbolic graph", what);
  const size_t n = std::min(arena->execs.size(), g->execs.size());
  for (size_t e = 0; e < n; e++) {
    const ccv_nnc_graph_exec_t node = arena->execs[e];
    if (!node.graph) continue;
    NNC_CHECK(node.graph == graph, "%s: the exec arena belongs to another concrete graph", what);
    Graph::Exec const& x = g->execs[e];
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags)) continue;
    graph::Graph::Node& nd = graph::node_of(graph, node, what);
    nd.cmd = x.cmd;
    nd.hint = x.hint;
  }
  graph::invalidate_plans(graph);
}

}  // namespace nnc::symbolic
