// run::RunReport — what one simulated run produced: where every nanosecond of wall time went,
// the failures and how each was recovered, the typed event log and the run's phases.
//
// Promises: breakdown.Total() == wall_time exactly; when events are recorded, `phases` tile
// [0, wall_time] in order (each starts where the previous ends, none is empty) and the phases of
// each kind add up to the breakdown (training = useful + exposed_comm + bubble +
// checkpoint_stall + lost; detection, restart, waiting to theirs). Consumers read events by
// kind and their typed fields; `what` is the human wording of the same event.
#ifndef TRAINSIM_RUN_RUN_REPORT_H_
#define TRAINSIM_RUN_RUN_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_model.h"
#include "checkpoint/policy.h"
#include "sim/time.h"

namespace trainsim::run {

// Where wall time went. Every field is a whole number of nanoseconds; Total() is the wall time.
// Kept steps count at the healthy step's split (useful, exposed_comm, bubble); what stragglers
// and degraded links add to a kept step is `slowdown`, so no efficiency figure rises when the
// job slows down. `lost` is work rolled back by failures, evictions and SDC (the sum of the
// failure records' lost plus elastic rejoin rollbacks). `unfinished_step` is the step in flight
// when training.duration ran out: neither kept nor lost to a failure, so not lost work.
struct Breakdown {
  sim::Time useful, exposed_comm, bubble, slowdown, checkpoint_stall, lost, unfinished_step,
      detection, restart, waiting;
  sim::Time Total() const {
    return useful + exposed_comm + bubble + slowdown + checkpoint_stall + lost + unfinished_step +
           detection + restart + waiting;
  }
};

struct FailureRecord {
  sim::Time at{};          // when the fault happened (for SDC: when the corruption began)
  std::string cause;       // stable key: FAULTY_GPU, ..., SCHEDULED_GPU/_NODE/.../_SDC for
                           // scheduled faults, STRAGGLER_EVICTION for an evicted straggler
  std::string cause_name;  // human: "Faulty GPU", "scheduled gpu"
  std::string what;        // "gpu 37 (node 4)", "node 3", "software hang"
  bool needs_replacement = false;
  bool scheduled = false;  // one of RunConfig::faults (else a stochastic failure)
  bool eviction = false;   // a straggler evicted by recovery.straggler (not a failure)
  checkpoint::DetectionMechanism mechanism = checkpoint::DetectionMechanism::kProcessExit;
  sim::Time detection_delay;  // the mechanism's delay (detected_at - at once detected)
  sim::Time lost;             // work moved to `lost` by this failure (every rollback it caused)
  // Filled when the incident is recovered (resumed_at = Time::Max() if the run never resumed).
  sim::Time detected_at, resumed_at = sim::Time::Max();
  int restored_checkpoint = -1;  // 0 = the start of training, k = the k-th checkpoint taken
  int64_t restored_step = 0;
  sim::Time restored_checkpoint_written_at;
  bool restored_from_peer_memory = false;
};

enum class RunEventKind {
  kFailure,              // a failure interrupted training; `failure` indexes failure_records
  kDetected,             // the incident's failures were detected
  kElasticShrink,        // ELASTIC: continuing with `count` live replicas
  kWaiting,              // waiting for `count` replacement nodes
  kRestart,              // restarting from checkpoint `checkpoint` (0 = start); takes `duration`
  kResumed,              // training resumed at `step`
  kRepaired,             // node `node` repaired
  kElasticRejoin,        // ELASTIC: `count` replicas rejoin
  kSlowdownStarted,      // a straggler or degraded link began
  kSlowdownEnded,        // it ended
  kCheckpointWritten,    // SYNC: checkpoint `checkpoint` written after a `duration` stall
  kCheckpointCompleted,  // a background write to storage of `duration` completed
  kPeerCopyCompleted,    // IN_MEMORY: a background copy to peer memory of `duration` completed
  kCorruption,           // silent data corruption began (`failure` indexes failure_records)
  kStragglerDetected,    // a straggler policy saw a persistently slow rank on `node`
  kCheckpointDeleted,    // keep_last: checkpoint `checkpoint` deleted from storage
  kEnd,                  // training.duration reached at `step`
};

struct RunEvent {
  sim::Time at{};
  RunEventKind kind = RunEventKind::kFailure;
  std::string what{};      // the human log line
  int64_t step = 0;        // the step the event refers to (checkpoint's, resumed, end)
  int checkpoint = -1;     // checkpoint index (written, completed, restored)
  sim::Time duration{};    // stall, background transfer or restart length
  int count = 0;           // replicas or nodes (elastic, waiting)
  int node = -1;           // kRepaired
  size_t failure = 0;      // kFailure: index into RunReport::failure_records
  bool from_peer = false;  // kRestart: restored from peer memory
};

enum class RunPhaseKind { kTraining, kDetection, kWaiting, kRestart };

// A half-open interval [start, end) of the run in one phase (checkpoint stalls are training).
struct RunPhase {
  RunPhaseKind kind = RunPhaseKind::kTraining;
  sim::Time start, end;
};

const char* RunPhaseName(RunPhaseKind kind);  // "training", "detection", "waiting", "restart"

// A silent data corruption still undetected when training ended: the loss check would have found
// it after the run, so the final weights, and every checkpoint taken after it, are corrupt.
struct UndetectedCorruption {
  std::string what;                  // "gpu 5 (node 0)"
  sim::Time at;                      // when it began
  sim::Time would_detect_at;         // when the loss check would have found it
  int first_corrupt_checkpoint = 0;  // checkpoints with this index or higher are corrupt
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
  std::vector<UndetectedCorruption> undetected_corruptions;
  std::vector<RunEvent> events;                  // empty unless RunConfig::record_events
  std::vector<RunPhase> phases;                  // empty unless RunConfig::record_events
  checkpoint::CheckpointInterval interval_used;  // `auto` resolved
  double interval_used_s = 0;  // training-time interval actually used (0 = by steps/never)
  checkpoint::CheckpointCosts checkpoint_costs;
  // Useful compute fraction: useful (healthy-step compute of kept steps) / wall. Not Google's
  // "ML Goodput" (which multiplies scheduling, runtime and program goodput), hence not so named.
  double useful_compute_fraction = 0;
  // Effective training time ratio (Meta, Kokolis et al. 2024): productive training time — kept
  // steps at the healthy step time (useful + exposed_comm + bubble) — over the wall time the job
  // held its GPUs. Checkpoint stalls, slowdown, lost work and downtime are not productive.
  double ettr = 0;
  int evictions = 0;  // stragglers evicted by recovery.straggler
  // What set the training-time interval: "CONFIGURED" (a fixed interval), "DALY" (auto: Daly's
  // optimum) or "BACKGROUND_WRITE" (auto, raised to the background write of one checkpoint).
  std::string interval_bound = "CONFIGURED";
  double background_write_s = 0;  // the lower bound on an auto interval (0 for SYNC)
  double daly_interval_s = 0;     // auto: Daly's optimum before the bound (0 otherwise)
  double gpu_hours = 0;           // billed GPUs (job, plus spares if bill_spares) × wall hours
  double cost_usd = 0;
  size_t distinct_step_states = 0;  // states the step time callback was asked about so far
};

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_REPORT_H_
