#include "run/whatif.h"

#include <string>

namespace trainsim::run {

Result<WhatIfReport> SimulateWhatIf(const RunConfig& config,
                                    const std::vector<ScheduledFault>& added,
                                    StepTimeCache& step_times, int64_t trial) {
  RunConfig base = config;
  if (base.wall_time_limit) {
    // Fix the amount of training: what the baseline trains in the given wall time.
    Result<RunReport> bounded = SimulateRun(base, step_times, trial);
    if (!bounded.ok()) return bounded.status();
    if (bounded->total_steps == 0) {
      return Status::FailedPrecondition(
          "the baseline trains no complete step in training.duration " +
          sim::FormatDuration(*base.wall_time_limit));
    }
    base.total_steps = bounded->total_steps;
    base.wall_time_limit.reset();
  }
  Result<RunReport> baseline = SimulateRun(base, step_times, trial);
  if (!baseline.ok()) return baseline.status();
  RunConfig with = base;
  with.faults.insert(with.faults.end(), added.begin(), added.end());
  for (size_t i = 0; i < added.size(); ++i) {
    if (added[i].at >= baseline->wall_time) {
      return Status::InvalidArgument("added fault " + std::to_string(i + 1) + " (" +
                                     added[i].Describe() +
                                     ") is at or after the end of training: the run ends at " +
                                     sim::FormatDuration(baseline->wall_time));
    }
  }
  Result<RunReport> whatif = SimulateRun(with, step_times, trial);
  if (!whatif.ok()) return whatif.status();
  WhatIfReport w;
  w.steps = base.total_steps;
  w.delta_wall_time_s = (whatif->wall_time - baseline->wall_time).seconds();
  w.delta_cost_usd = whatif->cost_usd - baseline->cost_usd;
  w.delta_lost_work_s = (whatif->breakdown.lost - baseline->breakdown.lost).seconds();
  w.baseline = std::move(baseline).value();
  w.whatif = std::move(whatif).value();
  return w;
}

}  // namespace trainsim::run
