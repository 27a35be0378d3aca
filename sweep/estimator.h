// sweep/estimator.h — the analytic step-time estimator that ranks layouts in a sweep.
//
// What it is: one training step of a StepConfig, timed without an event per operation, from the
// same building blocks the step simulation (step/step_simulation.h) uses: the ops of a
// layer and their times (parallelism/model.h, compute.h), the TP collectives timed with comm's
// closed form (comm/collective.h EstimateCollective), the pipeline schedule's shape and the DP
// gradient buckets. It adds up, per pipeline stage:
//   - per micro-batch and model chunk: forward and backward compute (with recomputation) and TP
//     collectives, exactly as the step simulation's ChunkCost (ZeRO-3: plus the weight gather);
//   - the pipeline: m micro-batches of the busiest rank's work plus the fill/drain of
//     (p − 1) chunk passes (bubble (p − 1)/(v·m) of the work, Narayanan et al. §2.2), and the
//     stage-to-stage transfers on the fill and drain path, 2·(p − 1)·v transfers for interleaving
//     (send/recv closed form; v× more messages, Narayanan §2.2.2);
//   - DP: the gradient buckets as they become ready during the last backward(s), reduced one
//     after another on one communicator (closed form on the idle network), exposed where they
//     outlast the backward; then the gradient-norm barrier, the optimizer and (ZeRO-1/2) the
//     all-gather of updated weights.
// What it does not model (the step simulation does): NIC contention between concurrent DP and
// PP flows, per-stage imbalance beyond the first/last stage's extra layers.
//
// What it promises: deterministic; no engine events; tests/sweep/estimator_test.cc holds it
// within 5% of SimulateStep over a spread of layouts and prints where it is not.
#ifndef TRAINSIM_SWEEP_ESTIMATOR_H_
#define TRAINSIM_SWEEP_ESTIMATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "comm/collective.h"
#include "comm/topology.h"
#include "step/step_simulation.h"
#include "sim/status.h"

namespace trainsim::sweep {

struct StepEstimate {
  double time_s = 0;
  double mfu = 0;
  double hfu = 0;
  double pipeline_s = 0;         // forward/backward passes incl. fill/drain and PP transfers
  double exposed_dp_comm_s = 0;  // gradient reduction not hidden, ZeRO gathers after the step
  double optimizer_s = 0;
};

// Memoises topologies (per TopologySpec nodes count) and closed-form collective times, so a sweep
// evaluates thousands of layouts without rebuilding them. Not thread-safe; one per thread.
class EstimatorCache {
 public:
  EstimatorCache() = default;
  // The topology for `spec` (built once per distinct node count; the other fields must be the
  // same for every call on one cache).
  Result<const comm::Topology*> TopologyFor(const comm::TopologySpec& spec);
  // Closed-form time of a collective (memoised on op, bytes and the group when it is an
  // arithmetic progression of GPU ids, as TP, DP and PP groups are).
  Result<double> CollectiveSeconds(const comm::Topology& topo, comm::Op op,
                                   const std::vector<int>& gpus, double bytes);

 private:
  std::map<int, std::unique_ptr<comm::Topology>> topologies_;
  std::map<std::tuple<const comm::Topology*, int, int, int, int, uint64_t>, double> collectives_;
};

// Estimates one healthy step. Validates the layout (as SimulateStep does) but not memory.
Result<StepEstimate> EstimateStep(const step::StepConfig& config, EstimatorCache* cache);

}  // namespace trainsim::sweep

#endif  // TRAINSIM_SWEEP_ESTIMATOR_H_
