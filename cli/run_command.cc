#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

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
  struct Options {
    ScenarioOptions scenario;
    std::string trace;
    int64_t trace_microbatches = 1;
    bool allow_oom = false;
    int gpu = 0;
    bool events = false;
    int64_t trials = 0;
    std::optional<uint64_t> seed;
    bool optimize_interval = false;
    std::string calibration;
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
  cmd->add_option("--trace-microbatches", opts->trace_microbatches,
                  "Micro-batches the trace draws layer by layer, with each layer's TP "
                  "collectives and kernels (default 1; -1 = all)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
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
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    scenarios::StepRequest step_request;
    step_request.allow_oom = opts->allow_oom;
    step_request.report_gpu = opts->gpu;
    step_request.calibration_path = opts->calibration;
    step_request.record_trace = !opts->trace.empty();
    step_request.trace_microbatches = opts->trace_microbatches;
    Result<scenarios::StepOutcome> step = scenarios::SimulateScenarioStep(*resolved, step_request);
    if (!step.ok()) {
      *exit_code = ReportError(step.status());
      return;
    }
    // The run, before anything is written: bad input leaves stdout and the trace files empty.
    scenarios::RunRequest request;
    request.seed = opts->seed;
    request.trials = opts->trials;
    request.optimize_interval = opts->optimize_interval;
    Result<scenarios::RunOutcome> run =
        scenarios::SimulateScenarioRun(*resolved, step->config, request);
    if (!run.ok()) {
      *exit_code = ReportError(run.status());
      return;
    }
    if (!opts->trace.empty()) {
      Status st = WriteTraces(opts->trace, step->result, *run);
      if (!st.ok()) {
        *exit_code = ReportError(st.WithPrefix("--trace"));
        return;
      }
    }
    if (opts->scenario.json) {
      nlohmann::json doc =
          report::StepJsonDocument(*resolved, step->config, step->result, step->faulted);
      report::AddRunJson(*run, opts->events, doc);
      std::cout << doc.dump(2) << "\n";
    } else {
      std::cout << report::FormatStepReport(*resolved, step->config, step->result, step->faulted)
                << report::FormatRunReport(*resolved, *run, opts->events);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
