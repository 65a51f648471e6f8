// Randomised lifetime sets and DAGs (fixed seeds): every plan is checked and
// compared with an independently computed bound.
#include "helpers.hpp"

namespace alloc_test {
namespace {

Problem random_lifetimes(std::mt19937& rng, bool aligned) {
  const int n = 1 + static_cast<int>(rng() % 60);
  std::vector<TensorSpec> ts;
  for (int i = 0; i < n; i++) {
    const std::int64_t first = rng() % 30;
    const std::int64_t len = (rng() % 4 == 0) ? rng() % 30 : rng() % 4;
    const std::int64_t size = (rng() % 10 == 0) ? 0 : 1 + rng() % 1000;
    const std::int64_t align = aligned ? (std::int64_t{1} << (rng() % 7)) : 1;
    ts.push_back(T(size, first, first + len, align));
  }
  return lifetimes(ts);
}

TEST(AllocRandom, LifetimeSets) {
  std::mt19937 rng(12345);
  double worst = 1.0;
  for (int iter = 0; iter < 300; iter++) {
    const bool aligned = iter % 3 == 0;
    const Problem p = random_lifetimes(rng, aligned);
    const std::uint64_t bound = naive_bound(p);
    // Planned once per planner (the default again for determinism): the
    // sanitizer build plans slowly.
    Plan plans[std::size(kAll)];
    for (std::size_t k = 0; k < std::size(kAll); k++) {
      const Plan& plan = plans[k] = plan_ok(p, kAll[k]);
      EXPECT_EQ(plan.lower_bound, bound);
      EXPECT_GE(plan.arena, bound);
      if (!aligned) {
        EXPECT_LE(plan.arena, no_reuse_bytes(p));
      }
    }
    const Plan& best = plans[3];
    ASSERT_EQ(kAll[3], Planner::best);
    EXPECT_LE(best.arena, plans[1].arena);  // greedy
    EXPECT_LE(best.arena, plans[0].arena);  // nnc
    if (!aligned && bound > 0) worst = std::max(worst, static_cast<double>(best.arena) / static_cast<double>(bound));
    EXPECT_TRUE(same_placements(best, plan_ok(p)));
  }
  // Small random sets are hard (few tensors, lumpy sizes) but stay near the bound.
  EXPECT_LT(worst, 1.5);
}

// A random DAG: one tensor per node, consumers pick earlier nodes; executed
// in a random topological order (total) or planned on the partial order.
struct Dag {
  std::vector<std::vector<std::size_t>> inputs;
  std::vector<std::int64_t> bytes;
};

Dag random_dag(std::mt19937& rng, std::size_t n) {
  Dag d;
  d.inputs.resize(n);
  d.bytes.resize(n);
  for (std::size_t i = 0; i < n; i++) {
    d.bytes[i] = 64 * (1 + static_cast<std::int64_t>(rng() % 200));
    if (i == 0) continue;
    const std::size_t k = 1 + rng() % 3;
    for (std::size_t j = 0; j < k; j++) {
      const std::size_t window = rng() % 6 == 0 ? i : std::min<std::size_t>(i, 5);
      const std::size_t from = i - 1 - rng() % window;
      if (std::find(d.inputs[i].begin(), d.inputs[i].end(), from) == d.inputs[i].end()) d.inputs[i].push_back(from);
    }
  }
  return d;
}

TEST(AllocRandom, DagsInRandomTopologicalOrders) {
  std::mt19937 rng(777);
  for (int iter = 0; iter < 20; iter++) {
    const std::size_t n = 50 + rng() % 250;
    const Dag d = random_dag(rng, n);
    std::vector<std::size_t> indeg(n), ready, pos(n);
    std::vector<std::vector<std::size_t>> consumers(n);
    for (std::size_t i = 0; i < n; i++)
      for (std::size_t f : d.inputs[i]) consumers[f].push_back(i);
    for (std::size_t i = 0; i < n; i++)
      if ((indeg[i] = d.inputs[i].size()) == 0) ready.push_back(i);
    for (std::size_t step = 0; step < n; step++) {
      const std::size_t k = rng() % ready.size();
      const std::size_t v = ready[k];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(k));
      pos[v] = step;
      for (std::size_t w : consumers[v])
        if (--indeg[w] == 0) ready.push_back(w);
    }
    Problem p;
    for (std::size_t i = 0; i < n; i++) {
      std::int64_t last = static_cast<std::int64_t>(pos[i]);
      for (std::size_t w : consumers[i]) last = std::max(last, static_cast<std::int64_t>(pos[w]));
      p.tensors.push_back(T(d.bytes[i], static_cast<std::int64_t>(pos[i]), last, 64));
    }
    const std::uint64_t bound = naive_bound(p);
    for (Planner w : kAll) {
      const Plan plan = plan_ok(p, w);
      EXPECT_EQ(plan.lower_bound, bound);
      EXPECT_GE(plan.arena, bound);
      if (w == Planner::best) {
        EXPECT_LE(static_cast<double>(plan.arena), 1.15 * static_cast<double>(bound)) << "iteration " << iter;
      }
    }
  }
}

TEST(AllocRandom, DagsOnTheirPartialOrder) {
  std::mt19937 rng(4242);
  for (int iter = 0; iter < 10; iter++) {
    const std::size_t n = 30 + rng() % 120;
    const Dag d = random_dag(rng, n);
    Problem p;
    p.partial_order = true;
    p.steps = n;
    for (std::size_t i = 0; i < n; i++)
      for (std::size_t f : d.inputs[i]) p.edges.emplace_back(f, i);
    p.tensors.resize(n);
    for (std::size_t i = 0; i < n; i++) {
      p.tensors[i].size = d.bytes[i];
      p.tensors[i].alignment = 64;
      p.tensors[i].writes = {i};
    }
    for (std::size_t i = 0; i < n; i++)
      for (std::size_t f : d.inputs[i]) p.tensors[f].reads.push_back(i);
    for (Planner w : kAll) {
      const Plan plan = plan_ok(p, w);
      EXPECT_GE(plan.arena, plan.lower_bound);
      EXPECT_TRUE(same_placements(plan, plan_ok(p, w)));
    }
  }
}

TEST(AllocRandom, PartialOrderKeepsUnorderedStepsApart) {
  // Steps 1 and 2 may run concurrently: their outputs must not share memory,
  // although the linearisation 0, 1, 2, 3 would let them.
  Problem p;
  p.partial_order = true;
  p.steps = 4;
  p.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  p.tensors.resize(3);
  p.tensors[0].size = 100, p.tensors[0].writes = {0}, p.tensors[0].reads = {1, 2};
  p.tensors[1].size = 100, p.tensors[1].writes = {1};
  p.tensors[2].size = 100, p.tensors[2].writes = {2};
  for (Planner w : kAll) {
    const Plan plan = plan_ok(p, w);
    EXPECT_EQ(plan.arena, 300u) << planner_name(w);
    EXPECT_EQ(plan.lower_bound, 200u);  // of the chosen order 0, 1, 2, 3
  }
  // As a total order they could share.
  Problem q = lifetimes({T(100, 0, 2), T(100, 1, 1), T(100, 2, 2)});
  EXPECT_EQ(plan_ok(q).arena, 200u);
}

}  // namespace
}  // namespace alloc_test
