#include "scenarios/session.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <utility>

#include "comm/flow_network.h"
#include "comm/topology.h"
#include "parallelism/compute.h"
#include "scenarios/run_config.h"
#include "scenarios/step_config.h"
#include "sim/engine.h"
#include "sim/progress.h"
#include "sim/time.h"
#include "step/pass_costs.h"
#include "step/priced_ops.h"

namespace trainsim::scenarios {

Result<std::optional<comm::Calibration>> LoadScenarioCalibration(const ResolvedScenario& resolved,
                                                                 const std::string& flag_path) {
  const std::string& path =
      flag_path.empty() ? resolved.scenario.cluster().calibration() : flag_path;
  if (path.empty()) return std::optional<comm::Calibration>();
  auto c = comm::LoadCalibrationFor(path, resolved.gpu.name());
  if (!c.ok()) return c.status();
  return std::optional<comm::Calibration>(std::move(*c));
}

namespace {

// The scenario's calibration (or `flag_path`'s) on a step config, so that every command prices a
// step the same way: run, whatif, and the sweep's estimates and confirmations.
Status AttachCalibration(const ResolvedScenario& resolved, const std::string& flag_path,
                         step::StepConfig* config) {
  Result<std::optional<comm::Calibration>> calibration =
      LoadScenarioCalibration(resolved, flag_path);
  if (!calibration.ok()) return calibration.status();
  if (calibration->has_value()) {
    config->calibration = std::make_shared<const comm::Calibration>(std::move(**calibration));
  }
  return Status::Ok();
}

}  // namespace

Result<StepOutcome> SimulateScenarioStep(const ResolvedScenario& resolved,
                                         const StepRequest& request) {
  Result<step::StepConfig> config = MakeStepConfig(resolved);
  if (!config.ok()) return config.status();
  StepOutcome out;
  out.config = std::move(config.value());
  out.config.allow_oom = request.allow_oom;
  out.config.report_gpu = request.report_gpu;
  TRAINSIM_RETURN_IF_ERROR(AttachCalibration(resolved, request.calibration_path, &out.config));
  step::SimulateOptions options;
  options.record_trace = request.record_trace;
  options.trace_microbatches = request.trace_microbatches;
  Result<step::StepResult> result = step::SimulateStep(out.config, {}, options);
  if (!result.ok()) return result.status();
  out.result = std::move(result.value());
  const step::ClusterState state = MakeFaultedClusterState(resolved);
  if (!state.gpu_slowdown.empty() || !state.links.empty()) {
    Result<step::StepResult> f = step::SimulateStep(out.config, state);
    if (!f.ok()) return f.status();
    out.faulted = std::move(f.value());
  }
  return out;
}

namespace {

// Monte Carlo over trials [0, trials), trial by trial so the bar moves (RunTrials(k, k + 1) is
// trial k exactly as in one call).
Result<run::MonteCarloSummary> RunTrialsWithProgress(const run::RunConfig& config,
                                                     run::StepTimeCache& cache, int64_t trials,
                                                     bool progress, int threads) {
  sim::ProgressBar::Options bar_options;
  bar_options.enabled = progress && sim::ProgressBar::ShouldShowOnStderr();
  sim::ProgressBar bar("trials", static_cast<uint64_t>(trials), bar_options);
  std::vector<run::TrialOutcome> outcomes;
  outcomes.reserve(static_cast<size_t>(trials));
  // At least one trial per thread per call, or a short study (under 100 trials per thread)
  // would run one trial at a time; the outcomes do not depend on the chunking.
  const int64_t chunk = std::max<int64_t>(std::max(1, threads), trials / 100);
  for (int64_t k = 0; k < trials; k += chunk) {
    const int64_t end = std::min(trials, k + chunk);
    Result<std::vector<run::TrialOutcome>> r = run::RunTrials(config, cache, k, end, threads);
    if (!r.ok()) return r.status();
    outcomes.insert(outcomes.end(), r->begin(), r->end());
    bar.Add(static_cast<uint64_t>(end - k));
  }
  bar.Finish();
  return run::Summarize(std::move(outcomes));
}

}  // namespace

Result<RunOutcome> SimulateScenarioRun(const ResolvedScenario& resolved,
                                       const step::StepConfig& step, const RunRequest& request) {
  Result<run::RunConfig> config = MakeRunConfig(resolved);
  if (!config.ok()) return config.status();
  if (request.seed) config->seed = *request.seed;
  if (request.trials < 0) return Status::InvalidArgument("--trials must be at least 1");
  run::StepTimeCache cache(MakeStepTimeFn(step, request.healthy_step));
  RunOutcome out;
  out.config = config.value();
  out.config.record_events = request.keep_log;
  Result<run::RunReport> report = run::SimulateRun(out.config, cache, 0);
  if (!report.ok()) return report.status();
  out.run = std::move(report.value());
  if (request.trials > 0) {
    Result<run::MonteCarloSummary> stats =
        RunTrialsWithProgress(out.config, cache, request.trials, request.progress, request.threads);
    if (!stats.ok()) return stats.status();
    out.stats = std::move(stats.value());
  }
  if (request.optimize_interval) {
    out.scan_trials = request.trials > 0 ? request.trials : request.default_scan_trials;
    Result<run::IntervalOptimum> opt =
        run::OptimizeCheckpointInterval(out.config, cache, out.scan_trials, {}, request.threads);
    if (!opt.ok()) return opt.status().WithPrefix("--optimize-checkpoint-interval");
    out.optimum = std::move(opt.value());
  }
  return out;
}

namespace {

// One --fail or --slow spec as a validated scheduled fault.
Result<run::ScheduledFault> ParseAddedFault(const ResolvedScenario& r, const std::string& spec,
                                            const std::string& flag) {
  // The forms this option takes (a failure for --fail, a slowdown for --slow).
  Result<pb::Fault> f = ParseFaultSpec(
      spec, flag == "--slow"
                ? "expected gpu:IDxFACTOR@TIME+DURATION (e.g. gpu:5x1.3@1h+4h) or "
                  "link:IDxFRACTION_LOST@TIME+DURATION (e.g. link:5x0.5@2h+30m)"
                : "expected KIND:ID@TIME, e.g. gpu:37@16h, node:3@2d, nic:12@1h, link:5@2h, "
                  "hang:9@3h, sdc:5@16h, software@3h (slowdowns go to --slow)");
  if (!f.ok()) return f.status().WithPrefix(flag);
  // --fail takes failures: "gpu:5x2@1h" (a slowdown factor) or a partly degraded link belongs to
  // --slow, and used to become a straggler silently.
  if (flag == "--fail" &&
      (f->kind() == pb::Fault::STRAGGLER ||
       (f->kind() == pb::Fault::LINK && f->has_degrade() && f->degrade() < 1))) {
    return Status::InvalidArgument(
        "--fail " + spec +
        ": is a slowdown, not a failure; give it with --slow (gpu:IDxFACTOR@TIME+DURATION or "
        "link:IDxFRACTION_LOST@TIME+DURATION), or drop the 'x' factor for a failure");
  }
  if (flag == "--slow" && f->kind() == pb::Fault::LINK && f->has_degrade() && !(f->degrade() < 1)) {
    return Status::InvalidArgument(
        "--slow " + spec +
        ": a link's x is the fraction of its bandwidth lost, in (0, 1) (0.5 = half); a link "
        "that loses all of it is a failure: give link:ID@TIME with --fail");
  }
  if (flag == "--slow" && f->kind() != pb::Fault::STRAGGLER &&
      !(f->kind() == pb::Fault::LINK && f->has_degrade() && f->degrade() < 1)) {
    return Status::InvalidArgument(
        "--slow " + spec +
        ": expected a slowdown, gpu:IDxFACTOR@TIME+DURATION (e.g. gpu:5x1.3@1h+4h) or a "
        "degraded link, link:IDxFRACTION_LOST@TIME+DURATION");
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateFault(f.value(), r, flag + " " + spec));
  ResolvedFault rf;
  rf.fault = f.value();
  Result<sim::Time> at = sim::ParseDuration(f->at());
  if (!at.ok()) return at.status().WithPrefix(flag + " " + spec);
  rf.at = at.value();
  if (!f->duration().empty()) {
    Result<sim::Time> d = sim::ParseDuration(f->duration());
    if (!d.ok()) return d.status().WithPrefix(flag + " " + spec);
    rf.duration = d.value();
  }
  Result<run::ScheduledFault> sf = MakeScheduledFault(rf);
  if (!sf.ok()) return sf.status().WithPrefix(flag + " " + spec);
  return sf;
}

}  // namespace

Result<std::vector<run::ScheduledFault>> ParseAddedFaults(const ResolvedScenario& resolved,
                                                          const std::vector<std::string>& fail,
                                                          const std::vector<std::string>& slow) {
  std::vector<run::ScheduledFault> out;
  for (const auto& [specs, flag] : {std::pair{&fail, "--fail"}, std::pair{&slow, "--slow"}}) {
    for (const std::string& spec : *specs) {
      Result<run::ScheduledFault> f = ParseAddedFault(resolved, spec, flag);
      if (!f.ok()) return f.status();
      out.push_back(f.value());
    }
  }
  if (out.empty()) {
    return Status::InvalidArgument(
        "whatif needs at least one --fail (e.g. --fail gpu:37@16h) or --slow (e.g. --slow "
        "gpu:5x1.3@1h+4h)");
  }
  return out;
}

Result<WhatIfOutcome> SimulateScenarioWhatIf(const ResolvedScenario& resolved,
                                             const std::vector<run::ScheduledFault>& added,
                                             int64_t trial, int64_t trials, int threads) {
  Result<run::RunConfig> config = MakeRunConfig(resolved);
  if (!config.ok()) return config.status();
  Result<step::StepConfig> step = MakeStepConfig(resolved);
  if (!step.ok()) return step.status();
  TRAINSIM_RETURN_IF_ERROR(AttachCalibration(resolved, "", &step.value()));
  run::StepTimeCache cache(MakeStepTimeFn(step.value()));
  Result<run::WhatIfReport> w = run::SimulateWhatIf(config.value(), added, cache, trial);
  if (!w.ok()) return w.status();
  WhatIfOutcome out;
  out.report = std::move(w.value());
  // Monte Carlo over failure histories: the same comparison for trials [0, N).
  Result<run::WhatIfSamples> samples =
      run::SimulateWhatIfTrials(config.value(), added, cache, trials, threads);
  if (!samples.ok()) return samples.status();
  out.delta_wall_time_s = run::StatOf(samples->delta_wall_time_s);
  out.delta_cost_usd = run::StatOf(samples->delta_cost_usd);
  out.delta_lost_work_s = run::StatOf(samples->delta_lost_work_s);
  out.delta_downtime_s = run::StatOf(samples->delta_downtime_s);
  out.delta_wall_time_samples_s = std::move(samples->delta_wall_time_s);
  out.delta_cost_samples_usd = std::move(samples->delta_cost_usd);
  return out;
}

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

}  // namespace

