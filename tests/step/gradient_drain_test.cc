// ZeRO-2/3 reduce every micro-batch's gradients into their shards, and each backward ends only
// once its buckets are reduced (GradientSync::DrainsEachBackward: DeepSpeed's stage-2 epilogue
// synchronizes its reduction stream, FSDP2's post-backward callback waits for the last
// reduce-scatter). The reductions therefore never queue from one micro-batch into the next.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "step/step_simulation.h"
#include "tests/step/dgx.h"

namespace trainsim::step {
namespace {

// PP 2 with CP 2 and TP 2, DP 4 over 4 nodes: each stage reduce-scatters its 4 MB buckets over
// the DP × CP group (two nodes), 16 micro-batches per pipeline. A bucket's reduction over the
// NICs outlasts its share of the backward, so without the drain the reductions would queue.
StepConfig H100Model(int layers, int hidden, int heads, int64_t seq_len) {
  StepConfig c;
  c.model.num_layers = layers;
  c.model.hidden = hidden;
  c.model.heads = heads;
  c.model.seq_len = seq_len;
  c.model.vocab = 32000;
  c.model.flash_attention = true;
  c.gpu = H100Sxm();
  return c;
}

StepConfig ZeroTwoOverNodes(int zero_stage) {
  StepConfig c = H100Model(8, 4096, 32, 8192);
  c.parallel.tp = 2;
  c.parallel.cp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 4;
  c.parallel.global_batch = 64;
  c.parallel.zero_stage = zero_stage;
  c.parallel.dp_bucket_bytes = 4e6;
  c.topology = DgxH100(4);
  return c;
}

StepResult Traced(const StepConfig& c) {
  SimulateOptions o;
  o.record_trace = true;
  Result<StepResult> r = SimulateStep(c, {}, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : StepResult{};
}

bool IsForwardPass(const TraceSlice& s) {
  return s.track == kTrackCompute && s.category == "forward" && s.name.size() > 1 &&
         s.name[0] == 'F' && s.name[1] >= '0' && s.name[1] <= '9';
}

// A drain's wait: one per backward that waited (the step's end wait names no micro-batch).
bool IsDrainWait(const TraceSlice& s) {
  return s.name == "wait for dp reduction" &&
         std::any_of(s.args.begin(), s.args.end(),
                     [](const auto& a) { return a.first == "micro_batch"; });
}

int64_t DrainWaits(const StepResult& r) {
  return std::count_if(r.trace.begin(), r.trace.end(), IsDrainWait);
}

TEST(GradientDrainTest, NoZeroTwoReductionRunsBesideAForwardOfItsStage) {
  const StepResult r = Traced(ZeroTwoOverNodes(2));
  // The reductions bind: some backwards waited for theirs.
  EXPECT_GT(DrainWaits(r), 0);
  // Each stage's communicator reduces on its first GPU's DP track; that GPU's forwards all come
  // after a drained backward or before the first backward, never beside a reduction.
  std::map<int, std::vector<const TraceSlice*>> forwards;
  for (const TraceSlice& s : r.trace) {
    if (IsForwardPass(s)) forwards[s.gpu].push_back(&s);
  }
  int reductions = 0;
  for (const TraceSlice& s : r.trace) {
    if (s.name != "dp grad reduce") continue;
    ++reductions;
    ASSERT_TRUE(forwards.count(s.gpu)) << "no forward on GPU " << s.gpu;
    for (const TraceSlice* f : forwards[s.gpu]) {
      const bool apart =
          s.start_ns + s.duration_ns <= f->start_ns || f->start_ns + f->duration_ns <= s.start_ns;
      ASSERT_TRUE(apart) << "bucket " << s.start_ns << "+" << s.duration_ns << " ns beside "
                         << f->name << " at " << f->start_ns << " on GPU " << s.gpu;
    }
  }
  // 16 micro-batches' backwards per stage, several buckets each.
  EXPECT_GT(reductions, 2 * 16);
}

bool IsPass(const TraceSlice& s) {
  return IsForwardPass(s) ||
         (s.track == kTrackCompute && s.category == "backward" && s.name.size() > 1 &&
          s.name[0] == 'B' && s.name[1] >= '0' && s.name[1] <= '9');
}

// Without overlap (DeepSpeed's overlap_comm off) each backward reduces its chunk's gradients
// after it, blocking: one reduction per backward, beside no pass of its stage.
TEST(GradientDrainTest, WithoutOverlapEachBackwardReducesItsGradientsAfterItAlone) {
  StepConfig c = ZeroTwoOverNodes(2);
  c.parallel.overlap_dp = false;
  const StepResult r = Traced(c);
  std::map<int, std::vector<const TraceSlice*>> passes;
  for (const TraceSlice& s : r.trace) {
    if (IsPass(s)) passes[s.gpu].push_back(&s);
  }
  std::map<int, int> reductions;  // per stage's reducing GPU
  for (const TraceSlice& s : r.trace) {
    if (s.name != "dp grad reduce") continue;
    ++reductions[s.gpu];
    for (const TraceSlice* p : passes[s.gpu]) {
      ASSERT_TRUE(s.start_ns + s.duration_ns <= p->start_ns ||
                  p->start_ns + p->duration_ns <= s.start_ns)
          << "reduction at " << s.start_ns << " beside " << p->name << " on GPU " << s.gpu;
    }
  }
  // Two stages, 16 micro-batches each: one chunk bucket per backward.
  ASSERT_EQ(reductions.size(), 2u);
  for (const auto& [gpu, n] : reductions) EXPECT_EQ(n, 16) << "GPU " << gpu;
  EXPECT_EQ(DrainWaits(r), 2 * 16);
}

TEST(GradientDrainTest, TheDrainsWaitIsExposedDataParallelComm) {
  const StepResult r = Traced(ZeroTwoOverNodes(2));
  // Stage 0's first GPU: its drain waits are part of its exposed DP comm (with the step's end
  // wait and the weight all-gather's exposed share).
  const int gpu = 0;
  double waits = 0;
  for (const TraceSlice& s : r.trace) {
    if (s.gpu == gpu && IsDrainWait(s)) waits += double(s.duration_ns) * 1e-9;
  }
  ASSERT_FALSE(r.stage_breakdown.empty());
  EXPECT_GT(waits, 0);
  EXPECT_LE(waits, r.stage_breakdown[0].exposed_dp_comm_s + 1e-6);
  // ZeRO-1 reduces once, after the last micro-batch: no backward waits.
  EXPECT_EQ(DrainWaits(Traced(ZeroTwoOverNodes(1))), 0);
}

// A MoE model whose first two layers are dense (DeepSeek's first_dense_layers), PP 2: stage 0
// holds no experts, and with DP 1 its dense gradients have no group either, so it reduces
// nothing; stage 1's expert gradients still reduce over expert-DP (TP 4 / EP 2 = 2 ranks). Until
// session 26 whether any stage reduced was read from stage 0 alone, and nothing was reduced.
TEST(GradientDrainTest, ExpertGradientsAreReducedAfterAStageOfDenseLayersOnly) {
  for (int zero : {1, 2}) {
    StepConfig c = H100Model(4, 2048, 16, 2048);
    c.model.swiglu = true;
    c.model.ffn_hidden = 8192;
    c.model.moe.experts = 8;
    c.model.moe.top_k = 2;
    c.model.moe.first_dense_layers = 2;
    c.parallel.tp = 4;
    c.parallel.pp = 2;
    c.parallel.dp = 1;
    c.parallel.ep = 2;
    c.parallel.global_batch = 8;
    c.parallel.zero_stage = zero;
    c.topology = DgxH100(1);
    const StepResult r = Traced(c);
    int reductions = 0;
    for (const TraceSlice& s : r.trace) reductions += s.name == "dp grad reduce";
    EXPECT_GT(reductions, 0) << "ZeRO-" << zero;
    ASSERT_EQ(r.stage_breakdown.size(), 2u);
    EXPECT_GT(r.stage_breakdown[1].exposed_dp_comm_s, 0) << "ZeRO-" << zero;
  }
}

}  // namespace
}  // namespace trainsim::step
