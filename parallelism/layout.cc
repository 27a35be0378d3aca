#include "parallelism/layout.h"

#include <algorithm>
#include <string>

namespace trainsim::parallelism {

std::string ScheduleName(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::k1F1B:
      return "1f1b";
    case PipelineSchedule::kInterleaved1F1B:
      return "interleaved";
  }
  return "1f1b";
}

Result<PipelineSchedule> ParseSchedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  if (name == "interleaved" || name == "interleaved_1f1b")
    return PipelineSchedule::kInterleaved1F1B;
  return Status::InvalidArgument("unknown pipeline schedule '" + name +
                                 "' (expected gpipe, 1f1b or interleaved)");
}

Layout::Layout(const ParallelConfig& config, int gpus_per_node)
    : config_(config), gpus_per_node_(gpus_per_node > 0 ? gpus_per_node : 1) {}

RankCoord Layout::CoordOf(int gpu) const {
  RankCoord c;
  c.tp = gpu % config_.tp;
  c.cp = (gpu / config_.tp) % config_.cp;
  c.dp = (gpu / (config_.tp * config_.cp)) % config_.dp;
  c.pp = gpu / (config_.tp * config_.cp * config_.dp);
  return c;
}

std::vector<int> Layout::TpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.tp; ++i) {
    c.tp = i;
    out.push_back(GpuOf(c));
  }
  return out;
}

std::vector<int> Layout::DpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.dp; ++i) {
    c.dp = i;
    out.push_back(GpuOf(c));
  }
  return out;
}

std::vector<int> Layout::CpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.cp; ++i) {
    c.cp = i;
    out.push_back(GpuOf(c));
  }
  return out;
}

std::vector<int> Layout::DpCpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int d = 0; d < config_.dp; ++d) {
    for (int k = 0; k < config_.cp; ++k) {
      c.dp = d;
      c.cp = k;
      out.push_back(GpuOf(c));
    }
  }
  return out;
}

std::vector<int> Layout::PpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.pp; ++i) {
    c.pp = i;
    out.push_back(GpuOf(c));
  }
  return out;
}

// Inside a stage the tp·cp·dp ranks are numbered idx = gpu mod (tp·cp·dp); expert layers read
// idx as etp_rank + etp·(ep_rank + ep·edp_rank).
std::vector<int> Layout::EpGroup(int gpu) const {
  const int block = config_.tp * config_.cp * config_.dp;
  const int base = gpu - gpu % block, idx = gpu % block;
  const int etp = config_.etp, ep = config_.ep;
  const int etp_rank = idx % etp, edp_rank = idx / (etp * ep);
  std::vector<int> out;
  for (int i = 0; i < ep; ++i) out.push_back(base + etp_rank + etp * (i + ep * edp_rank));
  return out;
}

std::vector<int> Layout::ExpertDpGroup(int gpu) const {
  const int block = config_.tp * config_.cp * config_.dp;
  const int base = gpu - gpu % block, idx = gpu % block;
  const int etp = config_.etp, ep = config_.ep;
  const int inner = idx % (etp * ep);
  std::vector<int> out;
  for (int i = 0; i < config_.expert_dp(); ++i) out.push_back(base + inner + etp * ep * i);
  return out;
}

double FullyRecomputedFraction(const ModelSpec& m, const ParallelConfig& c) {
  if (c.recompute != Recompute::kFull) return 0;
  if (!c.recompute_block || m.num_layers <= 0) return 1;
  double rerun = 0;
  for (const ChunkLayers& r : ChunkLayerRanges(m, c)) {
    rerun += std::min(r.layers, std::max(1, c.recompute_num_layers));
  }
  return rerun / m.num_layers;
}

