// scenarios/run_config.h — a resolved scenario turned into the run simulation's config, and the
// step simulation wrapped as the run simulation's step-time callback.
//
// What it is: the bridge from scenario.proto's `training`, `checkpoint`, `recovery`,
// `failures`, `faults`, `cost` and `seed` to checkpoint::RunConfig's plain structs, so
// checkpoint/ never sees protobuf; and MakeStepTimeFn, which answers "how long is a step in
// this cluster state" with step::SimulateStep.
//
// Mapping (what is not obvious):
//   - training.duration is wall time the job holds its GPUs → RunConfig::wall_time_limit;
//     tokens or steps → total_steps.
//   - checkpoint.enabled = false → interval `never` (a failure restarts from step 0).
//   - Checkpoint traffic goes over the compute NICs: node bandwidth = nics_per_node × NIC rate;
//     GPU→host copies at the catalogue's PCIe bandwidth.
//   - A LINK fault with degrade = 1 (down) takes its node out like a NIC failure; degrade < 1
//     runs that NIC's link at 1 − degrade of its bandwidth for `duration`.
//   - HANG and SOFTWARE restart in place; GPU, NODE, NIC need a replacement node.
//   - Stochastic causes: scenario `causes` (fraction → weight, kind → category) or, when empty,
//     checkpoint::DefaultFailureCauses(); every hardware cause repairs in recovery.repair_time.
//
// Step time per cluster state (MakeStepTimeFn): slowed GPUs and degraded NIC links go to the
// step simulation as they are. Fewer live DP replicas (ELASTIC): the layout shrinks to the live
// replicas on correspondingly fewer nodes, keeping the global batch (the survivors take the lost
// replicas' micro-batches, rounded up to whole micro-batches per replica); slowdowns and links
// on GPUs/NICs beyond the shrunk job are dropped (an approximation). Background checkpoint
// traffic sharing a fraction s of each node's network: the step's network-exposed time (DP
// communication and pipeline waits) is stretched by 1 / (1 − s), s capped at 0.9 — a
// first-order model, since simulating the reduced NIC bandwidth would make the step simulation
// expand every replica. Categories: useful = compute + optimizer; exposed communication = TP +
// DP exposed + pipeline waits; bubble = bubble + other.
#ifndef TRAINSIM_SCENARIOS_RUN_CONFIG_H_
#define TRAINSIM_SCENARIOS_RUN_CONFIG_H_

#include "checkpoint/run_simulation.h"
#include "step/step_simulation.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::scenarios {

// The run simulation's config for a resolved scenario. Errors name the scenario field.
Result<checkpoint::RunConfig> MakeRunConfig(const ResolvedScenario& r);

// Converts one scheduled fault (already validated against the scenario).
Result<checkpoint::ScheduledFault> MakeScheduledFault(const ResolvedFault& f);

// The step simulation as a run-simulation callback (see the header comment). `base` is the
// healthy step's configuration (MakeStepConfig); `base.allow_oom` is honoured.
checkpoint::StepTimeFn MakeStepTimeFn(const step::StepConfig& base);

// StepBreakdown → StepTiming (rounded to whole nanoseconds per category).
checkpoint::StepTiming ToStepTiming(const step::StepBreakdown& b);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_RUN_CONFIG_H_
