// Context parallelism's K/V exchange and expert parallelism's all-to-alls on the flow network:
// alone on their links they last what the closed form gives; beside other traffic on the same
// NICs, or over a degraded NIC, they take longer. Expectations come from the closed form
// (ChunkCosts) and from sharing links, not from the program's output.
#include <gtest/gtest.h>

#include <set>

#include "comm/topology.h"
#include "parallelism/layout.h"
#include "step/flex_dispatch.h"
#include "step/pass_costs.h"
#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

// A MoE model (16 experts, top 2) on two DGX H100 nodes, TP 2 × DP 8 with EP 16: the EP group
// (the stage's TP × DP ranks read as the expert grid) is all 16 GPUs, so its all-to-alls cross
// the network.
StepConfig MoeOverTwoNodes() {
  StepConfig c;
  c.model.num_layers = 4;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.seq_len = 2048;
  c.model.vocab = 256;
  c.model.flash_attention = true;
  c.model.swiglu = true;
  c.model.ffn_hidden = 14336;
  c.model.moe.experts = 16;
  c.model.moe.top_k = 2;
  c.parallel.tp = 2;
  c.parallel.dp = 8;
  c.parallel.ep = 16;
  c.parallel.global_batch = 16;
  c.gpu = H100Sxm();
  c.topology.nodes = 2;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 450;
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 400;
  c.topology.pcie_GBps = 64;
  return c;
}

// The closed form's exposed CP and EP seconds of one step: every micro-batch's forward and
// backward of every chunk (PP 1: one chunk).
struct Exposed {
  double cp = 0, ep = 0;
};
Exposed ClosedFormExposed(const StepConfig& c) {
  Result<comm::Topology> topo = comm::Topology::Build(c.topology);
  EXPECT_TRUE(topo.ok());
  const Layout layout(c.parallel, topo->gpus_per_node());
  CalibratedTpTimer tp(&*topo, layout.TpGroup(0), nullptr);
  CalibratedTpTimer cp(&*topo, layout.CpGroup(0), nullptr);
  CalibratedTpTimer ep(&*topo, layout.EpGroup(0), nullptr);
  CalibratedTpTimer ep_node(&*topo, NvlinkPeers(*topo, layout.EpGroup(0)), nullptr);
  const GroupTimers timers{&tp, c.parallel.cp > 1 ? &cp : nullptr,
                           c.parallel.ep > 1 ? &ep : nullptr, nullptr,
                           c.parallel.ep > 1 ? &ep_node : nullptr};
  Result<std::vector<ChunkCost>> costs = ChunkCosts(c, GemmCalibrationOf(c), timers);
  EXPECT_TRUE(costs.ok());
  Exposed x;
  for (const ChunkCost& k : *costs) {
    x.cp += k.fwd_cp_s + k.bwd_cp_s;
    x.ep += k.fwd_ep_s + k.bwd_ep_s;
  }
  x.cp *= double(c.parallel.num_micro_batches());
  x.ep *= double(c.parallel.num_micro_batches());
  return x;
}
double ClosedFormExposedEp(const StepConfig& c) { return ClosedFormExposed(c).ep; }
// One engine tick (1 ns) per pass of the step: how far the rounding of each pass's end can move
// a breakdown row.
double PassTicks(const StepConfig& c) { return 2e-9 * double(c.parallel.num_micro_batches()); }

// A dense GPT on two DGX H100 nodes with TP 8 × CP 2: the CP group is GPU 0 and GPU 8, one per
// node, so its K/V exchange crosses the network. A short sequence (2,048 tokens per CP rank)
// makes the attention shorter than the ring's step, so part of the ring is exposed.
StepConfig CpOverTwoNodes(parallelism::CpComm comm) {
  StepConfig c = MoeOverTwoNodes();
  c.model.moe = {};
  c.model.seq_len = 4096;
  c.parallel.ep = 1;
  c.parallel.tp = 8;
  c.parallel.cp = 2;
  c.parallel.dp = 1;
  c.parallel.global_batch = 4;
  c.parallel.cp_comm = comm;
  c.parallel.sequence_parallel = true;
  c.parallel.overlap_dp = false;
  return c;
}

TEST(LayerTrafficTest, TheCpRingAloneOnTheNetworkLastsTheClosedFormsExposedTime) {
  const StepConfig c = CpOverTwoNodes(parallelism::CpComm::kP2P);
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double closed = ClosedFormExposed(c).cp;
  ASSERT_GT(closed, 0);
  // Each pass's exchange ends on the engine's 1 ns tick.
  EXPECT_NEAR(r->breakdown.exposed_cp_comm_s, closed, PassTicks(c));
}

