#include "symbolic/compile.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "core/cmd.hpp"
#include "symbolic/loop_tape.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "graph/graph.hpp"
#include "symbolic/alloc/planner.hpp"

ccv_nnc_tensor_arena_s::~ccv_nnc_tensor_arena_s() {
  release();
  for (auto& mv : multiviews) ccv_nnc_tensor_multiview_free(*mv);
}

ccv_nnc_tensor_sub_arena_s::~ccv_nnc_tensor_sub_arena_s() {
  for (auto& mv : multiviews) ccv_nnc_tensor_multiview_free(*mv);
}

void ccv_nnc_tensor_arena_s::release() {
  for (const Side& side : sides)
    if (side.raw && nnc::device_memory()) nnc::device_memory()->free(side.device, side.raw);
  sides.clear();
  if (!raw) return;
  if (allocator.isa && allocator.isa->free)
    allocator.isa->free(raw, allocator.context.free);
  else if (memory == CCV_TENSOR_GPU_MEMORY && nnc::device_memory())
    nnc::device_memory()->free(device, raw);
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
void alias_header(std::unique_ptr<ccv_nnc_tensor_view_t>& slot, int64_t& offset, const Graph* g, int d, const ccv_nnc_tensor_t* base) {
  const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
  const int n = nd_of(t.info.dim);
  int64_t stride[CCV_NNC_MAX_DIM_ALLOC], packed[CCV_NNC_MAX_DIM_ALLOC];
  alias_strides(g, d, stride);
  packed_strides(t.info.dim, n, packed);
  int64_t first_element = 0;
  for (int i = 0; i < n; i++) first_element += static_cast<int64_t>(t.ofs[i]) * stride[i];
  const int64_t bytes = first_element * static_cast<int64_t>(datatype_size(t.info.datatype));
  offset = bytes;
  if (std::equal(stride, stride + n, packed)) {
    set_header(slot, tensor_value(base->data.u8 ? base->data.u8 + bytes : nullptr, t.info, 0));
    return;
  }
  int istride[CCV_NNC_MAX_DIM_ALLOC] = {};
  for (int i = 0; i < n; i++) istride[i] = static_cast<int>(stride[i]);
  if (!slot) slot = std::make_unique<ccv_nnc_tensor_view_t>();
  view_fill(slot.get(), base, t.info, t.ofs, istride);
}
void alias_header(ccv_nnc_tensor_arena_t* arena, const Graph* g, int d, const ccv_nnc_tensor_t* base) {
  alias_header(arena->headers[static_cast<size_t>(d)], arena->offset[static_cast<size_t>(d)], g, d, base);
}


// ---- Loops and branches -------------------------------------------------
//
// Each loop body and case..of branch is planned on its own (the planner
// unrolls a body as few times as its carried values need, so no data moves
// between rounds) and occupies one block of its owner's arena, live while
// its exec runs (and after, while a result it holds is read). What a
// sub-graph only reads of its own (constants the caller fills, a carried
// value's first round) lives in the owner's arena for the whole run, like
// the owner's inputs.

enum class Role : uint8_t { None, Internal, Outer, External, CarriedIn, Constant };

struct SubLevel;
// A loop or case..of exec and its planned sub-graphs. `spec` is the block of
// the root arena its sub-graphs occupy: at the root, live while it runs (and
// while a result it holds is read); deeper, for the whole run.
struct ControlPlan {
  int exec = -1;
  size_t position = 0;                          // in its graph's order
  std::vector<std::unique_ptr<SubLevel>> subs;  // a loop's body, or the branches set
  std::vector<int> branch;                      // per sub: its branch index
  size_t spec = alloc::kNone;
  bool keep = false;  // the caller asked for one of its sub-graphs' symbols
  ControlPlan() = default;
  ControlPlan(ControlPlan&&) noexcept = default;
  ControlPlan& operator=(ControlPlan&&) noexcept = default;
  ~ControlPlan();
};

struct SubLevel {
  const Graph* g = nullptr;
  std::vector<ControlPlan> nested;  // loops and branches inside this one
  std::vector<int> nested_of;       // per symbol: the nested control holding its tensor (a carried result), -1
  bool loop = false;
  std::string label;               // "the body of exec symbol 3 (...)" for messages
  std::vector<int> order;          // head (the breakpoints and what they need) first for a loop
  std::vector<Role> role;          // per base symbol
  std::vector<char> used;          // per symbol (aliases included)
  std::vector<char> carried_from;  // per symbol
  std::vector<size_t> index;       // per base: its tensor in problem
  std::vector<size_t> extra;       // per base (Constant, or CarriedIn without an owner symbol): its tensor in the owner's problem
  alloc::Problem problem;
  alloc::Plan plan;
  std::vector<int> provides;       // owner symbols whose tensor this level holds (carried and hooked up)
  std::vector<char> keep;          // per symbol: asked for in the compile's outputs
};

ControlPlan::~ControlPlan() = default;

std::unique_ptr<SubLevel> analyse_sub(const Graph* sg, bool loop, const std::string& label, std::vector<char> keep,
                                      const ccv_nnc_tensor_symbol_t* outputs, int output_size);

// Plans the sub-graphs of loop / case..of exec e of g.
ControlPlan analyse_control(const Graph* g, int e, size_t position, const ccv_nnc_tensor_symbol_t* outputs, int output_size) {
  static const char* what = "ccv_nnc_symbolic_graph_compile";
  const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
  ControlPlan c;
  c.exec = e;
  c.position = position;
  const bool loop = x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE;
  if (!loop) NNC_CHECK(x.case_of, "%s: %s has no expression (ccv_nnc_symbolic_graph_set_case_of_expr)", what, exec_label(g, e).c_str());
  for (size_t i = 0; i < x.subs.size(); i++) {
    const Graph* sg = x.subs[i];
    if (!sg) continue;
    std::vector<char> keep(sg->tensors.size(), 0);
    for (int j = 0; j < output_size; j++)
      if (outputs[j].graph == sg && outputs[j].d >= 0 && static_cast<size_t>(outputs[j].d) < keep.size()) {
        keep[static_cast<size_t>(outputs[j].d)] = 1;
        c.keep = true;
      }
    const std::string label = loop ? "the body of " + exec_label(g, e) : format("branch %zu of %s", i, exec_label(g, e).c_str());
    c.subs.push_back(analyse_sub(sg, loop, label, std::move(keep), outputs, output_size));
    c.branch.push_back(static_cast<int>(i));
    for (const auto& n : c.subs.back()->nested) c.keep = c.keep || n.keep;
  }
  return c;
}

// Every sub-graph level under c, outermost first.
template <class F>
void for_each_level(ControlPlan& c, F&& f) {
  for (auto& L : c.subs) {
    f(*L);
    for (ControlPlan& n : L->nested) for_each_level(n, f);
  }
}

// Builds the level's problem and plans it. `keep` lists the symbols of this
// graph the caller asked for.
std::unique_ptr<SubLevel> analyse_sub(const Graph* sg, bool loop, const std::string& label, std::vector<char> keep,
                                      const ccv_nnc_tensor_symbol_t* outputs, int output_size) {
  static const char* what = "ccv_nnc_symbolic_graph_compile";
  auto L = std::make_unique<SubLevel>();
  L->g = sg;
  L->loop = loop;
  L->label = label;
  const size_t nt = sg->tensors.size();
  keep.resize(nt, 0);
  L->keep = keep;
  if (loop)
    NNC_CHECK(sg->while_expr && !sg->breakpoints.empty(), "%s: %s has no expression (ccv_nnc_symbolic_graph_set_while_expr)", what,
              label.c_str());
  std::vector<int> order;
  try {
    order = exec_order(sg, nullptr, 0, nullptr, 0);
  } catch (const Error& e) {
    fail(e.code(), "%s: %s: %s", what, label.c_str(), e.what());
  }
  if (loop) {  // the breakpoints and everything they need run first in each round
    std::vector<char> in_order(sg->execs.size(), 0), head(sg->execs.size(), 0);
    for (int e : order) in_order[static_cast<size_t>(e)] = 1;
    std::vector<std::vector<int>> incoming(sg->execs.size());
    for (int e : order)
      for (int t : sg->execs[static_cast<size_t>(e)].outgoing)
        if (in_order[static_cast<size_t>(t)]) incoming[static_cast<size_t>(t)].push_back(e);
    std::vector<int> stack;
    for (int b : sg->breakpoints) {
      NNC_CHECK(b >= 0 && static_cast<size_t>(b) < sg->execs.size() && in_order[static_cast<size_t>(b)],
                "%s: %s: breakpoint exec symbol %d is not part of the body", what, label.c_str(), b);
      stack.push_back(b);
    }
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (head[static_cast<size_t>(v)]) continue;
      head[static_cast<size_t>(v)] = 1;
      for (int u : incoming[static_cast<size_t>(v)]) stack.push_back(u);
    }
    std::vector<int> reordered;
    for (int e : order)
      if (head[static_cast<size_t>(e)]) reordered.push_back(e);
    const size_t head_size = reordered.size();
    for (int e : order)
      if (!head[static_cast<size_t>(e)]) reordered.push_back(e);
    order = std::move(reordered);
    (void)head_size;
  }
  L->order = order;
  L->nested_of.assign(nt, -1);
  for (size_t k = 0; k < order.size(); k++) {
    if (!control_of(sg->execs[static_cast<size_t>(order[k])])) continue;
    L->nested.push_back(analyse_control(sg, order[k], k, outputs, output_size));
    for (const auto& sub : L->nested.back().subs)
      for (int p : sub->provides) {
        NNC_CHECK(sg->tensors[static_cast<size_t>(p)].outer < 0,
                  "%s: %s: %s is a carried result of an inner loop handed further out; not supported yet (copy it in the body)", what,
                  label.c_str(), tensor_label(sg, p).c_str());
        L->nested_of[static_cast<size_t>(p)] = static_cast<int>(L->nested.size() - 1);
      }
  }
  int64_t head_end = 0;
  if (loop)
    for (size_t k = 0; k < order.size(); k++)
      for (int b : sg->breakpoints)
        if (order[k] == b) head_end = std::max<int64_t>(head_end, static_cast<int64_t>(k));
  const int64_t steps = std::max<int64_t>(static_cast<int64_t>(order.size()), 1);

  L->used.assign(nt, 0);
  std::vector<char> written(nt, 0), carried_to(nt, 0);
  L->carried_from.assign(nt, 0);
  std::vector<int64_t> first(nt, std::numeric_limits<int64_t>::max()), last(nt, -1);
  auto use = [&](int d, const std::string& by) {
    const Graph::Tensor& t = sg->tensors[static_cast<size_t>(d)];
    NNC_CHECK(!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(t.flags), "%s: %s uses %s, which was freed", what, by.c_str(), tensor_label(sg, d).c_str());
    NNC_CHECK(nd_of(t.info.dim) > 0, "%s: %s uses %s, which has no shape", what, by.c_str(), tensor_label(sg, d).c_str());
    NNC_CHECK(!(t.flags & (CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES)),
              "%s: %s is flagged to be initialised; symbols of a loop or branch cannot be yet (initialise them in the enclosing graph)",
              what, tensor_label(sg, d).c_str());
    L->used[static_cast<size_t>(d)] = 1;
    L->used[static_cast<size_t>(base_of(sg, d))] = 1;
  };
  for (size_t k = 0; k < order.size(); k++) {
    const Graph::Exec& x = sg->execs[static_cast<size_t>(order[k])];
    const std::string by = label + ", " + exec_label(sg, order[k]);
    for (int d : x.inputs)
      if (d >= 0) {
        use(d, by);
        const size_t b = static_cast<size_t>(base_of(sg, d));
        last[b] = std::max(last[b], static_cast<int64_t>(k));
      }
    for (int d : x.outputs)
      if (d >= 0) {
        use(d, by);
        const size_t b = static_cast<size_t>(base_of(sg, d));
        written[b] = 1;
        first[b] = std::min(first[b], static_cast<int64_t>(k));
        last[b] = std::max(last[b], static_cast<int64_t>(k));
      }
  }
  for (int d : sg->while_inputs)
    if (d >= 0) {
      use(d, label + "'s expression");
      const size_t b = static_cast<size_t>(base_of(sg, d));
      last[b] = std::max(last[b], head_end);
    }
  for (const auto& c : sg->carry_overs) {
    use(c.first, label + "'s carried pair");
    use(c.second, label + "'s carried pair");
    NNC_CHECK(written[static_cast<size_t>(c.first)], "%s: %s carries %s, which nothing in the body writes", what, label.c_str(),
              tensor_label(sg, c.first).c_str());
    NNC_CHECK(!written[static_cast<size_t>(c.second)], "%s: %s carries a value into %s, which the body also writes (SSA)", what,
              label.c_str(), tensor_label(sg, c.second).c_str());
    L->carried_from[static_cast<size_t>(c.first)] = 1;
    carried_to[static_cast<size_t>(c.second)] = 1;
  }
  for (size_t d = 0; d < nt; d++)
    if (keep[d]) L->used[static_cast<size_t>(base_of(sg, static_cast<int>(d)))] = 1;

  L->role.assign(nt, Role::None);
  L->index.assign(nt, alloc::kNone);
  L->extra.assign(nt, alloc::kNone);
  L->problem.total_steps = steps;
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = sg->tensors[d];
    if (!L->used[d] || t.alias_of >= 0) continue;
    if (L->nested_of[d] >= 0) continue;  // an inner loop holds it (Role::None here)
    const bool hooked = t.outer >= 0;
    Role r;
    if (hooked && !written[d])
      r = carried_to[d] ? Role::CarriedIn : Role::Outer;
    else if (hooked)
      r = L->carried_from[d] ? Role::Internal : Role::External;
    else if (!written[d])
      r = carried_to[d] ? Role::CarriedIn : Role::Constant;
    else
      r = Role::Internal;
    L->role[d] = r;
    if (r == Role::Internal && hooked) L->provides.push_back(t.outer);
    if (r != Role::Internal && r != Role::CarriedIn) continue;
    alloc::TensorSpec s;
    s.size = static_cast<int64_t>(bytes_of(t.info));
    s.alignment = kAlignment;
    s.first = written[d] ? first[d] : 0;
    s.last = keep[d] ? steps - 1 : std::max(last[d], s.first);
    L->index[d] = L->problem.tensors.size();
    L->problem.tensors.push_back(s);
  }
  for (const auto& c : sg->carry_overs)
    L->problem.carried.push_back({L->index[static_cast<size_t>(c.first)], L->index[static_cast<size_t>(c.second)]});
  auto planned = alloc::plan(L->problem);
  NNC_CHECK(planned, "%s: %s: the memory planner failed: %s", what, label.c_str(), planned.error().c_str());
  L->plan = std::move(planned.value());
  return L;
}

