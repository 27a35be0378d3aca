// The collectives inside a layer, the embedding and the head (parallelism/model.h): tensor,
// context and expert parallelism. docs/layer-model.md derives the byte counts.
#include <algorithm>
#include <string>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

using K = TpCollectiveKind;

TpCollective Coll(std::string name, K kind, double bytes, bool forward, CommGroup group,
                  int count = 1, std::string overlaps = {}) {
  return {std::move(name), kind, bytes, forward, group, count, std::move(overlaps)};
}

// Width of the activations the attention block's column-parallel projections take in. MHA/GQA:
// the norm output, h. MLA (Megatron-Core's MLASelfAttention): the replicated down projections
// run on the local shard and the up projections gather their low-rank inputs (q_lora_rank, or
// h when Q is projected directly, and kv_lora_rank), plus the shared rope key under SP.
double AttentionInputWidth(const ModelSpec& m, bool sequence_parallel) {
  if (!m.mla.enabled()) return m.hidden;
  const double q = m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : m.hidden;
  return q + m.mla.kv_lora_rank + (sequence_parallel ? m.mla.qk_rope_head_dim : 0);
}

// Megatron's f/g operators (Shoeybi et al. 2019), or with SP the all-gather / reduce-scatter
// pairs (Korthikanti §4.2.2), on this rank's b·s/cp tokens. `mlp`: the layer has a TP-split MLP
// (dense, or a MoE layer's shared experts); a MoE layer's routed experts use EP/ETP instead.
// `attn`: the layer has the attention block's pair (or a Mamba mixer's: in_proj column-parallel
// on the hidden state, out_proj row-parallel; `mamba` gives it the hidden width).
void AppendTp(const ModelSpec& m, TensorSplit split, double tokens, bool mlp,
              std::vector<TpCollective>* out, bool attn = true, bool mamba = false) {
  const int e = m.bytes_per_element;
  const double bytes = tokens * m.hidden * e;
  const double attn_in =
      tokens * (mamba ? double(m.hidden) : AttentionInputWidth(m, split.sequence_parallel)) * e;
  const double attn_in_bwd = mamba ? bytes : tokens * AttentionInputWidth(m, false) * e;
  const CommGroup g = CommGroup::kTp;
  if (split.sequence_parallel) {
    if (attn) {
      out->push_back(Coll("tp_all_gather_attn", K::kAllGather, attn_in, true, g));
      out->push_back(Coll("tp_reduce_scatter_attn", K::kReduceScatter, bytes, true, g));
    }
    if (mlp) {
      out->push_back(Coll("tp_all_gather_mlp", K::kAllGather, bytes, true, g));
      out->push_back(Coll("tp_reduce_scatter_mlp", K::kReduceScatter, bytes, true, g));
    }
    // Backward: the weight gradients need the full-sequence layer-norm outputs again, which SP
    // did not keep, so Megatron re-all-gathers them (LinearWithGradAccumulationAndAsync-
    // Communication) besides the all-gather/reduce-scatter pair that mirrors the forward.
    if (mlp) out->push_back(Coll("tp_all_gather_mlp_input_bwd", K::kAllGather, bytes, false, g));
    if (attn)
      out->push_back(Coll("tp_all_gather_attn_input_bwd", K::kAllGather, attn_in, false, g));
    if (mlp) {
      out->push_back(Coll("tp_all_gather_mlp_bwd", K::kAllGather, bytes, false, g));
      out->push_back(Coll("tp_reduce_scatter_mlp_bwd", K::kReduceScatter, bytes, false, g));
    }
    if (attn) {
      out->push_back(Coll("tp_all_gather_attn_bwd", K::kAllGather, bytes, false, g));
      out->push_back(Coll("tp_reduce_scatter_attn_bwd", K::kReduceScatter, attn_in, false, g));
    }
  } else {
    if (attn) out->push_back(Coll("tp_all_reduce_attn", K::kAllReduce, bytes, true, g));
    if (mlp) {
      out->push_back(Coll("tp_all_reduce_mlp", K::kAllReduce, bytes, true, g));
      out->push_back(Coll("tp_all_reduce_mlp_bwd", K::kAllReduce, bytes, false, g));
    }
    if (attn) out->push_back(Coll("tp_all_reduce_attn_bwd", K::kAllReduce, attn_in_bwd, false, g));
  }
}

