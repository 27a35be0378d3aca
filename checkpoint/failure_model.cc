#include "checkpoint/failure_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

namespace trainsim::checkpoint {

namespace {

// How each Llama 3 root cause shows itself (docs/faults.md): network faults abort NCCL, NCCL
// watchdog timeouts are hangs, silent data corruption needs a loss check, host faults take the
// node and its agent down (heartbeat); GPU faults and software bugs crash the process (an Xid
// that kills the CUDA context; Llama 3 reports most GPU interruptions this way).
DetectionMechanism DefaultDetectionOf(std::string_view name, std::string_view category) {
  if (name == "NCCL watchdog timeouts") return DetectionMechanism::kCollectiveTimeout;
  if (name == "Silent data corruption") return DetectionMechanism::kLossCheck;
  if (category == "network") return DetectionMechanism::kNcclError;
  if (category == "host") return DetectionMechanism::kHeartbeat;
  return DetectionMechanism::kProcessExit;
}

}  // namespace

std::vector<FailureCause> DefaultFailureCauses() {
  // "The Llama 3 Herd of Models" (2024), Table 5: root causes of the 419 unexpected
  // interruptions of the 54-day run (docs/evidence/llama3_interruptions_54d.csv).
  struct Row {
    const char* name;
    const char* category;
    int count;
  };
  static constexpr Row kRows[] = {
      {"Faulty GPU", "GPU", 148},
      {"GPU HBM3 memory", "GPU", 72},
      {"Software bug", "software", 54},
      {"Network switch or cable", "network", 35},
      {"Host maintenance", "host", 32},
      {"GPU SRAM memory", "GPU", 19},
      {"GPU system processor", "GPU", 17},
      {"NIC", "network", 7},
      {"NCCL watchdog timeouts", "software", 7},
      {"Silent data corruption", "GPU", 6},
      {"GPU thermal interface and sensor", "GPU", 6},
      {"SSD", "host", 3},
      {"Power supply", "host", 3},
      {"Server chassis", "host", 2},
      {"IO expansion board", "host", 2},
      {"Dependency", "software", 2},
      {"CPU", "host", 2},
      {"System memory", "host", 2},
  };
  std::vector<FailureCause> causes;
  for (const Row& r : kRows) {
    FailureCause c;
    c.name = r.name;
    c.category = r.category;
    c.weight = r.count;
    c.needs_replacement = std::string_view(r.category) != "software";
    c.repair_time = c.needs_replacement ? sim::Time::Hours(kDefaultRepairHours) : sim::Time();
    c.detection = DefaultDetectionOf(c.name, c.category);
    c.silent = c.detection == DetectionMechanism::kLossCheck;
    causes.push_back(std::move(c));
  }
  return causes;
}

Status FailureModelConfig::Validate() const {
  if (!std::isfinite(node_day_rate) || node_day_rate < 0) {
    return Status::InvalidArgument(
        "failures.node_day_rate must be a finite number >= 0 (failures per node per day; "
        "Llama 3: 3.79e-3), got " +
        std::to_string(node_day_rate));
  }
  if (!std::isfinite(weibull_shape) || weibull_shape < kMinWeibullShape) {
    return Status::InvalidArgument(
        "failures.weibull_shape must be >= 0.1 (below it the Weibull scale underflows the 1 ns "
        "time resolution), got " +
        std::to_string(weibull_shape));
  }
  double total = 0;
  for (const FailureCause& c : causes) {
    if (!std::isfinite(c.weight) || c.weight < 0) {
      return Status::InvalidArgument("failures: cause \"" + c.name +
                                     "\" has a negative or non-finite weight");
    }
    if (c.repair_time < sim::Time()) {
      return Status::InvalidArgument("failures: cause \"" + c.name +
                                     "\" has a negative repair time");
    }
    total += c.weight;
  }
  if (enabled && !causes.empty() && total <= 0) {
    return Status::InvalidArgument("failures: the cause weights sum to zero");
  }
  return Status::Ok();
}

FailureProcess::FailureProcess(const FailureModelConfig& config, int nodes, sim::Rng rng)
    : config_(config),
      causes_(config.causes.empty() ? DefaultFailureCauses() : config.causes),
      nodes_(nodes),
      rng_(rng) {
  double sum = 0;
  for (const FailureCause& c : causes_) {
    sum += c.weight;
    cumulative_weight_.push_back(sum);
  }
  node_rate_per_s_ = config_.node_day_rate / 86400.0;
  active_ = config_.enabled && node_rate_per_s_ > 0 && sum > 0 && nodes_ > 0;
  if (active_ && config_.distribution == FailureDistribution::kWeibull) {
    const double k = config_.weibull_shape;
    weibull_scale_s_ = (1.0 / node_rate_per_s_) / std::tgamma(1.0 + 1.0 / k);
    for (int n = 0; n < nodes_; ++n) heap_.push({DrawWeibullGap().nanos(), n});
  }
}

double FailureProcess::ClusterMtbfSeconds() const {
  if (!active_) return std::numeric_limits<double>::infinity();
  return 1.0 / (nodes_ * node_rate_per_s_);
}

int FailureProcess::DrawCause() {
  const double u = rng_.Uniform() * cumulative_weight_.back();
  for (size_t i = 0; i < cumulative_weight_.size(); ++i) {
    if (u < cumulative_weight_[i]) return static_cast<int>(i);
  }
  return static_cast<int>(cumulative_weight_.size()) - 1;
}

sim::Time FailureProcess::DrawWeibullGap() {
  const double s = rng_.Weibull(config_.weibull_shape, weibull_scale_s_);
  // Gaps beyond ~290 years are as good as never. A gap that rounds to 0 ns becomes 1 ns (the
  // time resolution), so a node's failures always move time forward and Next() cannot return
  // the same instant forever, whatever the shape.
  if (!(s < 9e9)) return sim::Time::Seconds(9000000000LL);
  return std::max(sim::Time::FromSeconds(s), sim::Time::Nanos(1));
}

FailureProcess::Arrival FailureProcess::Next() {
  Arrival a;
  if (!active_) return a;
  if (config_.distribution == FailureDistribution::kExponential) {
    const double gap_s = rng_.Exponential(1.0 / (nodes_ * node_rate_per_s_));
    std::optional<sim::Time> gap = sim::Time::FromSecondsChecked(gap_s);
    std::optional<sim::Time> at =
        gap ? sim::Time::CheckedAdd(now_, *gap) : std::optional<sim::Time>();
    if (!at) {
      active_ = false;
      return a;
    }
    now_ = *at;
    a.at = now_;
    a.node = static_cast<int>(rng_.UniformInt(static_cast<uint64_t>(nodes_)));
    a.cause = DrawCause();
    return a;
  }
  auto [t_ns, node] = heap_.top();
  heap_.pop();
  a.at = sim::Time::Nanos(t_ns);
  a.node = node;
  a.cause = DrawCause();
  std::optional<sim::Time> next = sim::Time::CheckedAdd(a.at, DrawWeibullGap());
  heap_.push({next ? next->nanos() : sim::Time::Max().nanos(), node});
  return a;
}

}  // namespace trainsim::checkpoint