std::vector<ChunkLayers> ChunkLayerRanges(const ModelSpec& m, const ParallelConfig& c) {
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  // Layers per pipeline rank: first/last as given, the rest shared evenly.
  std::vector<int> per_rank(c.pp, 0);
  int rest = m.num_layers, free_ranks = c.pp;
  if (c.pp > 1 && c.first_stage_layers >= 0) {
    per_rank[0] = c.first_stage_layers;
    rest -= c.first_stage_layers;
    --free_ranks;
  }
  if (c.pp > 1 && c.last_stage_layers >= 0) {
    per_rank[c.pp - 1] = c.last_stage_layers;
    rest -= c.last_stage_layers;
    --free_ranks;
  }
  for (int r = 0; r < c.pp; ++r) {
    const bool fixed = c.pp > 1 && ((r == 0 && c.first_stage_layers >= 0) ||
                                    (r == c.pp - 1 && c.last_stage_layers >= 0));
    if (!fixed) per_rank[r] = free_ranks > 0 ? rest / free_ranks : 0;
  }
  // Virtual stage j = chunk·pp + rank holds per_rank[rank] / v layers, in model order of j. A
  // first or last stage whose layers do not divide into v chunks gives the shortfall to its
  // first chunk (the one with the embedding) or its last chunk (the one with the output layer
  // and loss), as Llama 3 did (126 layers on 16 stages × 8 chunks: the first chunk of the first
  // stage holds only the embedding, the last chunk of the last stage only the loss).
  std::vector<ChunkLayers> out(size_t(c.pp) * v);
  auto chunk_layers = [&](int rank, int chunk) {
    const int n = per_rank[size_t(rank)];
    const int base = n / v, extra = n % v;  // `extra` chunks get one more layer
    if (extra == 0) return base;
    const bool short_first = rank == 0;  // the first stage's short chunks come first
    return short_first ? base + (chunk >= v - extra ? 1 : 0) : base + (chunk < extra ? 1 : 0);
  };
  int next = 0;
  for (int chunk = 0; chunk < v; ++chunk) {
    for (int r = 0; r < c.pp; ++r) {
      ChunkLayers& cl = out[size_t(chunk) * c.pp + r];
      cl.first_layer = next;
      cl.layers = chunk_layers(r, chunk);
      next += cl.layers;
    }
  }
  return out;
}

std::string Layout::Describe(int gpu) const {
  RankCoord c = CoordOf(gpu);
  return "GPU " + std::to_string(gpu) + " = tp " + std::to_string(c.tp) +
         (config_.cp > 1 ? ", cp " + std::to_string(c.cp) : std::string()) + ", pp " +
         std::to_string(c.pp) + ", dp " + std::to_string(c.dp) + ", node " +
         std::to_string(NodeOf(gpu)) + " (local " + std::to_string(gpu % gpus_per_node_) + ")";
}

namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status ValidateExpertsAndContext(const ModelSpec& m, const ParallelConfig& c) {
  const int block = c.tp * c.cp * c.dp;
  if (!m.moe.enabled() && (c.ep > 1 || c.etp > 1)) {
    return Status::InvalidArgument("ep " + Num(c.ep) + " and etp " + Num(c.etp) +
                                   " need a mixture-of-experts model (model.moe.experts > 0)");
  }
  if (m.moe.enabled()) {
    if (m.moe.experts % c.ep != 0) {
      return Status::InvalidArgument("ep " + Num(c.ep) + " must divide the " + Num(m.moe.experts) +
                                     " experts");
    }
    if (block % (int64_t(c.ep) * c.etp) != 0) {
      return Status::InvalidArgument("ep × etp = " + Num(int64_t(c.ep) * c.etp) +
                                     " must divide tp × cp × dp = " + Num(block) +
                                     " (Megatron-Core folds the expert grid into the same ranks)");
    }
    if (m.moe.expert_ffn(m.ffn()) % c.etp != 0) {
      return Status::InvalidArgument("etp " + Num(c.etp) + " must divide the expert FFN width " +
                                     Num(m.moe.expert_ffn(m.ffn())));
    }
  }
  if (c.cp > 1 && m.seq_len % (2 * c.cp) != 0) {
    return Status::InvalidArgument("cp " + Num(c.cp) + " needs the sequence length " +
                                   Num(m.seq_len) + " to split into 2·cp = " + Num(2 * c.cp) +
                                   " equal chunks (causal load balancing)");
  }
  if (c.cp > 1 && c.cp_comm == CpComm::kAllToAll &&
      (m.heads % (c.tp * c.cp) != 0 || m.kv() % c.cp != 0)) {
    return Status::InvalidArgument(
        "cp_comm A2A (Ulysses) needs tp × cp = " + Num(c.tp * c.cp) + " to divide the " +
        Num(m.heads) + " heads and cp to divide the " + Num(m.kv()) + " key/value heads");
  }
  return Status::Ok();
}

