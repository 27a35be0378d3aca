// MoE cost pieces (parallelism/model.h, compute.h): the token dispatchers' communication
// (all-to-all, all-gather, FLEX/DeepEP's per-node deduplication) and Transformer Engine's grouped
// GEMM as one cuBLAS GEMM per expert on 4 streams. Expectations are closed forms: binomial
// counting for the deduplication, the GEMM model's own efficiency function for the rounds.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "parallelism/compute.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

ModelSpec Qwen3Moe() {  // Qwen3 30B-A3B shape (Hugging Face config), seq 4096
  ModelSpec m;
  m.num_layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn_hidden = 6144;
  m.swiglu = true;
  m.seq_len = 4096;
  m.vocab = 151936;
  m.flash_attention = true;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  m.dropout = false;
  m.tied_embeddings = false;
  m.moe.experts = 128;
  m.moe.top_k = 8;
  m.moe.expert_ffn_hidden = 768;
  return m;
}

TensorSplit EpSplit(int ep, MoeDispatcher d, int ep_nodes) {
  TensorSplit s;
  s.ep = ep;
  s.dispatcher = d;
  s.ep_nodes = ep_nodes;
  return s;
}

std::vector<TpCollective> EpCollectives(const ModelSpec& m, TensorSplit s) {
  std::vector<TpCollective> out;
  for (const TpCollective& c : LayerTpCollectives(m, s, 1, /*moe_layer=*/true)) {
    if (c.group == CommGroup::kEp) out.push_back(c);
  }
  return out;
}

