// parallelism/model.h — a decoder-only transformer as a list of operations with FLOPs and bytes.
//
// The transformer's shape (GPT, GQA/head_dim, SwiGLU, MLA, mixture of experts) and, for one
// micro-batch on one GPU under tensor (and sequence), context and expert parallelism, the
// operations of a layer, of the embedding and of the logits/loss: each with its matrix-product
// FLOPs and (batch, m, n, k) shape, other FLOPs and HBM bytes, forward and backward; and the
// collectives of each, tagged with their group. Promises: the ops carry the work the kernels
// execute (a causal flash kernel about half the score square); for the GPT shape without flash
// they sum over a step to Narayanan et al. (SC'21) exactly. The FLOPs per iteration are closed
// forms in published conventions (Narayanan's; Megatron-Core's). ParameterCount equals the P
// formula for the GPT shape. Counts are per GPU for one micro-batch; bytes assume each kernel
// reads its inputs and writes its outputs once. docs/layer-model.md has the derivations.
#ifndef TRAINSIM_PARALLELISM_MODEL_H_
#define TRAINSIM_PARALLELISM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::parallelism {

// Mixture of experts (Megatron-Core's --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
// --moe-shared-expert-intermediate-size, --moe-layer-freq as "first k dense").
struct MoeSpec {
  int experts = 0;            // routed experts per MoE layer; 0: a dense model
  int top_k = 0;              // experts each token is routed to
  int expert_ffn_hidden = 0;  // FFN width of one routed expert; 0: ModelSpec::ffn()
  int shared_experts = 0;     // always-active experts per MoE layer (DeepSeek, Qwen2-MoE)
  // Total FFN width of the shared experts; 0: shared_experts · expert FFN width.
  int shared_expert_ffn_hidden = 0;
  int first_dense_layers = 0;  // leading layers with a dense MLP (DeepSeek-V3: 3)
  // Every k-th layer a MoE layer, the k-th first (layers k−1, 2k−1, …; Llama 4 Maverick: 2).
  int interleave_step = 1;
  double capacity_factor = 0;  // 0: dropless; else tokens per expert capped at cf · mean
  // max/mean tokens per expert of a micro-batch: the busiest expert sets the grouped GEMM's
  // pace. 1 = perfectly balanced (Megatron-Bridge's benchmarks force-balance the router).
  double load_imbalance = 1;
  // The experts' GEMMs run in FP8 (the model's precision), and the router pads each expert's
  // token count to the FP8 alignment (--moe-router-padding-for-quantization). FP8 without
  // router padding behind a dispatcher that does not pad (not FLEX/HybridEP) copies the
  // experts' rows into padded segments and back (Transformer Engine's Fp8Padding /
  // Fp8Unpadding in Megatron-Core's TEGroupedMLP).
  bool fp8 = false;
  bool router_padding = false;
  bool enabled() const { return experts > 0; }
  int expert_ffn(int dense_ffn) const {
    return expert_ffn_hidden > 0 ? expert_ffn_hidden : dense_ffn;
  }
  int64_t shared_ffn(int dense_ffn) const {
    return shared_expert_ffn_hidden > 0 ? shared_expert_ffn_hidden
                                        : int64_t(shared_experts) * expert_ffn(dense_ffn);
  }
};

// Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and KV projections.
struct MlaSpec {
  int q_lora_rank = 0;  // 0: Q projected directly from the hidden state
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

// A Mamba-2 mixer (Dao & Gu, "Transformers are SSMs", ICML 2024; Megatron-Core's
// megatron/core/ssm/mamba_mixer.py MambaMixer): in_proj h → [z, x, B, C, dt] (2·d_inner +
// 2·groups·state + heads wide), a depthwise causal conv1d of width conv_kernel over [x, B, C],
// the chunked SSD scan, a gated RMSNorm over d_inner and out_proj d_inner → h.
struct MambaSpec {
  int heads = 0;         // SSM heads (Megatron's --mamba-num-heads); 0: no Mamba layers
  int head_dim = 64;     // P, channels per head (--mamba-head-dim; Megatron's default 64)
  int state_dim = 128;   // N, the SSM state per channel (--mamba-state-dim; Megatron's 128)
  int groups = 8;        // G, B/C groups shared by heads (--mamba-num-groups; Megatron's 8)
  int conv_kernel = 4;   // depthwise conv1d width (mamba_ssm's d_conv default 4)
  int chunk_size = 128;  // Q, the SSD chunk length (MambaMixer's chunk_size default 128)
  bool enabled() const { return heads > 0; }
  // d_inner = heads · head_dim (Megatron: expand · h unless --mamba-num-heads is given).
  int64_t d_inner() const { return int64_t(heads) * head_dim; }
  // Channels through conv1d: x, B and C.
  int64_t conv_dim() const { return d_inner() + 2 * int64_t(groups) * state_dim; }
  // in_proj's output width: z, x, B, C and one dt per head.
  int64_t in_proj_width() const { return 2 * d_inner() + 2 * int64_t(groups) * state_dim + heads; }
};

// What one layer of the model is. A plain transformer layer (attention and an MLP or MoE) unless
// the model has a hybrid pattern (Megatron-Core's --hybrid-override-pattern, MambaStack): then
// each character is a layer of one block, with its own pre-norm and residual:
// 'M' Mamba-2 mixer, '*' self-attention, '-' dense MLP, 'E' MoE.
enum class LayerBlock { kTransformer, kMamba, kAttention, kMlp, kMoe };
struct LayerKind {
  LayerBlock block = LayerBlock::kTransformer;
  bool moe = false;       // the layer's MLP is a MoE (kTransformer past first_dense_layers; kMoe)
  bool windowed = false;  // its attention is sliding-window (ModelSpec::window)
  bool has_attention() const {
    return block == LayerBlock::kTransformer || block == LayerBlock::kAttention;
  }
  // A small dense index (0..19) for tables of per-kind costs.
  int index() const { return int(block) * 4 + (moe ? 2 : 0) + (windowed ? 1 : 0); }
  bool operator==(const LayerKind&) const = default;
};
inline constexpr int kLayerKindCount = 20;

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
  // Bytes per element of a linear layer's input saved for its backward (the weight-gradient
  // GEMM's operand). Transformer Engine quantizes the input of an FP8/FP4 GEMM and saves the
  // quantized copy, one usage only (module/linear.py: update_usage(rowwise_usage=False,
  // columnwise_usage=True)): 1 byte in FP8, 1 + 1/32 with MXFP8's E8M0 scale per 32 elements,
  // 0.5 + 1/16 in NVFP4 (E4M3 scale per 16). 0: bytes_per_element (16-bit GEMMs).
  double saved_gemm_input_bytes = 0;
  // The attention core's saved Q, K, V and output in FP8 (TE's fp8_dpa): the same bytes as a
  // saved GEMM input; else bytes_per_element.
  bool fp8_attention_saved = false;
  int head_dim = 0;             // per-head width (Megatron's kv_channels); 0: hidden / heads
  bool tied_embeddings = true;  // output layer shares the word embedding (GPT); Llama: false
  bool learned_position_embedding = true;  // GPT's absolute positions; false for RoPE
  bool linear_bias = true;                 // biases on the linear layers (GPT); Llama: false
  bool rmsnorm = false;  // RMSNorm (scale only) instead of LayerNorm (scale and bias)
  // PyTorch eager mode on a model written in plain torch ops (torchtitan's Llama): RMSNorm,
  // RoPE, SwiGLU, GQA's K/V expansion and the loss as one kernel per op with their fp32
  // upcasts (model.cc, EagerRmsNorm and the others). false: fused kernels (Transformer Engine /
  // Megatron-Core, or torch.compile).
  bool eager_kernels = false;
  // With eager_kernels: the RMSNorm too is op by op (false: a fused norm kernel, torchtitan's
  // "fused_rmsnorm").
  bool eager_norm = false;
  MoeSpec moe;
  MlaSpec mla;
  MambaSpec mamba;
  // Hybrid layer pattern, one character per layer ("M", "*", "-", "E"; LayerBlock); empty: every
  // layer is a transformer layer. Its length is num_layers.
  std::string hybrid_pattern;
  // Sliding-window attention (Megatron-Core's --window-size w,0): a query sees itself and the w
  // tokens before it. 0: full causal attention in every layer.
  int window = 0;
  // Megatron's --window-attn-skip-freq k: every k-th attention layer (1-based layer number, the
  // position in the hybrid pattern) keeps full attention; 0: every layer is windowed. GPT-OSS
  // alternates, window first: k = 2.
  int window_full_every = 0;
  bool hybrid() const { return !hybrid_pattern.empty(); }
  // Resolved FFN width.
  int ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t head_width() const { return head_dim > 0 ? head_dim : int64_t(hidden) / heads; }
  // Width of Q (heads · head dim; the hidden size unless head_dim says otherwise).
  int64_t q_width() const { return head_width() * heads; }
  // Width of K (and of V): head dim · kv_heads.
  int64_t kv_width() const { return head_width() * kv(); }
  // Whether layer `layer` (0-based) has a routed-expert MLP.
  bool IsMoeLayer(int layer) const {
    if (hybrid())
      return layer >= 0 && size_t(layer) < hybrid_pattern.size() &&
             hybrid_pattern[size_t(layer)] == 'E' && moe.enabled();
    return moe.enabled() && layer >= moe.first_dense_layers &&
           (moe.interleave_step <= 1 || (layer + 1) % moe.interleave_step == 0);
  }
  // Whether layer `layer`'s attention (if it has any) is sliding-window.
  bool IsWindowedLayer(int layer) const {
    return window > 0 && (window_full_every <= 0 || (layer + 1) % window_full_every != 0);
  }
};

