// How the `trainsim` command is put together, and helpers every subcommand shares.
//
// Each subcommand lives in its own pair of files, cli/<name>_command.{h,cc}, exposing
//
//   void Add<Name>Command(CLI::App& app, int* exit_code);
//
// which registers `app.add_subcommand("<name>", "...")`, its options, and a callback that does
// the work and stores the process exit code in *exit_code (kExitOk, kExitBadInput, ...). To add
// a command:
//   1. write cli/<name>_command.{h,cc} (see cli/check_command.cc for a complete example);
//   2. add one line to cli/main.cc:       Add<Name>Command(app, &exit_code);
//      (and its #include);
//   3. add one line to cli/CMakeLists.txt: <name>_command.cc   (in the trainsim source list),
//      plus the library it needs in target_link_libraries if not there yet.
//
// Conventions every command follows (tests in tests/cli/ hold them):
//   - bad input (unreadable or invalid scenario, bad flag, bad --set) prints one message to
//     stderr, prefixed "trainsim: error: ", writes nothing to stdout or to any file, and exits 2;
//   - success exits 0; --help and --version exit 0;
//   - a scenario is loaded with AddScenarioOptions + LoadResolvedScenario, so `--set` and
//     `--json` behave the same in every command;
//   - output is deterministic: the same input gives byte-identical stdout.
#ifndef TRAINSIM_CLI_COMMANDS_H_
#define TRAINSIM_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

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

// LoadScenario + Resolve with the options' path and overrides.
Result<scenarios::ResolvedScenario> LoadResolvedScenario(const ScenarioOptions& options);

// Prints "trainsim: error: MESSAGE" to stderr and returns the exit code for the status
// (kExitBadInput for user errors, kExitUnavailable, or kExitFailure for kInternal). A run of
// more than 32 digits in MESSAGE (a 3,000-digit number the parser echoes) is shortened to its
// first 20 and its length (ElideLongNumbers), so the message stays one readable line.
int ReportError(const Status& status);
std::string ElideLongNumbers(const std::string& message);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_COMMANDS_H_
