// The operations of a layer, the embedding and the head (parallelism/model.h); the collectives
// are in model_comm.cc and the FLOP counts in model_flops.cc. docs/layer-model.md derives them.
#include "parallelism/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace trainsim::parallelism {
namespace {

// A dense product C[m×n] = A[m×k]·B[k×n] (times `batch`). Forward: 2mnk FLOPs, reads A and B,
// writes C. Backward: dgrad and wgrad, each 2mnk FLOPs and the same three matrices' traffic.
KernelOp Gemm(std::string name, OpKind kind, int64_t batch, int64_t m, int64_t n, int64_t k,
              int elem_bytes) {
  KernelOp op;
  op.name = std::move(name);
  op.kind = kind;
  op.batch = batch;
  op.m = m;
  op.n = n;
  op.k = k;
  const double flops = 2.0 * static_cast<double>(batch) * m * n * k;
  const double bytes =
      static_cast<double>(batch) * elem_bytes * (double(m) * k + double(k) * n + double(m) * n);
  op.fwd_matmul_flops = flops;
  op.bwd_matmul_flops = 2 * flops;
  op.fwd_bytes = bytes;
  op.bwd_bytes = 2 * bytes;
  op.fwd_kernels = 1;
  op.bwd_kernels = 2;
  return op;
}

// A grouped GEMM (Megatron-Core's --moe-grouped-gemm): `experts` products of `rows_total /
// experts` tokens each against their own [k×n] weights, one kernel. Stood for by a kGemm with
// batch = experts; the row count is rounded up for the shape, the FLOPs and bytes are exact.
KernelOp GroupedGemm(std::string name, int64_t experts, double rows_total, int64_t n, int64_t k,
                     int elem_bytes) {
  const auto rows = int64_t(std::ceil(rows_total / double(experts)));
  KernelOp op =
      Gemm(std::move(name), OpKind::kGemm, experts, std::max<int64_t>(rows, 1), n, k, elem_bytes);
  op.fwd_matmul_flops = 2.0 * rows_total * double(n) * double(k);
  op.bwd_matmul_flops = 2 * op.fwd_matmul_flops;
  op.fwd_bytes =
      elem_bytes * (rows_total * double(k) + double(experts) * k * n + rows_total * double(n));
  op.bwd_bytes = 2 * op.fwd_bytes;
  // Transformer Engine's GroupedLinear (Megatron-Core's TEGroupedMLP, --moe-grouped-gemm) runs
  // one cuBLAS GEMM per expert, round-robin over nvte_get_num_compute_streams() = 4 streams
  // (transformer_engine/common/util/multi_stream.cpp, gemm/cublaslt_gemm.cu
  // nvte_multi_stream_cublas_gemm): a kernel per expert, forward, dgrad and wgrad.
  constexpr int kTeComputeStreams = 4;
  op.streams = kTeComputeStreams;
  op.fwd_kernels = int(experts);
  op.bwd_kernels = int(2 * experts);
  return op;
}

// An element-wise kernel over `elements`, moving the given bytes per element forward and
// backward and doing `flops_per_elem` arithmetic (counted only as "other" FLOPs).
KernelOp Elementwise(std::string name, double elements, double fwd_bytes_per_elem,
                     double bwd_bytes_per_elem, double flops_per_elem, int bwd_kernels = 1) {
  KernelOp op;
  op.name = std::move(name);
  op.kind = OpKind::kMemoryBound;
  op.fwd_bytes = elements * fwd_bytes_per_elem;
  op.bwd_bytes = elements * bwd_bytes_per_elem;
  op.fwd_other_flops = elements * flops_per_elem;
  op.bwd_other_flops = 2 * elements * flops_per_elem;
  op.fwd_kernels = 1;
  op.bwd_kernels = bwd_kernels;
  return op;
}

// Layer norm / RMSNorm: forward reads x and writes y; backward reads x and dy, writes dx (the
// statistics and the scale/shift gradients are small), as two kernels. LayerNorm does about 8
// FLOPs per element (mean, variance, normalise, scale, shift); RMSNorm drops the mean and the
// shift, about 4 (Zhang & Sennrich 2019). Same traffic: memory-bound either way.
//
// Eager PyTorch (ModelSpec::eager_kernels): LayerNorm is still one kernel (ATen's layer_norm is
// fused in eager mode too), but an RMSNorm written in torch ops, as torchtitan's (models/
// norms.py, 2024: `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)` on x.float(), then
// .type_as(x) * weight; torch.nn.RMSNorm decomposes the same way in eager mode), is one kernel
// per op, with e the activation bytes and fp32 in between, per element of x:
//   forward:  x.float() e+4, pow 8, mean 4, · rsqrt 8, type_as 4+e, · weight 2e (plus the per-
//             row add and rsqrt): 28 + 4e bytes, 8 kernels;
//   backward: · weight's grads (g·w 2e, g·out 3e, its row sum e), type_as's cast e+4, · rsqrt's
//             grads (g·r 8, g·x 12, row sum 4, and rsqrt's own per-row backward), mean's expand
//             4, pow's backward g · (2 · x.pow(1)) as ATen runs it (x.pow(1) is a copy, 8; the
//             scalar product 8; the product with g 12), summing the two paths into x 12,
//             x.float()'s cast 4+e: 76 + 8e bytes, 16 kernels.
// (e = 2: 36 and 92 bytes, against the fused kernel's 4 and 6.)
KernelOp Norm(const ModelSpec& m, const std::string& suffix, double elements) {
  const int e = m.bytes_per_element;
  const std::string name = (m.rmsnorm ? "rmsnorm" : "layernorm") + suffix;
  if (m.eager_kernels && m.eager_norm && m.rmsnorm) {
    KernelOp op = Elementwise(name, elements, 28.0 + 4.0 * e, 76.0 + 8.0 * e, 4, 16);
    op.fwd_kernels = 8;
    return op;
  }
  return Elementwise(name, elements, 2.0 * e, 3.0 * e, m.rmsnorm ? 4 : 8, 2);
}

// Fused (bias +) dropout + residual add: reads the product and the residual, writes the sum
// (and a one-byte mask); backward reads dy (and the mask), writes dx. The bias vector itself is
// h elements, negligible traffic: without biases the kernel moves the same activations and
// does one FLOP per element less.
KernelOp ResidualAdd(const ModelSpec& m, const std::string& suffix, double elements) {
  const int e = m.bytes_per_element;
  const double mask = m.dropout ? 1.0 : 0.0;
  const std::string name = std::string(m.linear_bias ? "bias_" : "") +
                           (m.dropout ? "dropout_add" : "residual_add") + suffix;
  return Elementwise(name, elements, 3.0 * e + mask, 2.0 * e + mask,
                     1.0 + (m.linear_bias ? 1 : 0) + (m.dropout ? 1 : 0));
}

// What one GPU holds of the layer for one micro-batch.
struct Local {
  const ModelSpec& m;
  TensorSplit split;
  int64_t b = 0;
  int e = 2;
  int64_t tokens = 0;       // b·s/cp: the rank's share of the sequence
  double hidden_elems = 0;  // tokens·h, split over TP when sequence-parallel
  Local(const ModelSpec& spec, TensorSplit sp, int micro_batch)
      : m(spec), split(sp), b(micro_batch), e(spec.bytes_per_element) {
    tokens = b * (m.seq_len / std::max(split.cp, 1));
    hidden_elems = double(tokens) * m.hidden / (split.sequence_parallel ? split.tp : 1);
  }
};

bool Ulysses(TensorSplit split) { return split.cp > 1 && split.cp_comm == CpComm::kAllToAll; }

// The attention core with a fused kernel (Dao et al. 2022; Transformer Engine's
// DotProductAttention under Megatron-Core). HBM traffic: Q, K, V in and O out forward; Q, K, V,
// O, dO in and dQ, dK, dV out backward. Backward recomputes the QKᵀ scores on chip, counted as
// hardware, not model, FLOPs. Causal: the kernel skips the blocks above the diagonal, so it
// executes about half the square: (n+1)/(2n) of it for n query tiles (128-row tiles, s = 8192:
// 0.508); we take 1/2. Under CP each rank holds chunks i and 2cp−1−i of 2cp (Megatron-Core's
// load balancing), whose causal area is (i + ½ + 2cp−1−i + ½)·(s/2cp)² = s²/(2cp): 1/cp of the
// causal square, half of the rank's s/cp × s rectangle. Ulysses runs the whole sequence for
// heads/(tp·cp) heads: again half of s × s per head.
//
// Sliding window (`windowed`, ModelSpec::window = w): each query meets at most W = w + 1 keys, so
// the kernel's work is the band, CausalKeysPerQuery(s, w) keys per query on average (FA2/TE skip
// the tiles outside the band); the key extent is W, which `n` carries for the efficiency curve.
// Under CP a rank's queries each still see about W keys.
KernelOp FlashAttention(const Local& c, const AttentionDims& d, bool windowed) {
  const bool a2a = Ulysses(c.split);
  const double heads_div = double(c.split.tp) * (a2a ? c.split.cp : 1);
  const int64_t s = c.m.seq_len;
  const int64_t s_q = a2a ? s : s / c.split.cp;  // this rank's queries per sequence
  const double heads = double(d.heads) / heads_div;
  const bool band = windowed && int64_t(c.m.window) + 1 < s;
  // Executed score elements per head: half the causal rectangle, or the band.
  const double area =
      band ? double(s_q) * CausalKeysPerQuery(s, c.m.window) : double(s_q) * double(s) * 0.5;
  KernelOp fa;
  fa.name = "flash_attention";
  fa.kind = OpKind::kFlashAttention;
  fa.causal = true;
  fa.batch = int64_t(double(c.b) * heads);
  fa.m = s_q;
  fa.n = band ? int64_t(c.m.window) + 1 : s;
  fa.k = d.qk_head_dim;
  fa.fwd_matmul_flops = 2.0 * c.b * heads * area * double(d.qk_head_dim + d.v_head_dim);
  fa.bwd_matmul_flops = 2 * fa.fwd_matmul_flops;
  fa.bwd_other_flops = 2.0 * c.b * heads * area * double(d.qk_head_dim);  // QKᵀ again
  fa.fwd_other_flops = 5.0 * c.b * heads * area;  // exp, max, sum, scale per score (on chip)
  const double q_tokens = double(c.b) * s_q, kv_tokens = double(c.b) * s;
  const double qo = double(d.q_width() + d.out_width()) / heads_div;
  const double kv = double(d.k_width() + d.v_width()) / heads_div;
  fa.fwd_bytes = (q_tokens * qo + kv_tokens * kv) * c.e;
  fa.bwd_bytes = 2 * fa.fwd_bytes;
  // Transformer Engine's P2P ring launches the kernel once per step (cp steps), the all-gather
  // variant once per local chunk (2).
  const int launches =
      c.split.cp > 1 && !a2a ? (c.split.cp_comm == CpComm::kP2P ? c.split.cp : 2) : 1;
  fa.fwd_kernels = launches;
  fa.bwd_kernels = 2 * launches;
  // Megatron-Core checkpoints the fused kernel itself under core_attn (SelfAttention's
  // _checkpointed_attention_forward): its forward runs again before its backward.
  fa.recomputed_by = kRecomputeCoreAttn;
  return fa;
}

// The 2021 Megatron attention core: the scores are materialised in HBM (QKᵀ as a batched GEMM
// over the full square, Megatron's fused scale-mask-softmax, dropout, then AV). With CP a
// rank's queries meet the whole sequence's keys.
void AppendMaterialisedAttention(const Local& c, const AttentionDims& d,
                                 std::vector<KernelOp>* ops) {
  const bool a2a = Ulysses(c.split);
  const int64_t heads = d.heads / (int64_t(c.split.tp) * (a2a ? c.split.cp : 1));
  const int64_t s = c.m.seq_len, s_q = a2a ? s : s / c.split.cp;
  const int e = c.e;
  const double score_elems = double(c.b) * heads * s_q * s;
  KernelOp scores =
      Gemm("attn_scores", OpKind::kBatchedGemm, c.b * heads, s_q, s, d.qk_head_dim, e);
  scores.recomputed_by = kRecomputeCoreAttn;
  ops->push_back(scores);
  // Megatron's fused scale-mask-softmax: reads and writes the scores once each way.
  KernelOp softmax = Elementwise("softmax", score_elems, 2.0 * e, 3.0 * e, 5);
  softmax.recomputed_by = kRecomputeCoreAttn;
  ops->push_back(softmax);
  if (c.m.dropout) {
    KernelOp drop = Elementwise("attn_dropout", score_elems, 2.0 * e + 1, 2.0 * e + 1, 2);
    drop.recomputed_by = kRecomputeCoreAttn;
    ops->push_back(drop);
  }
  KernelOp context =
      Gemm("attn_context", OpKind::kBatchedGemm, c.b * heads, s_q, d.v_head_dim, s, e);
  context.recomputed_by = kRecomputeCoreAttn;
  ops->push_back(context);
}

// Multi-head latent attention's projections as Megatron-Core splits them (MLASelfAttention):
// the q and kv down projections are replicated (TELinear, parallel_mode "duplicated") and run
// on the sequence-parallel shard (every token on every TP rank without SP); their RMSNorms
// likewise; the up projections are column-parallel over the heads.
void AppendMlaProjections(const Local& c, std::vector<KernelOp>* ops) {
  const ModelSpec& m = c.m;
  const MlaSpec& a = m.mla;
  const int t = c.split.tp, e = c.e;
  const int64_t h = m.hidden, n = m.heads, dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const int64_t down_tokens = c.tokens / (c.split.sequence_parallel ? t : 1);
  if (a.q_lora_rank > 0) {
    ops->push_back(Gemm("q_down", OpKind::kGemm, 1, down_tokens, a.q_lora_rank, h, e));
    ops->push_back(Norm(m, "_q", double(down_tokens) * a.q_lora_rank));
    ops->push_back(Gemm("q_up", OpKind::kGemm, 1, c.tokens, n * dqk / t, a.q_lora_rank, e));
    ops->back().recomputed_by = kRecomputeMlaUpProj;
  } else {
    ops->push_back(Gemm("q_proj", OpKind::kGemm, 1, c.tokens, n * dqk / t, h, e));
  }
  ops->push_back(Gemm("kv_down", OpKind::kGemm, 1, down_tokens,
                      int64_t(a.kv_lora_rank) + a.qk_rope_head_dim, h, e));
  ops->push_back(Norm(m, "_kv", double(down_tokens) * a.kv_lora_rank));
  ops->push_back(Gemm("kv_up", OpKind::kGemm, 1, c.tokens,
                      n * (int64_t(a.qk_nope_head_dim) + a.v_head_dim) / t, a.kv_lora_rank, e));
  ops->back().recomputed_by = kRecomputeMlaUpProj;
}

// Norm, Q/K/V projections, rotary embedding, attention core, output projection, residual.
void AppendAttention(const Local& c, bool windowed, std::vector<KernelOp>* ops) {
  const ModelSpec& m = c.m;
  const int t = c.split.tp, e = c.e;
  const AttentionDims d = AttentionDimsOf(m);
  ops->push_back(Norm(m, "_1", c.hidden_elems));
  if (m.mla.enabled()) {
    AppendMlaProjections(c, ops);
  } else {
    ops->push_back(
        Gemm("qkv", OpKind::kGemm, 1, c.tokens, (d.q_width() + 2 * d.k_width()) / t, m.hidden, e));
  }
  if (!m.learned_position_embedding) {
    // Rotary embedding (Su et al. 2021) on Q and K, Megatron-Core's fused RoPE kernel: reads and
    // writes the rotated parts (all of Q and K; MLA: the rope dims of each Q head and the one
    // shared rope key) and does a multiply-add pair per element.
    //
    // Eager (torchtitan's apply_rotary_emb): each of Q and K is cast to fp32 (e+4 bytes per
    // element), multiplied as complex pairs by the frequencies (8) and cast back (4+e): 16 + 2e
    // bytes and 3 kernels per tensor each way (the backward runs the same three in reverse).
    const double rotated = m.mla.enabled() ? double(d.heads / t + 1) * m.mla.qk_rope_head_dim
                                           : double(d.q_width() + d.k_width()) / t;
    if (m.eager_kernels && !m.mla.enabled()) {
      KernelOp rope =
          Elementwise("rope", double(c.tokens) * rotated, 16.0 + 2.0 * e, 16.0 + 2.0 * e, 3, 6);
      rope.fwd_kernels = 6;
      ops->push_back(rope);
    } else {
      ops->push_back(Elementwise("rope", double(c.tokens) * rotated, 2.0 * e, 2.0 * e, 3));
    }
    if (m.mla.enabled()) ops->back().recomputed_by = kRecomputeMlaUpProj;
  }
  // Eager grouped-query attention (torchtitan's repeat_kv: unsqueeze, expand, reshape) copies
  // K and V out to one head per query head before SDPA: per element written, a read of e/n_rep
  // and a write of e; the backward sums the n_rep copies back (reads e, writes e/n_rep). One
  // kernel each for K and V, each way. Fused kernels (TE, FA2/FA3, cuDNN) read the K/V heads
  // as they are.
  if (m.eager_kernels && !m.mla.enabled() && d.kv_heads < d.heads) {
    const double n_rep = double(d.heads) / double(d.kv_heads);
    const double expanded = double(c.tokens) * double(d.q_width() + d.out_width()) / t;
    KernelOp rep = Elementwise("repeat_kv", expanded, e / n_rep + e, e + e / n_rep, 0, 2);
    rep.fwd_kernels = 2;
    ops->push_back(rep);
  }
  if (m.flash_attention) {
    ops->push_back(FlashAttention(c, d, windowed));
  } else {
    // The unfused path applies a window as a mask over the whole materialised square: same work.
    AppendMaterialisedAttention(c, d, ops);
  }
  ops->push_back(Gemm("attn_out", OpKind::kGemm, 1, c.tokens, m.hidden, d.out_width() / t, e));
  ops->push_back(ResidualAdd(m, "_1", c.hidden_elems));
}

// A dense MLP on `tokens` tokens, `width` wide on this GPU (GELU or SwiGLU); its ops are
// re-run by the recompute modules `recomputed_by`.
void AppendDenseMlp(const Local& c, const std::string& prefix, int64_t tokens, int64_t width,
                    uint32_t recomputed_by, std::vector<KernelOp>* ops) {
  const size_t first = ops->size();
  const ModelSpec& m = c.m;
  const int e = c.e;
  if (m.swiglu) {
    ops->push_back(Gemm(prefix + "_gate_up", OpKind::kGemm, 1, tokens, 2 * width, m.hidden, e));
    // Eager (torchtitan's `F.silu(w1(x)) * w3(x)`): silu (2e) then the product (3e) forward, 2
    // kernels; backward the product's two gradients (3e each) and silu's (3e), 3 kernels. Only
    // the dense MLP: an MoE layer keeps its fused costs, shared experts included (as its
    // activation memory does, memory_activations.cc).
    if (m.eager_kernels && prefix == "mlp") {
      KernelOp act = Elementwise("swiglu", double(tokens) * width, 5.0 * e, 9.0 * e, 6, 3);
      act.fwd_kernels = 2;
      ops->push_back(act);
    } else {
      ops->push_back(Elementwise(prefix == "mlp" ? "swiglu" : prefix + "_swiglu",
                                 double(tokens) * width, 3.0 * e, 5.0 * e, 6));
    }
  } else {
    ops->push_back(Gemm(prefix + "_up", OpKind::kGemm, 1, tokens, width, m.hidden, e));
    const std::string act = m.linear_bias ? "bias_gelu" : "gelu";
    ops->push_back(Elementwise(prefix == "mlp" ? act : prefix + "_" + act, double(tokens) * width,
                               2.0 * e, 3.0 * e, m.linear_bias ? 10 : 9));
  }
  ops->push_back(Gemm(prefix + "_down", OpKind::kGemm, 1, tokens, m.hidden, width, e));
  for (size_t i = first; i < ops->size(); ++i) (*ops)[i].recomputed_by |= recomputed_by;
}

// Router, token permutation, the grouped GEMMs of this GPU's experts at the busiest expert's
// pace, unpermutation, and the shared experts (dense, TP-split, on all local tokens).
void AppendMoe(const Local& c, std::vector<KernelOp>* ops) {
  const ModelSpec& m = c.m;
  const MoeSpec& moe = m.moe;
  const int e = c.e;
  const int64_t h = m.hidden;
  const MoeTokens tok = MoeTokensPerGpu(m, c.split, int(c.b));
  const size_t first = ops->size();
  const auto dispatched = int64_t(std::ceil(tok.dispatched));
  // Router: replicated h × experts GEMM on the tokens entering the dispatcher, then softmax and
  // top-k over the expert logits (reads the logits, writes the probabilities).
  ops->push_back(Gemm("router", OpKind::kGemm, 1, dispatched, moe.experts, h, e));
  ops->push_back(Elementwise("router_topk", double(dispatched) * moe.experts, 2.0 * e, 3.0 * e, 5));
  // The dispatcher's metadata before any token moves (forward only): tiny kernels over the
  // routing map and the device-to-host copies of the split sizes the host then waits for
  // (MoeDispatchKernels). Bytes: the boolean routing map read once.
  KernelOp meta = Elementwise("moe_dispatch_metadata", double(dispatched) * moe.experts, 1.0, 0, 0);
  meta.fwd_kernels = MoeDispatchKernels(c.split);
  meta.bwd_kernels = 0;
  meta.bwd_other_flops = 0;
  ops->push_back(meta);
  // Permute: gathers each token once per chosen expert into expert order, reading and writing
  // the routed copies; backward scatters the gradients back the same way.
  const double routed_elems = tok.routed * double(h);
  ops->push_back(Elementwise("moe_permute", routed_elems, 2.0 * e, 2.0 * e, 0));
  // HybridEP across nodes first copies a dispatch's input tokens into its RDMA buffer (DeepEP
  // hybrid-ep, dispatch_preprocess): the forward's dispatch and the combine's backward.
  if (c.split.dispatcher == MoeDispatcher::kFlex && c.split.ep_nodes > 1) {
    ops->push_back(Elementwise("moe_flex_stage_input", tok.dispatched * h, 2.0 * e, 2.0 * e, 0));
  }
  const int64_t local_experts = moe.experts / std::max(c.split.ep, 1);
  const int64_t width = moe.expert_ffn(m.ffn()) / std::max(c.split.etp, 1);
  const double rows = tok.expert_busiest;
  // The all-to-all dispatcher receives its tokens grouped by source rank; with more than one
  // local expert it re-sorts them by expert before the GEMMs and back after
  // (MoEAlltoAllTokenDispatcher: sort_chunks_by_idxs when num_local_experts > 1), one more read
  // and write of the received copies each way. FLEX (DeepEP/HybridEP) permutes the received
  // tokens instead of the sent ones (the moe_permute above) and the all-gather dispatcher
  // permutes the gathered tokens: neither adds a pass.
  const bool sort_chunks =
      c.split.ep > 1 && local_experts > 1 && c.split.dispatcher == MoeDispatcher::kAllToAll;
  if (sort_chunks) {
    ops->push_back(Elementwise("moe_sort_chunks", tok.routed * double(h), 2.0 * e, 2.0 * e, 0));
  }
  // FP8 without router padding: TEGroupedMLP pads every expert's rows to the FP8 alignment
  // with a copy before fc1 (hidden states and probabilities) and unpads fc2's output after
  // (megatron/core/transformer/moe/experts.py: quantization_padding unless
  // skip_routed_expert_padding; TE's fused_multi_row_padding / unpadding). Force-balanced or
  // not, the counts are not multiples of the alignment, so the copies run: a read and a write
  // of the rows before and after, each way.
  const bool fp8_padding =
      moe.fp8 && !moe.router_padding && c.split.dispatcher != MoeDispatcher::kFlex;
  if (fp8_padding) {
    KernelOp pad = Elementwise("expert_fp8_padding", 2 * rows * double(h), 2.0 * e, 2.0 * e, 0);
    pad.fwd_kernels = 3;  // pad the rows, pad the probabilities, unpad the output
    pad.bwd_kernels = 3;
    ops->push_back(pad);
  }
  if (m.swiglu) {
    ops->push_back(GroupedGemm("expert_gate_up", local_experts, rows, 2 * width, h, e));
    ops->push_back(Elementwise("expert_swiglu", rows * double(width), 3.0 * e, 5.0 * e, 6));
    ops->back().recomputed_by = kRecomputeMoeAct;
  } else {
    ops->push_back(GroupedGemm("expert_up", local_experts, rows, width, h, e));
    ops->push_back(Elementwise("expert_gelu", rows * double(width), 2.0 * e, 3.0 * e, 10));
    ops->back().recomputed_by = kRecomputeMoeAct;
  }
  ops->push_back(GroupedGemm("expert_down", local_experts, rows, h, width, e));
  // Unpermute: reads the expert outputs and the probabilities, writes the weighted sum per
  // token (one multiply-add per element).
  if (sort_chunks) {
    ops->push_back(Elementwise("moe_unsort_chunks", tok.routed * double(h), 2.0 * e, 2.0 * e, 0));
  }
  ops->push_back(Elementwise("moe_unpermute", routed_elems, 2.0 * e, 2.0 * e, 2));
  const int64_t shared = moe.shared_ffn(m.ffn());
  if (shared > 0) {
    AppendDenseMlp(c, "shared", c.tokens, shared / c.split.tp, kRecomputeSharedExperts, ops);
  }
  // The whole MoE layer is one checkpoint under "moe" (MoELayer.forward: router, dispatch,
  // experts, combine and the shared experts).
  for (size_t i = first; i < ops->size(); ++i) (*ops)[i].recomputed_by |= kRecomputeMoe;
}

// A Mamba-2 mixer layer as Megatron-Core runs it (megatron/core/ssm/mamba_layer.py MambaLayer,
// mamba_mixer.py MambaMixer, the kernels of mamba_ssm 2.x), per GPU: heads, groups and d_inner
// split over TP (in_proj column-parallel, out_proj row-parallel).
//  - norm and in_proj: T × (2·d_inner + 2·G·N + H)/t × h (z, x, B, C, dt);
//  - conv1d: causal depthwise convolution of width k over conv_dim/t channels with SiLU
//    (causal_conv1d_fn): reads and writes each element, 2k + 4 FLOPs (the taps, bias, SiLU);
//  - ssd_scan: mamba_chunk_scan_combined, the chunked SSD algorithm (Dao & Gu 2024 §6): per chunk
//    of Q tokens the intra-chunk scores C·Bᵀ (2·Q·N per token per group), their product with x
//    (2·Q·P per token per head), the chunk states Bᵀ·x and their output C·state (2·N·P each per
//    token per head); the inter-chunk state passing (2·H·P·N per chunk) is negligible. Matrix
//    products over Q-sized blocks: a batched GEMM of (b·H/t·chunks) × Q × P × Q carries the
//    shape. HBM: x, B, C, dt in and y out, plus the fp32 chunk states written and read
//    (H·P·N·4 bytes per chunk each way); five kernels forward (chunk_cumsum, chunk_state,
//    state_passing, bmm_chunk, chunk_scan) and, backward, their gradients (ten, with the chunk
//    states recomputed);
//  - gated RMSNorm (RMSNormGated, norm_before_gate False): y·SiLU(z), then RMSNorm per group:
//    reads y and z, writes the result;
//  - out_proj: T × h × d_inner/t; the residual add.
void AppendMamba(const Local& c, std::vector<KernelOp>* ops) {
  const ModelSpec& m = c.m;
  const MambaSpec& a = m.mamba;
  const int t = c.split.tp, e = c.e;
  const int64_t h = m.hidden;
  const double tok = double(c.tokens);
  ops->push_back(Norm(m, "_1", c.hidden_elems));
  ops->push_back(Gemm("mamba_in_proj", OpKind::kGemm, 1, c.tokens, a.in_proj_width() / t, h, e));
  const double conv_elems = tok * double(a.conv_dim()) / t;
  ops->push_back(
      Elementwise("mamba_conv1d", conv_elems, 2.0 * e, 3.0 * e, 2.0 * a.conv_kernel + 4));
  const double heads = double(a.heads) / t, groups = double(a.groups) / t;
  const double Q = a.chunk_size, N = a.state_dim, P = a.head_dim;
  const int64_t chunks = std::max<int64_t>(1, (m.seq_len / std::max(c.split.cp, 1)) / a.chunk_size);
  KernelOp ssd = Gemm("ssd_scan", OpKind::kBatchedGemm,
                      std::max<int64_t>(1, int64_t(double(c.b) * heads) * chunks), a.chunk_size,
                      a.head_dim, a.chunk_size, e);
  ssd.fwd_matmul_flops = tok * (2 * Q * N * groups + 2 * Q * P * heads + 4 * N * P * heads);
  ssd.bwd_matmul_flops = 2 * ssd.fwd_matmul_flops;
  ssd.fwd_other_flops = tok * heads * P * 4;  // exp of the decay, D skip, dt softplus per channel
  ssd.bwd_other_flops = 2 * ssd.fwd_other_flops;
  const double io = tok * (double(a.d_inner()) / t * 2 + 2 * N * groups + heads) * e;
  const double states = double(c.b) * double(chunks) * heads * P * N * 4.0 * 2;
  ssd.fwd_bytes = io + states;
  ssd.bwd_bytes = 2 * io + 2 * states;
  ssd.fwd_kernels = 5;
  ssd.bwd_kernels = 10;
  ops->push_back(ssd);
  const double inner = tok * double(a.d_inner()) / t;
  ops->push_back(Elementwise("mamba_gated_norm", inner, 3.0 * e, 5.0 * e, 8));
  ops->push_back(Gemm("mamba_out_proj", OpKind::kGemm, 1, c.tokens, h, a.d_inner() / t, e));
  ops->push_back(ResidualAdd(m, "_1", c.hidden_elems));
}

}  // namespace

