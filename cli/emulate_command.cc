// `trainsim emulate SCENARIO`: the scenario's training loop on real worker processes with real
// faults, and the run simulation's prediction of the same scaled run (emulate/emulate.h,
// docs/emulate.md).
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/report/html_pages.h"
#include "cli/report/html_report.h"
#include "cli/report/run_report.h"
#include "emulate/checkpoint_store.h"
#include "emulate/emulate.h"

namespace trainsim::cli {
namespace {

// Seconds and megabytes to the millisecond / kilobyte; counts (no unit) as whole numbers.
std::string Fmt(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, *unit != '\0' ? "%.3f%s" : "%.0f%s", v, unit);
  return buf;
}

void Line(const std::string& what, double measured, double predicted, bool has_pred,
          const char* unit) {
  char buf[160];
  if (has_pred) {
    const double diff = predicted != 0 ? (measured - predicted) / predicted * 100 : 0;
    std::snprintf(buf, sizeof buf, "  %-34s %12s %12s %+8.1f%%\n", what.c_str(),
                  Fmt(measured, unit).c_str(), Fmt(predicted, unit).c_str(), diff);
  } else {
    std::snprintf(buf, sizeof buf, "  %-34s %12s %12s\n", what.c_str(), Fmt(measured, unit).c_str(),
                  "-");
  }
  std::cout << buf;
}

double PredictedRestart(const run::RunReport& p) {
  double sum = 0;
  int n = 0;
  for (const auto& f : p.failure_records) {
    if (f.resumed_at.is_max()) continue;
    sum += (f.resumed_at - f.detected_at).seconds();
    ++n;
  }
  return n ? sum / n : 0;
}

// Checkpoints taken: IN_MEMORY counts every complete set of peer copies (the persisted ones
// among them), as the run simulation counts them; SYNC and ASYNC the committed manifests.
int Checkpoints(const emulate::EmulationResult& r) {
  return r.plan.policy == checkpoint::CheckpointPolicy::kInMemory ? r.memory_checkpoints
                                                                  : r.checkpoints;
}

nlohmann::json Json(const emulate::EmulationResult& r) {
  nlohmann::json doc;
  const auto& p = r.plan;
  doc["plan"] = {{"workers", p.workers},
                 {"steps", p.steps},
                 {"time_scale", p.time_scale},
                 {"compute_s", p.compute_s},
                 {"state_bytes", p.elements * 8},
                 {"checkpoint_every_steps", p.checkpoint_every},
                 {"checkpoint_policy", checkpoint::CheckpointPolicyName(p.policy)},
                 {"persistent_every", p.persistent_every},
                 {"keep_last", p.keep_last},
                 {"recovery_policy", checkpoint::RecoveryPolicyName(p.recovery)},
                 {"algorithm", emulate::AlgorithmName(p.algorithm)},
                 {"loss_check_every_steps", p.check_every},
                 {"notes", p.notes}};
  doc["measured"] = {{"wall_time_s", r.wall_s},
                     {"steps_executed", r.steps_executed},
                     {"start_step", r.start_step},
                     {"step_s", r.step_s},
                     {"compute_s", r.compute_s},
                     {"allreduce_s", r.comm_s},
                     {"checkpoints", Checkpoints(r)},
                     {"persistent_checkpoints", r.checkpoints},
                     {"checkpoint_write_s", r.checkpoint_write_s},
                     {"checkpoint_stall_s", r.checkpoint_stall_s},
                     {"restore_s", r.restore_s},
                     {"restart_s", r.restart_s},
                     {"bytes_moved", r.bytes_moved},
                     {"memory_checkpoints", r.memory_checkpoints},
                     {"peer_copy_s", r.peer_copy_s},
                     {"memory_restores", r.memory_restores},
                     {"world_schedule", r.schedule},
                     {"processes_started", r.processes_started},
                     {"generations", r.generations}};
  if (r.predicted_ok) {
    doc["predicted"] = {{"wall_time_s", r.predicted.wall_time.seconds()},
                        {"steps_executed", r.predicted.steps_executed},
                        {"steps_rolled_back", r.predicted.steps_rolled_back},
                        {"checkpoints", r.predicted.checkpoints},
                        {"persistent_checkpoints", r.predicted.persistent_checkpoints},
                        {"restart_s", PredictedRestart(r.predicted)}};
    doc["difference_pct"] =
        (r.wall_s - r.predicted.wall_time.seconds()) / r.predicted.wall_time.seconds() * 100;
  } else {
    doc["predicted"] = {{"error", r.prediction_error}};
  }
  doc["state_identical"] = r.state_identical;
  doc["state_hash"] = r.state_hash;
  doc["reference_hash"] = r.reference_hash;
  doc["skipped_manifests"] = r.skipped_manifests;
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& f : r.faults) {
    faults.push_back(
        {{"kind", f.unplanned ? "UNPLANNED" : f.planned.fault.KindName()},
         {"rank", f.planned.rank},
         {"at_s", f.injected_at_s},
         {"planned_at_s", f.planned.at_s},
         {"scenario_at_s", f.planned.fault.at.seconds()},
         {"mechanism",
          f.detected_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.detected_by)},
         {"expected_mechanism", checkpoint::DetectionMechanismName(f.planned.mechanism)},
         {"detection_bound_s", f.planned.bound_s},
         {"detected_after_s",
          f.detected_after_s < 0 ? nlohmann::json(nullptr) : nlohmann::json(f.detected_after_s)},
         {"lost_steps", f.lost_steps},
         {"restart_s", f.restart_s},
         {"restored_from",
          f.restored_from.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.restored_from)},
         {"world_after", f.world_after},
         {"restore_s", f.restore_s},
         {"source", f.planned.drawn ? "failures" : "faults"}});
  }
  doc["faults"] = faults;
  return doc;
}

