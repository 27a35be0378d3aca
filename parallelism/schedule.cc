#include "parallelism/schedule.h"

#include <algorithm>

namespace trainsim::parallelism {
namespace {

std::vector<Task> OneF1B(int p, int rank, int64_t m) {
  std::vector<Task> out;
  const int64_t warmup = std::min<int64_t>(p - rank - 1, m);
  int64_t next_f = 0, next_b = 0;
  for (int64_t i = 0; i < warmup; ++i) out.push_back({true, int(next_f++), 0});
  for (int64_t i = 0; i < m - warmup; ++i) {
    out.push_back({true, int(next_f++), 0});
    out.push_back({false, int(next_b++), 0});
  }
  while (next_b < m) out.push_back({false, int(next_b++), 0});
  return out;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving.
std::vector<Task> Interleaved(int p, int v, int rank, int64_t m) {
  const int64_t total = m * v;
  auto task = [&](int64_t k, bool forward) {
    const int64_t in_group = k % (int64_t(p) * v);
    int chunk = int(in_group / p);
    if (!forward) chunk = v - chunk - 1;
    const int64_t mb = (k / (int64_t(p) * v)) * p + in_group % p;
    return Task{forward, int(mb), chunk};
  };
  int64_t warmup = int64_t(p - rank - 1) * 2 + int64_t(v - 1) * p;
  warmup = std::min(warmup, total);
  std::vector<Task> out;
  for (int64_t k = 0; k < warmup; ++k) out.push_back(task(k, true));
  const int64_t steady = total - warmup;
  for (int64_t i = 0; i < steady; ++i) {
    out.push_back(task(warmup + i, true));
    out.push_back(task(i, false));
  }
  for (int64_t k = steady; k < total; ++k) out.push_back(task(k, false));
  return out;
}

}  // namespace

std::vector<std::vector<Task>> BuildSchedule(PipelineSchedule schedule, int pp, int virtual_stages,
                                             int64_t micro_batches) {
  std::vector<std::vector<Task>> out(pp);
  for (int r = 0; r < pp; ++r) {
    if (schedule == PipelineSchedule::kGpipe) {
      for (int64_t i = 0; i < micro_batches; ++i) out[r].push_back({true, int(i), 0});
      for (int64_t i = 0; i < micro_batches; ++i) out[r].push_back({false, int(i), 0});
    } else if (schedule == PipelineSchedule::kInterleaved1F1B && virtual_stages > 1) {
      out[r] = Interleaved(pp, virtual_stages, r, micro_batches);
    } else {
      out[r] = OneF1B(pp, r, micro_batches);
    }
  }
  return out;
}

int PeakChunksInFlight(const std::vector<Task>& order) {
  int live = 0, peak = 0;
  for (const Task& t : order) {
    live += t.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace trainsim::parallelism