Status ValidateModel(const ModelSpec& m) {
  if (m.num_layers <= 0) return Status::InvalidArgument("model.num_layers must be positive");
  if (m.hidden <= 0) return Status::InvalidArgument("model.hidden must be positive");
  if (m.heads <= 0) return Status::InvalidArgument("model.heads must be positive");
  if (m.seq_len <= 0) return Status::InvalidArgument("model.seq_len must be positive");
  if (m.vocab <= 0) return Status::InvalidArgument("model.vocab must be positive");
  if (m.ffn_hidden < 0) return Status::InvalidArgument("model.ffn_hidden must be >= 0");
  if (m.kv_heads < 0 || (m.kv_heads > 0 && m.heads % m.kv_heads != 0)) {
    return Status::InvalidArgument("model.kv_heads must divide model.heads");
  }
  if (m.head_dim < 0) return Status::InvalidArgument("model.head_dim must be >= 0");
  // With an explicit head_dim (Megatron's kv_channels) the heads need not divide the hidden size.
  if (m.head_dim == 0 && m.hidden % m.heads != 0) {
    return Status::InvalidArgument("model.heads (" + std::to_string(m.heads) +
                                   ") must divide model.hidden (" + std::to_string(m.hidden) + ")");
  }
  if (m.bytes_per_element != 1 && m.bytes_per_element != 2 && m.bytes_per_element != 4) {
    return Status::InvalidArgument("model.bytes_per_element must be 1, 2 or 4");
  }
  if (m.moe.enabled()) {
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts) {
      return Status::InvalidArgument("model.moe.top_k must be in [1, experts]");
    }
    if (m.moe.expert_ffn_hidden < 0 || m.moe.shared_experts < 0 ||
        m.moe.shared_expert_ffn_hidden < 0 || m.moe.first_dense_layers < 0 ||
        m.moe.capacity_factor < 0 || m.moe.load_imbalance <= 0) {
      return Status::InvalidArgument("model.moe sizes must be non-negative");
    }
  }
  if (m.window < 0 || m.window_full_every < 0) {
    return Status::InvalidArgument("model.window and window_full_every must be >= 0");
  }
  if (m.hybrid()) {
    if (int64_t(m.hybrid_pattern.size()) != m.num_layers) {
      return Status::InvalidArgument("model.hybrid_pattern must have one character per layer");
    }
    for (char ch : m.hybrid_pattern) {
      if (ch != 'M' && ch != '*' && ch != '-' && ch != 'E') {
        return Status::InvalidArgument("model.hybrid_pattern may hold only M, *, - and E");
      }
      if (ch == 'M' && !m.mamba.enabled()) {
        return Status::InvalidArgument("model.hybrid_pattern has Mamba layers: set model.mamba");
      }
      if (ch == 'E' && !m.moe.enabled()) {
        return Status::InvalidArgument("model.hybrid_pattern has MoE layers: set model.moe");
      }
    }
  }
  if (m.mamba.enabled() && (m.mamba.head_dim <= 0 || m.mamba.state_dim <= 0 ||
                            m.mamba.groups <= 0 || m.mamba.conv_kernel <= 0 ||
                            m.mamba.chunk_size <= 0 || m.mamba.heads % m.mamba.groups != 0)) {
    return Status::InvalidArgument("model.mamba sizes must be positive, groups dividing heads");
  }
  if (m.mla.enabled() && (m.mla.q_lora_rank < 0 || m.mla.qk_rope_head_dim < 0 ||
                          m.mla.qk_nope_head_dim <= 0 || m.mla.v_head_dim <= 0)) {
    return Status::InvalidArgument("model.mla needs qk_nope_head_dim, v_head_dim > 0");
  }
  return Status::Ok();
}

