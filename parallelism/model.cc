#include "parallelism/model.h"

#include <string>

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
  if (m.hidden % m.heads != 0) {
    return Status::InvalidArgument("model.heads (" + std::to_string(m.heads) +
                                   ") must divide model.hidden (" + std::to_string(m.hidden) + ")");
  }
  if (m.bytes_per_element != 1 && m.bytes_per_element != 2 && m.bytes_per_element != 4) {
    return Status::InvalidArgument("model.bytes_per_element must be 1, 2 or 4");
  }
  return Status::Ok();
}

std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch,
                               bool /*moe_layer*/) {
  const int t = split.tp;
  const int e = m.bytes_per_element;
  const int64_t b = micro_batch, s = m.seq_len, h = m.hidden, a = m.heads, f = m.ffn();
  const int64_t tokens = b * s;
  // Element-wise work outside the attention/MLP blocks (layer norm, dropout, residual) is
  // replicated across the TP group unless sequence parallelism splits it (Korthikanti §4.2.2).
  const double hidden_elems = double(tokens) * h / (split.sequence_parallel ? t : 1);
  const double score_elems = double(b) * (a / t) * s * s;
  const double dropout_mask = m.dropout ? 1.0 : 0.0;  // one byte per element of mask
  std::vector<KernelOp> ops;

  // Layer norm: forward reads x and writes y; backward reads x and dy, writes dx (the statistics
  // and the gamma/beta gradients are small), as two kernels.
  ops.push_back(Elementwise("layernorm_1", hidden_elems, 2.0 * e, 3.0 * e, 8, 2));
  ops.push_back(Gemm("qkv", OpKind::kGemm, 1, tokens, (h + 2 * m.kv_width()) / t, h, e));
  if (m.flash_attention) {
    // One fused kernel: QK^T and AV on chip; HBM traffic is Q, K, V in and O out forward, and
    // Q, K, V, O, dO in and dQ, dK, dV out backward (Dao et al. 2022). Backward recomputes the
    // scores on chip (one more s×s product), counted as hardware, not model, FLOPs.
    KernelOp fa;
    fa.name = "flash_attention";
    fa.kind = OpKind::kFlashAttention;
    fa.batch = b * (a / t);
    fa.m = s;
    fa.n = s;
    fa.k = h / a;
    fa.fwd_matmul_flops = 4.0 * b * s * s * h / t;
    fa.bwd_matmul_flops = 2 * fa.fwd_matmul_flops;
    fa.bwd_other_flops = 0.5 * fa.fwd_matmul_flops;
    fa.fwd_other_flops = 5.0 * score_elems;  // exp, max, sum, scale per score (on chip)
    fa.fwd_bytes = 4.0 * tokens * h / t * e;
    fa.bwd_bytes = 8.0 * tokens * h / t * e;
    fa.fwd_kernels = 1;
    fa.bwd_kernels = 2;
    ops.push_back(fa);
  } else {
    KernelOp scores = Gemm("attn_scores", OpKind::kBatchedGemm, b * (a / t), s, s, h / a, e);
    scores.selective_recompute = true;
    ops.push_back(scores);
    // Megatron's fused scale-mask-softmax: reads and writes the scores once each way.
    KernelOp softmax = Elementwise("softmax", score_elems, 2.0 * e, 3.0 * e, 5);
    softmax.selective_recompute = true;
    ops.push_back(softmax);
    if (m.dropout) {
      KernelOp drop = Elementwise("attn_dropout", score_elems, 2.0 * e + 1, 2.0 * e + 1, 2);
      drop.selective_recompute = true;
      ops.push_back(drop);
    }
    KernelOp context = Gemm("attn_context", OpKind::kBatchedGemm, b * (a / t), s, h / a, s, e);
    context.selective_recompute = true;
    ops.push_back(context);
  }
  ops.push_back(Gemm("attn_out", OpKind::kGemm, 1, tokens, h, h / t, e));
  // Fused bias + dropout + residual add: reads the product and the residual, writes the sum
  // (and the mask); backward reads dy (and the mask), writes dx.
  ops.push_back(Elementwise("bias_dropout_add_1", hidden_elems, 3.0 * e + dropout_mask,
                            2.0 * e + dropout_mask, 3));
  ops.push_back(Elementwise("layernorm_2", hidden_elems, 2.0 * e, 3.0 * e, 8, 2));
  if (m.swiglu) {
    ops.push_back(Gemm("mlp_gate_up", OpKind::kGemm, 1, tokens, 2 * f / t, h, e));
    ops.push_back(Elementwise("swiglu", double(tokens) * f / t, 3.0 * e, 5.0 * e, 6));
  } else {
    ops.push_back(Gemm("mlp_up", OpKind::kGemm, 1, tokens, f / t, h, e));
    ops.push_back(Elementwise("bias_gelu", double(tokens) * f / t, 2.0 * e, 3.0 * e, 10));
  }
  ops.push_back(Gemm("mlp_down", OpKind::kGemm, 1, tokens, h, f / t, e));
  ops.push_back(Elementwise("bias_dropout_add_2", hidden_elems, 3.0 * e + dropout_mask,
                            2.0 * e + dropout_mask, 3));
  return ops;
}

