// Data parallelism across the GPUs of one process
// (ccv_nnc_symbolic_graph_data_parallel with parallel > 1).
//
// The execs between the sources and the destinations are copied once for
// each other device, over copies of their tensor symbols on that device
// (ccv_nnc_tensor_symbol_copy / ccv_nnc_graph_exec_symbol_copy find them).
// Then:
//   broadcasts  a COMM_BROADCAST from the symbol to its copies runs before
//               anything reads a copy (the parameters: one value, every device)
//   allreducers a COMM_ALLREDUCE of the symbol and its copies into new
//               symbols, after their writers; every exec of the range that
//               read one reads the sum instead (the gradients: each device's
//               minimiser sees the sum over all devices)
//   reducers    a COMM_REDUCE of the symbol and its copies into a new symbol
//               on the graph's device (the losses, summed for a report)
// Each device's execs form their own chain of edges, so the devices run side
// by side; the compiled graph gives each device an arena of its own.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "nnc/ccv_nnc.h"
#include "symbolic/graph.hpp"

namespace nnc::symbolic {

namespace {

constexpr int kNone = CCV_NNC_NO_TENSOR_SYMBOL;

ccv_nnc_cmd_t comm_cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

bool on_gpu(const ccv_nnc_tensor_param_t& info) { return CCV_TENSOR_GET_MEMORY(info.type) == CCV_TENSOR_GPU_MEMORY; }

}  // namespace

void data_parallel_devices(Graph* g, int parallel, const ccv_nnc_tensor_symbol_t* broadcasts, int broadcast_size,
                           const ccv_nnc_tensor_symbol_t* allreducers, int allreducer_size,
                           ccv_nnc_tensor_symbol_t* allreducer_outs, const ccv_nnc_tensor_symbol_t* reducers,
                           int reducer_size, ccv_nnc_tensor_symbol_t* reducer_outs,
                           const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                           const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  const char* what = "ccv_nnc_symbolic_graph_data_parallel";
  const int available = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU);
  NNC_CHECK(parallel <= available, "%s: %d devices asked for, %d GPU%s found", what, parallel, available,
            available == 1 ? "" : "s");
  NNC_CHECK(broadcast_size >= 0 && allreducer_size >= 0 && reducer_size >= 0, "%s: a negative count", what);
  NNC_CHECK(!broadcast_size || broadcasts, "%s: broadcasts is NULL", what);
  NNC_CHECK(!allreducer_size || allreducers, "%s: allreducers is NULL", what);
  NNC_CHECK(!reducer_size || reducers, "%s: reducers is NULL", what);

  // --- Checks (the graph is untouched until they all pass) -----------------
  const std::vector<int> order = exec_order(g, sources, source_size, destinations, destination_size);
  NNC_CHECK(!order.empty(), "%s: no exec symbols between the sources and the destinations", what);
  std::vector<char> in_range(g->execs.size(), 0);
  for (int e : order) in_range[static_cast<size_t>(e)] = 1;
  int device = -1;
  std::set<int> touched;  // symbols (bases and aliases) the range reads or writes
  for (int e : order) {
    const Graph::Exec& x = g->execs[static_cast<size_t>(e)];
    NNC_CHECK(!control_of(x), "%s: %s runs a loop or branches; data parallelism over devices takes plain execs only", what,
              exec_label(g, e).c_str());
    for (const std::vector<int>* io : {&x.inputs, &x.outputs})
      for (int d : *io) {
        if (d < 0) continue;
        const ccv_nnc_tensor_param_t& info = g->tensors[static_cast<size_t>(d)].info;
        NNC_CHECK(on_gpu(info), "%s: %s, which %s uses, is in CPU memory; every tensor of a graph copied over devices is on a GPU",
                  what, tensor_label(g, d).c_str(), exec_label(g, e).c_str());
        const int dev = CCV_TENSOR_GET_DEVICE_ID(info.type);
        NNC_CHECK(device < 0 || dev == device, "%s: %s is on GPU %d, others on GPU %d; the graph to copy is on one device",
                  what, tensor_label(g, d).c_str(), dev, device);
        device = dev;
        touched.insert(d);
        touched.insert(base_of(g, d));
      }
  }
  NNC_CHECK(device >= 0 && device < parallel, "%s: the graph is on GPU %d; with %d devices it must be on one of GPUs 0 to %d", what,
            device, parallel, parallel - 1);
  std::vector<int> devices;  // the copies' devices, in order
  for (int k = 0; k < parallel; k++)
    if (k != device) devices.push_back(k);
  auto check_listed = [&](const ccv_nnc_tensor_symbol_t& s, const char* list, int i) {
    NNC_CHECK(s.graph == g && s.d >= 0 && static_cast<size_t>(s.d) < g->tensors.size() &&
                  !(g->tensors[static_cast<size_t>(s.d)].flags & CCV_NNC_TENSOR_SYMBOL_DEAD),
              "%s: %s[%d] is not a live tensor symbol of this graph", what, list, i);
    const Graph::Tensor& t = g->tensors[static_cast<size_t>(s.d)];
    NNC_CHECK(t.alias_of < 0 && t.aliases.empty(), "%s: %s[%d], %s, has aliases or is one; those cannot be %s", what, list, i,
              tensor_label(g, s.d).c_str(), list);
    NNC_CHECK(touched.count(s.d), "%s: %s[%d], %s, is not used between the sources and the destinations", what, list, i,
              tensor_label(g, s.d).c_str());
  };
  for (int i = 0; i < broadcast_size; i++) {
    check_listed(broadcasts[i], "broadcasts", i);
    for (int w : g->tensors[static_cast<size_t>(broadcasts[i].d)].writers)
      NNC_CHECK(!in_range[static_cast<size_t>(w)], "%s: broadcasts[%d], %s, is written by %s; a broadcast symbol is an input", what,
                i, tensor_label(g, broadcasts[i].d).c_str(), exec_label(g, w).c_str());
  }
  for (int i = 0; i < allreducer_size; i++) check_listed(allreducers[i], "allreducers", i);
  for (int i = 0; i < reducer_size; i++) check_listed(reducers[i], "reducers", i);

