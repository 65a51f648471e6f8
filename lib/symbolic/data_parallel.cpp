// Data parallelism across processes; see data_parallel.hpp.
#include "symbolic/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "cmd/comm/gpu_across.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "graph/graph.hpp"

namespace nnc::symbolic {

namespace {

// A gradient (any strides) into the staging buffer; a GPU gradient by
// DATA_TRANSFER (the custom command runs after its stream's queued work).
void pack_gradient(const ccv_nnc_tensor_t* t, unsigned char* to, size_t count) {
  const Layout l = layout_of(t, "data parallel: a gradient");
  NNC_CHECK(l.count() == count, "data parallel: a gradient has %zu elements, its bucket expects %zu", l.count(), count);
  if (comm::is_gpu_tensor(t)) return comm::to_host(t, to, "data parallel: a gradient");
  nnc::pack(l, to);
}

// out = sum * scale, element by element, from packed `from`.
void unpack_scaled(const unsigned char* from, ccv_nnc_tensor_t* t, size_t count, double scale) {
  const Layout l = layout_of(t, "data parallel: an average");
  NNC_CHECK(l.count() == count, "data parallel: an average has %zu elements, its bucket holds %zu", l.count(), count);
  if (comm::is_gpu_tensor(t)) {
    // Scaled in the staging buffer (read no more after this), then copied over.
    unsigned char* at = const_cast<unsigned char*>(from);
    for (size_t i = 0; i < count; i++)
      store_double(at + i * l.element_size, l.datatype, load_double(at + i * l.element_size, l.datatype) * scale);
    return comm::from_host(at, t, "data parallel: an average");
  }
  if (l.packed() && l.datatype == CCV_32F) {
    const float* src = reinterpret_cast<const float*>(from);
    float* dst = reinterpret_cast<float*>(l.data);
    const float s = static_cast<float>(scale);
    for (size_t i = 0; i < count; i++) dst[i] = src[i] * s;
    return;
  }
  size_t i = 0;
  for_each_index(l.dim.data(), l.nd, [&](const int* at) {
    store_double(l.at(at), l.datatype, load_double(from + i * l.element_size, l.datatype) * scale);
    i++;
  });
}

template <class F>
int guarded(F&& f) {
  try {
    f();
    return CCV_NNC_EXEC_SUCCESS;
  } catch (const Error& e) {
    set_error_message(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    set_error_message("data parallel: out of memory");
    return CCV_NNC_EXEC_OOM;
  }
}

void finish_pending(Bucket* b) {
  if (!b->pending) return;
  b->pending = false;
  comm::wait(b->comm, b->job.get());
}

int start_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
               ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  return guarded([&] {
    auto* b = static_cast<Bucket*>(cmd.data);
    NNC_CHECK(b && input_size == static_cast<int>(b->counts.size()), "data parallel: a bucket start has %d gradients for %zu",
              input_size, b ? b->counts.size() : 0);
    finish_pending(b);  // a run that stopped between the start and the wait
    const size_t es = datatype_size(b->datatype);
    b->staging.resize(b->total * es);
    size_t at = 0;
    for (int i = 0; i < input_size; i++) {
      NNC_CHECK(inputs[i], "data parallel: gradient %d of a bucket is missing", i);
      pack_gradient(inputs[i], b->staging.data() + at * es, b->counts[static_cast<size_t>(i)]);
      at += b->counts[static_cast<size_t>(i)];
    }
    comm::Job& job = *b->job;
    job.op = comm::Collective::Allreduce;
    job.send = nullptr;
    job.recv = b->staging.data();
    job.count = b->total;
    job.datatype = b->datatype;
    job.what = "data parallel: the allreduce of a gradient bucket";
    comm::submit(b->comm, &job);
    b->pending = true;
  });
}

int wait_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const*, const int,
              ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  return guarded([&] {
    auto* b = static_cast<Bucket*>(cmd.data);
    NNC_CHECK(b && output_size == static_cast<int>(b->counts.size()), "data parallel: a bucket wait has %d averages for %zu",
              output_size, b ? b->counts.size() : 0);
    NNC_CHECK(b->pending, "data parallel: a bucket is waited for without its start having run");
    const auto t0 = std::chrono::steady_clock::now();
    b->pending = false;
    comm::wait(b->comm, b->job.get());
    b->blocked_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    b->comm_seconds += b->job->seconds;
    b->runs++;
    const double scale = 1.0 / b->comm->size;
    const size_t es = datatype_size(b->datatype);
    size_t at = 0;
    for (int i = 0; i < output_size; i++) {
      if (outputs[i]) unpack_scaled(b->staging.data() + at * es, outputs[i], b->counts[static_cast<size_t>(i)], scale);
      at += b->counts[static_cast<size_t>(i)];
    }
  });
}

ccv_nnc_cmd_vtab_t start_vtab = {start_exec, nullptr};
ccv_nnc_cmd_vtab_t wait_vtab = {wait_exec, nullptr};

ccv_nnc_cmd_t custom(ccv_nnc_cmd_vtab_t* isa, Bucket* b) {
  ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, isa, ccv_nnc_cmd_auto, 0);
  c.data = b;
  return c;
}