void Text(const emulate::EmulationResult& r) {
  const auto& p = r.plan;
  std::printf(
      "emulation: %d workers, %lld steps, time scale %.4g (a step computes %.1f ms), "
      "%lld bytes of state, checkpoint every %lld steps (%s)\n",
      p.workers, static_cast<long long>(p.steps), p.time_scale, p.compute_s * 1e3,
      static_cast<long long>(p.elements * 8), static_cast<long long>(p.checkpoint_every),
      checkpoint::CheckpointPolicyName(p.policy));
  for (const std::string& n : p.notes) std::printf("  note: %s\n", n.c_str());
  std::printf("\nfaults:\n");
  for (const auto& f : r.faults) {
    std::printf(
        "  %-9s rank %d at %.3f s: ", f.unplanned ? "UNPLANNED" : f.planned.fault.KindName(),
        f.planned.rank, f.injected_at_s);
    if (f.detected_after_s >= 0 && f.restored_from.empty()) {
      std::printf(
          "detected by %s after %.3f s (bound %.3f s, %s), recovered together with the "
          "failure before it\n",
          f.detected_by.c_str(), f.detected_after_s, f.planned.bound_s,
          checkpoint::DetectionMechanismName(f.planned.mechanism));
    } else if (f.detected_after_s >= 0) {
      std::printf(
          "detected by %s after %.3f s (bound %.3f s, %s), %lld steps redone, restart "
          "%.3f s from %s (load %.3f s), %d workers%s\n",
          f.detected_by.c_str(), f.detected_after_s, f.planned.bound_s,
          checkpoint::DetectionMechanismName(f.planned.mechanism),
          static_cast<long long>(f.lost_steps), f.restart_s,
          f.restored_from.empty() ? "-" : f.restored_from.c_str(), f.restore_s, f.world_after,
          f.planned.drawn ? " (drawn from the failure model)" : "");
    } else {
      std::printf("a slowdown (not a failure)\n");
    }
  }
  for (const std::string& s : r.skipped_manifests) std::printf("  skipped %s\n", s.c_str());
  const bool hp = r.predicted_ok;
  const auto& q = r.predicted;
  std::printf("\n  %-34s %12s %12s %9s\n", "", "measured", "predicted", "diff");
  Line("wall time", r.wall_s, hp ? q.wall_time.seconds() : 0, hp, " s");
  Line("steps executed (incl. redone)", static_cast<double>(r.steps_executed),
       hp ? static_cast<double>(q.steps_executed) : 0, hp, "");
  int64_t redone = 0;
  for (const auto& f : r.faults) redone += f.lost_steps;
  Line("steps redone", static_cast<double>(redone),
       hp ? static_cast<double>(q.steps_rolled_back) : 0, hp, "");
  Line("checkpoints committed", Checkpoints(r), hp ? q.checkpoints : 0, hp, "");
  if (p.policy == checkpoint::CheckpointPolicy::kInMemory) {
    Line("  of them persisted to DIR", r.checkpoints, hp ? q.persistent_checkpoints : 0, hp, "");
  }
  Line("restart (detection to resume)", r.restart_s, hp ? PredictedRestart(q) : 0, hp, " s");
  Line("step (compute + all-reduce)", r.step_s, 0, false, " s");
  Line(std::string("  ") + emulate::AlgorithmName(p.algorithm) + " all-reduce", r.comm_s, 0, false,
       " s");
  Line("checkpoint stall / write", r.checkpoint_stall_s, 0, false, " s");
  Line("  shard write (fsync)", r.checkpoint_write_s, 0, false, " s");
  Line("checkpoint restore", r.restore_s, 0, false, " s");
  if (p.policy == checkpoint::CheckpointPolicy::kInMemory) {
    Line("in-memory checkpoints (peer copies)", r.memory_checkpoints, 0, false, "");
    Line("  copy of a shard to its peer", r.peer_copy_s, 0, false, " s");
    Line("  restores from peer memory", r.memory_restores, 0, false, "");
  }
  Line("bytes moved by the all-reduce", r.bytes_moved / 1e6, 0, false, " MB");
  if (!hp) std::printf("  prediction failed: %s\n", r.prediction_error.c_str());
  std::printf("\nfinal state: %s (%s, fault-free reference %s)\n",
              r.state_identical ? "identical to the fault-free run, bit for bit" : "DIFFERENT",
              r.state_hash.c_str(), r.reference_hash.c_str());
  std::printf(
      "processes started: %d, generations: %d, all reaped; world sizes %s (%s all-reduce)\n",
      r.processes_started, r.generations, r.schedule.c_str(), emulate::AlgorithmName(p.algorithm));
}

