// Parameters per pipeline stage and the model states built on them: uneven stages, tied and
// untied embeddings, dense vs expert sharding groups, hybrid sharding and the ZeRO-3/FSDP
// gathered units. Expectations are the closed forms of docs/memory.md, written out here.
#include <gtest/gtest.h>

#include "parallelism/memory.h"

namespace trainsim::parallelism {
namespace {

// A Llama-style dense model, small enough to count by hand.
ModelSpec SmallLlama() {
  ModelSpec m;
  m.num_layers = 10;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 4;
  m.ffn_hidden = 3584;
  m.seq_len = 2048;
  m.vocab = 32000;
  m.swiglu = true;
  m.dropout = false;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  return m;
}

// GPT shape (Korthikanti et al.'s 22B model): tied embeddings, learned positions, LayerNorm.
ModelSpec Gpt22B() {
  ModelSpec m;
  m.num_layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.seq_len = 2048;
  m.vocab = 51200;
  return m;
}

ParallelConfig Config(int tp, int pp, int dp) {
  ParallelConfig c;
  c.tp = tp;
  c.pp = pp;
  c.dp = dp;
  c.global_batch = 8LL * dp;
  return c;
}

TEST(MemoryStatesTest, UnevenStagesHoldTheirOwnLayersAndTheUntiedOutputLayer) {
  // 10 layers over 4 stages with 1 on the first and 1 on the last: the middle two hold 4 each.
  // Stage 0 adds the word embedding V/t·h (no learned positions); the last stage the final
  // RMSNorm (h) and the untied output layer V/t·h.
  const ModelSpec m = SmallLlama();
  ParallelConfig c = Config(2, 4, 1);
  c.first_stage_layers = 1;
  c.last_stage_layers = 1;
  const double layer = LayerParametersPerGpu(m, c.split(), false).total();
  const double h = 1024, word = 32000.0 / 2 * h;
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 0), 1 * layer + word);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 1), 4 * layer);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 2), 4 * layer);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 3), 1 * layer + h + word);
  // An embedding-only first stage (Megatron's --decoder-first-pipeline-num-layers 0): over
  // pp 3 the other two stages share the 10 layers, 5 each.
  c = Config(2, 3, 1);
  c.first_stage_layers = 0;
  ASSERT_TRUE(ValidateLayout(m, c, c.num_gpus(), 8).ok());
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 0), word);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 1), 5 * layer);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 2), 5 * layer + h + word);
}

TEST(MemoryStatesTest, PipelineStagesTogetherHoldTheWholeModelOnce) {
  // Summed over the stages of any split (even, uneven, interleaved), the parameters equal the
  // unsplit model's, plus the tied output copy Megatron keeps on the last stage when pp > 1.
  const ModelSpec gpt = Gpt22B();
  const double gpt_whole = ParametersPerGpu(gpt, Config(1, 1, 1), 0);
  const double word = 51200.0 * 6144;
  ParallelConfig c = Config(1, 4, 1);
  double sum = 0;
  for (int r = 0; r < 4; ++r) sum += ParametersPerGpu(gpt, c, r);
  EXPECT_DOUBLE_EQ(sum, gpt_whole + word);
  c.schedule = PipelineSchedule::kInterleaved1F1B;
  c.virtual_stages = 3;
  ASSERT_TRUE(ValidateLayout(gpt, c, c.num_gpus(), 8).ok());
  sum = 0;
  for (int r = 0; r < 4; ++r) sum += ParametersPerGpu(gpt, c, r);
  EXPECT_DOUBLE_EQ(sum, gpt_whole + word);
  // Untied, uneven: no copy, every layer once.
  const ModelSpec llama = SmallLlama();
  const double llama_whole = ParametersPerGpu(llama, Config(1, 1, 1), 0);
  c = Config(1, 4, 1);
  c.first_stage_layers = 1;
  c.last_stage_layers = 1;
  sum = 0;
  for (int r = 0; r < 4; ++r) sum += ParametersPerGpu(llama, c, r);
  EXPECT_DOUBLE_EQ(sum, llama_whole);
}

