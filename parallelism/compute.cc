#include "parallelism/compute.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace trainsim::parallelism {

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

GemmCalibration CalibrationFor(const GemmCalibration& cal, bool fp8) {
  // An FP8 model's products that stay in BF16 (the logits, the router, BF16 attention) are
  // measured in calibrate's bf16 rows (it passes --dtypes fp8,bf16).
  if (!fp8 && cal.dtype == "fp8") return {cal.calibration, "bf16"};
  return cal;
}

namespace {
// (1,200 / 1,979) / (740 / 989): FP8 attention's fraction of peak over BF16's (FA3 paper).
constexpr double kFp8AttentionFactor = 0.81;

// Seconds of `batch` products C[m×n] = A[m×k]·B[k×n] at `peak`, moving `bytes`.
double MatmulSeconds(const GpuSpec& gpu, const ComputeParams& p, double peak, bool fp8,
                     double batch, double m, double n, double k, double bytes,
                     const GemmCalibration* cal) {
  const double flops = 2.0 * batch * m * n * k;
  std::optional<double> measured;
  if (cal != nullptr) {
    const GemmCalibration typed = CalibrationFor(*cal, fp8);
    measured = CalibratedGemmEfficiency(gpu, &typed, batch, m, n, k);
  }
  const double rate =
      measured ? *measured * gpu.peak_flops : peak * GemmEfficiency(gpu, p, batch, m, n, k, fp8);
  return std::max(flops / rate, bytes / AchievableHbmBytesPerS(gpu));
}

// Seconds of `batch` products run as separate GEMMs `streams` at a time (0: one kernel over the
// batch): each round of concurrent GEMMs shares the SMs, so its tiles form one pool of waves;
// rounds run one after another. Bytes are split in proportion to the products.
double GroupedMatmulSeconds(const GpuSpec& gpu, const ComputeParams& p, double peak, bool fp8,
                            int streams, double batch, double m, double n, double k, double bytes,
                            const GemmCalibration* cal) {
  if (streams <= 0 || batch <= streams) {
    return MatmulSeconds(gpu, p, peak, fp8, batch, m, n, k, bytes, cal);
  }
  const double full = std::floor(batch / streams), rest = batch - full * streams;
  const double per = bytes / batch;
  double t = full * MatmulSeconds(gpu, p, peak, fp8, streams, m, n, k, per * streams, cal);
  if (rest > 0) t += MatmulSeconds(gpu, p, peak, fp8, rest, m, n, k, per * rest, cal);
  return t;
}

// HBM bytes per element TE's cast writes besides reading the 16-bit input (2 B): the FP8 copy
// and its transpose (Hopper's FP8 GEMMs take only the TN layout, so TE's cast_transpose
// writes both; MXFP8 likewise keeps row- and column-wise copies, as its scales run along K),
// plus MXFP8's E8M0 scale per 32 elements per copy. Current scaling reads the input once more
// for its amax before casting (TE: compute_amax, then quantize); delayed scaling takes the
// amax in the cast kernel itself (transformer_engine/common/recipe/__init__.py, TE docs "Using
// FP8 with Transformer Engine").
double CastBytesPerElement(Fp8Recipe r) {
  const double copy = QuantizedBytesPerElement(r);
  switch (r) {
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kMxfp8:
      return 2 + 2 * copy;
    case Fp8Recipe::kCurrent:
    // NVFP4 also reads the input for its per-tensor fp32 scale's amax first; the random
    // Hadamard transform of the weight-gradient operands and stochastic rounding run inside
    // the cast (TE's NVFP4 quantizer), no extra pass.
    case Fp8Recipe::kNvfp4:
      return 2 + 2 + 2 * copy;
  }
  return 4;
}

// Whether TE writes this GEMM's input in FP8 from the kernel before it: LayerNormLinear (qkv)
// and LayerNormMLP (fc1) quantise in the norm kernel, LayerNormMLP's fc2 input in the
// GELU/SwiGLU kernel; the attention projection's input (DotProductAttention's BF16 output) is
// cast by a kernel of its own (transformer_engine/pytorch/module/{layernorm_linear,
// layernorm_mlp,linear}.py).
bool InputCastFused(const KernelOp& op) {
  // Mamba's in_proj is a TELayerNormColumnParallelLinear too (mamba_layer_specs.py).
  return op.name == "qkv" || op.name == "mlp_up" || op.name == "mlp_gate_up" ||
         op.name == "mlp_down" || op.name == "mamba_in_proj";
}
}  // namespace

