#include "cli/report/whatif_report.h"

#include <string>

#include "cli/report/format.h"
#include "cli/report/run_report.h"
#include "sim/time.h"

namespace trainsim::cli::report {
namespace {

std::string Signed(double seconds) {
  std::string out = seconds > 0 ? "+" : seconds < 0 ? "-" : "";
  out += Human(seconds < 0 ? -seconds : seconds);
  return out;
}

std::string Row(const std::string& label, const std::string& a, const std::string& b,
                const std::string& d) {
  auto pad = [](std::string s, size_t n) {
    if (s.size() < n) s.resize(n, ' ');
    return s;
  };
  return "  " + pad(label, 33) + pad(a, 14) + pad(b, 14) + d + "\n";
}

// The added fault's failure record in the what-if run (scheduled, at its time), if any.
const run::FailureRecord* RecordOf(const run::RunReport& r, const run::ScheduledFault& f) {
  for (const run::FailureRecord& rec : r.failure_records) {
    if (rec.at == f.at && rec.scheduled && rec.cause == "SCHEDULED_" + std::string(f.KindName()))
      return &rec;
  }
  return nullptr;
}

std::string DetectionText(const run::FailureRecord& rec) {
  return std::string("detected by ") + checkpoint::DetectionMechanismName(rec.mechanism) +
         " after " + sim::FormatSecondsHuman(rec.detection_delay.seconds());
}

std::string RestoredText(const run::FailureRecord& rec) {
  if (rec.restored_checkpoint <= 0) {
    return "training restarted from step 0 (no checkpoint from before the fault was kept)";
  }
  return "restored checkpoint #" + std::to_string(rec.restored_checkpoint) + " (step " +
         std::to_string(rec.restored_step) + ", completed at " +
         At(rec.restored_checkpoint_written_at) + ", from " +
         (rec.restored_from_peer_memory ? "peer memory" : "storage") + ")";
}

nlohmann::json AddedJson(const run::ScheduledFault& f, const run::RunReport& w) {
  nlohmann::json j;
  j["fault"] = f.Describe();
  j["kind"] = f.KindName();
  j["at_s"] = f.at.seconds();
  const run::FailureRecord* rec = RecordOf(w, f);
  j["interrupted_training"] = rec != nullptr;
  if (rec) {
    j["mechanism"] = checkpoint::DetectionMechanismName(rec->mechanism);
    j["detected_after_s"] = rec->detection_delay.seconds();
    j["lost_work_s"] = rec->lost.seconds();
    j["restored_checkpoint"] = rec->restored_checkpoint;
    j["restored_step"] = rec->restored_step;
    j["restored_checkpoint_completed_at_s"] = rec->restored_checkpoint_written_at.seconds();
    j["restored_from_peer_memory"] = rec->restored_from_peer_memory;
    j["detected_at_s"] = rec->detected_at.seconds();
    if (!rec->resumed_at.is_max()) j["resumed_at_s"] = rec->resumed_at.seconds();
  }
  return j;
}

}  // namespace

std::string FormatWhatIfHeader(const scenarios::ResolvedScenario& r,
                               const std::vector<run::ScheduledFault>& added,
                               const run::WhatIfReport& w) {
  std::string out = "whatif: " + Printable(r.scenario.name()) + "\n";
  for (const run::ScheduledFault& f : added) out += "  added: " + f.Describe() + "\n";
  for (const std::string& n : w.notes) out += "  note: " + n + "\n";
  for (const std::string& n : w.warnings) out += "  warning: " + n + "\n";
  return out;
}

std::string FormatWhatIfTable(const scenarios::ResolvedScenario& r,
                              const std::vector<run::ScheduledFault>& added,
                              const run::WhatIfReport& w, int64_t trial) {
  const run::RunReport& a = w.baseline;
  const run::RunReport& b = w.whatif;
  std::string out;
  out += "  both sides train " + std::to_string(w.steps) + " steps";
  if (r.training_duration) {
    out += " (what the baseline trains in training.duration " +
           sim::FormatDuration(*r.training_duration) + ")";
  }
  out += "; same stochastic failure history (seed " + std::to_string(r.scenario.seed()) +
         ", trial " + std::to_string(trial) + ")\n\n";
  out += Row("", "baseline", "whatif", "delta");
  auto secs = [](sim::Time t) { return t.seconds(); };
  auto time_row = [&](const std::string& label, double x, double y) {
    out += Row(label, Human(x), Human(y), Signed(y - x));
  };
  time_row("wall time", secs(a.wall_time), secs(b.wall_time));
  time_row("lost work", secs(a.breakdown.lost), secs(b.breakdown.lost));
  time_row("downtime (detect+restart+wait)",
           secs(a.breakdown.detection + a.breakdown.restart + a.breakdown.waiting),
           secs(b.breakdown.detection + b.breakdown.restart + b.breakdown.waiting));
  time_row("  detection", secs(a.breakdown.detection), secs(b.breakdown.detection));
  time_row("  restart/restore", secs(a.breakdown.restart), secs(b.breakdown.restart));
  time_row("  waiting for spares/repair", secs(a.breakdown.waiting), secs(b.breakdown.waiting));
  time_row("checkpoint stalls", secs(a.breakdown.checkpoint_stall),
           secs(b.breakdown.checkpoint_stall));
  time_row("straggler/link slowdown", secs(a.breakdown.slowdown), secs(b.breakdown.slowdown));
  out += Row("ETTR", Fmt("%.2f%%", 100 * a.ettr), Fmt("%.2f%%", 100 * b.ettr),
             Fmt("%+.2f pp", 100 * (b.ettr - a.ettr)));
  out += Row("useful compute fraction", Fmt("%.2f%%", 100 * a.useful_compute_fraction),
             Fmt("%.2f%%", 100 * b.useful_compute_fraction),
             Fmt("%+.2f pp", 100 * (b.useful_compute_fraction - a.useful_compute_fraction)));
  out += Row("failures", std::to_string(a.failures), std::to_string(b.failures),
             Fmt("%+.0f", double(b.failures - a.failures)));
  out += Row("checkpoints", std::to_string(a.checkpoints), std::to_string(b.checkpoints),
             Fmt("%+.0f", double(b.checkpoints - a.checkpoints)));
  out += Row("cost (USD)", Fmt("%.0f", a.cost_usd), Fmt("%.0f", b.cost_usd),
             Fmt("%+.0f", b.cost_usd - a.cost_usd));
  out += "\n";
  for (size_t i = 0; i < added.size(); ++i) {
    const run::ScheduledFault& f = added[i];
    const run::FailureRecord* rec = RecordOf(b, f);
    out += f.Describe() + ": ";
    if (i < w.no_effect.size() && w.no_effect[i]) {
      out += "no effect (see the note or warning above)\n";
      continue;
    }
    if (!rec) {
      const run::UndetectedCorruption* u = nullptr;
      for (const run::UndetectedCorruption& c : b.undetected_corruptions) {
        if (f.kind == run::ScheduledFault::Kind::kSdc && c.at == f.at) u = &c;
      }
      out += u != nullptr ? "not found before training ended (the loss check would find it at " +
                                At(u->would_detect_at) + "): nothing was rolled back, and " +
                                CorruptText(*u, b.checkpoints) + "\n"
             : f.kind == run::ScheduledFault::Kind::kStraggler ||
                     f.kind == run::ScheduledFault::Kind::kLinkDegraded
                 ? "slows the cluster while it lasts (no restart)\n"
                 : "did not interrupt training (its node was already out of the job, or a "
                   "rollback wiped it first)\n";
      continue;
    }
    out += DetectionText(*rec) + "; " + Human(rec->lost.seconds()) + " of work lost; " +
           RestoredText(*rec) + "; detected at " + At(rec->detected_at);
    if (!rec->resumed_at.is_max()) {
      out += ", training resumed at " + At(rec->resumed_at);
    }
    out += "\n";
  }
  return out;
}

std::string FormatWhatIfTrials(const scenarios::WhatIfOutcome& o, int64_t trials) {
  std::string out = "\nover " + std::to_string(trials) + " failure histories (trials 0.." +
                    std::to_string(trials - 1) +
                    "; both sides see the same history in each), the added faults cost:\n";
  out += Row("", "mean", "p50", "p90 / p99");
  auto row = [](const std::string& label, const run::Stat& s, bool time) {
    auto f = [time](double v) { return time ? Signed(v) : Fmt("%+.0f", v); };
    return Row(label, f(s.mean), f(s.p50), f(s.p90) + " / " + f(s.p99));
  };
  return out + row("extra wall time", o.delta_wall_time_s, true) +
         row("extra lost work", o.delta_lost_work_s, true) +
         row("extra downtime", o.delta_downtime_s, true) +
         row("extra cost (USD)", o.delta_cost_usd, false) +
         "  (a single history can show a negative delta: later failures shift against "
         "checkpoints; the distribution is the answer)\n";
}

nlohmann::json WhatIfJson(const std::vector<run::ScheduledFault>& added,
                          const scenarios::WhatIfOutcome& o, int64_t trial, int64_t trials,
                          bool events) {
  const run::WhatIfReport& w = o.report;
  nlohmann::json j;
  if (trials > 0) {
    j["trials"] = {{"n", trials},
                   {"delta_wall_time_s", StatJson(o.delta_wall_time_s)},
                   {"delta_cost_usd", StatJson(o.delta_cost_usd)},
                   {"delta_lost_work_s", StatJson(o.delta_lost_work_s)},
                   {"delta_downtime_s", StatJson(o.delta_downtime_s)}};
  }
  j["baseline"] = RunReportJson(w.baseline);
  j["whatif"] = RunReportJson(w.whatif);
  j["delta"] = {{"wall_time_s", w.delta_wall_time_s},
                {"cost_usd", w.delta_cost_usd},
                {"lost_work_s", w.delta_lost_work_s},
                {"downtime_s", w.delta_downtime_s}};
  j["notes"] = w.notes;
  j["warnings"] = w.warnings;
  j["steps"] = w.steps;
  j["trial"] = trial;
  nlohmann::json faults = nlohmann::json::array();
  for (size_t i = 0; i < added.size(); ++i) {
    nlohmann::json f = AddedJson(added[i], w.whatif);
    f["no_effect"] = i < w.no_effect.size() && w.no_effect[i];
    faults.push_back(f);
  }
  j["added_faults"] = faults;
  if (events) j["events"] = EventsJson(w.whatif.events);
  return j;
}

}  // namespace trainsim::cli::report