AttentionDims AttentionDimsOf(const ModelSpec& m) {
  AttentionDims d;
  d.heads = m.heads;
  if (m.mla.enabled()) {
    d.kv_heads = m.heads;
    d.qk_head_dim = int64_t(m.mla.qk_nope_head_dim) + m.mla.qk_rope_head_dim;
    d.v_head_dim = m.mla.v_head_dim;
  } else {
    d.kv_heads = m.kv();
    d.qk_head_dim = d.v_head_dim = m.head_width();
  }
  return d;
}

double FlexDedupFactor(int experts, int top_k, int groups) {
  if (groups <= 1 || experts <= 0 || top_k <= 0) return 1.0;
  const double n = groups, e = experts, per_group = e / n;
  // P(none of the k experts in a given other group) = C(E − E/N, k) / C(E, k).
  double miss = 1;
  for (int i = 0; i < top_k; ++i) miss *= std::max(0.0, (e - per_group - i) / (e - i));
  const double groups_hit = (n - 1) * (1 - miss);
  const double copies = top_k * (n - 1) / n;
  return groups_hit / copies;
}

int MoeDispatchKernels(TensorSplit split) {
  switch (split.dispatcher) {
    case MoeDispatcher::kAllToAll:
      // MoEAlltoAllTokenDispatcher.preprocess (dropless): routing_map.sum(0).long() (2), the
      // input splits' sum (1), the gathered counts' contiguous slice and three sums (4); then
      // _maybe_dtoh_and_synchronize copies tokens_per_expert, input_splits, output_splits and
      // output_splits_tp to the host (4). Without EP or TP: the one count and its copy (3).
      return split.ep > 1 || split.tp > 1 ? 11 : 3;
    case MoeDispatcher::kAllGather:
      // MoEAllGatherTokenDispatcher: local_map.sum(0).long().cpu().
      return 3;
    case MoeDispatcher::kFlex:
      // HybridEP's metadata preprocessing kernel and the copy of tokens_per_expert to pinned
      // host memory that dispatch waits for (non_blocking False without a token budget).
      return 2;
  }
  return 3;
}

