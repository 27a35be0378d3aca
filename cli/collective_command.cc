#include "cli/collective_command.h"

#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/calibrate_command.h"
#include "cli/commands.h"
#include "comm/calibration.h"
#include "comm/collective.h"
#include "comm/flow_network.h"
#include "comm/message_size.h"
#include "comm/topology.h"
#include "scenarios/step_config.h"
#include "sim/engine.h"

namespace trainsim::cli {
namespace {

Result<int> ParseInt(std::string_view text, std::string_view what) {
  if (text.empty() || text.size() > 9) {
    return Status::InvalidArgument("bad " + std::string(what) + " '" + std::string(text) + "'");
  }
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return Status::InvalidArgument("bad " + std::string(what) + " '" + std::string(text) +
                                     "': expected a whole number");
    }
  }
  return std::stoi(std::string(text));
}

const char* kGroupHelp =
    " (--group N for the first N GPUs, N/STRIDE for every STRIDE-th GPU, or a list like 0,8,16)";

struct Row {
  uint64_t bytes = 0;
  comm::CollectiveTiming estimate;
  double time_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The protocol the model picked; a measured time has none of ours (NCCL chose it): "nccl".
std::string ProtocolText(const comm::CollectiveTiming& t) {
  return t.protocol ? std::string(comm::ProtocolName(*t.protocol)) : std::string("nccl");
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

Result<std::vector<int>> ParseGroup(std::string_view text, int num_gpus) {
  std::vector<int> gpus;
  if (text.find(',') != std::string_view::npos) {
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = std::min(text.find(',', start), text.size());
      Result<int> id = ParseInt(text.substr(start, comma - start), "GPU id in --group");
      if (!id.ok()) return Status::InvalidArgument(id.status().message() + kGroupHelp);
      if (*id >= num_gpus) {
        return Status::InvalidArgument("GPU " + std::to_string(*id) +
                                       " in --group is out of range: the cluster has GPUs 0.." +
                                       std::to_string(num_gpus - 1));
      }
      gpus.push_back(*id);
      start = comma + 1;
    }
    return gpus;
  }
  const size_t slash = text.find('/');
  Result<int> n = ParseInt(text.substr(0, slash), "--group size");
  if (!n.ok()) return Status::InvalidArgument(n.status().message() + kGroupHelp);
  int stride = 1;
  if (slash != std::string_view::npos) {
    Result<int> s = ParseInt(text.substr(slash + 1), "--group stride");
    if (!s.ok()) return Status::InvalidArgument(s.status().message() + kGroupHelp);
    stride = *s;
  }
  if (*n < 1 || stride < 1) {
    return Status::InvalidArgument("--group needs at least 1 GPU and a stride >= 1");
  }
  if (static_cast<int64_t>(*n - 1) * stride >= num_gpus) {
    return Status::InvalidArgument("group of " + std::to_string(*n) + " GPUs" +
                                   (stride > 1 ? " with stride " + std::to_string(stride) : "") +
                                   " is larger than the cluster (" + std::to_string(num_gpus) +
                                   " GPUs)");
  }
  for (int i = 0; i < *n; ++i) gpus.push_back(i * stride);
  return gpus;
}

void AddCollectiveCommand(CLI::App& app, int* exit_code) {
  struct Options {
    ScenarioOptions scenario;
    std::string op = "all_reduce";
    std::string algo = "auto";
    std::string group;
    std::string sizes = "8B:8GiB";
    int step_factor = 2;
    bool expand = false;
    std::string calibration;
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
                  "auto (the fastest, as NCCL's tuner picks), ring, tree, hierarchical or direct "
                  "(default auto)");
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
    Result<comm::Op> op = comm::ParseOp(opts->op);
    if (!op.ok()) {
      *exit_code = ReportError(op.status().WithPrefix("--op"));
      return;
    }
    Result<comm::Algo> algo = comm::ParseAlgo(opts->algo);
    if (!algo.ok()) {
      *exit_code = ReportError(algo.status().WithPrefix("--algo"));
      return;
    }
    if (opts->step_factor < 2) {
      *exit_code = ReportError(Status::InvalidArgument("--step-factor must be an integer >= 2"));
      return;
    }
    Result<std::vector<uint64_t>> sizes =
        comm::ParseSizeRange(opts->sizes, static_cast<uint64_t>(opts->step_factor));
    if (!sizes.ok()) {
      *exit_code = ReportError(sizes.status().WithPrefix("--sizes"));
      return;
    }
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    Result<std::optional<comm::Calibration>> calibration =
        LoadScenarioCalibration(*resolved, opts->calibration);
    if (!calibration.ok()) {
      *exit_code = ReportError(calibration.status());
      return;
    }
    const comm::Calibration* cal = calibration->has_value() ? &**calibration : nullptr;
    const comm::TopologySpec topo_spec = scenarios::MakeTopologySpec(*resolved);
    Result<comm::Topology> topology = comm::Topology::Build(topo_spec);
    if (!topology.ok()) {
      *exit_code = ReportError(topology.status().WithPrefix("cluster"));
      return;
    }
    std::string group_text = opts->group;
    if (group_text.empty()) {
      group_text = *op == comm::Op::kSendRecv ? "2" : std::to_string(topology->num_gpus());
    }
    Result<std::vector<int>> gpus = ParseGroup(group_text, topology->num_gpus());
    if (!gpus.ok()) {
      *exit_code = ReportError(gpus.status());
      return;
    }
    comm::CollectiveSpec spec{*op, *algo, *gpus, (*sizes)[0]};
    if (Status st = comm::ValidateCollective(*topology, spec); !st.ok()) {
      *exit_code = ReportError(st);
      return;
    }
    const int n = static_cast<int>(gpus->size());
    std::vector<Row> rows;
    for (uint64_t bytes : *sizes) {
      spec.bytes = bytes;
      Row row;
      row.bytes = bytes;
      Result<comm::CollectiveTiming> est = comm::EstimateCollectiveCalibrated(*topology, spec, cal);
      if (!est.ok()) {
        *exit_code = ReportError(est.status());
        return;
      }
      row.estimate = *est;
      row.time_s = est->time.seconds();
      // A measured time stands as is; --expand replaces only the model's closed form.
      if (opts->expand && !est->calibrated) {
        sim::Engine engine;
        comm::FlowNetwork network(&engine, &*topology);
        sim::Time done = sim::Time::Max();
        Result<comm::CollectiveEstimate> ran =
            comm::RunCollective(&network, spec, [&] { done = engine.now(); });
        if (!ran.ok()) {
          *exit_code = ReportError(ran.status());
          return;
        }
        engine.Run();
        row.time_s = done.seconds();
      }
      row.algbw_GBps = row.time_s > 0 ? static_cast<double>(bytes) / row.time_s / 1e9 : 0;
      row.busbw_GBps = row.algbw_GBps * comm::BusBandwidthFactor(*op, n);
      rows.push_back(row);
    }

    if (opts->scenario.json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const Row& r : rows) {
        nlohmann::ordered_json row = {{"op", std::string(comm::OpName(*op))},
                                      {"algo", std::string(comm::AlgoName(r.estimate.algo))},
                                      {"protocol", ProtocolText(r.estimate)},
                                      {"group", n},
                                      {"size_bytes", r.bytes},
                                      {"time_s", r.time_s},
                                      {"algbw_GBps", r.algbw_GBps},
                                      {"busbw_GBps", r.busbw_GBps},
                                      {"source", r.estimate.calibrated ? "calibration" : "model"}};
        if (cal != nullptr) {
          row["calibration"] = {{"file", cal->path()},
                                {"gpu", cal->gpu_name()},
                                {"nccl_version", cal->nccl_version()},
                                {"sample", cal->is_sample()}};
        }
        out.push_back(std::move(row));
      }
      std::cout << out.dump(2) << "\n";
      *exit_code = kExitOk;
      return;
    }
    std::cout << "# trainsim collective: " << comm::OpName(*op) << ", algo " << opts->algo << ", "
              << n << " GPUs of " << topology->num_gpus() << " (" << topology->num_nodes()
              << " nodes x " << topology->gpus_per_node() << ")\n"
              << "# "
              << (opts->expand ? "flow-level expansion on the event engine"
                               : "closed form (idle network)")
              << "; busbw factor " << Fmt("%.4f", comm::BusBandwidthFactor(*op, n)) << "\n";
    int calibrated_rows = 0;
    for (const Row& r : rows) calibrated_rows += r.estimate.calibrated ? 1 : 0;
    if (cal != nullptr) {
      std::cout << "# " << cal->Describe() << "\n"
                << "# " << calibrated_rows << " of " << rows.size()
                << " rows calibrated (source calib: interpolated log-log between measured sizes), "
                   "the rest modelled (source model)\n";
    }
    std::cout << "#" << Pad("bytes", 13) << Pad("size", 14) << Pad("time(us)", 13)
              << Pad("algbw(GB/s)", 13) << Pad("busbw(GB/s)", 13) << "  algo          proto"
              << (cal != nullptr ? "   source" : "") << "\n";
    for (const Row& r : rows) {
      std::cout << Pad(std::to_string(r.bytes), 14) << Pad(comm::FormatMessageSize(r.bytes), 14)
                << Pad(Fmt("%.2f", r.time_s * 1e6), 13) << Pad(Fmt("%.2f", r.algbw_GBps), 13)
                << Pad(Fmt("%.2f", r.busbw_GBps), 13) << "  ";
      std::string algo_name(comm::AlgoName(r.estimate.algo));
      algo_name.resize(14, ' ');
      std::string proto = ProtocolText(r.estimate);
      if (cal == nullptr) {
        std::cout << algo_name << proto << "\n";
        continue;
      }
      proto.resize(8, ' ');
      std::cout << algo_name << proto << (r.estimate.calibrated ? "calib" : "model") << "\n";
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
