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
#include <string>

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

// The shortest interval between checkpoints the storage allows: the background transfer of one
// checkpoint (ASYNC: the write at the storage's aggregate bandwidth shared by all writers;
// IN_MEMORY: the longer of the peer copy and the write); 0 for SYNC.
sim::Time BackgroundWriteBound(const RunConfig& config, const checkpoint::CheckpointCosts& costs);

// The checkpoint interval a run uses: `auto` is Daly's optimum for the simulated blocking cost
// δ (CheckpointBlockingCostSeconds), raised to BackgroundWriteBound when that is longer.
struct ResolvedInterval {
  checkpoint::CheckpointInterval interval;
  std::string bound = "CONFIGURED";  // CONFIGURED, DALY or BACKGROUND_WRITE
  double daly_s = 0;                 // auto: Daly's optimum (0 otherwise)
  double background_write_s = 0;     // BackgroundWriteBound in seconds
};
Result<ResolvedInterval> ResolveInterval(const RunConfig& config, StepTimeCache& step_times);

namespace detail {
// For the Monte Carlo driver: one trial without validation or the fault-after-end check
// (`stochastic` = false turns the failure model off), and that check on its own.
Result<RunReport> SimulateRunUnchecked(const RunConfig& config, StepTimeCache& step_times,
                                       int64_t trial, bool stochastic);
Status CheckFaultsBeforeEnd(const RunConfig& config, StepTimeCache& step_times);
}  // namespace detail

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_SIMULATION_H_