const KernelOp* Find(const std::vector<KernelOp>& ops, const std::string& name) {
  for (const KernelOp& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(MoeCostTest, FlexSendsOneCopyPerOtherNodeHit) {
  // 128 experts on 2 nodes (64 each), top-8 without replacement: P(no expert on the other node)
  // = C(64,8)/C(128,8) = 4,426,165,368 / 1,429,702,652,400; the all-to-all sends 8·1/2 = 4
  // copies there on average, FLEX one copy whenever at least one expert is there.
  const double miss = 4426165368.0 / 1429702652400.0;
  EXPECT_NEAR(FlexDedupFactor(128, 8, 2), (1 - miss) / 4, 1e-12);
  // One copy per token cannot be deduplicated; one group has no other group to send to.
  EXPECT_DOUBLE_EQ(FlexDedupFactor(128, 1, 4), 1.0);
  EXPECT_DOUBLE_EQ(FlexDedupFactor(128, 8, 1), 1.0);
  // top-2 of 8 experts over 4 nodes (2 each): P(miss a node) = C(6,2)/C(8,2) = 15/28;
  // 3 · (1 − 15/28) nodes hit against 2 · 3/4 copies.
  EXPECT_NEAR(FlexDedupFactor(8, 2, 4), 3 * (13.0 / 28) / 1.5, 1e-12);
}

TEST(MoeCostTest, DispatchersMoveTheirOwnVolumes) {
  const ModelSpec m = Qwen3Moe();
  const double tokens = 4096, h = 2048, e = 2;
  // All-to-all: every routed copy (tokens · top_k), dispatch and combine, forward and backward;
  // before them the all-gather of every rank's 128 int64 counts, and beside the dispatch the
  // routing probabilities of the routed copies in an all-to-all of their own (both directions).
  const auto a2a = EpCollectives(m, EpSplit(16, MoeDispatcher::kAllToAll, 2));
  ASSERT_EQ(a2a.size(), 7u);
  EXPECT_EQ(a2a[0].name, "ep_token_count_all_gather");
  EXPECT_EQ(a2a[0].kind, TpCollectiveKind::kAllGather);
  EXPECT_TRUE(a2a[0].forward);
  EXPECT_DOUBLE_EQ(a2a[0].bytes, 16 * 128 * 8.0);
  int token_a2a = 0;
  for (const TpCollective& c : a2a) {
    if (c.name.find("probs") != std::string::npos) {
      EXPECT_EQ(c.kind, TpCollectiveKind::kAllToAll);
      EXPECT_DOUBLE_EQ(c.bytes, tokens * 8 * e);
    } else if (c.kind == TpCollectiveKind::kAllToAll) {
      EXPECT_DOUBLE_EQ(c.bytes, tokens * 8 * h * e);
      ++token_a2a;
    }
  }
  EXPECT_EQ(token_a2a, 4);
  // FLEX: the same all-to-all sized down by the deduplication factor (HybridEP moves the
  // probabilities and the counts inside its own kernels).
  // Before them, each forward all-gathers every rank's routing map (one bool per token and
  // expert: 4096 × 128 bytes per rank, gathered over the 16).
  std::vector<TpCollective> flex = EpCollectives(m, EpSplit(16, MoeDispatcher::kFlex, 2));
  ASSERT_EQ(flex.size(), 5u);
  EXPECT_EQ(flex[0].name, "ep_routing_map_all_gather");
  EXPECT_EQ(flex[0].kind, TpCollectiveKind::kAllGather);
  EXPECT_TRUE(flex[0].forward);
  EXPECT_FALSE(flex[0].flex);
  EXPECT_DOUBLE_EQ(flex[0].bytes, 16 * tokens * 128);
  flex.erase(flex.begin());
  // Across the two nodes each node then forwards every token it holds, its own and those it
  // received, once to each of its 8 ranks the token picked: per source rank and local
  // destination tokens · 2 nodes · P(rank hit), P(rank hit) = 1 − C(120,8)/C(128,8) with 8
  // experts per rank; an all-to-all over 8 ranks of 8 times that per rank.
  double rank_miss = 1;
  for (int i = 0; i < 8; ++i) rank_miss *= (120.0 - i) / (128.0 - i);
  const double forwarded = 8 * tokens * 2 * (1 - rank_miss) * h * e;
  for (const TpCollective& c : flex) {
    EXPECT_DOUBLE_EQ(c.bytes, tokens * 8 * h * e * FlexDedupFactor(128, 8, 2));
    EXPECT_TRUE(c.flex);
    EXPECT_NEAR(c.flex_nvl_bytes, forwarded, 1e-9 * forwarded) << c.name;
  }
  for (const TpCollective& c : a2a) {
    EXPECT_FALSE(c.flex);
    EXPECT_EQ(c.flex_nvl_bytes, 0.0);
  }
  // FLEX inside one node sends a token once per rank that holds one of its experts (DeepEP's
  // is_token_in_rank): 128 experts on 8 ranks (16 each), top-8: P(a given rank misses) =
  // C(112,8)/C(128,8) = (112·111·…·105)/(128·127·…·121); 8·(1 − miss) ranks hit for 8 copies.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (112.0 - i) / (128.0 - i);
  EXPECT_NEAR(miss, 0.3326, 1e-4);
  for (const TpCollective& c : EpCollectives(m, EpSplit(8, MoeDispatcher::kFlex, 1))) {
    if (c.kind == TpCollectiveKind::kAllGather) continue;  // the routing map's, as above
    EXPECT_NEAR(c.bytes, tokens * h * e * 8 * (1 - miss), 1e-6 * c.bytes);
    EXPECT_TRUE(c.flex);
    EXPECT_EQ(c.flex_nvl_bytes, 0.0);  // one NVLink domain: no forwarding leg
  }
  // ... while the all-to-all dispatcher in the same node still moves every routed copy.
  EXPECT_DOUBLE_EQ(EpCollectives(m, EpSplit(8, MoeDispatcher::kAllToAll, 1))[1].bytes,
                   tokens * 8 * h * e);
  // All-gather: every rank gathers the group's tokens (ep · tokens · h) and reduce-scatters the
  // outputs back; backward mirrors.
  const auto ag = EpCollectives(m, EpSplit(16, MoeDispatcher::kAllGather, 2));
  ASSERT_EQ(ag.size(), 4u);
  EXPECT_EQ(ag[0].kind, TpCollectiveKind::kAllGather);
  EXPECT_EQ(ag[1].kind, TpCollectiveKind::kReduceScatter);
  EXPECT_TRUE(ag[0].forward);
  EXPECT_FALSE(ag[3].forward);
  for (const TpCollective& c : ag) EXPECT_DOUBLE_EQ(c.bytes, 16 * tokens * h * e);
}

TEST(MoeCostTest, GroupedGemmIsOneKernelPerExpertOnFourStreams) {
  const ModelSpec m = Qwen3Moe();
  const auto ops = LayerOps(m, EpSplit(16, MoeDispatcher::kAllToAll, 2), 1, true);
  const KernelOp* up = Find(ops, "expert_gate_up");
  ASSERT_NE(up, nullptr);
  // 128 / 16 = 8 local experts, 4096 · 8 / 8 = 4096 rows each.
  EXPECT_EQ(up->batch, 8);
  EXPECT_EQ(up->m, 4096);
  EXPECT_EQ(up->fwd_kernels, 8);
  EXPECT_EQ(up->bwd_kernels, 16);
  EXPECT_EQ(up->streams, 4);

  GpuSpec h100;
  h100.name = "H100-SXM-80GB";
  h100.arch = GpuArch::kHopper;
  h100.num_sms = 132;
  h100.peak_flops = h100.peak_bf16_flops = 989e12;
  h100.hbm_bytes_per_s = 3.35e12;
  ComputeParams p;
  // 8 experts on 4 streams: two rounds of 4 concurrent GEMMs, each round one pool of tiles.
  const double mm = 4096, n = 2 * 768, k = 2048;
  const double round = 2 * 4 * mm * n * k / (989e12 * GemmEfficiency(h100, p, 4, mm, n, k));
  EXPECT_NEAR(OpTimeSeconds(h100, p, *up, /*forward=*/true), 8 * p.kernel_overhead_s + 2 * round,
              1e-12);
  // A single kernel over all 8 would pool 8 experts' tiles in one set of waves: never slower.
  KernelOp one = *up;
  one.streams = 0;
  one.fwd_kernels = 1;
  EXPECT_LE(OpTimeSeconds(h100, p, one, true) - p.kernel_overhead_s,
            OpTimeSeconds(h100, p, *up, true) - 8 * p.kernel_overhead_s + 1e-15);
}

}  // namespace
}  // namespace trainsim::parallelism