double QuantizedBytesPerElement(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kCurrent:
      return 1;
    case Fp8Recipe::kMxfp8:
      return 1 + 1.0 / 32;
    case Fp8Recipe::kNvfp4:
      return 0.5 + 1.0 / 16;
  }
  return 1;
}

double Fp8CastSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op,
                      bool forward) {
  if (op.kind != OpKind::kGemm || !RunsInFp8(p, op)) return 0;
  const double per_elem = CastBytesPerElement(p.fp8_recipe);
  const double b = double(op.batch), m = double(op.m), n = double(op.n), k = double(op.k);
  double elements = 0;
  int kernels = 0;
  if (forward) {
    if (!InputCastFused(op)) {
      elements += b * m * k;  // the activation input A[m×k]
      ++kernels;
    }
    // The weight B[k×n] and its transpose, once per fp8_weight_cast_reuse micro-batches.
    elements += b * k * n / std::max(p.fp8_weight_cast_reuse, 1);
    ++kernels;
  } else {
    elements += b * m * n;  // the output gradient dC[m×n] (E5M2) for dgrad and wgrad
    ++kernels;
  }
  // A grouped GEMM (one GEMM per expert) quantises each expert's tensors with a kernel of its
  // own (TE's split quantize over the m_splits).
  if (op.streams > 0) kernels *= int(op.batch);
  return kernels * p.kernel_overhead_s + elements * per_elem / AchievableHbmBytesPerS(gpu);
}

double OpTimeSeconds(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                     const GemmCalibration* cal) {
  const int kernels = forward ? op.fwd_kernels : op.bwd_kernels;
  const double launch = kernels * p.kernel_overhead_s;
  double bytes = forward ? op.fwd_bytes : op.bwd_bytes;
  const double bw = AchievableHbmBytesPerS(gpu);
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kBatchedGemm: {
      const double b = double(op.batch), m = double(op.m), n = double(op.n), k = double(op.k);
      const double peak = MatmulPeakFlops(gpu, p, op);
      const bool fp8 = RunsInFp8(p, op);
      // FP8 operands are 1 byte, NVFP4's half a byte and a scale per 16 (the 16-bit result is
      // written as before).
      if (fp8) {
        const double ab = b * (m * k + k * n), c = b * m * n;
        const bool fp4 = p.fp8_recipe == Fp8Recipe::kNvfp4 && op.kind == OpKind::kGemm;
        const double operand = fp4 ? 0.5 + 1.0 / 16 : 1.0;
        bytes = (forward ? 1.0 : 2.0) * (ab * operand + c * 2.0);
      }
      const double cast = Fp8CastSeconds(gpu, p, op, forward);
      const int st = op.streams;
      if (forward) {
        return launch + cast + GroupedMatmulSeconds(gpu, p, peak, fp8, st, b, m, n, k, bytes, cal);
      }
      // dgrad: dA[m×k] = dC[m×n]·Bᵀ; wgrad: dB[k×n] = Aᵀ·dC[m×n].
      return launch + cast +
             GroupedMatmulSeconds(gpu, p, peak, fp8, st, b, m, k, n, bytes / 2, cal) +
             GroupedMatmulSeconds(gpu, p, peak, fp8, st, b, k, n, m, bytes / 2, cal);
    }
    case OpKind::kFlashAttention: {
      const double flops = forward ? op.fwd_matmul_flops : op.bwd_matmul_flops + op.bwd_other_flops;
      const AttentionCurve& c = AttentionCurveOf(gpu.arch, p.attention_backend);
      // The key extent a query tile runs over: the sequence, or a sliding window's band.
      const double seq = double(std::min(op.m, op.n));
      double eff =
          FlashAttentionEfficiency(gpu, p.attention_backend, op.causal, double(op.k), seq) *
          (forward ? 1.0 : c.bwd_ratio);
      // FP8 attention reaches a smaller fraction of its (doubled) peak: FA3 paper abstract,
      // BF16 up to 740 TFLOP/s (75% of 989) and FP8 "close to 1.2 PFLOPS" (61% of 1,979).
      if (RunsInFp8(p, op)) eff *= kFp8AttentionFactor;
      return launch + std::max(flops / (MatmulPeakFlops(gpu, p, op) * eff), bytes / bw);
    }
    case OpKind::kMemoryBound:
      return launch + bytes / bw;
  }
  return launch;
}

