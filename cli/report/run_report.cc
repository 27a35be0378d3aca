#include "cli/report/run_report.h"

#include <sstream>
#include <string>

#include "cli/report/format.h"
#include "sim/time.h"
#include "sim/trace_writer.h"

namespace trainsim::cli::report {
namespace {

std::string IntervalText(const run::RunReport& r) {
  if (r.interval_bound == "DALY") {
    return "auto: " + Human(r.interval_used_s) +
           " of training (Daly's optimum; the background write of one checkpoint, " +
           Human(r.background_write_s) + ", is shorter)";
  }
  if (r.interval_bound == "BACKGROUND_WRITE") {
    return "auto: " + Human(r.interval_used_s) +
           " of training (bounded by the background write of one checkpoint, " +
           Human(r.background_write_s) + "; Daly's optimum " + Human(r.daly_interval_s) +
           " would start a checkpoint before the previous one is written)";
  }
  return r.interval_used.ToString();
}

const char* EventKindName(run::RunEventKind k) {
  switch (k) {
    case run::RunEventKind::kFailure:
      return "FAILURE";
    case run::RunEventKind::kDetected:
      return "DETECTED";
    case run::RunEventKind::kElasticShrink:
      return "ELASTIC_SHRINK";
    case run::RunEventKind::kWaiting:
      return "WAITING";
    case run::RunEventKind::kRestart:
      return "RESTART";
    case run::RunEventKind::kResumed:
      return "RESUMED";
    case run::RunEventKind::kRepaired:
      return "REPAIRED";
    case run::RunEventKind::kElasticRejoin:
      return "ELASTIC_REJOIN";
    case run::RunEventKind::kSlowdownStarted:
      return "SLOWDOWN_STARTED";
    case run::RunEventKind::kSlowdownEnded:
      return "SLOWDOWN_ENDED";
    case run::RunEventKind::kCheckpointWritten:
      return "CHECKPOINT_WRITTEN";
    case run::RunEventKind::kCheckpointCompleted:
      return "CHECKPOINT_COMPLETED";
    case run::RunEventKind::kPeerCopyCompleted:
      return "PEER_COPY_COMPLETED";
    case run::RunEventKind::kCorruption:
      return "CORRUPTION";
    case run::RunEventKind::kStragglerDetected:
      return "STRAGGLER_DETECTED";
    case run::RunEventKind::kCheckpointDeleted:
      return "CHECKPOINT_DELETED";
    case run::RunEventKind::kEnd:
      return "END";
  }
  return "?";
}

}  // namespace

std::string CorruptText(const run::UndetectedCorruption& u, int checkpoints) {
  if (u.first_corrupt_checkpoint > checkpoints) {
    return "the final weights are corrupt (no checkpoint was taken after it)";
  }
  return "the final weights and checkpoints from #" + std::to_string(u.first_corrupt_checkpoint) +
         " on are corrupt";
}

nlohmann::json FailureRecordJson(const run::FailureRecord& rec) {
  nlohmann::json j;
  j["at_s"] = rec.at.seconds();
  j["cause"] = rec.cause;
  j["cause_name"] = rec.cause_name;
  j["what"] = rec.what;
  j["scheduled"] = rec.scheduled;
  j["eviction"] = rec.eviction;
  j["mechanism"] = checkpoint::DetectionMechanismName(rec.mechanism);
  j["detected_after_s"] = rec.detection_delay.seconds();
  j["lost_work_s"] = rec.lost.seconds();
  j["restored_checkpoint"] = rec.restored_checkpoint;
  j["restored_step"] = rec.restored_step;
  j["restored_from_peer_memory"] = rec.restored_from_peer_memory;
  if (!rec.resumed_at.is_max()) j["resumed_at_s"] = rec.resumed_at.seconds();
  return j;
}

nlohmann::json RunReportJson(const run::RunReport& r) {
  const run::Breakdown& b = r.breakdown;
  nlohmann::json j;
  j["wall_time_s"] = r.wall_time.seconds();
  j["steps"] = r.total_steps;
  j["useful_compute_fraction"] = r.useful_compute_fraction;
  j["ettr"] = r.ettr;
  j["failures"] = r.failures;
  j["evictions"] = r.evictions;
  nlohmann::json by_cause = nlohmann::json::object();
  for (const auto& [cause, n] : r.failures_by_cause) by_cause[cause] = n;  // std::map: sorted
  j["failures_by_cause"] = by_cause;
  j["checkpoints"] = r.checkpoints;
  j["persistent_checkpoints"] = r.persistent_checkpoints;
  j["checkpoint_interval"] = r.interval_used.ToString();
  j["checkpoint_interval_s"] = r.interval_used_s;
  j["checkpoint_interval_bound"] = r.interval_bound;
  j["background_write_s"] = r.background_write_s;
  if (r.daly_interval_s > 0) j["daly_interval_s"] = r.daly_interval_s;
  nlohmann::json records = nlohmann::json::array();
  for (const run::FailureRecord& rec : r.failure_records) records.push_back(FailureRecordJson(rec));
  j["failure_records"] = records;
  nlohmann::json undetected = nlohmann::json::array();
  for (const run::UndetectedCorruption& u : r.undetected_corruptions) {
    undetected.push_back({{"what", u.what},
                          {"at_s", u.at.seconds()},
                          {"would_detect_at_s", u.would_detect_at.seconds()},
                          {"first_corrupt_checkpoint", u.first_corrupt_checkpoint}});
  }
  j["undetected_corruptions"] = undetected;
  j["lost_work_s"] = b.lost.seconds();
  j["downtime_s"] = (b.detection + b.restart + b.waiting).seconds();
  j["gpu_hours"] = r.gpu_hours;
  j["cost_usd"] = r.cost_usd;
  j["breakdown_s"] = {{"useful", b.useful.seconds()},
                      {"exposed_comm", b.exposed_comm.seconds()},
                      {"bubble", b.bubble.seconds()},
                      {"slowdown", b.slowdown.seconds()},
                      {"checkpoint_stall", b.checkpoint_stall.seconds()},
                      {"lost", b.lost.seconds()},
                      {"unfinished_step", b.unfinished_step.seconds()},
                      {"detection", b.detection.seconds()},
                      {"restart", b.restart.seconds()},
                      {"waiting", b.waiting.seconds()}};
  return j;
}

nlohmann::json StatJson(const run::Stat& s) {
  return {{"mean", s.mean}, {"p1", s.p1},   {"p10", s.p10},
          {"p50", s.p50},   {"p90", s.p90}, {"p99", s.p99}};
}

nlohmann::json EventsJson(const std::vector<run::RunEvent>& events) {
  nlohmann::json ev = nlohmann::json::array();
  for (const run::RunEvent& e : events) {
    ev.push_back({{"at_s", e.at.seconds()}, {"kind", EventKindName(e.kind)}, {"what", e.what}});
  }
  return ev;
}

std::string EventsText(const std::vector<run::RunEvent>& events) {
  std::string out;
  for (const run::RunEvent& e : events) out += "  " + At(e.at) + "  " + Printable(e.what) + "\n";
  return out;
}

std::string FormatRunReport(const scenarios::ResolvedScenario& resolved,
                            const scenarios::RunOutcome& o, bool events) {
  std::ostringstream out;
  const run::RunReport& r = o.run;
  const run::RunConfig& c = o.config;
  const run::Breakdown& b = r.breakdown;
  out << "\nrun (failure history 0, seed " << c.seed << ")\n";
  if (resolved.training_duration) {
    out << Line("goal", sim::FormatDuration(*resolved.training_duration) +
                            " of wall time (training.duration): " + std::to_string(r.total_steps) +
                            " steps trained");
  } else {
    out << Line("goal", std::to_string(r.total_steps) + " steps");
  }
  out << Line("checkpointing",
              std::string(checkpoint::CheckpointPolicyName(c.checkpoint.policy)) + ", interval " +
                  IntervalText(r) + ", " + Fmt("%.2f TB", r.checkpoint_costs.size_bytes / 1e12) +
                  ", write " + Human(r.checkpoint_costs.persistent_write) +
                  (c.checkpoint.keep_last > 0
                       ? ", keep last " + std::to_string(c.checkpoint.keep_last) +
                             Fmt(" (%.2f TB of storage)",
                                 c.checkpoint.keep_last * r.checkpoint_costs.size_bytes / 1e12)
                       : ""));
  out << Line("recovery", std::string(checkpoint::RecoveryPolicyName(c.recovery.policy)) + ", " +
                              std::to_string(c.spare_nodes) + " spare node(s)");
  out << Line("wall time", Human(r.wall_time));
  out << Line("ETTR", Pct(r.ettr) + " (productive training time / wall time, Meta's definition)");
  out << Line("useful compute",
              Pct(r.useful_compute_fraction) + " of wall time (the useful compute fraction)");
  out << Line("failures",
              std::to_string(r.failures) + (r.evictions > 0 ? " (+ " + std::to_string(r.evictions) +
                                                                  " straggler eviction(s))"
                                                            : ""));
  // The counts' column is as wide as the widest count and a space (at least 4: "503 GPU").
  size_t width = 4;
  for (const auto& [cause, n] : r.failures_by_cause) {
    width = std::max(width, std::to_string(n).size() + 1);
  }
  for (const auto& [cause, n] : r.failures_by_cause) {  // std::map: sorted by cause
    out << Line("", Pad(std::to_string(n), width) + cause);
  }
  out << Line("lost work", Human(b.lost) +
                               " (rolled back by failures; the step in flight when "
                               "training.duration ends is not lost work)");
  for (const run::FailureRecord& rec : r.failure_records) {
    if (&rec - r.failure_records.data() >= 20) {
      out << Line("", "... (" + std::to_string(r.failure_records.size() - 20) + " more; --events)");
      break;
    }
    out << Line("", At(rec.at) + "  " + rec.what + ": " + rec.cause_name + ", detected by " +
                        checkpoint::DetectionMechanismName(rec.mechanism) + " after " +
                        Human(rec.detection_delay) + ", " + Human(rec.lost) + " lost");
  }
  // A corruption the loss check had not found by the end: nothing was rolled back, and the
  // weights trained on are not the ones the run reports as kept.
  for (const run::UndetectedCorruption& u : r.undetected_corruptions) {
    out << Line("undetected SDC", u.what + " corrupted training state at " + At(u.at) +
                                      "; the loss check would find it at " + At(u.would_detect_at) +
                                      ", after training ended: " + CorruptText(u, r.checkpoints));
  }
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
    out << ShareRow(label, Pad(Human(t), 12), t.seconds(), wall, "%6.2f%%");
  };
  row("useful compute", b.useful);
  row("exposed comm", b.exposed_comm);
  // StepTiming::bubble: the pipeline bubble and the GPUs' other idle time in a step (the data
  // loader, the host, offloading's copies; scenarios::ToStepTiming).
  row("bubble and stalls", b.bubble);
  row("straggler slowdown", b.slowdown);  // stragglers and degraded links
  row("checkpoint stall", b.checkpoint_stall);
  row("lost work", b.lost);
  row("unfinished step", b.unfinished_step);
  row("detection", b.detection);
  row("restart/restore", b.restart);
  row("waiting", b.waiting);
  row("total = wall time", b.Total());

