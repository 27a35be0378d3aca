// `trainsim whatif SCENARIO --fail KIND:ID@TIME [--fail ...] [--slow gpu:IDxF@T+D ...]
//  [--set PATH=VALUE]... [--json] [--events] [--trial K] [--trials N]`: the scenario's run with and
//  without
// the added faults, side by side (checkpoint/whatif.h): extra wall time, lost work, downtime,
// goodput, ETTR, extra cost, and for each added fault which checkpoint was restored and when
// training resumed. Both sides train the same number of steps (for a training.duration goal,
// what the baseline trains in that time) and draw the same stochastic failure history (trial K,
// common random numbers), so the difference is the added faults' alone.
// --trials N repeats the comparison over failure histories 0..N-1 and reports mean, p50, p90,
// p99 of the extra wall time, lost work and cost.
// JSON: {baseline: RUN, whatif: RUN, delta: {wall_time_s, cost_usd, lost_work_s}, added_faults,
// trials: {n, delta_wall_time_s: {mean, p50, p90, p99}, ...} with --trials}.
// Exit 0 on success, 2 for bad input (unknown fault kind, ids out of range, a fault after the
// end of training, no fault given).
#ifndef TRAINSIM_CLI_WHATIF_COMMAND_H_
#define TRAINSIM_CLI_WHATIF_COMMAND_H_

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "checkpoint/monte_carlo.h"
#include "checkpoint/run_simulation.h"

namespace trainsim::cli {

void AddWhatIfCommand(CLI::App& app, int* exit_code);

// A run report as JSON with the names: wall_time_s, goodput, ettr, failures,
// failures_by_cause, checkpoints, lost_work_s, cost_usd, gpu_hours, steps,
// breakdown_s.{useful, exposed_comm, bubble, checkpoint_stall, lost, detection, restart,
// waiting}. For `trainsim run`'s `run` object too.
nlohmann::json RunReportJson(const checkpoint::RunReport& report);

// {mean, p50, p90, p99} of a Monte Carlo statistic (sim/stats.h's percentile rule).
nlohmann::json StatJson(const checkpoint::Stat& stat);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_WHATIF_COMMAND_H_
