#include "parallelism/memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "parallelism/schedule.h"

namespace trainsim::parallelism {
namespace {

// ZeRO (Rajbhandari et al. SC'20) Table 1, GB per device: {dp, Pos, Pos+g, Pos+g+p} per model.
struct ZeroRow {
  int dp;
  double gb[3][3];  // [model 7.5B, 128B, 1T][stage 1, 2, 3]
};
constexpr ZeroRow kZero[] = {
    {1, {{120, 120, 120}, {2048, 2048, 2048}, {16000, 16000, 16000}}},
    {4, {{52.5, 41.3, 30}, {896, 704, 512}, {7000, 5500, 4000}}},
    {16, {{35.6, 21.6, 7.5}, {608, 368, 128}, {4750, 2875, 1000}}},
    {64, {{31.4, 16.6, 1.88}, {536, 284, 32}, {4187, 2218, 250}}},
    {256, {{30.4, 15.4, 0.47}, {518, 263, 8}, {4046, 2054, 62.5}}},
    {1024, {{30.1, 15.1, 0.12}, {513, 257, 2}, {4011, 2013, 15.6}}},
};

TEST(MemoryTest, ReproducesZeroTableWithinTwoPercent) {
  const double psi[3] = {7.5e9, 128e9, 1e12};
  for (const ZeroRow& row : kZero) {
    for (int model = 0; model < 3; ++model) {
      for (int stage = 1; stage <= 3; ++stage) {
        const MemoryBreakdown b = ModelStateBytes(psi[model], row.dp, stage);
        const double gb = (b.weights + b.gradients + b.optimizer) / 1e9;
        const double published = row.gb[model][stage - 1];
        // 2%, or half a unit of the table's last printed digit (0.12 GB is 0.117 rounded).
        EXPECT_NEAR(gb, published, std::max(0.02 * published, 0.005))
            << "dp " << row.dp << " model " << model << " stage " << stage;
      }
    }
  }
}

ModelSpec Model22B() {
  ModelSpec m;
  m.num_layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.seq_len = 2048;
  m.vocab = 51200;
  return m;
}

TEST(MemoryTest, ActivationsPerLayerMatchKorthikantiFormulas) {
  const ModelSpec m = Model22B();
  const double s = 2048, b = 4, h = 6144, a = 64, t = 8, sbh = s * b * h;
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 1, false, Recompute::kNone, 4),
                   sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 8, false, Recompute::kNone, 4),
                   sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 8, true, Recompute::kNone, 4),
                   sbh * (34 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 8, false, Recompute::kSelective, 4),
                   sbh * (10 + 24 / t));
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 8, true, Recompute::kSelective, 4), sbh * 34 / t);
  EXPECT_DOUBLE_EQ(ActivationBytesPerLayer(m, 8, false, Recompute::kFull, 4), sbh * 2);
}

TEST(MemoryTest, FirstStageHoldsAllLayersUnder1F1BAndMoreWhenInterleaved) {
  ModelSpec m = Model22B();
  m.num_layers = 48;
  const double s = 2048, b = 1, h = 6144, a = 64, t = 8, L = 48, p = 4;
  const double korthikanti = s * b * h * L / t * (34 + 5 * a * s / h);
  ParallelConfig c;
  c.tp = 8;
  c.pp = 4;
  c.dp = 1;
  c.sequence_parallel = true;
  c.global_batch = 16;
  for (int v : {1, 2, 3}) {
    c.virtual_stages = v;
    c.schedule = v > 1 ? PipelineSchedule::kInterleaved1F1B : PipelineSchedule::k1F1B;
    const auto order = BuildSchedule(c.schedule, c.pp, v, c.num_micro_batches());
    const double layers_per_chunk = L / (p * v);
    const double act = PeakChunksInFlight(order[0]) * layers_per_chunk *
                       ActivationBytesPerLayer(m, 8, true, Recompute::kNone, 1);
    const double factor = v > 1 ? 1 + (p - 1) / (p * v) : 1.0;
    EXPECT_NEAR(act, korthikanti * factor, korthikanti * 1e-9) << "v " << v;
  }
}

TEST(MemoryTest, Fp16OptimizerStepHoldsFp32GradientCopiesInsteadOfActivations) {
  // Megatron's fp16 optimizer copies every gradient to fp32 (4 B per parameter) after the last
  // backward freed the activations: the peak holds the larger of the two. Ψ = 1e9 on one GPU:
  // states 16 GB; with 1 GB of activations the step's 4 GB copies set the peak (20 GB + overhead);
  // with ZeRO-1 over 4 ranks only the optimizer's shard is copied (1 GB).
  MemoryParams p;
  p.step_grad_bytes_per_param = 4;
  MemoryBreakdown b = ModelStateBytes(1e9, 1, 0, p);
  EXPECT_DOUBLE_EQ(b.step_grads, 4e9);
  b.activations = 1e9;
  b.overhead = p.framework_overhead_bytes;
  EXPECT_DOUBLE_EQ(b.total(), 2e9 + 2e9 + 12e9 + 4e9 + 2e9);
  b.activations = 6e9;
  EXPECT_DOUBLE_EQ(b.total(), 2e9 + 2e9 + 12e9 + 6e9 + 2e9);
  EXPECT_DOUBLE_EQ(ModelStateBytes(1e9, 4, 1, p).step_grads, 1e9);
  EXPECT_DOUBLE_EQ(ModelStateBytes(1e9, 1, 0).step_grads, 0);  // default: bf16, no copy

  // A layout that fits by the backward's peak but not at the optimizer step says so.
  ModelSpec m = Model22B();
  ParallelConfig c;
  c.tp = 1;
  c.pp = 1;
  c.dp = 1;
  c.recompute = Recompute::kFull;
  const double psi = ParametersPerGpu(m, c, 0);
  const double backward_peak = EstimateMemory(m, c, 1e15, 8).peak_bytes;
  const double capacity = backward_peak + 1e9;  // fits without the copies (4Ψ ≫ 1 GB more)
  EXPECT_TRUE(EstimateMemory(m, c, capacity, 8).fits);
  const MemoryReport r = EstimateMemory(m, c, capacity, 8, p);
  EXPECT_FALSE(r.fits);
  EXPECT_NEAR(r.peak_bytes, 16 * psi + 4 * psi + p.framework_overhead_bytes, 1e-6 * r.peak_bytes);
  EXPECT_NE(r.reason.find("fp32 gradient copies at the optimizer step"), std::string::npos)
      << r.reason;
}

TEST(MemoryTest, OverMemoryLayoutNamesStageExcessAndAFix) {
  ModelSpec m = Model22B();
  ParallelConfig c;
  c.tp = 8;
  c.pp = 1;
  c.dp = 1;
  c.micro_batch = 8;
  c.global_batch = 8;
  const MemoryReport r = EstimateMemory(m, c, 80e9, 8);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.peak_stage, 0);
  EXPECT_NE(r.reason.find("over the 80.0 GB"), std::string::npos) << r.reason;
  ASSERT_FALSE(r.suggestions.empty());
  bool recompute_fix = false;
  for (const auto& s : r.suggestions) recompute_fix |= s.find("recompute") != std::string::npos;
  EXPECT_TRUE(recompute_fix) << r.suggestions[0];
  c.recompute = Recompute::kFull;
  EXPECT_TRUE(EstimateMemory(m, c, 80e9, 8).fits);
}

}  // namespace
}  // namespace trainsim::parallelism
