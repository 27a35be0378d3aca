#include "parallelism/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "parallelism/schedule.h"

namespace trainsim::parallelism {

MemoryBreakdown ModelStateBytes(double psi, int dp, int zero_stage, const MemoryParams& p) {
  const double n = std::max(dp, 1);
  MemoryBreakdown b;
  b.weights = p.weight_bytes_per_param * psi / (zero_stage >= 3 ? n : 1);
  b.gradients = p.grad_bytes_per_param * psi / (zero_stage >= 2 ? n : 1);
  b.optimizer = p.optimizer_bytes_per_param * psi / (zero_stage >= 1 ? n : 1);
  b.step_grads = p.step_grad_bytes_per_param * psi / (zero_stage >= 1 ? n : 1);
  return b;
}

ShardDegrees StateShardDegrees(const ParallelConfig& c) {
  ShardDegrees n;
  // Megatron-Core's distributed optimizer shards the dense parameters' states over the
  // data-parallel group with context parallelism (parallel_state's
  // get_data_parallel_group(with_context_parallel=True)), the experts' over the expert-DP group.
  const double replicas = c.shard_group > 0 ? double(c.dp) / c.shard_group : 1.0;
  n.dense = double(c.dp) * std::max(1, c.cp) / replicas;
  // Hybrid sharding replicates across dp / shard_group groups; an expert-DP group narrower
  // than that keeps whole expert states on every rank.
  n.expert = std::max(1.0, double(c.expert_dp()) / replicas);
  return n;
}

namespace {

// One GPU's parameters of a layer of each kind the model has, indexed by LayerKind::index().
std::vector<ParamSplit> KindParameters(const ModelSpec& m, TensorSplit split) {
  std::vector<ParamSplit> out(static_cast<size_t>(kLayerKindCount));
  for (const LayerKind& k : DistinctLayerKinds(m)) {
    out[size_t(k.index())] = LayerParametersPerGpu(m, split, k);
  }
  return out;
}

// Parameters of each FSDP unit on this stage, in execution order: the embedding (stage 0), each
// transformer layer, the final norm with the output layer (last stage). Each is one GPU's
// unsharded share (TP/EP split, before ZeRO-3).
std::vector<double> StageUnits(const ModelSpec& m, const ParallelConfig& c, int stage) {
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const std::vector<ChunkLayers> ranges = ChunkLayerRanges(m, c);
  const std::vector<ParamSplit> per_kind = KindParameters(m, c.split());
  const double h = m.hidden;
  const double word = double(m.vocab) / c.tp * h;
  std::vector<double> units;
  if (stage == 0) units.push_back(word + (m.learned_position_embedding ? m.seq_len * h : 0.0));
  for (int chunk = 0; chunk < v; ++chunk) {
    const ChunkLayers& r = ranges[size_t(chunk) * c.pp + stage];
    for (int l = r.first_layer; l < r.first_layer + r.layers; ++l) {
      units.push_back(per_kind[size_t(LayerKindAt(m, l).index())].total());
    }
  }
  // The output projection needs the whole V/t × h matrix gathered, tied or not.
  if (stage == c.pp - 1) units.push_back((m.rmsnorm ? h : 2.0 * h) + word);
  return units;
}

// ZeRO-3/FSDP units in flight (FSDP2's default prefetch of one unit): forward of unit i with
// unit i+1 gathered ahead; backward of unit i with unit i−1 gathered ahead and the full
// gradients of unit i+1 held until its reduce-scatter completes. The largest of these.
double GatheredBytes(const std::vector<double>& units, const MemoryParams& p) {
  const double w = p.gathered_bytes(), g = p.grad_bytes_per_param;
  const size_t n = units.size();
  double peak = 0;
  for (size_t i = 0; i < n; ++i) {
    const double next = i + 1 < n ? units[i + 1] : 0.0;
    const double prev = i > 0 ? units[i - 1] : 0.0;
    peak = std::max(peak, w * (units[i] + next));
    peak = std::max(peak, w * (units[i] + prev) + g * next);
  }
  return peak;
}

}  // namespace

ParamSplit StageParameters(const ModelSpec& m, const ParallelConfig& c, int stage) {
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const std::vector<ChunkLayers> ranges = ChunkLayerRanges(m, c);
  const std::vector<ParamSplit> per_kind = KindParameters(m, c.split());
  ParamSplit out;
  for (int chunk = 0; chunk < v; ++chunk) {
    const ChunkLayers& r = ranges[size_t(chunk) * c.pp + stage];
    for (int l = r.first_layer; l < r.first_layer + r.layers; ++l) {
      const ParamSplit& layer = per_kind[size_t(LayerKindAt(m, l).index())];
      out.dense += layer.dense;
      out.expert += layer.expert;
    }
  }
  const double h = m.hidden;
  const double word = double(m.vocab) / c.tp * h;  // vocab-parallel embedding / output layer
  if (stage == 0) {
    // Word embedding; learned absolute positions (GPT) are replicated over TP, s × h.
    out.dense += word + (m.learned_position_embedding ? double(m.seq_len) * h : 0.0);
  }
  if (stage == c.pp - 1) {
    out.dense += m.rmsnorm ? h : 2.0 * h;  // final norm: scale (RMSNorm) or scale and bias
    // Untied: the output layer is its own V/t × h matrix on the last stage. Tied: with pp > 1
    // Megatron keeps a copy of the embedding on the last stage (its gradient all-reduced with
    // the first's); with pp = 1 it is the embedding itself, counted once.
    if (!m.tied_embeddings || c.pp > 1) out.dense += word;
  }
  return out;
}

double ParametersPerGpu(const ModelSpec& m, const ParallelConfig& c, int stage) {
  return StageParameters(m, c, stage).total();
}

MemoryBreakdown StageModelStateBytes(const ModelSpec& m, const ParallelConfig& c, int stage,
                                     const MemoryParams& p) {
  const ParamSplit psi = StageParameters(m, c, stage);
  const ShardDegrees n = StateShardDegrees(c);
  const int z = c.zero_stage;
  // Parameters' share of one GPU for a state sharded from ZeRO stage `from` on.
  auto share = [&](int from) {
    return z >= from ? psi.dense / n.dense + psi.expert / n.expert : psi.total();
  };
  MemoryBreakdown b;
  b.weights = p.weight_bytes_per_param * share(3);
  b.gradients = p.grad_bytes_per_param * share(2);
  b.optimizer = p.optimizer_bytes_per_param * share(1);
  b.step_grads = p.step_grad_bytes_per_param * share(1);
  if (z >= 3) b.gathered = GatheredBytes(StageUnits(m, c, stage), p);
  return b;
}

namespace {

std::vector<MemoryBreakdown> PerStage(const ModelSpec& m, const ParallelConfig& c,
                                      const MemoryParams& p) {
  const std::vector<double> activations = ActivationBytesPerStage(m, c, p);
  std::vector<MemoryBreakdown> out;
  for (int stage = 0; stage < c.pp; ++stage) {
    MemoryBreakdown b = StageModelStateBytes(m, c, stage, p);
    b.activations = activations[size_t(stage)];
    b.host_activations = OffloadedActivationBytes(m, c);
    b.overhead = p.framework_overhead_bytes;
    out.push_back(b);
  }
  return out;
}

std::string Gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

double Peak(const std::vector<MemoryBreakdown>& stages, int* which) {
  double peak = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].total() > peak) {
      peak = stages[i].total();
      if (which) *which = int(i);
    }
  }
  return peak;
}

}  // namespace

