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
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/report/html_report.h"
#include "scenarios/scenario.h"
#include "sim/atomic_file.h"
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
// LoadScenario + Resolve with the options' path and overrides (api::Load).
Result<scenarios::ResolvedScenario> LoadResolvedScenario(const ScenarioOptions& options);
// The options' path and overrides as the library layer's input (cli/api.h).
api::ScenarioInput ScenarioInputOf(const ScenarioOptions& options);

// Prints "trainsim: error: MESSAGE" to stderr and returns the exit code for the status
// (kExitBadInput for user errors, kExitUnavailable, or kExitFailure for kInternal). A run of
// more than 32 digits in MESSAGE (a 3,000-digit number the parser echoes) is shortened to its
// first 20 and its length (ElideLongNumbers, cli/api.h), so the message stays one readable line.
// Under mpirun only rank 0 prints input errors (every rank meets the same ones); kInternal and
// kUnavailable (a bug, a rank that stopped answering) print on every rank, with "(rank N)".
int ReportError(const Status& status);

// Output files (docs/commands.md, "Output files"). An output option is checked and opened
// before the long work starts, so a bad path fails in milliseconds, not after the sweep:
//  - OpenOutput: refuses an empty name ("--csv ''"), any file in `inputs` (the same file by
//    device and inode, through links: "--csv names the input scenario"), then opens `writer`
//    (sim::AtomicFileWriter: a regular file is replaced atomically, keeping its mode, through
//    symbolic links; a device or FIFO is written directly; a read-only file is refused).
//  - CheckOutput: the same checks without creating anything, for a file another program writes
//    (calibrate -o).
// Errors are kInvalidArgument or kNotFound (exit 2), prefixed with `option`.
struct InputFile {
  std::string what;  // "the input scenario", "the calibration file"
  std::string path;
};
Status CheckOutput(const std::string& option, const std::string& path,
                   const std::vector<InputFile>& inputs);
Status OpenOutput(const std::string& option, const std::string& path,
                  const std::vector<InputFile>& inputs, sim::AtomicFileWriter* writer);

// A number option's check: finite, above `lo` and at most `hi`, or the message "must be WHAT
// above LO and at most HI, got 'TEXT'". (CLI::Range lets "nan" through, as every comparison
// with it is false, and prints a lower bound of 1e-9 as 0.000000.)
CLI::Validator NumberAbove(double lo, double hi, const std::string& what);

// An output file option's check at parsing: a name ("--html ''" is refused as "--csv ''" is,
// where the empty string would otherwise read as the option not given).
CLI::Validator NonEmptyFileName();

// Refuses two output options that name the same file (by path, or by device and inode where both
// exist): the one written last would replace the other. Devices and FIFOs (/dev/null) may take
// several. `outputs`' `what` is the option ("--trace"); empty paths are options not given.
Status CheckDistinctOutputs(const std::vector<InputFile>& outputs);

// --html FILE, before any work: the plotting libraries loaded (report::LoadWebLibraries) and FILE
// checked as an output (CheckOutput), so a missing library or an unwritable path fails at once.
// nullopt when `path` is empty (no --html). `outputs`: the command's other output files
// (CheckDistinctOutputs), so that the report never replaces one of them.
Result<std::optional<report::WebLibraries>> PrepareHtml(const std::string& path,
                                                        const std::vector<InputFile>& inputs,
                                                        const std::vector<InputFile>& outputs = {});

// Everything main() does after registering the commands runs inside this: an exception that
// escapes (std::bad_alloc, std::length_error, a library's exception) becomes one
// "trainsim: error: " line and an exit code instead of an abort — kExitBadInput for
// bad_alloc/length_error (a size the input asked for: a scenario or option too large for this
// machine's memory), kExitFailure for anything else (a bug). Then standard output is flushed and
// checked: a failed write (a full disk, /dev/full) prints a message and returns kExitBadInput
// (the same code as an output file that cannot be written), never 0 with truncated output.
int RunGuarded(const std::function<int()>& body);

// True when this process is rank 0 of an MPI launch, or not launched by mpirun. Only rank 0
// prints messages every rank would print alike (bad input), so mpirun -np 8 says it once.
bool IsMessageRank();

// Prints "trainsim: error: <text>" on the message rank. Another rank keeps the text back for
// FinishRank: every rank reads the same command line and files, so rank 0 says it.
void SayError(const std::string& text);

// Called by main() with the exit code. On a rank other than 0 that kept an error back it waits
// up to kFollowerGraceSeconds before exiting: a rank that exited at once could make mpirun tear
// the job down before rank 0's message got out (seen under ASan on an oversubscribed machine).
// Normally rank 0 exits first with the same error and mpirun ends this rank inside the wait; if
// the wait runs out, the error was this rank's own (a file missing on its node), and it prints
// the kept message with its rank number. Returns `code` unchanged.
inline constexpr int kFollowerGraceSeconds = 10;
int FinishRank(int code);

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
// `diagnose SCENARIO`: causes of the gap to peak, re-simulated proposals, a measured profile
// against the model (cli/diagnose_command.cc).
void AddDiagnoseCommand(CLI::App& app, int* exit_code);
// `emulate SCENARIO` and `worker --coordinator HOST:PORT`: real processes, real faults
// (cli/emulate_command.cc, cli/worker_command.cc, emulate/emulate.h).
void AddEmulateCommand(CLI::App& app, int* exit_code);
void AddWorkerCommand(CLI::App& app, int* exit_code);

}  // namespace trainsim::cli

#endif  // TRAINSIM_CLI_COMMANDS_H_
