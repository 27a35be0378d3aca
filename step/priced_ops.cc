#include "step/priced_ops.h"

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

KernelOp TpChunkOf(const KernelOp& op, int tp, double bytes_per_element) {
  KernelOp chunk = op;
  chunk.m = op.m / tp;
  const double e = bytes_per_element, b = double(op.batch);
  const double bytes =
      b * e * (double(chunk.m) * op.k + double(op.k) * op.n + double(chunk.m) * op.n);
  chunk.fwd_matmul_flops = op.fwd_matmul_flops / tp;
  chunk.bwd_matmul_flops = op.bwd_matmul_flops / tp;
  chunk.fwd_bytes = bytes;
  chunk.bwd_bytes = 2 * bytes;
  return chunk;
}

std::vector<KernelOp> PricedGemmOps(const StepConfig& cfg) {
  const ParallelConfig& c = cfg.parallel;
  std::vector<KernelOp> ops = parallelism::PricedOps(cfg.model, c.split(), c.micro_batch);
  if (c.tp_comm_overlap) {
    const size_t n = ops.size();
    for (size_t i = 0; i < n; ++i) {
      if (RunsAsTpChunks(ops[i], c.tp)) {
        ops.push_back(TpChunkOf(ops[i], c.tp, cfg.model.bytes_per_element));
      }
    }
  }
  return ops;
}

}  // namespace trainsim::step
