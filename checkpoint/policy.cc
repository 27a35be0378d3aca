#include "checkpoint/policy.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace trainsim::checkpoint {

// Recovery defaults, and where they come from (REFERENCES.md, "Failure detection and restart";
// the detection delays are cited where DetectionDelays declares them, and in docs/faults.md):
//   - scheduler_requeue 2 min (requeue and node allocation) and process_start 3 min (container,
//     imports, model construction, CUDA context): with communicator init and checkpoint load a
//     restart lands in Meta's u0 = 5–20 min (Kokolis et al., 2024).
//   - Communicator init is linear in the GPUs because the bootstrap exchanges every rank's
//     address through a ring/root (O(N) messages). 10 s + 2 ms per GPU gives 35 s at 12,288
//     GPUs, the order of MegaScale's "under 30 s at > 10k GPUs" after its optimisations
//     (NSDI'24); unoptimised stacks were far slower (1,047 s at 2,048 GPUs).

Result<CheckpointInterval> ParseCheckpointInterval(std::string_view text) {
  CheckpointInterval out;
  if (text == "auto") {
    out.kind = CheckpointInterval::Kind::kAuto;
    return out;
  }
  if (text.rfind("steps:", 0) == 0) {
    std::string n(text.substr(6));
    char* end = nullptr;
    errno = 0;
    long long v = n.empty() ? 0 : std::strtoll(n.c_str(), &end, 10);
    if (n.empty() || errno != 0 || end != n.c_str() + n.size() || v <= 0) {
      // Appends, not "literal" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329).
      std::string msg = "\"";
      msg.append(text).append("\": steps:N needs a whole number N >= 1, e.g. steps:500");
      return Status::InvalidArgument(msg);
    }
    out.kind = CheckpointInterval::Kind::kSteps;
    out.steps = v;
    return out;
  }
  auto t = sim::ParseDuration(text);
  if (!t.ok()) {
    std::string msg = "\"";
    msg.append(text)
        .append("\" is not an interval: use a duration (\"1h\"), \"steps:N\" or \"auto\" (")
        .append(t.status().message())
        .append(")");
    return Status::InvalidArgument(msg);
  }
  if (*t == sim::Time::Zero()) {
    return Status::InvalidArgument(
        "an interval of 0 would checkpoint continuously; use a "
        "duration > 0, \"steps:N\" or \"auto\"");
  }
  out.kind = CheckpointInterval::Kind::kTrainingTime;
  out.every = *t;
  return out;
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

sim::Time DetectionDelays::Of(DetectionMechanism m) const {
  switch (m) {
    case DetectionMechanism::kProcessExit:
      return process_exit;
    case DetectionMechanism::kNcclError:
      return nccl_error;
    case DetectionMechanism::kHeartbeat:
      return heartbeat;
    case DetectionMechanism::kCollectiveTimeout:
      return collective_timeout;
    case DetectionMechanism::kLossCheck:
      return loss_check;
    case DetectionMechanism::kStepTime:
      return sim::Time();  // the straggler policy's detect_after applies instead
  }
  return collective_timeout;
}

const char* DetectionMechanismName(DetectionMechanism m) {
  switch (m) {
    case DetectionMechanism::kProcessExit:
      return "PROCESS_EXIT";
    case DetectionMechanism::kNcclError:
      return "NCCL_ERROR";
    case DetectionMechanism::kHeartbeat:
      return "HEARTBEAT";
    case DetectionMechanism::kCollectiveTimeout:
      return "COLLECTIVE_TIMEOUT";
    case DetectionMechanism::kLossCheck:
      return "LOSS_CHECK";
    case DetectionMechanism::kStepTime:
      return "STEP_TIME";
  }
  return "?";
}

const char* StragglerActionName(StragglerAction a) {
  return a == StragglerAction::kEvict ? "EVICT" : "IGNORE";
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

}  // namespace trainsim::checkpoint
