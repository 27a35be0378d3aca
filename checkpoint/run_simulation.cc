#include "checkpoint/run_simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "sim/engine.h"
#include "sim/random.h"

namespace trainsim::checkpoint {

// ---------------------------------------------------------------------------------------------
// Small public helpers.

std::string ClusterState::Key() const {
  // %.17g round-trips doubles exactly, so distinct states never share a key.
  std::string key = "dp=" + std::to_string(live_dp_replicas);
  char buf[64];
  key += ";slow=";
  for (const auto& [gpu, f] : gpu_slowdown) {
    std::snprintf(buf, sizeof(buf), "%d:%.17g,", gpu, f);
    key += buf;
  }
  key += ";link=";
  for (const auto& [nic, f] : nic_link_factor) {
    std::snprintf(buf, sizeof(buf), "%d:%.17g,", nic, f);
    key += buf;
  }
  std::snprintf(buf, sizeof(buf), ";ckpt=%.17g", checkpoint_traffic_share);
  key += buf;
  return key;
}

Result<StepTiming> StepTimeCache::Get(const ClusterState& state) {
  std::string key = state.Key();
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  Result<StepTiming> r = fn_(state);
  if (!r.ok()) return r.status().WithPrefix("step simulation for cluster state {" + key + "}");
  const StepTiming& t = r.value();
  if (t.useful < sim::Time() || t.exposed_comm < sim::Time() || t.bubble < sim::Time() ||
      t.total() <= sim::Time()) {
    return Status::Internal("step simulation returned a negative part or a zero step time for {" +
                            key + "}");
  }
  memo_.emplace(std::move(key), t);
  return t;
}

Result<CheckpointInterval> CheckpointInterval::Parse(std::string_view text) {
  CheckpointInterval iv;
  if (text == "auto") {
    iv.kind = Kind::kAuto;
    return iv;
  }
  if (text == "never") {
    iv.kind = Kind::kNever;
    return iv;
  }
  constexpr std::string_view kSteps = "steps:";
  if (text.substr(0, kSteps.size()) == kSteps) {
    std::string_view n = text.substr(kSteps.size());
    int64_t v = 0;
    bool ok = !n.empty() && n.size() <= 18;
    for (char ch : n) {
      if (ch < '0' || ch > '9') ok = false;
      if (ok) v = v * 10 + (ch - '0');
    }
    if (!ok || v <= 0) {
      return Status::InvalidArgument("checkpoint.interval \"" + std::string(text) +
                                     "\": expected steps:N with N a positive whole number");
    }
    iv.kind = Kind::kSteps;
    iv.steps = v;
    return iv;
  }
  Result<sim::Time> d = sim::ParseDuration(text);
  if (!d.ok()) {
    return d.status().WithPrefix("checkpoint.interval \"" + std::string(text) +
                                 "\" (expected a duration, steps:N, auto or never)");
  }
  if (d.value() <= sim::Time()) {
    return Status::InvalidArgument("checkpoint.interval must be positive, got \"" +
                                   std::string(text) + "\"");
  }
  iv.kind = Kind::kTrainingTime;
  iv.every = d.value();
  return iv;
}

std::string CheckpointInterval::ToString() const {
  switch (kind) {
    case Kind::kSteps:
      return "steps:" + std::to_string(steps);
    case Kind::kTrainingTime:
      return sim::FormatDuration(every);
    case Kind::kAuto:
      return "auto";
    case Kind::kNever:
      return "never";
  }
  return "?";
}

std::string ScheduledFault::Describe() const {
  std::string at_s = sim::FormatDuration(at);
  char f[32];
  std::snprintf(f, sizeof(f), "%g", factor);
  std::string dur = duration > sim::Time() ? " for " + sim::FormatDuration(duration) : "";
  switch (kind) {
    case Kind::kGpu:
      return "gpu " + std::to_string(id) + " fails at " + at_s;
    case Kind::kNode:
      return "node " + std::to_string(id) + " fails at " + at_s;
    case Kind::kNic:
      return "nic " + std::to_string(id) + " goes down at " + at_s;
    case Kind::kLinkDegraded:
      return "nic " + std::to_string(id) + "'s link runs at " + f + "x bandwidth from " + at_s +
             dur;
    case Kind::kStraggler:
      return "gpu " + std::to_string(id) + " slows by " + f + "x from " + at_s + dur;
    case Kind::kSoftwareHang:
      return "software crash at " + at_s;
    case Kind::kHang:
      return "gpu " + std::to_string(id) + " hangs at " + at_s;
  }
  return "?";
}

const char* CheckpointPolicyName(CheckpointPolicy p) {
  switch (p) {
    case CheckpointPolicy::kSync:
      return "SYNC";
    case CheckpointPolicy::kAsync:
      return "ASYNC";
    case CheckpointPolicy::kInMemory:
      return "IN_MEMORY";
  }
  return "?";
}

const char* RecoveryPolicyName(RecoveryPolicy p) {
  switch (p) {
    case RecoveryPolicy::kRestartOnSpare:
      return "RESTART_ON_SPARE";
    case RecoveryPolicy::kWaitForRepair:
      return "WAIT_FOR_REPAIR";
    case RecoveryPolicy::kElastic:
      return "ELASTIC";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Validation.

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status CheckNonNegative(sim::Time t, const char* field) {
  if (t < sim::Time()) return Status::InvalidArgument(std::string(field) + " must be >= 0");
  return Status::Ok();
}

CheckpointHardware HardwareOf(const RunConfig& c) {
  CheckpointHardware hw = c.checkpoint.hardware;
  hw.nodes = c.nodes;
  hw.gpus_per_node = c.gpus_per_node;
  return hw;
}

}  // namespace

Status ValidateRunConfig(const RunConfig& c) {
  if (c.wall_time_limit) {
    if (*c.wall_time_limit <= sim::Time()) {
      return Status::InvalidArgument("training.duration must be positive, got " +
                                     sim::FormatDuration(*c.wall_time_limit));
    }
    if (c.total_steps < 0) {
      return Status::InvalidArgument("training: the step cap must be >= 0 (0 = none)");
    }
  } else if (c.total_steps <= 0) {
    return Status::InvalidArgument("training: the number of steps must be positive, got " +
                                   Str(c.total_steps));
  }
  if (c.nodes <= 0 || c.gpus_per_node <= 0 || c.nics_per_node <= 0) {
    return Status::InvalidArgument("cluster: nodes, gpus_per_node and nics_per_node must be > 0");
  }
  if (c.tp <= 0 || c.pp <= 0 || c.dp <= 0) {
    return Status::InvalidArgument("parallelism: tp, pp and dp must be >= 1");
  }
  const int64_t gpus = int64_t{c.nodes} * c.gpus_per_node;
  if (int64_t{c.tp} * c.pp * c.dp != gpus) {
    return Status::InvalidArgument("parallelism: tp*pp*dp = " + Str(int64_t{c.tp} * c.pp * c.dp) +
                                   " must equal the job's GPUs (" + Str(gpus) + ")");
  }
  if (c.max_wall_time <= sim::Time()) {
    return Status::InvalidArgument("max_wall_time must be positive");
  }
  if (c.spare_nodes < 0) {
    return Status::InvalidArgument("cluster.spare_nodes must be >= 0, got " + Str(c.spare_nodes));
  }
  if (c.cluster_nodes != 0 && int64_t{c.nodes} + c.spare_nodes > c.cluster_nodes) {
    return Status::InvalidArgument("cluster.spare_nodes = " + Str(c.spare_nodes) +
                                   " is more than the cluster can hold: the "
                                   "job uses " +
                                   Str(c.nodes) + " of " + Str(c.cluster_nodes) +
                                   " nodes, leaving at most " +
                                   Str(std::max(0, c.cluster_nodes - c.nodes)) + " spares");
  }
  const CheckpointInterval& iv = c.checkpoint.interval;
  if (iv.kind == CheckpointInterval::Kind::kSteps && iv.steps <= 0) {
    return Status::InvalidArgument("checkpoint.interval: steps:N needs N > 0");
  }
  if (iv.kind == CheckpointInterval::Kind::kTrainingTime && iv.every <= sim::Time()) {
    return Status::InvalidArgument("checkpoint.interval must be a positive duration, got " +
                                   sim::FormatDuration(iv.every));
  }
  if (c.checkpoint.persistent_every < 1) {
    return Status::InvalidArgument("checkpoint.persistent_every must be >= 1, got " +
                                   Str(c.checkpoint.persistent_every));
  }
  if (c.checkpoint.policy == CheckpointPolicy::kInMemory && c.nodes < 2) {
    return Status::InvalidArgument(
        "checkpoint.policy IN_MEMORY keeps copies on a peer node and needs >= 2 nodes");
  }
  TRAINSIM_RETURN_IF_ERROR(ComputeCheckpointCosts(c.checkpoint.spec, HardwareOf(c)).status());
  const RecoveryConfig& r = c.recovery;
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.collective_timeout, "recovery.collective_timeout"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.heartbeat_delay, "recovery.heartbeat_delay"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.scheduler_requeue, "recovery.scheduler_requeue"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.process_start, "recovery.process_start"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.comm_init_base, "recovery.comm_init_base"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.comm_init_per_gpu, "recovery.comm_init_per_gpu"));
  TRAINSIM_RETURN_IF_ERROR(
      CheckNonNegative(r.scheduled_repair_time, "recovery.scheduled_repair_time"));
  if (r.min_dp < 1 || r.min_dp > c.dp) {
    return Status::InvalidArgument("recovery.min_dp must be in [1, dp=" + Str(c.dp) + "], got " +
                                   Str(r.min_dp));
  }
  TRAINSIM_RETURN_IF_ERROR(c.failures.Validate());
  if (!std::isfinite(c.usd_per_gpu_hour) || c.usd_per_gpu_hour < 0) {
    return Status::InvalidArgument("cost.usd_per_gpu_hour must be >= 0");
  }
  for (size_t i = 0; i < c.faults.size(); ++i) {
    const ScheduledFault& f = c.faults[i];
    const std::string where = "faults[" + std::to_string(i) + "]: ";
    if (f.at < sim::Time()) return Status::InvalidArgument(where + "time must be >= 0");
    if (f.duration < sim::Time()) return Status::InvalidArgument(where + "duration must be >= 0");
    int64_t limit = 0;
    const char* what = "";
    switch (f.kind) {
      case ScheduledFault::Kind::kGpu:
      case ScheduledFault::Kind::kStraggler:
      case ScheduledFault::Kind::kHang:
        limit = gpus;
        what = "gpu";
        break;
      case ScheduledFault::Kind::kNode:
        limit = c.nodes;
        what = "node";
        break;
      case ScheduledFault::Kind::kNic:
      case ScheduledFault::Kind::kLinkDegraded:
        limit = int64_t{c.nodes} * c.nics_per_node;
        what = "nic";
        break;
      case ScheduledFault::Kind::kSoftwareHang:
        limit = std::numeric_limits<int64_t>::max();
        break;
    }
    if (f.kind != ScheduledFault::Kind::kSoftwareHang && (f.id < 0 || f.id >= limit)) {
      return Status::InvalidArgument(where + what + " " + Str(f.id) +
                                     " does not exist (valid: 0.." + Str(limit - 1) + ")");
    }
    if (f.kind == ScheduledFault::Kind::kStraggler && !(std::isfinite(f.factor) && f.factor >= 1)) {
      return Status::InvalidArgument(where +
                                     "a straggler's slowdown factor must be >= 1 (1.3 = "
                                     "30% slower)");
    }
    if (f.kind == ScheduledFault::Kind::kLinkDegraded &&
        !(std::isfinite(f.factor) && f.factor > 0 && f.factor <= 1)) {
      return Status::InvalidArgument(where +
                                     "a degraded link's bandwidth factor must be in (0, 1]");
    }
    if (c.wall_time_limit && f.at >= *c.wall_time_limit) {
      return Status::InvalidArgument(where + f.Describe() +
                                     " is at or after the end of training (training.duration " +
                                     sim::FormatDuration(*c.wall_time_limit) + ")");
    }
  }
  return Status::Ok();
}

