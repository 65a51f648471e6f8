// The lower bound: for an execution order, the largest total of bytes live
// at any one step. No plan that keeps the order and computes every tensor
// once can use less, so every plan is reported against it.
#include "symbolic/alloc/blocks.hpp"

#include <algorithm>
#include <exception>

namespace nnc::alloc {
namespace detail {

std::uint64_t bound_of(const Blocks& bs) {
  std::vector<std::pair<std::int64_t, std::int64_t>> events;  // (position, +/- bytes)
  for (const Block& b : bs.blocks) {
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    for (const Member& m : b.members) iv.emplace_back(m.first, m.last);
    std::sort(iv.begin(), iv.end());
    // Merge the block's members so a block live twice at one step counts once.
    std::int64_t lo = iv[0].first, hi = iv[0].second;
    for (std::size_t k = 1; k <= iv.size(); k++) {
      if (k < iv.size() && iv[k].first <= hi + 1) {
        hi = std::max(hi, iv[k].second);
        continue;
      }
      events.emplace_back(lo, static_cast<std::int64_t>(b.size));
      events.emplace_back(hi + 1, -static_cast<std::int64_t>(b.size));
      if (k < iv.size()) lo = iv[k].first, hi = iv[k].second;
    }
  }
  std::sort(events.begin(), events.end());  // frees before allocations at a position
  std::int64_t live = 0, best = 0;
  for (const auto& [pos, delta] : events) {
    live += delta;
    best = std::max(best, live);
  }
  return static_cast<std::uint64_t>(best);
}

}  // namespace detail

Result<std::uint64_t> lower_bound(const Problem& problem) {
  try {
    if (std::string e = detail::validate(problem); !e.empty()) return Result<std::uint64_t>::failure(e);
    Problem q;
    q.tensors = problem.tensors;
    q.partial_order = problem.partial_order;
    q.steps = problem.steps;
    q.edges = problem.edges;
    auto bs = detail::build_blocks(q, {});
    if (!bs) return Result<std::uint64_t>::failure(bs.error());
    return detail::bound_of(bs.value());
  } catch (const std::exception& e) {
    return Result<std::uint64_t>::failure(std::string("lower bound failed: ") + e.what());
  }
}

std::uint64_t no_reuse_bytes(const Problem& problem) {
  std::uint64_t total = 0;
  for (const TensorSpec& t : problem.tensors)
    if (!t.external && t.alias_of == kNone && t.size > 0) total += static_cast<std::uint64_t>(t.size);
  return total;
}

}  // namespace nnc::alloc
