// LayerOps and LayerTpCollectives for today's layers (parallelism/model.h): GQA and head_dim,
// causal flash attention, context parallelism, MLA and mixture-of-experts layers with EP/ETP.
// Expectations are closed forms derived in docs/layer-model.md.
#include <gtest/gtest.h>

#include <string>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

ModelSpec Llama() {  // Llama 3 70B shape, seq 8192
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
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  m.dropout = false;
  return m;
}

ModelSpec Mixtral() {  // Mixtral 8x7B shape, seq 4096
  ModelSpec m = Llama();
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.ffn_hidden = 14336;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  return m;
}

ModelSpec DeepSeekV3() {
  ModelSpec m = Mixtral();
  m.num_layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 0;
  m.ffn_hidden = 18432;
  m.mla = {1536, 512, 64, 128, 128};
  m.moe.experts = 256;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 2048;
  m.moe.shared_experts = 1;
  m.moe.first_dense_layers = 3;
  return m;
}

const KernelOp* Find(const std::vector<KernelOp>& ops, const std::string& name) {
  for (const KernelOp& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double SumIf(const std::vector<KernelOp>& ops, OpKind kind, double KernelOp::*field) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (op.kind == kind) total += op.*field;
  }
  return total;
}

std::vector<TpCollective> InGroup(const std::vector<TpCollective>& all, CommGroup g) {
  std::vector<TpCollective> out;
  for (const TpCollective& c : all) {
    if (c.group == g) out.push_back(c);
  }
  return out;
}

TensorSplit Split(int tp, bool sp, int cp = 1, CpComm comm = CpComm::kP2P, int ep = 1,
                  int etp = 1) {
  TensorSplit s;
  s.tp = tp;
  s.sequence_parallel = sp;
  s.cp = cp;
  s.cp_comm = comm;
  s.ep = ep;
  s.etp = etp;
  return s;
}

TEST(ModelLayerTest, CausalFlashAttentionExecutesHalfTheMaterialisedSquare) {
  ModelSpec m = Llama();
  const double b = 2, s = 8192, q = 8192;
  const auto flash = LayerOps(m, Split(8, true), 2);
  const KernelOp* fa = Find(flash, "flash_attention");
  ASSERT_NE(fa, nullptr);
  EXPECT_TRUE(fa->causal);
  // QKᵀ and AV over the causal half of s × s: 2 · 2·b·s²·q/2 per TP rank.
  EXPECT_DOUBLE_EQ(fa->fwd_matmul_flops, 2 * b * s * s * q / 8);
  EXPECT_DOUBLE_EQ(fa->bwd_matmul_flops, 2 * fa->fwd_matmul_flops);
  m.flash_attention = false;
  const auto plain = LayerOps(m, Split(8, true), 2);
  const double square =
      Find(plain, "attn_scores")->fwd_matmul_flops + Find(plain, "attn_context")->fwd_matmul_flops;
  EXPECT_DOUBLE_EQ(2 * fa->fwd_matmul_flops, square);
  EXPECT_FALSE(Find(plain, "attn_scores")->causal);
}

