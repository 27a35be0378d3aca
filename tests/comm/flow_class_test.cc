// Flow classes (comm/max_min.h, FlowNetwork::StartFlowClass): a class of flows is solved as one
// unknown, and split where its members would not share a rate, so every result must equal the
// per-flow max-min solution. Expectations: hand-derived max-min rates and drain times, and the
// same flows started one by one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "comm/collnet.h"
#include "comm/flow_network.h"
#include "comm/hierarchical.h"
#include "comm/max_min.h"
#include "comm/pat.h"
#include "comm/ring.h"
#include "comm/schedule.h"
#include "gtest/gtest.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

std::shared_ptr<const FlowClass> ClassOf(const std::vector<std::vector<LinkId>>& paths) {
  std::vector<std::span<const LinkId>> spans(paths.begin(), paths.end());
  return MakeFlowClass(spans);
}

TEST(MaxMinClassesTest, AggregatesMemberCrossingsPerLink) {
  const auto c = ClassOf({{3, 1}, {1, 2}, {1}});
  EXPECT_EQ(c->size(), 3u);
  EXPECT_EQ(c->links, (std::vector<LinkId>{1, 2, 3}));
  EXPECT_EQ(c->counts, (std::vector<uint32_t>{3, 1, 1}));
}

TEST(MaxMinClassesTest, LargeClassesListEachLinkOnceInOrderWithItsCrossings) {
  // 3,000 members of 4 random links each (ids up to 5,000,000: three radix digits), against a
  // count kept by hand.
  std::mt19937 rng(7);
  std::uniform_int_distribution<LinkId> link(0, 5'000'000);
  std::vector<std::vector<LinkId>> paths(3000);
  std::map<LinkId, uint32_t> expected;
  for (auto& p : paths) {
    for (int i = 0; i < 4; ++i) {
      p.push_back(i == 0 ? LinkId(i) : link(rng));  // every member crosses link 0 too
      ++expected[p.back()];
    }
  }
  std::vector<std::span<const LinkId>> members(paths.begin(), paths.end());
  const auto c = MakeFlowClass(members);
  ASSERT_EQ(c->links.size(), expected.size());
  size_t i = 0;
  for (const auto& [id, n] : expected) {
    EXPECT_EQ(c->links[i], id);
    EXPECT_EQ(c->counts[i], n);
    ++i;
  }
  EXPECT_EQ(c->counts[0], 3000u);
}

