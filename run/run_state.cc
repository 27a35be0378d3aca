#include "run/run_state.h"

#include <cstdio>
#include <string>
#include <tuple>

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

std::string RunState::Describe() const {
  char buf[96];
  std::string out = std::to_string(live_dp_replicas) + " data-parallel replica" +
                    (live_dp_replicas == 1 ? "" : "s") + " live";
  for (const auto& [gpu, f] : gpu_slowdown) {
    std::snprintf(buf, sizeof(buf), ", GPU %d slowed %.3gx", gpu, f);
    out += buf;
  }
  for (const auto& [nic, f] : nic_link_factor) {
    std::snprintf(buf, sizeof(buf), ", NIC %d at %.3g%% of its bandwidth", nic, 100 * f);
    out += buf;
  }
  if (checkpoint_traffic_share > 0) {
    std::snprintf(buf, sizeof(buf), ", a checkpoint write taking %.3g%% of the network",
                  100 * checkpoint_traffic_share);
    out += buf;
  }
  return out;
}

bool StepTimeCache::StateLess::operator()(const RunState& a, const RunState& b) const {
  return std::tie(a.live_dp_replicas, a.gpu_slowdown, a.nic_link_factor,
                  a.checkpoint_traffic_share) < std::tie(b.live_dp_replicas, b.gpu_slowdown,
                                                         b.nic_link_factor,
                                                         b.checkpoint_traffic_share);
}

Result<StepTiming> StepTimeCache::Get(const RunState& state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memo_.find(state);
    if (it != memo_.end()) return it->second;
  }
  const std::string key = state.Key();
  Result<StepTiming> r = fn_(state);
  if (!r.ok()) return r.status().WithPrefix("the step with " + state.Describe());
  const StepTiming& t = r.value();
  if (t.useful < sim::Time() || t.exposed_comm < sim::Time() || t.bubble < sim::Time() ||
      t.total() <= sim::Time()) {
    return Status::Internal("step simulation returned a negative part or a zero step time for {" +
                            key + "}");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return memo_.emplace(state, t).first->second;
}

size_t StepTimeCache::distinct_states() const {
  std::lock_guard<std::mutex> lock(mu_);
  return memo_.size();
}
}  // namespace trainsim::run