MoeTokens MoeTokensPerGpu(const ModelSpec& m, TensorSplit split, int micro_batch) {
  MoeTokens t;
  t.dispatched =
      double(micro_batch) * (m.seq_len / std::max(split.cp, 1)) / (split.tp > 1 ? split.tp : 1);
  t.routed = t.dispatched * m.moe.top_k;
  t.expert_mean = t.routed * std::max(split.etp, 1);
  const double cap =
      m.moe.capacity_factor > 0 ? m.moe.capacity_factor : std::numeric_limits<double>::infinity();
  t.expert_busiest = t.expert_mean * std::min(m.moe.load_imbalance, cap);
  return t;
}

namespace {
// The norm before the MLP. Megatron-Core's Transformer Engine spec fuses it into fc1
// (TELayerNormColumnParallelLinear) in a dense layer; a MoE layer keeps it separate (the router
// and the dispatcher read its output), and that one is what "layernorm" recomputes
// (TransformerLayer.recompute_pre_mlp_layernorm; the fused ones are IdentityOp there).
KernelOp PreMlpNorm(const Local& c, bool moe) {
  KernelOp op = Norm(c.m, "_2", c.hidden_elems);
  if (moe) op.recomputed_by = kRecomputeLayernorm;
  return op;
}
}  // namespace

