// ValidateHybridModel: the checks of a hybrid (Mamba / attention / MLP / MoE) layer pattern, the
// Mamba-2 mixer and sliding-window attention (scenario.proto Model fields 24-27), which layers
// are MoE (moe.interleave_step), and
// ValidateRecomputeModules (parallelism.recompute_modules), kept apart from validate.cc. Each
// message names what is wrong and what would be valid.
#include <algorithm>
#include <cstdint>
#include <string>

#include "parallelism/layout.h"
#include "parallelism/model.h"
#include "scenarios/internal.h"

namespace trainsim::scenarios::detail {
namespace {

using Error = std::optional<FieldError>;

FieldError Err(std::string path, std::string message) {
  return FieldError{std::move(path), std::move(message), Status::Code::kInvalidArgument};
}

std::string Str(int64_t v) { return std::to_string(v); }

Error Positive(const std::string& path, int64_t v, int64_t hi, const char* what) {
  if (v < 1 || v > hi) {
    return Err(path, Str(v) + " is out of range: " + what + " must be between 1 and " + Str(hi));
  }
  return std::nullopt;
}

Error CheckPattern(const pb::Model& m) {
  const std::string& pat = m.hybrid_pattern();
  for (size_t i = 0; i < pat.size(); ++i) {
    const char c = pat[i];
    if (c != 'M' && c != '*' && c != '-' && c != 'E') {
      return Err("model.hybrid_pattern",
                 "character '" + std::string(1, c) + "' at position " + Str(int64_t(i) + 1) +
                     " is not a layer type; use M (Mamba-2), * (attention), - (MLP) or E (MoE)");
    }
  }
  if (int64_t(pat.size()) != m.layers()) {
    return Err("model.hybrid_pattern", "has " + Str(int64_t(pat.size())) +
                                           " layers but model.layers is " + Str(m.layers()) +
                                           "; give one character per layer");
  }
  if (pat.find('M') != std::string::npos && (!m.has_mamba() || !m.mamba().has_heads())) {
    return Err("model.hybrid_pattern",
               "has Mamba layers (M): set model.mamba { heads } (e.g. Nemotron 3 Nano: heads 64)");
  }
  if (pat.find('E') != std::string::npos && !m.has_moe()) {
    return Err("model.hybrid_pattern", "has MoE layers (E): set model.moe { experts, top_k }");
  }
  if (m.has_moe() && pat.find('E') == std::string::npos) {
    return Err("model.moe", "the hybrid pattern has no MoE layer (E); remove the moe block");
  }
  if (m.has_moe() && m.moe().first_dense_layers() != 0) {
    return Err("model.moe.first_dense_layers",
               "must be 0 with a hybrid pattern (the pattern says which layers are MoE)");
  }
  if (m.has_moe() && m.moe().interleave_step() > 1) {
    return Err("model.moe.interleave_step",
               "must be 1 with a hybrid pattern (the pattern says which layers are MoE)");
  }
  return std::nullopt;
}

Error CheckMamba(const pb::Model& m) {
  const pb::Mamba& a = m.mamba();
  if (!a.has_heads()) return Err("model.mamba.heads", "is required in a mamba block (e.g. 64)");
  if (auto e = Positive("model.mamba.heads", a.heads(), 1 << 16, "heads")) return e;
  if (auto e = Positive("model.mamba.head_dim", a.head_dim(), 1 << 12, "head_dim")) return e;
  if (auto e = Positive("model.mamba.state_dim", a.state_dim(), 1 << 12, "state_dim")) return e;
  if (auto e = Positive("model.mamba.groups", a.groups(), a.heads(), "groups")) return e;
  if (a.heads() % a.groups() != 0) {
    return Err("model.mamba.groups",
               "groups " + Str(a.groups()) + " must divide the " + Str(a.heads()) + " heads");
  }
  if (auto e = Positive("model.mamba.conv_kernel", a.conv_kernel(), 64, "conv_kernel")) return e;
  if (auto e = Positive("model.mamba.chunk_size", a.chunk_size(), 1 << 16, "chunk_size")) return e;
  if (m.hybrid_pattern().find('M') == std::string::npos) {
    return Err("model.mamba", "no layer of model.hybrid_pattern is a Mamba layer (M)");
  }
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> ValidateHybridModel(const pb::Scenario& s) {
  const pb::Model& m = s.model();
  const pb::Parallelism& p = s.parallelism();
  if (!m.hybrid_pattern().empty()) {
    if (auto e = CheckPattern(m)) return e;
  }
  if (m.has_mamba()) {
    if (auto e = CheckMamba(m)) return e;
    const int tp = std::max(1, p.tp());
    if (m.mamba().heads() % tp != 0 || m.mamba().groups() % tp != 0) {
      return Err("parallelism.tp", "the Mamba mixer's " + Str(m.mamba().heads()) + " heads and " +
                                       Str(m.mamba().groups()) +
                                       " groups must both be divisible by tp " + Str(tp) +
                                       " (Megatron-Core splits them across TP)");
    }
    if (p.cp() > 1) {
      return Err("parallelism.cp", "context parallelism of Mamba layers is not modelled; use cp 1");
    }
  }
  if (m.has_moe() && m.moe().has_interleave_step()) {
    // Every k-th layer MoE past first_dense_layers: some layer l >= F with (l+1) % k == 0, the
    // first at ceil((F+1)/k)·k − 1; any k <= layers − F leaves one.
    const int64_t k = m.moe().interleave_step(), f = m.moe().first_dense_layers();
    if (k < 1 || k > m.layers() || (f / k + 1) * k > m.layers()) {
      return Err("model.moe.interleave_step", "with first_dense_layers " + Str(f) + " and " +
                                                  Str(m.layers()) + " layers, interleave_step " +
                                                  Str(k) + " leaves no MoE layer; valid: at most " +
                                                  Str(std::max<int64_t>(1, m.layers() - f)) +
                                                  " (every k-th layer MoE, 1 = every layer)");
    }
  }
  if (m.attention_backend() == pb::Model::SDPA) {
    // SDPA's FlashAttention-2 backend has no FP8 kernels and no window: a windowed (masked) call
    // falls back to the memory-efficient or math backend, which trainsim does not model.
    if (m.fp8_attention()) {
      return Err("model.fp8_attention",
                 "PyTorch SDPA (attention_backend SDPA) runs FlashAttention-2, which has no FP8 "
                 "kernels: set fp8_attention false, or attention_backend TRANSFORMER_ENGINE for "
                 "TE's FP8 attention");
    }
    if (m.sliding_window() > 0) {
      return Err("model.sliding_window",
                 "PyTorch SDPA's flash backend takes no window (a masked call falls back to a "
                 "backend trainsim does not model): use attention_backend TRANSFORMER_ENGINE or "
                 "FLASH_ATTENTION for sliding-window attention");
    }
  }
  if (m.has_sliding_window() && (m.sliding_window() < 1 || m.sliding_window() > (1 << 24))) {
    return Err("model.sliding_window",
               Str(m.sliding_window()) +
                   " is out of range: the window must be between 1 and 16777216 tokens (omit the "
                   "field for full attention; GPT-OSS: 128)");
  }
  if (m.has_sliding_window_full_every()) {
    if (!m.has_sliding_window()) {
      return Err("model.sliding_window_full_every", "needs model.sliding_window (the window)");
    }
    if (m.sliding_window_full_every() < 0 || m.sliding_window_full_every() > m.layers()) {
      return Err("model.sliding_window_full_every",
                 Str(m.sliding_window_full_every()) +
                     " is out of range: must be between 0 (every layer windowed) and the " +
                     Str(m.layers()) + " layers (GPT-OSS: 2, every other layer full)");
    }
  }
  return std::nullopt;
}

std::optional<FieldError> ValidateRecomputeModules(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const pb::Model& m = s.model();
  uint32_t seen = 0;
  for (int i = 0; i < p.recompute_modules_size(); ++i) {
    const std::string path = "parallelism.recompute_modules[" + Str(i) + "]";
    const std::string& name = p.recompute_modules(i);
    Result<uint32_t> bit = parallelism::ParseRecomputeModule(name);
    if (!bit.ok()) {
      return Err(path, "'" + name + "' is not a module trainsim models: use one of " +
                           parallelism::RecomputeModuleChoices() +
                           " (Megatron-Core's --recompute-modules names)");
    }
    if (seen & *bit) return Err(path, "'" + name + "' is listed twice");
    seen |= *bit;
    const bool moe = m.has_moe() && m.moe().experts() > 0;
    if (*bit == parallelism::kRecomputeMoeAct && !moe) {
      return Err(path,
                 "'moe_act' recomputes the routed experts' activation, and the model has "
                 "no MoE layers (set model.moe, or drop it)");
    }
    if (*bit == parallelism::kRecomputeMlaUpProj && !m.has_mla()) {
      return Err(path,
                 "'mla_up_proj' needs multi-head latent attention (model.mla), as in "
                 "Megatron-Core");
    }
  }
  if ((p.has_recompute_method() || p.has_recompute_num_layers()) &&
      p.recompute() != pb::Parallelism::FULL) {
    return Err(p.has_recompute_method() ? "parallelism.recompute_method"
                                        : "parallelism.recompute_num_layers",
               "applies with recompute: FULL only (Megatron's --recompute-granularity full); "
               "set parallelism.recompute to FULL, or drop it");
  }
  if (p.has_recompute_num_layers() &&
      (p.recompute_num_layers() < 1 || p.recompute_num_layers() > std::max(1, m.layers()))) {
    return Err(
        "parallelism.recompute_num_layers",
        Str(p.recompute_num_layers()) +
            " is out of range: layers per checkpoint group "
            "(UNIFORM) or checkpointed layers per chunk (BLOCK), between 1 and the model's " +
            Str(m.layers()) + " layers");
  }
  if (p.recompute_modules_size() > 0 && p.recompute() != pb::Parallelism::SELECTIVE) {
    return Err("parallelism.recompute_modules",
               "applies with recompute: SELECTIVE only (Megatron's --recompute-granularity "
               "selective); set parallelism.recompute to SELECTIVE, or drop the list");
  }
  return ValidateCpuOffloading(s);
}

// Megatron-Core's TransformerConfig checks of --cpu-offloading-num-layers, in its order, and its
// CUDA-graph check (transformer_config.py __post_init__).
std::optional<FieldError> ValidateCpuOffloading(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const int n = p.cpu_offloading_num_layers();
  if (n == 0) return std::nullopt;
  const char* path = "parallelism.cpu_offloading_num_layers";
  if (n < 0 || n >= s.model().layers()) {
    return Err(path, Str(n) + " is out of range: offloaded layers are between 0 (off) and " +
                         Str(std::max(0, s.model().layers() - 1)) + ", fewer than the model's " +
                         Str(s.model().layers()) +
                         " layers (Megatron-Core: \"CPU offloading can be done only for layers "
                         "less than num_layers\")");
  }
  if (p.pp() > 1) {
    return Err(path,
               "needs pp: 1; Megatron-Core has no CPU offloading with pipeline "
               "parallelism (pp is " +
                   Str(p.pp()) + ")");
  }
  if (p.recompute() != pb::Parallelism::NONE) {
    return Err(path,
               "needs recompute: NONE; Megatron-Core's CPU offloading does not work with "
               "activation recomputation");
  }
  if (p.cuda_graphs()) {
    return Err(path,
               "cannot be used with parallelism.cuda_graphs; Megatron-Core: \"CUDA graphs "
               "not supported with CPU offloading\"");
  }
  return std::nullopt;
}

// parallelism::TpPlacementProblem's rules (the sweep's layouts get them from ValidateLayout),
// at parallelism.tp's position.
std::optional<FieldError> ValidateTpPlacement(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const std::string why =
      parallelism::TpPlacementProblem(p.tp(), s.cluster().gpus_per_node(), p.tp_across_nodes());
  if (why.empty()) return std::nullopt;
  return Err("parallelism.tp", why);
}

}  // namespace trainsim::scenarios::detail
