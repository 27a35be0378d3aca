#include "run/run_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace trainsim::run {

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
    case Kind::kLinkDown:
      return "link " + std::to_string(id) + " goes down at " + at_s;
    case Kind::kSdc:
      return "gpu " + std::to_string(id) + " silently corrupts data at " + at_s;
  }
  return "?";
}

const char* ScheduledFault::KindName() const {
  switch (kind) {
    case Kind::kGpu:
      return "GPU";
    case Kind::kNode:
      return "NODE";
    case Kind::kNic:
      return "NIC";
    case Kind::kLinkDegraded:
    case Kind::kLinkDown:
      return "LINK";
    case Kind::kStraggler:
      return "STRAGGLER";
    case Kind::kSoftwareHang:
      return "SOFTWARE";
    case Kind::kHang:
      return "HANG";
    case Kind::kSdc:
      return "SDC";
  }
  return "?";
}

checkpoint::DetectionMechanism ScheduledFault::NaturalDetection() const {
  using M = checkpoint::DetectionMechanism;
  switch (kind) {
    case Kind::kGpu:           // an Xid that kills the CUDA context: the process exits
    case Kind::kSoftwareHang:  // a crash
      return M::kProcessExit;
    case Kind::kNode:  // the node and its agent vanish
      return M::kHeartbeat;
    case Kind::kNic:  // peers' IB queue pairs exhaust their retries
    case Kind::kLinkDown:
      return M::kNcclError;
    case Kind::kHang:
      return M::kCollectiveTimeout;
    case Kind::kSdc:
      return M::kLossCheck;
    case Kind::kLinkDegraded:
    case Kind::kStraggler:
      break;
  }
  return M::kProcessExit;
}

std::string CauseKey(const std::string& name) {
  std::string key;
  const size_t end = std::min(name.find(" ("), name.size());
  for (size_t i = 0; i < end; ++i) {
    const unsigned char ch = static_cast<unsigned char>(name[i]);
    if (std::isalnum(ch)) {
      key += static_cast<char>(std::toupper(ch));
    } else if (!key.empty() && key.back() != '_') {
      key += '_';
    }
  }
  while (!key.empty() && key.back() == '_') key.pop_back();
  return key.empty() ? "UNNAMED" : key;
}

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status CheckNonNegative(sim::Time t, const char* field) {
  if (t < sim::Time()) return Status::InvalidArgument(std::string(field) + " must be >= 0");
  return Status::Ok();
}

}  // namespace

checkpoint::CheckpointHardware CheckpointHardwareOf(const RunConfig& c) {
  checkpoint::CheckpointHardware hw = c.checkpoint.hardware;
  hw.nodes = c.nodes;
  hw.gpus_per_node = c.gpus_per_node;
  return hw;
}

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
  const checkpoint::CheckpointInterval& iv = c.checkpoint.interval;
  if (iv.kind == checkpoint::CheckpointInterval::Kind::kSteps && iv.steps <= 0) {
    return Status::InvalidArgument("checkpoint.interval: steps:N needs N > 0");
  }
  if (iv.kind == checkpoint::CheckpointInterval::Kind::kTrainingTime && iv.every <= sim::Time()) {
    return Status::InvalidArgument("checkpoint.interval must be a positive duration, got " +
                                   sim::FormatDuration(iv.every));
  }
  if (c.checkpoint.persistent_every < 1) {
    return Status::InvalidArgument("checkpoint.persistent_every must be >= 1, got " +
                                   Str(c.checkpoint.persistent_every));
  }
  if (c.checkpoint.policy == checkpoint::CheckpointPolicy::kInMemory && c.nodes < 2) {
    return Status::InvalidArgument(
        "checkpoint.policy IN_MEMORY keeps copies on a peer node and needs >= 2 nodes");
  }
  TRAINSIM_RETURN_IF_ERROR(
      checkpoint::ComputeCheckpointCosts(c.checkpoint.spec, CheckpointHardwareOf(c)).status());
  const checkpoint::RecoveryConfig& r = c.recovery;
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.detection_delay, "recovery.detection_delay"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.detect.process_exit, "recovery.detect.process_exit"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.detect.nccl_error, "recovery.detect.nccl_error"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.detect.heartbeat, "recovery.detect.heartbeat"));
  TRAINSIM_RETURN_IF_ERROR(
      CheckNonNegative(r.detect.collective_timeout, "recovery.detect.collective_timeout"));
  TRAINSIM_RETURN_IF_ERROR(CheckNonNegative(r.detect.loss_check, "recovery.detect.loss_check"));
  TRAINSIM_RETURN_IF_ERROR(
      CheckNonNegative(r.straggler.detect_after, "recovery.straggler.detect_after"));
  if (!(std::isfinite(r.straggler.threshold) && r.straggler.threshold > 1)) {
    return Status::InvalidArgument(
        "recovery.straggler.threshold must be > 1 (1.1 = a rank 10% slower), got " +
        std::to_string(r.straggler.threshold));
  }
  if (c.checkpoint.keep_last < 0) {
    return Status::InvalidArgument("checkpoint.keep_last must be >= 0 (0 = keep all), got " +
                                   Str(c.checkpoint.keep_last));
  }
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
      case ScheduledFault::Kind::kSdc:
        limit = gpus;
        what = "gpu";
        break;
      case ScheduledFault::Kind::kNode:
        limit = c.nodes;
        what = "node";
        break;
      case ScheduledFault::Kind::kNic:
      case ScheduledFault::Kind::kLinkDegraded:
      case ScheduledFault::Kind::kLinkDown:
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

}  // namespace trainsim::run
