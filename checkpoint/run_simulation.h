// checkpoint::SimulateRun — the run simulation: hours to months of training on sim::Engine, with
// checkpoints, scheduled and stochastic faults, detection, recovery and repair, and an exact
// accounting of where every nanosecond of wall time went.
//
// What it models. Training advances in whole blocks of iterations: between two events (a
// checkpoint due, a fault, a repair, a straggler starting or ending, a background write
// finishing) the step time is constant, so a block of n steps is one engine event and a 90-day
// run costs what a 1-hour run costs when nothing happens. A state change takes effect at the next
// step boundary (a step runs with the cluster state it started with). The step time of every
// distinct ClusterState comes from a callback — the step simulation — memoised in a
// StepTimeCache, so the accounting categories (useful compute, exposed communication, bubble)
// come from the step simulation.
//
// Checkpoints (CheckpointPolicy): SYNC stops training for the whole write; ASYNC stops it for the
// copy to host memory, then writes in the background while the step time is that of the state
// with ClusterState::checkpoint_traffic_share set; IN_MEMORY snapshots, copies each node's shard
// to the host memory of the next node (ring placement) in the background, and every
// `persistent_every`-th time also writes to storage. A checkpoint counts once its write (or peer
// copy) has completed; a new one that falls due while a background write is still running is
// taken at the first step boundary after it finishes. Intervals: every N steps, every T of
// training time since the previous checkpoint (or since the restart), or `auto` = Daly's optimum
// with M = 1 / (cluster failure rate) and δ = the blocking cost of one checkpoint.
//
// Faults and recovery. An interrupting fault (a GPU, node or NIC failing; a software hang; a
// stochastic failure) stops progress at once: everything since the checkpoint that will be
// restored — steps, the part of the step in flight, checkpoint stalls — is moved to `lost`. The
// failure is detected after the configured delay, then RESTART_ON_SPARE takes replacement nodes
// from the spare pool (waiting for a repaired node when it is empty), WAIT_FOR_REPAIR waits for
// the failed node itself, ELASTIC drops the failed nodes' data-parallel replicas and continues
// with fewer (rejoining them, with a restart, at the first checkpoint completed after they are
// repaired). The restart costs scheduler requeue + process start + communicator initialisation
// (base + per GPU) + checkpoint load (from storage, or from peer memory when every failed node's
// copy survived). A failure during detection, waiting or restart joins the incident. Software
// causes restart in place. Repaired nodes return to the spare pool. Stragglers and degraded links
// only change the cluster state.
//
// Accounting invariant (exact, in integer nanoseconds): wall = useful + exposed_comm + bubble +
// checkpoint_stall + lost + detection + restart + waiting; every step is executed and then either
// kept or rolled back: steps_executed − steps_rolled_back = total_steps.
//
// Determinism: the same config, callback and trial index give identical reports. Randomness comes
// only from RandomStreams(config.seed).Stream("trial/<k>/failures"), and the stochastic failure
// history does not depend on what the run does, so runs that differ only in scheduled faults see
// the same failures (common random numbers).
#ifndef TRAINSIM_CHECKPOINT_RUN_SIMULATION_H_
#define TRAINSIM_CHECKPOINT_RUN_SIMULATION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_model.h"
#include "checkpoint/failure_model.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::checkpoint {

// What differs from the healthy cluster, as the step simulation needs to know it.
struct ClusterState {
  int live_dp_replicas = 0;  // data-parallel replicas training (DP when healthy)
  // Per-GPU slowdown factors (> 1 slower), sorted by GPU id, one entry per slowed GPU.
  std::vector<std::pair<int, double>> gpu_slowdown;
  // Per-NIC link bandwidth factors (0 < f < 1 degraded), sorted by NIC id (node ·
  // nics_per_node + local index; the cable from that NIC to its leaf switch).
  std::vector<std::pair<int, double>> nic_link_factor;
  // Fraction of each node's network bandwidth used by a background checkpoint write (0 = none).
  double checkpoint_traffic_share = 0;

  // Canonical encoding, used as the memo key; equal states give equal keys.
  std::string Key() const;
};

// One step's time and its split. total() = useful + exposed_comm + bubble.
struct StepTiming {
  sim::Time useful;        // compute that advances training
  sim::Time exposed_comm;  // communication not hidden behind compute
  sim::Time bubble;        // pipeline bubble and other idle time inside the step
  sim::Time total() const { return useful + exposed_comm + bubble; }
};

using StepTimeFn = std::function<Result<StepTiming>(const ClusterState&)>;

// Memoises a StepTimeFn per distinct ClusterState (std::map on Key(): deterministic). Shared by
// all trials of a Monte Carlo study. Not thread-safe.
class StepTimeCache {
 public:
  explicit StepTimeCache(StepTimeFn fn) : fn_(std::move(fn)) {}
  // Returns the memoised timing, calling the function on a miss. Errors from the function, and
  // a timing with a negative part or a zero total, are returned as Status.
  Result<StepTiming> Get(const ClusterState& state);
  size_t distinct_states() const { return memo_.size(); }

