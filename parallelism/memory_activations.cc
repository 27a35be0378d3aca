// Activation memory of parallelism/memory.h: Korthikanti et al. 2022 §4, term by term, widened
// to grouped-query attention, head_dim, SwiGLU and the FFN width, multi-head latent attention,
// mixture-of-experts layers and context parallelism. Each term and its reasoning: docs/memory.md.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "parallelism/memory.h"
#include "parallelism/schedule.h"

namespace trainsim::parallelism {
namespace {

// The sizes every term is written in: tokens of one micro-batch on this CP rank (T = s·b/cp),
// the divisor of tensors TP replicates unless SP splits them (`rep`), and the TP degree.
struct Shape {
  double e = 2;       // bytes per activation element
  double g = 2;       // bytes per element of a saved linear-layer input (ModelSpec)
  double a = 2;       // bytes per element of the attention core's saved Q, K, V
  double tokens = 0;  // T
  double t = 1;       // TP degree
  double rep = 1;     // t with sequence parallelism, else 1
  double h = 0;
};

// Activations each FFN stores per token per unit of width: GELU keeps fc1's output (the GELU
// input) and the GELU output (fc2's input), 2 (Korthikanti's 8sbh + 8sbh at f = 4h); SwiGLU
// keeps the fused gate/up output (2f, the activation's input) and the activation's output
// (f, fc2's input), 3.
double FfnWidths(const ModelSpec& m) { return m.swiglu ? 3.0 : 2.0; }
// A dense MLP run eagerly (ModelSpec::eager_kernels; torchtitan's `silu(w1 x) * w3 x`):
// autograd keeps w1's output (silu's input), w3's output and silu's output (the product's two
// inputs) and the product (w2's input): SwiGLU stores one width more than the fused kernel.
double DenseFfnWidths(const ModelSpec& m) {
  return FfnWidths(m) + (m.swiglu && m.eager_kernels ? 1.0 : 0.0);
}

// `mods`: the selective-recompute modules in force (RecomputeModule bits).
double AttentionBytes(const ModelSpec& m, const Shape& x, uint32_t mods, double seq_keys) {
  double q = 0, k = 0, v = 0, o = 0, compressed = 0;
  if (m.mla.enabled()) {
    // MLA (DeepSeek-V2 §2.1): the compressed latents are stored twice each (the norm's input
    // and the up-projection's input), with the decoupled RoPE key; the up-projected Q and K
    // are heads·(nope + rope) wide, V and the context heads·v_head_dim.
    const MlaSpec& a = m.mla;
    q = k = double(m.heads) * (a.qk_nope_head_dim + a.qk_rope_head_dim);
    v = o = double(m.heads) * a.v_head_dim;
    // In bytes: the norms' inputs (and the RoPE key) at e, the up-projections' inputs at g.
    compressed = (x.e + x.g) * (a.q_lora_rank + a.kv_lora_rank) + x.e * a.qk_rope_head_dim;
  } else {
    q = o = double(m.q_width());
    k = v = double(m.kv_width());
    // Eager GQA: repeat_kv copies K and V out to every query head before SDPA, and SDPA saves
    // the copies it was given.
    if (m.eager_kernels) k = v = q;
  }
  // mla_up_proj discards the up-projected Q, K and V after the forward and recomputes them
  // before the backward (CheckpointWithoutOutput): only the latents stay.
  const double qkv = m.mla.enabled() && (mods & kRecomputeMlaUpProj) ? 0.0 : q + k + v;
  const double mask = m.dropout ? 1.0 : 0.0;       // one byte per element (Korthikanti §4.1)
  double bytes = x.g * x.tokens * x.h / x.rep      // QKV input (the norm's output)
                 + x.tokens * compressed / x.rep   // MLA latents (bytes above)
                 + x.a * x.tokens * qkv / x.t      // Q and K for QKᵀ, V for the context
                 + x.g * x.tokens * o / x.t        // context (output projection's input)
                 + mask * x.tokens * x.h / x.rep;  // dropout mask after the projection
  if (mods & kRecomputeCoreAttn) return bytes;     // core_attn: the core is recomputed
  const double heads = double(m.heads) / x.t;
  if (m.flash_attention) {
    // FlashAttention keeps only the fp32 log-sum-exp of each query row (Dao et al. 2022 §3.1).
    bytes += 4.0 * heads * x.tokens;
  } else {
    // Softmax output (e), dropout mask (1) and dropout output (e) per score: Korthikanti's
    // 5as²b/t; this rank's T queries against all s keys.
    bytes += (x.e + (m.dropout ? 1.0 + x.e : 0.0)) * heads * x.tokens * seq_keys;
  }
  return bytes;
}

double DenseMlpBytes(const ModelSpec& m, const Shape& x, uint32_t mods) {
  const double mask = m.dropout ? 1.0 : 0.0;
  // "mlp" keeps only the MLP's input, the fused norm's input counted with the layer's norms.
  if (mods & kRecomputeMlp) return mask * x.tokens * x.h / x.rep;
  return x.g * x.tokens * x.h / x.rep  // fc1 input (the norm's output)
         + ((DenseFfnWidths(m) - 1) * x.e + x.g) * x.tokens * double(m.ffn()) /
               x.t  // fc1 outputs (the activation's input), activation output (fc2's input)
         + mask * x.tokens * x.h / x.rep;  // dropout mask
}

// A MoE layer's MLP on one GPU (Megatron-Core's alltoall token dispatcher; MoE with TP > 1
// runs with sequence parallelism there, so the router sees the T/rep local tokens).
double MoeMlpBytes(const ModelSpec& m, const ParallelConfig& c, const Shape& x, uint32_t mods) {
  const MoeSpec& moe = m.moe;
  const double local = x.tokens / x.rep;
  // Busiest GPU: load_imbalance = max/mean tokens per expert, capped by the capacity factor
  // when tokens beyond capacity are dropped.
  double imbalance = std::max(1.0, moe.load_imbalance);
  if (moe.capacity_factor > 0) imbalance = std::min(imbalance, std::max(1.0, moe.capacity_factor));
  // Routed token copies per GPU: the stage's tokens · top_k spread over its ep·expert-DP
  // groups of etp ranks, each rank of a group seeing the whole token: T·top_k·etp/tp.
  const double routed = x.tokens * moe.top_k * double(c.etp) / x.t * imbalance;
  const double fe = moe.expert_ffn(m.ffn());
  const double shared = double(moe.shared_ffn(m.ffn()));
  const double mask = m.dropout ? 1.0 : 0.0;
  // "layernorm" discards the pre-MLP norm's output (the router's and experts' input) and
  // recomputes it; "moe" keeps only that input (the layer is one checkpoint); "moe_act"
  // discards the routed experts' activation output (fc2's input); "shared_experts" keeps only
  // the shared experts' input, the same norm output.
  const double input = (mods & kRecomputeLayernorm) ? 0.0 : x.e * local * x.h;
  if (mods & kRecomputeMoe) return input + mask * local * x.h;
  // Per unit of expert width: fc1's outputs (the activation's input) at e, and the activation's
  // output (fc2's input, a GEMM input at g) unless moe_act discards it.
  const double widths = (FfnWidths(m) - 1) * x.e + ((mods & kRecomputeMoeAct) ? 0.0 : x.g);
  const double shared_bytes = (mods & kRecomputeSharedExperts)
                                  ? 0.0
                                  : ((FfnWidths(m) - 1) * x.e + x.g) * x.tokens * shared / x.t;
  return input                                // router / experts' input
         + (x.e + 4.0) * local * moe.experts  // logits and fp32 softmax scores
         + x.g * routed * x.h                 // permuted tokens (expert fc1 input)
         + widths * routed * fe / c.etp       // expert fc1 / activation outputs (bytes)
         + x.e * local * moe.top_k * x.h      // expert outputs weighted at combine
         + shared_bytes                       // shared experts on all tokens
         + mask * local * x.h;                // dropout mask
}

// A Mamba-2 mixer's saved tensors (Megatron-Core's MambaMixer with mamba_ssm's autograd
// functions): in_proj's input (the norm's output), its output z·x·B·C·dt (conv1d's input and
// the gate), conv1d's output x·B·C (the scan's input), the scan's output y (the gated norm's
// input), the gated norm's output (out_proj's input), and fp32 dt and its cumulative decay per
// head per token (MambaChunkScanCombinedFn saves dt and dA_cumsum; the chunk states are
// recomputed in backward).
double MambaBytes(const ModelSpec& m, const Shape& x) {
  const MambaSpec& a = m.mamba;
  const double mask = m.dropout ? 1.0 : 0.0;
  // in_proj's and out_proj's inputs are GEMM inputs (g); the rest is 16-bit.
  return x.g * x.tokens * x.h / x.rep +
         x.e * x.tokens * double(a.in_proj_width() + a.conv_dim() + a.d_inner()) / x.t +
         x.g * x.tokens * double(a.d_inner()) / x.t + 8.0 * x.tokens * a.heads / x.t +
         mask * x.tokens * x.h / x.rep;
}

double LayerBytes(const ModelSpec& m, const ParallelConfig& c, Recompute recompute,
                  LayerKind kind) {
  const bool moe_layer = kind.moe && m.moe.enabled();
  const double cp = std::max(1, c.cp);
  Shape x;
  x.e = m.bytes_per_element;
  x.g = m.saved_gemm_input_bytes > 0 ? m.saved_gemm_input_bytes : x.e;
  x.a = m.fp8_attention_saved ? x.g : x.e;
  x.tokens = double(c.micro_batch) * m.seq_len / cp;
  x.t = c.tp;
  x.rep = c.sequence_parallel ? double(c.tp) : 1.0;
  x.h = m.hidden;
  // Full recomputation keeps only the layer's input (Korthikanti §4.3: 2sbh, /t with SP).
  if (recompute == Recompute::kFull) return x.e * x.tokens * x.h / x.rep;
  // One norm's input. An eager RMSNorm (torchtitan's, on x.float()) keeps instead the fp32 copy
  // (pow's and the scaling's input) and its 16-bit output (the weight product's input).
  const double norm_bytes = m.eager_kernels && m.eager_norm && m.rmsnorm ? 4.0 + x.e : x.e;
  const double norm = norm_bytes * x.tokens * x.h / x.rep;
  const uint32_t mods = recompute == Recompute::kSelective ? c.recompute_modules : 0;
  const double mlp = moe_layer ? MoeMlpBytes(m, c, x, mods) : DenseMlpBytes(m, x, mods);
  switch (kind.block) {
    case LayerBlock::kTransformer:
      return 2 * norm + AttentionBytes(m, x, mods, m.seq_len) + mlp;
    case LayerBlock::kAttention:
      return norm + AttentionBytes(m, x, mods, m.seq_len);
    case LayerBlock::kMamba:
      return norm + MambaBytes(m, x);
    case LayerBlock::kMlp:
    case LayerBlock::kMoe:
      return norm + mlp;
  }
  return 0;
}

}  // namespace

double LayerActivationBytes(const ModelSpec& m, const TensorSplit& split, Recompute recompute,
                            int micro_batch, bool moe_layer) {
  return LayerActivationBytes(m, split, recompute, micro_batch,
                              LayerKind{LayerBlock::kTransformer, moe_layer, false});
}

double LayerActivationBytes(const ModelSpec& m, const TensorSplit& split, Recompute recompute,
                            int micro_batch, LayerKind kind) {
  ParallelConfig c;
  c.tp = split.tp;
  c.sequence_parallel = split.sequence_parallel;
  c.cp = split.cp;
  c.ep = split.ep;
  c.etp = split.etp;
  c.micro_batch = micro_batch;
  return LayerBytes(m, c, recompute, kind);
}

double LayerActivationBytes(const ModelSpec& m, const ParallelConfig& c, LayerKind kind) {
  return LayerBytes(m, c, c.recompute, kind);
}

double ActivationBytesPerLayer(const ModelSpec& m, int tp, bool sequence_parallel,
                               Recompute recompute, int micro_batch) {
  TensorSplit split;
  split.tp = tp;
  split.sequence_parallel = sequence_parallel;
  return LayerActivationBytes(m, split, recompute, micro_batch, false);
}

namespace {

// One rank's peak over its task order (see StageActivationBytes).
// The schedule's candidate peaks, per rank: the in-flight count of each chunk after every
// forward, keeping only vectors no other one dominates (a dominated point can never be the
// peak, whatever the chunks' sizes). The live activation bytes at their peak are then the
// largest dot product with the chunks' bytes.
using PeakPoints = std::vector<std::vector<std::vector<int>>>;  // [rank][point][chunk]

PeakPoints BuildPeakCandidates(PipelineSchedule schedule, int pp, int v, int64_t m) {
  const auto orders = BuildSchedule(schedule, pp, v, m);
  const size_t n = static_cast<size_t>(v);
  PeakPoints per_rank(static_cast<size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    // The in-flight counts after each forward, flat (point k at [k·v, (k+1)·v)), and their sums.
    std::vector<int> counts(n, 0), flat;
    std::vector<int64_t> sums;
    int64_t sum = 0;
    for (const Task& t : orders[size_t(r)]) {
      counts[size_t(t.chunk)] += t.forward ? 1 : -1;
      sum += t.forward ? 1 : -1;
      if (t.forward) {
        flat.insert(flat.end(), counts.begin(), counts.end());
        sums.push_back(sum);
      }
    }
    // The maximal points (no other point is at least as large in every chunk): a point that
    // another one dominates has a smaller sum, and so does the maximal point above that one, so
    // visiting points by decreasing sum and checking each against the maximal points found so
    // far finds them all (a repeat of a maximal point is dominated by its first copy).
    std::vector<size_t> order(sums.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sums[a] > sums[b]; });
    std::vector<std::vector<int>> maximal;
    for (size_t k : order) {
      const int* a = flat.data() + k * n;
      bool dominated = false;
      for (const std::vector<int>& b : maximal) {
        bool ge = true;
        for (size_t i = 0; i < n && ge; ++i) ge = b[i] >= a[i];
        if (ge) {
          dominated = true;
          break;
        }
      }
      if (!dominated) maximal.emplace_back(a, a + n);
    }
    // In lexicographic order, as the candidates have always been listed (the peak is a maximum
    // over them, so the order changes no number).
    std::sort(maximal.begin(), maximal.end());
    per_rank[size_t(r)] = std::move(maximal);
  }
  return per_rank;
}

// Memoised per (schedule, pp, v, m) in one cache for the whole process, shared by the threads
// of a sweep (sim::ParallelFor starts new threads per call, so per-thread caches rebuilt every
// entry in every thread): a sweep checks the memory of hundreds of thousands of layouts over a
// few dozen schedules, and building and walking the schedule each time was most of a large
// sweep's time. An entry is a pure function of its key, so which thread built it changes
// nothing; two threads missing the same key both build it and the first stored is kept.
std::shared_ptr<const PeakPoints> PeakCandidates(PipelineSchedule schedule, int pp, int v,
                                                 int64_t m) {
  using Key = std::tuple<int, int, int, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const PeakPoints>> cache;
  const Key key{int(schedule), pp, v, m};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto built = std::make_shared<const PeakPoints>(BuildPeakCandidates(schedule, pp, v, m));
  std::lock_guard<std::mutex> lock(mu);
  // Bounds memory over long sweeps: an entry is a few non-dominated count vectors per rank,
  // and a sweep's layouts use a few thousand (schedule, pp, v, micro-batches) keys at most.
  // Holders of a dropped entry keep it alive (shared_ptr).
  if (cache.size() > 4096) cache.clear();
  return cache.emplace(key, std::move(built)).first->second;
}

// Per layer: its kind, and each kind's activation bytes (by LayerKind::index()); computed once
// for all of a layout's stages.
// Under full recomputation `bytes` is what a checkpointed layer keeps (its input) and `kept`
// what a layer outside the checkpoints keeps (everything: Megatron's block method).
struct LayerKindBytes {
  std::vector<LayerKind> kind_of_layer;
  std::vector<double> bytes, kept;
};
LayerKindBytes KindBytes(const ModelSpec& m, const ParallelConfig& c) {
  LayerKindBytes out;
  out.bytes.assign(size_t(kLayerKindCount), -1.0);
  out.kept.assign(size_t(kLayerKindCount), 0.0);
  out.kind_of_layer.reserve(size_t(std::max(0, m.num_layers)));
  for (int l = 0; l < m.num_layers; ++l) {
    const LayerKind k = LayerKindAt(m, l);
    out.kind_of_layer.push_back(k);
    if (out.bytes[size_t(k.index())] < 0) {
      out.bytes[size_t(k.index())] = LayerBytes(m, c, c.recompute, k);
      if (c.recompute == Recompute::kFull) {
        out.kept[size_t(k.index())] = LayerBytes(m, c, Recompute::kNone, k);
      }
    }
  }
  return out;
}

// What local layer `i` of a chunk keeps for one micro-batch: everything without full
// recomputation; under it, a checkpoint's input (uniform: one per group of
// recompute_num_layers layers, the group's first; block: each of the first
// recompute_num_layers layers), and everything for the block method's other layers.
double StoredBytes(const ParallelConfig& c, const LayerKindBytes& kinds, int i, size_t kind) {
  if (c.recompute != Recompute::kFull) return kinds.bytes[kind];
  const int n = std::max(1, c.recompute_num_layers);
  if (c.recompute_block) return i < n ? kinds.bytes[kind] : kinds.kept[kind];
  return i % n == 0 ? kinds.bytes[kind] : 0.0;
}

// What a chunk keeps on the GPU at its peak, from its layers' bytes in order: their sum, or
// with activation offloading of the first n (TE cpu_offload.py, DefaultOffloadSynchronizer:
// layer i is freed before layer L − n + i's forward and reloaded after layer L − 1 − n + i's
// backward starts) the largest sum of L − n consecutive layers.
double ResidentChunkBytes(const std::vector<double>& layer_bytes, int offloaded) {
  const int L = int(layer_bytes.size());
  double sum = 0;
  for (double b : layer_bytes) sum += b;
  if (offloaded <= 0 || offloaded >= L) return sum;
  const int w = L - offloaded;
  double window = 0, best = 0;
  for (int l = 0; l < L; ++l) {
    window += layer_bytes[size_t(l)];
    if (l >= w) window -= layer_bytes[size_t(l - w)];
    if (l >= w - 1) best = std::max(best, window);
  }
  return best;
}

double RankActivationBytes(const ModelSpec& m, const ParallelConfig& c, int stage,
                           const std::vector<ChunkLayers>& ranges, const LayerKindBytes& kinds,
                           const PeakPoints& peaks, const MemoryParams& p) {
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  // Which kinds this rank holds.
  std::vector<LayerKind> held;
  // Activations of one micro-batch through each of this rank's chunks.
  std::vector<double> chunk_bytes(size_t(v), 0.0);
  int max_layers = 0;  // the most layers a chunk of this rank has
  for (int chunk = 0; chunk < v; ++chunk) {
    const ChunkLayers& r = ranges[size_t(chunk) * c.pp + stage];
    std::vector<double> layer_bytes;  // only with offloading (the sweep's hot path has none)
    for (int l = r.first_layer; l < r.first_layer + r.layers; ++l) {
      const LayerKind k = kinds.kind_of_layer[size_t(l)];
      const double b = StoredBytes(c, kinds, l - r.first_layer, size_t(k.index()));
      chunk_bytes[size_t(chunk)] += b;
      if (c.cpu_offload_layers > 0) layer_bytes.push_back(b);
      if (std::find(held.begin(), held.end(), k) == held.end()) held.push_back(k);
    }
    if (c.cpu_offload_layers > 0) {
      chunk_bytes[size_t(chunk)] = ResidentChunkBytes(layer_bytes, c.cpu_offload_layers);
    }
    max_layers = std::max(max_layers, r.layers);
  }
  // The schedule's peak: forwards add their chunk's activations, backwards free them.
  double act = 0;
  for (const std::vector<int>& n : peaks[size_t(stage)]) {
    double live = 0;
    for (int chunk = 0; chunk < v; ++chunk) live += n[size_t(chunk)] * chunk_bytes[size_t(chunk)];
    act = std::max(act, live);
  }
  // Transients of a backward. Full recompute: the checkpoint being recomputed holds its
  // layers' full activations during its backward: one layer (block, or uniform groups of one),
  // up to recompute_num_layers of them for a uniform group (bounded by the largest kind).
  double recomputed = 0;
  if (c.recompute == Recompute::kFull) {
    for (const LayerKind& k : held) {
      recomputed = std::max(recomputed, kinds.kept[size_t(k.index())]);
    }
    if (!c.recompute_block) {
      recomputed *= std::min(std::max(1, c.recompute_num_layers), std::max(1, max_layers));
    }
  }
  if (stage != c.pp - 1) return act + recomputed;
  // Last stage: the fp32 softmax of the vocab-parallel logits of this rank's s/cp tokens is
  // kept for the loss backward of each micro-batch whose last chunk is in flight (1 under
  // 1F1B, all under GPipe). The loss backward of one micro-batch adds its transient
  // (loss_bytes_per_logit beyond the kept 4); it ends before that micro-batch's first layer
  // is recomputed, whose softmax is then freed.
  // Eager PyTorch (torchtitan's `output(h).float()`, then cross_entropy): the training loop
  // holds the fp32 logits until backward ends and log_softmax keeps its fp32 output, 8 bytes
  // kept; the loss backward adds nll's zero-filled fp32 gradient and log_softmax's, 16 at peak.
  const double logits =
      double(c.micro_batch) * m.seq_len / std::max(1, c.cp) * double(m.vocab) / c.tp;
  const double kept_per_logit = m.eager_kernels ? 8.0 : 4.0;
  const double peak_per_logit = m.eager_kernels ? 16.0 : p.loss_bytes_per_logit;
  const int64_t last_in_flight = c.schedule == PipelineSchedule::kGpipe ? c.num_micro_batches() : 1;
  const double loss_phase = double(last_in_flight) * kept_per_logit * logits +
                            std::max(0.0, peak_per_logit - kept_per_logit) * logits;
  const double recompute_phase = double(last_in_flight - 1) * kept_per_logit * logits + recomputed;
  return act + std::max(loss_phase, recompute_phase);
}

}  // namespace

