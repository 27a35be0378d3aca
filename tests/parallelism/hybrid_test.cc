// Hybrid Mamba-2 / attention / MLP / MoE layers and sliding-window attention (parallelism/
// model.h): parameters, FLOPs, collectives and activations against closed forms written out here
// from the Mamba-2 mixer's matrices (Dao & Gu 2024; Megatron-Core's MambaMixer), the SSD
// algorithm's block products, the band a sliding window leaves, and against NVIDIA's published
// Nemotron 3 Nano counts (31.6 B total, 3.2 B active, 3.6 B with the embeddings) and the
// Megatron-Bridge row's model FLOPs per token (328 TFLOP/s / 14,719 tokens/s).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "parallelism/memory.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

// Nemotron 3 Nano 30B-A3B (huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16).
ModelSpec Nano() {
  ModelSpec m;
  m.num_layers = 52;
  m.hidden = 2688;
  m.heads = 32;
  m.kv_heads = 2;
  m.head_dim = 128;
  m.ffn_hidden = 1856;
  m.seq_len = 8192;
  m.vocab = 131072;
  m.swiglu = false;
  m.dropout = false;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  m.flash_attention = true;
  m.hybrid_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  m.mamba = MambaSpec{64, 64, 128, 8, 4, 128};
  m.moe.experts = 128;
  m.moe.top_k = 6;
  m.moe.expert_ffn_hidden = 1856;
  m.moe.shared_experts = 1;
  m.moe.shared_expert_ffn_hidden = 3712;
  return m;
}

constexpr LayerKind kMamba{LayerBlock::kMamba, false, false};

TensorSplit Tp(int tp) {
  TensorSplit s;
  s.tp = tp;
  return s;
}

TEST(HybridTest, PatternGivesEachLayerItsBlock) {
  const ModelSpec m = Nano();
  ASSERT_TRUE(ValidateModel(m).ok());
  int mamba = 0, attn = 0, moe = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind k = LayerKindAt(m, l);
    mamba += k.block == LayerBlock::kMamba;
    attn += k.block == LayerBlock::kAttention;
    moe += k.block == LayerBlock::kMoe;
    EXPECT_EQ(k.moe, k.block == LayerBlock::kMoe) << l;
    EXPECT_EQ(m.IsMoeLayer(l), k.block == LayerBlock::kMoe) << l;
  }
  // The model card: 23 Mamba-2, 23 MoE and 6 attention layers.
  EXPECT_EQ(mamba, 23);
  EXPECT_EQ(moe, 23);
  EXPECT_EQ(attn, 6);
  EXPECT_EQ(DistinctLayerKinds(m).size(), 3u);
}

TEST(HybridTest, MambaLayerParametersAreTheMixersMatrices) {
  const ModelSpec m = Nano();
  const double h = 2688, d_inner = 64 * 64, gn = 8 * 128, heads = 64;
  const double conv_dim = d_inner + 2 * gn;
  // in_proj h → (z, x, B, C, dt); conv1d weight (width 4) and bias; A_log, D, dt_bias; the
  // gated norm's scale; out_proj; the layer's RMSNorm.
  const double expected = h * (2 * d_inner + 2 * gn + heads) + conv_dim * (4 + 1) + 3 * heads +
                          d_inner + d_inner * h + h;
  EXPECT_EQ(double(LayerParameterCount(m, kMamba)), expected);
  // Everything but the pre-norm is split over TP.
  const ParamSplit two = LayerParametersPerGpu(m, Tp(2), kMamba);
  EXPECT_DOUBLE_EQ(two.dense, (expected - h) / 2 + h);
  EXPECT_EQ(two.expert, 0);
}

TEST(HybridTest, NemotronNanoCountsMatchThePublishedTotalAndActive) {
  const ModelSpec m = Nano();
  const double total = double(ParameterCount(m));
  const double active = double(ActiveParameterCount(m));
  const double input_embedding = 131072.0 * 2688;
  // NVIDIA: 31.6 B total; 3.2 B active per token, 3.6 B with the embeddings.
  EXPECT_NEAR(total, 31.6e9, 0.005 * 31.6e9);
  EXPECT_NEAR(active - input_embedding, 3.2e9, 0.05e9);
  EXPECT_NEAR(active, 3.6e9, 0.05e9);
}