// The kind of layer `layer` (0-based): its block from the hybrid pattern (kTransformer without
// one), MoE and sliding-window flags.
LayerKind LayerKindAt(const ModelSpec& m, int layer);
// The distinct kinds of the model's layers, in order of first appearance.
std::vector<LayerKind> DistinctLayerKinds(const ModelSpec& m);
// Keys an average query attends to under causal attention, itself included: (s+1)/2 for full
// attention, and with a window of w (W = w + 1 keys at most) W − W·(W−1)/(2s) when W < s
// (Σ min(i+1, W) over the s queries, divided by s).
double CausalKeysPerQuery(int64_t seq_len, int window);

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
  // The selective-recomputation modules (RecomputeModule bits) whose checkpoint re-runs this
  // op's forward in the backward: the attention core for kRecomputeCoreAttn (Korthikanti et
  // al. §5), the routed experts' activation for kRecomputeMoeAct, and so on.
  uint32_t recomputed_by = 0;
  // Causal attention whose kernel skips the fully masked score blocks (a fused flash-attention
  // kernel): the matrix FLOPs above are what it executes, about half the s×s square. The
  // materialised (2021 Megatron) path computes the whole square and masks it: false there.
  bool causal = false;
  // A grouped GEMM run as one GEMM per group member (`batch` of them) on this many concurrent
  // streams (Transformer Engine's GroupedLinear on Hopper: one cuBLAS GEMM per expert, round-
  // robin over its 4 compute streams). 0: one kernel over the whole batch.
  int streams = 0;
};

// How context parallelism exchanges K and V (Megatron-Core's --cp-comm-type).
enum class CpComm { kP2P, kAllGather, kAllToAll };

// Megatron-Core's MoE token dispatcher (--moe-token-dispatcher-type).
enum class MoeDispatcher {
  kAllToAll,   // MoEAlltoAllTokenDispatcher: NCCL all-to-alls of the routed copies
  kAllGather,  // MoEAllGatherTokenDispatcher: all-gather the group's tokens, reduce-scatter back
  kFlex,       // MoEFlexTokenDispatcher (DeepEP / HybridEP): one copy per destination node
};

// How one layer is split across GPUs.
struct TensorSplit {
  int tp = 1;
  bool sequence_parallel = false;
  int cp = 1;  // context parallelism: each rank holds seq_len / cp tokens (causally balanced)
  CpComm cp_comm = CpComm::kP2P;
  int ep = 1;   // expert parallelism: experts / ep experts per rank
  int etp = 1;  // tensor parallelism inside an expert
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  int ep_nodes = 1;  // nodes one EP group spans (FLEX deduplicates the traffic between them)
};

// Attention's per-head widths after any projection. MHA/GQA: head_width() for Q, K and V,
// kv() K/V heads; MLA: every head has its own K and V after the up projection, Q and K heads are
// qk_nope + qk_rope wide and V heads v_head_dim wide (DeepSeek-V2 §2.1).
struct AttentionDims {
  int64_t heads = 0, kv_heads = 0, qk_head_dim = 0, v_head_dim = 0;
  int64_t q_width() const { return heads * qk_head_dim; }
  int64_t k_width() const { return kv_heads * qk_head_dim; }
  int64_t v_width() const { return kv_heads * v_head_dim; }
  int64_t out_width() const { return heads * v_head_dim; }  // input of the output projection
};
AttentionDims AttentionDimsOf(const ModelSpec& m);

