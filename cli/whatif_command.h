// `trainsim whatif SCENARIO --fail KIND:ID@TIME [--fail ...] [--slow gpu:IDxF@T+D ...]
//  [--set PATH=VALUE]... [--json] [--events] [--trial K] [--trials N]`: the scenario's run with
// and without the added faults, side by side (scenarios::SimulateScenarioWhatIf, reported by
// cli/report/whatif_report.h). Both sides train the same number of steps on the same stochastic
// failure history (trial K), so the difference is the added faults' alone; --trials N adds the
// distribution of the delta over failure histories 0..N-1.
// Exit 0 on success, 2 for bad input (unknown fault kind, ids out of range, a fault after the
// end of training, no fault given).
#ifndef TRAINSIM_CLI_WHATIF_COMMAND_H_
#define TRAINSIM_CLI_WHATIF_COMMAND_H_

#include <CLI/CLI.hpp>

namespace trainsim::cli {

void AddWhatIfCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_WHATIF_COMMAND_H_