  // --- Copies of the symbols ------------------------------------------------
  const int n = static_cast<int>(devices.size());
  // copy[d][k]: the symbol standing for d on devices[k].
  std::vector<std::vector<int>> copy(g->tensors.size());
  auto on_device = [](ccv_nnc_tensor_param_t info, int dev) {
    CCV_TENSOR_SET_DEVICE_ID(info.type, dev);
    return info;
  };
  auto suffix = [](const std::string& name, int dev) { return name.empty() ? name : name + "@" + std::to_string(dev); };
  for (int d : touched) {  // bases sort before their aliases? not necessarily: bases first below
    const Graph::Tensor& t = g->tensors[static_cast<size_t>(d)];
    if (t.alias_of >= 0) continue;
    for (int k = 0; k < n; k++) {
      const Graph::Tensor& tk = g->tensors[static_cast<size_t>(d)];
      const std::string name = suffix(tk.name, devices[static_cast<size_t>(k)]);
      const ccv_nnc_tensor_symbol_t c = tensor_new(g, on_device(tk.info, devices[static_cast<size_t>(k)]), name.empty() ? nullptr : name.c_str());
      g->tensors[static_cast<size_t>(c.d)].flags = g->tensors[static_cast<size_t>(d)].flags;
      copy[static_cast<size_t>(d)].push_back(c.d);
    }
  }
  for (int d : touched) {
    if (g->tensors[static_cast<size_t>(d)].alias_of < 0) continue;
    const int base = g->tensors[static_cast<size_t>(d)].alias_of;
    for (int k = 0; k < n; k++) {
      const Graph::Tensor t = g->tensors[static_cast<size_t>(d)];  // a copy: tensor_new may move the table
      const std::string name = suffix(t.name, devices[static_cast<size_t>(k)]);
      const ccv_nnc_tensor_symbol_t c =
          alias_new(g, {copy[static_cast<size_t>(base)][static_cast<size_t>(k)], g}, t.ofs, t.stride,
                    on_device(t.info, devices[static_cast<size_t>(k)]), name.empty() ? nullptr : name.c_str());
      g->tensors[static_cast<size_t>(c.d)].flags = t.flags;
      copy[static_cast<size_t>(d)].push_back(c.d);
    }
  }
  copy.resize(g->tensors.size());
  for (int d : touched) {
    auto& v = g->tensors[static_cast<size_t>(d)].copies;
    v.clear();
    for (int k = 0; k < n; k++) v.emplace_back(devices[static_cast<size_t>(k)], copy[static_cast<size_t>(d)][static_cast<size_t>(k)]);
  }
  auto mapped = [&](const std::vector<int>& io, int k) {
    std::vector<ccv_nnc_tensor_symbol_t> out;
    for (int d : io) out.push_back({d < 0 ? kNone : copy[static_cast<size_t>(d)][static_cast<size_t>(k)], g});
    return out;
  };

