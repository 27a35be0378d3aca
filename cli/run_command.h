// `trainsim run SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE] [--allow-oom] [--gpu N]
//  [--events] [--trials N] [--seed S] [--optimize-checkpoint-interval]`:
// first simulates one training iteration of the scenario's model and layout on its cluster
// (step/step_simulation.h) and prints the step time, tokens/s, TFLOP/s per GPU, MFU and
// HFU, the peak memory per GPU by category (and whether it fits), and one GPU's step broken
// into compute, exposed TP communication, exposed DP communication, pipeline wait, bubble,
// optimizer and other — which add up to the step time. When the scenario schedules stragglers
// or link faults, the step with all of them active is shown beside the healthy one.
//
// Then it simulates the whole run (checkpoint/run_simulation.h, the scenario mapped by
// scenarios/run_config.h, step times from the step simulation) on failure history 0 and prints
// wall time, goodput, ETTR, failures by cause, lost work, downtime, checkpoints, GPU-hours, cost
// and where the wall time went (categories that add up to the wall time exactly); --events adds
// the event log. --trials N adds mean, p50, p90, p99 of wall time, goodput, ETTR and cost over
// failure histories 0..N-1 (sim/stats.h's percentile rule; a progress bar on a terminal).
// --optimize-checkpoint-interval scans the checkpoint interval over the same histories and shows
// the optimum next to Young's and Daly's. --seed S replaces the scenario's seed.
// --trace FILE writes the step's trace to FILE and the run's timeline (training, checkpoint
// stalls and background writes, detection, waiting, restart, failures) to FILE with ".run"
// before its extension (trace.json → trace.run.json): the two live on time scales nine orders of
// magnitude apart, so one file would show either the step or the run as a sliver.
// JSON: {scenario, layout, step, [step_with_faults], run, [run_stats], [checkpoint_interval]}.
// Exit 0 on success; 2 for invalid input or a layout that cannot run (including one that does
// not fit in memory, unless --allow-oom).
#ifndef TRAINSIM_CLI_RUN_COMMAND_H_
#define TRAINSIM_CLI_RUN_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "checkpoint/monte_carlo.h"
#include "checkpoint/run_simulation.h"
#include "step/step_simulation.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::cli {

void AddRunCommand(CLI::App& app, int* exit_code);

// The human-readable report and the JSON document (names as in the issue: step.time_s, ...).
// `faulted` is the step with the scenario's stragglers/link faults active, if any.
std::string FormatStepReport(const scenarios::ResolvedScenario& resolved,
                             const step::StepConfig& config,
                             const step::StepResult& result,
                             const std::optional<step::StepResult>& faulted);
std::string FormatStepJson(const scenarios::ResolvedScenario& resolved,
                           const step::StepConfig& config,
                           const step::StepResult& result,
                           const std::optional<step::StepResult>& faulted);
nlohmann::json StepJsonDocument(const scenarios::ResolvedScenario& resolved,
                                const step::StepConfig& config,
                                const step::StepResult& result,
                                const std::optional<step::StepResult>& faulted);

// What `trainsim run` asks of the run simulation.
struct RunRequest {
  std::optional<uint64_t> seed;  // replaces the scenario's seed
  int64_t trials = 0;            // > 0: Monte Carlo over trials [0, trials)
  bool optimize_interval = false;
  // Trials per scanned interval: `trials` when given, else this many.
  int64_t default_scan_trials = 100;
  bool progress = true;  // a progress bar on a terminal (sim::ProgressBar decides)
};

// The run simulation's results.
struct RunOutcome {
  checkpoint::RunConfig config;  // as simulated (seed applied)
  checkpoint::RunReport run;     // trial 0, with its event log
  std::optional<checkpoint::MonteCarloSummary> stats;
  std::optional<checkpoint::IntervalOptimum> optimum;
  int64_t scan_trials = 0;
};

// Simulates the run of `resolved` with step times from `step` (the healthy step's config).
// Errors are the user's (bad fault, interval, rate, ...) or the step simulation's.
Result<RunOutcome> SimulateScenarioRun(const scenarios::ResolvedScenario& resolved,
                                       const step::StepConfig& step,
                                       const RunRequest& request);

// The human report of the run (and of --trials / the interval scan when present).
std::string FormatRunReport(const scenarios::ResolvedScenario& resolved, const RunOutcome& outcome,
                            bool events);
// Adds `run` (RunReportJson, plus `events` when asked), `run_stats` and `checkpoint_interval` to
// `doc`.
void AddRunJson(const RunOutcome& outcome, bool events, nlohmann::json& doc);

// The run's timeline as a Chrome/Perfetto trace, drawn from the event log (RunReport::events):
// one track with training / detection / waiting / restart, one with checkpoint stalls and
// background writes, and an instant per failure.
std::string RunTraceJson(const checkpoint::RunReport& report, checkpoint::CheckpointPolicy policy);
// "trace.json" → "trace.run.json"; "trace" → "trace.run.json".
std::string RunTracePath(const std::string& step_trace_path);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_RUN_COMMAND_H_
