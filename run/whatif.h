// run::SimulateWhatIf — the same training with and without added faults, side by side.
//
// Both sides train the same number of steps on the same stochastic failure history (trial k's
// stream, common random numbers), so the difference is the added faults' alone. When the goal
// is a wall-clock duration, the number of steps is what the baseline trains in that time, and
// both sides then run to that many steps (so "extra wall time" means something).
//
// Promises: delta = whatif − baseline for wall time, cost and lost work; for each added fault
// that interrupted training, whatif.failure_records holds which checkpoint was restored and when
// training resumed. An added fault at or after the end of the baseline has no effect: it is left
// out of the what-if run and named in `notes`; one before it is simulated, even past the
// fault-free end (failures move the baseline's). The scenario's own faults are checked as
// SimulateRun checks them (with a wall-clock goal, not against an end). A duplicate added fault
// (the same as one of the scenario's faults or an earlier added fault) is simulated once and
// named in `warnings`.
#ifndef TRAINSIM_RUN_WHATIF_H_
#define TRAINSIM_RUN_WHATIF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "run/run_simulation.h"
#include "sim/status.h"

namespace trainsim::run {

struct WhatIfReport {
  RunReport baseline;
  RunReport whatif;
  int64_t steps = 0;  // trained by both
  double delta_wall_time_s = 0;
  double delta_cost_usd = 0;
  double delta_lost_work_s = 0;
  double delta_downtime_s = 0;        // detection + restart + waiting
  std::vector<bool> no_effect;        // per added fault: at or after the baseline's end
  std::vector<std::string> notes;     // one per fault with no effect
  std::vector<std::string> warnings;  // one per duplicate
};

Result<WhatIfReport> SimulateWhatIf(const RunConfig& config,
                                    const std::vector<ScheduledFault>& added,
                                    StepTimeCache& step_times, int64_t trial = 0);

// SimulateWhatIf's four differences over failure histories [0, trials): sample k is trial k's
// whatever `threads` (≥ 1) run them. An error in the config or the scenario's faults comes
// first, as SimulateWhatIf's; else it is the lowest failing trial's, prefixed "trial k". The
// runs keep no event log or phases (RunConfig::record_events off): the
// differences do not use them, and at 131,072 GPUs a history logs ~10^6 checkpoint events.
struct WhatIfSamples {
  std::vector<double> delta_wall_time_s, delta_cost_usd, delta_lost_work_s, delta_downtime_s;
};
Result<WhatIfSamples> SimulateWhatIfTrials(const RunConfig& config,
                                           const std::vector<ScheduledFault>& added,
                                           StepTimeCache& step_times, int64_t trials,
                                           int threads = 1);

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_WHATIF_H_