 private:
  StepTimeFn fn_;
  std::map<std::string, StepTiming> memo_;
};

enum class CheckpointPolicy { kSync, kAsync, kInMemory };
enum class RecoveryPolicy { kRestartOnSpare, kWaitForRepair, kElastic };
enum class DetectionMechanism { kCollectiveTimeout, kHeartbeat };

struct CheckpointInterval {
  enum class Kind { kSteps, kTrainingTime, kAuto, kNever };
  Kind kind = Kind::kTrainingTime;
  int64_t steps = 0;                      // kSteps
  sim::Time every = sim::Time::Hours(1);  // kTrainingTime

  // "steps:N", "auto", "never" or a duration ("1h", "30m"). Zero and negative are rejected.
  static Result<CheckpointInterval> Parse(std::string_view text);
  std::string ToString() const;
};

struct CheckpointConfig {
  CheckpointPolicy policy = CheckpointPolicy::kSync;
  CheckpointInterval interval;
  int persistent_every = 10;  // IN_MEMORY: every k-th checkpoint also goes to storage
  CheckpointSpec spec;
  CheckpointHardware hardware;  // nodes/gpus_per_node are filled from RunConfig
};

struct RecoveryConfig {
  RecoveryPolicy policy = RecoveryPolicy::kRestartOnSpare;
  DetectionMechanism detection = DetectionMechanism::kCollectiveTimeout;
  // PyTorch's NCCL collective timeout default (10 min); heartbeat detection 30 s (ByteRobust
  // reports 10–30 s). REFERENCES.md, "Failure detection and restart".
  sim::Time collective_timeout = sim::Time::Minutes(10);
  sim::Time heartbeat_delay = sim::Time::Seconds(30);
  // Scheduler requeue and node allocation (2 min) and process start — container, imports,
  // model construction, CUDA context (3 min): with communicator init and checkpoint load a
  // restart lands in Meta's u0 = 5–20 min (Kokolis et al., 2024). Same defaults as
  // scenarios/scenario.proto.
  sim::Time scheduler_requeue = sim::Time::Minutes(2);
  sim::Time process_start = sim::Time::Minutes(3);
  // NCCL communicator initialisation = base + per_gpu × GPUs. Linear because the bootstrap
  // exchanges every rank's address through a ring/root (O(N) messages). 10 s + 2 ms per GPU
  // gives 35 s at 12,288 GPUs, the order of MegaScale's "under 30 s at > 10k GPUs" after its
  // optimisations (NSDI'24); unoptimised stacks were far slower (1,047 s at 2,048 GPUs).
  sim::Time comm_init_base = sim::Time::Seconds(10);
  sim::Time comm_init_per_gpu = sim::Time::Millis(2);
  // Repair time of a scheduled GPU/node/NIC failure (stochastic causes carry their own).
  sim::Time scheduled_repair_time = sim::Time::Hours(kDefaultRepairHours);
  // ELASTIC: the smallest number of data-parallel replicas the job continues with; below it,
  // the job waits for repairs instead.
  int min_dp = 1;

  sim::Time DetectionDelay() const {
    return detection == DetectionMechanism::kHeartbeat ? heartbeat_delay : collective_timeout;
  }
};

struct ScheduledFault {
  enum class Kind {
    kGpu,           // GPU `id` fails: its node leaves the job until repaired
    kNode,          // node `id` fails
    kNic,           // NIC `id` goes down (node = id / nics_per_node): the node leaves the job
    kLinkDegraded,  // NIC `id`'s link runs at `factor` (0 < f < 1) of its bandwidth for `duration`
    kStraggler,     // GPU `id` runs `factor` (> 1) times slower for `duration`
    kSoftwareHang,  // the job crashes or hangs (id ignored): detection and restart in place
    kHang,          // GPU `id`'s rank stops making progress: detection and restart in place
  };
  Kind kind = Kind::kGpu;
  int id = 0;
  sim::Time at;
  sim::Time duration;  // kLinkDegraded/kStraggler: 0 = until the end of the run
  double factor = 1.0;

  std::string Describe() const;  // "gpu 37 fails at 16h"
};

