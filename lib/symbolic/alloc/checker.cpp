// The independent checker. It shares no code with the planners: liveness,
// aliases, loop semantics and reachability are re-derived here from the
// Problem, so a planner bug cannot hide behind a shared helper.
#include "symbolic/alloc/planner.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <string>

namespace nnc::alloc {
namespace {

struct Live {
  std::int64_t first = 0, last = 0;             // total order
  std::vector<std::size_t> writes, reads;       // partial order
};

struct Item {
  std::size_t tensor;  // index in the problem (tensors, then sub-graphs)
  unsigned copy;       // loop copy
  std::uint64_t addr;  // absolute
  std::uint64_t size;
  Live live;
};

std::string name(std::size_t t, unsigned copy, unsigned unroll) {
  std::string s = "tensor " + std::to_string(t);
  if (unroll > 1) s += " (iteration copy " + std::to_string(copy) + ")";
  return s;
}

class Reach {
public:
  bool init(const Problem& p) {
    n_ = p.steps;
    after_.assign(n_ * n_, false);
    std::vector<std::vector<std::size_t>> next(n_);
    for (auto [a, b] : p.edges) {
      if (a >= n_ || b >= n_) return false;
      next[a].push_back(b);
    }
    for (std::size_t s = 0; s < n_; s++) {
      std::vector<std::size_t> stack(next[s].begin(), next[s].end());
      while (!stack.empty()) {
        const std::size_t v = stack.back();
        stack.pop_back();
        if (after_[s * n_ + v]) continue;
        after_[s * n_ + v] = true;
        for (std::size_t w : next[v]) stack.push_back(w);
      }
      if (after_[s * n_ + s]) return false;  // a cycle
    }
    return true;
  }
  bool operator()(std::size_t a, std::size_t b) const { return after_[a * n_ + b]; }

private:
  std::size_t n_ = 0;
  std::vector<bool> after_;
};

bool strictly_before(const Problem& p, const Reach& r, const Live& a, const Live& b) {
  if (!p.partial_order) return a.last < b.first;
  for (const auto* x : {&a.writes, &a.reads})
    for (std::size_t s : *x)
      for (const auto* y : {&b.writes, &b.reads})
        for (std::size_t t : *y)
          if (!r(s, t)) return false;
  return true;
}

bool live_together(const Problem& p, const Reach& r, const Live& a, const Live& b) {
  if (!p.partial_order) return !(a.last < b.first || b.last < a.first);
  return !strictly_before(p, r, a, b) && !strictly_before(p, r, b, a);
}

// In place: the output may only reuse the input from the step that writes it,
// once that step is the input's last use.
bool inplace_legit(const Problem& p, const Reach& r, const Live& in, const Live& out) {
  if (!p.partial_order) return in.last <= out.first && in.first <= out.first;
  for (const auto* x : {&in.writes, &in.reads})
    for (std::size_t s : *x) {
      for (std::size_t t : out.writes)
        if (!r(s, t) && s != t) return false;
      for (std::size_t t : out.reads)
        if (!r(s, t) && !(s == t && x == &in.reads)) return false;
    }
  return true;
}

std::string check_impl(const Problem& p, const Plan& plan, std::uint64_t base) {
  const std::size_t n = p.tensors.size();
  const std::size_t m = n + p.subgraphs.size();
  if (plan.placements.size() != m)
    return "plan has " + std::to_string(plan.placements.size()) + " placements for " + std::to_string(m) + " tensors";
  if (plan.buffer_base.size() != plan.buffers.size()) return "buffer bases and sizes disagree";
  if (plan.subplans.size() != p.subgraphs.size()) return "plan has the wrong number of sub-graph plans";
  // Buffers laid back to back inside the arena, never overlapping.
  {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bufs;
    for (std::size_t b = 0; b < plan.buffers.size(); b++) bufs.emplace_back(plan.buffer_base[b], plan.buffers[b]);
    std::sort(bufs.begin(), bufs.end());
    for (std::size_t b = 0; b < bufs.size(); b++) {
      if (bufs[b].first + bufs[b].second > plan.arena) return "buffer outside the arena";
      if (b + 1 < bufs.size() && bufs[b].first + bufs[b].second > bufs[b + 1].first) return "buffers overlap";
    }
  }
  Reach reach;
  if (p.partial_order && !reach.init(p)) return "bad partial order";

  // Sub-graph sizes are what their plans need; then their plans, relative to
  // where the parent placed them.
  std::vector<std::uint64_t> sg_size(p.subgraphs.size(), 0);
  for (std::size_t k = 0; k < p.subgraphs.size(); k++) {
    if (plan.subplans[k].size() != p.subgraphs[k].cases.size()) return "sub-graph " + std::to_string(k) + ": wrong number of cases";
    for (const Plan& c : plan.subplans[k]) sg_size[k] = std::max(sg_size[k], c.arena);
  }

  const unsigned unroll = plan.unroll;
  std::int64_t steps = 0;
  if (!p.carried.empty()) {
    if (p.partial_order) return "loop bodies need a total order";
    if (unroll < 1 || plan.iterations.size() != unroll) return "loop plan needs one placement list per unrolled copy";
    for (const auto& it : plan.iterations)
      if (it.size() != m) return "loop copy has the wrong number of placements";
    std::int64_t max_last = -1;
    for (const TensorSpec& t : p.tensors) max_last = std::max(max_last, t.last);
    for (const SubGraph& s : p.subgraphs) max_last = std::max(max_last, s.step);
    steps = p.total_steps > 0 ? p.total_steps : max_last + 1;
  } else if (unroll != 1) {
    return "only loop bodies are unrolled";
  }
  auto placements = [&](unsigned j) -> const std::vector<Placement>& {
    return p.carried.empty() ? plan.placements : plan.iterations[j];
  };
  auto spec_size = [&](std::size_t t) -> std::uint64_t {
    return t < n ? static_cast<std::uint64_t>(std::max<std::int64_t>(p.tensors[t].size, 0)) : sg_size[t - n];
  };

  // Liveness per base tensor, views folded in; loop inputs from the start of
  // an iteration and outputs to its end.
  std::vector<std::size_t> root(m);
  std::vector<std::uint64_t> view_off(m, 0);
  std::vector<Live> live(m);
  std::vector<bool> has_live(m, false);
  for (std::size_t t = 0; t < m; t++) {
    std::size_t r = t, hops = 0;
    while (r < n && p.tensors[r].alias_of != kNone) {
      if (p.tensors[r].alias_of >= n || ++hops > n) return name(t, 0, 1) + ": bad alias chain";
      view_off[t] += static_cast<std::uint64_t>(p.tensors[r].alias_offset);
      r = p.tensors[r].alias_of;
    }
    root[t] = r;
  }
  for (std::size_t t = 0; t < m; t++) {
    Live l;
    if (t < n) {
      const TensorSpec& s = p.tensors[t];
      l.first = s.first, l.last = s.last, l.writes = s.writes, l.reads = s.reads;
      if (p.partial_order && l.writes.empty() && l.reads.empty()) continue;
    } else {
      const std::int64_t step = p.subgraphs[t - n].step;
      l.first = l.last = step;
      if (p.partial_order) l.writes = {static_cast<std::size_t>(step)};
    }
    for (const Carried& c : p.carried) {
      if (c.input == t) l.first = 0;
      if (c.output == t) l.last = steps - 1;
    }
    Live& b = live[root[t]];
    if (!has_live[root[t]]) {
      b = l;
      has_live[root[t]] = true;
    } else {
      b.first = std::min(b.first, l.first), b.last = std::max(b.last, l.last);
      b.writes.insert(b.writes.end(), l.writes.begin(), l.writes.end());
      b.reads.insert(b.reads.end(), l.reads.begin(), l.reads.end());
    }
  }

  std::vector<Item> items;
  for (unsigned j = 0; j < unroll; j++) {
    const std::vector<Placement>& pl = placements(j);
    for (std::size_t t = 0; t < m; t++) {
      const bool external = root[t] < n && p.tensors[root[t]].external;
      const Placement& at = pl[t];
      if (external) {
        if (at.buffer != kNone) return name(t, j, unroll) + " is external but placed in the arena";
        continue;
      }
      if (at.buffer >= plan.buffers.size()) return name(t, j, unroll) + " has no buffer";
      const std::uint64_t size = spec_size(t);
      if (at.offset + size > plan.buffers[at.buffer] || at.offset + size < at.offset)
        return name(t, j, unroll) + " reaches outside its buffer";
      const std::uint64_t addr = plan.buffer_base[at.buffer] + at.offset;
      // Sub-graph tensors: their nested tensors' alignment is checked by the
      // nested check from this absolute base.
      const std::uint64_t align = t < n ? static_cast<std::uint64_t>(p.tensors[t].alignment) : 1;
      if (align == 0 || (base + addr) % align != 0) return name(t, j, unroll) + " is misaligned";
      if (root[t] != t) {
        const Placement& rb = pl[root[t]];
        if (rb.buffer != at.buffer || plan.buffer_base[rb.buffer] + rb.offset + view_off[t] != addr)
          return name(t, j, unroll) + " is a view but does not sit at its base's offset";
        continue;
      }
      if (!has_live[t]) continue;
      Live l = live[t];
      l.first += static_cast<std::int64_t>(j) * steps;
      l.last += static_cast<std::int64_t>(j) * steps;
      items.push_back({t, j, addr, size, std::move(l)});
    }
  }
  for (unsigned j = 0; j < unroll; j++)
    for (const Carried& c : p.carried) {
      const Placement& a = placements(j)[c.output];
      const Placement& b = placements((j + 1) % unroll)[c.input];
      if (a.buffer != b.buffer || a.offset != b.offset)
        return "carried pair " + name(c.output, j, unroll) + " -> " + name(c.input, (j + 1) % unroll, unroll) +
               " does not share memory";
    }

  std::set<std::pair<std::size_t, std::size_t>> inplace;
  for (const InPlace& c : p.inplace)
    if (c.output < n && c.input < n) inplace.insert({c.input, c.output});
  for (std::size_t a = 0; a < items.size(); a++)
    for (std::size_t b = a + 1; b < items.size(); b++) {
      const Item& x = items[a];
      const Item& y = items[b];
      if (x.size == 0 || y.size == 0) continue;
      if (!(x.addr < y.addr + y.size && y.addr < x.addr + x.size)) continue;
      if (!live_together(p, reach, x.live, y.live)) continue;
      if (x.copy == y.copy) {
        if (inplace.count({x.tensor, y.tensor}) && inplace_legit(p, reach, x.live, y.live)) continue;
        if (inplace.count({y.tensor, x.tensor}) && inplace_legit(p, reach, y.live, x.live)) continue;
      }
      return name(x.tensor, x.copy, unroll) + " and " + name(y.tensor, y.copy, unroll) +
             " overlap in memory while both live";
    }

  for (std::size_t k = 0; k < p.subgraphs.size(); k++)
    for (unsigned j = 0; j < unroll; j++) {
      const Placement& at = placements(j)[n + k];
      if (at.buffer == kNone) return "sub-graph " + std::to_string(k) + " has no buffer";
      const std::uint64_t addr = base + plan.buffer_base[at.buffer] + at.offset;
      for (std::size_t c = 0; c < p.subgraphs[k].cases.size(); c++) {
        std::string e = check_impl(p.subgraphs[k].cases[c], plan.subplans[k][c], addr);
        if (!e.empty()) return "sub-graph " + std::to_string(k) + " case " + std::to_string(c) + ": " + e;
      }
    }
  return "";
}

}  // namespace

std::string check(const Problem& problem, const Plan& plan) {
  try {
    return check_impl(problem, plan, 0);
  } catch (const std::exception& e) {
    return std::string("checker failed: ") + e.what();
  }
}

}  // namespace nnc::alloc
