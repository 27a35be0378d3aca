// The run simulation's engine-driven state machine, shared by run/run_sim_*.cc and
// run/run_simulation.cc. Internal to trainsim_run: include run/run_simulation.h instead.
#ifndef TRAINSIM_RUN_RUN_SIM_H_
#define TRAINSIM_RUN_RUN_SIM_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_model.h"
#include "checkpoint/failure_model.h"
#include "checkpoint/policy.h"
#include "run/run_config.h"
#include "run/run_report.h"
#include "run/run_state.h"
#include "sim/engine.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::run::detail {

inline std::string Str(int64_t v) { return std::to_string(v); }

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
  sim::Time useful, comm, bubble, slowdown, stall;
};

struct BackgroundOp {
  int id = 0;
  bool persistent = false;  // to storage; otherwise the in-memory copy to a peer
  Snapshot snap;
  sim::EventId event = 0;
  double share = 0;
  sim::Time length;  // how long the transfer takes
};

struct FailureInput {
  std::string cause;       // stable key (FailureRecord::cause)
  std::string cause_name;  // human
  std::string what;
  int node = -1;  // -1: no node (software hang)
  bool needs_replacement = false;
  bool scheduled = false;  // a RunConfig::faults entry, not a stochastic failure
  bool silent = false;     // SDC: training goes on until the loss check finds it
  bool eviction = false;   // a straggler evicted by the straggler policy
  sim::Time repair_time;
  checkpoint::DetectionMechanism mechanism = checkpoint::DetectionMechanism::kProcessExit;
  sim::Time detection_delay;  // from the fault to detection
};

// An active slowdown: a straggling GPU or a degraded link, owned by `node`'s hardware.
struct ActiveFactor {
  int token;
  int id;
  double factor;
  int node;
};

// A silent data corruption not yet detected.
struct Corruption {
  FailureInput input;
  sim::Time at;
  int clean_max_index = 0;  // checkpoints with index <= this were taken before it
  bool active = true;       // false once a rollback has wiped it
};

class RunSim {
 public:
  RunSim(const RunConfig& c, const checkpoint::CheckpointCosts& costs,
         checkpoint::CheckpointInterval interval, StepTimeCache* cache, int64_t trial,
         bool stochastic)
      : c_(c),
        costs_(costs),
        interval_(interval),
        cache_(cache),
        trial_(trial),
        stochastic_(stochastic) {
    TakeSpareStorage();
  }
  ~RunSim();
  RunSim(const RunSim&) = delete;
  RunSim& operator=(const RunSim&) = delete;

  Result<RunReport> Run();

 private:
  enum class Phase { kRunning, kStall, kDetecting, kWaiting, kRestarting, kDone };

