// cli/report/check_report.h — `trainsim check`'s reports: the resolved scenario as text (every
// default filled in, catalogue specs, derived values) and as JSON {"scenario": ..., "derived":
// ...}.
#ifndef TRAINSIM_CLI_REPORT_CHECK_REPORT_H_
#define TRAINSIM_CLI_REPORT_CHECK_REPORT_H_

#include <string>

#include "scenarios/scenario.h"

namespace trainsim::cli::report {

std::string FormatCheckReport(const scenarios::ResolvedScenario& resolved);
std::string FormatCheckJson(const scenarios::ResolvedScenario& resolved);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_CHECK_REPORT_H_
