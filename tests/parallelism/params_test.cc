// Parameter counts (parallelism/params.cc) against closed forms written out here from each
// architecture's matrices, and against the published totals (Meta's, Mistral's, DeepSeek's,
// OpenAI's model cards) within 0.5%. Shapes are the published configs (cited in
// scenarios/presets.cc); nothing here is taken from the program's output.
#include <gtest/gtest.h>

#include <cmath>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

// Llama-style: RMSNorm, RoPE, SwiGLU, no biases, untied output layer.
ModelSpec LlamaStyle(int layers, int hidden, int heads, int kv_heads, int head_dim, int ffn,
                     int vocab) {
  ModelSpec m;
  m.num_layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_len = 8192;
  m.swiglu = true;
  m.dropout = false;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  return m;
}

// Dense Llama: per layer Q (h·a·d), K and V (h·kv·d each), output (a·d·h), SwiGLU (3·h·f), two
// RMSNorms (2h); word embedding and output layer V·h each.
double LlamaClosedForm(double l, double h, double a, double kv, double d, double f, double v) {
  return l * (h * a * d + 2 * h * kv * d + a * d * h + 3 * h * f + 2 * h) + 2 * v * h;
}

void ExpectWithin(double ours, double published, double rel, const char* what) {
  EXPECT_NEAR(ours, published, rel * published) << what << ": " << ours / 1e9 << " B";
}

TEST(ParamsTest, Llama3DenseModelsMatchTheirClosedFormAndPublishedCounts) {
  struct Case {
    const char* name;
    int layers, hidden, heads, kv, ffn;
    double published;
  } cases[] = {{"Llama 3 8B", 32, 4096, 32, 8, 14336, 8.03e9},
               {"Llama 3 70B", 80, 8192, 64, 8, 28672, 70.6e9},
               {"Llama 3.1 405B", 126, 16384, 128, 8, 53248, 405.9e9}};
  for (const Case& c : cases) {
    const ModelSpec m = LlamaStyle(c.layers, c.hidden, c.heads, c.kv, 128, c.ffn, 128256);
    const double closed = LlamaClosedForm(c.layers, c.hidden, c.heads, c.kv, 128, c.ffn, 128256);
    EXPECT_EQ(double(ParameterCount(m)), closed) << c.name;
    EXPECT_EQ(ActiveParameterCount(m), ParameterCount(m)) << c.name;
    ExpectWithin(double(ParameterCount(m)), c.published, 0.005, c.name);
  }
}

TEST(ParamsTest, TyingTheOutputLayerRemovesVTimesH) {
  ModelSpec m = LlamaStyle(80, 8192, 64, 8, 128, 28672, 128256);
  const int64_t untied = ParameterCount(m);
  m.tied_embeddings = true;
  EXPECT_EQ(untied - ParameterCount(m), int64_t(128256) * 8192);
  // Learned positions add s·h; LayerNorm a bias per norm (2h per layer); biases on every
  // linear: Q/K/V (q + 2kv), output and MLP down (h each), SwiGLU gate/up (2f).
  const int64_t tied = ParameterCount(m);
  m.learned_position_embedding = true;
  EXPECT_EQ(ParameterCount(m) - tied, int64_t(8192) * 8192);
  m.learned_position_embedding = false;
  m.rmsnorm = false;
  EXPECT_EQ(ParameterCount(m) - tied, int64_t(80) * 2 * 8192);
  m.rmsnorm = true;
  m.linear_bias = true;
  EXPECT_EQ(ParameterCount(m) - tied, int64_t(80) * ((8192 + 2 * 1024) + 8192 + 2 * 28672 + 8192));
}

// Mixtral: per layer attention + 2 RMSNorms + router (h × 8 experts) + `e` counted experts of
// 3·h·f each (8 for the total, top_k 2 for the active count).
double MixtralClosedForm(double l, double h, double a, double kv, double f, double v, double e) {
  const double d = h / a;
  return l * (h * a * d + 2 * h * kv * d + a * d * h + 2 * h + h * 8 + e * 3 * h * f) + 2 * v * h;
}

ModelSpec Mixtral(int layers, int hidden, int heads, int ffn) {
  ModelSpec m = LlamaStyle(layers, hidden, heads, 8, 128, ffn, 32000);
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = ffn;
  return m;
}