  // --- Copies of the execs, with their edges --------------------------------
  std::vector<std::vector<int>> ecopy(g->execs.size());
  for (int e : order) {
    for (int k = 0; k < n; k++) {
      const Graph::Exec x = g->execs[static_cast<size_t>(e)];
      const auto in = mapped(x.inputs, k), out = mapped(x.outputs, k);
      const std::string name = suffix(x.name, devices[static_cast<size_t>(k)]);
      const ccv_nnc_graph_exec_symbol_t c = exec_new(g, x.cmd, in.data(), static_cast<int>(in.size()), out.data(),
                                                     static_cast<int>(out.size()), name.empty() ? nullptr : name.c_str());
      g->execs[static_cast<size_t>(c.d)].hint = x.hint;
      g->execs[static_cast<size_t>(c.d)].flags = x.flags;
      ecopy[static_cast<size_t>(e)].push_back(c.d);
    }
  }
  ecopy.resize(g->execs.size());
  for (int e : order) {
    auto& v = g->execs[static_cast<size_t>(e)].copies;
    v.clear();
    for (int k = 0; k < n; k++) v.emplace_back(devices[static_cast<size_t>(k)], ecopy[static_cast<size_t>(e)][static_cast<size_t>(k)]);
    const std::vector<int> outgoing = g->execs[static_cast<size_t>(e)].outgoing;
    for (int o : outgoing)
      if (in_range[static_cast<size_t>(o)])
        for (int k = 0; k < n; k++)
          concat(g, ecopy[static_cast<size_t>(e)][static_cast<size_t>(k)], ecopy[static_cast<size_t>(o)][static_cast<size_t>(k)]);
  }
  // The execs of every device (the graph's own first), and who reads / writes a symbol among them.
  std::vector<int> all = order;
  for (int e : order)
    for (int c : ecopy[static_cast<size_t>(e)]) all.push_back(c);
  // Indexed once: each symbol's readers among them, and which execs they are
  // (the collectives added below are neither).
  std::unordered_map<int, std::vector<int>> readers_index;
  std::vector<char> in_all(g->execs.size(), 0);
  for (int e : all) {
    in_all[static_cast<size_t>(e)] = 1;
    const std::vector<int>& in = g->execs[static_cast<size_t>(e)].inputs;
    for (size_t i = 0; i < in.size(); i++)
      if (in[i] >= 0 && std::find(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(i), in[i]) == in.begin() + static_cast<std::ptrdiff_t>(i))
        readers_index[in[i]].push_back(e);
  }
  auto readers_of = [&](int d) {
    const auto it = readers_index.find(d);
    return it == readers_index.end() ? std::vector<int>{} : it->second;
  };
  auto writers_of = [&](int d) {
    std::vector<int> w;
    for (int e : g->tensors[static_cast<size_t>(d)].writers)
      if (static_cast<size_t>(e) < in_all.size() && in_all[static_cast<size_t>(e)]) w.push_back(e);
    return w;
  };
  auto copies_with_own = [&](int d) {
    std::vector<int> v{d};
    for (int c : copy[static_cast<size_t>(d)]) v.push_back(c);
    return v;
  };
  std::vector<int> added_sources, added_destinations;

  // --- Broadcasts -------------------------------------------------------------
  for (int i = 0; i < broadcast_size; i++) {
    const int b = broadcasts[i].d;
    if (n == 0) break;
    std::vector<ccv_nnc_tensor_symbol_t> out;
    for (int c : copy[static_cast<size_t>(b)]) out.push_back({c, g});
    const ccv_nnc_tensor_symbol_t in{b, g};
    const std::string name = "broadcast " + g->tensors[static_cast<size_t>(b)].name;
    const ccv_nnc_graph_exec_symbol_t x =
        exec_new(g, comm_cmd(CCV_NNC_COMM_BROADCAST_FORWARD), &in, 1, out.data(), static_cast<int>(out.size()), name.c_str());
    for (int c : copy[static_cast<size_t>(b)])
      for (int r : readers_of(c)) concat(g, x.d, r);
    added_sources.push_back(x.d);
  }