double ClusterMtbfSeconds(const RunConfig& c) {
  if (!c.failures.enabled || c.failures.node_day_rate <= 0) {
    return std::numeric_limits<double>::infinity();
  }
  return 86400.0 / (c.nodes * c.failures.node_day_rate);
}

Result<double> CheckpointBlockingCostSeconds(const RunConfig& c, StepTimeCache& step_times) {
  Result<CheckpointCosts> costs = ComputeCheckpointCosts(c.checkpoint.spec, HardwareOf(c));
  if (!costs.ok()) return costs.status();
  if (c.checkpoint.policy == CheckpointPolicy::kSync) {
    return costs->persistent_write.seconds();
  }
  ClusterState healthy;
  healthy.live_dp_replicas = c.dp;
  Result<StepTiming> base = step_times.Get(healthy);
  if (!base.ok()) return base.status();
  // Extra wall time a background transfer of `length` at `share` costs: the steps it overlaps
  // run at the slowed step time.
  auto slowdown_cost = [&](sim::Time length, double share) -> Result<double> {
    ClusterState s = healthy;
    s.checkpoint_traffic_share = std::min(1.0, share);
    Result<StepTiming> slowed = step_times.Get(s);
    if (!slowed.ok()) return slowed.status();
    const double ratio = slowed->total().seconds() / base->total().seconds();
    return length.seconds() * (1.0 - 1.0 / ratio);
  };
  double delta = costs->snapshot.seconds();
  if (c.checkpoint.policy == CheckpointPolicy::kAsync) {
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

// ---------------------------------------------------------------------------------------------
// The simulation.

namespace {

// Same-time order: progress (block ends, completions, restarts, repairs) first, then cluster
// state changes, then failures — so a failure at the instant a step completes keeps that step.
constexpr int kPrioProgress = 0;
constexpr int kPrioState = 1;
constexpr int kPrioFailure = 2;
constexpr int kPrioEnd = 3;  // the wall-time limit comes after everything at that instant

struct Snapshot {
  int index = 0;  // 0 = the start of training
  int64_t step = 0;
  sim::Time written_at;
  // Cumulative at-risk totals at the snapshot point.
  sim::Time useful, comm, bubble, stall;
};

struct BackgroundOp {
  int id = 0;
  bool persistent = false;  // to storage; otherwise the in-memory copy to a peer
  Snapshot snap;
  sim::EventId event = 0;
  double share = 0;
};

struct FailureInput {
  std::string cause;
  std::string what;
  int node = -1;  // -1: no node (software hang)
  bool needs_replacement = false;
  sim::Time repair_time;
};

struct ActiveFactor {
  int token;
  int id;
  double factor;
};

class RunSim {
 public:
  RunSim(const RunConfig& c, const CheckpointCosts& costs, CheckpointInterval interval,
         StepTimeCache* cache, int64_t trial, bool stochastic)
      : c_(c),
        costs_(costs),
        interval_(interval),
        cache_(cache),
        trial_(trial),
        stochastic_(stochastic) {}

  Result<RunReport> Run();

 private:
  enum class Phase { kRunning, kStall, kDetecting, kWaiting, kRestarting, kDone };

  void Log(std::string what) {
    if (c_.record_events) report_.events.push_back({engine_.now(), std::move(what)});
  }
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    phase_ = Phase::kDone;
  }

  // Progress.
  void PlanBlock();
  void OnBlockEnd();
  void AccountSteps(int64_t k);
  void InterruptProgress();
  void StateChanged();
  bool CheckpointDue() const;
  void ResetInterval();
  // Checkpoints.
  void StartCheckpoint();
  void OnSyncWritten();
  void OnSnapshotDone();
  void StartBackground(bool persistent, sim::Time length, double share);
  void OnBackgroundDone(int id);
  void CountCompleted(const Snapshot& s);
  void AbortBackground();
  Snapshot TakeSnapshot(int index) const;
  // Failures and recovery.
  void OnFailure(const FailureInput& f);
  void OnDetected();
  void TryRecover();
  void StartRestart(bool requeue);
  void OnRestarted();
  void OnRepaired(int node);
  void Rejoin(const Snapshot& s);
  void Rollback(const Snapshot& s);
  bool PeerCopiesSurvive() const;
  std::pair<Snapshot, bool> ChooseRestore() const;
  bool NodeInService(int node) const;
  void ScheduleNextStochastic();
  void ScheduleFaults();
  void OnWallTimeLimit();
  int64_t StepGoal() const {
    return c_.total_steps > 0 ? c_.total_steps : std::numeric_limits<int64_t>::max();
  }

  const RunConfig& c_;
  const CheckpointCosts costs_;
  const CheckpointInterval interval_;
  StepTimeCache* cache_;
  int64_t trial_;
  bool stochastic_;
  sim::Engine engine_;
  Status error_;
  RunReport report_;
  std::optional<FailureProcess> process_;

  Phase phase_ = Phase::kRunning;
  sim::Time phase_start_;
  sim::EventId phase_event_ = 0;  // stall end, detection end or restart end
  Breakdown cum_;
  int64_t step_ = 0;

  // The running block.
  sim::Time block_start_;
  int64_t block_n_ = 0;
  sim::EventId block_event_ = 0;
  StepTiming timing_;
  sim::Time tau_;
  bool state_dirty_ = true;

  // Checkpoints.
  sim::Time since_ckpt_;  // training time since the last checkpoint's snapshot or the restart
  int64_t next_ckpt_step_ = 0;
  int taken_ = 0;
  int inmem_taken_ = 0;
  int last_counted_ = 0;
  Snapshot pending_snap_;  // the checkpoint whose stall is in progress
  Snapshot last_persistent_;
  std::optional<Snapshot> last_inmem_;
  std::vector<BackgroundOp> bg_;
  int next_bg_id_ = 1;
  std::vector<char> host_memory_lost_;
  std::vector<int> host_memory_lost_list_;

  // Faults.
  std::vector<ActiveFactor> stragglers_, links_;
  int next_token_ = 1;
  std::vector<char> node_failed_;
  std::vector<int> incident_nodes_;  // failed nodes of the current incident, not yet replaced
  std::vector<size_t> incident_records_;
  int pool_ = 0;
  // Elastic.
  int live_ = 0;
  std::vector<std::vector<int>> node_replicas_;
  std::vector<char> replica_dropped_;
  std::vector<int> replica_missing_;
  std::vector<char> node_elastic_;  // failed node whose replicas were dropped for it
  bool rejoin_pending_ = false;
};

Snapshot RunSim::TakeSnapshot(int index) const {
  Snapshot s;
  s.index = index;
  s.step = step_;
  s.useful = cum_.useful;
  s.comm = cum_.exposed_comm;
  s.bubble = cum_.bubble;
  s.stall = cum_.checkpoint_stall;
  return s;
}

void RunSim::AccountSteps(int64_t k) {
  if (k <= 0) return;
  cum_.useful += timing_.useful * k;
  cum_.exposed_comm += timing_.exposed_comm * k;
  cum_.bubble += timing_.bubble * k;
  since_ckpt_ += tau_ * k;
  step_ += k;
  report_.steps_executed += k;
}

void RunSim::Rollback(const Snapshot& s) {
  cum_.lost += (cum_.useful - s.useful) + (cum_.exposed_comm - s.comm) + (cum_.bubble - s.bubble) +
               (cum_.checkpoint_stall - s.stall);
  cum_.useful = s.useful;
  cum_.exposed_comm = s.comm;
  cum_.bubble = s.bubble;
  cum_.checkpoint_stall = s.stall;
  report_.steps_rolled_back += step_ - s.step;
  step_ = s.step;
  if (last_inmem_ && last_inmem_->step > s.step) last_inmem_.reset();
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

void RunSim::PlanBlock() {
  if (step_ >= StepGoal()) {
    phase_ = Phase::kDone;
    return;
  }
  if (state_dirty_) {
    ClusterState s;
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
    Result<StepTiming> t = cache_->Get(s);
    if (!t.ok()) return Fail(t.status());
    timing_ = t.value();
    tau_ = timing_.total();
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

void RunSim::InterruptProgress() {
  const sim::Time now = engine_.now();
  if (phase_ == Phase::kRunning) {
    if (block_event_ != 0) engine_.Cancel(block_event_);
    block_event_ = 0;
    const sim::Time elapsed = now - block_start_;
    const int64_t k = std::min(block_n_, elapsed / tau_);
    AccountSteps(k);
    cum_.lost += elapsed - tau_ * k;  // the step in flight
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
  last_persistent_ = s;
  ++report_.persistent_checkpoints;
  CountCompleted(s);
  ResetInterval();
  phase_ = Phase::kRunning;
  Log("checkpoint #" + Str(s.index) + " written (step " + Str(s.step) + ", stalled " +
      sim::FormatDuration(costs_.persistent_write) + ")");
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
    last_persistent_ = op.snap;
    ++report_.persistent_checkpoints;
  } else {
    last_inmem_ = op.snap;
    for (int n : host_memory_lost_list_) host_memory_lost_[n] = 0;
    host_memory_lost_list_.clear();
  }
  CountCompleted(op.snap);
  Log(std::string(op.persistent ? "checkpoint #" : "in-memory checkpoint #") + Str(op.snap.index) +
      " completed (step " + Str(op.snap.step) + ")");
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
  rec.lost = cum_.lost - lost_before;
  report_.failure_records.push_back(rec);
  incident_records_.push_back(report_.failure_records.size() - 1);
  Log(f.what + " failed (" + f.cause + "); " + sim::FormatDuration(rec.lost) +
      " of work since the last checkpoint lost");
  if (phase_ == Phase::kWaiting) {
    phase_start_ = now;
    return TryRecover();
  }
  if (phase_ != Phase::kDetecting) {
    phase_ = Phase::kDetecting;
    phase_start_ = now;
    phase_event_ = engine_.Schedule(
        c_.recovery.DetectionDelay(), [this] { OnDetected(); }, kPrioProgress);
  }
}

void RunSim::OnDetected() {
  cum_.detection += engine_.now() - phase_start_;
  for (size_t i : incident_records_) report_.failure_records[i].detected_at = engine_.now();
  Log("failure detected");
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
      Log("elastic: continuing with " + Str(live_) + " of " + Str(c_.dp) +
          " data-parallel replicas");
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
      phase_ = Phase::kWaiting;
      phase_start_ = now;
      Log("waiting for " + Str(static_cast<int64_t>(incident_nodes_.size())) +
          " replacement node(s)");
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
  Log("restarting from " +
      (snap.index == 0 ? std::string("the start of training")
                       : "checkpoint #" + Str(snap.index) + " (step " + Str(snap.step) +
                             ", written at " + sim::FormatDuration(snap.written_at) + ")" +
                             (from_peer ? " in peer memory" : " in storage")) +
      ", takes " + sim::FormatDuration(d));
  phase_ = Phase::kRestarting;
  phase_start_ = engine_.now();
  phase_event_ = engine_.Schedule(
      d, [this] { OnRestarted(); }, kPrioProgress);
}

void RunSim::OnRestarted() {
  cum_.restart += engine_.now() - phase_start_;
  for (size_t i : incident_records_) report_.failure_records[i].resumed_at = engine_.now();
  incident_records_.clear();
  Log("training resumed at step " + Str(step_));
  ResetInterval();
  state_dirty_ = true;
  phase_ = Phase::kRunning;
  PlanBlock();
}

void RunSim::OnRepaired(int node) {
  Log("node " + Str(node) + " repaired");
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
  Log("elastic: " + Str(back) + " repaired replica(s) rejoin; restart with " + Str(live_));
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
  Log("training.duration reached at step " + Str(step_));
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
              Log(desc);
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
                Log(straggler ? "straggler recovers" : "link restored");
                StateChanged();
              },
              kPrioState);
        }
        break;
      }
    }
  }
}

