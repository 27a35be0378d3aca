// parallelism/roofline.h: compute- vs memory-bound from arithmetic intensity against the ridge
// point, each derived here from the op's FLOPs and bytes.
#include "parallelism/roofline.h"

#include <gtest/gtest.h>

namespace trainsim::parallelism {
namespace {

// H100 SXM datasheet: 989 TFLOP/s dense BF16, 3.35 TB/s HBM3.
GpuSpec H100() {
  GpuSpec g;
  g.name = "H100-SXM-80GB";
  g.arch = GpuArch::kHopper;
  g.num_sms = 132;
  g.peak_flops = 989e12;
  g.peak_bf16_flops = 989e12;
  g.peak_fp8_flops = 1979e12;
  g.hbm_bytes_per_s = 3.35e12;
  return g;
}

TEST(RooflineTest, RidgePointIsPeakOverBandwidth) {
  EXPECT_NEAR(RidgePoint(H100(), 989e12), 989e12 / 3.35e12, 1e-9);  // ≈ 295 FLOP/B
}

TEST(RooflineTest, Bf16Gemm4096CubedIsComputeBound) {
  const double n = 4096;
  KernelOp op;
  op.name = "gemm";
  op.kind = OpKind::kGemm;
  op.m = op.n = op.k = 4096;
  op.fwd_matmul_flops = 2 * n * n * n;  // one multiply-add per (m, n, k)
  op.fwd_bytes = 2 * (3 * n * n);       // read A and B, write C, 2 bytes each
  const OpRoofline r = RooflineOf(H100(), ComputeParams{}, op, true);
  const double intensity = (2 * n * n * n) / (6 * n * n);  // n / 3 ≈ 1365 FLOP/B
  EXPECT_NEAR(r.intensity, intensity, 1e-6);
  EXPECT_NEAR(r.ridge, 989e12 / 3.35e12, 1e-6);
  EXPECT_GT(intensity, r.ridge);
  EXPECT_TRUE(r.compute_bound);
  EXPECT_NEAR(r.bound_s, 2 * n * n * n / 989e12, 1e-15);
  EXPECT_GT(r.achieved_fraction, 0.0);
  EXPECT_LE(r.achieved_fraction, 1.0);
}

TEST(RooflineTest, LayerNormIsMemoryBound) {
  // 4096 tokens × 4096 hidden, bf16: reads x, writes y (4 bytes per element), ~8 FLOPs each.
  const double e = 4096.0 * 4096.0;
  KernelOp op;
  op.name = "layernorm";
  op.kind = OpKind::kMemoryBound;
  op.fwd_other_flops = 8 * e;
  op.fwd_bytes = 4 * e;
  const OpRoofline r = RooflineOf(H100(), ComputeParams{}, op, true);
  EXPECT_NEAR(r.intensity, 2.0, 1e-12);  // 8 FLOPs per 4 bytes
  EXPECT_LT(r.intensity, r.ridge);
  EXPECT_FALSE(r.compute_bound);
  EXPECT_NEAR(r.bound_s, 4 * e / 3.35e12, 1e-15);
}

TEST(RooflineTest, LayerOpsGiveOneRowPerOpAndDirection) {
  ModelSpec m;
  m.num_layers = 1;
  m.hidden = 4096;
  m.heads = 32;
  m.seq_len = 4096;
  const std::vector<KernelOp> ops = LayerOps(m, TensorSplit{}, 1);
  const std::vector<OpRoofline> rows = RooflineOfOps(H100(), ComputeParams{}, ops);
  ASSERT_EQ(rows.size(), 2 * ops.size());
  EXPECT_TRUE(rows.front().forward);
  EXPECT_FALSE(rows.back().forward);
}

}  // namespace
}  // namespace trainsim::parallelism
