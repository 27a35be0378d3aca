// The run simulation's failures and recovery: interruption and rollback, detection, waiting for
// spares or repair, elastic shrink and rejoin, restart, and the scheduled and stochastic faults.
#include <algorithm>
#include <string>

#include "run/run_sim.h"

namespace trainsim::run::detail {

using checkpoint::CheckpointInterval;
using checkpoint::CheckpointPolicy;
using checkpoint::RecoveryConfig;
using checkpoint::RecoveryPolicy;

using checkpoint::FailureCause;
using checkpoint::FailureProcess;

bool RunSim::PeerCopiesSurvive() const {
  if (c_.nodes < 2) return false;
  for (int n : host_memory_lost_list_) {
    if (host_memory_lost_[(n + 1) % c_.nodes]) return false;  // n's copy lived on n+1
  }
  return true;
}

std::pair<Snapshot, bool> RunSim::ChooseRestore() const {
  if (c_.checkpoint.policy == CheckpointPolicy::kInMemory && last_inmem_ &&
      last_inmem_->step >= last_persistent_.step && PeerCopiesSurvive()) {
    return {*last_inmem_, true};
  }
  return {last_persistent_, false};
}

bool RunSim::NodeInService(int node) const {
  if (node_failed_[node]) return false;
  for (int r : node_replicas_[node]) {
    if (!replica_dropped_[r]) return true;
  }
  return false;
}

void RunSim::OnFailure(const FailureInput& f) {
  if (phase_ == Phase::kDone) return;
  if (f.node >= 0 && !NodeInService(f.node)) return;  // already down or idle: nothing to stop
  const sim::Time now = engine_.now();
  ++report_.failures;
  ++report_.failures_by_cause[f.cause];
  const sim::Time lost_before = cum_.lost;
  switch (phase_) {
    case Phase::kRunning:
    case Phase::kStall:
      InterruptProgress();
      break;
    case Phase::kWaiting:
      cum_.waiting += now - phase_start_;
      break;
    case Phase::kRestarting:
      engine_.Cancel(phase_event_);
      cum_.restart += now - phase_start_;
      break;
    default:
      break;
  }
  AbortBackground();
  if (f.needs_replacement) {
    node_failed_[f.node] = 1;
    incident_nodes_.push_back(f.node);
    if (!host_memory_lost_[f.node]) {
      host_memory_lost_[f.node] = 1;
      host_memory_lost_list_.push_back(f.node);
    }
    const int node = f.node;
    engine_.Schedule(
        f.repair_time, [this, node] { OnRepaired(node); }, kPrioProgress);
  }
  Rollback(ChooseRestore().first);
  FailureRecord rec;
  rec.at = now;
  rec.cause = f.cause;
  rec.what = f.what;
  rec.needs_replacement = f.needs_replacement;
  rec.scheduled = f.scheduled;
  rec.lost = cum_.lost - lost_before;
  report_.failure_records.push_back(rec);
  incident_records_.push_back(report_.failure_records.size() - 1);
  Log(RunEventKind::kFailure,
      f.what + " failed (" + f.cause + "); " + sim::FormatDuration(rec.lost) +
          " of work since the last checkpoint lost",
      {.failure = report_.failure_records.size() - 1});
  if (phase_ == Phase::kWaiting) {
    phase_start_ = now;
    return TryRecover();
  }
  if (phase_ != Phase::kDetecting) {
    BeginPhase(RunPhaseKind::kDetection);
    phase_ = Phase::kDetecting;
    phase_start_ = now;
    phase_event_ = engine_.Schedule(
        c_.recovery.DetectionDelay(), [this] { OnDetected(); }, kPrioProgress);
  }
}

void RunSim::OnDetected() {
  cum_.detection += engine_.now() - phase_start_;
  for (size_t i : incident_records_) report_.failure_records[i].detected_at = engine_.now();
  Log(RunEventKind::kDetected, "failure detected");
  TryRecover();
}

void RunSim::TryRecover() {
  const sim::Time now = engine_.now();
  if (c_.recovery.policy == RecoveryPolicy::kElastic && !incident_nodes_.empty()) {
    std::vector<int> drop;
    for (int n : incident_nodes_) {
      for (int r : node_replicas_[n]) {
        if (!replica_dropped_[r] && std::find(drop.begin(), drop.end(), r) == drop.end()) {
          drop.push_back(r);
        }
      }
    }
    if (live_ - static_cast<int>(drop.size()) >= std::max(1, c_.recovery.min_dp)) {
      for (int r : drop) replica_dropped_[r] = 1;
      live_ -= static_cast<int>(drop.size());
      for (int n : incident_nodes_) {
        node_elastic_[n] = 1;
        for (int r : node_replicas_[n]) ++replica_missing_[r];
      }
      incident_nodes_.clear();
      state_dirty_ = true;
      Log(RunEventKind::kElasticShrink,
          "elastic: continuing with " + Str(live_) + " of " + Str(c_.dp) +
              " data-parallel replicas",
          {.count = live_});
    }
  }
  // Take replacements from the pool (repaired nodes under WAIT_FOR_REPAIR).
  while (!incident_nodes_.empty() && pool_ > 0) {
    --pool_;
    node_failed_[incident_nodes_.back()] = 0;  // the slot is refilled by a replacement
    incident_nodes_.pop_back();
  }
  if (!incident_nodes_.empty()) {
    if (phase_ != Phase::kWaiting) {
      BeginPhase(RunPhaseKind::kWaiting);
      phase_ = Phase::kWaiting;
      phase_start_ = now;
      const int nodes = static_cast<int>(incident_nodes_.size());
      Log(RunEventKind::kWaiting, "waiting for " + Str(nodes) + " replacement node(s)",
          {.count = nodes});
    }
    return;
  }
  StartRestart(true);
}

void RunSim::StartRestart(bool requeue) {
  auto [snap, from_peer] = ChooseRestore();
  Rollback(snap);
  const RecoveryConfig& r = c_.recovery;
  const int64_t live_gpus = int64_t{live_} * c_.tp * c_.pp;
  sim::Time d = (requeue ? r.scheduler_requeue : sim::Time()) + r.process_start + r.comm_init_base +
                r.comm_init_per_gpu * live_gpus;
  if (snap.index > 0) d += from_peer ? costs_.peer_load : costs_.storage_load;
  for (size_t i : incident_records_) {
    FailureRecord& rec = report_.failure_records[i];
    rec.restored_checkpoint = snap.index;
    rec.restored_step = snap.step;
    rec.restored_checkpoint_written_at = snap.written_at;
    rec.restored_from_peer_memory = from_peer;
  }
  Log(RunEventKind::kRestart,
      "restarting from " +
          (snap.index == 0 ? std::string("the start of training")
                           : "checkpoint #" + Str(snap.index) + " (step " + Str(snap.step) +
                                 ", written at " + sim::FormatDuration(snap.written_at) + ")" +
                                 (from_peer ? " in peer memory" : " in storage")) +
          ", takes " + sim::FormatDuration(d),
      {.step = snap.step, .checkpoint = snap.index, .duration = d, .from_peer = from_peer});
  BeginPhase(RunPhaseKind::kRestart);
  phase_ = Phase::kRestarting;
  phase_start_ = engine_.now();
  phase_event_ = engine_.Schedule(
      d, [this] { OnRestarted(); }, kPrioProgress);
}

void RunSim::OnRestarted() {
  cum_.restart += engine_.now() - phase_start_;
  for (size_t i : incident_records_) report_.failure_records[i].resumed_at = engine_.now();
  incident_records_.clear();
  Log(RunEventKind::kResumed, "training resumed at step " + Str(step_), {.step = step_});
  BeginPhase(RunPhaseKind::kTraining);
  ResetInterval();
  state_dirty_ = true;
  phase_ = Phase::kRunning;
  PlanBlock();
}

void RunSim::OnRepaired(int node) {
  Log(RunEventKind::kRepaired, "node " + Str(node) + " repaired", {.node = node});
  if (node_elastic_[node]) {
    node_elastic_[node] = 0;
    node_failed_[node] = 0;
    for (int r : node_replicas_[node]) {
      if (--replica_missing_[r] == 0 && replica_dropped_[r]) rejoin_pending_ = true;
    }
    // With no checkpointing a rejoin never finds a checkpoint to restart from; it waits.
    return;
  }
  ++pool_;
  if (phase_ == Phase::kWaiting) {
    cum_.waiting += engine_.now() - phase_start_;
    phase_start_ = engine_.now();
    TryRecover();
  }
}

void RunSim::Rejoin(const Snapshot& s) {
  Rollback(s);
  int back = 0;
  for (size_t r = 0; r < replica_dropped_.size(); ++r) {
    if (replica_dropped_[r] && replica_missing_[r] == 0) {
      replica_dropped_[r] = 0;
      ++back;
    }
  }
  live_ += back;
  rejoin_pending_ = false;
  state_dirty_ = true;
  Log(RunEventKind::kElasticRejoin,
      "elastic: " + Str(back) + " repaired replica(s) rejoin; restart with " + Str(live_),
      {.count = back});
  StartRestart(false);
}

void RunSim::OnWallTimeLimit() {
  // The job's time is up: the step in flight is lost, an unfinished phase counts as what it was.
  const sim::Time now = engine_.now();
  switch (phase_) {
    case Phase::kRunning:
    case Phase::kStall:
      InterruptProgress();
      break;
    case Phase::kDetecting:
      cum_.detection += now - phase_start_;
      break;
    case Phase::kWaiting:
      cum_.waiting += now - phase_start_;
      break;
    case Phase::kRestarting:
      cum_.restart += now - phase_start_;
      break;
    case Phase::kDone:
      return;
  }
  Log(RunEventKind::kEnd, "training.duration reached at step " + Str(step_), {.step = step_});
  EndPhases();
  phase_ = Phase::kDone;
}

void RunSim::ScheduleNextStochastic() {
  FailureProcess::Arrival a = process_->Next();
  if (a.at.is_max()) return;
  engine_.ScheduleAt(
      a.at,
      [this, a] {
        const FailureCause& cause = process_->causes()[a.cause];
        FailureInput f;
        f.cause = cause.name;
        f.what = "node " + Str(a.node);
        f.node = a.node;
        f.needs_replacement = cause.needs_replacement;
        f.repair_time = cause.repair_time;
        if (!cause.needs_replacement) f.node = NodeInService(a.node) ? -1 : a.node;
        OnFailure(f);
        if (phase_ != Phase::kDone) ScheduleNextStochastic();
      },
      kPrioFailure);
}

void RunSim::ScheduleFaults() {
  for (const ScheduledFault& f : c_.faults) {
    switch (f.kind) {
      case ScheduledFault::Kind::kGpu:
      case ScheduledFault::Kind::kNode:
      case ScheduledFault::Kind::kNic:
      case ScheduledFault::Kind::kSoftwareHang:
      case ScheduledFault::Kind::kHang: {
        FailureInput in;
        in.scheduled = true;
        in.needs_replacement =
            f.kind != ScheduledFault::Kind::kSoftwareHang && f.kind != ScheduledFault::Kind::kHang;
        in.repair_time = c_.recovery.scheduled_repair_time;
        if (f.kind == ScheduledFault::Kind::kGpu) {
          in.node = f.id / c_.gpus_per_node;
          in.cause = "scheduled gpu";
          in.what = "gpu " + Str(f.id) + " (node " + Str(in.node) + ")";
        } else if (f.kind == ScheduledFault::Kind::kNode) {
          in.node = f.id;
          in.cause = "scheduled node";
          in.what = "node " + Str(f.id);
        } else if (f.kind == ScheduledFault::Kind::kHang) {
          in.cause = "scheduled hang";
          in.what = "gpu " + Str(f.id) + " (node " + Str(f.id / c_.gpus_per_node) + ") hang";
        } else if (f.kind == ScheduledFault::Kind::kNic) {
          in.node = f.id / c_.nics_per_node;
          in.cause = "scheduled nic";
          in.what = "nic " + Str(f.id) + " (node " + Str(in.node) + ")";
        } else {
          in.cause = "scheduled software crash";
          in.what = "software";
        }
        engine_.ScheduleAt(
            f.at, [this, in] { OnFailure(in); }, kPrioFailure);
        break;
      }
      case ScheduledFault::Kind::kLinkDegraded:
      case ScheduledFault::Kind::kStraggler: {
        const bool straggler = f.kind == ScheduledFault::Kind::kStraggler;
        const int token = next_token_++;
        const std::string desc = f.Describe();
        engine_.ScheduleAt(
            f.at,
            [this, f, token, straggler, desc] {
              (straggler ? stragglers_ : links_).push_back({token, f.id, f.factor});
              Log(RunEventKind::kSlowdownStarted, desc);
              StateChanged();
            },
            kPrioState);
        if (f.duration > sim::Time()) {
          engine_.ScheduleAt(
              f.at + f.duration,
              [this, token, straggler] {
                auto& v = straggler ? stragglers_ : links_;
                v.erase(std::remove_if(v.begin(), v.end(),
                                       [token](const ActiveFactor& a) { return a.token == token; }),
                        v.end());
                Log(RunEventKind::kSlowdownEnded,
                    straggler ? "straggler recovers" : "link restored");
                StateChanged();
              },
              kPrioState);
        }
        break;
      }
    }
  }
}

}  // namespace trainsim::run::detail
