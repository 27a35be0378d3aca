#include "parallelism/layout.h"

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
  c.dp = (gpu / config_.tp) % config_.dp;
  c.pp = gpu / (config_.tp * config_.dp);
  return c;
}

std::vector<int> Layout::TpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.tp; ++i) out.push_back(GpuOf({i, c.pp, c.dp}));
  return out;
}

std::vector<int> Layout::DpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.dp; ++i) out.push_back(GpuOf({c.tp, c.pp, i}));
  return out;
}

std::vector<int> Layout::PpGroup(int gpu) const {
  RankCoord c = CoordOf(gpu);
  std::vector<int> out;
  for (int i = 0; i < config_.pp; ++i) out.push_back(GpuOf({c.tp, i, c.dp}));
  return out;
}

std::string Layout::Describe(int gpu) const {
  RankCoord c = CoordOf(gpu);
  return "GPU " + std::to_string(gpu) + " = tp " + std::to_string(c.tp) + ", pp " +
         std::to_string(c.pp) + ", dp " + std::to_string(c.dp) + ", node " +
         std::to_string(NodeOf(gpu)) + " (local " + std::to_string(gpu % gpus_per_node_) + ")";
}

Status ValidateLayout(const ModelSpec& model, const ParallelConfig& c, int num_gpus,
                      int gpus_per_node) {
  TRAINSIM_RETURN_IF_ERROR(ValidateModel(model));
  auto num = [](int64_t v) { return std::to_string(v); };
  if (c.tp < 1 || c.pp < 1 || c.dp < 1) {
    return Status::InvalidArgument("parallelism degrees must be >= 1 (tp " + num(c.tp) + ", pp " +
                                   num(c.pp) + ", dp " + num(c.dp) + ")");
  }
  if (int64_t(c.tp) * c.pp * c.dp != num_gpus) {
    return Status::InvalidArgument("tp × pp × dp = " + num(c.tp) + " × " + num(c.pp) + " × " +
                                   num(c.dp) + " = " + num(int64_t(c.tp) * c.pp * c.dp) +
                                   ", but the cluster has " + num(num_gpus) + " GPUs");
  }
  if (gpus_per_node > 0 && c.tp > gpus_per_node && !c.tp_across_nodes) {
    return Status::InvalidArgument(
        "tp " + num(c.tp) + " exceeds the " + num(gpus_per_node) +
        " GPUs of a node: tensor parallelism needs NVLink (to run TP groups over whole nodes "
        "and the network, set parallelism.tp_across_nodes, or sweep --tp-across-nodes)");
  }
  if (gpus_per_node > 0 && c.tp > gpus_per_node && c.tp % gpus_per_node != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " across nodes must be a multiple of the " +
                                   num(gpus_per_node) + " GPUs per node (whole nodes per group)");
  }
  if (gpus_per_node > 0 && c.tp <= gpus_per_node && gpus_per_node % c.tp != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the " + num(gpus_per_node) +
                                   " GPUs per node so no TP group spans two nodes");
  }
  if (model.heads % c.tp != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the " + num(model.heads) +
                                   " attention heads");
  }
  if (model.kv() % c.tp != 0) {
    return Status::InvalidArgument("tp " + num(c.tp) + " must divide the " + num(model.kv()) +
                                   " key/value heads");
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
  const int64_t chunks = int64_t(c.pp) * c.virtual_stages;
  if (model.num_layers % chunks != 0) {
    return Status::InvalidArgument(num(model.num_layers) + " layers cannot be split evenly into " +
                                   num(c.pp) + " pipeline stages × " + num(c.virtual_stages) +
                                   " virtual stages");
  }
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
  if (c.zero_stage >= 2 && c.pp > 1) {
    return Status::InvalidArgument(
        "ZeRO stage " + num(c.zero_stage) +
        " with pipeline parallelism is not supported (DeepSpeed and Megatron allow only stage 1 "
        "with pp > 1, since gradients accumulate across micro-batches)");
  }
  return Status::Ok();
}

}  // namespace trainsim::parallelism
