// bench-planner [--dump DIR]
//
// Builds lifetime lists from layer tables (ResNet-50 and a 2-layer LSTM with
// hidden 512 over 32 unrolled steps; inference and training; batch 1 and 32;
// fp32) and from random DAGs in random topological orders, plans each with
// the NNC planner, greedy by size, fit (skyline placement, best and first
// fit over several orders, squeaky-wheel reordering) and the default (the
// best of NNC and fit seeded with NNC's plan; "won" names the winner, ties
// go to NNC), and prints bytes with no reuse,
// the lower bound, each plan and its ratio to the bound, and planning times
// (best_ms is what the compiler pays; best_cpu is the same in this thread's
// CPU time, which other processes on a loaded machine disturb less).
// Training lists run the forward pass, then the backward pass in reverse,
// keeping each forward tensor until the last gradient step that needs it;
// gradients reaching one tensor from several consumers are summed in one
// step. Parameters, their gradients and graph inputs live outside the arena
// and are not listed. --dump writes every list in nnc-plan's format.
#include "symbolic/alloc/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using nnc::alloc::LifetimeList;
using nnc::alloc::Plan;
using nnc::alloc::Planner;
using nnc::alloc::TensorSpec;

// One layer: it writes one tensor from earlier ones.
struct Op {
  std::vector<int> inputs;
  std::int64_t bytes = 0;
  bool external = false;      // a graph input (outside the arena)
  bool output = false;        // a graph output: live to the end of the pass
  bool loss = false;          // backward starts here (no incoming gradient)
  bool needs_inputs = false;  // its backward reads its inputs
  bool needs_output = false;  // its backward reads its output
  bool slice = false;         // reads a slice: its gradient is its own size
};

struct Net {
  std::vector<Op> ops;
  int add(Op op) {
    ops.push_back(std::move(op));
    return static_cast<int>(ops.size()) - 1;
  }
};

struct Lifetimes {
  std::vector<TensorSpec> tensors;
  std::int64_t step = 0;
  TensorSpec& make(std::int64_t bytes) {
    TensorSpec t;
    t.size = bytes;
    t.alignment = 64;
    t.first = t.last = step;
    tensors.push_back(t);
    return tensors.back();
  }
};

void use(Lifetimes& lt, int tensor, std::int64_t step) {
  if (tensor >= 0) lt.tensors[static_cast<std::size_t>(tensor)].last = std::max(lt.tensors[static_cast<std::size_t>(tensor)].last, step);
}

// Inference or training lifetimes of a net: one step per forward op, then
// per op in reverse a gradient sum (if needed) and its backward step.
std::vector<TensorSpec> lifetimes(const Net& net, bool training) {
  Lifetimes lt;
  const std::size_t n = net.ops.size();
  std::vector<int> tensor(n, -1);
  for (std::size_t i = 0; i < n; i++) {
    const Op& op = net.ops[i];
    if (op.external) continue;
    for (int in : op.inputs) use(lt, tensor[static_cast<std::size_t>(in)], lt.step);
    lt.make(op.bytes);
    tensor[i] = static_cast<int>(lt.tensors.size()) - 1;
    lt.step++;
  }
  std::vector<int> outputs;
  for (std::size_t i = 0; i < n; i++)
    if (net.ops[i].output && tensor[i] >= 0) outputs.push_back(tensor[i]);
  if (!training) {
    for (int t : outputs) use(lt, t, lt.step - 1);
    return lt.tensors;
  }
  std::vector<std::vector<int>> partial(n);
  for (std::size_t i = n; i-- > 0;) {
    const Op& op = net.ops[i];
    if (op.external) continue;
    int grad = -1;
    if (!op.loss) {
      if (partial[i].empty()) continue;  // nothing downstream needs a gradient
      if (partial[i].size() == 1) {
        grad = partial[i][0];
      } else {
        for (int g : partial[i]) use(lt, g, lt.step);
        lt.make(op.bytes);
        grad = static_cast<int>(lt.tensors.size()) - 1;
        lt.step++;
      }
    }
    use(lt, grad, lt.step);
    if (op.needs_inputs)
      for (int in : op.inputs) use(lt, tensor[static_cast<std::size_t>(in)], lt.step);
    if (op.needs_output) use(lt, tensor[i], lt.step);
    for (int in : op.inputs) {
      const Op& src = net.ops[static_cast<std::size_t>(in)];
      if (src.external) continue;
      lt.make(op.slice ? op.bytes : src.bytes);
      partial[static_cast<std::size_t>(in)].push_back(static_cast<int>(lt.tensors.size()) - 1);
    }
    lt.step++;
  }
  return lt.tensors;
}

