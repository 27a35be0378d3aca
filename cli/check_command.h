// `trainsim check SCENARIO [--set PATH=VALUE]... [--json]`: validates a scenario and prints it
// resolved — every default filled in, catalogue specs looked up, and derived values (GPU count,
// parameters, tokens per step, steps and tokens in total, expected failures, price per hour).
// Exit 0 when the scenario is valid, 2 with one message on stderr when it is not.
#ifndef TRAINSIM_CLI_CHECK_COMMAND_H_
#define TRAINSIM_CLI_CHECK_COMMAND_H_

#include <CLI/CLI.hpp>

namespace trainsim::cli {

void AddCheckCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_CHECK_COMMAND_H_
