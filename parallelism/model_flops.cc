// FLOPs per iteration (parallelism/model.h) from closed forms, not from LayerOps: the ops carry
// what the kernels execute (a causal flash kernel about half the score square), the counts here
// follow published conventions. docs/layer-model.md writes them out.
#include <algorithm>

#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

// 3 for SwiGLU (gate, up and down matrices), 2 for a GELU MLP (up and down).
double MlpMatrices(const ModelSpec& m) { return m.swiglu ? 3.0 : 2.0; }

int MoeLayers(const ModelSpec& m) {
  int n = 0;
  for (int l = 0; l < m.num_layers; ++l) n += m.IsMoeLayer(l) ? 1 : 0;
  return n;
}

// Forward matrix FLOPs per token of the attention projections.
double AttentionProjectionFlops(const ModelSpec& m) {
  const double h = m.hidden;
  if (m.mla.enabled()) {
    const MlaSpec& a = m.mla;
    const double n = m.heads, dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q = a.q_lora_rank > 0 ? a.q_lora_rank * (h + n * dqk) : h * n * dqk;
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                      a.kv_lora_rank * n * (a.qk_nope_head_dim + a.v_head_dim);
    return 2 * (q + kv + n * a.v_head_dim * h);
  }
  const AttentionDims d = AttentionDimsOf(m);
  return 2 * h * double(d.q_width() + 2 * d.k_width()) + 2 * double(d.q_width()) * h;
}

// Forward matrix FLOPs of QKᵀ and AV for one sequence over the full s × s square (Narayanan's
// convention: no causal discount).
double AttentionCoreFlops(const ModelSpec& m) {
  const AttentionDims d = AttentionDimsOf(m);
  const double s = m.seq_len;
  return 2 * s * s * double(d.q_width() + d.out_width());
}

// Forward matrix FLOPs per token of a layer's MLP: dense, or a MoE layer's router, top_k routed
// experts and the shared experts.
double MlpFlops(const ModelSpec& m, bool moe_layer) {
  const double h = m.hidden;
  if (!moe_layer) return 2 * h * m.ffn() * MlpMatrices(m);
  const double routed = double(m.moe.top_k) * m.moe.expert_ffn(m.ffn());
  const double shared = double(m.moe.shared_ffn(m.ffn()));
  return 2 * h * m.moe.experts + 2 * h * (routed + shared) * MlpMatrices(m);
}

// A sliding-window layer's core over the band its queries see (CausalKeysPerQuery keys each):
// no causal discount to undo, so both conventions count the band.
double WindowedCoreFlops(const ModelSpec& m) {
  const AttentionDims d = AttentionDimsOf(m);
  const double s = m.seq_len;
  return 2 * s * CausalKeysPerQuery(m.seq_len, m.window) * double(d.q_width() + d.out_width());
}

double CoreFlops(const ModelSpec& m, bool windowed) {
  return windowed ? WindowedCoreFlops(m) : AttentionCoreFlops(m);
}

// Forward matrix FLOPs per token of a Mamba-2 mixer: in_proj, out_proj and the SSD scan's block
// products (Dao & Gu 2024 §6: 2·Q·N·G + 2·Q·P·H + 4·N·P·H per token); conv1d is not a matrix
// product.
double MambaFlops(const ModelSpec& m) {
  const MambaSpec& a = m.mamba;
  const double h = m.hidden, Q = a.chunk_size, N = a.state_dim, P = a.head_dim;
  const double H = a.heads, G = a.groups;
  return 2 * h * double(a.in_proj_width()) + 2 * double(a.d_inner()) * h + 2 * Q * N * G +
         2 * Q * P * H + 4 * N * P * H;
}

// Forward matrix FLOPs of one layer for one sequence (Narayanan's convention).
double LayerForwardFlops(const ModelSpec& m, LayerKind k) {
  const double s = m.seq_len;
  switch (k.block) {
    case LayerBlock::kTransformer:
      return s * (AttentionProjectionFlops(m) + MlpFlops(m, k.moe)) + CoreFlops(m, k.windowed);
    case LayerBlock::kAttention:
      return s * AttentionProjectionFlops(m) + CoreFlops(m, k.windowed);
    case LayerBlock::kMamba:
      return s * MambaFlops(m);
    case LayerBlock::kMlp:
    case LayerBlock::kMoe:
      return s * MlpFlops(m, k.moe);
  }
  return 0;
}

