// parallelism/layout.h — the parallel layout: TP×PP×DP and where every rank runs.
//
// What it is: the parallel configuration of one training job (degrees, micro-batching,
// schedule, recomputation, ZeRO stage, DP bucketing, overlaps) and the map rank ↔ (tp, cp, dp,
// pp) ↔ GPU id ↔ node. The order is Megatron-Core's default "tp-cp-ep-dp-pp": TP innermost,
// then CP, then DP, then PP
//   rank = tp + TP·(cp + CP·(dp + DP·pp)),
// so a TP group sits on consecutive GPUs (inside one NVSwitch node when TP ≤ GPUs per node), a
// CP group strides by TP, a DP group by TP·CP, and pipeline stages are the outermost blocks.
// Expert layers fold the same tp·cp·dp ranks of a stage into etp × ep × expert-DP, ETP
// innermost, then EP (Megatron-Core's expert grid "tp-ep-dp-pp" with the expert TP size): the
// EP group strides by ETP. GPU id = rank (GPUs are numbered node-major).
//
// What it promises: ValidateLayout explains every layout that cannot run (degrees that do not
// multiply to the GPU count, layers or heads not divisible, batch not divisible into
// micro-batches, interleaving constraints) with a message naming the values; nothing here
// asserts on user input.
#ifndef TRAINSIM_PARALLELISM_LAYOUT_H_
#define TRAINSIM_PARALLELISM_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "parallelism/model.h"
#include "sim/status.h"

namespace trainsim::parallelism {

enum class PipelineSchedule { kGpipe, k1F1B, kInterleaved1F1B };
std::string ScheduleName(PipelineSchedule s);
Result<PipelineSchedule> ParseSchedule(const std::string& name);  // "gpipe", "1f1b", "interleaved"

struct ParallelConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;  // context parallelism (Megatron-Core --context-parallel-size)
  CpComm cp_comm = CpComm::kP2P;
  int ep = 1;   // expert parallelism (MoE layers; ep · etp divides tp · cp · dp)
  int etp = 1;  // expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size)
  // Uneven pipelines (Megatron's --decoder-first/last-pipeline-num-layers): layers on the first
  // and last stage; -1 = even split. 0 puts the embedding (or the output layer) on a stage of
  // its own. The other stages share the remaining layers evenly.
  int first_stage_layers = -1;
  int last_stage_layers = -1;
  // ZeRO-3 / FSDP hybrid sharding: parameters, gradients and optimizer state sharded over
  // groups of `shard_group` DP ranks and replicated across groups (0 = shard over all of DP).
  int shard_group = 0;
  // Transformer Engine's userbuffers (--tp-comm-overlap): TP all-gathers/reduce-scatters run in
  // chunks under the GEMMs that consume/produce them.
  bool tp_comm_overlap = false;
  // With it, the row-parallel GEMMs' forward reduce-scatter as a ring exchange (tp chunks)
  // rather than TE's default pipeline of 4 splits (scenario tp_comm_overlap_rs_method).
  bool tp_overlap_rs_ring = false;
  // Distributed optimizer's parameter all-gather overlapped with the next step's forward
  // (--overlap-param-gather).
  bool overlap_param_gather = false;
  // Megatron-Core's --overlap-moe-expert-parallel-comm (with --delay-wgrad-compute): in the
  // steady state of 1F1B a micro-batch's forward and another's backward run as one combined
  // step, each one's expert all-to-alls under the other's compute.
  bool moe_a2a_overlap = false;
  // --delay-wgrad-compute beside it: the experts' weight gradients after the backward's
  // dispatch has started (off: the dispatch waits for the experts' whole backward).
  bool moe_delay_wgrad = true;
  // SMs of the FLEX dispatcher's kernels (--moe-flex-dispatcher-num-sms); 0: HybridEP's default
  // (step/comm_sm_share.h, FlexSms).
  int moe_flex_sms = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // --moe-token-dispatcher-type
  // Nodes one EP group spans: Megatron-Core's expert groups take etp · ep consecutive ranks, so
  // ceil(etp · ep / GPUs per node) (1 inside a node). Set by the scenario loader.
  int ep_nodes = 1;
  int micro_batch = 1;
  int64_t global_batch = 1;  // sequences per iteration, all replicas together
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int virtual_stages = 1;  // model chunks per pipeline rank; > 1 means interleaved 1F1B
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  // With kSelective: the RecomputeModule bits recomputed (Megatron-Core's --recompute-modules;
  // its default, the attention core).
  uint32_t recompute_modules = kRecomputeCoreAttn;
  // The modules selective recomputation re-runs: none unless recompute is kSelective.
  uint32_t recomputed_modules() const {
    return recompute == Recompute::kSelective ? recompute_modules : 0;
  }
  // With kFull (Megatron's --recompute-method / --recompute-num-layers): uniform, groups of
  // recompute_num_layers layers each keep their input and re-run whole; block, only the first
  // recompute_num_layers layers of each chunk are checkpointed, the rest keep everything.
  bool recompute_block = false;
  int recompute_num_layers = 1;
  // Whether local layer `i` (0-based within its chunk) is re-run in the backward, and whether
  // it keeps its input as a checkpoint (else, under full recomputation, nothing at all).
  bool RecomputesLayer(int i) const {
    return recompute == Recompute::kFull && (!recompute_block || i < recompute_num_layers);
  }
  // Activations of the chunk's first cpu_offload_layers layers offloaded to host memory and
  // reloaded for their backward (Megatron-Core's --cpu-offloading-num-layers; pp 1, no
  // recomputation). 0 = off.
  int cpu_offload_layers = 0;
  int zero_stage = 0;  // 0 (plain DP), 1 (optimizer states), 2 (+ gradients), 3 (+ weights)
  // DP gradient reduction: in buckets launched as backward produces them (PyTorch DDP,
  // Megatron's --overlap-grad-reduce), or all at once after the last backward (Megatron 2021;
  // with ZeRO-2/3 after each backward, which waits for it).
  bool overlap_dp = true;
  double dp_bucket_bytes = 0;  // 0: Megatron's default (megatron_bucket_params())
  // Narayanan et al. §4.1: each TP rank sends 1/TP of the boundary activation between pipeline
  // stages and the receiver all-gathers it over NVLink.
  bool pp_scatter_gather = true;
  // Pipeline sends overlap the sender's next task (Megatron-core --overlap-p2p-communication).
  // false: the sender is blocked until its send has drained — Megatron-LM's p2p _communicate
  // waits on every batch_isend_irecv request and then calls torch.cuda.synchronize(), in 2021
  // (Narayanan et al.'s code) and in Megatron-core's default (batch_p2p_sync).
  bool overlap_p2p = false;
  // Megatron-Core overlaps pipeline sends only in the interleaved schedule; plain 1F1B and GPipe
  // always use its blocking batched send/recv, whatever the flag says.
  bool p2p_overlapped() const {
    return overlap_p2p && schedule == PipelineSchedule::kInterleaved1F1B;
  }
  // Allow TP groups larger than a node (tp a multiple of the GPUs per node, each group whole
  // nodes): their collectives then cross the network (comm's closed form over the group), as
  // on NVL72-less clusters where a TP 16 all-reduce runs over NICs. Off: tp ≤ GPUs per node.
  bool tp_across_nodes = false;