bool is_float(int dt) { return dt == CCV_32F || dt == CCV_64F || dt == CCV_16F || dt == CCV_16BF; }

}  // namespace

bool is_bucket_cmd(const ccv_nnc_cmd_t& cmd) {
  return cmd.cmd == CCV_NNC_CUSTOM_FORWARD && (cmd.isa == &start_vtab || cmd.isa == &wait_vtab);
}

ccv_nnc_cmd_t instantiate_bucket(const ccv_nnc_cmd_t& cmd, std::vector<std::pair<const void*, std::shared_ptr<void>>>& made) {
  if (!is_bucket_cmd(cmd)) return cmd;
  ccv_nnc_cmd_t c = cmd;
  for (const auto& [from, to] : made)
    if (from == cmd.data) {
      c.data = to.get();
      return c;
    }
  const auto* original = static_cast<const Bucket*>(cmd.data);
  auto b = std::make_shared<Bucket>();
  b->comm = original->comm;
  b->datatype = original->datatype;
  b->counts = original->counts;
  b->total = original->total;
  made.emplace_back(original, b);
  c.data = b.get();
  return c;
}

void data_parallel_comm(Graph* g, ccv_nnc_comm_t* comm, const ccv_nnc_tensor_symbol_t* gradients, int gradient_size,
                        ccv_nnc_tensor_symbol_t* averaged, size_t bucket_bytes) {
  const char* what = "ccv_nnc_symbolic_graph_data_parallel_comm";
  NNC_CHECK(g, "%s: graph is NULL", what);
  NNC_CHECK(comm && comm::is_live(comm), "%s: not a live communicator", what);
  NNC_CHECK(gradient_size >= 0 && (gradient_size == 0 || gradients), "%s: %d gradients at NULL", what, gradient_size);
  if (bucket_bytes == 0) bucket_bytes = size_t{4} << 20;
  // Check everything before changing anything.
  std::vector<int> grad(static_cast<size_t>(gradient_size)), writer(static_cast<size_t>(gradient_size));
  for (int i = 0; i < gradient_size; i++) {
    const Graph::Tensor& t = tensor_of(g, gradients[i], what);
    const int d = gradients[i].d;
    NNC_CHECK(t.alias_of < 0, "%s: gradient %d (%s) is an alias; average its base", what, i, tensor_label(g, d).c_str());
    NNC_CHECK(is_float(CCV_GET_DATA_TYPE(t.info.datatype)), "%s: gradient %d (%s) is %s; averages are of 16F, 16BF, 32F or 64F", what,
              i, tensor_label(g, d).c_str(), datatype_name(CCV_GET_DATA_TYPE(t.info.datatype)));
    NNC_CHECK(t.writers.size() == 1, "%s: gradient %d (%s) is written by %zu execs; it needs exactly one", what, i,
              tensor_label(g, d).c_str(), t.writers.size());
    for (int j = 0; j < i; j++) NNC_CHECK(grad[static_cast<size_t>(j)] != d, "%s: gradient %d is gradient %d again", what, i, j);
    grad[static_cast<size_t>(i)] = d;
    writer[static_cast<size_t>(i)] = t.writers[0];
  }
  if (comm->size == 1 || gradient_size == 0) {
    for (int i = 0; i < gradient_size && averaged; i++) averaged[i] = gradients[i];
    return;
  }
  // The order the graph computes in.
  const std::vector<int> order = exec_order(g, nullptr, 0, nullptr, 0);
  std::vector<int> position(g->execs.size(), -1);
  for (size_t k = 0; k < order.size(); k++) position[static_cast<size_t>(order[k])] = static_cast<int>(k);
  std::vector<int> by_time(static_cast<size_t>(gradient_size));
  for (int i = 0; i < gradient_size; i++) {
    NNC_CHECK(position[static_cast<size_t>(writer[static_cast<size_t>(i)])] >= 0,
              "%s: gradient %d (%s) is written outside the graph's order (its writer is not between the sources and destinations)", what,
              i, tensor_label(g, grad[static_cast<size_t>(i)]).c_str());
    by_time[static_cast<size_t>(i)] = i;
  }
  std::stable_sort(by_time.begin(), by_time.end(), [&](int a, int b) {
    return position[static_cast<size_t>(writer[static_cast<size_t>(a)])] < position[static_cast<size_t>(writer[static_cast<size_t>(b)])];
  });
  // Buckets: per datatype, filled in that order.
  std::vector<std::vector<int>> buckets;
  {
    std::vector<std::pair<int, size_t>> open;  // (datatype, bucket index)
    std::vector<size_t> bytes;
    for (int i : by_time) {
      const ccv_nnc_tensor_param_t& info = g->tensors[static_cast<size_t>(grad[static_cast<size_t>(i)])].info;
      const int dt = CCV_GET_DATA_TYPE(info.datatype);
      auto it = std::find_if(open.begin(), open.end(), [&](const auto& p) { return p.first == dt; });
      if (it == open.end()) {
        buckets.emplace_back();
        bytes.push_back(0);
        open.emplace_back(dt, buckets.size() - 1);
        it = open.end() - 1;
      }
      const size_t b = it->second;
      buckets[b].push_back(i);
      bytes[b] += bytes_of(info);
      if (bytes[b] >= bucket_bytes) open.erase(it);  // full: the next of this type opens another
    }
  }
  // Readers of each gradient (before any exec is added).
  std::vector<std::vector<int>> readers(static_cast<size_t>(gradient_size));
  for (size_t e = 0; e < g->execs.size(); e++) {
    const Graph::Exec& x = g->execs[e];
    if (x.flags & CCV_NNC_GRAPH_EXEC_DEAD) continue;
    for (int i = 0; i < gradient_size; i++)
      if (std::find(x.inputs.begin(), x.inputs.end(), grad[static_cast<size_t>(i)]) != x.inputs.end()) {
        NNC_CHECK(!control_of(x), "%s: gradient %d (%s) is read by a loop or branch (%s); average it before", what, i,
                  tensor_label(g, grad[static_cast<size_t>(i)]).c_str(), exec_label(g, static_cast<int>(e)).c_str());
        readers[static_cast<size_t>(i)].push_back(static_cast<int>(e));
      }
  }
  // Ancestors (by edges) of a set of execs.
  auto ancestors = [&](const std::vector<int>& of) {
    std::vector<std::vector<int>> incoming(g->execs.size());
    for (size_t e = 0; e < g->execs.size(); e++)
      for (int t : g->execs[e].outgoing) incoming[static_cast<size_t>(t)].push_back(static_cast<int>(e));
    std::vector<char> seen(g->execs.size(), 0);
    std::vector<int> stack(of.begin(), of.end());
    for (int e : of) seen[static_cast<size_t>(e)] = 1;
    while (!stack.empty()) {
      const int e = stack.back();
      stack.pop_back();
      for (int p : incoming[static_cast<size_t>(e)])
        if (!seen[static_cast<size_t>(p)]) {
          seen[static_cast<size_t>(p)] = 1;
          stack.push_back(p);
        }
    }
    return seen;
  };
  std::vector<char> is_reader(g->execs.size(), 0);
  for (const auto& rs : readers)
    for (int e : rs) is_reader[static_cast<size_t>(e)] = 1;
  std::vector<ccv_nnc_tensor_symbol_t> result(static_cast<size_t>(gradient_size));
  std::vector<int> added;
  // Every start is made before any wait, so that among execs ready at once
  // (smallest index first) the starts run first: no wait holds back a later
  // bucket's start.
  struct Made {
    std::shared_ptr<Bucket> bucket;
    std::vector<ccv_nnc_tensor_symbol_t> outs;
    std::vector<int> writers;
    int last = -1;
    ccv_nnc_tensor_symbol_t token{};
    ccv_nnc_graph_exec_symbol_t start{}, wait{};
  };
  std::vector<Made> made(buckets.size());
  // For a roll-back: the readers' inputs before, and the symbols made.
  std::vector<std::pair<int, std::vector<int>>> rewired;
  std::vector<int> created;
  try {
    for (size_t k = 0; k < buckets.size(); k++) {
      Made& m = made[k];
      m.bucket = std::make_shared<Bucket>();
      m.bucket->comm = comm;
      std::vector<ccv_nnc_tensor_symbol_t> ins;
      for (int i : buckets[k]) {
        const int d = grad[static_cast<size_t>(i)];
        const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
        m.bucket->datatype = CCV_GET_DATA_TYPE(t.info.datatype);
        m.bucket->counts.push_back(ccv_nnc_tensor_count(t.info));
        m.bucket->total += m.bucket->counts.back();
        ins.push_back({d, g});
        const std::string name = (t.name.empty() ? tensor_label(g, d) : t.name) + " average";
        const ccv_nnc_tensor_param_t info = t.info;
        m.outs.push_back(tensor_new(g, info, name.c_str()));
        created.push_back(m.outs.back().d);
        result[static_cast<size_t>(i)] = m.outs.back();
        m.writers.push_back(writer[static_cast<size_t>(i)]);
        m.last = std::max(m.last, position[static_cast<size_t>(writer[static_cast<size_t>(i)])]);
      }
      ccv_nnc_tensor_param_t token_info{};
      // Where the gradients are (a GPU graph's arena holds GPU memory only).
      token_info.type = g->tensors[static_cast<size_t>(grad[static_cast<size_t>(buckets[k].front())])].info.type;
      token_info.format = CCV_TENSOR_FORMAT_NHWC;
      token_info.datatype = CCV_32F;
      token_info.dim[0] = 1;
      m.token = tensor_new(g, token_info, "data parallel token");
      created.push_back(m.token.d);
      m.start = exec_new(g, custom(&start_vtab, m.bucket.get()), ins.data(), static_cast<int>(ins.size()), &m.token, 1, "data parallel start");
      added.push_back(m.start.d);
      g->owned.push_back(m.bucket);
      for (int w : m.writers) concat(g, w, m.start.d);
      // Start as soon as the bucket is complete: before the first exec of the
      // order after its last gradient that does not lead to the bucket.
      const std::vector<char> before = ancestors(m.writers);
      for (size_t q = static_cast<size_t>(m.last) + 1; q < order.size(); q++) {
        const int e = order[q];
        if (before[static_cast<size_t>(e)] || is_reader[static_cast<size_t>(e)]) continue;
        concat(g, m.start.d, e);
        break;
      }
    }
    for (size_t k = 0; k < buckets.size(); k++) {
      Made& m = made[k];
      m.wait = exec_new(g, custom(&wait_vtab, m.bucket.get()), &m.token, 1, m.outs.data(), static_cast<int>(m.outs.size()),
                        "data parallel wait");
      added.push_back(m.wait.d);
      concat(g, m.start.d, m.wait.d);
      // The readers read the averages, after the wait.
      for (size_t j = 0; j < buckets[k].size(); j++) {
        const int i = buckets[k][j];
        for (int e : readers[static_cast<size_t>(i)]) {
          Graph::Exec& x = g->execs[static_cast<size_t>(e)];
          rewired.emplace_back(e, x.inputs);
          std::vector<ccv_nnc_tensor_symbol_t> in, out;
          for (int sym : x.inputs) in.push_back({sym == grad[static_cast<size_t>(i)] ? m.outs[j].d : sym, sym >= 0 ? g : nullptr});
          for (int sym : x.outputs) out.push_back({sym, sym >= 0 ? g : nullptr});
          exec_set_io(g, e, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
          concat(g, m.wait.d, e);
        }
      }
    }
    // Every wait after every start, where the data allow it.
    for (const Made& m : made)
      for (const Made& other : made)
        if (&m != &other) {
          try {
            concat(g, other.start.d, m.wait.d);
          } catch (const Error&) {
            // the start depends on this wait's averages: the data order it
          }
        }
    for (const Made& m : made)
      if (!g->destinations.empty() && g->execs[static_cast<size_t>(m.wait.d)].outgoing.empty()) g->destinations.push_back(m.wait);
  } catch (...) {
    // Leave the graph as it was: readers back on the gradients (latest first,
    // a reader of two gradients was rewired twice), then the added execs
    // (with their edges) and symbols gone.
    for (auto it = rewired.rbegin(); it != rewired.rend(); ++it) {
      const Graph::Exec& x = g->execs[static_cast<size_t>(it->first)];
      std::vector<ccv_nnc_tensor_symbol_t> in, out;
      for (int sym : it->second) in.push_back({sym, sym >= 0 ? g : nullptr});
      for (int sym : x.outputs) out.push_back({sym, sym >= 0 ? g : nullptr});
      exec_set_io(g, it->first, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
    }
    for (int e : added)
      if (!(g->execs[static_cast<size_t>(e)].flags & CCV_NNC_GRAPH_EXEC_DEAD)) exec_free(g, {e, g});
    for (int d : created) tensor_free(g, {d, g});
    throw;
  }
  if (averaged)
    for (int i = 0; i < gradient_size; i++) averaged[i] = result[static_cast<size_t>(i)];
}

BucketTotals bucket_totals(const ccv_nnc_graph_t* graph) {
  BucketTotals t;
  if (!graph) return t;
  std::set<const Bucket*> seen;
  for (const auto& node : graph->nodes)
    if (node.cmd.isa == &wait_vtab && node.cmd.cmd == CCV_NNC_CUSTOM_FORWARD) {
      const auto* b = static_cast<const Bucket*>(node.cmd.data);
      if (!b || !seen.insert(b).second) continue;
      t.comm_seconds += b->comm_seconds;
      t.blocked_seconds += b->blocked_seconds;
      t.runs = std::max(t.runs, b->runs);
      t.buckets++;
    }
  return t;
}

}  // namespace nnc::symbolic
