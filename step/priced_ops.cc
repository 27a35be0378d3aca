#include "step/priced_ops.h"

#include <string>

#include "parallelism/compute.h"

namespace trainsim::step {

using parallelism::KernelOp;
using parallelism::OpKind;
using parallelism::ParallelConfig;

bool TpPairedGemm(const KernelOp& op) {
  if (op.kind != OpKind::kGemm) return false;
  return op.name != "router" && op.name != "logits" && op.name != "q_down" &&
         op.name != "kv_down" && op.name.rfind("expert_", 0) != 0;
}

bool RunsAsTpChunks(const KernelOp& op, int tp) { return tp > 1 && op.m >= tp && TpPairedGemm(op); }

bool RowParallelGemm(const KernelOp& op) {
  const std::string& n = op.name;
  return n == "attn_out" || n == "mamba_out_proj" ||
         (n.size() >= 5 && n.compare(n.size() - 5, 5, "_down") == 0);
}

int UbChunks(const KernelOp& op, int tp, bool forward, bool rs_ring) {
  if (!RunsAsTpChunks(op, tp)) return 1;
  const bool row = RowParallelGemm(op);
  const int row_forward = rs_ring ? tp : kUbPipelineSplits;
  const int chunks = forward ? (row ? row_forward : tp) : (row ? tp : 1);
  return op.m >= chunks ? chunks : 1;
}

KernelOp TpChunksOf(const KernelOp& op, int n, double bytes_per_element) {
  KernelOp chunks = op;
  chunks.m = op.m / n;
  chunks.batch = op.batch * n;
  chunks.streams = kUbComputeStreams;
  // Each chunk's GEMM reads its rows of A, the whole weight B, and writes its rows of C.
  const double e = bytes_per_element, b = double(chunks.batch);
  const double bytes =
      b * e * (double(chunks.m) * op.k + double(op.k) * op.n + double(chunks.m) * op.n);
  chunks.fwd_bytes = bytes;
  chunks.bwd_bytes = 2 * bytes;
  return chunks;
}

std::vector<KernelOp> PricedGemmOps(const StepConfig& cfg) {
  const ParallelConfig& c = cfg.parallel;
  std::vector<KernelOp> ops = parallelism::PricedOps(cfg.model, c.split(), c.micro_batch);
  if (c.tp_comm_overlap) {
    const size_t n = ops.size();
    for (size_t i = 0; i < n; ++i) {
      // The forward's chunks and the backward's dgrad chunks (their shapes, as the step looks
      // them up), each once.
      const int f = UbChunks(ops[i], c.tp, true, c.tp_overlap_rs_ring);
      const int b = UbChunks(ops[i], c.tp, false, c.tp_overlap_rs_ring);
      if (f > 1) ops.push_back(TpChunksOf(ops[i], f, cfg.model.bytes_per_element));
      if (b > 1 && b != f) ops.push_back(TpChunksOf(ops[i], b, cfg.model.bytes_per_element));
    }
  }
  return ops;
}

}  // namespace trainsim::step
