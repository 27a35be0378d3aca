#include "step/activation_offload.h"

#include <algorithm>

namespace trainsim::step {

OffloadWait OffloadWaitSeconds(const std::vector<OffloadLayer>& layers, int offloaded,
                               double d2h_bytes_per_s, double h2d_bytes_per_s) {
  OffloadWait w;
  const int L = int(layers.size());
  const int n = offloaded;
  if (n <= 0 || n >= L || !(d2h_bytes_per_s > 0) || !(h2d_bytes_per_s > 0)) return w;
  auto offload_s = [&](int i) { return layers[size_t(i)].bytes / d2h_bytes_per_s; };
  auto reload_s = [&](int i) { return layers[size_t(i)].bytes / h2d_bytes_per_s; };

  // Forward. `t`: the compute stream's clock; `stream`: when the offload stream is free;
  // done[i]: when layer i's copy to the host has finished.
  std::vector<double> done(size_t(n), 0.0);
  double t = 0, stream = 0;
  for (int j = 0; j < L; ++j) {
    // Before layer j's forward: the previous layer's copy starts (fwd_step: start_offload)...
    if (j >= 1 && j - 1 < n) {
      const double start = std::max(t, stream);
      stream = start + offload_s(j - 1);
      done[size_t(j - 1)] = stream;
    }
    // ...and the compute waits for layer j − (L − n)'s copy
    // (release_activation_forward_gpu_memory).
    const int release = j - (L - n);
    if (release >= 0 && release < n && done[size_t(release)] > t) {
      w.fwd_s += done[size_t(release)] - t;
      t = done[size_t(release)];
    }
    t += layers[size_t(j)].fwd_s;
  }

  // Backward, layers L − 1 down to 0. Before layer j's backward the copy back of layer
  // i = j − (L − 1 − n) starts (bwd_step: start_reload), if i is an offloaded layer; layer i's
  // backward waits for its copy back (tensor_pop).
  std::vector<double> back(size_t(n), 0.0);
  t = 0;
  stream = 0;
  for (int j = L - 1; j >= 0; --j) {
    const int reload = j - (L - 1 - n);
    if (reload >= 0 && reload < n) {
      const double start = std::max(t, stream);
      stream = start + reload_s(reload);
      back[size_t(reload)] = stream;
    }
    if (j < n && back[size_t(j)] > t) {
      w.bwd_s += back[size_t(j)] - t;
      t = back[size_t(j)];
    }
    t += layers[size_t(j)].bwd_s;
  }
  return w;
}

}  // namespace trainsim::step
