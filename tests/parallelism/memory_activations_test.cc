// Activation memory beyond the GPT shape: GQA and head_dim, SwiGLU and the FFN width, no
// dropout, flash attention's statistics, context parallelism, MoE layers (router, routed tokens
// with load imbalance and capacity, shared experts), MLA, and the per-stage peak of uneven and
// MoE pipelines. Each expectation is the closed form of docs/memory.md, written out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "parallelism/memory.h"

namespace trainsim::parallelism {
namespace {

ModelSpec SmallLlama() {
  ModelSpec m;
  m.num_layers = 10;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 4;  // K and V are 4 · 64 = 256 wide
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

ModelSpec SmallMixtral() {
  ModelSpec m = SmallLlama();
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.first_dense_layers = 2;
  return m;
}

TensorSplit Split(int tp, bool sp, int cp = 1) {
  TensorSplit s;
  s.tp = tp;
  s.sequence_parallel = sp;
  s.cp = cp;
  return s;
}

TEST(MemoryActivationsTest, GqaAndSwigluStoreTheirOwnWidths) {
  // T = s·b tokens, e = 2 bytes. Replicated unless SP: the two norms' inputs, the QKV input and
  // the MLP input (4h). TP-split: Q (h), K and V (kv = 256 each), the context (h), SwiGLU's
  // gate/up output (2f) and its output (f). No dropout masks. Selective: no scores.
  const ModelSpec m = SmallLlama();
  const double T = 2048.0 * 2, h = 1024, kv = 256, f = 3584, t = 2, a = 16, s = 2048;
  const double selective = 2 * T * (4 * h / t + (h + 2 * kv + h) / t + 3 * f / t);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, true), Recompute::kSelective, 2), selective);
  const double no_sp = 2 * T * (4 * h + (h + 2 * kv + h) / t + 3 * f / t);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, false), Recompute::kSelective, 2), no_sp);
  // No recompute, no flash: the softmax output (2 bytes per score; no dropout mask or output),
  // a/t heads × T queries × s keys.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, true), Recompute::kNone, 2),
                   selective + 2 * (a / t) * T * s);
  // Flash attention keeps the fp32 log-sum-exp per head and query instead.
  ModelSpec fa = m;
  fa.flash_attention = true;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(fa, Split(2, true), Recompute::kNone, 2),
                   selective + 4 * (a / t) * T);
  // Full recompute: the layer input, split by SP.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, true), Recompute::kFull, 2), 2 * T * h / t);
}

TEST(MemoryActivationsTest, EagerKernelsKeepTheTensorsAutogradSaves) {
  // The same layer run eagerly as torchtitan writes it (no SP, TP 2, selective): each RMSNorm
  // keeps its fp32 input copy and its bf16 output (4 + 2 bytes per element instead of the
  // input's 2); SDPA keeps K and V as repeat_kv expanded them, h wide each instead of kv; the
  // MLP keeps w1's and w3's outputs, silu's output and the product (4 widths instead of 3).
  ModelSpec m = SmallLlama();
  m.eager_kernels = true;
  m.eager_norm = true;
  const double T = 2048.0 * 2, h = 1024, f = 3584, t = 2;
  const double eager = 2 * (4 + 2) * T * h  // the two norms
                       + 2 * T * (2 * h)    // QKV input and MLP input (replicated without SP)
                       + 2 * T * (h + 2 * h + h) / t + 2 * T * 4 * f / t;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, false), Recompute::kSelective, 2), eager);
  // With a fused RMSNorm kernel (torchtitan's fused_rmsnorm) the norms keep their inputs only.
  m.eager_norm = false;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, false), Recompute::kSelective, 2),
                   eager - 2 * 4 * T * h);
  m.eager_norm = true;
  // Full recompute keeps only the layer's input either way.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, false), Recompute::kFull, 2), 2 * T * h);
}