std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch,
                               bool moe_layer) {
  if (!m.hybrid()) {
    return LayerOps(m, split, micro_batch, LayerKind{LayerBlock::kTransformer, moe_layer, false});
  }
  std::vector<KernelOp> ops;
  for (const LayerKind& k : DistinctLayerKinds(m)) {
    if (k.moe != (moe_layer && m.moe.enabled())) continue;
    std::vector<KernelOp> one = LayerOps(m, split, micro_batch, k);
    ops.insert(ops.end(), one.begin(), one.end());
  }
  return ops;
}

std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch,
                               LayerKind kind) {
  const Local c(m, split, micro_batch);
  std::vector<KernelOp> ops;
  const bool moe = kind.moe && m.moe.enabled();
  switch (kind.block) {
    case LayerBlock::kTransformer:
      AppendAttention(c, kind.windowed, &ops);
      ops.push_back(PreMlpNorm(c, moe));
      if (moe) {
        AppendMoe(c, &ops);
      } else {
        AppendDenseMlp(c, "mlp", c.tokens, m.ffn() / split.tp, kRecomputeMlp, &ops);
      }
      ops.push_back(ResidualAdd(m, "_2", c.hidden_elems));
      break;
    case LayerBlock::kAttention:
      AppendAttention(c, kind.windowed, &ops);
      break;
    case LayerBlock::kMamba:
      AppendMamba(c, &ops);
      break;
    case LayerBlock::kMlp:
    case LayerBlock::kMoe:
      ops.push_back(PreMlpNorm(c, moe));
      if (kind.block == LayerBlock::kMoe && m.moe.enabled()) {
        AppendMoe(c, &ops);
      } else {
        AppendDenseMlp(c, "mlp", c.tokens, m.ffn() / split.tp, kRecomputeMlp, &ops);
      }
      ops.push_back(ResidualAdd(m, "_2", c.hidden_elems));
      break;
  }
  return ops;
}