Status ValidateStageLayers(const ModelSpec& m, const ParallelConfig& c) {
  const int v = c.virtual_stages;
  const bool uneven = c.first_stage_layers >= 0 || c.last_stage_layers >= 0;
  if (!uneven) {
    const int64_t chunks = int64_t(c.pp) * v;
    if (m.num_layers % chunks != 0) {
      return Status::InvalidArgument(
          Num(m.num_layers) + " layers cannot be split evenly into " + Num(c.pp) +
          " pipeline stages × " + Num(v) +
          " virtual stages (set parallelism.first_stage_layers / last_stage_layers for an "
          "uneven split, as Megatron's --decoder-first/last-pipeline-num-layers)");
    }
    return Status::Ok();
  }
  if (c.pp < 2) {
    return Status::InvalidArgument("first_stage_layers / last_stage_layers need pp >= 2");
  }
  int rest = m.num_layers, free_ranks = c.pp;
  for (int given : {c.first_stage_layers, c.last_stage_layers}) {
    if (given < -1) {
      return Status::InvalidArgument("first_stage_layers / last_stage_layers must be >= 0 (got " +
                                     Num(given) + "; -1 or unset = even split)");
    }
    if (given >= 0) {
      rest -= given;
      --free_ranks;
    }
  }
  if (rest < 0 || (free_ranks > 0 && rest < free_ranks)) {
    return Status::InvalidArgument(
        "first_stage_layers " + Num(c.first_stage_layers) + " and last_stage_layers " +
        Num(c.last_stage_layers) + " leave " + Num(rest) + " of the " + Num(m.num_layers) +
        " layers for the other " + Num(free_ranks) + " stages: every stage needs at least one");
  }
  if (free_ranks == 0 && rest != 0) {
    return Status::InvalidArgument(
        "with pp 2, first_stage_layers + last_stage_layers must equal "
        "the " +
        Num(m.num_layers) + " layers");
  }
  for (int given : {c.first_stage_layers, c.last_stage_layers}) {
    if (given > 0 && given % v != 0 && given % v != v - 1) {
      return Status::InvalidArgument("first/last stage layers " + Num(given) +
                                     " must be a multiple of virtual_stages " + Num(v) +
                                     ", or one less (an end chunk of only the embedding or loss)");
    }
  }
  if (free_ranks > 0 && rest % (int64_t(free_ranks) * v) != 0) {
    return Status::InvalidArgument(
        "the " + Num(rest) +
        " layers left after the first/last stages cannot be split evenly "
        "into " +
        Num(free_ranks) + " stages × " + Num(v) + " virtual stages");
  }
  return Status::Ok();
}

}  // namespace

std::string TpPlacementProblem(int tp, int gpus_per_node, bool tp_across_nodes) {
  if (gpus_per_node <= 0 || tp < 1) return "";
  const std::string t = std::to_string(tp), g = std::to_string(gpus_per_node);
  if (tp > gpus_per_node && !tp_across_nodes) {
    return "tp " + t + " exceeds the " + g +
           " GPUs of a node: tensor parallelism needs NVLink (to run TP groups over whole nodes "
           "and the network, set parallelism.tp_across_nodes, or sweep --tp-across-nodes)";
  }
  if (tp > gpus_per_node && tp % gpus_per_node != 0) {
    return "tp " + t + " across nodes must be a multiple of the " + g +
           " GPUs per node (whole nodes per group)";
  }
  if (tp <= gpus_per_node && gpus_per_node % tp != 0) {
    return "tp " + t + " must divide the " + g + " GPUs per node so no TP group spans two nodes";
  }
  return "";
}