std::vector<KernelOp> EmbeddingOps(const ModelSpec& m, TensorSplit split, int micro_batch) {
  const int e = m.bytes_per_element;
  const double elems = double(micro_batch) * m.seq_len * m.hidden;
  const double hidden_elems = elems / (split.sequence_parallel ? split.tp : 1);
  std::vector<KernelOp> ops;
  // Vocab-parallel lookup: gathers rows and writes b·s·h (masked rows are zeros); backward
  // scatters-adds the gradient into the embedding table.
  ops.push_back(Elementwise("embedding_lookup", elems, 2.0 * e, 3.0 * e, 0));
  // Position embedding add + embedding dropout.
  ops.push_back(Elementwise("position_add_dropout", hidden_elems, 3.0 * e + 1, 2.0 * e + 1, 2));
  return ops;
}

std::vector<KernelOp> HeadOps(const ModelSpec& m, TensorSplit split, int micro_batch) {
  const int t = split.tp;
  const int e = m.bytes_per_element;
  const int64_t tokens = int64_t(micro_batch) * m.seq_len;
  const double hidden_elems = double(tokens) * m.hidden / (split.sequence_parallel ? t : 1);
  std::vector<KernelOp> ops;
  ops.push_back(Elementwise("final_layernorm", hidden_elems, 2.0 * e, 3.0 * e, 8, 2));
  // Vocab-parallel output layer (the tied embedding matrix, split by rows across TP).
  ops.push_back(Gemm("logits", OpKind::kGemm, 1, tokens, m.vocab / t, m.hidden, e));
  // Vocab-parallel cross-entropy in fp32 (Megatron casts logits to float): read the logits,
  // write/read fp32 exponentials and write the softmax kept for backward — about 14 bytes per
  // logit forward; backward reads the fp32 softmax and writes the gradient in bf16.
  const double logit_elems = double(tokens) * m.vocab / t;
  ops.push_back(Elementwise("cross_entropy", logit_elems, 14.0, 4.0 + e, 6, 1));
  return ops;
}

std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch,
                                             bool /*moe_layer*/) {
  std::vector<TpCollective> out;
  if (split.tp <= 1) return out;
  const double bytes = double(micro_batch) * m.seq_len * m.hidden * m.bytes_per_element;
  using K = TpCollectiveKind;
  if (split.sequence_parallel) {
    out.push_back({"tp_all_gather_attn", K::kAllGather, bytes, true});
    out.push_back({"tp_reduce_scatter_attn", K::kReduceScatter, bytes, true});
    out.push_back({"tp_all_gather_mlp", K::kAllGather, bytes, true});
    out.push_back({"tp_reduce_scatter_mlp", K::kReduceScatter, bytes, true});
    // Backward: the weight gradients need the full-sequence layer-norm outputs again, which SP
    // did not keep, so Megatron re-all-gathers them (LinearWithGradAccumulationAndAsync-
    // Communication) besides the all-gather/reduce-scatter pair that mirrors the forward.
    out.push_back({"tp_all_gather_mlp_input_bwd", K::kAllGather, bytes, false});
    out.push_back({"tp_all_gather_attn_input_bwd", K::kAllGather, bytes, false});
    out.push_back({"tp_all_gather_mlp_bwd", K::kAllGather, bytes, false});
    out.push_back({"tp_reduce_scatter_mlp_bwd", K::kReduceScatter, bytes, false});
    out.push_back({"tp_all_gather_attn_bwd", K::kAllGather, bytes, false});
    out.push_back({"tp_reduce_scatter_attn_bwd", K::kReduceScatter, bytes, false});
  } else {
    out.push_back({"tp_all_reduce_attn", K::kAllReduce, bytes, true});
    out.push_back({"tp_all_reduce_mlp", K::kAllReduce, bytes, true});
    out.push_back({"tp_all_reduce_mlp_bwd", K::kAllReduce, bytes, false});
    out.push_back({"tp_all_reduce_attn_bwd", K::kAllReduce, bytes, false});
  }
  return out;
}

