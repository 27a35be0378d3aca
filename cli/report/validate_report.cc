#include "cli/report/validate_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/report/format.h"

namespace trainsim::cli::report {
namespace {

// The rows of one source (one published table), in the order the rows came.
struct Table {
  std::string source;
  std::vector<const scenarios::ValidationRow*> rows;
  double mape = 0;
};

std::vector<Table> TablesOf(const std::vector<scenarios::ValidationRow>& rows) {
  std::vector<Table> tables;
  for (const scenarios::ValidationRow& r : rows) {
    Table* t = nullptr;
    for (Table& existing : tables) {
      if (existing.source == r.source) t = &existing;
    }
    if (t == nullptr) {
      tables.push_back({r.source, {}, 0});
      t = &tables.back();
    }
    t->rows.push_back(&r);
  }
  for (Table& t : tables) {
    double sum = 0;
    for (const scenarios::ValidationRow* r : t.rows) sum += std::fabs(r->error);
    t.mape = sum / double(t.rows.size());
  }
  return tables;
}

double OverallMape(const std::vector<scenarios::ValidationRow>& rows) {
  double total = 0;
  for (const scenarios::ValidationRow& r : rows) total += std::fabs(r.error);
  return rows.empty() ? 0 : total / double(rows.size());
}

std::string MetricName(const std::string& metric) {
  if (metric == "tflops_per_gpu") return "TFLOP/s per GPU";
  if (metric == "tokens_per_sec_per_gpu") return "tokens/s per GPU";
  return "iteration s";
}

nlohmann::json BreakdownJson(const step::StepBreakdown& b) {
  return {{"compute_s", b.compute_s},
          {"exposed_tp_comm_s", b.exposed_tp_comm_s},
          {"exposed_cp_comm_s", b.exposed_cp_comm_s},
          {"exposed_ep_comm_s", b.exposed_ep_comm_s},
          {"exposed_dp_comm_s", b.exposed_dp_comm_s},
          {"pp_wait_s", b.pp_wait_s},
          {"bubble_s", b.bubble_s},
          {"optimizer_s", b.optimizer_s},
          {"other_s", b.other_s},
          {"compute_slowed_by_comm_s", b.compute_slowed_s}};
}

// "compute 71% TP 3% CP 0% EP 9% DP 1% PP 2% bubble 12% opt 1%" of the report GPU's step.
std::string BreakdownLine(const step::StepBreakdown& b) {
  const double total = b.total_s();
  auto pct = [total](double part) { return Fmt("%.0f%%", total > 0 ? 100 * part / total : 0); };
  const std::string slowed =
      b.compute_slowed_s > 0 ? "  slowed by comm " + pct(b.compute_slowed_s) : "";
  return "compute " + pct(b.compute_s) + slowed + "  TP " + pct(b.exposed_tp_comm_s) + "  CP " +
         pct(b.exposed_cp_comm_s) + "  EP " + pct(b.exposed_ep_comm_s) + "  DP " +
         pct(b.exposed_dp_comm_s) + "  PP wait " + pct(b.pp_wait_s) + "  bubble " +
         pct(b.bubble_s) + "  optimizer " + pct(b.optimizer_s + b.other_s) +
         (b.offload_wait_s > 0 ? "  offload wait " + pct(b.offload_wait_s) : "");
}

}  // namespace

std::string FormatValidationJson(const std::vector<scenarios::ValidationRow>& rows) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const scenarios::ValidationRow& r : rows) {
    nlohmann::json row = {{"scenario", r.scenario},
                          {"source", r.source},
                          {"metric", r.metric},
                          {"predicted", r.predicted},
                          {"published", r.published},
                          {"error", r.error},
                          {"micro_batch", r.micro_batch},
                          {"micro_batch_searched", r.micro_batch_searched},
                          {"step_time_s", r.step_time_s},
                          {"mfu", r.mfu},
                          {"memory_fits", r.memory_fits},
                          {"peak_memory_gb", r.peak_memory_gb},
                          {"breakdown", BreakdownJson(r.breakdown)}};
    if (r.model_tflops_published > 0) {
      row["model_tflops_per_gpu"] = {
          {"predicted", r.model_tflops_predicted},
          {"published", r.model_tflops_published},
          {"error", r.model_tflops_predicted / r.model_tflops_published - 1}};
    }
    j["rows"].push_back(row);
  }
  j["tables"] = nlohmann::json::array();
  for (const Table& t : TablesOf(rows)) {
    nlohmann::json names = nlohmann::json::array();
    for (const scenarios::ValidationRow* r : t.rows) names.push_back(r->scenario);
    j["tables"].push_back(
        {{"source", t.source}, {"rows", names}, {"count", t.rows.size()}, {"mape", t.mape}});
    j["mape_by_source"][t.source] = t.mape;
  }
  j["mape"] = OverallMape(rows);
  return j.dump(2) + "\n";
}

std::string FormatValidationTable(const std::vector<scenarios::ValidationRow>& rows) {
  std::ostringstream out;
  char buf[320];
  bool any_searched = false, any_oom = false;
  for (const Table& t : TablesOf(rows)) {
    out << "== " << t.source << " (" << t.rows.size() << " rows)\n";
    std::snprintf(buf, sizeof buf, "%-38s %-17s %10s %10s %8s %4s %9s  %s\n", "scenario", "metric",
                  "predicted", "published", "error", "mb", "step", "model TFLOP/s per GPU");
    out << buf;
    for (const scenarios::ValidationRow* r : t.rows) {
      any_searched = any_searched || r->micro_batch_searched;
      any_oom = any_oom || !r->memory_fits;
      std::string extra;
      if (r->model_tflops_published > 0) {
        extra = Fmt("%.0f", r->model_tflops_predicted) + " vs " +
                Fmt("%.0f", r->model_tflops_published);
      }
      if (!r->memory_fits)
        extra += Fmt(" [memory model: %.0f GB, over the GPU]", r->peak_memory_gb);
      std::snprintf(buf, sizeof buf, "%-38s %-17s %10.2f %10.2f %+7.1f%% %3d%s %8.2fs  %s\n",
                    r->scenario.c_str(), MetricName(r->metric).c_str(), r->predicted, r->published,
                    100 * r->error, r->micro_batch, r->micro_batch_searched ? "*" : " ",
                    r->step_time_s, extra.c_str());
      out << buf;
      if (r->metric == "tokens_per_sec_per_gpu") {
        out << "    step: " << BreakdownLine(r->breakdown) << "\n";
      }
    }
    out << "MAPE " << t.source << ": " << Fmt("%.1f%%", 100 * t.mape) << "\n\n";
  }
  out << "MAPE overall: " << Fmt("%.1f%%", 100 * OverallMape(rows)) << " (" << rows.size()
      << " rows)\n";
  if (any_searched)
    out << "* micro-batch not published: best of 1, 2, 4, 8 found by the simulator\n";
  if (any_oom) {
    out << "memory model: a published run the memory model says does not fit is timed anyway\n";
  }
  return out.str();
}

}  // namespace trainsim::cli::report