TEST(ParamsTest, MixtralCountsAllExpertsInTotalAndTopKInActive) {
  struct Case {
    const char* name;
    int layers, hidden, heads, ffn;
    double total, active;
  } cases[] = {{"Mixtral 8x7B", 32, 4096, 32, 14336, 46.7e9, 12.9e9},
               {"Mixtral 8x22B", 56, 6144, 48, 16384, 141e9, 39e9}};
  for (const Case& c : cases) {
    const ModelSpec m = Mixtral(c.layers, c.hidden, c.heads, c.ffn);
    EXPECT_EQ(double(ParameterCount(m)),
              MixtralClosedForm(c.layers, c.hidden, c.heads, 8, c.ffn, 32000, 8))
        << c.name;
    EXPECT_EQ(double(ActiveParameterCount(m)),
              MixtralClosedForm(c.layers, c.hidden, c.heads, 8, c.ffn, 32000, 2))
        << c.name;
    ExpectWithin(double(ParameterCount(m)), c.total, 0.005, c.name);
    ExpectWithin(double(ActiveParameterCount(m)), c.active, 0.005, c.name);
  }
}

ModelSpec DeepSeekV3() {
  ModelSpec m = LlamaStyle(61, 7168, 128, 128, 0, 18432, 129280);
  m.seq_len = 4096;
  m.moe.experts = 256;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 2048;
  m.moe.shared_experts = 1;
  m.moe.shared_expert_ffn_hidden = 2048;
  m.moe.first_dense_layers = 3;
  m.mla.q_lora_rank = 1536;
  m.mla.kv_lora_rank = 512;
  m.mla.qk_rope_head_dim = 64;
  m.mla.qk_nope_head_dim = 128;
  m.mla.v_head_dim = 128;
  return m;
}

TEST(ParamsTest, DeepSeekV3CountsLatentAttentionAndItsExperts) {
  const ModelSpec m = DeepSeekV3();
  const double h = 7168, a = 128, V = 129280;
  // MLA: q_a h×1536 + norm 1536, q_b 1536 × a·(128+64), kv_a h×(512+64) + norm 512,
  // kv_b 512 × a·(128+128), output a·128 × h.
  const double mla = h * 1536 + 1536 + 1536 * a * 192 + h * 576 + 512 + 512 * a * 256 + a * 128 * h;
  const double expert = 3 * h * 2048;
  const double dense_layer = mla + 2 * h + 3 * h * 18432;
  const double moe_common = mla + 2 * h + h * 256 + expert;  // + the shared expert
  const double total = 3 * dense_layer + 58 * (moe_common + 256 * expert) + 2 * V * h;
  const double active = 3 * dense_layer + 58 * (moe_common + 8 * expert) + 2 * V * h;
  EXPECT_EQ(double(ParameterCount(m)), total);
  EXPECT_EQ(double(ActiveParameterCount(m)), active);
  // DeepSeek's README: 671 B main model (the MTP module excluded). README_WEIGHTS.md: 36.6 B
  // activated, which counts the output head but not the input embedding (a lookup).
  ExpectWithin(double(ParameterCount(m)), 671e9, 0.005, "DeepSeek-V3 total");
  ExpectWithin(double(ActiveParameterCount(m)) - V * h, 36.6e9, 0.005, "DeepSeek-V3 active");
  EXPECT_EQ(LayerParameterCount(m, false), int64_t(dense_layer));
  EXPECT_EQ(LayerParameterCount(m, true), int64_t(moe_common + 256 * expert));
}

