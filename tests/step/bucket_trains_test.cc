// Bucket trains (step/gradient_sync.h): queued gradient buckets that run as one event while
// nothing else crosses their links must give the step that running every bucket as flows
// gives. The reference is the same simulation with StepConfig::bucket_trains off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "comm/topology.h"
#include "step/gradient_sync.h"
#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
namespace {

// ZeRO-2 with PP 2 and CP 2 over 4 nodes: every backward reduce-scatters its buckets over the
// DP × CP group (both nodes of a stage), whose NICs the CP ring's K/V passes and the pipeline
// sends use too, so trains run and are stopped part-way.
StepConfig ZeroTwoWithPipelineAndContext() {
  StepConfig c;
  c.model.num_layers = 8;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.seq_len = 8192;
  c.model.vocab = 32000;
  c.model.flash_attention = true;
  c.parallel.tp = 2;
  c.parallel.cp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 4;
  c.parallel.global_batch = 32;
  c.parallel.zero_stage = 2;
  c.parallel.dp_bucket_bytes = 4e6;
  c.gpu = H100Sxm();
  c.topology = DgxH100(4);
  return c;
}

size_t Count(const StepResult& r, const std::string& name) {
  return size_t(std::count_if(r.trace.begin(), r.trace.end(),
                              [&](const TraceSlice& s) { return s.name == name; }));
}

void ExpectSameStep(const StepResult& trains, const StepResult& flows) {
  // Exact up to a partly moved bucket's bytes rounded to whole bytes: ns, not more.
  EXPECT_NEAR(trains.time_s, flows.time_s, 1e-9 * flows.time_s);
  const StepBreakdown& a = trains.breakdown;
  const StepBreakdown& b = flows.breakdown;
  EXPECT_NEAR(a.compute_s, b.compute_s, 1e-6);
  EXPECT_NEAR(a.exposed_dp_comm_s, b.exposed_dp_comm_s, 1e-6);
  EXPECT_NEAR(a.exposed_cp_comm_s, b.exposed_cp_comm_s, 1e-6);
  EXPECT_NEAR(a.pp_wait_s, b.pp_wait_s, 1e-6);
  EXPECT_NEAR(a.bubble_s, b.bubble_s, 1e-6);
  EXPECT_NEAR(a.total_s(), b.total_s(), 1e-6);
}

// The O(1) count of ready buckets must equal counting them one by one, as the step did before
// (the last i with BucketReadyNs(i) <= now), for any pass, instant and starting count: long and
// short passes, one bucket or thousands, instants on a bucket's nanosecond and either side.
TEST(BucketTrainsTest, BucketsReadyByCountsAsTheOneByOneLoopDoes) {
  std::mt19937_64 rng(20261204);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 20000; ++trial) {
    BucketPass p;
    p.start_ns = int64_t(unit(rng) * 1e12);
    p.pass_s = trial % 97 == 0 ? 0.0 : std::pow(10.0, -6 + 8 * unit(rng));
    p.count = 1 + int(std::pow(unit(rng), 3) * 5000);
    int64_t now = p.start_ns + int64_t(unit(rng) * 1.1 * p.pass_s * 1e9);
    if (trial % 3 == 0) {  // on a bucket's own nanosecond, or one before it
      now = BucketReadyNs(p, 1 + int(unit(rng) * p.count)) - (trial % 2);
    }
    int ready = 0;
    while (ready < p.count && BucketReadyNs(p, ready + 1) <= now) ++ready;
    const int from = int(unit(rng) * (ready + 1));  // what an earlier look had settled
    ASSERT_EQ(BucketsReadyBy(p, from, now), ready)
        << "trial " << trial << ": start " << p.start_ns << " pass " << p.pass_s << " count "
        << p.count << " now " << now << " from " << from;
  }
}

TEST(BucketTrainsTest, ZeroTwoWithPipelineAndContextGivesTheStepEveryBucketAsFlowsGives) {
  StepConfig c = ZeroTwoWithPipelineAndContext();
  Result<StepResult> trains = SimulateStep(c);
  c.bucket_trains = false;
  Result<StepResult> flows = SimulateStep(c);
  ASSERT_TRUE(trains.ok()) << trains.status().message();
  ASSERT_TRUE(flows.ok()) << flows.status().message();
  ExpectSameStep(*trains, *flows);
  // The trains ran: fewer flows and events for the same step.
  EXPECT_LT(trains->flows, flows->flows);
  EXPECT_LT(trains->events, flows->events);
}

TEST(BucketTrainsTest, ATracedStepShowsEveryBucketOfATrain) {
  StepConfig c = ZeroTwoWithPipelineAndContext();
  SimulateOptions trace;
  trace.record_trace = true;
  Result<StepResult> trains = SimulateStep(c, {}, trace);
  c.bucket_trains = false;
  Result<StepResult> flows = SimulateStep(c, {}, trace);
  ASSERT_TRUE(trains.ok()) << trains.status().message();
  ASSERT_TRUE(flows.ok()) << flows.status().message();
  ExpectSameStep(*trains, *flows);
  const size_t reduced = Count(*flows, "dp grad reduce");
  EXPECT_GT(reduced, 0u);
  EXPECT_EQ(Count(*trains, "dp grad reduce"), reduced);
}

TEST(BucketTrainsTest, ADegradedNicOnTheBucketsPathGivesTheSameStepAsFlows) {
  // A NIC of the stage's group at a quarter of its rate: the bucket's class splits alone, so
  // the stage's buckets run as flows; the step must still equal the reference.
  StepConfig c = ZeroTwoWithPipelineAndContext();
  Result<comm::Topology> topo = comm::Topology::Build(c.topology);
  ASSERT_TRUE(topo.ok());
  ClusterState s;
  s.links.push_back({topo->nic_tx(0), 0.25});
  Result<StepResult> trains = SimulateStep(c, s);
  c.bucket_trains = false;
  Result<StepResult> flows = SimulateStep(c, s);
  ASSERT_TRUE(trains.ok()) << trains.status().message();
  ASSERT_TRUE(flows.ok()) << flows.status().message();
  ExpectSameStep(*trains, *flows);
}

}  // namespace
}  // namespace trainsim::step