// Where tensor `t` of a level's problem sits in iteration `j`, in bytes from the level's block.
uint64_t placed(const alloc::Plan& plan, size_t t, unsigned j) {
  const alloc::Placement& p = plan.iterations.empty() ? plan.placements.at(t) : plan.iterations.at(j % plan.iterations.size()).at(t);
  return plan.buffer_base.at(p.buffer) + p.offset;
}

ccv_nnc_tensor_t* add_header(ccv_nnc_tensor_sub_arena_s* sa, unsigned char* data, const ccv_nnc_tensor_param_t& info) {
  sa->headers.push_back(nullptr);
  set_header(sa->headers.back(), tensor_value(data, info, 0));
  return reinterpret_cast<ccv_nnc_tensor_t*>(sa->headers.back().get());
}

ccv_nnc_tensor_t* add_multiview(std::vector<std::unique_ptr<ccv_nnc_tensor_multiview_t>>& owned, std::vector<ccv_nnc_tensor_t*> data,
                                uint8_t kind, uint16_t repeat, const ccv_nnc_graph_t* anchor) {
  owned.push_back(std::make_unique<ccv_nnc_tensor_multiview_t>());
  ccv_nnc_tensor_multiview_t* mv = owned.back().get();
  ccv_nnc_tensor_multiview(data.data(), kind, repeat, anchor, mv);
  NNC_CHECK(mv->repeat == repeat, "ccv_nnc_symbolic_graph_compile: cannot make a multi-view tensor: %s", ccv_nnc_error_message());
  return reinterpret_cast<ccv_nnc_tensor_t*>(mv);
}