LayerKind LayerKindAt(const ModelSpec& m, int layer) {
  LayerKind k;
  if (m.hybrid()) {
    const char ch = layer >= 0 && size_t(layer) < m.hybrid_pattern.size()
                        ? m.hybrid_pattern[size_t(layer)]
                        : '-';
    k.block = ch == 'M'   ? LayerBlock::kMamba
              : ch == '*' ? LayerBlock::kAttention
              : ch == 'E' ? LayerBlock::kMoe
                          : LayerBlock::kMlp;
  }
  k.moe = m.IsMoeLayer(layer);
  k.windowed = k.has_attention() && m.IsWindowedLayer(layer);
  return k;
}

std::vector<LayerKind> DistinctLayerKinds(const ModelSpec& m) {
  std::vector<LayerKind> kinds;
  bool seen[kLayerKindCount] = {};
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind k = LayerKindAt(m, l);
    if (!seen[k.index()]) {
      seen[k.index()] = true;
      kinds.push_back(k);
    }
  }
  return kinds;
}

double CausalKeysPerQuery(int64_t seq_len, int window) {
  const double s = double(seq_len);
  const double w = double(window) + 1;  // the query itself and `window` keys before it
  if (window <= 0 || w >= s) return (s + 1) / 2;
  return w - w * (w - 1) / (2 * s);
}

