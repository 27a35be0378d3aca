#include "cli/validate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "parallelism/step_simulation.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

namespace trainsim::cli {
namespace {

namespace par = trainsim::parallelism;

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// scenario name → whether its micro-batch size is published.
Result<std::map<std::string, bool>> ReadPublishedTable(const std::filesystem::path& dir) {
  std::map<std::string, bool> out;
  std::ifstream in(dir / "published.csv");
  if (!in) return out;  // no table: every row's micro-batch is taken as published
  std::string line;
  bool header = true;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    const size_t comma = line.find(',');
    if (comma == std::string::npos) {
      return Status::InvalidArgument((dir / "published.csv").string() + ":" +
                                     std::to_string(line_no) +
                                     ": expected 'scenario,micro_batch_published'");
    }
    out[line.substr(0, comma)] = line.substr(comma + 1) == "true";
  }
  return out;
}

}  // namespace

Result<std::vector<ValidationRow>> RunValidation(const std::string& dir,
                                                 const std::vector<std::string>& sets) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound("validation directory '" + dir + "' does not exist");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".textproto") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return Status::NotFound("no *.textproto scenarios in '" + dir + "'");
  Result<std::map<std::string, bool>> table = ReadPublishedTable(dir);
  if (!table.ok()) return table.status();

  std::vector<ValidationRow> rows;
  for (const fs::path& file : files) {
    Result<pb::Scenario> scenario = scenarios::LoadScenario(file.string(), sets);
    if (!scenario.ok()) return scenario.status();
    Result<scenarios::ResolvedScenario> resolved = scenarios::Resolve(*scenario);
    if (!resolved.ok()) return resolved.status().WithPrefix(file.string());
    const pb::Published& pub = resolved->scenario.published();
    ValidationRow row;
    row.scenario = resolved->scenario.name();
    row.source = pub.source();
    if (pub.has_tflops_per_gpu()) {
      row.metric = "tflops_per_gpu";
      row.published = pub.tflops_per_gpu();
    } else if (pub.has_iteration_time_s()) {
      row.metric = "iteration_time_s";
      row.published = pub.iteration_time_s();
    } else {
      continue;  // nothing to compare with
    }
    Result<par::StepConfig> base = scenarios::MakeStepConfig(*resolved);
    if (!base.ok()) return base.status().WithPrefix(file.string());
    auto it = table->find(row.scenario);
    row.micro_batch_searched = it != table->end() && !it->second;
    std::vector<int> candidates = {base->parallel.micro_batch};
    if (row.micro_batch_searched) candidates = {1, 2, 4, 8};
    std::optional<par::StepResult> best;
    Status last_error = Status::Ok();
    for (int mb : candidates) {
      par::StepConfig c = *base;
      c.parallel.micro_batch = mb;
      Result<par::StepResult> r = par::SimulateStep(c);
      if (!r.ok()) {
        last_error = r.status();
        continue;  // does not divide the batch or does not fit: not a candidate
      }
      if (!best || r->time_s < best->time_s) {
        best = std::move(*r);
        row.micro_batch = mb;
      }
    }
    if (!best) return last_error.WithPrefix(file.string());
    row.step_time_s = best->time_s;
    row.mfu = best->mfu;
    row.predicted = row.metric == "tflops_per_gpu" ? best->tflops_per_gpu : best->time_s;
    row.error = row.predicted / row.published - 1;
    rows.push_back(row);
  }
  return rows;
}

void AddValidateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string dir = "scenarios/validation";
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
    Result<std::vector<ValidationRow>> rows = RunValidation(opts->dir, opts->sets);
    if (!rows.ok()) {
      *exit_code = ReportError(rows.status());
      return;
    }
    std::map<std::string, std::pair<double, int>> by_source;
    double total = 0;
    for (const ValidationRow& r : *rows) {
      by_source[r.source].first += std::fabs(r.error);
      by_source[r.source].second += 1;
      total += std::fabs(r.error);
    }
    const double mape = rows->empty() ? 0 : total / double(rows->size());
    if (opts->json) {
      nlohmann::json j;
      j["rows"] = nlohmann::json::array();
      for (const ValidationRow& r : *rows) {
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
    for (const ValidationRow& r : *rows) {
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
