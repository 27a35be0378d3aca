// step/activation_offload.h — how long the GPU waits for activations offloaded to host memory.
//
// Transformer Engine's CPU offloading (Megatron-Core --cpu-offloading-num-layers N; TE
// pytorch/cpu_offload.py, DefaultOffloadSynchronizer) offloads the saved activations of a
// chunk's first N layers. Layer i's copy to the host starts on an offload stream of its own
// when layer i + 1's forward starts; before layer L − N + i's forward the compute stream waits
// for it (TE then frees the GPU copy), which keeps L − N layers' activations resident. In the
// backward, layer i's copy back starts when layer L − 1 − N + i's backward starts and layer i's
// backward waits for it. The one offload stream runs its copies one after another, at the
// host link's bandwidth in the copy's direction (device to host out, host to device back); the
// copy engines use no SMs, so the compute beside them runs at its full rate.
//
// Promises: deterministic; waits are never negative; with N = 0 or copies that finish within
// their windows, both waits are 0.
#ifndef TRAINSIM_STEP_ACTIVATION_OFFLOAD_H_
#define TRAINSIM_STEP_ACTIVATION_OFFLOAD_H_

#include <vector>

namespace trainsim::step {

// One layer of the chunk, in forward order: its forward and backward time on the compute
// stream and the activation bytes it saves for its backward.
struct OffloadLayer {
  double fwd_s = 0;
  double bwd_s = 0;
  double bytes = 0;
};

struct OffloadWait {
  double fwd_s = 0;  // the forward pass waiting for offloads to finish
  double bwd_s = 0;  // the backward pass waiting for reloads
};

// The waits of one micro-batch's forward and backward through `layers` with the first
// `offloaded` of them offloaded at `d2h_bytes_per_s` and reloaded at `h2d_bytes_per_s`.
// REQUIRES: 0 <= offloaded < layers.size() (or offloaded == 0); both rates > 0.
OffloadWait OffloadWaitSeconds(const std::vector<OffloadLayer>& layers, int offloaded,
                               double d2h_bytes_per_s, double h2d_bytes_per_s);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_ACTIVATION_OFFLOAD_H_
