// cli/report/whatif_report.h — `trainsim whatif`'s reports: the distribution of the delta over
// failure histories (led with), the side-by-side table of one history (baseline, what-if,
// delta) as the worked example, and the JSON {trials?, baseline, whatif, delta, notes,
// warnings, steps, trial, added_faults (with mechanism, detected_after_s, no_effect), events?}.
//
// Promises: for each added fault that interrupted training, the table and the JSON name the
// checkpoint restored and when training resumed; a fault that only slows the cluster says so.
#ifndef TRAINSIM_CLI_REPORT_WHATIF_REPORT_H_
#define TRAINSIM_CLI_REPORT_WHATIF_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_config.h"
#include "run/whatif.h"
#include "scenarios/scenario.h"
#include "scenarios/session.h"

namespace trainsim::cli::report {

// The scenario name, the added faults, and the notes (faults with no effect) and warnings
// (duplicates) of the comparison.
std::string FormatWhatIfHeader(const scenarios::ResolvedScenario& resolved,
                               const std::vector<run::ScheduledFault>& added,
                               const run::WhatIfReport& report);
// One failure history as the worked example: the side-by-side table and each fault's detection
// (mechanism and delay), lost work, restored checkpoint and resumption.
std::string FormatWhatIfTable(const scenarios::ResolvedScenario& resolved,
                              const std::vector<run::ScheduledFault>& added,
                              const run::WhatIfReport& report, int64_t trial);
// The "over N failure histories" table (trials > 0).
std::string FormatWhatIfTrials(const scenarios::WhatIfOutcome& outcome, int64_t trials);
nlohmann::json WhatIfJson(const std::vector<run::ScheduledFault>& added,
                          const scenarios::WhatIfOutcome& outcome, int64_t trial, int64_t trials,
                          bool events);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_WHATIF_REPORT_H_