std::vector<KernelOp> EmbeddingOps(const ModelSpec& m, TensorSplit split, int micro_batch) {
  const Local c(m, split, micro_batch);
  const int e = m.bytes_per_element;
  const double mask = m.dropout ? 1.0 : 0.0;
  std::vector<KernelOp> ops;
  // Vocab-parallel lookup: gathers rows and writes b·s·h (masked rows are zeros); backward
  // scatters-adds the gradient into the embedding table.
  ops.push_back(Elementwise("embedding_lookup", double(c.tokens) * m.hidden, 2.0 * e, 3.0 * e, 0));
  if (m.learned_position_embedding) {
    // Position embedding add + embedding dropout.
    ops.push_back(
        Elementwise("position_add_dropout", c.hidden_elems, 3.0 * e + mask, 2.0 * e + mask, 2));
  } else if (m.dropout) {
    // Rotary models add no positions here (RoPE acts on Q and K): embedding dropout only.
    ops.push_back(Elementwise("embedding_dropout", c.hidden_elems, 2.0 * e + 1, 2.0 * e + 1, 1));
  }
  return ops;
}

std::vector<KernelOp> HeadOps(const ModelSpec& m, TensorSplit split, int micro_batch) {
  const Local c(m, split, micro_batch);
  const int t = split.tp;
  const int e = m.bytes_per_element;
  std::vector<KernelOp> ops;
  ops.push_back(Norm(m, "", c.hidden_elems));
  ops.back().name = m.rmsnorm ? "final_rmsnorm" : "final_layernorm";
  // Vocab-parallel output layer (the tied embedding matrix or the untied output weights, split
  // by rows across TP).
  ops.push_back(Gemm("logits", OpKind::kGemm, 1, c.tokens, m.vocab / t, m.hidden, e));
  // Vocab-parallel cross-entropy in fp32 (Megatron casts logits to float): read the logits,
  // write/read fp32 exponentials and write the softmax kept for backward — about 14 bytes per
  // logit forward; backward reads the fp32 softmax and writes the gradient in bf16.
  //
  // Eager (torchtitan's loss: F.cross_entropy(pred.float(), labels)): the logits cast to fp32
  // (e+4 per logit), log_softmax reading them twice (max, then the sum of exponentials and the
  // write: 12) plus writing its fp32 output (4), the NLL gather (negligible): 20 + e bytes, 3
  // kernels; backward zero-fills an fp32 gradient (4) and scatters into it, log_softmax's
  // backward reads it twice (its row sum, then with the output) and writes (16), the cast back
  // (4+e): 24 + e, 4 kernels.
  const double logit_elems = double(c.tokens) * m.vocab / t;
  if (m.eager_kernels) {
    KernelOp ce = Elementwise("cross_entropy", logit_elems, 20.0 + e, 24.0 + e, 6, 4);
    ce.fwd_kernels = 3;
    ops.push_back(ce);
  } else {
    ops.push_back(Elementwise("cross_entropy", logit_elems, 14.0, 4.0 + e, 6, 1));
  }
  return ops;
}

