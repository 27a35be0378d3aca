// cli/report/validate_report.h — `trainsim validate`'s reports: every published run predicted,
// with its error, and the mean absolute percentage error by source and overall, as a table or
// as JSON {rows, mape_by_source, mape}.
#ifndef TRAINSIM_CLI_REPORT_VALIDATE_REPORT_H_
#define TRAINSIM_CLI_REPORT_VALIDATE_REPORT_H_

#include <string>
#include <vector>

#include "scenarios/step_config.h"

namespace trainsim::cli::report {

std::string FormatValidationTable(const std::vector<scenarios::ValidationRow>& rows);
std::string FormatValidationJson(const std::vector<scenarios::ValidationRow>& rows);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_VALIDATE_REPORT_H_
