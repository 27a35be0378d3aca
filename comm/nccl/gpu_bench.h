// The GPU side of the calibration runner: what is on this machine, the NCCL collective
// benchmark and the cuBLASLt matrix-product benchmark.
//
// Promises:
//  - Never hangs: communicator set-up and every timed batch run against a deadline
//    (RunnerOptions::timeout_s); past it the NCCL communicators are aborted and an error is
//    returned. A stuck cuBLAS kernel cannot be aborted: the error is returned and the process
//    exits (the context dies with it).
//  - Checks results, not just speed: inputs are chosen so that every output element has one
//    exact right value (collective_bench.cc and gemm_bench.cc say how); a mismatch is an error
//    naming the element.
//  - Times with CUDA events after warm-up; reports the median over the repeats of the per-call
//    time of a batch (the slowest local GPU, and under MPI the slowest process).
//  - Each algorithm gets its own communicator, created with NCCL_ALGO set (and the caller's
//    value restored afterwards).
#ifndef TRAINSIM_COMM_NCCL_GPU_BENCH_H_
#define TRAINSIM_COMM_NCCL_GPU_BENCH_H_

#include <ostream>
#include <string>
#include <vector>

#include "comm/nccl/process_group.h"
#include "comm/nccl/report.h"
#include "comm/nccl/runner_options.h"
#include "sim/status.h"

namespace trainsim::comm::nccl {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
};

struct GpuEnvironment {
  std::vector<DeviceInfo> devices;
  std::string cuda_runtime;  // "13.0"
  std::string cuda_driver;   // the newest CUDA version the driver supports, "13.0"
  std::string nccl;          // "2.28.9" (the library loaded, not the header)
};

// Unavailable with a message that says what to check when there is no GPU, the driver is
// missing or too old, or the visible GPUs are of different types.
Result<GpuEnvironment> ProbeGpus();

// Runs the collectives of `opts` on `devices` (indices into env.devices; one NCCL rank each in
// this process) and appends rows to `report`, printing each as it is measured.
Status RunCollectives(const RunnerOptions& opts, const GpuEnvironment& env,
                      const std::vector<int>& devices, const ProcessGroup& group, Report* report,
                      std::ostream& out);

// Runs every GEMM shape × dtype of `opts` on one device; shapes a dtype cannot run on this GPU
// (FP8 below compute capability 8.9, or no cuBLASLt algorithm) are skipped with a line on `out`.
Status RunGemms(const RunnerOptions& opts, const GpuEnvironment& env, int device, Report* report,
                std::ostream& out);

}  // namespace trainsim::comm::nccl

#endif  // TRAINSIM_COMM_NCCL_GPU_BENCH_H_