  if (o.stats) {
    const run::MonteCarloSummary& m = *o.stats;
    out << "\nover " << m.trials << " failure histories (trials 0.." << m.trials - 1 << ", seed "
        << c.seed << ")\n";
    // A planner reads the bad tail: the 90th/99th percentile where more is worse, the
    // 10th/1st where more is better (the JSON has all five percentiles).
    out << "  " << Pad("", 20) << Pad("mean", 12) << Pad("p50", 12) << Pad("worst 10%", 12)
        << "worst 1%\n";
    auto stat_row = [&](const char* label, const run::Stat& s, bool higher_is_better, auto f) {
      out << "  " << Pad(label, 20) << Pad(f(s.mean), 12) << Pad(f(s.p50), 12)
          << Pad(f(higher_is_better ? s.p10 : s.p90), 12) << f(higher_is_better ? s.p1 : s.p99)
          << "\n";
    };
    auto human = [](double v) { return Human(v); };
    stat_row("wall time", m.wall_time_s, false, human);
    stat_row("useful compute", m.useful_compute_fraction, true, Pct);
    stat_row("ETTR", m.ettr, true, Pct);
    stat_row("cost (USD)", m.cost_usd, false, [](double v) { return Fmt("%.0f", v); });
    stat_row("lost work", m.lost_work_s, false, human);
    stat_row("failures", m.failures, false, [](double v) { return Fmt("%.1f", v); });
    out << "  (worst 10% / 1%: the 10th / 1st percentile of useful compute and ETTR, the 90th / "
           "99th of the rest)\n";
  }

