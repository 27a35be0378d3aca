// `trainsim run SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE] [--allow-oom] [--gpu N]`:
// simulates one training iteration of the scenario's model and layout on its cluster
// (parallelism/step_simulation.h) and prints the step time, tokens/s, TFLOP/s per GPU, MFU and
// HFU, the peak memory per GPU by category (and whether it fits), and one GPU's step broken
// into compute, exposed TP communication, exposed DP communication, pipeline wait, bubble,
// optimizer and other — which add up to the step time. When the scenario schedules stragglers
// or link faults, the step with all of them active is shown beside the healthy one.
// Exit 0 on success; 2 for invalid input or a layout that cannot run (including one that does
// not fit in memory, unless --allow-oom).
#ifndef TRAINSIM_CLI_RUN_COMMAND_H_
#define TRAINSIM_CLI_RUN_COMMAND_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "parallelism/step_simulation.h"
#include "scenarios/scenario.h"

namespace trainsim::cli {

void AddRunCommand(CLI::App& app, int* exit_code);

// The human-readable report and the JSON document (names as in the issue: step.time_s, ...).
// `faulted` is the step with the scenario's stragglers/link faults active, if any.
std::string FormatStepReport(const scenarios::ResolvedScenario& resolved,
                             const parallelism::StepConfig& config,
                             const parallelism::StepResult& result,
                             const std::optional<parallelism::StepResult>& faulted);
std::string FormatStepJson(const scenarios::ResolvedScenario& resolved,
                           const parallelism::StepConfig& config,
                           const parallelism::StepResult& result,
                           const std::optional<parallelism::StepResult>& faulted);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_RUN_COMMAND_H_
