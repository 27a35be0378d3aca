// parallelism/roofline.h — the roofline of each operation of a layer: FLOPs, HBM bytes,
// arithmetic intensity against the GPU's ridge point, and how close the modelled kernel time
// comes to the roofline bound.
//
// Roofline model (Williams, Waterman and Patterson, "Roofline: an insightful visual performance
// model for multicore architectures", CACM 52(4), 2009): an op of F FLOPs moving B bytes takes
// at least max(F / peak, B / bandwidth). Its arithmetic intensity I = F / B; the GPU's ridge
// point R = peak / bandwidth (datasheet dense peak at the op's precision over datasheet HBM
// bandwidth: H100 SXM BF16 989 TFLOP/s / 3.35 TB/s = 295 FLOP/byte). I ≥ R: compute-bound,
// else memory-bound. The achieved fraction is the bound over the modelled time (compute.h):
// 1 would be a kernel at the datasheet roofline.
//
// Promises: deterministic; one row per op and direction in LayerOps order, forward then
// backward; the achieved fraction is in (0, 1].
#ifndef TRAINSIM_PARALLELISM_ROOFLINE_H_
#define TRAINSIM_PARALLELISM_ROOFLINE_H_

#include <string>
#include <vector>

#include "parallelism/compute.h"
#include "parallelism/model.h"

namespace trainsim::parallelism {

struct OpRoofline {
  std::string name;
  bool forward = true;
  double flops = 0;      // matrix + other FLOPs the kernel executes
  double bytes = 0;      // HBM bytes read and written
  double intensity = 0;  // FLOP per byte (0 when it moves no bytes and does no math)
  double ridge = 0;      // the GPU's ridge point at the op's peak, FLOP per byte
  bool compute_bound = false;
  double peak_flops = 0;         // the dense peak the op's math runs at
  double bound_s = 0;            // max(flops / peak, bytes / HBM bandwidth)
  double time_s = 0;             // the modelled kernel time (compute.h OpTimeSeconds)
  double achieved_fraction = 0;  // bound_s / time_s
};

// The ridge point of `gpu` for math at `peak_flops`: peak_flops / HBM bytes per second.
double RidgePoint(const GpuSpec& gpu, double peak_flops);

// The roofline row of one op in one direction.
OpRoofline RooflineOf(const GpuSpec& gpu, const ComputeParams& p, const KernelOp& op, bool forward,
                      const GemmCalibration* cal = nullptr);

// Every op of `ops`, forward rows then backward rows.
std::vector<OpRoofline> RooflineOfOps(const GpuSpec& gpu, const ComputeParams& p,
                                      const std::vector<KernelOp>& ops,
                                      const GemmCalibration* cal = nullptr);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_ROOFLINE_H_