TEST(MemoryStatesTest, TiedEmbeddingIsCountedOnceWithoutPipelineAndCopiedWithIt) {
  ModelSpec m = Gpt22B();
  const double L = 48, h = 6144, s = 2048, word = 51200.0 * h;
  ParallelConfig c = Config(1, 1, 1);
  const double layer = LayerParametersPerGpu(m, c.split(), false).total();
  // pp 1, tied: word + learned positions + 48 layers + final LayerNorm (scale and bias).
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 0), L * layer + word + s * h + 2 * h);
  // pp 2, tied: the last stage keeps Megatron's copy of the embedding for the output layer.
  c = Config(1, 2, 1);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 0), L / 2 * layer + word + s * h);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 1), L / 2 * layer + 2 * h + word);
  // pp 1, untied and rotary positions: two V×h matrices, no s×h table.
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  c = Config(1, 1, 1);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 0), L * layer + 2 * word + 2 * h);
}

TEST(MemoryStatesTest, DenseStatesShardOverDataParallelTimesContextParallel) {
  // Megatron's distributed optimizer shards over the DP group with CP: 4 × 2 = 8 ranks.
  const ModelSpec m = SmallLlama();
  ParallelConfig c = Config(1, 1, 4);
  c.cp = 2;
  c.zero_stage = 1;
  const double psi = ParametersPerGpu(m, c, 0);
  MemoryBreakdown b = StageModelStateBytes(m, c, 0);
  EXPECT_DOUBLE_EQ(b.weights, 2 * psi);
  EXPECT_DOUBLE_EQ(b.gradients, 2 * psi);
  EXPECT_DOUBLE_EQ(b.optimizer, 12 * psi / 8);
  c.zero_stage = 2;
  b = StageModelStateBytes(m, c, 0);
  EXPECT_DOUBLE_EQ(b.gradients, 2 * psi / 8);
  EXPECT_DOUBLE_EQ(b.gathered, 0);
}

TEST(MemoryStatesTest, ZeroTwoWithPipelineShardsEachStagesGradients) {
  // fp32 main gradients (4 B, as the step config sets for BF16/FP8) sharded over DP per stage.
  const ModelSpec m = Gpt22B();
  ParallelConfig c = Config(8, 4, 8);
  c.zero_stage = 2;
  MemoryParams p;
  p.grad_bytes_per_param = 4;
  for (int stage = 0; stage < 4; ++stage) {
    const double psi = ParametersPerGpu(m, c, stage);
    const MemoryBreakdown b = StageModelStateBytes(m, c, stage, p);
    EXPECT_DOUBLE_EQ(b.weights, 2 * psi) << stage;
    EXPECT_DOUBLE_EQ(b.gradients, 4 * psi / 8) << stage;
    EXPECT_DOUBLE_EQ(b.optimizer, 12 * psi / 8) << stage;
  }
  EXPECT_TRUE(ValidateLayout(m, c, c.num_gpus(), 8).ok());
}

TEST(MemoryStatesTest, HybridShardingShardsWithinTheGroupAndReplicatesAcross) {
  // dp 16 in groups of 4 (HSDP): weights, gradients and optimizer state over 4 ranks × cp 2.
  const ModelSpec m = SmallLlama();
  ParallelConfig c = Config(1, 1, 16);
  c.cp = 2;
  c.zero_stage = 3;
  c.shard_group = 4;
  const double psi = ParametersPerGpu(m, c, 0);
  const MemoryBreakdown b = StageModelStateBytes(m, c, 0);
  EXPECT_DOUBLE_EQ(b.weights, 2 * psi / 8);
  EXPECT_DOUBLE_EQ(b.gradients, 2 * psi / 8);
  EXPECT_DOUBLE_EQ(b.optimizer, 12 * psi / 8);
  EXPECT_DOUBLE_EQ(StateShardDegrees(c).dense, 8);
}