Result<std::vector<int>> ParseGpuGroup(std::string_view text, int num_gpus) {
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
  if (*n < 2) {
    // NCCL with one rank only copies the buffer on the GPU (or does nothing in place): there
    // is no transfer to time, and busbw's factor is 0.
    return Status::InvalidArgument("--group " + std::string(text) +
                                   ": a collective needs at least 2 GPUs (over one GPU nothing "
                                   "crosses a link); give --group 2 or more");
  }
  if (stride < 1) {
    return Status::InvalidArgument("--group " + std::string(text) +
                                   ": the stride after '/' must be 1 or more");
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

namespace {

// One size: the closed form (or the calibration's measured curve), or with `expand` the
// flow-level expansion on the event engine (a measured time stands as is).
Result<CollectiveRow> TimeOneSize(const comm::Topology& topology, comm::CollectiveSpec spec,
                                  const comm::Calibration* cal, bool expand) {
  CollectiveRow row;
  row.bytes = spec.bytes;
  Result<comm::CollectiveTiming> est = comm::EstimateCollectiveCalibrated(topology, spec, cal);
  if (!est.ok()) return est.status();
  row.estimate = *est;
  row.time_s = est->time.seconds();
  if (expand && !est->calibrated) {
    sim::Engine engine;
    comm::FlowNetwork network(&engine, &topology);
    sim::Time done = sim::Time::Max();
    Result<comm::CollectiveEstimate> ran =
        comm::RunCollective(&network, spec, [&] { done = engine.now(); });
    if (!ran.ok()) return ran.status();
    engine.Run();
    row.time_s = done.seconds();
  }
  const int n = static_cast<int>(spec.gpus.size());
  row.algbw_GBps = row.time_s > 0 ? static_cast<double>(spec.bytes) / row.time_s / 1e9 : 0;
  row.busbw_GBps = row.algbw_GBps * comm::BusBandwidthFactor(spec.op, n);
  return row;
}

}  // namespace

uint64_t NcclTestsBytes(comm::Op op, uint64_t bytes, int ranks) {
  constexpr uint64_t kFloatBytes = 4;  // nccl-tests' default type, -d float
  // nccl-tests (src/all_gather.cu, reduce_scatter.cu, alltoall.cu: (count / nranks) &
  // -(16 / eltSize)) gives each rank a whole number of 16-byte vectors of the split buffer.
  constexpr uint64_t kSplitAlignBytes = 16;
  const bool split =
      op == comm::Op::kAllGather || op == comm::Op::kReduceScatter || op == comm::Op::kAllToAll;
  const uint64_t unit = split ? kSplitAlignBytes * uint64_t(std::max(1, ranks)) : kFloatBytes;
  return bytes / unit * unit;
}

Result<CollectiveOutcome> TimeScenarioCollective(const ResolvedScenario& resolved,
                                                 const CollectiveRequest& request) {
  CollectiveOutcome out;
  Result<std::optional<comm::Calibration>> calibration =
      LoadScenarioCalibration(resolved, request.calibration_path);
  if (!calibration.ok()) return calibration.status();
  out.calibration = std::move(calibration.value());
  const comm::Calibration* cal = out.calibration ? &*out.calibration : nullptr;
  Result<comm::Topology> topology = comm::Topology::Build(MakeTopologySpec(resolved));
  if (!topology.ok()) return topology.status().WithPrefix("cluster");
  out.num_gpus = topology->num_gpus();
  out.num_nodes = topology->num_nodes();
  out.gpus_per_node = topology->gpus_per_node();
  std::string group_text = request.group;
  if (group_text.empty()) {
    group_text = request.op == comm::Op::kSendRecv ? "2" : std::to_string(out.num_gpus);
  }
  Result<std::vector<int>> gpus = ParseGpuGroup(group_text, out.num_gpus);
  if (!gpus.ok()) return gpus.status();
  if (gpus->size() < 2) {
    // NCCL with one rank only copies the buffer on the GPU (or does nothing in place): there
    // is no transfer to time, and busbw's factor is 0.
    return Status::InvalidArgument("--group " + group_text +
                                   ": a collective needs at least 2 GPUs (over one GPU nothing "
                                   "crosses a link); give --group 2 or more");
  }
  out.group_size = static_cast<int>(gpus->size());
  std::vector<uint64_t> sizes;
  for (uint64_t bytes : request.sizes) {
    if (request.nccl_tests_counts) bytes = NcclTestsBytes(request.op, bytes, out.group_size);
    if (bytes > 0) {
      sizes.push_back(bytes);
    } else {
      ++out.sizes_left_out;
    }
  }
  if (sizes.empty()) {
    return Status::InvalidArgument(
        "--sizes: every size is under one 4-byte float (16 bytes per rank for all_gather, "
        "reduce_scatter and all_to_all), which nccl-tests does not move: give larger sizes");
  }
  // nccl-tests' size is each GPU's buffer (the output of all_gather, the input of
  // reduce_scatter): it must fit in the GPU's memory.
  const uint64_t hbm = resolved.gpu.hbm_bytes();
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  if (hbm > 0 && largest > hbm) {
    return Status::InvalidArgument(
        "--sizes: " + std::to_string(largest) + " bytes is larger than the " + resolved.gpu.name() +
        "'s " + std::to_string(hbm) +
        " bytes of memory, where each GPU's buffer of the collective lives; give sizes up to it");
  }
  comm::CollectiveSpec spec{request.op, request.algo, *gpus, sizes.front()};
  TRAINSIM_RETURN_IF_ERROR(comm::ValidateCollective(*topology, spec));
  for (uint64_t bytes : sizes) {
    spec.bytes = bytes;
    Result<CollectiveRow> row = TimeOneSize(*topology, spec, cal, request.expand);
    if (!row.ok()) return row.status();
    out.rows.push_back(std::move(row.value()));
  }
  return out;
}

Result<sweep::SweepProblem> MakeSweepProblem(const ResolvedScenario& r,
                                             const std::vector<int>& gpus, double tokens) {
  sweep::SweepProblem p;
  Result<step::StepConfig> step = MakeStepConfig(r);
  if (!step.ok()) return step.status();
  TRAINSIM_RETURN_IF_ERROR(AttachCalibration(r, "", &step.value()));
  Result<run::RunConfig> run = MakeRunConfig(r);
  if (!run.ok()) return run.status();
  p.base = *step;
  p.run = *run;
  p.parameters = r.params;
  // A sweep recommends layouts, so unless the scenario says otherwise it keeps 5% of HBM free
  // (4.3 GB on an 80 GiB H100) for what the memory model leaves out: the caching allocator's
  // fragmentation, NCCL buffers beyond the 2 GB framework allowance, CUDA graphs' pools
  // (docs/memory.md gives the sources).
  constexpr double kSweepHeadroomFraction = 0.05;
  Result<double> headroom = MemoryHeadroomBytes(r.scenario.cluster().memory_headroom(),
                                                p.base.gpu.memory_bytes, kSweepHeadroomFraction);
  if (!headroom.ok()) return headroom.status();
  p.base.memory.headroom_bytes = *headroom;
  p.energy.tdp_watts = r.gpu.tdp_watts();
  p.energy.idle_fraction = r.scenario.cost().gpu_idle_fraction();
  p.energy.pue = r.scenario.cost().pue();
  p.energy.usd_per_kwh = r.scenario.cost().usd_per_kwh();
  p.hardware_name = r.gpu.name();
  p.node_name = r.node.name();
  // Each count once, in the order given ("--gpus 128,128" sweeps 128 GPUs once).
  for (int g : gpus.empty() ? std::vector<int>{r.num_gpus} : gpus) {
    if (std::find(p.gpu_counts.begin(), p.gpu_counts.end(), g) == p.gpu_counts.end()) {
      p.gpu_counts.push_back(g);
    }
  }
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

Result<std::vector<std::string>> CalibrateRunnerArgs(const ResolvedScenario& r,
                                                     const CalibrateRequest& request,
                                                     const std::string& output) {
  Result<step::StepConfig> cfg = MakeStepConfig(r);
  if (!cfg.ok()) return cfg.status();
  const std::vector<comm::GemmShape> shapes = parallelism::GemmShapesOf(step::PricedGemmOps(*cfg));
  const pb::Model& m = r.scenario.model();
  std::string dtypes;
  switch (m.precision()) {
    case pb::BF16:
      dtypes = "bf16";
      break;
    case pb::FP16:
      dtypes = "fp16";
      break;
    case pb::FP8:
      dtypes = "fp8,bf16";
      break;
    default:
      return Status::InvalidArgument("model.precision " + pb::Precision_Name(m.precision()) +
                                     ": calibration measures bf16, fp16 and fp8 matrix products");
  }
  std::string gemm;
  for (const comm::GemmShape& s : shapes) {
    if (!gemm.empty()) gemm += ",";
    gemm += s.name;
    gemm.append("=").append(std::to_string(s.m)).append("x").append(std::to_string(s.n));
    gemm.append("x").append(std::to_string(s.k));
    if (s.batch != 1) gemm.append("x").append(std::to_string(s.batch));
  }
  std::vector<std::string> args = {"--gemm",       gemm,         "--dtypes", dtypes,
                                   "--expect-gpu", r.gpu.name(), "-o",       output};
  if (request.quick) {
    for (const char* a : {"-b", "8", "-e", "1G", "-f", "8", "--repeats", "3", "--warmup", "2"}) {
      args.push_back(a);
    }
  }
  if (!request.nranks.empty()) {
    // Checked here as the runner checks it, so that a typo is bad input (exit 2) whether or not
    // the runner is installed.
    for (size_t start = 0; start <= request.nranks.size();) {
      const size_t comma = std::min(request.nranks.find(',', start), request.nranks.size());
      const std::string item = request.nranks.substr(start, comma - start);
      Result<int> n = ParseInt(item, "--nranks group size");
      if (!n.ok() || *n < 1 || *n > 65536) {
        return Status::InvalidArgument("--nranks " + request.nranks + ": \"" + item +
                                       "\" is not a group size; expected whole numbers from 1 "
                                       "to 65536, comma-separated (e.g. 2,4,8)");
      }
      start = comma + 1;
    }
    args.push_back("--nranks");
    args.push_back(request.nranks);
  }
  return args;
}

std::string DefaultCalibrationPath(const std::string& scenario_path) {
  std::string stem = std::filesystem::path(scenario_path).stem().string();
  return (stem.empty() ? std::string("scenario") : stem) + ".calibration.json";
}

}  // namespace trainsim::scenarios
