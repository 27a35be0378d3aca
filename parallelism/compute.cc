#include "parallelism/compute.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

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

std::optional<double> CalibratedGemmEfficiency(const GpuSpec& gpu, const GemmCalibration* cal,
                                               double batch, double m, double n, double k) {
  if (cal == nullptr || cal->calibration == nullptr || gpu.peak_flops <= 0) return std::nullopt;
  const double peak_tflops = gpu.peak_flops / 1e12;
  const auto b = int64_t(batch), mi = int64_t(m), ni = int64_t(n), ki = int64_t(k);
  // An exact row in either orientation beats a nearest match in the other.
  for (const comm::GemmSample& g : cal->calibration->gemms()) {
    if (g.dtype == cal->dtype && g.batch == b && g.k == ki &&
        ((g.m == mi && g.n == ni) || (g.m == ni && g.n == mi))) {
      return g.tflops / peak_tflops;
    }
  }
  std::optional<double> e =
      cal->calibration->GemmEfficiency(cal->dtype, mi, ni, ki, b, peak_tflops);
  if (!e) e = cal->calibration->GemmEfficiency(cal->dtype, ni, mi, ki, b, peak_tflops);
  return e;
}

namespace {
double MatmulSeconds(const GpuSpec& gpu, const ComputeParams& p, double batch, double m, double n,
                     double k, double bytes, const GemmCalibration* cal) {
  const double flops = 2.0 * batch * m * n * k;
  const std::optional<double> measured = CalibratedGemmEfficiency(gpu, cal, batch, m, n, k);
  const double eff = measured ? *measured : GemmEfficiency(gpu, p, batch, m, n, k);
  return std::max(flops / (gpu.peak_flops * eff),
                  bytes / (gpu.hbm_bytes_per_s * p.memory_efficiency));
}
}  // namespace

double OpTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                     const GemmCalibration* cal) {
  const int kernels = forward ? op.fwd_kernels : op.bwd_kernels;
  const double launch = kernels * p.kernel_overhead_s;
  const double bytes = forward ? op.fwd_bytes : op.bwd_bytes;
  const double bw = gpu.hbm_bytes_per_s * p.memory_efficiency;
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kBatchedGemm: {
      const double b = double(op.batch), m = double(op.m), n = double(op.n), k = double(op.k);
      if (forward) return launch + MatmulSeconds(gpu, p, b, m, n, k, bytes, cal);
      // dgrad: dA[m×k] = dC[m×n]·Bᵀ; wgrad: dB[k×n] = Aᵀ·dC[m×n].
      return launch + MatmulSeconds(gpu, p, b, m, k, n, bytes / 2, cal) +
             MatmulSeconds(gpu, p, b, k, n, m, bytes / 2, cal);
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

std::vector<comm::GemmShape> GemmShapesOf(const std::vector<KernelOp>& ops) {
  std::set<std::array<int64_t, 4>> seen;
  std::vector<comm::GemmShape> out;
  for (const KernelOp& op : ops) {
    if (op.kind != OpKind::kGemm && op.kind != OpKind::kBatchedGemm) continue;
    const std::array<std::array<int64_t, 4>, 3> shapes = {
        {{op.batch, op.m, op.n, op.k}, {op.batch, op.m, op.k, op.n}, {op.batch, op.k, op.n, op.m}}};
    const char* suffix[] = {"", ".dgrad", ".wgrad"};
    for (int i = 0; i < 3; ++i) {
      const auto& s = shapes[size_t(i)];
      if (!seen.insert(s).second) continue;
      out.push_back({op.name + suffix[i], s[1], s[2], s[3], s[0]});
    }
  }
  return out;
}

GemmCoverage CountCalibratedGemms(const GpuSpec& gpu, const GemmCalibration* cal,
                                  const std::vector<KernelOp>& ops) {
  GemmCoverage out;
  for (const comm::GemmShape& s : GemmShapesOf(ops)) {
    ++out.shapes;
    if (CalibratedGemmEfficiency(gpu, cal, double(s.batch), double(s.m), double(s.n),
                                 double(s.k))) {
      ++out.calibrated;
    }
  }
  return out;
}

double OptimizerTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, double params,
                            bool fp16_loss_scaling) {
  // Adam: fp32 master, m, v read + write (24 B); gradient read (2 B, or 4 with fp32 main
  // grads); 16-bit weight write (2 B); Megatron's multi-tensor Adam: ~34 B per parameter.
  constexpr double kAdamBytes = 34;
  constexpr double kGradNormBytes = 4;  // read every fp32 gradient once (clip_grad_norm)
  // fp16: _copy_model_grads_to_main_grads (2 B read, 4 B write) and
  // _unscale_main_grads_and_check_for_nan (4 B read, 4 B write).
  constexpr double kFp16Bytes = 6 + 8;
  const double bytes = kAdamBytes + kGradNormBytes + (fp16_loss_scaling ? kFp16Bytes : 0.0);
  const int kernels = fp16_loss_scaling ? 4 : 2;  // (copy, unscale/check,) grad-norm, Adam
  return kernels * p.kernel_overhead_s +
         params * bytes / (gpu.hbm_bytes_per_s * p.memory_efficiency);
}

}  // namespace trainsim::parallelism