// Context parallelism's K/V exchange (Megatron-Core's --cp-comm-type, Transformer Engine's
// context-parallel attention), on this rank's b·s/cp tokens of K and V (split over TP heads).
void AppendCp(const ModelSpec& m, TensorSplit split, int micro_batch,
              std::vector<TpCollective>* out) {
  const int e = m.bytes_per_element, cp = split.cp;
  const AttentionDims d = AttentionDimsOf(m);
  const double tokens = double(micro_batch) * (m.seq_len / cp);
  const double per_tp = 1.0 / split.tp;
  const double kv_chunk = tokens * double(d.k_width() + d.v_width()) * per_tp * e;
  const std::string attn = m.flash_attention ? "flash_attention" : "attn_scores";
  const CommGroup g = CommGroup::kCp;
  switch (split.cp_comm) {
    case CpComm::kP2P:
      // Ring: cp−1 steps, each passing this rank's K and V chunk on while the attention of the
      // chunk in hand runs; backward passes K, V and the accumulating dK, dV (twice the bytes).
      out->push_back(Coll("cp_p2p_kv", K::kSendRecv, kv_chunk, true, g, cp - 1, attn));
      out->push_back(Coll("cp_p2p_kv_dkv_bwd", K::kSendRecv, 2 * kv_chunk, false, g, cp - 1, attn));
      break;
    case CpComm::kAllGather:
      // All-gather of the whole sequence's K and V before attention; backward gathers them again
      // and reduce-scatters dK, dV. Not overlapped.
      out->push_back(Coll("cp_all_gather_kv", K::kAllGather, cp * kv_chunk, true, g));
      out->push_back(Coll("cp_all_gather_kv_bwd", K::kAllGather, cp * kv_chunk, false, g));
      out->push_back(Coll("cp_reduce_scatter_dkv_bwd", K::kReduceScatter, cp * kv_chunk, false, g));
      break;
    case CpComm::kAllToAll: {
      // Ulysses (Jacobs et al. 2023): all-to-alls trade the sequence split for a head split
      // before attention (Q, K, V) and back after it (O); backward mirrors them.
      const double q = tokens * double(d.q_width()) * per_tp * e;
      const double k = tokens * double(d.k_width()) * per_tp * e;
      const double v = tokens * double(d.v_width()) * per_tp * e;
      const double o = tokens * double(d.out_width()) * per_tp * e;
      out->push_back(Coll("cp_a2a_q", K::kAllToAll, q, true, g));
      out->push_back(Coll("cp_a2a_k", K::kAllToAll, k, true, g));
      out->push_back(Coll("cp_a2a_v", K::kAllToAll, v, true, g));
      out->push_back(Coll("cp_a2a_out", K::kAllToAll, o, true, g));
      out->push_back(Coll("cp_a2a_dout_bwd", K::kAllToAll, o, false, g));
      out->push_back(Coll("cp_a2a_dq_bwd", K::kAllToAll, q, false, g));
      out->push_back(Coll("cp_a2a_dk_bwd", K::kAllToAll, k, false, g));
      out->push_back(Coll("cp_a2a_dv_bwd", K::kAllToAll, v, false, g));
      break;
    }
  }
}