TEST(ParamsTest, GptOssCountsBiasesOnAttentionRouterAndExperts) {
  // openai/gpt-oss-120b: 36 layers, h 2880, 64 heads of 64, 8 KV heads, 128 experts of 2880,
  // top 4, V 201088, biases on Q/K/V/O, the router and the experts.
  ModelSpec m = LlamaStyle(36, 2880, 64, 8, 64, 2880, 201088);
  m.linear_bias = true;
  m.moe.experts = 128;
  m.moe.top_k = 4;
  m.moe.expert_ffn_hidden = 2880;
  const double h = 2880, q = 64 * 64, kv = 8 * 64, f = 2880, V = 201088;
  const double attn = h * (q + 2 * kv) + (q + 2 * kv) + q * h + h;
  const double expert = 3 * h * f + 2 * f + h;
  const double common = attn + 2 * h + h * 128 + 128;
  EXPECT_EQ(double(ParameterCount(m)), 36 * (common + 128 * expert) + 2 * V * h);
  EXPECT_EQ(double(ActiveParameterCount(m)), 36 * (common + 4 * expert) + 2 * V * h);
  // Model card (arXiv:2508.10925) Table 1: 116.83 B total; 5.13 B active without the input
  // embedding.
  ExpectWithin(double(ParameterCount(m)), 116.83e9, 0.005, "gpt-oss-120b total");
  ExpectWithin(double(ActiveParameterCount(m)) - V * h, 5.13e9, 0.005, "gpt-oss-120b active");
}

TEST(ParamsTest, PerGpuShareSplitsWhatMegatronSplitsAndReplicatesTheRest) {
  // GPT layer, TP 8: QKV (3h² + 3h) and MLP up (4h² + 4h) column-parallel, output (h²) and
  // MLP down (4h²) row-parallel with their biases (h each) whole, 4h of LayerNorm whole.
  ModelSpec gpt;
  gpt.num_layers = 96;
  gpt.hidden = 12288;
  gpt.heads = 96;
  gpt.seq_len = 2048;
  gpt.vocab = 51200;
  const double h = 12288;
  TensorSplit tp8;
  tp8.tp = 8;
  const ParamSplit g = LayerParametersPerGpu(gpt, tp8);
  EXPECT_DOUBLE_EQ(g.dense, (12 * h * h + 7 * h) / 8 + 6 * h);
  EXPECT_EQ(g.expert, 0);
  EXPECT_EQ(LayerParametersPerTpRank(gpt, 8), std::llround(g.dense));

  // Mixtral 8x7B, TP 2, EP 8: one whole expert per GPU; the router (h × 8) and norms whole.
  const ModelSpec mx = Mixtral(32, 4096, 32, 14336);
  TensorSplit moe_split;
  moe_split.tp = 2;
  moe_split.ep = 8;
  const ParamSplit x = LayerParametersPerGpu(mx, moe_split, true);
  const double hx = 4096, attn = hx * 4096 + 2 * hx * 1024 + 4096 * hx;
  EXPECT_DOUBLE_EQ(x.dense, attn / 2 + 2 * hx + hx * 8);
  EXPECT_DOUBLE_EQ(x.expert, 3 * hx * 14336);
  // ETP 2 halves the expert's matrices; EP 4 holds two experts.
  moe_split.ep = 4;
  moe_split.etp = 2;
  EXPECT_DOUBLE_EQ(LayerParametersPerGpu(mx, moe_split, true).expert, 2 * 3 * hx * 14336 / 2);
}

TEST(ParamsTest, OneGpuHoldsTheWholeLayer) {
  for (const ModelSpec& m : {DeepSeekV3(), Mixtral(56, 6144, 48, 16384)}) {
    for (bool moe_layer : {false, true}) {
      EXPECT_DOUBLE_EQ(LayerParametersPerGpu(m, TensorSplit{}, moe_layer).total(),
                       double(LayerParameterCount(m, moe_layer)));
    }
  }
}

TEST(ParamsTest, DeepSeekLatentDownProjectionsStayWholeOnEveryTpRank) {
  const ModelSpec m = DeepSeekV3();
  const double h = 7168, a = 128;
  TensorSplit split;
  split.tp = 8;
  split.ep = 64;
  const ParamSplit p = LayerParametersPerGpu(m, split, true);
  const double replicated = h * 1536 + 1536 + h * 576 + 512 + 2 * h + h * 256;
  const double sharded = 1536 * a * 192 + 512 * a * 256 + a * 128 * h + 3 * h * 2048;
  EXPECT_DOUBLE_EQ(p.dense, sharded / 8 + replicated);
  EXPECT_DOUBLE_EQ(p.expert, 4 * 3 * h * 2048);  // 256 experts over EP 64
}

}  // namespace
}  // namespace trainsim::parallelism