// Tokens of a MoE layer on one GPU for one micro-batch of `micro_batch` sequences (derivation in
// docs/layer-model.md). Means over the GPUs of an EP group; `busiest` is what the grouped GEMM
// is charged with.
struct MoeTokens {
  // Tokens entering the dispatcher: b·s/cp, divided by tp when tp > 1 (Megatron-Core's
  // all-to-all dispatcher works on the sequence-parallel shard).
  double dispatched = 0;
  // (token, expert) pairs this GPU sends into the dispatch all-to-all, and receives on average:
  // dispatched · top_k (the EP group's pairs spread over its ep GPUs).
  double routed = 0;
  // Pairs through this GPU's grouped GEMM on average: routed · etp (the expert-TP all-gather
  // brings the pairs of the etp ranks that share these experts).
  double expert_mean = 0;
  // expert_mean · min(load_imbalance, capacity_factor when > 0): the busiest expert's pace.
  double expert_busiest = 0;
};
MoeTokens MoeTokensPerGpu(const ModelSpec& m, TensorSplit split, int micro_batch);
// Kernels (and device-to-host copies) the dispatcher launches per MoE layer forward to learn how
// many tokens go where, before the host synchronises on them (Megatron-Core's
// token_dispatcher.py as of 2026: dropless, permute fusion on).
int MoeDispatchKernels(TensorSplit split);
// The FLEX dispatcher's (DeepEP / HybridEP) bytes over the all-to-all's: a token is sent once to
// each other group that holds at least one of its top_k experts instead of once per expert
// there. Across nodes the groups are nodes (then forwarded over NVLink); inside one NVLink domain
// they are ranks (DeepEP's get_dispatch_layout marks is_token_in_rank per rank and the intranode
// dispatch sends a token to each marked rank once: csrc/kernels/legacy/layout.cu, intranode.cu).
// With `experts` spread evenly over `groups` and routing uniform without replacement
// (force-balanced): E[other groups hit] / E[copies to other groups] =
// (N−1)·(1 − C(E − E/N, k)/C(E, k)) / (k·(N−1)/N). 1 when groups <= 1.
double FlexDedupFactor(int experts, int top_k, int groups);

// The operations of one transformer layer for one micro-batch of `micro_batch` sequences on
// one GPU: tensor-parallel over split.tp, the sequence split over split.cp (causally balanced:
// each CP rank computes 1/cp of the attention), and, when `moe_layer`, the router, token
// permutation and the grouped GEMMs of the experts this GPU holds (experts / ep, FFN split over
// etp) at the pace of the busiest expert (MoeSpec::load_imbalance), plus the shared experts.
// REQUIRES: ValidateModel ok, the split divides the model (ValidateLayout).
std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch,
                               bool moe_layer = false);
// The operations of one layer of kind `kind` (LayerKindAt). A Mamba layer: pre-norm, in_proj
// (column-parallel: z, x, B, C, dt of heads/tp heads and groups/tp groups), conv1d, the SSD scan,
// the gated RMSNorm, out_proj (row-parallel), residual; an attention / MLP / MoE layer of a
// hybrid model: its pre-norm, that block and its residual. The bool overload above is the
// kTransformer kind for a transformer model; for a hybrid model it returns the ops of every
// distinct non-MoE kind (MoE: the MoE kind) one after the other, for callers that only need
// the model's kernel shapes.
std::vector<KernelOp> LayerOps(const ModelSpec& m, TensorSplit split, int micro_batch,
                               LayerKind kind);
// Word (+ position) embedding lookup and embedding dropout (first pipeline stage).
std::vector<KernelOp> EmbeddingOps(const ModelSpec& m, TensorSplit split, int micro_batch);
// Final norm, logits (vocab-parallel) and cross-entropy (last pipeline stage).
std::vector<KernelOp> HeadOps(const ModelSpec& m, TensorSplit split, int micro_batch);

