// run::RunConfig — everything one simulated training run needs: the goal (steps or wall time),
// the job's shape, its checkpoint and recovery policies, the failure model, scheduled faults
// and the price; and ValidateRunConfig, which checks it.
//
// Promises: ValidateRunConfig names the field at fault and what is valid; the other helpers are
// pure functions of the config.
#ifndef TRAINSIM_RUN_RUN_CONFIG_H_
#define TRAINSIM_RUN_RUN_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_model.h"
#include "checkpoint/failure_model.h"
#include "checkpoint/policy.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::run {

struct ScheduledFault {
  enum class Kind {
    kGpu,           // GPU `id` fails: its node leaves the job until repaired
    kNode,          // node `id` fails
    kNic,           // NIC `id` goes down (node = id / nics_per_node): the node leaves the job
    kLinkDegraded,  // NIC `id`'s link runs at `factor` (0 < f < 1) of its bandwidth for `duration`
    kStraggler,     // GPU `id` runs `factor` (> 1) times slower for `duration`
    kSoftwareHang,  // the job crashes or hangs (id ignored): detection and restart in place
    kHang,          // GPU `id`'s rank stops making progress: detection and restart in place
    kLinkDown,      // NIC `id`'s cable goes down: NCCL errors out, the node leaves the job
    kSdc,           // GPU `id` silently corrupts training state; found by the loss check
  };
  Kind kind = Kind::kGpu;
  int id = 0;
  sim::Time at;
  sim::Time duration;  // kLinkDegraded/kStraggler: 0 = until the end of the run
  double factor = 1.0;

  std::string Describe() const;  // "gpu 37 fails at 16h"
  // The fault's stable name: GPU, NODE, NIC, LINK, STRAGGLER, HANG, SOFTWARE, SDC.
  const char* KindName() const;
  // How the fault is detected when nothing overrides it (a degraded link or a straggler is not
  // detected as a failure: kProcessExit is returned and unused).
  checkpoint::DetectionMechanism NaturalDetection() const;
  bool SameAs(const ScheduledFault& o) const {
    return kind == o.kind && id == o.id && at == o.at && duration == o.duration &&
           factor == o.factor;
  }
};

// A failure cause's stable JSON key: upper snake case of its name up to " (" ("Faulty GPU" ->
// FAULTY_GPU, "GPU (faulty GPU, HBM3, ...)" -> GPU).
std::string CauseKey(const std::string& name);

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
  checkpoint::CheckpointConfig checkpoint;
  checkpoint::RecoveryConfig recovery;
  checkpoint::FailureModelConfig failures;
  std::vector<ScheduledFault> faults;
  // Price per GPU-hour (USD). 2.50 is illustrative, not a quote (scenario.proto's default).
  double usd_per_gpu_hour = 2.5;
  bool bill_spares = true;  // spare nodes' GPUs are billed too
  uint64_t seed = 1;
  bool record_events = true;  // keep the event log and the phases (Monte Carlo turns it off)
  // A run still unfinished after this much simulated wall time is reported as one that cannot
  // finish (FailedPrecondition): failures undo progress faster than checkpoints save it.
  sim::Time max_wall_time = sim::Time::Days(3650);
};

// Checks everything a user can get wrong, with messages that name the field and what is valid.
Status ValidateRunConfig(const RunConfig& config);

// 1 / (cluster failure rate) in seconds (+inf when the stochastic model is off).
double ClusterMtbfSeconds(const RunConfig& config);

// The checkpoint hardware with the job's nodes and GPUs per node filled in.
checkpoint::CheckpointHardware CheckpointHardwareOf(const RunConfig& config);

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_CONFIG_H_
