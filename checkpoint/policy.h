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
// What to do with a rank that stays slow (recovery.straggler.action).
enum class StragglerAction { kIgnore, kEvict };

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
  // Persistent checkpoints kept in storage (older ones are deleted once a newer write
  // completes); 0 = keep all (Megatron's default: it never deletes). Matters for silent data
  // corruption, which must roll back past every checkpoint written after the corruption.
  int keep_last = 0;
  CheckpointSpec spec;
  CheckpointHardware hardware;  // nodes/gpus_per_node are filled from the run's config
};

// IB RC transport: a QP reports an error after retry_cnt + 1 transmissions each waiting the
// local ACK timeout 4.096 us x 2^timeout (InfiniBand spec; NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT).
inline sim::Time IbRetryExhaustion(int ib_timeout, int retry_cnt) {
  return sim::Time::Nanos(int64_t{4096} * (int64_t{1} << ib_timeout) * (retry_cnt + 1));
}

// How long each detection mechanism takes from the fault to the job knowing (docs/faults.md).
struct DetectionDelays {
  // A crashed process (software bug, GPU Xid that kills the CUDA context) is reaped by its
  // node's torchelastic agent, which polls its workers every monitor_interval (5 s in
  // torch.distributed.run up to 2.2) and then tears the job down for a restart.
  sim::Time process_exit = sim::Time::Seconds(5);
  // A dead NIC, cable or peer: the surviving ranks' IB queue pairs exhaust their retries and
  // NCCL aborts the communicator. NCCL defaults NCCL_IB_TIMEOUT = 20 (since 2.14) and
  // NCCL_IB_RETRY_CNT = 7: 8 tries x 4.295 s = 34.4 s.
  sim::Time nccl_error = IbRetryExhaustion(20, 7);
  // A node that vanishes with its agent: torchelastic's c10d rendezvous declares it dead after
  // keep_alive_max_attempt (3) missed keep-alives at keep_alive_interval (5 s) = 15 s.
  sim::Time heartbeat = sim::Time::Seconds(15);
  // A hung rank: its peers wait in a collective until ProcessGroupNCCL's watchdog times out,
  // default 10 min (PyTorch PR #110947; Megatron's --distributed-timeout-minutes is also 10).
  sim::Time collective_timeout = sim::Time::Minutes(10);
  // Silent data corruption: nothing crashes; a loss spike or a periodic numerical check finds
  // it. No published latency; 1 h is a stated assumption (a check every ~500 steps of ~7 s).
  sim::Time loss_check = sim::Time::Hours(1);

  sim::Time Of(DetectionMechanism m) const;
};

// Straggler handling (recovery.straggler): a rank whose step-time factor is >= threshold for
// detect_after is detected; EVICT then replaces its node (or drops its replica under ELASTIC).
// Defaults are modelling choices, not published figures: 1.1 (10% slower, well above step
// noise) and 5 min (tens of steps of evidence before acting); IGNORE keeps the old behaviour.
struct StragglerPolicy {
  double threshold = 1.1;
  sim::Time detect_after = sim::Time::Minutes(5);
  StragglerAction action = StragglerAction::kIgnore;
};

struct RecoveryConfig {
  RecoveryPolicy policy = RecoveryPolicy::kRestartOnSpare;
  DetectionDelays detect;
  // Legacy uniform detection (recovery.detection_delay set): every fault is detected by
  // `detection` after `detection_delay`, whatever its kind.
  bool uniform_detection = false;
  DetectionMechanism detection = DetectionMechanism::kCollectiveTimeout;
  sim::Time detection_delay = sim::Time::Minutes(10);
  StragglerPolicy straggler;
  sim::Time scheduler_requeue = sim::Time::Minutes(2);  // requeue and node allocation
  sim::Time process_start = sim::Time::Minutes(3);      // container, imports, CUDA context
  // Communicator initialisation = base + per_gpu × GPUs.
  sim::Time comm_init_base = sim::Time::Seconds(10);
  sim::Time comm_init_per_gpu = sim::Time::Millis(2);
  // Repair time of a scheduled GPU/node/NIC failure (stochastic causes carry their own).
  sim::Time scheduled_repair_time = sim::Time::Hours(kDefaultRepairHours);
  // ELASTIC: the fewest data-parallel replicas the job continues with; below, it waits.
  int min_dp = 1;

  // The mechanism that detects a fault whose natural mechanism is `natural`, and its delay.
  DetectionMechanism MechanismFor(DetectionMechanism natural) const {
    return uniform_detection ? detection : natural;
  }
  sim::Time DelayFor(DetectionMechanism natural) const {
    return uniform_detection ? detection_delay : detect.Of(natural);
  }
  // A single typical delay for closed forms (sweep's Daly figure): the uniform delay, else the
  // process-exit delay, the mechanism of most of Llama 3's interruptions (GPU faults, bugs).
  sim::Time DetectionDelay() const { return DelayFor(DetectionMechanism::kProcessExit); }
};

const char* CheckpointPolicyName(CheckpointPolicy p);
const char* RecoveryPolicyName(RecoveryPolicy p);
const char* StragglerActionName(StragglerAction a);

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_POLICY_H_
