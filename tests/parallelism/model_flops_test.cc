// FLOP conventions of parallelism/model.h: Narayanan's (full attention square) and Megatron-Core's
// num_floating_point_operations (causal half), for dense, GQA, MoE and MLA models. Expectations
// are the formulas written out by hand for each model, and published Megatron-Bridge ratios.
#include <gtest/gtest.h>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

// Llama 3 70B (Hugging Face meta-llama/Meta-Llama-3-70B config.json), seq 8192.
ModelSpec Llama3_70B() {
  ModelSpec m;
  m.num_layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.ffn_hidden = 28672;
  m.swiglu = true;
  m.seq_len = 8192;
  m.vocab = 128256;
  m.flash_attention = true;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  m.dropout = false;
  return m;
}

// Llama 3.1 405B: 126 layers, h 16384, 128 heads, 8 KV heads, FFN 53248.
ModelSpec Llama3_405B() {
  ModelSpec m = Llama3_70B();
  m.num_layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.ffn_hidden = 53248;
  return m;
}

// Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): 8 experts of FFN 14336, top 2, seq 4096.
ModelSpec Mixtral8x7B() {
  ModelSpec m = Llama3_70B();
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  return m;
}

// Qwen3-235B-A22B (Qwen/Qwen3-235B-A22B config.json): head_dim 128 with 64 heads, so
// heads · head_dim = 8192 ≠ hidden 4096; 128 experts of 1536, top 8, every layer MoE.
ModelSpec Qwen3_235B() {
  ModelSpec m = Llama3_70B();
  m.num_layers = 94;
  m.hidden = 4096;
  m.heads = 64;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn_hidden = 12288;
  m.vocab = 151936;
  m.seq_len = 4096;
  m.moe.experts = 128;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 1536;
  return m;
}

// Qwen3-30B-A3B: 48 layers, h 2048, 32 heads of 128, 4 KV heads, 128 experts of 768, top 8.
ModelSpec Qwen3_30B() {
  ModelSpec m = Qwen3_235B();
  m.num_layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.ffn_hidden = 6144;
  m.moe.expert_ffn_hidden = 768;
  return m;
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): MLA, 3 dense layers then 58 MoE layers of
// 256 experts (2048 wide, top 8) and one shared expert, seq 4096.
ModelSpec DeepSeekV3() {
  ModelSpec m = Llama3_70B();
  m.num_layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 0;
  m.ffn_hidden = 18432;
  m.vocab = 129280;
  m.seq_len = 4096;
  m.mla = {1536, 512, 64, 128, 128};
  m.moe.experts = 256;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 2048;
  m.moe.shared_experts = 1;
  m.moe.first_dense_layers = 3;
  return m;
}

TEST(ModelFlopsTest, MegatronCountForLlama3_70BFollowsTheFormula) {
  // Per token and layer: 6·h·(q + k + v) + 6·q·h projections, 6·h·3f SwiGLU MLP; per sequence
  // and layer 6·q·s² causal attention (s²/2 of QKᵀ and of AV, 2 FLOPs each, × 3); 6·h·V logits.
  const double B = 16, s = 8192, h = 8192, q = 8192, kv = 1024, f = 28672, V = 128256, L = 80;
  const double expected =
      B * s * (L * (6 * h * (q + 2 * kv) + 6 * q * h + 6 * h * 3 * f) + 6 * h * V) +
      B * s * s * L * 6 * q;
  EXPECT_NEAR(MegatronModelFlopsPerIteration(Llama3_70B(), 16), expected, expected * 1e-12);
}

TEST(ModelFlopsTest, MegatronCountForMixtralCountsTopKExperts) {
  const double B = 8, s = 4096, h = 4096, q = 4096, kv = 1024, f = 14336, V = 32000, L = 32;
  const double expected =
      B * s * (L * (6 * h * (q + 2 * kv) + 6 * q * h + 6 * h * (2 * f * 3)) + 6 * h * V) +
      B * s * s * L * 6 * q;
  EXPECT_NEAR(MegatronModelFlopsPerIteration(Mixtral8x7B(), 8), expected, expected * 1e-12);
}

TEST(ModelFlopsTest, MegatronCountForDeepSeekV3UsesTheMlaTermsAndDenseFirstLayers) {
  const double B = 4, s = 4096, h = 7168, n = 128, V = 129280;
  const double q_lora = 1536, kv_lora = 512, rope = 64, nope = 128, v = 128;
  const double q_term = q_lora * (h + n * (nope + rope) + 1);
  const double kv_term = kv_lora * (h + n * (nope + v) + 1) + h * rope;
  const double attn = 6 * (q_term + kv_term + n * v * h);
  const double core = 6 * (n * (nope + rope) / 2 + n * v / 2);
  const double mlp = 6 * h * (18432.0 * 3 * 3 + (2048.0 * 8 * 3 + 2048.0 * 3) * 58);
  const double expected = B * s * (mlp + 61 * attn + 6 * h * V) + B * s * s * 61 * core;
  EXPECT_NEAR(MegatronModelFlopsPerIteration(DeepSeekV3(), 4), expected, expected * 1e-12);
}