Net resnet50(std::int64_t batch) {
  Net net;
  auto act = [&](std::int64_t c, std::int64_t hw) { return batch * c * hw * hw * 4; };
  Op in;
  in.bytes = act(3, 224);
  in.external = true;
  int x = net.add(in);
  auto conv = [&](int from, std::int64_t c, std::int64_t hw) {
    Op op;
    op.inputs = {from};
    op.bytes = act(c, hw);
    op.needs_inputs = true;
    return net.add(op);
  };
  auto bn = [&](int from, std::int64_t c, std::int64_t hw) {
    Op op;
    op.inputs = {from};
    op.bytes = act(c, hw);
    op.needs_inputs = true;
    return net.add(op);
  };
  auto relu = [&](int from, std::int64_t c, std::int64_t hw) {
    Op op;
    op.inputs = {from};
    op.bytes = act(c, hw);
    op.needs_output = true;
    return net.add(op);
  };
  x = relu(bn(conv(x, 64, 112), 64, 112), 64, 112);
  {
    Op pool;
    pool.inputs = {x};
    pool.bytes = act(64, 56);
    pool.needs_inputs = pool.needs_output = true;
    x = net.add(pool);
  }
  std::int64_t hw = 56, in_c = 64;
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; s++) {
    const std::int64_t width = 64 << s, out_c = width * 4;
    for (int b = 0; b < blocks[s]; b++) {
      const std::int64_t ohw = (b == 0 && s > 0) ? hw / 2 : hw;
      int y = relu(bn(conv(x, width, hw), width, hw), width, hw);
      y = relu(bn(conv(y, width, ohw), width, ohw), width, ohw);  // 3x3, strided in the first block
      y = bn(conv(y, out_c, ohw), out_c, ohw);
      int shortcut = x;
      if (b == 0) shortcut = bn(conv(x, out_c, ohw), out_c, ohw);
      Op add;
      add.inputs = {y, shortcut};
      add.bytes = act(out_c, ohw);
      x = relu(net.add(add), out_c, ohw);
      hw = ohw, in_c = out_c;
    }
  }
  (void)in_c;
  Op pool;
  pool.inputs = {x};
  pool.bytes = batch * 2048 * 4;
  x = net.add(pool);
  Op fc;
  fc.inputs = {x};
  fc.bytes = batch * 1000 * 4;
  fc.needs_inputs = true;
  x = net.add(fc);
  Op loss;
  loss.inputs = {x};
  loss.bytes = batch * 1000 * 4;
  loss.loss = loss.output = loss.needs_output = true;
  net.add(loss);
  return net;
}