  if (o.optimum) {
    const run::IntervalOptimum& opt = *o.optimum;
    out << "\ncheckpoint interval (training time between checkpoints), " << o.scan_trials
        << " failure histories each, the same at every interval\n";
    out << "  " << Pad("interval", 14) << Pad("useful", 10) << Pad("wall time", 12)
        << Pad("steps", 12) << "wall time per step\n";
    for (const run::IntervalScanPoint& p : opt.scan) {
      out << "  " << Pad(Human(p.interval_s), 14) << Pad(Pct(p.mean_useful_compute_fraction), 10)
          << Pad(Human(p.mean_wall_time_s), 12) << Pad(Fmt("%.1f", p.mean_steps), 12)
          << Fmt("%.4f s", p.wall_time_per_step_s)
          << (p.interval_s == opt.best_grid_s ? "  <- best" : "") << "\n";
    }
    out << Line("optimum", Human(opt.fitted_s) + " (parabola through the best points; grid " +
                               Human(opt.best_grid_s) + ")");
    out << Line("bound", opt.bound == "BACKGROUND_WRITE"
                             ? "the background write of one checkpoint, " +
                                   Human(opt.background_write_s) +
                                   " (no interval can be shorter; the optimum sits on it)"
                             : "the failure rate (checkpoint cost against lost work); the "
                               "background write of one checkpoint, " +
                                   Human(opt.background_write_s) + ", is shorter");
    out << Line("Young", Human(opt.young_s) + " = sqrt(2 delta M)");
    out << Line("Daly", Human(opt.daly_s) + " (Daly 2006, higher order)");
    out << Line("", "delta = " + Human(opt.delta_s) + " blocking cost of one checkpoint, M = " +
                        Human(opt.mtbf_s) + " cluster mean time between failures");
  }

