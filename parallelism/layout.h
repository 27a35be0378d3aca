// parallelism/layout.h — the parallel layout: TP×PP×DP and where every rank runs.
//
// What it is: the parallel configuration of one training job (degrees, micro-batching,
// schedule, recomputation, ZeRO stage, DP bucketing) and the map rank ↔ (tp, pp, dp) ↔ GPU id
// ↔ node. The order is Megatron-LM's default: TP innermost, then DP, then PP
//   rank = tp + TP·(dp + DP·pp),
// so a TP group sits on consecutive GPUs (inside one NVSwitch node when TP ≤ GPUs per node), a
// DP group strides by TP, and pipeline stages are the outermost blocks. GPU id = rank (GPUs are
// numbered node-major: gpu = node·gpus_per_node + local index).
//
// What it promises: ValidateLayout explains every layout that cannot run (degrees that do not
// multiply to the GPU count, layers or heads not divisible, batch not divisible into
// micro-batches, interleaving constraints) with a message naming the values; nothing here
// asserts on user input.
#ifndef TRAINSIM_PARALLELISM_LAYOUT_H_
#define TRAINSIM_PARALLELISM_LAYOUT_H_

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
  int micro_batch = 1;
  int64_t global_batch = 1;  // sequences per iteration, all replicas together
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int virtual_stages = 1;  // model chunks per pipeline rank; > 1 means interleaved 1F1B
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  int zero_stage = 0;  // 0 (plain DP), 1 (optimizer states), 2 (+ gradients), 3 (+ weights)
  // DP gradient reduction: in buckets launched as backward produces them (PyTorch DDP,
  // Megatron's --overlap-grad-reduce), or all at once after the last backward (Megatron 2021).
  bool overlap_dp = true;
  double dp_bucket_bytes = 0;  // 0: Megatron's default, max(40M, 1M·DP) parameters per bucket
  // Narayanan et al. §4.1: each TP rank sends 1/TP of the boundary activation between pipeline
  // stages and the receiver all-gathers it over NVLink.
  bool pp_scatter_gather = true;
  // Pipeline sends overlap the sender's next task (Megatron-core --overlap-p2p-communication).
  // false: the sender is blocked until its send has drained — Megatron-LM's p2p _communicate
  // waits on every batch_isend_irecv request and then calls torch.cuda.synchronize(), in 2021
  // (Narayanan et al.'s code) and in Megatron-core's default (batch_p2p_sync).
  bool overlap_p2p = false;
  // Allow TP groups larger than a node (tp a multiple of the GPUs per node, each group whole
  // nodes): their collectives then cross the network (comm's closed form over the group), as
  // on NVL72-less clusters where a TP 16 all-reduce runs over NICs. Off: tp ≤ GPUs per node.
  bool tp_across_nodes = false;

  int num_gpus() const { return tp * pp * dp; }
  // Micro-batches per iteration per pipeline (m).
  int64_t num_micro_batches() const { return global_batch / (int64_t(micro_batch) * dp); }
};

struct RankCoord {
  int tp = 0, pp = 0, dp = 0;
  bool operator==(const RankCoord&) const = default;
};

class Layout {
 public:
  // REQUIRES: ValidateLayout(model, config, gpus_per_node) ok.
  Layout(const ParallelConfig& config, int gpus_per_node);

  const ParallelConfig& config() const { return config_; }
  int num_gpus() const { return config_.num_gpus(); }
  int GpuOf(RankCoord c) const { return c.tp + config_.tp * (c.dp + config_.dp * c.pp); }
  RankCoord CoordOf(int gpu) const;
  int NodeOf(int gpu) const { return gpu / gpus_per_node_; }
  // GPU ids of the groups containing `gpu`, ordered by the varying coordinate.
  std::vector<int> TpGroup(int gpu) const;
  std::vector<int> DpGroup(int gpu) const;
  std::vector<int> PpGroup(int gpu) const;
  // "GPU 37 = tp 5, pp 0, dp 4, node 4 (local 5)"
  std::string Describe(int gpu) const;

 private:
  ParallelConfig config_;
  int gpus_per_node_;
};

// Checks that the layout can run this model on `num_gpus` GPUs (`gpus_per_node` per node).
Status ValidateLayout(const ModelSpec& model, const ParallelConfig& config, int num_gpus,
                      int gpus_per_node);

}  // namespace trainsim::parallelism

#endif  // TRAINSIM_PARALLELISM_LAYOUT_H_
