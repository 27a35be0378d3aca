// parallelism/model.h — a GPT-style decoder as a list of operations with FLOPs and bytes.
//
// The transformer's shape and, for one micro-batch on one GPU under tensor (and sequence)
// parallelism, the operations of a layer, of the embedding and of the logits/loss: each with
// its matrix-product FLOPs and (batch, m, n, k) shape, other FLOPs and HBM bytes, forward and
// backward. Promises: summed over a step, the matrix FLOPs equal Narayanan et al. (SC'21)
// exactly for the default GPT shape, and ParameterCount equals their P formula (both given in
// docs/parallelism.md); counts are per GPU for one micro-batch; bytes assume each kernel reads
// its inputs and writes its outputs once.
#ifndef TRAINSIM_PARALLELISM_MODEL_H_
#define TRAINSIM_PARALLELISM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::parallelism {

struct ModelSpec {
  int num_layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq_len = 0;
  int vocab = 0;
  int ffn_hidden = 0;            // 0 means 4·hidden (GPT); SwiGLU models give theirs
  int kv_heads = 0;              // grouped-query attention: K/V heads; 0 means heads (MHA)
  bool swiglu = false;           // gated MLP: a fused h×2f gate/up matrix and f×h down
  bool flash_attention = false;  // fused attention kernel (no s×s matrix in HBM)
  bool dropout = true;           // GPT-3/Megatron-style dropout after attention and MLP
  int bytes_per_element = 2;     // bf16/fp16 activations and weights
  // Resolved FFN width.
  int ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  // Width of K (and of V): hidden / heads · kv_heads.
  int64_t kv_width() const { return int64_t(hidden) / heads * kv(); }
};

// Checks the shape itself (positive sizes, heads divide hidden).
Status ValidateModel(const ModelSpec& m);

enum class OpKind {
  kGemm,            // dense matrix product, weights × activations
  kBatchedGemm,     // attention's per-head products (batch = micro-batch × heads per GPU)
  kFlashAttention,  // fused attention: matrix FLOPs plus on-chip softmax, little HBM traffic
  kMemoryBound,     // element-wise / reduction kernels: layer norm, softmax, dropout, GELU, ...
};

// One kernel (or fused kernel) of one micro-batch on one GPU.
struct KernelOp {
  std::string name;
  OpKind kind = OpKind::kMemoryBound;
  // Matrix-product shape (kGemm, kBatchedGemm, kFlashAttention): C[m×n] = A[m×k]·B[k×n], `batch`
  // independent products. Backward runs two products of the same size (dgrad, wgrad).
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double fwd_matmul_flops = 0, bwd_matmul_flops = 0;
  double fwd_other_flops = 0, bwd_other_flops = 0;
  double fwd_bytes = 0, bwd_bytes = 0;
  int fwd_kernels = 1, bwd_kernels = 1;
  // Part of the attention core that selective recomputation re-runs (Korthikanti et al. §5).
  bool selective_recompute = false;
};

// How one layer is split across GPUs.
struct TensorSplit {
  int tp = 1;
  bool sequence_parallel = false;
};

// The operations of one transformer layer for one micro-batch of `micro_batch` sequences on
// one GPU of a TP group. REQUIRES: ValidateModel ok, heads and ffn divisible by tp.
std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch);
// Word + position embedding lookup and embedding dropout (first pipeline stage).
std::vector<KernelOp> EmbeddingOps(const ModelSpec& m, TensorSplit split, int micro_batch);
// Final layer norm, logits (vocab-parallel) and cross-entropy (last pipeline stage).
std::vector<KernelOp> HeadOps(const ModelSpec& m, TensorSplit split, int micro_batch);

// A tensor-parallel collective inside a layer (over the TP group), per micro-batch. Bytes are the
// nccl-tests "size" of the call: the full b·s·h tensor for all-reduce, all-gather (output) and
// reduce-scatter (input). Without SP: an all-reduce after attention and after the MLP forward,
// and one before each backward (Megatron's f/g operators). With SP each all-reduce becomes an
// all-gather and a reduce-scatter (Korthikanti §4.2.2), and backward all-gathers the two
// layer-norm outputs once more for the weight gradients. Skipped when tp == 1.
enum class TpCollectiveKind { kAllReduce, kReduceScatter, kAllGather };
struct TpCollective {
  std::string name;
  TpCollectiveKind kind = TpCollectiveKind::kAllReduce;
  double bytes = 0;
  bool forward = true;  // forward collectives are re-run by full recomputation
};
std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split,
                                             int micro_batch);
// The embedding's all-reduce (vocab-parallel lookup) and the logits' cross-entropy reductions.
std::vector<TpCollective> EmbeddingTpCollectives(const ModelSpec& m, TensorSplit split,
                                                 int micro_batch);
std::vector<TpCollective> HeadTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch);

// Parameters, the one count the program uses (`trainsim check` prints it through
// scenarios::ParameterCount): 12·l·h² + 13·l·h + (V + s)·h for the GPT shape (Narayanan et al.);
// for GQA, SwiGLU or a non-4h FFN the actual matrices (Q, K, V and output with biases; SwiGLU
// h→2f with biases and f→h).
int64_t ParameterCount(const ModelSpec& m);
// Parameters of one transformer layer (all TP ranks together).
int64_t LayerParameterCount(const ModelSpec& m);
// Parameters of one layer held by one TP rank (split matrices and biases /tp; layer norms and
// the row-parallel biases replicated, as in Megatron).
int64_t LayerParametersPerTpRank(const ModelSpec& m, int tp);

// FLOPs of one iteration of `global_batch` sequences, all GPUs together.
//  ModelFlopsPerIteration: forward + backward matrix products (the 72 formula); MFU counts this.
//  HardwareFlopsPerIteration: plus what recomputation re-executes (full: one more forward of
//  every layer, the 96 formula; selective: the attention core); HFU counts this.
enum class Recompute { kNone, kSelective, kFull };
double ModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch);
double HardwareFlopsPerIteration(const ModelSpec& m, int64_t global_batch, Recompute r);

std::string RecomputeName(Recompute r);
Result<Recompute> ParseRecompute(const std::string& name);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_MODEL_H_