double LayersForwardFlops(const ModelSpec& m) {
  double total = 0;
  for (int l = 0; l < m.num_layers; ++l) total += LayerForwardFlops(m, LayerKindAt(m, l));
  return total;
}

// Megatron-Core's hybrid_flops (training.py, with Megatron-Bridge's sliding-window variant,
// src/megatron/bridge/training/utils/flop_utils.py): per token forward, attention
// 4·q·(h + h·g/n) + 4·q·ctx (ctx = s/2, or the window's mean keys), Mamba
// 2·h·(2·d_in + 2·G·N + H) + 7·d_in·N + 2·d_in·h with d_in = 2·h (Megatron assumes expand 2
// whatever --mamba-num-heads says), MLP 4·h·f·(1.5 when gated), MoE
// 4·h·(f_e·top_k + f_shared)·(1.5 when gated), logits 2·h·V; all × 3.
double MegatronHybridFlops(const ModelSpec& m, int64_t global_batch) {
  const double h = m.hidden, s = m.seq_len, V = m.vocab;
  const double q = double(m.head_width()) * m.heads, kvw = double(m.head_width()) * m.kv();
  const double gated = m.swiglu ? 1.5 : 1.0;
  const MambaSpec& a = m.mamba;
  const double d_in = 2 * h, G = a.groups, N = a.state_dim;
  const double H = a.heads > 0 ? a.heads : d_in / a.head_dim;
  double per_token = 2 * h * V;
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind k = LayerKindAt(m, l);
    switch (k.block) {
      case LayerBlock::kAttention: {
        const double ctx = k.windowed ? CausalKeysPerQuery(m.seq_len, m.window) : s / 2;
        per_token += 4 * q * h + 4 * h * kvw + 4 * q * ctx;
        break;
      }
      case LayerBlock::kMamba:
        per_token += 2 * h * (2 * d_in + 2 * G * N + H) + 7 * d_in * N + 2 * d_in * h;
        break;
      case LayerBlock::kMlp:
        per_token += 4 * h * m.ffn() * gated;
        break;
      case LayerBlock::kMoe:
        per_token +=
            4 * h *
            (double(m.moe.expert_ffn(m.ffn())) * m.moe.top_k + double(m.moe.shared_ffn(m.ffn()))) *
            gated;
        break;
      case LayerBlock::kTransformer:
        break;
    }
  }
  return 3 * per_token * double(global_batch) * s;
}

}  // namespace

double ModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch) {
  // Forward + backward (dgrad and wgrad): 3 × the forward products, the logits included.
  const double logits = 2.0 * m.seq_len * m.hidden * double(m.vocab);
  return double(global_batch) * 3 * (LayersForwardFlops(m) + logits);
}

double MegatronModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch) {
  // megatron/training/training.py, num_floating_point_operations → transformer_flops()
  // (NVIDIA/Megatron-LM d98e8a6, 2026-08): 3 (fwd, wgrad, dgrad) × 2 (FMA) × the GEMM sizes;
  // the core attention counted over the causal half; no router GEMM; padded vocab = m.vocab.
  if (m.hybrid()) return MegatronHybridFlops(m, global_batch);
  const double h = m.hidden, n = m.heads, s = m.seq_len, V = m.vocab;
  const double tokens = double(global_batch) * s;
  const double moe_layers = MoeLayers(m), dense_layers = m.num_layers - moe_layers;
  const double ffn_factor = MlpMatrices(m);
  const double routed =
      m.moe.enabled() ? double(m.moe.expert_ffn(m.ffn())) * m.moe.top_k * ffn_factor : 0;
  const double shared = m.moe.enabled() ? double(m.moe.shared_ffn(m.ffn())) * ffn_factor : 0;
  const double mlp =
      6 * h * (double(m.ffn()) * ffn_factor * dense_layers + (routed + shared) * moe_layers);
  double attn = 0, core = 0;
  if (m.mla.enabled()) {
    // Megatron's qk_head_dim is the no-rope part, qk_pos_emb_head_dim the rope part; the "+ 1"
    // terms are the q and kv norms.
    const MlaSpec& a = m.mla;
    const double dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q_term = a.q_lora_rank > 0 ? a.q_lora_rank * (h + n * dqk + 1) : h * n * dqk;
    attn = 6 * (q_term + a.kv_lora_rank * (h + n * (a.qk_nope_head_dim + a.v_head_dim) + 1) +
                h * a.qk_rope_head_dim + n * a.v_head_dim * h);
    core = 6 * (n * dqk / 2 + n * a.v_head_dim / 2);
  } else {
    const double q = double(m.head_width()) * n, kv = double(m.head_width()) * m.kv();
    attn = 6 * (h * (q + 2 * kv) + q * h);
    core = 6 * q / 2 * 2;  // causal: half the square, QKᵀ and AV
  }
  const double logits = 6 * h * V;
  // Sliding-window layers (Megatron-Bridge's transformer_flops with window_size): their core is
  // 3·2·2·q·ctx per token, ctx the window's mean keys per query (MHA/GQA only).
  double windowed = 0;
  for (int l = 0; l < m.num_layers && !m.mla.enabled(); ++l) windowed += m.IsWindowedLayer(l);
  const double full = m.num_layers - windowed;
  const double window_core =
      m.mla.enabled() ? 0
                      : 12 * double(m.head_width()) * n * CausalKeysPerQuery(m.seq_len, m.window);
  return tokens * (mlp + m.num_layers * attn + logits + windowed * window_core) +
         double(global_batch) * s * s * full * core;
}

double HardwareFlopsPerIteration(const ModelSpec& m, int64_t global_batch, Recompute r,
                                 uint32_t modules, double full_fraction) {
  // What recomputation re-executes, in the same (full-square) convention as the model FLOPs:
  // full: one more forward of every layer; selective: the forward matrix products of the
  // recomputed modules (the attention core, flash or materialised; a dense layer's MLP; a MoE
  // layer's router and experts; its shared experts; MLA's up projections). The activation,
  // the norms and RoPE are not matrix products. A flash kernel's backward recomputes QKᵀ on
  // chip (Dao et al. 2022).
  const double s = m.seq_len;
  double extra = 0;
  if (r == Recompute::kFull) extra = full_fraction * LayersForwardFlops(m);
  const uint32_t mods = r == Recompute::kSelective ? modules : 0;
  const double h = m.hidden;
  // Per attention layer: the core (the band for a windowed layer) and its QKᵀ share.
  double core = 0, qk = 0;
  const double q = double(AttentionDimsOf(m).q_width());
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind k = LayerKindAt(m, l);
    const bool moe = k.moe && m.moe.enabled();
    const bool has_mlp = k.block == LayerBlock::kTransformer || k.block == LayerBlock::kMlp ||
                         k.block == LayerBlock::kMoe;
    if (has_mlp && !moe && (mods & kRecomputeMlp)) extra += s * MlpFlops(m, false);
    if (has_mlp && moe && (mods & kRecomputeMoe)) extra += s * MlpFlops(m, true);
    if (has_mlp && moe && !(mods & kRecomputeMoe) && (mods & kRecomputeSharedExperts)) {
      extra += s * 2 * h * double(m.moe.shared_ffn(m.ffn())) * MlpMatrices(m);
    }
    if (!k.has_attention()) continue;
    if (m.mla.enabled() && (mods & kRecomputeMlaUpProj)) {
      const MlaSpec& a = m.mla;
      const double n = m.heads, dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      extra += s * 2 *
               ((a.q_lora_rank > 0 ? a.q_lora_rank * n * dqk : 0) +
                a.kv_lora_rank * n * (a.qk_nope_head_dim + a.v_head_dim));
    }
    core += CoreFlops(m, k.windowed);
    qk += 2 * s * (k.windowed ? CausalKeysPerQuery(m.seq_len, m.window) : s) * q;
  }
  if (mods & kRecomputeCoreAttn) extra += core;
  if (m.flash_attention) extra += qk;
  return ModelFlopsPerIteration(m, global_batch) + double(global_batch) * extra;
}

}  // namespace trainsim::parallelism
