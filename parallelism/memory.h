// parallelism/memory.h — memory per GPU at its peak, per pipeline stage: model states (ZeRO 0–3,
// FSDP with hybrid sharding; dense and expert parameters over their own groups), the gathered
// weights of ZeRO-3/FSDP units in flight, activations for the schedule's in-flight
// micro-batches (Korthikanti et al. 2022 §4 generalised to GQA, SwiGLU, MLA, MoE and context
// parallelism), framework overhead, and the fp16 optimizer step's fp32 gradient copies; does
// the layout fit?
//
// Promises: ModelStateBytes reproduces ZeRO's Table 1 (docs/evidence/zero2020_memory_per_device_gb
// .csv) to rounding; the GPT-shape activations are exactly Korthikanti's 34·sbh/t (SP) and
// (10 + 24/t)·sbh (no SP) plus 5as²b/t for the scores; a layout that does not fit is reported
// with its worst stage, the excess and the changes that would make it fit, each checked with
// this same model. Every term, its closed form and its source: docs/memory.md.
#ifndef TRAINSIM_PARALLELISM_MEMORY_H_
#define TRAINSIM_PARALLELISM_MEMORY_H_

#include <algorithm>
#include <string>
#include <vector>

#include "parallelism/layout.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {

struct MemoryParams {
  double weight_bytes_per_param = 2;      // bf16/fp16 weights
  double grad_bytes_per_param = 2;        // bf16/fp16 gradients (ZeRO's accounting)
  double optimizer_bytes_per_param = 12;  // Adam: fp32 master + momentum + variance
  // Bytes per parameter of the full weights a ZeRO-3/FSDP unit gathers for its forward and
  // backward (the compute dtype: FSDP2's MixedPrecisionPolicy param_dtype); 0: as the weights.
  double gathered_bytes_per_param = 0;
  // CUDA context (~0.5 GB on A100/H100), NCCL channel buffers and cuBLAS workspaces (~1 GB),
  // allocator slack: a 2 GB allowance, as commonly budgeted for Megatron/DeepSpeed jobs.
  double framework_overhead_bytes = 2e9;
  // fp32 gradient copies the optimizer step materialises, per parameter of the optimizer's
  // shard. Megatron-LM's Float16OptimizerWithFloat16Params (fp16 training; gradients not
  // accumulated in fp32) sets main_param.grad = main_grad.float() for every parameter before
  // the Adam step (_copy_model_grads_to_main_grads): 4 bytes. 0 when the gradients already are
  // fp32 (.float() is a no-op) — Megatron's bf16 mode — or the optimizer steps fp16 in place.
  double step_grad_bytes_per_param = 0;
  // Bytes per logit (this GPU's b·(s/cp)·V/t of them) at the peak of the loss backward.
  // Megatron's vocab-parallel cross-entropy keeps the fp32 softmax (4), computes the gradient in
  // place in it and casts it to bf16 for the output layer's backward (2): 6. PyTorch's eager
  // cross_entropy holds the saved fp32 log-softmax, the gradient nll_loss's backward makes and
  // the one log_softmax's backward makes at once: 12.
  double loss_bytes_per_logit = 6;
  // HBM a layout must leave free beyond its modelled peak (--memory-headroom, cluster.
  // memory_headroom): the caching allocator's fragmentation, NCCL's buffers, CUDA graphs'
  // private pools (docs/memory.md). A layout fits when peak <= capacity - headroom_bytes.
  double headroom_bytes = 0;
  // Host memory per GPU (the node's CPU memory over its GPUs; 0 = not checked): activation
  // offloading's pinned copies of one micro-batch must fit in it.
  double host_bytes_per_gpu = 0;
  double gathered_bytes() const {
    return gathered_bytes_per_param > 0 ? gathered_bytes_per_param : weight_bytes_per_param;
  }
};

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, overhead = 0;
  // The optimizer step's fp32 gradient copies (MemoryParams::step_grad_bytes_per_param). They
  // exist only after the last backward has freed the activations, so the peak holds the larger
  // of the two.
  double step_grads = 0;
  // ZeRO-3/FSDP: full (unsharded) weights of the units in flight — the one computing and the
  // one prefetched — and the full gradients of the unit being reduce-scattered. Held during
  // forward and backward, beside the activations; freed before the optimizer step.
  double gathered = 0;
  // Activation offloading: one micro-batch's offloaded activations in host memory (pinned), not
  // on the GPU and not in total().
  double host_activations = 0;
  double total() const {
    return weights + gradients + optimizer + std::max(activations + gathered, step_grads) +
           overhead;
  }
};

// Model-state bytes per GPU for `params_per_gpu` parameters (Ψ of this GPU's model shard before
// ZeRO), DP degree `dp` and ZeRO stage.
MemoryBreakdown ModelStateBytes(double params_per_gpu, int dp, int zero_stage,
                                const MemoryParams& p = {});