// --dir and --resume: the checkpoint directory, which must be new (or hold no manifest) for a
// fresh emulation and exist for --resume.
Status ResolveDirectory(const std::string& resume, emulate::EmulateOptions* e) {
  if (!resume.empty()) {
    if (!e->dir.empty() && e->dir != resume) {
      return Status::InvalidArgument("--dir and --resume name different directories");
    }
    e->dir = resume;
    e->resume = true;
  }
  if (e->dir.empty()) return Status::InvalidArgument("--dir DIR is required (the checkpoints)");
  std::error_code ec;
  if (e->resume && !std::filesystem::is_directory(e->dir, ec)) {
    return Status::InvalidArgument("--resume " + e->dir + ": no such directory");
  }
  if (!e->resume && std::filesystem::is_directory(e->dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(e->dir, ec)) {
      if (entry.path().filename().string().rfind("manifest-", 0) == 0) {
        return Status::InvalidArgument("--dir " + e->dir +
                                       " holds checkpoints of an earlier emulation: continue it "
                                       "with --resume " +
                                       e->dir + " or use an empty directory");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void AddEmulateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    ScenarioOptions scenario;
    emulate::EmulateOptions emu;
    std::string resume;
    std::string trace;
    bool no_spawn = false;
    std::string algorithm = "ring";
    std::string html;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "emulate",
      "Run the scenario's training loop on real worker processes (TCP ring all-reduce, "
      "real checkpoints), inject its faults with real signals, recover, and compare "
      "with the run simulation (docs/emulate.md)");
  AddScenarioOptions(cmd, &opts->scenario);
  auto& e = opts->emu;
  // 0 stands for the default inside EmulateOptions; given on the command line it is refused.
  cmd->add_option("--workers", e.workers, "Worker processes (default min(8, nodes))")
      ->check(CLI::Range(2, 64));
  cmd->add_option("--steps", e.steps, "Training steps (default min(the scenario's, 1000))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--duration", e.duration_s, "Fault-free wall seconds (sets --steps)")
      ->check(NumberAbove(0, 1e7, "wall seconds"));
  cmd->add_option("--time-scale", e.time_scale,
                  "Scenario seconds per wall second (default: a 25 ms step)")
      ->check(NumberAbove(0, 1e12, "scenario seconds per wall second"));
  cmd->add_option("--state-bytes", e.state_bytes,
                  "Bytes of model state each worker all-reduces per step (default 1 MiB)")
      ->check(CLI::Range(int64_t{1}, int64_t{256} << 20));
  cmd->add_option("--dir", e.dir, "Checkpoint directory (required unless --resume)")
      ->type_name("DIR");
  cmd->add_option("--resume", opts->resume,
                  "Continue the emulation whose checkpoints are in DIR from its newest manifest")
      ->type_name("DIR");
  cmd->add_option("--listen", e.listen, "Coordinator address (default 127.0.0.1:0)")
      ->type_name("HOST:PORT");
  cmd->add_flag("--no-spawn", opts->no_spawn,
                "Start no workers here: wait for `trainsim worker --coordinator HOST:PORT`s");
  cmd->add_option("--kill-during-checkpoint", e.kill_during_checkpoint,
                  "Also SIGKILL rank --kill-rank half way through writing checkpoint K (a torn "
                  "checkpoint)")
      ->type_name("K");
  cmd->add_option("--kill-rank", e.kill_during_checkpoint_rank, "See --kill-during-checkpoint");
  cmd->add_option("--trace", opts->trace,
                  "Write the measured run as a Perfetto/Chrome trace (the format of run --trace)")
      ->type_name("FILE");
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML report with plots (docs/report.md)")
      ->type_name("FILE")
      ->check(NonEmptyFileName());
  cmd->add_option("--timeout", e.timeout_s, "Give up after this many wall seconds (default 300)");
  cmd->add_option("--algorithm", opts->algorithm,
                  "All-reduce: ring (reduce-scatter + all-gather, the default) or tree (binary "
                  "reduce + broadcast, pipelined); each has its own fixed reduction order")
      ->type_name("ring|tree");
  cmd->callback([opts, exit_code] {
    auto& e = opts->emu;
    if (opts->algorithm == "ring" || opts->algorithm == "tree") {
      e.algorithm =
          opts->algorithm == "tree" ? emulate::Algorithm::kTree : emulate::Algorithm::kRing;
    } else {
      *exit_code = ReportError(Status::InvalidArgument(
          "--algorithm " + opts->algorithm + ": the emulation's all-reduce is ring or tree"));
      return;
    }
    if (Status st = ResolveDirectory(opts->resume, &e); !st.ok()) {
      *exit_code = ReportError(st);
      return;
    }
    e.spawn = !opts->no_spawn;
    sim::AtomicFileWriter trace;
    if (!opts->trace.empty()) {
      Status st =
          OpenOutput("--trace", opts->trace, {{"the input scenario", opts->scenario.path}}, &trace);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    Result<std::optional<report::WebLibraries>> html = PrepareHtml(
        opts->html, {{"the input scenario", opts->scenario.path}}, {{"--trace", opts->trace}});
    if (!html.ok()) {
      *exit_code = ReportError(html.status());
      return;
    }
    const std::optional<report::WebLibraries> web = std::move(*html);
    Result<scenarios::ResolvedScenario> resolved = LoadResolvedScenario(opts->scenario);
    if (!resolved.ok()) {
      *exit_code = ReportError(resolved.status());
      return;
    }
    Result<emulate::EmulationPlan> plan = emulate::MakePlan(*resolved, e);
    if (!plan.ok()) {
      *exit_code = ReportError(plan.status());
      return;
    }
    if (e.resume) {
      plan->faults.clear();
      plan->notes.push_back("--resume: the scenario's faults are not injected again");
    }
    e.worker_args = {opts->scenario.path};
    for (const std::string& s : opts->scenario.sets) {
      e.worker_args.push_back("--set");
      e.worker_args.push_back(s);
    }
    int interrupted_by = 0;
    Result<emulate::EmulationResult> result = emulate::RunEmulation(*plan, e, &interrupted_by);
    if (!result.ok()) {
      *exit_code = ReportError(result.status());
      // Workers reaped and nothing written: now die of the signal, as every other command does
      // (docs/commands.md), so that a shell sees 128 + its number and not "bad input".
      if (interrupted_by != 0) {
        std::cout.flush();
        std::signal(interrupted_by, SIG_DFL);
        std::raise(interrupted_by);
      }
      return;
    }
    emulate::Predict(&*result);
    if (trace.is_open()) {
      trace.Append(report::RunTraceJson(result->measured_timeline, result->plan.policy));
      Status st = trace.Prepare().WithPrefix("--trace");
      if (st.ok()) st = trace.Publish().WithPrefix("--trace");
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    const nlohmann::json doc = Json(*result);
    if (web) {
      Status st = report::WriteHtml(opts->html, report::EmulateHtmlPage(doc), *web);
      if (!st.ok()) {
        *exit_code = ReportError(st);
        return;
      }
    }
    if (opts->scenario.json) {
      std::cout << doc.dump(2) << "\n";
    } else {
      Text(*result);
    }
    *exit_code = result->state_identical ? kExitOk : kExitFailure;
  });
}

}  // namespace trainsim::cli
