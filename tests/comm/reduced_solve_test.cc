// MaxMinSolver::SolveInterned (comm/max_min.h, "Reduced solves") fills only the links two
// unknowns share plus one private bound per class; it must give SolveClasses's rates and loose
// members, also when each connected component (MaxMinSolver::Components) is solved alone.
// Expectations: SolveClasses on the same input (the unreduced progressive filling, itself checked
// against hand-derived rates in flow_class_test.cc) and hand-derived rates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "comm/max_min.h"
#include "gtest/gtest.h"

namespace trainsim::comm {
namespace {

std::shared_ptr<const FlowClass> ClassOf(const std::vector<std::vector<LinkId>>& paths) {
  std::vector<std::span<const LinkId>> spans(paths.begin(), paths.end());
  return MakeFlowClass(spans);
}

ClassView ViewOf(const FlowClass& c) { return {c.links, c.counts, &c}; }

// n random unknowns over `links` links: a third single flows, the rest classes of 2 to
// 1 + max_members members; every path 1 to max_len distinct links.
struct RandomSet {
  std::vector<std::shared_ptr<const FlowClass>> classes;
  std::vector<std::vector<LinkId>> singles;
  std::vector<ClassView> views;
};

RandomSet MakeRandomSet(std::mt19937_64& rng, int links, int n, int max_len, int max_members) {
  RandomSet set;
  set.singles.reserve(size_t(n));  // views point into it
  auto path = [&] {
    std::vector<LinkId> p;
    const int len = 1 + static_cast<int>(rng() % uint64_t(max_len));
    while (static_cast<int>(p.size()) < len) {
      const LinkId l = static_cast<LinkId>(rng() % uint64_t(links));
      if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
    }
    return p;
  };
  for (int k = 0; k < n; ++k) {
    if (rng() % 3 == 0) {
      set.singles.push_back(path());
      set.views.push_back({set.singles.back(), {}, nullptr});
    } else {
      std::vector<std::vector<LinkId>> members(2 + rng() % uint64_t(max_members));
      for (auto& m : members) m = path();
      set.classes.push_back(ClassOf(members));
      set.views.push_back(ViewOf(*set.classes.back()));
    }
  }
  return set;
}

TEST(ReducedSolveTest, PrivateBoundsAndASharedLinkGiveTheHandDerivedRates) {
  // Class A: members on private links 0 and 1 (10 B/s each), both through shared link 4; class
  // B: members on private links 2, 3 (40 B/s) through 4 too; link 4 carries 60 B/s. A is held
  // at 10 by its private links; B gets (60 − 2·10)/2 = 20 on link 4, below its private 40.
  const auto a = ClassOf({{0, 4}, {1, 4}});
  const auto b = ClassOf({{2, 4}, {3, 4}});
  const std::vector<double> cap = {10, 10, 40, 40, 60};
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveInterned({ViewOf(*a), ViewOf(*b)}, cap, &rates, &loose);
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_DOUBLE_EQ(rates[0], 10);
  EXPECT_DOUBLE_EQ(rates[1], 20);
  EXPECT_TRUE(loose[0].empty());
  EXPECT_TRUE(loose[1].empty());
}

TEST(ReducedSolveTest, MembersNotHeldAreReportedLooseAsByTheFullSolve) {
  // flow_class_test's case: members on links 0, 1, 2 (12 B/s), a single flow on link 1: the
  // class freezes at 6 and members 0 and 2 are loose.
  const auto c = ClassOf({{0}, {1}, {2}});
  const std::vector<LinkId> single = {1};
  const std::vector<double> cap = {12, 12, 12};
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveInterned({ViewOf(*c), {single, {}, nullptr}}, cap, &rates, &loose);
  EXPECT_DOUBLE_EQ(rates[0], 6);
  EXPECT_DOUBLE_EQ(rates[1], 6);
  EXPECT_EQ(loose[0], (std::vector<uint32_t>{0, 2}));
}

// Random classes and single flows over a small link set (so they overlap), random capacities
// (a few equal, a few 0): the reduced solve equals the full one.
TEST(ReducedSolveTest, RandomSetsMatchTheFullSolve) {
  std::mt19937_64 rng(20);
  constexpr int kLinks = 40;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> cap(kLinks);
    for (double& x : cap) {
      const int kind = static_cast<int>(rng() % 10);
      x = kind == 0 ? 0.0 : (kind < 4 ? 100.0 : 10.0 + static_cast<double>(rng() % 200));
    }
    const int n = 1 + static_cast<int>(rng() % 24);  // both fills: scan (<= 16) and heap
    const RandomSet set = MakeRandomSet(rng, kLinks, n, 4, 5);
    const std::vector<ClassView>& views = set.views;
    MaxMinSolver full, reduced;
    std::vector<double> want, got;
    std::vector<std::vector<uint32_t>> want_loose, got_loose;
    full.SolveClasses(views, cap, &want, &want_loose);
    reduced.SolveInterned(views, cap, &got, &got_loose);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got[k], want[k], 1e-9 * std::max(1.0, want[k])) << "trial " << trial;
      EXPECT_EQ(got_loose[k], want_loose[k]) << "trial " << trial << " unknown " << k;
    }
  }
}

