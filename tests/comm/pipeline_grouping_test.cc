// Closing a pipeline's fill and drain (comm/schedule.h, "Closing"): the pipelined tree and
// broadcast expansions start one flow per transfer for each run of one-wave segments instead of
// one per wave, and take the same time as the closed form and the per-segment expansion on an
// idle network (within 0.1%); under contention both stay within the bound schedule.h states.
#include <cstdint>
#include <vector>

#include "comm/broadcast.h"
#include "comm/collective.h"
#include "comm/flow_network.h"
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

struct Expansion {
  double seconds = 0;
  uint64_t flows = 0;
};

// Runs the schedule alone, or with `setup` applied to the network first (a degraded link, a
// competing flow), and returns when its last wave and chain latency are done.
template <typename Setup>
Expansion Expand(const Topology& t, const TransferSchedule& s, Protocol protocol,
                 SegmentGrouping grouping, Setup setup) {
  sim::Engine engine;
  FlowNetwork network(&engine, &t);
  setup(&network);
  sim::Time done = sim::Time::Max();
  RunPreparedSchedule(&network, PrepareSchedule(t, s, protocol, grouping),
                      [&] { done = engine.now(); });
  engine.Run();
  return {done.seconds(), network.flows_started()};
}
Expansion Expand(const Topology& t, const TransferSchedule& s, Protocol protocol,
                 SegmentGrouping grouping) {
  return Expand(t, s, protocol, grouping, [](FlowNetwork*) {});
}

TEST(PipelineGroupingTest, ClosedTreeTakesTheClosedFormTimeOnAnIdleNetwork) {
  // n = 8 (one node: a chain), 64 (8 nodes), 512 (64 nodes); 64 KiB (one chunk per tree: every
  // transfer in one wave, nothing to close), 16 MiB (a few chunks: fill and drain only) and
  // 1 GiB (128 chunks: fill, a steady segment, drain).
  const Topology t = Dgx(64);
  for (int n : {8, 64, 512}) {
    for (uint64_t bytes : {uint64_t{64} << 10, uint64_t{16} << 20, uint64_t{1} << 30}) {
      const TransferSchedule s = BuildTreeSchedule(t, FirstGpus(n), bytes);
      const double closed_form = EvaluateSchedule(t, s, {Protocol::kSimple}).front();
      const Expansion grouped = Expand(t, s, Protocol::kSimple, SegmentGrouping::kClosePipelines);
      const Expansion segments = Expand(t, s, Protocol::kSimple, SegmentGrouping::kSegments);
      EXPECT_NEAR(grouped.seconds, closed_form, 1e-3 * closed_form) << n << " " << bytes;
      EXPECT_NEAR(grouped.seconds, segments.seconds, 1e-3 * segments.seconds) << n << " " << bytes;
      // Fill, steady state and drain start each transfer at most once.
      EXPECT_LE(grouped.flows, 3 * s.transfers.size()) << n << " " << bytes;
      EXPECT_LE(grouped.flows, segments.flows) << n << " " << bytes;
    }
  }
}

TEST(PipelineGroupingTest, ClosedTreeStartsEachTransferOncePerRunNotPerWave) {
  // 512 GPUs, 1 GiB: 2 trees × 8 channels × 2·511 edges = 16,352 transfers of 128 chunks, whose
  // fill and drain take ~25 waves each; per wave that is ~50 × 16,352 flows, closed three runs.
  const Topology t = Dgx(64);
  const TransferSchedule s = BuildTreeSchedule(t, FirstGpus(512), uint64_t{1} << 30);
  ASSERT_EQ(s.transfers.size(), 16352u);
  const auto closed = PrepareSchedule(t, s, Protocol::kSimple);
  EXPECT_EQ(closed->segments.size(), 3u);  // fill, steady state, drain
  const auto per_segment = PrepareSchedule(t, s, Protocol::kSimple, SegmentGrouping::kSegments);
  auto flows = [](const PreparedSchedule& p) {
    size_t n = 0;
    for (const auto& seg : p.segments) n += seg.transfers.size();
    return n;
  };
  EXPECT_LE(flows(*closed), 3 * s.transfers.size());
  EXPECT_GT(flows(*per_segment), 10 * s.transfers.size());
  EXPECT_EQ(Expand(t, s, Protocol::kSimple, SegmentGrouping::kClosePipelines).flows,
            flows(*closed));
}

