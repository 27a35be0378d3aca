// trainsim: the command-line entry point. Subcommands register themselves through
// Add<Name>Command (see cli/commands.h for the pattern and the exit-code conventions).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "sim/atomic_file.h"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace {

int Main(int argc, char** argv) {
  CLI::App app{
      "trainsim: a discrete-event simulator of distributed LLM training on GPU clusters "
      "(TP x PP x DP layouts, collectives, checkpoints, faults, recovery).",
      "trainsim"};
  app.set_version_flag("--version", std::string("trainsim ") + TRAINSIM_VERSION);
  int exit_code = trainsim::cli::kExitOk;

  // One line per command (cli/commands.h).
  trainsim::cli::AddCheckCommand(app, &exit_code);
  trainsim::cli::AddRunCommand(app, &exit_code);
  trainsim::cli::AddValidateCommand(app, &exit_code);
  trainsim::cli::AddCalibrateCommand(app, &exit_code);
  trainsim::cli::AddCollectiveCommand(app, &exit_code);
  trainsim::cli::AddWhatIfCommand(app, &exit_code);
  trainsim::cli::AddSweepCommand(app, &exit_code);
  trainsim::cli::AddImportCommand(app, &exit_code);
  trainsim::cli::AddExportCommand(app, &exit_code);
  trainsim::cli::AddDiagnoseCommand(app, &exit_code);
  trainsim::cli::AddEmulateCommand(app, &exit_code);
  trainsim::cli::AddWorkerCommand(app, &exit_code);

  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  std::string command_list;
  for (const std::string& n : names) command_list += (command_list.empty() ? "" : ", ") + n;
  // A first word that is neither an option nor a command is the commonest slip; say so plainly.
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    trainsim::cli::SayError(std::string("unknown command \"") + argv[1] + "\" (commands: " +
                            command_list + ")\nRun 'trainsim --help' for usage.");
    return trainsim::cli::kExitBadInput;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as "errors" with exit code 0; everything else is bad input
    // (exit 2), not CLI11's own codes (100+).
    if (e.get_exit_code() == 0) return app.exit(e);
    // Under mpirun every rank parses the same command line: rank 0 says what is wrong.
    // The command's own help when there is one (the first word was checked above).
    const std::string help = argc > 1 && argv[1][0] != '-'
                                 ? std::string("trainsim ") + argv[1] + " --help"
                                 : std::string("trainsim --help");
    trainsim::cli::SayError(std::string(e.what()) + "\nRun '" + help + "' for usage.");
    return trainsim::cli::kExitBadInput;
  }
  if (app.get_subcommands().empty()) {
    trainsim::cli::SayError("a command is required (commands: " + command_list +
                            ")\nRun 'trainsim --help' for usage.");
    return trainsim::cli::kExitBadInput;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any output file is opened: a signal removes the temporary files, SIGXFSZ is ignored
  // so a write over the file-size limit fails and is reported (sim/atomic_file.h).
  trainsim::sim::InstallTempFileCleanup();
  // Any exception becomes one message; standard output is checked at the end; under mpirun a rank
  // other than 0 that kept an error back gives rank 0 time to say it (cli/commands.h).
  return trainsim::cli::FinishRank(trainsim::cli::RunGuarded([&] { return Main(argc, argv); }));
}