std::vector<KernelOp> PricedOps(const ModelSpec& m, TensorSplit split, int micro_batch) {
  std::vector<KernelOp> ops;
  for (const LayerKind& kind : DistinctLayerKinds(m)) {
    std::vector<KernelOp> layer = LayerOps(m, split, micro_batch, kind);
    ops.insert(ops.end(), layer.begin(), layer.end());
  }
  for (std::vector<KernelOp> part :
       {EmbeddingOps(m, split, micro_batch), HeadOps(m, split, micro_batch)}) {
    ops.insert(ops.end(), part.begin(), part.end());
  }
  return ops;
}

std::vector<comm::GemmShape> GemmShapesOf(const std::vector<KernelOp>& ops) {
  std::set<std::array<int64_t, 4>> seen;
  std::vector<comm::GemmShape> out;
  for (const KernelOp& op : ops) {
    if (op.kind != OpKind::kGemm && op.kind != OpKind::kBatchedGemm) continue;
    // GroupedMatmulSeconds' lookups: products run `streams` at a time are priced per round, a
    // batch of `streams`, and the last round's remainder.
    std::vector<int64_t> batches = {op.batch};
    if (op.streams > 0 && op.batch > op.streams) {
      batches = {op.streams};
      if (op.batch % op.streams != 0) batches.push_back(op.batch % op.streams);
    }
    for (int64_t b : batches) {
      const std::array<std::array<int64_t, 4>, 3> shapes = {
          {{b, op.m, op.n, op.k}, {b, op.m, op.k, op.n}, {b, op.k, op.n, op.m}}};
      const char* suffix[] = {"", ".dgrad", ".wgrad"};
      for (int i = 0; i < 3; ++i) {
        const auto& s = shapes[size_t(i)];
        if (!seen.insert(s).second) continue;
        out.push_back({op.name + suffix[i], s[1], s[2], s[3], s[0]});
      }
    }
  }
  return out;
}

GemmCoverage CountCalibratedGemms(const GpuSpec& gpu, const ComputeParams& p,
                                  const GemmCalibration* cal, const std::vector<KernelOp>& ops) {
  GemmCoverage out;
  std::set<std::pair<bool, std::array<int64_t, 4>>> seen;
  for (const KernelOp& op : ops) {
    const bool fp8 = RunsInFp8(p, op);
    for (const comm::GemmShape& s : GemmShapesOf({op})) {
      if (!seen.insert({fp8, {s.batch, s.m, s.n, s.k}}).second) continue;
      ++out.shapes;
      if (cal == nullptr) continue;
      const GemmCalibration typed = CalibrationFor(*cal, fp8);
      if (CalibratedGemmEfficiency(gpu, &typed, double(s.batch), double(s.m), double(s.n),
                                   double(s.k))) {
        ++out.calibrated;
      }
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
  return kernels * p.kernel_overhead_s + params * bytes / AchievableHbmBytesPerS(gpu);
}

}  // namespace trainsim::parallelism
