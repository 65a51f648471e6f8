// Aliases, in-place candidates, loops (co-allocation and unrolling) and
// sub-graphs / branches.
#include "helpers.hpp"

namespace alloc_test {
namespace {

TEST(AllocAlias, ViewSitsInsideItsBaseAndKeepsItAlive) {
  // base [0, 1]; a view of its second half read until step 4; a tensor live
  // at step 3 must not overlap the base while the view is alive.
  Problem p = lifetimes({T(1000, 0, 1), T(500, 2, 4), T(1000, 3, 3)});
  p.tensors[1].alias_of = 0;
  p.tensors[1].alias_offset = 500;
  for (Planner w : kAll) {
    const Plan plan = plan_ok(p, w);
    EXPECT_EQ(plan.arena_offset(1), plan.arena_offset(0) + 500);
    EXPECT_EQ(plan.arena, 2000u);
    EXPECT_EQ(plan.lower_bound, 2000u);
  }
}

TEST(AllocAlias, ViewOfAViewAndOfAnExternal) {
  Problem p = lifetimes({T(1024, 0, 2), T(512, 1, 2), T(256, 2, 3), T(4096, 0, 3), T(64, 1, 1)});
  p.tensors[1].alias_of = 0, p.tensors[1].alias_offset = 512;
  p.tensors[2].alias_of = 1, p.tensors[2].alias_offset = 256;
  p.tensors[3].external = true;
  p.tensors[4].alias_of = 3, p.tensors[4].alias_offset = 64;
  const Plan plan = plan_ok(p);
  EXPECT_EQ(plan.arena_offset(2), plan.arena_offset(0) + 768);
  EXPECT_EQ(plan.placements[4].buffer, kNone);
  EXPECT_EQ(plan.arena, 1024u);
}

TEST(AllocInPlace, TakenWhenTheInputDiesAtTheWrite) {
  // relu(x) in place: x last read at step 1, which writes y.
  Problem p = lifetimes({T(100, 0, 1), T(100, 1, 2), T(100, 2, 3)});
  p.inplace = {{1, 0}};
  EXPECT_EQ(naive_bound(p), 200u);  // without the pair
  for (Planner w : kAll) {
    const Plan plan = plan_ok(p, w);
    ASSERT_EQ(plan.inplace_taken.size(), 1u);
    EXPECT_TRUE(plan.inplace_taken[0]);
    EXPECT_EQ(plan.arena_offset(1), plan.arena_offset(0));
    EXPECT_EQ(plan.lower_bound, 200u);  // the pair counts once
    EXPECT_EQ(plan.arena, 200u);
  }
}

TEST(AllocInPlace, ChainOfInPlaceOpsUsesOneSlot) {
  Problem p = lifetimes({T(64, 0, 1), T(64, 1, 2), T(64, 2, 3), T(64, 3, 4)});
  p.inplace = {{1, 0}, {2, 1}, {3, 2}};
  const Plan plan = plan_ok(p);
  EXPECT_EQ(plan.arena, 64u);
  EXPECT_EQ(plan.lower_bound, 64u);
  EXPECT_EQ(plan.inplace_taken, std::vector<bool>({true, true, true}));
}

TEST(AllocInPlace, RefusedWhileTheInputIsStillRead) {
  // x is read again at step 2, after y is written at step 1.
  Problem p = lifetimes({T(100, 0, 2), T(100, 1, 2)});
  p.inplace = {{1, 0}};
  const Plan plan = plan_ok(p);
  EXPECT_FALSE(plan.inplace_taken[0]);
  EXPECT_EQ(plan.arena, 200u);
}

TEST(AllocInPlace, OnlyOneOutputMayTakeAnInput) {
  Problem p = lifetimes({T(100, 0, 1), T(100, 1, 2), T(100, 1, 2)});
  p.inplace = {{1, 0}, {2, 0}};
  const Plan plan = plan_ok(p);
  EXPECT_TRUE(plan.inplace_taken[0]);
  EXPECT_FALSE(plan.inplace_taken[1]);
  EXPECT_EQ(plan.arena, 200u);
}

TEST(AllocLoop, CarriedPairCoAllocated) {
  // x (carried in) read at step 0; t = f(x); y = g(t) written at step 1, carried to x.
  Problem p = lifetimes({T(256, 0, 0), T(256, 0, 1), T(256, 1, 1)});
  p.total_steps = 2;
  p.carried = {{2, 0}};
  for (Planner w : kAll) {
    const Plan plan = plan_ok(p, w);
    EXPECT_EQ(plan.unroll, 1u);
    ASSERT_EQ(plan.iterations.size(), 1u);
    EXPECT_EQ(plan.arena_offset(0), plan.arena_offset(2));
    EXPECT_EQ(plan.arena, 512u);
  }
}

TEST(AllocLoop, XEqualsFOfXIsUnrolledTwice) {
  // y = conv(x) reads x while writing y: no co-allocation, so two copies of
  // the body alternate between two regions and nothing is copied.
  Problem p = lifetimes({T(1024, 0, 0), T(1024, 0, 0)});
  p.carried = {{1, 0}};
  for (Planner w : kAll) {
    const Plan plan = plan_ok(p, w);
    ASSERT_EQ(plan.unroll, 2u);
    ASSERT_EQ(plan.iterations.size(), 2u);
    const auto at = [&](unsigned c, std::size_t t) {
      return plan.buffer_base[plan.iterations[c][t].buffer] + plan.iterations[c][t].offset;
    };
    EXPECT_EQ(at(0, 1), at(1, 0));  // iteration 0's y is iteration 1's x
    EXPECT_EQ(at(1, 1), at(0, 0));  // and back
    EXPECT_NE(at(0, 0), at(1, 0));
    EXPECT_EQ(plan.arena, 2048u);
  }
}

TEST(AllocLoop, ValueFromFourIterationsBackNeedsFiveCopies) {
  // x[c] = f(x[c - 4]) as a shift register: y = f(x4); x1 <= y, x2 <= x1, x3 <= x2, x4 <= x3.
  Problem p = lifetimes({T(512, 0, 0), T(512, 0, 0), T(512, 0, 0), T(512, 0, 0), T(512, 0, 0)});
  // 0: x1, 1: x2, 2: x3, 3: x4, 4: y
  p.carried = {{4, 0}, {0, 1}, {1, 2}, {2, 3}};
  const Plan plan = plan_ok(p);
  ASSERT_EQ(plan.unroll, 5u);
  EXPECT_EQ(plan.arena, 5u * 512);
  for (unsigned c = 0; c < 5; c++) {
    const auto& now = plan.iterations[c];
    const auto& next = plan.iterations[(c + 1) % 5];
    EXPECT_EQ(now[4].offset, next[0].offset);
    EXPECT_EQ(now[0].offset, next[1].offset);
    EXPECT_EQ(now[1].offset, next[2].offset);
    EXPECT_EQ(now[2].offset, next[3].offset);
  }
}

TEST(AllocLoop, TamperedLoopPlanIsCaught) {
  Problem p = lifetimes({T(1024, 0, 0), T(1024, 0, 0)});
  p.carried = {{1, 0}};
  Plan plan = plan_ok(p);
  plan.iterations[1][0] = plan.iterations[1][1];  // iteration 1 reads x where it writes y
  EXPECT_NE(check(p, plan), "");
}

TEST(AllocBranches, CasesShareOneBuffer) {
  Problem a = lifetimes({T(100, 0, 1), T(100, 1, 2)});
  Problem b = lifetimes({T(300, 0, 0)});
  Problem parent = lifetimes({T(50, 0, 2), T(70, 3, 3)});
  SubGraph sg;
  sg.step = 1;
  sg.cases = {a, b};
  parent.subgraphs.push_back(sg);
  for (Planner w : kAll) {
    const Plan plan = plan_ok(parent, w);
    ASSERT_EQ(plan.subplans.size(), 1u);
    ASSERT_EQ(plan.subplans[0].size(), 2u);
    EXPECT_EQ(plan.subplans[0][0].arena, 200u);
    EXPECT_EQ(plan.subplans[0][1].arena, 300u);
    EXPECT_EQ(plan.arena, 350u);  // max of the cases beside the live parent tensor
    // Both cases are laid out from the sub-graph's own placement, so case 0's
    // tensors and case 1's tensor overlap in memory.
    EXPECT_NE(plan.placements[2].buffer, kNone);
    EXPECT_EQ(plan.subplans[0][1].arena_offset(0), 0u);
    EXPECT_LT(plan.subplans[0][0].arena_offset(0), 300u);
  }
}

TEST(AllocBranches, NestedLoopInsideASubGraph) {
  Problem body = lifetimes({T(1024, 0, 0), T(1024, 0, 0)});
  body.carried = {{1, 0}};
  Problem parent = lifetimes({T(10, 0, 0), T(10, 2, 2)});
  SubGraph sg;
  sg.step = 1;
  sg.cases = {body};
  parent.subgraphs.push_back(sg);
  const Plan plan = plan_ok(parent);
  EXPECT_EQ(plan.subplans[0][0].unroll, 2u);
  EXPECT_EQ(plan.arena, 2048u);  // the loop's buffer reuses the parent's tensors' space
}

}  // namespace
}  // namespace alloc_test
