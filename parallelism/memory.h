// parallelism/memory.h — memory per GPU at its peak: model states (ZeRO 0–3), activations for
// the schedule's in-flight micro-batches (Korthikanti et al. 2022 §4), framework overhead, and
// the fp16 optimizer step's fp32 gradient copies; does the layout fit?
//
// Promises: ModelStateBytes reproduces ZeRO's Table 1 (docs/evidence/zero2020_memory_per_device_gb
// .csv) to rounding; a layout that does not fit is reported with its worst stage, the excess and
// the changes that would make it fit, each checked with this same model. The formulas and their
// sources: docs/parallelism.md.
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
  // CUDA context (~0.5 GB on A100/H100), NCCL channel buffers and cuBLAS workspaces (~1 GB),
  // allocator slack: a 2 GB allowance, as commonly budgeted for Megatron/DeepSpeed jobs.
  double framework_overhead_bytes = 2e9;
  // fp32 gradient copies the optimizer step materialises, per parameter of the optimizer's
  // shard. Megatron-LM's Float16OptimizerWithFloat16Params (fp16 training; gradients not
  // accumulated in fp32) sets main_param.grad = main_grad.float() for every parameter before
  // the Adam step (_copy_model_grads_to_main_grads): 4 bytes. 0 when the gradients already are
  // fp32 (.float() is a no-op) — Megatron's bf16 mode — or the optimizer steps fp16 in place.
  double step_grad_bytes_per_param = 0;
};

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, overhead = 0;
  // The optimizer step's fp32 gradient copies (MemoryParams::step_grad_bytes_per_param). They
  // exist only after the last backward has freed the activations, so the peak holds the larger
  // of the two.
  double step_grads = 0;
  double total() const {
    return weights + gradients + optimizer + std::max(activations, step_grads) + overhead;
  }
};

// Model-state bytes per GPU for `params_per_gpu` parameters (Ψ of this GPU's model shard before
// ZeRO), DP degree `dp` and ZeRO stage.
MemoryBreakdown ModelStateBytes(double params_per_gpu, int dp, int zero_stage,
                                const MemoryParams& p = {});

// Activation bytes of one transformer layer for one micro-batch on one GPU.
double ActivationBytesPerLayer(const ModelSpec& m, int tp, bool sequence_parallel,
                               Recompute recompute, int micro_batch);

// Parameters held by one GPU of pipeline rank `stage` (layers, embeddings, final norm).
double ParametersPerGpu(const ModelSpec& m, const ParallelConfig& c, int stage);

struct MemoryReport {
  std::vector<MemoryBreakdown> per_stage;  // index = pp rank
  int peak_stage = 0;
  double peak_bytes = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::string reason;                    // empty when it fits
  std::vector<std::string> suggestions;  // changes that would fit, each checked
};

// REQUIRES: ValidateLayout ok.
MemoryReport EstimateMemory(const ModelSpec& m, const ParallelConfig& c, double capacity_bytes,
                            int gpus_per_node, const MemoryParams& p = {});

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_MEMORY_H_
