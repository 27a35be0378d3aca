#include "step/step_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "comm/collective.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

// A GPT small enough to simulate quickly, with a tiny vocabulary so that every pipeline stage
// does the same work (the embedding and logits are negligible).
StepConfig Small(int nodes, int tp, int pp, int dp, int64_t global_batch) {
  StepConfig c;
  c.model.num_layers = 8;
  c.model.hidden = 2048;
  c.model.heads = 16;
  c.model.seq_len = 1024;
  c.model.vocab = 256;
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.global_batch = global_batch;
  c.topology = DgxA100(nodes);
  return c;
}

void ExpectBreakdownAddsUp(const StepResult& r) {
  for (const StepBreakdown& b : r.stage_breakdown) {
    EXPECT_NEAR(b.total_s(), r.time_s, 1e-6 * r.time_s);
    EXPECT_GE(b.compute_s, 0);
    EXPECT_GE(b.bubble_s, -1e-12);
    EXPECT_GE(b.pp_wait_s, -1e-12);
    EXPECT_GE(b.exposed_dp_comm_s, -1e-12);
    EXPECT_GE(b.other_s, -1e-12);
  }
}

TEST(StepSimulationTest, SingleGpuStepIsForwardBackwardAndOptimizer) {
  StepConfig c = Small(1, 1, 1, 1, 1);
  c.topology.gpus_per_node = 1;
  c.topology.nics_per_node = 1;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TensorSplit one{1, false};
  double expected = 0;
  for (const KernelOp& op : LayerOps(c.model, one, 1)) {
    expected += c.model.num_layers * (OpTimeSeconds(c.gpu, c.compute, op, true) +
                                      OpTimeSeconds(c.gpu, c.compute, op, false));
  }
  for (const auto& ops : {EmbeddingOps(c.model, one, 1), HeadOps(c.model, one, 1)}) {
    for (const KernelOp& op : ops) {
      expected +=
          OpTimeSeconds(c.gpu, c.compute, op, true) + OpTimeSeconds(c.gpu, c.compute, op, false);
    }
  }
  const double compute = expected;
  expected += OptimizerTimeSeconds(c.gpu, c.compute, ParametersPerGpu(c.model, c.parallel, 0));
  EXPECT_NEAR(r->time_s, expected, 1e-6);  // ns rounding per event
  EXPECT_NEAR(r->breakdown.compute_s, compute, 1e-6);
  EXPECT_DOUBLE_EQ(r->breakdown.bubble_s, 0);
  EXPECT_DOUBLE_EQ(r->breakdown.exposed_dp_comm_s, 0);
  ExpectBreakdownAddsUp(*r);
}

TEST(StepSimulationTest, OneF1BBubbleMatchesClosedForm) {
  // p stages, m micro-batches of equal work: step ≈ (m + p − 1)·(t_F + t_B) + optimizer + the
  // point-to-point transfers on the critical path (small here: NVLink inside one node).
  const int p = 4;
  const int64_t m = 16;
  StepConfig c = Small(1, 1, p, 1, m);
  c.topology.gpus_per_node = 4;
  c.topology.nics_per_node = 4;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const StepBreakdown& last = r->stage_breakdown[p - 1];
  const double per_mb = last.compute_s / m;  // t_F + t_B of one stage
  const double ideal = (m + p - 1) * per_mb;
  EXPECT_GT(r->time_s, ideal);
  EXPECT_LT(r->time_s, ideal * 1.03 + r->breakdown.optimizer_s);
  // Every stage idles (p − 1)·(t_F + t_B) in fill and drain.
  for (const StepBreakdown& b : r->stage_breakdown) {
    // (the transfers and the slightly heavier last stage add a few percent)
    EXPECT_NEAR(b.bubble_s + b.pp_wait_s, (p - 1) * per_mb, 0.1 * (p - 1) * per_mb);
  }
  ExpectBreakdownAddsUp(*r);

  // GPipe has the same bubble; interleaving with v chunks divides it by v — with sends that
  // overlap compute (with blocking sends interleaving also pays v times the transfers; see
  // BlockingPipelineSendsCostTheSenderEveryTransfer).
  c.parallel.overlap_p2p = true;
  Result<StepResult> r_overlap = SimulateStep(c);
  ASSERT_TRUE(r_overlap.ok());
  c.parallel.schedule = PipelineSchedule::kGpipe;
  Result<StepResult> g = SimulateStep(c);
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(g->time_s, r->time_s, 0.03 * r->time_s);
  c.parallel.schedule = PipelineSchedule::kInterleaved1F1B;
  c.parallel.virtual_stages = 2;
  Result<StepResult> in = SimulateStep(c);
  ASSERT_TRUE(in.ok()) << in.status().message();
  const double bubble_1f1b =
      r_overlap->stage_breakdown[0].bubble_s + r_overlap->stage_breakdown[0].pp_wait_s;
  const double bubble_inter = in->stage_breakdown[0].bubble_s + in->stage_breakdown[0].pp_wait_s;
  EXPECT_NEAR(bubble_inter, bubble_1f1b / 2, 0.1 * bubble_1f1b);
  ExpectBreakdownAddsUp(*in);
}

