// Folded exchanges (step/pipeline_traffic.cc): a CP ring exchange that runs as one event while
// nothing else crosses its links, and as flows from where its run alone is once something does,
// must give the step that running every exchange as flows gives. The reference is the same
// simulation with StepConfig::fold_exchanges off.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "comm/topology.h"
#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
namespace {

StepConfig ContextParallel(int tp, int cp, int pp, int dp, int nodes, int seq_len = 4096) {
  StepConfig c;
  c.model.num_layers = 8;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.seq_len = seq_len;
  c.model.vocab = 32000;
  c.model.flash_attention = true;
  c.parallel.tp = tp;
  c.parallel.sequence_parallel = tp > 1;
  c.parallel.cp = cp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.global_batch = 8 * dp;
  c.parallel.overlap_p2p = true;
  c.gpu = H100Sxm();
  c.topology = DgxH100(nodes);
  return c;
}

struct Pair {
  StepResult folded, flows;
};

Pair RunBoth(StepConfig c, const ClusterState& state = {}) {
  c.fold_exchanges = true;
  Result<StepResult> folded = SimulateStep(c, state);
  c.fold_exchanges = false;
  Result<StepResult> flows = SimulateStep(c, state);
  EXPECT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_TRUE(flows.ok()) << flows.status().message();
  if (!folded.ok() || !flows.ok()) return {};
  return {*folded, *flows};
}

void ExpectSameStep(const Pair& p) {
  // A folded run that is stopped resumes with its flows' bytes left rounded to whole bytes, and
  // drains to the engine's nanosecond: each costs at most a few ns, and a step has a few
  // hundred such runs on its critical path here.
  const double tol = 1e-7 + 1e-9 * p.flows.time_s;
  EXPECT_NEAR(p.folded.time_s, p.flows.time_s, tol);
  const StepBreakdown& a = p.folded.breakdown;
  const StepBreakdown& b = p.flows.breakdown;
  EXPECT_NEAR(a.compute_s, b.compute_s, tol);
  EXPECT_NEAR(a.exposed_cp_comm_s, b.exposed_cp_comm_s, tol);
  EXPECT_NEAR(a.exposed_dp_comm_s, b.exposed_dp_comm_s, tol);
  EXPECT_NEAR(a.pp_wait_s, b.pp_wait_s, tol);
  EXPECT_NEAR(a.bubble_s, b.bubble_s, tol);
  EXPECT_NEAR(a.total_s(), b.total_s(), tol);
}

TEST(FoldedExchangesTest, RingsAloneOnTheirLinksRunAsOneEventEachAndGiveTheSameStep) {
  // CP 8 in one node, no pipeline: between the CP group's gradient reductions nothing else
  // crosses the ring's NVLinks, so nearly every exchange folds.
  const Pair p = RunBoth(ContextParallel(1, 8, 1, 1, 1, 2048));
  ExpectSameStep(p);
  EXPECT_GT(p.flows.breakdown.exposed_cp_comm_s, 0);
  // A folded exchange starts no flows (8 members) and costs one event instead of its start,
  // drains, deliveries and latency.
  EXPECT_LT(double(p.folded.flows), 0.5 * double(p.flows.flows));
  EXPECT_LT(double(p.folded.events), 0.75 * double(p.flows.events));
}

// Interleaved stages over 16 nodes, CP 4 of TP 4 across two nodes: the ring's network hops
// share NICs with the pipeline sends (which the interleaved schedule sends at other instants
// than the ring's) and with the DP × CP reductions, so folds are stopped part-way: during an
// exposed phase's latency, during its run, and during a hidden share's run.
StepConfig Interleaved(int tp, int cp) {
  StepConfig c = ContextParallel(tp, cp, 4, 128 / (tp * cp * 4), 16, 2048);
  c.model.num_layers = 8;
  c.parallel.virtual_stages = 2;
  c.parallel.schedule = parallelism::PipelineSchedule::kInterleaved1F1B;
  c.parallel.global_batch = 16 * c.parallel.dp;
  return c;
}

TEST(FoldedExchangesTest, RingsThatPipelineSendsAndBucketsCrossGiveTheSameStep) {
  for (int zero : {1, 2}) {
    for (bool full : {false, true}) {
      StepConfig c = Interleaved(4, 4);
      c.parallel.zero_stage = zero;
      c.parallel.recompute = full ? parallelism::Recompute::kFull : parallelism::Recompute::kNone;
      SCOPED_TRACE("ZeRO-" + std::to_string(zero) + (full ? ", full recompute" : ""));
      const Pair p = RunBoth(c);
      ExpectSameStep(p);
      EXPECT_GT(p.flows.breakdown.exposed_cp_comm_s, 0);
      EXPECT_LT(p.folded.events, p.flows.events);
    }
  }
}

TEST(FoldedExchangesTest, EightRankRingsAcrossFourNodesGiveTheSameStep) {
  const Pair p = RunBoth(Interleaved(2, 8));
  ExpectSameStep(p);
  EXPECT_LT(p.folded.flows, p.flows.flows);
}

TEST(FoldedExchangesTest, ARingWhoseClassSplitsAloneRunsAsFlowsAndGivesTheSameStep) {
  // One NIC of the ring at a tenth of its rate: alone, the ring's network class splits (its
  // members get different rates), so its run alone cannot be resumed as one byte count and
  // the group's exchanges run as flows; the others still fold.
  StepConfig c = Interleaved(4, 4);
  Result<comm::Topology> topo = comm::Topology::Build(c.topology);
  ASSERT_TRUE(topo.ok());
  ClusterState s;
  s.links.push_back({topo->nic_tx(4), 0.1});
  const Pair p = RunBoth(c, s);
  ExpectSameStep(p);
  EXPECT_LT(p.folded.flows, p.flows.flows);
}

TEST(FoldedExchangesTest, MoreGroupsThanTheNetworkFollowsGiveTheSameStep) {
  // PP 72: 72 executors, each with its own CP group; the folds follow 32 link sets at most
  // (half of FlowNetwork::kMaxLinkSets, the rest for the gradient trains), so the last groups
  // run their exchanges as flows.
  StepConfig c = ContextParallel(1, 2, 72, 1, 18);
  c.model.num_layers = 72;
  c.model.hidden = 1024;
  c.model.heads = 8;
  c.model.seq_len = 8192;
  c.parallel.global_batch = 72;
  const Pair p = RunBoth(c);
  ExpectSameStep(p);
  EXPECT_LT(p.folded.flows, p.flows.flows);
}

TEST(FoldedExchangesTest, AStepExtendedFromShortStepsEqualsTheWholeStepAsFlows) {
  // 128 micro-batches per pipeline: the steady-state extension runs short steps with folded
  // exchanges; it must give the step that every micro-batch and every exchange as flows gives.
  StepConfig c = Interleaved(4, 4);
  c.parallel.global_batch = 128 * c.parallel.dp;
  Result<StepResult> folded = SimulateStep(c);
  c.fold_exchanges = false;
  c.steady_state_extrapolation = false;
  Result<StepResult> flows = SimulateStep(c);
  ASSERT_TRUE(folded.ok() && flows.ok());
  EXPECT_NE(folded->simulation_note.find("extended"), std::string::npos) << folded->simulation_note;
  EXPECT_NEAR(folded->time_s, flows->time_s, 1e-7 + 1e-9 * flows->time_s);
  EXPECT_NEAR(folded->breakdown.exposed_cp_comm_s, flows->breakdown.exposed_cp_comm_s,
              1e-7 + 1e-9 * flows->time_s);
  EXPECT_LT(folded->events, flows->events / 2);
}

TEST(FoldedExchangesTest, ATracedStepShowsTheSameSlowedExchangesAsFlows) {
  // A folded exchange that other traffic stops and slows is traced as the flows' one is.
  StepConfig c = Interleaved(4, 4);
  SimulateOptions trace;
  trace.record_trace = true;
  Result<StepResult> folded = SimulateStep(c, {}, trace);
  c.fold_exchanges = false;
  Result<StepResult> flows = SimulateStep(c, {}, trace);
  ASSERT_TRUE(folded.ok() && flows.ok());
  auto slowed = [](const StepResult& r) {
    size_t n = 0;
    for (const TraceSlice& s : r.trace) n += s.name == "k/v exchange slowed by other traffic";
    return n;
  };
  EXPECT_GT(slowed(*flows), 0u);
  EXPECT_EQ(slowed(*folded), slowed(*flows));
  EXPECT_LT(folded->flows, flows->flows);
  EXPECT_NEAR(folded->time_s, flows->time_s, 1e-6);
}

}  // namespace
}  // namespace trainsim::step