// FP8 / FP4 training: Transformer Engine saves a linear layer's input quantized, one usage
// (module/linear.py), so each GEMM input the layer keeps for backward costs g bytes instead of
// e = 2: the QKV input, the context (the projection's input), fc1's input and fc2's input
// (SwiGLU's output, f wide). The norms' inputs, Q/K/V of the BF16 attention core and SwiGLU's
// input (2f) stay 16-bit.
TEST(MemoryActivationsTest, LowPrecisionGemmsSaveTheirInputsQuantized) {
  const ModelSpec bf16 = SmallLlama();
  const double T = 2048, h = 1024, q = 1024, f = 3584;
  const double base = LayerActivationBytes(bf16, Split(1, false), Recompute::kSelective, 1);
  struct Case {
    double g;
    bool fp8_attention;
  };
  // FP8 (1 byte), MXFP8 (1 + 1/32: an E8M0 scale per 32), NVFP4 (1/2 + 1/16: E4M3 per 16).
  for (const Case c : {Case{1.0, false}, Case{1.0 + 1.0 / 32, false}, Case{0.5 + 1.0 / 16, false},
                       Case{1.0, true}}) {
    ModelSpec m = bf16;
    m.saved_gemm_input_bytes = c.g;
    m.fp8_attention_saved = c.fp8_attention;
    // QKV input (h), context (q), fc1 input (h), fc2 input (f) go from 2 bytes to g; with FP8
    // attention the core's Q, K and V (q + 2·kv = 1,536) too.
    const double gemm_inputs = h + q + h + f;
    const double core = c.fp8_attention ? q + 2 * 256.0 : 0.0;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(1, false), Recompute::kSelective, 1),
                     base - (2 - c.g) * T * (gemm_inputs + core))
        << c.g << " " << c.fp8_attention;
  }
  // Full recomputation keeps only the layer's 16-bit input, whatever the GEMMs' precision.
  ModelSpec fp8 = bf16;
  fp8.saved_gemm_input_bytes = 1;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(fp8, Split(1, false), Recompute::kFull, 1), 2 * T * h);
}

TEST(MemoryActivationsTest, HeadDimWidensQueryAndKeyValueTensors) {
  // head_dim 128 with 16 heads: Q and the context are 2048 wide, K and V 4 · 128 = 512.
  ModelSpec m = SmallLlama();
  m.head_dim = 128;
  const double T = 2048, h = 1024, q = 2048, kv = 512, f = 3584;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(1, false), Recompute::kSelective, 1),
                   2 * T * (4 * h + q + 2 * kv + q + 3 * f));
}

TEST(MemoryActivationsTest, ContextParallelismDividesEveryTermByCp) {
  // Each CP rank holds s/cp of the queries (and of the layer's every tensor); its scores are
  // (s/cp) × s. So the layer's bytes divide by cp exactly, in every recompute mode.
  ModelSpec m = SmallLlama();
  m.seq_len = 8192;
  m.dropout = true;
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    for (bool flash : {false, true}) {
      m.flash_attention = flash;
      const double one = LayerActivationBytes(m, Split(2, true, 1), r, 1);
      EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(2, true, 4), r, 1), one / 4)
          << RecomputeName(r) << " flash " << flash;
    }
  }
}

TEST(MemoryActivationsTest, MoeLayerStoresRouterRoutedTokensAndExpertActivations) {
  // tp 1, ep 8, load imbalance 1.5. MoE MLP (e = 2, E = 8, k = 2, f_e = f = 3584):
  //   input e·T·h; router logits (e) and fp32 scores (4): (e + 4)·T·E;
  //   routed tokens on the busiest GPU R = T·k·1.5: permuted input e·R·h, SwiGLU 3e·R·f_e;
  //   expert outputs weighted by the router at combine: e·T·k·h.
  // The rest of the layer as in a dense layer (selective): norms 2·e·T·h, QKV input e·T·h,
  // Q, K, V and context e·T·(2h + 2kv).
  ModelSpec m = SmallMixtral();
  m.moe.load_imbalance = 1.5;
  TensorSplit split = Split(1, false);
  split.ep = 8;
  const double e = 2, T = 2048, h = 1024, kv = 256, f = 3584, E = 8, k = 2;
  const double rest = e * T * (3 * h + 2 * h + 2 * kv);
  auto moe_mlp = [&](double R) {
    return e * T * h + (e + 4) * T * E + e * R * h + 3 * e * R * f + e * T * k * h;
  };
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + moe_mlp(T * k * 1.5));
  // A capacity factor of 1.25 drops what exceeds it: the busiest GPU holds T·k·1.25.
  m.moe.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + moe_mlp(T * k * 1.25));
  // One shared expert of width f on every token: SwiGLU's 3e·T·f more.
  m.moe.capacity_factor = 0;
  m.moe.shared_experts = 1;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + moe_mlp(T * k * 1.5) + 3 * e * T * f);
}

