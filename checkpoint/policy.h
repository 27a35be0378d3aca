// checkpoint::CheckpointConfig and RecoveryConfig — how a run checkpoints (policy, interval) and
// how it recovers from a failure (detection, restart costs, spares or repair, elastic shrink).
//
// Promises: plain value types with the product's defaults (the same as scenarios/scenario.proto;
// the sources of each default are in docs/run-simulation.md). ParseCheckpointInterval is the one
// parser of a checkpoint interval ("auto", "steps:N", a duration), used by the scenario loader.
#ifndef TRAINSIM_CHECKPOINT_POLICY_H_
#define TRAINSIM_CHECKPOINT_POLICY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint_model.h"
#include "checkpoint/failure_model.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::checkpoint {

enum class CheckpointPolicy { kSync, kAsync, kInMemory };
enum class RecoveryPolicy { kRestartOnSpare, kWaitForRepair, kElastic };
enum class DetectionMechanism { kCollectiveTimeout, kHeartbeat };

// How checkpoints are spaced: every N steps, every T of training time, Daly's optimum, or never.
struct CheckpointInterval {
  enum class Kind { kSteps, kTrainingTime, kAuto, kNever };
  Kind kind = Kind::kTrainingTime;
  int64_t steps = 0;                      // kSteps
  sim::Time every = sim::Time::Hours(1);  // kTrainingTime

  std::string ToString() const;  // "steps:500", "1h", "auto", "never"
};

// Parses "auto", "steps:N" (N >= 1) or a duration > 0. ("never" is not a spelling: a scenario
// turns checkpoints off with checkpoint.enabled = false.)
Result<CheckpointInterval> ParseCheckpointInterval(std::string_view text);

struct CheckpointConfig {
  CheckpointPolicy policy = CheckpointPolicy::kSync;
  CheckpointInterval interval;
  int persistent_every = 10;  // IN_MEMORY: every k-th checkpoint also goes to storage
  CheckpointSpec spec;
  CheckpointHardware hardware;  // nodes/gpus_per_node are filled from the run's config
};

struct RecoveryConfig {
  RecoveryPolicy policy = RecoveryPolicy::kRestartOnSpare;
  DetectionMechanism detection = DetectionMechanism::kCollectiveTimeout;
  sim::Time collective_timeout = sim::Time::Minutes(10);  // PyTorch's NCCL default
  sim::Time heartbeat_delay = sim::Time::Seconds(30);
  sim::Time scheduler_requeue = sim::Time::Minutes(2);  // requeue and node allocation
  sim::Time process_start = sim::Time::Minutes(3);      // container, imports, CUDA context
  // Communicator initialisation = base + per_gpu × GPUs.
  sim::Time comm_init_base = sim::Time::Seconds(10);
  sim::Time comm_init_per_gpu = sim::Time::Millis(2);
  // Repair time of a scheduled GPU/node/NIC failure (stochastic causes carry their own).
  sim::Time scheduled_repair_time = sim::Time::Hours(kDefaultRepairHours);
  // ELASTIC: the fewest data-parallel replicas the job continues with; below, it waits.
  int min_dp = 1;

  sim::Time DetectionDelay() const {
    return detection == DetectionMechanism::kHeartbeat ? heartbeat_delay : collective_timeout;
  }
};

const char* CheckpointPolicyName(CheckpointPolicy p);
const char* RecoveryPolicyName(RecoveryPolicy p);

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_POLICY_H_