TEST(LayerTrafficTest, ADegradedNicSlowsTheCpAllGather) {
  // GPU 8's NIC at a quarter of its rate: the K/V all-gather between GPU 0 and GPU 8 (its
  // bandwidth part most of its time) takes up to 4x as long.
  const StepConfig c = CpOverTwoNodes(parallelism::CpComm::kAllGather);
  Result<comm::Topology> topo = comm::Topology::Build(c.topology);
  ASSERT_TRUE(topo.ok());
  ClusterState s;
  s.links.push_back({topo->nic_tx(8), 0.25});
  s.links.push_back({topo->nic_rx(8), 0.25});
  Result<StepResult> r = SimulateStep(c, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double closed = ClosedFormExposed(c).cp;
  ASSERT_GT(closed, 0);
  EXPECT_GT(r->breakdown.exposed_cp_comm_s, 2 * closed);
  EXPECT_LT(r->breakdown.exposed_cp_comm_s, 4 * closed);
  EXPECT_NEAR(r->breakdown.total_s(), r->time_s, 1e-6 * r->time_s);
}

TEST(LayerTrafficTest, TheEpGroupOfTheTestLayoutSpansBothNodes) {
  const StepConfig c = MoeOverTwoNodes();
  const Layout layout(c.parallel, 8);
  std::set<int> nodes;
  for (int g : layout.EpGroup(0)) nodes.insert(g / 8);
  EXPECT_EQ(nodes.size(), 2u);
}

TEST(LayerTrafficTest, AllToAllsAloneOnTheNetworkLastTheClosedFormsExposedTime) {
  // No gradient reduction beside the passes (it runs after the last backward) and one
  // pipeline stage: nothing else is on the network while the all-to-alls run.
  StepConfig c = MoeOverTwoNodes();
  c.parallel.overlap_dp = false;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double closed = ClosedFormExposedEp(c);
  ASSERT_GT(closed, 0);
  EXPECT_NEAR(r->breakdown.exposed_ep_comm_s, closed, PassTicks(c));
  // The flows ran: far more than the step's DP reduction alone starts.
  EXPECT_GT(r->flows, 2 * c.parallel.num_micro_batches() * 8 * 7);
}

TEST(LayerTrafficTest, GradientReductionsOnTheSameNicsSlowTheAllToAlls) {
  // ZeRO-2 reduces gradient buckets during every backward pass, over the DP group (GPUs 0, 2,
  // …, 14: both nodes), whose NICs the EP group's all-to-alls use too. With small buckets,
  // some become ready while the pass's all-to-alls run (the last part of the backward), and
  // their reduce-scatters share the NICs with them: the all-to-alls take longer than the
  // closed form, which has the network alone.
  StepConfig c = MoeOverTwoNodes();
  c.parallel.zero_stage = 2;
  c.parallel.dp_bucket_bytes = 4e6;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double closed = ClosedFormExposedEp(c);
  EXPECT_GT(r->breakdown.exposed_ep_comm_s, closed * 1.01);
  // The excess is accounted: the breakdown still adds up to the step.
  EXPECT_NEAR(r->breakdown.total_s(), r->time_s, 1e-6 * r->time_s);
}

TEST(LayerTrafficTest, ADegradedNicInTheEpGroupSlowsItsAllToAlls) {
  // The closed form prices the all-to-all on the idle topology. On the flows, GPU 3's NIC at a
  // quarter of its rate carries GPU 3's eight shares for the other node at 12.5 instead of
  // 50 GB/s, and every rank's all-to-all waits for them: the bandwidth part, most of the
  // closed form's time at these sizes, takes ~4x as long.
  StepConfig c = MoeOverTwoNodes();
  c.parallel.overlap_dp = false;
  Result<comm::Topology> topo = comm::Topology::Build(c.topology);
  ASSERT_TRUE(topo.ok());
  const int nic = 3 / (c.topology.gpus_per_node / c.topology.nics_per_node);
  ClusterState s;
  s.links.push_back({topo->nic_tx(nic), 0.25});
  s.links.push_back({topo->nic_rx(nic), 0.25});
  Result<StepResult> r = SimulateStep(c, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double closed = ClosedFormExposedEp(c);
  EXPECT_GT(r->breakdown.exposed_ep_comm_s, 2 * closed);
  EXPECT_LT(r->breakdown.exposed_ep_comm_s, 4 * closed);
  EXPECT_NEAR(r->breakdown.total_s(), r->time_s, 1e-6 * r->time_s);
}

TEST(LayerTrafficTest, ASlowReplicaHoldsTheAllToAllsOfTheReplicasInItsEpGroup) {
  // GPU 3 (DP rank 1) runs its kernels 1.5x slower. Its replica and a healthy one are
  // simulated; they share the EP group, and an all-to-all starts only when every rank has
  // reached it, so GPU 0's replica waits for the slow one at every MoE layer's exchange: its
  // exposed EP time grows by about the slow replica's extra compute before each exchange.
  StepConfig c = MoeOverTwoNodes();
  c.parallel.overlap_dp = false;
  ClusterState s;
  s.gpu_slowdown.push_back({3, 1.5});
  Result<StepResult> r = SimulateStep(c, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->simulated_replicas, 2);
  const double closed = ClosedFormExposedEp(c);
  const double extra_compute = 0.5 * (r->breakdown.compute_s + r->breakdown.compute_slowed_s);
  EXPECT_NEAR(r->breakdown.exposed_ep_comm_s, closed + extra_compute, 0.05 * extra_compute);
  EXPECT_NEAR(r->breakdown.total_s(), r->time_s, 1e-6 * r->time_s);
}

TEST(LayerTrafficTest, OverlappedAllToAllsStillLoadTheNetwork) {
  // With Megatron-Core's combined 1F1B overlap part of the traffic hides under compute; the
  // hidden part still runs on the network, so the step starts as many flows as without the
  // overlap (the same bytes, split in two all-to-alls per pass).
  StepConfig c = MoeOverTwoNodes();
  c.parallel.overlap_dp = false;
  Result<StepResult> exposed = SimulateStep(c);
  c.parallel.moe_a2a_overlap = true;
  Result<StepResult> overlapped = SimulateStep(c);
  ASSERT_TRUE(exposed.ok() && overlapped.ok());
  EXPECT_LT(overlapped->breakdown.exposed_ep_comm_s, exposed->breakdown.exposed_ep_comm_s);
  EXPECT_GE(overlapped->flows, exposed->flows);
}

}  // namespace
}  // namespace trainsim::step
