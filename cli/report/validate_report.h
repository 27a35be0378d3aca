// cli/report/validate_report.h — `trainsim validate`'s reports: every published run predicted,
// with its error, grouped into one table per source (published.source) with that table's mean
// absolute percentage error, then the overall MAPE; throughput rows add the step breakdown and,
// where published, Megatron model TFLOP/s per GPU. JSON: {rows[] (with breakdown, memory verdict,
// model_tflops_per_gpu), tables[] {source, rows, count, mape}, mape_by_source, mape}.
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
