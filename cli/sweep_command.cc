#include "cli/sweep_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "parallelism/layout.h"
#include "scenarios/run_config.h"
#include "scenarios/step_config.h"
#include "sim/atomic_file.h"
#include "sweep/distributed.h"

namespace trainsim::cli {
namespace {

namespace par = trainsim::parallelism;

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Right-aligned columns.
std::string Col(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string Row(const sweep::Evaluation& e, size_t rank) {
  const par::ParallelConfig& p = e.layout.parallel;
  std::string sched = par::ScheduleName(p.schedule);
  if (p.virtual_stages > 1) sched += "/" + std::to_string(p.virtual_stages);
  std::string s =
      Col(std::to_string(rank), 3) + Col(std::to_string(e.layout.gpus), 8) +
      Col(std::to_string(p.tp), 4) + Col(std::to_string(p.pp), 4) + Col(std::to_string(p.dp), 6) +
      Col(std::to_string(p.micro_batch), 4) + Col(sched, 15) +
      Col(par::RecomputeName(p.recompute), 11) + Col(p.sequence_parallel ? "yes" : "no", 4) +
      Col(std::to_string(p.zero_stage), 5) + Col(Fmt("%.3f", e.step_time_s), 9) +
      Col(Fmt("%.1f%%", 100 * e.mfu), 7) + Col(Fmt("%.1f", e.memory_bytes_per_gpu / 1e9), 7) +
      Col(Fmt("%.2f%%", 100 * e.goodput), 8) + Col(Fmt("%.2f", e.time_to_train_s / 86400), 8) +
      Col(Fmt("%.0f", e.gpu_hours), 10) + Col(Fmt("%.0f", e.cost_usd), 12);
  s += e.confirmed ? "\n" : "  (estimate)\n";
  return s;
}

std::string Header() {
  return Col("#", 3) + Col("GPUs", 8) + Col("TP", 4) + Col("PP", 4) + Col("DP", 6) + Col("mb", 4) +
         Col("schedule", 15) + Col("recompute", 11) + Col("SP", 4) + Col("ZeRO", 5) +
         Col("step s", 9) + Col("MFU", 7) + Col("mem GB", 7) + Col("goodput", 8) + Col("days", 8) +
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
  j["step_time_s"] = e.step_time_s;
  j["estimated_step_time_s"] = e.estimated_step_time_s;
  j["confirmed"] = e.confirmed;
  j["mfu"] = e.mfu;
  j["memory_bytes_per_gpu"] = e.memory_bytes_per_gpu;
  j["goodput"] = e.goodput;
  j["checkpoint_interval_s"] = e.checkpoint_interval_s;
  j["time_to_train_s"] = e.time_to_train_s;
  j["gpu_hours"] = e.gpu_hours;
  j["cost_usd"] = e.cost_usd;
  if (e.trials > 0) {
    j["trials"] = e.trials;
    j["mc_goodput"] = e.mc_goodput;
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

// %.17g: the CSV keeps every double exactly.
std::string Exact(double v) { return Fmt("%.17g", v); }

struct SweepOptions {
  ScenarioOptions scenario;
  std::vector<int> gpus;
  std::string objective = "time";
  int top = 10;
  std::string csv;
  double tokens = 0;
  bool tp_across_nodes = false;
  std::vector<int> micro_batches;
  int64_t trials = 0;
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
  Result<sweep::Objective> objective = sweep::ParseObjective(opts.objective);
  if (!objective.ok()) return fail(objective.status().WithPrefix("--objective"));
  if (opts.top < 1) return fail(Status::InvalidArgument("--top must be >= 1"));
  Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts.scenario);
  if (!resolved.ok()) return fail(resolved.status());
  Result<sweep::SweepProblem> problem = MakeSweepProblem(*resolved, opts.gpus, opts.tokens);
  if (!problem.ok()) return fail(problem.status());
  problem->tp_across_nodes = opts.tp_across_nodes;
  if (!opts.micro_batches.empty()) problem->micro_batches = opts.micro_batches;

  sweep::SweepOptions so;
  so.objective = *objective;
  so.top_k = opts.top;
  so.progress = true;  // drawn only on a terminal outside CI (sim::ProgressBar)
  if (opts.trials < 0) return fail(Status::InvalidArgument("--trials must be >= 0"));
  so.trials = opts.trials;
  problem->step_time_fn = [](const step::StepConfig& c) { return scenarios::MakeStepTimeFn(c); };
  Result<sweep::SweepResult> result = sweep::RunSweep(*problem, so, comm);
  if (!result.ok()) return fail(result.status());
  if (!root) return kExitOk;

  if (!opts.csv.empty()) {
    Status s = sim::WriteFileAtomically(opts.csv, FormatSweepCsv(*result));
    if (!s.ok()) return ReportError(s.WithPrefix("--csv " + opts.csv));
  }
  if (opts.scenario.json) {
    std::cout << FormatSweepJson(*result, *objective);
  } else {
    std::string counts;
    for (int n : problem->gpu_counts) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    const std::string title =
        resolved->scenario.model().name() + " on " + counts + " " + resolved->gpu.name() + " GPUs";
    std::cout << FormatSweepTable(*problem, *result, *objective, title);
  }
  return kExitOk;
}

}  // namespace

Result<sweep::SweepProblem> MakeSweepProblem(const scenarios::ResolvedScenario& r,
                                             const std::vector<int>& gpus, double tokens) {
  sweep::SweepProblem p;
  Result<step::StepConfig> step = scenarios::MakeStepConfig(r);
  if (!step.ok()) return step.status();
  Result<checkpoint::RunConfig> run = scenarios::MakeRunConfig(r);
  if (!run.ok()) return run.status();
  p.base = *step;
  p.run = *run;
  p.parameters = r.params;
  p.gpu_counts = gpus.empty() ? std::vector<int>{r.num_gpus} : gpus;
  if (tokens > 0) {
    p.token_budget = tokens;
  } else if (r.total_tokens) {
    p.token_budget = double(*r.total_tokens);
  } else if (r.total_steps) {
    p.token_budget = double(*r.total_steps) * double(r.tokens_per_step);
  } else {
    return Status::InvalidArgument(
        "training.duration sets no token budget to compare layouts on: pass --tokens N (e.g. "
        "--tokens 300e9) or set training.tokens");
  }
  if (!std::isfinite(p.token_budget)) {
    return Status::InvalidArgument("--tokens must be a finite positive number");
  }
  return p;
}

std::string FormatSweepTable(const sweep::SweepProblem& problem, const sweep::SweepResult& result,
                             sweep::Objective objective, const std::string& title) {
  std::string out = "sweep: " + title + "\n";
  out += "  " + std::to_string(result.evaluations.size()) +
         " layouts: " + std::to_string(result.evaluated) + " evaluated, " +
         std::to_string(result.rejected) + " rejected (invalid or over memory), " +
         std::to_string(result.confirmed) + " confirmed by the step simulation\n";
  out += "  token budget " + Fmt("%.4g", problem.token_budget) + ", price " +
         Fmt("%.2f", problem.run.usd_per_gpu_hour) +
         " USD per GPU-hour; goodput = Daly's expected useful fraction at the optimal "
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
      out += Col(std::to_string(k++), 3) + "  " + std::to_string(e.trials) + " trials: goodput " +
             Fmt("%.2f%%", 100 * e.mc_goodput) + ", " +
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
      "zero_stage,status,memory_bytes_per_gpu,step_time_s,estimated_step_time_s,confirmed,mfu,"
      "goodput,checkpoint_interval_s,time_to_train_s,gpu_hours,cost_usd,reason\n";
  for (const sweep::Evaluation& e : result.evaluations) {
    const par::ParallelConfig& p = e.layout.parallel;
    out += std::to_string(e.index) + "," + std::to_string(e.layout.gpus) + "," +
           std::to_string(p.tp) + "," + std::to_string(p.pp) + "," + std::to_string(p.dp) + "," +
           std::to_string(p.micro_batch) + "," + par::ScheduleName(p.schedule) + "," +
           std::to_string(p.virtual_stages) + "," + par::RecomputeName(p.recompute) + "," +
           (p.sequence_parallel ? "true" : "false") + "," + std::to_string(p.zero_stage) + "," +
           (e.rejected ? "rejected" : "evaluated") + "," + Exact(e.memory_bytes_per_gpu) + ",";
    if (e.rejected) {
      out += ",,,,,,,,,";
    } else {
      out += Exact(e.step_time_s) + "," + Exact(e.estimated_step_time_s) + "," +
             (e.confirmed ? "true" : "false") + "," + Exact(e.mfu) + "," + Exact(e.goodput) + "," +
             Exact(e.checkpoint_interval_s) + "," + Exact(e.time_to_train_s) + "," +
             Exact(e.gpu_hours) + "," + Exact(e.cost_usd) + ",";
    }
    out += CsvField(e.reason) + "\n";
  }
  return out;
}

void AddSweepCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Every valid parallel layout (TP, PP, DP, micro-batch, schedule, recompute, SP, ZeRO) of "
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
  cmd->add_option("--trials", opts->trials,
                  "Monte Carlo trials of the run simulation (failures, checkpoints at Daly's "
                  "interval) for each of the top layouts; split across MPI ranks (default 0)");
  cmd->callback([opts, exit_code] { *exit_code = RunSweepCommand(*opts); });
}

}  // namespace trainsim::cli