TEST(HybridTest, MambaForwardFlopsAreTheProjectionsAndTheSsdBlockProducts) {
  const ModelSpec m = Nano();
  const double T = 8192, h = 2688, d_inner = 4096, G = 8, N = 128, P = 64, H = 64, Q = 128;
  // Dao & Gu 2024 §6 per token: C·Bᵀ within the chunk (2QN per group), times x (2QP per head),
  // the chunk state Bᵀx and its output C·state (2NP each per head).
  const double ssd = 2 * Q * N * G + 2 * Q * P * H + 4 * N * P * H;
  const double proj = 2 * h * (2 * d_inner + 2 * G * N + H) + 2 * d_inner * h;
  for (int tp : {1, 2, 4}) {
    double fwd = 0, bwd = 0;
    bool has_ssd = false;
    for (const KernelOp& op : LayerOps(m, Tp(tp), 1, kMamba)) {
      fwd += op.fwd_matmul_flops;
      bwd += op.bwd_matmul_flops;
      has_ssd |= op.name == "ssd_scan";
    }
    EXPECT_TRUE(has_ssd);
    EXPECT_NEAR(fwd, T * (proj + ssd) / tp, 1e-9 * fwd) << tp;
    EXPECT_NEAR(bwd, 2 * fwd, 1e-9 * bwd) << tp;  // dgrad and wgrad
  }
}

TEST(HybridTest, MegatronCountMatchesTheBridgeRowsFlopsPerToken) {
  const ModelSpec m = Nano();
  // Megatron-Core's hybrid_flops, per token forward: 6 attention layers, 23 Mamba layers with
  // d_in = 2h, 23 MoE layers (squared ReLU, not gated), logits; × 3.
  const double h = 2688, s = 8192, q = 4096, kv = 256, d_in = 2 * h;
  const double attn = 4 * q * h + 4 * h * kv + 4 * q * (s / 2);
  const double mamba = 2 * h * (2 * d_in + 2 * 8 * 128 + 64) + 7 * d_in * 128 + 2 * d_in * h;
  const double moe = 4 * h * (1856.0 * 6 + 3712);
  const double per_token = 3 * (6 * attn + 23 * mamba + 23 * moe + 2 * h * 131072);
  EXPECT_NEAR(MegatronModelFlopsPerIteration(m, 1) / s, per_token, 1e-9 * per_token);
  // The published row: 328 model TFLOP/s at 14,719 tokens/s per GPU (rounded figures).
  EXPECT_NEAR(per_token, 328e12 / 14719, 0.005 * per_token);
}

TEST(HybridTest, CausalKeysPerQueryIsTheBandsMean) {
  // s = 4, window 1 (two keys at most): queries see 1, 2, 2, 2 keys.
  EXPECT_DOUBLE_EQ(CausalKeysPerQuery(4, 1), 7.0 / 4);
  EXPECT_DOUBLE_EQ(CausalKeysPerQuery(4, 0), 5.0 / 2);   // full causal: (s + 1) / 2
  EXPECT_DOUBLE_EQ(CausalKeysPerQuery(4, 10), 5.0 / 2);  // a window past the sequence
}

ModelSpec GptOssLike() {
  ModelSpec m;
  m.num_layers = 4;
  m.hidden = 2880;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 64;
  m.ffn_hidden = 2880;
  m.seq_len = 4096;
  m.vocab = 201088;
  m.swiglu = true;
  m.flash_attention = true;
  m.dropout = false;
  m.learned_position_embedding = false;
  m.window = 128;
  m.window_full_every = 2;
  return m;
}

