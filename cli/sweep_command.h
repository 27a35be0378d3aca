// `trainsim sweep SCENARIO [--gpus 128,256,...] [--objective time|cost] [--top K] [--csv FILE]
// [--json] [--tokens N] [--tp-across-nodes] [--micro-batches 1,2,4,8,16] [--trials N]
// [--set PATH=VALUE]...`:
// every valid parallel layout of the scenario's model on the scenario's cluster, or on each
// --gpus count of its nodes (sweep/sweep.h). Prints the top K by time to train or by cost, with
// failures and checkpoints counted, and the time–cost Pareto front; --csv writes every layout,
// evaluated or rejected with its reason; --json prints {top, pareto, evaluated, rejected, ...};
// --trials N adds a Monte Carlo run simulation of each top layout (means over N trials).
//
// Under `mpirun -np K` the layouts are split across the ranks and rank 0 prints (byte-identical
// to one process); without mpirun the command is one process and never initialises MPI.
// Exit 0 on success; 2 for bad input: an unknown objective, a GPU count the cluster cannot hold,
// a scenario without a token budget (training.duration) and no --tokens, or a model no layout
// fits (the message names the smallest shortfall and what would fix it).
#ifndef TRAINSIM_CLI_SWEEP_COMMAND_H_
#define TRAINSIM_CLI_SWEEP_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

#include "scenarios/scenario.h"
#include "sim/status.h"
#include "sweep/sweep.h"

namespace trainsim::cli {

void AddSweepCommand(CLI::App& app, int* exit_code);

// The sweep problem of a resolved scenario: its model, GPU, network, global batch, failure
// model, checkpoint and recovery policies and price. `gpus` empty = the scenario's own GPU
// count; `tokens` <= 0 = the scenario's budget (training.tokens, or steps × tokens per step).
Result<sweep::SweepProblem> MakeSweepProblem(const scenarios::ResolvedScenario& resolved,
                                             const std::vector<int>& gpus, double tokens);

// The human table, the JSON document and the CSV of every layout.
std::string FormatSweepTable(const sweep::SweepProblem& problem, const sweep::SweepResult& result,
                             sweep::Objective objective, const std::string& title);
std::string FormatSweepJson(const sweep::SweepResult& result, sweep::Objective objective);
std::string FormatSweepCsv(const sweep::SweepResult& result);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_SWEEP_COMMAND_H_
