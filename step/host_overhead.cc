#include "step/host_overhead.h"

#include <algorithm>

namespace trainsim::step {

double HostPassSeconds(const HostOverheadSpec& spec, double kernels) {
  // With CUDA graphs the pass is one graph launch.
  return spec.cuda_graphs ? spec.launch_s : kernels * spec.launch_s;
}

double LaunchBoundSeconds(const HostOverheadSpec& spec, double kernels, double gpu_s) {
  return std::max(0.0, HostPassSeconds(spec, kernels) - gpu_s);
}

double DeviceSyncSeconds(const HostOverheadSpec& spec) { return 2 * spec.launch_s; }

}  // namespace trainsim::step