TEST(ModelLayerTest, HeadDimSetsProjectionWidthsNotHidden) {
  // Qwen3-235B: 64 heads of 128 (8192) on hidden 4096, 4 KV heads.
  ModelSpec m = Llama();
  m.hidden = 4096;
  m.heads = 64;
  m.kv_heads = 4;
  m.head_dim = 128;
  const auto ops = LayerOps(m, Split(4, true), 1);
  EXPECT_EQ(Find(ops, "qkv")->n, (8192 + 2 * 512) / 4);
  EXPECT_EQ(Find(ops, "qkv")->k, 4096);
  EXPECT_EQ(Find(ops, "attn_out")->k, 8192 / 4);
  EXPECT_EQ(Find(ops, "attn_out")->n, 4096);
  EXPECT_EQ(Find(ops, "flash_attention")->k, 128);
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(ModelLayerTest, RmsNormAndBiasFreeLayersKeepTheTraffic) {
  ModelSpec gpt = Llama();
  gpt.rmsnorm = false;
  gpt.linear_bias = true;
  gpt.dropout = true;
  gpt.learned_position_embedding = true;
  const ModelSpec llama = Llama();
  const auto a = LayerOps(gpt, Split(8, true), 1);
  const auto b = LayerOps(llama, Split(8, true), 1);
  EXPECT_DOUBLE_EQ(Find(a, "layernorm_1")->fwd_bytes, Find(b, "rmsnorm_1")->fwd_bytes);
  EXPECT_LT(Find(b, "rmsnorm_1")->fwd_other_flops, Find(a, "layernorm_1")->fwd_other_flops);
  // No dropout mask and no bias: residual add reads two tensors and writes one.
  EXPECT_DOUBLE_EQ(Find(b, "residual_add_1")->fwd_bytes, 3.0 * 2 * 8192 * 8192 / 8);
  EXPECT_EQ(Find(b, "bias_dropout_add_1"), nullptr);
  EXPECT_NE(Find(b, "rope"), nullptr);  // rotary models rotate Q and K
  EXPECT_EQ(Find(a, "rope"), nullptr);  // learned positions are added at the embedding
}

TEST(ModelLayerTest, ContextParallelSplitsTokensAndSharesCausalAttentionEvenly) {
  const ModelSpec m = Llama();
  const auto one = LayerOps(m, Split(8, true), 1);
  for (int cp : {2, 4, 16}) {
    for (CpComm comm : {CpComm::kP2P, CpComm::kAllGather, CpComm::kAllToAll}) {
      const auto split = LayerOps(m, Split(8, true, cp, comm), 1);
      // Every rank does 1/cp of the causal attention: cp ranks add up to the cp = 1 work.
      EXPECT_DOUBLE_EQ(cp * SumIf(split, OpKind::kFlashAttention, &KernelOp::fwd_matmul_flops),
                       SumIf(one, OpKind::kFlashAttention, &KernelOp::fwd_matmul_flops));
      // The GEMMs and element-wise kernels see b·s/cp tokens.
      EXPECT_DOUBLE_EQ(cp * SumIf(split, OpKind::kGemm, &KernelOp::fwd_matmul_flops),
                       SumIf(one, OpKind::kGemm, &KernelOp::fwd_matmul_flops));
      EXPECT_DOUBLE_EQ(cp * SumIf(split, OpKind::kMemoryBound, &KernelOp::fwd_bytes),
                       SumIf(one, OpKind::kMemoryBound, &KernelOp::fwd_bytes));
    }
  }
}

TEST(ModelLayerTest, ContextParallelRingPassesKvChunksUnderAttention) {
  const ModelSpec m = Llama();
  const int tp = 8, cp = 4, b = 2;
  const auto cps = InGroup(LayerTpCollectives(m, Split(tp, true, cp), b), CommGroup::kCp);
  ASSERT_EQ(cps.size(), 2u);
  // K and V of this rank's b·s/cp tokens, kv_heads·head_dim = 1024 wide, split over TP, bf16.
  const double chunk = 2.0 * b * (8192 / cp) * 1024 / tp * 2;
  EXPECT_EQ(cps[0].kind, TpCollectiveKind::kSendRecv);
  EXPECT_DOUBLE_EQ(cps[0].bytes, chunk);
  EXPECT_EQ(cps[0].count, cp - 1);
  EXPECT_TRUE(cps[0].forward);
  EXPECT_EQ(cps[0].overlaps_op, "flash_attention");
  EXPECT_DOUBLE_EQ(cps[1].bytes, 2 * chunk);  // K, V and dK, dV
  EXPECT_EQ(cps[1].count, cp - 1);
  EXPECT_FALSE(cps[1].forward);
  EXPECT_EQ(cps[1].overlaps_op, "flash_attention");
}

TEST(ModelLayerTest, ContextParallelAllGatherAndUlyssesMoveTheirTensors) {
  const ModelSpec m = Llama();
  const int tp = 8, cp = 4, b = 1;
  const auto ag =
      InGroup(LayerTpCollectives(m, Split(tp, true, cp, CpComm::kAllGather), b), CommGroup::kCp);
  ASSERT_EQ(ag.size(), 3u);  // all-gather K,V; backward all-gather + reduce-scatter dK,dV
  const double full_kv = 2.0 * b * 8192 * 1024 / tp * 2;
  for (const TpCollective& c : ag) {
    EXPECT_DOUBLE_EQ(c.bytes, full_kv);
    EXPECT_TRUE(c.overlaps_op.empty());
  }
  EXPECT_EQ(ag[2].kind, TpCollectiveKind::kReduceScatter);
  const auto a2a =
      InGroup(LayerTpCollectives(m, Split(tp, true, cp, CpComm::kAllToAll), b), CommGroup::kCp);
  ASSERT_EQ(a2a.size(), 8u);  // Q, K, V, O forward; dO, dQ, dK, dV backward
  const double local = double(b) * 8192 / cp;
  double fwd = 0;
  for (const TpCollective& c : a2a) {
    EXPECT_EQ(c.kind, TpCollectiveKind::kAllToAll);
    if (c.forward) fwd += c.bytes;
  }
  EXPECT_DOUBLE_EQ(fwd, local * (8192 + 1024 + 1024 + 8192) / tp * 2);
}

TEST(ModelLayerTest, TensorParallelBytesScaleWithContextParallelTokens) {
  const ModelSpec m = Llama();
  const auto base = LayerTpCollectives(m, Split(8, true), 2);
  const auto cp = InGroup(LayerTpCollectives(m, Split(8, true, 4), 2), CommGroup::kTp);
  ASSERT_EQ(base.size(), cp.size());
  for (size_t i = 0; i < base.size(); ++i) EXPECT_DOUBLE_EQ(base[i].bytes, 4 * cp[i].bytes);
  const auto emb = EmbeddingTpCollectives(m, Split(8, true, 4), 2);
  EXPECT_DOUBLE_EQ(emb[0].bytes, 2.0 * 8192 / 4 * 8192 * 2);
  const auto head = HeadTpCollectives(m, Split(8, false, 4), 2);
  EXPECT_DOUBLE_EQ(head[0].bytes, 2.0 * 8192 / 4 * 8192 * 2);
}

TEST(ModelLayerTest, BalancedExpertsWithOneExpertPerGpuDoTheirShareOfRoutedWork) {
  // ep = experts, load_imbalance 1: each GPU's grouped GEMMs process b·s·top_k tokens (its
  // tokens' expert copies, spread evenly), 2·3·h·f_e FLOPs each forward (SwiGLU).
  const ModelSpec m = Mixtral();
  const double b = 2, s = 4096, h = 4096, f = 14336;
  const auto ops = LayerOps(m, Split(1, false, 1, CpComm::kP2P, 8), 2, true);
  const double expert =
      Find(ops, "expert_gate_up")->fwd_matmul_flops + Find(ops, "expert_down")->fwd_matmul_flops;
  EXPECT_DOUBLE_EQ(expert, b * s * 2 * (2 * 3 * h * f));
  EXPECT_EQ(Find(ops, "expert_gate_up")->batch, 1);  // one local expert
  EXPECT_EQ(Find(ops, "expert_gate_up")->m, int64_t(b * s * 2));
  // Router: replicated h × experts on the local tokens.
  EXPECT_DOUBLE_EQ(Find(ops, "router")->fwd_matmul_flops, 2 * b * s * h * 8);
  EXPECT_EQ(Find(ops, "mlp_gate_up"), nullptr);
  // The permutation moves each routed copy in and out.
  EXPECT_DOUBLE_EQ(Find(ops, "moe_permute")->fwd_bytes, 2 * (b * s * 2) * h * 2);
}

TEST(ModelLayerTest, EagerKernelsLeaveTheMoeLayerFusedSharedExpertsIncluded) {
  // No eager implementation of an MoE layer is modelled: its ops, the shared expert's SwiGLU
  // among them, cost what the fused layer's do (as its activation memory counts them).
  ModelSpec fused = DeepSeekV3();
  ModelSpec eager = fused;
  eager.eager_kernels = true;
  eager.eager_norm = true;
  const TensorSplit split = Split(1, false, 1, CpComm::kP2P, 8);
  const auto a = LayerOps(fused, split, 1, true);
  const auto b = LayerOps(eager, split, 1, true);
  for (const char* name : {"shared_swiglu", "expert_swiglu", "moe_permute"}) {
    ASSERT_NE(Find(a, name), nullptr) << name;
    ASSERT_NE(Find(b, name), nullptr) << name;
    EXPECT_DOUBLE_EQ(Find(b, name)->fwd_bytes, Find(a, name)->fwd_bytes) << name;
    EXPECT_DOUBLE_EQ(Find(b, name)->bwd_bytes, Find(a, name)->bwd_bytes) << name;
    EXPECT_EQ(Find(b, name)->fwd_kernels, Find(a, name)->fwd_kernels) << name;
  }
}

TEST(ModelLayerTest, LoadImbalanceScalesExpertGemmsAndCapacityFactorCapsThem) {
  ModelSpec m = Mixtral();
  const TensorSplit split = Split(2, true, 1, CpComm::kP2P, 4);
  auto expert_flops = [&](const ModelSpec& spec) {
    const auto ops = LayerOps(spec, split, 1, true);
    return Find(ops, "expert_gate_up")->fwd_matmul_flops +
           Find(ops, "expert_down")->fwd_matmul_flops;
  };
  const double balanced = expert_flops(m);
  m.moe.load_imbalance = 2;
  EXPECT_DOUBLE_EQ(expert_flops(m), 2 * balanced);
  m.moe.capacity_factor = 1.25;  // tokens over 1.25 × mean are dropped
  EXPECT_DOUBLE_EQ(expert_flops(m), 1.25 * balanced);
  // Tokens per GPU: b·s/tp enter the dispatcher (SP shard), top_k copies each.
  const MoeTokens t = MoeTokensPerGpu(m, split, 1);
  EXPECT_DOUBLE_EQ(t.dispatched, 4096.0 / 2);
  EXPECT_DOUBLE_EQ(t.routed, 4096.0 / 2 * 2);
  EXPECT_DOUBLE_EQ(t.expert_busiest, t.expert_mean * 1.25);
}

TEST(ModelLayerTest, ExpertParallelAllToAllsCarryTheRoutedTokens) {
  const ModelSpec m = Mixtral();
  const int b = 2, tp = 2, cp = 2, ep = 4, etp = 2;
  const auto all =
      LayerTpCollectives(m, Split(tp, true, cp, CpComm::kP2P, ep, etp), b, /*moe_layer=*/true);
  const auto eps = InGroup(all, CommGroup::kEp);
  // Dispatch and combine, forward and backward; the token counts' all-gather (8 experts, int64,
  // from each of the 4 EP ranks) and the probabilities' all-to-all, forward and backward.
  ASSERT_EQ(eps.size(), 7u);
  const double routed = double(b) * 4096 / (cp * tp) * 2;  // tokens entering · top_k
  int tokens = 0;
  for (const TpCollective& c : eps) {
    if (c.name == "ep_token_count_all_gather") {
      EXPECT_EQ(c.kind, TpCollectiveKind::kAllGather);
      EXPECT_DOUBLE_EQ(c.bytes, 4 * 8 * 8.0);
    } else if (c.name.find("probs") != std::string::npos) {
      EXPECT_EQ(c.kind, TpCollectiveKind::kAllToAll);
      EXPECT_DOUBLE_EQ(c.bytes, routed * 2);
    } else {
      EXPECT_EQ(c.kind, TpCollectiveKind::kAllToAll);
      EXPECT_DOUBLE_EQ(c.bytes, routed * 4096 * 2);
      ++tokens;
    }
  }
  EXPECT_EQ(tokens, 4);
  const auto etps = InGroup(all, CommGroup::kEtp);
  ASSERT_EQ(etps.size(), 4u);  // all-gather before / reduce-scatter after, and backward
  EXPECT_DOUBLE_EQ(etps[0].bytes, routed * etp * 4096 * 2);
  // No shared expert: the routed MLP leaves the TP group; only attention's SP pairs remain.
  EXPECT_EQ(InGroup(all, CommGroup::kTp).size(), 5u);
  // A dense layer of the same model has neither.
  const auto dense = LayerTpCollectives(m, Split(tp, true, cp, CpComm::kP2P, ep, etp), b);
  EXPECT_TRUE(InGroup(dense, CommGroup::kEp).empty());
  EXPECT_EQ(InGroup(dense, CommGroup::kTp).size(), 10u);
  // Groups of one move nothing.
  EXPECT_TRUE(InGroup(LayerTpCollectives(m, Split(1, false), b, true), CommGroup::kEp).empty());
}

TEST(ModelLayerTest, DeepSeekLayersSplitMlaAndSharedExpertsAsMegatronCore) {
  const ModelSpec m = DeepSeekV3();
  EXPECT_TRUE(ValidateModel(m).ok());
  const int tp = 4, b = 1;
  const double tokens = 4096, h = 7168;
  const auto ops = LayerOps(m, Split(tp, true, 1, CpComm::kP2P, 64), b, m.IsMoeLayer(3));
  // Down projections replicated, on the sequence-parallel shard; up projections column-parallel.
  EXPECT_EQ(Find(ops, "q_down")->m, int64_t(tokens / tp));
  EXPECT_EQ(Find(ops, "q_down")->n, 1536);
  EXPECT_EQ(Find(ops, "kv_down")->n, 512 + 64);
  EXPECT_EQ(Find(ops, "q_up")->n, 128 * (128 + 64) / tp);
  EXPECT_EQ(Find(ops, "kv_up")->n, 128 * (128 + 128) / tp);
  EXPECT_EQ(Find(ops, "attn_out")->k, 128 * 128 / tp);
  EXPECT_EQ(Find(ops, "flash_attention")->k, 128 + 64);
  // Attention core: QKᵀ over 192 dims and AV over 128, causal half, heads / tp.
  EXPECT_DOUBLE_EQ(Find(ops, "flash_attention")->fwd_matmul_flops,
                   2.0 * b * (128.0 / tp) * tokens * tokens / 2 * (192 + 128));
  // Shared expert: a dense SwiGLU MLP of 2048 on all local tokens, split over TP.
  EXPECT_EQ(Find(ops, "shared_gate_up")->n, 2 * 2048 / tp);
  EXPECT_EQ(Find(ops, "shared_gate_up")->m, int64_t(tokens));
  EXPECT_EQ(Find(ops, "expert_gate_up")->batch, 256 / 64);
  // The first three layers are dense with the dense FFN width.
  EXPECT_FALSE(m.IsMoeLayer(2));
  const auto dense = LayerOps(m, Split(tp, true), b, m.IsMoeLayer(2));
  EXPECT_EQ(Find(dense, "mlp_gate_up")->n, 2 * 18432 / tp);
  EXPECT_EQ(Find(dense, "router"), nullptr);
  // At TP = 1 the projection GEMMs add up to the closed form per token.
  const auto one = LayerOps(m, Split(1, false), 1);
  double proj = 0;
  for (const char* name : {"q_down", "q_up", "kv_down", "kv_up", "attn_out"}) {
    proj += Find(one, name)->fwd_matmul_flops;
  }
  const double expected =
      2 * tokens *
      (1536 * h + 1536 * 128.0 * 192 + h * (512 + 64) + 512 * 128.0 * 256 + 128 * 128 * h);
  EXPECT_DOUBLE_EQ(proj, expected);
  // SP all-gathers MLA's low-rank inputs (q 1536, kv 512, rope key 64), not the hidden state.
  const auto coll = LayerTpCollectives(m, Split(tp, true), b);
  EXPECT_DOUBLE_EQ(coll[0].bytes, tokens * (1536 + 512 + 64) * 2);
}

TEST(ModelLayerTest, GptShapeOpsAreThoseOfTheMaterialisedPath) {
  // The 2021 Megatron GPT layer keeps its op list: no rope, layer norms, biases, dropout.
  ModelSpec m;
  m.num_layers = 24;
  m.hidden = 2304;
  m.heads = 24;
  m.seq_len = 2048;
  m.vocab = 51200;
  const auto ops = LayerOps(m, Split(1, false), 1);
  std::string names;
  for (const KernelOp& op : ops) names += op.name + " ";
  EXPECT_EQ(names,
            "layernorm_1 qkv attn_scores softmax attn_dropout attn_context attn_out "
            "bias_dropout_add_1 layernorm_2 mlp_up bias_gelu mlp_down bias_dropout_add_2 ");
  // Flash attention moves Q, K, V in and O out: 4·b·s·h elements forward (MHA).
  m.flash_attention = true;
  EXPECT_DOUBLE_EQ(Find(LayerOps(m, Split(2, false), 1), "flash_attention")->fwd_bytes,
                   4.0 * 2048 * 2304 / 2 * 2);
}

}  // namespace
}  // namespace trainsim::parallelism
