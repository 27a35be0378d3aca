// `trainsim collective SCENARIO --op OP [--algo ALGO] [--group G] [--sizes MIN:MAX]
//  [--step-factor F] [--expand] [--calibration FILE] [--json] [--set PATH=VALUE]...`: times one
// collective over a group of the scenario's GPUs for a range of message sizes
// (scenarios::TimeScenarioCollective), printed like nccl-tests (size, time, algbw, busbw,
// algorithm, protocol) or as JSON (cli/report/collective_report.h). The forms of each option are
// in collective_command.cc. Bad input (unknown op or algorithm, a group larger than the cluster,
// a bad size, a calibration file that is missing, does not parse or was measured on another GPU
// type): one message on stderr and exit 2.
#ifndef TRAINSIM_CLI_COLLECTIVE_COMMAND_H_
#define TRAINSIM_CLI_COLLECTIVE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace trainsim::cli {

void AddCollectiveCommand(CLI::App& app, int* exit_code);

// Parses --group against a cluster of `num_gpus` GPUs (see the header comment).
}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_COLLECTIVE_COMMAND_H_
