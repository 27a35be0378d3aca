// run::RunState and run::StepTimeCache — what the run simulation asks of the step: "how long is
// one training step while the cluster is in this state?", answered by a callback and memoised.
//
// Promises: equal states give equal Key()s (exact for every double; error messages name the state
// by it); the cache memoises by the fields themselves (the finite values RunConfig validation
// lets through) and calls the callback once per distinct state, in a deterministic std::map,
// and rejects a timing with a negative part or a zero total. The run simulation sees the step
// only through this.
#ifndef TRAINSIM_RUN_RUN_STATE_H_
#define TRAINSIM_RUN_RUN_STATE_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::run {

// What differs from the healthy cluster, as the step simulation needs to know it.
struct RunState {
  int live_dp_replicas = 0;  // data-parallel replicas training (DP when healthy)
  // Per-GPU slowdown factors (> 1 slower), sorted by GPU id, one entry per slowed GPU.
  std::vector<std::pair<int, double>> gpu_slowdown;
  // Per-NIC link bandwidth factors (0 < f < 1 degraded), sorted by NIC id (node ·
  // nics_per_node + local index; the cable from that NIC to its leaf switch).
  std::vector<std::pair<int, double>> nic_link_factor;
  // Fraction of each node's network bandwidth used by a background checkpoint write (0 = none).
  double checkpoint_traffic_share = 0;

  bool operator==(const RunState&) const = default;
  // Canonical encoding, used as the memo key; equal states give equal keys.
  std::string Key() const;
  // For messages: "N data-parallel replicas live, GPU g slowed 1.5x, NIC n at 50%, ...".
  std::string Describe() const;
};

// One step's time and its split. total() = useful + exposed_comm + bubble.
struct StepTiming {
  sim::Time useful;        // compute that advances training
  sim::Time exposed_comm;  // communication not hidden behind compute
  sim::Time bubble;        // pipeline bubble and other idle time inside the step
  sim::Time total() const { return useful + exposed_comm + bubble; }
};

using StepTimeFn = std::function<Result<StepTiming>(const RunState&)>;

// Memoises a StepTimeFn per distinct RunState. Shared by all trials of a Monte Carlo study.
// Thread-safe: Get may be called from several threads (RunTrials with threads > 1). The function
// is then called outside the lock and must itself be safe to call concurrently (the step
// simulation is: it keeps no shared mutable state); two threads missing on the same state may
// both call it, and the first result stored is kept — the same either way, since the function
// is deterministic.
class StepTimeCache {
 public:
  explicit StepTimeCache(StepTimeFn fn) : fn_(std::move(fn)) {}
  // The memoised timing, calling the function on a miss; its errors are returned as Status.
  Result<StepTiming> Get(const RunState& state);
  size_t distinct_states() const;

 private:
  StepTimeFn fn_;
  // Orders states field by field (the same states as equal Key()s, without formatting a key:
  // Key()'s %.17g was ~18% of an ASYNC trial's CPU, whose state changes twice per checkpoint).
  struct StateLess {
    bool operator()(const RunState& a, const RunState& b) const;
  };
  mutable std::mutex mu_;
  std::map<RunState, StepTiming, StateLess> memo_;  // guarded by mu_
};

}  // namespace trainsim::run

#endif  // TRAINSIM_RUN_RUN_STATE_H_
