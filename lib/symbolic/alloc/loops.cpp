// Loops without data movement between iterations.
//
// A carried pair (output -> input) is one value seen twice: at the end of
// iteration c and at the start of c + 1. If the two never live at the same
// time inside one iteration, they simply share memory (co-allocation, one
// copy of the body). Otherwise (x = f(x), or x[c] = f(x[c - k]) through a
// chain of carried pairs) the body is unrolled: copy j's output is copy
// j + 1's input (mod the number of copies), and we look for the fewest copies
// where every such value's lifetimes, laid end to end across copies, never
// overlap. Each copy then gets its own offsets, which multi-view tensors bind
// as ptrs[c % unroll].
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <numeric>

namespace nnc::alloc::detail {

Result<Unrolled> unroll_loop(const Problem& body) {
  const std::size_t n = body.tensors.size();
  std::int64_t max_last = -1;
  for (std::size_t i = 0; i < n; i++) {
    const TensorSpec& t = body.tensors[i];
    if (t.first < 0) return Result<Unrolled>::failure("tensor " + std::to_string(i) + ": loop body steps start at 0");
    max_last = std::max(max_last, t.last);
  }
  const std::int64_t steps = body.total_steps > 0 ? body.total_steps : max_last + 1;
  if (max_last >= steps)
    return Result<Unrolled>::failure("loop body has " + std::to_string(steps) + " steps but a tensor lives to step " +
                                     std::to_string(max_last));
  if (steps > (std::int64_t{1} << 40)) return Result<Unrolled>::failure("loop body has too many steps");

  // Inputs are live from the start of an iteration, outputs to its end.
  Problem ext = body;
  ext.carried.clear();
  for (const Carried& c : body.carried) {
    ext.tensors[c.input].first = 0;
    ext.tensors[c.output].last = steps - 1;
  }
  // Each base tensor's liveness with its views folded in.
  std::vector<std::int64_t> lo(n), hi(n);
  for (std::size_t i = 0; i < n; i++) lo[i] = ext.tensors[i].first, hi[i] = ext.tensors[i].last;
  for (std::size_t i = 0; i < n; i++) {
    std::size_t r = i;
    while (ext.tensors[r].alias_of != kNone) r = ext.tensors[r].alias_of;
    lo[r] = std::min(lo[r], ext.tensors[i].first);
    hi[r] = std::max(hi[r], ext.tensors[i].last);
  }

  for (unsigned k = 1; k <= kMaxUnroll; k++) {
    const std::size_t total = n * k;
    std::vector<std::size_t> parent(total);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](std::size_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (unsigned j = 0; j < k; j++)
      for (const Carried& c : body.carried) {
        const std::size_t a = find(j * n + c.output), b = find(((j + 1) % k) * n + c.input);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    std::vector<std::vector<std::size_t>> members(total);
    for (std::size_t x = 0; x < total; x++) members[find(x)].push_back(x);
    bool ok = true;
    for (const auto& m : members) {
      for (std::size_t u = 0; u < m.size() && ok; u++)
        for (std::size_t v = u + 1; v < m.size() && ok; v++) {
          const std::int64_t su = static_cast<std::int64_t>(m[u] / n) * steps, sv = static_cast<std::int64_t>(m[v] / n) * steps;
          const std::size_t tu = m[u] % n, tv = m[v] % n;
          if (!(hi[tu] + su < lo[tv] + sv || hi[tv] + sv < lo[tu] + su)) ok = false;
        }
      if (!ok) break;
    }
    if (!ok) continue;
    Unrolled u;
    u.unroll = k;
    u.problem.total_steps = steps * k;
    u.problem.tensors.reserve(total);
    for (unsigned j = 0; j < k; j++) {
      for (std::size_t i = 0; i < n; i++) {
        TensorSpec t = ext.tensors[i];
        t.first += static_cast<std::int64_t>(j) * steps;
        t.last += static_cast<std::int64_t>(j) * steps;
        if (t.alias_of != kNone) t.alias_of += j * n;
        u.problem.tensors.push_back(std::move(t));
      }
      for (const InPlace& c : ext.inplace) u.problem.inplace.push_back({c.output + j * n, c.input + j * n});
    }
    for (auto& m : members)
      if (m.size() > 1) u.classes.push_back(std::move(m));
    return u;
  }
  return Result<Unrolled>::failure("loop carried values need more than " + std::to_string(kMaxUnroll) +
                                   " unrolled copies to share memory without copies");
}

}  // namespace nnc::alloc::detail