// Ranks the sharded states are split over (ZeRO ≥ 1; ZeRO-2 gradients, ZeRO-3 weights too):
// dense parameters over the data-parallel group including CP (Megatron's distributed optimizer
// shards over DP × CP), expert parameters over the expert-DP group; with hybrid sharding
// (shard_group > 0) over the shard group only, replicated across groups.
struct ShardDegrees {
  double dense = 1;
  double expert = 1;
};
ShardDegrees StateShardDegrees(const ParallelConfig& c);

// Parameters held by one GPU of pipeline rank `stage`, dense and expert: the transformer layers
// of all its model chunks (uneven stages as ChunkLayerRanges gives them; MoE and dense layers
// by ModelSpec::IsMoeLayer), the word embedding (and learned positions) on stage 0, the final
// norm on the last stage, and the output layer on the last stage when untied or when a tied
// copy is needed (pp > 1).
ParamSplit StageParameters(const ModelSpec& m, const ParallelConfig& c, int stage);
// The total of StageParameters.
double ParametersPerGpu(const ModelSpec& m, const ParallelConfig& c, int stage);

// Weights, gradients, optimizer state, fp32 step copies and FSDP gathered units of one GPU of
// pipeline rank `stage` (no activations, no overhead).
MemoryBreakdown StageModelStateBytes(const ModelSpec& m, const ParallelConfig& c, int stage,
                                     const MemoryParams& p = {});

// Activation bytes of one transformer layer for one micro-batch on one GPU: the split's TP,
// SP and CP; a MoE layer's router, routed tokens and expert MLPs when `moe_layer`.
double LayerActivationBytes(const ModelSpec& m, const TensorSplit& split, Recompute recompute,
                            int micro_batch, bool moe_layer = false);
// The same for a layer of kind `kind`: a hybrid model's layer has one norm and its block; a
// Mamba layer keeps in_proj's input and output, conv1d's output, the scan's output, the gated
// norm's output and fp32 dt and its decay per head (docs/memory.md).
double LayerActivationBytes(const ModelSpec& m, const TensorSplit& split, Recompute recompute,
                            int micro_batch, LayerKind kind);
// The same for the layout `c`: its recomputation with its selective modules.
double LayerActivationBytes(const ModelSpec& m, const ParallelConfig& c, LayerKind kind);
// What one micro-batch's forward through the chunk `r` keeps until its backward, with the
// layout's recomputation (full: the checkpoints' inputs, by --recompute-method); with activation
// offloading (c.cpu_offload_layers), what stays on the GPU at its peak: the largest sum of
// L − n consecutive layers' activations, as Transformer Engine frees and reloads them.
double ChunkActivationBytes(const ModelSpec& m, const ParallelConfig& c, const ChunkLayers& r);
// Activation bytes of one micro-batch that activation offloading holds in host memory per GPU
// (the first c.cpu_offload_layers layers; pinned buffers); 0 without offloading.
double OffloadedActivationBytes(const ModelSpec& m, const ParallelConfig& c);
// The dense-layer case without CP (kept for callers of the original API).
double ActivationBytesPerLayer(const ModelSpec& m, int tp, bool sequence_parallel,
                               Recompute recompute, int micro_batch);
// Activation bytes of one GPU of pipeline rank `stage` at its peak: the largest sum, over the
// schedule's task order, of the activations of the (micro-batch, chunk) forwards whose backward
// has not run; on the last stage the fp32 softmax of the logits of each micro-batch in flight;
// plus the larger of the two transients of a backward: the loss's (last stage) and the full
// activations of the layer being recomputed (full recompute).
double StageActivationBytes(const ModelSpec& m, const ParallelConfig& c, int stage,
                            const MemoryParams& p = {});
// StageActivationBytes of every pipeline rank (index = pp rank), the schedule built once.
std::vector<double> ActivationBytesPerStage(const ModelSpec& m, const ParallelConfig& c,
                                            const MemoryParams& p = {});

struct MemoryReport {
  std::vector<MemoryBreakdown> per_stage;  // index = pp rank
  int peak_stage = 0;
  double peak_bytes = 0;
  double capacity_bytes = 0;
  double headroom_bytes = 0;  // MemoryParams::headroom_bytes: fits = peak <= capacity - headroom
  bool fits = true;
  std::string reason;                    // empty when it fits
  std::vector<std::string> suggestions;  // changes that would fit, each checked
};

// REQUIRES: ValidateLayout ok. With `suggest` false a layout that does not fit gets its reason
// but no suggestions (each suggestion re-estimates an alternative layout: a sweep that only
// ranks layouts would spend a quarter of its time on them).
MemoryReport EstimateMemory(const ModelSpec& m, const ParallelConfig& c, double capacity_bytes,
                            int gpus_per_node, const MemoryParams& p = {}, bool suggest = true);

// What `run` (and `check`) say about a report that does not fit: FailedPrecondition with the
// reason and the suggestions; OK when it fits.
Status FitStatus(const MemoryReport& r);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_MEMORY_H_