  // Records an event (when the config keeps the log) at the current time. Call sites test
  // c_.record_events first, so a Monte Carlo trial (no log) never formats the message: that
  // formatting was ~10% of a trial's CPU (bench/README.md, run).
  void Log(RunEventKind kind, std::string what, RunEvent fields = {}) {
    if (!c_.record_events) return;
    fields.at = engine_.now();
    fields.kind = kind;
    fields.what = std::move(what);
    report_.events.push_back(std::move(fields));
  }
  // The run's phases: closes the open one now (dropped when empty) and opens `kind`.
  void BeginPhase(RunPhaseKind kind);
  void EndPhases();
  std::string MaxWallTimeMessage() const;
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    phase_ = Phase::kDone;
  }

  // Progress.
  void PlanBlock();
  void OnBlockEnd();
  void AccountSteps(int64_t k);
  void InterruptProgress(bool time_up = false);
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
  void OnFailure(const FailureInput& f, sim::Time at);
  void OnCorruption(const FailureInput& f);
  void OnCorruptionDetected(size_t i);
  void OnStragglerCheck(int token);
  void EndSlowdownsOnNode(int node);
  void OnSlowdownStart(const ScheduledFault& f, int token);
  void OnSlowdownEnd(int token, bool straggler);
  void KeepPersistent(const Snapshot& s);
  // With checkpoint.keep_last 0 storage keeps every checkpoint, but a restore takes the newest
  // one at or below a cap: an undetected corruption's clean_max_index, a future corruption's
  // (taken_ then, at least taken_ now), or restore_cap_ (a detected one's, consumed at once by
  // OnFailure, which stops every background write first; counted all the same). Every entry older
  // than the newest at or below the least of these can never be chosen again, and is dropped: the
  // list stays a few entries long instead of one per checkpoint (~838,000 at 16,384 GPUs with a
  // checkpoint after nearly every step, where its growth was a third of `trainsim run`).
  void PruneRetained();
  // retained_ starts from the storage the thread's previous RunSim left (its capacity only) and
  // leaves its own for the next. It mattered while keep_last 0 kept every persistent checkpoint
  // (~819 K at 131,072 GPUs; bench/README.md, session 33); since PruneRetained it matters only
  // for a large keep_last or a long undetected corruption.
  void TakeSpareStorage();
  // The step time of `s`: from the last kRecentStates states this run looked up, else from the
  // shared cache. An ASYNC run's state changes twice per checkpoint; taking the cache's lock
  // each time made two threads of trials slower than one (bench/README.md, session 34).
  Result<StepTiming> StepTime(const RunState& s);
  static constexpr size_t kRecentStates = 8;
  void Evict(ActiveFactor a);  // by value: eviction edits stragglers_
  bool EvictPending();
  void OnDetected();
  void TryRecover();
  void StartRestart(bool requeue);
  void OnRestarted();
  void OnRepaired(int node);
  void Rejoin(const Snapshot& s);
  // ELASTIC: every dropped replica whose nodes are all back rejoins the live ones; returns how
  // many did.
  int TakeBackWholeReplicas();
  // The wait for nodes ends here (a repair, a replica back): account it and try to recover.
  void EndWaitAndRecover();
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
  const checkpoint::CheckpointCosts costs_;
  const checkpoint::CheckpointInterval interval_;
  StepTimeCache* cache_;
  int64_t trial_;
  bool stochastic_;
  sim::Engine engine_;
  Status error_;
  RunReport report_;
  std::optional<checkpoint::FailureProcess> process_;
  // The stochastic process's next arrival (one is pending at a time), and each cause's stable
  // key, computed once per trial rather than once per failure (CauseKey allocates).
  checkpoint::FailureProcess::Arrival next_arrival_;
  std::vector<std::string> cause_keys_;
  RunPhaseKind open_phase_ = RunPhaseKind::kTraining;
  sim::Time open_phase_start_;

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
  std::vector<std::pair<RunState, StepTiming>> recent_;  // StepTime's, oldest first
  StepTiming kept_;  // the split of a kept step: the healthy step's (no slowdowns)
  sim::Time extra_;  // tau_ - kept_.total(): what slowdowns add to each step
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
  // Persistent checkpoints in storage that a restore may still choose, oldest first (index
  // ascending; PruneRetained).
  std::vector<Snapshot> retained_;
  int restore_cap_ = std::numeric_limits<int>::max();  // SDC: newest restorable index
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
  sim::Time detect_end_;  // when the current detection phase ends
  std::vector<Corruption> corruptions_;
  int active_corruptions_ = 0;     // of corruptions_
  std::vector<int> evict_tokens_;  // detected stragglers to evict once a checkpoint completes
  int pool_ = 0;
  // Elastic.
  int live_ = 0;
  // The data-parallel replicas with a GPU on each node, flat: node n's are
  // node_replica_list_[node_replica_begin_[n] .. node_replica_begin_[n + 1]).
  std::vector<int> node_replica_begin_;
  std::vector<int> node_replica_list_;
  std::span<const int> ReplicasOf(int node) const {
    return {node_replica_list_.data() + node_replica_begin_[node],
            node_replica_list_.data() + node_replica_begin_[node + 1]};
  }
  std::vector<char> replica_dropped_;
  std::vector<int> replica_missing_;
  std::vector<char> node_elastic_;  // failed node whose replicas were dropped for it
  bool rejoin_pending_ = false;
};
}  // namespace trainsim::run::detail

#endif  // TRAINSIM_RUN_RUN_SIM_H_
