#include "cli/run_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/calibrate_command.h"
#include "cli/commands.h"
#include "cli/whatif_command.h"
#include "parallelism/layout.h"
#include "scenarios/run_config.h"
#include "scenarios/step_config.h"
#include "sim/atomic_file.h"
#include "sim/progress.h"
#include "sim/time.h"
#include "sim/trace_writer.h"

namespace trainsim::cli {
namespace {

namespace par = trainsim::parallelism;
namespace pb = trainsim::pb;

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Gb(double bytes) { return Fmt("%.1f GB", bytes / 1e9); }

std::string Line(const std::string& label, const std::string& value) {
  std::string out = "  " + label;
  if (out.size() < 22) out.resize(22, ' ');
  return out + value + "\n";
}

std::string Seconds(double s) {
  if (s >= 1) return Fmt("%.3f s", s);
  return Fmt("%.2f ms", s * 1e3);
}

nlohmann::json MemoryJson(const par::MemoryReport& m) {
  nlohmann::json j;
  const par::MemoryBreakdown& w = m.per_stage[size_t(m.peak_stage)];
  j["peak_bytes_per_gpu"] = m.peak_bytes;
  j["capacity_bytes"] = m.capacity_bytes;
  j["fits"] = m.fits;
  j["peak_stage"] = m.peak_stage;
  j["by_category_bytes"] = {{"weights", w.weights},
                            {"gradients", w.gradients},
                            {"optimizer", w.optimizer},
                            {"activations", w.activations},
                            {"optimizer_step_grads", w.step_grads},
                            {"overhead", w.overhead}};
  if (!m.fits) {
    j["reason"] = m.reason;
    j["would_fit"] = m.suggestions;
  }
  return j;
}

nlohmann::json BreakdownJson(const step::StepBreakdown& b) {
  return {{"compute", b.compute_s},
          {"exposed_tp_comm", b.exposed_tp_comm_s},
          {"exposed_dp_comm", b.exposed_dp_comm_s},
          {"pp_wait", b.pp_wait_s},
          {"bubble", b.bubble_s},
          {"optimizer", b.optimizer_s},
          {"other", b.other_s}};
}

nlohmann::json StepJson(const step::StepResult& r) {
  nlohmann::json j;
  j["time_s"] = r.time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["memory"] = MemoryJson(r.memory);
  j["breakdown_gpu"] = r.report_gpu;
  j["breakdown_gpu_place"] = r.report_gpu_place;
  j["breakdown_s"] = BreakdownJson(r.breakdown);
  nlohmann::json stages = nlohmann::json::array();
  for (const step::StepBreakdown& b : r.stage_breakdown) stages.push_back(BreakdownJson(b));
  j["stage_breakdown_s"] = stages;
  j["simulation"] = {{"note", r.simulation_note},
                     {"simulated_replicas", r.simulated_replicas},
                     {"events", r.events},
                     {"flows", r.flows}};
  if (r.calibration.used) {
    const step::CalibrationUse& u = r.calibration;
    j["calibration"] = {{"file", u.file},
                        {"gpu", u.gpu},
                        {"sample", u.sample},
                        {"gemm_shapes", u.gemm_shapes},
                        {"gemm_shapes_calibrated", u.gemm_shapes_calibrated},
                        {"collectives_calibrated", u.collectives_calibrated},
                        {"collectives_modelled", u.collectives_modelled}};
  }
  return j;
}

// "calibrated" and "modelled" lines: what of the step came from the calibration file.
std::string CalibrationLines(const step::CalibrationUse& u) {
  if (!u.used) return "";
  std::string cal = "GEMM efficiency for " + std::to_string(u.gemm_shapes_calibrated) + "/" +
                    std::to_string(u.gemm_shapes) + " layer shapes";
  for (const std::string& c : u.collectives_calibrated) cal.append(", TP ").append(c);
  cal.append(" (").append(u.file).append(u.sample ? ", SAMPLE: not measured)" : ")");
  std::string model = "DP/PP/ZeRO flows on the network";
  for (const std::string& c : u.collectives_modelled) model.append(", TP ").append(c);
  if (u.gemm_shapes_calibrated < u.gemm_shapes) {
    model.append(", ")
        .append(std::to_string(u.gemm_shapes - u.gemm_shapes_calibrated))
        .append(" GEMM shapes");
  }
  model.append(", attention and memory-bound kernels, optimizer");
  return Line("calibrated", cal) + Line("modelled", model);
}

std::string LayoutText(const step::StepConfig& c) {
  const par::ParallelConfig& p = c.parallel;
  std::string s = "TP " + std::to_string(p.tp) + " x PP " + std::to_string(p.pp) + " x DP " +
                  std::to_string(p.dp) + " = " + std::to_string(p.num_gpus()) + " GPUs, " +
                  par::ScheduleName(p.schedule);
  if (p.virtual_stages > 1) s += " (" + std::to_string(p.virtual_stages) + " chunks)";
  s += ", micro-batch " + std::to_string(p.micro_batch) + " x " +
       std::to_string(p.num_micro_batches()) + " per pipeline, global batch " +
       std::to_string(p.global_batch);
  s += ", recompute " + par::RecomputeName(p.recompute);
  if (p.sequence_parallel) s += ", SP";
  if (p.zero_stage > 0) s += ", ZeRO-" + std::to_string(p.zero_stage);
  if (c.model.flash_attention) s += ", flash attention";
  return s;
}

}  // namespace

std::string FormatStepReport(const scenarios::ResolvedScenario& resolved,
                             const step::StepConfig& config, const step::StepResult& r,
                             const std::optional<step::StepResult>& faulted) {
  std::ostringstream out;
  const pb::Scenario& s = resolved.scenario;
  out << "trainsim run: " << s.name();
  if (!s.description().empty()) out << " - " << s.description();
  out << "\n";
  out << Line("model", s.model().name() + " (" + scenarios::FormatCount(double(resolved.params)) +
                           " parameters)");
  out << Line("cluster", std::to_string(resolved.nodes) + " x " + resolved.node.name() + " (" +
                             std::to_string(resolved.num_gpus) + " x " + resolved.gpu.name() + ")");
  out << Line("layout", LayoutText(config));
  out << Line("simulated", r.simulation_note);
  out << CalibrationLines(r.calibration);
  out << "\nstep\n";
  out << Line("time", Seconds(r.time_s));
  out << Line("tokens/s", Fmt("%.0f", r.tokens_per_s));
  out << Line("TFLOP/s per GPU",
              Fmt("%.1f", r.tflops_per_gpu) + " (hardware FLOPs, incl. recompute)");
  out << Line("MFU",
              Fmt("%.1f%%", 100 * r.mfu) + Fmt(" of %.0f TFLOP/s", config.gpu.peak_flops / 1e12));
  out << Line("HFU", Fmt("%.1f%%", 100 * r.hfu));

  const par::MemoryReport& m = r.memory;
  const par::MemoryBreakdown& w = m.per_stage[size_t(m.peak_stage)];
  out << "\nmemory per GPU (peak: pipeline stage " << m.peak_stage << ")\n";
  out << Line("weights", Gb(w.weights));
  out << Line("gradients", Gb(w.gradients));
  out << Line("optimizer", Gb(w.optimizer));
  out << Line("activations", Gb(w.activations));
  if (w.step_grads > 0) {
    out << Line("fp32 grad copies", Gb(w.step_grads) +
                                        " at the optimizer step, after activations are freed" +
                                        (w.step_grads > w.activations ? " (the peak)" : ""));
  }
  out << Line("framework", Gb(w.overhead));
  out << Line("total", Gb(m.peak_bytes) + " of " + Gb(m.capacity_bytes) +
                           (m.fits ? " (fits)" : " (DOES NOT FIT)"));
  if (!m.fits) {
    out << Line("why", m.reason);
    for (const std::string& fix : m.suggestions) out << Line("would fit", fix);
  }

  const step::StepBreakdown& b = r.breakdown;
  out << "\nwhere " << r.report_gpu_place << " spends the step\n";
  auto row = [&](const char* label, double v) {
    out << Line(label,
                Fmt("%10.3f s", v) + Fmt("  %5.1f%%", r.time_s > 0 ? 100 * v / r.time_s : 0));
  };
  row("compute", b.compute_s);
  row("exposed TP comm", b.exposed_tp_comm_s);
  row("exposed DP comm", b.exposed_dp_comm_s);
  row("pipeline wait", b.pp_wait_s);
  row("pipeline bubble", b.bubble_s);
  row("optimizer", b.optimizer_s);
  row("other", b.other_s);
  row("total", b.total_s());

  if (faulted) {
    out << "\nwith the scenario's stragglers and link faults active\n";
    out << Line("time", Seconds(faulted->time_s) +
                            Fmt(" (%+.1f%%)", 100 * (faulted->time_s / r.time_s - 1)));
    out << Line("simulated", faulted->simulation_note);
    const step::StepBreakdown& fb = faulted->breakdown;
    out << Line("GPU " + std::to_string(faulted->report_gpu),
                "compute " + Seconds(fb.compute_s) + ", exposed DP comm " +
                    Seconds(fb.exposed_dp_comm_s) + ", bubble " + Seconds(fb.bubble_s) +
                    ", pipeline wait " + Seconds(fb.pp_wait_s));
  }
  return out.str();
}

nlohmann::json StepJsonDocument(const scenarios::ResolvedScenario& resolved,
                                const step::StepConfig& config, const step::StepResult& r,
                                const std::optional<step::StepResult>& faulted) {
  nlohmann::json j;
  j["scenario"] = resolved.scenario.name();
  j["layout"] = LayoutText(config);
  j["step"] = StepJson(r);
  if (faulted) j["step_with_faults"] = StepJson(*faulted);
  return j;
}

std::string FormatStepJson(const scenarios::ResolvedScenario& resolved,
                           const step::StepConfig& config, const step::StepResult& r,
                           const std::optional<step::StepResult>& faulted) {
  return StepJsonDocument(resolved, config, r, faulted).dump(2) + "\n";
}

Result<RunOutcome> SimulateScenarioRun(const scenarios::ResolvedScenario& resolved,
                                       const step::StepConfig& step, const RunRequest& request) {
  Result<checkpoint::RunConfig> config = scenarios::MakeRunConfig(resolved);
  if (!config.ok()) return config.status();
  if (request.seed) config->seed = *request.seed;
  if (request.trials < 0) return Status::InvalidArgument("--trials must be at least 1");
  checkpoint::StepTimeCache cache(scenarios::MakeStepTimeFn(step));
  RunOutcome out;
  out.config = config.value();
  Result<checkpoint::RunReport> run = checkpoint::SimulateRun(out.config, cache, 0);
  if (!run.ok()) return run.status();
  out.run = std::move(run.value());
  if (request.trials > 0) {
    // Trial by trial, so the bar moves; RunTrials(k, k + 1) is trial k exactly as in one call.
    sim::ProgressBar::Options bar_options;
    bar_options.enabled = request.progress && sim::ProgressBar::ShouldShowOnStderr();
    sim::ProgressBar bar("trials", static_cast<uint64_t>(request.trials), bar_options);
    std::vector<checkpoint::TrialOutcome> outcomes;
    outcomes.reserve(static_cast<size_t>(request.trials));
    const int64_t chunk = std::max<int64_t>(1, request.trials / 100);
    for (int64_t k = 0; k < request.trials; k += chunk) {
      const int64_t end = std::min(request.trials, k + chunk);
      Result<std::vector<checkpoint::TrialOutcome>> r =
          checkpoint::RunTrials(out.config, cache, k, end);
      if (!r.ok()) return r.status();
      outcomes.insert(outcomes.end(), r->begin(), r->end());
      bar.Add(static_cast<uint64_t>(end - k));
    }
    bar.Finish();
    out.stats = checkpoint::Summarize(std::move(outcomes));
  }
  if (request.optimize_interval) {
    out.scan_trials = request.trials > 0 ? request.trials : request.default_scan_trials;
    Result<checkpoint::IntervalOptimum> opt =
        checkpoint::OptimizeCheckpointInterval(out.config, cache, out.scan_trials);
    if (!opt.ok()) return opt.status().WithPrefix("--optimize-checkpoint-interval");
    out.optimum = std::move(opt.value());
  }
  return out;
}

namespace {

std::string Human(double s) { return sim::FormatSecondsHuman(s); }
std::string Human(sim::Time t) { return sim::FormatSecondsHuman(t.seconds()); }
std::string Pct(double fraction) { return Fmt("%.2f%%", 100 * fraction); }

// A time in the run to the millisecond: "16h15m54.958s".
std::string At(sim::Time t) {
  return sim::FormatDuration(sim::Time::Millis((t.nanos() + 500000) / 1000000));
}

std::string Pad(std::string s, size_t n) {
  if (s.size() < n) s.resize(n, ' ');
  return s;
}

std::string IntervalText(const checkpoint::RunReport& r) {
  std::string s = r.interval_used.ToString();
  if (r.interval_used.kind == checkpoint::CheckpointInterval::Kind::kAuto) {
    s += " (Daly: " + Human(r.interval_used_s) + " of training)";
  }
  return s;
}

}  // namespace

std::string FormatRunReport(const scenarios::ResolvedScenario& resolved, const RunOutcome& o,
                            bool events) {
  std::ostringstream out;
  const checkpoint::RunReport& r = o.run;
  const checkpoint::RunConfig& c = o.config;
  const checkpoint::Breakdown& b = r.breakdown;
  out << "\nrun (failure history 0, seed " << c.seed << ")\n";
  if (resolved.training_duration) {
    out << Line("goal", sim::FormatDuration(*resolved.training_duration) +
                            " of wall time (training.duration): " + std::to_string(r.total_steps) +
                            " steps trained");
  } else {
    out << Line("goal", std::to_string(r.total_steps) + " steps");
  }
  out << Line("checkpointing", std::string(checkpoint::CheckpointPolicyName(c.checkpoint.policy)) +
                                   ", interval " + IntervalText(r) + ", " +
                                   Fmt("%.2f TB", r.checkpoint_costs.size_bytes / 1e12) +
                                   ", write " + Human(r.checkpoint_costs.persistent_write));
  out << Line("recovery", std::string(checkpoint::RecoveryPolicyName(c.recovery.policy)) + ", " +
                              std::to_string(c.spare_nodes) + " spare node(s)");
  out << Line("wall time", Human(r.wall_time));
  out << Line("goodput", Pct(r.goodput) + " (useful compute / wall time)");
  out << Line("ETTR", Pct(r.ettr) + " (time in training steps whose progress was kept / wall)");
  out << Line("failures", std::to_string(r.failures));
  for (const auto& [cause, n] : r.failures_by_cause) {  // std::map: sorted by cause
    out << Line("", Pad(std::to_string(n), 4) + cause);
  }
  out << Line("lost work", Human(b.lost));
  out << Line("downtime", Human(b.detection + b.restart + b.waiting) + " (detection " +
                              Human(b.detection) + ", restart " + Human(b.restart) + ", waiting " +
                              Human(b.waiting) + ")");
  out << Line("checkpoints", std::to_string(r.checkpoints) + " completed (" +
                                 std::to_string(r.persistent_checkpoints) + " to storage)");
  const double wall_h = r.wall_time.seconds() / 3600.0;
  out << Line(
      "GPU-hours",
      Fmt("%.0f", r.gpu_hours) +
          (wall_h > 0 ? Fmt(" (%.0f GPUs billed", r.gpu_hours / wall_h) +
                            (c.bill_spares && c.spare_nodes > 0 ? ", spares included" : "") + ")"
                      : ""));
  out << Line("cost", Fmt("$%.0f", r.cost_usd) + Fmt(" at $%.2f per GPU-hour", c.usd_per_gpu_hour));

  out << "\nwhere the run's wall time went\n";
  const double wall = r.wall_time.seconds();
  auto row = [&](const char* label, sim::Time t) {
    out << Line(label, Pad(Human(t), 12) + Fmt("%6.2f%%", wall > 0 ? 100 * t.seconds() / wall : 0));
  };
  row("useful compute", b.useful);
  row("exposed comm", b.exposed_comm);
  row("pipeline bubble", b.bubble);
  row("checkpoint stall", b.checkpoint_stall);
  row("lost work", b.lost);
  row("detection", b.detection);
  row("restart/restore", b.restart);
  row("waiting", b.waiting);
  row("total = wall time", b.Total());

  if (o.stats) {
    const checkpoint::MonteCarloSummary& m = *o.stats;
    out << "\nover " << m.trials << " failure histories (trials 0.." << m.trials - 1 << ", seed "
        << c.seed << ")\n";
    out << "  " << Pad("", 20) << Pad("mean", 12) << Pad("p50", 12) << Pad("p90", 12) << "p99\n";
    auto stat_row = [&](const char* label, const checkpoint::Stat& s, auto f) {
      out << "  " << Pad(label, 20) << Pad(f(s.mean), 12) << Pad(f(s.p50), 12) << Pad(f(s.p90), 12)
          << f(s.p99) << "\n";
    };
    auto human = [](double v) { return Human(v); };
    stat_row("wall time", m.wall_time_s, human);
    stat_row("goodput", m.goodput, Pct);
    stat_row("ETTR", m.ettr, Pct);
    stat_row("cost (USD)", m.cost_usd, [](double v) { return Fmt("%.0f", v); });
    stat_row("lost work", m.lost_work_s, human);
    stat_row("failures", m.failures, [](double v) { return Fmt("%.1f", v); });
  }

  if (o.optimum) {
    const checkpoint::IntervalOptimum& opt = *o.optimum;
    out << "\ncheckpoint interval (training time between checkpoints), " << o.scan_trials
        << " failure histories each, the same at every interval\n";
    out << "  " << Pad("interval", 14) << Pad("goodput", 10) << Pad("wall time", 12)
        << Pad("steps", 12) << "wall time per step\n";
    for (const checkpoint::IntervalScanPoint& p : opt.scan) {
      out << "  " << Pad(Human(p.interval_s), 14) << Pad(Pct(p.mean_goodput), 10)
          << Pad(Human(p.mean_wall_time_s), 12) << Pad(Fmt("%.1f", p.mean_steps), 12)
          << Fmt("%.4f s", p.wall_time_per_step_s)
          << (p.interval_s == opt.best_grid_s ? "  <- best" : "") << "\n";
    }
    out << Line("optimum", Human(opt.fitted_s) + " (parabola through the best points; grid " +
                               Human(opt.best_grid_s) + ")");
    out << Line("Young", Human(opt.young_s) + " = sqrt(2 delta M)");
    out << Line("Daly", Human(opt.daly_s) + " (Daly 2006, higher order)");
    out << Line("", "delta = " + Human(opt.delta_s) + " blocking cost of one checkpoint, M = " +
                        Human(opt.mtbf_s) + " cluster mean time between failures");
  }

  if (events) {
    out << "\nevents (failure history 0)\n";
    for (const checkpoint::RunEvent& e : r.events)
      out << "  " << At(e.at) << "  " << e.what << "\n";
  }
  return out.str();
}

void AddRunJson(const RunOutcome& o, bool events, nlohmann::json& doc) {
  nlohmann::json run = RunReportJson(o.run);
  run["trial"] = 0;
  run["seed"] = o.config.seed;
  run["checkpoint_size_bytes"] = o.run.checkpoint_costs.size_bytes;
  if (events) {
    nlohmann::json ev = nlohmann::json::array();
    for (const checkpoint::RunEvent& e : o.run.events) {
      ev.push_back({{"at_s", e.at.seconds()}, {"what", e.what}});
    }
    run["events"] = ev;
  }
  doc["run"] = run;
  if (o.stats) {
    const checkpoint::MonteCarloSummary& m = *o.stats;
    doc["run_stats"] = {{"trials", m.trials},
                        {"seed", o.config.seed},
                        {"wall_time_s", StatJson(m.wall_time_s)},
                        {"goodput", StatJson(m.goodput)},
                        {"ettr", StatJson(m.ettr)},
                        {"cost_usd", StatJson(m.cost_usd)},
                        {"lost_work_s", StatJson(m.lost_work_s)},
                        {"failures", StatJson(m.failures)}};
  }
  if (o.optimum) {
    const checkpoint::IntervalOptimum& opt = *o.optimum;
    nlohmann::json scan = nlohmann::json::array();
    for (const checkpoint::IntervalScanPoint& p : opt.scan) {
      scan.push_back({{"interval_s", p.interval_s},
                      {"goodput", p.mean_goodput},
                      {"wall_time_s", p.mean_wall_time_s},
                      {"steps", p.mean_steps},
                      {"wall_time_per_step_s", p.wall_time_per_step_s}});
    }
    doc["checkpoint_interval"] = {{"trials", o.scan_trials},        {"scan", scan},
                                  {"best_grid_s", opt.best_grid_s}, {"optimum_s", opt.fitted_s},
                                  {"young_s", opt.young_s},         {"daly_s", opt.daly_s},
                                  {"delta_s", opt.delta_s},         {"mtbf_s", opt.mtbf_s}};
  }
}

std::string RunTracePath(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + ".run.json";
  }
  return path.substr(0, dot) + ".run" + path.substr(dot);
}

