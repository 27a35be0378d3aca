// The run simulation's progress: blocks of steps, cluster state changes, and checkpoints
// (stalls, background writes and peer copies, what counts as completed).
#include <algorithm>
#include <map>
#include <string>

#include "run/run_sim.h"

namespace trainsim::run::detail {

using checkpoint::CheckpointInterval;
using checkpoint::CheckpointPolicy;
using checkpoint::RecoveryPolicy;

Snapshot RunSim::TakeSnapshot(int index) const {
  Snapshot s;
  s.index = index;
  s.step = step_;
  s.useful = cum_.useful;
  s.comm = cum_.exposed_comm;
  s.bubble = cum_.bubble;
  s.slowdown = cum_.slowdown;
  s.stall = cum_.checkpoint_stall;
  return s;
}

void RunSim::AccountSteps(int64_t k) {
  if (k <= 0) return;
  cum_.useful += kept_.useful * k;
  cum_.exposed_comm += kept_.exposed_comm * k;
  cum_.bubble += kept_.bubble * k;
  cum_.slowdown += extra_ * k;
  since_ckpt_ += tau_ * k;
  step_ += k;
  report_.steps_executed += k;
}

void RunSim::Rollback(const Snapshot& s) {
  cum_.lost += (cum_.useful - s.useful) + (cum_.exposed_comm - s.comm) + (cum_.bubble - s.bubble) +
               (cum_.slowdown - s.slowdown) + (cum_.checkpoint_stall - s.stall);
  cum_.useful = s.useful;
  cum_.exposed_comm = s.comm;
  cum_.bubble = s.bubble;
  cum_.slowdown = s.slowdown;
  cum_.checkpoint_stall = s.stall;
  report_.steps_rolled_back += step_ - s.step;
  step_ = s.step;
  if (last_inmem_ && last_inmem_->index > s.index) last_inmem_.reset();
  // Checkpoints newer than `s` belong to the abandoned timeline.
  while (!retained_.empty() && retained_.back().index > s.index) retained_.pop_back();
  if (last_persistent_.index > s.index) {
    last_persistent_ = retained_.empty() ? Snapshot() : retained_.back();
  }
  // A corruption after `s` is wiped by the rollback.
  for (Corruption& k : corruptions_) {
    if (k.active && s.index <= k.clean_max_index) {
      k.active = false;
      --active_corruptions_;
    }
  }
}

namespace {
thread_local std::vector<Snapshot> spare_retained;  // RunSim::TakeSpareStorage's
}  // namespace

void RunSim::TakeSpareStorage() {
  retained_.swap(spare_retained);
  retained_.clear();
}

RunSim::~RunSim() {
  if (retained_.capacity() > spare_retained.capacity()) {
    retained_.clear();
    spare_retained.swap(retained_);
  }
}

void RunSim::KeepPersistent(const Snapshot& s) {
  last_persistent_ = s;
  ++report_.persistent_checkpoints;
  retained_.push_back(s);
  const int keep = c_.checkpoint.keep_last;
  if (keep == 0) PruneRetained();
  while (keep > 0 && static_cast<int>(retained_.size()) > keep) {
    const Snapshot old = retained_.front();
    retained_.erase(retained_.begin());
    if (c_.record_events)
      Log(RunEventKind::kCheckpointDeleted,
          "checkpoint #" + Str(old.index) + " deleted (checkpoint.keep_last " + Str(keep) + ")",
          {.step = old.step, .checkpoint = old.index});
  }
}

void RunSim::PruneRetained() {
  if (retained_.size() < 2) return;
  int floor = std::min(taken_, restore_cap_);
  if (active_corruptions_ > 0) {
    for (const Corruption& k : corruptions_) {
      if (k.active) floor = std::min(floor, k.clean_max_index);
    }
  }
  // The first entry above the floor; the one before it is the newest a restore may still take.
  const auto above =
      std::upper_bound(retained_.begin(), retained_.end(), floor,
                       [](int index, const Snapshot& snap) { return index < snap.index; });
  if (above - retained_.begin() > 1) retained_.erase(retained_.begin(), above - 1);
}

bool RunSim::CheckpointDue() const {
  if (!bg_.empty() || step_ >= StepGoal()) return false;
  switch (interval_.kind) {
    case CheckpointInterval::Kind::kSteps:
      return step_ >= next_ckpt_step_;
    case CheckpointInterval::Kind::kTrainingTime:
      return since_ckpt_ >= interval_.every;
    default:
      return false;
  }
}

void RunSim::ResetInterval() {
  since_ckpt_ = sim::Time();
  next_ckpt_step_ = step_ + interval_.steps;
}

Result<StepTiming> RunSim::StepTime(const RunState& s) {
  for (const auto& [state, timing] : recent_) {
    if (state == s) return timing;
  }
  Result<StepTiming> t = cache_->Get(s);
  if (!t.ok()) return t;
  if (recent_.size() == kRecentStates) recent_.erase(recent_.begin());
  recent_.emplace_back(s, t.value());
  return t;
}

void RunSim::PlanBlock() {
  if (step_ >= StepGoal()) {
    phase_ = Phase::kDone;
    return;
  }
  if (state_dirty_) {
    RunState s;
    s.live_dp_replicas = live_;
    std::map<int, double> slow, link;
    for (const ActiveFactor& a : stragglers_) slow[a.id] = std::max(slow[a.id], a.factor);
    for (const ActiveFactor& a : links_) {
      auto [it, inserted] = link.emplace(a.id, a.factor);
      if (!inserted) it->second = std::min(it->second, a.factor);
    }
    for (const auto& p : slow) {
      if (p.second != 1.0) s.gpu_slowdown.push_back(p);
    }
    for (const auto& p : link) {
      if (p.second != 1.0) s.nic_link_factor.push_back(p);
    }
    double share = 0;
    for (const BackgroundOp& op : bg_) share += op.share;
    s.checkpoint_traffic_share = std::min(1.0, share);
    Result<StepTiming> t = StepTime(s);
    if (!t.ok()) return Fail(t.status());
    timing_ = t.value();
    tau_ = timing_.total();
    kept_ = timing_;
    extra_ = sim::Time();
    if (!s.gpu_slowdown.empty() || !s.nic_link_factor.empty() || s.live_dp_replicas != c_.dp) {
      // A kept step counts at the healthy step's split; the rest is slowdown: what stragglers
      // and degraded links add, and what an ELASTIC job's fewer replicas take longer (each
      // does more of the global batch).
      RunState healthy = s;
      healthy.gpu_slowdown.clear();
      healthy.nic_link_factor.clear();
      healthy.live_dp_replicas = c_.dp;
      Result<StepTiming> h = StepTime(healthy);
      if (!h.ok()) return Fail(h.status());
      if (h->total() < tau_) {
        kept_ = h.value();
        extra_ = tau_ - kept_.total();
      }
    }
    state_dirty_ = false;
  }
  if (CheckpointDue()) return StartCheckpoint();
  int64_t n = StepGoal() - step_;
  if (c_.wall_time_limit) {
    // No need to plan past the limit (its event ends the run).
    const int64_t rem = (*c_.wall_time_limit - engine_.now()).nanos();
    n = std::min(n, std::max<int64_t>(1, (rem + tau_.nanos() - 1) / tau_.nanos()));
  }
  if (bg_.empty()) {
    if (interval_.kind == CheckpointInterval::Kind::kSteps) {
      n = std::min(n, next_ckpt_step_ - step_);
    } else if (interval_.kind == CheckpointInterval::Kind::kTrainingTime) {
      const int64_t rem = (interval_.every - since_ckpt_).nanos();
      n = std::min(n, (rem + tau_.nanos() - 1) / tau_.nanos());
    }
  }
  std::optional<sim::Time> len = sim::Time::CheckedMul(tau_, n);
  std::optional<sim::Time> end = len ? sim::Time::CheckedAdd(engine_.now(), *len) : std::nullopt;
  if (!end) {
    return Fail(Status::OutOfRange("the run is longer than sim::Time can represent (" + Str(n) +
                                   " steps of " + sim::FormatDuration(tau_) + ")"));
  }
  block_start_ = engine_.now();
  block_n_ = n;
  block_event_ = engine_.ScheduleAt(
      *end, [this] { OnBlockEnd(); }, kPrioProgress);
}

void RunSim::OnBlockEnd() {
  block_event_ = 0;
  AccountSteps(block_n_);
  block_n_ = 0;
  PlanBlock();
}

void RunSim::InterruptProgress(bool time_up) {
  const sim::Time now = engine_.now();
  if (phase_ == Phase::kRunning) {
    if (block_event_ != 0) engine_.Cancel(block_event_);
    block_event_ = 0;
    const sim::Time elapsed = now - block_start_;
    const int64_t k = std::min(block_n_, elapsed / tau_);
    AccountSteps(k);
    // The step in flight: lost to a failure, or unfinished when the job's time is up.
    (time_up ? cum_.unfinished_step : cum_.lost) += elapsed - tau_ * k;
    block_n_ = 0;
  } else if (phase_ == Phase::kStall) {
    engine_.Cancel(phase_event_);
    cum_.checkpoint_stall += now - phase_start_;
  }
}

void RunSim::StateChanged() {
  state_dirty_ = true;
  if (phase_ != Phase::kRunning || block_event_ == 0) return;
  // End the block at the first step boundary at or after now; the new state applies from there.
  const sim::Time elapsed = engine_.now() - block_start_;
  const int64_t k = (elapsed.nanos() + tau_.nanos() - 1) / tau_.nanos();
  if (k >= block_n_) return;
  engine_.Cancel(block_event_);
  block_n_ = k;
  block_event_ = engine_.ScheduleAt(
      block_start_ + tau_ * k, [this] { OnBlockEnd(); }, kPrioProgress);
}

void RunSim::StartCheckpoint() {
  ++taken_;
  pending_snap_ = Snapshot();
  pending_snap_.index = taken_;
  phase_ = Phase::kStall;
  phase_start_ = engine_.now();
  const bool sync = c_.checkpoint.policy == CheckpointPolicy::kSync;
  const sim::Time stall = sync ? costs_.persistent_write : costs_.snapshot;
  phase_event_ = engine_.Schedule(
      stall, [this, sync] { sync ? OnSyncWritten() : OnSnapshotDone(); }, kPrioProgress);
}

void RunSim::CountCompleted(const Snapshot& s) {
  if (s.index > last_counted_) {
    last_counted_ = s.index;
    ++report_.checkpoints;
  }
}

void RunSim::OnSyncWritten() {
  cum_.checkpoint_stall += engine_.now() - phase_start_;
  Snapshot s = TakeSnapshot(pending_snap_.index);
  s.written_at = engine_.now();
  KeepPersistent(s);
  CountCompleted(s);
  ResetInterval();
  phase_ = Phase::kRunning;
  if (c_.record_events)
    Log(RunEventKind::kCheckpointWritten,
        "checkpoint #" + Str(s.index) + " written (step " + Str(s.step) + ", stalled " +
            sim::FormatDuration(costs_.persistent_write) + ")",
        {.step = s.step, .checkpoint = s.index, .duration = costs_.persistent_write});
  block_start_ = engine_.now();  // no block runs yet: an eviction now loses no partial step
  block_n_ = 0;
  if (EvictPending()) return;
  if (rejoin_pending_) return Rejoin(s);
  PlanBlock();
}

void RunSim::OnSnapshotDone() {
  cum_.checkpoint_stall += engine_.now() - phase_start_;
  pending_snap_ = TakeSnapshot(pending_snap_.index);
  ResetInterval();
  phase_ = Phase::kRunning;
  if (c_.checkpoint.policy == CheckpointPolicy::kAsync) {
    StartBackground(true, costs_.persistent_write, costs_.background_write_share);
  } else {
    ++inmem_taken_;
    StartBackground(false, costs_.peer_copy, costs_.peer_copy_traffic_share);
    if (inmem_taken_ % c_.checkpoint.persistent_every == 0) {
      StartBackground(true, costs_.persistent_write, costs_.background_write_share);
    }
  }
  state_dirty_ = true;
  PlanBlock();
}

void RunSim::StartBackground(bool persistent, sim::Time length, double share) {
  BackgroundOp op;
  op.id = next_bg_id_++;
  op.persistent = persistent;
  op.snap = pending_snap_;
  op.share = share;
  op.length = length;
  const int id = op.id;
  op.event = engine_.Schedule(
      length, [this, id] { OnBackgroundDone(id); }, kPrioProgress);
  bg_.push_back(op);
}

void RunSim::OnBackgroundDone(int id) {
  auto it =
      std::find_if(bg_.begin(), bg_.end(), [id](const BackgroundOp& o) { return o.id == id; });
  if (it == bg_.end()) return;
  BackgroundOp op = *it;
  bg_.erase(it);
  op.snap.written_at = engine_.now();
  if (op.persistent) {
    KeepPersistent(op.snap);
  } else {
    last_inmem_ = op.snap;
    for (int n : host_memory_lost_list_) host_memory_lost_[n] = 0;
    host_memory_lost_list_.clear();
  }
  CountCompleted(op.snap);
  if (c_.record_events)
    Log(op.persistent ? RunEventKind::kCheckpointCompleted : RunEventKind::kPeerCopyCompleted,
        std::string(op.persistent ? "checkpoint #" : "in-memory checkpoint #") +
            Str(op.snap.index) + " completed (step " + Str(op.snap.step) + ")",
        {.step = op.snap.step, .checkpoint = op.snap.index, .duration = op.length});
  if (op.persistent && EvictPending()) return;
  if (rejoin_pending_ && bg_.empty()) {
    InterruptProgress();
    return Rejoin(op.snap);
  }
  StateChanged();
}

void RunSim::AbortBackground() {
  for (const BackgroundOp& op : bg_) engine_.Cancel(op.event);
  if (!bg_.empty()) state_dirty_ = true;
  bg_.clear();
}

}  // namespace trainsim::run::detail