Status ValidateLayout(const ModelSpec& model, const ParallelConfig& c, int num_gpus,
                      int gpus_per_node) {
  TRAINSIM_RETURN_IF_ERROR(ValidateModel(model));
  auto num = [](int64_t v) { return std::to_string(v); };
  if (c.tp < 1 || c.pp < 1 || c.dp < 1 || c.cp < 1 || c.ep < 1 || c.etp < 1) {
    return Status::InvalidArgument("parallelism degrees must be >= 1 (tp " + num(c.tp) + ", cp " +
                                   num(c.cp) + ", pp " + num(c.pp) + ", dp " + num(c.dp) + ", ep " +
                                   num(c.ep) + ", etp " + num(c.etp) + ")");
  }
  const int64_t product = int64_t(c.tp) * c.cp * c.pp * c.dp;
  if (product != num_gpus) {
    return Status::InvalidArgument(
        (c.cp > 1 ? "tp × cp × pp × dp = " + num(c.tp) + " × " + num(c.cp) + " × "
                  : "tp × pp × dp = " + num(c.tp) + " × ") +
        num(c.pp) + " × " + num(c.dp) + " = " + num(product) + ", but the cluster has " +
        num(num_gpus) + " GPUs");
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateExpertsAndContext(model, c));
  // Megatron-Core's checks of --cpu-offloading-num-layers (TransformerConfig.__post_init__).
  if (c.cpu_offload_layers != 0 &&
      (c.cpu_offload_layers < 0 || c.cpu_offload_layers >= model.num_layers || c.pp > 1 ||
       c.recompute != Recompute::kNone)) {
    return Status::InvalidArgument("cpu offloading of " + num(c.cpu_offload_layers) +
                                   " layers needs 0 < layers < the model's " +
                                   num(model.num_layers) + ", pp 1 and no recomputation (pp " +
                                   num(c.pp) + ")");
  }
  if (const std::string why = TpPlacementProblem(c.tp, gpus_per_node, c.tp_across_nodes);
      !why.empty()) {
    return Status::InvalidArgument(why);
  }
  if (model.heads % c.tp != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the " + num(model.heads) +
                                   " attention heads");
  }
  if (model.kv() % c.tp != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the " + num(model.kv()) +
                                   " key/value heads");
  }
  if (model.mamba.enabled() &&
      (model.mamba.heads % c.tp != 0 || model.mamba.groups % c.tp != 0 || c.cp > 1)) {
    // Megatron-Core's MambaMixer splits heads and groups over TP; CP of Mamba layers is not
    // modelled.
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the Mamba mixer's " +
                                   num(model.mamba.heads) + " heads and " +
                                   num(model.mamba.groups) + " groups, and cp must be 1");
  }
  if (model.ffn() % c.tp != 0 || model.vocab % c.tp != 0) {
    return Status::InvalidArgument(
        "tp " + num(c.tp) + " must divide the FFN width and the vocabulary (" + num(model.ffn()) +
        ", " + num(model.vocab) + "); pad the vocabulary as Megatron does");
  }
  if (c.sequence_parallel && model.seq_len % c.tp != 0) {
    return Status::InvalidArgument("sequence parallelism needs tp " + num(c.tp) +
                                   " to divide the sequence length " + num(model.seq_len));
  }
  if (c.virtual_stages < 1) return Status::InvalidArgument("virtual_stages must be >= 1");
  if (c.virtual_stages > 1 && c.schedule != PipelineSchedule::kInterleaved1F1B) {
    return Status::InvalidArgument("virtual_stages > 1 needs the interleaved schedule");
  }
  if (c.virtual_stages > 1 && c.pp < 2) {
    return Status::InvalidArgument(
        "virtual_stages " + num(c.virtual_stages) +
        " needs pipeline parallelism (pp >= 2): interleaving splits each pipeline rank's layers");
  }
  TRAINSIM_RETURN_IF_ERROR(ValidateStageLayers(model, c));
  if (c.micro_batch < 1) return Status::InvalidArgument("micro_batch must be >= 1");
  if (c.global_batch < 1) return Status::InvalidArgument("global_batch must be >= 1");
  const int64_t per_step = int64_t(c.micro_batch) * c.dp;
  if (c.global_batch % per_step != 0) {
    return Status::InvalidArgument("global batch " + num(c.global_batch) +
                                   " is not a multiple of micro_batch × dp = " + num(per_step));
  }
  // Each micro-batch is simulated task by task; a million per pipeline is far beyond any real
  // run (Megatron's largest published runs use a few hundred) and bounds memory and time.
  constexpr int64_t kMaxMicroBatches = 1000000;
  if (c.num_micro_batches() > kMaxMicroBatches) {
    return Status::InvalidArgument(
        "global batch " + num(c.global_batch) + " gives " + num(c.num_micro_batches()) +
        " micro-batches per pipeline; at most " + num(kMaxMicroBatches) + " are supported");
  }
  if (c.schedule == PipelineSchedule::kInterleaved1F1B && c.pp > 1 &&
      c.num_micro_batches() % c.pp != 0) {
    return Status::InvalidArgument("the interleaved schedule needs the number of micro-batches (" +
                                   num(c.num_micro_batches()) + ") to be a multiple of pp (" +
                                   num(c.pp) + "), as Megatron-LM requires");
  }
  if (c.zero_stage < 0 || c.zero_stage > 3) {
    return Status::InvalidArgument("zero_stage must be 0, 1, 2 or 3 (got " + num(c.zero_stage) +
                                   ")");
  }
  if (c.zero_stage == 3 && c.pp > 1) {
    return Status::InvalidArgument(
        "ZeRO stage 3 with pipeline parallelism is not supported: every micro-batch would "
        "re-gather each stage's weights (use zero_stage 1 or 2 with pp > 1, or pp 1 with FSDP)");
  }
  if (c.shard_group < 0 || (c.shard_group > 0 && c.dp % c.shard_group != 0)) {
    return Status::InvalidArgument("shard_group " + num(c.shard_group) + " must divide dp (" +
                                   num(c.dp) + "); 0 shards over all of DP");
  }
  if (c.shard_group > 0 && c.zero_stage == 0) {
    return Status::InvalidArgument("shard_group needs zero_stage 1, 2 or 3 (got 0)");
  }
  return Status::Ok();
}

}  // namespace trainsim::parallelism
