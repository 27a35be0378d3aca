#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/report/sweep_report.h"
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
};

int RunSweepCommand(const SweepOptions& opts) {
  Result<std::unique_ptr<sweep::Communicator>> comm_or = sweep::MakeCommunicator();
  if (!comm_or.ok()) return ReportError(comm_or.status());
  sweep::Communicator* comm = comm_or->get();
  const bool root = comm->rank() == 0;
  // Every rank sees the same input and takes the same path; only rank 0 speaks.
  auto fail = [&](const Status& s) {
    if (root) return ReportError(s);
    switch (s.code()) {
      case Status::Code::kUnavailable:
        return kExitUnavailable;
      case Status::Code::kInternal:
        return kExitFailure;
      default:
        return kExitBadInput;
    }
  };
  Result<api::SweepOutcome> outcome = api::Sweep(ScenarioInputOf(opts.scenario), opts, comm);
  if (!outcome.ok()) return fail(outcome.status());
  if (!root) return kExitOk;

  if (!opts.csv.empty()) {
    Status s = sim::WriteFileAtomically(opts.csv, report::FormatSweepCsv(outcome->result));
    if (!s.ok()) return ReportError(s.WithPrefix("--csv " + opts.csv));
  }
  if (opts.scenario.json) {
    std::cout << api::SweepDocument(*outcome);
  } else {
    std::string counts;
    for (int n : outcome->problem.gpu_counts) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    }
    const std::string title = outcome->resolved.scenario.model().name() + " on " + counts + " " +
                              outcome->resolved.gpu.name() + " GPUs";
    std::cout << report::FormatSweepTable(outcome->problem, outcome->result, outcome->objective,
                                          title);
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
      "expected goodput under failures, time and cost to train; top K and the time-cost Pareto "
      "front. Splits the work across ranks under mpirun.");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--gpus", opts->gpus,
                  "GPU counts to sweep, comma-separated (default: the scenario's)")
      ->delimiter(',')
      ->type_name("N,N,...");
  cmd->add_option("--objective", opts->objective,
                  "Rank by 'time' to train or 'cost' (default time)");
  cmd->add_option("--top", opts->top, "How many layouts to list and confirm (default 10)");
  cmd->add_option("--csv", opts->csv, "Write every layout, evaluated or rejected, to FILE");
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
  cmd->callback([opts, exit_code] { *exit_code = RunSweepCommand(*opts); });
}

}  // namespace trainsim::cli
