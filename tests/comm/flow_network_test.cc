#include "comm/flow_network.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

class FlowNetworkTest : public ::testing::Test {
 protected:
  FlowNetworkTest() : topology_(Build()), network_(&engine_, &topology_) {}
  static Topology Build() {
    TopologySpec spec;
    spec.nodes = 2;
    return Topology::Build(spec).value();
  }
  double Bw(LinkId l) const { return topology_.link(l).bandwidth_Bps; }
  sim::Engine engine_;
  Topology topology_;
  FlowNetwork network_;
};

TEST_F(FlowNetworkTest, OneFlowTakesBytesOverBandwidthPlusPathLatency) {
  const std::vector<LinkId> path = topology_.Route(0, 1);
  const uint64_t bytes = 360'000'000;  // 1 ms at 360 GB/s
  sim::Time done;
  network_.StartFlow(path, bytes, [&] { done = engine_.now(); });
  engine_.Run();
  const double expected = bytes / Bw(path[0]) + topology_.PathLatency(path).seconds();
  EXPECT_NEAR(done.seconds(), expected, 2e-9);
}

TEST_F(FlowNetworkTest, TwoFlowsOnOneLinkEachGetHalf) {
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const FlowId a = network_.StartFlow(path, 1'000'000'000, [] {});
  const FlowId b = network_.StartFlow(path, 1'000'000'000, [] {});
  engine_.RunUntil(sim::Time::Micros(1));
  EXPECT_DOUBLE_EQ(network_.FlowRate(a), Bw(link) / 2);
  EXPECT_DOUBLE_EQ(network_.FlowRate(b), Bw(link) / 2);
}

TEST_F(FlowNetworkTest, FlowBottleneckedElsewhereLeavesItsSpareShareToOthers) {
  // A crosses the NVLink and a NIC (48 GB/s); B only the NVLink (360 GB/s). Max-min: A is held
  // to the NIC's 48 GB/s and B takes the rest of the NVLink, not half of it.
  const LinkId nvl = topology_.nvlink_up(0);
  const LinkId nic = topology_.nic_tx(0);
  const FlowId a = network_.StartFlow(std::vector<LinkId>{nvl, nic}, 1'000'000'000, [] {});
  const FlowId b = network_.StartFlow(std::vector<LinkId>{nvl}, 1'000'000'000, [] {});
  engine_.RunUntil(sim::Time::Micros(1));
  EXPECT_DOUBLE_EQ(network_.FlowRate(a), Bw(nic));
  EXPECT_DOUBLE_EQ(network_.FlowRate(b), Bw(nvl) - Bw(nic));
}

TEST_F(FlowNetworkTest, RatesAreRecomputedWhenAFlowEnds) {
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const double bw = Bw(link);
  const uint64_t small = 100'000'000, big = 300'000'000;
  sim::Time small_done, big_done;
  network_.StartFlow(path, small, [&] { small_done = engine_.now(); });
  network_.StartFlow(path, big, [&] { big_done = engine_.now(); });
  engine_.Run();
  const double lat = topology_.link(link).latency.seconds();
  // Both at bw/2 until the small one drains, then the big one alone at bw.
  EXPECT_NEAR(small_done.seconds(), 2 * small / bw + lat, 2e-9);
  EXPECT_NEAR(big_done.seconds(), 2 * small / bw + (big - small) / bw + lat, 3e-9);
}

TEST_F(FlowNetworkTest, ActiveSetThatRecursGetsTheSameRatesAsTheFirstTime) {
  // Set A = {x, y} on one NVLink (half each), then B = {x} alone (all of it), then A again: the
  // memoised solution for A must give the same max-min rates as the first solve.
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const double bw = Bw(link);
  const uint64_t bytes = 360'000'000;  // 1 ms alone
  const FlowId x = network_.StartFlow(path, 4 * bytes, [] {});
  const FlowId y = network_.StartFlow(path, bytes, [] {});
  engine_.RunUntil(sim::Time::Micros(1));
  EXPECT_DOUBLE_EQ(network_.FlowRate(x), bw / 2);
  EXPECT_DOUBLE_EQ(network_.FlowRate(y), bw / 2);
  // y drains at 2 ms (half the link), leaving x alone.
  engine_.RunUntil(sim::Time::Micros(2100));
  EXPECT_DOUBLE_EQ(network_.FlowRate(x), bw);
  const FlowId z = network_.StartFlow(path, bytes, [] {});
  engine_.RunUntil(sim::Time::Micros(2101));
  EXPECT_DOUBLE_EQ(network_.FlowRate(x), bw / 2);
  EXPECT_DOUBLE_EQ(network_.FlowRate(z), bw / 2);
  EXPECT_GE(network_.rate_recomputations(), 3u);
}

TEST_F(FlowNetworkTest, FlowStartedLaterSlowsTheFirst) {
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const double bw = Bw(link);
  const uint64_t bytes = 360'000'000;  // 1 ms alone at 360 GB/s
  sim::Time first_done;
  network_.StartFlow(path, bytes, [&] { first_done = engine_.now(); });
  engine_.Schedule(sim::Time::FromSeconds(0.5e-3), [&] { network_.StartFlow(path, bytes, [] {}); });
  engine_.Run();
  // Half drained alone in 0.5 ms, the other half at bw/2: 1 ms more.
  EXPECT_NEAR(first_done.seconds(),
              0.5e-3 + (bytes / 2.0) / (bw / 2) + topology_.link(link).latency.seconds(), 3e-9);
}

TEST_F(FlowNetworkTest, LinkDownStallsFlowsUntilItComesBack) {
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const uint64_t bytes = 360'000'000;  // 1 ms at 360 GB/s
  sim::Time done;
  bool finished = false;
  network_.StartFlow(path, bytes, [&] {
    done = engine_.now();
    finished = true;
  });
  engine_.Schedule(sim::Time::FromSeconds(0.25e-3),
                   [&] { network_.SetLinkBandwidthFactor(link, 0.0); });
  engine_.Schedule(sim::Time::FromSeconds(2.25e-3),
                   [&] { network_.SetLinkBandwidthFactor(link, 0.5); });
  engine_.RunUntil(sim::Time::FromSeconds(2e-3));
  EXPECT_FALSE(finished);
  engine_.Run();
  ASSERT_TRUE(finished);
  // 0.25 ms at full speed, 2 ms stalled, the remaining 0.75 ms of work at half speed.
  EXPECT_NEAR(done.seconds(), 2.25e-3 + 1.5e-3 + topology_.link(link).latency.seconds(), 3e-9);
}

TEST_F(FlowNetworkTest, CallbacksOfOneInstantRunInStartOrder) {
  const std::vector<LinkId> path = {topology_.nvlink_up(0)};
  std::string order;
  for (char c : std::string("abcd")) {
    network_.StartFlow(path, 1000, [&order, c] { order += c; });
  }
  engine_.Run();
  EXPECT_EQ(order, "abcd");
  EXPECT_EQ(network_.active_flows(), 0u);
}

TEST_F(FlowNetworkTest, EmptyPathOrZeroBytesCompletesAfterLatencyOnly) {
  sim::Time done;
  network_.StartFlow(
      std::vector<LinkId>{}, 1000, [&] { done = engine_.now(); }, sim::Time::Micros(3));
  engine_.Run();
  EXPECT_EQ(done, sim::Time::Micros(3));
}

// Three flows of a segment: B bytes over an NVLink, B over a NIC (slower), 0 bytes. With their
// own callbacks: the first recompute, the 0-byte flow's callback, the NVLink flow's drain,
// delivery and recompute, the NIC flow's drain, delivery and recompute: 8 events. With one
// shared callback the 0-byte flow and the NVLink flow schedule nothing: 6, and the callback runs
// once, when the NIC flow has drained. (Lone flows off: each end is then a recompute.)
TEST_F(FlowNetworkTest, ASharedCallbackRunsOnceAfterTheLastFlowAndTheOthersScheduleNothing) {
  const LinkId nvl = topology_.nvlink_up(0);
  const LinkId nic = topology_.nic_tx(0);
  const uint64_t bytes = 480'000'000;
  const std::vector<std::vector<LinkId>> paths = {{nvl}, {nic}, {nvl}};
  const std::vector<uint64_t> sizes = {bytes, bytes, 0};
  const double want = bytes / Bw(nic);
  for (const bool shared : {false, true}) {
    sim::Engine engine;
    FlowNetwork net(&engine, &topology_);
    net.set_lone_flows(false);
    int calls = 0;
    double last = -1;
    auto done = std::make_shared<FlowNetwork::SharedDone>();
    done->pending = 3;
    done->on_done = [&] {
      ++calls;
      last = engine.now().seconds();
    };
    int own = 0;
    for (size_t i = 0; i < 3; ++i) {
      if (shared) {
        net.StartFlow(paths[i], sizes[i], done, sim::Time::Zero(), false);
      } else {
        net.StartFlow(
            paths[i], sizes[i],
            [&] {
              if (++own == 3) done->on_done();
            },
            sim::Time::Zero(), false);
      }
    }
    engine.Run();
    EXPECT_EQ(calls, 1) << "shared " << shared;
    EXPECT_NEAR(last, want, 2e-9) << "shared " << shared;
    EXPECT_EQ(engine.events_processed(), shared ? 6u : 8u);
  }
}

// Every active flow's rate against a fresh per-flow solve of the active set (MaxMinFairRates:
// no memo, no components), within rounding. `paths` by flow id.
// no memo, no components), within rounding. `paths` by flow id.
void ExpectFreshRates(const FlowNetwork& net, const Topology& t,
                      const std::vector<std::pair<FlowId, std::vector<LinkId>>>& flows,
                      const std::vector<double>& factor) {
  std::vector<FlowId> ids;
  std::vector<std::vector<LinkId>> paths;
  for (const auto& [id, path] : flows) {
    if (net.FlowRate(id) > 0) {
      ids.push_back(id);
      paths.push_back(path);
    }
  }
  ASSERT_EQ(ids.size(), net.active_flows());
  const std::vector<double> want = MaxMinFairRates(t, paths, factor);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_NEAR(net.FlowRate(ids[i]), want[i], 1e-9 * want[i]) << "flow " << i;
  }
}

// The memo (a flat table over blocks of numbers and rates) returns what a fresh solve gives:
// thousands of distinct and recurring active sets (past one block of numbers and the table's
// first growth), a set longer than a block, and the memo cleared by a capacity change.
TEST(FlowNetworkMemoTest, MemoisedRatesMatchAFreshSolveOfEverySet) {
  TopologySpec spec;
  spec.nodes = 4;
  const Topology t = Topology::Build(spec).value();
  sim::Engine engine;
  FlowNetwork net(&engine, &t);
  net.set_lone_flows(false);  // every flow through the solve and its memo (what this checks)
  std::vector<double> factor(size_t(t.num_links()), 1.0);
  // 40 routes between GPU pairs (NVLink inside a node, NICs and switches across).
  std::vector<std::vector<LinkId>> routes;
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  while (routes.size() < 40) {
    const int a = int(next() % 32), b = int(next() % 32);
    if (a != b) routes.push_back(t.Route(a, b));
  }
  std::vector<std::pair<FlowId, std::vector<LinkId>>> flows;
  // One flow every microsecond, lasting 1-12 µs alone, checked half-way to the next start.
  for (int k = 0; k < 1500; ++k) {
    const std::vector<LinkId>& r = routes[next() % routes.size()];
    const uint64_t bytes = 40'000 * (1 + next() % 12);
    flows.emplace_back(net.StartFlow(r, bytes, [] {}), r);
    engine.RunUntil(sim::Time::Nanos(1000 * k + 500));
    ExpectFreshRates(net, t, flows, factor);
    if (k == 900) {  // clears the memo; the rates follow the new capacity
      net.SetLinkBandwidthFactor(routes[0].front(), 0.5);
      factor[size_t(routes[0].front())] = 0.5;
    }
  }
  EXPECT_GT(net.rate_recomputations(), 1500u);
  engine.Run();
  // 4,200 flows at once (a key longer than a memo block), equal bytes: they drain route by
  // route, each instant a new set.
  flows.clear();
  for (int k = 0; k < 4200; ++k) {
    const std::vector<LinkId>& r = routes[size_t(k) % routes.size()];
    flows.emplace_back(net.StartFlow(r, 1'000'000, [] {}), r);
  }
  for (int i = 0; i < 6 && net.active_flows() > 0; ++i) {
    engine.RunUntil(engine.now() + sim::Time::Micros(1));
    ExpectFreshRates(net, t, flows, factor);
  }
  engine.Run();
  EXPECT_EQ(net.active_flows(), 0u);
}

// Completion times of a random mix of single flows and flow classes (rings inside and across
// nodes, whose members split when single flows load some of their links), started one or two
// per microsecond, with one capacity change; with local solves on or off.
std::vector<int64_t> MixedCompletions(bool local, uint64_t* local_solves, bool lone = true,
                                      uint64_t* lone_flows = nullptr,
                                      std::vector<size_t>* order = nullptr) {
  TopologySpec spec;
  spec.nodes = 4;
  const Topology t = Topology::Build(spec).value();
  sim::Engine engine;
  FlowNetwork net(&engine, &t);
  net.set_local_solves(local);
  net.set_lone_flows(lone);
  uint64_t x = 99;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  std::vector<std::vector<LinkId>> routes;
  while (routes.size() < 48) {
    const int a = int(next() % 32), b = int(next() % 32);
    if (a != b) routes.push_back(t.Route(a, b));
  }
  // Rings over 4-8 GPUs, in one node or spread over nodes.
  std::vector<std::shared_ptr<const FlowClass>> classes;
  std::vector<std::vector<std::vector<LinkId>>> member_paths(12);
  for (size_t c = 0; c < member_paths.size(); ++c) {
    const int n = 4 + int(next() % 5);
    const int stride = c % 2 == 0 ? 1 : 8;  // inside node (c % 4) or one GPU per node
    std::vector<int> gpus;
    for (int i = 0; i < n; ++i) gpus.push_back((int(c % 4) * 8 + i * stride + int(c / 4)) % 32);
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    std::vector<std::span<const LinkId>> spans;
    for (size_t i = 0; i < gpus.size(); ++i) {
      member_paths[c].push_back(t.Route(gpus[i], gpus[(i + 1) % gpus.size()]));
    }
    for (const auto& p : member_paths[c]) spans.push_back(p);
    classes.push_back(MakeFlowClass(spans));
  }
  std::vector<int64_t> done(3000, -1);
  for (int k = 0; k < 1500; ++k) {
    for (int j = 0; j < 1 + int(next() % 2); ++j) {
      const size_t id = size_t(2 * k + j);
      auto on_done = [&done, &engine, id, order] {
        done[id] = engine.now().nanos();
        if (order != nullptr) order->push_back(id);
      };
      const uint64_t bytes = 20'000 * (1 + next() % 16);
      if (next() % 3 == 0) {
        net.StartFlowClass(classes[next() % classes.size()], bytes, on_done);
      } else {
        net.StartFlow(routes[next() % routes.size()], bytes, on_done);
      }
    }
    if (k == 1000) net.SetLinkBandwidthFactor(routes[3].front(), 0.25);
    engine.RunUntil(sim::Time::Nanos(1000 * (k + 1)));
  }
  engine.Run();
  *local_solves = net.local_solves();
  if (lone_flows != nullptr) *lone_flows = net.lone_flows();
  return done;
}

// Re-solving only the components that changed (the flows that ended, the components new flows
// join) gives the same rates as solving the whole set, so every completion is the same to the
// nanosecond.
TEST(FlowNetworkLocalSolveTest, LocalSolvesGiveTheWholeSetSolvesCompletions) {
  uint64_t local = 0, whole = 0;
  const std::vector<int64_t> with = MixedCompletions(true, &local, /*lone=*/false);
  const std::vector<int64_t> without = MixedCompletions(false, &whole, /*lone=*/false);
  EXPECT_EQ(whole, 0u);
  EXPECT_GT(local, 500u);  // the local path ran
  size_t started = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    started += without[i] >= 0;
    ASSERT_EQ(with[i], without[i]) << "flow " << i;
  }
  EXPECT_GT(started, 2000u);
}

TEST(MaxMinFairRatesTest, ClassicThreeFlowExample) {
  // Two links of capacity C1 (NVLink, 360 GB/s) and C2 (NIC, 48 GB/s); flows: X over both,
  // Y over the NIC only, Z over the NVLink only. NIC: X = Y = 24; NVLink: Z = 360 − 24 = 336.
  TopologySpec spec;
  spec.nodes = 1;
  const Topology t = Topology::Build(spec).value();
  const LinkId nvl = t.nvlink_up(0);
  const LinkId nic = t.nic_tx(0);
  const std::vector<double> rates = MaxMinFairRates(t, {{nvl, nic}, {nic}, {nvl}});
  const double c2 = t.link(nic).bandwidth_Bps;
  EXPECT_DOUBLE_EQ(rates[0], c2 / 2);
  EXPECT_DOUBLE_EQ(rates[1], c2 / 2);
  EXPECT_DOUBLE_EQ(rates[2], t.link(nvl).bandwidth_Bps - c2 / 2);
}

// Followed link sets and watches (the step simulation's bucket trains rely on them).
TEST_F(FlowNetworkTest, AFollowedSetCountsTheFlowsThatCrossItFromWhenItIsFollowed) {
  const LinkId nvl0 = topology_.nvlink_up(0);
  const LinkId nvl1 = topology_.nvlink_up(1);
  const LinkId nic0 = topology_.nic_tx(0);
  // A flow active before the set is followed is counted too.
  network_.StartFlow(std::vector<LinkId>{nvl0, nic0}, 1'000'000, [] {});
  engine_.RunUntil(sim::Time::Nanos(1));
  const std::vector<LinkId> set_links = {nic0};
  const FlowNetwork::LinkSetId set = network_.FollowLinks(set_links);
  ASSERT_GE(set, 0);
  EXPECT_FALSE(network_.LinksFree(set));
  engine_.Run();
  EXPECT_TRUE(network_.LinksFree(set));
  // A flow elsewhere leaves it free; one through any of its links does not, until it ends.
  network_.StartFlow(std::vector<LinkId>{nvl1}, 1'000'000, [] {});
  EXPECT_TRUE(network_.LinksFree(set));
  network_.StartFlow(std::vector<LinkId>{nvl1, nic0}, 1'000'000, [] {});
  EXPECT_FALSE(network_.LinksFree(set));
  engine_.Run();
  EXPECT_TRUE(network_.LinksFree(set));
}

TEST_F(FlowNetworkTest, ASetFollowedLaterCountsFlowsWhosePathsWereSeenBefore) {
  // The sets a path crosses are cached by its interned number; a set followed later must not be
  // missed by a flow on a path seen while it was not followed, active or started afterwards.
  const LinkId nvl0 = topology_.nvlink_up(0);
  const LinkId nic0 = topology_.nic_tx(0);
  const LinkId nic1 = topology_.nic_tx(1);
  const std::vector<LinkId> first_links = {nic1};
  ASSERT_GE(network_.FollowLinks(first_links), 0);  // sets are counted from here on
  const std::vector<LinkId> path = {nvl0, nic0};
  network_.StartFlow(path, 1'000'000, [] {});
  engine_.RunUntil(sim::Time::Nanos(1));  // (the first solve deals the numbers afresh)
  network_.StartFlow(path, 1'000'000, [] {});
  engine_.RunUntil(sim::Time::Nanos(2));
  const std::vector<LinkId> later_links = {nic0};
  const FlowNetwork::LinkSetId later = network_.FollowLinks(later_links);
  ASSERT_GE(later, 0);
  EXPECT_FALSE(network_.LinksFree(later));  // the active flow crosses nic0
  engine_.Run();
  EXPECT_TRUE(network_.LinksFree(later));
  network_.StartFlow(path, 1'000'000, [] {});  // the same path (number) again
  EXPECT_FALSE(network_.LinksFree(later));
  engine_.Run();
  EXPECT_TRUE(network_.LinksFree(later));
}

TEST_F(FlowNetworkTest, AWatchFiresOnceBeforeAFlowStartsOnItsLinksAndNotForOthers) {
  const LinkId nic0 = topology_.nic_tx(0);
  const LinkId nic1 = topology_.nic_tx(1);
  const std::vector<LinkId> set_links = {nic0};
  const FlowNetwork::LinkSetId set = network_.FollowLinks(set_links);
  int fired = 0;
  size_t active_when_fired = 99;
  network_.Watch(set, [&] {
    ++fired;
    active_when_fired = network_.active_flows();
  });
  // Another set's link, and a flow of no bytes, do not touch it.
  network_.StartFlow(std::vector<LinkId>{nic1}, 1'000'000, [] {});
  network_.StartFlow(std::vector<LinkId>{nic0}, 0, [] {});
  EXPECT_EQ(fired, 0);
  EXPECT_FALSE(network_.LinksFree(set));  // the watch holds it
  network_.StartFlow(std::vector<LinkId>{nic0}, 1'000'000, [] {});
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(active_when_fired, 1u);  // before the touching flow was added
  network_.StartFlow(std::vector<LinkId>{nic0}, 1'000'000, [] {});
  EXPECT_EQ(fired, 1);  // it ended when it fired
  engine_.Run();
  EXPECT_TRUE(network_.LinksFree(set));
}

TEST_F(FlowNetworkTest, AWatchFiresWhenAWatchedLinksFactorChangesAndNeverOnceUnwatched) {
  const LinkId nic0 = topology_.nic_tx(0);
  const std::vector<LinkId> set_links = {nic0};
  const FlowNetwork::LinkSetId set = network_.FollowLinks(set_links);
  int fired = 0;
  network_.Watch(set, [&] { ++fired; });
  network_.SetLinkBandwidthFactor(topology_.nic_tx(1), 0.5);
  EXPECT_EQ(fired, 0);
  network_.SetLinkBandwidthFactor(nic0, 0.5);
  EXPECT_EQ(fired, 1);
  const FlowNetwork::WatchId w = network_.Watch(set, [&] { ++fired; });
  network_.Unwatch(w);
  EXPECT_TRUE(network_.LinksFree(set));
  network_.StartFlow(std::vector<LinkId>{nic0}, 1'000'000, [] {});
  network_.SetLinkBandwidthFactor(nic0, 1.0);
  engine_.Run();
  EXPECT_EQ(fired, 1);
}

TEST_F(FlowNetworkTest, AWatchHoldsEverySetThatSharesALinkWithItsOwn) {
  const LinkId nic0 = topology_.nic_tx(0);
  const LinkId nic1 = topology_.nic_tx(1);
  const LinkId nic2 = topology_.nic_tx(2);
  const std::vector<LinkId> a_links = {nic0, nic1};
  const std::vector<LinkId> b_links = {nic1};
  const std::vector<LinkId> c_links = {nic2};
  const FlowNetwork::LinkSetId a = network_.FollowLinks(a_links);
  const FlowNetwork::LinkSetId b = network_.FollowLinks(b_links);
  const FlowNetwork::LinkSetId c = network_.FollowLinks(c_links);
  network_.Watch(a, [] {});
  EXPECT_FALSE(network_.LinksFree(b));
  EXPECT_TRUE(network_.LinksFree(c));
}

TEST_F(FlowNetworkTest, ANetworkFollowsAtMostItsLimitOfLinkSets) {
  const std::vector<LinkId> links = {topology_.nic_tx(0)};
  for (int i = 0; i < FlowNetwork::kMaxLinkSets; ++i) EXPECT_EQ(network_.FollowLinks(links), i);
  EXPECT_EQ(network_.FollowLinks(links), -1);
}

// Lone flows drain outside the solve at the rate the solve gives them alone, and join it when
// touched: on the mixed workload above every completion matches the full solve's to within the
// engine's tick (the full solve re-rounds a drain time to the nanosecond at each of its
// recomputations, a lone flow once), while hundreds of flows never enter the solve.
TEST(FlowNetworkLoneTest, LoneFlowsGiveTheFullSolvesCompletionsWithinTheEnginesTick) {
  uint64_t local = 0, lone = 0, none = 0;
  std::vector<size_t> order_with, order_without;
  const std::vector<int64_t> with =
      MixedCompletions(true, &local, /*lone=*/true, &lone, &order_with);
  const std::vector<int64_t> without =
      MixedCompletions(true, &local, /*lone=*/false, &none, &order_without);
  // The callbacks run in the same order too (same-instant ones in start order).
  EXPECT_EQ(order_with, order_without);
  EXPECT_EQ(none, 0u);
  EXPECT_GT(lone, 100u);
  int64_t worst = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    ASSERT_EQ(with[i] < 0, without[i] < 0) << "flow " << i;
    worst = std::max(worst, std::abs(with[i] - without[i]));
  }
  EXPECT_LE(worst, 3) << "ns";
}

// A path's first flow goes through the solve (its rate alone is not known yet); the next flow on
// it, alone, drains lone. Half-way a second flow starts on its link: from then on they share it
// (half each), so the lone flow's second half takes twice as long: T/2 + T in all.
TEST_F(FlowNetworkTest, ALoneFlowTouchedHalfWaySharesItsLinkFromThen) {
  const LinkId link = topology_.nvlink_up(0);
  const std::vector<LinkId> path = {link};
  const uint64_t bytes = 360'000'000;
  const double T = double(bytes) / Bw(link);
  network_.StartFlow(
      path, bytes, [] {}, sim::Time::Zero(), false);
  engine_.Run();
  EXPECT_EQ(network_.lone_flows(), 0u);
  const sim::Time t0 = engine_.now();
  sim::Time done;
  const FlowId a = network_.StartFlow(
      path, bytes, [&] { done = engine_.now(); }, sim::Time::Zero(), false);
  EXPECT_EQ(network_.lone_flows(), 1u);
  EXPECT_DOUBLE_EQ(network_.FlowRate(a), Bw(link));
  engine_.RunUntil(t0 + sim::Time::FromSeconds(T / 2));
  network_.StartFlow(
      path, 4 * bytes, [] {}, sim::Time::Zero(), false);
  engine_.RunUntil(engine_.now() + sim::Time::Micros(1));
  EXPECT_DOUBLE_EQ(network_.FlowRate(a), Bw(link) / 2);
  engine_.Run();
  EXPECT_NEAR((done - t0).seconds(), T / 2 + T, 2e-9);
  EXPECT_EQ(network_.active_flows(), 0u);
}

// A lone flow whose link slows to a quarter half-way drains its second half at a quarter of
// the rate (T/2 + 2T), and a followed set counts it while it is lone.
TEST_F(FlowNetworkTest, ALoneFlowFollowsItsLinksCapacityAndCountsOnFollowedSets) {
  const LinkId link = topology_.nic_tx(0);
  const std::vector<LinkId> path = {link};
  const uint64_t bytes = 48'000'000;
  const double T = double(bytes) / Bw(link);
  const FlowNetwork::LinkSetId set = network_.FollowLinks(path);
  network_.StartFlow(
      path, bytes, [] {}, sim::Time::Zero(), false);
  engine_.Run();
  const sim::Time t0 = engine_.now();
  sim::Time done;
  network_.StartFlow(
      path, bytes, [&] { done = engine_.now(); }, sim::Time::Zero(), false);
  EXPECT_EQ(network_.lone_flows(), 1u);
  EXPECT_FALSE(network_.LinksFree(set));
  engine_.RunUntil(t0 + sim::Time::FromSeconds(T / 2));
  network_.SetLinkBandwidthFactor(link, 0.25);
  engine_.Run();
  EXPECT_NEAR((done - t0).seconds(), T / 2 + 2 * T, 2e-9);
  EXPECT_TRUE(network_.LinksFree(set));
}

// Lone and solved flows that drain at one instant call back in start order: b and d share a
// link (solved, half rate each, half the bytes of a and c, which drain lone).
TEST_F(FlowNetworkTest, LoneAndSolvedFlowsOfOneInstantCallBackInStartOrder) {
  const std::vector<LinkId> p0 = {topology_.nvlink_up(0)}, p1 = {topology_.nvlink_up(1)},
                            p2 = {topology_.nvlink_up(2)};
  for (const auto* p : {&p0, &p1, &p2}) network_.StartFlow(*p, 1000, [] {});
  engine_.Run();
  std::string order;
  auto note = [&order](char c) { return [&order, c] { order += c; }; };
  const uint64_t big = 3'600'000;
  network_.StartFlow(p0, big, note('a'), sim::Time::Zero(), false);
  network_.StartFlow(p1, big / 2, note('b'), sim::Time::Zero(), false);
  network_.StartFlow(p2, big, note('c'), sim::Time::Zero(), false);
  network_.StartFlow(p1, big / 2, note('d'), sim::Time::Zero(), false);
  EXPECT_EQ(network_.lone_flows(), 3u);  // a, b and c; b joined the solve when d started
  engine_.Run();
  EXPECT_EQ(order, "abcd");
}

}  // namespace
}  // namespace trainsim::comm
