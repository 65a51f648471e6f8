// Running a concrete graph: command nodes through their cached kernels, while
// loops round by round with multi-view rebinding, case..of branches.
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/declined.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/gpu_stream.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"
#include "graph/graph.hpp"
#include "graph/schedule.hpp"

namespace nnc::graph {

namespace {

// io arrays up to this size resolve on the stack.
constexpr int kInlineIo = 16;

const char* node_name(const Graph::Node& node) {
  if (node.kind == Graph::Kind::While) return "while";
  if (node.kind == Graph::Kind::CaseOf) return "case..of";
  const char* n = cmd_name(node.cmd.cmd);
  return n ? n : "custom";
}

void check_cancel(const RunContext& ctx) {
  if (ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed))
    fail(CCV_NNC_EXEC_INVALID, "ccv_nnc_graph_run: cancelled (ccv_nnc_graph_cancel)");
}

// --- plans -------------------------------------------------------------------

uint64_t hash_bytes(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace

struct Plan::Interned {
  std::mutex mutex;  // steps of one plan may prepare on several streams at once
  std::deque<CmdHint> cmds;
  std::deque<ccv_nnc_tensor_param_t> params;
  std::unordered_map<uint64_t, std::vector<const CmdHint*>> cmd_index;
  std::unordered_map<uint64_t, std::vector<const ccv_nnc_tensor_param_t*>> param_index;

  const CmdHint* cmd(const ccv_nnc_cmd_t& c, const ccv_nnc_hint_t& h) {
    std::lock_guard<std::mutex> lock(mutex);
    CmdHint key;
    std::memset(&key, 0, sizeof(key));
    key.cmd = c;
    key.hint = h;
    auto& bucket = cmd_index[hash_bytes(&key, sizeof(key))];
    for (const CmdHint* x : bucket)
      if (std::memcmp(x, &key, sizeof(key)) == 0) return x;
    cmds.push_back(key);
    bucket.push_back(&cmds.back());
    return &cmds.back();
  }
  const ccv_nnc_tensor_param_t* param(const ccv_nnc_tensor_param_t& p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto& bucket = param_index[hash_bytes(&p, sizeof(p))];
    for (const ccv_nnc_tensor_param_t* x : bucket)
      if (std::memcmp(x, &p, sizeof(p)) == 0) return x;
    params.push_back(p);
    bucket.push_back(&params.back());
    return &params.back();
  }
};

Plan::Plan() : interned(std::make_unique<Interned>()) {}
Plan::~Plan() = default;

std::unique_ptr<Plan> make_plan(const Graph* g, const std::vector<int>& order) {
  auto plan = std::make_unique<Plan>();
  plan->plan_version = g->plan_version;
  plan->steps.resize(order.size());
  size_t total = 0;
  for (int v : order) {
    const auto& node = g->nodes[static_cast<size_t>(v)];
    total += node.inputs.size() + node.outputs.size();
  }
  plan->io.reserve(total);
  plan->seen.assign(total, nullptr);
  for (size_t i = 0; i < order.size(); i++) {
    const auto& node = g->nodes[static_cast<size_t>(order[i])];
    Step& st = plan->steps[i];
    NNC_CHECK(node.inputs.size() < 65536 && node.outputs.size() < 65536, "ccv_nnc_graph_run: node %d has too many tensors", order[i]);
    st.node = order[i];
    st.kind = node.kind;
    st.has_multiview = node.has_multiview;
    st.io = static_cast<uint32_t>(plan->io.size());
    st.ni = static_cast<uint16_t>(node.inputs.size());
    st.no = static_cast<uint16_t>(node.outputs.size());
    plan->io.insert(plan->io.end(), node.inputs.begin(), node.inputs.end());
    plan->io.insert(plan->io.end(), node.outputs.begin(), node.outputs.end());
  }
  return plan;
}

namespace {

inline bool same_param(const ccv_nnc_tensor_t* t, const ccv_nnc_tensor_param_t* p) {
  if (!t) return !p;
  return p && t->data.ptr && std::memcmp(&t->info, p, sizeof(*p)) == 0;
}

void prepare(const Graph* g, Plan& plan, Step& st, ccv_nnc_tensor_t* const* io) {
  const Graph::Node& node = g->nodes[static_cast<size_t>(st.node)];
  st.prepared = false;
  PreparedExec p;
  try {
    p = prepare_exec(node.cmd, node.hint, 0, io, st.ni, io + st.ni, st.no);
  } catch (const Error& e) {
    fail(e.code(), "ccv_nnc_graph_run: node %d (%s): %s", st.node, node_name(node), e.what());
  }
  st.exec = p.exec;
  st.device = p.device;
  st.backend = p.backend;
  st.ch = plan.interned->cmd(node.cmd, p.hint);
  const ccv_nnc_tensor_param_t** seen = plan.seen.data() + st.io;
  for (int i = 0; i < st.ni + st.no; i++) seen[i] = io[i] ? plan.interned->param(io[i]->info) : nullptr;
  st.prepared = true;
}


// A node's kernel declined its tensors (core/declined.hpp): moves the step to
// the next backend that accepts them (CCV_NNC_EXEC_SUCCESS), or records the
// failure and returns its code when there is none (or the node names its
// backend).
[[gnu::noinline, gnu::cold]] int fall_back(const Graph* g, Step& st, ccv_nnc_tensor_t* const* io, RunContext& ctx,
                                            const Declined& why) {
  const Graph::Node& node = g->nodes[static_cast<size_t>(st.node)];
  PreparedExec was;
  was.exec = st.exec;
  was.hint = st.ch->hint;
  was.backend = st.backend;
  was.device = st.device;
  try {
    const PreparedExec p = prepare_exec_after_decline(node.cmd, was, why, io, st.ni, io + st.ni, st.no);
    st.exec = p.exec;
    st.device = p.device;
    st.backend = p.backend;
  } catch (...) {
    return record_current_exception();
  }
  if (ctx.gpu_stream && !st.device) host_sync(ctx.stream);
  return CCV_NNC_EXEC_SUCCESS;
}

void run_command(Graph* g, Plan& plan, Step& st, RunContext& ctx) {
  const int n = st.ni + st.no;
  ccv_nnc_tensor_t** io = plan.io.data() + st.io;
  ccv_nnc_tensor_t* buf[kInlineIo];
  std::vector<ccv_nnc_tensor_t*> heap;
  if (st.has_multiview) {
    ccv_nnc_tensor_t** r = buf;
    if (n > kInlineIo) {
      heap.resize(static_cast<size_t>(n));
      r = heap.data();
    }
    for (int i = 0; i < n; i++) {
      r[i] = resolve(io[i]);
      if (io[i] && !r[i])
        fail(CCV_NNC_EXEC_INVALID,
             "ccv_nnc_graph_run: node %d (%s): %s %d is a multi-view tensor that points at nothing yet (is it anchored "
             "to a graph that has not started?)",
             st.node, node_name(g->nodes[static_cast<size_t>(st.node)]), i < st.ni ? "input" : "output",
             i < st.ni ? i : i - st.ni);
    }
    io = r;
  }
  if (__builtin_expect(!st.prepared, 0)) {
    prepare(g, plan, st, io);
  } else {
    const ccv_nnc_tensor_param_t* const* seen = plan.seen.data() + st.io;
    for (int i = 0; i < n; i++)
      if (__builtin_expect(!same_param(io[i], seen[i]), 0)) {
        prepare(g, plan, st, io);
        break;
      }
  }
  if (st.exec) {
    // On a GPU stream, host code waits for the device work queued before it (core/gpu_stream.hpp).
    if (ctx.gpu_stream && !st.device) host_sync(ctx.stream);
    // A kernel throws what it cannot run (core/kernel.hpp); the node's name is added here either way.
    int code;
    for (;;) {
      try {
        code = st.exec(st.ch->cmd, st.ch->hint, 0, io, st.ni, io + st.ni, st.no, ctx.stream);
      } catch (const Declined& why) {
        // Refused at run time (core/declined.hpp): the node keeps the next
        // backend that accepts its tensors, until they change.
        code = fall_back(g, st, io, ctx, why);
        if (code == CCV_NNC_EXEC_SUCCESS) continue;  // run it there
      } catch (...) {
        code = record_current_exception();
      }
      break;
    }
    store_fence();  // the kernel's streaming stores, if any (core/parallel.hpp)
    if (__builtin_expect(code != CCV_NNC_EXEC_SUCCESS, 0)) {
      const std::string inner = error_message();
      fail(code, "ccv_nnc_graph_run: node %d (%s) failed: %s", st.node, node_name(g->nodes[static_cast<size_t>(st.node)]),
           inner.empty() ? "the kernel returned an error" : inner.c_str());
    }
  }
  if (ctx.tape) {
    const Graph::Node& node = g->nodes[static_cast<size_t>(st.node)];
    for (size_t i = 0; i < node.input_flags.size() && i < st.ni; i++)
      if (node.input_flags[i] && io[i]) tape_keep(ctx.tape, node.inputs[i], io[i], ctx.rounds);
    for (size_t i = 0; i < node.output_flags.size() && i < st.no; i++)
      if (node.output_flags[i] && io[st.ni + i]) tape_keep(ctx.tape, node.outputs[i], io[st.ni + i], ctx.rounds);
  }
}

void run_plan_steps(Graph* g, Plan& plan, RunContext& ctx);

// The default order of a loop body split at its breakpoints, as two plans.
void loop_orders(Graph* body) {
  if (body->order_valid && body->head_plan && body->tail_plan) return;
  const std::vector<int> order = run_order(body, nullptr, 0, nullptr, 0);
  const size_t n = body->nodes.size();
  // The breakpoints and every node they depend on form the head.
  std::vector<char> head(n, 0);
  std::vector<std::vector<int>> incoming(n);
  for (size_t i = 0; i < n; i++)
    for (int j : body->nodes[i].outgoing) incoming[static_cast<size_t>(j)].push_back(static_cast<int>(i));
  std::vector<int> stack(body->breakpoints.begin(), body->breakpoints.end());
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (head[static_cast<size_t>(v)]) continue;
    head[static_cast<size_t>(v)] = 1;
    for (int u : incoming[static_cast<size_t>(v)]) stack.push_back(u);
  }
  body->loop_head.clear();
  body->loop_tail.clear();
  for (int v : order) (head[static_cast<size_t>(v)] ? body->loop_head : body->loop_tail).push_back(v);
  body->head_plan = make_plan(body, body->loop_head);
  body->tail_plan = make_plan(body, body->loop_tail);
}

void rewind_tail(Graph* body, int64_t round);

void run_while(Graph* g, int v, RunContext& ctx) {
  Graph::Node& node = g->nodes[static_cast<size_t>(v)];
  Graph* body = node.subs[0];
  NNC_CHECK(body->while_expr, "ccv_nnc_graph_run: while node %d has no expression (ccv_nnc_graph_set_while_expr)", v);
  loop_orders(body);
  Plan& head = *body->head_plan;
  Plan& tail = *body->tail_plan;
  std::vector<ccv_nnc_tensor_t*> expr_in(body->while_inputs.size());
  std::vector<ccv_nnc_tensor_t*> carried(body->carry_overs.size());
  ctx.rounds.push_back(0);
  int64_t k = 0;
  for (;; k++) {
    check_cancel(ctx);
    body->loop_count = k;
    ctx.rounds.back() = k;
    if (ctx.gpu_stream) host_sync(ctx.stream);  // the carry copies below run on the host's call
    if (ctx.tape) tape_set_current(ctx.tape, body, ctx.rounds);
    bind_multiviews(body, k);
    if (k > 0)
      for (size_t i = 0; i < body->carry_overs.size(); i++) {
        ccv_nnc_tensor_t* to = resolve(const_cast<ccv_nnc_tensor_t*>(body->carry_overs[i].second));
        NNC_CHECK(to && carried[i], "ccv_nnc_graph_run: a carried tensor of while node %d points at nothing", v);
        if (to->data.ptr != carried[i]->data.ptr) {
          copy_tensor(carried[i], to, "ccv_nnc_graph_run: carrying a tensor to the next round");
          body->carry_copies++;
        }
      }
    run_plan_steps(body, head, ctx);
    for (size_t i = 0; i < expr_in.size(); i++) expr_in[i] = resolve(body->while_inputs[i]);
    if (ctx.gpu_stream) host_sync(ctx.stream);  // the expression reads what the head wrote
    const int go = body->while_expr(expr_in.data(), static_cast<int>(expr_in.size()), body->while_data);
    if (!go) {
      if (k > 0 && !body->loop_tail.empty()) rewind_tail(body, k - 1);
      break;
    }
    run_plan_steps(body, tail, ctx);
    for (size_t i = 0; i < body->carry_overs.size(); i++)
      carried[i] = resolve(const_cast<ccv_nnc_tensor_t*>(body->carry_overs[i].first));
  }
  ctx.rounds.pop_back();
  if (ctx.tape) tape_record_number(ctx.tape, g, v, ctx.rounds, static_cast<uint64_t>(k));
}

void run_case_of(Graph* g, int v, RunContext& ctx) {
  Graph::Node& node = g->nodes[static_cast<size_t>(v)];
  NNC_CHECK(node.case_of, "ccv_nnc_graph_run: case..of node %d has no expression (ccv_nnc_graph_set_case_of_expr)", v);
  if (ctx.gpu_stream) host_sync(ctx.stream);  // the expression and the fallback copy run on the host
  std::vector<ccv_nnc_tensor_t*> in(node.inputs.size());
  for (size_t i = 0; i < in.size(); i++) in[i] = resolve(node.inputs[i]);
  const int index = node.case_of(in.data(), static_cast<int>(in.size()), node.case_of_data) + node.case_of_offset;
  Graph* branch = index >= 0 && static_cast<size_t>(index) < node.subs.size() ? node.subs[static_cast<size_t>(index)] : nullptr;
  if (ctx.tape) tape_record_number(ctx.tape, g, v, ctx.rounds, static_cast<uint64_t>(static_cast<int64_t>(branch ? index : -1)));
  for (size_t i = 0; i < node.outputs.size(); i++) {
    ccv_nnc_tensor_t* o = node.outputs[i];
    if (!o || !CCV_IS_TENSOR_MULTIVIEW(o)) continue;
    auto* mv = reinterpret_cast<ccv_nnc_tensor_multiview_t*>(o);
    if (mv->anchor != CCV_NNC_MULTIVIEW_PHI) continue;
    mv->it = CCV_NNC_MULTIVIEW_DATA(mv)[branch ? 1 : 0];
    ccv_nnc_tensor_multiview_synchronize(mv);
  }
  if (branch) {
    run_plan(branch, default_plan(branch), ctx);
    return;
  }
  for (size_t i = 0; i < node.outputs.size() && i < node.inputs.size(); i++) {
    ccv_nnc_tensor_t* o = node.outputs[i];
    if (!o || CCV_IS_TENSOR_MULTIVIEW(o)) continue;
    ccv_nnc_tensor_t* d = in[i];
    if (d && d->data.ptr != o->data.ptr) copy_tensor(d, o, "ccv_nnc_graph_run: case..of output falling back to its input");
  }
}

// Multi-views reachable from a tensor, following entries; those anchored to g collected.
void collect(ccv_nnc_tensor_t* t, const Graph* g, std::vector<ccv_nnc_tensor_multiview_t*>& out, int depth) {
  if (!t || !CCV_IS_TENSOR_MULTIVIEW(t) || depth > 64) return;
  auto* mv = reinterpret_cast<ccv_nnc_tensor_multiview_t*>(t);
  if (mv->anchor == reinterpret_cast<intptr_t>(g)) {
    for (auto* m : out)
      if (m == mv) return;
    out.push_back(mv);
  }
  const int n = mv->kind + mv->repeat;
  ccv_nnc_tensor_t** data = CCV_NNC_MULTIVIEW_DATA(mv);
  for (int i = 0; i < n; i++) collect(data[i], g, out, depth + 1);
}

// The loop stopped at its expression: the nodes after the breakpoints last
// ran in `round` (the one before), so the multi-views they write show that
// round's tensors to whoever reads them after the loop (a carried result
// handed out, which otherwise would show a slot the stopping round never
// wrote when the body is unrolled).
void rewind_tail(Graph* body, int64_t round) {
  std::vector<ccv_nnc_tensor_multiview_t*> written;
  for (int v : body->loop_tail)
    for (auto* t : body->nodes[static_cast<size_t>(v)].outputs) collect(t, body, written, 0);
  for (ccv_nnc_tensor_multiview_t* mv : written) {
    const int64_t i = mv->kind == CCV_NNC_MULTIVIEW_K1N ? (round == 0 ? 0 : 1 + (round - 1) % mv->repeat) : round % mv->repeat;
    mv->it = CCV_NNC_MULTIVIEW_DATA(mv)[i];
    ccv_nnc_tensor_multiview_synchronize(mv);
  }
}

void collect_graph(const Graph* from, const Graph* g, std::vector<ccv_nnc_tensor_multiview_t*>& out) {
  for (const auto& node : from->nodes) {
    for (auto* t : node.inputs) collect(t, g, out, 0);
    for (auto* t : node.outputs) collect(t, g, out, 0);
    for (auto* t : node.affected) collect(t, g, out, 0);
    for (const Graph* sub : node.subs)
      if (sub) collect_graph(sub, g, out);
  }
  for (auto* t : from->while_inputs) collect(t, g, out, 0);
  for (const auto& c : from->carry_overs) {
    collect(const_cast<ccv_nnc_tensor_t*>(c.first), g, out, 0);
    collect(const_cast<ccv_nnc_tensor_t*>(c.second), g, out, 0);
  }
}

}  // namespace

void bind_multiviews(Graph* g, int64_t round) {
  if (!g->multiviews_valid) {
    g->multiviews.clear();
    collect_graph(g, g, g->multiviews);
    g->multiviews_valid = true;
  }
  for (ccv_nnc_tensor_multiview_t* mv : g->multiviews) {
    NNC_CHECK(mv->repeat > 0, "ccv_nnc_graph_run: a multi-view tensor has a repeat of 0");
    const int64_t i = mv->kind == CCV_NNC_MULTIVIEW_K1N
                          ? (round == 0 ? 0 : 1 + (round - 1) % mv->repeat)
                          : round % mv->repeat;
    mv->it = CCV_NNC_MULTIVIEW_DATA(mv)[i];
    ccv_nnc_tensor_multiview_synchronize(mv);
  }
}

namespace {

inline void run_step(Graph* g, Plan& plan, Step& st, RunContext& ctx) {
  switch (st.kind) {
    case Graph::Kind::Command:
      run_command(g, plan, st, ctx);
      return;
    case Graph::Kind::While:
      run_while(g, st.node, ctx);
      return;
    case Graph::Kind::CaseOf:
      run_case_of(g, st.node, ctx);
      return;
  }
}

void run_plan_steps(Graph* g, Plan& plan, RunContext& ctx) {
  const std::atomic<bool>* cancelled = ctx.cancelled;
  for (Step& st : plan.steps) {
    if (cancelled && cancelled->load(std::memory_order_relaxed)) check_cancel(ctx);
    run_step(g, plan, st, ctx);
  }
}

}  // namespace

void run_position(Graph* g, Plan& plan, size_t position, RunContext& ctx) { run_step(g, plan, plan.steps[position], ctx); }

Plan& default_plan(Graph* g) {
  if (!g->order_valid) run_order(g, nullptr, 0, nullptr, 0);
  if (!g->default_plan) g->default_plan = make_plan(g, g->default_order);
  return *g->default_plan;
}

void run_plan(Graph* g, Plan& plan, RunContext& ctx) {
  if (!g->multiviews_valid || !g->multiviews.empty()) bind_multiviews(g, 0);
  if (ctx.tape) tape_set_current(ctx.tape, g, ctx.rounds);
  run_plan_steps(g, plan, ctx);
}

// The schedule of a run without a stream over one GPU stream per device the
// nodes use, or NULL when no node touches GPU memory (or GPU streams are
// absent). Nodes in sub-graphs run on their parent node's stream.
const Schedule* gpu_schedule(Graph* g) {
  if (!g->gpu_schedule_checked) {
    g->gpu_schedule.reset();
    g->gpu_schedule_checked = true;
    if (!gpu_stream_hooks()) return nullptr;
    int device = -1;
    for (int v = 0; v < static_cast<int>(g->nodes.size()) && device < 0; v++) device = node_device(g, v, -1);
    if (device < 0) return nullptr;
    int type = CCV_STREAM_CONTEXT_GPU;
    CCV_STREAM_SET_DEVICE_ID(type, device);
    g->gpu_schedule = std::make_unique<Schedule>(make_schedule(g, type, 1, nullptr, 0, nullptr, 0));
  }
  return g->gpu_schedule.get();
}

int run(Graph* g, int flags, const ccv_nnc_graph_exec_t* sources, int source_size,
        const ccv_nnc_graph_exec_t* destinations, int destination_size, ccv_nnc_tensor_tape_t* tape,
        ccv_nnc_stream_context_t* stream) {
  (void)flags;
  NNC_CHECK(g, "ccv_nnc_graph_run: graph is NULL");
  NNC_CHECK(!g->parent, "ccv_nnc_graph_run: this graph is a sub-graph of a while or case..of node; run its parent");
  g->cancelled.store(false);
  const bool defaults = source_size == 0 && destination_size == 0;
  if (is_gpu_stream(stream)) {
    // On a GPU stream the nodes are queued on it by this thread, in order (a
    // CPU node waits for the device work before it). A default static
    // schedule over GPU streams starts behind the stream's work; one over CPU
    // streams runs synchronously after it.
    if (defaults && g->default_schedule) {
      if (g->default_schedule->gpu()) return run_schedule(g, *g->default_schedule, tape, stream);
      host_sync(stream);
      return run_schedule(g, *g->default_schedule, tape, nullptr);
    }
    std::shared_ptr<Plan> held;
    if (!defaults) held = range_plan(g, sources, source_size, destinations, destination_size);
    RunContext ctx;
    ctx.tape = tape;
    ctx.stream = stream;
    ctx.gpu_stream = true;
    ctx.cancelled = &g->cancelled;
    run_plan(g, defaults ? default_plan(g) : *held, ctx);
    return CCV_NNC_EXEC_SUCCESS;
  }
  if (defaults && g->default_schedule) return run_schedule(g, *g->default_schedule, tape, stream);
  if (defaults && !stream)
    if (const Schedule* s = gpu_schedule(g)) return run_schedule(g, *s, tape, nullptr);
  // A range plan is held by the run (a stream task may outlive its place in the cache).
  std::shared_ptr<Plan> held;
  if (!defaults) held = range_plan(g, sources, source_size, destinations, destination_size);
  Plan* plan = defaults ? &default_plan(g) : held.get();
  if (!stream) {
    RunContext ctx;
    ctx.tape = tape;
    ctx.cancelled = &g->cancelled;
    run_plan(g, *plan, ctx);
    return CCV_NNC_EXEC_SUCCESS;
  }
  // On a stream: the whole run is one task, behind what the stream already
  // has. The default plan is the graph's (do not change a graph while it runs).
  stream_enqueue(stream, [g, tape, stream, plan, held]() {
    return guard_code([&] {
      RunContext ctx;
      ctx.tape = tape;
      ctx.stream = stream;
      ctx.cancelled = &g->cancelled;
      run_plan(g, *plan, ctx);
      return CCV_NNC_EXEC_SUCCESS;
    });
  });
  return CCV_NNC_EXEC_SUCCESS;
}

// --- construction of sub-graph nodes ---------------------------------------

namespace {
void check_graph_cmd(uint32_t cmd, const char* what) {
  NNC_CHECK(cmd == CCV_NNC_GRAPH_FORWARD || cmd == CCV_NNC_GRAPH_BACKWARD,
            "%s: cmd must be CCV_NNC_GRAPH_FORWARD or CCV_NNC_GRAPH_BACKWARD (got 0x%x)", what, cmd);
}

void adopt(Graph* g, Graph* sub, int exec, const char* what) {
  NNC_CHECK(sub, "%s: the sub-graph is NULL", what);
  NNC_CHECK(sub != g, "%s: a graph cannot be its own sub-graph", what);
  NNC_CHECK(!sub->parent, "%s: the sub-graph already belongs to a node", what);
  for (Graph* p = g; p; p = p->parent) NNC_CHECK(p != sub, "%s: the sub-graph contains this graph", what);
  sub->parent = g;
  sub->exec_in_parent = exec;
}

ccv_nnc_graph_exec_t sub_node(Graph* g, uint32_t cmd, Graph::Kind kind, ccv_nnc_tensor_t* const* inputs, int input_size,
                              ccv_nnc_tensor_t* const* outputs, int output_size) {
  ccv_nnc_cmd_param_t params;
  std::memset(&params, 0, sizeof(params));
  const ccv_nnc_graph_exec_t e = exec_new(g, make_cmd(cmd, nullptr, params, 0), ccv_nnc_hint_t{}, inputs, input_size,
                                          outputs, output_size);
  g->nodes[static_cast<size_t>(e.d)].kind = kind;
  return e;
}
}  // namespace

ccv_nnc_graph_exec_t while_new(Graph* g, uint32_t cmd, Graph* body) {
  NNC_CHECK(g, "ccv_nnc_graph_while: graph is NULL");
  check_graph_cmd(cmd, "ccv_nnc_graph_while");
  adopt(g, body, static_cast<int>(g->nodes.size()), "ccv_nnc_graph_while");
  const ccv_nnc_graph_exec_t e = sub_node(g, cmd, Graph::Kind::While, nullptr, 0, nullptr, 0);
  g->nodes[static_cast<size_t>(e.d)].subs.push_back(body);
  invalidate(g);
  return e;
}

void set_while_expr(Graph* body, ccv_nnc_graph_while_f expr, const void* data, ccv_nnc_tensor_t* const* inputs,
                    int input_size, const ccv_nnc_graph_exec_t* breakpoints, int breakpoint_size) {
  NNC_CHECK(body, "ccv_nnc_graph_set_while_expr: graph is NULL");
  NNC_CHECK(expr, "ccv_nnc_graph_set_while_expr: the expression is NULL");
  NNC_CHECK(input_size >= 0 && (input_size == 0 || inputs), "ccv_nnc_graph_set_while_expr: bad input array");
  NNC_CHECK(breakpoint_size > 0 && breakpoints, "ccv_nnc_graph_set_while_expr: at least one breakpoint is needed");
  std::vector<int> bps;
  for (int i = 0; i < breakpoint_size; i++) {
    node_of(body, breakpoints[i], "ccv_nnc_graph_set_while_expr: breakpoint");
    bps.push_back(breakpoints[i].d);
  }
  body->while_expr = expr;
  body->while_data = data;
  body->while_inputs.assign(inputs, inputs + input_size);
  body->breakpoints = std::move(bps);
  invalidate(body);
}

ccv_nnc_graph_exec_t case_of_new(Graph* g, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  NNC_CHECK(g, "ccv_nnc_graph_case_of_new: graph is NULL");
  check_graph_cmd(cmd, "ccv_nnc_graph_case_of_new");
  return sub_node(g, cmd, Graph::Kind::CaseOf, inputs, input_size, outputs, output_size);
}

void set_case_of_expr(Graph* g, const ccv_nnc_graph_exec_t& exec, ccv_nnc_graph_case_of_f expr, const void* data,
                      int offset) {
  Graph::Node& node = node_of(g, exec, "ccv_nnc_graph_set_case_of_expr");
  NNC_CHECK(node.kind == Graph::Kind::CaseOf, "ccv_nnc_graph_set_case_of_expr: node %d is not a case..of node", exec.d);
  NNC_CHECK(expr, "ccv_nnc_graph_set_case_of_expr: the expression is NULL");
  node.case_of = expr;
  node.case_of_data = data;
  node.case_of_offset = offset;
}

void set_case_of(Graph* g, const ccv_nnc_graph_exec_t& exec, Graph* branch, int index) {
  Graph::Node& node = node_of(g, exec, "ccv_nnc_graph_set_case_of");
  NNC_CHECK(node.kind == Graph::Kind::CaseOf, "ccv_nnc_graph_set_case_of: node %d is not a case..of node", exec.d);
  NNC_CHECK(index >= 0 && index < 4096, "ccv_nnc_graph_set_case_of: branch index %d out of range [0, 4096)", index);
  NNC_CHECK(static_cast<size_t>(index) >= node.subs.size() || !node.subs[static_cast<size_t>(index)],
            "ccv_nnc_graph_set_case_of: node %d already has a branch %d", exec.d, index);
  adopt(g, branch, exec.d, "ccv_nnc_graph_set_case_of");
  if (node.subs.size() <= static_cast<size_t>(index)) node.subs.resize(static_cast<size_t>(index) + 1, nullptr);
  node.subs[static_cast<size_t>(index)] = branch;
  invalidate(g);
}

void add_carry_over(Graph* g, const ccv_nnc_tensor_t* from, const ccv_nnc_tensor_t* to) {
  NNC_CHECK(g, "ccv_nnc_graph_add_carry_over: graph is NULL");
  NNC_CHECK(from && to, "ccv_nnc_graph_add_carry_over: a tensor is NULL");
  NNC_CHECK(from != to, "ccv_nnc_graph_add_carry_over: a tensor cannot be carried to itself");
  if (!CCV_IS_TENSOR_MULTIVIEW(from) && !CCV_IS_TENSOR_MULTIVIEW(to))
    NNC_CHECK(same_shape(from->info, to->info) && from->info.datatype == to->info.datatype,
              "ccv_nnc_graph_add_carry_over: %s %s cannot be carried into %s %s", datatype_name(from->info.datatype),
              shape_string(from->info.dim).c_str(), datatype_name(to->info.datatype), shape_string(to->info.dim).c_str());
  g->carry_overs.emplace_back(from, to);
  invalidate(g);
}

}  // namespace nnc::graph
