#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "cli/report/run_report.h"
#include "cli/report/whatif_report.h"
#include "scenarios/session.h"
#include "sim/parallel.h"

namespace trainsim::cli {
namespace {

// The what-if's own options (fail, slow, events, trial, trials) are cli/api.h's.
struct WhatIfOptions : api::WhatIfOptions {
  ScenarioOptions scenario;
  std::string html;
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
                  "Failure histories to compare over (trials 0..N-1): mean, p50, p90 and p99 of "
                  "the extra wall time, lost work, downtime and cost. Default 100 when "
                  "stochastic failures are on, else 0; 0 = one history only")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  cmd->add_option(
         "--threads", opts->threads,
         "Run the trials on this many threads (default 0 = all cores); the output is the same "
         "at any count")
      ->check(CLI::Range(0, sim::kMaxThreads));
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots to FILE (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->callback([opts, exit_code] {
    Result<std::optional<report::WebLibraries>> html =
        PrepareHtml(opts->html, {{"the input scenario", opts->scenario.path}});
    if (!html.ok()) {
      *exit_code = ReportError(html.status());
      return;
    }
    std::optional<report::WebLibraries> web = std::move(*html);
    Result<api::WhatIfOutcome> outcome = api::WhatIf(ScenarioInputOf(opts->scenario), *opts);
    if (!outcome.ok()) {
      *exit_code = ReportError(outcome.status());
      return;
    }
    const scenarios::ResolvedScenario* r = &outcome->resolved;
    const std::vector<run::ScheduledFault>* added = &outcome->added;
    const scenarios::WhatIfOutcome* w = &outcome->whatif;
    const int64_t trials = outcome->trials;
    for (const std::string& warning : w->report.warnings) {
      std::cerr << "trainsim: warning: " << warning << "\n";
    }
    if (web) {
      // The very document --json prints.
      const nlohmann::json doc = report::WhatIfJson(*added, *w, opts->trial, trials, opts->events);
      Status st = report::WriteHtml(opts->html, report::WhatIfHtmlPage(doc, *w), *web);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    if (opts->scenario.json) {
      std::cout << report::WhatIfJson(*added, *w, opts->trial, trials, opts->events).dump(2)
                << "\n";
    } else {
      std::cout << report::FormatWhatIfHeader(*r, *added, w->report);
      if (trials > 0) std::cout << report::FormatWhatIfTrials(*w, trials);
      std::cout << "\n"
                << (trials > 0 ? "worked example: failure history " : "failure history ")
                << opts->trial << "\n"
                << report::FormatWhatIfTable(*r, *added, w->report, opts->trial);
      if (opts->events) {
        std::cout << "\nevents (whatif):\n" << report::EventsText(w->report.whatif.events);
      }
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
