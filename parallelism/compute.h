// parallelism/compute.h — how long one kernel takes on one GPU (roofline + GEMM efficiency).
//
// time = launches · kernel_overhead + max(FLOPs / (peak · efficiency), bytes / (HBM bandwidth ·
// memory efficiency)); matrix products get a shape-dependent efficiency (tile quantisation on the
// GPU's SMs, short-reduction overhead), or the calibration's measured rate where a calibration
// file covers the shape. Each efficiency parameter below names its source; docs/parallelism.md
// explains the model. Promises: deterministic, monotone in FLOPs and bytes.
#ifndef TRAINSIM_PARALLELISM_COMPUTE_H_
#define TRAINSIM_PARALLELISM_COMPUTE_H_

#include <optional>
#include <string>
#include <vector>

#include "comm/calibration.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {

struct GpuSpec {
  std::string name = "A100-SXM4-80GB";
  double peak_flops = 312e12;  // dense tensor-core FLOP/s at the training precision
  double hbm_bytes_per_s = 2.039e12;
  double memory_bytes = 80e9;
  int num_sms = 108;
};

struct ComputeParams {
  // Fraction of dense tensor peak that cuBLAS reaches on large bf16/fp16 GEMMs: ≈ 0.8–0.9 on
  // A100 and H100 (NVIDIA "Matrix Multiplication Background" user guide, Fig. 2: ~250–280 of
  // 312 TFLOP/s for 8192² fp16 on A100). We take the low end, 250/312 ≈ 0.80: the fp16/bf16
  // cuBLAS of 2021–22 that the validation runs used, and the shapes of real layers, rarely
  // reach the best case; Korthikanti Table 4 (22B layer times) is the independent check.
  double gemm_efficiency = 0.80;
  // Equivalent reduction depth of a tile's fixed work (loading/storing the C tile, pipeline
  // fill): a 256×128 tile moves ~(256+128)·k·2 bytes of A/B per k against 256·128·2 of C, so
  // the fixed part equals ~64–128 steps of k; 96 is the middle of that range.
  double gemm_k_half = 96;
  // Achievable fraction of HBM bandwidth for streaming element-wise kernels (STREAM-like copy
  // reaches ~1.7–1.8 of 2.0 TB/s on A100-80GB, ~2.9–3.0 of 3.35 on H100).
  double memory_efficiency = 0.85;
  // Per-kernel fixed cost: launch plus tail (a few µs on A100/H100 without CUDA graphs).
  double kernel_overhead_s = 3e-6;
  // Fused attention (FlashAttention-2 reaches ~50–70% of peak forward on A100, Dao 2023): the
  // fraction of peak its matrix FLOPs run at.
  double flash_attention_efficiency = 0.6;
};

// Efficiency (0..1] of `batch` products C[m×n] += A[m×k]·B[k×n] relative to peak.
double GemmEfficiency(const GpuSpec& gpu, const ComputeParams& p, double batch, double m, double n,
                      double k);

// Measured matrix-product rates that replace GemmEfficiency where a shape is covered.
struct GemmCalibration {
  const comm::Calibration* calibration = nullptr;  // not owned; null = model only
  std::string dtype = "bf16";                      // comm::kCalibDtypes
};

// The calibrated efficiency (measured TFLOP/s / gpu.peak_flops) of `batch` products
// C[m×n] = A[m×k]·B[k×n]: the shape as written, else its transpose (n, m, k); nullopt when
// `cal` is null or covers neither.
std::optional<double> CalibratedGemmEfficiency(const GpuSpec& gpu, const GemmCalibration* cal,
                                               double batch, double m, double n, double k);

// Seconds one kernel of `op` takes, forward or backward; GEMMs use `cal` where it covers them.
double OpTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                     const GemmCalibration* cal = nullptr);

// The distinct matrix-product shapes `ops` run, in first-use order: each GEMM or batched GEMM
// forward (m, n, k) as "<op>", its dgrad (m, k, n) as "<op>.dgrad" and its wgrad (k, n, m) as
// "<op>.wgrad", a shape met again kept once. These are the shapes a calibration is looked up
// with, so `trainsim calibrate` measures exactly these.
std::vector<comm::GemmShape> GemmShapesOf(const std::vector<KernelOp>& ops);

// How many of GemmShapesOf(ops) `cal` covers.
struct GemmCoverage {
  int shapes = 0;
  int calibrated = 0;
};
GemmCoverage CountCalibratedGemms(const GpuSpec& gpu, const GemmCalibration* cal,
                                  const std::vector<KernelOp>& ops);

// Optimizer step for `params` parameters, memory-bound (fused multi-tensor kernels), as
// Megatron-LM's mixed-precision optimizer runs it: the gradient norm for clipping (reads the
// fp32 gradients, 4 B per parameter), then Adam (reads and writes fp32 master weights, momentum
// and variance, reads the gradient, writes the 16-bit weights: ~34 B). With fp16 loss scaling
// (`fp16_loss_scaling`: Float16OptimizerWithFloat16Params, MemoryParams::
// step_grad_bytes_per_param > 0) the gradients are first copied to fp32 (2 B read + 4 B write)
// and unscaled with the inf/nan check (4 B read + 4 B write).
double OptimizerTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, double params,
                            bool fp16_loss_scaling = false);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_COMPUTE_H_
