// cli/report/html_pages.h — the HTML report (html_report.h) of each command: its key figures
// and Vega-Lite plots, drawn from the command's --json document plus, under "extra", what the
// plots need that the JSON does not hold (docs/report.md lists every plot and its data).
//
// Contract: each page's "report" is the --json document as given (the caller passes the very
// document it prints); "extra" values are copied from the same library results, never
// recomputed differently. Pure functions: the same input gives the same page.
#ifndef TRAINSIM_CLI_REPORT_HTML_PAGES_H_
#define TRAINSIM_CLI_REPORT_HTML_PAGES_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/report/html_report.h"
#include "scenarios/session.h"
#include "step/step_simulation.h"
#include "sweep/sweep.h"

namespace trainsim::cli::report {

// `run`: step breakdown per stage, memory per stage vs capacity, the run's timeline (whole run
// and around the first failure), expected cost vs checkpoint interval with Young/Daly marked.
// `interval_scan` is the "checkpoint_interval" object of AddRunJson for a run simulated with
// optimize_interval (used when `doc` has none); nullopt leaves that plot out with a note.
HtmlPage RunHtmlPage(const nlohmann::json& doc, const step::StepResult& step,
                     const scenarios::RunOutcome& run,
                     const std::optional<nlohmann::json>& interval_scan);

// `whatif`: where the wall time went with and without the added faults; with trials, the CDF
// of the extra wall time and cost over the failure histories (outcome's samples).
HtmlPage WhatIfHtmlPage(const nlohmann::json& doc, const scenarios::WhatIfOutcome& outcome);

// `sweep`: time to train vs cost of every evaluated layout, the Pareto front and the top K.
HtmlPage SweepHtmlPage(const nlohmann::json& doc, const sweep::SweepResult& result);

// `collective`: bus bandwidth vs message size; `per_algorithm` holds CollectiveJson rows of the
// same sizes timed with each algorithm the op has (those that apply to the group).
HtmlPage CollectiveHtmlPage(const nlohmann::json& doc, const nlohmann::json& per_algorithm);

// `validate`: predicted vs published for every row, and each row's error by source.
HtmlPage ValidateHtmlPage(const nlohmann::json& doc);

// `emulate`: the measured run next to the run simulation's prediction (one panel per line of
// the text output), and each injected fault's detection and restart on the wall clock. `doc`
// is emulate's --json document.
HtmlPage EmulateHtmlPage(const nlohmann::json& doc);

// `diagnose`: each cause's share of the step in the order checked, and the MFU each proposed
// change is predicted to reach (re-simulated) against today's.
HtmlPage DiagnoseHtmlPage(const nlohmann::json& doc);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_HTML_PAGES_H_
