// The per-architecture efficiency parameters of the kernel-time model and the efficiency
// functions built on them (GEMM by shape, flash attention by head dim, sequence and causality).
// Every number names its source; docs/compute.md compares the result with the measurements in
// the project's published validation data (shared/validation/azure_gemm_cublaslt_tflops.csv,
// flash_attention_kernel_tflops.csv).
#include <algorithm>
#include <cmath>

#include "parallelism/compute.h"

namespace trainsim::parallelism {

std::string GpuArchName(GpuArch a) {
  switch (a) {
    case GpuArch::kAmpere:
      return "ampere";
    case GpuArch::kHopper:
      return "hopper";
    case GpuArch::kBlackwell:
      return "blackwell";
    case GpuArch::kBlackwellUltra:
      return "blackwell-ultra";
  }
  return "ampere";
}

const ArchEfficiency& ArchEfficiencyOf(GpuArch arch) {
  // GEMM ceilings: Maximum Achievable Matmul FLOPS (MAMF), the best cuBLAS rate over a
  // brute-force search of shapes (S. Bekman, ml-engineering, compute/accelerator/README.md,
  // "Maximum Achievable Matmul FLOPS comparison table", BF16 and FP8 tables), and Azure's
  // cuBLASLt sweeps (shared/validation/azure_gemm_cublaslt_tflops.csv).
  // Attention: fitted once per architecture to every legible row of FlashAttention's published
  // benchmarks (flash_attention_kernel_tflops.csv: FA2 on A100 fwd+bwd, FA3 on H100 forward),
  // the same form for all: rate = peak · c · d/(d + d0) · s/(s + s0).
  // FA2 on A100 (README, 22 legible fwd+bwd rows): MAPE 1.5%; 0.78 · 128/144 = 0.69 of peak
  // forward at long sequences, the FA2 paper's "up to 73%". Backward: FA2 paper (Dao 2023),
  // forward up to 73% of peak, backward up to 63% (0.86); the H100 FA2 rows (forward 370,
  // fwd+bwd 338 TFLOP/s at d 128) imply 0.88: 0.87.
  static constexpr AttentionCurve kFa2Ampere = {0.78, 16, 0, 150, 500, 0.87};
  // FA3 on H100, forward (35 legible rows, d 64/128/256, causal and not): MAPE 4.1%;
  // 0.95 · 128/184 = 0.66 of peak at long sequences (FA3 paper: up to 740 TFLOP/s at d 256).
  // Backward: FA3 paper (Shah et al. 2024), 1.5–1.75× FA2's; FA2's H100 backward is ~327
  // TFLOP/s at d 128, so FA3's ~520 against a 648 forward: 0.80.
  static constexpr AttentionCurve kFa3Hopper = {0.95, 56, 0, 200, 800, 0.80};
  // cuDNN on H100 (TE's FusedAttention, which TE prefers to flash-attn on sm90+:
  // transformer_engine/pytorch/attention/dot_product_attention/utils.py, "Disabling
  // FlashAttention to give FusedAttention preference on Hopper+"), forward, the 23 legible
  // rows at d 64 and 128: MAPE 3.1%. It gains nothing past d 128 (published 581 at d 256
  // against 595–617 at 128): d_cap 128. Backward: no cuDNN figure is given; FA3's ratio taken.
  static constexpr AttentionCurve kCudnnHopper = {0.92, 80, 128, 50, 400, 0.80};
  // FA2 on H100: what PyTorch's SDPA runs there. SDPA picks its backend by a fixed priority
  // that puts its bundled FlashAttention-2 first, cuDNN only when asked for (pytorch/pytorch
  // #142132: SDPA 329 TFLOP/s where cuDNN and FA3 reach 631 on H100, d 128, s 4608; PyTorch
  // 2.5–2.6). FA2 uses Ampere's mma.sync, not Hopper's wgmma, so it stays near half of FA3.
  // Fitted to the 48 legible H100 FA2 rows (fwd+bwd non-causal at d 64/128 from the FA2
  // figure, forward at d 64/128/256, causal and not, from the FA3 figure): MAPE 4.5%; 0.38 ·
  // 128/140 = 0.35 of peak forward at long sequences (fwd 344 against the published 370 at
  // d 128). It gains nothing past d 128 (326 at d 256): d_cap 128. Backward: fitted with the
  // rest (fwd+bwd 322 against a forward 344 at d 128, s 8k: 0.92). Azure's PyTorch 2.4 FA2
  // benchmark on ND H100 v5, d 128, s 8192: 327.9 (within the fit's range, 322–347).
  static constexpr AttentionCurve kFa2Hopper = {0.38, 12, 128, 100, 400, 0.92};
  // FA2 on Blackwell: the same Ampere-style kernels, at the clocks of a bigger chip. Azure's
  // benchmark (PyTorch 2.6, CUDA 12.8) gives 373.9 TFLOP/s on GB200 against 327.9 on H100 at
  // the same shape: 1.140×. As a fraction of GB200's 2,500 BF16 peak: 0.38 · 1.140 · 989 /
  // 2,500 = 0.171 (its one published point; the shape of the curve is Hopper's).
  static constexpr AttentionCurve kFa2Blackwell = {0.171, 12, 128, 100, 400, 0.92};
  static const ArchEfficiency kAmpere = {
      // Azure A100 cuBLASLt FP16: 250.8 TFLOP/s at 6144×12288×12288 and 253.7 at 8192³ (0.80–
      // 0.81 of 312); NVIDIA "Matrix Multiplication Background" Fig. 2 (~250–280 on 8192²).
      // The cuBLAS of 2021–22 that the A100 validation rows ran reached the low end: 0.80.
      .gemm_ceiling_16bit = 0.80,
      .gemm_ceiling_fp8 = 0.80,  // no FP8 on Ampere (unused)
      // A 256×128 tile moves ~(256+128)·k·2 bytes of A/B per k against 256·128·2 of C, so its
      // fixed work (C load/store, pipeline fill) equals ~64–128 steps of k; 96 is the middle.
      .gemm_k_half = 96,
      // STREAM-like copy reaches ~1.7–1.8 of 2.0 TB/s on A100-80GB.
      .memory_efficiency = 0.85,
      // TE runs flash-attn (FA2) on Ampere: FusedAttention is preferred only on sm90+.
      .attn_te = kFa2Ampere,
      .attn_flash = kFa2Ampere,
      .attn_sdpa = kFa2Ampere,
  };
  static const ArchEfficiency kHopper = {
      // MAMF H100 SXM BF16: 794.5 of 989 (80.3%); GH200 83.8%.
      .gemm_ceiling_16bit = 0.80,
      // MAMF FP8: H100 1,402.6 of 1,979 (70.9%), H200 1,453.4 (73.4%); Azure cuBLASLt H100
      // 1,382 at 32768³ (69.8%), H200 1,366 at 16384³ (69.0%).
      .gemm_ceiling_fp8 = 0.72,
      // Fitted once on the 18 Azure H100/H200 FP8 rows (k_half 384 FP8 elements = 192
      // 16-bit ones: a wgmma stage consumes twice the K in FP8). Hopper's deeper pipelines
      // (TMA, warp-specialised producer/consumer) cost more k-steps to fill than Ampere's.
      .gemm_k_half = 192,
      // STREAM-like copy reaches ~2.9–3.0 of 3.35 TB/s on H100 SXM; 0.85 kept as for A100.
      .memory_efficiency = 0.85,
      .attn_te = kCudnnHopper,
      .attn_flash = kFa3Hopper,
      .attn_sdpa = kFa2Hopper,
  };
  static const ArchEfficiency kBlackwell = {
      // MAMF BF16: B200 1,745 of 2,250 (77.6%), B300 78.6%, GB200 1,822 of 2,500 (72.9%).
      .gemm_ceiling_16bit = 0.76,
      // MAMF FP8: B200 3,432.5 of 4,500 (76.3%), B300 74.5%, GB200 3,615.6 of 5,000 (72.3%).
      // (Azure's GB200 FP8 sweep, CUDA 12.8, stops at ~2,900 = 58%: an early cuBLAS; see
      // docs/compute.md.)
      .gemm_ceiling_fp8 = 0.74,
      .gemm_k_half = 192,  // as Hopper: no published Blackwell shape sweep to set it apart
      // B200 CUDA-samples bandwidthTest, device to device: "over 6,000 GB/s" of 8,000
      // (TogetherAI B200 benchmark, newmind.ai, CUDA 12.8): at least 0.75; 0.80 taken.
      .memory_efficiency = 0.80,
      // Assumed: cuDNN and FlashAttention-4 on Blackwell reach the same fraction of the BF16
      // peak as cuDNN and FA3 on Hopper (the one published GB200 row is FA2, which does not
      // use Blackwell's tcgen05 tensor cores: 374 TFLOP/s).
      .attn_te = kCudnnHopper,
      .attn_flash = kFa3Hopper,
      .attn_sdpa = kFa2Blackwell,
  };
  switch (arch) {
    case GpuArch::kAmpere:
      return kAmpere;
    case GpuArch::kHopper:
      return kHopper;
    case GpuArch::kBlackwell:
    case GpuArch::kBlackwellUltra:  // B300's MAMF is within 2% of B200's (table above)
      return kBlackwell;
  }
  return kAmpere;
}

double AchievableHbmBytesPerS(const GpuSpec& gpu) {
  return gpu.hbm_bytes_per_s * ArchEfficiencyOf(gpu.arch).memory_efficiency;
}

bool RunsInFp8(const ComputeParams& p, const KernelOp& op) {
  if (p.precision != Precision::kFp8) return false;
  if (op.kind == OpKind::kGemm) {
    // Megatron's output layer is a tensor_parallel.ColumnParallelLinear, not a TE module: it
    // runs in BF16 under --fp8 (megatron/core/models/gpt/gpt_model.py).
    // The MoE router's gating GEMM is a plain torch linear kept in fp32/bf16 by Megatron-Core
    // (TopKRouter, --moe-router-dtype), not a TE module either.
    return op.name != "logits" && op.name != "router";
  }
  // Mamba's SSD scan is mamba_ssm's Triton kernels, BF16 whatever the recipe.
  return p.fp8_attention && op.name != "ssd_scan" &&
         (op.kind == OpKind::kFlashAttention || op.kind == OpKind::kBatchedGemm);
}

double MatmulPeakFlops(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op) {
  if (RunsInFp8(p, op)) {
    if (p.fp8_recipe == Fp8Recipe::kMxfp8 && gpu.peak_mxfp8_flops > 0) {
      return gpu.peak_mxfp8_flops;
    }
    // NVFP4 is for the linear layers; FP8 attention under it stays FP8.
    if (p.fp8_recipe == Fp8Recipe::kNvfp4 && op.kind == OpKind::kGemm && gpu.peak_nvfp4_flops > 0) {
      return gpu.peak_nvfp4_flops;
    }
    if (gpu.peak_fp8_flops > 0) return gpu.peak_fp8_flops;
  }
  if (p.precision == Precision::kFp8 && gpu.peak_bf16_flops > 0) return gpu.peak_bf16_flops;
  return gpu.peak_flops;
}

double GemmCeiling(const GpuSpec& gpu, const bool fp8) {
  const double own = fp8 ? gpu.gemm_ceiling_fp8 : gpu.gemm_ceiling_16bit;
  if (own > 0) return own;
  const ArchEfficiency& a = ArchEfficiencyOf(gpu.arch);
  return fp8 ? a.gemm_ceiling_fp8 : a.gemm_ceiling_16bit;
}

double GemmEfficiency(const GpuSpec& gpu, const ComputeParams& /*p*/, double batch, double m,
                      double n, double k, bool fp8) {
  const ArchEfficiency& a = ArchEfficiencyOf(gpu.arch);
  const double ceiling = GemmCeiling(gpu, fp8);
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return ceiling;
  // cuBLAS chooses among tile shapes; smaller tiles re-read more of A and B per FLOP and reach
  // less of peak (CUTLASS profiler: 128×128 ≈ 5% below 256×128, 128×64 ≈ 15% below).
  struct Tile {
    double tm, tn, rel;
  };
  static constexpr Tile kTiles[] = {
      {256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.95}, {128, 64, 0.85}, {64, 64, 0.7}};
  const double sms = std::max(gpu.num_sms, 1);
  double best = 0;
  for (const Tile& t : kTiles) {
    // Wave quantisation: tiles run in ceil(tiles / SMs) waves, the last one partly idle;
    // tile quantisation: M and N padded up to whole tiles (NVIDIA, "Matrix Multiplication
    // Background" user guide, §§ "Tile Quantization", "Wave Quantization").
    const double tiles_m = std::ceil(m / t.tm), tiles_n = std::ceil(n / t.tn);
    const double tiles = batch * tiles_m * tiles_n;
    const double waves = std::ceil(tiles / sms);
    const double wave_eff = tiles / (waves * sms);
    const double pad_eff = (m * n) / (tiles_m * t.tm * tiles_n * t.tn);
    best = std::max(best, t.rel * wave_eff * pad_eff);
  }
  // FP8 consumes twice the K per MMA step at the same tile bytes, so the fixed per-tile work
  // equals twice as many k-elements.
  const double k_half = a.gemm_k_half * (fp8 ? 2.0 : 1.0);
  return ceiling * best * (k / (k + k_half));
}

const AttentionCurve& AttentionCurveOf(GpuArch arch, AttentionBackend backend) {
  const ArchEfficiency& a = ArchEfficiencyOf(arch);
  switch (backend) {
    case AttentionBackend::kTransformerEngine:
      return a.attn_te;
    case AttentionBackend::kFlashAttention:
      return a.attn_flash;
    case AttentionBackend::kSdpa:
      return a.attn_sdpa;
  }
  return a.attn_te;
}

double FlashAttentionEfficiency(const GpuSpec& gpu, AttentionBackend backend, bool causal,
                                double head_dim, double seq) {
  const AttentionCurve& c = AttentionCurveOf(gpu.arch, backend);
  double d = std::max(head_dim, 1.0);
  if (c.d_cap > 0) d = std::min(d, c.d_cap);
  const double s = std::max(seq, 1.0);
  return c.ceiling * d / (d + c.d0) * s / (s + (causal ? c.s0_causal : c.s0));
}

}  // namespace trainsim::parallelism