Result<RunReport> RunSim::Run() {
  const int gpus = c_.nodes * c_.gpus_per_node;
  live_ = c_.dp;
  pool_ = c_.recovery.policy == RecoveryPolicy::kRestartOnSpare ? c_.spare_nodes : 0;
  node_failed_.assign(c_.nodes, 0);
  host_memory_lost_.assign(c_.nodes, 0);
  node_elastic_.assign(c_.nodes, 0);
  replica_dropped_.assign(c_.dp, 0);
  replica_missing_.assign(c_.dp, 0);
  node_replicas_.assign(c_.nodes, {});
  // Megatron's rank order, TP innermost, then DP, then PP: dp index = (gpu / tp) % dp.
  for (int n = 0; n < c_.nodes; ++n) {
    for (int g = n * c_.gpus_per_node; g < (n + 1) * c_.gpus_per_node && g < gpus; ++g) {
      const int r = (g / c_.tp) % c_.dp;
      if (std::find(node_replicas_[n].begin(), node_replicas_[n].end(), r) ==
          node_replicas_[n].end()) {
        node_replicas_[n].push_back(r);
      }
    }
  }
  if (stochastic_) {
    process_.emplace(c_.failures, c_.nodes,
                     sim::RandomStreams(c_.seed).Stream("trial/" + Str(trial_) + "/failures"));
    ScheduleNextStochastic();
  }
  ScheduleFaults();
  if (c_.wall_time_limit) {
    engine_.ScheduleAt(
        *c_.wall_time_limit, [this] { OnWallTimeLimit(); }, kPrioEnd);
  }
  if (!c_.wall_time_limit || *c_.wall_time_limit > c_.max_wall_time) {
    engine_.ScheduleAt(
        c_.max_wall_time,
        [this] {
          Fail(Status::FailedPrecondition(
              "the run had not finished after " + sim::FormatDuration(c_.max_wall_time) +
              " of simulated time (step " + Str(step_) + " of " + Str(c_.total_steps) + ", " +
              Str(report_.failures) +
              " failures): failures undo progress faster than checkpoints save it; checkpoint "
              "more often, or lower the failure rate"));
        },
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
  report_.wall_time = wall;
  report_.breakdown = cum_;
  report_.total_steps = step_;
  report_.checkpoint_costs = costs_;
  report_.interval_used = interval_;
  report_.interval_used_s =
      interval_.kind == CheckpointInterval::Kind::kTrainingTime ? interval_.every.seconds() : 0;
  if (wall > sim::Time()) {
    report_.goodput = cum_.useful.seconds() / wall.seconds();
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

Result<CheckpointInterval> ResolveInterval(const RunConfig& c, StepTimeCache& cache) {
  CheckpointInterval iv = c.checkpoint.interval;
  if (iv.kind != CheckpointInterval::Kind::kAuto) return iv;
  const double m = ClusterMtbfSeconds(c);
  if (!std::isfinite(m)) {
    iv.kind = CheckpointInterval::Kind::kNever;  // no expected failures: Daly's τ is infinite
    return iv;
  }
  Result<double> delta = CheckpointBlockingCostSeconds(c, cache);
  if (!delta.ok()) return delta.status();
  iv.kind = CheckpointInterval::Kind::kTrainingTime;
  iv.every = std::max(sim::Time::Nanos(1), sim::Time::FromSeconds(DalyIntervalSeconds(*delta, m)));
  return iv;
}

}  // namespace

namespace detail {

// Runs one trial without the fault-after-end check (RunTrials does that check once).
Result<RunReport> SimulateRunUnchecked(const RunConfig& config, StepTimeCache& step_times,
                                       int64_t trial, bool stochastic) {
  Result<CheckpointCosts> costs =
      ComputeCheckpointCosts(config.checkpoint.spec, HardwareOf(config));
  if (!costs.ok()) return costs.status();
  Result<CheckpointInterval> iv = ResolveInterval(config, step_times);
  if (!iv.ok()) return iv.status();
  RunSim sim(config, costs.value(), iv.value(), &step_times, trial, stochastic);
  return sim.Run();
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

}  // namespace trainsim::checkpoint
