// The time of one transformer layer against Korthikanti et al. 2022 Table 4
// (docs/evidence/recompute2022_layer_22b_ms.csv): 22B model (h 6144, 64 heads, seq 2048), TP 8 on
// A100-80GB DGX nodes, micro-batch 4. An independent check of the compute and TP-communication
// models below the step simulation: nothing here was fitted to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "comm/collective.h"
#include "comm/topology.h"
#include "parallelism/compute.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {
namespace {

struct LayerTimes {
  double fwd_ms, bwd_ms;
};

LayerTimes Predict(bool sp, Recompute recompute) {
  ModelSpec m;
  m.num_layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.seq_len = 2048;
  m.vocab = 51200;
  comm::TopologySpec spec;
  spec.nodes = 1;
  spec.gpus_per_node = 8;
  spec.nvlink_GBps = 300;
  spec.nic_Gbps = 200;
  spec.pcie_GBps = 32;
  const comm::Topology topo = comm::Topology::Build(spec).value();
  const GpuSpec gpu;  // A100-SXM4-80GB
  const ComputeParams p;
  const TensorSplit split{8, sp};
  double fwd = 0, bwd = 0, recompute_s = 0;
  for (const KernelOp& op : LayerOps(m, split, 4)) {
    fwd += OpTimeSeconds(gpu, p, op, true);
    bwd += OpTimeSeconds(gpu, p, op, false);
    if (recompute == Recompute::kFull ||
        (recompute == Recompute::kSelective && (op.recomputed_by & kRecomputeCoreAttn))) {
      recompute_s += OpTimeSeconds(gpu, p, op, true);
    }
  }
  double tp_fwd = 0, tp_bwd = 0;
  for (const TpCollective& c : LayerTpCollectives(m, split, 4)) {
    comm::CollectiveSpec cs;
    cs.op = c.kind == TpCollectiveKind::kAllReduce       ? comm::Op::kAllReduce
            : c.kind == TpCollectiveKind::kReduceScatter ? comm::Op::kReduceScatter
                                                         : comm::Op::kAllGather;
    cs.gpus = comm::FirstGpus(8);
    cs.bytes = uint64_t(c.bytes);
    const double t = comm::EstimateCollective(topo, cs).value().time.seconds();
    (c.forward ? tp_fwd : tp_bwd) += t;
  }
  if (recompute == Recompute::kFull) recompute_s += tp_fwd;
  return {1e3 * (fwd + tp_fwd), 1e3 * (bwd + tp_bwd + recompute_s)};
}

void ExpectWithin(LayerTimes got, double fwd_ms, double bwd_ms, double tol) {
  EXPECT_NEAR(got.fwd_ms, fwd_ms, tol * fwd_ms);
  EXPECT_NEAR(got.bwd_ms, bwd_ms, tol * bwd_ms);
}

TEST(LayerTimeTest, MatchesKorthikantiTable4WithinTenPercent) {
  ExpectWithin(Predict(false, Recompute::kNone), 7.7, 11.9, 0.10);       // baseline
  ExpectWithin(Predict(true, Recompute::kNone), 7.2, 11.8, 0.10);        // + SP
  ExpectWithin(Predict(false, Recompute::kFull), 7.7, 19.5, 0.10);       // full recompute
  ExpectWithin(Predict(false, Recompute::kSelective), 7.7, 13.2, 0.10);  // selective
  ExpectWithin(Predict(true, Recompute::kSelective), 7.2, 13.1, 0.10);   // selective + SP
}

TEST(LayerTimeTest, RecomputeOverheadsHaveThePublishedOrder) {
  const double base = Predict(false, Recompute::kNone).bwd_ms;
  const double full = Predict(false, Recompute::kFull).bwd_ms;
  const double sel = Predict(false, Recompute::kSelective).bwd_ms;
  // Table 4: full recompute +39% of the layer, selective +7%.
  EXPECT_GT(full - base, 4 * (sel - base));
  EXPECT_GT(sel, base);
}

TEST(LayerTimeTest, DoublingLoadImbalanceDoublesTheExpertGemmTime) {
  // Mixtral 8x7B layer (h 4096, 8 experts of 14336, top 2, SwiGLU), EP 8, TP 1, micro-batch 2 of
  // 4096 tokens on an A100: each GPU's grouped GEMMs see 16384 routed tokens at balance. The
  // busiest expert sets the pace, so twice the imbalance is twice the rows: the GEMMs stay
  // large enough that their efficiency barely moves (wave quantisation aside).
  ModelSpec m;
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.swiglu = true;
  m.seq_len = 4096;
  m.vocab = 32000;
  m.flash_attention = true;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  const GpuSpec gpu;
  const ComputeParams p;
  TensorSplit split;
  split.ep = 8;
  auto expert_seconds = [&](double imbalance) {
    m.moe.load_imbalance = imbalance;
    double t = 0;
    for (const KernelOp& op : LayerOps(m, split, 2, true)) {
      if (op.name.rfind("expert_", 0) == 0) {
        t += OpTimeSeconds(gpu, p, op, true) + OpTimeSeconds(gpu, p, op, false);
      }
    }
    return t;
  };
  EXPECT_NEAR(expert_seconds(2) / expert_seconds(1), 2.0, 0.05);
}

TEST(LayerTimeTest, Fp8OnHopperSpeedsUpOnlyTheDenseGemms) {
  // A Llama-3-8B-like layer (h 4096, 32 heads, 8 KV heads, SwiGLU 14336, seq 8192) on one
  // H100: FP8 runs the dense GEMMs at 0.72 × 1,979 instead of 0.80 × 989 TFLOP/s (at most 1.8×)
  // and pays TE's casts; attention and element-wise kernels take the same time. So the layer
  // is faster, but by less than 1.8×.
  ModelSpec m;
  m.num_layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.swiglu = true;
  m.flash_attention = true;
  m.dropout = false;
  m.seq_len = 8192;
  m.vocab = 128256;
  GpuSpec h100;
  h100.name = "H100-SXM-80GB";
  h100.arch = GpuArch::kHopper;
  h100.num_sms = 132;
  h100.peak_flops = h100.peak_bf16_flops = 989.4e12;
  h100.peak_fp8_flops = 1978.9e12;
  h100.hbm_bytes_per_s = 3.35e12;
  ComputeParams bf16, fp8;
  fp8.precision = Precision::kFp8;
  fp8.fp8_weight_cast_reuse = 8;
  double t16 = 0, t8 = 0;
  for (const KernelOp& op : LayerOps(m, TensorSplit{1, false}, 1)) {
    const double a = OpTimeSeconds(h100, bf16, op, true) + OpTimeSeconds(h100, bf16, op, false);
    const double b = OpTimeSeconds(h100, fp8, op, true) + OpTimeSeconds(h100, fp8, op, false);
    if (op.kind == OpKind::kGemm) {
      EXPECT_LT(b, a) << op.name;
    } else {
      EXPECT_EQ(b, a) << op.name;
    }
    t16 += a;
    t8 += b;
  }
  std::printf("  layer fwd+bwd: BF16 %.2f ms, FP8 %.2f ms, speedup %.2fx\n", 1e3 * t16, 1e3 * t8,
              t16 / t8);
  EXPECT_GT(t16 / t8, 1.1);
  EXPECT_LT(t16 / t8, 1.8);
}

TEST(OptimizerTimeTest, Fp16LossScalingAddsTheGradientCopyAndUnscale) {
  // Memory-bound at the HBM rate × efficiency: bf16 (fp32 main grads) streams Adam's 34 B plus
  // the gradient-norm read, 4 B, per parameter; fp16 also copies the gradients to fp32
  // (2 + 4 B) and unscales them (4 + 4 B): 14 B more, and two more kernels.
  const GpuSpec gpu;
  const ComputeParams p;
  const double params = 1e9;
  const double rate = AchievableHbmBytesPerS(gpu);
  EXPECT_NEAR(OptimizerTimeSeconds(gpu, p, params), 2 * p.kernel_overhead_s + params * 38 / rate,
              1e-12);
  EXPECT_NEAR(OptimizerTimeSeconds(gpu, p, params, true) - OptimizerTimeSeconds(gpu, p, params),
              2 * p.kernel_overhead_s + params * 14 / rate, 1e-12);
}

}  // namespace
}  // namespace trainsim::parallelism
