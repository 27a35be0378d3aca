// Compute slowed by overlapped collectives: NCCL's channel counts (step/comm_sm_share.h), the
// closed form of a collective beside compute, and hand-worked step timelines.
#include <gtest/gtest.h>

#include <string>

#include "step/comm_sm_share.h"
#include "step/pass_costs.h"
#include "step/step_simulation.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

NcclCollectiveShape Shape(GpuArch arch, comm::Op op, comm::Algo algo, int ranks, int nodes,
                          double bytes) {
  NcclCollectiveShape s;
  s.arch = arch;
  s.op = op;
  s.algo = algo;
  s.ranks = ranks;
  s.nodes = nodes;
  s.nics_per_node = 8;
  s.bytes = bytes;
  return s;
}

TEST(NcclCtasTest, LargeCollectivesUseNcclsDefaultChannelsPerGpuAndAlgorithm) {
  const double big = 256e6;
  // One DGX A100: 12 NVLink3 links, 24 channels; one DGX H100: the 32-channel cap.
  EXPECT_EQ(NcclCollectiveCtas(
                Shape(GpuArch::kAmpere, comm::Op::kAllReduce, comm::Algo::kRing, 8, 1, big), {}),
            24);
  EXPECT_EQ(NcclCollectiveCtas(
                Shape(GpuArch::kHopper, comm::Op::kAllReduce, comm::Algo::kRing, 8, 1, big), {}),
            32);
  // Across nodes with 8 NICs each: one search channel per NIC, doubled.
  EXPECT_EQ(
      NcclCollectiveCtas(
          Shape(GpuArch::kHopper, comm::Op::kReduceScatter, comm::Algo::kRing, 64, 8, big), {}),
      16);
  // NVLS runs NCCL_NVLS_NCHANNELS = 16.
  EXPECT_EQ(NcclCollectiveCtas(
                Shape(GpuArch::kHopper, comm::Op::kAllReduce, comm::Algo::kNvls, 8, 1, big), {}),
            16);
}

TEST(NcclCtasTest, SmallMessagesRunOnFewerChannelsAsNcclsEnqueueShrinksThem) {
  // Simple protocol: a channel per 512 threads × 64 bytes = 32 KiB of the per-rank buffer.
  NcclCollectiveShape s =
      Shape(GpuArch::kAmpere, comm::Op::kAllReduce, comm::Algo::kRing, 8, 1, 4 * 32768.0);
  EXPECT_EQ(NcclCollectiveCtas(s, {}), 4);
  s.bytes = 1000;
  EXPECT_EQ(NcclCollectiveCtas(s, {}), 1);
  // All-gather sizes count the gathered buffer: 8 ranks × 4 channels' worth each.
  s.op = comm::Op::kAllGather;
  s.bytes = 8 * 4 * 32768.0;
  EXPECT_EQ(NcclCollectiveCtas(s, {}), 4);
}

TEST(NcclCtasTest, ScenarioLimitsBoundTheChannels) {
  const NcclCollectiveShape s =
      Shape(GpuArch::kHopper, comm::Op::kAllReduce, comm::Algo::kRing, 64, 8, 256e6);
  EXPECT_EQ(NcclCollectiveCtas(s, {0, 4}), 4);
  EXPECT_EQ(NcclCollectiveCtas(s, {24, 0}), 24);
  EXPECT_EQ(NcclCollectiveCtas(s, {27, 27}), 27);
  // A send/recv to a peer on another node: NCCL_NCHANNELS_PER_NET_PEER = 2; on NVLink all of
  // the p2p channels.
  EXPECT_EQ(NcclP2pCtas(GpuArch::kHopper, true, 8, {}), 2);
  EXPECT_EQ(NcclP2pCtas(GpuArch::kAmpere, false, 8, {}), 24);
}

TEST(SmShareTest, IsCtasOverSmsAndLeavesTheComputeOneSm) {
  EXPECT_DOUBLE_EQ(SmShare(27, 108), 0.25);
  EXPECT_DOUBLE_EQ(SmShare(16, 132), 16.0 / 132);
  EXPECT_DOUBLE_EQ(SmShare(500, 100), 0.99);
  EXPECT_DOUBLE_EQ(SmShare(0, 108), 0.0);
}

TEST(OverlapBesideTest, ACollectiveShorterThanTheComputeCostsShareTimesItsTime) {
  // 2 s of compute, a 1 s collective on a quarter of the SMs: 0.25 s of work lost while it
  // runs, made up at full rate after it.
  const OverlapCost o = OverlapBeside(1.0, 2.0, 0.25);
  EXPECT_DOUBLE_EQ(o.slowed, 0.25);
  EXPECT_DOUBLE_EQ(o.exposed, 0.0);
}

TEST(OverlapBesideTest, ACollectiveOutlastingTheComputeStretchesAllOfIt) {
  // 1 s of compute at 3/4 of the rate takes 4/3 s, all under a 3 s collective: the compute
  // gains s/(1 − s) of itself and the collective stays exposed beyond that.
  const OverlapCost o = OverlapBeside(3.0, 1.0, 0.25);
  EXPECT_NEAR(o.slowed, 1.0 / 3, 1e-12);
  EXPECT_NEAR(o.exposed, 3.0 - 4.0 / 3, 1e-12);
  // Without a share nothing changes: the exposed part is what exceeds the compute.
  const OverlapCost free = OverlapBeside(3.0, 1.0, 0.0);
  EXPECT_DOUBLE_EQ(free.slowed, 0.0);
  EXPECT_DOUBLE_EQ(free.exposed, 2.0);
}

