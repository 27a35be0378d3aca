// The run simulation's failures and recovery: interruption and rollback, detection, waiting for
// spares or repair, elastic shrink and rejoin, restart, and the scheduled and stochastic faults.
#include <algorithm>
#include <cctype>
#include <limits>
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
  // The newest persistent checkpoint still in storage at or below the SDC cap (else the start).
  Snapshot persistent = last_persistent_;
  if (persistent.index > restore_cap_) {
    persistent = Snapshot();
    for (auto it = retained_.rbegin(); it != retained_.rend(); ++it) {
      if (it->index <= restore_cap_) {
        persistent = *it;
        break;
      }
    }
  }
  if (c_.checkpoint.policy == CheckpointPolicy::kInMemory && last_inmem_ &&
      last_inmem_->index <= restore_cap_ && last_inmem_->step >= persistent.step &&
      PeerCopiesSurvive()) {
    return {*last_inmem_, true};
  }
  return {persistent, false};
}

bool RunSim::NodeInService(int node) const {
  if (node_failed_[node]) return false;
  for (int r : ReplicasOf(node)) {
    if (!replica_dropped_[r]) return true;
  }
  return false;
}

void RunSim::OnFailure(const FailureInput& f, sim::Time at) {
  if (phase_ == Phase::kDone) return;
  if (f.node >= 0 && !NodeInService(f.node)) return;  // already down or idle: nothing to stop
  const sim::Time now = engine_.now();
  if (f.eviction) {
    ++report_.evictions;
  } else {
    ++report_.failures;
    ++report_.failures_by_cause[f.cause];
  }
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
    EndSlowdownsOnNode(node);  // the slowdown belongs to the hardware that leaves
  }
  const Snapshot restore = ChooseRestore().first;
  Rollback(restore);
  FailureRecord rec;
  rec.at = at;
  rec.cause = f.cause;
  rec.cause_name = f.cause_name;
  rec.what = f.what;
  rec.needs_replacement = f.needs_replacement;
  rec.scheduled = f.scheduled;
  rec.eviction = f.eviction;
  rec.mechanism = f.mechanism;
  rec.detection_delay = f.detection_delay;
  rec.lost = cum_.lost - lost_before;
  report_.failure_records.push_back(std::move(rec));
  incident_records_.push_back(report_.failure_records.size() - 1);
  if (c_.record_events) {
    const std::string mech = checkpoint::DetectionMechanismName(f.mechanism);
    const std::string since =
        restore.index == 0 ? "the start of training" : "checkpoint #" + Str(restore.index);
    Log(RunEventKind::kFailure,
        f.what +
            (f.eviction ? " evicted ("
             : f.silent ? " corruption found ("
                        : " failed (") +
            f.cause_name + "; " + mech + ", detected after " +
            sim::FormatDuration(f.detection_delay) + "); " +
            sim::FormatSecondsHuman(rec.lost.seconds()) + " of work since " + since + " lost",
        {.failure = report_.failure_records.size() - 1});
  }
  if (phase_ == Phase::kWaiting) {
    phase_start_ = now;
    return TryRecover();
  }
  // Time still to wait for detection: SDC and evictions are already known when they act.
  const sim::Time wait = f.silent || f.eviction ? sim::Time() : at + f.detection_delay - now;
  if (phase_ != Phase::kDetecting) {
    BeginPhase(RunPhaseKind::kDetection);
    phase_ = Phase::kDetecting;
    phase_start_ = now;
    detect_end_ = now + wait;
    phase_event_ = engine_.Schedule(
        wait, [this] { OnDetected(); }, kPrioProgress);
  } else if (now + wait < detect_end_) {
    // A fault that shows itself sooner ends the detection phase sooner.
    engine_.Cancel(phase_event_);
    detect_end_ = now + wait;
    phase_event_ = engine_.Schedule(
        wait, [this] { OnDetected(); }, kPrioProgress);
  }
}

void RunSim::OnCorruption(const FailureInput& f) {
  if (phase_ == Phase::kDone) return;
  Corruption k;
  k.input = f;
  k.at = engine_.now();
  // A checkpoint whose snapshot started before now is clean (taken_ counts started ones).
  k.clean_max_index = taken_;
  corruptions_.push_back(k);
  ++active_corruptions_;
  const size_t i = corruptions_.size() - 1;
  if (c_.record_events)
    Log(RunEventKind::kCorruption, f.what + " silently corrupts training state (" + f.cause_name +
                                       "); the " + checkpoint::DetectionMechanismName(f.mechanism) +
                                       " finds it after " + sim::FormatDuration(f.detection_delay));
  engine_.Schedule(
      f.detection_delay, [this, i] { OnCorruptionDetected(i); }, kPrioFailure);
}

