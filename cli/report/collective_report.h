// cli/report/collective_report.h — `trainsim collective`'s reports: an nccl-tests-style table
// (size, time, algbw, busbw, algorithm, protocol, and the source of each row when a calibration
// is in use) and the JSON array of rows {op, algo, protocol, group, size_bytes, time_s,
// algbw_GBps, busbw_GBps, source, [calibration]}.
#ifndef TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_
#define TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "comm/collective.h"
#include "scenarios/session.h"

namespace trainsim::cli::report {

// `algo_text` is the --algo option as given ("auto", "ring", ...).
std::string FormatCollectiveTable(comm::Op op, const std::string& algo_text, bool expand,
                                  const scenarios::CollectiveOutcome& outcome);
nlohmann::ordered_json CollectiveJson(comm::Op op, const scenarios::CollectiveOutcome& outcome);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_
