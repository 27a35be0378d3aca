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

namespace trainsim::cli {

void AddSweepCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_SWEEP_COMMAND_H_
