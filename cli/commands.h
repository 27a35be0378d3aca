// cli/commands.h — the `trainsim` subcommands and what they share.
//
// Each subcommand is cli/<name>_command.cc: options, one library call (scenarios/session.h or a
// library below it) and a report (cli/report/). Add<Name>Command registers it on the app with a
// callback that stores the process exit code. Conventions every command keeps (tests/cli/ and
// tests/hardening/ hold them): bad input prints one "trainsim: error: " line on stderr, writes
// nothing to stdout or any file and exits 2; success, --help and --version exit 0; a scenario is
// read with AddScenarioOptions + LoadResolvedScenario, so --set and --json behave the same
// everywhere; the same input gives byte-identical output. docs/commands.md describes each
// command's options and output.
#ifndef TRAINSIM_CLI_COMMANDS_H_
#define TRAINSIM_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/api.h"
#include "scenarios/scenario.h"
#include "sim/status.h"

namespace trainsim::cli {

// Process exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // an internal error (a bug) or an I/O failure
inline constexpr int kExitBadInput = 2;     // anything the user's input causes
inline constexpr int kExitUnavailable = 3;  // an optional backend (GPU, NCCL, MPI) is missing

// The options every scenario-reading command takes: SCENARIO, --set PATH=VALUE (repeatable),
// --json.
struct ScenarioOptions {
  std::string path;
  std::vector<std::string> sets;
  bool json = false;
};

// Registers SCENARIO (positional, required), --set and --json on `command`; `options` must
// outlive the parse.
void AddScenarioOptions(CLI::App* command, ScenarioOptions* options);

// LoadScenario + Resolve with the options' path and overrides (api::Load).
Result<scenarios::ResolvedScenario> LoadResolvedScenario(const ScenarioOptions& options);
// The options' path and overrides as the library layer's input (cli/api.h).
api::ScenarioInput ScenarioInputOf(const ScenarioOptions& options);

// Prints "trainsim: error: MESSAGE" to stderr and returns the exit code for the status
// (kExitBadInput for user errors, kExitUnavailable, or kExitFailure for kInternal). A run of
// more than 32 digits in MESSAGE (a 3,000-digit number the parser echoes) is shortened to its
// first 20 and its length (ElideLongNumbers, cli/api.h), so the message stays one readable line.
int ReportError(const Status& status);

// The subcommands, registered by main.cc.
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
void AddWhatIfCommand(CLI::App& app, int* exit_code);
void AddSweepCommand(CLI::App& app, int* exit_code);
void AddValidateCommand(CLI::App& app, int* exit_code);
void AddCollectiveCommand(CLI::App& app, int* exit_code);
void AddCalibrateCommand(CLI::App& app, int* exit_code);
// `import hf CONFIG.json`: a Hugging Face config as a model { } block (cli/import_command.cc).
void AddImportCommand(CLI::App& app, int* exit_code);
// `export megatron SCENARIO`: the Megatron-LM arguments of a scenario (cli/export_command.cc).
void AddExportCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_COMMANDS_H_
