// parallelism/compute.h — how long one kernel takes on one GPU, per GPU architecture.
//
// time = launches · kernel_overhead + max(FLOPs / (peak · efficiency), bytes / (HBM bandwidth ·
// memory efficiency)). The peak is the one the kernel runs at: dense GEMMs (OpKind::kGemm) at
// FP8 (or MXFP8) when the model's precision is FP8, as Transformer Engine runs them, paying
// TE's casts; attention (kFlashAttention, kBatchedGemm) and everything else at BF16 unless
// ComputeParams::fp8_attention. Matrix products get a shape-dependent efficiency (the
// architecture's large-GEMM ceiling × wave and tile quantisation on the GPU's SMs × a
// short-reduction term), or the calibration's measured rate where a calibration file covers the
// shape; fused attention an efficiency by architecture, head dim, sequence length and causality.
// Every constant is in ArchEfficiencyOf (parallelism/compute_arch.cc) with its source;
// docs/compute.md explains the model and compares it with the published measurements.
// Promises: deterministic, monotone in FLOPs and bytes.
#ifndef TRAINSIM_PARALLELISM_COMPUTE_H_
#define TRAINSIM_PARALLELISM_COMPUTE_H_

#include <optional>
#include <string>
#include <vector>

#include "comm/calibration.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {

// GPU architecture families the efficiencies are set for (NVIDIA architecture whitepapers).
enum class GpuArch {
  kAmpere,          // A100, A800: 108 SMs
  kHopper,          // H100, H200, H800: 132 SMs (SXM)
  kBlackwell,       // B200, GB200: 148 SMs
  kBlackwellUltra,  // B300, GB300: 160 SMs
};
std::string GpuArchName(GpuArch a);

struct GpuSpec {
  std::string name = "A100-SXM4-80GB";
  GpuArch arch = GpuArch::kAmpere;
  int num_sms = 108;
  // Dense tensor-core FLOP/s at the model's training precision: what MFU is counted against
  // (and the GEMM peak for BF16, FP16 and TF32 models).
  double peak_flops = 312e12;
  double peak_bf16_flops = 312e12;  // dense BF16/FP16: attention's peak in an FP8 model
  double peak_fp8_flops = 0;        // dense FP8 (E4M3/E5M2); 0: not supported (Ampere)
  double peak_mxfp8_flops = 0;      // dense MXFP8 (Blackwell's block-scaled FP8); 0: none
  double peak_nvfp4_flops = 0;      // dense NVFP4 (Blackwell's block-scaled FP4); 0: none
  double hbm_bytes_per_s = 2.039e12;
  double memory_bytes = 80e9;
  // This GPU's measured large-GEMM ceilings (fractions of the dense peaks); 0: the
  // architecture's (ArchEfficiency).
  double gemm_ceiling_16bit = 0;
  double gemm_ceiling_fp8 = 0;
};

// The math format of the model's GEMMs (scenario model.precision).
enum class Precision { kBf16, kFp16, kFp8, kTf32 };

// How Transformer Engine scales FP8 tensors (transformer_engine.common.recipe).
enum class Fp8Recipe {
  kDelayed,  // DelayedScaling: per-tensor scale from the amax history; amax taken in the cast
  kCurrent,  // Float8CurrentScaling: per-tensor amax of the tensor itself, one more read pass
  kMxfp8,    // MXFP8BlockScaling (Blackwell): an E8M0 scale per 32 elements, in the cast
  // NVFP4BlockScaling (Blackwell; scenario precision FP4): E2M1 values with an E4M3 scale per
  // 16 elements and an fp32 scale per tensor from its amax; the GEMMs run at the FP4 peak.
  kNvfp4,
};

// Bytes per element of one quantized copy of a tensor in the recipe's format: FP8 values (1),
// plus MXFP8's E8M0 scale per 32 elements, or NVFP4's E2M1 values (1/2) with an E4M3 scale per
// 16. What TE saves of a GEMM input for backward, and each copy its cast writes.
double QuantizedBytesPerElement(Fp8Recipe r);

// Fused-attention implementation (Megatron-Core --attention-backend, or PyTorch's SDPA).
enum class AttentionBackend {
  kTransformerEngine,  // TE's DotProductAttention: FA2 on Ampere, cuDNN on Hopper and later
  kFlashAttention,     // the flash-attn package: FA2 on Ampere, FA3 on Hopper and later
  kSdpa,               // torch's scaled_dot_product_attention: its bundled FA2 on every GPU
};

struct ComputeParams {
  // Per-kernel fixed cost: launch plus tail (a few µs on A100/H100 without CUDA graphs).
  double kernel_overhead_s = 3e-6;
  Precision precision = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // TE's default recipe
  // FP8 attention (TE's fp8_dpa / Megatron --fp8-dot-product-attention): off by default, as in
  // Megatron-Core and TE, so attention runs at the BF16 peak in an FP8 model.
  bool fp8_attention = false;
  // Causal (masked) self-attention: every GPT/Llama-style decoder. The flash-attention rate is
  // per executed FLOP; a causal kernel skips the masked half (KernelOp's FLOPs must count only
  // the executed work, as FlashAttention's benchmarks do) and runs each FLOP more slowly at
  // short sequences (the diagonal blocks).
  bool causal = true;
  // Which fused-attention kernels run: Transformer Engine's choice (Megatron-Core's default
  // TEDotProductAttention), the FlashAttention package (FA2 on Ampere, FA3 on Hopper), or
  // PyTorch's SDPA (FA2 everywhere).
  AttentionBackend attention_backend = AttentionBackend::kTransformerEngine;
  // Micro-batches that share one FP8 cast of each weight: TE keeps the FP8 weight (and its
  // transpose) across micro-batches when Megatron passes is_first_microbatch, so the cast is
  // paid once per step. 1 = every micro-batch casts (conservative).
  int fp8_weight_cast_reuse = 1;
};

