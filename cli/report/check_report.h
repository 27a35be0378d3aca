// cli/report/check_report.h — `trainsim check`'s reports: the resolved scenario as text (every
// default filled in, catalogue specs, derived values) and as JSON {"scenario": ..., "derived":
// ...}; the model presets list.
#ifndef TRAINSIM_CLI_REPORT_CHECK_REPORT_H_
#define TRAINSIM_CLI_REPORT_CHECK_REPORT_H_

#include <string>

#include "scenarios/scenario.h"

namespace trainsim::cli::report {

// `resolved_dump`: end with the resolved scenario in text format (off: `check --quiet`).
std::string FormatCheckReport(const scenarios::ResolvedScenario& resolved,
                              bool resolved_dump = true);
std::string FormatCheckJson(const scenarios::ResolvedScenario& resolved);
// `run`'s memory verdict on the scenario's layout (parallelism::FitStatus, with the headroom and
// its suggestions): OK when it fits or the layout is not one the memory model can estimate.
Status CheckFit(const scenarios::ResolvedScenario& resolved);

// `trainsim check --presets`: the model presets (scenarios/presets.h) with their shape, the
// parameter counts the program derives (total and active) beside the published ones, and the
// source; as a table or as JSON {"presets": [...]}.
std::string FormatPresetList(bool json);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_CHECK_REPORT_H_
