#include <charconv>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report/diagnose_report.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "cli/report/run_report.h"
#include "cli/report/step_report.h"
#include "parallelism/roofline.h"
#include "scenarios/session.h"
#include "sim/atomic_file.h"
#include "sim/parallel.h"

namespace trainsim::cli {
namespace {

// Both trace files through temporary files renamed into place (sim/atomic_file.h), opened before
// the simulation so a bad path fails at once. A --trace that names a device or FIFO
// (/dev/null, /dev/stdout) gets the step trace only: the run trace's name next to it would be a
// new file in /dev.
struct TraceFiles {
  sim::AtomicFileWriter step, run;
};

Status OpenTraces(const std::string& path, const std::vector<InputFile>& inputs,
                  TraceFiles* files) {
  TRAINSIM_RETURN_IF_ERROR(OpenOutput("--trace", path, inputs, &files->step));
  Result<sim::OutputTarget> target = sim::ClassifyOutput(path);
  if (target.ok() && target->kind == sim::OutputTarget::Kind::kDirect) return Status::Ok();
  return OpenOutput("--trace", report::RunTracePath(path), inputs, &files->run);
}

// --html: checked against the inputs, and against --trace's two files (when tracing), which
// the report must not replace.
Result<std::optional<report::WebLibraries>> PrepareRunHtml(const std::string& html,
                                                           const std::string& scenario,
                                                           const std::string& calibration,
                                                           const CLI::Option* trace_option,
                                                           const std::string& trace) {
  std::vector<InputFile> outputs;
  if (trace_option->count() > 0) {
    outputs = {{"--trace", trace}, {"--trace (its run trace)", report::RunTracePath(trace)}};
  }
  return PrepareHtml(
      html, {{"the input scenario", scenario}, {"the calibration file", calibration}}, outputs);
}

// Both are written out completely before either is renamed into place: an error while writing
// the second (a full disk, the file-size limit) leaves the first file as it was.
Status WriteTraces(TraceFiles* files, const step::StepResult& step_result,
                   const scenarios::RunOutcome& run) {
  std::ostringstream step_trace;
  step::WriteChromeTrace(step_result, step_trace);
  files->step.Append(step_trace.str());
  TRAINSIM_RETURN_IF_ERROR(files->step.Prepare().WithPrefix("--trace"));
  if (files->run.is_open()) {
    files->run.Append(report::RunTraceJson(run.run, run.config.checkpoint.policy));
    TRAINSIM_RETURN_IF_ERROR(files->run.Prepare().WithPrefix("--trace"));
  }
  TRAINSIM_RETURN_IF_ERROR(files->step.Publish().WithPrefix("--trace"));
  if (files->run.is_open()) TRAINSIM_RETURN_IF_ERROR(files->run.Publish().WithPrefix("--trace"));
  return Status::Ok();
}

// --ops: the roofline of every op of one transformer layer (and of an MoE layer), as the step
// simulated them: the layout's split and micro-batch, the calibration where it covers a GEMM.
std::vector<parallelism::OpRoofline> LayerRoofline(const step::StepConfig& cfg, bool moe) {
  const parallelism::GemmCalibration cal{cfg.calibration.get(), cfg.gemm_dtype};
  return parallelism::RooflineOfOps(
      cfg.gpu, cfg.compute,
      parallelism::LayerOps(cfg.model, cfg.parallel.split(), cfg.parallel.micro_batch, moe), &cal);
}

// The checkpoint-interval scan the HTML report plots: the run's own when it was asked for, else
// the same run simulated again with optimize_interval (nullopt when the scenario models no
// failures, the scan's precondition).
std::optional<nlohmann::json> ScanForHtml(const scenarios::ResolvedScenario& resolved,
                                          const step::StepConfig& step,
                                          scenarios::RunRequest request,
                                          const scenarios::RunOutcome& run) {
  if (run.optimum) return std::nullopt;  // already in the report's JSON
  request.optimize_interval = true;
  request.trials = 0;
  Result<scenarios::RunOutcome> scanned = scenarios::SimulateScenarioRun(resolved, step, request);
  if (!scanned.ok() || !scanned->optimum) return std::nullopt;
  nlohmann::json doc;
  report::AddRunJson(*scanned, false, doc);
  return doc["checkpoint_interval"];
}

// CLI11 would wrap "-1" to 2^64 - 1 in an unsigned option, and saturate 2^64 and above to it.
std::string NonNegativeSeed(const std::string& v) {
  uint64_t seed = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
  if (v.empty() || v[0] == '-' || ec != std::errc() || end != v.data() + v.size()) {
    return "a seed is an integer from 0 to 18446744073709551615 (2^64 - 1), got " + v;
  }
  return "";
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  // The run's own options (allow_oom, gpu, events, trials, seed, ...) are cli/api.h's.
  struct Options : api::RunOptions {
    ScenarioOptions scenario;
    std::string trace;
    CLI::Option* trace_option = nullptr;  // to tell --trace '' from no --trace
    bool ops = false;
    std::string html;
    std::string memory_headroom;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Simulate one training step (time, throughput, MFU, memory, where time goes), then the "
      "whole run with its checkpoints and failures (wall time, ETTR, useful compute fraction, lost "
      "work, cost)");
  AddScenarioOptions(cmd, &opts->scenario);
  opts->trace_option = cmd->add_option(
      "--trace", opts->trace,
      "Write a Chrome/Perfetto trace of the step to FILE and of the run's phases to FILE with "
      ".run before the extension (open in ui.perfetto.dev); a device or FIFO gets the step "
      "trace only");
  cmd->add_option("--trace-microbatches", opts->trace_microbatches,
                  "Micro-batches the trace draws layer by layer, with each layer's TP "
                  "collectives and kernels (default 1; -1 = all; needs --trace)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40))
      ->needs(opts->trace_option);
  cmd->add_flag("--allow-oom", opts->allow_oom,
                "Simulate a layout that does not fit in GPU memory anyway");
  cmd->add_option("--memory-headroom", opts->memory_headroom,
                  "HBM to keep free beyond the memory model's peak: a fraction (0.05), a "
                  "percentage (5%) or a size (4GB); a layout over it is rejected (default: "
                  "cluster.memory_headroom, else none; docs/memory.md)")
      ->type_name("F|P%|NGB");
  cmd->add_option("--gpu", opts->gpu, "GPU whose step breakdown to show (default 0)");
  cmd->add_flag("--events", opts->events, "Also print the run's event log");
  cmd->add_option("--trials", opts->trials,
                  "Monte Carlo: N independent failure histories; mean, p50, p90, p99 of wall "
                  "time, useful compute fraction, ETTR and cost")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--threads", opts->threads,
                  "Run the Monte Carlo trials and the interval scan on this many threads (default "
                  "0 = all cores); the output is the same "
                  "at any count")
      ->check(CLI::Range(0, sim::kMaxThreads));
  cmd->add_option("--seed", opts->seed, "Seed of the failure histories (replaces the scenario's)")
      ->check(NonNegativeSeed);
  cmd->add_flag("--optimize-checkpoint-interval", opts->optimize_interval,
                "Scan the checkpoint interval over the failure histories (--trials, default 100) "
                "and show the optimum next to Young's and Daly's");
  cmd->add_option("--calibration", opts->calibration,
                  "Calibration file (trainsim calibrate) whose measured GEMM rates and TP "
                  "collective curves replace the model where they cover (default: "
                  "cluster.calibration)");
  cmd->add_flag("--ops", opts->ops,
                "Also show the roofline of every op of one layer: FLOPs, bytes, arithmetic "
                "intensity against the GPU's ridge point, compute- or memory-bound, achieved "
                "fraction of the bound");
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots to FILE (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->callback([opts, exit_code] {
    Result<std::optional<report::WebLibraries>> html = PrepareRunHtml(
        opts->html, opts->scenario.path, opts->calibration, opts->trace_option, opts->trace);
    if (!html.ok()) {
      *exit_code = ReportError(html.status());
      return;
    }
    std::optional<report::WebLibraries> web = std::move(*html);
    if (!opts->memory_headroom.empty()) {
      opts->scenario.sets.push_back("cluster.memory_headroom=" + opts->memory_headroom);
    }
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    const bool tracing = opts->trace_option->count() > 0;
    TraceFiles traces;
    if (tracing) {
      Status st = OpenTraces(opts->trace,
                             {{"the input scenario", opts->scenario.path},
                              {"the calibration file", opts->calibration},
                              {"the calibration file", resolved->scenario.cluster().calibration()}},
                             &traces);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    // The step and the run, before anything is written: bad input leaves stdout and the trace
    // files empty.
    opts->record_trace = tracing;
    opts->keep_log = opts->events || tracing || web.has_value();  // the log's only readers
    Result<api::RunOutcome> outcome = api::Run(std::move(*resolved), *opts);
    if (!outcome.ok()) {
      *exit_code = ReportError(outcome.status());
      return;
    }
    const scenarios::ResolvedScenario* scenario = &outcome->resolved;
    const scenarios::StepOutcome* step = &outcome->step;
    const scenarios::RunOutcome* run = &outcome->run;
    if (tracing) {
      Status st = WriteTraces(&traces, step->result, *run);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    // The HTML report embeds the very document --json prints.
    nlohmann::json doc;
    if (web || opts->scenario.json) {
      doc = report::StepJsonDocument(*scenario, step->config, step->result, step->faulted);
      report::AddRunJson(*run, opts->events, doc);
      if (opts->ops) {
        doc["ops"] = report::OpsJson(LayerRoofline(step->config, false));
        if (step->config.model.moe.enabled()) {
          doc["moe_ops"] = report::OpsJson(LayerRoofline(step->config, true));
        }
      }
    }
    if (web) {
      Status st = report::WriteHtml(
          opts->html,
          report::RunHtmlPage(doc, step->result, *run,
                              ScanForHtml(*scenario, step->config, api::RunRequestOf(*opts), *run)),
          *web);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    if (opts->scenario.json) {
      std::cout << doc.dump(2) << "\n";
    } else {
      std::cout << report::FormatStepReport(*scenario, step->config, step->result, step->faulted)
                << report::FormatRunReport(*scenario, *run, opts->events);
      if (opts->ops) {
        std::cout << report::FormatOpsTable("roofline of one layer's ops, per micro-batch",
                                            LayerRoofline(step->config, false));
        if (step->config.model.moe.enabled()) {
          std::cout << report::FormatOpsTable("roofline of one MoE layer's ops",
                                              LayerRoofline(step->config, true));
        }
      }
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
