// sweep/estimator.h — the closed-form view of the step cost model, which ranks layouts in a sweep.
//
// One healthy step timed without the engine: every per-pass cost comes from step/pass_costs.h
// (the step simulation's own); the pipeline is m passes of the busiest rank plus the fill and
// drain (Narayanan et al. §2.2) and its transfers, or, with blocking sends under interleaving, a
// task-by-task replay on the idle network (sweep/pipeline_replay.h); DP buckets reduce one after
// another on one communicator as backward makes them ready; then the tied-embedding all-reduce,
// the optimizer and the ZeRO-1/2 weight all-gather. It leaves out NIC contention between
// concurrent DP and PP flows. docs/sweep.md gives the derivation.
//
// Promises: deterministic; no engine events; tests/sweep/estimator_test.cc holds it within 2%
// of step::SimulateStep over a spread of layouts and 60 random ones.
#ifndef TRAINSIM_SWEEP_ESTIMATOR_H_
#define TRAINSIM_SWEEP_ESTIMATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "comm/collective.h"
#include "comm/topology.h"
#include "sim/status.h"
#include "step/step_simulation.h"

namespace trainsim::sweep {

struct StepEstimate {
  double time_s = 0;
  double mfu = 0;
  double hfu = 0;
  double pipeline_s = 0;  // forward/backward passes incl. fill/drain and PP transfers
  // Gradient reduction not hidden, ZeRO gathers after the step. (ZeRO-2/3's per-backward wait
  // for its buckets is in pipeline_s: each backward pass includes it.)
  double exposed_dp_comm_s = 0;
  double optimizer_s = 0;
};

// Memoises topologies (per TopologySpec nodes count) and closed-form collective times, so a sweep
// evaluates thousands of layouts without rebuilding them. Thread-safe, one for all of a sweep's
// threads: each value is computed once (a thread that needs a value another is computing waits
// for it), so threads neither repeat the costly closed forms of large groups nor see different
// numbers — every value is a pure function of its key.
class EstimatorCache {
 public:
  EstimatorCache() = default;
  EstimatorCache(const EstimatorCache&) = delete;
  EstimatorCache& operator=(const EstimatorCache&) = delete;
  // The topology for `spec` (built once per distinct node count; the other fields must be the
  // same for every call on one cache).
  Result<const comm::Topology*> TopologyFor(const comm::TopologySpec& spec);
  // Closed-form time of a collective (memoised on op, bytes and the group when it is an
  // arithmetic progression of GPU ids, as TP, DP and PP groups are).
  Result<double> CollectiveSeconds(const comm::Topology& topo, comm::Op op,
                                   const std::vector<int>& gpus, double bytes);
  // The SM share the same collective takes from the compute beside it
  // (step::CollectiveSmShare, with the algorithm and protocol its closed form chose): what the
  // step simulation charges for a data-parallel collective. From the same memoised entry.
  Result<double> CollectiveShare(const step::StepConfig& cfg, const comm::Topology& topo,
                                 comm::Op op, const std::vector<int>& gpus, double bytes);

 private:
  struct Entry {
    std::once_flag once;
    Status status;
    double seconds = 0;
    comm::Algo algo = comm::Algo::kRing;
    comm::Protocol protocol = comm::Protocol::kSimple;
    int nodes = 0;
  };
  // Calls `use` with the entry of the collective, filled on first use (an uncached one for a
  // group that is not an arithmetic progression).
  template <typename Use>
  auto WithEntry(const comm::Topology& topo, comm::Op op, const std::vector<int>& gpus,
                 double bytes, Use use);
  std::mutex mu_;  // guards the two maps (entries are filled once, outside it)
  std::map<int, std::unique_ptr<comm::Topology>> topologies_;
  std::map<std::tuple<const comm::Topology*, int, int, int, int, uint64_t>, std::unique_ptr<Entry>>
      collectives_;
};

// Estimates one healthy step. Validates the layout (as SimulateStep does) but not memory.
Result<StepEstimate> EstimateStep(const step::StepConfig& config, EstimatorCache* cache);

}  // namespace trainsim::sweep

#endif  // TRAINSIM_SWEEP_ESTIMATOR_H_
