#include "cli/validate_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/report/format.h"
#include "scenarios/step_config.h"

namespace trainsim::cli {
namespace {

using report::Fmt;

}  // namespace

void AddValidateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    // From the repository root the bundled rows are found as-is; elsewhere, in the source tree
    // this binary was built from.
    std::string dir = std::filesystem::is_directory("scenarios/validation")
                          ? "scenarios/validation"
                          : std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation";
    std::vector<std::string> sets;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Predict every published run in scenarios/validation/ and report the errors");
  cmd->add_option("--dir", opts->dir, "Directory of validation scenarios")->capture_default_str();
  cmd->add_option("--set", opts->sets, "Override a field in every scenario (repeatable)")
      ->take_all()
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
  cmd->add_flag("--json", opts->json, "Print JSON instead of a table");
  cmd->callback([opts, exit_code] {
    Result<std::vector<scenarios::ValidationRow>> rows =
        scenarios::RunValidation(opts->dir, opts->sets);
    if (!rows.ok()) {
      *exit_code = ReportError(rows.status());
      return;
    }
    std::map<std::string, std::pair<double, int>> by_source;
    double total = 0;
    for (const scenarios::ValidationRow& r : *rows) {
      by_source[r.source].first += std::fabs(r.error);
      by_source[r.source].second += 1;
      total += std::fabs(r.error);
    }
    const double mape = rows->empty() ? 0 : total / double(rows->size());
    if (opts->json) {
      nlohmann::json j;
      j["rows"] = nlohmann::json::array();
      for (const scenarios::ValidationRow& r : *rows) {
        j["rows"].push_back({{"scenario", r.scenario},
                             {"source", r.source},
                             {"metric", r.metric},
                             {"predicted", r.predicted},
                             {"published", r.published},
                             {"error", r.error},
                             {"micro_batch", r.micro_batch},
                             {"micro_batch_searched", r.micro_batch_searched},
                             {"step_time_s", r.step_time_s},
                             {"mfu", r.mfu}});
      }
      for (const auto& [source, acc] : by_source) {
        j["mape_by_source"][source] = acc.first / acc.second;
      }
      j["mape"] = mape;
      std::cout << j.dump(2) << "\n";
      *exit_code = kExitOk;
      return;
    }
    std::ostringstream out;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-38s %-17s %10s %10s %8s %4s %9s\n", "scenario", "metric",
                  "predicted", "published", "error", "mb", "step");
    out << buf;
    for (const scenarios::ValidationRow& r : *rows) {
      const std::string metric = r.metric == "tflops_per_gpu" ? "TFLOP/s per GPU" : "iteration s";
      std::snprintf(buf, sizeof buf, "%-38s %-17s %10.2f %10.2f %+7.1f%% %3d%s %8.2fs\n",
                    r.scenario.c_str(), metric.c_str(), r.predicted, r.published, 100 * r.error,
                    r.micro_batch, r.micro_batch_searched ? "*" : " ", r.step_time_s);
      out << buf;
    }
    out << "\n";
    for (const auto& [source, acc] : by_source) {
      out << "MAPE " << source << ": " << Fmt("%.1f%%", 100 * acc.first / acc.second) << " ("
          << acc.second << " rows)\n";
    }
    out << "MAPE overall: " << Fmt("%.1f%%", 100 * mape) << " (" << rows->size() << " rows)\n";
    out << "* micro-batch not published: best of 1, 2, 4, 8 found by the simulator\n";
    std::cout << out.str();
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
