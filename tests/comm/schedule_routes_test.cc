// A schedule routed once (RouteSchedule) evaluates and prepares exactly as one routed by each call
// (comm/schedule.h); the closed form of links crossed by transfers of several wire sizes; and the
// premise that lets a collective's choice skip re-pricing LL at its bandwidth ceiling: scaling
// LL's wire bytes by s scales its drain by at least s.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/broadcast.h"
#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/ring.h"
#include "comm/schedule.h"
#include "comm/topology.h"
#include "comm/tree.h"
#include "gtest/gtest.h"
#include "sim/engine.h"

namespace trainsim::comm {
namespace {

Topology Dgx(int nodes) {
  TopologySpec spec;
  spec.nodes = nodes;
  return Topology::Build(spec).value();
}

const std::vector<Protocol> kProtocols = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

std::vector<TransferSchedule> Schedules(const Topology& t) {
  return {BuildTreeSchedule(t, FirstGpus(64), uint64_t{1} << 30),
          BuildTreeSchedule(t, FirstGpus(24), 3 << 20),
          BuildRingSchedule(t, Op::kAllReduce, FirstGpus(64), uint64_t{1} << 28),
          BuildRingSchedule(t, Op::kReduceScatter, FirstGpus(16), 12345)};
}

TEST(ScheduleRoutesTest, RoutedOnceEvaluatesAsRoutedByTheCallToTheBit) {
  const Topology t = Dgx(8);
  // Capacities other than the topology's: one NIC's transmit link at a third, one NVLink down.
  sim::Engine engine;
  FlowNetwork network(&engine, &t);
  std::vector<double> capacity = network.LinkCapacities();
  capacity[static_cast<size_t>(t.nic_tx(0))] /= 3;
  capacity[static_cast<size_t>(t.nvlink_up(5))] = 0;
  for (const TransferSchedule& s : Schedules(t)) {
    const std::shared_ptr<ScheduleRoutes> routes = RouteSchedule(t, s);
    EXPECT_EQ(EvaluateSchedule(t, s, kProtocols, nullptr, routes.get()),
              EvaluateSchedule(t, s, kProtocols));
    EXPECT_EQ(EvaluateSchedule(t, s, kProtocols, &capacity, routes.get()),
              EvaluateSchedule(t, s, kProtocols, &capacity));
  }
}

TEST(ScheduleRoutesTest, RoutedOncePreparesTheSameSegmentsPathsAndBytes) {
  const Topology t = Dgx(8);
  for (const TransferSchedule& s : Schedules(t)) {
    const auto own = PrepareSchedule(t, s, Protocol::kSimple);
    std::shared_ptr<ScheduleRoutes> shared = RouteSchedule(t, s);
    const auto kept = RouteSchedule(t, s);  // a second owner: the paths are copied, not moved
    std::shared_ptr<ScheduleRoutes> copied = kept;
    const auto moved =
        PrepareSchedule(t, s, Protocol::kSimple, SegmentGrouping::kClosePipelines, shared);
    const auto from_copy =
        PrepareSchedule(t, s, Protocol::kSimple, SegmentGrouping::kClosePipelines, copied);
    for (const auto& p : {moved, from_copy}) {
      EXPECT_EQ(p->path_links, own->path_links);
      EXPECT_EQ(p->path_begin, own->path_begin);
      EXPECT_EQ(p->wire_bytes, own->wire_bytes);
      ASSERT_EQ(p->segments.size(), own->segments.size());
      for (size_t i = 0; i < own->segments.size(); ++i) {
        EXPECT_EQ(p->segments[i].transfers, own->segments[i].transfers);
        EXPECT_EQ(p->segments[i].waves, own->segments[i].waves);
        EXPECT_EQ(p->segments[i].scale, own->segments[i].scale);
        EXPECT_EQ(p->segments[i].singles, own->segments[i].singles);
        EXPECT_EQ(p->segments[i].classes.size(), own->segments[i].classes.size());
      }
    }
    // The routes another owner holds are left whole for it.
    EXPECT_EQ(EvaluateSchedule(t, s, kProtocols, nullptr, kept.get()),
              EvaluateSchedule(t, s, kProtocols));
  }
}

TEST(ScheduleRoutesTest, ALinkCrossedByTwoWireSizesDrainsAtTheLargerUntilItLeaves) {
  // GPU 0 → 1: A carries 1 MiB a wave for waves [0, 2), B 2 MiB in wave 0 (outside the
  // invariant that one wave's transfers on a link carry one size, which the closed form still
  // prices: the slowest transfer on the most loaded link). Wave 0: two transfers on the link,
  // the larger drains in 2 · d(2 MiB); wave 1: A alone, d(1 MiB). d(x) is one transfer of x
  // alone for one wave, so the expected time is 2 · d(2 MiB) + d(1 MiB) past the base latency.
  const Topology t = Dgx(1);
  auto one = [&](uint64_t bytes) {
    TransferSchedule s;
    s.transfers.push_back({0, 1, Leg::kGpuToGpu, bytes, 0, 1});
    return s;
  };
  TransferSchedule none;
  TransferSchedule mixed;
  mixed.transfers.push_back({0, 1, Leg::kGpuToGpu, uint64_t{1} << 20, 0, 2});
  mixed.transfers.push_back({0, 1, Leg::kGpuToGpu, uint64_t{2} << 20, 0, 1});
  const std::vector<double> base = EvaluateSchedule(t, none, kProtocols);
  const std::vector<double> d1 = EvaluateSchedule(t, one(uint64_t{1} << 20), kProtocols);
  const std::vector<double> d2 = EvaluateSchedule(t, one(uint64_t{2} << 20), kProtocols);
  const std::vector<double> got = EvaluateSchedule(t, mixed, kProtocols);
  for (size_t k = 0; k < kProtocols.size(); ++k) {
    const double expected = base[k] + 2 * (d2[k] - base[k]) + (d1[k] - base[k]);
    EXPECT_NEAR(got[k], expected, 1e-12 * expected) << "protocol " << k;
  }
  // The same with B arriving in wave 1 instead: wave 0 A alone, wave 1 both.
  mixed.transfers[1].first_wave = 1;
  const std::vector<double> late = EvaluateSchedule(t, mixed, kProtocols);
  for (size_t k = 0; k < kProtocols.size(); ++k) {
    const double expected = base[k] + (d1[k] - base[k]) + 2 * (d2[k] - base[k]);
    EXPECT_NEAR(late[k], expected, 1e-12 * expected) << "protocol " << k;
  }
}

TEST(ScheduleRoutesTest, ScalingLlWireBytesScalesItsDrainByAtLeastTheFactor) {
  // Why the choice may skip re-pricing LL at its ceiling where even floor_s loses
  // (collective.cc, ApplyLlCeiling, which runs for Ring and Tree): with the schedule's
  // efficiency at 1, LL's drain with its wire bytes scaled by s (rounded up per transfer) is at
  // least s times the unscaled drain, for every op the two algorithms run, down to payloads of
  // a few bytes over several nodes.
  const Topology t = Dgx(16);
  for (int n : {8, 64, 128}) {
    for (uint64_t bytes :
         {uint64_t{1}, uint64_t{7}, uint64_t{999}, uint64_t{1} << 20, uint64_t{1} << 30}) {
      const std::vector<TransferSchedule> schedules = {
          BuildTreeSchedule(t, FirstGpus(n), bytes),
          BuildRingSchedule(t, Op::kAllReduce, FirstGpus(n), bytes),
          BuildRingSchedule(t, Op::kReduceScatter, FirstGpus(n), bytes),
          BuildRingSchedule(t, Op::kAllGather, FirstGpus(n), bytes),
          BuildBroadcastSchedule(t, FirstGpus(n), bytes)};
      for (TransferSchedule s : schedules) {
        ASSERT_EQ(s.efficiency, 1.0);  // the premise's condition (ApplyLlCeiling checks it)
        TransferSchedule empty;        // the base latency alone
        empty.family = s.family;
        empty.launches = s.launches;
        const double base = EvaluateSchedule(t, empty, {Protocol::kLL}).front();
        const double latency =
            s.chain_latency_s ? s.chain_latency_s(NcclCosts(s.family, Protocol::kLL)) : 0.0;
        const double total = EvaluateSchedule(t, s, {Protocol::kLL}).front();
        const double drain = total - base - latency;
        for (double scale : {1.0001, 1.5, 3.7}) {
          s.ll_wire_scale = scale;
          const double scaled_total = EvaluateSchedule(t, s, {Protocol::kLL}).front();
          const double scaled = scaled_total - base - latency;
          // (The drains are differences of totals that the latencies dominate for a few bytes,
          // each summed over up to 254 waves: their rounding allowed, 1e-13 of the total.)
          EXPECT_GE(scaled, scale * drain - 1e-13 * scaled_total)
              << "family " << int(s.family) << " over " << n << ", " << bytes << " B, scale "
              << scale;
        }
      }
    }
  }
}

TEST(ScheduleRoutesTest, ClosedFormIsTheSlowestTransferOfEachWaveOnRandomMixedSchedules) {
  // Transfers of four payload sizes, starting and ending at random waves (some never active),
  // between random GPUs of two nodes, so that links carry one, two or more wire sizes at once
  // and return to one. Each wave by brute force: per link the transfers crossing it and the
  // largest wire size among them, wire / (capacity / load); the wave lasts its largest.
  const Topology t = Dgx(2);
  const uint64_t sizes[] = {uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{2} << 20,
                            uint64_t{3} << 20};
  uint64_t rng = 12345;
  auto next = [&rng](uint64_t n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (rng >> 33) % n;
  };
  for (int trial = 0; trial < 200; ++trial) {
    TransferSchedule s;
    const int count = 1 + int(next(12));
    for (int i = 0; i < count; ++i) {
      const int src = int(next(16));
      int dst = int(next(15));
      if (dst >= src) ++dst;
      s.transfers.push_back(
          {src, dst, Leg::kGpuToGpu, sizes[next(4)], int64_t(next(6)), int64_t(next(5))});
    }
    TransferSchedule empty;
    const std::vector<double> base = EvaluateSchedule(t, empty, kProtocols);
    const std::vector<double> got = EvaluateSchedule(t, s, kProtocols);
    for (size_t k = 0; k < kProtocols.size(); ++k) {
      double total = base[k];
      for (int64_t w = 0; w < s.total_waves(); ++w) {
        std::vector<int> load(size_t(t.num_links()), 0);
        std::vector<double> wire(size_t(t.num_links()), 0.0);
        std::vector<LinkId> path;
        for (const PipelinedTransfer& x : s.transfers) {
          if (w < x.first_wave || w >= x.first_wave + x.num_waves) continue;
          TransferPath(t, x, &path);
          const double bytes = double(TransferWireBytes(t, s, x, kProtocols[k]));
          for (LinkId l : path) {
            ++load[size_t(l)];
            wire[size_t(l)] = std::max(wire[size_t(l)], bytes);
          }
        }
        double wave = 0;
        for (size_t l = 0; l < load.size(); ++l) {
          if (load[l] == 0) continue;
          wave = std::max(wave, wire[l] / (t.link(LinkId(l)).bandwidth_Bps / load[l]));
        }
        total += wave;
      }
      EXPECT_NEAR(got[k], total, 1e-12 * total) << "trial " << trial << ", protocol " << k;
    }
  }
}

}  // namespace
}  // namespace trainsim::comm