// A collective inside a layer, per micro-batch, over one of the layer's groups. Bytes are the
// nccl-tests "size" of the call: the full tensor for all-reduce, all-gather (output) and
// reduce-scatter (input); for all-to-all the bytes each rank sends and receives in total; for
// a send/recv one transfer (`count` of them in sequence, e.g. the CP ring's steps).
// TP, without SP: an all-reduce after attention and after the MLP forward, and one before each
// backward (Megatron's f/g operators). With SP each all-reduce becomes an all-gather and a
// reduce-scatter (Korthikanti §4.2.2), and backward all-gathers the two layer-norm outputs once
// more for the weight gradients. CP: the K/V exchange (ring P2P, all-gather or Ulysses
// all-to-all, CpComm). EP: the token dispatch and combine all-to-alls forward and backward.
enum class TpCollectiveKind { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSendRecv };
enum class CommGroup { kTp, kCp, kEp, kEtp };
struct TpCollective {
  std::string name;
  TpCollectiveKind kind = TpCollectiveKind::kAllReduce;
  double bytes = 0;
  bool forward = true;  // forward collectives are re-run by full recomputation
  CommGroup group = CommGroup::kTp;
  int count = 1;  // transfers in sequence (CP ring steps); time = count · one transfer
  // Name of the op of the same layer this transfer runs under (the CP ring's K/V steps run
  // beside the attention blocks): only what exceeds that op's time is exposed. Empty: exposed.
  std::string overlaps_op{};
  // The selective-recompute modules (RecomputeModule bits) that re-run this forward collective
  // in the backward (full recomputation re-runs every forward collective).
  uint32_t recomputed_by = 0;
  // The FLEX dispatcher's all-to-alls (HybridEP): priced as its kernels run (FlexSeconds,
  // step/flex_dispatch.h). Across nodes, `flex_nvl_bytes` is the NVLink forwarding leg's
  // all-to-all buffer over the EP ranks of one node (`bytes` is the network leg's).
  bool flex = false;
  double flex_nvl_bytes = 0;
};
std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch,
                                             bool moe_layer = false);
// The same for a layer of kind `kind`: a Mamba layer has the attention block's TP pair (in_proj
// column-parallel, out_proj row-parallel), an MLP layer the MLP's, a MoE layer its shared
// experts' pair and the EP collectives; only attention layers have CP collectives.
std::vector<TpCollective> LayerTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch,
                                             LayerKind kind);
// The embedding's all-reduce (vocab-parallel lookup) and the logits' cross-entropy reductions.
std::vector<TpCollective> EmbeddingTpCollectives(const ModelSpec& m, TensorSplit split,
                                                 int micro_batch);
std::vector<TpCollective> HeadTpCollectives(const ModelSpec& m, TensorSplit split, int micro_batch);

