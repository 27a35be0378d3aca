#include "parallelism/roofline.h"

#include <algorithm>

namespace trainsim::parallelism {

double RidgePoint(const GpuSpec& gpu, double peak_flops) {
  return gpu.hbm_bytes_per_s > 0 ? peak_flops / gpu.hbm_bytes_per_s : 0.0;
}

OpRoofline RooflineOf(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                      const GemmCalibration* cal) {
  OpRoofline r;
  r.name = op.name;
  r.forward = forward;
  r.flops =
      forward ? op.fwd_matmul_flops + op.fwd_other_flops : op.bwd_matmul_flops + op.bwd_other_flops;
  r.bytes = forward ? op.fwd_bytes : op.bwd_bytes;
  // Element-wise and reduction kernels run on the CUDA cores, but their intensity is far below
  // any ridge point; the tensor-core peak of the model's precision is the common yardstick.
  r.peak_flops = op.kind == OpKind::kMemoryBound ? gpu.peak_flops : MatmulPeakFlops(gpu, p, op);
  r.ridge = RidgePoint(gpu, r.peak_flops);
  r.intensity = r.bytes > 0 ? r.flops / r.bytes : 0.0;
  r.compute_bound = r.bytes > 0 ? r.intensity >= r.ridge : r.flops > 0;
  const double math_s = r.peak_flops > 0 ? r.flops / r.peak_flops : 0.0;
  const double mem_s = gpu.hbm_bytes_per_s > 0 ? r.bytes / gpu.hbm_bytes_per_s : 0.0;
  r.bound_s = std::max(math_s, mem_s);
  r.time_s = OpTimeSeconds(gpu, p, op, forward, cal);
  r.achieved_fraction = r.time_s > 0 ? std::min(1.0, r.bound_s / r.time_s) : 0.0;
  return r;
}

std::vector<OpRoofline> RooflineOfOps(const GpuSpec& gpu, const ComputeParams& p,
                                      const std::vector<KernelOp>& ops,
                                      const GemmCalibration* cal) {
  std::vector<OpRoofline> out;
  for (bool forward : {true, false}) {
    for (const KernelOp& op : ops) out.push_back(RooflineOf(gpu, p, op, forward, cal));
  }
  return out;
}

}  // namespace trainsim::parallelism