TEST(MemoryStatesTest, FsdpCountsTheGatheredUnitsInFlight) {
  // ZeRO-3 units in execution order: embedding E, the layers (P_l each), output O. Forward of
  // unit i holds it and the prefetched unit i+1: w(u_i + u_i+1). Backward of unit i holds it,
  // the prefetched unit i−1 and the full gradients of unit i+1 until its reduce-scatter ends:
  // w(u_i + u_i−1) + g·u_i+1.
  // GPT 22B (E = V·h + s·h ≈ 0.33 G, P_l = 12h² + 13h ≈ 0.45 G, O = 2h + V·h ≈ 0.32 G): the
  // largest is the backward of a middle layer, w·2P_l + g·P_l.
  const ModelSpec gpt = Gpt22B();
  ParallelConfig c = Config(1, 1, 64);
  c.zero_stage = 3;
  const double gpt_layer = LayerParametersPerGpu(gpt, c.split(), false).total();
  MemoryParams p;  // w = g = 2
  MemoryBreakdown b = StageModelStateBytes(gpt, c, 0, p);
  EXPECT_DOUBLE_EQ(b.gathered, 2 * 2 * gpt_layer + 2 * gpt_layer);
  EXPECT_DOUBLE_EQ(b.weights, 2 * ParametersPerGpu(gpt, c, 0) / 64);
  // Small Llama (P_l ≈ 14 M, E = V·h ≈ 33 M, O = h + V·h), FSDP2's bf16 gathers and fp32
  // gradients (w = 2, g = 4): the backward of the last layer, with the output layer's
  // gradients in flight, is the largest: 2·2P_l + 4·O (> 2(P_l + E) + 4P_l since 4O > 2P_l + 2E).
  const ModelSpec m = SmallLlama();
  c = Config(1, 1, 8);
  c.zero_stage = 3;
  const double layer = LayerParametersPerGpu(m, c.split(), false).total();
  const double h = 1024, O = h + 32000.0 * h;
  p.weight_bytes_per_param = 4;  // FSDP2 keeps fp32 sharded parameters
  p.gathered_bytes_per_param = 2;
  p.grad_bytes_per_param = 4;
  b = StageModelStateBytes(m, c, 0, p);
  EXPECT_DOUBLE_EQ(b.gathered, 2 * 2 * layer + 4 * O);
  EXPECT_DOUBLE_EQ(b.weights, 4 * ParametersPerGpu(m, c, 0) / 8);
  // The gathered units sit beside the activations; the optimizer step frees both.
  MemoryBreakdown t;
  t.activations = 3;
  t.gathered = 2;
  t.step_grads = 4;
  EXPECT_DOUBLE_EQ(t.total(), 5);
}

// Mixtral-style MoE: 8 experts of FFN 3584, top-2, SwiGLU, no biases. Passes only with
// params.cc's LayerParametersPerGpu implementing the expert split (the stub returns expert 0).
ModelSpec SmallMixtral() {
  ModelSpec m = SmallLlama();
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.first_dense_layers = 2;
  return m;
}

TEST(MemoryStatesTest, ExpertStatesShardOverExpertDataParallel) {
  // tp 1, dp 8, ep 4: each GPU holds 8/4 = 2 experts of 3·h·f weights; expert-DP = 8/4 = 2.
  const ModelSpec m = SmallMixtral();
  ParallelConfig c = Config(1, 1, 8);
  c.ep = 4;
  c.zero_stage = 1;
  const double h = 1024, f = 3584;
  const double expert_per_layer = 2 * 3 * h * f;
  const ParamSplit ps = StageParameters(m, c, 0);
  EXPECT_DOUBLE_EQ(ps.expert, 8 * expert_per_layer);  // layers 2..9 are MoE layers
  EXPECT_DOUBLE_EQ(StateShardDegrees(c).expert, 2);
  const MemoryBreakdown b = StageModelStateBytes(m, c, 0);
  EXPECT_DOUBLE_EQ(b.optimizer, 12 * (ps.dense / 8 + ps.expert / 2));
  EXPECT_DOUBLE_EQ(b.weights, 2 * ps.total());
}

TEST(MemoryStatesTest, MoeStageCountsItsDenseAndMoeLayersApart) {
  // Stage 0 of pp 2 holds layers 0–4: two dense layers and three MoE layers.
  const ModelSpec m = SmallMixtral();
  ParallelConfig c = Config(1, 2, 8);
  c.ep = 8;
  const ParamSplit dense = LayerParametersPerGpu(m, c.split(), false);
  const ParamSplit moe = LayerParametersPerGpu(m, c.split(), true);
  const ParamSplit s0 = StageParameters(m, c, 0);
  const double word = 32000.0 * 1024;
  EXPECT_DOUBLE_EQ(s0.dense, 2 * dense.dense + 3 * moe.dense + word);
  EXPECT_DOUBLE_EQ(s0.expert, 2 * dense.expert + 3 * moe.expert);
  EXPECT_DOUBLE_EQ(ParametersPerGpu(m, c, 1), 5 * moe.total() + 1024 + word);
}

}  // namespace
}  // namespace trainsim::parallelism
