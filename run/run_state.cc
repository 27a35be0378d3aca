#include "run/run_state.h"

#include <cstdio>
#include <string>

namespace trainsim::run {

std::string RunState::Key() const {
  // %.17g round-trips doubles exactly, so distinct states never share a key.
  std::string key = "dp=" + std::to_string(live_dp_replicas);
  char buf[64];
  key += ";slow=";
  for (const auto& [gpu, f] : gpu_slowdown) {
    std::snprintf(buf, sizeof(buf), "%d:%.17g,", gpu, f);
    key += buf;
  }
  key += ";link=";
  for (const auto& [nic, f] : nic_link_factor) {
    std::snprintf(buf, sizeof(buf), "%d:%.17g,", nic, f);
    key += buf;
  }
  std::snprintf(buf, sizeof(buf), ";ckpt=%.17g", checkpoint_traffic_share);
  key += buf;
  return key;
}

Result<StepTiming> StepTimeCache::Get(const RunState& state) {
  std::string key = state.Key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
  }
  Result<StepTiming> r = fn_(state);
  if (!r.ok()) return r.status().WithPrefix("step simulation for cluster state {" + key + "}");
  const StepTiming& t = r.value();
  if (t.useful < sim::Time() || t.exposed_comm < sim::Time() || t.bubble < sim::Time() ||
      t.total() <= sim::Time()) {
    return Status::Internal("step simulation returned a negative part or a zero step time for {" +
                            key + "}");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return memo_.emplace(std::move(key), t).first->second;
}

size_t StepTimeCache::distinct_states() const {
  std::lock_guard<std::mutex> lock(mu_);
  return memo_.size();
}
}  // namespace trainsim::run
