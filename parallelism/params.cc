// Parameter counts of parallelism/model.h: the whole model, one layer, one GPU's share.
//
// Every block is counted as the matrices (and vectors) Megatron-Core builds for it, split into
// the part tensor parallelism shards and the part every TP rank holds whole:
//  - column-parallel linears (QKV, MLA's Q-up and KV-up, MLP up/gate): weight and bias sharded;
//  - row-parallel linears (attention output, MLP down): weight sharded, bias replicated (it is
//    added once after the reduction, Megatron's RowParallelLinear);
//  - norms, the router (TopKRouter's weight is a plain replicated parameter) and MLA's down
//    projections (gpt_layer_specs.py builds linear_q_down_proj / linear_kv_down_proj with
//    backend.linear(), a duplicated TELinear) replicated.
// Routed experts are counted apart: experts / ep of them per GPU, each MLP split over etp.
// The final norm before the output layer is not counted (at most 2h parameters, under 1e-6 of
// any preset), so that the GPT shape keeps Narayanan et al.'s P = 12lh² + 13lh + (V + s)h.
#include <algorithm>
#include <cmath>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

// Parameters of a block: `sharded` is split over the TP (or ETP) group, `replicated` is held
// whole by every rank of it.
struct Params {
  int64_t sharded = 0;
  int64_t replicated = 0;
  int64_t total() const { return sharded + replicated; }
  double PerRank(int ranks) const { return double(sharded) / std::max(1, ranks) + replicated; }
  Params& operator+=(const Params& o) {
    sharded += o.sharded;
    replicated += o.replicated;
    return *this;
  }
};

// One norm over `width` values: RMSNorm has a scale, LayerNorm a scale and a bias.
int64_t NormParams(const ModelSpec& m, int64_t width) { return (m.rmsnorm ? 1 : 2) * width; }

// Standard (multi-head or grouped-query) attention: fused QKV (column-parallel) and the output
// projection (row-parallel).
Params StandardAttention(const ModelSpec& m) {
  const int64_t h = m.hidden, qkv = m.q_width() + 2 * m.kv_width();
  const int64_t b = m.linear_bias ? 1 : 0;
  return {h * qkv + b * qkv + m.q_width() * h, b * h};
}

// Multi-head latent attention (DeepSeek-V2/V3, HF modeling_deepseek_v3.py): Q either projected
// directly (h × heads·(nope+rope)) or through q_a (h × q_lora, replicated) + its norm + q_b
// (q_lora × heads·(nope+rope), sharded); kv_a (h × (kv_lora + rope), replicated) + its norm;
// kv_b (kv_lora × heads·(nope + v), sharded); output (heads·v × h, row-parallel).
Params LatentAttention(const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const int64_t h = m.hidden, heads = m.heads, b = m.linear_bias ? 1 : 0;
  const int64_t q_out = heads * (int64_t(a.qk_nope_head_dim) + a.qk_rope_head_dim);
  const int64_t kv_a_out = int64_t(a.kv_lora_rank) + a.qk_rope_head_dim;
  const int64_t kv_b_out = heads * (int64_t(a.qk_nope_head_dim) + a.v_head_dim);
  Params p;
  if (a.q_lora_rank > 0) {
    p.replicated += h * a.q_lora_rank + b * a.q_lora_rank + NormParams(m, a.q_lora_rank);
    p.sharded += int64_t(a.q_lora_rank) * q_out + b * q_out;
  } else {
    p.sharded += h * q_out + b * q_out;
  }
  p.replicated += h * kv_a_out + b * kv_a_out + NormParams(m, a.kv_lora_rank);
  p.sharded += int64_t(a.kv_lora_rank) * kv_b_out + b * kv_b_out;
  p.sharded += heads * a.v_head_dim * h;
  p.replicated += b * h;
  return p;
}

// An MLP of inner width f: up (and gate, SwiGLU) column-parallel, down row-parallel.
Params Mlp(const ModelSpec& m, int64_t f) {
  const int64_t h = m.hidden, b = m.linear_bias ? 1 : 0;
  const int64_t up = m.swiglu ? 2 * f : f;
  return {h * up + b * up + f * h, b * h};
}

// The parts of one layer: `dense` over TP, `expert` the routed experts (one expert's MLP,
// split over ETP) and how many of them.
struct LayerParts {
  Params dense;
  Params one_expert;
  int64_t experts = 0;
};

LayerParts Layer(const ModelSpec& m, bool moe_layer) {
  LayerParts parts;
  parts.dense = m.mla.enabled() ? LatentAttention(m) : StandardAttention(m);
  parts.dense.replicated += 2 * NormParams(m, m.hidden);  // before attention and before the MLP
  if (moe_layer && m.moe.enabled()) {
    const MoeSpec& e = m.moe;
    const int64_t b = m.linear_bias ? 1 : 0;
    parts.dense.replicated += int64_t(m.hidden) * e.experts + b * e.experts;  // router
    const int64_t shared = e.shared_ffn(m.ffn());
    if (shared > 0) parts.dense += Mlp(m, shared);
    parts.one_expert = Mlp(m, e.expert_ffn(m.ffn()));
    parts.experts = e.experts;
  } else {
    parts.dense += Mlp(m, m.ffn());
  }
  return parts;
}

