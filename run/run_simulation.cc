// The run simulation's driver: the RunSim main loop and report, the interval `auto` resolves to,
// and the public entry points.
//
// The model (docs/run-simulation.md has the full account). Training advances in whole blocks
// of iterations: between two events (a checkpoint due, a fault, a repair, a straggler starting
// or ending, a background write finishing) the step time is constant, so a block of n steps is
// one engine event and a 90-day run costs what a 1-hour run costs when nothing happens. A state
// change takes effect at the next step boundary. Checkpoints: SYNC stops training for the whole
// write; ASYNC for the copy to host memory, then writes in the background at the step time of
// the state with checkpoint_traffic_share set; IN_MEMORY snapshots, copies each node's shard to
// the next node's host memory in the background, and every persistent_every-th time also
// writes to storage. A checkpoint counts once its write (or peer copy) has completed. Faults:
// an interrupting fault moves everything since the checkpoint that will be restored to `lost`;
// detection, then recovery by policy (spares, repair, elastic), then a restart that costs
// requeue + process start + communicator init + checkpoint load. The stochastic failure history
// does not depend on what the run does (common random numbers across configs).
#include "run/run_simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "run/run_sim.h"
#include "sim/random.h"

namespace trainsim::run {

Result<double> CheckpointBlockingCostSeconds(const RunConfig& c, StepTimeCache& step_times) {
  Result<checkpoint::CheckpointCosts> costs =
      checkpoint::ComputeCheckpointCosts(c.checkpoint.spec, CheckpointHardwareOf(c));
  if (!costs.ok()) return costs.status();
  if (c.checkpoint.policy == checkpoint::CheckpointPolicy::kSync) {
    return costs->persistent_write.seconds();
  }
  RunState healthy;
  healthy.live_dp_replicas = c.dp;
  Result<StepTiming> base = step_times.Get(healthy);
  if (!base.ok()) return base.status();
  // Extra wall time a background transfer of `length` at `share` costs: the steps it overlaps
  // run at the slowed step time.
  auto slowdown_cost = [&](sim::Time length, double share) -> Result<double> {
    RunState s = healthy;
    s.checkpoint_traffic_share = std::min(1.0, share);
    Result<StepTiming> slowed = step_times.Get(s);
    if (!slowed.ok()) return slowed.status();
    const double ratio = slowed->total().seconds() / base->total().seconds();
    return length.seconds() * (1.0 - 1.0 / ratio);
  };
  double delta = costs->snapshot.seconds();
  if (c.checkpoint.policy == checkpoint::CheckpointPolicy::kAsync) {
    Result<double> extra = slowdown_cost(costs->persistent_write, costs->background_write_share);
    if (!extra.ok()) return extra.status();
    return delta + extra.value();
  }
  Result<double> peer = slowdown_cost(costs->peer_copy, costs->peer_copy_traffic_share);
  if (!peer.ok()) return peer.status();
  Result<double> write = slowdown_cost(costs->persistent_write, costs->background_write_share);
  if (!write.ok()) return write.status();
  return delta + peer.value() + write.value() / c.checkpoint.persistent_every;
}

sim::Time BackgroundWriteBound(const RunConfig& c, const checkpoint::CheckpointCosts& costs) {
  switch (c.checkpoint.policy) {
    case checkpoint::CheckpointPolicy::kSync:
      return sim::Time();  // the write blocks training: nothing runs in the background
    case checkpoint::CheckpointPolicy::kAsync:
      return costs.persistent_write;
    case checkpoint::CheckpointPolicy::kInMemory:
      // Every persistent_every-th checkpoint also writes to storage, and no checkpoint starts
      // while a transfer of the previous one runs.
      return std::max(costs.peer_copy, costs.persistent_write);
  }
  return sim::Time();
}

namespace detail {

void RunSim::BeginPhase(RunPhaseKind kind) {
  if (!c_.record_events) return;
  const sim::Time now = engine_.now();
  if (now > open_phase_start_) report_.phases.push_back({open_phase_, open_phase_start_, now});
  open_phase_ = kind;
  open_phase_start_ = now;
}

void RunSim::EndPhases() {
  if (!c_.record_events || open_phase_start_.is_max()) return;
  const sim::Time now = engine_.now();
  if (now > open_phase_start_) report_.phases.push_back({open_phase_, open_phase_start_, now});
  open_phase_start_ = sim::Time::Max();  // closed: the run is over
}

// Why the run passed max_wall_time, in the user's terms: the duration asked for, failures that
// undo progress, or a run that is simply that long (a straggler, or the token/step budget).
std::string RunSim::MaxWallTimeMessage() const {
  std::string msg = "the run had not finished after " + sim::FormatDuration(c_.max_wall_time) +
                    " of simulated time (step " + Str(step_) +
                    (c_.total_steps > 0 ? " of " + Str(c_.total_steps) : std::string()) + ", " +
                    Str(report_.failures) + " failures): ";
  if (c_.wall_time_limit && *c_.wall_time_limit > c_.max_wall_time) {
    return msg + "training.duration (" + sim::FormatDuration(*c_.wall_time_limit) +
           ") is longer than the " + sim::FormatDuration(c_.max_wall_time) +
           " the run simulation covers; shorten it";
  }
  // Wall time that failures cost: work redone, detection, restarts, waiting for nodes.
  const sim::Time elapsed = cum_.Total();
  const sim::Time failure_cost = cum_.lost + cum_.detection + cum_.restart + cum_.waiting;
  if (report_.failures > 0 && failure_cost * 2 >= elapsed) {
    return msg +
           "failures undo progress faster than checkpoints save it; checkpoint more often, or "
           "lower the failure rate";
  }
  double slowest = 1.0;
  for (const ScheduledFault& f : c_.faults) {
    if (f.kind == ScheduledFault::Kind::kStraggler) slowest = std::max(slowest, f.factor);
  }
  std::string pace;
  if (step_ > 0) {
    const double days = c_.max_wall_time.seconds() / 86400.0 * static_cast<double>(c_.total_steps) /
                        static_cast<double>(step_);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", days);
    pace = " (at this pace the " + Str(c_.total_steps) + " steps take about " + buf + " days)";
  }
  std::string why = report_.failures > 0 ? "failures cost less than half of it: " : "";
  if (slowest >= 2.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", slowest);
    return msg + why + "the run is simply longer than " + sim::FormatDuration(c_.max_wall_time) +
           ": a straggler slows every step " + buf + "x" + pace +
           "; shorten the straggler's duration or lower its slowdown";
  }
  return msg + why + "the run is simply longer than " + sim::FormatDuration(c_.max_wall_time) +
         pace +
         "; the token or step budget (training.tokens, training.steps) is too large for "
         "this cluster";
}

Result<RunReport> RunSim::Run() {
  const int gpus = c_.nodes * c_.gpus_per_node;
  live_ = c_.dp;
  pool_ = c_.recovery.policy == checkpoint::RecoveryPolicy::kRestartOnSpare ? c_.spare_nodes : 0;
  node_failed_.assign(c_.nodes, 0);
  host_memory_lost_.assign(c_.nodes, 0);
  node_elastic_.assign(c_.nodes, 0);
  replica_dropped_.assign(c_.dp, 0);
  replica_missing_.assign(c_.dp, 0);
  // Megatron's rank order, TP innermost, then DP, then PP: dp index = (gpu / tp) % dp. A node's
  // GPUs cover the consecutive TP groups q0..q1, so its replicas are q % dp for those q.
  node_replica_begin_.assign(c_.nodes + 1, 0);
  node_replica_list_.clear();
  node_replica_list_.reserve(c_.nodes);
  for (int n = 0; n < c_.nodes; ++n) {
    node_replica_begin_[n] = static_cast<int>(node_replica_list_.size());
    const int first_gpu = n * c_.gpus_per_node;
    const int end_gpu = std::min((n + 1) * c_.gpus_per_node, gpus);
    for (int q = first_gpu / c_.tp; first_gpu < end_gpu && q <= (end_gpu - 1) / c_.tp; ++q) {
      const int r = q % c_.dp;
      const auto begin = node_replica_list_.begin() + node_replica_begin_[n];
      if (std::find(begin, node_replica_list_.end(), r) == node_replica_list_.end()) {
        node_replica_list_.push_back(r);
      }
    }
  }
  node_replica_begin_[c_.nodes] = static_cast<int>(node_replica_list_.size());
  if (stochastic_) {
    process_.emplace(c_.failures, c_.nodes,
                     sim::RandomStreams(c_.seed).Stream("trial/" + Str(trial_) + "/failures"));
    for (const checkpoint::FailureCause& cause : process_->causes()) {
      cause_keys_.push_back(CauseKey(cause.name));
    }
    ScheduleNextStochastic();
  }
  ScheduleFaults();
  if (c_.wall_time_limit) {
    engine_.ScheduleAt(
        *c_.wall_time_limit, [this] { OnWallTimeLimit(); }, kPrioEnd);
  }
  if (!c_.wall_time_limit || *c_.wall_time_limit > c_.max_wall_time) {
    engine_.ScheduleAt(
        c_.max_wall_time, [this] { Fail(Status::FailedPrecondition(MaxWallTimeMessage())); },
        kPrioEnd);
  }
  ResetInterval();
  phase_ = Phase::kRunning;
  PlanBlock();
  while (phase_ != Phase::kDone && engine_.Step()) {
  }
  if (!error_.ok()) return error_;
  if (phase_ != Phase::kDone) {
    return Status::Internal("run simulation stalled at " + sim::FormatDuration(engine_.now()) +
                            " with no pending event");
  }
  const sim::Time wall = engine_.now();
  EndPhases();
  for (const Corruption& k : corruptions_) {
    if (!k.active) continue;
    report_.undetected_corruptions.push_back(
        {k.input.what, k.at, k.at + k.input.detection_delay, k.clean_max_index + 1});
  }
  report_.wall_time = wall;
  report_.breakdown = cum_;
  report_.total_steps = step_;
  report_.checkpoint_costs = costs_;
  report_.interval_used = interval_;
  report_.interval_used_s = interval_.kind == checkpoint::CheckpointInterval::Kind::kTrainingTime
                                ? interval_.every.seconds()
                                : 0;
  if (wall > sim::Time()) {
    report_.useful_compute_fraction = cum_.useful.seconds() / wall.seconds();
    report_.ettr = (cum_.useful + cum_.exposed_comm + cum_.bubble).seconds() / wall.seconds();
  }
  const int billed_nodes = c_.nodes + (c_.bill_spares ? c_.spare_nodes : 0);
  report_.gpu_hours = double(billed_nodes) * c_.gpus_per_node * wall.seconds() / 3600.0;
  report_.cost_usd = report_.gpu_hours * c_.usd_per_gpu_hour;
  report_.distinct_step_states = cache_->distinct_states();
  if (report_.breakdown.Total() != wall ||
      report_.steps_executed - report_.steps_rolled_back != step_ ||
      (!c_.wall_time_limit && step_ != c_.total_steps)) {
    return Status::Internal("run accounting does not add up (a bug)");
  }
  return std::move(report_);
}

}  // namespace detail

Result<ResolvedInterval> ResolveInterval(const RunConfig& c, StepTimeCache& cache) {
  ResolvedInterval out;
  out.interval = c.checkpoint.interval;
  Result<checkpoint::CheckpointCosts> costs =
      checkpoint::ComputeCheckpointCosts(c.checkpoint.spec, CheckpointHardwareOf(c));
  if (!costs.ok()) return costs.status();
  out.background_write_s = BackgroundWriteBound(c, costs.value()).seconds();
  if (out.interval.kind != checkpoint::CheckpointInterval::Kind::kAuto) return out;
  const double m = ClusterMtbfSeconds(c);
  if (!std::isfinite(m)) {
    // No expected failures: Daly's τ is infinite.
    out.interval.kind = checkpoint::CheckpointInterval::Kind::kNever;
    return out;
  }
  Result<double> delta = CheckpointBlockingCostSeconds(c, cache);
  if (!delta.ok()) return delta.status();
  out.daly_s = checkpoint::DalyIntervalSeconds(*delta, m);
  out.interval.kind = checkpoint::CheckpointInterval::Kind::kTrainingTime;
  out.bound = "DALY";
  double every = out.daly_s;
  if (out.background_write_s > every) {
    every = out.background_write_s;
    out.bound = "BACKGROUND_WRITE";
  }
  out.interval.every = std::max(sim::Time::Nanos(1), sim::Time::FromSeconds(every));
  return out;
}

namespace detail {

// Runs one trial without the fault-after-end check (RunTrials does that check once).
Result<RunReport> SimulateRunUnchecked(const RunConfig& config, StepTimeCache& step_times,
                                       int64_t trial, bool stochastic) {
  Result<checkpoint::CheckpointCosts> costs =
      checkpoint::ComputeCheckpointCosts(config.checkpoint.spec, CheckpointHardwareOf(config));
  if (!costs.ok()) return costs.status();
  Result<ResolvedInterval> iv = ResolveInterval(config, step_times);
  if (!iv.ok()) return iv.status();
  RunSim sim(config, costs.value(), iv->interval, &step_times, trial, stochastic);
  Result<RunReport> r = sim.Run();
  if (!r.ok()) return r;
  r->interval_bound = iv->bound;
  r->background_write_s = iv->background_write_s;
  r->daly_interval_s = iv->daly_s;
  return r;
}

// Rejects scheduled faults at or after the end of the fault-free run.
Status CheckFaultsBeforeEnd(const RunConfig& config, StepTimeCache& step_times) {
  if (config.faults.empty() || config.wall_time_limit) return Status::Ok();  // see Validate
  RunConfig clean = config;
  clean.faults.clear();
  clean.record_events = false;
  Result<RunReport> base = SimulateRunUnchecked(clean, step_times, 0, /*stochastic=*/false);
  if (!base.ok()) return base.status();
  for (size_t i = 0; i < config.faults.size(); ++i) {
    if (config.faults[i].at >= base->wall_time) {
      return Status::InvalidArgument(
          "faults[" + std::to_string(i) + "] (" + config.faults[i].Describe() +
          ") is at or after the end of training: without faults the run ends at " +
          sim::FormatDuration(base->wall_time));
    }
  }
  return Status::Ok();
}

}  // namespace detail

Result<RunReport> SimulateRun(const RunConfig& config, StepTimeCache& step_times, int64_t trial) {
  TRAINSIM_RETURN_IF_ERROR(ValidateRunConfig(config));
  TRAINSIM_RETURN_IF_ERROR(detail::CheckFaultsBeforeEnd(config, step_times));
  return detail::SimulateRunUnchecked(config, step_times, trial, /*stochastic=*/true);
}

const char* RunPhaseName(RunPhaseKind kind) {
  switch (kind) {
    case RunPhaseKind::kTraining:
      return "training";
    case RunPhaseKind::kDetection:
      return "detection";
    case RunPhaseKind::kWaiting:
      return "waiting";
    case RunPhaseKind::kRestart:
      return "restart";
  }
  return "?";
}

}  // namespace trainsim::run