Net lstm(std::int64_t batch) {
  constexpr int kLayers = 2, kSteps = 32;
  constexpr std::int64_t kHidden = 512, kInput = 512, kVocab = 512;
  Net net;
  const std::int64_t h_bytes = batch * kHidden * 4;
  auto external = [&](std::int64_t bytes) {
    Op op;
    op.bytes = bytes;
    op.external = true;
    return net.add(op);
  };
  auto op = [&](std::vector<int> in, std::int64_t bytes, bool needs_in, bool needs_out, bool slice = false) {
    Op o;
    o.inputs = std::move(in);
    o.bytes = bytes;
    o.needs_inputs = needs_in;
    o.needs_output = needs_out;
    o.slice = slice;
    return net.add(o);
  };
  std::vector<int> x(kSteps);
  for (int t = 0; t < kSteps; t++) x[static_cast<std::size_t>(t)] = external(batch * kInput * 4);
  for (int l = 0; l < kLayers; l++) {
    int h = external(h_bytes), c = external(h_bytes);
    for (int t = 0; t < kSteps; t++) {
      const int gx = op({x[static_cast<std::size_t>(t)]}, 4 * h_bytes, true, false);
      const int gh = op({h}, 4 * h_bytes, true, false);
      const int gates = op({gx, gh}, 4 * h_bytes, false, false);
      const int i = op({gates}, h_bytes, false, true, true);
      const int f = op({gates}, h_bytes, false, true, true);
      const int g = op({gates}, h_bytes, false, true, true);
      const int o = op({gates}, h_bytes, false, true, true);
      const int fc = op({f, c}, h_bytes, true, false);
      const int ig = op({i, g}, h_bytes, true, false);
      c = op({fc, ig}, h_bytes, false, false);
      const int tc = op({c}, h_bytes, false, true);
      h = op({o, tc}, h_bytes, true, false);
      x[static_cast<std::size_t>(t)] = h;
    }
  }
  for (int t = 0; t < kSteps; t++) {
    const int logits = op({x[static_cast<std::size_t>(t)]}, batch * kVocab * 4, true, false);
    Op loss;
    loss.inputs = {logits};
    loss.bytes = batch * kVocab * 4;
    loss.loss = loss.output = loss.needs_output = true;
    net.add(loss);
  }
  return net;
}

// A random DAG in a random topological order: each node reads one to three
// recent nodes (now and then a distant one, like a skip connection).
std::vector<TensorSpec> random_dag(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<std::size_t>> inputs(n), consumers(n);
  std::vector<std::int64_t> bytes(n);
  for (std::size_t i = 0; i < n; i++) {
    const double e = std::uniform_real_distribution<double>(12.0, 22.0)(rng);  // 4 KiB .. 4 MiB
    bytes[i] = (static_cast<std::int64_t>(std::exp2(e)) + 63) / 64 * 64;
    if (i == 0) continue;
    const std::size_t k = 1 + rng() % 3;
    for (std::size_t j = 0; j < k; j++) {
      const std::size_t window = (rng() % 8 == 0) ? i : std::min<std::size_t>(i, 6);
      const std::size_t from = i - 1 - rng() % window;
      if (std::find(inputs[i].begin(), inputs[i].end(), from) == inputs[i].end()) {
        inputs[i].push_back(from);
        consumers[from].push_back(i);
      }
    }
  }
  std::vector<std::size_t> indeg(n), ready, pos(n);
  for (std::size_t i = 0; i < n; i++) {
    indeg[i] = inputs[i].size();
    if (indeg[i] == 0) ready.push_back(i);
  }
  for (std::size_t step = 0; step < n; step++) {
    const std::size_t pick = rng() % ready.size();
    const std::size_t v = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    pos[v] = step;
    for (std::size_t w : consumers[v])
      if (--indeg[w] == 0) ready.push_back(w);
  }
  std::vector<TensorSpec> out(n);
  for (std::size_t i = 0; i < n; i++) {
    out[i].size = bytes[i];
    out[i].alignment = 64;
    out[i].first = out[i].last = static_cast<std::int64_t>(pos[i]);
    for (std::size_t w : consumers[i]) out[i].last = std::max(out[i].last, static_cast<std::int64_t>(pos[w]));
  }
  return out;
}