TEST(ModelFlopsTest, MegatronCountPerTokenMatchesMegatronBridgePublishedRatios) {
  // Megatron-Bridge's tables give model TFLOP/s per GPU and tokens/s per GPU from the same runs
  // (shared/validation/megatron_bridge_h100_pretrain.csv); their ratio is the FLOPs per token
  // Megatron-Core counted. Three-digit TFLOP/s: 0.1% rounding.
  struct Case {
    ModelSpec m;
    double tflops, tokens_per_s;
  };
  const Case cases[] = {
      {Llama3_70B(), 728, 1621},  // 26.02 LLAMA3_70B FP8, seq 8192
      {Llama3_405B(), 784, 311},  // 26.02 LLAMA3.1_405B FP8, seq 8192
      {Qwen3_235B(), 250, 1686},  // 26.04 Qwen3_235B_a22B FP8, seq 4096
      {Qwen3_30B(), 206, 8960},   // 26.04.01 Qwen3_30B_a3B FP8, seq 4096
  };
  for (const Case& c : cases) {
    const double per_token = MegatronModelFlopsPerIteration(c.m, 1) / c.m.seq_len;
    const double published = c.tflops * 1e12 / c.tokens_per_s;
    EXPECT_NEAR(per_token, published, 0.005 * published) << c.m.hidden;
  }
}

TEST(ModelFlopsTest, GptConventionsDifferByTheCausalHalfOfAttention) {
  // Narayanan counts the full s×s square (12·B·s²·l·h), Megatron-Core the causal half.
  for (int h : {2304, 8192, 12288}) {
    ModelSpec m;
    m.num_layers = 24;
    m.hidden = h;
    m.heads = 32;
    m.seq_len = 2048;
    m.vocab = 51200;
    const double B = 64, s = 2048, l = 24;
    const double f72 = 72 * B * s * l * double(h) * h * (1 + s / (6 * h) + 51200 / (12 * l * h));
    EXPECT_NEAR(ModelFlopsPerIteration(m, 64), f72, f72 * 1e-12);
    EXPECT_NEAR(ModelFlopsPerIteration(m, 64) - MegatronModelFlopsPerIteration(m, 64),
                6 * B * s * s * l * h, f72 * 1e-12);
  }
}

TEST(ModelFlopsTest, NarayananCountGeneralisesToGqaSwigluAndRouters) {
  // Dense GQA: the conventions differ only by the causal half, 6·B·s²·L·q.
  const ModelSpec llama = Llama3_70B();
  const double B = 2, s = 8192, L = 80, q = 8192;
  EXPECT_NEAR(ModelFlopsPerIteration(llama, 2) - MegatronModelFlopsPerIteration(llama, 2),
              6 * B * s * s * L * q, 1e-9 * ModelFlopsPerIteration(llama, 2));
  // MoE: also the router GEMM (h × experts), which Megatron-Core leaves out.
  const ModelSpec mix = Mixtral8x7B();
  const double sm = 4096, hm = 4096;
  EXPECT_NEAR(ModelFlopsPerIteration(mix, 2) - MegatronModelFlopsPerIteration(mix, 2),
              6 * B * sm * sm * 32 * hm + 6 * B * sm * hm * 8 * 32,
              1e-9 * ModelFlopsPerIteration(mix, 2));
  // Qwen3: heads · head_dim (8192) sets the projections and attention, not the hidden size.
  const ModelSpec qw = Qwen3_235B();
  const double hq = 4096, qq = 8192, kq = 512, fq = 1536, Vq = 151936, Lq = 94;
  const double layer =
      sm * (2 * hq * (qq + 2 * kq) + 2 * qq * hq + 2 * hq * 128 + 8 * 2 * hq * fq * 3) +
      2 * sm * sm * (qq + qq);
  const double expected = 3 * B * (Lq * layer + 2 * sm * hq * Vq);
  EXPECT_NEAR(ModelFlopsPerIteration(qw, 2), expected, expected * 1e-12);
}

TEST(ModelFlopsTest, HardwareFlopsAddFlashRecomputeAndFullForward) {
  ModelSpec m = Llama3_70B();
  const double B = 2, s = 8192, L = 80, q = 8192;
  const double model = ModelFlopsPerIteration(m, 2);
  // The flash kernel's backward recomputes QKᵀ (2·s²·q per layer and sequence, full square).
  const double flash = B * L * 2 * s * s * q;
  EXPECT_NEAR(HardwareFlopsPerIteration(m, 2, Recompute::kNone), model + flash, model * 1e-12);
  // Selective recompute of the core (core_attn, the default module) re-runs the flash kernel's
  // forward: QKᵀ and AV, 2·2·s²·q per layer and sequence in the full-square convention.
  const double core = B * L * 2 * 2 * s * s * q;
  EXPECT_NEAR(HardwareFlopsPerIteration(m, 2, Recompute::kSelective), model + flash + core,
              model * 1e-12);
  // With no module that runs a matrix product, selective adds nothing.
  EXPECT_NEAR(HardwareFlopsPerIteration(m, 2, Recompute::kSelective, kRecomputeLayernorm),
              model + flash, model * 1e-12);
  // Full recompute: one more forward of the layers: a third of the model count less the
  // logits (2·s·h·V per sequence forward), which are not recomputed.
  const double layers_fwd = model / 3 - B * 2 * s * 8192 * 128256;
  EXPECT_NEAR(HardwareFlopsPerIteration(m, 2, Recompute::kFull), model + layers_fwd + flash,
              model * 1e-12);
}

}  // namespace
}  // namespace trainsim::parallelism