namespace {

// Candidate changes for a layout that does not fit, each checked with the same model; a layout
// change keeps the GPU count and must pass ValidateLayout.
std::vector<std::string> Suggestions(const ModelSpec& m, const ParallelConfig& c, double capacity,
                                     int gpus_per_node, const MemoryParams& p) {
  std::vector<std::string> out;
  auto try_config = [&](const ParallelConfig& candidate, const std::string& what) {
    // Activation offloading needs pp 1 and no recomputation: an alternative that leaves
    // either behind turns it off, and says so.
    ParallelConfig alt = candidate;
    std::string label = what;
    if (alt.cpu_offload_layers > 0 && (alt.pp > 1 || alt.recompute != Recompute::kNone)) {
      alt.cpu_offload_layers = 0;
      label += ", cpu_offloading_num_layers 0";
    }
    if (!ValidateLayout(m, alt, alt.num_gpus(), gpus_per_node).ok()) return;
    const double peak = Peak(PerStage(m, alt, p), nullptr);
    if (peak <= capacity) out.push_back(label + " (peak " + Gb(peak) + ")");
  };
  if (c.recompute != Recompute::kSelective && c.recompute != Recompute::kFull) {
    ParallelConfig alt = c;
    alt.recompute = Recompute::kSelective;
    try_config(alt, "recompute selective");
  }
  if (c.recompute != Recompute::kFull) {
    ParallelConfig alt = c;
    alt.recompute = Recompute::kFull;
    try_config(alt, "recompute full");
  }
  if (c.tp > 1 && !c.sequence_parallel) {
    ParallelConfig alt = c;
    alt.sequence_parallel = true;
    try_config(alt, "sequence_parallel true");
  }
  for (int mb = c.micro_batch / 2; mb >= 1; mb /= 2) {
    ParallelConfig alt = c;
    alt.micro_batch = mb;
    try_config(alt, "micro_batch " + std::to_string(mb));
  }
  for (int z = c.zero_stage + 1; z <= 3 && c.dp > 1; ++z) {
    ParallelConfig alt = c;
    alt.zero_stage = z;
    try_config(alt, "zero_stage " + std::to_string(z));
  }
  if (c.dp % 2 == 0) {
    ParallelConfig alt = c;
    alt.dp /= 2;
    alt.tp *= 2;
    try_config(alt, "tp " + std::to_string(alt.tp) + ", dp " + std::to_string(alt.dp));
    alt = c;
    alt.dp /= 2;
    alt.pp *= 2;
    try_config(alt, "pp " + std::to_string(alt.pp) + ", dp " + std::to_string(alt.dp));
    // Context parallelism divides every activation by cp (and the states stay sharded over
    // DP × CP, the same number of ranks).
    alt = c;
    alt.dp /= 2;
    alt.cp *= 2;
    if (alt.shard_group > 0 && alt.dp % alt.shard_group != 0) alt.shard_group = alt.dp;
    try_config(alt, "cp " + std::to_string(alt.cp) + ", dp " + std::to_string(alt.dp));
  }
  // Activation offloading (pp 1, no recomputation): the fewest offloaded layers that fit; the
  // stash shrinks as more layers go, so the first that fits is found by bisection.
  if (c.pp == 1 && c.recompute == Recompute::kNone && m.num_layers > 1 &&
      c.cpu_offload_layers < m.num_layers - 1) {
    auto peak_with = [&](int n) {
      ParallelConfig alt = c;
      alt.cpu_offload_layers = n;
      return Peak(PerStage(m, alt, p), nullptr);
    };
    int lo = c.cpu_offload_layers, hi = m.num_layers - 1;  // lo does not fit
    if (peak_with(hi) <= capacity) {
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (peak_with(mid) <= capacity ? hi : lo) = mid;
      }
      out.push_back("cpu_offloading_num_layers " + std::to_string(hi) +
                    " (activations to host memory; no CUDA graphs) (peak " + Gb(peak_with(hi)) +
                    ")");
    }
  }
  if (m.moe.enabled()) {
    // Expert parallelism spreads the routed experts (and their states) over more ranks.
    for (int ep = c.ep * 2; ep <= m.moe.experts; ep *= 2) {
      ParallelConfig alt = c;
      alt.ep = ep;
      try_config(alt, "ep " + std::to_string(ep));
    }
  }
  if (out.empty()) {
    out.push_back("no single change fits: use more GPUs or GPUs with more memory");
  }
  return out;
}

}  // namespace

