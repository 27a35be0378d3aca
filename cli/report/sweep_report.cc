#include "cli/report/sweep_report.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/report/format.h"
#include "parallelism/layout.h"

namespace trainsim::cli::report {
namespace {

namespace par = trainsim::parallelism;

// Right-aligned columns.
std::string Col(const std::string& s, size_t width) { return AlignRight(s, width); }

std::string Row(const sweep::Evaluation& e, size_t rank) {
  const par::ParallelConfig& p = e.layout.parallel;
  std::string sched = par::ScheduleName(p.schedule);
  if (p.virtual_stages > 1) sched.append("/").append(std::to_string(p.virtual_stages));
  // Uneven pipelines: "first/last" stage layers; "-" for an even split.
  const std::string stages =
      p.first_stage_layers >= 0 || p.last_stage_layers >= 0
          ? std::to_string(p.first_stage_layers) + "/" + std::to_string(p.last_stage_layers)
          : "-";
  std::string zero = std::to_string(p.zero_stage);
  if (p.shard_group > 0) zero.append("/").append(std::to_string(p.shard_group));
  std::string s =
      Col(std::to_string(rank), 3) + Col(std::to_string(e.layout.gpus), 8) +
      Col(std::to_string(p.tp), 4) + Col(std::to_string(p.cp), 4) + Col(std::to_string(p.ep), 4) +
      Col(std::to_string(p.etp), 4) + Col(std::to_string(p.pp), 4) + Col(stages, 9) +
      Col(std::to_string(p.dp), 6) + Col(std::to_string(p.micro_batch), 4) + Col(sched, 15) +
      Col(par::RecomputeName(p.recompute), 11) + Col(p.sequence_parallel ? "yes" : "no", 4) +
      Col(zero, 8) + Col(Fmt("%.3f", e.step_time_s), 9) + Col(Fmt("%.1f%%", 100 * e.mfu), 7) +
      Col(Fmt("%.1f", e.memory_bytes_per_gpu / 1e9), 7) +
      Col(Fmt("%.2f%%", 100 * e.expected_ettr), 8) +
      Col(Fmt("%.2f", e.time_to_train_s / 86400), 8) + Col(Fmt("%.0f", e.gpu_hours), 10) +
      Col(Fmt("%.0f", e.cost_usd), 12);
  s += e.confirmed ? "\n" : "  (estimate)\n";
  return s;
}

std::string Header() {
  return Col("#", 3) + Col("GPUs", 8) + Col("TP", 4) + Col("CP", 4) + Col("EP", 4) + Col("ETP", 4) +
         Col("PP", 4) + Col("1st/last", 9) + Col("DP", 6) + Col("mb", 4) + Col("schedule", 15) +
         Col("recompute", 11) + Col("SP", 4) + Col("ZeRO/sh", 8) + Col("step s", 9) +
         Col("MFU", 7) + Col("mem GB", 7) + Col("E[ETTR]", 8) + Col("days", 8) +
         Col("GPU-hours", 10) + Col("cost USD", 12) + "\n";
}

nlohmann::ordered_json EvalJson(const sweep::Evaluation& e) {
  const par::ParallelConfig& p = e.layout.parallel;
  nlohmann::ordered_json j;
  j["gpus"] = e.layout.gpus;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["dp"] = p.dp;
  j["micro_batch"] = p.micro_batch;
  j["schedule"] = par::ScheduleName(p.schedule);
  j["virtual_stages"] = p.virtual_stages;
  j["recompute"] = par::RecomputeName(p.recompute);
  j["sequence_parallel"] = p.sequence_parallel;
  j["zero_stage"] = p.zero_stage;
  j["cp"] = p.cp;
  j["ep"] = p.ep;
  j["etp"] = p.etp;
  j["first_stage_layers"] = p.first_stage_layers;
  j["last_stage_layers"] = p.last_stage_layers;
  j["shard_group"] = p.shard_group;
  j["tp_comm_overlap"] = p.tp_comm_overlap;
  j["overlap_param_gather"] = p.overlap_param_gather;
  j["overlap_p2p"] = p.overlap_p2p;
  j["step_time_s"] = e.step_time_s;
  j["estimated_step_time_s"] = e.estimated_step_time_s;
  j["confirmed"] = e.confirmed;
  j["mfu"] = e.mfu;
  j["memory_bytes_per_gpu"] = e.memory_bytes_per_gpu;
  j["expected_ettr"] = e.expected_ettr;
  j["checkpoint_interval_s"] = e.checkpoint_interval_s;
  j["time_to_train_s"] = e.time_to_train_s;
  j["gpu_hours"] = e.gpu_hours;
  j["cost_usd"] = e.cost_usd;
  if (e.trials > 0) {
    j["trials"] = e.trials;
    j["mc_ettr"] = e.mc_ettr;
    j["mc_time_to_train_s"] = e.mc_time_to_train_s;
    j["mc_cost_usd"] = e.mc_cost_usd;
  }
  return j;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

// %.17g: the CSV keeps every double exactly.
std::string Exact(double v) { return Fmt("%.17g", v); }

}  // namespace

std::string FormatSweepTable(const sweep::SweepProblem& problem, const sweep::SweepResult& result,
                             sweep::Objective objective, const std::string& title) {
  std::string out = "sweep: " + title + "\n";
  out += "  " + std::to_string(result.evaluations.size()) +
         " layouts: " + std::to_string(result.evaluated) + " evaluated, " +
         std::to_string(result.rejected) + " rejected (invalid or over memory), " +
         std::to_string(result.confirmed) + " confirmed by the step simulation\n";
  out +=
      "  token budget " + Fmt("%.4g", problem.token_budget) + ", price " +
      Fmt("%.2f", problem.run.usd_per_gpu_hour) +
      " USD per GPU-hour; expected ETTR (E[ETTR]) = Daly's expected useful fraction at the optimal "
      "checkpoint interval\n\n";
  out += std::string("Top ") + std::to_string(result.top.size()) + " by " +
         (objective == sweep::Objective::kTime ? "time to train" : "cost") + ":\n";
  out += Header();
  size_t k = 1;
  for (size_t i : result.top) out += Row(result.evaluations[i], k++);
  bool mc = false;
  for (size_t i : result.top) mc |= result.evaluations[i].trials > 0;
  if (mc) {
    out += "\nMonte Carlo (run simulation, Daly interval, means over trials):\n";
    k = 1;
    for (size_t i : result.top) {
      const sweep::Evaluation& e = result.evaluations[i];
      out += Col(std::to_string(k++), 3) + "  " + std::to_string(e.trials) + " trials: ETTR " +
             Fmt("%.2f%%", 100 * e.mc_ettr) + ", " +
             Fmt("%.2f days", e.mc_time_to_train_s / 86400) + ", " +
             Fmt("%.0f USD", e.mc_cost_usd) + "\n";
    }
  }
  out += "\nPareto front (time to train vs cost):\n";
  out += Header();
  k = 1;
  for (size_t i : result.pareto) out += Row(result.evaluations[i], k++);
  return out;
}

std::string FormatSweepJson(const sweep::SweepResult& result, sweep::Objective objective) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (size_t i : result.top) top.push_back(EvalJson(result.evaluations[i]));
  nlohmann::ordered_json pareto = nlohmann::ordered_json::array();
  for (size_t i : result.pareto) pareto.push_back(EvalJson(result.evaluations[i]));
  j["top"] = top;
  j["pareto"] = pareto;
  j["evaluated"] = result.evaluated;
  j["rejected"] = result.rejected;
  j["confirmed"] = result.confirmed;
  j["objective"] = sweep::ObjectiveName(objective);
  return j.dump(2) + "\n";
}

std::string FormatSweepCsv(const sweep::SweepResult& result) {
  std::string out =
      "index,gpus,tp,pp,dp,micro_batch,schedule,virtual_stages,recompute,sequence_parallel,"
      "zero_stage,cp,ep,etp,first_stage_layers,last_stage_layers,shard_group,tp_comm_overlap,"
      "overlap_param_gather,overlap_p2p,status,memory_bytes_per_gpu,step_time_s,estimated_step_"
      "time_s,confirmed,mfu,"
      "expected_ettr,checkpoint_interval_s,time_to_train_s,gpu_hours,cost_usd,reason\n";
  for (const sweep::Evaluation& e : result.evaluations) {
    const par::ParallelConfig& p = e.layout.parallel;
    out += std::to_string(e.index) + "," + std::to_string(e.layout.gpus) + "," +
           std::to_string(p.tp) + "," + std::to_string(p.pp) + "," + std::to_string(p.dp) + "," +
           std::to_string(p.micro_batch) + "," + par::ScheduleName(p.schedule) + "," +
           std::to_string(p.virtual_stages) + "," + par::RecomputeName(p.recompute) + "," +
           (p.sequence_parallel ? "true" : "false") + "," + std::to_string(p.zero_stage) + "," +
           std::to_string(p.cp) + "," + std::to_string(p.ep) + "," + std::to_string(p.etp) + "," +
           std::to_string(p.first_stage_layers) + "," + std::to_string(p.last_stage_layers) + "," +
           std::to_string(p.shard_group) + "," + Bool(p.tp_comm_overlap) + "," +
           Bool(p.overlap_param_gather) + "," + Bool(p.overlap_p2p) + "," +
           (e.rejected ? "rejected" : "evaluated") + "," + Exact(e.memory_bytes_per_gpu) + ",";
    if (e.rejected) {
      out += ",,,,,,,,,";
    } else {
      out += Exact(e.step_time_s) + "," + Exact(e.estimated_step_time_s) + "," +
             (e.confirmed ? "true" : "false") + "," + Exact(e.mfu) + "," + Exact(e.expected_ettr) +
             "," + Exact(e.checkpoint_interval_s) + "," + Exact(e.time_to_train_s) + "," +
             Exact(e.gpu_hours) + "," + Exact(e.cost_usd) + ",";
    }
    out += CsvField(e.reason) + "\n";
  }
  return out;
}

}  // namespace trainsim::cli::report