// Fused attention's forward rate: peak · ceiling · d/(d + d0) · s/(s + s0), d the head dim
// (capped at d_cap where the kernel stops gaining, 0: no cap), s the sequence length, s0 =
// s0_causal for a causal mask; backward runs at bwd_ratio of it.
struct AttentionCurve {
  double ceiling;
  double d0;
  double d_cap;
  double s0;
  double s0_causal;
  double bwd_ratio;
};

// An architecture's efficiency parameters, each with its published source in compute_arch.cc.
struct ArchEfficiency {
  double gemm_ceiling_16bit;  // large-GEMM fraction of the dense BF16/FP16 (and TF32) peak
  double gemm_ceiling_fp8;    // large-GEMM fraction of the dense FP8 peak
  double gemm_k_half;         // reduction depth (16-bit elements) at which a tile's fixed cost
                              // halves the rate; FP8 doubles it (twice the K per MMA step)
  double memory_efficiency;   // achievable fraction of HBM bandwidth, streaming kernels
  // Transformer Engine's attention backend on this architecture (DotProductAttention: flash-
  // attn on Ampere, cuDNN FusedAttention on Hopper and later) and the FlashAttention package.
  AttentionCurve attn_te;
  AttentionCurve attn_flash;
  AttentionCurve attn_sdpa;  // PyTorch SDPA's FlashAttention-2 kernels on this architecture
};
const ArchEfficiency& ArchEfficiencyOf(GpuArch arch);

// Achievable HBM bytes/s for streaming kernels on `gpu`.
double AchievableHbmBytesPerS(const GpuSpec& gpu);

// The dense peak `op` runs its matrix FLOPs at: FP8/MXFP8 for dense GEMMs of an FP8 model
// (not the logits, which Megatron keeps in a non-TE, BF16 layer), FP8 attention only when
// p.fp8_attention, else the BF16 peak for an FP8 model and gpu.peak_flops otherwise.
double MatmulPeakFlops(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op);
// Whether `op` is a GEMM that Transformer Engine runs in FP8 under `p`.
bool RunsInFp8(const ComputeParams& p, const KernelOp& op);

// Efficiency (0..1] of `batch` products C[m×n] += A[m×k]·B[k×n] relative to the peak they run
// at (16-bit, or FP8 when `fp8`): the architecture's ceiling × the best tile's wave and padding
// efficiency × k / (k + k_half).
// The large-GEMM ceiling `gpu` reaches (16-bit or FP8): its own measurement, else its
// architecture's.
double GemmCeiling(const GpuSpec& gpu, bool fp8);

double GemmEfficiency(const GpuSpec& gpu, const ComputeParams& p, double batch, double m, double n,
                      double k, bool fp8 = false);

// The attention curve `backend` runs on `arch`.
const AttentionCurve& AttentionCurveOf(GpuArch arch, AttentionBackend backend);

// Forward fused-attention efficiency (relative to the attention peak) for head dim `head_dim`
// and sequence length `seq`; backward is the curve's bwd_ratio of it.
double FlashAttentionEfficiency(const GpuSpec& gpu, AttentionBackend backend, bool causal,
                                double head_dim, double seq);

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
// An FP8 GEMM includes TE's casts (Fp8CastSeconds).
double OpTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                     const GemmCalibration* cal = nullptr);

// Seconds of Transformer Engine's FP8 casts around one FP8 GEMM `op` (0 when it runs in
// 16-bit): forward, the input activation (unless the preceding norm or activation writes FP8
// itself) and the weight's share (once per fp8_weight_cast_reuse micro-batches); backward, the
// output gradient. Each cast reads the 16-bit tensor and writes an FP8 copy and its transpose.
double Fp8CastSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward);

// Every op the step simulation prices on one GPU of a `split` layout: one layer of each distinct
// kind the model has (DistinctLayerKinds: dense and MoE transformer layers, windowed or not; a
// hybrid model's Mamba, attention, MLP and MoE layers), then the embedding and the head.
std::vector<KernelOp> PricedOps(const ModelSpec& m, TensorSplit split, int micro_batch);

// The distinct matrix-product shapes `ops` run, in first-use order: each GEMM or batched GEMM
// forward (m, n, k) as "<op>", its dgrad (m, k, n) as "<op>.dgrad" and its wgrad (k, n, m) as
// "<op>.wgrad", a shape met again kept once; products run `streams` at a time (a MoE layer's
// experts) as rounds of that many and the remainder, as OpTimeSeconds prices them. These are the
// shapes a calibration is looked up with, so `trainsim calibrate` measures exactly these.
std::vector<comm::GemmShape> GemmShapesOf(const std::vector<KernelOp>& ops);

// How many of GemmShapesOf(ops) `cal` covers, each shape looked up in its op's type (an FP8
// model's BF16 products in the bf16 rows).
struct GemmCoverage {
  int shapes = 0;
  int calibrated = 0;
};
GemmCoverage CountCalibratedGemms(const GpuSpec& gpu, const ComputeParams& p,
                                  const GemmCalibration* cal, const std::vector<KernelOp>& ops);

// The calibration an op's products are looked up in: `cal`, or its bf16 rows for a product of an
// FP8 model that runs in BF16 (`fp8` false: RunsInFp8).
GemmCalibration CalibrationFor(const GemmCalibration& cal, bool fp8);

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
