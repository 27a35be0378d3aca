// Transformer Engine's userbuffers split of the TP-paired GEMMs (step/priced_ops.h): which GEMMs
// run as chunks and how many (TE's default methods, module/base.py initialize_ub), and the chunks
// on TE's three compute streams priced between the whole GEMM and the chunks one after another.
#include "step/priced_ops.h"

#include <gtest/gtest.h>

#include "parallelism/compute.h"

namespace trainsim::step {
namespace {

using parallelism::KernelOp;
using parallelism::OpKind;

KernelOp Gemm(const std::string& name, int64_t m, int64_t n, int64_t k) {
  KernelOp op;
  op.name = name;
  op.kind = OpKind::kGemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.fwd_matmul_flops = 2.0 * double(m) * double(n) * double(k);
  op.bwd_matmul_flops = 2 * op.fwd_matmul_flops;
  op.fwd_bytes = 2.0 * (double(m) * double(k) + double(k) * double(n) + double(m) * double(n));
  op.bwd_bytes = 2 * op.fwd_bytes;
  op.fwd_kernels = 1;
  op.bwd_kernels = 2;
  return op;
}

// Ring exchange (tp chunks): qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad. Pipeline (4 splits):
// proj_fprop, fc2_fprop. Bulk (whole): qkv_dgrad, fc1_dgrad; every wgrad is whole.
TEST(UbChunksTest, FollowTransformerEnginesDefaultOverlapMethods) {
  const int tp = 8;
  for (const char* column : {"qkv", "mlp_gate_up", "mlp_up", "mamba_in_proj"}) {
    const KernelOp op = Gemm(column, 4096, 4096, 4096);
    EXPECT_FALSE(RowParallelGemm(op)) << column;
    EXPECT_EQ(UbChunks(op, tp, /*forward=*/true), tp) << column;
    EXPECT_EQ(UbChunks(op, tp, /*forward=*/false), 1) << column;
  }
  for (const char* row : {"attn_out", "mlp_down", "shared_down", "mamba_out_proj"}) {
    const KernelOp op = Gemm(row, 4096, 4096, 4096);
    EXPECT_TRUE(RowParallelGemm(op)) << row;
    EXPECT_EQ(UbChunks(op, tp, true), kUbPipelineSplits) << row;
    EXPECT_EQ(UbChunks(op, tp, false), tp) << row;
    // Megatron-Bridge's FP8 configs reduce-scatter it by ring exchange (tp_comm_overlap_rs_method).
    EXPECT_EQ(UbChunks(op, tp, true, /*rs_ring=*/true), tp) << row;
  }
  // Not TP-paired, or too few rows to split, or no TP: whole.
  EXPECT_EQ(UbChunks(Gemm("router", 4096, 64, 4096), tp, true), 1);
  EXPECT_EQ(UbChunks(Gemm("logits", 4096, 4096, 4096), tp, true), 1);
  EXPECT_EQ(UbChunks(Gemm("qkv", 4, 4096, 4096), tp, true), 1);
  EXPECT_EQ(UbChunks(Gemm("attn_out", 4096, 4096, 4096), 1, true), 1);
}

// On an H100 (132 SMs) a 256-row chunk of GPT-3 175B's QKV at TP 8 (N 4608, K 12288) leaves
// most of its one wave idle; TE issues the 8 chunks on 3 streams, so a chunk's tiles fill the
// idle SMs of the one before. The chunks then take longer than the whole GEMM (a chunk of 3
// has fewer tiles than the whole, and the rounds still end in partial waves), and less than
// the 8 chunks one after another.
TEST(UbChunksTest, ChunksOnThreeStreamsLieBetweenTheWholeGemmAndTheChunksInSequence) {
  parallelism::GpuSpec h100;
  h100.name = "H100-SXM-80GB";
  h100.arch = parallelism::GpuArch::kHopper;
  h100.num_sms = 132;
  h100.peak_flops = h100.peak_bf16_flops = 989e12;
  h100.hbm_bytes_per_s = 3.35e12;
  parallelism::ComputeParams p;
  const KernelOp whole = Gemm("qkv", 2048, 4608, 12288);
  const KernelOp chunks = TpChunksOf(whole, 8, 2);
  EXPECT_EQ(chunks.m, 256);
  EXPECT_EQ(chunks.batch, 8);
  EXPECT_EQ(chunks.streams, kUbComputeStreams);
  EXPECT_DOUBLE_EQ(chunks.fwd_matmul_flops, whole.fwd_matmul_flops);
  KernelOp one = chunks;
  one.batch = 1;
  one.streams = 0;
  one.fwd_matmul_flops = whole.fwd_matmul_flops / 8;
  one.fwd_bytes = chunks.fwd_bytes / 8;
  const double t_whole = parallelism::OpTimeSeconds(h100, p, whole, true, nullptr);
  const double t_streams = parallelism::OpTimeSeconds(h100, p, chunks, true, nullptr);
  const double t_sequence = 8 * parallelism::OpTimeSeconds(h100, p, one, true, nullptr);
  EXPECT_GT(t_streams, t_whole);
  EXPECT_LT(t_streams, t_sequence);
}

}  // namespace
}  // namespace trainsim::step
