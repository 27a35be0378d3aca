#include "parallelism/model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainsim::parallelism {
namespace {

struct Row {
  int heads, hidden, layers;
};
// Narayanan et al. SC'21 Table 1 shapes (seq 2048, vocab 51200).
constexpr Row kMegatronRows[] = {
    {24, 2304, 24}, {32, 4096, 36}, {64, 8192, 48}, {96, 12288, 80}, {128, 20480, 105}};

ModelSpec Gpt(const Row& r) {
  ModelSpec m;
  m.num_layers = r.layers;
  m.hidden = r.hidden;
  m.heads = r.heads;
  m.seq_len = 2048;
  m.vocab = 51200;
  return m;
}

TEST(ModelTest, ParameterCountEqualsNarayananFormula) {
  for (const Row& r : kMegatronRows) {
    const ModelSpec m = Gpt(r);
    const double l = r.layers, h = r.hidden, V = 51200, s = 2048;
    const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    EXPECT_NEAR(double(ParameterCount(m)), formula, formula * 1e-12) << r.hidden;
  }
  // The published sizes: 1.7B, 7.5B, 39.1B, 145.6B, 529.6B.
  EXPECT_NEAR(ParameterCount(Gpt(kMegatronRows[3])) / 1e9, 145.6, 0.05);
  EXPECT_NEAR(ParameterCount(Gpt(kMegatronRows[4])) / 1e9, 529.6, 0.05);
}

TEST(ModelTest, IterationFlopsEqualNarayananFormula) {
  for (const Row& r : kMegatronRows) {
    const ModelSpec m = Gpt(r);
    const double B = 512, s = 2048, l = r.layers, h = r.hidden, V = 51200;
    const double f96 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double f72 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    EXPECT_NEAR(HardwareFlopsPerIteration(m, 512, Recompute::kFull), f96, f96 * 1e-12);
    EXPECT_NEAR(ModelFlopsPerIteration(m, 512), f72, f72 * 1e-12);
    // Selective recompute re-runs the attention products: 4·B·s²·h per layer.
    EXPECT_NEAR(HardwareFlopsPerIteration(m, 512, Recompute::kSelective),
                f72 + 4 * B * s * s * h * l, f72 * 1e-12);
  }
}

double Sum(const std::vector<KernelOp>& ops, double KernelOp::*field) {
  double total = 0;
  for (const KernelOp& op : ops) total += op.*field;
  return total;
}

TEST(ModelTest, TensorParallelSplitsMatrixFlopsEvenly) {
  const ModelSpec m = Gpt(kMegatronRows[2]);
  for (int t : {1, 2, 4, 8}) {
    const auto one = LayerOps(m, {1, false}, 2);
    const auto split = LayerOps(m, {t, false}, 2);
    EXPECT_NEAR(Sum(split, &KernelOp::fwd_matmul_flops) * t, Sum(one, &KernelOp::fwd_matmul_flops),
                1.0);
    EXPECT_NEAR(Sum(split, &KernelOp::bwd_matmul_flops) * t, Sum(one, &KernelOp::bwd_matmul_flops),
                1.0);
  }
}

TEST(ModelTest, SequenceParallelSplitsLayerNormTraffic) {
  const ModelSpec m = Gpt(kMegatronRows[2]);
  auto ln_bytes = [&](bool sp) {
    for (const KernelOp& op : LayerOps(m, {8, sp}, 1)) {
      if (op.name == "layernorm_1") return op.fwd_bytes;
    }
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(ln_bytes(false), 8 * ln_bytes(true));
}

TEST(ModelTest, TensorParallelCollectivesFollowMegatron) {
  const ModelSpec m = Gpt(kMegatronRows[2]);
  const double bsh_bytes = 4.0 * 2048 * 8192 * 2;
  auto plain = LayerTpCollectives(m, {8, false}, 4);
  ASSERT_EQ(plain.size(), 4u);  // 2 all-reduces forward, 2 backward
  for (const auto& c : plain) {
    EXPECT_EQ(c.kind, TpCollectiveKind::kAllReduce);
    EXPECT_DOUBLE_EQ(c.bytes, bsh_bytes);
  }
  auto sp = LayerTpCollectives(m, {8, true}, 4);
  // Each all-reduce becomes all-gather + reduce-scatter, and backward re-gathers the two
  // layer-norm outputs for the weight gradients.
  EXPECT_EQ(sp.size(), 10u);
  EXPECT_TRUE(LayerTpCollectives(m, {1, false}, 4).empty());
}

TEST(ModelTest, GroupedQueryAttentionAndSwigluCountTheirMatrices) {
  // Llama-2-70B-like: h 8192, 64 heads, 8 KV heads, SwiGLU f 28672, 80 layers, V 32000.
  ModelSpec m;
  m.num_layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.ffn_hidden = 28672;
  m.swiglu = true;
  m.seq_len = 4096;
  m.vocab = 32000;
  const int64_t h = 8192, kvw = 1024, f = 28672;
  EXPECT_EQ(LayerParameterCount(m),
            h * (h + 2 * kvw) + (h + 2 * kvw) + h * h + h + 3 * h * f + 2 * f + h + 4 * h);
  // The GEMMs alone (2·params FLOPs per token forward) dominate: ~69B parameters.
  EXPECT_NEAR(ParameterCount(m) / 1e9, 69.0, 0.5);
  for (const KernelOp& op : LayerOps(m, {8, false}, 1)) {
    if (op.name == "qkv") {
      EXPECT_EQ(op.n, (h + 2 * kvw) / 8);
    }
  }
  // Per-TP-rank parameters add up (replicated norms and row-parallel biases aside).
  EXPECT_NEAR(double(LayerParametersPerTpRank(m, 8)) * 8, double(LayerParameterCount(m)),
              0.001 * double(LayerParameterCount(m)));
}

TEST(ModelTest, FlashAttentionKeepsModelFlops) {
  ModelSpec m = Gpt(kMegatronRows[1]);
  const double plain = ModelFlopsPerIteration(m, 64);
  m.flash_attention = true;
  EXPECT_NEAR(ModelFlopsPerIteration(m, 64), plain, plain * 1e-12);
}

TEST(ModelTest, RejectsHeadsThatDoNotDivideHidden) {
  ModelSpec m = Gpt(kMegatronRows[0]);
  m.heads = 7;
  EXPECT_FALSE(ValidateModel(m).ok());
  EXPECT_FALSE(ParseRecompute("sometimes").ok());
  EXPECT_EQ(ParseRecompute("selective").value(), Recompute::kSelective);
}

// A Llama 3 8B layer (RMSNorm, RoPE, SwiGLU, 8 K/V heads for 32 query heads) as torchtitan
// writes it, run eagerly or with fused kernels.
ModelSpec Llama8b(bool eager) {
  ModelSpec m;
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.seq_len = 8192;
  m.vocab = 128256;
  m.swiglu = true;
  m.flash_attention = true;
  m.dropout = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  m.eager_kernels = eager;
  m.eager_norm = eager;
  return m;
}

const KernelOp* Find(const std::vector<KernelOp>& ops, const std::string& name) {
  for (const KernelOp& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(ModelTest, EagerKernelsMoveTheBytesOfEachTorchOpAndKeepTheMatrixWork) {
  const std::vector<KernelOp> eager = LayerOps(Llama8b(true), {1, false}, 2);
  const std::vector<KernelOp> fused = LayerOps(Llama8b(false), {1, false}, 2);
  const double tokens = 2.0 * 8192, h = 4096;
  // RMSNorm op by op in bf16 (cast 6, pow 8, mean 4, scale 8, cast 6, weight 4 = 36 forward,
  // six element-wise kernels and two per row; back: weight's grads 4 + 6 + 2, the cast 6,
  // rsqrt's grads 8 + 12 + 4, mean's expand 4, pow's x.pow(1) copy 8, ·2 8, ·g 12, the sum of
  // the two paths 12, the cast 6 = 92, in 16 kernels), against the fused kernel's read and
  // write (4, then 6) in one kernel each way.
  const KernelOp* norm = Find(eager, "rmsnorm_1");
  ASSERT_NE(norm, nullptr);
  EXPECT_DOUBLE_EQ(norm->fwd_bytes, 36 * tokens * h);
  EXPECT_DOUBLE_EQ(norm->bwd_bytes, 92 * tokens * h);
  EXPECT_EQ(norm->fwd_kernels, 8);
  EXPECT_EQ(norm->bwd_kernels, 16);
  EXPECT_DOUBLE_EQ(Find(fused, "rmsnorm_1")->fwd_bytes, 4 * tokens * h);
  // RoPE in complex fp32 on Q (4096) and K (1024 wide): 20 bytes per element each way.
  EXPECT_DOUBLE_EQ(Find(eager, "rope")->fwd_bytes, 20 * tokens * (4096 + 1024));
  // repeat_kv writes K and V out to 32 heads (4 × 1024 each) from 8: e/4 read + e written.
  const KernelOp* rep = Find(eager, "repeat_kv");
  ASSERT_NE(rep, nullptr);
  EXPECT_DOUBLE_EQ(rep->fwd_bytes, tokens * 8192 * (2.0 / 4 + 2));
  EXPECT_EQ(Find(fused, "repeat_kv"), nullptr);
  // The same matrix work either way; only HBM traffic and kernel counts grow.
  EXPECT_DOUBLE_EQ(Sum(eager, &KernelOp::fwd_matmul_flops),
                   Sum(fused, &KernelOp::fwd_matmul_flops));
  EXPECT_DOUBLE_EQ(Sum(eager, &KernelOp::bwd_matmul_flops),
                   Sum(fused, &KernelOp::bwd_matmul_flops));
  EXPECT_GT(Sum(eager, &KernelOp::fwd_bytes), Sum(fused, &KernelOp::fwd_bytes));
  EXPECT_GT(Sum(eager, &KernelOp::bwd_bytes), Sum(fused, &KernelOp::bwd_bytes));
  // The loss on logits.float(): forward the cast 6, log_softmax's two reads and write 16 = 22
  // bytes per logit in 3 kernels, against 14 fused; backward the zero fill 4, log_softmax's
  // backward reading the gradient twice and the output once and writing 16, the cast back 6 =
  // 26, in 4 kernels.
  const std::vector<KernelOp> head = HeadOps(Llama8b(true), {1, false}, 2);
  const KernelOp* ce = Find(head, "cross_entropy");
  ASSERT_NE(ce, nullptr);
  EXPECT_DOUBLE_EQ(ce->fwd_bytes, 22 * tokens * 128256);
  EXPECT_DOUBLE_EQ(ce->bwd_bytes, 26 * tokens * 128256);
  EXPECT_EQ(ce->fwd_kernels, 3);
  EXPECT_EQ(ce->bwd_kernels, 4);
}

TEST(ModelTest, EagerKernelsLeaveLayerNormAndMhaAsTheyAreAndFusedNormKeepsItsBytes) {
  // ATen's layer_norm is one kernel in eager mode too; without GQA there is nothing to expand.
  ModelSpec m = Llama8b(true);
  m.rmsnorm = false;
  m.kv_heads = 0;
  ModelSpec f = m;
  f.eager_kernels = false;
  const std::vector<KernelOp> eager = LayerOps(m, {1, false}, 1);
  EXPECT_DOUBLE_EQ(Find(eager, "layernorm_1")->fwd_bytes,
                   Find(LayerOps(f, {1, false}, 1), "layernorm_1")->fwd_bytes);
  EXPECT_EQ(Find(eager, "repeat_kv"), nullptr);
  // torchtitan's fused_rmsnorm (a Triton kernel) in an otherwise eager model: the fused bytes.
  ModelSpec fused_norm = Llama8b(true);
  fused_norm.eager_norm = false;
  const std::vector<KernelOp> ops = LayerOps(fused_norm, {1, false}, 1);
  EXPECT_DOUBLE_EQ(Find(ops, "rmsnorm_1")->fwd_bytes,
                   Find(LayerOps(Llama8b(false), {1, false}, 1), "rmsnorm_1")->fwd_bytes);
  EXPECT_NE(Find(ops, "repeat_kv"), nullptr);
}

}  // namespace
}  // namespace trainsim::parallelism