// A Mamba-2 mixer (Megatron-Core's MambaMixer): in_proj and out_proj, conv1d's weight and bias,
// A_log, D and dt_bias per head, the gated norm's scale over d_inner: all split over TP (heads,
// groups and channels). in_proj's and out_proj's biases when linear_bias (out_proj's whole).
Params Mamba(const ModelSpec& m) {
  const MambaSpec& a = m.mamba;
  const int64_t h = m.hidden, b = m.linear_bias ? 1 : 0;
  Params p;
  p.sharded = h * a.in_proj_width() + b * a.in_proj_width() + a.conv_dim() * (a.conv_kernel + 1) +
              3 * int64_t(a.heads) + a.d_inner() + a.d_inner() * h;
  p.replicated = b * h;
  return p;
}

// One layer of a hybrid pattern: its block and its pre-norm.
LayerParts HybridLayer(const ModelSpec& m, LayerBlock block) {
  LayerParts parts;
  switch (block) {
    case LayerBlock::kMamba:
      parts.dense = Mamba(m);
      break;
    case LayerBlock::kAttention:
      parts.dense = m.mla.enabled() ? LatentAttention(m) : StandardAttention(m);
      break;
    case LayerBlock::kMoe:
      if (m.moe.enabled()) {
        const LayerParts full = Layer(m, true);
        const Params attn = m.mla.enabled() ? LatentAttention(m) : StandardAttention(m);
        parts = full;
        parts.dense.sharded -= attn.sharded;
        parts.dense.replicated -= attn.replicated + NormParams(m, m.hidden);
        return parts;
      }
      [[fallthrough]];
    case LayerBlock::kMlp:
    case LayerBlock::kTransformer:
      parts.dense = Mlp(m, m.ffn());
      break;
  }
  parts.dense.replicated += NormParams(m, m.hidden);
  return parts;
}

LayerParts PartsOf(const ModelSpec& m, LayerKind kind) {
  return kind.block == LayerBlock::kTransformer ? Layer(m, kind.moe) : HybridLayer(m, kind.block);
}

// Word embedding, learned positions and an untied output layer.
int64_t EmbeddingParameters(const ModelSpec& m) {
  const int64_t h = m.hidden;
  int64_t p = int64_t(m.vocab) * h;
  if (m.learned_position_embedding) p += int64_t(m.seq_len) * h;
  if (!m.tied_embeddings) p += int64_t(m.vocab) * h;
  return p;
}

// All layers, with routed experts counted `experts_counted(e)` times per MoE layer.
template <typename ExpertsCounted>
int64_t CountModel(const ModelSpec& m, ExpertsCounted experts_counted) {
  int64_t total = EmbeddingParameters(m);
  if (m.hybrid()) {
    for (int l = 0; l < m.num_layers; ++l) {
      const LayerParts parts = PartsOf(m, LayerKindAt(m, l));
      total += parts.dense.total() + experts_counted(parts.experts) * parts.one_expert.total();
    }
    return total;
  }
  int moe_layers = 0;  // ModelSpec::IsMoeLayer: past first_dense_layers, every interleave_step-th
  for (int l = 0; l < m.num_layers; ++l) moe_layers += m.IsMoeLayer(l) ? 1 : 0;
  const int dense_layers = m.num_layers - moe_layers;
  if (dense_layers > 0) total += int64_t(dense_layers) * LayerParameterCount(m, false);
  if (moe_layers > 0) {
    const LayerParts parts = Layer(m, true);
    total += int64_t(moe_layers) *
             (parts.dense.total() + experts_counted(parts.experts) * parts.one_expert.total());
  }
  return total;
}

}  // namespace

int64_t LayerParameterCount(const ModelSpec& m, bool moe_layer) {
  const LayerParts parts = Layer(m, moe_layer);
  return parts.dense.total() + parts.experts * parts.one_expert.total();
}

int64_t LayerParameterCount(const ModelSpec& m, LayerKind kind) {
  const LayerParts parts = PartsOf(m, kind);
  return parts.dense.total() + parts.experts * parts.one_expert.total();
}

ParamSplit LayerParametersPerGpu(const ModelSpec& m, TensorSplit split, bool moe_layer) {
  return LayerParametersPerGpu(m, split, LayerKind{LayerBlock::kTransformer, moe_layer, false});
}

ParamSplit LayerParametersPerGpu(const ModelSpec& m, TensorSplit split, LayerKind kind) {
  const LayerParts parts = PartsOf(m, kind);
  ParamSplit out;
  out.dense = parts.dense.PerRank(split.tp);
  if (parts.experts > 0) {
    const double local_experts = double(parts.experts) / std::max(1, split.ep);
    out.expert = local_experts * parts.one_expert.PerRank(split.etp);
  }
  return out;
}

int64_t LayerParametersPerTpRank(const ModelSpec& m, int tp) {
  TensorSplit split;
  split.tp = tp;
  return std::llround(LayerParametersPerGpu(m, split, false).total());
}

int64_t ParameterCount(const ModelSpec& m) {
  return CountModel(m, [](int64_t experts) { return experts; });
}

int64_t ActiveParameterCount(const ModelSpec& m) {
  const int64_t top_k = std::max(0, m.moe.top_k);
  return CountModel(m, [top_k](int64_t experts) { return std::min(experts, top_k); });
}

}  // namespace trainsim::parallelism