TEST(StepSimulationTest, BlockingPipelineSendsCostTheSenderEveryTransfer) {
  // TP 8 × PP 4 × 2 chunks per rank (interleaved: Megatron-Core overlaps pipeline sends only
  // there) on four DGX A100 nodes: each virtual stage sends every micro-batch's activation on
  // and its gradient back over the NICs (1/8 of mb·s·h·2 bytes per TP rank with
  // scatter/gather), each taking t_send. Both chunks of rank 1 (virtual stages 1 and 5) are
  // inner ones and send twice per micro-batch: 2·v sends per micro-batch. Blocking (Megatron's
  // _communicate), each send holds the rank for at least t_send, so it is blocked ≥ 2·v·m·t_send
  // in all; overlapped, the rank never waits on its own sends.
  const int p = 4, v = 2;
  const int64_t m = 16;
  StepConfig c = Small(4, 8, p, 1, m);
  c.model.seq_len = 2048;
  c.parallel.virtual_stages = v;
  c.parallel.schedule = PipelineSchedule::kInterleaved1F1B;
  c.parallel.overlap_p2p = true;
  Result<StepResult> overlapped = SimulateStep(c);
  ASSERT_TRUE(overlapped.ok()) << overlapped.status().message();
  c.parallel.overlap_p2p = false;
  Result<StepResult> blocking = SimulateStep(c);
  ASSERT_TRUE(blocking.ok()) << blocking.status().message();
  const comm::Topology topo = comm::Topology::Build(c.topology).value();
  const double bytes = 1.0 * 2048 * 2048 * 2 / 8;
  const double t_send = comm::EstimateCollective(
                            topo, {comm::Op::kSendRecv, comm::Algo::kAuto, {0, 8}, uint64_t(bytes)})
                            ->time.seconds();
  EXPECT_GE(blocking->stage_breakdown[1].pp_wait_s, 2 * v * m * t_send);
  EXPECT_LT(overlapped->stage_breakdown[1].pp_wait_s, 2 * v * m * t_send);
  EXPECT_GT(blocking->time_s, overlapped->time_s);
  ExpectBreakdownAddsUp(*blocking);
}

TEST(StepSimulationTest, TensorParallelismAcrossNodesIsOptInAndPaysTheNetwork) {
  // TP 16 on two DGX A100 nodes: refused unless tp_across_nodes (the message names the
  // setting). Allowed, TP 16 does twice TP 8 × DP 2's micro-batches per replica (same GPUs and
  // batch) with all-reduces of the same message, each moving 2·15/16 instead of 2·7/8 of it and
  // crossing the NICs (8 rails of 25 GB/s, below NVLink's bus bandwidth): more than twice the
  // exposed TP communication.
  StepConfig c = Small(2, 16, 1, 1, 8);
  Result<StepResult> refused = SimulateStep(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("tp_across_nodes"), std::string::npos)
      << refused.status().message();
  c.parallel.tp_across_nodes = true;
  Result<StepResult> across = SimulateStep(c);
  ASSERT_TRUE(across.ok()) << across.status().message();
  StepConfig in_node = Small(2, 8, 1, 2, 8);
  Result<StepResult> tp8 = SimulateStep(in_node);
  ASSERT_TRUE(tp8.ok()) << tp8.status().message();
  EXPECT_GT(across->breakdown.exposed_tp_comm_s, 2 * tp8->breakdown.exposed_tp_comm_s);
  ExpectBreakdownAddsUp(*across);
  // Not a whole number of nodes per group: refused.
  StepConfig odd = Small(3, 12, 1, 2, 8);
  odd.model.heads = 12;
  odd.model.hidden = 3072;
  odd.parallel.tp_across_nodes = true;
  Result<StepResult> r = SimulateStep(odd);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multiple of the 8 GPUs per node"), std::string::npos)
      << r.status().message();
}