TEST(MaxMinClassesTest, SplittingAClassGivesThePartsBuiltFromTheirMembers) {
  // 2,000 members of 1 to 6 links (ids below 50,000, so links repeat within and across
  // members), split by loose sets from one member to all but one: each part must equal
  // MakeFlowClass of its members (paths, links, crossings, hash), and the scratch be left zero.
  std::mt19937 rng(11);
  std::uniform_int_distribution<LinkId> link(0, 49'999);
  std::uniform_int_distribution<int> length(1, 6);
  std::vector<std::vector<LinkId>> paths(2000);
  for (auto& p : paths) {
    for (int i = length(rng); i > 0; --i) p.push_back(link(rng));
  }
  const auto whole = ClassOf(paths);
  std::vector<uint32_t> scratch;
  // -1: member 1,234 alone; -2: all but member 5; else each member loose with that chance.
  for (double share : {-1.0, 0.3, 0.7, -2.0}) {
    std::vector<uint32_t> loose;
    std::vector<std::vector<LinkId>> kept_paths, loose_paths;
    std::bernoulli_distribution pick(std::max(share, 0.0));
    for (uint32_t m = 0; m < paths.size(); ++m) {
      const bool is_loose = share == -1 ? m == 1234 : share == -2 ? m != 5 : pick(rng);
      if (is_loose) loose.push_back(m);
      (is_loose ? loose_paths : kept_paths).push_back(paths[m]);
    }
    ASSERT_FALSE(loose.empty());
    ASSERT_LT(loose.size(), paths.size());
    const auto [kept, split] = SplitFlowClass(*whole, loose, &scratch);
    for (const auto& [got, want] :
         {std::pair{kept, ClassOf(kept_paths)}, std::pair{split, ClassOf(loose_paths)}}) {
      EXPECT_EQ(got->member_links, want->member_links);
      EXPECT_EQ(got->member_begin, want->member_begin);
      EXPECT_EQ(got->links, want->links);
      EXPECT_EQ(got->counts, want->counts);
      EXPECT_EQ(got->hash, want->hash);
    }
    EXPECT_EQ(std::count(scratch.begin(), scratch.end(), 0u), std::ptrdiff_t(scratch.size()));
  }
}

TEST(MaxMinClassesTest, SymmetricClassGetsThePerFlowRateAndNoLooseMember) {
  // Four members, each on its own 10 B/s link, all through one 100 B/s link: each is held by its
  // own link at 10 (4 × 10 <= 100), as per-flow filling gives.
  const auto c = ClassOf({{0, 4}, {1, 4}, {2, 4}, {3, 4}});
  const std::vector<double> cap = {10, 10, 10, 10, 100};
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveClasses({{c->links, c->counts, c.get()}}, cap, &rates, &loose);
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_DOUBLE_EQ(rates[0], 10);
  EXPECT_TRUE(loose[0].empty());
}

TEST(MaxMinClassesTest, SharedLinkCountsEveryMemberCrossingIt) {
  // Three members through one 30 B/s link and a single flow on it too: 4 crossings, 7.5 each.
  const auto c = ClassOf({{0, 3}, {1, 3}, {2, 3}});
  const std::vector<LinkId> single = {3};
  const std::vector<double> cap = {100, 100, 100, 30};
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveClasses({{c->links, c->counts, c.get()}, {single, {}, nullptr}}, cap, &rates, &loose);
  EXPECT_DOUBLE_EQ(rates[0], 7.5);
  EXPECT_DOUBLE_EQ(rates[1], 7.5);
  EXPECT_TRUE(loose[0].empty());
}

TEST(MaxMinClassesTest, MembersNotHeldAtTheClassRateAreReportedLoose) {
  // Members on links 0, 1, 2 (12 B/s each) and a single flow on link 1: per flow, member 1 and
  // the single get 6, members 0 and 2 get 12. The class is frozen at 6 with members 0 and 2
  // loose (no saturated link on their paths).
  const auto c = ClassOf({{0}, {1}, {2}});
  const std::vector<LinkId> single = {1};
  const std::vector<double> cap = {12, 12, 12};
  MaxMinSolver solver;
  std::vector<double> rates;
  std::vector<std::vector<uint32_t>> loose;
  solver.SolveClasses({{c->links, c->counts, c.get()}, {single, {}, nullptr}}, cap, &rates, &loose);
  EXPECT_DOUBLE_EQ(rates[0], 6);
  EXPECT_DOUBLE_EQ(rates[1], 6);
  EXPECT_EQ(loose[0], (std::vector<uint32_t>{0, 2}));
}

class FlowClassNetworkTest : public ::testing::Test {
 protected:
  static Topology Build(int nodes) {
    TopologySpec spec;
    spec.nodes = nodes;
    return Topology::Build(spec).value();
  }
  // A class with members on NICs 0, 1 and 2 of a 2-node DGX topology, `bytes` each, and a single
  // flow of `single` bytes on member 1's NIC: when each ended, the NIC's bandwidth c, how many
  // times the class called back, the flows started and the events run.
  struct Contended {
    double c = 0, class_done = -1, single_done = -1;
    int class_calls = 0;
    uint64_t flows = 0, events = 0;
  };
  static Contended RunContended(uint64_t bytes, uint64_t single) {
    const Topology topo = Build(2);
    sim::Engine engine;
    FlowNetwork net(&engine, &topo);
    Contended r;
    r.c = topo.link(topo.nic_tx(0)).bandwidth_Bps;
    const auto cls = ClassOf({{topo.nic_tx(0)}, {topo.nic_tx(1)}, {topo.nic_tx(2)}});
    net.StartFlowClass(cls, bytes, [&] {
      r.class_done = engine.now().seconds();
      ++r.class_calls;
    });
    net.StartFlow(
        std::vector<LinkId>{topo.nic_tx(1)}, single,
        [&] { r.single_done = engine.now().seconds(); }, sim::Time::Zero(), false);
    engine.Run();
    r.flows = net.flows_started();
    r.events = engine.events_processed();
    return r;
  }
};

TEST_F(FlowClassNetworkTest, ContendedClassSplitsAndEndsWithItsSlowestMember) {
  // Members on three NICs (bandwidth c), bytes B each; a single flow of B/2 on member 1's NIC.
  // Per flow: member 1 and the single share c/2 until the single drains at B/c; member 1 then
  // has B/2 left at c: the class ends at 1.5 B/c, the single at B/c.
  const uint64_t bytes = 480'000'000;
  const Contended r = RunContended(bytes, bytes / 2);
  EXPECT_NEAR(r.single_done, bytes / r.c, 2e-9);
  EXPECT_NEAR(r.class_done, 1.5 * bytes / r.c, 2e-9);
  EXPECT_EQ(r.flows, 4u);
}

TEST_F(FlowClassNetworkTest, SplitClassPartsThatDrainBeforeTheLastScheduleNoDelivery) {
  // As above with a single of B/4: it and member 1 share c/2 until the single drains at
  // B/(2c); members 0 and 2 drain at B/c, member 1 (3B/4 left at c) at 1.25 B/c. Events: the
  // start's recompute; the single's drain, delivery and recompute; the part {0, 2}'s drain and
  // recompute, with no delivery (it calls nothing back); member 1's drain, the class's delivery
  // and the last recompute: 9. A delivery event for the early part would make it 10.
  const uint64_t bytes = 480'000'000;
  const Contended r = RunContended(bytes, bytes / 4);
  EXPECT_NEAR(r.single_done, 0.5 * bytes / r.c, 2e-9);
  EXPECT_NEAR(r.class_done, 1.25 * bytes / r.c, 2e-9);
  EXPECT_EQ(r.class_calls, 1);
  EXPECT_EQ(r.events, 9u);
}

// Random flows on a 2-node DGX topology, grouped at random into classes of equal bytes: every
// class ends when the last of its members would have, started one by one.
TEST_F(FlowClassNetworkTest, RandomClassesEndWhenTheirMembersStartedOneByOneWould) {
  const Topology topo = Build(2);
  std::mt19937_64 rng(20);
  for (int trial = 0; trial < 30; ++trial) {
    struct Group {
      std::vector<std::vector<LinkId>> paths;
      uint64_t bytes;
      double start_us;
    };
    std::vector<Group> groups(1 + rng() % 6);
    for (Group& g : groups) {
      g.paths.resize(1 + rng() % 5);
      for (auto& p : g.paths) {
        const int len = 1 + int(rng() % 3);
        for (int k = 0; k < len; ++k) {
          const LinkId l = LinkId(rng() % uint64_t(topo.num_links()));
          if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
        }
      }
      g.bytes = 1'000'000 * (1 + rng() % 50);
      g.start_us = double(rng() % 3) * 10;
    }
    auto run = [&](bool as_classes) {
      sim::Engine engine;
      FlowNetwork net(&engine, &topo);
      std::vector<double> done(groups.size(), 0);
      for (size_t i = 0; i < groups.size(); ++i) {
        engine.Schedule(sim::Time::FromSeconds(groups[i].start_us * 1e-6), [&, i] {
          const Group& g = groups[i];
          if (as_classes) {
            net.StartFlowClass(ClassOf(g.paths), g.bytes,
                               [&, i] { done[i] = engine.now().seconds(); });
            return;
          }
          for (const auto& p : g.paths) {
            net.StartFlow(
                p, g.bytes, [&, i] { done[i] = std::max(done[i], engine.now().seconds()); },
                sim::Time::Zero(), false);
          }
        });
      }
      engine.Run();
      return done;
    };
    const std::vector<double> per_flow = run(false), classes = run(true);
    for (size_t i = 0; i < groups.size(); ++i) {
      EXPECT_NEAR(classes[i], per_flow[i], 1e-9 * per_flow[i] + 2e-9)
          << "trial " << trial << " group " << i;
    }
  }
}

// A ring all-reduce (NVLink and network legs in classes) next to a long flow on one of its NICs
// ends when the same ring expanded flow by flow does.
TEST_F(FlowClassNetworkTest, ContendedRingAllReduceMatchesThePerFlowExpansion) {
  const Topology topo = Build(2);
  std::vector<int> gpus(16);
  for (int g = 0; g < 16; ++g) gpus[size_t(g)] = g;
  TransferSchedule ring = BuildRingSchedule(topo, Op::kAllReduce, gpus, uint64_t{1} << 28);
  TransferSchedule flat = ring;
  for (auto& t : flat.transfers) t.flow_class = -1;
  auto run = [&](const TransferSchedule& s) {
    sim::Engine engine;
    FlowNetwork net(&engine, &topo);
    double done = 0;
    net.StartFlow(std::vector<LinkId>{topo.nic_tx(3)}, uint64_t{1} << 26, [] {});
    RunSchedule(&net, s, Protocol::kSimple, [&] { done = engine.now().seconds(); });
    engine.Run();
    return done;
  };
  const double expected = run(flat);
  EXPECT_GT(expected, 0);
  EXPECT_NEAR(run(ring), expected, 1e-9 * expected);
}

// PAT's steps (one GPU per node, every rank sending the same blocks the same distance) start as
// one class per step; beside a long flow on one of its NICs a reduce-scatter ends when the same
// schedule expanded flow by flow does.
TEST_F(FlowClassNetworkTest, ContendedPatReduceScatterMatchesThePerFlowExpansion) {
  const Topology topo = Build(8);
  std::vector<int> gpus;
  for (int node = 0; node < 8; ++node) gpus.push_back(8 * node + node % 2);
  Result<TransferSchedule> pat =
      BuildPatSchedule(topo, Op::kReduceScatter, gpus, uint64_t{1} << 28);
  ASSERT_TRUE(pat.ok()) << pat.status().message();
  const std::shared_ptr<const PreparedSchedule> prepared =
      PrepareSchedule(topo, *pat, Protocol::kSimple);
  ASSERT_EQ(prepared->segments.size(), 3u);  // steps at distance 1, 2, 4
  for (const auto& seg : prepared->segments) {
    ASSERT_EQ(seg.classes.size(), 1u);
    EXPECT_EQ(seg.classes[0].members->size(), 8u);
    EXPECT_TRUE(seg.singles.empty());
  }
  TransferSchedule flat = *pat;
  for (auto& t : flat.transfers) t.flow_class = -1;
  auto run = [&](const TransferSchedule& s) {
    sim::Engine engine;
    FlowNetwork net(&engine, &topo);
    double done = 0;
    net.StartFlow(std::vector<LinkId>{topo.nic_tx(16)}, uint64_t{1} << 25, [] {});
    RunSchedule(&net, s, Protocol::kSimple, [&] { done = engine.now().seconds(); });
    engine.Run();
    return done;
  };
  const double expected = run(flat);
  EXPECT_GT(expected, 0);
  EXPECT_NEAR(run(*pat), expected, 1e-9 * expected);
}

// The hierarchical all-reduce's rings (NVLink legs and cross-node legs in classes) and CollNet's
// legs (one class per leg kind) beside a long flow on one NIC end when the same schedules
// expanded flow by flow do.
TEST_F(FlowClassNetworkTest, ContendedHierarchicalAndCollNetMatchThePerFlowExpansion) {
  TopologySpec spec;
  spec.nodes = 4;
  spec.sharp = true;
  const Topology topo = Topology::Build(spec).value();
  std::vector<int> gpus;
  for (int node = 0; node < 4; ++node) {
    for (int g = 0; g < 4; ++g) gpus.push_back(8 * node + g);
  }
  auto run = [&](const TransferSchedule& s) {
    sim::Engine engine;
    FlowNetwork net(&engine, &topo);
    double done = 0;
    net.StartFlow(std::vector<LinkId>{topo.nic_tx(9)}, uint64_t{1} << 24, [] {});
    RunSchedule(&net, s, Protocol::kSimple, [&] { done = engine.now().seconds(); });
    engine.Run();
    return done;
  };
  for (Result<TransferSchedule> schedule :
       {BuildHierarchicalSchedule(topo, gpus, uint64_t{1} << 28),
        BuildCollNetSchedule(topo, gpus, uint64_t{1} << 28)}) {
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    size_t classes = 0;
    // Held: a range-for over a member of the temporary would outlive it.
    const auto prepared = PrepareSchedule(topo, *schedule, Protocol::kSimple);
    for (const auto& seg : prepared->segments) {
      classes += seg.classes.size();
    }
    EXPECT_GT(classes, 0u);
    TransferSchedule flat = *schedule;
    for (auto& t : flat.transfers) t.flow_class = -1;
    const double expected = run(flat);
    EXPECT_GT(expected, 0);
    EXPECT_NEAR(run(*schedule), expected, 1e-9 * expected);
  }
}

}  // namespace
}  // namespace trainsim::comm