TEST(ReducedSolveTest, ForgottenClassesAreRecomputedForNewCapacities) {
  // The same class under two capacity sets: after ForgetClasses the bound follows the new one.
  const auto c = ClassOf({{0}, {1}});
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveInterned({ViewOf(*c)}, {8, 8}, &rates, &loose);
  EXPECT_DOUBLE_EQ(rates[0], 8);
  solver.ForgetClasses();
  solver.SolveInterned({ViewOf(*c)}, {5, 8}, &rates, &loose);
  EXPECT_DOUBLE_EQ(rates[0], 5);
  EXPECT_EQ(loose[0], (std::vector<uint32_t>{1}));
}

TEST(ComponentsTest, UnknownsMeetThroughAnyCommonLinkAndAreNumberedInOrder) {
  // Class A crosses links 0 and 1, class B link 2 only, a single flow links 1 and 5, class C
  // links 5 and 6: A, the single and C are one component (through 1 and 5), B another.
  const auto a = ClassOf({{0}, {1}});
  const auto b = ClassOf({{2}, {2}});
  const auto c = ClassOf({{5}, {6}});
  const std::vector<LinkId> single = {1, 5};
  MaxMinSolver solver;
  std::vector<uint32_t> comp;
  EXPECT_EQ(
      solver.Components({ViewOf(*b), ViewOf(*a), {single, {}, nullptr}, ViewOf(*c)}, 7, &comp), 2u);
  EXPECT_EQ(comp, (std::vector<uint32_t>{0, 1, 1, 1}));
  // Without the single flow A and C do not meet.
  EXPECT_EQ(solver.Components({ViewOf(*a), ViewOf(*c), ViewOf(*b)}, 7, &comp), 3u);
  EXPECT_EQ(comp, (std::vector<uint32_t>{0, 1, 2}));
}

// Max-min filling never moves capacity between unknowns that share no link, so solving each
// component alone gives the whole set's rates and loose members (what FlowNetwork relies on).
TEST(ComponentsTest, SolvingEachComponentAloneMatchesTheWholeSolve) {
  std::mt19937_64 rng(2010);
  constexpr int kLinks = 120;  // sparse enough for several components per set
  MaxMinSolver parts;          // one solver across trials, as in FlowNetwork
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> cap(kLinks);
    for (double& x : cap) x = (rng() % 3 == 0) ? 100.0 : 10.0 + static_cast<double>(rng() % 200);
    const int n = 1 + static_cast<int>(rng() % 30);
    const RandomSet set = MakeRandomSet(rng, kLinks, n, 3, 3);
    const std::vector<ClassView>& views = set.views;
    MaxMinSolver whole;
    std::vector<double> want;
    std::vector<std::vector<uint32_t>> want_loose;
    whole.SolveClasses(views, cap, &want, &want_loose);
    std::vector<uint32_t> comp;
    const size_t num = parts.Components(views, kLinks, &comp);
    ASSERT_EQ(comp.size(), views.size());
    for (size_t k = 0; k < num; ++k) {
      std::vector<ClassView> sub;
      std::vector<size_t> at;
      for (size_t i = 0; i < views.size(); ++i) {
        if (comp[i] != k) continue;
        sub.push_back(views[i]);
        at.push_back(i);
      }
      ASSERT_FALSE(sub.empty()) << "trial " << trial << ": component " << k << " is empty";
      std::vector<double> got;
      std::vector<std::vector<uint32_t>> got_loose;
      parts.SolveInterned(sub, cap, &got, &got_loose);
      for (size_t j = 0; j < sub.size(); ++j) {
        EXPECT_NEAR(got[j], want[at[j]], 1e-9 * std::max(1.0, want[at[j]])) << "trial " << trial;
        EXPECT_EQ(got_loose[j], want_loose[at[j]]) << "trial " << trial;
      }
    }
    // The classes are destroyed with this trial: their addresses may come back.
    parts.ForgetClasses();
  }
}