void RunSim::OnCorruptionDetected(size_t i) {
  if (phase_ == Phase::kDone || !corruptions_[i].active) return;
  Corruption k = corruptions_[i];
  corruptions_[i].active = false;
  --active_corruptions_;
  restore_cap_ = std::min(restore_cap_, k.clean_max_index);
  FailureInput f = k.input;
  if (f.node >= 0 && !NodeInService(f.node)) {
    // The GPU already left the job: the corruption still has to be rolled back (no node to stop).
    f.node = -1;
    f.needs_replacement = false;
  }
  OnFailure(f, k.at);
}

void RunSim::OnDetected() {
  cum_.detection += engine_.now() - phase_start_;
  std::string how;
  for (size_t i : incident_records_) {
    FailureRecord& rec = report_.failure_records[i];
    rec.detected_at = engine_.now();
    if (how.empty()) how = checkpoint::DetectionMechanismName(rec.mechanism);
  }
  if (c_.record_events) Log(RunEventKind::kDetected, "failure detected (" + how + ")");
  TryRecover();
}

void RunSim::TryRecover() {
  const sim::Time now = engine_.now();
  if (c_.recovery.policy == RecoveryPolicy::kElastic && !incident_nodes_.empty()) {
    std::vector<int> drop;
    for (int n : incident_nodes_) {
      for (int r : ReplicasOf(n)) {
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
        for (int r : ReplicasOf(n)) ++replica_missing_[r];
      }
      incident_nodes_.clear();
      state_dirty_ = true;
      if (c_.record_events)
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
      if (c_.record_events)
        Log(RunEventKind::kWaiting, "waiting for " + Str(nodes) + " replacement node(s)",
            {.count = nodes});
    }
    return;
  }
  StartRestart(true);
}

void RunSim::StartRestart(bool requeue) {
  auto [snap, from_peer] = ChooseRestore();
  const sim::Time lost_before = cum_.lost;
  Rollback(snap);
  // Peer copies lost to a later failure of the incident: the further rollback is its work lost.
  if (cum_.lost > lost_before && !incident_records_.empty()) {
    report_.failure_records[incident_records_.back()].lost += cum_.lost - lost_before;
  }
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
  if (c_.record_events)
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
  restore_cap_ = std::numeric_limits<int>::max();
  if (c_.record_events)
    Log(RunEventKind::kResumed, "training resumed at step " + Str(step_), {.step = step_});
  BeginPhase(RunPhaseKind::kTraining);
  ResetInterval();
  state_dirty_ = true;
  phase_ = Phase::kRunning;
  PlanBlock();
}

void RunSim::OnRepaired(int node) {
  if (c_.record_events)
    Log(RunEventKind::kRepaired, "node " + Str(node) + " repaired", {.node = node});
  if (node_elastic_[node]) {
    node_elastic_[node] = 0;
    node_failed_[node] = 0;
    for (int r : ReplicasOf(node)) {
      if (--replica_missing_[r] == 0 && replica_dropped_[r]) rejoin_pending_ = true;
    }
    // While the job is down waiting for replacements (too few replicas were left to go on), a
    // replica made whole rejoins at once: the restart that follows takes it, with no rollback
    // of its own, and the job need not wait for every node of the incident when the replicas
    // now whole meet min_dp (TryRecover drops the incident's replicas again).
    if (phase_ == Phase::kWaiting && rejoin_pending_) {
      const int back = TakeBackWholeReplicas();
      if (c_.record_events)
        Log(RunEventKind::kElasticRejoin,
            "elastic: " + Str(back) + " repaired replica(s) rejoin while the job waits; " +
                Str(live_) + " whole of " + Str(c_.dp),
            {.count = back});
      EndWaitAndRecover();
    }
    // Otherwise a rejoin waits for the next checkpoint (with no checkpointing it never finds
    // one to restart from, and waits).
    return;
  }
  ++pool_;
  if (phase_ == Phase::kWaiting) EndWaitAndRecover();
}

void RunSim::EndWaitAndRecover() {
  cum_.waiting += engine_.now() - phase_start_;
  phase_start_ = engine_.now();
  TryRecover();
}

int RunSim::TakeBackWholeReplicas() {
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
  return back;
}

