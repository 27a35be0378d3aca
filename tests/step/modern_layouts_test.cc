// The step simulation on the layouts of today's stacks: uneven pipeline stages, context
// parallelism, ZeRO-2 with pipelines, untied embeddings, Transformer Engine's TP overlap and
// Megatron-Core's pipeline-send overlap. Expectations come from the schedule's structure and
// closed forms, not from the program's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "comm/collective.h"
#include "comm/topology.h"
#include "step/pass_costs.h"
#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
using namespace parallelism;  // NOLINT: the models the step simulation runs
namespace {

// A GPT with a tiny vocabulary, so that stages differ only by their layers.
StepConfig Gpt(int nodes, int layers, int tp, int pp, int dp, int64_t global_batch) {
  StepConfig c;
  c.model.num_layers = layers;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.seq_len = 2048;
  c.model.vocab = 256;
  c.model.flash_attention = true;
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.global_batch = global_batch;
  c.gpu = H100Sxm();
  c.topology = DgxH100(nodes);
  return c;
}

bool TraceHas(const StepResult& r, const std::string& name) {
  return std::any_of(r.trace.begin(), r.trace.end(),
                     [&](const TraceSlice& s) { return s.name == name; });
}

TEST(ModernLayoutsTest, OverlapP2pFlagDoesNotChangePlainOneFOneB) {
  // Megatron-Core overlaps pipeline sends only in the interleaved schedule.
  StepConfig c = Gpt(4, 16, 8, 4, 1, 16);
  Result<StepResult> blocking = SimulateStep(c);
  c.parallel.overlap_p2p = true;
  Result<StepResult> flagged = SimulateStep(c);
  ASSERT_TRUE(blocking.ok()) << blocking.status().message();
  ASSERT_TRUE(flagged.ok()) << flagged.status().message();
  EXPECT_EQ(blocking->time_s, flagged->time_s);
}

TEST(ModernLayoutsTest, OverlappedInterleavedPipelineWaitFallsAsChunksPerStageRise) {
  // Narayanan §2.2.2: the bubble is (p − 1)/(v·m) of the ideal time; with overlapped sends no
  // rendezvous wait grows back as v rises.
  double previous = 1e30;
  for (int v : {1, 2, 4}) {
    StepConfig c = Gpt(4, 16, 8, 4, 1, 16);
    c.parallel.overlap_p2p = true;
    c.parallel.virtual_stages = v;
    c.parallel.schedule = v > 1 ? PipelineSchedule::kInterleaved1F1B : PipelineSchedule::k1F1B;
    Result<StepResult> r = SimulateStep(c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double wait = r->breakdown.bubble_s + r->breakdown.pp_wait_s;
    EXPECT_LT(wait, previous) << "v = " << v;
    previous = wait;
  }
}

TEST(ModernLayoutsTest, TpCommOverlapHidesAllButAChunkOfTheTpCommunication) {
  StepConfig c = Gpt(1, 4, 8, 1, 1, 1);
  c.model.hidden = 8192;
  c.model.heads = 64;
  c.model.seq_len = 4096;
  c.parallel.sequence_parallel = true;
  Result<StepResult> exposed = SimulateStep(c);
  c.parallel.tp_comm_overlap = true;
  Result<StepResult> overlapped = SimulateStep(c);
  ASSERT_TRUE(exposed.ok()) << exposed.status().message();
  ASSERT_TRUE(overlapped.ok()) << overlapped.status().message();
  // The layer's all-gathers and reduce-scatters run as tp chunks under their GEMMs: at least
  // one chunk (1/tp) of each stays exposed, and the layer's GEMMs (longer than its NVLink
  // collectives at h = 8192, b·s = 4096: GEMM time grows as h²·s, the traffic as h·s) hide
  // the rest. The embedding and head
  // collectives (not overlapped) are negligible with a 256-entry vocabulary.
  EXPECT_LT(overlapped->breakdown.exposed_tp_comm_s, 0.3 * exposed->breakdown.exposed_tp_comm_s);
  EXPECT_GT(overlapped->breakdown.exposed_tp_comm_s,
            0.9 / 8 * exposed->breakdown.exposed_tp_comm_s);
  // The chunked GEMMs are slower, and the communication kernels take SMs from the GEMMs they
  // overlap (compute slowed by comm).
  EXPECT_GT(overlapped->breakdown.compute_s, exposed->breakdown.compute_s);
  EXPECT_GT(overlapped->breakdown.compute_slowed_s, 0);
  EXPECT_EQ(exposed->breakdown.compute_slowed_s, 0);
  EXPECT_LT(overlapped->time_s, exposed->time_s);
  // The forward's reduce-scatters as a ring exchange (Megatron-Bridge's FP8 configs) take 1 SM
  // from the GEMMs, not the pipeline's 16: less compute slowed by them.
  c.parallel.tp_overlap_rs_ring = true;
  Result<StepResult> ring = SimulateStep(c);
  ASSERT_TRUE(ring.ok()) << ring.status().message();
  EXPECT_LT(ring->breakdown.compute_slowed_s, overlapped->breakdown.compute_slowed_s);
  EXPECT_GT(ring->breakdown.compute_slowed_s, 0);
}

TEST(ModernLayoutsTest, UnevenStagesGiveEachStageItsOwnLayers) {
  // 18 layers over 4 stages: 3 on the first, 3 on the last, 6 on each middle stage.
  StepConfig c = Gpt(4, 18, 8, 4, 1, 8);
  c.parallel.first_stage_layers = 3;
  c.parallel.last_stage_layers = 3;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->stage_breakdown.size(), 4u);
  const double first = r->stage_breakdown[0].compute_s;
  const double middle = r->stage_breakdown[1].compute_s;
  // Twice the layers; the first stage also runs the embedding, so the ratio is just under 2.
  EXPECT_LT(middle / first, 2.0);
  EXPECT_GT(middle / first, 1.8);
  EXPECT_NEAR(r->stage_breakdown[2].compute_s, middle, 1e-9 * middle);
  // 18 layers do not split evenly into 4 stages without the first/last counts.
  c.parallel.first_stage_layers = -1;
  c.parallel.last_stage_layers = -1;
  EXPECT_FALSE(SimulateStep(c).ok());
}

TEST(ModernLayoutsTest, ZeroTwoRunsWithPipelineParallelism) {
  StepConfig c = Gpt(2, 8, 8, 2, 1, 4);
  c.parallel.dp = 1;
  c.parallel.tp = 4;
  c.parallel.dp = 2;
  c.parallel.zero_stage = 2;
  Result<StepResult> r = SimulateStep(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->time_s, 0);
}

TEST(ModernLayoutsTest, UntiedEmbeddingsSkipTheFirstToLastStageAllReduce) {
  StepConfig c = Gpt(2, 8, 8, 2, 1, 4);
  SimulateOptions trace;
  trace.record_trace = true;
  Result<StepResult> tied = SimulateStep(c, {}, trace);
  c.model.tied_embeddings = false;
  Result<StepResult> untied = SimulateStep(c, {}, trace);
  ASSERT_TRUE(tied.ok()) << tied.status().message();
  ASSERT_TRUE(untied.ok()) << untied.status().message();
  EXPECT_TRUE(TraceHas(*tied, "tied embedding all_reduce"));
  EXPECT_FALSE(TraceHas(*untied, "tied embedding all_reduce"));
}

TEST(ModernLayoutsTest, ContextParallelRanksReduceGradientsTogetherWithoutDataParallelism) {
  // cp 2, dp 1: the two CP ranks hold the same weights, so their gradients are reduced over the
  // DP × CP group of 2 even though dp is 1 (Megatron's data-parallel group with CP).
  StepConfig c = Gpt(2, 8, 8, 1, 1, 2);
  c.parallel.cp = 2;
  SimulateOptions trace;
  trace.record_trace = true;
  Result<StepResult> r = SimulateStep(c, {}, trace);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(TraceHas(*r, "dp grad reduce"));
  EXPECT_GT(r->breakdown.exposed_cp_comm_s + r->breakdown.compute_s, 0);
}

// CP 4 and more: the ring's K/V pass is a send/recv from every rank to the next at once (it
// was timed as one send/recv over the whole group, which is only defined for two GPUs, so any
// cp > 2 failed with "send_recv needs exactly two GPUs").
TEST(ModernLayoutsTest, ContextParallelRingOfFourRunsAndLastsAsLongAsItsSlowestPair) {
  for (int tp : {2, 8}) {
    StepConfig c = Gpt(tp == 8 ? 4 : 1, 8, tp, 1, 1, 4);
    c.model.seq_len = 16384;
    c.parallel.cp = 4;
    Result<StepResult> r = SimulateStep(c);
    ASSERT_TRUE(r.ok()) << "tp " << tp << ": " << r.status().message();
    EXPECT_GT(r->time_s, 0);
  }
  // Ring 0 → 4 → 8 → 12 → 0 over two 8-GPU nodes: two hops stay in a node (NVLink), two cross
  // (one NIC each way): the step is the crossing pair's send/recv.
  const comm::Topology topo = comm::Topology::Build(DgxH100(2)).value();
  CalibratedTpTimer ring(&topo, {0, 4, 8, 12}, nullptr);
  const double bytes = 64e6;
  Result<double> step = ring.Seconds(comm::Op::kSendRecv, bytes);
  ASSERT_TRUE(step.ok()) << step.status().message();
  auto pair = [&](int a, int b) {
    return comm::EstimateCollective(
               topo, {comm::Op::kSendRecv, comm::Algo::kAuto, {a, b}, uint64_t(bytes)})
        ->time.seconds();
  };
  EXPECT_DOUBLE_EQ(*step, pair(4, 8));
  EXPECT_GT(*step, pair(0, 4));
  // Two ranks are the plain send/recv.
  CalibratedTpTimer two(&topo, {0, 8}, nullptr);
  EXPECT_DOUBLE_EQ(*two.Seconds(comm::Op::kSendRecv, bytes), pair(0, 8));
}

TEST(ModernLayoutsTest, ContextParallelRanksSendOnlyTheirTokensDownThePipeline) {
  // A CP rank holds s/cp tokens, so its boundary activation is 1/cp of the sequence's.
  StepConfig c = Gpt(2, 8, 8, 2, 1, 2);
  const double whole = PipelineSendBytes(c, 1);
  c.parallel.cp = 2;
  EXPECT_DOUBLE_EQ(PipelineSendBytes(c, 1), whole / 2);
  // 1/tp of b·s·h·2 bytes with Narayanan's scatter/gather: 2048 · 4096 · 2 / 8 over cp 2.
  EXPECT_DOUBLE_EQ(PipelineSendBytes(c, 1), 2048.0 * 4096 * 2 / 8 / 2);
}

TEST(ModernLayoutsTest, MoeAllToAllOverlapHidesTheTokenExchangeUnderTheOtherPassCompute) {
  // A Mixtral-like MoE layer (8 experts, top 2) with EP 8 over two nodes: the all-to-alls cross
  // the network. Overlapped (Megatron-Core's combined 1F1B, step/ep_overlap.h), each
  // all-to-all hides under the compute it is paired with: less exposed than before, at least
  // the traffic beyond the pair's compute (the communication stream's own load), and the
  // compute unchanged.
  StepConfig c = Gpt(2, 4, 1, 1, 16, 16);
  c.model.swiglu = true;
  c.model.ffn_hidden = 14336;
  c.model.moe.experts = 8;
  c.model.moe.top_k = 2;
  c.parallel.ep = 8;
  c.parallel.zero_stage = 1;
  Result<StepResult> exposed = SimulateStep(c);
  c.parallel.moe_a2a_overlap = true;
  Result<StepResult> overlapped = SimulateStep(c);
  ASSERT_TRUE(exposed.ok()) << exposed.status().message();
  ASSERT_TRUE(overlapped.ok()) << overlapped.status().message();
  ASSERT_GT(exposed->breakdown.exposed_ep_comm_s, 0);
  EXPECT_LT(overlapped->breakdown.exposed_ep_comm_s, exposed->breakdown.exposed_ep_comm_s);
  EXPECT_GE(
      overlapped->breakdown.exposed_ep_comm_s,
      std::max(0.0, exposed->breakdown.exposed_ep_comm_s - exposed->breakdown.compute_s) - 1e-9);
  // The hidden all-to-alls take the SMs of their p2p channels from the compute beside them.
  EXPECT_NEAR(overlapped->breakdown.compute_s, exposed->breakdown.compute_s,
              1e-12 * exposed->breakdown.compute_s);
  EXPECT_GT(overlapped->breakdown.compute_slowed_s, 0);
}

}  // namespace
}  // namespace trainsim::step