namespace trainsim::parallelism {
namespace {

TEST(MoeCostTest, DispatcherMetadataIsForwardOnlyKernelsOverTheRoutingMap) {
  const ModelSpec m = Qwen3Moe();
  // Megatron-Core's all-to-all dispatcher with EP: 7 reductions and 4 device-to-host copies
  // (token_dispatcher.py, preprocess and _maybe_dtoh_and_synchronize); HybridEP: its
  // preprocessing kernel and one copy; the all-gather dispatcher: sum, cast and copy.
  for (const auto& [d, kernels] :
       {std::pair{MoeDispatcher::kAllToAll, 11}, std::pair{MoeDispatcher::kFlex, 2},
        std::pair{MoeDispatcher::kAllGather, 3}}) {
    const auto ops = LayerOps(m, EpSplit(16, d, 2), 1, true);
    const KernelOp* meta = Find(ops, "moe_dispatch_metadata");
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->fwd_kernels, kernels);
    EXPECT_EQ(meta->bwd_kernels, 0);
    EXPECT_EQ(meta->bwd_bytes, 0.0);
    // The boolean routing map, 4096 tokens × 128 experts, read once.
    EXPECT_DOUBLE_EQ(meta->fwd_bytes, 4096.0 * 128);
  }
  // Without EP or TP the all-to-all dispatcher counts once and copies once (3).
  EXPECT_EQ(MoeDispatchKernels(TensorSplit{}), 3);
}

// HybridEP across nodes copies each dispatch's 4096 input tokens (hidden 2048, BF16) into its
// RDMA buffer, a read and a write, in the forward's dispatch and the combine's backward; inside
// one node it does not, and neither does another dispatcher.
TEST(MoeCostTest, HybridEpAcrossNodesStagesEachDispatchsInputTokens) {
  const ModelSpec m = Qwen3Moe();
  const std::vector<KernelOp> ops = LayerOps(m, EpSplit(16, MoeDispatcher::kFlex, 2), 1, true);
  const KernelOp* stage = Find(ops, "moe_flex_stage_input");
  ASSERT_NE(stage, nullptr);
  EXPECT_DOUBLE_EQ(stage->fwd_bytes, 4096.0 * 2048 * (2 + 2));
  EXPECT_DOUBLE_EQ(stage->bwd_bytes, stage->fwd_bytes);
  EXPECT_EQ(stage->fwd_kernels + stage->bwd_kernels, 2);
  EXPECT_EQ(Find(LayerOps(m, EpSplit(8, MoeDispatcher::kFlex, 1), 1, true), "moe_flex_stage_input"),
            nullptr);
  EXPECT_EQ(
      Find(LayerOps(m, EpSplit(16, MoeDispatcher::kAllToAll, 2), 1, true), "moe_flex_stage_input"),
      nullptr);
}

TEST(MoeCostTest, Fp8ExpertsWithoutRouterPaddingCopyTheirRowsIntoPaddedSegments) {
  ModelSpec m = Qwen3Moe();
  m.moe.fp8 = true;
  // 4096 tokens · top-8 = 32,768 rows on this GPU: copied (read and written, 2 bytes each way)
  // before fc1 and after fc2, h = 2048 wide; the backward copies the gradients back.
  const auto ops = LayerOps(m, EpSplit(16, MoeDispatcher::kAllToAll, 2), 1, true);
  const KernelOp* pad = Find(ops, "expert_fp8_padding");
  ASSERT_NE(pad, nullptr);
  EXPECT_DOUBLE_EQ(pad->fwd_bytes, 2 * 32768.0 * 2048 * (2 + 2));
  EXPECT_DOUBLE_EQ(pad->bwd_bytes, pad->fwd_bytes);
  // Router padding, HybridEP (which pads inside its dispatch) and BF16 experts copy nothing.
  EXPECT_EQ(Find(LayerOps(m, EpSplit(16, MoeDispatcher::kFlex, 2), 1, true), "expert_fp8_padding"),
            nullptr);
  m.moe.router_padding = true;
  EXPECT_EQ(
      Find(LayerOps(m, EpSplit(16, MoeDispatcher::kAllToAll, 2), 1, true), "expert_fp8_padding"),
      nullptr);
  m.moe.router_padding = false;
  m.moe.fp8 = false;
  EXPECT_EQ(
      Find(LayerOps(m, EpSplit(16, MoeDispatcher::kAllToAll, 2), 1, true), "expert_fp8_padding"),
      nullptr);
}

}  // namespace
}  // namespace trainsim::parallelism
