// Validation, the execution order, and blocks with their interference graph.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <string>

namespace nnc::alloc::detail {
namespace {

std::string tensor_msg(std::size_t i, const std::string& what) { return "tensor " + std::to_string(i) + ": " + what; }

bool is_pow2(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Strictly before: every access of m happens before every access of n.
bool member_before(const Order& order, const Member& m, const Member& n) {
  if (!order.partial)
    return m.last < n.first;
  for (std::size_t s : m.writes)
    for (std::size_t t : n.writes)
      if (!order.reaches(s, t)) return false;
  for (std::size_t s : m.reads)
    for (std::size_t t : n.writes)
      if (!order.reaches(s, t)) return false;
  for (std::size_t s : m.writes)
    for (std::size_t t : n.reads)
      if (!order.reaches(s, t)) return false;
  for (std::size_t s : m.reads)
    for (std::size_t t : n.reads)
      if (!order.reaches(s, t)) return false;
  return true;
}

// An in-place output may start at the very step that last reads its input,
// provided that step is the one writing the output.
bool touch_ok(const Order& order, const Member& in, const Member& out) {
  if (!order.partial)
    return in.last <= out.first && in.first <= out.first;
  auto ok = [&](std::size_t s, std::size_t t, bool t_is_write) {
    return order.reaches(s, t) || (s == t && t_is_write);
  };
  for (std::size_t s : in.writes) {
    for (std::size_t t : out.writes)
      if (!ok(s, t, true)) return false;
    for (std::size_t t : out.reads)
      if (!order.reaches(s, t)) return false;
  }
  for (std::size_t s : in.reads) {
    for (std::size_t t : out.writes)
      if (!ok(s, t, true)) return false;
    for (std::size_t t : out.reads)
      if (!ok(s, t, false)) return false;
  }
  return true;
}

bool members_interfere(const Order& order, const Member& m, const Member& n) {
  if (!order.partial)
    return !(m.last < n.first || n.last < m.first);
  return !member_before(order, m, n) && !member_before(order, n, m);
}

}  // namespace

bool Blocks::before(std::size_t a, std::size_t b) const {
  const Block& x = blocks[a];
  const Block& y = blocks[b];
  if (!order.partial)
    return x.last < y.first;
  for (const Member& m : x.members)
    for (const Member& n : y.members)
      if (!member_before(order, m, n)) return false;
  return true;
}

std::string validate(const Problem& p) {
  const std::size_t n = p.tensors.size();
  // Beyond this, sums of sizes could overflow 64 bits.
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 52;
  for (std::size_t i = 0; i < n; i++) {
    const TensorSpec& t = p.tensors[i];
    if (t.size < 0) return tensor_msg(i, "negative size " + std::to_string(t.size));
    if (t.size > kMaxSize) return tensor_msg(i, "size " + std::to_string(t.size) + " is too large");
    if (!is_pow2(t.alignment) || t.alignment > (std::int64_t{1} << 30))
      return tensor_msg(i, "alignment " + std::to_string(t.alignment) + " is not a power of two");
    if (!p.partial_order && t.last < t.first)
      return tensor_msg(i, "last step " + std::to_string(t.last) + " is before first step " + std::to_string(t.first));
    if (p.partial_order) {
      for (std::size_t s : t.writes)
        if (s >= p.steps) return tensor_msg(i, "writes step " + std::to_string(s) + " out of range");
      for (std::size_t s : t.reads)
        if (s >= p.steps) return tensor_msg(i, "reads step " + std::to_string(s) + " out of range");
      if (t.alias_of == kNone && !t.external && t.writes.empty() && t.reads.empty())
        return tensor_msg(i, "no step writes or reads it");
    }
    if (t.alias_of != kNone) {
      if (t.alias_of >= n) return tensor_msg(i, "alias of tensor " + std::to_string(t.alias_of) + " out of range");
      if (t.alias_of == i) return tensor_msg(i, "alias of itself");
      const TensorSpec& b = p.tensors[t.alias_of];
      if (t.alias_offset < 0 || b.size < 0 || t.alias_offset > b.size || t.size > b.size - t.alias_offset)
        return tensor_msg(i, "alias [" + std::to_string(t.alias_offset) + ", +" + std::to_string(t.size) +
                                 ") reaches outside its base (tensor " + std::to_string(t.alias_of) + ", " +
                                 std::to_string(b.size) + " bytes)");
      if (t.alias_offset % t.alignment != 0)
        return tensor_msg(i, "alias offset " + std::to_string(t.alias_offset) + " breaks its alignment");
    }
  }
  // Alias chains must end at a base tensor.
  for (std::size_t i = 0; i < n; i++) {
    std::size_t r = i, hops = 0;
    while (p.tensors[r].alias_of != kNone) {
      r = p.tensors[r].alias_of;
      if (++hops > n) return tensor_msg(i, "alias chain has a cycle");
    }
  }
  for (std::size_t k = 0; k < p.inplace.size(); k++) {
    const InPlace& c = p.inplace[k];
    if (c.output >= n || c.input >= n || c.output == c.input)
      return "in-place candidate " + std::to_string(k) + ": bad tensor indices";
  }
  if (p.partial_order) {
    if (!p.carried.empty()) return "loop bodies (carried pairs) need a total order";
    for (auto [a, b] : p.edges)
      if (a >= p.steps || b >= p.steps) return "step edge (" + std::to_string(a) + ", " + std::to_string(b) + ") out of range";
  }
  for (std::size_t k = 0; k < p.carried.size(); k++) {
    const Carried& c = p.carried[k];
    const std::string who = "carried pair " + std::to_string(k) + ": ";
    if (c.output >= n || c.input >= n) return who + "bad tensor indices";
    const TensorSpec& o = p.tensors[c.output];
    const TensorSpec& in = p.tensors[c.input];
    if (o.alias_of != kNone || in.alias_of != kNone) return who + "aliases cannot be carried";
    if (o.external || in.external) return who + "external tensors cannot be carried";
    if (o.size != in.size) return who + "sizes differ";
    for (std::size_t j = 0; j < k; j++) {
      if (p.carried[j].output == c.output) return who + "output already carried";
      if (p.carried[j].input == c.input) return who + "input already carried into";
    }
  }
  return "";
}

Result<Order> make_order(const Problem& p) {
  Order order;
  order.partial = p.partial_order;
  if (!p.partial_order) return order;
  const std::size_t s = p.steps;
  std::vector<std::vector<std::size_t>> next(s);
  std::vector<std::size_t> indeg(s, 0);
  for (auto [a, b] : p.edges) {
    if (a == b) return Result<Order>::failure("cycle in the partial order of steps (step " + std::to_string(a) + " before itself)");
    next[a].push_back(b);
    indeg[b]++;
  }
  // Kahn with the smallest ready step first, so the linearisation (and with
  // it the plan) is deterministic.
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < s; i++)
    if (indeg[i] == 0) ready.push(i);
  std::vector<std::size_t> topo;
  topo.reserve(s);
  while (!ready.empty()) {
    const std::size_t v = ready.top();
    ready.pop();
    topo.push_back(v);
    for (std::size_t w : next[v])
      if (--indeg[w] == 0) ready.push(w);
  }
  if (topo.size() != s) return Result<Order>::failure("cycle in the partial order of steps");
  order.pos.assign(s, 0);
  for (std::size_t i = 0; i < s; i++) order.pos[topo[i]] = static_cast<std::int64_t>(i);
  order.words = (s + 63) / 64;
  order.reach.assign(s * order.words, 0);
  for (std::size_t k = s; k-- > 0;) {
    const std::size_t v = topo[k];
    std::uint64_t* row = &order.reach[v * order.words];
    for (std::size_t w : next[v]) {
      row[w / 64] |= std::uint64_t{1} << (w % 64);
      const std::uint64_t* wr = &order.reach[w * order.words];
      for (std::size_t q = 0; q < order.words; q++) row[q] |= wr[q];
    }
  }
  return order;
}

Result<Blocks> build_blocks(const Problem& p, const std::vector<std::vector<std::size_t>>& forced) {
  auto ord = make_order(p);
  if (!ord) return Result<Blocks>::failure(ord.error());
  Blocks bs;
  bs.order = std::move(ord).value();
  const Order& order = bs.order;
  const std::size_t n = p.tensors.size();

  // Resolve aliases to their base, accumulating offsets; an alias of an
  // external tensor is external too.
  std::vector<std::size_t> root(n);
  bs.offset_in_block.assign(n, 0);
  for (std::size_t i = 0; i < n; i++) {
    std::size_t r = i;
    std::uint64_t off = 0;
    while (p.tensors[r].alias_of != kNone) {
      off += static_cast<std::uint64_t>(p.tensors[r].alias_offset);
      r = p.tensors[r].alias_of;
    }
    root[i] = r;
    bs.offset_in_block[i] = off;
  }

  // One member per base tensor, its aliases' liveness folded in: an alias
  // counts as its base.
  std::vector<Member> member(n);
  std::vector<bool> seen(n, false);
  auto positions = [&](const TensorSpec& t, std::int64_t& lo, std::int64_t& hi) {
    if (!order.partial) {
      lo = t.first, hi = t.last;
      return true;
    }
    bool any = false;
    for (const auto* v : {&t.writes, &t.reads})
      for (std::size_t s : *v) {
        const std::int64_t q = order.pos[s];
        if (!any || q < lo) lo = q;
        if (!any || q > hi) hi = q;
        any = true;
      }
    return any;
  };
  for (std::size_t i = 0; i < n; i++) {
    const std::size_t r = root[i];
    if (p.tensors[r].external) continue;
    const TensorSpec& t = p.tensors[i];
    Member& m = member[r];
    std::int64_t lo = 0, hi = 0;
    if (!positions(t, lo, hi)) continue;  // an alias nobody touches
    if (!seen[r]) {
      m.tensor = r, m.first = lo, m.last = hi, seen[r] = true;
    } else {
      m.first = std::min(m.first, lo), m.last = std::max(m.last, hi);
    }
    if (order.partial) {
      m.writes.insert(m.writes.end(), t.writes.begin(), t.writes.end());
      m.reads.insert(m.reads.end(), t.reads.begin(), t.reads.end());
    }
  }
  for (std::size_t i = 0; i < n; i++) {
    std::sort(member[i].writes.begin(), member[i].writes.end());
    member[i].writes.erase(std::unique(member[i].writes.begin(), member[i].writes.end()), member[i].writes.end());
    std::sort(member[i].reads.begin(), member[i].reads.end());
    member[i].reads.erase(std::unique(member[i].reads.begin(), member[i].reads.end()), member[i].reads.end());
  }

  // Start with one block per base tensor (union-find over blocks below).
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<std::vector<std::size_t>> group(n);  // members of each representative
  for (std::size_t i = 0; i < n; i++)
    if (root[i] == i && !p.tensors[i].external && seen[i]) group[i].push_back(i);
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto unite = [&](std::size_t a, std::size_t b) {  // b's members join a
    a = find(a), b = find(b);
    if (a == b) return;
    if (a > b) std::swap(a, b);  // smallest index represents: deterministic
    parent[b] = a;
    group[a].insert(group[a].end(), group[b].begin(), group[b].end());
    group[b].clear();
  };
  for (const auto& f : forced) {
    for (std::size_t k = 1; k < f.size(); k++) unite(root[f[0]], root[f[k]]);
  }

  // In-place candidates in the caller's order: taken when the output starts
  // no earlier than the input's last use (at the step that writes it) and
  // every other tensor already sharing either side is strictly ordered.
  bs.inplace_taken.assign(p.inplace.size(), false);
  for (std::size_t k = 0; k < p.inplace.size(); k++) {
    const std::size_t o = p.inplace[k].output, in = p.inplace[k].input;
    if (root[o] != o || root[in] != in) continue;  // views keep their own base
    if (p.tensors[o].external || p.tensors[in].external || !seen[o] || !seen[in]) continue;
    const std::size_t go = find(o), gi = find(in);
    if (go == gi) continue;
    bool ok = true;
    for (std::size_t a : group[gi]) {
      for (std::size_t b : group[go]) {
        const bool fine = (a == in && b == o) ? touch_ok(order, member[a], member[b])
                                              : member_before(order, member[a], member[b]);
        if (!fine) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
    }
    if (!ok) continue;
    unite(gi, go);
    bs.inplace_taken[k] = true;
  }

  // Materialise blocks in order of their smallest tensor index.
  bs.block_of.assign(n, kNone);
  for (std::size_t i = 0; i < n; i++) {
    if (group[i].empty() || find(i) != i) continue;
    Block b;
    std::vector<std::size_t> ms = group[i];
    std::sort(ms.begin(), ms.end());
    bool first = true;
    for (std::size_t t : ms) {
      b.size = std::max<std::uint64_t>(b.size, static_cast<std::uint64_t>(p.tensors[t].size));
      b.members.push_back(member[t]);
      if (first || member[t].first < b.first) b.first = member[t].first;
      if (first || member[t].last > b.last) b.last = member[t].last;
      first = false;
    }
    const std::size_t id = bs.blocks.size();
    for (std::size_t t : ms) bs.block_of[t] = id;
    bs.blocks.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < n; i++) {
    const std::size_t r = root[i];
    if (p.tensors[r].external) {
      if (r == i) bs.external_bytes += static_cast<std::uint64_t>(p.tensors[i].size);
      continue;
    }
    bs.block_of[i] = bs.block_of[r];
    if (bs.block_of[i] == kNone) continue;
    Block& b = bs.blocks[bs.block_of[i]];
    b.align = std::max<std::uint64_t>(b.align, static_cast<std::uint64_t>(p.tensors[i].alignment));
  }

  // The interference graph between blocks.
  const std::size_t nb = bs.blocks.size();
  bs.words = (nb + 63) / 64;
  bs.itf.assign(nb * bs.words, 0);
  std::vector<std::size_t> by_first(nb);
  std::iota(by_first.begin(), by_first.end(), 0);
  auto set = [&](std::size_t a, std::size_t b) {
    bs.itf[a * bs.words + b / 64] |= std::uint64_t{1} << (b % 64);
    bs.itf[b * bs.words + a / 64] |= std::uint64_t{1} << (a % 64);
  };
  auto blocks_interfere = [&](std::size_t a, std::size_t b) {
    for (const Member& m : bs.blocks[a].members)
      for (const Member& q : bs.blocks[b].members)
        if (members_interfere(order, m, q)) return true;
    return false;
  };
  if (!order.partial) {
    // Sweep by start: only blocks whose spans overlap can interfere.
    std::stable_sort(by_first.begin(), by_first.end(),
                     [&](std::size_t a, std::size_t b) { return bs.blocks[a].first < bs.blocks[b].first; });
    for (std::size_t x = 0; x < nb; x++) {
      const std::size_t a = by_first[x];
      for (std::size_t y = x + 1; y < nb; y++) {
        const std::size_t b = by_first[y];
        if (bs.blocks[b].first > bs.blocks[a].last) break;
        if (bs.blocks[a].members.size() == 1 && bs.blocks[b].members.size() == 1) {
          set(a, b);  // overlapping spans of single intervals
        } else if (blocks_interfere(a, b)) {
          set(a, b);
        }
      }
    }
  } else {
    for (std::size_t a = 0; a < nb; a++)
      for (std::size_t b = a + 1; b < nb; b++)
        if (blocks_interfere(a, b)) set(a, b);
  }
  return bs;
}

}  // namespace nnc::alloc::detail
