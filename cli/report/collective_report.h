// cli/report/collective_report.h — `trainsim collective`'s reports: an nccl-tests-style table
// (size, time, algbw, busbw, algorithm, protocol, and the source of each row when a calibration
// is in use) and the JSON array of rows {op, algo, protocol, group, size_bytes, time_s,
// algbw_GBps, busbw_GBps, source, [calibration]}.
#ifndef TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_
#define TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/collective.h"
#include "scenarios/session.h"

namespace trainsim::cli::report {

// `algo_text` is the --algo option as given ("auto", "ring", ...).
std::string FormatCollectiveTable(comm::Op op, const std::string& algo_text, bool expand,
                                  const scenarios::CollectiveOutcome& outcome);
nlohmann::ordered_json CollectiveJson(comm::Op op, const scenarios::CollectiveOutcome& outcome);

// The range a --format nccl-tests table says it ran (nccl-tests' first header line).
struct NcclTestsRange {
  uint64_t min_bytes = 0, max_bytes = 0;
  uint64_t step_factor = 2;
};
// nccl-tests' stdout (src/common.cu: the Reporter's three header lines, one row per size with
// size, count, type, redop, root and time, algbw, busbw, #wrong for out-of-place and in-place,
// and the "# Out of bounds values" / "# Avg bus bandwidth" footer), so a predicted table diffs
// line by line against a measured one. The model has no in-place variant: both halves carry the
// same prediction. Elements are float (nccl-tests' default -d float); #wrong is "N/A" (no data
// was checked, as nccl-tests prints with -c 0); the average bus bandwidth is the mean of every
// busbw printed, as nccl-tests averages every timed run.
std::string FormatNcclTestsTable(comm::Op op, const std::string& algo_text, bool expand,
                                 const NcclTestsRange& range,
                                 const scenarios::CollectiveOutcome& outcome);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_COLLECTIVE_REPORT_H_