// The tensor a run of the arena last left a symbol in (the first round's
// before any run; a case..of output's branch result).
ccv_nnc_tensor_t* current(ccv_nnc_tensor_t* t) {
  for (int depth = 0; t && CCV_IS_TENSOR_MULTIVIEW(t) && depth < 64; depth++) {
    auto* mv = reinterpret_cast<ccv_nnc_tensor_multiview_t*>(t);
    t = mv->it ? mv->it : CCV_NNC_MULTIVIEW_DATA(mv)[mv->anchor == CCV_NNC_MULTIVIEW_PHI ? 1 : 0];
  }
  return t;
}

struct BuildCtx {
  ccv_nnc_tensor_arena_t* arena = nullptr;
  const alloc::Plan* plan = nullptr;
  ccv_nnc_graph_exec_arena_t* exec_arena = nullptr;
  TapeInstances tapes;  // this compile's copies of differentiated loops' tapes
  unsigned char* at(size_t spec) const {
    return plan->placements.at(spec).buffer == alloc::kNone ? nullptr : arena->buffer + plan->arena_offset(spec);
  }
};
using TensorFn = std::function<ccv_nnc_tensor_t*(int)>;
using OverrideFn = std::function<void(int, ccv_nnc_tensor_t*)>;

ccv_nnc_graph_exec_t build_control(const Graph* g, const ControlPlan& c, ccv_nnc_graph_t* cg, BuildCtx& ctx, const TensorFn& tensor,
                                   const TensorFn& plain, const OverrideFn& set_override,
                                   std::vector<std::unique_ptr<ccv_nnc_tensor_multiview_t>>& owned);

