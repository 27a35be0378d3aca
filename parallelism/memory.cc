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

double ActivationBytesPerLayer(const ModelSpec& m, int tp, bool sp, Recompute recompute,
                               int micro_batch) {
  const double s = m.seq_len, b = micro_batch, h = m.hidden, a = m.heads, t = tp;
  const double sbh = s * b * h;
  // Korthikanti et al. §4: the s×s attention scores, softmax output and dropout mask cost
  // 5as/h per sbh; selective recompute and flash attention both avoid storing them.
  const double scores =
      (m.flash_attention || recompute == Recompute::kSelective) ? 0.0 : 5.0 * a * s / (h * t);
  switch (recompute) {
    case Recompute::kFull:
      // Only each layer's input is kept (2 bytes per element); split by t under SP.
      return sbh * 2.0 / (sp ? t : 1.0);
    case Recompute::kSelective:
    case Recompute::kNone:
      return sp ? sbh * (34.0 / t + scores) : sbh * (10.0 + 24.0 / t + scores);
  }
  return 0;
}

double ParametersPerGpu(const ModelSpec& m, const ParallelConfig& c, int stage) {
  const double layers = double(m.num_layers) / c.pp;
  double params = layers * double(LayerParametersPerTpRank(m, c.tp));
  const double word = double(m.vocab) / c.tp * m.hidden;
  if (stage == 0) params += word + double(m.seq_len) * m.hidden;  // word + position embeddings
  if (stage == c.pp - 1) {
    params += 2.0 * m.hidden;      // final layer norm
    if (c.pp > 1) params += word;  // tied output layer's copy on the last stage (Megatron)
  }
  return params;
}

namespace {

std::vector<MemoryBreakdown> PerStage(const ModelSpec& m, const ParallelConfig& c,
                                      const MemoryParams& p) {
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const int64_t mbs = c.num_micro_batches();
  const auto orders = BuildSchedule(c.schedule, c.pp, v, mbs);
  const double layers_per_chunk = double(m.num_layers) / (double(c.pp) * v);
  const double per_layer =
      ActivationBytesPerLayer(m, c.tp, c.sequence_parallel, c.recompute, c.micro_batch);
  std::vector<MemoryBreakdown> out;
  for (int stage = 0; stage < c.pp; ++stage) {
    MemoryBreakdown b = ModelStateBytes(ParametersPerGpu(m, c, stage), c.dp, c.zero_stage, p);
    const int in_flight = PeakChunksInFlight(orders[stage]);
    double act = in_flight * layers_per_chunk * per_layer;
    if (c.recompute == Recompute::kFull) {
      // The layer being recomputed holds its full activations during its backward.
      act += ActivationBytesPerLayer(m, c.tp, c.sequence_parallel, Recompute::kNone, c.micro_batch);
    }
    if (stage == c.pp - 1) {
      // fp32 softmax of the vocab-parallel logits, kept for the loss backward; the last stage
      // holds it for each micro-batch whose last chunk is in flight (1 under 1F1B).
      const int last_in_flight = c.schedule == PipelineSchedule::kGpipe ? int(mbs) : 1;
      act += last_in_flight * 4.0 * double(c.micro_batch) * m.seq_len * m.vocab / c.tp;
    }
    b.activations = act;
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

MemoryReport EstimateMemory(const ModelSpec& m, const ParallelConfig& c, double capacity,
                            int gpus_per_node, const MemoryParams& p) {
  MemoryReport r;
  r.per_stage = PerStage(m, c, p);
  r.peak_bytes = Peak(r.per_stage, &r.peak_stage);
  r.capacity_bytes = capacity;
  r.fits = r.peak_bytes <= capacity;
  if (r.fits) return r;
  const MemoryBreakdown& w = r.per_stage[r.peak_stage];
  r.reason = "pipeline stage " + std::to_string(r.peak_stage) + " needs " + Gb(r.peak_bytes) +
             " per GPU (weights " + Gb(w.weights) + ", gradients " + Gb(w.gradients) +
             ", optimizer " + Gb(w.optimizer) + ", activations " + Gb(w.activations) +
             (w.step_grads > w.activations
                  ? ", then fp32 gradient copies at the optimizer step " + Gb(w.step_grads)
                  : std::string()) +
             ", overhead " + Gb(w.overhead) + "), " + Gb(r.peak_bytes - capacity) + " over the " +
             Gb(capacity) + " of the GPU";
  // Candidate changes, each checked with the same model; a layout change keeps the GPU count.
  auto try_config = [&](const ParallelConfig& alt, const std::string& what) {
    if (!ValidateLayout(m, alt, alt.num_gpus(), gpus_per_node).ok()) return;
    const double peak = Peak(PerStage(m, alt, p), nullptr);
    if (peak <= capacity) r.suggestions.push_back(what + " (peak " + Gb(peak) + ")");
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
  }
  if (r.suggestions.empty()) {
    r.suggestions.push_back("no single change fits: use more GPUs or GPUs with more memory");
  }
  return r;
}

}  // namespace trainsim::parallelism
