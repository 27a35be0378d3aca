#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/report/run_report.h"
#include "cli/report/step_report.h"
#include "scenarios/session.h"
#include "sim/atomic_file.h"

namespace trainsim::cli {
namespace {

// Both trace files through temporary files renamed into place (sim/atomic_file.h): a failed
// write leaves the previous files, never a truncated trace. Both are written before either is
// committed, and the step's (the larger) is committed first.
Status WriteTraces(const std::string& path, const step::StepResult& step_result,
                   const scenarios::RunOutcome& run) {
  std::ostringstream step_trace;
  step::WriteChromeTrace(step_result, step_trace);
  sim::AtomicFileWriter step_file, run_file;
  Status st = step_file.Open(path);
  if (st.ok()) st = run_file.Open(report::RunTracePath(path));
  if (st.ok()) {
    step_file.Append(step_trace.str());
    run_file.Append(report::RunTraceJson(run.run, run.config.checkpoint.policy));
    st = step_file.Commit();
  }
  if (st.ok()) st = run_file.Commit();
  return st;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  // The run's own options (allow_oom, gpu, events, trials, seed, ...) are cli/api.h's.
  struct Options : api::RunOptions {
    ScenarioOptions scenario;
    std::string trace;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Simulate one training step (time, throughput, MFU, memory, where time goes), then the "
      "whole run with its checkpoints and failures (wall time, goodput, ETTR, lost work, cost)");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--trace", opts->trace,
                  "Write a Chrome/Perfetto trace of the step to FILE and of the run's phases to "
                  "FILE with .run before the extension (open in ui.perfetto.dev)");
  cmd->add_flag("--allow-oom", opts->allow_oom,
                "Simulate a layout that does not fit in GPU memory anyway");
  cmd->add_option("--gpu", opts->gpu, "GPU whose step breakdown to show (default 0)");
  cmd->add_flag("--events", opts->events, "Also print the run's event log");
  cmd->add_option("--trials", opts->trials,
                  "Monte Carlo: N independent failure histories; mean, p50, p90, p99 of wall "
                  "time, goodput, ETTR and cost")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--seed", opts->seed, "Seed of the failure histories (replaces the scenario's)");
  cmd->add_flag("--optimize-checkpoint-interval", opts->optimize_interval,
                "Scan the checkpoint interval over the failure histories (--trials, default 100) "
                "and show the optimum next to Young's and Daly's");
  cmd->add_option("--calibration", opts->calibration,
                  "Calibration file (trainsim calibrate) whose measured GEMM rates and TP "
                  "collective curves replace the model where they cover (default: "
                  "cluster.calibration)");
  cmd->callback([opts, exit_code] {
    // The step and the run, before anything is written: bad input leaves stdout and the trace
    // files empty.
    opts->record_trace = !opts->trace.empty();
    Result<api::RunOutcome> run = api::Run(ScenarioInputOf(opts->scenario), *opts);
    if (!run.ok()) {
      *exit_code = ReportError(run.status());
      return;
    }
    if (!opts->trace.empty()) {
      Status st = WriteTraces(opts->trace, run->step.result, run->run);
      if (!st.ok()) {
        *exit_code = ReportError(st.WithPrefix("--trace"));
        return;
      }
    }
    if (opts->scenario.json) {
      std::cout << api::RunDocument(*run, opts->events);
    } else {
      std::cout << report::FormatStepReport(run->resolved, run->step.config, run->step.result,
                                            run->step.faulted)
                << report::FormatRunReport(run->resolved, run->run, opts->events);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