  if (events) out << "\nevents (failure history 0)\n" << EventsText(r.events);
  return out.str();
}

void AddRunJson(const scenarios::RunOutcome& o, bool events, nlohmann::json& doc) {
  nlohmann::json run_json = RunReportJson(o.run);
  run_json["trial"] = 0;
  run_json["seed"] = o.config.seed;
  run_json["checkpoint_size_bytes"] = o.run.checkpoint_costs.size_bytes;
  if (events) run_json["events"] = EventsJson(o.run.events);
  doc["run"] = run_json;
  if (o.stats) {
    const run::MonteCarloSummary& m = *o.stats;
    doc["run_stats"] = {{"trials", m.trials},
                        {"seed", o.config.seed},
                        {"wall_time_s", StatJson(m.wall_time_s)},
                        {"useful_compute_fraction", StatJson(m.useful_compute_fraction)},
                        {"ettr", StatJson(m.ettr)},
                        {"cost_usd", StatJson(m.cost_usd)},
                        {"lost_work_s", StatJson(m.lost_work_s)},
                        {"failures", StatJson(m.failures)}};
  }
  if (o.optimum) {
    const run::IntervalOptimum& opt = *o.optimum;
    nlohmann::json scan = nlohmann::json::array();
    for (const run::IntervalScanPoint& p : opt.scan) {
      scan.push_back({{"interval_s", p.interval_s},
                      {"useful_compute_fraction", p.mean_useful_compute_fraction},
                      {"wall_time_s", p.mean_wall_time_s},
                      {"steps", p.mean_steps},
                      {"wall_time_per_step_s", p.wall_time_per_step_s}});
    }
    doc["checkpoint_interval"] = {{"trials", o.scan_trials},
                                  {"scan", scan},
                                  {"best_grid_s", opt.best_grid_s},
                                  {"optimum_s", opt.fitted_s},
                                  {"young_s", opt.young_s},
                                  {"daly_s", opt.daly_s},
                                  {"delta_s", opt.delta_s},
                                  {"mtbf_s", opt.mtbf_s},
                                  {"background_write_s", opt.background_write_s},
                                  {"bound", opt.bound}};
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

std::string RunTraceJson(const run::RunReport& r, checkpoint::CheckpointPolicy policy) {
  // Drawn from the typed events and the report's phases. Each phase slice is added at the first
  // phase-changing event at or after its end, where the event log shows the change, so slices,
  // failure instants and checkpoint slices come out in time order.
  sim::TraceWriter w;
  constexpr int kPid = 1, kPhases = 1, kCheckpoints = 2, kWrites = 3, kPeerCopies = 4;
  w.SetProcessName(kPid, "run");
  w.SetThreadName(kPid, kPhases, "phase");
  w.SetThreadName(kPid, kCheckpoints, "checkpoint stalls");
  w.SetThreadName(kPid, kWrites, "background writes to storage");
  w.SetThreadName(kPid, kPeerCopies, "peer-memory copies");
  for (int tid = kPhases; tid <= kPeerCopies; ++tid) w.SetThreadSortIndex(kPid, tid, tid);
  size_t next_phase = 0;
  auto phases_until = [&](sim::Time t) {
    for (; next_phase < r.phases.size() && r.phases[next_phase].end <= t; ++next_phase) {
      const run::RunPhase& p = r.phases[next_phase];
      w.Complete(run::RunPhaseName(p.kind), "run", kPid, kPhases, p.start, p.end - p.start);
    }
  };
  const checkpoint::CheckpointCosts& k = r.checkpoint_costs;
  for (const run::RunEvent& e : r.events) {
    switch (e.kind) {
      case run::RunEventKind::kFailure:
        w.Instant(e.what, "failure", kPid, kPhases, e.at);
        phases_until(e.at);
        break;
      case run::RunEventKind::kDetected:
      case run::RunEventKind::kWaiting:
      case run::RunEventKind::kRestart:
      case run::RunEventKind::kResumed:
      case run::RunEventKind::kEnd:
        phases_until(e.at);
        break;
      case run::RunEventKind::kCheckpointWritten:
        // SYNC: the whole write stalls training and ends now.
        w.Complete("checkpoint stall (write)", "checkpoint", kPid, kCheckpoints, e.at - e.duration,
                   e.duration);
        break;
      case run::RunEventKind::kCheckpointCompleted:
      case run::RunEventKind::kPeerCopyCompleted: {
        const bool peer = e.kind == run::RunEventKind::kPeerCopyCompleted;
        const sim::Time began = e.at - e.duration;
        w.Complete(peer ? "peer copy" : "write to storage", "checkpoint", kPid,
                   peer ? kPeerCopies : kWrites, began, e.duration);
        // The snapshot stall precedes the background phase; draw it once per checkpoint (for
        // IN_MEMORY before the peer copy, for ASYNC before the write).
        if (peer == (policy == checkpoint::CheckpointPolicy::kInMemory)) {
          w.Complete("checkpoint stall (snapshot)", "checkpoint", kPid, kCheckpoints,
                     began - k.snapshot, k.snapshot);
        }
        break;
      }
      default:
        break;
    }
    if (e.kind == run::RunEventKind::kEnd) break;
  }
  phases_until(sim::Time::Max());
  return w.ToJson();
}

}  // namespace trainsim::cli::report