TEST(StepSimulationTest, SlowGpuSlowsEveryReplica) {
  StepConfig c = Small(2, 2, 2, 4, 32);
  Result<StepResult> healthy = SimulateStep(c);
  ASSERT_TRUE(healthy.ok()) << healthy.status().message();
  EXPECT_EQ(healthy->simulated_replicas, 1);
  ClusterState state;
  state.gpu_slowdown.push_back({13, 1.5});  // tp 1, dp 2, pp 1
  Result<StepResult> slow = SimulateStep(c, state);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_EQ(slow->simulated_replicas, 2);
  EXPECT_GT(slow->time_s, 1.2 * healthy->time_s);
  // GPU 0 is in a healthy replica: it waits for the slow one in the gradient reduction.
  EXPECT_GT(slow->breakdown.exposed_dp_comm_s + slow->breakdown.bubble_s,
            healthy->breakdown.exposed_dp_comm_s + healthy->breakdown.bubble_s);
  EXPECT_NEAR(slow->breakdown.compute_s, healthy->breakdown.compute_s, 1e-6);
  ExpectBreakdownAddsUp(*slow);
}

TEST(StepSimulationTest, DegradedNicOfAnyTensorParallelRankSlowsTheStepAlike) {
  // TP 8 × PP 2 × DP 4 on 8 nodes: node 1 holds stage 0 of replica 1, its 8 GPUs on rails 0–7.
  // Each TP rank reduces its gradient shard over its own rail, so a NIC at a quarter of its
  // speed slows the stage's DP reduction the same whichever rank it serves (by symmetry).
  StepConfig c = Small(8, 8, 2, 4, 32);
  c.parallel.overlap_dp = false;
  const comm::Topology topo = comm::Topology::Build(c.topology).value();
  Result<StepResult> healthy = SimulateStep(c);
  ASSERT_TRUE(healthy.ok()) << healthy.status().message();
  auto with_nic = [&](int global_nic) {
    ClusterState s;
    s.links.push_back({topo.nic_tx(global_nic), 0.25});
    s.links.push_back({topo.nic_rx(global_nic), 0.25});
    Result<StepResult> r = SimulateStep(c, s);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const StepResult rank0 = with_nic(8 + 0), rank3 = with_nic(8 + 3);
  EXPECT_GT(rank0.time_s, healthy->time_s + 0.5 * healthy->breakdown.exposed_dp_comm_s);
  EXPECT_NEAR(rank3.time_s, rank0.time_s, 1e-9);
  // Replica 1 (on the degraded node) and one healthy representative, not all four.
  EXPECT_EQ(rank3.simulated_replicas, 2);
  ExpectBreakdownAddsUp(rank3);

  // A degraded leaf up-link may carry any replica's traffic: all are simulated.
  ClusterState leaf;
  leaf.links.push_back({topo.leaf_up(0), 0.5});
  Result<StepResult> r = SimulateStep(c, leaf);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->simulated_replicas, 4);
}

