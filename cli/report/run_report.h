// cli/report/run_report.h — the run's reports: the human text of `trainsim run` (wall time,
// ETTR, useful compute fraction, failures with their detection, where the wall time went, --trials
// statistics, the interval scan, the event log), its JSON, and the run's timeline as a
// Chrome/Perfetto trace.
//
// Promises: the trace is drawn from the report's typed events and phases (never from the log's
// wording): one track of phases, one of checkpoint stalls, one per kind of background transfer,
// and an instant per failure. The breakdown rows add up to the wall time.
#ifndef TRAINSIM_CLI_REPORT_RUN_REPORT_H_
#define TRAINSIM_CLI_REPORT_RUN_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/policy.h"
#include "run/monte_carlo.h"
#include "run/run_report.h"
#include "scenarios/scenario.h"
#include "scenarios/session.h"

namespace trainsim::cli::report {

// wall_time_s, useful_compute_fraction, ettr, failures, evictions, failures_by_cause (stable
// cause keys), failure_records, checkpoints, checkpoint_interval{,_s,_bound}, lost_work_s,
// cost_usd, gpu_hours, steps, breakdown_s.{useful, ..., slowdown, ..., unfinished_step, ...,
// waiting}: `run` of `trainsim run`, and both sides of `trainsim whatif`.
nlohmann::json RunReportJson(const run::RunReport& report);
// One failure record: at_s, cause (stable key), cause_name, what, mechanism, detected_after_s,
// lost_work_s, restored_*, resumed_at_s.
nlohmann::json FailureRecordJson(const run::FailureRecord& rec);
nlohmann::json StatJson(const run::Stat& stat);                       // {mean, p50, p90, p99}
nlohmann::json EventsJson(const std::vector<run::RunEvent>& events);  // [{at_s, kind, what}]
std::string EventsText(const std::vector<run::RunEvent>& events);     // "  <at>  <what>" lines
// What an undetected corruption leaves corrupt in a run of `checkpoints`: "the final weights and
// checkpoints from #N on are corrupt", or with none taken after it "the final weights are
// corrupt (no checkpoint was taken after it)".
std::string CorruptText(const run::UndetectedCorruption& u, int checkpoints);

std::string FormatRunReport(const scenarios::ResolvedScenario& resolved,
                            const scenarios::RunOutcome& outcome, bool events);
// Adds `run` (plus `events` when asked), `run_stats` and `checkpoint_interval` to `doc`.
void AddRunJson(const scenarios::RunOutcome& outcome, bool events, nlohmann::json& doc);

std::string RunTraceJson(const run::RunReport& report, checkpoint::CheckpointPolicy policy);
// "trace.json" → "trace.run.json"; "trace" → "trace.run.json".
std::string RunTracePath(const std::string& step_trace_path);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_RUN_REPORT_H_