// The sub-graph's tensors and nodes. `block` is where its block of the
// root arena starts; `outer(d)` gives the owner's tensor for its symbol d
// (as nodes there see it), `outer_plain(d)` the owner's tensor before a
// case..of made it a phi (what a branch writes a case..of output into).
std::unique_ptr<ccv_nnc_tensor_sub_arena_s> build_sub(const SubLevel& L, unsigned char* block, ccv_nnc_graph_t* cg, const TensorFn& outer,
                                                      const TensorFn& outer_plain, BuildCtx& ctx,
                                                      std::vector<ccv_nnc_graph_exec_t>& nodes) {
  static const char* what = "ccv_nnc_symbolic_graph_compile";
  const Graph* sg = L.g;
  const size_t nt = sg->tensors.size();
  auto sa = std::make_unique<ccv_nnc_tensor_sub_arena_s>();
  ccv_nnc_tensor_sub_arena_s* const sa_ptr = sa.get();
  auto extra_at = [&](size_t spec, const ccv_nnc_tensor_param_t& info) { return add_header(sa_ptr, ctx.at(spec), info); };
  sa->graph = sg;
  sa->tensors.assign(nt, nullptr);
  sa->initial.assign(nt, nullptr);
  sa->count.type = CCV_TENSOR_CPU_MEMORY;
  sa->count.info = slot_params(sg, CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL);
  sa->count.data.i64 = &cg->loop_count;
  sa->count.data_size = sizeof(int64_t);
  const unsigned unroll = std::max(1u, L.plan.unroll);
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = sg->tensors[d];
    switch (L.role[d]) {
      case Role::None:
        break;
      case Role::Outer:
        sa->tensors[d] = outer(t.outer);
        sa->initial[d] = sa->tensors[d];
        break;
      case Role::External:
        sa->tensors[d] = outer_plain(t.outer);
        break;
      case Role::Constant:
        sa->tensors[d] = extra_at(L.extra[d], t.info);
        sa->initial[d] = sa->tensors[d];
        break;
      case Role::Internal: {
        const size_t i = L.index[d];
        bool same = true;
        for (unsigned j = 1; j < unroll; j++) same = same && placed(L.plan, i, j) == placed(L.plan, i, 0);
        if (same) {
          sa->tensors[d] = add_header(sa.get(), block + placed(L.plan, i, 0), t.info);
        } else {
          std::vector<ccv_nnc_tensor_t*> data;
          for (unsigned j = 0; j < unroll; j++) data.push_back(add_header(sa.get(), block + placed(L.plan, i, j), t.info));
          sa->tensors[d] = add_multiview(sa->multiviews, data, CCV_NNC_MULTIVIEW_K0N, static_cast<uint16_t>(unroll), cg);
        }
        break;
      }
      case Role::CarriedIn: {
        // Round 0 reads the owner's symbol (or a tensor the caller fills);
        // round c >= 1 what the body wrote in round c - 1.
        ccv_nnc_tensor_t* init = t.outer >= 0 ? outer(t.outer) : extra_at(L.extra[d], t.info);
        std::vector<ccv_nnc_tensor_t*> data{init};
        for (unsigned j = 0; j < unroll; j++) data.push_back(add_header(sa.get(), block + placed(L.plan, L.index[d], j + 1), t.info));
        sa->tensors[d] = add_multiview(sa->multiviews, data, CCV_NNC_MULTIVIEW_K1N, static_cast<uint16_t>(unroll), cg);
        sa->initial[d] = init;
        break;
      }
    }
  }
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = sg->tensors[d];
    if (!L.used[d] || t.alias_of < 0) continue;
    ccv_nnc_tensor_t* base = sa->tensors[static_cast<size_t>(t.alias_of)];
    NNC_CHECK(base && !CCV_IS_TENSOR_MULTIVIEW(base) && !CCV_IS_TENSOR_VIEW(base),
              "%s: %s: %s is an alias of %s, which changes from round to round or is a view; aliases of such symbols are not supported yet",
              what, L.label.c_str(), tensor_label(sg, static_cast<int>(d)).c_str(), tensor_label(sg, t.alias_of).c_str());
    sa->headers.push_back(nullptr);
    int64_t offset = 0;
    alias_header(sa->headers.back(), offset, sg, static_cast<int>(d), base);
    sa->tensors[d] = reinterpret_cast<ccv_nnc_tensor_t*>(sa->headers.back().get());
  }
  const std::vector<ccv_nnc_tensor_t*> plain = sa->tensors;  // before inner case..of outputs become phis
  auto tensor = [&](int d) -> ccv_nnc_tensor_t* {
    if (d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) return &sa->count;
    return d < 0 ? nullptr : sa->tensors[static_cast<size_t>(d)];
  };
  const TensorFn tensor_fn = tensor;
  const TensorFn plain_fn = [&](int d) -> ccv_nnc_tensor_t* { return d < 0 ? nullptr : plain[static_cast<size_t>(d)]; };
  const OverrideFn override_fn = [&](int d, ccv_nnc_tensor_t* t) { sa_ptr->tensors[static_cast<size_t>(d)] = t; };
  nodes.assign(sg->execs.size(), ccv_nnc_graph_exec_t{-1, nullptr});
  std::vector<ccv_nnc_tensor_t*> in, out;
  size_t next_nested = 0;
  for (int e : L.order) {
    const Graph::Exec& x = sg->execs[static_cast<size_t>(e)];
    if (control_of(x)) {
      const ControlPlan& nc = L.nested.at(next_nested++);
      nodes[static_cast<size_t>(e)] = build_control(sg, nc, cg, ctx, tensor_fn, plain_fn, override_fn, sa_ptr->multiviews);
      continue;
    }
    in.clear();
    out.clear();
    for (int d : x.inputs) in.push_back(tensor(d));
    for (int d : x.outputs) out.push_back(tensor(d));
    nodes[static_cast<size_t>(e)] =
        graph::exec_new(cg, instantiate(x.cmd, ctx.tapes), x.hint, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
  }
  for (int e : L.order)
    for (int t : sg->execs[static_cast<size_t>(e)].outgoing)
      if (nodes[static_cast<size_t>(t)].graph)
        cg->nodes[static_cast<size_t>(nodes[static_cast<size_t>(e)].d)].outgoing.push_back(nodes[static_cast<size_t>(t)].d);
  if (L.loop) {
    std::vector<ccv_nnc_tensor_t*> expr_in;
    for (int d : sg->while_inputs) expr_in.push_back(tensor(d));
    std::vector<ccv_nnc_graph_exec_t> bps;
    for (int b : sg->breakpoints) bps.push_back(nodes[static_cast<size_t>(b)]);
    graph::set_while_expr(cg, sg->while_expr, sg->while_data, expr_in.data(), static_cast<int>(expr_in.size()), bps.data(),
                          static_cast<int>(bps.size()));
  }
  graph::invalidate(cg);
  return sa;
}