TEST(StepSimulationTest, ReplicaWhosePxnRouteCrossesADegradedNicIsSimulated) {
  // TP 1 × PP 2 × DP 12 on 3 nodes: stage 0 is GPUs 0–11, stage 1 GPUs 12–23. Replica 1 sends
  // from GPU 1 (node 0) to GPU 13 (node 1, local 5); PXN hands it over NVLink to GPU 5 and out
  // through node 0's NIC 5. With that NIC at 5% its sends crawl, though no GPU of replica 1 owns
  // the NIC: replicas 0 (healthy), 1 (route) and 5 (owns NIC 5) are simulated, and the step is
  // slower than the healthy one.
  StepConfig c = Small(3, 1, 2, 12, 48);
  c.model.seq_len = 2048;
  const comm::Topology topo = comm::Topology::Build(c.topology).value();
  Result<StepResult> healthy = SimulateStep(c);
  ASSERT_TRUE(healthy.ok()) << healthy.status().message();
  ClusterState s;
  s.links.push_back({topo.nic_tx(5), 0.05});
  Result<StepResult> r = SimulateStep(c, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->simulated_replicas, 3);
  EXPECT_GT(r->time_s, 1.05 * healthy->time_s);
  ExpectBreakdownAddsUp(*r);
}

TEST(StepSimulationTest, DataParallelReductionOverManyNodesRunsInClosedFormAndAgreesWithFlows) {
  // TP 8 × DP 8 on 8 nodes: the gradient all-reduce spans 8 nodes. Nothing else is on the
  // network while it runs (no pipeline), so the closed form and the flows agree (comm holds
  // them within 1% on an idle network).
  StepConfig c = Small(8, 8, 1, 8, 64);
  c.parallel.overlap_dp = false;
  // Alone on the network, the buckets would run as one train (BucketTrainsTest): flows here.
  c.bucket_trains = false;
  Result<StepResult> flows = SimulateStep(c);
  ASSERT_TRUE(flows.ok()) << flows.status().message();
  EXPECT_EQ(flows->closed_form_collectives, 0);
  c.flow_collective_max_nodes = 4;
  Result<StepResult> closed = SimulateStep(c);
  ASSERT_TRUE(closed.ok()) << closed.status().message();
  EXPECT_EQ(closed->closed_form_collectives, 1);
  EXPECT_EQ(closed->closed_form_max_nodes, 8);
  EXPECT_NE(closed->simulation_note.find("over up to 8 nodes timed in closed form"),
            std::string::npos)
      << closed->simulation_note;
  EXPECT_GT(flows->breakdown.exposed_dp_comm_s, 0.05 * flows->time_s);
  EXPECT_NEAR(closed->breakdown.exposed_dp_comm_s, flows->breakdown.exposed_dp_comm_s,
              0.01 * flows->breakdown.exposed_dp_comm_s);
  EXPECT_LT(closed->flows, flows->flows);
  ExpectBreakdownAddsUp(*closed);
}

TEST(StepSimulationTest, OverlappedGradientReductionHidesBehindBackward) {
  // One micro-batch per replica: the reduction can hide behind that backward only.
  StepConfig c = Small(2, 1, 1, 16, 16);
  c.parallel.overlap_dp = false;
  Result<StepResult> serial = SimulateStep(c);
  ASSERT_TRUE(serial.ok()) << serial.status().message();
  c.parallel.overlap_dp = true;
  Result<StepResult> overlap = SimulateStep(c);
  ASSERT_TRUE(overlap.ok());
  EXPECT_GT(serial->breakdown.exposed_dp_comm_s, 0);
  EXPECT_LT(overlap->breakdown.exposed_dp_comm_s, serial->breakdown.exposed_dp_comm_s);
  EXPECT_LT(overlap->time_s, serial->time_s);
  // At most the backward (≈ 2/3 of compute) can be hidden.
  EXPECT_GT(overlap->breakdown.exposed_dp_comm_s,
            serial->breakdown.exposed_dp_comm_s - overlap->breakdown.compute_s);
  ExpectBreakdownAddsUp(*serial);
  ExpectBreakdownAddsUp(*overlap);
}

TEST(StepSimulationTest, OverMemoryLayoutIsExplainedOrSimulatedOnRequest) {
  StepConfig c = Small(1, 1, 1, 8, 8);
  c.model.num_layers = 48;
  c.model.hidden = 6144;
  c.model.heads = 48;
  c.model.seq_len = 2048;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("stage 0"), std::string::npos) << r.status().message();
  c.allow_oom = true;
  Result<StepResult> forced = SimulateStep(c);
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_FALSE(forced->memory.fits);
  EXPECT_FALSE(forced->memory.reason.empty());
}

