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
#include <optional>
#include <string>
#include <vector>

#include "cli/report/collective_report.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "comm/collective.h"
#include "comm/message_size.h"
#include "scenarios/session.h"

namespace trainsim::cli {
namespace {

// A size as nccl-tests' -b/-e read it (src/common.cu, parsesize): a number with an optional
// K, M or G (either case) meaning 2^10, 2^20, 2^30; or any size trainsim reads ("64KiB", "1GB").
Result<uint64_t> NcclTestsSize(const std::string& text) {
  if (!text.empty()) {
    const char last = text.back();
    uint64_t unit = 0;
    if (last == 'K' || last == 'k') unit = uint64_t{1} << 10;
    if (last == 'M' || last == 'm') unit = uint64_t{1} << 20;
    if (last == 'G' || last == 'g') unit = uint64_t{1} << 30;
    if (unit != 0) {
      Result<uint64_t> n = comm::ParseMessageSize(text.substr(0, text.size() - 1));
      if (n.ok() && *n <= (uint64_t{1} << 62) / unit) return *n * unit;
    }
  }
  return comm::ParseMessageSize(text);
}

}  // namespace

void AddCollectiveCommand(CLI::App& app, int* exit_code) {
  // The collective's own options (op, algo, group, sizes, ...) are cli/api.h's.
  struct Options : api::CollectiveOptions {
    ScenarioOptions scenario;
    std::string html;
    std::string format = "table";
    // nccl-tests' range options (-b/-e/-f/-g), mapped onto --sizes, --step-factor and --group.
    std::string min_bytes, max_bytes;
    std::optional<int> nccl_step_factor, ngpus;
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
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots to FILE: busbw vs size for "
                  "this and every other algorithm of the op (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->add_option("--format", opts->format,
                  "table (default) or nccl-tests: nccl-tests' columns and footer, to diff "
                  "against a measured all_reduce_perf (etc.) log line by line");
  cmd->add_option("-b,--minbytes", opts->min_bytes,
                  "nccl-tests -b: smallest size (bytes, or K/M/G = KiB/MiB/GiB as nccl-tests "
                  "reads them; trainsim units also accepted); with -e replaces --sizes");
  cmd->add_option("-e,--maxbytes", opts->max_bytes, "nccl-tests -e: largest size (as -b)");
  cmd->add_option("-f,--stepfactor", opts->nccl_step_factor,
                  "nccl-tests -f: multiply the size by this between rows (as --step-factor)");
  cmd->add_option("-g,--ngpus", opts->ngpus,
                  "nccl-tests -g: the group is the first N GPUs (as --group N)");
  cmd->callback([opts, exit_code] {
    if (opts->format != "table" && opts->format != "nccl-tests") {
      *exit_code = ReportError(Status::InvalidArgument(
          "--format: '" + opts->format + "' is not a format; valid: table, nccl-tests"));
      return;
    }
    if (opts->format == "nccl-tests" && opts->scenario.json) {
      *exit_code =
          ReportError(Status::InvalidArgument("--format nccl-tests and --json: choose one output"));
      return;
    }
    opts->nccl_tests_counts = opts->format == "nccl-tests";
    if (opts->nccl_step_factor) opts->step_factor = *opts->nccl_step_factor;
    if (opts->ngpus) {
      if (!opts->group.empty()) {
        *exit_code = ReportError(
            Status::InvalidArgument("-g/--ngpus and --group both set the group: give one"));
        return;
      }
      if (*opts->ngpus < 1) {
        *exit_code = ReportError(Status::InvalidArgument("-g/--ngpus must be at least 1"));
        return;
      }
      opts->group = std::to_string(*opts->ngpus);
    }
    if (!opts->min_bytes.empty() || !opts->max_bytes.empty()) {
      Result<uint64_t> lo =
          NcclTestsSize(opts->min_bytes.empty() ? opts->max_bytes : opts->min_bytes);
      if (!lo.ok()) {
        *exit_code = ReportError(lo.status().WithPrefix("-b/--minbytes"));
        return;
      }
      Result<uint64_t> hi =
          NcclTestsSize(opts->max_bytes.empty() ? opts->min_bytes : opts->max_bytes);
      if (!hi.ok()) {
        *exit_code = ReportError(hi.status().WithPrefix("-e/--maxbytes"));
        return;
      }
      opts->sizes = std::to_string(*lo) + ":" + std::to_string(*hi);
    }
    Result<std::optional<report::WebLibraries>> html = PrepareHtml(
        opts->html,
        {{"the input scenario", opts->scenario.path}, {"the calibration file", opts->calibration}});
    if (!html.ok()) {
      *exit_code = ReportError(html.status());
      return;
    }
    std::optional<report::WebLibraries> web = std::move(*html);
    Result<api::CollectiveOutcome> timed = api::Collective(ScenarioInputOf(opts->scenario), *opts);
    if (!timed.ok()) {
      *exit_code = ReportError(timed.status());
      return;
    }
    const scenarios::ResolvedScenario* resolved = &timed->resolved;
    const comm::Op* op = &timed->op;
    const scenarios::CollectiveRequest& request = timed->request;
    const scenarios::CollectiveOutcome* outcome = &timed->outcome;
    report::NcclTestsRange range;
    range.min_bytes = request.sizes.front();
    range.max_bytes = request.sizes.back();
    range.step_factor = uint64_t(opts->step_factor);
    if (web) {
      // The same sizes timed with every algorithm of the op that applies to the group.
      nlohmann::json per_algorithm = nlohmann::json::array();
      // Every algorithm but auto (comm/collective.h), the hardware-specific ones (NVLS, CollNet)
      // too: TimeScenarioCollective says when one does not apply.
      for (comm::Algo a :
           {comm::Algo::kRing, comm::Algo::kTree, comm::Algo::kHierarchical, comm::Algo::kDirect,
            comm::Algo::kNvls, comm::Algo::kNvlsTree, comm::Algo::kCollNet, comm::Algo::kPat}) {
        scenarios::CollectiveRequest each = request;
        each.algo = a;
        Result<scenarios::CollectiveOutcome> o = scenarios::TimeScenarioCollective(*resolved, each);
        if (!o.ok()) continue;  // the algorithm does not apply to this group or network
        for (const auto& row : report::CollectiveJson(*op, *o)) {
          per_algorithm.push_back(nlohmann::json::parse(row.dump()));
        }
      }
      // The very document --json prints (its keys sorted: the page's JSON is unordered).
      const nlohmann::json doc =
          nlohmann::json::parse(report::CollectiveJson(*op, *outcome).dump());
      Status st =
          report::WriteHtml(opts->html, report::CollectiveHtmlPage(doc, per_algorithm), *web);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    if (opts->scenario.json) {
      std::cout << report::CollectiveJson(*op, *outcome).dump(2) << "\n";
    } else if (opts->format == "nccl-tests") {
      std::cout << report::FormatNcclTestsTable(*op, opts->algo, opts->expand, range, *outcome);
    } else {
      std::cout << report::FormatCollectiveTable(*op, opts->algo, opts->expand, *outcome);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