// The same MoE layer with FP8 experts: the permuted tokens (fc1's input) and the activation's
// output (fc2's input) are saved quantized (g = 1 byte); the router's input, its logits and
// scores, SwiGLU's input and the weighted outputs at combine stay as they were. moe_act drops
// the fc2 input altogether.
TEST(MemoryActivationsTest, Fp8ExpertsSaveTheirGemmInputsQuantized) {
  ModelSpec m = SmallMixtral();
  m.saved_gemm_input_bytes = 1;
  TensorSplit split = Split(1, false);
  split.ep = 8;
  const double e = 2, g = 1, T = 2048, h = 1024, kv = 256, f = 3584, E = 8, k = 2;
  const double R = T * k;  // balanced router (load_imbalance 1)
  const double rest = e * T * 2 * h + g * T * h + e * T * (h + 2 * kv) + g * T * h;
  const double router = e * T * h + (e + 4) * T * E + e * T * k * h;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + router + g * R * h + (2 * e + g) * R * f);
  ParallelConfig c;
  c.ep = 8;
  c.micro_batch = 1;
  c.recompute = Recompute::kSelective;
  c.recompute_modules = kRecomputeCoreAttn | kRecomputeMoeAct;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, c, LayerKind{LayerBlock::kTransformer, true, false}),
                   rest + router + g * R * h + 2 * e * R * f);
}

TEST(MemoryActivationsTest, MoeWithTensorParallelRoutesTheLocalShareOfTokens) {
  // tp 4 with SP, etp 1: each GPU routes its T/4 local tokens; R = T·k·etp/tp (balanced).
  // With etp 4 the expert TP group sees the whole token set: R = T·k, FFN split over 4.
  const ModelSpec m = SmallMixtral();
  const double e = 2, T = 2048, h = 1024, kv = 256, f = 3584, E = 8, k = 2, t = 4;
  const double rest = e * T * (3 * h / t + (2 * h + 2 * kv) / t);
  TensorSplit split = Split(4, true);
  split.ep = 2;
  const double local = T / t;
  auto moe_mlp = [&](double R, double etp) {
    return e * local * h + (e + 4) * local * E + e * R * h + 3 * e * R * f / etp +
           e * local * k * h;
  };
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + moe_mlp(T * k / t, 1));
  split.etp = 4;
  split.ep = 1;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, split, Recompute::kSelective, 1, true),
                   rest + moe_mlp(T * k, 4));
}

TEST(MemoryActivationsTest, MlaStoresCompressedLatentsAndUpProjectedHeads) {
  // DeepSeek-V3 attention (q_lora 1536, kv_lora 512, rope 64, nope 128, v 128, 128 heads,
  // h 7168), a dense layer of FFN 18432, tp 8 with SP, selective:
  //   replicated/SP: norms 2h, QKV input h, MLP input h, latents 2·1536 + 2·512 + 64;
  //   TP: Q and K 128·192 each, V and context 128·128 each, SwiGLU 3f.
  ModelSpec m;
  m.num_layers = 4;
  m.hidden = 7168;
  m.heads = 128;
  m.seq_len = 4096;
  m.vocab = 129280;
  m.ffn_hidden = 18432;
  m.swiglu = true;
  m.dropout = false;
  m.mla = {1536, 512, 64, 128, 128};
  const double T = 4096, h = 7168, t = 8;
  const double qk = 128 * 192, v = 128 * 128, f = 18432;
  const double latents = 2 * 1536 + 2 * 512 + 64;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, Split(8, true), Recompute::kSelective, 1),
                   2 * T * ((4 * h + latents) / t + (2 * qk + 2 * v) / t + 3 * f / t));
}

ParallelConfig Pipeline(int pp, int64_t micro_batches) {
  ParallelConfig c;
  c.tp = 2;
  c.pp = pp;
  c.dp = 1;
  c.sequence_parallel = true;
  c.recompute = Recompute::kSelective;
  c.global_batch = micro_batches;
  return c;
}

TEST(MemoryActivationsTest, UnevenStagesHoldTheirLayersTimesTheirMicroBatchesInFlight) {
  // 10 layers over pp 4 as 1 + 4 + 4 + 1. Under 1F1B rank r holds min(pp − r, m) micro-batches
  // (4, 3, 2, 1); the last stage adds the loss of one micro-batch: the fp32 softmax of its
  // b·s·V/t logits kept (4 bytes each) and the bf16 gradient cast at the loss backward (2).
  const ModelSpec m = SmallLlama();
  ParallelConfig c = Pipeline(4, 8);
  c.first_stage_layers = 1;
  c.last_stage_layers = 1;
  ASSERT_TRUE(ValidateLayout(m, c, c.num_gpus(), 8).ok());
  const double A = LayerActivationBytes(m, c.split(), Recompute::kSelective, 1);
  const double logits = 6.0 * 2048 * 32000 / 2;
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 0), 4 * 1 * A);
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 1), 3 * 4 * A);
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 2), 2 * 4 * A);
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 3), 1 * 1 * A + logits);
  const MemoryReport r = EstimateMemory(m, c, 1e15, 8);
  EXPECT_EQ(r.per_stage.size(), 4u);
  EXPECT_DOUBLE_EQ(r.per_stage[1].activations, 12 * A);
}

