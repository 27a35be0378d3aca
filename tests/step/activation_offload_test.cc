// Activation offloading (step/activation_offload.h; Megatron-Core --cpu-offloading-num-layers):
// the offload stream's waits worked by hand, the memory it frees, and its place in the step.
#include "step/activation_offload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "parallelism/layout.h"
#include "parallelism/memory.h"
#include "step/step_simulation.h"

namespace trainsim::step {
namespace {

// `n` layers of equal cost: forward f, backward b, `bytes` saved each.
std::vector<OffloadLayer> Uniform(int n, double f, double b, double bytes) {
  return std::vector<OffloadLayer>(size_t(n), OffloadLayer{f, b, bytes});
}

TEST(OffloadWaitSecondsTest, NothingOffloadedWaitsForNothing) {
  const OffloadWait w = OffloadWaitSeconds(Uniform(8, 1, 2, 100), 0, 1, 1);
  EXPECT_EQ(w.fwd_s, 0);
  EXPECT_EQ(w.bwd_s, 0);
}

TEST(OffloadWaitSecondsTest, CopiesShorterThanALayerAreHidden) {
  // Copy 0.5 s per layer against 1 s forwards, with L - n - 1 = 3 layers of slack each.
  const OffloadWait w = OffloadWaitSeconds(Uniform(8, 1, 2, 50), 4, 100, 100);
  EXPECT_EQ(w.fwd_s, 0);
  EXPECT_EQ(w.bwd_s, 0);
}

TEST(OffloadWaitSecondsTest, AllButOneLayerOffloadedExposesEveryCopy) {
  // L = 4, n = 3: layer i's copy starts when layer i + 1 is about to run, and layer i + 1 must
  // wait for it (TE warns that n = L - 1 prevents overlap): 3 copies of 2 s in the forward.
  // Backward (b = 1): layer 2's copy back starts before layer 2's own backward (L - 1 - n + 2),
  // so each of layers 2, 1, 0 waits for its whole copy: 3 x 2 s.
  const OffloadWait w = OffloadWaitSeconds(Uniform(4, 1, 1, 2), 3, 1, 1);
  EXPECT_DOUBLE_EQ(w.fwd_s, 6);
  EXPECT_DOUBLE_EQ(w.bwd_s, 6);
}

TEST(OffloadWaitSecondsTest, CopyBoundChainEndsOneLayerAfterTheLastCopy) {
  // L = 10, n = 5, f = b = 1, 3 s per copy. Forward: copies back to back from t = 1 end at
  // 4, 7, 10, 13, 16; layers 5..9 need them at their starts: waits 0, 1, 2, 2, 2 = 7, and the
  // forward ends at 16 + 1 = L * f + 7. The backward mirrors it: 7.
  const OffloadWait w = OffloadWaitSeconds(Uniform(10, 1, 1, 3), 5, 1, 1);
  EXPECT_DOUBLE_EQ(w.fwd_s, 7);
  EXPECT_DOUBLE_EQ(w.bwd_s, 7);
}

TEST(OffloadWaitSecondsTest, EachDirectionCopiesAtItsOwnRate) {
  // The copy-bound chain above (L = 10, n = 5, f = b = 1, 3 bytes a layer) with the reload link
  // three times as fast: copies back take 1 s, which the layer before each hides, while the
  // offloads (3 s at 1 B/s) still cost the forward its 7 s.
  const OffloadWait w = OffloadWaitSeconds(Uniform(10, 1, 1, 3), 5, 1, 3);
  EXPECT_DOUBLE_EQ(w.fwd_s, 7);
  EXPECT_EQ(w.bwd_s, 0);
  // And the other way round: a fast offload hides under the layers, a slow reload waits 7 s.
  const OffloadWait r = OffloadWaitSeconds(Uniform(10, 1, 1, 3), 5, 3, 1);
  EXPECT_EQ(r.fwd_s, 0);
  EXPECT_DOUBLE_EQ(r.bwd_s, 7);
}

TEST(OffloadWaitSecondsTest, LongerBackwardHidesTheCopiesBack) {
  // Same chain, backward 3 s a layer: each copy back (3 s) fits under the layer before it.
  const OffloadWait w = OffloadWaitSeconds(Uniform(10, 1, 3, 3), 5, 1, 1);
  EXPECT_DOUBLE_EQ(w.fwd_s, 7);
  EXPECT_EQ(w.bwd_s, 0);
}

parallelism::ModelSpec Gpt(int layers) {
  parallelism::ModelSpec m;
  m.num_layers = layers;
  m.hidden = 1024;
  m.heads = 8;
  m.seq_len = 1024;
  m.vocab = 256;
  return m;
}

TEST(OffloadMemoryTest, KeepsLMinusNLayersOnTheGpuAndNInHostMemory) {
  const parallelism::ModelSpec m = Gpt(12);
  parallelism::ParallelConfig c;
  c.dp = 8;
  c.global_batch = 16;
  const parallelism::ChunkLayers all{0, 12};
  const double full = parallelism::ChunkActivationBytes(m, c, all);
  const double stage = parallelism::StageActivationBytes(m, c, 0);
  c.cpu_offload_layers = 4;
  EXPECT_DOUBLE_EQ(parallelism::ChunkActivationBytes(m, c, all), full * 8 / 12);
  EXPECT_DOUBLE_EQ(parallelism::OffloadedActivationBytes(m, c), full * 4 / 12);
  // The stage's peak (which also holds the loss's logits) drops by the 4 layers exactly.
  EXPECT_NEAR(parallelism::StageActivationBytes(m, c, 0), stage - full * 4 / 12, 1e-6 * stage);
}

TEST(OffloadMemoryTest, LayoutRejectsOffloadingWithPipelineOrRecomputation) {
  const parallelism::ModelSpec m = Gpt(12);
  parallelism::ParallelConfig c;
  c.dp = 8;
  c.global_batch = 16;
  c.cpu_offload_layers = 4;
  EXPECT_TRUE(parallelism::ValidateLayout(m, c, 8, 8).ok());
  parallelism::ParallelConfig piped = c;
  piped.dp = 4;
  piped.pp = 2;
  EXPECT_FALSE(parallelism::ValidateLayout(m, piped, 8, 8).ok());
  parallelism::ParallelConfig recomputed = c;
  recomputed.recompute = parallelism::Recompute::kFull;
  EXPECT_FALSE(parallelism::ValidateLayout(m, recomputed, 8, 8).ok());
  parallelism::ParallelConfig all = c;
  all.cpu_offload_layers = 12;
  EXPECT_FALSE(parallelism::ValidateLayout(m, all, 8, 8).ok());
}

TEST(OffloadMemoryTest, ALayoutThatDoesNotFitIsToldTheFewestLayersToOffload) {
  const parallelism::ModelSpec m = Gpt(12);
  parallelism::ParallelConfig c;
  c.dp = 8;
  c.global_batch = 16;
  c.micro_batch = 2;
  auto peak = [&](int n) {
    parallelism::ParallelConfig alt = c;
    alt.cpu_offload_layers = n;
    return parallelism::EstimateMemory(m, alt, 1e15, 8, {}, false).peak_bytes;
  };
  // A capacity between the peaks with 4 and 5 layers offloaded: 5 is the answer.
  const double capacity = (peak(4) + peak(5)) / 2;
  const parallelism::MemoryReport r = parallelism::EstimateMemory(m, c, capacity, 8);
  ASSERT_FALSE(r.fits);
  const auto it = std::find_if(
      r.suggestions.begin(), r.suggestions.end(),
      [](const std::string& x) { return x.rfind("cpu_offloading_num_layers", 0) == 0; });
  ASSERT_NE(it, r.suggestions.end());
  EXPECT_EQ(it->rfind("cpu_offloading_num_layers 5 ", 0), 0u) << *it;
}

TEST(OffloadMemoryTest, OffloadedBytesBeyondTheHostsMemoryDoNotFit) {
  const parallelism::ModelSpec m = Gpt(12);
  parallelism::ParallelConfig c;
  c.dp = 8;
  c.global_batch = 16;
  c.cpu_offload_layers = 6;
  parallelism::MemoryParams p;
  const double host = parallelism::OffloadedActivationBytes(m, c);
  p.host_bytes_per_gpu = host * 1.01;
  EXPECT_TRUE(parallelism::EstimateMemory(m, c, 1e15, 8, p).fits);
  p.host_bytes_per_gpu = host * 0.99;
  const parallelism::MemoryReport r = parallelism::EstimateMemory(m, c, 1e15, 8, p);
  EXPECT_FALSE(r.fits);
  EXPECT_NE(r.reason.find("host memory"), std::string::npos) << r.reason;
}

// One DGX-like node, TP 1 × PP 1 × DP 8, 4 micro-batches.
StepConfig Offloaded(int layers_offloaded, double link_Bps) {
  StepConfig c;
  c.model = Gpt(12);
  c.parallel.dp = 8;
  c.parallel.global_batch = 32;
  c.parallel.cpu_offload_layers = layers_offloaded;
  c.topology.nodes = 1;
  c.topology.gpus_per_node = 8;
  c.topology.nvlink_GBps = 300;
  c.topology.nics_per_node = 8;
  c.topology.nic_Gbps = 200;
  c.host_d2h_Bps = link_Bps;
  c.host_h2d_Bps = link_Bps;
  return c;
}

TEST(OffloadStepTest, CopiesHiddenUnderComputeLeaveTheStepAsItWas) {
  Result<StepResult> base = SimulateStep(Offloaded(0, 1e15));
  Result<StepResult> fast = SimulateStep(Offloaded(4, 1e15));
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_EQ(fast->time_s, base->time_s);
  EXPECT_EQ(fast->breakdown.offload_wait_s, 0);
  EXPECT_LT(fast->memory.peak_bytes, base->memory.peak_bytes);
}

TEST(OffloadStepTest, ASlowLinkMakesTheGpuWaitAndTheBreakdownStillAddsUp) {
  Result<StepResult> base = SimulateStep(Offloaded(0, 1e9));
  Result<StepResult> slow = SimulateStep(Offloaded(10, 1e9));  // 1 GB/s: copy-bound
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_GT(slow->breakdown.offload_wait_s, 0);
  EXPECT_GT(slow->time_s, base->time_s + 0.5 * slow->breakdown.offload_wait_s);
  EXPECT_NEAR(slow->breakdown.total_s(), slow->time_s, 1e-9 * slow->time_s);
}

}  // namespace
}  // namespace trainsim::step