double ChunkActivationBytes(const ModelSpec& m, const ParallelConfig& c, const ChunkLayers& r) {
  const LayerKindBytes kinds = KindBytes(m, c);
  std::vector<double> layer_bytes;
  for (int l = r.first_layer; l < r.first_layer + r.layers; ++l) {
    layer_bytes.push_back(
        StoredBytes(c, kinds, l - r.first_layer, size_t(kinds.kind_of_layer[size_t(l)].index())));
  }
  return ResidentChunkBytes(layer_bytes, c.cpu_offload_layers);
}

double OffloadedActivationBytes(const ModelSpec& m, const ParallelConfig& c) {
  if (c.cpu_offload_layers <= 0) return 0;
  double bytes = 0;
  for (int l = 0; l < std::min(c.cpu_offload_layers, m.num_layers); ++l) {
    bytes += LayerActivationBytes(m, c, LayerKindAt(m, l));
  }
  return bytes;
}

std::vector<double> ActivationBytesPerStage(const ModelSpec& m, const ParallelConfig& c,
                                            const MemoryParams& p) {
  const std::vector<ChunkLayers> ranges = ChunkLayerRanges(m, c);
  const LayerKindBytes kinds = KindBytes(m, c);
  const int v = c.schedule == PipelineSchedule::kInterleaved1F1B ? c.virtual_stages : 1;
  const std::shared_ptr<const PeakPoints> peaks =
      PeakCandidates(c.schedule, c.pp, v, c.num_micro_batches());
  std::vector<double> out;
  for (int stage = 0; stage < c.pp; ++stage) {
    out.push_back(RankActivationBytes(m, c, stage, ranges, kinds, *peaks, p));
  }
  return out;
}

double StageActivationBytes(const ModelSpec& m, const ParallelConfig& c, int stage,
                            const MemoryParams& p) {
  return ActivationBytesPerStage(m, c, p)[size_t(stage)];
}

}  // namespace trainsim::parallelism