// 16 A100 on two DGX nodes, data-parallel only, one micro-batch: the gradient buckets of the
// only backward reduce over the network while it runs.
StepConfig TwoNodeDp() {
  StepConfig c;
  c.model.num_layers = 8;
  c.model.hidden = 2048;
  c.model.heads = 16;
  c.model.seq_len = 1024;
  c.model.vocab = 256;
  c.parallel.tp = 1;
  c.parallel.pp = 1;
  c.parallel.dp = 16;
  c.parallel.global_batch = 16;
  c.topology.nodes = 2;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 300;
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 200;
  c.topology.pcie_GBps = 32;
  // Two buckets: the first made ready half-way through the backward, the last at its end.
  c.parallel.dp_bucket_bytes = 0.5001 * StageParams(c, 0).dense * c.memory.grad_bytes_per_param;
  return c;
}

// The same config with every collective on `ctas` channels (NCCL_MIN_CTAS = NCCL_MAX_CTAS).
StepConfig WithCtas(StepConfig c, int ctas) {
  c.nccl_min_ctas = c.nccl_max_ctas = ctas;
  return c;
}

double FirstSliceSeconds(const StepResult& r, const std::string& name) {
  for (const TraceSlice& s : r.trace) {
    if (s.name == name) return double(s.duration_ns) * 1e-9;
  }
  return -1;
}

TEST(CommOverlapStepTest, ABucketUnderTheBackwardSlowsItByShareTimesTheBucketTime) {
  const StepConfig c = TwoNodeDp();
  ASSERT_EQ(PlanGradientBuckets(c, 0, 1).count, 2);
  SimulateOptions trace;
  trace.record_trace = true;
  // One channel of 108 SMs against 27: the reduction takes 1/108 or a quarter of the GPU.
  Result<StepResult> base = SimulateStep(WithCtas(c, 1), {}, trace);
  Result<StepResult> slowed = SimulateStep(WithCtas(c, 27), {}, trace);
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(slowed.ok()) << slowed.status().message();
  ASSERT_EQ(base->breakdown.host_overhead_s, 0.0);  // the backward computes all its time
  const double bucket_s = FirstSliceSeconds(*base, "dp grad reduce");
  const double backward_s = FirstSliceSeconds(*base, "B0");
  ASSERT_GT(bucket_s, 0);
  ASSERT_LT(bucket_s, 0.5 * backward_s) << "the first bucket must end under the backward";
  // The backward loses s of its work while the bucket runs and makes it up at full rate
  // after: the step grows by s × the bucket's time (ns rounding of a few events).
  EXPECT_NEAR(base->breakdown.compute_slowed_s, bucket_s / 108, 5e-9);
  EXPECT_NEAR(slowed->breakdown.compute_slowed_s, 0.25 * bucket_s, 5e-9);
  EXPECT_NEAR(slowed->time_s - base->time_s, (0.25 - 1.0 / 108) * bucket_s, 5e-9);
  EXPECT_NEAR(slowed->breakdown.total_s(), slowed->time_s, 1e-9 * slowed->time_s);
  EXPECT_DOUBLE_EQ(slowed->breakdown.compute_s, base->breakdown.compute_s);
}

// With nothing overlapping compute, the collectives' channel count changes no time: 1 and 64
// CTAs give the same step and no slowed compute.
void ExpectChannelsSlowNothing(const StepConfig& c) {
  Result<StepResult> base = SimulateStep(WithCtas(c, 1));
  Result<StepResult> r = SimulateStep(WithCtas(c, 64));
  ASSERT_TRUE(base.ok() && r.ok());
  EXPECT_EQ(r->time_s, base->time_s);
  EXPECT_EQ(r->breakdown.compute_slowed_s, 0.0);
  EXPECT_EQ(base->breakdown.compute_slowed_s, 0.0);
}

TEST(CommOverlapStepTest, BlockingDataParallelReductionSlowsNothing) {
  StepConfig c = TwoNodeDp();
  c.parallel.overlap_dp = false;
  ExpectChannelsSlowNothing(c);
}

TEST(CommOverlapStepTest, WithoutDataParallelCommunicationNothingIsSlowed) {
  StepConfig c = TwoNodeDp();
  c.topology.nodes = 1;
  c.topology.gpus_per_node = 1;
  c.topology.nics_per_node = 1;
  c.parallel.dp = 1;
  c.parallel.global_batch = 2;
  ExpectChannelsSlowNothing(c);
}

TEST(CommOverlapStepTest, OverlappedParameterGatherSlowsTheNextForwardAndAddsUp) {
  StepConfig c = TwoNodeDp();
  c.parallel.zero_stage = 1;
  c.parallel.overlap_param_gather = true;
  c.parallel.global_batch = 64;  // four micro-batches
  Result<StepResult> base = SimulateStep(WithCtas(c, 1));
  Result<StepResult> r = SimulateStep(WithCtas(c, 64));
  ASSERT_TRUE(base.ok() && r.ok());
  EXPECT_GT(r->breakdown.compute_slowed_s, 0.0);
  EXPECT_GT(r->time_s, base->time_s);
  for (const StepBreakdown& b : r->stage_breakdown) {
    EXPECT_NEAR(b.total_s(), r->time_s, 1e-9 * r->time_s);
    EXPECT_GE(b.exposed_dp_comm_s, -1e-12);
  }
}

}  // namespace
}  // namespace trainsim::step