void RunSim::Rejoin(const Snapshot& s) {
  const sim::Time lost_before = cum_.lost;
  Rollback(s);
  const sim::Time rolled_back = cum_.lost - lost_before;
  const int back = TakeBackWholeReplicas();
  if (c_.record_events)
    Log(RunEventKind::kElasticRejoin,
        "elastic: " + Str(back) + " repaired replica(s) rejoin; restart with " + Str(live_) +
            " from checkpoint #" + Str(s.index) + "; " + sim::FormatDuration(rolled_back) +
            " of work since it lost",
        {.checkpoint = s.index, .duration = rolled_back, .count = back});
  StartRestart(false);
}

void RunSim::OnWallTimeLimit() {
  // The job's time is up: the step in flight is lost, an unfinished phase counts as what it was.
  const sim::Time now = engine_.now();
  switch (phase_) {
    case Phase::kRunning:
    case Phase::kStall:
      InterruptProgress(/*time_up=*/true);
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
  if (c_.record_events)
    Log(RunEventKind::kEnd, "training.duration reached at step " + Str(step_), {.step = step_});
  EndPhases();
  phase_ = Phase::kDone;
}

void RunSim::ScheduleNextStochastic() {
  next_arrival_ = process_->Next();
  if (next_arrival_.at.is_max()) return;
  // Captures `this` alone so the handler fits std::function's inline buffer (no allocation per
  // failure; bench/README.md, engine section).
  engine_.ScheduleAt(
      next_arrival_.at,
      [this] {
        const FailureProcess::Arrival a = next_arrival_;
        const FailureCause& cause = process_->causes()[a.cause];
        FailureInput f;
        f.cause = cause_keys_[a.cause];
        f.cause_name = cause.name;
        f.what = "node " + Str(a.node);
        f.node = a.node;
        f.needs_replacement = cause.needs_replacement;
        f.repair_time = cause.repair_time;
        f.silent = cause.silent;
        f.mechanism = c_.recovery.MechanismFor(cause.detection);
        f.detection_delay = c_.recovery.DelayFor(cause.detection);
        if (!cause.needs_replacement) f.node = NodeInService(a.node) ? -1 : a.node;
        if (f.silent) {
          OnCorruption(f);
        } else {
          OnFailure(f, engine_.now());
        }
        if (phase_ != Phase::kDone) ScheduleNextStochastic();
      },
      kPrioFailure);
}

void RunSim::EndSlowdownsOnNode(int node) {
  for (auto* v : {&stragglers_, &links_}) {
    const bool straggler = v == &stragglers_;
    for (auto it = v->begin(); it != v->end();) {
      if (it->node != node) {
        ++it;
        continue;
      }
      if (c_.record_events)
        Log(RunEventKind::kSlowdownEnded,
            std::string(straggler ? "straggler on gpu " : "degraded link of nic ") + Str(it->id) +
                " ends: node " + Str(node) + " leaves the job");
      it = v->erase(it);
      state_dirty_ = true;
    }
  }
}

void RunSim::OnSlowdownStart(const ScheduledFault& f, int token) {
  const bool straggler = f.kind == ScheduledFault::Kind::kStraggler;
  const int node = straggler ? f.id / c_.gpus_per_node : f.id / c_.nics_per_node;
  if (!NodeInService(node) && node_failed_[node]) return;  // that hardware is out of the job
  (straggler ? stragglers_ : links_).push_back({token, f.id, f.factor, node});
  if (c_.record_events) Log(RunEventKind::kSlowdownStarted, f.Describe());
  StateChanged();
  const checkpoint::StragglerPolicy& p = c_.recovery.straggler;
  if (straggler && f.factor >= p.threshold) {
    engine_.Schedule(
        p.detect_after, [this, token] { OnStragglerCheck(token); }, kPrioState);
  }
}

void RunSim::OnSlowdownEnd(int token, bool straggler) {
  auto& v = straggler ? stragglers_ : links_;
  auto it =
      std::find_if(v.begin(), v.end(), [token](const ActiveFactor& a) { return a.token == token; });
  if (it == v.end()) return;  // already ended with its node
  v.erase(it);
  if (c_.record_events)
    Log(RunEventKind::kSlowdownEnded, straggler ? "straggler recovers" : "link restored");
  StateChanged();
}

void RunSim::OnStragglerCheck(int token) {
  if (phase_ == Phase::kDone) return;
  auto it = std::find_if(stragglers_.begin(), stragglers_.end(),
                         [token](const ActiveFactor& a) { return a.token == token; });
  if (it == stragglers_.end() || !NodeInService(it->node)) return;
  const checkpoint::StragglerPolicy& p = c_.recovery.straggler;
  const ActiveFactor a = *it;
  const bool evict = p.action == checkpoint::StragglerAction::kEvict;
  if (c_.record_events)
    Log(RunEventKind::kStragglerDetected,
        "straggler detected: gpu " + Str(a.id) + " slow for " +
            sim::FormatDuration(p.detect_after) + " (threshold " +
            std::to_string(p.threshold).substr(0, 4) + "x); " +
            (evict ? "evicting node " + Str(a.node) : std::string("ignored")),
        {.node = a.node});
  if (!evict) return;
  // Operators evict at a checkpoint boundary so that nothing is rolled back: wait for the next
  // checkpoint to complete (at once when the run does not checkpoint).
  if (interval_.kind == CheckpointInterval::Kind::kNever) return Evict(a);
  evict_tokens_.push_back(token);
}

bool RunSim::EvictPending() {
  if (evict_tokens_.empty()) return false;
  std::vector<int> tokens;
  tokens.swap(evict_tokens_);
  bool evicted = false;
  for (int token : tokens) {
    auto it = std::find_if(stragglers_.begin(), stragglers_.end(),
                           [token](const ActiveFactor& a) { return a.token == token; });
    if (it == stragglers_.end() || !NodeInService(it->node)) continue;  // gone meanwhile
    Evict(*it);
    evicted = true;
  }
  return evicted;
}

void RunSim::Evict(ActiveFactor a) {
  const checkpoint::StragglerPolicy& p = c_.recovery.straggler;
  FailureInput f;
  f.cause = "STRAGGLER_EVICTION";
  f.cause_name = "straggler eviction";
  f.what = "node " + Str(a.node) + " (straggling gpu " + Str(a.id) + ")";
  f.node = a.node;
  f.needs_replacement = true;
  f.eviction = true;
  f.repair_time = c_.recovery.scheduled_repair_time;
  f.mechanism = checkpoint::DetectionMechanism::kStepTime;
  f.detection_delay = p.detect_after;
  OnFailure(f, engine_.now());
}

void RunSim::ScheduleFaults() {
  using K = ScheduledFault::Kind;
  for (const ScheduledFault& f : c_.faults) {
    if (f.kind == K::kLinkDegraded || f.kind == K::kStraggler) {
      const bool straggler = f.kind == K::kStraggler;
      const int token = next_token_++;
      engine_.ScheduleAt(
          f.at, [this, f, token] { OnSlowdownStart(f, token); }, kPrioState);
      if (f.duration > sim::Time()) {
        engine_.ScheduleAt(
            f.at + f.duration, [this, token, straggler] { OnSlowdownEnd(token, straggler); },
            kPrioState);
      }
      continue;
    }
    FailureInput in;
    in.scheduled = true;
    in.cause = "SCHEDULED_" + std::string(f.KindName());  // apart from the stochastic causes
    in.cause_name = "scheduled " + std::string(f.KindName());
    for (char& ch : in.cause_name) ch = static_cast<char>(std::tolower(ch));
    in.needs_replacement = f.kind != K::kSoftwareHang && f.kind != K::kHang;
    in.repair_time = c_.recovery.scheduled_repair_time;
    in.mechanism = c_.recovery.MechanismFor(f.NaturalDetection());
    in.detection_delay = c_.recovery.DelayFor(f.NaturalDetection());
    switch (f.kind) {
      case K::kGpu:
      case K::kSdc:
        in.node = f.id / c_.gpus_per_node;
        in.what = "gpu " + Str(f.id) + " (node " + Str(in.node) + ")";
        in.silent = f.kind == K::kSdc;
        break;
      case K::kNode:
        in.node = f.id;
        in.what = "node " + Str(f.id);
        break;
      case K::kHang:
        in.what = "gpu " + Str(f.id) + " (node " + Str(f.id / c_.gpus_per_node) + ") hang";
        break;
      case K::kNic:
      case K::kLinkDown:
        in.node = f.id / c_.nics_per_node;
        in.what = std::string(f.kind == K::kNic ? "nic " : "link ") + Str(f.id) + " (node " +
                  Str(in.node) + ")";
        break;
      default:
        in.cause_name = "scheduled software crash";
        in.what = "software";
        break;
    }
    if (in.silent) {
      engine_.ScheduleAt(
          f.at, [this, in] { OnCorruption(in); }, kPrioFailure);
    } else {
      engine_.ScheduleAt(
          f.at, [this, in] { OnFailure(in, engine_.now()); }, kPrioFailure);
    }
  }
}

}  // namespace trainsim::run::detail
