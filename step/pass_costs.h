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

// The comm op a layer's collective runs as (parallelism/model.h TpCollectiveKind).
comm::Op ToCommOp(parallelism::TpCollectiveKind kind);

// Times one collective of `bytes` over the layout's TP group (seconds; 0 for a group of one).
class TpCollectiveTimer {
 public:
  virtual ~TpCollectiveTimer() = default;
  virtual Result<double> Seconds(comm::Op op, double bytes) = 0;
};

// The GPU sets a layer group's collective is timed over, the collective lasting as long as the
// slowest: the group itself, except that a send/recv over more than two GPUs is one step of a
// ring (the CP ring's K/V pass): every rank sends to the next at once, each pair on its own
// path, so it is timed pair by pair (the pair that leaves the node binds when the ring spans
// nodes).
std::vector<std::vector<int>> TimedGroups(comm::Op op, const std::vector<int>& group);

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
// recomputation) and the exposed part of the layer collectives, which run between the kernels:
// TP (all of it, or what Transformer Engine's userbuffers leave exposed with tp_comm_overlap),
// CP (the K/V exchange beyond the attention it runs under) and EP (the token all-to-alls).
struct ChunkCost {
  double fwd_compute_s = 0, fwd_tp_s = 0;
  double bwd_compute_s = 0, bwd_tp_s = 0;
  double fwd_cp_s = 0, bwd_cp_s = 0;
  double fwd_ep_s = 0, bwd_ep_s = 0;
  // Kernels one pass launches, and how long the GPU waits for the host to launch them beyond
  // the pass's own time (step/host_overhead.h: 0 unless the pass is launch-bound).
  double fwd_kernels = 0, bwd_kernels = 0;
  double fwd_host_s = 0, bwd_host_s = 0;
  // The pass waiting for activation offloading's copies (step/activation_offload.h; 0 unless
  // ParallelConfig::cpu_offload_layers).
  double fwd_offload_s = 0, bwd_offload_s = 0;
  // The part of fwd/bwd_compute_s that is compute slowed by the layer collectives overlapped
  // with it (TE userbuffers' TP, the CP ring under attention, overlapped EP all-to-alls), for
  // the breakdown's "compute slowed by overlapped comm" (step/comm_sm_share.h).
  double fwd_slowed_s = 0, bwd_slowed_s = 0;
  // The pass's CP and EP traffic, which the step simulation runs as flows on the network
  // (Pipeline): the bytes each rank of the group sends over all the pass's collectives of the
  // group, summed (a send/recv's message times its steps; the all-to-alls' buffers; an
  // all-gather's or reduce-scatter's tensor, whose wire volume per rank is an all-to-all's of
  // that size), and their closed-form seconds before any overlap hid them, of which
  // fwd/bwd_cp_s and fwd/bwd_ep_s are the exposed part. Backward includes what recomputation
  // re-runs.
  double fwd_cp_bytes = 0, bwd_cp_bytes = 0;
  double fwd_cp_raw_s = 0, bwd_cp_raw_s = 0;
  double fwd_ep_bytes = 0, bwd_ep_bytes = 0;
  double fwd_ep_raw_s = 0, bwd_ep_raw_s = 0;
  double fwd_comm_s() const { return fwd_tp_s + fwd_cp_s + fwd_ep_s; }
  double bwd_comm_s() const { return bwd_tp_s + bwd_cp_s + bwd_ep_s; }
  // One dense and one MoE layer's share of the above (the trace draws the pass layer by layer;
  // the rest of the pass is the embedding, the output head and the pipeline gather).
  struct Layer {
    double fwd_compute_s = 0, bwd_compute_s = 0, fwd_tp_s = 0, bwd_tp_s = 0;
    double fwd_cp_s = 0, bwd_cp_s = 0, fwd_ep_s = 0, bwd_ep_s = 0;
  };
  Layer dense, moe;
};

// A timer per layer group (null: a group of one, whose collectives cost nothing).
struct GroupTimers {
  TpCollectiveTimer* tp = nullptr;
  TpCollectiveTimer* cp = nullptr;
  TpCollectiveTimer* ep = nullptr;
  TpCollectiveTimer* etp = nullptr;
  // The EP ranks of one NVLink domain (NvlinkPeers of the EP group): the FLEX dispatcher's
  // forwarding leg across nodes (step/flex_dispatch.h). Null: no such leg is timed.
  TpCollectiveTimer* ep_node = nullptr;
  TpCollectiveTimer* For(parallelism::CommGroup g) const;
};

