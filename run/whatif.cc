#include "run/whatif.h"

#include <algorithm>
#include <string>

#include "run/monte_carlo.h"
#include "sim/parallel.h"

namespace trainsim::run {

namespace {

// Checked once for all trials: the config, and the scenario's own faults against the fault-free
// end as `trainsim run` checks them. Not the added faults against it: one after the baseline's
// end (which failures move) has no effect, one before it is simulated (CompareTrial).
Status CheckWhatIf(const RunConfig& config, StepTimeCache& step_times) {
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(config));
  return detail::CheckFaultsBeforeEnd(config, step_times);
}

Result<RunReport> RunTrial(const RunConfig& config, StepTimeCache& step_times, int64_t trial) {
  return detail::SimulateRunUnchecked(config, step_times, trial, /*stochastic=*/true);
}

// SimulateWhatIf past CheckWhatIf.
Result<WhatIfReport> CompareTrial(const RunConfig& config, const std::vector<ScheduledFault>& added,
                                  StepTimeCache& step_times, int64_t trial) {
  RunConfig base = config;
  if (base.wall_time_limit) {
    // Fix the amount of training: what the baseline trains in the given wall time.
    // Only its step count is kept: no event log (10^6 entries at 131,072 GPUs).
    RunConfig quiet = base;
    quiet.record_events = false;
    Result<RunReport> bounded = RunTrial(quiet, step_times, trial);
    if (!bounded.ok()) return bounded.status();
    if (bounded->total_steps == 0) {
      return Status::FailedPrecondition(
          "the baseline trains no complete step in training.duration " +
          sim::FormatDuration(*base.wall_time_limit));
    }
    base.total_steps = bounded->total_steps;
    base.wall_time_limit.reset();
  }
  Result<RunReport> baseline = RunTrial(base, step_times, trial);
  if (!baseline.ok()) return baseline.status();
  WhatIfReport w;
  RunConfig with = base;
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string name =
        "added fault " + std::to_string(i + 1) + " (" + added[i].Describe() + ")";
    bool duplicate = false;
    for (size_t j = 0; j < with.faults.size() && !duplicate; ++j) {
      if (!with.faults[j].SameAs(added[i])) continue;
      duplicate = true;
      w.warnings.push_back(name + " duplicates " +
                           (j < base.faults.size()
                                ? "the scenario's faults[" + std::to_string(j) + "]"
                                : std::string("an earlier added fault")) +
                           "; it is simulated once");
    }
    const bool after_end = added[i].at >= baseline->wall_time;
    w.no_effect.push_back(after_end || duplicate);
    if (after_end) {
      // To the millisecond (the wall time is exact to the nanosecond; a note need not be).
      const sim::Time end = sim::Time::Millis((baseline->wall_time.nanos() + 500000) / 1000000);
      w.notes.push_back(name + " has no effect: training ends at " + sim::FormatDuration(end) +
                        " without it");
    }
    if (!after_end && !duplicate) with.faults.push_back(added[i]);
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(with));  // the added faults that are simulated
  Result<RunReport> whatif = RunTrial(with, step_times, trial);
  if (!whatif.ok()) return whatif.status();
  w.steps = base.total_steps;
  w.delta_wall_time_s = (whatif->wall_time - baseline->wall_time).seconds();
  w.delta_cost_usd = whatif->cost_usd - baseline->cost_usd;
  w.delta_lost_work_s = (whatif->breakdown.lost - baseline->breakdown.lost).seconds();
  auto down = [](const RunReport& r) {
    return (r.breakdown.detection + r.breakdown.restart + r.breakdown.waiting).seconds();
  };
  w.delta_downtime_s = down(whatif.value()) - down(baseline.value());
  w.baseline = std::move(baseline).value();
  w.whatif = std::move(whatif).value();
  return w;
}

}  // namespace

Result<WhatIfReport> SimulateWhatIf(const RunConfig& config,
                                    const std::vector<ScheduledFault>& added,
                                    StepTimeCache& step_times, int64_t trial) {
  TRAINSIM_RETURN_IF_ERROR(CheckWhatIf(config, step_times));
  return CompareTrial(config, added, step_times, trial);
}

Result<WhatIfSamples> SimulateWhatIfTrials(const RunConfig& config,
                                           const std::vector<ScheduledFault>& added,
                                           StepTimeCache& step_times, int64_t trials, int threads) {
  TRAINSIM_RETURN_IF_ERROR(CheckWhatIf(config, step_times));
  RunConfig quiet = config;
  quiet.record_events = false;
  KeepFreedHeapForTrials();
  const size_t n = static_cast<size_t>(std::max<int64_t>(0, trials));
  WhatIfSamples s;
  s.delta_wall_time_s.resize(n);
  s.delta_cost_usd.resize(n);
  s.delta_lost_work_s.resize(n);
  s.delta_downtime_s.resize(n);
  // Trial k writes only slot k (sim/parallel.h), so the samples are one thread's, in order.
  TRAINSIM_RETURN_IF_ERROR(
      sim::ParallelFor(int64_t(n), std::max(1, threads), [&](int64_t k) -> Status {
        Result<WhatIfReport> w = CompareTrial(quiet, added, step_times, k);
        if (!w.ok()) return w.status().WithPrefix("trial " + std::to_string(k));
        s.delta_wall_time_s[size_t(k)] = w->delta_wall_time_s;
        s.delta_cost_usd[size_t(k)] = w->delta_cost_usd;
        s.delta_lost_work_s[size_t(k)] = w->delta_lost_work_s;
        s.delta_downtime_s[size_t(k)] = w->delta_downtime_s;
        return Status::Ok();
      }));
  return s;
}

}  // namespace trainsim::run