// Megatron-Core's all-to-all token dispatcher (MoEAlltoAllTokenDispatcher): dispatch and
// combine all-to-alls over EP of the routed copies; with expert TP, an all-gather of the
// received tokens over ETP before the experts and a reduce-scatter after. Backward mirrors.
void AppendEp(const ModelSpec& m, TensorSplit split, int micro_batch,
              std::vector<TpCollective>* out) {
  const MoeTokens tok = MoeTokensPerGpu(m, split, micro_batch);
  const double e = m.bytes_per_element;
  if (split.ep > 1) {
    const CommGroup g = CommGroup::kEp;
    if (split.dispatcher == MoeDispatcher::kAllGather) {
      // MoEAllGatherTokenDispatcher: every rank gathers the group's tokens (the gathered tensor,
      // ep · dispatched tokens), keeps those of its experts, and reduce-scatters the outputs.
      const double bytes = tok.dispatched * split.ep * m.hidden * e;
      out->push_back(Coll("ep_dispatch_all_gather", K::kAllGather, bytes, true, g));
      out->push_back(Coll("ep_combine_reduce_scatter", K::kReduceScatter, bytes, true, g));
      out->push_back(Coll("ep_combine_all_gather_bwd", K::kAllGather, bytes, false, g));
      out->push_back(Coll("ep_dispatch_reduce_scatter_bwd", K::kReduceScatter, bytes, false, g));
    } else {
      // All-to-all: every routed copy. FLEX (DeepEP/HybridEP) deduplicates (FlexDedupFactor):
      // across nodes a token crosses the network once per destination node (to the rank of
      // the same local index there), and sizing the all-to-all by that factor gives its
      // network share exactly the deduplicated bytes; inside one NVLink domain it moves once
      // per destination rank. Across nodes each node then forwards every token it holds, its
      // own and those received, over NVLink once to each of its ranks the token picked: per
      // source rank and local destination, tokens · nodes · P(rank hit), an all-to-all over
      // the node's EP ranks sized by the per-rank factor (the leg that binds on two nodes,
      // where a token's copies mostly stay inside the node: step/flex_dispatch.h).
      const bool flex = split.dispatcher == MoeDispatcher::kFlex;
      const double copies = tok.routed * m.hidden * e;
      const double per_rank = flex ? FlexDedupFactor(m.moe.experts, m.moe.top_k, split.ep) : 1.0;
      const double dedup = flex && split.ep_nodes > 1
                               ? FlexDedupFactor(m.moe.experts, m.moe.top_k, split.ep_nodes)
                               : per_rank;
      const double bytes = copies * dedup;
      const double nvl_bytes = flex && split.ep_nodes > 1 ? copies * per_rank : 0.0;
      auto a2a = [&](std::string name, bool forward) {
        TpCollective col = Coll(std::move(name), K::kAllToAll, bytes, forward, g);
        col.flex = flex;
        col.flex_nvl_bytes = nvl_bytes;
        return col;
      };
      if (split.dispatcher == MoeDispatcher::kAllToAll) {
        // Before the tokens move, MoEAlltoAllTokenDispatcher.preprocess all-gathers every
        // rank's tokens-per-expert counts (int64, `experts` of them) over the TP×EP group to
        // size the all-to-all (gather_from_sequence_parallel_region); the host then waits for
        // them (MoeDispatchSyncs). A latency-bound collective, forward only.
        const double counts = double(split.ep) * m.moe.experts * 8.0;
        out->push_back(Coll("ep_token_count_all_gather", K::kAllGather, counts, true, g));
      } else if (flex) {
        // HybridEP's metadata preprocessing, run by each forward dispatch (Megatron-Core passes
        // no handle there): every rank's routing map (bool, tokens × experts) all-gathered over
        // the EP group before the scan kernel (DeepEP hybrid-ep, Executor::allgather_routing_map:
        // NCCL's all_gather_into_tensor across nodes, a 32-SM kernel of its own inside one node,
        // priced as NCCL's here). Combine and the backward reuse the handle.
        const double map = double(split.ep) * tok.dispatched * m.moe.experts;
        out->push_back(Coll("ep_routing_map_all_gather", K::kAllGather, map, true, g));
      }
      out->push_back(a2a("ep_dispatch_all_to_all", true));
      if (split.dispatcher == MoeDispatcher::kAllToAll) {
        // token_dispatch sends the routing probabilities of the routed copies in an all-to-all
        // of their own after the tokens' (router dtype: the activations' unless
        // --moe-router-dtype says otherwise); its autograd backward returns their gradients.
        const double probs = tok.routed * e;
        out->push_back(Coll("ep_dispatch_probs_all_to_all", K::kAllToAll, probs, true, g));
        out->push_back(Coll("ep_dispatch_probs_all_to_all_bwd", K::kAllToAll, probs, false, g));
      }
      out->push_back(a2a("ep_combine_all_to_all", true));
      out->push_back(a2a("ep_combine_all_to_all_bwd", false));
      out->push_back(a2a("ep_dispatch_all_to_all_bwd", false));
    }
  }
  if (split.etp > 1) {
    const double bytes = tok.expert_mean * m.hidden * e;  // the gathered tensor
    const CommGroup g = CommGroup::kEtp;
    out->push_back(Coll("etp_all_gather_tokens", K::kAllGather, bytes, true, g));
    out->push_back(Coll("etp_reduce_scatter_tokens", K::kReduceScatter, bytes, true, g));
    out->push_back(Coll("etp_all_gather_tokens_bwd", K::kAllGather, bytes, false, g));
    out->push_back(Coll("etp_reduce_scatter_tokens_bwd", K::kReduceScatter, bytes, false, g));
  }
}

}  // namespace

namespace {
// Which selective-recompute modules re-run each forward collective of a layer: the MLP's TP
// pair with the MLP (a dense layer's "mlp"; a MoE layer's shared experts, under "moe" or
// "shared_experts"), the expert all-to-alls and ETP collectives with "moe" (MoELayer.forward
// is one checkpoint, dispatch and combine included), CP's K/V exchange with "core_attn" (it
// runs inside Transformer Engine's context-parallel attention, the checkpointed core).
void TagRecomputed(bool moe, std::vector<TpCollective>* out) {
  for (TpCollective& col : *out) {
    if (!col.forward) continue;
    switch (col.group) {
      case CommGroup::kEp:
      case CommGroup::kEtp:
        col.recomputed_by = kRecomputeMoe;
        break;
      case CommGroup::kCp:
        col.recomputed_by = kRecomputeCoreAttn;
        break;
      case CommGroup::kTp:
        if (col.name.find("_mlp") != std::string::npos) {
          col.recomputed_by = moe ? kRecomputeMoe | kRecomputeSharedExperts : kRecomputeMlp;
        }
        break;
    }
  }
}
}  // namespace