ccv_nnc_graph_exec_t build_control(const Graph* g, const ControlPlan& c, ccv_nnc_graph_t* cg, BuildCtx& ctx, const TensorFn& tensor,
                                   const TensorFn& plain, const OverrideFn& set_override,
                                   std::vector<std::unique_ptr<ccv_nnc_tensor_multiview_t>>& owned) {
  const Graph::Exec& x = g->execs[static_cast<size_t>(c.exec)];
  unsigned char* block = ctx.at(c.spec);
  auto build = [&](const SubLevel& L, ccv_nnc_graph_t* sub_cg) {
    std::vector<ccv_nnc_graph_exec_t> nodes;
    auto sa = build_sub(L, block, sub_cg, tensor, plain, ctx, nodes);
    ctx.exec_arena->subs.emplace_back(L.g, std::move(nodes));
    ctx.arena->subs.push_back(std::move(sa));
    return ctx.arena->subs.back().get();
  };
  if (x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE) {
    auto* body = new ccv_nnc_graph_s();
    ccv_nnc_graph_exec_t node;
    try {
      node = graph::while_new(cg, x.cmd.cmd, body);
    } catch (...) {
      delete body;
      throw;
    }
    const SubLevel& L = *c.subs[0];
    ccv_nnc_tensor_sub_arena_s* sa = build(L, body);
    // A carried result handed to the owner: its nodes see the body's tensor.
    for (int p : L.provides)
      for (size_t d = 0; d < L.g->tensors.size(); d++)
        if (L.g->tensors[d].outer == p && L.role[d] == Role::Internal) set_override(p, sa->tensors[d]);
    return node;
  }
  // Each output is a phi: the branch's result, or the fall-back input when no branch runs.
  for (int o : x.outputs) {
    ccv_nnc_tensor_t* result = plain(o);
    const int b = g->tensors[static_cast<size_t>(o)].bypass;
    std::vector<ccv_nnc_tensor_t*> data{b >= 0 ? tensor(b) : result, result};
    set_override(o, add_multiview(owned, data, CCV_NNC_MULTIVIEW_K0N, 2, reinterpret_cast<const ccv_nnc_graph_t*>(CCV_NNC_MULTIVIEW_PHI)));
  }
  std::vector<ccv_nnc_tensor_t*> in, out;
  for (int i = 0; i < x.expr_inputs; i++) in.push_back(tensor(x.declared_inputs[static_cast<size_t>(i)]));
  for (int o : x.outputs) out.push_back(tensor(o));
  const ccv_nnc_graph_exec_t node =
      graph::case_of_new(cg, x.cmd.cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
  graph::set_case_of_expr(cg, node, x.case_of, x.case_of_data, 0);
  for (size_t i = 0; i < c.subs.size(); i++) {
    auto* branch = new ccv_nnc_graph_s();
    try {
      graph::set_case_of(cg, node, branch, c.branch[i]);
    } catch (...) {
      delete branch;
      throw;
    }
    build(*c.subs[i], branch);
  }
  return node;
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
  NNC_CHECK(!g->parent, "%s: the graph is a loop body or a branch of %s; compile the graph that owns it", what,
            exec_label(g->parent, g->exec_in_parent).c_str());
  std::vector<int> order;
  try {
    order = exec_order(g, sources, source_size, destinations, destination_size);
  } catch (const Error& e) {
    fail(e.code(), "%s: %s", what, e.what());
  }
  const size_t nt = g->tensors.size();

  // Loops and branches, each planned on its own (analyse_sub). Outputs the
  // caller asks for inside them keep their values to the end of the run.
  std::vector<ControlPlan> controls;
  std::vector<char> from_sub(nt, 0);  // symbols whose tensor a loop holds (a carried result it hands out)
  std::vector<int> control_of_symbol(nt, -1);
  for (size_t k = 0; k < order.size(); k++) {
    if (!control_of(g->execs[static_cast<size_t>(order[k])])) continue;
    controls.push_back(analyse_control(g, order[k], k, outputs, output_size));
    for (const auto& L : controls.back().subs)
      for (int p : L->provides) {
        from_sub[static_cast<size_t>(p)] = 1;
        control_of_symbol[static_cast<size_t>(p)] = static_cast<int>(controls.size() - 1);
      }
  }
  for (int j = 0; j < output_size; j++)
    if (outputs[j].graph != g) {
      bool inside = false;
      for (ControlPlan& c : controls) for_each_level(c, [&](SubLevel& L) { inside = inside || L.g == outputs[j].graph; });
      NNC_CHECK(inside, "%s: outputs[%d] (tensor symbol %d) belongs to a graph that is neither this one nor one of its compiled loops or branches",
                what, j, outputs[j].d);
    }

  // The caller's tensors.
  std::vector<const ccv_nnc_tensor_t*> bound(nt, nullptr);
  for (int i = 0; i < bind_size; i++) {
    const std::string w = format("%s: tensor_binds[%d]", what, i);
    NNC_CHECK(binds[i].symbol.graph == g || !binds[i].symbol.graph,
              "%s: binding a symbol of a loop or branch is not supported yet; bind the enclosing graph's symbol it stands for", w.c_str());
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
    NNC_CHECK(!from_sub[static_cast<size_t>(binds[i].symbol.d)], "%s: %s is a loop's carried result; it cannot be bound", w.c_str(),
              tensor_label(g, binds[i].symbol.d).c_str());
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
    if (outputs[i].graph != g) continue;  // a loop's or branch's (above)
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
  // Where each base is first touched (read or written), in order positions.
  std::vector<int64_t> touched(nt, std::numeric_limits<int64_t>::max());
  for (size_t k = 0; k < order.size(); k++) {
    const Graph::Exec& x = g->execs[static_cast<size_t>(order[k])];
    for (const std::vector<int>* io : {&x.inputs, &x.outputs})
      for (int d : *io)
        if (d >= 0) {
          const size_t b = static_cast<size_t>(base_of(g, d));
          touched[b] = std::min(touched[b], static_cast<int64_t>(k));
          if (io == &x.outputs) written[b] = 1;
        }
  }
  // The initialised symbols (bases or aliases in use). A base some exec here
  // writes is set just before the first exec that touches it (a gradient's
  // zero-initialised accumulator lives from its first use, not from the start
  // of the run); the others (inputs, kept across runs) before the first exec.
  constexpr int kInit = CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS | CCV_NNC_TENSOR_SYMBOL_INIT_ONES;
  std::vector<int> initialised;
  std::vector<char> init_base(nt, 0), late_base(nt, 0);
  for (size_t d = 0; d < nt; d++)
    if (used[d] && (g->tensors[d].flags & kInit)) {
      const size_t b = static_cast<size_t>(base_of(g, static_cast<int>(d)));
      initialised.push_back(static_cast<int>(d));
      init_base[b] = 1;
      if (written[b] && !from_sub[b] && touched[b] != std::numeric_limits<int64_t>::max())
        late_base[b] = 1;
      else
        any_init = true;
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
        first[b] = std::min(first[b], step);
        last[b] = std::max(last[b], step);
      }
  }
  for (size_t b = 0; b < nt; b++)
    if (late_base[b]) first[b] = touched[b] + shift;
  // The bases the arena holds, and the problem the planner solves.
  std::vector<int> bases;
  std::vector<size_t> index(nt, alloc::kNone);
  alloc::Problem problem;
  problem.total_steps = std::max<int64_t>(end + 1, 1);
  for (size_t d = 0; d < nt; d++) {
    if (!used[d] || g->tensors[d].alias_of >= 0 || from_sub[d]) continue;
    const Graph::Tensor& t = g->tensors[d];
    alloc::TensorSpec s;
    s.size = static_cast<int64_t>(bytes_of(t.info));
    s.alignment = kAlignment;
    const bool init = init_base[d] && !late_base[d];
    // Inputs (nothing here writes them) and symbols initialised before the
    // first exec hold their value from the start; inputs and outputs to the end.
    s.first = !written[d] || init ? 0 : first[d];
    s.last = !written[d] || keep[d] ? std::max<int64_t>(end, 0) : std::max(last[d], s.first);
    s.external = bound[d] != nullptr;
    index[d] = problem.tensors.size();
    bases.push_back(static_cast<int>(d));
    problem.tensors.push_back(s);
  }
  // A loop's or branch's block lives while it runs, and on while a result it
  // holds is read (to the end when the caller asked for one); what the
  // sub-graphs only read of their own lives through the whole run.
  for (ControlPlan& c : controls) {
    alloc::TensorSpec s;
    for (const auto& L : c.subs) s.size = std::max<int64_t>(s.size, static_cast<int64_t>(L->plan.arena));
    s.alignment = kAlignment;
    s.first = static_cast<int64_t>(c.position) + shift;
    s.last = c.keep ? std::max<int64_t>(end, 0) : s.first;
    for (size_t d = 0; d < nt; d++)
      if (from_sub[d] && control_of_symbol[d] == static_cast<int>(&c - controls.data()))
        s.last = keep[d] ? std::max<int64_t>(end, 0) : std::max(s.last, last[d]);
    c.spec = problem.tensors.size();
    problem.tensors.push_back(s);
    for_each_level(c, [&](SubLevel& L) {
      for (size_t d = 0; d < L.role.size(); d++)
        if (L.role[d] == Role::Constant || (L.role[d] == Role::CarriedIn && L.g->tensors[d].outer < 0)) {
          alloc::TensorSpec e;
          e.size = static_cast<int64_t>(bytes_of(L.g->tensors[d].info));
          e.alignment = kAlignment;
          e.first = 0;
          e.last = std::max<int64_t>(end, 0);
          L.extra[d] = problem.tensors.size();
          problem.tensors.push_back(e);
        }
      // Loops and branches inside: their own block for the whole run (a
      // body's rounds may place its tensors differently; these stay put).
      for (ControlPlan& n : L.nested) {
        alloc::TensorSpec e;
        for (const auto& sub : n.subs) e.size = std::max<int64_t>(e.size, static_cast<int64_t>(sub->plan.arena));
        e.alignment = kAlignment;
        e.first = 0;
        e.last = std::max<int64_t>(end, 0);
        n.spec = problem.tensors.size();
        problem.tensors.push_back(e);
      }
    });
  }
  // In place: an output may take the place of an input whose last read is this step.
  for (size_t k = 0; k < order.size(); k++) {
    const int64_t step = static_cast<int64_t>(k) + shift;
    const Graph::Exec& x = g->execs[static_cast<size_t>(order[k])];
    if (control_of(x)) continue;
    std::vector<char> taken(x.inputs.size(), 0);
    for (size_t j = 0; j < x.outputs.size(); j++) {
      const int o = x.outputs[j];
      // (An initialised output is set before its exec runs: it cannot share its input's bytes.)
      if (o < 0 || g->tensors[static_cast<size_t>(o)].alias_of >= 0 || !g->tensors[static_cast<size_t>(o)].aliases.empty() ||
          bound[static_cast<size_t>(o)] || from_sub[static_cast<size_t>(o)] || init_base[static_cast<size_t>(o)])
        continue;
      const alloc::TensorSpec& os = problem.tensors[index[static_cast<size_t>(o)]];
      if (os.first != step) continue;
      for (size_t i = 0; i < x.inputs.size(); i++) {
        const int in = x.inputs[i];
        // Inputs (no writer here) and kept symbols hold their values across runs: never overwritten.
        if (in < 0 || in == o || taken[i] || from_sub[static_cast<size_t>(in)] || g->tensors[static_cast<size_t>(in)].alias_of >= 0 ||
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
  // Where each arena tensor lives: host memory, or one GPU's. Tensors of one
  // place share one buffer and one plan; a graph over several GPUs (data
  // parallelism) gets a buffer and a plan per device, so tensors of two
  // devices never share bytes.
  struct Place {
    int memory, device;
    bool operator==(const Place& o) const { return memory == o.memory && device == o.device; }
  };
  auto place_of = [](const ccv_nnc_tensor_param_t& info) {
    const int m = CCV_TENSOR_GET_MEMORY(info.type) == CCV_TENSOR_GPU_MEMORY ? CCV_TENSOR_GPU_MEMORY : CCV_TENSOR_CPU_MEMORY;
    return Place{m, m == CCV_TENSOR_GPU_MEMORY ? CCV_TENSOR_GET_DEVICE_ID(info.type) : 0};
  };
  std::vector<Place> places;
  std::vector<std::string> first_at;  // per place: the first symbol there, for messages
  std::vector<size_t> group(problem.tensors.size(), 0);  // per spec: its place
  auto place = [&](const Place& pl, const std::string& who) {
    for (size_t i = 0; i < places.size(); i++)
      if (places[i] == pl) return i;
    places.push_back(pl);
    first_at.push_back(who);
    return places.size() - 1;
  };
  auto where = [](const Place& pl) {
    return pl.memory == CCV_TENSOR_GPU_MEMORY ? format("GPU memory (device %d)", pl.device) : std::string("CPU memory");
  };
  for (int b : bases)
    if (!bound[static_cast<size_t>(b)] && problem.tensors[index[static_cast<size_t>(b)]].size > 0)
      group[index[static_cast<size_t>(b)]] = place(place_of(g->tensors[static_cast<size_t>(b)].info), tensor_label(g, b));
  for (ControlPlan& c : controls)
    for_each_level(c, [&](SubLevel& L) {
      for (size_t d = 0; d < L.role.size(); d++)
        if (L.role[d] == Role::Internal || L.role[d] == Role::CarriedIn || L.role[d] == Role::Constant) {
          const Place pl = place_of(L.g->tensors[d].info);
          NNC_CHECK(places.empty() || pl == places[0],
                    "%s: %s is in %s but other symbols the arena holds are not; a graph with loops or branches "
                    "keeps its tensors on one device (bind the tensors of the other side)",
                    what, (L.label + ", " + tensor_label(L.g, static_cast<int>(d))).c_str(), where(pl).c_str());
          place(pl, tensor_label(L.g, static_cast<int>(d)));
        }
    });
  if (places.empty()) places.push_back(Place{CCV_TENSOR_CPU_MEMORY, 0});
  for (size_t i = 1; i < places.size(); i++)
    NNC_CHECK(places[i].memory == CCV_TENSOR_GPU_MEMORY && places[0].memory == CCV_TENSOR_GPU_MEMORY,
              "%s: %s is in %s but %s is in %s; one arena holds one kind of memory, CPU or GPU "
              "(bind the tensors of the other side)",
              what, first_at[0].c_str(), where(places[0]).c_str(), first_at[i].c_str(), where(places[i]).c_str());
  NNC_CHECK(places.size() == 1 || controls.empty(), "%s: a graph over several GPUs cannot hold loops or branches yet", what);
  NNC_CHECK(places.size() == 1 || !allocator.isa, "%s: a graph over several GPUs takes its memory from the devices, not from a custom allocator", what);
  // One plan per place: the other places' tensors are outside it.
  std::vector<alloc::Plan> plans;
  for (size_t gi = 0; gi < places.size(); gi++) {
    alloc::Problem sub;
    const alloc::Problem* use = &problem;
    if (places.size() > 1) {
      sub = problem;
      for (size_t i = 0; i < sub.tensors.size(); i++)
        if (group[i] != gi) sub.tensors[i].external = true;
      sub.inplace.clear();
      for (const auto& ip : problem.inplace)
        if (group[ip.output] == gi && group[ip.input] == gi) sub.inplace.push_back(ip);
      use = &sub;
    }
    auto planned = alloc::plan(*use);
    NNC_CHECK(planned, "%s: the memory planner failed: %s", what, planned.error().c_str());
    plans.push_back(std::move(planned.value()));
  }
  const alloc::Plan& plan = plans[0];
  const int arena_memory = places[0].memory, arena_device = places[0].device;
  // Offsets in one address space, for the ordering of reused bytes below:
  // each place's arena after the ones before it, so two places never overlap.
  std::vector<uint64_t> place_base(places.size(), 0);
  for (size_t gi = 1; gi < places.size(); gi++) place_base[gi] = place_base[gi - 1] + plans[gi - 1].arena + kAlignment;
  auto offset_of = [&](size_t spec) { return place_base[group[spec]] + plans[group[spec]].arena_offset(spec); };

  // A device's arena from the CUDA module's memory (cudaMalloc-aligned).
  auto device_arena = [&](int device, uint64_t bytes) {
    const DeviceMemory* dm = device_memory();
    NNC_CHECK(dm, "%s: the graph's symbols are in GPU memory, but this build of NNC has no CUDA support", what);
    NNC_CHECK(device < dm->count(), "%s: the graph's symbols are in the memory of GPU %d, but %d GPU%s found", what, device,
              dm->count(), dm->count() == 1 ? " was" : "s were");
    return dm->alloc(device, static_cast<size_t>(bytes));
  };

  auto arena = std::make_unique<ccv_nnc_tensor_arena_s>();
  arena->graph = g;
  arena->planned = plan.arena;
  arena->lower_bound = plan.lower_bound;
  arena->allocator = allocator;
  arena->memory = arena_memory;
  arena->device = arena_device;
  if (plan.arena > 0 && arena_memory == CCV_TENSOR_GPU_MEMORY && !allocator.isa) {
    const uint64_t bytes = (plan.arena + 63) & ~uint64_t{63};
    arena->raw = device_arena(arena_device, bytes);
    arena->buffer = static_cast<unsigned char*>(arena->raw);
    arena->size = bytes;
  } else if (plan.arena > 0) {
    const uint64_t bytes = (plan.arena + 63) & ~uint64_t{63};
    if (allocator.isa) {
      NNC_CHECK(allocator.isa->alloc && allocator.isa->free, "%s: the custom allocator needs both alloc and free", what);
      // Any alignment the allocator gives: the arena starts at the next 64-byte boundary inside.
      const int type = arena_memory == CCV_TENSOR_GPU_MEMORY ? (CCV_TENSOR_GPU_MEMORY | (arena_device << 8)) : CCV_TENSOR_CPU_MEMORY;
      void* p = allocator.isa->alloc(type, 0, static_cast<size_t>(bytes + kAlignment), allocator.context.alloc);
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
  // The other devices' arenas (several GPUs only).
  std::vector<unsigned char*> place_buffer(places.size(), nullptr);
  place_buffer[0] = arena->buffer;
  for (size_t gi = 1; gi < places.size(); gi++) {
    if (plans[gi].arena == 0) continue;
    const uint64_t bytes = (plans[gi].arena + 63) & ~uint64_t{63};
    ccv_nnc_tensor_arena_s::Side side;
    side.device = places[gi].device;
    side.raw = device_arena(side.device, bytes);
    side.size = bytes;
    arena->sides.push_back(side);
    place_buffer[gi] = static_cast<unsigned char*>(side.raw);
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
      unsigned char* ptr = place_buffer[group[index[d]]] + plans[group[index[d]]].arena_offset(index[d]);
      set_header(arena->headers[d], tensor_value(ptr, g->tensors[d].info, 0));
      arena->own[d] = ptr;
    }
  }
  for (size_t d = 0; d < nt; d++) {
    const Graph::Tensor& t = g->tensors[d];
    if (!used[d] || t.alias_of < 0) continue;
    NNC_CHECK(!from_sub[static_cast<size_t>(t.alias_of)], "%s: %s is an alias of %s, a loop's carried result; such aliases are not supported yet",
              what, tensor_label(g, static_cast<int>(d)).c_str(), tensor_label(g, t.alias_of).c_str());
    const ccv_nnc_tensor_t* base = reinterpret_cast<const ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(t.alias_of)].get());
    NNC_CHECK(!is_view(base), "%s: %s is an alias of %s, which is bound to a tensor view; bind a plain tensor", what,
              tensor_label(g, static_cast<int>(d)).c_str(), tensor_label(g, t.alias_of).c_str());
    alias_header(arena.get(), g, static_cast<int>(d), base);
  }
  arena->override.assign(nt, nullptr);
  auto tensor = [&](int d) -> ccv_nnc_tensor_t* {
    if (d < 0) return nullptr;
    if (arena->override[static_cast<size_t>(d)]) return arena->override[static_cast<size_t>(d)];
    return reinterpret_cast<ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(d)].get());
  };

  // The concrete graph: the early initialisers, then the execs in order, each
  // late initialiser (a SET) made just before the first exec touching its base.
  std::unique_ptr<ccv_nnc_graph_t, GraphDeleter> cg(new ccv_nnc_graph_s());
  auto exec_arena = std::make_unique<ccv_nnc_graph_exec_arena_s>();
  exec_arena->graph = g;
  exec_arena->execs.assign(g->execs.size(), ccv_nnc_graph_exec_t{-1, nullptr});
  std::vector<int> init_nodes(initialised.size(), -1), early_nodes;
  std::vector<std::vector<size_t>> late_at(order.size());  // per order position: indices into initialised
  auto make_init = [&](size_t k) {
    const int b = initialised[k];
    const int flags = g->tensors[static_cast<size_t>(b)].flags;
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.blas.a[0] = flags & CCV_NNC_TENSOR_SYMBOL_INIT_ONES ? 1 : 0;
    ccv_nnc_tensor_t* out = tensor(b);
    init_nodes[k] = graph::exec_new(cg.get(), make_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), ccv_nnc_no_hint, nullptr, 0, &out, 1).d;
  };
  for (size_t k = 0; k < initialised.size(); k++) {
    const size_t b = static_cast<size_t>(base_of(g, initialised[k]));
    if (late_base[b]) {
      late_at[static_cast<size_t>(touched[b])].push_back(k);
    } else {
      make_init(k);
      early_nodes.push_back(init_nodes[k]);
    }
  }
  std::vector<ccv_nnc_tensor_t*> in, out;
  size_t next_control = 0;
  BuildCtx ctx;
  ctx.arena = arena.get();
  ctx.plan = &plan;
  ctx.exec_arena = exec_arena.get();
  const TensorFn root_tensor = tensor;
  const TensorFn root_plain = [&](int d) -> ccv_nnc_tensor_t* {
    return d < 0 ? nullptr : reinterpret_cast<ccv_nnc_tensor_t*>(arena->headers[static_cast<size_t>(d)].get());
  };
  const OverrideFn root_override = [&](int d, ccv_nnc_tensor_t* t) { arena->override[static_cast<size_t>(d)] = t; };
  for (size_t position = 0; position < order.size(); position++) {
    const int e = order[position];
    for (size_t k : late_at[position]) make_init(k);
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    if (control_of(x)) {
      const ControlPlan& c = controls[next_control++];
      exec_arena->execs[static_cast<size_t>(e)] =
          build_control(g, c, cg.get(), ctx, root_tensor, root_plain, root_override, arena->multiviews);
      continue;
    }
    in.clear();
    out.clear();
    for (int d : x.inputs) in.push_back(tensor(d));
    for (int d : x.outputs) out.push_back(tensor(d));
    exec_arena->execs[static_cast<size_t>(e)] =
        graph::exec_new(cg.get(), instantiate(x.cmd, ctx.tapes), x.hint, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
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
    // Keyed by base symbol, then nt + problem tensor for loops' and branches' blocks and inputs.
    std::vector<std::vector<int>> touching(nt + problem.tensors.size());
    std::vector<int> first_writer(nt + problem.tensors.size(), -1);
    for (int e : order) {
      const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
      const int node = exec_arena->execs[static_cast<size_t>(e)].d;
      for (int d : x.inputs)
        if (d >= 0) {
          const size_t b = static_cast<size_t>(base_of(g, d));
          touching[b].push_back(node);
          if (from_sub[b]) touching[nt + controls[static_cast<size_t>(control_of_symbol[b])].spec].push_back(node);
        }
      for (int d : x.outputs)
        if (d >= 0) {
          const size_t b = static_cast<size_t>(base_of(g, d));
          touching[b].push_back(node);
          if (first_writer[b] < 0) first_writer[b] = node;
        }
    }
    for (ControlPlan& c : controls) {
      const int node = exec_arena->execs[static_cast<size_t>(c.exec)].d;
      touching[nt + c.spec].push_back(node);
      first_writer[nt + c.spec] = node;
      for_each_level(c, [&](SubLevel& L) {
        for (size_t d = 0; d < L.extra.size(); d++)
          if (L.extra[d] != alloc::kNone) touching[nt + L.extra[d]].push_back(node);
        for (const ControlPlan& n : L.nested) touching[nt + n.spec].push_back(node);
      });
    }
    // A late initialiser comes before every exec touching its base.
    for (size_t k = 0; k < initialised.size(); k++) {
      const size_t b = static_cast<size_t>(base_of(g, initialised[k]));
      if (!late_base[b]) continue;
      std::vector<int>& out = cg->nodes[static_cast<size_t>(init_nodes[k])].outgoing;
      for (int n : touching[b])
        if (std::find(out.begin(), out.end(), n) == out.end()) {
          out.push_back(n);
          has_in[static_cast<size_t>(n)] = 1;
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
      const uint64_t lo = offset_of(index[static_cast<size_t>(b)]);
      spans.push_back({lo, lo + static_cast<uint64_t>(t.size), t.first, t.last, b});
    }
    auto add_span = [&](size_t spec) {
      const alloc::TensorSpec& t = problem.tensors[spec];
      if (t.size <= 0) return;
      const uint64_t lo = offset_of(spec);
      spans.push_back({lo, lo + static_cast<uint64_t>(t.size), t.first, t.last, static_cast<int>(nt + spec)});
    };
    for (ControlPlan& c : controls) {
      add_span(c.spec);
      for_each_level(c, [&](SubLevel& L) {
        for (size_t d = 0; d < L.extra.size(); d++)
          if (L.extra[d] != alloc::kNone) add_span(L.extra[d]);
        for (const ControlPlan& n : L.nested) add_span(n.spec);
      });
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
  std::vector<int> nodes;  // the execs' and the late initialisers', in order
  for (size_t position = 0; position < order.size(); position++) {
    for (size_t k : late_at[position]) nodes.push_back(init_nodes[k]);
    nodes.push_back(exec_arena->execs[static_cast<size_t>(order[position])].d);
  }
  for (int n : nodes) {
    if (!has_in[static_cast<size_t>(n)]) heads.push_back(n);
    if (cg->nodes[static_cast<size_t>(n)].outgoing.empty()) tails.push_back(n);
  }
  for (int i : early_nodes) {
    for (int h : heads) cg->nodes[static_cast<size_t>(i)].outgoing.push_back(h);
    if (heads.empty()) tails.push_back(i);
  }
  if (!early_nodes.empty()) heads = early_nodes;
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
  for (auto& made : ctx.tapes.made) cg->owned.push_back(std::move(made.second));
  for (auto& made : ctx.tapes.buckets) cg->owned.push_back(std::move(made.second));
  c.graph = cg.release();
  c.tensor_arena = arena.release();
  c.exec_arena = exec_arena.release();
  return c;
}

ccv_nnc_tensor_t* tensor_from_symbol(const ccv_nnc_tensor_arena_t* arena, const ccv_nnc_tensor_symbol_t& symbol) {
  static const char* what = "ccv_nnc_tensor_from_symbol";
  NNC_CHECK(arena, "%s: the tensor arena is NULL", what);
  if (symbol.graph == arena->graph) {
    NNC_CHECK(symbol.d >= 0 && static_cast<size_t>(symbol.d) < arena->headers.size(), "%s: tensor symbol %d does not exist in the compiled graph",
              what, symbol.d);
    const size_t d = static_cast<size_t>(symbol.d);
    if (d < arena->override.size() && arena->override[d]) return current(arena->override[d]);
    return reinterpret_cast<ccv_nnc_tensor_t*>(arena->headers[d].get());
  }
  for (const auto& sa : arena->subs) {
    if (sa->graph != symbol.graph) continue;
    if (symbol.d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) return &sa->count;
    NNC_CHECK(symbol.d >= 0 && static_cast<size_t>(symbol.d) < sa->tensors.size(), "%s: tensor symbol %d does not exist in the compiled sub-graph",
              what, symbol.d);
    const size_t d = static_cast<size_t>(symbol.d);
    return current(sa->initial[d] ? sa->initial[d] : sa->tensors[d]);
  }
  fail(CCV_NNC_EXEC_INVALID, "%s: tensor symbol %d is not of the graph this arena was compiled from (nor of its loops or branches)", what,
       symbol.d);
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
  NNC_CHECK(arena->subs.empty() && arena->multiviews.empty(), "%s: arenas with loops or branches cannot be reinitialised yet; compile again",
            what);
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