TEST(MemoryActivationsTest, MoePipelineStagesSumTheirDenseAndMoeLayers) {
  // pp 2: stage 0 holds layers 0–4 (2 dense, 3 MoE) for 2 micro-batches in flight; stage 1
  // five MoE layers for one, plus the logits. Full recompute adds, once, the largest layer's
  // full activations (the one being recomputed).
  const ModelSpec m = SmallMixtral();
  ParallelConfig c = Pipeline(2, 4);
  c.sequence_parallel = true;
  const double dense = LayerActivationBytes(m, c.split(), Recompute::kSelective, 1, false);
  const double moe = LayerActivationBytes(m, c.split(), Recompute::kSelective, 1, true);
  const double logits = 6.0 * 2048 * 32000 / 2;
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 0), 2 * (2 * dense + 3 * moe));
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 1), 5 * moe + logits);
  c.recompute = Recompute::kFull;
  const double input = 2.0 * 2048 * 1024 / 2;
  const double full_moe = LayerActivationBytes(m, c.split(), Recompute::kNone, 1, true);
  ASSERT_GT(full_moe, LayerActivationBytes(m, c.split(), Recompute::kNone, 1, false));
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 0), 2 * 5 * input + full_moe);
  // On the last stage the loss backward ends before the first recompute: the larger of the two.
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, c, 1), 5 * input + std::max(logits, full_moe));
  // GPipe keeps every micro-batch's softmax (4 bytes per logit) until its backward.
  c.schedule = PipelineSchedule::kGpipe;
  // With 4 micro-batches: the loss phase holds 4 softmaxes and one bf16 gradient; the
  // recompute phase the 3 softmaxes not yet consumed and the recomputed layer.
  const double n_logits = 2048.0 * 32000 / 2;
  EXPECT_DOUBLE_EQ(
      StageActivationBytes(m, c, 1),
      4 * 5 * input + std::max(4 * 4 * n_logits + 2 * n_logits, 3 * 4 * n_logits + full_moe));
}

bool HasSuggestion(const MemoryReport& r, const std::string& what) {
  for (const std::string& s : r.suggestions) {
    if (s.rfind(what, 0) == 0) return true;
  }
  return false;
}

TEST(MemoryActivationsTest, LongSequenceThatDoesNotFitIsOfferedContextParallelism) {
  // 64k tokens: activations dominate; cp 2 halves them on the same GPUs (dp 2 → 1).
  ModelSpec m = SmallLlama();
  m.seq_len = 65536;
  m.flash_attention = true;
  ParallelConfig c;
  c.dp = 2;
  c.global_batch = 2;
  c.recompute = Recompute::kSelective;
  ParallelConfig alt = c;
  alt.dp = 1;
  alt.cp = 2;
  const double with_cp = EstimateMemory(m, alt, 1e15, 8).peak_bytes;
  const double without = EstimateMemory(m, c, 1e15, 8).peak_bytes;
  ASSERT_LT(with_cp, without);
  const MemoryReport r = EstimateMemory(m, c, (with_cp + without) / 2, 8);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(HasSuggestion(r, "cp 2, dp 1")) << r.suggestions[0];
}

TEST(MemoryActivationsTest, MoeThatDoesNotFitIsOfferedMoreExpertParallelism) {
  // Needs the expert split of LayerParametersPerGpu (params.cc): with the stub every
  // parameter is dense and ep changes nothing.
  const ModelSpec m = SmallMixtral();
  ParallelConfig c;
  c.dp = 8;
  c.global_batch = 8;
  c.recompute = Recompute::kFull;
  ParallelConfig alt = c;
  alt.ep = 2;
  const double with_ep = EstimateMemory(m, alt, 1e15, 8).peak_bytes;
  const double without = EstimateMemory(m, c, 1e15, 8).peak_bytes;
  ASSERT_LT(with_ep, without);
  const MemoryReport r = EstimateMemory(m, c, (with_ep + without) / 2, 8);
  EXPECT_TRUE(HasSuggestion(r, "ep 2")) << r.reason;
}

}  // namespace
}  // namespace trainsim::parallelism
