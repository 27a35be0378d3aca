// step/host_overhead.h — the host-side time the GPUs wait for.
//
// Eager PyTorch issues every kernel from Python: op dispatch plus cudaLaunchKernel costs the
// host a few microseconds per kernel. The host runs ahead of the GPU as long as the kernels
// last longer than their launches; a pass whose launches take longer than its kernels (small
// micro-batches, small layers) is launch-bound and the GPU idles for the difference. CUDA
// graphs (parallelism.cuda_graphs) replay a pass's kernels from one graph launch, so the host
// cost per pass is one launch. A per-step framework time (Python loop, logging, the learning-
// rate schedule) runs before the first pass while the GPUs wait.
//
// Promises: deterministic; the extra time is never negative.
#ifndef TRAINSIM_STEP_HOST_OVERHEAD_H_
#define TRAINSIM_STEP_HOST_OVERHEAD_H_

namespace trainsim::step {

struct HostOverheadSpec {
  // Host time to issue one kernel in eager mode: cudaLaunchKernel alone costs ~2-5 µs (NVIDIA,
  // CUDA C++ Best Practices Guide; PyTorch performance tuning guide, "CUDA graphs"), Python op
  // dispatch adds to it; 5 µs.
  double launch_s = 5e-6;
  // Per-step framework time the GPUs wait for (0: published step times already include it).
  double step_s = 0;
  bool cuda_graphs = false;
};

// Host time to issue a pass of `kernels` kernels.
double HostPassSeconds(const HostOverheadSpec& spec, double kernels);

// How long the GPU waits for the host in a pass of `kernels` kernels that keep it busy for
// `gpu_s`: max(0, host − gpu).
double LaunchBoundSeconds(const HostOverheadSpec& spec, double kernels, double gpu_s);

// GPU idle time of one device-to-host synchronisation inside a pass (the MoE dispatcher's copy
// of the split sizes, then cudaEventSynchronize): the GPU drains to the copy, whose completion
// the host waits for, and only then issues the next kernel. Two launch latencies: the copy's
// and the next kernel's (2 · launch_s), whatever CUDA graphs cover around it.
double DeviceSyncSeconds(const HostOverheadSpec& spec);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_HOST_OVERHEAD_H_
