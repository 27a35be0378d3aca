// checkpoint/failure_model.h — the stochastic failure model of a run: a per-node-day rate split
// by root cause (each cause with whether it needs its node replaced and how long repair takes),
// and a FailureProcess that draws one trial's failure history, exponential or Weibull per node.
// Defaults: Llama 3's 54-day run, 419 interruptions on 2,048 nodes = 3.79e-3 per node-day
// (docs/evidence/llama3_interruptions_54d.csv); docs/run-simulation.md gives the sources and
// the processes' derivation.
//
// Invariants: arrivals come in non-decreasing time order; the cause and node of each arrival are
// drawn from the process's own Rng only, so two runs given the same stream see the same history
// whatever else they do (common random numbers for whatif); with the model disabled or a zero
// rate, Next() returns Time::Max().
#ifndef TRAINSIM_CHECKPOINT_FAILURE_MODEL_H_
#define TRAINSIM_CHECKPOINT_FAILURE_MODEL_H_

#include <cstdint>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "sim/random.h"
#include "sim/status.h"
#include "sim/time.h"

namespace trainsim::checkpoint {

// Llama 3: 419 unexpected interruptions / (54 days × 2,048 nodes).
inline constexpr double kLlama3NodeDayRate = 419.0 / (54.0 * 2048.0);
// Default repair time for a cause that takes its node out (see the header comment).
inline constexpr int64_t kDefaultRepairHours = 4;
// Default Weibull shape (Schroeder & Gibson, DSN'06: 0.7–0.8 for node inter-failure times).
inline constexpr double kDefaultWeibullShape = 0.75;
// Smallest Weibull shape accepted. The scale is mean / Γ(1 + 1/k): at k = 0.1 Γ(11) = 3.6e6, at
// k = 0.02 Γ(51) = 3e64, so the scale underflows the simulator's 1 ns resolution and nearly every
// gap rounds to 0 ns (k = 0.02 at the Llama 3 rate: 99.99 % of gaps; k = 0.1: 10 %). Published
// fits of node inter-failure times are 0.5–0.8 (Schroeder & Gibson, DSN'06), far above it.
inline constexpr double kMinWeibullShape = 0.1;

// How a fault becomes known to the job (checkpoint::DetectionDelays has each default delay).
enum class DetectionMechanism {
  kProcessExit,        // the process crashed; the launcher sees it exit
  kNcclError,          // NCCL aborts on an IB/network error after the transport's retries
  kHeartbeat,          // the node and its agent are gone; the rendezvous misses its heartbeats
  kCollectiveTimeout,  // a rank hangs; its peers time out in a collective (watchdog)
  kLossCheck,          // silent data corruption, found by a loss spike or a numerical check
  kStepTime,           // a straggler policy saw a rank's step time over its threshold
};
// Stable names: "PROCESS_EXIT", "NCCL_ERROR", "HEARTBEAT", "COLLECTIVE_TIMEOUT", "LOSS_CHECK",
// "STEP_TIME".
const char* DetectionMechanismName(DetectionMechanism m);

struct FailureCause {
  std::string name;      // "Faulty GPU"
  std::string category;  // GPU, network, host, software
  double weight = 0;     // relative frequency (Llama 3 counts by default)
  bool needs_replacement = true;
  sim::Time repair_time = sim::Time::Hours(kDefaultRepairHours);
  DetectionMechanism detection = DetectionMechanism::kProcessExit;
  // Silent data corruption: training goes on with corrupted state until detected, then rolls
  // back to the newest checkpoint written before the corruption.
  bool silent = false;
};

enum class FailureDistribution { kExponential, kWeibull };

struct FailureModelConfig {
  bool enabled = true;
  double node_day_rate = kLlama3NodeDayRate;  // failures per node per day, all causes together
  FailureDistribution distribution = FailureDistribution::kExponential;
  double weibull_shape = kDefaultWeibullShape;
  std::vector<FailureCause> causes;  // empty = DefaultFailureCauses()

  // Rejects negative or non-finite rates, shapes below kMinWeibullShape, negative weights or repair
  // times, and a cause mix that sums to zero while the model is enabled.
  Status Validate() const;
};

// The 18 root causes of Llama 3's Table 5 with their counts as weights and the mapping above.
std::vector<FailureCause> DefaultFailureCauses();

// The failure history of one trial on `nodes` node slots.
class FailureProcess {
 public:
  struct Arrival {
    sim::Time at = sim::Time::Max();
    int node = -1;
    int cause = -1;  // index into causes()
  };

  // REQUIRES: config.Validate().ok(), nodes > 0.
  FailureProcess(const FailureModelConfig& config, int nodes, sim::Rng rng);

  // The next failure (time order). Time::Max() when there are no more.
  Arrival Next();
  const std::vector<FailureCause>& causes() const { return causes_; }
  // Mean time between failures of the whole cluster (seconds); +inf when disabled.
  double ClusterMtbfSeconds() const;

 private:
  int DrawCause();
  sim::Time DrawWeibullGap();

  FailureModelConfig config_;
  std::vector<FailureCause> causes_;
  std::vector<double> cumulative_weight_;
  int nodes_;
  sim::Rng rng_;
  bool active_ = false;
  double node_rate_per_s_ = 0;
  sim::Time now_;  // exponential: time of the last arrival
  double weibull_scale_s_ = 0;
  // Weibull: (next failure time, node), smallest first; ties broken by node id.
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>, std::greater<>>
      heap_;
};

}  // namespace trainsim::checkpoint

#endif  // TRAINSIM_CHECKPOINT_FAILURE_MODEL_H_
