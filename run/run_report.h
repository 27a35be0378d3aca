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
struct Breakdown {
  sim::Time useful, exposed_comm, bubble, checkpoint_stall, lost, detection, restart, waiting;
  sim::Time Total() const {
    return useful + exposed_comm + bubble + checkpoint_stall + lost + detection + restart + waiting;
  }
};

struct FailureRecord {
  sim::Time at{};
  std::string cause;  // a root cause of the failure model, or "scheduled gpu" etc.
  std::string what;   // "gpu 37 (node 4)", "node 3", "software hang"
  bool needs_replacement = false;
  bool scheduled = false;  // one of RunConfig::faults (else a stochastic failure)
  sim::Time lost;          // work moved to `lost` by this failure
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
  std::vector<RunEvent> events;                  // empty unless RunConfig::record_events
  std::vector<RunPhase> phases;                  // empty unless RunConfig::record_events
  checkpoint::CheckpointInterval interval_used;  // `auto` resolved
  double interval_used_s = 0;  // training-time interval actually used (0 = by steps/never)
  checkpoint::CheckpointCosts checkpoint_costs;
  double goodput = 0;  // useful / wall
  // Effective training time ratio (Meta): time in training iterations whose progress was kept
  // (useful + exposed_comm + bubble) over the wall time the job held its GPUs.
  double ettr = 0;
  double gpu_hours = 0;  // billed GPUs (job, plus spares if bill_spares) × wall hours
  double cost_usd = 0;
  size_t distinct_step_states = 0;  // states the step time callback was asked about so far
};

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_REPORT_H_