// The pool's views at `active`, each numbered by its index in the pool (as FlowNetwork numbers
// its unknowns).
std::vector<ClassView> NumberedViews(const RandomSet& pool, const std::vector<uint32_t>& active) {
  std::vector<ClassView> views;
  for (uint32_t u : active) {
    ClassView v = pool.views[u];
    v.number = u;
    views.push_back(v);
  }
  return views;
}

// FlowNetwork's active set changes by a few unknowns between solves, and Components starts from
// its last call's components (ComponentsFromLast): the components must be those a fresh solver
// finds, whatever was removed, added or reordered.
TEST(ComponentsTest, ComponentsFromTheLastCallAreThoseComputedAfresh) {
  std::mt19937_64 rng(2026);
  constexpr int kLinks = 150;
  const RandomSet pool = MakeRandomSet(rng, kLinks, 80, 3, 3);
  MaxMinSolver incremental;      // one solver across the sequence, as in FlowNetwork
  std::vector<uint32_t> active;  // indices into the pool; the view's number is its index
  for (int step = 0; step < 2000; ++step) {
    std::vector<uint32_t> next;
    for (uint32_t u : active) {
      if (rng() % 5 != 0) next.push_back(u);  // about a fifth end
    }
    const int added = static_cast<int>(rng() % 4);
    for (int k = 0; k < added; ++k)
      next.push_back(static_cast<uint32_t>(rng() % pool.views.size()));
    if (rng() % 10 == 0 && !next.empty()) {  // out of order now and then
      std::rotate(next.begin(), next.begin() + static_cast<long>(rng() % next.size()), next.end());
    }
    active = next;
    const std::vector<ClassView> views = NumberedViews(pool, active);
    MaxMinSolver fresh;
    std::vector<uint32_t> want, got;
    const size_t want_num = fresh.Components(views, kLinks, &want);
    const size_t got_num = incremental.Components(views, kLinks, &got);
    ASSERT_EQ(got_num, want_num) << "step " << step;
    ASSERT_EQ(got, want) << "step " << step;
  }
}

// The numbers of each component's views, in order.
std::vector<std::vector<uint32_t>> ComponentNumbers(const std::vector<ClassView>& views,
                                                    const std::vector<uint32_t>& comp, size_t num) {
  std::vector<std::vector<uint32_t>> out(num);
  for (size_t i = 0; i < views.size(); ++i) out[comp[i]].push_back(views[i].number);
  return out;
}

// FlowNetwork reuses a component's solution when SameAsLast says it is the last call's
// component c: it must then hold exactly c's views (the same numbers in the same order), and it
// must say so for most components that did not change (else nothing is reused).
TEST(ComponentsTest, SameAsLastNamesOnlyComponentsWithTheSameViews) {
  std::mt19937_64 rng(7);
  constexpr int kLinks = 400;
  const RandomSet pool = MakeRandomSet(rng, kLinks, 120, 2, 2);
  MaxMinSolver solver;
  std::vector<uint32_t> active;
  std::vector<std::vector<uint32_t>> last;
  size_t reused = 0, unchanged = 0;
  for (int step = 0; step < 3000; ++step) {
    std::vector<uint32_t> next;
    for (uint32_t u : active) {
      if (rng() % 12 != 0) next.push_back(u);
    }
    const int added = static_cast<int>(rng() % 3);
    for (int k = 0; k < added; ++k) {
      next.push_back(static_cast<uint32_t>(rng() % pool.views.size()));
    }
    active = next;
    const std::vector<ClassView> views = NumberedViews(pool, active);
    std::vector<uint32_t> comp;
    const size_t num = solver.Components(views, kLinks, &comp);
    const std::vector<std::vector<uint32_t>> now = ComponentNumbers(views, comp, num);
    const std::vector<uint32_t>& same = solver.SameAsLast();
    ASSERT_EQ(same.size(), num);
    for (size_t k = 0; k < num; ++k) {
      const bool was = std::find(last.begin(), last.end(), now[k]) != last.end();
      unchanged += was;
      if (same[k] == MaxMinSolver::kNotBefore) continue;
      ASSERT_LT(same[k], last.size()) << "step " << step;
      ASSERT_EQ(now[k], last[same[k]]) << "step " << step << ", component " << k;
      ++reused;
    }
    last = now;
  }
  EXPECT_GT(unchanged, 1000u);
  EXPECT_GT(reused, unchanged * 9 / 10);
}

}  // namespace
}  // namespace trainsim::comm