TEST(HybridTest, SlidingWindowAttentionExecutesTheBand) {
  const ModelSpec m = GptOssLike();
  ASSERT_TRUE(ValidateModel(m).ok());
  EXPECT_TRUE(LayerKindAt(m, 0).windowed);  // GPT-OSS: layer 0 sliding, layer 1 full
  EXPECT_FALSE(LayerKindAt(m, 1).windowed);
  auto flash = [&](bool windowed) {
    for (const KernelOp& op :
         LayerOps(m, Tp(1), 2, LayerKind{LayerBlock::kTransformer, false, windowed})) {
      if (op.kind == OpKind::kFlashAttention) return op;
    }
    return KernelOp{};
  };
  const double s = 4096, W = 129, b = 2, heads = 64, d = 64;
  // Σ over queries of min(i + 1, W) keys: s·W − W(W − 1)/2; QKᵀ and AV, 2 FLOPs per MAC.
  const double band = s * W - W * (W - 1) / 2;
  EXPECT_NEAR(flash(true).fwd_matmul_flops, 2 * b * heads * band * (d + d), 1e-9 * band);
  EXPECT_EQ(flash(true).n, 129);
  EXPECT_NEAR(flash(false).fwd_matmul_flops, 2 * b * heads * (s * s / 2) * (d + d), 1);
}

TEST(HybridTest, MegatronCountCountsTheWindowOnWindowedLayersOnly) {
  ModelSpec full = GptOssLike();
  full.window = 0;
  const ModelSpec swa = GptOssLike();
  const double s = 4096, q = 64.0 * 64, W = 129;
  const double ctx = W - W * (W - 1) / (2 * s);
  // Megatron-Bridge: full layers 6·q·s per token of core, windowed layers 12·q·ctx; 2 of 4.
  const double diff = s * 2 * (6 * q * s - 12 * q * ctx);
  EXPECT_NEAR(MegatronModelFlopsPerIteration(full, 1) - MegatronModelFlopsPerIteration(swa, 1),
              diff, 1e-9 * diff);
}

TEST(HybridTest, MambaLayerHasTheAttentionPairOfTpCollectives) {
  const ModelSpec m = Nano();
  const double T = 8192, bytes = T * 2688 * 2;
  const auto cols = LayerTpCollectives(m, Tp(2), 1, kMamba);
  ASSERT_EQ(cols.size(), 2u);  // f and g around in_proj / out_proj
  for (const TpCollective& c : cols) {
    EXPECT_EQ(c.kind, TpCollectiveKind::kAllReduce);
    EXPECT_DOUBLE_EQ(c.bytes, bytes);
  }
  // A MoE layer with a shared expert keeps the MLP's pair and adds the EP all-to-alls.
  TensorSplit ep = Tp(2);
  ep.ep = 8;
  const auto moe = LayerTpCollectives(m, ep, 1, LayerKind{LayerBlock::kMoe, true, false});
  int tp = 0;
  for (const TpCollective& c : moe) tp += c.group == CommGroup::kTp;
  EXPECT_EQ(tp, 2);
}

TEST(HybridTest, MambaActivationsAreTheMixersSavedTensors) {
  const ModelSpec m = Nano();
  const double T = 8192, h = 2688, e = 2, t = 2;
  const double in_w = 2 * 4096 + 2 * 1024 + 64, conv = 4096 + 2 * 1024, inner = 4096;
  // Norm input and in_proj input (T·h each, whole without SP), in_proj output, conv output,
  // scan output and gated-norm output (split over TP), fp32 dt and decay per head.
  const double expected = 2 * e * T * h + e * T * (in_w + conv + 2 * inner) / t + 8 * T * 64 / t;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Tp(2), Recompute::kNone, 1, kMamba), expected);
}

TEST(HybridTest, ValidateRejectsABadPattern) {
  ModelSpec m = Nano();
  m.hybrid_pattern[3] = 'X';
  EXPECT_FALSE(ValidateModel(m).ok());
  m = Nano();
  m.hybrid_pattern.pop_back();
  EXPECT_FALSE(ValidateModel(m).ok());
  m = GptOssLike();
  m.window = -1;
  EXPECT_FALSE(ValidateModel(m).ok());
}

}  // namespace
}  // namespace trainsim::parallelism
