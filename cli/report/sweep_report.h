// cli/report/sweep_report.h — `trainsim sweep`'s reports: the ranked table with the time–cost
// Pareto front, the JSON document {top, pareto, evaluated, rejected, ...} and the CSV of every
// layout, evaluated or rejected with its reason.
#ifndef TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_
#define TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_

#include <string>

#include "sweep/sweep.h"

namespace trainsim::cli::report {

std::string FormatSweepTable(const sweep::SweepProblem& problem, const sweep::SweepResult& result,
                             sweep::Objective objective, const std::string& title);
std::string FormatSweepJson(const sweep::SweepResult& result, sweep::Objective objective);
std::string FormatSweepCsv(const sweep::SweepResult& result);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_
