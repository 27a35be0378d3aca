#include "cli/api.h"
#include "cli/commands.h"

// Times come from comm::EstimateCollective (the closed form on an idle network); --expand runs
// the flow-level expansion on the event engine instead (they agree within 1%; the expansion is
// slower for large groups).
//
// --group: N (the first N GPUs in rank order, tensor-parallel innermost), a comma list of GPU ids
// ("0,8,16,24"), or N/STRIDE (N GPUs 0, STRIDE, 2·STRIDE, …: one GPU per node with STRIDE = GPUs
// per node). Default: every GPU of the scenario. --sizes: "8B:8GiB" (doubling, or multiplying by
// --step-factor) or one size; KB/MB/GB are powers of 10, KiB/MiB/GiB powers of 2.
// --json: an array of rows {op, algo, protocol, group, size_bytes, time_s, algbw_GBps,
// busbw_GBps}. busbw = algbw · 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter, all-gather
// and all-to-all, 1 for broadcast and send/recv (nccl-tests' convention).
// --calibration FILE (default: the scenario's cluster.calibration): rows whose op, algorithm,
// group size, node count and size a measured curve covers take the measured time
// (comm::EstimateCollectiveCalibrated: log-log interpolation, never extrapolated; with --algo
// auto the fastest calibrated algorithm); the table's header names the file, its GPU, NCCL
// version and whether it is a sample, and a "source" column says calib or model per row (JSON:
// "source": "calibration"|"model", and "calibration": {file, gpu, nccl_version, sample}).
// Measured rows have protocol "nccl" (NCCL chose it) and are not re-run by --expand.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/report/collective_report.h"
#include "comm/collective.h"
#include "comm/message_size.h"
#include "scenarios/session.h"

namespace trainsim::cli {

void AddCollectiveCommand(CLI::App& app, int* exit_code) {
  // op, algo, group, sizes, step_factor, expand, calibration: cli/api.h.
  struct Options : api::CollectiveOptions {
    ScenarioOptions scenario;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "collective",
      "Time a collective over the scenario's network for a range of sizes, like nccl-tests");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--op", opts->op,
                  "all_reduce, reduce_scatter, all_gather, broadcast, all_to_all or send_recv "
                  "(default all_reduce)");
  cmd->add_option("--algo", opts->algo,
                  "auto (the fastest, as NCCL's tuner picks), ring, tree, hierarchical, direct, "
                  "nvls, nvls_tree, collnet (IB SHARP) or pat (default auto)");
  cmd->add_option("--group", opts->group,
                  "N (first N GPUs), N/STRIDE, or a list 0,8,16 (default: all GPUs; send_recv: "
                  "two GPUs)");
  cmd->add_option("--sizes", opts->sizes,
                  "MIN:MAX or one size, e.g. 8B:8GiB (KB/MB/GB powers of 10, KiB/MiB/GiB powers "
                  "of 2; default 8B:8GiB)");
  cmd->add_option("--step-factor", opts->step_factor,
                  "Multiply the size by this between rows (nccl-tests -f; default 2)");
  cmd->add_flag("--expand", opts->expand,
                "Run the flow-level expansion on the event engine instead of the closed form");
  cmd->add_option("--calibration", opts->calibration,
                  "Calibration file (trainsim calibrate) whose measured curves replace the model "
                  "where they cover the op, algorithm, group and size (default: "
                  "cluster.calibration)");
  cmd->callback([opts, exit_code] {
    Result<api::CollectiveOutcome> outcome =
        api::Collective(ScenarioInputOf(opts->scenario), *opts);
    if (!outcome.ok()) {
      *exit_code = ReportError(outcome.status());
      return;
    }
    if (opts->scenario.json) {
      std::cout << api::CollectiveDocument(*outcome);
    } else {
      std::cout << report::FormatCollectiveTable(outcome->op, opts->algo, opts->expand,
                                                 outcome->outcome);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