struct Row {
  std::string name;
  std::vector<TensorSpec> tensors;
};

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double mib(std::uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  std::string dump;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--dump" && i + 1 < argc) {
      dump = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench-planner [--dump DIR]\n");
      return 2;
    }
  }
  std::vector<Row> rows;
  for (std::int64_t batch : {1, 32}) {
    const std::string b = "b" + std::to_string(batch);
    rows.push_back({"resnet50-infer-" + b, lifetimes(resnet50(batch), false)});
    rows.push_back({"resnet50-train-" + b, lifetimes(resnet50(batch), true)});
    rows.push_back({"lstm2x512x32-infer-" + b, lifetimes(lstm(batch), false)});
    rows.push_back({"lstm2x512x32-train-" + b, lifetimes(lstm(batch), true)});
  }
  rows.push_back({"random-dag-200", random_dag(200, 1)});
  rows.push_back({"random-dag-1000", random_dag(1000, 2)});
  rows.push_back({"random-dag-3000", random_dag(3000, 3)});

  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) std::printf("# load average %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  std::printf("%-22s %7s %9s %9s %9s %7s %9s %7s %9s %7s %9s %7s %6s %7s %7s %7s %7s %7s %8s\n", "list", "tensors", "noreuse",
              "bound", "nnc", "ratio", "greedy", "ratio", "fit", "ratio", "best", "ratio", "won", "nnc-oc", "nnc_ms",
              "grdy_ms", "fit_ms", "best_ms", "best_cpu");
  std::printf("%-22s %7s %9s %9s %9s %7s %9s %7s %9s %7s %9s %7s %6s %7s %7s %7s %7s %7s %8s\n", "", "", "MiB", "MiB", "MiB", "",
              "MiB", "", "MiB", "", "MiB", "", "", "ratio", "", "", "", "", "ms");
  int status = 0;
  for (const Row& row : rows) {
    nnc::alloc::Problem p;
    p.tensors = row.tensors;
    if (!dump.empty()) {
      LifetimeList list;
      list.problem = p;
      for (std::size_t i = 0; i < p.tensors.size(); i++) list.ids.push_back(static_cast<std::int64_t>(i));
      std::ofstream(dump + "/" + row.name + ".txt") << nnc::alloc::format_lifetimes(list);
    }
    constexpr int kPlanners = 5;
    Plan plans[kPlanners];
    double ms[kPlanners], cpu[kPlanners];
    const Planner which[kPlanners] = {Planner::nnc, Planner::greedy, Planner::fit, Planner::best,
                                      Planner::nnc_interference};
    for (int k = 0; k < kPlanners; k++) {
      const double c0 = cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      auto r = nnc::alloc::plan(p, which[k]);
      ms[k] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      cpu[k] = cpu_ms() - c0;
      if (!r) {
        std::fprintf(stderr, "%s: %s\n", row.name.c_str(), r.error().c_str());
        return 1;
      }
      plans[k] = std::move(r).value();
      if (std::string v = nnc::alloc::check(p, plans[k]); !v.empty()) {
        std::fprintf(stderr, "%s: %s plan invalid: %s\n", row.name.c_str(), nnc::alloc::planner_name(which[k]), v.c_str());
        status = 1;
      }
    }
    const double bound = static_cast<double>(plans[0].lower_bound);
    auto ratio = [&](int k) { return static_cast<double>(plans[k].arena) / bound; };
    std::printf("%-22s %7zu %9.2f %9.2f %9.2f %6.4fx %9.2f %6.4fx %9.2f %6.4fx %9.2f %6.4fx %6s %6.3fx %7.2f %7.2f %7.2f %7.2f %8.2f\n",
                row.name.c_str(), row.tensors.size(), mib(nnc::alloc::no_reuse_bytes(p)), mib(plans[0].lower_bound),
                mib(plans[0].arena), ratio(0), mib(plans[1].arena), ratio(1), mib(plans[2].arena), ratio(2),
                mib(plans[3].arena), ratio(3), nnc::alloc::planner_name(plans[3].planner), ratio(4), ms[0], ms[1], ms[2],
                ms[3], cpu[3]);
  }
  return status;
}