std::string RunTraceJson(const checkpoint::RunReport& r, checkpoint::CheckpointPolicy policy) {
  // Phases are read back from the event log's fixed wording (checkpoint/run_simulation.cc's
  // Log calls); each open phase ends where the next begins.
  sim::TraceWriter w;
  constexpr int kPid = 1, kPhases = 1, kCheckpoints = 2, kWrites = 3, kPeerCopies = 4;
  w.SetProcessName(kPid, "run");
  w.SetThreadName(kPid, kPhases, "phase");
  w.SetThreadName(kPid, kCheckpoints, "checkpoint stalls");
  w.SetThreadName(kPid, kWrites, "background writes to storage");
  w.SetThreadName(kPid, kPeerCopies, "peer-memory copies");
  for (int tid = kPhases; tid <= kPeerCopies; ++tid) w.SetThreadSortIndex(kPid, tid, tid);
  std::string phase = "training";
  sim::Time start;
  auto open = [&](const std::string& next, sim::Time at) {
    if (at > start) w.Complete(phase, "run", kPid, kPhases, start, at - start);
    phase = next;
    start = at;
  };
  auto has = [](const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
  };
  auto starts = [](const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; };
  const checkpoint::CheckpointCosts& k = r.checkpoint_costs;
  bool ended = false;
  for (const checkpoint::RunEvent& e : r.events) {
    if (ended) break;
    if (has(e.what, " failed (")) {
      w.Instant(e.what, "failure", kPid, kPhases, e.at);
      if (phase == "training" || phase == "restart") open("detection", e.at);
    } else if (starts(e.what, "failure detected")) {
      open("restart", e.at);
    } else if (starts(e.what, "waiting for ")) {
      open("waiting", e.at);
    } else if (starts(e.what, "restarting from ")) {
      open("restart", e.at);
    } else if (starts(e.what, "training resumed")) {
      open("training", e.at);
    } else if (starts(e.what, "training.duration reached")) {
      open("", e.at);
      ended = true;
    } else if (starts(e.what, "checkpoint #") && has(e.what, " written (")) {
      // SYNC: the whole write stalls training and ends now.
      w.Complete("checkpoint stall (write)", "checkpoint", kPid, kCheckpoints,
                 e.at - k.persistent_write, k.persistent_write);
    } else if (has(e.what, "checkpoint #") && has(e.what, " completed (")) {
      const bool peer = starts(e.what, "in-memory");
      const sim::Time length = peer ? k.peer_copy : k.persistent_write;
      const sim::Time began = e.at - length;
      w.Complete(peer ? "peer copy" : "write to storage", "checkpoint", kPid,
                 peer ? kPeerCopies : kWrites, began, length);
      // The snapshot stall precedes the background phase; draw it once per checkpoint (for
      // IN_MEMORY before the peer copy, for ASYNC before the write).
      if (peer == (policy == checkpoint::CheckpointPolicy::kInMemory)) {
        w.Complete("checkpoint stall (snapshot)", "checkpoint", kPid, kCheckpoints,
                   began - k.snapshot, k.snapshot);
      }
    }
  }
  if (!ended) open("", r.wall_time);
  return w.ToJson();
}

