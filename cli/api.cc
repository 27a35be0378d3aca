// cli/api.cc — the commands' work and --json documents (cli/api.h), moved out of the command
// callbacks unchanged so the Python module calls the same code.
#include "cli/api.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "cli/report/check_report.h"
#include "cli/report/collective_report.h"
#include "cli/report/format.h"
#include "cli/report/run_report.h"
#include "cli/report/step_report.h"
#include "cli/report/sweep_report.h"
#include "cli/report/whatif_report.h"
#include "comm/message_size.h"
#include "run/monte_carlo.h"
#include "scenarios/run_config.h"
#include "sim/parallel.h"

namespace trainsim::cli {

std::string ElideLongNumbers(const std::string& msg) {
  constexpr size_t kMax = 32, kKeep = 20;
  std::string out;
  size_t i = 0;
  while (i < msg.size()) {
    if (msg[i] < '0' || msg[i] > '9') {
      out += msg[i++];
      continue;
    }
    size_t j = i;
    while (j < msg.size() && msg[j] >= '0' && msg[j] <= '9') ++j;
    if (j - i > kMax) {
      out.append(msg, i, kKeep);
      out += "...(" + std::to_string(j - i) + " digits)";
    } else {
      out.append(msg, i, j - i);
    }
    i = j;
  }
  return out;
}

namespace api {

std::string ErrorMessage(const Status& status) { return ElideLongNumbers(status.message()); }

Result<scenarios::ResolvedScenario> Load(const ScenarioInput& input) {
  Result<pb::Scenario> scenario =
      input.path.empty() ? scenarios::ParseScenarioText(input.text, input.name, input.sets)
                         : scenarios::LoadScenario(input.path, input.sets);
  if (!scenario.ok()) return scenario.status();
  return scenarios::Resolve(*scenario);
}

Result<std::string> CheckDocument(const ScenarioInput& input) {
  Result<scenarios::ResolvedScenario> resolved = Load(input);
  if (!resolved.ok()) return resolved.status();
  return report::FormatCheckJson(*resolved);
}

scenarios::RunRequest RunRequestOf(const RunOptions& options) {
  scenarios::RunRequest request;
  request.seed = options.seed;
  request.trials = options.trials;
  request.optimize_interval = options.optimize_interval;
  request.progress = options.progress;
  request.keep_log = options.keep_log || options.events;
  // An out-of-range count is refused by Run (and by the option's own check) before this is used.
  Result<int> threads = sim::ResolveThreads(options.threads);
  request.threads = threads.ok() ? threads.value() : 1;
  return request;
}

Result<RunOutcome> Run(scenarios::ResolvedScenario resolved, const RunOptions& options) {
  if (Result<int> t = sim::ResolveThreads(options.threads); !t.ok()) return t.status();
  scenarios::StepRequest step_request;
  step_request.allow_oom = options.allow_oom;
  step_request.report_gpu = options.gpu;
  step_request.calibration_path = options.calibration;
  step_request.record_trace = options.record_trace;
  step_request.trace_microbatches = options.trace_microbatches;
  Result<scenarios::StepOutcome> step = scenarios::SimulateScenarioStep(resolved, step_request);
  if (!step.ok()) return step.status();
  scenarios::RunRequest run_request = RunRequestOf(options);
  // The run's healthy step is the one just simulated (the trace, when recorded, changes no
  // number; it is left out anyway so the run sees exactly an untraced simulation).
  if (!options.record_trace) run_request.healthy_step = step->result.breakdown;
  Result<scenarios::RunOutcome> run =
      scenarios::SimulateScenarioRun(resolved, step->config, run_request);
  if (!run.ok()) return run.status();
  return RunOutcome{std::move(resolved), std::move(*step), std::move(*run)};
}

Result<RunOutcome> Run(const ScenarioInput& input, const RunOptions& options) {
  Result<scenarios::ResolvedScenario> resolved = Load(input);
  if (!resolved.ok()) return resolved.status();
  return Run(std::move(*resolved), options);
}

std::string RunDocument(const RunOutcome& outcome, bool events) {
  nlohmann::json doc = report::StepJsonDocument(outcome.resolved, outcome.step.config,
                                                outcome.step.result, outcome.step.faulted);
  report::AddRunJson(outcome.run, events, doc);
  return doc.dump(2) + "\n";
}

Result<WhatIfOutcome> WhatIf(const ScenarioInput& input, const WhatIfOptions& options) {
  Result<scenarios::ResolvedScenario> resolved = Load(input);
  if (!resolved.ok()) return resolved.status();
  Result<std::vector<run::ScheduledFault>> added =
      scenarios::ParseAddedFaults(*resolved, options.fail, options.slow);
  if (!added.ok()) return added.status();
  Result<int> threads = sim::ResolveThreads(options.threads);
  if (!threads.ok()) return threads.status();
  const auto& fm = resolved->scenario.failures();
  // 100 histories: p99 is then interpolated between the two largest deltas (sim/stats.h).
  const int64_t trials =
      options.trials >= 0 ? options.trials : (fm.enabled() && fm.node_day_rate() > 0 ? 100 : 0);
  Result<scenarios::WhatIfOutcome> whatif =
      scenarios::SimulateScenarioWhatIf(*resolved, *added, options.trial, trials, *threads);
  if (!whatif.ok()) return whatif.status();
  return WhatIfOutcome{std::move(*resolved), std::move(*added), std::move(*whatif), trials};
}

std::string WhatIfDocument(const WhatIfOutcome& outcome, const WhatIfOptions& options) {
  return report::WhatIfJson(outcome.added, outcome.whatif, options.trial, outcome.trials,
                            options.events)
             .dump(2) +
         "\n";
}

namespace {

// The sweep's own options, checked against the problem (after the scenario has loaded).
Status ApplySweepOptions(const SweepOptions& opts, sweep::SweepProblem& problem) {
  problem.tp_across_nodes = opts.tp_across_nodes;
  if (!opts.micro_batches.empty()) problem.micro_batches = opts.micro_batches;
  for (const auto& [name, list] :
       {std::pair{"--cp", &opts.cp}, std::pair{"--ep", &opts.ep}, std::pair{"--etp", &opts.etp}}) {
    for (int d : *list) {
      if (d < 1) return Status::InvalidArgument(std::string(name) + " degrees must be >= 1");
    }
  }
  for (int z : opts.zero) {
    if (z < 0 || z > 3) return Status::InvalidArgument("--zero stages are 0, 1, 2 or 3");
  }
  if ((!opts.ep.empty() || !opts.etp.empty()) && !problem.base.model.moe.enabled()) {
    return Status::InvalidArgument(
        "--ep/--etp need a mixture-of-experts model (model.moe.experts > 0)");
  }
  problem.cp_degrees = opts.cp;
  problem.ep_degrees = opts.ep;
  problem.etp_degrees = opts.etp;
  if (!opts.zero.empty()) {
    problem.zero_stages = opts.zero;
    problem.zero2_with_pp = true;  // asked for by name
  }
  // A value given twice ("--zero 1,1") is one value: each layout is enumerated once, as --gpus
  // and --cp repeat none.
  for (std::vector<int>* list : {&problem.micro_batches, &problem.zero_stages}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  problem.uneven_pipelines = !opts.no_uneven;
  problem.modern_overlaps = !opts.no_overlaps;
  return Status();
}

}  // namespace

// The most Monte Carlo trials per layout: run's --trials cap (cli/run_command.cc), 100x the
// trials that resolve a p99 to about 1 % (10^4), and about 0.3 GB of outcomes (below).
constexpr int64_t kMaxSweepTrials = 1000000;
// Memory a trial holds until its layout is summarised: its outcome, the copy gathered to rank 0,
// and one double per summarised quantity (sim::Summarize sorts a copy of each).
constexpr double kBytesPerTrial = 2.0 * sizeof(run::TrialOutcome) + 6.0 * sizeof(double);
// --tokens: the range training.tokens accepts (scenarios/validate.cc: 1 to 2^60, far beyond the
// largest published pretraining budgets of ~4e13 tokens).
constexpr double kMaxSweepTokens = 1152921504606846976.0;  // 2^60

Status CheckSweepOptions(const SweepOptions& opts) {
  Result<sweep::Objective> objective = sweep::ParseObjective(opts.objective);
  if (!objective.ok()) return objective.status().WithPrefix("--objective");
  if (opts.top < 1) return Status::InvalidArgument("--top must be >= 1");
  if (opts.trials < 0 || opts.trials > kMaxSweepTrials) {
    std::string msg = "--trials " + std::to_string(opts.trials) + ": must be between 0 and " +
                      std::to_string(kMaxSweepTrials);
    if (opts.trials > kMaxSweepTrials) {
      msg += " (each trial keeps about " + std::to_string(static_cast<int>(kBytesPerTrial)) +
             " bytes until its layout is summarised: " + std::to_string(opts.trials) +
             " trials would need about " +
             report::Gigabytes(kBytesPerTrial * static_cast<double>(opts.trials)) + ")";
    }
    return Status::InvalidArgument(msg);
  }
  // 0 (the default) takes the scenario's budget; anything else must be a real token count.
  if (opts.tokens != 0 &&
      !(std::isfinite(opts.tokens) && opts.tokens >= 1 && opts.tokens <= kMaxSweepTokens)) {
    std::ostringstream v;
    v << opts.tokens;
    return Status::InvalidArgument("--tokens " + v.str() +
                                   ": must be a token count between 1 and 2^60 "
                                   "(1152921504606846976), or 0 for the scenario's budget");
  }
  return Status::Ok();
}

std::vector<std::vector<std::string>> SweepHardwareSets(const std::vector<std::string>& sets,
                                                        const SweepOptions& opts) {
  std::vector<std::vector<std::string>> out;
  const std::vector<std::string> gpus =
      opts.gpu_types.empty() ? std::vector<std::string>{""} : opts.gpu_types;
  for (const std::string& gpu : gpus) {
    std::vector<std::string> s = sets;
    if (!gpu.empty()) {
      s.push_back("cluster.gpu=" + gpu);
      s.push_back("cluster.node_type=");  // the GPU's own node type (the catalogue's first)
    }
    if (!opts.memory_headroom.empty())
      s.push_back("cluster.memory_headroom=" + opts.memory_headroom);
    out.push_back(std::move(s));
  }
  return out;
}

Result<SweepPlan> PlanSweep(const std::vector<scenarios::ResolvedScenario>& resolved,
                            const SweepOptions& opts) {
  Result<sweep::Objective> objective = sweep::ParseObjective(opts.objective);
  if (!objective.ok()) return objective.status().WithPrefix("--objective");
  Result<std::pair<sweep::Objective, sweep::Objective>> pareto =
      sweep::ParseParetoAxes(opts.pareto);
  if (!pareto.ok()) return pareto.status().WithPrefix("--pareto");
  Result<int> threads = sim::ResolveThreads(opts.threads, "--threads");
  if (!threads.ok()) return threads.status();
  SweepPlan plan;
  for (size_t h = 0; h < resolved.size(); ++h) {
    const std::string gpu = resolved[h].gpu.name();
    for (size_t k = 0; k < h; ++k) {
      if (resolved[k].gpu.name() == gpu) {
        return Status::InvalidArgument("--gpu names " + gpu + " twice (as " + opts.gpu_types[k] +
                                       " and " + opts.gpu_types[h] + ")");
      }
    }
    Result<sweep::SweepProblem> problem =
        scenarios::MakeSweepProblem(resolved[h], opts.gpus, opts.tokens);
    if (!problem.ok()) {
      return resolved.size() > 1 ? problem.status().WithPrefix("--gpu " + gpu) : problem.status();
    }
    TRAINSIM_RETURN_IF_ERROR(ApplySweepOptions(opts, *problem));
    problem->step_time_fn = [](const step::StepConfig& c) { return scenarios::MakeStepTimeFn(c); };
    problem->hardware = int(h);
    plan.problems.push_back(std::move(*problem));
  }
  plan.options.objective = *objective;
  plan.options.pareto = *pareto;
  plan.options.top_k = opts.top;
  plan.options.progress = opts.progress;  // drawn only on a terminal outside CI
  plan.options.trials = opts.trials;
  plan.options.threads = *threads;
  return plan;
}

Result<SweepOutcome> Sweep(const ScenarioInput& input, const SweepOptions& opts,
                           sweep::Communicator* comm) {
  TRAINSIM_RETURN_IF_ERROR(CheckSweepOptions(opts));
  std::vector<scenarios::ResolvedScenario> resolved;
  for (const std::vector<std::string>& sets : SweepHardwareSets(input.sets, opts)) {
    ScenarioInput one = input;
    one.sets = sets;
    Result<scenarios::ResolvedScenario> r = Load(one);
    if (!r.ok()) return r.status();
    resolved.push_back(std::move(*r));
  }
  Result<SweepPlan> plan = PlanSweep(resolved, opts);
  if (!plan.ok()) return plan.status();
  Result<sweep::SweepResult> result = sweep::RunSweeps(plan->problems, plan->options, comm);
  if (!result.ok()) return result.status();
  return SweepOutcome{std::move(resolved.front()), std::move(plan->problems), std::move(*result),
                      plan->options, input.path.empty() ? input.name : input.path};
}

std::string SweepDocument(const SweepOutcome& outcome) {
  return report::FormatSweepJson(outcome.scenario, outcome.resolved.scenario.model().name(),
                                 outcome.problems, outcome.options, outcome.result);
}

Result<CollectiveOutcome> Collective(const ScenarioInput& input, const CollectiveOptions& opts) {
  Result<comm::Op> op = comm::ParseOp(opts.op);
  if (!op.ok()) return op.status().WithPrefix("--op");
  Result<comm::Algo> algo = comm::ParseAlgo(opts.algo);
  if (!algo.ok()) return algo.status().WithPrefix("--algo");
  if (opts.step_factor < 2) {
    return Status::InvalidArgument("--step-factor must be an integer >= 2");
  }
  Result<std::vector<uint64_t>> sizes =
      comm::ParseSizeRange(opts.sizes, static_cast<uint64_t>(opts.step_factor));
  if (!sizes.ok()) return sizes.status().WithPrefix("--sizes");
  Result<scenarios::ResolvedScenario> resolved = Load(input);
  if (!resolved.ok()) return resolved.status();
  scenarios::CollectiveRequest request;
  request.op = *op;
  request.algo = *algo;
  request.sizes = std::move(*sizes);
  request.group = opts.group;
  request.expand = opts.expand;
  request.calibration_path = opts.calibration;
  request.nccl_tests_counts = opts.nccl_tests_counts;
  Result<scenarios::CollectiveOutcome> outcome =
      scenarios::TimeScenarioCollective(*resolved, request);
  if (!outcome.ok()) return outcome.status();
  return CollectiveOutcome{std::move(*resolved), *op, std::move(*outcome), std::move(request)};
}

std::string CollectiveDocument(const CollectiveOutcome& outcome) {
  return report::CollectiveJson(outcome.op, outcome.outcome).dump(2) + "\n";
}

}  // namespace api
}  // namespace trainsim::cli
