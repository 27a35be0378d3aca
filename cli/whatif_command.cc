#include "cli/whatif_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/monte_carlo.h"
#include "checkpoint/whatif.h"
#include "cli/commands.h"
#include "scenarios/run_config.h"
#include "scenarios/step_config.h"
#include "sim/time.h"

namespace trainsim::cli {

nlohmann::json RunReportJson(const checkpoint::RunReport& r) {
  const checkpoint::Breakdown& b = r.breakdown;
  nlohmann::json j;
  j["wall_time_s"] = r.wall_time.seconds();
  j["steps"] = r.total_steps;
  j["goodput"] = r.goodput;
  j["ettr"] = r.ettr;
  j["failures"] = r.failures;
  nlohmann::json by_cause = nlohmann::json::object();
  for (const auto& [cause, n] : r.failures_by_cause) by_cause[cause] = n;  // std::map: sorted
  j["failures_by_cause"] = by_cause;
  j["checkpoints"] = r.checkpoints;
  j["persistent_checkpoints"] = r.persistent_checkpoints;
  j["checkpoint_interval"] = r.interval_used.ToString();
  j["lost_work_s"] = b.lost.seconds();
  j["downtime_s"] = (b.detection + b.restart + b.waiting).seconds();
  j["gpu_hours"] = r.gpu_hours;
  j["cost_usd"] = r.cost_usd;
  j["breakdown_s"] = {
      {"useful", b.useful.seconds()},   {"exposed_comm", b.exposed_comm.seconds()},
      {"bubble", b.bubble.seconds()},   {"checkpoint_stall", b.checkpoint_stall.seconds()},
      {"lost", b.lost.seconds()},       {"detection", b.detection.seconds()},
      {"restart", b.restart.seconds()}, {"waiting", b.waiting.seconds()}};
  return j;
}

nlohmann::json StatJson(const checkpoint::Stat& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

namespace {

struct WhatIfOptions {
  ScenarioOptions scenario;
  std::vector<std::string> fail;
  std::vector<std::string> slow;
  bool events = false;
  int64_t trial = 0;
  int64_t trials = 0;  // > 0: also the distribution of the delta over trials [0, trials)
};

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A time of day in the run, to the millisecond: "16h15m54.958s".
std::string At(sim::Time t) {
  return sim::FormatDuration(sim::Time::Millis((t.nanos() + 500000) / 1000000));
}

std::string Signed(double seconds) {
  return (seconds > 0   ? "+"
          : seconds < 0 ? "-"
                        : "") +
         sim::FormatSecondsHuman(seconds < 0 ? -seconds : seconds);
}

std::string Row(const std::string& label, const std::string& a, const std::string& b,
                const std::string& d) {
  auto pad = [](std::string s, size_t n) {
    if (s.size() < n) s.resize(n, ' ');
    return s;
  };
  return "  " + pad(label, 33) + pad(a, 14) + pad(b, 14) + d + "\n";
}

using checkpoint::Stat;
using checkpoint::StatOf;  // sim/stats.h's percentile rule, shared with `trainsim run --trials`

// The added fault's failure record in the what-if run (scheduled, at its time), if any.
const checkpoint::FailureRecord* RecordOf(const checkpoint::RunReport& r,
                                          const checkpoint::ScheduledFault& f) {
  for (const checkpoint::FailureRecord& rec : r.failure_records) {
    if (rec.at == f.at && rec.cause.rfind("scheduled", 0) == 0) return &rec;
  }
  return nullptr;
}

std::string RestoredText(const checkpoint::FailureRecord& rec) {
  if (rec.restored_checkpoint <= 0) return "training restarted from step 0 (no checkpoint yet)";
  return "restored checkpoint #" + std::to_string(rec.restored_checkpoint) + " (step " +
         std::to_string(rec.restored_step) + ", completed at " +
         At(rec.restored_checkpoint_written_at) + ", from " +
         (rec.restored_from_peer_memory ? "peer memory" : "storage") + ")";
}

nlohmann::json AddedJson(const checkpoint::ScheduledFault& f, const checkpoint::RunReport& w) {
  nlohmann::json j;
  j["fault"] = f.Describe();
  j["at_s"] = f.at.seconds();
  const checkpoint::FailureRecord* rec = RecordOf(w, f);
  j["interrupted_training"] = rec != nullptr;
  if (rec) {
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

Result<std::vector<checkpoint::ScheduledFault>> ParseAdded(const WhatIfOptions& o,
                                                           const scenarios::ResolvedScenario& r) {
  std::vector<checkpoint::ScheduledFault> out;
  auto add = [&](const std::string& spec, const std::string& flag) -> Status {
    Result<pb::Fault> f = scenarios::ParseFaultSpec(spec);
    if (!f.ok()) return f.status().WithPrefix(flag);
    if (flag == "--slow" && f->kind() != pb::Fault::STRAGGLER &&
        !(f->kind() == pb::Fault::LINK && f->has_degrade() && f->degrade() < 1)) {
      return Status::InvalidArgument(
          "--slow " + spec +
          ": expected a slowdown, gpu:IDxFACTOR@TIME+DURATION (e.g. gpu:5x1.3@1h+4h) or a "
          "degraded link, link:IDxFRACTION_LOST@TIME+DURATION");
    }
    TRAINSIM_RETURN_IF_ERROR(scenarios::ValidateFault(f.value(), r, flag + " " + spec));
    scenarios::ResolvedFault rf;
    rf.fault = f.value();
    Result<sim::Time> at = sim::ParseDuration(f->at());
    if (!at.ok()) return at.status().WithPrefix(flag + " " + spec);
    rf.at = at.value();
    if (!f->duration().empty()) {
      Result<sim::Time> d = sim::ParseDuration(f->duration());
      if (!d.ok()) return d.status().WithPrefix(flag + " " + spec);
      rf.duration = d.value();
    }
    Result<checkpoint::ScheduledFault> sf = scenarios::MakeScheduledFault(rf);
    if (!sf.ok()) return sf.status().WithPrefix(flag + " " + spec);
    out.push_back(sf.value());
    return Status::Ok();
  };
  for (const std::string& s : o.fail) TRAINSIM_RETURN_IF_ERROR(add(s, "--fail"));
  for (const std::string& s : o.slow) TRAINSIM_RETURN_IF_ERROR(add(s, "--slow"));
  if (out.empty()) {
    return Status::InvalidArgument(
        "whatif needs at least one --fail (e.g. --fail gpu:37@16h) or --slow (e.g. --slow "
        "gpu:5x1.3@1h+4h)");
  }
  return out;
}

std::string FormatTable(const scenarios::ResolvedScenario& r,
                        const std::vector<checkpoint::ScheduledFault>& added,
                        const checkpoint::WhatIfReport& w, int64_t trial) {
  const checkpoint::RunReport& a = w.baseline;
  const checkpoint::RunReport& b = w.whatif;
  std::string out = "whatif: " + r.scenario.name() + "\n";
  for (const checkpoint::ScheduledFault& f : added) out += "  added: " + f.Describe() + "\n";
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
    out += Row(label, sim::FormatSecondsHuman(x), sim::FormatSecondsHuman(y), Signed(y - x));
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
  out += Row("goodput", Fmt("%.2f%%", 100 * a.goodput), Fmt("%.2f%%", 100 * b.goodput),
             Fmt("%+.2f pp", 100 * (b.goodput - a.goodput)));
  out += Row("ETTR", Fmt("%.2f%%", 100 * a.ettr), Fmt("%.2f%%", 100 * b.ettr),
             Fmt("%+.2f pp", 100 * (b.ettr - a.ettr)));
  out += Row("failures", std::to_string(a.failures), std::to_string(b.failures),
             Fmt("%+.0f", double(b.failures - a.failures)));
  out += Row("checkpoints", std::to_string(a.checkpoints), std::to_string(b.checkpoints),
             Fmt("%+.0f", double(b.checkpoints - a.checkpoints)));
  out += Row("cost (USD)", Fmt("%.0f", a.cost_usd), Fmt("%.0f", b.cost_usd),
             Fmt("%+.0f", b.cost_usd - a.cost_usd));
  out += "\n";
  for (const checkpoint::ScheduledFault& f : added) {
    const checkpoint::FailureRecord* rec = RecordOf(b, f);
    out += f.Describe() + ": ";
    if (!rec) {
      out += "slows the cluster while it lasts (no restart)\n";
      continue;
    }
    out += sim::FormatSecondsHuman(rec->lost.seconds()) + " of work lost; " + RestoredText(*rec) +
           "; detected at " + At(rec->detected_at);
    if (!rec->resumed_at.is_max()) {
      out += ", training resumed at " + At(rec->resumed_at);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

void AddWhatIfCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "Run the scenario with and without added faults, side by side: extra wall time, lost "
      "work, downtime, extra cost, the checkpoint restored and when training resumed");
  AddScenarioOptions(cmd, &opts->scenario);
  cmd->add_option("--fail", opts->fail,
                  "Add a failure KIND:ID@TIME, e.g. gpu:37@16h, node:3@2d, nic:12@1h, "
                  "link:5@2h, hang:9@3h, software@3h (repeatable)")
      ->type_name("SPEC");
  cmd->add_option("--slow", opts->slow,
                  "Add a slowdown: gpu:IDxFACTOR@TIME+DURATION, e.g. gpu:5x1.3@1h+4h, or a "
                  "degraded link link:IDxFRACTION_LOST@TIME+DURATION (repeatable)")
      ->type_name("SPEC");
  cmd->add_flag("--events", opts->events, "Also print the what-if run's event log");
  cmd->add_option("--trial", opts->trial,
                  "Which stochastic failure history to use (Monte Carlo trial index)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--trials", opts->trials,
                  "Also repeat the comparison over N failure histories (trials 0..N-1) and "
                  "report mean, p50, p90 and p99 of the extra wall time, cost and lost work")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->callback([opts, exit_code] {
    Result<scenarios::ResolvedScenario> r = LoadResolvedScenario(opts->scenario);
    if (!r.ok()) {
      *exit_code = ReportError(r.status());
      return;
    }
    Result<std::vector<checkpoint::ScheduledFault>> added = ParseAdded(*opts, r.value());
    if (!added.ok()) {
      *exit_code = ReportError(added.status());
      return;
    }
    Result<checkpoint::RunConfig> config = scenarios::MakeRunConfig(r.value());
    if (!config.ok()) {
      *exit_code = ReportError(config.status());
      return;
    }
    Result<step::StepConfig> step = scenarios::MakeStepConfig(r.value());
    if (!step.ok()) {
      *exit_code = ReportError(step.status());
      return;
    }
    checkpoint::StepTimeCache cache(scenarios::MakeStepTimeFn(step.value()));
    Result<checkpoint::WhatIfReport> w =
        checkpoint::SimulateWhatIf(config.value(), added.value(), cache, opts->trial);
    if (!w.ok()) {
      *exit_code = ReportError(w.status());
      return;
    }
    // Monte Carlo over failure histories: the same comparison for trials [0, N).
    std::vector<double> d_wall, d_cost, d_lost;
    for (int64_t k = 0; k < opts->trials; ++k) {
      Result<checkpoint::WhatIfReport> wk =
          checkpoint::SimulateWhatIf(config.value(), added.value(), cache, k);
      if (!wk.ok()) {
        *exit_code = ReportError(wk.status().WithPrefix("trial " + std::to_string(k)));
        return;
      }
      d_wall.push_back(wk->delta_wall_time_s);
      d_cost.push_back(wk->delta_cost_usd);
      d_lost.push_back(wk->delta_lost_work_s);
    }
    const Stat s_wall = StatOf(d_wall), s_cost = StatOf(d_cost), s_lost = StatOf(d_lost);
    if (opts->scenario.json) {
      nlohmann::json j;
      if (opts->trials > 0) {
        j["trials"] = {{"n", opts->trials},
                       {"delta_wall_time_s", StatJson(s_wall)},
                       {"delta_cost_usd", StatJson(s_cost)},
                       {"delta_lost_work_s", StatJson(s_lost)}};
      }
      j["baseline"] = RunReportJson(w->baseline);
      j["whatif"] = RunReportJson(w->whatif);
      j["delta"] = {{"wall_time_s", w->delta_wall_time_s},
                    {"cost_usd", w->delta_cost_usd},
                    {"lost_work_s", w->delta_lost_work_s}};
      j["steps"] = w->steps;
      j["trial"] = opts->trial;
      nlohmann::json faults = nlohmann::json::array();
      for (const checkpoint::ScheduledFault& f : added.value()) {
        faults.push_back(AddedJson(f, w->whatif));
      }
      j["added_faults"] = faults;
      if (opts->events) {
        nlohmann::json ev = nlohmann::json::array();
        for (const checkpoint::RunEvent& e : w->whatif.events) {
          ev.push_back({{"at_s", e.at.seconds()}, {"what", e.what}});
        }
        j["events"] = ev;
      }
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << FormatTable(r.value(), added.value(), w.value(), opts->trial);
      if (opts->trials > 0) {
        std::cout << "\nover " << opts->trials << " failure histories (trials 0.."
                  << opts->trials - 1 << "), the added faults cost:\n";
        std::cout << Row("", "mean", "p50", "p90 / p99");
        auto row = [](const std::string& label, const Stat& s, bool time) {
          auto f = [time](double v) { return time ? Signed(v) : Fmt("%+.0f", v); };
          return Row(label, f(s.mean), f(s.p50), f(s.p90) + " / " + f(s.p99));
        };
        std::cout << row("extra wall time", s_wall, true) << row("extra lost work", s_lost, true)
                  << row("extra cost (USD)", s_cost, false);
      }
      if (opts->events) {
        std::cout << "\nevents (whatif):\n";
        for (const checkpoint::RunEvent& e : w->whatif.events) {
          std::cout << "  " << At(e.at) << "  " << e.what << "\n";
        }
      }
    }
    *exit_code = kExitOk;
  });
}

}  // namespace trainsim::cli
