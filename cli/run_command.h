// `trainsim run SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE] [--allow-oom] [--gpu N]
//  [--events] [--trials N] [--seed S] [--optimize-checkpoint-interval] [--calibration FILE]`:
// simulates one training step of the scenario (scenarios::SimulateScenarioStep), then the whole
// run with its checkpoints and failures (scenarios::SimulateScenarioRun), and prints both
// reports (cli/report/step_report.h, cli/report/run_report.h). --trace FILE writes the step's
// trace to FILE and the run's timeline to FILE with ".run" before its extension: the two live on
// time scales nine orders of magnitude apart.
// JSON: {scenario, layout, step, [step_with_faults], run, [run_stats], [checkpoint_interval]}.
// Exit 0 on success; 2 for invalid input or a layout that cannot run (including one that does
// not fit in memory, unless --allow-oom); nothing is written on error.
#ifndef TRAINSIM_CLI_RUN_COMMAND_H_
#define TRAINSIM_CLI_RUN_COMMAND_H_

#include <CLI/CLI.hpp>

namespace trainsim::cli {

void AddRunCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_RUN_COMMAND_H_
