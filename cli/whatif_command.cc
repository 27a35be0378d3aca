#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/report/run_report.h"
#include "cli/report/whatif_report.h"
#include "scenarios/session.h"

namespace trainsim::cli {
namespace {

// fail, slow, events, trial, trials: cli/api.h.
struct WhatIfOptions : api::WhatIfOptions {
  ScenarioOptions scenario;
};

}  // namespace

void AddWhatIfCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "Run the scenario with and without added faults, side by side: extra wall time, lost "
      "work, downtime, extra cost, the checkpoint restored and when training resumed");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--fail", opts->fail,
                  "Add a failure KIND:ID@TIME, e.g. gpu:37@16h, node:3@2d, nic:12@1h, "
                  "link:5@2h, hang:9@3h, software@3h (repeatable)")
      ->type_name("SPEC");
  cmd->add_option("--slow", opts->slow,
                  "Add a slowdown: gpu:IDxFACTOR@TIME+DURATION, e.g. gpu:5x1.3@1h+4h, or a "
                  "degraded link link:IDxFRACTION_LOST@TIME+DURATION (repeatable)")
      ->type_name("SPEC");
  cmd->add_flag("--events", opts->events, "Also print the what-if run's event log");
  cmd->add_option("--trial", opts->trial,
                  "Which stochastic failure history to use (Monte Carlo trial index)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--trials", opts->trials,
                  "Also repeat the comparison over N failure histories (trials 0..N-1) and "
                  "report mean, p50, p90 and p99 of the extra wall time, cost and lost work")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->callback([opts, exit_code] {
    Result<api::WhatIfOutcome> w = api::WhatIf(ScenarioInputOf(opts->scenario), *opts);
    if (!w.ok()) {
      *exit_code = ReportError(w.status());
      return;
    }
    if (opts->scenario.json) {
      std::cout << api::WhatIfDocument(*w, *opts);
    } else {
      std::cout << report::FormatWhatIfTable(w->resolved, w->added, w->whatif.report, opts->trial);
      if (opts->trials > 0) std::cout << report::FormatWhatIfTrials(w->whatif, opts->trials);
      if (opts->events) {
        std::cout << "\nevents (whatif):\n" << report::EventsText(w->whatif.report.whatif.events);
      }
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