std::vector<TpCollective> EmbeddingTpCollectives(const ModelSpec& m, TensorSplit split,
                                                 int micro_batch) {
  std::vector<TpCollective> out;
  if (split.tp <= 1) return out;
  const double bytes = double(micro_batch) * m.seq_len * m.hidden * m.bytes_per_element;
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
  const double tokens = double(micro_batch) * m.seq_len;
  if (split.sequence_parallel) {
    const double bytes = tokens * m.hidden * m.bytes_per_element;
    out.push_back({"tp_all_gather_head", TpCollectiveKind::kAllGather, bytes, true});
    out.push_back({"tp_reduce_scatter_head_bwd", TpCollectiveKind::kReduceScatter, bytes, false});
  } else {
    // Backward of the output layer's input (Megatron's f operator).
    out.push_back({"tp_all_reduce_head_bwd", TpCollectiveKind::kAllReduce,
                   tokens * m.hidden * m.bytes_per_element, false});
  }
  // Vocab-parallel cross-entropy: all-reduces of the per-token max, sum of exponentials and
  // target logit, fp32 (Megatron's _VocabParallelCrossEntropy).
  out.push_back({"tp_all_reduce_ce_max", TpCollectiveKind::kAllReduce, tokens * 4, true});
  out.push_back({"tp_all_reduce_ce_target", TpCollectiveKind::kAllReduce, tokens * 4, true});
  out.push_back({"tp_all_reduce_ce_sum", TpCollectiveKind::kAllReduce, tokens * 4, true});
  return out;
}

namespace {
double SumMatmul(const std::vector<KernelOp>& ops, bool fwd, bool bwd, bool selective_only) {
  double total = 0;
  for (const KernelOp& op : ops) {
    if (selective_only && !op.selective_recompute) continue;
    if (fwd) total += op.fwd_matmul_flops;
    if (bwd) total += op.bwd_matmul_flops;
  }
  return total;
}
}  // namespace

double ModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch) {
  // Per GPU of a TP=1 split, one sequence: the sums are exact in double for realistic sizes.
  const TensorSplit one{1, false};
  const double layer = SumMatmul(LayerOps(m, one, 1), true, true, false);
  const double head = SumMatmul(HeadOps(m, one, 1), true, true, false);
  return double(global_batch) * (m.num_layers * layer + head);
}

double MegatronModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch) {
  return ModelFlopsPerIteration(m, global_batch);
}

double HardwareFlopsPerIteration(const ModelSpec& m, int64_t global_batch, Recompute r) {
  const TensorSplit one{1, false};
  const std::vector<KernelOp> layer = LayerOps(m, one, 1);
  double extra = 0;
  if (r == Recompute::kFull) extra = SumMatmul(layer, true, false, false);
  if (r == Recompute::kSelective) extra = SumMatmul(layer, true, false, true);
  double flash_extra = 0;  // flash attention's on-chip recompute of the scores in backward
  for (const KernelOp& op : layer) {
    if (op.kind == OpKind::kFlashAttention) flash_extra += op.bwd_other_flops;
  }
  return ModelFlopsPerIteration(m, global_batch) +
         double(global_batch) * m.num_layers * (extra + flash_extra);
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

}  // namespace trainsim::parallelism