TEST(StepSimulationTest, ZeroStagesTradeMemoryForDataParallelTraffic) {
  StepConfig c = Small(2, 1, 1, 16, 16);
  Result<StepResult> z0 = SimulateStep(c);
  ASSERT_TRUE(z0.ok()) << z0.status().message();
  for (int stage : {1, 3}) {
    c.parallel.zero_stage = stage;
    Result<StepResult> z = SimulateStep(c);
    ASSERT_TRUE(z.ok()) << z.status().message();
    EXPECT_LT(z->memory.peak_bytes, z0->memory.peak_bytes) << stage;
    ExpectBreakdownAddsUp(*z);
    if (stage == 3) {
      // ZeRO-3 gathers the weights before every forward and backward: 1.5× the traffic.
      EXPECT_GT(z->breakdown.exposed_dp_comm_s, z0->breakdown.exposed_dp_comm_s);
    }
  }
}

TEST(StepSimulationTest, ImpossibleLayoutIsInvalidArgument) {
  StepConfig c = Small(1, 8, 1, 2, 8);  // 16 GPUs on one node of 8
  Result<StepResult> r = SimulateStep(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  c = Small(1, 8, 1, 1, int64_t(1) << 40);  // a trillion micro-batches
  r = SimulateStep(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("micro-batches"), std::string::npos);
}

TEST(StepSimulationTest, SameInputGivesIdenticalResultAndTrace) {
  StepConfig c = Small(2, 2, 2, 4, 32);
  SimulateOptions o;
  o.record_trace = true;
  Result<StepResult> a = SimulateStep(c, {}, o);
  Result<StepResult> b = SimulateStep(c, {}, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->time_s, b->time_s);
  std::ostringstream ta, tb;
  WriteChromeTrace(*a, ta);
  WriteChromeTrace(*b, tb);
  EXPECT_EQ(ta.str(), tb.str());
  EXPECT_NE(ta.str().find("\"process_name\""), std::string::npos);
  EXPECT_NE(ta.str().find("\"ph\":\"X\""), std::string::npos);
}

TEST(StepSimulationTest, MfuAndThroughputFollowFromStepTime) {
  StepConfig c = Small(1, 2, 2, 2, 16);
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->tokens_per_s, 16.0 * 1024 / r->time_s, 1e-6 * r->tokens_per_s);
  EXPECT_NEAR(r->mfu, ModelFlopsPerIteration(c.model, 16) / (r->time_s * 8 * 312e12), 1e-9);
  EXPECT_GT(r->mfu, 0.05);
  EXPECT_LT(r->mfu, 0.85);
}

}  // namespace
}  // namespace trainsim::step

namespace trainsim::step {
namespace {

// Property: over a grid of layouts, every simulation either explains why the layout cannot run
// or completes with each stage's breakdown adding up to the step time.
TEST(StepSimulationPropertyTest, EveryLayoutCompletesOrIsExplainedAndAddsUp) {
  int simulated = 0;
  for (int tp : {1, 2, 4}) {
    for (int pp : {1, 2, 4}) {
      for (PipelineSchedule sched : {PipelineSchedule::kGpipe, PipelineSchedule::k1F1B,
                                     PipelineSchedule::kInterleaved1F1B}) {
        for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
          for (int zero : {0, 1}) {
            for (bool overlap : {false, true}) {
              const int dp = 16 / (tp * pp);
              StepConfig c = Small(2, tp, pp, dp, int64_t(dp) * 2 * 4);
              c.parallel.micro_batch = 2;
              c.parallel.schedule = sched;
              c.parallel.virtual_stages = sched == PipelineSchedule::kInterleaved1F1B ? 2 : 1;
              c.parallel.recompute = rc;
              c.parallel.sequence_parallel = tp > 1 && rc == Recompute::kSelective;
              c.parallel.zero_stage = zero;
              c.parallel.overlap_dp = overlap;
              Result<StepResult> r = SimulateStep(c);
              if (!r.ok()) {
                EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument)
                    << r.status().message();
                EXPECT_FALSE(r.status().message().empty());
                continue;
              }
              ++simulated;
              ExpectBreakdownAddsUp(*r);
              EXPECT_GT(r->time_s, 0);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(simulated, 100);
}

}  // namespace
}  // namespace trainsim::step