struct RunConfig {
  // Training goal: `total_steps` steps; or, when wall_time_limit is set, as many steps as fit
  // in that wall time (total_steps, if > 0, still caps them). At the limit the step in flight is
  // lost; progress since the last checkpoint is kept (the job ends on its own terms).
  int64_t total_steps = 0;
  std::optional<sim::Time> wall_time_limit;
  int nodes = 0;  // nodes in the job
  int gpus_per_node = 8;
  int tp = 1, pp = 1, dp = 1;  // tp·pp·dp = nodes·gpus_per_node; rank order TP, DP, PP (Megatron)
  int nics_per_node = 8;
  int spare_nodes = 0;
  // Nodes in the whole cluster (job + spares); 0 = nodes + spare_nodes.
  int cluster_nodes = 0;
  CheckpointConfig checkpoint;
  RecoveryConfig recovery;
  FailureModelConfig failures;
  std::vector<ScheduledFault> faults;
  // Price per GPU-hour (USD). 2.50 is illustrative, not a quote (scenario.proto's default).
  double usd_per_gpu_hour = 2.5;
  bool bill_spares = true;  // spare nodes' GPUs are billed too
  uint64_t seed = 1;
  bool record_events = true;  // keep the event log (Monte Carlo turns it off)
  // A run still unfinished after this much simulated wall time is reported as one that cannot
  // finish (FailedPrecondition): failures undo progress faster than checkpoints save it.
  sim::Time max_wall_time = sim::Time::Days(3650);
};

// Checks everything a user can get wrong, with messages that name the field and what is valid.
Status ValidateRunConfig(const RunConfig& config);

// Where wall time went. Every field is a whole number of nanoseconds; Total() is the wall time.
struct Breakdown {
  sim::Time useful, exposed_comm, bubble, checkpoint_stall, lost, detection, restart, waiting;
  sim::Time Total() const {
    return useful + exposed_comm + bubble + checkpoint_stall + lost + detection + restart + waiting;
  }
};

struct FailureRecord {
  sim::Time at;
  std::string cause;  // a root cause of the failure model, or "scheduled gpu" etc.
  std::string what;   // "gpu 37 (node 4)", "node 3", "software hang"
  bool needs_replacement = false;
  sim::Time lost;  // work moved to `lost` by this failure
  // Filled when the incident is recovered (resumed_at = Time::Max() if the run never resumed).
  sim::Time detected_at, resumed_at = sim::Time::Max();
  int restored_checkpoint = -1;  // 0 = the start of training, k = the k-th checkpoint taken
  int64_t restored_step = 0;
  sim::Time restored_checkpoint_written_at;
  bool restored_from_peer_memory = false;
};

struct RunEvent {
  sim::Time at;
  std::string what;
};

struct RunReport {
  sim::Time wall_time;
  Breakdown breakdown;
  int64_t total_steps = 0;  // steps kept (the goal, or what fit in wall_time_limit)
  int64_t steps_executed = 0;
  int64_t steps_rolled_back = 0;
  int checkpoints = 0;             // completed (persistent and in-memory)
  int persistent_checkpoints = 0;  // completed writes to storage
  int failures = 0;                // interrupting failures (stochastic and scheduled)
  std::map<std::string, int> failures_by_cause;
  std::vector<FailureRecord> failure_records;
  std::vector<RunEvent> events;
  CheckpointInterval interval_used;  // `auto` resolved
  double interval_used_s = 0;        // training-time interval actually used (0 = by steps/never)
  CheckpointCosts checkpoint_costs;
  double goodput = 0;  // useful / wall
  // Effective training time ratio (Meta): time spent in training iterations whose progress was
  // kept (useful + exposed_comm + bubble) over the wall time the job held its GPUs.
  double ettr = 0;
  double gpu_hours = 0;  // billed GPUs (job, plus spares if bill_spares) × wall hours
  double cost_usd = 0;
  size_t distinct_step_states = 0;  // states the step time callback was asked about so far
};

// Runs trial `trial` (stochastic failures from stream "trial/<trial>/failures"). Returns
// InvalidArgument for a bad config or a scheduled fault at or after the fault-free end of
// training, FailedPrecondition for a run that has not finished by max_wall_time, or an error from
// the step time callback.
Result<RunReport> SimulateRun(const RunConfig& config, StepTimeCache& step_times,
                              int64_t trial = 0);

// The blocking cost δ of one checkpoint under the config's policy (seconds): the write for SYNC;
// the snapshot plus the extra step time caused by the background write(s) for ASYNC/IN_MEMORY.
Result<double> CheckpointBlockingCostSeconds(const RunConfig& config, StepTimeCache& step_times);
// 1 / (cluster failure rate) in seconds (+inf when the stochastic model is off).
double ClusterMtbfSeconds(const RunConfig& config);

const char* CheckpointPolicyName(CheckpointPolicy p);
const char* RecoveryPolicyName(RecoveryPolicy p);

namespace detail {
// For the Monte Carlo driver: one trial without validation or the fault-after-end check
// (`stochastic` = false turns the failure model off), and that check on its own.
Result<RunReport> SimulateRunUnchecked(const RunConfig& config, StepTimeCache& step_times,
                                       int64_t trial, bool stochastic);
Status CheckFaultsBeforeEnd(const RunConfig& config, StepTimeCache& step_times);
}  // namespace detail

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_RUN_SIMULATION_H_