// Parameters, the one count the program uses (`trainsim check` prints it through
// scenarios::ParameterCount): 12·l·h² + 13·l·h + (V + s)·h for the GPT shape (Narayanan et al.);
// otherwise the actual matrices (parallelism/params.cc): Q, K, V and output (Q width heads ·
// head_dim, K/V width kv_heads · head_dim) or MLA's low-rank projections and their norms,
// biases when linear_bias (column-parallel biases on Q/K/V and MLP up, row-parallel on the
// output and MLP down, and the router's), the MLP (GELU: 2·h·f, SwiGLU: 3·h·f), in MoE layers
// (layer >= moe.first_dense_layers) the router (h × experts), every routed expert's MLP of width
// moe.expert_ffn and the shared experts' MLP of width moe.shared_ffn, two norms per layer (scale
// only for RMSNorm), the word embedding, learned positions and an untied output layer (V·h).
// The final norm is not counted (as in Narayanan's P; at most 2h).
int64_t ParameterCount(const ModelSpec& m);
// Parameters one token passes through: the same count with top_k routed experts per MoE layer
// instead of all of them (the whole embedding and output layer included, as Mixtral's 12.9 B;
// DeepSeek-V3's and GPT-OSS's published active counts leave the input embedding out).
int64_t ActiveParameterCount(const ModelSpec& m);
// Parameters of one transformer layer (all GPUs together); `moe_layer` counts the router and
// all routed and shared experts in place of the dense MLP (ignored for a dense model).
int64_t LayerParameterCount(const ModelSpec& m, bool moe_layer = false);
// Parameters of one layer of kind `kind`. Mamba: in_proj h·(2·d_inner + 2·G·N + H), conv1d
// weight and bias (conv_dim·(k + 1)), A_log, D and dt_bias (3·H), the gated norm (d_inner),
// out_proj d_inner·h and the pre-norm (h); biases on in_proj/out_proj when linear_bias.
int64_t LayerParameterCount(const ModelSpec& m, LayerKind kind);
// Parameters of one layer held by one GPU: dense (attention, norms, shared experts, router;
// replicated over DP × CP, split over TP as Megatron-Core does: norms, the router, MLA's
// down-projections and row-parallel biases whole on every TP rank) and expert (routed experts:
// experts / ep of them, each MLP split over etp with its row-parallel bias whole; replicated
// over expert-DP). dense·tp ≥ the layer's dense parameters, equal when nothing is replicated.
struct ParamSplit {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
ParamSplit LayerParametersPerGpu(const ModelSpec& m, TensorSplit split, bool moe_layer = false);
// Of a layer of kind `kind`. Mamba: everything but the pre-norm is split over TP (Megatron-Core
// splits heads and groups; conv1d, A_log, D, dt_bias and the gated norm are per channel/head).
ParamSplit LayerParametersPerGpu(const ModelSpec& m, TensorSplit split, LayerKind kind);
// Dense-layer case of the above, rounded (kept for callers without MoE): parameters of one
// non-MoE layer on one TP rank.
int64_t LayerParametersPerTpRank(const ModelSpec& m, int tp);

// FLOPs of one iteration of `global_batch` sequences, all GPUs together, from closed forms
// (docs/layer-model.md), not from LayerOps.
//  ModelFlopsPerIteration: forward + backward matrix products in Narayanan's convention (the full
//  s×s attention square; the 72 formula for the GPT shape), generalised to GQA, head_dim, SwiGLU,
//  MLA and MoE (top_k routed + shared experts and the router); MFU counts this.
//  HardwareFlopsPerIteration: plus what recomputation re-executes in the same convention (full:
//  one more forward of every layer, the 96 formula; selective: the materialised attention core)
//  and a flash kernel's backward recompute of QKᵀ; HFU counts this.
enum class Recompute { kNone, kSelective, kFull };
// Megatron-Core's --recompute-modules under --recompute-granularity selective
// (TransformerConfig.recompute_modules; default ["core_attn"]), as bits. "moe_act", "layernorm"
// and "mla_up_proj" discard a module's output and recompute it before its backward
// (CheckpointWithoutOutput); "core_attn", "mlp", "moe" and "shared_experts" keep only the
// module's input and re-run its forward (tensor_parallel.checkpoint / te_checkpoint).
enum RecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,       // the attention core (flash kernel or scores/softmax/AV)
  kRecomputeMoeAct = 1u << 1,         // the routed experts' activation (TEGroupedMLP)
  kRecomputeLayernorm = 1u << 2,      // norms not fused into a linear: a MoE layer's pre-MLP norm
  kRecomputeMlaUpProj = 1u << 3,      // MLA's up projections and RoPE
  kRecomputeMlp = 1u << 4,            // a dense layer's MLP
  kRecomputeMoe = 1u << 5,            // a MoE layer: router, dispatch, experts, combine, shared
  kRecomputeSharedExperts = 1u << 6,  // a MoE layer's shared experts
};
// Megatron's spelling of each bit, in the order above.
std::string RecomputeModuleNames(uint32_t modules);  // "core_attn,moe_act"; "" for none
Result<uint32_t> ParseRecomputeModule(const std::string& name);
// The names ParseRecomputeModule accepts, for error messages.
std::string RecomputeModuleChoices();
double ModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch);
// Model FLOPs per iteration as Megatron-Core counts them (megatron/training/training.py,
// num_floating_point_operations): 3 × 2 × the GEMM sizes, causal attention counted half,
// MoE layers by top_k routed + shared experts, MLA by its projections, logits included. The
// "model TFLOP/s" of Megatron-Bridge and NeMo's published tables use this count.
double MegatronModelFlopsPerIteration(const ModelSpec& m, int64_t global_batch);
// `modules`: the RecomputeModule bits in force with r = kSelective (ignored otherwise);
// `full_fraction`: with r = kFull, the share of layers re-run (the block method's; see
// FullyRecomputedFraction).
double HardwareFlopsPerIteration(const ModelSpec& m, int64_t global_batch, Recompute r,
                                 uint32_t modules = kRecomputeCoreAttn, double full_fraction = 1);

std::string RecomputeName(Recompute r);
Result<Recompute> ParseRecompute(const std::string& name);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_MODEL_H_
