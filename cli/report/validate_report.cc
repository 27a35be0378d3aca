#include "cli/report/validate_report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "cli/report/format.h"

namespace trainsim::cli::report {
namespace {

struct Mape {
  std::map<std::string, std::pair<double, int>> by_source;  // Σ|error|, rows
  double overall = 0;
};

Mape MapeOf(const std::vector<scenarios::ValidationRow>& rows) {
  Mape m;
  double total = 0;
  for (const scenarios::ValidationRow& r : rows) {
    m.by_source[r.source].first += std::fabs(r.error);
    m.by_source[r.source].second += 1;
    total += std::fabs(r.error);
  }
  m.overall = rows.empty() ? 0 : total / double(rows.size());
  return m;
}

}  // namespace

std::string FormatValidationJson(const std::vector<scenarios::ValidationRow>& rows) {
  const Mape m = MapeOf(rows);
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const scenarios::ValidationRow& r : rows) {
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
  for (const auto& [source, acc] : m.by_source) {
    j["mape_by_source"][source] = acc.first / acc.second;
  }
  j["mape"] = m.overall;
  return j.dump(2) + "\n";
}

std::string FormatValidationTable(const std::vector<scenarios::ValidationRow>& rows) {
  const Mape m = MapeOf(rows);
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-38s %-17s %10s %10s %8s %4s %9s\n", "scenario", "metric",
                "predicted", "published", "error", "mb", "step");
  out << buf;
  for (const scenarios::ValidationRow& r : rows) {
    const std::string metric = r.metric == "tflops_per_gpu" ? "TFLOP/s per GPU" : "iteration s";
    std::snprintf(buf, sizeof buf, "%-38s %-17s %10.2f %10.2f %+7.1f%% %3d%s %8.2fs\n",
                  r.scenario.c_str(), metric.c_str(), r.predicted, r.published, 100 * r.error,
                  r.micro_batch, r.micro_batch_searched ? "*" : " ", r.step_time_s);
    out << buf;
  }
  out << "\n";
  for (const auto& [source, acc] : m.by_source) {
    out << "MAPE " << source << ": " << Fmt("%.1f%%", 100 * acc.first / acc.second) << " ("
        << acc.second << " rows)\n";
  }
  out << "MAPE overall: " << Fmt("%.1f%%", 100 * m.overall) << " (" << rows.size() << " rows)\n";
  out << "* micro-batch not published: best of 1, 2, 4, 8 found by the simulator\n";
  return out.str();
}

}  // namespace trainsim::cli::report
