// Bad input is an error value with a readable message; the checker catches
// broken plans; the text format reports line numbers.
#include "helpers.hpp"

namespace alloc_test {
namespace {

std::string plan_error(const Problem& p) {
  auto r = plan(p);
  EXPECT_FALSE(static_cast<bool>(r));
  return r ? std::string() : r.error();
}

TEST(AllocErrors, BadProblems) {
  EXPECT_NE(plan_error(lifetimes({T(-5, 0, 1)})).find("negative size"), std::string::npos);
  EXPECT_NE(plan_error(lifetimes({T(5, 3, 1)})).find("before first step"), std::string::npos);
  EXPECT_NE(plan_error(lifetimes({T(5, 0, 1, 3)})).find("power of two"), std::string::npos);
  Problem alias = lifetimes({T(100, 0, 1), T(60, 0, 1)});
  alias.tensors[1].alias_of = 0;
  alias.tensors[1].alias_offset = 50;
  EXPECT_NE(plan_error(alias).find("outside its base"), std::string::npos);
  Problem loop = lifetimes({T(100, 0, 1), T(60, 0, 1)});
  loop.tensors[0].alias_of = 1;
  loop.tensors[1].alias_of = 0;
  EXPECT_NE(plan_error(loop).find(""), std::string::npos);
  Problem bad_inplace = lifetimes({T(1, 0, 1)});
  bad_inplace.inplace = {{0, 7}};
  EXPECT_NE(plan_error(bad_inplace).find("in-place"), std::string::npos);
  Problem carried = lifetimes({T(100, 0, 0), T(50, 0, 0)});
  carried.carried = {{1, 0}};
  EXPECT_NE(plan_error(carried).find("sizes differ"), std::string::npos);
  EXPECT_FALSE(static_cast<bool>(lower_bound(lifetimes({T(-1, 0, 0)}))));
}

TEST(AllocErrors, CycleInPartialOrder) {
  Problem p;
  p.partial_order = true;
  p.steps = 3;
  p.edges = {{0, 1}, {1, 2}, {2, 0}};
  p.tensors.resize(1);
  p.tensors[0].size = 4;
  p.tensors[0].writes = {0};
  EXPECT_NE(plan_error(p).find("cycle"), std::string::npos);
  p.edges = {{0, 5}};
  EXPECT_NE(plan_error(p).find("out of range"), std::string::npos);
}

TEST(AllocErrors, LoopThatCannotBeUnrolled) {
  // A 17-deep shift register needs 18 copies: more than the planner unrolls.
  Problem p;
  for (int i = 0; i < 18; i++) p.tensors.push_back(T(8, 0, 0));
  p.carried.push_back({17, 0});
  for (std::size_t i = 0; i + 1 < 17; i++) p.carried.push_back({i, i + 1});
  EXPECT_NE(plan_error(p).find("unrolled copies"), std::string::npos);
}

TEST(AllocChecker, CatchesBrokenPlans) {
  const Problem p = lifetimes({T(100, 0, 1, 16), T(100, 1, 2, 16), T(100, 2, 3, 16)});
  const Plan good = plan_ok(p);
  Plan overlap = good;
  overlap.placements[1] = overlap.placements[0];
  EXPECT_NE(check(p, overlap).find("overlap"), std::string::npos);
  Plan misaligned = good;
  misaligned.buffers[0] += 8;
  misaligned.arena += 8;
  misaligned.placements[2].offset += 8;
  EXPECT_NE(check(p, misaligned).find("misaligned"), std::string::npos);
  Plan outside = good;
  outside.placements[2].offset = outside.buffers[0];
  EXPECT_NE(check(p, outside).find("outside"), std::string::npos);
  Plan missing = good;
  missing.placements.pop_back();
  EXPECT_NE(check(p, missing), "");
  // An in-place overlap is fine only when the pair is declared and legitimate.
  Problem q = lifetimes({T(100, 0, 1), T(100, 1, 2)});
  Plan shared = plan_ok(q);
  shared.placements[1] = shared.placements[0];
  EXPECT_NE(check(q, shared), "");
  q.inplace = {{1, 0}};
  EXPECT_EQ(check(q, shared), "");
}

TEST(AllocText, ParsesAndFormats) {
  auto r = parse_lifetimes("# a comment\n\n7 100 0 1\n  9\t200 1 3  \r\n-4 0 2 2\n");
  ASSERT_TRUE(static_cast<bool>(r)) << r.error();
  const LifetimeList& l = r.value();
  EXPECT_EQ(l.ids, std::vector<std::int64_t>({7, 9, -4}));
  ASSERT_EQ(l.problem.tensors.size(), 3u);
  EXPECT_EQ(l.problem.tensors[1].size, 200);
  EXPECT_EQ(l.problem.tensors[1].last, 3);
  auto again = parse_lifetimes(format_lifetimes(l));
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(again.value().ids, l.ids);
}

TEST(AllocText, ErrorsNameTheLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"1 100 0 1\n2 100 1\n", "line 2: expected 4 integers"},
      {"1 100 0 1\n\n# c\n2 -3 0 1\n", "line 4: negative size"},
      {"1 100 5 1\n", "line 1: last_step 1 is before first_step 5"},
      {"1 100 0 1\n2 1 0 1\n1 5 0 0\n", "line 3: duplicate id 1 (first on line 1)"},
      {"1 1x 0 1\n", "line 1: \"1x\" is not an integer"},
      {"1 1 0 1 9\n", "line 1: unexpected \"9\""},
      {"1 99999999999999999999 0 1\n", "line 1: integer"},
  };
  for (const auto& [text, want] : cases) {
    auto r = parse_lifetimes(text);
    ASSERT_FALSE(static_cast<bool>(r)) << text;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
  }
}

}  // namespace
}  // namespace alloc_test
