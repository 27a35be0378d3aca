// `trainsim worker --coordinator HOST:PORT SCENARIO [--set ...]`: one worker of an emulation
// (emulate/emulate.h). The scenario is read only for its hash: the coordinator refuses a worker
// whose scenario or protocol version differs from its own.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "emulate/emulate.h"

namespace trainsim::cli {

void AddWorkerCommand(CLI::App& app, int* exit_code) {
  struct Options {
    ScenarioOptions scenario;
    std::string coordinator;
    double connect_timeout_s = 10;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "One worker of `trainsim emulate`: connects to the coordinator, trains its rank, "
      "exits when told (docs/emulate.md)");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--coordinator", opts->coordinator, "The coordinator's HOST:PORT")
      ->required()
      ->type_name("HOST:PORT");
  // 10 s: long enough for a coordinator started a moment later by another launcher, short
  // enough that a typo in HOST:PORT fails while the user is still looking.
  cmd->add_option("--connect-timeout", opts->connect_timeout_s,
                  "Seconds to keep trying to reach the coordinator (default 10)");
  cmd->callback([opts, exit_code] {
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    *exit_code = emulate::RunWorker(opts->coordinator, emulate::ScenarioHash(*resolved),
                                    opts->connect_timeout_s);
  });
}

}  // namespace trainsim::cli