std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch,
                                             bool moe_layer) {
  if (m.hybrid()) {
    std::vector<TpCollective> all;
    for (const LayerKind& k : DistinctLayerKinds(m)) {
      if (k.moe != (moe_layer && m.moe.enabled())) continue;
      std::vector<TpCollective> one = LayerTpCollectives(m, split, micro_batch, k);
      all.insert(all.end(), one.begin(), one.end());
    }
    return all;
  }
  std::vector<TpCollective> out;
  const bool moe = moe_layer && m.moe.enabled();
  const double tokens = double(micro_batch) * (m.seq_len / std::max(split.cp, 1));
  if (split.tp > 1) AppendTp(m, split, tokens, !moe || m.moe.shared_ffn(m.ffn()) > 0, &out);
  if (split.cp > 1) AppendCp(m, split, micro_batch, &out);
  if (moe) AppendEp(m, split, micro_batch, &out);
  TagRecomputed(moe, &out);
  return out;
}

std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch,
                                             LayerKind kind) {
  if (kind.block == LayerBlock::kTransformer) {
    return LayerTpCollectives(m, split, micro_batch, kind.moe);
  }
  std::vector<TpCollective> out;
  const bool moe = kind.block == LayerBlock::kMoe && m.moe.enabled();
  const double tokens = double(micro_batch) * (m.seq_len / std::max(split.cp, 1));
  const bool mixer = kind.block == LayerBlock::kAttention || kind.block == LayerBlock::kMamba;
  const bool mlp = kind.block == LayerBlock::kMlp || (moe && m.moe.shared_ffn(m.ffn()) > 0);
  if (split.tp > 1 && (mixer || mlp)) {
    AppendTp(m, split, tokens, mlp, &out, mixer, kind.block == LayerBlock::kMamba);
  }
  if (split.cp > 1 && kind.block == LayerBlock::kAttention) AppendCp(m, split, micro_batch, &out);
  if (moe) AppendEp(m, split, micro_batch, &out);
  TagRecomputed(moe, &out);
  return out;
}

std::vector<TpCollective> EmbeddingTpCollectives(const ModelSpec& m, TensorSplit split,
                                                 int micro_batch) {
  std::vector<TpCollective> out;
  if (split.tp <= 1) return out;
  const double tokens = double(micro_batch) * (m.seq_len / std::max(split.cp, 1));
  const double bytes = tokens * m.hidden * m.bytes_per_element;
  out.push_back(
      {split.sequence_parallel ? "tp_reduce_scatter_embedding" : "tp_all_reduce_embedding",
       split.sequence_parallel ? TpCollectiveKind::kReduceScatter : TpCollectiveKind::kAllReduce,
       bytes, true});
  return out;
}

std::vector<TpCollective> HeadTpCollectives(const ModelSpec& m, TensorSplit split,
                                            int micro_batch) {
  std::vector<TpCollective> out;
  if (split.tp <= 1) return out;
  const double tokens = double(micro_batch) * (m.seq_len / std::max(split.cp, 1));
  const double bytes = tokens * m.hidden * m.bytes_per_element;
  if (split.sequence_parallel) {
    out.push_back({"tp_all_gather_head", TpCollectiveKind::kAllGather, bytes, true});
    out.push_back({"tp_reduce_scatter_head_bwd", TpCollectiveKind::kReduceScatter, bytes, false});
  } else {
    // Backward of the output layer's input (Megatron's f operator).
    out.push_back({"tp_all_reduce_head_bwd", TpCollectiveKind::kAllReduce, bytes, false});
  }
  // Vocab-parallel cross-entropy: all-reduces of the per-token max, sum of exponentials and
  // target logit, fp32 (Megatron's _VocabParallelCrossEntropy).
  out.push_back({"tp_all_reduce_ce_max", TpCollectiveKind::kAllReduce, tokens * 4, true});
  out.push_back({"tp_all_reduce_ce_target", TpCollectiveKind::kAllReduce, tokens * 4, true});
  out.push_back({"tp_all_reduce_ce_sum", TpCollectiveKind::kAllReduce, tokens * 4, true});
  return out;
}

}  // namespace trainsim::parallelism
