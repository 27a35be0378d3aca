#include "cli/report/sweep_report.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/report/format.h"
#include "cli/report/step_report.h"
#include "parallelism/layout.h"

namespace trainsim::cli::report {
namespace {

namespace par = trainsim::parallelism;

// Right-aligned columns.
// Right-aligned in `width`; a value too wide for its column keeps one space before it, so that
// columns never run together (a 2^60-token budget's GPU-hours take 19 digits).
std::string Col(const std::string& s, size_t width) {
  return s.size() >= width ? " " + s : AlignRight(s, width);
}

std::string Left(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string Row(const std::vector<sweep::SweepProblem>& problems, const sweep::SweepResult& result,
                size_t i, size_t rank) {
  const sweep::Evaluation& e = result.evaluations[i];
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
  std::string s = Col(std::to_string(rank), 3);
  if (problems.size() > 1) {
    s += "  " + Left(problems[size_t(e.layout.hardware)].hardware_name, 16);
  }
  s += Col(std::to_string(e.layout.gpus), 8) + Col(std::to_string(p.tp), 4) +
       Col(std::to_string(p.cp), 4) + Col(std::to_string(p.ep), 4) + Col(std::to_string(p.etp), 4) +
       Col(std::to_string(p.pp), 4) + Col(stages, 9) + Col(std::to_string(p.dp), 6) +
       Col(std::to_string(p.micro_batch), 4) + Col(sched, 15) +
       Col(par::RecomputeName(p.recompute), 11) + Col(p.sequence_parallel ? "yes" : "no", 4) +
       Col(zero, 8) + Col(Fmt("%.3f", e.step_time_s), 9) + Col(Fmt("%.1f%%", 100 * e.mfu), 7) +
       Col(Fmt("%.1f", e.memory_bytes_per_gpu / 1e9), 7) +
       Col(Fmt("%.2f%%", 100 * e.expected_ettr), 8) +
       Col(Fmt("%.2f", e.time_to_train_s / 86400), 8) + Col(Fmt("%.0f", e.gpu_hours), 10) +
       Col(Fmt("%.0f", e.cost_usd), 12) + Col(Fmt("%.1f", e.energy_kwh / 1e3), 9);
  s += e.confirmed ? "\n" : "  (estimate)\n";
  if (!e.equivalents.empty()) {
    // The rows folded into this one: the same layout in effect (sweep::SameInEffect).
    std::string same;
    for (int64_t j : e.equivalents) {
      const sweep::Evaluation& o = result.evaluations[size_t(j)];
      same += (same.empty() ? "" : "; ") + sweep::DescribeDifference(e.layout, o.layout) + " (" +
              Fmt("%.1f", o.memory_bytes_per_gpu / 1e9) + " GB)";
    }
    s += "       same in effect: " + same + "\n";
  }
  return s;
}

std::string Header(bool hardware) {
  return Col("#", 3) + (hardware ? "  " + Left("GPU", 16) : std::string()) + Col("GPUs", 8) +
         Col("TP", 4) + Col("CP", 4) + Col("EP", 4) + Col("ETP", 4) + Col("PP", 4) +
         Col("1st/last", 9) + Col("DP", 6) + Col("mb", 4) + Col("schedule", 15) +
         Col("recompute", 11) + Col("SP", 4) + Col("ZeRO/sh", 8) + Col("step s", 9) +
         Col("MFU", 7) + Col("mem GB", 7) + Col("E[ETTR]", 8) + Col("days", 8) +
         Col("GPU-hours", 10) + Col("cost USD", 12) + Col("MWh", 9) + "\n";
}

nlohmann::ordered_json EvalJson(const std::vector<sweep::SweepProblem>& problems,
                                const sweep::SweepResult& result, size_t i) {
  const sweep::Evaluation& e = result.evaluations[i];
  const par::ParallelConfig& p = e.layout.parallel;
  nlohmann::ordered_json j;
  j["gpu"] = problems[size_t(e.layout.hardware)].hardware_name;
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
  if (e.confirmed) {
    const step::StepBreakdown& b = e.breakdown;
    j["breakdown"] = {{"compute_s", b.compute_s},
                      {"exposed_tp_comm_s", b.exposed_tp_comm_s},
                      {"exposed_cp_comm_s", b.exposed_cp_comm_s},
                      {"exposed_ep_comm_s", b.exposed_ep_comm_s},
                      {"exposed_dp_comm_s", b.exposed_dp_comm_s},
                      {"pp_wait_s", b.pp_wait_s},
                      {"bubble_s", b.bubble_s},
                      {"optimizer_s", b.optimizer_s},
                      {"other_s", b.other_s},
                      {"input_stall_s", b.input_stall_s},
                      {"host_overhead_s", b.host_overhead_s},
                      {"compute_slowed_by_comm_s", b.compute_slowed_s},
                      {"offload_wait_s", b.offload_wait_s}};
  }
  j["busy_fraction"] = e.busy_fraction;
  j["gpu_watts"] = e.gpu_watts;
  j["energy_kwh"] = e.energy_kwh;
  j["energy_cost_usd"] = e.energy_cost_usd;
  if (e.trials > 0) {
    j["trials"] = e.trials;
    j["mc_ettr"] = e.mc_ettr;
    j["mc_time_to_train_s"] = e.mc_time_to_train_s;
    j["mc_time_to_train_p10_s"] = e.mc_time_p10_s;
    j["mc_time_to_train_p90_s"] = e.mc_time_p90_s;
    j["mc_cost_usd"] = e.mc_cost_usd;
    j["mc_cost_p10_usd"] = e.mc_cost_p10_usd;
    j["mc_cost_p90_usd"] = e.mc_cost_p90_usd;
  }
  nlohmann::ordered_json same = nlohmann::ordered_json::array();
  for (int64_t k : e.equivalents) {
    const sweep::Evaluation& o = result.evaluations[size_t(k)];
    same.push_back({{"index", o.index},
                    {"differs_in", sweep::DescribeDifference(e.layout, o.layout)},
                    {"memory_bytes_per_gpu", o.memory_bytes_per_gpu}});
  }
  j["same_in_effect"] = same;
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

// What relaxes an empty ranking (no layout confirmed).
std::string EmptyReason(const sweep::SweepResult& result) {
  for (const sweep::Evaluation& e : result.evaluations) {
    if (e.rejected && e.reason.rfind("step simulation", 0) == 0) {
      return "  none: every layout the estimator ranked failed its step simulation; the first: " +
             e.reason + "\n";
    }
  }
  return "  none: no layout fits (see the rejected reasons in --csv)\n";
}

std::string ContextLines(const std::vector<sweep::SweepProblem>& problems,
                         const sweep::SweepResult& result, const sweep::SweepOptions& options) {
  const sweep::SweepProblem& first = problems.front();
  std::string out = "  " + std::to_string(result.evaluations.size()) +
                    " layouts: " + std::to_string(result.evaluated) + " evaluated, " +
                    std::to_string(result.rejected) +
                    " rejected (invalid, over memory or over the headroom), " +
                    std::to_string(result.confirmed) + " confirmed by the step simulation in " +
                    std::to_string(result.confirm_rounds) + " round(s), until the top " +
                    std::to_string(options.top_k) + " and the front held confirmed layouts only\n";
  out += "  token budget " + Fmt("%.4g", first.token_budget) + ", price " +
         Fmt("%.2f", first.run.usd_per_gpu_hour) + " USD per GPU-hour, energy at " +
         Fmt("%.3f", first.energy.usd_per_kwh) + " USD per kWh, PUE " +
         Fmt("%.2f", first.energy.pue) +
         "; expected ETTR (E[ETTR]) = Daly's expected useful fraction at the optimal checkpoint "
         "interval\n";
  for (const sweep::SweepProblem& p : problems) {
    out += "  " + p.hardware_name + " (" + p.node_name + "): " + Fmt("%.0f", p.energy.tdp_watts) +
           " W board power, memory headroom " + Fmt("%.1f", p.base.memory.headroom_bytes / 1e9) +
           " GB of " + Fmt("%.1f", p.base.gpu.memory_bytes / 1e9) + " GB kept free\n";
  }
  for (const auto& [name, why] : result.skipped_hardware) {
    out += "  " + name + ": nothing fits — " + why + "\n";
  }
  if (const std::string note = FidelityNote(first.base.model); !note.empty()) {
    out += "  fidelity: " + note + "\n";
  }
  return out;
}

std::string AxisName(sweep::Objective o) {
  switch (o) {
    case sweep::Objective::kTime:
      return "time to train";
    case sweep::Objective::kCost:
      return "cost";
    case sweep::Objective::kEnergy:
      return "energy";
  }
  return "time to train";
}

}  // namespace

std::string FormatSweepTable(const std::vector<sweep::SweepProblem>& problems,
                             const sweep::SweepResult& result, const sweep::SweepOptions& options,
                             const std::string& title) {
  const bool hw = problems.size() > 1;
  std::string out = "sweep: " + title + "\n" + ContextLines(problems, result, options) + "\n";
  out += "Top " + std::to_string(result.top.size()) + " by " + AxisName(options.objective) +
         " (confirmed by the step simulation; ties: less memory, then fewer GPUs):\n";
  out += Header(hw);
  size_t k = 1;
  for (size_t i : result.top) out += Row(problems, result, i, k++);
  if (result.top.empty()) out += EmptyReason(result);
  bool mc = false;
  for (size_t i : result.top) mc |= result.evaluations[i].trials > 0;
  if (mc) {
    out += "\nMonte Carlo over failure histories (run simulation, Daly interval): mean [p10–p90]\n";
    k = 1;
    for (size_t i : result.top) {
      const sweep::Evaluation& e = result.evaluations[i];
      out += Col(std::to_string(k++), 3) + "  " + std::to_string(e.trials) + " trials: ETTR " +
             Fmt("%.2f%%", 100 * e.mc_ettr) + ", " +
             Fmt("%.2f days", e.mc_time_to_train_s / 86400) +
             Fmt(" [%.2f–", e.mc_time_p10_s / 86400) + Fmt("%.2f], ", e.mc_time_p90_s / 86400) +
             Fmt("%.0f USD", e.mc_cost_usd) + Fmt(" [%.0f–", e.mc_cost_p10_usd) +
             Fmt("%.0f]", e.mc_cost_p90_usd) + "\n";
    }
  }
  out += "\nPareto front (" + AxisName(options.pareto.first) + " vs " +
         AxisName(options.pareto.second) + ", confirmed layouts):\n";
  out += Header(hw);
  k = 1;
  for (size_t i : result.pareto) out += Row(problems, result, i, k++);
  if (result.pareto.empty()) out += EmptyReason(result);
  return out;
}

std::string FormatSweepJson(const std::string& scenario, const std::string& model,
                            const std::vector<sweep::SweepProblem>& problems,
                            const sweep::SweepOptions& options, const sweep::SweepResult& result) {
  nlohmann::ordered_json j;
  const sweep::SweepProblem& first = problems.front();
  nlohmann::ordered_json ctx;
  ctx["scenario"] = scenario;
  ctx["model"] = model;
  nlohmann::ordered_json hardware = nlohmann::ordered_json::array();
  for (const sweep::SweepProblem& p : problems) {
    hardware.push_back({{"gpu", p.hardware_name},
                        {"node", p.node_name},
                        {"gpus_per_node", p.base.topology.gpus_per_node},
                        {"hbm_bytes", p.base.gpu.memory_bytes},
                        {"memory_headroom_bytes", p.base.memory.headroom_bytes},
                        {"tdp_watts", p.energy.tdp_watts}});
  }
  ctx["hardware"] = hardware;
  ctx["gpu_counts"] = first.gpu_counts;
  ctx["token_budget"] = first.token_budget;
  ctx["usd_per_gpu_hour"] = first.run.usd_per_gpu_hour;
  ctx["usd_per_kwh"] = first.energy.usd_per_kwh;
  ctx["pue"] = first.energy.pue;
  ctx["gpu_idle_fraction"] = first.energy.idle_fraction;
  ctx["objective"] = sweep::ObjectiveName(options.objective);
  ctx["pareto"] = {sweep::ObjectiveName(options.pareto.first),
                   sweep::ObjectiveName(options.pareto.second)};
  ctx["top_k"] = options.top_k;
  ctx["trials"] = options.trials;
  ctx["layouts"] = result.evaluations.size();
  ctx["confirm_rounds"] = result.confirm_rounds;
  ctx["same_in_effect_folded"] = result.collapsed;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& [name, why] : result.skipped_hardware) {
    skipped.push_back({{"gpu", name}, {"reason", why}});
  }
  ctx["skipped_hardware"] = skipped;
  if (const std::string note = FidelityNote(first.base.model); !note.empty()) {
    ctx["fidelity"] = note;
  }
  j["context"] = ctx;
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (size_t i : result.top) top.push_back(EvalJson(problems, result, i));
  nlohmann::ordered_json pareto = nlohmann::ordered_json::array();
  for (size_t i : result.pareto) pareto.push_back(EvalJson(problems, result, i));
  j["top"] = top;
  j["pareto"] = pareto;
  j["evaluated"] = result.evaluated;
  j["rejected"] = result.rejected;
  j["confirmed"] = result.confirmed;
  j["objective"] = sweep::ObjectiveName(options.objective);
  return j.dump(2) + "\n";
}

std::string FormatSweepCsv(const std::vector<sweep::SweepProblem>& problems,
                           const sweep::SweepResult& result) {
  std::string out =
      "index,gpus,tp,pp,dp,micro_batch,schedule,virtual_stages,recompute,sequence_parallel,"
      "zero_stage,cp,ep,etp,first_stage_layers,last_stage_layers,shard_group,tp_comm_overlap,"
      "overlap_param_gather,overlap_p2p,status,memory_bytes_per_gpu,step_time_s,estimated_step_"
      "time_s,confirmed,mfu,"
      "expected_ettr,checkpoint_interval_s,time_to_train_s,gpu_hours,cost_usd,busy_fraction,"
      "energy_kwh,energy_cost_usd,gpu,reason\n";
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
      out += ",,,,,,,,,,,,";
    } else {
      out += Exact(e.step_time_s) + "," + Exact(e.estimated_step_time_s) + "," +
             (e.confirmed ? "true" : "false") + "," + Exact(e.mfu) + "," + Exact(e.expected_ettr) +
             "," + Exact(e.checkpoint_interval_s) + "," + Exact(e.time_to_train_s) + "," +
             Exact(e.gpu_hours) + "," + Exact(e.cost_usd) + "," + Exact(e.busy_fraction) + "," +
             Exact(e.energy_kwh) + "," + Exact(e.energy_cost_usd) + ",";
    }
    out += CsvField(problems[size_t(e.layout.hardware)].hardware_name) + "," + CsvField(e.reason) +
           "\n";
  }
  return out;
}

}  // namespace trainsim::cli::report