void AddRunCommand(CLI::App& app, int* exit_code) {
  struct Options {
    ScenarioOptions scenario;
    std::string trace;
    bool allow_oom = false;
    int gpu = 0;
    bool events = false;
    int64_t trials = 0;
    std::optional<uint64_t> seed;
    bool optimize_interval = false;
    std::string calibration;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Simulate one training step (time, throughput, MFU, memory, where time goes), then the "
      "whole run with its checkpoints and failures (wall time, goodput, ETTR, lost work, cost)");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--trace", opts->trace,
                  "Write a Chrome/Perfetto trace of the step to FILE and of the run's phases to "
                  "FILE with .run before the extension (open in ui.perfetto.dev)");
  cmd->add_flag("--allow-oom", opts->allow_oom,
                "Simulate a layout that does not fit in GPU memory anyway");
  cmd->add_option("--gpu", opts->gpu, "GPU whose step breakdown to show (default 0)");
  cmd->add_flag("--events", opts->events, "Also print the run's event log");
  cmd->add_option("--trials", opts->trials,
                  "Monte Carlo: N independent failure histories; mean, p50, p90, p99 of wall "
                  "time, goodput, ETTR and cost")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--seed", opts->seed, "Seed of the failure histories (replaces the scenario's)");
  cmd->add_flag("--optimize-checkpoint-interval", opts->optimize_interval,
                "Scan the checkpoint interval over the failure histories (--trials, default 100) "
                "and show the optimum next to Young's and Daly's");
  cmd->add_option("--calibration", opts->calibration,
                  "Calibration file (trainsim calibrate) whose measured GEMM rates and TP "
                  "collective curves replace the model where they cover (default: "
                  "cluster.calibration)");
  cmd->callback([opts, exit_code] {
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    Result<step::StepConfig> config = scenarios::MakeStepConfig(*resolved);
    if (!config.ok()) {
      *exit_code = ReportError(config.status());
      return;
    }
    config->allow_oom = opts->allow_oom;
    config->report_gpu = opts->gpu;
    Result<std::optional<comm::Calibration>> calibration =
        LoadScenarioCalibration(*resolved, opts->calibration);
    if (!calibration.ok()) {
      *exit_code = ReportError(calibration.status());
      return;
    }
    if (calibration->has_value()) {
      config->calibration = std::make_shared<const comm::Calibration>(std::move(**calibration));
    }
    step::SimulateOptions sim_opts;
    sim_opts.record_trace = !opts->trace.empty();
    Result<step::StepResult> result = step::SimulateStep(*config, {}, sim_opts);
    if (!result.ok()) {
      *exit_code = ReportError(result.status());
      return;
    }
    std::optional<step::StepResult> faulted;
    const step::ClusterState state = scenarios::MakeFaultedClusterState(*resolved);
    if (!state.gpu_slowdown.empty() || !state.links.empty()) {
      Result<step::StepResult> f = step::SimulateStep(*config, state);
      if (!f.ok()) {
        *exit_code = ReportError(f.status());
        return;
      }
      faulted = std::move(*f);
    }
    // The run, before anything is written: bad input leaves stdout and the trace files empty.
    RunRequest request;
    request.seed = opts->seed;
    request.trials = opts->trials;
    request.optimize_interval = opts->optimize_interval;
    Result<RunOutcome> run = SimulateScenarioRun(*resolved, *config, request);
    if (!run.ok()) {
      *exit_code = ReportError(run.status());
      return;
    }
    if (!opts->trace.empty()) {
      // Both files through temporary files renamed into place (sim/atomic_file.h): a failed
      // write leaves the previous files, never a truncated trace. Both are written before either
      // is committed, and the step's (the larger) is committed first.
      std::ostringstream step_trace;
      step::WriteChromeTrace(*result, step_trace);
      const std::string run_path = RunTracePath(opts->trace);
      sim::AtomicFileWriter step_file, run_file;
      Status st = step_file.Open(opts->trace);
      if (st.ok()) st = run_file.Open(run_path);
      if (st.ok()) {
        step_file.Append(step_trace.str());
        run_file.Append(RunTraceJson(run->run, run->config.checkpoint.policy));
        st = step_file.Commit();
      }
      if (st.ok()) st = run_file.Commit();
      if (!st.ok()) {
        *exit_code = ReportError(st.WithPrefix("--trace"));
        return;
      }
    }
    if (opts->scenario.json) {
      nlohmann::json doc = StepJsonDocument(*resolved, *config, *result, faulted);
      AddRunJson(*run, opts->events, doc);
      std::cout << doc.dump(2) << "\n";
    } else {
      std::cout << FormatStepReport(*resolved, *config, *result, faulted)
                << FormatRunReport(*resolved, *run, opts->events);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