// The costs of every virtual stage, index chunk·pp + rank, each summing its own layers
// (parallelism::ChunkLayerRanges: uneven first/last stages; dense and MoE layers). Matrix
// products take the measured rate where `gemm` covers their shape.
Result<std::vector<ChunkCost>> ChunkCosts(const StepConfig& cfg,
                                          const parallelism::GemmCalibration& gemm,
                                          const GroupTimers& timers);

// Streaming multiprocessors Transformer Engine's userbuffers take from the GEMMs they overlap:
// TE's default configuration (transformer_engine/pytorch/module/base.py, initialize_ub) runs
// all-gathers as a copy-engine ring exchange with 1 SM and reduce-scatters with the "pipeline"
// (or "bulk") method on 16 SMs; a reduce-scatter run as a ring exchange
// (tp_comm_overlap_rs_method RING_EXCHANGE, Megatron-Bridge's RingExchangeOverlapCfg num_sm=1)
// takes the ring exchange's 1.
inline constexpr double kUbAllGatherSms = 1;
inline constexpr double kUbReduceScatterSms = 16;

// GPU 0's expert tensor-parallel group: the first etp ranks (ETP is innermost in the expert
// grid, parallelism/layout.h).
std::vector<int> ExpertTpGroup(const parallelism::ParallelConfig& c);

// The parameters one GPU of `stage` holds, split into dense (reduced over DP × CP) and expert
// (reduced over expert-DP) parts.
parallelism::ParamSplit StageParams(const StepConfig& cfg, int stage);

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
// Each bucket reduces its dense gradients over DP × CP and, in MoE models, its expert gradients
// over the expert-DP group (expert_bytes; 0 for dense models or an expert-DP group of one).
struct GradientBuckets {
  int per_chunk = 1;
  int64_t count = 0;  // 0 when neither group has more than one rank
  double bytes = 0;
  double expert_bytes = 0;
  comm::Op op = comm::Op::kAllReduce;
};
GradientBuckets PlanGradientBuckets(const StepConfig& cfg, int stage, int nic_share);

// ZeRO-1/2: the all-gather of a stage's updated 16-bit weights after the optimizer (dense part
// over DP × CP; the expert part over expert-DP: ZeroExpertWeightGatherBytes).
double ZeroWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share);
double ZeroExpertWeightGatherBytes(const StepConfig& cfg, int stage, int nic_share);
// ZeRO-3 / FSDP: the all-gathers of one chunk's weights before each pass, the dense part over
// the dense group (DenseShardGroup), the expert part over expert-DP (0 when that group is one
// rank: the experts are then not sharded).
struct Zero3Gather {
  double dense = 0, expert = 0;
};
Zero3Gather Zero3PassGather(const StepConfig& cfg, int stage, int nic_share);
// The group a stage's dense gradients are reduced (and ZeRO-3 weights gathered) over for the
// replica holding `gpu`: DP × CP, or with hybrid sharding the shard group of it; and with
// hybrid sharding the ranks holding the same shard in the other groups (else empty).
std::vector<int> DenseShardGroup(const parallelism::Layout& layout, int gpu);
std::vector<int> ShardReplicaGroup(const parallelism::Layout& layout, int gpu);
// The SM share of a collective as NCCL would run it (step/comm_sm_share.h), with the scenario's
// CTA limits: the algorithm and protocol comm chose, its ranks, the nodes they span, its size.
double CollectiveSmShare(const StepConfig& cfg, comm::Op op, comm::Algo algo,
                         comm::Protocol protocol, int ranks, int nodes, double bytes);
// PP > 1: the tied word embedding's gradient all-reduce between the first and last stage.
double TiedEmbeddingBytes(const StepConfig& cfg, int nic_share);
// The optimizer step of one GPU of `stage` at full speed.
double OptimizerSeconds(const StepConfig& cfg, int stage);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PASS_COSTS_H_
