// step/pass_costs.h — the closed-form half of the step cost model: what one pass of one model
// chunk costs and what a step's communication carries. The step simulation (step_simulation.h)
// runs these costs on the engine; the sweep's estimator (sweep/estimator.h) adds them up in
// closed form. Both take every per-pass number from here, so the two views cannot drift.
//
// Promises: deterministic; times in seconds, sizes in bytes on the wire (scaled by the TP peers
// that share one NIC); no engine. ChunkCosts returns the TP timer's error unchanged.
#ifndef TRAINSIM_STEP_PASS_COSTS_H_
#define TRAINSIM_STEP_PASS_COSTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/calibration.h"
#include "comm/collective.h"
#include "comm/topology.h"
#include "parallelism/compute.h"
#include "step/step_simulation.h"

namespace trainsim::step {

// Times one collective of `bytes` over the layout's TP group (seconds; 0 for a group of one).
class TpCollectiveTimer {
 public:
  virtual ~TpCollectiveTimer() = default;
  virtual Result<double> Seconds(comm::Op op, double bytes) = 0;
};

// comm's closed form over `group`, the calibration's measured curve where it covers the
// collective, memoised per (op, bytes); records which collectives came from the calibration.
class CalibratedTpTimer final : public TpCollectiveTimer {
 public:
  CalibratedTpTimer(const comm::Topology* topo, std::vector<int> group,
                    const comm::Calibration* calibration);
  Result<double> Seconds(comm::Op op, double bytes) override;
  // (name, calibrated) per distinct collective ("all_gather 8 ranks"), in first-use order; a
  // collective counts as calibrated only when every size it ran at was.
  const std::vector<std::pair<std::string, bool>>& use() const { return use_; }

 private:
  const comm::Topology* topo_;
  std::vector<int> group_;
  const comm::Calibration* cal_;
  int nodes_ = 1;
  std::map<std::pair<int, uint64_t>, double> cache_;
  std::vector<std::pair<std::string, bool>> use_;
};

// One model chunk's passes for one micro-batch: unslowed compute (backward includes
// recomputation) and the TP collectives, which run between the kernels and are never hidden.
struct ChunkCost {
  double fwd_compute_s = 0, fwd_tp_s = 0;
  double bwd_compute_s = 0, bwd_tp_s = 0;
};

// The costs of every virtual stage, index chunk·pp + rank. Matrix products take the measured
// rate where `gemm` covers their shape.
Result<std::vector<ChunkCost>> ChunkCosts(const StepConfig& cfg,
                                          const parallelism::GemmCalibration& gemm,
                                          TpCollectiveTimer* tp);

// The GEMM calibration a config asks for (a null calibration without one).
parallelism::GemmCalibration GemmCalibrationOf(const StepConfig& cfg);

// Model chunks per pipeline rank (v; 1 unless interleaved).
int ChunksPerRank(const parallelism::ParallelConfig& c);
// TP peers whose traffic leaves through one NIC (flows carry their bytes together).
int NicShare(const parallelism::ParallelConfig& c, const comm::TopologySpec& topology);
// One pipeline send: the boundary activation (1/TP of it with scatter/gather or SP).
double PipelineSendBytes(const StepConfig& cfg, int nic_share);

// The data-parallel gradient reduction of one stage: `count` collectives of `bytes`, launched in
// order, per_chunk of them as each chunk's backward produces its gradients.
struct GradientBuckets {
  int per_chunk = 1;
  int64_t count = 0;  // 0 when DP = 1
  double bytes = 0;
  comm::Op op = comm::Op::kAllReduce;
};
GradientBuckets PlanGradientBuckets(const StepConfig& cfg, int stage, int nic_share);

// ZeRO-1/2: the all-gather of a stage's updated 16-bit weights after the optimizer.
double ZeroWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share);
// ZeRO-3: the all-gather of one chunk's weights before each pass.
double Zero3PassGatherBytes(const StepConfig& cfg, int stage, int nic_share);
// PP > 1: the tied word embedding's gradient all-reduce between the first and last stage.
double TiedEmbeddingBytes(const StepConfig& cfg, int nic_share);
// The optimizer step of one GPU of `stage` at full speed.
double OptimizerSeconds(const StepConfig& cfg, int stage);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PASS_COSTS_H_