std::string RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

Result<Recompute> ParseRecompute(const std::string& name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  return Status::InvalidArgument("unknown recompute mode '" + name +
                                 "' (expected none, selective or full)");
}

namespace {
// Megatron-Core's names (TransformerConfig.recompute_modules), by bit.
constexpr std::pair<uint32_t, const char*> kRecomputeModuleNames[] = {
    {kRecomputeCoreAttn, "core_attn"},
    {kRecomputeMoeAct, "moe_act"},
    {kRecomputeLayernorm, "layernorm"},
    {kRecomputeMlaUpProj, "mla_up_proj"},
    {kRecomputeMlp, "mlp"},
    {kRecomputeMoe, "moe"},
    {kRecomputeSharedExperts, "shared_experts"},
};
}  // namespace

std::string RecomputeModuleNames(uint32_t modules) {
  std::string out;
  for (const auto& [bit, name] : kRecomputeModuleNames) {
    if (!(modules & bit)) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

std::string RecomputeModuleChoices() {
  std::string out;
  for (const auto& [bit, name] : kRecomputeModuleNames)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

Result<uint32_t> ParseRecomputeModule(const std::string& name) {
  for (const auto& [bit, known] : kRecomputeModuleNames) {
    if (name == known) return bit;
  }
  return Status::InvalidArgument("unknown recompute module '" + name + "' (expected one of " +
                                 RecomputeModuleChoices() + ")");
}

}  // namespace trainsim::parallelism
