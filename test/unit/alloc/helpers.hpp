// Shared helpers for the planner tests: problem builders and an independent
// lower bound (a plain per-step sum, not the planner's sweep).
#pragma once

#include "symbolic/alloc/planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace alloc_test {

using namespace nnc::alloc;

inline TensorSpec T(std::int64_t size, std::int64_t first, std::int64_t last, std::int64_t align = 1) {
  TensorSpec t;
  t.size = size;
  t.first = first;
  t.last = last;
  t.alignment = align;
  return t;
}

inline Problem lifetimes(std::vector<TensorSpec> ts) {
  Problem p;
  p.tensors = std::move(ts);
  return p;
}

// Largest total of bytes live at any one step, by brute force over steps.
inline std::uint64_t naive_bound(const Problem& p) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const TensorSpec& t : p.tensors) lo = std::min(lo, t.first), hi = std::max(hi, t.last);
  std::uint64_t best = 0;
  for (std::int64_t s = lo; s <= hi; s++) {
    std::uint64_t live = 0;
    for (const TensorSpec& t : p.tensors)
      if (!t.external && t.alias_of == kNone && t.first <= s && s <= t.last) live += static_cast<std::uint64_t>(t.size);
    best = std::max(best, live);
  }
  return best;
}

// Plans with `which`, requires success and a clean check, returns the plan.
inline Plan plan_ok(const Problem& p, Planner which = Planner::best) {
  auto r = plan(p, which);
  EXPECT_TRUE(static_cast<bool>(r)) << r.error();
  if (!r) return Plan{};
  EXPECT_EQ(check(p, r.value()), "") << "planner " << planner_name(which);
  return std::move(r).value();
}

inline bool same_placements(const Plan& a, const Plan& b) {
  if (a.placements.size() != b.placements.size() || a.buffers != b.buffers || a.arena != b.arena) return false;
  for (std::size_t i = 0; i < a.placements.size(); i++)
    if (a.placements[i].buffer != b.placements[i].buffer || a.placements[i].offset != b.placements[i].offset) return false;
  return true;
}

constexpr Planner kAll[] = {Planner::nnc, Planner::greedy, Planner::fit, Planner::best, Planner::nnc_interference};

}  // namespace alloc_test