MemoryReport EstimateMemory(const ModelSpec& m, const ParallelConfig& c, double capacity,
                            int gpus_per_node, const MemoryParams& p, bool suggest) {
  MemoryReport r;
  r.per_stage = PerStage(m, c, p);
  r.peak_bytes = Peak(r.per_stage, &r.peak_stage);
  r.capacity_bytes = capacity;
  r.headroom_bytes = p.headroom_bytes;
  const double usable = capacity - p.headroom_bytes;
  r.fits = r.peak_bytes <= usable;
  const double host = r.per_stage[0].host_activations;
  if (r.fits && p.host_bytes_per_gpu > 0 && host > p.host_bytes_per_gpu) {
    r.fits = false;
    r.reason = "activation offloading puts " + Gb(host) + " per GPU in host memory, over the " +
               Gb(p.host_bytes_per_gpu) + " of host memory per GPU; offload fewer layers";
    if (suggest) {
      // The most layers whose copies the host holds, if the GPU then holds the rest.
      ParallelConfig alt = c;
      while (alt.cpu_offload_layers > 0 &&
             OffloadedActivationBytes(m, alt) > p.host_bytes_per_gpu) {
        --alt.cpu_offload_layers;
      }
      const double peak = Peak(PerStage(m, alt, p), nullptr);
      r.suggestions.push_back(
          peak <= usable ? "cpu_offloading_num_layers " + std::to_string(alt.cpu_offload_layers) +
                               " (peak " + Gb(peak) + ")"
                         : "no single change fits: use more GPUs or GPUs with more memory");
    }
    return r;
  }
  if (r.fits) return r;
  const MemoryBreakdown& w = r.per_stage[r.peak_stage];
  r.reason = "pipeline stage " + std::to_string(r.peak_stage) + " needs " + Gb(r.peak_bytes) +
             " per GPU (weights " + Gb(w.weights) + ", gradients " + Gb(w.gradients) +
             ", optimizer " + Gb(w.optimizer) + ", activations " + Gb(w.activations) +
             (w.gathered > 0 ? ", gathered ZeRO-3 units " + Gb(w.gathered) : std::string()) +
             (w.step_grads > w.activations + w.gathered
                  ? ", then fp32 gradient copies at the optimizer step " + Gb(w.step_grads)
                  : std::string()) +
             ", overhead " + Gb(w.overhead) + "), " + Gb(r.peak_bytes - usable) + " over the " +
             (p.headroom_bytes > 0
                  ? Gb(usable) + " usable (the " + Gb(capacity) +
                        " of the GPU less a memory headroom of " + Gb(p.headroom_bytes) + ")"
                  : Gb(capacity) + " of the GPU");
  if (suggest) r.suggestions = Suggestions(m, c, usable, gpus_per_node, p);
  return r;
}

Status FitStatus(const MemoryReport& r) {
  if (r.fits) return Status::Ok();
  std::string msg = "layout does not fit in GPU memory: " + r.reason + ". Would fit:";
  for (const auto& s : r.suggestions) msg += " [" + s + "]";
  msg += " (or pass --allow-oom to simulate it anyway)";
  return Status::FailedPrecondition(msg);
}

}  // namespace trainsim::parallelism