TEST(PipelineGroupingTest, EveryProtocolAndTheBroadcastChainAgreeOnAnIdleNetwork) {
  const Topology t = Dgx(8);
  const TransferSchedule tree = BuildTreeSchedule(t, FirstGpus(64), uint64_t{256} << 20);
  for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    const double closed_form = EvaluateSchedule(t, tree, {p}).front();
    const Expansion grouped = Expand(t, tree, p, SegmentGrouping::kClosePipelines);
    EXPECT_NEAR(grouped.seconds, closed_form, 1e-3 * closed_form) << ProtocolName(p);
  }
  // Broadcast: a chain from the root, chunk j crossing hop h at wave j + h.
  const TransferSchedule chain = BuildBroadcastSchedule(t, FirstGpus(64), uint64_t{1} << 30);
  const double closed_form = EvaluateSchedule(t, chain, {Protocol::kSimple}).front();
  const Expansion grouped = Expand(t, chain, Protocol::kSimple, SegmentGrouping::kClosePipelines);
  const Expansion segments = Expand(t, chain, Protocol::kSimple, SegmentGrouping::kSegments);
  EXPECT_NEAR(grouped.seconds, closed_form, 1e-3 * closed_form);
  EXPECT_LT(grouped.flows, segments.flows);
}

TEST(PipelineGroupingTest, TransfersOfDifferentBytesOnOneLinkAreNotClosed) {
  // A: GPU 0 → 1, 1 MiB per wave, waves [0, 2); C: GPU 2 → 3, 1 MiB, [1, 3); B: GPU 0 → 1,
  // 2 MiB, [2, 3). Three one-wave segments {A}, {A, C}, {C, B}; closed, A and B would share
  // GPU 0's NVLink with different bytes, which is not exact, so the run stays per segment:
  // 1 + 2 + 2 flows.
  const Topology t = Dgx(1);
  TransferSchedule s;
  s.transfers.push_back({0, 1, Leg::kGpuToGpu, uint64_t{1} << 20, 0, 2});
  s.transfers.push_back({2, 3, Leg::kGpuToGpu, uint64_t{1} << 20, 1, 2});
  s.transfers.push_back({0, 1, Leg::kGpuToGpu, uint64_t{2} << 20, 2, 1});
  const Expansion grouped = Expand(t, s, Protocol::kSimple, SegmentGrouping::kClosePipelines);
  EXPECT_EQ(grouped.flows, 5u);
  const double closed_form = EvaluateSchedule(t, s, {Protocol::kSimple}).front();
  EXPECT_NEAR(grouped.seconds, closed_form, 1e-3 * closed_form);
}

TEST(PipelineGroupingTest, UnderContentionBothExpansionsStayWithinTheStatedBound) {
  // 64 GPUs on 8 nodes, 1 GiB. (a) Node 0's NIC 0 at φ = 1/2 of its bandwidth: every flow keeps
  // at least half of its idle share, so the collective takes between T and T / φ = 2T, T its
  // idle time, grouped or not. (b) A 4 GiB send GPU 0 → GPU 8 sharing rail 0's NICs: on any link
  // that carries k ≥ 1 of the tree's flows the competitor leaves them at least k / (k + 1) ≥ 1/2
  // of the capacity (max-min), so again between T and 2T.
  const Topology t = Dgx(8);
  const TransferSchedule s = BuildTreeSchedule(t, FirstGpus(64), uint64_t{1} << 30);
  const double idle = EvaluateSchedule(t, s, {Protocol::kSimple}).front();
  const auto degrade = [&t](FlowNetwork* network) {
    network->SetLinkBandwidthFactor(t.nic_tx(t.global_nic_of(0)), 0.5);
  };
  std::vector<LinkId> path;
  t.RouteInto(0, 8, &path);
  const auto compete = [&path](FlowNetwork* network) {
    network->StartFlow(path, uint64_t{4} << 30, [] {});
  };
  for (SegmentGrouping g : {SegmentGrouping::kClosePipelines, SegmentGrouping::kSegments}) {
    const double degraded = Expand(t, s, Protocol::kSimple, g, degrade).seconds;
    EXPECT_GE(degraded, idle * (1 - 1e-9));
    EXPECT_LE(degraded, 2 * idle * (1 + 1e-9));
    const double contended = Expand(t, s, Protocol::kSimple, g, compete).seconds;
    EXPECT_GE(contended, idle * (1 - 1e-9));
    EXPECT_LE(contended, 2 * idle * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace trainsim::comm
