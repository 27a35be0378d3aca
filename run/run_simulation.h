// run::SimulateRun — the run simulation: hours to months of training on sim::Engine, with
// checkpoints, scheduled and stochastic faults, detection, recovery and repair, and an exact
// accounting of where every nanosecond of wall time went. What it models and why is in
// docs/run-simulation.md; step times come only through the StepTimeCache (run/run_state.h).
//
// Promises: wall = useful + exposed_comm + bubble + checkpoint_stall + lost + detection +
// restart + waiting, exactly; steps_executed − steps_rolled_back = total_steps. The same config,
// callback and trial give identical reports; randomness comes only from
// RandomStreams(config.seed).Stream("trial/<k>/failures").
#ifndef TRAINSIM_RUN_RUN_SIMULATION_H_
#define TRAINSIM_RUN_RUN_SIMULATION_H_

#include <cstdint>

#include "run/run_config.h"
#include "run/run_report.h"
#include "run/run_state.h"
#include "sim/status.h"

namespace trainsim::run {

// Runs trial `trial`. InvalidArgument for a bad config or a scheduled fault at or after the
// fault-free end of training, FailedPrecondition for a run that has not finished by
// max_wall_time, or an error from the step time callback.
Result<RunReport> SimulateRun(const RunConfig& config, StepTimeCache& step_times,
                              int64_t trial = 0);

// The blocking cost δ of one checkpoint under the config's policy (seconds): the write for SYNC;
// the snapshot plus the extra step time caused by the background write(s) for ASYNC/IN_MEMORY.
Result<double> CheckpointBlockingCostSeconds(const RunConfig& config, StepTimeCache& step_times);

namespace detail {
// For the Monte Carlo driver: one trial without validation or the fault-after-end check
// (`stochastic` = false turns the failure model off), and that check on its own.
Result<RunReport> SimulateRunUnchecked(const RunConfig& config, StepTimeCache& step_times,
                                       int64_t trial, bool stochastic);
Status CheckFaultsBeforeEnd(const RunConfig& config, StepTimeCache& step_times);
}  // namespace detail

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_SIMULATION_H_
