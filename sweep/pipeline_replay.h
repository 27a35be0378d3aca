// sweep/pipeline_replay.h — the pipeline phase of one step replayed task by task on an idle
// network, for the estimator's schedules that have no closed form.
//
// With blocking pipeline sends (ParallelConfig::overlap_p2p off) a send is posted only when its
// receiver ends its current task, and the sender waits until it has drained; under interleaving
// these rendezvous waits depend on how the ranks' task orders interleave. The replay runs the
// schedule (parallelism/schedule.h) with the step simulation's rules (step/pipeline.h) but
// every send takes its time alone on its path, with one exception: the k sends a rank held
// back while it computed start together into it when its task ends and share its ingress, so
// they take k times as long. No flows, no other contention, no engine.
//
// Promises: deterministic; O(tasks · log tasks); ties between equal times resolve first-in
// first-out, as the engine does.
#ifndef TRAINSIM_SWEEP_PIPELINE_REPLAY_H_
#define TRAINSIM_SWEEP_PIPELINE_REPLAY_H_

#include <vector>

#include "parallelism/layout.h"

namespace trainsim::sweep {

// One task's duration per virtual stage (index chunk·pp + rank): `pre_s` (a ZeRO-3 gather)
// followed by the pass itself.
struct ReplayPass {
  double pre_s = 0;
  double fwd_s = 0, bwd_s = 0;
};

struct PipelineReplay {
  std::vector<double> compute_done_s;  // per rank: its last task ended (and its send drained)
  // Per rank, in execution order: (start, duration) of the backward passes that make gradient
  // buckets ready after them (each chunk's last micro-batch; none with ZeRO ≥ 2, whose passes
  // include their own reductions).
  std::vector<std::vector<std::pair<double, double>>> bucket_passes;
};

// send_s: one pipeline send alone on its path, of which send_latency_s is the path's latency
// (paid once however many sends share the path's bandwidth).
// REQUIRES: ValidateLayout ok; passes.size() == pp · virtual stages; send_latency_s <= send_s.
PipelineReplay ReplayPipeline(const parallelism::ParallelConfig& c,
                              const std::vector<ReplayPass>& passes, double send_s,
                              double send_latency_s = 0);

}  // namespace trainsim::sweep

#endif  // TRAINSIM_SWEEP_PIPELINE_REPLAY_H_
