// parallelism/schedule.h — pipeline schedules as per-stage task orders.
//
// What it is: for GPipe, 1F1B (PipeDream-Flush) and Megatron-LM's interleaved 1F1B, the order in
// which each pipeline rank runs the forward and backward passes of its model chunks for each
// micro-batch. The order is exactly Megatron-LM's (schedules.py): 1F1B runs
// min(p − rank − 1, m) warm-up forwards, then alternates one forward and one backward, then
// drains; interleaved runs (p − rank − 1)·2 + (v − 1)·p warm-up forwards over virtual
// micro-batches whose chunk is (k mod p·v) / p (reversed for backward).
//
// Dependencies between ranks are implied: forward of (micro-batch, virtual stage j) needs the
// forward of (micro-batch, j − 1), held by rank (j − 1) mod p; backward of j needs backward of
// j + 1; the last virtual stage's backward follows its own forward.
//
// Invariants: every rank runs each (micro-batch, chunk) forward exactly once and its backward
// exactly once, the backward after the forward.
#ifndef TRAINSIM_PARALLELISM_SCHEDULE_H_
#define TRAINSIM_PARALLELISM_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "parallelism/layout.h"

namespace trainsim::parallelism {

struct Task {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank; virtual stage = chunk·p + rank
  bool operator==(const Task&) const = default;
};

// The task order of each pipeline rank (index = pp rank). REQUIRES: pp ≥ 1, virtual_stages ≥ 1,
// micro_batches ≥ 1, and for interleaving micro_batches a multiple of pp.
std::vector<std::vector<Task>> BuildSchedule(PipelineSchedule schedule, int pp, int virtual_stages,
                                             int64_t micro_batches);

// The largest number of chunk forwards whose backward has not yet run, over the order: the
// number of (micro-batch, chunk) activation sets a rank holds at its peak.
int PeakChunksInFlight(const std::vector<Task>& order);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_SCHEDULE_H_