  int num_gpus() const { return tp * cp * pp * dp; }
  // Expert data parallelism: replicas of each expert shard in a stage, tp·cp·dp / (etp·ep).
  int expert_dp() const { return tp * cp * dp / std::max(1, etp * ep); }
  TensorSplit split() const {
    return {tp, sequence_parallel, cp, cp_comm, ep, etp, moe_dispatcher, ep_nodes};
  }
  // Micro-batches per iteration per pipeline (m).
  int64_t num_micro_batches() const { return global_batch / (int64_t(micro_batch) * dp); }
  // Megatron-Core's gradient bucket when --ddp-bucket-size is not given, in parameters:
  // max(40 M, 1 M x DP x CP), so each bucket's ring stays bandwidth-bound at large DP
  // (megatron/core/distributed/distributed_data_parallel.py).
  double megatron_bucket_params() const { return std::max(40e6, 1e6 * dp * cp); }
};

struct RankCoord {
  int tp = 0, pp = 0, dp = 0, cp = 0;
  bool operator==(const RankCoord&) const = default;
};

class Layout {
 public:
  // REQUIRES: ValidateLayout(model, config, gpus_per_node) ok.
  Layout(const ParallelConfig& config, int gpus_per_node);

  const ParallelConfig& config() const { return config_; }
  int num_gpus() const { return config_.num_gpus(); }
  int GpuOf(RankCoord c) const {
    return c.tp + config_.tp * (c.cp + config_.cp * (c.dp + config_.dp * c.pp));
  }
  RankCoord CoordOf(int gpu) const;
  int NodeOf(int gpu) const { return gpu / gpus_per_node_; }
  // GPU ids of the groups containing `gpu`, ordered by the varying coordinate.
  std::vector<int> TpGroup(int gpu) const;
  std::vector<int> DpGroup(int gpu) const;
  std::vector<int> PpGroup(int gpu) const;
  std::vector<int> CpGroup(int gpu) const;
  // Gradient reduction group of the dense parameters: DP × CP (Megatron's data-parallel group
  // with context parallelism).
  std::vector<int> DpCpGroup(int gpu) const;
  // Expert groups of an MoE layer: the EP group (token all-to-all) and the expert-DP group
  // (expert gradient reduction).
  std::vector<int> EpGroup(int gpu) const;
  std::vector<int> ExpertDpGroup(int gpu) const;
  // "GPU 37 = tp 5, pp 0, dp 4, node 4 (local 5)"
  std::string Describe(int gpu) const;

 private:
  ParallelConfig config_;
  int gpus_per_node_;
};

// The transformer layers of each virtual stage, index chunk·pp + pp rank (model order).
struct ChunkLayers {
  int first_layer = 0;
  int layers = 0;
};
// REQUIRES: ValidateLayout ok.
std::vector<ChunkLayers> ChunkLayerRanges(const ModelSpec& m, const ParallelConfig& c);
// Under full recomputation, the share of the model's layers re-run in the backward (1 for the
// uniform method; the block method's first recompute_num_layers of each chunk); 0 otherwise.
double FullyRecomputedFraction(const ModelSpec& m, const ParallelConfig& c);

// Why `tp` cannot be placed on nodes of `gpus_per_node` GPUs: a TP group inside one node (tp
// divides it), or over whole nodes with tp_across_nodes; "" when it can (or gpus_per_node <= 0).
std::string TpPlacementProblem(int tp, int gpus_per_node, bool tp_across_nodes);

// Checks that the layout can run this model on `num_gpus` GPUs (`gpus_per_node` per node).
Status ValidateLayout(const ModelSpec& model, const ParallelConfig& config, int num_gpus,
                      int gpus_per_node);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_LAYOUT_H_
