// `trainsim validate [--dir DIR] [--set PATH=VALUE]... [--json]`: runs every scenario in
// scenarios/validation/ through the step simulation and prints, per row, the predicted and the
// published value (TFLOP/s per GPU when the paper gives that, else iteration time), the error,
// and the mean absolute percentage error per source and overall. Rows whose micro-batch size is
// unpublished (scenarios/validation/published.csv) use the best of 1, 2, 4, 8 that fits and
// runs fastest. The same documented parameters serve every row: nothing is set per row.
// `--set` applies to every scenario (e.g. facts common to all rows). Exit 0; 2 when the
// directory or a scenario cannot be read.
#ifndef TRAINSIM_CLI_VALIDATE_COMMAND_H_
#define TRAINSIM_CLI_VALIDATE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

void AddValidateCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_VALIDATE_COMMAND_H_
