#include "parallelism/compute.h"

#include <algorithm>
#include <cmath>

namespace trainsim::parallelism {

double GemmEfficiency(const GpuSpec& gpu, const ComputeParams& p, double batch, double m, double n,
                      double k) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return p.gemm_efficiency;
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
    const double tiles_m = std::ceil(m / t.tm), tiles_n = std::ceil(n / t.tn);
    const double tiles = batch * tiles_m * tiles_n;
    const double waves = std::ceil(tiles / sms);
    const double wave_eff = tiles / (waves * sms);
    const double pad_eff = (m * n) / (tiles_m * t.tm * tiles_n * t.tn);
    best = std::max(best, t.rel * wave_eff * pad_eff);
  }
  return p.gemm_efficiency * best * (k / (k + p.gemm_k_half));
}

namespace {
double MatmulSeconds(const GpuSpec& gpu, const ComputeParams& p, double batch, double m, double n,
                     double k, double bytes) {
  const double flops = 2.0 * batch * m * n * k;
  const double eff = GemmEfficiency(gpu, p, batch, m, n, k);
  return std::max(flops / (gpu.peak_flops * eff),
                  bytes / (gpu.hbm_bytes_per_s * p.memory_efficiency));
}
}  // namespace

double OpTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, const Op& op, bool forward) {
  const int kernels = forward ? op.fwd_kernels : op.bwd_kernels;
  const double launch = kernels * p.kernel_overhead_s;
  const double bytes = forward ? op.fwd_bytes : op.bwd_bytes;
  const double bw = gpu.hbm_bytes_per_s * p.memory_efficiency;
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kBatchedGemm: {
      const double b = double(op.batch), m = double(op.m), n = double(op.n), k = double(op.k);
      if (forward) return launch + MatmulSeconds(gpu, p, b, m, n, k, bytes);
      // dgrad: dA[m×k] = dC[m×n]·Bᵀ; wgrad: dB[k×n] = Aᵀ·dC[m×n].
      return launch + MatmulSeconds(gpu, p, b, m, k, n, bytes / 2) +
             MatmulSeconds(gpu, p, b, k, n, m, bytes / 2);
    }
    case OpKind::kFlashAttention: {
      const double flops = forward ? op.fwd_matmul_flops : op.bwd_matmul_flops + op.bwd_other_flops;
      return launch + std::max(flops / (gpu.peak_flops * p.flash_attention_efficiency), bytes / bw);
    }
    case OpKind::kMemoryBound:
      return launch + bytes / bw;
  }
  return launch;
}

double OptimizerTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, double params) {
  // fp32 master, m, v: read + write (24 B); gradient read (2 B, or 4 with fp32 main grads);
  // bf16 weight write (2 B); Megatron's multi-tensor Adam: ~34 B per parameter, streaming.
  constexpr double kBytesPerParam = 34;
  constexpr int kKernels = 4;  // unscale/check, grad-norm, clip, Adam (multi-tensor apply)
  return kKernels * p.kernel_overhead_s +
         params * kBytesPerParam / (gpu.hbm_bytes_per_s * p.memory_efficiency);
}

}  // namespace trainsim::parallelism
