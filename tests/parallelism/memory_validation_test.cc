// Memory per GPU against published FSDP2 measurements: pytorch/torchtitan's H100 benchmark
// (benchmarks/llama3_h100_202412_torchtitan.md at b5bcd76, Tables 2 and 4; the rows of
// ../shared/validation/torchtitan_fsdp2_benchmarks.csv with full activation checkpointing).
//
// What torchtitan runs, modelled as it is (nothing here is fitted to the rows):
//  - FSDP2 with MixedPrecisionPolicy(param_dtype bf16, reduce_dtype fp32): fp32 sharded
//    parameters (4 B, they are the master weights), fp32 sharded gradients (4 B), Adam's two
//    fp32 moments (8 B); each TransformerBlock a unit, gathered in bf16 (2 B).
//  - Full AC: checkpoint_wrapper around every TransformerBlock keeps its input only.
//  - The loss: the bf16 logits cast to fp32 and PyTorch's cross_entropy (eager): at its backward
//    the saved fp32 log-softmax and two fp32 gradients, 12 bytes per logit.
//  - Llama 3.1 8B/70B from their Hugging Face configs; sequence 8192 (torchtitan's llama3
//    configs) where the table gives none; SDPA flash attention; TP with sequence parallelism.
// The published figure is torchtitan's logged `memory`, the caching allocator's peak reserved
// bytes (GiB), which is at least the peak allocated that this model computes. The model comes
// out below every row: by 11–12% for 8B (Table 2) and 30–26% for 70B (Table 4). The bounds below
// are those observed errors rounded up, not targets; docs/memory.md discusses the gap.
#include <gtest/gtest.h>

#include "parallelism/memory.h"

namespace trainsim::parallelism {
namespace {

ModelSpec Llama31(int layers, int hidden, int heads, int ffn, int seq) {
  ModelSpec m;
  m.num_layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.ffn_hidden = ffn;
  m.vocab = 128256;
  m.seq_len = seq;
  m.swiglu = true;
  m.dropout = false;
  m.flash_attention = true;
  m.tied_embeddings = false;
  m.learned_position_embedding = false;
  m.linear_bias = false;
  m.rmsnorm = true;
  return m;
}

MemoryParams Fsdp2() {
  MemoryParams p;
  p.weight_bytes_per_param = 4;
  p.optimizer_bytes_per_param = 8;
  p.grad_bytes_per_param = 4;
  p.gathered_bytes_per_param = 2;
  p.loss_bytes_per_logit = 12;
  return p;
}

struct Row {
  const char* what;
  int layers, hidden, heads, ffn, seq, tp, dp, cp, local_batch;
  double measured_gib;
  double bound;  // observed |error| rounded up
};

constexpr Row kRows[] = {
    {"8B FSDP 8, CP 1, 32k (Table 2)", 32, 4096, 32, 14336, 32768, 1, 8, 1, 1, 83.9, 0.15},
    {"8B FSDP 4, CP 2, 64k (Table 2)", 32, 4096, 32, 14336, 65536, 1, 4, 2, 1, 84.2, 0.15},
    {"8B FSDP 2, CP 4, 128k (Table 2)", 32, 4096, 32, 14336, 131072, 1, 2, 4, 1, 84.0, 0.15},
    {"8B FSDP 1, CP 8, 256k (Table 2)", 32, 4096, 32, 14336, 262144, 1, 1, 8, 1, 84.5, 0.15},
    {"70B FSDP 32, TP 8 (Table 4)", 80, 8192, 64, 28672, 8192, 8, 32, 1, 16, 71.9, 0.35},
    {"70B FSDP 32, TP 8, async TP (Table 4)", 80, 8192, 64, 28672, 8192, 8, 32, 1, 16, 67.6, 0.35},
};

TEST(MemoryValidationTest, TorchtitanFsdp2FullCheckpointingRowsAreBoundedByReservedMemory) {
  for (const Row& r : kRows) {
    const ModelSpec m = Llama31(r.layers, r.hidden, r.heads, r.ffn, r.seq);
    ParallelConfig c;
    c.tp = r.tp;
    c.dp = r.dp;
    c.cp = r.cp;
    c.sequence_parallel = r.tp > 1;
    c.micro_batch = r.local_batch;
    c.global_batch = int64_t(r.local_batch) * r.dp;
    c.zero_stage = 3;
    c.recompute = Recompute::kFull;
    ASSERT_TRUE(ValidateLayout(m, c, c.num_gpus(), 8).ok()) << r.what;
    const double measured = r.measured_gib * 1024.0 * 1024 * 1024;
    const double estimate = EstimateMemory(m, c, 96e9, 8, Fsdp2()).peak_bytes;
    // Allocated ≤ reserved, plus the 2 GB framework allowance that is partly outside it.
    EXPECT_LE(estimate, measured + 2e9) << r.what;
    EXPECT_NEAR(estimate / measured, 1.0, r.bound) << r.what << ": " << estimate / 1e9 << " GB";
  }
}

}  // namespace
}  // namespace trainsim::parallelism
