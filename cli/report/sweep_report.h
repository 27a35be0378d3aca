// cli/report/sweep_report.h — `trainsim sweep`'s reports: the ranked table with the Pareto front
// (confirmed rows only, same-in-effect layouts folded into one row that names them), the JSON
// document {context, top, pareto, ...} and the CSV of every layout, evaluated or rejected with
// its reason. Nothing here depends on the number of MPI ranks or threads, so the output is the
// same byte for byte for any of them.
#ifndef TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_
#define TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_

#include <string>
#include <vector>

#include "sweep/sweep.h"

namespace trainsim::cli::report {

std::string FormatSweepTable(const std::vector<sweep::SweepProblem>& problems,
                             const sweep::SweepResult& result, const sweep::SweepOptions& options,
                             const std::string& title);
// `scenario`: the path or name the scenario came from; `model`: the model's name.
std::string FormatSweepJson(const std::string& scenario, const std::string& model,
                            const std::vector<sweep::SweepProblem>& problems,
                            const sweep::SweepOptions& options, const sweep::SweepResult& result);
std::string FormatSweepCsv(const std::vector<sweep::SweepProblem>& problems,
                           const sweep::SweepResult& result);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_SWEEP_REPORT_H_
