#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/report/format.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "cli/report/sweep_report.h"
#include "run/monte_carlo.h"
#include "scenarios/run_config.h"
#include "scenarios/session.h"
#include "sim/atomic_file.h"
#include "sweep/distributed.h"

namespace trainsim::cli {
namespace {

namespace par = trainsim::parallelism;

// The sweep's own options (gpus, objective, top, tokens, cp, ep, zero, ...): cli/api.h.
struct SweepOptions : api::SweepOptions {
  ScenarioOptions scenario;
  std::string csv;
  CLI::Option* csv_option = nullptr;      // to tell --csv '' from no --csv
  CLI::Option* threads_option = nullptr;  // to tell an explicit --threads from the default
  double mpi_timeout = 0;
  std::string html;
  bool quiet = false;
};

int RunSweepCommand(const SweepOptions& opts) {
  Result<std::unique_ptr<sweep::Communicator>> comm_or = sweep::MakeCommunicator();
  if (!comm_or.ok()) return ReportError(comm_or.status());
  sweep::Communicator* comm = comm_or->get();
  const bool root = comm->rank() == 0;
  if (!std::isfinite(opts.mpi_timeout) || opts.mpi_timeout < 0) {
    return ReportError(Status::InvalidArgument(
        "--mpi-timeout must be a number of seconds >= 0 (0 = wait for ever)"));
  }
  comm->SetTimeout(opts.mpi_timeout);
  // Every rank prepares its share (the same input on every rank, normally). The CSV is opened by
  // rank 0, which writes it, before the sweep, so an unwritable path fails now and not after the
  // sweep. Then the ranks agree on the outcome, so a problem one rank alone met (a file missing
  // on its node) stops all of them here; rank 0 says it (cli/commands.h: ReportError).
  std::optional<report::WebLibraries> web;
  std::vector<scenarios::ResolvedScenario> resolved;
  std::optional<api::SweepPlan> plan;
  sim::AtomicFileWriter csv;
  auto prepare = [&]() -> Status {
    Result<std::optional<report::WebLibraries>> html = PrepareHtml(
        opts.html, {{"the input scenario", opts.scenario.path}},
        {{"--csv",
          opts.csv_option != nullptr && opts.csv_option->count() > 0 ? opts.csv : std::string()}});
    if (!html.ok()) return html.status();
    web = std::move(*html);
    TRAINSIM_RETURN_IF_ERROR(api::CheckSweepOptions(opts));
    // One scenario per GPU type of --gpu (the scenario's own when there is none).
    for (const std::vector<std::string>& sets : api::SweepHardwareSets(opts.scenario.sets, opts)) {
      ScenarioOptions one = opts.scenario;
      one.sets = sets;
      Result<scenarios::ResolvedScenario> r = LoadResolvedScenario(one);
      if (!r.ok()) return r.status();
      resolved.push_back(std::move(*r));
    }
    // Threads: all cores by default; under mpirun with several ranks the ranks share the node's
    // cores, so each takes one unless --threads says otherwise.
    api::SweepOptions plan_opts = opts;
    if (comm->size() > 1 && (opts.threads_option == nullptr || opts.threads_option->count() == 0)) {
      plan_opts.threads = 1;
    }
    Result<api::SweepPlan> p = api::PlanSweep(resolved, plan_opts);
    if (!p.ok()) return p.status();
    plan = std::move(*p);
    if (root && opts.csv_option != nullptr && opts.csv_option->count() > 0) {
      return OpenOutput("--csv", opts.csv,
                        {{"the input scenario", opts.scenario.path},
                         {"the calibration file", resolved[0].scenario.cluster().calibration()}},
                        &csv);
    }
    return Status::Ok();
  };
  if (Status s = sweep::AgreeOnStatus(comm, prepare()); !s.ok()) return ReportError(s);
  const std::vector<sweep::SweepProblem>& problems = plan->problems;
  Result<sweep::SweepResult> result = sweep::RunSweeps(problems, plan->options, comm);
  if (!result.ok()) return ReportError(result.status());
  if (!root) return kExitOk;
  const std::string json = report::FormatSweepJson(
      opts.scenario.path, resolved[0].scenario.model().name(), problems, plan->options, *result);

  if (csv.is_open()) {
    csv.Append(report::FormatSweepCsv(problems, *result));
    Status s = csv.Commit();
    if (!s.ok()) return ReportError(s.WithPrefix("--csv"));
  }
  if (web) {
    // The very document --json prints, parsed back.
    const nlohmann::json doc = nlohmann::json::parse(json);
    Status s = report::WriteHtml(opts.html, report::SweepHtmlPage(doc, *result), *web);
    if (!s.ok()) return ReportError(s);
  }
  if (opts.scenario.json) {
    std::cout << json;
  } else {
    std::string counts, gpus;
    for (int n : problems[0].gpu_counts) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    for (const scenarios::ResolvedScenario& r : resolved) {
      gpus += (gpus.empty() ? "" : " or ") + r.gpu.name();
    }
    const std::string title = report::Printable(resolved[0].scenario.model().name()) + " on " +
                              counts + " " + gpus + " GPUs";
    std::cout << report::FormatSweepTable(problems, *result, plan->options, title);
  }
  return kExitOk;
}

}  // namespace

void AddSweepCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Every valid parallel layout (TP, CP, EP, ETP, PP with uneven stages, DP, micro-batch, "
      "schedule, recompute, SP, ZeRO/FSDP, shard group) of "
      "the scenario's model on its cluster or on --gpus counts: memory, step time, MFU, "
      "expected ETTR under failures, time and cost to train; top K and the time-cost Pareto "
      "front. Splits the work across ranks under mpirun.");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--gpus", opts->gpus,
                  "GPU counts to sweep, comma-separated (default: the scenario's)")
      ->delimiter(',')
      ->type_name("N,N,...")
      ->check([](const std::string& v) {
        return v.empty() ? std::string(
                               "a GPU count is a positive multiple of the node size, got "
                               "an empty value")
                         : std::string();
      });
  cmd->add_option("--objective", opts->objective,
                  "Rank by 'time' to train, 'cost' (GPU-hours x price) or 'energy' (kWh at the "
                  "facility) (default time)");
  cmd->add_option("--pareto", opts->pareto,
                  "The Pareto front's two objectives, e.g. time,energy (default time,cost)");
  cmd->add_option("--gpu", opts->gpu_types,
                  "GPU types to sweep, comma-separated catalogue names or aliases (each on its "
                  "own node type), ranked together (default: the scenario's)")
      ->delimiter(',')
      ->type_name("NAME,NAME,...");
  cmd->add_option("--memory-headroom", opts->memory_headroom,
                  "HBM to keep free beyond the memory model's peak: a fraction (0.05), a "
                  "percentage (5%) or a size (4GB); default the scenario's "
                  "cluster.memory_headroom, else 5% (docs/memory.md)")
      ->type_name("F|P%|NGB");
  opts->threads_option =
      cmd->add_option("--threads", opts->threads,
                      "Threads per rank for the step-simulation confirmations (0 = all cores; "
                      "default all cores, or 1 per rank under mpirun with several ranks); the "
                      "output does not depend on it");
  cmd->add_flag("--quiet,-q", opts->quiet,
                "No progress line on stderr (it is drawn only on a terminal anyway)");
  cmd->add_option("--top", opts->top, "How many layouts to list and confirm (default 10)");
  opts->csv_option = cmd->add_option(
      "--csv", opts->csv,
      "Write every layout, evaluated or rejected, to FILE (a file is replaced atomically; "
      "/dev/stdout, /dev/null and FIFOs are written directly)");
  cmd->add_option("--tokens", opts->tokens,
                  "Token budget (default: the scenario's training.tokens or steps)");
  cmd->add_flag("--tp-across-nodes", opts->tp_across_nodes,
                "Also enumerate TP beyond one node (whole nodes per TP group; its collectives "
                "cross the network)");
  cmd->add_option("--micro-batches", opts->micro_batches,
                  "Micro-batch sizes to try, comma-separated (default 1,2,4,8,16)")
      ->delimiter(',');
  cmd->add_option("--cp", opts->cp,
                  "Context-parallel degrees to try, comma-separated (default: powers of two up to "
                  "16 that split the sequence into 2·cp chunks)")
      ->delimiter(',');
  cmd->add_option("--ep", opts->ep,
                  "Expert-parallel degrees to try (MoE models; default: every divisor of the "
                  "experts)")
      ->delimiter(',');
  cmd->add_option("--etp", opts->etp,
                  "Expert tensor-parallel degrees to try (MoE models; default: 1 and the TP "
                  "degree)")
      ->delimiter(',');
  cmd->add_option("--zero", opts->zero,
                  "ZeRO stages to try, comma-separated (default 0,1,2,3; 3 = FSDP, only with "
                  "pp 1, also with hybrid sharding over a node)")
      ->delimiter(',');
  cmd->add_flag("--no-uneven", opts->no_uneven,
                "Only pipelines whose stages split the layers evenly (no first/last stage "
                "layers)");
  cmd->add_flag("--no-overlaps", opts->no_overlaps,
                "Take tp_comm_overlap, overlap_param_gather and overlap_p2p from the scenario "
                "instead of assuming them where today's Megatron-Core recipes turn them on");
  cmd->add_option("--trials", opts->trials,
                  "Monte Carlo trials of the run simulation (failures, checkpoints at Daly's "
                  "interval) for each of the top layouts; split across MPI ranks (default 0)");
  cmd->add_option("--mpi-timeout", opts->mpi_timeout,
                  "Under mpirun: how long a rank that finished its share waits for the others "
                  "before it gives up with a message (a rank stopped or hangs); default 0, wait "
                  "for ever")
      ->type_name("SECONDS");
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots to FILE (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->callback([opts, exit_code] {
    if (opts->quiet) opts->progress = false;
    *exit_code = RunSweepCommand(*opts);
  });
}

}  // namespace trainsim::cli