  // --- Allreducers and reducers -------------------------------------------------
  // A collective over a symbol and its copies into new symbols; with `rewire`
  // the readers of each read its new symbol, after the collective.
  auto collective = [&](int s, uint32_t id, bool rewire, const char* kind) {
    const std::vector<int> ins = copies_with_own(s);
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    for (size_t k = 0; k < ins.size(); k++) {
      in.push_back({ins[k], g});
      const Graph::Tensor t = g->tensors[static_cast<size_t>(ins[k])];
      const std::string name = t.name.empty() ? t.name : std::string(kind) + " " + t.name;
      // (REDUCE writes its sum into its first output only; the others are there for its shape rule.)
      out.push_back(tensor_new(g, t.info, name.empty() ? nullptr : name.c_str()));
    }
    std::vector<std::vector<int>> readers;
    for (int d : ins) readers.push_back(readers_of(d));
    const std::string name = std::string(kind) + " " + g->tensors[static_cast<size_t>(s)].name;
    const ccv_nnc_graph_exec_symbol_t x = exec_new(g, comm_cmd(id), in.data(), static_cast<int>(in.size()), out.data(),
                                                   static_cast<int>(out.size()), name.c_str());
    for (int d : ins)
      for (int w : writers_of(d)) concat(g, w, x.d);
    if (rewire) {
      // The readers read the sums, after the collective.
      for (size_t k = 0; k < ins.size(); k++)
        for (int r : readers[k]) {
          Graph::Exec rx = g->execs[static_cast<size_t>(r)];
          std::vector<ccv_nnc_tensor_symbol_t> rin, rout;
          for (int d : rx.inputs) rin.push_back({d == ins[k] ? out[k].d : d, g});
          for (int d : rx.outputs) rout.push_back({d, g});
          exec_set_io(g, r, rin.data(), static_cast<int>(rin.size()), rout.data(), static_cast<int>(rout.size()));
          concat(g, x.d, r);
        }
      auto& v = g->tensors[static_cast<size_t>(out[0].d)].copies;
      v.clear();
      for (int k = 0; k < n; k++) v.emplace_back(devices[static_cast<size_t>(k)], out[static_cast<size_t>(k) + 1].d);
    }
    if (g->execs[static_cast<size_t>(x.d)].outgoing.empty()) added_destinations.push_back(x.d);
    return out[0];
  };
  for (int i = 0; i < allreducer_size; i++) {
    const ccv_nnc_tensor_symbol_t o = collective(allreducers[i].d, CCV_NNC_COMM_ALLREDUCE_FORWARD, true, "allreduce");
    if (allreducer_outs) allreducer_outs[i] = o;
  }
  for (int i = 0; i < reducer_size; i++) {
    const ccv_nnc_tensor_symbol_t o = collective(reducers[i].d, CCV_NNC_COMM_REDUCE_FORWARD, false, "reduce");
    if (reducer_outs) reducer_outs[i] = o;
  }

  // --- Sources and destinations set on the graph --------------------------------
  if (!g->sources.empty() || !g->destinations.empty()) {
    std::vector<ccv_nnc_graph_exec_symbol_t> src, dst;
    std::vector<char> incoming(g->execs.size(), 0);
    for (size_t f = 0; f < g->execs.size(); f++)
      if (!(g->execs[f].flags & CCV_NNC_GRAPH_EXEC_DEAD))
        for (int o : g->execs[f].outgoing) incoming[static_cast<size_t>(o)] = 1;
    auto has_incoming = [&](int e) { return incoming[static_cast<size_t>(e)] != 0; };
    for (const auto& s : g->sources) {
      if (!has_incoming(s.d)) src.push_back(s);
      if (s.d < static_cast<int>(ecopy.size()))
        for (int c : ecopy[static_cast<size_t>(s.d)])
          if (!has_incoming(c)) src.push_back({c, g});
    }
    for (int x : added_sources) src.push_back({x, g});
    for (const auto& s : g->destinations) {
      if (g->execs[static_cast<size_t>(s.d)].outgoing.empty()) dst.push_back(s);
      if (s.d < static_cast<int>(ecopy.size()))
        for (int c : ecopy[static_cast<size_t>(s.d)])
          if (g->execs[static_cast<size_t>(c)].outgoing.empty()) dst.push_back({c, g});
    }
    for (int x : added_destinations) dst.push_back({x, g});
    g->sources = src;
    g->destinations = dst;
  }
}

}  // namespace nnc::symbolic
