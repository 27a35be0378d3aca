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
  if (!m.moe.enabled()) return 0;
  return m.num_layers - std::min(m.num_layers, std::max(m.moe.first_dense_layers, 0));
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

// Forward matrix FLOPs of one layer for one sequence (Narayanan's convention).
double LayerForwardFlops(const ModelSpec& m, bool moe_layer) {
  return m.seq_len * (AttentionProjectionFlops(m) + MlpFlops(m, moe_layer)) + AttentionCoreFlops(m);
}

double LayersForwardFlops(const ModelSpec& m) {
  const int moe = MoeLayers(m);
  return (m.num_layers - moe) * LayerForwardFlops(m, false) + moe * LayerForwardFlops(m, true);
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
  return tokens * (mlp + m.num_layers * attn + logits) +
         double(global_batch) * s * s * m.num_layers * core;
}

double HardwareFlopsPerIteration(const ModelSpec& m, int64_t global_batch, Recompute r) {
  // What recomputation re-executes, in the same (full-square) convention as the model FLOPs:
  // full: one more forward of every layer; selective: the materialised attention core
  // (Korthikanti §5; a fused flash kernel keeps no scores to recompute). A flash kernel's
  // backward recomputes QKᵀ on chip (Dao et al. 2022).
  const double s = m.seq_len;
  double extra = 0;
  if (r == Recompute::kFull) extra = LayersForwardFlops(m);
  if (r == Recompute::kSelective && !m.flash_attention) {
    extra = m.num_layers * AttentionCoreFlops(m);
  }
  if (m.flash_attention) {
    extra += m.num_layers * 2 * s * s * double(AttentionDimsOf(m).q_width());
  }
  return ModelFlopsPerIteration(m, global_batch) + double(global_batch) * extra;
}

}  // namespace trainsim::parallelism
