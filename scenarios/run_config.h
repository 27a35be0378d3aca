// scenarios/run_config.h — a resolved scenario turned into the run simulation's config, and the
// step simulation wrapped as the run simulation's step-time callback.
//
// Promises: MakeRunConfig maps scenario.proto's training, checkpoint, recovery, failures,
// faults, cost and seed to run::RunConfig's plain structs (so run/ never sees protobuf) and
// returns a config that ValidateRunConfig accepts, or an error naming the scenario field.
// MakeStepTimeFn answers "how long is a step in this run state" with step::SimulateStep. How
// each field maps, and the approximations of the callback, are in run_config.cc.
#ifndef TRAINSIM_SCENARIOS_RUN_CONFIG_H_
#define TRAINSIM_SCENARIOS_RUN_CONFIG_H_

#include <optional>

#include "run/run_simulation.h"
#include "scenarios/scenario.h"
#include "sim/status.h"
#include "step/step_simulation.h"

namespace trainsim::scenarios {

// The run simulation's config for a resolved scenario. Errors name the scenario field.
Result<run::RunConfig> MakeRunConfig(const ResolvedScenario& r);

// Converts one scheduled fault (already validated against the scenario).
Result<run::ScheduledFault> MakeScheduledFault(const ResolvedFault& f);

// The step simulation as a run-simulation callback (see the header comment). `base` is the
// healthy step's configuration (MakeStepConfig); `base.allow_oom` is honoured. Each distinct
// cluster state is simulated once per callback (copies share it): states that differ only in
// the background checkpoint share reuse one simulation. `healthy`: the breakdown of
// SimulateStep(base) when the caller has it already (it is then not simulated again).
run::StepTimeFn MakeStepTimeFn(const step::StepConfig& base,
                               std::optional<step::StepBreakdown> healthy = std::nullopt);

// StepBreakdown → StepTiming (rounded to whole nanoseconds per category).
run::StepTiming ToStepTiming(const step::StepBreakdown& b);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_RUN_CONFIG_H_
